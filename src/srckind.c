/*-------------------------------------------------------------------------
 *
 * srckind.c
 *		The table of source kinds (srckind.h): finding a kind by the name
 *		autocdc.flow.source_kind stores, or by how its sources are written.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "srckind.h"

/* every source kind; the first is a plain table's (a feed) */
static const SourceKind *const source_kinds[] = {
	&srcfeed_kind,
	&srcchanges_kind,
};

#define NKINDS lengthof(source_kinds)

/* The kind stored as name (autocdc.flow.source_kind); an unknown one is an error. */
const SourceKind *
srckind_by_name(const char *name)
{
	StringInfoData known;
	int			i;

	for (i = 0; i < NKINDS; i++)
		if (strcmp(source_kinds[i]->name, name) == 0)
			return source_kinds[i];
	initStringInfo(&known);
	for (i = 0; i < NKINDS; i++)
		appendStringInfo(&known, "%s%s", i ? ", " : "", source_kinds[i]->name);
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("a flow has the unknown source kind \"%s\"", name),
			 errdetail("This library knows the source kinds %s.", known.data),
			 errhint("Install the version of autocdc that created the flow.")));
	return NULL;				/* keep the compiler quiet */
}

/* The wrapped kind whose sources are written word(table), or NULL (case-insensitive). */
const SourceKind *
srckind_by_wrapper(const char *word)
{
	int			i;

	for (i = 0; i < NKINDS; i++)
		if (source_kinds[i]->wrapped &&
			pg_strcasecmp(source_kinds[i]->name, word) == 0)
			return source_kinds[i];
	return NULL;
}

/* The kind of a source written as a table's name. */
const SourceKind *
srckind_default(void)
{
	return source_kinds[0];
}

/* The names of the kinds whose rows' changes are events (srckind.h: row_changes). */
List *
srckind_names_where_row_changes(void)
{
	List	   *names = NIL;
	int			i;

	for (i = 0; i < NKINDS; i++)
		if (source_kinds[i]->row_changes)
			names = lappend(names, (char *) source_kinds[i]->name);
	return names;
}
