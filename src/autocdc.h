/*-------------------------------------------------------------------------
 *
 * autocdc.h
 *		Declarations shared by the files of the autocdc extension.
 *
 * The data path is: catalog (flow rows, catalog.c) -> source (feed capture
 * through logical decoding and first reads, source.c) -> batch (rows held in
 * backend memory and exposed to SQL, batch.c) -> apply engine (the SPEC §4
 * fold, apply.c) -> target, hidden state and progress written in one
 * transaction (run.c drives a run, or a worker pass over several flows).
 * Snapshot flows (snapshot.c) compute their changes by comparing a snapshot
 * with the target and hand them to the same apply engine.  The launcher and
 * the per-database workers (worker.c) only decide when run.c runs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_H
#define AUTOCDC_H

#include "postgres.h"

#include "access/htup.h"
#include "access/tupdesc.h"
#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "nodes/primnodes.h"
#include "storage/lwlock.h"
#include "utils/array.h"
#include "utils/tuplestore.h"

#define AUTOCDC_PUBLICATION "autocdc_feeds"
#define AUTOCDC_STATE_SCHEMA "autocdc_state"
#define AUTOCDC_INTERNAL_SCHEMA "autocdc_internal"

/* A flow as read from the catalog, plus its progress. */
typedef struct FlowDef
{
	int32		id;				/* autocdc.flow.id */
	char	   *name;
	Oid			owner;
	char		kind;			/* 'c' cdc, 's' snapshot */
	Oid			source;			/* feed relation */
	char	   *source_text;
	int			target_id;
	Oid			target;			/* target relation */
	char		scd;			/* '1' or '2' */
	List	   *keys;			/* key column names (char *) */
	char	   *sequence_by;	/* normalized expression */
	char	   *deletes;		/* normalized expression or NULL */
	char	   *truncates;		/* normalized expression or NULL */
	bool		ignore_nulls;
	List	   *columns;		/* selected source columns, source order */
	bool		has_include;	/* column_list was given */
	List	   *col_include;	/* column_list */
	List	   *col_except;		/* except_column_list */
	List	   *track;			/* tracked columns (SCD 2), NIL: all data */
	bool		once;
	Oid			seq_type;
	char	   *retention;		/* interval text of the target, or NULL */
	/* progress */
	bool		has_progress;
	XLogRecPtr	progress;
	char	   *slot_name;		/* slot the progress belongs to */
	bool		once_done;
	XLogRecPtr	skip_upto;
	bool		paused;
	TimestampTz last_run_at;	/* 0: never */
	/* snapshot flows (kind 's') */
	char	   *source_function;	/* version function signature, or NULL */
	char	   *snapshot_target;	/* qualified target name before creation */
	char	   *snapshot_version;	/* last applied version as text, or NULL */
} FlowDef;

/* Metrics of one run. */
typedef struct RunMetrics
{
	int64		num_events;
	int64		num_upserted;
	int64		num_deleted;
	int64		num_skipped;
	TimestampTz last_commit_time;
} RunMetrics;

/* One flow's part in a decoding pass (source.c). */
typedef struct Capture
{
	FlowDef    *flow;
	Tuplestorestate *batch;
	TupleDesc	batchdesc;
	RunMetrics *m;
	bool		resync;			/* out: progress no longer served, not captured */
	char	   *error;			/* out: why capture stopped for this flow */
} Capture;

/* autocdc.c */
extern bool autocdc_preloaded;
extern int	autocdc_decoding_work_mem;
extern int	autocdc_work_mem;
extern char *autocdc_installed_version(void);
extern void autocdc_require_current_catalog(void);
extern void autocdc_record_error(int32 flow_id, const char *message);
extern void autocdc_persist_errors(void);

/* worker.c */
extern bool autocdc_enabled;
extern int	autocdc_snapshot_interval;
extern Size worker_shmem_size(void);
extern void worker_shmem_init(LWLock *lock);
extern void worker_init(void);
extern void worker_before_utility(Node *stmt);

/* guard.c */
extern void guard_init(void);

/* catalog.c */
extern FlowDef *catalog_load_flow(const char *name, bool lock, bool missing_ok);
extern List *catalog_target_flows(int target_id);
extern void catalog_check_flow_owner(FlowDef *flow);
extern void catalog_check_flow_objects(FlowDef *flow);
extern void catalog_check_source(FlowDef *flow);
extern void catalog_drop_flow(FlowDef *flow, bool drop_target);
extern Oid	catalog_state_relid(int target_id);
extern void catalog_refuse_reserved(Oid relid, const char *name, const char *what,
									bool system);
extern void catalog_insert_flow(const char *flowname, const char *sql, int nargs, Oid *types,
								Datum *args, const char *nulls);
extern void catalog_save_progress(FlowDef *flow, RunMetrics *m, TimestampTz started,
								  bool log);
extern void catalog_sync_columns(FlowDef *flow, bool refresh);
extern char *state_table_name(int target_id);
extern List *parse_identifier_array(ArrayType *arr, const char *what);
extern Oid	resolve_relation(const char *name, RangeVar **rv_out);

/* util.c */
typedef void (*SpiRowFn) (HeapTuple tup, TupleDesc desc, void *arg);
typedef void (*SpiChunkFn) (void *arg);
extern void become_superuser(Oid *saved_uid, int *saved_sec);
extern void become_owner(Oid owner, Oid *saved_uid, int *saved_sec);
extern void restore_user(Oid saved_uid, int saved_sec);
extern int	set_safe_search_path(void);
extern List *name_list_or_nil(const char *text);
extern void spi_exec(const char *sql, int expected);
extern void spi_foreach(const char *sql, bool read_only, SpiRowFn row_fn,
						SpiChunkFn chunk_fn, void *arg);

/* source.c */
extern void source_ensure_slot(void);
extern char *source_slot_name(void);
extern XLogRecPtr source_capture(FlowDef *flow, Tuplestorestate *batch,
								 TupleDesc batchdesc, RunMetrics *m);
extern XLogRecPtr source_capture_flows(List *captures, int64 max_events,
										bool resync_error, bool *more);
extern void source_raise_capture_error(Capture *c);
extern void source_drop_slots(void);
extern void source_snapshot_read(FlowDef *flow, Tuplestorestate *batch,
								 TupleDesc batchdesc, XLogRecPtr pos);

/* batch.c */
extern void batch_set(int which, Tuplestorestate *ts, TupleDesc desc, Oid rowtype,
					  int64 nrows, int uses);
extern TupleDesc batch_desc(int which);
extern void batch_clear(void);

#define BATCH_SOURCE 0
#define BATCH_EVENTS 1
#define BATCH_ROWS 2
#define BATCH_KEYS 3
#define BATCH_COUNT 4

/* run.c */
extern void run_refuse_while_applying(const char *what);
extern void run_internal_call(bool begin);
extern void run_hold_relations(FlowDef *flow, Oid source);
extern void run_release_relations(void);
extern bool run_worker_pass(List *names, int64 max_events);
extern void run_worker_snapshots(List *names);
extern void advertise_running(FlowDef *flow);

/* apply.c */
extern void apply_batch(FlowDef *flow, RunMetrics *m, bool have_batch, bool touch_all);
extern char *equality_operator(Oid typid);
extern void apply_events(FlowDef *flow, RunMetrics *m, const char *events_sql, bool touch_all);

/* snapshot.c */
extern void snapshot_run(FlowDef *flow, RunMetrics *m);
extern void snapshot_refresh(FlowDef *flow, RunMetrics *m);
extern void snapshot_check_target_free(int target_id, const char *target);

#endif							/* AUTOCDC_H */
