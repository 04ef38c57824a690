/*
 * ops/conv.c - 2-D convolution (conv2d) over NHWC activations with HWIO filters.
 *
 *   y[n,oh,ow,o] = b[o] + sum_{kh,kw,cg} x[n, oh*SH - PT + kh*DH, ow*SW - PL + kw*DW, g*Cg + cg]
 *                                        * w[kh,kw,cg,o],   g = o / Og
 *
 * with Cg = C/groups input and Og = O/groups output channels per group, and
 * zeros outside the image. Padding SAME follows TensorFlow (OH = ceil(H/SH),
 * the odd pixel of padding goes to the bottom/right).
 *
 * Infer picks one of three fast kernels:
 *   - DEPTHWISE (groups == C == O): direct loops with C innermost, which the
 *     compiler vectorizes; a GEMM with K = KH*KW and one column per group
 *     would be all overhead.
 *   - POINTWISE (1x1, stride 1, no padding): x itself is the GEMM's A matrix.
 *   - GEMM: im2col in tiles of T output rows, then the product per tile and group.
 * The GEMM paths (packing, im2col, the micro-kernel drivers, workspace
 * layout) are in ops/conv_gemm.c; this file has the op's descriptor, infer,
 * the reference and depthwise kernels, and the dispatch between them. The
 * declarations both share are in ops/conv.h.
 *
 * Inference only, usually set by the compiler when it fuses a conv2d with
 * the batch norm, residual add and/or relu that follow it: batch_norm=true takes four more
 * inputs after b (gamma, beta, moving_mean, moving_var) and gives
 *   y = act(gamma (conv(x, w) + b - moving_mean) / sqrt(moving_var + eps) + beta)
 * as y = act(conv(x, w) * scale + shift) per output channel, applied to each
 * block of y as its products finish (while it is in cache) instead of in a
 * pass of its own over the whole tensor; activation alone applies relu or
 * relu6 the same way, and residual=true adds a last input of y's shape
 * before the activation (a residual connection's add):
 *   y = act(conv(x, w) * scale + shift + residual)
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/conv.h"
#include "ops/conv_ukr.h"

extern const slim_op_desc slim__op_conv2d;

/* ---- infer --------------------------------------------------------------- */

slim_status slim__conv_axis(slim_infer_ctx *c, const char *axis, const char *padding, int64_t in,
                           int64_t k, int64_t s, int64_t d, int64_t pad_lo, int64_t pad_hi,
                           int64_t *out, int64_t *lo)
{
    int64_t eff = (k - 1) * d + 1;
    if (strcmp(padding, "SAME") == 0) {
        *out = (in + s - 1) / s;
        *lo = max64((*out - 1) * s + eff - in, 0) / 2;
        return SLIM_OK;
    }
    if (strcmp(padding, "VALID") == 0)
        pad_lo = pad_hi = 0;
    if (in + pad_lo + pad_hi < eff)
        return c->fail(c, SLIM_ESHAPE,
                       "the input %s %lld (padded: %lld) is smaller than the kernel's %lld "
                       "(with dilation); use padding=SAME or a smaller kernel",
                       axis, (long long)in, (long long)(in + pad_lo + pad_hi), (long long)eff);
    *out = (in + pad_lo + pad_hi - eff) / s + 1;
    *lo = pad_lo;
    return SLIM_OK;
}

/* Whether q runs as Winograd under the attribute's mode (auto: when both
 * channel counts are at least min_ch). */
static bool wino_use(const conv_params *p, const conv_geom *q, const char *mode, int64_t min_ch)
{
    if (p->kind != CONV_GEMM || strcmp(mode, "off") == 0 || !slim__wino_shape(q))
        return false;
    return strcmp(mode, "on") == 0 || (q->C >= min_ch && q->O >= min_ch);
}

/* With residual=true, whether the residual's shape differs from y's (then failed). */
static bool bad_residual(slim_infer_ctx *c, const slim_shape *ys)
{
    const conv_params *p = c->params;
    if (!p->residual)
        return false;
    const slim_shape *rs = &c->inputs[p->res_in].shape;
    if (rs->rank == ys->rank && !memcmp(rs->dim, ys->dim, (size_t)ys->rank * sizeof(int64_t)))
        return false;
    char b1[96], b2[96];
    c->fail(c, SLIM_ESHAPE, "the residual %s must have the output's shape %s",
            slim_shape_str(rs, b1, sizeof b1), slim_shape_str(ys, b2, sizeof b2));
    return true;
}

