/*
 * interop/tf_graph.c - a frozen GraphDef read, checked and written as an
 * ONNX model (see tf_graph.h); the ops themselves are tf_graph_ops.c, what
 * they read of the GraphDef tf_graph_node.c, what they write tf_graph_onnx.c.
 *
 * Checks before anything is built: the bytes parse as a GraphDef; every
 * node has a name (unique) and an op; every input names a node; the output
 * is found; the nodes computing it contain no cycle, one Placeholder and
 * only ops the translator knows (the others listed together). Const tensors
 * are decoded when first read: their bytes must match dtype and shape.
 */
#include "interop/tf_graph_build.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "interop/onnx.h"
#include "interop/onnx_proto.h"

/* ---- the graph ---------------------------------------------------------------------- */

/* Node inputs: "name", "name:k", "^name" (control, dropped). */
static slim_status link_inputs(slim__tfg *t)
{
    for (int k = 0; k < t->n; k++) {
        const Tensorflow__NodeDef *nd = t->nodes[k].nd;
        t->cur = k;
        if (nd->n_input > 4096)
            return tg_fail(t, SLIM_EUNSUPPORTED, "%zu inputs", nd->n_input);
        t->nodes[k].in = tg_alloc(t, (nd->n_input + 1) * sizeof(tg_in));
        if (!t->nodes[k].in)
            return tg_oom(t);
        for (size_t i = 0; i < nd->n_input; i++) {
            const char *s = nd->input[i];
            if (!s || s[0] == '^')
                continue;
            char name[1024];
            int port = 0;
            snprintf(name, sizeof name, "%s", s);
            char *colon = strrchr(name, ':');
            if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1) &&
                strlen(colon + 1) < 6) {
                port = atoi(colon + 1);
                *colon = '\0';
            }
            int src = slim__names_get(&t->by_name, name);
            if (src < 0) {
                char a[240];
                return tg_fail(t, SLIM_EINVAL, "input %zu '%s' is not a node of the graph", i,
                               slim__printable(s, a, sizeof a));
            }
            t->nodes[k].in[t->nodes[k].n_in++] = (tg_in){src, port};
        }
    }
    t->cur = -1;
    return SLIM_OK;
}

/* The nodes the output needs, in an order where inputs come first; a cycle
 * is an error. Depth-first without recursion (a graph may be deep). */
static slim_status order_nodes(slim__tfg *t, int **order, int *n_order)
{
    int *state = tg_alloc(t, (size_t)t->n * sizeof(int)); /* 0 new, 1 open, 2 done */
    int *stack = tg_alloc(t, (size_t)t->n * sizeof(int));
    int *next = tg_alloc(t, (size_t)t->n * sizeof(int)); /* the next input to visit */
    *order = tg_alloc(t, (size_t)t->n * sizeof(int));
    if (!state || !stack || !next || !*order)
        return tg_oom(t);
    int sp = 0, n = 0;
    stack[sp++] = t->output;
    state[t->output] = 1;
    while (sp) {
        int k = stack[sp - 1];
        if (next[k] < t->nodes[k].n_in) {
            int j = t->nodes[k].in[next[k]++].node;
            if (state[j] == 1) {
                t->cur = j;
                return tg_fail(t, SLIM_EINVAL, "the graph has a cycle through this node");
            }
            if (state[j] == 0) {
                state[j] = 1;
                stack[sp++] = j;
            }
            continue;
        }
        state[k] = 2;
        t->nodes[k].kept = true;
        (*order)[n++] = k;
        sp--;
    }
    *n_order = n;
    for (int i = 0; i < n; i++) {
        const tg_node *nd = &t->nodes[(*order)[i]];
        for (int j = 0; j < nd->n_in; j++) {
            tg_node *src = &t->nodes[nd->in[j].node];
            src->n_consumers++;
            src->consumer = nd->in[j].port == 0 ? (*order)[i] : -1;
        }
    }
    return SLIM_OK;
}

/* The output node: named, or the one node nothing reads; then what comes
 * after the logits (ArgMax, Softmax and their reshapes) is dropped. */
