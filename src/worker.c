/*-------------------------------------------------------------------------
 *
 * worker.c
 *		Continuous apply (entry layer): the launcher and the per-database
 *		workers, which only decide when a pass (pass.c) runs.
 *
 * The launcher (a static background worker, "autocdc launcher") scans
 * pg_database and starts one dynamic worker ("autocdc worker") per database
 * that allows connections and is not a template, as the registry
 * (registry.c) says.
 *
 * A worker loops: one transaction per pass, selecting the continuous flows
 * that are due (not paused, not locked by a run_flow, not backing off after
 * an error), capturing them in one decoding pass and applying each as its
 * owner (pass.c).  It sleeps on its latch, which any transaction of its
 * database that wrote sets at commit, with autocdc.naptime as the fallback.
 *
 * Each database has a main worker and, while flows are on the laggard slot
 * (lanes.c), a laggard worker.  The main worker serves the main slot with
 * time-sliced passes; before each pass it moves flows between the slots,
 * in a transaction of its own; it runs the snapshot flows; it creates the
 * main slot when flows need it, and drops the slots once none does, also
 * after DROP EXTENSION, before exiting for good.  The laggard worker serves
 * the flows of the laggard slot, in passes bounded by autocdc.max_pass_wal
 * but not by time, and exits when there are none.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>
#include <unistd.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "replication/slot.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "tcop/utility.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "batch.h"
#include "catalog.h"
#include "failures.h"
#include "lanes.h"
#include "pass.h"
#include "registry.h"
#include "schedule.h"
#include "settings.h"
#include "slots.h"
#include "source.h"
#include "util.h"
#include "worker.h"

/* The launcher looks at pg_database at least this often (ms). */
#define LAUNCHER_NAPTIME_MS 10000
/* How often the worker prunes the run log (ms). */
#define PRUNE_INTERVAL_MS 60000

/* DROP EXTENSION happened: drop the slot and exit for good */
static bool extension_gone = false;
/* this worker's lane (registry.h) */
static int	worker_lane = REGISTRY_MAIN_LANE;
/* the laggard worker found no flow to serve */
static bool laggard_idle = false;

PGDLLEXPORT void autocdc_launcher_main(Datum arg);
PGDLLEXPORT void autocdc_worker_main(Datum arg);

/* ----------------------------------------------------------------
 * launcher
 * ----------------------------------------------------------------
 */

/* Databases a worker may serve: not templates, connections allowed. */
static List *
launcher_databases(void)
{
	List	   *result = NIL;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	MemoryContext cxt = CurrentMemoryContext;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		MemoryContext old;

		if (db->datistemplate || !db->datallowconn)
			continue;
		old = MemoryContextSwitchTo(cxt);
		result = lappend_oid(result, db->oid);
		MemoryContextSwitchTo(old);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return result;
}

/* Register a dynamic worker for a database's lane. */
static bool
launcher_start_worker(Oid dboid, int lane)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "autocdc");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "autocdc_worker_main");
	if (lane == REGISTRY_MAIN_LANE)
		snprintf(bgw.bgw_name, BGW_MAXLEN, "autocdc worker for database %u", dboid);
	else
		snprintf(bgw.bgw_name, BGW_MAXLEN, "autocdc laggard worker for database %u", dboid);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "autocdc worker");
	bgw.bgw_main_arg = ObjectIdGetDatum(dboid);
	memcpy(bgw.bgw_extra, &lane, sizeof(lane));
	bgw.bgw_notify_pid = MyProcPid;
	return RegisterDynamicBackgroundWorker(&bgw, &handle);
}

/*
 * One look at the databases: start the workers that are missing.  Returns
 * true if a restart waits for its delay.
 */
static bool
launcher_scan(void)
{
	List	   *dbs = launcher_databases();
	TimestampTz now = GetCurrentTimestamp();
	bool		pending;
	List	   *to_start = schedule_workers_to_start(dbs, now, &pending);
	ListCell   *lc;

	foreach(lc, to_start)
	{
		RegistryStart *rs = lfirst(lc);

		if (!launcher_start_worker(rs->dboid, rs->lane))
		{
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("autocdc could not start a worker for database %u", rs->dboid),
					 errhint("Raise max_worker_processes.")));
			break;
		}
		registry_starting(rs->dboid, rs->lane, now);
	}
	list_free(dbs);
	list_free_deep(to_start);
	return pending;
}

/*
 * Drop the database's slot when no flow needs it.  Flows cannot be created
 * meanwhile (SHARE lock on autocdc.flow), and the check sees every flow
 * committed before the lock.
 */
static void
worker_drop_unneeded_slot(void)
{
	if (slots_count() == 0)
		return;
	catalog_lock_flows();
	if (!catalog_has_change_flows(false))
		slots_drop_all();
}

