/*-------------------------------------------------------------------------
 *
 * define.c
 *		Defining flows: validate a FlowSpec, create the target (in the
 *		calling transaction, as the caller) and its hidden state, and record
 *		the flow; snapshot flows, whose version function's first snapshot
 *		creates their target later; dropping flows.
 *
 * Everything is checked as the calling user, with the caller's search_path
 * for names and expressions; the catalog rows are written by catalog.c.
 * The steps of define_flow work on a Definition, one step per concern.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/bufmgr.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/relcache.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "compare.h"
#include "compat.h"
#include "define.h"
#include "expr.h"
#include "kind.h"
#include "layout.h"
#include "snapsource.h"
#include "srckind.h"
#include "rowstore.h"
#include "storage.h"
#include "tablekind.h"
#include "util.h"

/* What define_flow has learnt so far. */
typedef struct Definition
{
	FlowSpec   *spec;
	const StorageKind *kind;
	bool		reads_once;		/* the source is read whole, not decoded */
	const SourceKind *srckind;	/* the source's kind (srckind.h) */
	/* source */
	Oid			source;
	char	   *srctext;		/* as written, without stream() or changes() */
	char	   *srcname;		/* for messages: [schema.]name, unquoted */
	List	   *srccols;
	/* columns */
	List	   *keys;
	List	   *collist;		/* column_list: target column names */
	List	   *colfrom;		/* and what each is taken from */
	List	   *tgtcols;		/* the source's columns and the target
								 * columns taken from pseudo-columns */
	List	   *exceptlist;
	List	   *tracklist;
	List	   *trackexcept;
	List	   *selected;
	List	   *readcols;		/* the selected columns of the source */
	List	   *datacols;
	bool		track_all;
	List	   *track;
	List	   *inulist;		/* ignore_null_updates_column_list */
	List	   *inuexcept;		/* ignore_null_updates_except_column_list */
	char	   *ctucol;			/* columns_to_update: the source column */
	/* expressions */
	ExprInfo   *seq;
	ExprInfo   *del;
	ExprInfo   *trunc;
	Oid			seqtype;
	char	   *seqtypname;
	ExprInfo   *sysseq;			/* bitemporal: system_sequence_by */
	Oid			sysseqtype;
	char	   *sysseqtypname;
	/* target */
	RangeVar   *trv;
	Oid			target;
	char	   *flowname;
	TargetDef	tdef;
	bool		target_known;	/* another flow writes it already */
} Definition;

/* Error: a source text that nests stream() or changes(). */
static void
refuse_nested_source(const char *source)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid source \"%s\": stream() and changes() may each be given once", source),
			 errhint("Give a table, stream(table), changes(table) or stream(changes(table)).")));
}

/*
 * The source kind whose sources are written as the word s starts with,
 * followed by "(" (*inner: after it), or NULL.
 */
static const SourceKind *
source_wrapper(char *s, char **inner)
{
	char	   *p = s;
	char		c;
	const SourceKind *kind;

	while (isalpha((unsigned char) *p) || *p == '_')
		p++;
	c = *p;
	*p = '\0';
	kind = p > s ? srckind_by_wrapper(s) : NULL;
	*p = c;
	while (isspace((unsigned char) *p))
		p++;
	*inner = p + 1;
	return *p == '(' ? kind : NULL;
}

/*
 * Strip stream(...) around a source; note the kind a wrapper such as
 * changes(...) gives (srckind.h; none: srckind_default).  Each may be given
 * once, stream() outside: x, stream(x), changes(x), stream(changes(x)).
 */
static char *
parse_source_text(const char *source, const SourceKind **kind)
{
	char	   *s = pstrdup(source);
	char	   *end;
	bool		again = true;
	bool		streamed = false;
	const SourceKind *wrapped = NULL;

	*kind = srckind_default();
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
				if (streamed || wrapped != NULL)
					refuse_nested_source(source);
				end[-1] = '\0';
				s = p + 1;
				again = true;
				streamed = true;
				continue;
			}
		}
		if (end > s && end[-1] == ')')
		{
			char	   *inner;
			const SourceKind *k = source_wrapper(s, &inner);

			if (k != NULL)
			{
				if (wrapped != NULL)
					refuse_nested_source(source);
				end[-1] = '\0';
				s = inner;
				*kind = wrapped = k;
				again = true;
			}
		}
	}
	return s;
}

/*
 * Error if a relation lives in one of autocdc's schemas, or (with system)
 * is a system catalog or in a schema of PostgreSQL's: no flow writes those,
 * and a feed's inserts are decoded, which catalogs' are not.
 */
static void
refuse_reserved(Oid relid, const char *name, const char *what, bool system)
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

/* Is a schema one of PostgreSQL's or autocdc's? */
static bool
reserved_schema(const char *nspname)
{
	Oid			nsp = get_namespace_oid(nspname, true);

	return OidIsValid(nsp) &&
		(IsCatalogNamespace(nsp) || IsToastNamespace(nsp) ||
		 strcmp(nspname, "information_schema") == 0 ||
		 strcmp(nspname, AUTOCDC_SCHEMA) == 0 ||
		 strcmp(nspname, AUTOCDC_STATE_SCHEMA) == 0 ||
		 strcmp(nspname, AUTOCDC_INTERNAL_SCHEMA) == 0);
}

/* Check a source relation's kind and persistence. */
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
				 persistence == RELPERSISTENCE_TEMP ?
				 errhint("Only its own session can read it; use an ordinary table.") :
				 errhint("Its inserts are not written to the WAL; use a logged table, a snapshot flow or once => true.")));
	tablekind_check(relid, TABLE_CHANGE_SOURCE, NULL);
	if (relkind == RELKIND_PARTITIONED_TABLE)
	{
		ListCell   *lc;

		foreach(lc, find_all_inheritors(relid, NoLock, NULL))
		{
			Oid			leaf = lfirst_oid(lc);
			char		k = get_rel_relkind(leaf);

			tablekind_check(leaf, TABLE_CHANGE_SOURCE, NULL);

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

/*
 * A snapshot flow and change flows may write one target only if it is SCD
 * type 1 (scd: the new flow's type, tscd: the target's) and the snapshot
 * version has the sequence's type: a snapshot is then a truncate at its
 * version followed by an upsert of each row, folded with the change events.
 */
static void
check_mix(const char *target, char scd, char tscd, Oid vtype, Oid seqtype)
{
	int32		typmod = -1;

	if (scd != '1' || tscd != '1')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a snapshot flow and change flows cannot write one %s target \"%s\"",
						storage_kind(tscd != '1' ? tscd : scd)->label, target),
				 errhint("Only SCD type 1 targets take both; give the snapshot flow a target of its own.")));
	if (flatten_type(vtype, &typmod) != seqtype)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("snapshot version type %s does not match sequence type %s of target \"%s\"",
						format_type_be(vtype), format_type_be(seqtype), target),
				 errhint("A snapshot's version is ordered against the change flows' sequences: they must have one type (a table or view source is versioned by timestamp with time zone).")));
}

/*
 * A flow joining a known target that a snapshot flow writes, or a snapshot
 * flow joining a target of change flows: one snapshot flow per target, and
 * the mix only as check_mix allows.  A change flow joining a snapshot
 * flow's target that has applied a version v makes the target's hidden
 * state what the fold of that snapshot gives (compare.c).
 */
static void
check_target_free(Definition *d, const char *target)
{
	char	   *other = catalog_snapshot_flow_of(d->tdef.id);
	FlowDef    *snap;

	if (d->spec->kind == FLOW_SNAPSHOT)
	{
		if (other != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("target \"%s\" is written by snapshot flow \"%s\"", target, other),
					 errhint("A target takes at most one snapshot flow; choose another target.")));
		if (catalog_target_flows(d->tdef.id) != NIL)
			check_mix(target, d->kind->code, d->tdef.scd, d->seqtype, d->tdef.seq_type);
		return;
	}
	if (other == NULL)
		return;
	check_mix(target, d->kind->code, d->tdef.scd, d->tdef.seq_type, d->seqtype);
	snap = catalog_load_flow(other, false, false);
	if (snap->snapshot_version != NULL)
		compare_adopt_snapshot(d->tdef.id, d->tdef.seq_type, snap->snapshot_version);
}

