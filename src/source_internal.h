/*-------------------------------------------------------------------------
 *
 * source_internal.h
 *		What the files of the capture share (engine layer): a decoding
 *		pass's state, each flow's share of it, one decoded change, and the
 *		helpers the source kinds' handlers (srcfeed.c, srcchanges.c) call.
 *		Only the capture's files include it: firstread.c, walfilter.c,
 *		decode.c, capture.c and the srcNAME.c files.
 *
 * A pass (capture.c) opens each flow's share (FeedCapture), does the first
 * reads (firstread.c), builds the WAL filter (walfilter.c) and decodes the
 * slot (decode.c), whose callbacks hand each decoded change (DecodedChange)
 * to the handler of each flow's source kind (srckind.h), which puts events
 * into the flow's batch (capture_emit).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SOURCE_INTERNAL_H
#define AUTOCDC_SOURCE_INTERNAL_H

#include "access/htup.h"
#include "replication/logical.h"
#include "utils/hsearch.h"
#include "utils/snapshot.h"

#include "compat.h"
#include "rowstore.h"
#include "source.h"
#include "srckind.h"
#include "util.h"

/*
 * A decoded table (a feed, or a partition of one) and, per flow of the pass,
 * how its columns (as of the decoded transaction) map onto the flow's feed
 * as it is now.
 */
typedef struct DecodedRel
{
	Oid			relid;			/* hash key */
	bool		wanted;			/* some flow of the pass reads it */
	int		  **maps;			/* per flow: feed attno-1 -> decoded attno-1
								 * (-1: none); NULL: the flow does not read
								 * it */
	bool	   *identity_ok;	/* per changes() flow: the table's replica
								 * identity (as of the change) holds its keys */
	bool	   *rewritten;		/* a table an ALTER TABLE rewrites into (its
								 * new file): per changes() flow, whether it
								 * is the flow's source or a leaf of it;
								 * NULL: an ordinary table */
} DecodedRel;

/* One flow's share of a decoding pass. */
typedef struct FeedCapture
{
	Capture    *c;
	const SourceKind *kind;
	Relation	feed;
	TupleDesc	feeddesc;
	Snapshot	first;			/* first read: keep what this did not show */
	XLogRecPtr	first_pos;		/* and the WAL position it was taken at */
	XLogRecPtr	arrival_lsn;	/* the current transaction's arrival position:
								 * its commit, or first_pos for one the first
								 * read did not show that committed before it */
	bool		evicted;		/* too big for this pass: keeps nothing */
	bool		keep;			/* keep the current transaction's inserts */
	bool		skip;			/* current transaction is skipped */
	int64		ord;
	int		   *keypos;			/* batch data positions of the keys */
	bool	   *reads;			/* per batch data position: a column the flow
								 * selects or its expressions read */
	MissingValue *missing;		/* changes(): per batch data position, the
								 * value rows older than the column read */
	Datum	   *missing_value;
	TimestampTz last_ts;		/* changes(): the last _commit_timestamp given */
	TimestampTz txn_ts;			/* and the current transaction's, 0: none yet */
	bool		partitioned;	/* changes() of a partitioned table */
	bool		truncated;		/* the current TRUNCATE lists some of it */
	int			trunc_leaves;	/* and that many of its leaves */
} FeedCapture;

/* State of one decoding pass, shared by the flows it serves. */
typedef struct DecodeState
{
	List	   *feeds;			/* FeedCapture */
	int			nfeeds;
	XLogRecPtr	commit_lsn;		/* of the current transaction */
	TimestampTz commit_time;	/* of the current transaction */
	bool		any_keep;		/* some flow keeps the current transaction */
	int64		kept;			/* rows put into batches so far */
	HTAB	   *rels;			/* DecodedRel by relid */
	HTAB	   *nodes;			/* FilterNode by relfilenode, NULL: no filter */
	HTAB	   *unknown;		/* UnknownNode: files the filter does not name */
	bool		drop_unknown;	/* drop the changes of files not in nodes */
	List	   *sources;		/* every flow's source (any slot's) */
	struct FilterNode *node_cache;	/* the nodes entry of node_cache_file */
	compat_RelFileLocator node_cache_file;
	int64		evict_after;	/* a table's changes that evict its flows, 0: never */
	MemoryContext cxt;			/* reset after each change */
	MemoryContext relcxt;		/* the relation maps */
	MemoryContext cxt_filter;	/* the filter */
} DecodeState;

/* One decoded change of a table some flow of the pass reads. */
typedef struct DecodedChange
{
	DecodeState *st;
	Relation	rel;			/* the decoded table */
	TupleDesc	desc;			/* the table's, as of the change */
	HeapTuple	newtup;			/* NULL: none */
	HeapTuple	oldtup;			/* NULL: none in the WAL */
	Datum	   *nvalues;		/* deformed on first use */
	bool	   *nnulls;
	bool	   *nwhole;			/* out-of-line values that came whole */
	Datum	   *ovalues;
	bool	   *onulls;
	bool		moved;			/* an update that changes the key */
} DecodedChange;

/* What the decoding loop does with a record (walfilter_record_action). */
typedef enum RecordAction
{
	RECORD_DECODE,
	RECORD_SKIP,				/* not decoded at all */
	RECORD_KNOW					/* not decoded, its transaction made known */
} RecordAction;

/* firstread.c */
extern Snapshot firstread_snapshot(void);
extern bool firstread_showed(Snapshot snap, TransactionId xid);
extern void firstread_missing(FlowDef *flow, Tuplestorestate *batch, TupleDesc batchdesc,
							  XLogRecPtr pos, TimestampTz ts, int64 ord);

/* walfilter.c */
extern void walfilter_build(DecodeState *st);
extern void walfilter_install(LogicalDecodingContext *ctx);
extern RecordAction walfilter_record_action(DecodeState *st, XLogReaderState *r);
extern void walfilter_make_known(LogicalDecodingContext *ctx, XLogReaderState *r);

/* decode.c */
extern XLogRecPtr decode_pass(DecodeState *st, XLogRecPtr end, int64 max_events,
							  int64 max_wal, bool *more);

/* capture.c: for the source kinds' handlers */
extern void change_new(DecodedChange *ch);
extern void change_old(DecodedChange *ch);
extern void capture_fail(FeedCapture *fc, int code, char *message, char *hint);
extern void capture_untold(FeedCapture *fc, char *message, char *hint);
extern void capture_emit(DecodedChange *ch, FeedCapture *fc, int *map, Datum *dv, bool *dn,
						 Datum *old, bool *oldnulls, const char *change_type);

#endif							/* AUTOCDC_SOURCE_INTERNAL_H */
