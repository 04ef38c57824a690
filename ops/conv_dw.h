/*
 * ops/conv_dw.h - the depthwise path of conv2d (groups == C == O,
 * ops/conv_dw.c): direct loops with C innermost, which vectorize; a GEMM
 * with K = KH*KW and one column per group would be all overhead.
 */
#ifndef SLIM_OPS_CONV_DW_H
#define SLIM_OPS_CONV_DW_H

#include "ops/conv.h"

/* Floats of one worker's list of a depthwise output pixel's taps (an x and
 * a w pointer each), then of an output row's filter rows inside the image
 * (an x row and a w row each). */
static inline size_t dw_list_floats(const conv_geom *q)
{
    return round16((size_t)(q->KH * q->KW + q->KH) * 2 * sizeof(const float *) / sizeof(float));
}

/* Floats of one of the forward's or backward's workers' workspace. */
size_t slim__dw_ws_floats(const conv_geom *f, bool backward);
/* The kernels, post applied to y as its rows are written. */
void slim__dw_forward(const slim_kernel_ctx *c, const conv_post *post);
void slim__dw_backward(const slim_kernel_ctx *c);
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

#endif /* SLIM_OPS_CONV_DW_H */
