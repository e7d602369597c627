/*-------------------------------------------------------------------------
 *
 * snapsource.c
 *		Where a snapshot flow's snapshots come from: a version function
 *		f(last T) RETURNS TABLE(snapshot regclass, version T), called as the
 *		flow's owner, or a snapshot query and its version query (see
 *		"Snapshot queries" below); and the versions, kept in the catalog as
 *		text written in styles every session reads back the same way.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/ruleutils.h"
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

/*
 * Snapshot queries.  A flow's snapshot query (and its version query) may
 * call last_snapshot_version() / current_snapshot_version(); at creation
 * each such call is replaced in the text by the parameter $1 - in FROM by
 * a one-row subquery (SELECT $1 AS col) alias - and the query is analyzed
 * with $1 of the version's type and stored deparsed, names qualified.  A
 * run passes the version as $1.
 */

/* The version functions' names (a call may be qualified with autocdc). */
#define LAST_VERSION "last_snapshot_version"
#define CURRENT_VERSION "current_snapshot_version"

/* One call replaced in a query's text: bytes [start, end) become text. */
typedef struct CallEdit
{
	int			start;
	int			end;
	char	   *text;
} CallEdit;

/* What find_version_calls looks for, and the edits it collects. */
typedef struct VersionCalls
{
	const char *sql;			/* the query's text */
	const char *allowed;		/* the function it may call, or NULL */
	const char *where;			/* the query, as messages name it */
	bool		numbered;		/* each call its own parameter ($1, $2...) */
	int			nparams;
	List	   *edits;
} VersionCalls;

/* Where each version function may be called, for messages. */
static const char *
version_function_place(const char *fname)
{
	return strcmp(fname, LAST_VERSION) == 0 ?
		"the version query of a snapshot flow (version_query, WITH VERSION)" :
		"the snapshot query of a snapshot flow with a version query (source_query, FROM SNAPSHOT)";
}

/* Error for a version function called where it is not allowed. */
static void
misplaced_version_call(const char *fname, const char *where)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s() cannot be used in %s", fname, where),
			 errhint("%s() can only be used in %s.", fname, version_function_place(fname))));
}

/* autocdc.last_snapshot_version() called anywhere autocdc does not replace it. */
PG_FUNCTION_INFO_V1(autocdc_last_snapshot_version);

Datum
autocdc_last_snapshot_version(PG_FUNCTION_ARGS)
{
	misplaced_version_call(LAST_VERSION, "this query");
	PG_RETURN_NULL();
}

/* autocdc.current_snapshot_version(), likewise. */
PG_FUNCTION_INFO_V1(autocdc_current_snapshot_version);

Datum
autocdc_current_snapshot_version(PG_FUNCTION_ARGS)
{
	misplaced_version_call(CURRENT_VERSION, "this query");
	PG_RETURN_NULL();
}

/* The version function a call names (NULL: another function). */
static const char *
version_call_name(FuncCall *fc)
{
	const char *name = strVal(llast(fc->funcname));

	if (list_length(fc->funcname) > 2 ||
		(list_length(fc->funcname) == 2 && strcmp(strVal(linitial(fc->funcname)), "autocdc") != 0))
		return NULL;
	if (strcmp(name, LAST_VERSION) == 0)
		return LAST_VERSION;
	if (strcmp(name, CURRENT_VERSION) == 0)
		return CURRENT_VERSION;
	return NULL;
}

/*
 * Check a version function's call and record its replacement: the bytes
 * from the call's name to its closing parenthesis become the parameter
 * between before and after.
 */
static void
add_call_edit(VersionCalls *vc, FuncCall *fc, const char *fname, const char *before,
			  const char *after)
{
	const char *open;
	const char *close;
	CallEdit   *e = palloc(sizeof(CallEdit));

	if (vc->allowed == NULL || strcmp(fname, vc->allowed) != 0)
		misplaced_version_call(fname, vc->where);
	if (fc->args != NIL || fc->agg_star || fc->agg_distinct || fc->over != NULL ||
		fc->agg_filter != NULL || fc->agg_order != NIL || fc->location < 0)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("%s() takes no arguments", fname),
				 errhint("Write %s() as a plain call, e.g. v > %s().", fname, fname)));
	open = strchr(vc->sql + fc->location, '(');
	close = open ? strchr(open, ')') : NULL;
	if (close == NULL)
		elog(ERROR, "could not find the call of %s()", fname);
	e->start = fc->location;
	e->end = close - vc->sql + 1;
	e->text = vc->numbered ? psprintf("%s$%d%s", before, ++vc->nparams, after) :
		psprintf("%s$1%s", before, after);
	vc->edits = lappend(vc->edits, e);
}

