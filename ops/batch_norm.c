/*
 * ops/batch_norm.c - batch normalization over the last axis (Ioffe & Szegedy 2015,
 * https://arxiv.org/abs/1502.03167), as TF-Slim's batch_norm with fused kernels.
 *
 *   x (N,H,W,C) or (N,C) (any rank >= 2, channels last), gamma (C), beta (C),
 *   moving_mean (C), moving_var (C) -> y, same shape as x
 *
 * Training (with use_batch_stats): y = gamma (x - mean) / sqrt(var + eps) + beta
 * with the batch mean and the biased batch variance over every axis but C; the
 * moving statistics (inputs 3 and 4, written in place) become
 *   moving_mean = decay moving_mean + (1 - decay) mean
 *   moving_var  = decay moving_var  + (1 - decay) var * n/(n-1)
 * where the n/(n-1) (Bessel) factor is TensorFlow's fused batch norm; with
 * moving_var_unbiased=false the biased variance goes in instead, which is what
 * ONNX BatchNormalization-15 (training_mode=1: running_var = input_var *
 * momentum + current_var * (1 - momentum), population variance) and its
 * reference implementation do. Inference, or use_batch_stats=false (frozen
 * statistics while fine-tuning), normalizes with the moving statistics and
 * updates nothing.
 *
 * With activation=relu or relu6 the op also applies that activation to y
 * (one pass instead of two, and no separate pre-activation tensor kept for
 * backward): the model language fuses a batch norm followed by relu/relu6
 * this way. Backward then masks dy as the activation's own backward does
 * (y > 0; 0 < y < 6), with y recomputed from x in registers (the forward's
 * float operations on the forward's mean, scale and beta: the same bits)
 * rather than read back, two passes fewer over a tensor of x's size; the
 * reference kernel reads y.
 *
 * Reductions are deterministic for a given thread count: each thread sums a
 * fixed range of rows into its own double-precision partials, and after a
 * barrier each channel's partials are combined in thread order.
 */
#include <slim/op.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ops/act.h"

extern const slim_op_desc slim__op_batch_norm;

typedef struct bn_params {
    int64_t rows, ch; /* x viewed as (rows, C): rows = N*H*W */
    float eps, decay;
    bool batch_stats;  /* normalize with the batch statistics and update the moving ones */
    bool var_unbiased; /* n/(n-1) on the variance that goes into moving_var */
    int act;           /* ACT_NONE, ACT_RELU, ACT_RELU6 */
    int saved_mean, saved_invstd; /* indices in ctx->saved (batch_stats only) */
} bn_params;

/*
 * Workspace: per-thread partial sums, nth x (2C) doubles, the sums of every
 * process (synchronized statistics), 2C doubles, then per-channel
 * coefficients, 5C floats (forward: mean, scale; backward: mean, a, b, c0
 * and the forward's scale).
 */
static size_t ws_bytes(int64_t ch, int nth)
{
    return ((size_t)nth + 1) * 2 * (size_t)ch * sizeof(double) + 5 * (size_t)ch * sizeof(float);
}

/* The sums of every process: 2C doubles after the partials. */
static double *global_sums(const slim_kernel_ctx *c, int64_t ch)
{
    return (double *)c->ws + (size_t)c->nth * 2 * (size_t)ch;
}

/* The forward's scale gamma invstd from invstd as a float (the saved one),
 * so that the backward computes the very same value. */
static inline float bn_scale(float gamma, float invstd)
{
    return (float)(gamma * (double)invstd);
}

static float *coef(const slim_kernel_ctx *c, int64_t ch)
{
    return (float *)((char *)c->ws + ((size_t)c->nth + 1) * 2 * (size_t)ch * sizeof(double));
}

