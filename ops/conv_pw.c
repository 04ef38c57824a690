/*
 * ops/conv_pw.c - the filter gradient of a pointwise convolution from packed
 * panels:
 *
 *   dW (C x O) = X^T (C x M) dY (M x O),   X = x as (M, C), M = N*H*W
 *
 * The in-place kernels of ops/conv_gemm_bwd.c (dw_tile_stream: ukr_tn reading MR
 * channels of a pixel of x and NR of dy where they lie) suit the early layers,
 * whose dW is small and whose x streams once from memory. On the deep layers
 * (ResNet-50's 14x14 and 7x7 blocks, MobileNet's last ones) dW is megabytes and
 * M is short: every tile of rows streamed all of dY's columns through the
 * cache again for each block of MR channels, and the filter gradient ran at a
 * third to half of the machine's peak (1x1 1024->2048 at 7x7: 38 GFLOP/s on
 * one Zen3 core). Here the product is blocked as BLIS does it (Goto's
 * algorithm): KC rows of dY are copied into NR-column panels (in L2), MC
 * channels of those rows of x into MR-row micro-panels (in L2), and the
 * micro-kernel ukr_pp runs a micro-panel against a panel, each one
 * contiguous stream; a finished block of dW is written once per KC rows.
 *
 * Threads own disjoint parts of dW (its rows, or its columns when it has more
 * of them), so nothing is summed across threads, and every element is summed
 * in the same order (KC blocks in order, rows in order within one) whatever
 * the thread count: the results do not depend on it. The split dimension's
 * operand is packed by its owner alone; the other one by every thread, which
 * costs 1/(2 * the owner's share of the split dimension) of the products.
 */
#include <string.h>

#include "ops/conv_pw.h"
#include "ops/conv_ukr.h"

/* Pack x^T rows [0, mc) (input channels c0.., ld ldx) over rows [0, kc) of
 * x into micro-panels of MR channels: ap[(i0 / MR) * kc * MR + l * MR + i]. */
static void pack_xt(const float *x, int64_t ldx, int64_t kc, int64_t mc, bool last_rows, float *ap)
{
    for (int64_t i0 = 0; i0 < mc; i0 += MR, ap += kc * MR) {
        const int64_t mr = min64(MR, mc - i0);
        const float *s = x + i0;
        float *d = ap;
        int64_t l = 0;
#ifdef VW
        /* one vector per row, the next row's store overwriting the lanes past
         * MR; the last row of x is copied by hand (the vector would read past it) */
        if (mr == MR)
            for (const int64_t end = last_rows ? kc - 1 : kc; l < end; l++, d += MR, s += ldx)
                vstore(d, vload(s));
#else
        (void)last_rows;
#endif
        for (; l < kc; l++, d += MR, s += ldx)
            for (int64_t i = 0; i < MR; i++)
                d[i] = i < mr ? s[i] : 0.0f;
    }
}

/* Pack dY rows [0, kc) (ld ldy), columns [0, nc), into NR-column panels:
 * bp[(j0 / NR) * kc * NR + l * NR + j], zero beyond nc. */
static void pack_dy(const float *dy, int64_t ldy, int64_t kc, int64_t nc, float *bp)
{
    for (int64_t j0 = 0; j0 < nc; j0 += NR, bp += kc * NR) {
        const int64_t nr = min64(NR, nc - j0);
        const float *s = dy + j0;
        float *d = bp;
        for (int64_t l = 0; l < kc; l++, d += NR, s += ldy) {
            copy_run(d, s, nr);
            if (nr < NR)
                zero_run(d + nr, NR - nr);
        }
    }
}

bool slim__pw_dw_packed(const conv_geom *f)
{
    return f->pointwise && f->G == 1 && f->C * f->O >= PW_MIN_CO;
}

/* Whether the threads split dW by columns (else by rows): the operand of the
 * other dimension is packed by every thread, so split the larger one. */
static bool split_cols(const conv_geom *f)
{
    return f->O > f->C;
}

size_t slim__pw_dw_ws_floats(const conv_geom *f, int nth)
{
    int64_t cols = f->O;
    if (split_cols(f))
        cols = (f->O + nth - 1) / nth;
    cols = min64(PW_NC, (cols + NR - 1) / NR * NR);
    /* + VW: the last micro-panel's vector stores run past it */
    return round16((size_t)(PW_KC * cols)) + round16((size_t)(PW_MC * PW_KC + 16));
}

void slim__pw_dw(const conv_geom *f, const float *x, const float *dy, float *dw, float *ws, int ith,
                 int nw)
{
    const int64_t M = f->N * f->H * f->W, C = f->C, O = f->O;
    int64_t k0 = 0, k1 = C, j0 = 0, j1 = O, lo, hi;
    if (split_cols(f)) {
        slim_split((O + NR - 1) / NR, ith, nw, &lo, &hi);
        j0 = min64(O, lo * NR);
        j1 = min64(O, hi * NR);
    } else {
        slim_split((C + MR - 1) / MR, ith, nw, &lo, &hi);
        k0 = min64(C, lo * MR);
        k1 = min64(C, hi * MR);
    }
    if (k1 <= k0 || j1 <= j0)
        return;
    if (M == 0) {
        for (int64_t k = k0; k < k1; k++)
            memset(dw + k * O + j0, 0, (size_t)(j1 - j0) * sizeof(float));
        return;
    }
    const size_t bsize = round16((size_t)(PW_KC * min64(PW_NC, (j1 - j0 + NR - 1) / NR * NR)));
    float *bp = ws, *ap = ws + bsize;
    for (int64_t jc = j0; jc < j1; jc += PW_NC) {
        const int64_t nc = min64(PW_NC, j1 - jc), nb = (nc + NR - 1) / NR;
        for (int64_t pc = 0; pc < M; pc += PW_KC) {
            const int64_t kc = min64(PW_KC, M - pc);
            pack_dy(dy + pc * O + jc, O, kc, nc, bp);
            for (int64_t ic = k0; ic < k1; ic += PW_MC) {
                const int64_t mc = min64(PW_MC, k1 - ic);
                pack_xt(x + pc * C + ic, C, kc, mc, pc + kc == M, ap);
                for (int64_t jb = 0; jb < nb; jb++) {
                    const int nr = (int)min64(NR, nc - jb * NR);
                    float *cb = dw + ic * O + jc + jb * NR;
                    for (int64_t i0 = 0; i0 < mc; i0 += MR) {
                        const int mr = (int)min64(MR, mc - i0);
                        /* the next block's rows of dW, fetched while this one runs */
                        const float *next = cb + NR;
                        int64_t rows = jb + 1 < nb ? min64(MR, mc) : 0;
                        if (i0 + MR < mc) {
                            next = cb + (i0 + MR) * O;
                            rows = min64(MR, mc - i0 - MR);
                        }
                        for (int64_t i = 0; i < rows; i++)
                            __builtin_prefetch(next + i * O, 1, 3);
                        ukr_pp(kc, ap + i0 * kc, bp + jb * kc * NR, cb + i0 * O, O, mr, nr, pc > 0);
                    }
                }
            }
        }
    }
}
