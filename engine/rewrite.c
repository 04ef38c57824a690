/* engine/rewrite.c - the rewrite pass: inference fusion over the node table.
 * A conv2d takes in the batch_norm, residual add and relu/relu6 nodes that
 * consume its output alone (one step, no tensor between); then depthwise-
 * separable blocks become one conv2d_chain step. */
#include "engine/compile.h"
#include "engine/error.h"
#include "engine/registry.h"
#include "ops/act.h" /* the activations a fused conv2d applies */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fz {
    slim__build *B;
    slim_graph *g;
    slim_error *err;
    /* per node: the tensor a conv2d writes in place of its output, the
     * batch_norm node it folds in (-1: none), the activation (ACT_*) and the
     * residual tensor (-1: none) */
    int *fuse_out, *fuse_bn, *fuse_act, *fuse_res;
    bool *gone, *fused; /* per tensor: no buffer; written by a fused conv2d */
    /* per node, a pointwise conv2d that ends a chain (conv2d_chain): the
     * depthwise conv2d before it and the pointwise one before that (-1: none) */
    int *chain_d, *chain_a;
    const slim_op_desc *chain_op;
} fz;

#define NEEDED(f, n) ((f)->B->nodes[n].live)

static bool is_op(const slim__node *nd, const char *name)
{
    return strcmp(nd->d->name, name) == 0;
}

/* The node's activation attribute (ACT_NONE when it has none). */
static int node_act(const slim__node *nd)
{
    const slim__attr_value *v = slim__attrs_get(&nd->attrs, "activation");
    return v && v->type == SLIM_ATTR_STRING ? act_parse(v->str) : ACT_NONE;
}

static const char *const act_names[] = {
    [ACT_NONE] = "none", [ACT_RELU] = "relu", [ACT_RELU6] = "relu6"};

static bool same_desc(const slim_tensor_desc *a, const slim_tensor_desc *b)
{
    return a->dtype == b->dtype && a->shape.rank == b->shape.rank &&
           !memcmp(a->shape.dim, b->shape.dim, (size_t)a->shape.rank * sizeof(int64_t));
}

/* Whether tensor t exists before node n runs: an input, a parameter, or the
 * output of an earlier node (a fused conv2d runs at its own place, before
 * the nodes it took in). */
static bool ready_before(const slim_graph *g, slim_tid t, int n)
{
    const slim__tinfo *ti = &g->tensors[t];
    return ti->kind != SLIM__T_NODE || ti->producer < n;
}

/* A conv2d (no batch norm, residual or activation of its own) whose output
 * has one consumer, a batch_norm (x input only), an add of two tensors of
 * one shape (the residual) or a relu/relu6, takes it in; then the same again
 * for that node's output (conv -> batch_norm -> add -> relu), at most one of
 * each, in that order. The residual must be computed before the conv runs
 * (its producer comes first in the graph). A tensor the caller reads
 * (marked) is never fused away. */
static slim_status find_fusions(fz *b)
{
    slim_graph *g = b->g;
    int nt = g->n_tensors, nn = g->n_nodes;
    int *uses = calloc((size_t)nt + 1, sizeof *uses), *user = calloc((size_t)nt + 1, sizeof *user);
    if (!uses || !user) {
        free(uses);
        free(user);
        return slim__oom(b->err);
    }
    for (int n = 0; n < nn; n++)
        for (int i = 0; NEEDED(b, n) && i < g->nodes[n].n_in; i++) {
            uses[g->nodes[n].in[i]]++;
            user[g->nodes[n].in[i]] = n;
        }
    for (int n = 0; n < nn; n++) {
        const slim__node *nd = &g->nodes[n];
        if (!NEEDED(b, n) || !is_op(nd, "conv2d") || nd->n_in > 3 || node_act(nd) != ACT_NONE ||
            slim__attrs_get(&nd->attrs, "batch_norm")->ints[0] ||
            slim__attrs_get(&nd->attrs, "residual")->ints[0])
            continue;
        int bn = -1, act = ACT_NONE, res = -1;
        slim_tid t = nd->out[0];
        for (;;) {
            const slim__tinfo *ti = &g->tensors[t];
            if (uses[t] != 1 || ti->marked || t == g->loss || ti->d.dtype != SLIM_F32)
                break;
            const slim__node *md = &g->nodes[user[t]];
            slim_tid other = md->n_in == 2 ? md->in[md->in[0] == t] : -1;
            if (bn < 0 && res < 0 && act == ACT_NONE && is_op(md, "batch_norm") && md->n_in == 5 &&
                md->in[0] == t)
                bn = user[t], act = node_act(md);
            else if (res < 0 && act == ACT_NONE && is_op(md, "add") && other >= 0 &&
                     ready_before(g, other, n) && same_desc(&g->tensors[other].d, &ti->d))
                res = other, act = node_act(md);
            else if (act == ACT_NONE && md->n_in == 1 && (is_op(md, "relu") || is_op(md, "relu6")))
                act = act_parse(md->d->name);
            else
                break;
            NEEDED(b, user[t]) = false;
            b->gone[t] = true;
            t = md->out[0];
        }
        if (t == nd->out[0])
            continue;
        b->fused[t] = true;
        b->fuse_out[n] = t;
        b->fuse_bn[n] = bn;
        b->fuse_act[n] = act;
        b->fuse_res[n] = res;
    }
    free(uses);
    free(user);
    return SLIM_OK;
}

