/*
 * tests/interop/test_onnx.c - the ONNX importer on models built here, and
 * NumPy .npy files:
 *   - names: initializers' names become layers and parameters
 *     (features.0.weight -> NAME/features/0/weights, a batch norm's
 *     gamma/beta/moving_mean/moving_variance), with the values converted to
 *     slim's layouts (OIHW -> HWIO, Gemm's (O, K) -> (K, O));
 *   - a small network through the model file (Conv, BatchNormalization,
 *     Relu, Clip(0, 6), HardSigmoid + Mul, channel shuffle, Flatten + Gemm of
 *     a (N, C, 2, 2) value) against a reference computed here in double, at
 *     the batch it was exported with and at another one;
 *   - every node of an op slim lacks in one error, with the plugin pointer;
 *     an op plugin declaring the ONNX op type (plugins/swish.c) maps it;
 *   - malformed models and tensors: errors naming the file and node; bytes
 *     protobuf-c refuses: the offset and field path of the defect;
 *   - .npy: round trip, and the error (file, offset, field) of each kind of
 *     bad file.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slim/model.h>

#include "interop/npy.h"
#include "interop/onnx.h"
#include "interop/onnx_proto.h"
#include "interop/pb_explain.h"
#include "onnx_gen.h"
#include "tests/data/tap.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static void fill(float *v, int n, float scale, float offset)
{
    for (int i = 0; i < n; i++)
        v[i] = offset + scale * frand();
}

static const char *plugin_path(const char *name)
{
    static char buf[1024];
    const char *b = getenv("top_builddir");
    snprintf(buf, sizeof buf, "%s/plugins/.libs/%s.so", b ? b : ".", name);
    return buf;
}

static slim_status load(slim_registry *reg, gen *g, const char *file, int batch, slim_model **m,
                        char **yaml, slim_error *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tap_tmpdir(), file);
    if (gen_write(g, path) != 0)
        return SLIM_EIO;
    slim_model_opts mo = {.batch_size = batch, .weight_decay = -1};
    return slim__onnx_model_load(reg, path, "net", &mo, m, yaml, err);
}

/* ---- a small network, and its reference ------------------------------------------- */

/* x (N,4,4,4) -> Conv 3x3 pad 1 (4->8) -> BN -> Relu -> Clip(0,6) -> HardSigmoid+Mul
 * (hard swish) -> channel shuffle (2 groups) -> Conv 1x1 stride 2 (8->4, bias) ->
 * Flatten (N, 4*2*2) -> Gemm (transB) -> logits (N, 3) */
enum { C0 = 4, S0 = 4, C1 = 8, C2 = 4, S2 = 2, K = C2 * S2 * S2, O = 3 };
static float w1[C1 * C0 * 9], bn[4][C1], w2[C2 * C1], b2[C2], wf[O * K], bf[O];

