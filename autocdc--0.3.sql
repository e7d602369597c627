/* autocdc--0.3.sql — catalog, API and capture objects of the autocdc extension */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION autocdc" to load this file. \quit

/*
 * Internal functions live in a schema of their own.  Those that autocdc's
 * views and its own queries call as the querying role or the flow's owner
 * stay executable by everyone (each checks its arguments and its calling
 * context); the others are not executable by PUBLIC.
 */
CREATE SCHEMA autocdc_internal;
GRANT USAGE ON SCHEMA autocdc_internal TO PUBLIC;

CREATE FUNCTION autocdc_internal._check_server() RETURNS void
	LANGUAGE C STRICT AS 'MODULE_PATHNAME', 'autocdc_check_server';
REVOKE ALL ON FUNCTION autocdc_internal._check_server() FROM PUBLIC;
SELECT autocdc_internal._check_server();

/*
 * Hidden per-target state lives in this schema (one table per target, owned
 * by the target's owner; see docs/reference.md "Hidden state").
 */
CREATE SCHEMA autocdc_state;

/*
 * Capture: one insert-only publication for the pgoutput plugin.  It covers
 * all tables so that its membership never changes (see docs/internals.md "Capture");
 * what a flow reads is decided by autocdc.flow, which is transactional.
 * Publishing only inserts keeps feeds without a replica identity deletable.
 */
CREATE PUBLICATION autocdc_feeds FOR ALL TABLES
	WITH (publish = 'insert', publish_via_partition_root = true);
-- PostgreSQL does not make publications extension members by itself
CREATE FUNCTION autocdc._claim_publication() RETURNS void
	LANGUAGE C STRICT AS 'MODULE_PATHNAME', 'autocdc_claim_publication';
SELECT autocdc._claim_publication();
DROP FUNCTION autocdc._claim_publication();

-- a user publication FOR ALL TABLES would forward the hidden state's writes
DO $$
DECLARE
	p name;
BEGIN
	FOR p IN SELECT pubname FROM pg_catalog.pg_publication
			  WHERE puballtables AND pubname <> 'autocdc_feeds' ORDER BY pubname LOOP
		RAISE WARNING 'publication "%" publishes all tables, also autocdc''s hidden state', p
			USING DETAIL = 'Its subscribers receive every write autocdc makes to its tables in schema autocdc_state.',
				  HINT = 'Publish the tables meant for subscribers by name (CREATE PUBLICATION ... FOR TABLE ...).';
	END LOOP;
END
$$;

-- the launcher starts this database's worker once CREATE EXTENSION commits
CREATE FUNCTION autocdc._want_worker() RETURNS void
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_want_worker';
SELECT autocdc._want_worker();
DROP FUNCTION autocdc._want_worker();

-- targets written by flows; hidden state table autocdc_state.target_<id>
CREATE TABLE autocdc.target (
	id			serial PRIMARY KEY,
	relid		regclass NOT NULL UNIQUE,
	scd_type	text NOT NULL,
	keys		name[] NOT NULL,
	seq_type	regtype NOT NULL,
	seq_typname name,			-- composite <target>_seq created by autocdc
	columns		name[] NOT NULL, -- data columns of the target, in order
	created_at	timestamptz NOT NULL DEFAULT now(),
	-- false: the target's one flow is an SCD 1 changes() flow sequenced by
	-- _commit_timestamp, which folds in arrival order and needs no per-key
	-- hidden state (src/define.c)
	keeps_state boolean NOT NULL DEFAULT true,
	sysseq_type regtype,		-- bitemporal: the system sequence's type
	sysseq_typname name,		-- composite <target>_sysseq created by autocdc
	range_typname name			-- range type <target>_seqrange created by autocdc for
								-- the index of the periods (src/storage.c)
);

