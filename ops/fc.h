/*
 * ops/fc.h - fully_connected's kernels, for the ops whose data is laid out as
 * its own: y (N,O) = x (N,K) w (K,O) + b. A convolution whose window covers
 * the whole input (VGG's fc6: a 7x7 VALID filter over a 7x7 map) is one,
 * with x (N,H,W,C) read as (N, H*W*C) and w (KH,KW,C,O) as (H*W*C, O).
 *
 * The kernels read their parameters from c->params, a slim__fc_params; an op
 * with a parameter struct of its own calls them on a copy of its context
 * whose params points at its embedded slim__fc_params.
 */
#ifndef SLIM_OPS_FC_H
#define SLIM_OPS_FC_H

#include <slim/op.h>

/* Round a float count up to 16 (64 bytes) so per-thread slices of a workspace
 * do not share cache lines (fc and the conv family, which includes this). */
static inline size_t round16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

typedef struct slim__fc_params {
    int64_t n, k, o; /* x (N,K), w (K,O) */
    bool has_bias;
} slim__fc_params;

/* The workspace the kernels want with nth threads (and backward when training). */
size_t slim__fc_workspace_bytes(const slim__fc_params *p, int nth, bool training);
void slim__fc_forward(const slim_kernel_ctx *c);
void slim__fc_backward(const slim_kernel_ctx *c);

#endif
