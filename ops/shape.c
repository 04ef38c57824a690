/*
 * ops/shape.c - ops that move data without arithmetic: concat, pad, reshape,
 * flatten, squeeze.
 *
 * concat joins 1..32 inputs along an axis: viewed as OUTER rows, input i
 * contributes a chunk of dim_i * INNER elements to each output row, so every
 * thread copies contiguous segments of its share of the output (and backward
 * copies them back). It works for any dtype.
 *
 * pad (f32) maps each output coordinate to an input coordinate per axis:
 *   CONSTANT   outside -> constant_value
 *   REFLECT    mirror without repeating the edge: [a b c] pads to  b | a b c | b
 *   SYMMETRIC  mirror repeating the edge:         [a b c] pads to  a | a b c | c
 *   EDGE       repeat the edge value
 * (TensorFlow's MirrorPad limits: REFLECT pads <= dim - 1, SYMMETRIC <= dim.)
 * Its backward sums the output gradient over every position that read an
 * input element; each thread owns whole input rows and visits their
 * preimages in a fixed order, so the result does not depend on the thread count.
 *
 * reshape, flatten and squeeze change only the shape; for now they copy.
 */
#include <stdio.h>
#include <string.h>

#include <slim/op.h>

extern const slim_op_desc slim__op_concat;
extern const slim_op_desc slim__op_pad;
extern const slim_op_desc slim__op_reshape;
extern const slim_op_desc slim__op_flatten;
extern const slim_op_desc slim__op_squeeze;

/* For messages. */
static const char *dtype_name(slim_dtype t)
{
    switch (t) {
    case SLIM_F32: return "f32";
    case SLIM_U8: return "u8";
    case SLIM_I32: return "i32";
    case SLIM_I64: return "i64";
    }
    return "unknown";
}

static void shape_str(const slim_shape *s, char *buf, size_t size)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, size - k, "(");
    for (int d = 0; d < s->rank && k < size; d++)
        k += (size_t)snprintf(buf + k, size - k, d ? ",%lld" : "%lld", (long long)s->dim[d]);
    if (k < size)
        snprintf(buf + k, size - k, ")");
}

/* Zero this thread's share of a gradient of n floats. */
static void zero_share(const slim_kernel_ctx *c, float *dx, int64_t n)
{
    int64_t lo, hi;
    slim_split(n, c->ith, c->nth, &lo, &hi);
    memset(dx + lo, 0, (size_t)(hi - lo) * sizeof(float));
}

/* ---- concat ------------------------------------------------------------ */

typedef struct concat_params {
    int n;                          /* inputs */
    int64_t outer;                  /* rows: product of the dims before the axis */
    int64_t width;                  /* elements per output row: sum of chunks */
    int64_t chunk[SLIM_MAX_INPUTS]; /* elements input i adds to each row */
    int64_t start[SLIM_MAX_INPUTS]; /* where they start in the row */
    size_t esize;
} concat_params;

