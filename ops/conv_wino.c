/*
 * ops/conv_wino.c - Winograd F(4x4, 3x3) for 3x3 and F(2x2, 5x5) for 5x5
 * convolutions of stride 1, no dilation and no groups: the forward pass,
 * through conv(dy, flip(w)^T) the data gradient, and the filter gradient
 * (ops/conv_gemm.c decides which runs here).
 *
 * Each 4x4 block of outputs (a "tile") is computed from the 6x6 block of
 * input under it: with d that input, g a 3x3 filter and the transforms of
 * Lavin and Gray ("Fast Algorithms for Convolutional Neural Networks", 2015;
 * interpolation points 0, 1, -1, 2, -2 and infinity),
 *
 *     Y = A^T [ (G g G^T) .* (B^T d B) ] A,
 *
 * a sum over input channels of 36 element-wise products instead of 144
 * multiply-adds per output channel. F(2x2, 5x5) uses the same points, so the
 * same 6x6 input transform B^T d B: G becomes 6x5 (the filter's 5 taps
 * evaluated at the points, rows scaled as for 3 taps) and A^T 2x6, and a
 * 2x2 block of outputs takes 36 products instead of 100. Summed over channels, the 36 products
 * are 36 independent GEMMs:
 *
 *     M[xi] (tiles x O) = V[xi] (tiles x C) * U[xi] (C x O),   xi = 0..35,
 *
 * where U = G g G^T for every (c, o) is computed once per call and packed into
 * the micro-kernels' NR-column panels (shared by the threads), V = B^T d B for
 * a block of tiles, and the output transform A^T M A (plus the bias) writes
 * the block's outputs. A block of TB tiles is one worker's unit: its V and M
 * (36 * TB * (C + O) floats) stay in L2 while its 36 products run, each on
 * the register-blocked kernels of ops/conv_ukr.h with the depth in KCHUNK
 * chunks, as the other forward paths.
 *
 * The transforms work on chunks of WCH channels as plain loops of known trip
 * count, which the compiler vectorizes for the build's vector width. In fp32
 * the result differs from the direct sum by a few units in the 6th digit of
 * the output's scale (the transforms' constants up to 8 and 1/24 amplify
 * rounding): tests/ops/cases_conv.c checks it against the reference kernel.
 */
#include <string.h>

#include "ops/conv_wino.h"
#include "ops/conv_ukr.h"

#define WCH 16 /* channels per transform chunk */
#define WT 36  /* 6 x 6 transformed points */

/* ---- geometry ---------------------------------------------------------------- */

bool slim__wino_shape(const conv_geom *q)
{
    return (q->KH == 3 || q->KH == 5) && q->KW == q->KH && q->SH == 1 && q->SW == 1 && q->DH == 1 &&
           q->DW == 1 && q->G == 1 && !q->pointwise;
}

/* Output tile side: 4 for F(4x4, 3x3), 2 for F(2x2, 5x5). */
static int tile_m(const conv_geom *q)
{
    return q->KH == 5 ? 2 : 4;
}

static int64_t tiles_h(const conv_geom *q)
{
    return (q->OH + tile_m(q) - 1) / tile_m(q);
}

static int64_t tiles_w(const conv_geom *q)
{
    return (q->OW + tile_m(q) - 1) / tile_m(q);
}

/* output tiles of the whole batch */
static int64_t n_tiles(const conv_geom *q)
{
    return q->N * tiles_h(q) * tiles_w(q);
}

static int64_t pad_to(int64_t n, int64_t m)
{
    return (n + m - 1) / m * m;
}

/* Columns of V and M rows: whole transform chunks, whole panels. */
static int64_t v_cols(const conv_geom *q)
{
    return pad_to(q->C, WCH);
}

static int64_t m_cols(const conv_geom *q)
{
    return pad_to(pad_to(q->O, NR), WCH);
}

/* A stride of n floats, one chunk longer when n is a multiple of 128 (512
 * bytes): rows that far apart fall in 8 or fewer of L1's 64 sets, and the
 * filter gradient's products read 64 rows of V and of Yh at once (ResNet-50's
 * 512-channel rows: 2 sets). */
static int64_t spread(int64_t n)
{
    return n % 128 == 0 ? n + WCH : n;
}

/* Leading dimensions of V and M rows, and the strides of their planes (one
 * per point) in blocks of tb tiles. */
static int64_t v_ld(const conv_geom *q)
{
    return spread(v_cols(q));
}

static int64_t m_ld(const conv_geom *q)
{
    return spread(m_cols(q));
}

static int64_t v_ps(const conv_geom *q, int64_t tb)
{
    return spread(tb * v_ld(q));
}

static int64_t m_ps(const conv_geom *q, int64_t tb)
{
    return spread(tb * m_ld(q));
}

/* Rows per micro-kernel call: outputs of at most one vector take the narrow
 * blocks (MR2 rows of one vector), as in the other paths. */
static int block_rows(const conv_geom *q)
{
#ifdef VW
    /* the narrow block writes NARROW_NR columns of M; output_chunk reads WCH */
    return q->O <= NARROW_NR && NARROW_NR >= WCH ? MR2 : MR;
#else
    return MR;
#endif
}

/* Tiles per block for blocks per thread on nth threads. */
static int64_t wino_block(const conv_geom *q, int nth)
{
    const int64_t tiles = n_tiles(q), rows = block_rows(q);
    /* one point's planes of V and M in about WINO_PLANE_FLOATS (the product
     * of that point streams them from L2 for each panel of U), at most
     * WINO_MAX_TB tiles: more tiles reuse each panel of U more */
    int64_t tb = WINO_PLANE_FLOATS / (v_cols(q) + m_cols(q));
    tb = max64(min64(tb, WINO_MAX_TB), 1);
    /* blocks in a multiple of the threads, of equal size: 256 tiles in
     * blocks of 96 would give one thread 192 and the other 64 */
    int64_t nblk = pad_to((tiles + tb - 1) / tb, nth);
    tb = (tiles + nblk - 1) / nblk;
    return pad_to(max64(tb, 1), rows);
}

int64_t slim__wino_blocks(const conv_geom *q)
{
    return (n_tiles(q) + q->TB - 1) / q->TB;
}

