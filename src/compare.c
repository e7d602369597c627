/*-------------------------------------------------------------------------
 *
 * compare.c
 *		One snapshot compared with the target's current rows (SCD 1: all;
 *		SCD 2: __end_at IS NULL) in one set-based query: a FULL JOIN on the
 *		keys, IS DISTINCT FROM on the other columns.  Only the rows that
 *		differ become events - an upsert for a new or changed key, a delete
 *		for a vanished one, all at the snapshot's version - applied by the
 *		engine like a change flow's; when the target has expectations, the
 *		rows equal to the target's come too, only to be checked and counted
 *		(EVENT_UNCHANGED).  The same query counts the snapshot's
 *		rows and refuses duplicate and NULL keys (autocdc_internal.
 *		_snapshot_check, in an InitPlan), so the check and the comparison see
 *		one snapshot of the database.
 *
 *		A target that change flows write too takes no comparison: there a
 *		snapshot at version v is a truncate at v followed by an upsert at v
 *		of each of its rows, folded with the change flows' events and kept in
 *		the hidden state like theirs (compare_snapshot's mixed).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xlog.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "apply.h"
#include "compat.h"
#include "compare.h"
#include "kind.h"
#include "layout.h"
#include "settings.h"
#include "storage.h"
#include "util.h"

/* Rows of the snapshot being applied, counted by _snapshot_check. */
static int64 snapshot_rows = 0;

/* Is this backend comparing a snapshot (the only time the check may run)? */
static bool snapshot_comparing = false;

/*
 * autocdc_internal._snapshot_check(flow, snapshot, nrows, duplicate key, null key):
 * evaluated once inside the comparison query, so that the check and the
 * comparison read the snapshot under one snapshot of the database.  Counts
 * the rows and refuses duplicate or null keys.
 */
