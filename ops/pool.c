/*
 * ops/pool.c - spatial pooling over NHWC activations: max_pool, avg_pool and
 * global_avg_pool.
 *
 * Window of output (oh, ow): input rows ih = oh*SH - PT + kh*DH (kh < KH),
 * columns likewise; positions outside the image are padding. max_pool takes
 * the largest input inside the image (padding never wins); its gradient goes
 * to the first maximum in (kh, kw) order, recomputed in backward so nothing is
 * saved. avg_pool divides by the number of positions inside the image
 * (count_include_pad=false, TensorFlow's SAME) or by the window clipped to the
 * padded image (count_include_pad=true, as ONNX/PyTorch). A window with no
 * input position at all gives 0.
 *
 * Output sizes: SAME as TensorFlow (OH = ceil(H/SH)); VALID and EXPLICIT as
 * floor((H + PT + PB - eff_KH)/SH) + 1, or ceil with ceil_mode, where as in
 * PyTorch a last window starting beyond the image and the top padding is dropped.
 *
 * Kernels loop over C innermost (contiguous in NHWC, so they vectorize) and
 * split rows between threads. Backward gradients are written race free:
 * avg_pool gathers per input row; max_pool splits (image, channel block)
 * units so each thread owns disjoint dx elements.
 */
#include <stdio.h>
#include <string.h>

#include <slim/op.h>

extern const slim_op_desc slim__op_max_pool;
extern const slim_op_desc slim__op_avg_pool;
extern const slim_op_desc slim__op_global_avg_pool;

/* Everything the kernels need, filled by infer. */
typedef struct pool_params {
    int64_t N, H, W, C; /* x: (N,H,W,C) */
    int64_t OH, OW;     /* y: (N,OH,OW,C) */
    int64_t KH, KW, SH, SW, DH, DW;
    int64_t PT, PB, PL, PR; /* padding; PB, PR bound avg_pool's count_include_pad windows */
    bool include_pad;
} pool_params;

/* Channels per block of the vector paths (max_pool's backward argmax,
 * avg_pool): enough to vectorize, few enough for registers. */
#define POOL_CBLK 32

/* Eight floats (GCC's generic vectors: any target), loaded and stored with
 * memcpy (unaligned). A block of POOL_CBLK channels is four of them, named:
 * an array of them stayed in memory. */
typedef float pool_vf __attribute__((vector_size(32)));
typedef int32_t pool_vi __attribute__((vector_size(32)));
typedef struct pool_blk {
    pool_vf v0, v1, v2, v3;
} pool_blk;

static inline __attribute__((always_inline)) pool_vf vf_load(const float *p)
{
    pool_vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* p[0..31] = b * s */
static inline __attribute__((always_inline)) void blk_store(float *p, pool_blk b, float s)
{
    b.v0 *= s, b.v1 *= s, b.v2 *= s, b.v3 *= s;
    memcpy(p, &b.v0, sizeof b.v0);
    memcpy(p + 8, &b.v1, sizeof b.v1);
    memcpy(p + 16, &b.v2, sizeof b.v2);
    memcpy(p + 24, &b.v3, sizeof b.v3);
}

/* b += p[0..31] * s */
static inline __attribute__((always_inline)) void blk_add(pool_blk *b, const float *p, float s)
{
    b->v0 += vf_load(p) * s;
    b->v1 += vf_load(p + 8) * s;
    b->v2 += vf_load(p + 16) * s;
    b->v3 += vf_load(p + 24) * s;
}

/* dx rows per max_pool backward unit: a band of ResNet-50's pool1 (112 x 64
 * channels) is 229 KB, in L2 from its zeroing to its last add. */
#define POOL_BAND 8

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* ---- infer --------------------------------------------------------------- */

static slim_status check_x(slim_infer_ctx *c)
{
    const slim_tensor_desc *x = &c->inputs[0];
    char xs[96];
    if (x->dtype != SLIM_F32)
        return c->fail(c, SLIM_ETYPE, "x must be f32");
    if (x->shape.rank != 4)
        return c->fail(c, SLIM_ESHAPE, "x must be (N,H,W,C), got %s",
                       slim_shape_str(&x->shape, xs, sizeof xs));
    for (int i = 1; i < 4; i++)
        if (x->shape.dim[i] < 1)
            return c->fail(c, SLIM_ESHAPE, "x %s has an empty dimension",
                           slim_shape_str(&x->shape, xs, sizeof xs));
    return SLIM_OK;
}

/* Output size and padding of one spatial axis. */
static slim_status pool_axis(slim_infer_ctx *c, const char *axis, const char *padding,
                             bool ceil_mode, int64_t in, int64_t k, int64_t s, int64_t d,
                             int64_t pad_lo, int64_t pad_hi, int64_t *out, int64_t *lo, int64_t *hi)
{
    int64_t eff = (k - 1) * d + 1;
    if (strcmp(padding, "SAME") == 0) {
        *out = (in + s - 1) / s;
        int64_t total = max64((*out - 1) * s + eff - in, 0);
        *lo = total / 2;
        *hi = total - *lo;
        return SLIM_OK;
    }
    if (strcmp(padding, "VALID") == 0)
        pad_lo = pad_hi = 0;
    int64_t span = in + pad_lo + pad_hi - eff;
    if (span < 0)
        return c->fail(c, SLIM_ESHAPE,
                       "the input %s %lld (padded: %lld) is smaller than the %swindow's %lld; "
                       "use padding=SAME or a smaller ksize",
                       axis, (long long)in, (long long)(in + pad_lo + pad_hi),
                       d > 1 ? "dilated " : "", (long long)eff);
    *out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (*out - 1) * s >= in + pad_lo)
        (*out)--; /* the last window would start in the bottom/right padding */
    *lo = pad_lo;
    *hi = pad_hi;
    return SLIM_OK;
}

