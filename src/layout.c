/*-------------------------------------------------------------------------
 *
 * layout.c
 *		The hidden state's bookkeeping columns and the pseudo-columns of
 *		changes() sources (see layout.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"

#include "layout.h"

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
