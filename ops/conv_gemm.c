/*
 * ops/conv_gemm.c - the GEMM paths of conv2d (POINTWISE and GEMM kinds, see
 * ops/conv.c), forward: workspace layout (backward's too), filter packing,
 * im2col and the drivers of the micro-kernels in ops/conv_ukr.h. Backward
 * is in ops/conv_gemm_bwd.c.
 *
 * All GEMM paths fold the batch into M: the rows are the N*OH*OW output pixels,
 * so a tile may span images and small feature maps still make big GEMMs.
 * Tiling (instead of one materialized im2col buffer) keeps the columns in
 * cache and bounds the workspace to nth * T * K floats. Without groups and
 * dilation the KW taps of a filter row are one contiguous run of x (KW*C
 * floats): im2col copies it at once (7x7x3 stems copy 84 bytes, not 12), and
 * when it is long (>= 96 floats) the forward-shaped products skip im2col and
 * read the runs where they lie, one filter row per micro-kernel call (5-10%
 * faster on 3x3x64 layers).
 *
 * The products run on two register-blocked micro-kernels (ops/conv_ukr.h: a
 * 6 x 16 block of C with AVX2+FMA, 6 x 32 with AVX-512) that read A and B
 * where they lie (im2col tile, x, dy) and take only the filter packed into
 * NR-column panels, once per call and shared by the threads. BLIS, called
 * per tile, reached 35-77 GFLOP/s on one core on the bench/conv_bench layers
 * (37-52 for backward-data) and was erratic with the tile size: it packs the
 * filter again on every call and takes its small/skinny path on these shapes.
 *
 */
#include <string.h>

#include "ops/conv_gemm.h"
#include "ops/conv_pw.h"
#include "ops/conv_wino.h"

/* ---- workspace ------------------------------------------------------------ */

/* Whether conv_rows reads the filter rows' runs of in where they lie instead
 * of copying them into an im2col tile: without groups and dilation, with runs
 * long enough that a micro-kernel call per filter row costs less than the copy. */
static bool direct_rows(const conv_geom *q)
{
    return !q->pointwise && q->G == 1 && q->DW == 1 && q->KW * q->C >= DIRECT_MIN_RUN &&
           q->KH <= DIRECT_MAX_KH;
}

/* Floats of the padded bands of one tile: its T output rows span at most
 * T/OW + 2 rows of output and T/(OH*OW) + 2 images, each image's band
 * (KH-1)*DH + 1 rows more than SH per output row. */
static size_t seg_band_floats(const conv_geom *q)
{
    int64_t out_rows = q->T / q->OW + 2, images = q->T / (q->OH * q->OW) + 2;
    int64_t rows = out_rows * q->SH + images * ((q->KH - 1) * q->DH + 1);
    return round16((size_t)(rows * seg_wp(q) * q->C));
}

/* Floats of one worker's im2col tile for conv_rows over q: T rows of K, or
 * for the direct path its (1 + MR2*KH) runs of KW*C (zeros and the border
 * copies of a row block), which is more when the tile is only MR rows (tiny
 * images). */
static size_t rows_tile_floats(const conv_geom *q)
{
    size_t tile = round16((size_t)(q->T * q->K));
    if (seg_rows(q) && seg_band_floats(q) > tile)
        tile = seg_band_floats(q);
    if (direct_rows(q)) {
        size_t runs = (size_t)(1 + MR2 * q->KH) * round16((size_t)(q->KW * q->C));
        if (runs > tile)
            tile = runs;
    }
    return tile;
}

/* Depth (rows) and NR-column panels per group of a packed filter. */
static void pack_dims(const conv_params *p, int mode, int64_t *depth, int64_t *panels)
{
    const conv_geom *f = &p->f;
    int64_t cols = mode == PACK_W ? f->Og : mode == PACK_WT ? f->K : f->Cg;
    *depth = mode == PACK_W ? f->K : mode == PACK_WT ? f->Og : f->KH * f->KW * f->Og;
    *panels = (cols + NR - 1) / NR;
}

/* Floats of the packed filter that all threads share, at the workspace's start. */
size_t slim__conv_shared_floats(const conv_params *p, bool backward)
{
    const conv_geom *wq = backward ? &p->t : &p->f; /* the forward-shaped product */
    int64_t depth, panels;
    pack_dims(p, backward ? bwd_pack_mode(p) : PACK_W, &depth, &panels);
    /* cooperative Winograd blocks: the threads' V and M after U */
    size_t packed = wq->TB
                        ? slim__wino_shared_floats(wq) + (wq->wcoop ? slim__wino_ws_floats(wq) : 0)
                        : round16((size_t)(p->f.G * panels * depth * NR));
    if (!backward || !p->wino_dw || p->wdw_split)
        return packed;
    /* the packed filter serves dx alone: the Winograd dW's dU lies over it
     * (free once dx is done), its blocks follow */
    size_t du = slim__wino_du_floats(&p->f);
    return (packed > du ? packed : du) + slim__wino_vy_floats(&p->f);
}

