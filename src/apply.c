/*-------------------------------------------------------------------------
 *
 * apply.c
 *		The apply engine: classify and validate a batch, fold every touched
 *		key (semantics §4) from its hidden state and new events, and write the
 *		differences to the target and the hidden state.
 *
 * Hidden state (autocdc_state.target_<id>) holds events: the target's data
 * columns, __autocdc_seq, the arrival position (__autocdc_lsn,
 * __autocdc_ord), the kind ('u' upsert, 'd' delete, 't' truncate with NULL
 * key) and the wall-clock time it was stored.  What is kept:
 *   - SCD 1 without ignore_null_updates: the last event of each key (its
 *     row values, or a tombstone); nothing for a key whose last event is a
 *     truncate.  Only the last event decides an SCD 1 key.
 *   - otherwise every event that is not a tie loser: a later tie can undo
 *     any event, and SCD 2 re-splits versions from their events.
 *   - every truncate.
 * A target whose one flow folds in arrival order (an SCD 1 changes() flow
 * sequenced by _commit_timestamp, see define.c) keeps none of it: every new
 * event of a key is later than all before it, so the fold needs only the
 * target's row.
 *
 * A run is set-based: one query classifies the batch (user expressions are
 * evaluated there, as the owner) while C validates each event and gathers
 * the distinct touched keys in a hash table, whose entries hold the keys'
 * new events (for SCD 1 without ignore_null_updates only each key's last
 * event: nothing else can matter) while all that fits in five eighths of
 * autocdc.work_mem.  One query then returns the target rows and state
 * events of the touched keys, reached through their indexes and
 * sorted by key and (sequence, arrival); the fold walks that stream key by
 * key in C, adding each key's new events from the hash, then folds the
 * keys met nowhere else, sorted by key (so that every row reaches the
 * btree indexes in key order).  Past that memory, or when a truncate touches
 * every key, the hash is given up: the new events go to a tuplestore, SQL
 * finds their distinct keys, and the same query sorts them in.  Each
 * tuplestore and each query's sorts get their own share of
 * autocdc.work_mem (settings.c), so that a run's memory does not grow with
 * its transactions.  A few statements write the differences: deletes by
 * ctid in the table that holds each row (the stream query reads it with
 * the row: a partition of a partitioned target), an INSERT into the target
 * from a tuplestore, and the state's new rows through heap_multi_insert.
 * A target Citus distributes is written by key instead (write_by_key):
 * rows deleted by key and period (the state's by key and arrival) joined
 * with the run's rows, everything inserted by INSERT ... SELECT, statements
 * Citus pushes down to the shards; the state's truncates (no key) go to a
 * table of their own on the coordinator (storage.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/transam.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "funcapi.h"
#include "utils/syscache.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "replication/origin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/sortsupport.h"
#include "utils/typcache.h"
#include "utils/timestamp.h"
#include "storage/bufmgr.h"
#include "storage/itemptr.h"

#ifndef DatumGetItemPointer
#define DatumGetItemPointer(X) ((ItemPointer) DatumGetPointer(X))
#define ItemPointerGetDatum(X) PointerGetDatum(X)
#endif

#include "apply.h"
#include "batch.h"
#include "catalog.h"
#include "compat.h"
#include "failures.h"
#include "fold.h"
#include "kind.h"
#include "layout.h"
#include "storage.h"
#include "settings.h"
#include "tablekind.h"
#include "util.h"

/* the stream query's columns before the data columns: __src, __tid, __rel */
#define STREAM_LEAD 3

/* A row to delete: its table and its row id there. */
typedef struct RowRef
{
	Oid			rel;
	ItemPointerData tid;
} RowRef;

/* tmap values other than a data column */
#define TMAP_NONE (-100)
#define TMAP_PERIOD(p) (-1 - (p))
#define TMAP_IS_PERIOD(m) ((m) < 0 && (m) > TMAP_NONE)
#define TMAP_PERIOD_OF(m) (-1 - (m))

typedef struct ApplyCtx
{
	FlowDef    *flow;
	Oid			staterel;
	TupleDesc	tdesc;			/* target */
	TupleDesc	sdesc;			/* state */
	Oid			ttype;
	Oid			stype;
	const StorageKind *kind;
	FoldCols	c;				/* the data columns and the sequence */
	int		   *dattno;			/* data idx -> state attribute index */
	int			bk[STATE_NCOLUMNS]; /* state attribute index of each StateColumn */
	int			bksys;			/* and of the system sequence (bitemporal), or
								 * -1 */
	int			bkwritten;		/* and of the columns an upsert writes, or -1 */
	bool		has_ctu;		/* the flow reads columns_to_update */
	int		   *tmap;			/* target attno-1 -> data idx, TMAP_PERIOD(p), or
								 * TMAP_NONE */
	/* truncates, sorted */
	Ev		  **truncs;
	int			ntruncs;
	/* outputs */
	Tuplestorestate *tins;
	int64		ntins;
	bool	   *tins_null;		/* per target column: some row of tins holds
								 * a null there */
	Tuplestorestate *sins;
	int64		nsins;
	HeapTuple  *sinstups;		/* more state rows: new events' own tuples,
								 * held by the keyhash's entries */
	int64		nsinstups,
				maxsinstups;
	RowRef	   *tdel;
	int			ntdel,
				maxtdel;
	RowRef	   *sdel;
	int			nsdel,
				maxsdel;
	/* a Citus-distributed target: rows addressed by key (write_by_key) */
	bool		distributed;
	Oid			truncrel;		/* where the state's truncates are */
	Tuplestorestate *tdelrows;	/* target rows to delete (target row type) */
	int64		ntdelrows;
	Tuplestorestate *sdelrows;	/* state rows to delete (state row type) */
	int64		nsdelrows;
	Tuplestorestate *truncins;	/* truncates to keep (state row type) */
	int64		ntruncins;
	RunMetrics *m;
	MemoryContext groupcxt;
	MemoryContext cxt;			/* lives for the whole apply */
	/* distinct keys of the new events, gathered while classifying */
	MemoryContext keycxt;		/* the keyhash, its keys and their events */
	MemoryContext tupcxt;		/* (in keycxt) key values and event tuples,
								 * packed: they are rarely freed */
	struct keyhash_hash *keyhash;	/* NULL: a key type cannot be hashed, or the
								 * keys outgrew their share of memory */
	FmgrInfo   *keyhashfn;		/* per key column */
	bool		keyimage;		/* keys are equal when their Datums are
								 * (keys_by_image) */
	Datum	   *formvals;		/* form_state_tuple's arrays, reused */
	bool	   *formnulls;
	Datum	   *putvals;		/* put_target_row's */
	bool	   *putnulls;
	TupleDesc	keydesc;
	int64		nkeys_distinct;
	bool		last_only;		/* keep only each key's last event (SCD 1) */
	struct KeyEntry **entries;	/* the keyhash's entries, first seen first
								 * until entries_sorted */
	bool		entries_sorted; /* entries are in key order */
	bool		inmem;			/* new events are held by their key's entry */
	bool		keys_outgrew;	/* the keyhash was given up for its size */
	bool		hashfold;		/* the fold takes new events from the entries */
	int64		njoinkeys;		/* keys the fold's query joins to; -1: all */
	bool		small;			/* target and state are small beside the
								 * njoinkeys keys (small_beside_keys) */
	bool		unjoined;		/* the fold's query reads every row of a small
								 * target and state; the fold passes over the
								 * keys the keyhash does not hold */
	bool		stateless;		/* the target keeps no per-key hidden state:
								 * its one flow folds in arrival order */
} ApplyCtx;

/*
 * An entry of the touched-keys hash.  While the batch's events fit in
 * work_mem, the entry holds its key's events, and the fold takes them from
 * here instead of sorting them with the target's and the state's rows in
 * SQL.  For SCD 1 without ignore_null_updates only the last event of a key
 * in the batch can matter (its sequence and arrival decide, ties go to the
 * later arrival), so the entry keeps just that one, whatever the batch's
 * size, and the others never reach the fold.
 */
typedef struct KeyEntry
{
	Datum	   *keyvals;		/* the key, one Datum per key column */
	HeapTuple  *evs;			/* the key's new events (state rows), arrival
								 * order; for SCD 1 only the last so far */
	int			nevs,
				maxevs;
	HeapTuple	last;			/* SCD 1: evs points here */
	Size		lastsize;		/* SCD 1: bytes allocated for last */
	Datum		seq;			/* SCD 1: sequence of evs[0] */
	bool		done;			/* folded */
} KeyEntry;

/*
 * A slot of the touched-keys hash (simplehash: open addressing, the hash
 * stored beside the key, so that a probe reads one slot and compares the
 * key only when the hashes agree).  Slots move as the table fills; the
 * entry they point to does not.
 */
typedef struct KeySlot
{
	Datum	   *keyvals;		/* entry->keyvals */
	KeyEntry   *entry;
	uint32		hash;
	char		status;
} KeySlot;

static uint32 key_hash(ApplyCtx *a, Datum *vals);
static bool key_equal(ApplyCtx *a, Datum *v1, Datum *v2);
static bool sort_entries(ApplyCtx *a, struct KeyEntry **entries, int64 n);
static bool small_beside_keys(ApplyCtx *a);

#define SH_PREFIX keyhash
#define SH_ELEMENT_TYPE KeySlot
#define SH_KEY_TYPE Datum *
#define SH_KEY keyvals
#define SH_HASH_KEY(tb, key) key_hash((ApplyCtx *) (tb)->private_data, key)
#define SH_EQUAL(tb, a, b) key_equal((ApplyCtx *) (tb)->private_data, a, b)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) a->hash
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

static void put_state_row(ApplyCtx *a, Tuplestorestate *ts, Datum *dvals, bool *dnulls,
						  Datum wlist, Datum seq, XLogRecPtr lsn, int64 ord, char kind,
						  Datum sysseq);
static HeapTuple form_state_tuple(ApplyCtx *a, Datum *dvals, bool *dnulls, Datum wlist,
								  Datum seq, XLogRecPtr lsn, int64 ord, char kind, Datum sysseq);

/* Append the row (table, tid) of e to a growable array. */
static void
push_row(MemoryContext cxt, RowRef **arr, int *n, int *max, Ev *e)
{
	if (*n >= *max)
	{
		*max = *max ? *max * 2 : 1024;
		*arr = *arr ? repalloc_huge(*arr, sizeof(RowRef) * *max)
			: MemoryContextAllocHuge(cxt, sizeof(RowRef) * *max);
	}
	(*arr)[*n].rel = e->rel;
	(*arr)[*n].tid = e->tid;
	(*n)++;
}

/* The type of period column p of the flow's kind. */
static Oid
period_type(ApplyCtx *a, int p)
{
	return p >= a->kind->sysperiods_from ? a->flow->sysseq_type : a->flow->seq_type;
}

/* Has the hidden state its bookkeeping column (at attribute index idx) of type want? */
static void
check_bookkeeping(ApplyCtx *a, int idx, Oid want, const char *name)
{
	if (idx < 0 || TupleDescAttr(a->sdesc, idx)->atttypid != want)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("hidden state %s of flow \"%s\" has been altered",
						qualified_relname(a->staterel), a->flow->name),
				 errdetail("Its bookkeeping column %s is missing or has another type.", name),
				 errhint("Drop the flow and create it again.")));
}

/*
 * Find the hidden state's data columns (by name) and bookkeeping columns
 * (wherever they are), check the latter's types, and look up the system
 * sequence's comparison for a kind with system periods.
 */
static void
setup_state_columns(ApplyCtx *a, FlowDef *flow)
{
	int			i,
				k;
	TypeCacheEntry *tc;

	a->dattno = palloc(sizeof(int) * a->sdesc->natts);
	a->c.ndata = 0;
	for (i = 0; i < STATE_NCOLUMNS; i++)
		a->bk[i] = -1;
	a->bksys = -1;
	a->bkwritten = -1;
	for (i = 0; i < a->sdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(a->sdesc, i);
		bool		bookkeeping = false;

		if (att->attisdropped)
			continue;
		if (strcmp(NameStr(att->attname), STATE_SYSSEQ_NAME) == 0)
		{
			a->bksys = i;
			continue;
		}
		if (strcmp(NameStr(att->attname), STATE_WRITTEN_NAME) == 0)
		{
			a->bkwritten = i;
			continue;
		}
		for (k = 0; k < STATE_NCOLUMNS; k++)
			if (strcmp(NameStr(att->attname), state_columns[k].name) == 0)
			{
				a->bk[k] = i;
				bookkeeping = true;
			}
		if (!bookkeeping)
			a->dattno[a->c.ndata++] = i;
	}
	for (i = 0; i < STATE_NCOLUMNS; i++)
		check_bookkeeping(a, a->bk[i], i == STATE_SEQ ? flow->seq_type : state_columns[i].type,
						  state_columns[i].name);
	if (a->has_ctu || a->bkwritten >= 0)
		check_bookkeeping(a, a->bkwritten, TEXTARRAYOID, STATE_WRITTEN_NAME);
	a->c.has_sys = a->kind->sysperiods_from < a->kind->nperiods;
	a->c.sysperiods_from = a->kind->sysperiods_from;
	if (a->c.has_sys)
	{
		check_bookkeeping(a, a->bksys, flow->sysseq_type, STATE_SYSSEQ_NAME);
		tc = lookup_type_cache(flow->sysseq_type, TYPECACHE_CMP_PROC_FINFO);
		if (!OidIsValid(tc->cmp_proc_finfo.fn_oid))
			elog(ERROR, "system sequence type %u has no comparison function", flow->sysseq_type);
		fmgr_info_copy(&a->c.syscmp, &tc->cmp_proc_finfo, CurrentMemoryContext);
		a->c.syscoll = TupleDescAttr(a->sdesc, a->bksys)->attcollation;
		a->c.sys_is_row = type_is_rowtype(flow->sysseq_type);
		get_typlenbyval(flow->sysseq_type, &a->c.syslen, &a->c.sysbyval);
	}
}

/*
 * Per data column: name, type, collation, whether it is a key (and its
 * place in the flow's key order), selected or tracked, and its equality and
 * output functions; then the sequence's comparison.
 */
