/*-------------------------------------------------------------------------
 *
 * run.c
 *		One run of a flow (autocdc.run_flow) and full refreshes: the driver
 *		that takes a flow through capture, apply and progress in the
 *		caller's transaction.
 *
 * Locks: the flow's flow_state row (FOR UPDATE) is the flow lock, held to
 * the end of the transaction; the target's autocdc.target row (FOR UPDATE)
 * keeps two flows from writing one target at once.  A failed run leaves its
 * error in shared memory (autocdc.c), since its transaction aborts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "autocdc.h"

PG_FUNCTION_INFO_V1(autocdc_run_flow);
PG_FUNCTION_INFO_V1(autocdc_full_refresh);

/* Lock the target row so that one flow at a time writes a target. */
static void
lock_target(int target_id)
{
	Datum		arg = Int32GetDatum(target_id);
	Oid			argtype = INT4OID;
	Oid			saved_uid;
	int			saved_sec;

	become_superuser(&saved_uid, &saved_sec);
	if (SPI_execute_with_args("SELECT 1 FROM autocdc.target WHERE id OPERATOR(pg_catalog.=) $1 FOR UPDATE",
							  1, &argtype, &arg, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not lock target");
	restore_user(saved_uid, saved_sec);
}

/*
 * Capture and apply everything available to one (locked) flow, and record
 * its progress.
 */
static void
run_one(FlowDef *flow, RunMetrics *m, bool refresh)
{
	TupleDesc	bdesc;
	Tuplestorestate *batch;
	TimestampTz started = GetCurrentTimestamp();
	TimestampTz captured;
	Oid			saved_uid;
	int			saved_sec;
	bool		have_batch = true;

	bdesc = CreateTemplateTupleDesc(3);
	TupleDescInitEntry(bdesc, 1, "lsn", LSNOID, -1, 0);
	TupleDescInitEntry(bdesc, 2, "ord", INT8OID, -1, 0);
	TupleDescInitEntry(bdesc, 3, "r", get_rel_type_id(flow->source), -1, 0);
	bdesc = BlessTupleDesc(bdesc);
	batch = tuplestore_begin_heap(false, false, work_mem);

	lock_target(flow->target_id);
	catalog_sync_columns(flow, refresh);
	if (flow->once)
	{
		if (flow->once_done)
			have_batch = false;
		else
		{
			PushActiveSnapshot(GetTransactionSnapshot());
			source_snapshot_read(flow, batch, bdesc, GetXLogInsertRecPtr());
			PopActiveSnapshot();
			flow->once_done = true;
		}
	}
	else
		(void) source_capture(flow, batch, bdesc, m);

	captured = GetCurrentTimestamp();
	batch_set(BATCH_SOURCE, batch, bdesc, get_rel_type_id(flow->source),
			  tuplestore_tuple_count(batch));
	become_owner(flow->owner, &saved_uid, &saved_sec);
	apply_batch(flow, m, have_batch && tuplestore_tuple_count(batch) > 0);
	restore_user(saved_uid, saved_sec);
	elog(DEBUG1, "autocdc: flow \"%s\": captured " INT64_FORMAT " rows in %ld ms, applied in %ld ms",
		 flow->name, (int64) tuplestore_tuple_count(batch),
		 (long) ((captured - started) / 1000),
		 (long) ((GetCurrentTimestamp() - captured) / 1000));
	batch_clear();
	tuplestore_end(batch);
	catalog_save_progress(flow, m, started);
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

/* Record the error of a failed run in shared memory, then re-throw. */
static void
record_failure(const char *name, MemoryContext cxt)
{
	ErrorData  *edata;
	MemoryContext old = MemoryContextSwitchTo(cxt);

	edata = CopyErrorData();
	MemoryContextSwitchTo(old);
	autocdc_record_error(name, edata->message);
	FreeErrorData(edata);
}

/* Prepare a run: the slot (before anything is written), then the errors. */
static void
run_prologue(const char *name)
{
	FlowDef    *peek = catalog_load_flow(name, false, false);

	catalog_check_flow_owner(peek);
	if (!peek->once)
		source_ensure_slot();
	{
		Oid			saved_uid;
		int			saved_sec;

		become_superuser(&saved_uid, &saved_sec);
		autocdc_persist_errors();
		restore_user(saved_uid, saved_sec);
	}
}

/* autocdc.run_flow(name): apply what the flow's source committed since its last run. */
Datum
autocdc_run_flow(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	RunMetrics	m;
	MemoryContext cxt = CurrentMemoryContext;
	int			level;

	memset(&m, 0, sizeof(m));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	level = set_safe_search_path();
	PG_TRY();
	{
		FlowDef    *flow;

		run_prologue(name);
		flow = catalog_load_flow(name, true, false);
		run_one(flow, &m, false);
	}
	PG_CATCH();
	{
		batch_clear();
		record_failure(name, cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	AtEOXact_GUC(true, level);
	SPI_finish();
	return return_metrics(fcinfo, &m);
}

/*
 * autocdc.full_refresh(name): empty the flow's target and hidden state and
 * re-read every flow into that target from what its source holds now.
 */
Datum
autocdc_full_refresh(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	RunMetrics	m;
	MemoryContext cxt = CurrentMemoryContext;
	int			level;

	memset(&m, 0, sizeof(m));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	level = set_safe_search_path();
	PG_TRY();
	{
		FlowDef    *flow;
		List	   *names;
		List	   *flows = NIL;
		ListCell   *lc;
		Oid			saved_uid;
		int			saved_sec;
		char	   *sql;

		run_prologue(name);
		flow = catalog_load_flow(name, false, false);
		source_ensure_slot();
		names = catalog_target_flows(flow->target_id);
		foreach(lc, names)
		{
			FlowDef    *f = catalog_load_flow(lfirst(lc), true, false);

			catalog_check_flow_owner(f);
			flows = lappend(flows, f);
		}
		lock_target(flow->target_id);

		/* empty target and hidden state, as the owner */
		become_owner(flow->owner, &saved_uid, &saved_sec);
		sql = psprintf("DELETE FROM ONLY %s",
					   quote_qualified_identifier(get_namespace_name(get_rel_namespace(flow->target)),
												  get_rel_name(flow->target)));
		if (SPI_execute(sql, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not empty the target");
		m.num_deleted += SPI_processed;
		sql = psprintf("DELETE FROM %s",
					   quote_qualified_identifier(AUTOCDC_STATE_SCHEMA, state_table_name(flow->target_id)));
		if (SPI_execute(sql, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not empty the hidden state");
		restore_user(saved_uid, saved_sec);

		/* every flow into the target reads its source again */
		foreach(lc, flows)
		{
			FlowDef    *f = lfirst(lc);
			RunMetrics	fm;

			memset(&fm, 0, sizeof(fm));
			f->has_progress = false;
			f->progress = InvalidXLogRecPtr;
			f->once_done = false;
			run_one(f, &fm, true);
			m.num_events += fm.num_events;
			m.num_upserted += fm.num_upserted;
			m.num_deleted += fm.num_deleted;
			m.num_skipped += fm.num_skipped;
		}
	}
	PG_CATCH();
	{
		batch_clear();
		record_failure(name, cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	AtEOXact_GUC(true, level);
	SPI_finish();
	return return_metrics(fcinfo, &m);
}