static slim_status concat_infer(slim_infer_ctx *c)
{
    c->set_backward_reads(c, 0, 0); /* backward: copies of dy */
    concat_params *p = c->params;
    const slim_tensor_desc *x0 = &c->inputs[0];
    int rank = x0->shape.rank;
    int64_t axis = c->attr_int(c, "axis");
    char s0[128], si[128];
    shape_str(&x0->shape, s0, sizeof(s0));
    if (rank == 0)
        return c->fail(c, SLIM_ESHAPE, "inputs must have rank >= 1 (input 0 is a scalar)");
    if (axis < -rank || axis >= rank)
        return c->fail(c, SLIM_ESHAPE, "axis %lld is out of range for inputs of rank %d (%s)",
                       (long long)axis, rank, s0);
    if (axis < 0)
        axis += rank;
    slim_shape out = x0->shape;
    out.dim[axis] = 0;
    for (int i = 0; i < c->n_inputs; i++) {
        const slim_tensor_desc *x = &c->inputs[i];
        shape_str(&x->shape, si, sizeof(si));
        if (x->dtype != x0->dtype)
            return c->fail(c, SLIM_ETYPE, "input %d is %s but input 0 is %s: all must match", i,
                           dtype_name(x->dtype), dtype_name(x0->dtype));
        bool ok = x->shape.rank == rank;
        for (int d = 0; ok && d < rank; d++)
            ok = d == axis || x->shape.dim[d] == x0->shape.dim[d];
        if (!ok)
            return c->fail(c, SLIM_ESHAPE,
                           "input %d %s does not match input 0 %s: shapes must be equal except "
                           "along axis %lld",
                           i, si, s0, (long long)axis);
        out.dim[axis] += x->shape.dim[axis];
    }
    int64_t inner = 1;
    p->outer = 1;
    for (int d = 0; d < axis; d++)
        p->outer *= x0->shape.dim[d];
    for (int d = (int)axis + 1; d < rank; d++)
        inner *= x0->shape.dim[d];
    p->n = c->n_inputs;
    p->width = 0;
    for (int i = 0; i < c->n_inputs; i++) {
        p->chunk[i] = c->inputs[i].shape.dim[axis] * inner;
        p->start[i] = p->width;
        p->width += p->chunk[i];
    }
    p->esize = slim_dtype_size(x0->dtype);
    c->set_output(c, 0, x0->dtype, &out);
    return SLIM_OK;
}

/*
 * Walk this thread's share of the output in segments that each lie in one
 * input's chunk; to_out copies input -> output (forward), else output ->
 * input gradient (backward; inputs with no gradient are skipped, and a NULL
 * dout writes zeros).
 */
static void concat_copy(const slim_kernel_ctx *c, bool to_out)
{
    const concat_params *p = c->params;
    size_t es = p->esize;
    int64_t lo, hi;
    if (p->width == 0)
        return;
    slim_split(p->outer * p->width, c->ith, c->nth, &lo, &hi);
    int i = 0;
    while (lo < hi) {
        int64_t row = lo / p->width, col = lo % p->width;
        while (i > 0 && col < p->start[i])
            i--;
        while (col >= p->start[i] + p->chunk[i])
            i++;
        int64_t off = col - p->start[i];
        int64_t len = p->chunk[i] - off < hi - lo ? p->chunk[i] - off : hi - lo;
        int64_t src = row * p->chunk[i] + off; /* element in input i */
        if (to_out) {
            memcpy((char *)c->out[0].data + (size_t)lo * es,
                   (const char *)c->in[i].data + (size_t)src * es, (size_t)len * es);
        } else if (c->din[i].data) {
            char *dst = (char *)c->din[i].data + (size_t)src * es;
            if (c->dout[0].data)
                memcpy(dst, (const char *)c->dout[0].data + (size_t)lo * es, (size_t)len * es);
            else
                memset(dst, 0, (size_t)len * es);
        }
        lo += len;
    }
}

static void concat_forward(const slim_kernel_ctx *c)
{
    concat_copy(c, true);
}

static void concat_backward(const slim_kernel_ctx *c)
{
    concat_copy(c, false);
}

/* Reference: element by element, locating the input from the full index. */
static void concat_forward_ref(const slim_kernel_ctx *c)
{
    const concat_params *p = c->params;
    for (int64_t r = 0; r < p->outer; r++)
        for (int64_t col = 0; col < p->width; col++) {
            int i = 0;
            while (col >= p->start[i] + p->chunk[i])
                i++;
            memcpy((char *)c->out[0].data + (size_t)(r * p->width + col) * p->esize,
                   (const char *)c->in[i].data +
                       (size_t)(r * p->chunk[i] + col - p->start[i]) * p->esize,
                   p->esize);
        }
}

static const slim_attr_spec concat_attrs[] = {
    {.name = "axis", .type = SLIM_ATTR_INT, .def = "-1", .doc = "the axis to join along"},
};

