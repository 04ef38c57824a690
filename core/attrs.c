/* core/attrs.c - attribute values resolved against an op schema.
 *
 * Resolution (at slim_graph_add) converts what a builder holds
 * (core/attrs_build.c) to the schema's exact type, checks ranges and
 * choices, rejects unknown keys and fills in defaults, so infer never sees a
 * missing or ill-typed attribute. The compiler's rewrites edit resolved sets
 * the same way; infer reads them through its context's accessors. */
#include "core/attrs.h"
#include "core/error.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- resolution ---------------------------------------------------------- */

static const char *type_name(slim_attr_type t)
{
    switch (t) {
    case SLIM_ATTR_INT: return "an integer";
    case SLIM_ATTR_FLOAT: return "a number";
    case SLIM_ATTR_BOOL: return "a boolean (true or false)";
    case SLIM_ATTR_STRING: return "a string";
    case SLIM_ATTR_INTS: return "a list of integers";
    case SLIM_ATTR_FLOATS: return "a list of numbers";
    }
    return "?";
}

static bool is_list(slim_attr_type t)
{
    return t == SLIM_ATTR_INTS || t == SLIM_ATTR_FLOATS;
}

/* Parse text like "3", "[2, 2]", "2,2", "[]" into doubles; ints checked by caller. */
static int parse_numbers(const char *text, double **out, bool *had_brackets, bool *all_integral)
{
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    *had_brackets = false;
    *all_integral = true;
    if (*p == '[') {
        *had_brackets = true;
        p++;
    }
    int cap = 8, n = 0;
    double *v = malloc((size_t)cap * sizeof *v);
    if (!v)
        return -1;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (*p == ']' && *had_brackets) {
            p++;
            break;
        }
        if (*p == '\0' && !*had_brackets)
            break;
        char *end;
        errno = 0;
        double x = strtod(p, &end);
        if (end == p || errno == ERANGE || !isfinite(x)) {
            free(v);
            return -1;
        }
        /* integral means no '.', 'e' or 'inf' spelled in the token */
        for (const char *q = p; q < end; q++)
            if (*q == '.' || *q == 'e' || *q == 'E')
                *all_integral = false;
        if (n == cap) {
            cap *= 2;
            double *nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) {
                free(v);
                return -1;
            }
            v = nv;
        }
        v[n++] = x;
        p = end;
        while (isspace((unsigned char)*p))
            p++;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == ']' && *had_brackets) {
            p++;
            break;
        }
        if (*p == '\0' && !*had_brackets)
            break;
        free(v);
        return -1;
    }
    while (isspace((unsigned char)*p))
        p++;
    if (*p) {
        free(v);
        return -1;
    }
    *out = v;
    return n;
}

static bool parse_bool(const char *s, bool *b)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "on", "1"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "off", "0"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        if (strcmp(s, yes[i]) == 0)
            return *b = true, true;
        if (strcmp(s, no[i]) == 0)
            return *b = false, true;
    }
    return false;
}

static bool choice_ok(const char *choices, const char *v)
{
    if (!choices)
        return true;
    size_t n = strlen(v);
    const char *p = choices;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0)
            return true;
        if (!bar)
            break;
        p = bar + 1;
    }
    return false;
}

/* Convert text to a value of the spec's type. */
static slim_status from_text(const slim_attr_spec *s, const char *text, slim__attr_value *v,
                             const char *opname, slim_error *err)
{
    v->type = s->type;
    switch (s->type) {
    case SLIM_ATTR_STRING:
        v->n = 1;
        v->str = strdup(text);
        return v->str ? SLIM_OK : SLIM_ENOMEM;
    case SLIM_ATTR_BOOL: {
        bool b;
        if (!parse_bool(text, &b))
            return slim__error(err, SLIM_ETYPE, "attribute '%s' of %s: expected %s, got '%s'",
                               s->name, opname, type_name(s->type), text);
        v->n = 1;
        v->ints = malloc(sizeof(int64_t));
        if (!v->ints)
            return SLIM_ENOMEM;
        v->ints[0] = b;
        return SLIM_OK;
    }
    default: break;
    }
    double *nums = NULL;
    bool brackets, integral;
    int n = parse_numbers(text, &nums, &brackets, &integral);
    if (n < 0 || (!is_list(s->type) && (n != 1 || brackets))) {
        free(nums);
        return slim__error(err, SLIM_ETYPE, "attribute '%s' of %s: expected %s, got '%s'", s->name,
                           opname, type_name(s->type), text);
    }
    bool want_int = s->type == SLIM_ATTR_INT || s->type == SLIM_ATTR_INTS;
    if (want_int && !integral) {
        free(nums);
        return slim__error(err, SLIM_ETYPE, "attribute '%s' of %s: expected %s, got '%s'", s->name,
                           opname, type_name(s->type), text);
    }
    v->n = n;
    if (want_int) {
        v->ints = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
        if (!v->ints) {
            free(nums);
            return SLIM_ENOMEM;
        }
        for (int i = 0; i < n; i++)
            v->ints[i] = (int64_t)nums[i];
        free(nums);
    } else {
        v->floats = nums;
    }
    return SLIM_OK;
}

