-- source_ddl: DDL on a changes() source that changes its rows without
-- logging row changes, a source that loses its unique index on the keys,
-- and the name and checks of a changes() source.
--
-- sd_show(sql) shows a statement's error as "SQLSTATE: message" plus DETAIL
-- and HINT, with LSNs (which differ between runs) replaced by X/X.
CREATE FUNCTION sd_show(sql text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE code text; msg text; det text; hint text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
							det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
	RETURN regexp_replace(code || ': ' || msg
		|| CASE WHEN det <> '' THEN E'\nDETAIL: ' || det ELSE '' END
		|| CASE WHEN hint <> '' THEN E'\nHINT: ' || hint ELSE '' END,
		'[0-9A-F]{1,8}/[0-9A-F]{1,8}', 'X/X', 'g');
END
$f$;
CREATE FUNCTION sd_run(flow text) RETURNS bigint LANGUAGE sql AS $f$
	SELECT num_events FROM autocdc.run_flow(flow)
$f$;

-- ADD COLUMN with a constant default fills the existing rows without a
-- change in the WAL; PostgreSQL keeps the value (attmissingval) and the
-- targets take it as a constant.  Events before and after the ALTER, in
-- one run: each is applied once, those after it keep their own values.
CREATE TABLE sd_src (id int PRIMARY KEY, v text);
INSERT INTO sd_src VALUES (1, 'a'), (2, 'b'), (3, 'c');
SELECT autocdc.create_flow(target => 'sd_copy', source => 'changes(sd_src)', keys => '{id}',
	continuous => false);
SELECT autocdc.create_flow(target => 'sd_hist', source => 'changes(sd_src)', keys => '{id}',
	stored_as_scd_type => '2', continuous => false);
SELECT sd_run('sd_copy') AS first_read, sd_run('sd_hist') AS first_read;
INSERT INTO sd_src VALUES (4, 'd');
UPDATE sd_src SET v = 'a2' WHERE id = 1;
DELETE FROM sd_src WHERE id = 3;
ALTER TABLE sd_src ADD COLUMN n int NOT NULL DEFAULT 7, ADD COLUMN note text DEFAULT 'fresh';
INSERT INTO sd_src VALUES (5, 'e', 9, NULL);
INSERT INTO sd_src (id, v) VALUES (6, 'f');
UPDATE sd_src SET n = 8 WHERE id = 2;
UPDATE sd_src SET v = 'd2' WHERE id = 4;
SELECT sd_run('sd_copy') AS events, sd_run('sd_hist') AS events;
SELECT * FROM sd_copy ORDER BY id;
SELECT NOT EXISTS (SELECT * FROM sd_src EXCEPT SELECT * FROM sd_copy)
   AND NOT EXISTS (SELECT * FROM sd_copy EXCEPT SELECT * FROM sd_src) AS copy_is_table;
-- SCD 2: every version reads the value, as every older row of the table
-- does; the versions written after the ALTER carry their own
SELECT id, v, n, note, __end_at IS NULL AS open FROM sd_hist ORDER BY id, __start_at;
SELECT NOT EXISTS (SELECT id, v, n, note FROM sd_hist WHERE __end_at IS NULL
				   EXCEPT SELECT * FROM sd_src)
   AND NOT EXISTS (SELECT * FROM sd_src EXCEPT
				   SELECT id, v, n, note FROM sd_hist WHERE __end_at IS NULL) AS open_versions_are_table;
-- the value is stored as PostgreSQL stores it: no target row was rewritten
SELECT attname, atthasmissing, attmissingval::text FROM pg_attribute
 WHERE attrelid = 'sd_copy'::regclass AND attname IN ('n', 'note') ORDER BY attname;
SELECT name, state FROM autocdc.flows WHERE name LIKE 'sd\_%' ORDER BY name;
-- later runs: nothing more
SELECT sd_run('sd_copy') AS events, sd_run('sd_hist') AS events;
UPDATE sd_src SET note = 'upd' WHERE id = 1;
SELECT sd_run('sd_copy') AS events, sd_run('sd_hist') AS events;
SELECT * FROM sd_copy WHERE id = 1;

-- a partitioned source: its partitions store the value
CREATE TABLE sd_pt (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE sd_pt_1 PARTITION OF sd_pt FOR VALUES FROM (0) TO (100);
CREATE TABLE sd_pt_2 PARTITION OF sd_pt FOR VALUES FROM (100) TO (200);
INSERT INTO sd_pt VALUES (1, 'a'), (101, 'b');
SELECT autocdc.create_flow(target => 'sd_pt_copy', source => 'changes(sd_pt)', keys => '{id}',
	continuous => false);
SELECT sd_run('sd_pt_copy') AS first_read;
INSERT INTO sd_pt VALUES (2, 'c');
ALTER TABLE sd_pt ADD COLUMN k date DEFAULT '2024-01-01';
INSERT INTO sd_pt VALUES (102, 'd', NULL);
SELECT sd_run('sd_pt_copy') AS events;
SELECT * FROM sd_pt_copy ORDER BY id;

-- a target that other flows write too cannot take the value for this
-- flow's rows only: needs_resync
CREATE TABLE sd_m1 (id int PRIMARY KEY, v text);
CREATE TABLE sd_m2 (id int PRIMARY KEY, v text);
INSERT INTO sd_m1 VALUES (1, 'a');
INSERT INTO sd_m2 VALUES (2, 'b');
SELECT autocdc.create_flow(target => 'sd_m', source => 'changes(sd_m1)', keys => '{id}',
	sequence_by => '_commit_lsn', name => 'sd_m_1', continuous => false);
SELECT autocdc.create_flow(target => 'sd_m', source => 'changes(sd_m2)', keys => '{id}',
	sequence_by => '_commit_lsn', name => 'sd_m_2', continuous => false);
SELECT sd_run('sd_m_1') AS first_read, sd_run('sd_m_2') AS first_read;
ALTER TABLE sd_m1 ADD COLUMN w int DEFAULT 5;
SELECT sd_show($$SELECT autocdc.run_flow('sd_m_1')$$);
SELECT name, state FROM autocdc.flows WHERE name LIKE 'sd\_m\_%' ORDER BY name;
SELECT num_events FROM autocdc.full_refresh('sd_m_1', discard_history => true);
SELECT * FROM sd_m ORDER BY id;
SELECT name, state FROM autocdc.flows WHERE name LIKE 'sd\_m\_%' ORDER BY name;

-- a volatile default rewrites the table: the change cannot be told, the
-- flows need a resync, and full_refresh repairs them keeping the history
ALTER TABLE sd_src ADD COLUMN r float8 DEFAULT random();
UPDATE sd_src SET v = 'b2' WHERE id = 2;
SELECT sd_show($$SELECT autocdc.run_flow('sd_copy')$$);
SELECT sd_show($$SELECT autocdc.run_flow('sd_hist')$$);
SELECT name, state FROM autocdc.flows WHERE name LIKE 'sd\_%' ORDER BY name;
SELECT num_events FROM autocdc.full_refresh('sd_copy');
SELECT num_events FROM autocdc.full_refresh('sd_hist');
SELECT name, state FROM autocdc.flows WHERE name LIKE 'sd\_%' ORDER BY name;
SELECT NOT EXISTS (SELECT * FROM sd_src EXCEPT SELECT * FROM sd_copy)
   AND NOT EXISTS (SELECT * FROM sd_copy EXCEPT SELECT * FROM sd_src) AS copy_is_table;
SELECT id, count(*) AS versions, count(*) FILTER (WHERE __end_at IS NULL) AS open,
	   bool_and(r IS NOT NULL) FILTER (WHERE __end_at IS NULL) AS open_has_r
  FROM sd_hist GROUP BY id ORDER BY id;
-- and so does a rewriting ALTER COLUMN TYPE of a column the flow leaves out
CREATE TABLE sd_ty (id int PRIMARY KEY, v text, w int);
SELECT autocdc.create_flow(target => 'sd_ty_copy', source => 'changes(sd_ty)', keys => '{id}',
	except_column_list => '{w}', continuous => false);
INSERT INTO sd_ty VALUES (1, 'a', 1);
SELECT sd_run('sd_ty_copy') AS events;
ALTER TABLE sd_ty ALTER COLUMN w TYPE bigint;
SELECT sd_show($$SELECT autocdc.run_flow('sd_ty_copy')$$);
-- VACUUM FULL rewrites no row: nothing to resync
SELECT num_events FROM autocdc.full_refresh('sd_ty_copy');
VACUUM FULL sd_ty;
INSERT INTO sd_ty VALUES (2, 'b', 2);
SELECT sd_run('sd_ty_copy') AS events;
SELECT name, state FROM autocdc.flows WHERE name = 'sd_ty_copy';

-- a source that loses its unique index on the keys: every run and refresh
-- fails, applying nothing, and the flow needs a resync: once an index is
-- back, runs are still refused until a full_refresh
CREATE TABLE sd_pk (id int NOT NULL, alt int NOT NULL, v text,
	CONSTRAINT sd_pk_pkey PRIMARY KEY (id));
INSERT INTO sd_pk VALUES (1, 10, 'a'), (2, 20, 'b');
-- (so that the delete below can be told by its keys however the index moves)
ALTER TABLE sd_pk REPLICA IDENTITY FULL;
SELECT autocdc.create_flow(target => 'sd_pk_copy', source => 'changes(sd_pk)', keys => '{id}',
	continuous => false);
SELECT sd_run('sd_pk_copy') AS first_read;
ALTER TABLE sd_pk DROP CONSTRAINT sd_pk_pkey, ADD PRIMARY KEY (alt);
INSERT INTO sd_pk VALUES (1, 11, 'dup');
SELECT sd_show($$SELECT autocdc.run_flow('sd_pk_copy')$$);
SELECT sd_show($$SELECT autocdc.full_refresh('sd_pk_copy')$$);
SELECT name, state, last_error_sqlstate FROM autocdc.flows WHERE name = 'sd_pk_copy';
SELECT * FROM sd_pk_copy ORDER BY id;
-- a partial or deferrable unique index does not count
DELETE FROM sd_pk WHERE alt = 11;
CREATE UNIQUE INDEX sd_pk_partial ON sd_pk (id) WHERE v <> 'x';
SELECT sd_show($$SELECT autocdc.run_flow('sd_pk_copy')$$) LIKE '55000:%' AS still_refused;
DROP INDEX sd_pk_partial;
ALTER TABLE sd_pk ADD CONSTRAINT sd_pk_deferred UNIQUE (id) DEFERRABLE;
SELECT sd_show($$SELECT autocdc.run_flow('sd_pk_copy')$$) LIKE '55000:%' AS still_refused;
ALTER TABLE sd_pk DROP CONSTRAINT sd_pk_deferred;
-- with an index again, a run would fold the duplicate into key 1 and its
-- delete would delete key 1: still refused, still needs_resync
CREATE UNIQUE INDEX sd_pk_id ON sd_pk (id);
SELECT sd_show($$SELECT autocdc.run_flow('sd_pk_copy')$$);
SELECT name, state FROM autocdc.flows WHERE name = 'sd_pk_copy';
SELECT * FROM sd_pk_copy ORDER BY id;
-- the refresh reads the table again
SELECT num_events FROM autocdc.full_refresh('sd_pk_copy');
SELECT * FROM sd_pk_copy ORDER BY id;
SELECT NOT EXISTS (SELECT * FROM sd_pk EXCEPT SELECT * FROM sd_pk_copy)
   AND NOT EXISTS (SELECT * FROM sd_pk_copy EXCEPT SELECT * FROM sd_pk) AS copy_is_table;
SELECT name, state FROM autocdc.flows WHERE name = 'sd_pk_copy';
INSERT INTO sd_pk VALUES (3, 30, 'c');
SELECT sd_run('sd_pk_copy') AS events;

-- autocdc.flows shows the source's current name
CREATE SCHEMA sd_other;
ALTER TABLE sd_pk RENAME TO sd_pk_renamed;
SELECT name, source FROM autocdc.flows WHERE name = 'sd_pk_copy';
ALTER TABLE sd_pk_renamed SET SCHEMA sd_other;
SELECT name, source FROM autocdc.flows WHERE name = 'sd_pk_copy';
CREATE TABLE sd_feed (id int, seq int);
SELECT autocdc.create_flow(target => 'sd_feed_copy', source => 'stream(sd_feed)', keys => '{id}',
	sequence_by => 'seq', continuous => false);
ALTER TABLE sd_feed RENAME TO "sd Feed";
SELECT name, source FROM autocdc.flows WHERE name = 'sd_feed_copy';

-- changes() and stream() are given once each, stream() outside
SELECT sd_show($$SELECT autocdc.create_flow('sd_bad1', 'changes(changes(sd_src))', '{id}')$$);
SELECT sd_show($$SELECT autocdc.create_flow('sd_bad2', 'stream(stream(changes(sd_src)))', '{id}')$$);
SELECT sd_show($$SELECT autocdc.create_flow('sd_bad3', 'changes(stream(sd_src))', '{id}')$$);
-- a volatile sequence is refused; a stable one is not
SELECT sd_show($$SELECT autocdc.create_flow('sd_bad4', 'changes(sd_src)', '{id}',
	sequence_by => 'random()')$$);
CREATE TABLE sd_feed_x (id int, seq int);
SELECT sd_show($$SELECT autocdc.create_flow('sd_bad5', 'sd_feed_x', '{id}',
	sequence_by => 'clock_timestamp()')$$);
SELECT sd_show($$SELECT autocdc.create_flow('sd_bad6', 'sd_feed_x', '{id}',
	sequence_by => 'ROW(seq, clock_timestamp())')$$);
SELECT sd_show($$SELECT autocdc.create_flow('sd_bad7', 'sd_feed_x', '{id}', sequence_by => 'seq',
	stored_as_scd_type => 'bitemporal', system_sequence_by => 'clock_timestamp()')$$);
SELECT sd_show($$SELECT autocdc.create_flow('sd_stable', 'sd_feed_x', '{id}',
	sequence_by => 'seq + extract(epoch from now())::int')$$);
SELECT autocdc.drop_flow('sd_stable', drop_target => true);
-- a quoted source is named once in messages
CREATE SCHEMA "SD Schema";
CREATE TABLE "SD Schema"."NoPk" (id int);
SELECT sd_show($$SELECT autocdc.create_flow('sd_bad8', 'changes("SD Schema"."NoPk")', '{id}')$$);
