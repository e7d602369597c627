-- runtime: run-time behaviour of change flows: flows run as their owner,
-- NULL sequences and keys fail a whole run until skip_events passes them,
-- full_refresh, drop_flow, the flows view, pause/resume.
--
-- r_err(sql) runs a statement and returns its error; r_show(sql) shows it as
-- "SQLSTATE: message" plus DETAIL and HINT, with LSNs (which differ between
-- runs) replaced by X/X.
CREATE FUNCTION r_err(sql text, OUT code text, OUT message text, OUT detail text, OUT hint text)
LANGUAGE plpgsql AS $f$
BEGIN
	EXECUTE sql;
	code := 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
							detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
END
$f$;
CREATE FUNCTION r_show(sql text) RETURNS text LANGUAGE sql AS $f$
	SELECT regexp_replace(code || coalesce(': ' || message, '')
		|| CASE WHEN detail <> '' THEN E'\nDETAIL: ' || detail ELSE '' END
		|| CASE WHEN hint <> '' THEN E'\nHINT: ' || hint ELSE '' END,
		'[0-9A-F]{1,8}/[0-9A-F]{1,8}', 'X/X', 'g')
	  FROM r_err(sql)
$f$;
-- the LSN an error's DETAIL names
CREATE FUNCTION r_err_lsn(sql text) RETURNS pg_lsn LANGUAGE sql AS $f$
	SELECT (regexp_match(detail, '[0-9A-F]{1,8}/[0-9A-F]{1,8}'))[1]::pg_lsn FROM r_err(sql)
$f$;

--
-- Flows run as their owner, under a security-restricted operation, and the
-- owner needs no REPLICATION attribute.
--
CREATE ROLE regress_r_owner;
SELECT rolsuper, rolreplication, rolbypassrls FROM pg_roles WHERE rolname = 'regress_r_owner';
GRANT CREATE ON SCHEMA public TO regress_r_owner;
CREATE TABLE r_log (who name, what text);
GRANT INSERT ON r_log TO regress_r_owner;
-- a sequence function that logs who evaluates it (a sequence must not be
-- volatile: it is STABLE, and logs through a volatile function it calls)
CREATE FUNCTION r_log_write(what text) RETURNS void LANGUAGE sql AS $f$
	INSERT INTO public.r_log VALUES (current_user, what)
$f$;
CREATE FUNCTION r_seq_logged(s int) RETURNS int LANGUAGE plpgsql STABLE AS $f$
BEGIN
	PERFORM public.r_log_write('sequence');
	RETURN s;
END
$f$;
-- one that reads a table the owner may not read
CREATE TABLE r_secret (n int);
CREATE FUNCTION r_seq_secret(s int) RETURNS int LANGUAGE plpgsql STABLE AS $f$
BEGIN
	RETURN s + (SELECT count(*) FROM public.r_secret);
END
$f$;
-- a condition that does what a security-restricted operation forbids
CREATE FUNCTION r_cond_temp(v text) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
	CREATE TEMP TABLE IF NOT EXISTS r_tmp (x int);
	RETURN false;
END
$f$;
SET ROLE regress_r_owner;
CREATE TABLE r_own_feed (id int, val text, seq int);
SELECT autocdc.create_flow('r_own', 'r_own_feed', '{id}', 'r_seq_logged(seq)', continuous => false);
INSERT INTO r_own_feed VALUES (1, 'a', 1), (2, 'b', 1);
-- the owner, without REPLICATION, runs its flow
SELECT * FROM autocdc.run_flow('r_own');
RESET ROLE;
INSERT INTO r_own_feed VALUES (1, 'a2', 2);
-- a superuser runs it: the sequence is still evaluated as the owner
SELECT * FROM autocdc.run_flow('r_own');
SELECT * FROM r_own ORDER BY id;
SELECT DISTINCT who, what FROM r_log;
-- the owner cannot read r_secret, so neither can its flow, whoever runs it
SET ROLE regress_r_owner;
SELECT autocdc.create_flow('r_own_secret', 'r_own_feed', '{id}', 'r_seq_secret(seq)', continuous => false);
SELECT autocdc.create_flow('r_own_temp', 'r_own_feed', '{id}', 'seq', apply_as_deletes => 'r_cond_temp(val)',
	continuous => false);
