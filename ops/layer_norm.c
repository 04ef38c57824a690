/*
 * ops/layer_norm.c - layer normalization over the last axis (Ba, Kiros and
 * Hinton, "Layer Normalization", 2016; PyTorch's LayerNorm(C), ONNX's
 * LayerNormalization with axis -1):
 *
 *   x (..., C), gamma (C), beta (C) -> y = (x - mean) / sqrt(var + eps) * gamma + beta,
 *                                      mean (..., 1), rstd = 1 / sqrt(var + eps) (..., 1)
 *
 * mean and the (biased) variance are over each row of C. Each thread
 * normalizes whole rows, in double. The second and third outputs (ONNX's
 * Mean and InvStdDev) are what backward reads:
 *   xhat = (x - mean) rstd,  g = dy gamma
 *   dx = rstd (g - mean(g) - xhat mean(g xhat)) + dmean / C - drstd rstd^2 xhat / C
 * (the last two terms from the mean and rstd outputs, when they have gradients)
 *   dgamma = sum over rows of dy xhat,  dbeta = sum of dy
 * dx is split by rows, dgamma and dbeta by channels (each thread sums its
 * channels over every row in order: deterministic, no reduction step).
 */
#include <math.h>
#include <string.h>

#include <slim/op.h>

extern const slim_op_desc slim__op_layer_norm;

typedef struct ln_params {
    int64_t rows, c;
    float eps;
} ln_params;

static slim_status ln_infer(slim_infer_ctx *c)
{
    ln_params *p = c->params;
    const slim_tensor_desc *x = &c->inputs[0];
    if (x->dtype != SLIM_F32 || x->shape.rank < 1)
        return c->fail(c, SLIM_ETYPE, "x must be f32 with rank >= 1");
    int64_t ch = x->shape.dim[x->shape.rank - 1];
    for (int i = 1; i < 3; i++) {
        const slim_tensor_desc *t = &c->inputs[i];
        if (t->dtype != SLIM_F32 || slim_shape_numel(&t->shape) != ch)
            return c->fail(c, SLIM_ESHAPE, "%s must hold %lld f32 values (x's last dimension)",
                           i == 1 ? "gamma" : "beta", (long long)ch);
    }
    p->c = ch;
    p->rows = ch ? slim_shape_numel(&x->shape) / ch : 0;
    p->eps = (float)c->attr_float(c, "epsilon");
    c->set_output(c, 0, SLIM_F32, &x->shape);
    slim_shape rs = x->shape;
    rs.dim[rs.rank - 1] = 1;
    c->set_output(c, 1, SLIM_F32, &rs); /* mean */
    c->set_output(c, 2, SLIM_F32, &rs); /* rstd */
    c->set_backward_reads(c, 0x3, 0x6); /* x, gamma; mean, rstd */
    return SLIM_OK;
}

static void ln_rows(const slim_kernel_ctx *c, int64_t lo, int64_t hi)
{
    const ln_params *p = c->params;
    const float *x = c->in[0].data, *g = c->in[1].data, *b = c->in[2].data;
    float *y = c->out[0].data;
    float *sm = c->out[1].data, *sr = c->out[2].data;
    const int64_t C = p->c;
    for (int64_t r = lo; r < hi; r++) {
        const float *xr = x + r * C;
        float *yr = y + r * C;
        double s = 0, ss = 0;
        for (int64_t j = 0; j < C; j++)
            s += xr[j];
        double mean = s / (double)C;
        for (int64_t j = 0; j < C; j++) {
            double d = xr[j] - mean;
            ss += d * d;
        }
        double rstd = 1.0 / sqrt(ss / (double)C + p->eps);
        float m = (float)mean, rs = (float)rstd;
        for (int64_t j = 0; j < C; j++)
            yr[j] = (xr[j] - m) * rs * g[j] + b[j];
        sm[r] = m;
        sr[r] = rs;
    }
}

static void ln_forward(const slim_kernel_ctx *c)
{
    const ln_params *p = c->params;
    int64_t lo, hi;
    slim_split(p->rows, c->ith, c->nth, &lo, &hi);
    ln_rows(c, lo, hi);
}

static void ln_forward_ref(const slim_kernel_ctx *c)
{
    const ln_params *p = c->params;
    ln_rows(c, 0, p->rows);
}

static void ln_backward(const slim_kernel_ctx *c)
{
    const ln_params *p = c->params;
    const float *x = c->in[0].data, *g = c->in[1].data, *dy = c->dout[0].data;
    const float *dm = c->dout[1].data, *dr = c->dout[2].data;
    const float *sm = c->out[1].data, *sr = c->out[2].data;
    float *dx = c->din[0].data, *dg = c->din[1].data, *db = c->din[2].data;
    const int64_t C = p->c;
    int64_t lo, hi;
    if (dx) {
        slim_split(p->rows, c->ith, c->nth, &lo, &hi);
        for (int64_t r = lo; r < hi; r++) {
            float *dxr = dx + r * C;
            const float *xr = x + r * C, *dyr = dy ? dy + r * C : NULL;
            double sg = 0, sgx = 0;
            for (int64_t j = 0; dyr && j < C; j++) {
                double gj = (double)dyr[j] * g[j], xh = (xr[j] - sm[r]) * sr[r];
                sg += gj;
                sgx += gj * xh;
            }
            double mg = sg / (double)C, mgx = sgx / (double)C;
            double am = dm ? dm[r] / (double)C : 0;
            double ar = dr ? -(double)dr[r] * sr[r] * sr[r] / (double)C : 0;
            for (int64_t j = 0; j < C; j++) {
                double xh = (xr[j] - sm[r]) * sr[r];
                double v = dyr ? sr[r] * ((double)dyr[j] * g[j] - mg - xh * mgx) : 0;
                dxr[j] = (float)(v + am + ar * xh);
            }
        }
    }
    if (dg || db) {
        slim_split(C, c->ith, c->nth, &lo, &hi);
        for (int64_t j = lo; j < hi; j++) {
            double sg = 0, sb = 0;
            for (int64_t r = 0; dy && r < p->rows; r++) {
                double d = dy[r * C + j];
                sg += d * (x[r * C + j] - sm[r]) * sr[r];
                sb += d;
            }
            if (dg)
                dg[j] = (float)sg;
            if (db)
                db[j] = (float)sb;
        }
    }
}

static const slim_attr_spec ln_attrs[] = {
    {.name = "epsilon",
     .type = SLIM_ATTR_FLOAT,
     .def = "1e-5",
     .ranged = true,
     .min = 0,
     .max = 1e30,
     .doc = "added to the variance before the square root"},
};

const slim_op_desc slim__op_layer_norm = {
    .struct_size = sizeof(slim_op_desc),
    .name = "layer_norm",
    .doc = "x (..., C), gamma (C), beta (C) -> (x - mean) / sqrt(var + eps) * gamma + beta over "
           "the last axis; outputs 1 and 2: mean and 1 / sqrt(var + eps) (..., 1)",
    .min_inputs = 3,
    .max_inputs = 3,
    .n_outputs = 3,
    .attrs = ln_attrs,
    .n_attrs = 1,
    .params_size = sizeof(ln_params),
    .infer = ln_infer,
    .forward = ln_forward,
    .backward = ln_backward,
    .forward_ref = ln_forward_ref,
};