static slim_status from_given(const slim_attr_spec *s, const given *g, slim__attr_value *v,
                              const char *opname, slim_error *err)
{
    if (g->kind == GIVEN_TEXT)
        return from_text(s, g->str, v, opname, err);
    v->type = s->type;
    const char *gname = g->kind == GIVEN_STR    ? "a string"
                        : g->kind == GIVEN_BOOL ? "a boolean"
                        : g->kind == GIVEN_FLOATS
                            ? (g->scalar ? "a number" : "a list of numbers")
                            : (g->scalar ? "an integer" : "a list of integers");
    bool ok = false;
    switch (s->type) {
    case SLIM_ATTR_INT:
    case SLIM_ATTR_INTS:
        if (g->kind == GIVEN_INTS && (g->scalar || s->type == SLIM_ATTR_INTS))
            ok = true;
        if (g->kind == GIVEN_FLOATS && (g->scalar || s->type == SLIM_ATTR_INTS)) {
            ok = true; /* integral floats are fine: 2.0 -> 2 */
            for (int i = 0; i < g->n; i++)
                if (g->floats[i] != floor(g->floats[i]) || fabs(g->floats[i]) > 9e15)
                    ok = false;
        }
        if (ok) {
            v->n = g->n;
            v->ints = malloc((size_t)(g->n ? g->n : 1) * sizeof(int64_t));
            if (!v->ints)
                return SLIM_ENOMEM;
            for (int i = 0; i < g->n; i++)
                v->ints[i] = g->kind == GIVEN_INTS ? g->ints[i] : (int64_t)g->floats[i];
        }
        break;
    case SLIM_ATTR_FLOAT:
    case SLIM_ATTR_FLOATS:
        if ((g->kind == GIVEN_INTS || g->kind == GIVEN_FLOATS) &&
            (g->scalar || s->type == SLIM_ATTR_FLOATS)) {
            ok = true;
            v->n = g->n;
            v->floats = malloc((size_t)(g->n ? g->n : 1) * sizeof(double));
            if (!v->floats)
                return SLIM_ENOMEM;
            for (int i = 0; i < g->n; i++)
                v->floats[i] = g->kind == GIVEN_INTS ? (double)g->ints[i] : g->floats[i];
        }
        break;
    case SLIM_ATTR_BOOL:
        if (g->kind == GIVEN_BOOL) {
            ok = true;
            v->n = 1;
            v->ints = malloc(sizeof(int64_t));
            if (!v->ints)
                return SLIM_ENOMEM;
            v->ints[0] = g->ints[0];
        }
        break;
    case SLIM_ATTR_STRING:
        if (g->kind == GIVEN_STR) {
            ok = true;
            v->n = 1;
            v->str = strdup(g->str);
            if (!v->str)
                return SLIM_ENOMEM;
        }
        break;
    }
    if (!ok)
        return slim__error(err, SLIM_ETYPE, "attribute '%s' of %s: expected %s, got %s", s->name,
                           opname, type_name(s->type), gname);
    return SLIM_OK;
}

static slim_status check_value(const slim_attr_spec *s, const slim__attr_value *v,
                               const char *opname, slim_error *err)
{
    if (s->type == SLIM_ATTR_STRING && !choice_ok(s->choices, v->str))
        return slim__error(err, SLIM_EINVAL, "attribute '%s' of %s: '%s' is not one of %s", s->name,
                           opname, v->str, s->choices);
    if (!s->ranged)
        return SLIM_OK;
    for (int i = 0; i < v->n; i++) {
        double x = v->floats ? v->floats[i] : v->ints ? (double)v->ints[i] : 0;
        if (x < s->min || x > s->max)
            return slim__error(err, SLIM_EINVAL,
                               "attribute '%s' of %s: %g is out of range [%g, %g]", s->name, opname,
                               x, s->min, s->max);
    }
    return SLIM_OK;
}

static void value_fini(slim__attr_value *v)
{
    free(v->ints);
    free(v->floats);
    free(v->str);
    memset(v, 0, sizeof *v);
}

void slim__attrs_fini(slim__attr_set *set)
{
    if (!set || !set->values)
        return;
    for (int i = 0; i < set->desc->n_attrs; i++)
        value_fini(&set->values[i]);
    free(set->values);
    set->values = NULL;
}

