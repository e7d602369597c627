/*-------------------------------------------------------------------------
 *
 * timetravel.c
 *		autocdc.as_of and autocdc.as_of_key (entry layer): the rows of an
 *		SCD 2 or bitemporal target valid at a business time, as believed at a
 *		system time.
 *
 * The rows of every key valid at X are found through the index
 * autocdc.create_as_of_index gives SCD 2 and bitemporal targets on request
 * (storage.c): GiST over the range [__start_at, __end_at), whose
 * containment operator answers "valid at X" directly; the conditions on
 * the system time filter what it finds.
 * The rows of one key are found through the primary key (keys, __start_at
 * [, __system_start_at]): the key's latest version that began by X (among
 * the rows believed at the system time) is the only candidate, because
 * autocdc never lets two versions of a key in one belief overlap.  A
 * target without the index (none was asked for, or it was dropped) is
 * filtered by a plain query.
 *
 * Both functions run with the caller's privileges: the target is read as
 * any query of the caller reads it (its privileges, its row security).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"

#include "catalog.h"
#include "kind.h"
#include "layout.h"
#include "storage.h"
#include "util.h"

PG_FUNCTION_INFO_V1(autocdc_as_of);
PG_FUNCTION_INFO_V1(autocdc_as_of_key);

/* rows fetched from the query at a time */
#define ASOF_FETCH 1000

/* The parameters of the query, in the order of their $n. */
typedef struct AsOfParams
{
	int			n;
	Oid			types[FUNC_MAX_ARGS];
	Datum		values[FUNC_MAX_ARGS];
	char		nulls[FUNC_MAX_ARGS];
} AsOfParams;

/*
 * Add a value of type typid as the next parameter and return its number;
 * an untyped literal becomes text, which every type's input accepts.
 */
static int
add_param(AsOfParams *p, Oid typid, Datum value)
{
	if (typid == UNKNOWNOID)
	{
		typid = TEXTOID;
		value = CStringGetTextDatum(DatumGetCString(value));
	}
	p->types[p->n] = typid;
	p->values[p->n] = value;
	p->nulls[p->n] = ' ';
	return ++p->n;
}

/* The type of argument i of the call, which must be known. */
static Oid
arg_type(FunctionCallInfo fcinfo, int i)
{
	Oid			typid = get_fn_expr_argtype(fcinfo->flinfo, i);

	if (!OidIsValid(typid))
		elog(ERROR, "could not determine the type of argument %d", i + 1);
	return typid;
}

/* A tuple over the composite datum th (no copy). */
static void
tuple_of_datum(HeapTupleHeader th, HeapTupleData *tuple)
{
	tuple->t_len = HeapTupleHeaderGetDatumLength(th);
	ItemPointerSetInvalid(&tuple->t_self);
	tuple->t_tableOid = InvalidOid;
	tuple->t_data = th;
}

/*
 * The fields of a row value, dropped columns left out: their number, their
 * types, values and nulls (palloc'd).
 */
static int
row_fields(Datum row, Oid **types, Datum **values, bool **nulls)
{
	HeapTupleHeader th = DatumGetHeapTupleHeader(row);
	TupleDesc	desc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(th),
											  HeapTupleHeaderGetTypMod(th));
	HeapTupleData tuple;
	Datum	   *v = palloc(desc->natts * sizeof(Datum));
	bool	   *n = palloc(desc->natts * sizeof(bool));
	int			nfields = 0;
	int			i;

	tuple_of_datum(th, &tuple);
	heap_deform_tuple(&tuple, desc, v, n);
	*types = palloc(desc->natts * sizeof(Oid));
	*values = palloc(desc->natts * sizeof(Datum));
	*nulls = palloc(desc->natts * sizeof(bool));
	for (i = 0; i < desc->natts; i++)
	{
		if (TupleDescAttr(desc, i)->attisdropped)
			continue;
		(*types)[nfields] = TupleDescAttr(desc, i)->atttypid;
		(*values)[nfields] = v[i];
		(*nulls)[nfields] = n[i];
		nfields++;
	}
	ReleaseTupleDesc(desc);
	return nfields;
}

/*
 * Add argument argno, a time, as parameters and return the SQL expression
 * of its value cast to typid.  A row value cast to a composite (a ROW
 * sequence's type) is passed field by field: an anonymous record cannot be
 * cast as a whole.
 */