static void
setup_data_columns(ApplyCtx *a, FlowDef *flow)
{
	int			i,
				k;
	TypeCacheEntry *tc;

	a->c.dnames = palloc(sizeof(char *) * a->c.ndata);
	a->c.dtypes = palloc(sizeof(Oid) * a->c.ndata);
	a->c.dcolls = palloc(sizeof(Oid) * a->c.ndata);
	a->c.is_key = palloc0(sizeof(bool) * a->c.ndata);
	a->c.tracked = palloc0(sizeof(bool) * a->c.ndata);
	a->c.selected = palloc0(sizeof(bool) * a->c.ndata);
	a->c.skipnull = palloc0(sizeof(bool) * a->c.ndata);
	a->c.eqfn = palloc0(sizeof(FmgrInfo) * a->c.ndata);
	a->c.outfn = palloc0(sizeof(FmgrInfo) * a->c.ndata);
	a->c.nkeys = list_length(flow->keys);
	a->c.keyidx = palloc(sizeof(int) * a->c.nkeys);
	for (i = 0; i < a->c.ndata; i++)
	{
		Form_pg_attribute att = TupleDescAttr(a->sdesc, a->dattno[i]);
		Oid			outf;
		bool		varlena;
		ListCell   *lc;

		a->c.dnames[i] = pstrdup(NameStr(att->attname));
		a->c.dtypes[i] = att->atttypid;
		a->c.dcolls[i] = att->attcollation;
		k = 0;
		foreach(lc, flow->keys)
		{
			if (strcmp(lfirst(lc), a->c.dnames[i]) == 0)
			{
				a->c.is_key[i] = true;
				a->c.keyidx[k] = i;
			}
			k++;
		}
		foreach(lc, flow->columns)
			if (strcmp(lfirst(lc), a->c.dnames[i]) == 0)
				a->c.selected[i] = true;
		if (!a->c.is_key[i])
			a->c.tracked[i] = flow->track_all || name_in_list(flow->track, a->c.dnames[i]);
		if (!a->c.is_key[i])
			a->c.skipnull[i] = flow->ignore_nulls ||
				(flow->has_inu_include && name_in_list(flow->inu_include, a->c.dnames[i])) ||
				(flow->has_inu_except && !name_in_list(flow->inu_except, a->c.dnames[i]));
		tc = lookup_type_cache(att->atttypid, TYPECACHE_EQ_OPR_FINFO);
		if (OidIsValid(tc->eq_opr_finfo.fn_oid))
			fmgr_info_copy(&a->c.eqfn[i], &tc->eq_opr_finfo, CurrentMemoryContext);
		getTypeOutputInfo(att->atttypid, &outf, &varlena);
		fmgr_info(outf, &a->c.outfn[i]);
	}
	tc = lookup_type_cache(flow->seq_type, TYPECACHE_CMP_PROC_FINFO);
	if (!OidIsValid(tc->cmp_proc_finfo.fn_oid))
		elog(ERROR, "sequence type %u has no comparison function", flow->seq_type);
	fmgr_info_copy(&a->c.seqcmp, &tc->cmp_proc_finfo, CurrentMemoryContext);
	a->c.seqcoll = TupleDescAttr(a->sdesc, a->bk[STATE_SEQ])->attcollation;
	a->c.seq_is_row = type_is_rowtype(flow->seq_type);
	get_typlenbyval(flow->seq_type, &a->c.seqlen, &a->c.seqbyval);
}

/*
 * Map each target column to its period or data column (tmap); target rows
 * are formed from the state's values, so the types must agree.
 */
static void
setup_target_map(ApplyCtx *a, FlowDef *flow)
{
	int			i;

	a->tmap = palloc(sizeof(int) * a->tdesc->natts);
	for (i = 0; i < a->tdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(a->tdesc, i);
		int			j;

		a->tmap[i] = TMAP_NONE;
		if (att->attisdropped)
			continue;
		for (j = 0; j < a->kind->nperiods; j++)
			if (strcmp(NameStr(att->attname), a->kind->periods[j]) == 0)
				a->tmap[i] = TMAP_PERIOD(j);
		for (j = 0; j < a->c.ndata && a->tmap[i] == TMAP_NONE; j++)
			if (strcmp(NameStr(att->attname), a->c.dnames[j]) == 0)
				a->tmap[i] = j;

		/* target rows are formed from the state's values: the types must agree */
		if ((a->tmap[i] >= 0 && att->atttypid != a->c.dtypes[a->tmap[i]]) ||
			(TMAP_IS_PERIOD(a->tmap[i]) && att->atttypid != period_type(a, TMAP_PERIOD_OF(a->tmap[i]))))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of target \"%s\" has type %s, but flow \"%s\" writes type %s",
							NameStr(att->attname), get_rel_name(flow->target),
							format_type_be(att->atttypid), flow->name,
							format_type_be(a->tmap[i] >= 0 ? a->c.dtypes[a->tmap[i]] :
										   period_type(a, TMAP_PERIOD_OF(a->tmap[i])))),
					 errhint("Change the column back, or drop the flow and create it again.")));
	}
}

/* Set up column metadata for a flow's target and state. */
static void
apply_setup(ApplyCtx *a, FlowDef *flow)
{
	Relation	trel = table_open(flow->target, AccessShareLock);
	Relation	srel;
	CitusTable	ct;

	a->flow = flow;
	a->kind = storage_kind(flow->scd);
	a->has_ctu = flow->columns_to_update != NULL;
	a->c.ignore_nulls = flow->ignore_nulls || flow->has_inu_include || flow->has_inu_except ||
		a->has_ctu;
	/* without state, the fold sees only the new events: the last must decide */
	a->stateless = !flow->keeps_state;
	if (a->stateless && !a->kind->last_event_decides(&a->c))
		elog(ERROR, "target of flow \"%s\" keeps no hidden state, but the flow needs it", flow->name);
	a->staterel = storage_state_relid(flow->target_id);
	if (!OidIsValid(a->staterel))
		elog(ERROR, "hidden state of flow \"%s\" is missing", flow->name);
	srel = table_open(a->staterel, AccessShareLock);
	a->tdesc = CreateTupleDescCopy(RelationGetDescr(trel));
	a->sdesc = CreateTupleDescCopy(RelationGetDescr(srel));
	a->ttype = RelationGetDescr(trel)->tdtypeid;
	a->stype = RelationGetDescr(srel)->tdtypeid;
	a->tdesc->tdtypeid = a->ttype;
	a->sdesc->tdtypeid = a->stype;
	table_close(trel, AccessShareLock);
	table_close(srel, AccessShareLock);
	a->truncrel = storage_truncates_relid(flow->target_id);
	if (!OidIsValid(a->truncrel))
		a->truncrel = a->staterel;
	a->distributed = tablekind_distributed(flow->target, &ct);
	if (a->distributed || a->truncrel != a->staterel)
	{
		MemoryContext old = MemoryContextSwitchTo(a->cxt);

		if (a->distributed)
		{
			a->tdelrows = tuplestore_begin_heap(false, false, settings_store_mem());
			a->sdelrows = tuplestore_begin_heap(false, false, settings_store_mem());
		}
		/* (also once the target is no longer distributed: a restored dump) */
		a->truncins = tuplestore_begin_heap(false, false, settings_store_mem());
		MemoryContextSwitchTo(old);
	}

	setup_state_columns(a, flow);
	setup_data_columns(a, flow);
	setup_target_map(a, flow);
}

/*
 * Comma-separated list "prefix.col" of the data columns in their order, or
 * of the key columns in the flow's key order (keyidx's: the order of every
 * key tuple descriptor and key array of a run).
 */
static char *
data_list(ApplyCtx *a, const char *prefix, bool only_keys)
{
	StringInfoData buf;
	int			n = only_keys ? a->c.nkeys : a->c.ndata;
	int			k;

	initStringInfo(&buf);
	for (k = 0; k < n; k++)
		appendStringInfo(&buf, "%s%s%s", k ? ", " : "", prefix,
						 quote_identifier(a->c.dnames[only_keys ? a->c.keyidx[k] : k]));
	return buf.data;
}

/*
 * The hash of a key (an array of key-column Datums): of the Datums
 * themselves where keys are equal exactly when their Datums are, else by
 * the key types' hash functions.
 */
static uint32
key_hash(ApplyCtx *a, Datum *vals)
{
	uint32		h = 0;
	int			k;

	for (k = 0; k < a->c.nkeys; k++)
	{
		int			i = a->c.keyidx[k];

		h = (h << 1) | (h >> 31);
		if (a->keyimage)
			h ^= murmurhash32((uint32) vals[k] ^ (uint32) (((uint64) vals[k]) >> 32));
		else
			h ^= DatumGetUInt32(FunctionCall1Coll(&a->keyhashfn[k], a->c.dcolls[i], vals[k]));
	}
	return h;
}

/* Are two keys equal? */
static bool
key_equal(ApplyCtx *a, Datum *v1, Datum *v2)
{
	int			k;

	for (k = 0; k < a->c.nkeys; k++)
		if (a->keyimage ? v1[k] != v2[k] :
			!fold_column_equal(&a->c, a->c.keyidx[k], v1[k], false, v2[k], false))
			return false;
	return true;
}

/*
 * Are two keys equal exactly when their Datums are?  So when every key
 * column is passed by value and its type's default btree operator class
 * is a built-in one whose equality is the fold's and says, as it does for
 * btree deduplication, that equal values are stored alike (integers,
 * dates, timestamps; not float8, whose -0 equals 0).  The keyhash then
 * hashes and compares Datums instead of calling the type's functions.
 */
static bool
keys_by_image(ApplyCtx *a)
{
	int			k;

	for (k = 0; k < a->c.nkeys; k++)
	{
		int			i = a->c.keyidx[k];
		TypeCacheEntry *tc = lookup_type_cache(a->c.dtypes[i],
											   TYPECACHE_EQ_OPR | TYPECACHE_BTREE_OPFAMILY);
		Oid			proc;

		if (!TupleDescAttr(a->sdesc, a->dattno[i])->attbyval || !OidIsValid(tc->btree_opf) ||
			!OidIsValid(tc->eq_opr) ||
			tc->eq_opr != get_opfamily_member(tc->btree_opf, tc->btree_opintype,
											  tc->btree_opintype, BTEqualStrategyNumber))
			return false;
		proc = get_opfamily_proc(tc->btree_opf, tc->btree_opintype, tc->btree_opintype,
								 BTEQUALIMAGE_PROC);
		if (!OidIsValid(proc) || proc >= FirstGenbkiObjectId ||
			!DatumGetBool(OidFunctionCall1Coll(proc, a->c.dcolls[i],
											   ObjectIdGetDatum(tc->btree_opintype))))
			return false;
	}
	return true;
}

/*
 * Prepare to gather the distinct keys of the new events while classifying
 * them, when every key type can be hashed (else touched_keys_join asks SQL).
 */
static void
keys_setup(ApplyCtx *a)
{
	int			k;

	a->keyhashfn = palloc0(sizeof(FmgrInfo) * a->c.nkeys);
	for (k = 0; k < a->c.nkeys; k++)
	{
		TypeCacheEntry *tc = lookup_type_cache(a->c.dtypes[a->c.keyidx[k]],
											   TYPECACHE_HASH_PROC_FINFO);

		if (!OidIsValid(tc->hash_proc_finfo.fn_oid))
			return;
		fmgr_info_copy(&a->keyhashfn[k], &tc->hash_proc_finfo, a->cxt);
	}
	a->keydesc = CreateTemplateTupleDesc(a->c.nkeys);
	for (k = 0; k < a->c.nkeys; k++)
	{
		int			i = a->c.keyidx[k];
		Form_pg_attribute att = TupleDescAttr(a->sdesc, a->dattno[i]);

		TupleDescInitEntry(a->keydesc, k + 1, a->c.dnames[i], att->atttypid, att->atttypmod, 0);
		TupleDescInitEntryCollation(a->keydesc, k + 1, att->attcollation);
	}
	compat_TupleDescFinalize(a->keydesc);
	a->keydesc = BlessTupleDesc(a->keydesc);
	a->keyimage = keys_by_image(a);
	a->keycxt = AllocSetContextCreate(a->cxt, "autocdc touched keys", ALLOCSET_DEFAULT_SIZES);
	a->tupcxt = GenerationContextCreate(a->keycxt, "autocdc touched keys' events",
										ALLOCSET_DEFAULT_SIZES);
	a->keyhash = keyhash_create(a->keycxt, 1024, a);
	a->last_only = a->kind->last_event_decides(&a->c);
	a->inmem = true;
}

/* Note the key of a (non-truncate) event; store it the first time. */
static KeyEntry *
keys_add(ApplyCtx *a, Datum *values, bool *nulls)
{
	Datum		probe[INDEX_MAX_KEYS];
	KeySlot    *slot;
	KeyEntry   *entry;
	bool		found;
	int			k;

	for (k = 0; k < a->c.nkeys; k++)
		probe[k] = values[a->c.keyidx[k]];
	slot = keyhash_insert(a->keyhash, probe, &found);
	if (!found)
	{
		MemoryContext old = MemoryContextSwitchTo(a->tupcxt);

		/* the key's values beside the entry: a probe that matches reads both */
		entry = palloc0(sizeof(KeyEntry) + sizeof(Datum) * a->c.nkeys);
		entry->keyvals = (Datum *) (entry + 1);
		for (k = 0; k < a->c.nkeys; k++)
		{
			Form_pg_attribute att = TupleDescAttr(a->sdesc, a->dattno[a->c.keyidx[k]]);

			entry->keyvals[k] = datumCopy(probe[k], att->attbyval, att->attlen);
		}
		slot->keyvals = entry->keyvals;
		slot->entry = entry;
		MemoryContextSwitchTo(a->keycxt);
		if ((a->nkeys_distinct & (a->nkeys_distinct - 1)) == 0)
			a->entries = a->entries
				? repalloc_huge(a->entries, sizeof(KeyEntry *) * a->nkeys_distinct * 2)
				: palloc(sizeof(KeyEntry *) * 2);
		a->entries[a->nkeys_distinct++] = entry;
		MemoryContextSwitchTo(old);
	}
	return slot->entry;
}

/*
 * Move the events held by the keyhash's entries to the events tuplestore
 * (which spills to disk), for the fold to read them through SQL: the keys
 * outgrew their memory, or the fold must read every key (truncates).
 */
static void
spill_entries(ApplyCtx *a, Tuplestorestate *events)
{
	int64		i;
	int			j;

	for (i = 0; i < a->nkeys_distinct; i++)
	{
		KeyEntry   *entry = a->entries[i];

		for (j = 0; j < entry->nevs; j++)
		{
			tuplestore_puttuple(events, entry->evs[j]);
			heap_freetuple(entry->evs[j]);
		}
		entry->nevs = 0;
		entry->last = NULL;
	}
	a->inmem = false;
}

/*
 * When the touched keys and the events they hold outgrow their share of
 * autocdc.work_mem, give them up: the events go to the events tuplestore
 * (later ones straight there), and SQL finds the distinct keys and sorts
 * the events in, spilling to disk as it needs.
 */
static void
keys_check_memory(ApplyCtx *a, Tuplestorestate *events)
{
	if (MemoryContextMemAllocated(a->keycxt, true) <= settings_keys_mem())
		return;
	elog(DEBUG1, "autocdc: flow \"%s\": " INT64_FORMAT " touched keys outgrew their memory",
		 a->flow->name, a->nkeys_distinct);
	spill_entries(a, events);
	MemoryContextDelete(a->keycxt);
	a->keycxt = NULL;
	a->keyhash = NULL;
	a->entries = NULL;
	a->nkeys_distinct = 0;
	a->keys_outgrew = true;
}