size_t slim__wino_shared_floats(const conv_geom *q)
{
    return round16((size_t)(WT * ((q->O + NR - 1) / NR) * q->C * NR));
}

size_t slim__wino_ws_floats(const conv_geom *q)
{
    return round16((size_t)(WT * v_ps(q, q->TB))) + round16((size_t)(WT * m_ps(q, q->TB)));
}

/* ---- the filter: U = G g G^T, packed ---------------------------------------- */

/* U is written past the caches (WINO_NT_BYTES), and the products fetch each
 * panel of it ahead. */
static bool u_streamed(const conv_geom *q)
{
    return slim__wino_shared_floats(q) * sizeof(float) > WINO_NT_BYTES;
}

/* One vector row of U: past the caches when nt (slim__wino_pack). */
static inline __attribute__((always_inline)) void put_u(float *dst, const float *src, bool nt)
{
#ifdef VW
    if (nt) {
        for (int j = 0; j < NR; j += VW)
            vstream(dst + j, vload(src + j));
        return;
    }
#else
    (void)nt;
#endif
    memcpy(dst, src, NR * sizeof(float));
}

/* One row (ob, ci) of U for a 3x3 filter: g[9][NR] -> 36 vectors at dst
 * (plane apart). Explicit, as the transform runs over every filter value
 * on every call. */
static void pack_row3(const float (*g)[NR], float *dst, int64_t plane, bool nt)
{
    float t[6][3][NR];
    for (int kw = 0; kw < 3; kw++) /* t (6x3) = G g */
        for (int j = 0; j < NR; j++) {
            float v0 = g[kw][j], v1 = g[3 + kw][j], v2 = g[6 + kw][j];
            t[0][kw][j] = v0 * 0.25f;
            t[1][kw][j] = -(v0 + v1 + v2) * (1.0f / 6.0f);
            t[2][kw][j] = -(v0 - v1 + v2) * (1.0f / 6.0f);
            t[3][kw][j] = v0 * (1.0f / 24.0f) + v1 * (1.0f / 12.0f) + v2 * (1.0f / 6.0f);
            t[4][kw][j] = v0 * (1.0f / 24.0f) - v1 * (1.0f / 12.0f) + v2 * (1.0f / 6.0f);
            t[5][kw][j] = v2;
        }
    for (int i = 0; i < 6; i++) { /* u (6x6) = t G^T, row i */
        float u[6][NR];
        for (int j = 0; j < NR; j++) {
            float v0 = t[i][0][j], v1 = t[i][1][j], v2 = t[i][2][j];
            u[0][j] = v0 * 0.25f;
            u[1][j] = -(v0 + v1 + v2) * (1.0f / 6.0f);
            u[2][j] = -(v0 - v1 + v2) * (1.0f / 6.0f);
            u[3][j] = v0 * (1.0f / 24.0f) + v1 * (1.0f / 12.0f) + v2 * (1.0f / 6.0f);
            u[4][j] = v0 * (1.0f / 24.0f) - v1 * (1.0f / 12.0f) + v2 * (1.0f / 6.0f);
            u[5][j] = v2;
        }
        for (int k = 0; k < 6; k++)
            put_u(dst + (i * 6 + k) * plane, u[k], nt);
    }
}

/* G (6x5) applied to 5 vectors: the taps at the points, rows scaled as for 3 taps. */
static inline __attribute__((always_inline)) void g5(const float *v0, const float *v1,
                                                     const float *v2, const float *v3,
                                                     const float *v4, float (*o)[NR])
{
    for (int j = 0; j < NR; j++) {
        float s024 = v0[j] + v2[j] + v4[j], s13 = v1[j] + v3[j];
        float e = v0[j] * (1.0f / 24.0f) + v2[j] * (1.0f / 6.0f) + v4[j] * (2.0f / 3.0f);
        float f = v1[j] * (1.0f / 12.0f) + v3[j] * (1.0f / 3.0f);
        o[0][j] = v0[j] * 0.25f;
        o[1][j] = -(s024 + s13) * (1.0f / 6.0f);
        o[2][j] = -(s024 - s13) * (1.0f / 6.0f);
        o[3][j] = e + f;
        o[4][j] = e - f;
        o[5][j] = v4[j];
    }
}

/* The same for a 5x5 filter: g[25][NR]. */
static void pack_row5(const float (*g)[NR], float *dst, int64_t plane, bool nt)
{
    float t[5][6][NR]; /* t[kw] (6) = G g[.][kw] */
    for (int kw = 0; kw < 5; kw++)
        g5(g[kw], g[5 + kw], g[10 + kw], g[15 + kw], g[20 + kw], t[kw]);
    for (int i = 0; i < 6; i++) { /* u (6x6) = t G^T, row i */
        float u[6][NR];
        g5(t[0][i], t[1][i], t[2][i], t[3][i], t[4][i], u);
        for (int k = 0; k < 6; k++)
            put_u(dst + (i * 6 + k) * plane, u[k], nt);
    }
}

/* All threads transform and pack the filter into U, then meet: U holds, for
 * xi = 0..35 and each NR-column panel ob, C rows of NR values
 * U[xi](c, ob*NR + j) (zero past O). w is (r,r,C,O) for q, or with flip the
 * forward filter (r,r,O,C) of the convolution q is the data gradient of.
 * One row (ob, c) at a time, the NR columns as vector lanes: G g G^T is
 * linear, so each of the 36 results is a fixed combination of the r*r taps. */
void slim__wino_pack(const slim_kernel_ctx *c, const conv_geom *q, const float *w, bool flip,
                     float *U)
{
    const int64_t C = q->C, O = q->O, nb = (O + NR - 1) / NR, plane = nb * C * NR;
    const int taps = (int)(q->KH * q->KW);
    const bool nt = u_streamed(q);
    int64_t lo, hi;
    slim_split(nb * C, c->ith, c->nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const int64_t ob = r / C, ci = r % C, nj = min64(NR, O - ob * NR);
        float g[25][NR];
        for (int tap = 0; tap < taps; tap++) {
            /* flip: the taps reversed, in and out channels swapped (w (r,r,O,C)) */
            const float *src = flip ? w + ((taps - 1 - tap) * O + ob * NR) * C + ci
                                    : w + (tap * C + ci) * O + ob * NR;
            if (!flip && nj == NR) { /* a whole panel row: one vector copy */
                memcpy(g[tap], src, sizeof g[tap]);
                continue;
            }
            const int64_t js = flip ? C : 1;
            for (int64_t j = 0; j < nj; j++)
                g[tap][j] = src[j * js];
            for (int64_t j = nj; j < NR; j++)
                g[tap][j] = 0.0f;
        }
        float *dst = U + (ob * C + ci) * NR;
        if (taps == 25)
            pack_row5((const float(*)[NR])g, dst, plane, nt);
        else
            pack_row3((const float(*)[NR])g, dst, plane, nt);
    }
    if (nt)
        __builtin_ia32_sfence(); /* the streamed rows land before the threads meet */
    c->sync(c);
}

