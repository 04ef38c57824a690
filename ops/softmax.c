/*
 * ops/softmax.c - softmax and log_softmax over one axis (attr axis, default -1).
 *
 * The input is viewed as (OUTER, K, INNER) with K the softmax axis. Both are
 * computed stably by subtracting the maximum over K first:
 *   softmax:     y = exp(x - m) / s,           s = sum_k exp(x_k - m)
 *   log_softmax: y = x - m - log(s)
 * Backward:
 *   softmax:     dx = y * (dy - sum_k dy_k y_k)
 *   log_softmax: dx = dy - exp(y) * sum_k dy_k
 * The fast kernels split rows (INNER == 1, the usual last-axis case) or
 * (row, column block) units (INNER > 1) between threads; with INNER > 1 they
 * sweep K for a block of up to BLOCK contiguous columns at a time, keeping
 * the per-column maxima and sums on the stack, so every access is contiguous.
 */
#include <math.h>
#include <string.h>

#include <slim/op.h>

extern const slim_op_desc slim__op_softmax;
extern const slim_op_desc slim__op_log_softmax;

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

enum { BLOCK = 256 }; /* columns per unit when INNER > 1 */

typedef struct softmax_params {
    int64_t outer, k, inner; /* the input viewed as (OUTER, K, INNER) */
    bool log;                /* log_softmax */
} softmax_params;

static slim_status infer_common(slim_infer_ctx *c, bool log)
{
    softmax_params *p = c->params;
    const slim_tensor_desc *x = &c->inputs[0];
    if (x->dtype != SLIM_F32)
        return c->fail(c, SLIM_ETYPE, "input must be f32 (got %s)", dtype_name(x->dtype));
    int rank = x->shape.rank;
    int64_t axis = c->attr_int(c, "axis");
    if (rank == 0)
        return c->fail(c, SLIM_ESHAPE, "input must have rank >= 1 (got a scalar)");
    if (axis < -rank || axis >= rank)
        return c->fail(c, SLIM_ESHAPE, "axis %lld is out of range for an input of rank %d",
                       (long long)axis, rank);
    if (axis < 0)
        axis += rank;
    p->outer = p->inner = 1;
    for (int d = 0; d < axis; d++)
        p->outer *= x->shape.dim[d];
    for (int d = (int)axis + 1; d < rank; d++)
        p->inner *= x->shape.dim[d];
    p->k = x->shape.dim[axis];
    if (p->k < 1)
        return c->fail(c, SLIM_ESHAPE, "the softmax axis %lld has size 0: nothing to normalize",
                       (long long)axis);
    p->log = log;
    c->set_output(c, 0, SLIM_F32, &x->shape);
    return SLIM_OK;
}

static slim_status softmax_infer(slim_infer_ctx *c)
{
    c->set_backward_reads(c, 0, 1); /* backward: from y alone */
    return infer_common(c, false);
}

static slim_status log_softmax_infer(slim_infer_ctx *c)
{
    c->set_backward_reads(c, 0, 1); /* backward: from y alone */
    return infer_common(c, true);
}

/* ---- fast kernels ------------------------------------------------------ */

/* One contiguous row of K values (INNER == 1). */
static void forward_row(const float *x, float *y, int64_t k, bool log)
{
    float m = x[0];
    for (int64_t i = 1; i < k; i++)
        m = x[i] > m ? x[i] : m;
    float s = 0.0f;
    if (log) {
        for (int64_t i = 0; i < k; i++)
            s += expf(x[i] - m);
        float ls = m + logf(s);
        for (int64_t i = 0; i < k; i++)
            y[i] = x[i] - ls;
    } else {
        for (int64_t i = 0; i < k; i++) {
            y[i] = expf(x[i] - m);
            s += y[i];
        }
        float r = 1.0f / s;
        for (int64_t i = 0; i < k; i++)
            y[i] *= r;
    }
}

/* Columns [0, n) of K rows with stride `inner` (INNER > 1), n <= BLOCK. */
static void forward_block(const float *x, float *y, int64_t k, int64_t inner, int64_t n, bool log)
{
    float m[BLOCK], s[BLOCK];
    for (int64_t j = 0; j < n; j++) {
        m[j] = x[j];
        s[j] = 0.0f;
    }
    for (int64_t i = 1; i < k; i++) {
        const float *xi = x + i * inner;
        for (int64_t j = 0; j < n; j++)
            m[j] = xi[j] > m[j] ? xi[j] : m[j];
    }
    for (int64_t i = 0; i < k; i++) {
        const float *xi = x + i * inner;
        float *yi = y + i * inner;
        for (int64_t j = 0; j < n; j++) {
            yi[j] = expf(xi[j] - m[j]);
            s[j] += yi[j];
        }
    }
    if (log) {
        for (int64_t j = 0; j < n; j++)
            m[j] += logf(s[j]);
        for (int64_t i = 0; i < k; i++) {
            const float *xi = x + i * inner;
            float *yi = y + i * inner;
            for (int64_t j = 0; j < n; j++)
                yi[j] = xi[j] - m[j];
        }
    } else {
        for (int64_t j = 0; j < n; j++)
            s[j] = 1.0f / s[j];
        for (int64_t i = 0; i < k; i++) {
            float *yi = y + i * inner;
            for (int64_t j = 0; j < n; j++)
                yi[j] *= s[j];
        }
    }
}