/*
 * Make tup (a copy of it) the last event an SCD 1 key holds.  Rows of fixed
 * width overwrite the previous one where it is: the packed context does not
 * reuse what is freed.
 */
static void
keep_last(ApplyCtx *a, KeyEntry *entry, HeapTuple tup)
{
	Size		size = HEAPTUPLESIZE + tup->t_len;

	if (entry->last == NULL || size > entry->lastsize)
	{
		if (entry->last != NULL)
			pfree(entry->last);
		entry->last = MemoryContextAlloc(a->tupcxt, size);
		entry->lastsize = size;
		entry->evs = &entry->last;
		entry->nevs = entry->maxevs = 1;
	}
	entry->last->t_len = tup->t_len;
	entry->last->t_self = tup->t_self;
	entry->last->t_tableOid = tup->t_tableOid;
	entry->last->t_data = (HeapTupleHeader) ((char *) entry->last + HEAPTUPLESIZE);
	memcpy(entry->last->t_data, tup->t_data, tup->t_len);
}

/* State of the classification of one batch. */
typedef struct ClassifyScan
{
	ApplyCtx   *a;
	Tuplestorestate *events;
	List	   *truncs;
	int64		n;
	int64		nskipped;		/* invalid rows skipped (skip_invalid) */
	StringInfoData skipped;		/* the first INVALID_REPORTED of them */
	Datum	   *values;			/* the row being classified */
	bool	   *nulls;
	bool	   *tnulls;			/* a truncate's nulls */
	int64		ndropped;		/* upserts dropped by an expectation, and
								 * unchanged snapshot rows (only counted) */
} ClassifyScan;

/* full_refresh(skip_invalid => true) names this many skipped rows */
#define INVALID_REPORTED 10

/*
 * The classifying query's rows become hidden-state rows as they are: their
 * types must be the state's (data columns, sequence, lsn, ord, kind).  A
 * source or state column retyped since the run began would otherwise be
 * misread.
 */
static void
check_event_shape(ApplyCtx *a, TupleDesc desc)
{
	int			i;
	int			nexp = list_length(a->flow->run.expectations);
	int			nev = a->c.ndata + 4 + (a->c.has_sys ? 1 : 0);
	int			base = nev + (a->has_ctu ? 1 : 0);
	bool		ok = desc->natts == base + nexp;

	for (i = 0; ok && i < a->c.ndata; i++)
		ok = TupleDescAttr(desc, i)->atttypid == a->c.dtypes[i];
	ok = ok && TupleDescAttr(desc, a->c.ndata)->atttypid == a->flow->seq_type &&
		TupleDescAttr(desc, a->c.ndata + 1)->atttypid == LSNOID &&
		TupleDescAttr(desc, a->c.ndata + 2)->atttypid == INT8OID &&
		TupleDescAttr(desc, a->c.ndata + 3)->atttypid == CHAROID &&
		(!a->c.has_sys || TupleDescAttr(desc, a->c.ndata + 4)->atttypid == a->flow->sysseq_type) &&
		(!a->has_ctu || TupleDescAttr(desc, nev)->atttypid == TEXTARRAYOID);
	for (i = 0; ok && i < nexp; i++)
		ok = TupleDescAttr(desc, base + i)->atttypid == BOOLOID;
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("flow \"%s\": the columns of its source no longer match its hidden state %s",
						a->flow->name, qualified_relname(a->staterel)),
				 errhint("Run SELECT autocdc.full_refresh(%s), or drop the flow and create it again.",
						 quote_literal_cstr(a->flow->name))));
}

/*
 * A row that cannot become an event (a null sequence, a null key column,
 * or a list of columns to update that is null or names another column): it
 * fails the run, naming the commit to pass with skip_events, or
 * for a row read under a snapshot (which has no commit) the way through a
 * refresh; under full_refresh(skip_invalid => true) it is counted as
 * skipped and reported when the refresh ends.
 */
static void
invalid_event(ClassifyScan *cs, XLogRecPtr lsn, int64 ord, const char *what, bool seq_hint,
			  int code)
{
	ApplyCtx   *a = cs->a;
	FlowDef    *f = a->flow;
	char	   *key = fold_key_text(&a->c, cs->values, cs->nulls);

	if (f->run.skip_invalid)
	{
		cs->nskipped++;
		if (cs->nskipped <= INVALID_REPORTED)
		{
			if (cs->skipped.len > 0)
				appendStringInfoString(&cs->skipped, "; ");
			if (ORD_IS_SNAPSHOT(ord))
				appendStringInfo(&cs->skipped, "%s: %s, read from the table", key, what);
			else
				appendStringInfo(&cs->skipped, "%s: %s, committed at LSN " COMPAT_LSN_FORMAT,
								 key, what, LSN_FORMAT_ARGS(lsn));
		}
		return;
	}
	if (ORD_IS_SNAPSHOT(ord))
		ereport(ERROR,
				(errcode(code),
				 errmsg("flow \"%s\": row with key %s of source \"%s\" has %s",
						f->name, key, get_rel_name(f->source), what),
				 errdetail("The row was read from the table (a first read or a full refresh), so it has no commit position that skip_events could pass."),
				 errhint("Correct or delete the row in the source, or skip such rows with SELECT autocdc.full_refresh(%s, skip_invalid => true).",
						 quote_literal_cstr(f->name))));
	failures_note_lsn(lsn);
	ereport(ERROR,
			(errcode(code),
			 errmsg("flow \"%s\": event with key %s has %s", f->name, key, what),
			 errdetail("The event's source transaction committed at LSN " COMPAT_LSN_FORMAT ".",
					   LSN_FORMAT_ARGS(lsn)),
			 !seq_hint ?
			 errhint("Pass it with SELECT autocdc.skip_events(%s, '" COMPAT_LSN_FORMAT "').",
					 quote_literal_cstr(f->name), LSN_FORMAT_ARGS(lsn)) :
			 errhint("Pass it with SELECT autocdc.skip_events(%s, '" COMPAT_LSN_FORMAT "'), or recreate the flow with a sequence that is never null.",
					 quote_literal_cstr(f->name), LSN_FORMAT_ARGS(lsn))));
}

/*
 * Store a classified upsert or delete in its key's keyhash entry: for SCD 1
 * without ignore_null_updates only the key's last event, otherwise all of
 * them (the batch fits in work_mem while the keyhash lasts).
 */
static void
keyhash_event(ClassifyScan *cs, Datum *values, bool *nulls, XLogRecPtr lsn,
			  char kind, Datum sysseq, Datum wlist)
{
	ApplyCtx   *a = cs->a;
	KeyEntry   *entry = keys_add(a, values, nulls);
	MemoryContext old;
	HeapTuple	ev,
				formed;
	bool		isnull;

	/* rows come in arrival order: a later row with an equal sequence wins */
	if (a->last_only)
	{
		if (entry->nevs == 0 || fold_seq_compare(&a->c, values[a->c.ndata], entry->seq) >= 0)
		{
			ev = form_state_tuple(a, values, nulls, wlist, values[a->c.ndata], lsn,
								  DatumGetInt64(values[a->c.ndata + 2]), kind, sysseq);
			keep_last(a, entry, ev);
			heap_freetuple(ev);
			entry->seq = a->c.seqbyval ? values[a->c.ndata] :
				heap_getattr(entry->last, a->bk[0] + 1, a->sdesc, &isnull);
		}
		keys_check_memory(a, cs->events);
		return;
	}
	/* while the keyhash lasts, its entries hold the events */
	Assert(a->inmem);
	/* formed outside the packed context, which never reuses what is freed */
	formed = form_state_tuple(a, values, nulls, wlist, values[a->c.ndata], lsn,
							  DatumGetInt64(values[a->c.ndata + 2]), kind, sysseq);
	old = MemoryContextSwitchTo(a->tupcxt);
	ev = heap_copytuple(formed);
	heap_freetuple(formed);
	MemoryContextSwitchTo(a->keycxt);
	if (entry->nevs >= entry->maxevs)
	{
		entry->maxevs = entry->maxevs ? entry->maxevs * 2 : 2;
		entry->evs = entry->evs ? repalloc(entry->evs, sizeof(HeapTuple) * entry->maxevs)
			: palloc(sizeof(HeapTuple) * entry->maxevs);
	}
	entry->evs[entry->nevs++] = ev;
	MemoryContextSwitchTo(old);
	keys_check_memory(a, cs->events);
}

/*
 * The data columns a list of columns to update (text[]) names: per data
 * column, whether it is named (keys always; other names are ignored).
 */
static bool *
written_columns(ApplyCtx *a, Datum list)
{
	bool	   *w = palloc0(sizeof(bool) * a->c.ndata);
	Datum	   *elems;
	bool	   *enulls;
	int			n,
				i,
				j;

	deconstruct_array(DatumGetArrayTypeP(list), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &enulls, &n);
	for (j = 0; j < a->c.ndata; j++)
		w[j] = a->c.is_key[j];
	for (i = 0; i < n; i++)
		for (j = 0; j < a->c.ndata && !enulls[i]; j++)
			if (strcmp(TextDatumGetCString(elems[i]), a->c.dnames[j]) == 0)
				w[j] = true;
	return w;
}

/*
 * An upsert's list of the columns it writes (column idx of the classified
 * row): it must not be null and must name only selected non-key columns,
 * else the row is invalid (false).  *wlist: the list to store.
 */
static bool
check_written(ClassifyScan *cs, Datum *values, bool *nulls, int idx, XLogRecPtr lsn,
			  Datum *wlist)
{
	ApplyCtx   *a = cs->a;
	int64		ord = DatumGetInt64(values[a->c.ndata + 2]);
	Datum	   *elems;
	bool	   *enulls;
	int			n,
				i,
				j;

	if (nulls[idx])
	{
		invalid_event(cs, lsn, ord, psprintf("a null list of columns to update (\"%s\")",
										   a->flow->columns_to_update), false,
					  ERRCODE_NULL_VALUE_NOT_ALLOWED);
		return false;
	}
	deconstruct_array(DatumGetArrayTypeP(values[idx]), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &enulls, &n);
	for (i = 0; i < n; i++)
	{
		char	   *name = enulls[i] ? NULL : TextDatumGetCString(elems[i]);
		bool		ok = false;

		for (j = 0; j < a->c.ndata && name && !ok; j++)
			ok = strcmp(name, a->c.dnames[j]) == 0 && a->c.selected[j] && !a->c.is_key[j];
		if (!ok)
		{
			invalid_event(cs, lsn, ord,
						  name ? psprintf("a list of columns to update (\"%s\") naming \"%s\", which is not a selected non-key column",
										  a->flow->columns_to_update, name) :
						  psprintf("a null name in its list of columns to update (\"%s\")",
								   a->flow->columns_to_update),
						  false, ERRCODE_INVALID_PARAMETER_VALUE);
			return false;
		}
	}
	*wlist = values[idx];
	return true;
}

/* what the expectations make of an upsert */
typedef enum ExpectOutcome
{
	EXPECT_OUT_KEPT,			/* applied (warn counts it) */
	EXPECT_OUT_DROPPED,			/* an expectation of action drop drops it */
	EXPECT_OUT_SKIPPED			/* it fails one, skipped by skip_invalid */
} ExpectOutcome;

/*
 * Count an upsert against each expectation of the target (independently of
 * one another: NULL passes), fail the run if it violates one whose action
 * is fail (unless skip_invalid skips it), and return what becomes of it.
 * The expectations' values follow the classified row's own columns.
 */
static ExpectOutcome
check_expectations(ClassifyScan *cs, Datum *values, bool *nulls, int base, XLogRecPtr lsn,
				   int64 ord)
{
	FlowDef    *f = cs->a->flow;
	Expectation *failed = NULL;
	bool		drop = false;
	ListCell   *lc;

	foreach(lc, f->run.expectations)
	{
		Expectation *e = lfirst(lc);
		int			col = base + foreach_current_index(lc);

		if (nulls[col] || DatumGetBool(values[col]))
		{
			e->passed++;
			continue;
		}
		e->failed++;
		if (e->action == EXPECT_DROP)
			drop = true;
		else if (e->action == EXPECT_FAIL && failed == NULL)
			failed = e;
	}
	if (failed == NULL)
		return drop ? EXPECT_OUT_DROPPED : EXPECT_OUT_KEPT;
	if (f->run.skip_invalid)
	{
		/* full_refresh(skip_invalid => true): skipped and reported */
		invalid_event(cs, lsn, ord, psprintf("a violation of expectation \"%s\"", failed->name),
					  false, ERRCODE_CHECK_VIOLATION);
		return EXPECT_OUT_SKIPPED;
	}
	if (f->kind == FLOW_SNAPSHOT)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("flow \"%s\": snapshot row with key %s violates expectation \"%s\" of target \"%s\"",
						f->name, fold_key_text(&cs->a->c, values, nulls), failed->name,
						get_rel_name(f->target)),
				 errdetail("The row was read from a snapshot, so it has no commit position that skip_events could pass."),
				 errhint("Correct or delete the row in the snapshot, or change the expectation's action with autocdc.set_expectation.")));
	if (ORD_IS_SNAPSHOT(ord))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("flow \"%s\": row with key %s violates expectation \"%s\" of target \"%s\"",
						f->name, fold_key_text(&cs->a->c, values, nulls), failed->name,
						get_rel_name(f->target)),
				 errdetail("The row was read from the table (a first read or a full refresh), so it has no commit position that skip_events could pass."),
				 errhint("Correct or delete the row in the source, skip such rows with SELECT autocdc.full_refresh(%s, skip_invalid => true), or change the expectation's action with autocdc.set_expectation.",
						 quote_literal_cstr(f->name))));
	failures_note_lsn(lsn);
	ereport(ERROR,
			(errcode(ERRCODE_CHECK_VIOLATION),
			 errmsg("flow \"%s\": event with key %s violates expectation \"%s\" of target \"%s\"",
					f->name, fold_key_text(&cs->a->c, values, nulls), failed->name,
					get_rel_name(f->target)),
			 errdetail("The event's source transaction committed at LSN " COMPAT_LSN_FORMAT ".",
					   LSN_FORMAT_ARGS(lsn)),
			 errhint("Pass it with SELECT autocdc.skip_events(%s, '" COMPAT_LSN_FORMAT "'), or change the expectation's action with autocdc.set_expectation.",
					 quote_literal_cstr(f->name), LSN_FORMAT_ARGS(lsn))));
	return EXPECT_OUT_KEPT;		/* keep the compiler quiet */
}

