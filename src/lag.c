/*-------------------------------------------------------------------------
 *
 * lag.c
 *		What the last decoding for each flow left pending (store layer),
 *		for autocdc.flows.lag_time.
 *
 * A run or a worker pass that decoded for a flow notes, per flow: when its
 * decoding fixed the end it read up to, the source's count of inserted rows
 * (cumulative statistics) taken just before, the commit time of the oldest
 * transaction it saw and did not apply (a failed, expired or deferred
 * apply), and whether it stopped before the end.  The notes are published
 * in shared memory when the noting transaction commits (what it applied is
 * visible then), so that autocdc.flows can tell "nothing pending" — nothing
 * seen and left, and the source's count unchanged since — from a lag,
 * without writing the catalog on every idle pass.  Shared memory holds a
 * fixed number of notes; when it is full the oldest note makes room.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "lag.h"

#define LAG_ENTRIES 4096

/* A flow of a database. */
typedef struct LagKey
{
	Oid			dboid;
	int32		flow_id;
} LagKey;

typedef struct LagEntry
{
	LagKey		key;
	LagNote		note;
} LagEntry;

/* a note of this transaction, published when it commits */
typedef struct PendingNote
{
	LagEntry	entry;
	SubTransactionId subid;
} PendingNote;

static LWLock *lag_lock = NULL;
static HTAB *lag_hash = NULL;
static List *pending_notes = NIL;
static bool callbacks_registered = false;

/* Shared memory the notes need. */
Size
lag_shmem_size(void)
{
	return hash_estimate_size(LAG_ENTRIES, sizeof(LagEntry));
}

/* Create or attach the notes (called under AddinShmemInitLock). */
void
lag_shmem_init(LWLock *lock)
{
	HASHCTL		info;

	info.keysize = sizeof(LagKey);
	info.entrysize = sizeof(LagEntry);
	lag_lock = lock;
	lag_hash = compat_ShmemInitHash("autocdc lag notes", LAG_ENTRIES, LAG_ENTRIES, &info,
							 HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
}

/*
 * Rows inserted, updated or deleted in a source so far, by the cumulative
 * statistics (the leaves of a partitioned one; the table itself otherwise,
 * as feeds are read without their inheritance children), with what this
 * backend committed and has not flushed yet.  Other backends' statistics
 * reach shared memory about a second after their commits, and count
 * aborted changes too: the count tells that something may have been
 * committed since, never what.
 */
int64
lag_source_changes(Oid relid)
{
	List	   *rels;
	ListCell   *lc;
	int64		n = 0;

	if (get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
		rels = find_all_inheritors(relid, NoLock, NULL);
	else
		rels = list_make1_oid(relid);
	foreach(lc, rels)
	{
		PgStat_StatTabEntry *tab = pgstat_fetch_stat_tabentry(lfirst_oid(lc));

		if (tab != NULL)
			n += tab->tuples_inserted + tab->tuples_updated + tab->tuples_deleted;
		/* this backend's own, not flushed yet: a run after a change sees it */
		n += compat_unflushed_changes(lfirst_oid(lc));
	}
	list_free(rels);
	return n;
}

/* Publish this transaction's notes once it has committed; drop them if not. */
static void
lag_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	if (event == XACT_EVENT_COMMIT && pending_notes != NIL && lag_hash != NULL)
	{
		LWLockAcquire(lag_lock, LW_EXCLUSIVE);
		foreach(lc, pending_notes)
		{
			PendingNote *p = lfirst(lc);
			LagEntry   *e = hash_search(lag_hash, &p->entry.key, HASH_ENTER_NULL, NULL);

			if (e == NULL)
			{
				/* full: the oldest note (likely of a dropped flow) makes room */
				HASH_SEQ_STATUS seq;
				LagEntry   *oldest = NULL,
						   *x;

				hash_seq_init(&seq, lag_hash);
				while ((x = hash_seq_search(&seq)) != NULL)
					if (oldest == NULL || x->note.decoded_at < oldest->note.decoded_at)
						oldest = x;
				if (oldest != NULL)
					(void) hash_search(lag_hash, &oldest->key, HASH_REMOVE, NULL);
				e = hash_search(lag_hash, &p->entry.key, HASH_ENTER_NULL, NULL);
			}
			if (e != NULL)
				e->note = p->entry.note;
		}
		LWLockRelease(lag_lock);
	}
	list_free_deep(pending_notes);
	pending_notes = NIL;
}

/* A subtransaction's notes go with it, or to its parent. */
static void
lag_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	foreach(lc, pending_notes)
	{
		PendingNote *p = lfirst(lc);

		if (p->subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_ABORT_SUB)
		{
			pending_notes = foreach_delete_current(pending_notes, lc);
			pfree(p);
		}
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
			p->subid = parentSubid;
	}
}

/*
 * Note how the current transaction's decoding left a flow (published if it
 * commits; a later note of the same flow wins).
 */
void
lag_note(int32 flow_id, const LagNote *note)
{
	MemoryContext old;
	PendingNote *p;

	if (lag_hash == NULL || flow_id <= 0)
		return;
	if (!callbacks_registered)
	{
		RegisterXactCallback(lag_xact_callback, NULL);
		RegisterSubXactCallback(lag_subxact_callback, NULL);
		callbacks_registered = true;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	p = palloc0(sizeof(PendingNote));
	p->entry.key.dboid = MyDatabaseId;
	p->entry.key.flow_id = flow_id;
	p->entry.note = *note;
	p->subid = GetCurrentSubTransactionId();
	pending_notes = lappend(pending_notes, p);
	MemoryContextSwitchTo(old);
}

PG_FUNCTION_INFO_V1(autocdc_lag_notes);
PG_FUNCTION_INFO_V1(autocdc_source_changes);

/*
 * autocdc_internal._lag_notes(): the published notes of this database's
 * flows (flow id, decoded_at, changes, pending_since, cut).
 */
Datum
autocdc_lag_notes(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS seq;
	LagEntry   *e;
	List	   *copies = NIL;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	if (lag_hash == NULL)
		return (Datum) 0;
	LWLockAcquire(lag_lock, LW_SHARED);
	hash_seq_init(&seq, lag_hash);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (e->key.dboid == MyDatabaseId)
		{
			LagEntry   *c = palloc(sizeof(LagEntry));

			*c = *e;
			copies = lappend(copies, c);
		}
	LWLockRelease(lag_lock);
	foreach(lc, copies)
	{
		LagEntry   *c = lfirst(lc);
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};

		values[0] = Int32GetDatum(c->key.flow_id);
		values[1] = TimestampTzGetDatum(c->note.decoded_at);
		values[2] = Int64GetDatum(c->note.stat_changes);
		values[3] = TimestampTzGetDatum(c->note.pending_since);
		nulls[3] = c->note.pending_since == 0;
		values[4] = BoolGetDatum(c->note.cut);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* autocdc_internal._source_changes(relid): lag_source_changes() for the view. */
Datum
autocdc_source_changes(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(lag_source_changes(PG_GETARG_OID(0)));
}
