/*
 * interop/onnx_ops_loss.c - SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss.
 *
 * These appear in ONNX's training graphs (and its conformance cases), not in
 * a classifier to import: a model file refuses them (the trainer adds the
 * loss), a graph built directly takes them. Scores (N,C,d...) are fed as rows
 * (N*d..., C). Unweighted mean/sum SCE is slim's softmax_cross_entropy.
 * Everything else (class weights, reduction none, NLL) is gather-free: the
 * labels, known before the run, become a one-hot mask M[r, y_r] =
 * -weight[y_r] (0 for ignored rows); the loss is sum_c M * log_prob per row
 * (matmul with a ones column), then summed or averaged over rows (matmul
 * with a column of 1 or 1/sum-of-weights).
 */
#include "interop/onnx_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* (N, C, d...) held as (N, d..., C): the rows' layout. */
static ox_layout rows_layout(int xr)
{
    ox_layout cl = {.rank = xr};
    cl.perm[0] = 0;
    for (int i = 2; i < xr; i++)
        cl.perm[i - 1] = (int8_t)i;
    cl.perm[xr - 1] = 1;
    return cl;
}

/* A (rows, 1) column of `value`: matmul with it sums a row. */
static slim_status column(ox_builder *b, int64_t rows, float value, slim_tid *out, int *layer)
{
    float *v = malloc((size_t)rows * sizeof(float));
    if (!v)
        return ox_oom(b);
    for (int64_t i = 0; i < rows; i++)
        v[i] = value;
    slim_shape s = slim_shape_make(2, (int64_t[]){rows, 1});
    slim_status st = ox_const(b, "column", &s, v, out, layer);
    free(v);
    return st;
}

/* A mask as a constant. */
static slim_status host_feed(ox_builder *b, const char *name, const slim_shape *s,
                             const float *data, slim_tid *out, int *layer)
{
    int64_t d[SLIM_MAX_DIMS];
    memcpy(d, s->dim, sizeof d);
    slim__ox_tensor t;
    if (!slim__ox_tensor_alloc(&t, true, s->rank, d))
        return ox_oom(b);
    memcpy(t.f, data, (size_t)t.numel * sizeof(float));
    slim_status st = ox_def_host(b, name, &t, false, false);
    slim__ox_tensor_fini(&t);
    if (st != SLIM_OK)
        return st;
    ox_layout pl = ox_plain(s->rank);
    return ox_value_in(b, &b->vals[b->n_vals - 1], &pl, out, layer);
}

