/*-------------------------------------------------------------------------
 *
 * worker.c
 *		Continuous apply: the launcher, the per-database workers, the
 *		shared-memory registry that ties them together, the wake-up at
 *		commit, and stepping aside for database-level DDL.
 *
 * The launcher (a static background worker, "autocdc launcher") scans
 * pg_database and starts one dynamic worker ("autocdc worker") per database
 * that allows connections and is not a template.  The registry in shared
 * memory has one entry per database: the worker's pid and latch, whether the
 * extension was found missing there (then no worker is started until CREATE
 * EXTENSION asks for one), and whether a backend running DROP/ALTER/CREATE
 * DATABASE asked workers to keep away until its transaction ends.  A worker
 * claims its entry when it starts and leaves it when it exits, so a
 * restarted launcher never starts a second worker for a database, and a
 * worker that finds its database's entry taken exits.
 *
 * A worker loops: one transaction per pass, selecting the continuous flows
 * that are due (not paused, not locked by a run_flow, not backing off after
 * an error), capturing them in one decoding pass and applying each as its
 * owner (run.c).  It sleeps on its latch, which any transaction of its
 * database that wrote sets at commit, with autocdc.naptime as the fallback.
 * It creates the database's replication slot when flows need it, and drops
 * it once none does, also after DROP EXTENSION, before exiting for good.
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
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "autocdc.h"

#define MAX_DATABASES 1024

/* A dead worker's database gets a new one after this long (ms). */
#define RESTART_DELAY_MS 1000
/* A registered worker that has not started after this long is given up (ms). */
#define START_TIMEOUT_MS 30000
/* The launcher looks at pg_database at least this often (ms). */
#define LAUNCHER_NAPTIME_MS 10000
/* How often the worker prunes the run log (ms). */
#define PRUNE_INTERVAL_MS 60000

/* One database in the registry. */
typedef struct DbEntry
{
	Oid			dboid;			/* InvalidOid: free */
	pid_t		pid;			/* its worker, 0: none */
	Latch	   *latch;			/* the worker's latch */
	bool		starting;		/* registered by the launcher, not started yet */
	TimestampTz start_requested;
	TimestampTz exited_at;		/* when its last worker exited */
	bool		absent;			/* no autocdc there: start no worker until asked */
	pid_t		blocker;		/* a backend running database DDL, 0: none */
} DbEntry;

typedef struct WorkerShared
{
	LWLock	   *lock;
	pid_t		launcher_pid;
	Latch	   *launcher_latch;
	DbEntry		dbs[MAX_DATABASES];
} WorkerShared;

/* GUCs */
bool		autocdc_enabled = true;
int			autocdc_naptime = 1000; /* ms */
int			autocdc_batch_size = 100000;	/* events per decoding pass */
int			autocdc_max_workers = 8;
int			autocdc_snapshot_interval = 60; /* s */
int			autocdc_run_log_retention = 7 * 24 * 60;	/* min, -1: forever */

static WorkerShared *wshared = NULL;
static bool am_worker = false;
static bool extension_gone = false;

/* commit wake-up and DDL step-aside state of any backend */
static bool xact_wrote = false;
static bool xact_wants_worker = false;
static bool xact_blocks = false;

PGDLLEXPORT void autocdc_launcher_main(Datum arg);
PGDLLEXPORT void autocdc_worker_main(Datum arg);

PG_FUNCTION_INFO_V1(autocdc_want_worker);

/* ----------------------------------------------------------------
 * registry
 * ----------------------------------------------------------------
 */

/* Shared memory the registry needs. */
Size
worker_shmem_size(void)
{
	return MAXALIGN(sizeof(WorkerShared));
}

/* Create or attach the registry (called under AddinShmemInitLock). */
void
worker_shmem_init(LWLock *lock)
{
	bool		found;

	wshared = ShmemInitStruct("autocdc workers", sizeof(WorkerShared), &found);
	if (!found)
	{
		memset(wshared, 0, sizeof(WorkerShared));
		wshared->lock = lock;
	}
}

/* The entry of a database, or NULL; with create, a free entry is taken. */
static DbEntry *
registry_entry(Oid dboid, bool create)
{
	DbEntry    *free_entry = NULL;
	int			i;

	for (i = 0; i < MAX_DATABASES; i++)
	{
		DbEntry    *e = &wshared->dbs[i];

		if (e->dboid == dboid)
			return e;
		if (e->dboid == InvalidOid && free_entry == NULL)
			free_entry = e;
	}
	if (create && free_entry != NULL)
	{
		memset(free_entry, 0, sizeof(DbEntry));
		free_entry->dboid = dboid;
	}
	return create ? free_entry : NULL;
}