static slim_status conv_infer(slim_infer_ctx *c)
{
    c->set_backward_reads(c, ~0u, 0); /* backward: x and w, never y */
    conv_params *p = c->params;
    const slim_tensor_desc *x = &c->inputs[0], *w = &c->inputs[1];
    char xs[96], ws[96], bs[96];
    slim_shape_str(&x->shape, xs, sizeof xs);
    slim_shape_str(&w->shape, ws, sizeof ws);

    p->fold_bn = c->attr_bool(c, "batch_norm");
    p->residual = c->attr_bool(c, "residual");
    p->act = act_parse(c->attr_str(c, "activation"));
    /* x, w, [b], [gamma, beta, moving_mean, moving_var], [residual] */
    const int base = c->n_inputs - (p->fold_bn ? 4 : 0) - (p->residual ? 1 : 0);
    if (base != 2 && base != 3)
        return c->fail(c, SLIM_EINVAL, "takes x, w, optional b%s%s (%d to %d inputs), got %d%s",
                       p->fold_bn ? ", then gamma, beta, moving_mean, moving_var" : "",
                       p->residual ? ", then the residual" : "", c->n_inputs - base + 2,
                       c->n_inputs - base + 3, c->n_inputs,
                       base > 3 ? " (batch-norm parameters need batch_norm=true, a residual "
                                  "residual=true)"
                                : "");
    if (c->training && (p->fold_bn || p->residual || p->act != ACT_NONE))
        return c->fail(c, SLIM_EINVAL,
                       "batch_norm, residual and activation are for inference (training needs "
                       "the batch statistics and the gradients between): use batch_norm, add and "
                       "relu nodes, which the compiler fuses into the convolution in inference");
    for (int i = 0; i < c->n_inputs; i++)
        if (c->inputs[i].dtype != SLIM_F32)
            return c->fail(c, SLIM_ETYPE, "x, w, b and the batch-norm parameters must be f32");
    if (x->shape.rank != 4)
        return c->fail(c, SLIM_ESHAPE, "x must be (N,H,W,C), got %s", xs);
    if (w->shape.rank != 4)
        return c->fail(c, SLIM_ESHAPE, "w must be (KH,KW,C/groups,O), got %s", ws);
    for (int i = 0; i < 4; i++)
        if (x->shape.dim[i] < (i == 0 ? 0 : 1) || w->shape.dim[i] < 1)
            return c->fail(c, SLIM_ESHAPE, "empty dimension in x %s or w %s", xs, ws);

    p->f.N = x->shape.dim[0];
    p->f.H = x->shape.dim[1];
    p->f.W = x->shape.dim[2];
    p->f.C = x->shape.dim[3];
    p->f.KH = w->shape.dim[0];
    p->f.KW = w->shape.dim[1];
    p->f.O = w->shape.dim[3];
    p->f.G = c->attr_int(c, "groups");
    if (p->f.G < 1 || p->f.C % p->f.G != 0 || p->f.O % p->f.G != 0)
        return c->fail(c, SLIM_ESHAPE,
                       "groups=%lld must divide the input channels %lld and the output channels "
                       "%lld (x %s, w %s)",
                       (long long)p->f.G, (long long)p->f.C, (long long)p->f.O, xs, ws);
    p->f.Cg = p->f.C / p->f.G;
    p->f.Og = p->f.O / p->f.G;
    if (w->shape.dim[2] != p->f.Cg)
        return c->fail(c, SLIM_ESHAPE,
                       "w's input channels %lld do not match x's %lld / groups %lld = %lld "
                       "(x %s, w %s)",
                       (long long)w->shape.dim[2], (long long)p->f.C, (long long)p->f.G,
                       (long long)p->f.Cg, xs, ws);
    p->has_bias = base == 3;
    p->bn_in = base;
    p->res_in = c->n_inputs - 1;
    p->bn_eps = (float)c->attr_float(c, "batch_norm_epsilon");
    static const char *const vec_names[] = {"b", "gamma", "beta", "moving_mean", "moving_var"};
    for (int i = 2; i < c->n_inputs - (p->residual ? 1 : 0); i++) {
        const slim_tensor_desc *b = &c->inputs[i];
        const char *what = vec_names[p->has_bias ? i - 2 : i - 1];
        if (b->shape.rank != 1 || b->shape.dim[0] != p->f.O)
            return c->fail(c, SLIM_ESHAPE, "%s must be (%lld) to match w %s, got %s", what,
                           (long long)p->f.O, ws, slim_shape_str(&b->shape, bs, sizeof bs));
    }
    /* the folded batch norm's scale and shift lie at the workspace's start */
    size_t fold = p->fold_bn ? 2 * round16((size_t)p->f.O) * sizeof(float) : 0;

    const int64_t *strides, *dil, *pads;
    if (c->attr_ints(c, "strides", &strides) != 2)
        return c->fail(c, SLIM_EINVAL, "strides must have 2 values [SH, SW]");
    if (c->attr_ints(c, "dilations", &dil) != 2)
        return c->fail(c, SLIM_EINVAL, "dilations must have 2 values [DH, DW]");
    if (c->attr_ints(c, "pads", &pads) != 4)
        return c->fail(c, SLIM_EINVAL, "pads must have 4 values [top, bottom, left, right]");
    const char *padding = c->attr_str(c, "padding");
    bool explicit_pads = strcmp(padding, "EXPLICIT") == 0;
    if (!explicit_pads && (pads[0] || pads[1] || pads[2] || pads[3]))
        return c->fail(c, SLIM_EINVAL, "pads are only used with padding=EXPLICIT (got %s)",
                       padding);
    p->f.SH = strides[0];
    p->f.SW = strides[1];
    p->f.DH = dil[0];
    p->f.DW = dil[1];
    slim_status st = slim__conv_axis(c, "height", padding, p->f.H, p->f.KH, p->f.SH, p->f.DH, pads[0],
                               pads[1], &p->f.OH, &p->f.PT);
    if (st)
        return st;
    st = slim__conv_axis(c, "width", padding, p->f.W, p->f.KW, p->f.SW, p->f.DW, pads[2], pads[3],
                   &p->f.OW, &p->f.PL);
    if (st)
        return st;

    p->f.K = p->f.KH * p->f.KW * p->f.Cg;
    if (p->f.G == 1 && p->f.OH == 1 && p->f.OW == 1 && p->f.KH == p->f.H && p->f.KW == p->f.W &&
        p->f.PT == 0 && p->f.PL == 0 && p->f.DH == 1 && p->f.DW == 1) {
        /* x (N,H,W,C) is (N,K) and w (H,W,C,O) is (K,O) as they lie */
        p->kind = CONV_FC;
        p->fc = (slim__fc_params){
            .n = p->f.N, .k = p->f.K, .o = p->f.O, .has_bias = p->has_bias && !p->fold_bn};
        slim_shape ys = {4, {p->f.N, 1, 1, p->f.O}};
        if (bad_residual(c, &ys))
            return SLIM_ESHAPE;
        c->set_output(c, 0, SLIM_F32, &ys);
        c->set_workspace(c, fold + slim__fc_workspace_bytes(&p->fc, c->nth, c->training));
        return SLIM_OK;
    }
    if (p->f.G == p->f.C && p->f.G == p->f.O)
        p->kind = CONV_DEPTHWISE;
    else if (p->f.KH == 1 && p->f.KW == 1 && p->f.SH == 1 && p->f.SW == 1 && p->f.PT == 0 &&
             p->f.PL == 0 && p->f.OH == p->f.H && p->f.OW == p->f.W)
        p->kind = CONV_POINTWISE;
    else
        p->kind = CONV_GEMM;

    conv_geom *f = &p->f;
    f->pointwise = p->kind == CONV_POINTWISE;
    /* dx = conv(dy, flip(w)^T) needs stride 1 (else dx pixels see different
     * taps) and enough input channels (16) to keep the kernel's columns busy. */
    p->dx_gather =
        f->pointwise || (p->kind == CONV_GEMM && f->SH == 1 && f->SW == 1 && f->Cg >= 16);
    conv_geom *t = &p->t;
    *t = (conv_geom){.N = f->N,
                     .H = f->OH,
                     .W = f->OW,
                     .C = f->O,
                     .KH = f->KH,
                     .KW = f->KW,
                     .O = f->C,
                     .OH = f->H,
                     .OW = f->W,
                     .SH = 1,
                     .SW = 1,
                     .DH = f->DH,
                     .DW = f->DW,
                     .PT = (f->KH - 1) * f->DH - f->PT,
                     .PL = (f->KW - 1) * f->DW - f->PL,
                     .G = f->G,
                     .Cg = f->Og,
                     .Og = f->Cg,
                     .K = f->KH * f->KW * f->Og,
                     .pointwise = f->pointwise};

    int nth = c->nth > 0 ? c->nth : 1;
    int64_t M = f->N * f->OH * f->OW;
    f->T = slim__conv_tile_rows(f, M, nth);
    t->T = slim__conv_tile_rows(t, f->N * f->H * f->W, nth);
    /* Winograd F(4x4, 3x3) or F(2x2, 5x5) for the forward, the gathered data gradient and
     * the filter gradient */
    const char *wino = c->attr_str(c, "winograd");
    if (wino_use(p, f, wino, WINO_MIN_CH))
        slim__wino_plan(f, nth);
    if (c->training && p->dx_gather && wino_use(p, t, wino, WINO_MIN_CH))
        slim__wino_plan(t, nth);
    p->wino_dw = c->training && wino_use(p, f, wino, WINO_DW_MIN_CH);
    p->wdw_split = p->wino_dw && slim__wino_dw_split(f, nth);
    p->dw_ksplit = M < f->K;

    slim_shape ys = {4, {f->N, f->OH, f->OW, f->O}};
    if (bad_residual(c, &ys))
        return SLIM_ESHAPE;
    c->set_output(c, 0, SLIM_F32, &ys);
    if (p->residual && p->kind != CONV_DEPTHWISE && slim__conv_res_in_place(f))
        c->set_in_place(c, 0, p->res_in);
    size_t per = slim__conv_ws_floats(p, nth, false), shared = slim__conv_shared_floats(p, false);
    if (c->training) {
        size_t bwd = slim__conv_ws_floats(p, nth, true), sb = slim__conv_shared_floats(p, true);
        per = bwd > per ? bwd : per;
        shared = sb > shared ? sb : shared;
    }
    c->set_workspace(c, fold + (shared + per * (size_t)nth) * sizeof(float));
    return SLIM_OK;
}

