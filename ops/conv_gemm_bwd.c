/*
 * ops/conv_gemm_bwd.c - the GEMM paths of conv2d, backward (the forward,
 * the workspace layout and what both use are in ops/conv_gemm.c).
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

#include "ops/conv_gemm.h"
#include "ops/conv_pw.h"
#include "ops/conv_wino.h"

/* ---- im2col by columns, col2im ------------------------------------------------- */

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

/* ---- short filter rows ------------------------------------------------------- */

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
    int np = slim__conv_seg_bands(q, x, r0, rn, band, pc), ns = 0;
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

/* ---- the filter gradient ----------------------------------------------------- */

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
                    slim__conv_im2col(f, j->x, r0, rn, g, j->col);
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
        slim__conv_pack_filter(c, bwd_pack_mode(p), packed);
    bwd_slice sl = slim__conv_bwd_layout(p, nw);
    size_t stride = sl.total;
    const bool wdw = p->wino_dw && dw;            /* dW by Winograd, after the rest */
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
        const int64_t n =
            t->TB ? slim__wino_blocks(t) : (f->N * f->H * f->W + t->T - 1) / t->T * t->G;
        for (int64_t k = task_take(next, 1, n); k < n; k = task_take(next, 1, n)) {
            if (t->TB)
                slim__wino_run(t, j.dy, packed, NULL, NULL, dx, j.col, k, k + 1);
            else
                slim__conv_rows(t, j.dy, packed, NULL, NULL, dx, j.col, k, k + 1);
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
