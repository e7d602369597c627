--
-- statements: the statement form of semantics §3.1 -- DO LANGUAGE autocdc and
-- autocdc.execute(), one parser behind both.
--   * the semantics §8 examples 1-4 written as statements (test/statements_example.sql)
--     give the same flows and the same targets as the create_flow calls;
--   * every clause maps one-to-one onto a create_flow argument: each
--     statement-made flow below is compared with a twin made by create_flow
--     (catalog definition, target shape, primary key, target rows);
--   * CREATE STREAMING TABLE, DROP FLOW, the caller's transaction;
--   * syntax errors (the whole block is parsed first: nothing runs), semantic
--     errors (create_flow's), the language's validator, a non-superuser.
-- Statement-made flows are continuous; nothing below depends on who applies
-- them first (every feed row is committed before its flows exist, and the
-- outputs are targets and totals, not the metrics of one run).
--
\set VERBOSITY default
\pset null '(null)'

-- the language is trusted and has a validator; execute returns SETOF text
SELECT lanname, lanpltrusted, lanvalidator <> 0 AS has_validator, laninline <> 0 AS has_inline
  FROM pg_language WHERE lanname = 'autocdc';
SELECT p.oid::regprocedure AS function, p.proretset, p.prorettype::regtype
  FROM pg_proc p WHERE p.proname = 'execute' AND p.pronamespace = 'autocdc'::regnamespace;

--
-- helpers
--
-- st_def: a flow's definition as create_flow stored it, without what differs
-- between a flow and its twin by construction (name, target, creation time,
-- continuous: statement-made flows are continuous, the example twins not).
-- The raw column lists are compared by kind and length only (their spelling,
-- userId vs "userId" vs userid, is the caller's); the resolved columns,
-- keys and tracked columns are compared exactly.  A ROW sequence is cast to
-- the target's composite type <target>_seq: that name is replaced by <target>.
CREATE VIEW st_def AS
SELECT f.name,
	   jsonb_build_object(
		'owner', f.owner::text, 'kind', f.kind, 'source', f.source::text,
		'keys', f.keys, 'sequence_by', replace(f.sequence_by, t.relname || '_seq', '<target>_seq'),
		'ignore_null_updates', f.ignore_null_updates,
		'apply_as_deletes', f.apply_as_deletes, 'apply_as_truncates', f.apply_as_truncates,
		'columns', f.columns,
		'column_list', cardinality(f.column_list), 'except_column_list', cardinality(f.except_column_list),
		'scd_type', f.scd_type, 'track_columns', f.track_columns,
		'track_history_column_list', cardinality(f.track_history_column_list),
		'track_history_except_column_list', cardinality(f.track_history_except_column_list),
		'once', f.once, 'tombstone_retention', f.tombstone_retention,
		'system_sequence_by', f.system_sequence_by,
		'ignore_null_updates_column_list', f.ignore_null_updates_column_list,
		'ignore_null_updates_except_column_list', f.ignore_null_updates_except_column_list,
		'columns_to_update', f.columns_to_update) AS def
  FROM autocdc.flow f JOIN autocdc.target g ON g.id = f.target_id
  JOIN pg_class t ON t.oid = g.relid;

-- st_shape: a target's columns; a ROW sequence's type <target>_seq shows as <target>_seq
CREATE FUNCTION st_shape(t regclass) RETURNS TABLE (attnum int2, attname name, type text)
LANGUAGE sql AS $f$
	SELECT a.attnum, a.attname,
		   replace(format_type(a.atttypid, a.atttypmod), c.relname || '_seq', '<target>_seq')
	  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
	 WHERE a.attrelid = t AND a.attnum > 0 AND NOT a.attisdropped
$f$;

-- st_same(flow, twin): 'same' when the two flows have the same definition
-- and their targets the same columns (names, types, typmods, order), the same
-- primary key columns and the same rows; else what differs.
CREATE FUNCTION st_same(stmt_flow text, twin_flow text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
	a regclass;
	b regclass;
	diffs text[] := '{}';
	d text;
	n bigint;
BEGIN
	SELECT target INTO a FROM autocdc.flows WHERE name = stmt_flow;
	SELECT target INTO b FROM autocdc.flows WHERE name = twin_flow;
	IF a IS NULL OR b IS NULL THEN
		RETURN 'missing flow';
	END IF;
	SELECT string_agg(e.key, ', ' ORDER BY e.key) INTO d
	  FROM st_def x, jsonb_each(x.def) e, st_def y
	 WHERE x.name = stmt_flow AND y.name = twin_flow AND e.value IS DISTINCT FROM y.def -> e.key;
	IF d IS NOT NULL THEN
		diffs := diffs || ('definition: ' || d);
	END IF;
	SELECT count(*) INTO n FROM (
		(SELECT * FROM st_shape(a) EXCEPT SELECT * FROM st_shape(b))
		UNION ALL (SELECT * FROM st_shape(b) EXCEPT SELECT * FROM st_shape(a))) s;
	IF n > 0 THEN
		diffs := diffs || 'columns'::text;
	ELSE
		-- same columns: compare the primary keys and the rows (a ROW sequence
		-- has a composite type per target: compare its text)
		IF (SELECT array_agg(attname ORDER BY k.ord) FROM pg_index i,
				   unnest(i.indkey) WITH ORDINALITY k(attnum, ord), pg_attribute t
			 WHERE i.indrelid = a AND i.indisprimary AND t.attrelid = a AND t.attnum = k.attnum)
		   IS DISTINCT FROM
		   (SELECT array_agg(attname ORDER BY k.ord) FROM pg_index i,
				   unnest(i.indkey) WITH ORDINALITY k(attnum, ord), pg_attribute t
			 WHERE i.indrelid = b AND i.indisprimary AND t.attrelid = b AND t.attnum = k.attnum) THEN
			diffs := diffs || 'primary key'::text;
		END IF;
		EXECUTE format('SELECT count(*) FROM ((SELECT x::text FROM %s x EXCEPT ALL SELECT y::text FROM %s y)'
					   ' UNION ALL (SELECT y::text FROM %s y EXCEPT ALL SELECT x::text FROM %s x)) s', a, b, b, a)
		   INTO n;
		IF n > 0 THEN
			diffs := diffs || (n || ' rows differ');
		END IF;
	END IF;
	RETURN coalesce(nullif(array_to_string(diffs, '; '), ''), 'same');
END
$f$;

--
-- semantics §8 examples 1-4.  The feeds, committed before any flow exists, so
-- every flow's first run reads all of them under one snapshot.
--
CREATE TABLE st_users_cdf (userId int, name text, city text, operation text, sequenceNum int);
INSERT INTO st_users_cdf VALUES
	(124, 'Raul', 'Oaxaca', 'INSERT', 1),
	(123, 'Isabel', 'Monterrey', 'INSERT', 1),
	(125, 'Mercedes', 'Tijuana', 'INSERT', 2),
	(126, 'Lily', 'Cancun', 'INSERT', 2),
	(123, NULL, NULL, 'DELETE', 6),
	(125, 'Mercedes', 'Guadalajara', 'UPDATE', 6),
	(125, 'Mercedes', 'Mexicali', 'UPDATE', 5),
	(123, 'Isabel', 'Chihuahua', 'UPDATE', 5);
CREATE TABLE st_users_cdf_trunc (LIKE st_users_cdf);
INSERT INTO st_users_cdf_trunc VALUES (NULL, NULL, NULL, 'TRUNCATE', 3);
INSERT INTO st_users_cdf_trunc SELECT * FROM st_users_cdf;

-- the twins, made by create_flow with the arguments the statements map to
SELECT autocdc.create_flow('st_fn1', 'stream(st_users_cdf)', '{userId}', 'sequenceNum',
	apply_as_deletes => $$operation = 'DELETE'$$, apply_as_truncates => $$operation = 'TRUNCATE'$$,
	except_column_list => '{operation,sequenceNum}', stored_as_scd_type => '1', continuous => false);
SELECT autocdc.create_flow('st_fn2', 'stream(st_users_cdf_trunc)', '{userId}', 'sequenceNum',
	apply_as_deletes => $$operation = 'DELETE'$$, apply_as_truncates => $$operation = 'TRUNCATE'$$,
	except_column_list => '{operation,sequenceNum}', continuous => false);
SELECT autocdc.create_flow('st_fn3', 'stream(st_users_cdf)', '{userId}', 'sequenceNum',
	apply_as_deletes => $$operation = 'DELETE'$$,
	except_column_list => '{operation,sequenceNum}', stored_as_scd_type => '2', continuous => false);
SELECT autocdc.create_flow('st_fn4', 'stream(st_users_cdf)', '{userId}', 'sequenceNum',
	apply_as_deletes => $$operation = 'DELETE'$$,
	except_column_list => '{operation,sequenceNum}', stored_as_scd_type => '2',
	track_history_except_column_list => '{city}', continuous => false);

-- the pipeline: examples 1-4 as statements
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/test/statements_example.sql

-- the flows the statements made: named as in CREATE FLOW, continuous
SELECT name, kind, source, target, scd_type, continuous
  FROM autocdc.flows WHERE name LIKE 'st\_ex%' ORDER BY name;
-- CREATE OR REFRESH STREAMING TABLE without columns reserved the names; each
-- CREATE FLOW then created its target, shaped as create_flow shapes it
SELECT attrelid::regclass AS target, attname, format_type(atttypid, atttypmod) AS type
  FROM pg_attribute
 WHERE attrelid IN ('st_ex1'::regclass, 'st_ex3'::regclass) AND attnum > 0 AND NOT attisdropped
 ORDER BY attrelid::regclass::text, attnum;

-- runs (each its own statement; the first one in the database creates the
-- slot).  The twins' metrics: ex1 8,3,0; ex2 9,1,0; ex3 8,7,0; ex4 8,4,0.
SELECT * FROM autocdc.run_flow('st_fn1');
SELECT * FROM autocdc.run_flow('st_fn2');
SELECT * FROM autocdc.run_flow('st_fn3');
SELECT * FROM autocdc.run_flow('st_fn4');
SELECT count(*) AS ran FROM autocdc.run_flow('st_ex1_flow');
SELECT count(*) AS ran FROM autocdc.run_flow('st_ex2_flow');
SELECT count(*) AS ran FROM autocdc.run_flow('st_ex3_flow');
SELECT count(*) AS ran FROM autocdc.run_flow('st_ex4_flow');

-- Example 1, SCD 1: (124, Raul, Oaxaca), (125, Mercedes, Guadalajara), (126, Lily, Cancun)
SELECT * FROM st_ex1 ORDER BY userid;
-- Example 2, SCD 1 plus a truncate at 3: only (125, Mercedes, Guadalajara)
SELECT * FROM st_ex2 ORDER BY userid;
-- Example 3, SCD 2: (123, Isabel, Monterrey, 1, 5), (123, Isabel, Chihuahua, 5, 6),
-- (124, Raul, Oaxaca, 1, null), (125, Mercedes, Tijuana, 2, 5),
-- (125, Mercedes, Mexicali, 5, 6), (125, Mercedes, Guadalajara, 6, null),
-- (126, Lily, Cancun, 2, null)
SELECT * FROM st_ex3 ORDER BY userid, __start_at;
-- Example 4, SCD 2, TRACK HISTORY ON * EXCEPT (city): (123, Isabel, Chihuahua, 1, 6),
-- (124, Raul, Oaxaca, 1, null), (125, Mercedes, Guadalajara, 2, null), (126, Lily, Cancun, 2, null)
SELECT * FROM st_ex4 ORDER BY userid, __start_at;

-- each statement-made flow equals its create_flow twin
SELECT s, st_same(s || '_flow', replace(s, 'ex', 'fn')) AS versus_create_flow
  FROM unnest('{st_ex1,st_ex2,st_ex3,st_ex4}'::text[]) s ORDER BY s;
-- and the totals are the twins' (one first read each)
SELECT x.name, x.num_events, x.num_upserted_rows, x.num_deleted_rows,
	   (x.num_events, x.num_upserted_rows, x.num_deleted_rows)
		 = (y.num_events, y.num_upserted_rows, y.num_deleted_rows) AS same_as_twin
  FROM autocdc.flows x JOIN autocdc.flows y ON y.name = replace(replace(x.name, '_flow', ''), 'ex', 'fn')
 WHERE x.name LIKE 'st\_ex%' ORDER BY x.name;

-- CREATE [OR REFRESH] STREAMING TABLE on an existing target checks and
-- changes nothing: OR REFRESH never empties a target
DO LANGUAGE autocdc $$
CREATE OR REFRESH STREAMING TABLE st_ex1;
create streaming table ST_EX3;
$$;
SELECT st_same('st_ex1_flow', 'st_fn1') AS ex1_after_refresh, st_same('st_ex3_flow', 'st_fn3') AS ex3_after_create,
	   (SELECT count(*) FROM st_ex1) AS ex1_rows, (SELECT count(*) FROM st_ex3) AS ex3_rows;

--
-- Every clause.  A second feed; each statement-made flow st_c_* has a twin
-- st_c_*_tw made by create_flow.
--
CREATE TABLE st_feed (id int, "userId" int, name text, city text, op text, seq int, seq2 int);
INSERT INTO st_feed VALUES
	(1, 11, 'a', 'x', 'INSERT', 10, 1),
	(2, 22, 'b', 'y', 'INSERT', 10, 1),
	(3, 33, 'c', 'z', 'INSERT', 10, 1),
	(1, 11, NULL, 'x2', 'UPDATE', 20, 1),
	(2, 22, NULL, NULL, 'DELETE', 20, 1),
	(3, 33, 'c2', 'z2', 'UPDATE', 20, 5),
	(3, 33, 'c3', 'z3', 'UPDATE', 30, 2);

-- several statements in one block: the minimal flow (a bare source, no
-- optional clause); keywords in mixed case, unquoted names folded, IGNORE
-- NULL UPDATES, a dollar-quoted literal, COLUMNS (...), STORED AS SCD TYPE 1;
-- quoted identifiers keep their case, COLUMNS * EXCEPT (...)
DO LANGUAGE autocdc $$
CREATE FLOW st_c_min AS AUTO CDC INTO st_c_min_t FROM st_feed KEYS (id) SEQUENCE BY seq;
create Flow St_C_Mixed As Auto Cdc Into ST_C_MIXED_T
  from Stream( ST_FEED ) keys ( ID )
  ignore NULL updates
  apply as DELETE when OP = $del$DELETE$del$
  Sequence By SEQ
  columns (Id, NAME, city)
  Stored As Scd Type 1;
CREATE FLOW "St_C_Quoted" AS AUTO CDC INTO "St_C_Quoted_T"
  FROM stream("st_feed")
  KEYS ("userId")
  SEQUENCE BY "seq"
  COLUMNS * EXCEPT (id, "op", seq2)
$$;
SELECT autocdc.create_flow('st_c_min_tw', 'st_feed', '{id}', 'seq');
SELECT autocdc.create_flow('st_c_mixed_tw', 'stream(st_feed)', '{id}', 'seq', ignore_null_updates => true,
	apply_as_deletes => $$op = 'DELETE'$$, column_list => '{id,name,city}', stored_as_scd_type => '1');
SELECT autocdc.create_flow('st_c_quoted_tw', 'stream(st_feed)', ARRAY['"userId"'], 'seq',
	except_column_list => '{id,op,seq2}');

-- several statements through execute, with comments (holding ';' and
-- keywords) and a ';' inside a string literal: SCD 2, ONCE, both
-- conditions, TRACK HISTORY ON (...); and a STRUCT sequence with IGNORE NULL
-- UPDATES and TRACK HISTORY ON * EXCEPT (...)
SELECT * FROM autocdc.execute($blk$
/* SCD 2; read once.  KEYS (nosuch); DROP FLOW st_c_min; -- all inside a comment */
CREATE FLOW st_c_scd2 AS AUTO CDC ONCE INTO st_c_scd2_t
  FROM stream(st_feed)
  KEYS (id)
  APPLY AS DELETE WHEN op IN ('DELETE', 'gone;')  -- a comment; SEQUENCE BY nosuch
  APPLY AS TRUNCATE WHEN op = $$TRUNCATE$$ /* ; */
  SEQUENCE BY seq
  COLUMNS (id, name, city, seq)
  STORED AS SCD TYPE 2
  TRACK HISTORY ON (name);
CREATE FLOW st_c_struct AS AUTO CDC INTO st_c_struct_t
  FROM stream(st_feed)
  KEYS (id)
  IGNORE NULL UPDATES
  APPLY AS DELETE WHEN op = 'DELETE'
  SEQUENCE BY STRUCT(seq2, seq)
  COLUMNS * EXCEPT (op, "userId")
  STORED AS SCD TYPE 2
  TRACK HISTORY ON * EXCEPT (city, seq, seq2)
$blk$);
SELECT autocdc.create_flow('st_c_scd2_tw', 'stream(st_feed)', '{id}', 'seq',
	apply_as_deletes => $$op IN ('DELETE', 'gone;')$$, apply_as_truncates => $$op = 'TRUNCATE'$$,
	column_list => '{id,name,city,seq}', stored_as_scd_type => '2',
	track_history_column_list => '{name}', once => true);
SELECT autocdc.create_flow('st_c_struct_tw', 'stream(st_feed)', '{id}', 'ROW(seq2, seq)',
	ignore_null_updates => true, apply_as_deletes => $$op = 'DELETE'$$,
	except_column_list => ARRAY['op', '"userId"'], stored_as_scd_type => '2',
	track_history_except_column_list => '{city,seq,seq2}');

-- comments anywhere a space may go, as in SQL: after the flow name, the
-- target, the source, a column name, an expression; whole comment lines
-- between clauses
DO LANGUAGE autocdc $$
CREATE FLOW st_c_comments /* the flow */ AS AUTO CDC INTO st_c_comments_t -- the target
-- the source; KEYS (nosuch)
FROM stream(st_feed) /* the source */
KEYS (id /* the key */, "userId" -- and a second key column
)
-- SEQUENCE BY nosuch
SEQUENCE BY seq -- a trailing comment
COLUMNS (id, "userId", name) /* ; */
$$;
SELECT autocdc.create_flow('st_c_comments_tw', 'stream(st_feed)', ARRAY['id', '"userId"'], 'seq',
	column_list => ARRAY['id', '"userId"', 'name']);

-- the legacy spelling APPLY CHANGES INTO: the flow is named after the target
-- (its relation name, without schema); the form without ';' and with one
CREATE SCHEMA st_s;
SELECT autocdc.execute($$ APPLY CHANGES INTO st_c_legacy FROM stream(st_feed) KEYS (id)
	APPLY AS DELETE WHEN op = 'DELETE' SEQUENCE BY seq COLUMNS * EXCEPT (op) STORED AS SCD TYPE 1 $$) AS tag;
DO LANGUAGE autocdc $$ apply changes into st_s.st_c_legacy2 from st_feed keys (id) sequence by seq stored as scd type 2; $$;
SELECT autocdc.create_flow('st_c_legacy_tw', 'stream(st_feed)', '{id}', 'seq',
	apply_as_deletes => $$op = 'DELETE'$$, except_column_list => '{op}');
SELECT autocdc.create_flow('st_s.st_c_legacy2_tw', 'st_feed', '{id}', 'seq', stored_as_scd_type => '2');

-- what the statements made
SELECT name, source, target, scd_type, continuous FROM autocdc.flows
 WHERE name ILIKE 'st\_c\_%' AND name NOT LIKE '%\_tw' ORDER BY name COLLATE "C";
SELECT x.name, x.def ->> 'sequence_by' AS sequence_by, x.def ->> 'apply_as_deletes' AS deletes,
	   x.def ->> 'columns' AS columns, x.def ->> 'track_columns' AS tracked, x.def ->> 'once' AS once,
	   x.def ->> 'ignore_null_updates' AS ignore_nulls
  FROM st_def x WHERE x.name ILIKE 'st\_c\_%' AND x.name NOT LIKE '%\_tw' ORDER BY x.name COLLATE "C";

-- runs
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_min');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_mixed');
SELECT count(*) AS ran FROM autocdc.run_flow('St_C_Quoted');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_scd2');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_struct');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_comments');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_legacy');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_legacy2');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_min_tw');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_mixed_tw');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_quoted_tw');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_scd2_tw');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_struct_tw');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_comments_tw');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_legacy_tw');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_legacy2_tw');

