-- autocdc benchmark: the baseline a user would write for SCD 2 without
-- autocdc (SCD 2's baseline, as merge.sql is SCD 1's): the batch's events
-- in a staging table, deduplicated per (key, sequence) (the last arrival
-- wins), each event's version ending at the key's next event
-- (lead(seq) OVER (PARTITION BY k ORDER BY seq)); one UPDATE closes the
-- open versions the batch supersedes, one INSERT adds the new versions (a
-- delete adds none), in one transaction.  Primary key (k, __start_at) and
-- a unique index on the open version of each key.  It splices nothing
-- into the existing history (an event older than a key's open version
-- only closes nothing) and drops no unchanged update: a lower bound of
-- autocdc's work, which also captures from the WAL.  Included by
-- measure.sql.
CREATE TABLE scd2_tgt (k bigint, a text, b int, c numeric, __start_at bigint, __end_at bigint,
					   PRIMARY KEY (k, __start_at));
CREATE UNIQUE INDEX ON scd2_tgt (k) WHERE __end_at IS NULL;
CREATE TABLE stage (k bigint, a text, b int, c numeric, op text, seq bigint, ord bigint);
-- the same pre-existing rows as the flows' (one open version per key, at seq = key)
INSERT INTO scd2_tgt
SELECT g, 'v' || substr(md5(g::text), 1, 16), (g % 100003)::int, (g % 99991) / 100.0, g, NULL
  FROM generate_series(1, :P) g;
VACUUM ANALYZE scd2_tgt;
INSERT INTO stage SELECT k, a, b, c, op, seq, ord FROM ev ORDER BY ord;
ANALYZE stage;
CHECKPOINT;

SELECT clock_timestamp() AS t0, pg_current_wal_insert_lsn() AS l0 \gset
BEGIN;
CREATE TEMP TABLE versions ON COMMIT DROP AS
SELECT k, a, b, c, op, seq, lead(seq) OVER (PARTITION BY k ORDER BY seq) AS next_seq
  FROM (SELECT DISTINCT ON (k, seq) k, a, b, c, op, seq FROM stage ORDER BY k, seq, ord DESC) e;
UPDATE scd2_tgt t SET __end_at = f.first_seq
  FROM (SELECT k, min(seq) AS first_seq FROM versions GROUP BY k) f
 WHERE t.k = f.k AND t.__end_at IS NULL AND t.__start_at < f.first_seq;
INSERT INTO scd2_tgt
SELECT k, a, b, c, seq, next_seq FROM versions WHERE op <> 'DELETE';
COMMIT;
SELECT extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) AS secs,
	   pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'l0')::bigint AS walb \gset
INSERT INTO bench_results (prepop, n, method, secs, wal_written, check_result, result_md5)
SELECT :P, :N, 'scd2sql', :secs, :walb,
	   CASE WHEN count(*) = :exp_rows2 THEN 'ok'
			ELSE format('MISMATCH: %s rows, expected %s', count(*), :exp_rows2) END,
	   md5(string_agg(format('%s|%s|%s|%s', k, a, b, c), ',' ORDER BY k) FILTER (WHERE __end_at IS NULL))
  FROM scd2_tgt;
\echo 'hand-written SCD 2 (window functions + UPDATE + INSERT):' :secs 's'
