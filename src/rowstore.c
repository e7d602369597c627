/*-------------------------------------------------------------------------
 *
 * rowstore.c
 *		The row store of a changes() flow: the out-of-line values of the
 *		source's rows by key, which fill the values the WAL of an UPDATE
 *		gives only as pointers into the TOAST table.
 *
 * PostgreSQL logs an UPDATE's unchanged out-of-line values as pointers into
 * the table's TOAST relation.  autocdc never follows them: by the time the
 * WAL is decoded the chunks may have been vacuumed away, or reused by
 * another value.  A value written out of line arrives whole instead,
 * reassembled by decoding from the chunks its transaction logged.  So each
 * changes() flow keeps autocdc_state.rows_<flow id>: one row per source row
 * that holds an out-of-line value in a column the flow reads, with its key
 * and those values (a bytea[] indexed by column number; a value's bytes are
 * its type's own).
 *
 * A first read (and so a full refresh) builds the store again from the
 * table under the read's snapshot: rowstore_read notes the rows, and the
 * run writes them.  Decoding cannot read a user table, so the capture only
 * notes which values of an upsert came whole and which are pointers
 * (RowNotes); the run then resolves the batch before applying it, in arrival
 * order and in the run's transaction: an upsert's whole values replace the
 * entry, a pointer is filled from it (a key-changing update's from the old
 * key's entry, which the delete before it removed), a delete removes the
 * entry, a truncate empties the store.  A pointer the store cannot fill
 * fails the run.  Everything runs as the flow's owner, who owns the store.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"

#include "compat.h"
#include "layout.h"
#include "rowstore.h"
#include "settings.h"
#include "util.h"

/* The store's column of values. */
#define ROWSTORE_VALUES_NAME "__autocdc_values"

/* The store's layout for a flow: its keys, and the columns whose values it keeps. */
typedef struct StoreLayout
{
	int			nkeys;
	char	  **keynames;
	Oid		   *keytypes;
	int32	   *keytypmods;
	Oid		   *keycolls;
	int			ncols;			/* the columns kept */
	char	  **colnames;
	AttrNumber *colatts;		/* their numbers in the source */
	int			maxatt;			/* the length of every values array */
} StoreLayout;

static void store_give(FlowDef *flow);

/* Name of a flow's row store (unqualified). */
char *
rowstore_name(int flow_id)
{
	return psprintf("rows_%d", flow_id);
}

/* A flow's row store, or InvalidOid when there is none. */
static Oid
store_relid(int flow_id)
{
	return get_relname_relid(rowstore_name(flow_id),
							 get_namespace_oid(AUTOCDC_STATE_SCHEMA, false));
}

/* The store's name, qualified and quoted. */
static char *
store_qualified(int flow_id)
{
	return quote_qualified_identifier(AUTOCDC_STATE_SCHEMA, rowstore_name(flow_id));
}

/*
 * Does a changes() flow read a column of its source: one it selects, one
 * its delete and truncate conditions use (its sequence reads only
 * pseudo-columns), or its columns_to_update?
 */
bool
rowstore_column_read(FlowDef *flow, const char *name)
{
	return name_in_list(flow->columns, name) || name_in_list(flow->run.expr_columns, name) ||
		(flow->columns_to_update && strcmp(flow->columns_to_update, name) == 0);
}