-- each equals its twin
SELECT s AS flow, st_same(s, t) AS versus_create_flow
  FROM (VALUES ('st_c_min', 'st_c_min_tw'), ('st_c_mixed', 'st_c_mixed_tw'),
			   ('St_C_Quoted', 'st_c_quoted_tw'), ('st_c_scd2', 'st_c_scd2_tw'),
			   ('st_c_struct', 'st_c_struct_tw'), ('st_c_comments', 'st_c_comments_tw'),
			   ('st_c_legacy', 'st_c_legacy_tw'), ('st_c_legacy2', 'st_c_legacy2_tw')) v(s, t)
 ORDER BY v.s COLLATE "C";

-- and the targets, worked out by hand from semantics §4:
-- minimal (all columns, no deletes): 1 -> its update, 2 -> the DELETE row as an upsert, 3 -> c3 (30)
SELECT * FROM st_c_min_t ORDER BY id;
-- ignore null updates keeps name a for 1; 2 deleted; 3 -> c3
SELECT * FROM st_c_mixed_t ORDER BY id;
-- keyed by "userId", id/op/seq2 left out
SELECT * FROM "St_C_Quoted_T" ORDER BY "userId";
-- SCD 2 tracking name: 1 a@10-20, (null)@20; 2 b@10-20 (deleted); 3 c@10-20, c2@20-30, c3@30
SELECT * FROM st_c_scd2_t ORDER BY id, __start_at;
-- sequence (seq2, seq): 1 keeps a (nulls filled), city x2 in place; 2 closed at (1,20);
-- 3 c@(1,10), c3@(2,30), c2@(5,20)
SELECT * FROM st_c_struct_t ORDER BY id, __start_at;
SELECT format_type(atttypid, atttypmod) AS struct_sequence_type FROM pg_attribute
 WHERE attrelid = 'st_c_struct_t'::regclass AND attname = '__start_at';