const slim_op_desc slim__op_concat = {
    .struct_size = sizeof(slim_op_desc),
    .name = "concat",
    .doc = "joins 1..32 inputs along an axis; other dimensions must match",
    .min_inputs = 1,
    .max_inputs = SLIM_MAX_INPUTS,
    .n_outputs = 1,
    .attrs = concat_attrs,
    .n_attrs = 1,
    .params_size = sizeof(concat_params),
    .infer = concat_infer,
    .forward = concat_forward,
    .backward = concat_backward,
    .forward_ref = concat_forward_ref,
};

/* ---- pad --------------------------------------------------------------- */

enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_SYMMETRIC, PAD_EDGE };

typedef struct pad_params {
    int rank;
    enum pad_mode mode;
    float value;
    int64_t in[SLIM_MAX_DIMS], out[SLIM_MAX_DIMS], before[SLIM_MAX_DIMS];
    int64_t istride[SLIM_MAX_DIMS], ostride[SLIM_MAX_DIMS];
} pad_params;

/* The input coordinate output coordinate o of axis d reads, or -1 (constant). */
static int64_t pad_map(const pad_params *p, int d, int64_t o)
{
    int64_t q = o - p->before[d], n = p->in[d];
    if (q >= 0 && q < n)
        return q;
    switch (p->mode) {
    case PAD_REFLECT: return q < 0 ? -q : 2 * (n - 1) - q;
    case PAD_SYMMETRIC: return q < 0 ? -q - 1 : 2 * n - 1 - q;
    case PAD_EDGE: return q < 0 ? 0 : n - 1;
    case PAD_CONSTANT: break;
    }
    return -1;
}

/*
 * The output coordinates of axis d that read input coordinate q, as up to 3
 * ranges [lo, hi) in increasing order (left pad, the copy itself, right pad).
 */
static int pad_preimage(const pad_params *p, int d, int64_t q, int64_t *lo, int64_t *hi)
{
    int64_t b = p->before[d], n = p->in[d], on = p->out[d], o;
    int k = 0;
    switch (p->mode) {
    case PAD_CONSTANT: break;
    case PAD_REFLECT:
        o = b - q;
        if (q >= 1 && o >= 0)
            lo[k] = o, hi[k++] = o + 1;
        break;
    case PAD_SYMMETRIC:
        o = b - q - 1;
        if (o >= 0)
            lo[k] = o, hi[k++] = o + 1;
        break;
    case PAD_EDGE:
        if (q == 0 && b > 0)
            lo[k] = 0, hi[k++] = b;
        break;
    }
    lo[k] = b + q, hi[k++] = b + q + 1;
    switch (p->mode) {
    case PAD_CONSTANT: break;
    case PAD_REFLECT:
        o = b + 2 * (n - 1) - q;
        if (q <= n - 2 && o < on)
            lo[k] = o, hi[k++] = o + 1;
        break;
    case PAD_SYMMETRIC:
        o = b + 2 * n - 1 - q;
        if (o < on)
            lo[k] = o, hi[k++] = o + 1;
        break;
    case PAD_EDGE:
        if (q == n - 1 && b + n < on)
            lo[k] = b + n, hi[k++] = on;
        break;
    }
    return k;
}