static slim_status pool_infer(slim_infer_ctx *c, bool is_max)
{
    pool_params *p = c->params;
    slim_status st = check_x(c);
    if (st)
        return st;
    const slim_tensor_desc *x = &c->inputs[0];
    p->N = x->shape.dim[0];
    p->H = x->shape.dim[1];
    p->W = x->shape.dim[2];
    p->C = x->shape.dim[3];

    const int64_t *ks, *strides, *pads, *dil = NULL;
    if (c->attr_ints(c, "ksize", &ks) != 2)
        return c->fail(c, SLIM_EINVAL, "ksize must have 2 values [KH, KW]");
    if (c->attr_ints(c, "strides", &strides) != 2)
        return c->fail(c, SLIM_EINVAL, "strides must have 2 values [SH, SW]");
    if (c->attr_ints(c, "pads", &pads) != 4)
        return c->fail(c, SLIM_EINVAL, "pads must have 4 values [top, bottom, left, right]");
    if (is_max && c->attr_ints(c, "dilations", &dil) != 2)
        return c->fail(c, SLIM_EINVAL, "dilations must have 2 values [DH, DW]");
    const char *padding = c->attr_str(c, "padding");
    if (strcmp(padding, "EXPLICIT") != 0 && (pads[0] || pads[1] || pads[2] || pads[3]))
        return c->fail(c, SLIM_EINVAL, "pads are only used with padding=EXPLICIT (got %s)",
                       padding);
    bool ceil_mode = c->attr_bool(c, "ceil_mode");
    p->KH = ks[0];
    p->KW = ks[1];
    p->SH = strides[0];
    p->SW = strides[1];
    p->DH = dil ? dil[0] : 1;
    p->DW = dil ? dil[1] : 1;
    p->include_pad = !is_max && c->attr_bool(c, "count_include_pad");
    st = pool_axis(c, "height", padding, ceil_mode, p->H, p->KH, p->SH, p->DH, pads[0], pads[1],
                   &p->OH, &p->PT, &p->PB);
    if (st)
        return st;
    st = pool_axis(c, "width", padding, ceil_mode, p->W, p->KW, p->SW, p->DW, pads[2], pads[3],
                   &p->OW, &p->PL, &p->PR);
    if (st)
        return st;
    slim_shape ys = {4, {p->N, p->OH, p->OW, p->C}};
    c->set_output(c, 0, SLIM_F32, &ys);
    return SLIM_OK;
}

static slim_status max_pool_infer(slim_infer_ctx *c)
{
    c->set_backward_reads(c, 1, 0); /* backward: the argmax is recomputed from x */
    return pool_infer(c, true);
}

static slim_status avg_pool_infer(slim_infer_ctx *c)
{
    c->set_backward_reads(c, 0, 0); /* backward: dy spread over each window */
    return pool_infer(c, false);
}

/* ---- max_pool ------------------------------------------------------------ */

static void max_pool_forward_ref(const slim_kernel_ctx *c)
{
    const pool_params *p = c->params;
    const float *x = c->in[0].data; /* x: (N,H,W,C) */
    float *y = c->out[0].data;      /* y: (N,OH,OW,C) */
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t oh = 0; oh < p->OH; oh++)
            for (int64_t ow = 0; ow < p->OW; ow++)
                for (int64_t ch = 0; ch < p->C; ch++) {
                    float best = 0;
                    bool any = false;
                    for (int64_t kh = 0; kh < p->KH; kh++)
                        for (int64_t kw = 0; kw < p->KW; kw++) {
                            int64_t ih = oh * p->SH - p->PT + kh * p->DH;
                            int64_t iw = ow * p->SW - p->PL + kw * p->DW;
                            if (ih < 0 || ih >= p->H || iw < 0 || iw >= p->W)
                                continue;
                            float v = x[((n * p->H + ih) * p->W + iw) * p->C + ch];
                            if (!any || v > best)
                                best = v;
                            any = true;
                        }
                    y[((n * p->OH + oh) * p->OW + ow) * p->C + ch] = best;
                }
}

