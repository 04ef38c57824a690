/*
 * interop/tf_graph_ops.c - each TensorFlow op of a frozen graph as ONNX
 * nodes (opset 13) computing the same.
 *
 * TensorFlow's images are NHWC, ONNX's spatial ops NCHW: a Conv2D, pool or
 * FusedBatchNorm becomes Transpose(0,3,1,2) -> the ONNX op -> Transpose
 * (0,2,3,1), which the importer turns into layouts (no data moves), so
 * every value between the spatial ops keeps TensorFlow's dims and the ops
 * that do not care (Relu, Add, Reshape, Concat, Mean, Pad) read them as
 * TensorFlow does. Weights are written as the layers read them: a Conv2D's
 * HWIO filter as OIHW, a DepthwiseConv2dNative's (KH,KW,C,M) as (C*M,1,KH,KW)
 * with group C, a BiasAdd right after a Conv2D or MatMul as that layer's
 * bias. Shape arithmetic (Shape, StridedSlice, Pack, Cast) becomes the ONNX
 * nodes the importer folds once the shapes are known.
 */
#include "interop/tf_graph_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODE(k) (t->nodes[k].nd)

/* Input i of the current node as an ONNX value name. */
static const char *in_ref(slim__tfg *t, int k, int i)
{
    return tg_ref(t, t->nodes[k].in[i]);
}

static slim_status need_inputs(slim__tfg *t, int k, int n)
{
    if (t->nodes[k].n_in < n)
        return tg_fail(t, SLIM_EINVAL, "%d input%s, it takes %d", t->nodes[k].n_in,
                       t->nodes[k].n_in == 1 ? "" : "s", n);
    return SLIM_OK;
}

static slim_status check_nhwc(slim__tfg *t, int k)
{
    char buf[16];
    const char *f = tg_attr_str(NODE(k), "data_format", "NHWC", buf, sizeof buf);
    if (strcmp(f, "NHWC") != 0)
        return tg_fail(t, SLIM_EUNSUPPORTED,
                       "data_format %s: slim imports NHWC graphs (TensorFlow's CPU layout)", f);
    return SLIM_OK;
}

/* A name for a layer's weights: the Const's name without the model's root
 * scope and its last part when that part is the role's (weights, biases). */
static const char *scope_of(slim__tfg *t, int c, const char *const *roles)
{
    const char *nm = tg_unrooted(t, NODE(c)->name);
    const char *slash = strrchr(nm, '/');
    for (int i = 0; slash && roles[i]; i++)
        if (strcmp(slash + 1, roles[i]) == 0)
            return tg_printf(t, "%.*s", (int)(slash - nm), nm);
    return tg_strdup(t, nm);
}

static const char *const weight_roles[] = {"weights",          "kernel", "depthwise_weights",
                                           "depthwise_kernel", "filter", NULL};

/* x (N,H,W,C) as (N,C,H,W), and back into out. */
static const char *to_nchw(slim__tfg *t, const char *x)
{
    static const int64_t perm[4] = {0, 3, 1, 2};
    const char *y = tg_tmp(t, "nchw_in");
    Onnx__NodeProto *n = tg_node_add(t, "Transpose", tg_tmp(t, "to_nchw"), &x, 1, y);
    tg_attr_set_ints(t, n, "perm", perm, 4);
    return y;
}

static void from_nchw(slim__tfg *t, const char *y, const char *out)
{
    static const int64_t perm[4] = {0, 2, 3, 1};
    Onnx__NodeProto *n = tg_node_add(t, "Transpose", tg_tmp(t, "to_nhwc"), &y, 1, out);
    tg_attr_set_ints(t, n, "perm", perm, 4);
}

