/*
 * interop/onnx_ops_tensor.c - ONNX's elementwise, activation, softmax and
 * shape ops as slim layers, and the table of op mappings.
 *
 * Layout-agnostic ops (activations, Add, Mul, Dropout) keep their input's
 * layout; ops with axes (Softmax, Concat, Pad, Slice, ReduceMean) map them to
 * slim's axes; Transpose only changes the layout; Reshape (and Flatten,
 * Squeeze, Unsqueeze) reshapes on slim's side when the axes it merges and
 * splits lie in order there, and transposes first otherwise.
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

static slim_status map_relu(ox_builder *b, const Onnx__NodeProto *n)
{
    return ox_unary(b, n, "relu", NULL, 0);
}

static slim_status map_sigmoid(ox_builder *b, const Onnx__NodeProto *n)
{
    return ox_unary(b, n, "sigmoid", NULL, 0);
}

static slim_status map_tanh(ox_builder *b, const Onnx__NodeProto *n)
{
    return ox_unary(b, n, "tanh", NULL, 0);
}

static slim_status map_hardswish(ox_builder *b, const Onnx__NodeProto *n)
{
    return ox_unary(b, n, "hard_swish", NULL, 0);
}

static slim_status map_gelu(ox_builder *b, const Onnx__NodeProto *n)
{
    char buf[16];
    const char *ap = slim__ox_attr_str(n, "approximate", "none", buf, sizeof buf);
    if (strcmp(ap, "none") != 0)
        return ox_unsup(b, "approximate='%s' (slim's gelu is the exact erf form)", ap);
    return ox_unary(b, n, "gelu", NULL, 0);
}

static slim_status map_leakyrelu(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_kv kv = {"alpha", ox_float(b, (double)slim__ox_attr_float(n, "alpha", 0.01f))};
    return ox_unary(b, n, "leaky_relu", &kv, 1);
}

static slim_status map_elu(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_kv kv = {"alpha", ox_float(b, (double)slim__ox_attr_float(n, "alpha", 1.0f))};
    return ox_unary(b, n, "elu", &kv, 1);
}

static slim_status map_hardsigmoid(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_kv kv[2] = {{"alpha", ox_float(b, (double)slim__ox_attr_float(n, "alpha", 0.2f))},
                   {"beta", ox_float(b, (double)slim__ox_attr_float(n, "beta", 0.5f))}};
    return ox_unary(b, n, "hard_sigmoid", kv, 2);
}

/* Clip: relu6 for [0, 6] (MobileNet's), relu for [0, inf), else clip. */
static slim_status map_clip(ox_builder *b, const Onnx__NodeProto *n)
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

static slim_status map_identity(ox_builder *b, const Onnx__NodeProto *n)
{
    if (!ox_arg(b, n, 0))
        return b->err->code;
    return slim__ox_has_output(n, 0) ? ox_alias(b, n->output[0], n->input[0]) : SLIM_OK;
}

static slim_status map_constant(ox_builder *b, const Onnx__NodeProto *n)
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

static slim_status map_dropout(ox_builder *b, const Onnx__NodeProto *n)
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
        return map_identity(b, n); /* inference-mode dropout: the exporter's no-op */
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

static slim_status map_add(ox_builder *b, const Onnx__NodeProto *n)
{
    return binary(b, n, '+');
}

static slim_status map_mul(ox_builder *b, const Onnx__NodeProto *n)
{
    return binary(b, n, '*');
}

static slim_status map_sub(ox_builder *b, const Onnx__NodeProto *n)
{
    return binary(b, n, '-');
}

static slim_status map_div(ox_builder *b, const Onnx__NodeProto *n)
{
    return binary(b, n, '/');
}

static slim_status map_neg(ox_builder *b, const Onnx__NodeProto *n)
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

static slim_status map_softmax(ox_builder *b, const Onnx__NodeProto *n)
{
    return softmax(b, n, "softmax");
}

static slim_status map_logsoftmax(ox_builder *b, const Onnx__NodeProto *n)
{
    return softmax(b, n, "log_softmax");
}

/* ---- shapes --------------------------------------------------------------------------- */

