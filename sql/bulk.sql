--
-- bulk: a run that inserts 10,000 rows or more into a table with no pages
-- (a new target, a new hidden state), or into a hidden state of fewer than
-- half as many rows, rebuilds the table's indexes after the load instead of
-- inserting into them row by row; the hidden state's partial indexes
-- (tombstones, truncates) take rows one by one all the same.  The rebuilt indexes must
-- hold every row, be valid, and enforce uniqueness as the inserts would
-- have; a failing run leaves the indexes as they were.  Smaller loads,
-- targets with rows or pages, targets with triggers and deferrable unique
-- indexes keep the row-by-row path.
--
-- b_nodes(rel) records the file of each index of a table and of its hidden
-- state; b_rebuilt(rel) says, per index, whether its file changed since and
-- whether it is valid and ready.  A rebuild gives an index a new file; an
-- insert into an index keeps its file.
CREATE TABLE b_nodes (idx regclass, node oid);
CREATE FUNCTION b_indexes(rel regclass) RETURNS SETOF regclass LANGUAGE sql AS $f$
	SELECT indexrelid::regclass FROM pg_index
	 WHERE indrelid IN (rel, (SELECT format('autocdc_state.target_%s', id)::regclass
							   FROM autocdc.target WHERE relid = rel))
$f$;
CREATE FUNCTION b_remember(rel regclass) RETURNS void LANGUAGE sql AS $f$
	DELETE FROM b_nodes;
	INSERT INTO b_nodes SELECT i, pg_relation_filenode(i) FROM b_indexes(rel) i;
$f$;
CREATE FUNCTION b_rebuilt(rel regclass)
RETURNS TABLE (idx text, rebuilt boolean, valid boolean, ready boolean) LANGUAGE sql AS $f$
	SELECT regexp_replace(n.idx::text, 'target_[0-9]+', 'target_N'),
		   pg_relation_filenode(n.idx) <> n.node, i.indisvalid, i.indisready
	  FROM b_nodes n JOIN pg_index i ON i.indexrelid = n.idx
	 ORDER BY 1
$f$;
-- b_plan(query): its plan, the hidden state's number masked
CREATE FUNCTION b_plan(q text) RETURNS SETOF text LANGUAGE plpgsql AS $f$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		RETURN NEXT regexp_replace(line, 'target_[0-9]+', 'target_N', 'g');
	END LOOP;
