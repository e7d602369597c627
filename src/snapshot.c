/*-------------------------------------------------------------------------
 *
 * snapshot.c
 *		Snapshot flows (SPEC §6): create_snapshot_flow, and the run that
 *		compares a new snapshot with the target's current rows and applies
 *		the differences through the apply engine (apply.c).
 *
 * A snapshot flow reads a table or view whole at each run (the version is
 * the run's transaction timestamp), or the relations a version function
 * f(last T) RETURNS TABLE(snapshot regclass, version T) names, one version
 * after another.  Each snapshot is compared with the target's current rows
 * (SCD 1: all rows; SCD 2: __end_at IS NULL) in one set-based query — a
 * FULL JOIN on the keys, IS DISTINCT FROM on the other columns — and only
 * the rows that differ become events: an upsert for a new or changed key, a
 * delete for a vanished one, all with sequence = version.  Those events go
 * through the same classification, fold and writes as a change flow's, so
 * SCD 1, SCD 2 and history tracking behave exactly as in SPEC §4.  The first
 * snapshot of a flow (and full_refresh) applies every row and rewrites every
 * key of the target.
 *
 * A snapshot flow is the only flow into its target: the comparison takes
 * the target's current rows to be the previous snapshot.  The last applied
 * version is kept as text in autocdc.flow.snapshot_version (catalog columns
 * hold no OIDs; the version function's signature is stored as text too).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/regproc.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "autocdc.h"

PG_FUNCTION_INFO_V1(autocdc_create_snapshot_flow);
PG_FUNCTION_INFO_V1(autocdc_snapshot_check);

/* Rows of the snapshot being applied, counted by autocdc_internal._snapshot_check. */
static int64 snapshot_rows = 0;

/* Is this backend comparing a snapshot (the only time the check may run)? */
static bool snapshot_comparing = false;

/* One (snapshot, version) row returned by a version function. */
typedef struct SnapVersion
{
	Oid			rel;
	Datum		version;
} SnapVersion;

/* ----------------------------------------------------------------
 * versions
 * ----------------------------------------------------------------
 */

/*
 * Text of a version, written in styles every session reads back the same
 * way (ISO dates with their offset, ISO 8601 intervals, exact floats).
 */
static char *
version_text(Oid vtype, Datum v)
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
static Datum
version_datum(Oid vtype, const char *text)
{
	Oid			inf;
	Oid			ioparam;

	getTypeInputInfo(vtype, &inf, &ioparam);
	return OidInputFunctionCall(inf, (char *) text, ioparam, -1);
}

/* Compare two versions with the type's default btree order. */
static int
version_compare(Oid vtype, Datum x, Datum y)
{
	TypeCacheEntry *tc = lookup_type_cache(vtype, TYPECACHE_CMP_PROC_FINFO);

	return DatumGetInt32(FunctionCall2Coll(&tc->cmp_proc_finfo,
										   get_typcollation(vtype), x, y));
}

/* Record the last applied version of a flow (in the run's transaction). */
static void
save_version(FlowDef *flow, const char *text)
{
	Datum		args[2];
	Oid			types[2] = {TEXTOID, TEXTOID};
	char		nulls[2] = {' ', ' '};
	Oid			saved_uid;
	int			saved_sec;

	args[0] = CStringGetTextDatum(flow->name);
	if (text)
		args[1] = CStringGetTextDatum(text);
	else
		nulls[1] = 'n';
	become_superuser(&saved_uid, &saved_sec);
	if (SPI_execute_with_args("UPDATE autocdc.flow SET snapshot_version = $2 "
							  "WHERE name OPERATOR(pg_catalog.=) $1",
							  2, types, args, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record the version of flow \"%s\"", flow->name);
	restore_user(saved_uid, saved_sec);
	flow->snapshot_version = text ? pstrdup(text) : NULL;
}

/* ----------------------------------------------------------------
 * the version function
 * ----------------------------------------------------------------
 */

/*
 * Check that fn is f(T) RETURNS TABLE(snapshot regclass, version T) with an
 * orderable T; return T.  what names the function in messages.
 */
static Oid
check_version_function(Oid fn, const char *what)
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
static Oid
lookup_signature(const char *signature)
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
static Oid
resolve_version_function(FlowDef *flow, Oid *vtype)
{
	Oid			fn = lookup_signature(flow->source_function);

	if (!OidIsValid(fn))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("version function %s of flow \"%s\" does not exist",
						flow->source_function, flow->name),
				 errhint("Create the function again, or drop the flow.")));
	*vtype = check_version_function(fn, flow->source_function);
	return fn;
}

/*
 * Call the version function with the last applied version (as the flow
 * owner) and return its rows in ascending version order.
 */
