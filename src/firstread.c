/*-------------------------------------------------------------------------
 *
 * firstread.c
 *		First reads of change flows (engine layer, capture): the whole
 *		source read under a snapshot into the batch, and the snapshot that
 *		tells which decoded transactions the read did not show.
 *
 * A first read takes a snapshot S, reads the source under it, and then
 * keeps from the decoded stream exactly the transactions S did not show
 * (its own transaction included).  Transactions that have already written
 * their commit to the clog but were still in the snapshot's running list
 * count as shown (they are read under S), so that no commit that happened
 * before the read can slip between the read and the decoded stream.  The
 * slot is held from the snapshot to the end of decoding (capture.c), so
 * nobody can confirm it past a transaction the read did not show.  The
 * same whole read serves once flows and full_refresh (run.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "kind.h"
#include "layout.h"
#include "rowstore.h"
#include "source_internal.h"
#include "srckind.h"
#include "tablekind.h"
#include "util.h"

/*
 * A copy of the latest snapshot in which transactions that already
 * committed to the clog count as shown, and this transaction does not.
 */
Snapshot
firstread_snapshot(void)
{
	Snapshot	src = GetLatestSnapshot();
	Snapshot	snap = palloc(sizeof(SnapshotData));
	TransactionId own = GetTopTransactionIdIfAny();
	uint32		i,
				n = 0;

	*snap = *src;
	snap->xip = palloc(sizeof(TransactionId) * (src->xcnt + 1));
	for (i = 0; i < src->xcnt; i++)
		if (!TransactionIdDidCommit(src->xip[i]))
			snap->xip[n++] = src->xip[i];
	if (TransactionIdIsValid(own) && TransactionIdPrecedes(own, snap->xmax))
		snap->xip[n++] = own;
	snap->xcnt = n;
	snap->subxip = palloc(sizeof(TransactionId) * (src->subxcnt + 1));
	n = 0;
	for (i = 0; i < (uint32) src->subxcnt; i++)
		if (!TransactionIdDidCommit(src->subxip[i]))
			snap->subxip[n++] = src->subxip[i];
	snap->subxcnt = n;
	snap->curcid = FirstCommandId;	/* hide this transaction's own rows */
	snap->copied = false;
	snap->active_count = 0;
	snap->regd_count = 0;
	snap->snapXactCompletionCount = 0;
	return snap;
}

/* Did the first-read snapshot show the (top-level) transaction xid? */
bool
firstread_showed(Snapshot snap, TransactionId xid)
{
	uint32		i;

	if (TransactionIdPrecedes(xid, snap->xmin))
		return true;
	if (TransactionIdFollowsOrEquals(xid, snap->xmax))
		return false;
	for (i = 0; i < snap->xcnt; i++)
		if (TransactionIdEquals(xid, snap->xip[i]))
			return false;
	return true;
}

/* Where a snapshot read puts its rows. */
typedef struct SnapshotRead
{
	Tuplestorestate *batch;
	TupleDesc	desc;
	XLogRecPtr	pos;
	int64		ord;
	bool		pseudo;			/* a changes() source: fill the pseudo-columns */
	const char *change_type;	/* their _change_type */
	Datum		change_type_datum;	/* (as text, made once) */
	TimestampTz ts;				/* and _commit_timestamp */
} SnapshotRead;

/* Add one row read under the snapshot to the batch. */
static void
snapshot_row(Datum *rvalues, bool *rnulls, TupleDesc desc, void *arg)
{
	SnapshotRead *sr = arg;
	int			natts = sr->desc->natts;
	Datum	   *values = palloc(sizeof(Datum) * natts);
	bool	   *nulls = palloc(sizeof(bool) * natts);

	values[0] = LSNGetDatum(sr->pos);
	values[1] = Int64GetDatum(SNAPSHOT_ORD_BASE + ++sr->ord);
	nulls[0] = nulls[1] = false;
	memcpy(values + 2, rvalues, sizeof(Datum) * desc->natts);
	memcpy(nulls + 2, rnulls, sizeof(bool) * desc->natts);
	if (sr->pseudo)
	{
		int			p = natts - PSEUDO_NCOLUMNS;

		values[p + PSEUDO_CHANGE_TYPE] = sr->change_type_datum;
		values[p + PSEUDO_COMMIT_LSN] = LSNGetDatum(sr->pos);
		values[p + PSEUDO_COMMIT_TIMESTAMP] = TimestampTzGetDatum(sr->ts);
		nulls[p + PSEUDO_CHANGE_TYPE] = nulls[p + PSEUDO_COMMIT_LSN] =
			nulls[p + PSEUDO_COMMIT_TIMESTAMP] = false;
	}
	tuplestore_putvalues(sr->batch, sr->desc, values, nulls);
	pfree(values);
	pfree(nulls);
}