static char *
time_expr(AsOfParams *p, FunctionCallInfo fcinfo, int argno, Oid typid)
{
	Oid			argtype = arg_type(fcinfo, argno);
	StringInfoData expr;
	Oid		   *types;
	Datum	   *values;
	bool	   *nulls;
	int			n;
	int			i;

	initStringInfo(&expr);
	if (!type_is_rowtype(argtype) || !type_is_rowtype(typid))
	{
		appendStringInfo(&expr, "$%d::%s", add_param(p, argtype, PG_GETARG_DATUM(argno)),
						 format_type_be_qualified(typid));
		return expr.data;
	}
	n = row_fields(PG_GETARG_DATUM(argno), &types, &values, &nulls);
	appendStringInfoString(&expr, "ROW(");
	for (i = 0; i < n; i++)
	{
		int			param = add_param(p, types[i], values[i]);

		if (nulls[i])
			p->nulls[param - 1] = 'n';
		appendStringInfo(&expr, "%s$%d", i > 0 ? ", " : "", param);
	}
	appendStringInfo(&expr, ")::%s", format_type_be_qualified(typid));
	return expr.data;
}

/*
 * Add the fields of a key argument (a value for one key column, a row of
 * values for several) as parameters; false when one of them is NULL, which
 * no key has.
 */
static bool
add_key_params(AsOfParams *p, FunctionCallInfo fcinfo, int argno, int nkeys)
{
	Oid			typid = arg_type(fcinfo, argno);
	Oid		   *types;
	Datum	   *values;
	bool	   *nulls;
	int			n;
	int			i;

	if (PG_ARGISNULL(argno))
		return false;
	if (nkeys == 1)
	{
		add_param(p, typid, PG_GETARG_DATUM(argno));
		return true;
	}
	if (!type_is_rowtype(typid))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the target has %d key columns, so the key must be a row of %d values", nkeys,
						nkeys),
				 errhint("Pass the key as ROW(...), its values in the order of the flow's keys.")));
	n = row_fields(PG_GETARG_DATUM(argno), &types, &values, &nulls);
	if (n != nkeys)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the target has %d key columns, but the key has %d values", nkeys, n),
				 errhint("Pass the key as ROW(...), its values in the order of the flow's keys.")));
	for (i = 0; i < n; i++)
	{
		if (nulls[i])
			return false;
		add_param(p, types[i], values[i]);
	}
	return true;
}

/*
 * Do the statistics say that every row of the target has its own key?  Then
 * the planner may well prefer one pass over the table to the index (no
 * statistics: the index).
 */
static bool
keys_look_unique(Oid relid, const char *firstkey)
{
	AttrNumber	attnum = get_attnum(relid, firstkey);
	HeapTuple	tup;
	bool		unique = false;

	tup = SearchSysCache3(STATRELATTINH, ObjectIdGetDatum(relid), Int16GetDatum(attnum),
						  BoolGetDatum(false));
	if (HeapTupleIsValid(tup))
	{
		Form_pg_statistic st = (Form_pg_statistic) GETSTRUCT(tup);

		unique = (st->stadistinct == -1.0);
		ReleaseSysCache(tup);
	}
	return unique;
}

/*
 * Aliases of the queries: autocdc reserves the prefix in targets, so no
 * column of the target can hide them.
 */
#define AS_ROW "__autocdc_r"
#define AS_KEY "__autocdc_k"
#define AS_VERSION "__autocdc_v"
#define AS_END "__autocdc_e"

/*
 * Append the condition that a row of the target is believed at system time
 * known (an SQL expression; NULL: the current belief).
 */
static void
append_belief(StringInfo sql, const char *known)
{
	if (known == NULL)
		appendStringInfoString(sql, " AND " AS_ROW "." SCD_SYSTEM_END_NAME " IS NULL");
	else
		appendStringInfo(sql, " AND " AS_ROW "." SCD_SYSTEM_START_NAME " <= %s"
						 " AND (" AS_ROW "." SCD_SYSTEM_END_NAME " IS NULL OR %s < "
						 AS_ROW "." SCD_SYSTEM_END_NAME ")",
						 known, known);
}

/*
 * The query of the rows of every key, whose one column is the target's
 * whole row: valid and known are the SQL expressions of the times (known
 * NULL: the current belief).  *by_index is set when the target has the
 * index of its periods and it is to be used.  Where that index holds only
 * the ended versions, the open ones (valid from their start on) come from
 * the btree over their starts: asked for in its order, with sorts off,
 * since the statistics of the whole column make the planner guess that
 * half of them began by any middle time and prefer reading every current
 * row through the key index.
 */
