/*-------------------------------------------------------------------------
 *
 * worker.h
 *		The launcher and the per-database workers (entry layer).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_WORKER_H
#define AUTOCDC_WORKER_H

extern void worker_init(void);

#endif							/* AUTOCDC_WORKER_H */
