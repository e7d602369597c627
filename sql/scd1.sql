--
-- scd1: the SCD type 1 rules of semantics §4, one section per rule.
-- Every flow is continuous => false (only our run_flow calls apply it) and
-- makes its first, empty run before its events arrive, so events are read
-- from the WAL in arrival (commit, then insertion) order.  Each run_flow is
-- its own autocommit statement.  Result lines: (num_events, num_upserted_rows,
-- num_deleted_rows, num_skipped_events).
--
\pset null '(null)'

---------------------------------------------------------------------------
-- §4 "The result of a flow is defined by a fold ... in (sequence, arrival)
-- order ... whatever the arrival order, however the events were split into
-- runs": out-of-order events; the highest sequence wins.
---------------------------------------------------------------------------
CREATE TABLE s1_ooo_feed (id int, v text, op text, seq int);
SELECT autocdc.create_flow('s1_ooo', 's1_ooo_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq}', continuous => false);
SELECT * FROM autocdc.run_flow('s1_ooo');
-- one run, events out of order: expected 6,2,0 and (1, c), (2, z)
INSERT INTO s1_ooo_feed VALUES (1, 'c', NULL, 3), (1, 'a', NULL, 1), (1, 'b', NULL, 2),
	(2, 'y', NULL, 20), (2, 'z', NULL, 30), (2, 'x', NULL, 10);
SELECT * FROM autocdc.run_flow('s1_ooo');
SELECT * FROM s1_ooo ORDER BY id;
-- one event per run: 30 (1,1,0), then 10 and 20 are older (1,0,0 each), 40 wins (1,1,0)
INSERT INTO s1_ooo_feed VALUES (3, 'm', NULL, 30);
SELECT * FROM autocdc.run_flow('s1_ooo');
INSERT INTO s1_ooo_feed VALUES (3, 'k', NULL, 10);
SELECT * FROM autocdc.run_flow('s1_ooo');
INSERT INTO s1_ooo_feed VALUES (3, 'l', NULL, 20);
SELECT * FROM autocdc.run_flow('s1_ooo');
SELECT * FROM s1_ooo ORDER BY id;     -- (1, c), (2, z), (3, m)
INSERT INTO s1_ooo_feed VALUES (3, 'n', NULL, 40);
SELECT * FROM autocdc.run_flow('s1_ooo');
SELECT * FROM s1_ooo ORDER BY id;     -- (1, c), (2, z), (3, n)

---------------------------------------------------------------------------
-- §4 "Ties are settled first. Of several events of one key with equal
-- sequence (truncates included) only the last-arriving exists" -- §1 arrival
-- order: commit order, then statement by statement, then row order; this
-- holds across runs too.
---------------------------------------------------------------------------
CREATE TABLE s1_tie_feed (id int, v text, op text, seq int);
SELECT autocdc.create_flow('s1_tie', 's1_tie_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq}', continuous => false);
SELECT * FROM autocdc.run_flow('s1_tie');
-- key 1: two rows of one statement; key 2: two statements of one transaction;
-- key 3: two transactions; key 4: an upsert then a delete at one sequence.
-- expected 8,3,0: (1, b), (2, b), (3, b); 4 absent
INSERT INTO s1_tie_feed VALUES (1, 'a', NULL, 5), (1, 'b', NULL, 5);
BEGIN;
INSERT INTO s1_tie_feed VALUES (2, 'a', NULL, 5);
INSERT INTO s1_tie_feed VALUES (2, 'b', NULL, 5);
COMMIT;
INSERT INTO s1_tie_feed VALUES (3, 'a', NULL, 5);
INSERT INTO s1_tie_feed VALUES (3, 'b', NULL, 5);
INSERT INTO s1_tie_feed VALUES (4, 'a', NULL, 5), (4, NULL, 'D', 5);
SELECT * FROM autocdc.run_flow('s1_tie');
SELECT * FROM s1_tie ORDER BY id;
-- across runs, key 1 at sequence 5 again:
-- 'c' arrives last: (1,1,0) -> c
INSERT INTO s1_tie_feed VALUES (1, 'c', NULL, 5);
SELECT * FROM autocdc.run_flow('s1_tie');
SELECT * FROM s1_tie WHERE id = 1;
-- the same event again: nothing changes (1,0,0)
INSERT INTO s1_tie_feed VALUES (1, 'c', NULL, 5);
SELECT * FROM autocdc.run_flow('s1_tie');
-- a delete at 5 arrives last: 1 removed (1,0,1)
INSERT INTO s1_tie_feed VALUES (1, NULL, 'D', 5);
SELECT * FROM autocdc.run_flow('s1_tie');
SELECT * FROM s1_tie WHERE id = 1;
-- an upsert at 5 arrives last: 1 back with d (1,1,0); key 4 likewise (1,1,0)
INSERT INTO s1_tie_feed VALUES (1, 'd', NULL, 5);
SELECT * FROM autocdc.run_flow('s1_tie');
INSERT INTO s1_tie_feed VALUES (4, 'e', NULL, 5);
SELECT * FROM autocdc.run_flow('s1_tie');
SELECT * FROM s1_tie ORDER BY id;     -- (1, d), (2, b), (3, b), (4, e)

---------------------------------------------------------------------------
-- §4 SCD type 1: "Its columns are that upsert's" -- the last upsert's values
-- as it carried them, also when they are equal to the stored ones under the
-- type's equality (numeric 1.0 = 1.00) but print differently; the result may
-- not depend on arrival order.  (Metrics are not asserted here.)
---------------------------------------------------------------------------
CREATE TABLE s1_rep_feed1 (id int, n numeric, seq int);
CREATE TABLE s1_rep_feed2 (LIKE s1_rep_feed1);
SELECT autocdc.create_flow('s1_rep_inorder', 's1_rep_feed1', '{id}', sequence_by => 'seq',
	except_column_list => '{seq}', continuous => false);
SELECT autocdc.create_flow('s1_rep_reverse', 's1_rep_feed2', '{id}', sequence_by => 'seq',
	except_column_list => '{seq}', continuous => false);
SELECT * FROM autocdc.run_flow('s1_rep_inorder');
SELECT * FROM autocdc.run_flow('s1_rep_reverse');
INSERT INTO s1_rep_feed1 VALUES (1, 1.0, 10);
INSERT INTO s1_rep_feed2 VALUES (1, 1.00, 20);
SELECT * FROM autocdc.run_flow('s1_rep_inorder');     -- 1,1,0
SELECT * FROM autocdc.run_flow('s1_rep_reverse');     -- 1,1,0
INSERT INTO s1_rep_feed1 VALUES (1, 1.00, 20);
INSERT INTO s1_rep_feed2 VALUES (1, 1.0, 10);
SELECT num_events FROM autocdc.run_flow('s1_rep_inorder');
SELECT num_events FROM autocdc.run_flow('s1_rep_reverse');
-- both: (1, 1.00), the upsert at 20
SELECT 'inorder' AS flow, * FROM s1_rep_inorder UNION ALL SELECT 'reverse', * FROM s1_rep_reverse ORDER BY 1;

