/*-------------------------------------------------------------------------
 *
 * batch.c
 *		Rows of the run in progress, held in backend-local tuplestores and
 *		exposed to the apply engine's SQL through set-returning functions.
 *
 * A run cannot use temporary tables (a flow runs as its owner under a
 * security-restricted operation), so the captured source rows, the
 * classified events and the rows the fold computed live in tuplestores that
 * spill to disk past work_mem, and SQL reads them with
 * autocdc_internal._batch(NULL::feed), autocdc_internal._events(NULL::state) and
 * autocdc_internal._rows(NULL::rowtype).  A planner support function tells the
 * planner how many rows each holds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/supportnodes.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "batch.h"
#include "compat.h"
#include "layout.h"

PG_FUNCTION_INFO_V1(autocdc_batch);
PG_FUNCTION_INFO_V1(autocdc_events);
PG_FUNCTION_INFO_V1(autocdc_rows);
PG_FUNCTION_INFO_V1(autocdc_keys);
PG_FUNCTION_INFO_V1(autocdc_batch_support);

typedef struct BatchSlot
{
	Tuplestorestate *ts;
	TupleDesc	desc;
	Oid			rowtype;		/* type the caller must ask for */
	int64		nrows;
	int			uses;			/* calls left; the last one takes the store */
	Oid			user;			/* who set it: callers need its privileges */
} BatchSlot;

static BatchSlot slots[BATCH_COUNT];

/*
 * The row descriptor of a flow's batch: the arrival position (commit LSN,
 * order), then the source's columns as they are now, dropped ones left out,
 * and with pseudo the pseudo-columns of a changes() source (layout.h).  The source stays locked, so that its columns cannot change
 * before the capture.
 */
TupleDesc
batch_source_desc(Oid source, bool pseudo)
{
	Relation	rel = relation_open(source, AccessShareLock);
	TupleDesc	rdesc = RelationGetDescr(rel);
	TupleDesc	desc;
	int			n = 0,
				i;

	for (i = 0; i < rdesc->natts; i++)
		if (!TupleDescAttr(rdesc, i)->attisdropped)
			n++;
	desc = CreateTemplateTupleDesc(BATCH_DATA + n + (pseudo ? PSEUDO_NCOLUMNS : 0));
	TupleDescInitEntry(desc, BATCH_LSN + 1, BATCH_LSN_NAME, LSNOID, -1, 0);
	TupleDescInitEntry(desc, BATCH_ORD + 1, BATCH_ORD_NAME, INT8OID, -1, 0);
	n = BATCH_DATA;
	for (i = 0; i < rdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(rdesc, i);

		if (att->attisdropped)
			continue;
		n++;
		TupleDescInitEntry(desc, n, NameStr(att->attname), att->atttypid, att->atttypmod, 0);
		TupleDescInitEntryCollation(desc, n, att->attcollation);
	}
	for (i = 0; pseudo && i < PSEUDO_NCOLUMNS; i++)
	{
		n++;
		TupleDescInitEntry(desc, n, pseudo_columns[i].name, pseudo_columns[i].type, -1, 0);
		if (pseudo_columns[i].type == TEXTOID)
			TupleDescInitEntryCollation(desc, n, DEFAULT_COLLATION_OID);
	}
	relation_close(rel, NoLock);
	compat_TupleDescFinalize(desc);
	return BlessTupleDesc(desc);
}

/*
 * Make a tuplestore available to SQL for the given number of calls: each
 * call but the last gets a copy; the last one hands the store itself to the
 * executor, which frees it (the caller must not use it afterwards).  Copies
 * of batches of hundreds of thousands of rows are what a run would
 * otherwise spend much of its time on.
 */
void
batch_set(int which, Tuplestorestate *ts, TupleDesc desc, Oid rowtype, int64 nrows,
		  int uses)
{
	slots[which].ts = ts;
	slots[which].desc = desc;
	slots[which].rowtype = rowtype;
	slots[which].nrows = nrows;
	slots[which].uses = uses;
	slots[which].user = GetUserId();
}

/*
 * Free a batch no query read for the last time (a query that would have
 * read it was not run, or planned without it), and forget it; one handed
 * over to its last reader is that reader's to free.
 */
void
batch_end(int which)
{
	if (slots[which].ts != NULL)
		tuplestore_end(slots[which].ts);
	memset(&slots[which], 0, sizeof(BatchSlot));
}

/* The row descriptor of a batch (NULL when none is set). */
TupleDesc
batch_desc(int which)
{
	return slots[which].desc;
}

