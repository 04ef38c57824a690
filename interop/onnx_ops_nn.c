/*
 * interop/onnx_ops_nn.c - ONNX's neural-network ops as slim layers: Conv,
 * pools, BatchNormalization, LayerNormalization, LRN, Gemm and MatMul.
 *
 * Spatial ops take their data channels-last; 1-D ones run as 2-D ones of
 * height 1. ONNX's pads [x1_begin, x2_begin, x1_end, x2_end] become slim's
 * [top, bottom, left, right]; auto_pad SAME_UPPER / SAME_LOWER are resolved
 * to explicit pads with ONNX's formula (out = ceil(in / stride); the odd
 * pixel goes at the end for UPPER, at the beginning for LOWER).
 *
 * Weights known before the run become the parameters of conv2d,
 * fully_connected, batch_norm and layer_norm layers, converted to slim's
 * layouts here: Conv (O, C/g, KH, KW) -> HWIO, Gemm's B -> (K, O) with alpha
 * folded in and beta * C as the biases, and the rows of a Gemm after a
 * Flatten of channels-last (N,C,H,W) permuted from C-major to NHWC order.
 */
#include "interop/onnx_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 2-D geometry of a conv or pool: (h, w) pairs; pads t, b, l, r. */
typedef struct geo {
    int64_t k[2], s[2], d[2], pads[4];
} geo;

static slim_status geometry(ox_builder *b, const Onnx__NodeProto *n, const int64_t *xd, int xr,
                            const int64_t *kernel, geo *g)
{
    int nsp = xr - 2;
    int64_t k[2], s[2] = {1, 1}, d[2] = {1, 1}, p[4] = {0, 0, 0, 0};
    if (kernel) {
        memcpy(k, kernel, (size_t)nsp * sizeof(int64_t));
    } else if (slim__ox_attr_ints(n, "kernel_shape", k, 2) != nsp) {
        return ox_fail(b, SLIM_EINVAL, "kernel_shape must have %d values", nsp);
    }
    int cnt = slim__ox_attr_ints(n, "strides", s, 2);
    if (cnt >= 0 && cnt != nsp)
        return ox_fail(b, SLIM_EINVAL, "strides must have %d values", nsp);
    cnt = slim__ox_attr_ints(n, "dilations", d, 2);
    if (cnt >= 0 && cnt != nsp)
        return ox_fail(b, SLIM_EINVAL, "dilations must have %d values", nsp);
    cnt = slim__ox_attr_ints(n, "pads", p, 4);
    if (cnt >= 0 && cnt != 2 * nsp)
        return ox_fail(b, SLIM_EINVAL, "pads must have %d values", 2 * nsp);
    for (int j = 0; j < nsp; j++) {
        if (k[j] < 1 || k[j] > 1 << 20 || s[j] < 1 || s[j] > 1 << 20 || d[j] < 1 || d[j] > 1 << 20)
            return ox_fail(b, SLIM_EINVAL, "kernel, strides and dilations must be in [1, 2^20]");
    }
    for (int j = 0; j < 2 * nsp; j++)
        if (p[j] < 0 || p[j] > 1 << 20)
            return ox_unsup(b, "pads must be in [0, 2^20]");
    char buf[32];
    const char *ap = slim__ox_attr_str(n, "auto_pad", "NOTSET", buf, sizeof(buf));
    bool upper = strcmp(ap, "SAME_UPPER") == 0, lower = strcmp(ap, "SAME_LOWER") == 0;
    if (strcmp(ap, "VALID") == 0) {
        memset(p, 0, sizeof(p));
    } else if (upper || lower) {
        for (int j = 0; j < nsp; j++) {
            int64_t in = xd[2 + j], out = (in + s[j] - 1) / s[j];
            int64_t total = (out - 1) * s[j] + (k[j] - 1) * d[j] + 1 - in;
            if (total < 0)
                total = 0;
            p[j] = upper ? total / 2 : total - total / 2;
            p[nsp + j] = total - p[j];
        }
    } else if (strcmp(ap, "NOTSET") != 0) {
        return ox_fail(b, SLIM_EINVAL, "unknown auto_pad '%s'", ap);
    }
    if (nsp == 1)
        *g = (geo){{1, k[0]}, {1, s[0]}, {1, d[0]}, {0, 0, p[0], p[1]}};
    else
        *g = (geo){{k[0], k[1]}, {s[0], s[1]}, {d[0], d[1]}, {p[0], p[2], p[1], p[3]}};
    return SLIM_OK;
}

/* The data input of a spatial op: rank 3 or 4, channels-last. */
static slim_status spatial_input(ox_builder *b, const Onnx__NodeProto *n, ox_value **v, slim_tid *x,
                                 int *xl)
{
    *v = ox_arg(b, n, 0);
    if (!*v)
        return b->err->code;
    int r = (*v)->rank;
    if (r != 3 && r != 4)
        return ox_unsup(b, "a rank-%d input: slim's spatial ops are 1-D/2-D (rank 3 or 4)", r);
    int vi = (int)(*v - b->vals);
    ox_layout cl = ox_cl(r);
    slim_status st = ox_value_in(b, *v, &cl, x, xl);
    *v = &b->vals[vi];
    return st;
}

/* Define a conv's or pool's output (slim's (N,OH,OW,C)) as ONNX value name,
 * channels-last of rank xr. */