static slim_status find_output(slim__tfg *t, const slim__tfg_opts *o)
{
    int out = -1;
    if (o && o->output) {
        out = slim__names_get(&t->by_name, o->output);
        if (out < 0) {
            char a[240];
            return tg_fail(t, SLIM_ENOTFOUND, "no node named '%s' (--output_node)",
                           slim__printable(o->output, a, sizeof a));
        }
    } else {
        bool *read = tg_alloc(t, (size_t)t->n);
        if (!read)
            return tg_oom(t);
        for (int k = 0; k < t->n; k++)
            for (int i = 0; i < t->nodes[k].n_in; i++)
                read[t->nodes[k].in[i].node] = true;
        char list[600] = "";
        size_t len = 0;
        int ends = 0;
        for (int k = 0; k < t->n; k++) {
            const char *op = t->nodes[k].nd->op;
            if (read[k] || !strcmp(op, "Const") || !strcmp(op, "Placeholder") ||
                !strcmp(op, "NoOp") || !strcmp(op, "Assert"))
                continue;
            char a[240], b[80];
            if (len < sizeof list - 100)
                len +=
                    (size_t)snprintf(list + len, sizeof list - len, "%s'%s' (%s)", ends ? ", " : "",
                                     slim__printable(t->nodes[k].nd->name, a, 100),
                                     slim__printable(op, b, sizeof b));
            ends++;
            out = k;
        }
        if (ends == 0)
            return tg_fail(t, SLIM_EINVAL,
                           "no node computes an output (every node is read by "
                           "another, or is a Const or Placeholder)");
        if (ends > 1)
            return tg_fail(t, SLIM_EINVAL,
                           "%d nodes end the graph: %s; name the output with --output_node=NAME",
                           ends, list);
    }
    /* TF-Slim's Predictions: Reshape(Softmax(Reshape(logits))); an ArgMax */
    char note[200] = "";
    size_t len = 0;
    for (int hops = 0; hops < 8; hops++) {
        const tg_node *n = &t->nodes[out];
        const char *op = n->nd->op;
        bool drop = !strcmp(op, "ArgMax") || !strcmp(op, "Softmax") || tg_is_identity(op) ||
                    (!strcmp(op, "Reshape") && n->n_in == 2 &&
                     !strcmp(t->nodes[n->in[0].node].nd->op, "Softmax"));
        if (!drop || n->n_in < 1)
            break;
        char a[120];
        if (!tg_is_identity(op) && len < sizeof note - 160)
            len += (size_t)snprintf(note + len, sizeof note - len, "%s%s '%s'", len ? ", " : "", op,
                                    slim__printable(n->nd->name, a, sizeof a));
        out = n->in[0].node;
    }
    snprintf(t->note, sizeof t->note, "%s", note);
    t->output = out;
    return SLIM_OK;
}

/* The one Placeholder the output needs, and its (N,H,W,C). A placeholder of
 * unknown shape read by one Reshape to a 4-D constant shape (a flat input
 * made an image, as LeNet's) takes that shape. */
