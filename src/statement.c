/*-------------------------------------------------------------------------
 *
 * statement.c
 *		Entry points of the statement form: the trusted procedural language
 *		autocdc (DO LANGUAGE autocdc $$ ... $$) and autocdc.execute(text).
 *
 * Both parse the whole block first (parse.c), then run its statements in
 * order in the caller's transaction, as the calling user: CREATE FLOW maps
 * one-to-one onto autocdc.create_flow (which does every check), DROP FLOW
 * onto autocdc.drop_flow.  Functions in the language are refused: only DO
 * and autocdc.execute run statements.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/parsenodes.h"
#include "parser/parse_type.h"
#include "parser/parser.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"

#include "autocdc.h"
#include "parse.h"

PG_FUNCTION_INFO_V1(autocdc_call_handler);
PG_FUNCTION_INFO_V1(autocdc_inline_handler);
PG_FUNCTION_INFO_V1(autocdc_validator);
PG_FUNCTION_INFO_V1(autocdc_execute);

/* defined in catalog.c and snapshot.c */
extern Datum autocdc_create_flow(PG_FUNCTION_ARGS);
extern Datum autocdc_create_snapshot_flow(PG_FUNCTION_ARGS);
extern Datum autocdc_drop_flow(PG_FUNCTION_ARGS);

/* Error context: which statement of the block was running. */
typedef struct StmtContext
{
	int			number;
	const char *what;
} StmtContext;

/* Name the statement being run in error messages. */
static void
statement_error_context(void *arg)
{
	StmtContext *sc = arg;

	errcontext("autocdc statement %d (%s)", sc->number, sc->what);
}

/* A text[] of the given strings, or NULL. */
static Datum
text_array(List *items, bool *isnull)
{
	Datum	   *d;
	int			i = 0;
	ListCell   *lc;

	*isnull = (items == NIL);
	if (items == NIL)
		return (Datum) 0;
	d = palloc(sizeof(Datum) * list_length(items));
	foreach(lc, items)
		d[i++] = CStringGetTextDatum(lfirst(lc));
	return PointerGetDatum(construct_array(d, i, TEXTOID, -1, false, TYPALIGN_INT));
}

/* The value of a single identifier written in SQL ("Flow" keeps case). */
static char *
identifier_value(const char *text)
{
	List	   *names = stringToQualifiedNameList(text);

	if (list_length(names) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid flow name \"%s\"", text),
				 errhint("A flow name is a single identifier.")));
	return strVal(linitial(names));
}

/*
 * CREATE FLOW ... AS AUTO CDC INTO t FROM SNAPSHOT rel KEYS (...) [STORED AS
 * ...] [TRACK HISTORY ON ...]: autocdc.create_snapshot_flow with a table or
 * view source.
 */
static void
run_create_snapshot_flow(AutocdcStmt *s)
{
	LOCAL_FCINFO(fcinfo, 9);
	int			i;

	InitFunctionCallInfoData(*fcinfo, NULL, 9, InvalidOid, NULL, NULL);
	for (i = 0; i < 9; i++)
	{
		fcinfo->args[i].value = (Datum) 0;
		fcinfo->args[i].isnull = true;
	}
	fcinfo->args[0].value = CStringGetTextDatum(s->target);
	fcinfo->args[0].isnull = false;
	fcinfo->args[1].value = CStringGetTextDatum(s->source);
	fcinfo->args[1].isnull = false;
	fcinfo->args[2].value = text_array(s->keys, &fcinfo->args[2].isnull);
	fcinfo->args[3].value = CStringGetTextDatum(s->scd_type ? s->scd_type : "1");
	fcinfo->args[3].isnull = false;
	fcinfo->args[4].value = text_array(s->track_list, &fcinfo->args[4].isnull);
	fcinfo->args[5].value = text_array(s->track_except_list, &fcinfo->args[5].isnull);
	if (s->name)
	{
		fcinfo->args[6].value = CStringGetTextDatum(identifier_value(s->name));
		fcinfo->args[6].isnull = false;
	}
	fcinfo->args[7].value = BoolGetDatum(true);
	fcinfo->args[7].isnull = false;
	(void) autocdc_create_snapshot_flow(fcinfo);
}