static slim_status def_spatial(ox_builder *b, const char *name, slim_tid y, int layer, int xr)
{
    slim_tensor_desc yd;
    slim_graph_tensor_info(b->g, y, &yd);
    int64_t d[4] = {yd.shape.dim[0], yd.shape.dim[3], xr == 4 ? yd.shape.dim[1] : yd.shape.dim[2],
                    yd.shape.dim[2]};
    ox_layout cl = ox_cl(xr);
    return ox_def(b, name, y, layer, &cl, xr, d);
}

/* A layer name for weights: from the first of these values with a real name. */
static const char *weights_name(ox_builder *b, const ox_value *const *vs, int n)
{
    for (int i = 0; i < n; i++) {
        const char *nm = vs[i] && vs[i]->initializer ? ox_value_base(b, vs[i]->name) : NULL;
        if (nm)
            return ox_unique(b, nm);
    }
    return ox_node_name(b, "");
}

/* f32 data of a host value (or a failure naming it). */
static slim_status host_f32(ox_builder *b, const ox_value *v, const char *what)
{
    if (v->kind != OX_HOST)
        return ox_unsup(b, "%s '%s' is computed by the graph; slim needs it before the run", what,
                        v->name);
    if (!v->host.f)
        return ox_unsup(b, "%s '%s' is %s data", what, v->name, slim__ox_elem_name(v->host.elem));
    return SLIM_OK;
}

/* Whether v holds f everywhere and is no parameter: a constant with an
 * exporter's made-up name, or one of slim's (slim_const/ones_64, what slim's
 * export writes for a batch norm without scale or center). */
static bool constant_fill(ox_builder *b, const ox_value *v, float f)
{
    if (v->kind != OX_HOST || !v->host.f ||
        (strncmp(v->name, "slim_const/", 11) != 0 && ox_value_base(b, v->name) != NULL))
        return false;
    for (int64_t i = 0; i < v->host.numel; i++)
        if (v->host.f[i] != f)
            return false;
    return true;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = s ? strlen(s) : 0, k = strlen(suffix);
    return n > k && !strcmp(s + n - k, suffix);
}

/* Whether node n, a depthwise Conv of slim's export with weights dw_name
 * (SCOPE/depthwise_weights), is the depthwise half of a separable_conv2d:
 * its only reader is a 1x1 Conv (stride 1, no padding, one group) of
 * weights SCOPE/pointwise_weights. */
static bool pointwise_follows(ox_builder *b, const Onnx__NodeProto *n, const char *dw_name)
{
    int k = ox_sole_consumer(b, n->output[0]);
    if (k < 0)
        return false;
    const Onnx__NodeProto *c = b->model->graph->node[k];
    size_t pre = strlen(dw_name) - strlen("depthwise_weights");
    const char *wn = c->n_input >= 2 ? c->input[1] : NULL;
    bool onnx_domain = !c->domain || !c->domain[0] || !strcmp(c->domain, "ai.onnx");
    if (!onnx_domain || strcmp(c->op_type, "Conv") != 0 || !c->input[0] ||
        strcmp(c->input[0], n->output[0]) || !wn || strncmp(wn, dw_name, pre) != 0 ||
        strcmp(wn + pre, "pointwise_weights") != 0)
        return false;
    const ox_value *w = ox_find(b, wn);
    if (!w || !w->initializer || w->kind != OX_HOST || w->host.rank != 4 || w->host.dim[2] != 1 ||
        w->host.dim[3] != 1 || slim__ox_attr_int(c, "group", 1) != 1 ||
        slim__ox_attr(c, "auto_pad"))
        return false;
    int64_t v[4];
    int m = slim__ox_attr_ints(c, "strides", v, 4);
    for (int i = 0; i < m && m <= 4; i++)
        if (v[i] != 1)
            return false;
    m = slim__ox_attr_ints(c, "dilations", v, 4);
    for (int i = 0; i < m && m <= 4; i++)
        if (v[i] != 1)
            return false;
    m = slim__ox_attr_ints(c, "pads", v, 4);
    for (int i = 0; i < m && m <= 4; i++)
        if (v[i] != 0)
            return false;
    return m <= 4;
}

