/*-------------------------------------------------------------------------
 *
 * storage.c
 *		Targets and their hidden state as tables: created when a flow is
 *		defined, checked when a flow joins an existing target, kept in step
 *		with the source's columns at each run, dropped with the last flow.
 *
 * A target is created by the caller (the flow's future owner), in the
 * calling transaction.  Its hidden state, autocdc_state.target_<id>, is
 * created by autocdc (flow owners have no CREATE there) as a new, empty
 * table with no defaults but its own time column, and given to the
 * target's owner; later ALTER TABLE statements on either run as the flow's
 * owner under a security-restricted operation, because they evaluate the
 * owner's defaults and index expressions.  Columns taken from a source get
 * its types with domains flattened to their base types (util.c): a
 * domain's DEFAULT and CHECK are its owner's code, and the source's owner
 * may be another role than the flow's.  The hidden state of a target Citus
 * distributes is distributed by the same column, co-located with it, and
 * its truncates are kept in a table of their own (distribute_state).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/heap.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "optimizer/plancat.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "compat.h"
#include "failures.h"
#include "layout.h"
#include "settings.h"
#include "storage.h"
#include "tablekind.h"
#include "util.h"

static void distribute_state(int target_id, Oid target, CitusTable *ct, Oid seqtype,
							 Oid sysseqtype);

/* Name of a target's hidden-state table (unqualified). */
char *
storage_state_name(int target_id)
{
	return psprintf("target_%d", target_id);
}

/*
 * Name of the table that keeps the truncates of a Citus-distributed
 * target's hidden state (unqualified): a distributed table holds no row
 * without a key, and a truncate has none.
 */
char *
storage_truncates_name(int target_id)
{
	return psprintf("target_%d_truncates", target_id);
}

/* The hidden-state table of a target, or InvalidOid when it is missing. */
Oid
storage_state_relid(int target_id)
{
	return get_relname_relid(storage_state_name(target_id),
							 get_namespace_oid(AUTOCDC_STATE_SCHEMA, false));
}

/* Its truncates' table, or InvalidOid when they are kept with the state. */
Oid
storage_truncates_relid(int target_id)
{
	return get_relname_relid(storage_truncates_name(target_id),
							 get_namespace_oid(AUTOCDC_STATE_SCHEMA, false));
}

/* Is a column name one that autocdc adds (some kind's periods, the state's)? */
bool
storage_reserved_column(const char *name)
{
	int			n,
				i,
				j;
	const StorageKind *const *kinds = storage_kinds(&n);

	if (strncmp(name, STATE_COLUMN_PREFIX, strlen(STATE_COLUMN_PREFIX)) == 0)
		return true;
	for (i = 0; i < n; i++)
		for (j = 0; j < kinds[i]->nperiods; j++)
			if (strcmp(name, kinds[i]->periods[j]) == 0)
				return true;
	return false;
}

/* PostgreSQL's own range type over a type, or InvalidOid. */
static Oid
builtin_range(Oid typid)
{
	switch (typid)
	{
		case INT4OID:
			return INT4RANGEOID;
		case INT8OID:
			return INT8RANGEOID;
		case NUMERICOID:
			return NUMRANGEOID;
		case TIMESTAMPOID:
			return TSRANGEOID;
		case TIMESTAMPTZOID:
			return TSTZRANGEOID;
		case DATEOID:
			return DATERANGEOID;
		default:
			return InvalidOid;
	}
}

/*
 * Create the indexes autocdc.as_of reads, on request
 * (autocdc.create_as_of_index; as the target's owner, security-restricted):
 * GiST over the range [__start_at, __end_at) of the ended versions, whose
 * containment operator finds those valid at a time, and a btree over
 * __start_at of the open ones (__end_at NULL: valid from their start on).
 * A new version is open and goes into the btree; only closing it inserts
 * it into GiST, whose insertions are the costly part.  A sequence type
 * without a range type of PostgreSQL's gets <target>_seqrange, named in
 * *rangetypname; an existing type of that name is used when it is a range
 * of the sequence's type owned by the target's owner (another role's could
 * carry code of its own, run by every write into the index).
 * (docs/time_travel.md has the measurements of the layout, of GiST against
 * SP-GiST and walking the keys, and of what the index costs the writes.)
 */
void
storage_create_period_index(Oid target, Oid seqtype, char **rangetypname)
{
	Oid			range = builtin_range(seqtype);
	char	   *rangefn;
	char	   *schema = get_namespace_name(get_rel_namespace(target));
	char	   *name = get_rel_name(target);

	if (OidIsValid(range))
		rangefn = format_type_be_qualified(range);
	else
	{
		char	   *typname = psprintf("%s_seqrange", name);
		Oid			existing = type_in_schema(schema, typname);

		if (!OidIsValid(existing))
			spi_exec(psprintf("CREATE TYPE %s AS RANGE (SUBTYPE = %s)",
							  quote_qualified_identifier(schema, typname),
							  format_type_be_qualified(seqtype)),
					 SPI_OK_UTILITY);
		else if (get_range_subtype(existing) != seqtype)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("type %s already exists and is not a range of %s",
							quote_qualified_identifier(schema, typname), format_type_be(seqtype)),
					 errhint("autocdc names the range type of a target's periods <target>_seqrange; "
							 "drop or rename the type.")));
		else if (type_owner(existing) != relation_owner(target))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("type %s is not owned by the owner of target \"%s\"",
							quote_qualified_identifier(schema, typname), name),
					 errhint("autocdc names the range type of a target's periods <target>_seqrange; "
							 "drop or rename the type, or give it to the target's owner.")));
		rangefn = quote_qualified_identifier(schema, typname);
		*rangetypname = typname;
	}
	spi_exec(psprintf("CREATE INDEX ON %s USING gist (%s(%s, %s)) WHERE %s IS NOT NULL",
					  quote_qualified_identifier(schema, name), rangefn,
					  SCD_START_NAME, SCD_END_NAME, SCD_END_NAME),
			 SPI_OK_UTILITY);
	spi_exec(psprintf("CREATE INDEX ON %s (%s) WHERE %s IS NULL",
					  quote_qualified_identifier(schema, name), SCD_START_NAME, SCD_END_NAME),
			 SPI_OK_UTILITY);
}

