--
-- scd2: the SCD type 2 rules of semantics §4, one section per rule.
-- §4 SCD type 2: "Walk a key's events in order with an optional open version
-- (start, values): upsert at s with no open version -> open (s, values);
-- upsert whose tracked columns equal the open version's -> keep its start,
-- take the new values (untracked columns change in place); upsert that
-- differs -> close the open version at s and open (s, values); delete at s ->
-- close the open version at s."
-- Every flow is continuous => false and makes its first, empty run before its
-- events arrive.  Each run_flow is its own autocommit statement.  Result
-- lines: (num_events, num_upserted_rows, num_deleted_rows, num_skipped_events);
-- metrics compare row identities (keys, __start_at): "a moved __start_at counts
-- one of each".
--
\pset null '(null)'

-- versions of a key never overlap, none is empty, at most one is current
CREATE FUNCTION s2_check(tgt regclass) RETURNS TABLE (overlapping bigint, empty bigint, keys_with_two_current bigint)
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format($q$
		SELECT (SELECT count(*) FROM %1$s a JOIN %1$s b ON a.id = b.id
		         AND a.__start_at < b.__start_at AND (a.__end_at IS NULL OR a.__end_at > b.__start_at)),
		       (SELECT count(*) FROM %1$s WHERE __end_at <= __start_at),
		       (SELECT count(*) FROM (SELECT id FROM %1$s WHERE __end_at IS NULL
		                              GROUP BY id HAVING count(*) > 1) d)$q$, tgt);
END $$;

---------------------------------------------------------------------------
-- Late events (§4 fold, whatever the arrival order): a late event inside a
-- closed version splits it; a late event that agrees with the version open at
-- its sequence only moves that version's __start_at earlier (or changes
-- nothing when it lands inside it).
---------------------------------------------------------------------------
CREATE TABLE s2_split_feed (id int, v text, op text, seq int);
SELECT autocdc.create_flow('s2_split', 's2_split_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq}',
	stored_as_scd_type => '2', continuous => false);
SELECT * FROM autocdc.run_flow('s2_split');
-- (a, 10, 30), (b, 30, null).  2,2,0
INSERT INTO s2_split_feed VALUES (1, 'a', NULL, 10), (1, 'b', NULL, 30);
SELECT * FROM autocdc.run_flow('s2_split');
SELECT * FROM s2_split ORDER BY id, __start_at;
-- c at 20 splits (a, 10, 30): (a, 10, 20), (c, 20, 30), (b, 30, null).  1,2,0
INSERT INTO s2_split_feed VALUES (1, 'c', NULL, 20);
SELECT * FROM autocdc.run_flow('s2_split');
SELECT * FROM s2_split ORDER BY id, __start_at;
-- a at 15 agrees with (a, 10, 20): nothing changes.  1,0,0
INSERT INTO s2_split_feed VALUES (1, 'a', NULL, 15);
SELECT * FROM autocdc.run_flow('s2_split');
-- b at 25 closes c at 25 and b's version now starts at 25:
-- (a, 10, 20), (c, 20, 25), (b, 25, null).  1,2,1
INSERT INTO s2_split_feed VALUES (1, 'b', NULL, 25);
SELECT * FROM autocdc.run_flow('s2_split');
SELECT * FROM s2_split ORDER BY id, __start_at;
-- z at 5, before everything: a new closed version (z, 5, 10).  1,1,0
INSERT INTO s2_split_feed VALUES (1, 'z', NULL, 5);
SELECT * FROM autocdc.run_flow('s2_split');
-- z at 1 agrees with it: its __start_at moves from 5 to 1.  1,1,1
INSERT INTO s2_split_feed VALUES (1, 'z', NULL, 1);
SELECT * FROM autocdc.run_flow('s2_split');
SELECT * FROM s2_split ORDER BY id, __start_at;
-- key 2: x at 30 (1,1,0); x at 20 agrees with the open version, which now
-- starts at 20 (1,1,1); w at 10 adds (w, 10, 20) (1,1,0)
INSERT INTO s2_split_feed VALUES (2, 'x', NULL, 30);
SELECT * FROM autocdc.run_flow('s2_split');
INSERT INTO s2_split_feed VALUES (2, 'x', NULL, 20);
SELECT * FROM autocdc.run_flow('s2_split');
SELECT * FROM s2_split WHERE id = 2 ORDER BY __start_at;     -- (x, 20, null)
INSERT INTO s2_split_feed VALUES (2, 'w', NULL, 10);
SELECT * FROM autocdc.run_flow('s2_split');
-- 1: (z, 1, 10), (a, 10, 20), (c, 20, 25), (b, 25, null); 2: (w, 10, 20), (x, 20, null)
SELECT * FROM s2_split ORDER BY id, __start_at;