/* strides / dilations / ksize: [1, h, w, 1] -> (h, w). */
static slim_status hw_pair(slim__tfg *t, int k, const char *key, int64_t *out, bool required)
{
    int64_t v[4];
    int n = tg_attr_ints(NODE(k), key, v, 4);
    if (n < 0 && !required) {
        out[0] = out[1] = 1;
        return SLIM_OK;
    }
    if (n != 4 || v[0] != 1 || v[3] != 1 || v[1] < 1 || v[2] < 1 || v[1] > 1 << 16 ||
        v[2] > 1 << 16)
        return tg_fail(t, SLIM_EUNSUPPORTED,
                       "%s must be [1, h, w, 1] with h, w in [1, 65536] (NHWC)", key);
    out[0] = v[1];
    out[1] = v[2];
    return SLIM_OK;
}

/* padding SAME / VALID / EXPLICIT on an ONNX spatial node. */
static slim_status set_padding(slim__tfg *t, int k, Onnx__NodeProto *n)
{
    char buf[16];
    const char *p = tg_attr_str(NODE(k), "padding", "", buf, sizeof buf);
    if (!strcmp(p, "SAME")) {
        tg_attr_set_str(t, n, "auto_pad", "SAME_UPPER"); /* the odd pixel at the end, as TF */
    } else if (!strcmp(p, "VALID")) {
        tg_attr_set_str(t, n, "auto_pad", "VALID");
    } else if (!strcmp(p, "EXPLICIT")) {
        int64_t e[8];
        if (tg_attr_ints(NODE(k), "explicit_paddings", e, 8) != 8 || e[0] || e[1] || e[6] || e[7])
            return tg_fail(t, SLIM_EUNSUPPORTED,
                           "explicit_paddings must pad H and W only (8 values, NHWC)");
        int64_t pads[4] = {e[2], e[4], e[3], e[5]}; /* top, left, bottom, right */
        for (int i = 0; i < 4; i++)
            if (pads[i] < 0 || pads[i] > 1 << 16)
                return tg_fail(t, SLIM_EUNSUPPORTED, "a padding of %lld", (long long)pads[i]);
        tg_attr_set_ints(t, n, "pads", pads, 4);
    } else {
        return tg_fail(t, SLIM_EUNSUPPORTED, "padding '%s' (SAME, VALID or EXPLICIT)", p);
    }
    return SLIM_OK;
}

/* The bias a BiasAdd (or Add) right after node k adds: its Const, or -1; *by
 * the node. A 1-D float of o values. */
static int bias_after(slim__tfg *t, int k, int64_t o, int *by)
{
    *by = tg_sole_consumer(t, k);
    if (*by < 0)
        return -1;
    const char *op = NODE(*by)->op;
    if (strcmp(op, "BiasAdd") && strcmp(op, "Add") && strcmp(op, "AddV2"))
        return -1;
    char buf[16];
    if (strcmp(tg_attr_str(NODE(*by), "data_format", "NHWC", buf, sizeof buf), "NHWC") != 0)
        return -1;
    const tg_node *a = &t->nodes[*by];
    if (a->n_in != 2 || a->in[0].node != k)
        return -1;
    int c = tg_const_in(t, *by, 1);
    const tg_tensor *v;
    if (c < 0 || tg_const_value(t, c, &v) != SLIM_OK || !v->f || v->rank != 1 || v->numel != o)
        return -1;
    return c;
}

