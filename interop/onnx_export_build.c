/*
 * interop/onnx_export_build.c - what the ONNX exporter writes with
 * (onnx_export_int.h), below the export (onnx_export.c) and the ops
 * (onnx_export_ops.c): memory and unique names, ONNX nodes and their
 * attributes, initializers (little-endian), and slim values with their
 * layouts (NHWC inside, NCHW in the file, converted once).
 */
#include "interop/onnx_export.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "interop/onnx_export_int.h"

const int xl_pos[4] = {0, 2, 3, 1};

/* ---- memory and names ---------------------------------------------------------------- */

void *xp_alloc(xp_ex *x, size_t n)
{
    if (x->st)
        return NULL;
    if (x->n_mem == x->cap_mem) {
        size_t cap = x->cap_mem ? 2 * x->cap_mem : 256;
        void **m = realloc(x->mem, cap * sizeof *m);
        if (!m) {
            xp_fail(x, SLIM_ENOMEM, "out of memory");
            return NULL;
        }
        x->mem = m;
        x->cap_mem = cap;
    }
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        xp_fail(x, SLIM_ENOMEM, "out of memory (%zu bytes)", n);
        return NULL;
    }
    x->mem[x->n_mem++] = p;
    return p;
}

char *xp_strdup(xp_ex *x, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = xp_alloc(x, n);
    if (d)
        memcpy(d, s, n);
    return d;
}

const char *xp_name(xp_ex *x, const char *base, const char *what)
{
    size_t n = strlen(base) + (what ? strlen(what) : 0) + 24;
    char *s = xp_alloc(x, n);
    if (!s)
        return NULL;
    if (what)
        snprintf(s, n, "%s::%s", base, what);
    else
        snprintf(s, n, "%s", base);
    size_t len = strlen(s);
    for (int k = 2; slim__names_get(&x->names, s) >= 0; k++)
        snprintf(s + len, n - len, "_%d", k);
    if (!slim__names_put(&x->names, s, 1)) {
        xp_fail(x, SLIM_ENOMEM, "out of memory");
        return NULL;
    }
    return s;
}

slim_status xp_fail(xp_ex *x, slim_status code, const char *fmt, ...)
{
    if (x->st)
        return x->st;
    x->st = code;
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (x->at)
        slim__error(x->err, code, "ONNX export: %s '%s': %s", x->at->d->name, x->at->name, msg);
    else
        slim__error(x->err, code, "ONNX export: %s", msg);
    return code;
}

/* ---- nodes --------------------------------------------------------------------------- */

static bool push(xp_ex *x, void ***arr, size_t *n, size_t *cap, void *item)
{
    if (!item)
        return false;
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        void **a = realloc(*arr, c * sizeof *a);
        if (!a) {
            xp_fail(x, SLIM_ENOMEM, "out of memory");
            return false;
        }
        *arr = a;
        *cap = c;
    }
    (*arr)[(*n)++] = item;
    return true;
}

static char **str_list(xp_ex *x, const char *const *s, int n)
{
    char **l = xp_alloc(x, (size_t)(n ? n : 1) * sizeof *l);
    for (int i = 0; l && i < n; i++)
        if (!s[i] || !(l[i] = xp_strdup(x, s[i])))
            return NULL;
    return l;
}

/* Node names are a namespace of their own: a node may be named as its output. */
static const char *node_name(xp_ex *x, const char *base)
{
    size_t n = strlen(base) + 24;
    char *s = xp_alloc(x, n);
    if (!s)
        return NULL;
    snprintf(s, n, "%s", base);
    for (int k = 2; slim__names_get(&x->node_names, s) >= 0; k++)
        snprintf(s, n, "%s_%d", base, k);
    if (!slim__names_put(&x->node_names, s, 1)) {
        xp_fail(x, SLIM_ENOMEM, "out of memory");
        return NULL;
    }
    return s;
}