/* CREATE FLOW ... AS AUTO CDC INTO ...: autocdc.create_flow with the same values. */
static void
run_create_flow(AutocdcStmt *s)
{
	LOCAL_FCINFO(fcinfo, 17);
	int			i;

	if (s->snapshot)
	{
		run_create_snapshot_flow(s);
		return;
	}
	InitFunctionCallInfoData(*fcinfo, NULL, 17, InvalidOid, NULL, NULL);
	for (i = 0; i < 17; i++)
	{
		fcinfo->args[i].value = (Datum) 0;
		fcinfo->args[i].isnull = true;
	}
#define SET_TEXT(n, str) \
	do { if ((str) != NULL) { fcinfo->args[n].value = CStringGetTextDatum(str); fcinfo->args[n].isnull = false; } } while (0)
#define SET_BOOL(n, b) \
	do { fcinfo->args[n].value = BoolGetDatum(b); fcinfo->args[n].isnull = false; } while (0)
	SET_TEXT(0, s->target);
	SET_TEXT(1, s->source);
	fcinfo->args[2].value = text_array(s->keys, &fcinfo->args[2].isnull);
	SET_TEXT(3, s->sequence_by);
	SET_BOOL(4, s->ignore_nulls);
	SET_TEXT(5, s->deletes);
	SET_TEXT(6, s->truncates);
	fcinfo->args[7].value = text_array(s->column_list, &fcinfo->args[7].isnull);
	fcinfo->args[8].value = text_array(s->except_column_list, &fcinfo->args[8].isnull);
	SET_TEXT(9, s->scd_type ? s->scd_type : "1");
	fcinfo->args[10].value = text_array(s->track_list, &fcinfo->args[10].isnull);
	fcinfo->args[11].value = text_array(s->track_except_list, &fcinfo->args[11].isnull);
	SET_TEXT(12, s->name ? identifier_value(s->name) : NULL);
	SET_BOOL(13, s->once);
	SET_TEXT(14, s->system_sequence_by);
	SET_BOOL(15, true);
#undef SET_TEXT
#undef SET_BOOL
	(void) autocdc_create_flow(fcinfo);
}

/* DROP FLOW [IF EXISTS] name: autocdc.drop_flow(name) (the target stays). */
static void
run_drop_flow(AutocdcStmt *s)
{
	LOCAL_FCINFO(fcinfo, 2);
	char	   *name = identifier_value(s->name);
	bool		exists;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	{
		int			level = set_safe_search_path();

		exists = catalog_load_flow(name, false, true) != NULL;
		AtEOXact_GUC(true, level);
	}
	SPI_finish();
	if (!exists && s->if_exists)
	{
		ereport(NOTICE,
				(errmsg("flow \"%s\" does not exist, skipping", name)));
		return;
	}
	InitFunctionCallInfoData(*fcinfo, NULL, 2, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = CStringGetTextDatum(name);
	fcinfo->args[0].isnull = false;
	fcinfo->args[1].value = BoolGetDatum(false);
	fcinfo->args[1].isnull = false;
	(void) autocdc_drop_flow(fcinfo);
}

/*
 * CREATE [OR REFRESH] STREAMING TABLE name [(columns)]: with columns, create
 * the table now; without, the first flow into it creates it.  An existing
 * table is checked against the columns given and never changed.
 */
static void
run_streaming_table(AutocdcStmt *s)
{
	List	   *names = stringToQualifiedNameList(s->target);
	RangeVar   *rv = makeRangeVarFromNameList(names);
	Oid			relid = RangeVarGetRelid(rv, NoLock, true);
	List	   *coldefs = NIL;
	ListCell   *lc;

	if (s->column_defs)
	{
		char	   *sql = psprintf("CREATE TABLE %s (%s\n)", s->target, s->column_defs);
		List	   *raw = raw_parser(sql, RAW_PARSE_DEFAULT);
		CreateStmt *cs;

		if (list_length(raw) != 1 ||
			!IsA(linitial_node(RawStmt, raw)->stmt, CreateStmt))
			ereport(ERROR,
					(errcode(ERRCODE_SYNTAX_ERROR),
					 errmsg("invalid column definitions for streaming table %s", s->target)));
		cs = (CreateStmt *) linitial_node(RawStmt, raw)->stmt;
		coldefs = cs->tableElts;
		if (!OidIsValid(relid))
		{
			if (SPI_connect() != SPI_OK_CONNECT)
				elog(ERROR, "SPI_connect failed");
			if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
				elog(ERROR, "could not create streaming table %s", s->target);
			SPI_finish();
			return;
		}
	}
	if (!OidIsValid(relid))
		return;					/* reserved: the first flow into it creates it */
	if (get_rel_relkind(relid) != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" exists and is not a table", s->target)));
	foreach(lc, coldefs)
	{
		ColumnDef  *cd = lfirst(lc);
		AttrNumber	attnum;
		Oid			typid,
					atttypid,
					attcoll;
		int32		typmod,
					atttypmod;

		if (!IsA(cd, ColumnDef))
			continue;
		attnum = get_attnum(relid, cd->colname);
		if (attnum == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("streaming table %s exists without column \"%s\"", s->target, cd->colname),
					 errhint("CREATE STREAMING TABLE never changes an existing table; alter it or drop it first.")));
		typenameTypeIdAndMod(NULL, cd->typeName, &typid, &typmod);
		get_atttypetypmodcoll(relid, attnum, &atttypid, &atttypmod, &attcoll);
		if (atttypid != typid || atttypmod != typmod)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of streaming table %s has type %s, not %s",
							cd->colname, s->target, format_type_with_typemod(atttypid, atttypmod),
							format_type_with_typemod(typid, typmod)),
					 errhint("CREATE STREAMING TABLE never changes an existing table; alter it or drop it first.")));
	}
}

