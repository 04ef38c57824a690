/*
 * ops/conv.h - what ops/conv.c (descriptor, infer, reference and depthwise
 * kernels) and ops/conv_gemm.c (the GEMM paths) share: the geometry, the
 * parameters infer fills, and the functions one calls in the other.
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

/* Tiles: at most TILE_ROWS output rows, about TILE_FLOATS floats of im2col. */
#define TILE_ROWS 240
#define TILE_FLOATS 65536
/* dW by slabs of K (ops/conv_gemm.c dw_slabs) when K*Og exceeds this many
 * floats (1 MB), in tiles of at most DW_ROWS output rows. */
#define DW_SLAB_MIN 262144
#define DW_ROWS 120
/* Rows per sub-tile of the pointwise filter gradient (ops/conv_gemm.c dw_tile_stream). */
#define DW_SUB 60
/* Depth chunk of the forward-shaped products: the chunk of a B panel (16 or 32 KB) stays in L1. */
#define KCHUNK 256
/* ukr_nn_wide (12 x 32, AVX-512) for depth chunks at least this deep (GEMM
 * tiles and the direct path's filter-row chunks): it halves the B loads per
 * FMA, but on short chunks (MobileNet's 32-128 channel 1x1 layers) two 6-row
 * blocks measured faster, and LeNet's conv2 (chunks of 160) gained in
 * conv_bench but not in its training step. */
#define WIDE_MIN_DEPTH 192
/* Floats of the filter's packed panels that a GEMM tile's row blocks run
 * through at once (one depth chunk): 256 KB, which leaves most of a 1-2 MB
 * L2 to the tile's rows of A and C. */
#define PANEL_GROUP_FLOATS 65536
/* conv_rows_direct: filter rows of at least this many floats, at most this many rows. */
#define DIRECT_MIN_RUN 96
#define DIRECT_MAX_KH 16
/* conv_rows_seg / dw_seg: filter rows of at most this many floats (KW*C). */
#define SEG_MAX_RUN 24

/* Winograd (ops/conv_wino.c): blocks of tiles whose V and M planes of one
 * point take about this many floats (256 KB), at most WINO_MAX_TB tiles; used
 * (winograd=auto) when both channel counts are at least WINO_MIN_CH. */
#define WINO_PLANE_FLOATS 65536
#define WINO_MAX_TB 96
#define WINO_MIN_CH 16
#define WINO_DW_MIN_CH 32 /* the filter gradient: 16->16 was slower on 2 threads */
/* A transformed filter U larger than this is written past the caches
 * (streaming stores): 36 rows a plane apart per filter row, each line
 * fetched before it was overwritten and most evicted before the products
 * read them. ResNet-50's 512->512 at 7x7 (U 37.7 MB), 1 thread: the packing
 * took 14 of 37 ms; forward 105 -> 131 GFLOP/s, data gradient +13%;
 * 256->256 at 14x14 (9.4 MB) +8-10%; 128->128 (2.4 MB) no gain. */
#define WINO_NT_BYTES (8u << 20)

/* The pointwise filter gradient from packed panels (ops/conv_pw.c), for
 * dW of at least PW_MIN_CO floats: blocks of PW_KC rows of x and dY, PW_MC
 * channels of x (a multiple of MR) and PW_NC columns of dY. */
#define PW_MIN_CO 32768
#define PW_KC 256
#define PW_MC 96
#define PW_NC 512

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

/* Floats of one worker's list of a depthwise output pixel's taps (an x and
 * a w pointer each), then of an output row's filter rows inside the image
 * (an x row and a w row each). */
static inline size_t dw_list_floats(const conv_geom *q)
{
    return round16((size_t)(q->KH * q->KW + q->KH) * 2 * sizeof(const float *) / sizeof(float));
}

/* ---- ops/conv_gemm.c -------------------------------------------------------- */

