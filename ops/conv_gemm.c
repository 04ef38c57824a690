/*
 * ops/conv_gemm.c - the GEMM paths of conv2d (POINTWISE and GEMM kinds, see
 * ops/conv.c): workspace layout, filter packing, im2col/col2im and the
 * drivers of the micro-kernels in ops/conv_ukr.h.
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
 * Backward:
 *   dW_g += col^T (K x T) * dY (T x Og)  per tile and group -> per-thread partial dW
 *   dx, stride 1 with Cg >= 16 (or 1x1): a forward convolution of dY with the
 *        filter flipped in space and transposed (in <-> out channels): every
 *        thread writes its own dx rows, no scatter, no zeroing.
 *   dx, otherwise: dcol = dY (T x Og) * W_g^T (Og x K), col2im scatter-add.
 * When the GEMM has fewer rows than depth (M < K: small late feature maps,
 * VGG's 7x7x512x4096 fc6) per-thread partial dW would cost more than the
 * product itself, so dW is split by its K rows instead: each thread builds
 * only its columns of im2col for all rows and owns its dW rows outright.
 * In the scatter path threads never write the same dx element: whole images
 * go to one thread; when N is not a multiple of the workers, the remaining
 * images are cut into bands of output rows, each scattered into the thread's
 * own band buffer and summed into dx afterwards by disjoint dx rows. Partial
 * dW/db sums are reduced in a fixed order, so results are bit-identical for a
 * given nth.
 */
#include <string.h>

#include "ops/conv.h"
#include "ops/conv_ukr.h"

/* ---- workspace ------------------------------------------------------------ */

/* Whether conv_rows reads the filter rows' runs of in where they lie instead
 * of copying them into an im2col tile: without groups and dilation, with runs
 * long enough that a micro-kernel call per filter row costs less than the copy. */
static bool direct_rows(const conv_geom *q)
{
    return !q->pointwise && q->G == 1 && q->DW == 1 && q->KW * q->C >= DIRECT_MIN_RUN &&
           q->KH <= DIRECT_MAX_KH;
}

/* Whether q's products read the receptive fields from a zero-padded copy of
 * the image rows a tile needs (conv_rows_seg, dw_seg) instead of an im2col
 * tile: a filter row is one short run of x (KW*C of at most SEG_MAX_RUN
 * floats: LeNet's 5x5 over 1 channel, MobileNet's 3x3/2 over 3), and copying
 * runs that short into im2col tiles cost more than the products (LeNet
 * conv1: 67% of its forward, 62% of its filter gradient). */
static bool seg_rows(const conv_geom *q)
{
    return !q->pointwise && q->G == 1 && q->DW == 1 && q->KW * q->C <= SEG_MAX_RUN &&
           q->Og > NARROW_NR;
}

