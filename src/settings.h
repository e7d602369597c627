/*-------------------------------------------------------------------------
 *
 * settings.h
 *		autocdc's configuration parameters (base layer).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SETTINGS_H
#define AUTOCDC_SETTINGS_H

extern int	autocdc_decoding_work_mem;
extern int	autocdc_work_mem;
extern bool autocdc_enabled;
extern int	autocdc_naptime;
extern int	autocdc_batch_size;
extern int	autocdc_max_workers;
extern int	autocdc_snapshot_interval;
extern int	autocdc_run_log_retention;
extern int	autocdc_flow_time_slice;
extern int	autocdc_max_lag;
extern int	autocdc_max_pass_wal;
extern int	autocdc_max_lag_age;
extern int	autocdc_test_pause_after_copy;

/* the most databases the worker registry serves */
#define AUTOCDC_MAX_DATABASES 1024

extern void settings_define(void);
extern int	settings_store_mem(void);
extern int	settings_query_mem(void);
extern Size settings_keys_mem(void);

#endif							/* AUTOCDC_SETTINGS_H */