/* Validate one classified row and store it as an event. */
static void
classify_row(Datum *values, bool *nulls, TupleDesc desc, void *arg)
{
	ClassifyScan *cs = arg;
	ApplyCtx   *a = cs->a;
	char		kind;
	XLogRecPtr	lsn;
	int			i;
	Datum		sysseq = (Datum) 0;
	Datum		wlist = (Datum) 0;

	if (cs->n == 0)
		check_event_shape(a, desc);
	cs->values = values;
	cs->nulls = nulls;
	kind = DatumGetChar(values[a->c.ndata + 3]);
	lsn = DatumGetLSN(values[a->c.ndata + 1]);
	cs->n++;
	if (fold_seq_is_null(&a->c, values[a->c.ndata], nulls[a->c.ndata]))
	{
		invalid_event(cs, lsn, DatumGetInt64(values[a->c.ndata + 2]), "a null sequence", true,
					  ERRCODE_NULL_VALUE_NOT_ALLOWED);
		return;
	}
	if (a->c.has_sys)
	{
		sysseq = values[a->c.ndata + 4];
		if (fold_sys_is_null(&a->c, sysseq, nulls[a->c.ndata + 4]))
		{
			invalid_event(cs, lsn, DatumGetInt64(values[a->c.ndata + 2]), "a null system sequence",
						  true, ERRCODE_NULL_VALUE_NOT_ALLOWED);
			return;
		}
	}
	if (kind == EVENT_TRUNCATE)
	{
		Ev		   *t = palloc0(sizeof(Ev));

		/* the state row of a truncate has no data: the executor's nulls stay as they are */
		memcpy(cs->tnulls, nulls, sizeof(bool) * desc->natts);
		nulls = cs->tnulls;
		for (i = 0; i < a->c.ndata; i++)
			nulls[i] = true;
		t->src = EV_TRUNCATE;
		t->seq = datumCopy(values[a->c.ndata], a->c.seqbyval, a->c.seqlen);
		t->lsn = lsn;
		t->ord = DatumGetInt64(values[a->c.ndata + 2]);
		t->kind = EVENT_TRUNCATE;
		if (a->c.has_sys)
			t->sysseq = datumCopy(sysseq, a->c.sysbyval, a->c.syslen);
		cs->truncs = lappend(cs->truncs, t);
	}
	else
		for (i = 0; i < a->c.nkeys; i++)
			if (nulls[a->c.keyidx[i]])
			{
				invalid_event(cs, lsn, DatumGetInt64(values[a->c.ndata + 2]), "a null key column",
							  false, ERRCODE_NULL_VALUE_NOT_ALLOWED);
				return;
			}
	if ((kind == EVENT_UPSERT || kind == EVENT_UNCHANGED) && a->flow->run.expectations != NIL)
	{
		ExpectOutcome out = check_expectations(cs, values, nulls,
											   a->c.ndata + 4 + (a->c.has_sys ? 1 : 0) +
											   (a->has_ctu ? 1 : 0), lsn,
											   DatumGetInt64(values[a->c.ndata + 2]));

		if (out == EXPECT_OUT_DROPPED || (kind == EVENT_UNCHANGED && out == EXPECT_OUT_KEPT))
			cs->ndropped++;
		if (out == EXPECT_OUT_DROPPED && kind == EVENT_UPSERT && a->flow->run.spare_dropped)
		{
			/* its key's rows stay as they are: only the key is kept */
			memcpy(cs->tnulls, nulls, sizeof(bool) * desc->natts);
			for (i = 0; i < a->c.ndata; i++)
				cs->tnulls[i] = nulls[i] || !a->c.is_key[i];
			put_state_row(a, cs->events, values, cs->tnulls, (Datum) 0, values[a->c.ndata], lsn,
						  DatumGetInt64(values[a->c.ndata + 2]), EVENT_SPARE, sysseq);
		}
		if (out != EXPECT_OUT_KEPT || kind == EVENT_UNCHANGED)
			return;
	}
	if (kind == EVENT_UPSERT && a->has_ctu &&
		!check_written(cs, values, nulls, a->c.ndata + 4 + (a->c.has_sys ? 1 : 0), lsn, &wlist))
		return;
	if (kind != EVENT_TRUNCATE && a->keyhash != NULL)
	{
		keyhash_event(cs, values, nulls, lsn, kind, sysseq, wlist);
		return;
	}
	put_state_row(a, cs->events, values, nulls, wlist, values[a->c.ndata], lsn,
				  DatumGetInt64(values[a->c.ndata + 2]), kind, sysseq);
}

/*
 * The cast of batch column name to the type its target and hidden-state
 * column store it as, when that is its type with domains flattened: a
 * cast from a domain to its base type runs no code of the domain's.  ""
 * otherwise (a column of another type fails check_event_shape).
 */
static const char *
flat_cast(TupleDesc bdesc, const char *name, Oid stored)
{
	int			i;

	for (i = 0; i < bdesc->natts; i++)
	{
		Oid			typid = TupleDescAttr(bdesc, i)->atttypid;

		if (strcmp(NameStr(TupleDescAttr(bdesc, i)->attname), name) == 0 &&
			typid != stored && type_stored_as(typid, stored))
			return psprintf("::%s", format_type_be_qualified(stored));
	}
	return "";
}

/* The query that classifies the captured batch (BATCH_SOURCE). */
static char *
classify_sql(ApplyCtx *a)
{
	FlowDef    *f = a->flow;
	TupleDesc	bdesc = batch_desc(BATCH_SOURCE);
	StringInfoData sql;
	int			i;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (i = 0; i < a->c.ndata; i++)
	{
		if (a->c.selected[i])
		{
			const char *pseudo = f->srckind->pseudo_columns ?
				pseudo_source_of(f->col_include, f->col_from, a->c.dnames[i]) : NULL;

			/* a column taken from a pseudo-column, or the source's */
			const char *col = pseudo ? pseudo : a->c.dnames[i];

			appendStringInfo(&sql, "s.%s%s, ", quote_identifier(col),
							 flat_cast(bdesc, col, a->c.dtypes[i]));
		}
		else
			appendStringInfo(&sql, "NULL::%s, ", format_type_be_qualified(a->c.dtypes[i]));
	}
	appendStringInfo(&sql, "(%s)::%s, s.__autocdc_lsn, s.__autocdc_ord, "
					 "(CASE WHEN (%s) THEN 't' WHEN (%s) THEN 'd' ELSE 'u' END)::pg_catalog.\"char\"",
					 f->sequence_by, format_type_be_qualified(f->seq_type),
					 f->truncates ? f->truncates : "false",
					 f->deletes ? f->deletes : "false");
	if (a->c.has_sys)
		appendStringInfo(&sql, ", (%s)::%s", f->system_sequence_by,
						 format_type_be_qualified(f->sysseq_type));
	if (a->has_ctu)
		appendStringInfo(&sql, ", s.%s::pg_catalog.text[]", quote_identifier(f->columns_to_update));
	appendStringInfo(&sql, " FROM autocdc_internal._batch(NULL::%s) AS s(",
					 format_type_be_qualified(get_rel_type_id(f->source)));
	/* the batch's columns (run.c: new_batch) */
	for (i = 0; i < bdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(bdesc, i);

		appendStringInfo(&sql, "%s%s %s", i ? ", " : "", quote_identifier(NameStr(att->attname)),
						 format_type_with_typemod(att->atttypid, att->atttypmod));
		if (OidIsValid(att->attcollation))
			appendStringInfo(&sql, " COLLATE %s", generate_collation_name(att->attcollation));
	}
	appendStringInfoChar(&sql, ')');
	/* a changes() TRUNCATE that the flow does not apply as one is no event */
	if (f->srckind->pseudo_columns)
		appendStringInfo(&sql, " WHERE s._change_type OPERATOR(pg_catalog.<>) 'truncate' OR (%s)",
						 f->truncates ? f->truncates : "false");
	return sql.data;
}

/*
 * The classifying query with, after its own columns, the value of each of
 * the target's expectations over the event's data columns (named as the
 * target's); the query itself when the target has none.
 */
static char *
expect_sql(ApplyCtx *a, const char *sql)
{
	StringInfoData buf;
	ListCell   *lc;
	int			i;

	if (a->flow->run.expectations == NIL)
		return (char *) sql;
	initStringInfo(&buf);
	appendStringInfoString(&buf, "SELECT e.*");
	foreach(lc, a->flow->run.expectations)
		appendStringInfo(&buf, ", (%s)", ((Expectation *) lfirst(lc))->condition);
	appendStringInfo(&buf, " FROM (%s) AS e(", sql);
	for (i = 0; i < a->c.ndata; i++)
		appendStringInfo(&buf, "%s%s", i ? ", " : "", quote_identifier(a->c.dnames[i]));
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/*
 * A warning for each expectation of action warn that upserts of this run
 * failed (they were applied all the same).
 */
static void
warn_expectations(FlowDef *flow)
{
	ListCell   *lc;

	foreach(lc, flow->run.expectations)
	{
		Expectation *e = lfirst(lc);

		if (e->action == EXPECT_WARN && e->failed > 0)
			ereport(WARNING,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg_plural("flow \"%s\": " INT64_FORMAT " event violated expectation \"%s\" of target \"%s\"",
								   "flow \"%s\": " INT64_FORMAT " events violated expectation \"%s\" of target \"%s\"",
								   e->failed, flow->name, e->failed, e->name,
								   get_rel_name(flow->target)),
					 errdetail("They were applied; autocdc.expectations and autocdc.flow_runs count them.")));
	}
}

/*
 * Evaluate the flow's expressions over the batch (or run events_sql, whose
 * rows are classified already; planned without hash joins if no_hash),
 * validate, and store the events (state row type) in a tuplestore.
 * Returns the number of events.
 */
static int64
classify(ApplyCtx *a, Tuplestorestate *events, List **truncs, const char *events_sql,
		 bool no_hash)
{
	ClassifyScan cs;
	int			level = 0;

	cs.a = a;
	cs.events = events;
	cs.truncs = NIL;
	cs.n = 0;
	cs.values = NULL;
	cs.nulls = NULL;
	cs.tnulls = palloc(sizeof(bool) * (a->c.ndata + 6 + list_length(a->flow->run.expectations)));
	cs.ndropped = 0;

	cs.nskipped = 0;
	initStringInfo(&cs.skipped);

	if (no_hash)
	{
		level = NewGUCNestLevel();
		(void) set_config_option("enable_hashjoin", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	spi_foreach_values(expect_sql(a, events_sql ? events_sql : classify_sql(a)), false,
					   classify_row, &cs);
	if (no_hash)
		AtEOXact_GUC(true, level);
	*truncs = cs.truncs;
	if (cs.nskipped > 0)
	{
		a->m->num_skipped += cs.nskipped;
		ereport(WARNING,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg_plural("flow \"%s\": skipped " INT64_FORMAT " invalid row",
							   "flow \"%s\": skipped " INT64_FORMAT " invalid rows",
							   cs.nskipped, a->flow->name, cs.nskipped),
				 errdetail("%s%s", cs.skipped.data,
						   cs.nskipped > INVALID_REPORTED ? "; ..." : ""),
				 errhint("They are counted in num_skipped_events; rows still in the source fail its next refresh again unless they are corrected or deleted.")));
	}
	warn_expectations(a->flow);
	return cs.n - cs.nskipped - cs.ndropped;
}

/* Load the truncates kept in the hidden state. */
static void
load_state_truncates(ApplyCtx *a, List **truncs)
{
	char	   *sql = psprintf("SELECT __autocdc_seq, __autocdc_lsn, __autocdc_ord%s FROM %s "
							   "WHERE __autocdc_kind OPERATOR(pg_catalog.=) 't'",
							   a->c.has_sys ? ", " STATE_SYSSEQ_NAME : "",
							   qualified_relname(a->truncrel));
	uint64		i;

	if (a->stateless)
		return;
	if (SPI_execute(sql, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read truncates");
	for (i = 0; i < SPI_processed; i++)
	{
		Ev		   *t = palloc0(sizeof(Ev));
		bool		isnull;

		t->src = EV_TRUNCATE;
		t->seq = datumCopy(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull),
						   a->c.seqbyval, a->c.seqlen);
		t->lsn = DatumGetLSN(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
		t->ord = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3, &isnull));
		t->kind = EVENT_TRUNCATE;
		if (a->c.has_sys)
			t->sysseq = datumCopy(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 4, &isnull),
								  a->c.sysbyval, a->c.syslen);
		*truncs = lappend(*truncs, t);
	}
}

/*
 * Form a state row from data values (in data order) and bookkeeping; wlist:
 * the columns an upsert writes (text[]), or 0.
 */
static HeapTuple
form_state_tuple(ApplyCtx *a, Datum *dvals, bool *dnulls, Datum wlist,
				 Datum seq, XLogRecPtr lsn, int64 ord, char kind, Datum sysseq)
{
	Datum	   *values = a->formvals;
	bool	   *nulls = a->formnulls;
	int			i;

	if (values == NULL)
	{
		values = a->formvals = MemoryContextAlloc(a->cxt, sizeof(Datum) * a->sdesc->natts);
		nulls = a->formnulls = MemoryContextAlloc(a->cxt, sizeof(bool) * a->sdesc->natts);
	}
	for (i = 0; i < a->sdesc->natts; i++)
	{
		values[i] = (Datum) 0;
		nulls[i] = true;
	}
	for (i = 0; i < a->c.ndata; i++)
	{
		values[a->dattno[i]] = dvals[i];
		nulls[a->dattno[i]] = dnulls[i];
	}
	values[a->bk[0]] = seq;
	values[a->bk[1]] = LSNGetDatum(lsn);
	values[a->bk[2]] = Int64GetDatum(ord);
	values[a->bk[3]] = CharGetDatum(kind);
	values[a->bk[4]] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	for (i = 0; i < 5; i++)
		nulls[a->bk[i]] = false;
	if (a->bksys >= 0)
	{
		values[a->bksys] = sysseq;
		nulls[a->bksys] = !a->c.has_sys;
	}
	if (a->bkwritten >= 0)
	{
		values[a->bkwritten] = wlist;
		nulls[a->bkwritten] = wlist == (Datum) 0;
	}
	return heap_form_tuple(a->sdesc, values, nulls);
}

/* Form a state row (data values in data order) into a tuplestore. */
static void
put_state_row(ApplyCtx *a, Tuplestorestate *ts, Datum *dvals, bool *dnulls, Datum wlist,
			  Datum seq, XLogRecPtr lsn, int64 ord, char kind, Datum sysseq)
{
	HeapTuple	tup = form_state_tuple(a, dvals, dnulls, wlist, seq, lsn, ord, kind, sysseq);

	tuplestore_puttuple(ts, tup);
	heap_freetuple(tup);
}

/*
 * Store an event row into the hidden state's insert list (nothing for a
 * target without per-key state: the next event of a key is later anyway).
 */
