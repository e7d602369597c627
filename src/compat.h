/*-------------------------------------------------------------------------
 *
 * compat.h
 *		PG_VERSION_NUM shims, kept in one place (PostgreSQL 15 is the
 *		reference, and the only version built and tested; later versions
 *		differ in the replication slot API, ownership and ACL checks and name
 *		parsing).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_COMPAT_H
#define AUTOCDC_COMPAT_H

#include "replication/slot.h"
#include "utils/acl.h"

#if PG_VERSION_NUM >= 180000
#define compat_ReplicationSlotAcquire(name, nowait) \
	ReplicationSlotAcquire((name), (nowait), true)
#define compat_ReplicationSlotCreate(name, dbspecific, persistency, twophase) \
	ReplicationSlotCreate((name), (dbspecific), (persistency), (twophase), false, false)
#elif PG_VERSION_NUM >= 170000
#define compat_ReplicationSlotAcquire(name, nowait) \
	ReplicationSlotAcquire((name), (nowait))
#define compat_ReplicationSlotCreate(name, dbspecific, persistency, twophase) \
	ReplicationSlotCreate((name), (dbspecific), (persistency), (twophase), false, false)
#else
#define compat_ReplicationSlotAcquire(name, nowait) \
	ReplicationSlotAcquire((name), (nowait))
#define compat_ReplicationSlotCreate(name, dbspecific, persistency, twophase) \
	ReplicationSlotCreate((name), (dbspecific), (persistency), (twophase))
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

/* The new tuple of a decoded change (17 dropped ReorderBufferTupleBuf). */
#if PG_VERSION_NUM >= 170000
#define compat_change_newtuple(change) ((change)->data.tp.newtuple)
#else
#define compat_change_newtuple(change) \
	((change)->data.tp.newtuple ? &(change)->data.tp.newtuple->tuple : NULL)
#endif

/* Index insertion of a new heap tuple (16 added onlySummarizing). */
#if PG_VERSION_NUM >= 160000
#define compat_ExecInsertIndexTuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, false)
#else
#define compat_ExecInsertIndexTuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL)
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
 * Rows this backend inserted into relid in committed transactions whose
 * statistics it has not flushed to shared memory yet (16 renamed the
 * counters).
 */
#include "pgstat.h"
#if PG_VERSION_NUM >= 160000
#define compat_unflushed_inserts(tab) ((tab)->counts.tuples_inserted)
#else
#define compat_unflushed_inserts(tab) ((tab)->t_counts.t_tuples_inserted)
#endif

#endif							/* AUTOCDC_COMPAT_H */
