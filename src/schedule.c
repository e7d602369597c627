/*-------------------------------------------------------------------------
 *
 * schedule.c
 *		When flows run: the scheduling policy of the worker's passes, of
 *		failed flows' retries, of the worker's sleep and of the lanes (see
 *		schedule.h for the rules).  The catalog selects and stores; the
 *		times, the order and the formulas are decided here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "catalog.h"
#include "registry.h"
#include "schedule.h"
#include "settings.h"

/* A pass that fails as a whole is retried after at most this long (ms). */
#define PASS_RETRY_MAX_MS 300000L
/* A flow found slow stays in the laggard lane at least this long (ms). */
#define SLOW_HOLD_MS 30000
/* A first read of a feed larger than this (pages) is left to the laggard lane. */
#define FIRST_READ_PAGES 1024

/*
 * When a flow that failed at failed_at, after retries failed runs since its
 * last good one, runs again: 2^retries seconds later, retries capped at
 * SCHEDULE_RETRY_MAX_DOUBLINGS (1 s, 2 s, 4 s ... 256 s).
 */
TimestampTz
schedule_retry_at(int retries, TimestampTz failed_at)
{
	int			n = Min(Max(retries, 0), SCHEDULE_RETRY_MAX_DOUBLINGS);

	return failed_at + ((int64) 1 << n) * USECS_PER_SEC;
}

/*
 * Write down a failed run of a flow (by id) with the time of its next
 * retry; a failure older than the flow's last good run is only logged, and
 * one that another backend wrote down meanwhile not at all (it counts one
 * retry, not two).
 */
void
schedule_record_failure(int32 flow_id, FlowFailure *failure)
{
	int			retries;
	bool		locked;

	failure->retry_at = 0;
	locked = catalog_lock_failed_state(flow_id, failure->at, &retries);
	if (catalog_failure_logged(flow_id, failure->at))
		return;
	if (locked)
		failure->retry_at = schedule_retry_at(retries, failure->at);
	catalog_record_failure(flow_id, failure);
}

/*
 * How long the worker waits (ms) after its failures-th pass in a row that
 * failed as a whole: 2 s doubling to 256 s.
 */
long
schedule_pass_retry_ms(int failures)
{
	return Min(1000L << Min(failures, SCHEDULE_RETRY_MAX_DOUBLINGS), PASS_RETRY_MAX_MS);
}

/* Flow names in the order due flows run: by name, the database's collation. */
static int
due_order(const ListCell *a, const ListCell *b)
{
	const char *x = lfirst(a);
	const char *y = lfirst(b);

	return varstr_cmp(x, strlen(x), y, strlen(y), DEFAULT_COLLATION_OID);
}

/*
 * The continuous change flows due now in a lane, locked for this
 * transaction (those a run holds are skipped), in the order they run.  The
 * laggard lane serves the flows on laggard_slot, the main lane the others
 * (laggard_slot NULL: all).
 */
List *
schedule_due_change_flows(const char *laggard_slot, bool laggard_lane)
{
	List	   *names = catalog_lock_due_change_flows(GetCurrentTimestamp(),
													  laggard_slot, laggard_lane);

	list_sort(names, due_order);
	return names;
}

/* A snapshot flow that last ran at or before this time is due again. */
static TimestampTz
snapshot_ran_before(TimestampTz now)
{
	return now - (int64) autocdc_snapshot_interval * USECS_PER_SEC;
}

/*
 * The continuous snapshot flows due now, locked as above, in the order
 * they run.
 */
List *
schedule_due_snapshot_flows(void)
{
	TimestampTz now = GetCurrentTimestamp();
	List	   *names = catalog_lock_due_snapshot_flows(now, snapshot_ran_before(now));

	list_sort(names, due_order);
	return names;
}

/*
 * When a flow with a timer falls due: its retry, and a snapshot flow's
 * next interval, whichever is later; 0 if neither is set.
 */
static TimestampTz
flow_next_due(FlowTimes *ft)
{
	TimestampTz due = ft->retry_at;

	if (ft->snapshot && ft->last_run_at != 0)
	{
		TimestampTz next = ft->last_run_at +
			(int64) autocdc_snapshot_interval * USECS_PER_SEC;

		due = Max(due, next);
	}
	return due;
}

/*
 * Milliseconds (rounded up) until the next retry or snapshot run of a
 * continuous flow falls due (0: one is due now), or -1 if none is waiting.
 */
long
schedule_next_due_ms(void)
{
	List	   *timers = catalog_flow_times();
	TimestampTz first = 0;
	TimestampTz now;
	ListCell   *lc;

	foreach(lc, timers)
	{
		TimestampTz due = flow_next_due(lfirst(lc));

		if (due != 0 && (first == 0 || due < first))
			first = due;
	}
	list_free_deep(timers);
	if (first == 0)
		return -1;
	now = GetCurrentTimestamp();
	if (first <= now)
		return 0;
	return (long) ((first - now + 999) / 1000);
}

/* How far (bytes of WAL) a change flow may lag before the laggard lane serves it. */
int64
schedule_max_lag_bytes(void)
{
	return (int64) autocdc_max_lag * 1024;
}

/*
 * Does a move to the laggard slot (moving: flows should move) need a new
 * copy of the main slot?  Yes when there is no laggard slot, or it has
 * been confirmed past the oldest progress of the flows to move (it no
 * longer has their WAL).
 */
bool
schedule_needs_laggard_copy(bool moving, bool have_lag, XLogRecPtr lag_confirmed,
							XLogRecPtr oldest)
{
	return moving && (!have_lag || (!XLogRecPtrIsInvalid(oldest) && lag_confirmed > oldest));
}

/* Does a flow the main lane found slow at since still belong to the laggard lane? */
bool
schedule_slow_held(TimestampTz since, TimestampTz now)
{
	return !TimestampDifferenceExceeds(since, now, SLOW_HOLD_MS);
}

/*
 * Is a first read of a feed of pages too big for the main lane's pass (it
 * runs outside any time slice)?  The laggard worker then does it.
 */
bool
schedule_first_read_too_big(BlockNumber pages)
{
	return pages > FIRST_READ_PAGES;
}

/*
 * The worker places (RegistryStart) the launcher should start now, given
 * the databases that exist and allow connections: none unless
 * autocdc.enabled, main workers up to autocdc.max_workers running (a
 * laggard worker does not count), a place whose worker exited
 * SCHEDULE_RESTART_DELAY_MS after it did.  *pending: a restart waits for
 * its delay.
 */
List *
schedule_workers_to_start(List *dbs, TimestampTz now, bool *pending)
{
	int			running;
	List	   *due = registry_due(dbs, now, SCHEDULE_RESTART_DELAY_MS, &running, pending);
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, due)
	{
		RegistryStart *rs = lfirst(lc);

		if (!autocdc_enabled ||
			(rs->lane == REGISTRY_MAIN_LANE && running >= autocdc_max_workers))
		{
			pfree(rs);
			continue;
		}
		if (rs->lane == REGISTRY_MAIN_LANE)
			running++;
		result = lappend(result, rs);
	}
	list_free(due);
	return result;
}
