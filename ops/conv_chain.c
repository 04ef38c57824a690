/*
 * ops/conv_chain.c - conv2d_chain: a depthwise-separable block in one step,
 * for inference. The compiler builds it from the conv2d nodes of MobileNet v1
 * (depthwise -> pointwise) and v2 (pointwise expand -> depthwise -> pointwise
 * project), each with its batch norm folded in and its activation:
 *
 *   a = act_a(bn_a(x * w_a))          w_a (1,1,C0,C1), only with expand=true (else a = x)
 *   d = act_d(bn_d(depthwise(a, w_d)))  w_d (KH,KW,1,C1), strides, SAME or VALID
 *   y = act(bn(d * w_b) + residual)    w_b (1,1,C1,C2), residual only with residual=true
 *
 * Run as separate steps, a and d go to memory and come back: MobileNet v2's
 * expanded tensors are six times the block's input and output (16 x 112 x 112
 * x 96 floats: 77 MB for the first), and the depthwise layers and the
 * pointwise layers on few channels were bound by memory. Here each worker
 * takes bands of output rows of one image: the rows of a that a band's
 * windows read are computed into a ring of rows (the rows two bands share
 * are kept, not recomputed), the band's rows of d into a buffer, and y's
 * rows from that buffer, so a and d stay in the core's L2 cache.
 *
 * The products run on the pointwise kernels of ops/conv_gemm.c and the
 * depthwise rows on ops/conv_dw.c's, so results equal the separate steps'
 * bitwise (the same sums in the same order per element).
 *
 *   inputs: x (N,H,W,C0), [w_a, gamma_a, beta_a, mean_a, var_a], w_d, gamma_d,
 *           beta_d, mean_d, var_d, w_b, gamma, beta, mean, var, [residual (N,OH,OW,C2)]
 *   output: y (N,OH,OW,C2)
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/conv_dw.h"
#include "ops/conv_gemm.h"

extern const slim_op_desc slim__op_conv2d_chain;

/* Output rows of d per band: about CHAIN_BAND_PIXELS outputs, with the ring
 * and the band's rows of d in at most CHAIN_BAND_FLOATS (256 KB of a 512 KB
 * L2). */
#define CHAIN_BAND_PIXELS 192
#define CHAIN_BAND_FLOATS 65536

/* y bytes from which y is stored past the caches: half the last-level cache
 * of the machines measured (32 MB). A y this large is out of cache by the
 * time the next step reads it, and plain stores first read every line.
 * MobileNet v1's first three chains (26-51 MB) took 6-12% less time; the
 * same for conv2d's large outputs measured no different on ResNet-50. */
#define CHAIN_STREAM_BYTES (16 << 20)

typedef struct chain_params {
    bool expand, residual;
    bool stream;    /* y stored past the caches (CHAIN_STREAM_BYTES) */
    conv_geom d;    /* the depthwise convolution: (N,H,W,C1) -> (N,OH,OW,C1) */
    int64_t C0, C2; /* x's channels, y's */
    int act_a, act_d, act_b;
    float eps_a, eps_d, eps_b;
    int in_a, in_d, in_b; /* input index of each stage's w (its batch norm's four follow) */
    int in_res;
    int64_t band, cap; /* output rows per band; rows of a in the ring */
    /* workspace, floats: the folded scales and shifts, the packed w_a and w_b (shared),
     * then per worker its ring, its band of d and its tap lists */
    size_t off_pa, off_pb, off_own, ring, dbuf, per;
    int64_t next_task; /* the next unit a thread takes; thread 0 zeroes it before the packing */
} chain_params;

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* A (rank, dims) check of input i; fails with what was expected. */
static slim_status want(slim_infer_ctx *c, int i, int rank, const int64_t *dims, const char *what)
{
    const slim_tensor_desc *t = &c->inputs[i];
    bool ok = t->dtype == SLIM_F32 && t->shape.rank == rank;
    for (int k = 0; ok && k < rank; k++)
        ok = t->shape.dim[k] == dims[k];
    if (ok)
        return SLIM_OK;
    char got[96], exp[96];
    slim_shape e = {rank, {0}};
    memcpy(e.dim, dims, (size_t)rank * sizeof(int64_t));
    return c->fail(c, SLIM_ESHAPE, "%s (input %d) must be f32 %s, got %s", what, i,
                   slim_shape_str(&e, exp, sizeof exp), slim_shape_str(&t->shape, got, sizeof got));
}

