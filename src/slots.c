/*-------------------------------------------------------------------------
 *
 * slots.c
 *		The database's replication slots (engine layer): the main slot, from
 *		which the up-to-date flows are decoded, and the laggard slot, always
 *		a copy of the main one, for flows that are paused, failing, slow or
 *		far behind, so that they pin no WAL of the main slot.
 *
 * Slot names carry the extension's OID and the database's tablespace (see
 * slot_prefix) and a creation time in hex; a laggard slot's time is
 * preceded by "l".  Which slot serves a flow is the slot_name recorded with
 * its progress.  A laggard slot is only ever made by copying the main slot
 * (restart point, confirmed position and catalog_xmin), so it can serve
 * every flow whose progress is at or after the main slot's confirmed
 * position.  Moving flows between the slots, creating and dropping laggard
 * slots happen under the moves lock (exclusive, to the end of the moving
 * transaction); confirming a slot holds it shared from reading the oldest
 * progress of its flows to the confirmation, so that no slot is confirmed
 * past a flow that is moving onto it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlogutils.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "replication/logical.h"
#include "replication/slot.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/standby.h"
#include "utils/builtins.h"
#include "utils/pg_lsn.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "compat.h"
#include "layout.h"
#include "slots.h"
#include "util.h"

PG_FUNCTION_INFO_V1(autocdc_slot_info);
PG_FUNCTION_INFO_V1(autocdc_slots);

/*
 * Prefix of this database's slot names for the installed extension and the
 * database's current tablespace.  WAL written before ALTER DATABASE SET
 * TABLESPACE cannot be decoded after it (PostgreSQL maps the relation files
 * it names through the database's new tablespace), so a moved database
 * gets a new slot and its flows a resync, instead of a decoding error.
 */
static char *
slot_prefix(void)
{
	return psprintf("autocdc_%u_%u_", get_extension_oid("autocdc", false),
					MyDatabaseTableSpace);
}

/*
 * Is s a slot of autocdc's in this database (of any prefix: also one left
 * from before a tablespace move)?  Under ReplicationSlotControlLock.
 */
static bool
is_autocdc_slot(ReplicationSlot *s)
{
	return s->in_use && s->data.database == MyDatabaseId &&
		strncmp(NameStr(s->data.name), "autocdc_", 8) == 0;
}

/* How the names of this database's laggard slots begin. */
char *
slots_laggard_prefix(void)
{
	return psprintf("%sl", slot_prefix());
}

/* Is name a laggard slot's name (of this database's prefix)? */
bool
slots_is_laggard(const char *name)
{
	char	   *prefix = slot_prefix();

	return name != NULL && strncmp(name, prefix, strlen(prefix)) == 0 &&
		name[strlen(prefix)] == 'l';
}

/*
 * The name of the database's current main slot, or NULL.  Every slot gets a new
 * name when it is created, and flows remember the slot their progress
 * belongs to: progress recorded on another slot (dropped, lost, restored
 * cluster) cannot be served, and the flow needs a resync.
 */
char *
slots_main_name(void)
{
	char	   *prefix = slot_prefix();
	char	   *result = NULL;
	int			i;

	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	for (i = 0; i < max_replication_slots; i++)
	{
		ReplicationSlot *s = &ReplicationSlotCtl->replication_slots[i];

		if (s->in_use && s->data.database == MyDatabaseId &&
			strncmp(NameStr(s->data.name), prefix, strlen(prefix)) == 0 &&
			NameStr(s->data.name)[strlen(prefix)] != 'l')
		{
			bool		persistent;

			/*
			 * A slot still being created (by source_ensure_slot, under the
			 * slot lock) is not there yet: its creator waits for the
			 * transactions running at that moment, so a transaction that took
			 * it for ready, got an xid and then waited to acquire it would
			 * wait forever, unseen by the deadlock detector.
			 */
			SpinLockAcquire(&s->mutex);
			persistent = s->data.persistency == RS_PERSISTENT;
			SpinLockRelease(&s->mutex);
			if (persistent)
				result = pstrdup(NameStr(s->data.name));
		}
	}
	LWLockRelease(ReplicationSlotControlLock);
	return result;
}

/* Has a slot been invalidated (its WAL removed, max_slot_wal_keep_size, or another cause)? */
bool
slots_invalidated(const char *name)
{
	ReplicationSlot *s = SearchNamedReplicationSlot(name, true);
	bool		result = false;

	if (s != NULL)
	{
		SpinLockAcquire(&s->mutex);
		result = compat_slot_invalidated(s);
		SpinLockRelease(&s->mutex);
	}
	return result;
}

/* Lock tag serializing slot creation in this database. */
static void
slot_lock_tag(LOCKTAG *tag)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, 0, 0, AUTOCDC_LOCK_SLOT);
}

/*
 * Drop the inactive autocdc slots of this database (only laggard ones with
 * laggards_only) other than keep.
 */
