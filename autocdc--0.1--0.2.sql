/* autocdc--0.1--0.2.sql — upgrade of autocdc from 0.1 to 0.2 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION autocdc UPDATE TO '0.2'" to load this file. \quit

/*
 * Internal functions live in a schema of their own.  Those that autocdc's
 * views and its own queries call as the querying role or the flow's owner
 * stay executable by everyone (each checks its arguments and its calling
 * context); the others are not executable by PUBLIC.
 */
CREATE SCHEMA autocdc_internal;
GRANT USAGE ON SCHEMA autocdc_internal TO PUBLIC;
ALTER FUNCTION autocdc._check_server() SET SCHEMA autocdc_internal;
REVOKE ALL ON FUNCTION autocdc_internal._check_server() FROM PUBLIC;
ALTER FUNCTION autocdc._batch_support(internal) SET SCHEMA autocdc_internal;
ALTER FUNCTION autocdc._batch(anyelement) SET SCHEMA autocdc_internal;
ALTER FUNCTION autocdc._events(anyelement) SET SCHEMA autocdc_internal;
ALTER FUNCTION autocdc._rows(anyelement) SET SCHEMA autocdc_internal;
ALTER FUNCTION autocdc._keys() SET SCHEMA autocdc_internal;
ALTER FUNCTION autocdc._slot_info() SET SCHEMA autocdc_internal;
ALTER FUNCTION autocdc._snapshot_check(text, text, bigint, text, boolean) SET SCHEMA autocdc_internal;
ALTER FUNCTION autocdc._call_handler() SET SCHEMA autocdc_internal;
ALTER FUNCTION autocdc._inline_handler(internal) SET SCHEMA autocdc_internal;
ALTER FUNCTION autocdc._validator(oid) SET SCHEMA autocdc_internal;
ALTER FUNCTION autocdc._drop_guard() SET SCHEMA autocdc_internal;
REVOKE ALL ON FUNCTION autocdc_internal._drop_guard() FROM PUBLIC;

/*
 * Flows get an id: the error kept in shared memory and the run log name a
 * flow by id (names can be long and alike, and a name can be reused by
 * another owner after a drop).
 */
ALTER TABLE autocdc.flow ADD COLUMN id serial UNIQUE;
SELECT pg_catalog.pg_extension_config_dump('autocdc.flow_id_seq', '');
ALTER TABLE autocdc.flow_run_log ADD COLUMN flow_id int;
UPDATE autocdc.flow_run_log r SET flow_id = f.id FROM autocdc.flow f WHERE f.name = r.flow;
DROP INDEX autocdc.flow_run_log_flow_id_idx;
CREATE INDEX ON autocdc.flow_run_log (flow_id, id);

-- a version-function snapshot flow can be created in named notation without source
CREATE OR REPLACE FUNCTION autocdc.create_snapshot_flow(
	target text, source text DEFAULT NULL, keys text[] DEFAULT NULL,
	stored_as_scd_type text DEFAULT '1',
	track_history_column_list text[] DEFAULT NULL,
	track_history_except_column_list text[] DEFAULT NULL,
	name text DEFAULT NULL, continuous boolean DEFAULT true,
	source_function text DEFAULT NULL)
	RETURNS text
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_create_snapshot_flow';

-- autocdc.flows.source shows the source as written, without stream(), whichever form made the flow
UPDATE autocdc.flow SET source_text = pg_catalog.regexp_replace(source_text, '^\s*stream\s*\((.*)\)\s*$', '\1', 'i')
 WHERE kind = 'cdc';

-- full_refresh can skip the rows that cannot become events, and keeps the
-- history of a changes() flow unless told to discard it
DROP FUNCTION autocdc.full_refresh(text);
CREATE FUNCTION autocdc.full_refresh(name text, skip_invalid boolean DEFAULT false,
	discard_history boolean DEFAULT false, OUT num_events bigint, OUT num_upserted_rows bigint,
	OUT num_deleted_rows bigint, OUT num_skipped_events bigint)
	RETURNS SETOF record
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_full_refresh';

