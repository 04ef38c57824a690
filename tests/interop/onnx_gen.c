/* tests/interop/onnx_gen.c - small ONNX models built in C (see onnx_gen.h). */
#include "onnx_gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gen {
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__OperatorSetIdProto opset;
    Onnx__OperatorSetIdProto *opsets[1];
    void **owned;
    int n_owned, cap_owned;
};

static void *own(gen *g, void *p)
{
    if (!p)
        abort(); /* a test helper: out of memory ends the test */
    if (g->n_owned == g->cap_owned) {
        g->cap_owned = g->cap_owned ? 2 * g->cap_owned : 64;
        g->owned = realloc(g->owned, (size_t)g->cap_owned * sizeof *g->owned);
        if (!g->owned)
            abort();
    }
    g->owned[g->n_owned++] = p;
    return p;
}

static void *zalloc(gen *g, size_t n)
{
    return own(g, calloc(1, n ? n : 1));
}

static char *dup(gen *g, const char *s)
{
    return own(g, strdup(s));
}

/* Append p to a protobuf-c repeated field (an array of pointers). */
#define PUSH(g, arr, n, p)                                                                         \
    do {                                                                                           \
        void **na_ = zalloc(g, ((n) + 1) * sizeof(void *));                                        \
        if (n)                                                                                     \
            memcpy(na_, (arr), (n) * sizeof(void *));                                              \
        na_[(n)] = (p);                                                                            \
        (arr) = (void *)na_;                                                                       \
        (n)++;                                                                                     \
    } while (0)

gen *gen_new(int64_t opset)
{
    gen *g = calloc(1, sizeof *g);
    if (!g)
        abort();
    onnx__model_proto__init(&g->model);
    onnx__graph_proto__init(&g->graph);
    onnx__operator_set_id_proto__init(&g->opset);
    g->opset.domain = "";
    g->opset.has_version = 1;
    g->opset.version = opset;
    g->opsets[0] = &g->opset;
    g->model.n_opset_import = 1;
    g->model.opset_import = g->opsets;
    g->model.has_ir_version = 1;
    g->model.ir_version = 8;
    g->model.producer_name = "slim-tests";
    g->model.graph = &g->graph;
    g->graph.name = "test";
    return g;
}

void gen_free(gen *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n_owned; i++)
        free(g->owned[i]);
    free(g->owned);
    free(g);
}

Onnx__ModelProto *gen_model(gen *g)
{
    return &g->model;
}

void gen_input(gen *g, const char *name, int rank, const int64_t *dims)
{
    Onnx__ValueInfoProto *vi = zalloc(g, sizeof *vi);
    Onnx__TypeProto *tp = zalloc(g, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = zalloc(g, sizeof *tt);
    Onnx__TensorShapeProto *sh = zalloc(g, sizeof *sh);
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    vi->name = dup(g, name);
    vi->type = tp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = sh;
    for (int i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = zalloc(g, sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        if (dims[i] < 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = "batch";
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i];
        }
        PUSH(g, sh->dim, sh->n_dim, d);
    }
    PUSH(g, g->graph.input, g->graph.n_input, vi);
}

void gen_output(gen *g, const char *name)
{
    Onnx__ValueInfoProto *vi = zalloc(g, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = dup(g, name);
    PUSH(g, g->graph.output, g->graph.n_output, vi);
}

static Onnx__TensorProto *tensor(gen *g, const char *name, int rank, const int64_t *dims)
{
    Onnx__TensorProto *t = zalloc(g, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = dup(g, name);
    t->n_dims = (size_t)rank;
    t->dims = zalloc(g, (size_t)(rank ? rank : 1) * sizeof(int64_t));
    if (rank)
        memcpy(t->dims, dims, (size_t)rank * sizeof(int64_t));
    t->has_data_type = 1;
    return t;
}

static size_t numel(int rank, const int64_t *dims)
{
    size_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    return n;
}

void gen_init(gen *g, const char *name, int rank, const int64_t *dims, const float *data)
{
    Onnx__TensorProto *t = tensor(g, name, rank, dims);
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    size_t n = numel(rank, dims);
    t->has_raw_data = 1;
    t->raw_data.len = n * 4;
    t->raw_data.data = zalloc(g, n * 4);
    memcpy(t->raw_data.data, data, n * 4); /* little-endian host */
    PUSH(g, g->graph.initializer, g->graph.n_initializer, t);
}

void gen_init_i64(gen *g, const char *name, int rank, const int64_t *dims, const int64_t *data)
{
    Onnx__TensorProto *t = tensor(g, name, rank, dims);
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    size_t n = numel(rank, dims);
    t->n_int64_data = n;
    t->int64_data = zalloc(g, n * sizeof(int64_t));
    memcpy(t->int64_data, data, n * sizeof(int64_t));
    PUSH(g, g->graph.initializer, g->graph.n_initializer, t);
}

static void names(gen *g, const char *list, char ***arr, size_t *n)
{
    *n = 0;
    *arr = NULL;
    if (!list[0])
        return;
    char *copy = dup(g, list);
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
        PUSH(g, *arr, *n, strcmp(t, "-") ? t : dup(g, "")); /* "-": an absent optional input */
}

Onnx__NodeProto *gen_node(gen *g, const char *op, const char *name, const char *inputs,
                          const char *outputs)
{
    Onnx__NodeProto *n = zalloc(g, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = dup(g, op);
    n->name = dup(g, name);
    names(g, inputs, &n->input, &n->n_input);
    names(g, outputs, &n->output, &n->n_output);
    PUSH(g, g->graph.node, g->graph.n_node, n);
    return n;
}

static Onnx__AttributeProto *attr(gen *g, Onnx__NodeProto *n, const char *name,
                                  Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = zalloc(g, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = dup(g, name);
    a->has_type = 1;
    a->type = type;
    PUSH(g, n->attribute, n->n_attribute, a);
    return a;
}

void gen_attr_int(gen *g, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = attr(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

void gen_attr_float(gen *g, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = attr(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

void gen_attr_ints(gen *g, Onnx__NodeProto *n, const char *name, int cnt, const int64_t *v)
{
    Onnx__AttributeProto *a = attr(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)cnt;
    a->ints = zalloc(g, (size_t)(cnt ? cnt : 1) * sizeof(int64_t));
    memcpy(a->ints, v, (size_t)cnt * sizeof(int64_t));
}

void gen_attr_str(gen *g, Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = attr(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(v);
    a->s.data = (uint8_t *)dup(g, v);
}

uint8_t *gen_pack(gen *g, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(&g->model);
    uint8_t *buf = malloc(*len ? *len : 1);
    if (!buf)
        abort();
    onnx__model_proto__pack(&g->model, buf);
    return buf;
}

int gen_write(gen *g, const char *path)
{
    size_t len;
    uint8_t *buf = gen_pack(g, &len);
    FILE *f = fopen(path, "wb");
    int rc = f && fwrite(buf, 1, len, f) == len ? 0 : -1;
    if (f && fclose(f) != 0)
        rc = -1;
    free(buf);
    return rc;
}
