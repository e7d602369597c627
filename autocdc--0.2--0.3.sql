/* autocdc--0.2--0.3.sql — upgrade of autocdc from 0.2 to 0.3 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION autocdc UPDATE TO '0.3'" to load this file. \quit

-- why the worker could not create this database's main slot (no row: nothing known)
CREATE FUNCTION autocdc_internal._slot_error(OUT error text, OUT hint text, OUT sqlstate text,
	OUT since timestamptz)
	RETURNS SETOF record
	LANGUAGE C STRICT AS 'MODULE_PATHNAME', 'autocdc_slot_error';

-- a flow's source kind is a name in the library's table of kinds, which
-- checks it when it reads the flow: a new kind needs no catalog change
ALTER TABLE autocdc.flow DROP CONSTRAINT flow_source_kind_check;

-- autocdc.flows: a flow waiting for a slot that cannot be created shows why
-- (state error), lag_time is never NULL while lag_time_exact is false,
-- holds_wal_back leaves out caught-up flows of the main slot, and the
-- coming resync of a laggard (resync_at) and its reason are shown; a
-- change flow's source is shown by its current name
CREATE OR REPLACE VIEW autocdc.flows AS
SELECT f.name,
	   f.owner,
	   f.kind,
	   -- a change flow's source by its current name (RENAME, SET SCHEMA)
	   CASE WHEN f.kind = 'cdc' AND f.source IS NOT NULL
			THEN CASE WHEN f.source_kind = 'feed'
					  THEN f.source::pg_catalog.text
					  -- written as its kind's wrapper around the table: changes(t)
					  ELSE f.source_kind || '(' || f.source::pg_catalog.text || ')' END
			ELSE f.source_text
	   END AS source,
	   t.relid AS target,
	   f.scd_type,
	   f.continuous,
	   CASE
		   WHEN f.paused THEN 'paused'
		   WHEN s.progress IS NOT NULL AND NOT f.once
			AND (sl.slot_name IS NULL OR s.progress < sl.confirmed_flush OR pe.resync) THEN 'needs_resync'
		   WHEN pe.error IS NOT NULL OR s.last_error IS NOT NULL OR se.error IS NOT NULL THEN 'error'
		   WHEN EXISTS (SELECT FROM pg_catalog.pg_locks k
						 WHERE k.locktype = 'advisory' AND k.granted
						   AND k.database = (SELECT d.oid FROM pg_catalog.pg_database d
											  WHERE d.datname = pg_catalog.current_database())
						   AND k.classid = f.id::pg_catalog.oid AND k.objid = 0
						   AND k.objsubid = autocdc_internal._lock_class()) THEN 'running'
		   WHEN s.waiting_since IS NOT NULL THEN 'waiting'
		   ELSE 'idle'
	   END AS state,
	   coalesce(pe.error, s.last_error, se.error) AS last_error,
	   CASE WHEN pe.error IS NOT NULL THEN pe.detail
			WHEN s.last_error IS NULL AND se.error IS NOT NULL THEN NULL
			ELSE s.last_error_detail END AS last_error_detail,
	   CASE WHEN pe.error IS NOT NULL THEN pe.hint
			WHEN s.last_error IS NULL AND se.error IS NOT NULL THEN se.hint
			ELSE s.last_error_hint END AS last_error_hint,
	   CASE WHEN pe.error IS NOT NULL THEN pe.sqlstate
			WHEN s.last_error IS NULL AND se.error IS NOT NULL THEN se.sqlstate
			ELSE s.last_error_sqlstate END AS last_error_sqlstate,
	   CASE WHEN pe.error IS NOT NULL THEN pe.lsn ELSE s.last_error_lsn END AS last_error_lsn,
	   CASE WHEN pe.error IS NOT NULL THEN pe.at
			WHEN s.last_error IS NULL AND se.error IS NOT NULL THEN se.since
			ELSE s.last_error_at END AS last_error_at,
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
		   WHEN 'first read' THEN pg_catalog.now() - f.created_at
		   WHEN 'not decoded' THEN pg_catalog.now() - coalesce(s.last_commit_at, f.created_at)
		   WHEN 'pending' THEN pg_catalog.now() - lg.pending_since
		   WHEN 'cut' THEN pg_catalog.now() - coalesce(s.last_commit_at, f.created_at)
		   WHEN 'changed since' THEN pg_catalog.now() - lg.decoded_at
	   END AS lag_time,
	   CASE WHEN lt.how <> 'none' THEN lt.how IN ('pending', 'caught up') END AS lag_time_exact,
	   CASE WHEN f.kind = 'cdc' AND NOT f.once AND sl.slot_name IS NOT NULL
			THEN CASE WHEN sl.laggard THEN 'laggard' ELSE 'main' END
	   END AS lane,
	   -- the oldest flow of its slot, if that is the laggard slot or it has something pending
	   coalesce(sl.restart_lsn IS NOT NULL AND NOT f.once AND s.progress =
				(SELECT pg_catalog.min(o.progress) FROM autocdc.flow_state o
				   JOIN autocdc.flow fo ON fo.name = o.name
				  WHERE o.slot_name = s.slot_name AND NOT fo.once)
				AND (sl.laggard OR lt.how <> 'caught up'), false) AS holds_wal_back,
	   s.waiting_since,
	   s.laggard_since,
	   -- when autocdc.max_lag_age takes the flow off the laggard slot
	   CASE WHEN sl.laggard AND f.kind = 'cdc' AND NOT f.once
			THEN s.laggard_since + NULLIF(pg_catalog.current_setting('autocdc.max_lag_age', true),
										  '0')::pg_catalog.interval
	   END AS resync_at,
	   s.resync_reason
  FROM autocdc.flow f
  LEFT JOIN autocdc.target t ON t.id = f.target_id
  LEFT JOIN autocdc.flow_state s ON s.name = f.name
  LEFT JOIN autocdc_internal._slots() sl ON sl.slot_name::text = s.slot_name
  LEFT JOIN LATERAL (SELECT p.* FROM autocdc_internal._pending_errors() p
					  WHERE p.flow_id = f.id ORDER BY p.at DESC LIMIT 1) pe ON true
  LEFT JOIN autocdc_internal._lag_notes() lg ON lg.flow_id = f.id
  -- a change flow that never had a slot waits for the main slot
  LEFT JOIN autocdc_internal._slot_error() se
	ON f.kind = 'cdc' AND NOT f.once AND s.progress IS NULL
  -- how the last decoding for the flow left it (docs/operations.md "Monitoring")
  CROSS JOIN LATERAL (SELECT CASE
		   WHEN f.kind <> 'cdc' OR f.once THEN 'none'
		   WHEN s.progress IS NULL THEN 'first read'
		   WHEN lg.flow_id IS NULL OR sl.slot_name IS NULL OR s.progress < sl.confirmed_flush
			THEN 'not decoded'
		   WHEN lg.pending_since IS NOT NULL THEN 'pending'
		   WHEN lg.cut THEN 'cut'
		   WHEN autocdc_internal._source_changes(f.source) <> lg.changes THEN 'changed since'
		   ELSE 'caught up'
	   END AS how) lt
 WHERE pg_catalog.pg_has_role(CURRENT_USER, f.owner, 'USAGE')
	OR pg_catalog.pg_has_role(CURRENT_USER, 'pg_read_all_stats', 'USAGE');

-- create_snapshot_flow(..., source_query, version_query, once): snapshots read by
-- queries; a snapshot flow applied once, then only by full_refresh
DROP FUNCTION autocdc.create_snapshot_flow(text, text, text[], text, text[], text[], text, boolean, text);
CREATE FUNCTION autocdc.create_snapshot_flow(
	target text, source text DEFAULT NULL, keys text[] DEFAULT NULL,
	stored_as_scd_type text DEFAULT '1',
	track_history_column_list text[] DEFAULT NULL,
	track_history_except_column_list text[] DEFAULT NULL,
	name text DEFAULT NULL, continuous boolean DEFAULT true,
	source_function text DEFAULT NULL,
	source_query text DEFAULT NULL,	-- instead of source: a SELECT read as each snapshot
	version_query text DEFAULT NULL,	-- with source_query: the SELECT naming the next version
	once boolean DEFAULT false)		-- apply what the first run finds, then never (until full_refresh)
	RETURNS text
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_create_snapshot_flow';

-- partial updates: the columns whose NULLs an upsert does not write, or
-- those whose NULLs it does write (all others ignore NULLs); columns_to_update
-- is a source column naming, per upsert, the columns it writes
ALTER TABLE autocdc.flow ADD COLUMN ignore_null_updates_column_list text[],
	ADD COLUMN ignore_null_updates_except_column_list text[],
	ADD COLUMN columns_to_update text;
DROP FUNCTION autocdc.create_flow(text, text, text[], text, boolean, text, text, text[], text[], text,
	text[], text[], text, boolean, text, boolean, interval);
CREATE FUNCTION autocdc.create_flow(
	target text, source text, keys text[],
	sequence_by text DEFAULT NULL,
	ignore_null_updates boolean DEFAULT false,
	apply_as_deletes text DEFAULT NULL,
	apply_as_truncates text DEFAULT NULL,
	column_list text[] DEFAULT NULL,
	except_column_list text[] DEFAULT NULL,
	stored_as_scd_type text DEFAULT '1',
	track_history_column_list text[] DEFAULT NULL,
	track_history_except_column_list text[] DEFAULT NULL,
	name text DEFAULT NULL,
	once boolean DEFAULT false,
	system_sequence_by text DEFAULT NULL,
	continuous boolean DEFAULT true,
	tombstone_retention interval DEFAULT NULL,
	ignore_null_updates_column_list text[] DEFAULT NULL,
	ignore_null_updates_except_column_list text[] DEFAULT NULL,
	columns_to_update text DEFAULT NULL,
	distributed_by text DEFAULT NULL)	-- a new target: Citus distributes it by this key
	RETURNS text
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_create_flow';

-- snapshot flows from queries (src/snapsource.c): both queries as stored
-- (names qualified, $1 for the version), and the version's type
ALTER TABLE autocdc.flow ADD COLUMN source_query text, ADD COLUMN version_query text,
	ADD COLUMN version_type text;

-- snapshot flows from queries: the version of a version query's flow, which
-- autocdc passes to its queries in place of these calls; called anywhere
-- else they only say where they may be used
CREATE FUNCTION autocdc.last_snapshot_version() RETURNS text
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_last_snapshot_version';
CREATE FUNCTION autocdc.current_snapshot_version() RETURNS text
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_current_snapshot_version';

-- expectations: the run log keeps each run's counts per expectation
ALTER TABLE autocdc.flow_run_log ADD COLUMN expectations jsonb;
CREATE OR REPLACE VIEW autocdc.flow_runs AS
SELECT r.id, r.flow, r.started_at, r.finished_at, r.num_events, r.num_upserted_rows,
	   r.num_deleted_rows, r.num_skipped_events, r.status, r.error, r.error_detail, r.error_hint,
	   r.error_sqlstate, r.error_lsn, r.expectations
  FROM autocdc.flow_run_log r
 WHERE pg_catalog.pg_has_role(CURRENT_USER, 'pg_read_all_stats', 'USAGE')
	OR EXISTS (SELECT FROM autocdc.flow f
				WHERE f.id = r.flow_id AND pg_catalog.pg_has_role(CURRENT_USER, f.owner, 'USAGE'));
/* ---------------------------------------------------------------- */
/* expectations (semantics §4 "Expectations")                       */
/* ---------------------------------------------------------------- */

