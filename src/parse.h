/*-------------------------------------------------------------------------
 *
 * parse.h
 *		Parsed statements of the statement form (parse.c, statement.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_PARSE_H
#define AUTOCDC_PARSE_H

#include "nodes/pg_list.h"

#include "srckind.h"

typedef enum AutocdcStmtKind
{
	STMT_CREATE_FLOW,
	STMT_STREAMING_TABLE,
	STMT_DROP_FLOW
} AutocdcStmtKind;

/* CONSTRAINT name EXPECT (condition) [ON VIOLATION ...] of CREATE STREAMING TABLE */
typedef struct AutocdcExpect
{
	char	   *name;
	char	   *condition;		/* source text */
	const char *action;			/* "warn", "drop" or "fail" */
} AutocdcExpect;

/* One statement; names, columns and expressions are kept as source text. */
typedef struct AutocdcStmt
{
	AutocdcStmtKind kind;
	int			location;		/* byte offset in the block */
	char	   *name;			/* flow name (NULL: the target's) */
	char	   *target;
	char	   *source;
	bool		snapshot;		/* FROM SNAPSHOT */
	char	   *source_query;	/* FROM SNAPSHOT ( query ) */
	char	   *version_query;	/* WITH VERSION ( query ) */
	const SourceKind *srckind;	/* FROM kind(...) (srckind.h), or NULL:
								 * a table */
	bool		once;
	bool		or_refresh;
	bool		if_exists;
	List	   *keys;
	bool		ignore_nulls;
	char	   *deletes;
	char	   *truncates;
	char	   *sequence_by;
	char	   *system_sequence_by;
	bool		has_column_list;
	List	   *column_list;
	List	   *except_column_list;
	char	   *scd_type;
	bool		has_track_list;
	List	   *track_list;
	List	   *track_except_list;
	bool		has_inu_list;	/* IGNORE NULL UPDATES ON ( list ) */
	List	   *inu_list;
	bool		has_inu_except; /* IGNORE NULL UPDATES ON * EXCEPT ( list ) */
	List	   *inu_except_list;
	char	   *columns_to_update;	/* COLUMNS TO UPDATE col, as written */
	char	   *column_defs;		/* CREATE STREAMING TABLE (...) */
	char	   *distributed_by; /* its DISTRIBUTED BY (col), as written */
	List	   *expectations;	/* and its AutocdcExpects */
} AutocdcStmt;

extern List *autocdc_parse_block(const char *text);

#endif							/* AUTOCDC_PARSE_H */