static slim_status map_concat(ox_builder *b, const Onnx__NodeProto *n)
{
    if (n->n_input < 1 || n->n_input > SLIM_MAX_INPUTS)
        return ox_unsup(b, "Concat of %zu inputs (slim's concat takes 1 to %d)", n->n_input,
                        SLIM_MAX_INPUTS);
    ox_value *v0 = ox_arg(b, n, 0);
    if (!v0)
        return b->err->code;
    int rank = v0->rank;
    int axis = ox_norm_axis(slim__ox_attr_int(n, "axis", 1), rank);
    if (axis < 0)
        return ox_fail(b, SLIM_EINVAL, "axis out of range for rank %d", rank);
    if (n->n_input == 1)
        return ox_alias(b, n->output[0], n->input[0]);
    ox_layout l = ox_keep_layout(b, v0);
    for (size_t i = 0; i < n->n_input; i++) {
        ox_value *v = ox_arg(b, n, i);
        if (!v)
            return b->err->code;
        if (v->rank != rank)
            return ox_fail(b, SLIM_ESHAPE, "inputs of ranks %d and %d", rank, v->rank);
        if (v->kind == OX_COMPUTED) {
            l = v->lay;
            break;
        }
    }
    slim_tid in[SLIM_MAX_INPUTS], y;
    int il[SLIM_MAX_INPUTS], yl;
    int64_t d[OX_MAXD];
    memcpy(d, v0->dim, sizeof d);
    d[axis] = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        ox_value *v = ox_arg(b, n, i);
        if (!v)
            return b->err->code;
        for (int k = 0; k < rank; k++)
            if (k != axis && v->dim[k] != d[k])
                return ox_fail(b, SLIM_ESHAPE, "input %zu does not match input 0 off the axis", i);
        d[axis] += v->dim[axis];
        slim_status st = ox_value_in(b, v, &l, &in[i], &il[i]);
        if (st != SLIM_OK)
            return st;
    }
    ox_kv kv = {"axis", ox_printf(b, "%d", ox_slim_axis(&l, axis))};
    slim_status st = ox_op(b, "concat", NULL, in, il, (int)n->n_input, &kv, 1, &y, &yl);
    if (st != SLIM_OK)
        return st;
    return ox_def(b, n->output[0], y, yl, &l, rank, d);
}

static slim_status map_pad(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_value *v = ox_arg(b, n, 0);
    if (!v)
        return b->err->code;
    int vi = (int)(v - b->vals), rank = v->rank, np;
    int64_t p[2 * OX_MAXD];
    double value = 0;
    slim_status st;
    if (b->opset < 11) {
        np = slim__ox_attr_ints(n, b->opset < 2 ? "paddings" : "pads", p, 2 * OX_MAXD);
        value = slim__ox_attr_float(n, "value", 0.0f);
    } else {
        if ((st = ox_host_ints(b, n, 1, p, 2 * OX_MAXD, &np)) != SLIM_OK ||
            (st = ox_host_scalar(b, n, 2, 0.0, &value)) != SLIM_OK)
            return st;
        if (slim__ox_has_input(n, 3))
            return ox_unsup(b, "the axes input (opset 18)");
    }
    if (np != 2 * rank)
        return ox_fail(b, SLIM_EINVAL, "%d pads for rank %d", np, rank);
    bool zero = true;
    for (int i = 0; i < np; i++) {
        if (p[i] < 0)
            return ox_unsup(b, "negative pads (cropping): slim's pad only grows");
        zero &= p[i] == 0;
    }
    char buf[16];
    const char *mode = slim__ox_attr_str(n, "mode", "constant", buf, sizeof buf);
    const char *smode = strcmp(mode, "constant") == 0  ? "CONSTANT"
                        : strcmp(mode, "reflect") == 0 ? "REFLECT"
                        : strcmp(mode, "edge") == 0    ? "EDGE"
                                                       : NULL;
    if (!smode)
        return ox_unsup(b, "pad mode '%s'", mode);
    if (zero && v->kind == OX_COMPUTED)
        return ox_alias(b, n->output[0], n->input[0]); /* the exporter's Pad of nothing */
    ox_layout l = ox_keep_layout(b, v);
    slim_tid x, y;
    int xl, yl;
    if ((st = ox_value_in(b, v, &l, &x, &xl)) != SLIM_OK)
        return st;
    v = &b->vals[vi];
    /* ONNX [b0, b1, ..., e0, e1, ...] -> slim [b0, e0, b1, e1, ...] per slim axis */
    int64_t sp[2 * SLIM_MAX_DIMS] = {0}, d[OX_MAXD];
    for (int i = 0; i < l.rank; i++)
        if (l.perm[i] >= 0) {
            sp[2 * i] = p[l.perm[i]];
            sp[2 * i + 1] = p[rank + l.perm[i]];
        }
    for (int i = 0; i < rank; i++)
        d[i] = v->dim[i] + p[i] + p[rank + i];
    ox_kv kv[3] = {{"paddings", NULL}, {"mode", smode}, {"constant_value", ox_float(b, value)}};
    char pb[256];
    size_t k = (size_t)snprintf(pb, sizeof pb, "[");
    for (int i = 0; i < 2 * l.rank && k < sizeof pb; i++)
        k += (size_t)snprintf(pb + k, sizeof pb - k, "%s%lld", i ? ", " : "", (long long)sp[i]);
    snprintf(pb + (k < sizeof pb ? k : sizeof pb - 1),
             sizeof pb - (k < sizeof pb ? k : sizeof pb - 1), "]");
    kv[0].val = ox_strdup(b, pb);
    if ((st = ox_op(b, "pad", NULL, &x, &xl, 1, kv, 3, &y, &yl)) != SLIM_OK)
        return st;
    return ox_def(b, n->output[0], y, yl, &l, rank, d);
}

