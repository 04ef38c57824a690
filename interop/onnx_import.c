/*
 * interop/onnx_import.c - the import: an ONNX graph node by node into slim.
 *
 * First every node is checked against what slim can map (its own ops,
 * exporter idioms, host folding, ops plugins declared), and all the ones it
 * cannot are reported in one error. Then initializers become host values,
 * graph inputs slim inputs (model mode: "images", channels-last) or host
 * values with their data (the conformance runner), and each node in order is
 * either part of an idiom, folded on the host, or mapped by its op's
 * function (onnx_ops_*.c).
 */
#include "interop/onnx_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* Op types that only ever fold on the host (shape arithmetic): known to the
 * scan, an error at the node when their inputs are not constants. */
static const char *const fold_only[] = {
    "Shape", "Size",   "Gather", "Cast", "ConstantOfShape", "Range", "Sub", "Div", "Equal",
    "Where", "Expand", "Floor",  "Ceil", "Constant",        "Sqrt",  "Pow"};

static bool known_op(ox_builder *b, const Onnx__NodeProto *n)
{
    bool default_domain = !n->domain || !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0;
    char qualified[256];
    snprintf(qualified, sizeof qualified, "%s:%s", n->domain ? n->domain : "", n->op_type);
    if (slim_registry_onnx_op(b->reg, default_domain ? n->op_type : qualified))
        return true;
    if (!default_domain)
        return false;
    if (ox_mapper(n->op_type))
        return true;
    for (size_t i = 0; i < sizeof fold_only / sizeof *fold_only; i++)
        if (strcmp(fold_only[i], n->op_type) == 0)
            return true;
    return false;
}

static int64_t domain_opset(const Onnx__ModelProto *m, const char *domain)
{
    if (!domain || !domain[0] || strcmp(domain, "ai.onnx") == 0)
        return slim__ox_opset(m);
    for (size_t k = 0; k < m->n_opset_import; k++)
        if (m->opset_import[k]->domain && strcmp(m->opset_import[k]->domain, domain) == 0)
            return m->opset_import[k]->has_version ? m->opset_import[k]->version : 1;
    return 1;
}

/* Every node slim cannot map, in one error. */
static slim_status scan(ox_builder *b)
{
    const Onnx__GraphProto *g = b->model->graph;
    bool *covered = calloc(g->n_node + 1, sizeof *covered);
    if (!covered)
        return ox_oom(b);
    int nodes[64];
    for (size_t k = 0; k < g->n_node; k++) {
        int cnt = slim__ox_idiom_match(b, (int)k, nodes, 64);
        for (int i = 0; i < cnt; i++)
            covered[nodes[i]] = true;
    }
    char list[800] = "";
    size_t len = 0;
    int bad = 0;
    for (size_t k = 0; k < g->n_node; k++) {
        const Onnx__NodeProto *n = g->node[k];
        if (covered[k] || known_op(b, n))
            continue;
        bad++;
        if (len < sizeof list - 200)
            len += (size_t)snprintf(list + len, sizeof list - len,
                                    "\n  node '%s': %s (domain %s, opset %lld)",
                                    n->name ? n->name : "", n->op_type,
                                    n->domain && n->domain[0] ? n->domain : "ai.onnx",
                                    (long long)domain_opset(b->model, n->domain));
        else if (len < sizeof list - 40)
            len += (size_t)snprintf(list + len, sizeof list - len, "\n  ...");
    }
    free(covered);
    if (!bad)
        return SLIM_OK;
    return slim__error(b->err, SLIM_EUNSUPPORTED,
                       "%s: %d node%s of ONNX ops slim does not implement:%s\nAn op plugin can "
                       "implement them: see \"Writing an op plugin\" in README.md (a plugin "
                       "declares the ONNX op type its op implements)",
                       b->file, bad, bad == 1 ? "" : "s", list);
}