/*
 * Run a query of rows in batch layout (without the arrival position) as
 * the flow owner, adding each to the batch at the next snapshot order of
 * pos: sr says what fills the pseudo-columns.
 */
static void
snapshot_read(FlowDef *flow, const char *sql, SnapshotRead *sr)
{
	Oid			saved_uid;
	int			saved_sec;

	if (sr->pseudo)
		sr->change_type_datum = CStringGetTextDatum(sr->change_type);
	become_owner(flow->owner, &saved_uid, &saved_sec);
	spi_foreach_values(sql, true, snapshot_row, sr);
	restore_user(saved_uid, saved_sec);
}

/*
 * A changes() flow refreshed with its target kept: a delete, at the
 * refresh's position, of every key the target's current rows have and the
 * source no longer has (read under the active snapshot), after the rows
 * the refresh read (ord: the last order they took).
 */
void
firstread_missing(FlowDef *flow, Tuplestorestate *batch, TupleDesc batchdesc,
				  XLogRecPtr pos, TimestampTz ts, int64 ord)
{
	StringInfoData sql;
	StringInfoData tkeys;
	SnapshotRead sr;
	char	   *keys = quoted_list(flow->keys);
	ListCell   *lc;
	int			i;

	/* the target's keys compared under the source's collations */
	initStringInfo(&tkeys);
	foreach(lc, flow->keys)
	{
		Oid			typid,
					coll;
		int32		typmod;

		get_atttypetypmodcoll(flow->source, get_attnum(flow->source, lfirst(lc)),
							  &typid, &typmod, &coll);
		appendStringInfo(&tkeys, "%s%s", tkeys.len ? ", " : "", quote_identifier(lfirst(lc)));
		if (OidIsValid(coll))
			appendStringInfo(&tkeys, " COLLATE %s", generate_collation_name(coll));
	}
	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (i = BATCH_DATA; i < batchdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(batchdesc, i);

		appendStringInfo(&sql, "%s", i > BATCH_DATA ? ", " : "");
		if (i < batchdesc->natts - PSEUDO_NCOLUMNS &&
			name_in_list(flow->keys, NameStr(att->attname)))
			appendStringInfo(&sql, "m.%s", quote_identifier(NameStr(att->attname)));
		else
			appendStringInfo(&sql, "NULL::%s", flat_type_name(att->atttypid, att->atttypmod));
	}
	appendStringInfo(&sql, " FROM (SELECT %s FROM %s%s EXCEPT SELECT %s FROM %s%s) m",
					 tkeys.data, table_rows(flow->target),
					 storage_kind(flow->scd)->current_rows, keys,
					 get_rel_relkind(flow->source) == RELKIND_RELATION ? "ONLY " : "",
					 qualified_relname(flow->source));
	memset(&sr, 0, sizeof(sr));
	sr.batch = batch;
	sr.desc = batchdesc;
	sr.pos = pos;
	sr.ord = ord;
	sr.pseudo = true;
	sr.change_type = "delete";
	sr.ts = ts;
	snapshot_read(flow, sql.data, &sr);
}

/* the target's current rows, read once, when Citus distributes the target */
#define REFRESH_CTE "__autocdc_target"

/* Does Citus distribute the flow's target? */
static bool
distributed_target(FlowDef *flow)
{
	CitusTable	ct;

	return tablekind_distributed(flow->target, &ct);
}