Onnx__NodeProto *xp_node(xp_ex *x, const char *op, const char *name, const char *const *in,
                         int n_in, const char *const *out, int n_out)
{
    Onnx__NodeProto *n = xp_alloc(x, sizeof *n);
    if (!n)
        return NULL;
    onnx__node_proto__init(n);
    n->op_type = xp_strdup(x, op);
    n->name = (char *)node_name(x, name);
    n->input = str_list(x, in, n_in);
    n->n_input = (size_t)n_in;
    n->output = str_list(x, out, n_out);
    n->n_output = (size_t)n_out;
    if (!n->op_type || !n->name || !n->input || !n->output ||
        !push(x, (void ***)&x->node, &x->n_node, &x->cap_node, n)) {
        if (!x->st)
            xp_fail(x, SLIM_EINTERNAL, "a value of node %s (%s) is missing", name, op);
        return NULL;
    }
    return n;
}

const char *xp_node1(xp_ex *x, const char *op, const char *name, const char *const *in, int n_in,
                     const char *out)
{
    return xp_node(x, op, name, in, n_in, &out, 1) ? out : NULL;
}

static Onnx__AttributeProto *attr(xp_ex *x, Onnx__NodeProto *n, const char *key,
                                  Onnx__AttributeProto__AttributeType type)
{
    if (!n)
        return NULL;
    Onnx__AttributeProto *a = xp_alloc(x, sizeof *a);
    Onnx__AttributeProto **l = xp_alloc(x, (n->n_attribute + 1) * sizeof *l);
    if (!a || !l)
        return NULL;
    onnx__attribute_proto__init(a);
    a->name = xp_strdup(x, key);
    a->has_type = true;
    a->type = type;
    if (n->n_attribute)
        memcpy(l, n->attribute, n->n_attribute * sizeof *l);
    l[n->n_attribute++] = a;
    n->attribute = l;
    return a;
}

void xp_attr_int(xp_ex *x, Onnx__NodeProto *n, const char *key, int64_t v)
{
    Onnx__AttributeProto *a = attr(x, n, key, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) {
        a->has_i = true;
        a->i = v;
    }
}

void xp_attr_float(xp_ex *x, Onnx__NodeProto *n, const char *key, float v)
{
    Onnx__AttributeProto *a = attr(x, n, key, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) {
        a->has_f = true;
        a->f = v;
    }
}

