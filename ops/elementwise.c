/*
 * ops/elementwise.c - add, multiply (numpy broadcasting) and bias_add.
 *
 * Broadcasting: the two shapes are aligned on the right; each dimension pair
 * must be equal or contain a 1. infer reduces the pair to a canonical form:
 * output dimensions of size 1 are dropped, and neighbouring dimensions in
 * which each operand is either broadcast in both or in neither are merged.
 * (N,H,W,C) * (N,1,1,C) becomes (N, H*W, C) with b's strides (C, 0, 1); two
 * equal shapes become one dimension. The kernels then walk the output in
 * contiguous runs of the innermost merged dimension, where each operand's
 * stride is 0 or 1, so the inner loops are plain vectorizable loops.
 *
 * Backward reduces the output gradient over the dimensions an operand was
 * broadcast in. Each thread owns a range of that operand's elements and sums
 * their contributions in a fixed order (independent of the thread count), so
 * gradients are deterministic without atomics. bias_add, whose bias gradient
 * is a column sum over many rows, instead uses per-thread partial sums in the
 * workspace and a reduction in thread order (deterministic for a given nth).
 *
 * add also takes 3..32 inputs of one shape (residual sums); multiply takes 2.
 */
#include <stdio.h>
#include <string.h>

#include <slim/op.h>

#include "ops/act.h"

extern const slim_op_desc slim__op_add;
extern const slim_op_desc slim__op_multiply;
extern const slim_op_desc slim__op_bias_add;

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

/* The canonical broadcast form of a binary op (see the top comment). */
typedef struct bcast {
    int m;                       /* merged dimensions, >= 1 */
    int64_t n[SLIM_MAX_DIMS];    /* their sizes */
    int64_t so[SLIM_MAX_DIMS];   /* output strides (contiguous) */
    int64_t s[2][SLIM_MAX_DIMS]; /* strides of a and b; 0 = broadcast */
    int64_t numel;               /* of the output */
    int64_t numel_in[2];         /* of a and b */
} bcast;

typedef struct binary_params {
    bcast bc;
    bool mul; /* multiply, else add */
    int act;  /* add: the activation applied to y (ops/act.h) */
} binary_params;

/* Broadcast a against b into the canonical form and the output shape. */
static slim_status bcast_init(slim_infer_ctx *c, const slim_shape *a, const slim_shape *b,
                              bcast *bc, slim_shape *out)
{
    int r = a->rank > b->rank ? a->rank : b->rank;
    const slim_shape *in[2] = {a, b};
    bool prev_flag[2] = {false, false};
    *out = (slim_shape){.rank = r};
    bc->m = 0;
    for (int d = 0; d < r; d++) {
        int64_t dim[2];
        for (int k = 0; k < 2; k++) {
            int off = r - in[k]->rank;
            dim[k] = d >= off ? in[k]->dim[d - off] : 1;
        }
        if (dim[0] != dim[1] && dim[0] != 1 && dim[1] != 1) {
            char sa[128], sb[128];
            slim_shape_str(a, sa, sizeof(sa));
            slim_shape_str(b, sb, sizeof(sb));
            return c->fail(c, SLIM_ESHAPE,
                           "shapes %s and %s do not broadcast: dimension %d is %lld vs %lld "
                           "(each pair must be equal or contain a 1)",
                           sa, sb, d, (long long)dim[0], (long long)dim[1]);
        }
        int64_t od = dim[0] == 1 ? dim[1] : dim[0];
        out->dim[d] = od;
        if (od == 1)
            continue; /* size-1 output dimensions carry no index */
        bool flag[2] = {dim[0] == 1, dim[1] == 1};
        if (bc->m > 0 && flag[0] == prev_flag[0] && flag[1] == prev_flag[1]) {
            bc->n[bc->m - 1] *= od;
        } else {
            bc->n[bc->m++] = od;
            prev_flag[0] = flag[0];
            prev_flag[1] = flag[1];
        }
        /* Remember per merged dim whether each operand is broadcast: in s[k] for now. */
        bc->s[0][bc->m - 1] = flag[0];
        bc->s[1][bc->m - 1] = flag[1];
    }
    if (bc->m == 0) { /* every dimension is 1: one element */
        bc->m = 1;
        bc->n[0] = 1;
        bc->s[0][0] = bc->s[1][0] = 0;
    }
    int64_t run_o = 1, run[2] = {1, 1};
    for (int d = bc->m - 1; d >= 0; d--) {
        bc->so[d] = run_o;
        run_o *= bc->n[d];
        for (int k = 0; k < 2; k++) {
            bool broadcast = bc->s[k][d] != 0;
            bc->s[k][d] = broadcast ? 0 : run[k];
            if (!broadcast)
                run[k] *= bc->n[d];
        }
    }
    bc->numel = run_o;
    bc->numel_in[0] = slim_shape_numel(a);
    bc->numel_in[1] = slim_shape_numel(b);
    return SLIM_OK;
}

