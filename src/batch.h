/*-------------------------------------------------------------------------
 *
 * batch.h
 *		The rows of the run in progress, held in backend tuplestores and read
 *		by the apply engine's SQL (engine layer).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_BATCH_H
#define AUTOCDC_BATCH_H

#include "access/tupdesc.h"
#include "utils/tuplestore.h"

/* the stores of a run, each read by one SQL function */
#define BATCH_SOURCE 0			/* captured source rows: _batch() */
#define BATCH_EVENTS 1			/* classified events: _events() */
#define BATCH_ROWS 2			/* rows computed by the fold: _rows() */
#define BATCH_KEYS 3			/* distinct keys of the run: _keys() */
#define BATCH_COUNT 4

extern TupleDesc batch_source_desc(Oid source, bool pseudo);
extern void batch_set(int which, Tuplestorestate *ts, TupleDesc desc, Oid rowtype,
					  int64 nrows, int uses);
extern TupleDesc batch_desc(int which);
extern void batch_end(int which);
extern void batch_clear(void);

#endif							/* AUTOCDC_BATCH_H */