bwd_slice slim__conv_bwd_layout(const conv_params *p, int64_t nw)
{
    const conv_geom *f = &p->f, *t = &p->t;
    bool scatter = p->kind == CONV_GEMM && !p->dx_gather;
    size_t col = p->kind == CONV_GEMM ? round16((size_t)(f->T * f->K)) : 0;
    if (p->kind == CONV_GEMM && seg_rows(f) && seg_band_floats(f) > col)
        col = seg_band_floats(f);
    if (p->dx_gather && !t->pointwise && rows_tile_floats(t) > col)
        col = rows_tile_floats(t); /* dx and dW phases take turns */
    if (t->TB && !t->wcoop && slim__wino_ws_floats(t) > col)
        col = slim__wino_ws_floats(t);
    if (p->wino_dw && slim__wino_u_floats() > col)
        col = slim__wino_u_floats(); /* after dx: the Winograd dW's rows */
    bwd_slice s = {.col = 0, .dcol = col};
    s.dw = s.dcol + (scatter ? round16((size_t)(f->T * f->K)) : 0);
    const bool packed = slim__pw_dw_packed(f); /* dW by slim__pw_dw: no partial sums */
    s.db = s.dw + (p->dw_ksplit || packed ? 0 : round16((size_t)(f->K * f->O)));
    s.band = s.db + round16((size_t)f->O);
    s.pack = s.total = s.band;
    if (packed)
        s.total += slim__pw_dw_ws_floats(f, (int)nw);
    if (scatter && f->N % nw != 0) {
        /* a band of output rows of one image and the input rows it touches */
        int64_t band = (f->OH + nw - 1) / nw;
        int64_t rows = min64(f->H, (band - 1) * f->SH + (f->KH - 1) * f->DH + 1);
        s.total += round16((size_t)(rows * f->W * f->C));
    }
    s.wdw = s.total; /* the Winograd dW's own dU and blocks */
    if (p->wdw_split)
        s.total += round16(slim__wino_dw_part_floats(f));
    return s;
}

/* Floats one of nw workers needs after the shared part (0 = none). */
size_t slim__conv_ws_floats(const conv_params *p, int64_t nw, bool backward)
{
    const conv_geom *f = &p->f;
    if (!backward && f->TB)
        return f->wcoop ? 0 : slim__wino_ws_floats(f);
    if (!backward)
        return p->kind == CONV_GEMM ? rows_tile_floats(f) : 0;
    return slim__conv_bwd_layout(p, nw).total;
}

/* Rows per im2col tile: about 64K floats (the micro-kernels stream MR rows of
 * it, or for dW MR columns of all its rows, from L1/L2) within [48, 240] rows
 * and a multiple of MR, but at least one tile per thread on small problems. */
int64_t slim__conv_tile_rows(const conv_geom *q, int64_t M, int nth)
{
    int64_t T = q->pointwise ? TILE_ROWS : min64(TILE_ROWS, max64(48, TILE_FLOATS / q->K));
    T = max64(1, min64(T, (M + nth - 1) / nth));
    /* as many tiles of about equal size as a multiple of the threads, so
     * every thread gets the same rows (784 rows in tiles of 240 went 480 /
     * 304 between two threads) */
    int64_t tiles = (M + T - 1) / T;
    tiles = (tiles + nth - 1) / nth * nth;
    T = (M + tiles - 1) / tiles;
    T = (T + MR - 1) / MR * MR;
    return max64(T, MR);
}

/* ---- packing the filter ----------------------------------------------------- */

/* depth rows of nj columns into one NR-column panel (zeros beyond nj): row l,
 * column j from src[l * ls + j * js]. */
static void pack_cols(const float *src, int64_t ls, int64_t js, int64_t depth, int64_t nj,
                      float *dst)
{
    for (int64_t l = 0; l < depth; l++, src += ls, dst += NR) {
        if (js == 1)
            copy_run(dst, src, nj);
        else
            for (int64_t j = 0; j < nj; j++)
                dst[j] = src[j * js];
        if (nj < NR)
            zero_run(dst + nj, NR - nj);
    }
}