/*
 * Reshape a computed value to ONNX dims out. Its axes are grouped (each
 * group of input axes holds the same elements as a group of output axes);
 * slim can reshape in its own order when each group's axes lie there in ONNX
 * order, next to each other (size-1 axes go anywhere). Otherwise the value is
 * transposed to such an order first.
 */
static slim_status reshape_value(ox_builder *b, ox_value *v, const int64_t *out, int q,
                                 const char *out_name)
{
    int vi = (int)(v - b->vals), r = v->rank;
    int64_t in[OX_MAXD];
    memcpy(in, v->dim, sizeof in);
    if (q > OX_MAXD || q > SLIM_MAX_DIMS)
        return ox_unsup(b, "a rank-%d result (slim handles up to %d)", q, SLIM_MAX_DIMS);
    if (slim__ox_numel(r, in) != slim__ox_numel(q, out) || slim__ox_numel(q, out) <= 0)
        return ox_fail(b, SLIM_ESHAPE, "cannot reshape %lld elements to %lld",
                       (long long)slim__ox_numel(r, in), (long long)slim__ox_numel(q, out));
    /* groups: gin[a] / gout[j] = the group of input axis a / output axis j */
    int gin[OX_MAXD], gout[OX_MAXD], ng = 0, i = 0, j = 0;
    while (i < r || j < q) {
        int64_t pi = 1, po = 1;
        bool any_in = false, any_out = false;
        while ((i < r || j < q) && !(any_in && any_out && pi == po)) {
            if (i < r && (pi <= po || j == q)) {
                pi *= in[i];
                gin[i++] = ng;
                any_in = true;
            } else if (j < q) {
                po *= out[j];
                gout[j++] = ng;
                any_out = true;
            } else {
                break;
            }
        }
        /* trailing size-1 axes join the group just closed */
        while (i < r && in[i] == 1 && !(j < q && out[j] == 1))
            gin[i++] = ng;
        ng++;
    }
    /* input axes in slim order, without units and size-1 axes */
    int order[OX_MAXD], no = 0;
    for (int s = 0; s < v->lay.rank; s++) {
        int a = v->lay.perm[s];
        if (a >= 0 && in[a] != 1)
            order[no++] = a;
    }
    /* in place when each group's axes are consecutive in slim order, ascending */
    bool ok = true;
    for (int k = 1; k < no && ok; k++)
        if (gin[order[k]] == gin[order[k - 1]] && order[k] < order[k - 1])
            ok = false;
    bool seen[OX_MAXD] = {false};
    for (int k = 0; k < no && ok; k++) {
        int g = gin[order[k]];
        if (seen[g] && (k == 0 || gin[order[k - 1]] != g))
            ok = false;
        seen[g] = true;
    }
    slim_tid x;
    int xl;
    slim_status st;
    if (!ok) {
        /* transpose to the groups in order of appearance, each in ONNX order */
        ox_layout want = {0};
        bool placed[OX_MAXD] = {false};
        for (int k = 0; k < no; k++) {
            int g = gin[order[k]];
            if (placed[g])
                continue;
            placed[g] = true;
            for (int a = 0; a < r; a++)
                if (gin[a] == g && in[a] != 1)
                    want.perm[want.rank++] = (int8_t)a;
        }
        for (int a = 0; a < r; a++)
            if (in[a] == 1)
                want.perm[want.rank++] = (int8_t)a;
        if ((st = ox_value_in(b, v, &want, &x, &xl)) != SLIM_OK)
            return st;
        v = &b->vals[vi];
        no = 0;
        for (int s = 0; s < want.rank; s++)
            if (in[want.perm[s]] != 1)
                order[no++] = want.perm[s];
    } else {
        x = v->tid;
        xl = v->layer;
    }
    /* the output's layout: its groups in the order their input axes have in
     * slim; a group of size-1 axes only goes just before the next group in
     * ONNX order (so a plain value stays plain) */
    ox_layout ol = {0};
    bool emitted[OX_MAXD + 1] = {false}, anchored[OX_MAXD + 1] = {false};
    for (int k = 0; k < no; k++)
        anchored[gin[order[k]]] = true;
    for (int k = 0; k <= no; k++) {
        int g = k < no ? gin[order[k]] : ng;
        if (g < ng && emitted[g])
            continue;
        int h = g;
        while (h > 0 && !anchored[h - 1] && !emitted[h - 1])
            h--;
        for (int e = h; e <= g && e < ng; e++) {
            if (emitted[e])
                continue;
            emitted[e] = true;
            for (int a2 = 0; a2 < q; a2++)
                if (gout[a2] == e)
                    ol.perm[ol.rank++] = (int8_t)a2;
        }
    }
    for (int g = 0; g < ng; g++)
        if (!emitted[g])
            for (int a2 = 0; a2 < q; a2++)
                if (gout[a2] == g)
                    ol.perm[ol.rank++] = (int8_t)a2;
    if (ol.rank != q)
        return ox_fail(b, SLIM_EINTERNAL, "reshape layout of rank %d for %d dims", ol.rank, q);
    slim_shape s = ox_slim_shape(&ol, out);
    slim_tensor_desc xd;
    slim_graph_tensor_info(b->g, x, &xd);
    if (!slim_shape_equal(&xd.shape, &s) &&
        (st = ox_reshape(b, x, xl, s.dim, s.rank, &x, &xl)) != SLIM_OK)
        return st;
    return ox_def(b, out_name, x, xl, &ol, q, out);
}

