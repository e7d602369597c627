--
-- examples: the worked examples 1-4 of semantics §8, each applied three ways:
--   *_batch : the flow's first (empty) run happens before the events; then all
--             events arrive and ONE run applies them (read from the WAL);
--   *_step  : the flow's first (empty) run happens before the events; then one
--             event arrives per run (insert one row, run_flow, repeat);
--   *_snap  : the flow is created after all events are in the feed; its first
--             run reads them under one snapshot (semantics §2 "First read").
-- §4: the result is the fold of all events in (sequence, arrival) order,
-- however the events were split into runs, so all three must equal docs/semantics.md §8.
-- continuous => false keeps the background worker away, so every run below is
-- ours and its metrics are deterministic.  Every statement is autocommit (the
-- first run_flow in the database creates the replication slot).
--
\pset null '(null)'

-- the change feed of semantics §8 (userId folds to userid, sequenceNum to sequencenum)
CREATE TABLE users_cdf (userId int, name text, city text, operation text, sequenceNum int);
-- example 2: the same events plus one TRUNCATE row
CREATE TABLE users_cdf_trunc (LIKE users_cdf);

-- the flow options of semantics §8: keys userId, sequence sequenceNum, deletes
-- operation = 'DELETE', truncates operation = 'TRUNCATE',
-- columns * EXCEPT (operation, sequenceNum); scd '1' or '2'; example 4 also
-- TRACK HISTORY ON * EXCEPT (city)
CREATE FUNCTION ex_flow(target text, feed text, scd text, track_except text[] DEFAULT NULL)
RETURNS text LANGUAGE sql AS $f$
	SELECT autocdc.create_flow(target, feed, '{userId}',
		sequence_by => 'sequenceNum',
		apply_as_deletes => $$operation = 'DELETE'$$,
		apply_as_truncates => $$operation = 'TRUNCATE'$$,
		except_column_list => '{operation,sequenceNum}',
		stored_as_scd_type => scd,
		track_history_except_column_list => track_except,
		continuous => false)
$f$;

SELECT ex_flow('ex1_batch', 'users_cdf', '1');
SELECT ex_flow('ex1_step',  'users_cdf', '1');
SELECT ex_flow('ex2_batch', 'users_cdf_trunc', '1');
SELECT ex_flow('ex2_step',  'users_cdf_trunc', '1');
SELECT ex_flow('ex3_batch', 'users_cdf', '2');
SELECT ex_flow('ex3_step',  'users_cdf', '2');
SELECT ex_flow('ex4_batch', 'users_cdf', '2', '{city}');
SELECT ex_flow('ex4_step',  'users_cdf', '2', '{city}');

-- the targets: selected columns in source order, then the SCD 2 columns
SELECT attrelid::regclass AS target, attname, format_type(atttypid, atttypmod) AS type
  FROM pg_attribute
 WHERE attrelid IN ('ex1_batch'::regclass, 'ex3_batch'::regclass) AND attnum > 0 AND NOT attisdropped
 ORDER BY attrelid::regclass::text, attnum;

-- first runs, before any event: nothing to read
SELECT * FROM autocdc.run_flow('ex1_batch');
SELECT * FROM autocdc.run_flow('ex1_step');
SELECT * FROM autocdc.run_flow('ex2_batch');
SELECT * FROM autocdc.run_flow('ex2_step');
SELECT * FROM autocdc.run_flow('ex3_batch');
SELECT * FROM autocdc.run_flow('ex3_step');
SELECT * FROM autocdc.run_flow('ex4_batch');
SELECT * FROM autocdc.run_flow('ex4_step');