static void max_pool_backward_ref(const slim_kernel_ctx *c)
{
    const pool_params *p = c->params;
    const float *x = c->in[0].data;    /* x: (N,H,W,C) */
    const float *dy = c->dout[0].data; /* dy: (N,OH,OW,C) */
    float *dx = c->din[0].data;
    if (!dx)
        return;
    memset(dx, 0, (size_t)(p->N * p->H * p->W * p->C) * sizeof(float));
    if (!dy)
        return;
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t oh = 0; oh < p->OH; oh++)
            for (int64_t ow = 0; ow < p->OW; ow++)
                for (int64_t ch = 0; ch < p->C; ch++) {
                    float best = 0;
                    int64_t arg = -1;
                    for (int64_t kh = 0; kh < p->KH; kh++)
                        for (int64_t kw = 0; kw < p->KW; kw++) {
                            int64_t ih = oh * p->SH - p->PT + kh * p->DH;
                            int64_t iw = ow * p->SW - p->PL + kw * p->DW;
                            if (ih < 0 || ih >= p->H || iw < 0 || iw >= p->W)
                                continue;
                            int64_t i = ((n * p->H + ih) * p->W + iw) * p->C + ch;
                            if (arg < 0 || x[i] > best) {
                                best = x[i];
                                arg = i;
                            }
                        }
                    if (arg >= 0)
                        dx[arg] += dy[((n * p->OH + oh) * p->OW + ow) * p->C + ch];
                }
}

static void max_pool_forward(const slim_kernel_ctx *c)
{
    const pool_params *p = c->params;
    const float *x = c->in[0].data; /* x: (N,H,W,C) */
    float *y = c->out[0].data;      /* y: (N,OH,OW,C) */
    const int64_t C = p->C;
    int64_t lo, hi;
    slim_split(p->N * p->OH, c->ith, c->nth, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        int64_t n = row / p->OH, oh = row % p->OH;
        int64_t kh0 = 0, kh1 = p->KH; /* the kernel rows inside the image */
        while (kh0 < kh1 && oh * p->SH - p->PT + kh0 * p->DH < 0)
            kh0++;
        while (kh1 > kh0 && oh * p->SH - p->PT + (kh1 - 1) * p->DH >= p->H)
            kh1--;
        for (int64_t ow = 0; ow < p->OW; ow++) {
            float *restrict yp = y + (row * p->OW + ow) * C;
            bool any = false;
            for (int64_t kh = kh0; kh < kh1; kh++) {
                int64_t ih = oh * p->SH - p->PT + kh * p->DH;
                for (int64_t kw = 0; kw < p->KW; kw++) {
                    int64_t iw = ow * p->SW - p->PL + kw * p->DW;
                    if (iw < 0 || iw >= p->W)
                        continue;
                    const float *restrict xp = x + ((n * p->H + ih) * p->W + iw) * C;
                    if (!any)
                        memcpy(yp, xp, (size_t)C * sizeof(float));
                    else
                        for (int64_t ch = 0; ch < C; ch++)
                            yp[ch] = xp[ch] > yp[ch] ? xp[ch] : yp[ch];
                    any = true;
                }
            }
            if (!any)
                memset(yp, 0, (size_t)C * sizeof(float));
        }
    }
}

/* A 1x1 window (ResNet v1's subsampling shortcut): each input is the only
 * tap of at most one window, so dx is dy where a window reads it and 0
 * elsewhere, written in one pass over dx's rows. */
static void max_pool_backward_1x1(const slim_kernel_ctx *c)
{
    const pool_params *p = c->params;
    const float *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    const int64_t C = p->C, W = p->W;
    int64_t lo, hi;
    slim_split(p->N * p->H, c->ith, c->nth, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        int64_t n = row / p->H, ih = row % p->H, t = ih + p->PT, oh = t / p->SH;
        float *dxr = dx + row * W * C;
        if (!dy || t % p->SH || oh >= p->OH) {
            memset(dxr, 0, (size_t)(W * C) * sizeof(float));
            continue;
        }
        const float *dyr = dy + (n * p->OH + oh) * p->OW * C;
        for (int64_t iw = 0; iw < W; iw++) {
            int64_t u = iw + p->PL, ow = u / p->SW;
            if (u % p->SW || ow >= p->OW)
                memset(dxr + iw * C, 0, (size_t)C * sizeof(float));
            else
                memcpy(dxr + iw * C, dyr + ow * C, (size_t)C * sizeof(float));
        }
    }
}

/* One tap of a window's argmax over n channels: best and arg take the tap
 * where it is greater (strict: the first maximum wins). */
static inline void argmax_tap(float *best, int32_t *arg, const float *xp, int32_t off, int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        bool m = xp[k] > best[k];
        best[k] = m ? xp[k] : best[k];
        arg[k] = m ? off : arg[k];
    }
}

