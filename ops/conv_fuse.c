/*
 * ops/conv_fuse.c - the fusion rules of the conv family (<slim/op.h> says how
 * rules work; ops/ops.def lists them in the order they apply).
 *
 * conv2d_post: a conv2d without a batch norm, residual or activation of its
 * own takes in the nodes that alone read its output, at most one of each in
 * this order: a batch_norm (x input), an add of a tensor of y's shape
 * computed before the conv (the residual), an activation (an op named in
 * ops/act.h's table that has no attributes, since the post step applies it
 * as the table defines it; a batch_norm's or add's own activation attribute
 * counts as one). The conv's kernels apply them to each block of y as it is
 * finished (see ops/conv.c): one step, no tensor between. A new activation
 * takes part by its entry in ops/act.h; nothing here or in engine/ changes.
 *
 * conv2d_chain: a pointwise conv2d with a folded batch norm whose input only
 * a depthwise one (also folded) writes, and only it reads, takes it in; and
 * so again for a pointwise one before the depthwise (MobileNet v2's expand
 * -> depthwise -> project, v1's depthwise -> pointwise): one conv2d_chain
 * step (ops/conv_chain.c) whose bands keep the expanded tensors in cache.
 * Not with the reference kernels (SLIM_KERNELS=ref runs the convolutions
 * one by one).
 */
#include <stdlib.h>
#include <string.h>

#include <slim/op.h>

#include "ops/act.h"

extern const slim_fusion_desc slim__fusion_conv2d_post;
extern const slim_fusion_desc slim__fusion_conv2d_chain;

static bool is(const slim_fuse_ctx *c, int node, const char *op)
{
    return strcmp(c->op(c, node), op) == 0;
}

/* The activation a batch_norm or add applies itself (ACT_NONE without one). */
static int own_act(const slim_fuse_ctx *c, int node)
{
    const char *a = c->attr_str(c, node, "activation");
    return a ? act_parse(a) : ACT_NONE;
}

static bool same_desc(const slim_tensor_desc *a, const slim_tensor_desc *b)
{
    return a->dtype == b->dtype && slim_shape_equal(&a->shape, &b->shape);
}

static slim_status conv_post_apply(slim_fuse_ctx *c)
{
    const int n = c->node;
    if (c->n_inputs(c, n) > 3 || own_act(c, n) != ACT_NONE || c->attr_int(c, n, "batch_norm") ||
        c->attr_int(c, n, "residual"))
        return SLIM_OK;
    bool bn = false, res = false;
    int act = ACT_NONE, m, in;
    slim_status st = SLIM_OK;
    char label[64] = "conv2d";
    while (st == SLIM_OK && act == ACT_NONE && (m = c->consumer(c, n, &in)) >= 0 &&
           c->output(c, n)->dtype == SLIM_F32) {
        const int k = c->n_inputs(c, m);
        if (!bn && !res && is(c, m, "batch_norm") && k == 5 && in == 0) {
            bn = true;
            act = own_act(c, m);
            st = c->absorb(c, n, m);
            for (int i = 1; i < 5 && st == SLIM_OK; i++)
                st = c->add_input(c, n, m, i);
            if (st == SLIM_OK)
                st = c->copy_attr(c, n, "batch_norm_epsilon", m, "epsilon");
        } else if (!res && is(c, m, "add") && k == 2 && c->ready(c, m, 1 - in, n) &&
                   same_desc(c->input(c, m, 1 - in), c->output(c, n))) {
            res = true;
            act = own_act(c, m);
            st = c->absorb(c, n, m);
            if (st == SLIM_OK)
                st = c->add_input(c, n, m, 1 - in);
        } else if (k == 1 && act_parse(c->op(c, m)) != ACT_NONE && !c->desc(c, m)->n_attrs) {
            act = act_parse(c->op(c, m));
            st = c->absorb(c, n, m);
        } else {
            break;
        }
    }
    if (st != SLIM_OK || c->taken(c, n) == 0)
        return st;
    if (bn)
        st = c->set_attr(c, n, "batch_norm", "true");
    if (res && st == SLIM_OK)
        st = c->set_attr(c, n, "residual", "true");
    if (st == SLIM_OK)
        st = c->set_attr(c, n, "activation", act_names[act]);
    strcat(label, bn ? "+batch_norm" : "");
    strcat(label, res ? "+add" : "");
    if (act != ACT_NONE)
        strcat(strcat(label, "+"), act_names[act]);
    return st == SLIM_OK ? c->set_label(c, n, label) : st;
}

/* A conv2d with a batch norm folded in by conv2d_post and no bias, that a
 * chain can take: pointwise (1x1, stride 1, no padding, no groups) or
 * depthwise (groups == C == O, SAME or VALID, no dilation). */
