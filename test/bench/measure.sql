-- autocdc benchmark, one measurement in a fresh database:
--   psql -v N=<events> -v P=<pre-existing rows> -v G=<key space> -v R=<repetition> -v method=merge|scd2sql|scd1|scd2 -v out=<csv file>
-- Generates the events (deterministic, the same for every method) for a
-- target of G rows (G = P normally; with G < P, the events of the G-row case
-- with their new keys moved above P: the same work on a bigger target), measures
-- one method, checks the result and writes the rows of bench_results to :out.
-- Every measured statement runs alone in its own (autocommit) transaction; the
-- time is wall clock from before the statement until after its commit.
\set ON_ERROR_STOP 1
\pset footer off
SET client_min_messages = warning;

SELECT clock_timestamp() AS g0 \gset
SELECT bench_gen(:N, :G) \gset
UPDATE ev SET k = k + (:P - :G) WHERE k > :G;
SELECT count(*) FILTER (WHERE op = 'INSERT') AS n_ins,
	   count(*) FILTER (WHERE op = 'UPDATE') AS n_upd,
	   count(*) FILTER (WHERE op = 'UPDATE' AND ord <> seq) AS n_late,
	   count(*) FILTER (WHERE op = 'DELETE') AS n_del,
	   count(DISTINCT k) AS n_keys
  FROM ev \gset
SELECT (:P + :n_ins - :n_del) AS exp_rows1, (:P + :n_ins + :n_upd) AS exp_rows2,
	   round(extract(epoch FROM clock_timestamp() - :'g0'::timestamptz)::numeric, 1) AS gen_secs,
	   :'method' = 'merge' AS is_merge, :'method' = 'scd2sql' AS is_scd2sql \gset
\if :is_merge
\echo
\echo '######## scenario:' :N 'events into a target of' :P 'pre-existing rows (events generated for' :G 'rows)'
\echo 'events:' :n_ins 'inserts,' :n_upd 'updates (of which' :n_late 'late),' :n_del 'deletes over' :n_keys 'keys; generated in' :gen_secs 's'
\echo 'expected rows after the batch: SCD 1' :exp_rows1 ', SCD 2' :exp_rows2
\ir merge.sql
\elif :is_scd2sql
\ir scd2sql.sql
\else
\ir flow.sql
\endif
UPDATE bench_results SET gen = :G, rep = :R;
COPY (SELECT prepop, gen, rep, n, method, secs, events, upserted, deleted, wal_written, wal_decoded,
			 wal_confirmed, wal_loaded, check_result, result_md5
		FROM bench_results ORDER BY id) TO :'out' (FORMAT csv);
