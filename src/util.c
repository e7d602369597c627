/*-------------------------------------------------------------------------
 *
 * util.c
 *		Helpers of the base layer: switching between autocdc and a flow's
 *		owner, pinning search_path, keeping freed memory through a run,
 *		running SPI statements and cursors, and names, columns and types.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/tupdesc_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/scansup.h"
#include "tcop/pquery.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "settings.h"
#include "util.h"
#include "compat.h"

/* Switch to the bootstrap superuser for catalog writes. */
void
become_superuser(Oid *saved_uid, int *saved_sec)
{
	GetUserIdAndSecContext(saved_uid, saved_sec);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   *saved_sec | SECURITY_LOCAL_USERID_CHANGE);
}

/* Switch to a flow owner, as a security-restricted operation. */
void
become_owner(Oid owner, Oid *saved_uid, int *saved_sec)
{
	GetUserIdAndSecContext(saved_uid, saved_sec);
	SetUserIdAndSecContext(owner, *saved_sec | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
}

/* Undo become_superuser / become_owner. */
void
restore_user(Oid saved_uid, int saved_sec)
{
	SetUserIdAndSecContext(saved_uid, saved_sec);
}

/*
 * Pin search_path to pg_catalog, pg_temp (turn JIT off, give queries their
 * share of autocdc.work_mem) until the returned GUC nest level is closed
 * with AtEOXact_GUC(true, level).
 */
int
set_safe_search_path(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	/* the engine's queries are short-lived; compiling them costs more than it saves */
	(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("work_mem", psprintf("%d", settings_query_mem()),
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("hash_mem_multiplier", "1",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return level;
}

/*
 * glibc gives memory back to the kernel as soon as more than its trim
 * threshold lies free at the top of the heap, and maps each allocation
 * above its mmap threshold on its own, unmapping it when it is freed; both
 * start at 128 kB and rise only once a large mapped block has been freed.
 * A run allocates and frees tens of megabytes in turn (decoding's buffers,
 * the batch, the touched keys, the fold's rows), and each page given back
 * and taken again costs a page fault when it is next touched: a third of a
 * large run's capture on a virtual machine.  While a run (or the worker's
 * passes) lasts, freed memory is kept for reuse, up to the memory a run may
 * use; afterwards the thresholds are the highest glibc's own rule sets (32
 * MB on 64-bit, and trimming above twice that), so that a session's next
 * run finds its memory as glibc would have left it.  Other C libraries:
 * nothing.
 */
#ifdef __GLIBC__
#define MEMORY_MMAP_MAX (4 * 1024 * 1024 * sizeof(long))

static bool memory_held = false;
#endif

/* Keep memory freed from here on for reuse, until memory_release_freed. */
void
memory_hold_freed(void)
{
#ifdef __GLIBC__
	if (!memory_held)
	{
		int64		budget = ((int64) autocdc_work_mem + autocdc_decoding_work_mem) * 1024;

		(void) mallopt(M_MMAP_THRESHOLD, MEMORY_MMAP_MAX);
		(void) mallopt(M_TRIM_THRESHOLD, (int) Min(budget, INT_MAX));
		memory_held = true;
	}
#endif
}

/*
 * Trim again as glibc would after freeing a large block; give_back: and
 * return every free page now (a worker about to sleep, once a naptime).
 */
void
memory_release_freed(bool give_back)
{
#ifdef __GLIBC__
	if (memory_held)
	{
		(void) mallopt(M_TRIM_THRESHOLD, 2 * MEMORY_MMAP_MAX);
		memory_held = false;
	}
	if (give_back)
		(void) malloc_trim(0);
#endif
}

/*
 * The names of a possibly qualified SQL name given as text, or NIL when it
 * is not valid name syntax.
 */
List *
name_list_or_nil(const char *text)
{
	MemoryContext cxt = CurrentMemoryContext;
	List	   *volatile names = NIL;

	PG_TRY();
	{
		names = compat_stringToQualifiedNameList(text);
	}
	PG_CATCH();
	{
		/* a syntax error of a pure parser: nothing to undo but the error */
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		names = NIL;
	}
	PG_END_TRY();
	return names;
}

/* Run one SPI statement, raising an internal error on failure. */
void
spi_exec(const char *sql, int expected)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc != expected)
		elog(ERROR, "SPI_execute failed (%d): %s", rc, sql);
}

/*
 * Run a query through a cursor, calling row_fn for every row and chunk_fn
 * (if any) after every fetched chunk, before its tuples are freed.
 */
void
spi_foreach(const char *sql, bool read_only, SpiRowFn row_fn, SpiChunkFn chunk_fn,
			void *arg)
{
	Portal		portal = SPI_cursor_open_with_args(NULL, sql, 0, NULL, NULL, NULL,
												   read_only, 0);

	for (;;)
	{
		uint64		r;

		SPI_cursor_fetch(portal, true, 10000);
		if (SPI_processed == 0)
			break;
		for (r = 0; r < SPI_processed; r++)
			row_fn(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, arg);
		if (chunk_fn)
			chunk_fn(arg);
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
}

/* A DestReceiver handing each row's values to a SpiValuesFn. */
typedef struct ValuesReceiver
{
	DestReceiver pub;
	SpiValuesFn fn;
	void	   *arg;
	MemoryContext cxt;			/* where fn runs: SPI's procedure context, as
								 * for spi_foreach's row_fn */
} ValuesReceiver;

static bool
values_receive(TupleTableSlot *slot, DestReceiver *self)
{
	ValuesReceiver *r = (ValuesReceiver *) self;
	MemoryContext old = MemoryContextSwitchTo(r->cxt);

	slot_getallattrs(slot);
	r->fn(slot->tts_values, slot->tts_isnull, slot->tts_tupleDescriptor, r->arg);
	MemoryContextSwitchTo(old);
	return true;
}

static void
values_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

static void
values_nothing(DestReceiver *self)
{
}

/*
 * Run a query through a cursor, calling fn with every row's values as the
 * executor makes them: no tuple is formed or stored for the caller, so the
 * values last only until fn returns.  For queries of many rows whose values
 * the caller copies or consumes at once.  (The portal is run with our own
 * receiver, as SPI_cursor_fetch runs it with SPI's.)  fn runs inside the
 * executor, under the portal's resource owner: it must not keep resources
 * (tuplestores it creates, buffer pins) past the row.
 */
void
spi_foreach_values(const char *sql, bool read_only, SpiValuesFn fn, void *arg)
{
	ValuesReceiver r;
	Portal		portal = SPI_cursor_open_with_args(NULL, sql, 0, NULL, NULL, NULL,
												   read_only, 0);

	memset(&r, 0, sizeof(r));
	r.pub.receiveSlot = values_receive;
	r.pub.rStartup = values_startup;
	r.pub.rShutdown = values_nothing;
	r.pub.rDestroy = values_nothing;
	r.pub.mydest = DestNone;
	r.fn = fn;
	r.arg = arg;
	r.cxt = CurrentMemoryContext;
	(void) PortalRunFetch(portal, FETCH_FORWARD, FETCH_ALL, &r.pub);
	SPI_cursor_close(portal);
}

/* ----------------------------------------------------------------
 * names, columns and types
 * ----------------------------------------------------------------
 */

/* Parse one SQL identifier given as text ("userId" keeps case, userId folds). */
char *
parse_identifier(const char *text, const char *what)
{
	List	   *names = name_list_or_nil(text);

	if (list_length(names) > 1 && strcmp(what, "flow") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("flow name \"%s\" is schema-qualified", text),
				 errdetail("Flows belong to no schema; a flow's target may be in any schema."),
				 errhint("Name the flow \"%s\": the default name of a flow is its target's name without the schema.",
						 strVal(llast(names)))));
	if (list_length(names) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid %s name \"%s\"", what, text),
				 errhint("Give a single %s name, double-quoted if it has upper-case letters.",
						 what)));
	return strVal(linitial(names));
}

