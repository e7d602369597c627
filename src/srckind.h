/*-------------------------------------------------------------------------
 *
 * srckind.h
 *		Source kinds (base layer): what a change flow's source is and what
 *		its flows make of each decoded action, one SourceKind per kind (a
 *		feed: srcfeed.c; changes(): srcchanges.c), as kind.h's StorageKinds
 *		are for targets.  A FlowDef points at its kind; declaring, running
 *		and decoding ask the kind, never its name.
 *
 * Adding a kind: a file srcNAME.c defining its SourceKind (its handlers use
 * the capture's helpers in source_internal.h), its extern declaration
 * below, and its entry in srckind.c's table (the build takes every file of
 * src/; test/t/000_layout.pl gives srcNAME its layer by its name).  Its
 * name is what autocdc.flow.source_kind stores.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SRCKIND_H
#define AUTOCDC_SRCKIND_H

#include "nodes/pg_list.h"
#include "utils/relcache.h"

/* the capture's own structures (source_internal.h) */
struct DecodeState;
struct DecodedChange;
struct FeedCapture;

/* What a kind's flows make of one decoded action (map: see DecodedRel). */
typedef void (*SourceChangeHandler) (struct DecodedChange *ch, struct FeedCapture *fc,
									 int *map);

typedef struct SourceKind
{
	const char *name;			/* as stored in autocdc.flow.source_kind */

	/*
	 * A source of this kind is written name(table) (create_flow's source,
	 * the statement form's FROM, autocdc.flows' source column); otherwise
	 * as the table itself.
	 */
	bool		wrapped;

	/*
	 * Its rows carry the pseudo-columns _change_type, _commit_lsn and
	 * _commit_timestamp: expressions and column_list may read them, the
	 * batch holds them (layout.h), the target may take them.
	 */
	bool		pseudo_columns;

	/*
	 * A row's updates, deletes and truncates are events of its key, not
	 * only its inserts.  Then the keys need a unique index on the source
	 * and a replica identity that names them; the sequence may read only
	 * pseudo-columns (a delete carries no other values); the flow keeps a
	 * row store of out-of-line values (rowstore.c); a full_refresh that
	 * keeps history reads only what differs from the target; DDL that
	 * changes rows without logging row changes (a rewrite, a partition
	 * attached or detached) makes the flow need a resync; and the source
	 * cannot be read once or by a snapshot flow.
	 */
	bool		row_changes;

	/* the defaults of sequence_by, apply_as_deletes and apply_as_truncates (NULL: none) */
	const char *default_sequence_by;
	const char *default_deletes;
	const char *default_truncates;

	/* decoding: what a flow makes of each action (NULL: no event, not counted) */
	SourceChangeHandler on_insert;
	SourceChangeHandler on_update;
	SourceChangeHandler on_delete;
	SourceChangeHandler on_truncate;

	/*
	 * After every table of one TRUNCATE was handed to on_truncate (rel: the
	 * first of them), or NULL: nothing more to do.
	 */
	void		(*truncate_done) (struct DecodeState *st, struct FeedCapture *fc,
								  Relation rel);

	/* Set up a flow's share of a decoding pass (fc->feed is open), or NULL. */
	void		(*capture_open) (struct FeedCapture *fc);
} SourceKind;

extern const SourceKind srcfeed_kind;
extern const SourceKind srcchanges_kind;

extern const SourceKind *srckind_by_name(const char *name);
extern const SourceKind *srckind_by_wrapper(const char *word);
extern const SourceKind *srckind_default(void);
extern List *srckind_names_where_row_changes(void);

#endif							/* AUTOCDC_SRCKIND_H */
