/*-------------------------------------------------------------------------
 *
 * source.c
 *		Feed capture: first reads under a snapshot, and logical decoding of
 *		committed feed inserts from one of the database's slots (slots.c).
 *
 * A pass decodes one slot (the main slot, or the laggard slot).  Its plugin is pgoutput
 * (which every server lets decode), but its transaction and change
 * callbacks are replaced by ours, which take the inserts into the flows'
 * feeds straight from the decoded tuples.  A flow's progress is an LSN kept
 * in autocdc.flow_state: source transactions whose commit record starts
 * before it are applied.  A pass decodes from the slot's restart point up to
 * the WAL flushed when it started and keeps, for each flow it serves, the
 * inserts into its feed from transactions at or after its progress: one
 * flow for run_flow, every due flow for the background worker.  Before and
 * after decoding, the slot is confirmed up to the oldest committed progress
 * of its flows (once the commits recording it are flushed), so that it can
 * forget what every flow on it has applied.
 *
 * A first read takes a snapshot S, reads the feed under it, and then keeps
 * from the decoded stream exactly the transactions S did not show (its own
 * transaction included).  Transactions that have already written their
 * commit to the clog but were still in the snapshot's running list count as
 * shown (they are read under S), so that no commit that happened before the
 * read can slip between the read and the decoded stream.  The slot is held
 * from the snapshot to the end of decoding, so nobody can confirm it past a
 * transaction the read did not show.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/heapam_xlog.h"
#include "access/htup_details.h"
#include "access/rmgr.h"
#include "access/relation.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xlogutils.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "nodes/makefuncs.h"
#include "replication/decode.h"
#include "replication/logical.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/procarray.h"
#include "storage/standby.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/rls.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "access/table.h"
#include "funcapi.h"

#include "catalog.h"
#include "compat.h"
#include "expr.h"
#include "failures.h"
#include "kind.h"
#include "layout.h"
#include "settings.h"
#include "slots.h"
#include "source.h"
#include "storage.h"
#include "rowstore.h"
#include "tablekind.h"
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

typedef struct SourceKind SourceKind;

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
	bool		last_valid;		/* record_action's answer for last_node */
	compat_RelFileLocator last_node;
	int			last_action;
	int64		evict_after;	/* a table's changes that evict its flows, 0: never */
	MemoryContext cxt;			/* reset after each change */
	MemoryContext relcxt;		/* the relation maps */
	MemoryContext cxt_filter;	/* the filter */
} DecodeState;

/*
 * What the pass does with the changes of one relation file, decided before
 * decoding from the current catalog: the file of a table some flow of the
 * pass reads (its changes are counted), or of one of autocdc's other
 * tables, which no flow of the pass reads (its changes are not even
 * buffered).  A table that some flow reads — in this pass or not, on this
 * slot or another — is never hidden from the reorder buffer, though: the
 * transactions that write it are made known to it (known), so that they
 * hold the slot's restart point like any other.  A flow that moves to this
 * slot later (lanes.c) needs their changes from their first; a slot whose
 * restart point had passed the start of a transaction still running would
 * hand it only the rest of that transaction.
 */
typedef struct FilterNode
{
	compat_RelFileLocator node; /* hash key */
	Oid			relid;
	bool		wanted;			/* read by flows of the pass */
	bool		skip;			/* its records are not decoded */
	bool		known;			/* but make their transactions known */
	int64		queued;			/* changes buffered in this pass */
} FilterNode;

/* How far the slot's restart point may lag before a pass logs a running-xacts record. */
#define RESTART_LAG_BYTES (1024 * 1024)

/* Set when the relcache changed: the relation maps are rebuilt. */
static bool decode_maps_stale = false;
static bool decode_relcache_callback_registered = false;

/*
 * PostgreSQL logs two lines at every start of logical decoding; a worker
 * decoding several times a second would bury the server log in them.  While
 * autocdc itself decodes, an emit_log_hook keeps exactly those two messages
 * out of the server log, whatever log_min_messages is.
 */
static bool decoding_quietly = false;
static emit_log_hook_type prev_emit_log_hook = NULL;