/* Is an index predicate "__end_at IS NOT NULL" (attribute end)? */
static bool
only_ended(List *pred, AttrNumber end)
{
	NullTest   *nt;

	if (list_length(pred) != 1 || !IsA(linitial(pred), NullTest))
		return false;
	nt = linitial(pred);
	return nt->nulltesttype == IS_NOT_NULL && IsA(nt->arg, Var) &&
		((Var *) nt->arg)->varattno == end;
}

/*
 * The range constructor of the GiST index of a target's periods (*rangefn),
 * and its range type; InvalidOid when the target has no such index
 * (none was asked for, or it was dropped).  *ended_only: the index
 * holds only the ended versions (an index over every row, as earlier builds
 * made, is used too).
 */
Oid
storage_period_range(Oid target, Oid *rangefn, bool *ended_only)
{
	Relation	rel = table_open(target, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	AttrNumber	start = get_attnum(target, SCD_START_NAME);
	AttrNumber	end = get_attnum(target, SCD_END_NAME);
	Oid			range = InvalidOid;
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Relation	ind = index_open(lfirst_oid(lc), AccessShareLock);
		List	   *pred = RelationGetIndexPredicate(ind);
		List	   *exprs;
		FuncExpr   *fn;

		if (ind->rd_rel->relam == GIST_AM_OID && ind->rd_index->indnatts == 1 &&
			ind->rd_index->indkey.values[0] == 0 &&
			(pred == NIL || only_ended(pred, end)) &&
			list_length(exprs = RelationGetIndexExpressions(ind)) == 1 &&
			IsA(linitial(exprs), FuncExpr) &&
			list_length((fn = linitial(exprs))->args) == 2 &&
			IsA(linitial(fn->args), Var) && IsA(lsecond(fn->args), Var) &&
			((Var *) linitial(fn->args))->varattno == start &&
			((Var *) lsecond(fn->args))->varattno == end &&
			type_is_range(fn->funcresulttype))
		{
			range = fn->funcresulttype;
			*rangefn = fn->funcid;
			*ended_only = pred != NIL;
		}
		index_close(ind, AccessShareLock);
		if (OidIsValid(range))
			break;
	}
	list_free(indexes);
	table_close(rel, AccessShareLock);
	return range;
}

/*
 * The column a target or hidden state gets for source column s of a flow
 * of owner's (source srcname): its type with domains flattened; refused
 * when what is left still carries another role's code (a composite or
 * range type with a domain inside, which cannot be flattened).
 */
ColInfo *
storage_column_type(const ColInfo *s, Oid owner, const char *srcname)
{
	ColInfo    *c = palloc(sizeof(ColInfo));
	Oid			foreign;

	*c = *s;
	c->typid = flatten_type(s->typid, &c->typmod);
	foreign = type_foreign_code(c->typid, owner);
	if (OidIsValid(foreign))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("column \"%s\" of source \"%s\" has type %s, which carries a domain of role %s",
						s->name, srcname, format_type_be(s->typid),
						quote_identifier(GetUserNameFromId(type_owner(foreign), false))),
				 errdetail("A domain's DEFAULT and CHECK are its owner's code, and would run as the flow's owner. "
						   "autocdc stores domains as their base types, but cannot inside composite or range types (here %s).",
						   format_type_be(foreign)),
				 errhint("Leave the column out of the flow with except_column_list, or give it a type owned by the flow's owner.")));
	return c;
}

/*
 * Refuse an existing target with a column whose type carries code of a role
 * other than owner's (type_foreign_code): the flow would run it as its
 * owner at each write.  A domain is to be changed to its base type.
 */
static void
check_target_code(List *tcols, const char *tname, Oid target, Oid owner)
{
	ListCell   *lc;

	foreach(lc, tcols)
	{
		ColInfo    *t = lfirst(lc);
		Oid			foreign = type_foreign_code(t->typid, owner);
		int32		typmod = t->typmod;
		Oid			flat;

		if (!OidIsValid(foreign))
			continue;
		flat = flatten_type(t->typid, &typmod);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("column \"%s\" of target \"%s\" has type %s, which carries a domain of role %s",
						t->name, tname, format_type_be(t->typid),
						quote_identifier(GetUserNameFromId(type_owner(foreign), false))),
				 errdetail("A flow writes its target as its owner; a domain's DEFAULT and CHECK would run with the owner's privileges."),
				 flat != t->typid && !OidIsValid(type_foreign_code(flat, owner)) ?
				 errhint("Change the column to its base type: ALTER TABLE %s ALTER COLUMN %s TYPE %s.",
						 qualified_relname(target), quote_identifier(t->name),
						 format_type_with_typemod(flat, typmod)) :
				 errhint("Give the column a type owned by the flow's owner, or drop it.")));
	}
}

/*
 * Create a flow's target (as the caller, in the calling transaction): the
 * selected columns of source srcname in source order with their types
 * (domains flattened), typmods and collations, then the kind's period
 * columns and keys (the indexes as_of reads come on request:
 * storage_create_period_index).  Returns its oid.
 */
