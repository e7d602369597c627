/*-------------------------------------------------------------------------
 *
 * compat.h
 *		PG_VERSION_NUM shims, kept in one place (PostgreSQL 15 is the
 *		reference; 16 to 19 differ in the replication slot and logical
 *		decoding APIs, relation file identities, ownership and ACL checks,
 *		name parsing, index insertion, replication origins and the headers
 *		they install).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_COMPAT_H
#define AUTOCDC_COMPAT_H

#include "replication/slot.h"
#include "utils/acl.h"

/*
 * Creating and acquiring a replication slot (17 added failover and synced,
 * 18 error_if_invalid, 19 repack), and making a logical decoding context
 * for a new slot, after checking that decoding is possible (19 added
 * repack to both).
 */
#if PG_VERSION_NUM >= 190000
#define compat_ReplicationSlotCreate(name, dbspecific, persistency, twophase) \
	ReplicationSlotCreate((name), (dbspecific), (persistency), (twophase), false, false, false)
#define compat_CheckLogicalDecodingRequirements() CheckLogicalDecodingRequirements(false)
#define compat_CreateInitDecodingContext(plugin, options, full, lsn, routine, prep, write, progress) \
	CreateInitDecodingContext((plugin), (options), (full), false, (lsn), (routine), (prep), (write), (progress))
#elif PG_VERSION_NUM >= 170000
#define compat_ReplicationSlotCreate(name, dbspecific, persistency, twophase) \
	ReplicationSlotCreate((name), (dbspecific), (persistency), (twophase), false, false)
#else
#define compat_ReplicationSlotCreate(name, dbspecific, persistency, twophase) \
	ReplicationSlotCreate((name), (dbspecific), (persistency), (twophase))
#endif
#if PG_VERSION_NUM < 190000
#define compat_CheckLogicalDecodingRequirements() CheckLogicalDecodingRequirements()
#define compat_CreateInitDecodingContext CreateInitDecodingContext
#endif
#if PG_VERSION_NUM >= 180000
#define compat_ReplicationSlotAcquire(name, nowait) \
	ReplicationSlotAcquire((name), (nowait), true)
#else
#define compat_ReplicationSlotAcquire(name, nowait) \
	ReplicationSlotAcquire((name), (nowait))
#endif

/* Is a slot in use by some process (19 records its ProcNumber, not its pid)? */
#if PG_VERSION_NUM >= 190000
#define compat_slot_active(s) ((s)->active_proc != INVALID_PROC_NUMBER)
#else
#define compat_slot_active(s) ((s)->active_pid != 0)
#endif

/* The commit time of a decoded transaction (19 made the union anonymous). */
#if PG_VERSION_NUM >= 190000
#define compat_txn_commit_time(txn) ((txn)->commit_time)
#else
#define compat_txn_commit_time(txn) ((txn)->xact_time.commit_time)
#endif

/* A sequential scan of a table (19 added flags). */
#include "access/tableam.h"
#if PG_VERSION_NUM >= 190000
#define compat_table_beginscan(rel, snap, nkeys, key) \
	table_beginscan((rel), (snap), (nkeys), (key), SO_NONE)
#else
#define compat_table_beginscan(rel, snap, nkeys, key) \
	table_beginscan((rel), (snap), (nkeys), (key))
#endif

/* A hash table in shared memory (19 dropped its initial size). */
#include "storage/shmem.h"
#if PG_VERSION_NUM >= 190000
#define compat_ShmemInitHash(name, init_size, max_size, info, flags) \
	ShmemInitHash((name), (max_size), (info), (flags))
#else
#define compat_ShmemInitHash ShmemInitHash
#endif

/*
 * The end of the WAL inserted so far, safe to flush up to.  Before 17,
 * GetXLogInsertRecPtr() points past the header of a page (or segment) that
 * has not been written yet when the insert position sits on a boundary, and
 * flushing there fails.
 */
#if PG_VERSION_NUM >= 170000
#define compat_GetXLogInsertEndRecPtr() GetXLogInsertEndRecPtr()
#else
#include "access/xlog.h"
#include "access/xlog_internal.h"
static inline XLogRecPtr
compat_GetXLogInsertEndRecPtr(void)
{
	XLogRecPtr	ptr = GetXLogInsertRecPtr();

	if (XLogSegmentOffset(ptr, wal_segment_size) == SizeOfXLogLongPHD)
		ptr -= SizeOfXLogLongPHD;
	else if (ptr % XLOG_BLCKSZ == SizeOfXLogShortPHD)
		ptr -= SizeOfXLogShortPHD;
	return ptr;
}
#endif

