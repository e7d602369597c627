/*-------------------------------------------------------------------------
 *
 * lanes.h
 *		Which slot serves which flow: moves between the main slot and the
 *		laggard slot (use-case layer).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_LANES_H
#define AUTOCDC_LANES_H

#include "nodes/pg_list.h"

extern bool lanes_rebalance(List *slow);
extern void lanes_rebalance_for_run(void);

#endif							/* AUTOCDC_LANES_H */
