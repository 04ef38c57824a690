/*
 * ops/optim_adaptive.c - adaptive optimizer update ops, with TensorFlow's
 * update rules exactly (tensorflow/core/kernels/training_ops.cc, the dense
 * Apply* kernels behind tf.train.*Optimizer, which TF-Slim's
 * train_image_classifier.py uses). Inputs: param, grad, then the slots; the
 * param and the slots are written in place; lr is the run's learning rate.
 *
 *   rmsprop_update  (param, grad, rms, momentum)        ApplyRMSProp
 *       rms  += (g^2 - rms) (1 - decay)
 *       mom   = momentum mom + lr g / sqrt(rms + epsilon)
 *       param -= mom
 *   adam_update     (param, grad, m, v)                 ApplyAdam
 *       t = step + 1, alpha = lr sqrt(1 - beta2^t) / (1 - beta1^t)
 *       m += (g - m) (1 - beta1);  v += (g^2 - v) (1 - beta2)
 *       param -= alpha m / (sqrt(v) + epsilon)          (epsilon outside the root)
 *       use_nesterov: param -= alpha (m beta1 + g (1 - beta1)) / (sqrt(v) + epsilon)
 *   adagrad_update  (param, grad, accum)                ApplyAdagrad
 *       accum += g^2;  param -= lr g / sqrt(accum)      (no epsilon: accum starts > 0)
 *   adadelta_update (param, grad, accum, accum_update)  ApplyAdadelta
 *       accum = rho accum + (1 - rho) g^2
 *       u = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) g
 *       param -= lr u;  accum_update = rho accum_update + (1 - rho) u^2
 *   ftrl_update     (param, grad, accum, linear)        ApplyFtrl
 *       new = accum + g^2
 *       linear += g - (new^-p - accum^-p) / lr param    (p = learning_rate_power)
 *       quadratic = new^-p / lr + 2 l2
 *       param = |linear| > l1 ? (sign(linear) l1 - linear) / quadratic : 0
 *       accum = new
 *
 * Slots are declared in the descriptors with their initial values, which the
 * engine writes when it compiles a training program: TensorFlow's (rmsprop's
 * rms at 1, adagrad's and ftrl's accum at the initial_accumulator_value
 * attribute, the rest 0); checkpoints restore them after that.
 *
 * Attribute defaults are TF-Slim's flag defaults (opt_epsilon 1.0, rmsprop
 * decay and momentum 0.9, adadelta rho 0.95, ftrl learning_rate_power -0.5,
 * initial accumulators 0.1).
 *
 * grad_scale (an optional last input, every op here): the gradient is
 * multiplied by it first. The engine's global-norm clipping
 * (tf.clip_by_global_norm, TF-Slim's create_train_op(clip_gradient_norm=...))
 * computes it once per step over every gradient.
 *
 * Elementwise, so each thread updates its own range; the reference kernels
 * are the same loops over every element on one thread.
 */
#include <slim/op.h>

#include "ops/optim_common.h"

#include <math.h>
#include <stdio.h>

extern const slim_op_desc slim__op_rmsprop_update;
extern const slim_op_desc slim__op_adam_update;
extern const slim_op_desc slim__op_adagrad_update;
extern const slim_op_desc slim__op_adadelta_update;
extern const slim_op_desc slim__op_ftrl_update;

typedef struct adaptive_params {
    int64_t numel;
    int scale_input; /* index of the gradient scale, -1 = none */
    float a, b, eps; /* rmsprop: decay, momentum; adam: beta1, beta2; adadelta: rho; ftrl: l1, l2 */
    float power;     /* ftrl: learning_rate_power */
    bool nesterov;   /* adam */
} adaptive_params;

#define INITIAL_ACCUMULATOR_ATTR(flag)                                                             \
    {                                                                                              \
        .name = "initial_accumulator_value", .type = SLIM_ATTR_FLOAT, .def = "0.1",                \
        .ranged = true, .min = 1e-30, .max = 1e30,                                                 \
        .doc = "starting value of the accum slot (> 0; TF-Slim " flag ")"                          \
    }

/* param, grad and the slots: f32, one shape; then the scale. names[i] names input i. */
static slim_status common_infer(slim_infer_ctx *c, const char *const *names, int n_slots)
{
    adaptive_params *p = c->params;
    return slim__update_infer(c, names, n_slots, &p->numel, &p->scale_input);
}

/* One kernel body per op over [lo, hi): the fast kernel runs it on its
 * thread's range, the reference one over everything. */
