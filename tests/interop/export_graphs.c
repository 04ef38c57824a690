/*
 * tests/interop/export_graphs.c - graphs built with the C API that between
 * them use every op the ONNX exporter maps (`export_fixture graphs DIR`).
 *
 * Each graph takes images (2,8,8,3) to logits (2,5) and their softmax
 * (predictions), its parameters random (batch norm variances positive). For
 * each it writes DIR/NAME.x.npy (the batch as (N,C,H,W)), DIR/NAME.ref.npy
 * (slim's logits), DIR/NAME-OPSET.onnx at opsets 13, 17 and 20 (the
 * three forms of layer_norm, gelu and hard_swish) for a batch of 2 and
 * DIR/NAME-dyn.onnx (opset 13, a dynamic batch), with an NCHW input.
 */
#include <slim/slim.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interop/npy.h"
#include "interop/onnx_export.h"

typedef struct gb {
    slim_graph *g;
    slim_error e;
    slim_status st;
} gb;

static slim_tid param(gb *b, const char *name, int rank, int64_t d0, int64_t d1, int64_t d2,
                      int64_t d3)
{
    slim_tid t = -1;
    int64_t dim[4] = {d0, d1, d2, d3};
    slim_shape s = slim_shape_make(rank, dim);
    slim_init init = {.kind = SLIM_INIT_NORMAL, .stddev = 0.5};
    if (strstr(name, "variance"))
        init = (slim_init){.kind = SLIM_INIT_UNIFORM, .lo = 0.5, .hi = 2};
    else if (strstr(name, "gamma"))
        init = (slim_init){.kind = SLIM_INIT_UNIFORM, .lo = 0.5, .hi = 1.5};
    if (!b->st)
        b->st = slim_graph_param(b->g, name, &s, &init, NULL, &t, &b->e);
    return t;
}

/* op(in...) with attributes "k=v; k=v" */
static slim_tid node(gb *b, const char *op, const char *name, const slim_tid *in, int n_in,
                     const char *attrs)
{
    slim_tid out[3] = {-1, -1, -1};
    if (b->st)
        return -1;
    slim_attrs *a = slim_attrs_new();
    if (attrs)
        slim_attrs_set_list(a, attrs);
    b->st = slim_graph_add(b->g, op, name, in, n_in, a, out, 3, NULL, &b->e);
    slim_attrs_free(a);
    return out[0];
}

#define N1(op, name, x, attrs) node(b, op, name, (slim_tid[]){x}, 1, attrs)
#define N2(op, name, x, y, attrs) node(b, op, name, (slim_tid[]){x, y}, 2, attrs)

static slim_tid bn(gb *b, const char *name, slim_tid x, int64_t C, const char *attrs)
{
    char nm[4][96];
    static const char *const what[4] = {"gamma", "beta", "moving_mean", "moving_variance"};
    slim_tid p[5] = {x};
    for (int i = 0; i < 4; i++) {
        snprintf(nm[i], sizeof nm[i], "%s/%s", name, what[i]);
        p[i + 1] = param(b, nm[i], 1, C, 0, 0, 0);
    }
    return node(b, "batch_norm", name, p, 5, attrs);
}

/* conv + bn + relu6, a dilated depthwise conv with explicit pads + bn, pooling, a residual
 * add with relu, global pooling, squeeze, fc + bn (rank 2) */
static slim_tid g_conv(gb *b, slim_tid x)
{
    slim_tid c = node(b, "conv2d", "c1",
                      (slim_tid[]){x, param(b, "c1/weights", 4, 3, 3, 3, 8),
                                   param(b, "c1/biases", 1, 8, 0, 0, 0)},
                      3, "strides=[2, 2]; padding=SAME");
    c = bn(b, "c1/bn", c, 8, "activation=relu6");
    c = N2("conv2d", "dw", c, param(b, "dw/weights", 4, 3, 3, 1, 8),
           "groups=8; dilations=[2, 2]; padding=EXPLICIT; pads=[1, 2, 2, 1]");
    c = bn(b, "dw/bn", c, 8, NULL);
    slim_tid mp = N1("max_pool", "mp", c, "ksize=[2, 2]; strides=[2, 2]; ceil_mode=true");
    slim_tid ap = N1("avg_pool", "ap", mp, "ksize=[2, 2]; padding=SAME");
    slim_tid r = N2("add", "res", ap, mp, "activation=relu");
    r = N1("global_avg_pool", "gap", r, "keep_dims=true");
    r = N1("squeeze", "sq", r, "axes=[1, 2]");
    r = node(b, "fully_connected", "fc",
             (slim_tid[]){r, param(b, "fc/weights", 2, 8, 5, 0, 0),
                          param(b, "fc/biases", 1, 5, 0, 0, 0)},
             3, NULL);
    return bn(b, "logits", r, 5, NULL);
}

/* every activation, LRN, the three pad modes, concat, a batch norm on a concat,
 * reduce_mean */
