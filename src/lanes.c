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

#include "miscadmin.h"
#include "storage/standby.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "lanes.h"
#include "settings.h"
#include "slots.h"

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
	char	   *copy = NULL;
	XLogRecPtr	mconf,
				mrestart,
				lconf = InvalidXLogRecPtr,
				lrestart,
				oldest;
	bool		have_lag;
	int64		max_lag = (int64) autocdc_max_lag * 1024;
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
	to_lag = catalog_lock_movers(main, true, max_lag, slow, InvalidXLogRecPtr, false, &oldest);
	if (to_lag != NIL && (!have_lag || (!XLogRecPtrIsInvalid(oldest) && lconf > oldest)))
	{
		if (slots_count() < 3)
			copy = slots_copy_main();
		else
			to_lag = NIL;		/* an old laggard slot is still in use */
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
		to_lag = catalog_lock_movers(main, true, max_lag, slow, InvalidXLogRecPtr, true, &oldest);
		if (to_lag != NIL)
		{
			catalog_move_flows(to_lag, lag, true);
			moved = true;
		}
	}
	if (have_lag && autocdc_max_lag_age > 0)
	{
		List	   *expired = catalog_expire_laggards(lag, autocdc_max_lag_age);
		ListCell   *lc;

		foreach(lc, expired)
			ereport(WARNING,
					(errmsg("autocdc: flow \"%s\" was served from the laggard slot longer than autocdc.max_lag_age; it needs a resync",
							(char *) lfirst(lc)),
					 errdetail("Its source position no longer pins WAL."),
					 errhint("Run SELECT autocdc.full_refresh(%s).", quote_literal_cstr(lfirst(lc)))));
		moved = moved || expired != NIL;
	}

	/*
	 * The main slot's restart point moves only at running-transactions
	 * records: log one, so that the next passes let it forget what the
	 * moved flows pinned.
	 */
	if (moved)
		(void) LogStandbySnapshot();
	return have_lag && catalog_slot_has_flows(lag);
}