---------------------------------------------------------------------------
-- Deletes: "delete at s -> close the open version at s"; a later upsert opens
-- a new version (a gap, even with equal values); §4 Hidden state: "a delete
-- that arrives before the insert it closes still closes it"; a delete with no
-- open version does nothing; ties: the last arrival exists.
---------------------------------------------------------------------------
CREATE TABLE s2_del_feed (id int, v text, op text, seq int);
SELECT autocdc.create_flow('s2_del', 's2_del_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq}',
	stored_as_scd_type => '2', continuous => false);
SELECT * FROM autocdc.run_flow('s2_del');
INSERT INTO s2_del_feed VALUES (3, 'a', NULL, 10);
SELECT * FROM autocdc.run_flow('s2_del');     -- 1,1,0
INSERT INTO s2_del_feed VALUES (3, NULL, 'D', 20);
SELECT * FROM autocdc.run_flow('s2_del');     -- 1,1,0  (a, 10, 20)
INSERT INTO s2_del_feed VALUES (3, 'a', NULL, 30);
SELECT * FROM autocdc.run_flow('s2_del');     -- 1,1,0  + (a, 30, null)
SELECT * FROM s2_del ORDER BY id, __start_at;
-- late z at 15: (a, 10, 15), (z, 15, 20), (a, 30, null).  1,2,0
INSERT INTO s2_del_feed VALUES (3, 'z', NULL, 15);
SELECT * FROM autocdc.run_flow('s2_del');
-- delete at 35: (a, 30, 35).  1,1,0
INSERT INTO s2_del_feed VALUES (3, NULL, 'D', 35);
SELECT * FROM autocdc.run_flow('s2_del');
-- q at 25, in the gap: (q, 25, 30).  1,1,0
INSERT INTO s2_del_feed VALUES (3, 'q', NULL, 25);
SELECT * FROM autocdc.run_flow('s2_del');
-- a delete at 5, before everything: no open version, nothing.  1,0,0
INSERT INTO s2_del_feed VALUES (3, NULL, 'D', 5);
SELECT * FROM autocdc.run_flow('s2_del');
SELECT * FROM s2_del ORDER BY id, __start_at;
-- delete before insert, across runs: key 4.  1,0,0 then 1,1,0 (a, 10, 20) then 1,1,0
INSERT INTO s2_del_feed VALUES (4, NULL, 'D', 20);
SELECT * FROM autocdc.run_flow('s2_del');
SELECT * FROM s2_del WHERE id = 4;
INSERT INTO s2_del_feed VALUES (4, 'a', NULL, 10);
SELECT * FROM autocdc.run_flow('s2_del');
INSERT INTO s2_del_feed VALUES (4, 'b', NULL, 30);
SELECT * FROM autocdc.run_flow('s2_del');
-- delete before insert within one run: key 5 (a, 10, 20).  2,1,0
INSERT INTO s2_del_feed VALUES (5, NULL, 'D', 20), (5, 'a', NULL, 10);
SELECT * FROM autocdc.run_flow('s2_del');
-- tie: an upsert then a delete at 10 -- the delete exists, no row (2,0,0);
-- then an upsert at 10 arrives last: (b, 10, null) (1,1,0)
INSERT INTO s2_del_feed VALUES (7, 'a', NULL, 10), (7, NULL, 'D', 10);
SELECT * FROM autocdc.run_flow('s2_del');
SELECT * FROM s2_del WHERE id = 7;
INSERT INTO s2_del_feed VALUES (7, 'b', NULL, 10);
SELECT * FROM autocdc.run_flow('s2_del');
-- ties across runs: key 8 (a, 10, 20), (b, 20, null) (2,2,0); a delete at 20
-- arrives last, so the upsert at 20 no longer exists: (a, 10, 20) only (1,0,1);
-- an upsert at 20 arrives last again: (a, 10, 20), (c, 20, null) (1,1,0); the
-- same event once more changes nothing (1,0,0)
INSERT INTO s2_del_feed VALUES (8, 'a', NULL, 10), (8, 'b', NULL, 20);
SELECT * FROM autocdc.run_flow('s2_del');
INSERT INTO s2_del_feed VALUES (8, NULL, 'D', 20);
SELECT * FROM autocdc.run_flow('s2_del');
SELECT * FROM s2_del WHERE id = 8 ORDER BY __start_at;
INSERT INTO s2_del_feed VALUES (8, 'c', NULL, 20);
SELECT * FROM autocdc.run_flow('s2_del');
INSERT INTO s2_del_feed VALUES (8, 'c', NULL, 20);
SELECT * FROM autocdc.run_flow('s2_del');
-- 3: (a, 10, 15), (z, 15, 20), (q, 25, 30), (a, 30, 35); 4: (a, 10, 20), (b, 30, null);
-- 5: (a, 10, 20); 7: (b, 10, null); 8: (a, 10, 20), (c, 20, null)
SELECT * FROM s2_del ORDER BY id, __start_at;