---------------------------------------------------------------------------
-- Keys are compared by their type's equality, also where equal values are
-- stored differently (float8 0 and -0, numeric 1.0 and 1.00): one key, one
-- row, within a batch and across batches.
---------------------------------------------------------------------------
CREATE TABLE s1_keq_feed (f float8, n numeric, v text, seq int);
SELECT autocdc.create_flow('s1_keq', 's1_keq_feed', '{f,n}', sequence_by => 'seq',
	except_column_list => '{seq}', continuous => false);
INSERT INTO s1_keq_feed VALUES (0, 1.0, 'a', 1), ('-0', 1.00, 'b', 2), (0, 2, 'c', 3);
SELECT num_events, num_upserted_rows FROM autocdc.run_flow('s1_keq');     -- 3,2
INSERT INTO s1_keq_feed VALUES ('-0', 1.000, 'd', 4);
SELECT num_events, num_upserted_rows FROM autocdc.run_flow('s1_keq');     -- 1,1
-- (-0, 1.000, d) and (0, 2, c)
SELECT f, n, v FROM s1_keq ORDER BY n;

---------------------------------------------------------------------------
-- §4 "Hidden state. Deletes and truncates must be remembered so that
-- later-arriving older events are judged right (a late update older than a
-- delete is discarded; a delete that arrives before the insert it closes
-- still closes it)"; SCD 1: "A key is present iff its last event (counting
-- truncates) is an upsert."
---------------------------------------------------------------------------
CREATE TABLE s1_del_feed (id int, v text, op text, seq int);
SELECT autocdc.create_flow('s1_del', 's1_del_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq}', continuous => false);
SELECT * FROM autocdc.run_flow('s1_del');
-- late update older than a delete: (1,1,0), (1,0,1), then (1,0,0) and 1 stays absent
INSERT INTO s1_del_feed VALUES (1, 'a', NULL, 10);
SELECT * FROM autocdc.run_flow('s1_del');
INSERT INTO s1_del_feed VALUES (1, NULL, 'D', 30);
SELECT * FROM autocdc.run_flow('s1_del');
INSERT INTO s1_del_feed VALUES (1, 'late', NULL, 20);
SELECT * FROM autocdc.run_flow('s1_del');
SELECT * FROM s1_del ORDER BY id;     -- empty
-- a delete arriving before the insert it closes: (1,0,0), (1,0,0); 2 absent
INSERT INTO s1_del_feed VALUES (2, NULL, 'D', 30);
SELECT * FROM autocdc.run_flow('s1_del');
INSERT INTO s1_del_feed VALUES (2, 'early', NULL, 20);
SELECT * FROM autocdc.run_flow('s1_del');
SELECT * FROM s1_del ORDER BY id;     -- empty
-- the same within one run, delete first: (2,0,0); 5 absent
INSERT INTO s1_del_feed VALUES (5, NULL, 'D', 50), (5, 'v', NULL, 45);
SELECT * FROM autocdc.run_flow('s1_del');
-- a delete's non-key values are ignored; a delete of a never-seen key leaves no row (1,0,0)
INSERT INTO s1_del_feed VALUES (3, 'ignored', 'D', 5);
SELECT * FROM autocdc.run_flow('s1_del');
SELECT * FROM s1_del ORDER BY id;     -- empty
-- an upsert newer than a tombstone re-inserts the key: (2,2,0) -> (1, again), (2, new)
INSERT INTO s1_del_feed VALUES (1, 'again', NULL, 35), (2, 'new', NULL, 40);
SELECT * FROM autocdc.run_flow('s1_del');
SELECT * FROM s1_del ORDER BY id;
-- ... and older events still lose against it and the tombstone: (3,0,0)
INSERT INTO s1_del_feed VALUES (1, 'old', NULL, 31), (2, 'old', NULL, 39), (3, 'old', NULL, 4);
SELECT * FROM autocdc.run_flow('s1_del');
SELECT * FROM s1_del ORDER BY id;     -- (1, again), (2, new)

---------------------------------------------------------------------------
-- §4 "Truncates. A truncate at sequence t is, for every key -- also keys
-- first seen later -- a delete of that key at t, with the truncate's arrival
-- position. Its key and other columns are ignored."  §4 Classification: "a
-- row is a truncate if the truncate expression is true; else a delete".
-- Here the delete condition is also true on truncate rows: they must still be
-- truncates (a truncate row has a NULL key, which a delete may not have).
---------------------------------------------------------------------------
CREATE TABLE s1_tr_feed (id int, v text, op text, seq int);
SELECT autocdc.create_flow('s1_tr', 's1_tr_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op IN ('D', 'T')$$, apply_as_truncates => $$op = 'T'$$,
	except_column_list => '{op,seq}', continuous => false);
SELECT * FROM autocdc.run_flow('s1_tr');
INSERT INTO s1_tr_feed VALUES (1, 'a', NULL, 1), (2, 'b', NULL, 5), (3, 'c', NULL, 3);
SELECT * FROM autocdc.run_flow('s1_tr');     -- 3,3,0
-- a truncate with a NULL key at 3: removes 1 (at 1) and 3 (at 3, the truncate
-- arrived later: tie won by the truncate); 2 (at 5) stays.  1,0,2
INSERT INTO s1_tr_feed VALUES (NULL, NULL, 'T', 3);
SELECT * FROM autocdc.run_flow('s1_tr');
SELECT * FROM s1_tr ORDER BY id;     -- (2, b)
-- keys first seen later: 4 at 2 is older than the truncate (discarded), 5 at 4
-- is newer, 6 at 3 ties with it and arrives later (wins).  3,2,0
INSERT INTO s1_tr_feed VALUES (4, 'd', NULL, 2), (5, 'e', NULL, 4), (6, 'f', NULL, 3);
SELECT * FROM autocdc.run_flow('s1_tr');
SELECT * FROM s1_tr ORDER BY id;     -- (2, b), (5, e), (6, f)
-- a truncate row carrying a key and values: they are ignored (no upsert of 2);
-- every key is deleted at 6.  1,0,3
INSERT INTO s1_tr_feed VALUES (2, 'zzz', 'T', 6);
SELECT * FROM autocdc.run_flow('s1_tr');
SELECT * FROM s1_tr ORDER BY id;     -- empty
-- after it: 7 at 6 arrives later than the truncate (present), 8 at 5 is older
-- (discarded), 2 at 7 is newer (present).  3,2,0
INSERT INTO s1_tr_feed VALUES (7, 'g', NULL, 6), (8, 'h', NULL, 5), (2, 'late', NULL, 7);
SELECT * FROM autocdc.run_flow('s1_tr');
SELECT * FROM s1_tr ORDER BY id;     -- (2, late), (7, g)
-- a late truncate at 4 changes nothing visible (everything is newer); an
-- event at 4 for a new key is older than the truncate at 6.  2,0,0
INSERT INTO s1_tr_feed VALUES (NULL, NULL, 'T', 4), (9, 'i', NULL, 4);
SELECT * FROM autocdc.run_flow('s1_tr');
SELECT * FROM s1_tr ORDER BY id;     -- (2, late), (7, g)

