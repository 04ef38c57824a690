/*
 * interop/onnx_ops_tensor.c - ONNX's elementwise, activation, softmax and
 * reduction ops as slim layers, and the helpers every op file shares (extra
 * outputs refused, unary ops, host inputs read as numbers).
 *
 * Layout-agnostic ops (activations, Add, Mul, Dropout) keep their input's
 * layout; ops with axes (Softmax, ReduceMean) map them to slim's axes. The
 * shape ops are in onnx_ops_shape.c, the table of mappings in onnx_ops.c.
 */
#include "interop/onnx_build.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

slim_status ox_no_outputs_from(ox_builder *b, const Onnx__NodeProto *n, size_t from,
                               const char *why)
{
    for (size_t i = from; i < n->n_output; i++)
        if (slim__ox_has_output(n, i))
            return ox_unsup(b, "output %zu ('%s'): %s", i, n->output[i], why);
    return SLIM_OK;
}

slim_status ox_unary_value(ox_builder *b, ox_value *v, const char *op, const ox_kv *kv, int n_kv,
                           const char *out_name)
{
    int vi = (int)(v - b->vals);
    ox_layout l = ox_keep_layout(b, v);
    slim_tid x, y;
    int xl, yl;
    slim_status st = ox_value_in(b, v, &l, &x, &xl);
    if (st != SLIM_OK)
        return st;
    if ((st = ox_op(b, op, NULL, &x, &xl, 1, kv, n_kv, &y, &yl)) != SLIM_OK)
        return st;
    v = &b->vals[vi];
    return ox_def(b, out_name, y, yl, &l, v->rank, v->dim);
}

slim_status ox_unary(ox_builder *b, const Onnx__NodeProto *n, const char *op, const ox_kv *kv,
                     int n_kv)
{
    ox_value *v = ox_arg(b, n, 0);
    if (!v)
        return b->err->code;
    if (!slim__ox_has_output(n, 0))
        return SLIM_OK;
    return ox_unary_value(b, v, op, kv, n_kv, n->output[0]);
}

slim_status ox_map_relu(ox_builder *b, const Onnx__NodeProto *n)
{
    return ox_unary(b, n, "relu", NULL, 0);
}

slim_status ox_map_sigmoid(ox_builder *b, const Onnx__NodeProto *n)
{
    return ox_unary(b, n, "sigmoid", NULL, 0);
}

slim_status ox_map_tanh(ox_builder *b, const Onnx__NodeProto *n)
{
    return ox_unary(b, n, "tanh", NULL, 0);
}

slim_status ox_map_hardswish(ox_builder *b, const Onnx__NodeProto *n)
{
    return ox_unary(b, n, "hard_swish", NULL, 0);
}

slim_status ox_map_gelu(ox_builder *b, const Onnx__NodeProto *n)
{
    char buf[16];
    const char *ap = slim__ox_attr_str(n, "approximate", "none", buf, sizeof buf);
    if (strcmp(ap, "none") != 0)
        return ox_unsup(b, "approximate='%s' (slim's gelu is the exact erf form)", ap);
    return ox_unary(b, n, "gelu", NULL, 0);
}

slim_status ox_map_leakyrelu(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_kv kv = {"alpha", ox_float(b, (double)slim__ox_attr_float(n, "alpha", 0.01f))};
    return ox_unary(b, n, "leaky_relu", &kv, 1);
}

slim_status ox_map_elu(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_kv kv = {"alpha", ox_float(b, (double)slim__ox_attr_float(n, "alpha", 1.0f))};
    return ox_unary(b, n, "elu", &kv, 1);
}

slim_status ox_map_hardsigmoid(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_kv kv[2] = {{"alpha", ox_float(b, (double)slim__ox_attr_float(n, "alpha", 0.2f))},
                   {"beta", ox_float(b, (double)slim__ox_attr_float(n, "beta", 0.5f))}};
    return ox_unary(b, n, "hard_sigmoid", kv, 2);
}