static void
quiet_decoding_messages(ErrorData *edata)
{
	if (decoding_quietly && edata->elevel == LOG && edata->message_id != NULL &&
		(strcmp(edata->message_id, "starting logical decoding for slot \"%s\"") == 0 ||
		 strcmp(edata->message_id, "logical decoding found consistent point at " COMPAT_LSN_FORMAT) == 0))
		edata->output_to_server = false;
	else if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

/* Install the filter of decoding's log lines (at library load). */
void
source_init(void)
{
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = quiet_decoding_messages;
}

/*
 * A copy of the latest snapshot in which transactions that already
 * committed to the clog count as shown, and this transaction does not.
 */
static Snapshot
first_read_snapshot(void)
{
	Snapshot	src = GetLatestSnapshot();
	Snapshot	snap = palloc(sizeof(SnapshotData));
	TransactionId own = GetTopTransactionIdIfAny();
	uint32		i,
				n = 0;

	*snap = *src;
	snap->xip = palloc(sizeof(TransactionId) * (src->xcnt + 1));
	for (i = 0; i < src->xcnt; i++)
		if (!TransactionIdDidCommit(src->xip[i]))
			snap->xip[n++] = src->xip[i];
	if (TransactionIdIsValid(own) && TransactionIdPrecedes(own, snap->xmax))
		snap->xip[n++] = own;
	snap->xcnt = n;
	snap->subxip = palloc(sizeof(TransactionId) * (src->subxcnt + 1));
	n = 0;
	for (i = 0; i < (uint32) src->subxcnt; i++)
		if (!TransactionIdDidCommit(src->subxip[i]))
			snap->subxip[n++] = src->subxip[i];
	snap->subxcnt = n;
	snap->curcid = FirstCommandId;	/* hide this transaction's own rows */
	snap->copied = false;
	snap->active_count = 0;
	snap->regd_count = 0;
	snap->snapXactCompletionCount = 0;
	return snap;
}

/* Did the first-read snapshot show the (top-level) transaction xid? */
static bool
snapshot_showed(Snapshot snap, TransactionId xid)
{
	uint32		i;

	if (TransactionIdPrecedes(xid, snap->xmin))
		return true;
	if (TransactionIdFollowsOrEquals(xid, snap->xmax))
		return false;
	for (i = 0; i < snap->xcnt; i++)
		if (TransactionIdEquals(xid, snap->xip[i]))
			return false;
	return true;
}

/* Where a snapshot read puts its rows. */
typedef struct SnapshotRead
{
	Tuplestorestate *batch;
	TupleDesc	desc;
	XLogRecPtr	pos;
	int64		ord;
	bool		pseudo;			/* a changes() source: fill the pseudo-columns */
	const char *change_type;	/* their _change_type */
	Datum		change_type_datum;	/* (as text, made once) */
	TimestampTz ts;				/* and _commit_timestamp */
} SnapshotRead;

/* Add one row read under the snapshot to the batch. */
static void
snapshot_row(Datum *rvalues, bool *rnulls, TupleDesc desc, void *arg)
{
	SnapshotRead *sr = arg;
	int			natts = sr->desc->natts;
	Datum	   *values = palloc(sizeof(Datum) * natts);
	bool	   *nulls = palloc(sizeof(bool) * natts);

	values[0] = LSNGetDatum(sr->pos);
	values[1] = Int64GetDatum(SNAPSHOT_ORD_BASE + ++sr->ord);
	nulls[0] = nulls[1] = false;
	memcpy(values + 2, rvalues, sizeof(Datum) * desc->natts);
	memcpy(nulls + 2, rnulls, sizeof(bool) * desc->natts);
	if (sr->pseudo)
	{
		int			p = natts - PSEUDO_NCOLUMNS;

		values[p + PSEUDO_CHANGE_TYPE] = sr->change_type_datum;
		values[p + PSEUDO_COMMIT_LSN] = LSNGetDatum(sr->pos);
		values[p + PSEUDO_COMMIT_TIMESTAMP] = TimestampTzGetDatum(sr->ts);
		nulls[p + PSEUDO_CHANGE_TYPE] = nulls[p + PSEUDO_COMMIT_LSN] =
			nulls[p + PSEUDO_COMMIT_TIMESTAMP] = false;
	}
	tuplestore_putvalues(sr->batch, sr->desc, values, nulls);
	pfree(values);
	pfree(nulls);
}

/*
 * Run a query of rows in batch layout (without the arrival position) as
 * the flow owner, adding each to the batch at the next snapshot order of
 * pos: sr says what fills the pseudo-columns.
 */
static void
snapshot_read(FlowDef *flow, const char *sql, SnapshotRead *sr)
{
	Oid			saved_uid;
	int			saved_sec;

	if (sr->pseudo)
		sr->change_type_datum = CStringGetTextDatum(sr->change_type);
	become_owner(flow->owner, &saved_uid, &saved_sec);
	spi_foreach_values(sql, true, snapshot_row, sr);
	restore_user(saved_uid, saved_sec);
}

/*
 * A changes() flow refreshed with its target kept: a delete, at the
 * refresh's position, of every key the target's current rows have and the
 * source no longer has (read under the active snapshot), after the rows
 * the refresh read (ord: the last order they took).
 */
static void
source_read_missing(FlowDef *flow, Tuplestorestate *batch, TupleDesc batchdesc,
					XLogRecPtr pos, TimestampTz ts, int64 ord)
{
	StringInfoData sql;
	StringInfoData tkeys;
	SnapshotRead sr;
	char	   *keys = quoted_list(flow->keys);
	ListCell   *lc;
	int			i;

	/* the target's keys compared under the source's collations */
	initStringInfo(&tkeys);
	foreach(lc, flow->keys)
	{
		Oid			typid,
					coll;
		int32		typmod;

		get_atttypetypmodcoll(flow->source, get_attnum(flow->source, lfirst(lc)),
							  &typid, &typmod, &coll);
		appendStringInfo(&tkeys, "%s%s", tkeys.len ? ", " : "", quote_identifier(lfirst(lc)));
		if (OidIsValid(coll))
			appendStringInfo(&tkeys, " COLLATE %s", generate_collation_name(coll));
	}
	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (i = BATCH_DATA; i < batchdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(batchdesc, i);

		appendStringInfo(&sql, "%s", i > BATCH_DATA ? ", " : "");
		if (i < batchdesc->natts - PSEUDO_NCOLUMNS &&
			name_in_list(flow->keys, NameStr(att->attname)))
			appendStringInfo(&sql, "m.%s", quote_identifier(NameStr(att->attname)));
		else
			appendStringInfo(&sql, "NULL::%s", flat_type_name(att->atttypid, att->atttypmod));
	}
	appendStringInfo(&sql, " FROM (SELECT %s FROM ONLY %s%s EXCEPT SELECT %s FROM %s%s) m",
					 tkeys.data, qualified_relname(flow->target),
					 storage_kind(flow->scd)->current_rows, keys,
					 get_rel_relkind(flow->source) == RELKIND_RELATION ? "ONLY " : "",
					 qualified_relname(flow->source));
	memset(&sr, 0, sizeof(sr));
	sr.batch = batch;
	sr.desc = batchdesc;
	sr.pos = pos;
	sr.ord = ord;
	sr.pseudo = true;
	sr.change_type = "delete";
	sr.ts = ts;
	snapshot_read(flow, sql.data, &sr);
}

/*
 * A changes() flow refreshed with its target kept reads only the rows that
 * differ from the target's current row of their key: in a selected column
 * of the source (compared as text under "C", so that a value written
 * differently is a change, as the apply sees it), or by having no such row.  Columns taken
 * from pseudo-columns do not count: an unchanged row keeps the time and
 * kind of its last change.
 */
static void
append_refresh_filter(FlowDef *flow, StringInfo sql)
{
	ListCell   *lc;

	appendStringInfo(sql, " WHERE NOT EXISTS (SELECT FROM (SELECT * FROM ONLY %s%s) t WHERE true",
					 qualified_relname(flow->target), storage_kind(flow->scd)->current_rows);
	foreach(lc, flow->columns)
	{
		const char *q = quote_identifier(lfirst(lc));

		if (pseudo_source_of(flow->col_include, flow->col_from, lfirst(lc)))
			continue;
		appendStringInfo(sql, name_in_list(flow->keys, lfirst(lc)) ?
						 " AND (t.%s::pg_catalog.text COLLATE pg_catalog.\"C\") OPERATOR(pg_catalog.=) s.%s::pg_catalog.text" :
						 " AND (t.%s::pg_catalog.text COLLATE pg_catalog.\"C\") IS NOT DISTINCT FROM s.%s::pg_catalog.text",
						 q, q);
	}
	appendStringInfoChar(sql, ')');
}

/*
 * Read the whole source under the active snapshot into the batch, every
 * row at arrival position (pos, i); a changes() source's rows are inserts
 * committed at pos and ts.  Returns the last order taken.  Runs as the
 * flow owner.
 */
int64
source_read_whole(FlowDef *flow, Tuplestorestate *batch, TupleDesc batchdesc,
				  XLogRecPtr pos, TimestampTz ts, RowNotes *notes)
{
	StringInfoData sql;
	SnapshotRead sr;
	char		relkind = get_rel_relkind(flow->source);
	Relation	rel = relation_open(flow->source, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	bool		whole = pg_class_aclcheck(flow->source, flow->owner, ACL_SELECT) == ACLCHECK_OK;
	int			i;
	bool		first = true;

	/*
	 * Read the columns the owner may read; the others (which the flow does
	 * not use: that was checked) come back NULL.
	 */
	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		if (whole || pg_attribute_aclcheck(flow->source, att->attnum, flow->owner,
										   ACL_SELECT) == ACLCHECK_OK)
			appendStringInfo(&sql, "%ss.%s", first ? "" : ", ",
							 quote_identifier(NameStr(att->attname)));
		else
			appendStringInfo(&sql, "%sNULL::%s", first ? "" : ", ", flat_type_name(att->atttypid, att->atttypmod));
		first = false;
	}
	for (i = 0; flow->changes && i < PSEUDO_NCOLUMNS; i++)
		appendStringInfo(&sql, ", NULL::%s", format_type_be_qualified(pseudo_columns[i].type));
	appendStringInfo(&sql, " FROM %s%s s",
					 relkind == RELKIND_RELATION ? "ONLY " : "",
					 qualified_relname(flow->source));
	if (flow->refresh_keep)
		append_refresh_filter(flow, &sql);
	relation_close(rel, AccessShareLock);
	sr.batch = batch;
	sr.desc = batchdesc;
	sr.pos = pos;
	sr.ord = 0;
	sr.pseudo = flow->changes;
	sr.change_type = "insert";
	sr.ts = ts;
	snapshot_read(flow, sql.data, &sr);
	if (notes != NULL)
		rowstore_read(flow, notes);
	return sr.ord;
}



/* pgoutput's own origin filter, consulted after ours. */
static LogicalDecodeFilterByOriginCB plugin_filter_by_origin = NULL;

/*
 * Stop capturing the flows that read relid (or a table it is a partition
 * of) in this pass: a transaction of theirs is too big to be decoded here
 * (the main lane's pass is time-sliced); they are served apart.
 */
static void
evict_flows(DecodeState *st, Oid relid)
{
	List	   *ancestors = get_partition_ancestors(relid);
	ListCell   *lc;

	foreach(lc, st->feeds)
	{
		FeedCapture *fc = lfirst(lc);
		Oid			source = fc->c->flow->source;

		if (source == relid || list_member_oid(ancestors, source))
		{
			fc->evicted = true;
			fc->keep = false;
			fc->c->deferred = true;
		}
	}
	list_free(ancestors);
}

/* The relation file a heap record changes (false: not a change of a heap). */
static bool
heap_record_file(XLogReaderState *r, compat_RelFileLocator *rnode)
{
	uint8		rmid = XLogRecGetRmid(r);

	if ((rmid != RM_HEAP_ID && rmid != RM_HEAP2_ID) || !XLogRecHasBlockRef(r, 0))
		return false;
	XLogRecGetBlockTag(r, 0, rnode, NULL, NULL);
	return true;
}

/*
 * Whether the change record being decoded is to be dropped before it is
 * buffered: it changes a file the filter does not name (when it drops
 * those), or a table whose flows this very record evicts from the pass;
 * counts the changes of the tables the pass reads, and evicts their flows
 * past st->evict_after.  (The records of files already marked skip never
 * reach decoding: record_action.)
 */
static bool
filter_change(DecodeState *st, XLogReaderState *r)
{
	compat_RelFileLocator rnode;
	FilterNode *fn;

	if (!heap_record_file(r, &rnode))
		return false;
	fn = hash_search(st->nodes, &rnode, HASH_FIND, NULL);
	if (fn == NULL)
		return st->drop_unknown;
	if (fn->wanted && st->evict_after > 0 && ++fn->queued > st->evict_after)
	{
		evict_flows(st, fn->relid);
		fn->skip = true;
		fn->known = true;		/* the flows are served elsewhere, from this WAL */
		return true;
	}
	return false;
}

/* A relation file the filter does not name, and whether its records are decoded. */
typedef struct UnknownNode
{
	compat_RelFileLocator node; /* hash key */
	bool		skip;
	bool		known;			/* (a table some flow reads) */
} UnknownNode;

/* Is a table some flow's source, or a partition of one? */
static bool
is_flow_table(DecodeState *st, Oid relid)
{
	List	   *ancestors;
	ListCell   *lc;
	bool		found = list_member_oid(st->sources, relid);

	if (found || !get_rel_relispartition(relid))
		return found;
	ancestors = get_partition_ancestors(relid);
	foreach(lc, ancestors)
		found |= list_member_oid(st->sources, lfirst_oid(lc));
	list_free(ancestors);
	return found;
}

/* What the decoding loop does with a record. */
typedef enum RecordAction
{
	RECORD_DECODE,
	RECORD_SKIP,				/* not decoded at all */
	RECORD_KNOW					/* not decoded, its transaction made known */
} RecordAction;

/*
 * Whether a record need not be decoded: a change of a table whose changes
 * the filter drops anyway — one of autocdc's tables that no flow of the
 * pass reads, one whose flows were evicted, a table of another database,
 * and (when the filter drops the changes of files it does not name) any
 * other table that is no catalog.  Not handing such a record to decoding
 * keeps its transaction out of the reorder buffer, so that a long
 * transaction that writes only tables no flow reads does not hold the
 * slot's restart point at its start: every pass would read all of it again
 * while it is being written.  A change of a table some flow reads (not in
 * this pass) is not decoded either, but its transaction is made known
 * (RECORD_KNOW): it holds the restart point, so that the flow can be served
 * from this slot later.  Catalog changes are always decoded (an in-place
 * update marks its transaction as changing the catalog), and so is a file
 * that no relation has now (a table dropped or rewritten since), and
 * records without a block (NEW_CID, truncates).  The records of resource
 * managers that decoding has no handler for (sequences, indexes, storage)
 * would only make their transaction known to the reorder buffer, which
 * holds the restart point all the same: a long insert into a table with a
 * serial column writes a sequence record every 32 rows.
 */
static RecordAction
record_action(DecodeState *st, XLogReaderState *r)
{
	compat_RelFileLocator rnode;
	FilterNode *fn;
	UnknownNode *un;
	bool		found;

	if (st->nodes == NULL)
		return RECORD_DECODE;
	if (GetRmgr(XLogRecGetRmid(r)).rm_decode == NULL)
		return RECORD_SKIP;
	if (!heap_record_file(r, &rnode))
		return RECORD_DECODE;
	/* a long transaction writes one file record after record */
	if (st->last_valid && memcmp(&rnode, &st->last_node, sizeof(rnode)) == 0)
		return (RecordAction) st->last_action;
	fn = hash_search(st->nodes, &rnode, HASH_FIND, NULL);
	if (fn != NULL)
	{
		RecordAction act = !fn->skip ? RECORD_DECODE : fn->known ? RECORD_KNOW : RECORD_SKIP;

		/* (eviction makes a decoded file's records skipped: not cached) */
		if (act != RECORD_DECODE)
		{
			st->last_node = rnode;
			st->last_action = act;
			st->last_valid = true;
		}
		return act;
	}
	if (compat_relfile_db(rnode) != MyDatabaseId)
		return OidIsValid(compat_relfile_db(rnode)) ? RECORD_SKIP : RECORD_DECODE;	/* shared catalogs are decoded */
	if (!st->drop_unknown)
		return RECORD_DECODE;
	un = hash_search(st->unknown, &rnode, HASH_ENTER, &found);
	if (!found)
	{
		Oid			relid = compat_RelidByRelfilenode(compat_relfile_spc(rnode),
													  compat_relfile_number(rnode));

		un->skip = OidIsValid(relid) && !IsCatalogRelationOid(relid);
		un->known = un->skip && is_flow_table(st, relid);
	}
	return !un->skip ? RECORD_DECODE : un->known ? RECORD_KNOW : RECORD_SKIP;
}

/*
 * Make the transaction of a record that is not decoded known to the
 * reorder buffer, as decoding it would (its subtransaction assigned).
 */
static void
record_make_known(LogicalDecodingContext *ctx, XLogReaderState *r)
{
	TransactionId top = XLogRecGetTopXid(r);
	TransactionId xid = XLogRecGetXid(r);

	if (!TransactionIdIsValid(xid))
		return;
	if (TransactionIdIsValid(top))
		ReorderBufferAssignChild(ctx->reorder, top, xid, r->ReadRecPtr);
	ReorderBufferProcessXid(ctx->reorder, xid, r->ReadRecPtr);
}

/*
 * Enter a table's relation file in the filter (and, for a table the pass
 * reads, its TOAST table's).  Returns whether the table's pg_class row
 * (which names the file) is older than the slot's catalog_xmin: then the
 * file has been this table's through all the WAL the pass decodes.  A
 * table no flow of the pass reads is skipped only then, so that no change
 * of a table the pass reads can be dropped.
 */
static bool
filter_add(DecodeState *st, Oid relid, bool wanted, bool source)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class c;
	FilterNode *fn;
	compat_RelFileLocator rnode;
	bool		found;
	bool		old;
	Oid			toast;

	if (!HeapTupleIsValid(tup))
		return false;
	c = (Form_pg_class) GETSTRUCT(tup);
	old = HeapTupleHeaderXminFrozen(tup->t_data) ||
		TransactionIdPrecedes(HeapTupleHeaderGetRawXmin(tup->t_data),
							  MyReplicationSlot->data.catalog_xmin);
	if ((c->relkind != RELKIND_RELATION && c->relkind != RELKIND_TOASTVALUE) ||
		!OidIsValid(c->relfilenode) || (!wanted && !source && !old))
	{
		ReleaseSysCache(tup);
		return false;
	}
	compat_relfile_set(rnode,
					   OidIsValid(c->reltablespace) ? c->reltablespace : MyDatabaseTableSpace,
					   c->relisshared ? InvalidOid : MyDatabaseId,
					   c->relfilenode);
	toast = c->reltoastrelid;
	ReleaseSysCache(tup);
	fn = hash_search(st->nodes, &rnode, HASH_ENTER, &found);
	if (!found)
	{
		fn->relid = relid;
		fn->wanted = false;
		fn->skip = false;
		fn->known = false;
		fn->queued = 0;
	}
	if (wanted)
	{
		fn->wanted = true;
		fn->skip = false;
		if (OidIsValid(toast))
			old &= filter_add(st, toast, true, source);
	}
	else if (!fn->wanted)
	{
		fn->skip = true;
		if (source)
		{
			/* its transactions are made known (a TOAST table's too) */
			fn->known = true;
			if (OidIsValid(toast))
				(void) filter_add(st, toast, false, true);
		}
	}
	return old;
}

