/*-------------------------------------------------------------------------
 *
 * pass.c
 *		The background worker's pass over the flows that are due (use-case
 *		layer): each change flow is prepared, one decoding pass captures them
 *		all, and each is applied in a subtransaction of its own, so that a
 *		failing flow is rolled back and recorded alone; snapshot flows run
 *		one by one the same way.
 *
 * In the main lane a pass is time-sliced, so that one flow never stalls the
 * others: preparing a flow takes the locks on its source, target and hidden
 * state without waiting (a flow whose relation is locked sits out the pass,
 * marked waiting), and each flow is applied with a lock_timeout of one
 * autocdc.flow_time_slice and a timer that, once the slice is over and
 * other work is due (more flows in the pass, or new commits), cancels the
 * apply.  Such a flow is rolled back without an error and noted as slow:
 * the lanes (lanes.c) serve it from the laggard slot, where the laggard
 * worker applies it without a time limit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>
#include <unistd.h>

#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "utils/backend_status.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "batch.h"
#include "catalog.h"
#include "failures.h"
#include "lag.h"
#include "pass.h"
#include "run.h"
#include "schedule.h"
#include "settings.h"
#include "snaprun.h"
#include "source.h"
#include "storage.h"
#include "util.h"

/* Progress of an idle flow is recorded at most this often (ms). */
#define IDLE_PROGRESS_INTERVAL_MS 10000
/* After its slice, how often the timer looks whether other work is due (ms). */
#define SLICE_RECHECK_MS 50

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
	bool		waiting;		/* a relation of it was locked: sits out */
	bool		sliced;			/* in the main lane's time-sliced pass */
	XLogRecPtr	stored;			/* its progress as recorded before the pass */
} PassFlow;

/* A flow the main lane found slow, and since when. */
typedef struct SlowFlow
{
	int32		id;
	TimestampTz since;
} SlowFlow;

/* The time slice of the current apply (main lane). */
static bool slice_armed = false;
static bool slice_others_due = false;
static volatile sig_atomic_t slice_expired = false;
static TimeoutId slice_timeout = MAX_TIMEOUTS;

/* flows found slow by this worker (in TopMemoryContext) */
static List *slow_flows = NIL;

/*
 * The slice timer: once the slice is over, cancel the apply if other work
 * is due (other flows of the pass, or a commit since the pass began, which
 * set the latch); otherwise look again shortly.
 */
static void
slice_timeout_handler(void)
{
	if (!slice_armed)
		return;
	if (slice_others_due || MyLatch->is_set)
	{
		slice_expired = true;
		slice_armed = false;
		kill(MyProcPid, SIGINT);
	}
}

/* Start the slice of one apply (others_due: more flows follow in the pass). */
static void
slice_start(bool others_due)
{
	if (slice_timeout == MAX_TIMEOUTS)
		slice_timeout = RegisterTimeout(USER_TIMEOUT, slice_timeout_handler);
	slice_expired = false;
	slice_others_due = others_due;
	slice_armed = true;
	enable_timeout_every(slice_timeout,
						 TimestampTzPlusMilliseconds(GetCurrentTimestamp(), autocdc_flow_time_slice),
						 SLICE_RECHECK_MS);
}

/*
 * End the slice; true if it expired.  A cancel the timer sent but that was
 * not processed yet is withdrawn.
 */
static bool
slice_stop(void)
{
	slice_armed = false;
	if (slice_timeout != MAX_TIMEOUTS)
		disable_timeout(slice_timeout, false);
	if (slice_expired)
		QueryCancelPending = false;
	return slice_expired;
}

/* Note a flow as slow (it then waits in the laggard lane for a while). */
static void
note_slow(int32 id)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	SlowFlow   *sf = palloc(sizeof(SlowFlow));

	sf->id = id;
	sf->since = GetCurrentTimestamp();
	slow_flows = lappend(slow_flows, sf);
	MemoryContextSwitchTo(old);
}

/*
 * The ids of the flows found slow lately (an oid list, for the lanes);
 * forgets those found slow longer ago than the hold.
 */