slim_status ox_map_conv(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_value *xv, *w, *bias = NULL;
    slim_tid x, y;
    int xl;
    slim_status st = spatial_input(b, n, &xv, &x, &xl);
    if (st != SLIM_OK)
        return st;
    int xr = xv->rank;
    int64_t xd[OX_MAXD];
    memcpy(xd, xv->dim, sizeof xd);
    if (!(w = ox_arg(b, n, 1)) || (st = host_f32(b, w, "the weight")) != SLIM_OK)
        return w ? st : b->err->code;
    const slim__ox_tensor *wt = &w->host;
    if (wt->rank != xr)
        return ox_fail(b, SLIM_EINVAL, "weights of rank %d for a rank-%d input", wt->rank, xr);
    if (slim__ox_has_input(n, 2)) {
        if (!(bias = ox_arg(b, n, 2)) || (st = host_f32(b, bias, "the bias")) != SLIM_OK)
            return bias ? st : b->err->code;
        if (bias->host.numel != wt->dim[0])
            return ox_fail(b, SLIM_ESHAPE, "a bias of %lld values for %lld output channels",
                           (long long)bias->host.numel, (long long)wt->dim[0]);
    }
    geo g;
    if ((st = geometry(b, n, xd, xr, wt->dim + 2, &g)) != SLIM_OK)
        return st;
    int64_t groups = slim__ox_attr_int(n, "group", 1);
    int64_t O = wt->dim[0], CG = wt->dim[1], S = g.k[0] * g.k[1];
    if (groups < 1 || CG * groups != xd[1] || O % groups != 0)
        return ox_fail(b, SLIM_ESHAPE,
                       "weights (%lld, %lld, ...) with group %lld for %lld input channels",
                       (long long)O, (long long)CG, (long long)groups, (long long)xd[1]);
    /* ONNX (O, C/g, KH, KW) -> slim HWIO (KH, KW, C/g, O) */
    float *hwio = malloc((size_t)(wt->numel ? wt->numel : 1) * sizeof(float));
    if (!hwio)
        return ox_oom(b);
    for (int64_t o = 0; o < O; o++)
        for (int64_t c = 0; c < CG; c++)
            for (int64_t s = 0; s < S; s++)
                hwio[(s * CG + c) * O + o] = wt->f[(o * CG + c) * S + s];
    /* slim's separable_conv2d, by its parameters' names (see ox_layer.sep) */
    int sep = SEP_NONE, dw = -1;
    const char *name = NULL, *scope = NULL;
    bool dw_of = false;
    if (b->o->model && xr == 4 && w->initializer && CG == 1 && groups == xd[1] &&
        ends_with(w->name, "/depthwise_weights")) {
        sep = SEP_DW;
        const char *base =
            !bias && pointwise_follows(b, n, w->name) ? ox_value_base(b, w->name) : NULL;
        dw_of = base != NULL;
        if (dw_of) { /* the layer SCOPE/depthwise; SCOPE is the 1x1 half's */
            scope = ox_unique(b, base);
            const char *dn = scope ? ox_printf(b, "%s/depthwise", scope) : NULL;
            name = dn ? ox_unique(b, dn) : NULL;
            if (!name) {
                free(hwio);
                return ox_oom(b);
            }
        }
    } else if (b->o->model && xr == 4 && xl >= 0 && xl < b->n_layers &&
               b->layers[xl].kind == OXL_CONV && b->layers[xl].dw_of &&
               ends_with(w->name, "/pointwise_weights")) {
        sep = SEP_PW; /* pointwise_follows() checked it */
        dw = xl;
        name = b->layers[xl].scope;
    }
    const ox_value *names[2] = {w, bias};
    ox_layer *l = ox_layer_new(b, OXL_CONV, "conv2d", name ? name : weights_name(b, names, 2));
    if (!l) {
        free(hwio);
        return ox_oom(b);
    }
    l->sep = sep;
    l->scope = scope;
    l->dw = dw;
    l->dw_of = dw_of;
    int li = b->n_layers - 1;
    memcpy(l->k, g.k, sizeof g.k);
    memcpy(l->s, g.s, sizeof g.s);
    memcpy(l->d, g.d, sizeof g.d);
    memcpy(l->pads, g.pads, sizeof g.pads);
    l->groups = groups;
    l->cout = O;
    l->bias = bias != NULL;
    l->n_in = 1;
    l->in[0] = xl;
    const float *ws[2] = {hwio, bias ? bias->host.f : NULL};
    st = ox_layer_params(b, l, x, ws, &y);
    free(hwio);
    if (st != SLIM_OK)
        return st;
    return def_spatial(b, n->output[0], y, li, xr);
}

static slim_status pool(ox_builder *b, const Onnx__NodeProto *n, bool max)
{
    slim_status st =
        ox_no_outputs_from(b, n, 1, "the Indices output: slim's max_pool has no argmax");
    if (st != SLIM_OK)
        return st;
    ox_value *xv;
    slim_tid x, y;
    int xl, yl;
    if ((st = spatial_input(b, n, &xv, &x, &xl)) != SLIM_OK)
        return st;
    int xr = xv->rank;
    geo g;
    if ((st = geometry(b, n, xv->dim, xr, NULL, &g)) != SLIM_OK)
        return st;
    if (!max && (g.d[0] != 1 || g.d[1] != 1))
        return ox_unsup(b, "dilated average pooling");
    if (slim__ox_attr_int(n, "storage_order", 0) != 0)
        return ox_unsup(b, "storage_order 1");
    ox_layer *l = ox_layer_new(b, OXL_OP, max ? "max_pool" : "avg_pool", ox_node_name(b, NULL));
    if (!l)
        return ox_oom(b);
    l->n_in = 1;
    l->in[0] = xl;
    ox_kv_ints(b, l, "ksize", g.k, 2);
    ox_kv_ints(b, l, "strides", g.s, 2);
    ox_kv_set(b, l, "padding", "EXPLICIT");
    ox_kv_ints(b, l, "pads", g.pads, 4);
    if (max && (g.d[0] != 1 || g.d[1] != 1))
        ox_kv_ints(b, l, "dilations", g.d, 2);
    if (slim__ox_attr_int(n, "ceil_mode", 0))
        ox_kv_set(b, l, "ceil_mode", "true");
    if (!max && slim__ox_attr_int(n, "count_include_pad", 0))
        ox_kv_set(b, l, "count_include_pad", "true");
    yl = b->n_layers - 1;
    if ((st = ox_layer_op(b, l, &x, &y)) != SLIM_OK)
        return st;
    return def_spatial(b, n->output[0], y, yl, xr);
}

slim_status ox_map_maxpool(ox_builder *b, const Onnx__NodeProto *n)
{
    return pool(b, n, true);
}

slim_status ox_map_averagepool(ox_builder *b, const Onnx__NodeProto *n)
{
    return pool(b, n, false);
}