static void build_net(gen *g, int64_t batch)
{
    int64_t xd[4] = {batch, C0, S0, S0}, w1d[4] = {C1, C0, 3, 3}, cd[1] = {C1};
    int64_t w2d[4] = {C2, C1, 1, 1}, b2d[1] = {C2}, wfd[2] = {O, K}, bfd[1] = {O};
    gen_input(g, "images", 4, xd);
    gen_init(g, "features.0.weight", 4, w1d, w1);
    static const char *const bnn[4] = {"features.1.weight", "features.1.bias",
                                       "features.1.running_mean", "features.1.running_var"};
    for (int i = 0; i < 4; i++)
        gen_init(g, bnn[i], 1, cd, bn[i]);
    gen_init(g, "head.conv.weight", 4, w2d, w2);
    gen_init(g, "head.conv.bias", 1, b2d, b2);
    gen_init(g, "classifier.weight", 2, wfd, wf);
    gen_init(g, "classifier.bias", 1, bfd, bf);
    int64_t shuf1[5] = {batch, 2, C1 / 2, S0, S0}, shuf2[4] = {batch, C1, S0, S0}, sd[1] = {5},
            sd2[1] = {4};
    gen_init_i64(g, "shape1", 1, sd, shuf1);
    gen_init_i64(g, "shape2", 1, sd2, shuf2);
    float lo = 0, hi = 6;
    int64_t none[1] = {0};
    gen_init(g, "clip_min", 0, none, &lo);
    gen_init(g, "clip_max", 0, none, &hi);
    Onnx__NodeProto *n =
        gen_node(g, "Conv", "/features/features.0/Conv", "images,features.0.weight", "c1");
    gen_attr_ints(g, n, "kernel_shape", 2, (int64_t[]){3, 3});
    gen_attr_ints(g, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    n = gen_node(g, "BatchNormalization", "/features/features.1/BatchNormalization",
                 "c1,features.1.weight,features.1.bias,features.1.running_mean,"
                 "features.1.running_var",
                 "b1");
    gen_attr_float(g, n, "epsilon", 1e-5f);
    gen_attr_float(g, n, "momentum", 0.9f);
    gen_node(g, "Relu", "/features/features.2/Relu", "b1", "r1");
    gen_node(g, "Clip", "/features/features.3/Clip", "r1,clip_min,clip_max", "k1");
    n = gen_node(g, "HardSigmoid", "/features/features.4/HardSigmoid", "k1", "hs");
    gen_attr_float(g, n, "alpha", 1.0f / 6);
    gen_node(g, "Mul", "/features/features.4/Mul", "k1,hs", "h1");
    gen_node(g, "Reshape", "/shuffle/Reshape", "h1,shape1", "s1");
    n = gen_node(g, "Transpose", "/shuffle/Transpose", "s1", "s2");
    gen_attr_ints(g, n, "perm", 5, (int64_t[]){0, 2, 1, 3, 4});
    gen_node(g, "Reshape", "/shuffle/Reshape_1", "s2,shape2", "s3");
    n = gen_node(g, "Conv", "/head/conv/Conv", "s3,head.conv.weight,head.conv.bias", "c2");
    gen_attr_ints(g, n, "kernel_shape", 2, (int64_t[]){1, 1});
    gen_attr_ints(g, n, "strides", 2, (int64_t[]){2, 2});
    gen_node(g, "Flatten", "/Flatten", "c2", "f");
    n = gen_node(g, "Gemm", "/classifier/Gemm", "f,classifier.weight,classifier.bias", "logits");
    gen_attr_int(g, n, "transB", 1);
    gen_output(g, "logits");
}

/* The same network in double, NCHW. */
static void reference(const float *x, int batch, double *out)
{
    for (int b = 0; b < batch; b++) {
        double a[C1][S0][S0], h[C1][S0][S0], sh[C1][S0][S0], c2[C2][S2][S2];
        const float *xb = x + b * C0 * S0 * S0;
        for (int o = 0; o < C1; o++)
            for (int i = 0; i < S0; i++)
                for (int j = 0; j < S0; j++) {
                    double s = 0;
                    for (int c = 0; c < C0; c++)
                        for (int di = 0; di < 3; di++)
                            for (int dj = 0; dj < 3; dj++) {
                                int y = i + di - 1, xx = j + dj - 1;
                                if (y >= 0 && y < S0 && xx >= 0 && xx < S0)
                                    s += (double)xb[(c * S0 + y) * S0 + xx] *
                                         w1[((o * C0 + c) * 3 + di) * 3 + dj];
                            }
                    a[o][i][j] = s;
                }
        for (int o = 0; o < C1; o++)
            for (int i = 0; i < S0; i++)
                for (int j = 0; j < S0; j++) {
                    double v = (a[o][i][j] - bn[2][o]) / sqrt((double)bn[3][o] + 1e-5f) * bn[0][o] +
                               bn[1][o];
                    v = v < 0 ? 0 : v > 6 ? 6 : v;             /* relu, clip */
                    double hs = fmin(fmax(v / 6 + 0.5, 0), 1); /* hard swish */
                    h[o][i][j] = v * hs;
                }
        /* shuffle: out channel g*... = (N,2,4,H,W) -> (N,4,2,H,W) */
        for (int c = 0; c < C1; c++) {
            int grp = c / (C1 / 2), k = c % (C1 / 2), oc = k * 2 + grp;
            memcpy(sh[oc], h[c], sizeof sh[oc]);
        }
        for (int o = 0; o < C2; o++)
            for (int i = 0; i < S2; i++)
                for (int j = 0; j < S2; j++) {
                    double s = b2[o];
                    for (int c = 0; c < C1; c++)
                        s += sh[c][2 * i][2 * j] * w2[o * C1 + c];
                    c2[o][i][j] = s;
                }
        const double *flat = &c2[0][0][0];
        for (int o = 0; o < O; o++) {
            double s = bf[o];
            for (int k = 0; k < K; k++)
                s += flat[k] * wf[o * K + k];
            out[b * O + o] = s;
        }
    }
}

/* Run a loaded model on x (NCHW, converted to images NHWC): the largest
 * difference from the reference relative to its largest magnitude. */
static double run_vs_reference(slim_model *m, int batch, slim_error *err)
{
    float *x = malloc((size_t)batch * C0 * S0 * S0 * sizeof(float));
    double *ref = malloc((size_t)batch * O * sizeof(double));
    fill(x, batch * C0 * S0 * S0, 2, 0);
    reference(x, batch, ref);
    slim_program *p = NULL;
    slim_compile_opts co = {.num_threads = 2};
    double worst = INFINITY;
    slim_tensor in, lg;
    if (slim_graph_compile(slim_model_graph(m), &co, &p, err) == SLIM_OK &&
        slim_program_input(p, "images", &in, err) == SLIM_OK) {
        float *d = in.data;
        for (int b = 0; b < batch; b++)
            for (int c = 0; c < C0; c++)
                for (int s = 0; s < S0 * S0; s++)
                    d[(b * S0 * S0 + s) * C0 + c] = x[(b * C0 + c) * S0 * S0 + s];
        if (slim_program_run(p, NULL, err) == SLIM_OK &&
            slim_program_output(p, "logits", &lg, err) == SLIM_OK) {
            double mx = 0, diff = 0;
            for (int i = 0; i < batch * O; i++) {
                mx = fmax(mx, fabs(ref[i]));
                diff = fmax(diff, fabs(ref[i] - ((float *)lg.data)[i]));
            }
            worst = diff / mx;
        }
    }
    slim_program_free(p);
    free(x);
    free(ref);
    return worst;
}

static void test_network(slim_registry *reg)
{
    fill(w1, C1 * C0 * 9, 0.3f, 0);
    fill(bn[0], C1, 0.5f, 1);
    fill(bn[1], C1, 0.2f, 0.5f);
    fill(bn[2], C1, 0.2f, 0);
    fill(bn[3], C1, 0.4f, 1);
    fill(w2, C2 * C1, 0.5f, 0);
    fill(b2, C2, 0.1f, 0);
    fill(wf, O * K, 0.5f, 0);
    fill(bf, O, 0.1f, 0);
    gen *g = gen_new(13);
    build_net(g, 2);
    slim_model *m = NULL;
    char *yaml = NULL;
    slim_error err = {0};
    slim_status st = load(reg, g, "net.onnx", 2, &m, &yaml, &err);
    tap_ok(st == SLIM_OK, "a small network imports%s%s", st ? ": " : "", st ? err.msg : "");
    if (st != SLIM_OK) {
        gen_free(g);
        return;
    }
    /* the model file: layers named after the weights, idioms folded */
    tap_ok(strstr(yaml, "- conv2d: {name: features/0, num_outputs: 8, kernel_size: 3, "
                        "padding: [1, 1, 1, 1], biases: none, activation: none}") != NULL,
           "Conv features.0 -> conv2d layer features/0 with explicit pads");
    tap_ok(strstr(yaml, "- batch_norm: {name: features/1, decay: 0.9, epsilon: 1e-05, scale: "
                        "true, activation: relu}") != NULL,
           "BatchNormalization + Relu -> a trainable batch_norm layer with the relu");
    tap_ok(strstr(yaml, "- relu6:") != NULL, "Clip(0, 6) -> relu6");
    tap_ok(strstr(yaml, "- hard_swish:") != NULL, "HardSigmoid(1/6) + Mul -> hard_swish");
    const char *tr = strstr(yaml, "- transpose:");
    tap_ok(tr && !strstr(tr + 1, "- transpose:") && !strstr(yaml, "- flatten"),
           "channel shuffle: one transpose; no flatten");
    if (!tr || strstr(tr + 1, "- transpose:"))
        tap_diag("%s", yaml);
    tap_ok(strstr(yaml,
                  "- fully_connected: {name: classifier, num_outputs: $num_classes, activation: "
                  "none}") != NULL,
           "Flatten + Gemm -> fully_connected classifier");
    tap_ok(strstr(yaml, "input_layout: NCHW") != NULL, "input_layout: NCHW");
    /* parameters by name, in slim's layouts */
    slim_graph *gr = slim_model_graph(m);
    slim_error e2 = {0};
    slim_tensor w, cls, gamma;
    bool got = slim_graph_init_params(gr, 0, &e2) == SLIM_OK &&
               slim_graph_param_get(gr, "net/features/0/weights", &w, &e2) == SLIM_OK &&
               slim_graph_param_get(gr, "net/classifier/weights", &cls, &e2) == SLIM_OK &&
               slim_graph_param_get(gr, "net/features/1/gamma", &gamma, &e2) == SLIM_OK;
    tap_ok(got,
           "parameters net/features/0/weights, net/classifier/weights, "
           "net/features/1/gamma%s%s",
           got ? "" : ": ", got ? "" : e2.msg);
    if (got) {
        const float *hw = w.data, *cw = cls.data, *gm = gamma.data;
        /* HWIO (kh, kw, c, o) = OIHW (o, c, kh, kw) */
        tap_ok(w.shape.rank == 4 && w.shape.dim[0] == 3 && w.shape.dim[2] == C0 &&
                   w.shape.dim[3] == C1 &&
                   hw[((1 * 3 + 2) * C0 + 3) * C1 + 5] == w1[((5 * C0 + 3) * 3 + 1) * 3 + 2],
               "conv weights (8, 4, 3, 3) OIHW -> (3, 3, 4, 8) HWIO");
        /* fully_connected rows follow NHWC's flatten: row (s, c) = ONNX's c * 4 + s */
        tap_ok(cls.shape.dim[0] == K && cls.shape.dim[1] == O &&
                   cw[(3 * C2 + 1) * O + 2] == wf[2 * K + 1 * S2 * S2 + 3],
               "Gemm weights (3, 16) -> (16, 3), rows permuted to the NHWC flatten");
        tap_ok(gm[4] == bn[0][4], "batch norm scale -> gamma");
    }
    double rel = run_vs_reference(m, 2, &err);
    tap_ok(rel < 1e-5, "logits at batch 2 (the file's) match the reference: %.2g", rel);
    slim_model_free(m);
    /* the same file at batch 3: the model file is batch-agnostic */
    m = NULL;
    char path[1024];
    snprintf(path, sizeof path, "%s/net.yaml", tap_tmpdir());
    tap_write_file(path, yaml, strlen(yaml));
    slim__onnx_importer *imp = NULL;
    slim__onnx_opts o = {.reg = reg, .root = "net", .model = true};
    st = slim__onnx_import(&o, gen_model(g), "net.onnx", &imp, &err);
    slim_model_opts mo = {
        .batch_size = 3,
        .weight_decay = -1,
        .param_value =
            (const float *(*)(void *, const char *, const slim_shape *))slim__onnx_param_data,
        .param_value_user = imp};
    if (st == SLIM_OK)
        st = slim_model_load(reg, path, &mo, &m, &err);
    tap_ok(st == SLIM_OK, "the model file loads at batch 3%s%s", st ? ": " : "", st ? err.msg : "");
    if (st == SLIM_OK) {
        rel = run_vs_reference(m, 3, &err);
        tap_ok(rel < 1e-5, "logits at batch 3 match the reference: %.2g", rel);
    }
    slim_model_free(m);
    slim__onnx_import_free(imp);
    free(yaml);
    gen_free(g);
}

/* ---- unsupported ops, plugins --------------------------------------------------------- */

static void test_unsupported(slim_registry *reg)
{
    gen *g = gen_new(13);
    int64_t xd[4] = {1, 2, 3, 3};
    gen_input(g, "x", 4, xd);
    gen_node(g, "Foo", "foo1", "x", "a");
    gen_node(g, "Relu", "relu", "a", "b");
    Onnx__NodeProto *n = gen_node(g, "Bar", "bar1", "b", "c");
    n->domain = "com.acme";
    gen_node(g, "Foo", "foo2", "c", "d");
    gen_output(g, "d");
    slim_model *m = NULL;
    slim_error err = {0};
    slim_status st = load(reg, g, "unsup.onnx", 1, &m, NULL, &err);
    tap_ok(st == SLIM_EUNSUPPORTED, "unsupported ops: SLIM_EUNSUPPORTED (%d)", st);
    tap_ok(strstr(err.msg, "3 nodes of ONNX ops slim does not implement") &&
               strstr(err.msg, "node 'foo1': Foo (domain ai.onnx, opset 13)") &&
               strstr(err.msg, "node 'bar1': Bar (domain com.acme, opset 1)") &&
               strstr(err.msg, "node 'foo2': Foo (domain ai.onnx, opset 13)") &&
               strstr(err.msg, "Writing an op plugin"),
           "one error lists every unsupported node (name, op type, opset) and the plugin guide");
    if (st != SLIM_EUNSUPPORTED)
        tap_diag("%s", err.msg);
    slim_model_free(m);
    gen_free(g);
}

static void test_plugin(void)
{
    /* x (2,3,2,2) -> Swish(beta 1.5) -> Flatten -> Gemm -> (2, 4) */
    gen *g = gen_new(13);
    int64_t xd[4] = {2, 3, 2, 2}, wd[2] = {4, 12}, bd[1] = {4};
    float w[48], bias[4];
    fill(w, 48, 0.5f, 0);
    fill(bias, 4, 0.1f, 0);
    gen_input(g, "x", 4, xd);
    gen_init(g, "fc.weight", 2, wd, w);
    gen_init(g, "fc.bias", 1, bd, bias);
    Onnx__NodeProto *n = gen_node(g, "Swish", "gate", "x", "s");
    gen_attr_float(g, n, "beta", 1.5f);
    gen_node(g, "Flatten", "flat", "s", "f");
    n = gen_node(g, "Gemm", "fc", "f,fc.weight,fc.bias", "y");
    gen_attr_int(g, n, "transB", 1);
    gen_output(g, "y");
    slim_registry *reg;
    slim_error err = {0};
    slim_registry_new(&reg, &err);
    slim_model *m = NULL;
    char *yaml = NULL;
    slim_status st = load(reg, g, "swish.onnx", 2, &m, NULL, &err);
    tap_ok(st == SLIM_EUNSUPPORTED && strstr(err.msg, "node 'gate': Swish"),
           "without the plugin, Swish is unsupported");
    st = slim_registry_load_plugin(reg, plugin_path("swish"), &err);
    tap_ok(st == SLIM_OK && slim_registry_onnx_op(reg, "Swish") &&
               !strcmp(slim_registry_onnx_op(reg, "Swish"), "swish"),
           "plugins/swish.c declares the ONNX op Swish%s%s", st ? ": " : "", st ? err.msg : "");
    st = load(reg, g, "swish.onnx", 2, &m, &yaml, &err);
    tap_ok(st == SLIM_OK, "with the plugin the model imports%s%s", st ? ": " : "",
           st ? err.msg : "");
    if (st == SLIM_OK) {
        tap_ok(strstr(yaml, "- swish: {name: gate, beta: 1.5}") != NULL,
               "the node is a swish layer with its beta");
        slim_program *p = NULL;
        slim_compile_opts co = {.num_threads = 1};
        slim_tensor in, out;
        float x[24];
        fill(x, 24, 3, 0);
        double worst = INFINITY;
        if (slim_graph_compile(slim_model_graph(m), &co, &p, &err) == SLIM_OK &&
            slim_program_input(p, "images", &in, &err) == SLIM_OK) {
            for (int b = 0; b < 2; b++)
                for (int c = 0; c < 3; c++)
                    for (int s = 0; s < 4; s++)
                        ((float *)in.data)[(b * 4 + s) * 3 + c] = x[(b * 3 + c) * 4 + s];
            if (slim_program_run(p, NULL, &err) == SLIM_OK &&
                slim_program_output(p, "logits", &out, &err) == SLIM_OK) {
                worst = 0;
                for (int b = 0; b < 2; b++)
                    for (int o = 0; o < 4; o++) {
                        double s = bias[o];
                        for (int k = 0; k < 12; k++) {
                            double v = x[b * 12 + k];
                            s += v / (1 + exp(-1.5 * v)) * w[o * 12 + k];
                        }
                        worst = fmax(worst, fabs(s - ((float *)out.data)[b * 4 + o]));
                    }
            }
        }
        tap_ok(worst < 1e-4, "the plugin op computes x * sigmoid(1.5 x): max error %.2g", worst);
        slim_program_free(p);
    }
    free(yaml);
    slim_model_free(m);
    slim_registry_free(reg);
    gen_free(g);
}

/* ---- malformed models --------------------------------------------------------------- */

static void expect_error(slim_registry *reg, gen *g, const char *what, const char *needle)
{
    slim_model *m = NULL;
    slim_error err = {0};
    slim_status st = load(reg, g, "bad.onnx", 1, &m, NULL, &err);
    bool ok = st != SLIM_OK && strstr(err.msg, needle) && strstr(err.msg, "bad.onnx");
    tap_ok(ok, "%s: an error naming the file and \"%s\"", what, needle);
    if (!ok)
        tap_diag("status %d: %s", st, err.msg);
    slim_model_free(m);
    gen_free(g);
}

static gen *one_conv(int64_t groups, int wrank)
{
    gen *g = gen_new(13);
    int64_t xd[4] = {1, 4, 3, 3}, wd[4] = {4, 4, 1, 1};
    float w[16] = {0};
    gen_input(g, "x", 4, xd);
    gen_init(g, "w", wrank, wd, w);
    Onnx__NodeProto *n = gen_node(g, "Conv", "conv", "x,w", "y");
    gen_attr_int(g, n, "group", groups);
    gen_node(g, "Flatten", "flat", "y", "logits");
    gen_output(g, "logits");
    return g;
}

static void test_malformed(slim_registry *reg)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/trunc.onnx", tap_tmpdir());
    gen *g = one_conv(1, 4);
    size_t len;
    uint8_t *bytes = gen_pack(g, &len);
    tap_write_file(path, bytes, len / 2);
    slim_model *m = NULL;
    slim_error err = {0};
    slim_model_opts mo = {.batch_size = 1, .weight_decay = -1};
    slim_status st = slim_model_load(reg, path, &mo, &m, &err);
    tap_ok(st == SLIM_ECORRUPT && strstr(err.msg, "trunc.onnx: not an ONNX model"),
           "a truncated file: not an ONNX model (%s)", err.msg);
    free(bytes);
    gen_free(g);

    expect_error(reg, one_conv(3, 4), "a group that does not divide the channels", "node 'conv'");
    expect_error(reg, one_conv(1, 3), "weights of the wrong rank", "weights of rank 3");
    g = one_conv(1, 4);
    /* an initializer holding fewer bytes than its dims say */
    gen_model(g)->graph->initializer[0]->raw_data.len = 20;
    expect_error(reg, g, "an initializer's data shorter than its dims",
                 "initializer 'w' holds 5 values for dims (4,4,1,1) (16 elements)");
    g = one_conv(1, 4);
    gen_model(g)->graph->initializer[0]->dims[1] = -4;
    expect_error(reg, g, "a negative dim", "negative");
    g = one_conv(1, 4);
    gen_model(g)->graph->node[1]->input[0] = "nowhere";
    expect_error(reg, g, "an undefined input", "'nowhere' is used before it is defined");
    g = gen_new(13);
    int64_t xd[4] = {1, 2, 2, 2}, idx = 7, one = 1;
    gen_input(g, "x", 4, xd);
    gen_init_i64(g, "i", 1, &one, &idx);
    gen_node(g, "Shape", "shape", "x", "s");
    gen_node(g, "Gather", "gather", "s,i", "d");
    gen_node(g, "Reshape", "reshape", "x,d", "logits");
    gen_output(g, "logits");
    expect_error(reg, g, "a Gather index out of range", "index 7 out of range [0, 4)");
    g = gen_new(13);
    int64_t sd[1] = {2}, bad_shape[2] = {-3, 4};
    gen_input(g, "x", 4, xd);
    gen_init_i64(g, "s", 1, sd, bad_shape);
    gen_node(g, "Reshape", "reshape", "x,s", "logits");
    gen_output(g, "logits");
    expect_error(reg, g, "a Reshape to a negative dim", "node 'reshape' (Reshape, opset 13)");
    g = gen_new(13);
    int64_t x5[5] = {1, 2, 2, 2, 2};
    gen_input(g, "x", 5, x5);
    gen_node(g, "Relu", "relu", "x", "logits");
    gen_output(g, "logits");
    expect_error(reg, g, "a 5-D input", "rank 5");
}

