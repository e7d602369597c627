--
-- asof: autocdc.as_of(NULL::target, valid_at [, known_at]) and
-- autocdc.as_of_key(NULL::target, key, valid_at [, known_at]): the rows r of
-- an SCD 2 or bitemporal target with r.__start_at <= valid_at AND
-- (r.__end_at IS NULL OR valid_at < r.__end_at), and for bitemporal targets
-- believed at known_at (omitted: the current belief).  Each result is
-- compared with the same predicate written as a plain query.
--
\pset null '(null)'
CREATE TABLE ao_feed (id int, v text, seq int, op text);
SELECT autocdc.create_flow('ao', 'ao_feed', '{id}', sequence_by => 'seq', stored_as_scd_type => '2',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{seq,op}', continuous => false);
-- key 1: versions [1,5) [5,9) [9,-); key 2: [3,6) then deleted; key 3: [7,-)
INSERT INTO ao_feed VALUES (1, 'a', 1, 'U'), (1, 'b', 5, 'U'), (1, 'c', 9, 'U'),
	(2, 'x', 3, 'U'), (2, NULL, 6, 'D'), (3, 'z', 7, 'U');
SELECT num_events FROM autocdc.run_flow('ao');
-- the indexes as_of reads come on request (every write into the target
-- pays them): a new target has only its keys' indexes; built here over
-- the rows the target has, below (ao2, ab) before the rows are written
SELECT count(*) AS other_indexes FROM pg_index WHERE indrelid = 'ao'::regclass AND NOT indisunique;
SELECT autocdc.create_as_of_index('ao');
SELECT id, v, __start_at, __end_at FROM ao ORDER BY id, __start_at;
-- every business time from before the first version to after the last,
-- against the definition; the boundaries are half-open
CREATE FUNCTION ao_brute(x int) RETURNS SETOF ao LANGUAGE sql AS $$
	SELECT * FROM ao WHERE __start_at <= x AND (__end_at IS NULL OR x < __end_at) $$;
SELECT x, string_agg(format('%s=%s', id, v), ' ' ORDER BY id) AS rows
  FROM generate_series(0, 10) x, autocdc.as_of(NULL::ao, x) GROUP BY x ORDER BY x;
SELECT count(*) AS differences FROM generate_series(0, 10) x,
	LATERAL (SELECT * FROM autocdc.as_of(NULL::ao, x) EXCEPT ALL SELECT * FROM ao_brute(x)
			 UNION ALL SELECT * FROM ao_brute(x) EXCEPT ALL SELECT * FROM autocdc.as_of(NULL::ao, x)) d;
-- the argument is cast to the sequence's type: an untyped literal, a
-- bigint, a numeric (4.6 rounds to 5, as 4.6::int does)
SELECT id, v FROM autocdc.as_of(NULL::ao, '5') ORDER BY id;
SELECT id, v FROM autocdc.as_of(NULL::ao, 5::bigint) ORDER BY id;
SELECT id, v FROM autocdc.as_of(NULL::ao, 4.6) ORDER BY id;
-- a NULL time matches no row (as a comparison with NULL would)
SELECT count(*) FROM autocdc.as_of(NULL::ao, NULL::int);
-- predicates outside the call apply after it; as_of_key reads one key
SELECT id, v FROM autocdc.as_of(NULL::ao, 6) WHERE id = 1;
SELECT id, v, __start_at FROM autocdc.as_of_key(NULL::ao, 1, 6);
SELECT id, v, __start_at FROM autocdc.as_of_key(NULL::ao, '2', 4);
SELECT count(*) FROM autocdc.as_of_key(NULL::ao, 2, 6);		-- deleted by then
SELECT count(*) FROM autocdc.as_of_key(NULL::ao, 4, 6);		-- no such key
SELECT count(*) FROM autocdc.as_of_key(NULL::ao, NULL::int, 6);
-- in a join: the version of each order's customer at the order's time
CREATE TABLE ao_orders (order_id int, customer int, at int);
INSERT INTO ao_orders VALUES (100, 1, 2), (101, 1, 9), (102, 2, 4), (103, 2, 8);
SELECT o.order_id, c.v FROM ao_orders o
  LEFT JOIN LATERAL autocdc.as_of_key(NULL::ao, o.customer, o.at) c ON true ORDER BY o.order_id;

-- several key columns: as_of_key takes a ROW of their values
CREATE TABLE ao2_feed (region text, id int, v text, seq timestamptz);
SELECT autocdc.create_flow('ao2', 'ao2_feed', '{region,id}', sequence_by => 'seq',
	stored_as_scd_type => '2', except_column_list => '{seq}', continuous => false);
SELECT autocdc.create_as_of_index('ao2');
INSERT INTO ao2_feed VALUES ('eu', 1, 'a', '2024-01-01'), ('eu', 1, 'b', '2024-02-01'),
	('us', 1, 'c', '2024-01-15'), ('eu', 2, 'd', '2024-01-20');
SELECT num_events FROM autocdc.run_flow('ao2');
SELECT region, id, v FROM autocdc.as_of(NULL::ao2, '2024-01-16') ORDER BY region, id;
SELECT region, id, v FROM autocdc.as_of(NULL::ao2, '2024-02-01'::timestamptz) ORDER BY region, id;
SELECT region, id, v FROM autocdc.as_of(NULL::ao2, '2024-01-16'::date) ORDER BY region, id;
SELECT region, id, v FROM autocdc.as_of_key(NULL::ao2, ROW('eu', 1), '2024-03-01');
SELECT region, id, v FROM autocdc.as_of_key(NULL::ao2, ROW('us', 1), '2024-01-01');
SELECT count(*) FROM autocdc.as_of_key(NULL::ao2, ROW('eu', NULL::int), '2024-03-01');
\set VERBOSITY terse
SELECT * FROM autocdc.as_of_key(NULL::ao2, 1, '2024-03-01');
SELECT * FROM autocdc.as_of_key(NULL::ao2, ROW('eu', 1, 2), '2024-03-01');
\set VERBOSITY default

-- a ROW sequence: the argument is coerced to <target>_seq
CREATE TABLE ao3_feed (id int, v text, major int, minor int);
SELECT autocdc.create_flow('ao3', 'ao3_feed', '{id}', sequence_by => 'ROW(major, minor)',
	stored_as_scd_type => '2', except_column_list => '{major,minor}', continuous => false);
INSERT INTO ao3_feed VALUES (1, 'a', 1, 0), (1, 'b', 1, 5), (1, 'c', 2, 0);
SELECT num_events FROM autocdc.run_flow('ao3');
SELECT autocdc.create_as_of_index('ao3');
SELECT v, __start_at, __end_at FROM autocdc.as_of(NULL::ao3, ROW(1, 7));
SELECT v FROM autocdc.as_of(NULL::ao3, ROW(1, 5));
SELECT count(*) FROM autocdc.as_of(NULL::ao3, ROW(0, 9));
SELECT v FROM autocdc.as_of(NULL::ao3, '(2,0)');
SELECT v FROM autocdc.as_of(NULL::ao3, ROW(1, 4.5));	-- 4.5 rounds to 5: (1,5), where b starts

-- bitemporal: example 8, what was believed at each system time about 12:10
CREATE TABLE ab_feed (company_id text, data_point text, bt time, st time, operation text);
SELECT autocdc.create_flow('ab', 'ab_feed', '{company_id}', sequence_by => 'bt',
	stored_as_scd_type => 'bitemporal', system_sequence_by => 'st',
	apply_as_deletes => $$operation = 'DELETE'$$, except_column_list => '{bt,st,operation}',
	continuous => false);
SELECT autocdc.create_as_of_index('ab');
INSERT INTO ab_feed VALUES ('A', 'XFv1', '10:01', '10:05', 'INSERT'),
	('A', 'XFv2', '12:15:43', '12:20', 'UPDATE'), ('A', 'XFv3', '12:05', '12:25', 'UPDATE'),
	('A', 'XFv2', '12:30', '12:30', 'DELETE');
SELECT num_events FROM autocdc.run_flow('ab');
SELECT data_point, __start_at, __end_at, __system_start_at, __system_end_at FROM ab
 ORDER BY __start_at, __system_start_at;
SELECT k, (SELECT string_agg(data_point, ',') FROM autocdc.as_of(NULL::ab, '12:10', k::time)) AS believed
  FROM unnest(ARRAY['10:00', '10:05', '12:22', '12:25', '12:29', '12:30', '13:00']) k;
-- and about 12:20
SELECT k, (SELECT string_agg(data_point, ',') FROM autocdc.as_of(NULL::ab, '12:20', k::time)) AS believed
  FROM unnest(ARRAY['12:19', '12:20', '12:25', '12:30']) k;
-- known_at omitted: the current belief (XFv3, known since 12:25)
SELECT data_point FROM autocdc.as_of(NULL::ab, '12:10');
SELECT data_point FROM autocdc.as_of(NULL::ab, '12:10', '12:29:59');
SELECT data_point FROM autocdc.as_of_key(NULL::ab, 'A', '12:10', '12:22');
SELECT count(*) FROM autocdc.as_of(NULL::ab, '12:10', NULL::time);
-- every pair of times against the definition
CREATE FUNCTION ab_brute(x time, y time) RETURNS SETOF ab LANGUAGE sql AS $$
	SELECT * FROM ab WHERE __start_at <= x AND (__end_at IS NULL OR x < __end_at)
	   AND __system_start_at <= y AND (__system_end_at IS NULL OR y < __system_end_at) $$;
SELECT count(*) AS pairs, count(*) FILTER (WHERE d) AS differences
  FROM generate_series('2024-01-01 09:55'::timestamp, '2024-01-01 12:40', '5 minutes') xs(x),
	   generate_series('2024-01-01 09:55'::timestamp, '2024-01-01 12:40', '5 minutes') ys(y),
	   LATERAL (SELECT EXISTS (SELECT * FROM autocdc.as_of(NULL::ab, x::time, y::time)
							   EXCEPT ALL SELECT * FROM ab_brute(x::time, y::time))
					OR EXISTS (SELECT * FROM ab_brute(x::time, y::time)
							   EXCEPT ALL SELECT * FROM autocdc.as_of(NULL::ab, x::time, y::time)) AS d) c;

-- create_as_of_index gives an SCD 2 or bitemporal target a GiST index
-- over the range of its ended periods (a range type of its own where
-- PostgreSQL has none for the sequence's type) and a btree over the starts
-- of its open ones; with more rows than keys, as_of reads the target
-- through them, never by a sequential scan
SELECT c.relname AS target, pg_get_indexdef(i.indexrelid) ~ 'USING gist' AS gist,
	   regexp_replace(pg_get_indexdef(i.indexrelid), '^.*USING (gist|btree) ', '') AS expression
  FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
 WHERE c.relname IN ('ao', 'ao2', 'ao3', 'ab') AND NOT i.indisunique
 ORDER BY 1, 2;
SELECT typname, rngsubtype::regtype FROM pg_range JOIN pg_type ON oid = rngtypid
 WHERE typname LIKE 'a%\_seqrange' ORDER BY 1;
CREATE TABLE aw_feed (id int, v int, seq int);
SELECT autocdc.create_flow('aw', 'aw_feed', '{id}', sequence_by => 'seq', stored_as_scd_type => '2',
	except_column_list => '{seq}', continuous => false);
SELECT autocdc.create_as_of_index('aw');
INSERT INTO aw_feed SELECT k, s, s * 10 + k % 7 FROM generate_series(1, 300) k, generate_series(1, 30) s;
SELECT num_events FROM autocdc.run_flow('aw');
ANALYZE aw;
-- (one transaction: the counters of this backend are not flushed meanwhile)
CREATE TABLE aw_scans (relname name, seq_scan bigint, idx_scan bigint);
BEGIN;
INSERT INTO aw_scans SELECT relname, seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE relname = 'aw';
SELECT count(*), sum(v) FROM autocdc.as_of(NULL::aw, 155);
SELECT count(*), sum(v) FROM autocdc.as_of_key(NULL::aw, 7, 155);
SELECT s.seq_scan - a.seq_scan AS seq_scans, s.idx_scan > a.idx_scan AS index_scans
  FROM pg_stat_xact_user_tables s JOIN aw_scans a USING (relname);
COMMIT;
-- the open versions come through the btree over their starts, not by
-- reading every current row through the key index (the statistics of the
-- whole column suggest that many open versions began by 155; none did)
SELECT indexrelid::regclass AS open_index FROM pg_index
 WHERE indrelid = 'aw'::regclass AND pg_get_indexdef(indexrelid) ~ 'btree \(__start_at\) WHERE' \gset
SELECT pg_stat_force_next_flush();
SELECT idx_scan AS open_scans FROM pg_stat_user_indexes WHERE indexrelid = :'open_index'::regclass \gset
SELECT count(*) FROM autocdc.as_of(NULL::aw, 155), pg_stat_force_next_flush();
SELECT idx_scan - :open_scans AS open_index_scans FROM pg_stat_user_indexes
 WHERE indexrelid = :'open_index'::regclass;
SELECT count(*), sum(v) FROM aw WHERE __start_at <= 155 AND (__end_at IS NULL OR 155 < __end_at);
SELECT count(*) AS differences FROM generate_series(0, 320, 7) x,
	LATERAL (SELECT * FROM autocdc.as_of(NULL::aw, x) EXCEPT ALL
			 SELECT * FROM aw WHERE __start_at <= x AND (__end_at IS NULL OR x < __end_at)) d;
-- a GiST index over every row's period (as earlier builds made) serves
-- too, alone
SELECT indexrelid::regclass AS periods_index FROM pg_index
 WHERE indrelid = 'aw'::regclass AND pg_get_indexdef(indexrelid) ~ 'USING gist' \gset
DROP INDEX :periods_index, :open_index;
CREATE INDEX aw_every_period ON aw USING gist (int4range(__start_at, __end_at));
TRUNCATE aw_scans;
BEGIN;
INSERT INTO aw_scans SELECT relname, seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE relname = 'aw';
SELECT count(*), sum(v) FROM autocdc.as_of(NULL::aw, 155);
SELECT s.seq_scan - a.seq_scan AS seq_scans, s.idx_scan > a.idx_scan AS index_scans
  FROM pg_stat_xact_user_tables s JOIN aw_scans a USING (relname) WHERE relname = 'aw';
COMMIT;
SELECT count(*) AS differences FROM generate_series(0, 320, 7) x,
	LATERAL (SELECT * FROM autocdc.as_of(NULL::aw, x) EXCEPT ALL
			 SELECT * FROM aw WHERE __start_at <= x AND (__end_at IS NULL OR x < __end_at)) d;
-- without the index (none was asked for, or it was dropped), the same
-- rows by a plain query
DROP INDEX aw_every_period;
SELECT count(*) AS differences FROM generate_series(0, 320, 7) x,
	LATERAL (SELECT * FROM autocdc.as_of(NULL::aw, x) EXCEPT ALL
			 SELECT * FROM aw WHERE __start_at <= x AND (__end_at IS NULL OR x < __end_at)) d;
-- when every row has its own key, the planner may choose one pass over the
-- target
CREATE TABLE au_feed (id int, v int, seq int);
SELECT autocdc.create_flow('au', 'au_feed', '{id}', sequence_by => 'seq', stored_as_scd_type => '2',
	except_column_list => '{seq}', continuous => false);
SELECT autocdc.create_as_of_index('au');
INSERT INTO au_feed SELECT k, k, k FROM generate_series(1, 3000) k;
SELECT num_events FROM autocdc.run_flow('au');
ANALYZE au;
BEGIN;
INSERT INTO aw_scans SELECT relname, seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE relname = 'au';
SELECT count(*) FROM autocdc.as_of(NULL::au, 1500);
SELECT s.seq_scan - a.seq_scan AS seq_scans, s.idx_scan - a.idx_scan AS index_scans
  FROM pg_stat_xact_user_tables s JOIN aw_scans a USING (relname) WHERE relname = 'au';
COMMIT;

-- refusals
\set VERBOSITY terse
SELECT * FROM autocdc.as_of(NULL::ao, 5, 5);			-- SCD 2 has no system time
SELECT * FROM autocdc.as_of_key(NULL::ao, 1, 5, 5);
CREATE TABLE a1_feed (id int, v text, seq int);
SELECT autocdc.create_flow('a1', 'a1_feed', '{id}', sequence_by => 'seq', continuous => false);
SELECT * FROM autocdc.as_of(NULL::a1, 5);				-- SCD 1 keeps no history
SELECT * FROM autocdc.as_of(NULL::ao_orders, 5);		-- not a target
SELECT * FROM autocdc.as_of(NULL::int, 5);				-- not a row type
SELECT * FROM autocdc.as_of(NULL::ao, 'soon');			-- not a sequence value
SELECT autocdc.create_as_of_index('a1');				-- SCD 1 keeps no history
SELECT autocdc.create_as_of_index('ao_orders');		-- not a target
SELECT autocdc.create_as_of_index(NULL) IS NULL AS strict;
SELECT autocdc.create_as_of_index('ao');				-- has them: left alone
CREATE ROLE regress_ao_nobody;
GRANT USAGE ON SCHEMA autocdc TO regress_ao_nobody;
SET ROLE regress_ao_nobody;
SELECT * FROM autocdc.as_of(NULL::ao, 5);				-- no SELECT on the target
SELECT autocdc.create_as_of_index('ao');				-- not the target's owner
RESET ROLE;
-- a type named <target>_seqrange of another role's (its functions would run
-- in every write into the index) is refused; the owner's own is used
CREATE TABLE ax_feed (id int, v text, seq time);
SELECT autocdc.create_flow('ax', 'ax_feed', '{id}', sequence_by => 'seq', stored_as_scd_type => '2',
	except_column_list => '{seq}', continuous => false);
CREATE TYPE ax_seqrange AS RANGE (SUBTYPE = time);
ALTER TYPE ax_seqrange OWNER TO regress_ao_nobody;
SELECT autocdc.create_as_of_index('ax');
ALTER TYPE ax_seqrange OWNER TO CURRENT_USER;
SELECT autocdc.create_as_of_index('ax');
SELECT pg_get_indexdef(indexrelid) ~ 'USING gist \((public\.)?ax_seqrange\(__start_at, __end_at\)\)' AS uses_it
  FROM pg_index WHERE indrelid = 'ax'::regclass AND NOT indisunique AND pg_get_indexdef(indexrelid) ~ 'gist';
\set VERBOSITY default
-- with SELECT, as_of reads as the caller: row security applies
GRANT SELECT ON ao TO regress_ao_nobody;
ALTER TABLE ao ENABLE ROW LEVEL SECURITY;
CREATE POLICY ao_only_1 ON ao FOR SELECT TO regress_ao_nobody USING (id = 1);
SET ROLE regress_ao_nobody;
SELECT id, v FROM autocdc.as_of(NULL::ao, 6) ORDER BY id;
RESET ROLE;
ALTER TABLE ao DISABLE ROW LEVEL SECURITY;
DROP POLICY ao_only_1 ON ao;
REVOKE SELECT ON ao FROM regress_ao_nobody;
REVOKE USAGE ON SCHEMA autocdc FROM regress_ao_nobody;
DROP ROLE regress_ao_nobody;

DROP FUNCTION ao_brute(int), ab_brute(time, time);
SELECT autocdc.drop_flow(f, true) FROM unnest(ARRAY['ao', 'ao2', 'ao3', 'ab', 'aw', 'au', 'a1', 'ax']) f;
DROP TABLE ao_feed, ao2_feed, ao3_feed, ab_feed, aw_feed, au_feed, a1_feed, ax_feed, ao_orders, aw_scans;
-- the range types went with their targets
SELECT count(*) FROM pg_type WHERE typname LIKE 'a%\_seqrange';
