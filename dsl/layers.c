/*
 * dsl/layers.c - layers that own parameters, as TF-Slim's layers do, and
 * plain registry ops (built-in or from plugins) with their attributes
 * checked against the op's own schema (params.c has what they share).
 *
 *   conv2d            conv (+ biases | batch_norm) (+ activation)
 *                     weights (KH,KW,C,O), biases
 *   separable_conv2d  depthwise conv [+ 1x1 conv] (+ ...)
 *                     depthwise_weights (KH,KW,1,C*M), pointwise_weights (1,1,C*M,O)
 *   fully_connected   x (N,K) w + b (+ ...)
 *                     weights (K,O), biases
 *   batch_norm        TF-Slim's batch_norm (+ activation)
 *                     beta, gamma, moving_mean, moving_variance
 *
 * Parameter names are scope/name/weights, scope/name/BatchNorm/beta, ... as
 * TF-Slim's variable scopes make them.
 */
#include "dsl/dsl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const reserved[] = {"name", "inputs", "repeat", "stack", "if"};

static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return INT64_MAX;
    return r;
}

/* ---- the layers ------------------------------------------------------------------- */

static slim_status need_nhwc(dsl *d, const dnode *at, const char *kind, slim_tid x,
                             slim_tensor_desc *xd)
{
    *xd = dsl_tensor_info(d, x);
    if (xd->shape.rank != 4 || xd->dtype != SLIM_F32)
        return dsl_fail(d->err, at, SLIM_ESHAPE,
                        "found input %s for %s, expected an f32 image batch (N,H,W,C)",
                        dsl_shape_text(d, &xd->shape), kind);
    return SLIM_OK;
}

static slim_status conv_attrs(dsl *d, const env *e, dsl_args *a, const dnode *at,
                              const int64_t k[2], slim_attrs *attrs, int64_t stride[2],
                              int64_t rate[2], const char *kind)
{
    const char *pad = "SAME";
    stride[0] = stride[1] = rate[0] = rate[1] = 1;
    TRY(args_pair(d, e, a, "stride", 1, 4096, stride));
    TRY(args_pair(d, e, a, "rate", 1, 4096, rate));
    dval pv;
    dsl_arg *pa = args_find(a, "padding");
    if (pa)
        TRY(dsl_resolve(&d->ev, e, pa->vals[0], &pv));
    if (pa && pv.kind == DV_LIST) {
        /* explicit pads [top, bottom, left, right] (an imported model's) */
        pa->used = true;
        const dnode *pat = pa->vals[0];
        int64_t pads[4];
        if (pv.n != 4)
            return dsl_fail(d->err, pat, SLIM_EINVAL,
                            "found a list of %d for padding, expected SAME, VALID, FIXED or "
                            "[top, bottom, left, right]",
                            pv.n);
        for (int i = 0; i < 4; i++) {
            if (pv.items[i].kind != DV_INT || pv.items[i].i < 0 || pv.items[i].i > 1 << 20)
                return dsl_fail(d->err, pv.items[i].at ? pv.items[i].at : pat, SLIM_EINVAL,
                                "found %s in padding, expected pads in [0, %d]",
                                dval_str(d->arena, &pv.items[i]), 1 << 20);
            pads[i] = pv.items[i].i;
        }
        const char *wino = "auto";
        TRY(args_choice(d, e, a, "winograd", "auto|on|off", &wino));
        slim_attrs_set_str(attrs, "winograd", wino);
        slim_attrs_set_ints(attrs, "strides", stride, 2);
        slim_attrs_set_ints(attrs, "dilations", rate, 2);
        slim_attrs_set_str(attrs, "padding", "EXPLICIT");
        slim_attrs_set_ints(attrs, "pads", pads, 4);
        return SLIM_OK;
    }
    TRY(args_choice(d, e, a, "padding", "SAME|VALID|FIXED", &pad));
    const char *wino = "auto";
    TRY(args_choice(d, e, a, "winograd", "auto|on|off", &wino));
    slim_attrs_set_str(attrs, "winograd", wino);
    (void)at;
    (void)kind;
    slim_attrs_set_ints(attrs, "strides", stride, 2);
    slim_attrs_set_ints(attrs, "dilations", rate, 2);
    if (!strcmp(pad, "FIXED")) {
        /* TF-Slim's conv2d_same: pad k_eff - 1 in total, the smaller half first,
         * whatever the input size (resnet_utils.conv2d_same) */
        int64_t pads[4];
        for (int i = 0; i < 2; i++) {
            int64_t keff = k[i] + (k[i] - 1) * (rate[i] - 1), total = keff - 1;
            pads[2 * i] = total / 2;
            pads[2 * i + 1] = total - total / 2;
        }
        slim_attrs_set_str(attrs, "padding", "EXPLICIT");
        slim_attrs_set_ints(attrs, "pads", pads, 4);
    } else {
        slim_attrs_set_str(attrs, "padding", pad);
    }
    return SLIM_OK;
}

