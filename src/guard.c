/*-------------------------------------------------------------------------
 *
 * guard.c
 *		Utility statements that would leave flows broken or silently wrong,
 *		seen from autocdc's ProcessUtility hook in every backend (which also
 *		lets the worker step aside for database-level DDL, worker.c).
 *
 * Flows live in autocdc's own tables, which PostgreSQL's dependency
 * machinery does not know (a pg_shdepend row whose classid is not a catalog
 * would break REASSIGN OWNED, DROP OWNED and DROP ROLE), so the hook keeps
 * them consistent with the roles and relations they name, in the database
 * where the statement runs:
 *
 *	 - DROP ROLE of a role that owns flows fails, naming them;
 *	 - REASSIGN OWNED BY a TO b gives a's flows to b, in the same transaction;
 *	 - DROP OWNED BY a drops a's flows first (then PostgreSQL drops a's
 *	   targets, which the drop guard would otherwise refuse);
 *	 - ALTER TABLE ... SET UNLOGGED of a change flow's source (or of one of
 *	   its partitions), ATTACH PARTITION of an unlogged table and CREATE
 *	   UNLOGGED TABLE ... PARTITION OF such a source are refused: inserts
 *	   into an unlogged table reach no WAL, so the flow would skip them;
 *	 - ATTACH PARTITION of a table holding rows, DETACH PARTITION and the
 *	   drop of a partition (however it is dropped: an object access hook)
 *	   change a partitioned table's rows with nothing in the WAL: its
 *	   changes() flows are set to need a resync, in the statement's
 *	   transaction.
 *
 * Nothing is done in a database without autocdc, or whose autocdc catalog
 * is at another version than the library.  Catalog SQL runs as autocdc
 * with search_path pinned; it evaluates no user code.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_inherits.h"
#include "commands/dbcommands.h"
#include "executor/tuptable.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "compat.h"
#include "define.h"
#include "guard.h"
#include "registry.h"
#include "util.h"

static ProcessUtility_hook_type prev_ProcessUtility = NULL;
static object_access_hook_type prev_object_access = NULL;

/* Is autocdc installed here, at the library's version? */
static bool
guard_active(void)
{
	char	   *version;

	if (!IsTransactionState())
		return false;
	version = catalog_installed_version();
	return version != NULL && strcmp(version, AUTOCDC_VERSION) == 0;
}

/* Names as a comma-separated quoted list ("" if none). */
static char *
flow_names(List *names)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, names)
		appendStringInfo(&buf, "%s\"%s\"", buf.len ? ", " : "", (char *) lfirst(lc));
	return buf.data;
}

/* The oids of a list of RoleSpecs (missing roles left out). */
static List *
role_oids(List *roles)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, roles)
	{
		Oid			roleid = get_rolespec_oid(lfirst(lc), true);

		if (OidIsValid(roleid))
			result = lappend_oid(result, roleid);
	}
	return result;
}

/* DROP ROLE: refuse while a role owns flows here. */
static void
guard_drop_role(DropRoleStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->roles)
	{
		RoleSpec   *rs = lfirst(lc);
		Oid			roleid = get_rolespec_oid(rs, true);
		char	   *names;

		if (!OidIsValid(roleid))
			continue;
		names = flow_names(catalog_flows_of_roles(list_make1_oid(roleid)));
		if (names[0] != '\0')
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("role \"%s\" cannot be dropped because it owns flows",
							get_rolespec_name(rs)),
					 errdetail("It owns flows %s in database \"%s\".", names,
							   get_database_name(MyDatabaseId)),
					 errhint("Drop them, or give them to another role with REASSIGN OWNED BY %s TO ..., first.",
							 quote_identifier(get_rolespec_name(rs)))));
	}
}

/* REASSIGN OWNED BY a TO b (after PostgreSQL's): a's flows go to b. */
static void
guard_reassign_owned(ReassignOwnedStmt *stmt)
{
	List	   *from = role_oids(stmt->roles);
	Oid			to = get_rolespec_oid(stmt->newrole, false);
	ListCell   *lc;

	foreach(lc, from)
		catalog_reassign_flows(lfirst_oid(lc), to);
}