static slim_tid g_act(gb *b, slim_tid x)
{
    slim_tid c = node(b, "conv2d", "c1",
                      (slim_tid[]){x, param(b, "c1/weights", 4, 1, 1, 3, 6),
                                   param(b, "c1/biases", 1, 6, 0, 0, 0)},
                      3, NULL);
    c = N1("leaky_relu", "leaky", c, "alpha=0.1");
    c = N1("elu", "elu", c, "alpha=0.7");
    c = N2("multiply", "gate", c, N1("sigmoid", "sig", c, NULL), NULL);
    c = N1("hard_swish", "hswish", c, NULL);
    c = N1("hard_sigmoid", "hsig", c, "alpha=0.3; beta=0.4");
    c = N1("silu", "silu", c, NULL);
    c = N1("gelu", "gelu", c, NULL);
    c = N1("tanh", "tanh", c, NULL);
    c = N1("clip", "clip", c, "min=-0.5; max=0.4");
    c = N1("relu6", "relu6", c, NULL);
    c = N1("relu", "relu", c, NULL);
    c = N1("lrn", "lrn", c, "depth_radius=2; bias=1; alpha=0.5; beta=0.75");
    c = N1("pad", "reflect", c, "paddings=[0, 0, 1, 1, 2, 2, 0, 0]; mode=REFLECT");
    c = N1("pad", "edge", c, "paddings=[0, 0, 1, 0, 0, 1, 0, 0]; mode=EDGE");
    c = N1("pad", "const", c, "paddings=[0, 0, 0, 1, 1, 0, 0, 0]; constant_value=0.25");
    slim_tid a =
        N2("conv2d", "a", c, param(b, "a/weights", 4, 3, 3, 6, 4), "strides=[2, 2]; padding=VALID");
    slim_tid d =
        N2("conv2d", "d", c, param(b, "d/weights", 4, 3, 3, 6, 3), "strides=[2, 2]; padding=VALID");
    c = N2("concat", "cat", a, d, "axis=-1");
    c = bn(b, "cat/bn", c, 7, "activation=relu");
    c = N1("reduce_mean", "mean", c, "axes=[1, 2]");
    return node(b, "fully_connected", "logits",
                (slim_tid[]){c, param(b, "fc/weights", 2, 7, 5, 0, 0),
                             param(b, "fc/biases", 1, 5, 0, 0, 0)},
                3, NULL);
}

/* bias_add, transpose, slice, reshape, matmul, layer_norm, a rank-3 batch norm,
 * reduce_mean keeping dims, flatten, fully connected on 3-D */
static slim_tid g_shape(gb *b, slim_tid x)
{
    slim_tid c = N2("conv2d", "c1", x, param(b, "c1/weights", 4, 3, 3, 3, 4), NULL);
    c = N2("bias_add", "bias", c, param(b, "bias/b", 1, 4, 0, 0, 0), NULL);
    c = N1("transpose", "t", c, "perm=[0, 3, 1, 2]");
    c = N1("slice", "s", c, "begin=[0, 1, 2, 0]; size=[-1, 2, 4, -1]");
    c = N1("reshape", "r", c, "shape=[-1, 8, 8]");
    c = N2("matmul", "mm", c, param(b, "mm/w", 2, 6, 8, 0, 0), "transpose_b=true; alpha=0.5");
    c = node(
        b, "layer_norm", "ln",
        (slim_tid[]){c, param(b, "ln/gamma", 1, 6, 0, 0, 0), param(b, "ln/beta", 1, 6, 0, 0, 0)}, 3,
        "epsilon=0.001");
    c = bn(b, "bn3", c, 6, NULL);
    slim_tid m = N1("reduce_mean", "m", c, "axes=[2]; keep_dims=true");
    m = N1("flatten", "f", m, NULL);
    slim_tid f = node(b, "fully_connected", "fc3",
                      (slim_tid[]){c, param(b, "fc3/weights", 2, 48, 5, 0, 0)}, 2, NULL);
    slim_tid g = N2("fully_connected", "fcm", m, param(b, "fcm/weights", 2, 8, 5, 0, 0), NULL);
    return N2("add", "logits", f, g, NULL);
}

static const struct {
    const char *name;
    slim_tid (*build)(gb *b, slim_tid x);
} graphs[] = {{"conv", g_conv}, {"act", g_act}, {"shape", g_shape}};