static slim_status build_uses(ox_builder *b)
{
    const Onnx__GraphProto *g = b->model->graph;
    size_t total = g->n_input + g->n_initializer;
    for (size_t k = 0; k < g->n_node; k++)
        total += g->node[k]->n_output + g->node[k]->n_input;
    if (total > (size_t)1 << 26)
        return ox_fail(b, SLIM_EUNSUPPORTED, "the graph has too many values");
    b->uses = calloc(total + 1, sizeof *b->uses);
    if (!b->uses || !slim__names_reserve(&b->use_names, (int)total + 1))
        return ox_oom(b);
    b->done = calloc(g->n_node + 1, sizeof *b->done);
    if (!b->done)
        return ox_oom(b);
    for (size_t k = 0; k < g->n_node; k++) {
        const Onnx__NodeProto *n = g->node[k];
        for (size_t i = 0; i < n->n_output; i++) {
            if (!n->output[i][0])
                continue;
            int u = slim__names_get(&b->use_names, n->output[i]);
            if (u < 0) {
                u = b->n_uses++;
                b->uses[u] = (ox_use){.producer = (int)k, .first_consumer = -1};
                slim__names_put(&b->use_names, n->output[i], u);
            } else {
                b->uses[u].producer = (int)k;
            }
        }
        for (size_t i = 0; i < n->n_input; i++) {
            if (!n->input[i][0])
                continue;
            int u = slim__names_get(&b->use_names, n->input[i]);
            if (u < 0) {
                u = b->n_uses++;
                b->uses[u] = (ox_use){.producer = -1, .first_consumer = -1};
                slim__names_put(&b->use_names, n->input[i], u);
            }
            /* a node reading a value twice (Mul(x, x)) counts twice */
            if (b->uses[u].first_consumer < 0)
                b->uses[u].first_consumer = (int)k;
            b->uses[u].n_consumers++;
        }
    }
    for (size_t k = 0; k < g->n_output; k++) {
        int u = g->output[k]->name ? slim__names_get(&b->use_names, g->output[k]->name) : -1;
        if (u >= 0)
            b->uses[u].graph_output = true;
    }
    return SLIM_OK;
}

static bool is_initializer(const Onnx__GraphProto *g, const char *name)
{
    for (size_t k = 0; k < g->n_initializer; k++)
        if (g->initializer[k]->name && strcmp(g->initializer[k]->name, name) == 0)
            return true;
    return false;
}

/* The model's input (N,C,H,W) as images (N,H,W,C). */
/* Whether every node reading value name (dims sh) takes it from (N,H,W,C) to
 * (N,C,H,W): a Transpose, or with one channel a Reshape to (N,1,H,W). That is
 * an NHWC input, as slim exports with --input_layout=NHWC (and tf2onnx writes). */
static bool to_nchw_only(ox_builder *b, const char *name, const Onnx__TensorShapeProto *sh)
{
    const ox_use *u = ox_uses(b, name);
    if (!u || u->n_consumers < 1 || u->graph_output || sh->n_dim != 4)
        return false;
    int64_t d[4];
    for (int i = 0; i < 4; i++)
        d[i] = sh->dim[i]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE
                   ? sh->dim[i]->dim_value
                   : -1;
    const Onnx__GraphProto *g = b->model->graph;
    int seen = 0;
    for (size_t k = (size_t)u->first_consumer; k < g->n_node; k++) {
        const Onnx__NodeProto *n = g->node[k];
        if (n->n_input < 1 || !n->input[0] || strcmp(n->input[0], name))
            continue;
        int64_t p[4];
        const ox_value *s = n->n_input == 2 && n->input[1] ? ox_find(b, n->input[1]) : NULL;
        bool ok = !strcmp(n->op_type, "Transpose") && n->n_input == 1 &&
                  slim__ox_attr_ints(n, "perm", p, 4) == 4 && p[0] == 0 && p[1] == 3 && p[2] == 1 &&
                  p[3] == 2;
        ok |= !strcmp(n->op_type, "Reshape") && d[3] == 1 && d[1] > 0 && d[2] > 0 && s &&
              s->kind == OX_HOST && s->host.i && s->host.numel == 4 && s->host.i[1] == 1 &&
              s->host.i[2] == d[1] && s->host.i[3] == d[2];
        if (!ok)
            return false;
        seen++;
    }
    return seen == u->n_consumers;
}