END $f$;
-- b_flow(name) creates the feed <name>_feed (id, v, seq) and an SCD 1 flow
-- into the table <name> (created if missing), runs it once (empty) and
-- remembers the index files
CREATE FUNCTION b_flow(name text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	EXECUTE format('CREATE TABLE %I (id int, v text, seq int)', name || '_feed');
	PERFORM autocdc.create_flow(name, name || '_feed', '{id}', sequence_by => 'seq',
		except_column_list => '{seq}', continuous => false);
	PERFORM autocdc.run_flow(name);
	PERFORM b_remember(name::regclass);
END $f$;
-- the rows each index of an SCD 2 target finds, read through that index
-- alone (no sequential scans), beside the table's own count
CREATE FUNCTION b_through_indexes(rel regclass)
RETURNS TABLE (all_rows bigint, by_key bigint, open_by_key bigint, open_by_start bigint,
			   ended_by_period bigint) LANGUAGE plpgsql AS $f$
BEGIN
	SET LOCAL enable_seqscan = off;
	SET LOCAL enable_bitmapscan = off;
	RETURN QUERY EXECUTE format($q$
		SELECT (SELECT count(*) FROM %1$s WHERE __start_at IS NOT NULL OR true),
			   (SELECT count(*) FROM %1$s WHERE id > -1 AND __start_at > -1),
			   (SELECT count(*) FROM %1$s WHERE id > -1 AND __end_at IS NULL),
			   (SELECT count(*) FROM %1$s WHERE __start_at > -1 AND __end_at IS NULL),
			   (SELECT count(*) FROM %1$s WHERE int4range(__start_at, __end_at) && '[0,)'
				   AND __end_at IS NOT NULL)$q$, rel);
END $f$;

---------------------------------------------------------------------------
-- SCD 2, empty target: 12,000 new keys, 3,000 of them updated (3,000 ended
-- versions for the GiST index of periods, asked for with
-- create_as_of_index).  Every index of the target and of the hidden state
-- is rebuilt, and each holds every row it should.
---------------------------------------------------------------------------
CREATE TABLE b2_feed (id int, v text, seq int);
SELECT autocdc.create_flow('b2', 'b2_feed', '{id}', sequence_by => 'seq',
	except_column_list => '{seq}', stored_as_scd_type => '2', continuous => false);
SELECT autocdc.create_as_of_index('b2');
SELECT * FROM autocdc.run_flow('b2');
SELECT b_remember('b2');
INSERT INTO b2_feed SELECT g, 'v' || g, 1 FROM generate_series(1, 12000) g;
INSERT INTO b2_feed SELECT g, 'w' || g, 2 FROM generate_series(1, 3000) g;
SELECT * FROM autocdc.run_flow('b2');
SELECT * FROM b_rebuilt('b2');
SELECT * FROM b_through_indexes('b2');
SELECT count(*) FILTER (WHERE __end_at IS NULL) AS open, count(*) FILTER (WHERE __end_at IS NOT NULL) AS ended
  FROM b2;
-- the hidden state's key index finds every event
SELECT format('autocdc_state.target_%s', target_id) AS b2_state FROM autocdc.flow WHERE name = 'b2' \gset
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) AS state_rows_by_key FROM :b2_state WHERE id > -1;
RESET enable_seqscan;
RESET enable_bitmapscan;
-- the rebuilt unique index of the open versions still refuses a second one
INSERT INTO b2 (id, v, __start_at) VALUES (1, 'dup', 5);
-- a later run (the target has rows now) inserts into the indexes: no rebuild
SELECT b_remember('b2');
INSERT INTO b2_feed SELECT g, 'x' || g, 3 FROM generate_series(1, 11000) g;
SELECT * FROM autocdc.run_flow('b2');
SELECT * FROM b_rebuilt('b2');
SELECT * FROM b_through_indexes('b2');

---------------------------------------------------------------------------
-- The row-by-row path: under 10,000 rows, or a target with a trigger (its
-- code may read the target while it loads), or a target with a deferrable
-- unique constraint (checked at commit by a trigger, which a rebuild cannot
-- do), or pages left by rows since deleted.
---------------------------------------------------------------------------
SELECT b_flow('b_small');
INSERT INTO b_small_feed SELECT g, 'v' || g, 1 FROM generate_series(1, 9999) g;
SELECT * FROM autocdc.run_flow('b_small');
SELECT * FROM b_rebuilt('b_small');
-- 25,000 new keys: at least twice the hidden state's rows, whose indexes are
-- rebuilt (only autocdc reads them); the target has rows, and its index is
-- maintained row by row (a rebuild would lock it until the run commits)
SELECT b_remember('b_small');
INSERT INTO b_small_feed SELECT g, 'v' || g, 1 FROM generate_series(10000, 34999) g;
SELECT * FROM autocdc.run_flow('b_small');
SELECT * FROM b_rebuilt('b_small');
SELECT format('autocdc_state.target_%s', target_id) AS b_small_state FROM autocdc.flow WHERE name = 'b_small' \gset
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) AS state_rows_by_key FROM :b_small_state WHERE id > -1;
SELECT count(*) AS target_rows_by_key FROM b_small WHERE id > -1;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- A load that rebuilds the hidden state's key index leaves its partial
-- indexes in use (a rebuild reads the whole table for each index, for the
-- few rows of a load they take): they keep their files, and find every
-- tombstone (12,000 upserts, then 3,000 of those keys deleted) and the
-- truncate, as a sequential scan does.
CREATE TABLE b_tomb_feed (id int, v text, op text, seq int);
SELECT autocdc.create_flow('b_tomb', 'b_tomb_feed', '{id}', sequence_by => 'seq',
	apply_as_deletes => $$op = 'D'$$, apply_as_truncates => $$op = 'T'$$,
	except_column_list => '{op,seq}', continuous => false);