RESET ROLE;
SELECT r_show($$SELECT * FROM autocdc.run_flow('r_own_secret')$$) AS run_reading_secret;
SELECT count(*) AS rows_in_r_own_secret FROM r_own_secret;
-- creating a temporary table is not allowed in a security-restricted operation
SELECT r_show($$SELECT * FROM autocdc.run_flow('r_own_temp')$$) AS run_creating_temp_table;
SELECT to_regclass('pg_temp.r_tmp') IS NULL AS no_temp_table;
SELECT name, owner, state, last_error LIKE '%permission denied%' AS permission_error
  FROM autocdc.flows WHERE name = 'r_own_secret';
SELECT name, owner, state, last_error LIKE '%security-restricted%' AS restricted_error
  FROM autocdc.flows WHERE name = 'r_own_temp';
SELECT autocdc.drop_flow('r_own_secret', true);
SELECT autocdc.drop_flow('r_own_temp', true);

--
-- A NULL sequence fails the whole run: nothing of that run is applied, not
-- even other keys; the error names the flow, the key and the commit LSN.
--
CREATE TABLE r_feed (id int, val text, seq int, op text);
SELECT autocdc.create_flow('r_t', 'r_feed', '{id}', 'seq', apply_as_deletes => $$op = 'D'$$,
	apply_as_truncates => $$op = 'T'$$, column_list => '{id,val}', continuous => false);
INSERT INTO r_feed VALUES (1, 'a', 1, 'U'), (2, 'b', 1, 'U');
SELECT * FROM autocdc.run_flow('r_t');
SELECT pg_current_wal_lsn() AS before_bad \gset
BEGIN;
INSERT INTO r_feed VALUES (4, 'd', 2, 'U');
INSERT INTO r_feed VALUES (1, 'a2', NULL, 'U');
COMMIT;
SELECT pg_current_wal_lsn() AS after_bad \gset
-- a later, valid transaction
INSERT INTO r_feed VALUES (3, 'c', 2, 'U');
\set VERBOSITY terse
SELECT * FROM autocdc.run_flow('r_t');
\set VERBOSITY default
SELECT * FROM r_t ORDER BY id;
SELECT state, last_error LIKE 'flow "r_t": %null sequence%' AS null_sequence_error
  FROM autocdc.flows WHERE name = 'r_t';
-- it fails again, the same way
SELECT r_show($$SELECT * FROM autocdc.run_flow('r_t')$$) AS null_sequence;
-- the LSN is the commit of the bad transaction
SELECT r_err_lsn($$SELECT * FROM autocdc.run_flow('r_t')$$) AS bad_commit \gset
SELECT :'bad_commit'::pg_lsn > :'before_bad'::pg_lsn AND :'bad_commit'::pg_lsn <= :'after_bad'::pg_lsn
	AS lsn_of_bad_commit;
SELECT * FROM r_t ORDER BY id;
-- pass every source transaction up to the bad one
SELECT autocdc.skip_events('r_t', :'after_bad');
-- the failed runs are logged: three of them, one per failed run_flow
SELECT status, count(*), bool_and(error LIKE 'flow "r_t": %null sequence%') AS null_sequence_errors,
	   bool_and(finished_at IS NOT NULL) AS finished
  FROM autocdc.flow_runs WHERE flow = 'r_t' GROUP BY status ORDER BY status;
-- keys 1 and 4 (the bad transaction) are skipped, key 3 is applied
SELECT * FROM autocdc.run_flow('r_t');
SELECT * FROM r_t ORDER BY id;
SELECT state, last_error, num_events, num_upserted_rows, num_deleted_rows, num_skipped_events
  FROM autocdc.flows WHERE name = 'r_t';