/* ---- the transforms ---------------------------------------------------------- */

/* V = B^T d B on one chunk: d[r][col] points at WCH values -> v[(r*6 + col) * vs + j]. */
static void input_chunk(const float *const (*d)[6], float *v, int64_t vs)
{
    float t[6][6][WCH]; /* d B: per row, the columns combined */
    for (int r = 0; r < 6; r++) {
        const float *d0 = d[r][0], *d1 = d[r][1], *d2 = d[r][2], *d3 = d[r][3], *d4 = d[r][4],
                    *d5 = d[r][5];
        for (int j = 0; j < WCH; j++) {
            t[r][0][j] = 4.0f * d0[j] - 5.0f * d2[j] + d4[j];
            t[r][1][j] = -4.0f * (d1[j] + d2[j]) + d3[j] + d4[j];
            t[r][2][j] = 4.0f * (d1[j] - d2[j]) - d3[j] + d4[j];
            t[r][3][j] = 2.0f * (d3[j] - d1[j]) - d2[j] + d4[j];
            t[r][4][j] = 2.0f * (d1[j] - d3[j]) - d2[j] + d4[j];
            t[r][5][j] = 4.0f * d1[j] - 5.0f * d3[j] + d5[j];
        }
    }
    for (int col = 0; col < 6; col++) {
        const float *t0 = t[0][col], *t1 = t[1][col], *t2 = t[2][col], *t3 = t[3][col],
                    *t4 = t[4][col], *t5 = t[5][col];
        float o[6][WCH]; /* local, so the loop vectorizes; then six stores */
        for (int j = 0; j < WCH; j++) {
            o[0][j] = 4.0f * t0[j] - 5.0f * t2[j] + t4[j];
            o[1][j] = -4.0f * (t1[j] + t2[j]) + t3[j] + t4[j];
            o[2][j] = 4.0f * (t1[j] - t2[j]) - t3[j] + t4[j];
            o[3][j] = 2.0f * (t3[j] - t1[j]) - t2[j] + t4[j];
            o[4][j] = 2.0f * (t1[j] - t3[j]) - t2[j] + t4[j];
            o[5][j] = 4.0f * t1[j] - 5.0f * t3[j] + t5[j];
        }
        for (int r = 0; r < 6; r++)
            memcpy(v + (r * 6 + col) * vs, o[r], sizeof o[r]);
    }
}

/* Column col of an output block: M rows o[a], times s (NULL: 1) plus b, then
 * the activation, stored to y[a][col]. */
static inline __attribute__((always_inline)) void finish_col(const int M, float (*o)[WCH],
                                                             const float *s, const float *bias,
                                                             int act, float *const (*y)[4], int col)
{
    for (int a = 0; a < M; a++)
        for (int j = 0; j < WCH; j++)
            o[a][j] = s ? o[a][j] * s[j] + bias[j] : o[a][j] + bias[j];
    for (int a = 0; a < M; a++)
        act_fwd_row(act, o[a], WCH);
    for (int a = 0; a < M; a++)
        memcpy(y[a][col], o[a], sizeof o[a]);
}

/* Y = A^T M A on one chunk: m[xi * ms + j] -> y[a][b] (WCH values each),
 * times s (NULL: 1) plus b, then the activation. */
static void output_chunk4(const float *m, int64_t ms, const float *s, const float *bias, int act,
                          float *const (*y)[4])
{
    float t[6][4][WCH]; /* M A: per row, the columns combined */
    for (int r = 0; r < 6; r++) {
        const float *m0 = m + (r * 6 + 0) * ms, *m1 = m + (r * 6 + 1) * ms,
                    *m2 = m + (r * 6 + 2) * ms, *m3 = m + (r * 6 + 3) * ms,
                    *m4 = m + (r * 6 + 4) * ms, *m5 = m + (r * 6 + 5) * ms;
        for (int j = 0; j < WCH; j++) {
            float s12 = m1[j] + m2[j], d12 = m1[j] - m2[j];
            float s34 = m3[j] + m4[j], d34 = m3[j] - m4[j];
            t[r][0][j] = m0[j] + s12 + s34;
            t[r][1][j] = d12 + 2.0f * d34;
            t[r][2][j] = s12 + 4.0f * s34;
            t[r][3][j] = d12 + 8.0f * d34 + m5[j];
        }
    }
    for (int col = 0; col < 4; col++) {
        float o[4][WCH];
        for (int j = 0; j < WCH; j++) {
            float s12 = t[1][col][j] + t[2][col][j], d12 = t[1][col][j] - t[2][col][j];
            float s34 = t[3][col][j] + t[4][col][j], d34 = t[3][col][j] - t[4][col][j];
            o[0][j] = t[0][col][j] + s12 + s34;
            o[1][j] = d12 + 2.0f * d34;
            o[2][j] = s12 + 4.0f * s34;
            o[3][j] = d12 + 8.0f * d34 + t[5][col][j];
        }
        finish_col(4, o, s, bias, act, y, col);
    }
}

