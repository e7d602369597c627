/*-------------------------------------------------------------------------
 *
 * snaprun.c
 *		Runs of snapshot flows (use-case layer): take the next snapshot(s) -
 *		the table or view itself, versioned by the run's transaction time,
 *		each relation a version function hands out in ascending version, or
 *		a snapshot query read into a temporary table (at the transaction
 *		time, or at each version its version query names) - and apply each
 *		one's differences from the target (compare.c).  The first snapshot
 *		of a version-function flow creates its target.
 *
 * A snapshot flow alone in its target: the comparison takes the target's
 * current rows to be the previous snapshot.  With change flows into the
 * target too (SCD 1 only, the version of the sequence's type), a snapshot
 * at version v is a truncate at v and an upsert at v of each of its rows,
 * folded with their events (compare.c).  The last applied version is kept
 * as text in the catalog.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "compare.h"
#include "define.h"
#include "layout.h"
#include "run.h"
#include "snaprun.h"
#include "snapsource.h"
#include "storage.h"
#include "util.h"

/* Do change flows write the snapshot flow's target too? */
bool
snaprun_mixed(FlowDef *flow)
{
	return flow->target_id != 0 && list_length(catalog_target_flows(flow->target_id)) > 1;
}

/*
 * Apply one snapshot at a version: follow the snapshot's columns (a column
 * added to it is added to the target), compare, and apply the differences
 * as the owner.
 */
static void
apply_snapshot(FlowDef *flow, Oid rel, Oid vtype, Datum version, RunMetrics *m)
{
	bool		full = (flow->snapshot_version == NULL);
	char	   *vtext = snapsource_version_text(vtype, version);
	int64		before = m->num_events;
	int64		rows;
	int32		typmod = -1;

	if (check_enable_rls(rel, flow->owner, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("snapshot \"%s\" of flow \"%s\" has row-level security enabled",
						get_rel_name(rel), flow->name),
				 errhint("A flow must read every row of its snapshots; its owner must bypass row-level security.")));
	flow->source = rel;
	storage_sync_columns(flow, full);
	run_hold_relations(flow, rel);
	/* the version as the target stores it: a domain's base type (runs none of its code) */
	rows = compare_snapshot(flow, rel, psprintf("%s::%s", quote_literal_cstr(vtext),
												format_type_be_qualified(flatten_type(vtype, &typmod))),
							full, snaprun_mixed(flow), m);
	run_release_relations();
	m->num_events = before + rows;
	catalog_set_snapshot_version(flow, vtext);
}

/*
 * Apply what a version function hands out, call after call, in ascending
 * version; returns the number of snapshots applied.
 */
static int
run_function_versions(FlowDef *flow, RunMetrics *m)
{
	Oid			vtype;
	Oid			fn = snapsource_resolve(flow, &vtype);
	bool		lastnull = (flow->snapshot_version == NULL);
	Datum		last = lastnull ? (Datum) 0 : snapsource_version_datum(vtype, flow->snapshot_version);
	int			applied = 0;

	for (;;)
	{
		List	   *rows;
		ListCell   *lc;

		CHECK_FOR_INTERRUPTS();
		rows = snapsource_call(flow, fn, vtype, last, lastnull);
		if (rows == NIL)
			break;
		foreach(lc, rows)
		{
			SnapVersion *sv = lfirst(lc);

			if (!lastnull && snapsource_version_compare(vtype, sv->version, last) <= 0)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_EXCEPTION),
						 errmsg("version function %s of flow \"%s\" returned version %s, which is not greater than the last applied version %s",
								flow->source_function, flow->name,
								snapsource_version_text(vtype, sv->version), snapsource_version_text(vtype, last)),
						 errhint("Return only versions greater than the function's argument (each once), and no rows when there is nothing new.")));
			if (get_rel_name(sv->rel) == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_TABLE),
						 errmsg("version function %s of flow \"%s\" returned a snapshot relation that does not exist",
								flow->source_function, flow->name),
						 errhint("Return only snapshots that exist, as regclass values.")));
			if (flow->target_id == 0)
			{
				/* creates or joins the target, and reloads the flow */
				define_snapshot_target(flow, sv->rel, vtype);
				flow->run.expectations = run_load_expectations(flow);
			}
			apply_snapshot(flow, sv->rel, vtype, sv->version, m);
			applied++;
			last = sv->version;
			lastnull = false;
		}
	}
	return applied;
}

/*
 * Apply a snapshot query's snapshots: without a version query, one at the
 * run's transaction time (as a table's); with one, each version it names,
 * asked again after each, read by the snapshot query with that version.
 * Returns the number of snapshots applied.
 */
static int
run_query_versions(FlowDef *flow, RunMetrics *m)
{
	Oid			vtype = OidIsValid(flow->version_type) ? flow->version_type : TIMESTAMPTZOID;
	bool		lastnull = (flow->snapshot_version == NULL);
	Datum		last = lastnull ? (Datum) 0 : snapsource_version_datum(vtype, flow->snapshot_version);
	Datum		next;
	int			applied = 0;

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (flow->version_query != NULL)
		{
			if (!snapsource_query_version(flow, last, lastnull, &next))
				break;
		}
		else
		{
			next = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
			if (applied > 0 ||
				(!lastnull && snapsource_version_compare(vtype, next, last) <= 0))
				break;
		}
		apply_snapshot(flow, snapsource_query_snapshot(flow, next, true), vtype, next, m);
		snapsource_query_done();
		applied++;
		last = next;
		lastnull = false;
	}
	return applied;
}