/*
 * A change flow into the target that a version function's snapshot flow
 * will create at its first run: the mix only as check_mix allows.
 */
static void
check_pending_snapshot(Definition *d)
{
	char	   *snap = catalog_pending_snapshot_flow(quote_qualified_identifier(d->trv->schemaname,
																				 d->trv->relname));
	FlowDef    *sf;
	Oid			vtype;

	if (snap == NULL)
		return;
	sf = catalog_load_flow(snap, false, false);
	(void) snapsource_resolve(sf, &vtype);
	check_mix(d->spec->target, d->kind->code, sf->scd, vtype, d->seqtype);
}

/*
 * A snapshot flow into an existing relation (vtype: its version type):
 * not one that a snapshot flow writes already; one that change flows
 * write only as check_mix allows.
 */
static void
check_target_unused(Oid target, const char *name, const char *scd, Oid vtype)
{
	char	   *other = catalog_flow_of_relation(target);
	TargetDef	tdef;

	if (other == NULL)
		return;
	if (!catalog_load_target(target, &tdef) || catalog_snapshot_flow_of(tdef.id) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target \"%s\" is already written by flow \"%s\"", name, other),
				 errhint("A target takes at most one snapshot flow; choose another target.")));
	check_mix(name, scd[0], tdef.scd, vtype, tdef.seq_type);
}

/* The storage kind a FlowSpec asks for. */
static void
def_kind(Definition *d)
{
	const char *scd = d->spec->scd ? d->spec->scd : "1";

	if (pg_strcasecmp(scd, "1") == 0)
		d->kind = storage_kind('1');
	else if (pg_strcasecmp(scd, "2") == 0)
		d->kind = storage_kind('2');
	else if (pg_strcasecmp(scd, "bitemporal") == 0)
		d->kind = storage_kind('b');
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown SCD type \"%s\"", scd),
				 errhint("Use '1', '2' or 'bitemporal'.")));
	if (d->kind->code == 'b')
	{
		if (d->spec->system_sequence_by == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a bitemporal flow needs system_sequence_by"),
					 errhint("Give the expression of the time at which each event became known, e.g. system_sequence_by => 'recorded_at' (SYSTEM SEQUENCE BY in the statement form).")));
		if (d->spec->tombstone_retention)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("tombstone_retention is not supported for bitemporal flows"),
					 errdetail("A bitemporal target records every belief; its hidden state keeps every event so that a late one can rewrite them."),
					 errhint("Leave tombstone_retention out.")));
	}
	else if (d->spec->system_sequence_by)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("system_sequence_by is only allowed for bitemporal flows"),
				 errhint("Use stored_as_scd_type => 'bitemporal' (STORED AS BITEMPORAL), or leave system_sequence_by out.")));
}

/*
 * Analyze a sequence expression (sequence_by or system_sequence_by, named
 * by what): a changes() flow's reads only pseudo-columns, and its type, or
 * each field's of a ROW, must have a default btree ordering.
 */
static ExprInfo *
def_sequence_expr(Definition *d, const char *text, const char *what, const char *option)
{
	ExprInfo   *e = expr_analyze(d->source, d->srckind->pseudo_columns, text, what);
	ListCell   *lc;

	if (d->srckind->row_changes && e->reads_source)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the %s of a changes() flow may read only the pseudo-columns _commit_timestamp, _commit_lsn and _change_type", what),
				 errdetail("A delete or truncate event carries no values of the table's other columns, so a sequence over them would have none."),
				 strcmp(option, "sequence_by") == 0 ?
				 errhint("Leave sequence_by out (it defaults to _commit_timestamp), or give _commit_lsn.") :
				 errhint("Give %s => '_commit_timestamp' or '_commit_lsn'.", option)));
	if (e->is_volatile)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the %s of a flow cannot call volatile functions", what),
				 errdetail("A volatile expression such as random() or clock_timestamp() can give another value each time it is evaluated, so it cannot order events."),
				 d->srckind->pseudo_columns ?
				 errhint("Give %s => '_commit_timestamp' or '_commit_lsn'.", option) :
				 errhint("Sequence by a column of the source, or by an expression of immutable or stable functions.")));
	if (e->field_names == NIL && !type_is_orderable(e->typid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("%s type %s has no default btree ordering", what, format_type_be(e->typid)),
				 errhint("Sequence by a column of an orderable type, or by ROW(a, b) of such columns.")));
	foreach(lc, e->field_types)
		if (!type_is_orderable(lfirst_oid(lc)))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("%s field type %s has no default btree ordering", what,
							format_type_be(lfirst_oid(lc)))));
	return e;
}

/* Resolve and check the source named by the spec. */
static void
def_source(Definition *d)
{
	RangeVar   *rv;

	d->srctext = parse_source_text(d->spec->source, &d->srckind);
	if (d->srckind->row_changes && d->reads_once)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a changes() source cannot be read %s",
						d->spec->kind == FLOW_SNAPSHOT ? "by a snapshot flow" : "once"),
				 errhint("changes() follows a table's changes from the WAL; to read what the table holds, give the table itself: source => '%s'.",
						 d->srctext)));
	d->source = resolve_relation(d->srctext, &rv);
	/* messages quote the name: as PostgreSQL shows a RangeVar */
	d->srcname = rv->schemaname ? psprintf("%s.%s", rv->schemaname, rv->relname) : rv->relname;
	if (!OidIsValid(d->source))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("source relation \"%s\" does not exist", d->srcname)));
}

/* Checks of a resolved source, as whoever will own the flow. */
static void
def_check_source(Definition *d)
{
	refuse_reserved(d->source, d->srcname, "source", !d->reads_once);
	check_source_relation(d->source, d->srcname, d->reads_once);
	if (check_enable_rls(d->source, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("source \"%s\" has row-level security enabled", d->srcname),
				 errhint("A flow must read every row of its source; its owner must bypass row-level security.")));
	d->srccols = relation_columns(d->source);
	if (d->srckind->pseudo_columns)
	{
		int			i;

		for (i = 0; i < PSEUDO_NCOLUMNS; i++)
			if (find_column(d->srccols, pseudo_columns[i].name))
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("source \"%s\" has a column \"%s\", the name of a pseudo-column of changes()",
								d->srcname, pseudo_columns[i].name),
						 errhint("Rename the column: every event of a changes() flow carries _change_type, _commit_lsn and _commit_timestamp.")));
	}
	if (!d->srckind->row_changes && !d->reads_once)
	{
		Relation	rel = relation_open(d->source, AccessShareLock);
		bool		has_pk = OidIsValid(compat_RelationGetPrimaryKeyIndex(rel));

		relation_close(rel, AccessShareLock);
		if (has_pk)
			ereport(NOTICE,
					(errmsg("source \"%s\" has a primary key: the flow applies the rows inserted into it, not their updates or deletes",
							d->srcname),
					 errhint("A feed holds one row per change. Updates and deletes of its rows are counted in autocdc.flows (num_ignored_updates, num_ignored_deletes); to follow the table's updates and deletes, give source => 'changes(%s)'.",
							 d->srctext)));
	}
}

/*
 * The target columns a column_list takes from pseudo-columns of a changes()
 * source ("_commit_timestamp AS changed_at"; without AS the target column
 * has the pseudo-column's name): d->tgtcols is the source's columns and
 * those.  Only pseudo-columns can be renamed.
 */