static void
drop_inactive_slots(bool laggards_only, const char *keep)
{
	List	   *names = NIL;
	ListCell   *lc;
	int			i;

	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	for (i = 0; i < max_replication_slots; i++)
	{
		ReplicationSlot *s = &ReplicationSlotCtl->replication_slots[i];
		const char *name = NameStr(s->data.name);

		if (is_autocdc_slot(s) && !compat_slot_active(s) &&
			(!laggards_only || slots_is_laggard(name)) &&
			(keep == NULL || strcmp(name, keep) != 0))
			names = lappend(names, pstrdup(name));
	}
	LWLockRelease(ReplicationSlotControlLock);
	foreach(lc, names)
		ReplicationSlotDrop(lfirst(lc), true);
}

/*
 * Drop the database's autocdc slots (the worker does, once no flow needs
 * them); one in use stays for a later attempt.
 */
void
slots_drop_all(void)
{
	drop_inactive_slots(false, NULL);
}

/*
 * Make sure the database's main slot exists (dropping every other: a new
 * main slot serves none of the old progress, and flows resync).  Creating it is only possible in a
 * transaction that has not written (PostgreSQL's rule), and waits for the
 * transactions running at that moment.
 */
void
slots_ensure_main(void)
{
	char	   *name = slots_main_name();
	LOCKTAG		tag;

	if (name != NULL && !slots_invalidated(name))
		return;
	if (TransactionIdIsValid(GetTopTransactionIdIfAny()))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the replication slot of autocdc %s",
						name ? "was invalidated and must be created again" : "does not exist yet"),
				 errhint("The run that creates it must not follow writes in the same transaction: run autocdc.run_flow() in a transaction of its own.")));
	compat_CheckLogicalDecodingRequirements();

	slot_lock_tag(&tag);
	(void) LockAcquire(&tag, ExclusiveLock, true, false);
	PG_TRY();
	{
		name = slots_main_name();
		if (name == NULL || slots_invalidated(name))
		{
			LogicalDecodingContext *ctx;

			drop_inactive_slots(false, NULL);
			name = psprintf("%s%lx", slot_prefix(), (unsigned long) GetCurrentTimestamp());
			compat_ReplicationSlotCreate(name, true, RS_EPHEMERAL, false);
			ctx = compat_CreateInitDecodingContext("pgoutput", NIL, false, InvalidXLogRecPtr,
												   XL_ROUTINE(.page_read = read_local_xlog_page,
															  .segment_open = wal_segment_open,
															  .segment_close = wal_segment_close),
												   NULL, NULL, NULL);
			DecodingContextFindStartpoint(ctx);
			FreeDecodingContext(ctx);
			ReplicationSlotPersist();
			ReplicationSlotRelease();
		}
	}
	PG_FINALLY();
	{
		LockRelease(&tag, ExclusiveLock, true);
	}
	PG_END_TRY();
}

/* Lock tag of moves between the slots in this database. */
static void
moves_lock_tag(LOCKTAG *tag)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, 0, 0, AUTOCDC_LOCK_MOVES);
}

/*
 * Take the moves lock exclusively to the end of the transaction: no slot is
 * confirmed meanwhile, and no other process moves flows.
 */
