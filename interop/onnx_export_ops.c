/*
 * interop/onnx_export_ops.c - each slim op kind as ONNX nodes (see onnx_export.h).
 *
 * An emitter reads its node's inputs with xp_get / xp_get_any (in the layout
 * it needs, or whichever exists), writes its nodes, and names its result
 * with finish(): the slim tensor's own name (or the output name asked for).
 * Batch norm coefficients are computed in double: scale = gamma /
 * sqrt(moving_var + eps), shift = beta - moving_mean * scale.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attrs.h"
#include "engine/registry.h"
#include "interop/onnx_export_int.h"

#define NODE(n) (&x->g->nodes[n])

/* ---- attributes of the slim node ----------------------------------------------------- */

static const slim__attr_value *attr_of(const slim__node *nd, const char *k)
{
    return slim__attrs_get(&nd->attrs, k);
}

static int64_t a_int(const slim__node *nd, const char *k)
{
    const slim__attr_value *v = attr_of(nd, k);
    return v && v->n > 0 ? v->ints[0] : 0;
}

static double a_float(const slim__node *nd, const char *k)
{
    const slim__attr_value *v = attr_of(nd, k);
    return v && v->n > 0 ? v->floats[0] : 0;
}

static const char *a_str(const slim__node *nd, const char *k)
{
    const slim__attr_value *v = attr_of(nd, k);
    return v && v->str ? v->str : "";
}

static int a_ints(const slim__node *nd, const char *k, const int64_t **vals)
{
    const slim__attr_value *v = attr_of(nd, k);
    *vals = v ? v->ints : NULL;
    return v ? v->n : 0;
}

/* ---- helpers --------------------------------------------------------------------------- */

/* t's value in layout l is v: the name of the node that computed it last when it did
 * (renamed to the tensor's), else an alias. */
static slim_status finish(xp_ex *x, slim_tid t, int l, const char *v)
{
    if (x->st || !v)
        return x->st ? x->st : xp_fail(x, SLIM_EINTERNAL, "no value");
    Onnx__NodeProto *last = x->n_node ? x->node[x->n_node - 1] : NULL;
    if (last && last->n_output >= 1 && !strcmp(last->output[0], v)) {
        const char *nm = xp_out(x, t, l);
        if (nm)
            last->output[0] = (char *)nm;
        return x->st;
    }
    x->val[t][l] = v;
    return SLIM_OK;
}

/* A node with one output named base::what. */
static const char *step(xp_ex *x, const char *op, const char *base, const char *what,
                        const char *const *in, int n_in, Onnx__NodeProto **node)
{
    const char *out = xp_name(x, base, what);
    Onnx__NodeProto *n = out ? xp_node(x, op, out, in, n_in, &out, 1) : NULL;
    if (node)
        *node = n;
    return n ? out : NULL;
}

/* Shared scalar constants (Clip's bounds, the decompositions' numbers). */
static const char *scalar(xp_ex *x, float v)
{
    char nm[48];
    snprintf(nm, sizeof nm, "const_%.9g", v);
    for (size_t i = 0; i < x->n_init; i++)
        if (!strcmp(x->init[i]->name, nm))
            return x->init[i]->name;
    return xp_scalar_f32(x, nm, NULL, v);
}

static const char *clip(xp_ex *x, const char *base, const char *v, float lo, float hi)
{
    const char *in[3] = {v, scalar(x, lo), scalar(x, hi)};
    return step(x, "Clip", base, "clip", in, 3, NULL);
}

/* The fused activations of conv2d, batch_norm and add: none, relu, relu6. */
static const char *activation(xp_ex *x, const char *base, const char *v, const char *act)
{
    if (!strcmp(act, "relu"))
        return step(x, "Relu", base, "relu", &v, 1, NULL);
    if (!strcmp(act, "relu6"))
        return clip(x, base, v, 0, 6);
    return v;
}

/* A batch norm's inference coefficients when its four statistics are parameters. */
static bool bn_coeffs(xp_ex *x, const slim_tid *p4, double eps, int64_t C, float **scale,
                      float **shift)
{
    const float *g = xp_param(x, p4[0]), *b = xp_param(x, p4[1]), *m = xp_param(x, p4[2]),
                *v = xp_param(x, p4[3]);
    if (!g || !b || !m || !v)
        return false;
    *scale = xp_alloc(x, (size_t)C * sizeof **scale);
    *shift = xp_alloc(x, (size_t)C * sizeof **shift);
    if (!*scale || !*shift)
        return false;
    for (int64_t c = 0; c < C; c++) {
        double s = g[c] / sqrt((double)v[c] + eps);
        (*scale)[c] = (float)s;
        (*shift)[c] = (float)(b[c] - m[c] * s);
    }
    return true;
}

/* Explicit padding of one spatial axis (TensorFlow's SAME: the odd pixel after). */
static void pad_axis(const char *padding, const int64_t *explicit_lohi, int64_t in, int64_t out,
                     int64_t k, int64_t s, int64_t d, int64_t *lo, int64_t *hi)
{
    if (!strcmp(padding, "SAME")) {
        int64_t total = (out - 1) * s + (k - 1) * d + 1 - in;
        total = total > 0 ? total : 0;
        *lo = total / 2;
        *hi = total - *lo;
    } else if (!strcmp(padding, "EXPLICIT")) {
        *lo = explicit_lohi[0];
        *hi = explicit_lohi[1];
    } else {
        *lo = *hi = 0;
    }
}