static const slim_attr_spec bn_attrs[] = {
    {.name = "epsilon",
     .type = SLIM_ATTR_FLOAT,
     .def = "0.001",
     .ranged = true,
     .min = 0,
     .max = 1e30,
     .doc = "added to the variance before the square root"},
    {.name = "decay",
     .type = SLIM_ATTR_FLOAT,
     .def = "0.999",
     .ranged = true,
     .min = 0,
     .max = 1,
     .doc = "moving average decay (ONNX's momentum, 1 - PyTorch's momentum)"},
    {.name = "use_batch_stats",
     .type = SLIM_ATTR_BOOL,
     .def = "true",
     .doc = "in training, normalize with batch statistics and update the moving ones; "
            "false uses the moving statistics (frozen batch norm)"},
    {.name = "moving_var_unbiased",
     .type = SLIM_ATTR_BOOL,
     .def = "true",
     .doc = "moving_var is updated with the unbiased batch variance (n/(n-1), as TensorFlow); "
            "false = the biased variance (ONNX BatchNormalization training_mode)"},
    {.name = "activation",
     .type = SLIM_ATTR_STRING,
     .def = "none",
     .choices = "none|relu|relu6",
     .doc = "applied to y in the same pass (a fused batch norm + activation)"},
};

static slim_status bn_infer(slim_infer_ctx *c)
{
    bn_params *p = c->params;
    const slim_shape *xs = &c->inputs[0].shape;
    static const char *const names[] = {"x", "gamma", "beta", "moving_mean", "moving_var"};
    char b1[96], b2[96];
    for (int i = 0; i < 5; i++)
        if (c->inputs[i].dtype != SLIM_F32)
            return c->fail(c, SLIM_ETYPE, "%s must be f32", names[i]);
    if (xs->rank < 2)
        return c->fail(c, SLIM_ESHAPE, "x %s must have rank >= 2 with channels last",
                       slim_shape_str(xs, b1, sizeof b1));
    p->ch = xs->dim[xs->rank - 1];
    p->rows = p->ch ? slim_shape_numel(xs) / p->ch : 0;
    for (int i = 1; i < 5; i++) {
        const slim_shape *s = &c->inputs[i].shape;
        if (s->rank != 1 || s->dim[0] != p->ch)
            return c->fail(c, SLIM_ESHAPE, "%s %s must be (%lld,), the channels of x %s", names[i],
                           slim_shape_str(s, b1, sizeof b1), (long long)p->ch,
                           slim_shape_str(xs, b2, sizeof b2));
    }
    p->eps = (float)c->attr_float(c, "epsilon");
    p->decay = (float)c->attr_float(c, "decay");
    p->batch_stats = c->training && c->attr_bool(c, "use_batch_stats");
    p->var_unbiased = c->attr_bool(c, "moving_var_unbiased");
    const char *act = c->attr_str(c, "activation");
    p->act = act_parse(act);
    /* backward reads x and the parameters, and y for the activation's mask
     * (the reference kernel; the fast one recomputes it from x) */
    c->set_backward_reads(c, ~0u, p->act != ACT_NONE ? 1u : 0u);
    /* dx may take dy's memory: each element of dx is written after its dy
     * is read for the last time (the sums over dy come first) */
    c->set_backward_in_place(c, 0, 0);
    if (p->batch_stats && p->rows == 0)
        return c->fail(c, SLIM_ESHAPE, "x %s has no elements to take batch statistics over",
                       slim_shape_str(xs, b1, sizeof b1));
    c->set_output(c, 0, SLIM_F32, xs);
    if (p->batch_stats) {
        slim_shape cs = slim_shape_make(1, &p->ch);
        p->saved_mean = c->add_saved(c, SLIM_F32, &cs);
        p->saved_invstd = c->add_saved(c, SLIM_F32, &cs);
    }
    c->set_workspace(c, ws_bytes(p->ch, c->nth > 0 ? c->nth : 1));
    return SLIM_OK;
}

/* ---- forward ------------------------------------------------------------- */

/*
 * Batch statistics into coefficients. Sums are taken about row 0 (a shift
 * every thread agrees on) so that sum(d^2) - n mean(d)^2 does not cancel when
 * |mean| >> std; one pass over x instead of two. Synchronized across
 * processes (c->allreduce), the shift is the moving mean, which every
 * process holds the same, and the sums of all the processes' rows are
 * added up before the statistics are taken from them.
 */