/* The store's layout: the flow's keys, and the varlena columns it reads. */
static StoreLayout *
store_layout(FlowDef *flow)
{
	StoreLayout *l = palloc0(sizeof(StoreLayout));
	Relation	rel = relation_open(flow->source, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	ListCell   *lc;
	int			i;

	l->nkeys = list_length(flow->keys);
	l->keynames = palloc(sizeof(char *) * l->nkeys);
	l->keytypes = palloc(sizeof(Oid) * l->nkeys);
	l->keytypmods = palloc(sizeof(int32) * l->nkeys);
	l->keycolls = palloc(sizeof(Oid) * l->nkeys);
	i = 0;
	foreach(lc, flow->keys)
	{
		AttrNumber	a = get_attnum(flow->source, lfirst(lc));

		if (a == InvalidAttrNumber)
			elog(ERROR, "key column \"%s\" of flow \"%s\" not found",
				 (char *) lfirst(lc), flow->name);
		l->keynames[i] = lfirst(lc);
		l->keytypes[i] = TupleDescAttr(desc, a - 1)->atttypid;
		l->keytypmods[i] = TupleDescAttr(desc, a - 1)->atttypmod;
		l->keycolls[i] = TupleDescAttr(desc, a - 1)->attcollation;
		i++;
	}
	l->colnames = palloc(sizeof(char *) * desc->natts);
	l->colatts = palloc(sizeof(AttrNumber) * desc->natts);
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || att->attlen != -1 ||
			!rowstore_column_read(flow, NameStr(att->attname)))
			continue;
		l->colnames[l->ncols] = pstrdup(NameStr(att->attname));
		l->colatts[l->ncols++] = att->attnum;
		l->maxatt = att->attnum;
	}
	relation_close(rel, AccessShareLock);
	return l;
}

/* New, empty notes for a run, in the current memory context. */
RowNotes *
rownotes_new(ResourceOwner owner)
{
	RowNotes   *n = palloc0(sizeof(RowNotes));

	n->cxt = CurrentMemoryContext;
	n->owner = owner;
	return n;
}

/* Note what matters to the store of the upsert at a place in the batch. */
void
rownotes_mark(RowNotes *notes, int64 row, Bitmapset *whole, Bitmapset *unchanged,
			  bool pointers, bool moved)
{
	MemoryContext old = MemoryContextSwitchTo(notes->cxt);
	RowMark    *m;

	if (notes->nmarks == notes->maxmarks)
	{
		notes->maxmarks = notes->maxmarks ? notes->maxmarks * 2 : 64;
		notes->marks = notes->marks ?
			repalloc_huge(notes->marks, sizeof(RowMark) * notes->maxmarks) :
			palloc(sizeof(RowMark) * notes->maxmarks);
	}
	m = &notes->marks[notes->nmarks++];
	m->row = row;
	m->whole = bms_copy(whole);
	m->unchanged = bms_copy(unchanged);
	m->pointers = pointers;
	m->moved = moved;
	MemoryContextSwitchTo(old);
}

/* A values array of the store (maxatt long, from 1). */
static Datum
values_array(StoreLayout *l, Datum *elems, bool *enulls)
{
	int			dims[1] = {l->maxatt};
	int			lbs[1] = {1};

	return PointerGetDatum(construct_md_array(elems, enulls, 1, dims, lbs, BYTEAOID,
											  -1, false, TYPALIGN_INT));
}

/* What rowstore_read gathers. */
typedef struct FillRead
{
	StoreLayout *l;
	RowNotes   *notes;
	Datum	   *elems;
	bool	   *enulls;
	MemoryContext tmp;			/* reset after each row */
} FillRead;

/*
 * A row read under the snapshot: noted when a column the store keeps holds
 * an out-of-line value, which is read now, while the snapshot shows it.
 */
static void
fill_row(HeapTuple tup, TupleDesc desc, void *arg)
{
	FillRead   *fr = arg;
	StoreLayout *l = fr->l;
	MemoryContext old = MemoryContextSwitchTo(fr->tmp);
	Datum	   *values = palloc(sizeof(Datum) * desc->natts);
	bool	   *nulls = palloc(sizeof(bool) * desc->natts);
	bool		any = false;
	int			i;

	heap_deform_tuple(tup, desc, values, nulls);
	for (i = 0; i < l->maxatt; i++)
		fr->enulls[i] = true;
	for (i = 0; i < l->ncols; i++)
	{
		Datum		v = values[l->nkeys + i];

		if (nulls[l->nkeys + i] || !VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(v)))
			continue;
		fr->elems[l->colatts[i] - 1] =
			PointerGetDatum(detoast_attr((struct varlena *) DatumGetPointer(v)));
		fr->enulls[l->colatts[i] - 1] = false;
		any = true;
	}
	if (any)
	{
		ResourceOwner saved = CurrentResourceOwner;

		for (i = 0; i < l->nkeys; i++)
			if (!nulls[i] && TupleDescAttr(desc, i)->attlen == -1)
				values[i] = PointerGetDatum(PG_DETOAST_DATUM_PACKED(values[i]));
		values[l->nkeys] = values_array(l, fr->elems, fr->enulls);
		nulls[l->nkeys] = false;
		CurrentResourceOwner = fr->notes->owner;
		tuplestore_putvalues(fr->notes->fill, fr->notes->filldesc, values, nulls);
		CurrentResourceOwner = saved;
		fr->notes->nfill++;
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(fr->tmp);
}