-- keys (id, "userId"), columns id, "userId", name
SELECT * FROM st_c_comments_t ORDER BY id;
SELECT * FROM st_c_legacy ORDER BY id;
SELECT count(*) AS legacy2_versions FROM st_s.st_c_legacy2;

--
-- statements run in order, in the caller's transaction
--
SELECT * FROM autocdc.execute($$
CREATE FLOW st_ord AS AUTO CDC INTO st_ord_t FROM st_feed KEYS (id) SEQUENCE BY seq COLUMNS (id, name);
DROP FLOW st_ord;
CREATE FLOW st_ord AS AUTO CDC INTO st_ord_t FROM st_feed KEYS (id) APPLY AS DELETE WHEN op = 'DELETE'
  SEQUENCE BY seq COLUMNS (id, name);
$$);
SELECT name, target, def ->> 'apply_as_deletes' AS deletes
  FROM autocdc.flows JOIN st_def USING (name) WHERE name = 'st_ord';
SELECT autocdc.drop_flow('st_ord', true);
-- rolled back with the caller's transaction, DO and execute alike
BEGIN;
DO LANGUAGE autocdc $$ CREATE FLOW st_tx AS AUTO CDC INTO st_tx_t FROM st_feed KEYS (id) SEQUENCE BY seq $$;
SELECT * FROM autocdc.execute($$ CREATE STREAMING TABLE st_tx_t2 (id int, name text) $$);
SELECT name, target FROM autocdc.flows WHERE name = 'st_tx';
SELECT to_regclass('st_tx_t2') AS created_in_transaction;
ROLLBACK;
SELECT count(*) AS flows_left FROM autocdc.flows WHERE name = 'st_tx';
SELECT to_regclass('st_tx_t') AS target_left, to_regclass('st_tx_t2') AS table_left;
-- a failing statement aborts the caller's transaction up to its savepoint
BEGIN;
SELECT * FROM autocdc.execute($$ CREATE FLOW st_sp1 AS AUTO CDC INTO st_sp1_t FROM st_feed KEYS (id) SEQUENCE BY seq $$);
SAVEPOINT s;
SELECT * FROM autocdc.execute($$ CREATE FLOW st_sp1 AS AUTO CDC INTO st_sp1_t FROM st_feed KEYS (id) SEQUENCE BY seq $$);
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT name FROM autocdc.flows WHERE name LIKE 'st\_sp%';
SELECT autocdc.drop_flow('st_sp1', true);
-- a block of comments and blanks is refused, and so is NULL
SELECT count(*) AS tags FROM autocdc.execute($$ -- nothing here
/* nor here */ $$);
SELECT * FROM autocdc.execute(NULL);