/* Conv2D and DepthwiseConv2dNative: Conv (bias fused), in NCHW. */
static slim_status conv(slim__tfg *t, int k)
{
    slim_status st;
    if ((st = need_inputs(t, k, 2)) || (st = check_nhwc(t, k)))
        return st;
    bool dw = strcmp(NODE(k)->op, "Conv2D") != 0;
    int c = tg_const_in(t, k, 1);
    if (c < 0)
        return tg_fail(t, SLIM_EUNSUPPORTED,
                       "its filter is computed by the graph (a frozen graph holds it as a "
                       "Const: freeze the graph first)");
    const tg_tensor *w;
    if ((st = tg_const_value(t, c, &w)))
        return st;
    if (!w->f || w->rank != 4 || w->numel == 0)
        return tg_fail(t, SLIM_EINVAL, "its filter '%s' is not a 4-D float tensor", NODE(c)->name);
    int64_t KH = w->dim[0], KW = w->dim[1], C = w->dim[2], M = w->dim[3];
    int64_t O = dw ? C * M : M;
    int64_t od[4] = {O, dw ? 1 : C, KH, KW};
    float *wd = tg_alloc(t, (size_t)w->numel * sizeof(float));
    if (!wd)
        return tg_oom(t);
    for (int64_t h = 0; h < KH; h++)
        for (int64_t x = 0; x < KW; x++)
            for (int64_t i = 0; i < C; i++)
                for (int64_t m = 0; m < M; m++) {
                    float v = w->f[((h * KW + x) * C + i) * M + m];
                    if (dw) /* output channel i*M + m reads input channel i */
                        wd[((i * M + m) * KH + h) * KW + x] = v;
                    else
                        wd[((m * C + i) * KH + h) * KW + x] = v;
                }
    int64_t s[2], d[2];
    if ((st = hw_pair(t, k, "strides", s, true)) || (st = hw_pair(t, k, "dilations", d, false)))
        return st;
    const char *scope = scope_of(t, c, weight_roles);
    const char *ins[3] = {to_nchw(t, in_ref(t, k, 0)),
                          tg_init_f32(t, tg_printf(t, "%s.weight", scope), 4, od, wd), NULL};
    int by, b = bias_after(t, k, O, &by);
    const char *out = tg_value_name(t, k, 0);
    if (b >= 0) {
        const tg_tensor *bv;
        tg_const_value(t, b, &bv);
        ins[2] = tg_init_f32(t, tg_printf(t, "%s.bias", scope), 1, &O, bv->f);
        t->nodes[by].done = true;
        out = tg_value_name(t, by, 0);
    }
    const char *y = tg_tmp(t, "nchw");
    Onnx__NodeProto *n = tg_node_add(t, "Conv", NODE(k)->name, ins, b >= 0 ? 3 : 2, y);
    int64_t ks[2] = {KH, KW};
    tg_attr_set_ints(t, n, "kernel_shape", ks, 2);
    tg_attr_set_ints(t, n, "strides", s, 2);
    tg_attr_set_ints(t, n, "dilations", d, 2);
    tg_attr_set_int(t, n, "group", dw ? C : 1);
    if ((st = set_padding(t, k, n)))
        return st;
    from_nchw(t, y, out);
    return SLIM_OK;
}

/* MaxPool, AvgPool. */
static slim_status pool(slim__tfg *t, int k)
{
    slim_status st;
    int64_t ks[2], s[2];
    if ((st = need_inputs(t, k, 1)) || (st = check_nhwc(t, k)) ||
        (st = hw_pair(t, k, "ksize", ks, true)) || (st = hw_pair(t, k, "strides", s, true)))
        return st;
    const char *x = to_nchw(t, in_ref(t, k, 0)), *y = tg_tmp(t, "nchw");
    bool avg = !strcmp(NODE(k)->op, "AvgPool");
    Onnx__NodeProto *n = tg_node_add(t, avg ? "AveragePool" : "MaxPool", NODE(k)->name, &x, 1, y);
    tg_attr_set_ints(t, n, "kernel_shape", ks, 2);
    tg_attr_set_ints(t, n, "strides", s, 2);
    /* AvgPool's SAME windows average what they cover: ONNX's count_include_pad 0 */
    if ((st = set_padding(t, k, n)))
        return st;
    from_nchw(t, y, tg_value_name(t, k, 0));
    return SLIM_OK;
}