List *
pass_slow_flows(void)
{
	List	   *result = NIL;
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();

	foreach(lc, slow_flows)
	{
		SlowFlow   *sf = lfirst(lc);

		if (!schedule_slow_held(sf->since, now))
		{
			slow_flows = foreach_delete_current(slow_flows, lc);
			pfree(sf);
		}
		else
			result = lappend_oid(result, (Oid) sf->id);
	}
	return result;
}

/*
 * Run fn on a flow of the pass in a subtransaction.  If it fails, only its
 * work is rolled back; the error is written down for the flow (with the
 * back-off of its next retry) and false returned.  With sliced, fn runs
 * with a lock_timeout of one slice and, unless prepare, under the slice
 * timer (others_due: more flows follow); a lock timeout or an expired slice
 * rolls fn back without an error: a prepared flow is then waiting, an
 * applied one slow.
 */
static bool
run_guarded(PassFlow *pf, void (*fn) (PassFlow *pf), bool sliced, bool prepare,
			bool others_due)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool ok = true;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		int			level = NewGUCNestLevel();

		if (sliced)
			(void) set_config_option("lock_timeout", psprintf("%d", autocdc_flow_time_slice),
									 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
		run_set_applying(pf->name);
		if (sliced && !prepare)
			slice_start(others_due);
		fn(pf);
		if (sliced && !prepare)
			(void) slice_stop();
		run_set_applying(NULL);
		AtEOXact_GUC(true, level);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		Oid			saved_uid;
		int			saved_sec;
		bool		expired = sliced && !prepare && slice_stop();

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		run_set_applying(NULL);
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		batch_clear();
		if (sliced && (expired || edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE))
		{
			/* no error: the flow waits for its locks, or is applied apart */
			if (prepare)
				pf->waiting = true;
			else if (pf->flow)
			{
				ereport(DEBUG1,
						(errmsg("autocdc: flow \"%s\" took longer than autocdc.flow_time_slice; the laggard worker applies it",
								pf->name)));
				note_slow(pf->flow->id);
			}
			FreeErrorData(edata);
			return false;
		}
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("autocdc: flow \"%s\" failed: %s", pf->name, edata->message),
				 edata->detail ? errdetail("%s", edata->detail) : 0,
				 edata->hint ? errhint("%s", edata->hint) : 0));
		failures_record(pf->flow ? pf->flow->id : 0, edata);
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
 * Lock the relations a flow reads and writes without waiting; false if one
 * of them is locked by someone else (or a lock request waits before ours).
 */
static bool
lock_flow_relations(FlowDef *flow)
{
	Oid			rels[3] = {flow->source, flow->target, storage_state_relid(flow->target_id)};
	int			i;

	for (i = 0; i < 3; i++)
		if (OidIsValid(rels[i]) && !ConditionalLockRelationOid(rels[i], AccessShareLock))
			return false;
	return true;
}

/*
 * Would a flow's first read stall the main lane's pass?  It reads the whole
 * feed before the pass decodes, outside any slice: past a size
 * (schedule.c) the laggard worker does it instead.
 */
static bool
first_read_too_big(FlowDef *flow)
{
	Relation	rel = table_open(flow->source, NoLock);
	bool		big = RELKIND_HAS_STORAGE(rel->rd_rel->relkind) &&
		schedule_first_read_too_big(RelationGetNumberOfBlocks(rel));

	table_close(rel, NoLock);
	return big;
}

/*
 * Load and prepare a flow of the pass.  A 'once' flow is applied whole
 * here; a change flow whose target another writer holds, or whose source,
 * target or hidden state someone has locked, waits for the next pass; in
 * the main lane, a flow whose first read is large is noted slow (the
 * laggard worker reads it).
 */
static void
pass_prepare(PassFlow *pf)
{
	Oid			saved_uid;
	int			saved_sec;

	pf->flow = catalog_load_flow(pf->name, true, true);
	if (pf->flow == NULL)
		return;
	if (!lock_flow_relations(pf->flow))
	{
		pf->waiting = true;
		return;
	}
	if (pf->sliced && !pf->flow->has_progress && !pf->flow->once &&
		first_read_too_big(pf->flow))
	{
		ereport(DEBUG1,
				(errmsg("autocdc: flow \"%s\" reads a large table first; the laggard worker applies it",
						pf->name)));
		note_slow(pf->flow->id);
		return;
	}
	pf->started = GetCurrentTimestamp();
	pf->stored = pf->flow->progress;
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
		pf->capture.notes = pf->flow->srckind->row_changes ? rownotes_new(pf->owner) : NULL;
	}
}