static const dsl_param_spec weights_spec = {.key = "weights",
                                            .suffix = "weights",
                                            .init = {.kind = SLIM_INIT_XAVIER_UNIFORM},
                                            .decay_mult = 1};

static slim_status layer_tail(dsl *d, dsl_layer_ctx *lc, bool use_bn, dsl_args *bn_opts,
                              bool trainable, slim_tid x, slim_tid *out, int64_t *count)
{
    slim_tid y = x;
    if (use_bn) {
        const char *sc = dsl_printf(d->arena, "%s/BatchNorm", lc->name);
        if (!sc)
            return dsl_fail(d->err, lc->at, SLIM_ENOMEM, "out of memory");
        const char *act;
        TRY(dsl_fusable_activation(d, lc->e, lc->args, "relu", &act));
        TRY(dsl_batch_norm(d, lc->e, bn_opts, sc, trainable, lc->at, act, x, &y, count));
        TRY(args_check_used(d, bn_opts, dsl_bn_keys, DSL_N_BN_KEYS));
        if (act) {
            *out = y;
            return SLIM_OK;
        }
    } else if (bn_opts->n) {
        /* options for a normalizer not in use (set for every conv by defaults:) */
        for (int i = 0; i < bn_opts->n; i++)
            bn_opts->a[i].used = true;
    }
    return dsl_activation(d, lc->e, lc->args, "relu", lc->name, y, out);
}

/* Options of one weight of a separable convolution: its own key first, then
 * weights: (TF-Slim's weights_* arguments apply to both of them). */
static slim_status sep_weights(dsl *d, dsl_layer_ctx *lc, const char *key, dsl_args *out)
{
    dsl_args own, common;
    TRY(args_sub(d, lc->e, lc->args, key, key, &own));
    TRY(args_sub(d, lc->e, lc->args, "weights", "weights", &common));
    *out = own.at ? own : common;
    if (!own.at || !common.at)
        return SLIM_OK;
    int n = own.n + common.n;
    dsl_arg *a = dsl_alloc(d->arena, (size_t)n * sizeof *a);
    if (!a)
        return dsl_fail(d->err, lc->at, SLIM_ENOMEM, "out of memory");
    if (own.n)
        memcpy(a, own.a, (size_t)own.n * sizeof *a);
    out->a = a;
    out->n = own.n;
    for (int i = 0; i < common.n; i++)
        if (!args_find(&own, common.a[i].key))
            a[out->n++] = common.a[i];
    return SLIM_OK;
}

