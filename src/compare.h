/*-------------------------------------------------------------------------
 *
 * compare.h
 *		Comparing a snapshot with a target (engine layer): the differences
 *		become events of the apply engine.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_COMPARE_H
#define AUTOCDC_COMPARE_H

#include "catalog.h"

extern int64 compare_snapshot(FlowDef *flow, Oid snapshot, const char *version, bool full,
							  bool mixed, RunMetrics *m);
extern void compare_adopt_snapshot(int target_id, Oid seqtype, const char *version);

#endif							/* AUTOCDC_COMPARE_H */