slim_status ox_map_globalaveragepool(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_value *xv;
    slim_tid x, y;
    int xl, yl;
    slim_status st = spatial_input(b, n, &xv, &x, &xl);
    if (st != SLIM_OK)
        return st;
    int xr = xv->rank;
    ox_kv kv = {"keep_dims", "true"};
    if ((st = ox_op(b, "global_avg_pool", NULL, &x, &xl, 1, &kv, 1, &y, &yl)) != SLIM_OK)
        return st;
    return def_spatial(b, n->output[0], y, yl, xr);
}

slim_status ox_map_batchnorm(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_value *xv = ox_arg(b, n, 0);
    if (!xv)
        return b->err->code;
    int xr = xv->rank;
    if (xr != 2 && xr != 3 && xr != 4)
        return ox_unsup(b, "a rank-%d input: slim's batch_norm takes (N,C) or 1-D/2-D images", xr);
    if (b->opset < 9 && slim__ox_attr_int(n, "spatial", 1) == 0)
        return ox_unsup(b, "spatial=0 (per-activation statistics): slim normalizes per channel");
    bool training;
    if (b->opset >= 14)
        training = slim__ox_attr_int(n, "training_mode", 0) != 0;
    else if (b->opset < 7)
        training = slim__ox_attr_int(n, "is_test", 0) == 0;
    else
        training = slim__ox_has_output(n, 1) || slim__ox_has_output(n, 2);
    slim_status st = ox_no_outputs_from(b, n, 3, "saved mean/variance outputs (opset < 14)");
    if (st != SLIM_OK)
        return st;
    if (!training && (st = ox_no_outputs_from(
                          b, n, 1, "running statistics outputs in inference mode")) != SLIM_OK)
        return st;
    if (training && b->o->model)
        return ox_unsup(b, "a training-mode batch norm in a model (export in inference mode)");
    int xvi = (int)(xv - b->vals);
    ox_value *p[4];
    int64_t C = xv->dim[1];
    for (int i = 0; i < 4; i++) {
        if (!(p[i] = ox_arg(b, n, (size_t)i + 1)))
            return b->err->code;
        static const char *const what[4] = {"the scale", "the bias", "the mean", "the variance"};
        if ((st = host_f32(b, p[i], what[i])) != SLIM_OK)
            return st;
        if (p[i]->host.numel != C)
            return ox_fail(b, SLIM_ESHAPE, "%s has %lld values for %lld channels", what[i],
                           (long long)p[i]->host.numel, (long long)C);
    }
    ox_layout l = xr == 2 ? ox_plain(2) : ox_cl(xr);
    slim_tid x, y;
    int xl;
    if ((st = ox_value_in(b, &b->vals[xvi], &l, &x, &xl)) != SLIM_OK)
        return st;
    /* named after its parameters, not after a constant standing for an absent one */
    bool no_scale = b->o->model && constant_fill(b, p[0], 1.0f);
    bool no_center = b->o->model && constant_fill(b, p[1], 0.0f);
    const ox_value *names[4] = {no_scale ? NULL : p[0], no_center ? NULL : p[1], p[2], p[3]};
    ox_layer *ly = ox_layer_new(b, OXL_BN, "batch_norm", weights_name(b, names, 4));
    if (!ly)
        return ox_oom(b);
    ly->no_scale = no_scale;
    ly->no_center = no_center;
    int li = b->n_layers - 1;
    ly->n_in = 1;
    ly->in[0] = xl;
    ly->eps = slim__ox_attr_float(n, "epsilon", 1e-5f);
    /* ONNX: running = momentum * running + (1 - momentum) * batch (slim's
     * decay; PyTorch's momentum m exports as 1 - m) */
    ly->decay = slim__ox_attr_float(n, "momentum", 0.9f);
    if (ly->decay < 0 || ly->decay > 1)
        return ox_fail(b, SLIM_EINVAL, "momentum %g outside [0, 1]", ly->decay);
    ly->train_bn = training;
    if (training)
        b->training = true;
    const float *w[4] = {p[0]->host.f, p[1]->host.f, p[2]->host.f, p[3]->host.f};
    if ((st = ox_layer_params(b, ly, x, w, &y)) != SLIM_OK)
        return st;
    xv = &b->vals[xvi];
    if ((st = ox_def(b, n->output[0], y, li, &l, xr, xv->dim)) != SLIM_OK)
        return st;
    for (int i = 1; i <= 2 && training; i++) {
        if (!slim__ox_has_output(n, (size_t)i))
            continue;
        int64_t d = C;
        ox_layout pl = ox_plain(1);
        if ((st = ox_def(b, n->output[i], -1, -1, &pl, 1, &d)) != SLIM_OK)
            return st;
        ox_value *sv = &b->vals[b->n_vals - 1];
        sv->kind = OX_STATE;
        sv->param = ox_printf(b, "%s/%s/%s", b->root, b->layers[li].name,
                              i == 1 ? "moving_mean" : "moving_variance");
    }
    return SLIM_OK;
}