static slim_status pad_infer(slim_infer_ctx *c)
{
    c->set_backward_reads(c, 0, 0); /* backward: a crop of dy */
    pad_params *p = c->params;
    const slim_tensor_desc *x = &c->inputs[0];
    const int64_t *pads;
    int np = c->attr_ints(c, "paddings", &pads);
    const char *mode = c->attr_str(c, "mode");
    char xs[128];
    shape_str(&x->shape, xs, sizeof(xs));
    if (x->dtype != SLIM_F32)
        return c->fail(c, SLIM_ETYPE, "input must be f32 (got %s)", dtype_name(x->dtype));
    if (x->shape.rank < 1)
        return c->fail(c, SLIM_ESHAPE, "input must have rank >= 1 (got a scalar)");
    if (np != 2 * x->shape.rank)
        return c->fail(c, SLIM_ESHAPE,
                       "paddings has %d values; an input of rank %d %s needs %d "
                       "(before and after for each axis)",
                       np, x->shape.rank, xs, 2 * x->shape.rank);
    if (!strcmp(mode, "REFLECT"))
        p->mode = PAD_REFLECT;
    else if (!strcmp(mode, "SYMMETRIC"))
        p->mode = PAD_SYMMETRIC;
    else if (!strcmp(mode, "EDGE"))
        p->mode = PAD_EDGE;
    else
        p->mode = PAD_CONSTANT;
    p->value = (float)c->attr_float(c, "constant_value");
    p->rank = x->shape.rank;
    slim_shape out = x->shape;
    for (int d = 0; d < p->rank; d++) {
        int64_t b = pads[2 * d], a = pads[2 * d + 1], n = x->shape.dim[d];
        if (b < 0 || a < 0)
            return c->fail(c, SLIM_ESHAPE, "paddings of axis %d are %lld, %lld: must be >= 0", d,
                           (long long)b, (long long)a);
        int64_t limit = p->mode == PAD_REFLECT     ? n - 1
                        : p->mode == PAD_SYMMETRIC ? n
                        : p->mode == PAD_EDGE      ? (n > 0 ? INT64_MAX : 0)
                                                   : INT64_MAX;
        if (b > limit || a > limit)
            return c->fail(c, SLIM_ESHAPE,
                           "paddings of axis %d (%lld, %lld) are too large for %s mode on an "
                           "input %s: at most %lld each",
                           d, (long long)b, (long long)a, mode, xs, (long long)limit);
        p->in[d] = n;
        p->before[d] = b;
        if (__builtin_add_overflow(b, n, &out.dim[d]) ||
            __builtin_add_overflow(out.dim[d], a, &out.dim[d]))
            return c->fail(c, SLIM_ESHAPE,
                           "paddings of axis %d (%lld, %lld) of an input %s are too large", d,
                           (long long)b, (long long)a, xs);
        p->out[d] = out.dim[d];
    }
    int64_t is = 1, os = 1;
    for (int d = p->rank - 1; d >= 0; d--) {
        p->istride[d] = is;
        p->ostride[d] = os;
        if (__builtin_mul_overflow(is, p->in[d], &is) || __builtin_mul_overflow(os, p->out[d], &os))
            return c->fail(
                c, SLIM_ESHAPE,
                "the paddings make the output of an input %s too large (axis %d is %lld)", xs, d,
                (long long)p->out[d]);
    }
    c->set_output(c, 0, SLIM_F32, &out);
    return SLIM_OK;
}

static void pad_forward(const slim_kernel_ctx *c)
{
    const pad_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int L = p->rank - 1;
    int64_t ol = p->out[L], il = p->in[L], b = p->before[L];
    if (ol == 0)
        return;
    int64_t lo, hi;
    slim_split(slim_shape_numel(&c->out[0].shape) / ol, c->ith, c->nth, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        float *yr = y + row * ol;
        int64_t r = row, src = 0;
        bool outside = false;
        for (int d = L - 1; d >= 0; d--) {
            int64_t q = pad_map(p, d, r % p->out[d]);
            r /= p->out[d];
            outside |= q < 0;
            src += q * p->istride[d];
        }
        if (outside) {
            for (int64_t j = 0; j < ol; j++)
                yr[j] = p->value;
            continue;
        }
        const float *xr = x + src;
        memcpy(yr + b, xr, (size_t)il * sizeof(float));
        for (int64_t j = 0; j < b; j++) {
            int64_t q = pad_map(p, L, j);
            yr[j] = q < 0 ? p->value : xr[q];
        }
        for (int64_t j = b + il; j < ol; j++) {
            int64_t q = pad_map(p, L, j);
            yr[j] = q < 0 ? p->value : xr[q];
        }
    }
}