DROP VIEW autocdc.flows;
DROP VIEW autocdc.flow_runs;
DROP FUNCTION autocdc._pending_errors();

-- the advisory lock class that marks a flow being applied (pg_locks.objsubid)
CREATE FUNCTION autocdc_internal._lock_class() RETURNS int
	LANGUAGE C IMMUTABLE STRICT AS 'MODULE_PATHNAME', 'autocdc_lock_class';

-- failed runs whose error is still in shared memory (the view shows them at once)
CREATE FUNCTION autocdc_internal._pending_errors(OUT flow_id int, OUT error text, OUT at timestamptz,
	OUT detail text, OUT hint text, OUT sqlstate text, OUT lsn pg_lsn, OUT resync boolean)
	RETURNS SETOF record
	LANGUAGE C STRICT AS 'MODULE_PATHNAME', 'autocdc_pending_flow_errors';

-- the worker marks flows whose relations it finds locked
ALTER TABLE autocdc.flow_state ADD COLUMN waiting_since timestamptz;
-- and since when a flow is served from the laggard slot
ALTER TABLE autocdc.flow_state ADD COLUMN laggard_since timestamptz;

-- the whole error of a failed run: detail, hint, SQLSTATE, and the failing event's commit
ALTER TABLE autocdc.flow_state ADD COLUMN last_error_detail text,
	ADD COLUMN last_error_hint text, ADD COLUMN last_error_sqlstate text,
	ADD COLUMN last_error_lsn pg_lsn;
-- updates and deletes of a feed's rows are counted, not applied
ALTER TABLE autocdc.flow_state ADD COLUMN num_ignored_updates bigint NOT NULL DEFAULT 0,
	ADD COLUMN num_ignored_deletes bigint NOT NULL DEFAULT 0;
ALTER TABLE autocdc.flow_run_log ADD COLUMN error_detail text,
	ADD COLUMN error_hint text, ADD COLUMN error_sqlstate text, ADD COLUMN error_lsn pg_lsn;
-- changes() sources: the kind of a flow's source, and its last commit timestamp
ALTER TABLE autocdc.flow ADD COLUMN source_kind text NOT NULL DEFAULT 'feed'
	CHECK (source_kind IN ('feed', 'changes'));
ALTER TABLE autocdc.flow_state ADD COLUMN progress_timestamp timestamptz;
ALTER TABLE autocdc.flow_state ADD COLUMN resync_reason text;
-- false: the target's one flow folds in commit order and keeps no per-key hidden state
ALTER TABLE autocdc.target ADD COLUMN keeps_state boolean NOT NULL DEFAULT true;
-- bitemporal targets: the system sequence's type, and its composite <target>_sysseq
ALTER TABLE autocdc.target ADD COLUMN sysseq_type regtype, ADD COLUMN sysseq_typname name;
-- the range type <target>_seqrange autocdc created for the index of the
-- periods (targets of 0.1 have no such index: docs/time_travel.md)
ALTER TABLE autocdc.target ADD COLUMN range_typname name;

-- the database's slots (main and laggard) that can serve flows
CREATE FUNCTION autocdc_internal._slots(OUT slot_name name, OUT confirmed_flush pg_lsn,
	OUT restart_lsn pg_lsn, OUT laggard boolean)
	RETURNS SETOF record
	LANGUAGE C STRICT AS 'MODULE_PATHNAME', 'autocdc_slots';

-- how the last decoding for each flow left it (lag.c), and a source's insert count
CREATE FUNCTION autocdc_internal._lag_notes(OUT flow_id int, OUT decoded_at timestamptz,
	OUT changes bigint, OUT pending_since timestamptz, OUT cut boolean)
	RETURNS SETOF record
	LANGUAGE C STRICT AS 'MODULE_PATHNAME', 'autocdc_lag_notes';
CREATE FUNCTION autocdc_internal._source_changes(oid) RETURNS bigint
	LANGUAGE C STABLE STRICT AS 'MODULE_PATHNAME', 'autocdc_source_changes';

