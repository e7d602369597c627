/*-------------------------------------------------------------------------
 *
 * srcchanges.c
 *		The changes() source kind (engine layer, capture): every committed
 *		insert, update, delete and truncate of a table is an event, carrying
 *		the pseudo-columns _change_type, _commit_lsn and _commit_timestamp.
 *		An update that changes the key is a delete of the old key and an
 *		upsert of the new; a TRUNCATE of a partitioned table is one event
 *		when it empties every leaf, and a change that cannot be told (no
 *		old key in the WAL, some leaves truncated) makes the flow need a
 *		resync.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "catalog.h"
#include "compat.h"
#include "layout.h"
#include "source_internal.h"
#include "srckind.h"
#include "util.h"

/* changes(): an insert is an upsert of the new row. */
static void
changes_insert(DecodedChange *ch, FeedCapture *fc, int *map)
{
	change_new(ch);
	capture_emit(ch, fc, map, ch->nvalues, ch->nnulls, NULL, NULL, "insert");
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
			capture_emit(ch, fc, map, ch->ovalues, ch->onulls, NULL, NULL, "delete");
		ch->moved = moved;
	}
	capture_emit(ch, fc, map, ch->nvalues, ch->nnulls, ch->ovalues, ch->onulls, "update");
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
	capture_emit(ch, fc, map, ch->ovalues, ch->onulls, NULL, NULL, "delete");
}

/*
 * changes(): a TRUNCATE is one truncate event, every table column NULL.  A
 * partitioned table's leaves are counted instead: changes_truncate_done
 * makes the one event once decoding has handed it them all.
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
	capture_emit(ch, fc, map, NULL, NULL, NULL, NULL, "truncate");
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
changes_truncate_done(DecodeState *st, FeedCapture *fc, Relation rel)
{
	DecodedChange ch;
	int			leaves = count_leaves(fc->c->flow->source);

	if (fc->trunc_leaves == leaves)
	{
		memset(&ch, 0, sizeof(ch));
		ch.st = st;
		ch.rel = rel;
		ch.desc = RelationGetDescr(rel);
		capture_emit(&ch, fc, NULL, NULL, NULL, NULL, NULL, "truncate");
		return;
	}
	capture_untold(fc,
				   psprintf("flow \"%s\": a TRUNCATE at " COMPAT_LSN_FORMAT " emptied %d of the %d partitions of source \"%s\"",
							fc->c->flow->name, LSN_FORMAT_ARGS(st->commit_lsn),
							fc->trunc_leaves, leaves, get_rel_name(fc->c->flow->source)),
				   psprintf("The rows of the other partitions stay, which no event can say. Run SELECT autocdc.full_refresh(%s): it reads the table again and keeps the history.",
							quote_literal_cstr(fc->c->flow->name)));
}

/*
 * A changes() flow's share of a pass: whether its source is partitioned
 * (its TRUNCATEs list leaves), and the values PostgreSQL stores for the
 * rows older than each of its columns (capture.c: missing_value), as the
 * catalog is now.
 */
static void
changes_capture_open(FeedCapture *fc)
{
	List	   *names = NIL;
	int			i;

	fc->partitioned = fc->feed->rd_rel->relkind == RELKIND_PARTITIONED_TABLE;
	for (i = 0; i < fc->feeddesc->natts; i++)
		if (!TupleDescAttr(fc->feeddesc, i)->attisdropped)
			names = lappend(names, NameStr(TupleDescAttr(fc->feeddesc, i)->attname));
	fc->missing = palloc(sizeof(MissingValue) * (list_length(names) + 1));
	fc->missing_value = palloc0(sizeof(Datum) * (list_length(names) + 1));
	relation_missing_values(fc->c->flow->source, names, fc->missing, fc->missing_value);
	list_free(names);
}


const SourceKind srcchanges_kind = {
	.name = "changes",
	.wrapped = true,			/* changes(table) */
	.pseudo_columns = true,
	.row_changes = true,
	.default_sequence_by = "_commit_timestamp",
	.default_deletes = "_change_type = 'delete'",
	.default_truncates = "_change_type = 'truncate'",
	.on_insert = changes_insert,
	.on_update = changes_update,
	.on_delete = changes_delete,
	.on_truncate = changes_truncate,
	.truncate_done = changes_truncate_done,
	.capture_open = changes_capture_open,
};