/* Wake the launcher. */
static void
wake_launcher(void)
{
	Latch	   *latch = wshared ? wshared->launcher_latch : NULL;

	if (latch)
		SetLatch(latch);
}

/* Is a blocking backend still there? */
static bool
blocker_alive(pid_t pid)
{
	return pid != 0 && BackendPidGetProc(pid) != NULL;
}

/* ----------------------------------------------------------------
 * hooks in every backend: wake at commit, step aside for DDL
 * ----------------------------------------------------------------
 */

/*
 * At commit of a transaction that wrote, wake the database's worker (its
 * own commits excepted); release the registry entries this transaction
 * blocked; tell the launcher about CREATE EXTENSION.
 */
static void
worker_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			xact_wrote = TransactionIdIsValid(GetTopTransactionIdIfAny());
			return;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			break;
		default:
			return;
	}
	if (wshared == NULL)
		return;
	if (event == XACT_EVENT_COMMIT && xact_wrote && !am_worker)
	{
		int			i;

		for (i = 0; i < MAX_DATABASES; i++)
		{
			DbEntry    *e = &wshared->dbs[i];

			if (e->dboid == MyDatabaseId)
			{
				Latch	   *latch = e->latch;

				if (latch)
					SetLatch(latch);
				break;
			}
		}
	}
	if (xact_blocks || (event == XACT_EVENT_COMMIT && xact_wants_worker))
	{
		int			i;

		LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
		for (i = 0; i < MAX_DATABASES; i++)
			if (wshared->dbs[i].blocker == MyProcPid)
				wshared->dbs[i].blocker = 0;
		if (event == XACT_EVENT_COMMIT && xact_wants_worker)
		{
			DbEntry    *e = registry_entry(MyDatabaseId, true);

			if (e)
				e->absent = false;
		}
		LWLockRelease(wshared->lock);
		wake_launcher();
	}
	xact_wrote = false;
	xact_wants_worker = false;
	xact_blocks = false;
}

/*
 * autocdc._want_worker(): called by CREATE EXTENSION; once the transaction
 * commits, the launcher starts the database's worker.
 */
Datum
autocdc_want_worker(PG_FUNCTION_ARGS)
{
	xact_wants_worker = true;
	PG_RETURN_VOID();
}

/*
 * Database-level DDL needs the database (or the template) to itself: ask
 * its worker to leave, keep the launcher from starting another until this
 * transaction ends, and wait for the worker to be gone.
 */
static void
step_aside(const char *dbname)
{
	Oid			dboid = get_database_oid(dbname, true);
	DbEntry    *e;
	pid_t		pid = 0;
	int			waited;

	if (!OidIsValid(dboid) || wshared == NULL)
		return;
	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	e = registry_entry(dboid, true);
	if (e)
	{
		e->blocker = MyProcPid;
		pid = e->pid;
	}
	LWLockRelease(wshared->lock);
	if (e == NULL)
		return;
	xact_blocks = true;
	if (pid != 0)
		(void) kill(pid, SIGTERM);

	/* the command itself waits up to 5 s for other sessions; do the same */
	for (waited = 0; waited < 5000; waited += 10)
	{
		bool		gone;

		LWLockAcquire(wshared->lock, LW_SHARED);
		gone = e->dboid != dboid || (e->pid == 0 && !e->starting);
		if (!gone && e->pid != 0 && e->pid != pid)
		{
			pid = e->pid;
			(void) kill(pid, SIGTERM);
		}
		LWLockRelease(wshared->lock);
		if (gone)
			break;
		CHECK_FOR_INTERRUPTS();
		pg_usleep(10000L);
	}
}

/* The database a DDL statement needs to itself, or NULL. */
static char *
exclusive_database(Node *parsetree)
{
	ListCell   *lc;

	switch (nodeTag(parsetree))
	{
		case T_DropdbStmt:
			return ((DropdbStmt *) parsetree)->dbname;
		case T_RenameStmt:
			if (((RenameStmt *) parsetree)->renameType == OBJECT_DATABASE)
				return ((RenameStmt *) parsetree)->subname;
			break;
		case T_AlterDatabaseStmt:
			foreach(lc, ((AlterDatabaseStmt *) parsetree)->options)
				if (strcmp(((DefElem *) lfirst(lc))->defname, "tablespace") == 0)
					return ((AlterDatabaseStmt *) parsetree)->dbname;
			break;
		case T_CreatedbStmt:
			foreach(lc, ((CreatedbStmt *) parsetree)->options)
			{
				DefElem    *d = lfirst(lc);

				if (strcmp(d->defname, "template") == 0 && d->arg != NULL)
					return defGetString(d);
			}
			break;
		default:
			break;
	}
	return NULL;
}

