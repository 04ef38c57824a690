/*
 * ops/conv_wino.h - the Winograd path of conv2d (ops/conv_wino.c): F(4x4, 3x3)
 * and F(2x2, 5x5) for the forward, the gathered data gradient and the filter
 * gradient; its tuning constants.
 */
#ifndef SLIM_OPS_CONV_WINO_H
#define SLIM_OPS_CONV_WINO_H

#include "ops/conv.h"

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

/* Rows of dw per task of the one-block filter gradient: each panel of Yh
 * fetched from L3 serves this many rows (512->512 at 7x7, 1 thread: 6 rows
 * 61-85 ms, 24 rows 42-56, 60 rows 41-48, 120 rows 39-43; 3 runs each). */
#define WDW_ROWS 120

/* The largest C*O whose filter gradient each thread sums into a dU of its
 * own (36 C O floats: 2.4 MB at 128 x 128) when the tiles take several
 * blocks. Shared, the threads meet twice a block: ResNet-50's 64->64 at
 * 56x56 (33 blocks) ran 1.1-1.6x faster on 2 threads than on 1. */
#define WDW_SPLIT_CO (128 * 128)

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

#endif /* SLIM_OPS_CONV_WINO_H */