/* A layer_norm layer over x's last ONNX axis (which becomes slim's last). */
slim_status ox_layer_norm(ox_builder *b, ox_value *x, const slim__ox_tensor *gamma,
                          const char *gamma_name, const slim__ox_tensor *beta,
                          const char *beta_name, double eps, const char *out_name)
{
    int xi = (int)(x - b->vals), r = x->rank;
    int64_t C = x->dim[r - 1];
    if (gamma && gamma->numel != C)
        return ox_fail(b, SLIM_ESHAPE, "a scale of %lld values for %lld features",
                       (long long)gamma->numel, (long long)C);
    if (beta && beta->numel != C)
        return ox_fail(b, SLIM_ESHAPE, "a bias of %lld values for %lld features",
                       (long long)beta->numel, (long long)C);
    /* copies: the value table may move while the layer is built */
    float *w0 = malloc((size_t)C * sizeof(float)), *w1 = malloc((size_t)C * sizeof(float));
    if (!w0 || !w1) {
        free(w0);
        free(w1);
        return ox_oom(b);
    }
    for (int64_t i = 0; i < C; i++) {
        w0[i] = gamma ? gamma->f[i] : 1.0f;
        w1[i] = beta ? beta->f[i] : 0.0f;
    }
    ox_layout l = x->kind == OX_COMPUTED ? x->lay : ox_plain(r);
    if (l.rank == 0 || l.perm[l.rank - 1] != r - 1)
        l = ox_plain(r);
    slim_tid xt, y;
    int xl;
    const char *nm = NULL;
    const char *cands[2] = {gamma_name, beta_name};
    for (int i = 0; i < 2 && !nm; i++)
        nm = cands[i] ? ox_value_base(b, cands[i]) : NULL;
    nm = nm ? ox_unique(b, nm) : ox_node_name(b, "");
    slim_status st = ox_value_in(b, &b->vals[xi], &l, &xt, &xl);
    ox_layer *ly = st == SLIM_OK ? ox_layer_new(b, OXL_LN, "layer_norm", nm) : NULL;
    if (st == SLIM_OK && !ly)
        st = ox_oom(b);
    int li = b->n_layers - 1;
    if (st == SLIM_OK) {
        ly->n_in = 1;
        ly->in[0] = xl;
        ly->eps = eps;
        const float *w[2] = {w0, w1};
        st = ox_layer_params(b, ly, xt, w, &y);
    }
    free(w0);
    free(w1);
    if (st != SLIM_OK)
        return st;
    x = &b->vals[xi];
    return ox_def(b, out_name, y, li, &l, r, x->dim);
}

/* LayerNormalization over the axes from `axis` on: rows (d0..d_axis-1) of
 * columns (the rest), normalized by a layer_norm over the last axis. */
static slim_status layernorm_flat(ox_builder *b, const Onnx__NodeProto *n, int axis)
{
    ox_value *x = ox_find(b, n->input[0]);
    int r = x->rank, xi = (int)(x - b->vals);
    int64_t rc[2] = {1, 1}, d[OX_MAXD];
    memcpy(d, x->dim, sizeof d);
    for (int i = 0; i < r; i++)
        rc[i < axis ? 0 : 1] *= d[i];
    ox_value *g = ox_find(b, n->input[1]);
    ox_value *be = slim__ox_has_input(n, 2) ? ox_find(b, n->input[2]) : NULL;
    if (g->host.numel != rc[1] || (be && (!be->host.f || be->host.numel != rc[1])))
        return ox_fail(b, SLIM_ESHAPE, "scale/bias of %lld values for %lld normalized elements",
                       (long long)g->host.numel, (long long)rc[1]);
    if (r > SLIM_MAX_DIMS)
        return ox_unsup(b, "rank %d", r);
    ox_layout pl = ox_plain(r), p2 = ox_plain(2);
    slim_tid t;
    int tl;
    slim_status st = ox_value_in(b, x, &pl, &t, &tl);
    if (st == SLIM_OK)
        st = ox_reshape(b, t, tl, rc, 2, &t, &tl);
    const char *tmp = ox_printf(b, "%s@rows", b->vals[xi].name);
    if (st == SLIM_OK)
        st = tmp ? ox_def(b, tmp, t, tl, &p2, 2, rc) : ox_oom(b);
    if (st != SLIM_OK)
        return st;
    const char *yname = ox_printf(b, "%s@rows", n->output[0]);
    g = ox_find(b, n->input[1]);
    be = slim__ox_has_input(n, 2) ? ox_find(b, n->input[2]) : NULL;
    if (!yname ||
        (st = ox_layer_norm(b, &b->vals[b->n_vals - 1], &g->host, g->initializer ? g->name : NULL,
                            be ? &be->host : NULL, be && be->initializer ? be->name : NULL,
                            slim__ox_attr_float(n, "epsilon", 1e-5f), yname)) != SLIM_OK)
        return yname ? st : ox_oom(b);
    ox_value *y = &b->vals[b->n_vals - 1];
    int yl = y->layer;
    if ((st = ox_reshape(b, y->tid, yl, d, r, &t, &tl)) != SLIM_OK ||
        (st = ox_def(b, n->output[0], t, tl, &pl, r, d)) != SLIM_OK)
        return st;
    int64_t md[OX_MAXD];
    for (int i = 0; i < r; i++)
        md[i] = i < axis ? d[i] : 1;
    for (int i = 1; i <= 2; i++) {
        if (!slim__ox_has_output(n, (size_t)i))
            continue;
        slim_tid s;
        const char *nm = ox_printf(b, "%s/%s:%d", b->root, b->layers[yl].name, i);
        if (!nm || slim_graph_find(b->g, nm, &s) != SLIM_OK)
            return ox_fail(b, SLIM_EINTERNAL, "no output %d of the layer_norm node", i);
        if ((st = ox_reshape(b, s, yl, md, r, &s, &tl)) != SLIM_OK ||
            (st = ox_def(b, n->output[i], s, tl, &pl, r, md)) != SLIM_OK)
            return st;
    }
    return SLIM_OK;
}

