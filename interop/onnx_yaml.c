/*
 * interop/onnx_yaml.c - an imported model's layers as a model file.
 *
 * One line per layer, in the DSL's own kinds: conv2d, fully_connected,
 * batch_norm and layer_norm own their parameters (LAYER/weights ...),
 * variable is a parameter of its own, and everything else is an op layer
 * with its attributes. A layer takes the previous one's output unless it
 * says inputs:. An activation that only follows one conv2d,
 * fully_connected or batch_norm layer is written as that layer's
 * activation: (the graph is the same: the DSL adds it as its own node, or
 * fuses relu into the batch norm, as the compiler would). Convolutions slim's
 * export wrote from a separable_conv2d (ox_layer.sep) are one again.
 */
#include "interop/onnx_build.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

typedef struct buf {
    char *p;
    size_t n, cap;
    bool oom;
} buf;

static void put(buf *o, const char *fmt, ...) SLIM_PRINTF(2, 3);
static void put(buf *o, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        size_t room = o->cap - o->n;
        int k = o->p ? vsnprintf(o->p + o->n, room, fmt, ap) : -1;
        va_end(ap);
        if (k >= 0 && (size_t)k < room) {
            o->n += (size_t)k;
            return;
        }
        size_t ncap = o->cap ? 2 * o->cap : 1 << 16;
        while (k >= 0 && ncap - o->n <= (size_t)k)
            ncap *= 2;
        char *np = realloc(o->p, ncap);
        if (!np) {
            o->oom = true;
            return;
        }
        o->p = np;
        o->cap = ncap;
    }
}

/* Activations a conv2d / fully_connected / batch_norm layer can carry. */
static bool foldable_activation(const ox_layer *l)
{
    static const char *const ops[] = {"relu", "relu6",      "sigmoid", "tanh",
                                      "silu", "hard_swish", "gelu"};
    if (l->kind != OXL_OP || l->n_kv || l->n_in != 1)
        return false;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (!strcmp(l->op, ops[i]))
            return true;
    return false;
}

/* The layer a reference to layer i means after folding. */
static int target(const ox_builder *b, int i)
{
    while (i >= 0 && b->layers[i].folded_into >= 0)
        i = b->layers[i].folded_into;
    return i;
}

static void fold_activations(ox_builder *b)
{
    int n = b->n_layers;
    int *uses = calloc((size_t)n + 1, sizeof *uses);
    if (!uses)
        return;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < b->layers[i].n_in; k++)
            if (b->layers[i].in[k] >= 0)
                uses[b->layers[i].in[k]]++;
    for (int i = 0; i < n; i++) {
        ox_layer *l = &b->layers[i];
        if (!foldable_activation(l))
            continue;
        int p = l->in[0];
        if (p < 0 || p == b->logits_layer || uses[p] != 1)
            continue;
        ox_layer *pl = &b->layers[p];
        bool add = pl->kind == OXL_OP && !strcmp(pl->op, "add") && pl->n_kv == 0 &&
                   (!strcmp(l->op, "relu") || !strcmp(l->op, "relu6"));
        if ((pl->kind != OXL_CONV && pl->kind != OXL_FC && pl->kind != OXL_BN &&
             pl->kind != OXL_LN && !add) ||
            pl->activation)
            continue;
        pl->activation = l->op;
        if (add) /* the add op applies relu / relu6 itself (a residual unit's end) */
            ox_kv_set(b, pl, "activation", "%s", l->op);
        l->folded_into = p;
        if (b->logits_layer == i)
            b->logits_layer = p;
    }
    free(uses);
}

static void put_ints(buf *o, const int64_t *v, int n)
{
    put(o, "[");
    for (int i = 0; i < n; i++)
        put(o, "%s%lld", i ? ", " : "", (long long)v[i]);
    put(o, "]");
}

/* kernel_size: 3 or [3, 1] */
static void put_pair(buf *o, const char *key, const int64_t *v)
{
    if (v[0] == v[1])
        put(o, ", %s: %lld", key, (long long)v[0]);
    else
        put(o, ", %s: [%lld, %lld]", key, (long long)v[0], (long long)v[1]);
}