SELECT num_events, num_upserted_rows, num_deleted_rows, num_skipped_events, status, error
  FROM autocdc.flow_runs WHERE flow = 'r_t' ORDER BY id DESC LIMIT 1;

--
-- A NULL key likewise; the hint's LSN is the one to skip to.
--
INSERT INTO r_feed VALUES (NULL, 'n', 5, 'U');
INSERT INTO r_feed VALUES (5, 'e', 5, 'U');
SELECT r_show($$SELECT * FROM autocdc.run_flow('r_t')$$) AS null_key;
SELECT state, last_error LIKE 'flow "r_t": %null key%' AS null_key_error FROM autocdc.flows WHERE name = 'r_t';
SELECT * FROM r_t ORDER BY id;
SELECT r_err_lsn($$SELECT * FROM autocdc.run_flow('r_t')$$) AS bad_commit \gset
SELECT autocdc.skip_events('r_t', :'bad_commit');
SELECT * FROM autocdc.run_flow('r_t');
SELECT * FROM r_t ORDER BY id;
SELECT state, num_skipped_events FROM autocdc.flows WHERE name = 'r_t';

--
-- The whole error is kept (SQLSTATE, detail, hint, the commit to pass), and
-- full_refresh gets past rows that cannot become events: a row read from the
-- table has no commit position, so skip_events cannot pass it; the refresh's
-- error says so and skip_invalid => true skips and reports such rows.
--
CREATE TABLE r_ir_feed (id int, city text, seq int, op text);
SELECT autocdc.create_flow('r_ir', 'r_ir_feed', '{id}', sequence_by => 'seq', continuous => false);
SELECT * FROM autocdc.run_flow('r_ir');
SELECT pg_current_wal_lsn() AS before_bad \gset
INSERT INTO r_ir_feed VALUES (1, 'a', NULL, 'U');
SELECT pg_current_wal_lsn() AS after_bad \gset
SELECT r_show($$SELECT * FROM autocdc.run_flow('r_ir')$$) AS null_sequence;
SELECT state, last_error_sqlstate, last_error_lsn > :'before_bad' AND last_error_lsn <= :'after_bad' AS lsn_of_bad_commit,
	   position(last_error_lsn::text IN last_error_detail) > 0 AS detail_names_it,
	   position(format('skip_events(''r_ir'', ''%s'')', last_error_lsn) IN last_error_hint) > 0 AS hint_passes_it
  FROM autocdc.flows WHERE name = 'r_ir';
-- the column is the argument skip_events wants
SELECT autocdc.skip_events('r_ir', last_error_lsn) FROM autocdc.flows WHERE name = 'r_ir';
-- the run log (written down by skip_events) keeps the same
SELECT status, error_sqlstate, error_lsn > :'before_bad' AND error_lsn <= :'after_bad' AS lsn_of_bad_commit,
	   position(error_lsn::text IN error_detail) > 0 AS detail_names_it,
	   position(format('skip_events(''r_ir'', ''%s'')', error_lsn) IN error_hint) > 0 AS hint_passes_it
  FROM autocdc.flow_runs WHERE flow = 'r_ir' ORDER BY id DESC LIMIT 1;
SELECT * FROM autocdc.run_flow('r_ir');
SELECT state, last_error, last_error_detail, last_error_hint, last_error_sqlstate, last_error_lsn
  FROM autocdc.flows WHERE name = 'r_ir';
-- a schema change, whose hint recommends a refresh
ALTER TABLE r_ir_feed DROP COLUMN city;
INSERT INTO r_ir_feed VALUES (2, 1, 'U');
SELECT r_show($$SELECT * FROM autocdc.run_flow('r_ir')$$) AS dropped_column;
-- the refresh reads the skipped row from the table again: no LSN to pass
SELECT r_show($$SELECT * FROM autocdc.full_refresh('r_ir')$$) AS refresh_null_sequence;
SELECT state, last_error_sqlstate, last_error_lsn FROM autocdc.flows WHERE name = 'r_ir';
SELECT r_show($$SELECT * FROM autocdc.full_refresh('r_ir')$$) = r_show($$SELECT * FROM autocdc.full_refresh('r_ir')$$)
	AS same_error_each_time;
