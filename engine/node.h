/* engine/node.h - infer for one node, and the kernel a step runs. */
#ifndef SLIM_ENGINE_NODE_H
#define SLIM_ENGINE_NODE_H

#include "core/attrs.h"

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

#endif