/* ---- the folded batch norm and activation ------------------------------------ */

const float *slim__conv_bias(const slim_kernel_ctx *c)
{
    const conv_params *p = c->params;
    return p->has_bias && !p->fold_bn ? c->in[2].data : NULL;
}

void slim__conv_post_rows(const conv_post *post, float *y, int64_t ld, int64_t rows, int64_t c0,
                          int64_t nc)
{
    const float *restrict s = post->scale ? post->scale + c0 : NULL;
    const float *restrict t = post->shift ? post->shift + c0 : NULL;
    const float *res = post->res ? post->res + (y - post->out) : NULL;
    for (int64_t r = 0; r < rows; r++) {
        float *restrict v = y + r * ld;
        if (s)
            for (int64_t j = 0; j < nc; j++)
                v[j] = v[j] * s[j] + t[j];
        if (res) {
            const float *restrict e = res + r * ld;
            for (int64_t j = 0; j < nc; j++)
                v[j] += e[j];
        }
        if (post->act != ACT_NONE)
            for (int64_t j = 0; j < nc; j++)
                v[j] = act_fwd(post->act, v[j]);
    }
}

void slim__bn_fold(const slim_tensor *bn, const float *b, float eps, int64_t lo, int64_t hi,
                   float *scale, float *shift)
{
    const float *gamma = bn[0].data, *beta = bn[1].data, *mean = bn[2].data, *var = bn[3].data;
    for (int64_t o = lo; o < hi; o++) {
        float s = gamma[o] / sqrtf(var[o] + eps);
        scale[o] = s;
        shift[o] = beta[o] + ((b ? b[o] : 0.0f) - mean[o]) * s;
    }
}