/* argmax_tap over a window's taps (nh rows rs floats apart, nw columns cs
 * apart, the first at xw) for POOL_CBLK channels, eight at a time in vector
 * registers (GCC's generic vectors: any target). Written as the loop above,
 * GCC stores best and arg under a mask (vmaskmovps), which Zen3 runs
 * slowly: a quarter of ResNet-50's pool1 backward sat on it. */
static void argmax_block(float *best, int32_t *arg, const float *xw, int64_t nh, int64_t nw,
                         int32_t rs, int32_t cs)
{
    for (int j = 0; j < POOL_CBLK; j += 8) {
        pool_vf b;
        pool_vi a = {0};
        memcpy(&b, xw + j, sizeof b);
        for (int32_t r = 0; r < nh; r++)
            for (int32_t q = r ? 0 : 1; q < nw; q++) {
                const int32_t off = r * rs + q * cs;
                pool_vf v;
                memcpy(&v, xw + off + j, sizeof v);
                const pool_vi m = v > b, o = {off, off, off, off, off, off, off, off};
                b = (pool_vf)(((pool_vi)v & m) | ((pool_vi)b & ~m));
                a = (o & m) | (a & ~m);
            }
        memcpy(best + j, &b, sizeof b);
        memcpy(arg + j, &a, sizeof a);
    }
}

/* Units are (image, band of about POOL_BAND rows of dx): a unit's dx elements
 * belong to it alone, so the scatter to each window's argmax needs no
 * synchronization, and the band's rows (all channels, one contiguous run)
 * stay in cache from their zeroing to the last add. Every window that reads
 * a row of the band is evaluated, and adds only to taps inside the band: a
 * window that straddles two bands is evaluated by both. Per window the
 * argmax runs over POOL_CBLK channels at a time as vectors (a compare and
 * two blends per tap: the best value and the tap's offset); only the final
 * scatter, one add per output element, is scalar. Each dx element sums its
 * windows in (oh, ow) order, as the reference does. When the windows tile
 * the image (2x2/2 VALID on even sizes: each input in exactly one window)
 * bands are whole rows of windows and dx is written in the same pass,
 * without zeroing it first. */
static void max_pool_backward(const slim_kernel_ctx *c)
{
    const pool_params *p = c->params;
    const float *x = c->in[0].data;    /* x: (N,H,W,C) */
    const float *dy = c->dout[0].data; /* dy: (N,OH,OW,C) */
    float *dx = c->din[0].data;        /* dx: (N,H,W,C) */
    const int64_t C = p->C, W = p->W;
    if (!dx)
        return;
    if (p->KH == 1 && p->KW == 1) {
        max_pool_backward_1x1(c);
        return;
    }
    const bool tiles = dy && p->DH == 1 && p->DW == 1 && p->SH == p->KH && p->SW == p->KW &&
                       p->PT == 0 && p->PL == 0 && p->OH * p->SH == p->H && p->OW * p->SW == W;
    const int64_t band = tiles ? p->KH * ((POOL_BAND + p->KH - 1) / p->KH) : POOL_BAND;
    const int64_t nband = (p->H + band - 1) / band;
    const int32_t rs = (int32_t)(p->DH * W * C), cs = (int32_t)(p->DW * C); /* tap strides */
    int64_t lo, hi;
    slim_split(p->N * nband, c->ith, c->nth, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        const int64_t n = u / nband, ih0 = u % nband * band, ih1 = min64(p->H, ih0 + band);
        const float *xn = x + n * p->H * W * C;
        float *dxn = dx + n * p->H * W * C;
        if (!tiles) /* else every dx element of the band is written below */
            memset(dxn + ih0 * W * C, 0, (size_t)((ih1 - ih0) * W * C) * sizeof(float));
        if (!dy)
            continue;
        for (int64_t oh = 0; oh < p->OH; oh++) {
            int64_t kh0 = 0, kh1 = p->KH; /* the kernel rows inside the image */
            while (kh0 < kh1 && oh * p->SH - p->PT + kh0 * p->DH < 0)
                kh0++;
            while (kh1 > kh0 && oh * p->SH - p->PT + (kh1 - 1) * p->DH >= p->H)
                kh1--;
            if (kh1 == kh0)
                continue;
            const int64_t ih_first = oh * p->SH - p->PT + kh0 * p->DH;
            const int64_t ih_last = oh * p->SH - p->PT + (kh1 - 1) * p->DH;
            if (ih_last < ih0 || ih_first >= ih1)
                continue; /* no row of the band */
            const bool inside = ih_first >= ih0 && ih_last < ih1;
            for (int64_t ow = 0; ow < p->OW; ow++) {
                int64_t kw0 = 0, kw1 = p->KW;
                while (kw0 < kw1 && ow * p->SW - p->PL + kw0 * p->DW < 0)
                    kw0++;
                while (kw1 > kw0 && ow * p->SW - p->PL + (kw1 - 1) * p->DW >= W)
                    kw1--;
                if (kw1 == kw0)
                    continue;
                /* window base: its first tap inside the image; offsets from there */
                const int64_t base = (ih_first * W + ow * p->SW - p->PL + kw0 * p->DW) * C;
                const float *dyw = dy + ((n * p->OH + oh) * p->OW + ow) * C;
                for (int64_t c0 = 0; c0 < C; c0 += POOL_CBLK) {
                    const int64_t cn = min64(POOL_CBLK, C - c0);
                    const float *xw = xn + base + c0;
                    float best[POOL_CBLK];
                    int32_t arg[POOL_CBLK];
                    if (cn == POOL_CBLK) {
                        argmax_block(best, arg, xw, kh1 - kh0, kw1 - kw0, rs, cs);
                    } else {
                        for (int64_t k = 0; k < cn; k++) {
                            best[k] = xw[k];
                            arg[k] = 0;
                        }
                        for (int32_t r = 0; r < kh1 - kh0; r++)
                            for (int32_t q = r ? 0 : 1; q < kw1 - kw0; q++)
                                argmax_tap(best, arg, xw + r * rs + q * cs, r * rs + q * cs, cn);
                    }
                    const float *dyp = dyw + c0;
                    float *dxw = dxn + base + c0;
                    if (tiles) {
                        for (int64_t kh = 0; kh < p->KH; kh++)
                            for (int64_t kw = 0; kw < p->KW; kw++) {
                                int32_t off = (int32_t)((kh * W + kw) * C);
                                for (int64_t k = 0; k < cn; k++)
                                    dxw[off + k] = arg[k] == off ? dyp[k] : 0.0f;
                            }
                    } else if (inside) {
                        for (int64_t k = 0; k < cn; k++)
                            dxw[arg[k] + k] += dyp[k];
                    } else {
                        /* a tap's row: its offset's whole rows of DH*W*C (its column
                         * part is under W*C) */
                        for (int64_t k = 0; k < cn; k++) {
                            int64_t ih = ih_first + arg[k] / rs * p->DH;
                            if (ih >= ih0 && ih < ih1)
                                dxw[arg[k] + k] += dyp[k];
                        }
                    }
                }
            }
        }
    }
}

