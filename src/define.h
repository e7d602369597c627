/*-------------------------------------------------------------------------
 *
 * define.h
 *		Defining and dropping flows (use-case layer).  The function form,
 *		create_snapshot_flow and the statement form all fill a FlowSpec and
 *		hand it to one validate-and-create path.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_DEFINE_H
#define AUTOCDC_DEFINE_H

#include "utils/array.h"

#include "catalog.h"

/* A flow as the user declares it (names and expressions as given). */
typedef struct FlowSpec
{
	char		kind;			/* FLOW_CDC or FLOW_SNAPSHOT */
	const char *target;
	const char *source;			/* NULL: a snapshot flow's version function */
	ArrayType  *keys;			/* text[] of identifiers */
	const char *sequence_by;	/* change flows */
	bool		ignore_nulls;
	const char *deletes;
	const char *truncates;
	ArrayType  *column_list;	/* NULL: not given */
	ArrayType  *except_column_list;
	const char *scd;			/* '1', '2', 'bitemporal' as given */
	ArrayType  *track_list;
	ArrayType  *track_except_list;
	const char *name;			/* NULL: the target's relation name */
	bool		once;
	const char *system_sequence_by;
	bool		continuous;
	const char *tombstone_retention;	/* interval text, or NULL */
	ArrayType  *inu_list;		/* ignore_null_updates_column_list */
	ArrayType  *inu_except_list;	/* ignore_null_updates_except_column_list */
	const char *columns_to_update;	/* a source column, or NULL */
	const char *distributed_by;	/* Citus distributes the target by this key */
	const char *source_function;	/* snapshot flows: 'f(bigint)' */
	const char *source_query;	/* snapshot flows: a SELECT */
	const char *version_query;	/* with source_query: the next version */
	bool		from_statement; /* the statement form: hints in its syntax */
} FlowSpec;

extern char *define_flow(FlowSpec *spec);
extern char *define_snapshot_flow(FlowSpec *spec);
extern void define_snapshot_target(FlowDef *flow, Oid snapshot, Oid vtype);
extern void define_drop_flow(FlowDef *flow, bool drop_target);
extern void define_set_expectation(Oid target, const char *name, const char *condition,
								   const char *action);
extern void define_drop_expectation(Oid target, const char *name);
extern void define_create_as_of_index(Oid target);

#endif							/* AUTOCDC_DEFINE_H */
