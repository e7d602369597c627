-- autocdc benchmark: one flow measurement (included by measure.sql; :method
-- is scd1 or scd2, or scd1p / scd2p: the same into a target made before the
-- flow as a table partitioned by hash of the key, four partitions, with the
-- indexes create_flow gives its own targets).  Steps: create feed + flow; first run_flow on the empty
-- feed (it creates the database's replication slot); pre-populate the target
-- through the flow (P insert events, one run); VACUUM ANALYZE; three
-- CHECKPOINT + empty run_flow rounds, so that the slot catches up with all of
-- that (a run decodes the WAL from the slot's restart_lsn, which trails the
-- runs: without this the measured run would re-decode the pre-population);
-- load the N events into the feed in one transaction;
-- CHECKPOINT; then the measured run_flow, alone in its transaction (capture
-- from the WAL included); then, as a side measurement, one more run_flow with
-- no new events.
SELECT substr(:'method', 4, 1) AS scd, 'bench_feed' AS feed, 'bench_tgt' AS tgt,
	   'bench_' || :'method' AS flow, 'autocdc_' || :'method' AS label,
	   CASE WHEN :'method' LIKE 'scd1%' THEN :exp_rows1 ELSE :exp_rows2 END AS exp_rows,
	   :'method' LIKE '%p' AS partitioned, :'method' LIKE '%d' AS distributed,
	   :'method' LIKE 'scd2%' AS is_scd2,
	   :P > 0 AS has_prepop \gset
CREATE TABLE :"feed" (k bigint, a text, b int, c numeric, op text, seq bigint);
\if :partitioned
\if :is_scd2
CREATE TABLE :"tgt" (k bigint, a text, b int, c numeric, __start_at bigint, __end_at bigint,
					 PRIMARY KEY (k, __start_at)) PARTITION BY HASH (k);
CREATE UNIQUE INDEX ON :"tgt" (k) WHERE __end_at IS NULL;
\else
CREATE TABLE :"tgt" (k bigint PRIMARY KEY, a text, b int, c numeric) PARTITION BY HASH (k);
\endif
SELECT format('CREATE TABLE %I PARTITION OF %I FOR VALUES WITH (MODULUS 4, REMAINDER %s)',
			  :'tgt' || '_' || r, :'tgt', r)
  FROM generate_series(0, 3) r \gexec
\endif
SELECT autocdc.create_flow(:'tgt', :'feed', '{k}',
	sequence_by => 'seq',
	apply_as_deletes => $$op = 'DELETE'$$,
	except_column_list => '{op,seq}',
	stored_as_scd_type => :'scd',
	name => :'flow',
	continuous => false,
	distributed_by => CASE WHEN :'distributed'::boolean THEN 'k' END) \gset
SELECT * FROM autocdc.run_flow(:'flow') \gset f_

\if :has_prepop
INSERT INTO :"feed"
SELECT g, 'v' || substr(md5(g::text), 1, 16), (g % 100003)::int, (g % 99991) / 100.0, 'INSERT', g
  FROM generate_series(1, :P) g;
SELECT clock_timestamp() AS t0 \gset
SELECT * FROM autocdc.run_flow(:'flow') \gset p_
SELECT extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) AS secs \gset
INSERT INTO bench_results (prepop, n, method, secs, events, upserted, deleted)
VALUES (0, :P, :'label' || ' preload', :secs, :p_num_events, :p_num_upserted_rows, :p_num_deleted_rows);
\echo :label 'pre-populate:' :P 'events in' :secs 's'
\endif

VACUUM ANALYZE;
SELECT clock_timestamp() AS t0 \gset
CHECKPOINT;
SELECT * FROM autocdc.run_flow(:'flow') \gset c_
CHECKPOINT;
SELECT * FROM autocdc.run_flow(:'flow') \gset c_
CHECKPOINT;
SELECT * FROM autocdc.run_flow(:'flow') \gset c_
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2) AS secs \gset
\echo '   catching up (3 x CHECKPOINT + empty run_flow):' :secs 's'
SELECT pg_current_wal_insert_lsn() AS ll0 \gset
INSERT INTO :"feed" SELECT k, a, b, c, op, seq FROM ev ORDER BY ord;
SELECT pg_current_wal_insert_lsn() AS ll1 \gset
CHECKPOINT;
-- how much WAL the measured run has to read: from the slot's restart_lsn
-- (where decoding starts) and from its confirmed_flush_lsn, to the end of the load
SELECT coalesce(pg_wal_lsn_diff(:'ll1', s.restart_lsn)::bigint, -1) AS wal_decoded,
	   coalesce(pg_wal_lsn_diff(:'ll1', s.confirmed_flush_lsn)::bigint, -1) AS wal_confirmed,
	   pg_wal_lsn_diff(:'ll1', :'ll0')::bigint AS wal_loaded
  FROM (SELECT 1) one
  LEFT JOIN pg_replication_slots s
	ON s.database = current_database() AND s.slot_type = 'logical' \gset

