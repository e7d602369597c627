/*-------------------------------------------------------------------------
 *
 * catalog.c
 *		Flow definitions: create_flow (validation, target and hidden-state
 *		creation), drop_flow, skip/pause/resume, and reading flow rows.
 *
 * Everything create_flow checks is checked as the calling user; the catalog
 * rows themselves are written as the bootstrap superuser, because flow
 * owners have no privileges on autocdc's tables.  Catalog SQL always runs
 * with search_path = pg_catalog, pg_temp.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "parser/parse_type.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/regproc.h"
#include "utils/rls.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "autocdc.h"

PG_FUNCTION_INFO_V1(autocdc_create_flow);
PG_FUNCTION_INFO_V1(autocdc_drop_flow);
PG_FUNCTION_INFO_V1(autocdc_skip_events);
PG_FUNCTION_INFO_V1(autocdc_pause_flow);
PG_FUNCTION_INFO_V1(autocdc_resume_flow);

/* One column of a relation. */
typedef struct ColInfo
{
	char	   *name;
	Oid			typid;
	int32		typmod;
	Oid			collation;
	bool		generated;
} ColInfo;

/* ----------------------------------------------------------------
 * small helpers
 * ----------------------------------------------------------------
 */

/* Name of a target's hidden-state table (unqualified). */
char *
state_table_name(int target_id)
{
	return psprintf("target_%d", target_id);
}

/* The hidden-state table of a target, or InvalidOid when it is missing. */
Oid
catalog_state_relid(int target_id)
{
	return get_relname_relid(state_table_name(target_id),
							 get_namespace_oid(AUTOCDC_STATE_SCHEMA, false));
}

/* Parse one SQL identifier given as text ("userId" keeps case, userId folds). */
static char *
parse_identifier(const char *text, const char *what)
{
	List	   *names = name_list_or_nil(text);

	if (list_length(names) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid %s name \"%s\"", what, text),
				 errhint("Give a plain column name, double-quoted if it has upper-case letters.")));
	return strVal(linitial(names));
}

/* Parse a text[] of identifiers into a list of names; NULL array gives NIL. */
List *
parse_identifier_array(ArrayType *arr, const char *what)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n,
				i;
	List	   *result = NIL;

	if (arr == NULL)
		return NIL;
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s list must be a one-dimensional array", what),
				 errhint("Give the names as '{a, b}'.")));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (i = 0; i < n; i++)
	{
		char	   *name;
		ListCell   *lc;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s list must not contain null", what)));
		name = parse_identifier(TextDatumGetCString(elems[i]), what);
		foreach(lc, result)
			if (strcmp(lfirst(lc), name) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("column \"%s\" appears more than once in the %s list",
								name, what)));
		result = lappend(result, name);
	}
	return result;
}

/* Does a list of names contain name? */
static bool
name_in_list(List *names, const char *name)
{
	ListCell   *lc;

	foreach(lc, names)
		if (strcmp((char *) lfirst(lc), name) == 0)
			return true;
	return false;
}

/* Build a name[] datum from a list of C strings. */
static Datum
names_to_array(List *names)
{
	Datum	   *d = palloc(sizeof(Datum) * (list_length(names) + 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, names)
		d[i++] = DirectFunctionCall1(namein, CStringGetDatum(lfirst(lc)));
	return PointerGetDatum(construct_array(d, i, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR));
}

/* Read a name[] datum into a list of C strings. */
static List *
array_to_names(Datum arr)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n,
				i;
	List	   *result = NIL;

	deconstruct_array(DatumGetArrayTypeP(arr), NAMEOID, NAMEDATALEN, false,
					  TYPALIGN_CHAR, &elems, &nulls, &n);
	for (i = 0; i < n; i++)
		result = lappend(result, pstrdup(NameStr(*DatumGetName(elems[i]))));
	return result;
}

/* The user columns of a relation, in attribute order. */
static List *
relation_columns(Oid relid)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *result = NIL;
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		ColInfo    *c;

		if (att->attisdropped)
			continue;
		c = palloc(sizeof(ColInfo));
		c->name = pstrdup(NameStr(att->attname));
		c->typid = att->atttypid;
		c->typmod = att->atttypmod;
		c->collation = att->attcollation;
		c->generated = att->attgenerated != '\0';
		result = lappend(result, c);
	}
	relation_close(rel, AccessShareLock);
	return result;
}

/* The owner of a relation. */
static Oid
relation_owner(Oid relid)
{
	HeapTuple	tp = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			result;

	if (!HeapTupleIsValid(tp))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	result = ((Form_pg_class) GETSTRUCT(tp))->relowner;
	ReleaseSysCache(tp);
	return result;
}

/* Find a column by name. */
static ColInfo *
find_column(List *cols, const char *name)
{
	ListCell   *lc;

	foreach(lc, cols)
	{
		ColInfo    *c = lfirst(lc);

		if (strcmp(c->name, name) == 0)
			return c;
	}
	return NULL;
}

/* Column definition text "name type [COLLATE x]". */
static char *
column_definition(const char *name, Oid typid, int32 typmod, Oid collation)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "%s %s", quote_identifier(name),
					 format_type_with_typemod(typid, typmod));
	if (OidIsValid(collation) && collation != get_typcollation(typid))
		appendStringInfo(&buf, " COLLATE %s", generate_collation_name(collation));
	return buf.data;
}

/* Comma-separated quoted identifiers. */
static char *
quoted_list(List *names)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, names)
		appendStringInfo(&buf, "%s%s", buf.len ? ", " : "",
						 quote_identifier(lfirst(lc)));
	return buf.data;
}

/* ----------------------------------------------------------------
 * expression analysis
 * ----------------------------------------------------------------
 */

typedef struct ExprInfo
{
	char	   *normalized;		/* deparsed, non-catalog names qualified */
	Oid			typid;
	int32		typmod;
	Oid			collation;
	List	   *field_names;	/* for ROW(...): field names */
	List	   *field_types;	/* for ROW(...): Oids */
	List	   *field_typmods;
	List	   *field_colls;
} ExprInfo;

/*
 * Parse and analyze expr over the source relation with the caller's
 * search_path; deparse it with every non-catalog name schema-qualified.
 */
static ExprInfo *
analyze_expression(Oid source, const char *expr, const char *what)
{
	char	   *sql;
	List	   *raw;
	RawStmt    *rs;
	Query	   *volatile q = NULL;
	TargetEntry *te;
	Node	   *node;
	ExprInfo   *info = palloc0(sizeof(ExprInfo));
	List	   *dpctx;
	int			level;
	MemoryContext cxt = CurrentMemoryContext;
	char	   *srcname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(source)),
													 get_rel_name(source));

	/* the newlines keep a trailing comment in expr from eating the rest */
	sql = psprintf("SELECT (\n%s\n) FROM %s", expr, srcname);
	PG_TRY();
	{
		raw = raw_parser(sql, RAW_PARSE_DEFAULT);
		if (list_length(raw) == 1)
		{
			rs = linitial_node(RawStmt, raw);
			q = parse_analyze_fixedparams(rs, sql, NULL, 0, NULL);
		}
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		if (edata->sqlerrcode == ERRCODE_UNDEFINED_COLUMN)
		{
			/* Spark writes string literals in double quotes */
			char	   *col = NULL;
			char	   *quoted = NULL;

			if (sscanf(edata->message, "column \"%m[^\"]\" does not exist", &col) == 1)
				quoted = psprintf("\"%s\"", col);
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("%s expression \"%s\": %s in source \"%s\"", what, expr,
							edata->message, get_rel_name(source)),
					 quoted && strstr(expr, quoted) ?
					 errhint("String literals take single quotes in PostgreSQL: write '%s' instead of %s.",
							 col, quoted) : 0));
		}
		ereport(ERROR,
				(errcode(edata->sqlerrcode == ERRCODE_SYNTAX_ERROR ? ERRCODE_SYNTAX_ERROR :
						 edata->sqlerrcode),
				 errmsg("invalid %s expression \"%s\": %s", what, expr, edata->message)));
	}
	PG_END_TRY();
	if (q == NULL || !IsA(q, Query) || q->commandType != CMD_SELECT ||
		list_length(q->targetList) != 1 || q->hasAggs || q->hasWindowFuncs ||
		q->hasTargetSRFs || q->hasSubLinks || q->groupClause || q->havingQual ||
		q->sortClause || q->limitCount || q->limitOffset || q->distinctClause ||
		q->cteList || q->setOperations || q->jointree->quals != NULL ||
		list_length(q->rtable) != 1 || list_length(q->jointree->fromlist) != 1 ||
		linitial_node(RangeTblEntry, q->rtable)->rtekind != RTE_RELATION ||
		linitial_node(RangeTblEntry, q->rtable)->relid != source)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid %s expression \"%s\"", what, expr),
				 errhint("Use a scalar expression over the columns of the source, without aggregates, subqueries or set-returning functions.")));
	te = linitial_node(TargetEntry, q->targetList);
	node = (Node *) te->expr;
	info->typid = exprType(node);
	info->typmod = exprTypmod(node);
	info->collation = exprCollation(node);

	if (IsA(node, RowExpr))
	{
		RowExpr    *row = (RowExpr *) node;
		ListCell   *lc;
		int			i = 0;

		foreach(lc, row->args)
		{
			Node	   *arg = lfirst(lc);

			i++;
			if (IsA(arg, Var))
				info->field_names = lappend(info->field_names,
											get_attname(source, ((Var *) arg)->varattno, false));
			else
				info->field_names = lappend(info->field_names, psprintf("f%d", i));
			info->field_types = lappend_oid(info->field_types, exprType(arg));
			info->field_typmods = lappend_int(info->field_typmods, exprTypmod(arg));
			info->field_colls = lappend_oid(info->field_colls, exprCollation(arg));
		}
	}

	/* deparse with only pg_catalog visible, so other names get qualified */
	level = set_safe_search_path();
	dpctx = deparse_context_for(get_rel_name(source), source);
	info->normalized = deparse_expression(node, dpctx, false, false);
	AtEOXact_GUC(true, level);
	return info;
}