CREATE TABLE autocdc.flow (
	id			serial UNIQUE,	-- how shared memory and the run log name a flow
	name		text PRIMARY KEY,
	owner		regrole NOT NULL,
	kind		text NOT NULL DEFAULT 'cdc' CHECK (kind IN ('cdc', 'snapshot')),
	source		regclass,		-- NULL: a snapshot flow's version function
	source_text text NOT NULL,
	target_id	int REFERENCES autocdc.target (id), -- NULL: snapshot target not created yet
	keys		name[] NOT NULL,
	sequence_by text NOT NULL,
	ignore_null_updates boolean NOT NULL DEFAULT false,
	apply_as_deletes text,
	apply_as_truncates text,
	columns		name[] NOT NULL, -- selected source columns, in source order
	column_list text[],
	except_column_list text[],
	scd_type	text NOT NULL,
	track_columns name[],		-- tracked columns (SCD 2)
	track_history_column_list text[],
	track_history_except_column_list text[],
	once		boolean NOT NULL DEFAULT false,
	continuous	boolean NOT NULL DEFAULT true,
	tombstone_retention interval,
	system_sequence_by text,
	paused		boolean NOT NULL DEFAULT false,
	created_at	timestamptz NOT NULL DEFAULT now(),
	-- snapshot flows (kind = 'snapshot'; see src/snaprun.c, src/snapsource.c)
	source_function text,		-- version function signature, schema-qualified
	snapshot_target text,		-- qualified target name, until the first run creates it
	snapshot_version text,		-- last applied version (text of its type, ISO styles)
	-- change flows: what their events are (a feed's inserts, or a table's changes):
	-- a name in the library's table of source kinds (src/srckind.c), checked there
	source_kind text NOT NULL DEFAULT 'feed',
	-- partial updates: the columns whose NULLs an upsert does not write, or
	-- those whose NULLs it does write (all others ignore NULLs); columns_to_update
	-- is a source column naming, per upsert, the columns it writes
	ignore_null_updates_column_list text[],
	ignore_null_updates_except_column_list text[],
	columns_to_update text,
	-- snapshot flows from queries (src/snapsource.c): both queries as stored
	-- (names qualified, $1 for the version), and the version's type
	source_query text,
	version_query text,
	version_type text
);
CREATE INDEX ON autocdc.flow (target_id);

/* progress and totals of a flow; written in the same transaction as its target */
CREATE TABLE autocdc.flow_state (
	name		text PRIMARY KEY REFERENCES autocdc.flow ON DELETE CASCADE ON UPDATE CASCADE,
	progress	pg_lsn,			-- source commits before this LSN are applied; NULL: first read pending
	slot_name	text,			-- the replication slot the progress belongs to
	once_done	boolean NOT NULL DEFAULT false,
	skip_upto	pg_lsn,			-- source commits at or before this LSN are skipped
	last_run_at timestamptz,
	last_commit_at timestamptz, -- commit time of the last applied source transaction
	last_error	text,
	last_error_detail text,
	last_error_hint text,
	last_error_sqlstate text,
	last_error_lsn pg_lsn,		-- commit of the event the run failed on (what skip_events passes)
	last_error_at timestamptz,
	retries		int NOT NULL DEFAULT 0,	-- failed runs since the last good one
	retry_at	timestamptz,	-- the worker retries a failed flow from then on
	num_events	bigint NOT NULL DEFAULT 0,
	num_upserted_rows bigint NOT NULL DEFAULT 0,
	num_deleted_rows bigint NOT NULL DEFAULT 0,
	num_skipped_events bigint NOT NULL DEFAULT 0,
	num_ignored_updates bigint NOT NULL DEFAULT 0,	-- feeds: updated rows (not events)
	num_ignored_deletes bigint NOT NULL DEFAULT 0,	-- feeds: deleted rows (purges)
	waiting_since timestamptz,	-- since when the worker finds a relation of the flow locked
	laggard_since timestamptz,	-- since when the flow is served from the laggard slot
	progress_timestamp timestamptz,	-- changes(): _commit_timestamp of the last applied transaction
	resync_reason text			-- why the flow was taken off its slot (it needs a resync)
);

