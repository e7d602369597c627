/*-------------------------------------------------------------------------
 *
 * failures.h
 *		Failed runs kept in shared memory until they can be written down
 *		(schedule layer).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_FAILURES_H
#define AUTOCDC_FAILURES_H

#include "access/xlogdefs.h"
#include "storage/lwlock.h"

extern Size failures_shmem_size(void);
extern void failures_shmem_init(LWLock *lock);
extern void failures_note_lsn(XLogRecPtr lsn);
extern void failures_note_resync(int32 flow_id);
extern void failures_record(int32 flow_id, ErrorData *edata);
extern void failures_persist(void);

#endif							/* AUTOCDC_FAILURES_H */
