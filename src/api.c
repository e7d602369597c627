/*-------------------------------------------------------------------------
 *
 * api.c
 *		The SQL functions of autocdc's API (entry layer): each reads and
 *		checks its arguments and hands them to a use case (define.c, run.c,
 *		snaprun.c).
 *
 * Every function refuses when the library was not preloaded, while this
 * database's catalog is at another version than the library, and while
 * this session is applying a flow (code that a run evaluates must not
 * change or run flows).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "access/xlog.h"

#include "batch.h"
#include "catalog.h"
#include "compat.h"
#include "define.h"
#include "failures.h"
#include "registry.h"
#include "run.h"
#include "snaprun.h"
#include "util.h"

PG_FUNCTION_INFO_V1(autocdc_create_flow);
PG_FUNCTION_INFO_V1(autocdc_create_snapshot_flow);
PG_FUNCTION_INFO_V1(autocdc_run_flow);
PG_FUNCTION_INFO_V1(autocdc_full_refresh);
PG_FUNCTION_INFO_V1(autocdc_drop_flow);
PG_FUNCTION_INFO_V1(autocdc_skip_events);
PG_FUNCTION_INFO_V1(autocdc_pause_flow);
PG_FUNCTION_INFO_V1(autocdc_resume_flow);
PG_FUNCTION_INFO_V1(autocdc_set_expectation);
PG_FUNCTION_INFO_V1(autocdc_drop_expectation);
PG_FUNCTION_INFO_V1(autocdc_create_as_of_index);

/* Error out on a NULL argument among the first n. */
static void
require_args(FunctionCallInfo fcinfo, int n, const char *const *names, const char *suffix)
{
	int			i;

	for (i = 0; i < n; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s%s must not be null", names[i], suffix)));
}

/* Argument readers: NULL for an SQL NULL. */
#define ARG_TEXT(n) (PG_ARGISNULL(n) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(n)))
#define ARG_ARRAY(n) (PG_ARGISNULL(n) ? NULL : PG_GETARG_ARRAYTYPE_P(n))
#define ARG_BOOL(n, dflt) (PG_ARGISNULL(n) ? (dflt) : PG_GETARG_BOOL(n))

/*
 * Checks every entry point makes first: the library was preloaded (else
 * the shared state, the guards and the worker are missing), the catalog is
 * current, and this session applies no flow.
 */
static void
entry_checks(const char *what)
{
	if (!registry_attached())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("autocdc must be loaded via shared_preload_libraries"),
				 errhint("Add autocdc to shared_preload_libraries in postgresql.conf and restart the server.")));
	catalog_require_current();
	run_refuse_while_applying(what);
}

/* A flow's name as the result of a create function (copied out of SPI's memory). */
static Datum
return_name(MemoryContext callercxt, const char *name)
{
	MemoryContext old = MemoryContextSwitchTo(callercxt);
	text	   *result = cstring_to_text(name);

	MemoryContextSwitchTo(old);
	SPI_finish();
	PG_RETURN_TEXT_P(result);
}

/*
 * autocdc.create_flow(target, source, keys, sequence_by, ignore_null_updates,
 * apply_as_deletes, apply_as_truncates, column_list, except_column_list,
 * stored_as_scd_type, track_history_column_list,
 * track_history_except_column_list, name, once, system_sequence_by,
 * continuous, tombstone_retention, ignore_null_updates_column_list,
 * ignore_null_updates_except_column_list, columns_to_update)
 */
