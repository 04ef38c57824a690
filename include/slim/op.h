/*
 * slim/op.h - the op ABI: what an op kind is, shared by built-in ops and plugins.
 *
 * An op kind is a const slim_op_desc: a name, an attribute schema, and the
 * functions infer (shapes, compile time), forward and backward (run time).
 * Built-in ops and plugins register the same descriptor through the host
 * table's register_op. A plugin includes only this header.
 *
 * Glossary of dimension names: N batch, H W spatial, C channels,
 * KH KW kernel, SH SW stride, O output channels. Activations are NHWC,
 * filters HWIO.
 */
#ifndef SLIM_OP_H
#define SLIM_OP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version: major changes break plugins, minor ones only append. */
#define SLIM_ABI_MAJOR 1
#define SLIM_ABI_MINOR                                                                             \
    6 /* 1.1: slim_op_desc.slots, n_slots (update ops' slots);                                     \
         1.2: slim_infer_ctx.set_backward_reads;                                                   \
         1.3: slim_infer_ctx.set_in_place, set_backward_in_place;                                  \
         1.4: slim_kernel_ctx.replica, replicas, allreduce (data-parallel training);               \
         1.5: slim_host.declare_onnx_op;                                                           \
         1.6: SLIM_OP_LIST; fusion rules (slim_fusion_desc, host register_fusion) */

#if defined(__GNUC__)
#define SLIM_EXPORT __attribute__((visibility("default")))
#define SLIM_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SLIM_EXPORT
#define SLIM_PRINTF(f, a)
#endif

/* Status codes: one X-macro yields the enum and the message strings. */
#define SLIM_STATUS_LIST(X)                                                                        \
    X(SLIM_OK, "ok")                                                                               \
    X(SLIM_EINVAL, "invalid argument")                                                             \
    X(SLIM_ESHAPE, "shape mismatch")                                                               \
    X(SLIM_ETYPE, "type mismatch")                                                                 \
    X(SLIM_ENOMEM, "out of memory")                                                                \
    X(SLIM_EIO, "input/output error")                                                              \
    X(SLIM_EPARSE, "parse error")                                                                  \
    X(SLIM_ENOTFOUND, "not found")                                                                 \
    X(SLIM_EEXIST, "already exists")                                                               \
    X(SLIM_EABI, "ABI mismatch")                                                                   \
    X(SLIM_ECORRUPT, "corrupt data")                                                               \
    X(SLIM_EUNSUPPORTED, "unsupported")                                                            \
    X(SLIM_ESTATE, "invalid state")                                                                \
    X(SLIM_EINTERNAL, "internal error")

typedef enum slim_status_code {
#define SLIM_X_ENUM(name, text) name,
    SLIM_STATUS_LIST(SLIM_X_ENUM)
#undef SLIM_X_ENUM
        SLIM_STATUS_COUNT
} slim_status_code;

typedef int slim_status; /* 0 = SLIM_OK */

/* Filled by fallible calls (the last argument, may be NULL). */
typedef struct slim_error {
    slim_status code;
    char msg[1024];
    char file[256]; /* source position where one exists (DSL, data files) */
    int line, col;
} slim_error;

typedef enum slim_dtype {
    SLIM_F32 = 1,
    SLIM_U8 = 2,
    SLIM_I32 = 3,
    SLIM_I64 = 4,
} slim_dtype;

#define SLIM_MAX_DIMS 6

typedef struct slim_shape {
    int rank;
    int64_t dim[SLIM_MAX_DIMS];
} slim_shape;

/* A tensor view: borrowed data, dense row-major. */
typedef struct slim_tensor {
    slim_dtype dtype;
    slim_shape shape;
    void *data;
} slim_tensor;

static inline int64_t slim_shape_numel(const slim_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        n *= s->dim[i];
    return n;
}

static inline size_t slim_dtype_size(slim_dtype t)
{
    switch (t) {
    case SLIM_F32: return 4;
    case SLIM_U8: return 1;
    case SLIM_I32: return 4;
    case SLIM_I64: return 8;
    }
    return 0;
}

static inline slim_shape slim_shape_make(int rank, const int64_t *dim)
{
    slim_shape s = {0};
    s.rank = rank;
    for (int i = 0; i < rank && i < SLIM_MAX_DIMS; i++)
        s.dim[i] = dim[i];
    return s;
}

static inline bool slim_shape_equal(const slim_shape *a, const slim_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i])
            return false;
    return true;
}

