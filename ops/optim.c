/*
 * ops/optim.c - optimizer update ops: each writes a parameter (and its slots)
 * in place from the parameter's gradient, with the run's learning rate c->lr.
 *
 *   sgd_update:      param -= lr grad
 *   momentum_update: accum = momentum accum + grad
 *                    param -= lr accum                       (plain)
 *                    param -= lr (grad + momentum accum)     (use_nesterov)
 *                    as TensorFlow's MomentumOptimizer (ApplyMomentum); accum
 *                    (the "momentum" slot) starts at zero.
 *
 * An optional last input, a scalar, multiplies the gradient first: the
 * engine's global-norm clipping (tf.clip_by_global_norm) computes it once over
 * every gradient of the step.
 *
 * Every node needs an output, so each produces a scalar 0 that nothing reads.
 * Elementwise, so each thread updates its own range of elements.
 */
#include <slim/op.h>

#include "ops/optim_common.h"

#include <stdio.h>

extern const slim_op_desc slim__op_sgd_update;
extern const slim_op_desc slim__op_momentum_update;

typedef struct update_params {
    int64_t numel;
    int scale_input; /* index of the gradient scale, -1 = none */
    float momentum;
    bool nesterov;
} update_params;

/* param, grad and (for momentum) the slot: f32, one shape; then the scale. */
static slim_status update_infer(slim_infer_ctx *c, int n_slots)
{
    static const char *const names[] = {"param", "grad", "momentum slot"};
    update_params *p = c->params;
    return slim__update_infer(c, names, n_slots, &p->numel, &p->scale_input);
}

static slim_status sgd_infer(slim_infer_ctx *c)
{
    return update_infer(c, 0);
}

/* ---- sgd_update ----------------------------------------------------------- */

static void sgd_forward(const slim_kernel_ctx *c)
{
    const update_params *p = c->params;
    float *w = c->in[0].data;
    const float *g = c->in[1].data;
    const float lr = c->lr * slim__update_grad_scale(c, p->scale_input);
    int64_t lo, hi;
    slim_split(p->numel, c->ith, c->nth, &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        w[i] -= lr * g[i];
    slim__update_dummy_output(c);
}

static void sgd_forward_ref(const slim_kernel_ctx *c)
{
    const update_params *p = c->params;
    float *w = c->in[0].data;
    const float *g = c->in[1].data;
    const float s = slim__update_grad_scale(c, p->scale_input);
    for (int64_t i = 0; i < p->numel; i++)
        w[i] = w[i] - (c->lr * s) * g[i];
    *(float *)c->out[0].data = 0.0f;
}

const slim_op_desc slim__op_sgd_update = {
    .struct_size = sizeof(slim_op_desc),
    .name = "sgd_update",
    .doc = "param -= lr * grad (inputs param, grad[, grad_scale]; param is written in place)",
    .min_inputs = 2,
    .max_inputs = 3,
    .n_outputs = 1,
    .params_size = sizeof(update_params),
    .flags = SLIM_OP_UPDATE,
    .nondiff_inputs = 0x7,
    .mutates_inputs = 1u << 0,
    .infer = sgd_infer,
    .forward = sgd_forward,
    .forward_ref = sgd_forward_ref,
};

/* ---- momentum_update ------------------------------------------------------ */

static const slim_attr_spec momentum_attrs[] = {
    {.name = "momentum",
     .type = SLIM_ATTR_FLOAT,
     .def = "0.9",
     .doc = "decay of the accumulated gradient"},
    {.name = "use_nesterov",
     .type = SLIM_ATTR_BOOL,
     .def = "false",
     .doc = "Nesterov momentum: param -= lr * (grad + momentum * accum)"},
};

/* TF's MomentumOptimizer slot "momentum", zeros */
static const slim_slot_spec momentum_slots[] = {{.name = "momentum", .init = 0}};

static slim_status momentum_infer(slim_infer_ctx *c)
{
    slim_status st = update_infer(c, 1);
    if (st)
        return st;
    update_params *p = c->params;
    p->momentum = (float)c->attr_float(c, "momentum");
    p->nesterov = c->attr_bool(c, "use_nesterov");
    return SLIM_OK;
}

static void momentum_forward(const slim_kernel_ctx *c)
{
    const update_params *p = c->params;
    float *w = c->in[0].data, *acc = c->in[2].data;
    const float *g = c->in[1].data;
    const float lr = c->lr, mu = p->momentum, s = slim__update_grad_scale(c, p->scale_input);
    int64_t lo, hi;
    slim_split(p->numel, c->ith, c->nth, &lo, &hi);
    if (p->nesterov) {
        for (int64_t i = lo; i < hi; i++) {
            float gi = s * g[i], a = mu * acc[i] + gi;
            acc[i] = a;
            w[i] -= lr * (gi + mu * a);
        }
    } else {
        for (int64_t i = lo; i < hi; i++) {
            float a = mu * acc[i] + s * g[i];
            acc[i] = a;
            w[i] -= lr * a;
        }
    }
    slim__update_dummy_output(c);
}

static void momentum_forward_ref(const slim_kernel_ctx *c)
{
    const update_params *p = c->params;
    float *w = c->in[0].data, *acc = c->in[2].data;
    const float *g = c->in[1].data;
    const float s = slim__update_grad_scale(c, p->scale_input);
    for (int64_t i = 0; i < p->numel; i++) {
        float gi = s * g[i];
        acc[i] = p->momentum * acc[i] + gi;
        float step = p->nesterov ? gi + p->momentum * acc[i] : acc[i];
        w[i] = w[i] - c->lr * step;
    }
    *(float *)c->out[0].data = 0.0f;
}

const slim_op_desc slim__op_momentum_update = {
    .struct_size = sizeof(slim_op_desc),
    .name = "momentum_update",
    .doc = "TF MomentumOptimizer: accum = momentum * accum + grad; param -= lr * accum "
           "(nesterov: lr * (grad + momentum * accum)); inputs param, grad, accum[, grad_scale]",
    .min_inputs = 3,
    .max_inputs = 4,
    .n_outputs = 1,
    .attrs = momentum_attrs,
    .n_attrs = (int)(sizeof momentum_attrs / sizeof momentum_attrs[0]),
    .params_size = sizeof(update_params),
    .flags = SLIM_OP_UPDATE,
    .nondiff_inputs = 0xf,
    .mutates_inputs = (1u << 0) | (1u << 2),
    .infer = momentum_infer,
    .forward = momentum_forward,
    .forward_ref = momentum_forward_ref,
    .slots = momentum_slots,
    .n_slots = 1,
};
