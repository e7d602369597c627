/*-------------------------------------------------------------------------
 *
 * catalog.c
 *		autocdc's catalog: every read and write of the autocdc.* tables
 *		(flow, flow_state, target, flow_run_log), and the installed version.
 *
 * Flow owners have no privileges on these tables, so every statement here
 * runs as the bootstrap superuser, with the caller's search_path pinned to
 * pg_catalog, pg_temp and operators spelled OPERATOR(pg_catalog.=).  The
 * tables have columns of built-in types only and no triggers: nothing here
 * evaluates code of a user's.  The callers have SPI connected.
 *
 * A flow row is read into a FlowDef by one function (catalog_load_flow),
 * whose select list is named by the FlowColumn constants below.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "layout.h"
#include "settings.h"
#include "util.h"

/* ----------------------------------------------------------------
 * statements
 * ----------------------------------------------------------------
 */

/* Parameters of one catalog statement, $1 ... in the order added. */
typedef struct CatArgs
{
	int			n;
	Oid			types[32];
	Datum		values[32];
	char		nulls[32];
} CatArgs;

/* Add a parameter (isnull: SQL NULL). */
static void
arg_add(CatArgs *a, Oid type, Datum value, bool isnull)
{
	Assert(a->n < 32);
	a->types[a->n] = type;
	a->values[a->n] = isnull ? (Datum) 0 : value;
	a->nulls[a->n] = isnull ? 'n' : ' ';
	a->n++;
}

static void
arg_text(CatArgs *a, const char *s)
{
	arg_add(a, TEXTOID, s ? CStringGetTextDatum(s) : (Datum) 0, s == NULL);
}

static void
arg_int4(CatArgs *a, int32 v)
{
	arg_add(a, INT4OID, Int32GetDatum(v), false);
}

static void
arg_oid(CatArgs *a, Oid v)
{
	arg_add(a, OIDOID, ObjectIdGetDatum(v), false);
}

static void
arg_bool(CatArgs *a, bool v)
{
	arg_add(a, BOOLOID, BoolGetDatum(v), false);
}

static void
arg_lsn(CatArgs *a, XLogRecPtr v, bool isnull)
{
	arg_add(a, LSNOID, LSNGetDatum(v), isnull);
}

/* A name[] parameter; with null_if_nil, NIL is NULL. */
static void
arg_names(CatArgs *a, List *names, bool null_if_nil)
{
	arg_add(a, NAMEARRAYOID, names_to_array(names), null_if_nil && names == NIL);
}

/* A text[] of quoted identifiers (read back with parse_identifier_array). */
static void
arg_idents(CatArgs *a, List *names, bool isnull)
{
	arg_add(a, TEXTARRAYOID, quoted_text_array(names), isnull);
}

