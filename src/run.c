/*-------------------------------------------------------------------------
 *
 * run.c
 *		One run of a flow (autocdc.run_flow), full refreshes, and the
 *		background worker's pass: the driver that takes flows through
 *		capture, apply and progress in the current transaction.
 *
 * Locks: the flow's flow_state row (FOR UPDATE) is the flow lock, held to
 * the end of the transaction; the target's autocdc.target row (FOR UPDATE)
 * keeps two flows from writing one target at once.  A failed run leaves its
 * error in shared memory (autocdc.c), since its transaction aborts.  The
 * worker's pass (worker.c selects and locks the flows) captures all of its
 * change flows in one decoding pass and applies each in a subtransaction,
 * so that a failing flow is rolled back and recorded alone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "catalog/pg_collation.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/backend_status.h"

#include "autocdc.h"

PG_FUNCTION_INFO_V1(autocdc_run_flow);
PG_FUNCTION_INFO_V1(autocdc_full_refresh);

/*
 * The flow this backend is applying (NULL: none), and the relations its run
 * holds open.  A run evaluates its owner's code (expressions, triggers,
 * defaults); that code must not drop, alter or run flows meanwhile, nor
 * alter the tables the run is using: the functions that change flows refuse
 * while this is set, and PostgreSQL refuses DDL on a relation this backend
 * holds open ("being used by active queries in this session").
 */
static char *applying_flow = NULL;
static List *held_relations = NIL;
static int	internal_calls = 0;

/* Note the flow being applied (NULL: the run ended). */
static void
set_applying(const char *name)
{
	if (applying_flow)
		pfree(applying_flow);
	applying_flow = name ? MemoryContextStrdup(TopMemoryContext, name) : NULL;
	list_free(held_relations);	/* on error, their owner released them */
	held_relations = NIL;
	internal_calls = 0;
}

/*
 * Refuse to change or run flows while this backend applies one (from code
 * that the run evaluates), except for autocdc's own internal calls.
 */
void
run_refuse_while_applying(const char *what)
{
	if (applying_flow != NULL && internal_calls == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot %s while flow \"%s\" is being applied in this session",
						what, applying_flow),
				 errdetail("Expressions, triggers and functions that a run evaluates must not create, change, drop or run flows."),
				 errhint("Do it in a statement of its own, after the run.")));
}

/* autocdc itself calls a function that refuses while applying (nestable). */
void
run_internal_call(bool begin)
{
	internal_calls += begin ? 1 : -1;
}

/*
 * Hold a run's relations open until run_release_relations: the code the run
 * evaluates cannot alter or drop them under it.
 */
void
run_hold_relations(FlowDef *flow, Oid source)
{
	Oid			rels[3] = {source, flow->target, catalog_state_relid(flow->target_id)};
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	int			i;

	for (i = 0; i < 3; i++)
		if (OidIsValid(rels[i]))
			held_relations = lappend(held_relations, table_open(rels[i], AccessShareLock));
	MemoryContextSwitchTo(old);
}

/* Close what run_hold_relations opened (the locks stay to the end of the transaction). */
void
run_release_relations(void)
{
	ListCell   *lc;

	foreach(lc, held_relations)
		table_close(lfirst(lc), NoLock);
	list_free(held_relations);
	held_relations = NIL;
}

/*
 * Lock the target row so that one flow at a time writes a target.  With
 * skip_locked, return false instead of waiting for another writer.
 */