static slim_status reshape_host(ox_builder *b, ox_value *v, const int64_t *d, int q,
                                const char *out_name)
{
    slim__ox_tensor t;
    if (!slim__ox_tensor_copy(&t, &v->host))
        return ox_oom(b);
    if (slim__ox_numel(q, d) != t.numel) {
        slim__ox_tensor_fini(&t);
        return ox_fail(b, SLIM_ESHAPE, "cannot reshape %lld elements to %lld", (long long)t.numel,
                       (long long)slim__ox_numel(q, d));
    }
    t.rank = q;
    memcpy(t.dim, d, (size_t)q * sizeof *d);
    slim_status st = ox_def_host(b, out_name, &t, v->fed, v->initializer);
    slim__ox_tensor_fini(&t);
    return st;
}

/* Reshape value v to dims d (ONNX's 0 and -1 already resolved). */
static slim_status reshape_to(ox_builder *b, ox_value *v, const int64_t *d, int q,
                              const char *out_name)
{
    if (v->kind == OX_HOST && !v->fed)
        return reshape_host(b, v, d, q, out_name);
    if (v->kind == OX_HOST) {
        ox_layout pl = ox_plain(v->rank);
        slim_tid x;
        int xl;
        int vi = (int)(v - b->vals);
        slim_status st = ox_value_in(b, v, &pl, &x, &xl);
        if (st != SLIM_OK)
            return st;
        v = &b->vals[vi];
        if (q > SLIM_MAX_DIMS)
            return ox_unsup(b, "a rank-%d result (slim handles up to %d)", q, SLIM_MAX_DIMS);
        if ((st = ox_reshape(b, x, xl, d, q, &x, &xl)) != SLIM_OK)
            return st;
        ox_layout ql = ox_plain(q);
        return ox_def(b, out_name, x, xl, &ql, q, d);
    }
    return reshape_value(b, v, d, q, out_name);
}