/* A node's inputs; for a fused conv2d x, w, [b], then the batch norm's gamma,
 * beta, moving_mean, moving_var. */
static int node_inputs(const fz *b, int n, slim_tid *in)
{
    const slim__node *nd = &b->g->nodes[n];
    if (b->chain_d[n] >= 0) {
        /* x, then each conv's w and batch norm, then the residual */
        const int convs[3] = {b->chain_a[n], b->chain_d[n], n};
        int n_in = 0;
        in[n_in++] = b->g->nodes[convs[0] >= 0 ? convs[0] : convs[1]].in[0];
        for (int k = 0; k < 3; k++) {
            if (convs[k] < 0)
                continue;
            in[n_in++] = b->g->nodes[convs[k]].in[1];
            for (int i = 1; i < 5; i++)
                in[n_in++] = b->g->nodes[b->fuse_bn[convs[k]]].in[i];
        }
        if (b->fuse_res[n] >= 0)
            in[n_in++] = b->fuse_res[n];
        return n_in;
    }
    int n_in = nd->n_in;
    memcpy(in, nd->in, (size_t)n_in * sizeof *in);
    if (b->fuse_bn[n] >= 0)
        for (int i = 1; i < 5; i++)
            in[n_in++] = b->g->nodes[b->fuse_bn[n]].in[i];
    if (b->fuse_res[n] >= 0)
        in[n_in++] = b->fuse_res[n];
    return n_in;
}

/* ---- chains: a depthwise-separable block in one step (conv2d_chain) ---------------- */

/* Whether node n is a conv2d fused with a batch norm, without a bias, that a
 * chain can take: pointwise (1x1, stride 1, no padding, no groups) or
 * depthwise (groups == C == O, SAME or VALID, no dilation). */
static bool chain_conv(const fz *b, int n, bool depthwise)
{
    const slim_graph *g = b->g;
    const slim__node *nd = &g->nodes[n];
    if (!NEEDED(b, n) || !is_op(nd, "conv2d") || b->fuse_out[n] < 0 || b->fuse_bn[n] < 0 ||
        nd->n_in != 2)
        return false;
    const slim_shape *x = &g->tensors[nd->in[0]].d.shape, *w = &g->tensors[nd->in[1]].d.shape;
    const int64_t *st = slim__attrs_get(&nd->attrs, "strides")->ints,
                  *dl = slim__attrs_get(&nd->attrs, "dilations")->ints,
                  *pads = slim__attrs_get(&nd->attrs, "pads")->ints,
                  groups = slim__attrs_get(&nd->attrs, "groups")->ints[0];
    const bool explicit_pads = !strcmp(slim__attrs_get(&nd->attrs, "padding")->str, "EXPLICIT");
    if (x->rank != 4 || w->rank != 4 || dl[0] != 1 || dl[1] != 1)
        return false;
    if (depthwise)
        return groups == x->dim[3] && w->dim[2] == 1 && w->dim[3] == x->dim[3] && !explicit_pads;
    return groups == 1 && w->dim[0] == 1 && w->dim[1] == 1 && st[0] == 1 && st[1] == 1 &&
           !(pads[0] | pads[1] | pads[2] | pads[3]);
}

/* Node `node`, whose output t a chain computes inside, runs no more, nor
 * does t get a buffer. */
static void absorb(fz *b, int node, slim_tid t)
{
    NEEDED(b, node) = false;
    b->fused[t] = false;
    b->gone[t] = true;
}

/* After find_fusions: a fused pointwise conv2d whose input only a fused
 * depthwise conv2d writes, and only it reads, takes that one in, and the
 * same again for a fused pointwise conv2d before the depthwise one
 * (MobileNet v2's expand -> depthwise -> project, v1's depthwise ->
 * pointwise). Not with the reference kernels (SLIM_KERNELS=ref runs the
 * convolutions one by one). */