/* Floats of the packed filter that all threads share, at the workspace's start. */
size_t slim__conv_shared_floats(const conv_params *p, bool backward);
/* Floats one of nw workers needs after the shared part (0 = none). */
size_t slim__conv_ws_floats(const conv_params *p, int64_t nw, bool backward);
/* Rows per im2col tile of q for M output rows at nth threads. */
int64_t slim__conv_tile_rows(const conv_geom *q, int64_t M, int nth);
/* The largest worker count <= nth whose slices fit the workspace after the
 * shared packed filter (0: none fits). */
int slim__conv_workers(const slim_kernel_ctx *c, bool backward);
/* Whether the forward product of q (kind CONV_GEMM or CONV_POINTWISE, not
 * Winograd) may write y over the residual: each block reads its residual
 * lines at the store, before writing them, and no block is stored before
 * its last depth chunk (set_in_place). */
bool slim__conv_res_in_place(const conv_geom *q);
/* The bias the products add: NULL when there is none or a batch norm is folded in. */
const float *slim__conv_bias(const slim_kernel_ctx *c);
void slim__conv_gemm_forward(const slim_kernel_ctx *c, const conv_post *post);
/* A pointwise product on its own (ops/conv_chain.c): all threads pack w (K,
 * O) into dst (slim__pw_packed_floats(K, O) floats) and meet; then one
 * thread computes out (M, O) = in (M, K) times it, post applied. */
void slim__pw_pack(const slim_kernel_ctx *c, const float *w, int64_t K, int64_t O, float *dst);
size_t slim__pw_packed_floats(int64_t K, int64_t O);
void slim__pw_gemm(int64_t M, int64_t K, int64_t O, const float *in, const float *packed,
                   const conv_post *post, float *out);
void slim__conv_gemm_backward(const slim_kernel_ctx *c);

/* ---- ops/conv_wino.c -------------------------------------------------------- */

/* 3x3 or 5x5, stride 1, no dilation, no groups: what F(4x4, 3x3) and F(2x2, 5x5) compute. */
bool slim__wino_shape(const conv_geom *q);
/* q->TB (tiles per block) and q->wcoop (the threads take each block
 * together) for nth threads. */
void slim__wino_plan(conv_geom *q, int nth);
/* Blocks of q->TB tiles. */
int64_t slim__wino_blocks(const conv_geom *q);
/* Floats of the packed transformed filter (shared) and of one worker's V and M. */
size_t slim__wino_shared_floats(const conv_geom *q);
size_t slim__wino_ws_floats(const conv_geom *q);
/* All threads: U = the transformed filter, packed (flip: w is the forward
 * filter of the convolution whose data gradient q is). Ends with a sync. */
void slim__wino_pack(const slim_kernel_ctx *c, const conv_geom *q, const float *w, bool flip,
                     float *U);
/* Blocks [b0, b1): out = conv(in, w) (+ bias), then post (NULL: none); ws:
 * slim__wino_ws_floats floats. */
void slim__wino_run(const conv_geom *q, const float *in, const float *U, const float *bias,
                    const conv_post *post, float *out, float *ws, int64_t b0, int64_t b1);
/* All threads, q->wcoop: every block of q->TB tiles, the threads sharing
 * each one; ws (slim__wino_ws_floats) is theirs together. */
void slim__wino_run_coop(const slim_kernel_ctx *c, const conv_geom *q, const float *in,
                         const float *U, const float *bias, const conv_post *post, float *out,
                         float *ws);
/* The backward-filter: floats of its shared buffers (the summed products dU,
 * the transformed blocks) and of each thread's own, and all threads computing
 * dw (3,3,C,O) of q from x and dy (overwritten). dU is first written after
 * the threads meet, so it may lie over what they read before. ubuf: this
 * thread's slim__wino_u_floats, for threads below nw (the workers whose
 * slices fit the workspace). Ends with a sync. */