/*
 * Split one entry of a column list: "name", or with renames allowed
 * "name AS alias" (each an SQL identifier, double-quoted or not).  Returns
 * the name; *alias gets the alias, or NULL.
 */
static char *
split_column_entry(const char *text, const char *what, bool renames, char **alias)
{
	const char *p = text;
	const char *start;
	bool		inquote = false;
	char	   *first;

	*alias = NULL;
	while (scanner_isspace(*p))
		p++;
	start = p;
	for (; *p && (inquote || !scanner_isspace(*p)); p++)
		if (*p == '"')
			inquote = !inquote;
	first = pnstrdup(start, p - start);
	while (scanner_isspace(*p))
		p++;
	if (*p == '\0')
		return parse_identifier(first, what);
	if (!renames || pg_strncasecmp(p, "as", 2) != 0 || !scanner_isspace(p[2]))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid %s name \"%s\"", what, text),
				 renames ?
				 errhint("Give a column name, or a pseudo-column of changes() and its target column's name as '_commit_timestamp AS changed_at'.") :
				 errhint("Give a single %s name, double-quoted if it has upper-case letters.",
						 what)));
	*alias = parse_identifier(p + 3, what);
	return parse_identifier(first, what);
}

/*
 * The entries of a text[] list of names; a NULL array gives NIL.  With
 * from (renames allowed: "name AS alias"), the result lists the names the
 * entries give (aliases) and *from, in the same order, what each is taken
 * from.  A name may appear once.
 */
