/*-------------------------------------------------------------------------
 *
 * catalog.h
 *		autocdc's catalog (store layer): the only module that reads or writes
 *		the autocdc.* tables.  A flow row and its progress become a FlowDef,
 *		a target row a TargetDef; every other module asks here.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_CATALOG_H
#define AUTOCDC_CATALOG_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "nodes/pg_list.h"

#include "srckind.h"

/* autocdc.flow.kind */
#define FLOW_CDC 'c'
#define FLOW_SNAPSHOT 's'

/*
 * What one run of a flow is asked to do and works out as it goes: never
 * stored.  The caller of the run sets the options (api.c, run.c); the run
 * sets the rest.
 */
typedef struct FlowRun
{
	/* options of the call */
	bool		skip_invalid;	/* skip rows that cannot be events */
	bool		discard_history;	/* full_refresh empties a changes() target */
	bool		refresh_keep;	/* the first read refreshes a changes() flow,
								 * keeping its target */
	/* working state */
	bool		read_whole;		/* the source was read whole (a first read or
								 * refresh): it ends a resync */
	List	   *expr_columns;	/* source columns the delete and truncate
								 * conditions read (set by source_check) */
	List	   *expectations;	/* the target's Expectations, with this run's
								 * counts (set by run_prepare, or
								 * snap_run_versions) */
	bool		snapshot_refresh;	/* a snapshot flow's full_refresh */
	bool		spare_dropped;	/* a snapshot run that rewrites keys beyond
								 * its own rows (a first snapshot into a
								 * target holding rows, a snapshot into a
								 * target change flows write): a row an
								 * expectation drops becomes an EVENT_SPARE */
} FlowRun;

/* An expectation of a target (autocdc.expectation) and one run's counts. */
typedef struct Expectation
{
	char	   *name;
	char	   *condition;		/* normalized boolean expression over the
								 * target's data columns */
	char		action;			/* EXPECT_WARN, EXPECT_DROP or EXPECT_FAIL */
	Oid			owner;			/* the role that set it */
	int64		passed;			/* this run's counts */
	int64		failed;
} Expectation;

#define EXPECT_WARN 'w'
#define EXPECT_DROP 'd'
#define EXPECT_FAIL 'f'

/*
 * A flow as the catalog holds it: its definition (autocdc.flow) and its
 * progress (autocdc.flow_state), both read by catalog_get_flow and written
 * by the catalog's functions; and, apart, the current run's (run, never
 * stored).
 */
