/*
 * ops/conv_ukr.h - the register-blocked GEMM micro-kernels of the conv2d and
 * fully_connected kernels (ops/conv*.c, ops/fc.c; static functions).
 *
 * Two kernels compute an MR x NR block of C:
 *   ukr_nn: C = A B (+ bias) (+ C): A rows given by MR pointers (depth
 *           contiguous), B a packed panel (depth x NR, zero-padded columns);
 *   ukr_tn: C = A^T B (+ C when acc) over d rows: row l of A gives MR
 *           consecutive values at a + l*lda, row l of B NR values at
 *           b + l*ldb (neither packed).
 * MR rows x NR columns = 12 vector accumulators; per depth step 2 vector
 * loads of B and MR broadcasts of A feed 12 FMAs (2 FMA pipes of 4-cycle
 * latency need at least 8 independent chains). The vector width follows the
 * build: AVX-512 (NR 32), AVX2+FMA (NR 16), else plain loops (NR 16) that the
 * compiler vectorizes as it can. Tails (mr < MR, nr < NR) are masked, so
 * callers need no padding beyond the packed panel's.
 * Two more read A where it lies in a zero-padded image instead of an im2col
 * tile, for layers whose filter rows are short runs (few input channels):
 *   ukr_nn_seg: ukr_nn over nseg runs of depth run, run s of row i at
 *           a[i] + s*sstride, B contiguous over all of them (the packed
 *           filter's KH rows), summed in registers;
 *   ukr_tn_seg: ukr_tn over nseg segments, segment s len[s] rows of A from
 *           as[s] (ld lda) against len[s] rows of B from bs[s] (ld ldb),
 *           summed in registers in segment order.
 * Each sums in the same order as its plain kernel over the same depth, so
 * results are bitwise those of the im2col path.
 * One more takes A packed as BLIS does, for products whose operands are
 * copied into panels first (ops/conv_pw.c):
 *   ukr_pp: C = A B (+ C when acc), A a micro-panel of MR rows interleaved
 *           (a[l*MR + i], zero-padded rows), B a packed panel as for ukr_nn;
 *           both read as one stream each.
 * copy_run/zero_run are the short copies of im2col, inline instead of a libc
 * call per run.
 */
#ifndef SLIM_OPS_CONV_UKR_H
#define SLIM_OPS_CONV_UKR_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ops/act.h"
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#define MR 6
/* Depth chunk of the forward-shaped products (GEMM, Winograd): the chunk of
 * a B panel (16 or 32 KB) stays in L1. */
#define KCHUNK 256
#define MR2 (2 * MR) /* rows of the narrow blocks */

#if defined(__AVX512F__)

#define NR 32
typedef __m512 vfloat;
typedef __mmask16 vmask;
#define VW 16
#define NARROW_NR VW /* the narrow blocks take panels of at most this many columns */
#define vzero() _mm512_setzero_ps()
#define vload(p) _mm512_loadu_ps(p)
#define vstore(p, v) _mm512_storeu_ps(p, v)
#define vstream(p, v) _mm512_stream_ps(p, v)
#define vload_m(p, m) _mm512_maskz_loadu_ps(m, p)
#define vstore_m(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define vbcast(p) _mm512_set1_ps(*(p))
#define vfma(a, b, c) _mm512_fmadd_ps(a, b, c)
#define vadd(a, b) _mm512_add_ps(a, b)
#define vmul(a, b) _mm512_mul_ps(a, b)
#define vmax(a, b) _mm512_max_ps(a, b)
#define vmin(a, b) _mm512_min_ps(a, b)
#define vset1(x) _mm512_set1_ps(x)

/* Lanes 0..n-1 of a vector set. */
static inline vmask lanes_below(int n)
{
    return n <= 0 ? 0 : n >= VW ? (vmask)0xffff : (vmask)((1u << n) - 1);
}

#elif defined(__AVX2__) && defined(__FMA__)