PG_FUNCTION_INFO_V1(autocdc_snapshot_check);

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

			ok = name_in_list(keys, NameStr(att->attname)) &&
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
 * The cast of snapshot column name to the type its target and hidden-state
 * column store it as, when that is its type with domains flattened (a cast
 * from a domain to its base type runs none of the domain's code); "" if
 * none is needed.
 */
static const char *
flat_cast(Oid rel, const char *name, Oid stored)
{
	AttrNumber	attnum = get_attnum(rel, name);
	Oid			typid = attnum == InvalidAttrNumber ? InvalidOid : get_atttype(rel, attnum);

	if (OidIsValid(typid) && typid != stored && type_stored_as(typid, stored))
		return psprintf("::%s", format_type_be_qualified(stored));
	return "";
}

/*
 * The InitPlan of events_sql that calls autocdc_internal._snapshot_check:
 * the snapshot's row count, and its duplicate or null keys (keys: its
 * quoted key column list) unless an index rules them out (keys_unique).
 */
static char *
snapshot_check_sql(FlowDef *flow, Oid rel, const char *snapname, const char *keys,
				   bool keys_unique)
{
	StringInfoData nullk,
				keyvals;
	ListCell   *lc;

	if (keys_unique)
		return psprintf("(SELECT autocdc_internal._snapshot_check(%s, %s, pg_catalog.count(*), NULL, false) FROM %s)",
						quote_literal_cstr(flow->name), quote_literal_cstr(get_rel_name(rel)), snapname);
	initStringInfo(&nullk);
	initStringInfo(&keyvals);
	foreach(lc, flow->keys)
	{
		const char *q = quote_identifier(lfirst(lc));

		appendStringInfo(&nullk, "%sg.%s IS NULL", nullk.len ? " OR " : "", q);
		appendStringInfo(&keyvals, ", g.%s", q);
	}
	return psprintf("(SELECT autocdc_internal._snapshot_check(%s, %s, pg_catalog.sum(g.__autocdc_n)::pg_catalog.int8, "
					"pg_catalog.min(CASE WHEN g.__autocdc_n OPERATOR(pg_catalog.>) 1 "
					"THEN pg_catalog.format('(%%s)=(%%s)', %s, pg_catalog.concat_ws(', '%s)) END), "
					"pg_catalog.bool_or(%s)) "
					"FROM (SELECT %s, pg_catalog.count(*) AS __autocdc_n FROM %s GROUP BY %s) g)",
					quote_literal_cstr(flow->name), quote_literal_cstr(get_rel_name(rel)),
					quote_literal_cstr(keys), keyvals.data, nullk.data,
					keys, snapname, keys);
}

/*
 * The events of a snapshot into a target change flows write too (nulls: a
 * NULL per data column; sel: the snapshot's data columns): a truncate, then
 * every row as an upsert, all at the version; they arrive at the WAL
 * position of the read, the truncate first (as rows read under a snapshot,
 * SNAPSHOT_ORD_BASE on).  The truncate's branch runs the check, before any
 * upsert.
 */
static void
mixed_sql(StringInfo sql, const char *nulls, const char *sel, const char *vliteral,
		  const char *check, const char *snapname)
{
	char	   *arrival = psprintf("'" COMPAT_LSN_FORMAT "'::pg_catalog.pg_lsn",
								   LSN_FORMAT_ARGS(GetXLogInsertRecPtr()));

	appendStringInfo(sql,
					 "SELECT %s%s, %s, '" INT64_FORMAT "'::pg_catalog.int8, 't'::pg_catalog.\"char\" "
					 "WHERE %s "
					 "UNION ALL "
					 "SELECT %s%s, %s, '" INT64_FORMAT "'::pg_catalog.int8, 'u'::pg_catalog.\"char\" "
					 "FROM %s s",
					 nulls, vliteral, arrival, (int64) SNAPSHOT_ORD_BASE, check,
					 sel, vliteral, arrival, (int64) SNAPSHOT_ORD_BASE + 1, snapname);
}

/*
 * The query returning the events of one snapshot in the shape the apply
 * engine classifies (data columns in hidden-state order, sequence, lsn, ord,
 * kind).  full: every snapshot row as an upsert; otherwise only the rows
 * that differ from the target's current rows, and a delete per vanished
 * key.  An InitPlan calls autocdc_internal._snapshot_check first, which
 * need not look for duplicate or null keys when keys_unique (the snapshot's
 * unique index on the keys rules them out).
 */
static char *
events_sql(FlowDef *flow, Oid rel, const char *vliteral, bool full, bool keys_unique,
		   bool mixed)
{
	Oid			staterel = storage_state_relid(flow->target_id);
	Relation	sr;
	TupleDesc	sdesc;
	StringInfoData sel,
				cols,
				scols,
				keys,
				on,
				differ,
				nulls,
				sql;
	char	   *snapname = qualified_relname(rel);
	char	   *tname = table_rows(flow->target);
	char	   *check;
	int			i;

	if (!OidIsValid(staterel))
		elog(ERROR, "hidden state of flow \"%s\" is missing", flow->name);
	initStringInfo(&sel);
	initStringInfo(&cols);
	initStringInfo(&scols);
	initStringInfo(&keys);
	initStringInfo(&on);
	initStringInfo(&differ);
	initStringInfo(&nulls);
	sr = relation_open(staterel, AccessShareLock);
	sdesc = RelationGetDescr(sr);
	for (i = 0; i < sdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(sdesc, i);
		const char *name = NameStr(att->attname);
		const char *q = quote_identifier(name);
		const char *cast;

		if (att->attisdropped || strncmp(name, "__autocdc_", 10) == 0)
			continue;
		appendStringInfo(&nulls, "NULL::%s, ", flat_type_name(att->atttypid, att->atttypmod));
		if (!name_in_list(flow->columns, name))
		{
			appendStringInfo(&sel, "NULL::%s, ", flat_type_name(att->atttypid, att->atttypmod));
			continue;
		}
		cast = flat_cast(rel, name, att->atttypid);
		if (name_in_list(flow->keys, name) && !full && !mixed)
			appendStringInfo(&sel, "CASE WHEN s.__autocdc_p THEN s.%s ELSE t.%s END, ", q, q);
		else
			appendStringInfo(&sel, "s.%s%s, ", q, full || mixed ? cast : "");
		appendStringInfo(&cols, "%s%s", cols.len ? ", " : "", q);
		appendStringInfo(&scols, "%s%s%s AS %s", scols.len ? ", " : "", q, cast, q);
		if (name_in_list(flow->keys, name))
		{
			appendStringInfo(&keys, "%s%s", keys.len ? ", " : "", q);
			appendStringInfo(&on, "%ss.%s %s t.%s", on.len ? " AND " : "", q,
							 equality_operator(att->atttypid), q);
		}
		else
			appendStringInfo(&differ, " OR %s", distinct_clause(q, att->atttypid));
	}
	relation_close(sr, AccessShareLock);

	check = snapshot_check_sql(flow, rel, snapname, keys.data, keys_unique);

	initStringInfo(&sql);
	if (mixed)
		mixed_sql(&sql, nulls.data, sel.data, vliteral, check, snapname);
	else if (full)
		appendStringInfo(&sql,
						 "SELECT %s%s, '0/0'::pg_catalog.pg_lsn, 0::pg_catalog.int8, 'u'::pg_catalog.\"char\" "
						 "FROM %s s WHERE %s",
						 sel.data, vliteral, snapname, check);
	else if (flow->run.expectations == NIL)
		appendStringInfo(&sql,
						 "SELECT %s%s, '0/0'::pg_catalog.pg_lsn, 0::pg_catalog.int8, "
						 "(CASE WHEN s.__autocdc_p THEN 'u' ELSE 'd' END)::pg_catalog.\"char\" "
						 "FROM (SELECT %s, true AS __autocdc_p FROM %s) s "
						 "FULL JOIN (SELECT %s, true AS __autocdc_p FROM %s%s) t ON %s "
						 "WHERE %s AND (s.__autocdc_p IS NULL OR t.__autocdc_p IS NULL%s)",
						 sel.data, vliteral, scols.data, snapname, cols.data, tname,
						 storage_kind(flow->scd)->current_rows,
						 on.data, check, differ.data);
	else

		/*
		 * The target has expectations: every snapshot row is checked, so
		 * the rows equal to the target's come too, as EVENT_UNCHANGED.
		 */
		appendStringInfo(&sql,
						 "SELECT %s%s, '0/0'::pg_catalog.pg_lsn, 0::pg_catalog.int8, "
						 "(CASE WHEN s.__autocdc_p IS NULL THEN 'd' "
						 "WHEN t.__autocdc_p IS NULL%s THEN 'u' ELSE '%c' END)::pg_catalog.\"char\" "
						 "FROM (SELECT %s, true AS __autocdc_p FROM %s) s "
						 "FULL JOIN (SELECT %s, true AS __autocdc_p FROM %s%s) t ON %s "
						 "WHERE %s",
						 sel.data, vliteral, differ.data, EVENT_UNCHANGED, scols.data, snapname,
						 cols.data, tname, storage_kind(flow->scd)->current_rows, on.data, check);
	return sql.data;
}

/*
 * Should the comparison's full join be planned without a hash join, the
 * snapshot being a table with a unique index on the keys (the target has
 * one too: both sides can be read in key order, or sorted)?  Yes when it
 * is larger on disk than a query's share of autocdc.work_mem, so that a
 * hash of it would be split into batches written to disk.  Measured on a 1M-row
 * snapshot and target in key order with the default share (16 MB): the
 * hash join took 1.07-1.47 s, a merge join over the two indexes
 * 0.53-0.77 s, and a merge join of two external sorts (index scans off)
 * 1.08-1.22 s, no slower than the hash.
 */
static bool
merge_beats_hash(Oid snapshot)
{
	Relation	r;
	BlockNumber pages;

	r = relation_open(snapshot, AccessShareLock);
	pages = RelationGetNumberOfBlocks(r);
	relation_close(r, AccessShareLock);
	return (double) pages * BLCKSZ > (double) settings_query_mem() * 1024;
}

/*
 * Apply a snapshot's events (events_sql), flagged as a comparison for
 * _snapshot_check while they are read; returns the snapshot's rows.
 */
static int64
apply_comparison(FlowDef *flow, RunMetrics *m, const char *sql, bool full, bool no_hash)
{
	snapshot_rows = 0;
	snapshot_comparing = true;
	PG_TRY();
	{
		apply_events(flow, m, sql, full, no_hash);
	}
	PG_FINALLY();
	{
		snapshot_comparing = false;
	}
	PG_END_TRY();
	return snapshot_rows;
}

/*
 * Apply the differences between a snapshot and the flow's target at a
 * version (a literal of the version type); with full, every row of the
 * snapshot is an upsert.  With mixed (change flows write the target too),
 * no comparison: a truncate at the version and an upsert of every row,
 * folded with the target's hidden state.  Runs as the flow's owner;
 * returns the number of snapshot rows read.
 */
int64
compare_snapshot(FlowDef *flow, Oid snapshot, const char *version, bool full, bool mixed,
				 RunMetrics *m)
{
	bool		keys_unique;
	char	   *sql;

	/*
	 * A truncate, or a first snapshot rewriting a target that holds rows,
	 * would change the key of a row an expectation drops: such a row spares
	 * its key instead.
	 */
	flow->run.spare_dropped = false;
	if (flow->run.expectations != NIL && mixed)
		flow->run.spare_dropped = true;
	else if (flow->run.expectations != NIL && full && !flow->run.snapshot_refresh)
	{
		spi_exec(psprintf("SELECT FROM %s LIMIT 1", table_rows(flow->target)),
				 SPI_OK_SELECT);
		flow->run.spare_dropped = (SPI_processed > 0);
	}
	keys_unique = keys_unique_in(snapshot, flow->keys);
	sql = events_sql(flow, snapshot, version, full, keys_unique, mixed);

	return apply_comparison(flow, m, sql, full && !mixed,
							!full && !mixed && keys_unique && merge_beats_hash(snapshot));
}

/*
 * A change flow joins the target of a snapshot flow whose last applied
 * version is version (text, of the sequence type seqtype): make the hidden
 * state what the fold of that snapshot gives, a truncate at the version
 * and an upsert of each current row at it (the state of a snapshot flow
 * alone keeps each key's last upsert or delete, at the version that made
 * it).  Arrival: before any change event.
 */
void
compare_adopt_snapshot(int target_id, Oid seqtype, const char *version)
{
	char	   *state = qualified_relname(storage_state_relid(target_id));
	char	   *v = psprintf("%s::%s", quote_literal_cstr(version), format_type_be_qualified(seqtype));

	spi_exec(psprintf("DELETE FROM %s WHERE %s OPERATOR(pg_catalog.<>) '%c'",
					  state, STATE_KIND_NAME, EVENT_UPSERT), SPI_OK_DELETE);
	spi_exec(psprintf("UPDATE %s SET %s = %s, %s = '0/0', %s = '" INT64_FORMAT "'",
					  state, STATE_SEQ_NAME, v, STATE_LSN_NAME, STATE_ORD_NAME,
					  (int64) SNAPSHOT_ORD_BASE + 1), SPI_OK_UPDATE);
	if (OidIsValid(storage_truncates_relid(target_id)))
	{
		/* a distributed target's state keeps them apart (storage.c) */
		spi_exec(psprintf("DELETE FROM %s", qualified_relname(storage_truncates_relid(target_id))),
				 SPI_OK_DELETE);
		state = qualified_relname(storage_truncates_relid(target_id));
	}
	spi_exec(psprintf("INSERT INTO %s (%s, %s, %s, %s, %s) VALUES (%s, '0/0', '" INT64_FORMAT "', '%c', pg_catalog.now())",
					  state, STATE_SEQ_NAME, STATE_LSN_NAME, STATE_ORD_NAME, STATE_KIND_NAME,
					  STATE_AT_NAME, v, (int64) SNAPSHOT_ORD_BASE, EVENT_TRUNCATE), SPI_OK_INSERT);
}