/*
 * A first read of a changes() flow: note, under the active snapshot, every
 * row of the source that holds an out-of-line value in a column the store
 * keeps, with those values; the run builds the store from them.  Runs as
 * the flow's owner (who may read those columns: create_flow checked).
 */
void
rowstore_read(FlowDef *flow, RowNotes *notes)
{
	StoreLayout *l = store_layout(flow);
	StringInfoData sql;
	FillRead	fr;
	ResourceOwner saved = CurrentResourceOwner;
	MemoryContext old;
	Oid			saved_uid;
	int			saved_sec;
	int			i;

	old = MemoryContextSwitchTo(notes->cxt);
	if (notes->fill != NULL)
		tuplestore_end(notes->fill);
	notes->filldesc = CreateTemplateTupleDesc(l->nkeys + 1);
	for (i = 0; i < l->nkeys; i++)
		TupleDescInitEntry(notes->filldesc, i + 1, l->keynames[i], l->keytypes[i],
						   l->keytypmods[i], 0);
	TupleDescInitEntry(notes->filldesc, l->nkeys + 1, ROWSTORE_VALUES_NAME, BYTEAARRAYOID, -1, 0);
	compat_TupleDescFinalize(notes->filldesc);
	CurrentResourceOwner = notes->owner;
	notes->fill = tuplestore_begin_heap(false, false, settings_store_mem());
	CurrentResourceOwner = saved;
	MemoryContextSwitchTo(old);
	notes->read = true;
	notes->nfill = 0;
	if (l->ncols == 0)
		return;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s", quoted_list(flow->keys));
	for (i = 0; i < l->ncols; i++)
		appendStringInfo(&sql, ", s.%s", quote_identifier(l->colnames[i]));
	appendStringInfo(&sql, " FROM %s%s s",
					 get_rel_relkind(flow->source) == RELKIND_RELATION ? "ONLY " : "",
					 qualified_relname(flow->source));
	fr.l = l;
	fr.notes = notes;
	fr.elems = palloc(sizeof(Datum) * l->maxatt);
	fr.enulls = palloc(sizeof(bool) * l->maxatt);
	fr.tmp = AllocSetContextCreate(CurrentMemoryContext, "autocdc row store read",
								   ALLOCSET_DEFAULT_SIZES);
	become_owner(flow->owner, &saved_uid, &saved_sec);
	spi_foreach(sql.data, true, fill_row, NULL, &fr);
	restore_user(saved_uid, saved_sec);
	MemoryContextDelete(fr.tmp);
}

/*
 * Create a flow's store anew, empty (as autocdc: nothing of a user's is
 * evaluated), and give it to the flow's owner.
 */