--
-- DROP FLOW drops the flow and keeps its target; IF EXISTS: a notice when missing
--
SELECT * FROM autocdc.execute($$
DROP FLOW st_c_min;
drop flow if exists "St_C_Quoted";
DROP FLOW IF EXISTS st_nosuch_flow;
$$);
SELECT count(*) AS flows_left FROM autocdc.flows WHERE name IN ('st_c_min', 'St_C_Quoted');
SELECT (SELECT count(*) FROM st_c_min_t) AS min_rows_kept, (SELECT count(*) FROM "St_C_Quoted_T") AS quoted_rows_kept;
DO LANGUAGE autocdc $$ DROP FLOW st_nosuch_flow $$;
DO LANGUAGE autocdc $$ DROP FLOW IF EXISTS st_nosuch_flow $$;
-- the name follows identifier rules: St_C_Mixed is st_c_mixed; a comment may follow it
DO LANGUAGE autocdc $$ DROP FLOW St_C_Mixed -- dropped
$$;
SELECT count(*) AS flows_left FROM autocdc.flows WHERE name = 'st_c_mixed';

--
-- CREATE STREAMING TABLE
--
-- without columns: only the name is reserved, no table yet
DO LANGUAGE autocdc $$ CREATE STREAMING TABLE st_res_t $$;
SELECT to_regclass('st_res_t') AS reserved_only;
-- the first flow into it creates it, shaped by the flow
DO LANGUAGE autocdc $$ CREATE FLOW st_res AS AUTO CDC INTO st_res_t FROM st_feed KEYS (id) SEQUENCE BY seq COLUMNS (id, city) $$;
SELECT attname, format_type(atttypid, atttypmod) AS type FROM pg_attribute
 WHERE attrelid = 'st_res_t'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