/* kernel_shape, strides, dilations and pads of a conv2d or pooling node. */
static void spatial_attrs(xp_ex *x, Onnx__NodeProto *on, const slim__node *nd, const int64_t k[2],
                          bool dilations)
{
    const slim_shape *xs = xp_shape(x, nd->in[0]), *ys = xp_shape(x, nd->out[0]);
    const int64_t *sv, *dv = NULL, *pv;
    int ns = a_ints(nd, "strides", &sv), np = a_ints(nd, "pads", &pv);
    int nd_ = dilations ? a_ints(nd, "dilations", &dv) : 0;
    int64_t s[2] = {ns == 2 ? sv[0] : 1, ns == 2 ? sv[1] : 1};
    int64_t d[2] = {nd_ == 2 ? dv[0] : 1, nd_ == 2 ? dv[1] : 1};
    int64_t ex[4] = {0, 0, 0, 0}; /* [top, bottom, left, right] */
    if (np == 4)
        memcpy(ex, pv, sizeof ex);
    int64_t pads[4]; /* ONNX: [top, left, bottom, right] */
    const char *padding = a_str(nd, "padding");
    pad_axis(padding, ex, xs->dim[1], ys->dim[1], k[0], s[0], d[0], &pads[0], &pads[2]);
    pad_axis(padding, ex + 2, xs->dim[2], ys->dim[2], k[1], s[1], d[1], &pads[1], &pads[3]);
    xp_attr_ints(x, on, "kernel_shape", k, 2);
    xp_attr_ints(x, on, "strides", s, 2);
    if (d[0] != 1 || d[1] != 1)
        xp_attr_ints(x, on, "dilations", d, 2);
    xp_attr_ints(x, on, "pads", pads, 4);
}

/* The folded biases' name: the layer's own biases', else NODE/biases (TF-Slim's name). */
static const char *bias_name(xp_ex *x, const slim__node *nd, slim_tid bt)
{
    if (bt >= 0)
        return x->g->tensors[bt].name;
    size_t n = strlen(nd->name) + 8;
    char *s = xp_alloc(x, n);
    if (s)
        snprintf(s, n, "%s/biases", nd->name);
    return s ? s : nd->name;
}

/* ---- convolution, fully connected, batch norm ------------------------------------------ */

static slim_status emit_conv(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    bool bn_attr = a_int(nd, "batch_norm") != 0, res = a_int(nd, "residual") != 0;
    int has_b = nd->n_in - 2 - (bn_attr ? 4 : 0) - (res ? 1 : 0);
    slim_tid wt = nd->in[1], bt = has_b ? nd->in[2] : -1, out = nd->out[0];
    const slim_shape *ws = xp_shape(x, wt);
    int64_t KH = ws->dim[0], KW = ws->dim[1], Cg = ws->dim[2], O = ws->dim[3];
    /* the batch norm folded in: the node's own (batch_norm=true) or the next node */
    const slim_tid *bnp = NULL;
    double eps = 0;
    const char *post_act = "none";
    if (bn_attr) {
        bnp = nd->in + 2 + has_b;
        eps = a_float(nd, "batch_norm_epsilon");
    } else if (x->fold[n] >= 0) {
        const slim__node *bn = NODE(x->fold[n]);
        bnp = bn->in + 1;
        eps = a_float(bn, "epsilon");
        post_act = a_str(bn, "activation");
        out = bn->out[0];
    }
    const float *w = xp_param(x, wt), *b = bt >= 0 ? xp_param(x, bt) : NULL;
    float *scale = NULL, *shift = NULL;
    /* folded when everything is a parameter; else a BatchNormalization node after */
    bool folded = bnp && w && (bt < 0 || b) && bn_coeffs(x, bnp, eps, O, &scale, &shift);
    const char *in[3] = {xp_get(x, nd->in[0], XL_CF), NULL, NULL};
    if (w) { /* (KH,KW,C/g,O) -> (O,C/g,KH,KW), scaled per output channel */
        float *d = xp_alloc(x, (size_t)(KH * KW * Cg * O) * sizeof *d);
        for (int64_t h = 0; d && h < KH; h++)
            for (int64_t kw = 0; kw < KW; kw++)
                for (int64_t i = 0; i < Cg; i++)
                    for (int64_t o = 0; o < O; o++)
                        d[((o * Cg + i) * KH + h) * KW + kw] =
                            w[((h * KW + kw) * Cg + i) * O + o] * (folded ? scale[o] : 1.0f);
        int64_t dim[4] = {O, Cg, KH, KW};
        in[1] = d ? xp_init_f32(x, x->g->tensors[wt].name, NULL, 4, dim, d, true) : NULL;
    } else {
        static const int64_t perm[4] = {3, 2, 0, 1};
        const char *wv = xp_get(x, wt, XL_SAME);
        Onnx__NodeProto *tn;
        in[1] = step(x, "Transpose", nd->name, "weights", &wv, 1, &tn);
        xp_attr_ints(x, tn, "perm", perm, 4);
    }
    if (folded) {
        float *fb = xp_alloc(x, (size_t)O * sizeof *fb);
        for (int64_t o = 0; fb && o < O; o++)
            fb[o] = (b ? b[o] : 0.0f) * scale[o] + shift[o];
        in[2] = fb ? xp_init_f32(x, bias_name(x, nd, bt), NULL, 1, &O, fb, true) : NULL;
    } else if (bt >= 0) {
        in[2] = xp_get(x, bt, XL_SAME);
    }
    Onnx__NodeProto *cn;
    const char *v = step(x, "Conv", nd->name, "conv", in, bt >= 0 || folded ? 3 : 2, &cn);
    int64_t k[2] = {KH, KW};
    spatial_attrs(x, cn, nd, k, true);
    int64_t groups = a_int(nd, "groups");
    if (groups > 1)
        xp_attr_int(x, cn, "group", groups);
    if (bnp && !folded) {
        const char *bi[5] = {v, xp_get(x, bnp[0], XL_SAME), xp_get(x, bnp[1], XL_SAME),
                             xp_get(x, bnp[2], XL_SAME), xp_get(x, bnp[3], XL_SAME)};
        Onnx__NodeProto *bnn;
        v = step(x, "BatchNormalization", nd->name, "batch_norm", bi, 5, &bnn);
        xp_attr_float(x, bnn, "epsilon", (float)eps);
    }
    if (res) {
        const char *ri[2] = {v, xp_get(x, nd->in[nd->n_in - 1], XL_CF)};
        v = step(x, "Add", nd->name, "residual", ri, 2, NULL);
    }
    v = activation(x, nd->name, v, a_str(nd, "activation"));
    v = activation(x, nd->name, v, post_act);
    return finish(x, out, XL_CF, v);
}

