/*-------------------------------------------------------------------------
 *
 * autocdc.c
 *		Module entry: _PG_init, the server checks done by CREATE EXTENSION,
 *		and the shared-memory list of failed runs.
 *
 * A failed run aborts the caller's transaction, so its error cannot be
 * written to autocdc.flow_runs by the failing transaction.  It is kept in a
 * small shared-memory ring instead (shown by autocdc.flows at once) and
 * written to the catalog by the next transaction that runs a flow of the
 * same database; the entry leaves shared memory when that transaction
 * commits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/objectaddress.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_publication.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "catalog/pg_authid.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "autocdc.h"
#include "compat.h"

PG_MODULE_MAGIC;

#define PENDING_ERRORS 64
#define PENDING_MSG_LEN 2048

/*
 * A failed run not yet written to the catalog.  The flow is named by its id
 * (autocdc.flow.id): names can be long and alike, ids are exact.
 */
typedef struct PendingError
{
	uint64		id;				/* 0: free */
	Oid			dboid;
	int32		flow_id;
	TimestampTz at;
	char		message[PENDING_MSG_LEN];	/* cut at a character boundary */
} PendingError;

typedef struct AutocdcShared
{
	LWLock	   *lock;
	uint64		next_id;
	PendingError errors[PENDING_ERRORS];
} AutocdcShared;

bool		autocdc_preloaded = false;
int			autocdc_decoding_work_mem = 256 * 1024;	/* kB */
int			autocdc_work_mem = 128 * 1024;	/* kB */

static AutocdcShared *shared = NULL;
/* entries written to the catalog by this transaction, with their subxact */
typedef struct PersistedId
{
	uint64		id;
	SubTransactionId subid;
} PersistedId;

static List *persisted_ids = NIL;
static bool xact_callback_registered = false;

#if PG_VERSION_NUM >= 150000
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

void		_PG_init(void);

PG_FUNCTION_INFO_V1(autocdc_check_server);
PG_FUNCTION_INFO_V1(autocdc_pending_errors);
PG_FUNCTION_INFO_V1(autocdc_pending_flow_errors);
PG_FUNCTION_INFO_V1(autocdc_claim_publication);

/* Ask for the shared memory and the lock of the error ring. */
static void
autocdc_shmem_request(void)
{
#if PG_VERSION_NUM >= 150000
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
#endif
	RequestAddinShmemSpace(MAXALIGN(sizeof(AutocdcShared)));
	RequestAddinShmemSpace(worker_shmem_size());
	RequestNamedLWLockTranche("autocdc", 2);
}

/* Create or attach the shared state. */
static void
autocdc_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("autocdc", sizeof(AutocdcShared), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(AutocdcShared));
		shared->lock = &(GetNamedLWLockTranche("autocdc"))->lock;
		shared->next_id = 1;
	}
	worker_shmem_init(&(GetNamedLWLockTranche("autocdc"))[1].lock);
	LWLockRelease(AddinShmemInitLock);
}

/* Module load: remember whether we were preloaded and set up shared memory. */
void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	autocdc_preloaded = true;
#if PG_VERSION_NUM >= 150000
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = autocdc_shmem_request;
#else
	autocdc_shmem_request();
#endif
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = autocdc_shmem_startup;
	DefineCustomIntVariable("autocdc.decoding_work_mem",
							"Memory a run may use to decode transactions before spilling them to disk.",
							"Sets logical_decoding_work_mem while a run decodes its source.",
							&autocdc_decoding_work_mem, 256 * 1024, 64, MAX_KILOBYTES,
							PGC_USERSET, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.work_mem",
							"Memory a run may use for its batches and sorts before spilling to disk.",
							"Sets work_mem while a run applies a flow.",
							&autocdc_work_mem, 128 * 1024, 64, MAX_KILOBYTES,
							PGC_USERSET, GUC_UNIT_KB, NULL, NULL, NULL);
	worker_init();
	guard_init();
	MarkGUCPrefixReserved("autocdc");
}

/*
 * autocdc._check_server(): refuse CREATE EXTENSION on a server that cannot
 * run flows.
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
 * The version of autocdc installed in this database (palloc'd), or NULL
 * when it is not installed.
 */
