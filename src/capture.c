/*-------------------------------------------------------------------------
 *
 * capture.c
 *		Capture (engine layer): one pass over a slot that puts the events of
 *		change flows into their batches.  It opens each flow's share of the
 *		pass, does the first reads (firstread.c), decodes the slot
 *		(decode.c, filtered by walfilter.c), and sets each flow's progress;
 *		and it turns a decoded row into a batch row (capture_emit) for the
 *		source kinds' handlers (srcfeed.c, srcchanges.c).
 *
 * A flow's progress is an LSN kept in autocdc.flow_state: source
 * transactions whose commit record starts before it are applied.  A pass
 * decodes one slot (the main slot, or the laggard slot) from its restart
 * point up to the WAL flushed when it started and keeps, for each flow it
 * serves, the changes of its source from transactions at or after its
 * progress: one flow for run_flow, every due flow for the background
 * worker.  Before and after decoding, the slot is confirmed up to the
 * oldest committed progress of its flows (once the commits recording it
 * are flushed), so that it can forget what every flow on it has applied.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "pgstat.h"
#include "replication/slot.h"
#include "storage/standby.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "compat.h"
#include "failures.h"
#include "lag.h"
#include "layout.h"
#include "rowstore.h"
#include "settings.h"
#include "slots.h"
#include "source_internal.h"
#include "srckind.h"
#include "storage.h"
#include "util.h"

/* How far the slot's restart point may lag before a pass logs a running-xacts record. */
#define RESTART_LAG_BYTES (1024 * 1024)

/*
 * Deform a decoded tuple.  Out-of-line values that the decoder assembled
 * from the transaction's TOAST chunks are in its memory and are copied
 * (and noted in whole, unless NULL: the row store keeps them); a pointer into the TOAST
 * table (the WAL of an UPDATE that left the value unchanged) is left as it
 * is, for the caller to fill: it is never dereferenced, since the table's
 * chunks may have been vacuumed away or reused since.
 */
static void
deform_decoded(TupleDesc desc, HeapTuple tup, Datum **values, bool **nulls, bool **whole)
{
	int			j;

	*values = palloc(sizeof(Datum) * desc->natts);
	*nulls = palloc(sizeof(bool) * desc->natts);
	if (whole)
		*whole = palloc0(sizeof(bool) * desc->natts);
	heap_deform_tuple(tup, desc, *values, *nulls);
	for (j = 0; j < desc->natts; j++)
		if (!(*nulls)[j] && TupleDescAttr(desc, j)->attlen == -1 &&
			VARATT_IS_EXTERNAL(DatumGetPointer((*values)[j])) &&
			!VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer((*values)[j])))
		{
			(*values)[j] = PointerGetDatum(detoast_external_attr((struct varlena *)
																 DatumGetPointer((*values)[j])));
			if (whole)
				(*whole)[j] = true;
		}
}

/* The new row of a change, deformed. */
void
change_new(DecodedChange *ch)
{
	if (ch->nvalues == NULL)
		deform_decoded(ch->desc, ch->newtup, &ch->nvalues, &ch->nnulls, &ch->nwhole);
}

/* The old row (or key) of a change, deformed. */
void
change_old(DecodedChange *ch)
{
	if (ch->ovalues == NULL)
		deform_decoded(ch->desc, ch->oldtup, &ch->ovalues, &ch->onulls, NULL);
}

/* Stop capturing a flow for this pass; its error is raised when it is applied. */
void
capture_fail(FeedCapture *fc, int code, char *message, char *hint)
{
	if (fc->c->error != NULL)
		return;
	fc->c->error = MemoryContextStrdup(TopTransactionContext, message);
	fc->c->error_hint = hint ? MemoryContextStrdup(TopTransactionContext, hint) : NULL;
	fc->c->error_code = code;
}

/*
 * Stop capturing a flow at a change that cannot be told (the replica
 * identity no longer names the row): the flow needs a resync.
 */