/*
 * One run; returns the number of snapshots applied.  A once flow applies
 * what is available at its first run (or at a refresh), then nothing: it
 * is done.
 */
static int
snap_run_versions(FlowDef *flow, RunMetrics *m, bool refresh)
{
	int			applied = 0;

	/*
	 * Read the flow again now that it is locked: the row the caller read
	 * may predate a run that committed while we waited for the lock (its
	 * last version, or the target its first snapshot created).
	 */
	*flow = *catalog_load_flow(flow->name, true, false);
	run_advertise(flow);		/* autocdc.flows shows 'running' */
	/* counted over the whole run */
	flow->run.expectations = run_load_expectations(flow);
	flow->run.snapshot_refresh = refresh;
	if (flow->once && flow->once_done && !refresh)
		return 0;
	if (flow->source_query != NULL)
		applied = run_query_versions(flow, m);
	else if (flow->source_function == NULL)
	{
		/* a table or view, versioned by the transaction's start time */
		Datum		now = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());

		if (flow->snapshot_version == NULL ||
			snapsource_version_compare(TIMESTAMPTZOID, now,
							snapsource_version_datum(TIMESTAMPTZOID, flow->snapshot_version)) > 0)
		{
			apply_snapshot(flow, flow->source, TIMESTAMPTZOID, now, m);
			applied++;
		}
	}
	else
		applied = run_function_versions(flow, m);
	/* (the first snapshot's target creation reloaded the flow) */
	flow->once_done = flow->once;
	return applied;
}

/*
 * One run of a snapshot flow that is loaded and locked (the flow_state row),
 * with SPI connected and search_path pinned, as the caller: read the
 * snapshot(s) and apply them, then record the run.  The entry point for
 * run_flow and the background worker.
 */
void
snaprun_run(FlowDef *flow, RunMetrics *m)
{
	TimestampTz started = GetCurrentTimestamp();
	Oid			saved_uid;
	int			saved_sec;

	become_owner(flow->owner, &saved_uid, &saved_sec);
	(void) snap_run_versions(flow, m, false);
	catalog_save_progress(flow, m, started, true);
	restore_user(saved_uid, saved_sec);
}

/*
 * full_refresh of a snapshot flow: forget the hidden state and the last
 * version, and apply the snapshot(s) again from the start; the first one
 * rewrites every key of the target (so metrics compare rows by identity).
 * If there is no snapshot at all, the target is emptied.
 */
void
snaprun_refresh(FlowDef *flow, RunMetrics *m)
{
	TimestampTz started = GetCurrentTimestamp();
	Oid			saved_uid;
	int			saved_sec;

	become_owner(flow->owner, &saved_uid, &saved_sec);
	*flow = *catalog_load_flow(flow->name, true, false);	/* see snap_run_versions */
	if (flow->target_id != 0)
		storage_check_kinds(flow);
	if (flow->target_id != 0)
		storage_clear_state(flow->target_id);
	catalog_set_snapshot_version(flow, NULL);
	if (snap_run_versions(flow, m, true) == 0 && flow->target_id != 0)
	{
		spi_exec(psprintf("DELETE FROM %s", table_rows(flow->target)), SPI_OK_DELETE);
		m->num_deleted += SPI_processed;
	}
	catalog_save_progress(flow, m, started, true);
	restore_user(saved_uid, saved_sec);
}

/*
 * full_refresh of either flow of a target that a snapshot flow (snap) and
 * change flows write (named: the flow refreshed): forget the hidden state,
 * apply the snapshot(s) again from the start, then every change flow reads
 * its source again (run.c) - as a refresh that keeps no history, which an
 * SCD 1 target does not have; a changes() flow refreshed by name still
 * needs discard_history.  The snapshots' truncates touch every key, so
 * metrics compare by row identity; with no snapshot at all, the first
 * change flow rewrites every key instead.  Ties between a re-read change
 * event and a snapshot at one sequence go to the change event, read last.
 */
void
snaprun_refresh_mixed(FlowDef *snap, FlowDef *named, RunMetrics *m)
{
	TimestampTz started = GetCurrentTimestamp();
	Oid			saved_uid;
	int			saved_sec;
	RunMetrics	sm;
	FlowDef    *change = named;
	int			applied;

	if (named->kind == FLOW_SNAPSHOT)
	{
		ListCell   *lc;

		foreach(lc, catalog_target_flows(snap->target_id))
			if (strcmp(lfirst(lc), snap->name) != 0)
			{
				change = catalog_load_flow(lfirst(lc), false, false);
				break;
			}
		change->run.discard_history = true;
		change->run.skip_invalid = false;
	}
	else if (change->srckind->row_changes && !change->run.discard_history)
	{
		run_refresh(change, m, false, true);	/* refused: other flows write the target */
		return;
	}
	catalog_check_flow_owner(snap);
	memset(&sm, 0, sizeof(sm));
	become_owner(snap->owner, &saved_uid, &saved_sec);
	*snap = *catalog_load_flow(snap->name, true, false);	/* see snap_run_versions */
	storage_check_kinds(snap);
	storage_clear_state(snap->target_id);
	catalog_set_snapshot_version(snap, NULL);
	applied = snap_run_versions(snap, &sm, true);
	catalog_save_progress(snap, &sm, started, true);
	restore_user(saved_uid, saved_sec);
	m->num_events += sm.num_events;
	m->num_upserted += sm.num_upserted;
	m->num_deleted += sm.num_deleted;
	run_refresh(change, m, true, applied == 0);
}
