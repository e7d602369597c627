/*-------------------------------------------------------------------------
 *
 * schedule.h
 *		When flows run (schedule layer): which flows are due and in what
 *		order, when a failed flow runs again, when the worker wakes next,
 *		which worker places are started, and when a flow changes lanes.
 *		The catalog stores what is decided here; this module decides.
 *
 * What is due.  The worker of a database runs, in each pass, the
 * continuous flows that are due, in the order of their names (the
 * database's collation, as ORDER BY name).  A flow is not due while:
 *	- it is paused (pause_flow; resume_flow makes it due at once, clearing
 *	  its back-off);
 *	- it was created with once => true and has run once (once_done);
 *	- it was created with continuous => false (only run_flow runs it);
 *	- a run_flow, full_refresh or skip_events holds its row lock (the pass
 *	  skips it, FOR UPDATE SKIP LOCKED, and takes it up next pass);
 *	- it failed and is backing off: its flow_state.retry_at (autocdc.flows
 *	  .retry_at) is in the future;
 *	- it is a change flow served by the other lane (see lanes below);
 *	- it is a snapshot flow that ran less than autocdc.snapshot_interval
 *	  seconds ago (last_run_at + interval is in the future).
 * A due change flow whose source, target or hidden state someone has locked
 * is skipped for that pass without waiting, and shows state 'waiting'
 * (flow_state.waiting_since) until a pass gets its locks.
 *
 * When a failed flow runs again.  A failed run (of the worker or of
 * run_flow) counts one more retry (flow_state.retries, back to 0 after a
 * good run) and sets retry_at to the failure's time plus 2^n seconds, n
 * being the failed runs before this one, capped at 8: 1 s, 2 s, 4 s ... up
 * to 256 s, then every 256 s (schedule_retry_at).  run_flow ignores the
 * back-off; skip_events and resume_flow clear it.  A pass of the worker that
 * fails as a whole is retried after 2 s, 4 s ... up to 256 s
 * (schedule_pass_retry_ms).
 *
 * Snapshot flows run every autocdc.snapshot_interval seconds: one is due
 * that many seconds after its last run started (flow_state.last_run_at;
 * never run: at once), and, when it failed, not before its retry_at either.
 *
 * When the worker wakes.  After a pass it sleeps until the next retry_at or
 * snapshot interval falls due (schedule_next_due_ms), at most
 * autocdc.naptime; a commit that writes a continuous flow's source wakes it
 * at once, and so does a pass that left WAL to decode (more than
 * autocdc.batch_size events, or autocdc.max_pass_wal kB in the laggard
 * lane).
 *
 * Lanes and slots.  Each database has a main lane (main worker, main slot)
 * and, while flows lag, a laggard lane (laggard worker, laggard slot).  The
 * main worker moves to the laggard slot, before each pass, the change flows
 * that are paused, failing (retry_at or last_error set), found slow (an
 * apply longer than autocdc.flow_time_slice, or a first read of more than
 * 1024 pages, in the last 30 s), or more than autocdc.max_lag kB of WAL
 * behind the newest flow on the main slot; it moves back those ready to
 * apply whose progress has reached the main slot's confirmed position.  A
 * flow on the laggard slot longer than autocdc.max_lag_age (0: no limit) is
 * taken off it and needs a resync (full_refresh).  A new laggard slot (a copy
 * of the main slot) is made when a flow must move and no laggard slot can
 * take it, and only while fewer than 3 slots exist.
 *
 * Workers.  The launcher starts a main worker in each database that has
 * autocdc (autocdc.enabled, at most autocdc.max_workers main workers), and a
 * laggard worker where the laggard slot has flows (not counted in
 * max_workers); a worker that exited is restarted 1 s after it exited
 * (SCHEDULE_RESTART_DELAY_MS).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SCHEDULE_H
#define AUTOCDC_SCHEDULE_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "storage/block.h"

#include "catalog.h"

/* the back-off of a failed flow is 2^n seconds, n capped at this */
#define SCHEDULE_RETRY_MAX_DOUBLINGS 8

/* A dead worker's place gets a new worker after this long (ms). */
#define SCHEDULE_RESTART_DELAY_MS 1000

extern TimestampTz schedule_retry_at(int retries, TimestampTz failed_at);
extern void schedule_record_failure(int32 flow_id, FlowFailure *failure);
extern long schedule_pass_retry_ms(int failures);
extern List *schedule_due_change_flows(const char *laggard_slot, bool laggard_lane);
extern List *schedule_due_snapshot_flows(void);
extern long schedule_next_due_ms(void);
extern int64 schedule_max_lag_bytes(void);
extern bool schedule_needs_laggard_copy(bool moving, bool have_lag, XLogRecPtr lag_confirmed,
										XLogRecPtr oldest);
extern bool schedule_slow_held(TimestampTz since, TimestampTz now);
extern List *schedule_workers_to_start(List *dbs, TimestampTz now, bool *pending);
extern bool schedule_first_read_too_big(BlockNumber pages);

#endif							/* AUTOCDC_SCHEDULE_H */