--
-- users_cdf: the eight events of semantics §8, in the table's order, one per run of
-- the *_step flows of examples 1, 3 and 4.  Expected metrics per step
-- (events, upserted, deleted):
--            ex1 (SCD 1)  ex3 (SCD 2)  ex4 (SCD 2, city untracked)
--   e1-e4    1,1,0        1,1,0        1,1,0      new keys
--   e5       1,0,1        1,1,0        1,1,0      123 deleted / its version closed at 6
--   e6       1,1,0        1,2,0        1,1,0      125 Guadalajara at 6
--   e7       1,0,0        1,2,0        1,0,0      125 Mexicali at 5 (late)
--   e8       1,0,0        1,2,0        1,1,0      123 Chihuahua at 5 (late, before the delete)
--
-- e1
INSERT INTO users_cdf VALUES (124, 'Raul', 'Oaxaca', 'INSERT', 1);
SELECT * FROM autocdc.run_flow('ex1_step');
SELECT * FROM autocdc.run_flow('ex3_step');
SELECT * FROM autocdc.run_flow('ex4_step');
-- e2
INSERT INTO users_cdf VALUES (123, 'Isabel', 'Monterrey', 'INSERT', 1);
SELECT * FROM autocdc.run_flow('ex1_step');
SELECT * FROM autocdc.run_flow('ex3_step');
SELECT * FROM autocdc.run_flow('ex4_step');
-- e3
INSERT INTO users_cdf VALUES (125, 'Mercedes', 'Tijuana', 'INSERT', 2);
SELECT * FROM autocdc.run_flow('ex1_step');
SELECT * FROM autocdc.run_flow('ex3_step');
SELECT * FROM autocdc.run_flow('ex4_step');
-- e4
INSERT INTO users_cdf VALUES (126, 'Lily', 'Cancun', 'INSERT', 2);
SELECT * FROM autocdc.run_flow('ex1_step');
SELECT * FROM autocdc.run_flow('ex3_step');
SELECT * FROM autocdc.run_flow('ex4_step');
-- e5
INSERT INTO users_cdf VALUES (123, NULL, NULL, 'DELETE', 6);
SELECT * FROM autocdc.run_flow('ex1_step');
SELECT * FROM autocdc.run_flow('ex3_step');
SELECT * FROM autocdc.run_flow('ex4_step');
-- e6
INSERT INTO users_cdf VALUES (125, 'Mercedes', 'Guadalajara', 'UPDATE', 6);
SELECT * FROM autocdc.run_flow('ex1_step');
SELECT * FROM autocdc.run_flow('ex3_step');
SELECT * FROM autocdc.run_flow('ex4_step');
-- e7
INSERT INTO users_cdf VALUES (125, 'Mercedes', 'Mexicali', 'UPDATE', 5);
SELECT * FROM autocdc.run_flow('ex1_step');
SELECT * FROM autocdc.run_flow('ex3_step');
SELECT * FROM autocdc.run_flow('ex4_step');
-- e8
INSERT INTO users_cdf VALUES (123, 'Isabel', 'Chihuahua', 'UPDATE', 5);
SELECT * FROM autocdc.run_flow('ex1_step');
SELECT * FROM autocdc.run_flow('ex3_step');
SELECT * FROM autocdc.run_flow('ex4_step');

-- the *_batch flows now read all eight events in one run
-- expected (events, upserted, deleted): ex1 8,3,0; ex3 8,7,0; ex4 8,4,0
SELECT * FROM autocdc.run_flow('ex1_batch');
SELECT * FROM autocdc.run_flow('ex3_batch');
SELECT * FROM autocdc.run_flow('ex4_batch');

