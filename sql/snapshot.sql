-- snapshot flows (semantics §6): semantics §8 examples 5-7 with a version function and
-- with a table source, every rule of the comparison, full_refresh, the
-- statement form, and every error (SQLSTATE, message, hint; nothing applied).
--
-- s_try(sql) runs a statement and shows "SQLSTATE: message" and the HINT;
-- 'ok' when it succeeds.
CREATE FUNCTION s_try(sql text) RETURNS text LANGUAGE plpgsql AS $f$
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
-- the snapshot flows (with their targets and last versions) and the
-- hidden-state tables made by this file, to show that a refused call or a
-- failed run leaves nothing behind
CREATE TABLE s_base_flows AS SELECT name FROM autocdc.flow;
CREATE TABLE s_base_state AS
	SELECT relname FROM pg_class WHERE relnamespace = 'autocdc_state'::regnamespace;
CREATE FUNCTION s_catalog() RETURNS text LANGUAGE sql AS $f$
	SELECT concat_ws('; ',
		'flows: ' || (SELECT string_agg(name || '->' || coalesce(t.relid::text, '(none)')
										|| CASE WHEN f.snapshot_version IS NULL THEN ''
												WHEN f.source_function IS NULL THEN '@time'
												ELSE '@' || f.snapshot_version END,
										', ' ORDER BY name)
						FROM autocdc.flow f LEFT JOIN autocdc.target t ON t.id = f.target_id
					   WHERE f.kind = 'snapshot' AND f.name NOT IN (SELECT name FROM s_base_flows)),
		'state tables: ' || (SELECT count(*) FROM pg_class
							  WHERE relnamespace = 'autocdc_state'::regnamespace AND relkind = 'r'
								AND relname NOT IN (SELECT relname FROM s_base_state)))
$f$;
CREATE SCHEMA snaps;
SET search_path = snaps, public;

-- ----------------------------------------------------------------------
-- semantics §8 example 5 (SCD 2) and 6 (SCD 1) with a version function:
-- v1 = {(1, Oaxaca), (2, Monterrey), (3, Tijuana)},
-- v2 = {(2, Carmel), (3, Los Angeles), (4, Death Valley)}
-- ----------------------------------------------------------------------
CREATE TABLE v1 (userId int, city text);
CREATE TABLE v2 (userId int, city text);
INSERT INTO v1 VALUES (1, 'Oaxaca'), (2, 'Monterrey'), (3, 'Tijuana');
INSERT INTO v2 VALUES (2, 'Carmel'), (3, 'Los Angeles'), (4, 'Death Valley');
-- the snapshots a version function hands out, and a log of its calls
CREATE TABLE versions (flow text, snapshot regclass, version bigint);
CREATE TABLE calls (flow text, arg bigint, n int);
CREATE FUNCTION next_snap(last bigint) RETURNS TABLE (snapshot regclass, version bigint)
	LANGUAGE plpgsql SET search_path = snaps AS $$
BEGIN
	-- the version function of every flow below: what versions holds for the
	-- flow named by the setting s.flow, after last, one version per call
	INSERT INTO calls VALUES (current_setting('s.flow'), last,
		(SELECT count(*) FROM versions v WHERE v.flow = current_setting('s.flow')
			AND v.version > coalesce(last, -1)));
	RETURN QUERY SELECT v.snapshot, v.version FROM versions v
		WHERE v.flow = current_setting('s.flow') AND v.version > coalesce(last, -1)
		ORDER BY v.version LIMIT 1;
END $$;

SELECT autocdc.create_snapshot_flow('ex5', NULL, '{userId}', stored_as_scd_type => '2',
	source_function => 'next_snap(bigint)');
SELECT autocdc.create_snapshot_flow('ex6', NULL, '{userId}',
	source_function => 'snaps.next_snap(bigint)');
-- the target is created by the first run that gets a snapshot, not before
SELECT to_regclass('ex5') AS ex5_before, s_catalog();
SELECT name, kind, source, target, scd_type, state FROM autocdc.flows
 WHERE name IN ('ex5', 'ex6') ORDER BY name;
-- a run whose function returns nothing applies nothing and creates nothing
SET s.flow = 'ex5';
SELECT * FROM autocdc.run_flow('ex5');
SELECT to_regclass('ex5') AS ex5_still, s_catalog();
-- after v1
INSERT INTO versions VALUES ('ex5', 'v1', 1), ('ex6', 'v1', 1);
SELECT * FROM autocdc.run_flow('ex5');
SELECT * FROM ex5 ORDER BY userid, __start_at;
-- the target has the snapshot's columns (userId folds to userid) and the
-- SCD 2 keys of semantics §4
SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
 WHERE a.attrelid = 'ex5'::regclass AND a.attnum > 0 ORDER BY a.attnum;
SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = 'ex5'::regclass ORDER BY 1;
-- after v2
INSERT INTO versions VALUES ('ex5', 'v2', 2), ('ex6', 'v2', 2);
SELECT * FROM autocdc.run_flow('ex5');
SELECT * FROM ex5 ORDER BY userid, __start_at;
-- the function was called first with NULL, then with the last applied
-- version, until a call returned no rows
SELECT arg, n FROM calls WHERE flow = 'ex5' ORDER BY arg NULLS FIRST, n;
-- example 6: one run applies v1 then v2 (the function is called repeatedly)
SET s.flow = 'ex6';
SELECT * FROM autocdc.run_flow('ex6');
SELECT * FROM ex6 ORDER BY userid;
SELECT arg, n FROM calls WHERE flow = 'ex6' ORDER BY arg NULLS FIRST, n;
SELECT * FROM autocdc.run_flow('ex6');
SELECT name, kind, source, target, scd_type, state, num_events, num_upserted_rows,
	   num_deleted_rows, retained_wal_bytes, lag_time
  FROM autocdc.flows WHERE name IN ('ex5', 'ex6') ORDER BY name;
SELECT flow, num_events, num_upserted_rows, num_deleted_rows, status FROM autocdc.flow_runs
 WHERE flow IN ('ex5', 'ex6') ORDER BY id;

-- ----------------------------------------------------------------------
-- semantics §8 example 7: SCD 2 with TRACK HISTORY ON (tracking)
-- ----------------------------------------------------------------------
CREATE TABLE t7v1 (key int, tracking text, nontracking text);
CREATE TABLE t7v2 (key int, tracking text, nontracking text);
INSERT INTO t7v1 VALUES (1, 'a1', 'b1'), (2, 'a2', 'b2'), (4, 'a4', 'b4');
INSERT INTO t7v2 VALUES (2, 'a2_new', 'b2'), (3, 'a3', 'b3'), (4, 'a4', 'b4_new');
INSERT INTO versions VALUES ('ex7', 't7v1', 1), ('ex7', 't7v2', 2);
SELECT autocdc.create_snapshot_flow('ex7', NULL, '{key}', stored_as_scd_type => '2',
	track_history_column_list => '{tracking}', source_function => 'next_snap(bigint)');
SET s.flow = 'ex7';
SELECT * FROM autocdc.run_flow('ex7');
SELECT * FROM ex7 ORDER BY key, __start_at;

-- ----------------------------------------------------------------------
-- example 5 with a table source: the versions are the runs' transaction
-- timestamps; the target is created in the calling transaction
-- ----------------------------------------------------------------------
CREATE TABLE users (userId int, city text);
INSERT INTO users SELECT * FROM v1;
BEGIN;
SELECT autocdc.create_snapshot_flow('users_hist', 'users', '{userId}', stored_as_scd_type => '2');
SELECT to_regclass('users_hist') AS created_in_the_transaction;
ROLLBACK;
SELECT to_regclass('users_hist') AS after_rollback, s_catalog();
SELECT autocdc.create_snapshot_flow('users_hist', 'users', '{userId}', stored_as_scd_type => '2');
SELECT autocdc.create_snapshot_flow('users_current', 'users', '{userId}');
SELECT count(*) AS rows_before_first_run FROM users_hist;
BEGIN;
SELECT now() AS t1 \gset
SELECT * FROM autocdc.run_flow('users_hist');
-- a second run in the same transaction: version not greater, applies nothing
SELECT * FROM autocdc.run_flow('users_hist');
SELECT * FROM autocdc.run_flow('users_current');
COMMIT;
-- a run with nothing changed reads the snapshot and writes nothing
SELECT * FROM autocdc.run_flow('users_hist');
BEGIN;
DELETE FROM users;
INSERT INTO users SELECT * FROM v2;
COMMIT;
BEGIN;
SELECT now() AS t2 \gset
SELECT * FROM autocdc.run_flow('users_hist');
SELECT * FROM autocdc.run_flow('users_current');
COMMIT;
SELECT userid, city, CASE __start_at WHEN :'t1' THEN 't1' WHEN :'t2' THEN 't2' END AS start_at,
	   CASE __end_at WHEN :'t1' THEN 't1' WHEN :'t2' THEN 't2' END AS end_at
  FROM users_hist ORDER BY userid, __start_at;