#define NR 16
typedef __m256 vfloat;
typedef __m256i vmask;
#define VW 8
#define NARROW_NR VW
#define vzero() _mm256_setzero_ps()
#define vload(p) _mm256_loadu_ps(p)
#define vstore(p, v) _mm256_storeu_ps(p, v)
#define vstream(p, v) _mm256_stream_ps(p, v)
#define vload_m(p, m) _mm256_maskload_ps(p, m)
#define vstore_m(p, m, v) _mm256_maskstore_ps(p, m, v)
#define vbcast(p) _mm256_broadcast_ss(p)
#define vfma(a, b, c) _mm256_fmadd_ps(a, b, c)
#define vadd(a, b) _mm256_add_ps(a, b)
#define vmul(a, b) _mm256_mul_ps(a, b)
#define vmax(a, b) _mm256_max_ps(a, b)
#define vmin(a, b) _mm256_min_ps(a, b)
#define vset1(x) _mm256_set1_ps(x)

static inline vmask lanes_below(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#else
#define NR 16
#define NARROW_NR (NR / 2)
#endif

#ifdef VW
/* An activation of ops/act.h on a vector, as act_fwd: the post step's
 * (ops/conv_gemm.c's ukr_nn_post, ops/conv_dw.c's depthwise pixels). */
static inline __attribute__((always_inline)) vfloat vact(int act, vfloat v)
{
    if (act == ACT_HARD_SWISH) /* act_fwd's operations in its order: the same bits */
        return vmul(vmul(v, vmin(vmax(vadd(v, vset1(3.0f)), vzero()), vset1(6.0f))),
                    vset1(1.0f / 6.0f));
    if (act != ACT_NONE)
        v = vmax(v, vzero());
    if (act == ACT_RELU6)
        v = vmin(v, vset1(6.0f));
    return v;
}

/* c[0..nr) = v (+ c[0..nr) when acc); the row is two vectors. */
static inline void put_row(float *c, vfloat v0, vfloat v1, int nr, vmask m0, vmask m1, bool acc)
{
    if (nr == NR) {
        if (acc) {
            v0 = vadd(v0, vload(c));
            v1 = vadd(v1, vload(c + VW));
        }
        vstore(c, v0);
        vstore(c + VW, v1);
        return;
    }
    if (acc) {
        v0 = vadd(v0, vload_m(c, m0));
        v1 = vadd(v1, vload_m(c + VW, m1));
    }
    vstore_m(c, m0, v0);
    vstore_m(c + VW, m1, v1);
}

#define UKR_ZERO                                                                                   \
    vfloat c00 = vzero(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,        \
           c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, t

/* One row of the block: a broadcast of A times the two vectors of B. */
#define UKR_ROW(i, src)                                                                            \
    t = vbcast(src);                                                                               \
    c##i##0 = vfma(t, b0, c##i##0);                                                                \
    c##i##1 = vfma(t, b1, c##i##1)

/* The block's six rows: ukr_nn's from its row pointers a0..a5 at offset off,
 * ukr_tn's from MR consecutive values at a (o1..o5: offsets of rows 1-5). */
#define UKR_NN_ROWS(off)                                                                           \
    UKR_ROW(0, a0 + (off));                                                                        \
    UKR_ROW(1, a1 + (off));                                                                        \
    UKR_ROW(2, a2 + (off));                                                                        \
    UKR_ROW(3, a3 + (off));                                                                        \
    UKR_ROW(4, a4 + (off));                                                                        \
    UKR_ROW(5, a5 + (off))

#define UKR_TN_ROWS(a)                                                                             \
    UKR_ROW(0, a);                                                                                 \
    UKR_ROW(1, a + o1);                                                                            \
    UKR_ROW(2, a + o2);                                                                            \
    UKR_ROW(3, a + o3);                                                                            \
    UKR_ROW(4, a + o4);                                                                            \
    UKR_ROW(5, a + o5)

#define UKR_PUT(z0, z1, acc)                                                                       \
    put_row(c, vadd(c00, z0), vadd(c01, z1), nr, m0, m1, acc);                                     \
    if (mr > 1)                                                                                    \
        put_row(c + ldc, vadd(c10, z0), vadd(c11, z1), nr, m0, m1, acc);                           \
    if (mr > 2)                                                                                    \
        put_row(c + 2 * ldc, vadd(c20, z0), vadd(c21, z1), nr, m0, m1, acc);                       \
    if (mr > 3)                                                                                    \
        put_row(c + 3 * ldc, vadd(c30, z0), vadd(c31, z1), nr, m0, m1, acc);                       \
    if (mr > 4)                                                                                    \
        put_row(c + 4 * ldc, vadd(c40, z0), vadd(c41, z1), nr, m0, m1, acc);                       \
    if (mr > 5)                                                                                    \
    put_row(c + 5 * ldc, vadd(c50, z0), vadd(c51, z1), nr, m0, m1, acc)

/* The column masks m0, m1 of nr columns and the bias vectors z0, z1 (0 without one). */
#define UKR_BIAS(bias)                                                                             \
    vmask m0 = lanes_below(nr), m1 = lanes_below(nr - VW);                                         \
    vfloat z0 = vzero(), z1 = z0;                                                                  \
    if (bias) {                                                                                    \
        z0 = vload_m(bias, m0);                                                                    \
        z1 = vload_m(bias + VW, m1);                                                               \
    }

/* ukr_nn's block sum: the 12 accumulators (and t) of A's six rows a[0..5]
 * over depth d times the packed panel b (advanced past it). */
#define UKR_NN_SUM(a, b, d)                                                                        \
    const float *a0 = (a)[0], *a1 = (a)[1], *a2 = (a)[2], *a3 = (a)[3], *a4 = (a)[4],              \
                *a5 = (a)[5];                                                                      \
    UKR_ZERO;                                                                                      \
    _Pragma("GCC unroll 4") for (int64_t l = 0; l < (d); l++, (b) += NR)                           \
    {                                                                                              \
        vfloat b0 = vload(b), b1 = vload((b) + VW);                                                \
        UKR_NN_ROWS(l);                                                                            \
    }

/* C (mr x nr, ld ldc) = A B (+ bias) (+ C when acc): row i of A is a[i][0..d)
 * (all MR pointers valid), B a packed panel (d x NR, zero beyond nr), bias
 * NULL or nr values. */
__attribute__((unused)) static void ukr_nn(int64_t d, const float *const *a, const float *b,
                                           float *c, int64_t ldc, int mr, int nr, const float *bias,
                                           bool acc)
{
    UKR_NN_SUM(a, b, d);
    UKR_BIAS(bias);
    UKR_PUT(z0, z1, acc);
}

/* C (mr x nr, ld ldc) = A^T B (+ C when acc) over d rows (see the top of the file). */
__attribute__((unused)) static void ukr_tn(int64_t d, const float *a, int64_t lda, const float *b,
                                           int64_t ldb, float *c, int64_t ldc, int mr, int nr,
                                           bool acc)
{
    /* rows past mr read row 0 again (in bounds) and are not stored */
    const int64_t o1 = mr > 1, o2 = mr > 2 ? 2 : 0, o3 = mr > 3 ? 3 : 0, o4 = mr > 4 ? 4 : 0,
                  o5 = mr > 5 ? 5 : 0;
    vmask m0 = lanes_below(nr), m1 = lanes_below(nr - VW);
    UKR_ZERO;
    if (nr == NR) {
#pragma GCC unroll 4
        for (int64_t l = 0; l < d; l++, a += lda, b += ldb) {
            vfloat b0 = vload(b), b1 = vload(b + VW);
            UKR_TN_ROWS(a);
        }
    } else {
        for (int64_t l = 0; l < d; l++, a += lda, b += ldb) {
            vfloat b0 = vload_m(b, m0), b1 = vload_m(b + VW, m1);
            UKR_TN_ROWS(a);
        }
    }
    vfloat z = vzero();
    UKR_PUT(z, z, acc);
}

__attribute__((unused)) static void ukr_nn_seg(int64_t run, int64_t nseg, int64_t sstride,
                                               const float *const *a, const float *b, float *c,
                                               int64_t ldc, int mr, int nr, const float *bias)
{
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
    UKR_ZERO;
    for (int64_t sg = 0; sg < nseg; sg++) {
        const int64_t o = sg * sstride;
#pragma GCC unroll 4
        for (int64_t l = 0; l < run; l++, b += NR) {
            vfloat b0 = vload(b), b1 = vload(b + VW);
            UKR_NN_ROWS(o + l);
        }
    }
    UKR_BIAS(bias);
    UKR_PUT(z0, z1, false);
}

__attribute__((unused)) static void ukr_tn_seg(int64_t nseg, const float *const *as,
                                               const float *const *bs, const int64_t *len,
                                               int64_t lda, int64_t ldb, float *c, int64_t ldc,
                                               int mr, int nr, bool acc)
{
    const int64_t o1 = mr > 1, o2 = mr > 2 ? 2 : 0, o3 = mr > 3 ? 3 : 0, o4 = mr > 4 ? 4 : 0,
                  o5 = mr > 5 ? 5 : 0;
    vmask m0 = lanes_below(nr), m1 = lanes_below(nr - VW);
    UKR_ZERO;
    for (int64_t sg = 0; sg < nseg; sg++) {
        const float *a = as[sg], *b = bs[sg];
        for (int64_t l = 0; l < len[sg]; l++, a += lda, b += ldb) {
            vfloat b0, b1;
            if (nr == NR) {
                b0 = vload(b);
                b1 = vload(b + VW);
            } else {
                b0 = vload_m(b, m0);
                b1 = vload_m(b + VW, m1);
            }
            UKR_TN_ROWS(a);
        }
    }
    vfloat z = vzero();
    UKR_PUT(z, z, acc);
}

/* C (mr x nr, ld ldc) = A B (+ C when acc) over depth d: A packed (a[l*MR + i]),
 * B a packed panel (d x NR). */
__attribute__((unused)) static void ukr_pp(int64_t d, const float *a, const float *b, float *c,
                                           int64_t ldc, int mr, int nr, bool acc)
{
    UKR_ZERO;
#pragma GCC unroll 4
    for (int64_t l = 0; l < d; l++, a += MR, b += NR) {
        vfloat b0 = vload(b), b1 = vload(b + VW);
        UKR_ROW(0, a);
        UKR_ROW(1, a + 1);
        UKR_ROW(2, a + 2);
        UKR_ROW(3, a + 3);
        UKR_ROW(4, a + 4);
        UKR_ROW(5, a + 5);
    }
    vmask m0 = lanes_below(nr), m1 = lanes_below(nr - VW);
    vfloat z = vzero();
    UKR_PUT(z, z, acc);
}

/* ---- narrow blocks: MR2 rows by one vector (nr <= VW) ---------------------
 * For outputs of at most VW columns (16 channels with AVX-512, 8 with AVX2)
 * the MR x 2-vector block spends half its FMAs on zero padding; twice the
 * rows by one vector keeps 12 accumulators busy on real columns. The same
 * contracts as ukr_nn/ukr_tn with MR2 rows (B panels keep their NR stride),
 * and the same summation order per element, so results do not depend on
 * which block computed them. */

#define NARROW_ZERO                                                                                \
    vfloat d0 = vzero(), d1 = d0, d2 = d0, d3 = d0, d4 = d0, d5 = d0, d6 = d0, d7 = d0, d8 = d0,   \
           d9 = d0, d10 = d0, d11 = d0

#define NARROW_STEP(src0, src1, src2, src3, src4, src5, src6, src7, src8, src9, src10, src11)      \
    d0 = vfma(vbcast(src0), b0, d0);                                                               \
    d1 = vfma(vbcast(src1), b0, d1);                                                               \
    d2 = vfma(vbcast(src2), b0, d2);                                                               \
    d3 = vfma(vbcast(src3), b0, d3);                                                               \
    d4 = vfma(vbcast(src4), b0, d4);                                                               \
    d5 = vfma(vbcast(src5), b0, d5);                                                               \
    d6 = vfma(vbcast(src6), b0, d6);                                                               \
    d7 = vfma(vbcast(src7), b0, d7);                                                               \
    d8 = vfma(vbcast(src8), b0, d8);                                                               \
    d9 = vfma(vbcast(src9), b0, d9);                                                               \
    d10 = vfma(vbcast(src10), b0, d10);                                                            \
    d11 = vfma(vbcast(src11), b0, d11)

/* Rows 0..mr-1 of the block, one (masked) vector each (+ C when acc). */
static inline void narrow_put(float *c, int64_t ldc, int mr, int nr, const vfloat *d, vfloat z,
                              bool acc)
{
    vmask m = lanes_below(nr);
    for (int i = 0; i < mr; i++, c += ldc) {
        vfloat v = vadd(d[i], z);
        if (nr == VW) {
            if (acc)
                v = vadd(v, vload(c));
            vstore(c, v);
        } else {
            if (acc)
                v = vadd(v, vload_m(c, m));
            vstore_m(c, m, v);
        }
    }
}

#define NARROW_PUT(z, acc)                                                                         \
    do {                                                                                           \
        vfloat rows_[MR2] = {d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, d11};                    \
        narrow_put(c, ldc, mr, nr, rows_, z, acc);                                                 \
    } while (0)

/* ukr_nn for nr <= VW and up to MR2 rows (all MR2 pointers valid). */
__attribute__((unused)) static void ukr_nn_narrow(int64_t d, const float *const *a, const float *b,
                                                  float *c, int64_t ldc, int mr, int nr,
                                                  const float *bias, bool acc)
{
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
    const float *a6 = a[6], *a7 = a[7], *a8 = a[8], *a9 = a[9], *a10 = a[10], *a11 = a[11];
    NARROW_ZERO;
#pragma GCC unroll 4
    for (int64_t l = 0; l < d; l++, b += NR) {
        vfloat b0 = vload(b);
        NARROW_STEP(a0 + l, a1 + l, a2 + l, a3 + l, a4 + l, a5 + l, a6 + l, a7 + l, a8 + l, a9 + l,
                    a10 + l, a11 + l);
    }
    vfloat z = bias ? vload_m(bias, lanes_below(nr)) : vzero();
    NARROW_PUT(z, acc);
}

/* ukr_tn for nr <= VW and up to MR2 rows. */
__attribute__((unused)) static void ukr_tn_narrow(int64_t d, const float *a, int64_t lda,
                                                  const float *b, int64_t ldb, float *c,
                                                  int64_t ldc, int mr, int nr, bool acc)
{
    int64_t o[MR2];
    for (int i = 0; i < MR2; i++)
        o[i] = i < mr ? i : 0; /* rows past mr read row 0 again */
    const int64_t o1 = o[1], o2 = o[2], o3 = o[3], o4 = o[4], o5 = o[5], o6 = o[6], o7 = o[7],
                  o8 = o[8], o9 = o[9], o10 = o[10], o11 = o[11];
    vmask m = lanes_below(nr);
    NARROW_ZERO;
    if (nr == VW) {
#pragma GCC unroll 4
        for (int64_t l = 0; l < d; l++, a += lda, b += ldb) {
            vfloat b0 = vload(b);
            NARROW_STEP(a, a + o1, a + o2, a + o3, a + o4, a + o5, a + o6, a + o7, a + o8, a + o9,
                        a + o10, a + o11);
        }
    } else {
        for (int64_t l = 0; l < d; l++, a += lda, b += ldb) {
            vfloat b0 = vload_m(b, m);
            NARROW_STEP(a, a + o1, a + o2, a + o3, a + o4, a + o5, a + o6, a + o7, a + o8, a + o9,
                        a + o10, a + o11);
        }
    }
    NARROW_PUT(vzero(), acc);
}

#if defined(__AVX512F__)
/* ---- wide blocks: MR2 rows by NR (AVX-512 only) ------------------------------
 * ukr_nn on MR2 rows at once: 24 accumulators fit in AVX-512's 32 registers,
 * and each pair of B vectors loaded feeds 24 FMAs instead of 12, which halves
 * the B traffic from L2 per FMA (where a layer's panels do not fit in L1).
 * All MR2 rows (mr == MR2); the same per-element summation order as ukr_nn,
 * so the results are bitwise those of two MR-row calls. Not inlined: the
 * twelve row pointers need the caller's registers. */
/* All MR2 rows of a wide block: rows 0-5 as UKR_PUT (mr == MR), then 6-11. */
#define UKR_PUT_WIDE(z0, z1, acc)                                                                  \
    UKR_PUT(z0, z1, acc);                                                                          \
    c += MR * ldc;                                                                                 \
    put_row(c, vadd(c60, z0), vadd(c61, z1), nr, m0, m1, acc);                                     \
    put_row(c + ldc, vadd(c70, z0), vadd(c71, z1), nr, m0, m1, acc);                               \
    put_row(c + 2 * ldc, vadd(c80, z0), vadd(c81, z1), nr, m0, m1, acc);                           \
    put_row(c + 3 * ldc, vadd(c90, z0), vadd(c91, z1), nr, m0, m1, acc);                           \
    put_row(c + 4 * ldc, vadd(c100, z0), vadd(c101, z1), nr, m0, m1, acc);                         \
    put_row(c + 5 * ldc, vadd(c110, z0), vadd(c111, z1), nr, m0, m1, acc)

#define UKR_HAS_NN_WIDE 1
__attribute__((noinline, unused)) static void ukr_nn_wide(int64_t d, const float *const *a,
                                                          const float *b, float *c, int64_t ldc,
                                                          int nr, const float *bias, bool acc)
{
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
    const float *a6 = a[6], *a7 = a[7], *a8 = a[8], *a9 = a[9], *a10 = a[10], *a11 = a[11];
    UKR_ZERO;
    vfloat c60 = c00, c61 = c00, c70 = c00, c71 = c00, c80 = c00, c81 = c00, c90 = c00, c91 = c00,
           c100 = c00, c101 = c00, c110 = c00, c111 = c00;
#pragma GCC unroll 4
    for (int64_t l = 0; l < d; l++, b += NR) {
        vfloat b0 = vload(b), b1 = vload(b + VW);
        UKR_NN_ROWS(l);
        UKR_ROW(6, a6 + l);
        UKR_ROW(7, a7 + l);
        UKR_ROW(8, a8 + l);
        UKR_ROW(9, a9 + l);
        UKR_ROW(10, a10 + l);
        UKR_ROW(11, a11 + l);
    }
    const int mr = MR;
    UKR_BIAS(bias);
    UKR_PUT_WIDE(z0, z1, acc);
}

/* ukr_tn on MR2 rows at once (MR2 consecutive values of A per depth step,
 * full NR columns): the same 24 accumulators and the same summation order
 * per element as ukr_tn. */
#define UKR_HAS_TN_WIDE 1
__attribute__((noinline, unused)) static void ukr_tn_wide(int64_t d, const float *a, int64_t lda,
                                                          const float *b, int64_t ldb, float *c,
                                                          int64_t ldc, bool acc)
{
    UKR_ZERO;
    vfloat c60 = c00, c61 = c00, c70 = c00, c71 = c00, c80 = c00, c81 = c00, c90 = c00, c91 = c00,
           c100 = c00, c101 = c00, c110 = c00, c111 = c00;
    const int64_t o1 = 1, o2 = 2, o3 = 3, o4 = 4, o5 = 5;
#pragma GCC unroll 2
    for (int64_t l = 0; l < d; l++, a += lda, b += ldb) {
        vfloat b0 = vload(b), b1 = vload(b + VW);
        UKR_TN_ROWS(a);
        UKR_ROW(6, a + 6);
        UKR_ROW(7, a + 7);
        UKR_ROW(8, a + 8);
        UKR_ROW(9, a + 9);
        UKR_ROW(10, a + 10);
        UKR_ROW(11, a + 11);
    }
    const int mr = MR, nr = NR;
    const vmask m0 = lanes_below(NR), m1 = m0;
    const vfloat z = vzero();
    UKR_PUT_WIDE(z, z, acc);
}
#endif

/* dst[0..n) = src[0..n). */
static inline void copy_run(float *dst, const float *src, int64_t n)
{
    int64_t i = 0;
    for (; i + VW <= n; i += VW)
        vstore(dst + i, vload(src + i));
    if (i < n) {
        vmask m = lanes_below((int)(n - i));
        vstore_m(dst + i, m, vload_m(src + i, m));
    }
}

/* dst[0..n) = 0. */
static inline void zero_run(float *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + VW <= n; i += VW)
        vstore(dst + i, vzero());
    if (i < n)
        vstore_m(dst + i, lanes_below((int)(n - i)), vzero());
}

#else /* plain loops: the same contracts */

__attribute__((unused)) static void ukr_nn(int64_t d, const float *const *a, const float *b,
                                           float *c, int64_t ldc, int mr, int nr, const float *bias,
                                           bool acc)
{
    float s[MR][NR] = {{0}};
    for (int64_t l = 0; l < d; l++, b += NR)
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < NR; j++)
                s[i][j] += a[i][l] * b[j];
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++)
            c[i * ldc + j] = s[i][j] + (bias ? bias[j] : 0.0f) + (acc ? c[i * ldc + j] : 0.0f);
}