static void
keep_event(ApplyCtx *a, Ev *e)
{
	if (a->stateless)
		return;
	if (a->truncrel != a->staterel && e->kind == EVENT_TRUNCATE)
	{
		/* kept apart: a distributed table holds no row without a key */
		put_state_row(a, a->truncins, e->vals, e->nulls, e->wlist, e->seq, e->lsn, e->ord,
					  e->kind, e->sysseq);
		a->ntruncins++;
		return;
	}
	if (e->tup && !a->distributed)
	{
		/* the entry's tuple itself, inserted directly (insert_state_rows) */
		if (a->nsinstups == a->maxsinstups)
		{
			a->maxsinstups = Max(1024, a->maxsinstups * 2);
			a->sinstups = a->sinstups
				? repalloc_huge(a->sinstups, sizeof(HeapTuple) * a->maxsinstups)
				: MemoryContextAllocHuge(a->cxt, sizeof(HeapTuple) * a->maxsinstups);
		}
		a->sinstups[a->nsinstups++] = e->tup;
		e->tupkept = true;
	}
	else if (e->tup)
		tuplestore_puttuple(a->sins, e->tup);
	else
		put_state_row(a, a->sins, e->vals, e->nulls, e->wlist, e->seq, e->lsn, e->ord, e->kind,
					  e->sysseq);
	a->nsins++;
}

/* Form a target row from data values and periods into a tuplestore. */
static void
put_target_row(ApplyCtx *a, Tuplestorestate *ts, Datum *vals, bool *isnull, Datum *period,
			   bool *periodnull)
{
	Datum	   *values = a->putvals;
	bool	   *nulls = a->putnulls;
	int			i;

	if (values == NULL)
	{
		values = a->putvals = MemoryContextAlloc(a->cxt, sizeof(Datum) * a->tdesc->natts);
		nulls = a->putnulls = MemoryContextAlloc(a->cxt, sizeof(bool) * a->tdesc->natts);
	}
	for (i = 0; i < a->tdesc->natts; i++)
	{
		int			m = a->tmap[i];

		values[i] = (Datum) 0;
		nulls[i] = true;
		if (m >= 0)
		{
			values[i] = vals[m];
			nulls[i] = isnull[m];
		}
		else if (TMAP_IS_PERIOD(m))
		{
			values[i] = period[TMAP_PERIOD_OF(m)];
			nulls[i] = periodnull[TMAP_PERIOD_OF(m)];
		}
	}
	tuplestore_putvalues(ts, a->tdesc, values, nulls);
}

/* Queue a target row, noting its columns that are null. */
static void
emit_target_row(ApplyCtx *a, OutRow *o)
{
	int			i;

	put_target_row(a, a->tins, o->vals, o->nulls, o->period, o->periodnull);
	a->ntins++;
	if (a->tins_null == NULL)
		a->tins_null = MemoryContextAllocZero(a->cxt, sizeof(bool) * a->tdesc->natts);
	for (i = 0; i < a->tdesc->natts; i++)
		a->tins_null[i] |= a->putnulls[i];
}

/*
 * Note an old target row to delete: its row id in the table that holds
 * it, or for a distributed target (whose row ids name rows of each shard)
 * its key and periods.
 */
static void
forget_target_row(ApplyCtx *a, Ev *old)
{
	if (!a->distributed)
	{
		push_row(a->cxt, &a->tdel, &a->ntdel, &a->maxtdel, old);
		return;
	}
	put_target_row(a, a->tdelrows, old->vals, old->nulls, old->period, old->periodnull);
	a->ntdelrows++;
}

/* Note a hidden-state event to delete: as forget_target_row, by key and arrival. */
static void
forget_state_row(ApplyCtx *a, Ev *e)
{
	if (!a->distributed)
	{
		push_row(a->cxt, &a->sdel, &a->nsdel, &a->maxsdel, e);
		return;
	}
	put_state_row(a, a->sdelrows, e->vals, e->nulls, e->wlist, e->seq, e->lsn, e->ord, e->kind,
				  e->sysseq);
	a->nsdelrows++;
}

/*
 * Does an old target row hold exactly the fold's row?  With same_image,
 * values must be identical (numeric 1.0 and 1.00 are equal but not the
 * same: the target must show the upsert's own values).
 */
static bool
row_equal(ApplyCtx *a, Ev *old, OutRow *o, bool same_image)
{
	int			i;

	for (i = 0; i < a->c.ndata; i++)
	{
		Form_pg_attribute att = TupleDescAttr(a->sdesc, a->dattno[i]);

		if (!fold_column_equal(&a->c, i, old->vals[i], old->nulls[i], o->vals[i], o->nulls[i]))
			return false;
		if (same_image && !old->nulls[i] &&
			!datum_image_eq(old->vals[i], o->vals[i], att->attbyval, att->attlen))
			return false;
	}
	for (i = 0; i < a->kind->nperiods; i++)
		if (!fold_period_equal(&a->c, i, old->period[i], old->periodnull[i],
							   o->period[i], o->periodnull[i]))
			return false;
	return true;
}

/* Does spare event s (EVENT_SPARE) spare truncate t of its snapshot? */
static bool
spares(ApplyCtx *a, Ev *s, Ev *t)
{
	return s->lsn == t->lsn && fold_seq_compare(&a->c, s->seq, t->seq) == 0;
}

/*
 * Keep the new spare events among a key's events (evs, n) that spare a
 * truncate of their snapshot (one into a target change flows write), for
 * this fold and the runs to come; returns whether one spares none (a first
 * snapshot into a table holding rows): then the key is left as it is.
 */
static bool
key_left_alone(ApplyCtx *a, Ev **evs, int n)
{
	bool		alone = false;
	int			i,
				t;

	for (i = 0; i < n; i++)
	{
		if (evs[i]->kind != EVENT_SPARE || evs[i]->src != EV_NEW)
			continue;
		for (t = 0; t < a->ntruncs && !spares(a, evs[i], a->truncs[t]); t++)
			;
		if (t < a->ntruncs)
			keep_event(a, evs[i]);
		else
			alone = true;
	}
	return alone;
}

/* Is truncate t spared by one of the key's spare events (evs, n)? */
static bool
truncate_spared(ApplyCtx *a, Ev **evs, int n, Ev *t)
{
	int			i;

	for (i = 0; i < n; i++)
		if (evs[i]->kind == EVENT_SPARE && spares(a, evs[i], t))
			return true;
	return false;
}

/*
 * Fold one key: evs holds its target rows (EV_TARGET, first) and its events
 * sorted by (sequence, arrival); truncates are merged in here, but for those
 * its spare events spare (which stay in the hidden state, never folded).
 * The storage kind computes the key's rows; what is written follows from
 * comparing them with the target's by row identity, and the hidden state
 * keeps what the kind says.
 */
static void
fold_key(ApplyCtx *a, Ev **evs, int nevs)
{
	int			ntarget = 0,
				n = 0,
				i,
				j,
				t = 0;
	Ev		  **seq;
	OutRow	   *out;
	int			nout;
	bool	   *matched;
	Ev		   *last;

	while (ntarget < nevs && evs[ntarget]->src == EV_TARGET)
		ntarget++;

	/* a row of a first snapshot an expectation dropped: leave the key */
	if (key_left_alone(a, evs + ntarget, nevs - ntarget))
		return;

	/* merge the key's events with the truncates */
	seq = palloc(sizeof(Ev *) * (nevs - ntarget + a->ntruncs + 1));
	i = ntarget;
	while (i < nevs || t < a->ntruncs)
	{
		if (i < nevs && evs[i]->kind == EVENT_SPARE)
			i++;
		else if (t >= a->ntruncs ||
				 (i < nevs && fold_event_compare(&a->c, evs[i], a->truncs[t]) <= 0))
			seq[n++] = evs[i++];
		else if (truncate_spared(a, evs + ntarget, nevs - ntarget, a->truncs[t]))
			t++;
		else
		{
			Ev		   *copy = palloc(sizeof(Ev));

			*copy = *a->truncs[t++];
			seq[n++] = copy;
		}
	}

	/* ties: of events with equal sequence only the last-arriving exists */
	fold_mark_ties(&a->c, seq, n);

	out = NULL;
	nout = a->kind->fold(&a->c, seq, n, &out, &last);

	/* hidden state: what to keep, what to forget */
	for (i = 0; i < n; i++)
	{
		Ev		   *e = seq[i];
		bool		keep;

		if (e->src == EV_TRUNCATE)
			continue;
		keep = !e->dead && a->kind->keeps(&a->c, e, last);
		if (keep && e->src == EV_NEW)
			keep_event(a, e);
		else if (!keep && e->src == EV_STATE)
			forget_state_row(a, e);
	}

	/* target: compare by row identity */
	matched = palloc0(sizeof(bool) * (nout + 1));
	for (i = 0; i < ntarget; i++)
	{
		Ev		   *old = evs[i];
		int			found = -1;

		for (j = 0; j < nout && found < 0; j++)
			if (!matched[j] && a->kind->same_identity(&a->c, old, &out[j]))
				found = j;
		if (found >= 0)
		{
			matched[found] = true;
			if (row_equal(a, old, &out[found], true))
				continue;
			/* a value written differently but equal counts as unchanged */
			if (!row_equal(a, old, &out[found], false))
				a->m->num_upserted++;
			forget_target_row(a, old);
			emit_target_row(a, &out[found]);
		}
		else
		{
			a->m->num_deleted++;
			forget_target_row(a, old);
		}
	}
	for (j = 0; j < nout; j++)
		if (!matched[j])
		{
			a->m->num_upserted++;
			emit_target_row(a, &out[j]);
		}
}

/* Read one row of the merged stream into an Ev (in the group context). */
static Ev *
read_row(ApplyCtx *a, HeapTuple tup, TupleDesc desc)
{
	Ev		   *e = palloc0(sizeof(Ev));
	int			natts = desc->natts;
	Datum	   *values = palloc(sizeof(Datum) * natts);
	bool	   *nulls = palloc(sizeof(bool) * natts);
	int			base = STREAM_LEAD;
	int			i;

	heap_deform_tuple(tup, desc, values, nulls);
	e->src = DatumGetInt32(values[0]);
	if (!nulls[1])
		e->tid = *DatumGetItemPointer(values[1]);
	if (!nulls[2])
		e->rel = DatumGetObjectId(values[2]);
	e->vals = values + base;
	e->nulls = nulls + base;
	base += a->c.ndata;
	e->seq = values[base + EVENT_SEQ];
	e->seqnull = nulls[base + EVENT_SEQ];
	if (!nulls[base + EVENT_LSN])
		e->lsn = DatumGetLSN(values[base + EVENT_LSN]);
	if (!nulls[base + EVENT_ORD])
		e->ord = DatumGetInt64(values[base + EVENT_ORD]);
	if (!nulls[base + EVENT_KIND])
		e->kind = DatumGetChar(values[base + EVENT_KIND]);
	for (i = 0; i < a->kind->nperiods; i++)
	{
		e->period[i] = values[base + EVENT_NEXTRA + i];
		e->periodnull[i] = nulls[base + EVENT_NEXTRA + i];
	}
	if (a->c.has_sys)
		e->sysseq = values[base + EVENT_NEXTRA + a->kind->nperiods];
	if (a->bkwritten >= 0 && !nulls[natts - 2])
	{
		/* the columns an upsert writes come last before __grp */
		e->wlist = values[natts - 2];
		e->written = written_columns(a, e->wlist);
	}
	return e;
}

/* Where the distinct keys go. */
typedef struct KeyRead
{
	Tuplestorestate *ts;
	TupleDesc	desc;
	int64		n;
} KeyRead;

/* Store one distinct key. */
static void
key_row(Datum *values, bool *nulls, TupleDesc desc, void *arg)
{
	KeyRead    *kr = arg;

	tuplestore_putvalues(kr->ts, kr->desc, values, nulls);
	kr->n++;
}

/* An empty tuplestore, living as long as the run, for the touched keys. */
static Tuplestorestate *
keys_store(ApplyCtx *a)
{
	MemoryContext old = MemoryContextSwitchTo(a->cxt);
	Tuplestorestate *ts = tuplestore_begin_heap(false, false, settings_store_mem());

	MemoryContextSwitchTo(old);
	return ts;
}

/* touched keys below which keys_bound's two lookups do not pay */
#define KEYS_BOUND_MIN_KEYS 1000

/* A key value of an integer, date or timestamp type (keys_bound) as an int64. */
static int64
key_int64(Datum d, Oid typid)
{
	if (typid == INT2OID)
		return DatumGetInt16(d);
	if (typid == INT4OID || typid == DATEOID)
		return DatumGetInt32(d);
	return DatumGetInt64(d);
}

/*
 * The greatest key the target and the hidden state hold (*bound; *none
 * when both are empty), for a key of one column of an integer, date or
 * timestamp type (ordered as its value read as an integer): a touched key
 * beyond it is in neither, and the fold's query need not probe for it
 * (new keys of a sequence all lie beyond it).  false when the key is of
 * another type, the target is distributed, or too few keys are touched for
 * the two index lookups to pay.
 */
static bool
keys_bound(ApplyCtx *a, int64 *bound, bool *none)
{
	int			i = a->c.keyidx[0];
	Oid			typid = a->c.dtypes[i];
	const char *col;
	const char *from[2];
	int			t;

	if (a->c.nkeys != 1 || a->distributed || a->nkeys_distinct < KEYS_BOUND_MIN_KEYS ||
		(typid != INT2OID && typid != INT4OID && typid != INT8OID && typid != DATEOID &&
		 typid != TIMESTAMPOID && typid != TIMESTAMPTZOID))
		return false;
	col = quote_identifier(a->c.dnames[i]);
	from[0] = table_rows(a->flow->target);
	from[1] = table_rows(a->staterel);
	*none = true;
	for (t = 0; t < 2; t++)
	{
		bool		isnull;
		Datum		d;

		if (SPI_execute(psprintf("SELECT pg_catalog.max(x.%s) FROM %s x", col, from[t]), true,
						1) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "could not read the greatest key of %s", from[t]);
		/* (a target column of another type than the state's: no bound) */
		if (SPI_gettypeid(SPI_tuptable->tupdesc, 1) != typid)
			return false;
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (!isnull && (*none || key_int64(d, typid) > *bound))
			*bound = key_int64(d, typid);
		*none = *none && isnull;
	}
	return true;
}

/*
 * Collect the distinct keys of the run's events into a tuplestore exposed
 * as autocdc_internal._keys(), and return the join clause restricting a scan "x" to
 * them.  Knowing the exact number of keys lets the planner choose between
 * index probes and a hash join.
 */