/* The same for F(2x2, 5x5): A^T is [1 1 1 1 1 0], [0 1 -1 2 -2 1]. */
static void output_chunk2(const float *m, int64_t ms, const float *s, const float *bias, int act,
                          float *const (*y)[4])
{
    float t[6][2][WCH]; /* M A: per row, the columns combined */
    for (int r = 0; r < 6; r++) {
        const float *m0 = m + (r * 6 + 0) * ms, *m1 = m + (r * 6 + 1) * ms,
                    *m2 = m + (r * 6 + 2) * ms, *m3 = m + (r * 6 + 3) * ms,
                    *m4 = m + (r * 6 + 4) * ms, *m5 = m + (r * 6 + 5) * ms;
        for (int j = 0; j < WCH; j++) {
            float s12 = m1[j] + m2[j], d12 = m1[j] - m2[j];
            float s34 = m3[j] + m4[j], d34 = m3[j] - m4[j];
            t[r][0][j] = m0[j] + s12 + s34;
            t[r][1][j] = d12 + 2.0f * d34 + m5[j];
        }
    }
    for (int col = 0; col < 2; col++) {
        float o[2][WCH];
        for (int j = 0; j < WCH; j++) {
            float s12 = t[1][col][j] + t[2][col][j], d12 = t[1][col][j] - t[2][col][j];
            float s34 = t[3][col][j] + t[4][col][j], d34 = t[3][col][j] - t[4][col][j];
            o[0][j] = t[0][col][j] + s12 + s34;
            o[1][j] = d12 + 2.0f * d34 + t[5][col][j];
        }
        finish_col(2, o, s, bias, act, y, col);
    }
}

/* ---- a block of tiles ----------------------------------------------------------- */

/* The tile's image, first output row and column. */
static void tile_at(const conv_geom *q, int64_t tile, int64_t *n, int64_t *oh0, int64_t *ow0)
{
    const int64_t th = tiles_h(q), tw = tiles_w(q), m = tile_m(q);
    *n = tile / (th * tw);
    *oh0 = tile / tw % th * m;
    *ow0 = tile % tw * m;
}

/* V rows [0, tn) of the block from tiles [t0, t0 + tn). Points outside the
 * image read zeros; a chunk the channel count ends is copied, zero-padded. */
static void input_block(const conv_geom *q, const float *in, int64_t t0, int64_t tn, float *V)
{
    const int64_t C = q->C, vs = v_ps(q, q->TB);
    static const float zeros[WCH];
    float part[6][6][WCH];
    for (int64_t i = 0; i < tn; i++) {
        int64_t n, oh0, ow0;
        tile_at(q, t0 + i, &n, &oh0, &ow0);
        const int64_t ih0 = oh0 - q->PT, iw0 = ow0 - q->PL;
        const float *src[6][6];
        for (int r = 0; r < 6; r++)
            for (int col = 0; col < 6; col++) {
                int64_t ih = ih0 + r, iw = iw0 + col;
                src[r][col] = ih >= 0 && ih < q->H && iw >= 0 && iw < q->W
                                  ? in + ((n * q->H + ih) * q->W + iw) * C
                                  : NULL;
            }
        for (int64_t c0 = 0; c0 < C; c0 += WCH) {
            const int64_t cn = min64(WCH, C - c0);
            const float *d[6][6];
            for (int r = 0; r < 6; r++)
                for (int col = 0; col < 6; col++) {
                    if (!src[r][col]) {
                        d[r][col] = zeros;
                    } else if (cn == WCH) {
                        d[r][col] = src[r][col] + c0;
                    } else {
                        memcpy(part[r][col], src[r][col] + c0, (size_t)cn * sizeof(float));
                        memset(part[r][col] + cn, 0, (size_t)(WCH - cn) * sizeof(float));
                        d[r][col] = part[r][col];
                    }
                }
            input_chunk((const float *const(*)[6])d, V + i * v_ld(q) + c0, vs);
        }
    }
}

/* The outputs of tiles [t0, t0 + tn) from M rows [0, tn): straight into out,
 * but for points past the map's edge and chunks the channel count ends. */
static void output_block(const conv_geom *q, const float *M, const float *bias,
                         const conv_post *post, int64_t t0, int64_t tn, float *out)
{
    const int64_t O = q->O, ms = m_ps(q, q->TB);
    /* with a residual, it and the activation go over each tile's pixels once
     * all its channels are written */
    const bool res = post && post->res;
    const int act = post && !res ? post->act : ACT_NONE;
    const bool scaled = post && post->scale;
    const conv_post tail = {.res = res ? post->res : NULL, .out = out, .act = post ? post->act : 0};
    const int m = tile_m(q);
    float part[4][4][WCH], b[WCH], s[WCH];
    for (int64_t i = 0; i < tn; i++) {
        int64_t n, oh0, ow0;
        tile_at(q, t0 + i, &n, &oh0, &ow0);
        const int64_t rows = min64(m, q->OH - oh0), cols = min64(m, q->OW - ow0);
        if (i + 1 < tn) {
            /* the next tile's rows of y, fetched for writing while this
             * one's are computed (ResNet-50's 3x3 layers 1-8% faster) */
            int64_t n1, oh1, ow1;
            tile_at(q, t0 + i + 1, &n1, &oh1, &ow1);
            for (int64_t a = 0; a < min64(m, q->OH - oh1); a++)
                prefetch_store(out + ((n1 * q->OH + oh1 + a) * q->OW + ow1) * O,
                               (size_t)(min64(m, q->OW - ow1) * O) * sizeof(float));
        }
        for (int64_t o0 = 0; o0 < O; o0 += WCH) {
            const int64_t on = min64(WCH, O - o0);
            const bool whole = on == WCH;
            memset(b, 0, sizeof b);
            if (scaled) {
                memset(s, 0, sizeof s);
                memcpy(s, post->scale + o0, (size_t)on * sizeof(float));
                memcpy(b, post->shift + o0, (size_t)on * sizeof(float));
            } else if (bias) {
                memcpy(b, bias + o0, (size_t)on * sizeof(float));
            }
            float *y[4][4];
            for (int a = 0; a < m; a++)
                for (int e = 0; e < m; e++)
                    y[a][e] = whole && a < rows && e < cols
                                  ? out + ((n * q->OH + oh0 + a) * q->OW + ow0 + e) * O + o0
                                  : part[a][e];
            (m == 2 ? output_chunk2 : output_chunk4)(M + i * m_ld(q) + o0, ms, scaled ? s : NULL, b,
                                                     act, (float *const(*)[4])y);
            if (whole)
                continue;
            for (int64_t a = 0; a < rows; a++)
                for (int64_t e = 0; e < cols; e++)
                    memcpy(out + ((n * q->OH + oh0 + a) * q->OW + ow0 + e) * O + o0, part[a][e],
                           (size_t)on * sizeof(float));
        }
        for (int64_t a = 0; res && a < rows; a++)
            slim__conv_post_rows(&tail, out + ((n * q->OH + oh0 + a) * q->OW + ow0) * O, O, cols, 0,
                                 O);
    }
}