static slim_status emit_fc(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    slim_tid xt = nd->in[0], wt = nd->in[1], bt = nd->n_in > 2 ? nd->in[2] : -1, out = nd->out[0];
    const slim_shape *xs = xp_shape(x, xt), *ws = xp_shape(x, wt);
    int64_t K = ws->dim[0], O = ws->dim[1];
    const char *a;
    if (xs->rank == 2) {
        a = xp_get(x, xt, XL_SAME);
    } else { /* flattened in slim's order */
        int l;
        const char *v = xp_get_any(x, xt, &l);
        if (l == XL_CF && !xp_cf_is_flat(xs))
            v = xp_get(x, xt, XL_SAME);
        Onnx__NodeProto *fn;
        a = step(x, "Flatten", nd->name, "flatten", &v, 1, &fn);
        xp_attr_int(x, fn, "axis", 1);
    }
    const char *post_act = "none";
    float *scale = NULL, *shift = NULL;
    bool folded = false;
    if (x->fold[n] >= 0) {
        const slim__node *bn = NODE(x->fold[n]);
        folded = bn_coeffs(x, bn->in + 1, a_float(bn, "epsilon"), O, &scale, &shift);
        post_act = a_str(bn, "activation");
        out = bn->out[0];
    }
    const float *w = xp_param(x, wt), *b = bt >= 0 ? xp_param(x, bt) : NULL;
    const char *in[3] = {a, NULL, NULL};
    if (folded) { /* the plan made sure w and b are parameters */
        float *d = xp_alloc(x, (size_t)(K * O) * sizeof *d);
        float *fb = xp_alloc(x, (size_t)O * sizeof *fb);
        for (int64_t kk = 0; d && kk < K; kk++)
            for (int64_t o = 0; o < O; o++)
                d[kk * O + o] = w[kk * O + o] * scale[o];
        for (int64_t o = 0; fb && o < O; o++)
            fb[o] = (b ? b[o] : 0.0f) * scale[o] + shift[o];
        int64_t dim[2] = {K, O};
        in[1] = d ? xp_init_f32(x, x->g->tensors[wt].name, NULL, 2, dim, d, true) : NULL;
        in[2] = fb ? xp_init_f32(x, bias_name(x, nd, bt), NULL, 1, &O, fb, true) : NULL;
    } else {
        in[1] = xp_get(x, wt, XL_SAME);
        in[2] = bt >= 0 ? xp_get(x, bt, XL_SAME) : NULL;
    }
    const char *v = step(x, "Gemm", nd->name, "gemm", in, in[2] ? 3 : 2, NULL);
    v = activation(x, nd->name, v, post_act);
    return finish(x, out, XL_SAME, v);
}

void xp_plan_fold(xp_ex *x, int n)
{
    const slim__node *bn = NODE(n);
    slim_tid xt = bn->in[0];
    const slim__tinfo *ti = &x->g->tensors[xt];
    if (ti->kind != SLIM__T_NODE || x->uses[xt] != 1)
        return;
    int p = ti->producer;
    const slim__node *pd = NODE(p);
    bool conv = !strcmp(pd->d->name, "conv2d"), fc = !strcmp(pd->d->name, "fully_connected");
    if ((!conv && !fc) || x->fold[p] != -1 || !x->need[p])
        return;
    if (conv && (a_int(pd, "batch_norm") || a_int(pd, "residual") ||
                 strcmp(a_str(pd, "activation"), "none") != 0 || pd->n_in > 3))
        return;
    for (int i = 1; i < pd->n_in; i++)
        if (!xp_param(x, pd->in[i]))
            return;
    for (int i = 1; i < 5; i++)
        if (!xp_param(x, bn->in[i]))
            return;
    x->fold[p] = n;
    x->fold[n] = -2;
}

static slim_status emit_bn(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    slim_tid xt = nd->in[0];
    const slim_shape *xs = xp_shape(x, xt);
    double eps = a_float(nd, "epsilon");
    const char *v;
    int l = XL_SAME;
    if (xs->rank == 4 || xs->rank == 2) { /* ONNX's channels are axis 1 */
        l = xs->rank == 4 ? XL_CF : XL_SAME;
        const char *in[5] = {xp_get(x, xt, l), xp_get(x, nd->in[1], XL_SAME),
                             xp_get(x, nd->in[2], XL_SAME), xp_get(x, nd->in[3], XL_SAME),
                             xp_get(x, nd->in[4], XL_SAME)};
        Onnx__NodeProto *bn;
        v = step(x, "BatchNormalization", nd->name, "batch_norm", in, 5, &bn);
        xp_attr_float(x, bn, "epsilon", (float)eps);
    } else { /* channels last of another rank: y = x scale + shift */
        int64_t C = xs->dim[xs->rank - 1];
        float *scale, *shift;
        if (!bn_coeffs(x, nd->in + 1, eps, C, &scale, &shift))
            return xp_fail(x, SLIM_EUNSUPPORTED,
                           "a batch norm of a rank-%d tensor needs its statistics as parameters",
                           xs->rank);
        const char *m[2] = {xp_get(x, xt, XL_SAME),
                            xp_init_f32(x, nd->name, "scale", 1, &C, scale, true)};
        const char *y = step(x, "Mul", nd->name, "scale", m, 2, NULL);
        const char *ad[2] = {y, xp_init_f32(x, nd->name, "shift", 1, &C, shift, true)};
        v = step(x, "Add", nd->name, "shift", ad, 2, NULL);
    }
    v = activation(x, nd->name, v, a_str(nd, "activation"));
    return finish(x, nd->out[0], l, v);
}