static void
def_pseudo_columns(Definition *d)
{
	ListCell   *lc,
			   *lf;

	forboth(lc, d->collist, lf, d->colfrom)
	{
		const char *name = lfirst(lc);
		const char *from = lfirst(lf);

		if (d->srckind->pseudo_columns && pseudo_column_index(from) >= 0)
		{
			if (find_column(d->srccols, name))
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("target column \"%s\" taken from pseudo-column %s has the name of a column of source \"%s\"",
								name, from, d->srcname),
						 errhint("Give it another name: '%s AS another_name'.", from)));
			if (storage_reserved_column(name))
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("target column \"%s\" clashes with a column autocdc adds", name),
						 errhint("Give it another name: '%s AS another_name'.", from)));
		}
		else if (strcmp(name, from) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("column_list cannot rename column \"%s\" of source \"%s\"", from, d->srcname),
					 errdetail("Only the pseudo-columns of a changes() source (_change_type, _commit_lsn, _commit_timestamp) can be given another name."),
					 errhint("The target's columns have the source's names; rename the column in the target's consumers, e.g. in a view.")));
	}
	d->tgtcols = list_concat(list_copy(d->srccols),
							 d->srckind->pseudo_columns ?
							 pseudo_target_columns(d->collist, d->colfrom) : NIL);
}

/* Keys, the column selection and the tracked columns. */
static void
def_columns(Definition *d)
{
	FlowSpec   *s = d->spec;
	ListCell   *lc;

	d->keys = parse_identifier_array(s->keys, "key");
	d->collist = parse_column_array(s->column_list, &d->colfrom);
	d->exceptlist = parse_identifier_array(s->except_column_list, "column");
	d->tracklist = parse_identifier_array(s->track_list, "track history column");
	d->trackexcept = parse_identifier_array(s->track_except_list, "track history column");
	if (d->keys == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a flow needs at least one key column")));
	if (s->column_list && s->except_column_list)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("column_list and except_column_list cannot both be given")));
	if (s->track_list && s->track_except_list)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("track_history_column_list and track_history_except_column_list cannot both be given")));
	if ((s->track_list || s->track_except_list) && !d->kind->tracks_history)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("history tracking lists are only allowed for SCD type 2 flows"),
				 errhint("Add stored_as_scd_type => '2', or drop the tracking list.")));
	def_pseudo_columns(d);
	foreach(lc, list_concat(list_concat(list_copy(d->keys), d->colfrom), d->exceptlist))
		if (!find_column(d->srccols, lfirst(lc)) &&
			!(d->srckind->pseudo_columns && pseudo_column_index(lfirst(lc)) >= 0 &&
			  !name_in_list(d->keys, lfirst(lc)) && !name_in_list(d->exceptlist, lfirst(lc))))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" does not exist in source \"%s\"",
							(char *) lfirst(lc), d->srcname),
					 pseudo_column_index(lfirst(lc)) >= 0 && !d->srckind->pseudo_columns ?
					 errhint("Pseudo-columns belong to changes() sources.") : 0));
	foreach(lc, d->tgtcols)
	{
		ColInfo    *c = lfirst(lc);

		if (s->column_list && !name_in_list(d->collist, c->name))
			continue;
		if (name_in_list(d->exceptlist, c->name))
			continue;
		if (storage_reserved_column(c->name))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("source column \"%s\" clashes with a column autocdc adds", c->name),
					 errhint("Leave it out with except_column_list.")));
		d->selected = lappend(d->selected, c->name);
		if (find_column(d->srccols, c->name))
			d->readcols = lappend(d->readcols, c->name);
		if (!name_in_list(d->keys, c->name))
			d->datacols = lappend(d->datacols, c->name);
	}
	foreach(lc, d->keys)
	{
		ColInfo    *c = find_column(d->srccols, lfirst(lc));

		if (!name_in_list(d->selected, c->name))
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

	/* tracking: all non-key columns unless a list says otherwise (maybe none) */
	d->track_all = !(s->track_list || s->track_except_list);
	if (!d->kind->tracks_history)
		return;
	foreach(lc, list_concat(list_copy(d->tracklist), d->trackexcept))
		if (!name_in_list(d->datacols, lfirst(lc)))
			ereport(ERROR,
					(errcode(find_column(d->srccols, lfirst(lc)) ? ERRCODE_INVALID_PARAMETER_VALUE :
							 ERRCODE_UNDEFINED_COLUMN),
					 errmsg("track history column \"%s\" is not a selected non-key column of source \"%s\"",
							(char *) lfirst(lc), d->srcname)));
	if (!d->track_all)
		foreach(lc, d->datacols)
			if (s->track_list ? name_in_list(d->tracklist, lfirst(lc)) :
				!name_in_list(d->trackexcept, lfirst(lc)))
				d->track = lappend(d->track, lfirst(lc));
}

/*
 * Partial updates: at most one of ignore_null_updates, its two column lists
 * and columns_to_update; not for bitemporal flows (but ignore_null_updates);
 * the lists name selected non-key columns.
 */
static void
def_partial(Definition *d)
{
	FlowSpec   *s = d->spec;
	const char *given[4];
	int			n = 0;
	ListCell   *lc;

	if (s->ignore_nulls)
		given[n++] = "ignore_null_updates";
	if (s->inu_list)
		given[n++] = "ignore_null_updates_column_list";
	if (s->inu_except_list)
		given[n++] = "ignore_null_updates_except_column_list";
	if (s->columns_to_update)
		given[n++] = "columns_to_update";
	if (n > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s and %s cannot both be given", given[0], given[1]),
				 errhint("Each names which columns an upsert writes: give one of them.")));
	if (n == 0 || s->ignore_nulls)
		return;
	if (d->kind->code == 'b')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s is not supported for bitemporal flows", given[0]),
				 errhint("Use ignore_null_updates, or store the flow as SCD type 1 or 2.")));
	if (s->columns_to_update)
	{
		ColInfo    *c;

		d->ctucol = parse_identifier(s->columns_to_update, "column");
		c = find_column(d->srccols, d->ctucol);
		if (c == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" does not exist in source \"%s\"", d->ctucol, d->srcname),
					 errhint("columns_to_update names a column of the source (text[] or name[]) that lists, per upsert, the columns it writes.")));
		if (c->typid != TEXTARRAYOID && c->typid != NAMEARRAYOID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("columns_to_update column \"%s\" of source \"%s\" has type %s",
							d->ctucol, d->srcname, format_type_be(c->typid)),
					 errhint("It must be text[] or name[]: the names of the columns each upsert writes.")));
		return;
	}
	d->inulist = parse_identifier_array(s->inu_list, "ignore null updates column");
	d->inuexcept = parse_identifier_array(s->inu_except_list, "ignore null updates column");
	foreach(lc, list_concat(list_copy(d->inulist), d->inuexcept))
		if (!name_in_list(d->datacols, lfirst(lc)))
			ereport(ERROR,
					(errcode(find_column(d->srccols, lfirst(lc)) ? ERRCODE_INVALID_PARAMETER_VALUE :
							 ERRCODE_UNDEFINED_COLUMN),
					 errmsg("ignore null updates column \"%s\" is not a selected non-key column of source \"%s\"",
							(char *) lfirst(lc), d->srcname)));
}

/* The columns of an index (attribute numbers; 0 for an expression). */
static List *
index_columns(Oid indexoid, Form_pg_index *form, HeapTuple *tup)
{
	HeapTuple	t = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
	Form_pg_index ix;
	List	   *cols = NIL;
	int			i;

	if (!HeapTupleIsValid(t))
		elog(ERROR, "cache lookup failed for index %u", indexoid);
	ix = (Form_pg_index) GETSTRUCT(t);
	for (i = 0; i < ix->indnkeyatts; i++)
		cols = lappend_int(cols, ix->indkey.values[i]);
	*form = ix;
	*tup = t;
	return cols;
}

/*
 * A changes() flow's check of one table that holds the source's rows (the
 * source, or a leaf partition of it): every key column in the replica
 * identity PostgreSQL uses for it.
 */
