-- autocdc benchmark: one SCD 2 run with one layout of the indexes of the
-- periods (included by index_bench.sh; :lay is split, full or none, :P the
-- rows of the target before the batch).  The events are bench.sh's
-- (setup.sql's bench_gen), their keys shuffled when :shuffle is true (a
-- bijection: new keys then arrive in no order); the measured run logs its
-- phase timings at DEBUG2.  :scd is 2, or 1 for an SCD 1 flow.
\set ON_ERROR_STOP 1
\ir setup.sql
SELECT bench_gen(200000, :P);
CREATE TABLE f (k bigint, a text, b int, c numeric, op text, seq bigint);
SELECT autocdc.create_flow('t', 'f', '{k}', sequence_by => 'seq', apply_as_deletes => $$op = 'DELETE'$$,
  except_column_list => '{op,seq}', stored_as_scd_type => :'scd', name => 'fl', continuous => false);
SELECT :'scd' <> '1' AND :'lay' <> 'none' AS with_index \gset
\if :with_index
SELECT autocdc.create_as_of_index('t');
\endif
SELECT * FROM autocdc.run_flow('fl') \gset
-- split: as create_as_of_index makes them (GiST over the ended versions,
-- btree over the open ones' starts); full: one GiST over every row; none
-- (what create_flow gives)
SELECT format('DROP INDEX %s', indexrelid::regclass) FROM pg_index
 WHERE indrelid = 't'::regclass AND :'lay' IN ('none', 'full')
   AND (pg_get_indexdef(indexrelid) ~ 'USING gist' OR pg_get_indexdef(indexrelid) ~ 'btree \(__start_at\) WHERE') \gexec
SELECT CASE WHEN :'lay' = 'full' THEN 'CREATE INDEX ON t USING gist (int8range(__start_at, __end_at))' END \gexec
INSERT INTO f SELECT CASE WHEN :shuffle THEN g * 40503 % 1048573 ELSE g END, 'v' || substr(md5(g::text), 1, 16), (g % 100003)::int, (g % 99991) / 100.0, 'INSERT', g
  FROM generate_series(1, :P) g;
SELECT * FROM autocdc.run_flow('fl') \gset
VACUUM ANALYZE;
CHECKPOINT;
SELECT * FROM autocdc.run_flow('fl') \gset
INSERT INTO f SELECT CASE WHEN :shuffle THEN k * 40503 % 1048573 ELSE k END, a, b, c, op, seq
  FROM ev ORDER BY ord;
CHECKPOINT;
SET client_min_messages = debug2;
SELECT clock_timestamp() AS t0 \gset
SELECT num_events, num_upserted_rows FROM autocdc.run_flow('fl') \gset
RESET client_min_messages;
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 3) AS secs;