__attribute__((unused)) static void ukr_tn(int64_t d, const float *a, int64_t lda, const float *b,
                                           int64_t ldb, float *c, int64_t ldc, int mr, int nr,
                                           bool acc)
{
    float s[MR][NR] = {{0}};
    for (int64_t l = 0; l < d; l++, a += lda, b += ldb)
        for (int i = 0; i < mr; i++)
            for (int j = 0; j < nr; j++)
                s[i][j] += a[i] * b[j];
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++)
            c[i * ldc + j] = s[i][j] + (acc ? c[i * ldc + j] : 0.0f);
}

/* Narrow blocks: two MR-row blocks (the same results). */
__attribute__((unused)) static void ukr_nn_seg(int64_t run, int64_t nseg, int64_t sstride,
                                               const float *const *a, const float *b, float *c,
                                               int64_t ldc, int mr, int nr, const float *bias)
{
    float s[MR][NR] = {{0}};
    for (int64_t sg = 0; sg < nseg; sg++)
        for (int64_t l = 0; l < run; l++, b += NR)
            for (int i = 0; i < MR; i++)
                for (int j = 0; j < NR; j++)
                    s[i][j] += a[i][sg * sstride + l] * b[j];
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++)
            c[i * ldc + j] = s[i][j] + (bias ? bias[j] : 0.0f);
}