static slim_status find_input(slim__tfg *t, const int *order, int n_order)
{
    int in = -1, count = 0;
    char list[600] = "";
    size_t len = 0;
    for (int i = 0; i < n_order; i++) {
        int k = order[i];
        if (strcmp(t->nodes[k].nd->op, "Placeholder") != 0)
            continue;
        char a[240];
        if (len < sizeof list - 120)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s'%s'", count ? ", " : "",
                                    slim__printable(t->nodes[k].nd->name, a, 100));
        count++;
        in = k;
    }
    if (count == 0)
        return tg_fail(t, SLIM_EUNSUPPORTED, "the output needs no Placeholder: nothing to feed");
    if (count > 1)
        return tg_fail(t, SLIM_EUNSUPPORTED,
                       "the output needs %d Placeholders (%s): an image classifier takes one",
                       count, list);
    t->input = in;
    t->cur = in;
    const Tensorflow__NodeDef *nd = t->nodes[in].nd;
    const Tensorflow__AttrValue *dt = tg_attr(nd, "dtype");
    if (dt && dt->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TYPE &&
        dt->type != TENSORFLOW__DATA_TYPE__DT_FLOAT)
        return tg_fail(t, SLIM_EUNSUPPORTED,
                       "its dtype is %d, not float: feed the graph float images (slim's input)",
                       (int)dt->type);
    const Tensorflow__AttrValue *sh = tg_attr(nd, "shape");
    const Tensorflow__TensorShapeProto *sp =
        sh && sh->value_case == TENSORFLOW__ATTR_VALUE__VALUE_SHAPE ? sh->shape : NULL;
    int64_t d[4] = {-1, -1, -1, -1};
    bool known = sp && !sp->unknown_rank && sp->n_dim == 4;
    if (known) {
        for (int i = 0; i < 4; i++)
            d[i] = sp->dim[i]->size;
    } else {
        int r = tg_sole_consumer(t, in);
        int c = r >= 0 && !strcmp(t->nodes[r].nd->op, "Reshape") ? tg_const_in(t, r, 1) : -1;
        const tg_tensor *v;
        if (c >= 0) {
            int save = t->cur;
            t->cur = c;
            slim_status st = tg_const_value(t, c, &v);
            t->cur = save;
            if (st)
                return st;
            if (v->i && v->numel == 4) {
                memcpy(d, v->i, sizeof d);
                known = true;
            }
        }
        if (!known)
            return tg_fail(t, SLIM_EUNSUPPORTED,
                           "its shape is %s: slim needs images (N, H, W, C) of a fixed size "
                           "(export with the shape set)",
                           sp && !sp->unknown_rank ? "not 4-D" : "unknown");
    }
    for (int i = 1; i < 4; i++)
        if (d[i] <= 0 || d[i] > 1 << 16)
            return tg_fail(t, SLIM_EUNSUPPORTED,
                           "dimension %d of its shape is %lld: slim needs a fixed (N, H, W, C)", i,
                           (long long)d[i]);
    if (d[1] != d[2])
        return tg_fail(t, SLIM_EUNSUPPORTED,
                       "its images are %lldx%lld: slim's models take square ones", (long long)d[1],
                       (long long)d[2]);
    memcpy(t->in_dim, d, sizeof d);
    t->cur = -1;
    return SLIM_OK;
}

/* The scope every weight (a float Const of rank >= 1 the kept nodes read)
 * shares: TF-Slim's model scope. */
static void find_root(slim__tfg *t)
{
    char root[128] = "";
    bool any = false;
    for (int k = 0; k < t->n; k++) {
        const tg_node *n = &t->nodes[k];
        if (!n->kept || !n->n_consumers || strcmp(n->nd->op, "Const") != 0)
            continue;
        const tg_tensor *v;
        slim_error e = {0}, *save = t->err;
        t->err = &e; /* a malformed one fails where it is read */
        slim_status st = tg_const_value(t, k, &v);
        t->err = save;
        if (st)
            continue;
        if (!v->f || v->rank < 1 || v->numel < 2)
            continue; /* shapes, axes, scalars */
        const char *nm = n->nd->name, *slash = strchr(nm, '/');
        size_t len = slash ? (size_t)(slash - nm) : 0;
        if (!len || len >= sizeof root) {
            root[0] = '\0';
            any = true;
            break;
        }
        if (!any) {
            memcpy(root, nm, len);
            root[len] = '\0';
        } else if (strlen(root) != len || strncmp(root, nm, len) != 0) {
            root[0] = '\0';
        }
        any = true;
    }
    bool ok = root[0] && (isalpha((unsigned char)root[0]) || root[0] == '_');
    for (const char *p = root; ok && *p; p++)
        ok = isalnum((unsigned char)*p) || *p == '_' || *p == '-';
    t->root = ok ? tg_strdup(t, root) : NULL;
}