/*
 * Data quality rules of a target, checked on every upsert event of every
 * flow into it.  owner is the role that set the condition: a flow evaluates
 * it as its own owner only if that role has the flow owner's privileges
 * (docs/security.md).  Removed with the target's row.
 */
CREATE TABLE autocdc.expectation (
	target_id	int NOT NULL REFERENCES autocdc.target (id) ON DELETE CASCADE,
	name		text NOT NULL,
	condition	text NOT NULL,	-- boolean over the target's data columns, schema-qualified
	on_violation text NOT NULL CHECK (on_violation IN ('warn', 'drop', 'fail')),
	owner		regrole NOT NULL,
	num_passed	bigint NOT NULL DEFAULT 0,
	num_failed	bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (target_id, name)
);
SELECT pg_catalog.pg_extension_config_dump('autocdc.expectation', '');
REVOKE ALL ON autocdc.expectation FROM PUBLIC;

CREATE FUNCTION autocdc.set_expectation(target regclass, name text, condition text,
	on_violation text DEFAULT 'warn')
	RETURNS void
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_set_expectation';
CREATE FUNCTION autocdc.drop_expectation(target regclass, name text)
	RETURNS void
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_drop_expectation';

-- each role sees the expectations of the targets whose owner's privileges it has
CREATE VIEW autocdc.expectations AS
SELECT t.relid AS target, e.name, e.condition, e.on_violation, e.num_passed, e.num_failed
  FROM autocdc.expectation e
  JOIN autocdc.target t ON t.id = e.target_id
  JOIN pg_catalog.pg_class c ON c.oid = t.relid
 WHERE pg_catalog.pg_has_role(CURRENT_USER, c.relowner, 'USAGE')
	OR pg_catalog.pg_has_role(CURRENT_USER, 'pg_read_all_stats', 'USAGE');
GRANT SELECT ON autocdc.expectations TO PUBLIC;

-- (targets of 0.2 keep the indexes they have)
-- the indexes as_of reads (GiST over the ended versions' periods, btree over
-- the open ones' starts), made on request: every write into a target pays them
CREATE FUNCTION autocdc.create_as_of_index(target regclass) RETURNS void
	STRICT LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_create_as_of_index';
