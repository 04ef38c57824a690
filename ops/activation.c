/*
 * ops/activation.c - pointwise activations: relu, relu6, leaky_relu, elu, sigmoid, tanh,
 * hard_sigmoid, hard_swish, silu, gelu, clip.
 *
 * One f32 input of any shape, one output of the same shape. The fast kernels
 * are branch-free loops over each thread's share of the elements (so the
 * compiler vectorizes them); the reference kernels are the textbook
 * definitions with branches. The derivative at a kink is taken as 0, as
 * TensorFlow does (relu'(0) = 0, relu6'(0) = relu6'(6) = 0). Backward reads
 * only the output y where that suffices (relu: y > 0 iff x > 0; relu6:
 * 0 < y < 6 iff 0 < x < 6; sigmoid' = y(1-y); tanh' = 1-y^2), so those ops
 * could later run in place; leaky_relu and elu read x (elu'(x<=0) = y + alpha).
 */
#include <math.h>
#include <string.h>

#include <slim/op.h>

extern const slim_op_desc slim__op_relu;
extern const slim_op_desc slim__op_relu6;
extern const slim_op_desc slim__op_leaky_relu;
extern const slim_op_desc slim__op_elu;
extern const slim_op_desc slim__op_sigmoid;
extern const slim_op_desc slim__op_tanh;
extern const slim_op_desc slim__op_hard_sigmoid;
extern const slim_op_desc slim__op_hard_swish;
extern const slim_op_desc slim__op_silu;
extern const slim_op_desc slim__op_gelu;
extern const slim_op_desc slim__op_clip;

/* For messages. */
static const char *dtype_name(slim_dtype t)
{
    switch (t) {
    case SLIM_F32: return "f32";
    case SLIM_U8: return "u8";
    case SLIM_I32: return "i32";
    case SLIM_I64: return "i64";
    }
    return "unknown";
}

typedef struct act_params {
    float alpha; /* leaky_relu slope, elu scale; unused by the others */
} act_params;

static slim_status infer_unary(slim_infer_ctx *c)
{
    const slim_tensor_desc *x = &c->inputs[0];
    if (x->dtype != SLIM_F32)
        return c->fail(c, SLIM_ETYPE, "input must be f32 (got %s)", dtype_name(x->dtype));
    c->set_output(c, 0, SLIM_F32, &x->shape);
    /* elementwise: y may take x's memory, and dx dy's (the planner does so
     * when nothing reads x, or dy, afterwards: a relu after a conv2d) */
    c->set_in_place(c, 0, 0);
    c->set_backward_in_place(c, 0, 0);
    return SLIM_OK;
}

static slim_status infer_alpha(slim_infer_ctx *c)
{
    act_params *p = c->params;
    p->alpha = (float)c->attr_float(c, "alpha");
    return infer_unary(c);
}

/* relu, relu6, sigmoid, tanh: backward reads y alone, so x can go after forward */
static slim_status infer_reads_y(slim_infer_ctx *c)
{
    slim_status st = infer_unary(c);
    c->set_backward_reads(c, 0, 1);
    return st;
}

/* leaky_relu: backward reads x alone */
static slim_status infer_leaky(slim_infer_ctx *c)
{
    slim_status st = infer_alpha(c);
    c->set_backward_reads(c, 1, 0);
    return st;
}

/* This thread's share [lo, hi) of the elements of tensor t. */
static void share(const slim_kernel_ctx *c, const slim_tensor *t, int64_t *lo, int64_t *hi)
{
    slim_split(slim_shape_numel(&t->shape), c->ith, c->nth, lo, hi);
}

/* Backward with no incoming gradient: the input gradient is zero. Returns true if handled. */
static bool zero_grad(const slim_kernel_ctx *c)
{
    float *dx = c->din[0].data;
    if (!dx)
        return true;
    if (c->dout[0].data)
        return false;
    int64_t lo, hi;
    share(c, &c->din[0], &lo, &hi);
    memset(dx + lo, 0, (size_t)(hi - lo) * sizeof(float));
    return true;
}

/* ---- relu -------------------------------------------------------------- */

