/*
 * dsl/dsl.h - internals of the YAML model language (see README.md, "The model language").
 *
 *   yaml.c    libyaml events -> a small document tree with a position on every node
 *   value.c   values and the environments of variables
 *   expr.c    $expressions and ${interpolation}
 *   args.c    a layer's arguments: explicit keys merged with defaults:, typed access
 *   build.c   expansion: sequences, scopes, blocks, repeat, stack, if, name lookup
 *   params.c  parameters, op attributes, activations, batch norm: what layers are made of
 *   layers.c  the layers that own parameters (conv2d, separable_conv2d,
 *             fully_connected, batch_norm, layer_norm, variable) and plain registry ops
 *   model.c   files, includes, plugins, vars, functions, blocks; the public API
 *   head.c    logits, predictions, accuracy, and the losses
 *
 * Everything a load allocates lives in one arena owned by the model and freed
 * with it, so no error path leaks and nothing is freed piecemeal.
 */
#ifndef SLIM_DSL_DSL_H
#define SLIM_DSL_DSL_H

#include <slim/model.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- arena ---------------------------------------------------------------- */

typedef struct dsl_chunk dsl_chunk;
typedef struct dsl_arena {
    dsl_chunk *head;
    size_t total; /* bytes handed out, against limit */
    size_t limit; /* 0 = none */
} dsl_arena;

void *dsl_alloc(dsl_arena *a, size_t n); /* zeroed, 16-byte aligned; NULL when out of memory */
char *dsl_strndup(dsl_arena *a, const char *s, size_t n);
char *dsl_strdup(dsl_arena *a, const char *s);
char *dsl_printf(dsl_arena *a, const char *fmt, ...) SLIM_PRINTF(2, 3);
void dsl_arena_free(dsl_arena *a);

/* ---- the model ------------------------------------------------------------- */

struct slim_model {
    dsl_arena arena; /* everything the load allocated */
    slim_graph *g;
    slim_model_info info;
    slim_model_layer *layers;
    int n_layers;
};

/* ---- the document tree ---------------------------------------------------- */

typedef enum dnode_kind { DN_SCALAR = 1, DN_SEQ, DN_MAP } dnode_kind;

typedef struct dnode {
    dnode_kind kind;
    const char *file; /* as given to the loader */
    int line, col;    /* 1-based */
    const char *str;  /* scalar text (no NUL inside) */
    bool quoted;      /* a quoted or block scalar: always a string */
    bool plain_multiline;
    int n;                /* sequence items or mapping pairs */
    struct dnode **items; /* sequence items; mapping values */
    struct dnode **keys;  /* mapping keys (scalars) */
} dnode;

/* libyaml's error as "what" and where: an unclosed [ { or quote is reported
 * where it opened (libyaml's position is where it gave up, a line or more
 * later); otherwise libyaml's position, with its context. (Run files too.) */
void slim__yaml_problem(const char *problem, const char *context, size_t problem_line,
                        size_t problem_col, size_t context_line, size_t context_col, char *what,
                        size_t n, int *line, int *col);
/* A model file given a binary file (a checkpoint, an image, ...): what
 * it looks like and what to do, or NULL for text. */
const char *slim__yaml_not_text(const char *file, const char *text, size_t len);

/* Parse one YAML document. Aliases are rejected; keys must be unique scalars. */
slim_status dsl_yaml_parse(dsl_arena *a, const char *file, const char *text, size_t len,
                           dnode **root, slim_error *err);
const dnode *dnode_get(const dnode *map, const char *key);
const dnode *dnode_key(const dnode *map, const char *key); /* the key node itself */
const char *dnode_kind_str(const dnode *n);                /* "a mapping", "'abc'" ... */

/* ---- errors ------------------------------------------------------------------ */

/* "file:line:col: message" into err (code, msg, file, line, col); returns code.
 * at may be NULL (no position). */
slim_status dsl_fail(slim_error *err, const dnode *at, slim_status code, const char *fmt, ...)
    SLIM_PRINTF(4, 5);
slim_status dsl_vfail(slim_error *err, const dnode *at, int col_offset, slim_status code,
                      const char *fmt, va_list ap);
/* Best "did you mean" among candidates (NULL-terminated), or NULL. */
const char *dsl_suggest(const char *word, const char *const *cands, int n);
/* Every key of map must be one of keys[0..n): an unknown one is SLIM_EINVAL
 * at its position, "unknown key 'k' in <what>", with a suggestion or the list. */