/* FusedBatchNorm (V1-V3), inference: BatchNormalization in NCHW. */
static slim_status batch_norm(slim__tfg *t, int k)
{
    slim_status st;
    if ((st = need_inputs(t, k, 5)) || (st = check_nhwc(t, k)))
        return st;
    if (tg_attr_bool(NODE(k), "is_training", true))
        return tg_fail(t, SLIM_EUNSUPPORTED,
                       "is_training is true (batch statistics): export the inference graph "
                       "(is_training=False) before freezing it");
    static const char *const roles[] = {"moving_mean", "mean", NULL};
    static const char *const what[4] = {"scale", "offset", "mean", "variance"};
    static const char *const suffix[4] = {"weight", "bias", "running_mean", "running_var"};
    int cs[4];
    const tg_tensor *v[4];
    for (int i = 0; i < 4; i++) {
        cs[i] = tg_const_in(t, k, i + 1);
        if (cs[i] < 0)
            return tg_fail(t, SLIM_EUNSUPPORTED,
                           "its %s is computed by the graph (slim needs it as a Const)", what[i]);
        if ((st = tg_const_value(t, cs[i], &v[i])))
            return st;
        if (!v[i]->f || v[i]->rank != 1 || v[i]->numel != v[0]->numel || !v[i]->numel)
            return tg_fail(t, SLIM_EINVAL, "its %s '%s' is not a float vector of %lld", what[i],
                           NODE(cs[i])->name, (long long)v[0]->numel);
    }
    /* the layer: the scope of its moving mean (TF-Slim's SCOPE/BatchNorm/moving_mean) */
    const char *scope = scope_of(t, cs[2], roles);
    if (!strchr(NODE(cs[2])->name, '/'))
        scope = scope_of(t, k, roles);
    const char *ins[5] = {to_nchw(t, in_ref(t, k, 0))};
    for (int i = 0; i < 4; i++)
        ins[i + 1] =
            tg_init_f32(t, tg_printf(t, "%s.%s", scope, suffix[i]), 1, &v[i]->numel, v[i]->f);
    const char *y = tg_tmp(t, "nchw");
    Onnx__NodeProto *n = tg_node_add(t, "BatchNormalization", NODE(k)->name, ins, 5, y);
    tg_attr_set_float(t, n, "epsilon", tg_attr_float(NODE(k), "epsilon", 1e-4f));
    from_nchw(t, y, tg_value_name(t, k, 0));
    return SLIM_OK;
}

/* MatMul: Gemm with the weights (and a following BiasAdd) when B is a Const. */
static slim_status matmul(slim__tfg *t, int k)
{
    slim_status st;
    if ((st = need_inputs(t, k, 2)))
        return st;
    bool ta = tg_attr_bool(NODE(k), "transpose_a", false),
         tb = tg_attr_bool(NODE(k), "transpose_b", false);
    int c = tg_const_in(t, k, 1);
    const char *out = tg_value_name(t, k, 0);
    if (c < 0 || ta) {
        if (ta || tb)
            return tg_fail(t, SLIM_EUNSUPPORTED,
                           "transpose_a / transpose_b of operands computed by the graph");
        const char *ins[2] = {in_ref(t, k, 0), in_ref(t, k, 1)};
        tg_node_add(t, "MatMul", NODE(k)->name, ins, 2, out);
        return SLIM_OK;
    }
    const tg_tensor *w;
    if ((st = tg_const_value(t, c, &w)))
        return st;
    if (!w->f || w->rank != 2 || !w->numel)
        return tg_fail(t, SLIM_EINVAL, "its weights '%s' are not a 2-D float tensor",
                       NODE(c)->name);
    int64_t O = tb ? w->dim[0] : w->dim[1];
    const char *scope = scope_of(t, c, weight_roles);
    const char *ins[3] = {in_ref(t, k, 0),
                          tg_init_f32(t, tg_printf(t, "%s.weight", scope), 2, w->dim, w->f), NULL};
    int by, b = bias_after(t, k, O, &by);
    if (b >= 0) {
        const tg_tensor *bv;
        tg_const_value(t, b, &bv);
        ins[2] = tg_init_f32(t, tg_printf(t, "%s.bias", scope), 1, &O, bv->f);
        t->nodes[by].done = true;
        out = tg_value_name(t, by, 0);
    }
    Onnx__NodeProto *n = tg_node_add(t, "Gemm", NODE(k)->name, ins, b >= 0 ? 3 : 2, out);
    if (tb)
        tg_attr_set_int(t, n, "transB", 1);
    return SLIM_OK;
}

