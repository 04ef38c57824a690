/* core/names.c - see names.h. */
#include "core/names.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

uint64_t slim__name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The slot holding `name`, or the empty slot where it would go. */
static int slot(const char *const *key, int cap, const char *name)
{
    int mask = cap - 1;
    int i = (int)(slim__name_hash(name) & (uint64_t)mask);
    while (key[i] && strcmp(key[i], name) != 0)
        i = (i + 1) & mask;
    return i;
}

int slim__names_get(const slim__names *m, const char *name)
{
    if (!m->cap || !name)
        return -1;
    int i = slot(m->key, m->cap, name);
    return m->key[i] ? m->val[i] : -1;
}

static bool grow(slim__names *m)
{
    int cap = m->cap ? 2 * m->cap : 64;
    const char **key = calloc((size_t)cap, sizeof *key);
    int *val = malloc((size_t)cap * sizeof *val);
    if (!key || !val) {
        free(key);
        free(val);
        return false;
    }
    for (int i = 0; i < m->cap; i++)
        if (m->key[i]) {
            int j = slot(key, cap, m->key[i]);
            key[j] = m->key[i];
            val[j] = m->val[i];
        }
    free(m->key);
    free(m->val);
    m->key = key;
    m->val = val;
    m->cap = cap;
    return true;
}

bool slim__names_reserve(slim__names *m, int n)
{
    while (2 * n > m->cap)
        if (!grow(m))
            return false;
    return true;
}

bool slim__names_put(slim__names *m, const char *name, int val)
{
    if (!slim__names_reserve(m, m->n + 1))
        return false;
    int i = slot(m->key, m->cap, name);
    if (!m->key[i]) {
        m->key[i] = name;
        m->n++;
    }
    m->val[i] = val;
    return true;
}

void slim__names_fini(slim__names *m)
{
    free(m->key);
    free(m->val);
    *m = (slim__names){0};
}

bool slim__in_scopes(const char *name, const char *scopes)
{
    for (const char *s = scopes; s && *s;) {
        while (*s == ',' || *s == ' ')
            s++;
        size_t len = strcspn(s, ",");
        while (len && s[len - 1] == ' ')
            len--;
        if (len && strncmp(name, s, len) == 0)
            return true;
        s += strcspn(s, ",");
    }
    return false;
}
