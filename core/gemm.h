/* core/gemm.h - the one GEMM entry point (BLIS underneath). */
#ifndef SLIM_CORE_GEMM_H
#define SLIM_CORE_GEMM_H

#include <slim/op.h>

/* Row-major C = alpha*op(A)*op(B) + beta*C on the calling thread only: the
 * thread budget is the executor's, so callers split the work into tiles. */
/* Bytes of slack after every buffer that may reach BLIS: Debian's BLIS 0.9.0
 * small/skinny (sup) kernels for Haswell/Zen read a few elements past the end
 * of an operand (flame/blis issue #635, fixed upstream by pull request #824),
 * which can fault at a page boundary. Arenas, parameters, slots and kernel
 * buffers are allocated with this much extra. */
#define SLIM__BLIS_SLACK 256

void slim__sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                 int64_t ldc);

#endif