char *
autocdc_installed_version(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *result = NULL;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("autocdc"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			result = TextDatumGetCString(d);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

/*
 * Refuse to act on flows while this database's catalog is at another
 * version than the library (after a library upgrade, before ALTER
 * EXTENSION autocdc UPDATE).
 */
void
autocdc_require_current_catalog(void)
{
	char	   *installed = autocdc_installed_version();

	if (installed != NULL && strcmp(installed, AUTOCDC_VERSION) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("autocdc %s is installed in this database, but the server runs the autocdc %s library",
						installed, AUTOCDC_VERSION),
				 errdetail("No flow is applied, created or changed until the extension is updated."),
				 errhint("Run ALTER EXTENSION autocdc UPDATE.")));
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

/* Forget the entries this transaction persisted, once it has committed. */
static void
pending_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	if (event == XACT_EVENT_COMMIT && persisted_ids != NIL && shared)
	{
		LWLockAcquire(shared->lock, LW_EXCLUSIVE);
		foreach(lc, persisted_ids)
		{
			uint64		id = ((PersistedId *) lfirst(lc))->id;
			int			i;

			for (i = 0; i < PENDING_ERRORS; i++)
				if (shared->errors[i].id == id)
					shared->errors[i].id = 0;
		}
		LWLockRelease(shared->lock);
	}
	/* the list lives in TopMemoryContext */
	list_free_deep(persisted_ids);
	persisted_ids = NIL;
}

/*
 * A subtransaction that wrote entries aborted: they are pending again.  One
 * that committed hands them to its parent.
 */
static void
pending_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	foreach(lc, persisted_ids)
	{
		PersistedId *p = lfirst(lc);

		if (p->subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_ABORT_SUB)
		{
			persisted_ids = foreach_delete_current(persisted_ids, lc);
			pfree(p);
		}
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
			p->subid = parentSubid;
	}
}

/*
 * Keep the error of a failed run of a flow (by its id) until it can be
 * written down.  A long message is cut at a character boundary, so what is
 * stored is always valid in the server encoding.
 */
void
autocdc_record_error(int32 flow_id, const char *message)
{
	int			i,
				victim = 0;
	TimestampTz oldest = DT_NOEND;
	int			len;

	if (!shared || flow_id <= 0)
		return;
	len = pg_mbcliplen(message, strlen(message), PENDING_MSG_LEN - 1);
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < PENDING_ERRORS; i++)
	{
		PendingError *e = &shared->errors[i];

		if (e->id == 0)
		{
			victim = i;
			break;
		}
		if (e->at < oldest)
		{
			oldest = e->at;
			victim = i;
		}
	}
	shared->errors[victim].id = shared->next_id++;
	shared->errors[victim].dboid = MyDatabaseId;
	shared->errors[victim].flow_id = flow_id;
	shared->errors[victim].at = GetCurrentTimestamp();
	memcpy(shared->errors[victim].message, message, len);
	shared->errors[victim].message[len] = '\0';
	LWLockRelease(shared->lock);
}

/*
 * Write the failed runs of this database kept in shared memory into
 * autocdc.flow_runs and autocdc.flow_state (SPI must be connected, as a user
 * that may write the catalog).
 */
