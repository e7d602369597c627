-- autocdc benchmark of target kinds (scale_bench.sh): the results as markdown.
\set ON_ERROR_STOP 1
-- a partitioned or distributed target must leave the same current rows as the ordinary one
UPDATE bench_results r
   SET check_result = coalesce(nullif(r.check_result, 'ok') || ', ', '') || 'MISMATCH: rows differ from the ordinary target'
  FROM bench_results o
 WHERE r.method ~ '^autocdc_scd[12][pd]$' AND o.method = left(r.method, -1)
   AND o.prepop = r.prepop AND o.n = r.n AND o.rep = r.rep
   AND r.result_md5 IS DISTINCT FROM o.result_md5;

\pset tuples_only on
\pset format unaligned
\pset footer off
\echo
\echo 'time = the median of the repetitions; vs ordinary = the median of the ratios to the ordinary target of the same repetition (their range).'
\echo
\echo '| target rows before | events in batch | SCD | target | time (s) | µs/event | vs ordinary |'
\echo '|---:|---:|---|---|---:|---:|---:|'
WITH runs AS (
	SELECT r.prepop, r.n, r.method, r.secs, r.check_result, r.secs / o.secs AS ratio
	  FROM bench_results r
	  JOIN bench_results o ON o.method = rtrim(r.method, 'pd') AND o.prepop = r.prepop
		   AND o.n = r.n AND o.rep = r.rep
	 WHERE r.method ~ '^autocdc_scd[12][pd]?$'),
agg AS (
	SELECT prepop, n, method, count(*) AS reps,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) AS secs,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY ratio) AS ratio,
		   min(ratio) AS lo, max(ratio) AS hi,
		   string_agg(DISTINCT check_result, ', ') FILTER (WHERE check_result <> 'ok') AS bad
	  FROM runs GROUP BY prepop, n, method)
SELECT format('| %s | %s | %s | %s | %s | %s | %s |',
			  to_char(prepop, 'FM999,999,999'), to_char(n, 'FM999,999,999'),
			  substr(method, 12, 1),
			  CASE WHEN method LIKE '%p' THEN 'partitioned (hash of the key, 4)'
				   WHEN method LIKE '%d' THEN 'distributed (Citus, by the key)' ELSE 'ordinary' END
			  || coalesce(' (' || bad || ')', ''),
			  to_char(secs, 'FM999990.00'), to_char(1e6 * secs / n, 'FM999990.0'),
			  CASE WHEN method !~ '[pd]$' THEN '1.00'
				   WHEN reps = 1 THEN to_char(ratio, 'FM9990.00') || '×'
				   ELSE to_char(ratio, 'FM9990.00') || '× (' || to_char(lo, 'FM9990.00') || '–'
						|| to_char(hi, 'FM9990.00') || ')' END)
  FROM agg ORDER BY prepop, n, method;

-- the first loads: the pre-population, P insert events into the empty target in one run
SELECT count(*) > 0 AS has_preload FROM bench_results WHERE method LIKE '% preload' \gset
\if :has_preload
\echo
\echo 'First loads (the pre-population: one run of that many insert events into the empty target; indexes rebuilt after the load):'
\echo
\echo '| events | SCD | target | time (s) | µs/event | vs ordinary |'
\echo '|---:|---|---|---:|---:|---:|'
WITH runs AS (
	SELECT r.n, r.method, r.secs, r.secs / o.secs AS ratio
	  FROM bench_results r
	  JOIN bench_results o ON o.method = regexp_replace(r.method, '[pd] preload$', ' preload')
		   AND o.n = r.n AND o.rep = r.rep
	 WHERE r.method ~ '^autocdc_scd[12][pd]? preload$'),
agg AS (
	SELECT n, method, count(*) AS reps,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) AS secs,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY ratio) AS ratio,
		   min(ratio) AS lo, max(ratio) AS hi
	  FROM runs GROUP BY n, method)
SELECT format('| %s | %s | %s | %s | %s | %s |',
			  to_char(n, 'FM999,999,999'), substr(method, 12, 1),
			  CASE WHEN method LIKE '%p preload' THEN 'partitioned (hash of the key, 4)'
				   WHEN method LIKE '%d preload' THEN 'distributed (Citus, by the key)' ELSE 'ordinary' END,
			  to_char(secs, 'FM999990.00'), to_char(1e6 * secs / n, 'FM999990.0'),
			  CASE WHEN method !~ '[pd] preload$' THEN '1.00'
				   WHEN reps = 1 THEN to_char(ratio, 'FM9990.00') || '×'
				   ELSE to_char(ratio, 'FM9990.00') || '× (' || to_char(lo, 'FM9990.00') || '–'
						|| to_char(hi, 'FM9990.00') || ')' END)
  FROM agg ORDER BY n, method;
\endif

SELECT count(*) AS nbad, count(*) > 0 AS bad FROM bench_results
 WHERE method NOT LIKE '% preload' AND check_result IS DISTINCT FROM 'ok' \gset
\if :bad
\echo 'WARNING:' :nbad 'measurement(s) failed their result check (see check_result)'
\endif
