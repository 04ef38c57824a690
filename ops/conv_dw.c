/*
 * ops/conv_dw.c - the depthwise path of conv2d (groups == C == O): direct
 * loops with C innermost, which the compiler vectorizes; with vectors each
 * output pixel's channels are summed in registers and the post step applied
 * before its one store. ops/conv_chain.c runs its depthwise rows here too.
 */
#include <string.h>

#include "ops/conv_dw.h"
#include "ops/conv_ukr.h"

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
    return vact(post->act, acc);
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
void slim__dw_forward(const slim_kernel_ctx *c, const conv_post *post)
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

size_t slim__dw_ws_floats(const conv_geom *f, bool backward)
{
    return backward ? round16((size_t)(f->KH * f->KW * f->C)) + round16((size_t)f->O)
                    : dw_list_floats(f);
}

/* The largest worker count <= nth whose slices of backward's partial sums
 * fit the workspace (0: none fits). */
static int dw_workers(const slim_kernel_ctx *c)
{
    const conv_params *p = c->params;
    for (int nw = c->nth; nw >= 1; nw--) {
        size_t per = slim__dw_ws_floats(&p->f, true);
        if (per == 0)
            return c->nth;
        if (per * (size_t)nw * sizeof(float) <= c->ws_size)
            return nw;
    }
    return 0;
}

void slim__dw_backward(const slim_kernel_ctx *c)
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
    int nw = dw_workers(c);
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
    size_t stride = slim__dw_ws_floats(&p->f, true), db_off = round16((size_t)KC);
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