/* ---- forward: y = p op q over the canonical form ------------------------ */

/* One run of len elements; sp, sq (0 or 1) are the operands' innermost strides. */
static void run_apply(float *y, const float *p, const float *q, int64_t len, int64_t sp, int64_t sq,
                      bool mul)
{
    if (sp && sq) {
        if (mul)
            for (int64_t i = 0; i < len; i++)
                y[i] = p[i] * q[i];
        else
            for (int64_t i = 0; i < len; i++)
                y[i] = p[i] + q[i];
    } else if (sp) {
        const float v = q[0];
        if (mul)
            for (int64_t i = 0; i < len; i++)
                y[i] = p[i] * v;
        else
            for (int64_t i = 0; i < len; i++)
                y[i] = p[i] + v;
    } else if (sq) {
        const float v = p[0];
        if (mul)
            for (int64_t i = 0; i < len; i++)
                y[i] = v * q[i];
        else
            for (int64_t i = 0; i < len; i++)
                y[i] = v + q[i];
    } else { /* only in the one-element form */
        for (int64_t i = 0; i < len; i++)
            y[i] = mul ? p[0] * q[0] : p[0] + q[0];
    }
}

/*
 * y = p op q where p, q have strides sp, sq over bc's dims and y is
 * contiguous; this thread does its share of the output elements, in runs
 * along the innermost dimension.
 */
static void bcast_apply(const bcast *bc, const int64_t *sp, const int64_t *sq, const float *p,
                        const float *q, float *y, bool mul, int ith, int nth)
{
    int m = bc->m;
    int64_t inner = bc->n[m - 1], lo, hi;
    if (bc->numel == 0)
        return;
    slim_split(bc->numel, ith, nth, &lo, &hi);
    while (lo < hi) {
        int64_t row = lo / inner, col = lo % inner;
        int64_t len = inner - col < hi - lo ? inner - col : hi - lo;
        int64_t op = col * sp[m - 1], oq = col * sq[m - 1];
        for (int d = m - 2; d >= 0; d--) {
            int64_t i = row % bc->n[d];
            row /= bc->n[d];
            op += i * sp[d];
            oq += i * sq[d];
        }
        run_apply(y + lo, p + op, q + oq, len, sp[m - 1], sq[m - 1], mul);
        lo += len;
    }
}

/* ---- backward: reduce over broadcast dimensions ------------------------ */

/* An odometer over a list of dimensions, tracking offsets in two arrays. */
typedef struct odo {
    int k;
    int64_t n[SLIM_MAX_DIMS], s1[SLIM_MAX_DIMS], s2[SLIM_MAX_DIMS], idx[SLIM_MAX_DIMS];
    int64_t off1, off2, count;
} odo;

static void odo_init(odo *it, const bcast *bc, const int *dims, int k, const int64_t *s1,
                     const int64_t *s2)
{
    it->k = k;
    it->off1 = it->off2 = 0;
    it->count = 1;
    for (int i = 0; i < k; i++) {
        it->n[i] = bc->n[dims[i]];
        it->s1[i] = s1[dims[i]];
        it->s2[i] = s2 ? s2[dims[i]] : 0;
        it->idx[i] = 0;
        it->count *= it->n[i];
    }
}