/* DROP OWNED BY a (before PostgreSQL's): drop a's flows, keeping targets. */
static void
guard_drop_owned(DropOwnedStmt *stmt)
{
	List	   *roles = role_oids(stmt->roles);
	ListCell   *lc;

	/* PostgreSQL checks the right to do this; without it, leave the error to it */
	foreach(lc, roles)
		if (!has_privs_of_role(GetUserId(), lfirst_oid(lc)))
			return;
	foreach(lc, catalog_flows_of_roles(roles))
	{
		FlowDef    *flow = catalog_load_flow(lfirst(lc), true, true);

		if (flow != NULL)
			define_drop_flow(flow, false);
	}
	CommandCounterIncrement();
}

/*
 * The relations a guarded statement names, resolved under the caller's
 * search_path before with_spi pins it (an unqualified name would resolve
 * to nothing there): by the parse node that names each (a RangeVar, or a
 * DROP's name list).
 */
typedef struct ResolvedName
{
	void	   *node;
	Oid			relid;
} ResolvedName;

static List *resolved_names = NIL;

/* Resolve one name (missing: InvalidOid). */
static void
resolve_name(void *node, RangeVar *rv)
{
	ResolvedName *r = palloc(sizeof(ResolvedName));

	r->node = node;
	r->relid = RangeVarGetRelid(rv, NoLock, true);
	resolved_names = lappend(resolved_names, r);
}

/* Resolve the relations a guarded statement names. */
static void
resolve_statement(Node *stmt)
{
	ListCell   *lc;

	resolved_names = NIL;
	if (IsA(stmt, AlterTableStmt) && ((AlterTableStmt *) stmt)->relation)
	{
		resolve_name(((AlterTableStmt *) stmt)->relation, ((AlterTableStmt *) stmt)->relation);
		foreach(lc, ((AlterTableStmt *) stmt)->cmds)
		{
			AlterTableCmd *cmd = lfirst(lc);

			if (cmd->subtype == AT_AttachPartition || cmd->subtype == AT_DetachPartition)
				resolve_name(((PartitionCmd *) cmd->def)->name, ((PartitionCmd *) cmd->def)->name);
		}
	}
	else if (IsA(stmt, CreateStmt))
	{
		foreach(lc, ((CreateStmt *) stmt)->inhRelations)
			resolve_name(lfirst(lc), lfirst(lc));
	}
}

/* The relation resolve_statement found for a parse node. */
static Oid
resolved_relid(void *node)
{
	ListCell   *lc;

	foreach(lc, resolved_names)
		if (((ResolvedName *) lfirst(lc))->node == node)
			return ((ResolvedName *) lfirst(lc))->relid;
	return InvalidOid;
}

/* The change-flow sources among a relation and its partition ancestors. */
static char *
flows_reading(Oid relid)
{
	List	   *rels = list_make1_oid(relid);

	if (get_rel_relispartition(relid))
		rels = list_concat(rels, get_partition_ancestors(relid));
	return flow_names(catalog_flows_reading(rels));
}

/* Refuse an unlogged table under a change flow's source. */
static void
refuse_unlogged(Oid relid, const char *what, const char *flows)
{
	if (flows[0] == '\0')
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot %s: flows %s read it", what, flows),
			 errdetail("Inserts into an unlogged table are not written to the WAL, so those flows could not see them."),
			 errhint("Drop the flows first, or keep the table logged.")));
}

/*
 * Does a table, or a leaf under it, hold a row?  Under the latest snapshot:
 * called after ATTACH PARTITION, which holds the table locked, so rows
 * committed before it are all seen, whatever the isolation level.
 */
