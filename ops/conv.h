/*
 * ops/conv.h - the bottom of the conv family, what every path shares: the
 * geometry and the parameters infer fills, the post step (a folded batch
 * norm, a residual, an activation), the reference kernels and the
 * partial-sum reductions (ops/conv_common.c, ops/conv_ref.c).
 *
 * The family in layers, each calling only the ones below it:
 *   top      ops/conv.c        conv2d: descriptor, infer, dispatch
 *            ops/conv_chain.c  conv2d_chain (a depthwise-separable block)
 *            ops/conv_fuse.c   the fusion rules that make both from a graph
 *   middle   ops/conv_gemm.c, conv_gemm_bwd.c (GEMM and pointwise),
 *            ops/conv_wino.c (Winograd), ops/conv_pw.c (the pointwise
 *            filter gradient), ops/conv_dw.c (depthwise); each path's
 *            declarations and tuning constants in its own header
 *   bottom   ops/conv_common.c, ops/conv_ref.c, ops/conv_ukr.h (the
 *            micro-kernels), ops/act.h, ops/fc.h (the fully-connected kernels)
 */
#ifndef SLIM_OPS_CONV_H
#define SLIM_OPS_CONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <slim/op.h>

#include "ops/act.h"
#include "ops/fc.h"

/* CONV_FC: the window covers the whole input (one output pixel, no padding,
 * no groups): a fully_connected product, done by its kernels (ops/fc.h). */
enum { CONV_GEMM, CONV_POINTWISE, CONV_DEPTHWISE, CONV_FC };

/* A forward-shaped convolution out = conv(in, filter): the forward pass, and
 * for stride 1 the data gradient (in = dy, out = dx). */
typedef struct conv_geom {
    int64_t N, H, W, C;     /* in: (N,H,W,C) */
    int64_t KH, KW, O;      /* filter taps, output channels */
    int64_t OH, OW;         /* out: (N,OH,OW,O) */
    int64_t SH, SW, DH, DW; /* strides, dilations */
    int64_t PT, PL;         /* top and left padding (negative: cropping) */
    int64_t G, Cg, Og;      /* groups and channels per group */
    int64_t K;              /* GEMM depth: KH*KW*Cg */
    int64_t T;              /* output rows per im2col tile (a multiple of MR but on small M) */
    bool pointwise;         /* 1x1, stride 1, no padding: in is the A matrix */
    int64_t TB;             /* Winograd: output tiles (4x4, 5x5 filters: 2x2) per block (0: not) */
    bool wcoop;             /* Winograd: all threads on each block (slim__wino_run_coop) */
} conv_geom;

/* Everything the kernels need, filled by infer. */
typedef struct conv_params {
    conv_geom f; /* y = conv(x, w) */
    conv_geom t; /* dx = conv(dy, w flipped and transposed), when dx_gather */
    int kind;
    bool dx_gather; /* dx as a convolution of dy instead of GEMM + col2im */
    bool dw_ksplit; /* dW split by K rows between threads instead of partial sums */
    bool has_bias;
    bool wino_dw;   /* dW by Winograd (slim__wino_dw) */
    bool wdw_split; /* ... each worker summing its tiles apart (slim__wino_dw_split) */
    /* inference: a batch norm folded in (inputs bn_in.. are gamma, beta,
     * moving_mean, moving_var), a residual (input res_in) and an activation,
     * applied as each block of y is finished (conv_post) */
    bool fold_bn, residual;
    int bn_in, res_in; /* input indices */
    float bn_eps;
    int act;            /* ACT_NONE, ACT_RELU, ACT_RELU6 (ops/act.h) */
    slim__fc_params fc; /* CONV_FC */
    /* The next task (tile or Winograd block) of the forward product, or of
     * backward's gathered dx, that a thread takes (task_take): thread 0
     * zeroes it before the barrier that ends the filter's packing. */
    int64_t next_task;
} conv_params;

/* Tasks [0, n) taken `per` at a time by whichever thread is free, from a
 * counter in the node's params that thread 0 zeroed (task_reset) before a
 * barrier: returns the first of the ones taken, n once all are. The
 * callers' tasks write their own rows of the output, so the result does
 * not depend on who takes what. */
