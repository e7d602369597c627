/*-------------------------------------------------------------------------
 *
 * util.h
 *		Helpers of the base layer: switching between autocdc and a flow's
 *		owner, pinning search_path, keeping freed memory through a run, SPI
 *		statements and cursors, and names, columns and types.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_UTIL_H
#define AUTOCDC_UTIL_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "nodes/pg_list.h"
#include "nodes/primnodes.h"
#include "storage/lockdefs.h"
#include "utils/array.h"

/* roles and search_path */
extern void become_superuser(Oid *saved_uid, int *saved_sec);
extern void become_owner(Oid owner, Oid *saved_uid, int *saved_sec);
extern void restore_user(Oid saved_uid, int saved_sec);
extern int	set_safe_search_path(void);

/* memory a run frees, kept for its reuse */
extern void memory_hold_freed(void);
extern void memory_release_freed(bool give_back);

/* SPI */
typedef void (*SpiRowFn) (HeapTuple tup, TupleDesc desc, void *arg);
typedef void (*SpiChunkFn) (void *arg);
typedef void (*SpiValuesFn) (Datum *values, bool *nulls, TupleDesc desc, void *arg);
extern void spi_exec(const char *sql, int expected);
extern void spi_foreach(const char *sql, bool read_only, SpiRowFn row_fn,
						SpiChunkFn chunk_fn, void *arg);
extern void spi_foreach_values(const char *sql, bool read_only, SpiValuesFn fn, void *arg);

/* names */
extern List *name_list_or_nil(const char *text);
extern char *parse_identifier(const char *text, const char *what);
extern List *parse_identifier_array(ArrayType *arr, const char *what);
extern List *parse_column_array(ArrayType *arr, List **from);
extern Oid	resolve_relation(const char *name, RangeVar **rv_out);
extern bool name_in_list(List *names, const char *name);
extern Datum names_to_array(List *names);
extern List *array_to_names(Datum arr);
extern Datum quoted_text_array(List *names);
extern Datum column_array(List *names, List *from);
extern char *quoted_list(List *names);
extern char *qualified_relname(Oid relid);
extern char *table_rows(Oid relid);
extern List *table_and_partitions(Oid relid, LOCKMODE lockmode);

/* One column of a relation. */
typedef struct ColInfo
{
	char	   *name;
	Oid			typid;
	int32		typmod;
	Oid			collation;
	bool		generated;
} ColInfo;

/* columns and types */
extern List *relation_columns(Oid relid);
extern Oid	relation_owner(Oid relid);
extern ColInfo *find_column(List *cols, const char *name);

/* what relation_missing_value found */
typedef enum MissingValue
{
	MISSING_NONE,				/* older rows read NULL */
	MISSING_VALUE,				/* they read the value given */
	MISSING_CONFLICT			/* partitions store different values */
} MissingValue;

extern void relation_missing_values(Oid relid, List *names, MissingValue *found,
									Datum *values);
extern MissingValue relation_missing_value(Oid relid, const char *colname, Datum *value);
extern bool relation_has_unique_key_index(Oid relid, List *keys);
extern char *column_definition(const char *name, Oid typid, int32 typmod, Oid collation);
extern Oid	type_in_schema(const char *schema, const char *name);
extern bool type_is_orderable(Oid typid);
extern Oid	flatten_type(Oid typid, int32 *typmod);
extern char *flat_type_name(Oid typid, int32 typmod);
extern bool type_stored_as(Oid typid, Oid stored);
extern Oid	type_foreign_code(Oid typid, Oid owner);
extern Oid	type_owner(Oid typid);
extern char *equality_operator(Oid typid);
extern void copy_clipped(char *dst, const char *src, int size);

#endif							/* AUTOCDC_UTIL_H */