slim_status slim__attrs_resolve(const slim_op_desc *desc, const slim_attrs *attrs,
                                slim__attr_set *out, slim_error *err)
{
    out->desc = desc;
    out->values = calloc((size_t)(desc->n_attrs ? desc->n_attrs : 1), sizeof *out->values);
    if (!out->values)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    /* unknown keys first: the most common mistake is a typo */
    for (int i = 0; attrs && i < attrs->n; i++) {
        bool known = false;
        for (int j = 0; j < desc->n_attrs && !known; j++)
            known = strcmp(attrs->items[i].key, desc->attrs[j].name) == 0;
        if (!known) {
            char list[512] = "";
            size_t used = 0;
            for (int j = 0; j < desc->n_attrs && used < sizeof list; j++)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", j ? ", " : "",
                                         desc->attrs[j].name);
            slim__attrs_fini(out);
            return slim__error(err, SLIM_EINVAL, "unknown attribute '%s' for op %s (expected %s%s)",
                               attrs->items[i].key, desc->name, desc->n_attrs ? "one of: " : "none",
                               list);
        }
    }
    for (int j = 0; j < desc->n_attrs; j++) {
        const slim_attr_spec *s = &desc->attrs[j];
        const given *g = NULL;
        for (int i = 0; attrs && i < attrs->n; i++)
            if (strcmp(attrs->items[i].key, s->name) == 0)
                g = &attrs->items[i];
        slim_status st;
        if (g)
            st = from_given(s, g, &out->values[j], desc->name, err);
        else if (s->def)
            st = from_text(s, s->def, &out->values[j], desc->name, err);
        else
            st = slim__error(err, SLIM_EINVAL, "op %s needs attribute '%s' (%s)", desc->name,
                             s->name, type_name(s->type));
        if (st == SLIM_OK)
            st = check_value(s, &out->values[j], desc->name, err);
        if (st != SLIM_OK) {
            slim__attrs_fini(out);
            return st;
        }
    }
    return SLIM_OK;
}

slim_status slim__attrs_check_schema(const slim_op_desc *desc, slim_error *err)
{
    for (int j = 0; j < desc->n_attrs; j++) {
        const slim_attr_spec *s = &desc->attrs[j];
        if (!s->name || s->type < SLIM_ATTR_INT || s->type > SLIM_ATTR_FLOATS)
            return slim__error(err, SLIM_EINVAL,
                               "op %s: attribute %d has no name or an unknown type", desc->name, j);
        for (int k = 0; k < j; k++)
            if (strcmp(desc->attrs[k].name, s->name) == 0)
                return slim__error(err, SLIM_EINVAL, "op %s: attribute '%s' is declared twice",
                                   desc->name, s->name);
        if (s->def) {
            slim__attr_value v = {0};
            slim_status st = from_text(s, s->def, &v, desc->name, err);
            if (st == SLIM_OK)
                st = check_value(s, &v, desc->name, err);
            value_fini(&v);
            if (st != SLIM_OK) {
                slim__error_prefix(err, "bad default in the schema: ");
                return st;
            }
        }
    }
    return SLIM_OK;
}

const slim__attr_value *slim__attrs_get(const slim__attr_set *set, const char *name)
{
    for (int j = 0; j < set->desc->n_attrs; j++)
        if (strcmp(set->desc->attrs[j].name, name) == 0)
            return &set->values[j];
    return NULL;
}

/* ---- editing a resolved set (the compiler's rewrites) ------------------------ */

static slim_status value_copy(const slim__attr_value *src, slim__attr_value *dst)
{
    *dst = (slim__attr_value){.type = src->type, .n = src->n};
    size_t n = (size_t)(src->n ? src->n : 1);
    if (src->ints && !(dst->ints = malloc(n * sizeof *dst->ints)))
        return SLIM_ENOMEM;
    if (src->floats && !(dst->floats = malloc(n * sizeof *dst->floats)))
        return SLIM_ENOMEM;
    if (src->str && !(dst->str = strdup(src->str)))
        return SLIM_ENOMEM;
    if (src->ints)
        memcpy(dst->ints, src->ints, (size_t)src->n * sizeof *dst->ints);
    if (src->floats)
        memcpy(dst->floats, src->floats, (size_t)src->n * sizeof *dst->floats);
    return SLIM_OK;
}

slim_status slim__attrs_copy(const slim__attr_set *src, const slim_op_desc *desc,
                             slim__attr_set *out)
{
    out->desc = desc;
    out->values = calloc((size_t)(desc->n_attrs ? desc->n_attrs : 1), sizeof *out->values);
    if (!out->values)
        return SLIM_ENOMEM;
    for (int j = 0; j < desc->n_attrs; j++) {
        const slim_attr_spec *s = &desc->attrs[j];
        const slim__attr_value *v = src ? slim__attrs_get(src, s->name) : NULL;
        slim_status st = SLIM_EINVAL;
        if (v && v->type == s->type && value_copy(v, &out->values[j]) == SLIM_OK)
            st = check_value(s, &out->values[j], desc->name, NULL);
        if (st != SLIM_OK) { /* not there or not valid here: the default */
            value_fini(&out->values[j]);
            st = s->def ? from_text(s, s->def, &out->values[j], desc->name, NULL) : SLIM_EINVAL;
        }
        if (st != SLIM_OK) {
            slim__attrs_fini(out);
            return st;
        }
    }
    return SLIM_OK;
}

