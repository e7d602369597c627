/*-------------------------------------------------------------------------
 *
 * registry.c
 *		The shared-memory registry of autocdc's workers (store layer), and
 *		what every backend does with it: wake its database's worker at
 *		commit, and keep workers away while it runs database-level DDL.
 *
 * One entry per database with a place for each of its two workers (lanes):
 * the main worker, and the laggard worker that serves the flows of the
 * laggard slot (started only while such flows exist): pid and latch of
 * each, whether the extension was found missing there (then no worker is
 * started until CREATE EXTENSION asks for one), and whether a backend
 * running DROP/ALTER/CREATE DATABASE asked workers to keep away until its
 * transaction ends.  A worker claims its place when it starts and leaves it
 * when it exits, so a restarted launcher never starts a second worker for a
 * lane, and a worker that finds its place taken exits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>
#include <unistd.h>

#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "funcapi.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "registry.h"
#include "settings.h"
#include "util.h"

/* A registered worker that has not started after this long is given up (ms). */
#define START_TIMEOUT_MS 30000

/* One worker place of a database. */
typedef struct LaneEntry
{
	pid_t		pid;			/* its worker, 0: none */
	Latch	   *latch;			/* the worker's latch */
	bool		starting;		/* registered by the launcher, not started yet */
	TimestampTz start_requested;
	TimestampTz exited_at;		/* when its last worker exited */
} LaneEntry;

/* One database in the registry. */
typedef struct DbEntry
{
	Oid			dboid;			/* InvalidOid: free */
	LaneEntry	lanes[REGISTRY_LANES];
	bool		laggards;		/* the laggard lane has flows: keep a worker there */
	bool		absent;			/* no autocdc there: start no worker until asked */
	pid_t		blocker;		/* a backend running database DDL, 0: none */
	/* why the main slot cannot be created (slot_error_since 0: it can) */
	TimestampTz slot_error_since;
	int			slot_error_code;
	char		slot_error[REGISTRY_SLOT_ERROR_LEN];
	char		slot_error_hint[REGISTRY_SLOT_ERROR_LEN];
	bool		copy_failing;	/* the laggard slot cannot be copied */
} DbEntry;

typedef struct WorkerShared
{
	LWLock	   *lock;
	pid_t		launcher_pid;
	Latch	   *launcher_latch;
	DbEntry		dbs[AUTOCDC_MAX_DATABASES];
} WorkerShared;

static WorkerShared *wshared = NULL;
static bool am_worker = false;
static int	my_lane = 0;

/* commit wake-up and DDL step-aside state of any backend */
static bool xact_wrote = false;
static bool xact_wants_worker = false;
static bool xact_blocks = false;

/* Shared memory the registry needs. */
Size
registry_shmem_size(void)
{
	return MAXALIGN(sizeof(WorkerShared));
}

/* Create or attach the registry (called under AddinShmemInitLock). */
void
registry_shmem_init(LWLock *lock)
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

	for (i = 0; i < AUTOCDC_MAX_DATABASES; i++)
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

/*
 * At commit of a transaction that wrote, wake the database's worker (its
 * own commits excepted); release the registry entries this transaction
 * blocked; tell the launcher about CREATE EXTENSION.
 */