typedef void (*range_fn)(const slim_kernel_ctx *c, const adaptive_params *p, float cs, int64_t lo,
                         int64_t hi);

static void run_fast(const slim_kernel_ctx *c, range_fn fn)
{
    const adaptive_params *p = c->params;
    float cs = slim__update_grad_scale(c, p->scale_input);
    int64_t lo, hi;
    slim_split(p->numel, c->ith, c->nth, &lo, &hi);
    fn(c, p, cs, lo, hi);
    slim__update_dummy_output(c);
}

static void run_ref(const slim_kernel_ctx *c, range_fn fn)
{
    const adaptive_params *p = c->params;
    fn(c, p, slim__update_grad_scale(c, p->scale_input), 0, p->numel);
    *(float *)c->out[0].data = 0.0f;
}

/* ---- rmsprop_update ----------------------------------------------------------- */

static const slim_attr_spec rmsprop_attrs[] = {
    {.name = "decay",
     .type = SLIM_ATTR_FLOAT,
     .def = "0.9",
     .ranged = true,
     .min = 0,
     .max = 1,
     .doc = "discounting factor of the mean square (TF-Slim --rmsprop_decay)"},
    {.name = "momentum",
     .type = SLIM_ATTR_FLOAT,
     .def = "0.9",
     .ranged = true,
     .min = 0,
     .max = 1,
     .doc = "TF-Slim --rmsprop_momentum"},
    {.name = "epsilon",
     .type = SLIM_ATTR_FLOAT,
     .def = "1",
     .ranged = true,
     .min = 0,
     .max = 1e30,
     .doc = "added to the mean square inside the root (TF-Slim --opt_epsilon)"},
};

static slim_status rmsprop_infer(slim_infer_ctx *c)
{
    static const char *const names[] = {"param", "grad", "rms slot", "momentum slot"};
    slim_status st = common_infer(c, names, 2);
    if (st)
        return st;
    adaptive_params *p = c->params;
    p->a = (float)c->attr_float(c, "decay");
    p->b = (float)c->attr_float(c, "momentum");
    p->eps = (float)c->attr_float(c, "epsilon");
    return SLIM_OK;
}

static void rmsprop_range(const slim_kernel_ctx *c, const adaptive_params *p, float cs, int64_t lo,
                          int64_t hi)
{
    float *w = c->in[0].data, *ms = c->in[2].data, *mom = c->in[3].data;
    const float *g = c->in[1].data;
    const float lr = c->lr, one_minus_rho = 1.0f - p->a, mu = p->b, eps = p->eps;
    for (int64_t i = lo; i < hi; i++) {
        float gi = g[i] * cs;
        ms[i] += (gi * gi - ms[i]) * one_minus_rho;
        mom[i] = mom[i] * mu + (gi * lr) / sqrtf(ms[i] + eps);
        w[i] -= mom[i];
    }
}

static void rmsprop_forward(const slim_kernel_ctx *c)
{
    run_fast(c, rmsprop_range);
}

static void rmsprop_forward_ref(const slim_kernel_ctx *c)
{
    run_ref(c, rmsprop_range);
}

static const slim_slot_spec rmsprop_slots[] = {{.name = "rms", .init = 1}, /* TF 1.x: ones */
                                               {.name = "momentum", .init = 0}};

const slim_op_desc slim__op_rmsprop_update = {
    .struct_size = sizeof(slim_op_desc),
    .name = "rmsprop_update",
    .doc = "TF RMSPropOptimizer: rms += (g^2 - rms)(1 - decay); mom = momentum mom + lr g / "
           "sqrt(rms + epsilon); param -= mom. Inputs param, grad, rms (starts at 1), momentum",
    .min_inputs = 4,
    .max_inputs = 5,
    .n_outputs = 1,
    .attrs = rmsprop_attrs,
    .n_attrs = (int)(sizeof rmsprop_attrs / sizeof rmsprop_attrs[0]),
    .params_size = sizeof(adaptive_params),
    .flags = SLIM_OP_UPDATE,
    .nondiff_inputs = 0x1f,
    .mutates_inputs = (1u << 0) | (1u << 2) | (1u << 3),
    .infer = rmsprop_infer,
    .forward = rmsprop_forward,
    .forward_ref = rmsprop_forward_ref,
    .slots = rmsprop_slots,
    .n_slots = 2,
};

/* ---- adam_update -------------------------------------------------------------- */