typedef struct FlowDef
{
	int32		id;
	char	   *name;
	Oid			owner;
	char		kind;			/* FLOW_CDC or FLOW_SNAPSHOT */
	/* the definition (autocdc.flow): source */
	Oid			source;			/* feed or table source; InvalidOid for a
								 * version function */
	char	   *source_text;	/* as the user gave it */
	bool		once;
	const SourceKind *srckind;	/* what the source is (source_kind) */
	char	   *source_function;	/* version function signature, or NULL */
	char	   *source_query;	/* snapshot query (stored form), or NULL */
	char	   *version_query;	/* its version query (stored form), or NULL */
	Oid			version_type;	/* the version query's type, or InvalidOid */
	/* target */
	int			target_id;		/* 0: a snapshot target not created yet */
	Oid			target;
	char	   *snapshot_target;	/* qualified name until the first run */
	/* what the flow does */
	char		scd;			/* '1', '2' or 'b' (bitemporal) */
	List	   *keys;			/* key column names */
	char	   *sequence_by;	/* normalized expression */
	char	   *deletes;		/* normalized expression or NULL */
	char	   *truncates;		/* normalized expression or NULL */
	bool		ignore_nulls;
	List	   *columns;		/* selected source columns, source order */
	bool		has_include;	/* a column_list was given */
	List	   *col_include;	/* column_list: the target columns it names */
	List	   *col_from;		/* and what each is taken from (the same
								 * name, or a pseudo-column of changes()) */
	List	   *col_except;		/* except_column_list */
	bool		track_all;		/* SCD 2: every non-key column is tracked */
	List	   *track;			/* otherwise the tracked columns (maybe none) */
	bool		has_track_include;	/* track_history_column_list given */
	List	   *track_include;	/* track_history_column_list */
	List	   *track_except;	/* track_history_except_column_list */
	Oid			seq_type;		/* the target's sequence type */
	char	   *system_sequence_by; /* bitemporal: normalized expression */
	Oid			sysseq_type;	/* bitemporal: the system sequence's type */
	char	   *tombstone_retention;	/* this flow's, as interval text */
	bool		has_inu_include;	/* ignore_null_updates_column_list given */
	List	   *inu_include;	/* ignore_null_updates_column_list */
	bool		has_inu_except; /* ignore_null_updates_except_column_list given */
	List	   *inu_except;		/* ignore_null_updates_except_column_list */
	char	   *columns_to_update;	/* the source column naming what an
									 * upsert writes, or NULL */
	char	   *retention;		/* the target's: the longest of its flows', or
								 * NULL (forever) */
	bool		keeps_state;	/* the target keeps per-key hidden state
								 * (false: see define.c) */
	bool		continuous;
	/* progress and state (autocdc.flow_state; snapshot_version: autocdc.flow) */
	bool		has_progress;
	XLogRecPtr	progress;		/* source commits before it are applied */
	TimestampTz progress_ts;	/* changes(): _commit_timestamp of the last
								 * applied transaction, 0: none */
	char	   *slot_name;		/* slot the progress belongs to */
	char	   *resync_reason;	/* why it was taken off its slot, or NULL */
	bool		once_done;
	XLogRecPtr	skip_upto;		/* commits at or before it are skipped */
	TimestampTz last_run_at;	/* 0: never */
	bool		waiting;		/* marked waiting for a locked relation */
	int64		ignored_updates;	/* updates of its feed counted so far */
	char	   *snapshot_version;	/* last applied version as text, or NULL */
	/* not stored */
	FlowRun		run;			/* the current run's options and state */
} FlowDef;

/* A target as the catalog holds it. */
typedef struct TargetDef
{
	int			id;
	Oid			relid;
	char		scd;
	List	   *keys;
	Oid			seq_type;
	char	   *seq_typname;	/* composite <target>_seq autocdc created, or
								 * NULL */
	Oid			sysseq_type;	/* bitemporal: the system sequence's type */
	char	   *sysseq_typname; /* composite <target>_sysseq, or NULL */
	char	   *range_typname;	/* range type <target>_seqrange, or NULL */
	List	   *columns;		/* data columns of the target, in order */
	bool		keeps_state;	/* false: its one flow needs no per-key
								 * hidden state */
} TargetDef;

/* Metrics of one run. */
typedef struct RunMetrics
{
	int64		num_events;
	int64		num_upserted;
	int64		num_deleted;
	int64		num_skipped;
	int64		num_ignored_updates;	/* feeds: updated rows, not events */
	int64		num_ignored_deletes;	/* feeds: deleted rows (purges) */
	TimestampTz last_commit_time;
} RunMetrics;

/* A failed run, as it is written down. */
typedef struct FlowFailure
{
	const char *message;
	const char *detail;			/* NULL: none */
	const char *hint;			/* NULL: none */
	char		sqlstate[6];
	XLogRecPtr	lsn;			/* commit of the failing event, or invalid */
	bool		resync;			/* the flow needs a resync: its progress
								 * leaves its slot */
	TimestampTz at;
	TimestampTz retry_at;		/* when the worker runs the flow again
								 * (schedule.c); 0: only the run log */
} FlowFailure;

/* A continuous flow's times its next due time is derived from (0: NULL). */
typedef struct FlowTimes
{
	bool		snapshot;		/* a snapshot flow */
	TimestampTz retry_at;
	TimestampTz last_run_at;
} FlowTimes;