/* Panel pn of group g of the filter w (KH,KW,Cg,O), packed as pack_dims says. */
static void pack_panel(const conv_params *p, int mode, const float *w, int64_t g, int64_t pn,
                       float *dst)
{
    const conv_geom *f = &p->f;
    const int64_t O = f->O, j0 = pn * NR, taps = f->KH * f->KW;
    int64_t depth, panels;
    pack_dims(p, mode, &depth, &panels);
    int64_t nj = min64(NR, (mode == PACK_W ? f->Og : mode == PACK_WT ? f->K : f->Cg) - j0);
    w += g * f->Og;
    if (mode == PACK_W) { /* B(k = l, o = j0 + j) */
        pack_cols(w + j0, O, 1, depth, nj, dst);
        return;
    }
    if (mode == PACK_WT) { /* B(o = l, k = j0 + j) */
        pack_cols(w + j0 * O, 1, O, depth, nj, dst);
        return;
    }
    for (int64_t l = 0; l < depth; l++, dst += NR) {
        int64_t tap = taps - 1 - l / f->Og, o = l % f->Og; /* B((tap', o), c = j0 + j) */
        pack_cols(w + (tap * f->Cg + j0) * O + o, 0, O, 1, nj, dst);
    }
}

void slim__pw_pack(const slim_kernel_ctx *c, const float *w, int64_t K, int64_t O, float *dst)
{
    int64_t panels = (O + NR - 1) / NR, lo, hi;
    slim_split(panels, c->ith, c->nth, &lo, &hi);
    for (int64_t pn = lo; pn < hi; pn++)
        pack_cols(w + pn * NR, O, 1, K, min64(NR, O - pn * NR), dst + pn * K * NR);
    c->sync(c);
}

size_t slim__pw_packed_floats(int64_t K, int64_t O)
{
    return round16((size_t)((O + NR - 1) / NR * NR * K));
}

