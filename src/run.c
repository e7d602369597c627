/*-------------------------------------------------------------------------
 *
 * run.c
 *		Runs of change flows (use-case layer): one run of a flow, a full
 *		refresh of a target, and the steps the worker's pass (pass.c) takes
 *		over several flows; and the guard a run keeps around the code of the
 *		owner's it evaluates.
 *
 * Locks: the flow's flow_state row (FOR UPDATE) is the flow lock, held to
 * the end of the transaction; the target's autocdc.target row (FOR UPDATE)
 * keeps two flows from writing one target at once.  A run executes as the
 * flow's owner under a security-restricted operation, whoever called it;
 * only autocdc's own catalog is read and written as autocdc.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xlog.h"
#include "catalog/pg_collation.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "apply.h"
#include "batch.h"
#include "catalog.h"
#include "expr.h"
#include "failures.h"
#include "lanes.h"
#include "layout.h"
#include "rowstore.h"
#include "run.h"
#include "slots.h"
#include "source.h"
#include "storage.h"
#include "settings.h"
#include "util.h"

/*
 * The flow this backend is applying (NULL: none), and the relations its run
 * holds open.  A run evaluates its owner's code (expressions, triggers,
 * defaults); that code must not drop, alter or run flows meanwhile, nor
 * alter the tables the run is using: the functions that change flows refuse
 * while this is set, and PostgreSQL refuses DDL on a relation this backend
 * holds open ("being used by active queries in this session").
 */
static char *applying_flow = NULL;
static List *held_relations = NIL;

/* Note the flow being applied (NULL: the run ended, or failed). */
void
run_set_applying(const char *name)
{
	if (applying_flow)
		pfree(applying_flow);
	applying_flow = name ? MemoryContextStrdup(TopMemoryContext, name) : NULL;
	if (name)
	{
		failures_note_lsn(InvalidXLogRecPtr);	/* a new run names no event yet */
		failures_note_resync(0);
	}
	list_free(held_relations);	/* on error, their owner released them */
	held_relations = NIL;
}

/* Refuse to change or run flows while this backend applies one. */
void
run_refuse_while_applying(const char *what)
{
	if (applying_flow != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot %s while flow \"%s\" is being applied in this session",
						what, applying_flow),
				 errdetail("Expressions, triggers and functions that a run evaluates must not create, change, drop or run flows."),
				 errhint("Do it in a statement of its own, after the run.")));
}

/*
 * Hold a run's relations open until run_release_relations: the code the run
 * evaluates cannot alter or drop them under it.
 */
void
run_hold_relations(FlowDef *flow, Oid source)
{
	Oid			rels[3] = {source, flow->target, storage_state_relid(flow->target_id)};
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	int			i;

	for (i = 0; i < 3; i++)
		if (OidIsValid(rels[i]))
			held_relations = lappend(held_relations, table_open(rels[i], AccessShareLock));
	MemoryContextSwitchTo(old);
}

/* Close what run_hold_relations opened (the locks stay to the end of the transaction). */
void
run_release_relations(void)
{
	ListCell   *lc;

	foreach(lc, held_relations)
		table_close(lfirst(lc), NoLock);
	list_free(held_relations);
	held_relations = NIL;
}

/*
 * Advertise that this transaction applies the flow: autocdc.flows shows
 * state 'running' while this advisory lock (autocdc's lock class, keyed by
 * the flow's id) is held.
 */