static void
store_create(FlowDef *flow, StoreLayout *l)
{
	StringInfoData sql;
	StringInfoData keys;
	char	   *sname = store_qualified(flow->id);
	Oid			saved_uid;
	int			saved_sec;
	int			i;

	initStringInfo(&sql);
	initStringInfo(&keys);
	appendStringInfo(&sql, "CREATE TABLE %s (", sname);
	for (i = 0; i < l->nkeys; i++)
	{
		appendStringInfo(&sql, "%s NOT NULL, ",
						 column_definition(l->keynames[i], l->keytypes[i],
										   l->keytypmods[i], l->keycolls[i]));
		appendStringInfo(&keys, "%s%s", i ? ", " : "", quote_identifier(l->keynames[i]));
	}
	appendStringInfo(&sql, "%s pg_catalog.bytea[] NOT NULL)", ROWSTORE_VALUES_NAME);
	rowstore_drop(flow->id);
	become_superuser(&saved_uid, &saved_sec);
	spi_exec(sql.data, SPI_OK_UTILITY);
	spi_exec(psprintf("CREATE UNIQUE INDEX ON %s (%s)", sname, keys.data), SPI_OK_UTILITY);
	restore_user(saved_uid, saved_sec);
	store_give(flow);
}

/* Give a flow's store to the flow's owner (as autocdc: evaluates nothing). */
static void
store_give(FlowDef *flow)
{
	Oid			saved_uid;
	int			saved_sec;

	become_superuser(&saved_uid, &saved_sec);
	spi_exec(psprintf("ALTER TABLE %s OWNER TO %s", store_qualified(flow->id),
					  quote_identifier(GetUserNameFromId(flow->owner, false))),
			 SPI_OK_UTILITY);
	restore_user(saved_uid, saved_sec);
	CommandCounterIncrement();
}

/* Drop a flow's row store, if it has one (as autocdc: dropping evaluates nothing). */
void
rowstore_drop(int flow_id)
{
	Oid			saved_uid;
	int			saved_sec;

	if (!OidIsValid(store_relid(flow_id)))
		return;
	become_superuser(&saved_uid, &saved_sec);
	spi_exec(psprintf("DROP TABLE %s", store_qualified(flow_id)), SPI_OK_UTILITY);
	restore_user(saved_uid, saved_sec);
}

/* The statements that maintain a store, and where a run's resolution stands. */
typedef struct Resolver
{
	FlowDef    *flow;
	StoreLayout *l;
	SPIPlanPtr	lookup;			/* the values of a key */
	SPIPlanPtr	remove;			/* delete a key's entry, returning it */
	SPIPlanPtr	put;			/* insert or replace a key's entry */
	SPIPlanPtr	empty;			/* delete every entry */
	bool		nonempty;		/* the store may hold entries */
	int		   *keypos;			/* batch positions of the keys */
	int		   *colpos;			/* batch positions of the kept columns (-1:
								 * not in the batch) */
	int			ctpos;			/* of _change_type */
	int			lsnpos;			/* of _commit_lsn */
	Datum	   *prev;			/* the entry the last event (a delete)
								 * removed, maxatt values; NULL: none */
	bool	   *prevnulls;
	Datum	   *elems;			/* an entry being made */
	bool	   *enulls;
	Datum	   *keyvals;		/* parameters */
	char	   *keynulls;
} Resolver;