---------------------------------------------------------------------------
-- Truncates: "Truncates are accepted for SCD 2 too ...: they close every open
-- version at t" -- also for keys first seen later (§4 Truncates); the
-- truncate row's key and values are ignored.
---------------------------------------------------------------------------
CREATE TABLE s2_tr_feed (id int, v text, op text, seq int);
SELECT autocdc.create_flow('s2_tr', 's2_tr_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, apply_as_truncates => $$op = 'T'$$,
	except_column_list => '{op,seq}', stored_as_scd_type => '2', continuous => false);
SELECT * FROM autocdc.run_flow('s2_tr');
INSERT INTO s2_tr_feed VALUES (1, 'a', NULL, 10), (2, 'b', NULL, 10), (2, 'c', NULL, 20), (3, 'd', NULL, 30);
SELECT * FROM autocdc.run_flow('s2_tr');     -- 4,4,0
-- truncate at 25: closes (1, a, 10) and (2, c, 20) at 25; 3 starts at 30.  1,2,0
INSERT INTO s2_tr_feed VALUES (NULL, NULL, 'T', 25);
SELECT * FROM autocdc.run_flow('s2_tr');
SELECT * FROM s2_tr ORDER BY id, __start_at;
-- keys first seen later: 4 at 15 -> (e, 15, 25); 5 at 26 -> open; 6 at 25
-- arrives after the truncate (tie, the upsert exists) -> open; 1 at 5 ->
-- (a2, 5, 10).  4,4,0
INSERT INTO s2_tr_feed VALUES (4, 'e', NULL, 15), (5, 'f', NULL, 26), (1, 'a2', NULL, 5), (6, 'g', NULL, 25);
SELECT * FROM autocdc.run_flow('s2_tr');
-- after the truncate an upsert with the same values opens a new version.  1,1,0
INSERT INTO s2_tr_feed VALUES (1, 'a', NULL, 40);
SELECT * FROM autocdc.run_flow('s2_tr');
-- a truncate row with a key and values (ignored) at 50 closes 1, 3, 5, 6.  1,4,0
INSERT INTO s2_tr_feed VALUES (3, 'zz', 'T', 50);
SELECT * FROM autocdc.run_flow('s2_tr');
-- a truncate at 60 arriving after an upsert at 60 wins the tie: key 9's only
-- version disappears (1,0,1)
INSERT INTO s2_tr_feed VALUES (9, 'h', NULL, 60);
SELECT * FROM autocdc.run_flow('s2_tr');     -- 1,1,0
INSERT INTO s2_tr_feed VALUES (NULL, NULL, 'T', 60);
SELECT * FROM autocdc.run_flow('s2_tr');
-- 1: (a2, 5, 10), (a, 10, 25), (a, 40, 50); 2: (b, 10, 20), (c, 20, 25);
-- 3: (d, 30, 50); 4: (e, 15, 25); 5: (f, 26, 50); 6: (g, 25, 50); no 9
SELECT * FROM s2_tr ORDER BY id, __start_at;

---------------------------------------------------------------------------
-- History tracking: "Tracked columns default to all selected non-key
-- columns"; track_history_column_list {a} and track_history_except_column_list
-- {b} both track only a: a change of b updates the open version in place, a
-- change of a opens a new version; a version holds its last event's values.
---------------------------------------------------------------------------
CREATE TABLE s2_th_feed (id int, a text, b text, op text, seq int);
SELECT autocdc.create_flow('s2_th_on', 's2_th_feed', '{id}', sequence_by => 'seq',
	except_column_list => '{op,seq}', stored_as_scd_type => '2',
	track_history_column_list => '{a}', continuous => false);