Oid
storage_create_target(const char *schema, const char *name, const char *srcname, List *srccols,
					  List *selected, const StorageKind *kind, List *keys, Oid seqtype,
					  Oid sysseqtype)
{
	StringInfoData sql;
	ListCell   *lc;
	char	   *qname = quote_qualified_identifier(schema, name);

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (", qname);
	foreach(lc, selected)
	{
		ColInfo    *c = storage_column_type(find_column(srccols, lfirst(lc)), GetUserId(), srcname);

		appendStringInfo(&sql, "%s, ", column_definition(c->name, c->typid, c->typmod, c->collation));
	}
	kind->target_definition(&sql, quoted_list(keys), format_type_be_qualified(seqtype),
							OidIsValid(sysseqtype) ? format_type_be_qualified(sysseqtype) : NULL);
	appendStringInfoChar(&sql, ')');
	spi_exec(sql.data, SPI_OK_UTILITY);
	kind->target_indexes(qname, quoted_list(keys));
	CommandCounterIncrement();
	return get_relname_relid(name, get_namespace_oid(schema, false));
}

/*
 * Create the hidden state of a target: the target's data columns, then the
 * bookkeeping columns (layout.h), indexed by key, by time for tombstones
 * and by sequence for truncates; owned by the target's owner.  Created by
 * autocdc while new and empty: nothing of a user's is evaluated.
 */
void
storage_create_state(int target_id, Oid target, Oid seqtype, Oid sysseqtype, List *keys)
{
	StringInfoData sql;
	ListCell   *lc;
	char	   *sname = quote_qualified_identifier(AUTOCDC_STATE_SCHEMA,
												   storage_state_name(target_id));
	Oid			saved_uid;
	int			saved_sec;
	CitusTable	ct;

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (", sname);
	foreach(lc, relation_columns(target))
	{
		ColInfo    *c = lfirst(lc);

		if (storage_reserved_column(c->name))
			continue;
		appendStringInfo(&sql, "%s, ", column_definition(c->name, c->typid, c->typmod, c->collation));
	}
	appendStringInfo(&sql, "%s %s, %s pg_catalog.pg_lsn NOT NULL, %s pg_catalog.int8 NOT NULL, "
					 "%s pg_catalog.\"char\" NOT NULL, "
					 "%s pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now()",
					 STATE_SEQ_NAME, format_type_be_qualified(seqtype), STATE_LSN_NAME,
					 STATE_ORD_NAME, STATE_KIND_NAME, STATE_AT_NAME);
	if (OidIsValid(sysseqtype))
		appendStringInfo(&sql, ", %s %s", STATE_SYSSEQ_NAME, format_type_be_qualified(sysseqtype));
	appendStringInfoChar(&sql, ')');
	become_superuser(&saved_uid, &saved_sec);
	spi_exec(sql.data, SPI_OK_UTILITY);
	spi_exec(psprintf("CREATE INDEX ON %s (%s)", sname, quoted_list(keys)), SPI_OK_UTILITY);
	spi_exec(psprintf("CREATE INDEX ON %s (%s) WHERE %s OPERATOR(pg_catalog.<>) '%c'",
					  sname, STATE_AT_NAME, STATE_KIND_NAME, EVENT_UPSERT), SPI_OK_UTILITY);
	spi_exec(psprintf("CREATE INDEX ON %s (%s) WHERE %s OPERATOR(pg_catalog.=) '%c'",
					  sname, STATE_SEQ_NAME, STATE_KIND_NAME, EVENT_TRUNCATE), SPI_OK_UTILITY);
	if (tablekind_distributed(target, &ct))
		distribute_state(target_id, target, &ct, seqtype, sysseqtype);
	spi_exec(psprintf("ALTER TABLE %s OWNER TO %s", sname,
					  quote_identifier(GetUserNameFromId(relation_owner(target), false))),
			 SPI_OK_UTILITY);
	restore_user(saved_uid, saved_sec);
}

/*
 * The hidden state of a target Citus distributes (part of
 * storage_create_state, as autocdc, while the state is new and empty):
 * distributed by the target's distribution column and co-located with it,
 * so that each key's events live in the shard of its target rows; its
 * truncates, which have no key, go to a table of their own on the
 * coordinator (storage_truncates_name), owned by the target's owner.
 */
static void
distribute_state(int target_id, Oid target, CitusTable *ct, Oid seqtype, Oid sysseqtype)
{
	char	   *sname = quote_qualified_identifier(AUTOCDC_STATE_SCHEMA,
												   storage_state_name(target_id));
	char	   *tname = quote_qualified_identifier(AUTOCDC_STATE_SCHEMA,
												   storage_truncates_name(target_id));
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (%s %s, %s pg_catalog.pg_lsn NOT NULL, "
					 "%s pg_catalog.int8 NOT NULL, %s pg_catalog.\"char\" NOT NULL, "
					 "%s pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now()",
					 tname, STATE_SEQ_NAME, format_type_be_qualified(seqtype), STATE_LSN_NAME,
					 STATE_ORD_NAME, STATE_KIND_NAME, STATE_AT_NAME);
	if (OidIsValid(sysseqtype))
		appendStringInfo(&sql, ", %s %s", STATE_SYSSEQ_NAME, format_type_be_qualified(sysseqtype));
	appendStringInfoChar(&sql, ')');
	spi_exec(sql.data, SPI_OK_UTILITY);
	spi_exec(psprintf("ALTER TABLE %s OWNER TO %s", tname,
					  quote_identifier(GetUserNameFromId(relation_owner(target), false))),
			 SPI_OK_UTILITY);
	spi_exec(psprintf("SELECT pg_catalog.create_distributed_table(%s, %s, colocate_with => %s)",
					  quote_literal_cstr(sname),
					  quote_literal_cstr(get_attname(target, ct->attno, false)),
					  quote_literal_cstr(qualified_relname(target))),
			 SPI_OK_SELECT);
}

/*
 * Give a target's hidden state the column that keeps the columns each
 * upsert writes (a flow with columns_to_update), if it has none yet: it is
 * nullable, so the events already there write as their flows' rules say.
 */
void
storage_state_add_written(int target_id)
{
	Oid			saved_uid;
	int			saved_sec;

	if (get_attnum(storage_state_relid(target_id), STATE_WRITTEN_NAME) != InvalidAttrNumber)
		return;
	become_superuser(&saved_uid, &saved_sec);
	spi_exec(psprintf("ALTER TABLE %s ADD COLUMN %s pg_catalog.text[]",
					  quote_qualified_identifier(AUTOCDC_STATE_SCHEMA, storage_state_name(target_id)),
					  STATE_WRITTEN_NAME),
			 SPI_OK_UTILITY);
	restore_user(saved_uid, saved_sec);
}

/*
 * Does an existing target fit a flow of this kind (of the caller's, over
 * source srcname)?  A column has its source column's type, or that type
 * with domains flattened; none carries another role's code.  Error if not.
 */
void
storage_check_target(Oid target, const char *tname, const char *srcname, List *srccols,
					 List *selected, const StorageKind *kind, Oid seqtype, Oid sysseqtype)
{
	List	   *tcols = relation_columns(target);
	ListCell   *lc;
	const StorageKind *const *kinds;
	int			nkinds,
				i,
				j;

	foreach(lc, selected)
	{
		ColInfo    *s = find_column(srccols, lfirst(lc));
		ColInfo    *t = find_column(tcols, lfirst(lc));

		if (t == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("target \"%s\" has no column \"%s\"", tname, s->name),
					 errhint("Add the column to the target, or leave it out of the flow's column selection.")));
		if (t->typid != s->typid && t->typid != storage_column_type(s, GetUserId(), srcname)->typid)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of target \"%s\" has type %s, but the source column has type %s",
							s->name, tname, format_type_be(t->typid), format_type_be(s->typid))));
	}
	check_target_code(tcols, tname, target, GetUserId());
	for (i = 0; i < kind->nperiods; i++)
	{
		ColInfo    *t = find_column(tcols, kind->periods[i]);
		bool		sys = i >= kind->sysperiods_from;
		Oid			want = sys ? sysseqtype : seqtype;

		if (t == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("target \"%s\" needs a column \"%s\" of type %s for %s",
							tname, kind->periods[i], format_type_be(want), kind->label)));
		if (t->typid != want)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of target \"%s\" has type %s, but the %s has type %s",
							kind->periods[i], tname, format_type_be(t->typid),
							sys ? "system sequence" : "sequence", format_type_be(want))));
	}
	/* the period columns of another kind */
	kinds = storage_kinds(&nkinds);
	for (i = 0; i < nkinds; i++)
	{
		if (kinds[i] == kind)
			continue;
		for (j = 0; j < kinds[i]->nperiods; j++)
		{
			int			k;
			bool		ours = false;

			for (k = 0; k < kind->nperiods; k++)
				ours |= strcmp(kind->periods[k], kinds[i]->periods[j]) == 0;
			if (!ours && find_column(tcols, kinds[i]->periods[j]))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
						 errmsg("target \"%s\" has %s columns, but the flow is stored as %s",
								tname, kinds[i]->label, kind->label)));
		}
	}
}