static void softmax_forward(const slim_kernel_ctx *c)
{
    const softmax_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t lo, hi;
    if (p->inner == 1) {
        slim_split(p->outer, c->ith, c->nth, &lo, &hi);
        for (int64_t o = lo; o < hi; o++)
            forward_row(x + o * p->k, y + o * p->k, p->k, p->log);
        return;
    }
    int64_t nb = (p->inner + BLOCK - 1) / BLOCK;
    slim_split(p->outer * nb, c->ith, c->nth, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        int64_t o = u / nb, j0 = (u % nb) * BLOCK;
        int64_t n = p->inner - j0 < BLOCK ? p->inner - j0 : BLOCK;
        int64_t off = o * p->k * p->inner + j0;
        forward_block(x + off, y + off, p->k, p->inner, n, p->log);
    }
}

static void backward_row(const float *y, const float *dy, float *dx, int64_t k, bool log)
{
    float s = 0.0f;
    if (log) {
        for (int64_t i = 0; i < k; i++)
            s += dy[i];
        for (int64_t i = 0; i < k; i++)
            dx[i] = dy[i] - expf(y[i]) * s;
    } else {
        for (int64_t i = 0; i < k; i++)
            s += dy[i] * y[i];
        for (int64_t i = 0; i < k; i++)
            dx[i] = y[i] * (dy[i] - s);
    }
}

static void backward_block(const float *y, const float *dy, float *dx, int64_t k, int64_t inner,
                           int64_t n, bool log)
{
    float s[BLOCK];
    for (int64_t j = 0; j < n; j++)
        s[j] = 0.0f;
    for (int64_t i = 0; i < k; i++) {
        const float *yi = y + i * inner, *dyi = dy + i * inner;
        if (log)
            for (int64_t j = 0; j < n; j++)
                s[j] += dyi[j];
        else
            for (int64_t j = 0; j < n; j++)
                s[j] += dyi[j] * yi[j];
    }
    for (int64_t i = 0; i < k; i++) {
        const float *yi = y + i * inner, *dyi = dy + i * inner;
        float *dxi = dx + i * inner;
        if (log)
            for (int64_t j = 0; j < n; j++)
                dxi[j] = dyi[j] - expf(yi[j]) * s[j];
        else
            for (int64_t j = 0; j < n; j++)
                dxi[j] = yi[j] * (dyi[j] - s[j]);
    }
}

static void softmax_backward(const slim_kernel_ctx *c)
{
    const softmax_params *p = c->params;
    const float *y = c->out[0].data, *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    int64_t lo, hi;
    if (!dx)
        return;
    if (!dy) {
        slim_split(p->outer * p->k * p->inner, c->ith, c->nth, &lo, &hi);
        memset(dx + lo, 0, (size_t)(hi - lo) * sizeof(float));
        return;
    }
    if (p->inner == 1) {
        slim_split(p->outer, c->ith, c->nth, &lo, &hi);
        for (int64_t o = lo; o < hi; o++)
            backward_row(y + o * p->k, dy + o * p->k, dx + o * p->k, p->k, p->log);
        return;
    }
    int64_t nb = (p->inner + BLOCK - 1) / BLOCK;
    slim_split(p->outer * nb, c->ith, c->nth, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        int64_t o = u / nb, j0 = (u % nb) * BLOCK;
        int64_t n = p->inner - j0 < BLOCK ? p->inner - j0 : BLOCK;
        int64_t off = o * p->k * p->inner + j0;
        backward_block(y + off, dy + off, dx + off, p->k, p->inner, n, p->log);
    }
}

/* ---- reference: one (outer, inner) position at a time, in double ------- */

static void softmax_forward_ref(const slim_kernel_ctx *c)
{
    const softmax_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    for (int64_t o = 0; o < p->outer; o++) {
        for (int64_t j = 0; j < p->inner; j++) {
            int64_t base = o * p->k * p->inner + j;
            double m = x[base];
            for (int64_t i = 0; i < p->k; i++)
                m = fmax(m, x[base + i * p->inner]);
            double s = 0;
            for (int64_t i = 0; i < p->k; i++)
                s += exp(x[base + i * p->inner] - m);
            for (int64_t i = 0; i < p->k; i++) {
                double v = x[base + i * p->inner] - m;
                y[base + i * p->inner] = (float)(p->log ? v - log(s) : exp(v) / s);
            }
        }
    }
}

static const slim_attr_spec softmax_attrs[] = {
    {.name = "axis", .type = SLIM_ATTR_INT, .def = "-1", .doc = "the axis to normalize over"},
};

const slim_op_desc slim__op_softmax = {
    .struct_size = sizeof(slim_op_desc),
    .name = "softmax",
    .doc = "y = exp(x) / sum(exp(x)) along axis",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = softmax_attrs,
    .n_attrs = 1,
    .params_size = sizeof(softmax_params),
    .infer = softmax_infer,
    .forward = softmax_forward,
    .backward = softmax_backward,
    .forward_ref = softmax_forward_ref,
};

const slim_op_desc slim__op_log_softmax = {
    .struct_size = sizeof(slim_op_desc),
    .name = "log_softmax",
    .doc = "y = x - log(sum(exp(x))) along axis",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = softmax_attrs,
    .n_attrs = 1,
    .params_size = sizeof(softmax_params),
    .infer = log_softmax_infer,
    .forward = softmax_forward,
    .backward = softmax_backward,
    .forward_ref = softmax_forward_ref,
};
