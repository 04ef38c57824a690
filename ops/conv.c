/*
 * ops/conv.c - 2-D convolution (conv2d) over NHWC activations with HWIO filters.
 *
 *   y[n,oh,ow,o] = b[o] + sum_{kh,kw,cg} x[n, oh*SH - PT + kh*DH, ow*SW - PL + kw*DW, g*Cg + cg]
 *                                        * w[kh,kw,cg,o],   g = o / Og
 *
 * with Cg = C/groups input and Og = O/groups output channels per group, and
 * zeros outside the image. Padding SAME follows TensorFlow (OH = ceil(H/SH),
 * the odd pixel of padding goes to the bottom/right).
 *
 * This file is the top of the conv family (ops/conv.h draws the layers):
 * the op's descriptor, infer, and the dispatch to one of the paths infer
 * picks:
 *   - FC (the window covers the whole input): fully_connected's kernels;
 *   - DEPTHWISE (groups == C == O): ops/conv_dw.c;
 *   - POINTWISE (1x1, stride 1, no padding): x itself is the GEMM's A matrix,
 *     and GEMM: im2col in tiles of T output rows, then the product per tile
 *     and group (ops/conv_gemm.c, backward ops/conv_gemm_bwd.c); 3x3 and
 *     5x5 stride-1 layers as Winograd (ops/conv_wino.c) under them.
 * Reference kernels: ops/conv_ref.c.
 *
 * Inference only, usually set by the fusion rule conv2d_post
 * (ops/conv_fuse.c) when it folds the batch norm, residual add and/or
 * activation that follow a conv2d into it: batch_norm=true takes four more
 * inputs after b (gamma, beta, moving_mean, moving_var) and gives
 *   y = act(gamma (conv(x, w) + b - moving_mean) / sqrt(moving_var + eps) + beta)
 * as y = act(conv(x, w) * scale + shift) per output channel, applied to each
 * block of y as its products finish (while it is in cache) instead of in a
 * pass of its own over the whole tensor; activation alone applies relu or
 * relu6 the same way, and residual=true adds a last input of y's shape
 * before the activation (a residual connection's add):
 *   y = act(conv(x, w) * scale + shift + residual)
 */
#include <string.h>

#include "ops/conv_dw.h"
#include "ops/conv_gemm.h"
#include "ops/conv_wino.h"

extern const slim_op_desc slim__op_conv2d;

/* ---- infer --------------------------------------------------------------- */

/* Whether q runs as Winograd under the attribute's mode (auto: when both
 * channel counts are at least min_ch). */
static bool wino_use(const conv_params *p, const conv_geom *q, const char *mode, int64_t min_ch)
{
    if (p->kind != CONV_GEMM || strcmp(mode, "off") == 0 || !slim__wino_shape(q))
        return false;
    return strcmp(mode, "on") == 0 || (q->C >= min_ch && q->O >= min_ch);
}

/* With residual=true, whether the residual's shape differs from y's (then failed). */
static bool bad_residual(slim_infer_ctx *c, const slim_shape *ys)
{
    const conv_params *p = c->params;
    if (!p->residual)
        return false;
    const slim_shape *rs = &c->inputs[p->res_in].shape;
    if (rs->rank == ys->rank && !memcmp(rs->dim, ys->dim, (size_t)ys->rank * sizeof(int64_t)))
        return false;
    char b1[96], b2[96];
    c->fail(c, SLIM_ESHAPE, "the residual %s must have the output's shape %s",
            slim_shape_str(rs, b1, sizeof b1), slim_shape_str(ys, b2, sizeof b2));
    return true;
}

