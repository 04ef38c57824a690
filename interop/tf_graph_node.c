/*
 * interop/tf_graph_node.c - the bottom of the GraphDef translator
 * (tf_graph_build.h): its memory and messages, node attributes, following
 * inputs through Identity chains, and Const tensors decoded when first read
 * (their bytes must match dtype and shape).
 */
#include "interop/tf_graph_build.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* ---- memory and messages ------------------------------------------------------------ */

void *tg_alloc(slim__tfg *t, size_t size)
{
    if (t->n_mem == t->cap_mem) {
        size_t cap = t->cap_mem ? 2 * t->cap_mem : 256;
        void **m = realloc(t->mem, cap * sizeof *m);
        if (!m) {
            t->oom = true;
            return NULL;
        }
        t->mem = m;
        t->cap_mem = cap;
    }
    void *p = calloc(1, size ? size : 1);
    if (!p) {
        t->oom = true;
        return NULL;
    }
    t->mem[t->n_mem++] = p;
    return p;
}

const char *tg_strdup(slim__tfg *t, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = tg_alloc(t, n);
    if (p)
        memcpy(p, s, n);
    return p ? p : "";
}

const char *tg_printf(slim__tfg *t, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return tg_strdup(t, buf);
}

bool tg_failed_alloc(slim__tfg *t)
{
    return t->oom;
}

slim_status tg_oom(slim__tfg *t)
{
    return slim__error(t->err, SLIM_ENOMEM, "%s: out of memory", t->file);
}

slim_status tg_fail(slim__tfg *t, slim_status code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (t->cur >= 0) {
        const Tensorflow__NodeDef *nd = t->nodes[t->cur].nd;
        char a[240], b[80];
        return slim__error(t->err, code, "%s: node '%s' (%s): %s", t->file,
                           slim__printable(nd->name, a, sizeof a),
                           slim__printable(nd->op, b, sizeof b), msg);
    }
    return slim__error(t->err, code, "%s: %s", t->file, msg);
}

/* ---- attributes --------------------------------------------------------------------- */

const Tensorflow__AttrValue *tg_attr(const Tensorflow__NodeDef *nd, const char *key)
{
    for (size_t i = 0; i < nd->n_attr; i++)
        if (nd->attr[i]->key && strcmp(nd->attr[i]->key, key) == 0)
            return nd->attr[i]->value;
    return NULL;
}

int64_t tg_attr_int(const Tensorflow__NodeDef *nd, const char *key, int64_t def)
{
    const Tensorflow__AttrValue *a = tg_attr(nd, key);
    return a && a->value_case == TENSORFLOW__ATTR_VALUE__VALUE_I ? a->i : def;
}

float tg_attr_float(const Tensorflow__NodeDef *nd, const char *key, float def)
{
    const Tensorflow__AttrValue *a = tg_attr(nd, key);
    return a && a->value_case == TENSORFLOW__ATTR_VALUE__VALUE_F ? a->f : def;
}

bool tg_attr_bool(const Tensorflow__NodeDef *nd, const char *key, bool def)
{
    const Tensorflow__AttrValue *a = tg_attr(nd, key);
    return a && a->value_case == TENSORFLOW__ATTR_VALUE__VALUE_B ? a->b != 0 : def;
}

const char *tg_attr_str(const Tensorflow__NodeDef *nd, const char *key, const char *def, char *buf,
                        size_t n)
{
    const Tensorflow__AttrValue *a = tg_attr(nd, key);
    if (!a || a->value_case != TENSORFLOW__ATTR_VALUE__VALUE_S)
        return def;
    size_t len = a->s.len < n - 1 ? a->s.len : n - 1;
    if (len)
        memcpy(buf, a->s.data, len);
    buf[len] = '\0';
    return buf;
}

int tg_attr_ints(const Tensorflow__NodeDef *nd, const char *key, int64_t *out, int max)
{
    const Tensorflow__AttrValue *a = tg_attr(nd, key);
    if (!a || a->value_case != TENSORFLOW__ATTR_VALUE__VALUE_LIST || !a->list)
        return -1;
    for (size_t i = 0; i < a->list->n_i && i < (size_t)max; i++)
        out[i] = a->list->i[i];
    return a->list->n_i > (size_t)1 << 20 ? 1 << 20 : (int)a->list->n_i;
}

/* ---- the graph's nodes ---------------------------------------------------------------- */

bool tg_is_identity(const char *op)
{
    return !strcmp(op, "Identity") || !strcmp(op, "StopGradient") || !strcmp(op, "Snapshot");
}