static slim_status model_input(ox_builder *b, const Onnx__ValueInfoProto *vi)
{
    const Onnx__TypeProto *tp = vi->type;
    const Onnx__TypeProto__Tensor *tt =
        tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? tp->tensor_type : NULL;
    const char *name = vi->name;
    if (!tt || !tt->shape)
        return ox_fail(b, SLIM_EUNSUPPORTED, "graph input '%s' has no tensor shape", name);
    if (tt->has_elem_type && tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return ox_fail(b, SLIM_EUNSUPPORTED, "graph input '%s' is %s, slim's images are float",
                       name, slim__ox_elem_name(tt->elem_type));
    const Onnx__TensorShapeProto *sh = tt->shape;
    bool nhwc = b->o->input_nhwc || to_nchw_only(b, name, tt->shape);
    b->input_nhwc = nhwc;
    if (sh->n_dim != 4)
        return ox_fail(b, SLIM_EUNSUPPORTED,
                       "graph input '%s' has rank %zu; an image classifier takes (N,%s)", name,
                       sh->n_dim, nhwc ? "H,W,C" : "C,H,W");
    int64_t d[4];
    for (int i = 0; i < 4; i++) {
        const Onnx__TensorShapeProto__Dimension *dm = sh->dim[i];
        d[i] = dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE
                   ? dm->dim_value
                   : -1;
        if (i > 0 && (d[i] <= 0 || d[i] > 1 << 20))
            return ox_fail(b, SLIM_EUNSUPPORTED,
                           "graph input '%s': dimension %d is not a fixed size (export with a "
                           "fixed channel count and image size)",
                           name, i);
    }
    int hi = nhwc ? 1 : 2, ci = nhwc ? 3 : 1; /* where H (W after it) and C are */
    if (d[hi] != d[hi + 1])
        return ox_fail(b, SLIM_EUNSUPPORTED,
                       "graph input '%s' is %lldx%lld: slim's models take square images", name,
                       (long long)d[hi], (long long)d[hi + 1]);
    /* a symbolic batch, or one of 1, is built at 2: at 1 the batch axis would
     * look like any size-1 axis, which reshapes and transposes may move (the
     * model file is batch-agnostic either way; a Reshape that baked the
     * file's batch of 1 in takes the 2, map_reshape) */
    int64_t n = b->o->batch_size > 0 ? b->o->batch_size : d[0] > 1 && d[0] <= 4096 ? d[0] : 2;
    b->file_batch = d[0];
    d[0] = n;
    b->batch = n;
    b->channels = d[ci];
    b->image_size = d[hi];
    slim_shape s = slim_shape_make(4, (int64_t[]){n, d[hi], d[hi + 1], d[ci]});
    slim_tid t;
    slim_error e = {0};
    if (slim_graph_input(b->g, "images", SLIM_F32, &s, &t, &e) != SLIM_OK)
        return ox_fail(b, e.code, "%s", e.msg);
    ox_layout lay = nhwc ? ox_plain(4) : ox_cl(4);
    return ox_def(b, name, t, OX_IMAGES, &lay, 4, d);
}

static slim_status inputs(ox_builder *b)
{
    const Onnx__GraphProto *g = b->model->graph;
    int k_in = 0;
    for (size_t k = 0; k < g->n_input; k++) {
        const char *name = g->input[k]->name;
        if (!name || !name[0])
            return ox_fail(b, SLIM_ECORRUPT, "graph input %zu has no name", k);
        if (is_initializer(g, name))
            continue;
        if (b->o->model) {
            if (k_in++ > 0)
                return ox_fail(b, SLIM_EUNSUPPORTED,
                               "a second graph input '%s': an image classifier takes one", name);
            slim_status st = model_input(b, g->input[k]);
            if (st != SLIM_OK)
                return st;
            continue;
        }
        if (k_in >= b->o->n_inputs)
            return ox_fail(b, SLIM_EINVAL, "graph input '%s' has no value (input_%d.pb)", name,
                           k_in);
        slim_status st = ox_def_host(b, name, &b->o->inputs[k_in++], true, false);
        if (st != SLIM_OK)
            return st;
    }
    if (b->o->model && k_in == 0)
        return ox_fail(b, SLIM_EUNSUPPORTED, "the graph has no input besides its initializers");
    return SLIM_OK;
}

static slim_status outputs(ox_builder *b)
{
    const Onnx__GraphProto *g = b->model->graph;
    slim_error e = {0};
    if (g->n_output == 0)
        return ox_fail(b, SLIM_EINVAL, "the graph has no output");
    b->out_tids = malloc(g->n_output * sizeof *b->out_tids);
    if (!b->out_tids)
        return ox_oom(b);
    for (size_t k = 0; k < g->n_output; k++)
        b->out_tids[k] = -1;
    for (size_t k = 0; k < g->n_output; k++) {
        const char *name = g->output[k]->name ? g->output[k]->name : "";
        ox_value *v = ox_find(b, name);
        if (!v)
            return ox_fail(b, SLIM_EINVAL, "graph output '%s' is never produced", name);
        if (b->o->model) {
            if (k > 0)
                continue; /* a classifier's first output is its logits */
            if (v->kind != OX_COMPUTED || v->rank != 2 || v->flat_c)
                return ox_fail(b, SLIM_EUNSUPPORTED,
                               "graph output '%s' should be the logits (N, classes), found a "
                               "rank-%d %s value",
                               name, v->rank, v->kind == OX_COMPUTED ? "computed" : "constant");
            slim_tid t;
            int layer;
            ox_layout pl = ox_plain(2);
            slim_status st = ox_value_in(b, v, &pl, &t, &layer);
            if (st != SLIM_OK)
                return st;
            if (layer < 0)
                return ox_fail(b, SLIM_EUNSUPPORTED, "graph output '%s' is the input", name);
            b->logits_layer = layer;
            b->num_classes = v->dim[1];
            if (slim_graph_mark_output(b->g, t, &e) != SLIM_OK)
                return ox_fail(b, e.code, "%s", e.msg);
            continue;
        }
        if (v->kind == OX_HOST)
            return ox_unsup(b, "graph output '%s' is a constant (folded on the host)", name);
        if (v->kind == OX_COMPUTED) {
            /* in ONNX's order, by slim's own transposes and reshapes */
            slim_tid t;
            ox_layout pl = ox_plain(v->rank);
            slim_tensor_desc td;
            slim_graph_tensor_info(b->g, v->tid, &td);
            slim_shape want = ox_slim_shape(&pl, v->dim);
            slim_status st;
            if (v->rank > SLIM_MAX_DIMS)
                return ox_unsup(b, "graph output '%s' of rank %d", name, v->rank);
            (void)want;
            if (ox_layout_eq(&v->lay, &pl) || slim_shape_numel(&td.shape) == 1)
                t = v->tid; /* the same elements in the same order */
            else if ((st = ox_value_in(b, v, &pl, &t, NULL)) != SLIM_OK)
                return st;
            b->out_tids[k] = t;
            if (slim_graph_mark_output(b->g, t, &e) != SLIM_OK)
                return ox_fail(b, e.code, "graph output '%s': %s", name, e.msg);
        }
    }
    if (b->training) {
        /* slim_graph_compile refuses training without a loss, and ONNX's
         * training-mode ops have none: minimize a dummy l2_loss of the first
         * output (over the graph inputs, fed as trainable parameters). There
         * is no optimizer, so the backward pass changes nothing compared. */
        ox_value *v = ox_find(b, g->output[0]->name ? g->output[0]->name : "");
        if (!v || v->kind != OX_COMPUTED)
            return ox_unsup(b, "a training-mode graph without a computed first output");
        slim_tid loss;
        slim_status st = ox_op(b, "l2_loss", "dummy_loss", &v->tid, NULL, 1, NULL, 0, &loss, NULL);
        if (st != SLIM_OK)
            return st;
        if (slim_graph_set_loss(b->g, loss, &e) != SLIM_OK)
            return ox_fail(b, e.code, "%s", e.msg);
        snprintf(b->note, sizeof b->note, "training compile, dummy l2_loss");
    }
    return SLIM_OK;
}

/* A node of an op a plugin declared: its inputs in their layouts, ONNX
 * attributes of the same name as the op's. */
static slim_status map_plugin(ox_builder *b, const Onnx__NodeProto *n, const char *op)
{
    const slim_op_desc *d = slim_registry_find(b->reg, op);
    if (!d)
        return ox_unsup(b, "the plugin op '%s' declared for it is not registered", op);
    if (n->n_input < 1 || n->n_input > SLIM_MAX_INPUTS)
        return ox_unsup(b, "%zu inputs", n->n_input);
    ox_value *v0 = ox_arg(b, n, 0);
    if (!v0)
        return b->err->code;
    ox_layout lay = ox_keep_layout(b, v0);
    slim_tid in[SLIM_MAX_INPUTS];
    int il[SLIM_MAX_INPUTS];
    for (size_t i = 0; i < n->n_input; i++) {
        ox_value *v = ox_arg(b, n, i);
        if (!v)
            return b->err->code;
        ox_layout l = v->rank == v0->rank ? lay : ox_plain(v->rank);
        slim_status st = ox_value_in(b, v, &l, &in[i], &il[i]);
        if (st != SLIM_OK)
            return st;
    }
    ox_kv kv[OX_MAX_KV];
    int nkv = 0;
    for (size_t k = 0; k < n->n_attribute && nkv < OX_MAX_KV; k++) {
        const Onnx__AttributeProto *a = n->attribute[k];
        const slim_attr_spec *s = NULL;
        for (int j = 0; j < d->n_attrs && a->name; j++)
            if (strcmp(d->attrs[j].name, a->name) == 0)
                s = &d->attrs[j];
        if (!s)
            return ox_unsup(b, "attribute '%s' is not one of op %s's", a->name ? a->name : "", op);
        const char *val = NULL;
        if (a->has_f)
            val = ox_float(b, (double)a->f);
        else if (a->has_i)
            val = ox_printf(b, "%lld", (long long)a->i);
        else if (a->has_s)
            val = ox_printf(b, "%.*s", (int)(a->s.len < 200 ? a->s.len : 200), a->s.data);
        else
            return ox_unsup(b, "attribute '%s' is not a number or text", s->name);
        kv[nkv++] = (ox_kv){s->name, val};
    }
    slim_tid y;
    int layer;
    slim_status st = ox_op(b, op, NULL, in, il, (int)n->n_input, kv, nkv, &y, &layer);
    if (st != SLIM_OK)
        return st;
    if (!slim__ox_has_output(n, 0))
        return SLIM_OK;
    slim_tensor_desc yd;
    slim_graph_tensor_info(b->g, y, &yd);
    /* the output keeps the first input's layout when it has its slim shape */
    slim_shape xs = ox_slim_shape(&lay, v0->dim);
    if (slim_shape_equal(&xs, &yd.shape))
        return ox_def(b, n->output[0], y, layer, &lay, v0->rank, v0->dim);
    ox_layout pl = ox_plain(yd.shape.rank);
    return ox_def(b, n->output[0], y, layer, &pl, yd.shape.rank, yd.shape.dim);
}

static slim_status one_node(ox_builder *b, int k)
{
    const Onnx__NodeProto *n = b->model->graph->node[k];
    b->node = n;
    b->node_index = k;
    if (n->n_output == 0 || !n->output[0][0])
        return ox_fail(b, SLIM_ECORRUPT, "the node has no output");
    bool default_domain = !n->domain || !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0;
    char qualified[256];
    snprintf(qualified, sizeof qualified, "%s:%s", n->domain ? n->domain : "", n->op_type);
    const char *plugin_op = slim_registry_onnx_op(b->reg, default_domain ? n->op_type : qualified);
    if (plugin_op)
        return map_plugin(b, n, plugin_op);
    if (!default_domain)
        return ox_unsup(b, "op %s of domain '%s'", n->op_type, n->domain);
    slim_status st = slim__ox_idiom(b, k);
    if (st != SLIM_ENOTFOUND)
        return st;
    st = ox_fold(b, n);
    if (st != SLIM_ENOTFOUND)
        return st;
    return ox_map_node(b, n);
}

slim_status slim__onnx_import(const slim__onnx_opts *o, const Onnx__ModelProto *m, const char *file,
                              slim__onnx_importer **out, slim_error *err)
{
    *out = NULL;
    ox_builder *b = calloc(1, sizeof *b);
    if (!b)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    slim_error local = {0};
    b->err = err ? err : &local;
    b->o = o;
    b->reg = o->reg;
    b->model = m;
    b->file = file ? file : "model.onnx";
    b->root = o->root ? o->root : "onnx";
    b->opset = slim__ox_opset(m);
    b->logits_layer = -1;
    slim_status st = slim_graph_new(o->reg, &b->g, b->err);
    if (st == SLIM_OK)
        st = build_uses(b);
    if (st == SLIM_OK)
        st = scan(b);
    if (st == SLIM_OK)
        ox_count_paths(b);
    const Onnx__GraphProto *g = m->graph;
    for (size_t k = 0; st == SLIM_OK && k < g->n_initializer; k++) {
        const Onnx__TensorProto *tp = g->initializer[k];
        if (!tp->name || !tp->name[0]) {
            st = ox_fail(b, SLIM_ECORRUPT, "initializer %zu has no name", k);
            break;
        }
        char what[600];
        snprintf(what, sizeof what, "%s: initializer '%.400s'", b->file, tp->name);
        slim__ox_tensor t;
        st = slim__ox_tensor_from_proto(tp, what, &t, b->err);
        if (st == SLIM_OK) {
            st = ox_def_host(b, tp->name, &t, false, true);
            slim__ox_tensor_fini(&t);
        }
    }
    if (st == SLIM_OK)
        st = inputs(b);
    for (size_t k = 0; st == SLIM_OK && k < g->n_node; k++)
        if (!b->done[k])
            st = one_node(b, (int)k);
    b->node = NULL;
    if (st == SLIM_OK)
        st = outputs(b);
    if (st != SLIM_OK) {
        slim__onnx_import_free(b);
        return st;
    }
    b->err = NULL;
    *out = b;
    return SLIM_OK;
}

void slim__onnx_import_free(slim__onnx_importer *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->n_vals; i++)
        slim__ox_tensor_fini(&b->vals[i].host);
    for (int i = 0; i < b->n_feeds; i++)
        free(b->feeds[i].data);
    for (int i = 0; i < b->n_strs; i++)
        free(b->strs[i]);
    free(b->strs);
    free(b->vals);
    free(b->feeds);
    free(b->layers);
    free(b->uses);
    free(b->done);
    free(b->out_tids);
    slim__names_fini(&b->val_names);
    slim__names_fini(&b->use_names);
    slim__names_fini(&b->layer_names);
    slim__names_fini(&b->path_counts);
    slim_graph_free(b->g);
    free(b);
}

slim_graph *slim__onnx_import_graph(const slim__onnx_importer *imp)
{
    return imp ? imp->g : NULL;
}

const float *slim__onnx_param_data(const slim__onnx_importer *b, const char *name,
                                   const slim_shape *shape)
{
    for (int i = 0; i < b->n_feeds; i++) {
        const ox_feed *f = &b->feeds[i];
        if (f->is_param && f->dtype == SLIM_F32 && strcmp(f->name, name) == 0)
            return slim_shape_equal(&f->shape, shape) ? f->data : NULL;
    }
    return NULL;
}
