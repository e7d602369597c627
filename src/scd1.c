/*-------------------------------------------------------------------------
 *
 * scd1.c
 *		SCD type 1 storage: one row per present key, no bookkeeping columns
 *		(rule: a key is present iff its last event, truncates
 *		counting, is an upsert; its columns are that upsert's, or with
 *		ignore_null_updates, a column list of it or columns_to_update the
 *		last value each column's upserts wrote since the key's last delete).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "kind.h"
#include "layout.h"

/* PRIMARY KEY (keys) */
static void
scd1_target_definition(StringInfo sql, const char *keys, const char *seqtype,
						 const char *sysseqtype)
{
	appendStringInfo(sql, "PRIMARY KEY (%s)", keys);
}

/* No other index. */
static void
scd1_target_indexes(const char *target, const char *keys)
{
}

/* The key's row from its last live event. */
static int
scd1_fold(FoldCols *c, Ev **evs, int n, OutRow **outp, Ev **last)
{
	OutRow	   *out;
	bool		present = false;
	Datum	   *vals;
	bool	   *nulls;
	int			i,
				j;

	/* the row and its arrays in one allocation */
	out = palloc0(MAXALIGN(sizeof(OutRow)) + (sizeof(Datum) + sizeof(bool)) * c->ndata);
	vals = (Datum *) ((char *) out + MAXALIGN(sizeof(OutRow)));
	nulls = (bool *) (vals + c->ndata);

	*last = NULL;
	for (j = 0; j < c->ndata; j++)
		nulls[j] = true;
	for (i = 0; i < n; i++)
	{
		Ev		   *e = evs[i];

		if (e->dead)
			continue;
		*last = e;
		if (e->kind == EVENT_UPSERT)
		{
			for (j = 0; j < c->ndata; j++)
			{
				if (!fold_writes(c, e, j))
					continue;
				vals[j] = e->vals[j];
				nulls[j] = e->nulls[j];
			}
			present = true;
		}
		else
		{
			present = false;
			for (j = 0; j < c->ndata; j++)
				if (!c->is_key[j])
					nulls[j] = true;
		}
	}
	if (!present)
		return 0;
	*outp = out;
	out[0].vals = vals;
	out[0].nulls = nulls;
	return 1;
}

/* Only the last event decides, unless NULLs are filled from earlier ones. */
static bool
scd1_keeps(FoldCols *c, Ev *e, Ev *last)
{
	return c->ignore_nulls || e == last;
}

static bool
scd1_last_event_decides(FoldCols *c)
{
	return !c->ignore_nulls;
}

/* A key has one row. */
static bool
scd1_same_identity(FoldCols *c, Ev *old, OutRow *row)
{
	return true;
}

const StorageKind scd1_kind = {
	.code = '1',
	.label = "SCD type 1",
	.tracks_history = false,
	.nperiods = 0,
	.sysperiods_from = 0,
	.periods = NULL,
	.target_definition = scd1_target_definition,
	.target_indexes = scd1_target_indexes,
	.current_rows = "",
	.fold = scd1_fold,
	.keeps = scd1_keeps,
	.last_event_decides = scd1_last_event_decides,
	.same_identity = scd1_same_identity,
};