/*
 * At create_flow: the caller, who owns the target, must own its partitions
 * too (a run deletes from them directly, as the flow's owner).
 */
void
storage_check_partitions_owned(Oid target)
{
	ListCell   *lc;

	foreach(lc, table_and_partitions(target, AccessShareLock))
		if (!compat_class_ownercheck(lfirst_oid(lc), GetUserId()))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("must be owner of partition \"%s\" of target \"%s\"",
							get_rel_name(lfirst_oid(lc)), get_rel_name(target)),
					 errdetail("A flow writes the partitions of its target as its owner."),
					 errhint("Give the partition to the owner of the target with ALTER TABLE ... OWNER TO.")));
}

/*
 * A run changes the target and the hidden state as the flow's owner, who
 * must therefore still exist and own both (a role with the privileges of
 * their owner counts, as for ALTER TABLE), and every partition of a
 * partitioned target: a run deletes from them directly.  Error if not.
 */
void
storage_check_owner(FlowDef *flow)
{
	char	   *owner = GetUserNameFromId(flow->owner, true);
	Oid			state = storage_state_relid(flow->target_id);
	List	   *rels;
	ListCell   *lc;

	if (owner == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the owner of flow \"%s\" (role %u) no longer exists", flow->name, flow->owner),
				 errhint("A superuser can drop the flow with SELECT autocdc.drop_flow(%s) and create it again.",
						 quote_literal_cstr(flow->name))));
	rels = table_and_partitions(flow->target, AccessShareLock);
	if (OidIsValid(state))
		rels = lappend_oid(rels, state);
	if (OidIsValid(storage_truncates_relid(flow->target_id)))
		rels = lappend_oid(rels, storage_truncates_relid(flow->target_id));
	foreach(lc, rels)
	{
		Oid			rel = lfirst_oid(lc);
		char	   *relname;

		if (compat_class_ownercheck(rel, flow->owner))
			continue;
		relname = qualified_relname(rel);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("flow \"%s\": its owner %s does not own %s %s",
						flow->name, quote_identifier(owner),
						rel == flow->target ? "its target" :
						get_rel_namespace(rel) == get_rel_namespace(state) ?
						"the target's hidden state" : "the target's partition", relname),
				 errdetail("A flow writes and alters its target and hidden state as its owner."),
				 errhint("Give it back with ALTER TABLE %s OWNER TO %s, or drop the flow and create it again as the owner of the target.",
						 relname, quote_identifier(owner))));
	}
}

/*
 * A captured column whose source column s no longer fits target column t
 * (part of storage_sync_columns, as the flow's owner): a source column
 * retyped fails the run with a hint to full_refresh, which retypes the
 * emptied target's and hidden state's columns; a target column that has
 * the source's very type but carries another role's domain (made before
 * autocdc flattened domains) is changed to its base type, values kept,
 * which evaluates no domain code.  Returns whether anything was altered.
 */
static bool
sync_retype(FlowDef *flow, ColInfo *s, ColInfo *t, bool refresh, const char *tname,
			const char *sname)
{
	ColInfo    *n = storage_column_type(s, flow->owner, get_rel_name(flow->source));
	bool		flatten = t->typid == s->typid;
	char	   *using = flatten ? "" : " USING NULL";
	ColInfo    *st;

	if (t->typid == n->typid ||
		(flatten && !OidIsValid(type_foreign_code(t->typid, flow->owner))))
		return false;
	st = find_column(relation_columns(storage_state_relid(flow->target_id)), t->name);
	if (!refresh && !flatten)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("flow \"%s\": column \"%s\" of source \"%s\" changed type from %s to %s",
						flow->name, t->name, get_rel_name(flow->source),
						format_type_be(t->typid), format_type_be(s->typid)),
				 errhint("Run SELECT autocdc.full_refresh(%s) to re-read the source.", quote_literal_cstr(flow->name))));
	spi_exec(psprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s%s", tname, quote_identifier(t->name),
					  format_type_with_typemod(n->typid, n->typmod), using), SPI_OK_UTILITY);
	if (st != NULL && st->typid != n->typid)
		spi_exec(psprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s%s", sname, quote_identifier(t->name),
						  format_type_with_typemod(n->typid, n->typmod), using), SPI_OK_UTILITY);
	return true;
}

/* A period or sequence column to change to its base type (sync_sequence_types). */
typedef struct SeqColumn
{
	const char *rel;			/* qualified name of its table */
	const char *name;
	Oid			typid;			/* the base type */
	int32		typmod;
} SeqColumn;

/*
 * What a flow made before autocdc flattened domains is to store instead of
 * type typid (a sequence type, or the type of column col of table rel,
 * col NULL: rel names the sequence): its base type when it carries a
 * domain of a role other than the flow's owner, InvalidOid when nothing is
 * to change.  Refused when flattening leaves another role's code: a
 * composite or range type with a domain inside.
 */
