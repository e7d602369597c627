/*-------------------------------------------------------------------------
 *
 * tablekind.c
 *		Which kinds of table a flow can write and decode.
 *
 * A run updates and deletes the rows of a target and of its hidden state by
 * their row id (ctid), which names one row only within one table.  It reads
 * the table that holds each row with it, so a partitioned target is written
 * partition by partition, as long as every partition is an ordinary table;
 * a foreign table keeps its rows elsewhere.  In a Citus table a row id
 * names a row of each shard, so a run writes a table Citus distributes by
 * hash of a column by key instead (apply.c), which storage.c requires to be
 * one of the flow's keys; other Citus tables (reference tables, tables
 * without a shard key...) are refused.  create_flow checks and every run
 * checks again (a table can be distributed with Citus, or gain a foreign
 * partition, after the flow was created, and keeps its kind and oid).  A
 * change flow decodes its source's inserts from the WAL of this server,
 * where the rows of a Citus table are not written (they go to its shards),
 * so such a source is refused too.
 *
 * Citus is recognised by its catalog pg_catalog.pg_dist_partition (one row
 * per table it manages), looked up by name and read directly (through its
 * index on logicalrelid when there is one); none of its functions is
 * called.  Without Citus, that costs one syscache lookup per table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "tablekind.h"

/*
 * Citus' catalog of the tables it manages, or InvalidOid without Citus
 * (only a superuser can create a table in pg_catalog).
 */
static Oid
citus_catalog(void)
{
	Oid			relid = get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);

	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_RELATION)
		return InvalidOid;
	return relid;
}

/*
 * Citus' index on pg_dist_partition.logicalrelid (as Citus names it, in
 * the catalog's schema), or InvalidOid when there is no such usable btree
 * index: the catalog is then scanned whole.
 */
static Oid
citus_catalog_index(Oid catalog, AttrNumber attno)
{
	Oid			indexid = get_relname_relid("pg_dist_partition_logical_relid_index",
											get_rel_namespace(catalog));
	HeapTuple	tup;
	Form_pg_index index;
	bool		usable;

	if (!OidIsValid(indexid))
		return InvalidOid;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(indexid));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	usable = ((Form_pg_class) GETSTRUCT(tup))->relam == BTREE_AM_OID;
	ReleaseSysCache(tup);
	if (!usable)
		return InvalidOid;
	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexid));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	index = (Form_pg_index) GETSTRUCT(tup);
	usable = index->indrelid == catalog && index->indisvalid && index->indisready &&
		index->indnkeyatts >= 1 && index->indkey.values[0] == attno &&
		heap_attisnull(tup, Anum_pg_index_indpred, NULL);
	ReleaseSysCache(tup);
	return usable ? indexid : InvalidOid;
}

/* A "char" or integer column of a pg_dist_partition row (0 if absent or NULL). */
static int32
dist_column(Relation rel, HeapTuple tup, const char *name)
{
	AttrNumber	attno = get_attnum(RelationGetRelid(rel), name);
	Oid			typid;
	bool		isnull;
	Datum		d;

	if (attno <= 0)
		return 0;
	typid = TupleDescAttr(RelationGetDescr(rel), attno - 1)->atttypid;
	d = heap_getattr(tup, attno, RelationGetDescr(rel), &isnull);
	if (isnull)
		return 0;
	if (typid == CHAROID)
		return DatumGetChar(d);
	if (typid == INT4OID)
		return DatumGetInt32(d);
	return 0;
}

/*
 * The column a pg_dist_partition row distributes by: its partkey is a Var
 * in node syntax ("{VAR :varno 1 :varattno 2 ...}"); 0 if it has none.
 */
static AttrNumber
dist_attno(Relation rel, HeapTuple tup)
{
	AttrNumber	attno = get_attnum(RelationGetRelid(rel), "partkey");
	bool		isnull;
	Datum		d;
	char	   *node,
			   *at;

	if (attno <= 0 || TupleDescAttr(RelationGetDescr(rel), attno - 1)->atttypid != TEXTOID)
		return 0;
	d = heap_getattr(tup, attno, RelationGetDescr(rel), &isnull);
	if (isnull)
		return 0;
	node = TextDatumGetCString(d);
	at = strstr(node, ":varattno ");
	return at ? (AttrNumber) atoi(at + strlen(":varattno ")) : 0;
}

/*
 * How Citus manages relid: false when it does not (or is not installed).
 * Reads pg_dist_partition under the latest snapshot: a table distributed
 * by a transaction that committed after ours began is seen.
 */