static slim_status map_flatten(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_value *v = ox_arg(b, n, 0);
    if (!v)
        return b->err->code;
    int rank = v->rank;
    int64_t axis = slim__ox_attr_int(n, "axis", 1);
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis > rank)
        return ox_fail(b, SLIM_EINVAL, "axis out of range for rank %d", rank);
    int64_t d[2] = {1, 1};
    for (int i = 0; i < rank; i++)
        d[i < axis ? 0 : 1] *= v->dim[i];
    /* (N,C,H,W) channels-last into a Gemm with constant weights: no reshape,
     * the Gemm's fully_connected flattens NHWC itself, and permutes its weight
     * rows to that order */
    int c = ox_sole_consumer(b, n->output[0]);
    if (c >= 0 && v->kind == OX_COMPUTED && axis == 1 && rank == 4 &&
        ox_layout_eq(&v->lay, &(ox_layout){4, {0, 2, 3, 1}})) {
        const Onnx__NodeProto *g = b->model->graph->node[c];
        ox_value *w = slim__ox_has_input(g, 1) ? ox_find(b, g->input[1]) : NULL;
        if (strcmp(g->op_type, "Gemm") == 0 && slim__ox_has_input(g, 0) &&
            strcmp(g->input[0], n->output[0]) == 0 && slim__ox_attr_int(g, "transA", 0) == 0 && w &&
            ox_is_const(w) && w->host.f && w->rank == 2) {
            int vi = (int)(v - b->vals);
            ox_value copy = *v;
            ox_layout pl = ox_plain(2);
            slim_status st = ox_def(b, n->output[0], copy.tid, copy.layer, &pl, 2, d);
            if (st != SLIM_OK)
                return st;
            b->vals[b->n_vals - 1].flat_c = b->vals[vi].dim[1];
            return SLIM_OK;
        }
    }
    return reshape_to(b, v, d, 2, n->output[0]);
}

static slim_status map_reshape(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_value *v = ox_arg(b, n, 0);
    if (!v)
        return b->err->code;
    int vi = (int)(v - b->vals), ns;
    int64_t shape[OX_MAXD];
    slim_status st;
    if (b->opset < 5) {
        ns = slim__ox_attr_ints(n, "shape", shape, OX_MAXD);
        if (ns > OX_MAXD)
            return ox_unsup(b, "a rank-%d shape", ns);
    } else if ((st = ox_host_ints(b, n, 1, shape, OX_MAXD, &ns)) != SLIM_OK) {
        return st;
    }
    if (ns < 0)
        return ox_fail(b, SLIM_EINVAL, "no shape");
    v = &b->vals[vi];
    bool allowzero = slim__ox_attr_int(n, "allowzero", 0) != 0;
    int64_t known = 1, total = slim__ox_numel(v->rank, v->dim);
    int infer = -1;
    for (int i = 0; i < ns; i++) {
        if (shape[i] == 0 && !allowzero) {
            if (i >= v->rank)
                return ox_fail(b, SLIM_EINVAL, "shape[%d] = 0 copies a dim the input lacks", i);
            shape[i] = v->dim[i];
        }
        if (shape[i] == -1) {
            if (infer >= 0)
                return ox_fail(b, SLIM_EINVAL, "two -1 in the shape");
            infer = i;
            continue;
        }
        if (shape[i] < 0 || (shape[i] > 0 && known > SLIM__OX_MAX_ELEMS / shape[i]))
            return ox_fail(b, SLIM_EINVAL, "shape[%d] = %lld", i, (long long)shape[i]);
        known *= shape[i];
    }
    if (total == 0 || known == 0)
        return ox_unsup(b, "an empty tensor (slim has no empty tensors)");
    if (infer >= 0) {
        if (total % known)
            return ox_fail(b, SLIM_ESHAPE, "%lld elements do not reshape with a -1",
                           (long long)total);
        shape[infer] = total / known;
    }
    return reshape_to(b, v, shape, ns, n->output[0]);
}