static void
check_leaf_identity(Definition *d, Oid leaf)
{
	Relation	rel = relation_open(leaf, AccessShareLock);
	char		ident = rel->rd_rel->relreplident;
	Oid			identindex = RelationGetReplicaIndex(rel);
	List	   *identcols = NIL;
	ListCell   *lc;
	char	   *qname = qualified_relname(leaf);
	char	   *where = leaf == d->source ? psprintf("source \"%s\"", d->srcname) :
		psprintf("partition \"%s\" of source \"%s\"", get_rel_name(leaf), d->srcname);

	if (ident == REPLICA_IDENTITY_FULL)
	{
		relation_close(rel, NoLock);
		return;
	}
	if (OidIsValid(identindex))
	{
		Form_pg_index ix;
		HeapTuple	tup;

		identcols = index_columns(identindex, &ix, &tup);
		ReleaseSysCache(tup);
	}
	foreach(lc, d->keys)
	{
		AttrNumber	att = get_attnum(leaf, lfirst(lc));

		if (!list_member_int(identcols, att))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("key column \"%s\" of %s is not part of its replica identity",
							(char *) lfirst(lc), where),
					 errdetail("%sPostgreSQL writes only the replica identity's columns of a deleted row to the WAL, so the flow could not tell which key was deleted.",
							   ident == REPLICA_IDENTITY_NOTHING ? "The table's replica identity is NOTHING. " :
							   !OidIsValid(identindex) ?
							   (ident == REPLICA_IDENTITY_DEFAULT ?
								"The table has no primary key that can serve as its replica identity (a deferrable one cannot). " :
								"The table's replica identity index is gone. ") : ""),
					 leaf == d->source ?
					 errhint("Give the table a primary key (not deferrable) on the keys, or ALTER TABLE %s REPLICA IDENTITY USING INDEX on a unique index of the keys, or REPLICA IDENTITY FULL.",
							 qname) :
					 errhint("Give the partition a primary key (not deferrable) on the keys, or ALTER TABLE %s REPLICA IDENTITY USING INDEX on a unique index of the keys, or REPLICA IDENTITY FULL (the parent's replica identity does not reach its partitions).",
							 qname)));
	}
	relation_close(rel, NoLock);
}

/*
 * What a changes() source must offer for its keys: some unique, immediate,
 * non-partial index whose columns are all keys (so that a key names one
 * row), key columns that are NOT NULL, and a replica identity (the one
 * PostgreSQL actually uses) that holds every key column, so that the WAL of
 * a delete and of a key-changing update names the old key.
 */
static void
def_changes_keys(Definition *d)
{
	Relation	rel = relation_open(d->source, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	ListCell   *lc;
	char	   *qname = qualified_relname(d->source);

	if (!relation_has_unique_key_index(d->source, d->keys))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("source \"%s\" has no unique index on the flow's keys", d->srcname),
				 errdetail("A changes() flow needs a unique, immediate (not deferrable), non-partial index whose columns are all among its keys, so that a key names one row of the table."),
				 errhint("Choose the columns of the table's primary key as keys, or create a unique index on the keys.")));
	foreach(lc, d->keys)
	{
		ColInfo    *c = find_column(d->srccols, lfirst(lc));

		if (!TupleDescAttr(desc, get_attnum(d->source, c->name) - 1)->attnotnull)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("key column \"%s\" of source \"%s\" may be NULL", c->name, d->srcname),
					 errdetail("A changes() flow keys each row of the table by its keys, which must have a value."),
					 errhint("ALTER TABLE %s ALTER COLUMN %s SET NOT NULL.", qname,
							 quote_identifier(c->name))));
	}
	relation_close(rel, NoLock);

	/* the replica identity of every leaf ("parent REPLICA IDENTITY" reaches none) */
	if (get_rel_relkind(d->source) != RELKIND_PARTITIONED_TABLE)
		check_leaf_identity(d, d->source);
	else
		foreach(lc, find_all_inheritors(d->source, AccessShareLock, NULL))
			if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION)
				check_leaf_identity(d, lfirst_oid(lc));
}

/* The expressions, checked against the source with the caller's search_path. */
static void
def_expressions(Definition *d)
{
	FlowSpec   *s = d->spec;
	StringInfoData sql;

	/* the defaults of the source's kind (a changes() source has them) */
	if (s->sequence_by == NULL)
		s->sequence_by = d->srckind->default_sequence_by;
	if (s->deletes == NULL)
		s->deletes = d->srckind->default_deletes;
	if (s->truncates == NULL)
		s->truncates = d->srckind->default_truncates;
	if (s->sequence_by == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sequence_by is required for a feed source")));
	d->seq = def_sequence_expr(d, s->sequence_by, "sequence", "sequence_by");
	if (s->system_sequence_by)
		d->sysseq = def_sequence_expr(d, s->system_sequence_by, "system sequence",
									  "system_sequence_by");
	if (s->deletes)
	{
		d->del = expr_analyze(d->source, d->srckind->pseudo_columns, s->deletes, "apply_as_deletes");
		if (d->del->typid != BOOLOID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("apply_as_deletes must be a boolean expression, not type %s",
							format_type_be(d->del->typid))));
	}
	if (s->truncates)
	{
		d->trunc = expr_analyze(d->source, d->srckind->pseudo_columns, s->truncates,
								 "apply_as_truncates");
		if (d->trunc->typid != BOOLOID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("apply_as_truncates must be a boolean expression, not type %s",
							format_type_be(d->trunc->typid))));
	}

	/* the caller must be able to read what the flow reads */
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s, (%s)%s%s%s%s%s%s FROM %s LIMIT 0",
					 quoted_list(d->readcols), d->seq->normalized,
					 d->sysseq ? ", " : "", d->sysseq ? d->sysseq->normalized : "",
					 d->del ? ", " : "", d->del ? d->del->normalized : "",
					 d->trunc ? ", " : "", d->trunc ? d->trunc->normalized : "",
					 expr_from_list(d->source, d->srckind->pseudo_columns, NULL));
	check_caller_reads(sql.data, d->srcname);
}

/* Resolve the target's name (caller's search_path) and the flow's name. */
static void
def_target_name(Definition *d)
{
	d->target = resolve_relation(d->spec->target, &d->trv);
	if (d->trv->schemaname == NULL)
		d->trv->schemaname = get_namespace_name(RangeVarGetCreationNamespace(d->trv));
	if (OidIsValid(d->target))
		refuse_reserved(d->target, d->spec->target, "target", true);
	else if (reserved_schema(d->trv->schemaname))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("target \"%s\" would be created in system or autocdc schema \"%s\"",
						d->spec->target, d->trv->schemaname),
				 errhint("Flows read and write tables of your own schemas.")));
	if (OidIsValid(d->target) && d->target == d->source)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target \"%s\" is the flow's source", d->spec->target)));
	d->flowname = pstrdup(d->spec->name ? d->spec->name : d->trv->relname);
}

/*
 * Refuse a flow that would close a cycle of flows: one whose target is,
 * through the flows that read it and the targets they write, the source
 * of this very flow (its events would come back to it without end).
 */
static void
check_no_cycle(Definition *d)
{
	List	   *todo;
	List	   *seen = NIL;
	LOCKTAG		tag;

	if (!OidIsValid(d->target))
		return;					/* a new table is nobody's source */

	/*
	 * Two flows created at once could close a cycle between them: the
	 * second waits for the first to commit, and reads the flows then.
	 */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, 0, AUTOCDC_LOCK_GRAPH);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	todo = list_make1_oid(d->target);
	while (todo != NIL)
	{
		Oid			rel = linitial_oid(todo);
		ListCell   *lc;

		todo = list_delete_first(todo);
		if (list_member_oid(seen, rel))
			continue;
		seen = lappend_oid(seen, rel);
		foreach(lc, catalog_flow_targets_of(rel))
		{
			if (lfirst_oid(lc) == d->source)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("flow \"%s\" would close a cycle of flows", d->flowname),
						 errdetail("Its target \"%s\" is, through other flows, the source of \"%s\", which it reads.",
								   d->spec->target, get_rel_name(lfirst_oid(lc))),
						 errhint("A flow may not read, through other flows, what it writes: give it another target, or another source.")));
			todo = lappend_oid(todo, lfirst_oid(lc));
		}
	}
}

