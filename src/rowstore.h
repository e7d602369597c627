/*-------------------------------------------------------------------------
 *
 * rowstore.h
 *		The row store of a changes() flow (engine layer): the out-of-line
 *		values of the source's rows by key, which fill what the WAL gives
 *		only as a pointer into the TOAST table.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_ROWSTORE_H
#define AUTOCDC_ROWSTORE_H

#include "access/tupdesc.h"
#include "nodes/bitmapset.h"
#include "utils/resowner.h"
#include "utils/tuplestore.h"

#include "catalog.h"

/* What the capture noted of one decoded upsert (by its place in the batch). */
typedef struct RowMark
{
	int64		row;			/* 0: the batch's first row */
	Bitmapset  *whole;			/* batch data positions whose value was out
								 * of line and came whole */
	Bitmapset  *unchanged;		/* positions whose pointer was filled from
								 * the WAL's old row (REPLICA IDENTITY FULL):
								 * the store should hold the value already */
	bool		pointers;		/* some value is a pointer to fill */
	bool		moved;			/* the key changed: fill from the old key's */
} RowMark;

/*
 * What a run's capture tells the row store beside the batch: the marks of
 * the decoded upserts that matter to it, and the rows a first read found
 * with out-of-line values.
 */
typedef struct RowNotes
{
	MemoryContext cxt;			/* where the notes live */
	ResourceOwner owner;		/* owns the files of the fill */
	RowMark    *marks;
	int			nmarks;
	int			maxmarks;
	bool		read;			/* a first read: the store starts from fill */
	bool		skipped;		/* events were skipped (skip_events): the
								 * store starts empty */
	Tuplestorestate *fill;		/* key columns, then the values (bytea[]) */
	TupleDesc	filldesc;
	int64		nfill;
} RowNotes;

extern char *rowstore_name(int flow_id);
extern bool rowstore_column_read(FlowDef *flow, const char *name);
extern RowNotes *rownotes_new(ResourceOwner owner);
extern void rownotes_mark(RowNotes *notes, int64 row, Bitmapset *whole,
						  Bitmapset *unchanged, bool pointers, bool moved);
extern void rowstore_read(FlowDef *flow, RowNotes *notes);
extern Tuplestorestate *rowstore_resolve(FlowDef *flow, Tuplestorestate *batch,
										 TupleDesc bdesc, RowNotes *notes);
extern void rowstore_drop(int flow_id);

#endif							/* AUTOCDC_ROWSTORE_H */