static char *
touched_keys_join(ApplyCtx *a)
{
	StringInfoData sql,
				coldefs,
				cond;
	KeyRead		kr;
	Tuplestorestate *ts;
	TupleDesc	desc;
	int64		n = 0;
	int			k;

	initStringInfo(&coldefs);
	initStringInfo(&cond);
	desc = CreateTemplateTupleDesc(a->c.nkeys);
	for (k = 0; k < a->c.nkeys; k++)
	{
		int			i = a->c.keyidx[k];
		Form_pg_attribute att = TupleDescAttr(a->sdesc, a->dattno[i]);

		TupleDescInitEntry(desc, k + 1, a->c.dnames[i], att->atttypid, att->atttypmod, 0);
		TupleDescInitEntryCollation(desc, k + 1, att->attcollation);
		appendStringInfo(&coldefs, "%s%s %s", k ? ", " : "", quote_identifier(a->c.dnames[i]),
						 format_type_with_typemod(att->atttypid, att->atttypmod));
		appendStringInfo(&cond, "%sx.%s %s k.%s", k ? " AND " : "",
						 quote_identifier(a->c.dnames[i]), equality_operator(att->atttypid),
						 quote_identifier(a->c.dnames[i]));
	}
	compat_TupleDescFinalize(desc);
	desc = BlessTupleDesc(desc);
	if (a->keyhash != NULL)
	{
		bool		knulls[INDEX_MAX_KEYS];
		int64		e;
		bool		bounded,
					none = false;
		int64		bound = 0;

		/*
		 * Gathered while classifying.  In key order, so that the index
		 * probes of a large target walk its indexes and heap in order,
		 * neighbours sharing pages, instead of jumping about in the order
		 * the keys first arrived: on a 1M-row target touched at 183,000
		 * keys, the fold took a quarter less time so.
		 */
		a->entries_sorted = sort_entries(a, a->entries, a->nkeys_distinct);
		a->njoinkeys = a->nkeys_distinct;
		a->small = small_beside_keys(a);

		/*
		 * A target and state small beside the keys, folded from the keyhash:
		 * reading them whole costs less than joining them to the keys (a
		 * third as much with 10,000 rows each and 110,000 keys), and the
		 * fold finds each row's key in the keyhash anyway.  Not a
		 * distributed target: its rows would all cross to this node.
		 */
		if (a->hashfold && !a->distributed && a->small)
		{
			elog(DEBUG1, "autocdc: flow \"%s\": the fold reads target and hidden state whole for "
				 INT64_FORMAT " touched keys", a->flow->name, a->njoinkeys);
			a->unjoined = true;
			return "";
		}
		bounded = keys_bound(a, &bound, &none);
		ts = keys_store(a);
		memset(knulls, 0, sizeof(knulls));
		for (e = 0; e < a->nkeys_distinct; e++)
		{
			/* (folded afterwards, as keys met nowhere: fold_all) */
			if (bounded && (none || key_int64(a->entries[e]->keyvals[0],
											  a->c.dtypes[a->c.keyidx[0]]) > bound))
				continue;
			tuplestore_putvalues(ts, a->keydesc, a->entries[e]->keyvals, knulls);
			n++;
		}
		if (bounded)
			elog(DEBUG1, "autocdc: flow \"%s\": " INT64_FORMAT " of " INT64_FORMAT
				 " touched keys lie beyond the greatest key of the target and the hidden state",
				 a->flow->name, a->nkeys_distinct - n, a->nkeys_distinct);
		batch_set(BATCH_KEYS, ts, a->keydesc, InvalidOid, n, 2);
		return psprintf(" JOIN autocdc_internal._keys() AS k(%s) ON %s", coldefs.data, cond.data);
	}

	ts = keys_store(a);
	kr.ts = ts;
	kr.desc = desc;
	kr.n = 0;
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT DISTINCT %s FROM autocdc_internal._events(NULL::%s) e "
					 "WHERE e.__autocdc_kind OPERATOR(pg_catalog.<>) 't'",
					 data_list(a, "e.", true), format_type_be_qualified(a->stype));
	spi_foreach_values(sql.data, true, key_row, &kr);
	n = kr.n;
	batch_set(BATCH_KEYS, ts, desc, InvalidOid, n, 2);	/* target and state joins */
	a->njoinkeys = n;
	a->small = small_beside_keys(a);
	return psprintf(" JOIN autocdc_internal._keys() AS k(%s) ON %s", coldefs.data, cond.data);
}

/*
 * Are the target and the hidden state small beside the number of keys the
 * run touches (under a page per 20 keys), so that reading them whole costs
 * less than an index probe per key, and still grows with the keys?
 */
static bool
small_beside_keys(ApplyCtx *a)
{
	int64		pages = 0;
	ListCell   *lc;

	/* a partitioned target's pages are its partitions' */
	foreach(lc, lappend_oid(table_and_partitions(a->flow->target, AccessShareLock), a->staterel))
	{
		Relation	r = table_open(lfirst_oid(lc), AccessShareLock);

		if (RELKIND_HAS_STORAGE(r->rd_rel->relkind))
			pages += RelationGetNumberOfBlocks(r);
		table_close(r, AccessShareLock);
	}
	return pages * 20 < a->njoinkeys;
}

/* The key being gathered from the merged stream. */
typedef struct FoldScan
{
	ApplyCtx   *a;
	Ev		  **group;
	int			ngroup,
				maxgroup;
} FoldScan;

/* Append an event to the key being gathered. */
static void
group_add(FoldScan *fs, Ev *e)
{
	if (fs->ngroup >= fs->maxgroup)
	{
		fs->maxgroup = fs->maxgroup ? fs->maxgroup * 2 : 64;
		fs->group = fs->group ? repalloc(fs->group, sizeof(Ev *) * fs->maxgroup)
			: MemoryContextAlloc(fs->a->cxt, sizeof(Ev *) * fs->maxgroup);
	}
	fs->group[fs->ngroup++] = e;
}

/* An Ev for a new event held by a keyhash entry (state row layout). */
static Ev *
event_from_state(ApplyCtx *a, HeapTuple tup)
{
	int			natts = a->sdesc->natts;
	int			ndata = a->c.ndata;
	Ev		   *e;
	Datum	   *values;
	bool	   *nulls;
	int			i;

	/* one allocation per event: a large batch folds one key after another */
	e = palloc0(MAXALIGN(sizeof(Ev)) + sizeof(Datum) * (natts + ndata) +
				sizeof(bool) * (natts + ndata));
	values = (Datum *) ((char *) e + MAXALIGN(sizeof(Ev)));
	e->vals = values + natts;
	nulls = (bool *) (e->vals + ndata);
	e->nulls = nulls + natts;
	heap_deform_tuple(tup, a->sdesc, values, nulls);
	e->src = EV_NEW;
	e->tup = tup;
	for (i = 0; i < a->c.ndata; i++)
	{
		e->vals[i] = values[a->dattno[i]];
		e->nulls[i] = nulls[a->dattno[i]];
	}
	e->seq = values[a->bk[STATE_SEQ]];
	e->lsn = DatumGetLSN(values[a->bk[STATE_LSN]]);
	e->ord = DatumGetInt64(values[a->bk[STATE_ORD]]);
	e->kind = DatumGetChar(values[a->bk[STATE_KIND]]);
	if (a->c.has_sys)
		e->sysseq = values[a->bksys];
	if (a->bkwritten >= 0 && !nulls[a->bkwritten])
	{
		e->wlist = values[a->bkwritten];
		e->written = written_columns(a, e->wlist);
	}
	return e;
}

/*
 * Add a keyhash entry's new events to the key being gathered (whose target
 * rows come first, then its hidden state's events in order), order its
 * events, fold it, and let the entry's memory go.  In the group context.
 */
static void
fold_entry(FoldScan *fs, KeyEntry *entry)
{
	ApplyCtx   *a = fs->a;
	int			first = 0,
				j;

	while (first < fs->ngroup && fs->group[first]->src == EV_TARGET)
		first++;
	for (j = 0; j < entry->nevs; j++)
		group_add(fs, event_from_state(a, entry->evs[j]));
	if (fs->ngroup - first > 1)
		qsort_arg(fs->group + first, fs->ngroup - first, sizeof(Ev *), fold_qsort_events, &a->c);
	fold_key(a, fs->group, fs->ngroup);
	/* the events the hidden state keeps stay until the write */
	for (j = first; j < fs->ngroup; j++)
		if (fs->group[j]->src == EV_NEW && !fs->group[j]->tupkept)
			heap_freetuple(fs->group[j]->tup);
	entry->nevs = 0;
	entry->last = NULL;
	entry->done = true;
}

/*
 * Fold the key gathered from the merged stream; when the new events are
 * held by the keyhash, add the key's from there.  In the group context.
 */
static void
fold_group(FoldScan *fs)
{
	ApplyCtx   *a = fs->a;
	Datum		probe[INDEX_MAX_KEYS];
	KeySlot    *slot;
	int			k;

	if (!a->hashfold)
	{
		fold_key(a, fs->group, fs->ngroup);
		return;
	}
	for (k = 0; k < a->c.nkeys; k++)
		probe[k] = fs->group[0]->vals[a->c.keyidx[k]];
	slot = keyhash_lookup(a->keyhash, probe);
	if (slot == NULL && a->unjoined)
		return;					/* a key the batch does not touch */
	if (slot == NULL)
		elog(ERROR, "flow \"%s\": a touched key is missing from the batch", a->flow->name);
	fold_entry(fs, slot->entry);
}

/* One row of the merged stream: fold the previous key when a new one starts. */
static void
fold_row(HeapTuple tup, TupleDesc desc, void *arg)
{
	FoldScan   *fs = arg;
	ApplyCtx   *a = fs->a;
	MemoryContext old = MemoryContextSwitchTo(a->groupcxt);
	Ev		   *e = read_row(a, tup, desc);

	if (fs->ngroup > 0 && !fold_same_key(&a->c, fs->group[0], e))
	{
		fold_group(fs);
		fs->ngroup = 0;
		/* start the next key with fresh memory */
		MemoryContextReset(a->groupcxt);
		e = read_row(a, tup, desc);
	}
	MemoryContextSwitchTo(old);
	group_add(fs, e);
}

/* A key may span fetches: copy its values before the chunk is freed. */
static void
fold_chunk_end(void *arg)
{
	FoldScan   *fs = arg;
	ApplyCtx   *a = fs->a;
	MemoryContext old = MemoryContextSwitchTo(a->groupcxt);
	int			i,
				j;

	for (i = 0; i < fs->ngroup; i++)
	{
		Ev		   *e = fs->group[i];

		for (j = 0; j < a->c.ndata; j++)
			if (!e->nulls[j])
				e->vals[j] = datumCopy(e->vals[j],
									   TupleDescAttr(a->sdesc, a->dattno[j])->attbyval,
									   TupleDescAttr(a->sdesc, a->dattno[j])->attlen);
		if (!e->seqnull)
			e->seq = datumCopy(e->seq, a->c.seqbyval, a->c.seqlen);
		for (j = 0; j < a->kind->nperiods; j++)
			if (!e->periodnull[j])
				e->period[j] = fold_period_copy(&a->c, j, e->period[j]);
		if (a->c.has_sys && e->src != EV_TARGET)
			e->sysseq = datumCopy(e->sysseq, a->c.sysbyval, a->c.syslen);
	}
	MemoryContextSwitchTo(old);
}

/* Delete n rows of one table (delete_rows). */
static void
delete_tids(Oid relid, RowRef *rows, int n)
{
#define DELETE_CHUNK 65536
	Datum	   *d;
	int			i,
				from;
	Oid			argtype = TIDARRAYOID;
	char	   *sql;
	SPIPlanPtr	plan;

	sql = psprintf("DELETE FROM ONLY %s WHERE ctid OPERATOR(pg_catalog.=) ANY ($1)", qualified_relname(relid));

	/*
	 * A generic plan: a custom one sees tens of thousands of tids and
	 * prefers a sequential scan of the whole table to the tid scan.
	 */
	plan = SPI_prepare_cursor(sql, 1, &argtype, CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "could not prepare the deletion of rows of %s", qualified_relname(relid));
	d = palloc(sizeof(Datum) * Min(n, DELETE_CHUNK));
	for (from = 0; from < n; from += DELETE_CHUNK)
	{
		int			len = Min(n - from, DELETE_CHUNK);
		ArrayType  *arr;
		Datum		arg;

		for (i = 0; i < len; i++)
			d[i] = ItemPointerGetDatum(&rows[from + i].tid);
		arr = construct_array(d, len, TIDOID, sizeof(ItemPointerData), false, TYPALIGN_SHORT);
		arg = PointerGetDatum(arr);
		if (SPI_execute_plan(plan, &arg, NULL, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not delete rows of %s", qualified_relname(relid));
		pfree(arr);
	}
	SPI_freeplan(plan);
	pfree(d);
}

/* qsort callback: order rows by their table. */
static int
rowref_compare(const void *x, const void *y)
{
	Oid			r1 = ((const RowRef *) x)->rel;
	Oid			r2 = ((const RowRef *) y)->rel;

	return r1 < r2 ? -1 : r1 > r2 ? 1 : 0;
}

/*
 * Delete rows by ctid (a tid scan), with a tid[] parameter of at most
 * DELETE_CHUNK elements per statement (the array and the scan's sorted copy
 * of it stay small).  Each row is deleted from the table that holds it: a
 * row id names a row only within one table, so the rows of a partitioned
 * target are deleted partition by partition, each by its own row ids.
 */
static void
delete_rows(RowRef *rows, int n)
{
	int			from,
				len;
	Oid			relid;

	if (n == 0)
		return;
	/* rows of one table (an ordinary target, the hidden state) need no sort */
	for (len = 1; len < n && rows[len].rel == rows[0].rel; len++)
		;
	if (len < n)
		qsort(rows, n, sizeof(RowRef), rowref_compare);
	for (from = 0; from < n; from += len)
	{
		relid = rows[from].rel;
		for (len = 1; from + len < n && rows[from + len].rel == relid; len++)
			;
		delete_tids(relid, rows + from, len);
	}
}

/*
 * Insert a batch of n rows (insert_direct): the heap a page's worth of
 * rows per WAL record (heap_multi_insert, as COPY does), then their index
 * entries; the slots are cleared.
 */
static void
insert_batch(Relation rel, ResultRelInfo *rri, EState *estate, TupleTableSlot **slots, int n,
			 CommandId cid, MemoryContext batchcxt)
{
	MemoryContext old = MemoryContextSwitchTo(batchcxt);
	int			i;

	table_multi_insert(rel, slots, n, cid, 0, NULL);
	for (i = 0; i < n; i++)
	{
		ResetPerTupleExprContext(estate);
		(void) compat_ExecInsertIndexTuples(rri, slots[i], estate);
		ExecClearTuple(slots[i]);
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(batchcxt);
}

/*
 * Insert rows of rel's row type into rel directly: ntups heap tuples
 * (each freed once inserted) and the rows of a tuplestore (which is
 * ended), if not NULL.  Only for a table with nothing an INSERT would run beside
 * (direct_insert_ok); a unique index still refuses a duplicate as it
 * would.
 */
static void
insert_direct(Oid relid, HeapTuple *tups, int64 ntups, Tuplestorestate *ts)
{
#define DIRECT_INSERT_BATCH 1000
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot **slots;
	CommandId	cid = GetCurrentCommandId(true);
	int			n = 0,
				i;
	int64		t;
	MemoryContext batchcxt;

	/* heap tuples made from the slots' rows, freed a batch at a time */
	batchcxt = AllocSetContextCreate(CurrentMemoryContext, "autocdc direct insert",
									 ALLOCSET_DEFAULT_SIZES);
	rel = table_open(relid, RowExclusiveLock);
	estate = CreateExecutorState();
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 1, NULL, 0);
	ExecOpenIndices(rri, false);
	slots = palloc(sizeof(TupleTableSlot *) * DIRECT_INSERT_BATCH);

	/* the tuples, handed to heap-tuple slots: inserted as they are */
	if (ntups > 0)
	{
		for (i = 0; i < DIRECT_INSERT_BATCH; i++)
			slots[i] = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsHeapTuple);
		for (t = 0; t < ntups; t++)
		{
			ExecStoreHeapTuple(tups[t], slots[n++], true);
			if (n == DIRECT_INSERT_BATCH || t == ntups - 1)
			{
				insert_batch(rel, rri, estate, slots, n, cid, batchcxt);
				n = 0;
			}
		}
		for (i = 0; i < DIRECT_INSERT_BATCH; i++)
			ExecDropSingleTupleTableSlot(slots[i]);
	}

	/* the tuplestore's rows */
	if (ts != NULL)
	{
		bool		more = true;

		for (i = 0; i < DIRECT_INSERT_BATCH; i++)
			slots[i] = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsMinimalTuple);
		while (more)
		{
			more = tuplestore_gettupleslot(ts, true, true, slots[n]);
			if (more)
				n++;
			if (n == DIRECT_INSERT_BATCH || (!more && n > 0))
			{
				insert_batch(rel, rri, estate, slots, n, cid, batchcxt);
				n = 0;
			}
		}
		for (i = 0; i < DIRECT_INSERT_BATCH; i++)
			ExecDropSingleTupleTableSlot(slots[i]);
		tuplestore_end(ts);
	}
	MemoryContextDelete(batchcxt);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	table_close(rel, NoLock);
	CommandCounterIncrement();
}

