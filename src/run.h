/*-------------------------------------------------------------------------
 *
 * run.h
 *		Runs of change flows and the guard around a run (use-case layer).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_RUN_H
#define AUTOCDC_RUN_H

#include "access/tupdesc.h"
#include "utils/resowner.h"
#include "utils/tuplestore.h"

#include "catalog.h"
#include "rowstore.h"

/* the guard around a run */
extern void run_set_applying(const char *name);
extern void run_refuse_while_applying(const char *what);
extern void run_hold_relations(FlowDef *flow, Oid source);
extern void run_release_relations(void);
extern void run_advertise(FlowDef *flow);

/* the steps of a run (the worker's pass takes them over several flows) */
extern ResourceOwner run_batch_owner(ResourceOwner parent);
extern void run_batch_owner_release(ResourceOwner owner);
extern Tuplestorestate *run_new_batch(FlowDef *flow, TupleDesc *bdesc, ResourceOwner owner);
extern List *run_load_expectations(FlowDef *flow);
extern bool run_prepare(FlowDef *flow, bool refresh, bool skip_locked);
extern void run_apply(FlowDef *flow, Tuplestorestate *batch, TupleDesc bdesc, RowNotes *notes,
					  RunMetrics *m, bool have_batch, bool touch_all, TimestampTz started,
					  bool log);

/* whole runs */
extern void run_one(FlowDef *flow, RunMetrics *m, bool refresh, bool touch_all);
extern void run_prologue(FlowDef *flow);
extern void run_refresh(FlowDef *flow, RunMetrics *m, bool after_snapshot, bool touch_first);

#endif							/* AUTOCDC_RUN_H */