--
-- users_cdf_trunc (example 2): the TRUNCATE row (null, null, null, TRUNCATE, 3)
-- arrives FIRST, then the eight events; one per run of ex2_step.  Keys first
-- seen after the truncate are still deleted at 3 (semantics §4 Truncates), so
-- e1-e4 (sequences 1, 2) are discarded on arrival.  Expected per step:
--   truncate 1,0,0; e1-e4 1,0,0; e5 1,0,0; e6 1,1,0; e7 1,0,0; e8 1,0,0
--
INSERT INTO users_cdf_trunc VALUES (NULL, NULL, NULL, 'TRUNCATE', 3);
SELECT * FROM autocdc.run_flow('ex2_step');
INSERT INTO users_cdf_trunc VALUES (124, 'Raul', 'Oaxaca', 'INSERT', 1);
SELECT * FROM autocdc.run_flow('ex2_step');
INSERT INTO users_cdf_trunc VALUES (123, 'Isabel', 'Monterrey', 'INSERT', 1);
SELECT * FROM autocdc.run_flow('ex2_step');
INSERT INTO users_cdf_trunc VALUES (125, 'Mercedes', 'Tijuana', 'INSERT', 2);
SELECT * FROM autocdc.run_flow('ex2_step');
INSERT INTO users_cdf_trunc VALUES (126, 'Lily', 'Cancun', 'INSERT', 2);
SELECT * FROM autocdc.run_flow('ex2_step');
INSERT INTO users_cdf_trunc VALUES (123, NULL, NULL, 'DELETE', 6);
SELECT * FROM autocdc.run_flow('ex2_step');
INSERT INTO users_cdf_trunc VALUES (125, 'Mercedes', 'Guadalajara', 'UPDATE', 6);
SELECT * FROM autocdc.run_flow('ex2_step');
INSERT INTO users_cdf_trunc VALUES (125, 'Mercedes', 'Mexicali', 'UPDATE', 5);
SELECT * FROM autocdc.run_flow('ex2_step');
INSERT INTO users_cdf_trunc VALUES (123, 'Isabel', 'Chihuahua', 'UPDATE', 5);
SELECT * FROM autocdc.run_flow('ex2_step');
-- all nine in one run: expected 9,1,0
SELECT * FROM autocdc.run_flow('ex2_batch');

-- the *_snap flows: created now, their first run reads the feed under a snapshot
-- expected: ex1 8,3,0; ex2 9,1,0; ex3 8,7,0; ex4 8,4,0
SELECT ex_flow('ex1_snap', 'users_cdf', '1');
SELECT ex_flow('ex2_snap', 'users_cdf_trunc', '1');
SELECT ex_flow('ex3_snap', 'users_cdf', '2');
SELECT ex_flow('ex4_snap', 'users_cdf', '2', '{city}');
SELECT * FROM autocdc.run_flow('ex1_snap');
SELECT * FROM autocdc.run_flow('ex2_snap');
SELECT * FROM autocdc.run_flow('ex3_snap');
SELECT * FROM autocdc.run_flow('ex4_snap');

--
-- Example 1, SCD 1. Expected: (124, Raul, Oaxaca), (125, Mercedes, Guadalajara),
-- (126, Lily, Cancun) -- 123 deleted at 6; Mexicali (5) discarded.
--
SELECT * FROM ex1_batch ORDER BY userid;
SELECT * FROM ex1_step ORDER BY userid;
SELECT * FROM ex1_snap ORDER BY userid;

--
-- Example 2, SCD 1 plus a truncate at 3. Expected: only (125, Mercedes, Guadalajara).
--
SELECT * FROM ex2_batch ORDER BY userid;
SELECT * FROM ex2_step ORDER BY userid;
SELECT * FROM ex2_snap ORDER BY userid;

--
-- Example 3, SCD 2. Expected (userid, name, city, __start_at, __end_at):
-- (123, Isabel, Monterrey, 1, 5), (123, Isabel, Chihuahua, 5, 6),
-- (124, Raul, Oaxaca, 1, null), (125, Mercedes, Tijuana, 2, 5),
-- (125, Mercedes, Mexicali, 5, 6), (125, Mercedes, Guadalajara, 6, null),
-- (126, Lily, Cancun, 2, null)
--
SELECT * FROM ex3_batch ORDER BY userid, __start_at;
SELECT * FROM ex3_step ORDER BY userid, __start_at;
SELECT * FROM ex3_snap ORDER BY userid, __start_at;

--
-- Example 4, SCD 2, TRACK HISTORY ON * EXCEPT (city). Expected:
-- (123, Isabel, Chihuahua, 1, 6), (124, Raul, Oaxaca, 1, null),
-- (125, Mercedes, Guadalajara, 2, null), (126, Lily, Cancun, 2, null)
--
SELECT * FROM ex4_batch ORDER BY userid, __start_at;
SELECT * FROM ex4_step ORDER BY userid, __start_at;
SELECT * FROM ex4_snap ORDER BY userid, __start_at;