SELECT autocdc.create_flow('s2_th_except', 's2_th_feed', '{id}', sequence_by => 'seq',
	except_column_list => '{op,seq}', stored_as_scd_type => '2',
	track_history_except_column_list => '{b}', continuous => false);
SELECT autocdc.create_flow('s2_th_all', 's2_th_feed', '{id}', sequence_by => 'seq',
	except_column_list => '{op,seq}', stored_as_scd_type => '2', continuous => false);
SELECT * FROM autocdc.run_flow('s2_th_on');
SELECT * FROM autocdc.run_flow('s2_th_except');
SELECT * FROM autocdc.run_flow('s2_th_all');
-- (a1, b1) at 10: 1,1,0 for all three
INSERT INTO s2_th_feed VALUES (1, 'a1', 'b1', NULL, 10);
SELECT * FROM autocdc.run_flow('s2_th_on');
SELECT * FROM autocdc.run_flow('s2_th_except');
SELECT * FROM autocdc.run_flow('s2_th_all');
-- (a1, b2) at 20, untracked change: on/except (a1, b2, 10, null) 1,1,0;
-- all: (a1, b1, 10, 20), (a1, b2, 20, null) 1,2,0
INSERT INTO s2_th_feed VALUES (1, 'a1', 'b2', NULL, 20);
SELECT * FROM autocdc.run_flow('s2_th_on');
SELECT * FROM autocdc.run_flow('s2_th_except');
SELECT * FROM autocdc.run_flow('s2_th_all');
SELECT * FROM s2_th_on ORDER BY id, __start_at;
SELECT * FROM s2_th_all ORDER BY id, __start_at;
-- (a2, b2) at 30, tracked change: on/except (a1, b2, 10, 30), (a2, b2, 30, null)
-- 1,2,0; all: (a1, b2, 20, 30) + (a2, b2, 30, null) 1,2,0
INSERT INTO s2_th_feed VALUES (1, 'a2', 'b2', NULL, 30);
SELECT * FROM autocdc.run_flow('s2_th_on');
SELECT * FROM autocdc.run_flow('s2_th_except');
SELECT * FROM autocdc.run_flow('s2_th_all');
-- late (a1, b9) at 25, untracked change inside (a1, 10, 30): that version now
-- holds b9 (1,1,0); all: (a1, b2, 20, 25), (a1, b9, 25, 30) (1,2,0)
INSERT INTO s2_th_feed VALUES (1, 'a1', 'b9', NULL, 25);
SELECT * FROM autocdc.run_flow('s2_th_on');
SELECT * FROM autocdc.run_flow('s2_th_except');
SELECT * FROM autocdc.run_flow('s2_th_all');
SELECT * FROM s2_th_on ORDER BY id, __start_at;
-- late (a3, b3) at 15, tracked change: on/except (a1, b1, 10, 15),
-- (a3, b3, 15, 20), (a1, b9, 20, 30), (a2, b2, 30, null) (1,3,0);
-- all: (a1, b1, 10, 15), (a3, b3, 15, 20), ... (1,2,0)
INSERT INTO s2_th_feed VALUES (1, 'a3', 'b3', NULL, 15);
SELECT * FROM autocdc.run_flow('s2_th_on');
SELECT * FROM autocdc.run_flow('s2_th_except');
SELECT * FROM autocdc.run_flow('s2_th_all');
SELECT * FROM s2_th_on ORDER BY id, __start_at;
SELECT * FROM s2_th_except ORDER BY id, __start_at;
-- all: (a1, b1, 10, 15), (a3, b3, 15, 20), (a1, b2, 20, 25), (a1, b9, 25, 30), (a2, b2, 30, null)
SELECT * FROM s2_th_all ORDER BY id, __start_at;

---------------------------------------------------------------------------
-- ignore_null_updates: "an upsert's NULL columns are first filled from the
-- version open at that point of the walk (none after a delete); the filled
-- row is what tracking compares and what the version stores"; tie losers are
-- ignored (§4 Ties).
---------------------------------------------------------------------------
CREATE TABLE s2_inu_feed (id int, a text, b text, op text, seq int);
SELECT autocdc.create_flow('s2_inu', 's2_inu_feed', '{id}', sequence_by => 'seq',
	ignore_null_updates => true, apply_as_deletes => $$op = 'D'$$,
	except_column_list => '{op,seq}', stored_as_scd_type => '2', continuous => false);