/*
 * The filter of a pass, built from the current catalog before decoding
 * starts: the files of the tables its flows read (and their TOAST tables),
 * and of autocdc's other sources and targets.  When every table the pass
 * reads is a plain table whose file has been the same through all the WAL
 * the pass decodes (no partitions, which can be dropped with their rows
 * still in the WAL), the changes of every other file are dropped before
 * they are buffered; otherwise only those of autocdc's other tables.
 */
static void
filter_build(DecodeState *st, int64 evict_after)
{
	HASHCTL		hctl;
	ListCell   *lc;
	List	   *others = catalog_flow_relations();
	bool		stable = true;

	st->sources = catalog_flow_sources();
	hctl.keysize = sizeof(compat_RelFileLocator);
	hctl.entrysize = sizeof(FilterNode);
	hctl.hcxt = st->cxt_filter;
	st->nodes = hash_create("autocdc decode filter", 64, &hctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	hctl.entrysize = sizeof(UnknownNode);
	st->unknown = hash_create("autocdc files not in the filter", 64, &hctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	st->evict_after = evict_after;
	foreach(lc, st->feeds)
	{
		FeedCapture *fc = lfirst(lc);
		List	   *leaves = find_all_inheritors(fc->c->flow->source, NoLock, NULL);
		ListCell   *l;

		if (list_length(leaves) != 1 || get_rel_relkind(fc->c->flow->source) != RELKIND_RELATION)
			stable = false;
		foreach(l, leaves)
			stable &= filter_add(st, lfirst_oid(l), true, true);
	}
	foreach(lc, others)
	{
		List	   *leaves = find_all_inheritors(lfirst_oid(lc), NoLock, NULL);
		bool		source = list_member_oid(st->sources, lfirst_oid(lc));
		ListCell   *l;

		foreach(l, leaves)
			(void) filter_add(st, lfirst_oid(l), false, source);
	}
	st->drop_unknown = stable;
}

/*
 * Drop changes marked as not to be replicated (autocdc's hidden-state
 * writes), and those the pass's filter drops, before they are buffered and
 * decoded.
 */
static bool
filter_by_origin(LogicalDecodingContext *ctx, compat_ReplOriginId origin_id)
{
	DecodeState *st = ctx->output_writer_private;

	if (origin_id == DoNotReplicateId)
		return true;
	if (st != NULL && st->nodes != NULL && filter_change(st, ctx->reader))
		return true;
	return plugin_filter_by_origin ? plugin_filter_by_origin(ctx, origin_id) : false;
}

/* pgoutput's writer callbacks; nothing is written, see capture_change. */
static void
decode_prepare_write(LogicalDecodingContext *ctx, XLogRecPtr lsn,
					 TransactionId xid, bool last_write)
{
	resetStringInfo(ctx->out);
}

static void
decode_write(LogicalDecodingContext *ctx, XLogRecPtr lsn, TransactionId xid,
			 bool last_write)
{
}

/* Any relcache change may change a decoded table's columns. */
static void
decode_relcache_callback(Datum arg, Oid relid)
{
	decode_maps_stale = true;
}

/* The relation maps, empty. */
static void
decode_reset_rels(DecodeState *st)
{
	HASHCTL		hctl;

	MemoryContextReset(st->relcxt);
	hctl.keysize = sizeof(Oid);
	hctl.entrysize = sizeof(DecodedRel);
	hctl.hcxt = st->relcxt;
	st->rels = hash_create("autocdc decoded relations", 64, &hctl,
						   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	decode_maps_stale = false;
}

/*
 * Does the replica identity of the decoded table (as of the decoded
 * transaction) hold every key column of a changes() flow?  Otherwise the
 * WAL of its updates and deletes cannot name the old key.
 */
static bool
identity_holds_keys(Relation rel, FeedCapture *fc)
{
	Bitmapset  *ident;
	ListCell   *lc;

	if (rel->rd_rel->relreplident == REPLICA_IDENTITY_FULL)
		return true;
	ident = RelationGetIdentityKeyBitmap(rel);
	foreach(lc, fc->c->flow->keys)
	{
		/* (the catalog as of the decoded transaction) */
		AttrNumber	att = get_attnum(RelationGetRelid(rel), lfirst(lc));

		if (att == InvalidAttrNumber ||
			!bms_is_member(att - FirstLowInvalidHeapAttributeNumber, ident))
		{
			bms_free(ident);
			return false;
		}
	}
	bms_free(ident);
	return true;
}

/*
 * The decoded table is the new file an ALTER TABLE rewrites table of into
 * (ADD COLUMN with a volatile default, ALTER COLUMN TYPE, SET LOGGED...):
 * note the changes() flows that read it.  PostgreSQL logs the rewrite as
 * inserts into that file and no row changes of the table: the rows' new
 * values cannot be told from the WAL.
 */
static void
decode_rewrite(DecodeState *st, DecodedRel *dr, Oid of)
{
	List	   *ancestors = get_rel_relispartition(of) ? get_partition_ancestors(of) : NIL;
	ListCell   *fl;
	int			k = 0;

	dr->rewritten = MemoryContextAllocZero(st->relcxt, sizeof(bool) * st->nfeeds);
	foreach(fl, st->feeds)
	{
		FlowDef    *flow = ((FeedCapture *) lfirst(fl))->c->flow;

		if (flow->changes && (flow->source == of || list_member_oid(ancestors, flow->source)))
			dr->rewritten[k] = dr->wanted = true;
		k++;
	}
	list_free(ancestors);
}

/*
 * How the decoded table rel (its columns as of the decoded transaction)
 * maps onto each flow's feed: the feed itself, or a partition of it, by
 * column name.  A column whose type changed stops that flow's capture: its
 * error is raised when the flow is applied, so other flows go on.
 */
static DecodedRel *
decode_rel(DecodeState *st, Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	TupleDesc	hdesc = RelationGetDescr(rel);
	DecodedRel *dr;
	bool		found;
	List	   *ancestors = NIL;
	ListCell   *fl;
	int			k = 0;

	if (decode_maps_stale)
		decode_reset_rels(st);
	dr = hash_search(st->rels, &relid, HASH_ENTER, &found);
	if (found)
		return dr;
	dr->wanted = false;
	dr->maps = MemoryContextAllocZero(st->relcxt, sizeof(int *) * st->nfeeds);
	dr->identity_ok = MemoryContextAllocZero(st->relcxt, sizeof(bool) * st->nfeeds);
	dr->rewritten = NULL;
	if (OidIsValid(rel->rd_rel->relrewrite))
	{
		decode_rewrite(st, dr, rel->rd_rel->relrewrite);
		return dr;
	}
	if (rel->rd_rel->relispartition)
		ancestors = get_partition_ancestors(relid);
	foreach(fl, st->feeds)
	{
		FeedCapture *fc = lfirst(fl);
		Oid			source = fc->c->flow->source;
		int		   *map;
		int			i,
					j,
					c;

		k++;
		if (relid != source && !list_member_oid(ancestors, source))
			continue;
		/* batch column (after lsn and ord) -> column of the decoded relation */
		map = MemoryContextAlloc(st->relcxt, sizeof(int) * fc->feeddesc->natts);
		c = 0;
		for (i = 0; i < fc->feeddesc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(fc->feeddesc, i);

			if (att->attisdropped)
				continue;
			map[c] = -1;
			for (j = 0; j < hdesc->natts; j++)
			{
				Form_pg_attribute hatt = TupleDescAttr(hdesc, j);

				if (hatt->attisdropped || strcmp(NameStr(hatt->attname), NameStr(att->attname)) != 0)
					continue;
				if (hatt->atttypid != att->atttypid && fc->c->error == NULL)
					fc->c->error = MemoryContextStrdup(TopTransactionContext,
													   psprintf("flow \"%s\": column \"%s\" of source \"%s\" changed type",
																fc->c->flow->name, NameStr(att->attname),
																get_rel_name(source)));
				map[c] = j;
			}
			c++;
		}
		if (c + BATCH_DATA + (fc->c->flow->changes ? PSEUDO_NCOLUMNS : 0) !=
			fc->c->batchdesc->natts)
			elog(ERROR, "batch of flow \"%s\" does not match its source", fc->c->flow->name);
		dr->maps[k - 1] = map;
		dr->wanted = true;
		if (fc->c->flow->changes)
			dr->identity_ok[k - 1] = identity_holds_keys(rel, fc);
	}
	list_free(ancestors);
	return dr;
}

/*
 * Begin callback (instead of pgoutput's): which flows keep the transaction
 * about to be replayed, by its commit position and the first-read
 * snapshots.
 */
static void
capture_begin(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	DecodeState *st = ctx->output_writer_private;
	ListCell   *fl;

	st->commit_lsn = txn->final_lsn;
	st->commit_time = compat_txn_commit_time(txn);
	st->any_keep = false;
	foreach(fl, st->feeds)
	{
		FeedCapture *fc = lfirst(fl);
		FlowDef    *flow = fc->c->flow;

		fc->ord = 0;
		fc->txn_ts = 0;
		/* rows read under a snapshot arrive before every transaction it did not show */
		fc->arrival_lsn = fc->first != NULL && txn->final_lsn < fc->first_pos ?
			fc->first_pos : txn->final_lsn;
		fc->keep = !fc->evicted &&
			(!flow->has_progress || txn->final_lsn >= flow->progress) &&
			(fc->first == NULL || !snapshot_showed(fc->first, txn->xid));
		fc->skip = fc->keep && !XLogRecPtrIsInvalid(flow->skip_upto) &&
			txn->final_lsn <= flow->skip_upto;
		if (fc->keep && !fc->skip)
			fc->c->m->last_commit_time = compat_txn_commit_time(txn);
		st->any_keep |= fc->keep;
	}
}

/* Commit callback: nothing to do, the rows are in the batches. */
static void
capture_commit(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
			   XLogRecPtr commit_lsn)
{
}

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

/*
 * Deform a decoded tuple.  Out-of-line values that the decoder assembled
 * from the transaction's TOAST chunks are in its memory and are copied
 * (and noted in whole, unless NULL: the row store keeps them); a pointer into the TOAST
 * table (the WAL of an UPDATE that left the value unchanged) is left as it
 * is, for the caller to fill: it is never dereferenced, since the table's
 * chunks may have been vacuumed away or reused since.
 */
static void
deform_decoded(TupleDesc desc, HeapTuple tup, Datum **values, bool **nulls, bool **whole)
{
	int			j;

	*values = palloc(sizeof(Datum) * desc->natts);
	*nulls = palloc(sizeof(bool) * desc->natts);
	if (whole)
		*whole = palloc0(sizeof(bool) * desc->natts);
	heap_deform_tuple(tup, desc, *values, *nulls);
	for (j = 0; j < desc->natts; j++)
		if (!(*nulls)[j] && TupleDescAttr(desc, j)->attlen == -1 &&
			VARATT_IS_EXTERNAL(DatumGetPointer((*values)[j])) &&
			!VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer((*values)[j])))
		{
			(*values)[j] = PointerGetDatum(detoast_external_attr((struct varlena *)
																 DatumGetPointer((*values)[j])));
			if (whole)
				(*whole)[j] = true;
		}
}

/* The new row of a change, deformed. */
static void
change_new(DecodedChange *ch)
{
	if (ch->nvalues == NULL)
		deform_decoded(ch->desc, ch->newtup, &ch->nvalues, &ch->nnulls, &ch->nwhole);
}

/* The old row (or key) of a change, deformed. */
static void
change_old(DecodedChange *ch)
{
	if (ch->ovalues == NULL)
		deform_decoded(ch->desc, ch->oldtup, &ch->ovalues, &ch->onulls, NULL);
}

/* Stop capturing a flow for this pass; its error is raised when it is applied. */
static void
capture_fail(FeedCapture *fc, int code, char *message, char *hint)
{
	if (fc->c->error != NULL)
		return;
	fc->c->error = MemoryContextStrdup(TopTransactionContext, message);
	fc->c->error_hint = hint ? MemoryContextStrdup(TopTransactionContext, hint) : NULL;
	fc->c->error_code = code;
}

/*
 * Stop capturing a flow at a change that cannot be told (the replica
 * identity no longer names the row): the flow needs a resync.
 */
static void
capture_untold(FeedCapture *fc, char *message, char *hint)
{
	if (fc->c->error != NULL)
		return;
	capture_fail(fc, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, message, hint);
	fc->c->error_resync = true;
}

/*
 * A column the table did not have yet when a row of a changes() source
 * changed (batch data position i): an ADD COLUMN since then gave the row
 * the value PostgreSQL stores for older rows (NULL when none).  False, and
 * the flow needs a resync, when its partitions store different values.
 */
static bool
missing_value(DecodedChange *ch, FeedCapture *fc, int i, Datum *value, bool *isnull)
{
	if (fc->missing[i] == MISSING_CONFLICT)
	{
		capture_untold(fc,
					   psprintf("flow \"%s\": the partitions of source \"%s\" give rows older than column \"%s\" different values",
								fc->c->flow->name, get_rel_name(fc->c->flow->source),
								NameStr(TupleDescAttr(fc->c->batchdesc, BATCH_DATA + i)->attname)),
					   psprintf("Run SELECT autocdc.full_refresh(%s): it reads the table again and keeps the history.",
								quote_literal_cstr(fc->c->flow->name)));
		return false;
	}
	*isnull = fc->missing[i] != MISSING_VALUE;
	*value = *isnull ? (Datum) 0 : fc->missing_value[i];
	return true;
}

/*
 * Put one event into a flow's batch: the decoded row (decoded layout; NULL:
 * every column NULL, and map is not read) mapped onto the batch's columns
 * by map, at the next position of the transaction, and for a changes()
 * source its pseudo-columns.  A column holding a pointer into the TOAST
 * table is filled from old (the WAL's old row, or NULL) when it can be;
 * otherwise an upsert of a changes() source keeps the pointer for the row
 * store to fill, and the capture notes it (and the values that came whole,
 * which the store keeps); a feed's flow fails.
 */
static void
emit_event(DecodedChange *ch, FeedCapture *fc, int *map, Datum *dv, bool *dn,
		   Datum *old, bool *oldnulls, const char *change_type)
{
	DecodeState *st = ch->st;
	TupleDesc	bdesc = fc->c->batchdesc;
	bool		pseudo = fc->c->flow->changes;
	int			ndata = bdesc->natts - BATCH_DATA - (pseudo ? PSEUDO_NCOLUMNS : 0);
	Datum	   *values = palloc(sizeof(Datum) * bdesc->natts);
	bool	   *nulls = palloc(sizeof(bool) * bdesc->natts);
	bool		upsert = pseudo && fc->c->notes != NULL && dv != NULL && dv == ch->nvalues;
	bool		newrow = pseudo && dv != NULL && dv == ch->nvalues;
	Bitmapset  *whole = NULL;
	Bitmapset  *unchanged = NULL;
	bool		pointers = false;
	int			i;

	values[BATCH_LSN] = LSNGetDatum(fc->arrival_lsn);
	values[BATCH_ORD] = Int64GetDatum(++fc->ord);
	nulls[BATCH_LSN] = nulls[BATCH_ORD] = false;
	for (i = 0; i < ndata; i++)
	{
		int			h = dv != NULL ? map[i] : -1;

		values[BATCH_DATA + i] = (dv == NULL || h < 0) ? (Datum) 0 : dv[h];
		nulls[BATCH_DATA + i] = (dv == NULL || h < 0) ? true : dn[h];
		if (newrow && h < 0 && !missing_value(ch, fc, i, &values[BATCH_DATA + i],
											  &nulls[BATCH_DATA + i]))
			return;
		if (h < 0)
			continue;
		if (nulls[BATCH_DATA + i] || TupleDescAttr(ch->desc, h)->attlen != -1)
			continue;
		if (!VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(values[BATCH_DATA + i])))
		{
			if (upsert && ch->nwhole[h] && fc->reads[i])
				whole = bms_add_member(whole, i);
			continue;
		}
		if (old != NULL && !oldnulls[h] &&
			!VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(old[h])))
		{
			values[BATCH_DATA + i] = old[h];	/* REPLICA IDENTITY FULL */
			if (upsert && fc->reads[i])
				unchanged = bms_add_member(unchanged, i);
			continue;
		}
		if (!fc->reads[i])
		{
			/* a column the flow never reads */
			values[BATCH_DATA + i] = (Datum) 0;
			nulls[BATCH_DATA + i] = true;
			continue;
		}
		if (upsert)
		{
			pointers = true;	/* the row store fills it */
			continue;
		}
		capture_fail(fc, ERRCODE_INTERNAL_ERROR,
					 psprintf("flow \"%s\": a row inserted into source \"%s\" at " COMPAT_LSN_FORMAT " holds a pointer into the TOAST table for column \"%s\"",
							  fc->c->flow->name, get_rel_name(fc->c->flow->source),
							  LSN_FORMAT_ARGS(st->commit_lsn),
							  NameStr(TupleDescAttr(ch->desc, h)->attname)),
					 NULL);
		return;
	}
	if (whole != NULL || unchanged != NULL || pointers)
		rownotes_mark(fc->c->notes, tuplestore_tuple_count(fc->c->batch), whole, unchanged,
					  pointers, ch->moved);
	if (pseudo)
	{
		int			p = BATCH_DATA + ndata;

		/* one value per transaction, strictly increasing along arrival order */
		if (fc->txn_ts == 0)
		{
			fc->txn_ts = fc->last_ts != 0 && st->commit_time <= fc->last_ts ?
				fc->last_ts + 1 : st->commit_time;
			fc->last_ts = fc->txn_ts;
		}
		values[p + PSEUDO_CHANGE_TYPE] = CStringGetTextDatum(change_type);
		values[p + PSEUDO_COMMIT_LSN] = LSNGetDatum(st->commit_lsn);
		values[p + PSEUDO_COMMIT_TIMESTAMP] = TimestampTzGetDatum(fc->txn_ts);
		nulls[p + PSEUDO_CHANGE_TYPE] = nulls[p + PSEUDO_COMMIT_LSN] =
			nulls[p + PSEUDO_COMMIT_TIMESTAMP] = false;
	}
	tuplestore_putvalues(fc->c->batch, bdesc, values, nulls);
	if (fc->c->first_commit == 0)
		fc->c->first_commit = st->commit_time;
	st->kept++;
}