/* The folded batch norm's scale and shift, this thread's share of the
 * channels; then the threads meet. */
static void fold_bn(const slim_kernel_ctx *c, float *scale, float *shift)
{
    const conv_params *p = c->params;
    int64_t lo, hi;
    slim_split(p->f.O, c->ith, c->nth, &lo, &hi);
    slim__bn_fold(&c->in[p->bn_in], p->has_bias ? c->in[2].data : NULL, p->bn_eps, lo, hi, scale,
                  shift);
    c->sync(c);
}
/* ---- reference kernels ---------------------------------------------------- */

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
/* acc[o] += sum of dy rows [r0, r1) (dy: (rows, O)). */
void slim__conv_col_sums(const float *dy, int64_t r0, int64_t r1, int64_t O, float *acc)
{
    for (int64_t r = r0; r < r1; r++) {
        const float *row = dy + r * O;
        for (int64_t o = 0; o < O; o++)
            acc[o] += row[o];
    }
}

/* dst[i] += sum over workers t = 1..nw-1 of part_t[i], for this thread's share
 * of [0, n); part_t = ws + t*stride + off. Fixed order, so deterministic. */
void slim__conv_reduce_parts(const slim_kernel_ctx *c, float *dst, const float *ws, size_t stride,
                             size_t off, int nw, int64_t n)
{
    int64_t lo, hi;
    slim_split(n, c->ith, c->nth, &lo, &hi);
    for (int t = 1; t < nw; t++) {
        const float *part = ws + (size_t)t * stride + off;
        for (int64_t i = lo; i < hi; i++)
            dst[i] += part[i];
    }
}

/* Zero a gradient output in parallel (dout was NULL: the gradient is zero). */
void slim__conv_zero_split(const slim_kernel_ctx *c, float *d, int64_t n)
{
    int64_t lo, hi;
    if (!d)
        return;
    slim_split(n, c->ith, c->nth, &lo, &hi);
    if (hi > lo)
        memset(d + lo, 0, (size_t)(hi - lo) * sizeof(float));
}

/* ---- depthwise: direct loops, C innermost ------------------------------- */

/* A byte range prefetched into L2 a few lines at a time. */
typedef struct dw_pf {
    const char *at, *end;
    int64_t per; /* lines per step */
} dw_pf;

static inline void dw_pf_step(dw_pf *pf)
{
    for (int64_t i = 0; pf && i < pf->per && pf->at < pf->end; i++, pf->at += 64)
        __builtin_prefetch(pf->at, 0, 2);
}

/* The input rows that output row `row` + 1 reads and `row` does not (x rows
 * of image n are contiguous, so one range), for dw_interior to prefetch: x
 * is read where it lies, a few rows at a time, and the layers that stride
 * 2 over wide maps waited on memory at every new row (the hardware
 * prefetchers fall behind: 16 + 13 vectors of 9 taps per 4 pixels). */
static dw_pf dw_next_rows(const conv_geom *f, const float *x, int64_t row, int64_t rows)
{
    dw_pf pf = {NULL, NULL, 0};
    if (row + 1 >= rows)
        return pf;
    const int64_t n = (row + 1) / f->OH, oh = (row + 1) % f->OH;
    int64_t first = oh * f->SH - f->PT, last = first + (f->KH - 1) * f->DH;
    if (oh > 0) /* rows up to the current row's last are in cache already */
        first = max64(first, (oh - 1) * f->SH - f->PT + (f->KH - 1) * f->DH + 1);
    first = max64(first, 0);
    last = min64(last, f->H - 1);
    if (last < first)
        return pf;
    const int64_t row_bytes = f->W * f->C * (int64_t)sizeof(float);
    pf.at = (const char *)(x + (n * f->H + first) * f->W * f->C);
    pf.end = pf.at + (last - first + 1) * row_bytes;
    const int64_t lines = (pf.end - pf.at + 63) / 64, steps = max64(1, f->OW / 4);
    pf.per = (lines + steps - 1) / steps;
    return pf;
}

#ifdef VW
/* The finishing of one vector of output channels at c0 (m: the lanes in C). */
static inline vfloat dw_finish(vfloat acc, const conv_post *post, const float *yp, int64_t c0,
                               bool full, vmask m)
{
#define LD(ptr) (full ? vload(ptr) : vload_m(ptr, m))
    if (post->scale)
        acc = vfma(acc, LD(post->scale + c0), LD(post->shift + c0));
    if (post->res)
        acc = vadd(acc, LD(post->res + (yp - post->out) + c0));
#undef LD
    if (post->act != ACT_NONE)
        acc = vmax(acc, vzero());
    if (post->act == ACT_RELU6)
        acc = vmin(acc, vset1(6.0f));
    return acc;
}

/* nv full vectors of an output pixel's channels from c0 (nv a constant
 * where it is called: the accumulators stay in registers), summed over the
 * nt taps, post applied, stored. */