-- skip_invalid skips and reports it, the good row is applied, and the path ends
INSERT INTO r_ir_feed VALUES (NULL, 3, 'U'), (4, NULL, 'U');
SELECT * FROM autocdc.full_refresh('r_ir', skip_invalid => true);
SELECT * FROM r_ir ORDER BY id;
SELECT state, num_skipped_events FROM autocdc.flows WHERE name = 'r_ir';
SELECT num_events, num_skipped_events, status FROM autocdc.flow_runs WHERE flow = 'r_ir' ORDER BY id DESC LIMIT 1;
SELECT * FROM autocdc.run_flow('r_ir');
-- later events go on as usual; a refresh without skip_invalid fails on the same rows
INSERT INTO r_ir_feed VALUES (5, 2, 'U');
SELECT * FROM autocdc.run_flow('r_ir');
SELECT * FROM r_ir ORDER BY id;
SELECT r_show($$SELECT * FROM autocdc.full_refresh('r_ir', skip_invalid => false)$$) AS refresh_again;
SELECT r_show($$SELECT * FROM autocdc.full_refresh('r_ir', skip_invalid => NULL)$$) AS skip_invalid_null;
SELECT autocdc.drop_flow('r_ir', true);

--
-- Updates and deletes of a feed's rows are counted, not applied; the first
-- updates warn (once) and a feed with a primary key gets a notice.
--
CREATE TABLE r_upd_feed (id int, v text, seq int);
CREATE TABLE r_upd_pk (eid serial PRIMARY KEY, id int, v text, seq int);
SELECT autocdc.create_flow('r_upd', 'r_upd_feed', '{id}', sequence_by => 'seq', continuous => false);
SELECT autocdc.create_flow('r_updpk', 'r_upd_pk', '{id}', sequence_by => 'seq', continuous => false);
INSERT INTO r_upd_feed VALUES (1, 'a', 1), (2, 'b', 2);
SELECT * FROM autocdc.run_flow('r_upd');
UPDATE r_upd_feed SET v = 'changed';
DELETE FROM r_upd_feed WHERE id = 2;
SELECT * FROM autocdc.run_flow('r_upd');
UPDATE r_upd_feed SET v = 'again';
SELECT * FROM autocdc.run_flow('r_upd');
SELECT * FROM r_upd ORDER BY id;
SELECT num_events, num_ignored_updates, num_ignored_deletes FROM autocdc.flows WHERE name = 'r_upd';
SELECT autocdc.drop_flow('r_upd', true);
SELECT autocdc.drop_flow('r_updpk', true);
DROP TABLE r_upd_feed, r_upd_pk;

--
-- A truncate row needs no key: it deletes every key written before it.
--
INSERT INTO r_feed VALUES (NULL, NULL, 10, 'T');
SELECT * FROM autocdc.run_flow('r_t');
SELECT count(*) AS rows_after_truncate FROM r_t;
-- a late upsert older than the truncate stays deleted; a newer one is applied
INSERT INTO r_feed VALUES (1, 'late', 9, 'U'), (6, 'f', 11, 'U');
SELECT * FROM autocdc.run_flow('r_t');
SELECT * FROM r_t ORDER BY id;

-- the flows view
SELECT name, owner, kind, source, target, scd_type, continuous, state, last_error,
	   last_run_at IS NOT NULL AS has_run, num_events, num_upserted_rows, num_deleted_rows,
	   num_skipped_events, retained_wal_bytes IS NOT NULL AS retains_wal,
	   hidden_state_bytes > 0 AS has_hidden_state
  FROM autocdc.flows WHERE name = 'r_t';

-- pause and resume change the state
SELECT autocdc.pause_flow('r_t');
SELECT state FROM autocdc.flows WHERE name = 'r_t';
SELECT autocdc.resume_flow('r_t');
SELECT state FROM autocdc.flows WHERE name = 'r_t';