/*
 * A kind of source: what its flows make of each decoded action on a table
 * they read (NULL: the action is no event of this kind).
 */
struct SourceKind
{
	const char *name;
	void		(*on_insert) (DecodedChange *ch, FeedCapture *fc, int *map);
	void		(*on_update) (DecodedChange *ch, FeedCapture *fc, int *map);
	void		(*on_delete) (DecodedChange *ch, FeedCapture *fc, int *map);
	void		(*on_truncate) (DecodedChange *ch, FeedCapture *fc, int *map);
};

/* A feed: every committed insert is one event, carrying the inserted row. */
static void
feed_insert(DecodedChange *ch, FeedCapture *fc, int *map)
{
	change_new(ch);
	emit_event(ch, fc, map, ch->nvalues, ch->nnulls, NULL, NULL, NULL);
}

/* A later update of a feed row changes nothing; it is counted. */
static void
feed_update(DecodedChange *ch, FeedCapture *fc, int *map)
{
	fc->c->m->num_ignored_updates++;
}

/* So is a deleted feed row (a purge). */
static void
feed_delete(DecodedChange *ch, FeedCapture *fc, int *map)
{
	fc->c->m->num_ignored_deletes++;
}

static const SourceKind feed_source = {
	.name = "feed",
	.on_insert = feed_insert,
	.on_update = feed_update,
	.on_delete = feed_delete,
	.on_truncate = NULL,		/* a purge */
};