CREATE TABLE autocdc.flow_run_log (
	id			bigserial PRIMARY KEY,
	flow		text NOT NULL,
	flow_id		int,			-- autocdc.flow.id
	started_at	timestamptz NOT NULL,
	finished_at timestamptz,
	num_events	bigint,
	num_upserted_rows bigint,
	num_deleted_rows bigint,
	num_skipped_events bigint,
	status		text NOT NULL,
	error		text,
	error_detail text,
	error_hint	text,
	error_sqlstate text,
	error_lsn	pg_lsn,			-- commit of the event the run failed on
	expectations jsonb			-- the run's counts per expectation: {name: {passed, failed}}
);
CREATE INDEX ON autocdc.flow_run_log (flow_id, id);

SELECT pg_catalog.pg_extension_config_dump('autocdc.target', '');
SELECT pg_catalog.pg_extension_config_dump('autocdc.target_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('autocdc.flow', '');
SELECT pg_catalog.pg_extension_config_dump('autocdc.flow_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('autocdc.flow_state', '');
SELECT pg_catalog.pg_extension_config_dump('autocdc.flow_run_log', '');
SELECT pg_catalog.pg_extension_config_dump('autocdc.flow_run_log_id_seq', '');

/* ---------------------------------------------------------------- */
/* internal C functions                                             */
/* ---------------------------------------------------------------- */

-- rows of the batch being applied in this backend: (lsn, ord, the source's
-- columns), given by a column definition list; the argument names the source type
CREATE FUNCTION autocdc_internal._batch_support(internal) RETURNS internal
	LANGUAGE C STRICT AS 'MODULE_PATHNAME', 'autocdc_batch_support';
CREATE FUNCTION autocdc_internal._batch(anyelement)
	RETURNS SETOF record
	LANGUAGE C SUPPORT autocdc_internal._batch_support
	AS 'MODULE_PATHNAME', 'autocdc_batch';
-- classified events of the batch (rows of the state table type)
CREATE FUNCTION autocdc_internal._events(anyelement) RETURNS SETOF anyelement
	LANGUAGE C SUPPORT autocdc_internal._batch_support
	AS 'MODULE_PATHNAME', 'autocdc_events';
-- rows computed by the fold, to be inserted (target or state row type)
CREATE FUNCTION autocdc_internal._rows(anyelement) RETURNS SETOF anyelement
	LANGUAGE C SUPPORT autocdc_internal._batch_support
	AS 'MODULE_PATHNAME', 'autocdc_rows';

-- distinct keys of the run's events (column definition list given by the caller)
CREATE FUNCTION autocdc_internal._keys() RETURNS SETOF record
	LANGUAGE C SUPPORT autocdc_internal._batch_support
	AS 'MODULE_PATHNAME', 'autocdc_keys';


-- the database's slots (main and laggard) that can serve flows
CREATE FUNCTION autocdc_internal._slots(OUT slot_name name, OUT confirmed_flush pg_lsn,
	OUT restart_lsn pg_lsn, OUT laggard boolean)
	RETURNS SETOF record
	LANGUAGE C STRICT AS 'MODULE_PATHNAME', 'autocdc_slots';

CREATE FUNCTION autocdc_internal._slot_info(OUT slot_name name, OUT confirmed_flush pg_lsn,
	OUT restart_lsn pg_lsn)
	RETURNS record
	LANGUAGE C STRICT AS 'MODULE_PATHNAME', 'autocdc_slot_info';

/* ---------------------------------------------------------------- */
/* public API                                                       */
/* ---------------------------------------------------------------- */

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

-- source and keys have defaults so that a version-function flow can be
-- created in named notation without source (keys is required all the same)
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
-- snapshot flows from queries: the version of a version query's flow, which
-- autocdc passes to its queries in place of these calls; called anywhere
-- else they only say where they may be used
CREATE FUNCTION autocdc.last_snapshot_version() RETURNS text
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_last_snapshot_version';
CREATE FUNCTION autocdc.current_snapshot_version() RETURNS text
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_current_snapshot_version';

-- counts a snapshot's rows and refuses duplicate or null keys (inside the comparison query)
CREATE FUNCTION autocdc_internal._snapshot_check(flow text, snapshot text, nrows bigint,
	duplicate_key text, null_key boolean)
	RETURNS boolean
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_snapshot_check';

CREATE FUNCTION autocdc.run_flow(name text,
	OUT num_events bigint, OUT num_upserted_rows bigint,
	OUT num_deleted_rows bigint, OUT num_skipped_events bigint)
	RETURNS SETOF record
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_run_flow';

CREATE FUNCTION autocdc.full_refresh(name text, skip_invalid boolean DEFAULT false,
	discard_history boolean DEFAULT false, OUT num_events bigint, OUT num_upserted_rows bigint,
	OUT num_deleted_rows bigint, OUT num_skipped_events bigint)
	RETURNS SETOF record
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_full_refresh';

CREATE FUNCTION autocdc.drop_flow(name text, drop_target boolean DEFAULT false)
	RETURNS void
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_drop_flow';

CREATE FUNCTION autocdc.skip_events(name text, upto pg_lsn)
	RETURNS void
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_skip_events';

CREATE FUNCTION autocdc.pause_flow(name text) RETURNS void
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_pause_flow';
CREATE FUNCTION autocdc.resume_flow(name text) RETURNS void
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_resume_flow';

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
-- the indexes as_of reads (GiST over the ended versions' periods, btree over
-- the open ones' starts), made on request: every write into a target pays them
CREATE FUNCTION autocdc.create_as_of_index(target regclass) RETURNS void
	STRICT LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_create_as_of_index';

GRANT USAGE ON SCHEMA autocdc TO PUBLIC;
-- state tables are owned by their targets' owners; the schema must be reachable
GRANT USAGE ON SCHEMA autocdc_state TO PUBLIC;
REVOKE ALL ON autocdc.flow, autocdc.flow_state, autocdc.target, autocdc.flow_run_log FROM PUBLIC;

/*
 * DROP TABLE of a flow's source or target is refused (semantics §4): the flow
 * would be left pointing at nothing.  drop_flow(name, true) removes the
 * catalog rows first, so it passes.
 */
CREATE FUNCTION autocdc_internal._drop_guard() RETURNS event_trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
$$
DECLARE
	r record;
	f text;
BEGIN
	IF pg_catalog.to_regclass('autocdc.flow') IS NULL THEN
		RETURN;					-- the extension itself is being dropped
	END IF;
	FOR r IN SELECT * FROM pg_catalog.pg_event_trigger_dropped_objects()
			  WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND objsubid = 0
	LOOP
		SELECT fl.name INTO f FROM autocdc.flow fl JOIN autocdc.target t ON t.id = fl.target_id
		 WHERE fl.source::pg_catalog.oid = r.objid OR t.relid::pg_catalog.oid = r.objid
		 ORDER BY fl.name LIMIT 1;
		IF f IS NOT NULL THEN
			RAISE EXCEPTION 'cannot drop % % because flow "%" uses it', r.object_type, r.object_identity, f
				USING ERRCODE = 'dependent_objects_still_exist',
					  HINT = pg_catalog.format('Drop the flow first with SELECT autocdc.drop_flow(%L).', f);
		END IF;
	END LOOP;
END;
$$;
REVOKE ALL ON FUNCTION autocdc_internal._drop_guard() FROM PUBLIC;
CREATE EVENT TRIGGER autocdc_drop_guard ON sql_drop
	EXECUTE FUNCTION autocdc_internal._drop_guard();

/*
 * The statement form (semantics §3.1): a trusted language whose DO blocks run
 * CREATE FLOW / APPLY CHANGES INTO / CREATE STREAMING TABLE / DROP FLOW, and
 * the same parser behind autocdc.execute() for drivers and scripts.
 */
CREATE FUNCTION autocdc_internal._call_handler() RETURNS language_handler
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_call_handler';
CREATE FUNCTION autocdc_internal._inline_handler(internal) RETURNS void
	LANGUAGE C STRICT AS 'MODULE_PATHNAME', 'autocdc_inline_handler';
CREATE FUNCTION autocdc_internal._validator(oid) RETURNS void
	LANGUAGE C STRICT AS 'MODULE_PATHNAME', 'autocdc_validator';
CREATE TRUSTED LANGUAGE autocdc
	HANDLER autocdc_internal._call_handler
	INLINE autocdc_internal._inline_handler
	VALIDATOR autocdc_internal._validator;
COMMENT ON LANGUAGE autocdc IS 'autocdc statements: DO LANGUAGE autocdc $$ CREATE FLOW ... $$';

CREATE FUNCTION autocdc.execute(statements text) RETURNS SETOF text
	LANGUAGE C AS 'MODULE_PATHNAME', 'autocdc_execute';

/* ---------------------------------------------------------------- */
/* views                                                            */
/* ---------------------------------------------------------------- */

-- the advisory lock class that marks a flow being applied (pg_locks.objsubid)
CREATE FUNCTION autocdc_internal._lock_class() RETURNS int
	LANGUAGE C IMMUTABLE STRICT AS 'MODULE_PATHNAME', 'autocdc_lock_class';

-- failed runs whose error is still in shared memory (the view shows them at once)
CREATE FUNCTION autocdc_internal._pending_errors(OUT flow_id int, OUT error text, OUT at timestamptz,
	OUT detail text, OUT hint text, OUT sqlstate text, OUT lsn pg_lsn, OUT resync boolean)
	RETURNS SETOF record
	LANGUAGE C STRICT AS 'MODULE_PATHNAME', 'autocdc_pending_flow_errors';

-- how the last decoding for each flow left it (lag.c), and a source's insert count
CREATE FUNCTION autocdc_internal._lag_notes(OUT flow_id int, OUT decoded_at timestamptz,
	OUT changes bigint, OUT pending_since timestamptz, OUT cut boolean)
	RETURNS SETOF record
	LANGUAGE C STRICT AS 'MODULE_PATHNAME', 'autocdc_lag_notes';
CREATE FUNCTION autocdc_internal._source_changes(oid) RETURNS bigint
	LANGUAGE C STABLE STRICT AS 'MODULE_PATHNAME', 'autocdc_source_changes';

-- why the worker could not create this database's main slot (no row: nothing known)
CREATE FUNCTION autocdc_internal._slot_error(OUT error text, OUT hint text, OUT sqlstate text,
	OUT since timestamptz)
	RETURNS SETOF record
	LANGUAGE C STRICT AS 'MODULE_PATHNAME', 'autocdc_slot_error';

CREATE VIEW autocdc.flows AS
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

/*
 * The run log.  Errors can quote source values, so each role sees the runs
 * of the flows it may act for (and monitoring roles see all).
 */
CREATE VIEW autocdc.flow_runs AS
SELECT r.id, r.flow, r.started_at, r.finished_at, r.num_events, r.num_upserted_rows,
	   r.num_deleted_rows, r.num_skipped_events, r.status, r.error, r.error_detail, r.error_hint,
	   r.error_sqlstate, r.error_lsn, r.expectations
  FROM autocdc.flow_run_log r
 WHERE pg_catalog.pg_has_role(CURRENT_USER, 'pg_read_all_stats', 'USAGE')
	OR EXISTS (SELECT FROM autocdc.flow f
				WHERE f.id = r.flow_id AND pg_catalog.pg_has_role(CURRENT_USER, f.owner, 'USAGE'));

GRANT SELECT ON autocdc.flows, autocdc.flow_runs TO PUBLIC;

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