/* The batch norm after input i (a w): gamma, beta, moving_mean, moving_var of n each. */
static slim_status want_bn(slim_infer_ctx *c, int i, int64_t n, const char *stage)
{
    static const char *const names[] = {"gamma", "beta", "moving_mean", "moving_var"};
    char what[64];
    for (int k = 0; k < 4; k++) {
        snprintf(what, sizeof what, "the %s batch norm's %s", stage, names[k]);
        slim_status st = want(c, i + 1 + k, 1, (int64_t[]){n}, what);
        if (st)
            return st;
    }
    return SLIM_OK;
}

static slim_status chain_infer(slim_infer_ctx *c)
{
    chain_params *p = c->params;
    if (c->training)
        return c->fail(c, SLIM_EINVAL,
                       "is for inference (the compiler builds it from conv2d, batch_norm and "
                       "activation nodes)");
    p->expand = c->attr_bool(c, "expand");
    p->residual = c->attr_bool(c, "residual");
    p->act_a = act_parse(c->attr_str(c, "expand_activation"));
    p->act_d = act_parse(c->attr_str(c, "depthwise_activation"));
    p->act_b = act_parse(c->attr_str(c, "activation"));
    p->eps_a = (float)c->attr_float(c, "expand_epsilon");
    p->eps_d = (float)c->attr_float(c, "depthwise_epsilon");
    p->eps_b = (float)c->attr_float(c, "batch_norm_epsilon");
    const int n_in = 1 + (p->expand ? 5 : 0) + 10 + (p->residual ? 1 : 0);
    if (c->n_inputs != n_in)
        return c->fail(c, SLIM_EINVAL, "takes %d inputs with expand=%s, residual=%s, got %d", n_in,
                       p->expand ? "true" : "false", p->residual ? "true" : "false", c->n_inputs);
    const slim_tensor_desc *x = &c->inputs[0];
    char xs[96];
    if (x->dtype != SLIM_F32 || x->shape.rank != 4)
        return c->fail(c, SLIM_ESHAPE, "x must be f32 (N,H,W,C), got %s",
                       slim_shape_str(&x->shape, xs, sizeof xs));
    const int64_t N = x->shape.dim[0], H = x->shape.dim[1], W = x->shape.dim[2];
    p->C0 = x->shape.dim[3];
    p->in_a = p->expand ? 1 : -1;
    p->in_d = p->expand ? 6 : 1;
    p->in_b = p->in_d + 5;
    p->in_res = p->residual ? p->in_b + 5 : -1;
    int64_t C1 = p->C0;
    slim_status st;
    if (p->expand) {
        const slim_tensor_desc *wa = &c->inputs[p->in_a];
        C1 = wa->shape.rank == 4 ? wa->shape.dim[3] : 0;
        if ((st = want(c, p->in_a, 4, (int64_t[]){1, 1, p->C0, C1}, "w_a")) ||
            (st = want_bn(c, p->in_a, C1, "expanding")))
            return st;
    }
    const slim_tensor_desc *wd = &c->inputs[p->in_d], *wb = &c->inputs[p->in_b];
    const int64_t KH = wd->shape.rank == 4 ? wd->shape.dim[0] : 0,
                  KW = wd->shape.rank == 4 ? wd->shape.dim[1] : 0;
    p->C2 = wb->shape.rank == 4 ? wb->shape.dim[3] : 0;
    if ((st = want(c, p->in_d, 4, (int64_t[]){KH, KW, 1, C1}, "w_d")) ||
        (st = want_bn(c, p->in_d, C1, "depthwise")) ||
        (st = want(c, p->in_b, 4, (int64_t[]){1, 1, C1, p->C2}, "w_b")) ||
        (st = want_bn(c, p->in_b, p->C2, "last")))
        return st;
    if (KH < 1 || KW < 1 || p->C2 < 1 || C1 < 1)
        return c->fail(c, SLIM_ESHAPE, "empty filter or channel count");
    const int64_t *strides;
    if (c->attr_ints(c, "strides", &strides) != 2)
        return c->fail(c, SLIM_EINVAL, "strides must have 2 values [SH, SW]");
    const char *padding = c->attr_str(c, "padding");
    conv_geom *d = &p->d;
    *d = (conv_geom){.N = N,
                     .H = H,
                     .W = W,
                     .C = C1,
                     .KH = KH,
                     .KW = KW,
                     .O = C1,
                     .SH = strides[0],
                     .SW = strides[1],
                     .DH = 1,
                     .DW = 1,
                     .G = C1,
                     .Cg = 1,
                     .Og = 1,
                     .K = KH * KW};
    if ((st = slim__conv_axis(c, "height", padding, H, KH, d->SH, 1, 0, 0, &d->OH, &d->PT)) ||
        (st = slim__conv_axis(c, "width", padding, W, KW, d->SW, 1, 0, 0, &d->OW, &d->PL)))
        return st;
    const slim_shape ys = {4, {N, d->OH, d->OW, p->C2}};
    if (p->residual && (st = want(c, p->in_res, 4, ys.dim, "the residual")))
        return st;
    c->set_output(c, 0, SLIM_F32, &ys);
    p->stream = slim_shape_numel(&ys) * (int64_t)sizeof(float) >= CHAIN_STREAM_BYTES;

    /* bands: about CHAIN_BAND_PIXELS outputs, fewer rows while the ring and
     * the band of d take more than CHAIN_BAND_FLOATS */
    p->band = min64(d->OH, max64(1, ceil_div(CHAIN_BAND_PIXELS, d->OW)));
    for (;;) {
        p->cap = p->expand ? min64(H, (p->band - 1) * d->SH + KH) : 0;
        if (p->band == 1 || (p->cap * W + p->band * d->OW) * C1 <= CHAIN_BAND_FLOATS)
            break;
        p->band--;
    }
    p->off_pa = 4 * round16((size_t)C1) + 2 * round16((size_t)p->C2);
    p->off_pb = p->off_pa + (p->expand ? slim__pw_packed_floats(p->C0, C1) : 0);
    p->off_own = p->off_pb + slim__pw_packed_floats(C1, p->C2);
    p->ring = round16((size_t)(p->cap * W * C1));
    p->dbuf = round16((size_t)(p->band * d->OW * C1));
    p->per = p->ring + p->dbuf + dw_list_floats(d);
    /* the reference kernel's double accumulators fit in any worker's share */
    size_t ref = 2 * round16((size_t)(C1 > p->C2 ? C1 : p->C2)) * 2;
    int nth = c->nth > 0 ? c->nth : 1;
    c->set_workspace(
        c,
        (p->off_own + max64((int64_t)ref, (int64_t)(p->per * (size_t)nth))) * sizeof(float) + 64);
    return SLIM_OK;
}