/*
 * A changes() flow refreshed with its target kept reads only the rows that
 * differ from the target's current row of their key: in a selected column
 * of the source (compared as text under "C", so that a value written
 * differently is a change, as the apply sees it), or by having no such row.  Columns taken
 * from pseudo-columns do not count: an unchanged row keeps the time and
 * kind of its last change.
 */
static void
append_refresh_filter(FlowDef *flow, StringInfo sql)
{
	ListCell   *lc;

	if (distributed_target(flow))
		appendStringInfoString(sql, " WHERE NOT EXISTS (SELECT FROM " REFRESH_CTE " t WHERE true");
	else
		appendStringInfo(sql, " WHERE NOT EXISTS (SELECT FROM (SELECT * FROM %s%s) t WHERE true",
						 table_rows(flow->target), storage_kind(flow->scd)->current_rows);
	foreach(lc, flow->columns)
	{
		const char *q = quote_identifier(lfirst(lc));

		if (pseudo_source_of(flow->col_include, flow->col_from, lfirst(lc)))
			continue;
		appendStringInfo(sql, name_in_list(flow->keys, lfirst(lc)) ?
						 " AND (t.%s::pg_catalog.text COLLATE pg_catalog.\"C\") OPERATOR(pg_catalog.=) s.%s::pg_catalog.text" :
						 " AND (t.%s::pg_catalog.text COLLATE pg_catalog.\"C\") IS NOT DISTINCT FROM s.%s::pg_catalog.text",
						 q, q);
	}
	appendStringInfoChar(sql, ')');
}

/*
 * Read the whole source under the active snapshot into the batch, every
 * row at arrival position (pos, i); a changes() source's rows are inserts
 * committed at pos and ts.  Returns the last order taken.  Runs as the
 * flow owner.
 */
int64
source_read_whole(FlowDef *flow, Tuplestorestate *batch, TupleDesc batchdesc,
				  XLogRecPtr pos, TimestampTz ts, RowNotes *notes)
{
	StringInfoData sql;
	SnapshotRead sr;
	char		relkind = get_rel_relkind(flow->source);
	Relation	rel = relation_open(flow->source, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	bool		whole = pg_class_aclcheck(flow->source, flow->owner, ACL_SELECT) == ACLCHECK_OK;
	int			i;
	bool		first = true;

	/*
	 * Read the columns the owner may read; the others (which the flow does
	 * not use: that was checked) come back NULL.
	 */
	initStringInfo(&sql);

	/*
	 * A distributed target's rows cannot be joined with a table here row by
	 * row: Citus reads them first (append_refresh_filter).
	 */
	if (flow->run.refresh_keep && distributed_target(flow))
		appendStringInfo(&sql, "WITH " REFRESH_CTE " AS MATERIALIZED (SELECT * FROM %s%s) ",
						 table_rows(flow->target), storage_kind(flow->scd)->current_rows);
	appendStringInfoString(&sql, "SELECT ");
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		if (whole || pg_attribute_aclcheck(flow->source, att->attnum, flow->owner,
										   ACL_SELECT) == ACLCHECK_OK)
			appendStringInfo(&sql, "%ss.%s", first ? "" : ", ",
							 quote_identifier(NameStr(att->attname)));
		else
			appendStringInfo(&sql, "%sNULL::%s", first ? "" : ", ", flat_type_name(att->atttypid, att->atttypmod));
		first = false;
	}
	for (i = 0; flow->srckind->pseudo_columns && i < PSEUDO_NCOLUMNS; i++)
		appendStringInfo(&sql, ", NULL::%s", format_type_be_qualified(pseudo_columns[i].type));
	appendStringInfo(&sql, " FROM %s%s s",
					 relkind == RELKIND_RELATION ? "ONLY " : "",
					 qualified_relname(flow->source));
	if (flow->run.refresh_keep)
		append_refresh_filter(flow, &sql);
	relation_close(rel, AccessShareLock);
	sr.batch = batch;
	sr.desc = batchdesc;
	sr.pos = pos;
	sr.ord = 0;
	sr.pseudo = flow->srckind->pseudo_columns;
	sr.change_type = "insert";
	sr.ts = ts;
	snapshot_read(flow, sql.data, &sr);
	if (notes != NULL)
		rowstore_read(flow, notes);
	return sr.ord;
}