--
-- full_refresh empties the target and its hidden state and re-reads what the
-- feed holds now: purged rows are gone.
--
CREATE TABLE r_fr_feed (id int, val text, seq int);
SELECT autocdc.create_flow('r_fr', 'r_fr_feed', '{id}', 'seq', continuous => false);
INSERT INTO r_fr_feed VALUES (1, 'a', 1), (2, 'b', 1), (3, 'c', 1);
SELECT * FROM autocdc.run_flow('r_fr');
INSERT INTO r_fr_feed VALUES (3, 'c2', 2);
SELECT * FROM autocdc.run_flow('r_fr');
-- purging processed feed rows changes nothing ...
DELETE FROM r_fr_feed WHERE id = 2 OR seq = 2;
SELECT * FROM autocdc.run_flow('r_fr');
SELECT * FROM r_fr ORDER BY id;
-- ... until a full refresh: 2 is gone, 3 is back to c; one row of each kind
-- changed (metrics compare the target before and after)
SELECT * FROM autocdc.full_refresh('r_fr');
SELECT * FROM r_fr ORDER BY id;
-- and the flow goes on from there
INSERT INTO r_fr_feed VALUES (4, 'd', 1);
SELECT * FROM autocdc.run_flow('r_fr');
SELECT * FROM r_fr ORDER BY id;
-- totals count across full refreshes
SELECT state, num_events, num_upserted_rows, num_deleted_rows FROM autocdc.flows WHERE name = 'r_fr';

--
-- drop_flow(name) keeps the target; drop_flow(name, true) drops it and its
-- hidden state.
--
SELECT id AS fr_target_id FROM autocdc.target WHERE relid = 'r_fr'::regclass \gset
SELECT autocdc.drop_flow('r_fr');
SELECT * FROM r_fr ORDER BY id;
SELECT count(*) AS flows, (SELECT count(*) FROM autocdc.target WHERE relid = 'r_fr'::regclass) AS targets,
	   to_regclass('autocdc_state.target_' || :fr_target_id) IS NULL AS state_dropped
  FROM autocdc.flows WHERE name = 'r_fr';
-- no longer a target: an ordinary table
DROP TABLE r_fr;
SELECT id AS t_target_id FROM autocdc.target WHERE relid = 'r_t'::regclass \gset
SELECT to_regclass('autocdc_state.target_' || :t_target_id) IS NOT NULL AS state_exists;
SELECT autocdc.drop_flow('r_t', true);
SELECT to_regclass('r_t') IS NULL AS target_dropped,
	   to_regclass('autocdc_state.target_' || :t_target_id) IS NULL AS state_dropped,
	   (SELECT count(*) FROM pg_class WHERE relnamespace = 'autocdc_state'::regnamespace
		   AND relname = 'target_' || :t_target_id) AS state_relations,
	   (SELECT count(*) FROM autocdc.target WHERE id = :t_target_id) AS target_rows;

--
-- Two flows into one target share its hidden state; dropping one keeps it.
--
CREATE TABLE r_a_feed (id int, val text, seq int, op text);
CREATE TABLE r_b_feed (id int, val text, seq int, op text);
SELECT autocdc.create_flow('r_sh', 'r_a_feed', '{id}', 'seq', apply_as_deletes => $$op = 'D'$$,
	column_list => '{id,val}', name => 'r_sh_a', continuous => false);
SELECT autocdc.create_flow('r_sh', 'r_b_feed', '{id}', 'seq', apply_as_deletes => $$op = 'D'$$,
	column_list => '{id,val}', name => 'r_sh_b', continuous => false);