static List *
call_version_function(FlowDef *flow, Oid fn, Oid vtype, Datum last, bool lastnull)
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

	get_typlenbyval(vtype, &typlen, &typbyval);
	become_owner(flow->owner, &saved_uid, &saved_sec);
	if (SPI_execute_with_args(sql, 1, &vtype, &last, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not call version function %s", flow->source_function);
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

/* ----------------------------------------------------------------
 * creating a flow
 * ----------------------------------------------------------------
 */

/*
 * The first flow name a catalog query with one parameter returns (read as
 * autocdc, whoever asks), or NULL.
 */
static char *
first_flow_name(const char *sql, Oid argtype, Datum arg)
{
	Oid			saved_uid;
	int			saved_sec;

	become_superuser(&saved_uid, &saved_sec);
	if (SPI_execute_with_args(sql, 1, &argtype, &arg, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read flows");
	restore_user(saved_uid, saved_sec);
	return SPI_processed > 0 ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1) : NULL;
}

/*
 * A snapshot flow must be the only flow into its target, in both
 * directions: error if target_id is written by a snapshot flow (called by
 * create_flow for an existing target).
 */
void
snapshot_check_target_free(int target_id, const char *target)
{
	char	   *other = first_flow_name("SELECT name FROM autocdc.flow WHERE target_id OPERATOR(pg_catalog.=) $1 "
										"AND kind OPERATOR(pg_catalog.=) 'snapshot' LIMIT 1",
										INT4OID, Int32GetDatum(target_id));

	if (other != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target \"%s\" is written by snapshot flow \"%s\"", target, other),
				 errhint("A snapshot flow must be the only flow into its target; choose another target.")));
}

/* Error if an existing relation is already the target of any flow. */
static void
check_target_unused(Oid target, const char *name)
{
	char	   *other = first_flow_name("SELECT f.name FROM autocdc.flow f JOIN autocdc.target t "
										"ON t.id OPERATOR(pg_catalog.=) f.target_id "
										"WHERE t.relid OPERATOR(pg_catalog.=) $1::pg_catalog.regclass "
										"ORDER BY f.name LIMIT 1",
										OIDOID, ObjectIdGetDatum(target));

	if (other != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target \"%s\" is already written by flow \"%s\"", name, other),
				 errhint("A snapshot flow compares each snapshot with its target, so it must be the only flow into that target; choose another target.")));
}