void
capture_untold(FeedCapture *fc, char *message, char *hint)
{
	if (fc->c->error != NULL)
		return;
	capture_fail(fc, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, message, hint);
	fc->c->error_resync = true;
}

/*
 * A column the table did not have yet when a row of a changes() source
 * changed (batch data position i): an ADD COLUMN since then gave the row
 * the value PostgreSQL stores for older rows (NULL when none).  False, and
 * the flow needs a resync, when its partitions store different values.
 */
static bool
missing_value(DecodedChange *ch, FeedCapture *fc, int i, Datum *value, bool *isnull)
{
	if (fc->missing[i] == MISSING_CONFLICT)
	{
		capture_untold(fc,
					   psprintf("flow \"%s\": the partitions of source \"%s\" give rows older than column \"%s\" different values",
								fc->c->flow->name, get_rel_name(fc->c->flow->source),
								NameStr(TupleDescAttr(fc->c->batchdesc, BATCH_DATA + i)->attname)),
					   psprintf("Run SELECT autocdc.full_refresh(%s): it reads the table again and keeps the history.",
								quote_literal_cstr(fc->c->flow->name)));
		return false;
	}
	*isnull = fc->missing[i] != MISSING_VALUE;
	*value = *isnull ? (Datum) 0 : fc->missing_value[i];
	return true;
}

/*
 * Put one event into a flow's batch: the decoded row (decoded layout; NULL:
 * every column NULL, and map is not read) mapped onto the batch's columns
 * by map, at the next position of the transaction, and for a changes()
 * source its pseudo-columns.  A column holding a pointer into the TOAST
 * table is filled from old (the WAL's old row, or NULL) when it can be;
 * otherwise an upsert of a changes() source keeps the pointer for the row
 * store to fill, and the capture notes it (and the values that came whole,
 * which the store keeps); a feed's flow fails.
 */