static void chain_forward(const slim_kernel_ctx *c)
{
    const chain_params *p = c->params;
    const conv_geom *d = &p->d;
    const int64_t C1 = d->C, C2 = p->C2, W = d->W, H = d->H, OW = d->OW;
    float *ws = c->ws;
    float *scale_a = ws, *shift_a = scale_a + round16((size_t)C1);
    float *scale_d = shift_a + round16((size_t)C1), *shift_d = scale_d + round16((size_t)C1);
    float *scale_b = shift_d + round16((size_t)C1), *shift_b = scale_b + round16((size_t)C2);
    float *pa = ws + p->off_pa, *pb = ws + p->off_pb;
    int64_t lo, hi;
    chain_params *pm = (chain_params *)c->params;
    if (c->ith == 0) /* before the packing's barrier */
        task_reset(&pm->next_task);
    slim_split(C1, c->ith, c->nth, &lo, &hi);
    if (p->expand)
        slim__bn_fold(&c->in[p->in_a + 1], NULL, p->eps_a, lo, hi, scale_a, shift_a);
    slim__bn_fold(&c->in[p->in_d + 1], NULL, p->eps_d, lo, hi, scale_d, shift_d);
    slim_split(C2, c->ith, c->nth, &lo, &hi);
    slim__bn_fold(&c->in[p->in_b + 1], NULL, p->eps_b, lo, hi, scale_b, shift_b);
    if (p->expand)
        slim__pw_pack(c, c->in[p->in_a].data, p->C0, C1, pa);
    slim__pw_pack(c, c->in[p->in_b].data, C1, C2, pb); /* the threads meet: folds done too */

    const float *x = c->in[0].data, *wd = c->in[p->in_d].data;
    float *y = c->out[0].data;
    const conv_post post_a = {.scale = scale_a, .shift = shift_a, .act = p->act_a, .cached = true};
    const conv_post post_d = {.scale = scale_d, .shift = shift_d, .act = p->act_d};
    const conv_post post_b = {.scale = scale_b,
                              .shift = shift_b,
                              .res = p->residual ? c->in[p->in_res].data : NULL,
                              .out = y,
                              .act = p->act_b,
                              .stream = p->stream};
    float *ring = ws + p->off_own + (size_t)c->ith * p->per, *dbuf = ring + p->ring;
    float *lists = dbuf + p->dbuf;
    const float **xr = (const float **)lists + 2 * d->KH * d->KW, **wr = xr + d->KH;
    const int64_t bands = ceil_div(d->OH, p->band);
    int64_t ring_n = -1, ring_hi = -1; /* the image whose rows of a the ring holds, its last */
    /* Units taken as threads come free (fixed halves left one thread
     * waiting on the other): a band at a time, or with expand a whole
     * image, whose bands share rows of a in the ring. */
    const int64_t per = p->expand ? bands : 1, units = d->N * bands;
    while ((lo = task_take(&pm->next_task, per, units)) < units) {
        hi = min64(lo + per, units);
        for (int64_t u = lo; u < hi; u++) {
            const int64_t n = u / bands, oh0 = u % bands * p->band;
            const int64_t oh1 = min64(d->OH, oh0 + p->band);
            const float *x_n = x + n * H * W * p->C0;
            if (p->expand) {
                /* the rows of a this band reads that the ring lacks */
                int64_t r = max64(0, oh0 * d->SH - d->PT);
                const int64_t last = min64(H - 1, (oh1 - 1) * d->SH - d->PT + d->KH - 1);
                if (ring_n == n && ring_hi >= r)
                    r = ring_hi + 1;
                while (r <= last) {
                    const int64_t slot = r % p->cap, rows = min64(last - r + 1, p->cap - slot);
                    slim__pw_gemm(rows * W, p->C0, C1, x_n + r * W * p->C0, pa, &post_a,
                                  ring + slot * W * C1);
                    r += rows;
                }
                ring_n = n;
                ring_hi = last;
            }
            for (int64_t oh = oh0; oh < oh1; oh++) {
                int nr = slim__dw_rows(d, p->expand ? NULL : x_n, oh, wd, xr, wr);
                for (int k = 0; p->expand && k < nr; k++) /* dilation 1: consecutive rows */
                    xr[k] = ring + (max64(0, oh * d->SH - d->PT) + k) % p->cap * W * C1;
                slim__dw_row(d, xr, wr, nr, NULL, &post_d, dbuf + (oh - oh0) * OW * C1, lists);
            }
            slim__pw_gemm((oh1 - oh0) * OW, C1, C2, dbuf, pb, &post_b,
                          y + (n * d->OH + oh0) * OW * C2);
        }
    }
#ifdef __SSE__
    if (p->stream)
        __builtin_ia32_sfence(); /* the streamed stores land before the threads meet */
#endif
}

