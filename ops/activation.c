/*
 * ops/activation.c - pointwise activations: relu, relu6, leaky_relu, elu, sigmoid, tanh.
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