SELECT clock_timestamp() AS t0, pg_current_wal_insert_lsn() AS l0 \gset
SELECT * FROM autocdc.run_flow(:'flow') \gset r_
SELECT extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) AS secs,
	   pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'l0')::bigint AS walb \gset

INSERT INTO bench_results (prepop, n, method, secs, events, upserted, deleted,
						   wal_written, wal_decoded, wal_confirmed, wal_loaded, check_result, result_md5)
SELECT :P, :N, :'label', :secs, :r_num_events, :r_num_upserted_rows, :r_num_deleted_rows,
	   :walb, :wal_decoded, :wal_confirmed, :wal_loaded,
	   coalesce(nullif(concat_ws(', ',
		CASE WHEN count(*) <> :exp_rows THEN format('MISMATCH: %s rows, expected %s', count(*), :exp_rows) END,
		CASE WHEN :r_num_events <> :N THEN format('MISMATCH: num_events %s, expected %s', :r_num_events, :N) END),
		''), 'ok'),
	   -- current rows, comparable with the baseline's
	   md5(string_agg(format('%s|%s|%s|%s', k, a, b, c), ',' ORDER BY k)
			FILTER (WHERE :scd = '1' OR (to_jsonb(t) ->> '__end_at') IS NULL))
  FROM :"tgt" t;
-- (a partitioned target's size is its partitions')
\if :distributed
-- (a distributed table's size is its shards')
SELECT pg_size_pretty(citus_total_relation_size(:'tgt')) AS tgt_size,
	   pg_size_pretty(citus_total_relation_size('autocdc_state.target_' || target_id)) AS state_size
  FROM autocdc.flow WHERE name = :'flow' \gset
\else
SELECT pg_size_pretty(coalesce((SELECT sum(pg_total_relation_size(relid))::bigint
								  FROM pg_partition_tree(:'tgt') WHERE isleaf),
							   pg_total_relation_size(:'tgt'))) AS tgt_size,
	   pg_size_pretty(hidden_state_bytes) AS state_size
  FROM autocdc.flows WHERE name = :'flow' \gset
\endif
SELECT pg_size_pretty(:wal_loaded::bigint) AS p_loaded, pg_size_pretty(:wal_decoded::bigint) AS p_decoded,
	   pg_size_pretty(:wal_confirmed::bigint) AS p_confirmed, pg_size_pretty(:walb::bigint) AS p_written \gset
\echo :label ':' :secs 's; run_flow: events' :r_num_events 'upserted' :r_num_upserted_rows 'deleted' :r_num_deleted_rows '; target' :tgt_size ', hidden state' :state_size
\echo '   WAL: the load wrote' :p_loaded '; slot restart_lsn / confirmed_flush_lsn were' :p_decoded '/' :p_confirmed 'before the end of the load; the run wrote' :p_written

-- side measurement: an empty run right after the measured one (no new feed
-- rows): what decoding the WAL written since the measured run's capture
-- (its own target and hidden-state writes) costs the next run
SELECT clock_timestamp() AS t0 \gset
SELECT * FROM autocdc.run_flow(:'flow') \gset e_
SELECT extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) AS secs \gset
INSERT INTO bench_results (prepop, n, method, secs, events, upserted, deleted, check_result)
VALUES (:P, :N, :'label' || ' next empty run', :secs, :e_num_events, :e_num_upserted_rows,
		:e_num_deleted_rows, CASE WHEN :e_num_events = 0 THEN 'ok' ELSE 'MISMATCH: events' END);
\echo '   the next run_flow (no new events) took' :secs 's'