/* changes(): an insert is an upsert of the new row. */
static void
changes_insert(DecodedChange *ch, FeedCapture *fc, int *map)
{
	change_new(ch);
	emit_event(ch, fc, map, ch->nvalues, ch->nnulls, NULL, NULL, "insert");
}

/*
 * changes(): an update is an upsert of the new row; one that changes the
 * key is first a delete of the old key, at the same position.  An
 * unchanged out-of-line value is filled from the WAL's old row (REPLICA
 * IDENTITY FULL).
 */
static void
changes_update(DecodedChange *ch, FeedCapture *fc, int *map)
{
	change_new(ch);
	if (ch->oldtup != NULL)
	{
		int			i;
		bool		moved = false;

		change_old(ch);
		for (i = 0; i < list_length(fc->c->flow->keys); i++)
		{
			int			h = map[fc->keypos[i]];
			Form_pg_attribute att;

			if (h < 0)
				continue;
			att = TupleDescAttr(ch->desc, h);
			if (ch->onulls[h] != ch->nnulls[h] ||
				(!ch->nnulls[h] && !datumIsEqual(ch->ovalues[h], ch->nvalues[h],
												 att->attbyval, att->attlen)))
				moved = true;
		}
		if (moved)
			emit_event(ch, fc, map, ch->ovalues, ch->onulls, NULL, NULL, "delete");
		ch->moved = moved;
	}
	emit_event(ch, fc, map, ch->nvalues, ch->nnulls, ch->ovalues, ch->onulls, "update");
}

/* changes(): a delete carries the old key (the replica identity's columns). */
static void
changes_delete(DecodedChange *ch, FeedCapture *fc, int *map)
{
	if (ch->oldtup == NULL)
	{
		capture_untold(fc,
					   psprintf("flow \"%s\": the WAL of a delete from source \"%s\" at " COMPAT_LSN_FORMAT " does not name the deleted row",
							  fc->c->flow->name, get_rel_name(fc->c->flow->source),
							  LSN_FORMAT_ARGS(ch->st->commit_lsn)),
					 psprintf("The table's replica identity no longer holds the flow's keys. Restore it (a primary key or REPLICA IDENTITY USING INDEX on the keys, or FULL), then run SELECT autocdc.full_refresh(%s).",
							  quote_literal_cstr(fc->c->flow->name)));
		return;
	}
	change_old(ch);
	emit_event(ch, fc, map, ch->ovalues, ch->onulls, NULL, NULL, "delete");
}

/*
 * changes(): a TRUNCATE is one truncate event, every table column NULL.  A
 * partitioned table's leaves are counted instead: capture_truncate makes
 * the one event once it has seen them all.
 */
static void
changes_truncate(DecodedChange *ch, FeedCapture *fc, int *map)
{
	if (fc->partitioned)
	{
		/* (the record lists the partitioned tables too) */
		if (ch->rel->rd_rel->relkind == RELKIND_RELATION)
			fc->trunc_leaves++;
		fc->truncated = true;
		return;
	}
	emit_event(ch, fc, map, NULL, NULL, NULL, NULL, "truncate");
}

/* The leaves of a partitioned table, as of the decoded transaction. */
static int
count_leaves(Oid relid)
{
	List	   *rels = find_all_inheritors(relid, NoLock, NULL);
	ListCell   *lc;
	int			n = 0;

	foreach(lc, rels)
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION)
			n++;
	list_free(rels);
	return n;
}

/*
 * After a TRUNCATE was dispatched: a changes() flow of a partitioned table
 * whose every leaf it lists gets one truncate event; one that lists only
 * some leaves cannot be told as events (the other leaves' rows stay), and
 * the flow needs a resync.
 */
