/* core/names.h - a string -> index map (open addressing, linear probing) so
 * that looking up a name in a graph of thousands of tensors costs O(1), not a
 * scan: building a graph stays linear in its size. Keys are borrowed: the
 * caller keeps each key string alive and unchanged while it is in the map. */
#ifndef SLIM_CORE_NAMES_H
#define SLIM_CORE_NAMES_H

#include <stdbool.h>
#include <stdint.h>

typedef struct slim__names {
    int n, cap; /* cap is 0 or a power of two, kept at least 2n */
    const char **key;
    int *val;
} slim__names;

/* FNV-1a of a name: the map's hash, and the engine's per-parameter seed. */
uint64_t slim__name_hash(const char *s);
/* The value stored under `name`, or -1. */
int slim__names_get(const slim__names *m, const char *name);
/* Make room for n entries in all; false when out of memory. */
bool slim__names_reserve(slim__names *m, int n);
/* Store `val` under `name` (replacing an existing entry); false when out of
 * memory, which cannot happen after reserving room for it. */
bool slim__names_put(slim__names *m, const char *name, int val);
void slim__names_fini(slim__names *m);

/* Whether name starts with one of the comma-separated prefixes in scopes
 * (spaces around them ignored); never for NULL or an empty list. The
 * compiler's trainable scopes and the checkpoint loader's exclusions. */
bool slim__in_scopes(const char *name, const char *scopes);

#endif
