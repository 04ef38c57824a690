/*
 * dsl/head.c - what a model gets after its layers: the logits (flattened to
 * (N, num_classes)), predictions, labels and accuracy, and for training the
 * loss: cross entropy, the weighted auxiliary cross entropy, and the weight
 * decay terms (TF-Slim's l2_regularizer, scale * sum(w^2) / 2 per weight).
 */
#include "dsl/dsl.h"

#include <stdio.h>
#include <string.h>

static slim_status add_simple(dsl *d, const dnode *at, const char *op, const char *name,
                              const slim_tid *in, int n, const char *k1, double v1, slim_tid *out)
{
    slim_attrs *a = NULL;
    if (k1) {
        a = slim_attrs_new();
        if (!a)
            return dsl_fail(d->err, at, SLIM_ENOMEM, "out of memory");
        const slim_op_desc *desc = slim_registry_find(d->reg, op);
        bool is_int = false;
        for (int i = 0; desc && i < desc->n_attrs; i++)
            if (!strcmp(desc->attrs[i].name, k1))
                is_int = desc->attrs[i].type == SLIM_ATTR_INT;
        if (is_int)
            slim_attrs_set_int(a, k1, (int64_t)v1);
        else
            slim_attrs_set_float(a, k1, v1);
    }
    slim_status st = dsl_add_node(d, at, op, name, in, n, a, out);
    slim_attrs_free(a);
    return st;
}

/* (N,K) or (N,1,1,K) -> a (N,K) tensor named name. Problems point at the
 * layer that made t when there is one. */
static slim_status flat_logits(dsl *d, const dnode *at, const char *what, slim_tid t,
                               const char *name, int64_t classes, slim_tid *out)
{
    dnode lpos;
    for (int i = d->n_layers - 1; i >= 0; i--)
        if (d->layers[i].output == t && d->layers[i].file) {
            lpos = (dnode){
                .file = d->layers[i].file, .line = d->layers[i].line, .col = d->layers[i].col};
            at = &lpos;
            break;
        }
    slim_tensor_desc td;
    slim_graph_tensor_info(d->g, t, &td);
    const slim_shape *s = &td.shape;
    char buf[128];
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < s->rank; i++)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%lld", i ? "," : "",
                                 (long long)s->dim[i]);
    bool ok = (s->rank == 2) || (s->rank == 4 && s->dim[1] == 1 && s->dim[2] == 1);
    if (!ok)
        return dsl_fail(d->err, at, SLIM_ESHAPE,
                        "found %s '%s' of shape (%s), expected (N, num_classes) or (N,1,1,"
                        "num_classes): is the image size right for this architecture?",
                        what, slim_graph_tensor_name(d->g, t), buf);
    if (s->dim[s->rank - 1] != classes)
        return dsl_fail(d->err, at, SLIM_ESHAPE,
                        "found %s '%s' with %lld outputs, expected num_classes = %lld (use "
                        "num_outputs: $num_classes)",
                        what, slim_graph_tensor_name(d->g, t), (long long)s->dim[s->rank - 1],
                        (long long)classes);
    return add_simple(d, at, "flatten", name, &t, 1, NULL, 0, out);
}

static slim_status sum(dsl *d, const dnode *at, const char *name, slim_tid *terms, int n,
                       slim_tid *out)
{
    /* add takes up to SLIM_MAX_INPUTS: a tree of partial sums */
    int level = 0;
    while (n > SLIM_MAX_INPUTS) {
        int m = 0;
        for (int i = 0; i < n; i += SLIM_MAX_INPUTS, m++) {
            int k = n - i < SLIM_MAX_INPUTS ? n - i : SLIM_MAX_INPUTS;
            const char *pn = dsl_printf(d->arena, "%s/part_%d_%d", name, level, m);
            if (!pn)
                return dsl_fail(d->err, at, SLIM_ENOMEM, "out of memory");
            if (k == 1)
                terms[m] = terms[i];
            else
                TRY(add_simple(d, at, "add", pn, terms + i, k, NULL, 0, &terms[m]));
        }
        n = m;
        level++;
    }
    if (n == 1) {
        *out = terms[0];
        return SLIM_OK;
    }
    return add_simple(d, at, "add", name, terms, n, NULL, 0, out);
}