/*
 * Apply what the pass captured for a flow.  An idle flow records its
 * progress (which lets the slot advance) only now and then — or when the
 * recorded progress falls half of autocdc.max_lag behind, lest it look like
 * a laggard — and logs no run.
 */
static void
pass_apply(PassFlow *pf)
{
	bool		idle = tuplestore_tuple_count(pf->capture.batch) == 0 &&
		pf->m.num_skipped == 0 && pf->m.num_ignored_updates == 0 &&
		pf->m.num_ignored_deletes == 0;

	source_raise_capture_error(&pf->capture);
	if (idle && pf->flow->last_run_at != 0 &&
		!TimestampDifferenceExceeds(pf->flow->last_run_at, GetCurrentTimestamp(),
									IDLE_PROGRESS_INTERVAL_MS) &&
		pf->flow->progress - pf->stored < (XLogRecPtr) autocdc_max_lag * 1024 / 2)
		return;
	pgstat_report_activity(STATE_RUNNING, psprintf("autocdc: applying flow %s", pf->name));
	run_hold_relations(pf->flow, pf->flow->source);
	run_apply(pf->flow, pf->capture.batch, pf->bdesc, pf->capture.notes, &pf->m, true, false,
			  pf->started, !idle);
}

/*
 * Note that the pass leaves the flow's batch unapplied: pending since its
 * first transaction (or, for a batch cut short, since some later one).
 */
static void
note_pending(PassFlow *pf)
{
	LagNote		note = pf->capture.lag;

	note.pending_since = pf->capture.first_commit;
	if (note.pending_since == 0)
		note.cut = true;
	lag_note(pf->flow->id, &note);
}

/*
 * One pass of a background worker over the continuous flows it selected
 * and locked (names, in the worker's transaction), all on slot: each flow
 * is prepared, one decoding pass captures them all, and each is applied; a
 * failing flow is rolled back alone.  Stops decoding at a transaction
 * boundary past max_events or max_wal bytes (0: no limit); returns true if
 * WAL was left to decode, or a flow wrote the source of a continuous flow
 * (the next pass then starts at once).  sliced: the main lane's time slices.
 */
bool
pass_change_flows(List *names, const char *slot, int64 max_events, int64 max_wal,
				  bool sliced)
{
	List	   *flows = NIL;
	List	   *captures = NIL;
	ListCell   *lc;
	bool		more = false;
	bool		wrote_source = false;
	int			left;

	foreach(lc, names)
	{
		PassFlow   *pf = palloc0(sizeof(PassFlow));

		pf->name = lfirst(lc);
		pf->sliced = sliced;
		if (run_guarded(pf, pass_prepare, sliced, true, false) && pf->ready)
		{
			flows = lappend(flows, pf);
			captures = lappend(captures, &pf->capture);
		}
		if (pf->flow != NULL && pf->waiting != pf->flow->waiting)
			catalog_mark_waiting(pf->name, pf->waiting);
	}
	if (captures == NIL)
		return false;

	pgstat_report_activity(STATE_RUNNING, "autocdc: decoding");
	source_capture_flows(captures, slot, max_events, max_wal, sliced ? autocdc_batch_size : 0,
						 false, &more);

	left = list_length(flows);
	foreach(lc, flows)
	{
		PassFlow   *pf = lfirst(lc);

		left--;
		if (pf->capture.deferred)
		{
			note_slow(pf->flow->id);	/* too big for a slice */
			note_pending(pf);
		}
		else if (!pf->capture.resync)
		{
			if (run_guarded(pf, pass_apply, sliced, false, left > 0 || more))
			{
				lag_note(pf->flow->id, &pf->capture.lag);
				/* a chain: the worker does not wake itself with its commits */
				if (pf->m.num_upserted + pf->m.num_deleted > 0 &&
					catalog_is_continuous_source(pf->flow->target))
					wrote_source = true;
			}
			else
				note_pending(pf);
		}
		run_batch_owner_release(pf->owner);
		pf->owner = NULL;
	}
	return more || wrote_source;
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
		(void) run_guarded(pf, pass_snapshot, false, false, false);
	}
}