/* Ops of the same name and inputs in ONNX. */
static slim_status same(slim__tfg *t, int k, const char *op, int n_in)
{
    slim_status st;
    if ((st = need_inputs(t, k, n_in)))
        return st;
    const char *ins[2];
    for (int i = 0; i < n_in; i++)
        ins[i] = in_ref(t, k, i);
    tg_node_add(t, op, NODE(k)->name, ins, n_in, tg_value_name(t, k, 0));
    return SLIM_OK;
}

static slim_status binary(slim__tfg *t, int k)
{
    const char *op = NODE(k)->op;
    if (!strcmp(op, "BiasAdd")) {
        slim_status st = check_nhwc(t, k); /* the bias on the last axis: ONNX's broadcast */
        if (st)
            return st;
    }
    const char *onnx = !strcmp(op, "Sub")       ? "Sub"
                       : !strcmp(op, "Mul")     ? "Mul"
                       : !strcmp(op, "RealDiv") ? "Div"
                                                : "Add";
    return same(t, k, onnx, 2);
}

static slim_status unary(slim__tfg *t, int k)
{
    const char *op = NODE(k)->op;
    if (!strcmp(op, "Relu6")) {
        slim_status st = need_inputs(t, k, 1);
        if (st)
            return st;
        float lo = 0, hi = 6;
        const char *ins[3] = {in_ref(t, k, 0), tg_init_f32(t, tg_tmp(t, "min"), 0, NULL, &lo),
                              tg_init_f32(t, tg_tmp(t, "max"), 0, NULL, &hi)};
        tg_node_add(t, "Clip", NODE(k)->name, ins, 3, tg_value_name(t, k, 0));
        return SLIM_OK;
    }
    if (!strcmp(op, "Softmax")) {
        Onnx__NodeProto *n = NULL;
        slim_status st = same(t, k, "Softmax", 1);
        if (!st && t->n_on)
            n = t->on[t->n_on - 1];
        tg_attr_set_int(t, n, "axis", -1);
        return st;
    }
    return same(t, k, op, 1); /* Relu, Sigmoid, Tanh, Identity */
}

static slim_status identity(slim__tfg *t, int k)
{
    slim_status st = need_inputs(t, k, 1);
    if (st)
        return st;
    /* of a Const: readers take the Const itself (tg_ref looks through) */
    if (t->nodes[k].in[0].port == 0 && !strcmp(NODE(tg_source(t, t->nodes[k].in[0]))->op, "Const"))
        return SLIM_OK;
    return same(t, k, "Identity", 1);
}

/* A Const input of integers (axes, shapes, paddings). */
static slim_status int_const(slim__tfg *t, int k, int i, const char *what, const tg_tensor **v)
{
    int c = tg_const_in(t, k, i);
    slim_status st;
    if (c < 0)
        return tg_fail(t, SLIM_EUNSUPPORTED, "its %s is computed by the graph (slim needs a Const)",
                       what);
    if ((st = tg_const_value(t, c, v)))
        return st;
    if (!(*v)->i)
        return tg_fail(t, SLIM_EINVAL, "its %s '%s' is not integers", what, NODE(c)->name);
    return SLIM_OK;
}

/* Mean over axes (TF-Slim's global average pool: axes [1, 2], keep_dims). */
static slim_status mean(slim__tfg *t, int k)
{
    slim_status st;
    const tg_tensor *ax;
    if ((st = need_inputs(t, k, 2)) || (st = int_const(t, k, 1, "axes", &ax)))
        return st;
    if (ax->numel < 1 || ax->numel > TG_MAX_DIMS)
        return tg_fail(t, SLIM_EUNSUPPORTED, "%lld axes", (long long)ax->numel);
    const char *x = in_ref(t, k, 0);
    Onnx__NodeProto *n = tg_node_add(t, "ReduceMean", NODE(k)->name, &x, 1, tg_value_name(t, k, 0));
    tg_attr_set_ints(t, n, "axes", ax->i, (int)ax->numel);
    tg_attr_set_int(t, n, "keepdims", tg_attr_bool(NODE(k), "keep_dims", false));
    return SLIM_OK;
}