---------------------------------------------------------------------------
-- §4 Classification: "NULL counts as false" (for both conditions).
---------------------------------------------------------------------------
CREATE TABLE s1_null_feed (id int, v text, op text, flag boolean, seq int);
SELECT autocdc.create_flow('s1_null', 's1_null_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, apply_as_truncates => 'flag',
	except_column_list => '{op,flag,seq}', continuous => false);
SELECT * FROM autocdc.run_flow('s1_null');
-- op NULL and flag NULL: upserts; flag false: upsert; op 'D' with flag NULL: delete.
-- expected 5,2,0: (1, b), (3, c); 2 absent
INSERT INTO s1_null_feed VALUES (1, 'a', NULL, NULL, 1), (1, 'b', NULL, NULL, 2),
	(2, 'x', NULL, NULL, 1), (2, NULL, 'D', NULL, 2), (3, 'c', 'X', false, 1);
SELECT * FROM autocdc.run_flow('s1_null');
SELECT * FROM s1_null ORDER BY id;

---------------------------------------------------------------------------
-- §4 Target / §3: column_list (include) and except_column_list (exclude);
-- the target shows exactly the selected columns, in source order whatever the
-- order of column_list; the conditions still see unselected columns.
---------------------------------------------------------------------------
CREATE TABLE s1_cols_feed (id int, a text, b text, c text, op text, seq int);
SELECT autocdc.create_flow('s1_cols_incl', 's1_cols_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, column_list => '{c,id,a}', continuous => false);
SELECT autocdc.create_flow('s1_cols_excl', 's1_cols_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{b,op,seq}', continuous => false);
SELECT autocdc.create_flow('s1_cols_all', 's1_cols_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, continuous => false);
SELECT attrelid::regclass AS target, attnum, attname, format_type(atttypid, atttypmod) AS type
  FROM pg_attribute
 WHERE attrelid IN ('s1_cols_incl'::regclass, 's1_cols_excl'::regclass, 's1_cols_all'::regclass)
   AND attnum > 0 AND NOT attisdropped
 ORDER BY attrelid::regclass::text, attnum;
SELECT * FROM autocdc.run_flow('s1_cols_incl');
SELECT * FROM autocdc.run_flow('s1_cols_excl');
SELECT * FROM autocdc.run_flow('s1_cols_all');
INSERT INTO s1_cols_feed VALUES (1, 'a1', 'b1', 'c1', 'U', 1), (2, 'a2', 'b2', 'c2', 'U', 1),
	(2, 'a2', 'b2', 'c2', 'D', 2), (1, 'a3', 'b3', NULL, 'U', 3);
SELECT * FROM autocdc.run_flow('s1_cols_incl');     -- 4,1,0
SELECT * FROM autocdc.run_flow('s1_cols_excl');     -- 4,1,0
SELECT * FROM autocdc.run_flow('s1_cols_all');      -- 4,1,0
SELECT * FROM s1_cols_incl ORDER BY id;     -- (1, a3, null)
SELECT * FROM s1_cols_excl ORDER BY id;     -- (1, a3, null)
SELECT * FROM s1_cols_all ORDER BY id;      -- (1, a3, b3, null, U, 3)

---------------------------------------------------------------------------
-- §4 SCD type 1 with ignore_null_updates: "each non-key column instead holds
-- the value of the last upsert since the key's last delete/truncate that
-- carried a non-NULL value for it (NULL if none)" -- per column, independent
-- of arrival order and of the split into runs; an upsert after a delete starts
-- from NULLs; tie losers are ignored entirely (§4 Ties).
-- Two flows over the same events: s1_inu_batch gets them in sequence order in
-- one run, s1_inu_step in a scrambled order, one per run.
---------------------------------------------------------------------------
CREATE TABLE s1_inu_feed1 (id int, a text, b text, op text, seq int);
CREATE TABLE s1_inu_feed2 (LIKE s1_inu_feed1);
SELECT autocdc.create_flow('s1_inu_batch', 's1_inu_feed1', '{id}', sequence_by => 'seq',
	ignore_null_updates => true, apply_as_deletes => $$op = 'D'$$,
	except_column_list => '{op,seq}', continuous => false);
SELECT autocdc.create_flow('s1_inu_step', 's1_inu_feed2', '{id}', sequence_by => 'seq',
	ignore_null_updates => true, apply_as_deletes => $$op = 'D'$$,
	except_column_list => '{op,seq}', continuous => false);
SELECT * FROM autocdc.run_flow('s1_inu_batch');
SELECT * FROM autocdc.run_flow('s1_inu_step');
-- expected: 1 (a3, b2); 2 (null, b3) (the delete at 20 forgets a1/a15);
-- 3 (a1, null); 4 (a10, b20x) (at 20 only the later arrival exists).  14,4,0
INSERT INTO s1_inu_feed1 VALUES
	(1, 'a1', 'b1', NULL, 10), (1, NULL, 'b15', NULL, 15), (1, NULL, 'b2', NULL, 20),
	(1, 'a25', NULL, NULL, 25), (1, 'a3', NULL, NULL, 30),
	(2, 'a1', 'b1', NULL, 10), (2, 'a15', NULL, NULL, 15), (2, NULL, NULL, 'D', 20),
	(2, NULL, 'b3', NULL, 30),
	(3, 'a1', NULL, NULL, 10), (3, NULL, NULL, NULL, 20),
	(4, 'a10', 'b10', NULL, 10), (4, 'a20', 'b20', NULL, 20), (4, NULL, 'b20x', NULL, 20);
SELECT * FROM autocdc.run_flow('s1_inu_batch');
SELECT * FROM s1_inu_batch ORDER BY id;
-- step by step; expected result of each run and the row after it:
INSERT INTO s1_inu_feed2 VALUES (2, NULL, 'b3', NULL, 30);
SELECT * FROM autocdc.run_flow('s1_inu_step');     -- 1,1,0  2: (null, b3)
INSERT INTO s1_inu_feed2 VALUES (1, 'a25', NULL, NULL, 25);
SELECT * FROM autocdc.run_flow('s1_inu_step');     -- 1,1,0  1: (a25, null)
INSERT INTO s1_inu_feed2 VALUES (3, NULL, NULL, NULL, 20);
SELECT * FROM autocdc.run_flow('s1_inu_step');     -- 1,1,0  3: (null, null)
INSERT INTO s1_inu_feed2 VALUES (2, 'a15', NULL, NULL, 15);
SELECT * FROM autocdc.run_flow('s1_inu_step');     -- 1,1,0  2: (a15, b3)
INSERT INTO s1_inu_feed2 VALUES (1, NULL, 'b2', NULL, 20);
SELECT * FROM autocdc.run_flow('s1_inu_step');     -- 1,1,0  1: (a25, b2)
INSERT INTO s1_inu_feed2 VALUES (2, NULL, NULL, 'D', 20);
SELECT * FROM autocdc.run_flow('s1_inu_step');     -- 1,1,0  2: (null, b3)
SELECT * FROM s1_inu_step ORDER BY id;
INSERT INTO s1_inu_feed2 VALUES (1, 'a3', NULL, NULL, 30);
SELECT * FROM autocdc.run_flow('s1_inu_step');     -- 1,1,0  1: (a3, b2)
INSERT INTO s1_inu_feed2 VALUES (3, 'a1', NULL, NULL, 10);
SELECT * FROM autocdc.run_flow('s1_inu_step');     -- 1,1,0  3: (a1, null)
INSERT INTO s1_inu_feed2 VALUES (1, 'a1', 'b1', NULL, 10);
SELECT * FROM autocdc.run_flow('s1_inu_step');     -- 1,0,0
INSERT INTO s1_inu_feed2 VALUES (1, NULL, 'b15', NULL, 15);
SELECT * FROM autocdc.run_flow('s1_inu_step');     -- 1,0,0
INSERT INTO s1_inu_feed2 VALUES (2, 'a1', 'b1', NULL, 10);
SELECT * FROM autocdc.run_flow('s1_inu_step');     -- 1,0,0
INSERT INTO s1_inu_feed2 VALUES (4, 'a20', 'b20', NULL, 20);
SELECT * FROM autocdc.run_flow('s1_inu_step');     -- 1,1,0  4: (a20, b20)
INSERT INTO s1_inu_feed2 VALUES (4, 'a10', 'b10', NULL, 10);
SELECT * FROM autocdc.run_flow('s1_inu_step');     -- 1,0,0
INSERT INTO s1_inu_feed2 VALUES (4, NULL, 'b20x', NULL, 20);
SELECT * FROM autocdc.run_flow('s1_inu_step');     -- 1,1,0  4: (a10, b20x)
SELECT * FROM s1_inu_step ORDER BY id;
-- both flows agree (no row printed)
(SELECT * FROM s1_inu_batch EXCEPT SELECT * FROM s1_inu_step)
UNION ALL (SELECT * FROM s1_inu_step EXCEPT SELECT * FROM s1_inu_batch);
-- truncates also reset: 1 (null, c), 2 (x, y), 3 (null, r).  7,3,0
CREATE TABLE s1_inu_tr_feed (id int, a text, b text, op text, seq int);
SELECT autocdc.create_flow('s1_inu_tr', 's1_inu_tr_feed', '{id}', sequence_by => 'seq',
	ignore_null_updates => true, apply_as_truncates => $$op = 'T'$$,
	except_column_list => '{op,seq}', continuous => false);
SELECT * FROM autocdc.run_flow('s1_inu_tr');
INSERT INTO s1_inu_tr_feed VALUES (1, 'a', 'b', NULL, 10), (NULL, NULL, NULL, 'T', 20),
	(1, NULL, 'c', NULL, 30), (2, 'x', NULL, NULL, 25), (2, NULL, 'y', NULL, 26),
	(3, 'p', 'q', NULL, 5), (3, NULL, 'r', NULL, 30);
SELECT * FROM autocdc.run_flow('s1_inu_tr');
SELECT * FROM s1_inu_tr ORDER BY id;

---------------------------------------------------------------------------
-- §1 sequence: "Multi-column ordering: ROW(a, b, ...) compares field by
-- field, each with its type's default btree order".
---------------------------------------------------------------------------
CREATE TABLE s1_row_feed (id int, v text, major int, minor int, op text);
SELECT autocdc.create_flow('s1_row', 's1_row_feed', '{id}', sequence_by => 'ROW(major, minor)',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{major,minor,op}', continuous => false);
SELECT attname, format_type(atttypid, atttypmod) AS type FROM pg_attribute
 WHERE attrelid = 's1_row'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
SELECT * FROM autocdc.run_flow('s1_row');
-- key 1: (0,99) < (1,9) < (1,10) -> x (as text "(1,10)" < "(1,9)" would give y)
-- key 2: (9,5) < (10,0) -> p (as text "(10,0)" < "(9,5)" would give q)
-- key 3: delete at (1,5); an upsert at (1,4) is older -> absent
-- key 4: tie at (1,1), last arrival b; key 5 at (2,2).   expected 10,4,0
INSERT INTO s1_row_feed VALUES
	(1, 'x', 1, 10, NULL), (1, 'y', 1, 9, NULL), (1, 'z', 0, 99, NULL),
	(2, 'p', 10, 0, NULL), (2, 'q', 9, 5, NULL),
	(3, NULL, 1, 5, 'D'), (3, 'old', 1, 4, NULL),
	(4, 'a', 1, 1, NULL), (4, 'b', 1, 1, NULL), (5, 'e', 2, 2, NULL);
SELECT * FROM autocdc.run_flow('s1_row');
SELECT * FROM s1_row ORDER BY id;     -- (1, x), (2, p), (4, b), (5, e)
-- next run: (1,11) newer than (1,10); (1,2) older; (1,6) newer than the delete
-- at (1,5); (1,99) older than key 5's (2,2).  4,2,0
INSERT INTO s1_row_feed VALUES (1, 'w', 1, 11, NULL), (2, 'old', 1, 2, NULL),
	(3, 'back', 1, 6, NULL), (5, 'old', 1, 99, NULL);
SELECT * FROM autocdc.run_flow('s1_row');
SELECT * FROM s1_row ORDER BY id;     -- (1, w), (2, p), (3, back), (4, b), (5, e)

---------------------------------------------------------------------------
-- §3 once: "read the source once as a batch; again only on full refresh".
-- The source is an ordinary table read under the first run's snapshot.
---------------------------------------------------------------------------
CREATE TABLE s1_once_src (id int, v text, seq int);
INSERT INTO s1_once_src VALUES (1, 'a', 1), (2, 'b', 1);
SELECT autocdc.create_flow('s1_once', 's1_once_src', '{id}', sequence_by => 'seq',
	except_column_list => '{seq}', once => true, continuous => false);
INSERT INTO s1_once_src VALUES (3, 'c', 1);
-- the first run reads what the table holds now: 3,3,0
SELECT * FROM autocdc.run_flow('s1_once');
SELECT * FROM s1_once ORDER BY id;     -- (1, a), (2, b), (3, c)
-- later inserts are never read: 0,0,0 twice
INSERT INTO s1_once_src VALUES (4, 'd', 1), (1, 'newer', 2);
SELECT * FROM autocdc.run_flow('s1_once');
SELECT * FROM autocdc.run_flow('s1_once');
SELECT * FROM s1_once ORDER BY id;     -- (1, a), (2, b), (3, c)

---------------------------------------------------------------------------
-- §5 "Several flows may write one target ... (for example a once backfill
-- plus a change flow); sequencing decides between them; the target's hidden
-- state is shared".  The change flow runs first; the backfill's rows are then
-- judged against its events and tombstones.
---------------------------------------------------------------------------
CREATE TABLE s1_two_chg (id int, v text, op text, seq int);
CREATE TABLE s1_two_bf (id int, v text, seq int);
INSERT INTO s1_two_bf VALUES (1, 'bf1', 5), (2, 'bf2', 5), (3, 'bf3', 6), (4, 'bf4', 5);
SELECT autocdc.create_flow('s1_two', 's1_two_chg', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq}',
	name => 's1_two_changes', continuous => false);
SELECT autocdc.create_flow('s1_two', 's1_two_bf', '{id}', sequence_by => 'seq',
	except_column_list => '{seq}', once => true, name => 's1_two_backfill', continuous => false);
SELECT name, target, scd_type FROM autocdc.flows WHERE name LIKE 's1_two%' ORDER BY name;
SELECT * FROM autocdc.run_flow('s1_two_changes');
INSERT INTO s1_two_chg VALUES (1, 'new1', NULL, 7), (2, 'old2', NULL, 3), (3, NULL, 'D', 4),
	(4, NULL, 'D', 8), (5, 'c5', NULL, 1);
SELECT * FROM autocdc.run_flow('s1_two_changes');     -- 5,3,0
SELECT * FROM s1_two ORDER BY id;     -- (1, new1), (2, old2), (5, c5)
-- backfill: 1 at 5 < 7 loses; 2 at 5 > 3 wins; 3 at 6 > delete at 4 wins;
-- 4 at 5 < delete at 8 loses.  4,2,0
SELECT * FROM autocdc.run_flow('s1_two_backfill');
SELECT * FROM s1_two ORDER BY id;     -- (1, new1), (2, bf2), (3, bf3), (5, c5)
-- later change events are still judged against the backfilled rows:
-- 2 at 4 < 5 loses; 3 at 7 wins.  2,1,0
INSERT INTO s1_two_chg VALUES (2, 'old2b', NULL, 4), (3, 'chg3', NULL, 7);
SELECT * FROM autocdc.run_flow('s1_two_changes');
SELECT * FROM s1_two ORDER BY id;     -- (1, new1), (2, bf2), (3, chg3), (5, c5)

---------------------------------------------------------------------------
-- §4 Metrics: "num_upserted_rows = identities inserted plus identities whose
-- values changed; num_deleted_rows = identities removed ...; unchanged rows
-- count nothing. num_events = source rows the run read, tie losers and
-- truncates included."  Totals in autocdc.flows are cumulative.
---------------------------------------------------------------------------
CREATE TABLE s1_met_feed (id int, v text, op text, seq int);
SELECT autocdc.create_flow('s1_met', 's1_met_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, apply_as_truncates => $$op = 'T'$$,
	except_column_list => '{op,seq}', continuous => false);
SELECT * FROM autocdc.run_flow('s1_met');     -- 0,0,0
INSERT INTO s1_met_feed VALUES (1, 'a', NULL, 1), (2, 'b', NULL, 1), (3, 'c', NULL, 1);
SELECT * FROM autocdc.run_flow('s1_met');     -- 3,3,0
-- the same event again: 1,0,0
INSERT INTO s1_met_feed VALUES (1, 'a', NULL, 1);
SELECT * FROM autocdc.run_flow('s1_met');
-- a change and its revert within one run: the row ends unchanged. 2,0,0
INSERT INTO s1_met_feed VALUES (2, 'x', NULL, 2), (2, 'b', NULL, 3);
SELECT * FROM autocdc.run_flow('s1_met');
-- a newer event with the same values: unchanged. 1,0,0
INSERT INTO s1_met_feed VALUES (3, 'c', NULL, 9);
SELECT * FROM autocdc.run_flow('s1_met');
-- a tie loser counts as an event: 2,1,0
INSERT INTO s1_met_feed VALUES (1, 'l', NULL, 5), (1, 'w', NULL, 5);
SELECT * FROM autocdc.run_flow('s1_met');
-- an insert then a delete of a new key in one run, a delete of an absent key,
-- a late (discarded) event: 4,0,0
INSERT INTO s1_met_feed VALUES (7, 'n', NULL, 1), (7, NULL, 'D', 2), (8, NULL, 'D', 1), (1, 'late', NULL, 2);
SELECT * FROM autocdc.run_flow('s1_met');
SELECT * FROM s1_met ORDER BY id;     -- (1, w), (2, b), (3, c)
-- a truncate counts as an event and removes three rows: 1,0,3
INSERT INTO s1_met_feed VALUES (NULL, NULL, 'T', 100);
SELECT * FROM autocdc.run_flow('s1_met');
-- nothing new: 0,0,0
SELECT * FROM autocdc.run_flow('s1_met');
-- totals: events 14, upserted 4, deleted 3; one flow_runs row per run (9)
SELECT name, state, num_events, num_upserted_rows, num_deleted_rows, num_skipped_events
  FROM autocdc.flows WHERE name = 's1_met';
SELECT count(*) AS runs, sum(num_events) AS events, sum(num_upserted_rows) AS upserted,
       sum(num_deleted_rows) AS deleted
  FROM autocdc.flow_runs WHERE flow = 's1_met';

---------------------------------------------------------------------------
-- §4 Hidden state: "It is authoritative: a run rewrites the rows of every key
-- it touches to the fold's result, so user edits to the target last until a
-- flow next touches that key."
---------------------------------------------------------------------------
CREATE TABLE s1_auth_feed (id int, v text, op text, seq int);
SELECT autocdc.create_flow('s1_auth', 's1_auth_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq}', continuous => false);
SELECT * FROM autocdc.run_flow('s1_auth');
INSERT INTO s1_auth_feed VALUES (1, 'a', NULL, 1), (2, 'b', NULL, 1), (3, 'c', NULL, 1);
SELECT * FROM autocdc.run_flow('s1_auth');     -- 3,3,0
-- user edits
UPDATE s1_auth SET v = 'hacked' WHERE id IN (1, 2);
DELETE FROM s1_auth WHERE id = 3;
INSERT INTO s1_auth VALUES (4, 'user4'), (5, 'user5');
-- an event for key 2 only: 2 rewritten, the other edits stay.  1,1,0
INSERT INTO s1_auth_feed VALUES (2, 'b2', NULL, 2);
SELECT * FROM autocdc.run_flow('s1_auth');
SELECT * FROM s1_auth ORDER BY id;     -- (1, hacked), (2, b2), (4, user4), (5, user5)
-- a late (losing) event still touches key 1: its row is rewritten to the fold's
-- result (a).  1,1,0
INSERT INTO s1_auth_feed VALUES (1, 'old', NULL, 0);
SELECT * FROM autocdc.run_flow('s1_auth');
-- a late delete touches key 3: the fold says present (c), so it comes back.  1,1,0
INSERT INTO s1_auth_feed VALUES (3, NULL, 'D', 0);
SELECT * FROM autocdc.run_flow('s1_auth');
-- key 4 first seen by the flow: its upsert replaces the user's row (1,1,0);
-- a delete of key 5 removes the user's row (1,0,1)
INSERT INTO s1_auth_feed VALUES (4, 'flow4', NULL, 1);
SELECT * FROM autocdc.run_flow('s1_auth');
INSERT INTO s1_auth_feed VALUES (5, NULL, 'D', 1);
SELECT * FROM autocdc.run_flow('s1_auth');
SELECT * FROM s1_auth ORDER BY id;     -- (1, a), (2, b2), (3, c), (4, flow4)
-- the same when the batch touches many keys beside a small target (more
-- than 20 per page of target and state: the run reads them whole instead of
-- joining them to the keys): edits of keys the batch does not touch stay.
-- Key 2 and 100 new keys touched; 101,101,0
UPDATE s1_auth SET v = 'hacked' WHERE id IN (1, 2);
DELETE FROM s1_auth WHERE id = 3;
INSERT INTO s1_auth VALUES (5, 'user5');
INSERT INTO s1_auth_feed SELECT g, 'n' || g, NULL, 1 FROM generate_series(100, 199) g;
INSERT INTO s1_auth_feed VALUES (2, 'b3', NULL, 3);
SELECT * FROM autocdc.run_flow('s1_auth');
SELECT * FROM s1_auth WHERE id < 100 ORDER BY id;     -- (1, hacked), (2, b3), (4, flow4), (5, user5)
SELECT count(*), min(v), max(v) FROM s1_auth WHERE id >= 100;     -- 100, n100, n199

---------------------------------------------------------------------------
-- §4 "Expressions (sequence_by, delete/truncate conditions) see the whole
-- source row, before column selection".
---------------------------------------------------------------------------
CREATE TABLE s1_expr_feed (id int, v text, kind text, hi int, lo int);
SELECT autocdc.create_flow('s1_expr', 's1_expr_feed', '{id}', sequence_by => 'hi * 1000 + lo',
	apply_as_deletes => $$lower(kind) = 'del'$$, apply_as_truncates => $$kind = 'TRUNC' AND hi < 0$$,
	column_list => '{id,v}', continuous => false);
SELECT attname FROM pg_attribute
 WHERE attrelid = 's1_expr'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
SELECT * FROM autocdc.run_flow('s1_expr');
-- 1: a at 1005, b at 999 (older), delete at 2000 -> absent; 2: x at 1; 3: y at 3000,
-- a TRUNC row with hi >= 0 is an upsert of key 3 at 4000 (z).  6,2,0
INSERT INTO s1_expr_feed VALUES (1, 'a', 'upd', 1, 5), (1, 'b', 'upd', 0, 999), (1, NULL, 'DEL', 2, 0),
	(2, 'x', 'upd', 0, 1), (3, 'y', 'upd', 3, 0), (3, 'z', 'TRUNC', 4, 0);
SELECT * FROM autocdc.run_flow('s1_expr');
SELECT * FROM s1_expr ORDER BY id;     -- (2, x), (3, z)

---------------------------------------------------------------------------
-- §4 Target: "selected source columns in source order (whatever the order of
-- column_list), each with its type, typmod and collation and its name
-- unchanged, no defaults or constraints besides the keys"; primary key =
-- keys (SCD 1); owned by the flow's creator.  §3: `ID` folds to id,
-- "MixedCase" keeps its case.
---------------------------------------------------------------------------
CREATE TABLE s1_shape_feed (
	id int NOT NULL DEFAULT 0,
	code varchar(10) NOT NULL,
	amount numeric(8,2) DEFAULT 1 CHECK (amount > 0),
	label text COLLATE "C",
	"MixedCase" text,
	ts timestamptz(3),
	tag char(3) UNIQUE,
	op text,
	seq bigint);