CREATE VIEW autocdc.flows AS
SELECT f.name,
	   f.owner,
	   f.kind,
	   f.source_text AS source,
	   t.relid AS target,
	   f.scd_type,
	   f.continuous,
	   CASE
		   WHEN f.paused THEN 'paused'
		   WHEN s.progress IS NOT NULL AND NOT f.once
			AND (sl.slot_name IS NULL OR s.progress < sl.confirmed_flush OR pe.resync) THEN 'needs_resync'
		   WHEN pe.error IS NOT NULL OR s.last_error IS NOT NULL THEN 'error'
		   WHEN EXISTS (SELECT FROM pg_catalog.pg_locks k
						 WHERE k.locktype = 'advisory' AND k.granted
						   AND k.database = (SELECT d.oid FROM pg_catalog.pg_database d
											  WHERE d.datname = pg_catalog.current_database())
						   AND k.classid = f.id::pg_catalog.oid AND k.objid = 0
						   AND k.objsubid = autocdc_internal._lock_class()) THEN 'running'
		   WHEN s.waiting_since IS NOT NULL THEN 'waiting'
		   ELSE 'idle'
	   END AS state,
	   coalesce(pe.error, s.last_error) AS last_error,
	   CASE WHEN pe.error IS NOT NULL THEN pe.detail ELSE s.last_error_detail END AS last_error_detail,
	   CASE WHEN pe.error IS NOT NULL THEN pe.hint ELSE s.last_error_hint END AS last_error_hint,
	   CASE WHEN pe.error IS NOT NULL THEN pe.sqlstate ELSE s.last_error_sqlstate END AS last_error_sqlstate,
	   CASE WHEN pe.error IS NOT NULL THEN pe.lsn ELSE s.last_error_lsn END AS last_error_lsn,
	   CASE WHEN pe.error IS NOT NULL THEN pe.at ELSE s.last_error_at END AS last_error_at,
	   s.retry_at,
	   s.last_run_at,
	   s.num_events,
	   s.num_upserted_rows,
	   s.num_deleted_rows,
	   s.num_skipped_events,
	   s.num_ignored_updates,
	   s.num_ignored_deletes,
	   CASE WHEN sl.restart_lsn IS NOT NULL AND NOT f.once AND f.kind = 'cdc'
			THEN pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(), s.progress)::bigint
	   END AS retained_wal_bytes,
	   (SELECT pg_catalog.sum(pg_catalog.pg_total_relation_size(c.oid))::bigint
		  FROM pg_catalog.pg_class c
		 WHERE c.relnamespace = 'autocdc_state'::regnamespace
		   AND c.relname IN ('target_' || t.id, 'rows_' || f.id)) AS hidden_state_bytes,
	   CASE lt.how
		   WHEN 'not decoded' THEN pg_catalog.now() - s.last_commit_at
		   WHEN 'pending' THEN pg_catalog.now() - lg.pending_since
		   WHEN 'cut' THEN pg_catalog.now() - coalesce(s.last_commit_at, lg.decoded_at)
		   WHEN 'changed since' THEN pg_catalog.now() - lg.decoded_at
	   END AS lag_time,
	   lt.how IN ('pending', 'caught up') AS lag_time_exact,
	   CASE WHEN f.kind = 'cdc' AND NOT f.once AND sl.slot_name IS NOT NULL
			THEN CASE WHEN sl.laggard THEN 'laggard' ELSE 'main' END
	   END AS lane,
	   coalesce(sl.restart_lsn IS NOT NULL AND NOT f.once AND s.progress =
				(SELECT pg_catalog.min(o.progress) FROM autocdc.flow_state o
				   JOIN autocdc.flow fo ON fo.name = o.name
				  WHERE o.slot_name = s.slot_name AND NOT fo.once), false) AS holds_wal_back,
	   s.waiting_since,
	   s.laggard_since
  FROM autocdc.flow f
  LEFT JOIN autocdc.target t ON t.id = f.target_id
  LEFT JOIN autocdc.flow_state s ON s.name = f.name
  LEFT JOIN autocdc_internal._slots() sl ON sl.slot_name::text = s.slot_name
  LEFT JOIN LATERAL (SELECT p.* FROM autocdc_internal._pending_errors() p
					  WHERE p.flow_id = f.id ORDER BY p.at DESC LIMIT 1) pe ON true
  LEFT JOIN autocdc_internal._lag_notes() lg ON lg.flow_id = f.id
  -- how the last decoding for the flow left it (README "Monitoring")
  CROSS JOIN LATERAL (SELECT CASE
		   WHEN f.kind <> 'cdc' OR f.once OR s.progress IS NULL THEN 'none'
		   WHEN lg.flow_id IS NULL OR sl.slot_name IS NULL OR s.progress < sl.confirmed_flush
			THEN 'not decoded'
		   WHEN lg.pending_since IS NOT NULL THEN 'pending'
		   WHEN lg.cut THEN 'cut'
		   WHEN autocdc_internal._source_changes(f.source) <> lg.changes THEN 'changed since'
		   ELSE 'caught up'
	   END AS how) lt
 WHERE pg_catalog.pg_has_role(CURRENT_USER, f.owner, 'USAGE')
	OR pg_catalog.pg_has_role(CURRENT_USER, 'pg_read_all_stats', 'USAGE');