/*
 * Warn about a user publication FOR ALL TABLES: pgoutput forwards the
 * writes of autocdc's hidden state to its subscribers, whatever their
 * origin, and PostgreSQL 15 cannot keep those tables out of it.
 */
static void
warn_all_tables_publications(void)
{
	uint64		i;

	spi_exec("SELECT pubname FROM pg_catalog.pg_publication WHERE puballtables "
			 "AND pubname OPERATOR(pg_catalog.<>) '" AUTOCDC_PUBLICATION "' ORDER BY pubname",
			 SPI_OK_SELECT);
	for (i = 0; i < SPI_processed; i++)
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("publication \"%s\" publishes all tables, also autocdc's hidden state",
						SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1)),
				 errdetail("Its subscribers receive every write autocdc makes to its tables in schema %s.",
						   AUTOCDC_STATE_SCHEMA),
				 errhint("Publish the tables meant for subscribers by name (CREATE PUBLICATION ... FOR TABLE ...).")));
}

/*
 * Warn when a flow into a target other flows write too has truncates (or
 * the others have): a truncate event deletes every key of the target,
 * also the keys the other flows wrote.
 */
static void
warn_shared_truncates(Definition *d)
{
	ListCell   *lc;
	bool		truncates = d->trunc != NULL;
	List	   *others;

	if (!d->target_known)
		return;
	others = catalog_target_flows(d->tdef.id);
	foreach(lc, others)
	{
		FlowDef    *f = catalog_load_flow(lfirst(lc), false, true);

		if (f != NULL && f->truncates != NULL)
			truncates = true;
	}
	if (truncates && others != NIL)
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("target \"%s\" is written by several flows, and a truncate event of one deletes every key of it",
						d->spec->target),
				 errdetail("Keys the other flows wrote are deleted too."),
				 errhint("Give apply_as_truncates => 'false' to the flows whose truncates should not empty the target, or write one target per source.")));
}

/* Refuse a name another flow has (the hint in the caller's syntax). */
static void
check_new_name(const char *flowname, bool from_statement)
{
	if (catalog_flow_exists(flowname))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("flow \"%s\" already exists", flowname),
				 from_statement ?
				 errhint("Give the flow another name (CREATE FLOW other_name AS ...), or drop the existing flow first with DROP FLOW %s.",
						 quote_identifier(flowname)) :
				 errhint("Give the flow another name with name => '...', or drop the existing flow first.")));
}

/*
 * The type of a sequence expression; a ROW(...) one gets a composite type
 * <target><suffix>, and its expression a cast to it.  Sets *typname to the
 * composite's name (or leaves it).
 */
static Oid
sequence_type(Definition *d, ExprInfo *seq, const char *suffix, char **typnamep)
{
	char	   *typname;
	char	   *tschema = d->trv->schemaname;
	Oid			existing;
	StringInfoData sql;
	ListCell   *lc,
			   *lt,
			   *lm,
			   *lcoll;

	if (seq->field_names == NIL)
	{
		int32		typmod = seq->typmod;

		return flatten_type(seq->typid, &typmod);
	}
	typname = psprintf("%s%s", d->trv->relname, suffix);
	existing = type_in_schema(tschema, typname);
	*typnamep = typname;
	if (!OidIsValid(existing))
	{
		initStringInfo(&sql);
		appendStringInfo(&sql, "CREATE TYPE %s AS (", quote_qualified_identifier(tschema, typname));
		forfour(lc, seq->field_names, lt, seq->field_types, lm, seq->field_typmods,
				lcoll, seq->field_colls)
		{
			int32		typmod = lfirst_int(lm);
			Oid			typid = flatten_type(lfirst_oid(lt), &typmod);

			appendStringInfo(&sql, "%s%s", lc == list_head(seq->field_names) ? "" : ", ",
							 column_definition(lfirst(lc), typid, typmod, lfirst_oid(lcoll)));
		}
		appendStringInfoString(&sql, ")");
		spi_exec(sql.data, SPI_OK_UTILITY);
		CommandCounterIncrement();
		existing = type_in_schema(tschema, typname);
	}
	seq->normalized = psprintf("(%s)::%s", seq->normalized, format_type_be_qualified(existing));
	return existing;
}

/*
 * Refuse a sequence type (what: "sequence" or "system sequence") that
 * carries another role's domain: its period and hidden-state columns would
 * run that role's code as the flow's owner.
 */
static void
check_sequence_code(Oid typid, const char *what)
{
	Oid			foreign = type_foreign_code(typid, GetUserId());

	if (OidIsValid(foreign))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the %s has type %s, which carries a domain of role %s", what,
						format_type_be(typid),
						quote_identifier(GetUserNameFromId(type_owner(foreign), false))),
				 errdetail("A domain's DEFAULT and CHECK are its owner's code, and would run as the flow's owner. "
						   "autocdc stores domains as their base types, but cannot inside composite or range types (here %s).",
						   format_type_be(foreign)),
				 errhint("Sequence by ROW(...) of the type's fields, or by a value of a type owned by the flow's owner.")));
}

/*
 * The types of the sequences, domains flattened: <target>_seq,
 * <target>_sysseq for ROW ones.
 */
static void
def_sequence_type(Definition *d)
{
	d->seqtype = sequence_type(d, d->seq, "_seq", &d->seqtypname);
	check_sequence_code(d->seqtype, "sequence");
	if (d->sysseq)
	{
		d->sysseqtype = sequence_type(d, d->sysseq, "_sysseq", &d->sysseqtypname);
		check_sequence_code(d->sysseqtype, "system sequence");
	}
}

/*
 * Does the flow fold its events in the order they arrive?  An SCD 1
 * changes() flow sequenced by _commit_timestamp (raised to increase strictly
 * along arrival) without ignore_null_updates: each event of a key is later
 * than every earlier one, the last decides, so the target row is all a run
 * needs.  Alone in its target, such a flow keeps no per-key hidden state (no
 * event values, tombstones or truncates), which halves what a run writes.
 * Under _commit_lsn a transaction that committed before a first read's
 * snapshot was taken but is not in it arrives later with a smaller
 * sequence, so that one keeps state.
 */
static bool
def_commit_ordered(Definition *d)
{
	return d->spec->kind == FLOW_CDC && d->srckind->row_changes && d->kind->code == '1' &&
		!d->spec->ignore_nulls && !d->spec->inu_list && !d->spec->inu_except_list &&
		!d->spec->columns_to_update && strcmp(d->seq->normalized, "_commit_timestamp") == 0;
}

/*
 * A target without hidden state takes no second flow: its keys' sequences
 * are not known, so another flow's events could not be judged against them.
 * A flow joining such a target that no flow writes any more makes it keep
 * state from then on, unless it folds in arrival order too.
 */
static void
check_target_state(Definition *d, const char *name)
{
	List	   *others;

	if (d->tdef.keeps_state)
		return;
	others = catalog_target_flows(d->tdef.id);
	if (others != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("target \"%s\" is written by flow \"%s\", which keeps no hidden state",
						name, (char *) linitial(others)),
				 errdetail("An SCD 1 changes() flow sequenced by _commit_timestamp that alone writes its target keeps no per-key hidden state, so the events of another flow could not be judged against it."),
				 errhint("Drop flow \"%s\" and create the other flows into the target first: a changes() flow that joins them keeps hidden state.",
						 (char *) linitial(others))));
	if (!def_commit_ordered(d))
	{
		catalog_set_target_keeps_state(d->tdef.id);
		d->tdef.keeps_state = true;
	}
}

/*
 * The target: an existing one must fit (and agree with the flows into it,
 * if autocdc knows it); a missing one is created, in the calling
 * transaction, as the caller.
 */