static bool
lock_target(int target_id, bool skip_locked)
{
	Datum		arg = Int32GetDatum(target_id);
	Oid			argtype = INT4OID;
	Oid			saved_uid;
	int			saved_sec;

	become_superuser(&saved_uid, &saved_sec);
	if (SPI_execute_with_args(skip_locked ?
							  "SELECT 1 FROM autocdc.target WHERE id OPERATOR(pg_catalog.=) $1 FOR UPDATE SKIP LOCKED" :
							  "SELECT 1 FROM autocdc.target WHERE id OPERATOR(pg_catalog.=) $1 FOR UPDATE",
							  1, &argtype, &arg, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not lock target");
	restore_user(saved_uid, saved_sec);
	return SPI_processed > 0;
}

/*
 * The owner must still be able to read what the flow reads: the columns it
 * selects and those its expressions use (a zero-row query checks exactly
 * those, with the owner's current privileges).
 */
static void
check_read_privileges(FlowDef *flow)
{
	StringInfoData sql;
	ListCell   *lc;
	Oid			saved_uid;
	int			saved_sec;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	foreach(lc, flow->columns)
		appendStringInfo(&sql, "s.%s, ", quote_identifier(lfirst(lc)));
	appendStringInfo(&sql, "(%s), (%s), (%s) FROM %s s LIMIT 0",
					 flow->sequence_by,
					 flow->deletes ? flow->deletes : "NULL",
					 flow->truncates ? flow->truncates : "NULL",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(flow->source)),
												get_rel_name(flow->source)));
	become_owner(flow->owner, &saved_uid, &saved_sec);
	if (SPI_execute(sql.data, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not check the privileges of flow \"%s\"", flow->name);
	restore_user(saved_uid, saved_sec);
}

/*
 * Advertise that this transaction applies the flow: autocdc.flows shows
 * state 'running' while this advisory lock (keyed by hashtext(name)) is held.
 */
void
advertise_running(FlowDef *flow)
{
	LOCKTAG		tag;
	uint32		h = DatumGetUInt32(DirectFunctionCall1Coll(hashtext, C_COLLATION_OID,
													   CStringGetTextDatum(flow->name)));

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, h, 0x61636463, 3);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * A resource owner for a run's batch.  A tuplestore's temporary files
 * belong to the resource owner current when it was created, and a batch is
 * filled and read across subtransactions and SPI portals (the worker's
 * per-flow subtransactions, the first read's cursor), whose owners go away
 * before it does: a batch spilled to a file of a released owner would write
 * through a closed descriptor.  This owner, a child of parent (the
 * (sub)transaction that the whole run lives in), lives until the run
 * releases it (batch_owner_release), or parent goes.
 */
static ResourceOwner
batch_owner_create(ResourceOwner parent)
{
	return ResourceOwnerCreate(parent, "autocdc batch");
}

/* Close what is left of a run's batch files, quietly, and forget the owner. */
static void
batch_owner_release(ResourceOwner owner)
{
	if (owner == NULL)
		return;
	ResourceOwnerRelease(owner, RESOURCE_RELEASE_BEFORE_LOCKS, false, false);
	ResourceOwnerRelease(owner, RESOURCE_RELEASE_LOCKS, false, false);
	ResourceOwnerRelease(owner, RESOURCE_RELEASE_AFTER_LOCKS, false, false);
	ResourceOwnerDelete(owner);
}

/*
 * A new, empty batch for the source rows of a flow: (lsn, ord, then the
 * source's columns, dropped ones left out), its files owned by owner.  The
 * source stays locked, so that its columns cannot change before the
 * capture.
 */
static Tuplestorestate *
new_batch(FlowDef *flow, TupleDesc *bdesc, ResourceOwner owner)
{
	ResourceOwner saved = CurrentResourceOwner;
	Tuplestorestate *ts;

	Relation	rel = relation_open(flow->source, AccessShareLock);
	TupleDesc	rdesc = RelationGetDescr(rel);
	TupleDesc	desc;
	int			n = 0,
				i;

	for (i = 0; i < rdesc->natts; i++)
		if (!TupleDescAttr(rdesc, i)->attisdropped)
			n++;
	desc = CreateTemplateTupleDesc(2 + n);
	TupleDescInitEntry(desc, 1, "__autocdc_lsn", LSNOID, -1, 0);
	TupleDescInitEntry(desc, 2, "__autocdc_ord", INT8OID, -1, 0);
	n = 2;
	for (i = 0; i < rdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(rdesc, i);

		if (att->attisdropped)
			continue;
		n++;
		TupleDescInitEntry(desc, n, NameStr(att->attname), att->atttypid, att->atttypmod, 0);
		TupleDescInitEntryCollation(desc, n, att->attcollation);
	}
	relation_close(rel, NoLock);
	*bdesc = BlessTupleDesc(desc);
	CurrentResourceOwner = owner;
	ts = tuplestore_begin_heap(false, false, work_mem);
	CurrentResourceOwner = saved;
	return ts;
}

/*
 * Before capture: lock the flow's target (false if skip_locked and another
 * writer holds it), show the flow as running, follow source schema changes
 * and check that the owner may still read the source.
 */
static bool
run_prepare(FlowDef *flow, bool refresh, bool skip_locked)
{
	if (!lock_target(flow->target_id, skip_locked))
		return false;
	advertise_running(flow);
	catalog_sync_columns(flow, refresh);
	catalog_check_source(flow);
	check_read_privileges(flow);
	return true;
}

/*
 * After capture: apply the batch as the flow's owner and record the
 * progress.  log: write a flow_runs row.
 */
static void
run_apply(FlowDef *flow, Tuplestorestate *batch, TupleDesc bdesc, RunMetrics *m,
		  bool have_batch, bool touch_all, TimestampTz started, bool log)
{
	TimestampTz captured = GetCurrentTimestamp();
	int64		nrows = tuplestore_tuple_count(batch);
	Oid			saved_uid;
	int			saved_sec;

	/* classify reads the batch once, and frees it */
	become_owner(flow->owner, &saved_uid, &saved_sec);
	batch_set(BATCH_SOURCE, batch, bdesc, get_rel_type_id(flow->source), nrows, 1);
	apply_batch(flow, m, have_batch && nrows > 0, touch_all);
	restore_user(saved_uid, saved_sec);
	elog(DEBUG2, "autocdc: flow \"%s\": captured " INT64_FORMAT " rows in %ld ms, applied in %ld ms",
		 flow->name, nrows, (long) ((captured - started) / 1000),
		 (long) ((GetCurrentTimestamp() - captured) / 1000));
	batch_clear();
	run_release_relations();
	catalog_save_progress(flow, m, started, log);
}

/*
 * Capture and apply everything available to one (locked) flow, and record
 * its progress.  All of it runs as the flow's owner under a
 * security-restricted operation, whoever called; only autocdc's own
 * catalog is read and written as autocdc.
 */
static void
run_one(FlowDef *flow, RunMetrics *m, bool refresh, bool touch_all)
{
	TupleDesc	bdesc;
	Tuplestorestate *batch;
	TimestampTz started = GetCurrentTimestamp();
	bool		have_batch = true;
	Oid			saved_uid;
	int			saved_sec;
	ResourceOwner owner;

	become_owner(flow->owner, &saved_uid, &saved_sec);
	(void) run_prepare(flow, refresh, false);
	run_hold_relations(flow, flow->source);
	owner = batch_owner_create(CurTransactionResourceOwner);
	batch = new_batch(flow, &bdesc, owner);
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
	run_apply(flow, batch, bdesc, m, have_batch, touch_all, started, true);
	batch_owner_release(owner);
	restore_user(saved_uid, saved_sec);
}

/* ----------------------------------------------------------------
 * the background worker's pass
 * ----------------------------------------------------------------
 */

/* Progress of an idle flow is recorded at most this often (ms). */
#define IDLE_PROGRESS_INTERVAL_MS 10000

/* One flow in a worker pass. */
typedef struct PassFlow
{
	char	   *name;
	FlowDef    *flow;
	bool		ready;			/* prepared, to be captured and applied */
	Capture		capture;
	RunMetrics	m;
	TupleDesc	bdesc;
	TimestampTz started;
	ResourceOwner owner;		/* of its batch's files */
} PassFlow;

/*
 * Run fn on a flow of the pass in a subtransaction.  If it fails, only its
 * work is rolled back; the error is written down for the flow (with the
 * back-off of its next retry) and false returned.
 */
static bool
run_guarded(PassFlow *pf, void (*fn) (PassFlow *pf))
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool ok = true;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		set_applying(pf->name);
		fn(pf);
		set_applying(NULL);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		Oid			saved_uid;
		int			saved_sec;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		set_applying(NULL);
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		batch_clear();
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("autocdc: flow \"%s\" failed: %s", pf->name, edata->message)));
		autocdc_record_error(pf->flow ? pf->flow->id : 0, edata->message);
		become_superuser(&saved_uid, &saved_sec);
		autocdc_persist_errors();
		restore_user(saved_uid, saved_sec);
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/*
 * Load and prepare a flow of the pass.  A 'once' flow is applied whole
 * here; a change flow whose target another writer holds waits for the next
 * pass.
 */