/* Prepare one statement on the store, its parameters the keys (and values). */
static SPIPlanPtr
store_prepare(Resolver *r, const char *sql, bool with_values)
{
	Oid		   *types = palloc(sizeof(Oid) * (r->l->nkeys + 1));
	SPIPlanPtr	plan;

	memcpy(types, r->l->keytypes, sizeof(Oid) * r->l->nkeys);
	types[r->l->nkeys] = BYTEAARRAYOID;
	plan = SPI_prepare(sql, r->l->nkeys + (with_values ? 1 : 0), types);
	if (plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", sql, SPI_result_code_string(SPI_result));
	return plan;
}

/* Prepare the statements of a flow's store. */
static void
resolver_prepare(Resolver *r)
{
	StoreLayout *l = r->l;
	char	   *sname = store_qualified(r->flow->id);
	StringInfoData where;
	StringInfoData cols;
	StringInfoData params;
	int			i;

	initStringInfo(&where);
	initStringInfo(&cols);
	initStringInfo(&params);
	for (i = 0; i < l->nkeys; i++)
	{
		appendStringInfo(&where, "%s%s %s $%d", i ? " AND " : "",
						 quote_identifier(l->keynames[i]), equality_operator(l->keytypes[i]),
						 i + 1);
		appendStringInfo(&cols, "%s, ", quote_identifier(l->keynames[i]));
		appendStringInfo(&params, "$%d, ", i + 1);
	}
	r->lookup = store_prepare(r, psprintf("SELECT %s FROM %s WHERE %s",
										  ROWSTORE_VALUES_NAME, sname, where.data), false);
	r->remove = store_prepare(r, psprintf("DELETE FROM %s WHERE %s RETURNING %s",
										  sname, where.data, ROWSTORE_VALUES_NAME), false);
	cols.len -= 2;
	cols.data[cols.len] = '\0';
	r->put = store_prepare(r, psprintf("INSERT INTO %s VALUES (%s$%d) ON CONFLICT (%s) DO UPDATE SET %s = EXCLUDED.%s",
									   sname, params.data, l->nkeys + 1, cols.data,
									   ROWSTORE_VALUES_NAME, ROWSTORE_VALUES_NAME), true);
	r->empty = SPI_prepare(psprintf("DELETE FROM %s", sname), 0, NULL);
}

/* Run a statement on the store for the current key (values: or NULL). */
static void
store_run(Resolver *r, SPIPlanPtr plan, Datum values, int expected)
{
	int			rc;

	r->keyvals[r->l->nkeys] = values;
	rc = SPI_execute_plan(plan, r->keyvals, r->keynulls, false, 0);
	if (rc != expected)
		elog(ERROR, "row store of flow \"%s\": statement failed: %s",
			 r->flow->name, SPI_result_code_string(rc));
}

/* Delete every entry of the store. */
static void
store_empty(Resolver *r)
{
	if (SPI_execute_plan(r->empty, NULL, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "row store of flow \"%s\": could not empty it", r->flow->name);
	r->nonempty = false;
}

/*
 * The entry the last statement returned, if any, into vals/vnulls (maxatt
 * long; values copied into the current memory context).
 */
static bool
store_result(Resolver *r, Datum *vals, bool *vnulls)
{
	bool		isnull;
	Datum		d;
	Datum	   *elems;
	bool	   *enulls;
	int			n,
				i;
	ArrayType  *arr;

	if (SPI_processed == 0)
		return false;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	arr = DatumGetArrayTypeP(d);
	deconstruct_array(arr, BYTEAOID, -1, false, TYPALIGN_INT, &elems, &enulls, &n);
	for (i = 0; i < r->l->maxatt; i++)
	{
		int			k = i + 1 - ARR_LBOUND(arr)[0];

		vnulls[i] = k < 0 || k >= n || enulls[k];
		vals[i] = vnulls[i] ? (Datum) 0 : datumCopy(elems[k], false, -1);
	}
	SPI_freetuptable(SPI_tuptable);
	return true;
}

/* The run fails: the store cannot fill a pointer of an upsert. */
static void
no_value(Resolver *r, Datum *values, int c)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("flow \"%s\": an update of source \"%s\" at " COMPAT_LSN_FORMAT " left the out-of-line value of column \"%s\" unchanged, and the flow's row store has no value for it",
					r->flow->name, get_rel_name(r->flow->source),
					LSN_FORMAT_ARGS(DatumGetLSN(values[r->lsnpos])), r->l->colnames[c]),
			 errdetail("The WAL holds such a value only as a pointer into the table's TOAST data, which autocdc does not follow."),
			 errhint("Run SELECT autocdc.full_refresh(%s): it reads the table again, builds the row store and keeps the history.",
					 quote_literal_cstr(r->flow->name))));
}

/*
 * Resolve one upsert of the batch (values/nulls, changed in place): fill
 * its pointers from the store and make the store's entry what the row
 * holds now.
 */