/* Has the type a default btree ordering? */
static bool
type_is_orderable(Oid typid)
{
	TypeCacheEntry *tc = lookup_type_cache(typid, TYPECACHE_CMP_PROC);

	return OidIsValid(tc->cmp_proc);
}

/* ----------------------------------------------------------------
 * create_flow
 * ----------------------------------------------------------------
 */

/* Strip stream(...) around a source; reject changes(...) for now. */
static char *
parse_source_text(const char *source, bool *is_changes)
{
	char	   *s = pstrdup(source);
	char	   *end;
	bool		again = true;

	*is_changes = false;
	while (again)
	{
		again = false;
		while (isspace((unsigned char) *s))
			s++;
		end = s + strlen(s);
		while (end > s && isspace((unsigned char) end[-1]))
			*--end = '\0';
		if (pg_strncasecmp(s, "stream", 6) == 0)
		{
			char	   *p = s + 6;

			while (isspace((unsigned char) *p))
				p++;
			if (*p == '(' && end[-1] == ')')
			{
				end[-1] = '\0';
				s = p + 1;
				again = true;
				continue;
			}
		}
		if (pg_strncasecmp(s, "changes", 7) == 0)
		{
			char	   *p = s + 7;

			while (isspace((unsigned char) *p))
				p++;
			if (*p == '(' && end[-1] == ')')
			{
				end[-1] = '\0';
				s = p + 1;
				*is_changes = true;
				again = true;
			}
		}
	}
	return s;
}

/* Resolve a relation name given as text; InvalidOid if missing. */
Oid
resolve_relation(const char *name, RangeVar **rv_out)
{
	List	   *names = name_list_or_nil(name);
	RangeVar   *rv;

	if (names == NIL || list_length(names) > 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid relation name \"%s\"", name)));
	rv = makeRangeVarFromNameList(names);
	if (rv_out)
		*rv_out = rv;
	return RangeVarGetRelid(rv, NoLock, true);
}

/*
 * Error if a relation lives in one of autocdc's schemas, or (with system)
 * is a system catalog or in a schema of PostgreSQL's: no flow writes those,
 * and a feed's inserts are decoded, which catalogs' are not.
 */
void
catalog_refuse_reserved(Oid relid, const char *name, const char *what, bool system)
{
	Oid			nsp = get_rel_namespace(relid);
	char	   *nspname = get_namespace_name(nsp);

	if ((system && (IsCatalogRelationOid(relid) || IsCatalogNamespace(nsp) ||
					IsToastNamespace(nsp) ||
					(nspname && strcmp(nspname, "information_schema") == 0))) ||
		(nspname && (strcmp(nspname, "autocdc") == 0 ||
					 strcmp(nspname, AUTOCDC_STATE_SCHEMA) == 0 ||
					 strcmp(nspname, AUTOCDC_INTERNAL_SCHEMA) == 0)))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("%s \"%s\" is a system or autocdc table", what, name),
				 errhint("Flows read and write tables of your own schemas.")));
}

/* Check a feed relation's kind and persistence. */
static void
check_source_relation(Oid relid, const char *name, bool once)
{
	char		relkind = get_rel_relkind(relid);
	char		persistence = get_rel_persistence(relid);

	if (once)
	{
		if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE &&
			relkind != RELKIND_VIEW && relkind != RELKIND_MATVIEW &&
			relkind != RELKIND_FOREIGN_TABLE)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("source \"%s\" is not a table or view", name)));
		return;
	}
	if (relkind == RELKIND_VIEW || relkind == RELKIND_MATVIEW ||
		relkind == RELKIND_FOREIGN_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("source \"%s\" is a %s, not a feed table", name,
						relkind == RELKIND_VIEW ? "view" :
						relkind == RELKIND_MATVIEW ? "materialized view" : "foreign table"),
				 errhint("Change flows read the inserts committed to an ordinary table; use a snapshot flow or once => true to read a %s.",
						 relkind == RELKIND_FOREIGN_TABLE ? "foreign table" : "view")));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("source \"%s\" is not a table", name)));
	if (persistence != RELPERSISTENCE_PERMANENT)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("source \"%s\" is %s", name,
						persistence == RELPERSISTENCE_TEMP ? "a temporary table" : "an unlogged table"),
				 errhint("Its inserts are not written to the WAL; use a logged table, a snapshot flow or once => true.")));
	if (relkind == RELKIND_PARTITIONED_TABLE)
	{
		ListCell   *lc;

		foreach(lc, find_all_inheritors(relid, NoLock, NULL))
		{
			Oid			leaf = lfirst_oid(lc);
			char		k = get_rel_relkind(leaf);

			if (k != RELKIND_PARTITIONED_TABLE &&
				(k != RELKIND_RELATION || get_rel_persistence(leaf) != RELPERSISTENCE_PERMANENT))
				ereport(ERROR,
						(errcode(ERRCODE_WRONG_OBJECT_TYPE),
						 errmsg("partition \"%s\" of source \"%s\" is not a logged table",
								get_rel_name(leaf), name),
						 errhint("Its inserts are not written to the WAL; make every partition a logged table.")));
		}
	}
}

/* The hidden state table of a target (one per target, owned by its owner). */
static void
create_state_table(int target_id, Oid target, List *datacols, Oid seqtype,
				   List *keys, Oid owner)
{
	StringInfoData sql;
	ListCell   *lc;
	char	   *tname = quote_qualified_identifier(AUTOCDC_STATE_SCHEMA,
												   state_table_name(target_id));
	Oid			saved_uid;
	int			saved_sec;

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (", tname);
	foreach(lc, datacols)
	{
		ColInfo    *c = lfirst(lc);

		appendStringInfo(&sql, "%s, ", column_definition(c->name, c->typid, c->typmod, c->collation));
	}
	appendStringInfo(&sql, "__autocdc_seq %s, __autocdc_lsn pg_catalog.pg_lsn NOT NULL, "
					 "__autocdc_ord pg_catalog.int8 NOT NULL, "
					 "__autocdc_kind pg_catalog.\"char\" NOT NULL, "
					 "__autocdc_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now())",
					 format_type_be_qualified(seqtype));
	become_superuser(&saved_uid, &saved_sec);
	spi_exec(sql.data, SPI_OK_UTILITY);
	resetStringInfo(&sql);
	appendStringInfo(&sql, "CREATE INDEX ON %s (%s)", tname, quoted_list(keys));
	spi_exec(sql.data, SPI_OK_UTILITY);
	resetStringInfo(&sql);
	appendStringInfo(&sql, "CREATE INDEX ON %s (__autocdc_at) WHERE __autocdc_kind OPERATOR(pg_catalog.<>) 'u'",
					 tname);
	spi_exec(sql.data, SPI_OK_UTILITY);
	resetStringInfo(&sql);
	appendStringInfo(&sql, "CREATE INDEX ON %s (__autocdc_seq) WHERE __autocdc_kind OPERATOR(pg_catalog.=) 't'",
					 tname);
	spi_exec(sql.data, SPI_OK_UTILITY);
	resetStringInfo(&sql);
	appendStringInfo(&sql, "ALTER TABLE %s OWNER TO %s", tname,
					 quote_identifier(GetUserNameFromId(owner, false)));
	spi_exec(sql.data, SPI_OK_UTILITY);
	restore_user(saved_uid, saved_sec);
}

/*
 * Insert a flow's catalog rows (the flow row by sql, whose $1 is the name,
 * and its flow_state row), as autocdc.  A flow of that name committed by a
 * concurrent transaction since the caller's check is reported as such, not
 * as a unique violation.
 */
void
catalog_insert_flow(const char *flowname, const char *sql, int nargs, Oid *types,
					Datum *args, const char *nulls)
{
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		if (SPI_execute_with_args(sql, nargs, types, args, nulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not insert flow row");
		if (SPI_execute_with_args("INSERT INTO autocdc.flow_state (name) VALUES ($1)",
								  1, types, args, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not insert flow state row");
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_UNIQUE_VIOLATION)
			PG_RE_THROW();
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("flow \"%s\" already exists", flowname),
				 errhint("Give the flow another name with name => '...', or drop the existing flow first.")));
	}
	PG_END_TRY();
}

/*
 * Run a zero-row query over the source as the caller: a permission error
 * says which privilege the flow owner lacks.
 */
static void
check_caller_reads(const char *sql, const char *srcname)
{
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		spi_exec(sql, SPI_OK_SELECT);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_INSUFFICIENT_PRIVILEGE)
			PG_RE_THROW();
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for source \"%s\"", srcname),
				 errdetail("%s", edata->message),
				 errhint("The flow owner needs SELECT on the source columns the flow selects and its expressions use.")));
	}
	PG_END_TRY();
}