static slim_status conv_infer(slim_infer_ctx *c)
{
    c->set_backward_reads(c, ~0u, 0); /* backward: x and w, never y */
    conv_params *p = c->params;
    const slim_tensor_desc *x = &c->inputs[0], *w = &c->inputs[1];
    char xs[96], ws[96], bs[96];
    slim_shape_str(&x->shape, xs, sizeof xs);
    slim_shape_str(&w->shape, ws, sizeof ws);

    p->fold_bn = c->attr_bool(c, "batch_norm");
    p->residual = c->attr_bool(c, "residual");
    p->act = act_parse(c->attr_str(c, "activation"));
    /* x, w, [b], [gamma, beta, moving_mean, moving_var], [residual] */
    const int base = c->n_inputs - (p->fold_bn ? 4 : 0) - (p->residual ? 1 : 0);
    if (base != 2 && base != 3)
        return c->fail(c, SLIM_EINVAL, "takes x, w, optional b%s%s (%d to %d inputs), got %d%s",
                       p->fold_bn ? ", then gamma, beta, moving_mean, moving_var" : "",
                       p->residual ? ", then the residual" : "", c->n_inputs - base + 2,
                       c->n_inputs - base + 3, c->n_inputs,
                       base > 3 ? " (batch-norm parameters need batch_norm=true, a residual "
                                  "residual=true)"
                                : "");
    if (c->training && (p->fold_bn || p->residual || p->act != ACT_NONE))
        return c->fail(c, SLIM_EINVAL,
                       "batch_norm, residual and activation are for inference (training needs "
                       "the batch statistics and the gradients between): use batch_norm, add and "
                       "relu nodes, which the compiler fuses into the convolution in inference");
    for (int i = 0; i < c->n_inputs; i++)
        if (c->inputs[i].dtype != SLIM_F32)
            return c->fail(c, SLIM_ETYPE, "x, w, b and the batch-norm parameters must be f32");
    if (x->shape.rank != 4)
        return c->fail(c, SLIM_ESHAPE, "x must be (N,H,W,C), got %s", xs);
    if (w->shape.rank != 4)
        return c->fail(c, SLIM_ESHAPE, "w must be (KH,KW,C/groups,O), got %s", ws);
    for (int i = 0; i < 4; i++)
        if (x->shape.dim[i] < (i == 0 ? 0 : 1) || w->shape.dim[i] < 1)
            return c->fail(c, SLIM_ESHAPE, "empty dimension in x %s or w %s", xs, ws);

    p->f.N = x->shape.dim[0];
    p->f.H = x->shape.dim[1];
    p->f.W = x->shape.dim[2];
    p->f.C = x->shape.dim[3];
    p->f.KH = w->shape.dim[0];
    p->f.KW = w->shape.dim[1];
    p->f.O = w->shape.dim[3];
    p->f.G = c->attr_int(c, "groups");
    if (p->f.G < 1 || p->f.C % p->f.G != 0 || p->f.O % p->f.G != 0)
        return c->fail(c, SLIM_ESHAPE,
                       "groups=%lld must divide the input channels %lld and the output channels "
                       "%lld (x %s, w %s)",
                       (long long)p->f.G, (long long)p->f.C, (long long)p->f.O, xs, ws);
    p->f.Cg = p->f.C / p->f.G;
    p->f.Og = p->f.O / p->f.G;
    if (w->shape.dim[2] != p->f.Cg)
        return c->fail(c, SLIM_ESHAPE,
                       "w's input channels %lld do not match x's %lld / groups %lld = %lld "
                       "(x %s, w %s)",
                       (long long)w->shape.dim[2], (long long)p->f.C, (long long)p->f.G,
                       (long long)p->f.Cg, xs, ws);
    p->has_bias = base == 3;
    p->bn_in = base;
    p->res_in = c->n_inputs - 1;
    p->bn_eps = (float)c->attr_float(c, "batch_norm_epsilon");
    static const char *const vec_names[] = {"b", "gamma", "beta", "moving_mean", "moving_var"};
    for (int i = 2; i < c->n_inputs - (p->residual ? 1 : 0); i++) {
        const slim_tensor_desc *b = &c->inputs[i];
        const char *what = vec_names[p->has_bias ? i - 2 : i - 1];
        if (b->shape.rank != 1 || b->shape.dim[0] != p->f.O)
            return c->fail(c, SLIM_ESHAPE, "%s must be (%lld) to match w %s, got %s", what,
                           (long long)p->f.O, ws, slim_shape_str(&b->shape, bs, sizeof bs));
    }
    /* the folded batch norm's scale and shift lie at the workspace's start */
    size_t fold = p->fold_bn ? 2 * round16((size_t)p->f.O) * sizeof(float) : 0;

    const int64_t *strides, *dil, *pads;
    if (c->attr_ints(c, "strides", &strides) != 2)
        return c->fail(c, SLIM_EINVAL, "strides must have 2 values [SH, SW]");
    if (c->attr_ints(c, "dilations", &dil) != 2)
        return c->fail(c, SLIM_EINVAL, "dilations must have 2 values [DH, DW]");
    if (c->attr_ints(c, "pads", &pads) != 4)
        return c->fail(c, SLIM_EINVAL, "pads must have 4 values [top, bottom, left, right]");
    const char *padding = c->attr_str(c, "padding");
    bool explicit_pads = strcmp(padding, "EXPLICIT") == 0;
    if (!explicit_pads && (pads[0] || pads[1] || pads[2] || pads[3]))
        return c->fail(c, SLIM_EINVAL, "pads are only used with padding=EXPLICIT (got %s)",
                       padding);
    p->f.SH = strides[0];
    p->f.SW = strides[1];
    p->f.DH = dil[0];
    p->f.DW = dil[1];
    slim_status st = slim__conv_axis(c, "height", padding, p->f.H, p->f.KH, p->f.SH, p->f.DH,
                                     pads[0], pads[1], &p->f.OH, &p->f.PT);
    if (st)
        return st;
    st = slim__conv_axis(c, "width", padding, p->f.W, p->f.KW, p->f.SW, p->f.DW, pads[2], pads[3],
                         &p->f.OW, &p->f.PL);
    if (st)
        return st;

    p->f.K = p->f.KH * p->f.KW * p->f.Cg;
    if (p->f.G == 1 && p->f.OH == 1 && p->f.OW == 1 && p->f.KH == p->f.H && p->f.KW == p->f.W &&
        p->f.PT == 0 && p->f.PL == 0 && p->f.DH == 1 && p->f.DW == 1) {
        /* x (N,H,W,C) is (N,K) and w (H,W,C,O) is (K,O) as they lie */
        p->kind = CONV_FC;
        p->fc = (slim__fc_params){
            .n = p->f.N, .k = p->f.K, .o = p->f.O, .has_bias = p->has_bias && !p->fold_bn};
        slim_shape ys = {4, {p->f.N, 1, 1, p->f.O}};
        if (bad_residual(c, &ys))
            return SLIM_ESHAPE;
        c->set_output(c, 0, SLIM_F32, &ys);
        c->set_workspace(c, fold + slim__fc_workspace_bytes(&p->fc, c->nth, c->training));
        return SLIM_OK;
    }
    if (p->f.G == p->f.C && p->f.G == p->f.O)
        p->kind = CONV_DEPTHWISE;
    else if (p->f.KH == 1 && p->f.KW == 1 && p->f.SH == 1 && p->f.SW == 1 && p->f.PT == 0 &&
             p->f.PL == 0 && p->f.OH == p->f.H && p->f.OW == p->f.W)
        p->kind = CONV_POINTWISE;
    else
        p->kind = CONV_GEMM;

    conv_geom *f = &p->f;
    f->pointwise = p->kind == CONV_POINTWISE;
    /* dx = conv(dy, flip(w)^T) needs stride 1 (else dx pixels see different
     * taps) and enough input channels (16) to keep the kernel's columns busy. */
    p->dx_gather =
        f->pointwise || (p->kind == CONV_GEMM && f->SH == 1 && f->SW == 1 && f->Cg >= 16);
    conv_geom *t = &p->t;
    *t = (conv_geom){.N = f->N,
                     .H = f->OH,
                     .W = f->OW,
                     .C = f->O,
                     .KH = f->KH,
                     .KW = f->KW,
                     .O = f->C,
                     .OH = f->H,
                     .OW = f->W,
                     .SH = 1,
                     .SW = 1,
                     .DH = f->DH,
                     .DW = f->DW,
                     .PT = (f->KH - 1) * f->DH - f->PT,
                     .PL = (f->KW - 1) * f->DW - f->PL,
                     .G = f->G,
                     .Cg = f->Og,
                     .Og = f->Cg,
                     .K = f->KH * f->KW * f->Og,
                     .pointwise = f->pointwise};

    int nth = c->nth > 0 ? c->nth : 1;
    int64_t M = f->N * f->OH * f->OW;
    f->T = slim__conv_tile_rows(f, M, nth);
    t->T = slim__conv_tile_rows(t, f->N * f->H * f->W, nth);
    /* Winograd F(4x4, 3x3) or F(2x2, 5x5) for the forward, the gathered data gradient and
     * the filter gradient */
    const char *wino = c->attr_str(c, "winograd");
    if (wino_use(p, f, wino, WINO_MIN_CH))
        slim__wino_plan(f, nth);
    if (c->training && p->dx_gather && wino_use(p, t, wino, WINO_MIN_CH))
        slim__wino_plan(t, nth);
    p->wino_dw = c->training && wino_use(p, f, wino, WINO_DW_MIN_CH);
    p->wdw_split = p->wino_dw && slim__wino_dw_split(f, nth);
    p->dw_ksplit = M < f->K;

    slim_shape ys = {4, {f->N, f->OH, f->OW, f->O}};
    if (bad_residual(c, &ys))
        return SLIM_ESHAPE;
    c->set_output(c, 0, SLIM_F32, &ys);
    if (p->residual && p->kind != CONV_DEPTHWISE && slim__conv_res_in_place(f))
        c->set_in_place(c, 0, p->res_in);
    size_t per, shared = 0;
    if (p->kind == CONV_DEPTHWISE) {
        per = slim__dw_ws_floats(f, false);
        if (c->training && slim__dw_ws_floats(f, true) > per)
            per = slim__dw_ws_floats(f, true);
    } else {
        per = slim__conv_ws_floats(p, nth, false);
        shared = slim__conv_shared_floats(p, false);
        if (c->training) {
            size_t bwd = slim__conv_ws_floats(p, nth, true), sb = slim__conv_shared_floats(p, true);
            per = bwd > per ? bwd : per;
            shared = sb > shared ? sb : shared;
        }
    }
    c->set_workspace(c, fold + (shared + per * (size_t)nth) * sizeof(float));
    return SLIM_OK;
}

