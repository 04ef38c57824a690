/*
 * ops/lrn.c - local response normalization across channels (AlexNet,
 * Krizhevsky et al. 2012, section 3.3), with TensorFlow's parameters
 * (tf.nn.local_response_normalization) over the last axis C:
 *
 *   S[c] = sum_{c' = max(0, c-r)}^{min(C-1, c+r)} x[c']^2
 *   n[c] = bias + alpha * S[c]
 *   y[c] = x[c] * n[c]^-beta
 *
 * (alpha multiplies the plain sum, not the mean as in Caffe/PyTorch.)
 * Backward, with dy the output gradient:
 *
 *   dx[j] = dy[j] n[j]^-beta - 2 alpha beta x[j] sum_{|c-j| <= r} dy[c] x[c] n[c]^(-beta-1)
 *
 * The fast kernels take one pixel (row of C channels) at a time: the squares
 * go into a zero-padded per-thread buffer, so each window sum is 2r+1 plain
 * adds over contiguous memory (vectorizable, and exact where a running sum
 * would cancel), and n^-beta avoids pow for the common beta 0.5, 0.75 and 1.
 * Backward recomputes n from x instead of keeping it from forward.
 */
#include <math.h>
#include <string.h>

#include <slim/op.h>

extern const slim_op_desc slim__op_lrn;

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

enum lrn_pow { POW_ANY, POW_HALF, POW_THREE_QUARTERS, POW_ONE };

typedef struct lrn_params {
    int64_t rows, ch; /* x viewed as (ROWS, C) */
    int64_t r;        /* depth radius, at most C */
    float bias, alpha, beta;
    enum lrn_pow kind; /* beta's special case */
    size_t ws_floats;  /* per thread */
} lrn_params;

static slim_status lrn_infer(slim_infer_ctx *c)
{
    lrn_params *p = c->params;
    const slim_tensor_desc *x = &c->inputs[0];
    if (x->dtype != SLIM_F32)
        return c->fail(c, SLIM_ETYPE, "input must be f32 (got %s)", dtype_name(x->dtype));
    if (x->shape.rank < 1)
        return c->fail(c, SLIM_ESHAPE, "input must have rank >= 1 (got a scalar)");
    int64_t r = c->attr_int(c, "depth_radius");
    if (r < 0)
        return c->fail(c, SLIM_EINVAL, "depth_radius %lld must be >= 0", (long long)r);
    p->ch = x->shape.dim[x->shape.rank - 1];
    p->rows = p->ch ? slim_shape_numel(&x->shape) / p->ch : 0;
    p->r = r < p->ch ? r : p->ch; /* a wider window adds only zeros */
    p->bias = (float)c->attr_float(c, "bias");
    p->alpha = (float)c->attr_float(c, "alpha");
    p->beta = (float)c->attr_float(c, "beta");
    p->kind = p->beta == 0.5f    ? POW_HALF
              : p->beta == 0.75f ? POW_THREE_QUARTERS
              : p->beta == 1.0f  ? POW_ONE
                                 : POW_ANY;
    /* padded squares (C + 2r), n (C), n^-beta (C) */
    p->ws_floats = (size_t)(3 * p->ch + 2 * p->r);
    c->set_workspace(c, (size_t)c->nth * p->ws_floats * sizeof(float));
    c->set_output(c, 0, SLIM_F32, &x->shape);
    return SLIM_OK;
}

/* n[c] for one row of x into n, and n^-beta into pw; sq is the padded scratch. */
static void lrn_norm(const lrn_params *p, const float *x, float *sq, float *n, float *pw)
{
    const int64_t C = p->ch, r = p->r, w = 2 * r + 1;
    memset(sq, 0, (size_t)r * sizeof(float));
    memset(sq + r + C, 0, (size_t)r * sizeof(float));
    for (int64_t i = 0; i < C; i++)
        sq[r + i] = x[i] * x[i];
    /* S[c] = sum of sq[c .. c+2r] (padded indices) */
    for (int64_t i = 0; i < C; i++)
        n[i] = sq[i];
    for (int64_t k = 1; k < w; k++) {
        const float *s = sq + k;
        for (int64_t i = 0; i < C; i++)
            n[i] += s[i];
    }
    const float bias = p->bias, alpha = p->alpha, beta = p->beta;
    for (int64_t i = 0; i < C; i++)
        n[i] = bias + alpha * n[i];
    switch (p->kind) {
    case POW_HALF:
        for (int64_t i = 0; i < C; i++)
            pw[i] = 1.0f / sqrtf(n[i]);
        break;
    case POW_THREE_QUARTERS:
        for (int64_t i = 0; i < C; i++) {
            float s = sqrtf(n[i]);
            pw[i] = 1.0f / (s * sqrtf(s));
        }
        break;
    case POW_ONE:
        for (int64_t i = 0; i < C; i++)
            pw[i] = 1.0f / n[i];
        break;
    case POW_ANY:
        for (int64_t i = 0; i < C; i++)
            pw[i] = powf(n[i], -beta);
        break;
    }
}