static void
def_target(Definition *d)
{
	const char *name = d->spec->target;
	ListCell   *lc;

	if (d->spec->kind != FLOW_SNAPSHOT)
		check_pending_snapshot(d);
	if (!OidIsValid(d->target))
	{
		d->target = storage_create_target(d->trv->schemaname, d->trv->relname, d->srcname,
										  d->tgtcols, d->selected, d->kind, d->keys, d->seqtype,
										  d->sysseqtype);
		if (d->spec->distributed_by)
			storage_distribute_target(d->target, d->spec->distributed_by, d->keys);
		return;
	}
	if (d->spec->distributed_by)
		storage_check_distributed_by(d->target, d->spec->distributed_by);
	if (!compat_class_ownercheck(d->target, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of target \"%s\"", name)));
	tablekind_check(d->target, TABLE_TARGET, NULL);
	storage_check_partitions_owned(d->target);
	if (catalog_load_target(d->target, &d->tdef))
	{
		bool		same_keys = list_length(d->tdef.keys) == list_length(d->keys);
		Oid			state = storage_state_relid(d->tdef.id);

		d->target_known = true;
		if (OidIsValid(state))
			tablekind_check(state, TABLE_STATE, NULL);
		check_target_free(d, name);
		check_target_state(d, name);
		foreach(lc, d->keys)
			same_keys = same_keys && name_in_list(d->tdef.keys, lfirst(lc));
		if (d->tdef.scd != d->kind->code || !same_keys || d->tdef.seq_type != d->seqtype ||
			d->tdef.sysseq_type != d->sysseqtype)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("flow \"%s\" does not agree with the other flows into target \"%s\"",
							d->flowname, name),
					 errhint("Flows into one target must use the same keys, SCD type and sequence type.")));
	}
	storage_check_distribution(d->target_known ? d->tdef.id : 0, d->target, d->keys, NULL);
	storage_check_target(d->target, name, d->srcname, d->tgtcols, d->selected, d->kind,
						 d->seqtype, d->sysseqtype);
}

/* The target's catalog row and hidden state, when it is new to autocdc. */
static void
def_record_target(Definition *d)
{
	ListCell   *lc;

	if (d->target_known)
		return;
	memset(&d->tdef, 0, sizeof(TargetDef));
	d->tdef.relid = d->target;
	d->tdef.scd = d->kind->code;
	d->tdef.keys = d->keys;
	d->tdef.seq_type = d->seqtype;
	d->tdef.seq_typname = d->seqtypname;
	d->tdef.sysseq_type = d->sysseqtype;
	d->tdef.sysseq_typname = d->sysseqtypname;
	d->tdef.range_typname = NULL;	/* autocdc.create_as_of_index makes one */
	d->tdef.keeps_state = !def_commit_ordered(d);
	foreach(lc, relation_columns(d->target))
	{
		ColInfo    *c = lfirst(lc);

		if (!storage_reserved_column(c->name))
			d->tdef.columns = lappend(d->tdef.columns, c->name);
	}
	catalog_insert_target(&d->tdef);
	storage_create_state(d->tdef.id, d->target, d->seqtype, d->sysseqtype, d->keys);
}

/* The FlowDef of a defined flow, for the catalog. */
static FlowDef *
def_flowdef(Definition *d)
{
	FlowDef    *f = palloc0(sizeof(FlowDef));

	f->name = d->flowname;
	f->owner = GetUserId();
	f->kind = d->spec->kind;
	f->source = d->source;
	/* as written, without stream() */
	f->source_text = d->srckind->wrapped ?
		psprintf("%s(%s)", d->srckind->name, d->srctext) : pstrdup(d->srctext);
	f->srckind = d->srckind;
	f->once = d->spec->once;
	f->target_id = d->tdef.id;
	f->scd = d->kind->code;
	f->keys = d->keys;
	f->sequence_by = d->seq->normalized;
	f->system_sequence_by = d->sysseq ? d->sysseq->normalized : NULL;
	f->deletes = d->del ? d->del->normalized : NULL;
	f->truncates = d->trunc ? d->trunc->normalized : NULL;
	f->ignore_nulls = d->spec->ignore_nulls;
	f->columns = d->selected;
	f->has_include = d->spec->column_list != NULL;
	f->col_include = d->collist;
	f->col_from = d->colfrom;
	f->col_except = d->exceptlist;
	f->track_all = d->track_all;
	f->track = d->track;
	f->has_track_include = d->spec->track_list != NULL;
	f->track_include = d->tracklist;
	f->track_except = d->trackexcept;
	f->has_inu_include = d->spec->inu_list != NULL;
	f->inu_include = d->inulist;
	f->has_inu_except = d->spec->inu_except_list != NULL;
	f->inu_except = d->inuexcept;
	f->columns_to_update = d->ctucol;
	f->continuous = d->spec->continuous;
	f->tombstone_retention = d->spec->tombstone_retention ? pstrdup(d->spec->tombstone_retention) : NULL;
	return f;
}

/*
 * Validate a change flow (or a snapshot flow reading a table or view),
 * create its target and hidden state when missing, and record it; returns
 * the flow's name.  SPI connected.
 */
static char *
define_from(FlowSpec *spec)
{
	Definition	d;
	int			level;

	memset(&d, 0, sizeof(d));
	d.spec = spec;
	d.reads_once = spec->once || spec->kind == FLOW_SNAPSHOT;
	def_kind(&d);
	def_source(&d);
	def_check_source(&d);
	def_columns(&d);
	def_partial(&d);
	if (d.srckind->row_changes)
		def_changes_keys(&d);
	def_expressions(&d);
	def_target_name(&d);
	level = set_safe_search_path();
	check_new_name(d.flowname, spec->from_statement);
	check_no_cycle(&d);
	def_sequence_type(&d);
	def_target(&d);
	def_record_target(&d);
	if (d.ctucol)
		storage_state_add_written(d.tdef.id);
	if (!d.reads_once)
	{
		warn_shared_truncates(&d);
		warn_all_tables_publications();
	}
	catalog_insert_flow(def_flowdef(&d));
	AtEOXact_GUC(true, level);
	return d.flowname;
}

/* Validate and record a change flow (SPI connected); returns its name. */
char *
define_flow(FlowSpec *spec)
{
	spec->kind = FLOW_CDC;
	if (spec->tombstone_retention)
	{
		Interval   *zero = palloc0(sizeof(Interval));
		Datum		r = DirectFunctionCall3(interval_in, CStringGetDatum(spec->tombstone_retention),
										   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));

		if (DatumGetInt32(DirectFunctionCall2(interval_cmp, r, IntervalPGetDatum(zero))) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("tombstone_retention must not be negative"),
					 errhint("Give how long delete markers are kept, e.g. '30 days', or NULL to keep them forever.")));
	}
	return define_from(spec);
}

/*
 * Check a snapshot flow's options: one source, SCD type 1 or 2, at least one
 * key, and history tracking lists only for SCD type 2.
 */
static void
check_snapshot_options(FlowSpec *spec, const char *scd)
{
	if ((spec->source != NULL) + (spec->source_function != NULL) + (spec->source_query != NULL) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a snapshot flow needs exactly one of source, source_function and source_query"),
				 errhint("Give a table or view as source => '...', a version function as source_function => 'f(bigint)', or a SELECT as source_query => '...'.")));
	if (spec->version_query != NULL && spec->source_query == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("version_query is only allowed with source_query"),
				 errhint("A version query names the next version of a snapshot query; give the snapshot as source_query => '...'.")));
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
	if (spec->track_list && spec->track_except_list)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("track_history_column_list and track_history_except_column_list cannot both be given"),
				 errhint("Give either the columns whose changes open a new version or the columns whose changes do not.")));
	if (ArrayGetNItems(ARR_NDIM(spec->keys), ARR_DIMS(spec->keys)) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a flow needs at least one key column"),
				 errhint("Give the columns that identify a row of the snapshots, e.g. keys => '{id}'.")));
	if ((spec->track_list || spec->track_except_list) && scd[0] != '2')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("history tracking lists are only allowed for SCD type 2 flows"),
				 errhint("Add stored_as_scd_type => '2', or drop the tracking list.")));
}