static void bn_batch_stats(const slim_kernel_ctx *c, const bn_params *p, float *mean, float *scale)
{
    const float *x = c->in[0].data; /* x: (rows,C) */
    const int64_t C = p->ch;
    const float *shift = c->allreduce ? c->in[3].data : x;
    double *part = (double *)c->ws + (size_t)c->ith * 2 * (size_t)C; /* this thread's s1, s2 */
    double *s1 = part, *s2 = part + C;
    int64_t lo, hi;
    slim_split(p->rows, c->ith, c->nth, &lo, &hi);
    for (int64_t j = 0; j < C; j++)
        s1[j] = s2[j] = 0;
    for (int64_t r = lo; r < hi; r++) {
        const float *xr = x + r * C;
        for (int64_t j = 0; j < C; j++) {
            double d = (double)xr[j] - shift[j];
            s1[j] += d;
            s2[j] += d * d;
        }
    }
    c->sync(c);

    /* Combine in thread order, one range of channels per thread. */
    const float *gamma = c->in[1].data;
    float *mm = c->in[3].data, *mv = c->in[4].data;
    float *smean = c->saved && c->n_saved > p->saved_mean ? c->saved[p->saved_mean].data : NULL;
    float *sinv = c->saved && c->n_saved > p->saved_invstd ? c->saved[p->saved_invstd].data : NULL;
    double n = (double)p->rows;
    double *gs = global_sums(c, C);
    slim_split(C, c->ith, c->nth, &lo, &hi);
    for (int64_t j = lo; j < hi; j++) {
        double t1 = 0, t2 = 0;
        for (int t = 0; t < c->nth; t++) {
            const double *pt = (const double *)c->ws + (size_t)t * 2 * (size_t)C;
            t1 += pt[j];
            t2 += pt[C + j];
        }
        gs[j] = t1;
        gs[C + j] = t2;
    }
    if (c->allreduce) {
        c->sync(c);
        if (c->ith == 0)
            c->allreduce(c, gs, 2 * C);
        c->sync(c);
        n *= c->replicas > 1 ? c->replicas : 1;
    }
    const double bessel = p->var_unbiased && n > 1 ? n / (n - 1) : 1.0;
    for (int64_t j = lo; j < hi; j++) {
        double t1 = gs[j], t2 = gs[C + j];
        double md = t1 / n;
        double var = t2 / n - md * md;
        if (var < 0)
            var = 0;
        double m = shift[j] + md;
        double inv = 1.0 / sqrt(var + p->eps);
        mean[j] = (float)m;
        scale[j] = bn_scale(gamma[j], (float)inv);
        if (smean)
            smean[j] = (float)m;
        if (sinv)
            sinv[j] = (float)inv;
        mm[j] = (float)(p->decay * (double)mm[j] + (1.0 - p->decay) * m);
        mv[j] = (float)(p->decay * (double)mv[j] + (1.0 - p->decay) * var * bessel);
    }
}

static void bn_forward(const slim_kernel_ctx *c)
{
    const bn_params *p = c->params;
    const int64_t C = p->ch;
    float *cf = coef(c, C);
    float *mean = cf, *scale = cf + C; /* (C) each */
    int64_t lo, hi;
    if (p->batch_stats) {
        bn_batch_stats(c, p, mean, scale);
    } else {
        const float *gamma = c->in[1].data, *mm = c->in[3].data, *mv = c->in[4].data;
        slim_split(C, c->ith, c->nth, &lo, &hi);
        for (int64_t j = lo; j < hi; j++) {
            mean[j] = mm[j];
            scale[j] = bn_scale(gamma[j], (float)(1.0 / sqrt((double)mv[j] + p->eps)));
        }
    }
    c->sync(c);

    const float *x = c->in[0].data, *beta = c->in[2].data; /* x: (rows,C) */
    float *y = c->out[0].data;                             /* y: (rows,C) */
    slim_split(p->rows, c->ith, c->nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const float *xr = x + r * C;
        float *yr = y + r * C;
        if (p->act == ACT_NONE)
            for (int64_t j = 0; j < C; j++)
                yr[j] = (xr[j] - mean[j]) * scale[j] + beta[j];
        else
            for (int64_t j = 0; j < C; j++)
                yr[j] = act_relu(p->act, (xr[j] - mean[j]) * scale[j] + beta[j]);
    }
}

/* Reference: two passes per channel (mean, then the variance about it);
 * synchronized across processes, each pass's sums of every channel are
 * added up over the processes first (ws: 2C doubles). */
