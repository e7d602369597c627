/*-------------------------------------------------------------------------
 *
 * failures.c
 *		Failed runs kept in shared memory until they can be written down.
 *
 * A failed run aborts the caller's transaction, so its error cannot be
 * written to autocdc.flow_runs by the failing transaction.  It is kept in a
 * small shared-memory ring instead (autocdc.flows shows it at once) and
 * written to the catalog by the next transaction that runs a flow of the
 * same database; the entry leaves shared memory when that transaction
 * commits.  The whole error is kept: message, detail, hint, SQLSTATE, and
 * the commit position of the event that failed when there is one (what
 * skip_events passes).  Flows are named by id, and texts cut at a
 * character boundary.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/pg_lsn.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "catalog.h"
#include "failures.h"
#include "schedule.h"
#include "util.h"

#define PENDING_ERRORS 64
#define PENDING_MSG_LEN 2048
#define PENDING_NOTE_LEN 1024

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
	int			sqlerrcode;
	XLogRecPtr	lsn;			/* commit of the failing event, or invalid */
	bool		resync;			/* the flow needs a resync (full_refresh) */
	char		message[PENDING_MSG_LEN];	/* cut at a character boundary */
	char		detail[PENDING_NOTE_LEN];	/* "": none */
	char		hint[PENDING_NOTE_LEN]; /* "": none */
} PendingError;

typedef struct FailureRing
{
	LWLock	   *lock;
	uint64		next_id;
	PendingError errors[PENDING_ERRORS];
} FailureRing;

static FailureRing *shared = NULL;
/* entries written to the catalog by this transaction, with their subxact */
typedef struct PersistedId
{
	uint64		id;
	SubTransactionId subid;
} PersistedId;

static List *persisted_ids = NIL;
static bool xact_callback_registered = false;

/* the commit position of the event the running flow is failing on */
static XLogRecPtr failing_lsn = InvalidXLogRecPtr;
static int32 failing_resync = 0;

/* Shared memory the ring needs. */
Size
failures_shmem_size(void)
{
	return MAXALIGN(sizeof(FailureRing));
}

/* Create or attach the ring (called under AddinShmemInitLock). */
void
failures_shmem_init(LWLock *lock)
{
	bool		found;

	shared = ShmemInitStruct("autocdc failed runs", sizeof(FailureRing), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(FailureRing));
		shared->lock = lock;
		shared->next_id = 1;
	}
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
 * Name the commit position of the event about to fail the running flow
 * (InvalidXLogRecPtr: none); the next failures_record() stores it.
 */
void
failures_note_lsn(XLogRecPtr lsn)
{
	failing_lsn = lsn;
}

/*
 * Note that the error about to be raised means that the source changes of
 * the flow (by id; 0: none) can no longer be told: it then needs a resync,
 * and retrying is no use.  Taken by the next failures_record, for that
 * flow only (a run of several flows records its failure under the one it
 * was asked for).
 */
void
failures_note_resync(int32 flow_id)
{
	failing_resync = flow_id;
}

/*
 * Keep the error of a failed run of a flow (by its id) until it can be
 * written down.  Long texts are cut at a character boundary, so what is
 * stored is always valid in the server encoding.
 */
void
failures_record(int32 flow_id, ErrorData *edata)
{
	int			i,
				victim = 0;
	TimestampTz oldest = DT_NOEND;
	PendingError *e;
	XLogRecPtr	lsn = failing_lsn;
	bool		resync = failing_resync != 0 && failing_resync == flow_id;

	failing_lsn = InvalidXLogRecPtr;
	failing_resync = 0;
	if (!shared || flow_id <= 0)
		return;
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < PENDING_ERRORS; i++)
	{
		e = &shared->errors[i];
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
	e = &shared->errors[victim];
	e->id = shared->next_id++;
	e->dboid = MyDatabaseId;
	e->flow_id = flow_id;
	e->at = GetCurrentTimestamp();
	e->sqlerrcode = edata->sqlerrcode;
	e->lsn = lsn;
	e->resync = resync;
	copy_clipped(e->message, edata->message, PENDING_MSG_LEN);
	copy_clipped(e->detail, edata->detail, PENDING_NOTE_LEN);
	copy_clipped(e->hint, edata->hint, PENDING_NOTE_LEN);
	LWLockRelease(shared->lock);
}

/* The catalog's record of a pending error. */
static FlowFailure
failure_of(PendingError *e)
{
	FlowFailure f;

	f.message = e->message;
	f.detail = e->detail[0] ? e->detail : NULL;
	f.hint = e->hint[0] ? e->hint : NULL;
	strlcpy(f.sqlstate, unpack_sql_state(e->sqlerrcode), sizeof(f.sqlstate));
	f.lsn = e->lsn;
	f.resync = e->resync;
	f.at = e->at;
	f.retry_at = 0;				/* decided when it is written down */
	return f;
}

/*
 * Write the failed runs of this database kept in shared memory into
 * autocdc.flow_runs and autocdc.flow_state (SPI must be connected, as a user
 * that may write the catalog).
 */
void
failures_persist(void)
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
		MemoryContext old;
		PersistedId *idp;
		ListCell   *lc;
		bool		seen = false;
		FlowFailure failure;

		foreach(lc, persisted_ids)
			if (((PersistedId *) lfirst(lc))->id == copy[i].id)
				seen = true;
		if (seen)
			continue;

		failure = failure_of(&copy[i]);
		schedule_record_failure(copy[i].flow_id, &failure);

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
PG_FUNCTION_INFO_V1(autocdc_pending_errors);
PG_FUNCTION_INFO_V1(autocdc_pending_flow_errors);

Datum
autocdc_pending_errors(PG_FUNCTION_ARGS)
{
	InitMaterializedSRF(fcinfo, 0);
	return (Datum) 0;
}

/*
 * autocdc_internal._pending_errors(): the failed runs of this database not
 * yet written to the catalog (flow id, message, time, detail, hint,
 * SQLSTATE, the failing event's commit position).  Errors can quote
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
		Datum		values[8];
		bool		nulls[8] = {false, false, false, false, false, false, false, false};

		if (!see_all)
		{
			Oid			owner = catalog_flow_owner(copy[i].flow_id);

			if (!OidIsValid(owner) || !has_privs_of_role(GetUserId(), owner))
				continue;
		}
		values[0] = Int32GetDatum(copy[i].flow_id);
		values[1] = CStringGetTextDatum(copy[i].message);
		values[2] = TimestampTzGetDatum(copy[i].at);
		values[3] = CStringGetTextDatum(copy[i].detail);
		nulls[3] = copy[i].detail[0] == '\0';
		values[4] = CStringGetTextDatum(copy[i].hint);
		nulls[4] = copy[i].hint[0] == '\0';
		values[5] = CStringGetTextDatum(unpack_sql_state(copy[i].sqlerrcode));
		values[6] = LSNGetDatum(copy[i].lsn);
		nulls[6] = XLogRecPtrIsInvalid(copy[i].lsn);
		values[7] = BoolGetDatum(copy[i].resync);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	if (!see_all && n > 0)
		SPI_finish();
	return (Datum) 0;
}