static void odo_next(odo *it)
{
    for (int i = it->k - 1; i >= 0; i--) {
        it->off1 += it->s1[i];
        it->off2 += it->s2[i];
        if (++it->idx[i] < it->n[i])
            return;
        it->off1 -= it->s1[i] * it->n[i];
        it->off2 -= it->s2[i] * it->n[i];
        it->idx[i] = 0;
    }
}

/*
 * dx[j] = sum of dy[o] * t[o_t] (t = NULL: 1) over the output positions o
 * that operand x (strides sx) reads its element j at; st are t's strides.
 * This thread computes its share of x's elements, each summed in the same
 * order whatever the thread count.
 */
static void bcast_reduce(const bcast *bc, const int64_t *sx, const int64_t *st, const float *dy,
                         const float *t, float *dx, int64_t numel_x, int ith, int nth)
{
    int m = bc->m, kept[SLIM_MAX_DIMS], red[SLIM_MAX_DIMS], nk = 0, nr = 0;
    for (int d = 0; d < m; d++) {
        if (sx[d])
            kept[nk++] = d;
        else
            red[nr++] = d;
    }
    static const int64_t zero[SLIM_MAX_DIMS];
    if (!st)
        st = zero;
    int64_t lo, hi;
    slim_split(numel_x, ith, nth, &lo, &hi);
    if (bc->numel == 0) { /* an empty output: nothing flows back */
        memset(dx + lo, 0, (size_t)(hi - lo) * sizeof(float));
        return;
    }
    bool inner_kept = sx[m - 1] != 0;
    int64_t last = bc->n[m - 1];
    while (lo < hi) {
        /* Output and t offsets of x's element lo (over the kept dimensions). */
        int64_t j = lo, bo = 0, bt = 0;
        for (int i = nk - 1; i >= 0; i--) {
            int d = kept[i];
            int64_t v = j % bc->n[d];
            j /= bc->n[d];
            bo += v * bc->so[d];
            bt += v * st[d];
        }
        odo it;
        if (inner_kept) {
            /* A run of x's innermost dimension: vector accumulation over every reduced
             * position (all of them outer to the run). */
            int64_t col = lo % last, len = last - col < hi - lo ? last - col : hi - lo;
            int64_t tstep = st[m - 1];
            float *acc = dx + lo;
            memset(acc, 0, (size_t)len * sizeof(float));
            odo_init(&it, bc, red, nr, bc->so, st);
            for (int64_t r = 0; r < it.count; r++, odo_next(&it)) {
                const float *g = dy + bo + it.off1;
                if (!t) {
                    for (int64_t i = 0; i < len; i++)
                        acc[i] += g[i];
                } else if (tstep) {
                    const float *u = t + bt + it.off2;
                    for (int64_t i = 0; i < len; i++)
                        acc[i] += g[i] * u[i];
                } else {
                    const float v = t[bt + it.off2];
                    for (int64_t i = 0; i < len; i++)
                        acc[i] += g[i] * v;
                }
            }
            lo += len;
        } else {
            /* x is broadcast along the innermost dimension: one scalar sum over
             * contiguous runs of the output (and of t, whose inner stride is 1). */
            float acc = 0.0f;
            odo_init(&it, bc, red, nr - 1, bc->so, st);
            for (int64_t r = 0; r < it.count; r++, odo_next(&it)) {
                const float *g = dy + bo + it.off1;
                if (t) {
                    const float *u = t + bt + it.off2;
                    for (int64_t i = 0; i < last; i++)
                        acc += g[i] * u[i];
                } else {
                    for (int64_t i = 0; i < last; i++)
                        acc += g[i];
                }
            }
            dx[lo++] = acc;
        }
    }
}

/* ---- add / multiply ---------------------------------------------------- */