static void bn_forward_ref(const slim_kernel_ctx *c)
{
    const bn_params *p = c->params;
    const int64_t C = p->ch, R = p->rows;
    const float *x = c->in[0].data, *gamma = c->in[1].data, *beta = c->in[2].data;
    float *mm = c->in[3].data, *mv = c->in[4].data, *y = c->out[0].data;
    double *gs = c->ws, n = (double)R * (c->allreduce && c->replicas > 1 ? c->replicas : 1);
    for (int pass = 0; p->batch_stats && pass < 2; pass++) {
        for (int64_t j = 0; j < C; j++) {
            double s = 0;
            for (int64_t r = 0; r < R; r++) {
                double d = pass ? x[r * C + j] - gs[j] : x[r * C + j];
                s += pass ? d * d : d;
            }
            gs[pass * C + j] = s;
        }
        if (c->allreduce)
            c->allreduce(c, gs + pass * C, C);
        for (int64_t j = 0; !pass && j < C; j++)
            gs[j] /= n; /* the mean */
    }
    for (int64_t j = 0; j < C; j++) {
        double m, var;
        if (p->batch_stats) {
            m = gs[j];
            var = gs[C + j] / n;
        } else {
            m = mm[j];
            var = mv[j];
        }
        double inv = 1.0 / sqrt(var + p->eps);
        for (int64_t r = 0; r < R; r++)
            y[r * C + j] = act_fwd(p->act, (float)(gamma[j] * (x[r * C + j] - m) * inv + beta[j]));
        if (p->batch_stats) {
            double unb = n > 1 && p->var_unbiased ? var * n / (n - 1) : var;
            if (c->n_saved > p->saved_invstd) {
                ((float *)c->saved[p->saved_mean].data)[j] = (float)m;
                ((float *)c->saved[p->saved_invstd].data)[j] = (float)inv;
            }
            mm[j] = (float)(p->decay * (double)mm[j] + (1.0 - p->decay) * m);
            mv[j] = (float)(p->decay * (double)mv[j] + (1.0 - p->decay) * unb);
        }
    }
}

/* ---- backward ------------------------------------------------------------ */

/*
 * With xhat = (x - mean) invstd, sums over the rows Sdy = sum dy and
 * Sdyx = sum dy (x - mean):
 *   dbeta = Sdy, dgamma = Sdyx invstd, and with batch statistics (mean and
 *   invstd depend on x)
 *   dx = gamma invstd (dy - Sdy/n - xhat dgamma/n)
 *      = a dy + b (x - mean) + c0, a = gamma invstd, b = -gamma invstd^3 Sdyx / n,
 *        c0 = -gamma invstd Sdy / n;
 * with the moving statistics (constants) dx = gamma invstd dy.
 */

/* The statistics y was normalized with: batch (saved) or moving. */
static void bn_stats(const slim_kernel_ctx *c, const bn_params *p, int64_t j, float *m, float *inv)
{
    if (p->batch_stats) {
        *m = ((const float *)c->saved[p->saved_mean].data)[j];
        *inv = ((const float *)c->saved[p->saved_invstd].data)[j];
    } else {
        *m = ((const float *)c->in[3].data)[j];
        *inv = (float)(1.0 / sqrt((double)((const float *)c->in[4].data)[j] + p->eps));
    }
}

static void zero_share(const slim_kernel_ctx *c, const slim_tensor *t)
{
    if (!t->data)
        return;
    int64_t lo, hi;
    slim_split(slim_shape_numel(&t->shape), c->ith, c->nth, &lo, &hi);
    if (hi > lo)
        memset((float *)t->data + lo, 0, (size_t)(hi - lo) * sizeof(float));
}

/* A row's contribution to the sums, and a row of dx, for a constant act
 * (inlined per activation so that each loop vectorizes). The activation's
 * mask comes from the pre-activation value z recomputed from x (the
 * forward's float operations on its mean, scale and beta, so the same bits):
 * reading y instead would be two more passes over a tensor of x's size. */
static inline __attribute__((always_inline)) float z_of(int act, float x, float mean, float scale,
                                                        float beta)
{
    /* the pre-activation value: y = act(z), and y's mask is z's
     * (y > 0 iff z > 0; y < 6 iff z < 6 where z > 0) */
    return act == ACT_NONE ? 0.0f : (x - mean) * scale + beta;
}

