-- changes_bench.sh: the results as markdown (psql -v rows, changes, ntx, per_tx, scale, rate,
-- toast_rows, toast_changes).
-- time = median over the repetitions; a ratio = the median of the
-- per-repetition ratios to the reference of the same repetition (their range).
\set ON_ERROR_STOP 1
\pset tuples_only on
\pset format unaligned
\pset footer off

CREATE FUNCTION pg_temp.ratio(med float8, lo float8, hi float8, n bigint) RETURNS text
LANGUAGE sql AS $$
	SELECT CASE WHEN med IS NULL THEN '–'
				WHEN n = 1 THEN to_char(med, 'FM9990.00') || '×'
				ELSE to_char(med, 'FM9990.00') || '× (' || to_char(lo, 'FM9990.00') || '–'
					 || to_char(hi, 'FM9990.00') || ')' END $$;
CREATE FUNCTION pg_temp.checked(ok bigint, n bigint) RETURNS text
LANGUAGE sql AS $$ SELECT CASE WHEN ok = n THEN 'equal (' || n || '/' || n || ')'
							   ELSE '**DIFFERENT** (' || ok || '/' || n || ' equal)' END $$;

SELECT EXISTS (SELECT FROM apply_runs) AS have_apply,
	   EXISTS (SELECT FROM write_runs) AS have_write,
	   EXISTS (SELECT FROM keepup) AS have_keepup,
	   EXISTS (SELECT FROM toast_runs) AS have_toast \gset

\if :have_apply
\echo
SELECT format('### 1. apply: %s changes to a %s-row table (%s transactions of %s), then applied at once',
			  to_char(:changes, 'FM999,999,999'), to_char(:rows, 'FM999,999,999'), :ntx, :per_tx);
\echo
\echo 'autocdc: one `run_flow` of an SCD 1 `changes(accounts)` flow (capture from the WAL included). Subscription: PostgreSQL logical'
\echo 'replication into another database of the cluster, from `ALTER SUBSCRIPTION ... ENABLE` until its origin applied the last commit.'
\echo 'Check: md5 of the rows in key order equals the table''s. Per repetition: time (position in the alternating order).'
\echo
\echo '| method | time (s) | changes/s | per repetition (s) | vs subscription | goal | check |'
\echo '|---|---:|---:|---|---:|---:|---|'
WITH runs AS (
	SELECT a.*, a.secs / s.secs AS ratio
	  FROM apply_runs a JOIN apply_runs s ON s.rep = a.rep AND s.method = 'subscription'),
agg AS (
	SELECT method, count(*) AS n,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) AS secs,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY ratio) AS ratio, min(ratio) AS lo, max(ratio) AS hi,
		   string_agg(secs || ' (' || CASE ord WHEN 1 THEN '1st' ELSE '2nd' END || ')', ', ' ORDER BY rep) AS per_rep,
		   count(*) FILTER (WHERE same) AS ok
	  FROM runs GROUP BY method)
SELECT format('| %s | %s | %s | %s | %s | %s | %s |',
			  CASE method WHEN 'autocdc' THEN 'autocdc `run_flow`, SCD 1' ELSE 'logical replication subscription' END,
			  to_char(secs, 'FM999990.00'), to_char(:changes / secs, 'FM999,999,990'), per_rep,
			  CASE method WHEN 'autocdc' THEN pg_temp.ratio(ratio, lo, hi, n) ELSE '1.00' END,
			  CASE method WHEN 'autocdc' THEN '≤ 1.0×' ELSE '' END,
			  pg_temp.checked(ok, n))
  FROM agg ORDER BY method DESC;
\endif

\if :have_write
\echo
SELECT format('### 2. write-path cost: the same %s changes (%s transactions of %s) to a %s-row table',
			  to_char(:changes, 'FM999,999,999'), :ntx, :per_tx, to_char(:rows, 'FM999,999,999'));
\echo
SELECT format('Time of the writes alone (one procedure call committing after every %s changes).', :per_tx);
\echo
\echo '| table | time (s) | changes/s | per repetition (s) | vs no flow | goal |'
\echo '|---|---:|---:|---|---:|---:|'
WITH runs AS (
	SELECT w.*, w.secs / b.secs AS ratio
	  FROM write_runs w JOIN write_runs b ON b.rep = w.rep AND b.variant = 'none'),
agg AS (
	SELECT variant, count(*) AS n,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) AS secs,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY ratio) AS ratio, min(ratio) AS lo, max(ratio) AS hi,
		   string_agg(secs::text, ', ' ORDER BY rep) AS per_rep
	  FROM runs GROUP BY variant)
SELECT format('| %s | %s | %s | %s | %s | %s |',
			  CASE variant WHEN 'none' THEN '(a) no flow'
						   WHEN 'flow' THEN '(b) `changes()` SCD 2 flow present, worker off'
						   WHEN 'periods' THEN '(c) periods system versioning'
						   ELSE variant END,
			  to_char(secs, 'FM999990.00'), to_char(:changes / secs, 'FM999,999,990'), per_rep,
			  CASE variant WHEN 'none' THEN '1.00' ELSE pg_temp.ratio(ratio, lo, hi, n) END,
			  CASE variant WHEN 'flow' THEN '≤ 1.1×' ELSE '' END)
  FROM agg WHERE variant <> 'worker'
 ORDER BY array_position(ARRAY['none', 'flow', 'periods'], variant);