static void
changes_truncate_partitioned(DecodeState *st, FeedCapture *fc, Relation rel)
{
	DecodedChange ch;
	int			leaves = count_leaves(fc->c->flow->source);

	if (fc->trunc_leaves == leaves)
	{
		memset(&ch, 0, sizeof(ch));
		ch.st = st;
		ch.rel = rel;
		ch.desc = RelationGetDescr(rel);
		emit_event(&ch, fc, NULL, NULL, NULL, NULL, NULL, "truncate");
		return;
	}
	capture_untold(fc,
				   psprintf("flow \"%s\": a TRUNCATE at " COMPAT_LSN_FORMAT " emptied %d of the %d partitions of source \"%s\"",
							fc->c->flow->name, LSN_FORMAT_ARGS(st->commit_lsn),
							fc->trunc_leaves, leaves, get_rel_name(fc->c->flow->source)),
				   psprintf("The rows of the other partitions stay, which no event can say. Run SELECT autocdc.full_refresh(%s): it reads the table again and keeps the history.",
							quote_literal_cstr(fc->c->flow->name)));
}

static const SourceKind changes_source = {
	.name = "changes",
	.on_insert = changes_insert,
	.on_update = changes_update,
	.on_delete = changes_delete,
	.on_truncate = changes_truncate,
};

/*
 * A row written by an ALTER TABLE that rewrites a changes() source (or a
 * leaf of it): the flows that keep the transaction need a resync.
 */
static void
rewrite_untold(DecodeState *st, DecodedRel *dr, Relation relation)
{
	ListCell   *fl;
	int			k = 0;

	foreach(fl, st->feeds)
	{
		FeedCapture *fc = lfirst(fl);
		FlowDef    *flow = fc->c->flow;
		Oid			of = relation->rd_rel->relrewrite;

		if (dr->rewritten[k++] && fc->keep && !fc->skip && fc->c->error == NULL)
			capture_untold(fc,
						   psprintf("flow \"%s\": %s was rewritten by an ALTER TABLE at %X/%X, which changes rows without logging their changes",
									flow->name,
									of == flow->source ?
									psprintf("source \"%s\"", get_rel_name(of)) :
									psprintf("partition \"%s\" of source \"%s\"",
											 get_rel_name(of), get_rel_name(flow->source)),
									LSN_FORMAT_ARGS(st->commit_lsn)),
						   psprintf("Run SELECT autocdc.full_refresh(%s): it reads the table again and keeps the history.",
									quote_literal_cstr(flow->name)));
	}
}

/*
 * Hand one decoded change of relation to the flows that keep its
 * transaction and read the relation, each by the kind of its source.
 */
static void
dispatch_change(DecodeState *st, Relation relation, ReorderBufferChangeType action,
				HeapTuple newtup, HeapTuple oldtup)
{
	DecodedRel *dr = decode_rel(st, relation);
	DecodedChange ch;
	ListCell   *fl;
	MemoryContext old;
	int			k = 0;

	if (!dr->wanted)
		return;
	if (dr->rewritten != NULL)
	{
		rewrite_untold(st, dr, relation);
		return;
	}
	memset(&ch, 0, sizeof(ch));
	ch.st = st;
	ch.rel = relation;
	ch.desc = RelationGetDescr(relation);
	ch.newtup = newtup;
	ch.oldtup = oldtup;
	old = MemoryContextSwitchTo(st->cxt);
	foreach(fl, st->feeds)
	{
		FeedCapture *fc = lfirst(fl);
		int		   *map = dr->maps[k++];
		void		(*handler) (DecodedChange *ch, FeedCapture *fc, int *map);

		if (map == NULL || !fc->keep || fc->c->error != NULL)
			continue;
		switch (action)
		{
			case REORDER_BUFFER_CHANGE_INSERT:
				handler = fc->kind->on_insert;
				break;
			case REORDER_BUFFER_CHANGE_UPDATE:
				handler = fc->kind->on_update;
				break;
			case REORDER_BUFFER_CHANGE_DELETE:
				handler = fc->kind->on_delete;
				break;
			case REORDER_BUFFER_CHANGE_TRUNCATE:
				handler = fc->kind->on_truncate;
				break;
			default:
				handler = NULL;
		}
		if (handler == NULL)
			continue;
		if (fc->skip)
		{
			/* (a feed's skipped updates and deletes were no events anyway) */
			if (fc->c->flow->changes || action == REORDER_BUFFER_CHANGE_INSERT)
				fc->c->m->num_skipped++;
			if (fc->c->notes != NULL)
				fc->c->notes->skipped = true;	/* the row store cannot follow */
			continue;
		}
		if (fc->c->flow->changes && !dr->identity_ok[k - 1] &&
			(action == REORDER_BUFFER_CHANGE_UPDATE || action == REORDER_BUFFER_CHANGE_DELETE))
		{
			capture_untold(fc,
						   psprintf("flow \"%s\": %s of %s at " COMPAT_LSN_FORMAT " cannot be told: the table's replica identity no longer holds the flow's keys",
								  fc->c->flow->name,
								  action == REORDER_BUFFER_CHANGE_UPDATE ? "an update" : "a delete",
								  RelationGetRelid(relation) == fc->c->flow->source ?
								  psprintf("source \"%s\"", RelationGetRelationName(relation)) :
								  psprintf("partition \"%s\" of source \"%s\"",
										   RelationGetRelationName(relation),
										   get_rel_name(fc->c->flow->source)),
								  LSN_FORMAT_ARGS(st->commit_lsn)),
						 psprintf("Give the table back a replica identity that holds the keys (a primary key or REPLICA IDENTITY USING INDEX on them, or FULL), then run SELECT autocdc.full_refresh(%s): it reads the table again and keeps the history.",
								  quote_literal_cstr(fc->c->flow->name)));
			continue;
		}
		handler(&ch, fc, map);
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(st->cxt);
}

/*
 * Change callback (instead of pgoutput's, which would serialize every
 * column for us to parse back): the flows take their events straight from
 * the decoded tuples.
 */
static void
capture_change(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
			   Relation relation, ReorderBufferChange *change)
{
	DecodeState *st = ctx->output_writer_private;
	HeapTuple	newtup = NULL;
	HeapTuple	oldtup = NULL;

	if (!st->any_keep)
		return;
	switch (change->action)
	{
		case REORDER_BUFFER_CHANGE_INSERT:
			newtup = compat_change_newtuple(change);
			if (newtup == NULL)
				return;
			break;
		case REORDER_BUFFER_CHANGE_UPDATE:
			newtup = compat_change_newtuple(change);
			oldtup = compat_change_oldtuple(change);
			if (newtup == NULL)
				return;
			break;
		case REORDER_BUFFER_CHANGE_DELETE:
			oldtup = compat_change_oldtuple(change);
			break;
		default:
			return;
	}
	dispatch_change(st, relation, change->action, newtup, oldtup);
}

/* Truncate callback: one change for each truncated table the pass reads. */
static void
capture_truncate(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
				 int nrelations, Relation relations[], ReorderBufferChange *change)
{
	DecodeState *st = ctx->output_writer_private;
	ListCell   *lc;
	int			i;

	if (!st->any_keep)
		return;
	foreach(lc, st->feeds)
	{
		((FeedCapture *) lfirst(lc))->trunc_leaves = 0;
		((FeedCapture *) lfirst(lc))->truncated = false;
	}
	for (i = 0; i < nrelations; i++)
		dispatch_change(st, relations[i], REORDER_BUFFER_CHANGE_TRUNCATE, NULL, NULL);
	foreach(lc, st->feeds)
	{
		FeedCapture *fc = lfirst(lc);

		if (fc->partitioned && fc->truncated && fc->c->error == NULL)
			changes_truncate_partitioned(st, fc, relations[0]);
	}
}

/*
 * Decoding builds relcache entries of the decoded tables under historic
 * snapshots, and InvalidateSystemCaches() leaves alone the entries of tables
 * this transaction created or rewrote (ALTER COLUMN TYPE, TRUNCATE...): such
 * an entry of the target or the hidden state would keep a past shape.  Make
 * them rebuild from the current catalog.
 */
static void
forget_historic_relcache(FlowDef *flow)
{
	Oid			state = storage_state_relid(flow->target_id);

	CacheInvalidateRelcacheByRelid(flow->target);
	if (OidIsValid(state))
		CacheInvalidateRelcacheByRelid(state);
	CacheInvalidateRelcacheByRelid(flow->source);
	CommandCounterIncrement();
}

/* Is the flow's progress still served by the slot?  (The slot is ours.) */
static bool
progress_served(FlowDef *flow)
{
	return !flow->has_progress ||
		(flow->slot_name != NULL &&
		 strcmp(flow->slot_name, NameStr(MyReplicationSlot->data.name)) == 0 &&
		 flow->progress >= MyReplicationSlot->data.confirmed_flush);
}

/*
 * Which columns of the source (batch data positions, desc: the source as
 * it is now) a changes() flow reads: those it selects and those its delete
 * and truncate conditions use (source_check found them; its sequence reads
 * only pseudo-columns).  A feed reads them all (its rows never hold
 * pointers into the TOAST table).
 */
static bool *
flow_reads(FlowDef *flow, TupleDesc desc)
{
	bool	   *reads = palloc0(sizeof(bool) * desc->natts);
	int			i,
				pos = 0;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		reads[pos++] = !flow->changes || rowstore_column_read(flow, NameStr(att->attname));
	}
	return reads;
}

/*
 * The values PostgreSQL stores for the rows of a changes() source older
 * than each of its columns (see missing_value), as the catalog is now.
 */
static void
flow_missing_values(FeedCapture *fc)
{
	List	   *names = NIL;
	int			i;

	for (i = 0; i < fc->feeddesc->natts; i++)
		if (!TupleDescAttr(fc->feeddesc, i)->attisdropped)
			names = lappend(names, NameStr(TupleDescAttr(fc->feeddesc, i)->attname));
	fc->missing = palloc(sizeof(MissingValue) * (list_length(names) + 1));
	fc->missing_value = palloc0(sizeof(Datum) * (list_length(names) + 1));
	relation_missing_values(fc->c->flow->source, names, fc->missing, fc->missing_value);
	list_free(names);
}