/* ---- avg_pool ------------------------------------------------------------ */

/* The divisor of output (oh, ow). */
static float avg_count(const pool_params *p, int64_t oh, int64_t ow)
{
    int64_t h0 = oh * p->SH - p->PT, w0 = ow * p->SW - p->PL;
    int64_t h1 = h0 + p->KH, w1 = w0 + p->KW;
    if (p->include_pad) {
        /* the window clipped to the padded image, as PyTorch and ONNX */
        h1 = min64(h1, p->H + p->PB);
        w1 = min64(w1, p->W + p->PR);
    } else {
        h0 = max64(h0, 0);
        w0 = max64(w0, 0);
        h1 = min64(h1, p->H);
        w1 = min64(w1, p->W);
    }
    return (float)(max64(h1 - h0, 0) * max64(w1 - w0, 0));
}

/* 1 / the divisor of output (oh, ow); 0 for a window wholly outside. */
static float inv_count(const pool_params *p, int64_t oh, int64_t ow)
{
    float cnt = avg_count(p, oh, ow);
    return cnt > 0 ? 1.0f / cnt : 0.0f;
}

static void avg_pool_forward_ref(const slim_kernel_ctx *c)
{
    const pool_params *p = c->params;
    const float *x = c->in[0].data; /* x: (N,H,W,C) */
    float *y = c->out[0].data;      /* y: (N,OH,OW,C) */
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t oh = 0; oh < p->OH; oh++)
            for (int64_t ow = 0; ow < p->OW; ow++) {
                float cnt = avg_count(p, oh, ow);
                for (int64_t ch = 0; ch < p->C; ch++) {
                    double sum = 0;
                    for (int64_t kh = 0; kh < p->KH; kh++)
                        for (int64_t kw = 0; kw < p->KW; kw++) {
                            int64_t ih = oh * p->SH - p->PT + kh;
                            int64_t iw = ow * p->SW - p->PL + kw;
                            if (ih >= 0 && ih < p->H && iw >= 0 && iw < p->W)
                                sum += x[((n * p->H + ih) * p->W + iw) * p->C + ch];
                        }
                    y[((n * p->OH + oh) * p->OW + ow) * p->C + ch] =
                        cnt > 0 ? (float)(sum / cnt) : 0.0f;
                }
            }
}