void
run_advertise(FlowDef *flow)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) flow->id, 0, AUTOCDC_LOCK_RUNNING);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * The owner must still be able to read what the flow reads: the columns it
 * selects and those its expressions use (a zero-row query checks exactly
 * those, with the owner's current privileges).
 */
static void
check_read_privileges(FlowDef *flow)
{
	StringInfoData sql;
	ListCell   *lc;
	Oid			saved_uid;
	int			saved_sec;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	foreach(lc, flow->columns)
		if (!flow->srckind->pseudo_columns || !pseudo_source_of(flow->col_include, flow->col_from, lfirst(lc)))
			appendStringInfo(&sql, "s.%s, ", quote_identifier(lfirst(lc)));
	appendStringInfo(&sql, "(%s), (%s), (%s) FROM %s LIMIT 0",
					 flow->sequence_by,
					 flow->deletes ? flow->deletes : "NULL",
					 flow->truncates ? flow->truncates : "NULL",
					 expr_from_list(flow->source, flow->srckind->pseudo_columns, "s"));
	become_owner(flow->owner, &saved_uid, &saved_sec);
	if (SPI_execute(sql.data, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not check the privileges of flow \"%s\"", flow->name);
	restore_user(saved_uid, saved_sec);
}

/*
 * A resource owner for a run's batch.  A tuplestore's temporary files
 * belong to the resource owner current when it was created, and a batch is
 * filled and read across subtransactions and SPI portals (the worker's
 * per-flow subtransactions, the first read's cursor), whose owners go away
 * before it does: a batch spilled to a file of a released owner would write
 * through a closed descriptor.  This owner, a child of parent (the
 * (sub)transaction that the whole run lives in), lives until the run
 * releases it (run_batch_owner_release), or parent goes.
 */
ResourceOwner
run_batch_owner(ResourceOwner parent)
{
	return ResourceOwnerCreate(parent, "autocdc batch");
}

/* Close what is left of a run's batch files, quietly, and forget the owner. */
void
run_batch_owner_release(ResourceOwner owner)
{
	if (owner == NULL)
		return;
	ResourceOwnerRelease(owner, RESOURCE_RELEASE_BEFORE_LOCKS, false, false);
	ResourceOwnerRelease(owner, RESOURCE_RELEASE_LOCKS, false, false);
	ResourceOwnerRelease(owner, RESOURCE_RELEASE_AFTER_LOCKS, false, false);
	ResourceOwnerDelete(owner);
}

/* A new, empty batch for a flow's source rows, its files owned by owner. */
Tuplestorestate *
run_new_batch(FlowDef *flow, TupleDesc *bdesc, ResourceOwner owner)
{
	ResourceOwner saved = CurrentResourceOwner;
	Tuplestorestate *ts;

	*bdesc = batch_source_desc(flow->source, flow->srckind->pseudo_columns);
	CurrentResourceOwner = owner;
	ts = tuplestore_begin_heap(false, false, settings_store_mem());
	CurrentResourceOwner = saved;
	return ts;
}

/*
 * The expectations of a flow's target, which the run evaluates as the
 * flow's owner: each must have been set by a role with the privileges of
 * that owner (a role's condition never runs as another role).  They live
 * as long as the flow.
 */
List *
run_load_expectations(FlowDef *flow)
{
	MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(flow));
	List	   *result = catalog_load_expectations(flow->target_id);
	ListCell   *lc;

	MemoryContextSwitchTo(old);

	foreach(lc, result)
	{
		Expectation *e = lfirst(lc);

		if (!has_privs_of_role(e->owner, flow->owner))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("flow \"%s\" cannot check expectation \"%s\" of target \"%s\": it was set by another role",
							flow->name, e->name, get_rel_name(flow->target)),
					 errdetail("A flow evaluates the expectations of its target as its owner, %s, whose privileges the role that set it does not have.",
							   quote_identifier(GetUserNameFromId(flow->owner, true) ?
												GetUserNameFromId(flow->owner, true) : "?")),
					 errhint("Set the expectation again as the flow's owner with autocdc.set_expectation, or drop it.")));
	}
	return result;
}

/*
 * Before capture: lock the flow's target (false if skip_locked and another
 * writer holds it), show the flow as running, follow source schema changes
 * and check the source and that the owner may still read it.
 */
