/*-------------------------------------------------------------------------
 *
 * storage.h
 *		Targets and their hidden state as tables (engine layer): creating,
 *		checking, following a source's columns, dropping; laid out by the
 *		flow's storage kind (kind.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_STORAGE_H
#define AUTOCDC_STORAGE_H

#include "catalog.h"
#include "kind.h"
#include "util.h"

extern char *storage_state_name(int target_id);
extern Oid	storage_state_relid(int target_id);
extern char *storage_truncates_name(int target_id);
extern Oid	storage_truncates_relid(int target_id);
extern void storage_clear_state(int target_id);
extern bool storage_reserved_column(const char *name);
extern ColInfo *storage_column_type(const ColInfo *s, Oid owner, const char *srcname);
extern Oid	storage_create_target(const char *schema, const char *name, const char *srcname,
								  List *srccols, List *selected, const StorageKind *kind,
								  List *keys, Oid seqtype, Oid sysseqtype);
extern void storage_create_period_index(Oid target, Oid seqtype, char **rangetypname);
extern Oid	storage_period_range(Oid target, Oid *rangefn, bool *ended_only);
extern void storage_state_add_written(int target_id);
extern void storage_create_state(int target_id, Oid target, Oid seqtype, Oid sysseqtype,
								 List *keys);
extern void storage_check_target(Oid target, const char *name, const char *srcname,
								 List *srccols, List *selected, const StorageKind *kind,
								 Oid seqtype, Oid sysseqtype);
extern void storage_check_owner(FlowDef *flow);
extern void storage_check_partitions_owned(Oid target);
extern void storage_check_kinds(FlowDef *flow);
extern void storage_distribute_target(Oid target, const char *column, List *keys);
extern void storage_check_distributed_by(Oid target, const char *column);
extern void storage_check_distribution(int target_id, Oid target, List *keys,
									   const char *flow);
extern void storage_sync_columns(FlowDef *flow, bool refresh);
extern List *storage_bulk_begin(Oid relid, int64 nrows, bool hidden);
extern void storage_bulk_end(Oid relid, List *deferred);
extern void storage_drop(int target_id, Oid target, List *typnames, bool drop_target);

#endif							/* AUTOCDC_STORAGE_H */