static void
pass_prepare(PassFlow *pf)
{
	Oid			saved_uid;
	int			saved_sec;

	pf->flow = catalog_load_flow(pf->name, true, true);
	if (pf->flow == NULL)
		return;
	pf->started = GetCurrentTimestamp();
	if (pf->flow->once)
	{
		if (!pf->flow->once_done)
		{
			pgstat_report_activity(STATE_RUNNING, psprintf("autocdc: applying flow %s", pf->name));
			run_one(pf->flow, &pf->m, false, false);
		}
		return;
	}
	become_owner(pf->flow->owner, &saved_uid, &saved_sec);
	pf->ready = run_prepare(pf->flow, false, true);
	restore_user(saved_uid, saved_sec);
	if (pf->ready)
	{
		pf->capture.flow = pf->flow;
		/* the batch is captured and applied in later subtransactions */
		pf->owner = batch_owner_create(TopTransactionResourceOwner);
		pf->capture.batch = new_batch(pf->flow, &pf->bdesc, pf->owner);
		pf->capture.batchdesc = pf->bdesc;
		pf->capture.m = &pf->m;
	}
}

/*
 * Apply what the pass captured for a flow.  An idle flow records its
 * progress (which lets the slot advance) only now and then, and logs no
 * run.
 */
static void
pass_apply(PassFlow *pf)
{
	bool		idle = tuplestore_tuple_count(pf->capture.batch) == 0 &&
		pf->m.num_skipped == 0;

	source_raise_capture_error(&pf->capture);
	if (idle && pf->flow->last_run_at != 0 &&
		!TimestampDifferenceExceeds(pf->flow->last_run_at, GetCurrentTimestamp(),
									IDLE_PROGRESS_INTERVAL_MS))
		return;
	pgstat_report_activity(STATE_RUNNING, psprintf("autocdc: applying flow %s", pf->name));
	run_hold_relations(pf->flow, pf->flow->source);
	run_apply(pf->flow, pf->capture.batch, pf->bdesc, &pf->m, true, false,
			  pf->started, !idle);
}