static void
resolve_upsert(Resolver *r, RowMark *mark, Datum *values, bool *nulls)
{
	StoreLayout *l = r->l;
	Datum	   *src = NULL;
	bool	   *srcnulls = NULL;
	bool		looked = false,
				found = false,
				any = false,
				changed = false;
	int			nkept = 0,
				nentry = 0;
	int			c;

	if (mark != NULL && (mark->pointers || mark->unchanged != NULL))
	{
		for (c = 0; c < l->nkeys && mark->pointers; c++)
			if (r->keynulls[c] == ' ' && get_typlen(l->keytypes[c]) == -1 &&
				VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(r->keyvals[c])))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("flow \"%s\": an update of source \"%s\" at " COMPAT_LSN_FORMAT " left an out-of-line key unchanged",
								r->flow->name, get_rel_name(r->flow->source),
								LSN_FORMAT_ARGS(DatumGetLSN(values[r->lsnpos]))),
						 errdetail("Column \"%s\" of the key holds a value too long to be kept in the row; the WAL holds it only as a pointer.",
								   l->keynames[c]),
						 errhint("Set ALTER TABLE %s REPLICA IDENTITY FULL, then run SELECT autocdc.full_refresh(%s).",
								 qualified_relname(r->flow->source),
								 quote_literal_cstr(r->flow->name))));
		if (mark->moved)
		{
			src = r->prev;
			srcnulls = r->prevnulls;
		}
		else if (r->nonempty)
		{
			src = palloc(sizeof(Datum) * l->maxatt);
			srcnulls = palloc(sizeof(bool) * l->maxatt);
			store_run(r, r->lookup, (Datum) 0, SPI_OK_SELECT);
			looked = true;
			found = store_result(r, src, srcnulls);
			if (!found)
				src = NULL;
		}
	}
	for (c = 0; c < l->maxatt; c++)
		r->enulls[c] = true;
	for (c = 0; c < l->ncols; c++)
	{
		int			i = r->colpos[c];
		int			a = l->colatts[c] - 1;

		if (i < 0 || nulls[i])
			continue;
		if (VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(values[i])))
		{
			if (src == NULL || srcnulls[a])
				no_value(r, values, c);
			values[i] = src[a];
		}
		else if (mark != NULL && bms_is_member(i - BATCH_DATA, mark->unchanged))
		{
			/* from the old row: rewrite the entry only if it differs */
			if (src == NULL || srcnulls[a] || !datum_image_eq(values[i], src[a], false, -1))
				changed = true;
		}
		else if (mark == NULL || !bms_is_member(i - BATCH_DATA, mark->whole))
			continue;
		else
			changed = true;		/* a value written now */
		r->elems[a] = values[i];
		r->enulls[a] = false;
		any = true;
		nkept++;
	}
	if (found)
		for (c = 0; c < l->ncols; c++)
			if (!srcnulls[l->colatts[c] - 1])
				nentry++;

	/*
	 * Rewrite the entry unless it already holds exactly these values: every
	 * one filled from it, and none of its others gone (an UPDATE that left
	 * the out-of-line values alone rewrites nothing).
	 */
	if (any)
	{
		if (changed || !found || nkept != nentry)
		{
			store_run(r, r->put, values_array(l, r->elems, r->enulls), SPI_OK_INSERT);
			r->nonempty = true;
		}
	}
	else if (r->nonempty && (!looked || found))
		store_run(r, r->remove, (Datum) 0, SPI_OK_DELETE_RETURNING);
}