/* Arguments of create_flow, read from fcinfo. */
typedef struct CreateArgs
{
	char	   *target;
	char	   *source;
	ArrayType  *keys;
	char	   *sequence_by;
	bool		ignore_nulls;
	char	   *deletes;
	char	   *truncates;
	ArrayType  *column_list;
	ArrayType  *except_column_list;
	char	   *scd;
	ArrayType  *track_list;
	ArrayType  *track_except_list;
	char	   *name;
	bool		once;
	char	   *system_sequence_by;
	bool		continuous;
	char	   *retention;		/* interval text */
} CreateArgs;

#define ARG_TEXT(n) (PG_ARGISNULL(n) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(n)))
#define ARG_ARRAY(n) (PG_ARGISNULL(n) ? NULL : PG_GETARG_ARRAYTYPE_P(n))

/* Does an existing target fit the flow? Error if not. */
static void
check_existing_target(Oid target, const char *tname, List *srccols, List *selected,
					  char scd, Oid seqtype)
{
	List	   *tcols = relation_columns(target);
	ListCell   *lc;

	foreach(lc, selected)
	{
		ColInfo    *s = find_column(srccols, lfirst(lc));
		ColInfo    *t = find_column(tcols, lfirst(lc));

		if (t == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("target \"%s\" has no column \"%s\"", tname, s->name),
					 errhint("Add the column to the target, or leave it out of the flow's column selection.")));
		if (t->typid != s->typid)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of target \"%s\" has type %s, but the source column has type %s",
							s->name, tname, format_type_be(t->typid), format_type_be(s->typid))));
	}
	if (scd == '2')
	{
		const char *scdcols[2] = {"__start_at", "__end_at"};
		int			i;

		for (i = 0; i < 2; i++)
		{
			ColInfo    *t = find_column(tcols, scdcols[i]);

			if (t == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
						 errmsg("target \"%s\" needs a column \"%s\" of type %s for SCD type 2",
								tname, scdcols[i], format_type_be(seqtype))));
			if (t->typid != seqtype)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("column \"%s\" of target \"%s\" has type %s, but the sequence has type %s",
								scdcols[i], tname, format_type_be(t->typid), format_type_be(seqtype))));
		}
	}
	else
	{
		if (find_column(tcols, "__start_at") || find_column(tcols, "__end_at"))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("target \"%s\" has SCD type 2 columns, but the flow is stored as SCD type 1",
							tname)));
	}
}

/*
 * autocdc.create_flow(...): validate a change flow, create its target and
 * hidden state when missing, and record it.
 */