/* A name[] datum from a list of names. */
static Datum
name_array(List *names)
{
	Datum	   *d = palloc(sizeof(Datum) * (list_length(names) + 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, names)
		d[i++] = DirectFunctionCall1(namein, CStringGetDatum(lfirst(lc)));
	return PointerGetDatum(construct_array(d, i, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR));
}

/* A text[] of quoted identifiers (what create_flow parses back). */
static Datum
quoted_text_array(List *names)
{
	Datum	   *d = palloc(sizeof(Datum) * (list_length(names) + 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, names)
		d[i++] = CStringGetTextDatum(quote_identifier(lfirst(lc)));
	return PointerGetDatum(construct_array(d, i, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * Create a flow through autocdc.create_flow, which validates keys, columns
 * and tracking lists and creates the target and its hidden state: a `once`
 * flow with the given sequence expression, which the caller then turns into
 * (or merges with) a snapshot flow.  Runs as the current user.
 */
static char *
create_through_create_flow(Datum target, Datum source, Datum keys, const char *sequence_by,
						   Datum scd, Datum track, bool tracknull, Datum track_except,
						   bool track_exceptnull, Datum name, bool namenull, bool continuous)
{
	Datum		args[9];
	Oid			types[9] = {TEXTOID, TEXTOID, TEXTARRAYOID, TEXTOID, TEXTOID, TEXTARRAYOID,
	TEXTARRAYOID, TEXTOID, BOOLOID};
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	bool		isnull;

	args[0] = target;
	args[1] = source;
	args[2] = keys;
	args[3] = CStringGetTextDatum(sequence_by);
	args[4] = scd;
	args[5] = track;
	nulls[5] = tracknull ? 'n' : ' ';
	args[6] = track_except;
	nulls[6] = track_exceptnull ? 'n' : ' ';
	args[7] = name;
	nulls[7] = namenull ? 'n' : ' ';
	args[8] = BoolGetDatum(continuous);
	if (SPI_execute_with_args("SELECT autocdc.create_flow(target => $1, source => $2, keys => $3, "
							  "sequence_by => $4, stored_as_scd_type => $5, "
							  "track_history_column_list => $6, track_history_except_column_list => $7, "
							  "name => $8, once => true, continuous => $9)",
							  9, types, args, nulls, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not create flow");
	return TextDatumGetCString(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * autocdc.create_snapshot_flow(target, source, keys, stored_as_scd_type,
 * track_history_column_list, track_history_except_column_list, name,
 * continuous, source_function): record a snapshot flow.  With a table or
 * view source the target is created now; with a version function the first
 * run that gets a snapshot creates it.
 */
Datum
autocdc_create_snapshot_flow(PG_FUNCTION_ARGS)
{
	char	   *scd;
	char	   *flowname = NULL;
	Oid			saved_uid;
	int			saved_sec;
	int			level;
	RangeVar   *trv;
	Oid			target;
	MemoryContext callercxt = CurrentMemoryContext;
	text	   *result;

	autocdc_require_current_catalog();
	run_refuse_while_applying("create a flow");
	if (PG_ARGISNULL(0) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s of a snapshot flow must not be null", PG_ARGISNULL(0) ? "target" : "keys")));
	if (PG_ARGISNULL(1) == PG_ARGISNULL(8))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a snapshot flow needs exactly one of source and source_function"),
				 errhint("Give a table or view as source => '...', or a version function as source_function => 'f(bigint)'.")));
	scd = PG_ARGISNULL(3) ? "1" : text_to_cstring(PG_GETARG_TEXT_PP(3));
	if (pg_strcasecmp(scd, "bitemporal") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("bitemporal snapshot flows are not supported"),
				 errhint("Use stored_as_scd_type => '1' or '2'.")));
	if (strcmp(scd, "1") != 0 && strcmp(scd, "2") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown SCD type \"%s\"", scd),
				 errhint("Use '1' or '2'.")));
	if (!PG_ARGISNULL(4) && !PG_ARGISNULL(5))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("track_history_column_list and track_history_except_column_list cannot both be given"),
				 errhint("Give either the columns whose changes open a new version or the columns whose changes do not.")));
	if (ArrayGetNItems(ARR_NDIM(PG_GETARG_ARRAYTYPE_P(2)), ARR_DIMS(PG_GETARG_ARRAYTYPE_P(2))) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a flow needs at least one key column"),
				 errhint("Give the columns that identify a row of the snapshots, e.g. keys => '{id}'.")));
	if ((!PG_ARGISNULL(4) || !PG_ARGISNULL(5)) && scd[0] != '2')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("history tracking lists are only allowed for SCD type 2 flows"),
				 errhint("Add stored_as_scd_type => '2', or drop the tracking list.")));

	/* the target, resolved with the caller's search_path */
	{
		target = resolve_relation(text_to_cstring(PG_GETARG_TEXT_PP(0)), &trv);
		if (trv->schemaname == NULL)
			trv->schemaname = get_namespace_name(RangeVarGetCreationNamespace(trv));
	}

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (OidIsValid(target))
		check_target_unused(target, text_to_cstring(PG_GETARG_TEXT_PP(0)));

	if (!PG_ARGISNULL(1))
	{
		/* a table or view read whole at each run, versioned by the run's time */
		char	   *srctext = text_to_cstring(PG_GETARG_TEXT_PP(1));
		Oid			source = InvalidOid;
		List	   *snames = name_list_or_nil(srctext);

		if (snames != NIL && list_length(snames) <= 2)
			source = RangeVarGetRelid(makeRangeVarFromNameList(snames), NoLock, true);
		if (OidIsValid(source) && get_rel_persistence(source) == RELPERSISTENCE_TEMP)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("snapshot source \"%s\" is a temporary table", srctext),
					 errhint("The background worker cannot read another session's temporary tables; use an ordinary or unlogged table or a view.")));
		flowname = create_through_create_flow(PG_GETARG_DATUM(0), PG_GETARG_DATUM(1),
											  PG_GETARG_DATUM(2), "pg_catalog.transaction_timestamp()",
											  CStringGetTextDatum(scd),
											  PG_ARGISNULL(4) ? (Datum) 0 : PG_GETARG_DATUM(4), PG_ARGISNULL(4),
											  PG_ARGISNULL(5) ? (Datum) 0 : PG_GETARG_DATUM(5), PG_ARGISNULL(5),
											  PG_ARGISNULL(6) ? (Datum) 0 : PG_GETARG_DATUM(6), PG_ARGISNULL(6),
											  PG_ARGISNULL(7) ? true : PG_GETARG_BOOL(7));
		level = set_safe_search_path();
		{
			Datum		arg = CStringGetTextDatum(flowname);
			Oid			argtype = TEXTOID;

			become_superuser(&saved_uid, &saved_sec);
			if (SPI_execute_with_args("UPDATE autocdc.flow SET kind = 'snapshot', once = false "
									  "WHERE name OPERATOR(pg_catalog.=) $1",
									  1, &argtype, &arg, NULL, false, 0) != SPI_OK_UPDATE)
				elog(ERROR, "could not record snapshot flow");
			restore_user(saved_uid, saved_sec);
		}
	}
	else
	{
		/* a version function; the first snapshot it returns creates the target */
		char	   *sig = text_to_cstring(PG_GETARG_TEXT_PP(8));
		Oid			fn = lookup_signature(sig);
		List	   *keys = parse_identifier_array(PG_GETARG_ARRAYTYPE_P(2), "key");
		char	   *normalized;

		if (!OidIsValid(fn))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("version function %s does not exist", sig),
					 errhint("Give the function's name and argument type, e.g. source_function => 'next_snapshot(bigint)'.")));
		(void) check_version_function(fn, sig);
		if (pg_proc_aclcheck(fn, GetUserId(), ACL_EXECUTE) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for version function %s", sig),
					 errhint("The flow owner needs EXECUTE on the version function.")));
		(void) parse_identifier_array(PG_ARGISNULL(4) ? NULL : PG_GETARG_ARRAYTYPE_P(4), "track history column");
		(void) parse_identifier_array(PG_ARGISNULL(5) ? NULL : PG_GETARG_ARRAYTYPE_P(5), "track history column");
		if (OidIsValid(target))
		{
			if (get_rel_relkind(target) != RELKIND_RELATION)
				ereport(ERROR,
						(errcode(ERRCODE_WRONG_OBJECT_TYPE),
						 errmsg("target \"%s\" is not an ordinary table", trv->relname)));
			if (!pg_class_ownercheck(target, GetUserId()))
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("must be owner of target \"%s\"", trv->relname)));
		}
		else if (pg_namespace_aclcheck(get_namespace_oid(trv->schemaname, false), GetUserId(),
									   ACL_CREATE) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for schema %s", trv->schemaname),
					 errhint("The flow owner needs CREATE on the target's schema: its first run creates the target.")));
		flowname = PG_ARGISNULL(6) ? trv->relname : text_to_cstring(PG_GETARG_TEXT_PP(6));
		level = set_safe_search_path();
		normalized = format_procedure_qualified(fn);
		{
			Datum		args[11];
			Oid			types[11] = {TEXTOID, OIDOID, TEXTOID, NAMEARRAYOID, TEXTOID, TEXTARRAYOID,
			TEXTARRAYOID, BOOLOID, TEXTOID, TEXTOID, TEXTOID};
			char		nulls[11];

			memset(nulls, ' ', sizeof(nulls));
			args[0] = CStringGetTextDatum(flowname);
			args[1] = ObjectIdGetDatum(GetUserId());
			args[2] = CStringGetTextDatum(normalized);
			args[3] = name_array(keys);
			args[4] = CStringGetTextDatum(scd);
			args[5] = PG_ARGISNULL(4) ? (Datum) 0 : PG_GETARG_DATUM(4);
			nulls[5] = PG_ARGISNULL(4) ? 'n' : ' ';
			args[6] = PG_ARGISNULL(5) ? (Datum) 0 : PG_GETARG_DATUM(5);
			nulls[6] = PG_ARGISNULL(5) ? 'n' : ' ';
			args[7] = BoolGetDatum(PG_ARGISNULL(7) ? true : PG_GETARG_BOOL(7));
			args[8] = CStringGetTextDatum(normalized);
			args[9] = CStringGetTextDatum(quote_qualified_identifier(trv->schemaname, trv->relname));
			args[10] = CStringGetTextDatum("version");
			become_superuser(&saved_uid, &saved_sec);
			SPI_execute_with_args("SELECT 1 FROM autocdc.flow WHERE name OPERATOR(pg_catalog.=) $1",
								  1, types, args, NULL, true, 1);
			if (SPI_processed > 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_OBJECT),
						 errmsg("flow \"%s\" already exists", flowname),
						 errhint("Give the flow another name with name => '...', or drop the existing flow first.")));
			catalog_insert_flow(flowname,
								"INSERT INTO autocdc.flow (name, owner, kind, source, source_text, "
								"target_id, keys, sequence_by, columns, scd_type, "
								"track_history_column_list, track_history_except_column_list, "
								"continuous, source_function, snapshot_target) "
								"VALUES ($1, $2::pg_catalog.regrole, 'snapshot', NULL, $3, NULL, $4, $11, "
								"'{}', $5, $6, $7, $8, $9, $10)",
								11, types, args, nulls);
			restore_user(saved_uid, saved_sec);
		}
	}
	AtEOXact_GUC(true, level);
	{
		MemoryContext old = MemoryContextSwitchTo(callercxt);

		result = cstring_to_text(flowname);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	PG_RETURN_TEXT_P(result);
}