static bool op_has_attr(dsl *d, const char *op, const char *attr)
{
    const slim_op_desc *desc = slim_registry_find(d->reg, op);
    for (int i = 0; desc && i < desc->n_attrs; i++)
        if (!strcmp(desc->attrs[i].name, attr))
            return true;
    return false;
}

slim_status dsl_head(dsl *d, const dnode *root, const char *scope, slim_tid images, slim_tid last,
                     int64_t classes)
{
    const dnode *h = dnode_get(root, "head");
    const dnode *hat = dnode_key(root, "layers");
    slim_tid logits_src = last, aux_src = -1;
    double aux_weight = 0.4;
    const dnode *lat = hat, *aat = NULL;
    if (h && !(h->kind == DN_SCALAR && !h->quoted && !h->str[0])) {
        if (h->kind != DN_MAP)
            return dsl_fail(d->err, h, SLIM_ETYPE,
                            "found %s for head:, expected a mapping (logits:, aux_logits:, "
                            "aux_weight:)",
                            dnode_kind_str(h));
        static const char *const keys[] = {"logits", "aux_logits", "aux_weight"};
        TRY(dsl_check_keys(d->err, h, keys, 3, "head:"));
        const dnode *l = dnode_get(h, "logits");
        if (l) {
            TRY(dsl_lookup(d, d->globals, scope, l, images, &logits_src));
            lat = l;
        }
        const dnode *al = dnode_get(h, "aux_logits");
        dval alv = {0};
        if (al)
            TRY(dsl_resolve(&d->ev, d->globals, al, &alv));
        if (al && alv.kind != DV_NULL) { /* null: no auxiliary head */
            TRY(dsl_lookup(d, d->globals, scope, al, images, &aux_src));
            aat = al;
        }
        const dnode *aw = dnode_get(h, "aux_weight");
        if (aw) {
            dval v;
            TRY(dsl_resolve(&d->ev, d->globals, aw, &v));
            if (!dval_is_number(&v) || dval_num(&v) < 0 || dval_num(&v) > 1e6)
                return dsl_fail(d->err, aw, SLIM_EINVAL,
                                "found %s for aux_weight, expected a number >= 0",
                                dval_str(d->arena, &v));
            aux_weight = dval_num(&v);
        }
    }
    const slim_model_opts *o = d->opts;
    if (o->set_aux_weight) /* the caller's (slimrun --aux_loss_weight) over the file's */
        aux_weight = o->aux_weight;
    slim_tid logits, pred, labels, acc, acc5;
    TRY(flat_logits(d, lat, "logits", logits_src, "logits", classes, &logits));
    TRY(add_simple(d, lat, "softmax", "predictions", &logits, 1, NULL, 0, &pred));
    slim_shape ls = {1, {o->batch_size}};
    slim_error ge = {0};
    if (slim_graph_input(d->g, "labels", SLIM_I32, &ls, &labels, &ge) != SLIM_OK)
        return dsl_fail(d->err, lat, ge.code, "%s", ge.msg);
    slim_tid pl[2] = {logits, labels};
    TRY(add_simple(d, lat, "in_top_k", "accuracy", pl, 2, "k", 1, &acc));
    TRY(slim_graph_mark_output(d->g, logits, d->err));
    TRY(slim_graph_mark_output(d->g, pred, d->err));
    TRY(slim_graph_mark_output(d->g, acc, d->err));
    if (classes >= 5) {
        TRY(add_simple(d, lat, "in_top_k", "accuracy_top5", pl, 2, "k", 5, &acc5));
        TRY(slim_graph_mark_output(d->g, acc5, d->err));
    }
    slim_tid aux = -1;
    if (aux_src >= 0)
        TRY(flat_logits(d, aat, "aux_logits", aux_src, "aux_logits", classes, &aux));
    d->m->info.has_aux = aux_src >= 0;
    d->m->info.aux_weight = (float)aux_weight;
    if (!o->training)
        return SLIM_OK;

    /* the losses: cross entropy (+ weighted aux) + weight decay */
    int n_reg = 0;
    for (int i = 0; i < d->n_params; i++)
        n_reg += d->params[i].decay > 0 && d->params[i].trainable;
    bool has_aux = aux >= 0 && aux_weight > 0;
    int n_terms = 1 + has_aux + (n_reg > 0);
    slim_tid terms[3], xent;
    const slim_op_desc *xd = slim_registry_find(d->reg, "softmax_cross_entropy");
    (void)xd;
    TRY(add_simple(d, lat, "softmax_cross_entropy", n_terms == 1 ? "total_loss" : "cross_entropy",
                   pl, 2, "label_smoothing", o->label_smoothing, &xent));
    int nt = 0;
    terms[nt++] = xent;
    if (has_aux) {
        slim_tid al[2] = {aux, labels}, ax, w, scaled;
        if (op_has_attr(d, "softmax_cross_entropy", "weight")) {
            slim_attrs *a = slim_attrs_new();
            if (!a)
                return dsl_fail(d->err, aat, SLIM_ENOMEM, "out of memory");
            slim_attrs_set_float(a, "label_smoothing", o->label_smoothing);
            slim_attrs_set_float(a, "weight", aux_weight);
            slim_status st =
                dsl_add_node(d, aat, "softmax_cross_entropy", "aux_loss", al, 2, a, &scaled);
            slim_attrs_free(a);
            TRY(st);
        } else {
            /* until the loss op takes a weight: times a constant scalar */
            TRY(add_simple(d, aat, "softmax_cross_entropy", "aux_cross_entropy", al, 2,
                           "label_smoothing", o->label_smoothing, &ax));
            slim_shape s0 = {0};
            slim_init ci = {.kind = SLIM_INIT_CONSTANT, .value = aux_weight};
            slim_param_opts po = {.flags = 0};
            slim_error pe = {0};
            if (slim_graph_param(d->g, "slim_const/aux_weight", &s0, &ci, &po, &w, &pe) != SLIM_OK)
                return dsl_fail(d->err, aat, pe.code, "%s", pe.msg);
            slim_tid mw[2] = {ax, w};
            TRY(add_simple(d, aat, "multiply", "aux_loss", mw, 2, NULL, 0, &scaled));
        }
        terms[nt++] = scaled;
    }
    if (n_reg > 0) {
        slim_tid *regs = dsl_alloc(d->arena, (size_t)n_reg * sizeof *regs);
        if (!regs)
            return dsl_fail(d->err, lat, SLIM_ENOMEM, "out of memory");
        int k = 0;
        for (int i = 0; i < d->n_params; i++) {
            const dsl_param *p = &d->params[i];
            if (!(p->decay > 0 && p->trainable))
                continue;
            const char *nm = dsl_printf(d->arena, "%s/l2_loss", slim_graph_tensor_name(d->g, p->t));
            if (!nm)
                return dsl_fail(d->err, lat, SLIM_ENOMEM, "out of memory");
            TRY(add_simple(d, lat, "l2_loss", nm, &p->t, 1, "scale", p->decay, &regs[k++]));
        }
        slim_tid reg;
        TRY(sum(d, lat, "regularization_loss", regs, n_reg, &reg));
        terms[nt++] = reg;
    }
    slim_tid total = xent;
    if (nt > 1)
        TRY(sum(d, lat, "total_loss", terms, nt, &total));
    return slim_graph_set_loss(d->g, total, d->err);
}
