/* engine/oprun.h - infer for one node, and a standalone single-op runner
 * (used by the op harness and the ONNX conformance runner's checks). */
#ifndef SLIM_ENGINE_OPRUN_H
#define SLIM_ENGINE_OPRUN_H

#include "core/attrs.h"
#include "core/threadpool.h"

#define SLIM__MAX_OUTPUTS 8
#define SLIM__MAX_SAVED 8

typedef struct slim__infer_result {
    int n_out, n_saved;
    slim_tensor_desc out[SLIM__MAX_OUTPUTS];
    slim_tensor_desc saved[SLIM__MAX_SAVED];
    size_t ws_bytes;
    uint32_t bwd_in, bwd_out; /* what backward reads (set_backward_reads); all by default */
    /* in place (set_in_place, set_backward_in_place): per output, the inputs
     * (bit i) it may overwrite; per input, the output gradients its gradient
     * may overwrite */
    uint32_t in_place[SLIM__MAX_OUTPUTS], bwd_in_place[SLIM_MAX_INPUTS];
    void *params; /* desc->params_size bytes, malloc'd (NULL when 0) */
} slim__infer_result;

/* Check arity, run the op's infer, check what it declared. Errors are
 * prefixed with "node 'NAME' (OP): ". */
slim_status slim__node_infer(const slim_op_desc *d, const slim__attr_set *attrs,
                             const slim_tensor_desc *in, int n_in, bool training, int nth,
                             const char *node_name, slim__infer_result *r, slim_error *err);
void slim__infer_result_fini(slim__infer_result *r);

/* The kernel a run uses for a phase: the fast one, or the reference one when
 * forced (SLIM_KERNELS=ref or ref=true) and the op has one. Returns whether
 * the kernel is a reference one (run on one thread). */
slim_kernel_fn slim__pick_kernel(const slim_op_desc *d, bool backward, bool ref, bool *is_ref);

/* Run kernel on the pool with ctx as the template (ith/nth/sync filled in). */
void slim__run_kernel(slim__pool *pool, slim_kernel_fn fn, bool single, const slim_kernel_ctx *tpl);

typedef struct slim__oprun slim__oprun;

slim_status slim__oprun_new(const slim_registry *reg, const char *op, const slim_attrs *attrs,
                            const slim_tensor_desc *in, int n_in, bool training, int nth,
                            slim__oprun **out, slim_error *err);
void slim__oprun_free(slim__oprun *r);
const slim__infer_result *slim__oprun_infer(const slim__oprun *r);
const slim_op_desc *slim__oprun_desc(const slim__oprun *r);
/* Run as replica `replica` of `replicas` processes whose kernels meet in
 * allreduce (slim_kernel_ctx's fields of ABI 1.4; the op harness simulates
 * processes with threads). */
void slim__oprun_set_replica(slim__oprun *r, int replica, int replicas,
                             void (*allreduce)(const slim_kernel_ctx *c, double *data, int64_t n));
/* in_data[i]: the caller's input buffers (state inputs are written in place). */
void slim__oprun_forward(slim__oprun *r, void *const *in_data, bool ref, uint64_t seed,
                         int64_t step, float lr);
/* Output i of the last forward (owned by the runner). */
slim_tensor slim__oprun_output(const slim__oprun *r, int i);
/* dout[j]: gradient of output j (NULL = zero); din[i]: where to write input
 * i's gradient (NULL = not needed). Uses the saved buffers of the last forward. */
void slim__oprun_backward(slim__oprun *r, void *const *in_data, const float *const *dout,
                          float *const *din, bool ref, uint64_t seed, int64_t step);

#endif