SELECT autocdc.create_flow('s1_shape', 's1_shape_feed', '{ID,code}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$,
	column_list => ARRAY['tag', '"MixedCase"', 'label', 'amount', 'code', 'ts', 'ID'],
	continuous => false);
SELECT a.attnum, a.attname, format_type(a.atttypid, a.atttypmod) AS type, co.collname,
       a.attnotnull, a.atthasdef
  FROM pg_attribute a LEFT JOIN pg_collation co ON co.oid = a.attcollation
 WHERE a.attrelid = 's1_shape'::regclass AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attnum;
SELECT c.contype,
       array(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k(n, o)
               JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o) AS columns
  FROM pg_constraint c WHERE c.conrelid = 's1_shape'::regclass
   AND c.contype <> 'n'     -- not-null constraints (18 lists them here): attnotnull above
 ORDER BY 1;
SELECT i.indisprimary, i.indisunique,
       array(SELECT a.attname FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(n, o)
               JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n ORDER BY k.o) AS columns,
       pg_get_expr(i.indpred, i.indrelid) AS predicate
  FROM pg_index i WHERE i.indrelid = 's1_shape'::regclass ORDER BY 1 DESC, 3;
SELECT c.relkind, c.relpersistence, pg_get_userbyid(c.relowner) = current_user AS owned_by_creator,
       c.relnamespace::regnamespace AS schema
  FROM pg_class c WHERE c.oid = 's1_shape'::regclass;