/* act(v * scale + shift) of a batch norm's channel o in double (bn: its four inputs). */
static double bn_act(const slim_tensor *bn, float eps, int act, int64_t o, double v)
{
    const float *gamma = bn[0].data, *beta = bn[1].data, *mean = bn[2].data, *var = bn[3].data;
    v = (v - mean[o]) * gamma[o] / sqrt((double)var[o] + eps) + beta[o];
    return act_ref(act, v);
}

/* As written in the header, in double, each output pixel from scratch. */
static void chain_forward_ref(const slim_kernel_ctx *c)
{
    const chain_params *p = c->params;
    const conv_geom *d = &p->d;
    const int64_t C1 = d->C, C2 = p->C2;
    const float *x = c->in[0].data, *wd = c->in[p->in_d].data, *wb = c->in[p->in_b].data;
    const float *wa = p->expand ? c->in[p->in_a].data : NULL;
    const float *res = p->residual ? c->in[p->in_res].data : NULL;
    float *y = c->out[0].data;
    double *dv = c->ws; /* C1 values of d */
    for (int64_t n = 0; n < d->N; n++)
        for (int64_t oh = 0; oh < d->OH; oh++)
            for (int64_t ow = 0; ow < d->OW; ow++) {
                for (int64_t c1 = 0; c1 < C1; c1++) {
                    double acc = 0;
                    for (int64_t kh = 0; kh < d->KH; kh++)
                        for (int64_t kw = 0; kw < d->KW; kw++) {
                            int64_t ih = oh * d->SH - d->PT + kh, iw = ow * d->SW - d->PL + kw;
                            if (ih < 0 || ih >= d->H || iw < 0 || iw >= d->W)
                                continue;
                            const float *xp = x + ((n * d->H + ih) * d->W + iw) * p->C0;
                            double a = 0; /* the depthwise input: x, or the expanded x */
                            if (p->expand) {
                                for (int64_t c0 = 0; c0 < p->C0; c0++)
                                    a += (double)xp[c0] * wa[c0 * C1 + c1];
                                a = bn_act(&c->in[p->in_a + 1], p->eps_a, p->act_a, c1, a);
                            } else {
                                a = xp[c1];
                            }
                            acc += a * wd[(kh * d->KW + kw) * C1 + c1];
                        }
                    dv[c1] = bn_act(&c->in[p->in_d + 1], p->eps_d, p->act_d, c1, acc);
                }
                const int64_t at = ((n * d->OH + oh) * d->OW + ow) * C2;
                for (int64_t o = 0; o < C2; o++) {
                    double acc = 0;
                    for (int64_t c1 = 0; c1 < C1; c1++)
                        acc += dv[c1] * wb[c1 * C2 + o];
                    /* the residual goes in before the activation */
                    const slim_tensor *bn = &c->in[p->in_b + 1];
                    double v = bn_act(bn, p->eps_b, ACT_NONE, o, acc) + (res ? res[at + o] : 0.0);
                    y[at + o] = (float)act_ref(p->act_b, v);
                }
            }
}