SELECT * FROM autocdc.run_flow('b_tomb');
SELECT b_remember('b_tomb');
INSERT INTO b_tomb_feed VALUES (NULL, NULL, 'T', 1);
INSERT INTO b_tomb_feed SELECT g, 'v' || g, 'U', 2 FROM generate_series(1, 12000) g;
INSERT INTO b_tomb_feed SELECT g, NULL, 'D', 3 FROM generate_series(1, 3000) g;
SELECT * FROM autocdc.run_flow('b_tomb');
SELECT * FROM b_rebuilt('b_tomb');
SELECT format('autocdc_state.target_%s', target_id) AS b_tomb_state FROM autocdc.flow WHERE name = 'b_tomb' \gset
SELECT count(*) FILTER (WHERE __autocdc_kind <> 'u') AS tombstones,
	   count(*) FILTER (WHERE __autocdc_kind = 't') AS truncates
  FROM :b_tomb_state;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT b_plan(format($q$SELECT count(*) FROM %s WHERE __autocdc_kind <> 'u' AND __autocdc_at > '-infinity'$q$,
			  :'b_tomb_state'));
SELECT count(*) AS tombstones_by_at FROM :b_tomb_state
 WHERE __autocdc_kind <> 'u' AND __autocdc_at > '-infinity';
SELECT b_plan(format($q$SELECT count(*) FROM %s WHERE __autocdc_kind = 't' AND __autocdc_seq > -1$q$,
			  :'b_tomb_state'));
SELECT count(*) AS truncates_by_seq FROM :b_tomb_state
 WHERE __autocdc_kind = 't' AND __autocdc_seq > -1;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) AS target_rows FROM b_tomb;

CREATE TABLE b_trig (id int PRIMARY KEY, v text);
CREATE TABLE b_trig_log (n bigint);
CREATE FUNCTION b_trig_count() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
	INSERT INTO public.b_trig_log SELECT count(*) FROM public.b_trig;
	RETURN NULL;
END $f$;
CREATE TRIGGER b_trig_count AFTER INSERT ON b_trig FOR EACH STATEMENT EXECUTE FUNCTION b_trig_count();
SELECT b_flow('b_trig');
INSERT INTO b_trig_feed SELECT g, 'v' || g, 1 FROM generate_series(1, 10000) g;
SELECT * FROM autocdc.run_flow('b_trig');
-- the target's own index is maintained row by row, the hidden state's
-- rebuilt; the trigger saw every row
SELECT * FROM b_rebuilt('b_trig');
SELECT * FROM b_trig_log;

CREATE TABLE b_defer (id int, v text, CONSTRAINT b_defer_id UNIQUE (id) DEFERRABLE INITIALLY DEFERRED);
CREATE INDEX b_defer_v ON b_defer (v);
SELECT b_flow('b_defer');
INSERT INTO b_defer_feed SELECT g, 'v' || g, 1 FROM generate_series(1, 10000) g;
SELECT * FROM autocdc.run_flow('b_defer');
-- the target's indexes keep their files, the hidden state's are rebuilt
SELECT * FROM b_rebuilt('b_defer');

-- rows inserted and deleted leave pages: the table is not empty to autocdc
CREATE TABLE b_pages (id int PRIMARY KEY, v text);
INSERT INTO b_pages VALUES (0, 'gone');
DELETE FROM b_pages;
SELECT b_flow('b_pages');
INSERT INTO b_pages_feed SELECT g, 'v' || g, 1 FROM generate_series(1, 10000) g;
SELECT * FROM autocdc.run_flow('b_pages');
SELECT idx, rebuilt FROM b_rebuilt('b_pages') WHERE idx = 'b_pages_pkey';