SELECT * FROM autocdc.run_flow('s1_shape');
INSERT INTO s1_shape_feed VALUES (1, 'k', 12.345, 'l', 'M', '2024-01-02 03:04:05.6789+00', 'ab', NULL, 1);
SELECT * FROM autocdc.run_flow('s1_shape');     -- 1,1,0
SET timezone = 'UTC';
SELECT * FROM s1_shape;     -- (1, k, 12.35, l, M, 2024-01-02 03:04:05.679+00, "ab ")
RESET timezone;
-- the key is (id, code): (1, j) is another key; deleting (1, k) leaves it.  2,1,1
INSERT INTO s1_shape_feed (id, code, label, seq) VALUES (1, 'j', 'other', 1);
INSERT INTO s1_shape_feed (id, code, op, seq) VALUES (1, 'k', 'D', 2);
SELECT * FROM autocdc.run_flow('s1_shape');
SELECT id, code, label FROM s1_shape ORDER BY id, code;     -- (1, j, other)

-- new keys are written in key order, whatever order they arrived in (their
-- rows then reach the btree indexes in order): the heap order of a fresh
-- target and of its hidden state is the key order
CREATE TABLE s1_ord_feed (id int, code text, v int, seq int);
SELECT autocdc.create_flow('s1_ord', 's1_ord_feed', '{id,code}', sequence_by => 'seq', continuous => false);
INSERT INTO s1_ord_feed SELECT (g * 37) % 101, CASE WHEN g % 2 = 0 THEN 'b' ELSE 'a' END, g, g
  FROM generate_series(1, 100) g;