bool
run_prepare(FlowDef *flow, bool refresh, bool skip_locked)
{
	if (!catalog_lock_target(flow->target_id, skip_locked))
		return false;
	flow->run.expectations = run_load_expectations(flow);
	run_advertise(flow);
	storage_sync_columns(flow, refresh);
	source_check(flow);
	check_read_privileges(flow);
	return true;
}

/*
 * After capture: resolve a changes() flow's batch with its row store (notes:
 * what the capture noted for it, or NULL), apply the batch as the flow's
 * owner, release what the run held and record the progress.  log: write a
 * flow_runs row.
 */
void
run_apply(FlowDef *flow, Tuplestorestate *batch, TupleDesc bdesc, RowNotes *notes,
		  RunMetrics *m, bool have_batch, bool touch_all, TimestampTz started, bool log)
{
	TimestampTz captured = GetCurrentTimestamp();
	int64		nrows = tuplestore_tuple_count(batch);
	Oid			saved_uid;
	int			saved_sec;

	/* classify reads the batch once, and frees it */
	become_owner(flow->owner, &saved_uid, &saved_sec);
	batch = rowstore_resolve(flow, batch, bdesc, notes);
	batch_set(BATCH_SOURCE, batch, bdesc, get_rel_type_id(flow->source), nrows, 1);
	apply_batch(flow, m, have_batch && nrows > 0, touch_all);
	restore_user(saved_uid, saved_sec);
	elog(DEBUG2, "autocdc: flow \"%s\": captured " INT64_FORMAT " rows in %ld ms, applied in %ld ms",
		 flow->name, nrows, (long) ((captured - started) / 1000),
		 (long) ((GetCurrentTimestamp() - captured) / 1000));
	batch_clear();
	run_release_relations();
	catalog_save_progress(flow, m, started, log);
	if (m->num_ignored_updates > 0 && flow->ignored_updates == 0)
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("flow \"%s\": rows of its source \"%s\" were updated, which a feed flow ignores",
						flow->name, get_rel_name(flow->source)),
				 errdetail("A feed flow applies the rows inserted into its source; updates and deletes of them change nothing. autocdc.flows counts them in num_ignored_updates and num_ignored_deletes (this warning is given once)."),
				 errhint("Insert one row per change instead of updating one. To follow the table's updates and deletes, give source => 'changes(%s)'.",
						 qualified_relname(flow->source))));
}

/*
 * Capture and apply everything available to one (locked) change flow, and
 * record its progress, as the flow's owner.
 */
void
run_one(FlowDef *flow, RunMetrics *m, bool refresh, bool touch_all)
{
	TupleDesc	bdesc;
	Tuplestorestate *batch;
	TimestampTz started = GetCurrentTimestamp();
	bool		have_batch = true;
	Oid			saved_uid;
	int			saved_sec;
	ResourceOwner owner;
	RowNotes   *notes = NULL;

	become_owner(flow->owner, &saved_uid, &saved_sec);
	(void) run_prepare(flow, refresh, false);
	run_hold_relations(flow, flow->source);
	owner = run_batch_owner(CurTransactionResourceOwner);
	batch = run_new_batch(flow, &bdesc, owner);
	if (flow->srckind->row_changes)
		notes = rownotes_new(owner);
	if (flow->once)
	{
		if (flow->once_done)
			have_batch = false;
		else
		{
			PushActiveSnapshot(GetTransactionSnapshot());
			source_read_whole(flow, batch, bdesc, GetXLogInsertRecPtr(), GetCurrentTimestamp(),
							  notes);
			PopActiveSnapshot();
			flow->once_done = true;
		}
	}
	else
		source_capture(flow, batch, bdesc, m, notes);
	run_apply(flow, batch, bdesc, notes, m, have_batch, touch_all, started, true);
	run_batch_owner_release(owner);
	restore_user(saved_uid, saved_sec);
}

/*
 * Before a run_flow or full_refresh: the slot, and the moves between the
 * slots when no worker makes them (before anything is written: creating or
 * copying a slot needs a transaction that has not), then the failed runs
 * kept in shared memory are written down.
 */