-- with columns: the table exists at once, and a flow that fits it writes it
SELECT * FROM autocdc.execute($$ CREATE OR REFRESH STREAMING TABLE st_cols_t (id int, name text, city varchar(10)) $$);
SELECT attname, format_type(atttypid, atttypmod) AS type FROM pg_attribute
 WHERE attrelid = 'st_cols_t'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
DO LANGUAGE autocdc $$
CREATE FLOW st_cols AS AUTO CDC INTO st_cols_t FROM st_feed KEYS (id)
	APPLY AS DELETE WHEN op = 'DELETE' SEQUENCE BY seq COLUMNS (id, name)
$$;
SELECT count(*) AS ran FROM autocdc.run_flow('st_cols');
SELECT * FROM st_cols_t ORDER BY id;
-- a flow that does not fit it is refused (create_flow's errors)
DO LANGUAGE autocdc $$
CREATE FLOW st_cols_bad AS AUTO CDC INTO st_cols_t FROM st_feed KEYS (id) SEQUENCE BY seq COLUMNS (id, name, city)
$$;
DO LANGUAGE autocdc $$
CREATE FLOW st_cols_bad AS AUTO CDC INTO st_cols_t FROM st_feed KEYS (id) SEQUENCE BY seq COLUMNS (id, name, op)
$$;
-- again, on the existing table: checked, nothing changed (the rows stay)
DO LANGUAGE autocdc $$
CREATE STREAMING TABLE st_cols_t (id int, name text, city varchar(10));
CREATE OR REFRESH STREAMING TABLE st_cols_t (id int, name text, city varchar(10));
CREATE OR REFRESH STREAMING TABLE st_cols_t;
$$;
SELECT * FROM st_cols_t ORDER BY id;
-- an existing table that does not match the definition: refused
DO LANGUAGE autocdc $$ CREATE OR REFRESH STREAMING TABLE st_cols_t (id bigint, name text, city varchar(10)) $$;
DO LANGUAGE autocdc $$ CREATE OR REFRESH STREAMING TABLE st_cols_t (id int, name text, city varchar(10), extra int) $$;
-- a different length of city is a different column too (datatype_mismatch)
\set VERBOSITY sqlstate
DO LANGUAGE autocdc $$ CREATE OR REFRESH STREAMING TABLE st_cols_t (id int, name text, city varchar(20)) $$;
\set VERBOSITY default
SELECT count(*) AS cols_rows_kept FROM st_cols_t;

--
-- Syntax errors: what was expected, and where.  The whole block is parsed
-- before anything runs, so none of these runs any statement.
--
-- a clause out of order
DO LANGUAGE autocdc $$
CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id)
  SEQUENCE BY seq
  APPLY AS DELETE WHEN op = 'DELETE'