/*
 * Define a snapshot flow over a table or view: a change flow that reads its
 * source whole, versioned by each run's transaction time.
 */
static char *
define_snapshot_table(FlowSpec *spec)
{
	List	   *snames = name_list_or_nil(spec->source);
	Oid			source = InvalidOid;

	if (snames != NIL && list_length(snames) <= 2)
		source = RangeVarGetRelid(makeRangeVarFromNameList(snames), NoLock, true);
	if (OidIsValid(source) && get_rel_persistence(source) == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("snapshot source \"%s\" is a temporary table", spec->source),
				 errhint("The background worker cannot read another session's temporary tables; use an ordinary or unlogged table or a view.")));
	spec->sequence_by = "pg_catalog.transaction_timestamp()";
	return define_from(spec);
}

/*
 * Check a snapshot flow's version function, and the caller's right to call
 * it; return it.
 */
static Oid
check_version_function(FlowSpec *spec)
{
	Oid			fn = snapsource_lookup(spec->source_function);

	if (!OidIsValid(fn))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("version function %s does not exist", spec->source_function),
				 strchr(spec->source_function, '(') == NULL ?
				 errhint("Give the function's name and argument type, e.g. source_function => 'next_snapshot(bigint)'.") :
				 errhint("Create it first (or check its schema and argument type): it takes the last version applied, NULL at first, and returns the next snapshot and its version, e.g. RETURNS TABLE (snapshot regclass, version bigint).")));
	(void) snapsource_check_function(fn, spec->source_function);
	if (compat_proc_aclcheck(fn, GetUserId(), ACL_EXECUTE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for version function %s", spec->source_function),
				 errhint("The flow owner needs EXECUTE on the version function.")));
	return fn;
}

/*
 * A query's flow creates its target at once, from the query's columns (its
 * shape is known): read it with no rows.
 */
static void
define_query_target(const char *name)
{
	FlowDef    *flow;
	Oid			snapshot;
	int			level = set_safe_search_path();

	CommandCounterIncrement();
	flow = catalog_load_flow(name, false, false);
	snapshot = snapsource_query_snapshot(flow, (Datum) 0, false);
	define_snapshot_target(flow, snapshot,
						   OidIsValid(flow->version_type) ? flow->version_type : TIMESTAMPTZOID);
	snapsource_query_done();
	AtEOXact_GUC(true, level);
}

/*
 * Define a snapshot flow over a version function or a query (target
 * resolved as trv, InvalidOid if it does not exist yet): the first
 * snapshot the function returns creates the target; a query's flow creates
 * it now.
 */
static char *
define_snapshot_function(FlowSpec *spec, const char *scd, Oid target, RangeVar *trv)
{
	FlowDef    *f = palloc0(sizeof(FlowDef));
	Oid			fn = InvalidOid;
	int			level;

	f->srckind = srckind_default();	/* stored as every snapshot flow's kind */
	f->name = pstrdup(spec->name ? spec->name : trv->relname);
	if (spec->source_query != NULL)
		snapsource_define_queries(f->name, spec->source_query, spec->version_query,
								  &f->source_query, &f->version_query, &f->version_type);
	else
		fn = check_version_function(spec);
	f->keys = parse_identifier_array(spec->keys, "key");
	f->track_include = parse_identifier_array(spec->track_list, "track history column");
	f->has_track_include = spec->track_list != NULL;
	f->track_except = parse_identifier_array(spec->track_except_list, "track history column");
	if (OidIsValid(target))
	{
		tablekind_check(target, TABLE_TARGET, NULL);
		if (!compat_class_ownercheck(target, GetUserId()))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("must be owner of target \"%s\"", trv->relname)));
		storage_check_partitions_owned(target);
		storage_check_distribution(0, target, f->keys, NULL);
	}
	else if (compat_namespace_aclcheck(get_namespace_oid(trv->schemaname, false), GetUserId(),
									   ACL_CREATE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for schema %s", trv->schemaname),
				 errhint("The flow owner needs CREATE on the target's schema: its first run creates the target.")));
	level = set_safe_search_path();
	f->owner = GetUserId();
	f->kind = FLOW_SNAPSHOT;
	if (spec->source_query == NULL)
	{
		f->source_function = format_procedure_qualified(fn);
		f->source_text = f->source_function;
	}
	else
		f->source_text = spec->version_query == NULL ? psprintf("(%s)", spec->source_query) :
			psprintf("(%s) WITH VERSION (%s)", spec->source_query, spec->version_query);
	f->scd = scd[0];
	f->sequence_by = "version";
	f->track_all = true;
	f->continuous = spec->continuous;
	f->once = spec->once;
	f->snapshot_target = quote_qualified_identifier(trv->schemaname, trv->relname);
	check_new_name(f->name, spec->from_statement);
	catalog_insert_flow(f);
	AtEOXact_GUC(true, level);
	if (spec->source_query != NULL)
		define_query_target(f->name);
	return f->name;
}

/*
 * Validate and record a snapshot flow (SPI connected); returns its name.
 * A table or view source is defined like a change flow that reads its
 * source whole, versioned by each run's transaction time; a version
 * function's flow has no target until its first snapshot.
 */
char *
define_snapshot_flow(FlowSpec *spec)
{
	const char *scd = spec->scd ? spec->scd : "1";
	RangeVar   *trv;
	Oid			target;

	spec->kind = FLOW_SNAPSHOT;
	check_snapshot_options(spec, scd);

	/* the target, resolved with the caller's search_path */
	target = resolve_relation(spec->target, &trv);
	if (trv->schemaname == NULL)
		trv->schemaname = get_namespace_name(RangeVarGetCreationNamespace(trv));
	if (OidIsValid(target))
	{
		/* (a version query's type is known once it is analyzed: def_target checks it) */
		Oid			vtype = spec->version_query != NULL ? InvalidOid : TIMESTAMPTZOID;

		if (spec->source_function != NULL)
		{
			Oid			fn = snapsource_lookup(spec->source_function);

			vtype = OidIsValid(fn) ? snapsource_check_function(fn, spec->source_function) :
				InvalidOid;
		}
		if (OidIsValid(vtype))
			check_target_unused(target, spec->target, scd, vtype);
	}

	if (spec->source != NULL)
		return define_snapshot_table(spec);
	/* a version function or a query: a snapshot creates the target */
	return define_snapshot_function(spec, scd, target, trv);
}

/*
 * The first snapshot of a version-function flow creates its target from
 * the snapshot's columns, and its hidden state (as the flow's owner, who
 * is the current user); the flow is then reloaded.
 */
