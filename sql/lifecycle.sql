-- lifecycle: source schema changes, tombstone_retention, a lost slot (needs_resync)
-- (semantics §4 "Schema changes", §4 "Hidden state", §2 "needs_resync")

-- errors with LSNs masked (they differ from run to run)
CREATE FUNCTION l_try(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE m text; h text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, h = PG_EXCEPTION_HINT;
	RETURN regexp_replace(m || ' / ' || h, '[0-9A-F]+/[0-9A-F]+', 'X/X', 'g');
END $$;

-- a column added to a source whose selection is "all" or "* EXCEPT" is added to
-- the target (NULL in earlier rows and versions)
CREATE TABLE l_feed (id int, v text, op text, seq int);
SELECT autocdc.create_flow('l_scd1', 'l_feed', '{id}', 'seq', apply_as_deletes => $$op = 'D'$$,
	except_column_list => '{op,seq}', continuous => false);
SELECT autocdc.create_flow('l_scd2', 'l_feed', '{id}', 'seq', apply_as_deletes => $$op = 'D'$$,
	except_column_list => '{op,seq}', stored_as_scd_type => '2', continuous => false);
SELECT autocdc.create_flow('l_cols', 'l_feed', '{id}', 'seq', column_list => '{id,v}',
	continuous => false);
SELECT num_events FROM autocdc.run_flow('l_scd1');
SELECT num_events FROM autocdc.run_flow('l_scd2');
SELECT num_events FROM autocdc.run_flow('l_cols');
INSERT INTO l_feed VALUES (1, 'a', 'U', 1), (2, 'b', 'U', 1);
SELECT num_events FROM autocdc.run_flow('l_scd1');
SELECT num_events FROM autocdc.run_flow('l_scd2');
ALTER TABLE l_feed ADD COLUMN extra text;
INSERT INTO l_feed VALUES (1, 'a2', 'U', 2, 'x');
SELECT num_events FROM autocdc.run_flow('l_scd1');
SELECT num_events FROM autocdc.run_flow('l_scd2');
SELECT num_events FROM autocdc.run_flow('l_cols');
SELECT * FROM l_scd1 ORDER BY id;
SELECT * FROM l_scd2 ORDER BY id, __start_at;
-- an explicit column list does not grow
SELECT * FROM l_cols ORDER BY id;

-- dropping a captured column fails the run with a hint to full_refresh, which
-- re-reads the source with its new columns (the dropped one stays, NULL)
ALTER TABLE l_feed DROP COLUMN v;
SELECT num_events FROM autocdc.run_flow('l_scd1');
SELECT state, last_error LIKE '%column "v" of source "l_feed" no longer exists%' AS says_why
  FROM autocdc.flows WHERE name = 'l_scd1';
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.full_refresh('l_scd1');
SELECT state FROM autocdc.flows WHERE name = 'l_scd1';
SELECT * FROM l_scd1 ORDER BY id;
-- an explicit column list naming the dropped column cannot be refreshed
SELECT num_events FROM autocdc.full_refresh('l_cols');

-- retyping a captured column: error, then full_refresh retypes the target
ALTER TABLE l_feed ALTER COLUMN extra TYPE int USING NULL;
INSERT INTO l_feed VALUES (3, 'D', 3, 7);
SELECT num_events FROM autocdc.run_flow('l_scd1');
SELECT num_events FROM autocdc.full_refresh('l_scd1');
SELECT * FROM l_scd1 ORDER BY id;
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'l_scd1'::regclass AND attname = 'extra';
SELECT autocdc.drop_flow(name, true) FROM autocdc.flow WHERE name LIKE 'l\_%' ORDER BY name;
DROP TABLE l_feed;

-- tombstone_retention: delete markers older than the retention are forgotten at
-- the end of a run; a late event older than a forgotten delete then brings its
-- key back (documented).  Without retention the key stays deleted.
CREATE TABLE l_tfeed (id int, v text, op text, seq int);
SELECT autocdc.create_flow('l_keep', 'l_tfeed', '{id}', 'seq', apply_as_deletes => $$op = 'D'$$,
	except_column_list => '{op,seq}', continuous => false);
SELECT autocdc.create_flow('l_forget', 'l_tfeed', '{id}', 'seq', apply_as_deletes => $$op = 'D'$$,
	except_column_list => '{op,seq}', continuous => false, tombstone_retention => '0 seconds');
SELECT num_events FROM autocdc.run_flow('l_keep');
SELECT num_events FROM autocdc.run_flow('l_forget');
INSERT INTO l_tfeed VALUES (1, 'a', 'U', 1), (1, NULL, 'D', 5);
SELECT num_events FROM autocdc.run_flow('l_keep');
SELECT num_events FROM autocdc.run_flow('l_forget');
INSERT INTO l_tfeed VALUES (2, 'b', 'U', 1);
SELECT num_events FROM autocdc.run_flow('l_keep');
SELECT num_events FROM autocdc.run_flow('l_forget');   -- forgets the marker of key 1
INSERT INTO l_tfeed VALUES (1, 'late', 'U', 3);
SELECT num_events FROM autocdc.run_flow('l_keep');
SELECT num_events FROM autocdc.run_flow('l_forget');
SELECT * FROM l_keep ORDER BY id;
SELECT * FROM l_forget ORDER BY id;
SELECT autocdc.drop_flow(name, true) FROM autocdc.flow WHERE name LIKE 'l\_%' ORDER BY name;
DROP TABLE l_tfeed;

-- a lost slot: progress on another slot can never be served; the flow shows
-- needs_resync, run_flow refuses it, and full_refresh resyncs it
CREATE TABLE l_rfeed (id int, v text, seq int);
SELECT autocdc.create_flow('l_resync', 'l_rfeed', '{id}', 'seq', continuous => false);
SELECT num_events FROM autocdc.run_flow('l_resync');
INSERT INTO l_rfeed VALUES (1, 'a', 1);
SELECT num_events FROM autocdc.run_flow('l_resync');
SELECT count(*) AS dropped FROM (
	SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
	 WHERE slot_name LIKE 'autocdc\_%' AND database = current_database()) s;
SELECT state FROM autocdc.flows WHERE name = 'l_resync';
INSERT INTO l_rfeed VALUES (2, 'b', 2);
SELECT l_try($$SELECT * FROM autocdc.run_flow('l_resync')$$);
SELECT state FROM autocdc.flows WHERE name = 'l_resync';
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.full_refresh('l_resync');
SELECT state FROM autocdc.flows WHERE name = 'l_resync';
SELECT * FROM l_resync ORDER BY id;
INSERT INTO l_rfeed VALUES (3, 'c', 3);
SELECT num_events FROM autocdc.run_flow('l_resync');
SELECT * FROM l_resync ORDER BY id;
SELECT autocdc.drop_flow('l_resync', true);
DROP TABLE l_rfeed;
DROP FUNCTION l_try(text);