static int one(const char *dir, int k)
{
    slim_registry *reg = NULL;
    slim_program *p = NULL;
    gb bs = {0}, *b = &bs;
    int rc = 1;
    char path[1200];
    b->st = slim_registry_new(&reg, &b->e);
    if (!b->st)
        b->st = slim_graph_new(reg, &b->g, &b->e);
    slim_tid x = -1;
    slim_shape xs = {4, {2, 8, 8, 3}};
    if (!b->st)
        b->st = slim_graph_input(b->g, "images", SLIM_F32, &xs, &x, &b->e);
    slim_tid logits = graphs[k].build(b, x);
    slim_tid pred = N1("softmax", "predictions", logits, NULL);
    slim_compile_opts co = {.num_threads = 1};
    slim_tensor in, out;
    if (!b->st)
        b->st = slim_graph_mark_output(b->g, logits, &b->e);
    if (!b->st)
        b->st = slim_graph_mark_output(b->g, pred, &b->e);
    if (!b->st)
        b->st = slim_graph_init_params(b->g, 7 + (uint64_t)k, &b->e);
    if (!b->st)
        b->st = slim_graph_compile(b->g, &co, &p, &b->e);
    if (!b->st)
        b->st = slim_program_input(p, "images", &in, &b->e);
    if (b->st)
        goto done;
    float *d = in.data, xc[2 * 3 * 8 * 8];
    uint64_t r = 12345 + (uint64_t)k;
    for (int i = 0; i < 2 * 8 * 8 * 3; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        d[i] = (float)((double)(r >> 11) / 9007199254740992.0 * 4 - 2);
    }
    for (int n = 0; n < 2; n++) /* NHWC -> NCHW */
        for (int c = 0; c < 3; c++)
            for (int hw = 0; hw < 64; hw++)
                xc[(n * 3 + c) * 64 + hw] = d[(n * 64 + hw) * 3 + c];
    if ((b->st = slim_program_run(p, NULL, &b->e)) ||
        (b->st = slim_program_output(p, slim_graph_tensor_name(b->g, logits), &out, &b->e)))
        goto done;
    snprintf(path, sizeof path, "%s/%s.x.npy", dir, graphs[k].name);
    if ((b->st = slim__npy_write(path, xc, 4, (int64_t[]){2, 3, 8, 8}, &b->e)))
        goto done;
    snprintf(path, sizeof path, "%s/%s.ref.npy", dir, graphs[k].name);
    if ((b->st = slim__npy_write(path, out.data, out.shape.rank, out.shape.dim, &b->e)))
        goto done;
    /* a fixed batch of 2 at three opsets, and a dynamic batch */
    static const int opsets[] = {13, 17, 20, 13};
    for (int i = 0; i < 4; i++) {
        slim__onnx_export_opts o = {
            .opset = opsets[i],
            .dynamic_batch = i == 3,
            .fold_batch_norm = true,
            .input_nchw = true,
            .input = "images",
            .outputs = {slim_graph_tensor_name(b->g, logits), "predictions"},
            .output_names = {"logits", "probabilities"},
            .graph_name = graphs[k].name};
        if (i == 3)
            snprintf(path, sizeof path, "%s/%s-dyn.onnx", dir, graphs[k].name);
        else
            snprintf(path, sizeof path, "%s/%s-%d.onnx", dir, graphs[k].name, opsets[i]);
        if ((b->st = slim__onnx_export_file(b->g, &o, path, &b->e)))
            goto done;
    }
    rc = 0;
done:
    if (rc)
        fprintf(stderr, "export_fixture graphs: %s: %s\n", graphs[k].name, b->e.msg);
    slim_program_free(p);
    slim_graph_free(b->g);
    slim_registry_free(reg);
    return rc;
}

/* A graph whose output needs ops ONNX lacks (a loss and an L2 norm): the exporter's error
 * on stdout. Returns 0 when the export failed as it should. */
int export_unsupported(void);
int export_unsupported(void)
{
    slim_registry *reg = NULL;
    gb bs = {0}, *b = &bs;
    slim_tid x = -1, labels = -1;
    slim_shape xs = {2, {2, 8}}, ls = {1, {2}};
    b->st = slim_registry_new(&reg, &b->e);
    if (!b->st)
        b->st = slim_graph_new(reg, &b->g, &b->e);
    if (!b->st)
        b->st = slim_graph_input(b->g, "images", SLIM_F32, &xs, &x, &b->e);
    if (!b->st)
        b->st = slim_graph_input(b->g, "labels", SLIM_I32, &ls, &labels, &b->e);
    slim_tid lg = N2("fully_connected", "fc", x, param(b, "fc/weights", 2, 8, 5, 0, 0), NULL);
    slim_tid l2 = N1("l2_loss", "l2", lg, NULL);
    slim_tid xe = N2("softmax_cross_entropy", "xent", lg, labels, NULL);
    slim_tid out = N2("add", "out", N2("add", "sum", lg, l2, NULL), xe, NULL);
    (void)out;
    if (!b->st)
        b->st = slim_graph_init_params(b->g, 1, &b->e);
    int rc = 1;
    if (b->st) {
        fprintf(stderr, "export_fixture unsupported: %s\n", b->e.msg);
    } else {
        slim__onnx_export_opts o = {.input = "images", .outputs = {"out"}};
        uint8_t *buf = NULL;
        size_t len = 0;
        slim_status st = slim__onnx_export(b->g, &o, &buf, &len, &b->e);
        printf("%s: %s\n", slim_status_str(st), b->e.msg);
        rc = st == SLIM_EUNSUPPORTED && !buf && !len ? 0 : 1;
        free(buf);
    }
    slim_graph_free(b->g);
    slim_registry_free(reg);
    return rc;
}

int export_graphs(const char *dir);

int export_graphs(const char *dir)
{
    int rc = 0;
    for (int k = 0; k < (int)(sizeof graphs / sizeof graphs[0]); k++)
        rc |= one(dir, k);
    return rc;
}