/* ---- pooling, LRN ---------------------------------------------------------------------- */

static slim_status emit_pool(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    bool max = !strcmp(nd->d->name, "max_pool");
    const int64_t *kv;
    if (a_ints(nd, "ksize", &kv) != 2)
        return xp_fail(x, SLIM_EINVAL, "ksize is not [KH, KW]");
    const char *in = xp_get(x, nd->in[0], XL_CF);
    Onnx__NodeProto *pn;
    const char *v = step(x, max ? "MaxPool" : "AveragePool", nd->name, "pool", &in, 1, &pn);
    spatial_attrs(x, pn, nd, kv, max);
    if (a_int(nd, "ceil_mode"))
        xp_attr_int(x, pn, "ceil_mode", 1);
    if (!max && a_int(nd, "count_include_pad"))
        xp_attr_int(x, pn, "count_include_pad", 1);
    return finish(x, nd->out[0], XL_CF, v);
}

static slim_status emit_global_pool(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    const char *in = xp_get(x, nd->in[0], XL_CF);
    const char *v = step(x, "GlobalAveragePool", nd->name, "pool", &in, 1, NULL);
    if (a_int(nd, "keep_dims"))
        return finish(x, nd->out[0], XL_CF, v);
    Onnx__NodeProto *fn;
    v = step(x, "Flatten", nd->name, "flatten", &v, 1, &fn); /* (N,C,1,1) -> (N,C) */
    xp_attr_int(x, fn, "axis", 1);
    return finish(x, nd->out[0], XL_SAME, v);
}

static slim_status emit_lrn(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    if (xp_shape(x, nd->in[0])->rank != 4)
        return xp_fail(x, SLIM_EUNSUPPORTED, "ONNX's LRN takes image batches (4-D) only");
    /* TensorFlow's alpha multiplies the window's sum, ONNX's its mean */
    int64_t size = 2 * a_int(nd, "depth_radius") + 1;
    const char *in = xp_get(x, nd->in[0], XL_CF);
    Onnx__NodeProto *ln;
    const char *v = step(x, "LRN", nd->name, "lrn", &in, 1, &ln);
    xp_attr_int(x, ln, "size", size);
    xp_attr_float(x, ln, "alpha", (float)(a_float(nd, "alpha") * (double)size));
    xp_attr_float(x, ln, "beta", (float)a_float(nd, "beta"));
    xp_attr_float(x, ln, "bias", (float)a_float(nd, "bias"));
    return finish(x, nd->out[0], XL_CF, v);
}

/* ---- element-wise ---------------------------------------------------------------------- */

static slim_status emit_unary(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    const char *op = nd->d->name, *nm = nd->name;
    int l;
    const char *in = xp_get_any(x, nd->in[0], &l), *v;
    Onnx__NodeProto *on = NULL;
    if (!strcmp(op, "dropout")) { /* inference: the identity */
        xp_alias(x, nd->out[0], nd->in[0]);
        return x->st;
    } else if (!strcmp(op, "relu")) {
        v = step(x, "Relu", nm, "relu", &in, 1, NULL);
    } else if (!strcmp(op, "relu6")) {
        v = clip(x, nm, in, 0, 6);
    } else if (!strcmp(op, "clip")) {
        v = clip(x, nm, in, (float)a_float(nd, "min"), (float)a_float(nd, "max"));
    } else if (!strcmp(op, "sigmoid")) {
        v = step(x, "Sigmoid", nm, "sigmoid", &in, 1, NULL);
    } else if (!strcmp(op, "tanh")) {
        v = step(x, "Tanh", nm, "tanh", &in, 1, NULL);
    } else if (!strcmp(op, "leaky_relu") || !strcmp(op, "elu")) {
        v = step(x, op[0] == 'l' ? "LeakyRelu" : "Elu", nm, op, &in, 1, &on);
        xp_attr_float(x, on, "alpha", (float)a_float(nd, "alpha"));
    } else if (!strcmp(op, "hard_sigmoid")) {
        v = step(x, "HardSigmoid", nm, op, &in, 1, &on);
        xp_attr_float(x, on, "alpha", (float)a_float(nd, "alpha"));
        xp_attr_float(x, on, "beta", (float)a_float(nd, "beta"));
    } else if (!strcmp(op, "hard_swish") && x->opset >= 14) {
        v = step(x, "HardSwish", nm, op, &in, 1, NULL);
    } else if (!strcmp(op, "hard_swish")) { /* x hard_sigmoid(x; 1/6, 1/2) */
        const char *g = step(x, "HardSigmoid", nm, "gate", &in, 1, &on);
        xp_attr_float(x, on, "alpha", 1.0f / 6);
        xp_attr_float(x, on, "beta", 0.5f);
        const char *m[2] = {in, g};
        v = step(x, "Mul", nm, op, m, 2, NULL);
    } else if (!strcmp(op, "silu")) { /* x sigmoid(x) */
        const char *m[2] = {in, step(x, "Sigmoid", nm, "sigmoid", &in, 1, NULL)};
        v = step(x, "Mul", nm, op, m, 2, NULL);
    } else if (!strcmp(op, "gelu") && x->opset >= 20) {
        v = step(x, "Gelu", nm, op, &in, 1, NULL);
    } else if (!strcmp(op, "gelu")) { /* x (1 + erf(x / sqrt 2)) / 2, as PyTorch writes it */
        const char *d[2] = {in, scalar(x, (float)M_SQRT2)};
        const char *e = step(x, "Div", nm, "scaled", d, 2, NULL);
        e = step(x, "Erf", nm, "erf", &e, 1, NULL);
        const char *a[2] = {e, scalar(x, 1)};
        e = step(x, "Add", nm, "one_plus", a, 2, NULL);
        const char *m[2] = {in, e};
        e = step(x, "Mul", nm, "times_x", m, 2, NULL);
        const char *h[2] = {e, scalar(x, 0.5f)};
        v = step(x, "Mul", nm, op, h, 2, NULL);
    } else {
        return xp_fail(x, SLIM_EINTERNAL, "no unary mapping");
    }
    return finish(x, nd->out[0], l, v);
}