static List *
parse_names(ArrayType *arr, const char *what, List **from)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n,
				i;
	List	   *result = NIL;

	if (from)
		*from = NIL;
	if (arr == NULL)
		return NIL;
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s list must be a one-dimensional array", what),
				 errhint("Give the names as '{a, b}'.")));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (i = 0; i < n; i++)
	{
		char	   *name;
		char	   *alias;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s list must not contain null", what)));
		name = split_column_entry(TextDatumGetCString(elems[i]), what, from != NULL, &alias);
		if (from)
			*from = lappend(*from, name);
		if (alias)
			name = alias;
		if (name_in_list(result, name))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("column \"%s\" appears more than once in the %s list",
							name, what)));
		result = lappend(result, name);
	}
	return result;
}

/* Parse a text[] of identifiers into a list of names; NULL array gives NIL. */
List *
parse_identifier_array(ArrayType *arr, const char *what)
{
	return parse_names(arr, what, NULL);
}

/*
 * Parse a column_list, whose entries may rename ("_commit_timestamp AS
 * changed_at"): returns the target's column names, and *from what each is
 * taken from (the same name unless renamed).
 */
List *
parse_column_array(ArrayType *arr, List **from)
{
	return parse_names(arr, "column", from);
}

/* Does a list of names contain name? */
bool
name_in_list(List *names, const char *name)
{
	ListCell   *lc;

	foreach(lc, names)
		if (strcmp((char *) lfirst(lc), name) == 0)
			return true;
	return false;
}

/* Build a name[] datum from a list of C strings. */
Datum
names_to_array(List *names)
{
	Datum	   *d = palloc(sizeof(Datum) * (list_length(names) + 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, names)
		d[i++] = DirectFunctionCall1(namein, CStringGetDatum(lfirst(lc)));
	return PointerGetDatum(construct_array(d, i, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR));
}

/* Read a name[] datum into a list of C strings. */
List *
array_to_names(Datum arr)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n,
				i;
	List	   *result = NIL;

	deconstruct_array(DatumGetArrayTypeP(arr), NAMEOID, NAMEDATALEN, false,
					  TYPALIGN_CHAR, &elems, &nulls, &n);
	for (i = 0; i < n; i++)
		result = lappend(result, pstrdup(NameStr(*DatumGetName(elems[i]))));
	return result;
}

/* The user columns of a relation, in attribute order. */
List *
relation_columns(Oid relid)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *result = NIL;
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		ColInfo    *c;

		if (att->attisdropped)
			continue;
		c = palloc(sizeof(ColInfo));
		c->name = pstrdup(NameStr(att->attname));
		c->typid = att->atttypid;
		c->typmod = att->atttypmod;
		c->collation = att->attcollation;
		c->generated = att->attgenerated != '\0';
		result = lappend(result, c);
	}
	relation_close(rel, AccessShareLock);
	return result;
}

/*
 * The values PostgreSQL stores for the rows of relid that predate its
 * columns names (pg_attribute.attmissingval, set by ADD COLUMN with a
 * non-volatile default): found[i] says what column i has, and values[i]
 * holds a copy of its value.  For a partitioned relid, the value its
 * leaves store (a leaf that stores none has no rows older than the
 * column, or holds the value in them); MISSING_CONFLICT: leaves store
 * different values.  A leaf without stored values costs one relcache
 * lookup.
 */