static slim_status binary_infer(slim_infer_ctx *c, bool mul)
{
    binary_params *p = c->params;
    p->mul = mul;
    for (int i = 0; i < c->n_inputs; i++)
        if (c->inputs[i].dtype != SLIM_F32)
            return c->fail(c, SLIM_ETYPE, "input %d must be f32 (got %s)", i,
                           dtype_name(c->inputs[i].dtype));
    if (c->n_inputs > 2) {
        const slim_shape *s0 = &c->inputs[0].shape;
        for (int i = 1; i < c->n_inputs; i++) {
            const slim_shape *si = &c->inputs[i].shape;
            bool same = si->rank == s0->rank;
            for (int d = 0; same && d < s0->rank; d++)
                same = si->dim[d] == s0->dim[d];
            if (!same) {
                char a[128], b[128];
                slim_shape_str(s0, a, sizeof(a));
                slim_shape_str(si, b, sizeof(b));
                return c->fail(c, SLIM_ESHAPE,
                               "with more than 2 inputs all shapes must be equal (no "
                               "broadcasting): input 0 is %s, input %d is %s",
                               a, i, b);
            }
        }
    }
    slim_shape out;
    slim_status st = bcast_init(c, &c->inputs[0].shape, &c->inputs[1].shape, &p->bc, &out);
    if (st)
        return st;
    c->set_output(c, 0, SLIM_F32, &out);
    return SLIM_OK;
}

static slim_status add_infer(slim_infer_ctx *c)
{
    binary_params *p = c->params;
    p->act = act_parse(c->attr_str(c, "activation"));
    /* dx = dy (reduced where broadcast), masked by y's activation */
    c->set_backward_reads(c, 0, p->act != ACT_NONE ? 1u : 0u);
    slim_status st = binary_infer(c, false);
    if (st)
        return st;
    /* y may take the memory of input 0 or 1 at full size (each of their
     * elements is read for that element of y only; inputs 2.. are added to
     * y after it is stored), and dx that of dy for every input at full size
     * (each dx is dy, or dy through the activation computed before it is
     * stored) */
    for (int i = 0; i < c->n_inputs; i++)
        if (p->bc.numel_in[i < 2 ? i : 0] == p->bc.numel) {
            if (i < 2)
                c->set_in_place(c, 0, i);
            c->set_backward_in_place(c, i, 0);
        }
    if (p->act == ACT_NONE)
        return SLIM_OK;
    for (int i = 0; i < c->n_inputs; i++)
        if (p->bc.numel_in[i < 2 ? i : 0] != p->bc.numel) {
            char a[128], b[128];
            slim_shape_str(&c->inputs[0].shape, a, sizeof a);
            slim_shape_str(&c->inputs[1].shape, b, sizeof b);
            return c->fail(c, SLIM_ESHAPE,
                           "activation=%s needs inputs of one shape (no broadcasting), got %s "
                           "and %s; use a separate activation layer",
                           c->attr_str(c, "activation"), a, b);
        }
    return SLIM_OK;
}

static slim_status multiply_infer(slim_infer_ctx *c)
{
    c->set_backward_reads(c, ~0u, 0); /* dx = dy * the other input */
    return binary_infer(c, true);
}

static void binary_forward(const slim_kernel_ctx *c)
{
    const binary_params *p = c->params;
    const bcast *bc = &p->bc;
    float *y = c->out[0].data;
    int64_t lo, hi;
    slim_split(bc->numel, c->ith, c->nth, &lo, &hi);
    if (p->act != ACT_NONE) {
        /* equal shapes (infer): the sum and the activation in one pass, one
         * loop per activation so that each vectorizes */
        const float *a = c->in[0].data, *b = c->in[1].data;
        if (c->n_inputs == 2 && p->act == ACT_RELU) {
            for (int64_t i = lo; i < hi; i++)
                y[i] = act_fwd(ACT_RELU, a[i] + b[i]);
            return;
        }
        for (int64_t i = lo; i < hi; i++)
            y[i] = a[i] + b[i];
        for (int k = 2; k < c->n_inputs; k++) {
            const float *x = c->in[k].data;
            for (int64_t i = lo; i < hi; i++)
                y[i] += x[i];
        }
        if (p->act == ACT_RELU)
            for (int64_t i = lo; i < hi; i++)
                y[i] = act_fwd(ACT_RELU, y[i]);
        else
            for (int64_t i = lo; i < hi; i++)
                y[i] = act_fwd(ACT_RELU6, y[i]);
        return;
    }
    bcast_apply(bc, bc->s[0], bc->s[1], c->in[0].data, c->in[1].data, y, p->mul, c->ith, c->nth);
    if (c->n_inputs > 2) { /* equal shapes: add the rest in input order */
        for (int k = 2; k < c->n_inputs; k++) {
            const float *x = c->in[k].data;
            for (int64_t i = lo; i < hi; i++)
                y[i] += x[i];
        }
    }
}