/*
 * Before a utility statement (guard.c's hook): step aside when it is
 * database-level DDL that needs this worker's database to itself.
 */
void
worker_before_utility(Node *stmt)
{
	char	   *dbname = exclusive_database(stmt);

	if (dbname != NULL)
		step_aside(dbname);
}

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

/* Register a dynamic worker for a database. */
static bool
launcher_start_worker(Oid dboid)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "autocdc");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "autocdc_worker_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "autocdc worker for database %u", dboid);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "autocdc worker");
	bgw.bgw_main_arg = ObjectIdGetDatum(dboid);
	bgw.bgw_notify_pid = MyProcPid;
	return RegisterDynamicBackgroundWorker(&bgw, &handle);
}

/*
 * One look at the databases: forget dropped ones, start the workers that
 * are missing.  Returns true if a restart waits for its delay.
 */
static bool
launcher_scan(void)
{
	List	   *dbs = launcher_databases();
	List	   *to_start = NIL;
	TimestampTz now = GetCurrentTimestamp();
	int			running = 0;
	int			i;
	ListCell   *lc;
	bool		pending = false;

	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	for (i = 0; i < MAX_DATABASES; i++)
	{
		DbEntry    *e = &wshared->dbs[i];

		if (e->dboid == InvalidOid)
			continue;
		if (e->starting && e->pid == 0 &&
			TimestampDifferenceExceeds(e->start_requested, now, START_TIMEOUT_MS))
		{
			e->starting = false;
			e->exited_at = now;
		}
		if (e->blocker != 0 && !blocker_alive(e->blocker))
			e->blocker = 0;
		if (e->pid != 0 || e->starting)
			running++;
		else if (!list_member_oid(dbs, e->dboid) && e->blocker == 0)
			e->dboid = InvalidOid;	/* dropped, or no longer served */
	}
	foreach(lc, dbs)
	{
		Oid			dboid = lfirst_oid(lc);
		DbEntry    *e = registry_entry(dboid, true);

		if (e == NULL || e->pid != 0 || e->starting || e->absent || e->blocker != 0)
			continue;
		if (e->exited_at != 0 &&
			!TimestampDifferenceExceeds(e->exited_at, now, RESTART_DELAY_MS))
		{
			pending = true;
			continue;
		}
		to_start = lappend_oid(to_start, dboid);
	}
	LWLockRelease(wshared->lock);

	foreach(lc, to_start)
	{
		Oid			dboid = lfirst_oid(lc);
		DbEntry    *e;

		if (!autocdc_enabled || running >= autocdc_max_workers)
			break;
		if (!launcher_start_worker(dboid))
		{
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("autocdc could not start a worker for database %u", dboid),
					 errhint("Raise max_worker_processes.")));
			break;
		}
		running++;
		LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
		e = registry_entry(dboid, false);
		if (e)
		{
			e->starting = true;
			e->start_requested = now;
		}
		LWLockRelease(wshared->lock);
	}
	list_free(dbs);
	list_free(to_start);
	return pending;
}

/* The launcher leaves the registry. */
static void
launcher_detach(int code, Datum arg)
{
	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	wshared->launcher_pid = 0;
	wshared->launcher_latch = NULL;
	LWLockRelease(wshared->lock);
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

	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	wshared->launcher_pid = MyProcPid;
	wshared->launcher_latch = MyLatch;
	LWLockRelease(wshared->lock);
	on_shmem_exit(launcher_detach, (Datum) 0);

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
						 pending ? RESTART_DELAY_MS / 4 : LAUNCHER_NAPTIME_MS,
						 PG_WAIT_EXTENSION);
	}
}

/* ----------------------------------------------------------------
 * worker
 * ----------------------------------------------------------------
 */

/* The worker leaves the registry. */
static void
worker_detach(int code, Datum arg)
{
	Oid			dboid = DatumGetObjectId(arg);
	DbEntry    *e;

	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	e = registry_entry(dboid, false);
	if (e && e->pid == MyProcPid)
	{
		e->pid = 0;
		e->latch = NULL;
		e->starting = false;
		e->exited_at = GetCurrentTimestamp();
	}
	LWLockRelease(wshared->lock);
	wake_launcher();
}