static slim_status reshape(slim__tfg *t, int k)
{
    return same(t, k, "Reshape", 2); /* the shape: a Const, or folded from Shape/Pack */
}

static slim_status squeeze(slim__tfg *t, int k)
{
    slim_status st = need_inputs(t, k, 1);
    if (st)
        return st;
    int64_t axes[TG_MAX_DIMS];
    int na = tg_attr_ints(NODE(k), "squeeze_dims", axes, TG_MAX_DIMS);
    if (na < 0)
        na = tg_attr_ints(NODE(k), "axis", axes, TG_MAX_DIMS);
    if (na > TG_MAX_DIMS)
        return tg_fail(t, SLIM_EUNSUPPORTED, "%d axes", na);
    int64_t nd = na;
    const char *ins[2] = {in_ref(t, k, 0),
                          na > 0 ? tg_init_i64(t, tg_tmp(t, "axes"), 1, &nd, axes) : NULL};
    tg_node_add(t, "Squeeze", NODE(k)->name, ins, na > 0 ? 2 : 1, tg_value_name(t, k, 0));
    return SLIM_OK;
}

/* ConcatV2 (values..., axis) and Concat (axis, values...). */
static slim_status concat(slim__tfg *t, int k)
{
    int n = t->nodes[k].n_in;
    bool v2 = !strcmp(NODE(k)->op, "ConcatV2");
    slim_status st;
    const tg_tensor *ax;
    if ((st = need_inputs(t, k, 2)) || (st = int_const(t, k, v2 ? n - 1 : 0, "axis", &ax)))
        return st;
    if (ax->numel != 1)
        return tg_fail(t, SLIM_EINVAL, "its axis has %lld values", (long long)ax->numel);
    const char **ins = tg_alloc(t, (size_t)n * sizeof *ins);
    if (!ins)
        return tg_oom(t);
    for (int i = 0; i < n - 1; i++)
        ins[i] = in_ref(t, k, v2 ? i : i + 1);
    Onnx__NodeProto *o =
        tg_node_add(t, "Concat", NODE(k)->name, ins, n - 1, tg_value_name(t, k, 0));
    tg_attr_set_int(t, o, "axis", ax->i[0]);
    return SLIM_OK;
}

/* Pad, PadV2 (a constant value), MirrorPad (REFLECT). */
static slim_status pad(slim__tfg *t, int k)
{
    slim_status st;
    const tg_tensor *p;
    if ((st = need_inputs(t, k, 2)) || (st = int_const(t, k, 1, "paddings", &p)))
        return st;
    if (p->rank != 2 || p->dim[1] != 2 || p->dim[0] < 1 || p->dim[0] > TG_MAX_DIMS)
        return tg_fail(t, SLIM_EINVAL, "its paddings are not (rank, 2)");
    int64_t r = p->dim[0], pads[2 * TG_MAX_DIMS], np = 2 * r;
    for (int64_t i = 0; i < r; i++) {
        pads[i] = p->i[2 * i];
        pads[r + i] = p->i[2 * i + 1];
    }
    const char *ins[3] = {in_ref(t, k, 0), tg_init_i64(t, tg_tmp(t, "pads"), 1, &np, pads), NULL};
    int n_in = 2;
    const char *mode = "constant";
    if (!strcmp(NODE(k)->op, "PadV2")) {
        if ((st = need_inputs(t, k, 3)))
            return st;
        ins[n_in++] = in_ref(t, k, 2);
    } else if (!strcmp(NODE(k)->op, "MirrorPad")) {
        char buf[16];
        const char *m = tg_attr_str(NODE(k), "mode", "", buf, sizeof buf);
        if (strcmp(m, "REFLECT") != 0)
            return tg_fail(t, SLIM_EUNSUPPORTED, "mode %s (slim pads with REFLECT)", m);
        mode = "reflect";
    }
    Onnx__NodeProto *o = tg_node_add(t, "Pad", NODE(k)->name, ins, n_in, tg_value_name(t, k, 0));
    tg_attr_set_str(t, o, "mode", mode);
    return SLIM_OK;
}