static void avg_pool_backward_ref(const slim_kernel_ctx *c)
{
    const pool_params *p = c->params;
    const float *dy = c->dout[0].data; /* dy: (N,OH,OW,C) */
    float *dx = c->din[0].data;        /* dx: (N,H,W,C) */
    if (!dx)
        return;
    memset(dx, 0, (size_t)(p->N * p->H * p->W * p->C) * sizeof(float));
    if (!dy)
        return;
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t oh = 0; oh < p->OH; oh++)
            for (int64_t ow = 0; ow < p->OW; ow++) {
                float cnt = avg_count(p, oh, ow);
                if (cnt <= 0)
                    continue;
                for (int64_t ch = 0; ch < p->C; ch++) {
                    float g = dy[((n * p->OH + oh) * p->OW + ow) * p->C + ch] / cnt;
                    for (int64_t kh = 0; kh < p->KH; kh++)
                        for (int64_t kw = 0; kw < p->KW; kw++) {
                            int64_t ih = oh * p->SH - p->PT + kh;
                            int64_t iw = ow * p->SW - p->PL + kw;
                            if (ih >= 0 && ih < p->H && iw >= 0 && iw < p->W)
                                dx[((n * p->H + ih) * p->W + iw) * p->C + ch] += g;
                        }
                }
            }
}

/* avg_pool: each block of POOL_CBLK channels sums its window in registers
 * and is stored once, instead of each tap being added into y: one pass over
 * the output instead of one per tap (Inception v3's 3x3 stride-1 pools are
 * bound by those passes). */
static void avg_pool_forward(const slim_kernel_ctx *c)
{
    const pool_params *p = c->params;
    const float *x = c->in[0].data; /* x: (N,H,W,C) */
    float *y = c->out[0].data;      /* y: (N,OH,OW,C) */
    const int64_t C = p->C;
    int64_t lo, hi;
    slim_split(p->N * p->OH, c->ith, c->nth, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        int64_t n = row / p->OH, oh = row % p->OH;
        int64_t ih0 = max64(0, oh * p->SH - p->PT), ih1 = min64(p->H, oh * p->SH - p->PT + p->KH);
        for (int64_t ow = 0; ow < p->OW; ow++) {
            int64_t iw0 = max64(0, ow * p->SW - p->PL);
            int64_t iw1 = min64(p->W, ow * p->SW - p->PL + p->KW);
            float *restrict yp = y + (row * p->OW + ow) * C;
            const float *x0 = x + ((n * p->H + ih0) * p->W + iw0) * C;
            const int64_t nh = ih1 - ih0, nw = iw1 - iw0, ld = p->W * C;
            const float inv = inv_count(p, oh, ow);
            int64_t c0 = 0;
            for (; c0 + POOL_CBLK <= C; c0 += POOL_CBLK) {
                pool_blk acc = {{0}, {0}, {0}, {0}};
                for (int64_t i = 0; i < nh; i++)
                    for (int64_t j = 0; j < nw; j++)
                        blk_add(&acc, x0 + i * ld + j * C + c0, 1.0f);
                blk_store(yp + c0, acc, inv);
            }
            if (c0 == C)
                continue;
            /* the last C % POOL_CBLK channels: each tap added into y */
            memset(yp + c0, 0, (size_t)(C - c0) * sizeof(float));
            for (int64_t i = 0; i < nh; i++)
                for (int64_t j = 0; j < nw; j++) {
                    const float *restrict xp = x0 + i * ld + j * C;
                    for (int64_t ch = c0; ch < C; ch++)
                        yp[ch] += xp[ch];
                }
            for (int64_t ch = c0; ch < C; ch++)
                yp[ch] *= inv;
        }
    }
}

/* A gather over the windows that cover each input pixel: dx rows are
 * independent, so threads split them. */
static void avg_pool_backward(const slim_kernel_ctx *c)
{
    const pool_params *p = c->params;
    const float *dy = c->dout[0].data; /* dy: (N,OH,OW,C) */
    float *dx = c->din[0].data;        /* dx: (N,H,W,C) */
    const int64_t C = p->C;
    if (!dx)
        return;
    int64_t lo, hi;
    slim_split(p->N * p->H, c->ith, c->nth, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        int64_t n = row / p->H, ih = row % p->H;
        if (!dy) {
            memset(dx + row * p->W * C, 0, (size_t)(p->W * C) * sizeof(float));
            continue;
        }
        /* windows oh with oh*SH - PT <= ih < oh*SH - PT + KH */
        int64_t t = ih + p->PT - p->KH + 1;
        int64_t oh0 = t <= 0 ? 0 : (t + p->SH - 1) / p->SH;
        int64_t oh1 = min64(p->OH, (ih + p->PT) / p->SH + 1);
        for (int64_t iw = 0; iw < p->W; iw++) {
            int64_t u = iw + p->PL - p->KW + 1;
            int64_t ow0 = u <= 0 ? 0 : (u + p->SW - 1) / p->SW;
            int64_t ow1 = min64(p->OW, (iw + p->PL) / p->SW + 1);
            float *restrict dxp = dx + (row * p->W + iw) * C;
            /* the windows' 1/count, (oh, ow) in order, when at most 64 cover the pixel */
            float inv[64];
            int nwin = 0;
            bool fits = (oh1 - oh0) * (ow1 - ow0) <= 64;
            for (int64_t oh = oh0; fits && oh < oh1; oh++)
                for (int64_t ow = ow0; ow < ow1; ow++)
                    inv[nwin++] = inv_count(p, oh, ow);
            int64_t c0 = 0;
            for (; fits && c0 + POOL_CBLK <= C; c0 += POOL_CBLK) {
                pool_blk acc = {{0}, {0}, {0}, {0}};
                int w = 0;
                for (int64_t oh = oh0; oh < oh1; oh++)
                    for (int64_t ow = ow0; ow < ow1; ow++, w++)
                        blk_add(&acc, dy + ((n * p->OH + oh) * p->OW + ow) * C + c0, inv[w]);
                blk_store(dxp + c0, acc, 1.0f);
            }
            if (c0 == C)
                continue;
            /* the other channels (all, past 64 windows): each window added into dx */
            memset(dxp + c0, 0, (size_t)(C - c0) * sizeof(float));
            int w = 0;
            for (int64_t oh = oh0; oh < oh1; oh++)
                for (int64_t ow = ow0; ow < ow1; ow++, w++) {
                    const float iv = fits ? inv[w] : inv_count(p, oh, ow);
                    const float *restrict dyp = dy + ((n * p->OH + oh) * p->OW + ow) * C;
                    for (int64_t ch = c0; ch < C; ch++)
                        dxp[ch] += dyp[ch] * iv;
                }
        }
    }
}

