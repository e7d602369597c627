/*-------------------------------------------------------------------------
 *
 * pass.h
 *		The background worker's pass over due flows (use-case layer).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_PASS_H
#define AUTOCDC_PASS_H

#include "nodes/pg_list.h"

extern bool pass_change_flows(List *names, const char *slot, int64 max_events,
							  int64 max_wal, bool sliced);
extern List *pass_slow_flows(void);
extern void pass_snapshot_flows(List *names);

#endif							/* AUTOCDC_PASS_H */
