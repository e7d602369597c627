/*-------------------------------------------------------------------------
 *
 * expr.h
 *		A flow's expressions (engine layer): parsing and checking them over
 *		the source, and their stored, schema-qualified text.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_EXPR_H
#define AUTOCDC_EXPR_H

#include "nodes/pg_list.h"

/* An expression over a flow's source, analyzed. */
typedef struct ExprInfo
{
	char	   *normalized;		/* deparsed, non-catalog names qualified */
	Oid			typid;
	int32		typmod;
	Oid			collation;
	bool		reads_source;	/* reads a column of the source (not only
								 * pseudo-columns) */
	List	   *source_columns; /* the names of the source columns it reads */
	bool		is_volatile;	/* calls a volatile function */
	List	   *field_names;	/* for ROW(...): field names */
	List	   *field_types;	/* for ROW(...): Oids */
	List	   *field_typmods;
	List	   *field_colls;
} ExprInfo;

extern char *expr_from_list(Oid source, bool pseudo, const char *alias);
extern ExprInfo *expr_analyze(Oid source, bool pseudo, const char *expr, const char *what);

#endif							/* AUTOCDC_EXPR_H */
