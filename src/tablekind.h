/*-------------------------------------------------------------------------
 *
 * tablekind.h
 *		Which kinds of table a flow can write and decode (base layer):
 *		ordinary and partitioned tables whose rows a run can address, not
 *		foreign or Citus tables.
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

extern const char *tablekind_citus(Oid relid);
extern void tablekind_check(Oid relid, TableUse use, const char *flow);

#endif							/* AUTOCDC_TABLEKIND_H */