/* Resolve one decoded event of the batch (values/nulls, changed in place). */
static void
resolve_event(Resolver *r, RowMark *mark, Datum *values, bool *nulls)
{
	char	   *ct = TextDatumGetCString(values[r->ctpos]);
	int			k;

	for (k = 0; k < r->l->nkeys; k++)
	{
		r->keyvals[k] = values[r->keypos[k]];
		r->keynulls[k] = nulls[r->keypos[k]] ? 'n' : ' ';
	}
	if (strcmp(ct, "delete") == 0)
	{
		r->prev = NULL;
		if (r->nonempty)
		{
			Datum	   *vals = palloc(sizeof(Datum) * r->l->maxatt);
			bool	   *vnulls = palloc(sizeof(bool) * r->l->maxatt);

			store_run(r, r->remove, (Datum) 0, SPI_OK_DELETE_RETURNING);
			if (store_result(r, vals, vnulls))
			{
				r->prev = vals;
				r->prevnulls = vnulls;
			}
		}
		return;
	}
	if (strcmp(ct, "truncate") == 0)
	{
		if (r->nonempty)
			store_empty(r);
		r->prev = NULL;
		return;
	}
	resolve_upsert(r, mark, values, nulls);
	r->prev = NULL;
}

/* Fill a flow's new store from the rows its first read noted. */
static void
store_fill(Resolver *r, RowNotes *notes)
{
	TupleTableSlot *slot = MakeSingleTupleTableSlot(notes->filldesc, &TTSOpsMinimalTuple);
	int			k;

	while (tuplestore_gettupleslot(notes->fill, true, false, slot))
	{
		slot_getallattrs(slot);
		for (k = 0; k < r->l->nkeys; k++)
		{
			r->keyvals[k] = slot->tts_values[k];
			r->keynulls[k] = slot->tts_isnull[k] ? 'n' : ' ';
		}
		store_run(r, r->put, slot->tts_values[r->l->nkeys], SPI_OK_INSERT);
	}
	ExecDropSingleTupleTableSlot(slot);
	tuplestore_end(notes->fill);
	notes->fill = NULL;
}

/* Does the store hold any entry? */
static bool
store_has_rows(int flow_id)
{
	spi_exec(psprintf("SELECT FROM %s LIMIT 1", store_qualified(flow_id)), SPI_OK_SELECT);
	return SPI_processed > 0;
}

/* Find a column of the batch by name (-1: none). */
static int
batch_position(TupleDesc bdesc, const char *name, int from, int to)
{
	int			i;

	for (i = from; i < to; i++)
		if (strcmp(NameStr(TupleDescAttr(bdesc, i)->attname), name) == 0)
			return i;
	return -1;
}

/*
 * Where the resolver finds the key columns, the stored columns and the
 * change type and commit LSN pseudo-columns in the batch (ndata data
 * columns).
 */
static void
resolver_positions(Resolver *r, TupleDesc bdesc, int ndata)
{
	int			i;

	r->keypos = palloc(sizeof(int) * r->l->nkeys);
	for (i = 0; i < r->l->nkeys; i++)
		if ((r->keypos[i] = batch_position(bdesc, r->l->keynames[i], BATCH_DATA, ndata)) < 0)
			elog(ERROR, "key column \"%s\" of flow \"%s\" is not in its batch",
				 r->l->keynames[i], r->flow->name);
	r->colpos = palloc(sizeof(int) * Max(r->l->ncols, 1));
	for (i = 0; i < r->l->ncols; i++)
		r->colpos[i] = batch_position(bdesc, r->l->colnames[i], BATCH_DATA, ndata);
	r->ctpos = ndata + PSEUDO_CHANGE_TYPE;
	r->lsnpos = ndata + PSEUDO_COMMIT_LSN;
}

/*
 * Maintain the store from the batch's decoded events in arrival order and
 * fill their pointers; returns the new batch (in notes' resource owner) and
 * frees the one given.
 */