#define LINE_FLOATS 16 /* floats per 64-byte cache line */

/* The panel of U read after point x's depth chunk ci of panel ob, and its
 * lines (*nlines); NULL after the last. */
static const float *next_panel(const conv_geom *q, const float *U, int x, int64_t ci, int64_t ob,
                               int64_t *nlines)
{
    const int64_t C = q->C, nb = (q->O + NR - 1) / NR, nch = (C + KCHUNK - 1) / KCHUNK;
    if (ob + 1 == nb) { /* the first panel of the next chunk, or of the next point */
        ob = 0;
        if (++ci == nch) {
            ci = 0;
            if (++x == WT)
                return NULL;
        }
    } else {
        ob++;
    }
    const int64_t k0 = C * ci / nch, k1 = C * (ci + 1) / nch;
    *nlines = (k1 - k0) * NR / LINE_FLOATS;
    return U + ((x * nb + ob) * C + k0) * NR;
}

/* M = V U for points [x0, x1) of a block of tn tiles (V and M planes of
 * q->TB rows). */
static void block_products(const conv_geom *q, const float *V, const float *U, float *M, int64_t tn,
                           int x0, int x1)
{
    const int64_t C = q->C, nb = (q->O + NR - 1) / NR;
    const int64_t vl = v_ld(q), ml = m_ld(q);
    const int rows = block_rows(q);
    const bool narrow = rows == MR2;
    const int nr = narrow ? NARROW_NR : NR; /* NARROW_NR = WCH */
    const int64_t vs = v_ps(q, q->TB), ms = m_ps(q, q->TB);
    const int64_t nch = (C + KCHUNK - 1) / KCHUNK;
    const bool pfu = u_streamed(q);
    const int64_t ncall = (tn + rows - 1) / rows; /* micro-kernel calls per panel */
    for (int x = x0; x < x1; x++) {
        const float *Vx = V + x * vs;
        float *Mx = M + x * ms;
        for (int64_t ci = 0; ci < nch; ci++) {
            const int64_t k0 = C * ci / nch, k1 = C * (ci + 1) / nch;
            for (int64_t ob = 0; ob < nb; ob++) {
                const float *bp = U + ((x * nb + ob) * C + k0) * NR;
                /* U from memory: the next panel the products read, fetched
                 * a share per micro-kernel call (ResNet-50's 3x3 layers of
                 * blocks 3 and 4: 2-8% faster) */
                int64_t nlines = 0, l0 = 0;
                const float *nbp = pfu ? next_panel(q, U, x, ci, ob, &nlines) : NULL;
                const int64_t per = (nlines + ncall - 1) / ncall;
                for (int64_t i0 = 0; i0 < tn; i0 += rows) {
                    int mr = (int)min64(rows, tn - i0);
                    if (nbp) { /* lines [l0, l0 + per) of it in this call */
                        const int64_t l1 = min64(nlines, l0 + per);
                        for (; l0 < l1; l0++)
                            __builtin_prefetch(nbp + l0 * LINE_FLOATS);
                    }
                    const float *a[MR2];
                    for (int i = 0; i < rows; i++)
                        a[i] = Vx + (i0 + (i < mr ? i : 0)) * vl + k0;
                    /* nr covers the panel's zero columns: M is defined up
                     * to its leading dimension */
                    (narrow ? ukr_nn_narrow : ukr_nn)(k1 - k0, a, bp, Mx + i0 * ml + ob * NR, ml,
                                                      mr, nr, NULL, ci > 0);
                }
            }
        }
    }
}

/* Blocks [b0, b1) of q->TB tiles: out = conv(in, w) (+ bias), then post, with
 * U the packed transformed filter (slim__wino_pack) and ws this worker's
 * slim__wino_ws_floats. */
void slim__wino_run(const conv_geom *q, const float *in, const float *U, const float *bias,
                    const conv_post *post, float *out, float *ws, int64_t b0, int64_t b1)
{
    const int64_t tiles = n_tiles(q);
    float *V = ws, *M = ws + round16((size_t)(WT * v_ps(q, q->TB)));
    for (int64_t blk = b0; blk < b1; blk++) {
        const int64_t t0 = blk * q->TB, tn = min64(q->TB, tiles - t0);
        input_block(q, in, t0, tn, V);
        block_products(q, V, U, M, tn, 0, WT);
        output_block(q, M, bias, post, t0, tn, out);
    }
}

/* A layer of few tiles and a large U (ResNet-50's 512->512 at 7x7: 64 tiles
 * at batch 16) in blocks per thread had every thread stream all of U from
 * memory for its block; in shared blocks (sized as for 1 thread) the threads
 * split the 36 points, and U is read once a block. */
void slim__wino_plan(conv_geom *q, int nth)
{
    q->wcoop = nth > 1 && u_streamed(q) && n_tiles(q) <= (int64_t)nth * WINO_MAX_TB;
    q->TB = wino_block(q, q->wcoop ? 1 : nth);
}

/* The threads transform a share of the block's tiles into V, meet, run a
 * share of the points' products, meet, and write a share of the tiles'
 * outputs. The next block's V is written after the second meeting (no one
 * reads V any more), its M after the first of that block (everyone has
 * written this block's outputs). */
void slim__wino_run_coop(const slim_kernel_ctx *c, const conv_geom *q, const float *in,
                         const float *U, const float *bias, const conv_post *post, float *out,
                         float *ws)
{
    const int64_t tiles = n_tiles(q), nblk = slim__wino_blocks(q);
    float *V = ws, *M = ws + round16((size_t)(WT * v_ps(q, q->TB)));
    int64_t x0, x1;
    slim_split(WT, c->ith, c->nth, &x0, &x1);
    for (int64_t blk = 0; blk < nblk; blk++) {
        const int64_t t0 = blk * q->TB, tn = min64(q->TB, tiles - t0);
        int64_t lo, hi;
        slim_split(tn, c->ith, c->nth, &lo, &hi);
        input_block(q, in, t0 + lo, hi - lo, V + lo * v_ld(q));
        c->sync(c);
        block_products(q, V, U, M, tn, (int)x0, (int)x1);
        c->sync(c);
        output_block(q, M + lo * m_ld(q), bias, post, t0 + lo, hi - lo, out);
    }
}