static inline __attribute__((always_inline)) void
dw_vectors(int nv, int64_t c0, const float *const *xs, const float *const *ws, int nt,
           const float *b, const conv_post *post, float *yp)
{
    const vmask all = lanes_below(VW);
    vfloat a[4];
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++)
        a[v] = b ? vload(b + c0 + v * VW) : vzero();
    for (int t = 0; t < nt; t++) {
        const float *xp = xs[t] + c0, *wp = ws[t] + c0;
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            a[v] = vfma(vload(xp + v * VW), vload(wp + v * VW), a[v]);
    }
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++)
        vstore(yp + c0 + v * VW, dw_finish(a[v], post, yp, c0 + v * VW, true, all));
}

/* One output pixel yp from its nt taps (x and w pointers): channels four
 * vectors at a time summed in registers, then two (independent FMA chains),
 * then one (the last masked), post applied before the one store. */
static void dw_pixel(int64_t C, const float *const *xs, const float *const *ws, int nt,
                     const float *b, const conv_post *post, float *yp)
{
    int64_t c0 = 0;
    for (; c0 + 4 * VW <= C; c0 += 4 * VW)
        dw_vectors(4, c0, xs, ws, nt, b, post, yp);
    for (; c0 + 2 * VW <= C; c0 += 2 * VW)
        dw_vectors(2, c0, xs, ws, nt, b, post, yp);
    for (; c0 < C; c0 += VW) {
        const bool full = C - c0 >= VW;
        const vmask m = lanes_below((int)min64(VW, C - c0));
        vfloat acc = b ? (full ? vload(b + c0) : vload_m(b + c0, m)) : vzero();
        for (int t = 0; t < nt; t++)
            acc = full ? vfma(vload(xs[t] + c0), vload(ws[t] + c0), acc)
                       : vfma(vload_m(xs[t] + c0, m), vload_m(ws[t] + c0, m), acc);
        acc = dw_finish(acc, post, yp, c0, full, m);
        if (full)
            vstore(yp + c0, acc);
        else
            vstore_m(yp + c0, m, acc);
    }
}

/* np output pixels from ow (stride SW apart) by nv vectors of channels from
 * c0 (np, nv constants where it is called: np * nv independent chains in
 * registers), over the nr filter rows inside the image (x row xr[r] at
 * column 0, w row wr[r]), all KW taps inside the row; each w vector is
 * loaded once for the np pixels. m: the lanes of a partial last vector
 * (nv == 1 only), else all. */
static inline __attribute__((always_inline)) void
dw_run(int np, int nv, const conv_geom *f, const float *const *xr, const float *const *wr, int nr,
       int64_t ow, int64_t c0, bool full, vmask m, const float *b, const conv_post *post,
       float *yrow)
{
#define LD(ptr) (full ? vload(ptr) : vload_m(ptr, m))
    const int64_t C = f->C, step = f->SW * C, x0 = (ow * f->SW - f->PL) * C + c0;
    vfloat a[4][2];
#pragma GCC unroll 4
    for (int p = 0; p < np; p++)
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++)
            a[p][v] = b ? LD(b + c0 + v * VW) : vzero();
    for (int r = 0; r < nr; r++) {
        for (int64_t kw = 0; kw < f->KW; kw++) {
            const float *wp = wr[r] + kw * C + c0, *xp = xr[r] + x0 + kw * f->DW * C;
            vfloat w0 = LD(wp), w1 = nv > 1 ? LD(wp + VW) : w0;
#pragma GCC unroll 4
            for (int p = 0; p < np; p++) {
                a[p][0] = vfma(LD(xp + p * step), w0, a[p][0]);
                if (nv > 1)
                    a[p][1] = vfma(LD(xp + p * step + VW), w1, a[p][1]);
            }
        }
    }
#pragma GCC unroll 4
    for (int p = 0; p < np; p++) {
        float *yp = yrow + (ow + p) * C;
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) {
            vfloat r = dw_finish(a[p][v], post, yp, c0 + v * VW, full, m);
            if (full)
                vstore(yp + c0 + v * VW, r);
            else
                vstore_m(yp + c0 + v * VW, m, r);
        }
    }
#undef LD
}

/* np pixels from ow (np a constant where it is called), every channel: two
 * vectors at a time, then one, the last masked. */
static inline __attribute__((always_inline)) void
dw_pixels(int np, const conv_geom *f, const float *const *xr, const float *const *wr, int nr,
          int64_t ow, const float *b, const conv_post *post, float *yrow)
{
    const int64_t C = f->C;
    const vmask all = lanes_below(VW);
    int64_t c0 = 0;
    for (; c0 + 2 * VW <= C; c0 += 2 * VW)
        dw_run(np, 2, f, xr, wr, nr, ow, c0, true, all, b, post, yrow);
    for (; c0 < C; c0 += VW) {
        if (C - c0 >= VW)
            dw_run(np, 1, f, xr, wr, nr, ow, c0, true, all, b, post, yrow);
        else
            dw_run(np, 1, f, xr, wr, nr, ow, c0, false, lanes_below((int)(C - c0)), b, post, yrow);
    }
}

/* Output pixels [ow0, ow1) of a row whose KW taps all lie inside the image
 * row: four pixels at a time (eight chains with two vectors), then one; pf
 * steps once per four pixels. */