/*
 * Raw parse tree walker: find the calls of the version functions, as a
 * scalar ($1) or as a FROM item (a subquery returning $1 under the call's
 * alias and column name).
 */
static bool
find_version_calls(Node *node, VersionCalls *vc)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeFunction) && list_length(((RangeFunction *) node)->functions) == 1)
	{
		RangeFunction *rf = (RangeFunction *) node;
		List	   *pair = linitial(rf->functions);
		Node	   *fn = linitial(pair);
		const char *fname = IsA(fn, FuncCall) ? version_call_name((FuncCall *) fn) : NULL;

		if (fname != NULL)
		{
			const char *col = rf->alias ? rf->alias->aliasname : fname;

			if (rf->ordinality || rf->is_rowsfrom || lsecond(pair) != NULL ||
				(rf->alias && list_length(rf->alias->colnames) > 1))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("%s() in FROM returns one row of one column", fname),
						 errhint("Write it as FROM %s() v, or use it as a value.", fname)));
			if (rf->alias && rf->alias->colnames != NIL)
				add_call_edit(vc, (FuncCall *) fn, fname, "(SELECT ", ")");
			else
				add_call_edit(vc, (FuncCall *) fn, fname, "(SELECT ",
							  psprintf(" AS %s)%s", quote_identifier(col),
									   rf->alias ? "" : psprintf(" AS %s", quote_identifier(fname))));
			return false;
		}
	}
	else if (IsA(node, FuncCall) && version_call_name((FuncCall *) node) != NULL)
	{
		add_call_edit(vc, (FuncCall *) node, version_call_name((FuncCall *) node), "", "");
		return false;
	}
	return raw_expression_tree_walker(node, find_version_calls, (void *) vc);
}

/* Order edits by position. */
static int
edit_cmp(const ListCell *a, const ListCell *b)
{
	return ((CallEdit *) lfirst(a))->start - ((CallEdit *) lfirst(b))->start;
}

/*
 * The raw statement of a query that must be one plain SELECT; what names
 * it in messages.
 */
static RawStmt *
raw_select(const char *sql, const char *what)
{
	List	   *raw = raw_parser(sql, RAW_PARSE_DEFAULT);
	RawStmt    *rs = list_length(raw) == 1 ? linitial(raw) : NULL;

	if (rs == NULL || !IsA(rs->stmt, SelectStmt) || ((SelectStmt *) rs->stmt)->intoClause != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the %s must be one SELECT statement", what),
				 errhint("A snapshot flow only reads its queries: give one SELECT (or VALUES or TABLE), without INTO and without a final semicolon.")));
	return rs;
}

/*
 * A query's text with its version function calls replaced by $1 (allowed:
 * the one it may call, or NULL), or with numbered, by $1, $2... one per
 * call.
 */
static char *
replace_version_calls(const char *sql, const char *allowed, const char *what, bool numbered)
{
	VersionCalls vc;
	StringInfoData buf;
	ListCell   *lc;
	int			pos = 0;

	vc.sql = sql;
	vc.allowed = allowed;
	vc.where = psprintf("the %s", what);
	vc.numbered = numbered;
	vc.nparams = 0;
	vc.edits = NIL;
	(void) find_version_calls(raw_select(sql, what)->stmt, &vc);
	list_sort(vc.edits, edit_cmp);
	initStringInfo(&buf);
	foreach(lc, vc.edits)
	{
		CallEdit   *e = lfirst(lc);

		appendBinaryStringInfo(&buf, sql + pos, e->start - pos);
		appendStringInfoString(&buf, e->text);
		pos = e->end;
	}
	appendStringInfoString(&buf, sql + pos);
	return buf.data;
}

/* Query tree walker: does a query read a temporary relation? */
static bool
reads_temp_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		return rte->rtekind == RTE_RELATION &&
			get_rel_persistence(rte->relid) == RELPERSISTENCE_TEMP;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, reads_temp_walker, context,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, reads_temp_walker, context);
}

/*
 * Analyze a query (its calls replaced) with $1 of type ptype (none if
 * InvalidOid), or with $1's type inferred, check that it only reads, and
 * return it.
 */
