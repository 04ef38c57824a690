/*
 * ops/transpose.c - ops that move f32 elements by index: transpose and slice.
 *
 * Both read the input through a strided view: each output axis i walks the
 * input with stride[i] from offset (transpose: the input's stride of axis
 * perm[i]; slice: the input's own strides, from begin). Each thread copies a
 * contiguous range of the output, stepping a multi-index with carries, so
 * stores are sequential and reads strided.
 *
 * Backward: transpose's dx is dy transposed by the inverse permutation;
 * slice's dx is dy inside the slice and 0 outside (each thread owns a range
 * of dx, so nothing is written twice).
 *
 *   transpose: x (d0..dr-1), perm -> y (d_perm[0] .. d_perm[r-1])
 *   slice:     x, begin, size (-1: to the end) -> y (size)
 */
#include <stdio.h>
#include <string.h>

#include <slim/op.h>

extern const slim_op_desc slim__op_transpose;
extern const slim_op_desc slim__op_slice;

typedef struct view {
    int rank;
    int64_t dim[SLIM_MAX_DIMS];    /* of the output */
    int64_t stride[SLIM_MAX_DIMS]; /* into the input, per output axis */
    int64_t offset;
} view;

typedef struct index_params {
    view fwd; /* y from x */
    view bwd; /* transpose: dx from dy */
    int64_t numel_x, numel_y;
    int64_t begin[SLIM_MAX_DIMS], size[SLIM_MAX_DIMS]; /* slice */
    int64_t xdim[SLIM_MAX_DIMS];
    int rank;
} index_params;

static void strides_of(const slim_shape *s, int64_t *st)
{
    int64_t m = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
        st[i] = m;
        m *= s->dim[i];
    }
}

/* dst[k] = src[view(k)] for k in [lo, hi). */
static void gather(const view *v, const float *src, float *dst, int64_t lo, int64_t hi)
{
    if (lo >= hi)
        return;
    int r = v->rank;
    if (r == 0) {
        dst[0] = src[v->offset];
        return;
    }
    int64_t idx[SLIM_MAX_DIMS], rem = lo, s = v->offset;
    for (int i = r - 1; i >= 0; i--) {
        idx[i] = rem % v->dim[i];
        rem /= v->dim[i];
        s += idx[i] * v->stride[i];
    }
    const int64_t last = v->dim[r - 1], ls = v->stride[r - 1];
    for (int64_t k = lo; k < hi;) {
        /* a run along the last axis */
        int64_t run = last - idx[r - 1];
        if (run > hi - k)
            run = hi - k;
        if (ls == 1) {
            memcpy(dst + k, src + s, (size_t)run * sizeof(float));
        } else {
            for (int64_t j = 0; j < run; j++)
                dst[k + j] = src[s + j * ls];
        }
        k += run;
        s += run * ls;
        idx[r - 1] += run;
        for (int i = r - 1; i > 0 && idx[i] == v->dim[i]; i--) {
            s -= idx[i] * v->stride[i];
            idx[i] = 0;
            idx[i - 1]++;
            s += v->stride[i - 1];
        }
    }
}

static void zero_or(const slim_kernel_ctx *c, float *dx, int64_t n)
{
    int64_t lo, hi;
    slim_split(n, c->ith, c->nth, &lo, &hi);
    memset(dx + lo, 0, (size_t)(hi - lo) * sizeof(float));
}

/* ---- transpose ------------------------------------------------------------- */

static slim_status transpose_infer(slim_infer_ctx *c)
{
    index_params *p = c->params;
    const slim_tensor_desc *x = &c->inputs[0];
    if (x->dtype != SLIM_F32)
        return c->fail(c, SLIM_ETYPE, "input must be f32");
    const int64_t *perm;
    int n = c->attr_ints(c, "perm", &perm), r = x->shape.rank;
    if (n != r)
        return c->fail(c, SLIM_ESHAPE, "perm has %d values for an input of rank %d", n, r);
    bool seen[SLIM_MAX_DIMS] = {false};
    for (int i = 0; i < r; i++) {
        if (perm[i] < 0 || perm[i] >= r || seen[perm[i]])
            return c->fail(c, SLIM_EINVAL, "perm is not a permutation of 0..%d", r - 1);
        seen[perm[i]] = true;
    }
    int64_t xs[SLIM_MAX_DIMS], ys[SLIM_MAX_DIMS];
    strides_of(&x->shape, xs);
    slim_shape out = {.rank = r};
    for (int i = 0; i < r; i++)
        out.dim[i] = x->shape.dim[perm[i]];
    strides_of(&out, ys);
    p->fwd = (view){.rank = r};
    p->bwd = (view){.rank = r};
    for (int i = 0; i < r; i++) {
        p->fwd.dim[i] = out.dim[i];
        p->fwd.stride[i] = xs[perm[i]];
        /* dx axis perm[i] is dy axis i */
        p->bwd.dim[perm[i]] = out.dim[i];
        p->bwd.stride[perm[i]] = ys[i];
    }
    p->numel_x = slim_shape_numel(&x->shape);
    c->set_output(c, 0, SLIM_F32, &out);
    c->set_backward_reads(c, 0, 0);
    return SLIM_OK;
}

static void transpose_forward(const slim_kernel_ctx *c)
{
    const index_params *p = c->params;
    int64_t lo, hi;
    slim_split(p->numel_x, c->ith, c->nth, &lo, &hi);
    gather(&p->fwd, c->in[0].data, c->out[0].data, lo, hi);
}