/* ---- backward-filter ----------------------------------------------------------
 *
 * The forward is linear in U = G g G^T, so with Yh = A dY A^T (the 4x4 block
 * of dy under a tile, zeros past the map's edge, taken to 6x6):
 *
 *     dU[xi](c, o) = sum over tiles of V[xi](tile, c) * Yh[xi](tile, o),
 *     dw(c, o) = G^T dU(c, o) G,
 *
 * 36 products of depth "tiles" (C x tiles times tiles x O). The tiles go in
 * global blocks: all threads transform their share of a block's x and dy
 * into shared V and Yh, meet, then each sums the block into the dU of the
 * points it owns (points split between threads: no partial sums, and the
 * same order at any thread count but for the split), and they meet again
 * before the next block. Last, G^T dU G by rows of dw. */

/* Tiles per block of the backward-filter: one point's planes of V and Yh in
 * WINO_PLANE_FLOATS, at most WINO_MAX_TB, a multiple of 4 (the depth of ukr_tn
 * is unrolled by 4). Twice that (fewer passes over dU) was slower on one
 * thread: 256->256 at 14x14 174-205 -> 129 GFLOP/s. */
static int64_t dw_block(const conv_geom *q)
{
    int64_t tb = WINO_PLANE_FLOATS / (v_cols(q) + m_cols(q));
    tb = min64(min64(tb, WINO_MAX_TB), pad_to(n_tiles(q), 4));
    return pad_to(max64(tb, 4), 4);
}

size_t slim__wino_du_floats(const conv_geom *q)
{
    return round16((size_t)(WT * q->C * q->O));
}

size_t slim__wino_u_floats(void)
{
    return round16((size_t)(WT * WDW_ROWS * NR));
}

bool slim__wino_dw_split(const conv_geom *q, int nth)
{
    return nth > 1 && n_tiles(q) > dw_block(q) && q->C * q->O <= WDW_SPLIT_CO;
}

size_t slim__wino_dw_part_floats(const conv_geom *q)
{
    return slim__wino_du_floats(q) + slim__wino_vy_floats(q);
}

size_t slim__wino_vy_floats(const conv_geom *q)
{
    const int64_t tb = dw_block(q);
    return round16((size_t)(WT * v_ps(q, tb))) + round16((size_t)(WT * m_ps(q, tb)));
}

/* A (6 x M) applied to M values: the points 0, 1, -1, 2, -2 and infinity. */
#define DY_ROWS(M, y0, y1, y2, y3, t, j)                                                           \
    do {                                                                                           \
        if ((M) == 2) {                                                                            \
            t[0][j] = (y0);                                                                        \
            t[1][j] = (y0) + (y1);                                                                 \
            t[2][j] = (y0) - (y1);                                                                 \
            t[3][j] = (y0) + 2.0f * (y1);                                                          \
            t[4][j] = (y0)-2.0f * (y1);                                                            \
            t[5][j] = (y1);                                                                        \
        } else {                                                                                   \
            t[0][j] = (y0);                                                                        \
            t[1][j] = (y0) + (y1) + (y2) + (y3);                                                   \
            t[2][j] = (y0) - (y1) + (y2) - (y3);                                                   \
            t[3][j] = (y0) + 2.0f * (y1) + 4.0f * (y2) + 8.0f * (y3);                              \
            t[4][j] = (y0)-2.0f * (y1) + 4.0f * (y2)-8.0f * (y3);                                  \
            t[5][j] = (y3);                                                                        \
        }                                                                                          \
    } while (0)

/* Yh rows [0, tn) of the block (plane stride ys, rows of m_ld) from dy tiles [t0, t0 + tn). */
static void dy_block(const conv_geom *q, const float *dy, int64_t t0, int64_t tn, float *Y,
                     int64_t ys)
{
    const int64_t O = q->O, ml = m_ld(q), mc = m_cols(q);
    const int m = tile_m(q);
    static const float zeros[WCH];
    float part[4][4][WCH];
    for (int64_t i = 0; i < tn; i++) {
        int64_t n, oh0, ow0;
        tile_at(q, t0 + i, &n, &oh0, &ow0);
        const int64_t rows = min64(m, q->OH - oh0), cols = min64(m, q->OW - ow0);
        for (int64_t o0 = 0; o0 < mc; o0 += WCH) {
            const int64_t on = max64(0, min64(WCH, O - o0));
            const float *d[4][4];
            for (int a = 0; a < 4; a++)
                for (int e = 0; e < 4; e++) {
                    if (a >= rows || e >= cols || on == 0) {
                        d[a][e] = zeros;
                        continue;
                    }
                    const float *src = dy + ((n * q->OH + oh0 + a) * q->OW + ow0 + e) * O + o0;
                    if (on == WCH) {
                        d[a][e] = src;
                    } else {
                        memcpy(part[a][e], src, (size_t)on * sizeof(float));
                        memset(part[a][e] + on, 0, (size_t)(WCH - on) * sizeof(float));
                        d[a][e] = part[a][e];
                    }
                }
            float t[6][4][WCH]; /* A dY: per column, the rows combined */
            if (m == 2)
                for (int e = 0; e < 2; e++)
                    for (int j = 0; j < WCH; j++) {
                        float y0 = d[0][e][j], y1 = d[1][e][j];
                        t[0][e][j] = y0;
                        t[1][e][j] = y0 + y1;
                        t[2][e][j] = y0 - y1;
                        t[3][e][j] = y0 + 2.0f * y1;
                        t[4][e][j] = y0 - 2.0f * y1;
                        t[5][e][j] = y1;
                    }
            else
                for (int e = 0; e < 4; e++)
                    for (int j = 0; j < WCH; j++) {
                        float y0 = d[0][e][j], y1 = d[1][e][j], y2 = d[2][e][j], y3 = d[3][e][j];
                        t[0][e][j] = y0;
                        t[1][e][j] = y0 + y1 + y2 + y3;
                        t[2][e][j] = y0 - y1 + y2 - y3;
                        t[3][e][j] = y0 + 2.0f * y1 + 4.0f * y2 + 8.0f * y3;
                        t[4][e][j] = y0 - 2.0f * y1 + 4.0f * y2 - 8.0f * y3;
                        t[5][e][j] = y3;
                    }
            float *out = Y + i * ml + o0;
            for (int r = 0; r < 6; r++) { /* (A dY) A^T, row r */
                float o[6][WCH];
                if (m == 2)
                    for (int j = 0; j < WCH; j++)
                        DY_ROWS(2, t[r][0][j], t[r][1][j], 0, 0, o, j);
                else
                    for (int j = 0; j < WCH; j++)
                        DY_ROWS(4, t[r][0][j], t[r][1][j], t[r][2][j], t[r][3][j], o, j);
                for (int col = 0; col < 6; col++)
                    memcpy(out + (r * 6 + col) * ys, o[col], sizeof o[col]);
            }
        }
    }
}

