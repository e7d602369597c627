/*-------------------------------------------------------------------------
 *
 * lag.h
 *		What the last decoding for each flow left pending, kept in shared
 *		memory for autocdc.flows.lag_time (store layer).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_LAG_H
#define AUTOCDC_LAG_H

#include "datatype/timestamp.h"
#include "storage/lwlock.h"

/* How a flow was left by the last decoding that served it. */
typedef struct LagNote
{
	TimestampTz decoded_at;		/* when that decoding fixed its end */
	int64		stat_changes;	/* the source's change count before then */
	TimestampTz pending_since;	/* oldest commit seen and not applied, 0:
								 * none */
	bool		cut;			/* decoding stopped before the end: more may
								 * be pending */
} LagNote;

extern Size lag_shmem_size(void);
extern void lag_shmem_init(LWLock *lock);
extern int64 lag_source_changes(Oid relid);
extern void lag_note(int32 flow_id, const LagNote *note);

#endif							/* AUTOCDC_LAG_H */