Datum
autocdc_create_flow(PG_FUNCTION_ARGS)
{
	CreateArgs	a;
	bool		is_changes;
	char	   *srcname;
	Oid			source;
	RangeVar   *trv;
	Oid			target;
	char	   *tname;
	char	   *tschema;
	List	   *srccols,
			   *keys,
			   *collist,
			   *exceptlist,
			   *tracklist,
			   *trackexcept,
			   *selected = NIL,
			   *datacols = NIL,
			   *track = NIL;
	ListCell   *lc;
	ExprInfo   *seq,
			   *del = NULL,
			   *trunc = NULL;
	Oid			seqtype;
	char	   *seqtypname = NULL;
	char	   *flowname;
	int			target_id = 0;
	bool		target_known = false;
	Oid			saved_uid;
	int			saved_sec;
	int			level;
	StringInfoData sql;
	Oid			owner = GetUserId();
	MemoryContext callercxt = CurrentMemoryContext;
	MemoryContext old;
	text	   *result;
	char		scd;

	autocdc_require_current_catalog();
	run_refuse_while_applying("create a flow");
	memset(&a, 0, sizeof(a));
	{
		const char *argnames[3] = {"target", "source", "keys"};
		int			i;

		for (i = 0; i < 3; i++)
			if (PG_ARGISNULL(i))
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("%s of a flow must not be null", argnames[i])));
	}
	a.target = ARG_TEXT(0);
	a.source = ARG_TEXT(1);
	a.keys = ARG_ARRAY(2);
	a.sequence_by = ARG_TEXT(3);
	a.ignore_nulls = PG_ARGISNULL(4) ? false : PG_GETARG_BOOL(4);
	a.deletes = ARG_TEXT(5);
	a.truncates = ARG_TEXT(6);
	a.column_list = ARG_ARRAY(7);
	a.except_column_list = ARG_ARRAY(8);
	a.scd = PG_ARGISNULL(9) ? "1" : ARG_TEXT(9);
	a.track_list = ARG_ARRAY(10);
	a.track_except_list = ARG_ARRAY(11);
	a.name = ARG_TEXT(12);
	a.once = PG_ARGISNULL(13) ? false : PG_GETARG_BOOL(13);
	a.system_sequence_by = ARG_TEXT(14);
	a.continuous = PG_ARGISNULL(15) ? true : PG_GETARG_BOOL(15);
	a.retention = PG_ARGISNULL(16) ? NULL :
		DatumGetCString(DirectFunctionCall1(interval_out, PG_GETARG_DATUM(16)));
	if (!PG_ARGISNULL(16))
	{
		Interval   *zero = palloc0(sizeof(Interval));

		if (DatumGetInt32(DirectFunctionCall2(interval_cmp, PG_GETARG_DATUM(16),
											  IntervalPGetDatum(zero))) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("tombstone_retention must not be negative"),
					 errhint("Give how long delete markers are kept, e.g. '30 days', or NULL to keep them forever.")));
	}

	/* SCD type */
	if (pg_strcasecmp(a.scd, "1") == 0)
		scd = '1';
	else if (pg_strcasecmp(a.scd, "2") == 0)
		scd = '2';
	else if (pg_strcasecmp(a.scd, "bitemporal") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("bitemporal flows are not supported yet"),
				 errhint("Use stored_as_scd_type => '2'.")));
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown SCD type \"%s\"", a.scd),
				 errhint("Use '1', '2' or 'bitemporal'.")));
	if (a.system_sequence_by)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("system_sequence_by is only allowed for bitemporal flows")));

	/* source */
	srcname = parse_source_text(a.source, &is_changes);
	if (is_changes)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("changes() sources are not supported yet"),
				 errhint("Use an append-only feed table as the source.")));
	source = resolve_relation(srcname, NULL);
	if (!OidIsValid(source))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("source relation \"%s\" does not exist", srcname)));
	catalog_refuse_reserved(source, srcname, "source", !a.once);
	check_source_relation(source, srcname, a.once);
	if (check_enable_rls(source, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("source \"%s\" has row-level security enabled", srcname),
				 errhint("A flow must read every row of its source; its owner must bypass row-level security.")));
	srccols = relation_columns(source);

	/* keys and column selections */
	keys = parse_identifier_array(a.keys, "key");
	collist = parse_identifier_array(a.column_list, "column");
	exceptlist = parse_identifier_array(a.except_column_list, "column");
	tracklist = parse_identifier_array(a.track_list, "track history column");
	trackexcept = parse_identifier_array(a.track_except_list, "track history column");
	if (keys == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a flow needs at least one key column")));
	if (a.column_list && a.except_column_list)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("column_list and except_column_list cannot both be given")));
	if (a.track_list && a.track_except_list)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("track_history_column_list and track_history_except_column_list cannot both be given")));
	if ((a.track_list || a.track_except_list) && scd != '2')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("history tracking lists are only allowed for SCD type 2 flows"),
				 errhint("Add stored_as_scd_type => '2', or drop the tracking list.")));
	foreach(lc, list_concat(list_concat(list_copy(keys), collist), exceptlist))
		if (!find_column(srccols, lfirst(lc)))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" does not exist in source \"%s\"",
							(char *) lfirst(lc), srcname)));
	foreach(lc, srccols)
	{
		ColInfo    *c = lfirst(lc);

		if (a.column_list && !name_in_list(collist, c->name))
			continue;
		if (name_in_list(exceptlist, c->name))
			continue;
		if (strcmp(c->name, "__start_at") == 0 || strcmp(c->name, "__end_at") == 0 ||
			strncmp(c->name, "__autocdc_", 10) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("source column \"%s\" clashes with a column autocdc adds", c->name),
					 errhint("Leave it out with except_column_list.")));
		selected = lappend(selected, c->name);
		if (!name_in_list(keys, c->name))
			datacols = lappend(datacols, c->name);
	}
	foreach(lc, keys)
	{
		ColInfo    *c = find_column(srccols, lfirst(lc));

		if (!name_in_list(selected, c->name))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("key column \"%s\" is excluded by the column selection", c->name),
					 errhint("Key columns must be part of the target.")));
		if (!type_is_orderable(c->typid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("key column \"%s\" has type %s, which has no default btree ordering",
							c->name, format_type_be(c->typid))));
	}
	if (scd == '2')
	{
		foreach(lc, list_concat(list_copy(tracklist), trackexcept))
			if (!name_in_list(datacols, lfirst(lc)))
				ereport(ERROR,
						(errcode(find_column(srccols, lfirst(lc)) ? ERRCODE_INVALID_PARAMETER_VALUE :
								 ERRCODE_UNDEFINED_COLUMN),
						 errmsg("track history column \"%s\" is not a selected non-key column of source \"%s\"",
								(char *) lfirst(lc), srcname)));
		if (a.track_list || a.track_except_list)
			foreach(lc, datacols)
				if (a.track_list ? name_in_list(tracklist, lfirst(lc)) :
					!name_in_list(trackexcept, lfirst(lc)))
					track = lappend(track, lfirst(lc));
	}

	/* expressions, checked against the source with the caller's search_path */
	if (a.sequence_by == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sequence_by is required for a feed source")));
	seq = analyze_expression(source, a.sequence_by, "sequence");
	if (seq->field_names == NIL && !type_is_orderable(seq->typid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("sequence type %s has no default btree ordering", format_type_be(seq->typid)),
				 errhint("Sequence by a column of an orderable type, or by ROW(a, b) of such columns.")));
	foreach(lc, seq->field_types)
		if (!type_is_orderable(lfirst_oid(lc)))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("sequence field type %s has no default btree ordering",
							format_type_be(lfirst_oid(lc)))));
	if (a.deletes)
	{
		del = analyze_expression(source, a.deletes, "apply_as_deletes");
		if (del->typid != BOOLOID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("apply_as_deletes must be a boolean expression, not type %s",
							format_type_be(del->typid))));
	}
	if (a.truncates)
	{
		trunc = analyze_expression(source, a.truncates, "apply_as_truncates");
		if (trunc->typid != BOOLOID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("apply_as_truncates must be a boolean expression, not type %s",
							format_type_be(trunc->typid))));
	}

	/* the caller must be able to read what the flow reads */
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s, (%s)%s%s%s%s FROM %s LIMIT 0",
					 quoted_list(selected), seq->normalized,
					 del ? ", " : "", del ? del->normalized : "",
					 trunc ? ", " : "", trunc ? trunc->normalized : "",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(source)),
												get_rel_name(source)));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	check_caller_reads(sql.data, srcname);

	/* target */
	target = resolve_relation(a.target, &trv);
	if (trv->schemaname == NULL)
	{
		Oid			nsp = RangeVarGetCreationNamespace(trv);

		trv->schemaname = get_namespace_name(nsp);
	}
	tschema = trv->schemaname;
	tname = trv->relname;
	if (OidIsValid(target))
		catalog_refuse_reserved(target, a.target, "target", true);
	else
	{
		Oid			nsp = get_namespace_oid(tschema, true);

		if (OidIsValid(nsp) && (IsCatalogNamespace(nsp) || IsToastNamespace(nsp) ||
								strcmp(tschema, "information_schema") == 0 ||
								strcmp(tschema, "autocdc") == 0 ||
								strcmp(tschema, AUTOCDC_STATE_SCHEMA) == 0 ||
								strcmp(tschema, AUTOCDC_INTERNAL_SCHEMA) == 0))
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("target \"%s\" would be created in system or autocdc schema \"%s\"",
							a.target, tschema),
					 errhint("Flows read and write tables of your own schemas.")));
	}
	if (OidIsValid(target) && target == source)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target \"%s\" is the flow's source", a.target)));
	flowname = a.name ? a.name : tname;

	level = set_safe_search_path();

	/* duplicate flow name */
	{
		Datum		arg = CStringGetTextDatum(flowname);
		Oid			argtype = TEXTOID;

		become_superuser(&saved_uid, &saved_sec);
		SPI_execute_with_args("SELECT 1 FROM autocdc.flow WHERE name OPERATOR(pg_catalog.=) $1",
							  1, &argtype, &arg, NULL, true, 1);
		restore_user(saved_uid, saved_sec);
		if (SPI_processed > 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("flow \"%s\" already exists", flowname),
					 errhint("Give the flow another name with name => '...', or drop the existing flow first.")));
	}

	/* ROW(...) sequences get a composite type <target>_seq */
	seqtype = seq->typid;
	if (seq->field_names != NIL)
	{
		char	   *typname = psprintf("%s_seq", tname);
		Oid			existing = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
											   CStringGetDatum(typname),
											   ObjectIdGetDatum(get_namespace_oid(tschema, false)));

		seqtypname = typname;
		if (!OidIsValid(existing))
		{
			ListCell   *lt,
					   *lm,
					   *lcoll;

			resetStringInfo(&sql);
			appendStringInfo(&sql, "CREATE TYPE %s AS (",
							 quote_qualified_identifier(tschema, typname));
			forfour(lc, seq->field_names, lt, seq->field_types, lm, seq->field_typmods,
					lcoll, seq->field_colls)
				appendStringInfo(&sql, "%s%s", lc == list_head(seq->field_names) ? "" : ", ",
								 column_definition(lfirst(lc), lfirst_oid(lt), lfirst_int(lm),
												   lfirst_oid(lcoll)));
			appendStringInfoString(&sql, ")");
			spi_exec(sql.data, SPI_OK_UTILITY);
			CommandCounterIncrement();
			existing = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
									   CStringGetDatum(typname),
									   ObjectIdGetDatum(get_namespace_oid(tschema, false)));
		}
		seqtype = existing;
		seq->normalized = psprintf("(%s)::%s", seq->normalized,
								   format_type_be_qualified(seqtype));
	}

	/* existing target: known to autocdc, or a user table to validate */
	if (OidIsValid(target))
	{
		Datum		arg = ObjectIdGetDatum(target);
		Oid			argtype = OIDOID;

		if (!pg_class_ownercheck(target, owner))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("must be owner of target \"%s\"", a.target)));
		if (get_rel_relkind(target) != RELKIND_RELATION)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("target \"%s\" is not an ordinary table", a.target)));
		become_superuser(&saved_uid, &saved_sec);
		SPI_execute_with_args("SELECT id, scd_type, keys, seq_type::pg_catalog.oid FROM autocdc.target "
							  "WHERE relid OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
							  1, &argtype, &arg, NULL, true, 1);
		restore_user(saved_uid, saved_sec);
		if (SPI_processed > 0)
		{
			bool		isnull;
			HeapTuple	tup = SPI_tuptable->vals[0];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			char	   *tscd = TextDatumGetCString(SPI_getbinval(tup, desc, 2, &isnull));
			List	   *tkeys = array_to_names(SPI_getbinval(tup, desc, 3, &isnull));
			Oid			tseq = DatumGetObjectId(SPI_getbinval(tup, desc, 4, &isnull));
			bool		same_keys = list_length(tkeys) == list_length(keys);

			target_id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
			target_known = true;
			snapshot_check_target_free(target_id, a.target);
			foreach(lc, keys)
				same_keys = same_keys && name_in_list(tkeys, lfirst(lc));
			if (tscd[0] != scd || !same_keys || tseq != seqtype)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("flow \"%s\" does not agree with the other flows into target \"%s\"",
								flowname, a.target),
						 errhint("Flows into one target must use the same keys, SCD type and sequence type.")));
		}
		check_existing_target(target, a.target, srccols, selected, scd, seqtype);
	}
	else
	{
		/* create the target in the calling transaction, as the caller */
		resetStringInfo(&sql);
		appendStringInfo(&sql, "CREATE TABLE %s (", quote_qualified_identifier(tschema, tname));
		foreach(lc, selected)
		{
			ColInfo    *c = find_column(srccols, lfirst(lc));

			appendStringInfo(&sql, "%s, ", column_definition(c->name, c->typid, c->typmod, c->collation));
		}
		if (scd == '2')
			appendStringInfo(&sql, "__start_at %s, __end_at %s, PRIMARY KEY (%s, __start_at))",
							 format_type_be_qualified(seqtype), format_type_be_qualified(seqtype),
							 quoted_list(keys));
		else
			appendStringInfo(&sql, "PRIMARY KEY (%s))", quoted_list(keys));
		spi_exec(sql.data, SPI_OK_UTILITY);
		if (scd == '2')
		{
			resetStringInfo(&sql);
			appendStringInfo(&sql, "CREATE UNIQUE INDEX ON %s (%s) WHERE __end_at IS NULL",
							 quote_qualified_identifier(tschema, tname), quoted_list(keys));
			spi_exec(sql.data, SPI_OK_UTILITY);
		}
		CommandCounterIncrement();
		target = RangeVarGetRelid(trv, NoLock, false);
	}

	/* catalog rows, and the hidden state of a new target */
	become_superuser(&saved_uid, &saved_sec);
	if (!target_known)
	{
		List	   *tcols = relation_columns(target);
		List	   *statecols = NIL;
		List	   *tcolnames = NIL;
		Datum		args[6];
		Oid			types[6] = {OIDOID, TEXTOID, NAMEARRAYOID, OIDOID, NAMEOID, NAMEARRAYOID};
		char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};

		foreach(lc, tcols)
		{
			ColInfo    *c = lfirst(lc);

			if (strcmp(c->name, "__start_at") == 0 || strcmp(c->name, "__end_at") == 0)
				continue;
			statecols = lappend(statecols, c);
			tcolnames = lappend(tcolnames, c->name);
		}
		args[0] = ObjectIdGetDatum(target);
		args[1] = CStringGetTextDatum(scd == '2' ? "2" : "1");
		args[2] = names_to_array(keys);
		args[3] = ObjectIdGetDatum(seqtype);
		if (seqtypname)
			args[4] = DirectFunctionCall1(namein, CStringGetDatum(seqtypname));
		else
			nulls[4] = 'n';
		args[5] = names_to_array(tcolnames);
		if (SPI_execute_with_args("INSERT INTO autocdc.target (relid, scd_type, keys, seq_type, seq_typname, columns) "
								  "VALUES ($1::pg_catalog.regclass, $2, $3, $4::pg_catalog.regtype, $5, $6) RETURNING id",
								  6, types, args, nulls, false, 1) != SPI_OK_INSERT_RETURNING)
			elog(ERROR, "could not insert target row");
		{
			bool		isnull;

			target_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		}
		restore_user(saved_uid, saved_sec);
		create_state_table(target_id, target, statecols, seqtype, keys,
						   relation_owner(target));
		become_superuser(&saved_uid, &saved_sec);
	}
	{
		Datum		args[20];
		Oid			types[20] = {TEXTOID, OIDOID, OIDOID, TEXTOID, INT4OID, NAMEARRAYOID, TEXTOID,
			BOOLOID, TEXTOID, TEXTOID, NAMEARRAYOID, TEXTARRAYOID, TEXTARRAYOID, TEXTOID,
		NAMEARRAYOID, TEXTARRAYOID, TEXTARRAYOID, BOOLOID, BOOLOID, TEXTOID};
		char		nulls[20];

		memset(nulls, ' ', sizeof(nulls));
		args[0] = CStringGetTextDatum(flowname);
		args[1] = ObjectIdGetDatum(owner);
		args[2] = ObjectIdGetDatum(source);
		args[3] = CStringGetTextDatum(a.source);
		args[4] = Int32GetDatum(target_id);
		args[5] = names_to_array(keys);
		args[6] = CStringGetTextDatum(seq->normalized);
		args[7] = BoolGetDatum(a.ignore_nulls);
		if (del)
			args[8] = CStringGetTextDatum(del->normalized);
		else
			nulls[8] = 'n';
		if (trunc)
			args[9] = CStringGetTextDatum(trunc->normalized);
		else
			nulls[9] = 'n';
		args[10] = names_to_array(selected);
		if (a.column_list)
			args[11] = PointerGetDatum(a.column_list);
		else
			nulls[11] = 'n';
		if (a.except_column_list)
			args[12] = PointerGetDatum(a.except_column_list);
		else
			nulls[12] = 'n';
		args[13] = CStringGetTextDatum(scd == '2' ? "2" : "1");
		if (track)
			args[14] = names_to_array(track);
		else
			nulls[14] = 'n';
		if (a.track_list)
			args[15] = PointerGetDatum(a.track_list);
		else
			nulls[15] = 'n';
		if (a.track_except_list)
			args[16] = PointerGetDatum(a.track_except_list);
		else
			nulls[16] = 'n';
		args[17] = BoolGetDatum(a.once);
		args[18] = BoolGetDatum(a.continuous);
		if (a.retention)
			args[19] = CStringGetTextDatum(a.retention);
		else
			nulls[19] = 'n';
		catalog_insert_flow(flowname,
							"INSERT INTO autocdc.flow (name, owner, source, source_text, target_id, keys, "
							"sequence_by, ignore_null_updates, apply_as_deletes, apply_as_truncates, columns, "
							"column_list, except_column_list, scd_type, track_columns, track_history_column_list, "
							"track_history_except_column_list, once, continuous, tombstone_retention) "
							"VALUES ($1, $2::pg_catalog.regrole, $3::pg_catalog.regclass, $4, $5, $6, $7, $8, $9, $10, "
							"$11, $12, $13, $14, $15, $16, $17, $18, $19, $20::pg_catalog.interval)",
							20, types, args, nulls);
	}
	restore_user(saved_uid, saved_sec);
	AtEOXact_GUC(true, level);
	/* the name may live in SPI's memory, which SPI_finish frees */
	old = MemoryContextSwitchTo(callercxt);
	result = cstring_to_text(flowname);
	MemoryContextSwitchTo(old);
	SPI_finish();
	PG_RETURN_TEXT_P(result);
}