/*
 * First snapshot of a version-function flow: create its target and hidden
 * state with create_flow (as the owner: a temporary flow into the target,
 * whose target, columns and tracking the snapshot flow then takes over),
 * and reload the flow.
 */
static void
create_target_from(FlowDef *flow, Oid rel, Oid vtype)
{
	char	   *tmpname = psprintf("autocdc snapshot %s %d", flow->name, MyProcPid);
	Datum		args[2];
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		track = (Datum) 0,
				track_except = (Datum) 0;
	bool		tracknull,
				track_exceptnull;
	Oid			saved_uid;
	int			saved_sec;
	MemoryContext cxt = CurrentMemoryContext;
	FlowDef    *reloaded;

	args[0] = CStringGetTextDatum(flow->name);
	args[1] = CStringGetTextDatum(tmpname);
	become_superuser(&saved_uid, &saved_sec);
	if (SPI_execute_with_args("SELECT track_history_column_list, track_history_except_column_list "
							  "FROM autocdc.flow WHERE name OPERATOR(pg_catalog.=) $1",
							  1, types, args, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read flow \"%s\"", flow->name);
	restore_user(saved_uid, saved_sec);
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);
		Datum		d;

		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &tracknull);
		if (!tracknull)
			track = datumCopy(d, false, -1);
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &track_exceptnull);
		if (!track_exceptnull)
			track_except = datumCopy(d, false, -1);
		MemoryContextSwitchTo(old);
	}

	become_owner(flow->owner, &saved_uid, &saved_sec);
	run_internal_call(true);
	(void) create_through_create_flow(CStringGetTextDatum(flow->snapshot_target),
									  CStringGetTextDatum(quote_qualified_identifier(get_namespace_name(get_rel_namespace(rel)),
																					 get_rel_name(rel))),
									  quoted_text_array(flow->keys),
									  psprintf("NULL::%s", format_type_be_qualified(vtype)),
									  CStringGetTextDatum(flow->scd == '2' ? "2" : "1"),
									  track, tracknull, track_except, track_exceptnull,
									  args[1], false, false);
	run_internal_call(false);
	restore_user(saved_uid, saved_sec);

	become_superuser(&saved_uid, &saved_sec);
	if (SPI_execute_with_args("UPDATE autocdc.flow f SET target_id = t.target_id, columns = t.columns, "
							  "track_columns = t.track_columns, snapshot_target = NULL "
							  "FROM autocdc.flow t WHERE f.name OPERATOR(pg_catalog.=) $1 "
							  "AND t.name OPERATOR(pg_catalog.=) $2",
							  2, types, args, NULL, false, 0) != SPI_OK_UPDATE ||
		SPI_execute_with_args("DELETE FROM autocdc.flow WHERE name OPERATOR(pg_catalog.=) $1",
							  1, types + 1, args + 1, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not record the target of flow \"%s\"", flow->name);
	restore_user(saved_uid, saved_sec);
	CommandCounterIncrement();
	reloaded = catalog_load_flow(flow->name, true, false);
	*flow = *reloaded;
}

