/*-------------------------------------------------------------------------
 *
 * fold.c
 *		The comparisons every storage kind's fold uses: sequences, arrival
 *		order, column values and keys, by each type's default btree order
 *		and equality (by text for a type without one).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/typcache.h"

#include "fold.h"

/* Compare two sequence values with the type's btree order. */
int
fold_seq_compare(FoldCols *c, Datum x, Datum y)
{
	return DatumGetInt32(FunctionCall2Coll(&c->seqcmp, c->seqcoll, x, y));
}

/* Equal sequences (NULL equals NULL)? */
bool
fold_seq_equal(FoldCols *c, Datum x, bool xnull, Datum y, bool ynull)
{
	if (xnull || ynull)
		return xnull && ynull;
	return fold_seq_compare(c, x, y) == 0;
}

/* Order of arrival of two events: (lsn, ord). */
int
fold_arrival_compare(Ev *x, Ev *y)
{
	if (x->lsn != y->lsn)
		return x->lsn < y->lsn ? -1 : 1;
	if (x->ord != y->ord)
		return x->ord < y->ord ? -1 : 1;
	return 0;
}

/* Order of events: (sequence, lsn, ord). */
int
fold_event_compare(FoldCols *c, Ev *x, Ev *y)
{
	int			r = fold_seq_compare(c, x->seq, y->seq);

	return r != 0 ? r : fold_arrival_compare(x, y);
}

/* qsort_arg comparator for arrays of events (Ev *); arg is the FoldCols. */
int
fold_qsort_events(const void *x, const void *y, void *arg)
{
	return fold_event_compare((FoldCols *) arg, *(Ev **) x, *(Ev **) y);
}

/* Are two values of data column i equal (NULL equals NULL)? */
bool
fold_column_equal(FoldCols *c, int i, Datum x, bool xnull, Datum y, bool ynull)
{
	if (xnull || ynull)
		return xnull && ynull;
	if (OidIsValid(c->eqfn[i].fn_oid))
		return DatumGetBool(FunctionCall2Coll(&c->eqfn[i], c->dcolls[i], x, y));
	return strcmp(OutputFunctionCall(&c->outfn[i], x),
				  OutputFunctionCall(&c->outfn[i], y)) == 0;
}

/* Have two rows the same key? */
bool
fold_same_key(FoldCols *c, Ev *x, Ev *y)
{
	int			k;

	for (k = 0; k < c->nkeys; k++)
	{
		int			i = c->keyidx[k];

		if (!fold_column_equal(c, i, x->vals[i], x->nulls[i], y->vals[i], y->nulls[i]))
			return false;
	}
	return true;
}

/* Text "(k1, k2)=(v1, v2)" naming the key of an event, for messages. */
char *
fold_key_text(FoldCols *c, Datum *vals, bool *nulls)
{
	StringInfoData n,
				v;
	int			k;

	initStringInfo(&n);
	initStringInfo(&v);
	for (k = 0; k < c->nkeys; k++)
	{
		int			i = c->keyidx[k];

		appendStringInfo(&n, "%s%s", k ? ", " : "", quote_identifier(c->dnames[i]));
		appendStringInfo(&v, "%s%s", k ? ", " : "",
						 nulls[i] ? "null" : OutputFunctionCall(&c->outfn[i], vals[i]));
	}
	return psprintf("(%s)=(%s)", n.data, v.data);
}

/* Is a ROW value NULL in any field? */
static bool
row_has_null(Datum row)
{
	HeapTupleHeader rec;
	TupleDesc	desc;
	HeapTupleData tup;
	int			i;
	bool		result = false;

	rec = DatumGetHeapTupleHeader(row);
	desc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(rec), HeapTupleHeaderGetTypMod(rec));
	tup.t_len = HeapTupleHeaderGetDatumLength(rec);
	tup.t_data = rec;
	for (i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped && heap_attisnull(&tup, i + 1, desc))
			result = true;
	ReleaseTupleDesc(desc);
	/* a toasted or expanded value was flattened into a copy: called once per event */
	if ((Pointer) rec != DatumGetPointer(row))
		pfree(rec);
	return result;
}

/* Is a sequence NULL (a ROW sequence with any NULL field counts)? */
bool
fold_seq_is_null(FoldCols *c, Datum seq, bool isnull)
{
	return isnull || (c->seq_is_row && row_has_null(seq));
}

/* Is a system sequence NULL (likewise)? */
bool
fold_sys_is_null(FoldCols *c, Datum seq, bool isnull)
{
	return isnull || (c->sys_is_row && row_has_null(seq));
}

/* Compare two system sequence values with the type's btree order. */
int
fold_sys_compare(FoldCols *c, Datum x, Datum y)
{
	return DatumGetInt32(FunctionCall2Coll(&c->syscmp, c->syscoll, x, y));
}

/* Equal values of period column p (NULL equals NULL)? */
bool
fold_period_equal(FoldCols *c, int p, Datum x, bool xnull, Datum y, bool ynull)
{
	if (xnull || ynull)
		return xnull && ynull;
	if (c->has_sys && p >= c->sysperiods_from)
		return fold_sys_compare(c, x, y) == 0;
	return fold_seq_compare(c, x, y) == 0;
}

/* Copy a value of period column p. */
Datum
fold_period_copy(FoldCols *c, int p, Datum x)
{
	if (c->has_sys && p >= c->sysperiods_from)
		return datumCopy(x, c->sysbyval, c->syslen);
	return datumCopy(x, c->seqbyval, c->seqlen);
}

/*
 * Settle ties in a key's events, sorted by (sequence, arrival): of events
 * with equal sequence only the last-arriving exists.  With a system
 * sequence only an event with equal sequence and equal system sequence
 * replaces an earlier one; the other ties are settled per belief.
 */
void
fold_mark_ties(FoldCols *c, Ev **evs, int n)
{
	int			i,
				j;

	for (i = 0; i + 1 < n; i++)
	{
		if (!c->has_sys)
		{
			if (fold_seq_compare(c, evs[i]->seq, evs[i + 1]->seq) == 0)
				evs[i]->dead = true;
			continue;
		}
		for (j = i + 1; j < n && fold_seq_compare(c, evs[i]->seq, evs[j]->seq) == 0; j++)
			if (fold_sys_compare(c, evs[i]->sysseq, evs[j]->sysseq) == 0)
			{
				evs[i]->dead = true;
				break;
			}
	}
}

/*
 * Does upsert e write data column j?  Keys always; with a list of the
 * columns it writes, those; otherwise every column but a NULL in one that
 * ignores NULLs.
 */
bool
fold_writes(FoldCols *c, Ev *e, int j)
{
	if (c->is_key[j])
		return true;
	if (e->written)
		return e->written[j];
	return !(c->skipnull[j] && e->nulls[j]);
}
