/*
 * interop/onnx_export.c - slim graphs -> ONNX models (see onnx_export.h):
 * the values and their layouts, initializers, which nodes are needed, and
 * the ModelProto written with protobuf-c. The ops are onnx_export_ops.c.
 */
#include "interop/onnx_export.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/error.h"
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

/* ---- the export ------------------------------------------------------------------------ */

static void ex_free(xp_ex *x)
{
    for (size_t i = 0; i < x->n_mem; i++)
        free(x->mem[i]);
    free(x->mem);
    free(x->node);
    free(x->init);
    slim__names_fini(&x->names);
    slim__names_fini(&x->node_names);
    free(x->val);
    free(x->out_name);
    free(x->batched);
    free(x->uses);
    free(x->need);
    free(x->fold);
}

static int64_t ir_version(int opset)
{
    /* ONNX's versioning table: the IR version each release wrote with its opset */
    return opset <= 14 ? 7 : opset <= 18 ? 8 : opset <= 20 ? 9 : 10;
}

static Onnx__ValueInfoProto *value_info(xp_ex *x, const char *name, const slim_shape *s,
                                        const int *order, bool dyn)
{
    Onnx__ValueInfoProto *v = xp_alloc(x, sizeof *v);
    Onnx__TypeProto *tp = xp_alloc(x, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = xp_alloc(x, sizeof *tt);
    Onnx__TensorShapeProto *sh = xp_alloc(x, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dims =
        xp_alloc(x, (size_t)(s->rank ? s->rank : 1) * sizeof *dims);
    if (!v || !tp || !tt || !sh || !dims)
        return NULL;
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    for (int i = 0; i < s->rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = xp_alloc(x, sizeof *d);
        if (!d)
            return NULL;
        onnx__tensor_shape_proto__dimension__init(d);
        if (i == 0 && dyn) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = xp_strdup(x, "N");
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = s->dim[order ? order[i] : i];
        }
        dims[i] = d;
    }
    sh->dim = dims;
    sh->n_dim = (size_t)s->rank;
    tt->has_elem_type = true;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->name = xp_strdup(x, name);
    v->type = tp;
    return v;
}

/* Which nodes the outputs need, what depends on the input, how often each tensor is used. */
static void plan(xp_ex *x, const slim_tid *outs, int n_out, slim_tid input)
{
    const slim_graph *g = x->g;
    bool *want = calloc((size_t)g->n_tensors, sizeof *want);
    if (!want) {
        xp_fail(x, SLIM_ENOMEM, "out of memory");
        return;
    }
    for (int i = 0; i < n_out; i++) {
        want[outs[i]] = true;
        x->uses[outs[i]]++;
    }
    for (int n = g->n_nodes - 1; n >= 0; n--) {
        const slim__node *nd = &g->nodes[n];
        for (int k = 0; k < nd->n_out && !x->need[n]; k++)
            x->need[n] = want[nd->out[k]];
        for (int i = 0; x->need[n] && i < nd->n_in; i++) {
            want[nd->in[i]] = true;
            x->uses[nd->in[i]]++;
        }
    }
    free(want);
    x->batched[input] = true;
    for (int n = 0; n < g->n_nodes; n++) {
        const slim__node *nd = &g->nodes[n];
        bool b = false;
        for (int i = 0; i < nd->n_in; i++)
            b = b || x->batched[nd->in[i]];
        for (int k = 0; k < nd->n_out; k++)
            x->batched[nd->out[k]] = b;
        x->fold[n] = -1;
    }
}

static const slim_registry *g_reg(const xp_ex *x)
{
    return x->g->reg;
}

/* Every needed node whose op has no exporter, listed in one message. */
static slim_status check_ops(xp_ex *x)
{
    char list[700] = "";
    size_t len = 0;
    int n_bad = 0;
    for (int n = 0; n < x->g->n_nodes; n++) {
        const slim__node *nd = &x->g->nodes[n];
        if (!x->need[n] || xp_op_emitter(g_reg(x), nd->d->name))
            continue;
        if (n_bad++ < 8 && len < sizeof list)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s '%s'",
                                    n_bad > 1 ? ", " : "", nd->d->name, nd->name);
    }
    if (!n_bad)
        return SLIM_OK;
    char more[48] = "";
    if (n_bad > 8)
        snprintf(more, sizeof more, " and %d more", n_bad - 8);
    return xp_fail(x, SLIM_EUNSUPPORTED,
                   "%d node%s ha%s no ONNX counterpart: %s%s (an op plugin can declare the ONNX "
                   "op type its op implements: see \"Writing an op plugin\" in README.md)",
                   n_bad, n_bad > 1 ? "s" : "", n_bad > 1 ? "ve" : "s", list, more);
}