/* The conv2d / fully_connected layer whose outputs are the classes: the
 * logits layer, or the one it pools or reshapes (SqueezeNet's last conv). */
static int class_layer(const ox_builder *b)
{
    int i = target(b, b->logits_layer);
    while (i >= 0 && b->layers[i].kind == OXL_OP && b->layers[i].n_in == 1)
        i = target(b, b->layers[i].in[0]);
    if (i < 0 || (b->layers[i].kind != OXL_CONV && b->layers[i].kind != OXL_FC) ||
        b->layers[i].cout != b->num_classes)
        return -1;
    return i;
}

static void put_layer(buf *o, const ox_builder *b, int i, int prev)
{
    const ox_layer *l = &b->layers[i];
    const char *kind = l->kind == OXL_CONV  ? (l->sep ? "separable_conv2d" : "conv2d")
                       : l->kind == OXL_FC  ? "fully_connected"
                       : l->kind == OXL_BN  ? "batch_norm"
                       : l->kind == OXL_LN  ? "layer_norm"
                       : l->kind == OXL_VAR ? "variable"
                                            : l->op;
    char f1[40], f2[40];
    put(o, "  - %s: {name: %s", kind, l->name);
    /* a separable_conv2d's 1x1 half takes the depthwise half's input, and its geometry */
    const ox_layer *in = l->sep == SEP_PW ? &b->layers[l->dw] : l, *g = in;
    bool explicit = in->n_in != 1 || target(b, in->in[0]) != prev;
    if (l->kind != OXL_VAR && explicit) {
        put(o, ", inputs: ");
        if (in->n_in != 1)
            put(o, "[");
        for (int k = 0; k < in->n_in; k++) {
            int t = target(b, in->in[k]);
            put(o, "%s%s", k ? ", " : "", t < 0 ? "images" : b->layers[t].name);
        }
        if (in->n_in != 1)
            put(o, "]");
    }
    switch (l->kind) {
    case OXL_CONV: {
        if (l->sep == SEP_DW) /* no num_outputs: depthwise only */
            ;
        else if (i == class_layer(b))
            put(o, ", num_outputs: $num_classes");
        else
            put(o, ", num_outputs: %lld", (long long)l->cout);
        put_pair(o, "kernel_size", g->k);
        if (l->sep && g->cout != g->groups) /* the depthwise half: groups = channels */
            put(o, ", depth_multiplier: %lld", (long long)(g->cout / g->groups));
        if (g->s[0] != 1 || g->s[1] != 1)
            put_pair(o, "stride", g->s);
        if (g->d[0] != 1 || g->d[1] != 1)
            put_pair(o, "rate", g->d);
        bool zero = !g->pads[0] && !g->pads[1] && !g->pads[2] && !g->pads[3];
        if (zero) {
            put(o, ", padding: VALID");
        } else {
            put(o, ", padding: ");
            put_ints(o, g->pads, 4);
        }
        if (l->groups != 1 && !l->sep)
            put(o, ", groups: %lld", (long long)l->groups);
        if (!l->bias)
            put(o, ", biases: none");
        put(o, ", activation: %s", l->activation ? l->activation : "none");
        break;
    }
    case OXL_FC:
        if (i == class_layer(b))
            put(o, ", num_outputs: $num_classes");
        else
            put(o, ", num_outputs: %lld", (long long)l->cout);
        if (!l->bias)
            put(o, ", biases: none");
        put(o, ", activation: %s", l->activation ? l->activation : "none");
        break;
    case OXL_BN:
        put(o, ", decay: %s, epsilon: %s, scale: %s", ox_fmt_float(f1, sizeof f1, l->decay),
            ox_fmt_float(f2, sizeof f2, l->eps), l->no_scale ? "false" : "true");
        if (l->no_center)
            put(o, ", center: false");
        if (l->activation)
            put(o, ", activation: %s", l->activation);
        break;
    case OXL_LN:
        put(o, ", epsilon: %s", ox_fmt_float(f1, sizeof f1, l->eps));
        if (l->activation)
            put(o, ", activation: %s", l->activation);
        break;
    case OXL_VAR:
        put(o, ", shape: ");
        put_ints(o, l->shape.dim, l->shape.rank);
        if (!l->trainable)
            put(o, ", trainable: false");
        break;
    case OXL_OP:
        for (int k = 0; k < l->n_kv; k++)
            put(o, ", %s: %s", l->kv[k].key, l->kv[k].val);
        break;
    }
    put(o, "}\n");
}