/* Clip: relu6 for [0, 6] (MobileNet's), relu for [0, inf), else clip. */
slim_status ox_map_clip(ox_builder *b, const Onnx__NodeProto *n)
{
    double lo = -INFINITY, hi = INFINITY;
    slim_status st;
    if (b->opset < 11) {
        lo = slim__ox_attr_float(n, "min", -INFINITY);
        hi = slim__ox_attr_float(n, "max", INFINITY);
    } else if ((st = ox_host_scalar(b, n, 1, -INFINITY, &lo)) != SLIM_OK ||
               (st = ox_host_scalar(b, n, 2, INFINITY, &hi)) != SLIM_OK) {
        return st;
    }
    if (lo == 0 && hi == 6)
        return ox_unary(b, n, "relu6", NULL, 0);
    if (lo == 0 && isinf(hi) && hi > 0)
        return ox_unary(b, n, "relu", NULL, 0);
    ox_kv kv[2];
    int nkv = 0;
    if (!isinf(lo))
        kv[nkv++] = (ox_kv){"min", ox_float(b, lo)};
    if (!isinf(hi))
        kv[nkv++] = (ox_kv){"max", ox_float(b, hi)};
    return ox_unary(b, n, "clip", kv, nkv);
}

slim_status ox_map_identity(ox_builder *b, const Onnx__NodeProto *n)
{
    if (!ox_arg(b, n, 0))
        return b->err->code;
    return slim__ox_has_output(n, 0) ? ox_alias(b, n->output[0], n->input[0]) : SLIM_OK;
}

slim_status ox_map_constant(ox_builder *b, const Onnx__NodeProto *n)
{
    const Onnx__AttributeProto *a = slim__ox_attr(n, "value");
    slim__ox_tensor t;
    if (a && a->t) {
        char what[300];
        snprintf(what, sizeof what, "%s: node '%s' (Constant): value", b->file,
                 n->name ? n->name : "");
        slim_status st = slim__ox_tensor_from_proto(a->t, what, &t, b->err);
        if (st != SLIM_OK)
            return st;
    } else if ((a = slim__ox_attr(n, "value_float")) && a->has_f) {
        if (!slim__ox_tensor_alloc(&t, true, 0, NULL))
            return ox_oom(b);
        t.f[0] = a->f;
    } else if ((a = slim__ox_attr(n, "value_int")) && a->has_i) {
        if (!slim__ox_tensor_alloc(&t, false, 0, NULL))
            return ox_oom(b);
        t.i[0] = a->i;
    } else if ((a = slim__ox_attr(n, "value_ints"))) {
        int64_t d = (int64_t)a->n_ints;
        if (!slim__ox_tensor_alloc(&t, false, 1, &d))
            return ox_oom(b);
        for (size_t k = 0; k < a->n_ints; k++)
            t.i[k] = a->ints[k];
    } else if ((a = slim__ox_attr(n, "value_floats"))) {
        int64_t d = (int64_t)a->n_floats;
        if (!slim__ox_tensor_alloc(&t, true, 1, &d))
            return ox_oom(b);
        for (size_t k = 0; k < a->n_floats; k++)
            t.f[k] = a->floats[k];
    } else {
        return ox_unsup(b, "a Constant without a tensor, float or int value");
    }
    slim_status st =
        slim__ox_has_output(n, 0) ? ox_def_host(b, n->output[0], &t, false, false) : SLIM_OK;
    slim__ox_tensor_fini(&t);
    return st;
}

slim_status ox_host_scalar(ox_builder *b, const Onnx__NodeProto *n, size_t i, double def,
                           double *out)
{
    *out = def;
    if (!slim__ox_has_input(n, i))
        return SLIM_OK;
    ox_value *v = ox_arg(b, n, i);
    if (!v)
        return b->err->code;
    if (v->kind != OX_HOST || v->host.numel != 1)
        return ox_unsup(b, "input %zu ('%s') is not a scalar known before the run", i, v->name);
    *out = v->host.f ? v->host.f[0] : (double)v->host.i[0];
    return SLIM_OK;
}

slim_status ox_host_ints(ox_builder *b, const Onnx__NodeProto *n, size_t i, int64_t *out, int max,
                         int *count)
{
    *count = -1;
    if (!slim__ox_has_input(n, i))
        return SLIM_OK;
    ox_value *v = ox_arg(b, n, i);
    if (!v)
        return b->err->code;
    if (v->kind != OX_HOST || !v->host.i)
        return ox_unsup(b, "input %zu ('%s') is not integer data known before the run", i, v->name);
    if (v->host.numel > max)
        return ox_unsup(b, "input %zu ('%s') has %lld values (at most %d)", i, v->name,
                        (long long)v->host.numel, max);
    *count = (int)v->host.numel;
    memcpy(out, v->host.i, (size_t)*count * sizeof(int64_t));
    return SLIM_OK;
}