void
autocdc_persist_errors(void)
{
	PendingError copy[PENDING_ERRORS];
	int			n = 0,
				i;

	if (!shared)
		return;
	LWLockAcquire(shared->lock, LW_SHARED);
	for (i = 0; i < PENDING_ERRORS; i++)
		if (shared->errors[i].id != 0 && shared->errors[i].dboid == MyDatabaseId)
			copy[n++] = shared->errors[i];
	LWLockRelease(shared->lock);

	for (i = 0; i < n; i++)
	{
		Datum		args[3];
		Oid			types[3] = {INT4OID, TEXTOID, TIMESTAMPTZOID};
		MemoryContext old;
		PersistedId *idp;
		ListCell   *lc;
		bool		seen = false;

		foreach(lc, persisted_ids)
			if (((PersistedId *) lfirst(lc))->id == copy[i].id)
				seen = true;
		if (seen)
			continue;

		args[0] = Int32GetDatum(copy[i].flow_id);
		args[1] = CStringGetTextDatum(copy[i].message);
		args[2] = TimestampTzGetDatum(copy[i].at);
		if (SPI_execute_with_args(
								  "INSERT INTO autocdc.flow_run_log (flow, flow_id, started_at, finished_at, status, error) "
								  "SELECT f.name, f.id, $3, $3, 'error', $2 FROM autocdc.flow f "
								  "WHERE f.id OPERATOR(pg_catalog.=) $1",
								  3, types, args, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not record a failed run");
		if (SPI_execute_with_args(
								  "UPDATE autocdc.flow_state s SET last_error = $2, last_error_at = $3, "
								  "retries = s.retries OPERATOR(pg_catalog.+) 1, "
								  "retry_at = $3 OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => "
								  "pg_catalog.power(2, least(s.retries, 8))) "
								  "FROM autocdc.flow f WHERE f.id OPERATOR(pg_catalog.=) $1 "
								  "AND s.name OPERATOR(pg_catalog.=) f.name",
								  3, types, args, NULL, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not record a failed run");

		if (!xact_callback_registered)
		{
			RegisterXactCallback(pending_xact_callback, NULL);
			RegisterSubXactCallback(pending_subxact_callback, NULL);
			xact_callback_registered = true;
		}
		old = MemoryContextSwitchTo(TopMemoryContext);
		idp = palloc(sizeof(PersistedId));
		idp->id = copy[i].id;
		idp->subid = GetCurrentSubTransactionId();
		persisted_ids = lappend(persisted_ids, idp);
		MemoryContextSwitchTo(old);
	}
}

/*
 * autocdc_internal._pending_errors() of autocdc 0.1 (flows by name).  That catalog
 * is never applied by this library (see autocdc_require_current_catalog),
 * so none of its flows has a pending error: its views keep working until
 * ALTER EXTENSION UPDATE.
 */
Datum
autocdc_pending_errors(PG_FUNCTION_ARGS)
{
	InitMaterializedSRF(fcinfo, 0);
	return (Datum) 0;
}

/*
 * autocdc_internal._pending_errors(): the failed runs of this database not
 * yet written to the catalog (flow id, message, time).  Errors can quote
 * source values, so each role sees those of the flows it may act for (and
 * members of pg_read_all_stats see all).
 */
Datum
autocdc_pending_flow_errors(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PendingError *copy;
	int			n = 0,
				i;
	bool		see_all = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);

	InitMaterializedSRF(fcinfo, 0);
	if (!shared)
		return (Datum) 0;
	copy = palloc(sizeof(PendingError) * PENDING_ERRORS);
	LWLockAcquire(shared->lock, LW_SHARED);
	for (i = 0; i < PENDING_ERRORS; i++)
		if (shared->errors[i].id != 0 && shared->errors[i].dboid == MyDatabaseId)
			copy[n++] = shared->errors[i];
	LWLockRelease(shared->lock);

	if (!see_all && n > 0 && SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	for (i = 0; i < n; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		if (!see_all)
		{
			Datum		arg = Int32GetDatum(copy[i].flow_id);
			Oid			argtype = INT4OID;
			Oid			saved_uid;
			int			saved_sec;
			bool		isnull;
			bool		visible = false;

			become_superuser(&saved_uid, &saved_sec);
			if (SPI_execute_with_args("SELECT owner::pg_catalog.oid FROM autocdc.flow "
									  "WHERE id OPERATOR(pg_catalog.=) $1",
									  1, &argtype, &arg, NULL, true, 1) != SPI_OK_SELECT)
				elog(ERROR, "could not read flow owner");
			restore_user(saved_uid, saved_sec);
			if (SPI_processed > 0)
				visible = has_privs_of_role(GetUserId(),
											DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
																		   SPI_tuptable->tupdesc,
																		   1, &isnull)));
			if (!visible)
				continue;
		}
		values[0] = Int32GetDatum(copy[i].flow_id);
		values[1] = CStringGetTextDatum(copy[i].message);
		values[2] = TimestampTzGetDatum(copy[i].at);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	if (!see_all && n > 0)
		SPI_finish();
	return (Datum) 0;
}