/* ---- global_avg_pool ---------------------------------------------------- */

static slim_status global_avg_pool_infer(slim_infer_ctx *c)
{
    c->set_backward_reads(c, 0, 0); /* backward: dy spread over the image */
    pool_params *p = c->params;
    slim_status st = check_x(c);
    if (st)
        return st;
    const slim_tensor_desc *x = &c->inputs[0];
    p->N = x->shape.dim[0];
    p->H = x->shape.dim[1];
    p->W = x->shape.dim[2];
    p->C = x->shape.dim[3];
    p->OH = p->OW = 1;
    slim_shape ys = {4, {p->N, 1, 1, p->C}};
    if (!c->attr_bool(c, "keep_dims"))
        ys = (slim_shape){2, {p->N, p->C}};
    c->set_output(c, 0, SLIM_F32, &ys);
    return SLIM_OK;
}

static void global_avg_pool_forward_ref(const slim_kernel_ctx *c)
{
    const pool_params *p = c->params;
    const float *x = c->in[0].data; /* x: (N,H,W,C) */
    float *y = c->out[0].data;      /* y: (N,C) */
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t ch = 0; ch < p->C; ch++) {
            double sum = 0;
            for (int64_t i = 0; i < p->H * p->W; i++)
                sum += x[(n * p->H * p->W + i) * p->C + ch];
            y[n * p->C + ch] = (float)(sum / (double)(p->H * p->W));
        }
}

/* Units are (image, channel block), so a batch of 1 still splits over threads. */
static void global_avg_pool_forward(const slim_kernel_ctx *c)
{
    const pool_params *p = c->params;
    const float *x = c->in[0].data; /* x: (N,H,W,C) */
    float *y = c->out[0].data;      /* y: (N,C) */
    const int64_t C = p->C, HW = p->H * p->W, nblk = (C + POOL_CBLK - 1) / POOL_CBLK;
    const float inv = 1.0f / (float)HW;
    int64_t lo, hi;
    slim_split(p->N * nblk, c->ith, c->nth, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        int64_t n = u / nblk, c0 = u % nblk * POOL_CBLK, cn = min64(POOL_CBLK, C - c0);
        float acc[POOL_CBLK] = {0};
        const float *xn = x + n * HW * C + c0;
        for (int64_t i = 0; i < HW; i++)
            for (int64_t k = 0; k < cn; k++)
                acc[k] += xn[i * C + k];
        for (int64_t k = 0; k < cn; k++)
            y[n * C + c0 + k] = acc[k] * inv;
    }
}

static void global_avg_pool_backward_ref(const slim_kernel_ctx *c)
{
    const pool_params *p = c->params;
    const float *dy = c->dout[0].data; /* dy: (N,C) */
    float *dx = c->din[0].data;        /* dx: (N,H,W,C) */
    if (!dx)
        return;
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t i = 0; i < p->H * p->W; i++)
            for (int64_t ch = 0; ch < p->C; ch++)
                dx[(n * p->H * p->W + i) * p->C + ch] =
                    dy ? dy[n * p->C + ch] / (float)(p->H * p->W) : 0.0f;
}

static void global_avg_pool_backward(const slim_kernel_ctx *c)
{
    const pool_params *p = c->params;
    const float *dy = c->dout[0].data; /* dy: (N,C) */
    float *dx = c->din[0].data;        /* dx: (N,H,W,C) */
    const int64_t C = p->C, HW = p->H * p->W;
    const float inv = 1.0f / (float)HW;
    if (!dx)
        return;
    int64_t lo, hi;
    slim_split(p->N * p->H, c->ith, c->nth, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        int64_t n = row / p->H;
        for (int64_t iw = 0; iw < p->W; iw++) {
            float *restrict dxp = dx + (row * p->W + iw) * C;
            if (!dy) {
                memset(dxp, 0, (size_t)C * sizeof(float));
                continue;
            }
            const float *restrict dyp = dy + n * C;
            for (int64_t ch = 0; ch < C; ch++)
                dxp[ch] = dyp[ch] * inv;
        }
    }
}

