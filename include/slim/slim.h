/*
 * slim/slim.h - the public C API of libslim.
 *
 * registry -> graph (inputs, parameters, nodes) -> compile -> program -> run.
 *
 *   slim_registry *reg;   slim_registry_new(&reg, &err);     built-in ops
 *   slim_graph *g;        slim_graph_new(reg, &g, &err);
 *   slim_graph_input(g, "images", SLIM_F32, &shape, &x, &err);
 *   slim_graph_param(g, "conv1/weights", &wshape, &init, NULL, &w, &err);
 *   slim_graph_add(g, "conv2d", "conv1", (slim_tid[]){x, w}, 2, attrs, &y, 1, NULL, &err);
 *   ...
 *   slim_graph_set_loss(g, loss, &err);
 *   slim_program *p;      slim_graph_compile(g, &opts, &p, &err);
 *   slim_program_input(p, "images", &view, &err);  fill view.data
 *   slim_program_run(p, &run, &err);
 *
 * Every fallible call returns a slim_status (0 = OK) and fills the optional
 * slim_error. The library never exits and never prints.
 */
#ifndef SLIM_SLIM_H
#define SLIM_SLIM_H

#include "op.h"

#ifdef __cplusplus
extern "C" {
#endif

SLIM_EXPORT const char *slim_status_str(slim_status s);
SLIM_EXPORT const char *slim_version(void);

/* Log sink for the library (warnings, plugin loading); default: none. */
typedef void (*slim_log_fn)(int level, const char *msg, void *user);
enum { SLIM_LOG_ERROR = 0, SLIM_LOG_WARN = 1, SLIM_LOG_INFO = 2, SLIM_LOG_DEBUG = 3 };
SLIM_EXPORT void slim_set_log(slim_log_fn fn, void *user);

/* ---- registry ----------------------------------------------------------- */

/* A registry holding every built-in op and fusion rule. */
SLIM_EXPORT slim_status slim_registry_new(slim_registry **out, slim_error *err);
SLIM_EXPORT void slim_registry_free(slim_registry *reg);
SLIM_EXPORT slim_status slim_registry_add(slim_registry *reg, const slim_op_desc *desc,
                                          slim_error *err);
/* A fusion rule (<slim/op.h>), applied after those registered before it. */
SLIM_EXPORT slim_status slim_registry_add_fusion(slim_registry *reg, const slim_fusion_desc *rule,
                                                 slim_error *err);
SLIM_EXPORT int slim_registry_fusion_count(const slim_registry *reg);
SLIM_EXPORT const slim_fusion_desc *slim_registry_fusion_at(const slim_registry *reg, int i);
/* dlopen a plugin, check its info (ABI, sizes), run its init. */
SLIM_EXPORT slim_status slim_registry_load_plugin(slim_registry *reg, const char *path,
                                                  slim_error *err);
SLIM_EXPORT const slim_op_desc *slim_registry_find(const slim_registry *reg, const char *name);
SLIM_EXPORT int slim_registry_count(const slim_registry *reg);
/* The op a plugin declared for an ONNX op type (slim_host.declare_onnx_op), or NULL. */
SLIM_EXPORT const char *slim_registry_onnx_op(const slim_registry *reg, const char *onnx_type);
SLIM_EXPORT const slim_op_desc *slim_registry_at(const slim_registry *reg, int i);
/* The host table the engine hands to plugins (and to built-in kernels). */
SLIM_EXPORT const slim_host *slim_host_table(void);

/* ---- attributes (builder side) ------------------------------------------ */

typedef struct slim_attrs slim_attrs;
SLIM_EXPORT slim_attrs *slim_attrs_new(void);
SLIM_EXPORT void slim_attrs_free(slim_attrs *a);
SLIM_EXPORT slim_status slim_attrs_set_int(slim_attrs *a, const char *key, int64_t v);
SLIM_EXPORT slim_status slim_attrs_set_float(slim_attrs *a, const char *key, double v);
SLIM_EXPORT slim_status slim_attrs_set_bool(slim_attrs *a, const char *key, bool v);
SLIM_EXPORT slim_status slim_attrs_set_str(slim_attrs *a, const char *key, const char *v);
SLIM_EXPORT slim_status slim_attrs_set_ints(slim_attrs *a, const char *key, const int64_t *v,
                                            int n);
SLIM_EXPORT slim_status slim_attrs_set_floats(slim_attrs *a, const char *key, const double *v,
                                              int n);
/* Set from text, parsed by the schema type when the node is added
 * ("3", "[2, 2]", "SAME", "true"): what a config-file front end needs. */
SLIM_EXPORT slim_status slim_attrs_set_text(slim_attrs *a, const char *key, const char *text);
/* Several at once from "key=value; key=value" text (spaces around keys and
 * values ignored), each as slim_attrs_set_text. NULL or "" sets nothing; a
 * part without '=' or an empty key is SLIM_EINVAL, with what came before it set. */
SLIM_EXPORT slim_status slim_attrs_set_list(slim_attrs *a, const char *text);

/* ---- graph -------------------------------------------------------------- */

typedef struct slim_graph slim_graph;
typedef int32_t slim_tid; /* a tensor of a graph */

typedef enum slim_init_kind {
    SLIM_INIT_ZEROS = 0,
    SLIM_INIT_CONSTANT,         /* value */
    SLIM_INIT_UNIFORM,          /* [lo, hi) */
    SLIM_INIT_NORMAL,           /* mean, stddev */
    SLIM_INIT_TRUNCATED_NORMAL, /* mean, stddev; redrawn beyond 2 stddev (as TF) */
    SLIM_INIT_XAVIER_UNIFORM,   /* glorot: limit sqrt(6/(fan_in+fan_out)) */
    SLIM_INIT_XAVIER_NORMAL,    /* glorot: stddev sqrt(2/(fan_in+fan_out)) */
    SLIM_INIT_VARIANCE_SCALING, /* factor, mode, uniform: TF's variance_scaling (he: 2, fan_in) */
    SLIM_INIT_DATA,             /* data: given values (an imported model's weights) */
} slim_init_kind;

typedef enum slim_fan_mode { SLIM_FAN_IN = 0, SLIM_FAN_OUT, SLIM_FAN_AVG } slim_fan_mode;

typedef struct slim_init {
    slim_init_kind kind;
    double value;        /* CONSTANT */
    double lo, hi;       /* UNIFORM */
    double mean, stddev; /* NORMAL, TRUNCATED_NORMAL */
    double factor;       /* VARIANCE_SCALING */
    slim_fan_mode mode;  /* VARIANCE_SCALING */
    bool uniform;        /* VARIANCE_SCALING */
    /* DATA: the parameter's values, numel floats; slim_graph_param copies them */
    const float *data;
} slim_init;

enum {
    SLIM_PARAM_TRAINABLE = 1u << 0, /* gets gradients and optimizer updates */
};

typedef struct slim_param_opts {
    unsigned flags; /* default (opts NULL): SLIM_PARAM_TRAINABLE */
    float lr_mult;  /* learning-rate multiplier (0 means 1) */
} slim_param_opts;

SLIM_EXPORT slim_status slim_graph_new(const slim_registry *reg, slim_graph **out, slim_error *err);
SLIM_EXPORT void slim_graph_free(slim_graph *g);

/* A tensor fed at run time. */
SLIM_EXPORT slim_status slim_graph_input(slim_graph *g, const char *name, slim_dtype dtype,
                                         const slim_shape *shape, slim_tid *out, slim_error *err);
/* A persistent f32 tensor (weights, biases, batch-norm statistics). Without
 * SLIM_PARAM_TRAINABLE it is state: read by ops, written only by ops that
 * declare it (batch-norm moving averages), never by the optimizer. */
SLIM_EXPORT slim_status slim_graph_param(slim_graph *g, const char *name, const slim_shape *shape,
                                         const slim_init *init, const slim_param_opts *opts,
                                         slim_tid *out, slim_error *err);
/* Add a node of a registered op kind. Its outputs are named name, name:1, ...
 * Shapes are inferred here: errors name the node, the op and the shapes. */
SLIM_EXPORT slim_status slim_graph_add(slim_graph *g, const char *op, const char *name,
                                       const slim_tid *inputs, int n_inputs,
                                       const slim_attrs *attrs, slim_tid *outputs, int max_outputs,
                                       int *n_outputs, slim_error *err);
SLIM_EXPORT slim_status slim_graph_find(const slim_graph *g, const char *name, slim_tid *out);
SLIM_EXPORT slim_status slim_graph_tensor_info(const slim_graph *g, slim_tid t,
                                               slim_tensor_desc *desc);
SLIM_EXPORT const char *slim_graph_tensor_name(const slim_graph *g, slim_tid t);
/* The scalar f32 tensor that training minimizes. */
SLIM_EXPORT slim_status slim_graph_set_loss(slim_graph *g, slim_tid loss, slim_error *err);
/* Keep a tensor readable after run (logits, accuracy). */
SLIM_EXPORT slim_status slim_graph_mark_output(slim_graph *g, slim_tid t, slim_error *err);

/* Parameters: the graph owns their storage; every program compiled from it
 * shares them (a training and an evaluation program see the same weights). */
SLIM_EXPORT int slim_graph_param_count(const slim_graph *g);
SLIM_EXPORT slim_status slim_graph_param_at(const slim_graph *g, int i, const char **name,
                                            slim_tensor *view, unsigned *flags);
SLIM_EXPORT slim_status slim_graph_param_get(const slim_graph *g, const char *name,
                                             slim_tensor *view, slim_error *err);
/* (Re)initialize every parameter from its initializer and the seed. A
 * parameter's values depend only on (seed, its name), not on creation order. */
SLIM_EXPORT slim_status slim_graph_init_params(slim_graph *g, uint64_t seed, slim_error *err);

/* ---- compile and run ---------------------------------------------------- */

typedef struct slim_program slim_program;

/* Data-parallel training (slim_train across processes sets it; see
 * runtime/dist.h): what the program calls while it runs so that several
 * processes, each with its own share of a global batch, apply the same
 * averaged gradients. */
typedef struct slim_collective {
    /* This process computes rows [replica * N, (replica + 1) * N) of a global
     * batch of replicas * N examples (dropout draws its masks for those rows). */
    int replica, replicas;
    /* The gradient of trained parameter `param` (its slim_graph_param_at
     * index) is final: called on one thread right after the step that
     * completes it, in the order they complete; grad stays valid until the
     * parameter's update. With it set, the updates run after backward. */
    void (*grad_ready)(void *user, int param, const float *grad, int64_t n);
    /* Before that parameter's update: the gradient to use instead of the
     * local one, times *scale (1/replicas averages a sum); NULL keeps the
     * local one (after a failure, which the caller reports after the run). */
    const float *(*grad_wait)(void *user, int param, float *scale);
    /* Sums n doubles elementwise across the processes, in place (batch
     * statistics of the global batch: synchronized batch norm); NULL = each
     * process keeps its own statistics. */
    void (*allreduce)(void *user, double *data, int64_t n);
    void *user;
} slim_collective;

typedef struct slim_compile_opts {
    bool training;         /* backward + update; batch statistics; dropout on */
    int num_threads;       /* every thread of the run, BLIS included; 0 = 1 */
    const char *optimizer; /* update op kind: "sgd_update", "momentum_update"; NULL = none */
    const slim_attrs *optimizer_attrs; /* e.g. momentum, use_nesterov */
    /* Parameters whose name starts with one of these prefixes (comma
     * separated) are trained; NULL = every trainable parameter. */
    const char *trainable_scopes;
    /* > 0: global-norm clipping (tf.clip_by_global_norm): after backward, every
     * gradient is scaled by clip / max(norm, clip), norm being the L2 norm of
     * all the trained parameters' gradients together; the updates follow.
     * The optimizer op must take a gradient scale (every built-in one does). */
    float clip_gradient_norm;
    /* Inference only: do not fuse a conv2d with the batch_norm, residual
     * add and relu / relu6 nodes after it (the compiler folds them into the
     * convolution unless this is set; for comparing with the unfused graph). */
    bool no_fusion;
    /* Training across processes (NULL = alone); copied by compile. */
    const slim_collective *collective;
    /* With trainable_scopes: a batch_norm (any node that updates state)
     * none of whose parameters is trained still normalizes with the batch's
     * statistics and updates its moving averages, as TF-Slim's fine-tuning
     * does; false (default): it runs as in inference (frozen). */
    bool train_frozen_batch_norm;
} slim_compile_opts;

SLIM_EXPORT slim_status slim_graph_compile(slim_graph *g, const slim_compile_opts *opts,
                                           slim_program **out, slim_error *err);
SLIM_EXPORT void slim_program_free(slim_program *p);

typedef struct slim_run_opts {
    float learning_rate;
    int64_t step; /* global step: dropout masks etc. depend on (seed, step) */
    uint64_t seed;
} slim_run_opts;

/* Inputs: write into the returned view before run (a bound input: a view of
 * the bound memory, which the program only reads). */
SLIM_EXPORT slim_status slim_program_input(slim_program *p, const char *name, slim_tensor *view,
                                           slim_error *err);
/* Zero-copy input: the program reads input `name` straight from `data` until
 * it is unbound (data NULL) or bound again; never during a run. desc must
 * match the input's dtype and shape; data must be SLIM_BIND_ALIGN-aligned, and
 * `bytes` (what the caller owns at data) must cover the tensor plus
 * SLIM_BIND_SLACK readable bytes after it (BLIS kernels read past the end of
 * their operands). The program never writes to it; the memory must stay valid
 * while bound. The pipeline's slim_pipeline_next_view batches qualify. */
#define SLIM_BIND_ALIGN 64
#define SLIM_BIND_SLACK 256
SLIM_EXPORT slim_status slim_program_bind_input(slim_program *p, const char *name,
                                                const slim_tensor_desc *desc, const void *data,
                                                size_t bytes, slim_error *err);
/* Outputs marked with slim_graph_mark_output, and the loss; valid until the next run. */
SLIM_EXPORT slim_status slim_program_output(slim_program *p, const char *name, slim_tensor *view,
                                            slim_error *err);
/* The gradient of a trainable parameter from the last run. */
SLIM_EXPORT slim_status slim_program_grad(slim_program *p, const char *param, slim_tensor *view,
                                          slim_error *err);
/* Optimizer slot of a parameter ("momentum", ...) for checkpoints. */
SLIM_EXPORT slim_status slim_program_slot(slim_program *p, const char *param, int i,
                                          slim_tensor *view, slim_error *err);
SLIM_EXPORT slim_status slim_program_run(slim_program *p, const slim_run_opts *opts,
                                         slim_error *err);
/* With clip_gradient_norm: the global norm of the gradients of the last run
 * (before clipping). */
SLIM_EXPORT slim_status slim_program_global_norm(const slim_program *p, float *norm,
                                                 slim_error *err);

typedef struct slim_program_stats {
    size_t arena_bytes;                  /* planned peak of activations, gradients, workspaces */
    size_t naive_bytes;                  /* what one buffer per tensor would take */
    size_t param_bytes;                  /* parameters (owned by the graph) */
    size_t slot_bytes;                   /* optimizer slots */
    int n_forward, n_backward, n_update; /* scheduled kernels */
    int num_threads;
} slim_program_stats;
SLIM_EXPORT void slim_program_get_stats(const slim_program *p, slim_program_stats *st);
/* The memory plan alone: the stats slim_graph_compile's program would report
 * (arena, slots, parameters, kernels), computed without allocating the arena
 * or the optimizer slots, starting threads or initializing parameters. */
SLIM_EXPORT slim_status slim_graph_plan(slim_graph *g, const slim_compile_opts *opts,
                                        slim_program_stats *st, slim_error *err);

/* Per-node timing of the last run (profiling); index over the schedule. */
typedef struct slim_node_time {
    const char *name;
    const char *op;
    int phase; /* 0 forward, 1 backward, 2 update, 3 gradient sum */
    double seconds;
} slim_node_time;
SLIM_EXPORT void slim_program_set_profiling(slim_program *p, bool on);
SLIM_EXPORT int slim_program_times(const slim_program *p, const slim_node_time **times);

#ifdef __cplusplus
}
#endif
#endif /* SLIM_SLIM_H */