static Oid
seq_flat_type(FlowDef *flow, Oid typid, int32 *typmod, const char *col, const char *rel)
{
	Oid			foreign;
	Oid			flat;

	if (!OidIsValid(typid) || !OidIsValid(foreign = type_foreign_code(typid, flow->owner)))
		return InvalidOid;
	flat = flatten_type(typid, typmod);
	if (flat != typid && !OidIsValid(type_foreign_code(flat, flow->owner)))
		return flat;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 col ? errmsg("flow \"%s\": column \"%s\" of \"%s\" has type %s, which carries a domain of role %s",
						  flow->name, col, rel, format_type_be(typid),
						  quote_identifier(GetUserNameFromId(type_owner(foreign), false))) :
			 errmsg("flow \"%s\": the %s has type %s, which carries a domain of role %s",
					flow->name, rel, format_type_be(typid),
					quote_identifier(GetUserNameFromId(type_owner(foreign), false))),
			 errdetail("The flow was made before autocdc stored domains as their base types. "
					   "A domain's DEFAULT and CHECK are its owner's code, and would run as the flow's owner; "
					   "autocdc cannot flatten a domain inside a composite or range type (here %s).",
					   format_type_be(foreign)),
			 errhint("Drop the flow and create it again, sequenced by ROW(...) of the type's fields or by a value of a type owned by the flow's owner.")));
	return InvalidOid;			/* keep compiler quiet */
}

/* Note column name of relid (named rel) in cols[*n] if it is to be flattened. */
static bool
seq_column(FlowDef *flow, Oid relid, const char *rel, const char *name, SeqColumn *cols,
		   int *n)
{
	AttrNumber	attnum = get_attnum(relid, name);
	Oid			typid;
	int32		typmod;
	Oid			coll;
	Oid			flat;

	if (attnum == InvalidAttrNumber)
		return false;
	get_atttypetypmodcoll(relid, attnum, &typid, &typmod, &coll);
	flat = seq_flat_type(flow, typid, &typmod, name, rel);
	if (!OidIsValid(flat))
		return false;
	cols[*n].rel = rel;
	cols[*n].name = name;
	cols[*n].typid = flat;
	cols[*n].typmod = typmod;
	(*n)++;
	return true;
}

/*
 * A flow made before autocdc flattened domains may have another role's
 * domain as its sequence or system sequence type, and so as the type of
 * its target's period columns and its hidden state's sequence columns:
 * each write would run that role's CHECK as the flow's owner.  At every
 * run (part of storage_sync_columns, as the flow's owner) such columns are
 * changed to their base types, a relabeling that keeps the values and
 * evaluates no domain code, and *seq, *sysseq set to the flattened
 * sequence types to record (InvalidOid: unchanged).  Only these few
 * columns are looked at; types without another role's domain are left.
 * Whatever cannot be flattened is refused before anything is altered, and
 * so is a range type of the periods' index over such a domain (rebuilding
 * the index would cast to the domain).
 */
static void
sync_sequence_types(FlowDef *flow, const char *tname, const char *sname, Oid *seq,
					Oid *sysseq)
{
	const StorageKind *kind = storage_kind(flow->scd);
	Oid			state = storage_state_relid(flow->target_id);
	SeqColumn	cols[FOLD_MAX_PERIODS + 2];
	int			n = 0;
	int			i;
	bool		periods = false;
	int32		typmod = -1;
	Oid			range,
				rangefn;
	bool		ended_only;

	*seq = seq_flat_type(flow, flow->seq_type, &typmod, NULL, "sequence");
	typmod = -1;
	*sysseq = seq_flat_type(flow, flow->sysseq_type, &typmod, NULL, "system sequence");
	for (i = 0; i < kind->nperiods; i++)
		periods |= seq_column(flow, flow->target, tname, kind->periods[i], cols, &n);
	if (OidIsValid(state))
	{
		seq_column(flow, state, sname, STATE_SEQ_NAME, cols, &n);
		seq_column(flow, state, sname, STATE_SYSSEQ_NAME, cols, &n);
	}
	if (periods && OidIsValid(range = storage_period_range(flow->target, &rangefn, &ended_only)) &&
		OidIsValid(type_foreign_code(range, flow->owner)))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("flow \"%s\": the index of the periods of target \"%s\" uses range type %s, which carries a domain of role %s",
						flow->name, tname, format_type_be(range),
						quote_identifier(GetUserNameFromId(type_owner(type_foreign_code(range, flow->owner)), false))),
				 errdetail("The flow was made before autocdc stored domains as their base types. "
						   "A domain's DEFAULT and CHECK are its owner's code, and would run as the flow's owner."),
				 errhint("Drop that index (autocdc.as_of then reads the target without it), or drop the flow and create it again.")));
	for (i = 0; i < n; i++)
		spi_exec(psprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s", cols[i].rel,
						  quote_identifier(cols[i].name),
						  format_type_with_typemod(cols[i].typid, cols[i].typmod)),
				 SPI_OK_UTILITY);
}

/*
 * Store value as what the rows of relid (every leaf of a partitioned one)
 * older than its column name read, as ADD COLUMN with a constant default
 * does: the column was just added, so no row holds it.  Nothing is
 * evaluated.
 */
static void
store_missing_value(Oid relid, const char *name, Datum value)
{
	List	   *rels = table_and_partitions(relid, NoLock);
	ListCell   *lc;

	foreach(lc, rels)
	{
		Relation	rel;

		if (get_rel_relkind(lfirst_oid(lc)) != RELKIND_RELATION)
			continue;
		/* (ADD COLUMN holds its AccessExclusiveLock) */
		rel = table_open(lfirst_oid(lc), AccessExclusiveLock);
		StoreAttrMissingVal(rel, get_attnum(lfirst_oid(lc), name), value);
		table_close(rel, NoLock);
	}
	CommandCounterIncrement();
}

/*
 * A changes() flow's new column s that its source gained by an ADD COLUMN
 * whose default filled the older rows without logging a change of them
 * (PostgreSQL stores that constant, pg_attribute.attmissingval): the
 * target's and the hidden state's rows — every version of SCD 2 history,
 * as every older row of the source reads it — take the same constant, the
 * same way, when both get the column now and nothing else writes the
 * target.  Otherwise the flow needs a resync.  (Decoded changes older than
 * the column take it too: source.c.)
 */