void
capture_emit(DecodedChange *ch, FeedCapture *fc, int *map, Datum *dv, bool *dn,
			 Datum *old, bool *oldnulls, const char *change_type)
{
	DecodeState *st = ch->st;
	TupleDesc	bdesc = fc->c->batchdesc;
	bool		pseudo = fc->kind->pseudo_columns;
	int			ndata = bdesc->natts - BATCH_DATA - (pseudo ? PSEUDO_NCOLUMNS : 0);
	Datum	   *values = palloc(sizeof(Datum) * bdesc->natts);
	bool	   *nulls = palloc(sizeof(bool) * bdesc->natts);
	bool		upsert = fc->c->notes != NULL && dv != NULL && dv == ch->nvalues;
	bool		newrow = fc->missing != NULL && dv != NULL && dv == ch->nvalues;
	Bitmapset  *whole = NULL;
	Bitmapset  *unchanged = NULL;
	bool		pointers = false;
	int			i;

	values[BATCH_LSN] = LSNGetDatum(fc->arrival_lsn);
	values[BATCH_ORD] = Int64GetDatum(++fc->ord);
	nulls[BATCH_LSN] = nulls[BATCH_ORD] = false;
	for (i = 0; i < ndata; i++)
	{
		int			h = dv != NULL ? map[i] : -1;

		values[BATCH_DATA + i] = (dv == NULL || h < 0) ? (Datum) 0 : dv[h];
		nulls[BATCH_DATA + i] = (dv == NULL || h < 0) ? true : dn[h];
		if (newrow && h < 0 && !missing_value(ch, fc, i, &values[BATCH_DATA + i],
											  &nulls[BATCH_DATA + i]))
			return;
		if (h < 0)
			continue;
		if (nulls[BATCH_DATA + i] || TupleDescAttr(ch->desc, h)->attlen != -1)
			continue;
		if (!VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(values[BATCH_DATA + i])))
		{
			if (upsert && ch->nwhole[h] && fc->reads[i])
				whole = bms_add_member(whole, i);
			continue;
		}
		if (old != NULL && !oldnulls[h] &&
			!VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(old[h])))
		{
			values[BATCH_DATA + i] = old[h];	/* REPLICA IDENTITY FULL */
			if (upsert && fc->reads[i])
				unchanged = bms_add_member(unchanged, i);
			continue;
		}
		if (!fc->reads[i])
		{
			/* a column the flow never reads */
			values[BATCH_DATA + i] = (Datum) 0;
			nulls[BATCH_DATA + i] = true;
			continue;
		}
		if (upsert)
		{
			pointers = true;	/* the row store fills it */
			continue;
		}
		capture_fail(fc, ERRCODE_INTERNAL_ERROR,
					 psprintf("flow \"%s\": a row inserted into source \"%s\" at " COMPAT_LSN_FORMAT " holds a pointer into the TOAST table for column \"%s\"",
							  fc->c->flow->name, get_rel_name(fc->c->flow->source),
							  LSN_FORMAT_ARGS(st->commit_lsn),
							  NameStr(TupleDescAttr(ch->desc, h)->attname)),
					 NULL);
		return;
	}
	if (whole != NULL || unchanged != NULL || pointers)
		rownotes_mark(fc->c->notes, tuplestore_tuple_count(fc->c->batch), whole, unchanged,
					  pointers, ch->moved);
	if (pseudo)
	{
		int			p = BATCH_DATA + ndata;

		/* one value per transaction, strictly increasing along arrival order */
		if (fc->txn_ts == 0)
		{
			fc->txn_ts = fc->last_ts != 0 && st->commit_time <= fc->last_ts ?
				fc->last_ts + 1 : st->commit_time;
			fc->last_ts = fc->txn_ts;
		}
		values[p + PSEUDO_CHANGE_TYPE] = CStringGetTextDatum(change_type);
		values[p + PSEUDO_COMMIT_LSN] = LSNGetDatum(st->commit_lsn);
		values[p + PSEUDO_COMMIT_TIMESTAMP] = TimestampTzGetDatum(fc->txn_ts);
		nulls[p + PSEUDO_CHANGE_TYPE] = nulls[p + PSEUDO_COMMIT_LSN] =
			nulls[p + PSEUDO_COMMIT_TIMESTAMP] = false;
	}
	tuplestore_putvalues(fc->c->batch, bdesc, values, nulls);
	if (fc->c->first_commit == 0)
		fc->c->first_commit = st->commit_time;
	st->kept++;
}

/*
 * Decoding builds relcache entries of the decoded tables under historic
 * snapshots, and InvalidateSystemCaches() leaves alone the entries of tables
 * this transaction created or rewrote (ALTER COLUMN TYPE, TRUNCATE...): such
 * an entry of the target or the hidden state would keep a past shape.  Make
 * them rebuild from the current catalog.
 */
static void
forget_historic_relcache(FlowDef *flow)
{
	Oid			state = storage_state_relid(flow->target_id);

	CacheInvalidateRelcacheByRelid(flow->target);
	if (OidIsValid(state))
		CacheInvalidateRelcacheByRelid(state);
	CacheInvalidateRelcacheByRelid(flow->source);
	CommandCounterIncrement();
}

/* Is the flow's progress still served by the slot?  (The slot is ours.) */
static bool
progress_served(FlowDef *flow)
{
	return !flow->has_progress ||
		(flow->slot_name != NULL &&
		 strcmp(flow->slot_name, NameStr(MyReplicationSlot->data.name)) == 0 &&
		 flow->progress >= MyReplicationSlot->data.confirmed_flush);
}

/*
 * Which columns of the source (batch data positions, desc: the source as
 * it is now) a changes() flow reads: those it selects and those its delete
 * and truncate conditions use (source_check found them; its sequence reads
 * only pseudo-columns).  A feed reads them all (its rows never hold
 * pointers into the TOAST table).
 */
