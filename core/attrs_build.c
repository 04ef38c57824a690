/* core/attrs_build.c - attribute builders (slim_attrs): what the caller
 * gives, typed values or text, kept by key until a node resolves them
 * against its op's schema (core/attrs.c). */
#include "core/attrs.h"

#include <stdlib.h>
#include <string.h>

slim_attrs *slim_attrs_new(void)
{
    return calloc(1, sizeof(slim_attrs));
}

static void given_clear(given *g)
{
    free(g->key);
    free(g->ints);
    free(g->floats);
    free(g->str);
    memset(g, 0, sizeof *g);
}

void slim_attrs_free(slim_attrs *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->n; i++)
        given_clear(&a->items[i]);
    free(a->items);
    free(a);
}

int slim__attrs_count(const slim_attrs *a)
{
    return a ? a->n : 0;
}

const char *slim__attrs_key(const slim_attrs *a, int i)
{
    return a->items[i].key;
}

/* The slot for key: replaces an earlier value of the same key. */
static given *slot(slim_attrs *a, const char *key)
{
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->items[i].key, key) == 0) {
            char *k = a->items[i].key;
            a->items[i].key = NULL;
            given_clear(&a->items[i]);
            a->items[i].key = k;
            return &a->items[i];
        }
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 8;
        given *p = realloc(a->items, (size_t)cap * sizeof *p);
        if (!p)
            return NULL;
        a->items = p;
        a->cap = cap;
    }
    given *g = &a->items[a->n];
    memset(g, 0, sizeof *g);
    g->key = strdup(key);
    if (!g->key)
        return NULL;
    a->n++;
    return g;
}

/* n values of elem bytes each, copied for key: ints or floats by kind. */
static slim_status set_values(slim_attrs *a, const char *key, const void *v, int n, size_t elem,
                              bool scalar, given_kind kind)
{
    if (!a || !key || n < 0)
        return SLIM_EINVAL;
    given *g = slot(a, key);
    if (!g)
        return SLIM_ENOMEM;
    void *copy = malloc((size_t)(n ? n : 1) * elem);
    if (!copy)
        return SLIM_ENOMEM;
    if (n)
        memcpy(copy, v, (size_t)n * elem);
    g->kind = kind;
    g->scalar = scalar;
    g->n = n;
    if (kind == GIVEN_FLOATS)
        g->floats = copy;
    else
        g->ints = copy;
    return SLIM_OK;
}

slim_status slim_attrs_set_int(slim_attrs *a, const char *key, int64_t v)
{
    return set_values(a, key, &v, 1, sizeof v, true, GIVEN_INTS);
}

slim_status slim_attrs_set_bool(slim_attrs *a, const char *key, bool v)
{
    int64_t x = v;
    return set_values(a, key, &x, 1, sizeof x, true, GIVEN_BOOL);
}

slim_status slim_attrs_set_ints(slim_attrs *a, const char *key, const int64_t *v, int n)
{
    return set_values(a, key, v, n, sizeof *v, false, GIVEN_INTS);
}

slim_status slim_attrs_set_float(slim_attrs *a, const char *key, double v)
{
    return set_values(a, key, &v, 1, sizeof v, true, GIVEN_FLOATS);
}

slim_status slim_attrs_set_floats(slim_attrs *a, const char *key, const double *v, int n)
{
    return set_values(a, key, v, n, sizeof *v, false, GIVEN_FLOATS);
}

static slim_status set_string(slim_attrs *a, const char *key, const char *v, given_kind kind)
{
    if (!a || !key || !v)
        return SLIM_EINVAL;
    given *g = slot(a, key);
    if (!g)
        return SLIM_ENOMEM;
    g->kind = kind;
    g->scalar = true;
    g->n = 1;
    g->str = strdup(v);
    return g->str ? SLIM_OK : SLIM_ENOMEM;
}

slim_status slim_attrs_set_str(slim_attrs *a, const char *key, const char *v)
{
    return set_string(a, key, v, GIVEN_STR);
}

slim_status slim_attrs_set_text(slim_attrs *a, const char *key, const char *text)
{
    return set_string(a, key, text, GIVEN_TEXT);
}

/* [s, e) without the spaces at either end, copied into a new string. */
static char *trimmed(const char *s, const char *e)
{
    while (s < e && *s == ' ')
        s++;
    while (e > s && e[-1] == ' ')
        e--;
    return strndup(s, (size_t)(e - s));
}

slim_status slim_attrs_set_list(slim_attrs *a, const char *text)
{
    for (const char *p = text; p && *p;) {
        const char *end = strchr(p, ';'), *eq = strchr(p, '=');
        if (!end)
            end = p + strlen(p);
        if (!eq || eq > end) {
            bool blank = true; /* "a=1;" and "a=1; " end with an empty part */
            for (const char *q = p; q < end; q++)
                blank &= *q == ' ';
            if (!blank)
                return SLIM_EINVAL;
        } else {
            char *k = trimmed(p, eq), *v = trimmed(eq + 1, end);
            slim_status st = !k || !v ? SLIM_ENOMEM
                             : !k[0]  ? SLIM_EINVAL
                                      : slim_attrs_set_text(a, k, v);
            free(k);
            free(v);
            if (st != SLIM_OK)
                return st;
        }
        p = *end ? end + 1 : end;
    }
    return SLIM_OK;
}