slim_status ox_map_dropout(ox_builder *b, const Onnx__NodeProto *n)
{
    slim_status st = ox_no_outputs_from(b, n, 1, "the mask: slim's dropout has no mask output");
    if (st != SLIM_OK)
        return st;
    double ratio, training;
    if (b->opset >= 12) {
        if ((st = ox_host_scalar(b, n, 1, 0.5, &ratio)) != SLIM_OK ||
            (st = ox_host_scalar(b, n, 2, 0.0, &training)) != SLIM_OK)
            return st;
    } else {
        /* before opset 12 Dropout is inference-only (opset 6 and older: is_test) */
        ratio = slim__ox_attr_float(n, "ratio", 0.5f);
        training = b->opset < 7 && slim__ox_attr_int(n, "is_test", 0) == 0;
    }
    if (training != 0 && ratio != 0)
        return ox_unsup(b,
                        "training-mode dropout with ratio %g: the mask comes from ONNX's RNG, "
                        "slim's is counter-based",
                        ratio);
    if (ratio < 0 || ratio >= 1)
        return ox_unsup(b, "ratio %g outside slim's keep_prob range (0, 1]", ratio);
    if (b->o->model && training == 0)
        return ox_map_identity(b, n); /* inference-mode dropout: the exporter's no-op */
    if (training != 0)
        b->training = true; /* ratio 0: every element kept, deterministic */
    ox_kv kv = {"keep_prob", ox_float(b, 1.0 - ratio)};
    return ox_unary(b, n, "dropout", &kv, 1);
}

/* ---- binary ops with broadcasting ----------------------------------------------------- */

/* Value v as an operand of rank `rank` in layout lay: host values aligned
 * (leading ones) and fed in that layout, computed ones of lower rank reshaped
 * to it first. */
static slim_status operand(ox_builder *b, ox_value *v, int rank, const ox_layout *lay,
                           const float *scale, slim_tid *out, int *layer)
{
    int vi = (int)(v - b->vals);
    int64_t d[OX_MAXD];
    int pad = rank - v->rank;
    if (pad < 0)
        return ox_fail(b, SLIM_EINTERNAL, "operand rank");
    for (int i = 0; i < rank; i++)
        d[i] = i < pad ? 1 : v->dim[i - pad];
    if (v->kind == OX_HOST) {
        if (!v->host.f && !v->fed)
            return ox_unsup(b, "'%s' is %s data; slim's ops compute in f32", v->name,
                            slim__ox_elem_name(v->host.elem));
        if (!pad && !scale)
            return ox_value_in(b, v, lay, out, layer);
        slim__ox_tensor t;
        if (!slim__ox_tensor_copy(&t, &v->host))
            return ox_oom(b);
        t.rank = rank;
        memcpy(t.dim, d, sizeof d);
        for (int64_t k = 0; scale && t.f && k < t.numel; k++)
            t.f[k] *= *scale;
        const char *nm = ox_printf(b, "%s%s", v->name, scale ? "@scaled" : "@aligned");
        slim_status st = nm ? ox_def_host(b, nm, &t, v->fed, v->initializer) : ox_oom(b);
        slim__ox_tensor_fini(&t);
        if (st != SLIM_OK)
            return st;
        return ox_value_in(b, &b->vals[b->n_vals - 1], lay, out, layer);
    }
    if (scale)
        return ox_fail(b, SLIM_EINTERNAL, "scaled computed operand");
    if (!pad)
        return ox_value_in(b, v, lay, out, layer);
    /* (C) against (N,C,H,W): reshape to (1,C) ... then into the layout */
    slim_tid x;
    int xl;
    ox_layout vl = ox_plain(v->rank);
    slim_status st = ox_value_in(b, v, &vl, &x, &xl);
    if (st != SLIM_OK)
        return st;
    ox_layout pl = ox_plain(rank);
    slim_shape s = ox_slim_shape(&pl, d);
    if ((st = ox_reshape(b, x, xl, s.dim, s.rank, &x, &xl)) != SLIM_OK)
        return st;
    const char *nm = ox_printf(b, "%s@rank%d", b->vals[vi].name, rank);
    if (!nm || (st = ox_def(b, nm, x, xl, &pl, rank, d)) != SLIM_OK)
        return nm ? st : ox_oom(b);
    return ox_value_in(b, &b->vals[b->n_vals - 1], lay, out, layer);
}