/* ----------------------------------------------------------------
 * comparing a snapshot with the target
 * ----------------------------------------------------------------
 */

/*
 * autocdc_internal._snapshot_check(flow, snapshot, nrows, duplicate key, null key):
 * evaluated once inside the comparison query, so that the check and the
 * comparison read the snapshot under one snapshot of the database.  Counts
 * the rows and refuses duplicate or null keys.
 */
Datum
autocdc_snapshot_check(PG_FUNCTION_ARGS)
{
	char	   *flow;
	char	   *snap;

	if (!snapshot_comparing || PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("autocdc_internal._snapshot_check() can only be called by autocdc while it compares a snapshot")));
	flow = text_to_cstring(PG_GETARG_TEXT_PP(0));
	snap = text_to_cstring(PG_GETARG_TEXT_PP(1));

	if (!PG_ARGISNULL(4) && PG_GETARG_BOOL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("snapshot \"%s\" of flow \"%s\" has a row with a null key", snap, flow),
				 errhint("Every row of a snapshot needs a complete key.")));
	if (!PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("snapshot \"%s\" of flow \"%s\" has more than one row for key %s",
						snap, flow, text_to_cstring(PG_GETARG_TEXT_PP(3))),
				 errhint("A snapshot must hold one row per key; remove the duplicates or choose keys that identify a row.")));
	snapshot_rows = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT64(2);
	PG_RETURN_BOOL(true);
}

/* Is name in a list of names? */
static bool
in_list(List *names, const char *name)
{
	ListCell   *lc;

	foreach(lc, names)
		if (strcmp(lfirst(lc), name) == 0)
			return true;
	return false;
}

/*
 * Can rel hold neither two rows with one key nor a NULL key?  True when
 * every key column is NOT NULL and a valid, immediate, non-partial unique
 * btree index covers a subset of the keys with their types' default
 * equality and collations; then the check only counts the rows.  Not for
 * tables with inheritance children (their rows are read too).
 */