static slim_status build_conv(dsl *d, dsl_layer_ctx *lc, bool separable, slim_tid *out)
{
    dsl_args *a = lc->args;
    const char *kind = separable ? "separable_conv2d" : "conv2d";
    if (lc->n_in != 1)
        return dsl_fail(d->err, lc->at, SLIM_EINVAL, "found %d inputs for %s, expected one",
                        lc->n_in, kind);
    slim_tensor_desc xd;
    TRY(need_nhwc(d, lc->at, kind, lc->in[0], &xd));
    int64_t c = xd.shape.dim[3];
    int64_t o = 0, k[2] = {0, 0}, mult = 1, stride[2], rate[2], groups = 1;
    bool has_o = args_has(a, "num_outputs");
    if (has_o) {
        dval v;
        TRY(args_value(d, lc->e, a, "num_outputs", &v, NULL));
        if (separable && v.kind == DV_NULL)
            has_o = false;
        else
            TRY(args_int(d, lc->e, a, "num_outputs", 1, 1 << 20, &o));
    } else if (!separable) {
        return args_missing(d, a, "num_outputs",
                            "found conv2d without num_outputs, expected num_outputs: N (the "
                            "output channels)");
    }
    if (!args_has(a, "kernel_size"))
        return args_missing(d, a, "kernel_size",
                            separable ? "found separable_conv2d without kernel_size, expected "
                                        "kernel_size: 3 or [3, 3]"
                                      : "found conv2d without kernel_size, expected "
                                        "kernel_size: 3 or [3, 3]");
    TRY(args_pair(d, lc->e, a, "kernel_size", 1, 4096, k));
    if (separable)
        TRY(args_int(d, lc->e, a, "depth_multiplier", 1, 4096, &mult));
    bool trainable = true;
    TRY(args_bool(d, lc->e, a, "trainable", &trainable));
    slim_attrs *attrs = slim_attrs_new();
    if (!attrs)
        return dsl_fail(d->err, lc->at, SLIM_ENOMEM, "out of memory");
    slim_status st = conv_attrs(d, lc->e, a, lc->at, k, attrs, stride, rate, kind);
    int64_t count = 0;
    slim_tid x = lc->in[0], y = -1;
    slim_tid cin[3];
    int ncin = 0;
    bool use_bn = false;
    dsl_args bn_opts = {0};
    const char *dw_name = lc->name;
    int64_t dw_macs = 0;
    if (st != SLIM_OK)
        goto done;
    if (separable) {
        dsl_args wo;
        static const dsl_param_spec dws = {.key = "depthwise_weights",
                                           .suffix = "depthwise_weights",
                                           .init = {.kind = SLIM_INIT_XAVIER_UNIFORM},
                                           .decay_mult = 1};
        st = sep_weights(d, lc, "depthwise_weights", &wo);
        slim_tid w;
        int64_t wd[4] = {k[0], k[1], 1, c * mult};
        if (st == SLIM_OK)
            st = dsl_make_param(d, lc->e, wo.at ? &wo : NULL, lc->name, &dws, 4, wd, trainable,
                                lc->at, &w, &count);
        if (st != SLIM_OK)
            goto done;
        cin[0] = x;
        cin[1] = w;
        ncin = 2;
        if (has_o) {
            /* depthwise then pointwise: the bias or norm goes after the pointwise conv */
            dw_name = dsl_printf(d->arena, "%s/depthwise", lc->name);
            slim_attrs_set_int(attrs, "groups", c);
            slim_tid dw;
            st = dw_name ? dsl_add_node(d, lc->at, "conv2d", dw_name, cin, 2, attrs, &dw)
                         : SLIM_ENOMEM;
            if (st != SLIM_OK)
                goto done;
            slim_tensor_desc dd = dsl_tensor_info(d, dw);
            dw_macs = sat_mul(sat_mul(dd.shape.dim[1] * dd.shape.dim[2], k[0] * k[1]), c * mult);
            slim_attrs_free(attrs);
            attrs = slim_attrs_new();
            if (!attrs) {
                st = dsl_fail(d->err, lc->at, SLIM_ENOMEM, "out of memory");
                goto done;
            }
            static const dsl_param_spec pws = {.key = "pointwise_weights",
                                               .suffix = "pointwise_weights",
                                               .init = {.kind = SLIM_INIT_XAVIER_UNIFORM},
                                               .decay_mult = 1};
            int64_t pd[4] = {1, 1, c * mult, o};
            st = sep_weights(d, lc, "pointwise_weights", &wo);
            if (st == SLIM_OK)
                st = dsl_make_param(d, lc->e, wo.at ? &wo : NULL, lc->name, &pws, 4, pd, trainable,
                                    lc->at, &w, &count);
            if (st != SLIM_OK)
                goto done;
            cin[0] = dw;
            cin[1] = w;
        } else {
            o = c * mult;
            slim_attrs_set_int(attrs, "groups", c);
        }
    } else {
        dsl_args wo;
        slim_tid w;
        st = args_int(d, lc->e, a, "groups", 1, 1 << 20, &groups);
        if (st == SLIM_OK && (c % groups || o % groups))
            st = dsl_fail(d->err, lc->at, SLIM_EINVAL,
                          "found groups: %lld for %lld input and %lld output channels, expected a "
                          "divisor of both",
                          (long long)groups, (long long)c, (long long)o);
        if (st != SLIM_OK)
            goto done;
        if (groups > 1)
            slim_attrs_set_int(attrs, "groups", groups);
        int64_t wd[4] = {k[0], k[1], c / groups, o};
        st = args_sub(d, lc->e, a, "weights", "weights", &wo);
        if (st == SLIM_OK)
            st = dsl_make_param(d, lc->e, wo.at ? &wo : NULL, lc->name, &weights_spec, 4, wd,
                                trainable, lc->at, &w, &count);
        if (st != SLIM_OK)
            goto done;
        cin[0] = x;
        cin[1] = w;
        ncin = 2;
    }
    st = dsl_norm_or_bias(d, lc->e, a, lc->name, trainable, lc->at, cin, &ncin, &use_bn, &bn_opts,
                          &count, o);
    if (st == SLIM_OK)
        st = dsl_add_node(d, lc->at, "conv2d", lc->name, cin, ncin, attrs, &y);
    if (st != SLIM_OK)
        goto done;
    {
        /* multiply-adds of one example: OH*OW*KH*KW*C*O (depthwise: OH*OW*KH*KW*C*M) */
        slim_tensor_desc yd = dsl_tensor_info(d, y);
        int64_t hw = yd.shape.dim[1] * yd.shape.dim[2], macs;
        if (separable && !has_o)
            macs = sat_mul(sat_mul(hw, k[0] * k[1]), o);
        else if (separable)
            macs = sat_mul(hw, sat_mul(c * mult, o));
        else
            macs = sat_mul(sat_mul(hw, k[0] * k[1]), sat_mul(c / groups, o));
        macs = macs > INT64_MAX - dw_macs ? INT64_MAX : macs + dw_macs;
        slim_tid z;
        st = layer_tail(d, lc, use_bn, &bn_opts, trainable, y, &z, &count);
        if (st == SLIM_OK) {
            static const char *const keys[] = {"name",
                                               "inputs",
                                               "repeat",
                                               "stack",
                                               "if",
                                               "num_outputs",
                                               "kernel_size",
                                               "stride",
                                               "padding",
                                               "rate",
                                               "activation",
                                               "normalizer",
                                               "batch_norm",
                                               "weights",
                                               "biases",
                                               "trainable",
                                               "winograd",
                                               "groups",
                                               "depth_multiplier",
                                               "depthwise_weights",
                                               "pointwise_weights"};
            if (separable && !has_o)
                args_mark_used(a, "pointwise_weights"); /* set for every layer by defaults: */
            /* conv2d: the first 18 keys (groups its last); separable_conv2d all
             * but groups, which it refuses */
            dsl_arg *ga = separable ? args_find(a, "groups") : NULL;
            if (ga && !ga->from_defaults)
                st = dsl_fail(d->err, ga->keynode, SLIM_EINVAL,
                              "found groups for separable_conv2d, expected it on conv2d only "
                              "(separable_conv2d's depthwise step is grouped by construction)");
            else if (ga)
                ga->used = true;
            if (st == SLIM_OK)
                st = args_check_used(d, a, keys, separable ? 21 : 18);
        }
        if (st == SLIM_OK)
            st = dsl_record_layer(d, lc->name, kind, lc->in, lc->n_in, z, count, macs, lc->at);
        *out = z;
    }
done:
    slim_attrs_free(attrs);
    return st;
}