$$;
DO LANGUAGE autocdc $$
CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY seq
  STORED AS SCD TYPE 2 COLUMNS (id, name)
$$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t KEYS (id) FROM st_feed SEQUENCE BY seq $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY seq
  TRACK HISTORY ON (name) STORED AS SCD TYPE 2 $$;
-- a clause twice
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) KEYS (id) SEQUENCE BY seq $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id)
  APPLY AS DELETE WHEN op = 'DELETE' APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY seq
  STORED AS SCD TYPE 1 STORED AS SCD TYPE 2 $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id)
  IGNORE NULL UPDATES IGNORE NULL UPDATES SEQUENCE BY seq $$;
-- a required clause missing
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed SEQUENCE BY seq $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) STORED AS SCD TYPE 1 $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO FROM st_feed KEYS (id) SEQUENCE BY seq $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS () SEQUENCE BY seq $$;
-- an empty expression
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY STORED AS SCD TYPE 1 $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) APPLY AS DELETE WHEN SEQUENCE BY seq $$;
-- garbage after a statement, or a missing ';' between two
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY seq STORED AS SCD TYPE 1 oops $$;
DO LANGUAGE autocdc $$ DROP FLOW st_c_scd2 st_c_struct $$;
DO LANGUAGE autocdc $$ CREATE STREAMING TABLE st_e_t garbage $$;
DO LANGUAGE autocdc $$
CREATE STREAMING TABLE st_e_t
CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY seq
$$;
-- an incomplete STORED AS
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY seq STORED AS SCD $$;
-- unterminated parentheses, string, dollar quote
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id, name SEQUENCE BY seq $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY (seq + 1 $$;
DO LANGUAGE autocdc $$ CREATE STREAMING TABLE st_e_t (id int, name text $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) APPLY AS DELETE WHEN op = 'DELETE SEQUENCE BY seq $$;
SELECT * FROM autocdc.execute($blk$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) APPLY AS DELETE WHEN op = $x$DELETE SEQUENCE BY seq $blk$);
-- unknown statements
DO LANGUAGE autocdc $$ CREATE TABLE st_e_t (id int) $$;
DO LANGUAGE autocdc $$ SELECT 1 $$;
DO LANGUAGE autocdc $$ ALTER FLOW st_c_scd2 RENAME TO st_e $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC FROM st_feed $$;
-- an error on a later line of a longer block: the LINE shown is that line
SELECT * FROM autocdc.execute($$
CREATE STREAMING TABLE st_e_t;

CREATE FLOW st_e AS AUTO CDC INTO st_e_t
  FROM st_feed
  KEYS (id)
  SEQUENCE BY seq
  STORED AS SCD TYPE 2
  TRACK HISTORY ON * EXCEPT name;
$$);
-- a malformed expression and an SCD type the grammar does not have are
-- syntax errors of the block too: syntax_error (42601), and the first
-- statement does not run (no NOTICE)
\set VERBOSITY sqlstate
DO LANGUAGE autocdc $$ DROP FLOW IF EXISTS st_nosuch_flow;
CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY seq + $$;
DO LANGUAGE autocdc $$ DROP FLOW IF EXISTS st_nosuch_flow;
CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) APPLY AS DELETE WHEN op = = 'DELETE' SEQUENCE BY seq $$;
DO LANGUAGE autocdc $$ DROP FLOW IF EXISTS st_nosuch_flow;
CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY seq STORED AS SCD TYPE 3 $$;
SELECT * FROM autocdc.execute($$ DROP FLOW IF EXISTS st_nosuch_flow;
CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY (seq, ) $$);
DO LANGUAGE autocdc $$ DROP FLOW IF EXISTS st_nosuch_flow;
CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed garbage KEYS (id) SEQUENCE BY seq $$;
\set VERBOSITY default
-- a syntax error wins over the semantic errors before it, and nothing of the
-- block runs: no NOTICE from the DROP FLOW IF EXISTS, no table, no flow
DO LANGUAGE autocdc $$
DROP FLOW IF EXISTS st_nosuch_flow;
CREATE STREAMING TABLE st_e_t (id int, name text);
CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_nosuch_feed KEYS (id) SEQUENCE BY seq;
CREATE FLOW st_e2 AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY seq STORED AS SCD TYPE 1 oops;
$$;
SELECT * FROM autocdc.execute($$
DROP FLOW IF EXISTS st_nosuch_flow;
CREATE FLOW st_e2 AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY seq;
CREATE FLOW st_e3 AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id, SEQUENCE BY seq
$$);
SELECT count(*) AS flows_made FROM autocdc.flows WHERE name LIKE 'st\_e%' AND name NOT LIKE 'st\_ex%';
SELECT to_regclass('st_e_t') AS table_made;

