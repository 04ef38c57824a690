/*
 * ops/reduce.c - reduce_mean: the mean over some axes.
 *
 * Each output element is the mean of the input elements that share its kept
 * coordinates; each thread computes a range of outputs, summing in double in
 * a fixed order (so the result does not depend on the thread count).
 * Backward spreads dy / count over the reduced axes; each thread owns a
 * range of dx.
 *
 *   x (d0..dr-1), axes, keep_dims -> y: x's dims with the axes removed (or 1)
 */
#include <stdio.h>
#include <string.h>

#include <slim/op.h>

extern const slim_op_desc slim__op_reduce_mean;

typedef struct reduce_params {
    int rank;
    int64_t dim[SLIM_MAX_DIMS];
    bool reduced[SLIM_MAX_DIMS];
    int64_t xstride[SLIM_MAX_DIMS];
    int64_t ystride[SLIM_MAX_DIMS]; /* of y for each x axis (0 on reduced axes) */
    int nk, nr;                     /* kept and reduced axes */
    int kept[SLIM_MAX_DIMS], red[SLIM_MAX_DIMS];
    int64_t count, numel_x, numel_y;
} reduce_params;

static slim_status reduce_infer(slim_infer_ctx *c)
{
    reduce_params *p = c->params;
    const slim_tensor_desc *x = &c->inputs[0];
    if (x->dtype != SLIM_F32)
        return c->fail(c, SLIM_ETYPE, "input must be f32");
    int r = x->shape.rank;
    const int64_t *axes;
    int na = c->attr_ints(c, "axes", &axes);
    bool keep = c->attr_bool(c, "keep_dims");
    memset(p, 0, sizeof *p);
    p->rank = r;
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r || p->reduced[a])
            return c->fail(c, SLIM_EINVAL, "axis %lld is out of range for rank %d or repeated",
                           (long long)axes[i], r);
        p->reduced[a] = true;
    }
    slim_shape out = {0};
    int64_t m = 1;
    for (int i = r - 1; i >= 0; i--) {
        p->dim[i] = x->shape.dim[i];
        p->xstride[i] = m;
        m *= x->shape.dim[i];
    }
    p->count = 1;
    for (int i = 0; i < r; i++) {
        if (p->reduced[i]) {
            p->red[p->nr++] = i;
            p->count *= x->shape.dim[i];
            if (keep)
                out.dim[out.rank++] = 1;
        } else {
            p->kept[p->nk++] = i;
            out.dim[out.rank++] = x->shape.dim[i];
        }
    }
    m = 1;
    for (int i = r - 1; i >= 0; i--) {
        p->ystride[i] = p->reduced[i] ? 0 : m;
        if (!p->reduced[i])
            m *= x->shape.dim[i];
    }
    p->numel_x = slim_shape_numel(&x->shape);
    p->numel_y = m;
    c->set_output(c, 0, SLIM_F32, &out);
    c->set_backward_reads(c, 0, 0);
    return SLIM_OK;
}

static double reduced_sum(const reduce_params *p, const float *x, int64_t base)
{
    int64_t idx[SLIM_MAX_DIMS] = {0};
    double s = 0;
    for (int64_t k = 0; k < p->count; k++) {
        int64_t off = base;
        for (int j = 0; j < p->nr; j++)
            off += idx[j] * p->xstride[p->red[j]];
        s += x[off];
        for (int j = p->nr - 1; j >= 0; j--) {
            if (++idx[j] < p->dim[p->red[j]])
                break;
            idx[j] = 0;
        }
    }
    return s;
}

static void reduce_forward(const slim_kernel_ctx *c)
{
    const reduce_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t lo, hi;
    slim_split(p->numel_y, c->ith, c->nth, &lo, &hi);
    for (int64_t k = lo; k < hi; k++) {
        /* kept coordinates of output k -> the base offset in x */
        int64_t rem = k, base = 0;
        for (int j = p->nk - 1; j >= 0; j--) {
            int a = p->kept[j];
            base += (rem % p->dim[a]) * p->xstride[a];
            rem /= p->dim[a];
        }
        y[k] = (float)(reduced_sum(p, x, base) / (double)p->count);
    }
}

static void reduce_backward(const slim_kernel_ctx *c)
{
    const reduce_params *p = c->params;
    float *dx = c->din[0].data;
    const float *dy = c->dout[0].data;
    if (!dx)
        return;
    const float inv = 1.0f / (float)p->count;
    int64_t lo, hi;
    slim_split(p->numel_x, c->ith, c->nth, &lo, &hi);
    for (int64_t k = lo; k < hi; k++) {
        int64_t rem = k, o = 0;
        for (int i = p->rank - 1; i >= 0; i--) {
            o += (rem % p->dim[i]) * p->ystride[i];
            rem /= p->dim[i];
        }
        dx[k] = dy ? dy[o] * inv : 0.0f;
    }
}

static const slim_attr_spec reduce_attrs[] = {
    {.name = "axes", .type = SLIM_ATTR_INTS, .def = NULL, .doc = "the axes to average over"},
    {.name = "keep_dims",
     .type = SLIM_ATTR_BOOL,
     .def = "false",
     .doc = "keep the reduced axes as dimensions of 1"},
};

const slim_op_desc slim__op_reduce_mean = {
    .struct_size = sizeof(slim_op_desc),
    .name = "reduce_mean",
    .doc = "the mean over axes",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = reduce_attrs,
    .n_attrs = 2,
    .params_size = sizeof(reduce_params),
    .infer = reduce_infer,
    .forward = reduce_forward,
    .backward = reduce_backward,
    .forward_ref = reduce_forward,
};