-- the same comparisons as one self-checking query (every row must say ok)
CREATE TEMP TABLE ex_expected (example int, userid int, name text, city text, s int, e int);
INSERT INTO ex_expected VALUES
	(1, 124, 'Raul', 'Oaxaca', NULL, NULL), (1, 125, 'Mercedes', 'Guadalajara', NULL, NULL),
	(1, 126, 'Lily', 'Cancun', NULL, NULL),
	(2, 125, 'Mercedes', 'Guadalajara', NULL, NULL),
	(3, 123, 'Isabel', 'Monterrey', 1, 5), (3, 123, 'Isabel', 'Chihuahua', 5, 6),
	(3, 124, 'Raul', 'Oaxaca', 1, NULL), (3, 125, 'Mercedes', 'Tijuana', 2, 5),
	(3, 125, 'Mercedes', 'Mexicali', 5, 6), (3, 125, 'Mercedes', 'Guadalajara', 6, NULL),
	(3, 126, 'Lily', 'Cancun', 2, NULL),
	(4, 123, 'Isabel', 'Chihuahua', 1, 6), (4, 124, 'Raul', 'Oaxaca', 1, NULL),
	(4, 125, 'Mercedes', 'Guadalajara', 2, NULL), (4, 126, 'Lily', 'Cancun', 2, NULL);
CREATE TEMP VIEW ex_got AS
	SELECT 1 AS example, 'batch' AS way, userid, name, city, NULL::int AS s, NULL::int AS e FROM ex1_batch
	UNION ALL SELECT 1, 'step', *, NULL, NULL FROM ex1_step
	UNION ALL SELECT 1, 'snap', *, NULL, NULL FROM ex1_snap
	UNION ALL SELECT 2, 'batch', *, NULL, NULL FROM ex2_batch
	UNION ALL SELECT 2, 'step', *, NULL, NULL FROM ex2_step
	UNION ALL SELECT 2, 'snap', *, NULL, NULL FROM ex2_snap
	UNION ALL SELECT 3, 'batch', * FROM ex3_batch
	UNION ALL SELECT 3, 'step', * FROM ex3_step
	UNION ALL SELECT 3, 'snap', * FROM ex3_snap
	UNION ALL SELECT 4, 'batch', * FROM ex4_batch
	UNION ALL SELECT 4, 'step', * FROM ex4_step
	UNION ALL SELECT 4, 'snap', * FROM ex4_snap;
SELECT x.example, w.way,
       CASE WHEN NOT EXISTS (
              (SELECT userid, name, city, s, e FROM ex_expected WHERE example = x.example
               EXCEPT ALL
               SELECT userid, name, city, s, e FROM ex_got WHERE example = x.example AND way = w.way)
              UNION ALL
              (SELECT userid, name, city, s, e FROM ex_got WHERE example = x.example AND way = w.way
               EXCEPT ALL
               SELECT userid, name, city, s, e FROM ex_expected WHERE example = x.example))
            THEN 'ok' ELSE 'MISMATCH' END AS result
  FROM generate_series(1, 4) x(example), (VALUES ('batch'), ('step'), ('snap')) w(way)
 ORDER BY 1, 2;

-- totals in autocdc.flows are the sums of the runs above
SELECT name, state, num_events, num_upserted_rows, num_deleted_rows, num_skipped_events
  FROM autocdc.flows WHERE name LIKE 'ex%' ORDER BY name;

-- clean up: the flows, their targets and the feeds
DROP VIEW ex_got;
SELECT autocdc.drop_flow(name, true) FROM autocdc.flows WHERE name LIKE 'ex%' ORDER BY name;
SELECT count(*) AS flows_left FROM autocdc.flows;
DROP TABLE users_cdf, users_cdf_trunc;
DROP FUNCTION ex_flow(text, text, text, text[]);
