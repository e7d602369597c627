-- a snapshot flow and change flows into one SCD 1 target (semantics §6): a
-- snapshot at version v is a truncate at v followed by an upsert at v of each
-- of its rows, folded with the change events by sequence (ties: the last to
-- arrive); the refusals (SCD 2, bitemporal, version type), full_refresh and
-- dropping either flow.
--
-- m_try(sql) runs a statement and shows "SQLSTATE: message" and the HINT;
-- 'ok' when it succeeds.
CREATE FUNCTION m_try(sql text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
	st text; msg text; hnt text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hnt = PG_EXCEPTION_HINT;
	RETURN st || ': ' || msg || CASE WHEN hnt <> '' THEN E'\nHINT: ' || hnt ELSE '' END;
END
$f$;
CREATE SCHEMA mix;
SET search_path = mix, public;

-- the change feed (op 'd' deletes) and the snapshots a version function hands
-- out: every version of the setting m.flow's flow after the last applied one
CREATE TABLE feed (id int, val text, seq bigint, op text DEFAULT 'u');
CREATE TABLE versions (flow text, snapshot regclass, version bigint);
CREATE FUNCTION next_snap(last bigint) RETURNS TABLE (snapshot regclass, version bigint)
	LANGUAGE sql SET search_path = mix AS $$
	SELECT v.snapshot, v.version FROM versions v
	 WHERE v.flow = current_setting('m.flow') AND v.version > coalesce(last, -1)
	 ORDER BY v.version LIMIT 1
$$;
SET m.flow = 'm_snap';

-- ----------------------------------------------------------------------
-- change flow first, then the snapshot flow (its first run joins the target)
-- ----------------------------------------------------------------------
SELECT autocdc.create_flow('m', 'feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'd'$$, except_column_list => '{seq,op}', name => 'm_cdc',
	continuous => false);
SELECT autocdc.create_snapshot_flow('m', NULL, '{id}', source_function => 'next_snap(bigint)',
	name => 'm_snap', continuous => false);
INSERT INTO feed (id, val, seq) VALUES (1, 'a', 10), (2, 'b', 10), (3, 'c', 30);
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('m_cdc');
SELECT * FROM m ORDER BY id;

-- snapshot at 20 = {1 A, 4 D}: key 2 (written at 10) is deleted at 20, key 3
-- (written at 30, later than the snapshot) survives it
CREATE TABLE s20 (id int, val text);
INSERT INTO s20 VALUES (1, 'A'), (4, 'D');
INSERT INTO versions VALUES ('m_snap', 's20', 20);
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('m_snap');
SELECT * FROM m ORDER BY id;

-- late change events, older than the snapshot: discarded, for keys in the
-- snapshot (4), absent from it (2) and never seen before (5)
INSERT INTO feed (id, val, seq) VALUES (4, 'late', 15), (2, 'late', 15), (5, 'late', 15);
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('m_cdc');
SELECT * FROM m ORDER BY id;

-- change events between snapshots apply as usual: an update and a delete
INSERT INTO feed (id, val, seq, op) VALUES (1, 'x', 25, 'u'), (4, NULL, 25, 'd');
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('m_cdc');
SELECT * FROM m ORDER BY id;

-- ties at exactly the version: the last to arrive exists.  Change events at
-- 40 applied before the snapshot at 40 lose to it: key 1 takes the
-- snapshot's row, key 6 (absent from it) is deleted by its truncate
INSERT INTO feed (id, val, seq) VALUES (1, 'c1', 40), (6, 'c6', 40);
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('m_cdc');
CREATE TABLE s40 (id int, val text);
INSERT INTO s40 VALUES (1, 'S1'), (3, 'S3');
INSERT INTO versions VALUES ('m_snap', 's40', 40);
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('m_snap');
SELECT * FROM m ORDER BY id;
-- change events at 40 that arrive after the snapshot win: key 3 takes the
-- change's row, key 7 (first seen) is present
INSERT INTO feed (id, val, seq) VALUES (3, 'after', 40), (7, 'c7', 40), (8, 'old', 39);
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('m_cdc');
SELECT * FROM m ORDER BY id;

-- full_refresh of either flow: the hidden state is forgotten, the snapshots
-- are applied again, then the change flows read their source again (a
-- re-read change event wins a tie with a snapshot: it arrives last)
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.full_refresh('m_snap');
SELECT * FROM m ORDER BY id;
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.full_refresh('m_cdc');
SELECT * FROM m ORDER BY id;
SELECT name, snapshot_version IS NOT NULL AS has_version FROM autocdc.flow
 WHERE name IN ('m_cdc', 'm_snap') ORDER BY name;

-- dropping the snapshot flow: the change flow goes on, the snapshots'
-- truncates still judge late events (key 9 at 35 < 40 is discarded)
SELECT autocdc.drop_flow('m_snap');
INSERT INTO feed (id, val, seq) VALUES (9, 'late', 35), (10, 'new', 45);
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('m_cdc');
SELECT * FROM m ORDER BY id;
SELECT autocdc.drop_flow('m_cdc', true);

-- ----------------------------------------------------------------------
-- snapshot flow first (alone, compared with its target), then a change flow
-- joins: the target's hidden state becomes the fold of the last snapshot
-- ----------------------------------------------------------------------
SET m.flow = 'n_snap';
CREATE TABLE n10 (id int, val text);
CREATE TABLE n20 (id int, val text);
INSERT INTO n10 VALUES (1, 'a'), (2, 'b');
INSERT INTO n20 VALUES (1, 'a'), (3, 'c');
INSERT INTO versions VALUES ('n_snap', 'n10', 10), ('n_snap', 'n20', 20);
SELECT autocdc.create_snapshot_flow('n', NULL, '{id}', source_function => 'next_snap(bigint)',
	name => 'n_snap', continuous => false);
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('n_snap');
SELECT * FROM n ORDER BY id;
CREATE TABLE feed2 (id int, val text, seq bigint);
SELECT autocdc.create_flow('n', 'feed2', '{id}', sequence_by => 'seq', column_list => '{id,val}',
	name => 'n_cdc', continuous => false);
-- older than snapshot 20: key 1 (unchanged since 10), key 2 (deleted at 20)
-- and key 4 (never in a snapshot) are judged against its truncate; key 5 at
-- 25 is applied
INSERT INTO feed2 VALUES (1, 'late', 15), (2, 'late', 15), (4, 'late', 15), (5, 'e', 25);
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('n_cdc');
SELECT * FROM n ORDER BY id;
-- the next snapshot deletes key 5 (25 < 30) and keeps nothing it lacks
CREATE TABLE n30 (id int, val text);
INSERT INTO n30 VALUES (3, 'C');
INSERT INTO versions VALUES ('n_snap', 'n30', 30);
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('n_snap');
SELECT * FROM n ORDER BY id;
-- dropping the change flow: the snapshot flow goes on alone
SELECT autocdc.drop_flow('n_cdc');
CREATE TABLE n40 (id int, val text);
INSERT INTO n40 VALUES (3, 'C'), (6, 'f');
INSERT INTO versions VALUES ('n_snap', 'n40', 40);
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('n_snap');
SELECT * FROM n ORDER BY id;
SELECT autocdc.drop_flow('n_snap', true);

-- ----------------------------------------------------------------------
-- a table source is versioned by the run's transaction time: the change
-- flows' sequence must be a timestamptz
-- ----------------------------------------------------------------------
CREATE TABLE tsnap (id int, val text);
CREATE TABLE tfeed (id int, val text, at timestamptz);
INSERT INTO tsnap VALUES (1, 'snap');
SELECT autocdc.create_snapshot_flow('t', 'tsnap', '{id}', name => 't_snap', continuous => false);
SELECT autocdc.create_flow('t', 'tfeed', '{id}', sequence_by => 'at', column_list => '{id,val}',
	name => 't_cdc', continuous => false);
INSERT INTO tfeed VALUES (2, 'past', '2000-01-01'), (3, 'future', 'infinity');
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('t_cdc');
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('t_snap');
SELECT * FROM t ORDER BY id;
SELECT autocdc.drop_flow('t_cdc');
SELECT autocdc.drop_flow('t_snap', true);

-- ----------------------------------------------------------------------
-- a snapshot query with a version query: the version has the query's type
-- ----------------------------------------------------------------------
CREATE TABLE qsnaps (id int, val text, version bigint);
CREATE TABLE qfeed (id int, val text, seq bigint);
SELECT autocdc.create_flow('q', 'qfeed', '{id}', sequence_by => 'seq', column_list => '{id,val}',
	name => 'q_cdc', continuous => false);
SELECT autocdc.create_snapshot_flow('q', NULL, '{id}', name => 'q_snap', continuous => false,
	source_query => 'SELECT id, val FROM mix.qsnaps WHERE version = current_snapshot_version()',
	version_query => 'SELECT version FROM mix.qsnaps WHERE version > coalesce(last_snapshot_version(), 0) ORDER BY version LIMIT 1');
INSERT INTO qfeed VALUES (1, 'a', 5), (2, 'b', 15);
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('q_cdc');
INSERT INTO qsnaps VALUES (3, 'c', 10);
-- key 1 (5) is deleted at 10, key 2 (15) survives
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('q_snap');
SELECT * FROM q ORDER BY id;
SELECT autocdc.drop_flow('q_snap');
SELECT autocdc.drop_flow('q_cdc', true);

-- ----------------------------------------------------------------------
-- refusals, whichever flow is created second; nothing is left behind
-- ----------------------------------------------------------------------
-- SCD 2
SELECT autocdc.create_flow('r2', 'feed', '{id}', sequence_by => 'seq', stored_as_scd_type => '2',
	except_column_list => '{seq,op}', name => 'r2_cdc', continuous => false);
SELECT m_try($$SELECT autocdc.create_snapshot_flow('r2', NULL, '{id}', stored_as_scd_type => '2',
	source_function => 'next_snap(bigint)', name => 'r2_snap')$$);
SELECT m_try($$SELECT autocdc.create_snapshot_flow('r2', NULL, '{id}',
	source_function => 'next_snap(bigint)', name => 'r2_snap')$$);
SELECT autocdc.drop_flow('r2_cdc', true);
SET m.flow = 'r2_snap';
CREATE TABLE r10 (id int, val text);
INSERT INTO versions VALUES ('r2_snap', 'r10', 10);
SELECT autocdc.create_snapshot_flow('r2', NULL, '{id}', stored_as_scd_type => '2',
	source_function => 'next_snap(bigint)', name => 'r2_snap', continuous => false);
SELECT num_events FROM autocdc.run_flow('r2_snap');
SELECT m_try($$SELECT autocdc.create_flow('r2', 'feed', '{id}', sequence_by => 'seq',
	stored_as_scd_type => '2', except_column_list => '{seq,op}', name => 'r2_cdc')$$);
SELECT autocdc.drop_flow('r2_snap', true);
-- a version-function flow whose first run has not created its target yet:
-- a change flow into that target is refused all the same (SCD 2; a version
-- type other than the sequence type)
SELECT autocdc.create_snapshot_flow('r2', NULL, '{id}', stored_as_scd_type => '2',
	source_function => 'next_snap(bigint)', name => 'r2_snap', continuous => false);
SELECT m_try($$SELECT autocdc.create_flow('r2', 'feed', '{id}', sequence_by => 'seq',
	stored_as_scd_type => '2', except_column_list => '{seq,op}', name => 'r2_cdc')$$);
SELECT autocdc.drop_flow('r2_snap');
SELECT autocdc.create_snapshot_flow('r2', NULL, '{id}',
	source_function => 'next_snap(bigint)', name => 'r2_snap', continuous => false);
SELECT m_try($$SELECT autocdc.create_flow('mix.r2', 'feed', '{id}', sequence_by => 'seq::int',
	except_column_list => '{seq,op}', name => 'r2_cdc')$$);
SELECT to_regclass('r2') AS r2_not_created;
SELECT autocdc.drop_flow('r2_snap');
-- bitemporal
SELECT autocdc.create_flow('rb', 'feed', '{id}', sequence_by => 'seq', stored_as_scd_type => 'bitemporal',
	system_sequence_by => 'seq', except_column_list => '{seq,op}', name => 'rb_cdc', continuous => false);
SELECT m_try($$SELECT autocdc.create_snapshot_flow('rb', NULL, '{id}',
	source_function => 'next_snap(bigint)', name => 'rb_snap')$$);
SELECT autocdc.drop_flow('rb_cdc', true);
SET m.flow = 'rb_snap';
INSERT INTO versions VALUES ('rb_snap', 'r10', 10);
SELECT autocdc.create_snapshot_flow('rb', NULL, '{id}',
	source_function => 'next_snap(bigint)', name => 'rb_snap', continuous => false);
SELECT num_events FROM autocdc.run_flow('rb_snap');
SELECT m_try($$SELECT autocdc.create_flow('rb', 'feed', '{id}', sequence_by => 'seq',
	stored_as_scd_type => 'bitemporal', system_sequence_by => 'seq',
	except_column_list => '{seq,op}', name => 'rb_cdc')$$);
-- version type and sequence type differ (bigint and integer; timestamptz)
CREATE TABLE ifeed (id int, val text, seq int);
SELECT m_try($$SELECT autocdc.create_flow('rb', 'ifeed', '{id}', sequence_by => 'seq',
	except_column_list => '{seq}', name => 'rb_cdc')$$);
SELECT m_try($$SELECT autocdc.create_snapshot_flow('rb', 'tsnap', '{id}', name => 'rb_snap2')$$);
SELECT autocdc.drop_flow('rb_snap', true);
SELECT autocdc.create_flow('ri', 'ifeed', '{id}', sequence_by => 'seq',
	except_column_list => '{seq}', name => 'ri_cdc', continuous => false);
SELECT m_try($$SELECT autocdc.create_snapshot_flow('ri', NULL, '{id}',
	source_function => 'next_snap(bigint)', name => 'ri_snap')$$);
SELECT m_try($$SELECT autocdc.create_snapshot_flow('ri', 'tsnap', '{id}', name => 'ri_snap')$$);
SELECT autocdc.drop_flow('ri_cdc', true);
-- none of this file's flows is left
SELECT name FROM autocdc.flow WHERE name ~ '^(m|n|t|q|r2|rb|ri)_' ORDER BY name;
