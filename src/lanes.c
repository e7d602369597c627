/*-------------------------------------------------------------------------
 *
 * lanes.c
 *		Which slot serves which flow (use-case layer).  The main worker, in
 *		a transaction of its own before each pass, moves the flows that are
 *		paused, failing, found slow, or more than autocdc.max_lag behind the
 *		newest flow of the main slot to the laggard slot, and the flows of
 *		the laggard slot that have caught up back to the main slot; the
 *		laggard worker serves the laggard slot.  So a flow that lags pins
 *		only the laggard slot's WAL, and the main slot's restart point
 *		follows the up-to-date flows.
 *
 * The rules that keep every flow served (slots.c holds the moves lock for
 * all of them): a flow moves to the laggard slot only if that slot's
 * confirmed position is at or before the flow's progress; otherwise the
 * laggard slot is replaced by a fresh copy of the main slot, whose confirmed
 * position is at or before every progress on either slot, and its flows move
 * along in the same transaction.  A flow moves back when its progress is at
 * or after the main slot's confirmed position.  A copy is made before the
 * moving transaction writes (PostgreSQL's rule for creating slots); if that
 * transaction does not commit, the copy serves nobody and is dropped by the
 * next rebalance, so at most three slots exist, two at rest.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "replication/slot.h"
#include "storage/standby.h"
#include "utils/builtins.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "lanes.h"
#include "registry.h"
#include "schedule.h"
#include "settings.h"
#include "slots.h"

/*
 * A copy of the main slot for the laggard lane, or NULL when the server has
 * no replication slot left: the flows then stay on the main slot (it keeps
 * their WAL) and the main lane goes on; the WARNING is logged once, not at
 * every pass.  Other errors are raised.
 */
static char *
try_copy_main(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	char	   *volatile copy = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		copy = slots_copy_main();
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (MyReplicationSlot != NULL)
			ReplicationSlotRelease();
		if (edata->sqlerrcode != ERRCODE_CONFIGURATION_LIMIT_EXCEEDED)
			ReThrowError(edata);
		if (registry_note_copy_failing(true))
			ereport(WARNING,
					(errcode(edata->sqlerrcode),
					 errmsg("autocdc: the laggard slot could not be created: %s", edata->message),
					 errdetail("Flows that lag stay on the main slot, which keeps their WAL."),
					 errhint("Drop an unused replication slot or raise max_replication_slots: autocdc needs one more slot in a database while flows lag.")));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	if (copy != NULL)
		(void) registry_note_copy_failing(false);
	return copy;
}

/*
 * The change flows on the main slot that should move to the laggard slot
 * (read, not locked), and a new copy of the main slot for them when the
 * laggard slot lag (have_lag: it exists, confirmed at lconf) cannot take
 * them; without a copy where one is needed, *to_lag is NIL.
 */
static char *
copy_for_movers(const char *main, bool have_lag, XLogRecPtr lconf, List *slow, List **to_lag)
{
	char	   *copy = NULL;
	XLogRecPtr	oldest;

	*to_lag = catalog_lock_movers(main, true, schedule_max_lag_bytes(), slow, InvalidXLogRecPtr,
								  false, &oldest);
	if (schedule_needs_laggard_copy(*to_lag != NIL, have_lag, lconf, oldest))
	{
		if (slots_count() < 3)
			copy = try_copy_main();
		if (copy == NULL)
			*to_lag = NIL;		/* an old laggard slot is still in use, or no slot is left */
	}

	if (copy != NULL && autocdc_test_pause_after_copy > 0)
	{
		TimestampTz until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														autocdc_test_pause_after_copy);

		elog(LOG, "autocdc: copied the main slot to \"%s\"", copy);
		/* a signal ends pg_usleep early */
		while (GetCurrentTimestamp() < until)
			pg_usleep(10000L);
	}
	return copy;
}

/*
 * Take the flows served from the laggard slot lag longer than
 * autocdc.max_lag_age off it, with a WARNING for each; true if there were
 * any.
 */
static bool
expire_laggards(const char *lag)
{
	List	   *expired = catalog_expire_laggards(lag, autocdc_max_lag_age);
	ListCell   *lc;

	foreach(lc, expired)
		ereport(WARNING,
				(errmsg("autocdc: flow \"%s\" was served from the laggard slot longer than autocdc.max_lag_age; it needs a resync",
						(char *) lfirst(lc)),
				 errdetail("Its source position no longer pins WAL."),
				 errhint("Run SELECT autocdc.full_refresh(%s).", quote_literal_cstr(lfirst(lc)))));
	return expired != NIL;
}