size_t slim__wino_du_floats(const conv_geom *q);
size_t slim__wino_vy_floats(const conv_geom *q);
size_t slim__wino_u_floats(void);
/* Whether, on nth threads, each worker sums its share of the tiles into a
 * part of its own (slim__wino_dw_part_floats: its dU and blocks): then
 * part is worker 0's and worker t's lies t * pstride floats after it, and
 * dU and vy are unused (else part is NULL). */
bool slim__wino_dw_split(const conv_geom *q, int nth);
size_t slim__wino_dw_part_floats(const conv_geom *q);
void slim__wino_dw(const slim_kernel_ctx *c, const conv_geom *q, const float *x, const float *dy,
                   float *dw, float *dU, float *vy, float *ubuf, int nw, float *part,
                   int64_t pstride);

/* ---- ops/conv_pw.c --------------------------------------------------------- */

/* Whether q's filter gradient goes through slim__pw_dw (pointwise, no groups,
 * dW of at least PW_MIN_CO floats). */
bool slim__pw_dw_packed(const conv_geom *f);
/* Floats of one of nth workers' packed panels. */
size_t slim__pw_dw_ws_floats(const conv_geom *f, int nth);
/* Worker ith of nw: its part of dw (C, O) = x^T dy (written, not added), ws:
 * slim__pw_dw_ws_floats(f, nw) floats of its own. */
void slim__pw_dw(const conv_geom *f, const float *x, const float *dy, float *dw, float *ws,
                 int ith, int nw);

/* ---- ops/conv.c ------------------------------------------------------------- */

/* Output size and leading padding of one spatial axis (padding SAME, VALID
 * or EXPLICIT with pad_lo/pad_hi; d the dilation); fails through c when
 * the padded input is smaller than the kernel. */
slim_status slim__conv_axis(slim_infer_ctx *c, const char *axis, const char *padding, int64_t in,
                           int64_t k, int64_t s, int64_t d, int64_t pad_lo, int64_t pad_hi,
                           int64_t *out, int64_t *lo);
/* A batch norm folded into the product before it, channels [lo, hi):
 * scale = gamma / sqrt(moving_var + eps), shift = beta + (b - moving_mean)
 * scale (bn: gamma, beta, moving_mean, moving_var; b: the bias, or NULL). */
void slim__bn_fold(const slim_tensor *bn, const float *b, float eps, int64_t lo, int64_t hi,
                   float *scale, float *shift);

/* The filter rows of output row oh of depthwise f inside the image: for
 * each, the x row it meets (x_n: image n's first row; NULL leaves xr[r]
 * NULL for the caller to fill) into xr and the filter row into wr; returns
 * how many (at most KH). */
int slim__dw_rows(const conv_geom *f, const float *x_n, int64_t oh, const float *w,
                  const float **xr, const float **wr);
/* Output row yrow (OW x C) of depthwise f from those rows, bias b (NULL:
 * none), post applied (lists: dw_list_floats(f) floats of scratch). */
void slim__dw_row(const conv_geom *f, const float *const *xr, const float *const *wr, int nr,
                  const float *b, const conv_post *post, float *yrow, float *lists);

void slim__conv_forward_ref(const slim_kernel_ctx *c);
void slim__conv_backward_ref(const slim_kernel_ctx *c);
/* acc[o] += sum of dy rows [r0, r1) (dy: (rows, O)). */
void slim__conv_col_sums(const float *dy, int64_t r0, int64_t r1, int64_t O, float *acc);
/* dst[i] += sum over workers t = 1..nw-1 of part_t[i], for this thread's share
 * of [0, n); part_t = ws + t*stride + off. Fixed order, so deterministic. */
void slim__conv_reduce_parts(const slim_kernel_ctx *c, float *dst, const float *ws, size_t stride,
                             size_t off, int nw, int64_t n);
/* Zero a gradient output in parallel (dout was NULL: the gradient is zero). */
void slim__conv_zero_split(const slim_kernel_ctx *c, float *d, int64_t n);

#endif /* SLIM_OPS_CONV_H */