static slim_status emit_softmax(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    int rank = xp_shape(x, nd->in[0])->rank, l;
    int64_t axis = a_int(nd, "axis");
    axis = axis < 0 ? axis + rank : axis;
    const char *in = xp_get_any(x, nd->in[0], &l);
    Onnx__NodeProto *sn;
    bool log = !strcmp(nd->d->name, "log_softmax");
    const char *v = step(x, log ? "LogSoftmax" : "Softmax", nd->name, "softmax", &in, 1, &sn);
    xp_attr_int(x, sn, "axis", l == XL_CF ? xl_pos[axis] : axis);
    return finish(x, nd->out[0], l, v);
}

/* The layout for an op taking several inputs: channels first when every input is 4-D
 * (or a single number) and one of them already is. */
static int shared_layout(xp_ex *x, const slim__node *nd)
{
    bool any_cf = false;
    for (int i = 0; i < nd->n_in; i++) {
        const slim_shape *s = xp_shape(x, nd->in[i]);
        if (s->rank != 4 && slim_shape_numel(s) != 1)
            return XL_SAME;
        any_cf = any_cf || (s->rank == 4 && x->val[nd->in[i]][XL_CF]);
    }
    return any_cf ? XL_CF : XL_SAME;
}

/* An input in layout l: single numbers of rank < 4 broadcast in any layout. */
static const char *input_in(xp_ex *x, slim_tid t, int l)
{
    return xp_get(x, t, xp_shape(x, t)->rank == 4 ? l : XL_SAME);
}

static slim_status emit_add_mul(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    int l = shared_layout(x, nd);
    const char *in[SLIM_MAX_INPUTS];
    for (int i = 0; i < nd->n_in; i++)
        in[i] = input_in(x, nd->in[i], l);
    bool mul = !strcmp(nd->d->name, "multiply");
    const char *op = mul ? "Mul" : nd->n_in > 2 ? "Sum" : "Add";
    const char *v = step(x, op, nd->name, nd->d->name, in, nd->n_in, NULL);
    if (!mul)
        v = activation(x, nd->name, v, a_str(nd, "activation"));
    return finish(x, nd->out[0], l, v);
}

static slim_status emit_bias_add(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    const slim_shape *xs = xp_shape(x, nd->in[0]);
    int l;
    const char *in[2] = {xp_get_any(x, nd->in[0], &l), NULL};
    const float *b = xp_param(x, nd->in[1]);
    if (l == XL_CF && b) { /* the biases as (C,1,1) */
        int64_t dim[3] = {xs->dim[3], 1, 1};
        in[1] = xp_init_f32(x, x->g->tensors[nd->in[1]].name, NULL, 3, dim, b, true);
    } else {
        in[0] = xp_get(x, nd->in[0], l = XL_SAME);
        in[1] = xp_get(x, nd->in[1], XL_SAME);
    }
    const char *v = step(x, "Add", nd->name, "bias_add", in, 2, NULL);
    return finish(x, nd->out[0], l, v);
}

/* ---- joining, shapes --------------------------------------------------------------------- */

static slim_status emit_concat(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    int rank = xp_shape(x, nd->out[0])->rank;
    int l = rank == 4 ? shared_layout(x, nd) : XL_SAME;
    int64_t axis = a_int(nd, "axis");
    axis = axis < 0 ? axis + rank : axis;
    const char *in[SLIM_MAX_INPUTS];
    for (int i = 0; i < nd->n_in; i++)
        in[i] = xp_get(x, nd->in[i], l);
    Onnx__NodeProto *cn;
    const char *v = step(x, "Concat", nd->name, "concat", in, nd->n_in, &cn);
    xp_attr_int(x, cn, "axis", l == XL_CF ? xl_pos[axis] : axis);
    return finish(x, nd->out[0], l, v);
}

static slim_status emit_pad(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    int rank = xp_shape(x, nd->in[0])->rank, l;
    const int64_t *pv;
    if (a_ints(nd, "paddings", &pv) != 2 * rank)
        return xp_fail(x, SLIM_EINVAL, "paddings has not 2 values per axis");
    const char *mode = a_str(nd, "mode");
    const char *om = !strcmp(mode, "CONSTANT")  ? "constant"
                     : !strcmp(mode, "REFLECT") ? "reflect"
                     : !strcmp(mode, "EDGE")    ? "edge"
                                                : NULL;
    if (!om)
        return xp_fail(x, SLIM_EUNSUPPORTED, "pad mode %s has no ONNX counterpart", mode);
    const char *in[3] = {xp_get_any(x, nd->in[0], &l), NULL, NULL};
    int64_t pads[2 * SLIM_MAX_DIMS];
    for (int a = 0; a < rank; a++) { /* ONNX: every axis' start, then every axis' end */
        int oa = l == XL_CF ? xl_pos[a] : a;
        pads[oa] = pv[2 * a];
        pads[rank + oa] = pv[2 * a + 1];
    }
    in[1] = xp_init_i64(x, nd->name, "pads", 2 * rank, pads);
    int n_in = 2;
    if (!strcmp(om, "constant") && a_float(nd, "constant_value") != 0)
        in[n_in++] = scalar(x, (float)a_float(nd, "constant_value"));
    Onnx__NodeProto *pn;
    const char *v = step(x, "Pad", nd->name, "pad", in, n_in, &pn);
    xp_attr_str(x, pn, "mode", om);
    return finish(x, nd->out[0], l, v);
}

/* A value of t that a reshape may take: channels first only where that is the same
 * element order. */