/* Add, Mul, Sub, Div with numpy broadcasting (and opset < 7's broadcast/axis
 * attributes). Sub and Div by a constant become add and multiply by its
 * negation / reciprocal; Sub of computed values adds -1 * b. */
static slim_status binary(ox_builder *b, const Onnx__NodeProto *n, char kind)
{
    ox_value *v[2] = {ox_arg(b, n, 0), ox_arg(b, n, 1)};
    if (!v[0] || !v[1])
        return b->err->code;
    int i0 = (int)(v[0] - b->vals), i1 = (int)(v[1] - b->vals);
    if (b->opset < 7 && slim__ox_attr_int(n, "broadcast", 0) && slim__ox_attr(n, "axis")) {
        /* legacy broadcasting: B's dims line up with A's from `axis` on */
        int axis = ox_norm_axis(slim__ox_attr_int(n, "axis", 0), v[0]->rank);
        int pad = axis < 0 ? -1 : v[0]->rank - axis - v[1]->rank;
        if (axis < 0 || pad < 0)
            return ox_fail(b, SLIM_EINVAL, "a legacy broadcast axis out of range");
        if (pad > 0) {
            if (v[1]->kind != OX_HOST)
                return ox_unsup(b, "legacy broadcast of a computed operand");
            slim__ox_tensor t;
            if (!slim__ox_tensor_copy(&t, &v[1]->host))
                return ox_oom(b);
            for (int i = 0; i < pad; i++)
                t.dim[t.rank++] = 1;
            const char *nm = ox_printf(b, "%s@axis%d", v[1]->name, axis);
            slim_status st = nm ? ox_def_host(b, nm, &t, v[1]->fed, v[1]->initializer) : ox_oom(b);
            slim__ox_tensor_fini(&t);
            if (st != SLIM_OK)
                return st;
            i1 = b->n_vals - 1;
        }
    }
    v[0] = &b->vals[i0];
    v[1] = &b->vals[i1];
    int rank = v[0]->rank > v[1]->rank ? v[0]->rank : v[1]->rank;
    int64_t od[OX_MAXD];
    for (int i = 0; i < rank; i++) {
        int a0 = i - (rank - v[0]->rank), a1 = i - (rank - v[1]->rank);
        int64_t d0 = a0 >= 0 ? v[0]->dim[a0] : 1, d1 = a1 >= 0 ? v[1]->dim[a1] : 1;
        if (d0 != d1 && d0 != 1 && d1 != 1)
            return ox_fail(b, SLIM_ESHAPE, "operands of dims that do not broadcast");
        od[i] = d0 == 1 ? d1 : d0;
    }
    /* the layout: the computed operand of the output's rank (fed values follow it) */
    ox_layout lay = ox_plain(rank);
    bool found = false;
    for (int i = 0; i < 2 && !found; i++)
        if (v[i]->kind == OX_COMPUTED && v[i]->rank == rank) {
            lay = v[i]->lay;
            found = true;
        }
    if (!found)
        lay = ox_keep_layout(b, v[0]->rank == rank ? v[0] : v[1]);
    const char *op = kind == '+' || kind == '-' ? "add" : "multiply";
    float scale = 0;
    const float *sc = NULL;
    if (kind == '-' || kind == '/') {
        if (!ox_is_const(v[1])) {
            if (kind == '/')
                return ox_unsup(b, "division by a computed value (slim has no divide op)");
        } else {
            scale = -1;
            sc = &scale;
            if (kind == '/') {
                /* x / c = x * (1 / c) */
                sc = NULL;
                slim__ox_tensor t;
                if (!v[1]->host.f || !slim__ox_tensor_copy(&t, &v[1]->host))
                    return v[1]->host.f ? ox_oom(b) : ox_unsup(b, "division by integers");
                for (int64_t k = 0; k < t.numel; k++)
                    t.f[k] = 1.0f / t.f[k];
                const char *nm = ox_printf(b, "%s@reciprocal", v[1]->name);
                slim_status st = nm ? ox_def_host(b, nm, &t, false, false) : ox_oom(b);
                slim__ox_tensor_fini(&t);
                if (st != SLIM_OK)
                    return st;
                i1 = b->n_vals - 1;
            }
        }
    }
    slim_tid in[2], y;
    int il[2], yl;
    slim_status st = operand(b, &b->vals[i0], rank, &lay, NULL, &in[0], &il[0]);
    if (st == SLIM_OK)
        st = operand(b, &b->vals[i1], rank, &lay, sc, &in[1], &il[1]);
    if (st != SLIM_OK)
        return st;
    if (kind == '-' && !sc) {
        /* a - b = a + (-1) * b */
        float m1 = -1.0f;
        slim_shape one = slim_shape_make(1, (int64_t[]){1});
        slim_tid c;
        int cl;
        if ((st = ox_const(b, "minus_one", &one, &m1, &c, &cl)) != SLIM_OK)
            return st;
        slim_tid mi[2] = {in[1], c};
        int ml[2] = {il[1], cl};
        if ((st = ox_op(b, "multiply", NULL, mi, ml, 2, NULL, 0, &in[1], &il[1])) != SLIM_OK)
            return st;
    }
    if ((st = ox_op(b, op, NULL, in, il, 2, NULL, 0, &y, &yl)) != SLIM_OK)
        return st;
    return slim__ox_has_output(n, 0) ? ox_def(b, n->output[0], y, yl, &lay, rank, od) : SLIM_OK;
}