static slim_status build_model(slim__tfg *t)
{
    Onnx__ModelProto *m = &t->model;
    onnx__model_proto__init(m);
    onnx__graph_proto__init(&t->graph);
    onnx__operator_set_id_proto__init(&t->opset);
    t->opset.has_version = true;
    t->opset.version = TG_OPSET;
    t->opsets[0] = &t->opset;
    m->has_ir_version = true;
    m->ir_version = 8;
    m->n_opset_import = 1;
    m->opset_import = t->opsets;
    m->producer_name = "slim (TensorFlow GraphDef)";
    m->graph = &t->graph;
    /* the input: (N,H,W,C) */
    onnx__value_info_proto__init(&t->vin);
    onnx__type_proto__init(&t->vtype);
    onnx__type_proto__tensor__init(&t->vtensor);
    onnx__tensor_shape_proto__init(&t->vshape);
    for (int i = 0; i < 4; i++) {
        Onnx__TensorShapeProto__Dimension *d = &t->vdims[i];
        onnx__tensor_shape_proto__dimension__init(d);
        if (t->in_dim[i] > 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = t->in_dim[i];
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = "N";
        }
        t->vdimp[i] = d;
    }
    t->vshape.n_dim = 4;
    t->vshape.dim = t->vdimp;
    t->vtensor.has_elem_type = true;
    t->vtensor.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t->vtensor.shape = &t->vshape;
    t->vtype.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    t->vtype.tensor_type = &t->vtensor;
    t->vin.name = t->nodes[t->input].nd->name;
    t->vin.type = &t->vtype;
    t->vins[0] = &t->vin;
    onnx__value_info_proto__init(&t->vout);
    t->vout.name = (char *)tg_value_name(t, t->output, 0);
    t->vouts[0] = &t->vout;
    Onnx__GraphProto *g = &t->graph;
    g->name = "tensorflow";
    g->n_input = 1;
    g->input = t->vins;
    g->n_output = 1;
    g->output = t->vouts;
    g->n_node = t->n_on;
    g->node = t->on;
    g->n_initializer = t->n_inits;
    g->initializer = t->inits;
    return t->oom ? tg_oom(t) : SLIM_OK;
}

slim_status slim__tfg_translate(const char *file, const uint8_t *buf, size_t len,
                                const slim__tfg_opts *o, slim__tfg **out, slim_error *err)
{
    *out = NULL;
    slim__tfg *t = calloc(1, sizeof *t);
    if (!t)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    slim_error local = {0};
    t->err = err ? err : &local;
    t->file = file ? file : "graph.pb";
    t->cur = -1;
    t->decode_budget = 4 * (int64_t)len + ((int64_t)1 << 22);
    slim_status st = SLIM_OK;
    t->g = tensorflow__graph_def__unpack(NULL, len, buf);
    if (!t->g)
        st = slim__error(t->err, SLIM_ECORRUPT,
                         "%s: not a TensorFlow GraphDef (the protobuf does not parse)", t->file);
    else if (t->g->n_node == 0)
        st = slim__error(t->err, SLIM_ECORRUPT, "%s: a GraphDef without nodes (is it one?)",
                         t->file);
    else if (t->g->n_node > (size_t)1 << 22)
        st = slim__error(t->err, SLIM_EUNSUPPORTED, "%s: %zu nodes", t->file, t->g->n_node);
    if (!st) {
        t->n = (int)t->g->n_node;
        t->nodes = tg_alloc(t, (size_t)t->n * sizeof *t->nodes);
        if (!t->nodes || !slim__names_reserve(&t->by_name, t->n))
            st = tg_oom(t);
    }
    for (int k = 0; !st && k < t->n; k++) {
        const Tensorflow__NodeDef *nd = t->g->node[k];
        t->nodes[k].nd = nd;
        if (!nd->name || !nd->name[0] || !nd->op || !nd->op[0])
            st = slim__error(t->err, SLIM_ECORRUPT, "%s: node %d has no %s", t->file, k,
                             !nd->name || !nd->name[0] ? "name" : "op");
        else if (slim__names_get(&t->by_name, nd->name) >= 0) {
            char a[240];
            st = slim__error(t->err, SLIM_ECORRUPT, "%s: two nodes are named '%s'", t->file,
                             slim__printable(nd->name, a, sizeof a));
        } else
            slim__names_put(&t->by_name, nd->name, k);
    }
    if (!st)
        st = link_inputs(t);
    if (!st)
        st = find_output(t, o);
    int *order = NULL, n_order = 0;
    if (!st)
        st = order_nodes(t, &order, &n_order);
    /* every op the output needs, known; the others listed together */
    if (!st) {
        char list[800] = "";
        size_t l = 0;
        int bad = 0;
        bool vars = false;
        for (int i = 0; i < n_order; i++) {
            const Tensorflow__NodeDef *nd = t->nodes[order[i]].nd;
            if (tg_known_op(nd->op))
                continue;
            vars = vars || !strcmp(nd->op, "VariableV2") || !strcmp(nd->op, "Variable") ||
                   !strcmp(nd->op, "VarHandleOp") || !strcmp(nd->op, "ReadVariableOp");
            char a[240], b[80];
            if (l < sizeof list - 200)
                l += (size_t)snprintf(list + l, sizeof list - l, "\n  node '%s': %s",
                                      slim__printable(nd->name, a, 160),
                                      slim__printable(nd->op, b, sizeof b));
            else if (l < sizeof list - 10)
                l += (size_t)snprintf(list + l, sizeof list - l, "\n  ...");
            bad++;
        }
        if (bad)
            st = slim__error(t->err, SLIM_EUNSUPPORTED,
                             "%s: %d node%s of TensorFlow ops slim does not import:%s%s", t->file,
                             bad, bad == 1 ? "" : "s", list,
                             vars ? "\nThe graph holds variables: freeze it first (TensorFlow's "
                                    "freeze_graph makes them Consts)"
                                  : "");
    }
    if (!st)
        st = find_input(t, order, n_order);
    if (!st)
        find_root(t);
    for (int i = 0; !st && i < n_order; i++) {
        int k = order[i];
        if (t->nodes[k].done)
            continue;
        t->cur = k;
        st = tg_translate_node(t, k);
        if (!st && t->oom)
            st = tg_oom(t);
    }
    t->cur = -1;
    if (!st)
        st = build_model(t);
    if (st) {
        slim__tfg_free(t);
        return st;
    }
    t->err = NULL;
    *out = t;
    return SLIM_OK;
}