void
relation_missing_values(Oid relid, List *names, MissingValue *found, Datum *values)
{
	List	   *rels = table_and_partitions(relid, NoLock);
	ListCell   *lc;

	memset(found, 0, sizeof(MissingValue) * list_length(names));	/* MISSING_NONE */
	foreach(lc, rels)
	{
		Relation	rel;
		TupleDesc	desc;
		ListCell   *nc;
		int			i = 0;

		if (get_rel_relkind(lfirst_oid(lc)) != RELKIND_RELATION)
			continue;
		rel = relation_open(lfirst_oid(lc), AccessShareLock);
		desc = RelationGetDescr(rel);
		foreach(nc, names)
		{
			AttrNumber	att;
			Form_pg_attribute form;
			Datum		v;

			i++;
			if (desc->constr == NULL || desc->constr->missing == NULL)
				break;
			att = get_attnum(lfirst_oid(lc), lfirst(nc));
			if (att <= 0 || !desc->constr->missing[att - 1].am_present)
				continue;
			form = TupleDescAttr(desc, att - 1);
			v = desc->constr->missing[att - 1].am_value;
			if (found[i - 1] == MISSING_NONE)
			{
				values[i - 1] = datumCopy(v, form->attbyval, form->attlen);
				found[i - 1] = MISSING_VALUE;
			}
			else if (found[i - 1] == MISSING_VALUE &&
					 !datumIsEqual(values[i - 1], v, form->attbyval, form->attlen))
				found[i - 1] = MISSING_CONFLICT;
		}
		relation_close(rel, AccessShareLock);
	}
}

/* relation_missing_values of one column: what it found, the value in *value. */
MissingValue
relation_missing_value(Oid relid, const char *colname, Datum *value)
{
	MissingValue found;

	relation_missing_values(relid, list_make1(pstrdup(colname)), &found, value);
	return found;
}

/*
 * Does relid have a unique, immediate (not deferrable), valid, non-partial
 * index whose columns (no expressions) are all among keys?  Then a key
 * names at most one of its rows.
 */
bool
relation_has_unique_key_index(Oid relid, List *keys)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	bool		found = false;
	ListCell   *lc;

	foreach(lc, indexes)
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index ix;
		bool		ok;
		int			i;

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for index %u", lfirst_oid(lc));
		ix = (Form_pg_index) GETSTRUCT(tup);
		ok = ix->indisunique && ix->indimmediate && ix->indisvalid &&
			heap_attisnull(tup, Anum_pg_index_indpred, NULL);
		for (i = 0; ok && i < ix->indnkeyatts; i++)
		{
			AttrNumber	att = ix->indkey.values[i];

			ok = att > 0 && name_in_list(keys, get_attname(relid, att, false));
		}
		ReleaseSysCache(tup);
		if (ok)
		{
			found = true;
			break;
		}
	}
	list_free(indexes);
	relation_close(rel, AccessShareLock);
	return found;
}

/* The owner of a relation. */
Oid
relation_owner(Oid relid)
{
	HeapTuple	tp = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			result;

	if (!HeapTupleIsValid(tp))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	result = ((Form_pg_class) GETSTRUCT(tp))->relowner;
	ReleaseSysCache(tp);
	return result;
}

/* Find a column by name. */
ColInfo *
find_column(List *cols, const char *name)
{
	ListCell   *lc;

	foreach(lc, cols)
	{
		ColInfo    *c = lfirst(lc);

		if (strcmp(c->name, name) == 0)
			return c;
	}
	return NULL;
}

/* Column definition text "name type [COLLATE x]". */
char *
column_definition(const char *name, Oid typid, int32 typmod, Oid collation)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "%s %s", quote_identifier(name),
					 format_type_with_typemod(typid, typmod));
	if (OidIsValid(collation) && collation != get_typcollation(typid))
		appendStringInfo(&buf, " COLLATE %s", generate_collation_name(collation));
	return buf.data;
}

/* Comma-separated quoted identifiers. */
char *
quoted_list(List *names)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, names)
		appendStringInfo(&buf, "%s%s", buf.len ? ", " : "",
						 quote_identifier(lfirst(lc)));
	return buf.data;
}

/* The type named name in schema, or InvalidOid. */
Oid
type_in_schema(const char *schema, const char *name)
{
	return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum(name),
						   ObjectIdGetDatum(get_namespace_oid(schema, false)));
}

/*
 * A column type as autocdc stores it in targets and hidden state: domains
 * flattened to their base types, also as elements of arrays, so that no
 * domain's DEFAULT or CHECK (its owner's code) is evaluated when a column
 * is added or a row written.  *typmod is the column's, and becomes the
 * domain's when a domain is flattened.  An array of a domain over an array
 * has no flat form (PostgreSQL has no arrays of arrays): error.
 */