/* Reference: every output element from its full index. */
static void pad_forward_ref(const slim_kernel_ctx *c)
{
    const pad_params *p = c->params;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t n = slim_shape_numel(&c->out[0].shape);
    for (int64_t e = 0; e < n; e++) {
        int64_t r = e, src = 0;
        bool outside = false;
        for (int d = p->rank - 1; d >= 0; d--) {
            int64_t q = pad_map(p, d, r % p->out[d]);
            r /= p->out[d];
            outside |= q < 0;
            src += q * p->istride[d];
        }
        y[e] = outside ? p->value : x[src];
    }
}

/* Add one output gradient row (last axis) into an input gradient row. */
static void pad_fold_last(const pad_params *p, const float *g, float *dx)
{
    int L = p->rank - 1;
    int64_t b = p->before[L], il = p->in[L], ol = p->out[L];
    for (int64_t q = 0; q < il; q++)
        dx[q] += g[b + q];
    if (p->mode == PAD_CONSTANT)
        return;
    for (int64_t j = 0; j < b; j++)
        dx[pad_map(p, L, j)] += g[j];
    for (int64_t j = b + il; j < ol; j++)
        dx[pad_map(p, L, j)] += g[j];
}

/* Sum, into dx, every output row that reads the input row q[0..rank-2] (axes >= d left). */
static void pad_fold(const pad_params *p, int d, const int64_t *q, const float *g, float *dx)
{
    if (d == p->rank - 1) {
        pad_fold_last(p, g, dx);
        return;
    }
    int64_t lo[3], hi[3];
    int k = pad_preimage(p, d, q[d], lo, hi);
    for (int i = 0; i < k; i++)
        for (int64_t o = lo[i]; o < hi[i]; o++)
            pad_fold(p, d + 1, q, g + o * p->ostride[d], dx);
}

static void pad_backward(const slim_kernel_ctx *c)
{
    const pad_params *p = c->params;
    const float *dy = c->dout[0].data;
    float *dx = c->din[0].data;
    int64_t n = slim_shape_numel(&c->in[0].shape), il = p->in[p->rank - 1];
    if (!dx)
        return;
    if (!dy || il == 0) {
        zero_share(c, dx, n);
        return;
    }
    int64_t lo, hi;
    slim_split(n / il, c->ith, c->nth, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        int64_t q[SLIM_MAX_DIMS], r = row;
        for (int d = p->rank - 2; d >= 0; d--) {
            q[d] = r % p->in[d];
            r /= p->in[d];
        }
        float *dxr = dx + row * il;
        memset(dxr, 0, (size_t)il * sizeof(float));
        pad_fold(p, 0, q, dy, dxr);
    }
}

static const slim_attr_spec pad_attrs[] = {
    {.name = "paddings",
     .type = SLIM_ATTR_INTS,
     .def = NULL,
     .doc = "before_0, after_0, before_1, after_1, ... (2 per axis)"},
    {.name = "mode",
     .type = SLIM_ATTR_STRING,
     .def = "CONSTANT",
     .choices = "CONSTANT|REFLECT|SYMMETRIC|EDGE",
     .doc = "how the border is filled"},
    {.name = "constant_value", .type = SLIM_ATTR_FLOAT, .def = "0", .doc = "CONSTANT fill"},
};

const slim_op_desc slim__op_pad = {
    .struct_size = sizeof(slim_op_desc),
    .name = "pad",
    .doc = "pads every axis before and after (constant, mirror or edge)",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = pad_attrs,
    .n_attrs = 3,
    .params_size = sizeof(pad_params),
    .infer = pad_infer,
    .forward = pad_forward,
    .backward = pad_backward,
    .forward_ref = pad_forward_ref,
};

/* ---- reshape, flatten, squeeze: a copy with a new shape ----------------- */

typedef struct copy_params {
    int64_t numel;
    size_t esize;
} copy_params;