__attribute__((unused)) static void ukr_tn_seg(int64_t nseg, const float *const *as,
                                               const float *const *bs, const int64_t *len,
                                               int64_t lda, int64_t ldb, float *c, int64_t ldc,
                                               int mr, int nr, bool acc)
{
    float s[MR][NR] = {{0}};
    for (int64_t sg = 0; sg < nseg; sg++)
        for (int64_t l = 0; l < len[sg]; l++)
            for (int i = 0; i < mr; i++)
                for (int j = 0; j < nr; j++)
                    s[i][j] += as[sg][l * lda + i] * bs[sg][l * ldb + j];
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++)
            c[i * ldc + j] = s[i][j] + (acc ? c[i * ldc + j] : 0.0f);
}

__attribute__((unused)) static void ukr_pp(int64_t d, const float *a, const float *b, float *c,
                                           int64_t ldc, int mr, int nr, bool acc)
{
    float s[MR][NR] = {{0}};
    for (int64_t l = 0; l < d; l++, a += MR, b += NR)
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < NR; j++)
                s[i][j] += a[i] * b[j];
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++)
            c[i * ldc + j] = s[i][j] + (acc ? c[i * ldc + j] : 0.0f);
}

__attribute__((unused)) static void ukr_nn_narrow(int64_t d, const float *const *a, const float *b,
                                                  float *c, int64_t ldc, int mr, int nr,
                                                  const float *bias, bool acc)
{
    ukr_nn(d, a, b, c, ldc, mr < MR ? mr : MR, nr, bias, acc);
    if (mr > MR)
        ukr_nn(d, a + MR, b, c + MR * ldc, ldc, mr - MR, nr, bias, acc);
}

__attribute__((unused)) static void ukr_tn_narrow(int64_t d, const float *a, int64_t lda,
                                                  const float *b, int64_t ldb, float *c,
                                                  int64_t ldc, int mr, int nr, bool acc)
{
    ukr_tn(d, a, lda, b, ldb, c, ldc, mr < MR ? mr : MR, nr, acc);
    if (mr > MR)
        ukr_tn(d, a + MR, lda, b, ldb, c + MR * ldc, ldc, mr - MR, nr, acc);
}

static inline void copy_run(float *dst, const float *src, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}

static inline void zero_run(float *dst, int64_t n)
{
    memset(dst, 0, (size_t)n * sizeof(float));
}

#endif
#endif /* SLIM_OPS_CONV_UKR_H */