/* Claim the database's entry; false if another worker has it or DDL blocks it. */
static bool
worker_claim(Oid dboid)
{
	DbEntry    *e;
	bool		ok = false;

	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	e = registry_entry(dboid, true);
	if (e)
	{
		e->starting = false;
		if (e->pid == 0 && !blocker_alive(e->blocker))
		{
			e->pid = MyProcPid;
			e->latch = MyLatch;
			e->absent = false;
			ok = true;
		}
		else if (e->pid == 0)
			e->exited_at = GetCurrentTimestamp();
	}
	LWLockRelease(wshared->lock);
	return ok;
}

/* Has DDL asked this worker to leave? */
static bool
worker_blocked(void)
{
	DbEntry    *e;
	bool		blocked;

	LWLockAcquire(wshared->lock, LW_SHARED);
	e = registry_entry(MyDatabaseId, false);
	blocked = e != NULL && e->blocker != 0;
	LWLockRelease(wshared->lock);
	return blocked;
}

/* Run a query returning one value (or none) as text. */
static char *
spi_value(const char *sql)
{
	bool		isnull;
	Datum		d;

	if (SPI_execute(sql, false, 1) < 0)
		elog(ERROR, "could not run \"%s\"", sql);
	if (SPI_processed == 0)
		return NULL;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		return NULL;
	return TextDatumGetCString(d);
}

/*
 * Drop the database's slot when no flow needs it.  Flows cannot be created
 * meanwhile (SHARE lock on autocdc.flow), and the check sees every flow
 * committed before the lock.
 */
static void
worker_drop_unneeded_slot(void)
{
	if (source_slot_name() == NULL)
		return;
	spi_exec("LOCK TABLE autocdc.flow IN SHARE MODE", SPI_OK_UTILITY);
	if (strcmp(spi_value("SELECT pg_catalog.count(*)::pg_catalog.text FROM autocdc.flow "
						 "WHERE kind OPERATOR(pg_catalog.=) 'cdc' AND NOT once"), "0") == 0)
		source_drop_slots();
}

