-- setup: the extension, on a server with autocdc preloaded and wal_level = logical
CREATE EXTENSION autocdc;
SELECT extname, extversion FROM pg_extension WHERE extname = 'autocdc';
-- the capture publication belongs to the extension and publishes inserts only
SELECT pubname, puballtables, pubinsert, pubupdate, pubdelete, pubtruncate, pubviaroot
  FROM pg_publication WHERE pubname = 'autocdc_feeds';
SELECT count(*) AS extension_members FROM pg_depend d JOIN pg_publication p ON p.oid = d.objid
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'autocdc') AND d.deptype = 'e';
