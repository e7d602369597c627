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

/* Order of events: (sequence, lsn, ord). */
int
fold_event_compare(FoldCols *c, Ev *x, Ev *y)
{
	int			r = fold_seq_compare(c, x->seq, y->seq);

	if (r != 0)
		return r;
	if (x->lsn != y->lsn)
		return x->lsn < y->lsn ? -1 : 1;
	if (x->ord != y->ord)
		return x->ord < y->ord ? -1 : 1;
	return 0;
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

/* Is a sequence NULL (a ROW sequence with any NULL field counts)? */
bool
fold_seq_is_null(FoldCols *c, Datum seq, bool isnull)
{
	HeapTupleHeader rec;
	TupleDesc	desc;
	HeapTupleData tup;
	int			i;
	bool		result = false;

	if (isnull)
		return true;
	if (!c->seq_is_row)
		return false;
	rec = DatumGetHeapTupleHeader(seq);
	desc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(rec), HeapTupleHeaderGetTypMod(rec));
	tup.t_len = HeapTupleHeaderGetDatumLength(rec);
	tup.t_data = rec;
	for (i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped && heap_attisnull(&tup, i + 1, desc))
			result = true;
	ReleaseTupleDesc(desc);
	return result;
}
