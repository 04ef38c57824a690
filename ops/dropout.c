/*
 * ops/dropout.c - inverted dropout (attr keep_prob, default 0.5).
 *
 * Training: y = x * mask / keep_prob with mask[i] = (u_i < keep_prob) and
 *   u_i = slim_rand_uniform(seed, node_id, step * numel + i),
 * (across processes, i counts in the global batch: each process draws the
 * mask of its own rows, so N processes draw what one would for N batches),
 * a counter-based draw: the mask depends only on (seed, node, step, element),
 * never on the thread split, so backward recomputes it instead of saving it
 * (no mask buffer between the passes) and every step draws a fresh mask.
 * Inference: y = x. Scaling at training time (as tf.nn.dropout) keeps the
 * expected activation equal, so inference needs no rescaling.
 */
#include <string.h>

#include <slim/op.h>

extern const slim_op_desc slim__op_dropout;

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

typedef struct dropout_params {
    float keep_prob;
    int64_t numel;
} dropout_params;

static slim_status dropout_infer(slim_infer_ctx *c)
{
    c->set_backward_reads(c, 0, 0); /* backward: the mask is recomputed from the seed */
    dropout_params *p = c->params;
    const slim_tensor_desc *x = &c->inputs[0];
    if (x->dtype != SLIM_F32)
        return c->fail(c, SLIM_ETYPE, "input must be f32 (got %s)", dtype_name(x->dtype));
    double kp = c->attr_float(c, "keep_prob");
    if (!(kp > 0.0 && kp <= 1.0))
        return c->fail(c, SLIM_EINVAL, "keep_prob %g must be in (0, 1]", kp);
    p->keep_prob = (float)kp;
    p->numel = slim_shape_numel(&x->shape);
    c->set_output(c, 0, SLIM_F32, &x->shape);
    return SLIM_OK;
}

/*
 * y[i] = x[i] * keep(i) / keep_prob for i in [lo, hi), or a plain copy when
 * not training (or when nothing is dropped). Forward and backward alike:
 * the gradient is masked and scaled the same way.
 */
static void dropout_apply(const slim_kernel_ctx *c, const float *x, float *y, int64_t lo,
                          int64_t hi)
{
    const dropout_params *p = c->params;
    if (!c->training || p->keep_prob >= 1.0f) {
        memcpy(y + lo, x + lo, (size_t)(hi - lo) * sizeof(float));
        return;
    }
    const float kp = p->keep_prob, scale = 1.0f / p->keep_prob;
    /* across processes, this one's rows of the global batch */
    const uint64_t reps = c->replicas > 1 ? (uint64_t)c->replicas : 1;
    const uint64_t rep = c->replicas > 1 ? (uint64_t)c->replica : 0;
    const uint64_t base = ((uint64_t)c->step * reps + rep) * (uint64_t)p->numel;
    for (int64_t i = lo; i < hi; i++) {
        float u = slim_rand_uniform(c->seed, c->node_id, base + (uint64_t)i);
        y[i] = u < kp ? x[i] * scale : 0.0f;
    }
}

static void dropout_forward(const slim_kernel_ctx *c)
{
    const dropout_params *p = c->params;
    int64_t lo, hi;
    slim_split(p->numel, c->ith, c->nth, &lo, &hi);
    dropout_apply(c, c->in[0].data, c->out[0].data, lo, hi);
}

static void dropout_backward(const slim_kernel_ctx *c)
{
    const dropout_params *p = c->params;
    float *dx = c->din[0].data;
    int64_t lo, hi;
    if (!dx)
        return;
    slim_split(p->numel, c->ith, c->nth, &lo, &hi);
    if (!c->dout[0].data)
        memset(dx + lo, 0, (size_t)(hi - lo) * sizeof(float));
    else
        dropout_apply(c, c->dout[0].data, dx, lo, hi);
}

/* Reference: the definition, one element at a time. */
static void dropout_forward_ref(const slim_kernel_ctx *c)
{
    const dropout_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    for (int64_t i = 0; i < p->numel; i++) {
        if (!c->training) {
            y[i] = x[i];
            continue;
        }
        int64_t reps = c->replicas > 1 ? c->replicas : 1, rep = c->replicas > 1 ? c->replica : 0;
        uint64_t counter = (uint64_t)(c->step * reps + rep) * (uint64_t)p->numel + (uint64_t)i;
        bool keep = slim_rand_uniform(c->seed, c->node_id, counter) < p->keep_prob;
        y[i] = keep ? x[i] / p->keep_prob : 0.0f;
    }
}

static const slim_attr_spec dropout_attrs[] = {
    {.name = "keep_prob",
     .type = SLIM_ATTR_FLOAT,
     .def = "0.5",
     .ranged = true,
     .min = 0,
     .max = 1,
     .doc = "probability of keeping an element, in (0, 1]"},
};

const slim_op_desc slim__op_dropout = {
    .struct_size = sizeof(slim_op_desc),
    .name = "dropout",
    .doc = "training: zero elements with probability 1 - keep_prob, scale the rest by "
           "1 / keep_prob; inference: identity",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = dropout_attrs,
    .n_attrs = 1,
    .params_size = sizeof(dropout_params),
    .flags = SLIM_OP_RANDOM,
    .infer = dropout_infer,
    .forward = dropout_forward,
    .backward = dropout_backward,
    .forward_ref = dropout_forward_ref,
};
