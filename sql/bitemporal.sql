--
-- bitemporal: business time (__start_at, __end_at: sequence_by) and system
-- time (__system_start_at, __system_end_at: system_sequence_by).  The belief
-- at system time t of a key is the SCD 2 result of its events whose system
-- sequence is <= t; the target holds one row per business version and
-- maximal run of system times in which it is believed.
-- Result lines of run_flow: (num_events, num_upserted_rows, num_deleted_rows,
-- num_skipped_events), by row identity (keys, __start_at, __system_start_at).
--
\pset null '(null)'
CREATE TABLE bt_events (run int, company_id text, data_point text, bt time, st time, operation text);
INSERT INTO bt_events VALUES
	(1, 'A', 'XFv1', '10:01', '10:05', 'INSERT'),
	(2, 'A', 'XFv2', '12:15:43', '12:20', 'UPDATE'),
	(3, 'A', 'XFv3', '12:05', '12:25', 'UPDATE'),
	(4, 'A', 'XFv2', '12:30', '12:30', 'DELETE');
-- a feed and a flow of example 8
CREATE FUNCTION bt_flow(name text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('CREATE TABLE %I (company_id text, data_point text, bt time, st time, operation text)', name || '_feed');
	RETURN autocdc.create_flow(name, name || '_feed', '{company_id}', sequence_by => 'bt',
		stored_as_scd_type => 'bitemporal', system_sequence_by => 'st',
		apply_as_deletes => $d$operation = 'DELETE'$d$, except_column_list => '{bt,st,operation}',
		continuous => false);
END $$;
CREATE FUNCTION bt_rows(tgt regclass) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format('SELECT concat_ws('' '', data_point, __start_at, coalesce(__end_at::text, ''-''),
		__system_start_at, coalesce(__system_end_at::text, ''-'')) FROM %s
		ORDER BY company_id, __start_at, __system_start_at', tgt);
END $$;
CREATE FUNCTION bt_run(name text) RETURNS text LANGUAGE sql AS $$
	SELECT format('(%s, %s, %s, %s)', num_events, num_upserted_rows, num_deleted_rows, num_skipped_events)
	FROM autocdc.run_flow(name) $$;

-- example 8, one event per run: the target after each run
SELECT bt_flow('bt_each');
\d bt_each
INSERT INTO bt_each_feed SELECT company_id, data_point, bt, st, operation FROM bt_events WHERE run = 1;
SELECT bt_run('bt_each');
SELECT bt_rows('bt_each');
INSERT INTO bt_each_feed SELECT company_id, data_point, bt, st, operation FROM bt_events WHERE run = 2;
SELECT bt_run('bt_each');
SELECT bt_rows('bt_each');
INSERT INTO bt_each_feed SELECT company_id, data_point, bt, st, operation FROM bt_events WHERE run = 3;
SELECT bt_run('bt_each');
SELECT bt_rows('bt_each');
INSERT INTO bt_each_feed SELECT company_id, data_point, bt, st, operation FROM bt_events WHERE run = 4;
SELECT bt_run('bt_each');
SELECT bt_rows('bt_each');
-- nothing new: nothing written
SELECT bt_run('bt_each');

-- all four events in one run, and in reversed order (one run each, then all
-- at once): the same target
SELECT bt_flow('bt_one');
INSERT INTO bt_one_feed SELECT company_id, data_point, bt, st, operation FROM bt_events ORDER BY run;
SELECT bt_run('bt_one');
SELECT bt_flow('bt_rev');
INSERT INTO bt_rev_feed SELECT company_id, data_point, bt, st, operation FROM bt_events WHERE run = 4;
SELECT bt_run('bt_rev');
SELECT bt_rows('bt_rev');
INSERT INTO bt_rev_feed SELECT company_id, data_point, bt, st, operation FROM bt_events WHERE run = 3;
SELECT bt_run('bt_rev');
INSERT INTO bt_rev_feed SELECT company_id, data_point, bt, st, operation FROM bt_events WHERE run = 2;
SELECT bt_run('bt_rev');
INSERT INTO bt_rev_feed SELECT company_id, data_point, bt, st, operation FROM bt_events WHERE run = 1;
SELECT bt_run('bt_rev');
SELECT bt_flow('bt_rev1');
INSERT INTO bt_rev1_feed SELECT company_id, data_point, bt, st, operation FROM bt_events ORDER BY run DESC;
SELECT bt_run('bt_rev1');
SELECT (SELECT array_agg(r) FROM bt_rows('bt_one') r) = (SELECT array_agg(r) FROM bt_rows('bt_each') r) AS one_run_same,
       (SELECT array_agg(r) FROM bt_rows('bt_rev') r) = (SELECT array_agg(r) FROM bt_rows('bt_each') r) AS reversed_runs_same,
       (SELECT array_agg(r) FROM bt_rows('bt_rev1') r) = (SELECT array_agg(r) FROM bt_rows('bt_each') r) AS reversed_one_run_same;

-- ties: equal business and system sequence, the later arrival wins (and the
-- loser leaves the hidden state); equal business sequence, a later system
-- sequence replaces the earlier event from its system time on
SELECT bt_flow('bt_tie');
INSERT INTO bt_tie_feed VALUES ('A', 'first', '10:00', '11:00', 'INSERT');
INSERT INTO bt_tie_feed VALUES ('A', 'second', '10:00', '11:00', 'UPDATE');
SELECT bt_run('bt_tie');
SELECT bt_rows('bt_tie');
INSERT INTO bt_tie_feed VALUES ('A', 'corrected', '10:00', '12:00', 'UPDATE');
SELECT bt_run('bt_tie');
SELECT bt_rows('bt_tie');
-- a late correction known earlier in system time rewrites what was believed
INSERT INTO bt_tie_feed VALUES ('A', 'early', '10:00', '11:30', 'UPDATE');
SELECT bt_run('bt_tie');
SELECT bt_rows('bt_tie');
-- three events kept: the exact tie's loser is gone
SELECT id AS tie_id FROM autocdc.target WHERE relid = 'bt_tie'::regclass \gset
SELECT count(*) AS state_events FROM autocdc_state.target_:tie_id;
-- a truncate (every key) at business time 10:30, known at 13:00
SELECT autocdc.drop_flow('bt_tie', true);
SELECT bt_flow('bt_tr');
SELECT autocdc.drop_flow('bt_tr');
SELECT autocdc.create_flow('bt_tr', 'bt_tr_feed', '{company_id}', sequence_by => 'bt',
	stored_as_scd_type => 'bitemporal', system_sequence_by => 'st',
	apply_as_deletes => $$operation = 'DELETE'$$, apply_as_truncates => $$operation = 'TRUNCATE'$$,
	except_column_list => '{bt,st,operation}', continuous => false);
INSERT INTO bt_tr_feed VALUES ('A', 'a1', '10:00', '11:00', 'INSERT'), ('B', 'b1', '10:10', '11:00', 'INSERT');
SELECT bt_run('bt_tr');
INSERT INTO bt_tr_feed VALUES (NULL, NULL, '10:30', '13:00', 'TRUNCATE');
SELECT bt_run('bt_tr');
SELECT concat_ws(' ', company_id, data_point, __start_at, coalesce(__end_at::text, '-'), __system_start_at,
	coalesce(__system_end_at::text, '-')) FROM bt_tr ORDER BY 1;

-- history tracking: an untracked change is not a new business version of
-- SCD 2, but a changed belief (a new row from its system time)
CREATE TABLE bt_tk_feed (id int, a text, b text, bt int, st int);
SELECT autocdc.create_flow('bt_tk', 'bt_tk_feed', '{id}', sequence_by => 'bt', stored_as_scd_type => 'bitemporal',
	system_sequence_by => 'st', except_column_list => '{bt,st}', track_history_column_list => '{a}', continuous => false);
INSERT INTO bt_tk_feed VALUES (1, 'x', 'p', 1, 1), (1, 'x', 'q', 2, 2), (1, 'y', 'q', 3, 3);
SELECT bt_run('bt_tk');
SELECT id, a, b, __start_at, __end_at, __system_start_at, __system_end_at FROM bt_tk ORDER BY __start_at, __system_start_at;

-- a NULL system sequence fails the run, naming flow, key and position
INSERT INTO bt_tk_feed VALUES (2, 'x', 'p', 1, NULL);
\set VERBOSITY terse
SELECT bt_run('bt_tk');
\set VERBOSITY default
SELECT state, last_error LIKE '%null system sequence%' AS names_it, last_error_lsn IS NOT NULL AS with_position
	FROM autocdc.flows WHERE name = 'bt_tk';

-- the statement form
CREATE TABLE bt_st_feed (id int, v text, bt int, st int);
DO LANGUAGE autocdc $$ CREATE FLOW bt_st AS AUTO CDC INTO bt_st_t FROM bt_st_feed KEYS (id)
  SEQUENCE BY bt SYSTEM SEQUENCE BY st COLUMNS * EXCEPT (bt, st) STORED AS BITEMPORAL $$;
SELECT name, scd_type FROM autocdc.flows WHERE name = 'bt_st';
\d bt_st_t
-- a ROW system sequence gets <target>_sysseq
CREATE TABLE bt_row_feed (id int, v text, bt int, st1 int, st2 int);
SELECT autocdc.create_flow('bt_row', 'bt_row_feed', '{id}', sequence_by => 'bt', stored_as_scd_type => 'bitemporal',
	system_sequence_by => 'ROW(st1, st2)', except_column_list => '{bt,st1,st2}', continuous => false);
INSERT INTO bt_row_feed VALUES (1, 'a', 1, 1, 5), (1, 'b', 2, 1, 7), (1, 'c', 1, 2, 0);
SELECT bt_run('bt_row');
SELECT id, v, __start_at, __end_at, __system_start_at, __system_end_at FROM bt_row ORDER BY __start_at, __system_start_at;
SELECT autocdc.drop_flow('bt_row', true);
SELECT to_regtype('bt_row_sysseq') AS sysseq_type_left;