static void dw_interior(const conv_geom *f, const float *const *xr, const float *const *wr, int nr,
                        int64_t ow0, int64_t ow1, const float *b, const conv_post *post,
                        float *yrow, dw_pf *pf)
{
    int64_t ow = ow0;
    for (; ow + 4 <= ow1; ow += 4) {
        dw_pf_step(pf);
        dw_pixels(4, f, xr, wr, nr, ow, b, post, yrow);
    }
    for (; ow < ow1; ow++)
        dw_pixels(1, f, xr, wr, nr, ow, b, post, yrow);
}

#endif

/* The taps of output column ow inside the image, from the filter rows
 * inside it (x row xr[r] at column 0 meets filter row wr[r]): their x and w
 * pointers into xs and ws, row by row; returns how many. */
static int dw_taps(const conv_geom *f, const float *const *xr, const float *const *wr, int nr,
                   int64_t ow, const float **xs, const float **ws)
{
    int nt = 0;
    for (int r = 0; r < nr; r++)
        for (int64_t kw = 0; kw < f->KW; kw++) {
            int64_t iw = ow * f->SW - f->PL + kw * f->DW;
            if (iw < 0 || iw >= f->W)
                continue;
            xs[nt] = xr[r] + iw * f->C;
            ws[nt++] = wr[r] + kw * f->C;
        }
    return nt;
}

/* One output row of depthwise f (yrow: OW x C) from its filter rows inside
 * the image (nr of them: x row xr[r] at column 0 meets filter row wr[r]),
 * bias b (NULL: none), post applied; lists: the border pixels' tap lists
 * (dw_list_floats(f) floats); pf: NULL, or lines to prefetch as the row goes.
 * With vectors each pixel's channels are summed in registers and post is
 * applied before the one store; else in y's memory. */
static void dw_row(const conv_geom *f, const float *const *xr, const float *const *wr, int nr,
                   const float *b, const conv_post *post, float *yrow, float *lists, dw_pf *pf)
{
    const int64_t C = f->C, taps = f->KH * f->KW;
    const float **xs = (const float **)lists, **ws = xs + taps;
    int64_t in0 = f->OW, in1 = f->OW;
#ifdef VW
    /* the output columns whose taps all lie inside the image's columns */
    if (f->W - 1 - (f->KW - 1) * f->DW + f->PL >= 0) {
        in0 = min64(f->OW, (f->PL + f->SW - 1) / f->SW);
        in1 = max64(in0, min64(f->OW, (f->W - 1 - (f->KW - 1) * f->DW + f->PL) / f->SW + 1));
    }
    dw_interior(f, xr, wr, nr, in0, in1, b, post, yrow, pf);
#else
    (void)pf;
#endif
    for (int64_t ow = 0; ow < f->OW; ow++) {
        if (ow == in0)
            ow = in1;
        if (ow >= f->OW)
            break;
        int nt = dw_taps(f, xr, wr, nr, ow, xs, ws);
        float *yp = yrow + ow * C;
#ifdef VW
        dw_pixel(C, xs, ws, nt, b, post, yp);
#else
        if (b)
            memcpy(yp, b, (size_t)C * sizeof(float));
        else
            memset(yp, 0, (size_t)C * sizeof(float));
        for (int t = 0; t < nt; t++) {
            const float *restrict xp = xs[t], *restrict wp = ws[t];
            for (int64_t ch = 0; ch < C; ch++)
                yp[ch] += xp[ch] * wp[ch];
        }
        if (post_any(post))
            slim__conv_post_rows(post, yp, C, 1, 0, C);
#endif
    }
}

int slim__dw_rows(const conv_geom *f, const float *x_n, int64_t oh, const float *w,
                  const float **xr, const float **wr)
{
    int nr = 0;
    for (int64_t kh = 0; kh < f->KH; kh++) {
        int64_t ih = oh * f->SH - f->PT + kh * f->DH;
        if (ih >= 0 && ih < f->H) {
            xr[nr] = x_n ? x_n + ih * f->W * f->C : NULL;
            wr[nr++] = w + kh * f->KW * f->C;
        }
    }
    return nr;
}

void slim__dw_row(const conv_geom *f, const float *const *xr, const float *const *wr, int nr,
                  const float *b, const conv_post *post, float *yrow, float *lists)
{
    dw_row(f, xr, wr, nr, b, post, yrow, lists, NULL);
}

/* Each worker its share of the output rows, the input rows the next one adds
 * prefetched as it goes. */
static void dw_forward(const slim_kernel_ctx *c, const conv_post *post)
{
    const conv_params *p = c->params;
    const conv_geom *f = &p->f;
    const float *x = c->in[0].data;      /* x: (N,H,W,C) */
    const float *w = c->in[1].data;      /* w: (KH,KW,1,C) */
    const float *b = slim__conv_bias(c); /* b: (C) */
    float *y = c->out[0].data;           /* y: (N,OH,OW,C) */
    float *lists = (float *)c->ws + (size_t)c->ith * dw_list_floats(f);
    const float **xr = (const float **)lists + 2 * f->KH * f->KW, **wr = xr + f->KH;
    int64_t lo, hi;
    slim_split(f->N * f->OH, c->ith, c->nth, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        const int64_t n = row / f->OH, oh = row % f->OH;
        int nr = slim__dw_rows(f, x + n * f->H * f->W * f->C, oh, w, xr, wr);
        dw_pf pf = dw_next_rows(f, x, row, hi);
        dw_row(f, xr, wr, nr, b, post, y + row * f->OW * f->C, lists, &pf);
    }
}