static bool *
flow_reads(FlowDef *flow, TupleDesc desc)
{
	bool	   *reads = palloc0(sizeof(bool) * desc->natts);
	int			i,
				pos = 0;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		reads[pos++] = !flow->srckind->row_changes ||
			rowstore_column_read(flow, NameStr(att->attname));
	}
	return reads;
}

/* Open a flow's feed for a pass. */
static FeedCapture *
feed_capture_open(Capture *c)
{
	FeedCapture *fc = palloc0(sizeof(FeedCapture));

	ListCell   *lc;
	int			k = 0;

	fc->c = c;
	fc->kind = c->flow->srckind;
	fc->feed = table_open(c->flow->source, AccessShareLock);
	fc->feeddesc = RelationGetDescr(fc->feed);
	fc->last_ts = c->flow->progress_ts;
	fc->reads = flow_reads(c->flow, fc->feeddesc);
	if (fc->kind->capture_open)
		fc->kind->capture_open(fc);
	fc->keypos = palloc(sizeof(int) * list_length(c->flow->keys));
	foreach(lc, c->flow->keys)
	{
		int			i,
					pos = 0;

		fc->keypos[k] = -1;
		for (i = 0; i < fc->feeddesc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(fc->feeddesc, i);

			if (att->attisdropped)
				continue;
			if (strcmp(NameStr(att->attname), lfirst(lc)) == 0)
				fc->keypos[k] = pos;
			pos++;
		}
		if (fc->keypos[k] < 0)
			elog(ERROR, "key column \"%s\" of flow \"%s\" is not in its source",
				 (char *) lfirst(lc), c->flow->name);
		k++;
	}
	return fc;
}

/* Raise the error of a flow whose progress its slot no longer serves. */
static void
capture_resync_error(FlowDef *flow)
{
	failures_note_resync(flow->id);
	if (flow->resync_reason)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flow \"%s\" needs a resync", flow->name),
				 errdetail("It was taken off its replication slot: %s.", flow->resync_reason),
				 errhint("Run SELECT autocdc.full_refresh(%s): it reads the source again.",
						 quote_literal_cstr(flow->name))));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("flow \"%s\" needs a resync: its source position " COMPAT_LSN_FORMAT " is no longer available",
					flow->name, LSN_FORMAT_ARGS(flow->progress)),
			 errhint("Run autocdc.full_refresh(%s).", quote_literal_cstr(flow->name))));
}

/*
 * Open each flow's share of the pass (st->feeds), leaving out those whose
 * progress the slot cannot serve (an error when resync_error).  Returns
 * whether some flow needs a first read.
 */
static bool
capture_open_flows(DecodeState *st, List *captures, bool resync_error)
{
	ListCell   *lc;
	bool		any_first = false;

	foreach(lc, captures)
	{
		Capture    *c = lfirst(lc);

		c->resync = false;
		c->deferred = false;
		if (!progress_served(c->flow))
		{
			if (resync_error)
				capture_resync_error(c->flow);
			c->resync = true;
			continue;
		}
		st->feeds = lappend(st->feeds, feed_capture_open(c));
		st->nfeeds++;
		if (!c->flow->has_progress)
			any_first = true;
	}
	return any_first;
}

/*
 * The first reads of the flows without progress, all under one snapshot
 * (firstread.c): each flow's whole source, as one transaction stamped with
 * the snapshot's time; decoding then keeps what the snapshot did not show.
 */