static const slim_attr_spec adam_attrs[] = {
    {.name = "beta1",
     .type = SLIM_ATTR_FLOAT,
     .def = "0.9",
     .ranged = true,
     .min = 0,
     .max = 1,
     .doc = "decay of the first moment (TF-Slim --adam_beta1)"},
    {.name = "beta2",
     .type = SLIM_ATTR_FLOAT,
     .def = "0.999",
     .ranged = true,
     .min = 0,
     .max = 1,
     .doc = "decay of the second moment (TF-Slim --adam_beta2)"},
    {.name = "epsilon",
     .type = SLIM_ATTR_FLOAT,
     .def = "1",
     .ranged = true,
     .min = 0,
     .max = 1e30,
     .doc = "added to sqrt(v), outside the root (TF-Slim --opt_epsilon)"},
    {.name = "use_nesterov",
     .type = SLIM_ATTR_BOOL,
     .def = "false",
     .doc = "Nesterov momentum in the first moment (TF's ApplyAdam use_nesterov)"},
};

static slim_status adam_infer(slim_infer_ctx *c)
{
    static const char *const names[] = {"param", "grad", "m slot", "v slot"};
    slim_status st = common_infer(c, names, 2);
    if (st)
        return st;
    adaptive_params *p = c->params;
    p->a = (float)c->attr_float(c, "beta1");
    p->b = (float)c->attr_float(c, "beta2");
    p->eps = (float)c->attr_float(c, "epsilon");
    p->nesterov = c->attr_bool(c, "use_nesterov");
    return SLIM_OK;
}

static void adam_range(const slim_kernel_ctx *c, const adaptive_params *p, float cs, int64_t lo,
                       int64_t hi)
{
    float *w = c->in[0].data, *m = c->in[2].data, *v = c->in[3].data;
    const float *g = c->in[1].data;
    /* TF keeps beta1^t and beta2^t as variables that start at beta and are
     * multiplied after every apply: with the global step counting applies from
     * 0, they are beta^(step + 1). */
    const double t = (double)(c->step < 0 ? 0 : c->step) + 1.0;
    const float b1p = (float)pow(p->a, t), b2p = (float)pow(p->b, t);
    const float alpha = c->lr * sqrtf(1.0f - b2p) / (1.0f - b1p);
    const float b1 = p->a, omb1 = 1.0f - p->a, omb2 = 1.0f - p->b, eps = p->eps;
    for (int64_t i = lo; i < hi; i++) {
        float gi = g[i] * cs;
        m[i] += (gi - m[i]) * omb1;
        v[i] += (gi * gi - v[i]) * omb2;
        float num = p->nesterov ? gi * omb1 + b1 * m[i] : m[i];
        w[i] -= (num * alpha) / (sqrtf(v[i]) + eps);
    }
}

static void adam_forward(const slim_kernel_ctx *c)
{
    run_fast(c, adam_range);
}

static void adam_forward_ref(const slim_kernel_ctx *c)
{
    run_ref(c, adam_range);
}

static const slim_slot_spec adam_slots[] = {{.name = "m", .init = 0}, {.name = "v", .init = 0}};

const slim_op_desc slim__op_adam_update = {
    .struct_size = sizeof(slim_op_desc),
    .name = "adam_update",
    .doc = "TF AdamOptimizer: m += (g - m)(1 - beta1); v += (g^2 - v)(1 - beta2); param -= "
           "lr sqrt(1 - beta2^t)/(1 - beta1^t) m / (sqrt(v) + epsilon), t = step + 1. "
           "Inputs param, grad, m, v",
    .min_inputs = 4,
    .max_inputs = 5,
    .n_outputs = 1,
    .attrs = adam_attrs,
    .n_attrs = (int)(sizeof adam_attrs / sizeof adam_attrs[0]),
    .params_size = sizeof(adaptive_params),
    .flags = SLIM_OP_UPDATE,
    .nondiff_inputs = 0x1f,
    .mutates_inputs = (1u << 0) | (1u << 2) | (1u << 3),
    .infer = adam_infer,
    .forward = adam_forward,
    .forward_ref = adam_forward_ref,
    .slots = adam_slots,
    .n_slots = 2,
};

/* ---- adagrad_update ----------------------------------------------------------- */

static const slim_attr_spec adagrad_attrs[] = {
    INITIAL_ACCUMULATOR_ATTR("--adagrad_initial_accumulator_value"),
};

static slim_status adagrad_infer(slim_infer_ctx *c)
{
    static const char *const names[] = {"param", "grad", "accumulator slot"};
    return common_infer(c, names, 1);
}