static void dw_backward(const slim_kernel_ctx *c)
{
    const conv_params *p = c->params;
    const float *x = c->in[0].data;    /* x: (N,H,W,C) */
    const float *w = c->in[1].data;    /* w: (KH,KW,1,C) */
    const float *dy = c->dout[0].data; /* dy: (N,OH,OW,C) */
    float *dx = c->din[0].data, *dw = c->din[1].data;
    float *db = p->has_bias ? c->din[2].data : NULL;
    const int64_t C = p->f.C, KC = p->f.KH * p->f.KW * C;
    int64_t lo, hi;

    if (!dy) {
        slim__conv_zero_split(c, dx, p->f.N * p->f.H * p->f.W * C);
        slim__conv_zero_split(c, dw, KC);
        slim__conv_zero_split(c, db, C);
        return;
    }

    /* dx as a gather over the outputs that read each input pixel: rows of dx
     * are independent, so threads split them without races. */
    if (dx) {
        slim_split(p->f.N * p->f.H, c->ith, c->nth, &lo, &hi);
        for (int64_t row = lo; row < hi; row++) {
            int64_t n = row / p->f.H, ih = row % p->f.H;
            for (int64_t iw = 0; iw < p->f.W; iw++) {
                float *restrict dxp = dx + (row * p->f.W + iw) * C;
                memset(dxp, 0, (size_t)C * sizeof(float));
                for (int64_t kh = 0; kh < p->f.KH; kh++) {
                    int64_t t = ih + p->f.PT - kh * p->f.DH;
                    if (t < 0 || t % p->f.SH != 0 || t / p->f.SH >= p->f.OH)
                        continue;
                    int64_t oh = t / p->f.SH;
                    for (int64_t kw = 0; kw < p->f.KW; kw++) {
                        int64_t u = iw + p->f.PL - kw * p->f.DW;
                        if (u < 0 || u % p->f.SW != 0 || u / p->f.SW >= p->f.OW)
                            continue;
                        int64_t ow = u / p->f.SW;
                        const float *restrict dyp = dy + ((n * p->f.OH + oh) * p->f.OW + ow) * C;
                        const float *restrict wp = w + (kh * p->f.KW + kw) * C;
                        for (int64_t ch = 0; ch < C; ch++)
                            dxp[ch] += dyp[ch] * wp[ch];
                    }
                }
            }
        }
    }
    if (!dw && !db)
        return;

    /* dw, db: per-worker partial sums over a share of the output rows, then a
     * fixed-order reduction. Worker 0 accumulates straight into dw/db. */
    int nw = slim__conv_workers(c, true);
    if (nw == 0) {
        /* workspace too small for even one slice: one thread does it plainly */
        if (c->ith == 0) {
            slim_kernel_ctx one = *c;
            slim_tensor din[3] = {{0}};
            din[1] = c->din[1];
            if (p->has_bias)
                din[2] = c->din[2];
            one.din = din;
            slim__conv_backward_ref(&one);
        }
        return;
    }
    size_t stride = slim__conv_ws_floats(p, nw, true), db_off = round16((size_t)KC);
    float *ws = c->ws;
    if (c->ith < nw) {
        float *dwp = c->ith == 0 ? dw : ws + (size_t)c->ith * stride;
        float *dbp = c->ith == 0 ? db : ws + (size_t)c->ith * stride + db_off;
        if (dwp)
            memset(dwp, 0, (size_t)KC * sizeof(float));
        if (dbp)
            memset(dbp, 0, (size_t)C * sizeof(float));
        slim_split(p->f.N * p->f.OH, c->ith, nw, &lo, &hi);
        for (int64_t row = lo; row < hi; row++) {
            int64_t n = row / p->f.OH, oh = row % p->f.OH;
            if (dbp)
                slim__conv_col_sums(dy, row * p->f.OW, (row + 1) * p->f.OW, C, dbp);
            if (!dwp)
                continue;
            for (int64_t ow = 0; ow < p->f.OW; ow++) {
                const float *restrict dyp = dy + (row * p->f.OW + ow) * C;
                for (int64_t kh = 0; kh < p->f.KH; kh++) {
                    int64_t ih = oh * p->f.SH - p->f.PT + kh * p->f.DH;
                    if (ih < 0 || ih >= p->f.H)
                        continue;
                    for (int64_t kw = 0; kw < p->f.KW; kw++) {
                        int64_t iw = ow * p->f.SW - p->f.PL + kw * p->f.DW;
                        if (iw < 0 || iw >= p->f.W)
                            continue;
                        const float *restrict xp = x + ((n * p->f.H + ih) * p->f.W + iw) * C;
                        float *restrict dwq = dwp + (kh * p->f.KW + kw) * C;
                        for (int64_t ch = 0; ch < C; ch++)
                            dwq[ch] += xp[ch] * dyp[ch];
                    }
                }
            }
        }
    }
    c->sync(c);
    if (dw)
        slim__conv_reduce_parts(c, dw, ws, stride, 0, nw, KC);
    if (db)
        slim__conv_reduce_parts(c, db, ws, stride, db_off, nw, C);
}
/* ---- dispatch -------------------------------------------------------------- */

