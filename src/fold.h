/*-------------------------------------------------------------------------
 *
 * fold.h
 *		What every storage kind folds (engine layer, bottom): the columns of
 *		a target and its hidden state as the fold sees them, one key's
 *		events and target rows, and the rows a fold computes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_FOLD_H
#define AUTOCDC_FOLD_H

#include "access/htup.h"
#include "access/xlogdefs.h"
#include "fmgr.h"
#include "storage/itemptr.h"

/* the most period columns (__start_at, __end_at, ...) a storage kind has */
#define FOLD_MAX_PERIODS 4

/* The data columns (in hidden-state order) and the sequence of a flow. */
typedef struct FoldCols
{
	int			ndata;			/* data columns */
	char	  **dnames;
	Oid		   *dtypes;
	Oid		   *dcolls;
	bool	   *is_key;
	bool	   *tracked;		/* SCD 2: a change opens a version */
	bool	   *selected;		/* selected by this flow */
	int			nkeys;
	int		   *keyidx;			/* key k -> data column */
	FmgrInfo   *eqfn;			/* per data column; fn_oid 0: compare text */
	FmgrInfo   *outfn;
	bool		ignore_nulls;	/* some column ignores NULLs: every event
								 * counts */
	bool	   *skipnull;		/* per data column: an upsert's NULL there is
								 * not written */
	/* the sequence (and the period columns, which have its type) */
	FmgrInfo	seqcmp;
	Oid			seqcoll;
	bool		seqbyval;
	int16		seqlen;
	bool		seq_is_row;
	/* bitemporal: the system sequence (periods from sysperiods_from on) */
	bool		has_sys;
	int			sysperiods_from;
	FmgrInfo	syscmp;
	Oid			syscoll;
	bool		sysbyval;
	int16		syslen;
	bool		sys_is_row;
} FoldCols;

/* where a key's rows come from */
#define EV_TARGET 0				/* a row of the target */
#define EV_STATE 1				/* an event kept in the hidden state */
#define EV_NEW 2				/* an event of this run */
#define EV_TRUNCATE 3			/* a truncate (state or new) */

/* One row of a key: a target row or an event. */
typedef struct Ev
{
	int			src;			/* EV_* */
	ItemPointerData tid;		/* target and state rows: the row id */
	Oid			rel;			/* and the table holding it (a partition of a
								 * partitioned target) */
	Datum		seq;			/* events: the sequence */
	bool		seqnull;
	Datum		period[FOLD_MAX_PERIODS];	/* target rows: period columns */
	bool		periodnull[FOLD_MAX_PERIODS];
	XLogRecPtr	lsn;			/* events: arrival position */
	int64		ord;
	char		kind;			/* events: EVENT_UPSERT, _DELETE, _TRUNCATE */
	Datum		sysseq;			/* events of bitemporal flows: the system
								 * sequence */
	Datum	   *vals;			/* data columns */
	bool	   *nulls;
	bool	   *written;		/* upserts with a list of the columns they
								 * write (columns_to_update): per data column;
								 * NULL: the flow's NULL rule decides */
	Datum		wlist;			/* that list as stored (text[]) for the hidden
								 * state, or 0 */
	bool		dead;			/* a tie loser */
	HeapTuple	tup;			/* a new event's state row, when formed */
	bool		tupkept;		/* tup goes into the hidden state as it is:
								 * not to be freed before the write */
} Ev;

/* A row of the target computed by a fold. */
typedef struct OutRow
{
	Datum	   *vals;
	bool	   *nulls;
	Datum		period[FOLD_MAX_PERIODS];
	bool		periodnull[FOLD_MAX_PERIODS];
} OutRow;

extern int	fold_seq_compare(FoldCols *c, Datum x, Datum y);
extern bool fold_seq_equal(FoldCols *c, Datum x, bool xnull, Datum y, bool ynull);
extern int	fold_arrival_compare(Ev *x, Ev *y);
extern int	fold_event_compare(FoldCols *c, Ev *x, Ev *y);
extern int	fold_qsort_events(const void *x, const void *y, void *arg);
extern bool fold_column_equal(FoldCols *c, int i, Datum x, bool xnull, Datum y, bool ynull);
extern bool fold_same_key(FoldCols *c, Ev *x, Ev *y);
extern char *fold_key_text(FoldCols *c, Datum *vals, bool *nulls);
extern bool fold_seq_is_null(FoldCols *c, Datum seq, bool isnull);
extern bool fold_sys_is_null(FoldCols *c, Datum seq, bool isnull);
extern int	fold_sys_compare(FoldCols *c, Datum x, Datum y);
extern bool fold_period_equal(FoldCols *c, int p, Datum x, bool xnull, Datum y, bool ynull);
extern Datum fold_period_copy(FoldCols *c, int p, Datum x);
extern void fold_mark_ties(FoldCols *c, Ev **evs, int n);
extern bool fold_writes(FoldCols *c, Ev *e, int j);

#endif							/* AUTOCDC_FOLD_H */
