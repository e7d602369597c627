/*-------------------------------------------------------------------------
 *
 * bitemporal.c
 *		Bitemporal storage: business time (__start_at, __end_at, of the
 *		sequence's type) and system time (__system_start_at,
 *		__system_end_at, of the system sequence's type).
 *
 * The belief at system time t of a key is the SCD 2 result of the key's
 * events whose system sequence is at most t; of several of them with equal
 * sequence only the one latest in (system sequence, arrival) counts.  The
 * target holds one row per business version (values, __start_at,
 * __end_at) and maximal run of consecutive system times at which it is in
 * the belief: __system_start_at is the run's first system time,
 * __system_end_at the first later one at which the version is no longer
 * believed (NULL while it still is).  The system times are the distinct
 * system sequences of the key's events and of the truncates (a truncate
 * is an event of every key): the belief changes nowhere else.
 *
 * A key is folded whole from its events: beliefs in system-time order,
 * each compared with the one before.  An event later in system time than
 * all before it therefore only ends rows and adds rows; any other rewrites
 * the key's rows from its system time on.  The apply engine writes only
 * the rows that differ.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "lib/stringinfo.h"

#include "kind.h"
#include "layout.h"
#include "util.h"

static const char *const bitemporal_periods[] = {
	SCD_START_NAME, SCD_END_NAME, SCD_SYSTEM_START_NAME, SCD_SYSTEM_END_NAME
};

#define PERIOD_START 0
#define PERIOD_END 1
#define PERIOD_SYSTEM_START 2
#define PERIOD_SYSTEM_END 3

/*
 * __start_at T, __end_at T, __system_start_at S, __system_end_at S,
 * PRIMARY KEY (keys, __start_at, __system_start_at)
 */
static void
bitemporal_target_definition(StringInfo sql, const char *keys, const char *seqtype,
							 const char *sysseqtype)
{
	if (sysseqtype == NULL)
		elog(ERROR, "a bitemporal target needs the system sequence's type");
	appendStringInfo(sql, "%s %s, %s %s, %s %s, %s %s, PRIMARY KEY (%s, %s, %s)",
					 SCD_START_NAME, seqtype, SCD_END_NAME, seqtype,
					 SCD_SYSTEM_START_NAME, sysseqtype, SCD_SYSTEM_END_NAME, sysseqtype,
					 keys, SCD_START_NAME, SCD_SYSTEM_START_NAME);
}

/* The current belief has one version per key and __start_at. */
static void
bitemporal_target_indexes(const char *target, const char *keys)
{
	spi_exec(psprintf("CREATE UNIQUE INDEX ON %s (%s, %s) WHERE %s IS NULL",
					  target, keys, SCD_START_NAME, SCD_SYSTEM_END_NAME),
			 SPI_OK_UTILITY);
}

/* Is version x of one belief version y of another (values and period)? */
static bool
same_version(FoldCols *c, OutRow *x, OutRow *y)
{
	int			i;

	for (i = PERIOD_START; i <= PERIOD_END; i++)
		if (!fold_period_equal(c, i, x->period[i], x->periodnull[i], y->period[i], y->periodnull[i]))
			return false;
	for (i = 0; i < c->ndata; i++)
		if (!fold_column_equal(c, i, x->vals[i], x->nulls[i], y->vals[i], y->nulls[i]))
			return false;
	return true;
}

/* qsort_arg comparator of system sequence values. */
static int
sys_qsort(const void *x, const void *y, void *arg)
{
	return fold_sys_compare((FoldCols *) arg, *(const Datum *) x, *(const Datum *) y);
}

/* Order in (system sequence, arrival) of two events. */
static int
sys_arrival_compare(FoldCols *c, Ev *x, Ev *y)
{
	int			r = fold_sys_compare(c, x->sysseq, y->sysseq);

	return r != 0 ? r : fold_arrival_compare(x, y);
}

/*
 * The belief at system time t: the SCD 2 versions of the live events known
 * by t (sub, in sequence order), ties going to the latest in (system
 * sequence, arrival).
 */
static int
belief_at(FoldCols *c, Ev **evs, int n, Datum t, Ev **sub, OutRow **out)
{
	int			nsub = 0,
				i,
				j,
				nout;
	Ev		   *last;

	for (i = 0; i < n; i++)
		if (!evs[i]->dead && fold_sys_compare(c, evs[i]->sysseq, t) <= 0)
			sub[nsub++] = evs[i];
	/* of equal sequences only the latest in (system sequence, arrival) */
	for (i = 0; i < nsub; i = j)
	{
		int			win = i;

		for (j = i + 1; j < nsub && fold_seq_compare(c, sub[i]->seq, sub[j]->seq) == 0; j++)
			if (sys_arrival_compare(c, sub[j], sub[win]) > 0)
				win = j;
		if (j - i > 1)
		{
			int			k;

			for (k = i; k < j; k++)
				sub[k]->dead = k != win;
		}
	}
	nout = scd2_kind.fold(c, sub, nsub, out, &last);
	for (i = 0; i < nsub; i++)
		sub[i]->dead = false;
	return nout;
}