static void
fill_older_rows(FlowDef *flow, ColInfo *s, bool new_target, bool new_state)
{
	Datum		value;
	MissingValue mv = relation_missing_value(flow->source, s->name, &value);
	bool		shared;
	Oid			ttype;
	CitusTable	ct;

	if (mv == MISSING_NONE)
		return;
	shared = list_length(catalog_target_flows(flow->target_id)) > 1;
	ttype = get_atttype(flow->target, get_attnum(flow->target, s->name));
	/*
	 * (a scalar domain's value is its base type's; the rows of a distributed
	 * target are in its shards, whose catalogs are the workers')
	 */
	if (mv == MISSING_VALUE && new_target && new_state && !shared &&
		(ttype == s->typid || (ttype == getBaseType(s->typid) && !type_is_array(ttype))) &&
		!tablekind_distributed(flow->target, &ct))
	{
		store_missing_value(flow->target, s->name, value);
		store_missing_value(storage_state_relid(flow->target_id), s->name, value);
		return;
	}
	failures_note_resync(flow->id);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("flow \"%s\": column \"%s\" was added to source \"%s\" with a default that fills its existing rows without logging their changes",
					flow->name, s->name, get_rel_name(flow->source)),
			 errdetail(shared ? "Other flows write the target too, so the rows of this flow cannot be told from theirs." :
					   mv == MISSING_CONFLICT ? "The partitions of the source give their rows different values." :
					   "The target cannot take the value the same way."),
			 shared ?
			 errhint("Run SELECT autocdc.full_refresh(%s, discard_history => true).",
					 quote_literal_cstr(flow->name)) :
			 errhint("Run SELECT autocdc.full_refresh(%s): it reads the table again and keeps the history.",
					 quote_literal_cstr(flow->name))));
}

/*
 * At every run, before anything is written: the target and the hidden
 * state are still tables whose rows a run can address (tablekind.c), as
 * create_flow found them; a table distributed with Citus since keeps its
 * kind and oid.
 */
void
storage_check_kinds(FlowDef *flow)
{
	Oid			state = storage_state_relid(flow->target_id);

	tablekind_check(flow->target, TABLE_TARGET, flow->name);
	if (OidIsValid(state))
		tablekind_check(state, TABLE_STATE, flow->name);
	storage_check_distribution(flow->target_id, flow->target, flow->keys, flow->name);
}

/*
 * Have Citus distribute a target create_flow just made by column (named as
 * the user wrote it: distributed_by), which must be one of the flow's keys;
 * as the caller, who owns it.  The hidden state follows when it is created
 * (distribute_state).
 */
void
storage_distribute_target(Oid target, const char *column, List *keys)
{
	char	   *col = parse_identifier(column, "distribution column");

	if (!tablekind_citus_installed())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot distribute target \"%s\": the extension citus is not installed",
						get_rel_name(target)),
				 errhint("Create the extension citus (preloaded on every node), or leave out distributed_by (DISTRIBUTED BY).")));
	if (keys != NIL && !name_in_list(keys, col))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("distributed_by must name one of the flow's keys, not \"%s\"", col),
				 errdetail("A run addresses the rows of a key in one shard.")));
	spi_exec(psprintf("SELECT pg_catalog.create_distributed_table(%s, %s)",
					  quote_literal_cstr(qualified_relname(target)), quote_literal_cstr(col)),
			 SPI_OK_SELECT);
}

/*
 * distributed_by given for a target that exists: Citus must distribute it
 * by that column already (create_flow distributes only a table it makes).
 */
void
storage_check_distributed_by(Oid target, const char *column)
{
	char	   *col = parse_identifier(column, "distribution column");
	CitusTable	ct;

	if (!tablekind_distributed(target, &ct) ||
		strcmp(get_attname(target, ct.attno, false), col) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target \"%s\" exists and is not distributed by column \"%s\"",
						get_rel_name(target), col),
				 errhint("create_flow distributes only a target it creates: distribute an existing one with create_distributed_table first, or leave out distributed_by.")));
}

/*
 * A target Citus distributes (tablekind.c lets only hash-distributed ones
 * through) must be distributed by one of the flow's keys, so that every
 * statement of a run addresses each key's rows in one shard; and once its
 * hidden state exists (target_id not 0), that must be distributed by the
 * same column and co-located with it, its truncates kept apart
 * (distribute_state).  A table distributed after its hidden state was made
 * is refused: the state would have to be moved with it.  flow: for the
 * message, or NULL at create_flow.
 */
void
storage_check_distribution(int target_id, Oid target, List *keys, const char *flow)
{
	const char *prefix = flow ? psprintf("flow \"%s\": ", flow) : "";
	Oid			state = target_id != 0 ? storage_state_relid(target_id) : InvalidOid;
	CitusTable	tct,
				sct;
	bool		distributed = tablekind_distributed(target, &tct);
	char	   *column;

	if (!distributed)
	{
		if (OidIsValid(state) && tablekind_distributed(state, &sct))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%starget \"%s\" is no longer distributed, but its hidden state is",
							prefix, get_rel_name(target)),
					 errhint("Distribute the target again by the column it was distributed by, co-located with %s.",
							 qualified_relname(state))));
		return;
	}
	column = get_attname(target, tct.attno, false);
	if (!name_in_list(keys, column))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%starget \"%s\" is distributed by column \"%s\", which is not one of the flow's keys",
						prefix, get_rel_name(target), column),
				 errdetail("A run addresses the rows of a key in one shard: the distribution column must be a key."),
				 errhint("Distribute the target by one of the flow's keys: SELECT alter_distributed_table(%s, distribution_column => %s).",
						 quote_literal_cstr(qualified_relname(target)),
						 quote_literal_cstr((char *) linitial(keys)))));
	if (!OidIsValid(state))
		return;
	if (!tablekind_distributed(state, &sct) || sct.colocation != tct.colocation ||
		strcmp(get_attname(state, sct.attno, false), column) != 0 ||
		!OidIsValid(storage_truncates_relid(target_id)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%starget \"%s\" is a Citus distributed table, but its hidden state is not distributed with it",
						prefix, get_rel_name(target)),
				 errdetail("The target was distributed after its first flow was created; its hidden state stayed on the coordinator."),
				 errhint("Distribute a target before creating its first flow: undistribute it with SELECT undistribute_table(%s), or drop its flows, distribute it, and create them again.",
						 quote_literal_cstr(qualified_relname(target)))));
}

