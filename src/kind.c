/*-------------------------------------------------------------------------
 *
 * kind.c
 *		The registry of storage kinds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "kind.h"

static const StorageKind *const kinds[] = {&scd1_kind, &scd2_kind, &bitemporal_kind};

/* Every storage kind (*n of them). */
const StorageKind *const *
storage_kinds(int *n)
{
	*n = lengthof(kinds);
	return kinds;
}

/* The storage kind of a flow's SCD type code. */
const StorageKind *
storage_kind(char code)
{
	int			i;

	for (i = 0; i < (int) lengthof(kinds); i++)
		if (kinds[i]->code == code)
			return kinds[i];
	elog(ERROR, "unknown storage kind \"%c\"", code);
	return NULL;
}