/* ---- shape arithmetic (folded by the importer) -------------------------------------- */

static slim_status shape(slim__tfg *t, int k)
{
    return same(t, k, "Shape", 1);
}

static slim_status cast(slim__tfg *t, int k)
{
    const Tensorflow__AttrValue *a = tg_attr(NODE(k), "DstT");
    int dt = a && a->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TYPE ? (int)a->type : 0;
    int to = dt == TENSORFLOW__DATA_TYPE__DT_FLOAT   ? ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
             : dt == TENSORFLOW__DATA_TYPE__DT_INT32 ? ONNX__TENSOR_PROTO__DATA_TYPE__INT32
             : dt == TENSORFLOW__DATA_TYPE__DT_INT64 ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64
                                                     : 0;
    if (!to)
        return tg_fail(t, SLIM_EUNSUPPORTED, "a cast to TensorFlow dtype %d", dt);
    slim_status st = same(t, k, "Cast", 1);
    if (!st)
        tg_attr_set_int(t, t->on[t->n_on - 1], "to", to);
    return st;
}

/* StridedSlice with constant begin, end and strides: Slice, then Squeeze of
 * the shrunk axes. */
static slim_status strided_slice(slim__tfg *t, int k)
{
    slim_status st;
    const tg_tensor *b, *e, *s;
    if ((st = need_inputs(t, k, 4)) || (st = int_const(t, k, 1, "begin", &b)) ||
        (st = int_const(t, k, 2, "end", &e)) || (st = int_const(t, k, 3, "strides", &s)))
        return st;
    int64_t n = b->numel;
    if (n < 1 || n > TG_MAX_DIMS || e->numel != n || s->numel != n)
        return tg_fail(t, SLIM_EINVAL, "begin, end and strides of %lld, %lld and %lld values",
                       (long long)n, (long long)e->numel, (long long)s->numel);
    const Tensorflow__NodeDef *nd = NODE(k);
    int64_t bm = tg_attr_int(nd, "begin_mask", 0), em = tg_attr_int(nd, "end_mask", 0),
            sm = tg_attr_int(nd, "shrink_axis_mask", 0);
    if (tg_attr_int(nd, "ellipsis_mask", 0) || tg_attr_int(nd, "new_axis_mask", 0))
        return tg_fail(t, SLIM_EUNSUPPORTED, "an ellipsis_mask or new_axis_mask");
    int64_t starts[TG_MAX_DIMS], ends[TG_MAX_DIMS], axes[TG_MAX_DIMS], steps[TG_MAX_DIMS],
        shrink[TG_MAX_DIMS];
    int ns = 0;
    for (int64_t i = 0; i < n; i++) {
        steps[i] = s->i[i];
        if (!steps[i])
            return tg_fail(t, SLIM_EINVAL, "a stride of 0");
        bool fwd = steps[i] > 0;
        starts[i] = bm >> i & 1 ? (fwd ? 0 : INT64_MAX) : b->i[i];
        ends[i] = em >> i & 1 ? (fwd ? INT64_MAX : INT64_MIN) : e->i[i];
        if (sm >> i & 1) { /* one element: [begin, begin + 1) */
            starts[i] = b->i[i];
            ends[i] = b->i[i] == -1 || b->i[i] == INT64_MAX ? INT64_MAX : b->i[i] + 1;
            steps[i] = 1;
            shrink[ns++] = i;
        }
        axes[i] = i;
    }
    const char *ins[5] = {in_ref(t, k, 0), tg_init_i64(t, tg_tmp(t, "starts"), 1, &n, starts),
                          tg_init_i64(t, tg_tmp(t, "ends"), 1, &n, ends),
                          tg_init_i64(t, tg_tmp(t, "axes"), 1, &n, axes),
                          tg_init_i64(t, tg_tmp(t, "steps"), 1, &n, steps)};
    const char *out = tg_value_name(t, k, 0), *y = ns ? tg_tmp(t, "sliced") : out;
    tg_node_add(t, "Slice", NODE(k)->name, ins, 5, y);
    if (ns) {
        int64_t nn = ns;
        const char *sq[2] = {y, tg_init_i64(t, tg_tmp(t, "shrink"), 1, &nn, shrink)};
        tg_node_add(t, "Squeeze", tg_tmp(t, "shrink_axes"), sq, 2, out);
    }
    return SLIM_OK;
}