/* the catalog's version */
extern char *catalog_installed_version(void);
extern void catalog_require_current(void);

/* flows */
extern FlowDef *catalog_load_flow(const char *name, bool lock, bool missing_ok);
extern bool catalog_flow_exists(const char *name);
extern Oid	catalog_flow_owner(int32 flow_id);
extern void catalog_check_flow_owner(FlowDef *flow);
extern void catalog_insert_flow(FlowDef *flow);
extern void catalog_delete_flow(const char *name);
extern List *catalog_target_flows(int target_id);
extern char *catalog_snapshot_flow_of(int target_id);
extern char *catalog_pending_snapshot_flow(const char *target);
extern char *catalog_flow_of_relation(Oid relid);
extern void catalog_set_columns(FlowDef *flow, List *columns);
extern void catalog_set_seq_types(FlowDef *flow, Oid seq_type, Oid sysseq_type);
extern void catalog_set_snapshot_target(FlowDef *flow, int target_id, List *columns, List *track,
										bool track_all);
extern void catalog_set_snapshot_version(FlowDef *flow, const char *version);
extern void catalog_set_skip(const char *name, XLogRecPtr upto);
extern void catalog_set_paused(const char *name, bool paused);
extern void catalog_save_progress(FlowDef *flow, RunMetrics *m, TimestampTz started, bool log);
extern bool catalog_failure_logged(int32 flow_id, TimestampTz failed_at);
extern bool catalog_lock_failed_state(int32 flow_id, TimestampTz failed_at, int *retries);
extern void catalog_record_failure(int32 flow_id, const FlowFailure *failure);

/* roles and sources (the utility hook) */
extern List *catalog_flows_of_roles(List *roleids);
extern void catalog_reassign_flows(Oid from, Oid to);
extern List *catalog_flows_reading(List *relids);
extern List *catalog_flow_targets_of(Oid source);
extern bool catalog_is_continuous_source(Oid relid);

/* targets */
extern bool catalog_load_target(Oid relid, TargetDef *t);
extern void catalog_insert_target(TargetDef *t);
extern void catalog_set_target_keeps_state(int target_id);
extern void catalog_set_target_range_typname(int target_id, const char *typname);
extern List *catalog_delete_target(int target_id);
extern bool catalog_lock_target(int target_id, bool skip_locked);

/* expectations */
extern List *catalog_load_expectations(int target_id);
extern void catalog_set_expectation(int target_id, Expectation *e);
extern bool catalog_drop_expectation(int target_id, const char *name);

/* what the worker asks */
extern bool catalog_has_change_flows(bool continuous_only);
extern List *catalog_lock_due_change_flows(TimestampTz now, const char *slot, bool on_slot);
extern char *catalog_slot_in_use(const char *prefix);
extern List *catalog_flow_relations(void);
extern List *catalog_flow_sources(void);
extern List *catalog_lock_movers(const char *from, bool to_laggard, int64 max_lag, List *slow,
								 XLogRecPtr confirmed, bool lock, XLogRecPtr *oldest);
extern bool catalog_moves_due(const char *main, const char *lag, int64 max_lag,
							  XLogRecPtr confirmed, int max_age);
extern bool catalog_lock_slot_flows(const char *slot);
extern bool catalog_slot_has_flows(const char *slot);
extern void catalog_move_flows(List *names, const char *to, bool to_laggard);
extern void catalog_mark_resync(List *relids, const char *reason);
extern List *catalog_expire_laggards(const char *lag, int max_age);
extern void catalog_move_slot_flows(const char *from, const char *to);
extern void catalog_mark_waiting(const char *name, bool waiting);
extern List *catalog_lock_due_snapshot_flows(TimestampTz now, TimestampTz ran_before);
extern List *catalog_flow_times(void);
extern void catalog_lock_flows(void);
extern void catalog_prune_run_log(int minutes);
extern bool catalog_oldest_progress(const char *slot, XLogRecPtr *lsn);

#endif							/* AUTOCDC_CATALOG_H */