SELECT * FROM users_current ORDER BY userid;
SELECT pg_typeof(__start_at) FROM users_hist LIMIT 1;

-- ----------------------------------------------------------------------
-- the rules, one snapshot after another (versions 1, 2, ...; SCD 1 and 2):
-- new key -> insert, changed row -> update, vanished key -> delete,
-- identical row -> nothing; a key that vanishes and reappears opens a new
-- version; NULLs compare equal; untracked columns change in place
-- ----------------------------------------------------------------------
CREATE TABLE r (k int, j int, a text, b numeric, doc json);
CREATE TABLE r_next (LIKE r);
-- each version is a copy of r_next, handed to the three flows
CREATE FUNCTION take_snapshot(v bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	CREATE TABLE snaps.r_copy AS SELECT * FROM snaps.r_next;
	INSERT INTO snaps.versions SELECT f, 'snaps.r_copy'::regclass, v
	  FROM unnest(ARRAY['rules1', 'rules2', 'rules2t']) f;
END $$;
CREATE FUNCTION apply_all() RETURNS TABLE (flow text, num_events bigint, up bigint, del bigint)
	LANGUAGE plpgsql AS $$
DECLARE f text;
BEGIN
	FOREACH f IN ARRAY ARRAY['rules1', 'rules2', 'rules2t'] LOOP
		PERFORM set_config('s.flow', f, true);
		RETURN QUERY SELECT f, x.num_events, x.num_upserted_rows, x.num_deleted_rows
					   FROM autocdc.run_flow(f) x;
	END LOOP;
	DROP TABLE snaps.r_copy;
END $$;
SELECT autocdc.create_snapshot_flow('rules1', NULL, '{k, j}', source_function => 'next_snap(bigint)');
SELECT autocdc.create_snapshot_flow('rules2', NULL, '{k, j}', stored_as_scd_type => '2',
	source_function => 'next_snap(bigint)');
SELECT autocdc.create_snapshot_flow('rules2t', NULL, '{k,j}', stored_as_scd_type => '2',
	track_history_except_column_list => '{b}', source_function => 'next_snap(bigint)');
-- version 1
INSERT INTO r_next VALUES (1, 1, 'one', 1.0, '{"x": 1}'), (2, 1, NULL, NULL, NULL),
	(3, 1, 'three', 3, '[1, 2]'), (3, 2, 'three-two', 32, NULL), (5, 1, 'five', 5, NULL);
SELECT take_snapshot(1);
SELECT * FROM apply_all();
-- version 2: identical rows (NULLs included; 1.00 equals 1.0, so the target
-- keeps 1.0; json equal by text) change nothing; (3,1) changes a; (3,2)
-- vanishes; (4,1) is new; (5,1) changes only b, which rules2t does not track
TRUNCATE r_next;
INSERT INTO r_next VALUES (1, 1, 'one', 1.00, '{"x": 1}'), (2, 1, NULL, NULL, NULL),
	(3, 1, 'THREE', 3, '[1, 2]'), (4, 1, 'four', 4, NULL), (5, 1, 'five', 5.5, NULL);
SELECT take_snapshot(2);
SELECT * FROM apply_all();
-- version 3: the vanished key comes back, (2,1) changes from NULL to a value
-- and json changes by its text
TRUNCATE r_next;
INSERT INTO r_next VALUES (1, 1, 'one', 1.0, '{"x":1}'), (2, 1, 'two', NULL, NULL),
	(3, 1, 'THREE', 3, '[1, 2]'), (3, 2, 'back', 32, NULL), (4, 1, 'four', 4, NULL),
	(5, 1, 'five', 5.5, NULL);
SELECT take_snapshot(3);
SELECT * FROM apply_all();
-- version 4: an empty snapshot deletes every key
TRUNCATE r_next;
SELECT take_snapshot(4);
SELECT * FROM apply_all();
-- version 5: keys reappear after an empty snapshot
INSERT INTO r_next VALUES (1, 1, 'one again', 1, NULL);
SELECT take_snapshot(5);
SELECT * FROM apply_all();
SELECT * FROM rules1 ORDER BY k, j;
SELECT k, j, a, b, doc::text, __start_at, __end_at FROM rules2 ORDER BY k, j, __start_at;
SELECT k, j, a, b, doc::text, __start_at, __end_at FROM rules2t ORDER BY k, j, __start_at;

-- ----------------------------------------------------------------------
-- several snapshots in one call are applied in ascending version order
-- ----------------------------------------------------------------------
CREATE TABLE m1 (id int, v text);
CREATE TABLE m2 (id int, v text);
CREATE TABLE m3 (id int, v text);
INSERT INTO m1 VALUES (1, 'a');
INSERT INTO m2 VALUES (1, 'b'), (2, 'b');
INSERT INTO m3 VALUES (2, 'c');
CREATE FUNCTION many(last date) RETURNS TABLE (snapshot regclass, version date)
	LANGUAGE sql SET search_path = snaps AS $$
	SELECT * FROM (VALUES ('m3'::regclass, date '2024-01-03'), ('m1', date '2024-01-01'),
					  ('m2', date '2024-01-02')) x(s, d)
	 WHERE last IS NULL
$$;
SELECT autocdc.create_snapshot_flow('many_hist', NULL, '{id}', stored_as_scd_type => '2',
	source_function => 'many(date)');
SELECT * FROM autocdc.run_flow('many_hist');
SELECT * FROM many_hist ORDER BY id, __start_at;
SELECT snapshot_version FROM autocdc.flow WHERE name = 'many_hist';

-- ----------------------------------------------------------------------
-- schema changes: a column added to the source is added to the target
-- ----------------------------------------------------------------------
ALTER TABLE users ADD COLUMN zip text;
UPDATE users SET zip = '9' || userid WHERE userid > 2;
SELECT * FROM autocdc.run_flow('users_current');
SELECT * FROM users_current ORDER BY userid;

-- ----------------------------------------------------------------------
-- full_refresh: forget the history and the last version, apply the
-- snapshot(s) again; metrics compare rows by identity
-- ----------------------------------------------------------------------
SET s.flow = 'ex5';
SELECT * FROM autocdc.full_refresh('ex5');
SELECT * FROM ex5 ORDER BY userid, __start_at;
SELECT * FROM autocdc.full_refresh('users_current');
SELECT * FROM users_current ORDER BY userid;
-- a snapshot flow re-reads its whole source at every run: nothing to skip
SELECT * FROM autocdc.full_refresh('users_current', skip_invalid => true);
-- without any snapshot, a refresh empties the target
DELETE FROM versions WHERE flow = 'ex6';
SET s.flow = 'ex6';
SELECT * FROM autocdc.full_refresh('ex6');
SELECT count(*) AS ex6_rows FROM ex6;

-- ----------------------------------------------------------------------
-- the statement form
-- ----------------------------------------------------------------------
DO LANGUAGE autocdc $$
CREATE FLOW users_scd2 AS AUTO CDC INTO users_scd2
FROM SNAPSHOT users
KEYS (userId)
STORED AS SCD TYPE 2
TRACK HISTORY ON * EXCEPT (zip);
CREATE FLOW users_scd1 AS AUTO CDC INTO users_scd1 FROM SNAPSHOT snaps.users KEYS (userId)
$$;
SELECT name, kind, source, target, scd_type FROM autocdc.flows
 WHERE name IN ('users_scd1', 'users_scd2') ORDER BY name;
SELECT track_columns FROM autocdc.flow WHERE name = 'users_scd2';
SELECT * FROM autocdc.run_flow('users_scd2');
SELECT userid, city, zip, __end_at FROM users_scd2 ORDER BY userid;
SELECT * FROM autocdc.execute($$ CREATE FLOW bad AS AUTO CDC INTO users_scd9 FROM SNAPSHOT users
	KEYS (userId) TRACK HISTORY ON (city) $$);
\set VERBOSITY sqlstate
SELECT * FROM autocdc.execute($$ CREATE FLOW bad AS AUTO CDC INTO b FROM SNAPSHOT users
	KEYS (userId) STORED AS SCD TYPE 3 $$);
\set VERBOSITY default
DO LANGUAGE autocdc $$ DROP FLOW users_scd1 $$;

-- ----------------------------------------------------------------------
-- once flows: the first run applies what is available (one read of a
-- table; every version the function hands out, in order), later runs apply
-- nothing (the worker never runs them), and full_refresh applies again
-- ----------------------------------------------------------------------
CREATE TABLE once_src (userId int, city text);
INSERT INTO once_src VALUES (1, 'Oaxaca'), (2, 'Monterrey');
SELECT autocdc.create_snapshot_flow('once_tbl', 'once_src', '{userId}', once => true);
SELECT * FROM autocdc.run_flow('once_tbl');
UPDATE once_src SET city = 'Carmel' WHERE userId = 2;
INSERT INTO once_src VALUES (3, 'Tijuana');
SELECT * FROM autocdc.run_flow('once_tbl');
SELECT * FROM once_tbl ORDER BY userid;
SELECT name, state, num_events FROM autocdc.flows WHERE name = 'once_tbl';
SELECT * FROM autocdc.full_refresh('once_tbl');
SELECT * FROM once_tbl ORDER BY userid;
DELETE FROM once_src WHERE userId = 1;
SELECT * FROM autocdc.run_flow('once_tbl');
SELECT count(*) AS once_tbl_rows FROM once_tbl;
CREATE TABLE ov1 (userId int, city text);
CREATE TABLE ov2 (userId int, city text);
CREATE TABLE ov3 (userId int, city text);
INSERT INTO ov1 VALUES (1, 'Oaxaca'), (2, 'Monterrey');
INSERT INTO ov2 VALUES (2, 'Carmel');
INSERT INTO ov3 VALUES (2, 'Carmel'), (4, 'Death Valley');
INSERT INTO versions VALUES ('once_fn', 'ov1', 1), ('once_fn', 'ov2', 2);
SELECT autocdc.create_snapshot_flow('once_fn', NULL, '{userId}', stored_as_scd_type => '2',
	source_function => 'next_snap(bigint)', once => true);
SET s.flow = 'once_fn';
SELECT * FROM autocdc.run_flow('once_fn');
INSERT INTO versions VALUES ('once_fn', 'ov3', 3);
SELECT * FROM autocdc.run_flow('once_fn');
SELECT * FROM once_fn ORDER BY userid, __start_at;
SELECT snapshot_version FROM autocdc.flow WHERE name = 'once_fn';
SELECT * FROM autocdc.full_refresh('once_fn');
SELECT * FROM once_fn ORDER BY userid, __start_at;
-- a once flow whose first run finds no version is done all the same
SELECT autocdc.create_snapshot_flow('once_none', NULL, '{userId}',
	source_function => 'next_snap(bigint)', once => true);
SET s.flow = 'once_none';
SELECT * FROM autocdc.run_flow('once_none');
INSERT INTO versions VALUES ('once_none', 'ov1', 1);
SELECT * FROM autocdc.run_flow('once_none');
SELECT to_regclass('once_none') AS not_created;
SELECT * FROM autocdc.full_refresh('once_none');
SELECT * FROM once_none ORDER BY userid;
-- the statement form: AUTO CDC ONCE INTO ... FROM SNAPSHOT
DO LANGUAGE autocdc $$
CREATE FLOW once_stmt AS AUTO CDC ONCE INTO once_stmt FROM SNAPSHOT once_src KEYS (userId)
$$;
SELECT name, once FROM autocdc.flow WHERE name IN ('once_stmt', 'once_tbl', 'users_scd2') ORDER BY name;
SELECT * FROM autocdc.run_flow('once_stmt');
INSERT INTO once_src VALUES (5, 'Cancun');
SELECT * FROM autocdc.run_flow('once_stmt');
SELECT * FROM once_stmt ORDER BY userid;
SELECT autocdc.drop_flow(name, drop_target => true) FROM autocdc.flow
 WHERE name IN ('once_tbl', 'once_fn', 'once_none', 'once_stmt') ORDER BY name;
DROP TABLE once_src, ov1, ov2, ov3;
DELETE FROM versions WHERE flow LIKE 'once\_%';

-- ----------------------------------------------------------------------
-- errors: each with a SQLSTATE, a message naming the object, a hint; a
-- failed run applies nothing
-- ----------------------------------------------------------------------
SELECT s_catalog() AS before_errors;
-- two rows for one key in a snapshot
CREATE TABLE dup (k int, j int, v text);
INSERT INTO dup VALUES (1, 1, 'a'), (1, 2, 'b'), (1, 2, 'c');
SELECT autocdc.create_snapshot_flow('dup_flow', 'dup', '{k, j}');
SELECT s_try($$SELECT * FROM autocdc.run_flow('dup_flow')$$);
SELECT to_regclass('dup_flow') IS NOT NULL AS target_exists, (SELECT count(*) FROM dup_flow) AS rows;
SELECT state, last_error FROM autocdc.flows WHERE name = 'dup_flow';
-- ... also when the duplicate rows are identical and the target holds the key
DELETE FROM dup WHERE v = 'c';
SELECT * FROM autocdc.run_flow('dup_flow');
INSERT INTO dup VALUES (1, 2, 'b');
SELECT s_try($$SELECT * FROM autocdc.run_flow('dup_flow')$$);
-- a null key
DELETE FROM dup WHERE j = 2;
INSERT INTO dup VALUES (NULL, 2, 'n');
SELECT s_try($$SELECT * FROM autocdc.run_flow('dup_flow')$$);
SELECT * FROM dup_flow ORDER BY k, j;
-- duplicates in a snapshot read through a table with a unique index cannot
-- exist; a view over it is checked like any other snapshot
CREATE TABLE uniq (k int PRIMARY KEY, v text);
INSERT INTO uniq VALUES (1, 'x'), (2, 'y');
CREATE VIEW uniq_twice AS SELECT * FROM uniq UNION ALL SELECT * FROM uniq WHERE k = 2;
SELECT autocdc.create_snapshot_flow('uniq_flow', 'uniq', '{k}');
SELECT * FROM autocdc.run_flow('uniq_flow');
SELECT autocdc.create_snapshot_flow('uniq_twice_flow', 'uniq_twice', '{k}');
SELECT s_try($$SELECT * FROM autocdc.run_flow('uniq_twice_flow')$$);
-- ... nor is a table whose unique index leaves a key column nullable, or
-- whose inheritance children are read with it
CREATE TABLE uniq2 (k int PRIMARY KEY, j int, v text);
INSERT INTO uniq2 VALUES (1, 1, 'x'), (2, NULL, 'y');
SELECT autocdc.create_snapshot_flow('uniq2_flow', 'uniq2', '{k, j}');
SELECT s_try($$SELECT * FROM autocdc.run_flow('uniq2_flow')$$);
CREATE TABLE uniq_child () INHERITS (uniq);
INSERT INTO uniq_child VALUES (1, 'x again');
SELECT s_try($$SELECT * FROM autocdc.run_flow('uniq_flow')$$);
-- a version not greater than the last applied one
CREATE TABLE bad_versions (snapshot regclass, version int);
CREATE FUNCTION bad_next(last int) RETURNS TABLE (snapshot regclass, version int)
	LANGUAGE sql AS $$ SELECT b.snapshot, b.version FROM snaps.bad_versions b
					   WHERE last IS NULL OR b.version >= last $$;
SELECT autocdc.create_snapshot_flow('bad_flow', NULL, '{userId}', source_function => 'bad_next(int)');
INSERT INTO bad_versions VALUES ('v1', 1);
SELECT s_try($$SELECT * FROM autocdc.run_flow('bad_flow')$$);
SELECT to_regclass('bad_flow') AS nothing_created, s_catalog();
-- two snapshots with one version in one call
TRUNCATE bad_versions;
CREATE OR REPLACE FUNCTION bad_next(last int) RETURNS TABLE (snapshot regclass, version int)
	LANGUAGE sql AS $$ SELECT b.snapshot, b.version FROM snaps.bad_versions b
					   WHERE last IS NULL OR b.version > last $$;
INSERT INTO bad_versions VALUES ('v1', 1), ('v2', 1);
SELECT s_try($$SELECT * FROM autocdc.run_flow('bad_flow')$$);
-- a null version, a null snapshot, a snapshot that is gone
TRUNCATE bad_versions;
INSERT INTO bad_versions VALUES ('v1', NULL);
SELECT s_try($$SELECT * FROM autocdc.run_flow('bad_flow')$$);
TRUNCATE bad_versions;
INSERT INTO bad_versions VALUES (NULL, 1);
SELECT s_try($$SELECT * FROM autocdc.run_flow('bad_flow')$$);
TRUNCATE bad_versions;
INSERT INTO bad_versions VALUES (999999999, 1);
SELECT s_try($$SELECT * FROM autocdc.run_flow('bad_flow')$$);
SELECT to_regclass('bad_flow') AS nothing_created, s_catalog();
-- a version function that was dropped
DROP FUNCTION bad_next(int);
SELECT s_try($$SELECT * FROM autocdc.run_flow('bad_flow')$$);
SELECT autocdc.drop_flow('bad_flow');
-- unsupported version types and wrong signatures
CREATE FUNCTION f_json(last json) RETURNS TABLE (snapshot regclass, version json)
	LANGUAGE sql AS $$ SELECT NULL::regclass, NULL::json WHERE false $$;
CREATE FUNCTION f_setof(last int) RETURNS SETOF int LANGUAGE sql AS $$ SELECT 1 $$;
CREATE FUNCTION f_two(last int, x int) RETURNS TABLE (snapshot regclass, version int)
	LANGUAGE sql AS $$ SELECT NULL::regclass, 1 WHERE false $$;
CREATE FUNCTION f_types(last int) RETURNS TABLE (snapshot text, version int)
	LANGUAGE sql AS $$ SELECT NULL::text, 1 WHERE false $$;
CREATE FUNCTION f_vtype(last int) RETURNS TABLE (snapshot regclass, version bigint)
	LANGUAGE sql AS $$ SELECT NULL::regclass, 1::bigint WHERE false $$;
CREATE FUNCTION f_one(last int) RETURNS TABLE (snapshot regclass, version int)
	LANGUAGE sql AS $$ SELECT NULL::regclass, 1 WHERE false LIMIT 1 $$;
CREATE FUNCTION f_notset(last int, OUT snapshot regclass, OUT version int)
	LANGUAGE sql AS $$ SELECT NULL::regclass, 1 $$;
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', NULL, '{k}', source_function => 'f_json(json)')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', NULL, '{k}', source_function => 'f_setof(int)')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', NULL, '{k}', source_function => 'f_two(int, int)')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', NULL, '{k}', source_function => 'f_types(int)')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', NULL, '{k}', source_function => 'f_vtype(int)')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', NULL, '{k}', source_function => 'f_notset(int)')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', NULL, '{k}', source_function => 'f_one(bigint)')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', NULL, '{k}', source_function => 'nope(int)')$$);
-- a version function that relies on the caller's search_path: the hint names autocdc's
CREATE TABLE unq_versions (snapshot regclass, version int);
INSERT INTO unq_versions VALUES ('v1', 1);
CREATE FUNCTION unq_next(last int) RETURNS TABLE (snapshot regclass, version int)
	LANGUAGE sql AS $$ SELECT u.snapshot, u.version FROM unq_versions u WHERE last IS NULL $$;
