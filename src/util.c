/*-------------------------------------------------------------------------
 *
 * util.c
 *		Small helpers shared by the rest of autocdc: switching between the
 *		catalog owner and a flow owner, pinning search_path, and running SPI
 *		statements and cursors.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/regproc.h"

#include "autocdc.h"

/* Switch to the bootstrap superuser for catalog writes. */
void
become_superuser(Oid *saved_uid, int *saved_sec)
{
	GetUserIdAndSecContext(saved_uid, saved_sec);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   *saved_sec | SECURITY_LOCAL_USERID_CHANGE);
}

/* Switch to a flow owner, as a security-restricted operation. */
void
become_owner(Oid owner, Oid *saved_uid, int *saved_sec)
{
	GetUserIdAndSecContext(saved_uid, saved_sec);
	SetUserIdAndSecContext(owner, *saved_sec | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
}

/* Undo become_superuser / become_owner. */
void
restore_user(Oid saved_uid, int saved_sec)
{
	SetUserIdAndSecContext(saved_uid, saved_sec);
}

/*
 * Pin search_path to pg_catalog, pg_temp (turn JIT off, raise work_mem to
 * autocdc.work_mem) until the
 * returned GUC nest level is closed with AtEOXact_GUC(true, level).
 */
int
set_safe_search_path(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	/* the engine's queries are short-lived; compiling them costs more than it saves */
	(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("work_mem", psprintf("%d", Max(autocdc_work_mem, work_mem)),
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return level;
}

/*
 * The names of a possibly qualified SQL name given as text, or NIL when it
 * is not valid name syntax.
 */
List *
name_list_or_nil(const char *text)
{
	MemoryContext cxt = CurrentMemoryContext;
	List	   *volatile names = NIL;

	PG_TRY();
	{
		names = stringToQualifiedNameList(text);
	}
	PG_CATCH();
	{
		/* a syntax error of a pure parser: nothing to undo but the error */
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		names = NIL;
	}
	PG_END_TRY();
	return names;
}

/* Run one SPI statement, raising an internal error on failure. */
void
spi_exec(const char *sql, int expected)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc != expected)
		elog(ERROR, "SPI_execute failed (%d): %s", rc, sql);
}

/*
 * Run a query through a cursor, calling row_fn for every row and chunk_fn
 * (if any) after every fetched chunk, before its tuples are freed.
 */
void
spi_foreach(const char *sql, bool read_only, SpiRowFn row_fn, SpiChunkFn chunk_fn,
			void *arg)
{
	Portal		portal = SPI_cursor_open_with_args(NULL, sql, 0, NULL, NULL, NULL,
												   read_only, 0);

	for (;;)
	{
		uint64		r;

		SPI_cursor_fetch(portal, true, 10000);
		if (SPI_processed == 0)
			break;
		for (r = 0; r < SPI_processed; r++)
			row_fn(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, arg);
		if (chunk_fn)
			chunk_fn(arg);
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
}