/* ----------------------------------------------------------------
 * reading flows
 * ----------------------------------------------------------------
 */

/*
 * Load a flow by name (SPI must be connected; runs as superuser).  With lock,
 * its flow_state row is locked FOR UPDATE: that is the lock that keeps two
 * appliers off one flow.
 */
FlowDef *
catalog_load_flow(const char *name, bool lock, bool missing_ok)
{
	Datum		arg = CStringGetTextDatum(name);
	Oid			argtype = TEXTOID;
	Oid			saved_uid;
	int			saved_sec;
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	FlowDef    *f;
	Datum		d;
	MemoryContext old;
	char	   *sql = psprintf(
							   "SELECT f.name, f.owner::pg_catalog.oid, f.kind, f.source::pg_catalog.oid, f.source_text, "
							   "f.target_id, t.relid::pg_catalog.oid, f.scd_type, f.keys, f.sequence_by, "
							   "f.apply_as_deletes, f.apply_as_truncates, f.ignore_null_updates, f.columns, "
							   "f.track_columns, f.once, t.seq_type::pg_catalog.oid, "
							   "(SELECT CASE WHEN pg_catalog.bool_and(g.tombstone_retention IS NOT NULL) "
							   "  THEN pg_catalog.max(g.tombstone_retention)::pg_catalog.text END "
							   "  FROM autocdc.flow g WHERE g.target_id OPERATOR(pg_catalog.=) f.target_id), "
							   "s.progress, s.once_done, s.skip_upto, f.paused, f.column_list, f.except_column_list, s.slot_name, "
							   "f.source_function, f.snapshot_target, f.snapshot_version, s.last_run_at, f.id "
							   "FROM autocdc.flow f LEFT JOIN autocdc.target t ON t.id OPERATOR(pg_catalog.=) f.target_id "
							   "JOIN autocdc.flow_state s ON s.name OPERATOR(pg_catalog.=) f.name "
							   "WHERE f.name OPERATOR(pg_catalog.=) $1 %s",
							   lock ? "FOR UPDATE OF s" : "");

	become_superuser(&saved_uid, &saved_sec);
	if (SPI_execute_with_args(sql, 1, &argtype, &arg, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read flow");
	restore_user(saved_uid, saved_sec);
	if (SPI_processed == 0)
	{
		if (missing_ok)
			return NULL;
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("flow \"%s\" does not exist", name)));
	}
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	old = MemoryContextSwitchTo(CurrentMemoryContext);
	f = palloc0(sizeof(FlowDef));
	f->name = TextDatumGetCString(SPI_getbinval(tup, desc, 1, &isnull));
	f->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
	f->kind = TextDatumGetCString(SPI_getbinval(tup, desc, 3, &isnull))[0];
	f->source = DatumGetObjectId(SPI_getbinval(tup, desc, 4, &isnull));
	f->source_text = TextDatumGetCString(SPI_getbinval(tup, desc, 5, &isnull));
	f->target_id = DatumGetInt32(SPI_getbinval(tup, desc, 6, &isnull));
	f->target = DatumGetObjectId(SPI_getbinval(tup, desc, 7, &isnull));
	f->scd = TextDatumGetCString(SPI_getbinval(tup, desc, 8, &isnull))[0];
	f->keys = array_to_names(SPI_getbinval(tup, desc, 9, &isnull));
	f->sequence_by = TextDatumGetCString(SPI_getbinval(tup, desc, 10, &isnull));
	d = SPI_getbinval(tup, desc, 11, &isnull);
	f->deletes = isnull ? NULL : TextDatumGetCString(d);
	d = SPI_getbinval(tup, desc, 12, &isnull);
	f->truncates = isnull ? NULL : TextDatumGetCString(d);
	f->ignore_nulls = DatumGetBool(SPI_getbinval(tup, desc, 13, &isnull));
	f->columns = array_to_names(SPI_getbinval(tup, desc, 14, &isnull));
	d = SPI_getbinval(tup, desc, 15, &isnull);
	f->track = isnull ? NIL : array_to_names(d);
	f->once = DatumGetBool(SPI_getbinval(tup, desc, 16, &isnull));
	f->seq_type = DatumGetObjectId(SPI_getbinval(tup, desc, 17, &isnull));
	d = SPI_getbinval(tup, desc, 18, &isnull);
	f->retention = isnull ? NULL : TextDatumGetCString(d);
	d = SPI_getbinval(tup, desc, 19, &isnull);
	f->has_progress = !isnull;
	f->progress = isnull ? InvalidXLogRecPtr : DatumGetLSN(d);
	f->once_done = DatumGetBool(SPI_getbinval(tup, desc, 20, &isnull));
	d = SPI_getbinval(tup, desc, 21, &isnull);
	f->skip_upto = isnull ? InvalidXLogRecPtr : DatumGetLSN(d);
	f->paused = DatumGetBool(SPI_getbinval(tup, desc, 22, &isnull));
	d = SPI_getbinval(tup, desc, 23, &isnull);
	f->has_include = !isnull;
	f->col_include = isnull ? NIL : parse_identifier_array(DatumGetArrayTypeP(d), "column");
	d = SPI_getbinval(tup, desc, 24, &isnull);
	f->col_except = isnull ? NIL : parse_identifier_array(DatumGetArrayTypeP(d), "column");
	d = SPI_getbinval(tup, desc, 25, &isnull);
	f->slot_name = isnull ? NULL : TextDatumGetCString(d);
	d = SPI_getbinval(tup, desc, 26, &isnull);
	f->source_function = isnull ? NULL : TextDatumGetCString(d);
	d = SPI_getbinval(tup, desc, 27, &isnull);
	f->snapshot_target = isnull ? NULL : TextDatumGetCString(d);
	d = SPI_getbinval(tup, desc, 28, &isnull);
	f->snapshot_version = isnull ? NULL : TextDatumGetCString(d);
	d = SPI_getbinval(tup, desc, 29, &isnull);
	f->last_run_at = isnull ? 0 : DatumGetTimestampTz(d);
	f->id = DatumGetInt32(SPI_getbinval(tup, desc, 30, &isnull));
	MemoryContextSwitchTo(old);
	return f;
}