/* Columns of the padded image: every column a window of q reads. */
static int64_t seg_wp(const conv_geom *q)
{
    return (q->OW - 1) * q->SW + q->KW;
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

/* How the filter is packed for a product: PACK_W B(k, o) = w[k, o] for the
 * forward; PACK_WT B(o, k) = w[k, o] for dcol = dY W^T; PACK_WFLIP
 * B((tap, o), c) = w[KH*KW-1-tap, c, o] for dx = conv(dY, flip(w)^T). */
enum { PACK_W, PACK_WT, PACK_WFLIP };

/* Depth (rows) and NR-column panels per group of a packed filter. */
static void pack_dims(const conv_params *p, int mode, int64_t *depth, int64_t *panels)
{
    const conv_geom *f = &p->f;
    int64_t cols = mode == PACK_W ? f->Og : mode == PACK_WT ? f->K : f->Cg;
    *depth = mode == PACK_W ? f->K : mode == PACK_WT ? f->Og : f->KH * f->KW * f->Og;
    *panels = (cols + NR - 1) / NR;
}

static int bwd_pack_mode(const conv_params *p)
{
    return p->dx_gather ? PACK_WFLIP : PACK_WT;
}

/* Floats of the packed filter that all threads share, at the workspace's start. */
size_t slim__conv_shared_floats(const conv_params *p, bool backward)
{
    if (p->kind == CONV_DEPTHWISE)
        return 0;
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

/* One backward worker's slice of the workspace (offsets in floats). */
typedef struct bwd_slice {
    size_t col, dcol, dw, db, band, pack, wdw, total;
} bwd_slice;

static bwd_slice bwd_layout(const conv_params *p, int64_t nw)
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
    if (p->kind == CONV_DEPTHWISE)
        return backward ? round16((size_t)(f->KH * f->KW * f->C)) + round16((size_t)f->O)
                        : dw_list_floats(f);
    if (!backward && f->TB)
        return f->wcoop ? 0 : slim__wino_ws_floats(f);
    if (!backward)
        return p->kind == CONV_GEMM ? rows_tile_floats(f) : 0;
    return bwd_layout(p, nw).total;
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

/* All threads pack the panels of every group into dst, then meet. */
static void pack_filter(const slim_kernel_ctx *c, int mode, float *dst)
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

/* Taps [*a, *b) of a filter row that fall inside the image for a window
 * starting at column iw0 (dilation 1). */
static void run_bounds(const conv_geom *q, int64_t iw0, int64_t *a, int64_t *b)
{
    *a = min64(q->KW, max64(0, -iw0));
    *b = max64(*a, min64(q->KW, q->W - iw0));
}

/* col (rn, k1-k0): columns [k0, k1) of the receptive fields of output rows
 * [r0, r0+rn) of q for group g; a column is (kh, kw, cg). */
static void im2col_cols(const conv_geom *q, const float *x, int64_t r0, int64_t rn, int64_t g,
                        int64_t k0, int64_t k1, float *col)
{
    int64_t ow = r0 % q->OW, oh = r0 / q->OW % q->OH, n = r0 / q->OW / q->OH;
    const int64_t kn = k1 - k0, Cg = q->Cg;
    for (int64_t r = 0; r < rn; r++) {
        float *dst = col + r * kn;
        for (int64_t kh = k0 / (q->KW * Cg); kh < q->KH; kh++) {
            if (kh * q->KW * Cg >= k1)
                break;
            int64_t ih = oh * q->SH - q->PT + kh * q->DH;
            bool row_in = ih >= 0 && ih < q->H;
            const float *xrow = row_in ? x + (n * q->H + ih) * q->W * q->C + g * Cg : NULL;
            for (int64_t kw = 0; kw < q->KW; kw++) {
                int64_t c0 = (kh * q->KW + kw) * Cg; /* this tap's first column */
                int64_t lo = c0 > k0 ? c0 : k0, hi = c0 + Cg < k1 ? c0 + Cg : k1;
                if (hi <= lo)
                    continue;
                int64_t iw = ow * q->SW - q->PL + kw * q->DW;
                if (!row_in || iw < 0 || iw >= q->W)
                    memset(dst + (lo - k0), 0, (size_t)(hi - lo) * sizeof(float));
                else
                    memcpy(dst + (lo - k0), xrow + iw * q->C + (lo - c0),
                           (size_t)(hi - lo) * sizeof(float));
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

/* col (rn, K): the receptive fields of output rows [r0, r0+rn) of q for group g. */
static void im2col(const conv_geom *q, const float *x, int64_t r0, int64_t rn, int64_t g,
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

/* The inverse scatter: dx += col2im(dcol) for output rows [r0, r0+rn) of q,
 * group g. dx holds the x rows (n*H + ih) from row_off on. */
static void col2im_add(const conv_geom *q, const float *dcol, int64_t r0, int64_t rn, int64_t g,
                       float *dx, int64_t row_off)
{
    int64_t ow = r0 % q->OW, oh = r0 / q->OW % q->OH, n = r0 / q->OW / q->OH;
    const int64_t Cg = q->Cg;
    const bool runs = q->G == 1 && q->DW == 1;
    for (int64_t r = 0; r < rn; r++) {
        const float *src = dcol + r * q->K;
        int64_t iw0 = ow * q->SW - q->PL, a, b;
        run_bounds(q, iw0, &a, &b);
        for (int64_t kh = 0; kh < q->KH; kh++, src += q->KW * Cg) {
            int64_t ih = oh * q->SH - q->PT + kh * q->DH;
            if (ih < 0 || ih >= q->H)
                continue;
            float *xrow = dx + (n * q->H + ih - row_off) * q->W * q->C + g * Cg;
            if (runs) {
                float *restrict d = xrow + (iw0 + a) * Cg;
                const float *restrict s = src + a * Cg;
                for (int64_t i = 0; i < (b - a) * Cg; i++)
                    d[i] += s[i];
                continue;
            }
            for (int64_t kw = 0; kw < q->KW; kw++) {
                int64_t iw = iw0 + kw * q->DW;
                if (iw < 0 || iw >= q->W)
                    continue;
                float *restrict d = xrow + iw * q->C;
                const float *restrict s = src + kw * Cg;
                for (int64_t cg = 0; cg < Cg; cg++)
                    d[cg] += s[cg];
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

/* Output rows [.., r1) of one image within a tile, and where its padded band
 * lies: padded row hp0 (input row hp0 - PT) first. */
typedef struct seg_piece {
    int64_t r1, hp0;
    const float *band;
} seg_piece;

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

/* The bands that output rows [r0, r0+rn) of q read, one per image, into buf. */
static int seg_bands(const conv_geom *q, const float *x, int64_t r0, int64_t rn, float *buf,
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

/* Output row r's receptive field in its piece's band: filter row 0, column 0. */
static inline const float *seg_at(const conv_geom *q, const seg_piece *p, int64_t r)
{
    int64_t oh = r % (q->OH * q->OW) / q->OW, ow = r % q->OW;
    return p->band + ((oh * q->SH - p->hp0) * seg_wp(q) + ow * q->SW) * q->C;
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
        int np = seg_bands(q, in, r0, rn, band, pc);
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

/* dW (K x O) += the receptive fields of output rows [r0, r0+rn) of q times
 * their rows of dY, for seg_rows layers: per filter row and block of MR of
 * its KW*C columns, one ukr_tn_seg over the tile's rows cut where output
 * rows end (within one, a pixel's field is SW*C floats after the last). The
 * same sums, in the same order, as im2col + dw_tile. */
static void dw_seg(const conv_geom *q, const float *x, const float *dy, int64_t r0, int64_t rn,
                   float *band, float *dw)
{
    const int64_t run = q->KW * q->C, O = q->O, nb = (O + NR - 1) / NR;
    const int64_t row_step = q->DH * seg_wp(q) * q->C;
    seg_piece pc[TILE_ROWS + 2];
    const float *a0[TILE_ROWS + 2], *b0[TILE_ROWS + 2], *as[TILE_ROWS + 2], *bs[TILE_ROWS + 2];
    int64_t len[TILE_ROWS + 2];
    int np = seg_bands(q, x, r0, rn, band, pc), ns = 0;
    for (int64_t r = r0, p = 0; p < np; p++)
        while (r < pc[p].r1) {
            int64_t e = min64(pc[p].r1, (r / q->OW + 1) * q->OW);
            a0[ns] = seg_at(q, &pc[p], r);
            b0[ns] = dy + r * O;
            len[ns++] = e - r;
            r = e;
        }
    for (int64_t ob = 0; ob < nb; ob++) {
        for (int i = 0; i < ns; i++)
            bs[i] = b0[i] + ob * NR;
        for (int64_t kh = 0; kh < q->KH; kh++)
            for (int64_t k0 = 0; k0 < run; k0 += MR) {
                for (int i = 0; i < ns; i++)
                    as[i] = a0[i] + kh * row_step + k0;
                ukr_tn_seg(ns, as, bs, len, q->SW * q->C, O, dw + (kh * run + k0) * O + ob * NR, O,
                           (int)min64(MR, run - k0), (int)min64(NR, O - ob * NR), true);
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
    if (f->act != ACT_NONE) {
        v0 = vmax(v0, vzero());
        v1 = vmax(v1, vzero());
    }
    if (f->act == ACT_RELU6) {
        v0 = vmin(v0, vset1(6.0f));
        v1 = vmin(v1, vset1(6.0f));
    }
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
static inline __attribute__((always_inline)) void prefetch_rows(const float *a, int64_t ld, int64_t rows, int64_t n)
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
static void conv_rows(const conv_geom *q, const float *in, const float *packed, const float *bias,
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
            im2col(q, in, r0, rn, g, col);
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
                                    ldo, finish && ki == nk - 1 ? post : NULL,
                                    g * q->Og + ob * NR);
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
            slim__wino_run(f, c->in[0].data, packed, slim__conv_bias(c), post, c->out[0].data,
                           mine, b, b + 1);
        return;
    }
    pack_filter(c, PACK_W, packed);
    if (c->ith >= nw)
        return;
    /* tiles taken as threads come free: with fixed halves one thread
     * waited for the other, most of all in ResNet-50's 2-thread forward
     * products (the two halves ran at different speeds on this machine,
     * which side varying from call to call) */
    const int64_t ntasks = (M + f->T - 1) / f->T * f->G;
    for (int64_t t = task_take(next, 1, ntasks); t < ntasks; t = task_take(next, 1, ntasks))
        conv_rows(f, c->in[0].data, packed, slim__conv_bias(c), post, c->out[0].data, mine, t,
                  t + 1);
}

void slim__pw_gemm(int64_t M, int64_t K, int64_t O, const float *in, const float *packed,
                   const conv_post *post, float *out)
{
    conv_geom q = {.N = 1, .H = 1, .W = M, .C = K, .KH = 1, .KW = 1, .O = O, .OH = 1, .OW = M,
                   .SH = 1, .SW = 1, .DH = 1, .DW = 1, .G = 1, .Cg = K, .Og = O, .K = K,
                   .T = min64(M, TILE_ROWS), .pointwise = true};
    if (M > 0)
        conv_rows(&q, in, packed, NULL, post, out, NULL, 0, (M + q.T - 1) / q.T);
}

/* Lines of the next rows a pointwise filter gradient will read, prefetched
 * into L2 a few at a time between micro-kernel calls: x read where it lies,
 * row by row at a stride of C floats, and dY at a stride of O, defeat the
 * hardware prefetchers (each row is a few lines of its own page), and the
 * first pass over a tile waited on memory. */
typedef struct dw_pf {
    const char *a, *y;      /* first row's bytes */
    int64_t lda, ldy;       /* row strides, bytes */
    int64_t a_lines, lines; /* lines per row: of A, of A and dY */
    int64_t rows, r, l;     /* rows to fetch; the next row and line */
    int64_t per;            /* lines per micro-kernel call */
} dw_pf;

static void dw_pf_init(dw_pf *p, const float *a, int64_t lda, int64_t kn, const float *dy,
                       int64_t ldy, int64_t ny, int64_t rows, int64_t calls)
{
    p->a = (const char *)a;
    p->y = (const char *)dy;
    p->lda = lda * (int64_t)sizeof(float);
    p->ldy = ldy * (int64_t)sizeof(float);
    p->a_lines = (kn * (int64_t)sizeof(float) + 63) / 64 + 1; /* + 1: rows start anywhere */
    p->lines = p->a_lines + (ny * (int64_t)sizeof(float) + 63) / 64 + 1;
    p->rows = rows;
    p->r = p->l = 0;
    p->per = (rows * p->lines + calls - 1) / calls;
}

/* The next p->per lines (none when p is NULL). */
static inline void dw_pf_step(dw_pf *p)
{
    if (!p)
        return;
    for (int64_t n = p->per; n > 0 && p->r < p->rows; n--) {
        const char *at = p->l < p->a_lines ? p->a + p->r * p->lda + p->l * 64
                                           : p->y + p->r * p->ldy + (p->l - p->a_lines) * 64;
        __builtin_prefetch(at, 0, 2);
        if (++p->l == p->lines) {
            p->l = 0;
            p->r++;
        }
    }
}

/* dW_g rows [0, kn) (ld O) += A^T (kn x rn) dY (rn x Og, ld O); A (rn x kn, ld lda).
 * wide: full panels MR2 rows of dW at a time (ukr_tn_wide, AVX-512), which
 * dw_slabs' tiles gain from (ResNet-50's 1x1 1024->2048: median of 10
 * alternating conv_bench runs 90.5 -> 110.9 GFLOP/s) but the whole-K tiles
 * of gemm_backward_rows lose (1x1 256->64: 105.8 -> 76.1). pf: NULL, or
 * lines to prefetch before each micro-kernel call (dw_tile_stream). */
static void dw_tile(const conv_geom *f, const float *A, int64_t lda, int64_t kn, const float *dyt,
                    int64_t rn, float *dwg, bool wide, dw_pf *pf)
{
    int64_t nb = (f->Og + NR - 1) / NR;
    const int64_t last = f->Og - (nb - 1) * NR; /* columns of the last panel */
    if (last <= NARROW_NR) {
        /* the last panel is narrow: MR2 rows of dW at a time */
        nb--;
        for (int64_t k0 = 0; k0 < kn; k0 += MR2) {
            dw_pf_step(pf);
            ukr_tn_narrow(rn, A + k0, lda, dyt + nb * NR, f->O, dwg + k0 * f->O + nb * NR, f->O,
                          (int)min64(MR2, kn - k0), (int)last, true);
        }
    }
    int64_t k0 = 0;
#ifdef UKR_HAS_TN_WIDE
    if (wide && nb > 0 && f->Og / NR >= nb)
        for (; k0 + MR2 <= kn; k0 += MR2)
            for (int64_t ob = 0; ob < nb; ob++) {
                dw_pf_step(pf);
                ukr_tn_wide(rn, A + k0, lda, dyt + ob * NR, f->O, dwg + k0 * f->O + ob * NR, f->O,
                            true);
            }
#else
    (void)wide;
#endif
    for (; k0 < kn; k0 += MR)
        for (int64_t ob = 0; ob < nb; ob++) {
            dw_pf_step(pf);
            ukr_tn(rn, A + k0, lda, dyt + ob * NR, f->O, dwg + k0 * f->O + ob * NR, f->O,
                   (int)min64(MR, kn - k0), (int)min64(NR, f->Og - ob * NR), true);
        }
}

/* dw_tile for A read where it lies (POINTWISE: x itself, ld C): rows in
 * sub-tiles of DW_SUB, each summed on the 12 x 32 kernel while the next
 * sub-tile's rows of A and dY (up to row avail, exclusive) are prefetched.
 * conv_bench --direction=bwd-filter, medians of 5 alternating runs: 1x1
 * 64->128 71 -> 113 GFLOP/s on 1 thread, 256->64 138 -> 191 on 2. */
static void dw_tile_stream(const conv_geom *f, const float *A, int64_t lda, int64_t kn,
                           const float *dyt, int64_t rn, int64_t avail, float *dwg)
{
    const int64_t calls = (kn + MR2 - 1) / MR2 * ((f->Og + NR - 1) / NR); /* about */
    for (int64_t s0 = 0; s0 < rn; s0 += DW_SUB) {
        const int64_t sn = min64(DW_SUB, rn - s0);
        const float *as = A + s0 * lda, *dys = dyt + s0 * f->O;
        dw_pf pf;
        dw_pf_init(&pf, as + sn * lda, lda, kn, dys + sn * f->O, f->O, f->Og,
                   min64(DW_SUB, avail - s0 - sn), calls);
        dw_tile(f, as, lda, kn, dys, sn, dwg, true, &pf);
    }
}

/* Whether dW goes by slabs (dw_slabs): when it is too big to stay in cache
 * while the tiles stream past (VGG's and ResNet-50's deep 3x3 layers). */
static bool dw_by_slabs(const conv_geom *f)
{
    return f->K > KCHUNK && f->K * f->Og > DW_SLAB_MIN;
}

/* dW_g rows [k0, k1) (ld O) += col^T dY over output rows [R0, R1) of f for
 * group g (col: x itself for POINTWISE), with im2col's columns built slab by slab (KCHUNK of them)
 * for tiles of as many rows as fit col (cap floats): slab-major, so a slab of dW stays in cache
 * while all the rows stream past it in tiles of DW_ROWS (a 3x3x512 layer's im2col tile is 48 rows,
 * and the whole dW, 9 MB, was read and written back once per tile; DW_ROWS keeps a tile's dY panel
 * in L1). */
static void dw_slabs(const conv_geom *f, const float *x, const float *dy, int64_t R0, int64_t R1,
                     int64_t g, int64_t k0, int64_t k1, float *col, size_t cap, float *dw)
{
    for (int64_t ks = k0; ks < k1; ks += KCHUNK) {
        int64_t kn = min64(KCHUNK, k1 - ks);
        int64_t td =
            f->pointwise ? DW_ROWS : max64(MR, min64(DW_ROWS, (int64_t)cap / kn) / MR * MR);
        for (int64_t r0 = R0; r0 < R1; r0 += td) {
            int64_t rn = min64(td, R1 - r0);
            const float *a = x + r0 * f->C + g * f->Cg + ks; /* POINTWISE: x is A, K is Cg */
            int64_t lda = f->C;
            if (!f->pointwise) {
                im2col_cols(f, x, r0, rn, g, ks, ks + kn, col);
                a = col;
                lda = kn;
            }
            if (f->pointwise)
                dw_tile_stream(f, a, lda, kn, dy + r0 * f->O + g * f->Og, rn, R1 - r0,
                               dw + ks * f->O + g * f->Og);
            else
                dw_tile(f, a, lda, kn, dy + r0 * f->O + g * f->Og, rn, dw + ks * f->O + g * f->Og,
                        true, NULL);
        }
    }
}

/* Buffers of one backward worker. */
typedef struct gemm_bwd {
    const float *x, *dy, *packed; /* packed: W^T panels (PACK_WT) for the scatter */
    float *dx;                    /* scatter target (NULL: no dx here) */
    int64_t dx_off;               /* dx holds x rows n*H + ih from dx_off on */
    float *dwp, *dbp, *col, *dcol;
} gemm_bwd;

/* Backward over output rows [R0, R1) in tiles: dW, db partial sums and the dx scatter. */
static void gemm_backward_rows(const slim_kernel_ctx *c, const gemm_bwd *j, int64_t R0, int64_t R1)
{
    const conv_params *p = c->params;
    const conv_geom *f = &p->f;
    const int64_t O = f->O, Og = f->Og, K = f->K, nbk = (K + NR - 1) / NR;
    if (!j->dx && dw_by_slabs(f) && !seg_rows(f)) {
        /* dW alone (dx gathered elsewhere or not wanted): by slabs of K */
        for (int64_t g = 0; j->dwp && g < f->G; g++)
            dw_slabs(f, j->x, j->dy, R0, R1, g, 0, K, j->col, round16((size_t)(f->T * K)), j->dwp);
        if (j->dbp)
            slim__conv_col_sums(j->dy, R0, R1, O, j->dbp);
        return;
    }
    for (int64_t r0 = R0; r0 < R1; r0 += f->T) {
        int64_t rn = min64(f->T, R1 - r0);
        for (int64_t g = 0; g < f->G; g++) {
            const float *dyt = j->dy + r0 * O + g * Og; /* (rn, Og), ld O */
            if (j->dwp && seg_rows(f)) {
                dw_seg(f, j->x, j->dy, r0, rn, j->col, j->dwp);
            } else if (j->dwp) {
                const float *a = j->x + r0 * f->C + g * f->Cg;
                int64_t lda = f->C;
                if (!f->pointwise) {
                    im2col(f, j->x, r0, rn, g, j->col);
                    a = j->col;
                    lda = K;
                }
                if (f->pointwise)
                    dw_tile_stream(f, a, lda, K, dyt, rn, R1 - r0, j->dwp + g * Og);
                else
                    dw_tile(f, a, lda, K, dyt, rn, j->dwp + g * Og, false, NULL);
            }
            if (!j->dx)
                continue;
            /* dcol (rn x K) = dY (rn x Og) * W_g^T (Og x K), then scatter */
            for (int64_t i0 = 0; i0 < rn; i0 += MR) {
                int mr = (int)min64(MR, rn - i0);
                const float *a[MR];
                for (int i = 0; i < MR; i++)
                    a[i] = dyt + (i0 + (i < mr ? i : 0)) * O;
                for (int64_t kb = 0; kb < nbk; kb++)
                    ukr_nn(Og, a, j->packed + (g * nbk + kb) * Og * NR, j->dcol + i0 * K + kb * NR,
                           K, mr, (int)min64(NR, K - kb * NR), NULL, false);
            }
            col2im_add(f, j->dcol, r0, rn, g, j->dx, j->dx_off);
        }
        if (j->dbp)
            slim__conv_col_sums(j->dy, r0, r0 + rn, O, j->dbp);
    }
}

/* dW by K rows: this worker owns dW rows [k0, k1) of every group and sums
 * col[:, k0:k1]^T * dY over all output rows, tile by tile. */
static void gemm_backward_filter_ksplit(const slim_kernel_ctx *c, float *col, int nw)
{
    const conv_params *p = c->params;
    const conv_geom *f = &p->f;
    const float *x = c->in[0].data, *dy = c->dout[0].data;
    float *dw = c->din[1].data; /* dw: (K, O) */
    const int64_t M = f->N * f->OH * f->OW, O = f->O, Og = f->Og;
    int64_t k0, k1;
    slim_split(f->K, c->ith, nw, &k0, &k1);
    if (k1 <= k0)
        return;
    memset(dw + k0 * O, 0, (size_t)((k1 - k0) * O) * sizeof(float));
    if (dw_by_slabs(f)) {
        for (int64_t g = 0; g < f->G; g++)
            dw_slabs(f, x, dy, 0, M, g, k0, k1, col, round16((size_t)(f->T * f->K)), dw);
        return;
    }
    for (int64_t r0 = 0; r0 < M; r0 += f->T) {
        int64_t rn = min64(f->T, M - r0);
        for (int64_t g = 0; g < f->G; g++) {
            const float *a = x + r0 * f->C + g * f->Cg + k0; /* POINTWISE: K is Cg */
            int64_t lda = f->C;
            if (!f->pointwise) {
                im2col_cols(f, x, r0, rn, g, k0, k1, col);
                a = col;
                lda = k1 - k0;
            }
            if (f->pointwise)
                dw_tile_stream(f, a, lda, k1 - k0, dy + r0 * O + g * Og, rn, M - r0,
                               dw + k0 * O + g * Og);
            else
                dw_tile(f, a, lda, k1 - k0, dy + r0 * O + g * Og, rn, dw + k0 * O + g * Og, false,
                        NULL);
        }
    }
}

void slim__conv_gemm_backward(const slim_kernel_ctx *c)
{
    const conv_params *p = c->params;
    const conv_geom *f = &p->f;
    float *dx = c->din[0].data, *dw = c->din[1].data;
    float *db = p->has_bias ? c->din[2].data : NULL;
    const int64_t OHW = f->OH * f->OW, M = f->N * OHW, HWC = f->H * f->W * f->C;
    const int64_t KO = f->K * f->O;

    if (!c->dout[0].data) {
        slim__conv_zero_split(c, dx, f->N * HWC);
        slim__conv_zero_split(c, dw, KO);
        slim__conv_zero_split(c, db, f->O);
        return;
    }
    int nw = slim__conv_workers(c, true);
    if (nw == 0) {
        if (c->ith == 0)
            slim__conv_backward_ref(c);
        return;
    }
    float *packed = c->ws;
    int64_t *next = &((conv_params *)c->params)->next_task;
    if (c->ith == 0)
        task_reset(next); /* before the packing's barrier */
    if (dx && p->t.TB)
        slim__wino_pack(c, &p->t, c->in[1].data, true, packed);
    else if (dx)
        pack_filter(c, bwd_pack_mode(p), packed);
    bwd_slice sl = bwd_layout(p, nw);
    size_t stride = sl.total;
    const bool wdw = p->wino_dw && dw; /* dW by Winograd, after the rest */
    const bool pdw = dw && slim__pw_dw_packed(f); /* dW from packed panels, after the rest */
    if (wdw || pdw)
        dw = NULL;
    bool ksplit = p->dw_ksplit && nw > 1;
    float *ws = packed + slim__conv_shared_floats(p, true), *mine = ws + (size_t)c->ith * stride;
    bool worker = c->ith < nw;
    /* worker 0 sums straight into dw/db; the others into their partials */
    float *dwp = NULL;
    if (dw && !ksplit)
        dwp = c->ith == 0 ? dw : mine + sl.dw;
    gemm_bwd j = {
        .x = c->in[0].data,
        .dy = c->dout[0].data,
        .packed = packed,
        .dwp = dwp,
        .dbp = c->ith == 0 ? db : (db ? mine + sl.db : NULL),
        .col = mine + sl.col,
        .dcol = mine + sl.dcol,
    };
    if (worker && j.dwp)
        memset(j.dwp, 0, (size_t)KO * sizeof(float));
    if (worker && j.dbp)
        memset(j.dbp, 0, (size_t)f->O * sizeof(float));

    int64_t lo, hi;
    if (dx && p->dx_gather && p->t.wcoop) {
        /* all threads on each block, in the shared workspace after U */
        slim__wino_run_coop(c, &p->t, j.dy, packed, NULL, NULL, dx,
                            packed + slim__wino_shared_floats(&p->t));
    } else if (dx && p->dx_gather && worker) {
        /* dx = conv(dy, flip(w)^T): each worker writes its own dx rows */
        const conv_geom *t = &p->t;
        const int64_t n = t->TB ? slim__wino_blocks(t)
                                : (f->N * f->H * f->W + t->T - 1) / t->T * t->G;
        for (int64_t k = task_take(next, 1, n); k < n; k = task_take(next, 1, n)) {
            if (t->TB)
                slim__wino_run(t, j.dy, packed, NULL, NULL, dx, j.col, k, k + 1);
            else
                conv_rows(t, j.dy, packed, NULL, NULL, dx, j.col, k, k + 1);
        }
    }
    if (!dx || p->dx_gather) {
        /* no scatter: any split of the rows is race free */
        slim_split(M, c->ith, nw, &lo, &hi);
        if (worker && (j.dwp || j.dbp))
            gemm_backward_rows(c, &j, lo, hi);
    } else {
        /* whole images per worker: each owns (and zeroes) its images' dx */
        int64_t nimg = f->N / nw * nw;
        slim_split(nimg, c->ith, nw, &lo, &hi);
        if (worker && hi > lo) {
            memset(dx + lo * HWC, 0, (size_t)((hi - lo) * HWC) * sizeof(float));
            j.dx = dx;
            j.dx_off = 0;
            gemm_backward_rows(c, &j, lo * OHW, hi * OHW);
        }
        /* the remaining images one at a time, cut into bands of output rows */
        int64_t band_oh = (f->OH + nw - 1) / nw;
        for (int64_t n = nimg; n < f->N; n++) {
            int64_t oh0 = min64(f->OH, c->ith * band_oh), oh1 = min64(f->OH, oh0 + band_oh);
            int64_t ih0 = 0, ih1 = 0;
            if (worker && oh1 > oh0) {
                ih0 = max64(0, oh0 * f->SH - f->PT);
                ih1 = min64(f->H, (oh1 - 1) * f->SH - f->PT + (f->KH - 1) * f->DH + 1);
                if (ih1 > ih0)
                    memset(mine + sl.band, 0, (size_t)((ih1 - ih0) * f->W * f->C) * sizeof(float));
                j.dx = mine + sl.band;
                j.dx_off = n * f->H + ih0;
                gemm_backward_rows(c, &j, (n * f->OH + oh0) * f->OW, (n * f->OH + oh1) * f->OW);
            }
            c->sync(c);
            /* sum the bands into dx by disjoint dx rows, bands in a fixed order */
            slim_split(f->H, c->ith, c->nth, &lo, &hi);
            const int64_t WC = f->W * f->C;
            for (int64_t ih = lo; ih < hi; ih++) {
                float *dst = dx + (n * f->H + ih) * WC;
                memset(dst, 0, (size_t)WC * sizeof(float));
                for (int t = 0; t < nw; t++) {
                    int64_t b0 = min64(f->OH, t * band_oh), b1 = min64(f->OH, b0 + band_oh);
                    if (b1 <= b0)
                        continue;
                    int64_t h0 = max64(0, b0 * f->SH - f->PT);
                    int64_t h1 = min64(f->H, (b1 - 1) * f->SH - f->PT + (f->KH - 1) * f->DH + 1);
                    if (ih < h0 || ih >= h1)
                        continue;
                    const float *src = ws + (size_t)t * stride + sl.band + (ih - h0) * WC;
                    for (int64_t i = 0; i < WC; i++)
                        dst[i] += src[i];
                }
            }
            c->sync(c); /* the band buffers are reused by the next image */
        }
    }
    if (ksplit && dw && worker)
        gemm_backward_filter_ksplit(c, j.col, nw);
    if (pdw && worker)
        slim__pw_dw(f, c->in[0].data, c->dout[0].data, c->din[1].data, mine + sl.pack, c->ith, nw);
    if (wdw && p->wdw_split) {
        slim__wino_dw(c, f, c->in[0].data, c->dout[0].data, c->din[1].data, NULL, NULL, NULL, nw,
                      ws + sl.wdw, (int64_t)stride);
    } else if (wdw) {
        size_t vy = slim__conv_shared_floats(p, true) - slim__wino_vy_floats(f);
        slim__wino_dw(c, f, c->in[0].data, c->dout[0].data, c->din[1].data, packed, packed + vy,
                      worker ? j.col : NULL, nw, NULL, 0);
    }
    if (nw == 1)
        return;
    c->sync(c);
    if (dw && !ksplit)
        slim__conv_reduce_parts(c, dw, ws, stride, sl.dw, nw, KO);
    if (db)
        slim__conv_reduce_parts(c, db, ws, stride, sl.db, nw, f->O);
}