/* ---- dispatch -------------------------------------------------------------- */

/* The folded batch norm's scale and shift, this thread's share of the
 * channels; then the threads meet. */
static void fold_bn(const slim_kernel_ctx *c, float *scale, float *shift)
{
    const conv_params *p = c->params;
    int64_t lo, hi;
    slim_split(p->f.O, c->ith, c->nth, &lo, &hi);
    slim__bn_fold(&c->in[p->bn_in], p->has_bias ? c->in[2].data : NULL, p->bn_eps, lo, hi, scale,
                  shift);
    c->sync(c);
}
static void conv_forward(const slim_kernel_ctx *c)
{
    const conv_params *p = c->params;
    slim_kernel_ctx k = *c; /* the kernels' scratch: after the folded scale and shift */
    conv_post post = {
        .act = p->act, .res = p->residual ? c->in[p->res_in].data : NULL, .out = c->out[0].data};
    if (p->fold_bn) {
        const size_t skip = round16((size_t)p->f.O);
        float *scale = c->ws, *shift = scale + skip;
        fold_bn(c, scale, shift);
        post.scale = scale;
        post.shift = shift;
        k.ws = shift + skip;
        k.ws_size = c->ws_size - 2 * skip * sizeof(float);
    }
    if (p->kind == CONV_FC) {
        k.params = &p->fc; /* the same context with fully_connected's params */
        slim__fc_forward(&k);
        if (!post_any(&post))
            return;
        /* y is (N, O): each thread finishes its rows once all are written */
        int64_t lo, hi;
        c->sync(c);
        slim_split(p->f.N, c->ith, c->nth, &lo, &hi);
        slim__conv_post_rows(&post, (float *)c->out[0].data + lo * p->f.O, p->f.O, hi - lo, 0,
                             p->f.O);
    } else if (p->kind == CONV_DEPTHWISE) {
        slim__dw_forward(&k, &post);
    } else {
        slim__conv_gemm_forward(&k, &post);
    }
}