/* Names of the flows writing a target, in name order. */
List *
catalog_target_flows(int target_id)
{
	Datum		arg = Int32GetDatum(target_id);
	Oid			argtype = INT4OID;
	Oid			saved_uid;
	int			saved_sec;
	List	   *result = NIL;
	uint64		i;
	MemoryContext old;

	become_superuser(&saved_uid, &saved_sec);
	if (SPI_execute_with_args("SELECT name FROM autocdc.flow WHERE target_id OPERATOR(pg_catalog.=) $1 ORDER BY name",
							  1, &argtype, &arg, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read flows");
	restore_user(saved_uid, saved_sec);
	old = MemoryContextSwitchTo(CurrentMemoryContext);
	for (i = 0; i < SPI_processed; i++)
		result = lappend(result, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
	MemoryContextSwitchTo(old);
	return result;
}

/*
 * What a run checks of a change flow's source, because nothing may be
 * skipped or misread silently: it is still a logged table in every leaf
 * (an unlogged one writes no WAL for its inserts, so decoding never sees
 * them); row-level security does not apply to the owner (decoded rows are
 * not filtered by policies); and the flow's expressions still have the types
 * the flow was created with (a retyped column would be cast silently).
 */
void
catalog_check_source(FlowDef *flow)
{
	char	   *srcname = get_rel_name(flow->source);
	List	   *leaves;
	ListCell   *lc;
	ExprInfo   *e;
	const char *seqtext = flow->sequence_by;
	char	   *rowcast = NULL;

	if (srcname == NULL)
		elog(ERROR, "source of flow \"%s\" is missing", flow->name);
	if (!flow->once)
	{
		leaves = get_rel_relkind(flow->source) == RELKIND_PARTITIONED_TABLE ?
			find_all_inheritors(flow->source, NoLock, NULL) : list_make1_oid(flow->source);
		foreach(lc, leaves)
		{
			Oid			leaf = lfirst_oid(lc);
			char		relkind = get_rel_relkind(leaf);

			if (relkind == RELKIND_PARTITIONED_TABLE)
				continue;
			if (relkind != RELKIND_RELATION || get_rel_persistence(leaf) != RELPERSISTENCE_PERMANENT)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("flow \"%s\": %s \"%s\" of its source is not a logged table",
								flow->name, leaf == flow->source ? "table" : "partition",
								get_rel_name(leaf)),
						 errdetail("Inserts into unlogged or foreign tables are not written to the WAL, so the flow cannot see them."),
						 errhint("Make it a logged table (ALTER TABLE ... SET LOGGED), then run SELECT autocdc.full_refresh(%s) to read what it holds.",
								 quote_literal_cstr(flow->name))));
		}
	}
	if (check_enable_rls(flow->source, flow->owner, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("flow \"%s\": source \"%s\" has row-level security enabled for the flow's owner",
						flow->name, srcname),
				 errdetail("A flow reads every row of its source; row-level security cannot apply to it."),
				 errhint("Disable row-level security on the source, or let the owner bypass it (BYPASSRLS).")));

	/* a ROW sequence is stored cast to its composite type: check the row */
	if (type_is_rowtype(flow->seq_type))
	{
		char	   *suffix = psprintf(")::%s", format_type_be_qualified(flow->seq_type));
		size_t		len = strlen(seqtext),
					slen = strlen(suffix);

		if (len > slen + 1 && seqtext[0] == '(' && strcmp(seqtext + len - slen, suffix) == 0)
			rowcast = pnstrdup(seqtext + 1, len - slen - 1);
	}
	e = analyze_expression(flow->source, rowcast ? rowcast : seqtext, "sequence");
	if (rowcast)
	{
		TupleDesc	desc = lookup_rowtype_tupdesc(flow->seq_type, -1);
		bool		same = list_length(e->field_types) == desc->natts;
		int			i = 0;

		foreach(lc, e->field_types)
		{
			if (same && TupleDescAttr(desc, i)->atttypid != lfirst_oid(lc))
				same = false;
			i++;
		}
		ReleaseTupleDesc(desc);
		if (!same)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("flow \"%s\": the fields of its sequence %s no longer have the types of %s",
							flow->name, rowcast, format_type_be(flow->seq_type)),
					 errdetail("A column the sequence reads was retyped; casting it would change the order of events."),
					 errhint("Change the column back, or drop the flow and create it again.")));
	}
	else if (e->typid != flow->seq_type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("flow \"%s\": its sequence %s now has type %s, not %s",
						flow->name, seqtext, format_type_be(e->typid), format_type_be(flow->seq_type)),
				 errdetail("A column the sequence reads was retyped; casting it back would change the order of events."),
				 errhint("Change the column back, or drop the flow and create it again.")));
	if (flow->deletes && analyze_expression(flow->source, flow->deletes, "apply_as_deletes")->typid != BOOLOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("flow \"%s\": apply_as_deletes is no longer a boolean expression", flow->name),
				 errhint("Change the column back, or drop the flow and create it again.")));
	if (flow->truncates && analyze_expression(flow->source, flow->truncates, "apply_as_truncates")->typid != BOOLOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("flow \"%s\": apply_as_truncates is no longer a boolean expression", flow->name),
				 errhint("Change the column back, or drop the flow and create it again.")));
}