static Query *
analyze_select(const char *sql, const char *what, Oid ptype, bool infer)
{
	RawStmt    *rs = raw_select(sql, what);
	Query	   *q;

	if (!infer)
		q = parse_analyze_fixedparams(rs, sql, &ptype, OidIsValid(ptype) ? 1 : 0, NULL);
	else
	{
		Oid		   *types = NULL;
		int			ntypes = 0;

		q = parse_analyze_varparams(rs, sql, &types, &ntypes, NULL);
	}
	if (q->commandType != CMD_SELECT || q->utilityStmt != NULL || q->hasModifyingCTE ||
		q->rowMarks != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the %s must only read", what),
				 errhint("A snapshot flow's queries run read-only: remove FOR UPDATE/SHARE and data-modifying WITH queries.")));
	if (reads_temp_walker((Node *) q, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("the %s reads a temporary table", what),
				 errhint("The background worker cannot read another session's temporary tables; read ordinary or unlogged tables or views.")));
	return q;
}

/* The stored form of an analyzed query: deparsed with every name qualified. */
static char *
stored_query(Query *q)
{
	int			level = NewGUCNestLevel();
	char	   *text;
	int			len;

	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	text = pg_get_querydef(q, false);
	AtEOXact_GUC(true, level);
	len = strlen(text);
	while (len > 0 && (text[len - 1] == ';' || isspace((unsigned char) text[len - 1])))
		text[--len] = '\0';
	return text;
}

/* Error unless vtype can be a version: orderable by a default btree class. */
static void
check_version_type(Oid vtype, const char *what)
{
	if (get_typtype(vtype) == TYPTYPE_PSEUDO || vtype == UNKNOWNOID ||
		!OidIsValid(lookup_type_cache(vtype, TYPECACHE_CMP_PROC)->cmp_proc))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("version type %s of %s is not supported", format_type_be(vtype), what),
				 errhint("Versions must have a type with a default btree ordering, such as bigint, timestamptz or date.")));
}

/*
 * Check a snapshot flow's queries (as the caller, with the caller's
 * search_path) and return their stored forms; *vtype is the type of the
 * version query's column (InvalidOid without a version query).
 */
void
snapsource_define_queries(const char *flowname, const char *source_query,
						  const char *version_query, char **stored_source,
						  char **stored_version, Oid *vtype)
{
	char	   *swhat = psprintf("snapshot query of flow \"%s\"", flowname);
	char	   *sql;
	Query	   *q;

	*vtype = InvalidOid;
	*stored_version = NULL;
	if (version_query != NULL)
	{
		char	   *vwhat = psprintf("version query of flow \"%s\"", flowname);
		ListCell   *lc;
		int			ncols = 0;

		/*
		 * The version's type is the column's: infer it with each call a
		 * parameter of its own (of whatever type its use implies, if any),
		 * then analyze the query with every call $1 of that type.
		 */
		q = analyze_select(replace_version_calls(version_query, LAST_VERSION, vwhat, true),
						   vwhat, InvalidOid, true);
		sql = replace_version_calls(version_query, LAST_VERSION, vwhat, false);
		foreach(lc, q->targetList)
		{
			TargetEntry *tle = lfirst(lc);

			if (!tle->resjunk && ncols++ == 0)
				*vtype = exprType((Node *) tle->expr);
		}
		if (ncols != 1)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("the %s returns %d columns", vwhat, ncols),
					 errhint("A version query returns one column, the version, e.g. SELECT v FROM versions WHERE last_snapshot_version() IS NULL OR v > last_snapshot_version() ORDER BY v LIMIT 1.")));
		check_version_type(*vtype, vwhat);
		*stored_version = stored_query(analyze_select(sql, vwhat, *vtype, false));
	}
	sql = replace_version_calls(source_query, version_query ? CURRENT_VERSION : NULL, swhat, false);
	*stored_source = stored_query(analyze_select(sql, swhat, *vtype, false));
}

/*
 * Run a stored query of a flow (as the current user, the flow's owner)
 * with the version as $1, in a read-only transaction state: a function it
 * calls cannot write either (temporary tables excepted).
 */
static void
run_read_only(FlowDef *flow, const char *sql, Datum v, bool vnull, int expect, long tcount)
{
	bool		saved = XactReadOnly;
	Oid			vtype = flow->version_type;
	char		nulls[1] = {vnull ? 'n' : ' '};

	XactReadOnly = true;
	PG_TRY();
	{
		if (SPI_execute_with_args(sql, OidIsValid(vtype) ? 1 : 0, &vtype, &v, nulls,
								  false, tcount) != expect)
			elog(ERROR, "could not run a query of flow \"%s\"", flow->name);
	}
	PG_FINALLY();
	{
		XactReadOnly = saved;
	}
	PG_END_TRY();
}