slim_status dsl_check_keys(slim_error *err, const dnode *map, const char *const *keys, int n,
                           const char *what);

#define TRY(x)                                                                                     \
    do {                                                                                           \
        slim_status try_st_ = (x);                                                                 \
        if (try_st_ != SLIM_OK)                                                                    \
            return try_st_;                                                                        \
    } while (0)

/* ---- values and expressions -------------------------------------------------- */

typedef enum dval_kind {
    DV_NULL = 0,
    DV_BOOL,
    DV_INT,
    DV_FLOAT,
    DV_STR,
    DV_LIST,
    DV_MAP,
    DV_FUNC /* functions: name(a, b): expression -- s is the body, items the parameter names */
} dval_kind;

typedef struct env env;

typedef struct dval {
    dval_kind kind;
    bool b;
    int64_t i;
    double f;
    const char *s;
    int n;              /* DV_LIST */
    struct dval *items; /* DV_LIST */
    const dnode *map;   /* DV_MAP: the mapping, evaluated lazily */
    const dnode *at;    /* where the value was written */
} dval;

typedef struct env_var {
    const char *name;
    dval val;
} env_var;

struct env {
    const env *parent;
    int n, cap;
    env_var *vars;
};

env *env_new(dsl_arena *a, const env *parent);
slim_status env_set(dsl_arena *a, env *e, const char *name, const dval *v, slim_error *err);
const dval *env_get(const env *e, const char *name);

typedef struct dsl_eval_ctx {
    dsl_arena *arena;
    slim_error *err;
    int depth;
} dsl_eval_ctx;

/* A node's value: plain scalars typed (null, bool, int, float, string),
 * "$expr" evaluated, "${expr}" interpolated, sequences element-wise,
 * mappings kept as DV_MAP. */
slim_status dsl_resolve(dsl_eval_ctx *c, const env *e, const dnode *n, dval *out);
const char *dval_kind_str(const dval *v);
/* The value as text ("3", "0.5", "[1, 2]"), for messages and interpolation. */
const char *dval_str(dsl_arena *a, const dval *v);
bool dval_is_number(const dval *v);
double dval_num(const dval *v);
/* Parse a plain scalar as YAML would type it. */
void dsl_scalar_value(const char *s, bool quoted, dval *out);
/* Whole-string numbers: an integer (overflow flagged), a finite float. */
bool dsl_parse_int(const char *s, int64_t *out, bool *overflow);
bool dsl_parse_float(const char *s, double *out);

/* ---- layer arguments -------------------------------------------------------- */

/* One key of a layer: the explicit value first, then defaults: values from the
 * innermost scope out (vals[0] wins for scalars; nested option maps merge). */
typedef struct dsl_arg {
    const char *key;
    const dnode *keynode; /* where it is written (the explicit one if any) */
    int n;
    const dnode *vals[16];
    bool used;
    bool from_defaults; /* no explicit value */
} dsl_arg;

typedef struct dsl_args {
    const char *kind; /* "conv2d", a block name ... for messages */
    const dnode *at;  /* the layer */
    int n;
    dsl_arg *a;
} dsl_args;

typedef struct dsl dsl;
typedef struct dsl_defaults dsl_defaults;

dsl_arg *args_find(dsl_args *a, const char *key);
/* Typed getters: absent -> *out untouched, returns SLIM_OK (use args_has to check). */
bool args_has(dsl_args *a, const char *key);
slim_status args_int(dsl *d, const env *e, dsl_args *a, const char *key, int64_t lo, int64_t hi,
                     int64_t *out);
slim_status args_float(dsl *d, const env *e, dsl_args *a, const char *key, double lo, double hi,
                       double *out);
slim_status args_bool(dsl *d, const env *e, dsl_args *a, const char *key, bool *out);
/* A string out of choices ("SAME|VALID"), matched case-insensitively, stored as written there. */
slim_status args_choice(dsl *d, const env *e, dsl_args *a, const char *key, const char *choices,
                        const char **out);
slim_status args_str(dsl *d, const env *e, dsl_args *a, const char *key, const char **out);
/* An int or a pair [a, b] of ints (kernel sizes, strides). */
slim_status args_pair(dsl *d, const env *e, dsl_args *a, const char *key, int64_t lo, int64_t hi,
                      int64_t out[2]);