static bool
holds_rows(Oid relid)
{
	List	   *rels = find_all_inheritors(relid, AccessShareLock, NULL);
	Snapshot	snap = RegisterSnapshot(GetLatestSnapshot());
	bool		found = false;
	ListCell   *lc;

	foreach(lc, rels)
	{
		Relation	rel;
		TableScanDesc scan;
		TupleTableSlot *slot;

		if (found || get_rel_relkind(lfirst_oid(lc)) != RELKIND_RELATION)
			continue;
		rel = table_open(lfirst_oid(lc), AccessShareLock);
		slot = table_slot_create(rel, NULL);
		scan = compat_table_beginscan(rel, snap, 0, NULL);
		found = table_scan_getnextslot(scan, ForwardScanDirection, slot);
		table_endscan(scan);
		ExecDropSingleTupleTableSlot(slot);
		table_close(rel, NoLock);
	}
	UnregisterSnapshot(snap);
	return found;
}

/*
 * A partitioned table gains or loses rows without a change in the WAL:
 * the changes() flows of parent (and of its ancestors) need a resync.
 */
static void
resync_partitioned(Oid parent, const char *reason)
{
	catalog_mark_resync(lcons_oid(parent, get_partition_ancestors(parent)), reason);
}

/*
 * Object access hook: a partition of a changes() source being dropped (by
 * DROP TABLE, DROP SCHEMA ... CASCADE, DROP OWNED...; OAT_DROP comes while
 * its pg_inherits row still exists) takes its rows out of the table with
 * nothing in the WAL.
 */
static void
guard_object_access(ObjectAccessType access, Oid classId, Oid objectId, int subId,
					void *arg)
{
	Oid			parent;
	int			level;

	if (prev_object_access)
		prev_object_access(access, classId, objectId, subId, arg);
	if (access != OAT_DROP || classId != RelationRelationId || subId != 0 ||
		!get_rel_relispartition(objectId) ||
		(get_rel_relkind(objectId) != RELKIND_RELATION &&
		 get_rel_relkind(objectId) != RELKIND_PARTITIONED_TABLE) ||
		get_rel_persistence(objectId) == RELPERSISTENCE_TEMP || !guard_active())
		return;
	parent = get_partition_parent(objectId, true);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	level = set_safe_search_path();
	resync_partitioned(parent, psprintf("its partition \"%s\" was dropped", get_rel_name(objectId)));
	AtEOXact_GUC(true, level);
	SPI_finish();
}

/*
 * ALTER TABLE: SET UNLOGGED, ATTACH PARTITION of an unlogged table (refused);
 * ATTACH PARTITION of a table holding rows and DETACH PARTITION (resync).
 */
static void
guard_alter_table(AlterTableStmt *stmt)
{
	ListCell   *lc;
	Oid			relid;

	if (stmt->objtype != OBJECT_TABLE || stmt->relation == NULL)
		return;
	relid = resolved_relid(stmt->relation);
	if (!OidIsValid(relid))
		return;
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst(lc);

		if (cmd->subtype == AT_SetUnLogged)
			refuse_unlogged(relid, psprintf("make table \"%s\" unlogged", get_rel_name(relid)),
							flows_reading(relid));
		else if (cmd->subtype == AT_AttachPartition)
		{
			PartitionCmd *pc = (PartitionCmd *) cmd->def;
			Oid			part = resolved_relid(pc->name);

			if (OidIsValid(part) && get_rel_persistence(part) == RELPERSISTENCE_UNLOGGED)
				refuse_unlogged(part, psprintf("attach unlogged table \"%s\"", get_rel_name(part)),
								flows_reading(relid));
		}
		else if (cmd->subtype == AT_DetachPartition)
		{
			PartitionCmd *pc = (PartitionCmd *) cmd->def;
			Oid			part = resolved_relid(pc->name);

			if (OidIsValid(part))
				resync_partitioned(relid, psprintf("its partition \"%s\" was detached",
												   get_rel_name(part)));
		}
	}
}

/*
 * After ALTER TABLE ... ATTACH PARTITION (the statement checked the
 * privileges and holds the table): a table attached holding rows adds them
 * to its new parent with nothing in the WAL, so the parent's changes()
 * flows need a resync.
 */