slim_status ox_map_layernorm(ox_builder *b, const Onnx__NodeProto *n)
{
    slim_status st = b->o->model ? ox_no_outputs_from(b, n, 1,
                                                      "mean and inverse deviation "
                                                      "outputs in a model to import")
                                 : ox_no_outputs_from(b, n, 3, "more than three outputs");
    if (st != SLIM_OK)
        return st;
    ox_value *x = ox_arg(b, n, 0), *g = ox_arg(b, n, 1), *be = NULL;
    if (!x || !g)
        return b->err->code;
    int r = x->rank;
    int axis = ox_norm_axis(slim__ox_attr_int(n, "axis", -1), r);
    if (axis < 0)
        return ox_fail(b, SLIM_EINVAL, "axis out of range for rank %d", r);
    if ((st = host_f32(b, g, "the scale")) != SLIM_OK)
        return st;
    if (axis != r - 1)
        return layernorm_flat(b, n, axis);
    if (slim__ox_has_input(n, 2)) {
        if (!(be = ox_arg(b, n, 2)) || (st = host_f32(b, be, "the bias")) != SLIM_OK)
            return be ? st : b->err->code;
    }
    if (slim__ox_attr_int(n, "stash_type", 1) != 1)
        return ox_unsup(b, "stash_type other than float");
    x = ox_find(b, n->input[0]);
    g = ox_find(b, n->input[1]);
    be = be ? ox_find(b, n->input[2]) : NULL;
    if ((st = ox_layer_norm(b, x, &g->host, g->initializer ? g->name : NULL, be ? &be->host : NULL,
                            be && be->initializer ? be->name : NULL,
                            slim__ox_attr_float(n, "epsilon", 1e-5f), n->output[0])) != SLIM_OK)
        return st;
    /* Mean and InvStdDev: the op's outputs 1 and 2, (..., 1) */
    ox_value *y = &b->vals[b->n_vals - 1];
    int yl = y->layer, yr = y->rank;
    ox_layout lay = y->lay;
    int64_t d[OX_MAXD];
    memcpy(d, y->dim, sizeof d);
    d[yr - 1] = 1;
    for (int i = 1; i <= 2; i++) {
        if (!slim__ox_has_output(n, (size_t)i))
            continue;
        slim_tid t;
        const char *nm = ox_printf(b, "%s/%s:%d", b->root, b->layers[yl].name, i);
        if (!nm || slim_graph_find(b->g, nm, &t) != SLIM_OK)
            return ox_fail(b, SLIM_EINTERNAL, "no output %d of the layer_norm node", i);
        if ((st = ox_def(b, n->output[i], t, yl, &lay, yr, d)) != SLIM_OK)
            return st;
    }
    return SLIM_OK;
}

slim_status ox_map_lrn(ox_builder *b, const Onnx__NodeProto *n)
{
    int64_t size = slim__ox_attr_int(n, "size", 0);
    if (size <= 0 || size > 1 << 20)
        return ox_fail(b, SLIM_EINVAL, "LRN needs a size in [1, 2^20]");
    if (size % 2 == 0)
        return ox_unsup(b,
                        "size %lld is even: ONNX's window is then asymmetric, slim's "
                        "depth_radius symmetric",
                        (long long)size);
    ox_value *xv;
    slim_tid x, y;
    int xl, yl;
    slim_status st = spatial_input(b, n, &xv, &x, &xl);
    if (st != SLIM_OK)
        return st;
    int xvi = (int)(xv - b->vals);
    /* ONNX: x / (bias + alpha/size * sum)^beta over [c - (size-1)/2, c + (size-1)/2] */
    ox_kv kv[4] = {
        {"depth_radius", ox_printf(b, "%lld", (long long)(size - 1) / 2)},
        {"bias", ox_float(b, (double)slim__ox_attr_float(n, "bias", 1.0f))},
        {"alpha", ox_float(b, (double)slim__ox_attr_float(n, "alpha", 1e-4f) / (double)size)},
        {"beta", ox_float(b, (double)slim__ox_attr_float(n, "beta", 0.75f))}};
    if ((st = ox_op(b, "lrn", NULL, &x, &xl, 1, kv, 4, &y, &yl)) != SLIM_OK)
        return st;
    xv = &b->vals[xvi];
    ox_layout cl = ox_cl(xv->rank);
    return ox_def(b, n->output[0], y, yl, &cl, xv->rank, xv->dim);
}

/* A fully_connected layer: x (computed, slim (N, ...) flattening to K) times
 * w (K, O) [+ bias]; out_name gets (N, O). */
static slim_status fc_layer(ox_builder *b, slim_tid x, int xl, const float *w, const float *bias,
                            int64_t O, const ox_value *const *names, int n_names, slim_tid *y,
                            int *yl)
{
    ox_layer *l = ox_layer_new(b, OXL_FC, "fully_connected", weights_name(b, names, n_names));
    if (!l)
        return ox_oom(b);
    *yl = b->n_layers - 1;
    l->n_in = 1;
    l->in[0] = xl;
    l->cout = O;
    l->bias = bias != NULL;
    const float *ws[2] = {w, bias};
    return ox_layer_params(b, l, x, ws, y);
}