static const slim_attr_spec chain_attrs[] = {
    {.name = "expand",
     .type = SLIM_ATTR_BOOL,
     .def = "false",
     .doc = "a pointwise convolution first (inputs w_a and its batch norm after x)"},
    {.name = "expand_activation",
     .type = SLIM_ATTR_STRING,
     .def = "none",
     .choices = ACT_POST_CHOICES,
     .doc = "after the first pointwise convolution's batch norm"},
    {.name = "expand_epsilon",
     .type = SLIM_ATTR_FLOAT,
     .def = "0.001",
     .ranged = true,
     .min = 0,
     .max = 1e30,
     .doc = "the first batch norm's epsilon"},
    {.name = "strides",
     .type = SLIM_ATTR_INTS,
     .def = "[1, 1]",
     .ranged = true,
     .min = 1,
     .max = 1 << 20,
     .doc = "the depthwise convolution's [SH, SW]"},
    {.name = "padding",
     .type = SLIM_ATTR_STRING,
     .def = "SAME",
     .choices = "SAME|VALID",
     .doc = "the depthwise convolution's, as conv2d's"},
    {.name = "depthwise_activation",
     .type = SLIM_ATTR_STRING,
     .def = "none",
     .choices = ACT_POST_CHOICES,
     .doc = "after the depthwise convolution's batch norm"},
    {.name = "depthwise_epsilon",
     .type = SLIM_ATTR_FLOAT,
     .def = "0.001",
     .ranged = true,
     .min = 0,
     .max = 1e30,
     .doc = "the depthwise batch norm's epsilon"},
    {.name = "batch_norm_epsilon",
     .type = SLIM_ATTR_FLOAT,
     .def = "0.001",
     .ranged = true,
     .min = 0,
     .max = 1e30,
     .doc = "the last batch norm's epsilon"},
    {.name = "residual",
     .type = SLIM_ATTR_BOOL,
     .def = "false",
     .doc = "the last input (y's shape) is added before the last activation"},
    {.name = "activation",
     .type = SLIM_ATTR_STRING,
     .def = "none",
     .choices = ACT_POST_CHOICES,
     .doc = "the last activation"},
};

const slim_op_desc slim__op_conv2d_chain = {
    .struct_size = sizeof(slim_op_desc),
    .name = "conv2d_chain",
    .doc = "inference: [pointwise conv + batch norm + act ->] depthwise conv + batch norm + act -> "
           "pointwise conv + batch norm [+ residual] + act in one step, a band of rows at a "
           "time (the compiler builds it from conv2d nodes)",
    .min_inputs = 11,
    .max_inputs = 17,
    .n_outputs = 1,
    .attrs = chain_attrs,
    .n_attrs = (int)(sizeof chain_attrs / sizeof chain_attrs[0]),
    .params_size = sizeof(chain_params),
    .infer = chain_infer,
    .forward = chain_forward,
    .forward_ref = chain_forward_ref,
};