static void binary_backward(const slim_kernel_ctx *c)
{
    const binary_params *p = c->params;
    const bcast *bc = &p->bc;
    const float *dy = c->dout[0].data;
    int64_t lo, hi;
    /* Two gradients equal to dy (through the activation when fused): one
     * pass reads dy (and y) once and writes both (the residual add). */
    float *d0 = NULL, *d1 = NULL;
    int nd = 0;
    if (dy && (p->act != ACT_NONE || !p->mul)) {
        for (int k = 0; k < c->n_inputs; k++) {
            float *dx = c->din[k].data;
            int kb = k < 2 ? k : 0;
            if (!dx)
                continue;
            if (bc->numel_in[kb] != bc->numel)
                nd = 3; /* broadcast: the general path below */
            else if (nd++ == 0)
                d0 = dx;
            else
                d1 = dx;
        }
    }
    if (nd == 2) {
        const float *y = c->out[0].data;
        slim_split(bc->numel, c->ith, c->nth, &lo, &hi);
        if (p->act == ACT_NONE && (d0 == dy || d1 == dy)) /* one of them is dy already */
            memcpy((d0 == dy ? d1 : d0) + lo, dy + lo, (size_t)(hi - lo) * sizeof(float));
        else if (p->act == ACT_NONE)
            for (int64_t i = lo; i < hi; i++)
                d0[i] = d1[i] = dy[i];
        else if (p->act == ACT_RELU)
            for (int64_t i = lo; i < hi; i++)
                d0[i] = d1[i] = act_bwd(ACT_RELU, y[i], dy[i]);
        else
            for (int64_t i = lo; i < hi; i++)
                d0[i] = d1[i] = act_bwd(ACT_RELU6, y[i], dy[i]);
        return;
    }
    if (p->act != ACT_NONE && dy) {
        /* equal shapes (infer): every dx is dy through the activation,
         * computed once and copied to the others */
        const float *y = c->out[0].data, *first = NULL;
        slim_split(bc->numel, c->ith, c->nth, &lo, &hi);
        for (int k = 0; k < c->n_inputs; k++) {
            float *dx = c->din[k].data;
            if (!dx)
                continue;
            if (first)
                memcpy(dx + lo, first + lo, (size_t)(hi - lo) * sizeof(float));
            else if (p->act == ACT_RELU)
                for (int64_t i = lo; i < hi; i++)
                    dx[i] = act_bwd(ACT_RELU, y[i], dy[i]);
            else
                for (int64_t i = lo; i < hi; i++)
                    dx[i] = act_bwd(ACT_RELU6, y[i], dy[i]);
            if (!first)
                first = dx;
        }
        return;
    }
    for (int k = 0; k < c->n_inputs; k++) {
        float *dx = c->din[k].data;
        if (!dx)
            continue;
        int kb = k < 2 ? k : 0; /* inputs 2.. have the shape (and strides) of input 0 */
        int64_t nx = bc->numel_in[kb];
        const float *other = p->mul ? c->in[1 - k].data : NULL;
        if (!dy) {
            slim_split(nx, c->ith, c->nth, &lo, &hi);
            memset(dx + lo, 0, (size_t)(hi - lo) * sizeof(float));
        } else if (nx == bc->numel && !other) {
            slim_split(nx, c->ith, c->nth, &lo, &hi);
            if (dx != dy) /* else dx is dy's memory (set_backward_in_place) */
                memcpy(dx + lo, dy + lo, (size_t)(hi - lo) * sizeof(float));
        } else if (nx == bc->numel) {
            /* Not broadcast: x's strides are the output's, so dx = dy * other elementwise. */
            bcast_apply(bc, bc->so, bc->s[1 - k], dy, other, dx, true, c->ith, c->nth);
        } else {
            bcast_reduce(bc, bc->s[kb], other ? bc->s[1 - k] : NULL, dy, other, dx, nx, c->ith,
                         c->nth);
        }
    }
}