/*
 * The run log.  Errors can quote source values, so each role sees the runs
 * of the flows it may act for (and monitoring roles see all).
 */
CREATE VIEW autocdc.flow_runs AS
SELECT r.id, r.flow, r.started_at, r.finished_at, r.num_events, r.num_upserted_rows,
	   r.num_deleted_rows, r.num_skipped_events, r.status, r.error, r.error_detail, r.error_hint,
	   r.error_sqlstate, r.error_lsn
  FROM autocdc.flow_run_log r
 WHERE pg_catalog.pg_has_role(CURRENT_USER, 'pg_read_all_stats', 'USAGE')
	OR EXISTS (SELECT FROM autocdc.flow f
				WHERE f.id = r.flow_id AND pg_catalog.pg_has_role(CURRENT_USER, f.owner, 'USAGE'));

GRANT SELECT ON autocdc.flows, autocdc.flow_runs TO PUBLIC;

/*
 * 0.1 stored an SCD 2 flow's empty set of tracked columns (a track list of
 * none, or an except list of every non-key column) as NULL, which means
 * "all": with nothing tracked, every upsert keeps its version's start.
 */
UPDATE autocdc.flow SET track_columns = '{}'
 WHERE scd_type = '2' AND track_columns IS NULL
   AND (cardinality(track_history_column_list) = 0
		OR (track_history_except_column_list IS NOT NULL
			AND (SELECT pg_catalog.array_agg((pg_catalog.parse_ident(e))[1])
				   FROM pg_catalog.unnest(track_history_except_column_list) e)
				OPERATOR(pg_catalog.@>)
				ARRAY(SELECT c::pg_catalog.text FROM pg_catalog.unnest(columns) c
					   WHERE c OPERATOR(pg_catalog.<>) ALL (keys))));

-- time travel: the rows of an SCD 2 or bitemporal target valid at valid_at
-- (as believed at known_at; omitted: now), called as as_of(NULL::target, ...)
CREATE FUNCTION autocdc.as_of(rows anyelement, valid_at "any") RETURNS SETOF anyelement
	LANGUAGE C STABLE AS 'MODULE_PATHNAME', 'autocdc_as_of';
CREATE FUNCTION autocdc.as_of(rows anyelement, valid_at "any", known_at "any")
	RETURNS SETOF anyelement
	LANGUAGE C STABLE AS 'MODULE_PATHNAME', 'autocdc_as_of';
-- the same for one key (a value, or a ROW of values for several key columns)
CREATE FUNCTION autocdc.as_of_key(rows anyelement, key "any", valid_at "any")
	RETURNS SETOF anyelement
	LANGUAGE C STABLE AS 'MODULE_PATHNAME', 'autocdc_as_of_key';
CREATE FUNCTION autocdc.as_of_key(rows anyelement, key "any", valid_at "any", known_at "any")
	RETURNS SETOF anyelement
	LANGUAGE C STABLE AS 'MODULE_PATHNAME', 'autocdc_as_of_key';
