/*
 * interop/tf_graph_onnx.c - the ONNX model the GraphDef translator writes:
 * value names, initializers, nodes and their attributes (all allocated in
 * the translator, freed with it).
 */
#include "interop/tf_graph_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool name_taken(slim__tfg *t, const char *s)
{
    return slim__names_get(&t->onames, s) >= 0 || slim__names_get(&t->by_name, s) >= 0;
}

static const char *take_name(slim__tfg *t, const char *want)
{
    const char *s = want;
    for (int k = 1; name_taken(t, s) && k < 1000000; k++)
        s = tg_printf(t, "%s#%d", want, k);
    s = tg_strdup(t, s);
    if (!slim__names_put(&t->onames, s, 1))
        t->oom = true;
    return s;
}

const char *tg_unrooted(const slim__tfg *t, const char *nm)
{
    size_t rl = t->root ? strlen(t->root) : 0;
    if (rl && strncmp(nm, t->root, rl) == 0 && nm[rl] == '/' && nm[rl + 1])
        return nm + rl + 1;
    return nm;
}

const char *tg_value_name(slim__tfg *t, int k, int port)
{
    const char *nm = t->nodes[k].nd->name;
    return port ? tg_printf(t, "%s:%d", nm, port) : nm;
}

const char *tg_tmp(slim__tfg *t, const char *what)
{
    return take_name(t, tg_printf(t, "%s/#%s", t->nodes[t->cur].nd->name, what));
}

static Onnx__TensorProto *new_init(slim__tfg *t, const char *name, int rank, const int64_t *dim)
{
    if (t->n_inits == t->cap_inits) {
        size_t cap = t->cap_inits ? 2 * t->cap_inits : 64;
        Onnx__TensorProto **p = tg_alloc(t, cap * sizeof *p);
        if (!p)
            return NULL;
        if (t->n_inits)
            memcpy(p, t->inits, t->n_inits * sizeof *p);
        t->inits = p;
        t->cap_inits = cap;
    }
    Onnx__TensorProto *tp = tg_alloc(t, sizeof *tp);
    int64_t *dims = tg_alloc(t, (size_t)(rank + 1) * sizeof *dims);
    if (!tp || !dims)
        return NULL;
    onnx__tensor_proto__init(tp);
    tp->name = (char *)name;
    tp->n_dims = (size_t)rank;
    if (rank)
        memcpy(dims, dim, (size_t)rank * sizeof *dims);
    tp->dims = dims;
    tp->has_data_type = true;
    t->inits[t->n_inits++] = tp;
    return tp;
}

static int64_t count(int rank, const int64_t *dim)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dim[i];
    return n;
}

/* An initializer of f32 or i64 data (copied). */
static const char *init(slim__tfg *t, const char *name, int rank, const int64_t *dim,
                        const void *data, bool f32)
{
    name = take_name(t, name);
    Onnx__TensorProto *tp = new_init(t, name, rank, dim);
    int64_t n = count(rank, dim);
    void *d = tg_alloc(t, (size_t)(n ? n : 1) * 8);
    if (!tp || !d)
        return name;
    if (n)
        memcpy(d, data, (size_t)n * (f32 ? 4 : 8));
    if (f32) {
        tp->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        tp->n_float_data = (size_t)n;
        tp->float_data = d;
    } else {
        tp->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
        tp->n_int64_data = (size_t)n;
        tp->int64_data = d;
    }
    return name;
}

const char *tg_init_f32(slim__tfg *t, const char *name, int rank, const int64_t *dim,
                        const float *data)
{
    return init(t, name, rank, dim, data, true);
}

const char *tg_init_i64(slim__tfg *t, const char *name, int rank, const int64_t *dim,
                        const int64_t *data)
{
    return init(t, name, rank, dim, data, false);
}