SELECT autocdc.create_snapshot_flow('unq_flow', NULL, '{userId}', source_function => 'unq_next(int)',
	continuous => false);
SELECT s_try($$SELECT * FROM autocdc.run_flow('unq_flow')$$);
SELECT autocdc.drop_flow('unq_flow');
DROP FUNCTION unq_next(int);
DROP TABLE unq_versions;
-- arguments; source may be left out in named notation
SELECT s_try($$SELECT autocdc.create_snapshot_flow(target => 'e1', source_function => 'nope(int)', keys => '{k}')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow(target => 'e1', source_function => 'nope')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow(target => 'e1', source_function => 'f_one(int)')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', 'users', '{userId}', source_function => 'f_one(int)')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', NULL, '{userId}')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow(NULL, 'users', '{userId}')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', 'users', NULL)$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', 'users', '{}')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', NULL, '{}', source_function => 'f_one(int)')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', 'users', '{nope}')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', 'nope', '{userId}')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', 'users', '{userId}', stored_as_scd_type => '3')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', 'users', '{userId}', stored_as_scd_type => 'bitemporal')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', 'users', '{userId}', track_history_column_list => '{city}')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', NULL, '{userId}', track_history_column_list => '{city}', source_function => 'f_one(int)')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', 'users', '{userId}', stored_as_scd_type => '2',
	track_history_column_list => '{city}', track_history_except_column_list => '{zip}')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', 'users', '{userId}', stored_as_scd_type => '2',
	track_history_column_list => '{nope}')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e_new', 'users', '{userId}', name => 'ex5')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', NULL, '{userId}', name => 'ex5', source_function => 'f_one(int)')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('users', 'users', '{userId}')$$);