/*
 * Follow source schema changes (semantics §4): a column added to a source whose
 * selection is "all" or "* except" is added to the target and the hidden
 * state; a captured column that was dropped, renamed or retyped fails the
 * run with a hint to full_refresh, which re-resolves the selection (and
 * retypes the emptied target's column).  New columns get the source's
 * types with domains flattened (storage_column_type).  The ALTER TABLE
 * statements run as the flow's owner under a security-restricted operation
 * (they evaluate the owner's index expressions); only the catalog update
 * runs as autocdc.  SPI connected.
 */
void
storage_sync_columns(FlowDef *flow, bool refresh)
{
	List	   *pseudo = flow->srckind->pseudo_columns ?
		pseudo_target_columns(flow->col_include, flow->col_from) : NIL;
	List	   *src = relation_columns(flow->source);
	List	   *tgt = relation_columns(flow->target);
	char	   *tname = qualified_relname(flow->target);
	char	   *sname = quote_qualified_identifier(AUTOCDC_STATE_SCHEMA,
												   storage_state_name(flow->target_id));
	List	   *selection = NIL;
	bool		changed = false;
	ListCell   *lc;
	Oid			saved_uid;
	int			saved_sec;
	Oid			seq,
				sysseq;

	/* a column the source gained with the name of one taken from a pseudo-column */
	foreach(lc, pseudo)
		if (find_column(src, ((ColInfo *) lfirst(lc))->name))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("flow \"%s\": source \"%s\" has a column \"%s\", the name of the target column the flow takes from %s",
							flow->name, get_rel_name(flow->source), ((ColInfo *) lfirst(lc))->name,
							pseudo_source_of(flow->col_include, flow->col_from,
											 ((ColInfo *) lfirst(lc))->name)),
					 errhint("Rename the source's column, or drop the flow and create it again with another name for the pseudo-column.")));
	src = list_concat(src, pseudo);
	foreach(lc, src)
	{
		ColInfo    *c = lfirst(lc);

		if (flow->has_include && !name_in_list(flow->col_include, c->name))
			continue;
		if (name_in_list(flow->col_except, c->name))
			continue;
		if (storage_reserved_column(c->name))
			continue;
		selection = lappend(selection, c->name);
	}

	storage_check_kinds(flow);
	storage_check_owner(flow);
	become_owner(flow->owner, &saved_uid, &saved_sec);
	sync_sequence_types(flow, tname, sname, &seq, &sysseq);
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
		if (s != NULL && t != NULL && sync_retype(flow, s, t, refresh, tname, sname))
			changed = true;
	}
	foreach(lc, selection)
	{
		char	   *name = lfirst(lc);
		ColInfo    *orig = find_column(src, name);
		ColInfo    *s;
		bool		new_target,
					new_state;

		if (name_in_list(flow->columns, name))
			continue;
		s = storage_column_type(orig, flow->owner, get_rel_name(flow->source));
		changed = true;
		new_target = find_column(tgt, name) == NULL;
		new_state = find_column(relation_columns(storage_state_relid(flow->target_id)), name) == NULL;
		if (new_target)
			spi_exec(psprintf("ALTER TABLE %s ADD COLUMN %s", tname,
							  column_definition(name, s->typid, s->typmod, s->collation)),
					 SPI_OK_UTILITY);
		if (new_state)
			spi_exec(psprintf("ALTER TABLE %s ADD COLUMN %s", sname,
							  column_definition(name, s->typid, s->typmod, s->collation)),
					 SPI_OK_UTILITY);
		/* (the source's own type: an array's datum names its element type) */
		if (flow->srckind->row_changes && !refresh)
			fill_older_rows(flow, orig, new_target, new_state);
	}
	restore_user(saved_uid, saved_sec);
	if (OidIsValid(seq) || OidIsValid(sysseq))
		catalog_set_seq_types(flow, OidIsValid(seq) ? seq : flow->seq_type,
							  OidIsValid(sysseq) ? sysseq : flow->sysseq_type);
	if (changed || list_length(selection) != list_length(flow->columns))
	{
		catalog_set_columns(flow, selection);
		CommandCounterIncrement();
	}
}

/*
 * Run "command table" on a target's hidden state, and on its truncates'
 * table when it has one.
 */
static void
state_tables_exec(int target_id, const char *command, int expect)
{
	spi_exec(psprintf("%s %s", command,
					  quote_qualified_identifier(AUTOCDC_STATE_SCHEMA, storage_state_name(target_id))),
			 expect);
	if (OidIsValid(storage_truncates_relid(target_id)))
		spi_exec(psprintf("%s %s", command,
						  quote_qualified_identifier(AUTOCDC_STATE_SCHEMA,
													 storage_truncates_name(target_id))),
				 expect);
}

/*
 * Forget a target's hidden state (its events and truncates), as the
 * caller (the flow's owner, under a security-restricted operation).
 */
void
storage_clear_state(int target_id)
{
	state_tables_exec(target_id, "DELETE FROM", SPI_OK_DELETE);
}

/*
 * Drop a target's hidden state (as autocdc: dropping evaluates nothing),
 * and with drop_target the target and the composite types autocdc made for
 * its sequences (as the caller, who must own them).
 */
void
storage_drop(int target_id, Oid target, List *typnames, bool drop_target)
{
	ListCell   *lc;
	Oid			saved_uid;
	int			saved_sec;
	char	   *tschema = get_namespace_name(get_rel_namespace(target));

	become_superuser(&saved_uid, &saved_sec);
	state_tables_exec(target_id, "DROP TABLE IF EXISTS", SPI_OK_UTILITY);
	restore_user(saved_uid, saved_sec);
	if (!drop_target)
		return;
	spi_exec(psprintf("DROP TABLE %s", qualified_relname(target)), SPI_OK_UTILITY);
	foreach(lc, typnames)
		spi_exec(psprintf("DROP TYPE IF EXISTS %s", quote_qualified_identifier(tschema, lfirst(lc))),
				 SPI_OK_UTILITY);
}

