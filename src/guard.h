/*-------------------------------------------------------------------------
 *
 * guard.h
 *		autocdc's ProcessUtility hook (entry layer).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_GUARD_H
#define AUTOCDC_GUARD_H

extern void guard_init(void);

#endif							/* AUTOCDC_GUARD_H */