Oid
flatten_type(Oid typid, int32 *typmod)
{
	Oid			elem;

	if (get_typtype(typid) == TYPTYPE_DOMAIN)
	{
		int32		basemod = -1;
		Oid			base = getBaseTypeAndTypmod(typid, &basemod);

		*typmod = basemod;
		return flatten_type(base, typmod);	/* a domain over an array of one */
	}
	elem = get_element_type(typid);
	if (OidIsValid(elem) && get_typtype(elem) == TYPTYPE_DOMAIN)
	{
		int32		elemmod = -1;
		Oid			flat = flatten_type(elem, &elemmod);
		Oid			array = get_array_type(flat);

		if (!OidIsValid(array))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("type %s cannot be stored without its domain", format_type_be(typid)),
					 errdetail("autocdc stores domains as their base types, and type %s has no array type.",
							   format_type_be(flat)),
					 errhint("Leave the column out of the flow with except_column_list.")));
		if (*typmod == -1)
			*typmod = elemmod;
		return array;
	}
	return typid;
}

/*
 * The name of a type as autocdc stores it (flatten_type), for a NULL read
 * for a column of type typid: a cast to a domain evaluates its CHECK,
 * another role's code, and the value is NULL whatever its type.
 */
char *
flat_type_name(Oid typid, int32 typmod)
{
	Oid			flat = flatten_type(typid, &typmod);

	return format_type_with_typemod(flat, typmod);
}

/* Is a value of type typid stored as type stored (itself, or flattened)? */
bool
type_stored_as(Oid typid, Oid stored)
{
	int32		typmod = -1;

	return typid == stored || flatten_type(typid, &typmod) == stored;
}

/* A type's kind and owner, and the types it is made of (type_foreign_code). */
static List *
type_parts(Oid typid, char *typtype, Oid *owner)
{
	HeapTuple	tp = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	Form_pg_type t;
	List	   *parts = NIL;
	Oid			elem = get_element_type(typid);

	if (!HeapTupleIsValid(tp))
		elog(ERROR, "cache lookup failed for type %u", typid);
	t = (Form_pg_type) GETSTRUCT(tp);
	*typtype = t->typtype;
	*owner = t->typowner;
	if (t->typtype == TYPTYPE_DOMAIN)
		parts = list_make1_oid(t->typbasetype);
	ReleaseSysCache(tp);
	if (OidIsValid(elem))
		parts = lappend_oid(parts, elem);
	else if (*typtype == TYPTYPE_RANGE)
		parts = lappend_oid(parts, get_range_subtype(typid));
	else if (*typtype == TYPTYPE_MULTIRANGE)
		parts = lappend_oid(parts, get_multirange_range(typid));
	else if (*typtype == TYPTYPE_COMPOSITE)
	{
		TupleDesc	desc = lookup_rowtype_tupdesc(typid, -1);
		int			i;

		for (i = 0; i < desc->natts; i++)
			if (!TupleDescAttr(desc, i)->attisdropped)
				parts = lappend_oid(parts, TupleDescAttr(desc, i)->atttypid);
		ReleaseTupleDesc(desc);
	}
	return parts;
}

/* Is there a domain within a type (itself, its elements, fields or subtype)? */
static bool
type_carries_domain(Oid typid)
{
	char		typtype;
	Oid			owner;
	ListCell   *lc;

	foreach(lc, type_parts(typid, &typtype, &owner))
		if (type_carries_domain(lfirst_oid(lc)))
			return true;
	return typtype == TYPTYPE_DOMAIN;
}

/*
 * The first type within typid (itself, its elements, fields, subtype or
 * base type, recursively) that would run code of a role other than owner
 * when values are made of it: a domain of another role's, or a composite or
 * range type of another role's that carries a domain (its owner can change
 * what is inside).  InvalidOid when there is none.  A superuser's types
 * count as the owner's: their code could do nothing its owner cannot.
 */
Oid
type_foreign_code(Oid typid, Oid owner)
{
	char		typtype;
	Oid			typowner;
	List	   *parts = type_parts(typid, &typtype, &typowner);
	ListCell   *lc;
	bool		foreign = typowner != owner && !superuser_arg(typowner);

	if (foreign && typtype == TYPTYPE_DOMAIN)
		return typid;
	if (foreign && (typtype == TYPTYPE_COMPOSITE || typtype == TYPTYPE_RANGE ||
					typtype == TYPTYPE_MULTIRANGE) && type_carries_domain(typid))
		return typid;
	foreach(lc, parts)
	{
		Oid			inner = type_foreign_code(lfirst_oid(lc), owner);

		if (OidIsValid(inner))
			return inner;
	}
	return InvalidOid;
}