/*
 * Move flows between the database's slots (see above).  slow: ids of the
 * flows the main lane found slow lately.  Must run in a transaction that
 * has not written; returns whether the laggard slot has flows.
 */
bool
lanes_rebalance(List *slow)
{
	char	   *main = slots_main_name();
	char	   *lag;
	char	   *copy;
	XLogRecPtr	mconf,
				mrestart,
				lconf = InvalidXLogRecPtr,
				lrestart,
				oldest;
	bool		have_lag;
	List	   *to_lag;
	List	   *back;
	bool		moved = false;

	if (main == NULL || !slots_positions(main, &mconf, &mrestart))
		return false;
	slots_lock_moves();
	lag = catalog_slot_in_use(slots_laggard_prefix());
	have_lag = lag != NULL && slots_positions(lag, &lconf, &lrestart);

	/* copies whose move did not commit, laggard slots no flow is on */
	slots_drop_laggards(have_lag ? lag : NULL);

	/* what should move to the laggard slot, and does it need a new copy? */
	copy = copy_for_movers(main, have_lag, lconf, slow, &to_lag);

	/* from here on, this transaction writes */
	if (lag != NULL && !have_lag && catalog_lock_slot_flows(lag))
	{
		/*
		 * Flows recorded on a laggard slot that no longer exists (it cannot
		 * happen through these moves): the main lane takes them up, and
		 * shows those whose progress it cannot serve as needing a resync.
		 */
		catalog_move_slot_flows(lag, NULL);
		lag = NULL;
	}
	if (copy != NULL)
	{
		if (have_lag && !catalog_lock_slot_flows(lag))
		{
			/* a run holds a flow of the laggard slot: try again later */
			slots_drop_laggards(lag);
			to_lag = NIL;
		}
		else
		{
			if (have_lag)
				catalog_move_slot_flows(lag, copy);
			lag = copy;
			have_lag = true;
			moved = true;
		}
	}
	if (have_lag)
	{
		back = catalog_lock_movers(lag, false, 0, slow, mconf, true, &oldest);
		if (back != NIL)
		{
			catalog_move_flows(back, main, false);
			moved = true;
		}
	}
	if (to_lag != NIL && have_lag)
	{
		to_lag = catalog_lock_movers(main, true, schedule_max_lag_bytes(), slow,
									 InvalidXLogRecPtr, true, &oldest);
		if (to_lag != NIL)
		{
			catalog_move_flows(to_lag, lag, true);
			moved = true;
		}
	}
	if (have_lag && autocdc_max_lag_age > 0)
		moved = expire_laggards(lag) || moved;

	/*
	 * The main slot's restart point moves only at running-transactions
	 * records: log one, so that the next passes let it forget what the
	 * moved flows pinned.
	 */
	if (moved)
		(void) LogStandbySnapshot();
	return have_lag && catalog_slot_has_flows(lag);
}

/*
 * Before a run_flow (or full_refresh): the moves the main worker would make
 * before its next pass, when no worker serves the database (autocdc.enabled
 * off, flows applied by run_flow alone, e.g. from pg_cron), so that a flow
 * far behind, paused or failing pins no WAL of the main slot and a run of
 * an up-to-date flow decodes only from near its own progress.  Only when
 * this transaction has not written (a slot copy needs that) and some move
 * is due (one query), or a laggard slot no flow is on is left: a rebalance
 * holds the moves lock, and with it the confirmation of either slot by
 * other runs (which do not wait for it), to the end of the transaction.
 * Not in a transaction that reads from one snapshot.
 */
void
lanes_rebalance_for_run(void)
{
	char	   *main;
	char	   *lag;
	XLogRecPtr	mconf,
				mrestart,
				lconf,
				lrestart;

	if (registry_has_worker() || TransactionIdIsValid(GetTopTransactionIdIfAny()))
		return;

	/*
	 * Under REPEATABLE READ or SERIALIZABLE, locking a flow's state that a
	 * run committed since this transaction's snapshot would fail the run
	 * with a serialization error: leave the moves to a later run in READ
	 * COMMITTED (they only let the main slot forget WAL sooner).
	 */
	if (IsolationUsesXactSnapshot())
		return;
	main = slots_main_name();
	if (main == NULL || !slots_positions(main, &mconf, &mrestart))
		return;
	lag = catalog_slot_in_use(slots_laggard_prefix());
	if (lag != NULL && !slots_positions(lag, &lconf, &lrestart))
		lag = NULL;
	/* a laggard slot no flow is on any more is dropped by a rebalance too */
	if ((lag == NULL && slots_count() > 1) ||
		catalog_moves_due(main, lag, schedule_max_lag_bytes(), mconf,
						  autocdc_max_lag_age))
		(void) lanes_rebalance(NIL);
}