static inline __attribute__((always_inline)) void sums_row(int act, int64_t C, const float *xr,
                                                           const float *dyr, const float *mean,
                                                           const float *sc, const float *beta,
                                                           double *sdy, double *sdyx)
{
    for (int64_t j = 0; j < C; j++) {
        float d = act_bwd(act, z_of(act, xr[j], mean[j], sc[j], beta[j]), dyr[j]);
        sdy[j] += d;
        sdyx[j] += (double)d * (xr[j] - mean[j]);
    }
}

static inline __attribute__((always_inline)) void
dx_row(int act, int64_t C, const float *xr, const float *dyr, const float *mean, const float *sc,
       const float *beta, const float *ca, const float *cb, const float *c0, float *dxr)
{
    for (int64_t j = 0; j < C; j++)
        dxr[j] = ca[j] * act_bwd(act, z_of(act, xr[j], mean[j], sc[j], beta[j]), dyr[j]) +
                 cb[j] * (xr[j] - mean[j]) + c0[j];
}

static void bn_backward(const slim_kernel_ctx *c)
{
    const bn_params *p = c->params;
    const int64_t C = p->ch;
    const float *x = c->in[0].data, *gamma = c->in[1].data; /* x: (rows,C) */
    const float *dy = c->dout[0].data;                      /* dy: (rows,C) */
    const float *beta = c->in[2].data;                      /* for the activation's mask */
    const int act = p->act;
    float *dx = c->din[0].data, *dgamma = c->din[1].data, *dbeta = c->din[2].data;
    if (!dy) {
        for (int i = 0; i < 3; i++)
            zero_share(c, &c->din[i]);
        return;
    }
    float *cf = coef(c, C);
    float *mean = cf, *ca = cf + C, *cb = cf + 2 * C, *c0 = cf + 3 * C; /* (C) each */
    float *sc = cf + 4 * C;                                             /* the forward's scale */
    int64_t lo, hi;

    /* Phase 0: the statistics per channel. */
    slim_split(C, c->ith, c->nth, &lo, &hi);
    for (int64_t j = lo; j < hi; j++) {
        bn_stats(c, p, j, &mean[j], &ca[j]); /* ca holds invstd until phase 2 */
        sc[j] = bn_scale(gamma[j], ca[j]);
    }
    c->sync(c);

    /* Phase 1: per-thread partial sums over a fixed range of rows. */
    bool sums = p->batch_stats ? dx || dgamma || dbeta : dgamma || dbeta;
    double *part = (double *)c->ws + (size_t)c->ith * 2 * (size_t)C;
    double *sdy = part, *sdyx = part + C;
    if (sums) {
        for (int64_t j = 0; j < C; j++)
            sdy[j] = sdyx[j] = 0;
        slim_split(p->rows, c->ith, c->nth, &lo, &hi);
        for (int64_t r = lo; r < hi; r++) {
            const float *xr = x + r * C, *dyr = dy + r * C;
            switch (act) { /* one loop per activation, each vectorized */
            case ACT_NONE: sums_row(ACT_NONE, C, xr, dyr, mean, sc, beta, sdy, sdyx); break;
            case ACT_RELU: sums_row(ACT_RELU, C, xr, dyr, mean, sc, beta, sdy, sdyx); break;
            default: sums_row(ACT_RELU6, C, xr, dyr, mean, sc, beta, sdy, sdyx);
            }
        }
    }
    c->sync(c);

    /* Phase 2: combine in thread order; dgamma, dbeta and dx's coefficients.
     * With statistics synchronized across processes, dx takes the sums over
     * every process's rows (dgamma and dbeta stay this process's: the
     * gradient allreduce averages them). */
    double n = (double)p->rows;
    double *gs = global_sums(c, C);
    slim_split(C, c->ith, c->nth, &lo, &hi);
    for (int64_t j = lo; j < hi; j++) {
        double t1 = 0, t2 = 0;
        if (sums)
            for (int t = 0; t < c->nth; t++) {
                const double *pt = (const double *)c->ws + (size_t)t * 2 * (size_t)C;
                t1 += pt[j];
                t2 += pt[C + j];
            }
        if (dbeta)
            dbeta[j] = (float)t1;
        if (dgamma)
            dgamma[j] = (float)(t2 * ca[j]);
        gs[j] = t1;
        gs[C + j] = t2;
    }
    if (c->allreduce && p->batch_stats && dx) {
        c->sync(c);
        if (c->ith == 0)
            c->allreduce(c, gs, 2 * C);
        c->sync(c);
        n *= c->replicas > 1 ? c->replicas : 1;
    }
    for (int64_t j = lo; j < hi; j++) {
        double t1 = gs[j], t2 = gs[C + j];
        double inv = ca[j], g = gamma[j];
        ca[j] = (float)(g * inv);
        cb[j] = p->batch_stats ? (float)(-g * inv * inv * inv * t2 / n) : 0.0f;
        c0[j] = p->batch_stats ? (float)(-g * inv * t1 / n) : 0.0f;
    }
    c->sync(c);

    /* Phase 3: dx, one range of rows per thread. */
    if (!dx)
        return;
    slim_split(p->rows, c->ith, c->nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const float *xr = x + r * C, *dyr = dy + r * C;
        float *dxr = dx + r * C;
        switch (act) {
        case ACT_NONE: dx_row(ACT_NONE, C, xr, dyr, mean, sc, beta, ca, cb, c0, dxr); break;
        case ACT_RELU: dx_row(ACT_RELU, C, xr, dyr, mean, sc, beta, ca, cb, c0, dxr); break;
        default: dx_row(ACT_RELU6, C, xr, dyr, mean, sc, beta, ca, cb, c0, dxr);
        }
    }
}

