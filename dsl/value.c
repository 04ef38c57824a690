/*
 * dsl/value.c - the values of the model language (dval) and the environments
 * of variables they live in; plain YAML scalars as values. The expressions
 * that compute them are in expr.c.
 */
#include "dsl/dsl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- environments ------------------------------------------------------------ */

env *env_new(dsl_arena *a, const env *parent)
{
    env *e = dsl_alloc(a, sizeof *e);
    if (e)
        e->parent = parent;
    return e;
}

slim_status env_set(dsl_arena *a, env *e, const char *name, const dval *v, slim_error *err)
{
    for (int i = 0; i < e->n; i++)
        if (strcmp(e->vars[i].name, name) == 0) {
            e->vars[i].val = *v;
            return SLIM_OK;
        }
    if (e->n == e->cap) {
        int cap = e->cap ? 2 * e->cap : 8;
        env_var *vars = dsl_alloc(a, (size_t)cap * sizeof *vars);
        if (!vars)
            return dsl_fail(err, v->at, SLIM_ENOMEM, "out of memory");
        if (e->n)
            memcpy(vars, e->vars, (size_t)e->n * sizeof *vars);
        e->vars = vars;
        e->cap = cap;
    }
    e->vars[e->n].name = name;
    e->vars[e->n].val = *v;
    e->n++;
    return SLIM_OK;
}

const dval *env_get(const env *e, const char *name)
{
    for (; e; e = e->parent)
        for (int i = e->n - 1; i >= 0; i--)
            if (strcmp(e->vars[i].name, name) == 0)
                return &e->vars[i].val;
    return NULL;
}

/* ---- plain values ------------------------------------------------------------ */

const char *dval_kind_str(const dval *v)
{
    switch (v->kind) {
    case DV_NULL: return "null";
    case DV_BOOL: return "a boolean";
    case DV_INT: return "an integer";
    case DV_FLOAT: return "a number";
    case DV_STR: return "text";
    case DV_LIST: return "a list";
    case DV_MAP: return "a mapping";
    case DV_FUNC: return "a function";
    }
    return "a value";
}

bool dval_is_number(const dval *v)
{
    return v->kind == DV_INT || v->kind == DV_FLOAT;
}

double dval_num(const dval *v)
{
    return v->kind == DV_INT ? (double)v->i : v->kind == DV_FLOAT ? v->f : 0;
}

static void strcat_buf(char *buf, size_t n, size_t *used, const char *s)
{
    size_t l = strlen(s);
    if (*used + l + 1 > n)
        l = *used + 1 < n ? n - *used - 1 : 0;
    memcpy(buf + *used, s, l);
    *used += l;
    buf[*used] = 0;
}

static void val_text(const dval *v, char *buf, size_t n, size_t *used, int depth)
{
    char tmp[64];
    switch (v->kind) {
    case DV_NULL: strcat_buf(buf, n, used, "null"); break;
    case DV_BOOL: strcat_buf(buf, n, used, v->b ? "true" : "false"); break;
    case DV_INT:
        snprintf(tmp, sizeof tmp, "%lld", (long long)v->i);
        strcat_buf(buf, n, used, tmp);
        break;
    case DV_FLOAT:
        snprintf(tmp, sizeof tmp, "%.17g", v->f);
        /* shortest text that reads back the same */
        for (int prec = 1; prec <= 17; prec++) {
            char t2[64];
            snprintf(t2, sizeof t2, "%.*g", prec, v->f);
            if (strtod(t2, NULL) == v->f) {
                snprintf(tmp, sizeof tmp, "%s", t2);
                break;
            }
        }
        strcat_buf(buf, n, used, tmp);
        break;
    case DV_STR: strcat_buf(buf, n, used, v->s); break;
    case DV_LIST:
        strcat_buf(buf, n, used, "[");
        for (int i = 0; i < v->n && depth < 8; i++) {
            if (i)
                strcat_buf(buf, n, used, ", ");
            val_text(&v->items[i], buf, n, used, depth + 1);
        }
        strcat_buf(buf, n, used, "]");
        break;
    case DV_MAP: strcat_buf(buf, n, used, "{...}"); break;
    case DV_FUNC: strcat_buf(buf, n, used, "<function>"); break;
    }
}

const char *dval_str(dsl_arena *a, const dval *v)
{
    char buf[512];
    size_t used = 0;
    buf[0] = 0;
    val_text(v, buf, sizeof buf, &used, 0);
    const char *s = dsl_strdup(a, buf);
    return s ? s : "?";
}

bool dsl_parse_int(const char *s, int64_t *out, bool *overflow)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!isdigit((unsigned char)*p))
        return false;
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q))
            return false;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    *overflow = errno == ERANGE;
    *out = v;
    return true;
}

bool dsl_parse_float(const char *s, double *out)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    int digits = 0;
    while (isdigit((unsigned char)*p)) {
        p++;
        digits++;
    }
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) {
            p++;
            digits++;
        }
    }
    if (!digits)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p)
        return false;
    double v = strtod(s, NULL);
    if (!isfinite(v))
        return false;
    *out = v;
    return true;
}

void dsl_scalar_value(const char *s, bool quoted, dval *out)
{
    memset(out, 0, sizeof *out);
    if (quoted) {
        out->kind = DV_STR;
        out->s = s;
        return;
    }
    if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL")) {
        out->kind = DV_NULL;
        return;
    }
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) {
        out->kind = DV_BOOL;
        out->b = true;
        return;
    }
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) {
        out->kind = DV_BOOL;
        return;
    }
    bool ovf = false;
    int64_t i;
    if (dsl_parse_int(s, &i, &ovf) && !ovf) {
        out->kind = DV_INT;
        out->i = i;
        return;
    }
    double f;
    if (dsl_parse_float(s, &f)) {
        out->kind = DV_FLOAT;
        out->f = f;
        return;
    }
    out->kind = DV_STR;
    out->s = s;
}