static void
capture_first_reads(DecodeState *st)
{
	Snapshot	snap = firstread_snapshot();
	XLogRecPtr	pos = GetXLogInsertRecPtr();
	TimestampTz taken = GetCurrentTimestamp();
	ListCell   *lc;

	PushActiveSnapshot(snap);
	foreach(lc, st->feeds)
	{
		FeedCapture *fc = lfirst(lc);
		int64		ord;

		if (fc->c->flow->has_progress)
			continue;
		fc->c->flow->run.read_whole = true;
		fc->last_ts = fc->last_ts != 0 && taken <= fc->last_ts ? fc->last_ts + 1 : taken;
		ord = source_read_whole(fc->c->flow, fc->c->batch, fc->c->batchdesc,
								pos, fc->last_ts, fc->c->notes);
		if (fc->c->flow->run.refresh_keep)
			firstread_missing(fc->c->flow, fc->c->batch, fc->c->batchdesc,
							  pos, fc->last_ts, ord);
		if (tuplestore_tuple_count(fc->c->batch) > 0)
			fc->c->first_commit = GetCurrentTimestamp();
		fc->first = snap;
		fc->first_pos = pos;
	}
	PopActiveSnapshot();
}

/*
 * Note, for lag.c, what the sources' statistics count now: it was committed
 * before this point, which the pass decodes; a later count that differs
 * tells that a later commit may be pending.
 */
static void
capture_lag_start(DecodeState *st)
{
	TimestampTz decoded_at;
	ListCell   *lc;

	pgstat_clear_snapshot();
	decoded_at = GetCurrentTimestamp();
	foreach(lc, st->feeds)
	{
		Capture    *c = ((FeedCapture *) lfirst(lc))->c;

		c->lag.stat_changes = lag_source_changes(c->flow->source);
		c->lag.decoded_at = decoded_at;
		c->lag.pending_since = 0;
		c->lag.cut = false;
	}
}

/*
 * With the slot acquired: confirm it or do the first reads, decode, and
 * confirm it again.  Returns where decoding stopped.
 */