SELECT * FROM autocdc.run_flow('s2_inu');
INSERT INTO s2_inu_feed VALUES (1, 'a1', 'b1', NULL, 10);
SELECT * FROM autocdc.run_flow('s2_inu');     -- 1,1,0
-- (null, b3) at 30 is filled to (a1, b3): (a1, b1, 10, 30), (a1, b3, 30, null).  1,2,0
INSERT INTO s2_inu_feed VALUES (1, NULL, 'b3', NULL, 30);
SELECT * FROM autocdc.run_flow('s2_inu');
SELECT * FROM s2_inu ORDER BY id, __start_at;
-- late (x, null) at 20 is filled to (x, b1); the event at 30 is now filled from
-- it: (a1, b1, 10, 20), (x, b1, 20, 30), (x, b3, 30, null).  1,3,0
INSERT INTO s2_inu_feed VALUES (1, 'x', NULL, NULL, 20);
SELECT * FROM autocdc.run_flow('s2_inu');
SELECT * FROM s2_inu ORDER BY id, __start_at;
-- an all-NULL upsert fills to the open version's values: nothing changes.  1,0,0
INSERT INTO s2_inu_feed VALUES (1, NULL, NULL, NULL, 40);
SELECT * FROM autocdc.run_flow('s2_inu');
-- after a delete there is nothing to fill from: 2 (a, b, 10, 20), (null, c, 30, null);
-- a first event keeps its NULLs: 4 (null, y, 10, null).  4,3,0
INSERT INTO s2_inu_feed VALUES (2, 'a', 'b', NULL, 10), (2, NULL, NULL, 'D', 20), (2, NULL, 'c', NULL, 30),
	(4, NULL, 'y', NULL, 10);
SELECT * FROM autocdc.run_flow('s2_inu');
-- tie at 20: (p, q) loses to the later (null, r), filled from (a, b):
-- 3 (a, b, 10, 20), (a, r, 20, null).  3,2,0
INSERT INTO s2_inu_feed VALUES (3, 'a', 'b', NULL, 10), (3, 'p', 'q', NULL, 20), (3, NULL, 'r', NULL, 20);
SELECT * FROM autocdc.run_flow('s2_inu');
SELECT * FROM s2_inu ORDER BY id, __start_at;

---------------------------------------------------------------------------
-- §1 "equal -- IS NOT DISTINCT FROM under the type's default equality (NULL
-- equals NULL); a type without one (json, point, xml) is compared by its text
-- representation": what decides whether an upsert agrees with the open version.
---------------------------------------------------------------------------
CREATE TABLE s2_eq_feed (id int, j json, p point, n numeric, t text, seq int);
SELECT autocdc.create_flow('s2_eq', 's2_eq_feed', '{id}', sequence_by => 'seq',
	except_column_list => '{seq}', stored_as_scd_type => '2', continuous => false);
SELECT * FROM autocdc.run_flow('s2_eq');
INSERT INTO s2_eq_feed VALUES (1, '{"a":1}', '(1,2)', 1.0, NULL, 10);
SELECT * FROM autocdc.run_flow('s2_eq');     -- 1,1,0
-- same json text, point '(1.0,2.0)' prints as (1,2), 1.00 = 1.0, NULL = NULL:
-- agrees, the version keeps its start and takes the new values (n = 1.00)
INSERT INTO s2_eq_feed VALUES (1, '{"a":1}', '(1.0,2.0)', 1.00, NULL, 20);
SELECT num_events FROM autocdc.run_flow('s2_eq');
SELECT * FROM s2_eq ORDER BY id, __start_at;     -- (1, {"a":1}, (1,2), 1.00, null, 10, null)
-- json text differs ('{"a": 1}'): a new version (1,2,0)
INSERT INTO s2_eq_feed VALUES (1, '{"a": 1}', '(1,2)', 1.00, NULL, 30);
SELECT * FROM autocdc.run_flow('s2_eq');
-- NULL -> 'x' differs: a new version (1,2,0)
INSERT INTO s2_eq_feed VALUES (1, '{"a": 1}', '(1,2)', 1.00, 'x', 40);
SELECT * FROM autocdc.run_flow('s2_eq');
SELECT * FROM s2_eq ORDER BY id, __start_at;

