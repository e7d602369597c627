/*-------------------------------------------------------------------------
 *
 * layout.h
 *		Names and row layouts that several modules share (base layer): the
 *		schemas, a run's batch rows, the hidden state's bookkeeping columns,
 *		the classified event rows, and the lock classes of autocdc.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_LAYOUT_H
#define AUTOCDC_LAYOUT_H

#include "nodes/pg_list.h"

#define AUTOCDC_SCHEMA "autocdc"
#define AUTOCDC_STATE_SCHEMA "autocdc_state"
#define AUTOCDC_INTERNAL_SCHEMA "autocdc_internal"
#define AUTOCDC_PUBLICATION "autocdc_feeds"

/*
 * A batch row: the arrival position (commit LSN of the source transaction,
 * order within it), then the source's columns (dropped ones left out), in
 * attribute order.  Attribute indexes (0-based).
 */
#define BATCH_LSN 0
#define BATCH_ORD 1
#define BATCH_DATA 2

/*
 * Rows read under a snapshot (a first read, a once flow, a full refresh)
 * have no commit: their LSN is the WAL position when the snapshot was
 * taken, and their orders count up from SNAPSHOT_ORD_BASE, so that they
 * sort before a transaction committed at that very position and can be
 * told from decoded events.
 */
#define SNAPSHOT_ORD_BASE PG_INT64_MIN
#define ORD_IS_SNAPSHOT(ord) ((ord) < 0)
#define BATCH_LSN_NAME "__autocdc_lsn"
#define BATCH_ORD_NAME "__autocdc_ord"

/* A column autocdc defines: its name and type. */
typedef struct StateColumnDef
{
	const char *name;
	Oid			type;
} StateColumnDef;

/*
 * The pseudo-columns of a changes() source: every event of such a flow
 * carries them after the table's columns (in the batch, and for its
 * expressions), deletes and truncates included.
 */
typedef enum PseudoColumn
{
	PSEUDO_CHANGE_TYPE,			/* text: insert, update, delete, truncate */
	PSEUDO_COMMIT_LSN,			/* pg_lsn: the commit record's position */
	PSEUDO_COMMIT_TIMESTAMP,	/* timestamptz: its commit time, raised */
	PSEUDO_NCOLUMNS
} PseudoColumn;

extern const StateColumnDef pseudo_columns[PSEUDO_NCOLUMNS];

extern int	pseudo_column_index(const char *name);
extern const char *pseudo_source_of(List *names, List *from, const char *col);
extern List *pseudo_target_columns(List *names, List *from);

/* the alias of the FROM item that gives expressions the pseudo-columns */
#define PSEUDO_ALIAS "__autocdc_change"

/*
 * The hidden state's bookkeeping columns (after the target's data columns):
 * an event's sequence, arrival position, kind and the time it was stored.
 */
typedef enum StateColumn
{
	STATE_SEQ,
	STATE_LSN,
	STATE_ORD,
	STATE_KIND,
	STATE_AT,
	STATE_NCOLUMNS
} StateColumn;

/* (the sequence's type is the flow's sequence type) */

extern const StateColumnDef state_columns[STATE_NCOLUMNS];

#define STATE_SEQ_NAME "__autocdc_seq"
#define STATE_LSN_NAME "__autocdc_lsn"
#define STATE_ORD_NAME "__autocdc_ord"
#define STATE_KIND_NAME "__autocdc_kind"
#define STATE_AT_NAME "__autocdc_at"
/* bitemporal targets' state only: the event's system sequence (its type) */
#define STATE_SYSSEQ_NAME "__autocdc_sysseq"
/*
 * targets of a flow with columns_to_update only: the columns an upsert of
 * such a flow writes (text[]; NULL: every column, as the flow's rule says)
 */
#define STATE_WRITTEN_NAME "__autocdc_written"
#define STATE_COLUMN_PREFIX "__autocdc_"

/* kinds of events (STATE_KIND) */
#define EVENT_UPSERT 'u'
#define EVENT_DELETE 'd'
#define EVENT_TRUNCATE 't'
/*
 * a snapshot row equal to its key's current target row: read only to count
 * it against the target's expectations, never stored nor applied
 */
#define EVENT_UNCHANGED '='
/*
 * a snapshot row an expectation dropped where the run would otherwise
 * rewrite its key (a first snapshot into a table holding rows, a snapshot
 * into a target change flows write): its key's rows stay as they are in the
 * run, and the truncate of the same snapshot (equal sequence and arrival
 * LSN) does not apply to the key, then or later.  Kept in the hidden state
 * beside that truncate; only the key columns are stored.
 */
#define EVENT_SPARE 's'

/*
 * A classified event row, as the classifying query returns it: the data
 * columns in hidden-state order, then these (offsets after the data).
 */
#define EVENT_SEQ 0
#define EVENT_LSN 1
#define EVENT_ORD 2
#define EVENT_KIND 3
#define EVENT_NEXTRA 4

/* the columns autocdc adds to SCD 2 targets (and bitemporal ones) */
#define SCD_START_NAME "__start_at"
#define SCD_END_NAME "__end_at"
/* and to bitemporal targets: system time */
#define SCD_SYSTEM_START_NAME "__system_start_at"
#define SCD_SYSTEM_END_NAME "__system_end_at"

/*
 * Advisory lock classes of autocdc: the fourth field of an advisory lock
 * tag, outside the 1 and 2 of PostgreSQL's pg_advisory_lock functions, so
 * that no user's advisory lock can take them.  The view autocdc.flows asks
 * autocdc_internal._lock_class() for the first.
 */
#define AUTOCDC_LOCK_RUNNING 71		/* a flow being applied: (db, flow id, 0) */
#define AUTOCDC_LOCK_SLOT 72		/* the database's slot being created: (db, 0, 0) */
#define AUTOCDC_LOCK_MOVES 73		/* moves of flows between slots: (db, 0, 0) */
#define AUTOCDC_LOCK_GRAPH 74		/* a flow being added between existing tables:
									 * (db, 0, 0), until commit */

#endif							/* AUTOCDC_LAYOUT_H */