static slim_status build_fc(dsl *d, dsl_layer_ctx *lc, slim_tid *out)
{
    dsl_args *a = lc->args;
    if (lc->n_in != 1)
        return dsl_fail(d->err, lc->at, SLIM_EINVAL,
                        "found %d inputs for fully_connected, expected one", lc->n_in);
    slim_tensor_desc xd = dsl_tensor_info(d, lc->in[0]);
    if (xd.shape.rank < 2 || xd.dtype != SLIM_F32)
        return dsl_fail(d->err, lc->at, SLIM_ESHAPE,
                        "found input %s for fully_connected, expected f32 (N, ...)",
                        dsl_shape_text(d, &xd.shape));
    int64_t kdim = 1;
    for (int i = 1; i < xd.shape.rank; i++)
        kdim = sat_mul(kdim, xd.shape.dim[i]);
    int64_t o = 0;
    if (!args_has(a, "num_outputs"))
        return args_missing(d, a, "num_outputs",
                            "found fully_connected without num_outputs, expected num_outputs: N");
    TRY(args_int(d, lc->e, a, "num_outputs", 1, 1 << 24, &o));
    bool trainable = true;
    TRY(args_bool(d, lc->e, a, "trainable", &trainable));
    int64_t count = 0;
    dsl_args wo;
    slim_tid w, y, z;
    int64_t wd[2] = {kdim, o};
    TRY(args_sub(d, lc->e, a, "weights", "weights", &wo));
    TRY(dsl_make_param(d, lc->e, wo.at ? &wo : NULL, lc->name, &weights_spec, 2, wd, trainable,
                       lc->at, &w, &count));
    slim_tid cin[3] = {lc->in[0], w};
    int ncin = 2;
    bool use_bn;
    dsl_args bn_opts;
    TRY(dsl_norm_or_bias(d, lc->e, a, lc->name, trainable, lc->at, cin, &ncin, &use_bn, &bn_opts,
                         &count, o));
    TRY(dsl_add_node(d, lc->at, "fully_connected", lc->name, cin, ncin, NULL, &y));
    TRY(layer_tail(d, lc, use_bn, &bn_opts, trainable, y, &z, &count));
    static const char *const keys[] = {"name",       "inputs",      "repeat",     "stack",
                                       "if",         "num_outputs", "activation", "normalizer",
                                       "batch_norm", "weights",     "biases",     "trainable"};
    TRY(args_check_used(d, a, keys, 12));
    *out = z;
    return dsl_record_layer(d, lc->name, "fully_connected", lc->in, lc->n_in, z, count,
                            sat_mul(kdim, o), lc->at);
}