static const char *flat_input(xp_ex *x, slim_tid t)
{
    int l;
    const char *v = xp_get_any(x, t, &l);
    if (l == XL_CF && !xp_cf_is_flat(xp_shape(x, t)))
        v = xp_get(x, t, XL_SAME);
    return v;
}

static slim_status need_batch_axis(xp_ex *x, const slim__node *nd, bool kept, const char *what)
{
    if (kept || !x->o->dynamic_batch || !x->batched[nd->in[0]])
        return SLIM_OK;
    return xp_fail(x, SLIM_EUNSUPPORTED, "%s the batch axis; export with a fixed batch (--batch=N)",
                   what);
}

static slim_status emit_reshape(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    const slim_shape *is = xp_shape(x, nd->in[0]), *os = xp_shape(x, nd->out[0]);
    int64_t dim[SLIM_MAX_DIMS];
    memcpy(dim, os->dim, sizeof dim);
    if (x->o->dynamic_batch && x->batched[nd->in[0]]) {
        /* the node's own shape: slim's -1 (inferred) and 0 (copied) are ONNX's, the
         * batch size written out becomes 0 where it is the input's first dimension */
        const int64_t *sv;
        bool adapts = false;
        if (os->rank > 0 && a_ints(nd, "shape", &sv) == os->rank)
            memcpy(dim, sv, (size_t)os->rank * sizeof *dim);
        if (os->rank > 0 && dim[0] == x->batch && is->rank > 0 && is->dim[0] == x->batch)
            dim[0] = 0;
        for (int i = 0; i < os->rank; i++)
            adapts = adapts || dim[i] <= 0;
        if (need_batch_axis(x, nd, adapts, "reshapes"))
            return x->st;
    }
    const char *in[2] = {flat_input(x, nd->in[0]),
                         xp_init_i64(x, nd->name, "shape", os->rank, dim)};
    const char *v = step(x, "Reshape", nd->name, "reshape", in, 2, NULL);
    return finish(x, nd->out[0], XL_SAME, v);
}

static slim_status emit_flatten(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    int rank = xp_shape(x, nd->in[0])->rank;
    int64_t axis = a_int(nd, "axis");
    axis = axis < 0 ? axis + rank : axis;
    if (need_batch_axis(x, nd, axis > 0, "flattens"))
        return x->st;
    int l;
    const char *in = xp_get_any(x, nd->in[0], &l);
    if (l == XL_CF && (axis > 1 || !xp_cf_is_flat(xp_shape(x, nd->in[0]))))
        in = xp_get(x, nd->in[0], XL_SAME);
    Onnx__NodeProto *fn;
    const char *v = step(x, "Flatten", nd->name, "flatten", &in, 1, &fn);
    xp_attr_int(x, fn, "axis", axis);
    return finish(x, nd->out[0], XL_SAME, v);
}

/* Axes removed from t's value in layout *l, renumbered for ONNX; *l becomes XL_SAME
 * when the remaining ONNX axes would not be in slim's order. Returns the value. */
static const char *removing_axes(xp_ex *x, slim_tid t, const bool *drop, int64_t *axes, int *n_axes,
                                 int *l)
{
    const char *v = xp_get_any(x, t, l);
    if (*l == XL_CF) {
        static const int cf_order[4] = {0, 3, 1, 2}; /* ONNX axis j holds slim axis cf_order[j] */
        int last = -1;
        for (int j = 0; j < 4; j++)
            if (!drop[cf_order[j]]) {
                if (cf_order[j] < last)
                    *l = XL_SAME;
                last = cf_order[j];
            }
        if (*l == XL_SAME)
            v = xp_get(x, t, XL_SAME);
    }
    int rank = xp_shape(x, t)->rank;
    *n_axes = 0;
    for (int j = 0; j < rank; j++)
        for (int a = 0; a < rank; a++)
            if (drop[a] && (*l == XL_CF ? xl_pos[a] : a) == j)
                axes[(*n_axes)++] = j;
    return v;
}

static slim_status emit_squeeze(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    const slim_shape *is = xp_shape(x, nd->in[0]);
    const int64_t *av;
    int na = a_ints(nd, "axes", &av);
    bool drop[SLIM_MAX_DIMS] = {false}, any = false;
    for (int a = 0; a < is->rank; a++)
        drop[a] = na ? false : is->dim[a] == 1;
    for (int i = 0; i < na; i++)
        drop[av[i] < 0 ? av[i] + is->rank : av[i]] = true;
    for (int a = 0; a < is->rank; a++)
        any = any || drop[a];
    if (!any) {
        xp_alias(x, nd->out[0], nd->in[0]);
        return x->st;
    }
    if (need_batch_axis(x, nd, !drop[0], "squeezes"))
        return x->st;
    int64_t axes[SLIM_MAX_DIMS];
    int n_axes, l;
    const char *in[2] = {removing_axes(x, nd->in[0], drop, axes, &n_axes, &l), NULL};
    in[1] = xp_init_i64(x, nd->name, "axes", n_axes, axes);
    const char *v = step(x, "Squeeze", nd->name, "squeeze", in, 2, NULL);
    return finish(x, nd->out[0], XL_SAME, v);
}

