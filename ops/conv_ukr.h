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
 * copy_run/zero_run are the short copies of im2col, inline instead of a libc
 * call per run.
 */
#ifndef SLIM_OPS_CONV_UKR_H
#define SLIM_OPS_CONV_UKR_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#define MR 6

#if defined(__AVX512F__)

#define NR 32
typedef __m512 vfloat;
typedef __mmask16 vmask;
#define VW 16
#define vzero() _mm512_setzero_ps()
#define vload(p) _mm512_loadu_ps(p)
#define vstore(p, v) _mm512_storeu_ps(p, v)
#define vload_m(p, m) _mm512_maskz_loadu_ps(m, p)
#define vstore_m(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define vbcast(p) _mm512_set1_ps(*(p))
#define vfma(a, b, c) _mm512_fmadd_ps(a, b, c)
#define vadd(a, b) _mm512_add_ps(a, b)

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
#define vzero() _mm256_setzero_ps()
#define vload(p) _mm256_loadu_ps(p)
#define vstore(p, v) _mm256_storeu_ps(p, v)
#define vload_m(p, m) _mm256_maskload_ps(p, m)
#define vstore_m(p, m, v) _mm256_maskstore_ps(p, m, v)
#define vbcast(p) _mm256_broadcast_ss(p)
#define vfma(a, b, c) _mm256_fmadd_ps(a, b, c)
#define vadd(a, b) _mm256_add_ps(a, b)

static inline vmask lanes_below(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#else
#define NR 16
#endif

#ifdef VW

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

/* C (mr x nr, ld ldc) = A B (+ bias) (+ C when acc): row i of A is a[i][0..d)
 * (all MR pointers valid), B a packed panel (d x NR, zero beyond nr), bias
 * NULL or nr values. */
static void ukr_nn(int64_t d, const float *const *a, const float *b, float *c, int64_t ldc, int mr,
                   int nr, const float *bias, bool acc)
{
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
    UKR_ZERO;
#pragma GCC unroll 4
    for (int64_t l = 0; l < d; l++, b += NR) {
        vfloat b0 = vload(b), b1 = vload(b + VW);
        UKR_ROW(0, a0 + l);
        UKR_ROW(1, a1 + l);
        UKR_ROW(2, a2 + l);
        UKR_ROW(3, a3 + l);
        UKR_ROW(4, a4 + l);
        UKR_ROW(5, a5 + l);
    }
    vmask m0 = lanes_below(nr), m1 = lanes_below(nr - VW);
    vfloat z0 = vzero(), z1 = z0;
    if (bias) {
        z0 = vload_m(bias, m0);
        z1 = vload_m(bias + VW, m1);
    }
    UKR_PUT(z0, z1, acc);
}

/* C (mr x nr, ld ldc) = A^T B (+ C when acc) over d rows (see the top of the file). */
static void ukr_tn(int64_t d, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                   int64_t ldc, int mr, int nr, bool acc)
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
            UKR_ROW(0, a);
            UKR_ROW(1, a + o1);
            UKR_ROW(2, a + o2);
            UKR_ROW(3, a + o3);
            UKR_ROW(4, a + o4);
            UKR_ROW(5, a + o5);
        }
    } else {
        for (int64_t l = 0; l < d; l++, a += lda, b += ldb) {
            vfloat b0 = vload_m(b, m0), b1 = vload_m(b + VW, m1);
            UKR_ROW(0, a);
            UKR_ROW(1, a + o1);
            UKR_ROW(2, a + o2);
            UKR_ROW(3, a + o3);
            UKR_ROW(4, a + o4);
            UKR_ROW(5, a + o5);
        }
    }
    vfloat z = vzero();
    UKR_PUT(z, z, acc);
}

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

static void ukr_nn(int64_t d, const float *const *a, const float *b, float *c, int64_t ldc, int mr,
                   int nr, const float *bias, bool acc)
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

static void ukr_tn(int64_t d, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                   int64_t ldc, int mr, int nr, bool acc)
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
