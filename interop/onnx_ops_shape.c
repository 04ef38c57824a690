/*
 * interop/onnx_ops_shape.c - ONNX's shape ops as slim layers: Concat, Pad,
 * Flatten, Reshape, Squeeze, Unsqueeze, Transpose and Slice.
 *
 * Concat, Pad and Slice map their axes to slim's; Transpose only changes the
 * layout; Reshape (and Flatten, Squeeze, Unsqueeze) reshapes on slim's side
 * when the axes it merges and splits lie in order there, and transposes
 * first otherwise.
 */
#include "interop/onnx_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

slim_status ox_map_concat(ox_builder *b, const Onnx__NodeProto *n)
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

slim_status ox_map_pad(ox_builder *b, const Onnx__NodeProto *n)
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

slim_status ox_map_flatten(ox_builder *b, const Onnx__NodeProto *n)
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

slim_status ox_map_reshape(ox_builder *b, const Onnx__NodeProto *n)
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
    /* the exporter's batch baked in (PyTorch's channel shuffle at batch 1):
     * the batch slim builds with */
    if (b->o->model && b->file_batch > 0 && b->file_batch != b->batch && ns >= 1 &&
        shape[0] == b->file_batch && v->kind == OX_COMPUTED && v->rank >= 1 &&
        v->dim[0] == b->batch)
        shape[0] = b->batch;
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

slim_status ox_map_squeeze(ox_builder *b, const Onnx__NodeProto *n)
{
    return squeeze(b, n, false);
}

slim_status ox_map_unsqueeze(ox_builder *b, const Onnx__NodeProto *n)
{
    return squeeze(b, n, true);
}

/* Transpose: a new layout for computed values (no op), a copy for constants. */
slim_status ox_map_transpose(ox_builder *b, const Onnx__NodeProto *n)
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
slim_status ox_map_slice(ox_builder *b, const Onnx__NodeProto *n)
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