static slim_status find_chains(fz *b)
{
    slim_graph *g = b->g;
    int nt = g->n_tensors, nn = g->n_nodes;
    b->chain_op = slim_registry_find(g->reg, "conv2d_chain");
    if (!b->chain_op || slim__force_ref())
        return SLIM_OK;
    int *uses = calloc((size_t)nt + 1, sizeof *uses),
        *writer = malloc(((size_t)nt + 1) * sizeof(int));
    if (!uses || !writer) {
        free(uses);
        free(writer);
        return slim__oom(b->err);
    }
    for (int t = 0; t < nt; t++)
        writer[t] = -1;
    for (int n = 0; n < nn; n++) {
        slim_tid in[SLIM_MAX_INPUTS];
        for (int i = 0, k = NEEDED(b, n) ? node_inputs(b, n, in) : 0; i < k; i++)
            uses[in[i]]++;
        if (NEEDED(b, n) && b->fuse_out[n] >= 0)
            writer[b->fuse_out[n]] = n;
    }
    for (int n = 0; n < nn; n++) {
        if (!chain_conv(b, n, false))
            continue;
        const slim_tid td = g->nodes[n].in[0];
        const int d = writer[td];
        if (d < 0 || uses[td] != 1 || g->tensors[td].marked || !chain_conv(b, d, true) ||
            b->fuse_res[d] >= 0)
            continue;
        const slim_tid ta = g->nodes[d].in[0];
        const int a = writer[ta];
        const bool expand = a >= 0 && uses[ta] == 1 && !g->tensors[ta].marked &&
                            chain_conv(b, a, false) && b->fuse_res[a] < 0 && b->chain_d[a] < 0;
        b->chain_d[n] = d;
        absorb(b, d, td);
        if (expand) {
            b->chain_a[n] = a;
            absorb(b, a, ta);
        }
    }
    free(uses);
    free(writer);
    return SLIM_OK;
}

/* The attribute set of fused node n (owned). */
static slim_status conv_set(fz *b, int n, slim__attr_set *set)
{
    const slim__node *nd = &b->g->nodes[n];
    slim_status st = slim__attrs_copy(&nd->attrs, nd->d, set);
    if (st != SLIM_OK)
        return slim__oom(b->err);
    int bn = b->fuse_bn[n];
    st = slim__attrs_set_text(set, "batch_norm", bn >= 0 ? "true" : "false", b->err);
    if (st == SLIM_OK && bn >= 0)
        st = slim__attrs_set_from(set, "batch_norm_epsilon", &b->g->nodes[bn].attrs, "epsilon",
                                  b->err);
    if (st == SLIM_OK)
        st = slim__attrs_set_text(set, "residual", b->fuse_res[n] >= 0 ? "true" : "false", b->err);
    if (st == SLIM_OK)
        st = slim__attrs_set_text(set, "activation", act_names[b->fuse_act[n]], b->err);
    return st;
}

/* conv2d_chain's attributes for chain n (owned). */
static slim_status chain_set(fz *b, int n, slim__attr_set *set)
{
    const int a = b->chain_a[n], dn = b->chain_d[n];
    const slim__attr_set *dw = &b->g->nodes[dn].attrs;
    if (slim__attrs_copy(NULL, b->chain_op, set) != SLIM_OK)
        return slim__oom(b->err);
    const char *const bool_text[2] = {"false", "true"};
    slim_status st = slim__attrs_set_from(set, "strides", dw, "strides", b->err);
    if (st == SLIM_OK)
        st = slim__attrs_set_from(set, "padding", dw, "padding", b->err);
    if (st == SLIM_OK)
        st = slim__attrs_set_text(set, "expand", bool_text[a >= 0], b->err);
    if (st == SLIM_OK)
        st = slim__attrs_set_text(set, "residual", bool_text[b->fuse_res[n] >= 0], b->err);
    if (st == SLIM_OK && a >= 0)
        st = slim__attrs_set_from(set, "expand_epsilon", &b->g->nodes[b->fuse_bn[a]].attrs,
                                  "epsilon", b->err);
    if (st == SLIM_OK)
        st = slim__attrs_set_from(set, "depthwise_epsilon", &b->g->nodes[b->fuse_bn[dn]].attrs,
                                  "epsilon", b->err);
    if (st == SLIM_OK)
        st = slim__attrs_set_from(set, "batch_norm_epsilon", &b->g->nodes[b->fuse_bn[n]].attrs,
                                  "epsilon", b->err);
    if (st == SLIM_OK)
        st = slim__attrs_set_text(set, "expand_activation",
                                  act_names[a >= 0 ? b->fuse_act[a] : ACT_NONE], b->err);
    if (st == SLIM_OK)
        st = slim__attrs_set_text(set, "depthwise_activation", act_names[b->fuse_act[dn]], b->err);
    if (st == SLIM_OK)
        st = slim__attrs_set_text(set, "activation", act_names[b->fuse_act[n]], b->err);
    return st;
}