/*
 * Create the main slot if flows need it (before the pass writes).  When it
 * cannot be created — above all because every replication slot of the
 * server is in use — the flows waiting for it show why in autocdc.flows
 * (registry.c keeps the error), the WARNING is logged once, the pass goes
 * on without the main lane (snapshot flows need no slot), and the next
 * pass, one autocdc.naptime later, tries again: a slot freed elsewhere is
 * used at once.  Returns whether the main slot exists.
 */
static bool
worker_ensure_main_slot(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool ok = true;

	/* a subtransaction assigns no transaction id: the slot can be created */
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		slots_ensure_main();
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		char	   *message;
		const char *hint;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		if (MyReplicationSlot != NULL)
			ReplicationSlotRelease();	/* a slot being created goes */
		message = psprintf("the replication slot of autocdc could not be created: %s",
						   edata->message);
		hint = edata->sqlerrcode == ERRCODE_CONFIGURATION_LIMIT_EXCEEDED ?
			"Drop an unused replication slot or raise max_replication_slots: autocdc needs one slot per database with change flows, and one more while flows lag. The worker tries again every autocdc.naptime." :
			edata->hint;
		if (registry_note_slot_error(edata->sqlerrcode, message, hint))
			ereport(WARNING,
					(errcode(edata->sqlerrcode),
					 errmsg("autocdc: %s", message),
					 errdetail("The change flows of database \"%s\" are not applied until it exists.",
							   get_database_name(MyDatabaseId)),
					 hint ? errhint("%s", hint) : 0));
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	if (ok && registry_clear_slot_error())
		ereport(LOG,
				(errmsg("autocdc: the replication slot of database \"%s\" was created",
						get_database_name(MyDatabaseId))));
	return ok;
}

/* Start a transaction of the worker, with SPI and a snapshot. */
static void
worker_xact_begin(const char *activity)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

/* Commit a transaction of the worker. */
static void
worker_xact_end(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * Move flows between the slots (lanes.c) in a transaction of its own,
 * before the pass writes anything, and say whether the laggard lane needs
 * its worker.
 */
static void
worker_rebalance(void)
{
	bool		laggards = false;
	char	   *version;

	worker_xact_begin("autocdc: moving flows between slots");
	version = catalog_installed_version();
	(void) set_safe_search_path();
	if (version != NULL && strcmp(version, AUTOCDC_VERSION) == 0)
		laggards = lanes_rebalance(pass_slow_flows());
	worker_xact_end();
	registry_want_laggard_worker(laggards);
	if (laggards)
		registry_wake_other_lane();
}

/*
 * One pass of the worker, in a transaction of its own.  Returns the time in
 * ms until the next flow falls due for a retry (or -1), and sets *more when
 * WAL was left to decode.
 */
static long
worker_pass(bool *more)
{
	char	   *version;
	char	   *main_slot;
	long		delay = -1;
	static TimestampTz last_prune = 0;
	static bool version_reported = false;

	*more = false;
	worker_xact_begin("autocdc: looking for work");

	version = catalog_installed_version();
	if (version == NULL)
	{
		/*
		 * Start no worker here until CREATE EXTENSION asks for one; marked
		 * now, so that a CREATE EXTENSION committing from here on does.
		 */
		registry_mark_absent();
		extension_gone = true;
		slots_drop_all();		/* each worker drops what the other may hold */
	}
	else if (strcmp(version, AUTOCDC_VERSION) != 0)
	{
		/* a new library before ALTER EXTENSION UPDATE: apply nothing */
		if (!version_reported)
			ereport(LOG,
					(errmsg("autocdc worker: autocdc %s is installed in database \"%s\", but the library is %s; no flow is applied there until the extension is updated",
							version, get_database_name(MyDatabaseId), AUTOCDC_VERSION),
					 errhint("Run ALTER EXTENSION autocdc UPDATE in that database.")));
		version_reported = true;
	}
	else if (worker_lane == REGISTRY_LAGGARD_LANE)
	{
		char	   *lag;

		version_reported = false;
		(void) set_safe_search_path();
		lag = slots_laggard_name();
		failures_persist();
		if (lag == NULL)
			laggard_idle = true;
		else
			*more = pass_change_flows(schedule_due_change_flows(lag, true), lag,
									  autocdc_batch_size, (int64) autocdc_max_pass_wal * 1024,
									  false);
		delay = schedule_next_due_ms();
	}
	else
	{
		bool		have_slot = true;

		version_reported = false;
		(void) set_safe_search_path();
		if (!catalog_has_change_flows(false))
		{
			worker_drop_unneeded_slot();
			(void) registry_clear_slot_error();
		}
		else if (catalog_has_change_flows(true))
			have_slot = worker_ensure_main_slot();	/* before this transaction writes */

		failures_persist();
		main_slot = slots_main_name();
		if (main_slot != NULL && have_slot)
			*more = pass_change_flows(schedule_due_change_flows(slots_laggard_name(), false),
									  main_slot, autocdc_batch_size, 0, true);
		/* snapshot flows every autocdc.snapshot_interval */
		pass_snapshot_flows(schedule_due_snapshot_flows());
		/* when the next retry or snapshot falls due */
		delay = schedule_next_due_ms();
	}

	worker_xact_end();

	/* old runs leave the log, in a transaction of their own */
	if (!extension_gone && !version_reported && autocdc_run_log_retention >= 0 &&
		worker_lane == REGISTRY_MAIN_LANE &&
		TimestampDifferenceExceeds(last_prune, GetCurrentTimestamp(), PRUNE_INTERVAL_MS))
	{
		worker_xact_begin("autocdc: pruning the run log");
		catalog_prune_run_log(autocdc_run_log_retention);
		worker_xact_end();
		last_prune = GetCurrentTimestamp();
	}
	return delay;
}

/* Entry point of the launcher. */
void
autocdc_launcher_main(Datum arg)
{
	bool		pending;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	registry_launcher_started();

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		ResetLatch(MyLatch);
		pending = launcher_scan();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 pending ? SCHEDULE_RESTART_DELAY_MS / 4 : LAUNCHER_NAPTIME_MS,
						 PG_WAIT_EXTENSION);
	}
}

