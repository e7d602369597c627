/*-------------------------------------------------------------------------
 *
 * statement.c
 *		Entry points of the statement form: the trusted procedural language
 *		autocdc (DO LANGUAGE autocdc $$ ... $$) and autocdc.execute(text).
 *
 * Both parse the whole block first (parse.c), then run its statements in
 * order in the caller's transaction, as the calling user: CREATE FLOW fills
 * the FlowSpec that autocdc.create_flow fills (define.c does every check),
 * DROP FLOW drops as autocdc.drop_flow does.  The expectations of CREATE STREAMING TABLE are
 * set as autocdc.set_expectation sets them once the table is a flow's target (a flow into it
 * later in the block).  Functions in the language are refused: only DO and autocdc.execute run
 * statements.
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
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"

#include "catalog.h"
#include "compat.h"
#include "define.h"
#include "parse.h"
#include "run.h"
#include "storage.h"
#include "tablekind.h"
#include "util.h"

PG_FUNCTION_INFO_V1(autocdc_call_handler);
PG_FUNCTION_INFO_V1(autocdc_inline_handler);
PG_FUNCTION_INFO_V1(autocdc_validator);
PG_FUNCTION_INFO_V1(autocdc_execute);


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


/*
 * CREATE FLOW ... AS AUTO CDC INTO ...: the same FlowSpec as
 * autocdc.create_flow with these values (FROM SNAPSHOT: as
 * autocdc.create_snapshot_flow with a table or view source, or a query).
 */
static void
run_create_flow(AutocdcStmt *s)
{
	FlowSpec	spec;
	bool		isnull;

	memset(&spec, 0, sizeof(spec));
	spec.target = s->target;
	spec.source = s->source;
	spec.keys = (ArrayType *) DatumGetPointer(text_array(s->keys, &isnull));
	if (isnull)
		spec.keys = construct_empty_array(TEXTOID);
	spec.scd = s->scd_type ? s->scd_type : "1";
	spec.track_list = (ArrayType *) DatumGetPointer(text_array(s->track_list, &isnull));
	spec.track_except_list = (ArrayType *) DatumGetPointer(text_array(s->track_except_list, &isnull));
	spec.name = s->name ? parse_identifier(s->name, "flow") : NULL;
	spec.continuous = true;
	spec.from_statement = true;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	spec.once = s->once;
	spec.source_query = s->source_query;
	spec.version_query = s->version_query;
	if (s->snapshot)
		(void) define_snapshot_flow(&spec);
	else
	{
		spec.sequence_by = s->sequence_by;
		spec.ignore_nulls = s->ignore_nulls;
		spec.deletes = s->deletes;
		spec.truncates = s->truncates;
		spec.column_list = (ArrayType *) DatumGetPointer(text_array(s->column_list, &isnull));
		spec.except_column_list = (ArrayType *) DatumGetPointer(text_array(s->except_column_list, &isnull));
		spec.system_sequence_by = s->system_sequence_by;
		if (s->has_inu_list)
			spec.inu_list = (ArrayType *) DatumGetPointer(text_array(s->inu_list, &isnull));
		if (s->has_inu_except)
			spec.inu_except_list = (ArrayType *) DatumGetPointer(text_array(s->inu_except_list, &isnull));
		spec.columns_to_update = s->columns_to_update;
		(void) define_flow(&spec);
	}
	SPI_finish();
}

/* DROP FLOW [IF EXISTS] name: autocdc.drop_flow(name) (the target stays). */
static void
run_drop_flow(AutocdcStmt *s)
{
	char	   *name = parse_identifier(s->name, "flow");
	FlowDef    *flow;
	int			level;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	level = set_safe_search_path();
	flow = catalog_load_flow(name, true, true);
	if (flow == NULL && s->if_exists)
		ereport(NOTICE,
				(errmsg("flow \"%s\" does not exist, skipping", name)));
	else
	{
		if (flow == NULL)
			(void) catalog_load_flow(name, true, false);	/* the error */
		catalog_check_flow_owner(flow);
		define_drop_flow(flow, false);
	}
	AtEOXact_GUC(true, level);
	SPI_finish();
}

/*
 * CREATE [OR REFRESH] STREAMING TABLE name [(columns)]: with columns, create
 * the table now; without, the first flow into it creates it.  An existing
 * table is checked against the columns given and never changed.
 */
static void
run_streaming_table(AutocdcStmt *s)
{
	List	   *names = compat_stringToQualifiedNameList(s->target);
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
			CommandCounterIncrement();
			/* its flows check that the column is one of their keys */
			if (s->distributed_by)
				storage_distribute_target(RangeVarGetRelid(rv, NoLock, false),
										  s->distributed_by, NIL);
			SPI_finish();
			return;
		}
	}
	else if (s->distributed_by)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("DISTRIBUTED BY needs the streaming table's column definitions"),
				 errhint("Write CREATE STREAMING TABLE %s (columns ...) DISTRIBUTED BY (column), or let the first flow into it create it with distributed_by.",
						 s->target)));
	if (!OidIsValid(relid))
		return;					/* reserved: the first flow into it creates it */
	tablekind_check(relid, TABLE_TARGET, NULL);
	if (s->distributed_by)
		storage_check_distributed_by(relid, s->distributed_by);
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

/*
 * Set the expectations of the CREATE STREAMING TABLE statements (pending)
 * whose table is now the target of a flow; returns the statements still
 * waiting for one.
 */
static List *
set_pending_expectations(List *pending)
{
	List	   *rest = NIL;
	ListCell   *lc;
	ListCell   *le;
	MemoryContext cxt = CurrentMemoryContext;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	foreach(lc, pending)
	{
		AutocdcStmt *s = lfirst(lc);
		RangeVar   *rv = makeRangeVarFromNameList(compat_stringToQualifiedNameList(s->target));
		Oid			relid = RangeVarGetRelid(rv, NoLock, true);
		TargetDef	t;

		if (!OidIsValid(relid) || !catalog_load_target(relid, &t))
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			rest = lappend(rest, s);
			MemoryContextSwitchTo(old);
			continue;
		}
		foreach(le, s->expectations)
		{
			AutocdcExpect *e = lfirst(le);

			define_set_expectation(relid, e->name, e->condition, e->action);
		}
	}
	SPI_finish();
	return rest;
}

/* A streaming table's expectations need a flow into it by the block's end. */
static void
refuse_pending_expectations(List *pending)
{
	if (pending != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("streaming table %s has expectations, but no flow into it was created",
						((AutocdcStmt *) linitial(pending))->target),
				 errhint("Create a change flow into it in the same block, or set them later with autocdc.set_expectation.")));
}

/* Parse a block, then run its statements; returns their command tags. */
static List *
run_block(const char *text)
{
	List	   *stmts;
	List	   *tags = NIL;
	List	   *pending = NIL;	/* streaming tables' expectations to set */
	ListCell   *lc;
	int			n = 0;

	catalog_require_current();
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
				if (s->expectations != NIL)
					pending = lappend(pending, s);
				break;
			case STMT_DROP_FLOW:
				run_drop_flow(s);
				break;
		}
		CommandCounterIncrement();
		if (pending != NIL)
			pending = set_pending_expectations(pending);
		error_context_stack = errcb.previous;
		tags = lappend(tags, (char *) tag);
	}
	refuse_pending_expectations(pending);
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
	compat_TupleDescFinalize(desc);
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