/*
 * A run changes the target and the hidden state as the flow's owner, who
 * must therefore still exist and own both (a role with the privileges of
 * their owner counts, as for ALTER TABLE).  Error if not.
 */
void
catalog_check_flow_objects(FlowDef *flow)
{
	char	   *owner = GetUserNameFromId(flow->owner, true);
	Oid			state = catalog_state_relid(flow->target_id);
	Oid			rels[2] = {flow->target, state};
	int			i;

	if (owner == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the owner of flow \"%s\" (role %u) no longer exists", flow->name, flow->owner),
				 errhint("A superuser can drop the flow with SELECT autocdc.drop_flow(%s) and create it again.",
						 quote_literal_cstr(flow->name))));
	for (i = 0; i < 2; i++)
	{
		char	   *relname;

		if (!OidIsValid(rels[i]) || pg_class_ownercheck(rels[i], flow->owner))
			continue;
		relname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(rels[i])),
											 get_rel_name(rels[i]));
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("flow \"%s\": its owner %s does not own %s %s",
						flow->name, quote_identifier(owner),
						i == 0 ? "its target" : "the target's hidden state", relname),
				 errdetail("A flow writes and alters its target and hidden state as its owner."),
				 errhint("Give it back with ALTER TABLE %s OWNER TO %s, or drop the flow and create it again as the owner of the target.",
						 relname, quote_identifier(owner))));
	}
}

/*
 * Follow source schema changes (SPEC §4): a column added to a source whose
 * selection is "all" or "* except" is added to the target and the hidden
 * state; a captured column that was dropped, renamed or retyped fails the
 * run with a hint to full_refresh, which re-resolves the selection (and
 * retypes the emptied target's column).  The ALTER TABLE statements run as
 * the flow's owner under a security-restricted operation (they evaluate
 * defaults, domain constraints and index expressions of the owner's);
 * only the catalog update runs as autocdc.  SPI connected.
 */
void
catalog_sync_columns(FlowDef *flow, bool refresh)
{
	List	   *src = relation_columns(flow->source);
	List	   *tgt = relation_columns(flow->target);
	char	   *tname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(flow->target)),
												   get_rel_name(flow->target));
	char	   *sname = quote_qualified_identifier(AUTOCDC_STATE_SCHEMA,
												   state_table_name(flow->target_id));
	List	   *selection = NIL;
	bool		changed = false;
	ListCell   *lc;
	Oid			saved_uid;
	int			saved_sec;

	foreach(lc, src)
	{
		ColInfo    *c = lfirst(lc);

		if (flow->has_include && !name_in_list(flow->col_include, c->name))
			continue;
		if (name_in_list(flow->col_except, c->name))
			continue;
		if (strcmp(c->name, "__start_at") == 0 || strcmp(c->name, "__end_at") == 0 ||
			strncmp(c->name, "__autocdc_", 10) == 0)
			continue;
		selection = lappend(selection, c->name);
	}

	catalog_check_flow_objects(flow);
	become_owner(flow->owner, &saved_uid, &saved_sec);
	foreach(lc, flow->columns)
	{
		char	   *name = lfirst(lc);
		ColInfo    *s = find_column(src, name);
		ColInfo    *t = find_column(tgt, name);

		if (s == NULL && (!refresh || name_in_list(flow->keys, name) || flow->has_include))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("flow \"%s\": column \"%s\" of source \"%s\" no longer exists",
							flow->name, name, get_rel_name(flow->source)),
					 refresh || name_in_list(flow->keys, name) || flow->has_include ?
					 errhint("Drop the flow and create it again with the source's new columns.") :
					 errhint("Run SELECT autocdc.full_refresh(%s) to re-read the source with its new columns.",
							 quote_literal_cstr(flow->name))));
		if (s != NULL && t != NULL && s->typid != t->typid)
		{
			if (!refresh)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("flow \"%s\": column \"%s\" of source \"%s\" changed type from %s to %s",
								flow->name, name, get_rel_name(flow->source),
								format_type_be(t->typid), format_type_be(s->typid)),
						 errhint("Run SELECT autocdc.full_refresh(%s) to re-read the source.", quote_literal_cstr(flow->name))));
			spi_exec(psprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s USING NULL",
							  tname, quote_identifier(name),
							  format_type_with_typemod(s->typid, s->typmod)), SPI_OK_UTILITY);
			spi_exec(psprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s USING NULL",
							  sname, quote_identifier(name),
							  format_type_with_typemod(s->typid, s->typmod)), SPI_OK_UTILITY);
			changed = true;
		}
	}
	foreach(lc, selection)
	{
		char	   *name = lfirst(lc);
		ColInfo    *s = find_column(src, name);

		if (name_in_list(flow->columns, name))
			continue;
		changed = true;
		if (find_column(tgt, name) == NULL)
			spi_exec(psprintf("ALTER TABLE %s ADD COLUMN %s", tname,
							  column_definition(name, s->typid, s->typmod, s->collation)),
					 SPI_OK_UTILITY);
		if (find_column(relation_columns(catalog_state_relid(flow->target_id)), name) == NULL)
			spi_exec(psprintf("ALTER TABLE %s ADD COLUMN %s", sname,
							  column_definition(name, s->typid, s->typmod, s->collation)),
					 SPI_OK_UTILITY);
	}
	restore_user(saved_uid, saved_sec);
	if (changed || list_length(selection) != list_length(flow->columns))
	{
		Datum		args[2];
		Oid			types[2] = {TEXTOID, NAMEARRAYOID};

		args[0] = CStringGetTextDatum(flow->name);
		args[1] = names_to_array(selection);
		become_superuser(&saved_uid, &saved_sec);
		if (SPI_execute_with_args("UPDATE autocdc.flow SET columns = $2 WHERE name OPERATOR(pg_catalog.=) $1",
								  2, types, args, NULL, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not update flow columns");
		restore_user(saved_uid, saved_sec);
		flow->columns = selection;
		CommandCounterIncrement();
	}
}

/* Running, refreshing, skipping, pausing and dropping need ownership. */
void
catalog_check_flow_owner(FlowDef *flow)
{
	if (!has_privs_of_role(GetUserId(), flow->owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of flow \"%s\"", flow->name)));
}