/* A bias after a product: Add(y, c) with c a constant of O values (the
 * exporter's MatMul + Add), folded into the layer. Returns the Add node or -1. */
static int bias_after(ox_builder *b, const char *y_name, int64_t O, const ox_value **c)
{
    int k = ox_sole_consumer(b, y_name);
    if (k < 0)
        return -1;
    const Onnx__NodeProto *a = b->model->graph->node[k];
    if (strcmp(a->op_type, "Add") != 0 || a->n_input != 2 || !slim__ox_has_output(a, 0))
        return -1;
    int other = strcmp(a->input[0], y_name) == 0 ? 1 : 0;
    if (strcmp(a->input[1 - other], y_name) != 0)
        return -1;
    const ox_value *v = ox_find(b, a->input[other]);
    if (!v || !ox_is_const(v) || !v->host.f || v->host.numel != O)
        return -1;
    for (int i = 0; i + 1 < v->rank; i++)
        if (v->dim[i] != 1)
            return -1;
    *c = v;
    return k;
}

slim_status ox_map_gemm(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_value *av = ox_arg(b, n, 0), *bv = ox_arg(b, n, 1), *cv = NULL;
    if (!av || !bv)
        return b->err->code;
    if (av->rank != 2 || bv->rank != 2)
        return ox_fail(b, SLIM_EINVAL, "A and B must be 2-D (rank %d and %d)", av->rank, bv->rank);
    float alpha = slim__ox_attr_float(n, "alpha", 1.0f),
          beta = slim__ox_attr_float(n, "beta", 1.0f);
    bool ta = slim__ox_attr_int(n, "transA", 0) != 0, tb = slim__ox_attr_int(n, "transB", 0) != 0;
    int64_t K = ta ? av->dim[0] : av->dim[1], O = tb ? bv->dim[0] : bv->dim[1];
    if ((tb ? bv->dim[1] : bv->dim[0]) != K)
        return ox_fail(b, SLIM_ESHAPE, "A and B do not multiply (K %lld and %lld)", (long long)K,
                       (long long)(tb ? bv->dim[1] : bv->dim[0]));
    if (slim__ox_has_input(n, 2) && !(cv = ox_arg(b, n, 2)))
        return b->err->code;
    int ai = (int)(av - b->vals), bi = (int)(bv - b->vals), ci = cv ? (int)(cv - b->vals) : -1;
    slim_status st;
    slim_tid y;
    int yl;
    bool bias_in_layer = false;
    if (av->kind == OX_COMPUTED && !ta && ox_is_const(bv) && bv->host.f) {
        /* fully_connected: weights (K, O) = alpha * op(B) */
        float *w = malloc((size_t)(K * O) * sizeof(float));
        if (!w)
            return ox_oom(b);
        int64_t C = av->flat_c, S = C ? K / C : 1;
        for (int64_t k = 0; k < K; k++) {
            /* row k of ONNX's C-major flatten is row (s, c) of slim's NHWC one */
            int64_t row = C ? (k % S) * C + k / S : k;
            for (int64_t o = 0; o < O; o++)
                w[row * O + o] = alpha * (tb ? bv->host.f[o * K + k] : bv->host.f[k * O + o]);
        }
        float *bias = NULL;
        if (cv && beta != 0 && ox_is_const(cv) && cv->host.f && cv->host.numel == O &&
            (cv->rank == 1 || cv->dim[0] == 1)) {
            if (!(bias = malloc((size_t)O * sizeof(float)))) {
                free(w);
                return ox_oom(b);
            }
            for (int64_t o = 0; o < O; o++)
                bias[o] = beta * cv->host.f[o];
            bias_in_layer = true;
        }
        slim_tid x = av->tid;
        int xl = av->layer;
        if (!C) {
            ox_layout pl = ox_plain(2);
            if ((st = ox_value_in(b, av, &pl, &x, &xl)) != SLIM_OK) {
                free(w);
                free(bias);
                return st;
            }
        }
        const ox_value *names[2] = {&b->vals[bi], ci >= 0 ? &b->vals[ci] : NULL};
        st = fc_layer(b, x, xl, w, bias, O, names, 2, &y, &yl);
        free(w);
        free(bias);
        if (st != SLIM_OK)
            return st;
    } else {
        if (av->flat_c)
            return ox_fail(b, SLIM_EINTERNAL, "a lazy flatten into a Gemm without weights");
        slim_tid in[2];
        int il[2];
        ox_layout pl = ox_plain(2);
        if ((st = ox_value_in(b, &b->vals[ai], &pl, &in[0], &il[0])) != SLIM_OK ||
            (st = ox_value_in(b, &b->vals[bi], &pl, &in[1], &il[1])) != SLIM_OK)
            return st;
        ox_kv kv[3] = {{"transpose_a", ta ? "true" : "false"},
                       {"transpose_b", tb ? "true" : "false"},
                       {"alpha", ox_float(b, (double)alpha)}};
        if ((st = ox_op(b, "matmul", NULL, in, il, 2, kv, 3, &y, &yl)) != SLIM_OK)
            return st;
    }
    if (cv && beta != 0 && !bias_in_layer) {
        cv = &b->vals[ci];
        ox_layout pl = ox_plain(2);
        slim_tid c, in[2];
        int cl, il[2];
        if (cv->kind == OX_HOST) {
            /* beta * C on the host */
            if (!cv->host.f)
                return ox_unsup(b, "C is %s data", slim__ox_elem_name(cv->host.elem));
            slim__ox_tensor t;
            if (!slim__ox_tensor_copy(&t, &cv->host))
                return ox_oom(b);
            for (int64_t i = 0; i < t.numel; i++)
                t.f[i] *= beta;
            if (t.rank == 0) {
                t.rank = 1;
                t.dim[0] = 1;
            }
            const char *nm = ox_printf(b, "%s@beta", cv->name);
            st = nm ? ox_def_host(b, nm, &t, cv->fed, cv->initializer) : ox_oom(b);
            slim__ox_tensor_fini(&t);
            if (st != SLIM_OK)
                return st;
            ox_layout tl = ox_plain(b->vals[b->n_vals - 1].rank);
            if ((st = ox_value_in(b, &b->vals[b->n_vals - 1], &tl, &c, &cl)) != SLIM_OK)
                return st;
        } else {
            if ((st = ox_value_in(b, cv, &pl, &c, &cl)) != SLIM_OK)
                return st;
            if (beta != 1.0f) {
                slim_shape one = slim_shape_make(1, (int64_t[]){1});
                slim_tid bt;
                int btl;
                if ((st = ox_const(b, "beta", &one, &beta, &bt, &btl)) != SLIM_OK)
                    return st;
                slim_tid mi[2] = {c, bt};
                int ml[2] = {cl, btl};
                if ((st = ox_op(b, "multiply", NULL, mi, ml, 2, NULL, 0, &c, &cl)) != SLIM_OK)
                    return st;
            }
        }
        in[0] = y;
        in[1] = c;
        il[0] = yl;
        il[1] = cl;
        if ((st = ox_op(b, "add", NULL, in, il, 2, NULL, 0, &y, &yl)) != SLIM_OK)
            return st;
    }
    av = &b->vals[ai];
    int64_t d[2] = {ta ? av->dim[1] : av->dim[0], O};
    ox_layout pl = ox_plain(2);
    return ox_def(b, n->output[0], y, yl, &pl, 2, d);
}