/* "(2,8,8,3)" into buf, for error messages; returns buf. */
static inline const char *slim_shape_str(const slim_shape *s, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < s->rank && len < size; i++)
        len +=
            (size_t)snprintf(buf + len, size - len, "%s%lld", i ? "," : "", (long long)s->dim[i]);
    if (len < size)
        snprintf(buf + len, size - len, ")");
    return buf;
}

/* ---- attribute schema ------------------------------------------------- */

typedef enum slim_attr_type {
    SLIM_ATTR_INT = 1,
    SLIM_ATTR_FLOAT,
    SLIM_ATTR_BOOL,
    SLIM_ATTR_STRING,
    SLIM_ATTR_INTS,
    SLIM_ATTR_FLOATS,
} slim_attr_type;

typedef struct slim_attr_spec {
    const char *name;
    slim_attr_type type;
    /* Default in text form: "1", "0.5", "true", "SAME", "[1, 1]".
     * NULL means the attribute is required. */
    const char *def;
    /* Inclusive range checked for numbers (each element of a list) when ranged. */
    bool ranged;
    double min, max;
    /* For strings: the allowed values separated by '|', NULL = any. */
    const char *choices;
    const char *doc;
} slim_attr_spec;

/* ---- infer: compile-time shapes ---------------------------------------- */

typedef struct slim_infer_ctx slim_infer_ctx;
typedef struct slim_kernel_ctx slim_kernel_ctx;
typedef struct slim_host slim_host;
typedef struct slim_registry slim_registry;

/* What infer sees of an input: type and shape (no data at compile time). */
typedef struct slim_tensor_desc {
    slim_dtype dtype;
    slim_shape shape;
} slim_tensor_desc;

struct slim_infer_ctx {
    int n_inputs;
    const slim_tensor_desc *inputs;
    bool training; /* compiled for training (batch statistics, dropout on) */
    int nth;       /* threads the kernels will run with (for workspace sizing) */
    void *params;  /* zeroed, desc->params_size bytes: infer fills it for the kernels */
    void *priv;    /* the engine's */

    /* Typed attribute values: always present (defaults applied, types and ranges
     * already checked against the schema). Lists return their length. */
    int64_t (*attr_int)(const slim_infer_ctx *c, const char *name);
    double (*attr_float)(const slim_infer_ctx *c, const char *name);
    bool (*attr_bool)(const slim_infer_ctx *c, const char *name);
    const char *(*attr_str)(const slim_infer_ctx *c, const char *name);
    int (*attr_ints)(const slim_infer_ctx *c, const char *name, const int64_t **vals);
    int (*attr_floats)(const slim_infer_ctx *c, const char *name, const double **vals);

    /* Declare output i (0 <= i < desc->n_outputs). */
    void (*set_output)(slim_infer_ctx *c, int i, slim_dtype dtype, const slim_shape *shape);
    /* A buffer kept from forward to backward (masks, statistics, argmax).
     * Returns its index in kernel ctx->saved. Only allocated when training. */
    int (*add_saved)(slim_infer_ctx *c, slim_dtype dtype, const slim_shape *shape);
    /* Scratch bytes shared by the threads of one node, in forward and again
     * in backward; its contents do not last from one to the other (use
     * add_saved for that: backward gets its own scratch). */
    void (*set_workspace)(slim_infer_ctx *c, size_t bytes);
    /* Report an error: returns code. The engine prefixes the node and op name. */
    slim_status (*fail)(slim_infer_ctx *c, slim_status code, const char *fmt, ...)
        SLIM_PRINTF(3, 4);
    /* Since ABI 1.2. Which forward inputs and outputs (bit i = input or
     * output i) the backward kernel reads; not calling it means all of them.
     * The memory planner releases the others once forward is done with them
     * (an add keeps neither, relu only its output), so a backward kernel must
     * not read what it leaves out: the op harness fills those with NaN. */
    void (*set_backward_reads)(slim_infer_ctx *c, uint32_t inputs, uint32_t outputs);
    /* Since ABI 1.3. Output out may be written in the memory of input in:
     * the forward kernel gives the same result when the two are one buffer
     * (each element of in is read before that memory is written, and not
     * after). Each call adds a candidate; the memory planner gives the output
     * the first candidate's buffer that nothing reads later (not a graph
     * input or a marked tensor, no later step, not another input or output
     * of this one) and whose size matches: the output's stores then find
     * their lines in cache, and the arena is smaller. */
    void (*set_in_place)(slim_infer_ctx *c, int out, int in);
    /* Since ABI 1.3. The same for backward: the gradient of input in may be
     * written in the memory of the gradient of output out. The op harness
     * runs both kinds that way too and compares the bits. */
    void (*set_backward_in_place)(slim_infer_ctx *c, int in, int out);
};