static slim_status build(xp_ex *x, Onnx__ModelProto *m)
{
    const slim_graph *g = x->g;
    const slim__onnx_export_opts *o = x->o;
    x->opset = o->opset ? o->opset : SLIM__ONNX_EXPORT_MIN_OPSET;
    if (x->opset < SLIM__ONNX_EXPORT_MIN_OPSET || x->opset > SLIM__ONNX_EXPORT_MAX_OPSET)
        return xp_fail(x, SLIM_EINVAL, "opset %d: slim writes opsets %d to %d", x->opset,
                       SLIM__ONNX_EXPORT_MIN_OPSET, SLIM__ONNX_EXPORT_MAX_OPSET);
    size_t nt = (size_t)g->n_tensors, nn = (size_t)(g->n_nodes ? g->n_nodes : 1);
    x->val = calloc(nt, sizeof *x->val);
    x->out_name = calloc(nt, sizeof *x->out_name);
    x->batched = calloc(nt, sizeof *x->batched);
    x->uses = calloc(nt, sizeof *x->uses);
    x->need = calloc(nn, sizeof *x->need);
    x->fold = calloc(nn, sizeof *x->fold);
    if (!x->val || !x->out_name || !x->batched || !x->uses || !x->need || !x->fold)
        return xp_fail(x, SLIM_ENOMEM, "out of memory");

    const char *in_name = o->input ? o->input : "images";
    slim_tid input, outs[4];
    int n_out = 0;
    if (slim_graph_find(g, in_name, &input) || g->tensors[input].kind != SLIM__T_INPUT)
        return xp_fail(x, SLIM_ENOTFOUND, "the graph has no input '%s'", in_name);
    const slim_shape *is = xp_shape(x, input);
    if (g->tensors[input].d.dtype != SLIM_F32 || is->rank < 1)
        return xp_fail(x, SLIM_ETYPE, "the input '%s' is not an f32 batch", in_name);
    if (o->input_nchw && is->rank != 4)
        return xp_fail(x, SLIM_ESHAPE, "an NCHW input needs a 4-D input; '%s' has rank %d", in_name,
                       is->rank);
    x->batch = is->dim[0];
    for (; n_out < 4 && o->outputs[n_out]; n_out++) {
        if (slim_graph_find(g, o->outputs[n_out], &outs[n_out]))
            return xp_fail(x, SLIM_ENOTFOUND, "the graph has no tensor '%s' to export",
                           o->outputs[n_out]);
        const char *nm = o->output_names[n_out] ? o->output_names[n_out] : o->outputs[n_out];
        if (x->out_name[outs[n_out]] || slim__names_get(&x->names, nm) >= 0)
            return xp_fail(x, SLIM_EINVAL, "'%s' is exported twice", nm);
        if (!(x->out_name[outs[n_out]] = xp_name(x, nm, NULL)))
            return x->st;
    }
    if (!n_out)
        return xp_fail(x, SLIM_EINVAL, "no output to export");
    plan(x, outs, n_out, input);
    if (x->st || check_ops(x))
        return x->st;
    for (int n = 0; n < g->n_nodes; n++)
        if (x->need[n] && !strcmp(g->nodes[n].d->name, "batch_norm") && o->fold_batch_norm)
            xp_plan_fold(x, n);

    /* the input */
    static const int nchw[4] = {0, 3, 1, 2};
    bool dyn = o->dynamic_batch;
    if (!xp_name(x, in_name, NULL))
        return x->st;
    x->val[input][o->input_nchw ? XL_CF : XL_SAME] = in_name;
    Onnx__ValueInfoProto *vin = value_info(x, in_name, is, o->input_nchw ? nchw : NULL, dyn);

    for (int n = 0; n < g->n_nodes && !x->st; n++) {
        if (!x->need[n] || x->fold[n] == -2)
            continue;
        x->at = &g->nodes[n];
        xp_op_emitter(g_reg(x), g->nodes[n].d->name)(x, n);
    }
    x->at = NULL;

    Onnx__ValueInfoProto **vout = xp_alloc(x, (size_t)n_out * sizeof *vout);
    for (int i = 0; vout && i < n_out; i++) {
        slim_tid t = outs[i];
        const char *v = xp_get(x, t, XL_SAME);
        const char *want = x->out_name[t];
        if (v && strcmp(v, want) != 0) /* computed under another name (an input, an alias) */
            xp_node1(x, "Identity", want, &v, 1, want);
        vout[i] = value_info(x, want, xp_shape(x, t), NULL, dyn && x->batched[t]);
    }
    if (x->st)
        return x->st;
    if (x->init_bytes > SLIM__OX_MAX_FILE - ((size_t)64 << 20))
        return xp_fail(x, SLIM_EUNSUPPORTED,
                       "the weights take %zu MB; an ONNX file holds at most 2 GB (external data "
                       "files are not written)",
                       x->init_bytes >> 20);

    Onnx__GraphProto *gp = xp_alloc(x, sizeof *gp);
    Onnx__OperatorSetIdProto *os = xp_alloc(x, sizeof *os);
    Onnx__OperatorSetIdProto **osl = xp_alloc(x, (size_t)(1 + x->n_domains) * sizeof *osl);
    Onnx__ValueInfoProto **vinl = xp_alloc(x, sizeof *vinl);
    if (!gp || !os || !osl || !vinl || !vin)
        return x->st ? x->st : xp_fail(x, SLIM_ENOMEM, "out of memory");
    onnx__graph_proto__init(gp);
    gp->name = xp_strdup(x, o->graph_name ? o->graph_name : "slim");
    gp->node = x->node;
    gp->n_node = x->n_node;
    gp->initializer = x->init;
    gp->n_initializer = x->n_init;
    vinl[0] = vin;
    gp->input = vinl;
    gp->n_input = 1;
    gp->output = vout;
    gp->n_output = (size_t)n_out;
    onnx__operator_set_id_proto__init(os);
    os->domain = xp_strdup(x, "");
    os->has_version = true;
    os->version = x->opset;
    osl[0] = os;
    for (int i = 0; i < x->n_domains; i++) {
        Onnx__OperatorSetIdProto *d = xp_alloc(x, sizeof *d);
        if (!d)
            return x->st;
        onnx__operator_set_id_proto__init(d);
        d->domain = (char *)x->domains[i];
        d->has_version = true;
        d->version = 1;
        osl[1 + i] = d;
    }
    m->has_ir_version = true;
    m->ir_version = ir_version(x->opset);
    m->opset_import = osl;
    m->n_opset_import = (size_t)(1 + x->n_domains);
    m->producer_name = xp_strdup(x, "slim");
    m->producer_version = xp_strdup(x, slim_version());
    if (o->doc)
        m->doc_string = xp_strdup(x, o->doc);
    m->graph = gp;
    return x->st;
}

