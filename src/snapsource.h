/*-------------------------------------------------------------------------
 *
 * snapsource.h
 *		The source of snapshot flows (engine layer): version functions,
 *		snapshot queries, and versions kept as text.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SNAPSOURCE_H
#define AUTOCDC_SNAPSOURCE_H

#include "catalog.h"

/* One (snapshot, version) row returned by a version function. */
typedef struct SnapVersion
{
	Oid			rel;
	Datum		version;
} SnapVersion;

extern char *snapsource_version_text(Oid vtype, Datum v);
extern Datum snapsource_version_datum(Oid vtype, const char *text);
extern int	snapsource_version_compare(Oid vtype, Datum x, Datum y);
extern Oid	snapsource_lookup(const char *signature);
extern Oid	snapsource_check_function(Oid fn, const char *what);
extern Oid	snapsource_resolve(FlowDef *flow, Oid *vtype);
extern List *snapsource_call(FlowDef *flow, Oid fn, Oid vtype, Datum last, bool lastnull);
extern void snapsource_define_queries(const char *flowname, const char *source_query,
									  const char *version_query, char **stored_source,
									  char **stored_version, Oid *vtype);
extern bool snapsource_query_version(FlowDef *flow, Datum last, bool lastnull, Datum *next);
extern Oid	snapsource_query_snapshot(FlowDef *flow, Datum version, bool with_rows);
extern void snapsource_query_done(void);

#endif							/* AUTOCDC_SNAPSOURCE_H */