static void relu_forward(const slim_kernel_ctx *c)
{
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t lo, hi;
    share(c, &c->out[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static void relu_forward_ref(const slim_kernel_ctx *c)
{
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t n = slim_shape_numel(&c->out[0].shape);
    for (int64_t i = 0; i < n; i++) {
        if (x[i] > 0)
            y[i] = x[i];
        else
            y[i] = 0;
    }
}

static void relu_backward(const slim_kernel_ctx *c)
{
    if (zero_grad(c))
        return;
    const float *y = c->out[0].data, *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    int64_t lo, hi;
    share(c, &c->din[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

const slim_op_desc slim__op_relu = {
    .struct_size = sizeof(slim_op_desc),
    .name = "relu",
    .doc = "y = max(x, 0)",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .params_size = sizeof(act_params),
    .infer = infer_reads_y,
    .forward = relu_forward,
    .backward = relu_backward,
    .forward_ref = relu_forward_ref,
};

/* ---- relu6 ------------------------------------------------------------- */

static void relu6_forward(const slim_kernel_ctx *c)
{
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t lo, hi;
    share(c, &c->out[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        float v = x[i] > 0.0f ? x[i] : 0.0f;
        y[i] = v < 6.0f ? v : 6.0f;
    }
}

static void relu6_forward_ref(const slim_kernel_ctx *c)
{
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t n = slim_shape_numel(&c->out[0].shape);
    for (int64_t i = 0; i < n; i++) {
        if (x[i] <= 0)
            y[i] = 0;
        else if (x[i] >= 6)
            y[i] = 6;
        else
            y[i] = x[i];
    }
}

static void relu6_backward(const slim_kernel_ctx *c)
{
    if (zero_grad(c))
        return;
    const float *y = c->out[0].data, *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    int64_t lo, hi;
    share(c, &c->din[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        dx[i] = (y[i] > 0.0f && y[i] < 6.0f) ? dy[i] : 0.0f;
}

const slim_op_desc slim__op_relu6 = {
    .struct_size = sizeof(slim_op_desc),
    .name = "relu6",
    .doc = "y = min(max(x, 0), 6)",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .params_size = sizeof(act_params),
    .infer = infer_reads_y,
    .forward = relu6_forward,
    .backward = relu6_backward,
    .forward_ref = relu6_forward_ref,
};

/* ---- leaky_relu -------------------------------------------------------- */

static void leaky_relu_forward(const slim_kernel_ctx *c)
{
    const act_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    const float alpha = p->alpha;
    int64_t lo, hi;
    share(c, &c->out[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        y[i] = x[i] > 0.0f ? x[i] : alpha * x[i];
}

static void leaky_relu_forward_ref(const slim_kernel_ctx *c)
{
    const act_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t n = slim_shape_numel(&c->out[0].shape);
    for (int64_t i = 0; i < n; i++) {
        if (x[i] > 0)
            y[i] = x[i];
        else
            y[i] = p->alpha * x[i];
    }
}

static void leaky_relu_backward(const slim_kernel_ctx *c)
{
    if (zero_grad(c))
        return;
    const act_params *p = c->params;
    const float *x = c->in[0].data, *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    const float alpha = p->alpha;
    int64_t lo, hi;
    share(c, &c->din[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        dx[i] = x[i] > 0.0f ? dy[i] : alpha * dy[i];
}

/* tf.nn.leaky_relu's default slope. */
static const slim_attr_spec leaky_relu_attrs[] = {
    {.name = "alpha", .type = SLIM_ATTR_FLOAT, .def = "0.2", .doc = "slope for x < 0"},
};

const slim_op_desc slim__op_leaky_relu = {
    .struct_size = sizeof(slim_op_desc),
    .name = "leaky_relu",
    .doc = "y = x for x > 0, alpha * x otherwise",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = leaky_relu_attrs,
    .n_attrs = 1,
    .params_size = sizeof(act_params),
    .infer = infer_leaky,
    .forward = leaky_relu_forward,
    .backward = leaky_relu_backward,
    .forward_ref = leaky_relu_forward_ref,
};

/* ---- elu --------------------------------------------------------------- */

static void elu_forward(const slim_kernel_ctx *c)
{
    const act_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    const float alpha = p->alpha;
    int64_t lo, hi;
    share(c, &c->out[0], &lo, &hi);
    /* expm1f keeps precision for small |x|; min(x, 0) keeps it finite for large x. */
    for (int64_t i = lo; i < hi; i++)
        y[i] = x[i] > 0.0f ? x[i] : alpha * expm1f(fminf(x[i], 0.0f));
}

static void elu_forward_ref(const slim_kernel_ctx *c)
{
    const act_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t n = slim_shape_numel(&c->out[0].shape);
    for (int64_t i = 0; i < n; i++) {
        if (x[i] > 0)
            y[i] = x[i];
        else
            y[i] = (float)(p->alpha * (exp((double)x[i]) - 1.0));
    }
}

static void elu_backward(const slim_kernel_ctx *c)
{
    if (zero_grad(c))
        return;
    const act_params *p = c->params;
    const float *x = c->in[0].data, *y = c->out[0].data, *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    const float alpha = p->alpha;
    int64_t lo, hi;
    share(c, &c->din[0], &lo, &hi);
    /* For x <= 0: d/dx alpha*(e^x - 1) = alpha*e^x = y + alpha. */
    for (int64_t i = lo; i < hi; i++)
        dx[i] = x[i] > 0.0f ? dy[i] : dy[i] * (y[i] + alpha);
}

static const slim_attr_spec elu_attrs[] = {
    {.name = "alpha", .type = SLIM_ATTR_FLOAT, .def = "1.0", .doc = "scale of the negative part"},
};

const slim_op_desc slim__op_elu = {
    .struct_size = sizeof(slim_op_desc),
    .name = "elu",
    .doc = "y = x for x > 0, alpha * (exp(x) - 1) otherwise",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = elu_attrs,
    .n_attrs = 1,
    .params_size = sizeof(act_params),
    .infer = infer_alpha,
    .forward = elu_forward,
    .backward = elu_backward,
    .forward_ref = elu_forward_ref,
};

/* ---- sigmoid ----------------------------------------------------------- */

static void sigmoid_forward(const slim_kernel_ctx *c)
{
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t lo, hi;
    share(c, &c->out[0], &lo, &hi);
    /* For very negative x, expf(-x) overflows to inf and y becomes 0: the right limit. */
    for (int64_t i = lo; i < hi; i++)
        y[i] = 1.0f / (1.0f + expf(-x[i]));
}

static void sigmoid_forward_ref(const slim_kernel_ctx *c)
{
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t n = slim_shape_numel(&c->out[0].shape);
    for (int64_t i = 0; i < n; i++) {
        double v = x[i];
        if (v >= 0)
            y[i] = (float)(1.0 / (1.0 + exp(-v)));
        else
            y[i] = (float)(exp(v) / (1.0 + exp(v)));
    }
}

static void sigmoid_backward(const slim_kernel_ctx *c)
{
    if (zero_grad(c))
        return;
    const float *y = c->out[0].data, *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    int64_t lo, hi;
    share(c, &c->din[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        dx[i] = dy[i] * y[i] * (1.0f - y[i]);
}

const slim_op_desc slim__op_sigmoid = {
    .struct_size = sizeof(slim_op_desc),
    .name = "sigmoid",
    .doc = "y = 1 / (1 + exp(-x))",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .params_size = sizeof(act_params),
    .infer = infer_reads_y,
    .forward = sigmoid_forward,
    .backward = sigmoid_backward,
    .forward_ref = sigmoid_forward_ref,
};

/* ---- tanh -------------------------------------------------------------- */

static void tanh_forward(const slim_kernel_ctx *c)
{
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t lo, hi;
    share(c, &c->out[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        y[i] = tanhf(x[i]);
}

static void tanh_forward_ref(const slim_kernel_ctx *c)
{
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t n = slim_shape_numel(&c->out[0].shape);
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)tanh((double)x[i]);
}

static void tanh_backward(const slim_kernel_ctx *c)
{
    if (zero_grad(c))
        return;
    const float *y = c->out[0].data, *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    int64_t lo, hi;
    share(c, &c->din[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

const slim_op_desc slim__op_tanh = {
    .struct_size = sizeof(slim_op_desc),
    .name = "tanh",
    .doc = "y = tanh(x)",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .params_size = sizeof(act_params),
    .infer = infer_reads_y,
    .forward = tanh_forward,
    .backward = tanh_backward,
    .forward_ref = tanh_forward_ref,
};

/* ---- smooth and hard gates: hard_sigmoid, hard_swish, silu, gelu, clip --------
 * Their backward reads x (the derivative is not a function of y alone). */

typedef struct gate_params {
    float alpha, beta; /* hard_sigmoid: slope and offset; clip: min and max */
} gate_params;

static slim_status infer_reads_x(slim_infer_ctx *c)
{
    slim_status st = infer_unary(c);
    c->set_backward_reads(c, 1, 0);
    return st;
}

static slim_status infer_hard_sigmoid(slim_infer_ctx *c)
{
    gate_params *p = c->params;
    p->alpha = (float)c->attr_float(c, "alpha");
    p->beta = (float)c->attr_float(c, "beta");
    return infer_reads_x(c);
}

static slim_status infer_clip(slim_infer_ctx *c)
{
    gate_params *p = c->params;
    p->alpha = (float)c->attr_float(c, "min");
    p->beta = (float)c->attr_float(c, "max");
    if (!(p->alpha <= p->beta))
        return c->fail(c, SLIM_EINVAL, "min %g is above max %g", (double)p->alpha, (double)p->beta);
    return infer_reads_x(c);
}

/* hard_sigmoid (ONNX HardSigmoid): y = max(0, min(1, alpha x + beta)); the
 * derivative is alpha inside (0, 1), 0 at and beyond the kinks. */
static void hard_sigmoid_forward(const slim_kernel_ctx *c)
{
    const gate_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t lo, hi;
    share(c, &c->out[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        y[i] = fminf(fmaxf(p->alpha * x[i] + p->beta, 0.0f), 1.0f);
}

static void hard_sigmoid_forward_ref(const slim_kernel_ctx *c)
{
    const gate_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t n = slim_shape_numel(&c->out[0].shape);
    for (int64_t i = 0; i < n; i++) {
        float v = p->alpha * x[i] + p->beta;
        if (v <= 0)
            y[i] = 0;
        else if (v >= 1)
            y[i] = 1;
        else
            y[i] = v;
    }
}

static void hard_sigmoid_backward(const slim_kernel_ctx *c)
{
    if (zero_grad(c))
        return;
    const gate_params *p = c->params;
    const float *x = c->in[0].data, *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    int64_t lo, hi;
    share(c, &c->din[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        float v = p->alpha * x[i] + p->beta;
        dx[i] = v > 0.0f && v < 1.0f ? p->alpha * dy[i] : 0.0f;
    }
}

/* ONNX's defaults (PyTorch's hardsigmoid is alpha 1/6). */
static const slim_attr_spec hard_sigmoid_attrs[] = {
    {.name = "alpha", .type = SLIM_ATTR_FLOAT, .def = "0.2", .doc = "slope"},
    {.name = "beta", .type = SLIM_ATTR_FLOAT, .def = "0.5", .doc = "offset"},
};

const slim_op_desc slim__op_hard_sigmoid = {
    .struct_size = sizeof(slim_op_desc),
    .name = "hard_sigmoid",
    .doc = "y = max(0, min(1, alpha * x + beta))",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = hard_sigmoid_attrs,
    .n_attrs = 2,
    .params_size = sizeof(gate_params),
    .infer = infer_hard_sigmoid,
    .forward = hard_sigmoid_forward,
    .backward = hard_sigmoid_backward,
    .forward_ref = hard_sigmoid_forward_ref,
};

/* hard_swish (Howard et al., "Searching for MobileNetV3", 2019):
 * y = x relu6(x + 3) / 6; dy/dx = 0 below -3, 1 above 3, (2x + 3) / 6 between. */
static void hard_swish_forward(const slim_kernel_ctx *c)
{
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t lo, hi;
    share(c, &c->out[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        y[i] = x[i] * fminf(fmaxf(x[i] + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
}

static void hard_swish_forward_ref(const slim_kernel_ctx *c)
{
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t n = slim_shape_numel(&c->out[0].shape);
    for (int64_t i = 0; i < n; i++) {
        if (x[i] <= -3)
            y[i] = 0;
        else if (x[i] >= 3)
            y[i] = x[i];
        else
            y[i] = (float)((double)x[i] * ((double)x[i] + 3.0) / 6.0);
    }
}

static void hard_swish_backward(const slim_kernel_ctx *c)
{
    if (zero_grad(c))
        return;
    const float *x = c->in[0].data, *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    int64_t lo, hi;
    share(c, &c->din[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        float g = x[i] <= -3.0f ? 0.0f : x[i] >= 3.0f ? 1.0f : (2.0f * x[i] + 3.0f) / 6.0f;
        dx[i] = g * dy[i];
    }
}

const slim_op_desc slim__op_hard_swish = {
    .struct_size = sizeof(slim_op_desc),
    .name = "hard_swish",
    .doc = "y = x * relu6(x + 3) / 6 (MobileNetV3)",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .params_size = sizeof(gate_params),
    .infer = infer_reads_x,
    .forward = hard_swish_forward,
    .backward = hard_swish_backward,
    .forward_ref = hard_swish_forward_ref,
};

/* silu (swish with beta 1; Elfwing et al. 2017, Ramachandran et al. 2017):
 * y = x s(x), s the sigmoid; dy/dx = s + x s (1 - s). */
static void silu_forward(const slim_kernel_ctx *c)
{
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t lo, hi;
    share(c, &c->out[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        y[i] = x[i] / (1.0f + expf(-x[i]));
}

static void silu_forward_ref(const slim_kernel_ctx *c)
{
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t n = slim_shape_numel(&c->out[0].shape);
    for (int64_t i = 0; i < n; i++) {
        double v = x[i], s = v >= 0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v));
        y[i] = (float)(v * s);
    }
}

static void silu_backward(const slim_kernel_ctx *c)
{
    if (zero_grad(c))
        return;
    const float *x = c->in[0].data, *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    int64_t lo, hi;
    share(c, &c->din[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        float s = 1.0f / (1.0f + expf(-x[i]));
        dx[i] = dy[i] * (s + x[i] * s * (1.0f - s));
    }
}

const slim_op_desc slim__op_silu = {
    .struct_size = sizeof(slim_op_desc),
    .name = "silu",
    .doc = "y = x * sigmoid(x) (swish)",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .params_size = sizeof(gate_params),
    .infer = infer_reads_x,
    .forward = silu_forward,
    .backward = silu_backward,
    .forward_ref = silu_forward_ref,
};

/* gelu (Hendrycks and Gimpel, 2016), the exact form PyTorch's GELU() uses:
 * y = x Phi(x) = x (1 + erf(x / sqrt 2)) / 2; dy/dx = Phi(x) + x phi(x). */
static void gelu_forward(const slim_kernel_ctx *c)
{
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t lo, hi;
    share(c, &c->out[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678f));
}

static void gelu_forward_ref(const slim_kernel_ctx *c)
{
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t n = slim_shape_numel(&c->out[0].shape);
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)(0.5 * (double)x[i] * (1.0 + erf((double)x[i] / sqrt(2.0))));
}

static void gelu_backward(const slim_kernel_ctx *c)
{
    if (zero_grad(c))
        return;
    const float *x = c->in[0].data, *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    int64_t lo, hi;
    share(c, &c->din[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        float cdf = 0.5f * (1.0f + erff(x[i] * 0.70710678f));
        float pdf = 0.39894228f * expf(-0.5f * x[i] * x[i]); /* 1 / sqrt(2 pi) */
        dx[i] = dy[i] * (cdf + x[i] * pdf);
    }
}

const slim_op_desc slim__op_gelu = {
    .struct_size = sizeof(slim_op_desc),
    .name = "gelu",
    .doc = "y = x * Phi(x) = x (1 + erf(x / sqrt(2))) / 2",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .params_size = sizeof(gate_params),
    .infer = infer_reads_x,
    .forward = gelu_forward,
    .backward = gelu_backward,
    .forward_ref = gelu_forward_ref,
};

/* clip: y = min(max(x, min), max); the derivative is 1 strictly inside. */
static void clip_forward(const slim_kernel_ctx *c)
{
    const gate_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t lo, hi;
    share(c, &c->out[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        y[i] = fminf(fmaxf(x[i], p->alpha), p->beta);
}

static void clip_forward_ref(const slim_kernel_ctx *c)
{
    const gate_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t n = slim_shape_numel(&c->out[0].shape);
    for (int64_t i = 0; i < n; i++) {
        if (x[i] <= p->alpha)
            y[i] = p->alpha;
        else if (x[i] >= p->beta)
            y[i] = p->beta;
        else
            y[i] = x[i];
    }
}

static void clip_backward(const slim_kernel_ctx *c)
{
    if (zero_grad(c))
        return;
    const gate_params *p = c->params;
    const float *x = c->in[0].data, *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    int64_t lo, hi;
    share(c, &c->din[0], &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        dx[i] = x[i] > p->alpha && x[i] < p->beta ? dy[i] : 0.0f;
}

static const slim_attr_spec clip_attrs[] = {
    {.name = "min", .type = SLIM_ATTR_FLOAT, .def = "-3.4e38", .doc = "lower bound"},
    {.name = "max", .type = SLIM_ATTR_FLOAT, .def = "3.4e38", .doc = "upper bound"},
};

const slim_op_desc slim__op_clip = {
    .struct_size = sizeof(slim_op_desc),
    .name = "clip",
    .doc = "y = min(max(x, min), max)",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = clip_attrs,
    .n_attrs = 2,
    .params_size = sizeof(gate_params),
    .infer = infer_clip,
    .forward = clip_forward,
    .backward = clip_backward,
    .forward_ref = clip_forward_ref,
};