slim_status ox_map_loss(ox_builder *b, const Onnx__NodeProto *n)
{
    if (b->o->model)
        return ox_unsup(b, "a loss in a model to import (the trainer adds slim's own)");
    bool sce = strcmp(n->op_type, "SoftmaxCrossEntropyLoss") == 0;
    ox_value *xv = ox_arg(b, n, 0), *lv = ox_arg(b, n, 1);
    if (!xv || !lv)
        return b->err->code;
    int xi = (int)(xv - b->vals), xr = xv->rank;
    int64_t xd[OX_MAXD];
    memcpy(xd, xv->dim, sizeof xd);
    if (xr < 2)
        return ox_fail(b, SLIM_EINVAL, "scores need rank >= 2");
    if (lv->kind != OX_HOST || !lv->host.i)
        return ox_unsup(b, "labels that are not integer data known before the run");
    slim__ox_tensor lt;
    if (!slim__ox_tensor_copy(&lt, &lv->host))
        return ox_oom(b);
    float *w = NULL;
    slim_status st = SLIM_OK;
    float *mask = NULL, *rows = NULL;
    int64_t *labels = NULL;
    if (slim__ox_has_input(n, 2)) {
        ox_value *wv = ox_arg(b, n, 2);
        if (!wv) {
            st = b->err->code;
            goto done;
        }
        if (wv->kind != OX_HOST || !wv->host.f || wv->host.numel != xd[1]) {
            st = ox_unsup(b, "class weights that are not f32 data of C values known before "
                             "the run");
            goto done;
        }
        if (!(w = malloc((size_t)xd[1] * sizeof *w))) {
            st = ox_oom(b);
            goto done;
        }
        memcpy(w, wv->host.f, (size_t)xd[1] * sizeof *w);
    }
    if ((st = ox_no_outputs_from(b, n, sce ? 2 : 1, "extra outputs")) != SLIM_OK)
        goto done;
    char buf[16];
    const char *red = slim__ox_attr_str(n, "reduction", "mean", buf, sizeof(buf));
    bool none = strcmp(red, "none") == 0, mean = strcmp(red, "mean") == 0;
    if (!none && !mean && strcmp(red, "sum") != 0) {
        st = ox_fail(b, SLIM_EINVAL, "unknown reduction '%s'", red);
        goto done;
    }
    bool has_ii = slim__ox_attr(n, "ignore_index") != NULL;
    int64_t ii = slim__ox_attr_int(n, "ignore_index", 0);
    int64_t N = xd[0], C = xd[1], D = 1;
    for (int i = 2; i < xr; i++)
        D *= xd[i];
    int64_t R = N * D;
    if (lt.numel != R) {
        st =
            ox_fail(b, SLIM_ESHAPE, "%lld labels for %lld rows", (long long)lt.numel, (long long)R);
        goto done;
    }
    int64_t n_ignored = 0;
    double denom = 0;
    for (int64_t i = 0; i < R; i++) {
        int64_t y = lt.i[i];
        if (has_ii && y == ii) {
            n_ignored++;
            continue;
        }
        if (y < 0 || y >= C) {
            st = ox_unsup(b, "label %lld out of [0, %lld)", (long long)y, (long long)C);
            goto done;
        }
        denom += w ? w[y] : 1.0;
    }

    slim_tid x, lp = -1, loss;
    int xl, lpl = -1, lossl;
    xv = &b->vals[xi];
    if (xv->kind == OX_HOST) {
        if (!xv->host.f) {
            st = ox_unsup(b, "scores are %s data", slim__ox_elem_name(xv->host.elem));
            goto done;
        }
        if (!(rows = malloc((size_t)(R * C) * sizeof(float)))) {
            st = ox_oom(b);
            goto done;
        }
        ox_nchw_to_nhwc(xv->host.f, rows, N, C, D);
        slim_shape s = slim_shape_make(2, (int64_t[]){R, C});
        /* scores fed as rows: a trainable input when the case trains */
        slim__ox_tensor t;
        if (!slim__ox_tensor_alloc(&t, true, 2, s.dim)) {
            st = ox_oom(b);
            goto done;
        }
        memcpy(t.f, rows, (size_t)(R * C) * sizeof(float));
        const char *nm = ox_printf(b, "%s@rows", xv->name);
        st = nm ? ox_def_host(b, nm, &t, xv->fed, false) : ox_oom(b);
        slim__ox_tensor_fini(&t);
        ox_layout pl = ox_plain(2);
        if (st == SLIM_OK)
            st = ox_value_in(b, &b->vals[b->n_vals - 1], &pl, &x, &xl);
    } else if (xr == 2) {
        ox_layout pl = ox_plain(2);
        st = ox_value_in(b, xv, &pl, &x, &xl);
    } else if (xr <= SLIM_MAX_DIMS) {
        /* (N, C, d...) computed: channels last, then rows (N*d..., C) */
        ox_layout cl = rows_layout(xr);
        int64_t rs[2] = {R, C};
        st = ox_value_in(b, xv, &cl, &x, &xl);
        if (st == SLIM_OK)
            st = ox_reshape(b, x, xl, rs, 2, &x, &xl);
    } else {
        st = ox_unsup(b, "rank-%d scores (slim handles up to %d)", xr, SLIM_MAX_DIMS);
    }
    if (st != SLIM_OK)
        goto done;

    bool native = sce && !w && !none;
    if (sce && (!native || slim__ox_has_output(n, 1))) {
        ox_kv kv = {"axis", "-1"};
        if ((st = ox_op(b, "log_softmax", NULL, &x, &xl, 1, &kv, 1, &lp, &lpl)) != SLIM_OK)
            goto done;
    }
    if (native) {
        /* slim averages over all R rows and counts a row whose label is out
         * of [0, C) as zero: ignored rows get label -1, and the mean is
         * rescaled to ONNX's (over the rows not ignored) or to a sum */
        if (mean && n_ignored == R) {
            st = ox_unsup(b, "every label is ignored (the ONNX mean is 0/0)");
            goto done;
        }
        if (!(labels = malloc((size_t)R * sizeof *labels))) {
            st = ox_oom(b);
            goto done;
        }
        for (int64_t i = 0; i < R; i++)
            labels[i] = has_ii && lt.i[i] == ii ? -1 : lt.i[i];
        slim_tid in[2] = {x, -1};
        int il[2] = {xl, -1};
        slim_shape s = slim_shape_make(1, &R);
        const char *nm = ox_printf(b, "%s@rows", n->input[1]);
        if (!nm || (st = ox_feed_labels(b, nm, &s, labels, &in[1])) != SLIM_OK ||
            (st = ox_op(b, "softmax_cross_entropy", NULL, in, il, 2, NULL, 0, &loss, &lossl)) !=
                SLIM_OK) {
            st = nm ? st : ox_oom(b);
            goto done;
        }
        float scale = mean ? (float)((double)R / (double)(R - n_ignored)) : (float)R;
        if (scale != 1.0f) {
            slim_shape one = slim_shape_make(1, (int64_t[]){1});
            slim_tid m[2] = {loss, -1};
            int ml[2] = {lossl, -1};
            if ((st = ox_const(b, "scale", &one, &scale, &m[1], &ml[1])) != SLIM_OK ||
                (st = ox_op(b, "multiply", NULL, m, ml, 2, NULL, 0, &loss, &lossl)) != SLIM_OK)
                goto done;
        }
        if (n_ignored)
            snprintf(b->note, sizeof(b->note), "ignored rows relabelled out of range");
    } else {
        if (mean && denom == 0) {
            st = ox_unsup(b, "every label is ignored (the ONNX mean is 0/0)");
            goto done;
        }
        if (!(mask = calloc((size_t)(R * C), sizeof(float)))) {
            st = ox_oom(b);
            goto done;
        }
        for (int64_t i = 0; i < R; i++) {
            int64_t y = lt.i[i];
            if (!(has_ii && y == ii))
                mask[i * C + y] = -(w ? w[y] : 1.0f);
        }
        slim_shape ms = slim_shape_make(2, (int64_t[]){R, C});
        slim_tid m[2] = {sce ? lp : x, -1}, prod, col, mm[2];
        int ml[2] = {sce ? lpl : xl, -1}, prodl, coll, mml[2];
        const char *nm = ox_printf(b, "%s@onehot", n->input[1]);
        if (!nm || (st = host_feed(b, nm, &ms, mask, &m[1], &ml[1])) != SLIM_OK ||
            (st = ox_op(b, "multiply", NULL, m, ml, 2, NULL, 0, &prod, &prodl)) != SLIM_OK) {
            st = nm ? st : ox_oom(b);
            goto done;
        }
        if (none) {
            if (xr - 1 > SLIM_MAX_DIMS) {
                st = ox_unsup(b, "a rank-%d loss (slim handles up to %d)", xr - 1, SLIM_MAX_DIMS);
                goto done;
            }
            int64_t ld[OX_MAXD] = {N};
            memcpy(ld + 1, xd + 2, (size_t)(xr - 2) * sizeof(int64_t));
            if ((st = column(b, C, 1.0f, &col, &coll)) != SLIM_OK)
                goto done;
            mm[0] = prod;
            mm[1] = col;
            mml[0] = prodl;
            mml[1] = coll;
            if ((st = ox_op(b, "matmul", NULL, mm, mml, 2, NULL, 0, &loss, &lossl)) != SLIM_OK ||
                (st = ox_reshape(b, loss, lossl, ld, xr - 1, &loss, &lossl)) != SLIM_OK)
                goto done;
        } else {
            int64_t flat[2] = {1, R * C};
            if ((st = ox_reshape(b, prod, prodl, flat, 2, &mm[0], &mml[0])) != SLIM_OK ||
                (st = column(b, R * C, mean ? (float)(1.0 / denom) : 1.0f, &mm[1], &mml[1])) !=
                    SLIM_OK ||
                (st = ox_op(b, "matmul", NULL, mm, mml, 2, NULL, 0, &loss, &lossl)) != SLIM_OK)
                goto done;
        }
        snprintf(b->note, sizeof(b->note), "%sone-hot mask", sce ? "log_softmax + " : "");
    }
    {
        int lrank = none ? xr - 1 : 0;
        int64_t ld[OX_MAXD] = {N};
        if (none)
            memcpy(ld + 1, xd + 2, (size_t)(xr - 2) * sizeof(int64_t));
        slim_tensor_desc td;
        slim_graph_tensor_info(b->g, loss, &td);
        ox_layout ll = {.rank = td.shape.rank};
        for (int i = 0; i < ll.rank; i++)
            ll.perm[i] = (int8_t)(i < lrank ? i : -1);
        if ((st = ox_def(b, n->output[0], loss, lossl, &ll, lrank, ld)) != SLIM_OK)
            goto done;
        if (sce && slim__ox_has_output(n, 1)) {
            /* log_prob rows (R, C) are (N, d..., C): channels-last for rank 3/4 */
            if (xr == 2) {
                ox_layout pl = ox_plain(2);
                st = ox_def(b, n->output[1], lp, lpl, &pl, 2, xd);
            } else if (xr <= SLIM_MAX_DIMS) {
                /* rows (R, C) are (N, d..., C): channels last */
                ox_layout cl = rows_layout(xr);
                slim_shape s = ox_slim_shape(&cl, xd);
                if ((st = ox_reshape(b, lp, lpl, s.dim, s.rank, &lp, &lpl)) == SLIM_OK)
                    st = ox_def(b, n->output[1], lp, lpl, &cl, xr, xd);
            } else {
                st = ox_unsup(b, "log_prob of rank %d", xr);
            }
        }
    }
done:
    slim__ox_tensor_fini(&lt);
    free(w);
    free(mask);
    free(rows);
    free(labels);
    return st;
}