---------------------------------------------------------------------------
-- R11 / §4 fold: identical re-delivered events change nothing (each copy ties
-- with its original and carries the same values).
---------------------------------------------------------------------------
CREATE TEMP TABLE s2_split_before AS SELECT * FROM s2_split;
CREATE TEMP TABLE s2_del_before AS SELECT * FROM s2_del;
INSERT INTO s2_split_feed SELECT * FROM s2_split_feed ORDER BY ctid;
INSERT INTO s2_del_feed SELECT * FROM s2_del_feed ORDER BY ctid;
SELECT * FROM autocdc.run_flow('s2_split');     -- 10,0,0
SELECT * FROM autocdc.run_flow('s2_del');       -- 20,0,0
-- no differences (no rows)
(SELECT 's2_split' AS t, * FROM s2_split EXCEPT ALL SELECT 's2_split', * FROM s2_split_before)
UNION ALL (SELECT 's2_split', * FROM s2_split_before EXCEPT ALL SELECT 's2_split', * FROM s2_split)
UNION ALL (SELECT 's2_del', * FROM s2_del EXCEPT ALL SELECT 's2_del', * FROM s2_del_before)
UNION ALL (SELECT 's2_del', * FROM s2_del_before EXCEPT ALL SELECT 's2_del', * FROM s2_del);

---------------------------------------------------------------------------
-- ROW(a, b) sequences: "__start_at/__end_at have the type of the sequence
-- expression; for a ROW sequence autocdc creates a composite type
-- <target>_seq in the target's schema with the target (fields named after the
-- columns, f1, f2... for other expressions), dropped with it"; §1: compared
-- field by field.
---------------------------------------------------------------------------
CREATE SCHEMA s2sch;
CREATE TABLE s2_row_feed (id int, v text, major int, minor int, op text);
SELECT autocdc.create_flow('s2sch.rowt', 's2_row_feed', '{id}', sequence_by => 'ROW(major, minor)',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{major,minor,op}',
	stored_as_scd_type => '2', continuous => false);
SELECT autocdc.create_flow('s2sch.rowt2', 's2_row_feed', '{id}', sequence_by => 'ROW(major + 0, minor)',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{major,minor,op}',
	stored_as_scd_type => '2', continuous => false);
SELECT name, target FROM autocdc.flows WHERE name IN ('rowt', 'rowt2') ORDER BY name;
SELECT t.typname, t.typnamespace::regnamespace AS schema, t.typtype
  FROM pg_type t WHERE t.typname IN ('rowt_seq', 'rowt2_seq') ORDER BY 1;
SELECT t.typname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod) AS type
  FROM pg_type t JOIN pg_attribute a ON a.attrelid = t.typrelid
 WHERE t.typname IN ('rowt_seq', 'rowt2_seq') AND t.typnamespace = 's2sch'::regnamespace AND a.attnum > 0
 ORDER BY 1, 2;
SELECT attrelid::regclass AS target, attname, format_type(atttypid, atttypmod) AS type
  FROM pg_attribute
 WHERE attrelid IN ('s2sch.rowt'::regclass, 's2sch.rowt2'::regclass) AND attnum > 0 AND NOT attisdropped
 ORDER BY attrelid::regclass::text, attnum;
SELECT * FROM autocdc.run_flow('rowt');
SELECT * FROM autocdc.run_flow('rowt2');
-- order (0,99) < (1,9) < (1,10) < (9,5) < (10,0); key 2 deleted at (1,2).  7,6,0 each
INSERT INTO s2_row_feed VALUES (1, 'x', 1, 10, NULL), (1, 'y', 1, 9, NULL), (1, 'z', 0, 99, NULL),
	(1, 'w', 10, 0, NULL), (1, 'u', 9, 5, NULL), (2, 'a', 1, 1, NULL), (2, NULL, 1, 2, 'D');
SELECT * FROM autocdc.run_flow('rowt');
SELECT * FROM autocdc.run_flow('rowt2');
-- 1: (z, (0,99), (1,9)), (y, (1,9), (1,10)), (x, (1,10), (9,5)), (u, (9,5), (10,0)),
--    (w, (10,0), null); 2: (a, (1,1), (1,2))
SELECT * FROM s2sch.rowt ORDER BY id, __start_at;
SELECT (__start_at).major, (__start_at).minor, (__end_at).major AS end_major
  FROM s2sch.rowt WHERE id = 2;
SELECT (__start_at).f1, (__start_at).minor FROM s2sch.rowt2 WHERE id = 2;
-- both targets hold the same versions (no rows)
(SELECT id, v, __start_at::text, __end_at::text FROM s2sch.rowt
 EXCEPT ALL SELECT id, v, __start_at::text, __end_at::text FROM s2sch.rowt2)
UNION ALL
(SELECT id, v, __start_at::text, __end_at::text FROM s2sch.rowt2
 EXCEPT ALL SELECT id, v, __start_at::text, __end_at::text FROM s2sch.rowt);