/* The raw value (vals[0]) resolved. */
slim_status args_value(dsl *d, const env *e, dsl_args *a, const char *key, dval *out,
                       const dnode **at);
/* A nested option map (weights: {...}) merged from every source. */
slim_status args_sub(dsl *d, const env *e, dsl_args *a, const char *key, const char *kind,
                     dsl_args *out);
/* Gather a layer's keys: first (a stack item's keys, may be NULL), the layer's
 * own mapping (may be NULL), then every defaults: entry naming kind,
 * innermost scope first. */
slim_status args_collect(dsl *d, const char *kind, const dnode *layer, const dnode *first,
                         const dnode *explicit_map, const dsl_defaults *defs, dsl_args *out);
/* Unknown keys: the first key never used is an error listing the accepted ones. */
slim_status args_check_used(dsl *d, dsl_args *a, const char *const *accepted, int n_accepted);
void args_mark_used(dsl_args *a, const char *key);
/* A required key is absent: a near-miss key is reported as the typo it likely
 * is, else msg at the layer. */
slim_status args_missing(dsl *d, dsl_args *a, const char *key, const char *msg);

/* ---- the loader's state ------------------------------------------------------- */

typedef struct dsl_file {
    const char *path; /* as opened */
    const char *dir;  /* for includes and plugins relative to it */
    const dnode *root;
} dsl_file;

typedef struct dsl_block {
    const char *name;
    const dnode *def; /* the mapping: params, defaults, layers, output, doc */
    const dnode *params;
    const dnode *layers;
    const dnode *defaults;
    const dnode *output;
} dsl_block;

struct dsl_defaults {
    const dsl_defaults *parent;
    const dnode *map; /* "kind[, kind...]": {key: value} */
};

typedef struct dsl_name {
    const char *name; /* full scope name */
    slim_tid t;
    const dnode *at;
} dsl_name;

/* A parameter created by a layer, with what the head needs for weight decay. */
typedef struct dsl_param {
    slim_tid t;
    float decay; /* l2 scale (weight decay x decay_mult); 0 = none */
    bool trainable;
} dsl_param;

struct dsl {
    dsl_arena *arena;
    slim_registry *reg;
    slim_graph *g;
    slim_error *err;
    dsl_eval_ctx ev;
    struct slim_model *m;
    const slim_model_opts *opts;

    env *globals;
    dsl_defaults *defaults; /* the file's (and its includes') */
    int n_blocks, cap_blocks;
    dsl_block *blocks;

    /* full layer names -> tensors (open addressing) */
    dsl_name *names;
    int n_names, cap_names;

    /* parameters for weight decay */
    dsl_param *params;
    int n_params, cap_params;

    /* layers built, for inspect */
    slim_model_layer *layers;
    int n_layers, cap_layers;

    /* blocks being expanded (cycle detection) */
    const char *active[64];
    int n_active;
    int64_t budget; /* layers left before "too large" */

    float weight_decay;
    bool training;
    int64_t n_params_total, n_trainable, madds;
    /* constant tensors standing in for what the ops cannot express yet */
    slim_tid ones[64];
    int64_t ones_c[64];
    int n_ones;
};

/* build.c */
slim_status dsl_build_seq(dsl *d, const env *e, const dsl_defaults *defs, const char *scope,
                          const dnode *seq, const slim_tid *inputs, int n_inputs,
                          const dnode *output, slim_tid *out);
slim_status dsl_name_add(dsl *d, const char *name, slim_tid t, const dnode *at);
const dsl_name *dsl_name_get(const dsl *d, const char *name);
const dsl_block *dsl_block_get(const dsl *d, const char *name);
/* A name (or -k, 'input') as written in inputs:, looked up from scope. */
slim_status dsl_lookup(dsl *d, const env *e, const char *scope, const dnode *ref, slim_tid input,
                       slim_tid *out);
slim_status dsl_check_defaults(dsl *d, const dnode *m);
bool dsl_is_layer_kind(const char *kind); /* conv2d, separable_conv2d ... */

/* params.c: parameters, op attributes, activations, batch norm */
/* A graph node (its error at the node `at`), a layer of the model's summary. */
slim_status dsl_add_node(dsl *d, const dnode *at, const char *op, const char *name,
                         const slim_tid *in, int n_in, const slim_attrs *attrs, slim_tid *out);
