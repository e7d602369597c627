/*-------------------------------------------------------------------------
 *
 * scd2.c
 *		SCD type 2 storage: one row per version, __start_at and __end_at of
 *		the sequence's type.  Walking a key's events with an open version:
 *		an upsert whose tracked columns equal the open version's keeps its
 *		start and takes the new values; one that differs closes it and opens
 *		another; a delete closes it.  With ignore_null_updates, a column
 *		list of it or columns_to_update, the columns an upsert does not write
 *		are first filled from the open version.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"

#include "kind.h"
#include "layout.h"
#include "util.h"

static const char *const scd2_periods[] = {SCD_START_NAME, SCD_END_NAME};

#define PERIOD_START 0
#define PERIOD_END 1

/* __start_at T, __end_at T, PRIMARY KEY (keys, __start_at) */
static void
scd2_target_definition(StringInfo sql, const char *keys, const char *seqtype,
						 const char *sysseqtype)
{
	appendStringInfo(sql, "%s %s, %s %s, PRIMARY KEY (%s, %s)",
					 SCD_START_NAME, seqtype, SCD_END_NAME, seqtype, keys, SCD_START_NAME);
}

/* At most one current version per key. */
static void
scd2_target_indexes(const char *target, const char *keys)
{
	spi_exec(psprintf("CREATE UNIQUE INDEX ON %s (%s) WHERE %s IS NULL", target, keys, SCD_END_NAME),
			 SPI_OK_UTILITY);
}

/* Close the open version at a sequence. */
static void
close_version(OutRow *open, Datum at, OutRow *out, int *nout)
{
	open->period[PERIOD_END] = at;
	open->periodnull[PERIOD_END] = false;
	out[(*nout)++] = *open;
}

/* The key's versions. */
static int
scd2_fold(FoldCols *c, Ev **evs, int n, OutRow **outp, Ev **last)
{
	OutRow	   *out = palloc0(sizeof(OutRow) * (n + 1));
	OutRow		open;
	bool		isopen = false;
	int			nout = 0;
	int			i,
				j;

	*last = NULL;
	*outp = out;
	memset(&open, 0, sizeof(open));
	for (i = 0; i < n; i++)
	{
		Ev		   *e = evs[i];

		if (e->dead)
			continue;
		*last = e;
		if (e->kind == EVENT_UPSERT)
		{
			Datum	   *vals = palloc(sizeof(Datum) * c->ndata);
			bool	   *nulls = palloc(sizeof(bool) * c->ndata);
			bool		same = isopen;

			for (j = 0; j < c->ndata; j++)
			{
				vals[j] = e->vals[j];
				nulls[j] = e->nulls[j];
				if (!fold_writes(c, e, j))
				{
					/* not written: the open version's value, or NULL */
					vals[j] = isopen ? open.vals[j] : (Datum) 0;
					nulls[j] = isopen ? open.nulls[j] : true;
				}
			}
			if (isopen)
				for (j = 0; j < c->ndata && same; j++)
					if (c->tracked[j] &&
						!fold_column_equal(c, j, open.vals[j], open.nulls[j], vals[j], nulls[j]))
						same = false;
			if (!same)
			{
				if (isopen)
					close_version(&open, e->seq, out, &nout);
				open.period[PERIOD_START] = e->seq;
				open.periodnull[PERIOD_START] = false;
				isopen = true;
			}
			open.vals = vals;
			open.nulls = nulls;
		}
		else if (isopen)
		{
			close_version(&open, e->seq, out, &nout);
			isopen = false;
		}
	}
	if (isopen)
	{
		open.period[PERIOD_END] = (Datum) 0;
		open.periodnull[PERIOD_END] = true;
		out[nout++] = open;
	}
	return nout;
}

/* Every live event: a late one can re-split any version. */
static bool
scd2_keeps(FoldCols *c, Ev *e, Ev *last)
{
	return true;
}

static bool
scd2_last_event_decides(FoldCols *c)
{
	return false;
}

/* A version is identified by its key and __start_at. */
static bool
scd2_same_identity(FoldCols *c, Ev *old, OutRow *row)
{
	return !old->periodnull[PERIOD_START] &&
		fold_seq_compare(c, old->period[PERIOD_START], row->period[PERIOD_START]) == 0;
}

const StorageKind scd2_kind = {
	.code = '2',
	.label = "SCD type 2",
	.tracks_history = true,
	.nperiods = 2,
	.sysperiods_from = 2,
	.periods = scd2_periods,
	.target_definition = scd2_target_definition,
	.target_indexes = scd2_target_indexes,
	.current_rows = " WHERE " SCD_END_NAME " IS NULL",
	.fold = scd2_fold,
	.keeps = scd2_keeps,
	.last_event_decides = scd2_last_event_decides,
	.same_identity = scd2_same_identity,
};