/* The schema entry and value slot of attribute name, or an error. */
static slim_status slot_of(slim__attr_set *set, const char *name, const slim_attr_spec **s,
                           slim__attr_value **v, slim_error *err)
{
    for (int j = 0; j < set->desc->n_attrs; j++)
        if (strcmp(set->desc->attrs[j].name, name) == 0) {
            *s = &set->desc->attrs[j];
            *v = &set->values[j];
            return SLIM_OK;
        }
    return slim__error(err, SLIM_EINVAL, "op %s has no attribute '%s'", set->desc->name, name);
}

/* Replace *v by nv once it passes s's checks. */
static slim_status replace(const slim_attr_spec *s, slim__attr_value *v, slim__attr_value *nv,
                           const char *opname, slim_status st, slim_error *err)
{
    if (st == SLIM_OK)
        st = check_value(s, nv, opname, err);
    if (st != SLIM_OK) {
        value_fini(nv);
        return st == SLIM_ENOMEM ? slim__error(err, st, "out of memory") : st;
    }
    value_fini(v);
    *v = *nv;
    return SLIM_OK;
}

slim_status slim__attrs_set_text(slim__attr_set *set, const char *name, const char *text,
                                 slim_error *err)
{
    const slim_attr_spec *s;
    slim__attr_value *v, nv = {0};
    slim_status st = slot_of(set, name, &s, &v, err);
    if (st != SLIM_OK)
        return st;
    return replace(s, v, &nv, set->desc->name, from_text(s, text, &nv, set->desc->name, err), err);
}

slim_status slim__attrs_set_from(slim__attr_set *set, const char *name, const slim__attr_set *from,
                                 const char *from_name, slim_error *err)
{
    const slim_attr_spec *s;
    slim__attr_value *v, nv = {0};
    slim_status st = slot_of(set, name, &s, &v, err);
    if (st != SLIM_OK)
        return st;
    const slim__attr_value *fv = slim__attrs_get(from, from_name);
    if (!fv || fv->type != s->type)
        return slim__error(err, SLIM_ETYPE, "attribute '%s' of %s: %s has no %s '%s' to copy", name,
                           set->desc->name, from->desc->name, type_name(s->type), from_name);
    return replace(s, v, &nv, set->desc->name, value_copy(fv, &nv), err);
}

/* ---- infer accessors: priv points at a struct whose first member is the set */

static const slim__attr_value *lookup(const slim_infer_ctx *c, const char *name)
{
    const slim__attr_set *set = *(const slim__attr_set *const *)c->priv;
    const slim__attr_value *v = slim__attrs_get(set, name);
    SLIM_ASSERT(v != NULL && "an op asked for an attribute its schema does not declare");
    return v;
}

static int64_t acc_int(const slim_infer_ctx *c, const char *name)
{
    const slim__attr_value *v = lookup(c, name);
    return v->ints ? v->ints[0] : v->floats ? (int64_t)v->floats[0] : 0;
}

static double acc_float(const slim_infer_ctx *c, const char *name)
{
    const slim__attr_value *v = lookup(c, name);
    return v->floats ? v->floats[0] : v->ints ? (double)v->ints[0] : 0;
}

static bool acc_bool(const slim_infer_ctx *c, const char *name)
{
    const slim__attr_value *v = lookup(c, name);
    return v->ints && v->ints[0];
}

static const char *acc_str(const slim_infer_ctx *c, const char *name)
{
    const slim__attr_value *v = lookup(c, name);
    return v->str ? v->str : "";
}

static int acc_ints(const slim_infer_ctx *c, const char *name, const int64_t **vals)
{
    const slim__attr_value *v = lookup(c, name);
    *vals = v->ints;
    return v->ints ? v->n : 0;
}

static int acc_floats(const slim_infer_ctx *c, const char *name, const double **vals)
{
    const slim__attr_value *v = lookup(c, name);
    *vals = v->floats;
    return v->floats ? v->n : 0;
}

void slim__attrs_bind(slim_infer_ctx *c)
{
    c->attr_int = acc_int;
    c->attr_float = acc_float;
    c->attr_bool = acc_bool;
    c->attr_str = acc_str;
    c->attr_ints = acc_ints;
    c->attr_floats = acc_floats;
}