CREATE TEMP TABLE tmp_src (k int);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', 'tmp_src', '{k}')$$);
-- one snapshot flow per target; beside change flows only with a version of
-- their sequence type (sql/snapshot_mix.sql), in both directions
SELECT s_try($$SELECT autocdc.create_snapshot_flow('users_current', 'users', '{userId}', name => 'second')$$);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('ex5', NULL, '{userId}', stored_as_scd_type => '2',
	name => 'second', source_function => 'f_one(int)')$$);
CREATE TABLE feed (userId int, city text, seq int);
SELECT s_try($$SELECT autocdc.create_flow('users_current', 'feed', '{userId}', sequence_by => 'seq', name => 'second')$$);
SELECT autocdc.create_flow('feed_target', 'feed', '{userId}', sequence_by => 'seq', except_column_list => '{seq}');
SELECT s_try($$SELECT autocdc.create_snapshot_flow('feed_target', 'users', '{userId}', name => 'second')$$);
SELECT autocdc.drop_flow('feed_target', true);
-- an existing target must fit (checked by the first run for a version function)
CREATE TABLE mine (userid text, city text);
SELECT s_try($$SELECT autocdc.create_snapshot_flow('mine', 'users', '{userId}')$$);
SELECT autocdc.create_snapshot_flow('mine', NULL, '{userId}', source_function => 'next_snap(bigint)', name => 'mine_flow');
SET s.flow = 'ex5';
SELECT s_try($$SELECT * FROM autocdc.run_flow('mine_flow')$$);
SELECT s_catalog() AS after_errors;
-- a snapshot with row-level security (for a flow owner it applies to)
CREATE TABLE secret (userId int, city text);
ALTER TABLE secret ENABLE ROW LEVEL SECURITY;
CREATE ROLE snap_owner;
GRANT USAGE, CREATE ON SCHEMA snaps TO snap_owner;
GRANT SELECT ON secret TO snap_owner;
GRANT SELECT ON versions TO snap_owner;
GRANT INSERT ON calls TO snap_owner;
GRANT SELECT ON v1 TO snap_owner;
INSERT INTO versions VALUES ('rls', 'secret', 1);
SET ROLE snap_owner;
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', 'secret', '{userId}')$$);
SELECT autocdc.create_snapshot_flow('rls_target', NULL, '{userId}', source_function => 'next_snap(bigint)', name => 'rls');
SET s.flow = 'rls';
-- refused as the first snapshot (that creates the target) and as a later one
SELECT s_try($$SELECT * FROM autocdc.run_flow('rls')$$);
RESET ROLE;
UPDATE versions SET snapshot = 'v1', version = 0 WHERE flow = 'rls';
INSERT INTO versions VALUES ('rls', 'secret', 1);
SET ROLE snap_owner;
SELECT s_try($$SELECT * FROM autocdc.run_flow('rls')$$);
SELECT to_regclass('rls_target') AS nothing_created;
-- the owner runs what it may read only; its version function needs EXECUTE
RESET ROLE;
REVOKE EXECUTE ON FUNCTION f_one(int) FROM PUBLIC;
SET ROLE snap_owner;
SELECT s_try($$SELECT autocdc.create_snapshot_flow('e1', NULL, '{k}', source_function => 'f_one(int)')$$);
SELECT s_try($$SELECT * FROM autocdc.run_flow('ex5')$$);
RESET ROLE;
SELECT autocdc.drop_flow('rls');