void slim__conv_pack_filter(const slim_kernel_ctx *c, int mode, float *dst)
{
    const conv_params *p = c->params;
    int64_t depth, panels, lo, hi;
    pack_dims(p, mode, &depth, &panels);
    slim_split(p->f.G * panels, c->ith, c->nth, &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        pack_panel(p, mode, c->in[1].data, i / panels, i % panels, dst + i * depth * NR);
    c->sync(c);
}

/* ---- fast kernels: common pieces ------------------------------------------ */

/* The largest worker count <= nth whose slices fit the workspace after the
 * shared packed filter (0: none fits). */
int slim__conv_workers(const slim_kernel_ctx *c, bool backward)
{
    const conv_params *p = c->params;
    size_t shared = slim__conv_shared_floats(p, backward);
    for (int nw = c->nth; nw >= 1; nw--) {
        size_t per = slim__conv_ws_floats(p, nw, backward);
        if (per == 0 && shared == 0)
            return c->nth;
        if ((shared + per * (size_t)nw) * sizeof(float) <= c->ws_size)
            return nw;
    }
    return 0;
}

void slim__conv_im2col(const conv_geom *q, const float *x, int64_t r0, int64_t rn, int64_t g,
                       float *col)
{
    int64_t ow = r0 % q->OW, oh = r0 / q->OW % q->OH, n = r0 / q->OW / q->OH;
    const int64_t Cg = q->Cg;
    const bool runs = q->G == 1 && q->DW == 1; /* a filter row is one run of x */
    for (int64_t r = 0; r < rn; r++) {
        float *dst = col + r * q->K;
        int64_t iw0 = ow * q->SW - q->PL, a, b;
        run_bounds(q, iw0, &a, &b);
        for (int64_t kh = 0; kh < q->KH; kh++, dst += q->KW * Cg) {
            int64_t ih = oh * q->SH - q->PT + kh * q->DH;
            if (ih < 0 || ih >= q->H) {
                zero_run(dst, q->KW * Cg);
                continue;
            }
            const float *xrow = x + (n * q->H + ih) * q->W * q->C + g * Cg;
            if (runs) {
                zero_run(dst, a * Cg);
                copy_run(dst + a * Cg, xrow + (iw0 + a) * Cg, (b - a) * Cg);
                zero_run(dst + b * Cg, (q->KW - b) * Cg);
                continue;
            }
            for (int64_t kw = 0; kw < q->KW; kw++) {
                int64_t iw = iw0 + kw * q->DW;
                if (iw < 0 || iw >= q->W)
                    zero_run(dst + kw * Cg, Cg);
                else
                    copy_run(dst + kw * Cg, xrow + iw * q->C, Cg);
            }
        }
        if (++ow == q->OW) {
            ow = 0;
            if (++oh == q->OH) {
                oh = 0;
                n++;
            }
        }
    }
}

/* ---- GEMM paths (POINTWISE and GEMM) --------------------------------------- */

/* ---- short filter rows: a padded band of the image, read in place ----------- */

/* Padded rows [hp0, hp1) of image x_n into dst (seg_wp(q) columns each,
 * zero outside the image); returns the end. */
static float *seg_pad(const conv_geom *q, const float *x_n, int64_t hp0, int64_t hp1, float *dst)
{
    const int64_t Wp = seg_wp(q), C = q->C;
    const int64_t w0 = min64(Wp, q->PL), w1 = max64(w0, min64(Wp, q->W + q->PL));
    for (int64_t hp = hp0; hp < hp1; hp++, dst += Wp * C) {
        int64_t ih = hp - q->PT;
        if (ih < 0 || ih >= q->H) {
            zero_run(dst, Wp * C);
            continue;
        }
        zero_run(dst, w0 * C);
        copy_run(dst + w0 * C, x_n + (ih * q->W + w0 - q->PL) * C, (w1 - w0) * C);
        zero_run(dst + w1 * C, (Wp - w1) * C);
    }
    return dst;
}

int slim__conv_seg_bands(const conv_geom *q, const float *x, int64_t r0, int64_t rn, float *buf,
                         seg_piece *pc)
{
    const int64_t ohw = q->OH * q->OW;
    int np = 0;
    for (int64_t r = r0; r < r0 + rn;) {
        int64_t n = r / ohw, r1 = min64(r0 + rn, (n + 1) * ohw);
        int64_t hp0 = r % ohw / q->OW * q->SH;
        int64_t hp1 = (r1 - 1) % ohw / q->OW * q->SH + (q->KH - 1) * q->DH + 1;
        pc[np++] = (seg_piece){r1, hp0, buf};
        buf = seg_pad(q, x + n * q->H * q->W * q->C, hp0, hp1, buf);
        r = r1;
    }
    return np;
}

/* Tiles [t0, t1) of the forward product for seg_rows layers: blocks of MR
 * output rows of one image, each pixel's KH runs read from the band and
 * summed in registers (ukr_nn_seg), the post step per block. */
static void conv_rows_seg(const conv_geom *q, const float *in, const float *packed,
                          const float *bias, const conv_post *post, float *out, float *band,
                          int64_t t0, int64_t t1)
{
    const bool finish = post && post_any(post);
    const int64_t M = q->N * q->OH * q->OW, nb = (q->O + NR - 1) / NR, run = q->KW * q->C;
    const int64_t sstride = q->DH * seg_wp(q) * q->C;
    seg_piece pc[TILE_ROWS + 2];
    for (int64_t task = t0; task < t1; task++) {
        int64_t r0 = task * q->T, rn = min64(q->T, M - r0);
        int np = slim__conv_seg_bands(q, in, r0, rn, band, pc);
        for (int64_t r = r0, p = 0; p < np; p++) {
            while (r < pc[p].r1) {
                int mr = (int)min64(MR, pc[p].r1 - r);
                const float *a[MR];
                for (int i = 0; i < MR; i++)
                    a[i] = seg_at(q, &pc[p], r + (i < mr ? i : 0));
                for (int64_t ob = 0; ob < nb; ob++)
                    ukr_nn_seg(run, q->KH, sstride, a, packed + ob * q->K * NR,
                               out + r * q->O + ob * NR, q->O, mr, (int)min64(NR, q->O - ob * NR),
                               bias ? bias + ob * NR : NULL);
                if (finish)
                    slim__conv_post_rows(post, out + r * q->O, q->O, mr, 0, q->O);
                r += mr;
            }
        }
    }
}

/* conv_rows and conv_rows_direct: output rows of q for tasks [t0, t1), a
 * task being (tile, group): out = conv(in, filter packed as PACK_W for q) +
 * bias, then post (NULL: none) while the rows are in cache: conv_rows per
 * block of rows; conv_rows_direct per panel of a tile as its last depth
 * chunk is done, or with a residual on the whole tile once its panels are
 * done (the residual's rows then stream in order: ResNet-50's fused conv3 +
 * add steps took 106-110 ms instead of 129-150 on 2 threads). */

/* Up to MR2 rows (all MR2 pointers valid) by one panel: the 12 x 32 kernel
 * when the block is full and at least WIDE_MIN_DEPTH deep, else two MR-row
 * blocks (the same results either way). */
static void nn_rows2(int64_t d, const float *const *a, const float *b, float *c, int64_t ldc,
                     int mr, int nr, const float *bias, bool acc)
{
#ifdef UKR_HAS_NN_WIDE
    if (mr == MR2 && d >= WIDE_MIN_DEPTH) {
        ukr_nn_wide(d, a, b, c, ldc, nr, bias, acc);
        return;
    }
#endif
    ukr_nn(d, a, b, c, ldc, mr < MR ? mr : MR, nr, bias, acc);
    if (mr > MR)
        ukr_nn(d, a + MR, b, c + MR * ldc, ldc, mr - MR, nr, bias, acc);
}

/* conv_rows without im2col: a filter row's KW taps are one run of KW*C floats
 * of in (G == 1, DW == 1), so the micro-kernel takes each output row's run
 * where it lies, one filter row at a time, and copies only the runs a window
 * cuts at the left or right border; rows above and below read zeros. Long
 * runs (C >= 128 at 3x3) go in depth chunks of at most KCHUNK, chunk-major
 * over the tile's row blocks, so the chunk of a B panel stays in L1 while
 * every block of the tile streams past it (a whole 3x3x512 filter row's panel
 * is 192 KB). Outputs of at most NARROW_NR channels go MR2 rows at a time
 * (ukr_nn_narrow). scratch: (1 + MR2) chunks (rows_tile_floats counts more). */
static void conv_rows_direct(const conv_geom *q, const float *in, const float *packed,
                             const float *bias, const conv_post *post, float *out, float *scratch,
                             int64_t t0, int64_t t1)
{
    const bool finish = post && post_any(post);
    const int64_t M = q->N * q->OH * q->OW, nb = (q->Og + NR - 1) / NR, run = q->KW * q->C;
    const int64_t nch = (run + KCHUNK - 1) / KCHUNK; /* depth chunks per filter row */
    const int64_t cs = round16((size_t)((run + nch - 1) / nch));
    const bool narrow = q->Og <= NARROW_NR; /* one panel, MR2-row blocks */
#ifdef UKR_HAS_NN_WIDE
    const bool wide = !narrow && cs >= WIDE_MIN_DEPTH; /* MR2-row blocks, 12 x 32 */
#else
    const bool wide = false;
#endif
    const int rows = narrow || wide ? MR2 : MR;
    float *zeros = scratch, *edge = scratch + cs;
    zero_run(zeros, cs);
    /* per output row of the tile: its image's first x row, first input row
     * and column, and the taps [lo, hi) inside the image */
    const float *xb[TILE_ROWS];
    int64_t ih0[TILE_ROWS], iw0[TILE_ROWS], lo[TILE_ROWS], hi[TILE_ROWS];
    for (int64_t task = t0; task < t1; task++) {
        int64_t r0 = task * q->T, rn = min64(q->T, M - r0);
        for (int64_t i = 0; i < rn; i++) {
            int64_t r = r0 + i, ow = r % q->OW, oh = r / q->OW % q->OH, n = r / q->OW / q->OH;
            xb[i] = in + n * q->H * q->W * q->C;
            ih0[i] = oh * q->SH - q->PT;
            iw0[i] = ow * q->SW - q->PL;
            run_bounds(q, iw0[i], &lo[i], &hi[i]);
        }
        for (int64_t ob = 0; ob < nb; ob++) {
            const float *bp = packed + ob * q->K * NR;
            int nr = (int)min64(NR, q->Og - ob * NR);
            for (int64_t kh = 0; kh < q->KH; kh++) {
                for (int64_t ci = 0; ci < nch; ci++) {
                    const int64_t k0 = run * ci / nch, k1 = run * (ci + 1) / nch;
                    const bool first = kh == 0 && ci == 0;
                    for (int64_t i0 = 0; i0 < rn; i0 += rows) {
                        int mr = (int)min64(rows, rn - i0);
                        const float *a[MR2];
                        for (int i = 0; i < rows; i++) {
                            int64_t t = i0 + (i < mr ? i : 0), ih = ih0[t] + kh * q->DH;
                            if (ih < 0 || ih >= q->H || hi[t] == lo[t]) {
                                a[i] = zeros;
                                continue;
                            }
                            const float *src = xb[t] + (ih * q->W + iw0[t]) * q->C;
                            if (lo[t] == 0 && hi[t] == q->KW) {
                                a[i] = src + k0;
                                continue;
                            }
                            /* the chunk of a run the border cuts: zeros, then x */
                            float *d = edge + i * cs;
                            int64_t v0 = max64(k0, lo[t] * q->C), v1 = min64(k1, hi[t] * q->C);
                            if (v1 <= v0) {
                                a[i] = zeros;
                                continue;
                            }
                            zero_run(d, v0 - k0);
                            copy_run(d + (v0 - k0), src + v0, v1 - v0);
                            zero_run(d + (v1 - k0), k1 - v1);
                            a[i] = d;
                        }
                        (narrow ? ukr_nn_narrow
                         : wide ? nn_rows2
                                : ukr_nn)(k1 - k0, a, bp + (kh * run + k0) * NR,
                                          out + (r0 + i0) * q->O + ob * NR, q->O, mr, nr,
                                          first && bias ? bias + ob * NR : NULL, !first);
                    }
                }
            }
            if (finish && !post->res)
                slim__conv_post_rows(post, out + r0 * q->O + ob * NR, q->O, rn, ob * NR, nr);
        }
        if (finish && post->res) /* the tile at once, as in conv_rows */
            slim__conv_post_rows(post, out + r0 * q->O, q->O, rn, 0, q->O);
    }
}

#if defined(VW) && !defined(UKR_HAS_NN_WIDE)
/* The post step at a block's store: scale and shift of the block's columns
 * (a vector pair each), the residual's rows (NULL: none), the activation. */
typedef struct fin_cols {
    vfloat s0, s1, t0, t1;
    bool scale;
    const float *res; /* the residual's value for the block's c[0] */
    int act;
    bool stream;
} fin_cols;

/* put_row, then post on the row: v = act(v * scale + shift (+ res)). */
static inline void fin_row(float *c, vfloat v0, vfloat v1, int nr, vmask m0, vmask m1, bool acc,
                           const fin_cols *f, const float *res)
{
    const bool full = nr == NR;
    if (acc) {
        v0 = vadd(v0, full ? vload(c) : vload_m(c, m0));
        v1 = vadd(v1, full ? vload(c + VW) : vload_m(c + VW, m1));
    }
    if (f->scale) {
        v0 = vfma(v0, f->s0, f->t0);
        v1 = vfma(v1, f->s1, f->t1);
    }
    if (res) {
        v0 = vadd(v0, full ? vload(res) : vload_m(res, m0));
        v1 = vadd(v1, full ? vload(res + VW) : vload_m(res + VW, m1));
    }
    v0 = vact(f->act, v0);
    v1 = vact(f->act, v1);
    if (full && f->stream && ((uintptr_t)c & (sizeof(vfloat) - 1)) == 0) {
        vstream(c, v0);
        vstream(c + VW, v1);
    } else if (full) {
        vstore(c, v0);
        vstore(c + VW, v1);
    } else {
        vstore_m(c, m0, v0);
        vstore_m(c + VW, m1, v1);
    }
}

#define FIN_ROW(i)                                                                                 \
    if (mr > i)                                                                                    \
    fin_row(c + i * ldc, vadd(c##i##0, z0), vadd(c##i##1, z1), nr, m0, m1, acc, &f,                \
            f.res ? f.res + i * ldc : NULL)

/* ukr_nn with conv_rows' post step at the store, on the block's columns
 * from channel col: act(v * scale + shift (+ res)). Applied this way the
 * block is not loaded and stored a second time (slim__conv_post_rows took
 * 5-6% of MobileNet v1's inference, beside ukr_nn's 67%). */
static void ukr_nn_post(int64_t d, const float *const *a, const float *b, float *c, int64_t ldc,
                        int mr, int nr, const float *bias, bool acc, const conv_post *post,
                        int64_t col)
{
    UKR_NN_SUM(a, b, d);
    UKR_BIAS(bias);
    fin_cols f = {.scale = post->scale != NULL,
                  .res = post->res ? post->res + (c - post->out) : NULL,
                  .act = post->act,
                  .stream = post->stream};
    if (f.scale) {
        f.s0 = vload_m(post->scale + col, m0);
        f.s1 = vload_m(post->scale + col + VW, m1);
        f.t0 = vload_m(post->shift + col, m0);
        f.t1 = vload_m(post->shift + col + VW, m1);
    }
    FIN_ROW(0);
    FIN_ROW(1);
    FIN_ROW(2);
    FIN_ROW(3);
    FIN_ROW(4);
    FIN_ROW(5);
}
#undef FIN_ROW
#endif

/* C (bn rows, ld ldo) (+)= the bn rows of A from row i0 (ld lda, depth
 * [k0, k1)) times the packed panel bp of nr columns: one MR2-row narrow
 * block, or nn_rows2; then post (NULL: none) on the block's columns, from
 * channel col. */
static inline void block_panel(const float *A, int64_t lda, int64_t i0, int64_t bn, int64_t k0,
                               int64_t k1, const float *bp, int nr, const float *bias, float *cb,
                               int64_t ldo, const conv_post *post, int64_t col)
{
    const float *a[MR2];
    for (int i = 0; i < MR2; i++)
        a[i] = A + (i0 + (i < bn ? i : 0)) * lda + k0;
    if (post && post->res) {
        /* the residual's rows, read at the store: fetched now, while the
         * products run (else each store waited on memory) */
        const float *r = post->res + (cb - post->out);
        for (int64_t i = 0; i < bn; i++) {
            __builtin_prefetch(r + i * ldo);
            __builtin_prefetch(r + i * ldo + nr - 1);
        }
    }
#if defined(VW) && !defined(UKR_HAS_NN_WIDE)
    if (post && nr > NARROW_NR) {
        ukr_nn_post(k1 - k0, a, bp, cb, ldo, bn < MR ? (int)bn : MR, nr, bias, k0 > 0, post, col);
        if (bn > MR)
            ukr_nn_post(k1 - k0, a + MR, bp, cb + MR * ldo, ldo, (int)bn - MR, nr, bias, k0 > 0,
                        post, col);
        return;
    }
#endif
    (nr <= NARROW_NR ? ukr_nn_narrow : nn_rows2)(k1 - k0, a, bp, cb, ldo, (int)bn, nr, bias,
                                                 k0 > 0);
    if (post)
        slim__conv_post_rows(post, cb, ldo, bn, col, nr);
}

bool slim__conv_res_in_place(const conv_geom *q)
{
#if defined(VW) && !defined(UKR_HAS_NN_WIDE)
    /* conv_rows' blocks through ukr_nn_post: one chunk of depth, and no
     * last panel narrow enough for ukr_nn_narrow (its post step runs after
     * the store) */
    const int64_t tail = q->Og % NR;
    return !q->TB && !direct_rows(q) && !seg_rows(q) && q->K <= KCHUNK &&
           (tail == 0 || tail > NARROW_NR);
#else
    (void)q;
    return false;
#endif
}

/* The lines of rows [0, rows) of depth n (floats, row stride ld) into the
 * caches: a pointwise product's next block of A, fetched while the current
 * block runs through the panels. The rows are the input where it lies, read
 * from memory once; with N = 64 (4 panels) every block's first panel waited
 * on them. always_inline, as prefetch_store (ops/conv.h). */
static inline __attribute__((always_inline)) void prefetch_rows(const float *a, int64_t ld,
                                                                int64_t rows, int64_t n)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t l = 0; l < n; l += 64 / (int64_t)sizeof(float))
            __builtin_prefetch(a + i * ld + l, 0, 2); /* to L2: L1 keeps the current block */
}