static bool
keys_unique_in(Oid rel, List *keys)
{
	Relation	r;
	TupleDesc	desc;
	List	   *indexes;
	ListCell   *lc;
	bool		result = false;

	if (get_rel_relkind(rel) != RELKIND_RELATION || has_subclass(rel))
		return false;
	r = relation_open(rel, AccessShareLock);
	desc = RelationGetDescr(r);
	foreach(lc, keys)
	{
		AttrNumber	attno = get_attnum(rel, lfirst(lc));

		if (attno == InvalidAttrNumber || !TupleDescAttr(desc, attno - 1)->attnotnull)
		{
			relation_close(r, AccessShareLock);
			return false;
		}
	}
	indexes = RelationGetIndexList(r);
	foreach(lc, indexes)
	{
		Relation	ir = relation_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index ix = ir->rd_index;
		bool		ok = ix->indisunique && ix->indimmediate && ix->indisvalid &&
			ir->rd_rel->relam == BTREE_AM_OID &&
			heap_attisnull(ir->rd_indextuple, Anum_pg_index_indpred, NULL) &&
			heap_attisnull(ir->rd_indextuple, Anum_pg_index_indexprs, NULL);
		int			i;

		for (i = 0; ok && i < ix->indnkeyatts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, ix->indkey.values[i] - 1);
			Oid			opclass = GetDefaultOpClass(att->atttypid, BTREE_AM_OID);

			ok = in_list(keys, NameStr(att->attname)) &&
				ir->rd_indcollation[i] == att->attcollation &&
				OidIsValid(opclass) && ir->rd_opfamily[i] == get_opclass_family(opclass);
		}
		relation_close(ir, AccessShareLock);
		if (ok)
			result = true;
	}
	list_free(indexes);
	relation_close(r, AccessShareLock);
	return result;
}

/*
 * "x.a IS DISTINCT FROM y.a" for a column of type typid, with the type's
 * default equality wherever it lives, by text for a type without one.
 */
static char *
distinct_clause(const char *col, Oid typid)
{
	TypeCacheEntry *tc = lookup_type_cache(typid, TYPECACHE_EQ_OPR);
	Oid			nsp;
	HeapTuple	tp;

	if (!OidIsValid(tc->eq_opr))
		return psprintf("(s.%s::pg_catalog.text IS DISTINCT FROM t.%s::pg_catalog.text)", col, col);
	tp = SearchSysCache1(OPEROID, ObjectIdGetDatum(tc->eq_opr));
	if (!HeapTupleIsValid(tp))
		elog(ERROR, "cache lookup failed for operator %u", tc->eq_opr);
	nsp = ((Form_pg_operator) GETSTRUCT(tp))->oprnamespace;
	ReleaseSysCache(tp);
	if (nsp == PG_CATALOG_NAMESPACE)
		return psprintf("(s.%s IS DISTINCT FROM t.%s)", col, col);
	return psprintf("(CASE WHEN s.%s IS NULL OR t.%s IS NULL THEN (s.%s IS NULL) <> (t.%s IS NULL) "
					"ELSE NOT (s.%s OPERATOR(%s.=) t.%s) END)", col, col, col, col, col,
					quote_identifier(get_namespace_name(nsp)), col);
}

/*
 * The query returning the events of one snapshot in the shape the apply
 * engine classifies (data columns in hidden-state order, sequence, lsn, ord,
 * kind).  full: every snapshot row as an upsert; otherwise only the rows
 * that differ from the target's current rows, and a delete per vanished
 * key.  An InitPlan calls autocdc_internal._snapshot_check first.
 */