static void copy_set(slim_infer_ctx *c, const slim_shape *out)
{
    copy_params *p = c->params;
    p->numel = slim_shape_numel(&c->inputs[0].shape);
    p->esize = slim_dtype_size(c->inputs[0].dtype);
    c->set_output(c, 0, c->inputs[0].dtype, out);
}

static void copy_forward(const slim_kernel_ctx *c)
{
    const copy_params *p = c->params;
    int64_t lo, hi;
    slim_split(p->numel, c->ith, c->nth, &lo, &hi);
    memcpy((char *)c->out[0].data + (size_t)lo * p->esize,
           (const char *)c->in[0].data + (size_t)lo * p->esize, (size_t)(hi - lo) * p->esize);
}

static void copy_backward(const slim_kernel_ctx *c)
{
    const copy_params *p = c->params;
    float *dx = c->din[0].data;
    const float *dy = c->dout[0].data;
    int64_t lo, hi;
    if (!dx)
        return;
    slim_split(p->numel, c->ith, c->nth, &lo, &hi);
    if (dy)
        memcpy(dx + lo, dy + lo, (size_t)(hi - lo) * sizeof(float));
    else
        memset(dx + lo, 0, (size_t)(hi - lo) * sizeof(float));
}

static slim_status reshape_infer(slim_infer_ctx *c)
{
    c->set_backward_reads(c, 0, 0); /* backward: dy reshaped */
    const slim_shape *in = &c->inputs[0].shape;
    const int64_t *v;
    int n = c->attr_ints(c, "shape", &v);
    char xs[128];
    shape_str(in, xs, sizeof(xs));
    if (n > SLIM_MAX_DIMS)
        return c->fail(c, SLIM_ESHAPE, "shape has %d dimensions; at most %d are supported", n,
                       SLIM_MAX_DIMS);
    slim_shape out = {.rank = n};
    int infer_at = -1;
    int64_t known = 1, numel = slim_shape_numel(in);
    for (int i = 0; i < n; i++) {
        if (v[i] == -1) {
            if (infer_at >= 0)
                return c->fail(c, SLIM_ESHAPE, "shape has more than one -1 (dimensions %d and %d)",
                               infer_at, i);
            infer_at = i;
            continue;
        }
        if (v[i] < -1)
            return c->fail(c, SLIM_ESHAPE, "shape dimension %d is %lld: must be >= -1", i,
                           (long long)v[i]);
        if (v[i] == 0) {
            if (i >= in->rank)
                return c->fail(c, SLIM_ESHAPE,
                               "shape dimension %d is 0 (copy the input's), but the input %s "
                               "has rank %d",
                               i, xs, in->rank);
            out.dim[i] = in->dim[i];
        } else {
            out.dim[i] = v[i];
        }
        known *= out.dim[i];
    }
    if (infer_at >= 0) {
        if (known == 0 || numel % known != 0)
            return c->fail(c, SLIM_ESHAPE,
                           "cannot infer the -1 dimension: %lld elements of input %s are not a "
                           "multiple of %lld",
                           (long long)numel, xs, (long long)known);
        out.dim[infer_at] = numel / known;
        known *= out.dim[infer_at];
    }
    if (known != numel) {
        char os[128];
        shape_str(&out, os, sizeof(os));
        return c->fail(c, SLIM_ESHAPE,
                       "cannot reshape input %s (%lld elements) to %s (%lld elements)", xs,
                       (long long)numel, os, (long long)known);
    }
    copy_set(c, &out);
    return SLIM_OK;
}

static const slim_attr_spec reshape_attrs[] = {
    {.name = "shape",
     .type = SLIM_ATTR_INTS,
     .def = NULL,
     .doc = "new dimensions; one may be -1 (inferred), 0 copies the input's dimension"},
};