static void conv_backward(const slim_kernel_ctx *c)
{
    const conv_params *p = c->params;
    if (p->kind == CONV_FC) {
        slim_kernel_ctx fc = *c;
        fc.params = &p->fc;
        slim__fc_backward(&fc);
    } else if (p->kind == CONV_DEPTHWISE) {
        slim__dw_backward(c);
    } else {
        slim__conv_gemm_backward(c);
    }
}

static const slim_attr_spec conv_attrs[] = {
    {.name = "strides",
     .type = SLIM_ATTR_INTS,
     .def = "[1, 1]",
     .ranged = true,
     .min = 1,
     .max = 1 << 20,
     .doc = "[SH, SW]"},
    {.name = "padding",
     .type = SLIM_ATTR_STRING,
     .def = "SAME",
     .choices = "SAME|VALID|EXPLICIT",
     .doc = "SAME as TensorFlow (OH = ceil(H/SH), extra pixel bottom/right), VALID, or EXPLICIT "
            "pads"},
    {.name = "pads",
     .type = SLIM_ATTR_INTS,
     .def = "[0, 0, 0, 0]",
     .ranged = true,
     .min = 0,
     .max = 1 << 20,
     .doc = "[top, bottom, left, right], padding=EXPLICIT only"},
    {.name = "dilations",
     .type = SLIM_ATTR_INTS,
     .def = "[1, 1]",
     .ranged = true,
     .min = 1,
     .max = 1 << 20,
     .doc = "[DH, DW]"},
    {.name = "groups",
     .type = SLIM_ATTR_INT,
     .def = "1",
     .ranged = true,
     .min = 1,
     .max = 1 << 30,
     .doc = "C and O divisible by groups; groups == C == O is depthwise"},
    {.name = "winograd",
     .type = SLIM_ATTR_STRING,
     .def = "auto",
     .choices = "auto|on|off",
     .doc =
         "Winograd F(4x4,3x3) for 3x3 and F(2x2,5x5) for 5x5 stride-1 undilated ungrouped "
         "convolutions (forward, "
         "data and filter gradients): auto = when both channel counts are at least 16 (32 for the "
         "filter gradient), on = always for "
         "such shapes, off = never (the direct kernels, closer to the exact sum)"},
    {.name = "batch_norm",
     .type = SLIM_ATTR_BOOL,
     .def = "false",
     .doc = "inference: inputs after b are a batch norm's gamma, beta, moving_mean, moving_var, "
            "folded in (y = gamma (conv + b - moving_mean) / sqrt(moving_var + eps) + beta); "
            "the compiler sets it when a batch_norm follows the conv"},
    {.name = "batch_norm_epsilon",
     .type = SLIM_ATTR_FLOAT,
     .def = "0.001",
     .ranged = true,
     .min = 0,
     .max = 1e30,
     .doc = "the folded batch norm's epsilon"},
    {.name = "residual",
     .type = SLIM_ATTR_BOOL,
     .def = "false",
     .doc = "inference: the last input (y's shape) is added to y before the activation (the "
            "compiler fuses a residual add this way)"},
    {.name = "activation",
     .type = SLIM_ATTR_STRING,
     .def = "none",
     .choices = ACT_POST_CHOICES,
     .doc = "inference: applied to y as it is written (the compiler fuses a following relu or "
            "relu6 this way)"},
};

const slim_op_desc slim__op_conv2d = {
    .struct_size = sizeof(slim_op_desc),
    .name = "conv2d",
    .doc = "2-D convolution: x (N,H,W,C), w (KH,KW,C/groups,O), optional b (O), with "
           "batch_norm=true gamma, beta, moving_mean, moving_var (O each), with residual=true "
           "a tensor of y's shape -> (N,OH,OW,O)",
    .min_inputs = 2,
    .max_inputs = 8,
    .n_outputs = 1,
    .attrs = conv_attrs,
    .n_attrs = (int)(sizeof conv_attrs / sizeof conv_attrs[0]),
    .params_size = sizeof(conv_params),
    .infer = conv_infer,
    .forward = conv_forward,
    .backward = conv_backward,
    .forward_ref = slim__conv_forward_ref,
    .backward_ref = slim__conv_backward_ref,
};