/* Reference: index every operand from the full multi-index of the output. */
static void binary_forward_ref(const slim_kernel_ctx *c)
{
    const binary_params *p = c->params;
    const slim_shape *os = &c->out[0].shape;
    float *y = c->out[0].data;
    int64_t n = slim_shape_numel(os);
    for (int64_t e = 0; e < n; e++) {
        int64_t idx[SLIM_MAX_DIMS], r = e;
        for (int d = os->rank - 1; d >= 0; d--) {
            idx[d] = r % os->dim[d];
            r /= os->dim[d];
        }
        double v = p->mul ? 1.0 : 0.0;
        for (int k = 0; k < c->n_inputs; k++) {
            const slim_shape *s = &c->in[k].shape;
            int64_t off = 0;
            for (int d = 0; d < s->rank; d++) {
                int64_t i = idx[d + os->rank - s->rank];
                off = off * s->dim[d] + (s->dim[d] == 1 ? 0 : i);
            }
            float x = ((const float *)c->in[k].data)[off];
            if (p->mul)
                v = (float)(v * x);
            else
                v = (float)(v + x);
        }
        y[e] = act_fwd(p->act, (float)v);
    }
}

static const slim_attr_spec add_attrs[] = {
    {.name = "activation",
     .type = SLIM_ATTR_STRING,
     .def = "none",
     .choices = "none|relu|relu6",
     .doc = "applied to y in the same pass (a residual add + ReLU); inputs of one shape only"},
};

const slim_op_desc slim__op_add = {
    .struct_size = sizeof(slim_op_desc),
    .name = "add",
    .doc = "y = a + b with numpy broadcasting, or the sum of 3..32 inputs of one shape",
    .min_inputs = 2,
    .max_inputs = SLIM_MAX_INPUTS,
    .n_outputs = 1,
    .attrs = add_attrs,
    .n_attrs = (int)(sizeof add_attrs / sizeof add_attrs[0]),
    .params_size = sizeof(binary_params),
    .infer = add_infer,
    .forward = binary_forward,
    .backward = binary_backward,
    .forward_ref = binary_forward_ref,
};

const slim_op_desc slim__op_multiply = {
    .struct_size = sizeof(slim_op_desc),
    .name = "multiply",
    .doc = "y = a * b with numpy broadcasting",
    .min_inputs = 2,
    .max_inputs = 2,
    .n_outputs = 1,
    .params_size = sizeof(binary_params),
    .infer = multiply_infer,
    .forward = binary_forward,
    .backward = binary_backward,
    .forward_ref = binary_forward_ref,
};

/* ---- bias_add ---------------------------------------------------------- */

typedef struct bias_params {
    int64_t rows, ch; /* x viewed as (ROWS, C) */
} bias_params;

