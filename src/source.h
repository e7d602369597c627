/*-------------------------------------------------------------------------
 *
 * source.h
 *		Sources of change flows (engine layer): the checks of a source
 *		before a run (source.c), whole reads under a snapshot (firstread.c),
 *		and the capture: a decoding pass over a slot (slots.h) that turns
 *		committed changes into batch rows by each flow's source kind
 *		(capture.c; srckind.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SOURCE_H
#define AUTOCDC_SOURCE_H

#include "access/tupdesc.h"
#include "access/xlogdefs.h"
#include "utils/tuplestore.h"

#include "catalog.h"
#include "lag.h"
#include "rowstore.h"

/* One flow's part in a decoding pass. */
typedef struct Capture
{
	FlowDef    *flow;
	Tuplestorestate *batch;
	TupleDesc	batchdesc;
	RunMetrics *m;
	RowNotes   *notes;			/* a changes() flow's, for its row store */
	bool		resync;			/* out: progress no longer served, not captured */
	bool		deferred;		/* out: evicted from the pass, not captured */
	char	   *error;			/* out: why capture stopped for this flow */
	int			error_code;		/* its SQLSTATE, 0: a retyped column */
	char	   *error_hint;		/* and its hint, or NULL */
	bool		error_resync;	/* a change that cannot be told: the flow
								 * needs a resync */
	TimestampTz first_commit;	/* out: commit time of the batch's first
								 * transaction (a first read: its time), 0:
								 * empty */
	LagNote		lag;			/* out: how the pass leaves the flow if it
								 * applies the batch */
} Capture;

extern void source_init(void);
extern void source_check(FlowDef *flow);
extern int64 source_read_whole(FlowDef *flow, Tuplestorestate *batch, TupleDesc batchdesc,
							   XLogRecPtr pos, TimestampTz ts, RowNotes *notes);
extern void source_capture(FlowDef *flow, Tuplestorestate *batch, TupleDesc batchdesc,
						   RunMetrics *m, RowNotes *notes);
extern void source_capture_flows(List *captures, const char *slot, int64 max_events,
								 int64 max_wal, int64 evict_after, bool resync_error,
								 bool *more);
extern void source_raise_capture_error(Capture *c);

#endif							/* AUTOCDC_SOURCE_H */
