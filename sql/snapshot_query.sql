-- snapshot flows from queries (semantics §6, source_query and
-- version_query): a plain query read whole at every run, a version query
-- whose loop applies every available version in order, once, SCD 2, the
-- statement form, the owner's rights, and every error.
--
-- q_try(sql) runs a statement and shows "SQLSTATE: message" and the HINT;
-- 'ok' when it succeeds.
CREATE FUNCTION q_try(sql text) RETURNS text LANGUAGE plpgsql AS $f$
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
CREATE SCHEMA qs;
SET search_path = qs, public;

-- a plain query: read whole at every run, versioned by the run's time; the
-- target is created at once from the query's columns
CREATE TABLE people (id int, name text, city text, active boolean);
INSERT INTO people VALUES (1, 'Ann', 'Oslo', true), (2, 'Bob', 'Rome', true), (3, 'Cy', 'Kyiv', false);
SELECT autocdc.create_snapshot_flow('active_people', keys => '{id}',
	source_query => 'SELECT id, upper(name) AS name, city FROM people WHERE active');
SELECT attname, format_type(atttypid, atttypmod), attnotnull
  FROM pg_attribute WHERE attrelid = 'active_people'::regclass AND attnum > 0
  ORDER BY attnum;
SELECT indexrelid::regclass, indisprimary FROM pg_index
 WHERE indrelid = 'active_people'::regclass;
SELECT source, kind, target FROM autocdc.flows WHERE name = 'active_people';
-- stored with every name qualified, as views are
SELECT source_query, version_query, version_type FROM autocdc.flow WHERE name = 'active_people';
SELECT * FROM autocdc.run_flow('active_people');
SELECT * FROM active_people ORDER BY id;
UPDATE people SET city = 'Paris' WHERE id = 2;
UPDATE people SET active = true WHERE id = 3;
UPDATE people SET active = false WHERE id = 1;
SELECT * FROM autocdc.run_flow('active_people');
SELECT * FROM active_people ORDER BY id;
-- a second run in the same transaction applies nothing (same version)
BEGIN;
UPDATE people SET city = 'Lima' WHERE id = 2;
SELECT * FROM autocdc.run_flow('active_people');
SELECT * FROM autocdc.run_flow('active_people');
COMMIT;
SELECT * FROM active_people ORDER BY id;
-- full_refresh reads it again
SELECT * FROM autocdc.full_refresh('active_people');
SELECT * FROM active_people ORDER BY id;

-- a version query: every available version in one run, in order; the
-- snapshot query reads the version it chose
CREATE TABLE snaps (version bigint, id int, v text);
INSERT INTO snaps VALUES (1, 1, 'a'), (1, 2, 'b'),
	(2, 1, 'a2'), (2, 2, 'b'), (2, 3, 'c'),
	(3, 2, 'b3'), (3, 3, 'c');
SELECT autocdc.create_snapshot_flow('versioned', keys => '{id}',
	source_query => 'SELECT id, v FROM snaps WHERE version = current_snapshot_version()',
	version_query => 'SELECT version FROM snaps WHERE last_snapshot_version() IS NULL OR version > last_snapshot_version() ORDER BY version LIMIT 1');
SELECT source FROM autocdc.flows WHERE name = 'versioned';
SELECT source_query, version_query, version_type FROM autocdc.flow WHERE name = 'versioned';
CREATE TABLE versioned_log (id int, v text);
SELECT * FROM autocdc.run_flow('versioned');
SELECT * FROM versioned ORDER BY id;
SELECT snapshot_version FROM autocdc.flow WHERE name = 'versioned';
-- zero rows: the run ends and applies nothing
SELECT * FROM autocdc.run_flow('versioned');
INSERT INTO snaps VALUES (5, 1, 'a5');
SELECT * FROM autocdc.run_flow('versioned');
SELECT * FROM versioned ORDER BY id;
-- full_refresh applies every version again from the first
SELECT * FROM autocdc.full_refresh('versioned');
SELECT * FROM versioned ORDER BY id;
SELECT snapshot_version FROM autocdc.flow WHERE name = 'versioned';

