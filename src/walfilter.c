/*-------------------------------------------------------------------------
 *
 * walfilter.c
 *		Which WAL a decoding pass hands to decoding (engine layer, capture):
 *		a filter of relation files built from the current catalog before a
 *		pass, so that changes no flow of the pass reads are neither decoded
 *		nor buffered, while the transactions of tables other flows read still
 *		hold the slot's restart point; and the eviction of flows whose
 *		tables change too much for a time-sliced pass.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/rmgr.h"
#include "access/transam.h"
#include "access/xlog_internal.h"
#include "catalog/catalog.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "miscadmin.h"
#include "replication/origin.h"
#include "replication/reorderbuffer.h"
#include "replication/slot.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "catalog.h"
#include "compat.h"
#include "source_internal.h"

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
 * The filter's entry for a relation file, or NULL.  The last one found is
 * kept: a long transaction writes one file record after record, each
 * looked up twice (walfilter_record_action, filter_change).  Entries are
 * never removed, so the pointer stays valid for the pass.
 */
static FilterNode *
find_node(DecodeState *st, compat_RelFileLocator *rnode)
{
	FilterNode *fn;

	if (st->node_cache != NULL &&
		memcmp(rnode, &st->node_cache_file, sizeof(*rnode)) == 0)
		return st->node_cache;
	fn = hash_search(st->nodes, rnode, HASH_FIND, NULL);
	if (fn != NULL)
	{
		st->node_cache = fn;
		st->node_cache_file = *rnode;
	}
	return fn;
}

/*
 * Whether the change record being decoded is to be dropped before it is
 * buffered: it changes a file the filter does not name (when it drops
 * those), or a table whose flows this very record evicts from the pass;
 * counts the changes of the tables the pass reads, and evicts their flows
 * past st->evict_after.  (The records of files already marked skip never
 * reach decoding: walfilter_record_action.)
 */
static bool
filter_change(DecodeState *st, XLogReaderState *r)
{
	compat_RelFileLocator rnode;
	FilterNode *fn;

	if (!heap_record_file(r, &rnode))
		return false;
	fn = find_node(st, &rnode);
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
RecordAction
walfilter_record_action(DecodeState *st, XLogReaderState *r)
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
	/* (the answer follows the entry: eviction makes its records skipped) */
	fn = find_node(st, &rnode);
	if (fn != NULL)
		return !fn->skip ? RECORD_DECODE : fn->known ? RECORD_KNOW : RECORD_SKIP;
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
void
walfilter_make_known(LogicalDecodingContext *ctx, XLogReaderState *r)
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
void
walfilter_build(DecodeState *st)
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
	st->node_cache = NULL;
	hctl.entrysize = sizeof(UnknownNode);
	st->unknown = hash_create("autocdc files not in the filter", 64, &hctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
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

/*
 * Put the pass's filter in front of the plugin's origin filter of a
 * decoding context (whose output_writer_private is the DecodeState).
 */
void
walfilter_install(LogicalDecodingContext *ctx)
{
	plugin_filter_by_origin = ctx->callbacks.filter_by_origin_cb;
	ctx->callbacks.filter_by_origin_cb = filter_by_origin;
}