static Tuplestorestate *
resolve_batch(Resolver *r, Tuplestorestate *batch, TupleDesc bdesc, RowNotes *notes)
{
	Tuplestorestate *out;
	TupleTableSlot *slot;
	MemoryContext rowcxt,
				old;
	ResourceOwner saved = CurrentResourceOwner;
	Datum	   *values = palloc(sizeof(Datum) * bdesc->natts);
	bool	   *nulls = palloc(sizeof(bool) * bdesc->natts);
	int64		row = 0;
	int			mi = 0;

	CurrentResourceOwner = notes->owner;
	out = tuplestore_begin_heap(false, false, settings_store_mem());
	CurrentResourceOwner = saved;
	slot = MakeSingleTupleTableSlot(bdesc, &TTSOpsMinimalTuple);
	rowcxt = AllocSetContextCreate(CurrentMemoryContext, "autocdc row store",
								   ALLOCSET_DEFAULT_SIZES);
	while (tuplestore_gettupleslot(batch, true, false, slot))
	{
		RowMark    *mark = NULL;

		slot_getallattrs(slot);
		memcpy(values, slot->tts_values, sizeof(Datum) * bdesc->natts);
		memcpy(nulls, slot->tts_isnull, sizeof(bool) * bdesc->natts);
		while (mi < notes->nmarks && notes->marks[mi].row < row)
			mi++;
		if (mi < notes->nmarks && notes->marks[mi].row == row)
			mark = &notes->marks[mi];
		if (!ORD_IS_SNAPSHOT(DatumGetInt64(values[BATCH_ORD])))
		{
			/* an entry a delete removed lives on for the moved row after it */
			if (mark == NULL || !mark->moved)
			{
				MemoryContextReset(rowcxt);
				r->prev = NULL;
			}
			old = MemoryContextSwitchTo(rowcxt);
			resolve_event(r, mark, values, nulls);
			MemoryContextSwitchTo(old);
		}
		CurrentResourceOwner = notes->owner;
		tuplestore_putvalues(out, bdesc, values, nulls);
		CurrentResourceOwner = saved;
		row++;
	}
	ExecDropSingleTupleTableSlot(slot);
	tuplestore_end(batch);
	MemoryContextDelete(rowcxt);
	return out;
}

/*
 * Before a changes() flow's batch is applied, as its owner: build the store
 * again after a first read, then maintain it from the batch's decoded
 * events in arrival order and fill their pointers.  Returns the batch to
 * apply (the one given, when nothing needs doing; otherwise a new one, and
 * the one given is freed).
 */
Tuplestorestate *
rowstore_resolve(FlowDef *flow, Tuplestorestate *batch, TupleDesc bdesc, RowNotes *notes)
{
	Resolver	r;
	Oid			relid;
	int			ndata = bdesc->natts - PSEUDO_NCOLUMNS;

	if (notes == NULL || !flow->srckind->row_changes)
		return batch;
	relid = store_relid(flow->id);
	if (!notes->read && notes->nmarks == 0 && !OidIsValid(relid))
		return batch;
	memset(&r, 0, sizeof(r));
	r.flow = flow;
	r.l = store_layout(flow);
	r.keyvals = palloc(sizeof(Datum) * (r.l->nkeys + 1));
	r.keynulls = palloc(sizeof(char) * (r.l->nkeys + 1));
	r.keynulls[r.l->nkeys] = ' ';
	r.elems = palloc(sizeof(Datum) * Max(r.l->maxatt, 1));
	r.enulls = palloc(sizeof(bool) * Max(r.l->maxatt, 1));
	if (notes->read && notes->nfill == 0)
	{
		/* the table holds no out-of-line value: no store until one comes */
		rowstore_drop(flow->id);
		relid = InvalidOid;
		if (notes->nmarks == 0)
			return batch;
	}
	if (notes->read || !OidIsValid(relid))
		store_create(flow, r.l);
	else if (relation_owner(relid) != flow->owner)
		store_give(flow);
	resolver_prepare(&r);
	if (notes->read)
	{
		r.nonempty = notes->nfill > 0;
		store_fill(&r, notes);
	}
	else
		r.nonempty = OidIsValid(relid) && store_has_rows(flow->id);
	if (notes->skipped && r.nonempty)
	{
		/*
		 * Skipped events may have changed values the store holds: a pointer
		 * it would fill with an older value fails instead.
		 */
		store_empty(&r);
	}
	if (!r.nonempty && notes->nmarks == 0)
		return batch;

	resolver_positions(&r, bdesc, ndata);
	return resolve_batch(&r, batch, bdesc, notes);
}