SELECT num_upserted_rows FROM autocdc.run_flow('s1_ord');
SELECT count(*) AS out_of_order FROM (
  SELECT (id, code) < lag((id, code)) OVER (ORDER BY ctid) AS back FROM s1_ord) o WHERE back;
SELECT 'autocdc_state.target_' || t.id AS ord_state
  FROM autocdc.target t JOIN autocdc.flows f ON f.target = t.relid WHERE f.name = 's1_ord' \gset
SELECT count(*) AS state_out_of_order FROM (
  SELECT (id, code) < lag((id, code)) OVER (ORDER BY ctid) AS back FROM :ord_state) o WHERE back;

-- the same with one key column of a type whose ordering compares integers
-- (bigint, int, date, timestamp: sorted by an inline comparison), negative
-- values included
CREATE TABLE s1_ord1_feed (i8 bigint, i4 int, d date, ts timestamp, v int, seq int);
SELECT autocdc.create_flow('s1_ord_' || k, 's1_ord1_feed', ARRAY[k], sequence_by => 'seq',
	column_list => ARRAY[k, 'v'], continuous => false)
  FROM unnest('{i8,i4,d,ts}'::text[]) k;
INSERT INTO s1_ord1_feed
SELECT x * 100000000000, x, date '2000-01-01' + x * 1000, timestamp '2000-01-01' + x * interval '1 hour', g, g
  FROM generate_series(1, 100) g, LATERAL (SELECT (g * 37) % 101 - 50 AS x) x;