static void conv_forward(const slim_kernel_ctx *c)
{
    const conv_params *p = c->params;
    slim_kernel_ctx k = *c; /* the kernels' scratch: after the folded scale and shift */
    conv_post post = {
        .act = p->act, .res = p->residual ? c->in[p->res_in].data : NULL, .out = c->out[0].data};
    if (p->fold_bn) {
        const size_t skip = round16((size_t)p->f.O);
        float *scale = c->ws, *shift = scale + skip;
        fold_bn(c, scale, shift);
        post.scale = scale;
        post.shift = shift;
        k.ws = shift + skip;
        k.ws_size = c->ws_size - 2 * skip * sizeof(float);
    }
    if (p->kind == CONV_FC) {
        k.params = &p->fc; /* the same context with fully_connected's params */
        slim__fc_forward(&k);
        if (!post_any(&post))
            return;
        /* y is (N, O): each thread finishes its rows once all are written */
        int64_t lo, hi;
        c->sync(c);
        slim_split(p->f.N, c->ith, c->nth, &lo, &hi);
        slim__conv_post_rows(&post, (float *)c->out[0].data + lo * p->f.O, p->f.O, hi - lo, 0,
                             p->f.O);
    } else if (p->kind == CONV_DEPTHWISE) {
        dw_forward(&k, &post);
    } else {
        slim__conv_gemm_forward(&k, &post);
    }
}

static void conv_backward(const slim_kernel_ctx *c)
{
    const conv_params *p = c->params;
    if (p->kind == CONV_FC) {
        slim_kernel_ctx fc = *c;
        fc.params = &p->fc;
        slim__fc_backward(&fc);
    } else if (p->kind == CONV_DEPTHWISE) {
        dw_backward(c);
    } else {
        slim__conv_gemm_backward(c);
    }
}

static const slim_attr_spec conv_attrs[] = {
    {.name = "strides",
     .type = SLIM_ATTR_INTS,
     .def = "[1, 1]",
     .ranged = true,
     .min = 1,
     .max = 1 << 20,
     .doc = "[SH, SW]"},
    {.name = "padding",
     .type = SLIM_ATTR_STRING,
     .def = "SAME",
     .choices = "SAME|VALID|EXPLICIT",
     .doc = "SAME as TensorFlow (OH = ceil(H/SH), extra pixel bottom/right), VALID, or EXPLICIT "
            "pads"},
    {.name = "pads",
     .type = SLIM_ATTR_INTS,
     .def = "[0, 0, 0, 0]",
     .ranged = true,
     .min = 0,
     .max = 1 << 20,
     .doc = "[top, bottom, left, right], padding=EXPLICIT only"},
    {.name = "dilations",
     .type = SLIM_ATTR_INTS,
     .def = "[1, 1]",
     .ranged = true,
     .min = 1,
     .max = 1 << 20,
     .doc = "[DH, DW]"},
    {.name = "groups",
     .type = SLIM_ATTR_INT,
     .def = "1",
     .ranged = true,
     .min = 1,
     .max = 1 << 30,
     .doc = "C and O divisible by groups; groups == C == O is depthwise"},
    {.name = "winograd",
     .type = SLIM_ATTR_STRING,
     .def = "auto",
     .choices = "auto|on|off",
     .doc =
         "Winograd F(4x4,3x3) for 3x3 and F(2x2,5x5) for 5x5 stride-1 undilated ungrouped "
         "convolutions (forward, "
         "data and filter gradients): auto = when both channel counts are at least 16 (32 for the "
         "filter gradient), on = always for "
         "such shapes, off = never (the direct kernels, closer to the exact sum)"},
    {.name = "batch_norm",
     .type = SLIM_ATTR_BOOL,
     .def = "false",
     .doc = "inference: inputs after b are a batch norm's gamma, beta, moving_mean, moving_var, "
            "folded in (y = gamma (conv + b - moving_mean) / sqrt(moving_var + eps) + beta); "
            "the compiler sets it when a batch_norm follows the conv"},
    {.name = "batch_norm_epsilon",
     .type = SLIM_ATTR_FLOAT,
     .def = "0.001",
     .ranged = true,
     .min = 0,
     .max = 1e30,
     .doc = "the folded batch norm's epsilon"},
    {.name = "residual",
     .type = SLIM_ATTR_BOOL,
     .def = "false",
     .doc = "inference: the last input (y's shape) is added to y before the activation (the "
            "compiler fuses a residual add this way)"},
    {.name = "activation",
     .type = SLIM_ATTR_STRING,
     .def = "none",
     .choices = ACT_POST_CHOICES,
     .doc = "inference: applied to y as it is written (the compiler fuses a following relu or "
            "relu6 this way)"},
};

const slim_op_desc slim__op_conv2d = {
    .struct_size = sizeof(slim_op_desc),
    .name = "conv2d",
    .doc = "2-D convolution: x (N,H,W,C), w (KH,KW,C/groups,O), optional b (O), with "
           "batch_norm=true gamma, beta, moving_mean, moving_var (O each), with residual=true "
           "a tensor of y's shape -> (N,OH,OW,O)",
    .min_inputs = 2,
    .max_inputs = 8,
    .n_outputs = 1,
    .attrs = conv_attrs,
    .n_attrs = (int)(sizeof conv_attrs / sizeof conv_attrs[0]),
    .params_size = sizeof(conv_params),
    .infer = conv_infer,
    .forward = conv_forward,
    .backward = conv_backward,
    .forward_ref = slim__conv_forward_ref,
    .backward_ref = slim__conv_backward_ref,
};
