/*-------------------------------------------------------------------------
 *
 * tablekind.h
 *		Which kinds of table a flow can write and decode (base layer):
 *		ordinary and partitioned tables, and tables Citus distributes by
 *		hash; not foreign tables, nor other Citus tables.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_TABLEKIND_H
#define AUTOCDC_TABLEKIND_H

/* what a flow does with a table */
typedef enum TableUse
{
	TABLE_TARGET,				/* writes it: its target */
	TABLE_STATE,				/* writes it: the target's hidden state */
	TABLE_CHANGE_SOURCE			/* decodes its inserts (a feed, changes()) */
} TableUse;

/* a table Citus manages (tablekind_distributed) */
typedef struct CitusTable
{
	const char *kind;			/* "distributed table", "reference table"... */
	bool		hash;			/* distributed by hash of a column */
	AttrNumber	attno;			/* that column */
	int32		colocation;		/* its co-location group */
} CitusTable;

extern bool tablekind_citus_installed(void);
extern const char *tablekind_citus(Oid relid);
extern bool tablekind_distributed(Oid relid, CitusTable *ct);
extern void tablekind_check(Oid relid, TableUse use, const char *flow);

#endif							/* AUTOCDC_TABLEKIND_H */
