/*-------------------------------------------------------------------------
 *
 * slots.h
 *		The database's replication slots (engine layer): the main slot and
 *		the laggard slot, and moving flows between them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SLOTS_H
#define AUTOCDC_SLOTS_H

#include "access/xlogdefs.h"

#include "catalog.h"

extern char *slots_main_name(void);
extern bool slots_is_laggard(const char *name);
extern char *slots_laggard_prefix(void);
extern char *slots_laggard_name(void);
extern bool slots_invalidated(const char *name);
extern void slots_ensure_main(void);
extern void slots_drop_all(void);
extern void slots_drop_laggards(const char *keep);
extern char *slots_copy_main(void);
extern void slots_lock_moves(void);
extern void slots_confirm_held(void);
extern bool slots_positions(const char *name, XLogRecPtr *confirmed, XLogRecPtr *restart);
extern int	slots_count(void);
extern char *slots_for_flow(FlowDef *flow);

#endif							/* AUTOCDC_SLOTS_H */