/* Tiles [t0, t1) of the forward product through im2col (or x itself for 1x1):
 * depth in chunks of at most KCHUNK; within a chunk, blocks of MR2 rows, each
 * through every panel of the filter while its rows of A stay in L1, so C is
 * written a whole row at a time. The post step runs on each block once its
 * last chunk is done, while it is in L1 (before: a panel's column strip of
 * the whole tile, from L2). MobileNet v1 inference's 1x1 layers on 1 thread:
 * 11% less time; bare 1x1 products (conv_bench, no post step) change within
 * noise. A pointwise product prefetches the next block's rows of A into L2
 * (prefetch_rows); into L1, with its C lines, that measured no better
 * (pointwise sum 136.8 vs 138.5 ms, 4 alternating runs). Each product
 * fetches the lines of the next one's block of C for writing
 * (prefetch_store): 1x1 64->256 at 56x56, whose 51 MB output is written
 * once, went 53 -> 71 GFLOP/s on 1 thread; in the later depth chunks, whose
 * products add to C from L2 or L3, 1x1 1024->2048 at 7x7 went 108 -> 131
 * on 2. */
void slim__conv_rows(const conv_geom *q, const float *in, const float *packed, const float *bias,
                     const conv_post *post, float *out, float *col, int64_t t0, int64_t t1)
{
    const int64_t M = q->N * q->OH * q->OW, nb = (q->Og + NR - 1) / NR, ldo = q->O;
    const bool finish = post && post_any(post);
    /* not for y in the caches already or stored past them, nor for rows of
     * y under 4 lines apart (a block's stores then run through memory in
     * order, as the hardware prefetchers follow: with it, MobileNet v2's 24-
     * and 32-channel layers were 2-7% slower) */
    const bool pf_c = !(post && (post->cached || post->stream)) && ldo >= 64;
    if (direct_rows(q)) {
        conv_rows_direct(q, in, packed, bias, post, out, col, t0, t1);
        return;
    }
    if (seg_rows(q)) {
        conv_rows_seg(q, in, packed, bias, post, out, col, t0, t1);
        return;
    }
    for (int64_t task = t0; task < t1; task++) {
        int64_t r0 = task / q->G * q->T, g = task % q->G, rn = min64(q->T, M - r0);
        const float *A = in + r0 * q->C + g * q->Cg; /* pointwise: in is A (M x C) */
        int64_t lda = q->C;
        if (!q->pointwise) {
            slim__conv_im2col(q, in, r0, rn, g, col);
            A = col;
            lda = q->K;
        }
        float *C = out + r0 * ldo + g * q->Og;
        int64_t nk = (q->K + KCHUNK - 1) / KCHUNK;
        for (int64_t k0 = 0, ki = 0; ki < nk; ki++) {
            const int64_t k1 = q->K * (ki + 1) / nk;
            /* panels in groups whose chunk of B stays in L2 */
            const int64_t gp = max64(1, PANEL_GROUP_FLOATS / ((k1 - k0) * NR));
            for (int64_t ob0 = 0; ob0 < nb; ob0 += gp) {
                const int64_t ob1 = min64(nb, ob0 + gp);
                for (int64_t i0 = 0; i0 < rn; i0 += MR2) {
                    const int64_t bn = min64(MR2, rn - i0);
                    if (q->pointwise && ob0 == 0)
                        prefetch_rows(A + (i0 + MR2) * lda + k0, lda,
                                      min64(MR2, M - (r0 + i0 + MR2)), k1 - k0);
                    for (int64_t ob = ob0; ob < ob1; ob++) {
                        const float *bp = packed + ((g * nb + ob) * q->K + k0) * NR;
                        const float *bias_ob = bias && k0 == 0 ? bias + g * q->Og + ob * NR : NULL;
                        const int nr = (int)min64(NR, q->Og - ob * NR);
                        if (pf_c) {
                            /* the next product in this order: the next panel, or
                             * the group's first panel of the next block */
                            const bool last = ob + 1 == ob1;
                            const int64_t ni = last ? i0 + MR2 : i0, no = last ? ob0 : ob + 1;
                            const size_t bytes = (size_t)min64(NR, q->Og - no * NR) * sizeof(float);
                            for (int64_t i = ni; i < min64(ni + MR2, rn); i++)
                                prefetch_store(C + i * ldo + no * NR, bytes);
                        }
                        block_panel(A, lda, i0, bn, k0, k1, bp, nr, bias_ob, C + i0 * ldo + ob * NR,
                                    ldo, finish && ki == nk - 1 ? post : NULL, g * q->Og + ob * NR);
                    }
                }
            }
            k0 = k1;
        }
    }
}