/* G^T applied to 6 vectors (the transpose of g5): 5 outputs. */
static inline __attribute__((always_inline)) void g5t(const float *u0, const float *u1,
                                                      const float *u2, const float *u3,
                                                      const float *u4, const float *u5,
                                                      float (*o)[WCH])
{
    for (int j = 0; j < WCH; j++) {
        float s12 = u1[j] + u2[j], d21 = u2[j] - u1[j], s34 = u3[j] + u4[j], d34 = u3[j] - u4[j];
        o[0][j] = u0[j] * 0.25f - s12 * (1.0f / 6.0f) + s34 * (1.0f / 24.0f);
        o[1][j] = d21 * (1.0f / 6.0f) + d34 * (1.0f / 12.0f);
        o[2][j] = -s12 * (1.0f / 6.0f) + s34 * (1.0f / 6.0f);
        o[3][j] = d21 * (1.0f / 6.0f) + d34 * (1.0f / 3.0f);
        o[4][j] = -s12 * (1.0f / 6.0f) + s34 * (2.0f / 3.0f) + u5[j];
    }
}

/* G^T applied to 6 vectors for a 3x3 filter: 3 outputs. */
static inline __attribute__((always_inline)) void g3t(const float *u0, const float *u1,
                                                      const float *u2, const float *u3,
                                                      const float *u4, const float *u5,
                                                      float (*o)[WCH])
{
    for (int j = 0; j < WCH; j++) {
        o[0][j] =
            u0[j] * 0.25f - (u1[j] + u2[j]) * (1.0f / 6.0f) + (u3[j] + u4[j]) * (1.0f / 24.0f);
        o[1][j] = (u2[j] - u1[j]) * (1.0f / 6.0f) + (u3[j] - u4[j]) * (1.0f / 12.0f);
        o[2][j] = -(u1[j] + u2[j]) * (1.0f / 6.0f) + (u3[j] + u4[j]) * (1.0f / 6.0f) + u5[j];
    }
}

/* One chunk of on <= WCH output channels of one filter-gradient row: the 36
 * points' values at src + xi*xs (plus, with nsrc > 1, those of nsrc - 1
 * more partial sums ss floats apart) in, G^T dU G out, tap k at dst + k*ts. The
 * copies are of a constant size when the chunk is whole: with a variable
 * one GCC emits `rep movs` (where perf put 44% of the 7x7 layers' filter
 * gradient, most of it waiting on dU from memory). */
static void dw_chunk(int kh, const float *src, int64_t xs, int64_t on, float *dst, int64_t ts,
                     int nsrc, int64_t ss)
{
    float u[WT][WCH], z[6][5][WCH], g[5][WCH];
    for (int xi = 0; xi < WT; xi++) {
        if (on == WCH) {
            memcpy(u[xi], src + xi * xs, sizeof u[xi]);
        } else {
            memcpy(u[xi], src + xi * xs, (size_t)on * sizeof(float));
            memset(u[xi] + on, 0, (size_t)(WCH - on) * sizeof(float));
        }
        for (int t = 1; t < nsrc; t++) { /* the other threads' partial sums, in order */
            const float *p = src + t * ss + xi * xs;
            for (int64_t j = 0; j < on; j++)
                u[xi][j] += p[j];
        }
    }
    for (int col = 0; col < 6; col++) /* z[col] (kh) = G^T dU[., col] */
        if (kh == 5)
            g5t(u[col], u[6 + col], u[12 + col], u[18 + col], u[24 + col], u[30 + col], z[col]);
        else
            g3t(u[col], u[6 + col], u[12 + col], u[18 + col], u[24 + col], u[30 + col], z[col]);
    for (int k = 0; k < kh; k++) { /* dw row k = z[., k] G */
        if (kh == 5)
            g5t(z[0][k], z[1][k], z[2][k], z[3][k], z[4][k], z[5][k], g);
        else
            g3t(z[0][k], z[1][k], z[2][k], z[3][k], z[4][k], z[5][k], g);
        for (int kw = 0; kw < kh; kw++) {
            float *d = dst + (k * kh + kw) * ts;
            if (on == WCH)
                memcpy(d, g[kw], sizeof g[kw]);
            else
                memcpy(d, g[kw], (size_t)on * sizeof(float));
        }
    }
}

/* dU[xi] (+)= V[xi]^T Yh[xi] over tn tiles, for the points [x0, x1). */
static void dw_products(const conv_geom *q, const float *V, int64_t vs, const float *Y, int64_t ys,
                        int64_t tn, float *dU, int64_t x0, int64_t x1, bool acc)
{
    const int64_t C = q->C, O = q->O, vl = v_ld(q), ml = m_ld(q), nb = (O + NR - 1) / NR;
    for (int64_t xi = x0; xi < x1; xi++) {
        const float *Vx = V + xi * vs, *Yx = Y + xi * ys;
        float *dUx = dU + xi * C * O;
        for (int64_t ob = 0; ob < nb; ob++) {
            const int nr = (int)min64(NR, O - ob * NR);
            for (int64_t c0 = 0; c0 < C; c0 += MR)
                ukr_tn(tn, Vx + c0, vl, Yx + ob * NR, ml, dUx + c0 * O + ob * NR, O,
                       (int)min64(MR, C - c0), nr, acc);
        }
    }
}

/* Transformed blocks V and Yh of tiles [t0, t0 + tn), each thread its share,
 * then the threads meet. */