SELECT * FROM s2_check('s2sch.rowt');
-- drop_flow(name, true) drops the target and its type
SELECT autocdc.drop_flow('rowt', true);
SELECT autocdc.drop_flow('rowt2', true);
SELECT to_regclass('s2sch.rowt') AS rowt, to_regtype('s2sch.rowt_seq') AS rowt_seq,
       to_regclass('s2sch.rowt2') AS rowt2, to_regtype('s2sch.rowt2_seq') AS rowt2_seq;

---------------------------------------------------------------------------
-- §4 Target (SCD 2): columns, then __start_at, __end_at of the sequence's
-- type, lower case; "Primary key: keys, __start_at plus a unique index on
-- keys where __end_at IS NULL"; "At most one current row per key; versions of
-- a key never overlap."
---------------------------------------------------------------------------
SELECT attnum, attname, format_type(atttypid, atttypmod) AS type, attnotnull, atthasdef
  FROM pg_attribute WHERE attrelid = 's2_split'::regclass AND attnum > 0 AND NOT attisdropped
 ORDER BY attnum;
SELECT i.indisprimary, i.indisunique,
       array(SELECT a.attname FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(n, o)
               JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n ORDER BY k.o) AS columns,
       pg_get_expr(i.indpred, i.indrelid) AS predicate
  FROM pg_index i WHERE i.indrelid = 's2_split'::regclass ORDER BY 1 DESC, 3;
SELECT id, v, __START_AT, __END_AT FROM s2_split WHERE id = 2 ORDER BY __START_AT;
-- a second current row for key 2 is refused by the unique index
DO $$
BEGIN
	INSERT INTO s2_split VALUES (2, 'dup', 99, NULL);
	RAISE NOTICE 'second current row accepted';
EXCEPTION WHEN unique_violation THEN
	RAISE NOTICE 'unique_violation';
END $$;
SELECT * FROM s2_check('s2_split');
SELECT * FROM s2_check('s2_del');
SELECT * FROM s2_check('s2_tr');
SELECT * FROM s2_check('s2_th_on');
SELECT * FROM s2_check('s2_th_all');
SELECT * FROM s2_check('s2_inu');

---------------------------------------------------------------------------
-- §4 Metrics: totals in autocdc.flows are the sums of the runs above.
-- s2_split: events 20, upserted 11, deleted 3
---------------------------------------------------------------------------
SELECT name, state, num_events, num_upserted_rows, num_deleted_rows, num_skipped_events
  FROM autocdc.flows WHERE name LIKE 's2\_%' ORDER BY name;

-- clean up
SELECT autocdc.drop_flow(name, true) FROM autocdc.flows WHERE name LIKE 's2\_%' ORDER BY name;
SELECT count(*) AS s2_flows_left FROM autocdc.flows WHERE name LIKE 's2\_%';
DROP TABLE s2_split_feed, s2_del_feed, s2_tr_feed, s2_th_feed, s2_inu_feed, s2_eq_feed, s2_row_feed;
DROP SCHEMA s2sch;
DROP FUNCTION s2_check(regclass);

---------------------------------------------------------------------------
-- §4 SCD 2 with nothing tracked (a track list of none, or an except list
-- naming every non-key column): every upsert keeps the open version's start
-- and takes the new values in place; (1,a)@5, (1,b)@10 is one row (1,b,5,-).
-- (Once, the empty set was stored as "all".)
---------------------------------------------------------------------------
CREATE TABLE s2_none_feed (id int, v text, seq int);
SELECT autocdc.create_flow('s2_none_a', 's2_none_feed', '{id}', 'seq', stored_as_scd_type => '2',
						   track_history_column_list => '{}', continuous => false);
SELECT autocdc.create_flow('s2_none_b', 's2_none_feed', '{id}', 'seq', stored_as_scd_type => '2',
						   track_history_except_column_list => '{v, seq}', continuous => false);
INSERT INTO s2_none_feed VALUES (1, 'a', 5), (1, 'b', 10);
SELECT num_events FROM autocdc.run_flow('s2_none_a');
SELECT num_events FROM autocdc.run_flow('s2_none_b');
SELECT * FROM s2_none_a;
SELECT * FROM s2_none_b;
-- a late event inside the version changes its values only if it is the latest
INSERT INTO s2_none_feed VALUES (1, 'c', 7), (1, NULL, 3);
SELECT num_events FROM autocdc.run_flow('s2_none_a');
SELECT * FROM s2_none_a;
-- the catalog keeps the names it was given exactly (image-equal name values)
SELECT bool_and(a *= b) AS keys_exact
  FROM (SELECT k FROM autocdc.target t, unnest(t.keys) k WHERE t.relid = 's2_none_a'::regclass) a,
	   (SELECT 'id'::name AS k) b;