static slim_status bias_add_infer(slim_infer_ctx *c)
{
    bias_params *p = c->params;
    c->set_backward_reads(c, 0, 0); /* dx = dy, db = its sums */
    const slim_tensor_desc *x = &c->inputs[0], *b = &c->inputs[1];
    if (x->dtype != SLIM_F32 || b->dtype != SLIM_F32)
        return c->fail(c, SLIM_ETYPE, "x and b must be f32 (got %s and %s)", dtype_name(x->dtype),
                       dtype_name(b->dtype));
    char xs[128], bs[128];
    slim_shape_str(&x->shape, xs, sizeof(xs));
    slim_shape_str(&b->shape, bs, sizeof(bs));
    if (x->shape.rank < 1)
        return c->fail(c, SLIM_ESHAPE, "x must have rank >= 1 (x %s, b %s)", xs, bs);
    p->ch = x->shape.dim[x->shape.rank - 1];
    if (b->shape.rank != 1 || b->shape.dim[0] != p->ch)
        return c->fail(c, SLIM_ESHAPE,
                       "b must be a vector of the %lld channels of x's last axis (x %s, b %s)",
                       (long long)p->ch, xs, bs);
    p->rows = p->ch ? slim_shape_numel(&x->shape) / p->ch : 0;
    c->set_output(c, 0, SLIM_F32, &x->shape);
    /* Per-thread partial bias-gradient sums. */
    c->set_workspace(c, (size_t)c->nth * (size_t)p->ch * sizeof(float));
    return SLIM_OK;
}

static void bias_add_forward(const slim_kernel_ctx *c)
{
    const bias_params *p = c->params;
    const float *x = c->in[0].data, *b = c->in[1].data;
    float *y = c->out[0].data;
    int64_t lo, hi;
    if (p->ch == 0)
        return;
    slim_split(p->rows * p->ch, c->ith, c->nth, &lo, &hi);
    while (lo < hi) { /* runs within one row */
        int64_t col = lo % p->ch, len = p->ch - col < hi - lo ? p->ch - col : hi - lo;
        const float *xr = x + lo, *br = b + col;
        float *yr = y + lo;
        for (int64_t i = 0; i < len; i++)
            yr[i] = xr[i] + br[i];
        lo += len;
    }
}

static void bias_add_forward_ref(const slim_kernel_ctx *c)
{
    const bias_params *p = c->params;
    const float *x = c->in[0].data, *b = c->in[1].data;
    float *y = c->out[0].data;
    for (int64_t r = 0; r < p->rows; r++)
        for (int64_t ch = 0; ch < p->ch; ch++)
            y[r * p->ch + ch] = x[r * p->ch + ch] + b[ch];
}

static void bias_add_backward(const slim_kernel_ctx *c)
{
    const bias_params *p = c->params;
    const float *dy = c->dout[0].data;
    float *dx = c->din[0].data, *db = c->din[1].data;
    int64_t lo, hi, C = p->ch;
    if (dx) {
        slim_split(p->rows * C, c->ith, c->nth, &lo, &hi);
        if (dy)
            memcpy(dx + lo, dy + lo, (size_t)(hi - lo) * sizeof(float));
        else
            memset(dx + lo, 0, (size_t)(hi - lo) * sizeof(float));
    }
    if (!db)
        return;
    if (!dy) {
        slim_split(C, c->ith, c->nth, &lo, &hi);
        memset(db + lo, 0, (size_t)(hi - lo) * sizeof(float));
        return;
    }
    /* Phase 1: this thread's rows into its partial sums. */
    float *part = (float *)c->ws + (size_t)c->ith * (size_t)C; /* part: (nth, C) */
    memset(part, 0, (size_t)C * sizeof(float));
    slim_split(p->rows, c->ith, c->nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const float *g = dy + r * C;
        for (int64_t i = 0; i < C; i++)
            part[i] += g[i];
    }
    c->sync(c);
    /* Phase 2: sum the partials in thread order, split over channels. */
    const float *all = c->ws;
    slim_split(C, c->ith, c->nth, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        float s = 0.0f;
        for (int t = 0; t < c->nth; t++)
            s += all[(size_t)t * (size_t)C + (size_t)i];
        db[i] = s;
    }
}

const slim_op_desc slim__op_bias_add = {
    .struct_size = sizeof(slim_op_desc),
    .name = "bias_add",
    .doc = "y = x + b, b added along x's last axis (channels)",
    .min_inputs = 2,
    .max_inputs = 2,
    .n_outputs = 1,
    .params_size = sizeof(bias_params),
    .infer = bias_add_infer,
    .forward = bias_add_forward,
    .backward = bias_add_backward,
    .forward_ref = bias_add_forward_ref,
};