static void dw_fill(const slim_kernel_ctx *c, const conv_geom *b, const float *x, const float *dy,
                    int64_t t0, int64_t tn, float *V, float *Y)
{
    int64_t lo, hi;
    slim_split(tn, c->ith, c->nth, &lo, &hi);
    if (hi > lo) {
        input_block(b, x, t0 + lo, hi - lo, V + lo * v_ld(b));
        dy_block(b, dy, t0 + lo, hi - lo, Y + lo * m_ld(b), m_ps(b, b->TB));
    }
    c->sync(c);
}

/* All threads: dw (r,r,C,O) = the filter gradient of q for input x and output
 * gradient dy, overwritten; dU and vy: slim__wino_du_floats and
 * slim__wino_vy_floats floats shared by them. dU is first written after the
 * threads meet, so it may reuse what they read before the call. The tiles go
 * in blocks, and the threads meet twice a block: once V and Yh are filled,
 * and once each has summed its points.
 *
 * When every tile fits one block (ResNet-50's 7x7 layers: 64 tiles), each of
 * the first nw threads instead takes an equal share of dw's rows, WDW_ROWS at
 * a time: the 36 products of those rows, panel by panel, go to the thread's
 * ubuf (slim__wino_u_floats) and straight through G^T . G, so dU never
 * exists. Through dU, its 36 x 512 x 512 floats (38 MB) went out to memory
 * and were read back a line per point, and that read was 44% of the layer's
 * filter gradient on one thread (perf); 512->512 at 7x7, 1 thread: 82-90 ->
 * 38-41 ms (conv_bench, 3 alternating runs). The sums are the same in the
 * same order: the same bits.
 *
 * With part (slim__wino_dw_split: up to WDW_SPLIT_CO channels, several
 * blocks), each worker sums its own share of the tiles into its own dU and
 * blocks, and the threads meet once; the transform adds the workers' dU in
 * worker order. ResNet-50's 2-thread training step, 3 alternating pairs
 * against the shared blocks: the backward of its seven 3x3 layers at 56x56
 * and 28x28, 166-173 -> 150-157 ms. */
void slim__wino_dw(const slim_kernel_ctx *c, const conv_geom *q, const float *x, const float *dy,
                   float *dw, float *dU, float *vy, float *ubuf, int nw, float *part,
                   int64_t pstride)
{
    const int64_t C = q->C, O = q->O, CO = C * O, tiles = n_tiles(q), vl = v_ld(q), ml = m_ld(q);
    const int kh = (int)q->KH;
    conv_geom b = *q; /* the blocks' geometry: input_block strides planes by TB */
    b.TB = dw_block(q);
    const int64_t vs = v_ps(q, b.TB), ys = m_ps(q, b.TB);
    float *V = vy, *Y = vy ? V + round16((size_t)(WT * vs)) : NULL;
    const int64_t nb = (O + NR - 1) / NR;
    if (tiles <= b.TB) {
        dw_fill(c, &b, x, dy, 0, tiles, V, Y);
        /* equal shares of MR-row blocks, in tasks of at most WDW_ROWS rows */
        int64_t lo = 0, hi = 0;
        if (c->ith < nw)
            slim_split((C + MR - 1) / MR, c->ith, nw, &lo, &hi);
        float(*u)[WDW_ROWS][NR] = (float(*)[WDW_ROWS][NR])ubuf;
        for (int64_t c0 = lo * MR, c1 = min64(C, hi * MR); c0 < c1; c0 += WDW_ROWS) {
            const int64_t rows = min64(WDW_ROWS, c1 - c0);
            for (int64_t ob = 0; ob < nb; ob++) {
                const int nr = (int)min64(NR, O - ob * NR);
                for (int xi = 0; xi < WT; xi++)
                    for (int64_t i0 = 0; i0 < rows; i0 += MR)
                        ukr_tn(tiles, V + xi * vs + c0 + i0, vl, Y + xi * ys + ob * NR, ml,
                               &u[xi][i0][0], NR, (int)min64(MR, rows - i0), nr, false);
                for (int64_t i = 0; i < rows; i++)
                    for (int j = 0; j < nr; j += WCH)
                        dw_chunk(kh, &u[0][i][j], WDW_ROWS * NR, min64(WCH, nr - j),
                                 dw + (c0 + i) * O + ob * NR + j, CO, 1, 0);
            }
        }
        c->sync(c);
        return;
    }
    int nsrc = 1;
    int64_t ss = 0;
    if (part) {
        /* each worker sums its own share of the tiles into its own dU,
         * block by block, meeting the others only once at the end */
        nsrc = nw;
        ss = pstride;
        dU = part;
        if (c->ith < nw) {
            float *dUt = part + c->ith * pstride;
            V = dUt + slim__wino_du_floats(q);
            Y = V + round16((size_t)(WT * vs));
            int64_t lo, hi;
            slim_split(tiles, c->ith, nw, &lo, &hi);
            if (hi <= lo)
                memset(dUt, 0, (size_t)(WT * CO) * sizeof(float));
            for (int64_t t0 = lo; t0 < hi; t0 += b.TB) {
                const int64_t tn = min64(b.TB, hi - t0);
                input_block(&b, x, t0, tn, V);
                dy_block(&b, dy, t0, tn, Y, ys);
                dw_products(q, V, vs, Y, ys, tn, dUt, 0, WT, t0 > lo);
            }
        }
        c->sync(c);
    } else {
        int64_t x0, x1;
        slim_split(WT, c->ith, c->nth, &x0, &x1); /* the points this thread sums */
        for (int64_t t0 = 0; t0 < tiles; t0 += b.TB) {
            const int64_t tn = min64(b.TB, tiles - t0);
            dw_fill(c, &b, x, dy, t0, tn, V, Y);
            dw_products(q, V, vs, Y, ys, tn, dU, x0, x1, t0 > 0);
            c->sync(c); /* V and Yh are refilled by the next block */
        }
    }
    /* dw(c, o) = G^T dU(c, o) G, by rows c, o in chunks as vector lanes */
    int64_t r0, r1;
    slim_split(C, c->ith, c->nth, &r0, &r1);
    for (int64_t ci = r0; ci < r1; ci++)
        for (int64_t o0 = 0; o0 < O; o0 += WCH)
            dw_chunk(kh, dU + ci * O + o0, CO, min64(WCH, O - o0), dw + ci * O + o0, CO, nsrc, ss);
    c->sync(c);
}
