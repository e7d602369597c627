/*-------------------------------------------------------------------------
 *
 * autocdc.c
 *		Module entry (entry layer): _PG_init, autocdc's shared memory, and
 *		the functions only the extension's scripts call.
 *
 * The library serves one catalog version (AUTOCDC_VERSION, from
 * autocdc.control).  After a new library is installed and the server
 * restarted, a database still has the old catalog until ALTER EXTENSION
 * autocdc UPDATE runs there; until then nothing is applied there (the
 * functions that act on flows refuse, the worker waits) and the entry points
 * that older scripts declared still exist.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_publication.h"
#include "commands/extension.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "compat.h"
#include "failures.h"
#include "lag.h"
#include "guard.h"
#include "layout.h"
#include "registry.h"
#include "settings.h"
#include "source.h"
#include "worker.h"

PG_MODULE_MAGIC;

/* loaded through shared_preload_libraries (CREATE EXTENSION needs it) */
static bool autocdc_preloaded = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

void		_PG_init(void);

PG_FUNCTION_INFO_V1(autocdc_check_server);
PG_FUNCTION_INFO_V1(autocdc_claim_publication);
PG_FUNCTION_INFO_V1(autocdc_want_worker);
PG_FUNCTION_INFO_V1(autocdc_lock_class);

/* Ask for the shared memory of the failed-run ring and the worker registry. */
static void
autocdc_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(failures_shmem_size());
	RequestAddinShmemSpace(registry_shmem_size());
	RequestAddinShmemSpace(lag_shmem_size());
	RequestNamedLWLockTranche("autocdc", 3);
}

/* Create or attach the shared state. */
static void
autocdc_shmem_startup(void)
{
	LWLockPadded *locks;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	locks = GetNamedLWLockTranche("autocdc");
	failures_shmem_init(&locks[0].lock);
	registry_shmem_init(&locks[1].lock);
	lag_shmem_init(&locks[2].lock);
	LWLockRelease(AddinShmemInitLock);
}

/* Module load: remember that we were preloaded, set up shared memory and hooks. */
void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	autocdc_preloaded = true;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = autocdc_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = autocdc_shmem_startup;
	settings_define();
	registry_init();
	guard_init();
	worker_init();
	source_init();
}

/*
 * autocdc_internal._check_server(): refuse CREATE EXTENSION on a server
 * that cannot run flows.
 */
Datum
autocdc_check_server(PG_FUNCTION_ARGS)
{
	if (!autocdc_preloaded)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("autocdc must be loaded via shared_preload_libraries"),
				 errhint("Add autocdc to shared_preload_libraries in postgresql.conf and restart the server.")));
	if (wal_level < WAL_LEVEL_LOGICAL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("autocdc requires wal_level = logical"),
				 errhint("Set wal_level = logical in postgresql.conf and restart the server.")));
	PG_RETURN_VOID();
}

/*
 * autocdc._claim_publication(): make the capture publication a member of
 * the extension being created, so that pg_dump skips it and DROP EXTENSION
 * removes it.
 */
Datum
autocdc_claim_publication(PG_FUNCTION_ARGS)
{
	ObjectAddress addr;

	if (!creating_extension)
		elog(ERROR, "autocdc._claim_publication() may only run in CREATE EXTENSION");
	ObjectAddressSet(addr, PublicationRelationId,
					 get_publication_oid(AUTOCDC_PUBLICATION, false));
	recordDependencyOnCurrentExtension(&addr, false);
	PG_RETURN_VOID();
}

/*
 * autocdc._want_worker(): called by CREATE EXTENSION; once the transaction
 * commits, the launcher starts the database's worker.
 */
Datum
autocdc_want_worker(PG_FUNCTION_ARGS)
{
	registry_want_worker();
	PG_RETURN_VOID();
}

/*
 * autocdc_internal._lock_class(): the advisory lock class (pg_locks.
 * objsubid) that marks a flow being applied, for the view autocdc.flows.
 */
Datum
autocdc_lock_class(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(AUTOCDC_LOCK_RUNNING);
}
