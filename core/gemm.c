/* core/gemm.c - BLIS sgemm, always single-threaded per call.
 *
 * One thread budget (--num_threads) covers the whole process, so BLIS never
 * starts threads of its own: each pool thread calls it on its own tile
 * (DESIGN.md: "one thread budget"). A per-call rntm pins BLIS to 1 thread
 * whatever BLIS_NUM_THREADS says. */
#include "core/gemm.h"

#include <blis.h>

void slim__sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                 int64_t ldc)
{
    if (m <= 0 || n <= 0)
        return;
    if (k <= 0) {
        /* BLIS would scale C by beta; do the same without calling it */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return;
    }
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &rntm);
    float al = alpha, be = beta;
    bli_sgemm_ex(trans_a ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
                 trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, (dim_t)m, (dim_t)n, (dim_t)k, &al,
                 (float *)a, (inc_t)lda, 1, (float *)b, (inc_t)ldb, 1, &be, c, (inc_t)ldc, 1, NULL,
                 &rntm);
}