slim_status ox_map_matmul(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_value *av = ox_arg(b, n, 0), *bv = ox_arg(b, n, 1);
    if (!av || !bv)
        return b->err->code;
    int ra = av->rank, rb = bv->rank;
    if (ra < 2 || rb < 2)
        return ox_unsup(b, "a 1-D operand (slim's matmul needs rank >= 2)");
    int ai = (int)(av - b->vals), bi = (int)(bv - b->vals);
    int64_t K = av->dim[ra - 1];
    if (bv->dim[rb - 2] != K)
        return ox_fail(b, SLIM_ESHAPE, "A (..., %lld) and B (%lld, ...) do not multiply",
                       (long long)K, (long long)bv->dim[rb - 2]);
    slim_status st;
    slim_tid y;
    int yl;
    int64_t d[OX_MAXD];
    memcpy(d, av->dim, sizeof d);
    if (av->kind == OX_COMPUTED && rb == 2 && ox_is_const(bv) && bv->host.f) {
        /* a linear layer: fully_connected over the last axis (rows of the
         * other axes, merged), with the following bias Add folded in */
        int64_t O = bv->dim[1];
        d[ra - 1] = O;
        const ox_value *c = NULL;
        int add = bias_after(b, n->output[0], O, &c);
        ox_layout l = av->lay;
        if (l.perm[l.rank - 1] != ra - 1)
            l = ox_plain(ra);
        slim_tid x;
        int xl;
        if ((st = ox_value_in(b, av, &l, &x, &xl)) != SLIM_OK)
            return st;
        if (ra > 2 || l.rank != 2) {
            int64_t rows[2] = {-1, K};
            if ((st = ox_reshape(b, x, xl, rows, 2, &x, &xl)) != SLIM_OK)
                return st;
        }
        const ox_value *names[2] = {c, &b->vals[bi]};
        if ((st = fc_layer(b, x, xl, b->vals[bi].host.f, c ? c->host.f : NULL, O, names, 2, &y,
                           &yl)) != SLIM_OK)
            return st;
        if (ra > 2 || l.rank != 2) {
            slim_shape s = ox_slim_shape(&l, d);
            if ((st = ox_reshape(b, y, yl, s.dim, s.rank, &y, &yl)) != SLIM_OK)
                return st;
        }
        const char *out = n->output[0];
        if (add >= 0) {
            b->done[add] = true;
            out = b->model->graph->node[add]->output[0];
        }
        return ox_def(b, out, y, yl, &l, ra, d);
    }
    bool same_batch = ra == rb;
    for (int i = 0; same_batch && i < ra - 2; i++)
        same_batch = av->dim[i] == bv->dim[i];
    if (rb != 2 && !same_batch)
        return ox_unsup(b, "broadcast batch dims (slim's matmul needs equal batch dims or a "
                           "2-D b)");
    slim_tid in[2];
    int il[2];
    ox_layout la = ox_plain(ra), lb = ox_plain(rb);
    if ((st = ox_value_in(b, &b->vals[ai], &la, &in[0], &il[0])) != SLIM_OK ||
        (st = ox_value_in(b, &b->vals[bi], &lb, &in[1], &il[1])) != SLIM_OK)
        return st;
    if ((st = ox_op(b, "matmul", NULL, in, il, 2, NULL, 0, &y, &yl)) != SLIM_OK)
        return st;
    d[ra - 1] = b->vals[bi].dim[rb - 1];
    return ox_def(b, n->output[0], y, yl, &la, ra, d);
}