/* ---- kernels: run time ------------------------------------------------- */

/*
 * forward and backward are called by all nth threads of the pool with their
 * own ith (0..nth-1); each splits its own work. sync() is a barrier across
 * the nth threads (every thread must call it the same number of times).
 * Kernels must not allocate; scratch comes from ws.
 */
struct slim_kernel_ctx {
    int ith, nth;
    const void *params;
    int n_inputs, n_outputs, n_saved;
    slim_tensor *in;    /* inputs (written only for desc->mutates inputs) */
    slim_tensor *out;   /* outputs */
    slim_tensor *saved; /* forward -> backward buffers */
    /* backward only: */
    const slim_tensor *dout; /* gradients of the outputs; data NULL = zero */
    slim_tensor *din;        /* gradients to write (overwrite); data NULL = not needed */
    void *ws;
    size_t ws_size;
    bool training;
    uint64_t seed; /* run seed: randomness = f(seed, node_id, step, element) */
    int64_t step;  /* global step */
    uint32_t node_id;
    float lr; /* learning rate (update ops) */
    const slim_host *host;
    void (*sync)(const slim_kernel_ctx *c);
    void *priv; /* the engine's */
    /* Since ABI 1.4, training across processes: this process's batch is rows
     * [replica * N, (replica + 1) * N) of a global batch of replicas * N
     * (replica 0 of 1 alone; replicas may read 0 there too). */
    int replica, replicas;
    /* Since ABI 1.4: NULL unless batch statistics are shared across the
     * processes (synchronized batch norm); then it sums n doubles
     * elementwise over every process, in place. Thread 0 alone calls it,
     * between two syncs. */
    void (*allreduce)(const slim_kernel_ctx *c, double *data, int64_t n);
};

typedef void (*slim_kernel_fn)(const slim_kernel_ctx *c);

/* ---- the descriptor ---------------------------------------------------- */

enum {
    SLIM_OP_RANDOM = 1u << 0, /* uses seed/step (dropout) */
    SLIM_OP_UPDATE = 1u << 1, /* an optimizer update op */
    SLIM_OP_LOSS = 1u << 2,   /* produces a scalar loss */
    /* Since ABI 1.6: the inputs are a list of any length (n_inputs): a graph
     * node still takes at most max_inputs, the compiler's own steps more
     * (global_norm over every gradient). Kernels index in[] by n_inputs. */
    SLIM_OP_LIST = 1u << 3,
};

/* An optimizer slot of an update op (SLIM_OP_UPDATE): per-parameter state the
 * op reads and writes in place (input 2 + k). The engine allocates it when it
 * compiles a training program and fills it with its initial value. */
typedef struct slim_slot_spec {
    const char *name; /* its name in checkpoints: "momentum", "rms", "accumulator" */
    double init;      /* initial value of every element ... */
    /* ... or, when not NULL, the op's SLIM_ATTR_FLOAT attribute that holds it
     * (adagrad's initial_accumulator_value) */
    const char *init_attr;
} slim_slot_spec;

typedef struct slim_op_desc {
    uint32_t struct_size; /* sizeof(slim_op_desc) the op was built with */
    const char *name;
    const char *doc;
    int min_inputs, max_inputs; /* max_inputs <= SLIM_MAX_INPUTS */
    int n_outputs;
    const slim_attr_spec *attrs;
    int n_attrs;
    size_t params_size;
    unsigned flags;
    uint32_t nondiff_inputs; /* bit i: input i gets no gradient (labels, indices) */
    uint32_t mutates_inputs; /* bit i: kernels write input i (must be a parameter/state) */

    slim_status (*infer)(slim_infer_ctx *c);
    slim_kernel_fn forward;
    slim_kernel_fn backward; /* NULL = not differentiable */
    /* Plain reference kernels (loops, no threads needed): the op harness
     * compares forward with forward_ref; SLIM_KERNELS=ref forces them. */
    slim_kernel_fn forward_ref;
    slim_kernel_fn backward_ref;

    /* Update ops (SLIM_OP_UPDATE), since ABI 1.1. Inputs: param, grad, one per
     * slot (all of the param's shape), and optionally, when max_inputs is
     * 3 + n_slots, a scalar f32 gradient scale: the engine's global-norm
     * clipping (slim_compile_opts.clip_gradient_norm) computes it once over
     * every gradient and the op multiplies the gradient by it. slots NULL with
     * n_slots 0: min_inputs - 2 unnamed slots that start at zero. */
    const slim_slot_spec *slots;
    int n_slots;
} slim_op_desc;

#define SLIM_MAX_INPUTS 32