SELECT id AS sh_target_id FROM autocdc.target WHERE relid = 'r_sh'::regclass \gset
INSERT INTO r_a_feed VALUES (1, 'a', 1, 'U'), (1, NULL, 5, 'D');
INSERT INTO r_b_feed VALUES (2, 'b', 1, 'U');
SELECT * FROM autocdc.run_flow('r_sh_a');
SELECT * FROM autocdc.run_flow('r_sh_b');
SELECT * FROM r_sh ORDER BY id;
SELECT autocdc.drop_flow('r_sh_a');
SELECT name FROM autocdc.flows WHERE target = 'r_sh'::regclass ORDER BY name;
SELECT to_regclass('autocdc_state.target_' || :sh_target_id) IS NOT NULL AS state_kept,
	   hidden_state_bytes > 0 AS has_hidden_state
  FROM autocdc.flows WHERE name = 'r_sh_b';
-- the delete of key 1 at 5 (by the dropped flow) is still remembered: a late
-- upsert at 3 stays deleted, one at 6 is applied
INSERT INTO r_b_feed VALUES (1, 'late', 3, 'U');
SELECT * FROM autocdc.run_flow('r_sh_b');
SELECT * FROM r_sh ORDER BY id;
INSERT INTO r_b_feed VALUES (1, 'new', 6, 'U');
SELECT * FROM autocdc.run_flow('r_sh_b');
SELECT * FROM r_sh ORDER BY id;
SELECT autocdc.drop_flow('r_sh_b', true);
SELECT to_regclass('r_sh') IS NULL AS target_dropped,
	   to_regclass('autocdc_state.target_' || :sh_target_id) IS NULL AS state_dropped;

-- a key type without a hash function (bit varying): touched keys are found by SQL
CREATE TABLE r_bfeed (k varbit, v text, seq int);
SELECT autocdc.create_flow('r_bits', 'r_bfeed', '{k}', 'seq', continuous => false);
SELECT * FROM autocdc.run_flow('r_bits');
INSERT INTO r_bfeed VALUES (B'101', 'a', 1), (B'101', 'b', 2), (B'11', 'c', 1);
SELECT * FROM autocdc.run_flow('r_bits');
INSERT INTO r_bfeed VALUES (B'101', 'late', 0), (B'11', 'd', 3);
SELECT * FROM autocdc.run_flow('r_bits');
SELECT * FROM r_bits ORDER BY k;
SELECT autocdc.drop_flow('r_bits', true);
DROP TABLE r_bfeed;
-- ... also when the run's stores spill (64kB): a store no query read last is
-- freed by the run (it used to be left open: "temporary file leak" warnings)
CREATE TABLE r_bdfeed (k varbit, v text, seq int, op text);
SELECT autocdc.create_flow('r_bd', 'r_bdfeed', '{k}', 'seq', continuous => false,
	apply_as_deletes => $$op = 'D'$$, except_column_list => '{op}');
SELECT * FROM autocdc.run_flow('r_bd');
INSERT INTO r_bdfeed SELECT (g % 5000)::bit(16)::varbit, md5(g::text), g,
	CASE WHEN g % 7 = 0 THEN 'D' ELSE 'U' END FROM generate_series(1, 30000) g;
SET work_mem = '64kB';
SET autocdc.work_mem = '64kB';
SELECT * FROM autocdc.run_flow('r_bd');
RESET work_mem;
RESET autocdc.work_mem;
WITH last AS (SELECT DISTINCT ON (k) k, v, seq, op FROM r_bdfeed ORDER BY k, seq DESC)
SELECT (SELECT count(*) FROM last WHERE op = 'U') AS expected,
	   (SELECT count(*) FROM r_bd) AS target,
	   (SELECT count(*) FROM last l JOIN r_bd t USING (k) WHERE l.op = 'U' AND l.v = t.v AND l.seq = t.seq) AS same;
SELECT autocdc.drop_flow('r_bd', true);
DROP TABLE r_bdfeed;