void slim__tfg_free(slim__tfg *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_mem; i++)
        free(t->mem[i]);
    free(t->mem);
    slim__names_fini(&t->by_name);
    slim__names_fini(&t->onames);
    if (t->g)
        tensorflow__graph_def__free_unpacked(t->g, NULL);
    free(t);
}

const Onnx__ModelProto *slim__tfg_model(const slim__tfg *t)
{
    return &t->model;
}

const char *slim__tfg_root(const slim__tfg *t)
{
    return t->root;
}

const char *slim__tfg_note(const slim__tfg *t)
{
    return t->note;
}

bool slim__tfg_is_graph_path(const char *path)
{
    size_t l = strlen(path);
    return l > 3 && !strcasecmp(path + l - 3, ".pb");
}

/* ---- as a model ----------------------------------------------------------------- */

slim_status slim__tfg_model_load(slim_registry *reg, const char *path, const char *name,
                                 const slim__tfg_opts *o, const slim_model_opts *mo,
                                 slim_model **out, char **yaml_out, slim_error *err)
{
    *out = NULL;
    if (yaml_out)
        *yaml_out = NULL;
    size_t len;
    uint8_t *buf = slim__ox_read_file(path, SLIM__OX_MAX_FILE, &len, err);
    if (!buf)
        return err && err->code ? err->code : SLIM_EIO;
    slim__tfg *t = NULL;
    slim_status st = slim__tfg_translate(path, buf, len, o, &t, err);
    free(buf); /* protobuf-c copied what it keeps */
    for (int i = 0; st == SLIM_OK && i < mo->n_plugins; i++)
        st = slim_registry_load_plugin(reg, mo->plugins[i], err);
    if (st == SLIM_OK) {
        /* the root scope: --name, else the weights' shared scope, else the file's name */
        char root[128], base[1024];
        if (!name && t->root)
            name = t->root;
        if (!name) {
            snprintf(base, sizeof base, "%s", path);
            if (slim__tfg_is_graph_path(base))
                base[strlen(base) - 3] = '\0';
            name = base;
        }
        slim__onnx_model_name(name, root, sizeof root);
        slim__onnx_opts oo = {.reg = reg, .root = root, .model = true, .input_nhwc = true};
        st = slim__onnx_model_build(&oo, slim__tfg_model(t), path, mo, out, yaml_out, err);
        if (o && o->note && o->note_size)
            snprintf(o->note, o->note_size, "%s", t->note);
    }
    slim__tfg_free(t);
    return st;
}
