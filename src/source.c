/*-------------------------------------------------------------------------
 *
 * source.c
 *		What a run checks of a change flow's source before it captures
 *		(engine layer): that nothing can be skipped or misread silently.
 *		The capture itself is in capture.c and the files it names.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/typcache.h"

#include "catalog.h"
#include "expr.h"
#include "failures.h"
#include "source.h"
#include "srckind.h"
#include "tablekind.h"
#include "util.h"

/*
 * source_check's test of a delete or truncate condition (NULL: none): still
 * a boolean; the source columns it reads go into flow->run.expr_columns.
 */
static void
check_condition(FlowDef *flow, const char *expr, const char *what)
{
	ExprInfo   *e;

	if (expr == NULL)
		return;
	e = expr_analyze(flow->source, flow->srckind->pseudo_columns, expr, what);
	if (e->typid != BOOLOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("flow \"%s\": %s is no longer a boolean expression", flow->name, what),
				 errhint("Change the column back, or drop the flow and create it again.")));
	flow->run.expr_columns = list_concat(flow->run.expr_columns, e->source_columns);
}

/*
 * What a run checks of a change flow's source, because nothing may be
 * skipped or misread silently: it is still a logged table in every leaf
 * (an unlogged one writes no WAL for its inserts, so decoding never sees
 * them), and none is a Citus table (whose rows its shards write); a
 * changes() source still has a unique index on the keys (or rows
 * sharing a key would be folded into one: the flow then needs a resync);
 * row-level security does not
 * apply to the owner (decoded rows are not filtered by policies); and the
 * flow's expressions still have the types the flow was created with (a
 * retyped column would be cast silently).
 */
void
source_check(FlowDef *flow)
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
		leaves = table_and_partitions(flow->source, NoLock);
		foreach(lc, leaves)
		{
			Oid			leaf = lfirst_oid(lc);
			char		relkind = get_rel_relkind(leaf);

			tablekind_check(leaf, TABLE_CHANGE_SOURCE, flow->name);
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
	if (flow->srckind->row_changes && !relation_has_unique_key_index(flow->source, flow->keys))
	{
		/*
		 * Rows that shared a key meanwhile were folded by the changes the
		 * WAL holds: once an index is back, only a full read is right.
		 */
		failures_note_resync(flow->id);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flow \"%s\": source \"%s\" no longer has a unique index on the flow's keys",
						flow->name, srcname),
				 errdetail("A changes() flow needs a unique, immediate (not deferrable), non-partial index whose columns are all among its keys, so that a key names one row of the table; without one, rows that share a key would be folded into one."),
				 errhint("Create a unique index on the keys again (or a primary key), removing the rows that share a key first, then run SELECT autocdc.full_refresh(%s).",
						 quote_literal_cstr(flow->name))));
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
	e = expr_analyze(flow->source, flow->srckind->pseudo_columns, rowcast ? rowcast : seqtext,
					 "sequence");
	if (rowcast)
	{
		TupleDesc	desc = lookup_rowtype_tupdesc(flow->seq_type, -1);
		bool		same = list_length(e->field_types) == desc->natts;
		int			i = 0;

		foreach(lc, e->field_types)
		{
			if (same && !type_stored_as(lfirst_oid(lc), TupleDescAttr(desc, i)->atttypid))
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
	else if (!type_stored_as(e->typid, flow->seq_type))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("flow \"%s\": its sequence %s now has type %s, not %s",
						flow->name, seqtext, format_type_be(e->typid), format_type_be(flow->seq_type)),
				 errdetail("A column the sequence reads was retyped; casting it back would change the order of events."),
				 errhint("Change the column back, or drop the flow and create it again.")));
	flow->run.expr_columns = NIL;
	check_condition(flow, flow->deletes, "apply_as_deletes");
	check_condition(flow, flow->truncates, "apply_as_truncates");
}