/* Append a row to the growable output. */
static int
add_row(OutRow **rows, int *nrows, int *maxrows, OutRow *version, Datum from)
{
	if (*nrows >= *maxrows)
	{
		*maxrows *= 2;
		*rows = repalloc(*rows, sizeof(OutRow) * *maxrows);
	}
	(*rows)[*nrows] = *version;
	(*rows)[*nrows].period[PERIOD_SYSTEM_START] = from;
	(*rows)[*nrows].periodnull[PERIOD_SYSTEM_START] = false;
	(*rows)[*nrows].period[PERIOD_SYSTEM_END] = (Datum) 0;
	(*rows)[*nrows].periodnull[PERIOD_SYSTEM_END] = true;
	return (*nrows)++;
}

/* The key's rows: beliefs in system-time order, each against the one before. */
static int
bitemporal_fold(FoldCols *c, Ev **evs, int n, OutRow **outp, Ev **last)
{
	Datum	   *times = palloc(sizeof(Datum) * (n + 1));
	int			ntimes = 0,
				i,
				k;
	Ev		  **sub = palloc(sizeof(Ev *) * (n + 1));
	OutRow	   *prev = NULL;
	int			nprev = 0;
	int		   *prevrow = NULL; /* output row of each version of prev */
	OutRow	   *rows;
	int			nrows = 0,
				maxrows = n + 4;

	*last = NULL;
	for (i = 0; i < n; i++)
		if (!evs[i]->dead)
		{
			times[ntimes++] = evs[i]->sysseq;
			*last = evs[i];
		}
	qsort_arg(times, ntimes, sizeof(Datum), sys_qsort, c);
	rows = palloc0(sizeof(OutRow) * maxrows);
	for (k = 0; k < ntimes; k++)
	{
		OutRow	   *cur;
		int			ncur,
					p,
					q;
		int		   *currow;

		if (k > 0 && fold_sys_compare(c, times[k], times[k - 1]) == 0)
			continue;
		ncur = belief_at(c, evs, n, times[k], sub, &cur);
		currow = palloc(sizeof(int) * (ncur + 1));

		/*
		 * Both beliefs are in __start_at order, one version per start: a
		 * version of prev not in cur ends at this time, one of cur not in
		 * prev begins.
		 */
		p = q = 0;
		while (p < nprev || q < ncur)
		{
			int			r;

			if (p >= nprev)
				r = 1;
			else if (q >= ncur)
				r = -1;
			else
				r = fold_seq_compare(c, prev[p].period[PERIOD_START], cur[q].period[PERIOD_START]);
			if (r == 0 && same_version(c, &prev[p], &cur[q]))
			{
				currow[q++] = prevrow[p++];
				continue;
			}
			if (r <= 0)
			{
				rows[prevrow[p]].period[PERIOD_SYSTEM_END] = times[k];
				rows[prevrow[p]].periodnull[PERIOD_SYSTEM_END] = false;
				p++;
			}
			if (r >= 0)
			{
				currow[q] = add_row(&rows, &nrows, &maxrows, &cur[q], times[k]);
				q++;
			}
		}
		prev = cur;
		nprev = ncur;
		prevrow = currow;
	}
	*outp = rows;
	return nrows;
}

/* Every live event: a late one can rewrite any belief. */
static bool
bitemporal_keeps(FoldCols *c, Ev *e, Ev *last)
{
	return true;
}

static bool
bitemporal_last_event_decides(FoldCols *c)
{
	return false;
}

/* A row is identified by its key, __start_at and __system_start_at. */
static bool
bitemporal_same_identity(FoldCols *c, Ev *old, OutRow *row)
{
	return fold_period_equal(c, PERIOD_START, old->period[PERIOD_START], old->periodnull[PERIOD_START],
							 row->period[PERIOD_START], false) &&
		fold_period_equal(c, PERIOD_SYSTEM_START, old->period[PERIOD_SYSTEM_START],
						  old->periodnull[PERIOD_SYSTEM_START],
						  row->period[PERIOD_SYSTEM_START], false);
}

const StorageKind bitemporal_kind = {
	.code = 'b',
	.label = "bitemporal",
	.tracks_history = true,
	.nperiods = 4,
	.periods = bitemporal_periods,
	.sysperiods_from = 2,
	.target_definition = bitemporal_target_definition,
	.target_indexes = bitemporal_target_indexes,
	.current_rows = " WHERE " SCD_SYSTEM_END_NAME " IS NULL",
	.fold = bitemporal_fold,
	.keeps = bitemporal_keeps,
	.last_event_decides = bitemporal_last_event_decides,
	.same_identity = bitemporal_same_identity,
};