static slim_status build_bn(dsl *d, dsl_layer_ctx *lc, slim_tid *out)
{
    dsl_args *a = lc->args;
    if (lc->n_in != 1)
        return dsl_fail(d->err, lc->at, SLIM_EINVAL, "found %d inputs for batch_norm, expected one",
                        lc->n_in);
    bool trainable = true;
    TRY(args_bool(d, lc->e, a, "trainable", &trainable));
    int64_t count = 0;
    slim_tid y, z;
    const char *act;
    TRY(dsl_fusable_activation(d, lc->e, a, NULL, &act));
    TRY(dsl_batch_norm(d, lc->e, a, lc->name, trainable, lc->at, act, lc->in[0], &y, &count));
    z = y;
    if (!act)
        TRY(dsl_activation(d, lc->e, a, NULL, lc->name, y, &z));
    static const char *const keys[] = {"name",        "inputs",          "repeat",     "stack",
                                       "if",          "decay",           "epsilon",    "center",
                                       "scale",       "use_batch_stats", "beta",       "gamma",
                                       "moving_mean", "moving_variance", "activation", "trainable"};
    TRY(args_check_used(d, a, keys, 16));
    *out = z;
    return dsl_record_layer(d, lc->name, "batch_norm", lc->in, lc->n_in, z, count, 0, lc->at);
}

/* layer_norm: over the last axis, with gamma and beta (PyTorch's LayerNorm
 * over the features; ConvNeXt's). */