slim_status ox_map_add(ox_builder *b, const Onnx__NodeProto *n)
{
    return binary(b, n, '+');
}

slim_status ox_map_mul(ox_builder *b, const Onnx__NodeProto *n)
{
    return binary(b, n, '*');
}

slim_status ox_map_sub(ox_builder *b, const Onnx__NodeProto *n)
{
    return binary(b, n, '-');
}

slim_status ox_map_div(ox_builder *b, const Onnx__NodeProto *n)
{
    return binary(b, n, '/');
}

slim_status ox_map_neg(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_value *v = ox_arg(b, n, 0);
    if (!v)
        return b->err->code;
    int vi = (int)(v - b->vals);
    ox_layout l = ox_keep_layout(b, v);
    slim_tid in[2], y;
    int il[2], yl;
    float m1 = -1.0f;
    slim_shape one = slim_shape_make(1, (int64_t[]){1});
    slim_status st;
    if ((st = ox_value_in(b, v, &l, &in[0], &il[0])) != SLIM_OK ||
        (st = ox_const(b, "minus_one", &one, &m1, &in[1], &il[1])) != SLIM_OK ||
        (st = ox_op(b, "multiply", NULL, in, il, 2, NULL, 0, &y, &yl)) != SLIM_OK)
        return st;
    v = &b->vals[vi];
    return ox_def(b, n->output[0], y, yl, &l, v->rank, v->dim);
}

/* ---- softmax -------------------------------------------------------------------------- */

/* Softmax / LogSoftmax. Opset >= 13: one axis. Before: the input is coerced
 * to 2-D at axis (dims before / dims from it), a reshape around a last-axis
 * softmax. */
static slim_status softmax(ox_builder *b, const Onnx__NodeProto *n, const char *op)
{
    ox_value *v = ox_arg(b, n, 0);
    if (!v)
        return b->err->code;
    int vi = (int)(v - b->vals), rank = v->rank;
    bool coerce = b->opset < 13;
    int axis = ox_norm_axis(slim__ox_attr_int(n, "axis", coerce ? 1 : -1), rank);
    if (axis < 0)
        return ox_fail(b, SLIM_EINVAL, "axis out of range for rank %d", rank);
    ox_layout l = coerce ? ox_plain(rank) : ox_keep_layout(b, v);
    slim_tid x, y;
    int xl, yl;
    slim_status st = ox_value_in(b, v, &l, &x, &xl);
    if (st != SLIM_OK)
        return st;
    v = &b->vals[vi];
    int64_t d[OX_MAXD];
    memcpy(d, v->dim, sizeof d);
    bool reshape = coerce && axis != rank - 1;
    if (reshape) {
        int64_t two[2] = {1, 1};
        for (int i = 0; i < rank; i++)
            two[i < axis ? 0 : 1] *= d[i];
        if ((st = ox_reshape(b, x, xl, two, 2, &x, &xl)) != SLIM_OK)
            return st;
    }
    ox_kv kv = {"axis", ox_printf(b, "%d", coerce ? -1 : ox_slim_axis(&l, axis))};
    if ((st = ox_op(b, op, NULL, &x, &xl, 1, &kv, 1, &y, &yl)) != SLIM_OK)
        return st;
    if (reshape && (st = ox_reshape(b, y, yl, d, rank, &y, &yl)) != SLIM_OK)
        return st;
    return ox_def(b, n->output[0], y, yl, &l, rank, d);
}