SELECT EXISTS (SELECT FROM write_runs WHERE variant = 'worker') AS have_worker \gset
\if :have_worker
\echo
\echo 'With the worker on (continuous SCD 2 flow applying while the writes run; on a 2-core machine mostly CPU contention'
\echo 'between the writing backend and the worker): "caught up" = seconds after the writes ended until the worker had applied'
\echo 'the last transaction; check = the history''s current rows equal the table.'
\echo
\echo '| table | time (s) | per repetition (s) | vs no flow | caught up (s) | check |'
\echo '|---|---:|---|---:|---:|---|'
WITH runs AS (
	SELECT w.*, w.secs / b.secs AS ratio
	  FROM write_runs w JOIN write_runs b ON b.rep = w.rep AND b.variant = 'none'
	 WHERE w.variant = 'worker')
SELECT format('| (d) `changes()` SCD 2 flow, worker on | %s | %s | %s | %s | %s |',
			  to_char(percentile_cont(0.5) WITHIN GROUP (ORDER BY secs), 'FM999990.00'),
			  string_agg(secs::text, ', ' ORDER BY rep),
			  pg_temp.ratio(percentile_cont(0.5) WITHIN GROUP (ORDER BY ratio), min(ratio), max(ratio), count(*)),
			  to_char(percentile_cont(0.5) WITHIN GROUP (ORDER BY drain_secs), 'FM999990.00'),
			  pg_temp.checked(count(*) FILTER (WHERE same), count(*)))
  FROM runs;
\endif
\endif

\if :have_keepup
\echo
SELECT format('### 3. keep-up: the worker applies a continuous `changes(pgbench_accounts)` SCD 2 flow during pgbench (tpcb-like, 4 clients, scale %s, %s transactions/s offered)', :scale, :rate);
\echo
\echo 'Latency of a version = commit time of the worker transaction that first inserted it (SCD 2 closes a version by deleting and'
\echo 're-inserting it: the later inserts of the same version are not counted) − its `__start_at` (the source commit time).'
\echo 'Check: after the worker caught up, the history''s current rows equal pgbench_accounts. Warm-up: pgbench runs right after the'
\echo 'worker''s first read, until one whole run was served by the main slot (after a large first read the laggard worker has the'
\echo 'flow, and the first passes of either lane decode the first read''s WAL again); reported apart, the goal is for the measured run.'
\echo
\echo '| phase | seconds | tps achieved | versions measured | p50 | p90 | p99 | max | goal (p50 / p99) | caught up (s) | check |'
\echo '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|'
SELECT format('| %s | %s | %s | %s | %s ms | %s ms | %s ms | %s ms | %s | %s | %s |',
			  CASE phase WHEN 'run' THEN 'measured run' ELSE phase END, secs, round(tps), versions, p50, p90, p99, max,
			  CASE phase WHEN 'run' THEN '< 100 ms / < 440 ms' ELSE '' END, coalesce(drain_secs::text, ''),
			  CASE phase WHEN 'run' THEN pg_temp.checked(CASE WHEN same THEN 1 ELSE 0 END, 1) ELSE '' END)
  FROM keepup ORDER BY phase = 'run';
\endif

\if :have_toast
\echo
SELECT format('### 4. out-of-line values: %s updates of a column beside a 4 kB out-of-line value, %s rows',
			  to_char(:toast_changes, 'FM999,999,999'), to_char(:toast_rows, 'FM999,999,999'));
\echo
\echo 'One `run_flow` of an SCD 1 `changes()` flow per table, each applying its table''s updates (the WAL logs only a pointer to'
\echo 'the unchanged value). Short values: nothing out of line (the baseline). Row store: the default replica identity, the'
\echo 'flow''s row store fills the value. FULL: `REPLICA IDENTITY FULL`, the WAL holds the old row. Hidden state = the flow''s'
\echo '`hidden_state_bytes` after the run (target state and row store). Check: the copy equals the table (md5 of the rows).'
\echo
\echo '| table | time (s) | per repetition (s) | vs short values | hidden state | check |'
\echo '|---|---:|---|---:|---:|---|'
WITH runs AS (
	SELECT t.*, t.secs / b.secs AS ratio,
		   CASE t.variant WHEN 'short' THEN 1 WHEN 'store' THEN 2 ELSE 3 END AS pos
	  FROM toast_runs t JOIN toast_runs b ON b.rep = t.rep AND b.variant = 'short')
SELECT format('| %s | %s | %s | %s | %s kB | %s |',
			  CASE variant WHEN 'short' THEN 'short values' WHEN 'store' THEN '4 kB values, row store'
				   ELSE '4 kB values, `REPLICA IDENTITY FULL`' END,
			  to_char(percentile_cont(0.5) WITHIN GROUP (ORDER BY secs), 'FM999990.00'),
			  string_agg(secs::text, ', ' ORDER BY rep),
			  CASE variant WHEN 'short' THEN '1.00'
				   ELSE pg_temp.ratio(percentile_cont(0.5) WITHIN GROUP (ORDER BY ratio), min(ratio), max(ratio), count(*)) END,
			  to_char(max(state_kb), 'FM999,999,990'),
			  pg_temp.checked(count(*) FILTER (WHERE same), count(*)))
  FROM runs GROUP BY variant, pos ORDER BY pos;
\endif