/* The new and old tuples of a decoded change (17 dropped ReorderBufferTupleBuf). */
#if PG_VERSION_NUM >= 170000
#define compat_change_newtuple(change) ((change)->data.tp.newtuple)
#define compat_change_oldtuple(change) ((change)->data.tp.oldtuple)
#else
#define compat_change_newtuple(change) \
	((change)->data.tp.newtuple ? &(change)->data.tp.newtuple->tuple : NULL)
#define compat_change_oldtuple(change) \
	((change)->data.tp.oldtuple ? &(change)->data.tp.oldtuple->tuple : NULL)
#endif

/*
 * Index insertion of a new heap tuple (16 added onlySummarizing; 19 took
 * flags instead of the booleans and reordered the arguments).
 */
#if PG_VERSION_NUM >= 190000
#define compat_ExecInsertIndexTuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (estate), 0, (slot), NIL, NULL)
#elif PG_VERSION_NUM >= 160000
#define compat_ExecInsertIndexTuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, false)
#else
#define compat_ExecInsertIndexTuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL)
#endif

/*
 * A replication origin's id, and the origin this session's changes are
 * marked with (19 renamed RepOriginId to ReplOriginId and moved the
 * session's origin into replorigin_xact_state).
 */
#include "replication/origin.h"
#if PG_VERSION_NUM >= 190000
typedef ReplOriginId compat_ReplOriginId;

#define compat_session_origin (replorigin_xact_state.origin)
#else
typedef RepOriginId compat_ReplOriginId;

#define compat_session_origin replorigin_session_origin
#endif

/*
 * A tuple descriptor built entry by entry is finished before use (19
 * caches the attributes' offsets then; before, there is nothing to do).
 */
#include "access/tupdesc.h"
#if PG_VERSION_NUM >= 190000
#define compat_TupleDescFinalize(desc) TupleDescFinalize(desc)
#else
#define compat_TupleDescFinalize(desc) ((void) (desc))
#endif

/*
 * How the server prints an LSN, for messages that name one the way
 * pg_lsn's output does (19 pads the low half to eight digits).
 */
#if PG_VERSION_NUM >= 190000
#define COMPAT_LSN_FORMAT "%X/%08X"
#else
#define COMPAT_LSN_FORMAT "%X/%X"
#endif

/* Ownership and ACL checks (16 made them generic over catalogs). */
#if PG_VERSION_NUM >= 160000
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#define compat_class_ownercheck(relid, roleid) \
	object_ownercheck(RelationRelationId, (relid), (roleid))
#define compat_proc_aclcheck(procid, roleid, mode) \
	object_aclcheck(ProcedureRelationId, (procid), (roleid), (mode))
#define compat_namespace_aclcheck(nspid, roleid, mode) \
	object_aclcheck(NamespaceRelationId, (nspid), (roleid), (mode))
#else
#define compat_class_ownercheck(relid, roleid) pg_class_ownercheck((relid), (roleid))
#define compat_proc_aclcheck(procid, roleid, mode) pg_proc_aclcheck((procid), (roleid), (mode))
#define compat_namespace_aclcheck(nspid, roleid, mode) \
	pg_namespace_aclcheck((nspid), (roleid), (mode))
#endif

/* Parsing a qualified name (16 added soft errors). */
#if PG_VERSION_NUM >= 160000
#define compat_stringToQualifiedNameList(str) stringToQualifiedNameList((str), NULL)
#else
#define compat_stringToQualifiedNameList(str) stringToQualifiedNameList(str)
#endif

/*
 * Rows this backend inserted, updated or deleted in relid in committed
 * transactions whose statistics it has not flushed to shared memory yet:
 * its pending entry, without the running transaction's counts (16 renamed
 * the counters, and its find_tabstat_entry() adds the running
 * transaction's).
 */
#include "pgstat.h"
#include "miscadmin.h"
#include "utils/pgstat_internal.h"
static inline int64
compat_unflushed_changes(Oid relid)
{
	PgStat_EntryRef *ref = pgstat_fetch_pending_entry(PGSTAT_KIND_RELATION, MyDatabaseId, relid);
	PgStat_TableStatus *tab = ref ? (PgStat_TableStatus *) ref->pending : NULL;

	if (tab == NULL)
		return 0;
#if PG_VERSION_NUM >= 160000
	return tab->counts.tuples_inserted + tab->counts.tuples_updated + tab->counts.tuples_deleted;
#else
	return tab->t_counts.t_tuples_inserted + tab->t_counts.t_tuples_updated +
		tab->t_counts.t_tuples_deleted;
#endif
}