static void adagrad_range(const slim_kernel_ctx *c, const adaptive_params *p, float cs, int64_t lo,
                          int64_t hi)
{
    (void)p;
    float *w = c->in[0].data, *acc = c->in[2].data;
    const float *g = c->in[1].data;
    const float lr = c->lr;
    for (int64_t i = lo; i < hi; i++) {
        float gi = g[i] * cs;
        acc[i] += gi * gi;
        w[i] -= gi * lr * (1.0f / sqrtf(acc[i]));
    }
}

static void adagrad_forward(const slim_kernel_ctx *c)
{
    run_fast(c, adagrad_range);
}

static void adagrad_forward_ref(const slim_kernel_ctx *c)
{
    run_ref(c, adagrad_range);
}

static const slim_slot_spec adagrad_slots[] = {
    {.name = "accumulator", .init_attr = "initial_accumulator_value"}};

const slim_op_desc slim__op_adagrad_update = {
    .struct_size = sizeof(slim_op_desc),
    .name = "adagrad_update",
    .doc = "TF AdagradOptimizer: accum += g^2; param -= lr g / sqrt(accum). Inputs param, grad, "
           "accum (starts at initial_accumulator_value, TF-Slim 0.1)",
    .min_inputs = 3,
    .max_inputs = 4,
    .n_outputs = 1,
    .attrs = adagrad_attrs,
    .n_attrs = (int)(sizeof adagrad_attrs / sizeof adagrad_attrs[0]),
    .params_size = sizeof(adaptive_params),
    .flags = SLIM_OP_UPDATE,
    .nondiff_inputs = 0xf,
    .mutates_inputs = (1u << 0) | (1u << 2),
    .infer = adagrad_infer,
    .forward = adagrad_forward,
    .forward_ref = adagrad_forward_ref,
    .slots = adagrad_slots,
    .n_slots = 1,
};

/* ---- adadelta_update ---------------------------------------------------------- */

static const slim_attr_spec adadelta_attrs[] = {
    {.name = "rho",
     .type = SLIM_ATTR_FLOAT,
     .def = "0.95",
     .ranged = true,
     .min = 0,
     .max = 1,
     .doc = "decay rate (TF-Slim --adadelta_rho)"},
    {.name = "epsilon",
     .type = SLIM_ATTR_FLOAT,
     .def = "1",
     .ranged = true,
     .min = 0,
     .max = 1e30,
     .doc = "inside both roots (TF-Slim --opt_epsilon)"},
};

static slim_status adadelta_infer(slim_infer_ctx *c)
{
    static const char *const names[] = {"param", "grad", "accum slot", "accum_update slot"};
    slim_status st = common_infer(c, names, 2);
    if (st)
        return st;
    adaptive_params *p = c->params;
    p->a = (float)c->attr_float(c, "rho");
    p->eps = (float)c->attr_float(c, "epsilon");
    return SLIM_OK;
}

static void adadelta_range(const slim_kernel_ctx *c, const adaptive_params *p, float cs, int64_t lo,
                           int64_t hi)
{
    float *w = c->in[0].data, *acc = c->in[2].data, *upd = c->in[3].data;
    const float *g = c->in[1].data;
    const float lr = c->lr, rho = p->a, omr = 1.0f - p->a, eps = p->eps;
    for (int64_t i = lo; i < hi; i++) {
        float gi = g[i] * cs;
        acc[i] = acc[i] * rho + gi * gi * omr;
        float u = sqrtf(upd[i] + eps) * (1.0f / sqrtf(acc[i] + eps)) * gi;
        w[i] -= u * lr;
        upd[i] = upd[i] * rho + u * u * omr;
    }
}

static void adadelta_forward(const slim_kernel_ctx *c)
{
    run_fast(c, adadelta_range);
}

static void adadelta_forward_ref(const slim_kernel_ctx *c)
{
    run_ref(c, adadelta_range);
}

static const slim_slot_spec adadelta_slots[] = {{.name = "accum", .init = 0},
                                                {.name = "accum_update", .init = 0}};

const slim_op_desc slim__op_adadelta_update = {
    .struct_size = sizeof(slim_op_desc),
    .name = "adadelta_update",
    .doc = "TF AdadeltaOptimizer: accum = rho accum + (1 - rho) g^2; u = sqrt(accum_update + "
           "epsilon) / sqrt(accum + epsilon) g; param -= lr u; accum_update = rho accum_update "
           "+ (1 - rho) u^2. Inputs param, grad, accum, accum_update",
    .min_inputs = 4,
    .max_inputs = 5,
    .n_outputs = 1,
    .attrs = adadelta_attrs,
    .n_attrs = (int)(sizeof adadelta_attrs / sizeof adadelta_attrs[0]),
    .params_size = sizeof(adaptive_params),
    .flags = SLIM_OP_UPDATE,
    .nondiff_inputs = 0x1f,
    .mutates_inputs = (1u << 0) | (1u << 2) | (1u << 3),
    .infer = adadelta_infer,
    .forward = adadelta_forward,
    .forward_ref = adadelta_forward_ref,
    .slots = adadelta_slots,
    .n_slots = 2,
};

