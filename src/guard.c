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
 *	   into an unlogged table reach no WAL, so the flow would skip them.
 *
 * Nothing is done in a database without autocdc, or whose autocdc catalog
 * is at another version than the library.  Catalog SQL runs as autocdc
 * with search_path pinned; it evaluates no user code.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "catalog/namespace.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "catalog.h"
#include "define.h"
#include "guard.h"
#include "registry.h"
#include "util.h"

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

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

/* ALTER TABLE: SET UNLOGGED, ATTACH PARTITION of an unlogged table. */
static void
guard_alter_table(AlterTableStmt *stmt)
{
	ListCell   *lc;
	Oid			relid;

	if (stmt->objtype != OBJECT_TABLE || stmt->relation == NULL)
		return;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
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
			Oid			part = RangeVarGetRelid(pc->name, NoLock, true);

			if (OidIsValid(part) && get_rel_persistence(part) == RELPERSISTENCE_UNLOGGED)
				refuse_unlogged(part, psprintf("attach unlogged table \"%s\"", get_rel_name(part)),
								flows_reading(relid));
		}
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
		Oid			parent = RangeVarGetRelid(lfirst(lc), NoLock, true);

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

					if (t == AT_SetUnLogged || t == AT_AttachPartition)
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

	registry_before_utility(stmt);
	if (guarded)
		with_spi(before_statement, stmt);
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
	if (guarded)
		with_spi(after_statement, stmt);
}

/* Install the hook (from _PG_init of the preloaded library). */
void
guard_init(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = guard_ProcessUtility;
}
