/*
 * interop/onnx_export_int.h - the exporter's internals, shared by
 * onnx_export.c (the graph walk, writing), onnx_export_ops.c (one function
 * per slim op kind) and onnx_export_build.c below both (values, layouts,
 * initializers, nodes).
 *
 * Every slim tensor the outputs depend on gets up to two ONNX values: one in
 * slim's own layout (XL_SAME) and, for 4-D tensors, one channels-first
 * (XL_CF: slim's (N,H,W,C) as ONNX's (N,C,H,W)). xp_get() returns the one
 * asked for, adding a Transpose (computed values) or a transposed
 * initializer (parameters) the first time the other one is needed.
 */
#ifndef SLIM_INTEROP_ONNX_EXPORT_INT_H
#define SLIM_INTEROP_ONNX_EXPORT_INT_H

#include <slim/slim.h>

#include "engine/graph.h"
#include "core/names.h"
#include "interop/onnx_export.h"
#include "interop/onnx_proto.h"

enum { XL_SAME = 0, XL_CF = 1 };

/* Slim axis a of a 4-D NHWC tensor is ONNX axis xl_pos[a] of its NCHW value. */
extern const int xl_pos[4];

typedef struct xp_ex {
    const slim_graph *g;
    const slim__onnx_export_opts *o;
    int opset;
    int64_t batch; /* the graph's batch (dimension 0 of the input) */
    slim_error *err;
    slim_status st;       /* the first error */
    const slim__node *at; /* the node being exported (for messages) */

    void **mem; /* every allocation, freed together */
    size_t n_mem, cap_mem;
    Onnx__NodeProto **node;
    size_t n_node, cap_node;
    Onnx__TensorProto **init;
    size_t n_init, cap_init;
    size_t init_bytes;
    slim__names names;      /* ONNX value names in use */
    slim__names node_names; /* ONNX node names in use */

    /* per tensor */
    const char *(*val)[2]; /* its ONNX values by layout */
    const char **out_name; /* the name its producer should give it (graph outputs) */
    bool *batched;         /* depends on the input: dimension 0 is the batch */
    int *uses;             /* consumers among the needed nodes (+1 for an output) */
    /* per node */
    bool *need;
    const char *domains[8]; /* other op set domains the nodes use */
    int n_domains;
    int *fold; /* conv2d / fully_connected: the batch_norm folded into it; batch_norm:
                * -2 when folded away; -1 otherwise */
} xp_ex;

/* ---- memory and names ---------------------------------------------------------------- */
void *xp_alloc(xp_ex *x, size_t n);
char *xp_strdup(xp_ex *x, const char *s);
/* A new value or node name: base, or base::what when what is set; made unique. */
const char *xp_name(xp_ex *x, const char *base, const char *what);
/* Set the first error (with the node being exported named); returns it. */
slim_status xp_fail(xp_ex *x, slim_status code, const char *fmt, ...) SLIM_PRINTF(3, 4);

/* ---- nodes --------------------------------------------------------------------------- */
/* A node op(in...) -> out...; names are copied. NULL when out of memory (x->st set). */
Onnx__NodeProto *xp_node(xp_ex *x, const char *op, const char *name, const char *const *in,
                         int n_in, const char *const *out, int n_out);
/* One-output shorthand: returns out. */
const char *xp_node1(xp_ex *x, const char *op, const char *name, const char *const *in, int n_in,
                     const char *out);
void xp_attr_int(xp_ex *x, Onnx__NodeProto *n, const char *key, int64_t v);
void xp_attr_float(xp_ex *x, Onnx__NodeProto *n, const char *key, float v);
void xp_attr_ints(xp_ex *x, Onnx__NodeProto *n, const char *key, const int64_t *v, int k);
void xp_attr_str(xp_ex *x, Onnx__NodeProto *n, const char *key, const char *v);
void xp_attr_floats(xp_ex *x, Onnx__NodeProto *n, const char *key, const double *v, int k);
/* A node of another domain than ONNX's: the model imports it (version 1). */
void xp_use_domain(xp_ex *x, const char *domain);

/* ---- initializers ---------------------------------------------------------------------- */
/* Named as xp_name(base, what). f32 values of dims; data is copied unless keep (then it
 * must outlive the export). */
const char *xp_init_f32(xp_ex *x, const char *base, const char *what, int rank, const int64_t *dim,
                        const float *data, bool keep);
const char *xp_init_i64(xp_ex *x, const char *base, const char *what, int n, const int64_t *v);
const char *xp_scalar_f32(xp_ex *x, const char *base, const char *what, float v);

/* ---- values ---------------------------------------------------------------------------- */
const slim_shape *xp_shape(const xp_ex *x, slim_tid t);
/* The parameter's values when t is a parameter, else NULL. */
const float *xp_param(const xp_ex *x, slim_tid t);
/* t's value in layout l (XL_CF only for 4-D tensors). */
const char *xp_get(xp_ex *x, slim_tid t, int l);
/* t's value in the layout it already has (XL_CF when both exist); *l receives it. */
const char *xp_get_any(xp_ex *x, slim_tid t, int *l);
/* The name the value of t in layout l gets (its slim name, or the output name asked for),
 * and records it. */
const char *xp_out(xp_ex *x, slim_tid t, int l);
void xp_alias(xp_ex *x, slim_tid to, slim_tid from);
/* A 4-D NHWC shape whose NCHW order is the same element order (H = W = 1, or C = 1). */
bool xp_cf_is_flat(const slim_shape *s);

/* ---- the op table (onnx_export_ops.c) -------------------------------------------------- */
typedef slim_status (*xp_emit_fn)(xp_ex *x, int node);
/* The exporter of a slim op kind (a plugin's that declared an ONNX op type too), or NULL
 * when it has none. */
xp_emit_fn xp_op_emitter(const slim_registry *reg, const char *op);
/* Whether node n (a batch_norm) can be folded into its input's producer; sets x->fold. */
void xp_plan_fold(xp_ex *x, int n);

#endif
