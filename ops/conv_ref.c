/*
 * ops/conv_ref.c - conv2d's reference kernels: the definition in ops/conv.c
 * written as plain loops, sums in double, the folded batch norm, residual
 * and activation as the formula says; SLIM_KERNELS=ref runs them, the op
 * harness compares the fast paths with them, and the fast paths fall back
 * to them when the workspace holds not even one worker's slice.
 */
#include <math.h>
#include <string.h>

#include "ops/conv.h"

void slim__conv_forward_ref(const slim_kernel_ctx *c)
{
    const conv_params *p = c->params;
    const float *x = c->in[0].data;                      /* x: (N,H,W,C) */
    const float *w = c->in[1].data;                      /* w: (KH,KW,Cg,O) */
    const float *b = p->has_bias ? c->in[2].data : NULL; /* b: (O) */
    float *y = c->out[0].data;                           /* y: (N,OH,OW,O) */
    /* a folded batch norm and activation in double, as written in the header */
    for (int64_t n = 0; n < p->f.N; n++)
        for (int64_t oh = 0; oh < p->f.OH; oh++)
            for (int64_t ow = 0; ow < p->f.OW; ow++)
                for (int64_t o = 0; o < p->f.O; o++) {
                    int64_t g = o / p->f.Og;
                    double acc = b ? b[o] : 0.0;
                    for (int64_t kh = 0; kh < p->f.KH; kh++) {
                        int64_t ih = oh * p->f.SH - p->f.PT + kh * p->f.DH;
                        if (ih < 0 || ih >= p->f.H)
                            continue;
                        for (int64_t kw = 0; kw < p->f.KW; kw++) {
                            int64_t iw = ow * p->f.SW - p->f.PL + kw * p->f.DW;
                            if (iw < 0 || iw >= p->f.W)
                                continue;
                            for (int64_t cg = 0; cg < p->f.Cg; cg++)
                                acc += (double)x[((n * p->f.H + ih) * p->f.W + iw) * p->f.C +
                                                 g * p->f.Cg + cg] *
                                       w[((kh * p->f.KW + kw) * p->f.Cg + cg) * p->f.O + o];
                        }
                    }
                    if (p->fold_bn) {
                        const int bi = p->bn_in;
                        double gamma = ((const float *)c->in[bi].data)[o],
                               beta = ((const float *)c->in[bi + 1].data)[o],
                               mean = ((const float *)c->in[bi + 2].data)[o],
                               var = ((const float *)c->in[bi + 3].data)[o];
                        acc = gamma * (acc - mean) / sqrt(var + (double)p->bn_eps) + beta;
                    }
                    int64_t yi = ((n * p->f.OH + oh) * p->f.OW + ow) * p->f.O + o;
                    if (p->residual)
                        acc += ((const float *)c->in[p->res_in].data)[yi];
                    y[yi] = act_fwd(p->act, (float)acc);
                }
}

void slim__conv_backward_ref(const slim_kernel_ctx *c)
{
    const conv_params *p = c->params;
    const float *x = c->in[0].data;    /* x: (N,H,W,C) */
    const float *w = c->in[1].data;    /* w: (KH,KW,Cg,O) */
    const float *dy = c->dout[0].data; /* dy: (N,OH,OW,O) */
    float *dx = c->din[0].data, *dw = c->din[1].data;
    float *db = p->has_bias ? c->din[2].data : NULL;
    if (dx)
        memset(dx, 0, (size_t)(p->f.N * p->f.H * p->f.W * p->f.C) * sizeof(float));
    if (dw)
        memset(dw, 0, (size_t)(p->f.KH * p->f.KW * p->f.Cg * p->f.O) * sizeof(float));
    if (db)
        memset(db, 0, (size_t)p->f.O * sizeof(float));
    if (!dy)
        return;
    for (int64_t n = 0; n < p->f.N; n++)
        for (int64_t oh = 0; oh < p->f.OH; oh++)
            for (int64_t ow = 0; ow < p->f.OW; ow++)
                for (int64_t o = 0; o < p->f.O; o++) {
                    int64_t g = o / p->f.Og;
                    float d = dy[((n * p->f.OH + oh) * p->f.OW + ow) * p->f.O + o];
                    if (db)
                        db[o] += d;
                    for (int64_t kh = 0; kh < p->f.KH; kh++) {
                        int64_t ih = oh * p->f.SH - p->f.PT + kh * p->f.DH;
                        if (ih < 0 || ih >= p->f.H)
                            continue;
                        for (int64_t kw = 0; kw < p->f.KW; kw++) {
                            int64_t iw = ow * p->f.SW - p->f.PL + kw * p->f.DW;
                            if (iw < 0 || iw >= p->f.W)
                                continue;
                            for (int64_t cg = 0; cg < p->f.Cg; cg++) {
                                int64_t xi =
                                    ((n * p->f.H + ih) * p->f.W + iw) * p->f.C + g * p->f.Cg + cg;
                                int64_t wi = ((kh * p->f.KW + kw) * p->f.Cg + cg) * p->f.O + o;
                                if (dx)
                                    dx[xi] += d * w[wi];
                                if (dw)
                                    dw[wi] += d * x[xi];
                            }
                        }
                    }
                }
}