const char *tg_ref(slim__tfg *t, tg_in in)
{
    int c = in.port == 0 ? tg_source(t, in) : in.node;
    if (strcmp(t->nodes[c].nd->op, "Const") != 0)
        return tg_value_name(t, in.node, in.port);
    tg_node *n = &t->nodes[c];
    if (n->init)
        return n->init;
    const tg_tensor *v;
    int save = t->cur;
    t->cur = c;
    slim_status st = tg_const_value(t, c, &v);
    t->cur = save;
    if (st) {
        t->ref_st = st;
        return NULL;
    }
    /* named as the Const, without the root scope (the importer adds it) */
    const char *nm = n->nd->name, *un = tg_unrooted(t, nm);
    if (un != nm)
        nm = take_name(t, un);
    else if (!slim__names_put(&t->onames, nm, 1))
        t->oom = true;
    Onnx__TensorProto *tp = new_init(t, nm, v->rank, v->dim);
    if (!tp)
        return NULL;
    if (v->f) {
        tp->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        tp->n_float_data = (size_t)v->numel;
        tp->float_data = v->f;
    } else {
        tp->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
        tp->n_int64_data = (size_t)v->numel;
        tp->int64_data = v->i;
    }
    n->init = nm;
    return n->init;
}

Onnx__NodeProto *tg_node_add(slim__tfg *t, const char *op, const char *name, const char *const *in,
                             int n_in, const char *out)
{
    if (t->n_on == t->cap_on) {
        size_t cap = t->cap_on ? 2 * t->cap_on : 64;
        Onnx__NodeProto **p = tg_alloc(t, cap * sizeof *p);
        if (!p)
            return NULL;
        if (t->n_on)
            memcpy(p, t->on, t->n_on * sizeof *p);
        t->on = p;
        t->cap_on = cap;
    }
    Onnx__NodeProto *n = tg_alloc(t, sizeof *n);
    char **ins = tg_alloc(t, (size_t)(n_in + 1) * sizeof *ins);
    char **outs = tg_alloc(t, sizeof *outs);
    if (!n || !ins || !outs)
        return NULL;
    onnx__node_proto__init(n);
    for (int i = 0; i < n_in; i++)
        ins[i] = (char *)(in[i] ? in[i] : "");
    outs[0] = (char *)out;
    n->n_input = (size_t)n_in;
    n->input = ins;
    n->n_output = 1;
    n->output = outs;
    n->name = (char *)tg_unrooted(t, name);
    n->op_type = (char *)op;
    t->on[t->n_on++] = n;
    return n;
}

static Onnx__AttributeProto *new_attr(slim__tfg *t, Onnx__NodeProto *n, const char *key)
{
    if (!n)
        return NULL;
    Onnx__AttributeProto **a = tg_alloc(t, (n->n_attribute + 1) * sizeof *a);
    Onnx__AttributeProto *p = tg_alloc(t, sizeof *p);
    if (!a || !p)
        return NULL;
    if (n->n_attribute)
        memcpy(a, n->attribute, n->n_attribute * sizeof *a);
    onnx__attribute_proto__init(p);
    p->name = (char *)key;
    p->has_type = true;
    a[n->n_attribute++] = p;
    n->attribute = a;
    return p;
}

void tg_attr_set_int(slim__tfg *t, Onnx__NodeProto *n, const char *key, int64_t v)
{
    Onnx__AttributeProto *a = new_attr(t, n, key);
    if (a) {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        a->has_i = true;
        a->i = v;
    }
}

void tg_attr_set_float(slim__tfg *t, Onnx__NodeProto *n, const char *key, float v)
{
    Onnx__AttributeProto *a = new_attr(t, n, key);
    if (a) {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        a->has_f = true;
        a->f = v;
    }
}

void tg_attr_set_ints(slim__tfg *t, Onnx__NodeProto *n, const char *key, const int64_t *v, int cnt)
{
    Onnx__AttributeProto *a = new_attr(t, n, key);
    int64_t *d = tg_alloc(t, (size_t)(cnt + 1) * sizeof *d);
    if (a && d) {
        memcpy(d, v, (size_t)cnt * sizeof *d);
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        a->n_ints = (size_t)cnt;
        a->ints = d;
    }
}

void tg_attr_set_str(slim__tfg *t, Onnx__NodeProto *n, const char *key, const char *v)
{
    Onnx__AttributeProto *a = new_attr(t, n, key);
    if (a) {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        a->has_s = true;
        a->s.data = (uint8_t *)v;
        a->s.len = strlen(v);
    }
}
