/*
 * interop/tf_graph_build.h - the GraphDef translator's internals, shared by
 * tf_graph.c (reading, checking, choosing what to keep, the ONNX model), the
 * layer below it, tf_graph_node.c (memory, messages, attributes, inputs,
 * Const values) and tf_graph_onnx.c (ONNX names, nodes, initializers), and
 * tf_graph_ops.c between them (each TensorFlow op as ONNX nodes).
 *
 * Every ONNX value a TensorFlow output becomes is named as TensorFlow names
 * it ("node" for output 0, "node:k"); values the translator adds carry a '#'
 * ("conv#nchw"), which TensorFlow's names never hold. Const nodes become
 * initializers when something reads them as they are; weights a layer reads
 * are written converted (HWIO -> OIHW) under the names that name the layer.
 * Everything allocated lives until slim__tfg_free.
 */
#ifndef SLIM_INTEROP_TF_GRAPH_BUILD_H
#define SLIM_INTEROP_TF_GRAPH_BUILD_H

#include "interop/tf_graph.h"

#include "core/names.h"
#include "interop/tf_graph.pb-c.h"

#define TG_MAX_DIMS 8
/* one tensor: as the ONNX importer's limit */
#define TG_MAX_ELEMS ((int64_t)1 << 31)
#define TG_OPSET 13

typedef struct tg_in {
    int node, port;
} tg_in;

/* A Const's value: f32 (float, double, half) or i64 (integer types, bool). */
typedef struct tg_tensor {
    int rank;
    int64_t dim[TG_MAX_DIMS];
    int64_t numel;
    float *f;
    int64_t *i;
} tg_tensor;

typedef struct tg_node {
    const Tensorflow__NodeDef *nd;
    tg_in *in; /* data inputs; control inputs ("^x") are dropped */
    int n_in;
    int n_consumers; /* data inputs of kept nodes reading an output of this one */
    int consumer;    /* the last of them (-1 when it reads another output than 0) */
    bool kept;       /* computes the output */
    bool done;       /* translated with an earlier node (a BiasAdd into its Conv2D) */
    bool decoded;    /* Const: t holds its value */
    tg_tensor t;
    const char *init; /* Const: its initializer's name once written */
} tg_node;

struct slim__tfg {
    const char *file;
    slim_error *err;
    Tensorflow__GraphDef *g;
    tg_node *nodes;
    int n;
    slim__names by_name;
    int input, output;  /* the Placeholder and the logits' node */
    int64_t in_dim[4];  /* (N,H,W,C); N -1: any */
    int cur;            /* the node being translated (messages), -1 none */
    slim_status ref_st; /* a Const that failed to decode when read (tg_ref) */
    /* elements Consts may decode to in all: a list shorter than its tensor
     * repeats its last value, so a few bytes can claim a large tensor */
    int64_t decode_budget;
    const char *root;
    char note[200];
    /* the ONNX model */
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    Onnx__ValueInfoProto vin, vout, *vins[1], *vouts[1];
    Onnx__TypeProto vtype;
    Onnx__TypeProto__Tensor vtensor;
    Onnx__TensorShapeProto vshape;
    Onnx__TensorShapeProto__Dimension vdims[4], *vdimp[4];
    Onnx__NodeProto **on;
    size_t n_on, cap_on;
    Onnx__TensorProto **inits;
    size_t n_inits, cap_inits;
    slim__names onames; /* ONNX value names taken */
    /* every allocation, freed together; oom: one failed */
    bool oom;
    void **mem;
    size_t n_mem, cap_mem;
};

/* ---- tf_graph_node.c: the GraphDef as read -------------------------------------- */

/* Fail at the current node: "FILE: node 'NAME' (OP): ..." */
slim_status tg_fail(slim__tfg *t, slim_status code, const char *fmt, ...) SLIM_PRINTF(3, 4);
slim_status tg_oom(slim__tfg *t);
void *tg_alloc(slim__tfg *t, size_t size); /* zeroed, freed with t */
const char *tg_strdup(slim__tfg *t, const char *s);
const char *tg_printf(slim__tfg *t, const char *fmt, ...) SLIM_PRINTF(2, 3);
/* Whether an allocation failed (checked once per node). */
bool tg_failed_alloc(slim__tfg *t);

/* Attributes; the getters return def when absent or of another type. */
const Tensorflow__AttrValue *tg_attr(const Tensorflow__NodeDef *nd, const char *key);
int64_t tg_attr_int(const Tensorflow__NodeDef *nd, const char *key, int64_t def);
float tg_attr_float(const Tensorflow__NodeDef *nd, const char *key, float def);
bool tg_attr_bool(const Tensorflow__NodeDef *nd, const char *key, bool def);
/* A string attribute into buf (NUL-terminated, truncated). */
const char *tg_attr_str(const Tensorflow__NodeDef *nd, const char *key, const char *def, char *buf,
                        size_t n);
/* A list(int) attribute: its length (values copied up to max), -1 when absent. */
int tg_attr_ints(const Tensorflow__NodeDef *nd, const char *key, int64_t *out, int max);

/* Identity, StopGradient, Snapshot: nodes that pass their input on. */
bool tg_is_identity(const char *op);
/* The node an input comes from, looking through Identity nodes. */
int tg_source(slim__tfg *t, tg_in in);
/* The Const node behind input i of node k (through Identity), or -1. */
int tg_const_in(slim__tfg *t, int k, int i);
/* Node c's value (decoded once); fails naming the node when malformed. */
slim_status tg_const_value(slim__tfg *t, int c, const tg_tensor **out);
/* The one node reading node k's output 0 (kept nodes), or -1. */
int tg_sole_consumer(slim__tfg *t, int k);

/* ---- tf_graph_onnx.c: the ONNX model written -------------------------------------- */

/* ONNX: the value name of an input (a Const's initializer written when first
 * read); a new value name of the current node ("NODE#what"), unique. */
const char *tg_ref(slim__tfg *t, tg_in in);
const char *tg_value_name(slim__tfg *t, int k, int port);
const char *tg_tmp(slim__tfg *t, const char *what);
/* A TensorFlow name without the model's root scope ("Lenet/conv1" -> "conv1"). */
const char *tg_unrooted(const slim__tfg *t, const char *name);
/* Nodes and initializers. */
Onnx__NodeProto *tg_node_add(slim__tfg *t, const char *op, const char *name, const char *const *in,
                             int n_in, const char *out);
void tg_attr_set_int(slim__tfg *t, Onnx__NodeProto *n, const char *key, int64_t v);
void tg_attr_set_float(slim__tfg *t, Onnx__NodeProto *n, const char *key, float v);
void tg_attr_set_ints(slim__tfg *t, Onnx__NodeProto *n, const char *key, const int64_t *v,
                      int count);
void tg_attr_set_str(slim__tfg *t, Onnx__NodeProto *n, const char *key, const char *v);
/* An initializer named name (made unique; returned) holding f32 or i64 data
 * (copied). */
const char *tg_init_f32(slim__tfg *t, const char *name, int rank, const int64_t *dim,
                        const float *data);
const char *tg_init_i64(slim__tfg *t, const char *name, int rank, const int64_t *dim,
                        const int64_t *data);

/* ---- tf_graph_ops.c ------------------------------------------------------------ */

/* Whether op is translated. */
bool tg_known_op(const char *op);
/* Translate kept node k (its ONNX nodes appended). */
slim_status tg_translate_node(slim__tfg *t, int k);

#endif
