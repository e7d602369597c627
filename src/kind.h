/*-------------------------------------------------------------------------
 *
 * kind.h
 *		Storage kinds (engine layer): how a target of each SCD type is laid
 *		out and how one key's events fold into its rows.  One StorageKind per
 *		kind (scd1.c, scd2.c); the apply engine, the target DDL and the
 *		snapshot comparison only call through it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_KIND_H
#define AUTOCDC_KIND_H

#include "lib/stringinfo.h"

#include "fold.h"

typedef struct StorageKind
{
	char		code;			/* as stored in autocdc.flow.scd_type */
	const char *label;			/* for messages: "SCD type 1" */
	bool		tracks_history; /* track_history lists apply */

	/* target layout: period columns after the data columns, their type the sequence's */
	int			nperiods;
	const char *const *periods;
	int			sysperiods_from;	/* periods from here on have the system
									 * sequence's type (nperiods: none) */

	/*
	 * Append to CREATE TABLE, after the data columns: the period columns and
	 * the primary key (keys: the quoted key list; seqtype, sysseqtype: the
	 * qualified types of the sequence and of the system sequence, NULL
	 * where the kind has none).
	 */
	void		(*target_definition) (StringInfo sql, const char *keys, const char *seqtype,
									  const char *sysseqtype);

	/* Create the target's other indexes (target: qualified name). */
	void		(*target_indexes) (const char *target, const char *keys);

	/* The filter of the rows a snapshot comparison takes as the current ones. */
	const char *current_rows;

	/*
	 * Fold one key: events sorted by (sequence, arrival) with truncates
	 * merged and tie losers marked dead (fold_mark_ties); set *out to the
	 * rows (palloc'd) and return their number; *last is the last live event
	 * (or NULL).
	 */
	int			(*fold) (FoldCols *c, Ev **evs, int n, OutRow **out, Ev **last);

	/* Does the hidden state keep this live (non-truncate) event? */
	bool		(*keeps) (FoldCols *c, Ev *e, Ev *last);

	/* Does only the last event of a key in a batch matter? */
	bool		(*last_event_decides) (FoldCols *c);

	/* Has an old target row the identity of a computed row? */
	bool		(*same_identity) (FoldCols *c, Ev *old, OutRow *row);
} StorageKind;

extern const StorageKind scd1_kind;
extern const StorageKind scd2_kind;
extern const StorageKind bitemporal_kind;

extern const StorageKind *storage_kind(char code);
extern const StorageKind *const *storage_kinds(int *n);

#endif							/* AUTOCDC_KIND_H */