-- a partitioned feed: inserts into any partition are events of the feed
CREATE TABLE r_pfeed (k int, v text, seq int) PARTITION BY RANGE (seq);
CREATE TABLE r_pfeed_1 PARTITION OF r_pfeed FOR VALUES FROM (0) TO (100);
CREATE TABLE r_pfeed_2 PARTITION OF r_pfeed FOR VALUES FROM (100) TO (1000);
INSERT INTO r_pfeed VALUES (1, 'a', 1), (2, 'b', 150);
SELECT autocdc.create_flow('r_part', 'r_pfeed', '{k}', 'seq', continuous => false);
SELECT * FROM autocdc.run_flow('r_part');
INSERT INTO r_pfeed VALUES (1, 'a2', 200), (3, 'c', 5), (2, 'b-late', 120);
SELECT * FROM autocdc.run_flow('r_part');
SELECT * FROM r_part ORDER BY k;
-- a partition whose columns are in another order (and has a dropped one)
CREATE TABLE r_pfeed_3 (x int, seq int, v text, k int);
ALTER TABLE r_pfeed_3 DROP COLUMN x;
ALTER TABLE r_pfeed ATTACH PARTITION r_pfeed_3 FOR VALUES FROM (1000) TO (2000);
INSERT INTO r_pfeed VALUES (4, 'd', 1500), (1, 'a3', 1600);
SELECT * FROM autocdc.run_flow('r_part');
SELECT * FROM r_part ORDER BY k;
SELECT autocdc.drop_flow('r_part', true);
DROP TABLE r_pfeed;

-- values stored out of line (TOAST) arrive whole
CREATE TABLE r_tfeed (k int, v text, seq int);
SELECT autocdc.create_flow('r_toast', 'r_tfeed', '{k}', 'seq', continuous => false);
SELECT * FROM autocdc.run_flow('r_toast');
INSERT INTO r_tfeed
SELECT i, (SELECT string_agg(md5(i::text || g::text), '') FROM generate_series(1, 3000) g), i
  FROM generate_series(1, 3) i;
SELECT * FROM autocdc.run_flow('r_toast');
SELECT t.k, length(t.v) AS len, t.v = f.v AS same_value
  FROM r_toast t JOIN r_tfeed f USING (k) ORDER BY k;
SELECT autocdc.drop_flow('r_toast', true);
DROP TABLE r_tfeed;