static char *
every_key_query(TargetDef *t, bool bitemporal, const char *valid, const char *known, bool *by_index)
{
	StringInfoData sql;
	Oid			rangefn = InvalidOid;
	bool		ended_only = false;
	Oid			range = storage_period_range(t->relid, &rangefn, &ended_only);

	*by_index = OidIsValid(range) && !keys_look_unique(t->relid, linitial(t->keys));
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT " AS_ROW " FROM %s " AS_ROW " WHERE ", qualified_relname(t->relid));
	if (!OidIsValid(range))
		appendStringInfo(&sql, AS_ROW "." SCD_START_NAME " <= %s AND (" AS_ROW "." SCD_END_NAME
						 " IS NULL OR %s < " AS_ROW "." SCD_END_NAME ")", valid, valid);
	else
		appendStringInfo(&sql, "%s(" AS_ROW "." SCD_START_NAME ", " AS_ROW "." SCD_END_NAME ")"
						 " OPERATOR(pg_catalog.@>) %s%s",
						 quote_qualified_identifier(get_namespace_name(get_func_namespace(rangefn)),
													get_func_name(rangefn)),
						 valid, ended_only ? " AND " AS_ROW "." SCD_END_NAME " IS NOT NULL" : "");
	if (bitemporal)
		append_belief(&sql, known);
	if (ended_only)
	{
		/* the open versions, through the btree over their starts */
		appendStringInfo(&sql, " UNION ALL (SELECT " AS_ROW " FROM %s " AS_ROW " WHERE "
						 AS_ROW "." SCD_END_NAME " IS NULL AND " AS_ROW "." SCD_START_NAME " <= %s",
						 qualified_relname(t->relid), valid);
		if (bitemporal)
			append_belief(&sql, known);
		appendStringInfo(&sql, "%s)", *by_index ? " ORDER BY " AS_ROW "." SCD_START_NAME : "");
	}
	return sql.data;
}

/*
 * The query of the rows of one key, whose values are the parameters from
 * key_from on: through the primary key, the key's latest version that
 * began by the business time (among the rows believed at the system time)
 * is the only candidate, since no two versions of a key in one belief
 * overlap.
 */
static char *
one_key_query(TargetDef *t, bool bitemporal, const char *valid, const char *known, int key_from)
{
	StringInfoData sql;
	ListCell   *lc;
	int			i = key_from;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT " AS_VERSION "." AS_ROW " FROM (SELECT ");
	foreach(lc, t->keys)
	{
		Oid			typid = get_atttype(t->relid, get_attnum(t->relid, lfirst(lc)));

		appendStringInfo(&sql, "%s$%d::%s AS %s", lc == list_head(t->keys) ? "" : ", ", i++,
						 format_type_be_qualified(typid), quote_identifier(lfirst(lc)));
	}
	appendStringInfo(&sql, ") " AS_KEY ", LATERAL (SELECT " AS_ROW ", " AS_ROW "." SCD_END_NAME " AS "
					 AS_END " FROM %s " AS_ROW " WHERE ", qualified_relname(t->relid));
	foreach(lc, t->keys)
	{
		const char *col = quote_identifier(lfirst(lc));

		appendStringInfo(&sql, AS_ROW ".%s = " AS_KEY ".%s AND ", col, col);
	}
	appendStringInfo(&sql, AS_ROW "." SCD_START_NAME " <= %s", valid);
	if (bitemporal)
		append_belief(&sql, known);
	appendStringInfo(&sql, " ORDER BY " AS_ROW "." SCD_START_NAME " DESC LIMIT 1) " AS_VERSION
					 " WHERE " AS_VERSION "." AS_END " IS NULL OR %s < " AS_VERSION "." AS_END, valid);
	return sql.data;
}

/*
 * Load the target relid into t: it must be a flow's target that keeps
 * history, and one with system time if known_arg is given.  Returns whether
 * it is bitemporal.
 */
static bool
load_history_target(Oid relid, int known_arg, TargetDef *t)
{
	const StorageKind *kind;
	bool		bitemporal;

	if (!catalog_load_target(relid, t))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("table %s is not the target of a flow", qualified_relname(relid)),
				 errhint("autocdc.as_of reads the targets of SCD 2 and bitemporal flows.")));
	kind = storage_kind(t->scd);
	if (kind->nperiods == 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("target %s keeps no history", qualified_relname(relid)),
				 errdetail("It is stored as %s: it holds only the current rows.", kind->label),
				 errhint("Read the table itself, or store a flow as SCD type 2 to travel in time.")));
	bitemporal = kind->nperiods > kind->sysperiods_from;
	if (known_arg >= 0 && !bitemporal)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target %s has no system time", qualified_relname(relid)),
				 errdetail("known_at applies to bitemporal targets; %s is stored as %s.",
						   qualified_relname(relid), kind->label),
				 errhint("Omit known_at.")));
	return bitemporal;
}