slim_status slim__onnx_export(const slim_graph *g, const slim__onnx_export_opts *o, uint8_t **buf,
                              size_t *len, slim_error *err)
{
    *buf = NULL;
    *len = 0;
    xp_ex x = {.g = g, .o = o, .err = err};
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    if (build(&x, &m) == SLIM_OK) {
        size_t n = onnx__model_proto__get_packed_size(&m);
        *buf = malloc(n ? n : 1);
        if (*buf)
            *len = onnx__model_proto__pack(&m, *buf);
        else
            xp_fail(&x, SLIM_ENOMEM, "out of memory (%zu bytes for the model)", n);
    }
    slim_status st = x.st;
    ex_free(&x);
    return st;
}

typedef struct file_sink {
    ProtobufCBuffer base;
    FILE *f;
    bool failed;
} file_sink;

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    file_sink *s = (file_sink *)b;
    if (!s->failed && len && fwrite(data, 1, len, s->f) != len)
        s->failed = true;
}

slim_status slim__onnx_export_file(const slim_graph *g, const slim__onnx_export_opts *o,
                                   const char *path, slim_error *err)
{
    xp_ex x = {.g = g, .o = o, .err = err};
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    if (build(&x, &m) == SLIM_OK) {
        file_sink s = {.base = {.append = sink_append}, .f = fopen(path, "wb")};
        if (!s.f) {
            xp_fail(&x, SLIM_EIO, "cannot create %s: %s", path, strerror(errno));
        } else {
            onnx__model_proto__pack_to_buffer(&m, &s.base);
            if (fclose(s.f) != 0 || s.failed) {
                xp_fail(&x, SLIM_EIO, "cannot write %s (disk full?)", path);
                remove(path);
            }
        }
    }
    slim_status st = x.st;
    ex_free(&x);
    return st;
}