Datum
autocdc_create_flow(PG_FUNCTION_ARGS)
{
	static const char *const required[] = {"target", "source", "keys"};
	FlowSpec	spec;
	MemoryContext callercxt = CurrentMemoryContext;

	entry_checks("create a flow");
	require_args(fcinfo, 3, required, " of a flow");
	memset(&spec, 0, sizeof(spec));
	spec.target = ARG_TEXT(0);
	spec.source = ARG_TEXT(1);
	spec.keys = ARG_ARRAY(2);
	spec.sequence_by = ARG_TEXT(3);
	spec.ignore_nulls = ARG_BOOL(4, false);
	spec.deletes = ARG_TEXT(5);
	spec.truncates = ARG_TEXT(6);
	spec.column_list = ARG_ARRAY(7);
	spec.except_column_list = ARG_ARRAY(8);
	spec.scd = ARG_TEXT(9);
	spec.track_list = ARG_ARRAY(10);
	spec.track_except_list = ARG_ARRAY(11);
	spec.name = ARG_TEXT(12);
	spec.once = ARG_BOOL(13, false);
	spec.system_sequence_by = ARG_TEXT(14);
	spec.continuous = ARG_BOOL(15, true);
	spec.tombstone_retention = PG_ARGISNULL(16) ? NULL :
		DatumGetCString(DirectFunctionCall1(interval_out, PG_GETARG_DATUM(16)));
	if (PG_NARGS() > 19)
	{
		spec.inu_list = ARG_ARRAY(17);
		spec.inu_except_list = ARG_ARRAY(18);
		spec.columns_to_update = ARG_TEXT(19);
		spec.distributed_by = PG_NARGS() > 20 ? ARG_TEXT(20) : NULL;
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	return return_name(callercxt, define_flow(&spec));
}

/*
 * autocdc.create_snapshot_flow(target, source, keys, stored_as_scd_type,
 * track_history_column_list, track_history_except_column_list, name,
 * continuous, source_function, source_query, version_query, once)
 */
Datum
autocdc_create_snapshot_flow(PG_FUNCTION_ARGS)
{
	FlowSpec	spec;
	MemoryContext callercxt = CurrentMemoryContext;

	entry_checks("create a flow");
	if (PG_ARGISNULL(0) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s of a snapshot flow must not be null", PG_ARGISNULL(0) ? "target" : "keys")));
	memset(&spec, 0, sizeof(spec));
	spec.target = ARG_TEXT(0);
	spec.source = ARG_TEXT(1);
	spec.keys = ARG_ARRAY(2);
	spec.scd = ARG_TEXT(3);
	spec.track_list = ARG_ARRAY(4);
	spec.track_except_list = ARG_ARRAY(5);
	spec.name = ARG_TEXT(6);
	spec.continuous = ARG_BOOL(7, true);
	spec.source_function = ARG_TEXT(8);
	spec.source_query = PG_NARGS() > 9 ? ARG_TEXT(9) : NULL;
	spec.version_query = PG_NARGS() > 10 ? ARG_TEXT(10) : NULL;
	spec.once = PG_NARGS() > 11 && ARG_BOOL(11, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	return return_name(callercxt, define_snapshot_flow(&spec));
}

/* Return one row of metrics from a run function. */
static Datum
return_metrics(FunctionCallInfo fcinfo, RunMetrics *m)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};

	InitMaterializedSRF(fcinfo, 0);
	values[0] = Int64GetDatum(m->num_events);
	values[1] = Int64GetDatum(m->num_upserted);
	values[2] = Int64GetDatum(m->num_deleted);
	values[3] = Int64GetDatum(m->num_skipped);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/* Keep the error of a failed run in shared memory (its transaction aborts). */
static void
record_failure(int32 flow_id, MemoryContext cxt)
{
	ErrorData  *edata;
	MemoryContext old = MemoryContextSwitchTo(cxt);

	edata = CopyErrorData();
	MemoryContextSwitchTo(old);
	failures_record(flow_id, edata);
	FreeErrorData(edata);
}

/* Apply one flow (the body of run_flow). */
static void
run_body(FlowDef *peek, RunMetrics *m)
{
	FlowDef    *flow;

	run_prologue(peek);
	flow = catalog_load_flow(peek->name, true, false);
	if (flow->kind == FLOW_SNAPSHOT)
		snaprun_run(flow, m);
	else
		run_one(flow, m, false, false);
}

/* Refresh a flow's target (the body of full_refresh). */
static void
refresh_body(FlowDef *flow, RunMetrics *m)
{
	char	   *snap;

	if (flow->kind == FLOW_SNAPSHOT && flow->run.skip_invalid)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("flow \"%s\" is a snapshot flow: full_refresh cannot skip its invalid rows",
						flow->name),
				 errhint("A snapshot flow reads its whole source at every run; correct the rows of the snapshot instead.")));
	run_prologue(flow);
	snap = flow->kind == FLOW_SNAPSHOT ? flow->name :
		flow->target_id != 0 ? catalog_snapshot_flow_of(flow->target_id) : NULL;
	if (snap != NULL)
	{
		FlowDef    *sf = catalog_load_flow(snap, true, false);

		/* a snapshot flow alone in its target, or one beside change flows */
		if (snaprun_mixed(sf))
			snaprun_refresh_mixed(sf, flow, m);
		else
			snaprun_refresh(sf, m);
	}
	else
		run_refresh(flow, m, false, true);
}

