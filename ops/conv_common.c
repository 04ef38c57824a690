/*
 * ops/conv_common.c - the bottom of the conv family, what every path calls:
 * an axis's output size, the bias, the post step on finished rows of y (a
 * folded batch norm's scale and shift, a residual, an activation), the
 * batch-norm fold itself, and the partial sums the backward kernels reduce
 * in a fixed order.
 */
#include <math.h>
#include <string.h>

#include "ops/conv.h"

slim_status slim__conv_axis(slim_infer_ctx *c, const char *axis, const char *padding, int64_t in,
                            int64_t k, int64_t s, int64_t d, int64_t pad_lo, int64_t pad_hi,
                            int64_t *out, int64_t *lo)
{
    int64_t eff = (k - 1) * d + 1;
    if (strcmp(padding, "SAME") == 0) {
        *out = (in + s - 1) / s;
        *lo = max64((*out - 1) * s + eff - in, 0) / 2;
        return SLIM_OK;
    }
    if (strcmp(padding, "VALID") == 0)
        pad_lo = pad_hi = 0;
    if (in + pad_lo + pad_hi < eff)
        return c->fail(c, SLIM_ESHAPE,
                       "the input %s %lld (padded: %lld) is smaller than the kernel's %lld "
                       "(with dilation); use padding=SAME or a smaller kernel",
                       axis, (long long)in, (long long)(in + pad_lo + pad_hi), (long long)eff);
    *out = (in + pad_lo + pad_hi - eff) / s + 1;
    *lo = pad_lo;
    return SLIM_OK;
}

const float *slim__conv_bias(const slim_kernel_ctx *c)
{
    const conv_params *p = c->params;
    return p->has_bias && !p->fold_bn ? c->in[2].data : NULL;
}

void slim__conv_post_rows(const conv_post *post, float *y, int64_t ld, int64_t rows, int64_t c0,
                          int64_t nc)
{
    const float *restrict s = post->scale ? post->scale + c0 : NULL;
    const float *restrict t = post->shift ? post->shift + c0 : NULL;
    const float *res = post->res ? post->res + (y - post->out) : NULL;
    for (int64_t r = 0; r < rows; r++) {
        float *restrict v = y + r * ld;
        if (s)
            for (int64_t j = 0; j < nc; j++)
                v[j] = v[j] * s[j] + t[j];
        if (res) {
            const float *restrict e = res + r * ld;
            for (int64_t j = 0; j < nc; j++)
                v[j] += e[j];
        }
        act_fwd_row(post->act, v, nc);
    }
}

void slim__bn_fold(const slim_tensor *bn, const float *b, float eps, int64_t lo, int64_t hi,
                   float *scale, float *shift)
{
    const float *gamma = bn[0].data, *beta = bn[1].data, *mean = bn[2].data, *var = bn[3].data;
    for (int64_t o = lo; o < hi; o++) {
        float s = gamma[o] / sqrtf(var[o] + eps);
        scale[o] = s;
        shift[o] = beta[o] + ((b ? b[o] : 0.0f) - mean[o]) * s;
    }
}

/* acc[o] += sum of dy rows [r0, r1) (dy: (rows, O)). */
void slim__conv_col_sums(const float *dy, int64_t r0, int64_t r1, int64_t O, float *acc)
{
    for (int64_t r = r0; r < r1; r++) {
        const float *row = dy + r * O;
        for (int64_t o = 0; o < O; o++)
            acc[o] += row[o];
    }
}

/* dst[i] += sum over workers t = 1..nw-1 of part_t[i], for this thread's share
 * of [0, n); part_t = ws + t*stride + off. Fixed order, so deterministic. */
void slim__conv_reduce_parts(const slim_kernel_ctx *c, float *dst, const float *ws, size_t stride,
                             size_t off, int nw, int64_t n)
{
    int64_t lo, hi;
    slim_split(n, c->ith, c->nth, &lo, &hi);
    for (int t = 1; t < nw; t++) {
        const float *part = ws + (size_t)t * stride + off;
        for (int64_t i = lo; i < hi; i++)
            dst[i] += part[i];
    }
}

/* Zero a gradient output in parallel (dout was NULL: the gradient is zero). */
void slim__conv_zero_split(const slim_kernel_ctx *c, float *d, int64_t n)
{
    int64_t lo, hi;
    if (!d)
        return;
    slim_split(n, c->ith, c->nth, &lo, &hi);
    if (hi > lo)
        memset(d + lo, 0, (size_t)(hi - lo) * sizeof(float));
}