SELECT autocdc.drop_flow('s2_none_a', true), autocdc.drop_flow('s2_none_b', true);
DROP TABLE s2_none_feed;

---------------------------------------------------------------------------
-- §4 Partial updates, SCD type 2: walking a key's events, an upsert's
-- unwritten columns (NULLs in a column that ignores them) are first filled
-- from the version open at that point (NULL when none); the filled row is
-- what tracking compares and what the version stores.  Events arrive late.
---------------------------------------------------------------------------
CREATE TABLE s2_part_feed (id int, a text, b text, op text, seq int);
SELECT autocdc.create_flow('s2_part_on', 's2_part_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq}', stored_as_scd_type => '2',
	ignore_null_updates_column_list => '{a}', continuous => false);
SELECT autocdc.create_flow('s2_part_except', 's2_part_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq}', stored_as_scd_type => '2',
	ignore_null_updates_except_column_list => '{a}', continuous => false);
SELECT * FROM autocdc.run_flow('s2_part_on');
SELECT * FROM autocdc.run_flow('s2_part_except');
INSERT INTO s2_part_feed VALUES (1, 'a3', NULL, NULL, 30), (2, NULL, 'y', NULL, 10);
SELECT * FROM autocdc.run_flow('s2_part_on');
SELECT * FROM autocdc.run_flow('s2_part_except');
INSERT INTO s2_part_feed VALUES (1, 'a1', 'b1', NULL, 10), (1, NULL, NULL, NULL, 20),
	(2, NULL, NULL, 'D', 20), (2, NULL, 'c', NULL, 30);
SELECT * FROM autocdc.run_flow('s2_part_on');
SELECT * FROM autocdc.run_flow('s2_part_except');
-- on (a): 1 (a1, b1, 10, 20), (a1, null, 20, 30), (a3, null, 30, null);
-- 2 (null, y, 10, 20), (null, c, 30, null)
SELECT * FROM s2_part_on ORDER BY id, __start_at;
-- except (a): 1 (a1, b1, 10, 20), (null, b1, 20, 30), (a3, b1, 30, null);
-- 2 (null, y, 10, 20), (null, c, 30, null) (nothing to fill from after the delete)
SELECT * FROM s2_part_except ORDER BY id, __start_at;
SELECT autocdc.drop_flow('s2_part_on', true), autocdc.drop_flow('s2_part_except', true);
DROP TABLE s2_part_feed;

---------------------------------------------------------------------------
-- §4 Partial updates, SCD type 2 with columns_to_update (a name[] column):
-- the columns an upsert does not write are filled from the version open at
-- that point (NULL when none); the filled row is what tracking compares.
---------------------------------------------------------------------------
CREATE TABLE s2_ctu_feed (id int, a text, b text, op text, seq int, upd name[]);
SELECT autocdc.create_flow('s2_ctu', 's2_ctu_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq,upd}', stored_as_scd_type => '2',
	columns_to_update => 'upd', continuous => false);
INSERT INTO s2_ctu_feed VALUES (1, NULL, 'b1', NULL, 10, '{b}'), (1, NULL, NULL, NULL, 30, '{b}');
SELECT * FROM autocdc.run_flow('s2_ctu');
-- (null, b1, 10, 30), (null, null, 30, null)
SELECT * FROM s2_ctu ORDER BY id, __start_at;
-- late: a2 at 20 (b filled to b1) opens a version; the upsert at 30 now
-- fills a from it: (null, b1, 10, 20), (a2, b1, 20, 30), (a2, null, 30, null)
INSERT INTO s2_ctu_feed VALUES (1, 'a2', 'zz', NULL, 20, '{a}');
SELECT * FROM autocdc.run_flow('s2_ctu');
SELECT * FROM s2_ctu ORDER BY id, __start_at;
-- an empty list writes nothing: the filled row equals the open version
INSERT INTO s2_ctu_feed VALUES (1, 'q', 'q', NULL, 25, '{}');
SELECT * FROM autocdc.run_flow('s2_ctu');
SELECT * FROM s2_ctu ORDER BY id, __start_at;
SELECT autocdc.drop_flow('s2_ctu', true);
DROP TABLE s2_ctu_feed;