--
-- Semantic errors are create_flow's, and a failing statement takes the whole
-- block with it (one transaction): the table and the first flow are gone.
--
DO LANGUAGE autocdc $$
CREATE STREAMING TABLE st_rb_t (id int, name text);
CREATE FLOW st_rb1 AS AUTO CDC INTO st_rb_t FROM st_feed KEYS (id) SEQUENCE BY seq COLUMNS (id, name);
CREATE FLOW st_rb2 AS AUTO CDC INTO st_rb_t2 FROM st_feed KEYS (id) SEQUENCE BY nosuch;
$$;
SELECT count(*) AS flows_left FROM autocdc.flows WHERE name LIKE 'st\_rb%';
SELECT to_regclass('st_rb_t') AS table_left, to_regclass('st_rb_t2') AS target_left;
-- unknown source, unknown key, a key excluded by the selection, a duplicate flow name
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM stream(st_nosuch_feed) KEYS (id) SEQUENCE BY seq $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (nosuch) SEQUENCE BY seq $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY seq COLUMNS * EXCEPT (id) $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_c_legacy AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY seq $$;
-- history tracking needs SCD 2; SYSTEM SEQUENCE BY needs bitemporal
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY seq TRACK HISTORY ON (name) $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY seq SYSTEM SEQUENCE BY seq2 $$;
-- a non-boolean condition
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) APPLY AS DELETE WHEN op SEQUENCE BY seq $$;
-- Spark's double-quoted literal is a column in PostgreSQL: hint at single quotes
DO LANGUAGE autocdc $$
CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id)
  APPLY AS DELETE WHEN op = "DELETE"
  SEQUENCE BY seq
$$;
-- bitemporal needs SYSTEM SEQUENCE BY (create_flow's error); snapshot flows are never bitemporal
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id) SEQUENCE BY seq
  STORED AS BITEMPORAL $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM changes(st_feed) KEYS (id) SEQUENCE BY seq $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM stream(changes(st_feed)) KEYS (id) SEQUENCE BY seq $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM SNAPSHOT st_feed KEYS (id) STORED AS BITEMPORAL $$;
SELECT count(*) AS flows_made FROM autocdc.flows WHERE name LIKE 'st\_e%' AND name NOT LIKE 'st\_ex%';
SELECT to_regclass('st_e_t') AS target_made;

--
-- Only DO and autocdc.execute run statements: functions and procedures in
-- the language are rejected by its validator (also without body checks)
--
CREATE FUNCTION st_fn() RETURNS void LANGUAGE autocdc AS $$ DROP FLOW IF EXISTS st_nosuch_flow $$;
CREATE PROCEDURE st_proc() LANGUAGE autocdc AS $$ DROP FLOW IF EXISTS st_nosuch_flow $$;
SET check_function_bodies = off;
CREATE FUNCTION st_fn() RETURNS void LANGUAGE autocdc AS $$ DROP FLOW IF EXISTS st_nosuch_flow $$;
RESET check_function_bodies;
SELECT count(*) AS functions_in_autocdc FROM pg_proc WHERE prolang = (SELECT oid FROM pg_language WHERE lanname = 'autocdc');

--
-- A non-superuser: the language is trusted, USAGE is enough; the checks are
-- create_flow's, as the calling user, and the flows are the caller's.
--
CREATE ROLE regress_st_alice;
CREATE SCHEMA st_alice AUTHORIZATION regress_st_alice;
SET ROLE regress_st_alice;
SELECT has_language_privilege('autocdc', 'USAGE') AS may_use_language;
CREATE TABLE st_alice.feed (id int, val text, seq int);
INSERT INTO st_alice.feed VALUES (1, 'a', 1), (2, 'b', 1), (1, 'a2', 2);
DO LANGUAGE autocdc $$
CREATE OR REFRESH STREAMING TABLE st_alice.t;
CREATE FLOW st_alice_flow AS AUTO CDC INTO st_alice.t FROM stream(st_alice.feed) KEYS (id) SEQUENCE BY seq;
$$;
SELECT * FROM autocdc.execute($$
APPLY CHANGES INTO st_alice.st_alice_t2 FROM st_alice.feed KEYS (id) SEQUENCE BY seq STORED AS SCD TYPE 2
$$);
SELECT name, owner, target, (SELECT relowner::regrole FROM pg_class WHERE oid = target) AS target_owner
  FROM autocdc.flows WHERE name LIKE 'st\_alice%' ORDER BY name;
SELECT count(*) AS ran FROM autocdc.run_flow('st_alice_flow');
SELECT count(*) AS ran FROM autocdc.run_flow('st_alice_t2');
SELECT * FROM st_alice.t ORDER BY id;
SELECT * FROM st_alice.st_alice_t2 ORDER BY id, __start_at;
-- a source alice may not read, a target she does not own, a flow she does not own
DO LANGUAGE autocdc $$ CREATE FLOW st_alice_e AS AUTO CDC INTO st_alice.e FROM st_feed KEYS (id) SEQUENCE BY seq $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_alice_e AS AUTO CDC INTO public.st_cols_t FROM st_alice.feed KEYS (id) SEQUENCE BY seq COLUMNS (id) $$;
DO LANGUAGE autocdc $$ DROP FLOW st_c_scd2 $$;
DO LANGUAGE autocdc $$ DROP FLOW IF EXISTS st_c_scd2 $$;
-- nor functions in the language
CREATE FUNCTION st_alice.f() RETURNS void LANGUAGE autocdc AS $$ DROP FLOW IF EXISTS st_nosuch_flow $$;
-- alice drops her own flow; its target stays
DO LANGUAGE autocdc $$ DROP FLOW st_alice_flow $$;
SELECT count(*) AS alice_rows_kept FROM st_alice.t;
RESET ROLE;
SELECT name FROM autocdc.flows WHERE name IN ('st_c_scd2', 'st_alice_flow', 'st_alice_e') ORDER BY name;

--
-- flow names are not schema-qualified, and hints speak the statement form
--
DO LANGUAGE autocdc $$ CREATE FLOW st_s.st_q AS AUTO CDC INTO st_s.st_q FROM stream(st_users_cdf)
	KEYS (userId) SEQUENCE BY sequenceNum $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_q AS AUTO CDC INTO st_s.st_q FROM stream(st_users_cdf)
	KEYS (userId) SEQUENCE BY sequenceNum $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_q AS AUTO CDC INTO st_s.st_q2 FROM stream(st_users_cdf)
	KEYS (userId) SEQUENCE BY sequenceNum $$;