slim_status ox_map_softmax(ox_builder *b, const Onnx__NodeProto *n)
{
    return softmax(b, n, "softmax");
}

slim_status ox_map_logsoftmax(ox_builder *b, const Onnx__NodeProto *n)
{
    return softmax(b, n, "log_softmax");
}

/* ReduceMean over axes of a computed value: slim's reduce_mean over the
 * slim axes they are (global_avg_pool's when they are H and W of NHWC). */
slim_status ox_map_reducemean(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_value *v = ox_arg(b, n, 0);
    if (!v)
        return b->err->code;
    int vi = (int)(v - b->vals), r = v->rank, na;
    int64_t axes[OX_MAXD];
    slim_status st;
    if (b->opset >= 18 && slim__ox_has_input(n, 1)) {
        if ((st = ox_host_ints(b, n, 1, axes, OX_MAXD, &na)) != SLIM_OK)
            return st;
    } else {
        na = slim__ox_attr_ints(n, "axes", axes, OX_MAXD);
        if (na > OX_MAXD)
            return ox_fail(b, SLIM_EINVAL, "%d axes", na);
    }
    v = &b->vals[vi];
    bool keep = slim__ox_attr_int(n, "keepdims", 1) != 0, mark[OX_MAXD] = {false};
    if (na < 0) {
        if (slim__ox_attr_int(n, "noop_with_empty_axes", 0))
            return ox_alias(b, n->output[0], n->input[0]);
        for (na = 0; na < r; na++)
            axes[na] = na;
    }
    for (int i = 0; i < na; i++) {
        int a = ox_norm_axis(axes[i], r);
        if (a < 0 || mark[a])
            return ox_fail(b, SLIM_EINVAL, "axis %lld out of range or repeated",
                           (long long)axes[i]);
        mark[a] = true;
    }
    ox_layout l = ox_keep_layout(b, v);
    slim_tid x, y;
    int xl, yl;
    if ((st = ox_value_in(b, v, &l, &x, &xl)) != SLIM_OK)
        return st;
    v = &b->vals[vi];
    int64_t sa[SLIM_MAX_DIMS];
    int nsa = 0;
    for (int s = 0; s < l.rank; s++)
        if (l.perm[s] >= 0 && mark[l.perm[s]])
            sa[nsa++] = s;
    ox_layer *ly = ox_layer_new(b, OXL_OP, "reduce_mean", ox_node_name(b, NULL));
    if (!ly)
        return ox_oom(b);
    ly->n_in = 1;
    ly->in[0] = xl;
    ox_kv_ints(b, ly, "axes", sa, nsa);
    ox_kv_set(b, ly, "keep_dims", "%s", keep ? "true" : "false");
    yl = b->n_layers - 1;
    if ((st = ox_layer_op(b, ly, &x, &y)) != SLIM_OK)
        return st;
    v = &b->vals[vi];
    int64_t d[OX_MAXD];
    int q = 0;
    ox_layout ol = {0};
    int newidx[OX_MAXD];
    for (int a = 0; a < r; a++) {
        if (mark[a] && !keep) {
            newidx[a] = -1;
            continue;
        }
        newidx[a] = q;
        d[q++] = mark[a] ? 1 : v->dim[a];
    }
    for (int s = 0; s < l.rank; s++) {
        int a = l.perm[s];
        if (a >= 0 && newidx[a] < 0)
            continue;
        ol.perm[ol.rank++] = (int8_t)(a >= 0 ? newidx[a] : -1);
    }
    return ox_def(b, n->output[0], y, yl, &ol, q, d);
}