/*
 * Bulk loads.  A run about to insert at least STORAGE_BULK_MIN_ROWS rows
 * into a target that has no pages at all (its first load), or into a hidden
 * state that has no pages or holds fewer than half as many rows as the run
 * inserts, takes the table's indexes out of use while it inserts and
 * rebuilds them from all the rows afterwards, as CREATE INDEX over a loaded
 * table does: a sorted build writes each index page once, where inserting
 * row by row logs every entry, and it costs about half as much per row.  A
 * target with rows keeps the row-by-row path: the rebuild locks its indexes
 * until the run commits, and queries of the target would wait for it; only
 * autocdc reads the hidden state.  The hidden state's partial indexes stay
 * in use (indexes_out_of_use).  It is done in the run's transaction
 * (pg_index is updated as DDL updates it, not in place), so a run that fails
 * leaves the indexes as they were, and other sessions see them valid
 * throughout.  Left alone: tables with triggers or rules (their code may
 * read the table while it loads), tables the caller does not own, and
 * deferrable unique indexes (checked at commit, which a rebuild cannot do).
 * A rebuild checks uniqueness and exclusion as the inserts would have,
 * failing the run on a duplicate.  A partitioned target qualifies when the
 * partitioned table and every partition do (all empty): the partitions'
 * indexes are rebuilt, each from its own rows.
 */
#define STORAGE_BULK_MIN_ROWS 10000

/* Does a load of nrows (at least STORAGE_BULK_MIN_ROWS) into rel qualify (above)? */
static bool
bulk_load_qualifies(Relation rel, int64 nrows, bool hidden)
{
	BlockNumber pages;
	double		tuples,
				allvisfrac;

	if ((rel->rd_rel->relkind != RELKIND_RELATION &&
		 (hidden || rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)) ||
		rel->rd_rel->relowner != GetUserId() ||
		rel->trigdesc != NULL || rel->rd_rules != NULL)
		return false;
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
	{
		ListCell   *lc;

		/* each partition, at each level once */
		foreach(lc, find_inheritance_children(RelationGetRelid(rel), RowExclusiveLock))
		{
			Relation	part;
			bool		ok;

			part = table_open(lfirst_oid(lc), NoLock);
			ok = bulk_load_qualifies(part, nrows, false);
			table_close(part, NoLock);
			if (!ok)
				return false;
		}
		return true;
	}
	if (RelationGetNumberOfBlocks(rel) == 0)
		return true;
	if (!hidden)
		return false;
	/* the planner's estimate: pg_class's density over the current size */
	estimate_rel_size(rel, NULL, &pages, &tuples, &allvisfrac);
	return tuples * 2 <= (double) nrows;
}

/*
 * Take the valid, immediate indexes of rel out of use (storage_bulk_begin),
 * returning them.  With keep_partial, partial indexes stay in use: those of
 * a hidden state (tombstones, truncates) take a few rows of a load, and
 * inserting them costs less than a rebuild, which reads the whole table
 * and syncs the new index to disk for each index.
 */
static List *
indexes_out_of_use(Relation rel, bool keep_partial)
{
	Relation	pg_index;
	List	   *indexes;
	List	   *deferred = NIL;
	ListCell   *lc;

	indexes = RelationGetIndexList(rel);
	pg_index = table_open(IndexRelationId, RowExclusiveLock);
	foreach(lc, indexes)
	{
		Oid			indexid = lfirst_oid(lc);
		Relation	ind = index_open(indexid, ShareUpdateExclusiveLock);
		Form_pg_index cur = ind->rd_index;

		if (cur->indisvalid && cur->indisready && cur->indislive && cur->indimmediate &&
			!(keep_partial && !heap_attisnull(ind->rd_indextuple, Anum_pg_index_indpred, NULL)))
		{
			HeapTuple	tup = SearchSysCacheCopy1(INDEXRELID, ObjectIdGetDatum(indexid));
			Form_pg_index form;

			if (!HeapTupleIsValid(tup))
				elog(ERROR, "cache lookup failed for index %u", indexid);
			form = (Form_pg_index) GETSTRUCT(tup);
			form->indisvalid = false;
			form->indisready = false;
			CatalogTupleUpdate(pg_index, &tup->t_self, tup);
			heap_freetuple(tup);
			deferred = lappend_oid(deferred, indexid);
		}
		index_close(ind, NoLock);
	}
	table_close(pg_index, RowExclusiveLock);
	if (deferred != NIL)
		CacheInvalidateRelcache(rel);
	list_free(indexes);
	return deferred;
}

/*
 * Before inserting nrows rows into relid (a hidden state if hidden): take
 * its indexes out of use when the load qualifies (above), returning them
 * for storage_bulk_end (NIL when it does not).
 */
List *
storage_bulk_begin(Oid relid, int64 nrows, bool hidden)
{
	Relation	rel;
	List	   *deferred = NIL;
	ListCell   *lc;

	/* a Citus table's rows are in its shards, not in the table here */
	if (nrows < STORAGE_BULK_MIN_ROWS || tablekind_citus(relid) != NULL)
		return NIL;
	rel = table_open(relid, RowExclusiveLock);
	if (!bulk_load_qualifies(rel, nrows, hidden))
	{
		table_close(rel, NoLock);
		return NIL;
	}
	table_close(rel, NoLock);
	/* a partitioned target's are its partitions' */
	foreach(lc, table_and_partitions(relid, NoLock))
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION)
		{
			Relation	part = table_open(lfirst_oid(lc), NoLock);

			deferred = list_concat(deferred, indexes_out_of_use(part, hidden));
			table_close(part, NoLock);
		}
	CommandCounterIncrement();
	return deferred;
}

/*
 * After the load: rebuild the indexes storage_bulk_begin took out of use,
 * which marks them valid again, as the table's owner under a
 * security-restricted operation (index expressions and predicates are the
 * owner's code).  The sorts are held to a query's share of autocdc.work_mem
 * and to this process (no parallel workers), as the run's other queries are.
 */
void
storage_bulk_end(Oid relid, List *deferred)
{
	Oid			saved_uid;
	int			saved_sec;
	int			level;
	ListCell   *lc;

	if (deferred == NIL)
		return;
	become_owner(relation_owner(relid), &saved_uid, &saved_sec);
	level = NewGUCNestLevel();
	/* the sorts take a query's share of autocdc.work_mem, in this process */
	(void) set_config_option("maintenance_work_mem", psprintf("%d", Max(1024, settings_query_mem())),
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("max_parallel_maintenance_workers", "0",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	foreach(lc, deferred)
	{
		ReindexParams params = {0};

		/* (the index of a partition, for a partitioned target) */
		compat_reindex_index(lfirst_oid(lc),
							 get_rel_persistence(IndexGetRelation(lfirst_oid(lc), false)),
							 &params);
	}
	AtEOXact_GUC(true, level);
	restore_user(saved_uid, saved_sec);
	list_free(deferred);
	CommandCounterIncrement();
}