/*
 * Has a slot been invalidated, whatever the cause?  16 records the cause,
 * and can invalidate for more than removed WAL (keeping restart_lsn then);
 * 15 only removes WAL, resetting restart_lsn and setting invalidated_at.
 * Read under the slot's mutex.
 */
#if PG_VERSION_NUM >= 160000
#define compat_slot_invalidated(s) ((s)->data.invalidated != RS_INVAL_NONE)
#else
#define compat_slot_invalidated(s) \
	(XLogRecPtrIsInvalid((s)->data.restart_lsn) && \
	 !XLogRecPtrIsInvalid((s)->data.invalidated_at))
#endif

/* A relation file's identity (16 renamed RelFileNode to RelFileLocator). */
#if PG_VERSION_NUM >= 160000
#include "storage/relfilelocator.h"
typedef RelFileLocator compat_RelFileLocator;

#define compat_relfile_set(loc, spc, db, rel) \
	((loc).spcOid = (spc), (loc).dbOid = (db), (loc).relNumber = (rel))
#else
#include "storage/relfilenode.h"
typedef RelFileNode compat_RelFileLocator;

#define compat_relfile_set(loc, spc, db, rel) \
	((loc).spcNode = (spc), (loc).dbNode = (db), (loc).relNode = (rel))
#endif

/* Its parts, and the relation whose file it is now (16 renamed them). */
#if PG_VERSION_NUM >= 160000
#include "utils/relfilenumbermap.h"
#define compat_relfile_spc(loc) ((loc).spcOid)
#define compat_relfile_db(loc) ((loc).dbOid)
#define compat_relfile_number(loc) ((loc).relNumber)
#define compat_RelidByRelfilenode(spc, number) RelidByRelfilenumber((spc), (number))
#else
#include "utils/relfilenodemap.h"
#define compat_relfile_spc(loc) ((loc).spcNode)
#define compat_relfile_db(loc) ((loc).dbNode)
#define compat_relfile_number(loc) ((loc).relNode)
#define compat_RelidByRelfilenode(spc, number) RelidByRelfilenode((spc), (number))
#endif

/* get_publication_oid() (16 moved it from pg_publication.h). */
#if PG_VERSION_NUM >= 160000
#include "utils/lsyscache.h"
#endif

/*
 * The core scanner's codes of the tokens that are not keywords, for a file
 * that includes parser/scanner.h first.  16 stopped installing gram.h (and
 * parser/gramparse.h); the codes are fixed by the order of gram.y's first
 * %token lines, which plpgsql's grammar repeats and relies on too.
 */
#ifdef SCANNER_H
#if PG_VERSION_NUM >= 160000
#define IDENT			258
#define UIDENT			259
#define FCONST			260
#define SCONST			261
#define USCONST			262
#define BCONST			263
#define XCONST			264
#define Op				265
#define ICONST			266
#define PARAM			267
#define TYPECAST		268
#define DOT_DOT			269
#define COLON_EQUALS	270
#define EQUALS_GREATER	271
#define LESS_EQUALS		272
#define GREATER_EQUALS	273
#define NOT_EQUALS		274
#else
#include "parser/gramparse.h"
#endif
#endif							/* SCANNER_H */

/* The primary key's index, deferrable or not (18 added deferrable_ok). */
#include "utils/relcache.h"
#if PG_VERSION_NUM >= 180000
#define compat_RelationGetPrimaryKeyIndex(rel) RelationGetPrimaryKeyIndex((rel), true)
#else
#define compat_RelationGetPrimaryKeyIndex(rel) RelationGetPrimaryKeyIndex(rel)
#endif

/* Rebuild one index (17 added the statement, for event triggers; NULL). */
#include "catalog/index.h"
#if PG_VERSION_NUM >= 170000
#define compat_reindex_index(index, persistence, params) \
	reindex_index(NULL, (index), false, (persistence), (params))
#else
#define compat_reindex_index(index, persistence, params) \
	reindex_index((index), false, (persistence), (params))
#endif

#endif							/* AUTOCDC_COMPAT_H */