/* Forget every tuplestore (end of run, or error). */
void
batch_clear(void)
{
	memset(slots, 0, sizeof(slots));
}

/* Do two row descriptors describe the same stored tuples? */
static bool
same_row_shape(TupleDesc a, TupleDesc b)
{
	int			i;

	if (a->natts != b->natts)
		return false;
	for (i = 0; i < a->natts; i++)
	{
		Form_pg_attribute x = TupleDescAttr(a, i);
		Form_pg_attribute y = TupleDescAttr(b, i);

		if (x->attisdropped != y->attisdropped)
			return false;
		if (!x->attisdropped && x->atttypid != y->atttypid)
			return false;
		if (x->attlen != y->attlen || x->attbyval != y->attbyval || x->attalign != y->attalign)
			return false;
	}
	return true;
}

/* Copy one batch into the result tuplestore of a materialized SRF. */
static Datum
batch_return(FunctionCallInfo fcinfo, int which, const char *fname)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	BatchSlot  *b = &slots[which];
	Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, 0);
	TupleTableSlot *slot;
	int			ptr;

	if (b->ts == NULL || (OidIsValid(b->rowtype) && argtype != b->rowtype) ||
		!has_privs_of_role(GetUserId(), b->user))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s() can only be called by autocdc while it applies a flow", fname)));
	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize) || rsinfo->expectedDesc == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s() must be called in FROM", fname)));
	if (!same_row_shape(rsinfo->expectedDesc, b->desc))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s() called with another row type than its rows have", fname)));
	if (--b->uses <= 0)
	{
		/* the last call: hand the store over */
		rsinfo->returnMode = SFRM_Materialize;
		rsinfo->setResult = b->ts;
		rsinfo->setDesc = CreateTupleDescCopy(rsinfo->expectedDesc);
		memset(b, 0, sizeof(BatchSlot));
		return (Datum) 0;
	}
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	slot = MakeSingleTupleTableSlot(b->desc, &TTSOpsMinimalTuple);
	ptr = tuplestore_alloc_read_pointer(b->ts, EXEC_FLAG_REWIND);
	tuplestore_select_read_pointer(b->ts, ptr);
	tuplestore_rescan(b->ts);
	while (tuplestore_gettupleslot(b->ts, true, false, slot))
		tuplestore_puttupleslot(rsinfo->setResult, slot);
	tuplestore_select_read_pointer(b->ts, 0);
	ExecDropSingleTupleTableSlot(slot);
	return (Datum) 0;
}

/* autocdc_internal._batch(NULL::feed) AS (lsn, ord, columns...): captured source rows. */
Datum
autocdc_batch(PG_FUNCTION_ARGS)
{
	return batch_return(fcinfo, BATCH_SOURCE, "autocdc_internal._batch");
}

/* autocdc_internal._events(NULL::state): classified events of the run. */
Datum
autocdc_events(PG_FUNCTION_ARGS)
{
	return batch_return(fcinfo, BATCH_EVENTS, "autocdc_internal._events");
}

/* autocdc_internal._rows(NULL::rowtype): rows computed by the fold. */
Datum
autocdc_rows(PG_FUNCTION_ARGS)
{
	return batch_return(fcinfo, BATCH_ROWS, "autocdc_internal._rows");
}

/* autocdc_internal._keys(): the distinct keys of the run's events (a record set). */
Datum
autocdc_keys(PG_FUNCTION_ARGS)
{
	return batch_return(fcinfo, BATCH_KEYS, "autocdc_internal._keys");
}

/* Planner support: the number of rows each batch function returns. */
Datum
autocdc_batch_support(PG_FUNCTION_ARGS)
{
	Node	   *req = (Node *) PG_GETARG_POINTER(0);

	if (IsA(req, SupportRequestRows))
	{
		SupportRequestRows *r = (SupportRequestRows *) req;
		char	   *fname = get_func_name(r->funcid);
		int			which = -1;

		if (fname == NULL)
			PG_RETURN_POINTER(NULL);
		if (strcmp(fname, "_batch") == 0)
			which = BATCH_SOURCE;
		else if (strcmp(fname, "_events") == 0)
			which = BATCH_EVENTS;
		else if (strcmp(fname, "_rows") == 0)
			which = BATCH_ROWS;
		else if (strcmp(fname, "_keys") == 0)
			which = BATCH_KEYS;
		if (which >= 0 && slots[which].ts != NULL)
		{
			r->rows = Max(slots[which].nrows, 1);
			PG_RETURN_POINTER(req);
		}
	}
	PG_RETURN_POINTER(NULL);
}