/* ---- fusion rules: graph rewrites for inference (since ABI 1.6) --------- */

/*
 * A fusion rule turns a few nodes into one step that runs a fused kernel:
 * ops/conv_fuse.c's conv2d_post makes a conv2d take in the batch_norm, add
 * and activation nodes after it; its conv2d_chain makes a depthwise-separable
 * block one conv2d_chain step. Rules register like ops (the host table's
 * register_fusion, or slim_registry_add_fusion) and are applied in the order
 * they were registered when a program is compiled for inference (unless
 * slim_compile_opts.no_fusion): a rule's apply runs once for each node whose
 * op is its anchor, in graph order, and reads and rewrites the program's
 * nodes through the context.
 *
 * The engine checks the shape of a pattern, the rule picks the ops (as
 * ggml_can_fuse): a node can take in only the node that alone reads its
 * output (its consumer) or the node that writes an input it alone reads (a
 * producer), and never across a tensor the caller keeps (a marked output,
 * the loss). The node keeps its place in the schedule; once the rule is done
 * every input of every node must be computed before that node runs.
 *
 * Nodes are numbered in graph order; reads see the graph as rewritten so far.
 * Adding a pattern is a rule in ops/ (or a plugin) and a line in ops/ops.def;
 * the engine names no op. A rewritten node's op checks its inputs and
 * attributes in infer as for any node.
 */
typedef struct slim_fuse_ctx slim_fuse_ctx;

/* Input `input` of node `node`: what set_inputs lists. */
typedef struct slim_fuse_input {
    int node, input;
} slim_fuse_input;

struct slim_fuse_ctx {
    int node;       /* the node apply is called for (its op is the rule's anchor) */
    bool reference; /* the program runs the reference kernels (SLIM_KERNELS=ref) */
    void *priv;     /* the engine's */

    /* Reading. Node and input numbers out of range read as nothing (NULL, -1). */
    const char *(*op)(const slim_fuse_ctx *c, int node);
    const slim_op_desc *(*desc)(const slim_fuse_ctx *c, int node); /* its op's descriptor */
    const char *(*name)(const slim_fuse_ctx *c, int node);
    int (*taken)(const slim_fuse_ctx *c, int node); /* how many nodes it took in */
    int (*n_inputs)(const slim_fuse_ctx *c, int node);
    const slim_tensor_desc *(*input)(const slim_fuse_ctx *c, int node, int i);
    /* The tensor behind input i: two inputs with one id are one tensor. */
    int (*input_id)(const slim_fuse_ctx *c, int node, int i);
    const slim_tensor_desc *(*output)(const slim_fuse_ctx *c, int node); /* output 0 */
    /* Attribute values; when the node's op has none of that name and type:
     * 0, 0, NULL, -1. attr_int reads INT and BOOL attributes. */
    int64_t (*attr_int)(const slim_fuse_ctx *c, int node, const char *name);
    double (*attr_float)(const slim_fuse_ctx *c, int node, const char *name);
    const char *(*attr_str)(const slim_fuse_ctx *c, int node, const char *name);
    int (*attr_ints)(const slim_fuse_ctx *c, int node, const char *name, const int64_t **vals);

    /* The pattern's shape. The consumer of node (single output), and which of
     * its inputs that output is (*input); -1 when the output has other
     * readers or none, or is kept. */
    int (*consumer)(const slim_fuse_ctx *c, int node, int *input);
    /* The producer of input i of node: -1 when it has several outputs, node
     * is not the tensor's only reader, or the tensor is kept or not a node's. */
    int (*producer)(const slim_fuse_ctx *c, int node, int i);
    /* Whether input i of node `of` exists before node `at` runs (a graph
     * input, a parameter, or written by a node before `at` in graph order):
     * what node `at` may take as an input. */
    bool (*ready)(const slim_fuse_ctx *c, int of, int i, int at);

