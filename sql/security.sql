-- security: what an unprivileged role can reach.  Every function of the
-- extension called with NULLs and with wrong values raises an error (or
-- does its job), never crashes the server; internal functions PUBLIC may not
-- execute are refused.
CREATE ROLE regress_s_nobody;
CREATE TABLE fuzz_result (fn text, val text, outcome text);
GRANT INSERT ON fuzz_result TO regress_s_nobody;
CREATE VIEW ext_functions AS
SELECT p.oid, p.oid::regprocedure::text AS fn
  FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
 WHERE d.deptype = 'e' AND d.refclassid = 'pg_extension'::regclass
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'autocdc');
GRANT SELECT ON ext_functions TO regress_s_nobody;
-- which functions everyone may execute
SELECT fn, has_function_privilege('regress_s_nobody', oid, 'EXECUTE') AS public_execute
  FROM ext_functions ORDER BY fn;
SET ROLE regress_s_nobody;
DO $$
DECLARE
	f record;
	val text;
	args text;
	t text;
	i int;
	outcome text;
	coldefs text;
BEGIN
	FOR f IN SELECT p.oid, p.proname, n.nspname, (SELECT array_agg(u.t::regtype ORDER BY u.o) FROM unnest(p.proargtypes) WITH ORDINALITY u(t, o)) AS types,
					p.prorettype = 'record'::regtype AND p.proallargtypes IS NULL AS needs_coldefs
			   FROM ext_functions e JOIN pg_proc p ON p.oid = e.oid
			   JOIN pg_namespace n ON n.oid = p.pronamespace
			  ORDER BY e.fn
	LOOP
		IF 'internal'::regtype = ANY (f.types) THEN
			INSERT INTO fuzz_result VALUES (f.oid::regprocedure, '-', 'not callable from SQL (internal)');
			CONTINUE;
		END IF;
		FOREACH val IN ARRAY ARRAY['nulls', 'wrong', 'odd'] LOOP
			args := '';
			FOR i IN 1 .. coalesce(array_length(f.types, 1), 0) LOOP
				t := f.types[i]::text;
				args := args || CASE WHEN i > 1 THEN ', ' ELSE '' END || CASE
					WHEN val = 'nulls' AND t = 'anyelement' THEN 'NULL::int'
					WHEN val = 'nulls' THEN 'NULL::' || t
					WHEN t = 'text' AND val = 'wrong' THEN quote_literal('')
					WHEN t = 'text' THEN quote_literal(repeat(U&'\00e9"x', 400))
					WHEN t = 'text[]' AND val = 'wrong' THEN quote_literal('{{a,b},{c,d}}') || '::text[]'
					WHEN t = 'text[]' THEN quote_literal('{NULL}') || '::text[]'
					WHEN t = 'boolean' THEN (val = 'wrong')::text
					WHEN t = 'bigint' AND val = 'wrong' THEN '-1::bigint'
					WHEN t = 'bigint' THEN '9223372036854775807::bigint'
					WHEN t = 'interval' AND val = 'wrong' THEN quote_literal('-1 day') || '::interval'
					WHEN t = 'interval' THEN quote_literal('1000000 years') || '::interval'
					WHEN t = 'pg_lsn' AND val = 'wrong' THEN quote_literal('FFFFFFFF/FFFFFFFF') || '::pg_lsn'
					WHEN t = 'pg_lsn' THEN quote_literal('0/0') || '::pg_lsn'
					WHEN t = 'oid' AND val = 'wrong' THEN '0::oid'
					WHEN t = 'oid' THEN '''pg_class''::regclass::oid'
					WHEN t = 'anyelement' AND val = 'wrong' THEN 'NULL::pg_class'
					WHEN t = 'anyelement' THEN '42'
					ELSE 'NULL::' || t END;
			END LOOP;
			coldefs := CASE WHEN f.needs_coldefs THEN ' AS x(a int, b text)' ELSE '' END;
			BEGIN
				EXECUTE format('SELECT * FROM %I.%I(%s)%s', f.nspname, f.proname, args, coldefs);
				outcome := 'ok';
			EXCEPTION WHEN OTHERS THEN
				outcome := SQLSTATE || ' ' || left(SQLERRM, 60);
			END;
			INSERT INTO fuzz_result VALUES (f.oid::regprocedure, val, outcome);
		END LOOP;
	END LOOP;
END;
$$;
RESET ROLE;
SELECT fn, val, outcome FROM fuzz_result ORDER BY fn, val;
-- the server did not restart (a crash would have ended this session)
SELECT count(*) > 0 AS still_connected FROM pg_stat_activity WHERE pid = pg_backend_pid();
DROP TABLE fuzz_result;

-- a run holds what it uses: code it evaluates cannot drop, change or run
-- flows, nor alter the tables the run uses (an error, never a crash)
CREATE ROLE regress_s_alice;
CREATE ROLE regress_s_bob;
CREATE SCHEMA s_alice AUTHORIZATION regress_s_alice;
CREATE SCHEMA s_bob AUTHORIZATION regress_s_bob;
SET ROLE regress_s_alice;
CREATE TABLE s_alice.feed (id int, v text, seq int, op text);
CREATE TABLE s_alice.todo (what text);
-- the delete condition runs whatever s_alice.todo says
CREATE FUNCTION s_alice.evil(op text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	w text;
BEGIN
	FOR w IN SELECT what FROM s_alice.todo LOOP
		EXECUTE w;
	END LOOP;
	RETURN op = 'D';
END $$;
SELECT autocdc.create_flow('s_alice.tgt', 's_alice.feed', '{id}', 'seq',
						   apply_as_deletes => 's_alice.evil(op)', continuous => false);
INSERT INTO s_alice.feed VALUES (1, 'a', 1, 'U');
SELECT * FROM autocdc.run_flow('tgt');
INSERT INTO s_alice.feed VALUES (2, 'b', 2, 'U');
INSERT INTO s_alice.todo VALUES ($$SELECT autocdc.drop_flow('tgt')$$);
SELECT * FROM autocdc.run_flow('tgt');
TRUNCATE s_alice.todo;
INSERT INTO s_alice.todo VALUES ($$SELECT autocdc.drop_flow('tgt', true)$$);
SELECT * FROM autocdc.run_flow('tgt');
TRUNCATE s_alice.todo;
INSERT INTO s_alice.todo VALUES ($$SELECT * FROM autocdc.run_flow('tgt')$$);
SELECT * FROM autocdc.run_flow('tgt');
TRUNCATE s_alice.todo;
INSERT INTO s_alice.todo VALUES ($$SELECT autocdc.pause_flow('tgt')$$);
SELECT * FROM autocdc.run_flow('tgt');
TRUNCATE s_alice.todo;
INSERT INTO s_alice.todo VALUES ($$ALTER TABLE s_alice.tgt DROP COLUMN v$$);
SELECT * FROM autocdc.run_flow('tgt');
TRUNCATE s_alice.todo;
INSERT INTO s_alice.todo VALUES ($$DO LANGUAGE autocdc 'DROP FLOW tgt'$$);
SELECT * FROM autocdc.run_flow('tgt');
TRUNCATE s_alice.todo;
-- nothing of it was applied; the flow is intact and goes on
SELECT * FROM s_alice.tgt ORDER BY id;
SELECT * FROM autocdc.run_flow('tgt');
SELECT * FROM s_alice.tgt ORDER BY id;
-- after the run, in the same transaction, dropping is allowed
BEGIN;
SELECT num_events FROM autocdc.run_flow('tgt');
SELECT autocdc.drop_flow('tgt');
ROLLBACK;

-- a user column with NOT NULL DEFAULT on a target gets its default, runs go on
ALTER TABLE s_alice.tgt ADD COLUMN note text NOT NULL DEFAULT 'n/a';
ALTER TABLE s_alice.tgt ADD COLUMN shout text GENERATED ALWAYS AS (upper(v)) STORED;
INSERT INTO s_alice.feed VALUES (3, 'c', 3, 'U'), (1, 'a2', 4, 'U');
SELECT * FROM autocdc.run_flow('tgt');
SELECT * FROM s_alice.tgt ORDER BY id;

-- the error kept in shared memory: cut at a character boundary, and given to
-- the flow it belongs to (by id), not to one whose name starts alike
SELECT autocdc.create_flow('s_alice.t_long', 's_alice.feed', '{v}', 'NULLIF(seq, 5)',
						   name => repeat('a', 127) || 'xyz', continuous => false);
RESET ROLE;
SET ROLE regress_s_bob;
CREATE TABLE s_bob.feed (id int, seq int);
SELECT autocdc.create_flow('s_bob.t', 's_bob.feed', '{id}', 'seq',
						   name => repeat('a', 127), continuous => false);
RESET ROLE;
SET ROLE regress_s_alice;
SELECT * FROM autocdc.run_flow(repeat('a', 127) || 'xyz');
INSERT INTO s_alice.feed VALUES (4, repeat(U&'\00e9', 3000), 5, 'U');
DO $$
BEGIN
	PERFORM * FROM autocdc.run_flow(repeat('a', 127) || 'xyz');
EXCEPTION WHEN null_value_not_allowed THEN
	RAISE NOTICE 'the run failed: %', left(SQLERRM, 20);
END $$;
SELECT left(name, 5) AS name, state, octet_length(last_error) < 2048 AS cut, length(last_error) > 1000 AS long,
	   left(last_error, 30) AS starts, right(last_error, 3) = repeat(U&'\00e9', 3) AS ends_whole
  FROM autocdc.flows WHERE name LIKE 'aaaa%' ORDER BY name;
RESET ROLE;
SET ROLE regress_s_bob;
SELECT length(name) AS name_length, state, last_error FROM autocdc.flows;
SELECT count(*) AS runs_bob_sees FROM autocdc.flow_runs WHERE status = 'error';
SELECT num_events FROM autocdc.run_flow(repeat('a', 127));
RESET ROLE;
-- written down (by the next run), the error stays valid text
SELECT count(*) AS errors_logged, bool_and(length(error) > 1000) AS long FROM autocdc.flow_run_log WHERE status = 'error' AND flow LIKE 'aaaa%';

-- nothing is skipped silently
SET ROLE regress_s_alice;
-- an unlogged source (or partition of one) is refused
ALTER TABLE s_alice.feed SET UNLOGGED;
CREATE TABLE s_alice.pfeed (id int, seq int) PARTITION BY RANGE (id);
CREATE TABLE s_alice.pfeed_1 PARTITION OF s_alice.pfeed FOR VALUES FROM (0) TO (100);
CREATE UNLOGGED TABLE s_alice.pfeed_2 PARTITION OF s_alice.pfeed FOR VALUES FROM (100) TO (200);
SELECT autocdc.create_flow('s_alice.pt', 's_alice.pfeed', '{id}', 'seq');
DROP TABLE s_alice.pfeed_2;
SELECT autocdc.create_flow('s_alice.pt', 's_alice.pfeed', '{id}', 'seq', continuous => false);
ALTER TABLE s_alice.pfeed_1 SET UNLOGGED;
CREATE UNLOGGED TABLE s_alice.pfeed_2 PARTITION OF s_alice.pfeed FOR VALUES FROM (100) TO (200);
CREATE UNLOGGED TABLE s_alice.pfeed_3 (id int, seq int);
ALTER TABLE s_alice.pfeed ATTACH PARTITION s_alice.pfeed_3 FOR VALUES FROM (200) TO (300);
ALTER TABLE s_alice.pfeed_3 SET LOGGED;
ALTER TABLE s_alice.pfeed ATTACH PARTITION s_alice.pfeed_3 FOR VALUES FROM (200) TO (300);
-- a table no flow reads may be made unlogged
CREATE TABLE s_alice.other (id int);
ALTER TABLE s_alice.other SET UNLOGGED;
-- row-level security enabled after the flow was created stops it
INSERT INTO s_alice.pfeed VALUES (1, 1), (250, 1);
ALTER TABLE s_alice.pfeed ENABLE ROW LEVEL SECURITY;
ALTER TABLE s_alice.pfeed FORCE ROW LEVEL SECURITY;
SELECT * FROM autocdc.run_flow('pt');
ALTER TABLE s_alice.pfeed NO FORCE ROW LEVEL SECURITY;
SELECT num_events FROM autocdc.run_flow('pt');
-- a retyped column the sequence reads stops the flow
CREATE TABLE s_alice.nfeed (id int, n bigint, payload int);
SELECT autocdc.create_flow('s_alice.nt', 's_alice.nfeed', '{id}', 'n', except_column_list => '{n}',
						   continuous => false);
SELECT autocdc.create_flow('s_alice.nt2', 's_alice.nfeed', '{id}', 'ROW(n, payload)',
						   except_column_list => '{n}', continuous => false, stored_as_scd_type => '2');
INSERT INTO s_alice.nfeed VALUES (1, 1, 10);
SELECT num_events FROM autocdc.run_flow('nt');
SELECT num_events FROM autocdc.run_flow('nt2');
ALTER TABLE s_alice.nfeed ALTER COLUMN n TYPE numeric;
INSERT INTO s_alice.nfeed VALUES (1, 1.7, 11), (1, 1.2, 12);
SELECT * FROM autocdc.run_flow('nt');
SELECT * FROM autocdc.run_flow('nt2');
SELECT * FROM s_alice.nt;
-- skip_events past the end of the WAL is refused
DO $$
BEGIN
	PERFORM autocdc.skip_events('nt', 'FFFFFFFF/FFFFFFFF');
EXCEPTION WHEN invalid_parameter_value THEN
	RAISE NOTICE '%', regexp_replace(SQLERRM, 'ends at [0-9A-F]+/[0-9A-F]+', 'ends at (position)');
END $$;
RESET ROLE;

-- bad arguments
SET ROLE regress_s_alice;
SELECT autocdc.create_flow('s_alice.k2', 's_alice.feed', '{{id},{v}}', 'seq');
SELECT autocdc.create_flow('s_alice.k2', 's_alice.feed', '{id}', 'seq', tombstone_retention => '-1 day');
SELECT autocdc.create_flow('s_alice.k2', 's_alice.feed', '{id}', 'seq', tombstone_retention => '1 mon -40 days');
SELECT autocdc.create_flow('s_alice.k2', 'pg_catalog.pg_class', '{oid}', 'relpages');
SELECT autocdc.create_flow('s_alice.k2', 'autocdc.flow', '{name}', 'id');
SELECT autocdc.create_flow('autocdc_state.k2', 's_alice.feed', '{id}', 'seq');
SELECT autocdc.create_snapshot_flow('s_alice.k3', 's_alice.feed', '{{id}}');
RESET ROLE;

-- roles: DROP ROLE of an owner of flows fails; REASSIGN OWNED moves them;
-- DROP OWNED drops them (and then the targets)
DROP ROLE regress_s_alice;
CREATE ROLE regress_s_carol;
REASSIGN OWNED BY regress_s_alice TO regress_s_carol;
SELECT name, owner FROM autocdc.flows WHERE owner::text LIKE 'regress_s_%' AND name NOT LIKE 'aaaa%' ORDER BY name;
SELECT relname, relowner::regrole FROM pg_class WHERE relname IN ('tgt', 'pt', 'nt') ORDER BY 1;
DROP ROLE regress_s_alice;
SET ROLE regress_s_carol;
SELECT num_events FROM autocdc.run_flow('tgt');
RESET ROLE;
BEGIN;
DROP ROLE regress_s_carol;
ROLLBACK;
DROP OWNED BY regress_s_carol;
SELECT count(*) AS carol_flows FROM autocdc.flow WHERE owner::text = 'regress_s_carol';
SELECT count(*) AS carol_tables FROM pg_class WHERE relowner = 'regress_s_carol'::regrole;
DROP ROLE regress_s_carol;
DROP OWNED BY regress_s_bob;
DROP VIEW ext_functions;
DROP ROLE regress_s_bob, regress_s_nobody;
SELECT count(*) AS flows_left FROM autocdc.flow WHERE owner::text LIKE 'regress_s_%' OR owner::oid NOT IN (SELECT oid FROM pg_roles);