/* Squeeze / Unsqueeze: a reshape (folded for constants). */
static slim_status squeeze(ox_builder *b, const Onnx__NodeProto *n, bool unsq)
{
    ox_value *v = ox_arg(b, n, 0);
    if (!v)
        return b->err->code;
    int vi = (int)(v - b->vals), rank = v->rank, na = 0;
    int64_t axes[OX_MAXD], nd[OX_MAXD];
    slim_status st;
    if (b->opset >= 13 && slim__ox_has_input(n, 1)) {
        if ((st = ox_host_ints(b, n, 1, axes, OX_MAXD, &na)) != SLIM_OK)
            return st;
    } else {
        na = slim__ox_attr_ints(n, "axes", axes, OX_MAXD);
        if (na > OX_MAXD)
            return ox_unsup(b, "%d axes", na);
        if (na < 0)
            na = 0;
    }
    v = &b->vals[vi];
    int nrank = unsq ? rank + na : 0;
    bool mark[OX_MAXD] = {false};
    if (unsq && nrank > OX_MAXD)
        return ox_unsup(b, "a rank-%d result", nrank);
    for (int i = 0; i < na; i++) {
        int ax = ox_norm_axis(axes[i], unsq ? nrank : rank);
        if (ax < 0 || mark[ax])
            return ox_fail(b, SLIM_EINVAL, "axis %lld out of range or repeated",
                           (long long)axes[i]);
        if (!unsq && v->dim[ax] != 1)
            return ox_fail(b, SLIM_EINVAL, "squeezing axis %d of size %lld", ax,
                           (long long)v->dim[ax]);
        mark[ax] = true;
    }
    if (unsq) {
        for (int i = 0, j = 0; i < nrank; i++)
            nd[i] = mark[i] ? 1 : v->dim[j++];
    } else {
        for (int i = 0; i < rank; i++)
            if (!(na ? mark[i] : v->dim[i] == 1))
                nd[nrank++] = v->dim[i];
    }
    return reshape_to(b, v, nd, nrank, n->output[0]);
}

static slim_status map_squeeze(ox_builder *b, const Onnx__NodeProto *n)
{
    return squeeze(b, n, false);
}

static slim_status map_unsqueeze(ox_builder *b, const Onnx__NodeProto *n)
{
    return squeeze(b, n, true);
}

/* Transpose: a new layout for computed values (no op), a copy for constants. */
static slim_status map_transpose(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_value *v = ox_arg(b, n, 0);
    if (!v)
        return b->err->code;
    int vi = (int)(v - b->vals), r = v->rank;
    int64_t perm[OX_MAXD];
    int np = slim__ox_attr_ints(n, "perm", perm, OX_MAXD);
    if (np < 0)
        for (np = 0; np < r; np++)
            perm[np] = r - 1 - np;
    if (np != r)
        return ox_fail(b, SLIM_EINVAL, "perm has %d values for rank %d", np, r);
    bool seen[OX_MAXD] = {false};
    int p[OX_MAXD], inv[OX_MAXD];
    for (int i = 0; i < r; i++) {
        if (perm[i] < 0 || perm[i] >= r || seen[perm[i]])
            return ox_fail(b, SLIM_EINVAL, "perm is not a permutation of 0..%d", r - 1);
        seen[perm[i]] = true;
        p[i] = (int)perm[i];
        inv[p[i]] = i;
    }
    if (v->kind == OX_HOST && !v->fed) {
        slim__ox_tensor o;
        if (!ox_host_transpose(&v->host, p, &o))
            return ox_oom(b);
        slim_status st = ox_def_host(b, n->output[0], &o, false, b->vals[vi].initializer);
        slim__ox_tensor_fini(&o);
        return st;
    }
    ox_layout l = ox_keep_layout(b, v);
    slim_tid x;
    int xl;
    slim_status st = ox_value_in(b, v, &l, &x, &xl);
    if (st != SLIM_OK)
        return st;
    v = &b->vals[vi];
    ox_layout nl = l;
    for (int s = 0; s < l.rank; s++)
        nl.perm[s] = (int8_t)(l.perm[s] >= 0 ? inv[l.perm[s]] : -1);
    int64_t d[OX_MAXD];
    for (int i = 0; i < r; i++)
        d[i] = v->dim[p[i]];
    return ox_def(b, n->output[0], x, xl, &nl, r, d);
}