void
run_prologue(FlowDef *flow)
{
	Oid			saved_uid;
	int			saved_sec;

	if (!flow->once && flow->kind != FLOW_SNAPSHOT)
	{
		slots_ensure_main();
		lanes_rebalance_for_run();
	}
	become_superuser(&saved_uid, &saved_sec);
	failures_persist();
	restore_user(saved_uid, saved_sec);
}

/*
 * Refresh a changes() flow keeping its target and history: read the table
 * under one snapshot and fold, at that snapshot's position and time, an
 * upsert of every row and a delete of every key the target's current rows
 * have and the table no longer has; afterwards the changes the snapshot
 * did not show.  (Only the flow's own target rows can be told from the
 * others', so a target other flows write too is refused.)
 */
static void
run_refresh_keep(FlowDef *flow, RunMetrics *m)
{
	FlowDef    *f;

	if (list_length(catalog_target_flows(flow->target_id)) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("full_refresh of changes() flow \"%s\" cannot keep the history of a target that other flows also write",
						flow->name),
				 errhint("Run SELECT autocdc.full_refresh(%s, discard_history => true) to empty the target and read the source of every flow into it again.",
						 quote_literal_cstr(flow->name))));
	f = catalog_load_flow(flow->name, true, false);
	f->has_progress = false;
	f->progress = InvalidXLogRecPtr;
	f->skip_upto = InvalidXLogRecPtr;	/* positions before the refresh are past */
	f->run.skip_invalid = flow->run.skip_invalid;
	f->run.refresh_keep = true;
	run_one(f, m, true, false);
}

/*
 * Refresh the target of a change flow: forget the hidden state, then every
 * change flow into the target reads its source again; the first (the named
 * one) rewrites every key of the target, so that metrics compare before and
 * after by row identity, and the others add theirs.  With after_snapshot
 * (a target a snapshot flow writes too, whose snapshots were just applied
 * again into a forgotten state, snaprun.c), the state is kept and no flow
 * rewrites every key unless touch_first.  Snapshot flows are not run here.
 */
void
run_refresh(FlowDef *flow, RunMetrics *m, bool after_snapshot, bool touch_first)
{
	List	   *flows = NIL;
	ListCell   *lc;
	Oid			saved_uid;
	int			saved_sec;

	slots_ensure_main();		/* other flows into the target may need it */
	if (flow->srckind->row_changes && !flow->run.discard_history)
	{
		run_refresh_keep(flow, m);
		return;
	}
	foreach(lc, catalog_target_flows(flow->target_id))
	{
		FlowDef    *f = catalog_load_flow(lfirst(lc), true, false);

		catalog_check_flow_owner(f);
		if (f->kind == FLOW_SNAPSHOT)
			continue;
		if (strcmp(f->name, flow->name) == 0)
			flows = lcons(f, flows);
		else
			flows = lappend(flows, f);
	}
	(void) catalog_lock_target(flow->target_id, false);
	/* a table no run can write is refused before anything is deleted */
	storage_check_kinds(flow);

	if (!after_snapshot)
	{
		become_owner(flow->owner, &saved_uid, &saved_sec);
		storage_clear_state(flow->target_id);
		restore_user(saved_uid, saved_sec);
	}

	foreach(lc, flows)
	{
		FlowDef    *f = lfirst(lc);
		RunMetrics	fm;

		memset(&fm, 0, sizeof(fm));
		f->has_progress = false;
		f->progress = InvalidXLogRecPtr;
		f->once_done = false;
		f->skip_upto = InvalidXLogRecPtr;	/* positions before the refresh are past */
		f->run.skip_invalid = flow->run.skip_invalid;
		run_one(f, &fm, true, touch_first && lc == list_head(flows));
		m->num_events += fm.num_events;
		m->num_upserted += fm.num_upserted;
		m->num_deleted += fm.num_deleted;
		m->num_skipped += fm.num_skipped;
	}
}