/*
 * One pass of the background worker over the continuous flows it selected
 * and locked (names, in the worker's transaction): each flow is prepared,
 * one decoding pass captures them all, and each is applied; a failing flow
 * is rolled back alone.  Stops decoding at a transaction boundary past
 * max_events (0: no limit); returns true if WAL was left to decode.
 */
bool
run_worker_pass(List *names, int64 max_events)
{
	List	   *flows = NIL;
	List	   *captures = NIL;
	ListCell   *lc;
	bool		more = false;

	foreach(lc, names)
	{
		PassFlow   *pf = palloc0(sizeof(PassFlow));

		pf->name = lfirst(lc);
		if (run_guarded(pf, pass_prepare) && pf->ready)
		{
			flows = lappend(flows, pf);
			captures = lappend(captures, &pf->capture);
		}
	}
	if (captures == NIL)
		return false;

	pgstat_report_activity(STATE_RUNNING, "autocdc: decoding");
	(void) source_capture_flows(captures, max_events, false, &more);

	foreach(lc, flows)
	{
		PassFlow   *pf = lfirst(lc);

		if (!pf->capture.resync)
			(void) run_guarded(pf, pass_apply);
		batch_owner_release(pf->owner);
		pf->owner = NULL;
	}
	return more;
}

/* Run a continuous snapshot flow of the pass (it is due, and locked). */
static void
pass_snapshot(PassFlow *pf)
{
	pf->flow = catalog_load_flow(pf->name, true, true);
	if (pf->flow == NULL)
		return;
	pgstat_report_activity(STATE_RUNNING, psprintf("autocdc: applying flow %s", pf->name));
	snapshot_run(pf->flow, &pf->m);
}

/*
 * The background worker's runs of the continuous snapshot flows that are
 * due (names, selected and locked by the worker), each in a subtransaction.
 */
void
run_worker_snapshots(List *names)
{
	ListCell   *lc;

	foreach(lc, names)
	{
		PassFlow   *pf = palloc0(sizeof(PassFlow));

		pf->name = lfirst(lc);
		(void) run_guarded(pf, pass_snapshot);
	}
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
record_failure(int32 flow_id, MemoryContext cxt)
{
	ErrorData  *edata;
	MemoryContext old = MemoryContextSwitchTo(cxt);

	edata = CopyErrorData();
	MemoryContextSwitchTo(old);
	autocdc_record_error(flow_id, edata->message);
	FreeErrorData(edata);
}

/*
 * The flow named by a run function's argument, read without a lock, after
 * the ownership check: errors here are not failures of the flow.
 */
static FlowDef *
checked_flow(FunctionCallInfo fcinfo)
{
	FlowDef    *flow;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("flow name must not be null")));
	flow = catalog_load_flow(text_to_cstring(PG_GETARG_TEXT_PP(0)), false, false);
	catalog_check_flow_owner(flow);
	return flow;
}