/* Open a flow's feed for a pass. */
static FeedCapture *
feed_capture_open(Capture *c)
{
	FeedCapture *fc = palloc0(sizeof(FeedCapture));

	ListCell   *lc;
	int			k = 0;

	fc->c = c;
	fc->kind = c->flow->changes ? &changes_source : &feed_source;
	fc->feed = table_open(c->flow->source, AccessShareLock);
	fc->feeddesc = RelationGetDescr(fc->feed);
	fc->partitioned = c->flow->changes &&
		fc->feed->rd_rel->relkind == RELKIND_PARTITIONED_TABLE;
	fc->last_ts = c->flow->progress_ts;
	fc->reads = flow_reads(c->flow, fc->feeddesc);
	if (c->flow->changes)
		flow_missing_values(fc);
	fc->keypos = palloc(sizeof(int) * list_length(c->flow->keys));
	foreach(lc, c->flow->keys)
	{
		int			i,
					pos = 0;

		fc->keypos[k] = -1;
		for (i = 0; i < fc->feeddesc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(fc->feeddesc, i);

			if (att->attisdropped)
				continue;
			if (strcmp(NameStr(att->attname), lfirst(lc)) == 0)
				fc->keypos[k] = pos;
			pos++;
		}
		if (fc->keypos[k] < 0)
			elog(ERROR, "key column \"%s\" of flow \"%s\" is not in its source",
				 (char *) lfirst(lc), c->flow->name);
		k++;
	}
	return fc;
}

/*
 * Capture the events of change flows into their batches in one decoding
 * pass: a first read for each flow without progress, then the decoded
 * inserts.  Sets each captured flow's progress to the end of what was
 * decoded.  A flow whose progress the slot cannot serve is an error when
 * resync_error, and is otherwise left out (c->resync).  With max_events
 * > 0 the pass stops at the first transaction boundary past that many
 * events, or past max_wal bytes of WAL (0: no limit), and *more says
 * whether WAL was left to decode.  With evict_after > 0, the flows reading
 * a table with more changes than that in the pass are evicted from it
 * (c->deferred: not captured, their progress unchanged).  slot is the slot
 * the flows are on (slots.c).  SPI must be connected.
 */
void
source_capture_flows(List *captures, const char *slot, int64 max_events,
					 int64 max_wal, int64 evict_after, bool resync_error, bool *more)
{
	DecodeState st;
	XLogRecPtr	end;
	XLogRecPtr	result = InvalidXLogRecPtr;
	TimestampTz decoded_at;
	volatile ResourceOwner saved_owner = CurrentResourceOwner;
	ListCell   *lc;
	volatile bool any_first = false;

	if (slot == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the replication slot of autocdc does not exist")));
	if (more)
		*more = false;
	memset(&st, 0, sizeof(st));
	st.cxt = AllocSetContextCreate(CurrentMemoryContext, "autocdc decode",
								   ALLOCSET_DEFAULT_SIZES);
	st.relcxt = AllocSetContextCreate(CurrentMemoryContext, "autocdc decode relations",
									  ALLOCSET_SMALL_SIZES);
	st.cxt_filter = AllocSetContextCreate(CurrentMemoryContext, "autocdc decode filter",
										  ALLOCSET_SMALL_SIZES);

	compat_ReplicationSlotAcquire(slot, false);
	PG_TRY();
	{
		LogicalDecodingContext *ctx;
		List	   *options;
		XLogRecPtr	start;

		foreach(lc, captures)
		{
			Capture    *c = lfirst(lc);

			c->resync = false;
			c->deferred = false;
			if (!progress_served(c->flow))
			{
				if (resync_error)
				{
					failures_note_resync(c->flow->id);
					if (c->flow->resync_reason)
						ereport(ERROR,
								(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
								 errmsg("flow \"%s\" needs a resync", c->flow->name),
								 errdetail("It was taken off its replication slot: %s.", c->flow->resync_reason),
								 errhint("Run SELECT autocdc.full_refresh(%s): it reads the source again.",
										 quote_literal_cstr(c->flow->name))));
					ereport(ERROR,
							(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
							 errmsg("flow \"%s\" needs a resync: its source position " COMPAT_LSN_FORMAT " is no longer available",
									c->flow->name, LSN_FORMAT_ARGS(c->flow->progress)),
							 errhint("Run autocdc.full_refresh(%s).", quote_literal_cstr(c->flow->name))));
				}
				c->resync = true;
				continue;
			}
			st.feeds = lappend(st.feeds, feed_capture_open(c));
			st.nfeeds++;
			if (!c->flow->has_progress)
				any_first = true;
		}

		/*
		 * Let the slot forget what every flow has applied before decoding
		 * (its restart point moves with the candidates the last pass
		 * found); otherwise each run re-reads the previous run's WAL.  A
		 * first read skips this, so that nothing can move the slot between
		 * its snapshot and what it decodes.
		 */
		if (!any_first)
			slots_confirm_held();
		else
		{
			Snapshot	snap = first_read_snapshot();
			XLogRecPtr	pos = GetXLogInsertRecPtr();
			TimestampTz taken = GetCurrentTimestamp();

			PushActiveSnapshot(snap);
			foreach(lc, st.feeds)
			{
				FeedCapture *fc = lfirst(lc);
				int64		ord;

				if (fc->c->flow->has_progress)
					continue;
				fc->c->flow->read_whole = true;
				/* one transaction, stamped with the snapshot's time */
				fc->last_ts = fc->last_ts != 0 && taken <= fc->last_ts ? fc->last_ts + 1 : taken;
				ord = source_read_whole(fc->c->flow, fc->c->batch, fc->c->batchdesc,
										pos, fc->last_ts, fc->c->notes);
				if (fc->c->flow->refresh_keep)
					source_read_missing(fc->c->flow, fc->c->batch, fc->c->batchdesc,
										pos, fc->last_ts, ord);
				if (tuplestore_tuple_count(fc->c->batch) > 0)
					fc->c->first_commit = GetCurrentTimestamp();
				fc->first = snap;
				fc->first_pos = pos;
			}
			PopActiveSnapshot();
		}

		/* decode in memory as far as autocdc.decoding_work_mem allows */
		(void) set_config_option("logical_decoding_work_mem",
								 psprintf("%d", autocdc_decoding_work_mem),
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);

		/*
		 * What the sources' statistics count now was committed before this
		 * point, which this pass decodes: a later count that differs tells
		 * that a later commit may be pending (lag.c).
		 */
		pgstat_clear_snapshot();
		decoded_at = GetCurrentTimestamp();
		foreach(lc, st.feeds)
		{
			Capture    *c = ((FeedCapture *) lfirst(lc))->c;

			c->lag.changes = lag_source_changes(c->flow->source);
			c->lag.decoded_at = decoded_at;
			c->lag.pending_since = 0;
			c->lag.cut = false;
		}

		/* everything committed before this point is decoded by this pass */
		XLogFlush(compat_GetXLogInsertEndRecPtr());
		end = GetFlushRecPtr(NULL);

		options = list_make3(makeDefElem("proto_version", (Node *) makeString("1"), -1),
							 makeDefElem("publication_names",
										 (Node *) makeString(AUTOCDC_PUBLICATION), -1),
							 makeDefElem("binary", (Node *) makeString("true"), -1));
		decoding_quietly = true;
		ctx = CreateDecodingContext(InvalidXLogRecPtr, options, false,
									XL_ROUTINE(.page_read = read_local_xlog_page,
											   .segment_open = wal_segment_open,
											   .segment_close = wal_segment_close),
									decode_prepare_write, decode_write, NULL);
		ctx->output_writer_private = &st;
		/* the rows an ALTER TABLE rewrites a source into (decode_rewrite) */
		ctx->reorder->output_rewrites = true;
		plugin_filter_by_origin = ctx->callbacks.filter_by_origin_cb;
		ctx->callbacks.filter_by_origin_cb = filter_by_origin;

		/*
		 * pgoutput is the plugin (any server lets it decode), but its
		 * transaction and change callbacks are replaced by ours: they read
		 * the decoded tuples directly instead of pgoutput's messages.
		 */
		ctx->callbacks.begin_cb = capture_begin;
		ctx->callbacks.change_cb = capture_change;
		ctx->callbacks.commit_cb = capture_commit;
		ctx->callbacks.truncate_cb = capture_truncate;
		ctx->callbacks.message_cb = NULL;
		if (!decode_relcache_callback_registered)
		{
			CacheRegisterRelcacheCallback(decode_relcache_callback, (Datum) 0);
			decode_relcache_callback_registered = true;
		}
		decode_reset_rels(&st);
		filter_build(&st, evict_after);
		saved_owner = CurrentResourceOwner;
		/*
		 * The WAL bound counts from what is new to the slot's flows: the
		 * records between the restart point and the confirmed position are
		 * read again on every pass (the restart point moves only at
		 * running-transactions records, which the pass must reach).
		 */
		start = Max(MyReplicationSlot->data.restart_lsn,
					MyReplicationSlot->data.confirmed_flush);
		XLogBeginRead(ctx->reader, MyReplicationSlot->data.restart_lsn);
		InvalidateSystemCaches();
		while (ctx->reader->EndRecPtr < end)
		{
			XLogRecord *record;
			char	   *errm = NULL;

			/* a whole transaction is decoded at its commit record */
			if ((max_events > 0 && st.kept >= max_events) ||
				(max_wal > 0 && ctx->reader->EndRecPtr > start + max_wal))
			{
				if (more)
					*more = true;
				break;
			}
			record = XLogReadRecord(ctx->reader, &errm);
			if (errm)
				elog(ERROR, "could not find record for logical decoding: %s", errm);
			if (record != NULL)
			{
				RecordAction act = record_action(&st, ctx->reader);

				if (act == RECORD_DECODE)
					LogicalDecodingProcessRecord(ctx, ctx->reader);
				else if (act == RECORD_KNOW)
					record_make_known(ctx, ctx->reader);
			}
			CHECK_FOR_INTERRUPTS();
		}
		/* decoding's internal subtransactions may leave another owner current */
		CurrentResourceOwner = saved_owner;
		result = ctx->reader->EndRecPtr;
		FreeDecodingContext(ctx);
		decoding_quietly = false;
		InvalidateSystemCaches();
		foreach(lc, st.feeds)
			forget_historic_relcache(((FeedCapture *) lfirst(lc))->c->flow);
		slots_confirm_held();

		/*
		 * Every pass decodes from the slot's restart point, which moves only
		 * at running-transactions records; the background writer logs one
		 * every 15 s.  When the restart point lags far behind, log one now,
		 * so that the next pass can move it and re-reads less.
		 */
		if (MyReplicationSlot->data.confirmed_flush >
			MyReplicationSlot->data.restart_lsn + RESTART_LAG_BYTES)
			(void) LogStandbySnapshot();
		ReplicationSlotRelease();
	}
	PG_CATCH();
	{
		decoding_quietly = false;
		CurrentResourceOwner = saved_owner;
		InvalidateSystemCaches();
		if (MyReplicationSlot != NULL)
			ReplicationSlotRelease();
		PG_RE_THROW();
	}
	PG_END_TRY();

	foreach(lc, st.feeds)
	{
		FeedCapture *fc = lfirst(lc);
		FlowDef    *flow = fc->c->flow;

		table_close(fc->feed, AccessShareLock);
		if (fc->evicted)
		{
			/* decoded again where it is served apart */
			tuplestore_clear(fc->c->batch);
			continue;
		}
		fc->c->lag.cut = more != NULL && *more;
		if (result > flow->progress || !flow->has_progress)
			flow->progress = result;
		flow->progress_ts = fc->last_ts;
		flow->has_progress = true;
		flow->slot_name = pstrdup(slot);
	}
	MemoryContextDelete(st.cxt);
	MemoryContextDelete(st.relcxt);
	MemoryContextDelete(st.cxt_filter);
}

/*
 * Capture the events of one change flow into the batch (see
 * source_capture_flows); a flow that needs a resync is an error.
 */
void
source_capture(FlowDef *flow, Tuplestorestate *batch, TupleDesc batchdesc,
			   RunMetrics *m, RowNotes *notes)
{
	Capture		c;

	memset(&c, 0, sizeof(c));
	c.flow = flow;
	c.batch = batch;
	c.batchdesc = batchdesc;
	c.m = m;
	c.notes = notes;
	source_capture_flows(list_make1(&c), slots_for_flow(flow), 0, 0, 0, true, NULL);
	source_raise_capture_error(&c);
	/* everything decoded is applied, or the run fails and the note goes */
	lag_note(flow->id, &c.lag);
}

/* Raise the error that stopped a flow's capture, if any. */
void
source_raise_capture_error(Capture *c)
{
	failures_note_resync(c->error && c->error_resync ? c->flow->id : 0);
	if (c->error && c->error_code != 0)
		ereport(ERROR,
				(errcode(c->error_code),
				 errmsg("%s", c->error),
				 c->error_hint ? errhint("%s", c->error_hint) : 0));
	if (c->error)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s", c->error),
				 errhint("Run autocdc.full_refresh(%s) to re-read the source.",
						 quote_literal_cstr(c->flow->name))));
}