static void
registry_xact_callback(XactEvent event, void *arg)
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

		for (i = 0; i < AUTOCDC_MAX_DATABASES; i++)
		{
			DbEntry    *e = &wshared->dbs[i];

			if (e->dboid == MyDatabaseId)
			{
				int			l;

				for (l = 0; l < REGISTRY_LANES; l++)
				{
					Latch	   *latch = e->lanes[l].latch;

					if (latch)
						SetLatch(latch);
				}
				break;
			}
		}
	}
	if (xact_blocks || (event == XACT_EVENT_COMMIT && xact_wants_worker))
	{
		int			i;

		LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
		for (i = 0; i < AUTOCDC_MAX_DATABASES; i++)
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

/* CREATE EXTENSION asks for a worker: the launcher starts one at commit. */
void
registry_want_worker(void)
{
	xact_wants_worker = true;
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
	pid_t		pids[REGISTRY_LANES] = {0};
	int			waited;
	int			l;

	if (!OidIsValid(dboid) || wshared == NULL)
		return;
	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	e = registry_entry(dboid, true);
	if (e)
	{
		e->blocker = MyProcPid;
		for (l = 0; l < REGISTRY_LANES; l++)
			pids[l] = e->lanes[l].pid;
	}
	LWLockRelease(wshared->lock);
	if (e == NULL)
		return;
	xact_blocks = true;
	for (l = 0; l < REGISTRY_LANES; l++)
		if (pids[l] != 0)
			(void) kill(pids[l], SIGTERM);

	/* the command itself waits up to 5 s for other sessions; do the same */
	for (waited = 0; waited < 5000; waited += 10)
	{
		bool		gone = true;

		LWLockAcquire(wshared->lock, LW_SHARED);
		for (l = 0; l < REGISTRY_LANES; l++)
		{
			LaneEntry  *le = &e->lanes[l];

			if (e->dboid != dboid)
				break;
			if (le->pid != 0 || le->starting)
				gone = false;
			if (le->pid != 0 && le->pid != pids[l])
			{
				pids[l] = le->pid;
				(void) kill(pids[l], SIGTERM);
			}
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
registry_before_utility(Node *stmt)
{
	char	   *dbname = exclusive_database(stmt);

	if (dbname != NULL)
		step_aside(dbname);
}

/* The launcher leaves the registry. */
static void
registry_launcher_detach(int code, Datum arg)
{
	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	wshared->launcher_pid = 0;
	wshared->launcher_latch = NULL;
	LWLockRelease(wshared->lock);
}

/* The worker leaves the registry. */
static void
registry_worker_detach(int code, Datum arg)
{
	Oid			dboid = DatumGetObjectId(arg);
	DbEntry    *e;

	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	e = registry_entry(dboid, false);
	if (e && e->lanes[my_lane].pid == MyProcPid)
	{
		LaneEntry  *le = &e->lanes[my_lane];

		le->pid = 0;
		le->latch = NULL;
		le->starting = false;
		le->exited_at = GetCurrentTimestamp();
	}
	LWLockRelease(wshared->lock);
	wake_launcher();
}

/*
 * Claim the database's place of a lane; false if another worker has it or
 * DDL blocks it.
 */
bool
registry_claim(Oid dboid, int lane)
{
	DbEntry    *e;
	bool		ok = false;

	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	e = registry_entry(dboid, true);
	if (e)
	{
		LaneEntry  *le = &e->lanes[lane];

		le->starting = false;
		if (le->pid == 0 && !blocker_alive(e->blocker))
		{
			le->pid = MyProcPid;
			le->latch = MyLatch;
			e->absent = false;
			ok = true;
		}
		else if (le->pid == 0)
			le->exited_at = GetCurrentTimestamp();
	}
	LWLockRelease(wshared->lock);
	return ok;
}

/* Has DDL asked this worker to leave? */
bool
registry_blocked(void)
{
	DbEntry    *e;
	bool		blocked;

	if (wshared == NULL)
		return false;
	LWLockAcquire(wshared->lock, LW_SHARED);
	e = registry_entry(MyDatabaseId, false);
	blocked = e != NULL && e->blocker != 0;
	LWLockRelease(wshared->lock);
	return blocked;
}

/*
 * This process is its database's worker of a lane (its own commits wake
 * nobody).
 */
void
registry_worker_started(Oid dboid, int lane)
{
	am_worker = true;
	my_lane = lane;
	on_shmem_exit(registry_worker_detach, ObjectIdGetDatum(dboid));
}

/*
 * Whether this database's laggard lane needs a worker (said by the main
 * worker, which sees the flows on the laggard slot); wakes the launcher
 * when that changes to true.
 */
void
registry_want_laggard_worker(bool want)
{
	DbEntry    *e;
	bool		changed = false;

	if (wshared == NULL)
		return;
	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	e = registry_entry(MyDatabaseId, false);
	if (e && e->laggards != want)
	{
		e->laggards = want;
		changed = want;
	}
	LWLockRelease(wshared->lock);
	if (changed)
		wake_launcher();
}

/* Wake the other worker of this database, if it runs. */
void
registry_wake_other_lane(void)
{
	DbEntry    *e;
	Latch	   *latch = NULL;

	if (wshared == NULL)
		return;
	LWLockAcquire(wshared->lock, LW_SHARED);
	e = registry_entry(MyDatabaseId, false);
	if (e)
		latch = e->lanes[1 - my_lane].latch;
	LWLockRelease(wshared->lock);
	if (latch)
		SetLatch(latch);
}

/*
 * Note why this database's main slot cannot be created (message, hint,
 * SQLSTATE), for autocdc.flows; true if there was no such note before
 * (the caller then logs it).
 */
bool
registry_note_slot_error(int sqlerrcode, const char *message, const char *hint)
{
	DbEntry    *e;
	bool		first = false;

	if (wshared == NULL)
		return false;
	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	e = registry_entry(MyDatabaseId, true);
	if (e)
	{
		first = e->slot_error_since == 0 || e->slot_error_code != sqlerrcode;
		if (e->slot_error_since == 0)
			e->slot_error_since = GetCurrentTimestamp();
		e->slot_error_code = sqlerrcode;
		copy_clipped(e->slot_error, message, REGISTRY_SLOT_ERROR_LEN);
		copy_clipped(e->slot_error_hint, hint, REGISTRY_SLOT_ERROR_LEN);
	}
	LWLockRelease(wshared->lock);
	return first;
}

/* The main slot exists: forget the note; true if there was one. */
bool
registry_clear_slot_error(void)
{
	DbEntry    *e;
	bool		had = false;

	if (wshared == NULL)
		return false;
	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	e = registry_entry(MyDatabaseId, false);
	if (e && e->slot_error_since != 0)
	{
		e->slot_error_since = 0;
		had = true;
	}
	LWLockRelease(wshared->lock);
	return had;
}

/*
 * Note whether copying the laggard slot fails; true if that changed (the
 * caller logs it once, not at every pass).
 */
bool
registry_note_copy_failing(bool failing)
{
	DbEntry    *e;
	bool		changed = false;

	if (wshared == NULL)
		return false;
	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	e = registry_entry(MyDatabaseId, failing);
	if (e && e->copy_failing != failing)
	{
		e->copy_failing = failing;
		changed = true;
	}
	LWLockRelease(wshared->lock);
	return changed;
}

/*
 * Is the registry in shared memory?  Not when the library was loaded
 * without shared_preload_libraries: then the functions of this file that
 * read or note something do nothing.
 */
bool
registry_attached(void)
{
	return wshared != NULL;
}

/* Does a main worker serve this database now? */
bool
registry_has_worker(void)
{
	DbEntry    *e;
	bool		result;

	if (wshared == NULL)
		return false;
	LWLockAcquire(wshared->lock, LW_SHARED);
	e = registry_entry(MyDatabaseId, false);
	result = e != NULL && e->lanes[REGISTRY_MAIN_LANE].pid != 0;
	LWLockRelease(wshared->lock);
	return result;
}

PG_FUNCTION_INFO_V1(autocdc_slot_error);

/*
 * autocdc_internal._slot_error(): why this database's main slot cannot be
 * created (message, hint, SQLSTATE, since when), as the worker last found;
 * no row when nothing is known to keep it from being created.
 */
Datum
autocdc_slot_error(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	DbEntry    *e;
	DbEntry		copy;
	bool		found = false;

	InitMaterializedSRF(fcinfo, 0);
	if (wshared == NULL)
		return (Datum) 0;		/* not preloaded: no worker noted anything */
	LWLockAcquire(wshared->lock, LW_SHARED);
	e = registry_entry(MyDatabaseId, false);
	if (e && e->slot_error_since != 0)
	{
		copy = *e;
		found = true;
	}
	LWLockRelease(wshared->lock);
	if (found)
	{
		Datum		values[4];
		bool		nulls[4] = {false, false, false, false};

		values[0] = CStringGetTextDatum(copy.slot_error);
		values[1] = CStringGetTextDatum(copy.slot_error_hint);
		nulls[1] = copy.slot_error_hint[0] == '\0';
		values[2] = CStringGetTextDatum(unpack_sql_state(copy.slot_error_code));
		values[3] = TimestampTzGetDatum(copy.slot_error_since);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* Start no worker here until CREATE EXTENSION asks for one. */
void
registry_mark_absent(void)
{
	DbEntry    *e;

	if (wshared == NULL)
		return;
	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	e = registry_entry(MyDatabaseId, false);
	if (e)
		e->absent = true;
	LWLockRelease(wshared->lock);
}

/* The launcher enters the registry (and leaves it when it exits). */
void
registry_launcher_started(void)
{
	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	wshared->launcher_pid = MyProcPid;
	wshared->launcher_latch = MyLatch;
	LWLockRelease(wshared->lock);
	on_shmem_exit(registry_launcher_detach, (Datum) 0);
}

/*
 * One look of the launcher at the registry, given the databases that exist
 * and allow connections: forget dropped ones, give up starts that never
 * came, and return the worker places (RegistryStart) that need a worker
 * now (a place whose worker exited: restart_delay_ms after it did).
 * *running: how many workers run or start; *pending: a restart waits for
 * its delay.
 */
List *
registry_due(List *dbs, TimestampTz now, int restart_delay_ms, int *running, bool *pending)
{
	List	   *to_start = NIL;
	ListCell   *lc;
	int			i;
	int			l;

	*running = 0;
	*pending = false;
	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	for (i = 0; i < AUTOCDC_MAX_DATABASES; i++)
	{
		DbEntry    *e = &wshared->dbs[i];
		bool		busy = false;

		if (e->dboid == InvalidOid)
			continue;
		for (l = 0; l < REGISTRY_LANES; l++)
		{
			LaneEntry  *le = &e->lanes[l];

			if (le->starting && le->pid == 0 &&
				TimestampDifferenceExceeds(le->start_requested, now, START_TIMEOUT_MS))
			{
				le->starting = false;
				le->exited_at = now;
			}
			if (le->pid != 0 || le->starting)
			{
				(*running)++;
				busy = true;
			}
		}
		if (e->blocker != 0 && !blocker_alive(e->blocker))
			e->blocker = 0;
		if (!busy && !list_member_oid(dbs, e->dboid) && e->blocker == 0)
			e->dboid = InvalidOid;	/* dropped, or no longer served */
	}
	foreach(lc, dbs)
	{
		Oid			dboid = lfirst_oid(lc);
		DbEntry    *e = registry_entry(dboid, true);

		if (e == NULL || e->absent || e->blocker != 0)
			continue;
		for (l = 0; l < REGISTRY_LANES; l++)
		{
			LaneEntry  *le = &e->lanes[l];
			RegistryStart *rs;

			if (le->pid != 0 || le->starting || (l > 0 && !e->laggards))
				continue;
			if (le->exited_at != 0 &&
				!TimestampDifferenceExceeds(le->exited_at, now, restart_delay_ms))
			{
				*pending = true;
				continue;
			}
			rs = palloc(sizeof(RegistryStart));
			rs->dboid = dboid;
			rs->lane = l;
			to_start = lappend(to_start, rs);
		}
	}
	LWLockRelease(wshared->lock);
	return to_start;
}

/* The launcher registered a worker for a database's lane. */
void
registry_starting(Oid dboid, int lane, TimestampTz now)
{
	DbEntry    *e;

	LWLockAcquire(wshared->lock, LW_EXCLUSIVE);
	e = registry_entry(dboid, false);
	if (e)
	{
		e->lanes[lane].starting = true;
		e->lanes[lane].start_requested = now;
	}
	LWLockRelease(wshared->lock);
}

/* Hooks of every backend: wake at commit, step aside for DDL. */
void
registry_init(void)
{
	RegisterXactCallback(registry_xact_callback, NULL);
}
