-- autocdc benchmark: the results as markdown (paste into docs/benchmarks.md).
\set ON_ERROR_STOP 1
-- every method must leave the same (current) rows as the baseline
UPDATE bench_results r
   SET check_result = coalesce(nullif(r.check_result, 'ok') || ', ', '') || 'MISMATCH: rows differ from merge'
  FROM bench_results m
 WHERE m.method = 'merge' AND m.prepop = r.prepop AND m.gen = r.gen AND m.n = r.n AND m.rep = r.rep
   AND r.method IN ('autocdc_scd1', 'autocdc_scd2', 'scd2sql')
   AND r.result_md5 IS DISTINCT FROM m.result_md5;

\pset tuples_only on
\pset format unaligned
\pset footer off

\echo
\echo '"rows changed": target rows the batch inserted, rewrote or deleted (num_upserted_rows + num_deleted_rows of the SCD 1 run for the MERGE and SCD 1,'
\echo 'those of the SCD 2 run for SCD 2: versions written).  Per event, a batch costs more on the 1M-row target because its updates and deletes'
\echo 'then fall on many more distinct existing keys; per row changed, the cost is what stays flat.  "(events of 10,000)": the events of the'
\echo '10k-row case (new keys moved above the 1M existing ones): the same work on a target a hundred times bigger.'
\echo 'vs baseline: SCD 1 against the hand-written DISTINCT ON + MERGE, SCD 2 against the hand-written SCD 2 (against the MERGE when that was not measured).'
\echo 'With several repetitions: time = the median; vs baseline = the median of the ratios to the baseline of the same repetition (their range).'
\echo
\echo '| target rows before | events in batch | method | time (s) | events/s | µs/event | rows changed | µs/row changed | time vs baseline |'
\echo '|---:|---:|---|---:|---:|---:|---:|---:|---:|'
WITH runs AS (
	-- each measured run, with its baseline of the same repetition and the rows it changed
	SELECT r.prepop, r.gen, r.n, r.method, r.rep, r.secs, r.check_result,
		   r.secs / coalesce(CASE WHEN r.method IN ('autocdc_scd2', 'scd2sql') THEN h.secs END,
							 m.secs) AS ratio,
		   (SELECT x.upserted + x.deleted FROM bench_results x
			 WHERE x.prepop = r.prepop AND x.gen = r.gen AND x.n = r.n AND x.rep = r.rep
			   AND x.method = CASE WHEN r.method IN ('autocdc_scd2', 'scd2sql') THEN 'autocdc_scd2'
								   ELSE 'autocdc_scd1' END) AS changed
	  FROM bench_results r
	  LEFT JOIN bench_results m ON m.method = 'merge' AND m.prepop = r.prepop
		   AND m.gen = r.gen AND m.n = r.n AND m.rep = r.rep
	  LEFT JOIN bench_results h ON h.method = 'scd2sql' AND h.prepop = r.prepop
		   AND h.gen = r.gen AND h.n = r.n AND h.rep = r.rep
	 WHERE r.method IN ('merge', 'scd2sql', 'autocdc_scd1', 'autocdc_scd2')),
agg AS (
	SELECT prepop, gen, n, method, count(*) AS reps,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) AS secs,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY ratio) AS ratio,
		   min(ratio) AS ratio_lo, max(ratio) AS ratio_hi, max(changed) AS changed,
		   string_agg(DISTINCT check_result, ', ') FILTER (WHERE check_result <> 'ok') AS bad
	  FROM runs GROUP BY prepop, gen, n, method)
SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s | %s |',
			  to_char(prepop, 'FM999,999,999')
			  || CASE WHEN gen <> prepop THEN ' (events of ' || to_char(gen, 'FM999,999,999') || ')' ELSE '' END,
			  to_char(n, 'FM999,999,999'),
			  CASE method WHEN 'merge' THEN 'hand-written DISTINCT ON + MERGE (SCD 1)'
						  WHEN 'scd2sql' THEN 'hand-written SCD 2 (window functions + UPDATE + INSERT)'
						  WHEN 'autocdc_scd1' THEN 'autocdc `run_flow`, SCD 1'
						  WHEN 'autocdc_scd2' THEN 'autocdc `run_flow`, SCD 2'
						  ELSE method END
			  || CASE WHEN bad IS NULL THEN '' ELSE ' (' || bad || ')' END,
			  to_char(secs, 'FM999990.00'),
			  to_char(n / secs, 'FM999,999,990'),
			  to_char(1e6 * secs / n, 'FM999990.0'),
			  to_char(changed, 'FM999,999,999'),
			  to_char(1e6 * secs / nullif(changed, 0), 'FM999990.0'),
			  CASE WHEN method IN ('merge', 'scd2sql') THEN '1.00'
				   WHEN reps = 1 THEN to_char(ratio, 'FM9990.00') || '×'
				   ELSE to_char(ratio, 'FM9990.00') || '× (' || to_char(ratio_lo, 'FM9990.00')
						|| '–' || to_char(ratio_hi, 'FM9990.00') || ')' END)
  FROM agg
 ORDER BY prepop, gen DESC, n,
		  CASE method WHEN 'merge' THEN 0 WHEN 'autocdc_scd1' THEN 1 WHEN 'scd2sql' THEN 2 ELSE 3 END;

SELECT count(*) > 0 AS has_side FROM bench_results WHERE method LIKE '% preload' OR method LIKE '% next empty run' \gset
\if :has_side
\echo
\echo 'Side measurements (not in the ratios above): "initial load" = one run over a feed of N insert events into an empty target (the pre-population);'
\echo '"next empty run" = a run_flow right after the measured one, with no new events (it decodes the WAL the measured run wrote).'
\echo
\echo '| method | measurement | target rows before | events | time (s) | µs/event |'
\echo '|---|---|---:|---:|---:|---:|'
SELECT format('| %s | %s | %s | %s | %s | %s |', split_part(method, ' ', 1),
			  CASE WHEN method LIKE '% preload' THEN 'initial load' ELSE 'next empty run' END,
			  to_char(prepop, 'FM999,999,999')
			  || CASE WHEN gen <> prepop AND method NOT LIKE '% preload'
					  THEN ' (events of ' || to_char(gen, 'FM999,999,999') || ')' ELSE '' END,
			  to_char(CASE WHEN method LIKE '% preload' THEN n ELSE events END, 'FM999,999,999'),
			  to_char(secs, 'FM999990.00'),
			  CASE WHEN method LIKE '% preload' THEN to_char(1e6 * secs / n, 'FM999990.0') ELSE '' END)
  FROM (SELECT method, prepop, gen, n, max(events) AS events,
			   percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) AS secs
		  FROM bench_results WHERE method LIKE '% preload' OR method LIKE '% next empty run'
		 GROUP BY method, prepop, CASE WHEN method LIKE '% preload' THEN NULL ELSE gen END, gen, n) side
 WHERE method LIKE '% next empty run' OR gen = (SELECT max(b.gen) FROM bench_results b
												 WHERE b.method = side.method AND b.n = side.n)
 ORDER BY method LIKE '% preload' DESC, split_part(method, ' ', 1), prepop, gen DESC, n;
\endif

SELECT count(*) AS nbad, count(*) > 0 AS bad FROM bench_results
 WHERE method NOT LIKE '% preload' AND check_result IS DISTINCT FROM 'ok' \gset
\echo
\pset tuples_only off
\pset format aligned
\echo 'raw results (wal_written: by the measured statement; wal_decoded / wal_confirmed: from the slot restart_lsn / confirmed_flush_lsn to the end of the load):'
SELECT prepop, gen, rep, n, method, round(secs::numeric, 3) AS secs, events, upserted, deleted,
	   pg_size_pretty(wal_written) AS wal_written, pg_size_pretty(wal_decoded) AS wal_decoded, pg_size_pretty(wal_confirmed) AS wal_confirmed,
	   pg_size_pretty(wal_loaded) AS wal_loaded, check_result
  FROM bench_results ORDER BY id;
\if :bad
\echo 'WARNING:' :nbad 'measurement(s) failed their result check (see check_result)'
\endif