/* ---- bytes protobuf-c refuses: the offset and the field ------------------------------ */

static void wire_case(slim_registry *reg, const char *name, const uint8_t *bytes, size_t len,
                      const char *needle)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tap_tmpdir(), name);
    tap_write_file(path, bytes, len);
    slim_model *m = NULL;
    slim_error err = {0};
    slim_model_opts mo = {.batch_size = 1, .weight_decay = -1};
    slim_status st = slim_model_load(reg, path, &mo, &m, &err);
    char want[512];
    snprintf(want, sizeof want, "%s: not an ONNX model: %s", name, needle);
    bool ok = st == SLIM_ECORRUPT && strstr(err.msg, want);
    tap_ok(ok, "%s: \"%s\"", name, want);
    if (!ok)
        tap_diag("status %d: %s", st, err.msg);
    slim_model_free(m);
}

static void test_wire(slim_registry *reg)
{
    /* graph (7, length-delimited) of 5 bytes holding a node (1) claiming 16 */
    static const uint8_t node_len[] = {0x3a, 0x05, 0x0a, 0x10, 0, 0, 0};
    wire_case(reg, "node_len.onnx", node_len, sizeof node_len,
              "offset 3 (graph.node[0]): a length of 16 bytes runs past the end of its "
              "message (offset 7)");
    /* ir_version (1, an int64) sent length-delimited */
    static const uint8_t ir_wire[] = {0x0a, 0x00};
    wire_case(reg, "ir_wire.onnx", ir_wire, sizeof ir_wire,
              "offset 0 (ir_version): field ir_version (number 1) has wire type "
              "length-delimited, not varint");
    /* a group (field 5, wire type 3) */
    static const uint8_t group[] = {0x08, 0x07, 0x2b, 0x2c};
    wire_case(reg, "group.onnx", group, sizeof group,
              "offset 2: field 5 has wire type group start, which protobuf-c does not read");
    /* the second node's attribute (5) whose float f (2, four bytes) is cut */
    static const uint8_t cut[] = {0x3a, 0x0b, 0x0a, 0x02, 0x2a, 0x00, 0x0a,
                                  0x05, 0x2a, 0x03, 0x15, 0x00, 0x00};
    wire_case(reg, "cut.onnx", cut, sizeof cut,
              "offset 11 (graph.node[1].attribute[0].f): a 4-byte value cut off (2 bytes left)");
    /* a varint of 11 bytes */
    static const uint8_t long_varint[] = {0x08, 0x80, 0x80, 0x80, 0x80, 0x80,
                                          0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    wire_case(reg, "long_varint.onnx", long_varint, sizeof long_varint,
              "offset 1 (ir_version): a varint longer than 10 bytes");
    /* a tensor file: dims (1, packed) whose varint is cut */
    char path[1024];
    snprintf(path, sizeof path, "%s/dims.pb", tap_tmpdir());
    static const uint8_t dims[] = {0x0a, 0x02, 0x03, 0x80};
    tap_write_file(path, dims, sizeof dims);
    slim__ox_tensor t;
    slim_error err = {0};
    slim_status st = slim__ox_tensor_load(path, &t, &err);
    tap_ok(st == SLIM_ECORRUPT &&
               strstr(err.msg, "dims.pb is not a TensorProto: offset 3 (dims[0]): a packed "
                               "varint cut off"),
           "a tensor file with a cut packed varint: the offset (%s)", err.msg);
    slim__ox_tensor_fini(&t);
    /* a well-formed model: nothing to explain */
    gen *g = one_conv(1, 4);
    size_t len;
    uint8_t *bytes = gen_pack(g, &len);
    char why[256] = "x";
    tap_ok(!slim__pb_explain(&onnx__model_proto__descriptor, bytes, len, why, sizeof why) &&
               !why[0],
           "a well-formed model has no defect to explain");
    free(bytes);
    gen_free(g);
}

/* ---- .npy ----------------------------------------------------------------------------- */

static void npy_case(const char *name, const void *bytes, size_t len, const char *needle)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tap_tmpdir(), name);
    tap_write_file(path, bytes, len);
    slim__npy a;
    slim_error err = {0};
    slim_status st = slim__npy_read(path, &a, &err);
    bool ok = st != SLIM_OK && strstr(err.msg, needle) && strstr(err.msg, name);
    tap_ok(ok, "npy %s: \"%s\"", name, needle);
    if (!ok)
        tap_diag("status %d: %s", st, err.msg);
    slim__npy_free(&a);
}