/*
 * The frame of run_flow and full_refresh: SPI, a pinned search_path, the
 * name and ownership checks (errors there are not failures of the flow),
 * the failure record, and the metrics row.
 */
static Datum
run_entry(FunctionCallInfo fcinfo, void (*body) (FlowDef *peek, RunMetrics *m))
{
	static const char *const required[] = {"flow name", "skip_invalid", "discard_history"};
	FlowDef    *peek;
	RunMetrics	m;
	MemoryContext cxt = CurrentMemoryContext;
	int			level;

	entry_checks(body == run_body ? "run a flow" : "refresh a flow");
	memset(&m, 0, sizeof(m));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	level = set_safe_search_path();
	require_args(fcinfo, PG_NARGS(), required, "");
	peek = catalog_load_flow(text_to_cstring(PG_GETARG_TEXT_PP(0)), false, false);
	catalog_check_flow_owner(peek);
	peek->run.skip_invalid = PG_NARGS() > 1 && PG_GETARG_BOOL(1);
	peek->run.discard_history = PG_NARGS() > 2 && PG_GETARG_BOOL(2);
	PG_TRY();
	{
		run_set_applying(peek->name);
		memory_hold_freed();
		body(peek, &m);
		memory_release_freed(false);
		run_set_applying(NULL);
	}
	PG_CATCH();
	{
		memory_release_freed(false);
		run_set_applying(NULL);
		batch_clear();
		record_failure(peek->id, cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	AtEOXact_GUC(true, level);
	SPI_finish();
	return return_metrics(fcinfo, &m);
}

/* autocdc.run_flow(name): apply what the flow's source committed since its last run. */
Datum
autocdc_run_flow(PG_FUNCTION_ARGS)
{
	return run_entry(fcinfo, run_body);
}

/*
 * autocdc.full_refresh(name, skip_invalid, discard_history): empty the
 * flow's target and hidden state and re-read every flow into that target
 * from what its source holds now; skip_invalid skips (and reports) the
 * rows that cannot become events instead of failing.  A changes() flow
 * keeps its target and history instead (run_refresh), unless
 * discard_history.
 */
Datum
autocdc_full_refresh(PG_FUNCTION_ARGS)
{
	return run_entry(fcinfo, refresh_body);
}

/*
 * Load the flow named by the first argument, locked, for a function that
 * changes it; the caller must have the owner's privileges.  SPI connected,
 * search_path pinned (*level to restore).
 */
static FlowDef *
flow_for_change(FunctionCallInfo fcinfo, int *level)
{
	FlowDef    *flow;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	*level = set_safe_search_path();
	flow = catalog_load_flow(text_to_cstring(PG_GETARG_TEXT_PP(0)), true, false);
	catalog_check_flow_owner(flow);
	return flow;
}

/* Undo flow_for_change's frame. */
static void
flow_change_done(int level)
{
	AtEOXact_GUC(true, level);
	SPI_finish();
}

/* autocdc.drop_flow(name, drop_target) */
Datum
autocdc_drop_flow(PG_FUNCTION_ARGS)
{
	static const char *const required[] = {"flow name", "drop_target"};
	FlowDef    *flow;
	int			level;
	bool		drop_target;

	entry_checks("drop a flow");
	require_args(fcinfo, 2, required, "");
	drop_target = PG_GETARG_BOOL(1);
	flow = flow_for_change(fcinfo, &level);
	if (flow->target_id != 0 && drop_target && !compat_class_ownercheck(flow->target, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of target \"%s\"", get_rel_name(flow->target))));
	define_drop_flow(flow, drop_target);
	flow_change_done(level);
	PG_RETURN_VOID();
}

/* autocdc.skip_events(name, upto): pass source transactions up to upto. */
Datum
autocdc_skip_events(PG_FUNCTION_ARGS)
{
	static const char *const required[] = {"flow name", "upto"};
	FlowDef    *flow;
	int			level;
	XLogRecPtr	upto;

	entry_checks("change a flow");
	require_args(fcinfo, 2, required, "");
	upto = PG_GETARG_LSN(1);
	if (upto > GetXLogInsertRecPtr())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot skip source transactions up to " COMPAT_LSN_FORMAT ": the WAL ends at " COMPAT_LSN_FORMAT,
						LSN_FORMAT_ARGS(upto), LSN_FORMAT_ARGS(GetXLogInsertRecPtr())),
				 errdetail("Every transaction committed later would be skipped."),
				 errhint("Give the commit LSN that the flow's error names.")));
	flow = flow_for_change(fcinfo, &level);
	if (flow->kind == FLOW_SNAPSHOT)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("flow \"%s\" is a snapshot flow, which has no source events to skip", flow->name),
				 errhint("A snapshot flow reads its whole source at each run; fix the snapshot instead.")));
	failures_persist();
	catalog_set_skip(flow->name, upto);
	flow_change_done(level);
	PG_RETURN_VOID();
}

