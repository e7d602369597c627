/*-------------------------------------------------------------------------
 *
 * pass.c
 *		The background worker's pass over the flows that are due (use-case
 *		layer): each change flow is prepared, one decoding pass captures them
 *		all, and each is applied in a subtransaction of its own, so that a
 *		failing flow is rolled back and recorded alone; snapshot flows run
 *		one by one the same way.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/backend_status.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "batch.h"
#include "catalog.h"
#include "failures.h"
#include "pass.h"
#include "run.h"
#include "snaprun.h"
#include "source.h"
#include "util.h"

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
		run_set_applying(pf->name);
		fn(pf);
		run_set_applying(NULL);
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
		run_set_applying(NULL);
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		batch_clear();
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("autocdc: flow \"%s\" failed: %s", pf->name, edata->message)));
		failures_record(pf->flow ? pf->flow->id : 0, edata->message);
		become_superuser(&saved_uid, &saved_sec);
		failures_persist();
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
		pf->owner = run_batch_owner(TopTransactionResourceOwner);
		pf->capture.batch = run_new_batch(pf->flow, &pf->bdesc, pf->owner);
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
pass_change_flows(List *names, int64 max_events)
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
	source_capture_flows(captures, max_events, false, &more);

	foreach(lc, flows)
	{
		PassFlow   *pf = lfirst(lc);

		if (!pf->capture.resync)
			(void) run_guarded(pf, pass_apply);
		run_batch_owner_release(pf->owner);
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
	snaprun_run(pf->flow, &pf->m);
}

/*
 * The background worker's runs of the continuous snapshot flows that are
 * due (names, selected and locked by the worker), each in a subtransaction.
 */
void
pass_snapshot_flows(List *names)
{
	ListCell   *lc;

	foreach(lc, names)
	{
		PassFlow   *pf = palloc0(sizeof(PassFlow));

		pf->name = lfirst(lc);
		(void) run_guarded(pf, pass_snapshot);
	}
}