static bool
citus_lookup(Oid relid, CitusTable *ct)
{
	Oid			catalog = citus_catalog();
	Relation	rel;
	AttrNumber	attno;
	ScanKeyData key;
	Snapshot	snap;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			index;
	bool		found;

	memset(ct, 0, sizeof(CitusTable));
	if (!OidIsValid(catalog) ||
		(attno = get_attnum(catalog, "logicalrelid")) <= 0)
		return false;
	rel = table_open(catalog, AccessShareLock);
	ScanKeyInit(&key, attno, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	snap = RegisterSnapshot(GetLatestSnapshot());
	index = citus_catalog_index(catalog, attno);
	scan = systable_beginscan(rel, index, OidIsValid(index), snap, 1, &key);
	tup = systable_getnext(scan);
	found = HeapTupleIsValid(tup);
	if (found)
	{
		char		method = (char) dist_column(rel, tup, "partmethod");

		ct->colocation = dist_column(rel, tup, "colocationid");
		/* as Citus tells its kinds of table apart (pg_dist_partition.h) */
		if (method == 'h')
		{
			ct->kind = "distributed table";
			ct->hash = true;
			ct->attno = dist_attno(rel, tup);
		}
		else if (method == 'a' || method == 'r')
			ct->kind = method == 'a' ? "append-distributed table" : "range-distributed table";
		else if (method == 'n' && dist_column(rel, tup, "repmodel") == 't')
			ct->kind = "reference table";
		else if (method == 'n' && ct->colocation != 0)
			ct->kind = "distributed table without a shard key";
		else if (method == 'n')
			ct->kind = "managed local table";
		else
			ct->kind = "table";
	}
	systable_endscan(scan);
	UnregisterSnapshot(snap);
	table_close(rel, AccessShareLock);
	return found;
}

/* Is Citus installed in this database (its catalog there)? */
bool
tablekind_citus_installed(void)
{
	return OidIsValid(citus_catalog());
}

/*
 * What kind of Citus table relid is ("distributed table", "reference
 * table"...), or NULL when Citus does not manage it (or is not installed).
 */
const char *
tablekind_citus(Oid relid)
{
	CitusTable	ct;

	return citus_lookup(relid, &ct) ? ct.kind : NULL;
}

/*
 * Is relid a table Citus distributes by hash of a column (the kind of
 * Citus table a flow writes)?  Then *ct says by which column, co-located
 * with which tables.
 */
bool
tablekind_distributed(Oid relid, CitusTable *ct)
{
	return citus_lookup(relid, ct) && ct->hash && ct->attno > 0;
}

/*
 * A partitioned target's partitions must all hold their rows here (ordinary
 * tables): a foreign partition is refused as a foreign target is.
 */
static void
check_partitions(Oid relid, const char *prefix, const char *what)
{
	ListCell   *lc;

	foreach(lc, find_all_inheritors(relid, AccessShareLock, NULL))
	{
		char		k = get_rel_relkind(lfirst_oid(lc));

		if (k == RELKIND_RELATION || k == RELKIND_PARTITIONED_TABLE)
			continue;
		ereport(ERROR,
				(errcode(k == RELKIND_FOREIGN_TABLE ? ERRCODE_FEATURE_NOT_SUPPORTED :
						 ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("%spartition \"%s\" of %s is %s", prefix, get_rel_name(lfirst_oid(lc)), what,
						k == RELKIND_FOREIGN_TABLE ? "a foreign table" : "not an ordinary table"),
				 errdetail("A flow writes the rows of a partitioned target in its partitions, which must keep them on this server."),
				 errhint("Detach the partition, or write the flow into an ordinary table.")));
	}
}

/*
 * Refuse a table whose rows a flow cannot address (its target or hidden
 * state), or whose inserts it cannot decode (the source of a change flow):
 * feature_not_supported for foreign and Citus tables and partitioned
 * hidden states (kinds a later version may support), wrong_object_type for
 * what is no table.  A target may be partitioned, its partitions ordinary
 * tables.  flow: the flow's name for the message, or NULL while it is
 * created.
 */
void
tablekind_check(Oid relid, TableUse use, const char *flow)
{
	char		relkind = get_rel_relkind(relid);
	char	   *name = get_rel_name(relid);
	const char *prefix = flow ? psprintf("flow \"%s\": ", flow) : "";
	const char *noun = use == TABLE_TARGET ? "target" :
		use == TABLE_STATE ? "hidden state" : "source";
	const char *what;
	const char *citus;
	CitusTable	ct;

	/* dropped by a transaction that committed since the caller found it */
	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("%s%s table with OID %u no longer exists", prefix, noun, relid),
				 errdetail("It was dropped while the run or the command was starting.")));
	what = psprintf("%s \"%s\"", noun, name);

	if (use == TABLE_TARGET && relkind == RELKIND_PARTITIONED_TABLE)
		check_partitions(relid, prefix, what);
	else if (use != TABLE_CHANGE_SOURCE && relkind != RELKIND_RELATION)
	{
		if (relkind == RELKIND_PARTITIONED_TABLE || relkind == RELKIND_FOREIGN_TABLE)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s%s is a %s", prefix, what,
							relkind == RELKIND_FOREIGN_TABLE ? "foreign table" : "partitioned table"),
					 errdetail("A flow writes only ordinary and partitioned tables on this server: a run addresses the rows it updates and deletes by their row id in the table that holds them."),
					 errhint("Write the flow into an ordinary or a partitioned table.")));
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("%s%s is not an ordinary table", prefix, what)));
	}
	citus = tablekind_citus(relid);
	if (citus == NULL)
		return;
	if (use == TABLE_CHANGE_SOURCE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s%s is a Citus %s", prefix, what, citus),
				 errdetail("A change flow decodes the inserts of its source from this server's WAL; the rows of a Citus table are written to its shards."),
				 errhint("Read it with a snapshot flow (autocdc.create_snapshot_flow), or let the application also insert its changes into a feed table on the coordinator.")));
	/* its rows are addressed by key: storage_check_distribution */
	if (tablekind_distributed(relid, &ct))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s%s is a Citus %s", prefix, what, citus),
			 errdetail("A flow writes a Citus table only when it is distributed by hash of one of the flow's keys, so that each key's rows live in one shard."),
			 errhint("Distribute it by one of the flow's keys with create_distributed_table, or write the flow into a table on the coordinator.")));
}
