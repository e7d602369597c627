-- autocdc benchmark: the baseline a user would write for SCD 1 without
-- autocdc: a staging table of the events, DISTINCT ON (key) to keep the
-- latest event of each key, MERGE into a target that keeps the sequence (it
-- needs it to reject late events).  Included by measure.sql.
CREATE TABLE merge_tgt (k bigint PRIMARY KEY, a text, b int, c numeric, seq bigint NOT NULL);
CREATE TABLE stage (k bigint, a text, b int, c numeric, op text, seq bigint);
INSERT INTO merge_tgt
SELECT g, 'v' || substr(md5(g::text), 1, 16), (g % 100003)::int, (g % 99991) / 100.0, g
  FROM generate_series(1, :P) g;
VACUUM ANALYZE merge_tgt;
INSERT INTO stage SELECT k, a, b, c, op, seq FROM ev ORDER BY ord;
ANALYZE stage;
CHECKPOINT;

SELECT clock_timestamp() AS t0, pg_current_wal_insert_lsn() AS l0 \gset
MERGE INTO merge_tgt t
USING (SELECT DISTINCT ON (k) k, a, b, c, op, seq
		 FROM stage ORDER BY k, seq DESC) s
   ON t.k = s.k
 WHEN MATCHED AND s.seq > t.seq AND s.op = 'DELETE' THEN DELETE
 WHEN MATCHED AND s.seq > t.seq THEN UPDATE SET a = s.a, b = s.b, c = s.c, seq = s.seq
 WHEN NOT MATCHED AND s.op <> 'DELETE' THEN INSERT VALUES (s.k, s.a, s.b, s.c, s.seq);
SELECT extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) AS secs,
	   pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'l0')::bigint AS walb \gset
INSERT INTO bench_results (prepop, n, method, secs, wal_written, check_result, result_md5)
SELECT :P, :N, 'merge', :secs, :walb,
	   CASE WHEN count(*) = :exp_rows1 THEN 'ok'
			ELSE format('MISMATCH: %s rows, expected %s', count(*), :exp_rows1) END,
	   md5(string_agg(format('%s|%s|%s|%s', k, a, b, c), ',' ORDER BY k))
  FROM merge_tgt;
\echo 'merge (DISTINCT ON + MERGE):' :secs 's'
