/*
 * interop/onnx_build.h - the ONNX importer's internals: ONNX graph -> slim graph.
 *
 * Every ONNX value (a node input/output name) gets an ox_value:
 *   HOST      known before the run: initializers, Constant nodes, what folds
 *             from them (Shape, Gather, Concat ... of shapes), and, for the
 *             conformance runner, graph inputs whose values it knows (fed:
 *             they still reach slim as inputs, never folded away);
 *   COMPUTED  a slim tensor, in a layout (below);
 *   STATE     read back from a slim parameter after the run (batch-norm
 *             running statistics of a training-mode node).
 *
 * Layouts. slim's spatial ops are channels-last; ONNX is channels-first. A
 * computed value has its ONNX dims and a layout: slim axis i holds ONNX axis
 * perm[i] (-1: a unit axis slim adds, so a 1-D signal (N,C,L) is the 2-D
 * image (N,1,L,C)). Transpose only changes the layout; a real transpose op is
 * added when a consumer needs another one, and a reshape is done on slim's
 * side whenever the axes it splits or merges allow it (channel shuffle).
 *
 * The importer records what it builds as layers (ox_layer): conv2d,
 * fully_connected, batch_norm and variable layers that own parameters, and
 * plain op layers. The same record builds the slim graph here and is written
 * out as a model file (onnx_yaml.c) that the DSL builds into the same graph.
 */
#ifndef SLIM_INTEROP_ONNX_BUILD_H
#define SLIM_INTEROP_ONNX_BUILD_H

#include <slim/slim.h>

#include "core/names.h"
#include "interop/onnx.h"
#include "interop/onnx_proto.h"

#define OX_MAXD SLIM__OX_MAX_DIMS

typedef enum ox_kind { OX_HOST = 0, OX_COMPUTED, OX_STATE } ox_kind;

typedef struct ox_layout {
    int rank;                   /* slim's rank */
    int8_t perm[SLIM_MAX_DIMS]; /* slim axis i = ONNX axis perm[i]; -1 = unit axis */
} ox_layout;

typedef struct ox_value {
    const char *name; /* the ONNX name (owned by the builder) */
    ox_kind kind;
    int rank; /* ONNX rank and dims */
    int64_t dim[OX_MAXD];
    /* HOST */
    slim__ox_tensor host;
    bool fed;         /* a graph input with known values, fed to slim at run time */
    bool initializer; /* from an initializer (or an Identity of one): a weight */
    int var_layer;    /* the variable layer made of it (-1: none yet) */
    /* COMPUTED */
    slim_tid tid;
    ox_layout lay;
    int layer; /* the layer whose output it is (-1: a graph input) */
    /* A Flatten of a channels-last (N,C,S...) value kept lazy for a Gemm that
     * follows (its weight rows are permuted instead): tid is the unflattened
     * tensor, flat_c its C (0 = not lazy). */
    int64_t flat_c;
    /* STATE: the parameter to read */
    const char *param;
} ox_value;

/* What a layer is; the DSL layer kinds it is written as. */
typedef enum ox_layer_kind {
    OXL_OP = 0, /* a registry op */
    OXL_CONV,   /* conv2d: weights (KH,KW,C/g,O) [+ biases (O)] */
    OXL_FC,     /* fully_connected: weights (K,O) [+ biases (O)] */
    OXL_BN,     /* batch_norm: gamma, beta, moving_mean, moving_variance (C) */
    OXL_LN,     /* layer_norm: gamma, beta (C) over the last axis */
    OXL_VAR,    /* variable: one parameter */
} ox_layer_kind;

#define OX_MAX_KV 12

typedef struct ox_kv {
    const char *key, *val; /* an attribute as YAML text: "[2, 2]", "0.5", "relu" */
} ox_kv;

