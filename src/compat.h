/*-------------------------------------------------------------------------
 *
 * compat.h
 *		PG_VERSION_NUM shims, kept in one place (PostgreSQL 15 is the
 *		reference; 16 and 17 differ in the replication slot API).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_COMPAT_H
#define AUTOCDC_COMPAT_H

#include "replication/slot.h"

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

#endif							/* AUTOCDC_COMPAT_H */
