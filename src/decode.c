/*-------------------------------------------------------------------------
 *
 * decode.c
 *		The decoding pass over a slot (engine layer, capture): logical
 *		decoding with pgoutput as the plugin and our own callbacks, which
 *		map each decoded table onto the flows that read it and hand each
 *		change to the handler of each flow's source kind (srckind.h).
 *
 * A pass decodes one slot (the main slot, or the laggard slot) from its
 * restart point up to the WAL flushed when it started, and each flow keeps
 * the changes of its source from transactions at or after its progress
 * that its first read (if any) did not show.  PostgreSQL's two LOG lines
 * at every start of decoding are kept out of the server log.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "access/xlogutils.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "nodes/makefuncs.h"
#include "replication/decode.h"
#include "replication/logical.h"
#include "replication/slot.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"

#include "catalog.h"
#include "compat.h"
#include "layout.h"
#include "slots.h"
#include "source_internal.h"
#include "srckind.h"

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

/* pgoutput's writer callbacks; nothing is written, see decode_change. */
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
 * transaction) hold every key column of a flow whose source kind has row
 * changes (a changes() flow)?  Otherwise the
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
		FeedCapture *fc = lfirst(fl);
		Oid			source = fc->c->flow->source;

		if (fc->kind->row_changes && (source == of || list_member_oid(ancestors, source)))
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
		if (c + BATCH_DATA + (fc->kind->pseudo_columns ? PSEUDO_NCOLUMNS : 0) !=
			fc->c->batchdesc->natts)
			elog(ERROR, "batch of flow \"%s\" does not match its source", fc->c->flow->name);
		dr->maps[k - 1] = map;
		dr->wanted = true;
		if (fc->kind->row_changes)
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
decode_begin(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
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
			(fc->first == NULL || !firstread_showed(fc->first, txn->xid));
		fc->skip = fc->keep && !XLogRecPtrIsInvalid(flow->skip_upto) &&
			txn->final_lsn <= flow->skip_upto;
		if (fc->keep && !fc->skip)
			fc->c->m->last_commit_time = compat_txn_commit_time(txn);
		st->any_keep |= fc->keep;
	}
}

/* Commit callback: nothing to do, the rows are in the batches. */
static void
decode_commit(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
			  XLogRecPtr commit_lsn)
{
}

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
			/* (updates and deletes of kinds without row changes were no events anyway) */
			if (fc->kind->row_changes || action == REORDER_BUFFER_CHANGE_INSERT)
				fc->c->m->num_skipped++;
			if (fc->c->notes != NULL)
				fc->c->notes->skipped = true;	/* the row store cannot follow */
			continue;
		}
		if (fc->kind->row_changes && !dr->identity_ok[k - 1] &&
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
decode_change(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
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
decode_truncate(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
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

		if (fc->truncated && fc->kind->truncate_done != NULL && fc->c->error == NULL)
			fc->kind->truncate_done(st, fc, relations[0]);
	}
}

/*
 * A decoding context on the acquired slot whose callbacks are ours: the
 * plugin is pgoutput (any server lets it decode), but its transaction and
 * change callbacks are replaced by ours, which read the decoded tuples
 * directly instead of pgoutput's messages, and the pass's WAL filter comes
 * before its origin filter.
 */
static LogicalDecodingContext *
decode_context(DecodeState *st)
{
	LogicalDecodingContext *ctx;
	List	   *options;

	options = list_make3(makeDefElem("proto_version", (Node *) makeString("1"), -1),
						 makeDefElem("publication_names",
									 (Node *) makeString(AUTOCDC_PUBLICATION), -1),
						 makeDefElem("binary", (Node *) makeString("true"), -1));
	ctx = CreateDecodingContext(InvalidXLogRecPtr, options, false,
								XL_ROUTINE(.page_read = read_local_xlog_page,
										   .segment_open = wal_segment_open,
										   .segment_close = wal_segment_close),
								decode_prepare_write, decode_write, NULL);
	ctx->output_writer_private = st;
	/* the rows an ALTER TABLE rewrites a source into (decode_rewrite) */
	ctx->reorder->output_rewrites = true;
	walfilter_install(ctx);
	ctx->callbacks.begin_cb = decode_begin;
	ctx->callbacks.change_cb = decode_change;
	ctx->callbacks.commit_cb = decode_commit;
	ctx->callbacks.truncate_cb = decode_truncate;
	ctx->callbacks.message_cb = NULL;
	if (!decode_relcache_callback_registered)
	{
		CacheRegisterRelcacheCallback(decode_relcache_callback, (Datum) 0);
		decode_relcache_callback_registered = true;
	}
	return ctx;
}

/*
 * Decode the acquired slot from its restart point up to end, handing each
 * kept change to the flows of st (opened by capture.c).  With max_events >
 * 0 the pass stops at the first transaction boundary past that many
 * events, or past max_wal bytes of WAL new to the slot (0: no limit), and
 * *more (if given) says so.  Returns where decoding stopped.
 */
XLogRecPtr
decode_pass(DecodeState *st, XLogRecPtr end, int64 max_events, int64 max_wal, bool *more)
{
	LogicalDecodingContext *ctx;
	XLogRecPtr	start;
	XLogRecPtr	result;
	volatile ResourceOwner saved_owner = CurrentResourceOwner;

	decoding_quietly = true;
	PG_TRY();
	{
		ctx = decode_context(st);
		decode_reset_rels(st);
		walfilter_build(st);

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
			if ((max_events > 0 && st->kept >= max_events) ||
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
				RecordAction act = walfilter_record_action(st, ctx->reader);

				if (act == RECORD_DECODE)
					LogicalDecodingProcessRecord(ctx, ctx->reader);
				else if (act == RECORD_KNOW)
					walfilter_make_known(ctx, ctx->reader);
			}
			CHECK_FOR_INTERRUPTS();
		}
		/* decoding's internal subtransactions may leave another owner current */
		CurrentResourceOwner = saved_owner;
		result = ctx->reader->EndRecPtr;
		FreeDecodingContext(ctx);
	}
	PG_CATCH();
	{
		decoding_quietly = false;
		CurrentResourceOwner = saved_owner;
		PG_RE_THROW();
	}
	PG_END_TRY();
	decoding_quietly = false;
	return result;
}