/* Pause or resume a flow (the background worker skips paused flows). */
static void
set_paused(FunctionCallInfo fcinfo, bool paused)
{
	static const char *const required[] = {"flow name"};
	FlowDef    *flow;
	int			level;

	entry_checks("change a flow");
	require_args(fcinfo, 1, required, "");
	flow = flow_for_change(fcinfo, &level);
	failures_persist();
	catalog_set_paused(flow->name, paused);
	flow_change_done(level);
}

/* autocdc.pause_flow(name) */
Datum
autocdc_pause_flow(PG_FUNCTION_ARGS)
{
	set_paused(fcinfo, true);
	PG_RETURN_VOID();
}

/* autocdc.resume_flow(name) */
Datum
autocdc_resume_flow(PG_FUNCTION_ARGS)
{
	set_paused(fcinfo, false);
	PG_RETURN_VOID();
}

/* autocdc.set_expectation(target, name, condition, on_violation) */
Datum
autocdc_set_expectation(PG_FUNCTION_ARGS)
{
	static const char *const required[] = {"target", "name", "condition", "on_violation"};

	entry_checks("change an expectation");
	require_args(fcinfo, 4, required, " of an expectation");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	define_set_expectation(PG_GETARG_OID(0), ARG_TEXT(1), ARG_TEXT(2), ARG_TEXT(3));
	SPI_finish();
	PG_RETURN_VOID();
}

/* autocdc.drop_expectation(target, name) */
Datum
autocdc_drop_expectation(PG_FUNCTION_ARGS)
{
	static const char *const required[] = {"target", "name"};

	entry_checks("change an expectation");
	require_args(fcinfo, 2, required, " of an expectation");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	define_drop_expectation(PG_GETARG_OID(0), ARG_TEXT(1));
	SPI_finish();
	PG_RETURN_VOID();
}

/* autocdc.create_as_of_index(target) (STRICT) */
Datum
autocdc_create_as_of_index(PG_FUNCTION_ARGS)
{
	entry_checks("create an index");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	define_create_as_of_index(PG_GETARG_OID(0));
	SPI_finish();
	PG_RETURN_VOID();
}