/* An oid[] parameter. */
static void
arg_oids(CatArgs *a, List *oids)
{
	Datum	   *d = palloc(sizeof(Datum) * (list_length(oids) + 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, oids)
		d[i++] = ObjectIdGetDatum(lfirst_oid(lc));
	arg_add(a, OIDARRAYOID,
			PointerGetDatum(construct_array(d, i, OIDOID, sizeof(Oid), true, TYPALIGN_INT)), false);
}

/*
 * Run a catalog statement as autocdc; error unless SPI answers expected.
 * Returns SPI_processed.
 */
static uint64
cat_exec(const char *sql, CatArgs *a, int expected)
{
	Oid			saved_uid;
	int			saved_sec;
	int			rc;

	become_superuser(&saved_uid, &saved_sec);
	/* never read-only: a read must see what this transaction wrote just before */
	rc = SPI_execute_with_args(sql, a ? a->n : 0, a ? a->types : NULL,
							   a ? a->values : NULL, a ? a->nulls : NULL, false, 0);
	restore_user(saved_uid, saved_sec);
	if (rc != expected)
		elog(ERROR, "autocdc catalog statement failed (%d): %s", rc, sql);
	return SPI_processed;
}

/*
 * Run a catalog query as cat_exec does, but under the latest snapshot (what
 * is committed now, and this transaction's own writes), whatever the
 * caller's isolation level.
 */
static uint64
cat_exec_latest(const char *sql, CatArgs *a, int expected)
{
	Oid			saved_uid;
	int			saved_sec;
	SPIPlanPtr	plan;
	int			rc;

	become_superuser(&saved_uid, &saved_sec);
	plan = SPI_prepare(sql, a ? a->n : 0, a ? a->types : NULL);
	if (plan == NULL)
		elog(ERROR, "autocdc catalog statement failed to prepare: %s", sql);
	rc = SPI_execute_snapshot(plan, a ? a->values : NULL, a ? a->nulls : NULL,
							  GetLatestSnapshot(), InvalidSnapshot, false, false, 0);
	SPI_freeplan(plan);
	restore_user(saved_uid, saved_sec);
	if (rc != expected)
		elog(ERROR, "autocdc catalog statement failed (%d): %s", rc, sql);
	return SPI_processed;
}

/* The first column of every row of the last result, as strings. */
static List *
result_strings(void)
{
	List	   *result = NIL;
	uint64		i;

	for (i = 0; i < SPI_processed; i++)
		result = lappend(result, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
	return result;
}

/* A column of the first row of the last result. */
static Datum
result_value(int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, isnull);
}

/* ----------------------------------------------------------------
 * the installed version
 * ----------------------------------------------------------------
 */

/*
 * The version of autocdc installed in this database (palloc'd), or NULL
 * when it is not installed.  (pg_extension, not autocdc's own tables.)
 */
char *
catalog_installed_version(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *result = NULL;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("autocdc"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			result = TextDatumGetCString(d);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

/*
 * Refuse to act on flows while this database's catalog is at another
 * version than the library (after a library upgrade, before ALTER
 * EXTENSION autocdc UPDATE).
 */
void
catalog_require_current(void)
{
	char	   *installed = catalog_installed_version();

	if (installed != NULL && strcmp(installed, AUTOCDC_VERSION) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("autocdc %s is installed in this database, but the server runs the autocdc %s library",
						installed, AUTOCDC_VERSION),
				 errdetail("No flow is applied, created or changed until the extension is updated."),
				 errhint("Run ALTER EXTENSION autocdc UPDATE.")));
}

/* ----------------------------------------------------------------
 * flows
 * ----------------------------------------------------------------
 */

/* The columns catalog_load_flow reads, in its select list's order. */
typedef enum FlowColumn
{
	FC_ID,
	FC_NAME,
	FC_OWNER,
	FC_KIND,
	FC_SOURCE,
	FC_SOURCE_TEXT,
	FC_ONCE,
	FC_SOURCE_FUNCTION,
	FC_TARGET_ID,
	FC_TARGET,
	FC_SNAPSHOT_TARGET,
	FC_SCD,
	FC_KEYS,
	FC_SEQUENCE_BY,
	FC_DELETES,
	FC_TRUNCATES,
	FC_IGNORE_NULLS,
	FC_COLUMNS,
	FC_COLUMN_LIST,
	FC_EXCEPT_LIST,
	FC_TRACK,
	FC_TRACK_LIST,
	FC_TRACK_EXCEPT,
	FC_SEQ_TYPE,
	FC_OWN_RETENTION,
	FC_RETENTION,
	FC_CONTINUOUS,
	FC_PROGRESS,
	FC_SLOT_NAME,
	FC_ONCE_DONE,
	FC_SKIP_UPTO,
	FC_LAST_RUN_AT,
	FC_WAITING,
	FC_IGNORED_UPDATES,
	FC_SNAPSHOT_VERSION,
	FC_SOURCE_KIND,
	FC_PROGRESS_TS,
	FC_RESYNC_REASON,
	FC_KEEPS_STATE,
	FC_SYSTEM_SEQUENCE_BY,
	FC_SYSSEQ_TYPE,
	FC_INU_LIST,
	FC_INU_EXCEPT,
	FC_COLUMNS_TO_UPDATE,
	FC_SOURCE_QUERY,
	FC_VERSION_QUERY,
	FC_VERSION_TYPE,
	FC_NCOLUMNS
} FlowColumn;

static const char *const flow_columns[FC_NCOLUMNS] = {
	[FC_ID] = "f.id",
	[FC_NAME] = "f.name",
	[FC_OWNER] = "f.owner::pg_catalog.oid",
	[FC_KIND] = "f.kind",
	[FC_SOURCE] = "f.source::pg_catalog.oid",
	[FC_SOURCE_TEXT] = "f.source_text",
	[FC_ONCE] = "f.once",
	[FC_SOURCE_FUNCTION] = "f.source_function",
	[FC_TARGET_ID] = "f.target_id",
	[FC_TARGET] = "t.relid::pg_catalog.oid",
	[FC_SNAPSHOT_TARGET] = "f.snapshot_target",
	[FC_SCD] = "f.scd_type",
	[FC_KEYS] = "f.keys",
	[FC_SEQUENCE_BY] = "f.sequence_by",
	[FC_DELETES] = "f.apply_as_deletes",
	[FC_TRUNCATES] = "f.apply_as_truncates",
	[FC_IGNORE_NULLS] = "f.ignore_null_updates",
	[FC_COLUMNS] = "f.columns",
	[FC_COLUMN_LIST] = "f.column_list",
	[FC_EXCEPT_LIST] = "f.except_column_list",
	[FC_TRACK] = "f.track_columns",
	[FC_TRACK_LIST] = "f.track_history_column_list",
	[FC_TRACK_EXCEPT] = "f.track_history_except_column_list",
	[FC_SEQ_TYPE] = "t.seq_type::pg_catalog.oid",
	[FC_OWN_RETENTION] = "f.tombstone_retention::pg_catalog.text",
	/* a target's retention is the longest of its flows', none if one has none */
	[FC_RETENTION] = "(SELECT CASE WHEN pg_catalog.bool_and(g.tombstone_retention IS NOT NULL) "
	"THEN pg_catalog.max(g.tombstone_retention)::pg_catalog.text END "
	"FROM autocdc.flow g WHERE g.target_id OPERATOR(pg_catalog.=) f.target_id)",
	[FC_CONTINUOUS] = "f.continuous",
	[FC_PROGRESS] = "s.progress",
	[FC_SLOT_NAME] = "s.slot_name",
	[FC_ONCE_DONE] = "s.once_done",
	[FC_SKIP_UPTO] = "s.skip_upto",
	[FC_LAST_RUN_AT] = "s.last_run_at",
	[FC_WAITING] = "s.waiting_since IS NOT NULL",
	[FC_IGNORED_UPDATES] = "s.num_ignored_updates",
	[FC_SNAPSHOT_VERSION] = "f.snapshot_version",
	[FC_SOURCE_KIND] = "f.source_kind",
	[FC_PROGRESS_TS] = "s.progress_timestamp",
	[FC_RESYNC_REASON] = "s.resync_reason",
	[FC_KEEPS_STATE] = "t.keeps_state IS DISTINCT FROM false",
	[FC_SYSTEM_SEQUENCE_BY] = "f.system_sequence_by",
	[FC_SYSSEQ_TYPE] = "t.sysseq_type::pg_catalog.oid",
	[FC_INU_LIST] = "f.ignore_null_updates_column_list",
	[FC_INU_EXCEPT] = "f.ignore_null_updates_except_column_list",
	[FC_COLUMNS_TO_UPDATE] = "f.columns_to_update",
	[FC_SOURCE_QUERY] = "f.source_query",
	[FC_VERSION_QUERY] = "f.version_query",
	[FC_VERSION_TYPE] = "f.version_type::pg_catalog.regtype::pg_catalog.oid",
};

/* Column c of the flow row being read (NULL: *isnull). */
#define FLOW_GET(c, isnull) \
	SPI_getbinval(tup, desc, (c) + 1, (isnull))

/* A text column of the flow row, or NULL. */
static char *
flow_text(HeapTuple tup, TupleDesc desc, FlowColumn c)
{
	bool		isnull;
	Datum		d = FLOW_GET(c, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

/* A text[] column of identifiers, NIL when NULL (*given says which). */
static List *
flow_idents(HeapTuple tup, TupleDesc desc, FlowColumn c, bool *given)
{
	bool		isnull;
	Datum		d = FLOW_GET(c, &isnull);

	if (given)
		*given = !isnull;
	return isnull ? NIL : parse_identifier_array(DatumGetArrayTypeP(d), "column");
}

/* The flow row being read, as a FlowDef. */
static FlowDef *
flow_from_row(HeapTuple tup, TupleDesc desc)
{
	FlowDef    *f = palloc0(sizeof(FlowDef));
	bool		isnull;
	Datum		d;

	f->id = DatumGetInt32(FLOW_GET(FC_ID, &isnull));
	f->name = flow_text(tup, desc, FC_NAME);
	f->owner = DatumGetObjectId(FLOW_GET(FC_OWNER, &isnull));
	f->kind = strcmp(flow_text(tup, desc, FC_KIND), "snapshot") == 0 ? FLOW_SNAPSHOT : FLOW_CDC;
	d = FLOW_GET(FC_SOURCE, &isnull);
	f->source = isnull ? InvalidOid : DatumGetObjectId(d);
	f->source_text = flow_text(tup, desc, FC_SOURCE_TEXT);
	f->once = DatumGetBool(FLOW_GET(FC_ONCE, &isnull));
	f->source_function = flow_text(tup, desc, FC_SOURCE_FUNCTION);
	d = FLOW_GET(FC_TARGET_ID, &isnull);
	f->target_id = isnull ? 0 : DatumGetInt32(d);
	d = FLOW_GET(FC_TARGET, &isnull);
	f->target = isnull ? InvalidOid : DatumGetObjectId(d);
	f->snapshot_target = flow_text(tup, desc, FC_SNAPSHOT_TARGET);
	f->scd = flow_text(tup, desc, FC_SCD)[0];
	f->keys = array_to_names(FLOW_GET(FC_KEYS, &isnull));
	f->sequence_by = flow_text(tup, desc, FC_SEQUENCE_BY);
	f->deletes = flow_text(tup, desc, FC_DELETES);
	f->truncates = flow_text(tup, desc, FC_TRUNCATES);
	f->ignore_nulls = DatumGetBool(FLOW_GET(FC_IGNORE_NULLS, &isnull));
	f->columns = array_to_names(FLOW_GET(FC_COLUMNS, &isnull));
	d = FLOW_GET(FC_COLUMN_LIST, &isnull);
	f->has_include = !isnull;
	f->col_include = isnull ? NIL : parse_column_array(DatumGetArrayTypeP(d), &f->col_from);
	f->col_except = flow_idents(tup, desc, FC_EXCEPT_LIST, NULL);
	d = FLOW_GET(FC_TRACK, &isnull);
	f->track_all = isnull;
	f->track = isnull ? NIL : array_to_names(d);
	f->track_include = flow_idents(tup, desc, FC_TRACK_LIST, &f->has_track_include);
	f->track_except = flow_idents(tup, desc, FC_TRACK_EXCEPT, NULL);
	f->inu_include = flow_idents(tup, desc, FC_INU_LIST, &f->has_inu_include);
	f->inu_except = flow_idents(tup, desc, FC_INU_EXCEPT, &f->has_inu_except);
	f->columns_to_update = flow_text(tup, desc, FC_COLUMNS_TO_UPDATE);
	d = FLOW_GET(FC_SEQ_TYPE, &isnull);
	f->seq_type = isnull ? InvalidOid : DatumGetObjectId(d);
	f->tombstone_retention = flow_text(tup, desc, FC_OWN_RETENTION);
	f->retention = flow_text(tup, desc, FC_RETENTION);
	f->continuous = DatumGetBool(FLOW_GET(FC_CONTINUOUS, &isnull));
	d = FLOW_GET(FC_PROGRESS, &isnull);
	f->has_progress = !isnull;
	f->progress = isnull ? InvalidXLogRecPtr : DatumGetLSN(d);
	f->slot_name = flow_text(tup, desc, FC_SLOT_NAME);
	f->resync_reason = flow_text(tup, desc, FC_RESYNC_REASON);
	f->once_done = DatumGetBool(FLOW_GET(FC_ONCE_DONE, &isnull));
	d = FLOW_GET(FC_SKIP_UPTO, &isnull);
	f->skip_upto = isnull ? InvalidXLogRecPtr : DatumGetLSN(d);
	d = FLOW_GET(FC_LAST_RUN_AT, &isnull);
	f->last_run_at = isnull ? 0 : DatumGetTimestampTz(d);
	d = FLOW_GET(FC_WAITING, &isnull);
	f->waiting = !isnull && DatumGetBool(d);
	d = FLOW_GET(FC_IGNORED_UPDATES, &isnull);
	f->ignored_updates = isnull ? 0 : DatumGetInt64(d);
	f->snapshot_version = flow_text(tup, desc, FC_SNAPSHOT_VERSION);
	f->srckind = srckind_by_name(flow_text(tup, desc, FC_SOURCE_KIND));
	d = FLOW_GET(FC_PROGRESS_TS, &isnull);
	f->progress_ts = isnull ? 0 : DatumGetTimestampTz(d);
	f->keeps_state = DatumGetBool(FLOW_GET(FC_KEEPS_STATE, &isnull));
	f->system_sequence_by = flow_text(tup, desc, FC_SYSTEM_SEQUENCE_BY);
	d = FLOW_GET(FC_SYSSEQ_TYPE, &isnull);
	f->sysseq_type = isnull ? InvalidOid : DatumGetObjectId(d);
	f->source_query = flow_text(tup, desc, FC_SOURCE_QUERY);
	f->version_query = flow_text(tup, desc, FC_VERSION_QUERY);
	d = FLOW_GET(FC_VERSION_TYPE, &isnull);
	f->version_type = isnull ? InvalidOid : DatumGetObjectId(d);
	return f;
}

/*
 * Load a flow by name.  With lock, its flow_state row is locked FOR
 * UPDATE: that is the lock that keeps two appliers off one flow.
 */
FlowDef *
catalog_load_flow(const char *name, bool lock, bool missing_ok)
{
	StringInfoData sql;
	CatArgs		a = {0};
	int			i;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (i = 0; i < FC_NCOLUMNS; i++)
		appendStringInfo(&sql, "%s%s", i ? ", " : "", flow_columns[i]);
	appendStringInfo(&sql, " FROM autocdc.flow f LEFT JOIN autocdc.target t ON t.id OPERATOR(pg_catalog.=) f.target_id "
					 "JOIN autocdc.flow_state s ON s.name OPERATOR(pg_catalog.=) f.name "
					 "WHERE f.name OPERATOR(pg_catalog.=) $1%s",
					 lock ? " FOR UPDATE OF s" : "");
	arg_text(&a, name);
	if (cat_exec(sql.data, &a, SPI_OK_SELECT) == 0)
	{
		if (missing_ok)
			return NULL;
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("flow \"%s\" does not exist", name)));
	}
	return flow_from_row(SPI_tuptable->vals[0], SPI_tuptable->tupdesc);
}

/* Is there a flow of that name? */
bool
catalog_flow_exists(const char *name)
{
	CatArgs		a = {0};

	arg_text(&a, name);
	return cat_exec("SELECT 1 FROM autocdc.flow WHERE name OPERATOR(pg_catalog.=) $1",
					&a, SPI_OK_SELECT) > 0;
}

/* The owner of a flow by id, or InvalidOid when there is none. */
Oid
catalog_flow_owner(int32 flow_id)
{
	CatArgs		a = {0};
	bool		isnull;

	arg_int4(&a, flow_id);
	if (cat_exec("SELECT owner::pg_catalog.oid FROM autocdc.flow WHERE id OPERATOR(pg_catalog.=) $1",
				 &a, SPI_OK_SELECT) == 0)
		return InvalidOid;
	return DatumGetObjectId(result_value(1, &isnull));
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

/* The scd_type text of a storage kind's code ('b': bitemporal). */
static const char *
scd_type_text(char code)
{
	return code == 'b' ? "bitemporal" : psprintf("%c", code);
}

/*
 * Record a new flow (its flow and flow_state rows).  A flow of that name
 * committed by a concurrent transaction since the caller's check is
 * reported as such, not as a unique violation.
 */
void
catalog_insert_flow(FlowDef *f)
{
	CatArgs		a = {0};
	MemoryContext cxt = CurrentMemoryContext;

	arg_text(&a, f->name);		/* $1 */
	arg_oid(&a, f->owner);
	arg_text(&a, f->kind == FLOW_SNAPSHOT ? "snapshot" : "cdc");
	arg_add(&a, OIDOID, ObjectIdGetDatum(f->source), !OidIsValid(f->source));
	arg_text(&a, f->source_text);	/* $5 */
	arg_add(&a, INT4OID, Int32GetDatum(f->target_id), f->target_id == 0);
	arg_names(&a, f->keys, false);
	arg_text(&a, f->sequence_by);
	arg_bool(&a, f->ignore_nulls);
	arg_text(&a, f->deletes);	/* $10 */
	arg_text(&a, f->truncates);
	arg_names(&a, f->columns, false);
	arg_add(&a, TEXTARRAYOID, column_array(f->col_include, f->col_from), !f->has_include);
	arg_idents(&a, f->col_except, f->col_except == NIL);
	arg_text(&a, scd_type_text(f->scd));	/* $15 */
	arg_names(&a, f->track, f->track_all);
	arg_idents(&a, f->track_include, !f->has_track_include);
	arg_idents(&a, f->track_except, f->track_except == NIL);
	arg_bool(&a, f->once);
	arg_bool(&a, f->continuous);	/* $20 */
	arg_text(&a, f->tombstone_retention);
	arg_text(&a, f->source_function);
	arg_text(&a, f->snapshot_target);	/* $23 */
	arg_text(&a, f->srckind->name);
	arg_text(&a, f->system_sequence_by);	/* $25 */
	arg_idents(&a, f->inu_include, !f->has_inu_include);
	arg_idents(&a, f->inu_except, !f->has_inu_except);
	arg_text(&a, f->columns_to_update);
	arg_text(&a, f->source_query);
	arg_text(&a, f->version_query);
	arg_text(&a, OidIsValid(f->version_type) ? format_type_be_qualified(f->version_type) : NULL);
	PG_TRY();
	{
		cat_exec("INSERT INTO autocdc.flow (name, owner, kind, source, source_text, target_id, keys, "
				 "sequence_by, ignore_null_updates, apply_as_deletes, apply_as_truncates, columns, "
				 "column_list, except_column_list, scd_type, track_columns, track_history_column_list, "
				 "track_history_except_column_list, once, continuous, tombstone_retention, "
				 "source_function, snapshot_target, source_kind, system_sequence_by, "
				 "ignore_null_updates_column_list, ignore_null_updates_except_column_list, "
				 "columns_to_update, "
				 "source_query, version_query, version_type) "
				 "VALUES ($1, $2::pg_catalog.regrole, $3, $4::pg_catalog.regclass, $5, $6, $7, $8, $9, "
				 "$10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21::pg_catalog.interval, $22, $23, "
				 "$24, $25, $26, $27, $28, $29, $30, $31)",
				 &a, SPI_OK_INSERT);
		a.n = 1;
		cat_exec("INSERT INTO autocdc.flow_state (name) VALUES ($1)", &a, SPI_OK_INSERT);
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
				 errmsg("flow \"%s\" already exists", f->name),
				 errhint("Give the flow another name with name => '...', or drop the existing flow first.")));
	}
	PG_END_TRY();
}

/* Delete a flow's rows. */
void
catalog_delete_flow(const char *name)
{
	CatArgs		a = {0};

	arg_text(&a, name);
	cat_exec("DELETE FROM autocdc.flow WHERE name OPERATOR(pg_catalog.=) $1", &a, SPI_OK_DELETE);
}

/* Names of the flows writing a target, in name order. */
List *
catalog_target_flows(int target_id)
{
	CatArgs		a = {0};

	arg_int4(&a, target_id);
	cat_exec("SELECT name FROM autocdc.flow WHERE target_id OPERATOR(pg_catalog.=) $1 ORDER BY name",
			 &a, SPI_OK_SELECT);
	return result_strings();
}

/* The snapshot flow writing a target, or NULL. */
char *
catalog_snapshot_flow_of(int target_id)
{
	CatArgs		a = {0};

	arg_int4(&a, target_id);
	if (cat_exec("SELECT name FROM autocdc.flow WHERE target_id OPERATOR(pg_catalog.=) $1 "
				 "AND kind OPERATOR(pg_catalog.=) 'snapshot' ORDER BY name LIMIT 1",
				 &a, SPI_OK_SELECT) == 0)
		return NULL;
	return linitial(result_strings());
}

/*
 * A snapshot flow over a version function that will create target (its
 * schema-qualified, quoted name) at its first run, or NULL.
 */
char *
catalog_pending_snapshot_flow(const char *target)
{
	CatArgs		a = {0};

	arg_text(&a, target);
	if (cat_exec("SELECT name FROM autocdc.flow WHERE target_id IS NULL "
				 "AND snapshot_target OPERATOR(pg_catalog.=) $1 ORDER BY name LIMIT 1",
				 &a, SPI_OK_SELECT) == 0)
		return NULL;
	return linitial(result_strings());
}

/* The first flow (by name) writing a relation, or NULL. */
char *
catalog_flow_of_relation(Oid relid)
{
	CatArgs		a = {0};

	arg_oid(&a, relid);
	if (cat_exec("SELECT f.name FROM autocdc.flow f JOIN autocdc.target t "
				 "ON t.id OPERATOR(pg_catalog.=) f.target_id "
				 "WHERE t.relid OPERATOR(pg_catalog.=) $1::pg_catalog.regclass ORDER BY f.name LIMIT 1",
				 &a, SPI_OK_SELECT) == 0)
		return NULL;
	return linitial(result_strings());
}

/* Record the source columns a flow now selects. */
void
catalog_set_columns(FlowDef *flow, List *columns)
{
	CatArgs		a = {0};

	arg_text(&a, flow->name);
	arg_names(&a, columns, false);
	cat_exec("UPDATE autocdc.flow SET columns = $2 WHERE name OPERATOR(pg_catalog.=) $1",
			 &a, SPI_OK_UPDATE);
	flow->columns = columns;
}

/*
 * Record the sequence types of a flow's target, flattened at a run (a flow
 * made before autocdc flattened domains): for every flow of the target.
 */
void
catalog_set_seq_types(FlowDef *flow, Oid seq_type, Oid sysseq_type)
{
	CatArgs		a = {0};

	arg_int4(&a, flow->target_id);
	arg_oid(&a, seq_type);
	arg_add(&a, OIDOID, ObjectIdGetDatum(sysseq_type), !OidIsValid(sysseq_type));
	cat_exec("UPDATE autocdc.target SET seq_type = $2, sysseq_type = $3 "
			 "WHERE id OPERATOR(pg_catalog.=) $1", &a, SPI_OK_UPDATE);
	flow->seq_type = seq_type;
	flow->sysseq_type = sysseq_type;
}

/* A snapshot flow's first run created its target: record it. */
void
catalog_set_snapshot_target(FlowDef *flow, int target_id, List *columns, List *track,
							bool track_all)
{
	CatArgs		a = {0};

	arg_text(&a, flow->name);
	arg_int4(&a, target_id);
	arg_names(&a, columns, false);
	arg_names(&a, track, track_all);
	cat_exec("UPDATE autocdc.flow SET target_id = $2, columns = $3, track_columns = $4, "
			 "snapshot_target = NULL WHERE name OPERATOR(pg_catalog.=) $1",
			 &a, SPI_OK_UPDATE);
}

/* Record the last applied version of a snapshot flow (NULL: none). */
void
catalog_set_snapshot_version(FlowDef *flow, const char *version)
{
	CatArgs		a = {0};

	arg_text(&a, flow->name);
	arg_text(&a, version);
	cat_exec("UPDATE autocdc.flow SET snapshot_version = $2 WHERE name OPERATOR(pg_catalog.=) $1",
			 &a, SPI_OK_UPDATE);
	flow->snapshot_version = version ? pstrdup(version) : NULL;
}

/* Pass source transactions up to upto (never back), and retry now. */
void
catalog_set_skip(const char *name, XLogRecPtr upto)
{
	CatArgs		a = {0};

	arg_text(&a, name);
	arg_lsn(&a, upto, false);
	cat_exec("UPDATE autocdc.flow_state SET skip_upto = "
			 "CASE WHEN skip_upto IS NULL OR skip_upto OPERATOR(pg_catalog.<) $2 THEN $2 ELSE skip_upto END, "
			 "retry_at = NULL WHERE name OPERATOR(pg_catalog.=) $1",
			 &a, SPI_OK_UPDATE);
}

/* Pause or resume a flow (resuming retries a failed one now). */
void
catalog_set_paused(const char *name, bool paused)
{
	CatArgs		a = {0};

	arg_text(&a, name);
	arg_bool(&a, paused);
	cat_exec("WITH r AS (UPDATE autocdc.flow_state SET retry_at = NULL "
			 "WHERE name OPERATOR(pg_catalog.=) $1 AND NOT $2) "
			 "UPDATE autocdc.flow SET paused = $2 WHERE name OPERATOR(pg_catalog.=) $1",
			 &a, SPI_OK_UPDATE);
}

/*
 * A run's counts per expectation as jsonb text, {name: {passed, failed}};
 * NULL when the target has none.
 */
static char *
expectation_counts(List *expectations)
{
	StringInfoData buf;
	ListCell   *lc;

	if (expectations == NIL)
		return NULL;
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	foreach(lc, expectations)
	{
		Expectation *e = lfirst(lc);

		if (foreach_current_index(lc) > 0)
			appendStringInfoString(&buf, ", ");
		escape_json(&buf, e->name);
		appendStringInfo(&buf, ": {\"passed\": " INT64_FORMAT ", \"failed\": " INT64_FORMAT "}",
						 e->passed, e->failed);
	}
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

/*
 * Add a run's counts to its target's expectations' totals (the target is
 * locked by the run: one flow at a time writes it).
 */
static void
save_expectation_totals(FlowDef *flow)
{
	ListCell   *lc;

	foreach(lc, flow->run.expectations)
	{
		Expectation *e = lfirst(lc);
		CatArgs		a = {0};

		arg_int4(&a, flow->target_id);
		arg_text(&a, e->name);
		arg_add(&a, INT8OID, Int64GetDatum(e->passed), false);
		arg_add(&a, INT8OID, Int64GetDatum(e->failed), false);
		cat_exec("UPDATE autocdc.expectation SET num_passed = num_passed OPERATOR(pg_catalog.+) $3, "
				 "num_failed = num_failed OPERATOR(pg_catalog.+) $4 "
				 "WHERE target_id OPERATOR(pg_catalog.=) $1 AND name OPERATOR(pg_catalog.=) $2",
				 &a, SPI_OK_UPDATE);
	}
}

/* Record a run's progress and totals, and (with log) log it in flow_runs. */
void
catalog_save_progress(FlowDef *flow, RunMetrics *m, TimestampTz started, bool log)
{
	CatArgs		a = {0};

	arg_text(&a, flow->name);	/* $1 */
	arg_lsn(&a, flow->progress, !flow->has_progress);
	arg_bool(&a, flow->once_done);
	arg_add(&a, INT8OID, Int64GetDatum(m->num_events), false);
	arg_add(&a, INT8OID, Int64GetDatum(m->num_upserted), false);	/* $5 */
	arg_add(&a, INT8OID, Int64GetDatum(m->num_deleted), false);
	arg_add(&a, INT8OID, Int64GetDatum(m->num_skipped), false);
	arg_add(&a, TIMESTAMPTZOID, TimestampTzGetDatum(started), false);
	arg_add(&a, TIMESTAMPTZOID, TimestampTzGetDatum(m->last_commit_time), m->last_commit_time == 0);
	arg_text(&a, flow->slot_name);	/* $10 */
	arg_lsn(&a, flow->skip_upto, XLogRecPtrIsInvalid(flow->skip_upto));
	arg_int4(&a, flow->id);
	arg_add(&a, INT8OID, Int64GetDatum(m->num_ignored_updates), false);	/* $13 */
	arg_add(&a, INT8OID, Int64GetDatum(m->num_ignored_deletes), false);
	arg_add(&a, TIMESTAMPTZOID, TimestampTzGetDatum(flow->progress_ts), flow->progress_ts == 0);	/* $15 */
	arg_bool(&a, flow->run.read_whole);
	arg_text(&a, expectation_counts(flow->run.expectations));	/* $17 */
	/* a resync marked meanwhile (catalog_mark_resync) lasts until a whole read */
	cat_exec("UPDATE autocdc.flow_state SET progress = $2, once_done = $3, progress_timestamp = $15, "
			 "num_events = num_events OPERATOR(pg_catalog.+) $4, "
			 "num_ignored_updates = num_ignored_updates OPERATOR(pg_catalog.+) $13, "
			 "num_ignored_deletes = num_ignored_deletes OPERATOR(pg_catalog.+) $14, "
			 "num_upserted_rows = num_upserted_rows OPERATOR(pg_catalog.+) $5, "
			 "num_deleted_rows = num_deleted_rows OPERATOR(pg_catalog.+) $6, "
			 "num_skipped_events = num_skipped_events OPERATOR(pg_catalog.+) $7, "
			 "last_run_at = $8, last_error = NULL, last_error_at = NULL, last_error_detail = NULL, "
			 "last_error_hint = NULL, last_error_sqlstate = NULL, last_error_lsn = NULL, "
			 "retries = 0, retry_at = NULL, "
			 "last_commit_at = coalesce($9, last_commit_at), skip_upto = $11, waiting_since = NULL, "
			 "slot_name = CASE WHEN resync_reason IS NULL OR $16 THEN $10 END, "
			 "resync_reason = CASE WHEN $16 THEN NULL ELSE resync_reason END "
			 "WHERE name OPERATOR(pg_catalog.=) $1",
			 &a, SPI_OK_UPDATE);
	if (log)
		cat_exec("INSERT INTO autocdc.flow_run_log (flow, flow_id, started_at, finished_at, num_events, "
				 "num_upserted_rows, num_deleted_rows, num_skipped_events, status, expectations) "
				 "VALUES ($1, $12, $8, pg_catalog.clock_timestamp(), $4, $5, $6, $7, 'ok', $17::pg_catalog.jsonb)",
				 &a, SPI_OK_INSERT);
	save_expectation_totals(flow);
}

/*
 * Lock the state of a flow (by id) that failed at failed_at, and read how
 * many failed runs it has had since its last good one; false (nothing
 * locked) if it has no state, or a good run after failed_at.
 */
bool
catalog_lock_failed_state(int32 flow_id, TimestampTz failed_at, int *retries)
{
	CatArgs		a = {0};
	bool		isnull;

	arg_int4(&a, flow_id);
	arg_add(&a, TIMESTAMPTZOID, TimestampTzGetDatum(failed_at), false);
	if (cat_exec("SELECT s.retries FROM autocdc.flow_state s JOIN autocdc.flow f "
				 "ON s.name OPERATOR(pg_catalog.=) f.name WHERE f.id OPERATOR(pg_catalog.=) $1 "
				 "AND (s.last_run_at IS NULL OR s.last_run_at OPERATOR(pg_catalog.<) $2) "
				 "FOR UPDATE OF s", &a, SPI_OK_SELECT) == 0)
		return false;
	*retries = DatumGetInt32(result_value(1, &isnull));
	return true;
}

/*
 * Is a failed run of a flow (by id) at failed_at in the run log already?
 * (Two backends can find one failure in shared memory; the second to lock
 * the flow's state sees the first's row once it committed.)
 */
bool
catalog_failure_logged(int32 flow_id, TimestampTz failed_at)
{
	CatArgs		a = {0};

	arg_int4(&a, flow_id);
	arg_add(&a, TIMESTAMPTZOID, TimestampTzGetDatum(failed_at), false);
	return cat_exec("SELECT FROM autocdc.flow_run_log WHERE flow_id OPERATOR(pg_catalog.=) $1 "
					"AND started_at OPERATOR(pg_catalog.=) $2 "
					"AND status OPERATOR(pg_catalog.=) 'error' LIMIT 1",
					&a, SPI_OK_SELECT) > 0;
}

/*
 * Write down a failed run of a flow (by id): a flow_runs row, and, unless
 * failure->retry_at is 0, the error in flow_state, one more retry and its
 * time (failure->retry_at, decided by the caller; the state was locked by
 * catalog_lock_failed_state).  A failure that needs a resync also takes the
 * flow off its slot: it then shows needs_resync, pins nothing, and is left
 * alone until full_refresh.  A failure older than the flow's last good run
 * (written down late, e.g. by another backend) only goes into the run log.
 */
void
catalog_record_failure(int32 flow_id, const FlowFailure *failure)
{
	CatArgs		a = {0};

	arg_int4(&a, flow_id);
	arg_text(&a, failure->message);
	arg_add(&a, TIMESTAMPTZOID, TimestampTzGetDatum(failure->at), false);
	arg_text(&a, failure->detail);
	arg_text(&a, failure->hint);
	arg_text(&a, failure->sqlstate);
	arg_lsn(&a, failure->lsn, XLogRecPtrIsInvalid(failure->lsn));
	arg_bool(&a, failure->resync);
	arg_add(&a, TIMESTAMPTZOID, TimestampTzGetDatum(failure->retry_at), false);
	cat_exec("INSERT INTO autocdc.flow_run_log (flow, flow_id, started_at, finished_at, status, "
			 "error, error_detail, error_hint, error_sqlstate, error_lsn) "
			 "SELECT f.name, f.id, $3, $3, 'error', $2, $4, $5, $6, $7 FROM autocdc.flow f "
			 "WHERE f.id OPERATOR(pg_catalog.=) $1",
			 &a, SPI_OK_INSERT);
	if (failure->retry_at == 0)
		return;
	cat_exec("UPDATE autocdc.flow_state s SET last_error = $2, last_error_at = $3, "
			 "last_error_detail = $4, last_error_hint = $5, last_error_sqlstate = $6, "
			 "last_error_lsn = $7, "
			 "retries = s.retries OPERATOR(pg_catalog.+) 1, "
			 "retry_at = $9, "
			 "slot_name = CASE WHEN $8 THEN NULL ELSE s.slot_name END, "
			 "laggard_since = CASE WHEN $8 THEN NULL ELSE s.laggard_since END, "
			 "resync_reason = CASE WHEN $8 THEN coalesce(s.resync_reason, $2) ELSE s.resync_reason END "
			 "FROM autocdc.flow f WHERE f.id OPERATOR(pg_catalog.=) $1 "
			 "AND s.name OPERATOR(pg_catalog.=) f.name "
			 "AND (s.last_run_at IS NULL OR s.last_run_at OPERATOR(pg_catalog.<) $3)",
			 &a, SPI_OK_UPDATE);
}

/* ----------------------------------------------------------------
 * roles and sources
 * ----------------------------------------------------------------
 */

/* Names of the flows any of the roles owns, in name order. */
List *
catalog_flows_of_roles(List *roleids)
{
	CatArgs		a = {0};

	arg_oids(&a, roleids);
	cat_exec("SELECT name FROM autocdc.flow WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) "
			 "ORDER BY name", &a, SPI_OK_SELECT);
	return result_strings();
}

/* Give the flows of one role, and the expectations it set, to another. */
void
catalog_reassign_flows(Oid from, Oid to)
{
	CatArgs		a = {0};

	arg_oid(&a, from);
	arg_oid(&a, to);
	cat_exec("UPDATE autocdc.flow SET owner = $2::pg_catalog.regrole "
			 "WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
			 &a, SPI_OK_UPDATE);
	/* the expectations a set are b's, as a's flows' expressions are */
	cat_exec("UPDATE autocdc.expectation SET owner = $2::pg_catalog.regrole "
			 "WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
			 &a, SPI_OK_UPDATE);
}

/* Names of the change flows whose source (feed) is one of relids. */
List *
catalog_flows_reading(List *relids)
{
	CatArgs		a = {0};

	arg_oids(&a, relids);
	cat_exec("SELECT name FROM autocdc.flow WHERE kind OPERATOR(pg_catalog.=) 'cdc' AND NOT once "
			 "AND source::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) ORDER BY name",
			 &a, SPI_OK_SELECT);
	return result_strings();
}

/* The targets (relids) of the flows that read a relation. */
List *
catalog_flow_targets_of(Oid source)
{
	CatArgs		a = {0};
	List	   *result = NIL;
	ListCell   *lc;

	arg_oid(&a, source);
	/* (what is committed now: check_no_cycle waited for concurrent flows) */
	cat_exec_latest("SELECT t.relid::pg_catalog.oid FROM autocdc.flow f "
			 "JOIN autocdc.target t ON t.id OPERATOR(pg_catalog.=) f.target_id "
			 "WHERE f.source::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
			 &a, SPI_OK_SELECT);
	foreach(lc, result_strings())
		result = lappend_oid(result, atooid(lfirst(lc)));
	return result;
}

/* Does a continuous change flow that is not paused read the relation? */
bool
catalog_is_continuous_source(Oid relid)
{
	CatArgs		a = {0};

	arg_oid(&a, relid);
	return cat_exec("SELECT 1 FROM autocdc.flow WHERE kind OPERATOR(pg_catalog.=) 'cdc' "
					"AND continuous AND NOT paused AND NOT once "
					"AND source::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
					&a, SPI_OK_SELECT) > 0;
}

/* ----------------------------------------------------------------
 * targets
 * ----------------------------------------------------------------
 */

/* Read the target row of a relation into *t; false if it has none. */
bool
catalog_load_target(Oid relid, TargetDef *t)
{
	CatArgs		a = {0};
	bool		isnull;
	Datum		d;

	arg_oid(&a, relid);
	if (cat_exec("SELECT id, scd_type, keys, seq_type::pg_catalog.oid, seq_typname, columns, keeps_state, "
				 "sysseq_type::pg_catalog.oid, sysseq_typname, range_typname "
				 "FROM autocdc.target WHERE relid OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 &a, SPI_OK_SELECT) == 0)
		return false;
	t->id = DatumGetInt32(result_value(1, &isnull));
	t->relid = relid;
	t->scd = TextDatumGetCString(result_value(2, &isnull))[0];
	t->keys = array_to_names(result_value(3, &isnull));
	t->seq_type = DatumGetObjectId(result_value(4, &isnull));
	d = result_value(5, &isnull);
	t->seq_typname = isnull ? NULL : pstrdup(NameStr(*DatumGetName(d)));
	t->columns = array_to_names(result_value(6, &isnull));
	t->keeps_state = DatumGetBool(result_value(7, &isnull));
	d = result_value(8, &isnull);
	t->sysseq_type = isnull ? InvalidOid : DatumGetObjectId(d);
	d = result_value(9, &isnull);
	t->sysseq_typname = isnull ? NULL : pstrdup(NameStr(*DatumGetName(d)));
	d = result_value(10, &isnull);
	t->range_typname = isnull ? NULL : pstrdup(NameStr(*DatumGetName(d)));
	return true;
}

/* Record a new target; t->id is set to its id. */
void
catalog_insert_target(TargetDef *t)
{
	CatArgs		a = {0};
	bool		isnull;

	arg_oid(&a, t->relid);
	arg_text(&a, scd_type_text(t->scd));
	arg_names(&a, t->keys, false);
	arg_oid(&a, t->seq_type);
	arg_add(&a, NAMEOID, t->seq_typname ? DirectFunctionCall1(namein, CStringGetDatum(t->seq_typname)) : 0,
			t->seq_typname == NULL);
	arg_names(&a, t->columns, false);
	arg_bool(&a, t->keeps_state);
	arg_add(&a, OIDOID, ObjectIdGetDatum(t->sysseq_type), !OidIsValid(t->sysseq_type));
	arg_add(&a, NAMEOID, t->sysseq_typname ? DirectFunctionCall1(namein, CStringGetDatum(t->sysseq_typname)) : 0,
			t->sysseq_typname == NULL);
	arg_add(&a, NAMEOID, t->range_typname ? DirectFunctionCall1(namein, CStringGetDatum(t->range_typname)) : 0,
			t->range_typname == NULL);
	cat_exec("INSERT INTO autocdc.target (relid, scd_type, keys, seq_type, seq_typname, columns, keeps_state, "
			 "sysseq_type, sysseq_typname, range_typname) "
			 "VALUES ($1::pg_catalog.regclass, $2, $3, $4::pg_catalog.regtype, $5, $6, $7, "
			 "$8::pg_catalog.regtype, $9, $10) RETURNING id",
			 &a, SPI_OK_INSERT_RETURNING);
	t->id = DatumGetInt32(result_value(1, &isnull));
}

/*
 * From now on the target keeps per-key hidden state (a flow that needs it
 * joined a target none writes any more).
 */
void
catalog_set_target_keeps_state(int target_id)
{
	CatArgs		a = {0};

	arg_int4(&a, target_id);
	cat_exec("UPDATE autocdc.target SET keeps_state = true WHERE id OPERATOR(pg_catalog.=) $1",
			 &a, SPI_OK_UPDATE);
}

/* Record the range type made for the index of a target's periods. */
void
catalog_set_target_range_typname(int target_id, const char *typname)
{
	CatArgs		a = {0};

	arg_int4(&a, target_id);
	arg_add(&a, NAMEOID, DirectFunctionCall1(namein, CStringGetDatum(typname)), false);
	cat_exec("UPDATE autocdc.target SET range_typname = $2 WHERE id OPERATOR(pg_catalog.=) $1",
			 &a, SPI_OK_UPDATE);
}

/*
 * Delete a target's row and the flows still writing it; returns the names
 * of the types autocdc made for it (range, sequence, system sequence: in
 * the order they can be dropped).
 */
List *
catalog_delete_target(int target_id)
{
	List	   *names = NIL;
	int			i;

	CatArgs		a = {0};
	bool		isnull;
	Datum		d;

	arg_int4(&a, target_id);
	cat_exec("DELETE FROM autocdc.flow WHERE target_id OPERATOR(pg_catalog.=) $1", &a, SPI_OK_DELETE);
	if (cat_exec("DELETE FROM autocdc.target WHERE id OPERATOR(pg_catalog.=) $1 "
				 "RETURNING range_typname, seq_typname, sysseq_typname",
				 &a, SPI_OK_DELETE_RETURNING) == 0)
		return NIL;
	/* the range type first: it may be a range of the sequence's type */
	for (i = 1; i <= 3; i++)
	{
		d = result_value(i, &isnull);
		if (!isnull)
			names = lappend(names, pstrdup(NameStr(*DatumGetName(d))));
	}
	return names;
}

/*
 * Lock a target's row, so that one flow at a time writes a target.  With
 * skip_locked, return false instead of waiting for another writer.
 */
bool
catalog_lock_target(int target_id, bool skip_locked)
{
	CatArgs		a = {0};

	arg_int4(&a, target_id);
	return cat_exec(skip_locked ?
					"SELECT 1 FROM autocdc.target WHERE id OPERATOR(pg_catalog.=) $1 FOR UPDATE SKIP LOCKED" :
					"SELECT 1 FROM autocdc.target WHERE id OPERATOR(pg_catalog.=) $1 FOR UPDATE",
					&a, SPI_OK_SELECT) > 0;
}

/* ----------------------------------------------------------------
 * expectations
 * ----------------------------------------------------------------
 */

/* A target's expectations, in name order, with zero counts. */
List *
catalog_load_expectations(int target_id)
{
	CatArgs		a = {0};
	List	   *result = NIL;
	uint64		i;

	arg_int4(&a, target_id);
	cat_exec("SELECT name, condition, on_violation, owner::pg_catalog.oid FROM autocdc.expectation "
			 "WHERE target_id OPERATOR(pg_catalog.=) $1 ORDER BY name COLLATE \"C\"",
			 &a, SPI_OK_SELECT);
	for (i = 0; i < SPI_processed; i++)
	{
		Expectation *e = palloc0(sizeof(Expectation));
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		e->name = SPI_getvalue(tup, desc, 1);
		e->condition = SPI_getvalue(tup, desc, 2);
		e->action = SPI_getvalue(tup, desc, 3)[0];
		e->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 4, &isnull));
		result = lappend(result, e);
	}
	return result;
}

/*
 * Add or replace an expectation of a target.  A replaced one starts its
 * counts again (they were counts of another rule), unless its condition
 * and action stay the same.
 */
#define SAME_EXPECTATION "expectation.condition OPERATOR(pg_catalog.=) excluded.condition " \
	"AND expectation.on_violation OPERATOR(pg_catalog.=) excluded.on_violation"

void
catalog_set_expectation(int target_id, Expectation *e)
{
	CatArgs		a = {0};

	arg_int4(&a, target_id);
	arg_text(&a, e->name);
	arg_text(&a, e->condition);
	arg_text(&a, e->action == EXPECT_FAIL ? "fail" : e->action == EXPECT_DROP ? "drop" : "warn");
	arg_oid(&a, e->owner);
	cat_exec("INSERT INTO autocdc.expectation (target_id, name, condition, on_violation, owner) "
			 "VALUES ($1, $2, $3, $4, $5::pg_catalog.regrole) "
			 "ON CONFLICT (target_id, name) DO UPDATE SET condition = excluded.condition, "
			 "on_violation = excluded.on_violation, owner = excluded.owner, "
			 "num_passed = CASE WHEN " SAME_EXPECTATION " THEN expectation.num_passed ELSE 0 END, "
			 "num_failed = CASE WHEN " SAME_EXPECTATION " THEN expectation.num_failed ELSE 0 END",
			 &a, SPI_OK_INSERT);
}

/* Drop an expectation of a target; false if it has none of that name. */
bool
catalog_drop_expectation(int target_id, const char *name)
{
	CatArgs		a = {0};

	arg_int4(&a, target_id);
	arg_text(&a, name);
	return cat_exec("DELETE FROM autocdc.expectation WHERE target_id OPERATOR(pg_catalog.=) $1 "
					"AND name OPERATOR(pg_catalog.=) $2", &a, SPI_OK_DELETE) > 0;
}

/* ----------------------------------------------------------------
 * the worker's questions
 * ----------------------------------------------------------------
 */

/* Are there change flows that decode (continuous ones, with the flag)? */
bool
catalog_has_change_flows(bool continuous_only)
{
	return cat_exec(continuous_only ?
					"SELECT 1 FROM autocdc.flow WHERE kind OPERATOR(pg_catalog.=) 'cdc' "
					"AND continuous AND NOT paused AND NOT once LIMIT 1" :
					"SELECT 1 FROM autocdc.flow WHERE kind OPERATOR(pg_catalog.=) 'cdc' AND NOT once LIMIT 1",
					NULL, SPI_OK_SELECT) > 0;
}

/* The oids of the last statement's first column (NULLs left out). */
static List *
result_oids(void)
{
	List	   *result = NIL;
	uint64		i;

	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			result = lappend_oid(result, DatumGetObjectId(d));
	}
	return result;
}

/* The sources and targets of every flow (oids, each once). */
List *
catalog_flow_relations(void)
{
	cat_exec("SELECT f.source::pg_catalog.oid FROM autocdc.flow f WHERE f.source IS NOT NULL "
			 "UNION SELECT t.relid::pg_catalog.oid FROM autocdc.target t WHERE t.relid IS NOT NULL",
			 NULL, SPI_OK_SELECT);
	return result_oids();
}

/* The sources of every flow (tables only), whatever slot serves them. */
List *
catalog_flow_sources(void)
{
	cat_exec("SELECT DISTINCT f.source::pg_catalog.oid FROM autocdc.flow f WHERE f.source IS NOT NULL",
			 NULL, SPI_OK_SELECT);
	return result_oids();
}

/*
 * Lock (skipping those a run holds) the continuous change flows that are
 * not paused, not done once, and whose retry_at is not after now: on
 * slot (on_slot), or on any other slot or none (slot NULL: all).  Returns
 * their names, in no particular order.
 */
List *
catalog_lock_due_change_flows(TimestampTz now, const char *slot, bool on_slot)
{
	CatArgs		a = {0};

	arg_text(&a, slot);
	arg_add(&a, TIMESTAMPTZOID, TimestampTzGetDatum(now), false);
	cat_exec(psprintf("SELECT f.name FROM autocdc.flow f "
					  "JOIN autocdc.flow_state s ON s.name OPERATOR(pg_catalog.=) f.name "
					  "WHERE f.kind OPERATOR(pg_catalog.=) 'cdc' AND f.continuous AND NOT f.paused "
					  "AND NOT (f.once AND s.once_done) "
					  "AND (s.retry_at IS NULL OR s.retry_at OPERATOR(pg_catalog.<=) $2) "
					  "AND %s "
					  "FOR UPDATE OF s SKIP LOCKED",
					  on_slot ? "s.slot_name OPERATOR(pg_catalog.=) $1"
					  : "(s.slot_name IS NULL OR $1 IS NULL OR s.slot_name OPERATOR(pg_catalog.<>) $1)"),
			 &a, SPI_OK_SELECT);
	return result_strings();
}

/*
 * The slot name starting with prefix that flows' progress belongs to, or
 * NULL (the greatest, should there be several).
 */
char *
catalog_slot_in_use(const char *prefix)
{
	CatArgs		a = {0};

	arg_text(&a, prefix);
	cat_exec_latest("SELECT pg_catalog.max(s.slot_name) FROM autocdc.flow_state s "
					"WHERE pg_catalog.starts_with(s.slot_name, $1)",
					&a, SPI_OK_SELECT);
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/*
 * The condition on flow_state s and flow f (arguments: slot the slot, $2
 * max_lag, $3 the slow flows' ids, $4 the main slot's confirmed position)
 * of the change flows on slot $1 that should be served by the other slot:
 * to the laggard slot (to_laggard) those that are paused, failing, in slow,
 * or more than max_lag bytes of WAL behind the newest progress on their
 * slot; back to the main slot those ready to apply, not in slow, whose
 * progress is at or after $4.  A flow in slow whose first read has not been
 * applied yet (no progress: any slot can serve it) goes to the laggard slot
 * too, lest the main lane's slices cut that first read for ever.
 */
static char *
movers_condition(bool to_laggard, const char *slot)
{
	return psprintf("f.kind OPERATOR(pg_catalog.=) 'cdc' AND NOT f.once "
					"AND ((s.progress IS NOT NULL AND s.slot_name OPERATOR(pg_catalog.=) %s AND %s)%s)",
					slot,
					to_laggard ?
					psprintf("(f.paused OR s.retry_at IS NOT NULL OR s.last_error IS NOT NULL "
							 " OR f.id::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($3) "
							 " OR pg_catalog.pg_wal_lsn_diff((SELECT pg_catalog.max(o.progress) FROM autocdc.flow_state o "
							 "  WHERE o.slot_name OPERATOR(pg_catalog.=) %s), s.progress) OPERATOR(pg_catalog.>) $2)",
							 slot)
					: "NOT f.paused AND s.retry_at IS NULL AND s.last_error IS NULL "
					"AND s.progress OPERATOR(pg_catalog.>=) $4 "
					"AND NOT f.id::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($3)",
					to_laggard ?
					" OR (s.progress IS NULL AND s.slot_name IS NULL "
					" AND f.id::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($3))" : "");
}

/* The arguments of movers_condition. */
static void
movers_args(CatArgs *a, const char *from, int64 max_lag, List *slow, XLogRecPtr confirmed)
{
	arg_text(a, from);
	arg_add(a, INT8OID, Int64GetDatum(max_lag), false);
	arg_oids(a, slow);
	arg_lsn(a, confirmed, false);
}

/*
 * Lock (skipping those locked by a run) the change flows on slot from that
 * should be served by the other slot (movers_condition).  Sets *oldest to
 * the oldest progress among them (invalid if none has progress).  Without
 * lock, only reads (and writes nothing).
 */
List *
catalog_lock_movers(const char *from, bool to_laggard, int64 max_lag, List *slow,
					XLogRecPtr confirmed, bool lock, XLogRecPtr *oldest)
{
	CatArgs		a = {0};
	List	   *result = NIL;
	uint64		i;

	movers_args(&a, from, max_lag, slow, confirmed);
	cat_exec(psprintf("SELECT s.name, s.progress FROM autocdc.flow_state s "
					  "JOIN autocdc.flow f ON f.name OPERATOR(pg_catalog.=) s.name "
					  "WHERE %s %s", movers_condition(to_laggard, "$1"),
					  lock ? "FOR UPDATE OF s SKIP LOCKED" : ""),
			 &a, SPI_OK_SELECT);
	*oldest = InvalidXLogRecPtr;
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		XLogRecPtr	p = DatumGetLSN(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));

		result = lappend(result, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
		if (!isnull && (XLogRecPtrIsInvalid(*oldest) || p < *oldest))
			*oldest = p;
	}
	return result;
}

/*
 * Would a rebalance move a flow (movers_condition, no slow flows): from
 * the main slot main to the laggard slot, back from the laggard slot lag
 * (NULL: none) whose flows' progress is at or after confirmed, or off lag
 * after max_age ms there (0: no limit)?  Only reads, with one query.
 */
bool
catalog_moves_due(const char *main, const char *lag, int64 max_lag, XLogRecPtr confirmed,
				  int max_age)
{
	CatArgs		a = {0};

	movers_args(&a, main, max_lag, NIL, confirmed);
	arg_text(&a, lag);
	arg_int4(&a, max_age);
	return cat_exec(psprintf("SELECT FROM autocdc.flow_state s "
							 "JOIN autocdc.flow f ON f.name OPERATOR(pg_catalog.=) s.name "
							 "WHERE (%s) OR ($5 IS NOT NULL AND ((%s) OR "
							 " ($6 OPERATOR(pg_catalog.>) 0 AND s.slot_name OPERATOR(pg_catalog.=) $5 "
							 "  AND s.progress IS NOT NULL AND s.laggard_since OPERATOR(pg_catalog.<) "
							 "  (pg_catalog.now() OPERATOR(pg_catalog.-) "
							 "   pg_catalog.make_interval(secs => $6 OPERATOR(pg_catalog./) 1000.0))))) "
							 "LIMIT 1",
							 movers_condition(true, "$1"), movers_condition(false, "$5")),
					&a, SPI_OK_SELECT) > 0;
}

/*
 * Lock every flow whose progress belongs to slot; false (nothing locked
 * for sure) if a run holds one of them.
 */
bool
catalog_lock_slot_flows(const char *slot)
{
	CatArgs		a = {0};
	uint64		locked;
	bool		isnull;

	arg_text(&a, slot);
	cat_exec("SELECT s.name FROM autocdc.flow_state s WHERE s.slot_name OPERATOR(pg_catalog.=) $1 "
			 "FOR UPDATE OF s SKIP LOCKED", &a, SPI_OK_SELECT);
	locked = SPI_processed;
	cat_exec("SELECT pg_catalog.count(*) FROM autocdc.flow_state s WHERE s.slot_name OPERATOR(pg_catalog.=) $1",
			 &a, SPI_OK_SELECT);
	return DatumGetInt64(result_value(1, &isnull)) == (int64) locked;
}

/* Does any flow's progress belong to slot? */
bool
catalog_slot_has_flows(const char *slot)
{
	CatArgs		a = {0};

	arg_text(&a, slot);
	return cat_exec("SELECT FROM autocdc.flow_state s WHERE s.slot_name OPERATOR(pg_catalog.=) $1 LIMIT 1",
					&a, SPI_OK_SELECT) > 0;
}

/*
 * Record that the progress of flows (names; locked) belongs to slot to, the
 * laggard slot (to_laggard: noting since when) or the main slot.
 */
void
catalog_move_flows(List *names, const char *to, bool to_laggard)
{
	CatArgs		a = {0};
	ListCell   *lc;

	arg_text(&a, to);
	arg_bool(&a, to_laggard);
	foreach(lc, names)
	{
		a.n = 2;
		arg_text(&a, lfirst(lc));
		cat_exec("UPDATE autocdc.flow_state SET slot_name = $1, "
				 "laggard_since = CASE WHEN $2 THEN coalesce(laggard_since, pg_catalog.now()) END "
				 "WHERE name OPERATOR(pg_catalog.=) $3",
				 &a, SPI_OK_UPDATE);
	}
}

/*
 * Take the flows served from the laggard slot lag for longer than max_age
 * ms (skipping those a run holds) off it: their progress then belongs to no
 * slot, so they need a resync, and they pin nothing.  Returns their names.
 */
List *
catalog_expire_laggards(const char *lag, int max_age)
{
	CatArgs		a = {0};

	arg_text(&a, lag);
	arg_int4(&a, max_age);
	cat_exec("UPDATE autocdc.flow_state s SET slot_name = NULL, laggard_since = NULL, "
			 "resync_reason = coalesce(s.resync_reason, 'it was served from the laggard slot longer than autocdc.max_lag_age') "
			 "WHERE s.name OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT o.name FROM autocdc.flow_state o "
			 "  WHERE o.slot_name OPERATOR(pg_catalog.=) $1 AND o.progress IS NOT NULL "
			 "  AND o.laggard_since OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) "
			 "      pg_catalog.make_interval(secs => $2 OPERATOR(pg_catalog./) 1000.0)) "
			 "  FOR UPDATE SKIP LOCKED)) RETURNING s.name",
			 &a, SPI_OK_UPDATE_RETURNING);
	return result_strings();
}

/*
 * Set the flows whose source is one of relids and whose source kind has
 * row changes (changes()) to need a resync
 * (a partition attached with rows, detached or dropped: their targets can
 * no longer be told from the WAL), in the caller's transaction.  A flow
 * whose first read is running is marked once it commits (the row lock
 * waits for it); one without progress clears the mark by its first read.
 * The first reason is kept.
 */
void
catalog_mark_resync(List *relids, const char *reason)
{
	CatArgs		a = {0};

	arg_oids(&a, relids);
	arg_text(&a, reason);
	arg_names(&a, srckind_names_where_row_changes(), false);
	cat_exec("UPDATE autocdc.flow_state s SET slot_name = NULL, laggard_since = NULL, "
			 "resync_reason = coalesce(s.resync_reason, $2) "
			 "FROM autocdc.flow f WHERE f.name OPERATOR(pg_catalog.=) s.name "
			 "AND f.source_kind OPERATOR(pg_catalog.=) ANY ($3) "
			 "AND f.source::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)",
			 &a, SPI_OK_UPDATE);
}

/* Move every flow on slot from to slot to (all locked). */
void
catalog_move_slot_flows(const char *from, const char *to)
{
	CatArgs		a = {0};

	arg_text(&a, from);
	arg_text(&a, to);
	cat_exec("UPDATE autocdc.flow_state SET slot_name = $2 WHERE slot_name OPERATOR(pg_catalog.=) $1",
			 &a, SPI_OK_UPDATE);
}

/* Mark a flow that sat out a pass because a relation of it was locked. */
void
catalog_mark_waiting(const char *name, bool waiting)
{
	CatArgs		a = {0};

	arg_text(&a, name);
	arg_bool(&a, waiting);
	cat_exec("UPDATE autocdc.flow_state SET waiting_since = "
			 "CASE WHEN $2 THEN coalesce(waiting_since, pg_catalog.now()) END "
			 "WHERE name OPERATOR(pg_catalog.=) $1 AND (waiting_since IS NULL) OPERATOR(pg_catalog.=) $2",
			 &a, SPI_OK_UPDATE);
}

/*
 * Lock (skipping those a run holds) the continuous snapshot flows that are
 * not paused, not done once, whose retry_at is not after now, and that last ran at or
 * before ran_before (or never).  Returns their names, in no particular
 * order.
 */
List *
catalog_lock_due_snapshot_flows(TimestampTz now, TimestampTz ran_before)
{
	CatArgs		a = {0};

	arg_add(&a, TIMESTAMPTZOID, TimestampTzGetDatum(now), false);
	arg_add(&a, TIMESTAMPTZOID, TimestampTzGetDatum(ran_before), false);
	cat_exec("SELECT f.name FROM autocdc.flow f "
			 "JOIN autocdc.flow_state s ON s.name OPERATOR(pg_catalog.=) f.name "
			 "WHERE f.kind OPERATOR(pg_catalog.=) 'snapshot' AND f.continuous AND NOT f.paused "
			 "AND NOT (f.once AND s.once_done) "
			 "AND (s.retry_at IS NULL OR s.retry_at OPERATOR(pg_catalog.<=) $1) "
			 "AND (s.last_run_at IS NULL OR s.last_run_at OPERATOR(pg_catalog.<=) $2) "
			 "FOR UPDATE OF s SKIP LOCKED",
			 &a, SPI_OK_SELECT);
	return result_strings();
}

/*
 * The retry_at and last_run_at (FlowTimes) of the continuous flows that are
 * not paused, not done once, and have a retry_at, or are snapshot flows.
 */
List *
catalog_flow_times(void)
{
	List	   *result = NIL;
	uint64		i;

	cat_exec("SELECT f.kind OPERATOR(pg_catalog.=) 'snapshot', s.retry_at, s.last_run_at "
			 "FROM autocdc.flow f JOIN autocdc.flow_state s ON s.name OPERATOR(pg_catalog.=) f.name "
			 "WHERE f.continuous AND NOT f.paused AND NOT (f.once AND s.once_done) "
			 "AND (s.retry_at IS NOT NULL OR f.kind OPERATOR(pg_catalog.=) 'snapshot')",
			 NULL, SPI_OK_SELECT);
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		FlowTimes  *ft = palloc(sizeof(FlowTimes));
		bool		isnull;
		Datum		d;

		ft->snapshot = DatumGetBool(SPI_getbinval(tup, desc, 1, &isnull));
		d = SPI_getbinval(tup, desc, 2, &isnull);
		ft->retry_at = isnull ? 0 : DatumGetTimestampTz(d);
		d = SPI_getbinval(tup, desc, 3, &isnull);
		ft->last_run_at = isnull ? 0 : DatumGetTimestampTz(d);
		result = lappend(result, ft);
	}
	return result;
}