slim_status ox_slice_window(ox_builder *b, const Onnx__NodeProto *n, int vi, int64_t *lo,
                            int64_t *step, int64_t *d)
{
    int ns, ne, na = -1, nst = -1;
    int64_t starts[OX_MAXD], ends[OX_MAXD], axes[OX_MAXD], steps[OX_MAXD];
    slim_status st;
    if (b->opset < 10) {
        ns = slim__ox_attr_ints(n, "starts", starts, OX_MAXD);
        ne = slim__ox_attr_ints(n, "ends", ends, OX_MAXD);
        na = slim__ox_attr_ints(n, "axes", axes, OX_MAXD);
    } else if ((st = ox_host_ints(b, n, 1, starts, OX_MAXD, &ns)) != SLIM_OK ||
               (st = ox_host_ints(b, n, 2, ends, OX_MAXD, &ne)) != SLIM_OK ||
               (st = ox_host_ints(b, n, 3, axes, OX_MAXD, &na)) != SLIM_OK ||
               (st = ox_host_ints(b, n, 4, steps, OX_MAXD, &nst)) != SLIM_OK) {
        return st;
    }
    const ox_value *v = &b->vals[vi];
    int r = v->rank;
    if (ns < 0 || ns != ne || ns > r || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
        return ox_fail(b, SLIM_EINVAL, "starts, ends, axes and steps of different lengths");
    bool seen[OX_MAXD] = {false};
    for (int i = 0; i < r; i++) {
        lo[i] = 0;
        step[i] = 1;
        d[i] = v->dim[i];
    }
    for (int i = 0; i < ns; i++) {
        int a = ox_norm_axis(na >= 0 ? axes[i] : i, r);
        int64_t s = nst >= 0 ? steps[i] : 1;
        if (a < 0 || seen[a] || s == 0 || s == INT64_MIN)
            return ox_fail(b, SLIM_EINVAL, "an axis out of range or repeated, or a zero step");
        seen[a] = true;
        /* ONNX's clamping: negative indices count from the end */
        int64_t dim = v->dim[a], s0 = starts[i], e0 = ends[i];
        if (s0 < 0)
            s0 += dim;
        if (e0 < 0)
            e0 += dim;
        if (s > 0) {
            s0 = s0 < 0 ? 0 : s0 > dim ? dim : s0;
            e0 = e0 < 0 ? 0 : e0 > dim ? dim : e0;
            d[a] = e0 > s0 ? (e0 - s0 - 1) / s + 1 : 0;
        } else {
            s0 = s0 < 0 ? -1 : s0 > dim - 1 ? dim - 1 : s0;
            e0 = e0 < -1 ? -1 : e0 > dim - 1 ? dim - 1 : e0;
            d[a] = s0 > e0 ? (s0 - e0 - 1) / -s + 1 : 0;
        }
        lo[a] = s0;
        step[a] = s;
    }
    return SLIM_OK;
}

/* Slice with step 1 of a computed value: slim's slice per slim axis. */
static slim_status map_slice(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_value *v = ox_arg(b, n, 0);
    if (!v)
        return b->err->code;
    int vi = (int)(v - b->vals), r = v->rank;
    int64_t lo[OX_MAXD], step[OX_MAXD], d[OX_MAXD];
    slim_status st = ox_slice_window(b, n, vi, lo, step, d);
    if (st != SLIM_OK)
        return st;
    v = &b->vals[vi];
    for (int i = 0; i < r; i++) {
        if (step[i] != 1)
            return ox_unsup(b, "a step of %lld (slim's slice takes step 1)", (long long)step[i]);
        if (d[i] == 0)
            return ox_unsup(b, "an empty slice (slim has no empty tensors)");
    }
    if (v->kind == OX_HOST && !v->fed)
        return ox_fail(b, SLIM_EINTERNAL, "a constant Slice reached the op");
    ox_layout l = ox_keep_layout(b, v);
    slim_tid x, y;
    int xl, yl;
    if ((st = ox_value_in(b, v, &l, &x, &xl)) != SLIM_OK)
        return st;
    int64_t sb[SLIM_MAX_DIMS], sz[SLIM_MAX_DIMS];
    for (int s = 0; s < l.rank; s++) {
        int a = l.perm[s];
        sb[s] = a >= 0 ? lo[a] : 0;
        /* -1 (to the end) on axes not sliced: the batch stays any size */
        sz[s] = a >= 0 && d[a] != v->dim[a] ? d[a] : -1;
    }
    ox_layer *ly = ox_layer_new(b, OXL_OP, "slice", ox_node_name(b, NULL));
    if (!ly)
        return ox_oom(b);
    ly->n_in = 1;
    ly->in[0] = xl;
    ox_kv_ints(b, ly, "begin", sb, l.rank);
    ox_kv_ints(b, ly, "size", sz, l.rank);
    yl = b->n_layers - 1;
    if ((st = ox_layer_op(b, ly, &x, &y)) != SLIM_OK)
        return st;
    return ox_def(b, n->output[0], y, yl, &l, r, d);
}

/* ReduceMean over axes of a computed value: slim's reduce_mean over the
 * slim axes they are (global_avg_pool's when they are H and W of NHWC). */
static slim_status map_reducemean(ox_builder *b, const Onnx__NodeProto *n)
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

static const struct {
    const char *op;
    ox_map_fn fn;
} ops[] = {
    {"Conv", ox_map_conv},
    {"MaxPool", ox_map_maxpool},
    {"AveragePool", ox_map_averagepool},
    {"GlobalAveragePool", ox_map_globalaveragepool},
    {"BatchNormalization", ox_map_batchnorm},
    {"LayerNormalization", ox_map_layernorm},
    {"LRN", ox_map_lrn},
    {"Gemm", ox_map_gemm},
    {"MatMul", ox_map_matmul},
    {"SoftmaxCrossEntropyLoss", ox_map_loss},
    {"NegativeLogLikelihoodLoss", ox_map_loss},
    {"Relu", map_relu},
    {"LeakyRelu", map_leakyrelu},
    {"Elu", map_elu},
    {"Sigmoid", map_sigmoid},
    {"Tanh", map_tanh},
    {"HardSigmoid", map_hardsigmoid},
    {"HardSwish", map_hardswish},
    {"Gelu", map_gelu},
    {"Clip", map_clip},
    {"Softmax", map_softmax},
    {"LogSoftmax", map_logsoftmax},
    {"Concat", map_concat},
    {"Add", map_add},
    {"Mul", map_mul},
    {"Sub", map_sub},
    {"Div", map_div},
    {"Neg", map_neg},
    {"Pad", map_pad},
    {"Flatten", map_flatten},
    {"Reshape", map_reshape},
    {"Squeeze", map_squeeze},
    {"Unsqueeze", map_unsqueeze},
    {"Transpose", map_transpose},
    {"Slice", map_slice},
    {"ReduceMean", map_reducemean},
    {"Dropout", map_dropout},
    {"Identity", map_identity},
    {"Constant", map_constant},
};

ox_map_fn ox_mapper(const char *op_type)
{
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (strcmp(ops[i].op, op_type) == 0)
            return ops[i].fn;
    return NULL;
}

slim_status ox_map_node(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_map_fn fn = ox_mapper(n->op_type);
    if (!fn)
        return ox_unsup(b, "ONNX op %s has no slim equivalent", n->op_type);
    return fn(b, n);
}