-- the source reads the same whichever form made the flow
SELECT autocdc.create_flow('st_s.st_q3', 'st_users_cdf', '{userId}', 'sequenceNum', continuous => false);
SELECT name, target, source FROM autocdc.flows WHERE name IN ('st_q', 'st_q3') ORDER BY name;

--
-- IGNORE NULL UPDATES ON ( col, ... ) and ON * EXCEPT ( col, ... ): the
-- column lists of ignore_null_updates, beside their create_flow twins;
-- COLUMNS TO UPDATE col comes last
--
DO LANGUAGE autocdc $$
CREATE FLOW st_c_inu_on AS AUTO CDC INTO st_c_inu_on_t FROM stream(st_feed) KEYS (id)
  IGNORE NULL UPDATES ON (name) APPLY AS DELETE WHEN op = 'DELETE' SEQUENCE BY seq
  COLUMNS (id, name, city);
CREATE FLOW st_c_inu_except AS AUTO CDC INTO st_c_inu_except_t FROM stream(st_feed) KEYS (id)
  IGNORE NULL UPDATES ON * EXCEPT (name) SEQUENCE BY seq COLUMNS (id, name, city)
  STORED AS SCD TYPE 2 TRACK HISTORY ON (city);
$$;
SELECT autocdc.create_flow('st_c_inu_on_tw', 'stream(st_feed)', '{id}', 'seq',
	apply_as_deletes => $$op = 'DELETE'$$, column_list => '{id,name,city}',
	ignore_null_updates_column_list => '{name}');
SELECT autocdc.create_flow('st_c_inu_except_tw', 'stream(st_feed)', '{id}', 'seq',
	column_list => '{id,name,city}', stored_as_scd_type => '2', track_history_column_list => '{city}',
	ignore_null_updates_except_column_list => '{name}');
SELECT name, def ->> 'ignore_null_updates_column_list' AS ignore_nulls_on,
	   def ->> 'ignore_null_updates_except_column_list' AS ignore_nulls_except
  FROM st_def WHERE name LIKE 'st\_c\_inu\_%' ORDER BY name;
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_inu_on');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_inu_on_tw');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_inu_except');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_inu_except_tw');
SELECT st_same('st_c_inu_on', 'st_c_inu_on_tw') AS inu_on, st_same('st_c_inu_except', 'st_c_inu_except_tw') AS inu_except;
-- ON needs a list; the lists and IGNORE NULL UPDATES alone exclude
-- COLUMNS TO UPDATE (create_flow's error)
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id)
  IGNORE NULL UPDATES ON name SEQUENCE BY seq $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id)
  IGNORE NULL UPDATES ON * (name) SEQUENCE BY seq $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id)
  SEQUENCE BY seq COLUMNS TO UPDATE (op) $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id)
  SEQUENCE BY seq COLUMNS TO UPDATE op COLUMNS (id, name) $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id)
  IGNORE NULL UPDATES ON (name) SEQUENCE BY seq COLUMNS TO UPDATE op $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id)
  IGNORE NULL UPDATES ON (nosuch) SEQUENCE BY seq $$;
DO LANGUAGE autocdc $$ CREATE FLOW st_e AS AUTO CDC INTO st_e_t FROM st_feed KEYS (id)
  SEQUENCE BY seq COLUMNS TO UPDATE op $$;
-- COLUMNS TO UPDATE col beside its twin; the column name follows identifier rules
CREATE TABLE st_ctu_feed (id int, name text, city text, "Upd" text[], seq int);
INSERT INTO st_ctu_feed VALUES (1, 'n1', 'c1', '{name,city}', 1), (1, NULL, NULL, '{city}', 2),
	(2, 'n2', 'c2', '{name}', 1);
DO LANGUAGE autocdc $$
CREATE FLOW st_c_ctu AS AUTO CDC INTO st_c_ctu_t FROM stream(st_ctu_feed) KEYS (id)
  SEQUENCE BY seq COLUMNS * EXCEPT ("Upd", seq) STORED AS SCD TYPE 2 COLUMNS TO UPDATE "Upd"
$$;
SELECT autocdc.create_flow('st_c_ctu_tw', 'stream(st_ctu_feed)', '{id}', 'seq',
	except_column_list => ARRAY['"Upd"', 'seq'], stored_as_scd_type => '2', columns_to_update => '"Upd"');
SELECT name, def ->> 'columns_to_update' AS columns_to_update FROM st_def WHERE name LIKE 'st\_c\_ctu%' ORDER BY name;
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_ctu');
SELECT count(*) AS ran FROM autocdc.run_flow('st_c_ctu_tw');
SELECT st_same('st_c_ctu', 'st_c_ctu_tw') AS ctu;
SELECT * FROM st_c_ctu_t ORDER BY id, __start_at;

--
-- clean up
--
DO $$BEGIN PERFORM autocdc.drop_flow(name, true) FROM autocdc.flow WHERE name ILIKE 'st\_%'; END$$;
SELECT count(*) AS flows_left FROM autocdc.flows WHERE name ILIKE 'st\_%';
DROP TABLE st_alice.t, st_alice.feed;
DROP SCHEMA st_alice;
DROP ROLE regress_st_alice;
DROP SCHEMA st_s CASCADE;
-- the targets of the dropped flows (drop_flow(name, true) dropped the others)
DROP TABLE st_c_min_t, "St_C_Quoted_T", st_c_mixed_t;
DROP TABLE st_users_cdf, st_users_cdf_trunc, st_feed, st_ctu_feed;
DROP FUNCTION st_same(text, text);
DROP FUNCTION st_shape(regclass);
DROP VIEW st_def;