static bool chain_conv(const slim_fuse_ctx *c, int n, bool depthwise)
{
    if (n < 0 || !is(c, n, "conv2d") || c->taken(c, n) == 0 || !c->attr_int(c, n, "batch_norm") ||
        c->n_inputs(c, n) != 6 + (int)c->attr_int(c, n, "residual"))
        return false;
    const slim_shape *x = &c->input(c, n, 0)->shape, *w = &c->input(c, n, 1)->shape;
    const int64_t *st, *dl, *pads, groups = c->attr_int(c, n, "groups");
    c->attr_ints(c, n, "strides", &st);
    c->attr_ints(c, n, "dilations", &dl);
    c->attr_ints(c, n, "pads", &pads);
    if (x->rank != 4 || w->rank != 4 || dl[0] != 1 || dl[1] != 1)
        return false;
    if (depthwise)
        return groups == x->dim[3] && w->dim[2] == 1 && w->dim[3] == x->dim[3] &&
               strcmp(c->attr_str(c, n, "padding"), "EXPLICIT") != 0;
    return groups == 1 && w->dim[0] == 1 && w->dim[1] == 1 && st[0] == 1 && st[1] == 1 &&
           !(pads[0] | pads[1] | pads[2] | pads[3]);
}

/* "a + d + n": the chain's layers, whose multiply-adds profiles count. */
static slim_status chain_name(slim_fuse_ctx *c, int a, int d, int n)
{
    const int convs[3] = {a, d, n};
    size_t len = 1;
    for (int k = 0; k < 3; k++)
        len += convs[k] >= 0 ? strlen(c->name(c, convs[k])) + 3 : 0;
    char *s = malloc(len);
    if (!s)
        return SLIM_ENOMEM;
    s[0] = 0;
    for (int k = 0; k < 3; k++)
        if (convs[k] >= 0)
            strcat(strcat(s, s[0] ? " + " : ""), c->name(c, convs[k]));
    slim_status st = c->set_name(c, n, s);
    free(s);
    return st;
}

static slim_status conv_chain_apply(slim_fuse_ctx *c)
{
    const int n = c->node;
    if (c->reference || !chain_conv(c, n, false))
        return SLIM_OK;
    const int d = c->producer(c, n, 0);
    if (!chain_conv(c, d, true) || c->attr_int(c, d, "residual"))
        return SLIM_OK;
    int a = c->producer(c, d, 0);
    if (!chain_conv(c, a, false) || c->attr_int(c, a, "residual"))
        a = -1;
    /* x, then each conv's w and batch norm, then the residual */
    slim_fuse_input in[SLIM_MAX_INPUTS];
    int k = 0;
    in[k++] = (slim_fuse_input){a >= 0 ? a : d, 0};
    for (int s = 0; s < 3; s++) {
        const int conv = s == 0 ? a : s == 1 ? d : n;
        for (int i = 1; conv >= 0 && i < 6; i++)
            in[k++] = (slim_fuse_input){conv, i};
    }
    if (c->attr_int(c, n, "residual"))
        in[k++] = (slim_fuse_input){n, 6};
    slim_status st = chain_name(c, a, d, n);
    if (st == SLIM_OK && a >= 0)
        st = c->absorb(c, d, a);
    if (st == SLIM_OK)
        st = c->absorb(c, n, d);
    if (st == SLIM_OK)
        st = c->set_inputs(c, n, k, in);
    /* residual, batch_norm_epsilon and activation are n's own already */
    if (st == SLIM_OK)
        st = c->set_op(c, n, "conv2d_chain");
    if (st == SLIM_OK)
        st = c->copy_attr(c, n, "strides", d, "strides");
    if (st == SLIM_OK)
        st = c->copy_attr(c, n, "padding", d, "padding");
    if (st == SLIM_OK)
        st = c->copy_attr(c, n, "depthwise_epsilon", d, "batch_norm_epsilon");
    if (st == SLIM_OK)
        st = c->copy_attr(c, n, "depthwise_activation", d, "activation");
    if (st == SLIM_OK && a >= 0)
        st = c->set_attr(c, n, "expand", "true");
    if (st == SLIM_OK && a >= 0)
        st = c->copy_attr(c, n, "expand_epsilon", a, "batch_norm_epsilon");
    if (st == SLIM_OK && a >= 0)
        st = c->copy_attr(c, n, "expand_activation", a, "activation");
    return st;
}

const slim_fusion_desc slim__fusion_conv2d_post = {
    .struct_size = sizeof(slim_fusion_desc),
    .name = "conv2d_post",
    .doc = "conv2d takes in the batch_norm, residual add and activation after it",
    .anchor = "conv2d",
    .apply = conv_post_apply,
};

const slim_fusion_desc slim__fusion_conv2d_chain = {
    .struct_size = sizeof(slim_fusion_desc),
    .name = "conv2d_chain",
    .doc = "a depthwise-separable block (pointwise, depthwise, pointwise) as one conv2d_chain",
    .anchor = "conv2d",
    .apply = conv_chain_apply,
};
