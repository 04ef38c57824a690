/*
 * ops/grad.c - the ops the compiler adds to a training program on its own
 * (ops/ops.def names their roles for engine/autodiff.c and engine/update.c):
 *
 *   ones_like      y = 1 in x's shape: d loss / d loss, backward's first step;
 *   gradient_sum   y = a + b, a tensor's gradient plus one more contribution
 *                  (several consumers); the engine writes y over a;
 *   global_norm    global-norm clipping (tf.clip_by_global_norm) over every
 *                  trained gradient: y0 = clip_norm / max(norm, clip_norm) (NaN when
 *                  the norm is not finite, as TF), y1 = the norm. The sum of
 *                  squares is taken in fixed chunks of GNORM_CHUNK elements,
 *                  each in double, and the chunks are added in order by one
 *                  thread: the same bits at any thread count. Its inputs are
 *                  a list (SLIM_OP_LIST): the compiler gives it every gradient.
 *
 * They are ordinary ops too: a graph may use them like any other.
 */
#include <math.h>
#include <stdio.h>

#include <slim/op.h>

extern const slim_op_desc slim__op_ones_like;
extern const slim_op_desc slim__op_gradient_sum;
extern const slim_op_desc slim__op_global_norm;

static slim_status ones_like_infer(slim_infer_ctx *c)
{
    c->set_output(c, 0, SLIM_F32, &c->inputs[0].shape);
    c->set_backward_reads(c, 0, 0);
    return SLIM_OK;
}