/* Pack (tf.stack): each value Unsqueezed at axis, then Concat. */
static slim_status pack(slim__tfg *t, int k)
{
    int n = t->nodes[k].n_in;
    if (n < 1)
        return need_inputs(t, k, 1);
    int64_t axis = tg_attr_int(NODE(k), "axis", 0), one = 1;
    const char *ax = tg_init_i64(t, tg_tmp(t, "axis"), 1, &one, &axis);
    const char **parts = tg_alloc(t, (size_t)n * sizeof *parts);
    if (!parts)
        return tg_oom(t);
    for (int i = 0; i < n; i++) {
        const char *ins[2] = {in_ref(t, k, i), ax};
        parts[i] = tg_tmp(t, "part");
        tg_node_add(t, "Unsqueeze", tg_tmp(t, "unsqueeze"), ins, 2, parts[i]);
    }
    Onnx__NodeProto *o = tg_node_add(t, "Concat", NODE(k)->name, parts, n, tg_value_name(t, k, 0));
    tg_attr_set_int(t, o, "axis", axis);
    return SLIM_OK;
}

static slim_status nothing(slim__tfg *t, int k)
{
    (void)t, (void)k;
    return SLIM_OK; /* Placeholder: the graph input; Const: read as initializers */
}

typedef slim_status (*tg_fn)(slim__tfg *t, int k);

static const struct {
    const char *op;
    tg_fn fn;
} ops[] = {
    {"Placeholder", nothing},
    {"Const", nothing},
    {"Identity", identity},
    {"StopGradient", identity},
    {"Snapshot", identity},
    {"Conv2D", conv},
    {"DepthwiseConv2dNative", conv},
    {"MaxPool", pool},
    {"AvgPool", pool},
    {"FusedBatchNorm", batch_norm},
    {"FusedBatchNormV2", batch_norm},
    {"FusedBatchNormV3", batch_norm},
    {"MatMul", matmul},
    {"BiasAdd", binary},
    {"Add", binary},
    {"AddV2", binary},
    {"Sub", binary},
    {"Mul", binary},
    {"RealDiv", binary},
    {"Relu", unary},
    {"Relu6", unary},
    {"Sigmoid", unary},
    {"Tanh", unary},
    {"Softmax", unary},
    {"Mean", mean},
    {"Reshape", reshape},
    {"Squeeze", squeeze},
    {"ConcatV2", concat},
    {"Concat", concat},
    {"Pad", pad},
    {"PadV2", pad},
    {"MirrorPad", pad},
    {"Shape", shape},
    {"Cast", cast},
    {"StridedSlice", strided_slice},
    {"Pack", pack},
};

static tg_fn find(const char *op)
{
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (!strcmp(ops[i].op, op))
            return ops[i].fn;
    return NULL;
}

bool tg_known_op(const char *op)
{
    return find(op) != NULL;
}

slim_status tg_translate_node(slim__tfg *t, int k)
{
    tg_fn fn = find(NODE(k)->op);
    if (!fn)
        return tg_fail(t, SLIM_EUNSUPPORTED, "an op slim does not import");
    slim_status st = fn(t, k);
    return st ? st : t->ref_st; /* a Const read that failed to decode */
}