const slim_op_desc slim__op_reshape = {
    .struct_size = sizeof(slim_op_desc),
    .name = "reshape",
    .doc = "the same elements in a new shape",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = reshape_attrs,
    .n_attrs = 1,
    .params_size = sizeof(copy_params),
    .infer = reshape_infer,
    .forward = copy_forward,
    .backward = copy_backward,
    .forward_ref = copy_forward,
};

static slim_status flatten_infer(slim_infer_ctx *c)
{
    c->set_backward_reads(c, 0, 0); /* backward: dy reshaped */
    const slim_shape *in = &c->inputs[0].shape;
    int64_t axis = c->attr_int(c, "axis");
    if (axis < -in->rank || axis > in->rank) {
        char xs[128];
        shape_str(in, xs, sizeof(xs));
        return c->fail(c, SLIM_ESHAPE, "axis %lld is out of range for input %s of rank %d",
                       (long long)axis, xs, in->rank);
    }
    if (axis < 0)
        axis += in->rank;
    slim_shape out = {.rank = 2, .dim = {1, 1}};
    for (int d = 0; d < in->rank; d++)
        out.dim[d < axis ? 0 : 1] *= in->dim[d];
    copy_set(c, &out);
    return SLIM_OK;
}

static const slim_attr_spec flatten_attrs[] = {
    {.name = "axis",
     .type = SLIM_ATTR_INT,
     .def = "1",
     .doc = "dims before it form the first output dim, the rest the second"},
};

const slim_op_desc slim__op_flatten = {
    .struct_size = sizeof(slim_op_desc),
    .name = "flatten",
    .doc = "reshape to 2-D: (prod dims before axis, prod dims from axis)",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = flatten_attrs,
    .n_attrs = 1,
    .params_size = sizeof(copy_params),
    .infer = flatten_infer,
    .forward = copy_forward,
    .backward = copy_backward,
    .forward_ref = copy_forward,
};

static slim_status squeeze_infer(slim_infer_ctx *c)
{
    c->set_backward_reads(c, 0, 0); /* backward: dy reshaped */
    const slim_shape *in = &c->inputs[0].shape;
    const int64_t *axes;
    int n = c->attr_ints(c, "axes", &axes);
    bool drop[SLIM_MAX_DIMS] = {false};
    char xs[128];
    shape_str(in, xs, sizeof(xs));
    for (int i = 0; i < n; i++) {
        int64_t a = axes[i];
        if (a < -in->rank || a >= in->rank)
            return c->fail(c, SLIM_ESHAPE, "axis %lld is out of range for input %s of rank %d",
                           (long long)a, xs, in->rank);
        if (a < 0)
            a += in->rank;
        if (drop[a])
            return c->fail(c, SLIM_ESHAPE, "axis %lld is listed twice in axes", (long long)a);
        if (in->dim[a] != 1)
            return c->fail(c, SLIM_ESHAPE,
                           "axis %lld of input %s has size %lld: only size-1 axes can be "
                           "squeezed",
                           (long long)a, xs, (long long)in->dim[a]);
        drop[a] = true;
    }
    slim_shape out = {.rank = 0};
    for (int d = 0; d < in->rank; d++)
        if (!(n ? drop[d] : in->dim[d] == 1))
            out.dim[out.rank++] = in->dim[d];
    copy_set(c, &out);
    return SLIM_OK;
}

static const slim_attr_spec squeeze_attrs[] = {
    {.name = "axes",
     .type = SLIM_ATTR_INTS,
     .def = "[]",
     .doc = "size-1 axes to remove; empty = every size-1 axis"},
};

const slim_op_desc slim__op_squeeze = {
    .struct_size = sizeof(slim_op_desc),
    .name = "squeeze",
    .doc = "removes size-1 axes",
    .min_inputs = 1,
    .max_inputs = 1,
    .n_outputs = 1,
    .attrs = squeeze_attrs,
    .n_attrs = 1,
    .params_size = sizeof(copy_params),
    .infer = squeeze_infer,
    .forward = copy_forward,
    .backward = copy_backward,
    .forward_ref = copy_forward,
};