static slim_status emit_reduce_mean(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    const slim_shape *is = xp_shape(x, nd->in[0]);
    const int64_t *av;
    int na = a_ints(nd, "axes", &av);
    bool keep = a_int(nd, "keep_dims") != 0, drop[SLIM_MAX_DIMS] = {false};
    for (int i = 0; i < na; i++)
        drop[av[i] < 0 ? av[i] + is->rank : av[i]] = true;
    if (need_batch_axis(x, nd, !drop[0], "averages over"))
        return x->st;
    int64_t axes[SLIM_MAX_DIMS];
    int n_axes = 0, l;
    const char *in[2] = {NULL, NULL};
    if (keep) { /* the rank stays: any layout */
        in[0] = xp_get_any(x, nd->in[0], &l);
        for (int a = 0; a < is->rank; a++)
            if (drop[a])
                axes[n_axes++] = l == XL_CF ? xl_pos[a] : a;
    } else {
        in[0] = removing_axes(x, nd->in[0], drop, axes, &n_axes, &l);
    }
    Onnx__NodeProto *rn;
    const char *v;
    if (x->opset >= 18) {
        in[1] = xp_init_i64(x, nd->name, "axes", n_axes, axes);
        v = step(x, "ReduceMean", nd->name, "mean", in, 2, &rn);
    } else {
        v = step(x, "ReduceMean", nd->name, "mean", in, 1, &rn);
        xp_attr_ints(x, rn, "axes", axes, n_axes);
    }
    xp_attr_int(x, rn, "keepdims", keep);
    return finish(x, nd->out[0], keep ? l : XL_SAME, v);
}

static slim_status emit_transpose(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    const int64_t *pv;
    int np = a_ints(nd, "perm", &pv), l;
    if (need_batch_axis(x, nd, np > 0 && pv[0] == 0, "moves"))
        return x->st;
    const char *in = xp_get_any(x, nd->in[0], &l);
    int64_t perm[SLIM_MAX_DIMS];
    bool same = true;
    for (int i = 0; i < np; i++) { /* from the NCHW value: slim axis a is ONNX axis xl_pos[a] */
        perm[i] = l == XL_CF ? xl_pos[pv[i]] : pv[i];
        same = same && perm[i] == i;
    }
    if (same) { /* NHWC -> NCHW of a channels-first value: the value itself */
        x->val[nd->out[0]][XL_SAME] = in;
        return x->st;
    }
    Onnx__NodeProto *tn;
    const char *v = step(x, "Transpose", nd->name, "transpose", &in, 1, &tn);
    xp_attr_ints(x, tn, "perm", perm, np);
    return finish(x, nd->out[0], XL_SAME, v);
}

static slim_status emit_slice(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    const slim_shape *is = xp_shape(x, nd->in[0]);
    const int64_t *bv, *sv;
    int nb = a_ints(nd, "begin", &bv), ns = a_ints(nd, "size", &sv), l;
    if (nb != is->rank || ns != is->rank)
        return xp_fail(x, SLIM_EINVAL, "begin and size have not one value per axis");
    const char *in[4] = {xp_get_any(x, nd->in[0], &l), NULL, NULL, NULL};
    int64_t starts[SLIM_MAX_DIMS], ends[SLIM_MAX_DIMS], axes[SLIM_MAX_DIMS];
    int k = 0;
    for (int a = 0; a < is->rank; a++) {
        int64_t e = sv[a] < 0 ? is->dim[a] : bv[a] + sv[a];
        if (bv[a] == 0 && e == is->dim[a])
            continue;
        if (a == 0 && need_batch_axis(x, nd, false, "cuts"))
            return x->st;
        starts[k] = bv[a];
        ends[k] = e;
        axes[k++] = l == XL_CF ? xl_pos[a] : a;
    }
    if (!k) {
        xp_alias(x, nd->out[0], nd->in[0]);
        return x->st;
    }
    in[1] = xp_init_i64(x, nd->name, "starts", k, starts);
    in[2] = xp_init_i64(x, nd->name, "ends", k, ends);
    in[3] = xp_init_i64(x, nd->name, "axes", k, axes);
    const char *v = step(x, "Slice", nd->name, "slice", in, 4, NULL);
    return finish(x, nd->out[0], l, v);
}

/* ---- matmul, layer norm ------------------------------------------------------------------ */

static const char *swap_last(xp_ex *x, const char *base, const char *what, const char *v, int rank)
{
    int64_t perm[SLIM_MAX_DIMS];
    for (int i = 0; i < rank; i++)
        perm[i] = i;
    perm[rank - 2] = rank - 1;
    perm[rank - 1] = rank - 2;
    Onnx__NodeProto *tn;
    const char *out = step(x, "Transpose", base, what, &v, 1, &tn);
    xp_attr_ints(x, tn, "perm", perm, rank);
    return out;
}

static slim_status emit_matmul(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    const char *in[2];
    for (int i = 0; i < 2; i++) {
        in[i] = xp_get(x, nd->in[i], XL_SAME);
        if (a_int(nd, i ? "transpose_b" : "transpose_a"))
            in[i] = swap_last(x, nd->name, i ? "b_t" : "a_t", in[i], xp_shape(x, nd->in[i])->rank);
    }
    const char *v = step(x, "MatMul", nd->name, "matmul", in, 2, NULL);
    double alpha = a_float(nd, "alpha");
    if (alpha != 1) {
        const char *m[2] = {v, scalar(x, (float)alpha)};
        v = step(x, "Mul", nd->name, "alpha", m, 2, NULL);
    }
    return finish(x, nd->out[0], XL_SAME, v);
}

