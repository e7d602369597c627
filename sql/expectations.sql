--
-- expectations: data quality rules of a target (semantics §4 "Expectations"),
-- checked on every upsert event of every flow into it.  Every flow is
-- continuous => false and makes its first, empty run before its events
-- arrive.  Result lines of run_flow: (num_events, num_upserted_rows,
-- num_deleted_rows, num_skipped_events).
--
\pset null '(null)'
CREATE FUNCTION x_try(sql text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
	st text; msg text; det text; hnt text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
							det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
	RETURN regexp_replace(st || ': ' || msg
		|| CASE WHEN det <> '' THEN E'\nDETAIL: ' || det ELSE '' END
		|| CASE WHEN hnt <> '' THEN E'\nHINT: ' || hnt ELSE '' END,
		'[0-9A-F]+/[0-9A-F]+', 'X/X', 'g');
END
$f$;

---------------------------------------------------------------------------
-- warn applies and counts, drop ignores and counts; NULL passes; each
-- expectation is counted independently of the others (also of one that
-- drops the event); deletes are not checked.
---------------------------------------------------------------------------
CREATE TABLE x_feed (id int, v int, op text, seq int);
SELECT autocdc.create_flow('x_t', 'x_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq}', continuous => false);
SELECT * FROM autocdc.run_flow('x_t');
SELECT autocdc.set_expectation('x_t', 'positive', 'v > 0');
SELECT autocdc.set_expectation('x_t', 'small', 'v < 100', 'drop');
SELECT autocdc.set_expectation('x_t', 'even', $$v % 2 = 0$$, on_violation => 'drop');
SELECT * FROM autocdc.expectations ORDER BY name;
-- 1: passes all, then deleted (v 999 is not checked: a delete);
-- 2: fails positive (applied); 3: fails small (dropped); 4: NULL passes all;
-- 5: fails small and even (dropped); 6: fails positive and even (dropped)
INSERT INTO x_feed VALUES (1, 4, NULL, 1), (2, -2, NULL, 1), (3, 500, NULL, 1), (4, NULL, NULL, 1),
	(5, 101, NULL, 1), (6, -3, NULL, 1), (1, 999, 'D', 2);
-- 4 events (3 dropped), 2 upserted, 0 deleted (key 1 was never applied)
SELECT * FROM autocdc.run_flow('x_t');
SELECT * FROM x_t ORDER BY id;
-- each: 4 passed, 2 failed
SELECT name, num_passed, num_failed FROM autocdc.expectations WHERE target = 'x_t'::regclass ORDER BY name;
SELECT num_events, expectations FROM autocdc.flow_runs WHERE flow = 'x_t' ORDER BY id DESC LIMIT 1;

-- counts per run and in total: a second run adds to the totals
INSERT INTO x_feed VALUES (7, 8, NULL, 1), (8, 9, NULL, 1);
SELECT * FROM autocdc.run_flow('x_t');
SELECT expectations FROM autocdc.flow_runs WHERE flow = 'x_t' ORDER BY id DESC LIMIT 1;
SELECT name, num_passed, num_failed FROM autocdc.expectations WHERE target = 'x_t'::regclass ORDER BY name;
SELECT * FROM x_t ORDER BY id;

---------------------------------------------------------------------------
-- a dropped event never enters the hidden state: a later-arriving event
-- with a lower sequence still wins over it.
---------------------------------------------------------------------------
INSERT INTO x_feed VALUES (2, 10, NULL, 5);
SELECT * FROM autocdc.run_flow('x_t');
INSERT INTO x_feed VALUES (2, 500, NULL, 9);	-- dropped (small)
SELECT * FROM autocdc.run_flow('x_t');
INSERT INTO x_feed VALUES (2, 12, NULL, 7);		-- later than 5: applied
SELECT * FROM autocdc.run_flow('x_t');
SELECT * FROM x_t WHERE id = 2;

---------------------------------------------------------------------------
-- fail: the run fails and applies nothing, naming the target, the
-- expectation, the key and the commit; skip_events passes it.
---------------------------------------------------------------------------
SELECT autocdc.set_expectation('x_t', 'bounded', 'v > -100', 'fail');
SELECT pg_current_wal_lsn() AS before_bad \gset
INSERT INTO x_feed VALUES (21, -1000, NULL, 1), (22, 6, NULL, 1);
SELECT pg_current_wal_lsn() AS after_bad \gset
INSERT INTO x_feed VALUES (23, 4, NULL, 1);
SELECT x_try($$SELECT * FROM autocdc.run_flow('x_t')$$) AS violation;
SELECT state, last_error_sqlstate, last_error_lsn > :'before_bad' AND last_error_lsn <= :'after_bad' AS lsn_of_bad_commit,
	   position(last_error_lsn::text IN last_error_detail) > 0 AS detail_names_it
  FROM autocdc.flows WHERE name = 'x_t';
-- nothing applied, no count changed
SELECT * FROM x_t WHERE id >= 20 ORDER BY id;
SELECT name, num_passed, num_failed FROM autocdc.expectations WHERE target = 'x_t'::regclass ORDER BY name;
SELECT autocdc.skip_events('x_t', last_error_lsn) FROM autocdc.flows WHERE name = 'x_t';
-- 23 applied, the skipped commit's 21 and 22 not (2 skipped events)
SELECT * FROM autocdc.run_flow('x_t');
SELECT * FROM x_t WHERE id >= 20 ORDER BY id;
SELECT state FROM autocdc.flows WHERE name = 'x_t';

---------------------------------------------------------------------------
-- added and dropped between runs: from the next run on, rows already
-- applied stay; a replaced expectation starts its counts again.
---------------------------------------------------------------------------
SELECT autocdc.drop_expectation('x_t', 'small');
SELECT autocdc.drop_expectation('x_t', 'even');
SELECT autocdc.set_expectation('x_t', 'positive', 'v > 1', 'drop');	-- replaced
SELECT name, condition, on_violation, num_passed, num_failed
  FROM autocdc.expectations WHERE target = 'x_t'::regclass ORDER BY name;
INSERT INTO x_feed VALUES (30, 501, NULL, 1), (31, 1, NULL, 1);
SELECT * FROM autocdc.run_flow('x_t');
SELECT * FROM x_t WHERE id >= 30 ORDER BY id;	-- 30 (no longer "small"); 31 dropped
SELECT * FROM x_t WHERE id = 2;					-- (2, 12) stays
SELECT expectations FROM autocdc.flow_runs WHERE flow = 'x_t' ORDER BY id DESC LIMIT 1;

---------------------------------------------------------------------------
-- a first read (rows read from the table) is checked too; its rows have no
-- commit position, and the error says so.
---------------------------------------------------------------------------
CREATE TABLE x_fr_feed (id int, v int, seq int);
INSERT INTO x_fr_feed VALUES (1, 1, 1), (2, -1, 1);
SELECT autocdc.create_flow('x_fr', 'x_fr_feed', '{id}', sequence_by => 'seq', continuous => false,
	except_column_list => '{seq}');
SELECT autocdc.set_expectation('x_fr', 'positive', 'v > 0', 'fail');
SELECT x_try($$SELECT * FROM autocdc.run_flow('x_fr')$$) AS first_read_violation;
SELECT autocdc.set_expectation('x_fr', 'positive', 'v > 0', 'drop');
SELECT * FROM autocdc.run_flow('x_fr');
SELECT * FROM x_fr ORDER BY id;
-- a full refresh reads the table again: fail fails it, skip_invalid skips
-- and reports the rows that violate (and counts them as failed)
SELECT autocdc.set_expectation('x_fr', 'positive', 'v > 0', 'fail');
SELECT x_try($$SELECT * FROM autocdc.full_refresh('x_fr')$$) AS refresh_violation;
SELECT * FROM autocdc.full_refresh('x_fr', skip_invalid => true);
SELECT * FROM x_fr ORDER BY id;
SELECT num_events, num_skipped_events, expectations FROM autocdc.flow_runs
 WHERE flow = 'x_fr' ORDER BY id DESC LIMIT 1;

---------------------------------------------------------------------------
-- errors
---------------------------------------------------------------------------
SELECT x_try($$SELECT autocdc.set_expectation('x_feed', 'a', 'v > 0')$$) AS not_a_target;
SELECT x_try($$SELECT autocdc.set_expectation('x_t', 'a', 'v + 1')$$) AS not_boolean;
SELECT x_try($$SELECT autocdc.set_expectation('x_t', 'a', 'nosuch > 0')$$) AS unknown_column;
SELECT x_try($$SELECT autocdc.set_expectation('x_t', 'a', '(SELECT true)')$$) AS subquery;
SELECT x_try($$SELECT autocdc.set_expectation('x_t', 'a', 'v > 0', 'ignore')$$) AS bad_action;
SELECT x_try($$SELECT autocdc.set_expectation('x_t', '', 'v > 0')$$) AS empty_name;
SELECT x_try($$SELECT autocdc.set_expectation('x_t', NULL, 'v > 0')$$) AS null_name;
SELECT x_try($$SELECT autocdc.drop_expectation('x_t', 'nosuch')$$) AS drop_unknown;
-- an SCD 2 target's period columns are not data columns of an event
CREATE TABLE x_h_feed (id int, v int, seq int);
SELECT autocdc.create_flow('x_h', 'x_h_feed', '{id}', sequence_by => 'seq', continuous => false,
	stored_as_scd_type => '2');
SELECT x_try($$SELECT autocdc.set_expectation('x_h', 'a', '__start_at IS NOT NULL')$$) AS period_column;
-- a condition is stored schema-qualified and read with the flow's search_path
CREATE SCHEMA x_s;
CREATE FUNCTION x_s.ok(int) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT $1 <> 13';
SET search_path = x_s, public;
SELECT autocdc.set_expectation('x_h', 'not13', 'ok(v)', 'drop');
RESET search_path;
SELECT condition FROM autocdc.expectations WHERE target = 'x_h'::regclass;
SELECT * FROM autocdc.run_flow('x_h');
INSERT INTO x_h_feed VALUES (1, 13, 1), (2, 14, 1);
SELECT * FROM autocdc.run_flow('x_h');
SELECT id, v FROM x_h ORDER BY id;

---------------------------------------------------------------------------
-- snapshot flows: each row of each snapshot read is an upsert event, checked
-- whether or not it differs from the target (num_events counts them); drop
-- leaves the key's target rows as they are in the run (neither updated nor
-- deleted); a key absent from the snapshot is deleted as usual; fail
-- applies nothing.
---------------------------------------------------------------------------
-- a table, SCD 1
CREATE TABLE x_snap_src (id int PRIMARY KEY, v int);
SELECT autocdc.create_snapshot_flow('x_snap', 'x_snap_src', '{id}', continuous => false);
SELECT * FROM autocdc.run_flow('x_snap');
SELECT autocdc.set_expectation('x_snap', 'positive', 'v > 0', 'drop');
SELECT autocdc.set_expectation('x_snap', 'small', 'v < 100');
INSERT INTO x_snap_src VALUES (1, 1), (2, 2), (3, NULL);
SELECT * FROM autocdc.run_flow('x_snap');
SELECT * FROM x_snap ORDER BY id;
-- 1 turns negative (dropped: stays 1), 2 too large (warned: applied), 3
-- vanishes (deleted), 4 arrives negative (dropped: never inserted)
UPDATE x_snap_src SET v = -1 WHERE id = 1;
UPDATE x_snap_src SET v = 200 WHERE id = 2;
DELETE FROM x_snap_src WHERE id = 3;
INSERT INTO x_snap_src VALUES (4, -4);
SELECT * FROM autocdc.run_flow('x_snap');
SELECT * FROM x_snap ORDER BY id;
SELECT expectations FROM autocdc.flow_runs WHERE flow = 'x_snap' ORDER BY id DESC LIMIT 1;
-- the same snapshot again: nothing changes, every row is counted again
SELECT * FROM autocdc.run_flow('x_snap');
SELECT expectations FROM autocdc.flow_runs WHERE flow = 'x_snap' ORDER BY id DESC LIMIT 1;
SELECT name, on_violation, num_passed, num_failed FROM autocdc.expectations
  WHERE target = 'x_snap'::regclass ORDER BY name;