/* Error context of a flow's query: which one failed. */
static void
query_context(void *arg)
{
	errcontext("%s", (const char *) arg);
}

/*
 * Ask a flow's version query for the next version after last (lastnull:
 * none applied yet); false when it returns no row.
 */
bool
snapsource_query_version(FlowDef *flow, Datum last, bool lastnull, Datum *next)
{
	Oid			vtype = flow->version_type;
	ErrorContextCallback callback;
	bool		isnull;
	Datum		v;
	int16		typlen;
	bool		typbyval;

	callback.callback = query_context;
	callback.arg = psprintf("version query of flow \"%s\"", flow->name);
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	run_read_only(flow, flow->version_query, last, lastnull, SPI_OK_SELECT, 2);
	error_context_stack = callback.previous;
	/* a column retyped since the flow was created */
	if (SPI_tuptable->tupdesc->natts != 1 ||
		TupleDescAttr(SPI_tuptable->tupdesc, 0)->atttypid != vtype)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("version query of flow \"%s\" no longer returns one column of its version type %s",
						flow->name, format_type_be(vtype)),
				 errhint("Change the column back, or drop the flow and create it again.")));
	if (SPI_processed == 0)
		return false;
	if (SPI_processed > 1)
		ereport(ERROR,
				(errcode(ERRCODE_CARDINALITY_VIOLATION),
				 errmsg("version query of flow \"%s\" returned more than one row", flow->name),
				 errhint("Return the next version only, e.g. ... ORDER BY v LIMIT 1, or no row when there is nothing new.")));
	v = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("version query of flow \"%s\" returned a null version", flow->name),
				 errhint("Return no row when there is nothing new (an aggregate such as min() returns a NULL instead).")));
	if (!lastnull && snapsource_version_compare(vtype, v, last) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("version query of flow \"%s\" returned version %s, which is not greater than the last applied version %s",
						flow->name, snapsource_version_text(vtype, v), snapsource_version_text(vtype, last)),
				 errhint("Return only versions greater than last_snapshot_version(), and no row when there is nothing new.")));
	get_typlenbyval(vtype, &typlen, &typbyval);
	*next = datumCopy(v, typbyval, typlen);
	SPI_freetuptable(SPI_tuptable);
	return true;
}

/*
 * Read a flow's snapshot query at a version into a new temporary table,
 * named source_query (with_rows false: empty, for its shape); the caller
 * drops it.  It is created as the flow's owner, outside the run's
 * security-restricted operation (which may not create a session's first
 * temporary table) - creating it with no data runs none of the query -
 * and filled read-only inside it.
 */
Oid
snapsource_query_snapshot(FlowDef *flow, Datum version, bool with_rows)
{
	Oid			saved_uid;
	int			saved_sec;
	ErrorContextCallback callback;
	Oid			vtype = flow->version_type;
	char		nulls[1] = {' '};

	callback.callback = query_context;
	callback.arg = psprintf("snapshot query of flow \"%s\"", flow->name);
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	GetUserIdAndSecContext(&saved_uid, &saved_sec);
	SetUserIdAndSecContext(flow->owner, saved_sec & ~SECURITY_RESTRICTED_OPERATION);
	if (SPI_execute_with_args(psprintf("CREATE TEMPORARY TABLE pg_temp.source_query AS %s WITH NO DATA",
									   flow->source_query),
							  OidIsValid(vtype) ? 1 : 0, &vtype, &version, nulls, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not read the snapshot query of flow \"%s\"", flow->name);
	SetUserIdAndSecContext(saved_uid, saved_sec);
	if (with_rows)
		run_read_only(flow, psprintf("INSERT INTO pg_temp.source_query %s", flow->source_query),
					  version, false, SPI_OK_INSERT, 0);
	error_context_stack = callback.previous;
	return RangeVarGetRelid(makeRangeVar("pg_temp", "source_query", -1), NoLock, false);
}

/* Drop the temporary table of snapshot_query_snapshot. */
void
snapsource_query_done(void)
{
	if (SPI_execute("DROP TABLE pg_temp.source_query", false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not drop a snapshot query's table");
}