--
-- A target's own rules hold: NOT NULL and CHECK constraints, unique
-- indexes, triggers (which run under autocdc's search_path), and FORCE ROW
-- LEVEL SECURITY for an owner that is not a superuser.  Two targets alike but
-- for a trigger fail the same way, and a failing run applies nothing.
--
CREATE TABLE r_ck_feed (k int, v int, w text, seq int);
CREATE TABLE r_ck (k int PRIMARY KEY, v int CHECK (v > 0), w text NOT NULL UNIQUE);
CREATE TABLE r_ckt (k int PRIMARY KEY, v int CHECK (v > 0), w text NOT NULL UNIQUE);
CREATE TABLE r_ck_log (k int, w text);
CREATE FUNCTION r_ck_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.r_ck_log VALUES (NEW.k, NEW.w); RETURN NEW; END $$;
CREATE TRIGGER r_ck_log AFTER INSERT ON r_ckt FOR EACH ROW EXECUTE FUNCTION r_ck_log();
SELECT autocdc.create_flow(t, 'r_ck_feed', '{k}', sequence_by => 'seq',
	except_column_list => '{seq}', continuous => false)
  FROM unnest(ARRAY['r_ck', 'r_ckt']) t;
GRANT SELECT ON r_ck_feed TO regress_r_owner;
SET ROLE regress_r_owner;
CREATE TABLE r_ckr (k int PRIMARY KEY, v int, w text);
ALTER TABLE r_ckr ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY r_ckr_small ON r_ckr USING (true) WITH CHECK (v < 100);
SELECT autocdc.create_flow('r_ckr', 'r_ck_feed', '{k}', sequence_by => 'seq',
	except_column_list => '{seq}', continuous => false);
RESET ROLE;
SELECT a.num_events, b.num_events, c.num_events
  FROM autocdc.run_flow('r_ck') a, autocdc.run_flow('r_ckt') b, autocdc.run_flow('r_ckr') c;
INSERT INTO r_ck_feed VALUES (1, 1, 'a', 1), (2, 2, 'b', 1);
SELECT * FROM autocdc.run_flow('r_ck');
SELECT * FROM autocdc.run_flow('r_ckt');
SELECT * FROM autocdc.run_flow('r_ckr');
SELECT * FROM r_ck_log ORDER BY k;     -- the trigger fired for both rows
-- each bad event fails both runs the same way, then is skipped
INSERT INTO r_ck_feed VALUES (3, -1, 'c', 2);
SELECT pg_current_wal_insert_lsn() AS ck_lsn \gset
SELECT r_show($$SELECT autocdc.run_flow('r_ck')$$);
SELECT r_show($$SELECT autocdc.run_flow('r_ckt')$$);
SELECT autocdc.skip_events(f, :'ck_lsn') FROM unnest(ARRAY['r_ck', 'r_ckt']) f;
INSERT INTO r_ck_feed VALUES (4, 4, NULL, 2);
SELECT pg_current_wal_insert_lsn() AS ck_lsn \gset
SELECT r_show($$SELECT autocdc.run_flow('r_ck')$$);
SELECT r_show($$SELECT autocdc.run_flow('r_ckt')$$);
SELECT autocdc.skip_events(f, :'ck_lsn') FROM unnest(ARRAY['r_ck', 'r_ckt']) f;
INSERT INTO r_ck_feed VALUES (5, 5, 'a', 2);
SELECT pg_current_wal_insert_lsn() AS ck_lsn \gset
SELECT r_show($$SELECT autocdc.run_flow('r_ck')$$);
SELECT r_show($$SELECT autocdc.run_flow('r_ckt')$$);
SELECT autocdc.skip_events(f, :'ck_lsn') FROM unnest(ARRAY['r_ck', 'r_ckt']) f;
INSERT INTO r_ck_feed VALUES (6, 150, 'f', 2);
SELECT r_show($$SELECT autocdc.run_flow('r_ckr')$$);
SELECT * FROM autocdc.run_flow('r_ck');
SELECT * FROM autocdc.run_flow('r_ckt');
SELECT * FROM r_ck ORDER BY k;
SELECT count(*) AS differences FROM (TABLE r_ck EXCEPT TABLE r_ckt) d;
SELECT * FROM r_ck_log ORDER BY k;
SELECT autocdc.drop_flow(f, true) FROM unnest(ARRAY['r_ck', 'r_ckt', 'r_ckr']) f;
DROP TABLE r_ck_feed, r_ck_log;
DROP FUNCTION r_ck_log();

-- each role sees the flows (and runs) it may act for; errors can quote source values
CREATE ROLE regress_r_other;
SET ROLE regress_r_other;
SELECT count(*) AS flows_seen_by_other FROM autocdc.flows;
SELECT count(*) AS runs_seen_by_other FROM autocdc.flow_runs;
RESET ROLE;
SET ROLE regress_r_owner;
SELECT name FROM autocdc.flows ORDER BY name;
SELECT count(*) > 0 AS owner_sees_its_runs, bool_and(flow = 'r_own') AS only_its_own
  FROM autocdc.flow_runs;
RESET ROLE;
SELECT count(*) AS all_flows FROM autocdc.flows \gset
GRANT pg_read_all_stats TO regress_r_other;
SET ROLE regress_r_other;
SELECT count(*) = :all_flows AS monitor_sees_all, bool_or(name = 'r_own') AS sees_others_flow
  FROM autocdc.flows;
RESET ROLE;
DROP ROLE regress_r_other;

-- clean up
SELECT autocdc.drop_flow('r_own', true);
DROP TABLE r_feed, r_fr_feed, r_a_feed, r_b_feed, r_own_feed, r_log, r_secret;
DROP FUNCTION r_seq_logged(int), r_log_write(text), r_seq_secret(int), r_cond_temp(text);
REVOKE CREATE ON SCHEMA public FROM regress_r_owner;
DROP ROLE regress_r_owner;
SELECT count(*) AS flows_left FROM autocdc.flows WHERE name LIKE 'r\_%';
DROP FUNCTION r_err_lsn(text), r_show(text), r_err(text);