typedef struct ox_layer {
    ox_layer_kind kind;
    const char *op;   /* OXL_OP: the op */
    const char *name; /* under the root scope */
    int n_in;
    int in[SLIM_MAX_INPUTS]; /* layers; OX_IMAGES = the model's input */
    int n_kv;
    ox_kv kv[OX_MAX_KV]; /* OXL_OP: its attributes */
    slim_tid out;
    /* OXL_CONV / OXL_FC / OXL_BN */
    int64_t k[2], s[2], d[2], pads[4], groups, cout;
    bool bias;
    /* OXL_CONV from slim's own export: SEP_DW, a depthwise conv whose weights
     * are scope/depthwise_weights (a separable_conv2d without num_outputs, or
     * with dw_of: the depthwise half of one); SEP_PW, the 1x1 half, whose
     * weights are scope/pointwise_weights and whose input is layer dw (one
     * separable_conv2d layer in the model file, as the DSL builds it) */
    enum { SEP_NONE = 0, SEP_DW, SEP_PW } sep;
    const char *scope; /* the parameters' scope when not the name (SEP_DW with a 1x1 half) */
    int dw;            /* SEP_PW: the depthwise layer */
    bool dw_of;        /* SEP_DW: its 1x1 half follows */
    /* OXL_BN: a constant scale of ones / shift of zeros (TF-Slim's scale: false,
     * center: false), not parameters */
    bool no_scale, no_center;
    double eps, decay;
    bool train_bn; /* conformance: an ONNX training-mode batch norm (biased variance) */
    /* OXL_VAR */
    slim_shape shape;
    bool trainable;
    /* set by the writer: an activation layer folded into this one, or the
     * layer this one was folded into */
    const char *activation;
    int folded_into;
} ox_layer;

#define OX_IMAGES (-1)

/* A parameter or input with data from the file (or the conformance case). */
typedef struct ox_feed {
    const char *name; /* full slim name */
    bool is_param;
    slim_dtype dtype; /* SLIM_F32, or SLIM_I64 (labels) */
    slim_shape shape;
    void *data;
    slim_tid tid;
} ox_feed;

/* Per ONNX value name: who makes it and who reads it (for idiom folding). */
typedef struct ox_use {
    int producer; /* node index, -1 for inputs and initializers */
    int n_consumers;
    int first_consumer;
    bool graph_output;
} ox_use;

typedef struct ox_builder {
    const slim__onnx_opts *o;
    slim_registry *reg;
    slim_graph *g;
    const Onnx__ModelProto *model;
    const char *file; /* for messages */
    const char *root; /* the root scope of every name */
    int64_t opset;
    const Onnx__NodeProto *node; /* being mapped (messages) */
    int node_index;

    ox_value *vals;
    int n_vals, cap_vals;
    slim__names val_names; /* name -> latest value index */
    ox_use *uses;
    slim__names use_names;
    int n_uses;
    bool *done; /* per node: mapped already (folded into an earlier node's mapping) */

    ox_layer *layers;
    int n_layers, cap_layers;
    slim__names layer_names; /* names taken (layers and parameters) */
    slim__names path_counts; /* PyTorch module path -> nodes under exactly it */
    ox_feed *feeds;
    int n_feeds, cap_feeds;

    /* per graph output: its slim tensor in ONNX order (-1: a STATE value) */
    slim_tid *out_tids;
    /* model mode */
    int logits_layer;
    int64_t batch, image_size, channels, num_classes;
    int64_t file_batch; /* the input's batch in the file (-1: symbolic) */
    bool input_nhwc;    /* the input is (N,H,W,C): a TensorFlow graph, or an ONNX one
                           whose input only feeds Transposes to NCHW (slim's export) */

    int64_t folded; /* elements of the constants computed by folding (a budget) */
    bool training;  /* compile for training (BN training_mode, training dropout) */
    bool could_cl;  /* a layout-agnostic op chose a layout for host inputs */
    int uniq;
    char **strs; /* strings the builder owns */
    int n_strs, cap_strs;
    char note[128]; /* how an op was expressed, when not by its namesake slim op */
    slim_error *err;
} ox_builder;

/* ---- onnx_build.c: values, layouts, feeds, layers ---------------------------- */

/* Fail for the current node: the message is prefixed with the file and node. */
slim_status ox_fail(ox_builder *b, slim_status code, const char *fmt, ...) SLIM_PRINTF(3, 4);
/* SLIM_EUNSUPPORTED for a node slim cannot express (the conformance runner's
 * "not applicable"). */
slim_status ox_unsup(ox_builder *b, const char *fmt, ...) SLIM_PRINTF(2, 3);
slim_status ox_oom(ox_builder *b);
const char *ox_strdup(ox_builder *b, const char *s);
const char *ox_printf(ox_builder *b, const char *fmt, ...) SLIM_PRINTF(2, 3);
/* A float as the shortest text that reads back as the same float. */
const char *ox_fmt_float(char *buf, size_t n, double v);
const char *ox_float(ox_builder *b, double v);

ox_value *ox_find(ox_builder *b, const char *name);
/* A node input's value; fails (NULL, error set) when missing or undefined. */
ox_value *ox_arg(ox_builder *b, const Onnx__NodeProto *n, size_t i);
/* New values: a host tensor (copied), a computed one, an alias. */
slim_status ox_def_host(ox_builder *b, const char *name, const slim__ox_tensor *t, bool fed,
                        bool initializer);