/*
 * May the fold's rows go into the target directly (insert_direct) instead
 * of through an INSERT?  When the INSERT would do nothing more than store
 * them and their index entries: an ordinary table (not a partition, which
 * checks its bound), with no triggers (foreign keys are triggers), rules,
 * row security, check constraints or deferred or exclusion constraints,
 * every column written by the flow (none takes a default or is
 * generated), no row null where a column is NOT NULL, and the right to
 * insert into it.
 */
static bool
direct_insert_ok(ApplyCtx *a, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *indexes;
	ListCell   *lc;
	bool		ok = true;
	int			i;

	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relispartition ||
		rel->trigdesc != NULL || rel->rd_rules != NULL || rel->rd_rel->relrowsecurity ||
		(desc->constr != NULL && desc->constr->num_check > 0) ||
		desc->natts != a->tdesc->natts ||
		tablekind_citus(RelationGetRelid(rel)) != NULL ||
		pg_class_aclcheck(RelationGetRelid(rel), GetUserId(), ACL_INSERT) != ACLCHECK_OK)
		return false;
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		if (a->tmap[i] == TMAP_NONE || att->attgenerated != '\0' ||
			(att->attnotnull && a->tins_null[i]))
			return false;
	}
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		Relation	ind = index_open(lfirst_oid(lc), AccessShareLock);

		if (!ind->rd_index->indimmediate || ind->rd_index->indisexclusion)
			ok = false;
		index_close(ind, AccessShareLock);
	}
	list_free(indexes);
	return ok;
}

/*
 * Insert the fold's rows (a tuplestore of the target's row type) into the
 * target: directly where an INSERT would only store them
 * (direct_insert_ok); else through one, which names only the columns the
 * flow writes, so that columns a user added to the target get their
 * defaults (and generated columns their values) instead of NULL.  A large
 * load into an empty target rebuilds its indexes after the insert instead
 * (storage_bulk_begin).
 */
static void
insert_rows(ApplyCtx *a)
{
	char	   *sql;
	StringInfoData cols;
	int			i;
	Oid			relid = a->flow->target;
	List	   *deferred;
	Relation	rel;
	bool		direct,
				rules;
	int			rc;

	if (a->ntins == 0)
		return;
	deferred = storage_bulk_begin(relid, a->ntins, false);
	rel = table_open(relid, RowExclusiveLock);
	direct = !a->distributed && direct_insert_ok(a, rel);
	rules = rel->rd_rules != NULL;
	table_close(rel, NoLock);
	if (direct)
	{
		elog(DEBUG1, "autocdc: flow \"%s\": " INT64_FORMAT " rows go into the target directly",
			 a->flow->name, a->ntins);
		insert_direct(relid, NULL, 0, a->tins);
		a->tins = NULL;
		storage_bulk_end(relid, deferred);
		return;
	}
	initStringInfo(&cols);
	for (i = 0; i < a->tdesc->natts; i++)
		if (a->tmap[i] != TMAP_NONE)
			appendStringInfo(&cols, "%s%s", cols.len ? ", " : "",
							 quote_identifier(NameStr(TupleDescAttr(a->tdesc, i)->attname)));

	/*
	 * The INSERT frees the rows.  The target's rules add queries that read
	 * them too, as many as their actions (and the rules on those actions'
	 * tables) make: then each reads a copy, and the rows are freed here.
	 * The last of those queries need not be an INSERT.
	 */
	batch_set(BATCH_ROWS, a->tins, a->tdesc, a->ttype, a->ntins, rules ? INT_MAX : 1);
	sql = psprintf("INSERT INTO %s (%s) SELECT %s FROM autocdc_internal._rows(NULL::%s)",
				   qualified_relname(relid), cols.data, cols.data, format_type_be_qualified(a->ttype));
	rc = SPI_execute(sql, false, 0);
	if (rc < 0 || (rc != SPI_OK_INSERT && !rules))
		elog(ERROR, "could not insert rows into %s", qualified_relname(relid));
	storage_bulk_end(relid, deferred);
	batch_end(BATCH_ROWS);
	a->tins = NULL;
}

/*
 * Insert the hidden state's new rows directly (insert_direct): the state
 * is autocdc's own table, with no triggers, rules or constraints to
 * honour, and a row per event made single inserts through SQL a large part
 * of a run.  The events the keyhash held go in as the tuples it held them
 * in (keep_event), the others from the tuplestore.  A load that is large
 * beside the state rebuilds its indexes after the insert instead
 * (storage_bulk_begin).
 */
static void
insert_state_rows(ApplyCtx *a)
{
	List	   *deferred;

	if (a->nsins == 0)
		return;
	deferred = storage_bulk_begin(a->staterel, a->nsins, true);
	insert_direct(a->staterel, a->sinstups, a->nsinstups, a->sins);
	a->sins = NULL;
	a->nsinstups = 0;
	storage_bulk_end(a->staterel, deferred);
}

/*
 * Decide where the fold takes the new events from: the keyhash, unless it
 * outgrew its memory or the fold must read every key of the target
 * (truncates, refresh); otherwise they go to BATCH_EVENTS for the stream
 * query.
 */
static void
place_events(ApplyCtx *a, FlowDef *flow, Tuplestorestate *events, int64 nevents,
			 List *truncs, bool touch_all)
{
	a->hashfold = a->inmem && truncs == NIL && !touch_all;
	if (a->keyhash != NULL || a->keys_outgrew)
		elog(DEBUG1, "autocdc: flow \"%s\": " INT64_FORMAT " events %s", flow->name, nevents,
			 a->hashfold ? "folded from memory" :
			 a->inmem ? "folded through SQL: the fold reads every key" :
			 "folded through SQL: they outgrew work_mem");
	if (a->hashfold)
		tuplestore_end(events);
	else
	{
		if (a->inmem)
			spill_entries(a, events);
		/* read by the touched-keys query (unless every key is touched) and the fold's */
		batch_set(BATCH_EVENTS, events, a->sdesc, a->stype, nevents,
				  truncs != NIL || touch_all || a->keyhash != NULL ? 1 : 2);
	}
}

/*
 * Sort the truncates of the whole target (the hidden state's and the
 * batch's) into a->truncs, and keep the batch's new ones as state.
 */
static void
setup_truncates(ApplyCtx *a, List *truncs)
{
	List	   *all = NIL;
	ListCell   *lc;
	int			i;

	load_state_truncates(a, &all);
	foreach(lc, truncs)
		all = lappend(all, lfirst(lc));
	a->ntruncs = list_length(all);
	a->truncs = palloc(sizeof(Ev *) * (a->ntruncs + 1));
	i = 0;
	foreach(lc, all)
		a->truncs[i++] = lfirst(lc);
	qsort_arg(a->truncs, a->ntruncs, sizeof(Ev *), fold_qsort_events, &a->c);

	foreach(lc, truncs)
	{
		Ev		   *t = lfirst(lc);

		t->vals = palloc0(sizeof(Datum) * a->c.ndata);
		t->nulls = palloc(sizeof(bool) * a->c.ndata);
		for (i = 0; i < a->c.ndata; i++)
			t->nulls[i] = true;
		keep_event(a, t);
	}
}

/*
 * The query that merges the target rows, the hidden state (none for a
 * target without it) and (unless the fold takes them from the keyhash) the
 * new events of the touched keys, or of every key with everykey.  Rows:
 * __src, __tid, __rel (the table holding a row: a partition of a
 * partitioned target), the data columns, then
 * the event columns (EVENT_SEQ...), then the kind's period columns, then
 * __grp (target rows first within a key); ordered by key, then target rows,
 * then events by (sequence, arrival).
 */
static char *
stream_sql(ApplyCtx *a, FlowDef *flow, bool everykey)
{
	StringInfoData sql,
				periods,
				noperiods;
	char	   *seqtype = format_type_be_qualified(flow->seq_type);
	char	   *filter;
	const char *evsys = a->c.has_sys ? ", x." STATE_SYSSEQ_NAME : "";
	/* rows of a distributed target are deleted by key: their ids mean nothing here */
	const char *rowid = a->distributed ? "NULL::pg_catalog.tid" : "x.ctid";
	const char *relid = a->distributed ? "NULL::pg_catalog.oid" : "x.tableoid";
	int			i;

	/* then the columns an upsert writes, where the hidden state has them */
	if (a->bkwritten >= 0)
		evsys = psprintf("%s, x.%s", evsys, STATE_WRITTEN_NAME);

	a->njoinkeys = -1;
	filter = everykey ? "" : touched_keys_join(a);
	initStringInfo(&periods);
	initStringInfo(&noperiods);
	for (i = 0; i < a->kind->nperiods; i++)
	{
		appendStringInfo(&periods, ", x.%s", a->kind->periods[i]);
		appendStringInfo(&noperiods, ", NULL::%s", format_type_be_qualified(period_type(a, i)));
	}
	/* then the events' system sequence (bitemporal) */
	if (a->c.has_sys)
		appendStringInfo(&periods, ", NULL::%s", format_type_be_qualified(flow->sysseq_type));
	if (a->bkwritten >= 0)
		appendStringInfoString(&periods, ", NULL::pg_catalog.text[]");
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT %d AS __src, %s AS __tid, %s AS __rel, %s, NULL::%s, "
					 "NULL::pg_catalog.pg_lsn, NULL::pg_catalog.int8, NULL::pg_catalog.\"char\"%s, "
					 "0 AS __grp FROM %s x%s ",
					 EV_TARGET, rowid, relid, data_list(a, "x.", false), seqtype, periods.data,
					 table_rows(flow->target), filter);
	if (!a->stateless)
		appendStringInfo(&sql,
						 "UNION ALL "
						 "SELECT %d, %s, %s, %s, x.%s, x.%s, x.%s, x.%s%s%s, 1 FROM %s x%s "
						 "WHERE x.%s OPERATOR(pg_catalog.<>) '%c' ",
						 EV_STATE, rowid, relid, data_list(a, "x.", false), STATE_SEQ_NAME, STATE_LSN_NAME,
						 STATE_ORD_NAME, STATE_KIND_NAME, noperiods.data, evsys,
						 qualified_relname(a->staterel), filter, STATE_KIND_NAME, EVENT_TRUNCATE);
	if (!a->hashfold)
		appendStringInfo(&sql,
						 "UNION ALL "
						 "SELECT %d, NULL::pg_catalog.tid, NULL::pg_catalog.oid, %s, x.%s, x.%s, x.%s, x.%s%s%s, 1 "
						 "FROM autocdc_internal._events(NULL::%s) x "
						 "WHERE x.%s OPERATOR(pg_catalog.<>) '%c' ",
						 EV_NEW, data_list(a, "x.", false), STATE_SEQ_NAME, STATE_LSN_NAME,
						 STATE_ORD_NAME, STATE_KIND_NAME, noperiods.data, evsys,
						 format_type_be_qualified(a->stype), STATE_KIND_NAME, EVENT_TRUNCATE);
	appendStringInfo(&sql, "ORDER BY %s, __grp, %d, %d, %d",
					 data_list(a, "", true), a->c.ndata + STREAM_LEAD + 1 + EVENT_SEQ,
					 a->c.ndata + STREAM_LEAD + 1 + EVENT_LSN,
					 a->c.ndata + STREAM_LEAD + 1 + EVENT_ORD);
	return sql.data;
}

/* The key orderings sort_entries compares with. */
typedef struct EntrySort
{
	int			nkeys;
	SortSupport ssup;
} EntrySort;

/*
 * An entry being sorted, its first key value beside it: most comparisons
 * end there without reading the entry.
 */
typedef struct SortedEntry
{
	Datum		first;
	KeyEntry   *entry;
} SortedEntry;

/*
 * Sorts of entries of a one-column key whose ordering compares Datums as
 * signed integers (the sort support of int8 and timestamps, of int4 and
 * dates; int2's has a comparator of its own and keeps the general sort):
 * the comparison inline instead of through two calls.
 */
#define ST_SORT sort_entries_signed
#define ST_ELEMENT_TYPE SortedEntry
#define ST_COMPARE(x, y) \
	((int64) (x)->first < (int64) (y)->first ? -1 : (int64) (x)->first > (int64) (y)->first)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