/*
 * source_check's test of a delete or truncate condition (NULL: none): still
 * a boolean; the source columns it reads go into flow->expr_columns.
 */
static void
check_condition(FlowDef *flow, const char *expr, const char *what)
{
	ExprInfo   *e;

	if (expr == NULL)
		return;
	e = expr_analyze(flow->source, flow->changes, expr, what);
	if (e->typid != BOOLOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("flow \"%s\": %s is no longer a boolean expression", flow->name, what),
				 errhint("Change the column back, or drop the flow and create it again.")));
	flow->expr_columns = list_concat(flow->expr_columns, e->source_columns);
}

/*
 * What a run checks of a change flow's source, because nothing may be
 * skipped or misread silently: it is still a logged table in every leaf
 * (an unlogged one writes no WAL for its inserts, so decoding never sees
 * them), and none is a Citus table (whose rows its shards write); a
 * changes() source still has a unique index on the keys (or rows
 * sharing a key would be folded into one: the flow then needs a resync);
 * row-level security does not
 * apply to the owner (decoded rows are not filtered by policies); and the
 * flow's expressions still have the types the flow was created with (a
 * retyped column would be cast silently).
 */
void
source_check(FlowDef *flow)
{
	char	   *srcname = get_rel_name(flow->source);
	List	   *leaves;
	ListCell   *lc;
	ExprInfo   *e;
	const char *seqtext = flow->sequence_by;
	char	   *rowcast = NULL;

	if (srcname == NULL)
		elog(ERROR, "source of flow \"%s\" is missing", flow->name);
	if (!flow->once)
	{
		leaves = get_rel_relkind(flow->source) == RELKIND_PARTITIONED_TABLE ?
			find_all_inheritors(flow->source, NoLock, NULL) : list_make1_oid(flow->source);
		foreach(lc, leaves)
		{
			Oid			leaf = lfirst_oid(lc);
			char		relkind = get_rel_relkind(leaf);

			tablekind_check(leaf, TABLE_CHANGE_SOURCE, flow->name);
			if (relkind == RELKIND_PARTITIONED_TABLE)
				continue;
			if (relkind != RELKIND_RELATION || get_rel_persistence(leaf) != RELPERSISTENCE_PERMANENT)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("flow \"%s\": %s \"%s\" of its source is not a logged table",
								flow->name, leaf == flow->source ? "table" : "partition",
								get_rel_name(leaf)),
						 errdetail("Inserts into unlogged or foreign tables are not written to the WAL, so the flow cannot see them."),
						 errhint("Make it a logged table (ALTER TABLE ... SET LOGGED), then run SELECT autocdc.full_refresh(%s) to read what it holds.",
								 quote_literal_cstr(flow->name))));
		}
	}
	if (flow->changes && !relation_has_unique_key_index(flow->source, flow->keys))
	{
		/*
		 * Rows that shared a key meanwhile were folded by the changes the
		 * WAL holds: once an index is back, only a full read is right.
		 */
		failures_note_resync(flow->id);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flow \"%s\": source \"%s\" no longer has a unique index on the flow's keys",
						flow->name, srcname),
				 errdetail("A changes() flow needs a unique, immediate (not deferrable), non-partial index whose columns are all among its keys, so that a key names one row of the table; without one, rows that share a key would be folded into one."),
				 errhint("Create a unique index on the keys again (or a primary key), removing the rows that share a key first, then run SELECT autocdc.full_refresh(%s).",
						 quote_literal_cstr(flow->name))));
	}
	if (check_enable_rls(flow->source, flow->owner, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("flow \"%s\": source \"%s\" has row-level security enabled for the flow's owner",
						flow->name, srcname),
				 errdetail("A flow reads every row of its source; row-level security cannot apply to it."),
				 errhint("Disable row-level security on the source, or let the owner bypass it (BYPASSRLS).")));

	/* a ROW sequence is stored cast to its composite type: check the row */
	if (type_is_rowtype(flow->seq_type))
	{
		char	   *suffix = psprintf(")::%s", format_type_be_qualified(flow->seq_type));
		size_t		len = strlen(seqtext),
					slen = strlen(suffix);

		if (len > slen + 1 && seqtext[0] == '(' && strcmp(seqtext + len - slen, suffix) == 0)
			rowcast = pnstrdup(seqtext + 1, len - slen - 1);
	}
	e = expr_analyze(flow->source, flow->changes, rowcast ? rowcast : seqtext, "sequence");
	if (rowcast)
	{
		TupleDesc	desc = lookup_rowtype_tupdesc(flow->seq_type, -1);
		bool		same = list_length(e->field_types) == desc->natts;
		int			i = 0;

		foreach(lc, e->field_types)
		{
			if (same && !type_stored_as(lfirst_oid(lc), TupleDescAttr(desc, i)->atttypid))
				same = false;
			i++;
		}
		ReleaseTupleDesc(desc);
		if (!same)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("flow \"%s\": the fields of its sequence %s no longer have the types of %s",
							flow->name, rowcast, format_type_be(flow->seq_type)),
					 errdetail("A column the sequence reads was retyped; casting it would change the order of events."),
					 errhint("Change the column back, or drop the flow and create it again.")));
	}
	else if (!type_stored_as(e->typid, flow->seq_type))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("flow \"%s\": its sequence %s now has type %s, not %s",
						flow->name, seqtext, format_type_be(e->typid), format_type_be(flow->seq_type)),
				 errdetail("A column the sequence reads was retyped; casting it back would change the order of events."),
				 errhint("Change the column back, or drop the flow and create it again.")));
	flow->expr_columns = NIL;
	check_condition(flow, flow->deletes, "apply_as_deletes");
	check_condition(flow, flow->truncates, "apply_as_truncates");
}