slim_status slim__onnx_yaml(const slim__onnx_importer *imp, const char *source, char **text,
                            slim_error *err)
{
    ox_builder *b = (ox_builder *)imp;
    *text = NULL;
    if (!b->o->model || b->logits_layer < 0)
        return slim__error(err, SLIM_EINVAL,
                           "only an imported model (model mode) has a model file");
    for (int i = 0; i < b->n_layers; i++) {
        const ox_layer *l = &b->layers[i];
        if (l->kind == OXL_BN && l->train_bn)
            return slim__error(err, SLIM_EUNSUPPORTED, "a training-mode batch norm");
    }
    /* a separable_conv2d is one layer: its depthwise half goes into its 1x1 half */
    for (int i = 0; i < b->n_layers; i++) {
        ox_layer *l = &b->layers[i];
        if (l->sep == SEP_PW)
            b->layers[l->dw].folded_into = i;
    }
    for (int i = 0; i < b->n_layers; i++) {
        const ox_layer *l = &b->layers[i];
        if (l->dw_of && (l->folded_into < 0 || b->layers[l->folded_into].dw != i))
            return slim__error(err, SLIM_EUNSUPPORTED,
                               "the depthwise convolution '%s' is read by the 1x1 one of its "
                               "pointwise_weights, which did not import as its second half",
                               l->name);
    }
    fold_activations(b);
    buf o = {0};
    const Onnx__ModelProto *m = b->model;
    put(&o, "# %s as a slim model file, written by slimrun import.\n", source);
    if (b->o->input_nhwc)
        put(&o, "# A TensorFlow GraphDef. Its parameters are in the checkpoint\n");
    else
        put(&o, "# Exported by %s %s (ONNX opset %lld). Its parameters are in the checkpoint\n",
            m->producer_name && m->producer_name[0] ? m->producer_name : "an unknown producer",
            m->producer_version ? m->producer_version : "", (long long)b->opset);
    put(&o, "# written beside this file; layers own theirs under their names\n");
    put(&o, "# (%s/LAYER/weights, /biases, /gamma ...).\n", b->root);
    put(&o, "name: %s\n", b->root);
    put(&o, "description: imported from %s\n", b->o->input_nhwc ? "TensorFlow" : "ONNX");
    put(&o, "num_classes: %lld\n", (long long)b->num_classes);
    put(&o, "image_size: %lld\n", (long long)b->image_size);
    put(&o, "channels: %lld\n", (long long)b->channels);
    if (!b->input_nhwc)
        put(&o, "input_layout: NCHW   # tensors fed to predict --input_npy are (N, C, H, W), as "
                "in the source\n");
    put(&o, "weight_decay: 0.0\n");
    put(&o, "layers:\n");
    int prev = OX_IMAGES, last = OX_IMAGES;
    for (int i = 0; i < b->n_layers; i++) {
        if (b->layers[i].folded_into >= 0)
            continue;
        put_layer(&o, b, i, prev);
        prev = last = i;
    }
    int logits = target(b, b->logits_layer);
    if (logits != last)
        put(&o, "head: {logits: %s}\n", b->layers[logits].name);
    if (o.oom) {
        free(o.p);
        return slim__error(err, SLIM_ENOMEM, "out of memory writing the model file");
    }
    *text = o.p;
    return SLIM_OK;
}