/* Parse a block, then run its statements; returns their command tags. */
static List *
run_block(const char *text)
{
	List	   *stmts;
	List	   *tags = NIL;
	ListCell   *lc;
	int			n = 0;

	autocdc_require_current_catalog();
	run_refuse_while_applying("run autocdc statements");
	stmts = autocdc_parse_block(text);

	foreach(lc, stmts)
	{
		AutocdcStmt *s = lfirst(lc);
		ErrorContextCallback errcb;
		StmtContext sc;
		const char *tag;

		switch (s->kind)
		{
			case STMT_CREATE_FLOW:
				tag = "CREATE FLOW";
				break;
			case STMT_STREAMING_TABLE:
				tag = "CREATE STREAMING TABLE";
				break;
			default:
				tag = "DROP FLOW";
				break;
		}
		sc.number = ++n;
		sc.what = tag;
		errcb.callback = statement_error_context;
		errcb.arg = &sc;
		errcb.previous = error_context_stack;
		error_context_stack = &errcb;
		switch (s->kind)
		{
			case STMT_CREATE_FLOW:
				run_create_flow(s);
				break;
			case STMT_STREAMING_TABLE:
				run_streaming_table(s);
				break;
			case STMT_DROP_FLOW:
				run_drop_flow(s);
				break;
		}
		error_context_stack = errcb.previous;
		CommandCounterIncrement();
		tags = lappend(tags, (char *) tag);
	}
	return tags;
}

/* DO LANGUAGE autocdc $$ ... $$ */
Datum
autocdc_inline_handler(PG_FUNCTION_ARGS)
{
	InlineCodeBlock *codeblock = (InlineCodeBlock *) DatumGetPointer(PG_GETARG_DATUM(0));

	(void) run_block(codeblock->source_text);
	PG_RETURN_VOID();
}

/* autocdc.execute(statements text) RETURNS SETOF text: the command tags. */
Datum
autocdc_execute(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *tags;
	ListCell   *lc;
	TupleDesc	desc;
	Tuplestorestate *ts;
	MemoryContext old;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("statements must not be null")));

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));
	tags = run_block(text_to_cstring(PG_GETARG_TEXT_PP(0)));

	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	desc = CreateTemplateTupleDesc(1);
	TupleDescInitEntry(desc, 1, "execute", TEXTOID, -1, 0);
	ts = tuplestore_begin_heap(true, false, work_mem);
	MemoryContextSwitchTo(old);
	foreach(lc, tags)
	{
		Datum		value = CStringGetTextDatum(lfirst(lc));
		bool		isnull = false;

		tuplestore_putvalues(ts, desc, &value, &isnull);
	}
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = ts;
	rsinfo->setDesc = desc;
	return (Datum) 0;
}

/* CREATE FUNCTION ... LANGUAGE autocdc is refused. */
Datum
autocdc_validator(PG_FUNCTION_ARGS)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("functions in language autocdc are not supported"),
			 errhint("Run autocdc statements with DO LANGUAGE autocdc $$ ... $$ or SELECT autocdc.execute($$ ... $$).")));
	PG_RETURN_VOID();
}

/* The language's call handler: never reached, since no function can exist. */
Datum
autocdc_call_handler(PG_FUNCTION_ARGS)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("functions in language autocdc are not supported"),
			 errhint("Run autocdc statements with DO LANGUAGE autocdc $$ ... $$ or SELECT autocdc.execute($$ ... $$).")));
	PG_RETURN_NULL();
}