/* The chain's step name: its layers' names joined by " + " (profiles count
 * each one's multiply-adds), kept by the program. */
static const char *chain_name(fz *b, int n)
{
    const int convs[3] = {b->chain_a[n], b->chain_d[n], n};
    size_t len = 1;
    for (int k = 0; k < 3; k++)
        len += convs[k] >= 0 ? strlen(b->g->nodes[convs[k]].name) + 3 : 0;
    char *s = malloc(len);
    if (!s)
        return NULL;
    s[0] = 0;
    for (int k = 0; k < 3; k++)
        if (convs[k] >= 0) {
            if (s[0])
                strcat(s, " + ");
            strcat(s, b->g->nodes[convs[k]].name);
        }
    return slim__keep(b->B->p, s);
}

/* What a fused step runs, for profiles. */
static const char *fused_name(const fz *b, int n)
{
    static const char *const names[2][2][3] = {
        {{"conv2d", "conv2d+relu", "conv2d+relu6"},
         {"conv2d+add", "conv2d+add+relu", "conv2d+add+relu6"}},
        {{"conv2d+batch_norm", "conv2d+batch_norm+relu", "conv2d+batch_norm+relu6"},
         {"conv2d+batch_norm+add", "conv2d+batch_norm+add+relu", "conv2d+batch_norm+add+relu6"}}};
    return names[b->fuse_bn[n] >= 0][b->fuse_res[n] >= 0][b->fuse_act[n]];
}

/* The node table's entries of the fused nodes. */
static slim_status apply(fz *b)
{
    for (int n = 0; n < b->g->n_nodes; n++) {
        slim__cnode *cn = &b->B->nodes[n];
        if (!cn->live || b->fuse_out[n] < 0)
            continue;
        const bool chain = b->chain_d[n] >= 0;
        cn->n_in = node_inputs(b, n, cn->in);
        cn->out[0] = b->fuse_out[n];
        cn->owns_attrs = true;
        slim_status st = chain ? chain_set(b, n, &cn->attrs) : conv_set(b, n, &cn->attrs);
        if (st != SLIM_OK)
            return st;
        cn->taken = 1;
        cn->d = chain ? b->chain_op : cn->d;
        cn->label = chain ? NULL : fused_name(b, n);
        if (chain && !(cn->name = chain_name(b, n)))
            return slim__oom(b->err);
    }
    return SLIM_OK;
}

slim_status slim__rewrite(slim__build *B)
{
    if (B->p->training || B->o->no_fusion)
        return SLIM_OK;
    slim_graph *g = B->g;
    int nn = g->n_nodes, nt = g->n_tensors;
    fz b = {.B = B, .g = g, .err = B->err};
    b.fuse_out = malloc(((size_t)nn + 1) * sizeof(int));
    b.fuse_bn = malloc(((size_t)nn + 1) * sizeof(int));
    b.fuse_act = calloc((size_t)nn + 1, sizeof(int));
    b.fuse_res = malloc(((size_t)nn + 1) * sizeof(int));
    b.gone = calloc((size_t)nt + 1, sizeof(bool));
    b.fused = calloc((size_t)nt + 1, sizeof(bool));
    b.chain_d = malloc(((size_t)nn + 1) * sizeof(int));
    b.chain_a = malloc(((size_t)nn + 1) * sizeof(int));
    slim_status st = SLIM_OK;
    if (!b.fuse_out || !b.fuse_bn || !b.fuse_act || !b.fuse_res || !b.gone || !b.fused ||
        !b.chain_d || !b.chain_a)
        st = slim__oom(b.err);
    for (int n = 0; st == SLIM_OK && n < nn; n++)
        b.fuse_out[n] = b.fuse_bn[n] = b.fuse_res[n] = b.chain_d[n] = b.chain_a[n] = -1;
    if (st == SLIM_OK)
        st = find_fusions(&b);
    if (st == SLIM_OK)
        st = find_chains(&b);
    if (st == SLIM_OK)
        st = apply(&b);
    free(b.fuse_out);
    free(b.fuse_bn);
    free(b.fuse_act);
    free(b.fuse_res);
    free(b.gone);
    free(b.fused);
    free(b.chain_d);
    free(b.chain_a);
    return st;
}
