/*-------------------------------------------------------------------------
 *
 * snapsource.c
 *		Where a snapshot flow's snapshots come from: a version function
 *		f(last T) RETURNS TABLE(snapshot regclass, version T), called as the
 *		flow's owner, and the versions, kept in the catalog as text written
 *		in styles every session reads back the same way.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "snapsource.h"
#include "util.h"

/*
 * Text of a version, written in styles every session reads back the same
 * way (ISO dates with their offset, ISO 8601 intervals, exact floats).
 */
char *
snapsource_version_text(Oid vtype, Datum v)
{
	int			level = NewGUCNestLevel();
	Oid			outf;
	bool		varlena;
	char	   *result;

	(void) set_config_option("datestyle", "ISO, YMD", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("intervalstyle", "iso_8601", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	getTypeOutputInfo(vtype, &outf, &varlena);
	result = OidOutputFunctionCall(outf, v);
	AtEOXact_GUC(true, level);
	return result;
}

/* A version from its text (see version_text). */
Datum
snapsource_version_datum(Oid vtype, const char *text)
{
	Oid			inf;
	Oid			ioparam;

	getTypeInputInfo(vtype, &inf, &ioparam);
	return OidInputFunctionCall(inf, (char *) text, ioparam, -1);
}

/* Compare two versions with the type's default btree order. */
int
snapsource_version_compare(Oid vtype, Datum x, Datum y)
{
	TypeCacheEntry *tc = lookup_type_cache(vtype, TYPECACHE_CMP_PROC_FINFO);

	return DatumGetInt32(FunctionCall2Coll(&tc->cmp_proc_finfo,
										   get_typcollation(vtype), x, y));
}

/*
 * Check that fn is f(T) RETURNS TABLE(snapshot regclass, version T) with an
 * orderable T; return T.  what names the function in messages.
 */
Oid
snapsource_check_function(Oid fn, const char *what)
{
	HeapTuple	tp = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	Form_pg_proc proc;
	Oid			vtype;
	bool		retset;
	int			nargs;
	TupleDesc	desc = NULL;
	Oid			rettype;
	TypeFuncClass cls = TYPEFUNC_OTHER;

	if (!HeapTupleIsValid(tp))
		elog(ERROR, "cache lookup failed for function %u", fn);
	proc = (Form_pg_proc) GETSTRUCT(tp);
	nargs = proc->pronargs;
	vtype = nargs >= 1 ? proc->proargtypes.values[0] : InvalidOid;
	retset = proc->proretset;
	ReleaseSysCache(tp);

	if (nargs == 1)
		cls = get_func_result_type(fn, &rettype, &desc);
	if (nargs != 1 || !retset || cls != TYPEFUNC_COMPOSITE || desc == NULL ||
		desc->natts != 2 || TupleDescAttr(desc, 0)->atttypid != REGCLASSOID ||
		TupleDescAttr(desc, 1)->atttypid != vtype)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
				 errmsg("version function %s has the wrong signature", what),
				 errhint("A version function takes the last applied version and returns TABLE(snapshot regclass, version T), where T is the type of its argument.")));
	if (get_typtype(vtype) == TYPTYPE_PSEUDO ||
		!OidIsValid(lookup_type_cache(vtype, TYPECACHE_CMP_PROC)->cmp_proc))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("version type %s of version function %s is not supported",
						format_type_be(vtype), what),
				 errhint("Versions must have a type with a default btree ordering, such as bigint, timestamptz or date.")));
	return vtype;
}

/* The function a signature such as 'f(bigint)' names; InvalidOid if none. */
Oid
snapsource_lookup(const char *signature)
{
	LOCAL_FCINFO(fcinfo, 1);
	Datum		result;

	InitFunctionCallInfoData(*fcinfo, NULL, 1, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = CStringGetTextDatum(signature);
	fcinfo->args[0].isnull = false;
	result = to_regprocedure(fcinfo);
	return fcinfo->isnull ? InvalidOid : DatumGetObjectId(result);
}

/* Resolve a flow's stored version function and check it again. */
Oid
snapsource_resolve(FlowDef *flow, Oid *vtype)
{
	Oid			fn = snapsource_lookup(flow->source_function);

	if (!OidIsValid(fn))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("version function %s of flow \"%s\" does not exist",
						flow->source_function, flow->name),
				 errhint("Create the function again, or drop the flow.")));
	*vtype = snapsource_check_function(fn, flow->source_function);
	return fn;
}

/*
 * Error context of a version function's call: a name it cannot find is
 * most often one that the caller's search_path used to find, so say which
 * search_path autocdc runs it with.
 */
static void
version_call_context(void *arg)
{
	const char *signature = arg;
	int			code = geterrcode();

	errcontext("version function %s", signature);
	if (code == ERRCODE_UNDEFINED_TABLE || code == ERRCODE_UNDEFINED_FUNCTION ||
		code == ERRCODE_UNDEFINED_OBJECT)
		errhint("autocdc calls version functions with search_path = pg_catalog, pg_temp: qualify the names the function uses, or give it one, e.g. ALTER FUNCTION %s SET search_path = public.",
				signature);
}

/*
 * Call the version function with the last applied version (as the flow
 * owner) and return its rows in ascending version order.
 */
List *
snapsource_call(FlowDef *flow, Oid fn, Oid vtype, Datum last, bool lastnull)
{
	char	   *sql = psprintf("SELECT v.* FROM %s($1) v ORDER BY 2",
							   quote_qualified_identifier(get_namespace_name(get_func_namespace(fn)),
														  get_func_name(fn)));
	char		nulls[1] = {lastnull ? 'n' : ' '};
	List	   *result = NIL;
	Oid			saved_uid;
	int			saved_sec;
	int16		typlen;
	bool		typbyval;
	uint64		i;
	ErrorContextCallback callback;

	get_typlenbyval(vtype, &typlen, &typbyval);
	become_owner(flow->owner, &saved_uid, &saved_sec);
	callback.callback = version_call_context;
	callback.arg = flow->source_function;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	if (SPI_execute_with_args(sql, 1, &vtype, &last, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not call version function %s", flow->source_function);
	error_context_stack = callback.previous;
	restore_user(saved_uid, saved_sec);
	for (i = 0; i < SPI_processed; i++)
	{
		SnapVersion *sv = palloc(sizeof(SnapVersion));
		bool		relnull,
					vnull;
		Datum		rel = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &relnull);
		Datum		v = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &vnull);

		if (relnull || vnull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("version function %s of flow \"%s\" returned a null %s",
							flow->source_function, flow->name, relnull ? "snapshot" : "version"),
					 errhint("Return one row per snapshot with its relation and its version, or no rows when there is nothing new.")));
		sv->rel = DatumGetObjectId(rel);
		sv->version = datumCopy(v, typbyval, typlen);
		result = lappend(result, sv);
	}
	SPI_freetuptable(SPI_tuptable);
	return result;
}
