/*-------------------------------------------------------------------------
 *
 * layout.c
 *		The hidden state's bookkeeping columns and the pseudo-columns of
 *		changes() sources (see layout.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"

#include "layout.h"
#include "util.h"

const StateColumnDef state_columns[STATE_NCOLUMNS] = {
	[STATE_SEQ] = {STATE_SEQ_NAME, InvalidOid},
	[STATE_LSN] = {STATE_LSN_NAME, LSNOID},
	[STATE_ORD] = {STATE_ORD_NAME, INT8OID},
	[STATE_KIND] = {STATE_KIND_NAME, CHAROID},
	[STATE_AT] = {STATE_AT_NAME, TIMESTAMPTZOID},
};

const StateColumnDef pseudo_columns[PSEUDO_NCOLUMNS] = {
	[PSEUDO_CHANGE_TYPE] = {"_change_type", TEXTOID},
	[PSEUDO_COMMIT_LSN] = {"_commit_lsn", LSNOID},
	[PSEUDO_COMMIT_TIMESTAMP] = {"_commit_timestamp", TIMESTAMPTZOID},
};

/* The pseudo-column called name (PseudoColumn), or -1. */
int
pseudo_column_index(const char *name)
{
	int			i;

	for (i = 0; i < PSEUDO_NCOLUMNS; i++)
		if (strcmp(pseudo_columns[i].name, name) == 0)
			return i;
	return -1;
}

/*
 * A changes() flow's column_list (names, and what each is taken from, as
 * parse_column_array gives them): the pseudo-column that target column col
 * is taken from, or NULL when col is not one of them.
 */
const char *
pseudo_source_of(List *names, List *from, const char *col)
{
	ListCell   *lc,
			   *lf;

	forboth(lc, names, lf, from)
		if (strcmp(lfirst(lc), col) == 0)
			return pseudo_column_index(lfirst(lf)) >= 0 ? lfirst(lf) : NULL;
	return NULL;
}

/*
 * The target columns a column_list takes from pseudo-columns (ColInfo, in
 * list order), typed as the pseudo-columns are.
 */
List *
pseudo_target_columns(List *names, List *from)
{
	List	   *result = NIL;
	ListCell   *lc,
			   *lf;

	forboth(lc, names, lf, from)
	{
		int			p = pseudo_column_index(lfirst(lf));
		ColInfo    *c;

		if (p < 0)
			continue;
		c = palloc0(sizeof(ColInfo));
		c->name = lfirst(lc);
		c->typid = pseudo_columns[p].type;
		c->typmod = -1;
		c->collation = c->typid == TEXTOID ? DEFAULT_COLLATION_OID : InvalidOid;
		result = lappend(result, c);
	}
	return result;
}
