/*-------------------------------------------------------------------------
 *
 * registry.h
 *		The shared-memory registry of workers (store layer).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_REGISTRY_H
#define AUTOCDC_REGISTRY_H

#include "datatype/timestamp.h"
#include "nodes/nodes.h"
#include "nodes/pg_list.h"
#include "storage/lwlock.h"

/* Worker places per database: the main lane (0) and the laggard lane (1). */
#define REGISTRY_LANES 2
#define REGISTRY_MAIN_LANE 0
#define REGISTRY_LAGGARD_LANE 1

/* Longest text kept of why the main slot cannot be created. */
#define REGISTRY_SLOT_ERROR_LEN 256

/* A worker the launcher should start. */
typedef struct RegistryStart
{
	Oid			dboid;
	int			lane;
} RegistryStart;

extern Size registry_shmem_size(void);
extern void registry_shmem_init(LWLock *lock);
extern void registry_init(void);
extern void registry_want_worker(void);
extern void registry_before_utility(Node *stmt);
extern bool registry_claim(Oid dboid, int lane);
extern void registry_worker_started(Oid dboid, int lane);
extern void registry_want_laggard_worker(bool want);
extern void registry_wake_other_lane(void);
extern bool registry_blocked(void);
extern void registry_mark_absent(void);
extern bool registry_note_slot_error(int sqlerrcode, const char *message, const char *hint);
extern bool registry_clear_slot_error(void);
extern bool registry_note_copy_failing(bool failing);
extern bool registry_has_worker(void);
extern bool registry_attached(void);
extern void registry_launcher_started(void);
extern List *registry_due(List *dbs, TimestampTz now, int restart_delay_ms, int *running,
						  bool *pending);
extern void registry_starting(Oid dboid, int lane, TimestampTz now);

#endif							/* AUTOCDC_REGISTRY_H */