slim_status ox_def(ox_builder *b, const char *name, slim_tid tid, int layer, const ox_layout *lay,
                   int rank, const int64_t *dim);
slim_status ox_alias(ox_builder *b, const char *name, const char *src);
bool ox_is_const(const ox_value *v); /* HOST and not fed: may be folded */
const ox_use *ox_uses(ox_builder *b, const char *name);
/* The single node reading value name, or -1 (none, several, or a graph output). */
int ox_sole_consumer(ox_builder *b, const char *name);

/* Layouts */
ox_layout ox_plain(int rank);
ox_layout ox_cl(int rank); /* rank 3 or 4: (N,1,L,C) / (N,H,W,C) */
bool ox_layout_eq(const ox_layout *a, const ox_layout *c);
bool ox_layout_plain(const ox_layout *l);
/* slim's shape of ONNX dims in layout l */
slim_shape ox_slim_shape(const ox_layout *l, const int64_t *dim);
/* The slim axis holding ONNX axis a, or -1. */
int ox_slim_axis(const ox_layout *l, int a);
/* The layout a layout-agnostic op keeps for a value (host values: plain, or
 * channels-last for the conformance runner's second variant). */
ox_layout ox_keep_layout(ox_builder *b, const ox_value *v);

/* The slim tensor of a node input in layout want: computed values are
 * transposed when needed, host values fed (as a variable layer, or a run-time
 * input when fed). *layer: the layer for the model file. */
slim_status ox_input(ox_builder *b, const char *name, const ox_layout *want, slim_tid *out,
                     int *layer);
/* The same for a value known by pointer. */
slim_status ox_value_in(ox_builder *b, ox_value *v, const ox_layout *want, slim_tid *out,
                        int *layer);
/* Integer labels as a run-time input (the conformance runner's losses). */
slim_status ox_feed_labels(ox_builder *b, const char *name, const slim_shape *shape,
                           const int64_t *data, slim_tid *out);
/* An f32 constant (scalars, ones) as a non-trainable variable layer. */
slim_status ox_const(ox_builder *b, const char *name, const slim_shape *shape, const float *data,
                     slim_tid *out, int *layer);

/* Layers: each adds nodes (and parameters) to the graph and records itself.
 * Returns the layer's index in *layer and its output in *out. */
ox_layer *ox_layer_new(ox_builder *b, ox_layer_kind kind, const char *op, const char *name);
void ox_kv_set(ox_builder *b, ox_layer *l, const char *key, const char *fmt, ...) SLIM_PRINTF(4, 5);
void ox_kv_ints(ox_builder *b, ox_layer *l, const char *key, const int64_t *v, int n);
/* OXL_OP: the op's node from l->in (the tids of the inputs) */
slim_status ox_layer_op(ox_builder *b, ox_layer *l, const slim_tid *in, slim_tid *out);
/* OXL_CONV, OXL_FC: weights (slim layout) and optional biases; OXL_BN: gamma,
 * beta, mean, var (w[0..3]); OXL_LN: gamma, beta; OXL_VAR: its data. */
slim_status ox_layer_params(ox_builder *b, ox_layer *l, slim_tid x, const float *const *w,
                            slim_tid *out);
/* A plain op layer in one call: inputs with their layers, attrs as key/value text pairs. */
slim_status ox_op(ox_builder *b, const char *op, const char *name, const slim_tid *in,
                  const int *in_layers, int n_in, const ox_kv *kv, int n_kv, slim_tid *out,
                  int *layer);
/* Count the nodes of each module path (before naming layers). */
void ox_count_paths(ox_builder *b);
/* A layer name derived from the current node (unique): its module path
 * (PyTorch's scoped node names) when it is the module's only node, else the
 * path and the op's part; suffix "" for a layer owning weights (the path). */
const char *ox_node_name(ox_builder *b, const char *suffix);
/* A layer name from an ONNX value name ("layer1.0.conv1.weight" -> layer1/0/conv1),
 * or NULL when the name is an exporter's made-up one (onnx::Conv_193). */
const char *ox_value_base(ox_builder *b, const char *value_name);
/* name, made unique among the layers and parameters */
const char *ox_unique(ox_builder *b, const char *name);

/* Common shape helpers */
slim_status ox_reshape(ox_builder *b, slim_tid x, int x_layer, const int64_t *dims, int rank,
                       slim_tid *out, int *layer);
slim_status ox_transpose(ox_builder *b, slim_tid x, int x_layer, const int *perm, int rank,
                         slim_tid *out, int *layer);