-- both functions in FROM, with an alias and with a column name (the
-- version's type is the version query's column's: where that is the
-- function's own, in FROM, a cast says it)
CREATE TABLE snaps2 (ver date, id int, v text);
INSERT INTO snaps2 VALUES ('2024-01-01', 1, 'x'), ('2024-02-01', 1, 'y');
SELECT autocdc.create_snapshot_flow('versioned_from', keys => '{id}',
	source_query => 'SELECT s.id, s.v, c.ver AS seen FROM snaps2 s, autocdc.current_snapshot_version() c(ver) WHERE s.ver = c.ver',
	version_query => 'SELECT min(s.ver) FROM snaps2 s, last_snapshot_version() l WHERE s.ver > coalesce(l::date, ''-infinity'') HAVING min(s.ver) IS NOT NULL');
SELECT * FROM autocdc.run_flow('versioned_from');
SELECT * FROM versioned_from ORDER BY id;
SELECT version_type FROM autocdc.flow WHERE name = 'versioned_from';

-- SCD 2 target from a version query: the versions become the periods
SELECT autocdc.create_snapshot_flow('versioned_hist', keys => '{id}', stored_as_scd_type => '2',
	source_query => 'SELECT id, v FROM snaps WHERE version = current_snapshot_version()',
	version_query => 'SELECT version FROM snaps WHERE version > coalesce(last_snapshot_version(), 0) ORDER BY version LIMIT 1');
SELECT * FROM autocdc.run_flow('versioned_hist');
SELECT * FROM versioned_hist ORDER BY id, __start_at;

-- once: a plain query's one snapshot; a version query's every version
CREATE TABLE once_snaps (version int, id int, v text);
INSERT INTO once_snaps VALUES (1, 1, 'a'), (2, 1, 'b');
SELECT autocdc.create_snapshot_flow('once_plain', keys => '{id}', once => true,
	source_query => 'SELECT id, v FROM once_snaps WHERE version = 1');
SELECT autocdc.create_snapshot_flow('once_versioned', keys => '{id}', once => true,
	source_query => 'SELECT id, v FROM once_snaps WHERE version = current_snapshot_version()',
	version_query => 'SELECT version FROM once_snaps WHERE version > coalesce(last_snapshot_version(), 0) ORDER BY version LIMIT 1');
SELECT * FROM autocdc.run_flow('once_plain');
SELECT * FROM autocdc.run_flow('once_versioned');
UPDATE once_snaps SET v = 'changed';
INSERT INTO once_snaps VALUES (3, 1, 'c');
SELECT * FROM autocdc.run_flow('once_plain');
SELECT * FROM autocdc.run_flow('once_versioned');
SELECT * FROM once_plain;
SELECT * FROM once_versioned;
SELECT snapshot_version FROM autocdc.flow WHERE name = 'once_versioned';

-- the statement form, beside the function form
DO LANGUAGE autocdc $$
CREATE FLOW stmt_plain AS AUTO CDC INTO stmt_plain
  FROM SNAPSHOT (SELECT id, name FROM people WHERE active) KEYS (id);
CREATE FLOW stmt_versioned AS AUTO CDC ONCE INTO stmt_versioned
  FROM SNAPSHOT (SELECT id, v FROM snaps WHERE version = current_snapshot_version())
  WITH VERSION (SELECT version FROM snaps WHERE version > coalesce(last_snapshot_version(), 0)
                ORDER BY version LIMIT 1)
  KEYS (id) STORED AS SCD TYPE 2
$$;
SELECT name, source FROM autocdc.flows WHERE name LIKE 'stmt_%' ORDER BY name;
SELECT * FROM autocdc.run_flow('stmt_plain');
SELECT * FROM autocdc.run_flow('stmt_versioned');
SELECT * FROM stmt_plain ORDER BY id;
SELECT id, v, __start_at, __end_at FROM stmt_versioned ORDER BY id, __start_at;
SELECT q_try($q$DO LANGUAGE autocdc $s$ CREATE FLOW f AS AUTO CDC INTO t FROM SNAPSHOT (SELEC 1) KEYS (id) $s$$q$);
SELECT q_try($q$DO LANGUAGE autocdc $s$ CREATE FLOW f AS AUTO CDC INTO t FROM SNAPSHOT (SELECT 1 KEYS (id) $s$$q$);
SELECT q_try($q$DO LANGUAGE autocdc $s$ CREATE FLOW f AS AUTO CDC INTO t FROM SNAPSHOT (SELECT 1 AS id) WITH VERSION SELECT 1 KEYS (id) $s$$q$);

-- errors at run time, each naming the flow (nothing applied)
CREATE TABLE bad_versions (version bigint);
SELECT autocdc.create_snapshot_flow('bad_vq', keys => '{id}',
	source_query => 'SELECT id, v FROM snaps WHERE version = current_snapshot_version()',
	version_query => 'SELECT version FROM bad_versions WHERE version IS NULL OR version > coalesce(last_snapshot_version(), -1)');
INSERT INTO bad_versions VALUES (1), (2);
SELECT q_try($$SELECT * FROM autocdc.run_flow('bad_vq')$$);
DELETE FROM bad_versions;
INSERT INTO bad_versions VALUES (NULL);
SELECT q_try($$SELECT * FROM autocdc.run_flow('bad_vq')$$);
DROP TABLE bad_versions;
CREATE TABLE bad_versions (version bigint);
SELECT autocdc.create_snapshot_flow('bad_vq2', keys => '{id}',
	source_query => 'SELECT id, v FROM snaps WHERE version = current_snapshot_version()',
	version_query => 'SELECT max(version) FROM bad_versions HAVING max(version) IS NOT NULL');
INSERT INTO bad_versions VALUES (2);
-- the same version again (the loop asks after applying 2): not greater
-- than the last applied one; the run fails whole
SELECT q_try($$SELECT * FROM autocdc.run_flow('bad_vq2')$$);
SELECT count(*), (SELECT snapshot_version FROM autocdc.flow WHERE name = 'bad_vq2') FROM bad_vq2;
-- a version column retyped since the flow was created
DELETE FROM bad_versions;
ALTER TABLE bad_versions ALTER COLUMN version TYPE text;
SELECT q_try($$SELECT * FROM autocdc.run_flow('bad_vq2')$$);
SELECT name, state FROM autocdc.flows WHERE name LIKE 'bad_vq%' ORDER BY name;
-- a duplicate key in a query's snapshot
SELECT autocdc.create_snapshot_flow('dup_q', keys => '{id}',
	source_query => 'SELECT 1 AS id UNION ALL SELECT 1');
SELECT q_try($$SELECT * FROM autocdc.run_flow('dup_q')$$);
-- a query that calls a writing function fails: the queries run read-only
CREATE TABLE written (x int);
CREATE FUNCTION writes() RETURNS int LANGUAGE sql AS 'INSERT INTO qs.written VALUES (1) RETURNING x';
SELECT autocdc.create_snapshot_flow('writer_q', keys => '{id}',
	source_query => 'SELECT qs.writes() AS id');
SELECT q_try($$SELECT * FROM autocdc.run_flow('writer_q')$$);
SELECT count(*) FROM written;

-- errors at creation (nothing created)
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', keys => '{id}')$$);
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', 'people', '{id}', source_query => 'SELECT 1 AS id')$$);
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', 'people', '{id}', version_query => 'SELECT 1')$$);
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', keys => '{id}', source_query => 'DELETE FROM people RETURNING id')$$);
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', keys => '{id}', source_query => 'SELECT id FROM people FOR UPDATE')$$);
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', keys => '{id}', source_query => 'WITH d AS (DELETE FROM people RETURNING id) SELECT id FROM d')$$);
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', keys => '{id}', source_query => 'SELECT id INTO new_table FROM people')$$);
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', keys => '{id}', source_query => 'SELECT 1 AS id; SELECT 2 AS id')$$);
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', keys => '{id}', source_query => 'SELECT id, v FROM snaps', version_query => 'SELECT version, id FROM snaps')$$);
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', keys => '{id}', source_query => 'SELECT id, v FROM snaps', version_query => 'SELECT point(1, 1) AS v')$$);
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', keys => '{id}', source_query => 'SELECT id, v FROM snaps', version_query => 'UPDATE snaps SET v = v RETURNING version')$$);
-- each function only where it belongs
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', keys => '{id}', source_query => 'SELECT id FROM people WHERE id > last_snapshot_version()', version_query => 'SELECT 1')$$);
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', keys => '{id}', source_query => 'SELECT id, v FROM snaps', version_query => 'SELECT current_snapshot_version()')$$);
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', keys => '{id}', source_query => 'SELECT id FROM people WHERE id > current_snapshot_version()')$$);
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', keys => '{id}', source_query => 'SELECT id, v FROM snaps', version_query => 'SELECT last_snapshot_version(1)')$$);
SELECT q_try($$SELECT autocdc.last_snapshot_version()$$);
SELECT q_try($$SELECT v FROM autocdc.current_snapshot_version() v$$);
-- a temporary table (the worker could not read it)
CREATE TEMP TABLE temp_people (id int);
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', keys => '{id}', source_query => 'SELECT id FROM people WHERE id IN (SELECT id FROM temp_people)')$$);
DROP TABLE temp_people;
-- a key the query does not return
SELECT q_try($$SELECT autocdc.create_snapshot_flow('e1', keys => '{nope}', source_query => 'SELECT id FROM people')$$);
SELECT count(*) FROM autocdc.flow WHERE name = 'e1';
SELECT to_regclass('qs.e1');

-- the queries run as the flow's owner: what the owner may not read fails
CREATE ROLE q_owner;
GRANT USAGE, CREATE ON SCHEMA qs TO q_owner;
CREATE TABLE secret (id int, v text);
INSERT INTO secret VALUES (1, 'hidden');
CREATE TABLE open_data (id int, v text);
INSERT INTO open_data VALUES (1, 'open');
GRANT SELECT ON open_data TO q_owner;
SET ROLE q_owner;
SELECT autocdc.create_snapshot_flow('owned_q', keys => '{id}', source_query => 'SELECT id, v FROM open_data');
SELECT autocdc.create_snapshot_flow('owned_secret', keys => '{id}', source_query => 'SELECT id, v FROM secret');
RESET ROLE;
-- run by a superuser, still as the owner
SELECT * FROM autocdc.run_flow('owned_q');
SELECT * FROM owned_q;
SELECT q_try($$SELECT * FROM autocdc.run_flow('owned_secret')$$);
SELECT autocdc.drop_flow('owned_q', drop_target => true);
SELECT autocdc.drop_flow('owned_secret', drop_target => true);
REVOKE ALL ON SCHEMA qs FROM q_owner;
REVOKE ALL ON open_data FROM q_owner;
DROP ROLE q_owner;

-- clean up
SELECT autocdc.drop_flow(name, drop_target => true) FROM autocdc.flow
 WHERE source_query IS NOT NULL ORDER BY name;
RESET search_path;
DROP SCHEMA qs CASCADE;
DROP FUNCTION q_try(text);

-- the example of docs/semantics.md §6, as written there
CREATE TABLE price_loads (load_id bigint, sku text, price numeric);
INSERT INTO price_loads VALUES (1, 'a', 10), (1, 'b', 20), (2, 'a', 11);
SELECT autocdc.create_snapshot_flow('prices', keys => '{sku}', continuous => false,
  source_query => 'SELECT sku, price FROM price_loads WHERE load_id = current_snapshot_version()',
  version_query => 'SELECT load_id FROM price_loads
                     WHERE load_id > coalesce(last_snapshot_version(), 0)
                     ORDER BY load_id LIMIT 1');
SELECT * FROM autocdc.run_flow('prices');    -- load 1, then load 2: prices = {(a, 11)}
SELECT * FROM prices;
SELECT autocdc.drop_flow('prices', drop_target => true);
DROP TABLE price_loads;
