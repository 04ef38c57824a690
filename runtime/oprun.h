/* runtime/oprun.h - a standalone single-op runner: one op's inference,
 * buffers and kernels without a graph (the op harness, conv_bench). */
#ifndef SLIM_RUNTIME_OPRUN_H
#define SLIM_RUNTIME_OPRUN_H

#include "core/threadpool.h"
#include "engine/node.h"

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