static inline int64_t task_take(int64_t *next, int64_t per, int64_t n)
{
    int64_t t = __atomic_fetch_add(next, per, __ATOMIC_RELAXED);
    return t < n ? t : n;
}

static inline void task_reset(int64_t *next)
{
    __atomic_store_n(next, 0, __ATOMIC_RELAXED);
}

/* What the forward does to a finished block of y, per output channel:
 * y = act(y * scale + shift + res). scale and shift are NULL unless a batch norm
 * is folded in (then the bias went into shift, not into the products). */
typedef struct conv_post {
    const float *scale, *shift;
    const float *res; /* NULL, or added after the shift: res[i] goes with out[i] */
    const float *out;
    int act;
    bool stream; /* y's full aligned rows stored past the caches (ukr_nn_post); then sfence */
    bool cached; /* y is a band that stays in the caches (conv_chain's expanded rows) */
} conv_post;

/* Whether post changes y at all. */
static inline bool post_any(const conv_post *post)
{
    return post->scale || post->res || post->act;
}

/* Apply post to rows x nc values of y (leading dimension ld), whose first
 * column is output channel c0. */
void slim__conv_post_rows(const conv_post *post, float *y, int64_t ld, int64_t rows, int64_t c0,
                          int64_t nc);

/* ---- shared helpers ------------------------------------------------------ */

static inline int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static inline int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* The cache lines of [p, p + bytes) fetched for writing: y's lines, the
 * next block's or tile's, while the current one is computed. A kernel that
 * wrote y straight from memory waited on each line of a big output
 * (ResNet-50's 51 MB ones) and filled the store queue, so its next calls'
 * stack stores stalled too. always_inline: GCC found a called prefetch loop
 * free of effects and dropped the call. */
static inline __attribute__((always_inline)) void prefetch_store(const void *p, size_t bytes)
{
    const uintptr_t e = (uintptr_t)p + bytes;
    for (uintptr_t a = (uintptr_t)p & ~(uintptr_t)63; a < e; a += 64)
        __builtin_prefetch((const void *)a, 1, 3);
}

/* ---- ops/conv_common.c ---------------------------------------------------- */

/* Output size and leading padding of one spatial axis (padding SAME, VALID
 * or EXPLICIT with pad_lo/pad_hi; d the dilation); fails through c when
 * the padded input is smaller than the kernel. */
slim_status slim__conv_axis(slim_infer_ctx *c, const char *axis, const char *padding, int64_t in,
                            int64_t k, int64_t s, int64_t d, int64_t pad_lo, int64_t pad_hi,
                            int64_t *out, int64_t *lo);
/* The bias the products add: NULL when there is none or a batch norm is folded in. */
const float *slim__conv_bias(const slim_kernel_ctx *c);
/* A batch norm folded into the product before it, channels [lo, hi):
 * scale = gamma / sqrt(moving_var + eps), shift = beta + (b - moving_mean)
 * scale (bn: gamma, beta, moving_mean, moving_var; b: the bias, or NULL). */
void slim__bn_fold(const slim_tensor *bn, const float *b, float eps, int64_t lo, int64_t hi,
                   float *scale, float *shift);
/* acc[o] += sum of dy rows [r0, r1) (dy: (rows, O)). */
void slim__conv_col_sums(const float *dy, int64_t r0, int64_t r1, int64_t O, float *acc);
/* dst[i] += sum over workers t = 1..nw-1 of part_t[i], for this thread's share
 * of [0, n); part_t = ws + t*stride + off. Fixed order, so deterministic. */
void slim__conv_reduce_parts(const slim_kernel_ctx *c, float *dst, const float *ws, size_t stride,
                             size_t off, int nw, int64_t n);
/* Zero a gradient output in parallel (dout was NULL: the gradient is zero). */
void slim__conv_zero_split(const slim_kernel_ctx *c, float *d, int64_t n);

/* ---- ops/conv_ref.c: plain loops, a folded batch norm in double ----------- */

void slim__conv_forward_ref(const slim_kernel_ctx *c);
void slim__conv_backward_ref(const slim_kernel_ctx *c);

#endif /* SLIM_OPS_CONV_H */