int tg_source(slim__tfg *t, tg_in in)
{
    int k = in.node;
    /* an Identity chain ends (the graph has no cycle through kept nodes; the
     * count bounds it anyway) */
    for (int hops = 0;
         hops < t->n && in.port == 0 && tg_is_identity(t->nodes[k].nd->op) && t->nodes[k].n_in >= 1;
         hops++) {
        in = t->nodes[k].in[0];
        k = in.node;
    }
    return k;
}

int tg_const_in(slim__tfg *t, int k, int i)
{
    if (i >= t->nodes[k].n_in || t->nodes[k].in[i].port != 0)
        return -1;
    int c = tg_source(t, t->nodes[k].in[i]);
    return !strcmp(t->nodes[c].nd->op, "Const") ? c : -1;
}

int tg_sole_consumer(slim__tfg *t, int k)
{
    if (t->nodes[k].n_consumers != 1 || k == t->output)
        return -1;
    return t->nodes[k].consumer;
}

/* ---- Const tensors ------------------------------------------------------------------ */

static bool float_bits(uint16_t h, bool bf16, float *out)
{
    uint32_t u;
    if (bf16) {
        u = (uint32_t)h << 16;
    } else {
        uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023;
        if (e == 0 && m == 0)
            u = s;
        else if (e == 0) { /* subnormal */
            e = 113;
            while (!(m & 1024)) {
                m <<= 1;
                e--;
            }
            u = s | e << 23 | (m & 1023) << 13;
        } else if (e == 31)
            u = s | 0x7f800000u | m << 13;
        else
            u = s | (e + 112) << 23 | m << 13;
    }
    memcpy(out, &u, 4);
    return true;
}