void
define_snapshot_target(FlowDef *flow, Oid snapshot, Oid vtype)
{
	Definition	d;
	FlowSpec	spec;
	FlowDef    *reloaded;

	memset(&d, 0, sizeof(d));
	memset(&spec, 0, sizeof(spec));
	spec.kind = FLOW_SNAPSHOT;
	spec.target = flow->snapshot_target;
	spec.source = qualified_relname(snapshot);
	spec.keys = DatumGetArrayTypeP(quoted_text_array(flow->keys));
	spec.scd = psprintf("%c", flow->scd);
	spec.sequence_by = psprintf("NULL::%s", format_type_be_qualified(vtype));
	spec.name = flow->name;
	d.spec = &spec;
	d.reads_once = true;
	d.srckind = srckind_default();	/* a table read whole */
	def_kind(&d);
	d.source = snapshot;
	/* a snapshot query's temporary table (snapsource.c) goes by its name */
	d.srcname = isAnyTempNamespace(get_rel_namespace(snapshot)) ? get_rel_name(snapshot) :
		psprintf("%s.%s", get_namespace_name(get_rel_namespace(snapshot)),
				 get_rel_name(snapshot));
	def_check_source(&d);
	def_columns(&d);
	/* the tracking lists the flow was created with */
	d.track_all = !(flow->has_track_include || flow->track_except != NIL);
	if (!d.track_all)
	{
		ListCell   *lc;

		foreach(lc, flow->has_track_include ? flow->track_include : flow->track_except)
			if (!name_in_list(d.datacols, lfirst(lc)))
				ereport(ERROR,
						(errcode(find_column(d.srccols, lfirst(lc)) ? ERRCODE_INVALID_PARAMETER_VALUE :
								 ERRCODE_UNDEFINED_COLUMN),
						 errmsg("track history column \"%s\" is not a selected non-key column of source \"%s\"",
								(char *) lfirst(lc), d.srcname)));
		foreach(lc, d.datacols)
			if (flow->has_track_include ? name_in_list(flow->track_include, lfirst(lc)) :
				!name_in_list(flow->track_except, lfirst(lc)))
				d.track = lappend(d.track, lfirst(lc));
	}
	def_expressions(&d);
	def_target_name(&d);
	def_sequence_type(&d);
	def_target(&d);
	def_record_target(&d);
	catalog_set_snapshot_target(flow, d.tdef.id, d.selected, d.track, d.track_all);
	CommandCounterIncrement();
	reloaded = catalog_load_flow(flow->name, true, false);
	*flow = *reloaded;
}

/*
 * Drop a loaded flow (its catalog rows, and the hidden state once no flow
 * writes the target; with drop_target the target and every flow into it).
 * The caller has checked the right to do so.  SPI connected, search_path
 * pinned.
 */
void
define_drop_flow(FlowDef *flow, bool drop_target)
{
	List	   *typnames;
	ListCell   *lc;

	/* the row stores of the flows that go */
	if (flow->target_id != 0 && drop_target)
	{
		foreach(lc, catalog_target_flows(flow->target_id))
			rowstore_drop(catalog_load_flow(lfirst(lc), false, false)->id);
	}
	else
		rowstore_drop(flow->id);
	catalog_delete_flow(flow->name);
	if (flow->target_id == 0)
		return;					/* a snapshot flow whose first run has not
								 * created its target */
	if (catalog_target_flows(flow->target_id) != NIL && !drop_target)
		return;
	typnames = catalog_delete_target(flow->target_id);
	storage_drop(flow->target_id, flow->target, typnames, drop_target);
}

/* What to do when set_expectation or drop_expectation names no target. */
#define EXPECTATION_NO_TARGET_HINT \
	"Expectations belong to the targets of flows: create a flow into it first."

/*
 * The target row of a relation that set_expectation, drop_expectation or
 * create_as_of_index names, locked (a run in progress finishes first: a
 * change applies from the next run on); the caller must have the
 * privileges of the table's owner.  hint: what to do when it is no target.
 */
static void
owned_target(Oid relid, TargetDef *t, const char *hint)
{
	if (!catalog_load_target(relid, t))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" is not the target of a flow", get_rel_name(relid)),
				 errhint("%s", hint)));
	if (!compat_class_ownercheck(relid, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of target \"%s\"", get_rel_name(relid))));
	(void) catalog_lock_target(t->id, false);
}

/*
 * The condition of an expectation: a boolean expression over the target's
 * data columns, stored schema-qualified.  Every flow into the target
 * evaluates it as its owner, so the caller must have the privileges of
 * each of them, and no snapshot flow may write the target beside change
 * flows (it could not check them).
 */
static char *
expectation_condition(TargetDef *t, const char *name, const char *condition)
{
	ExprInfo   *info = expr_analyze(t->relid, false, condition, "expectation");
	List	   *flows;
	ListCell   *lc;

	if (info->typid != BOOLOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("expectation \"%s\" must be a boolean expression, not type %s",
						name, format_type_be(info->typid))));
	foreach(lc, info->source_columns)
		if (!name_in_list(t->columns, lfirst(lc)))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("expectation \"%s\" reads column \"%s\", which is not a data column of target \"%s\"",
							name, (char *) lfirst(lc), get_rel_name(t->relid)),
					 errhint("An expectation is checked on the events' data columns, before they are applied.")));
	flows = catalog_target_flows(t->id);
	foreach(lc, flows)
	{
		FlowDef    *f = catalog_load_flow(lfirst(lc), false, false);

		if (!has_privs_of_role(GetUserId(), f->owner))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("cannot set expectation \"%s\" on target \"%s\": flow \"%s\" has another owner",
							name, get_rel_name(t->relid), f->name),
					 errdetail("Each flow into the target evaluates the condition as its owner."),
					 errhint("Set it as a role with the privileges of every flow's owner.")));
	}
	return info->normalized;
}

/*
 * Add or replace an expectation of a target.  SPI connected; search_path
 * the caller's (the condition's names are resolved with it).
 */
void
define_set_expectation(Oid target, const char *name, const char *condition,
					   const char *action)
{
	TargetDef	t;
	Expectation e;

	memset(&e, 0, sizeof(e));
	if (strcmp(action, "warn") == 0)
		e.action = EXPECT_WARN;
	else if (strcmp(action, "drop") == 0)
		e.action = EXPECT_DROP;
	else if (strcmp(action, "fail") == 0)
		e.action = EXPECT_FAIL;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid on_violation \"%s\"", action),
				 errhint("Use warn, drop or fail.")));
	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("an expectation's name must not be empty")));
	owned_target(target, &t, EXPECTATION_NO_TARGET_HINT);
	e.name = pstrdup(name);
	e.condition = expectation_condition(&t, name, condition);
	e.owner = GetUserId();
	catalog_set_expectation(t.id, &e);
}

/* Drop an expectation of a target.  SPI connected. */
void
define_drop_expectation(Oid target, const char *name)
{
	TargetDef	t;

	owned_target(target, &t, EXPECTATION_NO_TARGET_HINT);
	if (!catalog_drop_expectation(t.id, name))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("target \"%s\" has no expectation \"%s\"", get_rel_name(target), name)));
}

/*
 * Create the indexes autocdc.as_of reads on an SCD 2 or bitemporal target
 * of the caller's (autocdc.create_as_of_index), as the target's owner,
 * security-restricted, with search_path pinned; a range type created for
 * them is recorded with the target, to be dropped with it.  A target that
 * has them already is left alone.  SPI connected.
 */
void
define_create_as_of_index(Oid target)
{
	TargetDef	t;
	Oid			rangefn;
	bool		ended_only;
	char	   *rangetypname = NULL;
	Oid			owner;
	Oid			foreign;
	Oid			saved_uid;
	int			saved_sec;
	int			level;

	owned_target(target, &t, "as_of reads the targets of SCD 2 and bitemporal flows: create a flow into it first.");
	if (storage_kind(t.scd)->nperiods == 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("target \"%s\" keeps no history", get_rel_name(target)),
				 errdetail("as_of reads SCD 2 and bitemporal targets; this one is SCD 1.")));
	owner = relation_owner(target);
	foreign = type_foreign_code(t.seq_type, owner);
	if (OidIsValid(foreign))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the periods of target \"%s\" have type %s, which carries a domain of role %s",
						get_rel_name(target), format_type_be(t.seq_type),
						quote_identifier(GetUserNameFromId(type_owner(foreign), false))),
				 errdetail("Their index would run its code as the target's owner."),
				 errhint("Run a flow into the target first: it changes the periods to the domain's base type.")));
	if (OidIsValid(storage_period_range(target, &rangefn, &ended_only)))
	{
		ereport(NOTICE,
				(errmsg("target \"%s\" has an index of its periods already, skipping",
						get_rel_name(target))));
		return;
	}
	become_owner(owner, &saved_uid, &saved_sec);
	level = set_safe_search_path();
	storage_create_period_index(target, t.seq_type, &rangetypname);
	AtEOXact_GUC(true, level);
	restore_user(saved_uid, saved_sec);
	if (rangetypname)
		catalog_set_target_range_typname(t.id, rangetypname);
}