static slim_status build_ln(dsl *d, dsl_layer_ctx *lc, slim_tid *out)
{
    dsl_args *a = lc->args;
    if (lc->n_in != 1)
        return dsl_fail(d->err, lc->at, SLIM_EINVAL, "found %d inputs for layer_norm, expected one",
                        lc->n_in);
    slim_tensor_desc xd = dsl_tensor_info(d, lc->in[0]);
    if (xd.shape.rank < 1 || xd.dtype != SLIM_F32)
        return dsl_fail(d->err, lc->at, SLIM_ESHAPE,
                        "found input %s for layer_norm, expected f32 with rank >= 1",
                        dsl_shape_text(d, &xd.shape));
    int64_t c = xd.shape.dim[xd.shape.rank - 1], count = 0;
    double eps = 1e-5;
    bool center = true, scale = true, trainable = true;
    TRY(args_float(d, lc->e, a, "epsilon", 0, 1e30, &eps));
    TRY(args_bool(d, lc->e, a, "center", &center));
    TRY(args_bool(d, lc->e, a, "scale", &scale));
    TRY(args_bool(d, lc->e, a, "trainable", &trainable));
    static const dsl_param_spec specs[2] = {
        {.key = "gamma", .suffix = "gamma", .init = {.kind = SLIM_INIT_CONSTANT, .value = 1}},
        {.key = "beta", .suffix = "beta", .init = {.kind = SLIM_INIT_ZEROS}},
    };
    bool want[2] = {scale, center};
    slim_tid t[2];
    for (int i = 0; i < 2; i++) {
        dsl_args po;
        TRY(args_sub(d, lc->e, a, specs[i].key, specs[i].key, &po));
        if (!want[i])
            TRY(dsl_const_vec(d, i == 0 ? 1.0 : 0.0, c, lc->at, &t[i]));
        else
            TRY(dsl_make_param(d, lc->e, po.at ? &po : NULL, lc->name, &specs[i], 1, &c, trainable,
                               lc->at, &t[i], &count));
    }
    slim_attrs *attrs = slim_attrs_new();
    if (!attrs)
        return dsl_fail(d->err, lc->at, SLIM_ENOMEM, "out of memory");
    slim_attrs_set_float(attrs, "epsilon", eps);
    slim_tid in[3] = {lc->in[0], t[0], t[1]}, y, z;
    slim_status st = dsl_add_node(d, lc->at, "layer_norm", lc->name, in, 3, attrs, &y);
    slim_attrs_free(attrs);
    if (st != SLIM_OK)
        return st;
    TRY(dsl_activation(d, lc->e, a, NULL, lc->name, y, &z));
    static const char *const keys[] = {"name",  "inputs",  "repeat",     "stack",
                                       "if",    "epsilon", "center",     "scale",
                                       "gamma", "beta",    "activation", "trainable"};
    TRY(args_check_used(d, a, keys, 12));
    *out = z;
    return dsl_record_layer(d, lc->name, "layer_norm", lc->in, lc->n_in, z, count, 0, lc->at);
}

/* variable: one parameter of a given shape, as a layer's output (an
 * imported model's constants and scales; its name is the parameter's). */