/*
 * Keep flows from being created until the end of the transaction (SHARE
 * lock on autocdc.flow): the worker drops an unused slot under it.
 */
void
catalog_lock_flows(void)
{
	cat_exec("LOCK TABLE autocdc.flow IN SHARE MODE", NULL, SPI_OK_UTILITY);
}

/* Delete flow_runs rows older than minutes. */
void
catalog_prune_run_log(int minutes)
{
	cat_exec(psprintf("DELETE FROM autocdc.flow_run_log WHERE finished_at OPERATOR(pg_catalog.<) "
					  "(pg_catalog.now() OPERATOR(pg_catalog.-) '%d min'::pg_catalog.interval)", minutes),
			 NULL, SPI_OK_DELETE);
}

/*
 * The oldest progress of the change flows on a slot, as committed now (and
 * written by this transaction); false if there is none.
 */
bool
catalog_oldest_progress(const char *slot, XLogRecPtr *lsn)
{
	CatArgs		a = {0};
	bool		isnull;
	Datum		d;

	arg_text(&a, slot);
	cat_exec_latest("SELECT pg_catalog.min(s.progress) FROM autocdc.flow_state s "
					"JOIN autocdc.flow f ON f.name OPERATOR(pg_catalog.=) s.name "
					"WHERE NOT f.once AND s.slot_name OPERATOR(pg_catalog.=) $1",
					&a, SPI_OK_SELECT);
	d = result_value(1, &isnull);
	if (isnull)
		return false;
	*lsn = DatumGetLSN(d);
	return true;
}