SELECT k, (SELECT num_upserted_rows FROM autocdc.run_flow('s1_ord_' || k))
  FROM unnest('{i8,i4,d,ts}'::text[]) k;
SELECT count(*) AS out_of_order FROM (
  SELECT i8 < lag(i8) OVER (ORDER BY ctid) AS back FROM s1_ord_i8 UNION ALL
  SELECT i4 < lag(i4) OVER (ORDER BY ctid) FROM s1_ord_i4 UNION ALL
  SELECT d < lag(d) OVER (ORDER BY ctid) FROM s1_ord_d UNION ALL
  SELECT ts < lag(ts) OVER (ORDER BY ctid) FROM s1_ord_ts) o WHERE back;

-- a run touching 1,000 keys or more of one integer column probes the target
-- and the hidden state only for the keys up to the greatest either holds
-- (the rest are new; test/t/177_fold_reads.pl reads which were probed for): a
-- tombstone beyond the target's greatest key still rejects a late update, a
-- key equal to the target's greatest is updated
CREATE TABLE s1_bnd_feed (id bigint, v text, op text, seq int);
SELECT autocdc.create_flow('s1_bnd', 's1_bnd_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq}', continuous => false);
INSERT INTO s1_bnd_feed SELECT g, 'a', NULL, 1 FROM generate_series(1, 10000) g;
INSERT INTO s1_bnd_feed VALUES (20000, 'a', NULL, 5), (20000, NULL, 'D', 7);
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('s1_bnd');
INSERT INTO s1_bnd_feed SELECT g, 'b', NULL, 10 FROM generate_series(1, 500) g;
INSERT INTO s1_bnd_feed SELECT g, 'new', NULL, 10 FROM generate_series(10001, 10600) g;
INSERT INTO s1_bnd_feed VALUES (10000, 'b', NULL, 10), (19999, 'new', NULL, 10),
	(20000, 'late', NULL, 6), (20001, 'new', NULL, 10), (3, NULL, 'D', 11);
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('s1_bnd');
SELECT v, count(*), min(id), max(id) FROM s1_bnd GROUP BY v ORDER BY v;
SELECT * FROM s1_bnd WHERE id IN (3, 10000, 19999, 20000, 20001) ORDER BY id;