    /* Rewriting; each returns SLIM_OK or an error (the engine's message).
     * node takes in other, its consumer or a producer: other no longer runs
     * and the tensor between them is not stored; with the consumer, node now
     * writes the consumer's outputs. Inputs do not change: add or set them. */
    slim_status (*absorb)(slim_fuse_ctx *c, int node, int other);
    /* Append input i of node `from` (a node taken in too) to node's inputs. */
    slim_status (*add_input)(slim_fuse_ctx *c, int node, int from, int i);
    /* Replace node's inputs by the n listed (read before any changes). */
    slim_status (*set_inputs)(slim_fuse_ctx *c, int node, int n, const slim_fuse_input *in);
    /* node runs op instead: the attributes the two ops share by name and type
     * keep their values where op accepts them, the others take op's defaults;
     * the label goes back to op's name. */
    slim_status (*set_op)(slim_fuse_ctx *c, int node, const char *op);
    /* An attribute from text, as a default is written ("true", "0.001",
     * "[2, 2]", "relu6"), or copied from attribute from_name of node from;
     * checked against the op's schema. */
    slim_status (*set_attr)(slim_fuse_ctx *c, int node, const char *name, const char *text);
    slim_status (*copy_attr)(slim_fuse_ctx *c, int node, const char *name, int from,
                             const char *from_name);
    /* What profiles show: the step's name (default: the node's) and its op
     * (default: the op's name, e.g. "conv2d+batch_norm+relu"). Copied. */
    slim_status (*set_name)(slim_fuse_ctx *c, int node, const char *name);
    slim_status (*set_label)(slim_fuse_ctx *c, int node, const char *label);
};

typedef struct slim_fusion_desc {
    uint32_t struct_size; /* sizeof(slim_fusion_desc) the rule was built with */
    const char *name;     /* lower-case letters, digits and '_' */
    const char *doc;
    const char *anchor; /* the op of the nodes apply is called for */
    slim_status (*apply)(slim_fuse_ctx *c);
} slim_fusion_desc;

/* ---- the host table: append-only; check size before using new entries -- */

struct slim_host {
    uint32_t size; /* sizeof(slim_host) of the engine */
    uint32_t abi_major, abi_minor;
    slim_status (*register_op)(slim_registry *reg, const slim_op_desc *desc, slim_error *err);
    /* Row-major single-threaded SGEMM: C = alpha*op(A)*op(B) + beta*C,
     * op(A) is m x k, op(B) is k x n. Call it from each thread on its own tile. */
    void (*sgemm)(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                  int64_t ldc);
    void (*log)(int level, const char *fmt, ...) SLIM_PRINTF(2, 3);
    /* Since ABI 1.5 (check size >= offsetof(slim_host, declare_onnx_op) +
     * sizeof(void *)): op, registered already, implements the ONNX op type
     * onnx_type ("Swish", or "domain:Type" outside the default domain); the
     * ONNX importer then maps such nodes to it: the node's inputs in their
     * layout (an elementwise op works in any), ONNX attributes of the same
     * names as the op's. */
    slim_status (*declare_onnx_op)(slim_registry *reg, const char *onnx_type, const char *op,
                                   slim_error *err);
    /* Since ABI 1.6 (check size first): register a fusion rule. */
    slim_status (*register_fusion)(slim_registry *reg, const slim_fusion_desc *rule,
                                   slim_error *err);
};

/* ---- plugins ----------------------------------------------------------- */

typedef struct slim_plugin_info {
    uint32_t abi_major, abi_minor;
    uint32_t op_desc_size; /* sizeof(slim_op_desc) at build time */
    uint32_t host_size;    /* sizeof(slim_host) at build time */
    const char *name;
    const char *version;
} slim_plugin_info;

/* A plugin exports these two symbols (C linkage, default visibility). */
#define SLIM_PLUGIN_INFO_SYMBOL "slim_plugin_get_info"
#define SLIM_PLUGIN_INIT_SYMBOL "slim_plugin_init"
typedef const slim_plugin_info *(*slim_plugin_info_fn)(void);
typedef slim_status (*slim_plugin_init_fn)(slim_registry *reg, const slim_host *host,
                                           slim_error *err);

/* ---- helpers usable by every op ----------------------------------------- */

/* Split [0, n) into nth nearly equal ranges; thread ith gets [*lo, *hi). */
static inline void slim_split(int64_t n, int ith, int nth, int64_t *lo, int64_t *hi)
{
    int64_t q = n / nth, r = n % nth;
    *lo = ith * q + (ith < r ? ith : r);
    *hi = *lo + q + (ith < r ? 1 : 0);
}

/* Counter-based random numbers (splitmix64 finalizer over a combined key):
 * the value depends only on (seed, stream, counter), never on thread order. */
static inline uint64_t slim_rand_u64(uint64_t seed, uint64_t stream, uint64_t counter)
{
    uint64_t z = seed ^ (stream * 0x9E3779B97F4A7C15ull) ^ (counter * 0xD1B54A32D192ED03ull);
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 24 random bits. */
static inline float slim_rand_uniform(uint64_t seed, uint64_t stream, uint64_t counter)
{
    return (float)(slim_rand_u64(seed, stream, counter) >> 40) * (1.0f / 16777216.0f);
}

#ifdef __cplusplus
}
#endif
#endif /* SLIM_OP_H */
