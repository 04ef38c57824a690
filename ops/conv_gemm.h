/*
 * ops/conv_gemm.h - the GEMM paths of conv2d (kinds GEMM and POINTWISE):
 * the forward and the workspace layout in ops/conv_gemm.c, backward in
 * ops/conv_gemm_bwd.c (which calls into the forward file, never the other
 * way); their tuning constants; and what the two files share.
 */
#ifndef SLIM_OPS_CONV_GEMM_H
#define SLIM_OPS_CONV_GEMM_H

#include "ops/conv.h"
#include "ops/conv_ukr.h"

/* Tiles: at most TILE_ROWS output rows, about TILE_FLOATS floats of im2col. */
#define TILE_ROWS 240
#define TILE_FLOATS 65536
/* dW by slabs of K (ops/conv_gemm.c dw_slabs) when K*Og exceeds this many
 * floats (1 MB), in tiles of at most DW_ROWS output rows. */
#define DW_SLAB_MIN 262144
#define DW_ROWS 120
/* Rows per sub-tile of the pointwise filter gradient (ops/conv_gemm.c dw_tile_stream). */
#define DW_SUB 60
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
void slim__conv_gemm_forward(const slim_kernel_ctx *c, const conv_post *post);
/* A pointwise product on its own (ops/conv_chain.c): all threads pack w (K,
 * O) into dst (slim__pw_packed_floats(K, O) floats) and meet; then one
 * thread computes out (M, O) = in (M, K) times it, post applied. */
void slim__pw_pack(const slim_kernel_ctx *c, const float *w, int64_t K, int64_t O, float *dst);
size_t slim__pw_packed_floats(int64_t K, int64_t O);
void slim__pw_gemm(int64_t M, int64_t K, int64_t O, const float *in, const float *packed,
                   const conv_post *post, float *out);
void slim__conv_gemm_backward(const slim_kernel_ctx *c);

/* ---- shared by ops/conv_gemm.c and ops/conv_gemm_bwd.c ------------------------ */

/* Columns of the padded image: every column a window of q reads. */
static inline int64_t seg_wp(const conv_geom *q)
{
    return (q->OW - 1) * q->SW + q->KW;
}

/* Whether q's products read the receptive fields from a zero-padded copy of
 * the image rows a tile needs (conv_rows_seg, dw_seg) instead of an im2col
 * tile: a filter row is one short run of x (KW*C of at most SEG_MAX_RUN
 * floats: LeNet's 5x5 over 1 channel, MobileNet's 3x3/2 over 3), and copying
 * runs that short into im2col tiles cost more than the products (LeNet
 * conv1: 67% of its forward, 62% of its filter gradient). */
static inline bool seg_rows(const conv_geom *q)
{
    return !q->pointwise && q->G == 1 && q->DW == 1 && q->KW * q->C <= SEG_MAX_RUN &&
           q->Og > NARROW_NR;
}

/* Taps [*a, *b) of a filter row that fall inside the image for a window
 * starting at column iw0 (dilation 1). */
static inline void run_bounds(const conv_geom *q, int64_t iw0, int64_t *a, int64_t *b)
{
    *a = min64(q->KW, max64(0, -iw0));
    *b = max64(*a, min64(q->KW, q->W - iw0));
}

/* Output rows [.., r1) of one image within a tile, and where its padded band
 * lies: padded row hp0 (input row hp0 - PT) first. */
typedef struct seg_piece {
    int64_t r1, hp0;
    const float *band;
} seg_piece;

/* Output row r's receptive field in its piece's band: filter row 0, column 0. */
static inline const float *seg_at(const conv_geom *q, const seg_piece *p, int64_t r)
{
    int64_t oh = r % (q->OH * q->OW) / q->OW, ow = r % q->OW;
    return p->band + ((oh * q->SH - p->hp0) * seg_wp(q) + ow * q->SW) * q->C;
}

/* How the filter is packed for a product: PACK_W B(k, o) = w[k, o] for the
 * forward; PACK_WT B(o, k) = w[k, o] for dcol = dY W^T; PACK_WFLIP
 * B((tap, o), c) = w[KH*KW-1-tap, c, o] for dx = conv(dY, flip(w)^T). */
enum { PACK_W, PACK_WT, PACK_WFLIP };

static inline int bwd_pack_mode(const conv_params *p)
{
    return p->dx_gather ? PACK_WFLIP : PACK_WT;
}

/* One backward worker's slice of the workspace (offsets in floats). */
typedef struct bwd_slice {
    size_t col, dcol, dw, db, band, pack, wdw, total;
} bwd_slice;

bwd_slice slim__conv_bwd_layout(const conv_params *p, int64_t nw);
/* All threads pack the panels of every group into dst (as mode), then meet. */
void slim__conv_pack_filter(const slim_kernel_ctx *c, int mode, float *dst);
/* col (rn, K): the receptive fields of output rows [r0, r0+rn) of q for group g. */
void slim__conv_im2col(const conv_geom *q, const float *x, int64_t r0, int64_t rn, int64_t g,
                       float *col);
/* col (rn, k1-k0): columns [k0, k1) of the receptive fields of output rows
 * [r0, r0+rn) of q for group g; a column is (kh, kw, cg). */
void slim__conv_im2col_cols(const conv_geom *q, const float *x, int64_t r0, int64_t rn, int64_t g,
                            int64_t k0, int64_t k1, float *col);
/* The bands that output rows [r0, r0+rn) of q read, one per image, into buf. */
int slim__conv_seg_bands(const conv_geom *q, const float *x, int64_t r0, int64_t rn, float *buf,
                         seg_piece *pc);
/* Output rows of q for tasks [t0, t1) (see conv_rows). */
void slim__conv_rows(const conv_geom *q, const float *in, const float *packed, const float *bias,
                     const conv_post *post, float *out, float *col, int64_t t0, int64_t t1);

#endif /* SLIM_OPS_CONV_GEMM_H */