void xp_attr_ints(xp_ex *x, Onnx__NodeProto *n, const char *key, const int64_t *v, int k)
{
    Onnx__AttributeProto *a = attr(x, n, key, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *d = a ? xp_alloc(x, (size_t)(k ? k : 1) * sizeof *d) : NULL;
    if (d) {
        if (k)
            memcpy(d, v, (size_t)k * sizeof *d);
        a->ints = d;
        a->n_ints = (size_t)k;
    }
}

void xp_attr_floats(xp_ex *x, Onnx__NodeProto *n, const char *key, const double *v, int k)
{
    Onnx__AttributeProto *a = attr(x, n, key, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    float *d = a ? xp_alloc(x, (size_t)(k ? k : 1) * sizeof *d) : NULL;
    if (d) {
        for (int i = 0; i < k; i++)
            d[i] = (float)v[i];
        a->floats = d;
        a->n_floats = (size_t)k;
    }
}

void xp_use_domain(xp_ex *x, const char *domain)
{
    for (int i = 0; i < x->n_domains; i++)
        if (!strcmp(x->domains[i], domain))
            return;
    if (x->n_domains == (int)(sizeof x->domains / sizeof x->domains[0])) {
        xp_fail(x, SLIM_EUNSUPPORTED, "more than 8 op set domains");
        return;
    }
    x->domains[x->n_domains] = xp_strdup(x, domain);
    if (x->domains[x->n_domains])
        x->n_domains++;
}

void xp_attr_str(xp_ex *x, Onnx__NodeProto *n, const char *key, const char *v)
{
    Onnx__AttributeProto *a = attr(x, n, key, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    char *d = a ? xp_strdup(x, v) : NULL;
    if (d) {
        a->has_s = true;
        a->s.data = (uint8_t *)d;
        a->s.len = strlen(d);
    }
}

/* ---- initializers ---------------------------------------------------------------------- */

static bool host_is_le(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

static Onnx__TensorProto *new_init(xp_ex *x, const char *base, const char *what, int rank,
                                   const int64_t *dim, int elem, const char **out)
{
    Onnx__TensorProto *t = xp_alloc(x, sizeof *t);
    int64_t *d = xp_alloc(x, (size_t)(rank ? rank : 1) * sizeof *d);
    const char *nm = xp_name(x, base, what);
    if (!t || !d || !nm)
        return NULL;
    onnx__tensor_proto__init(t);
    if (rank) /* a scalar's dims may be NULL */
        memcpy(d, dim, (size_t)rank * sizeof *d);
    t->dims = d;
    t->n_dims = (size_t)rank;
    t->has_data_type = true;
    t->data_type = elem;
    t->name = (char *)nm;
    *out = nm;
    return t;
}

/* The bytes of n values of size sz, little-endian: src itself when it may be kept. */
static const uint8_t *le_bytes(xp_ex *x, const void *src, size_t n, size_t sz, bool keep)
{
    if (keep && host_is_le())
        return src;
    uint8_t *b = xp_alloc(x, n * sz);
    if (!b)
        return NULL;
    memcpy(b, src, n * sz);
    if (!host_is_le())
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < sz / 2; k++) {
                uint8_t c = b[i * sz + k];
                b[i * sz + k] = b[i * sz + sz - 1 - k];
                b[i * sz + sz - 1 - k] = c;
            }
    return b;
}

static const char *add_init(xp_ex *x, const char *base, const char *what, int rank,
                            const int64_t *dim, int elem, const void *data, size_t sz, bool keep)
{
    const char *nm = NULL;
    Onnx__TensorProto *t = new_init(x, base, what, rank, dim, elem, &nm);
    if (!t)
        return NULL;
    size_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= (size_t)dim[i];
    const uint8_t *b = le_bytes(x, data, n, sz, keep);
    if (!b)
        return NULL;
    t->has_raw_data = true;
    t->raw_data.data = (uint8_t *)b;
    t->raw_data.len = n * sz;
    x->init_bytes += n * sz;
    return push(x, (void ***)&x->init, &x->n_init, &x->cap_init, t) ? nm : NULL;
}

const char *xp_init_f32(xp_ex *x, const char *base, const char *what, int rank, const int64_t *dim,
                        const float *data, bool keep)
{
    return add_init(x, base, what, rank, dim, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, data,
                    sizeof *data, keep);
}

const char *xp_init_i64(xp_ex *x, const char *base, const char *what, int n, const int64_t *v)
{
    int64_t dim = n;
    return add_init(x, base, what, 1, &dim, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, v, sizeof *v,
                    false);
}

const char *xp_scalar_f32(xp_ex *x, const char *base, const char *what, float v)
{
    return xp_init_f32(x, base, what, 0, NULL, &v, false);
}

/* ---- values ---------------------------------------------------------------------------- */

const slim_shape *xp_shape(const xp_ex *x, slim_tid t)
{
    return &x->g->tensors[t].d.shape;
}

const float *xp_param(const xp_ex *x, slim_tid t)
{
    const slim__tinfo *ti = &x->g->tensors[t];
    if (ti->kind != SLIM__T_PARAM || ti->d.dtype != SLIM_F32)
        return NULL;
    return x->g->params[ti->producer].data;
}

bool xp_cf_is_flat(const slim_shape *s)
{
    return s->rank == 4 && (s->dim[1] * s->dim[2] == 1 || s->dim[3] == 1);
}

const char *xp_out(xp_ex *x, slim_tid t, int l)
{
    const char *base = x->out_name[t] && l == XL_SAME ? x->out_name[t] : x->g->tensors[t].name;
    const char *nm = x->out_name[t] && l == XL_SAME
                         ? base /* claimed when the export started */
                         : xp_name(x, base, l == XL_CF && x->val[t][XL_SAME] ? "nchw" : NULL);
    if (nm)
        x->val[t][l] = nm;
    return nm;
}

void xp_alias(xp_ex *x, slim_tid to, slim_tid from)
{
    x->val[to][XL_SAME] = x->val[from][XL_SAME];
    x->val[to][XL_CF] = x->val[from][XL_CF];
}

/* (N,H,W,C) data -> (N,C,H,W) */
static float *nhwc_to_nchw(xp_ex *x, const float *src, const slim_shape *s)
{
    int64_t N = s->dim[0], H = s->dim[1], W = s->dim[2], C = s->dim[3];
    float *d = xp_alloc(x, (size_t)slim_shape_numel(s) * sizeof *d);
    for (int64_t n = 0; d && n < N; n++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t w = 0; w < W; w++)
                for (int64_t c = 0; c < C; c++)
                    d[((n * C + c) * H + h) * W + w] = src[((n * H + h) * W + w) * C + c];
    return d;
}

const char *xp_get(xp_ex *x, slim_tid t, int l)
{
    if (x->st)
        return NULL;
    if (x->val[t][l])
        return x->val[t][l];
    const slim__tinfo *ti = &x->g->tensors[t];
    const slim_shape *s = &ti->d.shape;
    if (l == XL_CF && s->rank != 4) {
        xp_fail(x, SLIM_EINTERNAL, "tensor '%s' of rank %d asked for channels first", ti->name,
                s->rank);
        return NULL;
    }
    const float *p = xp_param(x, t);
    if (p) { /* a parameter: an initializer in the layout asked for */
        int64_t dim[SLIM_MAX_DIMS];
        for (int i = 0; i < s->rank; i++)
            dim[i] = s->dim[l == XL_CF ? (int[]){0, 3, 1, 2}[i] : i];
        const float *data = l == XL_CF ? nhwc_to_nchw(x, p, s) : p;
        const char *nm =
            data ? xp_init_f32(x, ti->name, l == XL_CF ? "nchw" : NULL, s->rank, dim, data, true)
                 : NULL;
        return x->val[t][l] = nm;
    }
    const char *other = x->val[t][!l];
    if (!other) {
        xp_fail(x, SLIM_EINTERNAL, "tensor '%s' is used before it is computed", ti->name);
        return NULL;
    }
    if (xp_cf_is_flat(s)) { /* the same elements in the same order: a reshape */
        int64_t dim[4];
        for (int i = 0; i < 4; i++)
            dim[i] = s->dim[l == XL_CF ? (int[]){0, 3, 1, 2}[i] : i];
        if (x->o->dynamic_batch && x->batched[t])
            dim[0] = 0; /* copied from the input */
        const char *in[2] = {other, xp_init_i64(x, ti->name, "shape", 4, dim)};
        const char *out = xp_name(x, ti->name, l == XL_CF ? "nchw" : "nhwc");
        Onnx__NodeProto *n = xp_node(x, "Reshape", out, in, 2, &out, 1);
        return n ? (x->val[t][l] = out) : NULL;
    }
    static const int64_t to_cf[4] = {0, 3, 1, 2}, to_same[4] = {0, 2, 3, 1};
    const char *out = xp_name(x, ti->name, l == XL_CF ? "nchw" : "nhwc");
    Onnx__NodeProto *n = xp_node(x, "Transpose", out, &other, 1, &out, 1);
    xp_attr_ints(x, n, "perm", l == XL_CF ? to_cf : to_same, 4);
    return n ? (x->val[t][l] = out) : NULL;
}

const char *xp_get_any(xp_ex *x, slim_tid t, int *l)
{
    *l = x->val[t][XL_CF] ? XL_CF : XL_SAME;
    return xp_get(x, t, *l);
}
