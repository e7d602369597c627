/*-------------------------------------------------------------------------
 *
 * expr.c
 *		Parse and analyze a flow's expression (sequence_by, delete and
 *		truncate conditions) over its source (and the pseudo-columns of a
 *		changes() source) with the caller's search_path,
 *		and deparse it with every non-catalog name schema-qualified, as views
 *		are stored.  Expressions are evaluated later with search_path =
 *		pg_catalog, pg_temp.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"

#include "expr.h"
#include "layout.h"
#include "util.h"

/* The FROM item that gives a changes() source's pseudo-columns to expressions. */
static char *
pseudo_from_item(void)
{
	StringInfoData sql;
	int			i;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "(SELECT ");
	for (i = 0; i < PSEUDO_NCOLUMNS; i++)
		appendStringInfo(&sql, "%sNULL::%s AS %s", i ? ", " : "",
						 format_type_be_qualified(pseudo_columns[i].type),
						 quote_identifier(pseudo_columns[i].name));
	appendStringInfoString(&sql, ") AS " PSEUDO_ALIAS);
	return sql.data;
}

/*
 * The FROM list over which a flow's expressions are analyzed and checked:
 * the source (named alias, if not NULL), and with pseudo the pseudo-columns
 * of a changes() source.
 */
char *
expr_from_list(Oid source, bool pseudo, const char *alias)
{
	char	   *srcname = qualified_relname(source);

	if (alias)
		srcname = psprintf("%s %s", srcname, alias);
	return pseudo ? psprintf("%s, %s", srcname, pseudo_from_item()) : srcname;
}

/* Does an expression reference a whole row or a system column? */
static bool
whole_row_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varattno <= 0;
	return expression_tree_walker(node, whole_row_walker, context);
}

/*
 * Parse and analyze "SELECT (expr) FROM <the from list>" with the caller's
 * search_path; NULL if sql is not one statement.  An error is reported as
 * one of expr, with a hint for Spark's double-quoted string literals.
 */
static Query *
parse_expr_query(Oid source, bool pseudo, const char *expr, const char *what)
{
	char	   *sql;
	List	   *raw;
	RawStmt    *rs;
	Query	   *volatile q = NULL;
	MemoryContext cxt = CurrentMemoryContext;

	/* the newlines keep a trailing comment in expr from eating the rest */
	sql = psprintf("SELECT (\n%s\n) FROM %s", expr, expr_from_list(source, pseudo, NULL));
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
	return q;
}

/*
 * The field names, types, typmods and collations of a ROW(...) expression:
 * a source or pseudo-column's name, else f<n>.
 */
static void
row_expr_fields(ExprInfo *info, RowExpr *row, Oid source)
{
	ListCell   *lc;
	int			i = 0;

	foreach(lc, row->args)
	{
		Node	   *arg = lfirst(lc);

		i++;
		if (IsA(arg, Var) && ((Var *) arg)->varno == 1)
			info->field_names = lappend(info->field_names,
										get_attname(source, ((Var *) arg)->varattno, false));
		else if (IsA(arg, Var))
			info->field_names = lappend(info->field_names,
										pstrdup(pseudo_columns[((Var *) arg)->varattno - 1].name));
		else
			info->field_names = lappend(info->field_names, psprintf("f%d", i));
		info->field_types = lappend_oid(info->field_types, exprType(arg));
		info->field_typmods = lappend_int(info->field_typmods, exprTypmod(arg));
		info->field_colls = lappend_oid(info->field_colls, exprCollation(arg));
	}
}

/*
 * Deparse the analyzed expression node of q with only pg_catalog visible,
 * so that every other name gets qualified.
 */
static char *
deparse_qualified(Query *q, Node *node, Oid source, bool pseudo)
{
	List	   *dpctx;
	int			level;
	char	   *normalized;

	level = set_safe_search_path();
	if (pseudo)
	{
		PlannedStmt *ps = makeNode(PlannedStmt);

		ps->rtable = q->rtable;
		dpctx = deparse_context_for_plan_tree(ps,
											  select_rtable_names_for_explain(q->rtable,
																			  bms_add_range(NULL, 1, 2)));
	}
	else
		dpctx = deparse_context_for(get_rel_name(source), source);
	normalized = deparse_expression(node, dpctx, false, false);
	AtEOXact_GUC(true, level);
	return normalized;
}

/*
 * Parse and analyze expr over the source relation (and with pseudo the
 * pseudo-columns of a changes() source) with the caller's search_path;
 * deparse it with every non-catalog name schema-qualified.
 */
ExprInfo *
expr_analyze(Oid source, bool pseudo, const char *expr, const char *what)
{
	Query	   *q;
	TargetEntry *te;
	Node	   *node;
	ExprInfo   *info = palloc0(sizeof(ExprInfo));
	int			nfrom = pseudo ? 2 : 1;

	q = parse_expr_query(source, pseudo, expr, what);
	if (q == NULL || !IsA(q, Query) || q->commandType != CMD_SELECT ||
		list_length(q->targetList) != 1 || q->hasAggs || q->hasWindowFuncs ||
		q->hasTargetSRFs || q->hasSubLinks || q->groupClause || q->havingQual ||
		q->sortClause || q->limitCount || q->limitOffset || q->distinctClause ||
		q->cteList || q->setOperations || q->jointree->quals != NULL ||
		list_length(q->rtable) != nfrom || list_length(q->jointree->fromlist) != nfrom ||
		linitial_node(RangeTblEntry, q->rtable)->rtekind != RTE_RELATION ||
		linitial_node(RangeTblEntry, q->rtable)->relid != source)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid %s expression \"%s\"", what, expr),
				 errhint("Use a scalar expression over the columns of the source, without aggregates, subqueries or set-returning functions.")));
	te = linitial_node(TargetEntry, q->targetList);
	node = (Node *) te->expr;
	if (whole_row_walker(node, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid %s expression \"%s\": it references a whole row or a system column",
						what, expr),
				 errhint("Name the columns the expression reads, e.g. ROW(a, b).")));
	info->typid = exprType(node);
	info->typmod = exprTypmod(node);
	info->collation = exprCollation(node);
	info->reads_source = bms_is_member(1, pull_varnos(NULL, node));
	info->is_volatile = contain_volatile_functions(node);
	{
		Bitmapset  *attnos = NULL;
		int			k = -1;

		pull_varattnos(node, 1, &attnos);
		while ((k = bms_next_member(attnos, k)) >= 0)
			info->source_columns = lappend(info->source_columns,
										   get_attname(source, k + FirstLowInvalidHeapAttributeNumber,
													   false));
	}

	if (IsA(node, RowExpr))
		row_expr_fields(info, (RowExpr *) node, source);

	info->normalized = deparse_qualified(q, node, source, pseudo);
	return info;
}