static void lrn_forward(const slim_kernel_ctx *c)
{
    const lrn_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    const int64_t C = p->ch;
    float *sq = (float *)c->ws + (size_t)c->ith * p->ws_floats; /* sq: (C + 2r) */
    float *n = sq + C + 2 * p->r;                               /* n: (C) */
    float *pw = n + C;                                          /* pw: (C) */
    int64_t lo, hi;
    slim_split(p->rows, c->ith, c->nth, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        const float *xr = x + row * C;
        float *yr = y + row * C;
        lrn_norm(p, xr, sq, n, pw);
        for (int64_t i = 0; i < C; i++)
            yr[i] = xr[i] * pw[i];
    }
}

static void lrn_backward(const slim_kernel_ctx *c)
{
    const lrn_params *p = c->params;
    const float *x = c->in[0].data, *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    const int64_t C = p->ch, r = p->r, w = 2 * r + 1;
    float *t = (float *)c->ws + (size_t)c->ith * p->ws_floats; /* t: (C + 2r), padded */
    float *n = t + C + 2 * r;                                  /* n: (C) */
    float *pw = n + C;                                         /* pw: (C) */
    int64_t lo, hi;
    if (!dx)
        return;
    if (!dy) {
        slim_split(p->rows * C, c->ith, c->nth, &lo, &hi);
        memset(dx + lo, 0, (size_t)(hi - lo) * sizeof(float));
        return;
    }
    const float k2ab = -2.0f * p->alpha * p->beta;
    slim_split(p->rows, c->ith, c->nth, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        const float *xr = x + row * C, *gr = dy + row * C;
        float *dxr = dx + row * C;
        lrn_norm(p, xr, t, n, pw);
        /* t[c] = dy[c] x[c] n[c]^(-beta-1), padded with r zeros on both sides */
        for (int64_t i = 0; i < C; i++)
            t[r + i] = gr[i] * xr[i] * pw[i] / n[i];
        for (int64_t i = 0; i < C; i++)
            dxr[i] = t[i];
        for (int64_t k = 1; k < w; k++) {
            const float *s = t + k;
            for (int64_t i = 0; i < C; i++)
                dxr[i] += s[i];
        }
        for (int64_t i = 0; i < C; i++)
            dxr[i] = gr[i] * pw[i] + k2ab * xr[i] * dxr[i];
    }
}

/* ---- reference: the formulas as written, in double --------------------- */

static double ref_n(const lrn_params *p, const float *x, int64_t c)
{
    int64_t lo = c - p->r < 0 ? 0 : c - p->r, hi = c + p->r > p->ch - 1 ? p->ch - 1 : c + p->r;
    double s = 0;
    for (int64_t k = lo; k <= hi; k++)
        s += (double)x[k] * x[k];
    return p->bias + (double)p->alpha * s;
}

static void lrn_forward_ref(const slim_kernel_ctx *c)
{
    const lrn_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    for (int64_t row = 0; row < p->rows; row++) {
        const float *xr = x + row * p->ch;
        for (int64_t i = 0; i < p->ch; i++)
            y[row * p->ch + i] = (float)(xr[i] * pow(ref_n(p, xr, i), -(double)p->beta));
    }
}

static void lrn_backward_ref(const slim_kernel_ctx *c)
{
    const lrn_params *p = c->params;
    const float *x = c->in[0].data, *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    const double beta = p->beta;
    if (!dx)
        return;
    for (int64_t row = 0; row < p->rows; row++) {
        const float *xr = x + row * p->ch, *gr = dy ? dy + row * p->ch : NULL;
        for (int64_t j = 0; j < p->ch; j++) {
            /* dx[j] = sum_c dy[c] dy[c]/dx[j], over the c whose window holds j */
            double s = 0;
            for (int64_t ch = 0; gr && ch < p->ch; ch++) {
                if (ch - j > p->r || j - ch > p->r)
                    continue;
                double n = ref_n(p, xr, ch);
                double d = -2.0 * p->alpha * beta * xr[ch] * xr[j] * pow(n, -beta - 1);
                if (ch == j)
                    d += pow(n, -beta);
                s += gr[ch] * d;
            }
            dx[row * p->ch + j] = (float)s;
        }
    }
}

static const slim_attr_spec lrn_attrs[] = {
    {.name = "depth_radius",
     .type = SLIM_ATTR_INT,
     .def = "5",
     .ranged = true,
     .min = 0,
     .max = 1e9,
     .doc = "half-width r of the channel window (2r+1 channels)"},
    {.name = "bias", .type = SLIM_ATTR_FLOAT, .def = "1.0", .doc = "offset k"},
    {.name = "alpha", .type = SLIM_ATTR_FLOAT, .def = "1.0", .doc = "scale of the sum of squares"},
    {.name = "beta", .type = SLIM_ATTR_FLOAT, .def = "0.5", .doc = "exponent"},
};

const slim_op_desc slim__op_lrn = {
    .struct_size = sizeof(slim_op_desc),
    .name = "lrn",
    .doc = "local response normalization over the last axis (TensorFlow's parameters)",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = lrn_attrs,
    .n_attrs = 4,
    .params_size = sizeof(lrn_params),
    .infer = lrn_infer,
    .forward = lrn_forward,
    .backward = lrn_backward,
    .forward_ref = lrn_forward_ref,
    .backward_ref = lrn_backward_ref,
};
