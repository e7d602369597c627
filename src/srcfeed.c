/*-------------------------------------------------------------------------
 *
 * srcfeed.c
 *		The feed source kind (engine layer, capture): an append-only table
 *		whose every committed insert is one event carrying the inserted row.
 *		Its flows ignore updates and deletes of its rows (purges), counting
 *		them, and truncates.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "source_internal.h"
#include "srckind.h"

/* A feed: every committed insert is one event, carrying the inserted row. */
static void
feed_insert(DecodedChange *ch, FeedCapture *fc, int *map)
{
	change_new(ch);
	capture_emit(ch, fc, map, ch->nvalues, ch->nnulls, NULL, NULL, NULL);
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

const SourceKind srcfeed_kind = {
	.name = "feed",
	.wrapped = false,			/* written as the table itself */
	.pseudo_columns = false,
	.row_changes = false,
	.default_sequence_by = NULL,	/* sequence_by is required */
	.on_insert = feed_insert,
	.on_update = feed_update,
	.on_delete = feed_delete,
	.on_truncate = NULL,		/* a purge */
};