static slim_status emit_layer_norm(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    float eps = (float)a_float(nd, "epsilon");
    const char *xv = xp_get(x, nd->in[0], XL_SAME), *gv = xp_get(x, nd->in[1], XL_SAME),
               *bv = xp_get(x, nd->in[2], XL_SAME);
    const char *nm = nd->name;
    bool stats = x->uses[nd->out[1]] || x->uses[nd->out[2]]; /* the mean, 1 / deviation */
    if (x->opset >= 17) {
        const char *in[3] = {xv, gv, bv};
        const char *out[3] = {xp_out(x, nd->out[0], XL_SAME), "", ""};
        for (int k = 1; stats && k < 3; k++)
            out[k] = xp_out(x, nd->out[k], XL_SAME);
        Onnx__NodeProto *ln = xp_node(x, "LayerNormalization", nm, in, 3, out, stats ? 3 : 1);
        xp_attr_int(x, ln, "axis", -1);
        xp_attr_float(x, ln, "epsilon", eps);
        return x->st;
    }
    /* as PyTorch writes it: mean, d = x - mean, std = sqrt(mean(d^2) + eps), d / std * gamma +
     * beta (what slim's import folds back into one layer_norm) */
    static const int64_t last = -1;
    Onnx__NodeProto *rn;
    const char *mean = step(x, "ReduceMean", nm, "mean", &xv, 1, &rn);
    xp_attr_ints(x, rn, "axes", &last, 1);
    xp_attr_int(x, rn, "keepdims", 1);
    const char *s[2] = {xv, mean};
    const char *d = step(x, "Sub", nm, "centered", s, 2, NULL);
    const char *sq[2] = {d, scalar(x, 2)};
    const char *d2 = step(x, "Pow", nm, "squared", sq, 2, NULL);
    const char *var = step(x, "ReduceMean", nm, "variance", &d2, 1, &rn);
    xp_attr_ints(x, rn, "axes", &last, 1);
    xp_attr_int(x, rn, "keepdims", 1);
    const char *ve[2] = {var, scalar(x, eps)};
    const char *r = step(x, "Add", nm, "var_eps", ve, 2, NULL);
    const char *sd = step(x, "Sqrt", nm, "std", &r, 1, NULL);
    const char *dv[2] = {d, sd};
    const char *y = step(x, "Div", nm, "normalized", dv, 2, NULL);
    const char *m2[2] = {y, gv};
    y = step(x, "Mul", nm, "scaled", m2, 2, NULL);
    const char *a[2] = {y, bv};
    y = step(x, "Add", nm, "shifted", a, 2, NULL);
    if (finish(x, nd->out[0], XL_SAME, y) || !stats)
        return x->st;
    x->val[nd->out[1]][XL_SAME] = mean;
    x->val[nd->out[2]][XL_SAME] = step(x, "Reciprocal", nm, "rstd", &sd, 1, NULL);
    return x->st;
}

/* ---- plugin ops ---------------------------------------------------------------------------- */

/* An op whose plugin declared the ONNX op type it implements ("Type" or "domain:Type"):
 * that node, on the inputs in slim's layout, with the op's attributes under their names. */
static slim_status emit_plugin(xp_ex *x, int n)
{
    const slim__node *nd = NODE(n);
    const char *type = slim__registry_onnx_type(x->g->reg, nd->d->name);
    if (!type)
        return xp_fail(x, SLIM_EINTERNAL, "no ONNX op type declared");
    const char *colon = strrchr(type, ':');
    const char *in[SLIM_MAX_INPUTS], *out[SLIM__MAX_OUTPUTS];
    for (int i = 0; i < nd->n_in; i++)
        in[i] = xp_get(x, nd->in[i], XL_SAME);
    for (int k = 0; k < nd->n_out; k++)
        out[k] = xp_out(x, nd->out[k], XL_SAME);
    Onnx__NodeProto *on =
        xp_node(x, colon ? colon + 1 : type, nd->name, in, nd->n_in, out, nd->n_out);
    if (on && colon) {
        char dom[256];
        snprintf(dom, sizeof dom, "%.*s", (int)(colon - type), type);
        on->domain = xp_strdup(x, dom);
        xp_use_domain(x, dom);
    }
    for (int i = 0; on && i < nd->d->n_attrs; i++) {
        const slim_attr_spec *sp = &nd->d->attrs[i];
        const slim__attr_value *v = &nd->attrs.values[i];
        if (sp->type == SLIM_ATTR_INT || sp->type == SLIM_ATTR_BOOL)
            xp_attr_int(x, on, sp->name, v->ints[0]);
        else if (sp->type == SLIM_ATTR_FLOAT)
            xp_attr_float(x, on, sp->name, (float)v->floats[0]);
        else if (sp->type == SLIM_ATTR_STRING)
            xp_attr_str(x, on, sp->name, v->str ? v->str : "");
        else if (sp->type == SLIM_ATTR_INTS)
            xp_attr_ints(x, on, sp->name, v->ints, v->n);
        else if (sp->type == SLIM_ATTR_FLOATS)
            xp_attr_floats(x, on, sp->name, v->floats, v->n);
    }
    return x->st;
}

/* ---- the table ----------------------------------------------------------------------------- */

static const struct {
    const char *op;
    xp_emit_fn fn;
} table[] = {
    {"conv2d", emit_conv},
    {"fully_connected", emit_fc},
    {"batch_norm", emit_bn},
    {"max_pool", emit_pool},
    {"avg_pool", emit_pool},
    {"global_avg_pool", emit_global_pool},
    {"lrn", emit_lrn},
    {"dropout", emit_unary},
    {"relu", emit_unary},
    {"relu6", emit_unary},
    {"clip", emit_unary},
    {"sigmoid", emit_unary},
    {"tanh", emit_unary},
    {"leaky_relu", emit_unary},
    {"elu", emit_unary},
    {"hard_sigmoid", emit_unary},
    {"hard_swish", emit_unary},
    {"silu", emit_unary},
    {"gelu", emit_unary},
    {"softmax", emit_softmax},
    {"log_softmax", emit_softmax},
    {"add", emit_add_mul},
    {"multiply", emit_add_mul},
    {"bias_add", emit_bias_add},
    {"concat", emit_concat},
    {"pad", emit_pad},
    {"reshape", emit_reshape},
    {"flatten", emit_flatten},
    {"squeeze", emit_squeeze},
    {"reduce_mean", emit_reduce_mean},
    {"transpose", emit_transpose},
    {"slice", emit_slice},
    {"matmul", emit_matmul},
    {"layer_norm", emit_layer_norm},
};

xp_emit_fn xp_op_emitter(const slim_registry *reg, const char *op)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].op, op))
            return table[i].fn;
    return slim__registry_onnx_type(reg, op) ? emit_plugin : NULL;
}