/* Reference: the sums of every channel (over every process's rows for dx
 * when synchronized; dgamma and dbeta keep this process's), then dx. */
static void bn_backward_ref(const slim_kernel_ctx *c)
{
    const bn_params *p = c->params;
    const int64_t C = p->ch, R = p->rows;
    const float *x = c->in[0].data, *gamma = c->in[1].data, *dy = c->dout[0].data;
    const float *y = c->out[0].data; /* for the activation's mask */
    float *dx = c->din[0].data, *dgamma = c->din[1].data, *dbeta = c->din[2].data;
    double *gs = c->ws, n = (double)R;
    for (int64_t j = 0; j < C; j++) {
        float m, inv;
        bn_stats(c, p, j, &m, &inv);
        double sdy = 0, sdyxh = 0;
        for (int64_t r = 0; r < R && dy; r++) {
            float d = act_bwd(p->act, y[r * C + j], dy[r * C + j]);
            sdy += d;
            sdyxh += d * (x[r * C + j] - m) * (double)inv;
        }
        if (dbeta)
            dbeta[j] = (float)sdy;
        if (dgamma)
            dgamma[j] = (float)sdyxh;
        gs[j] = sdy;
        gs[C + j] = sdyxh;
    }
    if (c->allreduce && p->batch_stats && dx) {
        c->allreduce(c, gs, 2 * C);
        n *= c->replicas > 1 ? c->replicas : 1;
    }
    for (int64_t j = 0; j < C; j++) {
        float m, inv;
        bn_stats(c, p, j, &m, &inv);
        double sdy = gs[j], sdyxh = gs[C + j];
        for (int64_t r = 0; r < R && dx; r++) {
            double d = dy ? act_bwd(p->act, y[r * C + j], dy[r * C + j]) : 0.0;
            if (p->batch_stats) {
                double xh = (x[r * C + j] - m) * (double)inv;
                d = d - sdy / n - xh * sdyxh / n;
            }
            dx[r * C + j] = (float)(gamma[j] * (double)inv * d);
        }
    }
}

const slim_op_desc slim__op_batch_norm = {
    .struct_size = sizeof(slim_op_desc),
    .name = "batch_norm",
    .doc = "batch normalization over the last axis: x (...,C), gamma, beta, moving_mean, "
           "moving_var (C) -> y; training updates the moving statistics in place",
    .min_inputs = 5,
    .max_inputs = 5,
    .n_outputs = 1,
    .attrs = bn_attrs,
    .n_attrs = (int)(sizeof bn_attrs / sizeof bn_attrs[0]),
    .params_size = sizeof(bn_params),
    .nondiff_inputs = (1u << 3) | (1u << 4),
    .mutates_inputs = (1u << 3) | (1u << 4),
    .infer = bn_infer,
    .forward = bn_forward,
    .backward = bn_backward,
    .forward_ref = bn_forward_ref,
    .backward_ref = bn_backward_ref,
};