/* ---- ftrl_update -------------------------------------------------------------- */

static const slim_attr_spec ftrl_attrs[] = {
    {.name = "learning_rate_power",
     .type = SLIM_ATTR_FLOAT,
     .def = "-0.5",
     .ranged = true,
     .min = -1e30,
     .max = 0,
     .doc = "TF-Slim --ftrl_learning_rate_power (<= 0)"},
    {.name = "l1",
     .type = SLIM_ATTR_FLOAT,
     .def = "0",
     .ranged = true,
     .min = 0,
     .max = 1e30,
     .doc = "L1 regularization strength (TF-Slim --ftrl_l1)"},
    {.name = "l2",
     .type = SLIM_ATTR_FLOAT,
     .def = "0",
     .ranged = true,
     .min = 0,
     .max = 1e30,
     .doc = "L2 regularization strength (TF-Slim --ftrl_l2)"},
    INITIAL_ACCUMULATOR_ATTR("--ftrl_initial_accumulator_value"),
};

static slim_status ftrl_infer(slim_infer_ctx *c)
{
    static const char *const names[] = {"param", "grad", "accum slot", "linear slot"};
    slim_status st = common_infer(c, names, 2);
    if (st)
        return st;
    adaptive_params *p = c->params;
    p->power = (float)c->attr_float(c, "learning_rate_power");
    p->a = (float)c->attr_float(c, "l1");
    p->b = (float)c->attr_float(c, "l2");
    return SLIM_OK;
}

static void ftrl_range(const slim_kernel_ctx *c, const adaptive_params *p, float cs, int64_t lo,
                       int64_t hi)
{
    float *w = c->in[0].data, *acc = c->in[2].data, *lin = c->in[3].data;
    const float *g = c->in[1].data;
    const float lr = c->lr, l1 = p->a, two_l2 = 2.0f * p->b, mp = -p->power;
    /* TF special-cases -0.5 with square roots */
    const bool half = p->power == -0.5f;
    for (int64_t i = lo; i < hi; i++) {
        float gi = g[i] * cs;
        float na = acc[i] + gi * gi;
        float pn = half ? sqrtf(na) : powf(na, mp), po = half ? sqrtf(acc[i]) : powf(acc[i], mp);
        lin[i] += gi - (pn - po) / lr * w[i];
        float x = (lin[i] > 0 ? l1 : lin[i] < 0 ? -l1 : 0.0f) - lin[i];
        float y = pn / lr + two_l2;
        w[i] = fabsf(lin[i]) > l1 ? x / y : 0.0f;
        acc[i] = na;
    }
}

static void ftrl_forward(const slim_kernel_ctx *c)
{
    run_fast(c, ftrl_range);
}

static void ftrl_forward_ref(const slim_kernel_ctx *c)
{
    run_ref(c, ftrl_range);
}

static const slim_slot_spec ftrl_slots[] = {
    {.name = "accum", .init_attr = "initial_accumulator_value"}, {.name = "linear", .init = 0}};

const slim_op_desc slim__op_ftrl_update = {
    .struct_size = sizeof(slim_op_desc),
    .name = "ftrl_update",
    .doc = "TF FtrlOptimizer (McMahan et al. 2013): new = accum + g^2; linear += g - (new^-p - "
           "accum^-p)/lr param; param = |linear| > l1 ? (sign(linear) l1 - linear) / (new^-p/lr "
           "+ 2 l2) : 0; accum = new. Inputs param, grad, accum (starts at TF-Slim's 0.1), linear",
    .min_inputs = 4,
    .max_inputs = 5,
    .n_outputs = 1,
    .attrs = ftrl_attrs,
    .n_attrs = (int)(sizeof ftrl_attrs / sizeof ftrl_attrs[0]),
    .params_size = sizeof(adaptive_params),
    .flags = SLIM_OP_UPDATE,
    .nondiff_inputs = 0x1f,
    .mutates_inputs = (1u << 0) | (1u << 2) | (1u << 3),
    .infer = ftrl_infer,
    .forward = ftrl_forward,
    .forward_ref = ftrl_forward_ref,
    .slots = ftrl_slots,
    .n_slots = 2,
};