#define ST_SORT sort_entries_int32
#define ST_ELEMENT_TYPE SortedEntry
#define ST_COMPARE(x, y) \
	(DatumGetInt32((x)->first) < DatumGetInt32((y)->first) ? -1 : \
	 DatumGetInt32((x)->first) > DatumGetInt32((y)->first))
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* qsort_arg callback: order two keyhash entries by their key values. */
static int
entry_compare(const void *x, const void *y, void *arg)
{
	EntrySort  *es = arg;
	const SortedEntry *s1 = x;
	const SortedEntry *s2 = y;
	KeyEntry   *e1 = s1->entry;
	KeyEntry   *e2 = s2->entry;
	int			k;
	int			c = ApplySortComparator(s1->first, false, s2->first, false, &es->ssup[0]);

	for (k = 1; k < es->nkeys && c == 0; k++)
		c = ApplySortComparator(e1->keyvals[k], false, e2->keyvals[k], false, &es->ssup[k]);
	return c;
}

/*
 * Sort keyhash entries by their key values, when every key type has an
 * ordering (else return false, the entries as they were).  The fold probes
 * the target for the touched keys in this order, and inserts the rows of
 * keys met nowhere else in it, so that they reach the target's and the
 * state's btree indexes in key order, neighbours sharing pages, instead of
 * in the order the keys first arrived: 200,000 rows inserted into a table
 * with two btree indexes took 40% less time sorted than shuffled.
 */
static bool
sort_entries(ApplyCtx *a, KeyEntry **entries, int64 n)
{
	EntrySort	es;
	SortedEntry *sorted;
	int64		e;
	int			k;

	if (n < 2)
		return true;
	es.nkeys = a->c.nkeys;
	es.ssup = palloc0(sizeof(SortSupportData) * a->c.nkeys);
	for (k = 0; k < a->c.nkeys; k++)
	{
		int			i = a->c.keyidx[k];
		TypeCacheEntry *tc = lookup_type_cache(a->c.dtypes[i], TYPECACHE_LT_OPR);

		if (!OidIsValid(tc->lt_opr))
		{
			pfree(es.ssup);
			return false;
		}
		es.ssup[k].ssup_cxt = CurrentMemoryContext;
		es.ssup[k].ssup_collation = a->c.dcolls[i];
		es.ssup[k].ssup_nulls_first = false;
		PrepareSortSupportFromOrderingOp(tc->lt_opr, &es.ssup[k]);
	}
	sorted = palloc_extended(sizeof(SortedEntry) * n, MCXT_ALLOC_HUGE);
	for (e = 0; e < n; e++)
	{
		sorted[e].first = entries[e]->keyvals[0];
		sorted[e].entry = entries[e];
	}
	if (es.nkeys == 1 && es.ssup[0].comparator == ssup_datum_signed_cmp && !es.ssup[0].ssup_reverse)
		sort_entries_signed(sorted, n);
	else if (es.nkeys == 1 && es.ssup[0].comparator == ssup_datum_int32_cmp &&
			 !es.ssup[0].ssup_reverse)
		sort_entries_int32(sorted, n);
	else
		qsort_arg(sorted, n, sizeof(SortedEntry), entry_compare, &es);
	for (e = 0; e < n; e++)
		entries[e] = sorted[e].entry;
	pfree(sorted);
	pfree(es.ssup);
	return true;
}

/*
 * Fold every touched key: those the stream query returns, key by key, then
 * (folding from the keyhash) the keys with no target row and no hidden
 * state, in key order.  The differences collect in a.
 */
static void
fold_all(ApplyCtx *a, const char *sql)
{
	FoldScan	fs;
	MemoryContext old;
	int			level;

	a->groupcxt = AllocSetContextCreate(CurrentMemoryContext, "autocdc fold",
										ALLOCSET_DEFAULT_SIZES);
	fs.a = a;
	fs.group = NULL;
	fs.ngroup = fs.maxgroup = 0;

	/*
	 * Reach the touched keys' rows through their indexes: a hash or merge
	 * join would read the whole target and state, making a run's cost grow
	 * with the target instead of with the keys it touches.  Unless both are
	 * small beside the number of keys (under a page per 20 keys): then
	 * reading them costs less than probing for every key, and the planner
	 * may choose (or, folding from the keyhash, the query reads them whole:
	 * touched_keys_join).
	 */
	level = NewGUCNestLevel();
	if (a->njoinkeys >= 0 && !a->small)
	{
		(void) set_config_option("enable_hashjoin", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("enable_mergejoin", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	spi_foreach(sql, false, fold_row, fold_chunk_end, &fs);
	AtEOXact_GUC(true, level);
	if (fs.ngroup > 0)
	{
		old = MemoryContextSwitchTo(a->groupcxt);
		fold_group(&fs);
		MemoryContextSwitchTo(old);
	}
	if (a->hashfold)
	{
		int64		e,
					n = 0;
		KeyEntry  **todo = palloc_extended(sizeof(KeyEntry *) * (a->nkeys_distinct + 1),
										   MCXT_ALLOC_HUGE);

		for (e = 0; e < a->nkeys_distinct; e++)
			if (!a->entries[e]->done)
				todo[n++] = a->entries[e];
		if (!a->entries_sorted)
			(void) sort_entries(a, todo, n);
		for (e = 0; e < n; e++)
		{
			MemoryContextReset(a->groupcxt);
			old = MemoryContextSwitchTo(a->groupcxt);
			fs.ngroup = 0;
			fold_entry(&fs, todo[e]);
			MemoryContextSwitchTo(old);
		}
		pfree(todo);
	}
}

/*
 * Run sql with ts (n rows of rowtype, described by desc) as
 * autocdc_internal._rows(), which it reads once.
 */
static void
exec_with_rows(Tuplestorestate *ts, TupleDesc desc, Oid rowtype, int64 n, const char *sql,
			   int expect)
{
	batch_set(BATCH_ROWS, ts, desc, rowtype, n, 1);
	if (SPI_execute(sql, false, 0) != expect)
		elog(ERROR, "could not run: %s", sql);
	batch_set(BATCH_ROWS, NULL, NULL, InvalidOid, 0, 0);
}

/*
 * The condition matching a row x of the target (or with state, of the
 * hidden state) to a row d of the same type: the key, with the periods
 * for the target (a version's identity) and the arrival for the state (an
 * event's).
 */
static char *
identity_condition(ApplyCtx *a, bool state)
{
	StringInfoData cond;
	int			k;

	initStringInfo(&cond);
	for (k = 0; k < a->c.nkeys; k++)
	{
		const char *col = quote_identifier(a->c.dnames[a->c.keyidx[k]]);

		appendStringInfo(&cond, "%sx.%s %s d.%s", k ? " AND " : "", col,
						 equality_operator(a->c.dtypes[a->c.keyidx[k]]), col);
	}
	if (state)
		appendStringInfo(&cond, " AND x.%s OPERATOR(pg_catalog.=) d.%s AND x.%s OPERATOR(pg_catalog.=) d.%s"
						 " AND x.%s OPERATOR(pg_catalog.=) d.%s",
						 STATE_LSN_NAME, STATE_LSN_NAME, STATE_ORD_NAME, STATE_ORD_NAME,
						 STATE_KIND_NAME, STATE_KIND_NAME);
	else
		for (k = 0; k < a->kind->nperiods; k++)
		{
			const char *p = a->kind->periods[k];

			/* (an open period's end is NULL) */
			appendStringInfo(&cond, " AND (x.%s %s d.%s OR (x.%s IS NULL AND d.%s IS NULL))",
							 p, equality_operator(period_type(a, k)), p, p, p);
		}
	return cond.data;
}

/*
 * Insert the truncates to keep into the table that keeps a distributed
 * target's (distribute_state in storage.c), if it has one.
 */
static void
insert_truncates(ApplyCtx *a)
{
	char	   *cols;

	if (a->truncins == NULL)
		return;
	if (a->ntruncins == 0)
	{
		tuplestore_end(a->truncins);
		return;
	}
	cols = psprintf("%s, %s, %s, %s, %s%s", STATE_SEQ_NAME, STATE_LSN_NAME, STATE_ORD_NAME,
					STATE_KIND_NAME, STATE_AT_NAME, a->c.has_sys ? ", " STATE_SYSSEQ_NAME : "");
	exec_with_rows(a->truncins, a->sdesc, a->stype, a->ntruncins,
				   psprintf("INSERT INTO %s (%s) SELECT %s FROM autocdc_internal._rows(NULL::%s)",
							qualified_relname(a->truncrel), cols, cols,
							format_type_be_qualified(a->stype)), SPI_OK_INSERT);
}

/*
 * Write the differences of a run into a Citus-distributed target, with
 * statements Citus pushes down to the shards: rows are deleted by key (and
 * period or arrival), joined with the run's rows, which Citus sends to each
 * worker; every row goes in by INSERT ... SELECT, which Citus routes by
 * its distribution column; truncates (no key) go to their table on the
 * coordinator.  The same transaction: Citus commits it on every node with
 * two-phase commit.
 */
static void
write_by_key(ApplyCtx *a)
{
	char	   *sname = qualified_relname(a->staterel);

	if (a->ntdelrows > 0)
		exec_with_rows(a->tdelrows, a->tdesc, a->ttype, a->ntdelrows,
					   psprintf("DELETE FROM %s x USING autocdc_internal._rows(NULL::%s) d WHERE %s",
								qualified_relname(a->flow->target), format_type_be_qualified(a->ttype),
								identity_condition(a, false)), SPI_OK_DELETE);
	else
		tuplestore_end(a->tdelrows);
	insert_rows(a);
	if (a->nsdelrows > 0)
		exec_with_rows(a->sdelrows, a->sdesc, a->stype, a->nsdelrows,
					   psprintf("DELETE FROM %s x USING autocdc_internal._rows(NULL::%s) d WHERE %s",
								sname, format_type_be_qualified(a->stype),
								identity_condition(a, true)), SPI_OK_DELETE);
	else
		tuplestore_end(a->sdelrows);
	if (a->nsins > 0)
		exec_with_rows(a->sins, a->sdesc, a->stype, a->nsins,
					   psprintf("INSERT INTO %s SELECT * FROM autocdc_internal._rows(NULL::%s)",
								sname, format_type_be_qualified(a->stype)), SPI_OK_INSERT);
	else
		tuplestore_end(a->sins);
	a->sins = NULL;
	insert_truncates(a);
	CommandCounterIncrement();
}

/*
 * Write the differences the fold collected: the target's, then the hidden
 * state's.  Hidden-state changes are marked as not to be replicated, so that
 * decoding (ours, and any other consumer that filters by origin) drops them
 * before buffering.  Only the state: targets may be feeds of other flows.
 */
static void
write_differences(ApplyCtx *a, FlowDef *flow)
{
	compat_ReplOriginId saved_origin = compat_session_origin;

	if (a->distributed)
	{
		write_by_key(a);
		return;
	}
	delete_rows(a->tdel, a->ntdel);
	insert_rows(a);
	PG_TRY();
	{
		compat_session_origin = DoNotReplicateId;
		delete_rows(a->sdel, a->nsdel);
		insert_state_rows(a);
		insert_truncates(a);
	}
	PG_FINALLY();
	{
		compat_session_origin = saved_origin;
	}
	PG_END_TRY();
}

/*
 * Forget the tombstones (deletes, truncates) older than the retention,
 * in the hidden state and in its truncates' own table if it has one.
 */
static void
forget_tombstones(ApplyCtx *a, const char *retention)
{
	Datum		arg = CStringGetTextDatum(retention);
	Oid			argtype = TEXTOID;
	Oid			rels[2] = {a->staterel, a->truncrel};
	int			i;

	for (i = 0; i < (a->truncrel == a->staterel ? 1 : 2); i++)
	{
		char	   *q = psprintf("DELETE FROM %s WHERE __autocdc_kind OPERATOR(pg_catalog.<>) 'u' "
								 "AND __autocdc_at OPERATOR(pg_catalog.<) (pg_catalog.now() "
								 "OPERATOR(pg_catalog.-) $1::pg_catalog.interval)",
								 qualified_relname(rels[i]));

		if (SPI_execute_with_args(q, 1, &argtype, &arg, NULL, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not forget old tombstones");
	}
}

/*
 * Apply the batch (BATCH_SOURCE) of a flow, or with events_sql the events
 * that query returns (already classified: the data columns in hidden-state
 * order, then sequence, lsn, ord and kind; snapshot comparison).  Runs as
 * the flow owner under a security-restricted operation with search_path
 * pinned; SPI connected.
 */
static void
apply_common(FlowDef *flow, RunMetrics *m, bool have_batch, bool touch_all,
			 const char *events_sql, bool no_hash)
{
	ApplyCtx	a;
	Tuplestorestate *events;
	List	   *truncs = NIL;
	int64		nevents;
	TimestampTz t0,
				t1,
				t2;

	memset(&a, 0, sizeof(a));
	a.m = m;
	a.cxt = CurrentMemoryContext;
	apply_setup(&a, flow);

	/* classify and validate */
	events = tuplestore_begin_heap(false, false, settings_store_mem());
	t0 = GetCurrentTimestamp();
	if (events_sql == NULL)
		keys_setup(&a);			/* snapshot events: one per key, possibly millions */
	nevents = have_batch ? classify(&a, events, &truncs, events_sql, no_hash) : 0;
	t1 = GetCurrentTimestamp();
	m->num_events += nevents;
	if (nevents == 0 && !touch_all)
	{
		tuplestore_end(events);
		return;
	}
	place_events(&a, flow, events, nevents, truncs, touch_all);

	/* fold */
	a.tins = tuplestore_begin_heap(false, false, settings_store_mem());
	a.sins = tuplestore_begin_heap(false, false, settings_store_mem());
	setup_truncates(&a, truncs);
	fold_all(&a, stream_sql(&a, flow, truncs != NIL || touch_all));

	/* write */
	t2 = GetCurrentTimestamp();
	write_differences(&a, flow);
	elog(DEBUG2, "autocdc: flow \"%s\": classified " INT64_FORMAT " events in %ld ms, "
		 "folded in %ld ms, wrote in %ld ms", flow->name, nevents,
		 (long) ((t1 - t0) / 1000), (long) ((t2 - t1) / 1000),
		 (long) ((GetCurrentTimestamp() - t2) / 1000));
	if (flow->retention)
		forget_tombstones(&a, flow->retention);

	/* handed to the queries that read them last, or freed here */
	batch_end(BATCH_EVENTS);
	batch_end(BATCH_KEYS);
	MemoryContextDelete(a.groupcxt);
	if (a.keycxt)
		MemoryContextDelete(a.keycxt);
}

/* Apply the captured batch (BATCH_SOURCE) of a flow. */
void
apply_batch(FlowDef *flow, RunMetrics *m, bool have_batch, bool touch_all)
{
	apply_common(flow, m, have_batch, touch_all, NULL, false);
}

/*
 * Apply events computed by a query (a snapshot flow's diff): at most one
 * event per key, so the touched keys are gathered by SQL, which spills.
 * no_hash: plan that query without hash joins.
 */
void
apply_events(FlowDef *flow, RunMetrics *m, const char *events_sql, bool touch_all,
			 bool no_hash)
{
	apply_common(flow, m, true, touch_all, events_sql, no_hash);
}