static char *
events_sql(FlowDef *flow, Oid rel, const char *vliteral, bool full)
{
	Oid			staterel = catalog_state_relid(flow->target_id);
	Relation	sr;
	TupleDesc	sdesc;
	StringInfoData sel,
				cols,
				keys,
				on,
				differ,
				sql;
	char	   *snapname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(rel)),
													  get_rel_name(rel));
	char	   *tname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(flow->target)),
												   get_rel_name(flow->target));
	char	   *check;
	int			i;
	ListCell   *lc;

	if (!OidIsValid(staterel))
		elog(ERROR, "hidden state of flow \"%s\" is missing", flow->name);
	initStringInfo(&sel);
	initStringInfo(&cols);
	initStringInfo(&keys);
	initStringInfo(&on);
	initStringInfo(&differ);
	sr = relation_open(staterel, AccessShareLock);
	sdesc = RelationGetDescr(sr);
	for (i = 0; i < sdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(sdesc, i);
		const char *name = NameStr(att->attname);
		const char *q = quote_identifier(name);

		if (att->attisdropped || strncmp(name, "__autocdc_", 10) == 0)
			continue;
		if (!in_list(flow->columns, name))
			appendStringInfo(&sel, "NULL::%s, ", format_type_be_qualified(att->atttypid));
		else if (in_list(flow->keys, name) && !full)
			appendStringInfo(&sel, "CASE WHEN s.__autocdc_p THEN s.%s ELSE t.%s END, ", q, q);
		else
			appendStringInfo(&sel, "s.%s, ", q);
		if (!in_list(flow->columns, name))
			continue;
		appendStringInfo(&cols, "%s%s", cols.len ? ", " : "", q);
		if (in_list(flow->keys, name))
		{
			appendStringInfo(&keys, "%s%s", keys.len ? ", " : "", q);
			appendStringInfo(&on, "%ss.%s %s t.%s", on.len ? " AND " : "", q,
							 equality_operator(att->atttypid), q);
		}
		else
			appendStringInfo(&differ, " OR %s", distinct_clause(q, att->atttypid));
	}
	relation_close(sr, AccessShareLock);

	/* the check: row count, and duplicate or null keys unless an index rules them out */
	if (keys_unique_in(rel, flow->keys))
		check = psprintf("(SELECT autocdc_internal._snapshot_check(%s, %s, pg_catalog.count(*), NULL, false) FROM %s)",
						 quote_literal_cstr(flow->name), quote_literal_cstr(get_rel_name(rel)), snapname);
	else
	{
		StringInfoData nullk,
					keyvals;

		initStringInfo(&nullk);
		initStringInfo(&keyvals);
		foreach(lc, flow->keys)
		{
			const char *q = quote_identifier(lfirst(lc));

			appendStringInfo(&nullk, "%sg.%s IS NULL", nullk.len ? " OR " : "", q);
			appendStringInfo(&keyvals, ", g.%s", q);
		}
		check = psprintf("(SELECT autocdc_internal._snapshot_check(%s, %s, pg_catalog.sum(g.__autocdc_n)::pg_catalog.int8, "
						 "pg_catalog.min(CASE WHEN g.__autocdc_n OPERATOR(pg_catalog.>) 1 "
						 "THEN pg_catalog.format('(%%s)=(%%s)', %s, pg_catalog.concat_ws(', '%s)) END), "
						 "pg_catalog.bool_or(%s)) "
						 "FROM (SELECT %s, pg_catalog.count(*) AS __autocdc_n FROM %s GROUP BY %s) g)",
						 quote_literal_cstr(flow->name), quote_literal_cstr(get_rel_name(rel)),
						 quote_literal_cstr(keys.data), keyvals.data, nullk.data,
						 keys.data, snapname, keys.data);
	}

	initStringInfo(&sql);
	if (full)
		appendStringInfo(&sql,
						 "SELECT %s%s, '0/0'::pg_catalog.pg_lsn, 0::pg_catalog.int8, 'u'::pg_catalog.\"char\" "
						 "FROM %s s WHERE %s",
						 sel.data, vliteral, snapname, check);
	else
		appendStringInfo(&sql,
						 "SELECT %s%s, '0/0'::pg_catalog.pg_lsn, 0::pg_catalog.int8, "
						 "(CASE WHEN s.__autocdc_p THEN 'u' ELSE 'd' END)::pg_catalog.\"char\" "
						 "FROM (SELECT %s, true AS __autocdc_p FROM %s) s "
						 "FULL JOIN (SELECT %s, true AS __autocdc_p FROM ONLY %s%s) t ON %s "
						 "WHERE %s AND (s.__autocdc_p IS NULL OR t.__autocdc_p IS NULL%s)",
						 sel.data, vliteral, cols.data, snapname, cols.data, tname,
						 flow->scd == '2' ? " WHERE __end_at IS NULL" : "",
						 on.data, check, differ.data);
	return sql.data;
}

/*
 * Apply one snapshot at a version: follow the snapshot's columns (a column
 * added to it is added to the target), compare, and apply the differences
 * as the owner.
 */
static void
apply_snapshot(FlowDef *flow, Oid rel, Oid vtype, Datum version, RunMetrics *m)
{
	bool		full = (flow->snapshot_version == NULL);
	char	   *vtext = version_text(vtype, version);
	char	   *sql;
	int64		before = m->num_events;
	Oid			saved_uid;
	int			saved_sec;

	if (check_enable_rls(rel, flow->owner, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("snapshot \"%s\" of flow \"%s\" has row-level security enabled",
						get_rel_name(rel), flow->name),
				 errhint("A flow must read every row of its snapshots; its owner must bypass row-level security.")));
	flow->source = rel;
	catalog_sync_columns(flow, full);
	sql = events_sql(flow, rel, psprintf("%s::%s", quote_literal_cstr(vtext),
										 format_type_be_qualified(vtype)), full);
	snapshot_rows = 0;
	become_owner(flow->owner, &saved_uid, &saved_sec);
	snapshot_comparing = true;
	PG_TRY();
	{
		run_hold_relations(flow, rel);
		apply_events(flow, m, sql, full);
		run_release_relations();
	}
	PG_FINALLY();
	{
		snapshot_comparing = false;
	}
	PG_END_TRY();
	restore_user(saved_uid, saved_sec);
	m->num_events = before + snapshot_rows;
	save_version(flow, vtext);
}

