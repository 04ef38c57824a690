/*
 * plugins/swish.c - an example op plugin: swish(x) = x * sigmoid(beta * x)
 * (Ramachandran et al., "Searching for Activation Functions", 2017).
 *
 * Build it against an installed slim:
 *   cc -shared -fPIC -O2 $(pkg-config --cflags slim) swish.c -o swish.so
 * and use it from a model file (plugins: [./swish.so]) or slimrun --plugin.
 * A plugin includes only <slim/op.h> and needs no link against libslim: the
 * engine hands it the registry and the host table.
 *
 * It also declares the ONNX op type "Swish" (not a standard ONNX op: a
 * custom one, as exporters write for ops ONNX lacks), so that `slimrun import`
 * and --model=X.onnx map such nodes to it, ONNX attribute beta included, and
 * registers a fusion rule (swish_fuse): how a plugin takes part in the
 * compiler's rewrites.
 *
 * The same file builds the broken variants the tests use to check the
 * loader's messages (SWISH_BROKEN_ABI, SWISH_NO_INIT, SWISH_DUPLICATE).
 */
#include <slim/op.h>

#include <math.h>
#include <string.h>

typedef struct swish_params {
    float beta;
    int64_t n;
} swish_params;

static const slim_attr_spec swish_attrs[] = {
    {.name = "beta",
     .type = SLIM_ATTR_FLOAT,
     .def = "1.0",
     .ranged = true,
     .min = -100,
     .max = 100,
     .doc = "slope of the sigmoid gate"},
};

static slim_status swish_infer(slim_infer_ctx *c)
{
    const slim_tensor_desc *x = &c->inputs[0];
    if (x->dtype != SLIM_F32)
        return c->fail(c, SLIM_ETYPE, "input must be f32");
    swish_params *p = c->params;
    p->beta = (float)c->attr_float(c, "beta");
    p->n = slim_shape_numel(&x->shape);
    c->set_output(c, 0, SLIM_F32, &x->shape);
    return SLIM_OK;
}

static void swish_forward(const slim_kernel_ctx *c)
{
    const swish_params *p = c->params;
    const float *x = c->in[0].data; /* x: any shape, n elements */
    float *y = c->out[0].data;
    int64_t lo, hi;
    slim_split(p->n, c->ith, c->nth, &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        y[i] = x[i] / (1.0f + expf(-p->beta * x[i]));
}

/* d/dx x*s(bx) = s(bx) + b*x*s(bx)*(1 - s(bx)) */
static void swish_backward(const slim_kernel_ctx *c)
{
    const swish_params *p = c->params;
    const float *x = c->in[0].data, *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    if (!dx)
        return;
    int64_t lo, hi;
    slim_split(p->n, c->ith, c->nth, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        float s = 1.0f / (1.0f + expf(-p->beta * x[i]));
        float g = dy ? dy[i] : 0.0f;
        dx[i] = g * (s + p->beta * x[i] * s * (1.0f - s));
    }
}

#ifdef SWISH_NO_INIT
__attribute__((unused)) /* the broken variant never registers it */
#endif
static const slim_op_desc swish_op = {
    .struct_size = sizeof(slim_op_desc),
#ifdef SWISH_DUPLICATE
    .name = "relu", /* clashes with the built-in */
#else
    .name = "swish",
#endif
    .doc = "x * sigmoid(beta * x)",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = swish_attrs,
    .n_attrs = 1,
    .params_size = sizeof(swish_params),
    .infer = swish_infer,
    .forward = swish_forward,
    .backward = swish_backward,
    .forward_ref = swish_forward,
};

/* A fusion rule (ABI 1.6): in inference, x * sigmoid(x) as one swish step
 * (beta 1) instead of a sigmoid and a multiply. The engine checks that the
 * multiply alone reads the sigmoid's output; the rule checks the rest. */
static slim_status swish_fuse(slim_fuse_ctx *c)
{
    const int s = c->node; /* a sigmoid */
    int in, m = c->consumer(c, s, &in);
    if (m < 0 || strcmp(c->op(c, m), "multiply") != 0 || c->n_inputs(c, m) != 2 ||
        c->input_id(c, m, 1 - in) != c->input_id(c, s, 0) ||
        !slim_shape_equal(&c->input(c, s, 0)->shape, &c->output(c, m)->shape))
        return SLIM_OK;
    slim_status st = c->absorb(c, s, m); /* its input x is swish's */
    return st == SLIM_OK ? c->set_op(c, s, "swish") : st;
}

#ifdef SWISH_NO_INIT
__attribute__((unused))
#endif
static const slim_fusion_desc swish_fusion = {
    .struct_size = sizeof(slim_fusion_desc),
    .name = "swish_from_sigmoid",
    .doc = "x * sigmoid(x) as swish",
    .anchor = "sigmoid",
    .apply = swish_fuse,
};

SLIM_EXPORT const slim_plugin_info *slim_plugin_get_info(void);
SLIM_EXPORT slim_status slim_plugin_init(slim_registry *reg, const slim_host *host,
                                         slim_error *err);

SLIM_EXPORT const slim_plugin_info *slim_plugin_get_info(void)
{
    static const slim_plugin_info info = {
#ifdef SWISH_BROKEN_ABI
        .abi_major = SLIM_ABI_MAJOR + 1,
#else
        .abi_major = SLIM_ABI_MAJOR,
#endif
        .abi_minor = SLIM_ABI_MINOR,
        .op_desc_size = sizeof(slim_op_desc),
        .host_size = sizeof(slim_host),
        .name = "swish",
        .version = "1.0",
    };
    return &info;
}

#ifndef SWISH_NO_INIT
SLIM_EXPORT slim_status slim_plugin_init(slim_registry *reg, const slim_host *host, slim_error *err)
{
    slim_status st = host->register_op(reg, &swish_op, err);
    /* declare_onnx_op is in host tables since ABI 1.5: check the table has it */
    if (st == SLIM_OK &&
        host->size >= offsetof(slim_host, declare_onnx_op) + sizeof host->declare_onnx_op)
        st = host->declare_onnx_op(reg, "Swish", swish_op.name, err);
    /* an engine older than ABI 1.6 has no register_fusion */
    if (st == SLIM_OK && host->size >= offsetof(slim_host, register_fusion) + sizeof(void *))
        st = host->register_fusion(reg, &swish_fusion, err);
    return st;
}
#endif
