/*-------------------------------------------------------------------------
 *
 * settings.c
 *		The autocdc.* configuration parameters, defined when the preloaded
 *		library starts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"

#include "settings.h"

int			autocdc_decoding_work_mem = 256 * 1024; /* kB */
int			autocdc_work_mem = 128 * 1024;	/* kB */
bool		autocdc_enabled = true;
int			autocdc_naptime = 1000; /* ms */
int			autocdc_batch_size = 100000;	/* events per decoding pass */
int			autocdc_max_workers = 8;
int			autocdc_snapshot_interval = 60; /* s */
int			autocdc_run_log_retention = 7 * 24 * 60;	/* min, -1: forever */
int			autocdc_flow_time_slice = 1000; /* ms */
int			autocdc_max_lag = 64 * 1024;	/* kB of WAL */
int			autocdc_max_pass_wal = 256 * 1024;	/* kB of WAL */
int			autocdc_max_lag_age = 0;	/* ms, 0: no limit */
int			autocdc_test_pause_after_copy = 0;	/* ms */

/*
 * How a run shares autocdc.work_mem (docs/operations.md "Memory"): five eighths for
 * the touched keys and the events they hold (the fast way of folding), a
 * sixteenth for each tuplestore (a run has at most four in memory at once)
 * and an eighth for each sort or hash of its queries.  A run's peak
 * private memory then stays near autocdc.work_mem (decoding, which ends
 * before the apply begins, has autocdc.decoding_work_mem), whatever the
 * size of its transactions.
 */

/* kB one tuplestore of a run may hold in memory before spilling. */
int
settings_store_mem(void)
{
	return Max(64, autocdc_work_mem / 16);
}

/* kB for work_mem while a run's queries run. */
int
settings_query_mem(void)
{
	return Max(64, autocdc_work_mem / 8);
}

/* Bytes the touched-keys hash of a run may hold, events included. */
Size
settings_keys_mem(void)
{
	return (Size) autocdc_work_mem * 1024 / 8 * 5;
}

/* Define the parameters and reserve their prefix. */
void
settings_define(void)
{
	DefineCustomIntVariable("autocdc.decoding_work_mem",
							"Memory a run may use to decode transactions before spilling them to disk.",
							"Sets logical_decoding_work_mem while a run decodes its source.",
							&autocdc_decoding_work_mem, 256 * 1024, 64, MAX_KILOBYTES,
							PGC_USERSET, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.work_mem",
							"Memory a run may use for its batches and sorts before spilling to disk.",
							"Half holds the keys a run touches, the rest its tuplestores and the work_mem of its queries.",
							&autocdc_work_mem, 128 * 1024, 64, MAX_KILOBYTES,
							PGC_USERSET, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomBoolVariable("autocdc.enabled",
							 "Whether background workers apply continuous flows.",
							 NULL, &autocdc_enabled, true, PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.naptime",
							"Longest time a worker sleeps before it looks for new changes.",
							"Workers are also woken by every commit that wrote in their database.",
							&autocdc_naptime, 1000, 10, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.batch_size",
							"Source events a worker decodes in one pass before applying them.",
							"Passes end at a transaction boundary; 0 means no limit.",
							&autocdc_batch_size, 100000, 0, INT_MAX,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.max_workers",
							"Most databases served by autocdc workers at once.",
							"Each worker is a background worker process: max_worker_processes must leave room for them.",
							&autocdc_max_workers, 8, 0, AUTOCDC_MAX_DATABASES,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.snapshot_interval",
							"Time between two runs of a continuous snapshot flow by the worker.",
							NULL, &autocdc_snapshot_interval, 60, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.run_log_retention",
							"How long workers keep rows of autocdc.flow_runs; -1 keeps them forever.",
							NULL, &autocdc_run_log_retention, 7 * 24 * 60, -1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MIN, NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.flow_time_slice",
							"Longest time the main worker applies one flow while other flows are due.",
							"A flow that takes longer is rolled back, without error, and applied by the laggard worker without a time limit.",
							&autocdc_flow_time_slice, 1000, 10, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.max_lag",
							"How far behind the newest flow a flow may fall before it is served from the laggard slot.",
							"Paused and failing flows are served from the laggard slot too, so that they pin no WAL of the main slot.",
							&autocdc_max_lag, 64 * 1024, 1024, MAX_KILOBYTES,
							PGC_SIGHUP, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.max_pass_wal",
							"WAL the laggard worker decodes in one pass before applying it.",
							"Passes end at the first record past this much WAL; 0 means no limit.",
							&autocdc_max_pass_wal, 256 * 1024, 0, MAX_KILOBYTES,
							PGC_SIGHUP, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.max_lag_age",
							"How long a flow may be served from the laggard slot before it is set to need a resync.",
							"It then pins no WAL and no catalog_xmin; autocdc.full_refresh brings it back.  0 means no limit.",
							&autocdc_max_lag_age, 0, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.test_pause_after_copy",
							"For tests: how long the main worker pauses between copying a slot and committing the moves.",
							NULL, &autocdc_test_pause_after_copy, 0, 0, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS | GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL, NULL, NULL, NULL);
	MarkGUCPrefixReserved("autocdc");
}