/* Record a run's progress and totals, and (with log) log it in flow_runs. */
void
catalog_save_progress(FlowDef *flow, RunMetrics *m, TimestampTz started, bool log)
{
	Datum		args[12];
	Oid			types[12] = {TEXTOID, LSNOID, BOOLOID, INT8OID, INT8OID, INT8OID, INT8OID,
	TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID, INT4OID, LSNOID};
	char		nulls[12];
	Oid			saved_uid;
	int			saved_sec;

	memset(nulls, ' ', sizeof(nulls));
	args[0] = CStringGetTextDatum(flow->name);
	if (flow->has_progress)
		args[1] = LSNGetDatum(flow->progress);
	else
		nulls[1] = 'n';
	args[2] = BoolGetDatum(flow->once_done);
	args[3] = Int64GetDatum(m->num_events);
	args[4] = Int64GetDatum(m->num_upserted);
	args[5] = Int64GetDatum(m->num_deleted);
	args[6] = Int64GetDatum(m->num_skipped);
	args[7] = TimestampTzGetDatum(started);
	if (m->last_commit_time)
		args[8] = TimestampTzGetDatum(m->last_commit_time);
	else
		nulls[8] = 'n';
	if (flow->slot_name)
		args[9] = CStringGetTextDatum(flow->slot_name);
	else
		nulls[9] = 'n';
	args[10] = Int32GetDatum(flow->id);
	if (XLogRecPtrIsInvalid(flow->skip_upto))
		nulls[11] = 'n';
	else
		args[11] = LSNGetDatum(flow->skip_upto);
	become_superuser(&saved_uid, &saved_sec);
	if (SPI_execute_with_args("UPDATE autocdc.flow_state SET progress = $2, once_done = $3, "
							  "num_events = num_events OPERATOR(pg_catalog.+) $4, "
							  "num_upserted_rows = num_upserted_rows OPERATOR(pg_catalog.+) $5, "
							  "num_deleted_rows = num_deleted_rows OPERATOR(pg_catalog.+) $6, "
							  "num_skipped_events = num_skipped_events OPERATOR(pg_catalog.+) $7, "
							  "last_run_at = $8, last_error = NULL, last_error_at = NULL, retries = 0, retry_at = NULL, "
							  "last_commit_at = coalesce($9, last_commit_at), slot_name = $10, skip_upto = $12 "
							  "WHERE name OPERATOR(pg_catalog.=) $1",
							  12, types, args, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update flow state");
	if (log &&
		SPI_execute_with_args("INSERT INTO autocdc.flow_run_log (flow, flow_id, started_at, finished_at, num_events, "
							  "num_upserted_rows, num_deleted_rows, num_skipped_events, status) "
							  "VALUES ($1, $11, $8, pg_catalog.clock_timestamp(), $4, $5, $6, $7, 'ok')",
							  11, types, args, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not log run");
	restore_user(saved_uid, saved_sec);
}

/* ----------------------------------------------------------------
 * drop, skip, pause
 * ----------------------------------------------------------------
 */

/* Error out on a NULL argument of the flow functions. */
static void
require_args(FunctionCallInfo fcinfo, int n, const char *const *names)
{
	int			i;

	for (i = 0; i < n; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not be null", names[i])));
}

/*
 * Drop a loaded flow (its catalog rows, and the hidden state once no flow
 * writes the target; with drop_target the target and every flow into it).
 * The caller has checked the right to do so.  SPI connected, search_path
 * pinned.
 */
void
catalog_drop_flow(FlowDef *flow, bool drop_target)
{
	List	   *others;
	Oid			saved_uid;
	int			saved_sec;
	Datum		arg;
	Oid			argtype = TEXTOID;

	become_superuser(&saved_uid, &saved_sec);
	arg = CStringGetTextDatum(flow->name);
	if (SPI_execute_with_args("DELETE FROM autocdc.flow WHERE name OPERATOR(pg_catalog.=) $1",
							  1, &argtype, &arg, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not delete flow \"%s\"", flow->name);
	restore_user(saved_uid, saved_sec);
	if (flow->target_id == 0)
		return;					/* a snapshot flow whose first run has not
								 * created its target */
	others = catalog_target_flows(flow->target_id);
	if (others == NIL || drop_target)
	{
		char	   *sql;
		char	   *seqtypname = NULL;
		char	   *tschema = get_namespace_name(get_rel_namespace(flow->target));

		become_superuser(&saved_uid, &saved_sec);
		arg = Int32GetDatum(flow->target_id);
		argtype = INT4OID;
		if (others != NIL)
			SPI_execute_with_args("DELETE FROM autocdc.flow WHERE target_id OPERATOR(pg_catalog.=) $1",
								  1, &argtype, &arg, NULL, false, 0);
		SPI_execute_with_args("DELETE FROM autocdc.target WHERE id OPERATOR(pg_catalog.=) $1 RETURNING seq_typname",
							  1, &argtype, &arg, NULL, false, 0);
		if (SPI_processed > 0)
			seqtypname = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		sql = psprintf("DROP TABLE IF EXISTS %s",
					   quote_qualified_identifier(AUTOCDC_STATE_SCHEMA, state_table_name(flow->target_id)));
		spi_exec(sql, SPI_OK_UTILITY);
		restore_user(saved_uid, saved_sec);
		if (drop_target)
		{
			sql = psprintf("DROP TABLE %s",
						   quote_qualified_identifier(tschema, get_rel_name(flow->target)));
			spi_exec(sql, SPI_OK_UTILITY);
			if (seqtypname)
			{
				sql = psprintf("DROP TYPE IF EXISTS %s",
							   quote_qualified_identifier(tschema, seqtypname));
				spi_exec(sql, SPI_OK_UTILITY);
			}
		}
	}
}

/* autocdc.drop_flow(name, drop_target) */
Datum
autocdc_drop_flow(PG_FUNCTION_ARGS)
{
	static const char *const argnames[] = {"flow name", "drop_target"};
	bool		drop_target;
	FlowDef    *flow;
	int			level;

	autocdc_require_current_catalog();
	run_refuse_while_applying("drop a flow");
	require_args(fcinfo, 2, argnames);
	drop_target = PG_GETARG_BOOL(1);
	SPI_connect();
	level = set_safe_search_path();
	flow = catalog_load_flow(text_to_cstring(PG_GETARG_TEXT_PP(0)), true, false);
	catalog_check_flow_owner(flow);
	if (flow->target_id != 0 && drop_target && !pg_class_ownercheck(flow->target, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of target \"%s\"", get_rel_name(flow->target))));
	catalog_drop_flow(flow, drop_target);
	AtEOXact_GUC(true, level);
	SPI_finish();
	PG_RETURN_VOID();
}

/* Set one column of a flow's rows after the ownership check. */
static void
update_flow(const char *name, const char *sql, Datum extra, Oid extratype)
{
	FlowDef    *flow;
	Oid			saved_uid;
	int			saved_sec;
	int			level;
	Datum		args[2];
	Oid			types[2] = {TEXTOID, extratype};

	autocdc_require_current_catalog();
	run_refuse_while_applying("change a flow");
	SPI_connect();
	level = set_safe_search_path();
	flow = catalog_load_flow(name, true, false);
	catalog_check_flow_owner(flow);
	/* skip_events (the caller passing an LSN) is for change flows */
	if (extratype == LSNOID && flow->kind == 's')
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("flow \"%s\" is a snapshot flow, which has no source events to skip", name),
				 errhint("A snapshot flow reads its whole source at each run; fix the snapshot instead.")));
	args[0] = CStringGetTextDatum(name);
	args[1] = extra;
	become_superuser(&saved_uid, &saved_sec);
	autocdc_persist_errors();
	if (SPI_execute_with_args(sql, OidIsValid(extratype) ? 2 : 1, types, args, NULL, false, 0) < 0)
		elog(ERROR, "could not update flow");
	restore_user(saved_uid, saved_sec);
	AtEOXact_GUC(true, level);
	SPI_finish();
}

/* autocdc.skip_events(name, upto): pass source transactions up to upto. */
Datum
autocdc_skip_events(PG_FUNCTION_ARGS)
{
	static const char *const argnames[] = {"flow name", "upto"};

	require_args(fcinfo, 2, argnames);
	if (PG_GETARG_LSN(1) > GetXLogInsertRecPtr())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot skip source transactions up to %X/%X: the WAL ends at %X/%X",
						LSN_FORMAT_ARGS(PG_GETARG_LSN(1)), LSN_FORMAT_ARGS(GetXLogInsertRecPtr())),
				 errdetail("Every transaction committed later would be skipped."),
				 errhint("Give the commit LSN that the flow's error names.")));
	update_flow(text_to_cstring(PG_GETARG_TEXT_PP(0)),
				"UPDATE autocdc.flow_state SET skip_upto = "
				"CASE WHEN skip_upto IS NULL OR skip_upto OPERATOR(pg_catalog.<) $2 THEN $2 ELSE skip_upto END, "
				"retry_at = NULL WHERE name OPERATOR(pg_catalog.=) $1",
				PG_GETARG_DATUM(1), LSNOID);
	PG_RETURN_VOID();
}

/* Pause or resume a flow (the background worker skips paused flows). */
static void
set_paused(FunctionCallInfo fcinfo, bool paused)
{
	static const char *const argnames[] = {"flow name"};

	require_args(fcinfo, 1, argnames);
	update_flow(text_to_cstring(PG_GETARG_TEXT_PP(0)),
				"WITH r AS (UPDATE autocdc.flow_state SET retry_at = NULL "
				"WHERE name OPERATOR(pg_catalog.=) $1 AND NOT $2) "
				"UPDATE autocdc.flow SET paused = $2 WHERE name OPERATOR(pg_catalog.=) $1",
				BoolGetDatum(paused), BOOLOID);
}

/* autocdc.pause_flow(name) */
Datum
autocdc_pause_flow(PG_FUNCTION_ARGS)
{
	set_paused(fcinfo, true);
	PG_RETURN_VOID();
}

/* autocdc.resume_flow(name) */
Datum
autocdc_resume_flow(PG_FUNCTION_ARGS)
{
	set_paused(fcinfo, false);
	PG_RETURN_VOID();
}