static void transpose_forward_ref(const slim_kernel_ctx *c)
{
    const index_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int r = p->fwd.rank;
    for (int64_t k = 0; k < p->numel_x; k++) {
        int64_t rem = k, s = 0;
        for (int i = r - 1; i >= 0; i--) {
            s += (rem % p->fwd.dim[i]) * p->fwd.stride[i];
            rem /= p->fwd.dim[i];
        }
        y[k] = x[s];
    }
}

static void transpose_backward(const slim_kernel_ctx *c)
{
    const index_params *p = c->params;
    float *dx = c->din[0].data;
    if (!dx)
        return;
    if (!c->dout[0].data) {
        zero_or(c, dx, p->numel_x);
        return;
    }
    int64_t lo, hi;
    slim_split(p->numel_x, c->ith, c->nth, &lo, &hi);
    gather(&p->bwd, c->dout[0].data, dx, lo, hi);
}

static const slim_attr_spec transpose_attrs[] = {
    {.name = "perm",
     .type = SLIM_ATTR_INTS,
     .def = NULL,
     .doc = "output axis i is input axis perm[i] (numpy's transpose)"},
};

const slim_op_desc slim__op_transpose = {
    .struct_size = sizeof(slim_op_desc),
    .name = "transpose",
    .doc = "permute the axes: y (d[perm[0]], ..., d[perm[r-1]])",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = transpose_attrs,
    .n_attrs = 1,
    .params_size = sizeof(index_params),
    .infer = transpose_infer,
    .forward = transpose_forward,
    .backward = transpose_backward,
    .forward_ref = transpose_forward_ref,
};

/* ---- slice ------------------------------------------------------------------ */

static slim_status slice_infer(slim_infer_ctx *c)
{
    index_params *p = c->params;
    const slim_tensor_desc *x = &c->inputs[0];
    if (x->dtype != SLIM_F32)
        return c->fail(c, SLIM_ETYPE, "input must be f32");
    const int64_t *begin, *size;
    int r = x->shape.rank, nb = c->attr_ints(c, "begin", &begin),
        ns = c->attr_ints(c, "size", &size);
    if (nb != r || ns != r)
        return c->fail(c, SLIM_ESHAPE, "begin and size need %d values each (got %d and %d)", r, nb,
                       ns);
    int64_t xs[SLIM_MAX_DIMS];
    strides_of(&x->shape, xs);
    slim_shape out = {.rank = r};
    p->fwd = (view){.rank = r};
    p->rank = r;
    for (int i = 0; i < r; i++) {
        int64_t d = x->shape.dim[i], b = begin[i], s = size[i] == -1 ? d - b : size[i];
        if (b < 0 || b >= d || s < 1 || s > d - b)
            return c->fail(c, SLIM_ESHAPE,
                           "axis %d: begin %lld size %lld do not fit in dimension %lld", i,
                           (long long)begin[i], (long long)size[i], (long long)d);
        out.dim[i] = s;
        p->fwd.dim[i] = s;
        p->fwd.stride[i] = xs[i];
        p->fwd.offset += b * xs[i];
        p->begin[i] = b;
        p->size[i] = s;
        p->xdim[i] = d;
    }
    p->numel_x = slim_shape_numel(&x->shape);
    p->numel_y = slim_shape_numel(&out);
    c->set_output(c, 0, SLIM_F32, &out);
    c->set_backward_reads(c, 0, 0);
    return SLIM_OK;
}

static void slice_forward(const slim_kernel_ctx *c)
{
    const index_params *p = c->params;
    int64_t lo, hi;
    slim_split(p->numel_y, c->ith, c->nth, &lo, &hi);
    gather(&p->fwd, c->in[0].data, c->out[0].data, lo, hi);
}

static void slice_forward_ref(const slim_kernel_ctx *c)
{
    const index_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    for (int64_t k = 0; k < p->numel_y; k++) {
        int64_t rem = k, s = 0, m = 1;
        for (int i = p->rank - 1; i >= 0; i--) {
            s += (p->begin[i] + rem % p->size[i]) * m;
            rem /= p->size[i];
            m *= p->xdim[i];
        }
        y[k] = x[s];
    }
}

static void slice_backward(const slim_kernel_ctx *c)
{
    const index_params *p = c->params;
    float *dx = c->din[0].data;
    const float *dy = c->dout[0].data;
    if (!dx)
        return;
    int64_t lo, hi;
    slim_split(p->numel_x, c->ith, c->nth, &lo, &hi);
    for (int64_t k = lo; k < hi; k++) {
        int64_t rem = k, s = 0, m = 1;
        bool in = dy != NULL;
        for (int i = p->rank - 1; i >= 0 && in; i--) {
            int64_t j = rem % p->xdim[i] - p->begin[i];
            rem /= p->xdim[i];
            in = j >= 0 && j < p->size[i];
            s += j * m;
            m *= p->size[i];
        }
        dx[k] = in ? dy[s] : 0.0f;
    }
}

static const slim_attr_spec slice_attrs[] = {
    {.name = "begin", .type = SLIM_ATTR_INTS, .def = NULL, .doc = "first index per axis"},
    {.name = "size",
     .type = SLIM_ATTR_INTS,
     .def = NULL,
     .doc = "elements per axis (-1: to the end)"},
};

const slim_op_desc slim__op_slice = {
    .struct_size = sizeof(slim_op_desc),
    .name = "slice",
    .doc = "the block x[begin : begin + size] (step 1)",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = slice_attrs,
    .n_attrs = 2,
    .params_size = sizeof(index_params),
    .infer = slice_infer,
    .forward = slice_forward,
    .backward = slice_backward,
    .forward_ref = slice_forward_ref,
};