/* ----------------------------------------------------------------
 * worker
 * ----------------------------------------------------------------
 */


/* Entry point of a database's worker. */
void
autocdc_worker_main(Datum arg)
{
	Oid			dboid = DatumGetObjectId(arg);
	volatile int failures = 0;
	volatile TimestampTz last_give_back = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	memcpy(&worker_lane, MyBgworkerEntry->bgw_extra, sizeof(worker_lane));
	if (worker_lane != REGISTRY_LAGGARD_LANE)
		worker_lane = REGISTRY_MAIN_LANE;
	if (!registry_claim(dboid, worker_lane))
		proc_exit(0);
	registry_worker_started(dboid, worker_lane);
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	/* pg_stat_activity tells the lanes apart by application_name */
	if (worker_lane == REGISTRY_LAGGARD_LANE)
		SetConfigOption("application_name", "autocdc laggard worker", PGC_USERSET, PGC_S_SESSION);

	for (;;)
	{
		long		timeout = autocdc_naptime;
		bool		more = false;
		bool		give_back;
		TimestampTz now;
		MemoryContext cxt = CurrentMemoryContext;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (!autocdc_enabled || registry_blocked())
			proc_exit(0);
		ResetLatch(MyLatch);
		/* freed memory kept through consecutive passes */
		memory_hold_freed();

		PG_TRY();
		{
			long		delay;

			if (worker_lane == REGISTRY_MAIN_LANE && !extension_gone)
				worker_rebalance();
			delay = worker_pass(&more);

			if (delay >= 0 && delay < timeout)
				timeout = delay;
			failures = 0;
		}
		PG_CATCH();
		{
			/* a pass that fails as a whole: log it, back off, try again */
			MemoryContextSwitchTo(cxt);
			HOLD_INTERRUPTS();
			EmitErrorReport();
			FlushErrorState();
			AbortCurrentTransaction();
			if (MyReplicationSlot != NULL)
				ReplicationSlotRelease();
			batch_clear();
			RESUME_INTERRUPTS();
			pgstat_report_activity(STATE_IDLE, NULL);
			failures++;
			timeout = schedule_pass_retry_ms(failures);
		}
		PG_END_TRY();

		if (extension_gone || laggard_idle)
			proc_exit(0);
		if (more)
			continue;

		/*
		 * Before it sleeps the worker gives every free page back, at most
		 * once a naptime: an idle worker holds only its caches, a busy one
		 * keeps what its next passes reuse.
		 */
		now = GetCurrentTimestamp();
		give_back = TimestampDifferenceExceeds(last_give_back, now, autocdc_naptime);
		if (give_back)
		{
			last_give_back = now;
			elog(DEBUG2, "autocdc worker: free memory given back");
		}
		memory_release_freed(give_back);
		elog(DEBUG3, "autocdc worker: sleeping for at most %ld ms", Max(timeout, 1));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(timeout, 1), PG_WAIT_EXTENSION);
	}
}

/* ----------------------------------------------------------------
 * setup
 * ----------------------------------------------------------------
 */

/* The launcher; from _PG_init of the preloaded library. */
void
worker_init(void)
{
	BackgroundWorker bgw;

	/* pg_upgrade's servers must not create slots or touch flows */
	if (IsBinaryUpgrade)
		return;
	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = 1;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "autocdc");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "autocdc_launcher_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "autocdc launcher");
	snprintf(bgw.bgw_type, BGW_MAXLEN, "autocdc launcher");
	RegisterBackgroundWorker(&bgw);
}