-- fail: nothing of the run is applied (2's change neither), the key is named;
-- a row equal to the target's is checked too
SELECT autocdc.set_expectation('x_snap', 'not7', 'v <> 7', 'fail');
UPDATE x_snap_src SET v = 300 WHERE id = 2;
INSERT INTO x_snap_src VALUES (7, 7);
SELECT x_try($$SELECT * FROM autocdc.run_flow('x_snap')$$) AS snapshot_fail;
SELECT * FROM x_snap ORDER BY id;
SELECT state FROM autocdc.flows WHERE name = 'x_snap';
DELETE FROM x_snap_src WHERE id = 7;
SELECT * FROM autocdc.run_flow('x_snap');
SELECT autocdc.set_expectation('x_snap', 'not300', 'v <> 300', 'fail');
SELECT x_try($$SELECT * FROM autocdc.run_flow('x_snap')$$) AS unchanged_row_fails;
SELECT autocdc.drop_expectation('x_snap', 'not300');
-- full_refresh empties the target first: a dropped key is absent after it
SELECT * FROM autocdc.full_refresh('x_snap');
SELECT * FROM x_snap ORDER BY id;
SELECT expectations FROM autocdc.flow_runs WHERE flow = 'x_snap' ORDER BY id DESC LIMIT 1;
SELECT autocdc.drop_flow('x_snap', drop_target => true);
DROP TABLE x_snap_src;

-- a first snapshot rewrites its target, but the key of a row an expectation
-- drops stays as it was: into an existing table holding rows, 1 keeps its
-- row, 2 comes, 9 (absent from the snapshot) goes; the next runs keep
-- dropping the row until the source corrects it
CREATE TABLE x_old_src (id int PRIMARY KEY, v int);
INSERT INTO x_old_src VALUES (1, -1), (2, 2);
CREATE TABLE x_old (id int PRIMARY KEY, v int);
INSERT INTO x_old VALUES (1, 1), (9, 9);
SELECT autocdc.create_snapshot_flow('x_old', 'x_old_src', '{id}', continuous => false);
SELECT autocdc.set_expectation('x_old', 'positive', 'v > 0', 'drop');
SELECT * FROM autocdc.run_flow('x_old');
SELECT * FROM x_old ORDER BY id;
SELECT expectations FROM autocdc.flow_runs WHERE flow = 'x_old' ORDER BY id DESC LIMIT 1;
SELECT * FROM autocdc.run_flow('x_old');
SELECT * FROM x_old ORDER BY id;
UPDATE x_old_src SET v = 5 WHERE id = 1;
SELECT * FROM autocdc.run_flow('x_old');
SELECT * FROM x_old ORDER BY id;
-- warn applies the row
UPDATE x_old_src SET v = -5 WHERE id = 1;
SELECT autocdc.set_expectation('x_old', 'positive', 'v > 0');
SELECT * FROM autocdc.run_flow('x_old');
SELECT * FROM x_old ORDER BY id;
SELECT autocdc.drop_flow('x_old', drop_target => true);
DROP TABLE x_old_src;

-- a version function, SCD 2: each version applied in a run is counted; a
-- dropped key keeps its current version open (neither closed nor replaced)
CREATE TABLE x_versions (snapshot regclass, version bigint);
CREATE FUNCTION x_next(last bigint) RETURNS TABLE (snapshot regclass, version bigint)
	LANGUAGE sql AS $$
	SELECT v.snapshot, v.version FROM public.x_versions v
	 WHERE v.version > coalesce(last, -1) ORDER BY v.version LIMIT 1
$$;
CREATE TABLE x_v1 (id int, v int);
INSERT INTO x_v1 VALUES (1, 1), (2, 2);
INSERT INTO x_versions VALUES ('x_v1', 1);
SELECT autocdc.create_snapshot_flow('x_fn', NULL, '{id}', stored_as_scd_type => '2',
	source_function => 'x_next(bigint)', continuous => false);
SELECT * FROM autocdc.run_flow('x_fn');
SELECT autocdc.set_expectation('x_fn', 'positive', 'v > 0', 'drop');
-- version 2: 1 turns negative (dropped), 2 changes; version 3: 1 is back
-- positive and changed, 2 vanishes (closed)
CREATE TABLE x_v2 (id int, v int);
INSERT INTO x_v2 VALUES (1, -1), (2, 20);
CREATE TABLE x_v3 (id int, v int);
INSERT INTO x_v3 VALUES (1, 10);
INSERT INTO x_versions VALUES ('x_v2', 2), ('x_v3', 3);
SELECT * FROM autocdc.run_flow('x_fn');
SELECT id, v, __start_at, __end_at FROM x_fn ORDER BY id, __start_at;
SELECT expectations FROM autocdc.flow_runs WHERE flow = 'x_fn' ORDER BY id DESC LIMIT 1;
-- version 4: 1 negative again and 3 new but negative: only counted
CREATE TABLE x_v4 (id int, v int);
INSERT INTO x_v4 VALUES (1, -10), (3, -3);
INSERT INTO x_versions VALUES ('x_v4', 4);
SELECT * FROM autocdc.run_flow('x_fn');
SELECT id, v, __start_at, __end_at FROM x_fn ORDER BY id, __start_at;
-- fail names the snapshot row's key
SELECT autocdc.set_expectation('x_fn', 'positive', 'v > 0', 'fail');
CREATE TABLE x_v5 (id int, v int);
INSERT INTO x_v5 VALUES (1, 11), (5, -5);
INSERT INTO x_versions VALUES ('x_v5', 5);
SELECT x_try($$SELECT * FROM autocdc.run_flow('x_fn')$$) AS snapshot_fail;
SELECT id, v, __start_at, __end_at FROM x_fn ORDER BY id, __start_at;
SELECT state FROM autocdc.flows WHERE name = 'x_fn';
SELECT autocdc.drop_flow('x_fn', drop_target => true);
DROP TABLE x_v1, x_v2, x_v3, x_v4, x_v5, x_versions;
DROP FUNCTION x_next(bigint);

-- a query, SCD 1 and SCD 2 (the same query's rows)
CREATE TABLE x_q_src (id int, v int, live boolean);
INSERT INTO x_q_src VALUES (1, 1, true), (2, 2, true);
SELECT autocdc.create_snapshot_flow('x_q1', keys => '{id}', continuous => false,
	source_query => 'SELECT id, v FROM public.x_q_src WHERE live');
SELECT autocdc.create_snapshot_flow('x_q2', keys => '{id}', continuous => false,
	stored_as_scd_type => '2', source_query => 'SELECT id, v FROM public.x_q_src WHERE live');
SELECT * FROM autocdc.run_flow('x_q1');
SELECT * FROM autocdc.run_flow('x_q2');
SELECT autocdc.set_expectation('x_q1', 'small', 'v < 10', 'drop');
SELECT autocdc.set_expectation('x_q2', 'small', 'v < 10', 'drop');
UPDATE x_q_src SET v = 99 WHERE id = 1;
UPDATE x_q_src SET live = false WHERE id = 2;
INSERT INTO x_q_src VALUES (3, NULL, true);
SELECT * FROM autocdc.run_flow('x_q1');
SELECT * FROM autocdc.run_flow('x_q2');
SELECT * FROM x_q1 ORDER BY id;
SELECT id, v, __end_at IS NULL AS current FROM x_q2 ORDER BY id, __start_at;
SELECT flow, expectations FROM autocdc.flow_runs WHERE flow IN ('x_q1', 'x_q2')
  ORDER BY id DESC LIMIT 2;
SELECT autocdc.drop_flow('x_q1', drop_target => true);
SELECT autocdc.drop_flow('x_q2', drop_target => true);
DROP TABLE x_q_src;

-- a snapshot flow beside change flows in one target checks them too: a
-- snapshot at version v is a truncate at v and an upsert at v of each row;
-- a row an expectation drops leaves its key as it was, and the truncate
-- spares that key for good (a later-arriving older event of it still
-- applies), while it deletes the other keys absent from the snapshot
CREATE TABLE x_mix_feed (id int, v int, seq bigint);
CREATE TABLE x_mix_s5 (id int, v int);
CREATE TABLE x_mix_s8 (id int, v int);
CREATE TABLE x_mix_versions (snapshot regclass, version bigint);
CREATE FUNCTION x_mix_next(last bigint) RETURNS TABLE (snapshot regclass, version bigint)
	LANGUAGE sql AS $$
	SELECT v.snapshot, v.version FROM public.x_mix_versions v
	 WHERE v.version > coalesce(last, -1) ORDER BY v.version LIMIT 1
$$;
SELECT autocdc.create_flow('x_mix', 'x_mix_feed', '{id}', sequence_by => 'seq',
	name => 'x_mix_cdc', continuous => false);
SELECT autocdc.create_snapshot_flow('x_mix', NULL, '{id}', source_function => 'x_mix_next(bigint)',
	name => 'x_mix_snap', continuous => false);
SELECT autocdc.set_expectation('x_mix', 'positive', 'v > 0', 'drop');
INSERT INTO x_mix_feed VALUES (1, 10, 1), (2, 20, 1), (3, 30, 1), (4, -40, 1);
SELECT * FROM autocdc.run_flow('x_mix_cdc');
SELECT * FROM x_mix ORDER BY id;
INSERT INTO x_mix_s5 VALUES (1, 11), (2, -2);
INSERT INTO x_mix_versions VALUES ('x_mix_s5', 5);
SELECT * FROM autocdc.run_flow('x_mix_snap');
SELECT * FROM x_mix ORDER BY id;
SELECT expectations FROM autocdc.flow_runs WHERE flow = 'x_mix_snap' ORDER BY id DESC LIMIT 1;
-- older events arriving late: 2's applies (spared), 3's does not (deleted
-- at 5), nor 1's (upserted at 5)
INSERT INTO x_mix_feed VALUES (2, 22, 3), (3, 33, 3), (1, 12, 4);
SELECT * FROM autocdc.run_flow('x_mix_cdc');
SELECT * FROM x_mix ORDER BY id;
-- the spare is one snapshot's: version 8 drops 1's row and omits 2
INSERT INTO x_mix_feed VALUES (2, 27, 7);
SELECT * FROM autocdc.run_flow('x_mix_cdc');
INSERT INTO x_mix_s8 VALUES (1, -1);
INSERT INTO x_mix_versions VALUES ('x_mix_s8', 8);
SELECT * FROM autocdc.run_flow('x_mix_snap');
SELECT * FROM x_mix ORDER BY id;
INSERT INTO x_mix_feed VALUES (1, 16, 6), (2, 26, 6);
SELECT * FROM autocdc.run_flow('x_mix_cdc');
SELECT * FROM x_mix ORDER BY id;
-- the mixed fold from scratch (full_refresh of the change flow) agrees
SELECT autocdc.full_refresh('x_mix_cdc');
SELECT * FROM x_mix ORDER BY id;
SELECT name, num_passed, num_failed FROM autocdc.expectations WHERE target = 'x_mix'::regclass;
-- fail names the snapshot row and applies nothing
SELECT autocdc.set_expectation('x_mix', 'positive', 'v > 0', 'fail');
CREATE TABLE x_mix_s9 (id int, v int);
INSERT INTO x_mix_s9 VALUES (1, 1), (2, -2);
INSERT INTO x_mix_versions VALUES ('x_mix_s9', 9);
SELECT x_try($$SELECT * FROM autocdc.run_flow('x_mix_snap')$$) AS mixed_fail;
SELECT * FROM x_mix ORDER BY id;
SELECT autocdc.drop_flow('x_mix_snap');
SELECT autocdc.drop_flow('x_mix_cdc', drop_target => true);
DROP TABLE x_mix_feed, x_mix_s5, x_mix_s8, x_mix_s9, x_mix_versions;
DROP FUNCTION x_mix_next(bigint);

---------------------------------------------------------------------------
-- the statement form: CONSTRAINT name EXPECT (condition) [ON VIOLATION
-- DROP ROW | FAIL UPDATE] among the elements of CREATE STREAMING TABLE,
-- set once the block has created a flow into the table (statement-made
-- flows are continuous: only the results are shown, not which run applied).
---------------------------------------------------------------------------
CREATE TABLE x_st_feed (id int, v int, seq int);
SET client_min_messages = error;	-- a warning is the applying run's, maybe the worker's
DO LANGUAGE autocdc $$
CREATE STREAMING TABLE x_st (
	id int,
	CONSTRAINT positive EXPECT (v > 0) ON VIOLATION DROP ROW,
	v int,
	CONSTRAINT "Small v" EXPECT (v < (10 * 10)),
	CONSTRAINT no_13 EXPECT (v <> 13) ON VIOLATION FAIL UPDATE,
	CONSTRAINT big CHECK (v > -1000)
);
CREATE FLOW x_st AS AUTO CDC INTO x_st FROM x_st_feed KEYS (id) SEQUENCE BY seq COLUMNS * EXCEPT (seq);
$$;
SELECT name, condition, on_violation FROM autocdc.expectations WHERE target = 'x_st'::regclass ORDER BY name COLLATE "C";
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'x_st'::regclass;
SELECT count(*) >= 0 AS ran FROM autocdc.run_flow('x_st');
INSERT INTO x_st_feed VALUES (1, 5, 1), (2, -5, 1), (3, 500, 1);
SELECT count(*) >= 0 AS ran FROM autocdc.run_flow('x_st');
SELECT * FROM x_st ORDER BY id;
SELECT name, num_passed, num_failed FROM autocdc.expectations WHERE target = 'x_st'::regclass ORDER BY name COLLATE "C";
INSERT INTO x_st_feed VALUES (4, 13, 1);
SELECT x_try($$SELECT * FROM autocdc.run_flow('x_st')$$) AS statement_fail;
-- beside the function form: the same target's expectations, changed by function
SELECT autocdc.drop_expectation('x_st', 'no_13');
SELECT count(*) >= 0 AS ran FROM autocdc.run_flow('x_st');
SELECT * FROM x_st ORDER BY id;
-- a table that is a target already gets them at once; OR REFRESH with the
-- same condition and action keeps the counts, another one restarts them
DO LANGUAGE autocdc $$
CREATE OR REFRESH STREAMING TABLE x_st (
	CONSTRAINT positive EXPECT (v > 0) ON VIOLATION DROP ROW,
	CONSTRAINT "Small v" EXPECT (v < 50)
);
$$;
SELECT name, condition, on_violation, num_passed, num_failed
  FROM autocdc.expectations WHERE target = 'x_st'::regclass ORDER BY name COLLATE "C";
SELECT autocdc.drop_flow('x_st', drop_target => true);
RESET client_min_messages;
-- expectations of a table no flow of the block writes
SELECT x_try($x$SELECT autocdc.execute($$CREATE STREAMING TABLE x_st2 (id int, CONSTRAINT a EXPECT (id > 0))$$)$x$) AS no_flow;
SELECT to_regclass('x_st2') AS rolled_back;
SELECT x_try($x$SELECT autocdc.execute($$CREATE STREAMING TABLE x_st2 (id int, CONSTRAINT a EXPECT (id > 0) ON VIOLATION IGNORE)$$)$x$) AS bad_action;
SELECT x_try($x$SELECT autocdc.execute($$CREATE STREAMING TABLE x_st2 (id int, CONSTRAINT a EXPECT ())$$)$x$) AS no_condition;

---------------------------------------------------------------------------
-- privileges: the target's owner sets them; a condition is evaluated as the
-- owner of each flow into the target, so the role that sets it must have
-- the privileges of every such owner.
---------------------------------------------------------------------------
CREATE ROLE regress_x_alice;
CREATE ROLE regress_x_carol IN ROLE regress_x_alice;
CREATE ROLE regress_x_nobody;
GRANT CREATE ON SCHEMA public TO regress_x_alice, regress_x_carol;
SET ROLE regress_x_alice;
CREATE TABLE x_p_feed (id int, v int, seq int);
CREATE TABLE x_p2_feed (id int, v int, seq int);
GRANT SELECT ON x_p2_feed TO regress_x_carol;
SELECT autocdc.create_flow('x_p', 'x_p_feed', '{id}', sequence_by => 'seq', continuous => false);
SELECT autocdc.set_expectation('x_p', 'positive', 'v > 0', 'drop');
RESET ROLE;
SET ROLE regress_x_nobody;
SELECT x_try($$SELECT autocdc.set_expectation('x_p', 'b', 'v > 0')$$) AS not_owner;
SELECT x_try($$SELECT autocdc.drop_expectation('x_p', 'positive')$$) AS drop_not_owner;
SELECT count(*) AS sees_none FROM autocdc.expectations WHERE target = 'x_p'::regclass;
RESET ROLE;
-- carol (a member of alice) adds a flow of her own into alice's target:
-- alice's condition is not evaluated as carol
SET ROLE regress_x_carol;
SELECT autocdc.create_flow('x_p', 'x_p2_feed', '{id}', sequence_by => 'seq', name => 'x_p2',
	continuous => false);
SELECT x_try($$SELECT * FROM autocdc.run_flow('x_p2')$$) AS set_by_another_role;
RESET ROLE;
SET ROLE regress_x_alice;
SELECT x_try($$SELECT autocdc.set_expectation('x_p', 'positive', 'v > 0', 'drop')$$) AS flow_of_another_owner;
RESET ROLE;
-- carol has alice's privileges: she may set it for both flows
SET ROLE regress_x_carol;
SELECT autocdc.set_expectation('x_p', 'positive', 'v > 0', 'drop');
SELECT * FROM autocdc.run_flow('x_p2');
SELECT * FROM autocdc.run_flow('x_p');
INSERT INTO x_p2_feed VALUES (1, -1, 1), (2, 2, 1);
SELECT * FROM autocdc.run_flow('x_p2');
SELECT * FROM x_p ORDER BY id;
RESET ROLE;

-- REASSIGN OWNED gives the flows, and the expectations carol set, to
-- nobody, who has not carol's privileges: the flows check them as before
REASSIGN OWNED BY regress_x_alice, regress_x_carol TO regress_x_nobody;
SELECT name, owner FROM autocdc.flows WHERE name IN ('x_p', 'x_p2') ORDER BY name;
INSERT INTO x_p2_feed VALUES (3, -3, 1), (4, 4, 1);
SET ROLE regress_x_nobody;
SELECT * FROM autocdc.run_flow('x_p2');
SELECT * FROM x_p ORDER BY id;
RESET ROLE;

---------------------------------------------------------------------------
-- a flow with columns_to_update: its list column comes before the
-- expectations' values; an expectation is checked on the event's own
-- values (drop), and a bad list still fails the run after the count.
---------------------------------------------------------------------------
CREATE TABLE x_ctu_feed (id int, a int, b int, seq int, upd text[]);
SELECT autocdc.create_flow('x_ctu', 'x_ctu_feed', '{id}', sequence_by => 'seq',
	except_column_list => '{seq,upd}', columns_to_update => 'upd', continuous => false);
SELECT * FROM autocdc.run_flow('x_ctu');
SELECT autocdc.set_expectation('x_ctu', 'a_positive', 'a > 0', 'drop');
-- 1: written a and b; 1 at 2: writes b only (a NULL passes); 2: a = -1 dropped
INSERT INTO x_ctu_feed VALUES (1, 1, 10, 1, '{a,b}'), (1, NULL, 20, 2, '{b}'), (2, -1, 5, 1, '{a,b}');
SELECT * FROM autocdc.run_flow('x_ctu');
SELECT * FROM x_ctu ORDER BY id;
SELECT expectations FROM autocdc.flow_runs WHERE flow = 'x_ctu' ORDER BY id DESC LIMIT 1;
-- a dropped event's list is never looked at; a kept one's still is
INSERT INTO x_ctu_feed VALUES (3, -3, 0, 1, '{nope}');
SELECT * FROM autocdc.run_flow('x_ctu');
INSERT INTO x_ctu_feed VALUES (4, 4, 0, 1, '{nope}');
SELECT x_try($$SELECT * FROM autocdc.run_flow('x_ctu')$$);
SELECT * FROM x_ctu ORDER BY id;
SELECT autocdc.drop_flow('x_ctu', drop_target => true);
DROP TABLE x_ctu_feed;

---------------------------------------------------------------------------
-- removed with the target
---------------------------------------------------------------------------
SELECT autocdc.drop_flow('x_p2');
SELECT autocdc.drop_flow('x_p', drop_target => true);
SELECT count(*) AS left_over FROM autocdc.expectation e
  WHERE NOT EXISTS (SELECT FROM autocdc.target t WHERE t.id = e.target_id);
SELECT target, name FROM autocdc.expectations ORDER BY target::text, name;
DROP TABLE x_p_feed, x_p2_feed;
REVOKE CREATE ON SCHEMA public FROM regress_x_alice, regress_x_carol;
DROP ROLE regress_x_alice, regress_x_carol, regress_x_nobody;