/*
 * Run the as_of query sql with parameters p and put the rows it returns
 * into the result set, by the index if by_index.
 */
static void
store_as_of_rows(ReturnSetInfo *rsinfo, const char *sql, AsOfParams *p, bool by_index)
{
	Portal		portal;
	int			save_nestlevel;

	/* the index is the plan, whatever the planner thinks of the sizes */
	save_nestlevel = NewGUCNestLevel();
	if (by_index)
	{
		(void) set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("enable_sort", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	portal = SPI_cursor_open_with_args(NULL, sql, p->n, p->types, p->values, p->nulls, true, 0);
	for (;;)
	{
		uint64		i;

		SPI_cursor_fetch(portal, true, ASOF_FETCH);
		if (SPI_processed == 0)
			break;
		for (i = 0; i < SPI_processed; i++)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
			HeapTupleData tuple;

			tuple_of_datum(DatumGetHeapTupleHeader(d), &tuple);
			tuplestore_puttuple(rsinfo->setResult, &tuple);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	AtEOXact_GUC(true, save_nestlevel);
}

/*
 * The body of both functions: key_arg is the number of the key argument
 * (-1: every key), valid_arg that of the business time, known_arg that of
 * the system time (-1: the current belief).
 */
static Datum
as_of_rows(FunctionCallInfo fcinfo, int key_arg, int valid_arg, int known_arg)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			rowtype = arg_type(fcinfo, 0);
	Oid			relid = get_typ_typrelid(rowtype);
	TargetDef	t;
	bool		bitemporal;
	AsOfParams	p = {0};
	char	   *valid;
	char	   *known = NULL;
	int			key_from = 0;
	char	   *sql;
	bool		by_index;

	if (!OidIsValid(relid) || (get_rel_relkind(relid) != RELKIND_RELATION &&
								get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("the first argument must be a null of a target's row type, not %s",
						format_type_be(rowtype)),
				 errhint("Call it as autocdc.as_of(NULL::target, ...).")));
	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", get_rel_name(relid))));
	InitMaterializedSRF(fcinfo, 0);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	catalog_require_current();
	bitemporal = load_history_target(relid, known_arg, &t);

	/* a NULL time or key matches no row */
	if (PG_ARGISNULL(valid_arg) || (known_arg >= 0 && PG_ARGISNULL(known_arg)))
	{
		SPI_finish();
		return (Datum) 0;
	}
	valid = time_expr(&p, fcinfo, valid_arg, t.seq_type);
	if (known_arg >= 0)
		known = time_expr(&p, fcinfo, known_arg, t.sysseq_type);
	if (key_arg >= 0)
	{
		key_from = p.n + 1;
		if (!add_key_params(&p, fcinfo, key_arg, list_length(t.keys)))
		{
			SPI_finish();
			return (Datum) 0;
		}
	}
	if (key_from > 0)
	{
		sql = one_key_query(&t, bitemporal, valid, known, key_from);
		by_index = true;
	}
	else
		sql = every_key_query(&t, bitemporal, valid, known, &by_index);

	store_as_of_rows(rsinfo, sql, &p, by_index);
	SPI_finish();
	return (Datum) 0;
}

/* as_of(rows, valid_at [, known_at]): the rows of every key. */
Datum
autocdc_as_of(PG_FUNCTION_ARGS)
{
	return as_of_rows(fcinfo, -1, 1, PG_NARGS() > 2 ? 2 : -1);
}

/* as_of_key(rows, key, valid_at [, known_at]): the rows of one key. */
Datum
autocdc_as_of_key(PG_FUNCTION_ARGS)
{
	return as_of_rows(fcinfo, 1, 2, PG_NARGS() > 3 ? 3 : -1);
}