/* The first column of the last SPI result, as a list of strings. */
static List *
spi_names(void)
{
	List	   *names = NIL;
	uint64		i;

	for (i = 0; i < SPI_processed; i++)
		names = lappend(names, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
	return names;
}

/* A snapshot flow's next run (flow_state s), and whether it is due. */
#define SNAPSHOT_NEXT \
	psprintf("(s.last_run_at OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => %d))", \
			 autocdc_snapshot_interval)
#define SNAPSHOT_DUE \
	psprintf("(s.retry_at IS NULL OR s.retry_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()) " \
			 "AND (s.last_run_at IS NULL OR %s OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp())", \
			 SNAPSHOT_NEXT)

/*
 * One pass of the worker, in a transaction of its own.  Returns the time in
 * ms until the next flow falls due for a retry (or -1), and sets *more when
 * WAL was left to decode.
 */
static long
worker_pass(bool *more)
{
	char	   *next;
	char	   *version;
	List	   *names = NIL;
	long		delay = -1;
	static TimestampTz last_prune = 0;
	static bool version_reported = false;

	*more = false;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "autocdc: looking for work");

	version = autocdc_installed_version();
	if (version == NULL)
	{
		DbEntry    *e;

		/*
		 * Start no worker here until CREATE EXTENSION asks for one; marked
		 * now, so that a CREATE EXTENSION committing from here on does.
		 */
		LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
		e = registry_entry(MyDatabaseId, false);
		if (e)
			e->absent = true;
		LWLockRelease(wshared->lock);
		extension_gone = true;
		source_drop_slots();
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
	else
	{
		version_reported = false;
		(void) set_safe_search_path();
		if (strcmp(spi_value("SELECT pg_catalog.count(*)::pg_catalog.text FROM autocdc.flow "
							 "WHERE kind OPERATOR(pg_catalog.=) 'cdc' AND NOT once"), "0") == 0)
			worker_drop_unneeded_slot();
		else if (spi_value("SELECT 'x' FROM autocdc.flow WHERE kind OPERATOR(pg_catalog.=) 'cdc' "
						   "AND continuous AND NOT paused AND NOT once LIMIT 1") != NULL)
			source_ensure_slot();	/* before this transaction writes */

		autocdc_persist_errors();
		if (SPI_execute("SELECT f.name FROM autocdc.flow f "
						"JOIN autocdc.flow_state s ON s.name OPERATOR(pg_catalog.=) f.name "
						"WHERE f.kind OPERATOR(pg_catalog.=) 'cdc' AND f.continuous AND NOT f.paused "
						"AND NOT (f.once AND s.once_done) "
						"AND (s.retry_at IS NULL OR s.retry_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()) "
						"ORDER BY f.name FOR UPDATE OF s SKIP LOCKED", false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not select flows");
		names = spi_names();
		*more = run_worker_pass(names, autocdc_batch_size);

		/* snapshot flows every autocdc.snapshot_interval */
		if (SPI_execute(psprintf("SELECT f.name FROM autocdc.flow f "
								 "JOIN autocdc.flow_state s ON s.name OPERATOR(pg_catalog.=) f.name "
								 "WHERE f.kind OPERATOR(pg_catalog.=) 'snapshot' AND f.continuous AND NOT f.paused "
								 "AND %s ORDER BY f.name FOR UPDATE OF s SKIP LOCKED", SNAPSHOT_DUE),
						false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not select flows");
		run_worker_snapshots(spi_names());

		/* when the next retry or snapshot falls due */
		next = spi_value(psprintf("SELECT ceil(extract(epoch FROM pg_catalog.min(greatest(s.retry_at, "
								  "CASE WHEN f.kind OPERATOR(pg_catalog.=) 'snapshot' THEN %s END)) "
								  "OPERATOR(pg_catalog.-) pg_catalog.clock_timestamp()) OPERATOR(pg_catalog.*) 1000)::pg_catalog.text "
								  "FROM autocdc.flow f JOIN autocdc.flow_state s ON s.name OPERATOR(pg_catalog.=) f.name "
								  "WHERE f.continuous AND NOT f.paused "
								  "AND (s.retry_at IS NOT NULL OR f.kind OPERATOR(pg_catalog.=) 'snapshot')",
								  SNAPSHOT_NEXT));
		if (next)
			delay = Max(0, strtol(next, NULL, 10));
	}

	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);

	/* old runs leave the log, in a transaction of their own */
	if (!extension_gone && !version_reported && autocdc_run_log_retention >= 0 &&
		TimestampDifferenceExceeds(last_prune, GetCurrentTimestamp(), PRUNE_INTERVAL_MS))
	{
		StartTransactionCommand();
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		PushActiveSnapshot(GetTransactionSnapshot());
		spi_exec(psprintf("DELETE FROM autocdc.flow_run_log WHERE finished_at OPERATOR(pg_catalog.<) "
						  "(pg_catalog.now() OPERATOR(pg_catalog.-) '%d min'::pg_catalog.interval)",
						  autocdc_run_log_retention), SPI_OK_DELETE);
		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
		last_prune = GetCurrentTimestamp();
	}
	return delay;
}

/* Entry point of a database's worker. */
void
autocdc_worker_main(Datum arg)
{
	Oid			dboid = DatumGetObjectId(arg);
	int			failures = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	if (!worker_claim(dboid))
		proc_exit(0);
	on_shmem_exit(worker_detach, ObjectIdGetDatum(dboid));
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	am_worker = true;

	for (;;)
	{
		long		timeout = autocdc_naptime;
		bool		more = false;
		MemoryContext cxt = CurrentMemoryContext;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (!autocdc_enabled || worker_blocked())
			proc_exit(0);
		ResetLatch(MyLatch);

		PG_TRY();
		{
			long		delay = worker_pass(&more);

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
			timeout = Min(1000L << Min(failures, 8), 300000L);
		}
		PG_END_TRY();

		if (extension_gone)
			proc_exit(0);
		if (more)
			continue;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(timeout, 1), PG_WAIT_EXTENSION);
	}
}

/* ----------------------------------------------------------------
 * setup
 * ----------------------------------------------------------------
 */

/* GUCs, hooks and the launcher; from _PG_init of the preloaded library. */
void
worker_init(void)
{
	BackgroundWorker bgw;

	DefineCustomBoolVariable("autocdc.enabled",
							 "Whether background workers apply continuous flows.",
							 NULL, &autocdc_enabled, true, PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.naptime",
							"Longest time a worker sleeps before it looks for new changes.",
							"Workers are also woken by every commit that wrote in their database.",
							&autocdc_naptime, 1000, 10, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.batch_size",
							"Source events a worker decodes in one pass before applying them.",
							"Passes end at a transaction boundary; 0 means no limit.",
							&autocdc_batch_size, 100000, 0, INT_MAX,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.max_workers",
							"Most databases served by autocdc workers at once.",
							"Each worker is a background worker process: max_worker_processes must leave room for them.",
							&autocdc_max_workers, 8, 0, MAX_DATABASES,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.snapshot_interval",
							"Time between two runs of a continuous snapshot flow by the worker.",
							NULL, &autocdc_snapshot_interval, 60, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.run_log_retention",
							"How long workers keep rows of autocdc.flow_runs; -1 keeps them forever.",
							NULL, &autocdc_run_log_retention, 7 * 24 * 60, -1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MIN, NULL, NULL, NULL);

	RegisterXactCallback(worker_xact_callback, NULL);

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