/* ---- descriptors ---------------------------------------------------------- */

#define POOL_COMMON_ATTRS                                                                          \
    {.name = "ksize",                                                                              \
     .type = SLIM_ATTR_INTS,                                                                       \
     .def = NULL,                                                                                  \
     .ranged = true,                                                                               \
     .min = 1,                                                                                     \
     .max = 1 << 20,                                                                               \
     .doc = "[KH, KW] (required)"},                                                                \
        {.name = "strides",                                                                        \
         .type = SLIM_ATTR_INTS,                                                                   \
         .def = "[1, 1]",                                                                          \
         .ranged = true,                                                                           \
         .min = 1,                                                                                 \
         .max = 1 << 20,                                                                           \
         .doc = "[SH, SW]"},                                                                       \
        {.name = "padding",                                                                        \
         .type = SLIM_ATTR_STRING,                                                                 \
         .def = "VALID",                                                                           \
         .choices = "SAME|VALID|EXPLICIT",                                                         \
         .doc = "SAME as TensorFlow (OH = ceil(H/SH)), VALID, or EXPLICIT pads"},                  \
        {.name = "pads",                                                                           \
         .type = SLIM_ATTR_INTS,                                                                   \
         .def = "[0, 0, 0, 0]",                                                                    \
         .ranged = true,                                                                           \
         .min = 0,                                                                                 \
         .max = 1 << 20,                                                                           \
         .doc = "[top, bottom, left, right], padding=EXPLICIT only"},                              \
    {                                                                                              \
        .name = "ceil_mode", .type = SLIM_ATTR_BOOL, .def = "false",                               \
        .doc = "round the output size up (VALID, EXPLICIT), as ONNX/PyTorch"                       \
    }

static const slim_attr_spec max_pool_attrs[] = {
    POOL_COMMON_ATTRS,
    {.name = "dilations",
     .type = SLIM_ATTR_INTS,
     .def = "[1, 1]",
     .ranged = true,
     .min = 1,
     .max = 1 << 20,
     .doc = "[DH, DW]"},
};

static const slim_attr_spec avg_pool_attrs[] = {
    POOL_COMMON_ATTRS,
    {.name = "count_include_pad",
     .type = SLIM_ATTR_BOOL,
     .def = "false",
     .doc = "divide by the window including padding (false: only positions inside the image, "
            "as TensorFlow)"},
};

static const slim_attr_spec global_avg_pool_attrs[] = {
    {.name = "keep_dims",
     .type = SLIM_ATTR_BOOL,
     .def = "true",
     .doc = "output (N,1,1,C); false: (N,C)"},
};

const slim_op_desc slim__op_max_pool = {
    .struct_size = sizeof(slim_op_desc),
    .name = "max_pool",
    .doc = "max pooling: x (N,H,W,C) -> (N,OH,OW,C); the gradient goes to the first maximum",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = max_pool_attrs,
    .n_attrs = (int)(sizeof max_pool_attrs / sizeof max_pool_attrs[0]),
    .params_size = sizeof(pool_params),
    .infer = max_pool_infer,
    .forward = max_pool_forward,
    .backward = max_pool_backward,
    .forward_ref = max_pool_forward_ref,
    .backward_ref = max_pool_backward_ref,
};

const slim_op_desc slim__op_avg_pool = {
    .struct_size = sizeof(slim_op_desc),
    .name = "avg_pool",
    .doc = "average pooling: x (N,H,W,C) -> (N,OH,OW,C)",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = avg_pool_attrs,
    .n_attrs = (int)(sizeof avg_pool_attrs / sizeof avg_pool_attrs[0]),
    .params_size = sizeof(pool_params),
    .infer = avg_pool_infer,
    .forward = avg_pool_forward,
    .backward = avg_pool_backward,
    .forward_ref = avg_pool_forward_ref,
    .backward_ref = avg_pool_backward_ref,
};

const slim_op_desc slim__op_global_avg_pool = {
    .struct_size = sizeof(slim_op_desc),
    .name = "global_avg_pool",
    .doc = "mean over H and W: x (N,H,W,C) -> (N,1,1,C), or (N,C) with keep_dims=false",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = global_avg_pool_attrs,
    .n_attrs = (int)(sizeof global_avg_pool_attrs / sizeof global_avg_pool_attrs[0]),
    .params_size = sizeof(pool_params),
    .infer = global_avg_pool_infer,
    .forward = global_avg_pool_forward,
    .backward = global_avg_pool_backward,
    .forward_ref = global_avg_pool_forward_ref,
    .backward_ref = global_avg_pool_backward_ref,
};