/* A .npy with header text h (padded) and nbytes of data. */
static size_t npy_bytes(uint8_t *buf, const char *h, size_t nbytes)
{
    size_t hl = strlen(h);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (uint8_t)(hl + 1);
    buf[9] = 0;
    memcpy(buf + 10, h, hl);
    buf[10 + hl] = '\n';
    memset(buf + 11 + hl, 0, nbytes);
    return 11 + hl + nbytes;
}

static void test_npy(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/a.npy", tap_tmpdir());
    float v[24];
    fill(v, 24, 1, 0);
    int64_t d[3] = {2, 3, 4};
    slim_error err = {0};
    slim__npy a;
    bool ok = slim__npy_write(path, v, 3, d, &err) == SLIM_OK &&
              slim__npy_read(path, &a, &err) == SLIM_OK;
    tap_ok(ok && a.rank == 3 && a.dim[0] == 2 && a.dim[2] == 4 && !memcmp(a.data, v, sizeof v),
           "npy write then read: the same (2, 3, 4) values");
    if (ok)
        slim__npy_free(&a);
    size_t len;
    uint8_t *raw = tap_read_file(path, &len);
    tap_ok(raw && len % 64 == 32 &&
               !memcmp(raw + 10,
                       "{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (2, 3, 4), }",
                       57),
           "numpy's header layout (data 64-byte aligned after the 10-byte preamble)");
    free(raw);
    uint8_t b[512];
    static const char zip[] = "PK\x03\x04 not numpy at all";
    npy_case("magic.npy", zip, sizeof zip - 1, "offset 0: not a NumPy .npy file");
    npy_case("f8.npy", b,
             npy_bytes(b, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16),
             "offset 20: 'descr' is '<f8'; slim reads little-endian float32");
    npy_case("big.npy", b,
             npy_bytes(b, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8),
             "'descr' is '>f4'");
    npy_case("fortran.npy", b,
             npy_bytes(b, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16),
             "offset 44: 'fortran_order' is True");
    npy_case("short.npy", b,
             npy_bytes(b, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 20),
             "20 bytes of data for a shape of 6 float32 (24 bytes)");
    npy_case("huge.npy", b,
             npy_bytes(
                 b, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999, 99999999), }", 4),
             "a shape of more than");
    npy_case("key.npy", b, npy_bytes(b, "{'descr': '<f4', 'order': False, 'shape': (2,), }", 8),
             "unexpected header key order");
    npy_case("nokey.npy", b, npy_bytes(b, "{'descr': '<f4', 'shape': (2,), }", 8),
             "the header lacks 'fortran_order'");
    memcpy(b, "\x93NUMPY\x01\x00\xff\x00{", 11);
    npy_case("hlen.npy", b, 11, "offset 8: a header of 255 bytes, but the file has 1 after it");
    memcpy(b, "\x93NUMPY\x04\x00\x10\x00", 10);
    npy_case("v4.npy", b, 10, "offset 6: format version 4.0");
}

int main(void)
{
    slim_registry *reg;
    slim_error err = {0};
    if (slim_registry_new(&reg, &err) != SLIM_OK) {
        printf("Bail out! %s\n", err.msg);
        return 1;
    }
    test_network(reg);
    test_unsupported(reg);
    test_plugin();
    test_malformed(reg);
    test_wire(reg);
    test_npy();
    slim_registry_free(reg);
    return tap_done();
}