void
slots_lock_moves(void)
{
	LOCKTAG		tag;

	moves_lock_tag(&tag);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * Confirm the slot this process holds up to the oldest committed progress
 * of its flows, once the commits that recorded it are flushed; under the
 * moves lock (shared), with the flows as committed when it is granted.
 *
 * The lock is only tried: a run_flow that moves flows holds it to the end
 * of its transaction and may then wait for the slot this process holds, a
 * wait the deadlock detector does not see.  When it is busy, the slot is
 * not confirmed this time (that only keeps its WAL a little longer); a
 * later run or pass confirms it.
 */
void
slots_confirm_held(void)
{
	XLogRecPtr	oldest;
	LOCKTAG		tag;
	bool		found;

	moves_lock_tag(&tag);
	if (LockAcquire(&tag, ShareLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
		return;
	PG_TRY();
	{
		found = catalog_oldest_progress(NameStr(MyReplicationSlot->data.name), &oldest);
		if (found)
		{
			XLogFlush(compat_GetXLogInsertEndRecPtr());
			if (oldest > MyReplicationSlot->data.confirmed_flush)
			{
				LogicalConfirmReceivedLocation(oldest);
				ReplicationSlotMarkDirty();
			}
		}
	}
	PG_FINALLY();
	{
		LockRelease(&tag, ShareLock, true);
	}
	PG_END_TRY();
}

/* A slot's confirmed position and restart point; false if it is not there. */
bool
slots_positions(const char *name, XLogRecPtr *confirmed, XLogRecPtr *restart)
{
	ReplicationSlot *s;
	bool		found = false;

	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	s = SearchNamedReplicationSlot(name, false);
	if (s != NULL)
	{
		SpinLockAcquire(&s->mutex);
		if (!XLogRecPtrIsInvalid(s->data.restart_lsn))
		{
			*confirmed = s->data.confirmed_flush;
			*restart = s->data.restart_lsn;
			found = true;
		}
		SpinLockRelease(&s->mutex);
	}
	LWLockRelease(ReplicationSlotControlLock);
	return found;
}

/*
 * A new laggard slot, a copy of the main slot.  Copying does not wait for
 * running transactions, but must happen before this transaction writes.
 * The caller holds the moves lock, so the main slot is not confirmed while
 * it is copied.
 */
char *
slots_copy_main(void)
{
	char	   *main = slots_main_name();
	char	   *name;
	Oid			argtypes[2] = {NAMEOID, NAMEOID};
	Datum		args[2];
	Oid			saved_uid;
	int			saved_sec;
	int			rc;

	if (main == NULL)
		return NULL;
	name = psprintf("%sl%lx", slot_prefix(), (unsigned long) GetCurrentTimestamp());
	args[0] = DirectFunctionCall1(namein, CStringGetDatum(main));
	args[1] = DirectFunctionCall1(namein, CStringGetDatum(name));
	/* a built-in function on autocdc's own slot: no user code */
	become_superuser(&saved_uid, &saved_sec);
	rc = SPI_execute_with_args("SELECT pg_catalog.pg_copy_logical_replication_slot($1, $2)",
							   2, argtypes, args, NULL, false, 0);
	restore_user(saved_uid, saved_sec);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not copy replication slot \"%s\" (%d)", main, rc);
	return name;
}

/*
 * Drop the database's inactive laggard slots other than keep (one that is
 * no longer referenced, or a copy whose moving transaction did not commit).
 * The caller holds the moves lock.
 */
void
slots_drop_laggards(const char *keep)
{
	drop_inactive_slots(true, keep);
}

/* How many autocdc slots this database has. */
int
slots_count(void)
{
	int			n = 0;
	int			i;

	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	for (i = 0; i < max_replication_slots; i++)
	{
		ReplicationSlot *s = &ReplicationSlotCtl->replication_slots[i];

		if (is_autocdc_slot(s))
			n++;
	}
	LWLockRelease(ReplicationSlotControlLock);
	return n;
}

/* The laggard slot flows are on, if it exists; otherwise NULL. */
char *
slots_laggard_name(void)
{
	char	   *name = catalog_slot_in_use(slots_laggard_prefix());
	XLogRecPtr	confirmed,
				restart;

	if (name == NULL || !slots_positions(name, &confirmed, &restart))
		return NULL;
	return name;
}

/*
 * The slot a flow is decoded from: the laggard slot its progress belongs
 * to, otherwise the main slot (NULL if there is none).
 */
char *
slots_for_flow(FlowDef *flow)
{
	if (flow->has_progress && slots_is_laggard(flow->slot_name))
		return pstrdup(flow->slot_name);
	return slots_main_name();
}

/*
 * autocdc_internal._slot_info(): the database's slot, or a row of nulls
 * when there is none or it was invalidated (its WAL is gone: it serves no
 * flow and retains nothing).
 */
Datum
autocdc_slot_info(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {true, true, true};
	char	   *name = slots_main_name();
	int			i;

	if (name == NULL)
		name = "";
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	for (i = 0; i < max_replication_slots; i++)
	{
		ReplicationSlot *s = &ReplicationSlotCtl->replication_slots[i];

		if (s->in_use && strcmp(NameStr(s->data.name), name) == 0)
		{
			SpinLockAcquire(&s->mutex);
			if (!XLogRecPtrIsInvalid(s->data.restart_lsn))
			{
				values[0] = DirectFunctionCall1(namein, CStringGetDatum(name));
				values[1] = LSNGetDatum(s->data.confirmed_flush);
				values[2] = LSNGetDatum(s->data.restart_lsn);
				nulls[0] = nulls[1] = nulls[2] = false;
			}
			SpinLockRelease(&s->mutex);
		}
	}
	LWLockRelease(ReplicationSlotControlLock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

/*
 * autocdc_internal._slots(): every autocdc slot of this database that can
 * serve flows (not invalidated), and whether it is a laggard slot.
 */
Datum
autocdc_slots(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	for (i = 0; i < max_replication_slots; i++)
	{
		ReplicationSlot *s = &ReplicationSlotCtl->replication_slots[i];
		Datum		values[4];
		bool		nulls[4] = {false, false, false, false};
		bool		valid;

		if (!is_autocdc_slot(s))
			continue;
		SpinLockAcquire(&s->mutex);
		valid = !XLogRecPtrIsInvalid(s->data.restart_lsn);
		values[0] = DirectFunctionCall1(namein, CStringGetDatum(NameStr(s->data.name)));
		values[1] = LSNGetDatum(s->data.confirmed_flush);
		values[2] = LSNGetDatum(s->data.restart_lsn);
		SpinLockRelease(&s->mutex);
		values[3] = BoolGetDatum(slots_is_laggard(NameStr(s->data.name)));
		if (valid)
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(ReplicationSlotControlLock);
	return (Datum) 0;
}