static void ones_like_forward(const slim_kernel_ctx *c)
{
    float *y = c->out[0].data;
    int64_t lo, hi;
    slim_split(slim_shape_numel(&c->out[0].shape), c->ith, c->nth, &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        y[i] = 1.0f;
}

static slim_status gradient_sum_infer(slim_infer_ctx *c)
{
    const slim_tensor_desc *a = &c->inputs[0], *b = &c->inputs[1];
    char sa[96], sb[96];
    if (a->dtype != SLIM_F32 || b->dtype != SLIM_F32 || !slim_shape_equal(&a->shape, &b->shape))
        return c->fail(c, SLIM_ESHAPE, "a and b must be f32 of one shape, got %s and %s",
                       slim_shape_str(&a->shape, sa, sizeof sa),
                       slim_shape_str(&b->shape, sb, sizeof sb));
    c->set_output(c, 0, SLIM_F32, &a->shape);
    c->set_in_place(c, 0, 0);
    return SLIM_OK;
}

static void gradient_sum_forward(const slim_kernel_ctx *c)
{
    const float *a = c->in[0].data, *b = c->in[1].data;
    float *y = c->out[0].data;
    int64_t lo, hi;
    slim_split(slim_shape_numel(&c->out[0].shape), c->ith, c->nth, &lo, &hi);
    if (y == a) /* the compiler's case: no third stream */
        for (int64_t i = lo; i < hi; i++)
            y[i] += b[i];
    else
        for (int64_t i = lo; i < hi; i++)
            y[i] = a[i] + b[i];
}

static void gradient_sum_backward(const slim_kernel_ctx *c)
{
    const float *dy = c->dout[0].data;
    int64_t lo, hi;
    slim_split(slim_shape_numel(&c->out[0].shape), c->ith, c->nth, &lo, &hi);
    for (int k = 0; k < 2; k++) {
        float *dx = c->din[k].data;
        for (int64_t i = lo; dx && i < hi; i++)
            dx[i] = dy ? dy[i] : 0.0f;
    }
}

#define GNORM_CHUNK 4096

typedef struct gnorm_params {
    float clip;
    int64_t n_chunks;
} gnorm_params;

static int64_t gnorm_chunks(const slim_shape *s)
{
    return (slim_shape_numel(s) + GNORM_CHUNK - 1) / GNORM_CHUNK;
}

static slim_status global_norm_infer(slim_infer_ctx *c)
{
    gnorm_params *p = c->params;
    p->clip = (float)c->attr_float(c, "clip_norm");
    for (int i = 0; i < c->n_inputs; i++) {
        if (c->inputs[i].dtype != SLIM_F32)
            return c->fail(c, SLIM_ETYPE, "the gradients must be f32 (input %d is not)", i);
        p->n_chunks += gnorm_chunks(&c->inputs[i].shape);
    }
    const slim_shape scalar = {0};
    c->set_output(c, 0, SLIM_F32, &scalar);
    c->set_output(c, 1, SLIM_F32, &scalar);
    c->set_workspace(c, (size_t)(p->n_chunks > 0 ? p->n_chunks : 1) * sizeof(double));
    return SLIM_OK;
}

static void global_norm_forward(const slim_kernel_ctx *c)
{
    const gnorm_params *gp = c->params;
    double *part = c->ws;
    int64_t lo, hi, first = 0; /* first chunk of tensor t */
    slim_split(gp->n_chunks, c->ith, c->nth, &lo, &hi);
    int t = 0;
    for (int64_t j = lo; j < hi; j++) {
        while (j - first >= gnorm_chunks(&c->in[t].shape))
            first += gnorm_chunks(&c->in[t++].shape);
        const float *g = c->in[t].data;
        int64_t n = slim_shape_numel(&c->in[t].shape), a = (j - first) * GNORM_CHUNK;
        int64_t e = a + GNORM_CHUNK < n ? a + GNORM_CHUNK : n;
        double ss = 0;
        for (int64_t i = a; i < e; i++)
            ss += (double)g[i] * g[i];
        part[j] = ss;
    }
    c->sync(c);
    if (c->ith != 0)
        return;
    double total = 0;
    for (int64_t j = 0; j < gp->n_chunks; j++)
        total += part[j];
    float norm = (float)sqrt(total);
    *(float *)c->out[0].data = !isfinite(norm) ? NAN : norm > gp->clip ? gp->clip / norm : 1.0f;
    *(float *)c->out[1].data = norm;
}

/* The plain sum of squares in double, for the op harness. */
static void global_norm_forward_ref(const slim_kernel_ctx *c)
{
    const gnorm_params *gp = c->params;
    double total = 0;
    for (int t = 0; t < c->n_inputs; t++) {
        const float *g = c->in[t].data;
        for (int64_t i = 0; i < slim_shape_numel(&c->in[t].shape); i++)
            total += (double)g[i] * g[i];
    }
    float norm = (float)sqrt(total);
    *(float *)c->out[0].data = !isfinite(norm) ? NAN : norm > gp->clip ? gp->clip / norm : 1.0f;
    *(float *)c->out[1].data = norm;
}

static const slim_attr_spec global_norm_attrs[] = {
    {.name = "clip_norm",
     .type = SLIM_ATTR_FLOAT,
     .ranged = true,
     .min = 0,
     .max = 1e30,
     .doc = "the norm the gradients are scaled down to (clip_gradient_norm)"},
};

const slim_op_desc slim__op_ones_like = {
    .struct_size = sizeof(slim_op_desc),
    .name = "ones_like",
    .doc = "y = 1 in x's shape (f32): the loss's own gradient, d loss / d loss",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .infer = ones_like_infer,
    .forward = ones_like_forward,
};

const slim_op_desc slim__op_gradient_sum = {
    .struct_size = sizeof(slim_op_desc),
    .name = "gradient_sum",
    .doc = "y = a + b (f32, one shape), in place of a: a gradient's contributions summed",
    .min_inputs = 2,
    .max_inputs = 2,
    .n_outputs = 1,
    .infer = gradient_sum_infer,
    .forward = gradient_sum_forward,
    .backward = gradient_sum_backward,
};

const slim_op_desc slim__op_global_norm = {
    .struct_size = sizeof(slim_op_desc),
    .name = "global_norm",
    .doc = "the L2 norm of all inputs (f32 gradients, any number) -> scale = clip_norm / "
           "max(norm, clip_norm) (NaN when the norm is not finite), norm",
    .min_inputs = 1,
    .max_inputs = SLIM_MAX_INPUTS,
    .n_outputs = 2,
    .attrs = global_norm_attrs,
    .n_attrs = 1,
    .params_size = sizeof(gnorm_params),
    .flags = SLIM_OP_LIST,
    .infer = global_norm_infer,
    .forward = global_norm_forward,
    .forward_ref = global_norm_forward_ref,
};
