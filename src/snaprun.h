/*-------------------------------------------------------------------------
 *
 * snaprun.h
 *		Runs of snapshot flows (use-case layer).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SNAPRUN_H
#define AUTOCDC_SNAPRUN_H

#include "catalog.h"

extern bool snaprun_mixed(FlowDef *flow);
extern void snaprun_run(FlowDef *flow, RunMetrics *m);
extern void snaprun_refresh(FlowDef *flow, RunMetrics *m);
extern void snaprun_refresh_mixed(FlowDef *snap, FlowDef *named, RunMetrics *m);

#endif							/* AUTOCDC_SNAPRUN_H */