slim_status dsl_record_layer(dsl *d, const char *name, const char *op, const slim_tid *in, int n_in,
                             slim_tid out, int64_t params, int64_t madds, const dnode *at);
/* "(2,3)" in the arena */
const char *dsl_shape_text(dsl *d, const slim_shape *s);
slim_tensor_desc dsl_tensor_info(dsl *d, slim_tid t);
typedef struct dsl_param_spec {
    const char *key;    /* the option key (weights, biases, gamma ...) */
    const char *suffix; /* the variable's name in its scope */
    slim_init init;     /* the default initializer */
    double decay_mult;  /* default weight decay multiplier */
    bool state;         /* moving statistics: never trainable */
} dsl_param_spec;
/* Create scope/suffix with the options of opts (weights: {...}). */
slim_status dsl_make_param(dsl *d, const env *e, dsl_args *opts, const char *scope,
                           const dsl_param_spec *ps, int rank, const int64_t *dim, bool trainable,
                           const dnode *at, slim_tid *out, int64_t *count);
/* A constant vector of c values (a norm's gamma or beta when it is not
 * learned): shared, not a model parameter. */
slim_status dsl_const_vec(dsl *d, double value, int64_t c, const dnode *at, slim_tid *out);
/* Every key of a not yet used in a is an attribute of op desc (extra: keys that are not). */
slim_status dsl_op_attrs(dsl *d, const env *e, const slim_op_desc *desc, dsl_args *a,
                         slim_attrs *attrs, const char *const *extra, int n_extra);
/* activation: none | op | {op: {attrs}} applied to x, node name scope/op. */
slim_status dsl_activation(dsl *d, const env *e, dsl_args *a, const char *def, const char *scope,
                           slim_tid x, slim_tid *y);
/* The activation a batch norm can apply itself: relu or relu6, else NULL. */
slim_status dsl_fusable_activation(dsl *d, const env *e, dsl_args *a, const char *def,
                                   const char **act);
/* TF-Slim's batch_norm over x with its variables under scope (its keys: dsl_bn_keys). */
extern const char *const dsl_bn_keys[];
#define DSL_N_BN_KEYS 9
slim_status dsl_batch_norm(dsl *d, const env *e, dsl_args *o, const char *scope, bool trainable,
                           const dnode *at, const char *act, slim_tid x, slim_tid *y,
                           int64_t *count);
/* normalizer: batch_norm with the batch_norm: options, or biases. */
slim_status dsl_norm_or_bias(dsl *d, const env *e, dsl_args *a, const char *scope, bool trainable,
                             const dnode *at, slim_tid conv_in[3], int *n_conv_in, bool *use_bn,
                             dsl_args *bn_opts, int64_t *count, int64_t outputs);

/* layers.c */
typedef struct dsl_layer_ctx {
    const env *e;
    dsl_args *args;
    const char *name; /* full name */
    const slim_tid *in;
    int n_in;
    const dnode *at;
} dsl_layer_ctx;

slim_status dsl_layer_build(dsl *d, const char *kind, dsl_layer_ctx *lc, slim_tid *out);
/* The keys a layer kind accepts (for defaults checks and suggestions). */
int dsl_layer_keys(dsl *d, const char *kind, const char **keys, int max);

/* head.c: logits, predictions, accuracy and the losses after the layers */
slim_status dsl_head(dsl *d, const dnode *root, const char *scope, slim_tid images, slim_tid last,
                     int64_t classes);

/* model.c: a model-language file as a model (slim_model_load's answer for
 * every path that is not an ONNX or TensorFlow graph: interop/model_load.c). */
slim_status slim__dsl_model_load(slim_registry *reg, const char *path, const slim_model_opts *o,
                                 slim_model **out, slim_error *err);
/* path ends in .onnx (any case). */
bool slim__dsl_is_onnx_path(const char *path);

/* Limits that keep any input, including a fuzzer's, bounded in time and memory. */
typedef struct dsl_limits {
    int64_t max_param_elems; /* one parameter */
    int64_t max_total_elems; /* every parameter of a model */
    int64_t max_layers;
    int max_depth; /* nesting of blocks and scopes */
    bool no_files; /* no include: and no plugins: (the fuzzer's sandbox) */
} dsl_limits;
extern dsl_limits slim__dsl_limits;

#endif /* SLIM_DSL_DSL_H */
