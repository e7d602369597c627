/*-------------------------------------------------------------------------
 *
 * apply.h
 *		The apply engine (engine layer): classify a batch, fold every key it
 *		touches, and write the differences to the target and hidden state.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_APPLY_H
#define AUTOCDC_APPLY_H

#include "catalog.h"

extern void apply_batch(FlowDef *flow, RunMetrics *m, bool have_batch, bool touch_all);
extern void apply_events(FlowDef *flow, RunMetrics *m, const char *events_sql, bool touch_all,
						 bool no_hash);

#endif							/* AUTOCDC_APPLY_H */