/* The owner of a type. */
Oid
type_owner(Oid typid)
{
	char		typtype;
	Oid			owner;

	(void) type_parts(typid, &typtype, &owner);
	return owner;
}

/* Has the type a default btree ordering? */
bool
type_is_orderable(Oid typid)
{
	TypeCacheEntry *tc = lookup_type_cache(typid, TYPECACHE_CMP_PROC);

	return OidIsValid(tc->cmp_proc);
}

/* Resolve a relation name given as text; InvalidOid if missing. */
Oid
resolve_relation(const char *name, RangeVar **rv_out)
{
	List	   *names = name_list_or_nil(name);
	RangeVar   *rv;

	if (names == NIL || list_length(names) > 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid relation name \"%s\"", name)));
	rv = makeRangeVarFromNameList(names);
	if (rv_out)
		*rv_out = rv;
	return RangeVarGetRelid(rv, NoLock, true);
}

/* Qualified name of a relation. */
char *
qualified_relname(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/*
 * relid and, for a partitioned table, its partitions at every level (locked
 * in lockmode); an ordinary table's inheritance children are not included.
 */
List *
table_and_partitions(Oid relid, LOCKMODE lockmode)
{
	if (get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
		return find_all_inheritors(relid, lockmode, NULL);
	return list_make1_oid(relid);
}

/*
 * A table's own rows in a FROM clause: "ONLY schema.name" for an ordinary
 * table (not its inheritance children, which a flow does not write),
 * "schema.name" for a partitioned table (the rows of its partitions).
 */
char *
table_rows(Oid relid)
{
	if (get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
		return qualified_relname(relid);
	return psprintf("ONLY %s", qualified_relname(relid));
}

/* "OPERATOR(schema.=)" for the default equality of a type. */
char *
equality_operator(Oid typid)
{
	TypeCacheEntry *tc = lookup_type_cache(typid, TYPECACHE_EQ_OPR);
	HeapTuple	tp;
	Oid			nsp;

	if (!OidIsValid(tc->eq_opr))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("key type %s has no default equality operator", format_type_be(typid))));

	tp = SearchSysCache1(OPEROID, ObjectIdGetDatum(tc->eq_opr));
	if (!HeapTupleIsValid(tp))
		elog(ERROR, "cache lookup failed for operator %u", tc->eq_opr);
	nsp = ((Form_pg_operator) GETSTRUCT(tp))->oprnamespace;
	ReleaseSysCache(tp);
	return psprintf("OPERATOR(%s.=)", quote_identifier(get_namespace_name(nsp)));
}

/* A text[] of quoted identifiers (what parse_identifier_array reads back). */
Datum
quoted_text_array(List *names)
{
	Datum	   *d = palloc(sizeof(Datum) * (list_length(names) + 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, names)
		d[i++] = CStringGetTextDatum(quote_identifier(lfirst(lc)));
	return PointerGetDatum(construct_array(d, i, TEXTOID, -1, false, TYPALIGN_INT));
}

/* A column_list as text[] (what parse_column_array reads back). */
Datum
column_array(List *names, List *from)
{
	Datum	   *d = palloc(sizeof(Datum) * (list_length(names) + 1));
	int			i = 0;
	ListCell   *lc,
			   *lf;

	forboth(lc, names, lf, from)
	{
		const char *q = quote_identifier(lfirst(lc));

		if (strcmp(lfirst(lc), lfirst(lf)) != 0)
			q = psprintf("%s AS %s", quote_identifier(lfirst(lf)), q);
		d[i++] = CStringGetTextDatum(q);
	}
	return PointerGetDatum(construct_array(d, i, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * Copy text into a fixed buffer of size bytes, cut at a character boundary
 * so that what is kept is valid in the server encoding ("" for NULL).
 */
void
copy_clipped(char *dst, const char *src, int size)
{
	int			len = src ? pg_mbcliplen(src, strlen(src), size - 1) : 0;

	memcpy(dst, src ? src : "", len);
	dst[len] = '\0';
}