void slim__conv_gemm_forward(const slim_kernel_ctx *c, const conv_post *post)
{
    const conv_params *p = c->params;
    const conv_geom *f = &p->f;
    const int64_t M = f->N * f->OH * f->OW;
    if (M == 0)
        return;
    int nw = slim__conv_workers(c, false);
    if (nw == 0) {
        if (c->ith == 0)
            slim__conv_forward_ref(c);
        return;
    }
    float *packed = c->ws;
    int64_t *next = &((conv_params *)c->params)->next_task;
    if (c->ith == 0)
        task_reset(next); /* before the packing's barrier */
    float *mine = packed + slim__conv_shared_floats(p, false) +
                  (size_t)c->ith * slim__conv_ws_floats(p, nw, false);
    if (f->TB) {
        slim__wino_pack(c, f, c->in[1].data, false, packed);
        if (f->wcoop) {
            slim__wino_run_coop(c, f, c->in[0].data, packed, slim__conv_bias(c), post,
                                c->out[0].data, packed + slim__wino_shared_floats(f));
            return;
        }
        if (c->ith >= nw)
            return;
        const int64_t nb = slim__wino_blocks(f);
        for (int64_t b = task_take(next, 1, nb); b < nb; b = task_take(next, 1, nb))
            slim__wino_run(f, c->in[0].data, packed, slim__conv_bias(c), post, c->out[0].data, mine,
                           b, b + 1);
        return;
    }
    slim__conv_pack_filter(c, PACK_W, packed);
    if (c->ith >= nw)
        return;
    /* tiles taken as threads come free: with fixed halves one thread
     * waited for the other, most of all in ResNet-50's 2-thread forward
     * products (the two halves ran at different speeds on this machine,
     * which side varying from call to call) */
    const int64_t ntasks = (M + f->T - 1) / f->T * f->G;
    for (int64_t t = task_take(next, 1, ntasks); t < ntasks; t = task_take(next, 1, ntasks))
        slim__conv_rows(f, c->in[0].data, packed, slim__conv_bias(c), post, c->out[0].data, mine, t,
                        t + 1);
}

void slim__pw_gemm(int64_t M, int64_t K, int64_t O, const float *in, const float *packed,
                   const conv_post *post, float *out)
{
    conv_geom q = {.N = 1,
                   .H = 1,
                   .W = M,
                   .C = K,
                   .KH = 1,
                   .KW = 1,
                   .O = O,
                   .OH = 1,
                   .OW = M,
                   .SH = 1,
                   .SW = 1,
                   .DH = 1,
                   .DW = 1,
                   .G = 1,
                   .Cg = K,
                   .Og = O,
                   .K = K,
                   .T = min64(M, TILE_ROWS),
                   .pointwise = true};
    if (M > 0)
        slim__conv_rows(&q, in, packed, NULL, post, out, NULL, 0, (M + q.T - 1) / q.T);
}