static XLogRecPtr
capture_on_slot(DecodeState *st, List *captures, bool resync_error,
				int64 max_events, int64 max_wal, bool *more)
{
	XLogRecPtr	end;
	XLogRecPtr	result;
	ListCell   *lc;

	/*
	 * Let the slot forget what every flow has applied before decoding (its
	 * restart point moves with the candidates the last pass found);
	 * otherwise each run re-reads the previous run's WAL.  A first read
	 * skips this, so that nothing can move the slot between its snapshot and
	 * what it decodes.
	 */
	if (!capture_open_flows(st, captures, resync_error))
		slots_confirm_held();
	else
		capture_first_reads(st);

	/* decode in memory as far as autocdc.decoding_work_mem allows */
	(void) set_config_option("logical_decoding_work_mem",
							 psprintf("%d", autocdc_decoding_work_mem),
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	capture_lag_start(st);

	/* everything committed before this point is decoded by this pass */
	XLogFlush(compat_GetXLogInsertEndRecPtr());
	end = GetFlushRecPtr(NULL);
	result = decode_pass(st, end, max_events, max_wal, more);
	InvalidateSystemCaches();
	foreach(lc, st->feeds)
		forget_historic_relcache(((FeedCapture *) lfirst(lc))->c->flow);
	slots_confirm_held();

	/*
	 * Every pass decodes from the slot's restart point, which moves only at
	 * running-transactions records; the background writer logs one every 15
	 * s.  When the restart point lags far behind, log one now, so that the
	 * next pass can move it and re-reads less.
	 */
	if (MyReplicationSlot->data.confirmed_flush >
		MyReplicationSlot->data.restart_lsn + RESTART_LAG_BYTES)
		(void) LogStandbySnapshot();
	return result;
}

/*
 * After the pass: each captured flow's progress is where decoding stopped
 * (result), on slot; an evicted flow's batch is emptied (it is decoded
 * again where it is served apart).
 */
static void
capture_finish(DecodeState *st, XLogRecPtr result, const char *slot, bool *more)
{
	ListCell   *lc;

	foreach(lc, st->feeds)
	{
		FeedCapture *fc = lfirst(lc);
		FlowDef    *flow = fc->c->flow;

		table_close(fc->feed, AccessShareLock);
		if (fc->evicted)
		{
			tuplestore_clear(fc->c->batch);
			continue;
		}
		fc->c->lag.cut = more != NULL && *more;
		if (result > flow->progress || !flow->has_progress)
			flow->progress = result;
		flow->progress_ts = fc->last_ts;
		flow->has_progress = true;
		flow->slot_name = pstrdup(slot);
	}
}

/*
 * Capture the events of change flows into their batches in one decoding
 * pass: a first read for each flow without progress, then the decoded
 * changes.  Sets each captured flow's progress to the end of what was
 * decoded.  A flow whose progress the slot cannot serve is an error when
 * resync_error, and is otherwise left out (c->resync).  With max_events
 * > 0 the pass stops at the first transaction boundary past that many
 * events, or past max_wal bytes of WAL (0: no limit), and *more says
 * whether WAL was left to decode.  With evict_after > 0, the flows reading
 * a table with more changes than that in the pass are evicted from it
 * (c->deferred: not captured, their progress unchanged).  slot is the slot
 * the flows are on (slots.c).  SPI must be connected.
 */
void
source_capture_flows(List *captures, const char *slot, int64 max_events,
					 int64 max_wal, int64 evict_after, bool resync_error, bool *more)
{
	DecodeState st;
	XLogRecPtr	result = InvalidXLogRecPtr;
	volatile ResourceOwner saved_owner = CurrentResourceOwner;

	if (slot == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the replication slot of autocdc does not exist")));
	if (more)
		*more = false;
	memset(&st, 0, sizeof(st));
	st.evict_after = evict_after;
	st.cxt = AllocSetContextCreate(CurrentMemoryContext, "autocdc decode",
								   ALLOCSET_DEFAULT_SIZES);
	st.relcxt = AllocSetContextCreate(CurrentMemoryContext, "autocdc decode relations",
									  ALLOCSET_SMALL_SIZES);
	st.cxt_filter = AllocSetContextCreate(CurrentMemoryContext, "autocdc decode filter",
										  ALLOCSET_SMALL_SIZES);

	compat_ReplicationSlotAcquire(slot, false);
	PG_TRY();
	{
		result = capture_on_slot(&st, captures, resync_error, max_events, max_wal, more);
		ReplicationSlotRelease();
	}
	PG_CATCH();
	{
		CurrentResourceOwner = saved_owner;
		InvalidateSystemCaches();
		if (MyReplicationSlot != NULL)
			ReplicationSlotRelease();
		PG_RE_THROW();
	}
	PG_END_TRY();

	capture_finish(&st, result, slot, more);
	MemoryContextDelete(st.cxt);
	MemoryContextDelete(st.relcxt);
	MemoryContextDelete(st.cxt_filter);
}

/*
 * Capture the events of one change flow into the batch (see
 * source_capture_flows); a flow that needs a resync is an error.
 */
void
source_capture(FlowDef *flow, Tuplestorestate *batch, TupleDesc batchdesc,
			   RunMetrics *m, RowNotes *notes)
{
	Capture		c;

	memset(&c, 0, sizeof(c));
	c.flow = flow;
	c.batch = batch;
	c.batchdesc = batchdesc;
	c.m = m;
	c.notes = notes;
	source_capture_flows(list_make1(&c), slots_for_flow(flow), 0, 0, 0, true, NULL);
	source_raise_capture_error(&c);
	/* everything decoded is applied, or the run fails and the note goes */
	lag_note(flow->id, &c.lag);
}

/* Raise the error that stopped a flow's capture, if any. */
void
source_raise_capture_error(Capture *c)
{
	failures_note_resync(c->error && c->error_resync ? c->flow->id : 0);
	if (c->error && c->error_code != 0)
		ereport(ERROR,
				(errcode(c->error_code),
				 errmsg("%s", c->error),
				 c->error_hint ? errhint("%s", c->error_hint) : 0));
	if (c->error)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s", c->error),
				 errhint("Run autocdc.full_refresh(%s) to re-read the source.",
						 quote_literal_cstr(c->flow->name))));
}