-- keys named in another order than the columns, of different types, with
-- more touched keys than autocdc.work_mem holds (they are then gathered
-- through SQL, in the flow's key order): the target is the last event of
-- each key
CREATE TABLE s1_rev_feed (a int, b text, v text, seq int);
SELECT autocdc.create_flow('s1_rev', 's1_rev_feed', '{b,a}', 'seq', continuous => false);
SELECT * FROM autocdc.run_flow('s1_rev');
INSERT INTO s1_rev_feed SELECT g % 1000, 'k' || (g % 1000), 'v' || g, g FROM generate_series(1, 3000) g;
SET autocdc.work_mem = '64kB';
SELECT num_events, num_upserted_rows FROM autocdc.run_flow('s1_rev');
INSERT INTO s1_rev_feed SELECT g % 500, 'k' || (g % 500), 'w' || g, g FROM generate_series(3001, 4000) g;
SELECT num_events, num_upserted_rows FROM autocdc.run_flow('s1_rev');
RESET autocdc.work_mem;
SELECT count(*) AS rows, count(*) FILTER (WHERE v = CASE WHEN a < 500 THEN 'w' ELSE 'v' END
		   || (SELECT max(seq) FROM s1_rev_feed f WHERE f.a = t.a)) AS last_event_rows
  FROM s1_rev t;

---------------------------------------------------------------------------
-- §4 Partial updates, SCD type 1: with ignore_null_updates_column_list only
-- the listed columns ignore NULLs (an upsert writes every other column, NULL
-- included); with ignore_null_updates_except_column_list all but the listed
-- ones do.  Each non-key column holds the value of the last upsert since the
-- key's last delete that wrote it, whatever the arrival order and the split
-- into runs; tie losers are ignored.  The same events reach both flows, in
-- two runs, scrambled.
---------------------------------------------------------------------------
CREATE TABLE s1_part_feed (id int, a text, b text, c text, op text, seq int);
SELECT autocdc.create_flow('s1_part_on', 's1_part_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq}',
	ignore_null_updates_column_list => '{a}', continuous => false);
SELECT autocdc.create_flow('s1_part_except', 's1_part_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq}',
	ignore_null_updates_except_column_list => '{a}', continuous => false);
SELECT name, ignore_null_updates, ignore_null_updates_column_list, ignore_null_updates_except_column_list
  FROM autocdc.flow WHERE name LIKE 's1\_part\_%' ORDER BY name;
SELECT * FROM autocdc.run_flow('s1_part_on');
SELECT * FROM autocdc.run_flow('s1_part_except');
INSERT INTO s1_part_feed VALUES (1, 'a3', NULL, NULL, NULL, 30), (2, NULL, 'b3', NULL, NULL, 30),
	(3, 'p', NULL, NULL, NULL, 20), (1, NULL, NULL, 'c2', NULL, 20);
SELECT * FROM autocdc.run_flow('s1_part_on');
SELECT * FROM autocdc.run_flow('s1_part_except');
-- on (a): 1 (a3, null, null); 2 (null, b3, null); 3 (p, null, null)
SELECT * FROM s1_part_on ORDER BY id;
-- except (a): 1 (a3, null, c2); 2 (null, b3, null); 3 (p, null, null)
SELECT * FROM s1_part_except ORDER BY id;
INSERT INTO s1_part_feed VALUES (1, 'a1', 'b1', 'c1', NULL, 10), (2, 'a1', 'b1', NULL, NULL, 10),
	(2, NULL, NULL, NULL, 'D', 20), (3, 'a1', 'b1', 'c1', NULL, 10), (3, NULL, NULL, 'r', NULL, 20);
SELECT * FROM autocdc.run_flow('s1_part_on');
SELECT * FROM autocdc.run_flow('s1_part_except');
-- on (a): 1 (a3, null, null); 2 (null, b3, null) (the delete forgets a1);
-- 3 (a1, null, r) (the tie at 20 goes to the later arrival)
SELECT * FROM s1_part_on ORDER BY id;
-- except (a): 1 (a3, b1, c2); 2 (null, b3, null); 3 (null, b1, r)
SELECT * FROM s1_part_except ORDER BY id;
SELECT autocdc.drop_flow('s1_part_on', true), autocdc.drop_flow('s1_part_except', true);
DROP TABLE s1_part_feed;

---------------------------------------------------------------------------
-- §4 Partial updates, columns_to_update: an upsert writes exactly the
-- columns its list names (a text[] or name[] source column), NULL values
-- included; per column the last upsert in sequence order that wrote it
-- decides, whatever the arrival order.  A NULL list, or a name that is not a
-- selected non-key column, fails the run like a NULL sequence (skip_events
-- passes it).
---------------------------------------------------------------------------
CREATE TABLE s1_ctu_feed (id int, a text, b text, op text, seq int, upd text[]);
SELECT autocdc.create_flow('s1_ctu', 's1_ctu_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq,upd}',
	columns_to_update => 'upd', continuous => false);
-- the hidden state keeps each upsert's list
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = (SELECT c.oid FROM pg_class c JOIN autocdc.target t ON c.relname = 'target_' || t.id
					WHERE t.relid = 's1_ctu'::regclass)
   AND attname = '__autocdc_written';
INSERT INTO s1_ctu_feed VALUES (1, 'a1', 'b1', NULL, 10, '{a,b}'), (1, 'x', NULL, NULL, 20, '{b}'),
	(2, 'a', 'b', NULL, 10, '{}');
SELECT * FROM autocdc.run_flow('s1_ctu');
-- 1 (a1, null): the upsert at 20 writes b only, NULL included; 2 (null, null)
SELECT * FROM s1_ctu ORDER BY id;
-- late: a at 15 is the last write of a; b stays the NULL written at 20
INSERT INTO s1_ctu_feed VALUES (1, 'a15', 'b15', NULL, 15, '{a}');
SELECT * FROM autocdc.run_flow('s1_ctu');
SELECT * FROM s1_ctu ORDER BY id;
-- a delete forgets; a later upsert starts from NULLs.  2 (null, b3)
INSERT INTO s1_ctu_feed VALUES (2, NULL, NULL, 'D', 20, NULL), (2, 'a3', 'b3', NULL, 30, '{b}');
SELECT * FROM autocdc.run_flow('s1_ctu');
SELECT * FROM s1_ctu ORDER BY id;
-- a NULL list fails the run, naming the flow, the key (and in the detail the LSN)
INSERT INTO s1_ctu_feed VALUES (3, 'a', 'b', NULL, 10, NULL);
\set VERBOSITY terse
SELECT * FROM autocdc.run_flow('s1_ctu');
\set VERBOSITY default
SELECT state, last_error_sqlstate FROM autocdc.flows WHERE name = 's1_ctu';
SELECT autocdc.skip_events('s1_ctu', last_error_lsn) FROM autocdc.flows WHERE name = 's1_ctu';
SELECT * FROM autocdc.run_flow('s1_ctu');
-- a name that is not a selected non-key column: a key, an excluded column, an unknown one
INSERT INTO s1_ctu_feed VALUES (4, 'a', 'b', NULL, 10, '{a,id}');
\set VERBOSITY terse
SELECT * FROM autocdc.run_flow('s1_ctu');
\set VERBOSITY default
SELECT autocdc.skip_events('s1_ctu', last_error_lsn) FROM autocdc.flows WHERE name = 's1_ctu';
INSERT INTO s1_ctu_feed VALUES (4, 'a', 'b', NULL, 10, '{op}');
\set VERBOSITY terse
SELECT * FROM autocdc.run_flow('s1_ctu');
\set VERBOSITY default
SELECT autocdc.skip_events('s1_ctu', last_error_lsn) FROM autocdc.flows WHERE name = 's1_ctu';
INSERT INTO s1_ctu_feed VALUES (4, 'a', 'b', NULL, 10, '{A}');
\set VERBOSITY terse
SELECT * FROM autocdc.run_flow('s1_ctu');
\set VERBOSITY default
SELECT autocdc.skip_events('s1_ctu', last_error_lsn) FROM autocdc.flows WHERE name = 's1_ctu';
-- a delete's list is not looked at
INSERT INTO s1_ctu_feed VALUES (1, NULL, NULL, 'D', 40, '{nosuch}');
SELECT * FROM autocdc.run_flow('s1_ctu');
SELECT * FROM s1_ctu ORDER BY id;
SELECT state, num_skipped_events FROM autocdc.flows WHERE name = 's1_ctu';
SELECT autocdc.drop_flow('s1_ctu', true);
DROP TABLE s1_ctu_feed;

-- clean up (s1_two_changes first: dropping a target drops every flow into it)
SELECT autocdc.drop_flow('s1_two_changes');
SELECT autocdc.drop_flow(name, true) FROM autocdc.flows WHERE name LIKE 's1\_%' ORDER BY name;
SELECT count(*) AS s1_flows_left FROM autocdc.flows WHERE name LIKE 's1\_%';
DROP TABLE s1_ooo_feed, s1_tie_feed, s1_del_feed, s1_tr_feed, s1_null_feed, s1_cols_feed,
	s1_inu_feed1, s1_inu_feed2, s1_inu_tr_feed, s1_row_feed, s1_once_src, s1_two_chg, s1_two_bf,
	s1_met_feed, s1_auth_feed, s1_expr_feed, s1_shape_feed, s1_rep_feed1, s1_rep_feed2, s1_ord_feed,
	s1_rev_feed, s1_keq_feed, s1_ord1_feed, s1_bnd_feed;