/* Convert a computed value to layout want (adds transposes/reshapes). */
slim_status ox_relayout(ox_builder *b, ox_value *v, const ox_layout *want, slim_tid *out,
                        int *layer);

/* Host layout conversions (f32). (N,C,S) -> (N,S,C) and back. */
void ox_nchw_to_nhwc(const float *src, float *dst, int64_t n, int64_t c, int64_t s);
void ox_nhwc_to_nchw(const float *src, float *dst, int64_t n, int64_t c, int64_t s);
/* Permute a host tensor: out dim i = in dim perm[i]. */
bool ox_host_transpose(const slim__ox_tensor *in, const int *perm, slim__ox_tensor *out);
int ox_norm_axis(int64_t axis, int rank); /* [-rank, rank) -> [0, rank), or -1 */

/* ---- per ONNX op (onnx_ops_*.c, onnx_fold.c) --------------------------------- */

typedef slim_status (*ox_map_fn)(ox_builder *b, const Onnx__NodeProto *n);
/* The mapping of an op type, or NULL (onnx_ops.c: the table). */
ox_map_fn ox_mapper(const char *op_type);
slim_status ox_map_node(ox_builder *b, const Onnx__NodeProto *n);
/* Host folding: SLIM_OK with the outputs defined, or SLIM_ENOTFOUND when the
 * node does not fold (its inputs are not all constants, or no folding rule). */
slim_status ox_fold(ox_builder *b, const Onnx__NodeProto *n);
/* Exporter idioms spanning several nodes (GELU, LayerNorm, SiLU, HardSwish,
 * Clip(0, 6)): the nodes of the one starting at node k (up to max), or 0. */
int slim__ox_idiom_match(ox_builder *b, int k, int *nodes, int max);
/* Map the idiom starting at node k (its other nodes marked done), or
 * SLIM_ENOTFOUND when there is none. */
slim_status slim__ox_idiom(ox_builder *b, int k);

/* onnx_ops_nn.c */
slim_status ox_map_conv(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_maxpool(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_averagepool(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_globalaveragepool(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_globalmaxpool(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_batchnorm(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_layernorm(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_lrn(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_gemm(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_matmul(ox_builder *b, const Onnx__NodeProto *n);
/* onnx_ops_tensor.c */
slim_status ox_map_relu(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_leakyrelu(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_elu(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_sigmoid(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_tanh(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_hardsigmoid(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_hardswish(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_gelu(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_clip(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_softmax(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_logsoftmax(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_add(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_mul(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_sub(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_div(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_neg(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_reducemean(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_dropout(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_identity(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_constant(ox_builder *b, const Onnx__NodeProto *n);
/* onnx_ops_shape.c */
slim_status ox_map_concat(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_pad(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_flatten(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_reshape(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_squeeze(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_unsqueeze(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_transpose(ox_builder *b, const Onnx__NodeProto *n);
slim_status ox_map_slice(ox_builder *b, const Onnx__NodeProto *n);
/* onnx_ops_loss.c */
slim_status ox_map_loss(ox_builder *b, const Onnx__NodeProto *n);
/* A layer-norm layer over the last ONNX axis of x with host gamma/beta (or NULL). */
slim_status ox_layer_norm(ox_builder *b, ox_value *x, const slim__ox_tensor *gamma,
                          const char *gamma_name, const slim__ox_tensor *beta,
                          const char *beta_name, double eps, const char *out_name);
/* Helpers shared by the op files (onnx_ops_tensor.c) */
slim_status ox_no_outputs_from(ox_builder *b, const Onnx__NodeProto *n, size_t from,
                               const char *why);
/* An op of one input that keeps its layout; kv: attributes. */
slim_status ox_unary(ox_builder *b, const Onnx__NodeProto *n, const char *op, const ox_kv *kv,
                     int n_kv);
/* A unary op applied to value v, its output defined as out_name. */
slim_status ox_unary_value(ox_builder *b, ox_value *v, const char *op, const ox_kv *kv, int n_kv,
                           const char *out_name);
/* Integer values of a host input (shapes, pads, axes); count -1 when absent. */
slim_status ox_host_ints(ox_builder *b, const Onnx__NodeProto *n, size_t i, int64_t *out, int max,
                         int *count);
slim_status ox_host_scalar(ox_builder *b, const Onnx__NodeProto *n, size_t i, double def,
                           double *out);
/* A Slice node's window over value vals[vi], per ONNX axis: first index,
 * step and count (ONNX's clamping applied; a count may be 0). */
slim_status ox_slice_window(ox_builder *b, const Onnx__NodeProto *n, int vi, int64_t *lo,
                            int64_t *step, int64_t *d);

#endif
