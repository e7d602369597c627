/*-------------------------------------------------------------------------
 *
 * pass.h
 *		The background worker's pass over due flows (use-case layer).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_PASS_H
#define AUTOCDC_PASS_H

#include "nodes/pg_list.h"

extern bool pass_change_flows(List *names, int64 max_events);
extern void pass_snapshot_flows(List *names);

#endif							/* AUTOCDC_PASS_H */