/* Prepare a run: the slot (before anything is written), then the errors. */
static void
run_prologue(FlowDef *peek)
{
	if (!peek->once && peek->kind != 's')
		source_ensure_slot();
	{
		Oid			saved_uid;
		int			saved_sec;

		become_superuser(&saved_uid, &saved_sec);
		autocdc_persist_errors();
		restore_user(saved_uid, saved_sec);
	}
}

/* Apply one flow (the body of run_flow). */
static void
run_body(FlowDef *peek, RunMetrics *m)
{
	FlowDef    *flow;

	run_prologue(peek);
	flow = catalog_load_flow(peek->name, true, false);
	if (flow->kind == 's')
		snapshot_run(flow, m);
	else
		run_one(flow, m, false, false);
}

/*
 * Refresh the target of a flow (the body of full_refresh): forget the hidden
 * state, then every flow into the target reads its source again; the first
 * (the named one) rewrites every key of the target, so that metrics compare
 * before and after by row identity, and the others add theirs.
 */
static void
refresh_body(FlowDef *flow, RunMetrics *m)
{
	List	   *flows = NIL;
	ListCell   *lc;
	Oid			saved_uid;
	int			saved_sec;
	char	   *sql;

	if (flow->kind == 's')
	{
		/* a snapshot flow is the only flow into its target */
		run_prologue(flow);
		snapshot_refresh(catalog_load_flow(flow->name, true, false), m);
		return;
	}
	run_prologue(flow);
	source_ensure_slot();		/* other flows into the target may need it */
	foreach(lc, catalog_target_flows(flow->target_id))
	{
		FlowDef    *f = catalog_load_flow(lfirst(lc), true, false);

		catalog_check_flow_owner(f);
		if (strcmp(f->name, flow->name) == 0)
			flows = lcons(f, flows);
		else
			flows = lappend(flows, f);
	}
	(void) lock_target(flow->target_id, false);

	become_owner(flow->owner, &saved_uid, &saved_sec);
	sql = psprintf("DELETE FROM %s",
				   quote_qualified_identifier(AUTOCDC_STATE_SCHEMA, state_table_name(flow->target_id)));
	if (SPI_execute(sql, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not empty the hidden state");
	restore_user(saved_uid, saved_sec);

	foreach(lc, flows)
	{
		FlowDef    *f = lfirst(lc);
		RunMetrics	fm;

		memset(&fm, 0, sizeof(fm));
		f->has_progress = false;
		f->progress = InvalidXLogRecPtr;
		f->once_done = false;
		f->skip_upto = InvalidXLogRecPtr;	/* positions before the refresh are past */
		run_one(f, &fm, true, lc == list_head(flows));
		m->num_events += fm.num_events;
		m->num_upserted += fm.num_upserted;
		m->num_deleted += fm.num_deleted;
		m->num_skipped += fm.num_skipped;
	}
}

/*
 * The frame of run_flow and full_refresh: SPI, a pinned search_path, the
 * name and ownership checks, the failure record, and the metrics row.
 */
static Datum
run_entry(FunctionCallInfo fcinfo, void (*body) (FlowDef *peek, RunMetrics *m))
{
	FlowDef    *peek;
	RunMetrics	m;
	MemoryContext cxt = CurrentMemoryContext;
	int			level;

	autocdc_require_current_catalog();
	run_refuse_while_applying(body == run_body ? "run a flow" : "refresh a flow");
	memset(&m, 0, sizeof(m));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	level = set_safe_search_path();
	peek = checked_flow(fcinfo);
	PG_TRY();
	{
		set_applying(peek->name);
		body(peek, &m);
		set_applying(NULL);
	}
	PG_CATCH();
	{
		set_applying(NULL);
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
 * autocdc.full_refresh(name): empty the flow's target and hidden state and
 * re-read every flow into that target from what its source holds now.
 */
Datum
autocdc_full_refresh(PG_FUNCTION_ARGS)
{
	return run_entry(fcinfo, refresh_body);
}