/* One run; returns the number of snapshots applied. */
static int
do_run(FlowDef *flow, RunMetrics *m)
{
	int			applied = 0;

	/*
	 * Read the flow again now that it is locked: the row the caller read
	 * may predate a run that committed while we waited for the lock (its
	 * last version, or the target its first snapshot created).
	 */
	*flow = *catalog_load_flow(flow->name, true, false);
	advertise_running(flow);	/* autocdc.flows shows 'running' */
	if (flow->source_function == NULL)
	{
		/* a table or view, versioned by the transaction's start time */
		Datum		now = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());

		if (flow->snapshot_version == NULL ||
			version_compare(TIMESTAMPTZOID, now,
							version_datum(TIMESTAMPTZOID, flow->snapshot_version)) > 0)
		{
			apply_snapshot(flow, flow->source, TIMESTAMPTZOID, now, m);
			applied++;
		}
	}
	else
	{
		Oid			vtype;
		Oid			fn = resolve_version_function(flow, &vtype);
		bool		lastnull = (flow->snapshot_version == NULL);
		Datum		last = lastnull ? (Datum) 0 : version_datum(vtype, flow->snapshot_version);

		for (;;)
		{
			List	   *rows;
			ListCell   *lc;

			CHECK_FOR_INTERRUPTS();
			rows = call_version_function(flow, fn, vtype, last, lastnull);
			if (rows == NIL)
				break;
			foreach(lc, rows)
			{
				SnapVersion *sv = lfirst(lc);

				if (!lastnull && version_compare(vtype, sv->version, last) <= 0)
					ereport(ERROR,
							(errcode(ERRCODE_DATA_EXCEPTION),
							 errmsg("version function %s of flow \"%s\" returned version %s, which is not greater than the last applied version %s",
									flow->source_function, flow->name,
									version_text(vtype, sv->version), version_text(vtype, last)),
							 errhint("Return only versions greater than the function's argument (each once), and no rows when there is nothing new.")));
				if (get_rel_name(sv->rel) == NULL)
					ereport(ERROR,
							(errcode(ERRCODE_UNDEFINED_TABLE),
							 errmsg("version function %s of flow \"%s\" returned a snapshot relation that does not exist",
									flow->source_function, flow->name),
							 errhint("Return only snapshots that exist, as regclass values.")));
				if (flow->target_id == 0)
					create_target_from(flow, sv->rel, vtype);
				apply_snapshot(flow, sv->rel, vtype, sv->version, m);
				applied++;
				last = sv->version;
				lastnull = false;
			}
		}
	}
	return applied;
}

/*
 * One run of a snapshot flow that is loaded and locked (the flow_state row),
 * with SPI connected and search_path pinned, as the caller: read the
 * snapshot(s) and apply them, then record the run.  The entry point for
 * run_flow and the background worker.
 */
void
snapshot_run(FlowDef *flow, RunMetrics *m)
{
	TimestampTz started = GetCurrentTimestamp();
	Oid			saved_uid;
	int			saved_sec;

	become_owner(flow->owner, &saved_uid, &saved_sec);
	(void) do_run(flow, m);
	catalog_save_progress(flow, m, started, true);
	restore_user(saved_uid, saved_sec);
}

/*
 * full_refresh of a snapshot flow: forget the hidden state and the last
 * version, and apply the snapshot(s) again from the start; the first one
 * rewrites every key of the target (so metrics compare rows by identity).
 * If there is no snapshot at all, the target is emptied.
 */
void
snapshot_refresh(FlowDef *flow, RunMetrics *m)
{
	TimestampTz started = GetCurrentTimestamp();
	Oid			saved_uid;
	int			saved_sec;
	Oid			run_uid;
	int			run_sec;

	become_owner(flow->owner, &run_uid, &run_sec);
	*flow = *catalog_load_flow(flow->name, true, false);	/* see do_run */
	if (flow->target_id != 0)
	{
		become_owner(flow->owner, &saved_uid, &saved_sec);
		spi_exec(psprintf("DELETE FROM %s",
						  quote_qualified_identifier(AUTOCDC_STATE_SCHEMA,
													 state_table_name(flow->target_id))),
				 SPI_OK_DELETE);
		restore_user(saved_uid, saved_sec);
	}
	save_version(flow, NULL);
	if (do_run(flow, m) == 0 && flow->target_id != 0)
	{
		become_owner(flow->owner, &saved_uid, &saved_sec);
		spi_exec(psprintf("DELETE FROM ONLY %s",
						  quote_qualified_identifier(get_namespace_name(get_rel_namespace(flow->target)),
													 get_rel_name(flow->target))),
				 SPI_OK_DELETE);
		m->num_deleted += SPI_processed;
		restore_user(saved_uid, saved_sec);
	}
	catalog_save_progress(flow, m, started, true);
	restore_user(run_uid, run_sec);
}