---------------------------------------------------------------------------
-- Failures: a duplicate the rebuild finds fails the run with the unique
-- violation (nothing applied, the indexes as they were); so does any other
-- error of the load, after the indexes were taken out of use.
---------------------------------------------------------------------------
-- b_err(sql) runs a statement and returns "SQLSTATE: message (detail)", or ok
CREATE FUNCTION b_err(sql text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
	c text;
	m text;
	d text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS c = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL;
	RETURN c || ': ' || m || coalesce(' (' || nullif(d, '') || ')', '');
END $f$;
CREATE TABLE b_uniq (id int PRIMARY KEY, v text);
CREATE UNIQUE INDEX b_uniq_v ON b_uniq (v);
SELECT b_flow('b_uniq');
-- keys 5000 and 5001 carry the same v
INSERT INTO b_uniq_feed SELECT g, CASE WHEN g = 5001 THEN 'v5000' ELSE 'v' || g END, 1
  FROM generate_series(1, 10000) g;
SELECT b_err($$SELECT * FROM autocdc.run_flow('b_uniq')$$);
SELECT count(*) AS target_rows FROM b_uniq;
SELECT * FROM b_rebuilt('b_uniq');
SELECT state, last_error_sqlstate FROM autocdc.flows WHERE name = 'b_uniq';
-- without the unique index on v, the same events apply; the failed run's
-- rows left pages in the target, so its index is maintained row by row
DROP INDEX b_uniq_v;
SELECT * FROM autocdc.run_flow('b_uniq');
SELECT * FROM b_rebuilt('b_uniq');
SELECT count(*) AS target_rows, count(DISTINCT v) AS distinct_v FROM b_uniq;

CREATE TABLE b_check (id int PRIMARY KEY, v text CHECK (v <> 'bad'));
SELECT b_flow('b_check');
INSERT INTO b_check_feed SELECT g, CASE WHEN g = 9000 THEN 'bad' ELSE 'v' || g END, 1
  FROM generate_series(1, 10000) g;
SELECT b_err($$SELECT * FROM autocdc.run_flow('b_check')$$);
SELECT count(*) AS target_rows FROM b_check;
SELECT * FROM b_rebuilt('b_check');

---------------------------------------------------------------------------
-- The rebuild evaluates the target's index expressions as the flow owner,
-- under a security-restricted operation, as the inserts it replaces would;
-- its sorts take a query's share of autocdc.work_mem (an eighth), without
-- parallel workers.
---------------------------------------------------------------------------
CREATE ROLE regress_b_owner;
GRANT CREATE ON SCHEMA public TO regress_b_owner;
CREATE TABLE b_who (who name, restricted boolean, sort_mem text, workers text);
GRANT INSERT ON b_who TO regress_b_owner;
-- logs who evaluates it, whether it may create a temporary table, and the
-- memory and parallel workers an index build may use
CREATE FUNCTION b_log_who() RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	r boolean := false;
BEGIN
	BEGIN
		CREATE TEMP TABLE b_probe ();
		DROP TABLE b_probe;
	EXCEPTION WHEN OTHERS THEN
		r := true;
	END;
	INSERT INTO public.b_who VALUES (current_user, r, current_setting('maintenance_work_mem'),
									 current_setting('max_parallel_maintenance_workers'));
END $f$;
-- an index expression that logs, for key 1
CREATE FUNCTION b_key_logged(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $f$
BEGIN
	IF i = 1 THEN
		PERFORM public.b_log_who();
	END IF;
	RETURN i;
END $f$;
SET ROLE regress_b_owner;
CREATE TABLE b_own_feed (id int, v text, seq int);
SELECT autocdc.create_flow('b_own', 'b_own_feed', '{id}', sequence_by => 'seq',
	except_column_list => '{seq}', continuous => false);
CREATE INDEX b_own_logged ON b_own (public.b_key_logged(id));
SELECT * FROM autocdc.run_flow('b_own');
INSERT INTO b_own_feed SELECT g, 'v' || g, 1 FROM generate_series(1, 10000) g;
RESET ROLE;
SELECT b_remember('b_own');
SET autocdc.work_mem = '64MB';
SET maintenance_work_mem = '1GB';
SELECT * FROM autocdc.run_flow('b_own');
RESET autocdc.work_mem;
RESET maintenance_work_mem;
SELECT idx, rebuilt FROM b_rebuilt('b_own') WHERE idx = 'b_own_logged';
SELECT DISTINCT who, restricted, sort_mem, workers FROM b_who;
