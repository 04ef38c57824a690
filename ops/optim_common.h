/* ops/optim_common.h - what every optimizer update op shares (ops/optim.c,
 * ops/optim_adaptive.c): the inputs are param, grad and the slots, all f32 of
 * the param's shape, then optionally a scalar f32 gradient scale (the engine's
 * global-norm clipping); the one output is a scalar the engine ignores. */
#ifndef SLIM_OPS_OPTIM_COMMON_H
#define SLIM_OPS_OPTIM_COMMON_H

#include <slim/op.h>

/* Check the inputs (names[i] names input i in messages; n_slots slots after
 * param and grad), declare the scalar output; *numel = the param's element
 * count, *scale_input = the index of the gradient-scale input or -1. */
static inline slim_status slim__update_infer(slim_infer_ctx *c, const char *const *names,
                                             int n_slots, int64_t *numel, int *scale_input)
{
    const slim_shape *ps = &c->inputs[0].shape;
    char b1[96], b2[96];
    int n_tensors = 2 + n_slots;
    *scale_input = c->n_inputs > n_tensors ? n_tensors : -1;
    for (int i = 0; i < c->n_inputs; i++) {
        const char *name = i < n_tensors ? names[i] : "grad_scale";
        if (c->inputs[i].dtype != SLIM_F32)
            return c->fail(c, SLIM_ETYPE, "%s must be f32", name);
        if (i >= n_tensors) {
            if (slim_shape_numel(&c->inputs[i].shape) != 1)
                return c->fail(c, SLIM_ESHAPE, "grad_scale %s must be a scalar",
                               slim_shape_str(&c->inputs[i].shape, b1, sizeof b1));
            continue;
        }
        if (!slim_shape_equal(&c->inputs[i].shape, ps))
            return c->fail(c, SLIM_ESHAPE, "%s %s must have the param's shape %s", name,
                           slim_shape_str(&c->inputs[i].shape, b1, sizeof b1),
                           slim_shape_str(ps, b2, sizeof b2));
    }
    *numel = slim_shape_numel(ps);
    slim_shape scalar = {0};
    c->set_output(c, 0, SLIM_F32, &scalar);
    return SLIM_OK;
}

/* The factor the gradient is multiplied by: the scale input, or 1. */
static inline float slim__update_grad_scale(const slim_kernel_ctx *c, int scale_input)
{
    return scale_input >= 0 ? *(const float *)c->in[scale_input].data : 1.0f;
}

/* Every node has an output; an update op's is a scalar 0. */
static inline void slim__update_dummy_output(const slim_kernel_ctx *c)
{
    if (c->ith == 0)
        *(float *)c->out[0].data = 0.0f;
}

#endif