static slim_status build_var(dsl *d, dsl_layer_ctx *lc, slim_tid *out)
{
    dsl_args *a = lc->args;
    dval v;
    const dnode *at;
    TRY(args_value(d, lc->e, a, "shape", &v, &at));
    if (!at)
        return args_missing(d, a, "shape",
                            "found variable without shape, expected shape: [d0, d1, ...]");
    if (v.kind != DV_LIST || v.n < 1 || v.n > SLIM_MAX_DIMS)
        return dsl_fail(d->err, at, SLIM_EINVAL,
                        "found %s for shape of variable, expected a list of 1 to %d dims",
                        dval_str(d->arena, &v), SLIM_MAX_DIMS);
    int64_t dim[SLIM_MAX_DIMS];
    for (int i = 0; i < v.n; i++) {
        if (v.items[i].kind != DV_INT || v.items[i].i < 1 || v.items[i].i > 1 << 30)
            return dsl_fail(d->err, v.items[i].at ? v.items[i].at : at, SLIM_EINVAL,
                            "found %s in shape of variable, expected dims in [1, 2^30]",
                            dval_str(d->arena, &v.items[i]));
        dim[i] = v.items[i].i;
    }
    bool trainable = true;
    TRY(args_bool(d, lc->e, a, "trainable", &trainable));
    /* the parameter's options are the layer's own keys (init, lr_mult, decay_mult) */
    dsl_args opts = *a;
    opts.kind = "variable";
    args_mark_used(&opts, "shape");
    const char *slash = strrchr(lc->name, '/');
    const char *scope = slash ? dsl_strndup(d->arena, lc->name, (size_t)(slash - lc->name)) : "";
    dsl_param_spec ps = {.key = "variable",
                         .suffix = slash ? slash + 1 : lc->name,
                         .init = {.kind = SLIM_INIT_ZEROS}};
    if (!scope)
        return dsl_fail(d->err, lc->at, SLIM_ENOMEM, "out of memory");
    int64_t count = 0;
    static const char *const own[] = {"name", "inputs", "repeat",   "stack",
                                      "if",   "shape",  "trainable"};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++)
        args_mark_used(&opts, own[i]);
    TRY(dsl_make_param(d, lc->e, &opts, scope, &ps, v.n, dim, trainable, lc->at, out, &count));
    static const char *const keys[] = {"name",  "inputs", "repeat",    "stack",   "if",
                                       "shape", "init",   "trainable", "lr_mult", "decay_mult"};
    TRY(args_check_used(d, a, keys, 10));
    return dsl_record_layer(d, lc->name, "variable", lc->in, 0, *out, count, 0, lc->at);
}

static slim_status build_op(dsl *d, const char *op, dsl_layer_ctx *lc, slim_tid *out)
{
    const slim_op_desc *desc = slim_registry_find(d->reg, op);
    if (!desc)
        return dsl_fail(d->err, lc->at, SLIM_ENOTFOUND, "unknown op '%s'", op);
    if (lc->n_in < desc->min_inputs || lc->n_in > desc->max_inputs) {
        if (desc->min_inputs == desc->max_inputs)
            return dsl_fail(d->err, lc->at, SLIM_EINVAL,
                            "found %d input%s for op %s, expected %d (inputs: [a, b, ...])",
                            lc->n_in, lc->n_in == 1 ? "" : "s", op, desc->min_inputs);
        return dsl_fail(d->err, lc->at, SLIM_EINVAL,
                        "found %d input%s for op %s, expected %d to %d (inputs: [a, b, ...])",
                        lc->n_in, lc->n_in == 1 ? "" : "s", op, desc->min_inputs, desc->max_inputs);
    }
    if (desc->flags & (SLIM_OP_UPDATE | SLIM_OP_LOSS))
        return dsl_fail(d->err, lc->at, SLIM_EINVAL,
                        "found op %s in layers, expected a layer op: losses and optimizer "
                        "updates are added by the trainer",
                        op);
    slim_attrs *attrs = slim_attrs_new();
    if (!attrs)
        return dsl_fail(d->err, lc->at, SLIM_ENOMEM, "out of memory");
    slim_status st = dsl_op_attrs(d, lc->e, desc, lc->args, attrs, reserved, 5);
    if (st == SLIM_OK)
        st = dsl_add_node(d, lc->at, op, lc->name, lc->in, lc->n_in, attrs, out);
    slim_attrs_free(attrs);
    if (st == SLIM_OK)
        st = dsl_record_layer(d, lc->name, op, lc->in, lc->n_in, *out, 0, 0, lc->at);
    return st;
}

slim_status dsl_layer_build(dsl *d, const char *kind, dsl_layer_ctx *lc, slim_tid *out)
{
    if (!strcmp(kind, "conv2d"))
        return build_conv(d, lc, false, out);
    if (!strcmp(kind, "separable_conv2d"))
        return build_conv(d, lc, true, out);
    if (!strcmp(kind, "fully_connected"))
        return build_fc(d, lc, out);
    if (!strcmp(kind, "batch_norm"))
        return build_bn(d, lc, out);
    if (!strcmp(kind, "layer_norm"))
        return build_ln(d, lc, out);
    if (!strcmp(kind, "variable"))
        return build_var(d, lc, out);
    return build_op(d, kind, lc, out);
}