-- keys named in another order than the table's columns, of different
-- types: a later run gathers the changed keys in the flow's key order
CREATE TABLE s_revkeys (a int, b text, v text);
INSERT INTO s_revkeys VALUES (1, 'x', 'one'), (2, 'y', 'two');
SELECT autocdc.create_snapshot_flow('s_revkeys_hist', 's_revkeys', '{b,a}', stored_as_scd_type => '2');
SELECT * FROM autocdc.run_flow('s_revkeys_hist');
UPDATE s_revkeys SET v = 'uno' WHERE a = 1;
DELETE FROM s_revkeys WHERE a = 2;
INSERT INTO s_revkeys VALUES (3, 'z', 'three');
SELECT * FROM autocdc.run_flow('s_revkeys_hist');
SELECT a, b, v, __end_at IS NULL AS current FROM s_revkeys_hist ORDER BY a, __start_at;
SELECT autocdc.drop_flow('s_revkeys_hist', drop_target => true);
DROP TABLE s_revkeys;

-- a snapshot flow has no source events: skip_events refuses it
SELECT s_try($$SELECT autocdc.skip_events('ex7', '0/1')$$);

-- drop_flow: a flow whose target does not exist yet, and one with a target
SELECT autocdc.create_snapshot_flow('never', NULL, '{k}', source_function => 'f_one(int)');
SELECT autocdc.drop_flow('never');
SELECT autocdc.drop_flow('mine_flow');
SELECT autocdc.drop_flow('users_scd2', drop_target => true);
SELECT to_regclass('users_scd2') AS dropped, s_catalog();
-- DROP TABLE of a table source is refused while the flow exists; the
-- snapshots a version function returns are not the flow's to protect
SELECT s_try($$DROP TABLE users$$);
DROP TABLE t7v1;
SET s.flow = 'ex7';
SELECT * FROM autocdc.run_flow('ex7');

DROP OWNED BY snap_owner;
DROP ROLE snap_owner;
RESET search_path;