slim_status tg_const_value(slim__tfg *t, int c, const tg_tensor **out)
{
    tg_node *n = &t->nodes[c];
    *out = &n->t;
    if (n->decoded)
        return SLIM_OK;
    const Tensorflow__AttrValue *a = tg_attr(n->nd, "value");
    const Tensorflow__TensorProto *p =
        a && a->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TENSOR ? a->tensor : NULL;
    char nm[240];
    slim__printable(n->nd->name, nm, sizeof nm);
    if (!p)
        return slim__error(t->err, SLIM_EINVAL, "%s: node '%s' (Const): no tensor value", t->file,
                           nm);
    tg_tensor *v = &n->t;
    const Tensorflow__TensorShapeProto *sp = p->tensor_shape;
    v->rank = sp ? (int)sp->n_dim : 0;
    if (v->rank > TG_MAX_DIMS)
        return slim__error(t->err, SLIM_EUNSUPPORTED, "%s: node '%s' (Const): rank %d", t->file, nm,
                           v->rank);
    v->numel = 1;
    for (int i = 0; i < v->rank; i++) {
        v->dim[i] = sp->dim[i]->size;
        if (v->dim[i] < 0 || (v->dim[i] && v->numel > TG_MAX_ELEMS / v->dim[i]))
            return slim__error(t->err, SLIM_EINVAL,
                               "%s: node '%s' (Const): dimension %d is %lld (or too many "
                               "elements)",
                               t->file, nm, i, (long long)v->dim[i]);
        v->numel *= v->dim[i];
    }
    int64_t ne = v->numel;
    if (ne > t->decode_budget)
        return slim__error(t->err, SLIM_EUNSUPPORTED,
                           "%s: node '%s' (Const): %lld elements, more than the file's bytes "
                           "can hold with the graph's other constants",
                           t->file, nm, (long long)ne);
    t->decode_budget -= ne;
    int dt = p->dtype;
    bool flt = dt == TENSORFLOW__DATA_TYPE__DT_FLOAT || dt == TENSORFLOW__DATA_TYPE__DT_DOUBLE ||
               dt == TENSORFLOW__DATA_TYPE__DT_HALF || dt == TENSORFLOW__DATA_TYPE__DT_BFLOAT16;
    size_t es = 0; /* bytes per element in tensor_content */
    size_t nv = 0; /* values in the typed list */
    switch (dt) {
    case TENSORFLOW__DATA_TYPE__DT_FLOAT: es = 4, nv = p->n_float_val; break;
    case TENSORFLOW__DATA_TYPE__DT_DOUBLE: es = 8, nv = p->n_double_val; break;
    case TENSORFLOW__DATA_TYPE__DT_HALF:
    case TENSORFLOW__DATA_TYPE__DT_BFLOAT16: es = 2, nv = p->n_half_val; break;
    case TENSORFLOW__DATA_TYPE__DT_INT32: es = 4, nv = p->n_int_val; break;
    case TENSORFLOW__DATA_TYPE__DT_INT16: es = 2, nv = p->n_int_val; break;
    case TENSORFLOW__DATA_TYPE__DT_INT8: es = 1, nv = p->n_int_val; break;
    case TENSORFLOW__DATA_TYPE__DT_UINT8: es = 1, nv = p->n_int_val; break;
    case TENSORFLOW__DATA_TYPE__DT_INT64: es = 8, nv = p->n_int64_val; break;
    case TENSORFLOW__DATA_TYPE__DT_BOOL: es = 1, nv = p->n_bool_val; break;
    default:
        return slim__error(t->err, SLIM_EUNSUPPORTED,
                           "%s: node '%s' (Const): a tensor of TensorFlow dtype %d (slim reads "
                           "float, double, half, integer and bool tensors)",
                           t->file, nm, dt);
    }
    if (flt)
        v->f = tg_alloc(t, (size_t)(ne ? ne : 1) * sizeof(float));
    else
        v->i = tg_alloc(t, (size_t)(ne ? ne : 1) * sizeof(int64_t));
    if (!v->f && !v->i)
        return tg_oom(t);
    const uint8_t *raw = p->tensor_content.data;
    bool content = p->tensor_content.len > 0;
    if (content && p->tensor_content.len != (size_t)ne * es)
        return slim__error(t->err, SLIM_ECORRUPT,
                           "%s: node '%s' (Const): tensor_content has %zu bytes; its %lld "
                           "elements of %zu bytes need %lld",
                           t->file, nm, p->tensor_content.len, (long long)ne, es,
                           (long long)ne * (long long)es);
    /* a list shorter than the tensor repeats its last value (TensorFlow's rule) */
    if (!content && nv > (size_t)ne)
        return slim__error(t->err, SLIM_ECORRUPT,
                           "%s: node '%s' (Const): %zu values for %lld elements", t->file, nm, nv,
                           (long long)ne);
    for (int64_t e = 0; e < ne; e++) {
        size_t j = !content && nv ? ((size_t)e < nv ? (size_t)e : nv - 1) : (size_t)e;
        double x = 0;
        int64_t y = 0;
        if (content) {
            const uint8_t *q = raw + (size_t)e * es;
            switch (dt) {
            case TENSORFLOW__DATA_TYPE__DT_FLOAT: {
                float f;
                memcpy(&f, q, 4);
                x = f;
                break;
            }
            case TENSORFLOW__DATA_TYPE__DT_DOUBLE: memcpy(&x, q, 8); break;
            case TENSORFLOW__DATA_TYPE__DT_HALF:
            case TENSORFLOW__DATA_TYPE__DT_BFLOAT16: {
                uint16_t h;
                float f;
                memcpy(&h, q, 2);
                float_bits(h, dt == TENSORFLOW__DATA_TYPE__DT_BFLOAT16, &f);
                x = f;
                break;
            }
            case TENSORFLOW__DATA_TYPE__DT_INT32: {
                int32_t i32;
                memcpy(&i32, q, 4);
                y = i32;
                break;
            }
            case TENSORFLOW__DATA_TYPE__DT_INT16: {
                int16_t i16;
                memcpy(&i16, q, 2);
                y = i16;
                break;
            }
            case TENSORFLOW__DATA_TYPE__DT_INT8: y = (int8_t)q[0]; break;
            case TENSORFLOW__DATA_TYPE__DT_UINT8: y = q[0]; break;
            case TENSORFLOW__DATA_TYPE__DT_INT64: memcpy(&y, q, 8); break;
            default: y = q[0] != 0; break;
            }
        } else if (nv) {
            switch (dt) {
            case TENSORFLOW__DATA_TYPE__DT_FLOAT: x = p->float_val[j]; break;
            case TENSORFLOW__DATA_TYPE__DT_DOUBLE: x = p->double_val[j]; break;
            case TENSORFLOW__DATA_TYPE__DT_HALF:
            case TENSORFLOW__DATA_TYPE__DT_BFLOAT16: {
                float f;
                float_bits((uint16_t)p->half_val[j], dt == TENSORFLOW__DATA_TYPE__DT_BFLOAT16, &f);
                x = f;
                break;
            }
            case TENSORFLOW__DATA_TYPE__DT_INT64: y = p->int64_val[j]; break;
            case TENSORFLOW__DATA_TYPE__DT_BOOL: y = p->bool_val[j] != 0; break;
            default: y = p->int_val[j]; break;
            }
        }
        if (flt)
            v->f[e] = (float)x;
        else
            v->i[e] = y;
    }
    n->decoded = true;
    return SLIM_OK;
}