static void
guard_after_alter_table(AlterTableStmt *stmt)
{
	ListCell   *lc;
	Oid			relid = resolved_relid(stmt->relation);

	if (!OidIsValid(relid))
		return;
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst(lc);
		Oid			part;

		if (cmd->subtype != AT_AttachPartition)
			continue;
		part = resolved_relid(((PartitionCmd *) cmd->def)->name);
		if (OidIsValid(part) && flows_reading(relid)[0] != '\0' && holds_rows(part))
			resync_partitioned(relid, psprintf("partition \"%s\" was attached holding rows",
											   get_rel_name(part)));
	}
}

/* CREATE UNLOGGED TABLE ... PARTITION OF a source. */
static void
guard_create_table(CreateStmt *stmt)
{
	ListCell   *lc;

	if (stmt->partbound == NULL || stmt->relation->relpersistence != RELPERSISTENCE_UNLOGGED)
		return;
	foreach(lc, stmt->inhRelations)
	{
		Oid			parent = resolved_relid(lfirst(lc));

		if (OidIsValid(parent))
			refuse_unlogged(parent, psprintf("create unlogged partition \"%s\"", stmt->relation->relname),
							flows_reading(parent));
	}
}

/* Does a statement concern flows (before or after PostgreSQL runs it)? */
static bool
guarded_statement(Node *stmt)
{
	switch (nodeTag(stmt))
	{
		case T_DropRoleStmt:
		case T_ReassignOwnedStmt:
		case T_DropOwnedStmt:
			return true;
		case T_AlterTableStmt:
			{
				ListCell   *lc;

				foreach(lc, ((AlterTableStmt *) stmt)->cmds)
				{
					AlterTableType t = ((AlterTableCmd *) lfirst(lc))->subtype;

					if (t == AT_SetUnLogged || t == AT_AttachPartition ||
						t == AT_DetachPartition)
						return true;
				}
				return false;
			}
		case T_CreateStmt:
			return ((CreateStmt *) stmt)->partbound != NULL &&
				((CreateStmt *) stmt)->relation->relpersistence == RELPERSISTENCE_UNLOGGED;
		default:
			return false;
	}
}

/* Run fn on a statement with SPI connected and search_path pinned. */
static void
with_spi(void (*fn) (Node *stmt), Node *stmt)
{
	int			level;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	level = set_safe_search_path();
	fn(stmt);
	AtEOXact_GUC(true, level);
	SPI_finish();
}

static void
before_statement(Node *stmt)
{
	switch (nodeTag(stmt))
	{
		case T_DropRoleStmt:
			guard_drop_role((DropRoleStmt *) stmt);
			break;
		case T_DropOwnedStmt:
			guard_drop_owned((DropOwnedStmt *) stmt);
			break;
		case T_AlterTableStmt:
			guard_alter_table((AlterTableStmt *) stmt);
			break;
		case T_CreateStmt:
			guard_create_table((CreateStmt *) stmt);
			break;
		default:
			break;
	}
}

static void
after_statement(Node *stmt)
{
	if (IsA(stmt, ReassignOwnedStmt))
		guard_reassign_owned((ReassignOwnedStmt *) stmt);
	else if (IsA(stmt, AlterTableStmt))
		guard_after_alter_table((AlterTableStmt *) stmt);
}

/* ProcessUtility hook: keep flows consistent with roles and sources. */
static void
guard_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
					 bool readOnlyTree, ProcessUtilityContext context,
					 ParamListInfo params, QueryEnvironment *queryEnv,
					 DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;
	bool		guarded = guarded_statement(stmt) && guard_active();
	List	   *outer = resolved_names;
	List	   *mine = NIL;

	registry_before_utility(stmt);
	if (guarded)
	{
		resolve_statement(stmt);
		mine = resolved_names;
		with_spi(before_statement, stmt);
	}
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
	if (guarded)
	{
		resolved_names = mine;	/* (statements run meanwhile resolved theirs) */
		with_spi(after_statement, stmt);
	}
	resolved_names = outer;
}

/* Install the hook (from _PG_init of the preloaded library). */
void
guard_init(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = guard_ProcessUtility;
	prev_object_access = object_access_hook;
	object_access_hook = guard_object_access;
}
