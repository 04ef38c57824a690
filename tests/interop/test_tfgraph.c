/*
 * tests/interop/test_tfgraph.c - frozen TensorFlow GraphDefs imported
 * (interop/tf_graph*.c through the ONNX importer):
 *   - dl4j-tf-graphs/conv_0 (Conv2D SAME, AvgPool, MaxPool, Reshape, MatMul)
 *     run on its stored input equals its stored output;
 *   - lenet_frozen.pb imports with TF-Slim's names (its ArgMax dropped, the
 *     flatten's Shape/StridedSlice/Pack folded), and runs on tfx_mnist;
 *   - a graph written here of every other op the importer maps (Pad,
 *     BiasAdd, FusedBatchNormV3, Relu6, DepthwiseConv2dNative, ConcatV2,
 *     Mean, Squeeze, Softmax ...) equals a plain C computation of it;
 *   - malformed and unsupported graphs: errors naming the file and node.
 */
#include "interop/tf_graph.h"
#include "interop/tf_graph.pb-c.h"

#include <slim/model.h>
#include <slim/slim.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/data/tap.h"

/* ---- GraphDefs written here --------------------------------------------------------- */

/* Everything a graph holds, freed together. */
static void *mem[4096];
static int n_mem;

static void *alloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p || n_mem == (int)(sizeof mem / sizeof *mem)) {
        fprintf(stderr, "out of memory\n");
        exit(99);
    }
    return mem[n_mem++] = p;
}

static void free_all(void)
{
    while (n_mem)
        free(mem[--n_mem]);
}

typedef struct gdef {
    Tensorflow__NodeDef *node[64];
    int n;
} gdef;

static Tensorflow__NodeDef *add(gdef *g, const char *name, const char *op, ...)
{
    Tensorflow__NodeDef *nd = alloc(sizeof *nd);
    tensorflow__node_def__init(nd);
    nd->name = (char *)name;
    nd->op = (char *)op;
    nd->input = alloc(16 * sizeof(char *));
    va_list ap;
    va_start(ap, op);
    for (const char *in; (in = va_arg(ap, const char *));)
        nd->input[nd->n_input++] = (char *)in;
    va_end(ap);
    nd->attr = alloc(16 * sizeof *nd->attr);
    g->node[g->n++] = nd;
    return nd;
}

static Tensorflow__AttrValue *attr(Tensorflow__NodeDef *nd, const char *key)
{
    Tensorflow__AttrEntry *e = alloc(sizeof *e);
    Tensorflow__AttrValue *v = alloc(sizeof *v);
    tensorflow__attr_entry__init(e);
    tensorflow__attr_value__init(v);
    e->key = (char *)key;
    e->value = v;
    nd->attr[nd->n_attr++] = e;
    return v;
}

static void attr_s(Tensorflow__NodeDef *nd, const char *key, const char *s)
{
    Tensorflow__AttrValue *v = attr(nd, key);
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_S;
    v->s.data = (uint8_t *)s;
    v->s.len = strlen(s);
}

static void attr_b(Tensorflow__NodeDef *nd, const char *key, bool b)
{
    Tensorflow__AttrValue *v = attr(nd, key);
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_B;
    v->b = b;
}

static void attr_f(Tensorflow__NodeDef *nd, const char *key, float f)
{
    Tensorflow__AttrValue *v = attr(nd, key);
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_F;
    v->f = f;
}

static void attr_ints(Tensorflow__NodeDef *nd, const char *key, int n, const int64_t *x)
{
    Tensorflow__AttrValue *v = attr(nd, key);
    Tensorflow__AttrValue__ListValue *l = alloc(sizeof *l);
    tensorflow__attr_value__list_value__init(l);
    l->i = alloc((size_t)n * sizeof(int64_t));
    memcpy(l->i, x, (size_t)n * sizeof(int64_t));
    l->n_i = (size_t)n;
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_LIST;
    v->list = l;
}

static Tensorflow__TensorShapeProto *shape(int rank, const int64_t *dim)
{
    Tensorflow__TensorShapeProto *s = alloc(sizeof *s);
    tensorflow__tensor_shape_proto__init(s);
    s->dim = alloc((size_t)(rank + 1) * sizeof *s->dim);
    for (int i = 0; i < rank; i++) {
        Tensorflow__TensorShapeProto__Dim *d = alloc(sizeof *d);
        tensorflow__tensor_shape_proto__dim__init(d);
        d->size = dim[i];
        s->dim[i] = d;
    }
    s->n_dim = (size_t)rank;
    return s;
}

static Tensorflow__NodeDef *placeholder(gdef *g, const char *name, int64_t n, int64_t h, int64_t c)
{
    Tensorflow__NodeDef *nd = add(g, name, "Placeholder", NULL);
    Tensorflow__AttrValue *v = attr(nd, "dtype");
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_TYPE;
    v->type = TENSORFLOW__DATA_TYPE__DT_FLOAT;
    v = attr(nd, "shape");
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_SHAPE;
    v->shape = shape(4, (int64_t[]){n, h, h, c});
    return nd;
}

/* A Const of floats (tensor_content) or int32s (int_val). */
static Tensorflow__NodeDef *cnst(gdef *g, const char *name, int rank, const int64_t *dim,
                                 const float *f, const int32_t *i)
{
    Tensorflow__NodeDef *nd = add(g, name, "Const", NULL);
    Tensorflow__TensorProto *tp = alloc(sizeof *tp);
    tensorflow__tensor_proto__init(tp);
    tp->tensor_shape = shape(rank, dim);
    int64_t n = 1;
    for (int k = 0; k < rank; k++)
        n *= dim[k];
    if (f) {
        tp->dtype = TENSORFLOW__DATA_TYPE__DT_FLOAT;
        tp->tensor_content.data = alloc((size_t)n * 4);
        memcpy(tp->tensor_content.data, f, (size_t)n * 4);
        tp->tensor_content.len = (size_t)n * 4;
    } else {
        tp->dtype = TENSORFLOW__DATA_TYPE__DT_INT32;
        tp->int_val = alloc((size_t)n * 4);
        memcpy(tp->int_val, i, (size_t)n * 4);
        tp->n_int_val = (size_t)n;
    }
    Tensorflow__AttrValue *v = attr(nd, "value");
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_TENSOR;
    v->tensor = tp;
    return nd;
}

static uint8_t *pack(const gdef *g, size_t *len)
{
    Tensorflow__GraphDef gd;
    tensorflow__graph_def__init(&gd);
    gd.node = (Tensorflow__NodeDef **)g->node;
    gd.n_node = (size_t)g->n;
    *len = tensorflow__graph_def__get_packed_size(&gd);
    uint8_t *b = alloc(*len);
    tensorflow__graph_def__pack(&gd, b);
    return b;
}

static const char *write_graph(const gdef *g, const char *name)
{
    static char path[1200];
    size_t len;
    uint8_t *b = pack(g, &len);
    /* TFGRAPH_SEEDS=DIR: also as the fuzzer's inputs (tests/fuzz/regress/tfgraph/) */
    const char *seeds = getenv("TFGRAPH_SEEDS");
    if (seeds) {
        uint8_t *o = alloc(len + 1);
        memcpy(o + 1, b, len);
        snprintf(path, sizeof path, "%s/%s", seeds, name);
        tap_write_file(path, o, len + 1);
    }
    snprintf(path, sizeof path, "%s/%s", tap_tmpdir(), name);
    tap_write_file(path, b, len);
    return path;
}

/* ---- running an imported model ------------------------------------------------------ */

static slim_registry *reg;

static slim_status load(const char *path, const char *output, int batch, slim_model **m,
                        char **yaml, char *note, size_t note_n, slim_error *err)
{
    slim__tfg_opts o = {.output = output, .note = note, .note_size = note_n};
    slim_model_opts mo = {.batch_size = batch, .weight_decay = -1};
    slim_status st = slim__tfg_model_load(reg, path, NULL, &o, &mo, m, yaml, err);
    if (!st)
        st = slim_graph_init_params(slim_model_graph(*m), 0, err);
    return st;
}

/* images (N,H,W,C) in, logits out (malloc'd), or NULL with err set. */
static float *run(slim_model *m, const float *x, size_t n_x, int64_t *n_out, slim_error *err)
{
    slim_program *p = NULL;
    slim_compile_opts co = {.num_threads = 2};
    slim_tensor in, lg;
    float *y = NULL;
    if (!slim_graph_compile(slim_model_graph(m), &co, &p, err) &&
        !slim_program_input(p, "images", &in, err) && slim_shape_numel(&in.shape) == (int64_t)n_x) {
        memcpy(in.data, x, n_x * sizeof(float));
        if (!slim_program_run(p, NULL, err) && !slim_program_output(p, "logits", &lg, err)) {
            *n_out = slim_shape_numel(&lg.shape);
            y = malloc((size_t)*n_out * sizeof *y);
            memcpy(y, lg.data, (size_t)*n_out * sizeof *y);
        }
    }
    slim_program_free(p);
    return y;
}

static float *read_csv(const char *path, size_t *n)
{
    size_t len;
    uint8_t *b = tap_read_file(path, &len);
    if (!b)
        return NULL;
    float *v = malloc((len / 2 + 1) * sizeof *v);
    char *s = (char *)b, *end;
    *n = 0;
    for (double x; (x = strtod(s, &end)), end != s; s = end)
        v[(*n)++] = (float)x;
    free(b);
    return v;
}

/* dl4j's conv_0: its stored input through the import, against its stored output */
static void conv_0(void)
{
    char path[1024], in[1024], out[1024];
    snprintf(path, sizeof path, "%s",
             tap_data_path("tfckpt/dl4j-tf-graphs/conv_0/frozen_model.pb"));
    snprintf(in, sizeof in, "%s",
             tap_data_path("tfckpt/dl4j-tf-graphs/conv_0/image.placeholder.csv"));
    snprintf(out, sizeof out, "%s",
             tap_data_path("tfckpt/dl4j-tf-graphs/conv_0/output.prediction.csv"));
    size_t nx = 0, ny = 0;
    float *x = read_csv(in, &nx), *want = read_csv(out, &ny);
    slim_model *m = NULL;
    char *yaml = NULL, note[200];
    slim_error err = {0};
    slim_status st = load(path, NULL, 4, &m, &yaml, note, sizeof note, &err);
    tap_ok(!st && x && want && nx == 4 * 28 * 28 * 3 && ny == 8,
           "conv_0/frozen_model.pb imports (input (4,28,28,3), output (4,2))%s%s", st ? ": " : "",
           st ? err.msg : "");
    if (!st) {
        tap_ok(strstr(yaml, "conv2d: {name: filterW1, num_outputs: 3, kernel_size: 5, stride: 3, "
                            "padding: [2, 2, 2, 2]") &&
                   strstr(yaml, "avg_pool: {name: avg_pool2") && !strstr(yaml, "transpose"),
               "... Conv2D SAME stride 3 as conv2d with TensorFlow's pads; no transposes");
        int64_t n = 0;
        float *y = run(m, x, nx, &n, &err);
        double worst = y && n == 8 ? 0 : INFINITY;
        for (int64_t i = 0; y && i < n && i < 8; i++)
            worst = fmax(worst, fabs(y[i] - want[i]) / fmax(1, fabs(want[i])));
        tap_ok(worst < 1e-5,
               "... on its stored input, equal to its stored output (largest relative "
               "difference %.2g; first logits %.6f %.6f, TensorFlow's %.6f %.6f)%s%s",
               worst, y ? y[0] : 0, y ? y[1] : 0, want ? want[0] : 0, want ? want[1] : 0,
               y ? "" : ": ", y ? "" : err.msg);
        free(y);
    }
    free(x);
    free(want);
    free(yaml);
    slim_model_free(m);
}

/* lenet_frozen.pb: TF-Slim's names, the ArgMax dropped, the flatten folded */
static void lenet(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", tap_data_path("tfckpt/dl4j-tf-graphs/lenet_frozen.pb"));
    slim_model *m = NULL;
    char *yaml = NULL, note[200] = "";
    slim_error err = {0};
    slim_status st = load(path, NULL, 100, &m, &yaml, note, sizeof note, &err);
    tap_ok(!st, "lenet_frozen.pb imports%s%s", st ? ": " : "", st ? err.msg : "");
    if (st)
        return;
    static const char *const names[] = {
        "Lenet/conv1/weights", "Lenet/conv1/biases", "Lenet/conv3/weights", "Lenet/conv3/biases",
        "Lenet/conv5/weights", "Lenet/conv5/biases", "Lenet/fc7/weights",   "Lenet/fc7/biases",
        "Lenet/fc9/weights",   "Lenet/fc9/biases"};
    slim_graph *g = slim_model_graph(m);
    int found = 0;
    for (int i = 0; i < 10; i++) {
        slim_tensor v;
        slim_error e = {0};
        found += slim_graph_param_get(g, names[i], &v, &e) == SLIM_OK;
    }
    tap_ok(found == 10 && slim_graph_param_count(g) == 10,
           "... its 10 parameters are TF-Slim's Lenet/conv1/weights ... Lenet/fc9/biases (%d of "
           "10 found, %d in all)",
           found, slim_graph_param_count(g));
    tap_ok(!strcmp(note, "ArgMax 'output'"), "... its ArgMax output dropped: '%s'", note);
    tap_ok(strstr(yaml, "name: Lenet\n") && strstr(yaml, "channels: 1\n") &&
               strstr(yaml, "fully_connected: {name: fc9, num_outputs: $num_classes"),
           "... the model Lenet, 28x28x1, fc9 its logits (the flatten's Shape, StridedSlice, Pack "
           "folded)");
    /* MNIST: no reference output came with it; report its accuracy on [0, 1] pixels */
    slim_tfrecord_reader *r = NULL;
    float *x = calloc(100 * 784, sizeof *x);
    int label[100], k = 0;
    if (!slim_tfrecord_open(tap_data_path("tfrecord/tfx_mnist.tfrecord"), SLIM_COMPRESSION_NONE,
                            true, &r, &err)) {
        const uint8_t *d;
        size_t len;
        int64_t off;
        while (k < 100 && !slim_tfrecord_next(r, &d, &len, &off, &err) && d) {
            slim_example *ex;
            const float *f;
            const int64_t *c;
            size_t nf, nc;
            if (!slim_example_parse(d, len, &ex, &err) &&
                !slim_example_floats(ex, "image_floats", &f, &nf) &&
                !slim_example_int64s(ex, "image_class", &c, &nc) && nf == 784 && nc == 1) {
                for (int i = 0; i < 784; i++)
                    x[k * 784 + i] = f[i] + 0.5f; /* TFX stores pixel / 255 - 0.5 */
                label[k++] = (int)c[0];
            }
            slim_example_free(ex);
        }
        slim_tfrecord_close(r);
    }
    int64_t n = 0;
    float *y = k == 100 ? run(m, x, 100 * 784, &n, &err) : NULL;
    int correct = 0;
    for (int i = 0; y && i < 100; i++) {
        int best = 0;
        for (int j = 1; j < 10; j++)
            best = y[i * 10 + j] > y[i * 10 + best] ? j : best;
        correct += best == label[i];
    }
    /* far above chance (10%): the layers are wired as TensorFlow's */
    tap_ok(y && correct > 30,
           "... runs on 100 tfx_mnist digits: %d correct (the graph came without a reference "
           "output or its preprocessing; chance is 10)",
           correct);
    free(y);
    free(x);
    free(yaml);
    slim_model_free(m);
}

/* ---- every other op, against a plain computation ---------------------------------- */

static float wave(int i, float s)
{
    return s * sinf(0.37f * (float)i + 0.5f);
}

/* NHWC conv (HWIO filter, or (KH,KW,C,M) depthwise), stride s, pads t/l (b/r implied
 * by the output size). */
static void ref_conv(const float *x, int N, int H, int C, const float *w, int K, int O, bool dw,
                     int M, int s, int pt, int OH, float *y)
{
    for (int n = 0; n < N; n++)
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OH; ow++)
                for (int o = 0; o < O; o++) {
                    double acc = 0;
                    for (int kh = 0; kh < K; kh++)
                        for (int kw = 0; kw < K; kw++) {
                            int ih = oh * s + kh - pt, iw = ow * s + kw - pt;
                            if (ih < 0 || iw < 0 || ih >= H || iw >= H)
                                continue;
                            const float *px = x + ((n * H + ih) * H + iw) * C;
                            if (dw)
                                acc += px[o / M] * w[((kh * K + kw) * C + o / M) * M + o % M];
                            else
                                for (int c = 0; c < C; c++)
                                    acc += px[c] * w[((kh * K + kw) * C + c) * O + o];
                        }
                    y[((n * OH + oh) * OH + ow) * O + o] = (float)acc;
                }
}

enum { GN = 2, GH = 6, GC = 3, C1 = 4, M2 = 2, C2 = C1 * M2, OUT = 5 };

static void ops_graph(void)
{
    /* the weights */
    float w1[3 * 3 * GC * C1], b1[C1], gamma[C1], beta[C1], mu[C1], var[C1], w2[3 * 3 * C1 * M2],
        b2[C2], w3[(C2 + C1) * OUT], b3[OUT], x[GN * GH * GH * GC];
    for (int i = 0; i < (int)(sizeof w1 / 4); i++)
        w1[i] = wave(i, 0.3f);
    for (int i = 0; i < C1; i++) {
        b1[i] = wave(i + 7, 0.2f);
        gamma[i] = 1 + wave(i + 3, 0.3f);
        beta[i] = wave(i + 11, 0.5f);
        mu[i] = wave(i + 5, 0.2f);
        var[i] = 0.5f + (float)i * 0.25f;
    }
    for (int i = 0; i < (int)(sizeof w2 / 4); i++)
        w2[i] = wave(i + 2, 0.4f);
    for (int i = 0; i < C2; i++)
        b2[i] = wave(i + 9, 0.1f);
    for (int i = 0; i < (int)(sizeof w3 / 4); i++)
        w3[i] = wave(i + 13, 0.5f);
    for (int i = 0; i < OUT; i++)
        b3[i] = wave(i + 17, 0.2f);
    for (int i = 0; i < (int)(sizeof x / 4); i++)
        x[i] = wave(i, 1.0f);
    /* the graph */
    gdef g = {0};
    placeholder(&g, "input", -1, GH, GC);
    cnst(&g, "net/pad/paddings", 2, (int64_t[]){4, 2}, NULL, (int32_t[]){0, 0, 1, 1, 1, 1, 0, 0});
    add(&g, "net/pad", "Pad", "input", "net/pad/paddings", NULL);
    cnst(&g, "net/conv1/weights", 4, (int64_t[]){3, 3, GC, C1}, w1, NULL);
    add(&g, "net/conv1/weights/read", "Identity", "net/conv1/weights", NULL);
    cnst(&g, "net/conv1/biases", 1, (int64_t[]){C1}, b1, NULL);
    Tensorflow__NodeDef *n =
        add(&g, "net/conv1/Conv2D", "Conv2D", "net/pad", "net/conv1/weights/read", NULL);
    attr_ints(n, "strides", 4, (int64_t[]){1, 1, 1, 1});
    attr_s(n, "padding", "VALID");
    attr_s(n, "data_format", "NHWC");
    add(&g, "net/conv1/BiasAdd", "BiasAdd", "net/conv1/Conv2D", "net/conv1/biases", NULL);
    cnst(&g, "net/conv1/BatchNorm/gamma", 1, (int64_t[]){C1}, gamma, NULL);
    cnst(&g, "net/conv1/BatchNorm/beta", 1, (int64_t[]){C1}, beta, NULL);
    cnst(&g, "net/conv1/BatchNorm/moving_mean", 1, (int64_t[]){C1}, mu, NULL);
    cnst(&g, "net/conv1/BatchNorm/moving_variance", 1, (int64_t[]){C1}, var, NULL);
    n = add(&g, "net/conv1/BatchNorm/FusedBatchNormV3", "FusedBatchNormV3", "net/conv1/BiasAdd",
            "net/conv1/BatchNorm/gamma", "net/conv1/BatchNorm/beta",
            "net/conv1/BatchNorm/moving_mean", "net/conv1/BatchNorm/moving_variance", NULL);
    attr_f(n, "epsilon", 0.001f);
    attr_b(n, "is_training", false);
    add(&g, "net/conv1/Relu6", "Relu6", "net/conv1/BatchNorm/FusedBatchNormV3", NULL);
    cnst(&g, "net/dw/depthwise_weights", 4, (int64_t[]){3, 3, C1, M2}, w2, NULL);
    cnst(&g, "net/dw/biases", 1, (int64_t[]){C2}, b2, NULL);
    n = add(&g, "net/dw/depthwise", "DepthwiseConv2dNative", "net/conv1/Relu6",
            "net/dw/depthwise_weights", NULL);
    attr_ints(n, "strides", 4, (int64_t[]){1, 2, 2, 1});
    attr_s(n, "padding", "SAME");
    add(&g, "net/dw/BiasAdd", "BiasAdd", "net/dw/depthwise", "net/dw/biases", NULL);
    n = add(&g, "net/pool/MaxPool", "MaxPool", "net/conv1/Relu6", NULL);
    attr_ints(n, "ksize", 4, (int64_t[]){1, 3, 3, 1});
    attr_ints(n, "strides", 4, (int64_t[]){1, 2, 2, 1});
    attr_s(n, "padding", "SAME");
    cnst(&g, "net/concat/axis", 0, NULL, NULL, (int32_t[]){3});
    add(&g, "net/concat", "ConcatV2", "net/dw/BiasAdd", "net/pool/MaxPool", "net/concat/axis",
        NULL);
    cnst(&g, "net/pool2/axes", 1, (int64_t[]){2}, NULL, (int32_t[]){1, 2});
    attr_b(add(&g, "net/pool2", "Mean", "net/concat", "net/pool2/axes", NULL), "keep_dims", true);
    attr_ints(add(&g, "net/squeeze", "Squeeze", "net/pool2", NULL), "squeeze_dims", 2,
              (int64_t[]){1, 2});
    cnst(&g, "net/fc/weights", 2, (int64_t[]){C2 + C1, OUT}, w3, NULL);
    cnst(&g, "net/fc/biases", 1, (int64_t[]){OUT}, b3, NULL);
    add(&g, "net/fc/MatMul", "MatMul", "net/squeeze", "net/fc/weights", NULL);
    add(&g, "net/fc/BiasAdd", "BiasAdd", "net/fc/MatMul", "net/fc/biases", NULL);
    add(&g, "net/Predictions", "Softmax", "net/fc/BiasAdd", NULL);
    const char *path = write_graph(&g, "ops.pb");
    free_all();
    /* the plain computation */
    enum { PH = GH + 2, H1 = GH, H2 = 3 };
    float xp[GN * PH * PH * GC] = {0}, y1[GN * H1 * H1 * C1], y2[GN * H2 * H2 * C2],
                            cat[GN * H2 * H2 * (C2 + C1)], ref[GN * OUT];
    for (int b = 0; b < GN; b++)
        for (int h = 0; h < GH; h++)
            for (int w = 0; w < GH; w++)
                for (int c = 0; c < GC; c++)
                    xp[((b * PH + h + 1) * PH + w + 1) * GC + c] =
                        x[((b * GH + h) * GH + w) * GC + c];
    ref_conv(xp, GN, PH, GC, w1, 3, C1, false, 1, 1, 0, H1, y1);
    for (int i = 0; i < GN * H1 * H1 * C1; i++) {
        int c = i % C1;
        float v = y1[i] + b1[c];
        v = (v - mu[c]) / sqrtf(var[c] + 0.001f) * gamma[c] + beta[c];
        y1[i] = fminf(fmaxf(v, 0), 6);
    }
    ref_conv(y1, GN, H1, C1, w2, 3, C2, true, M2, 2, 0, H2, y2); /* SAME: the odd pad at the end */
    for (int b = 0; b < GN; b++)
        for (int oh = 0; oh < H2; oh++)
            for (int ow = 0; ow < H2; ow++) {
                float *o = cat + ((b * H2 + oh) * H2 + ow) * (C2 + C1);
                for (int c = 0; c < C2; c++)
                    o[c] = y2[((b * H2 + oh) * H2 + ow) * C2 + c] + b2[c];
                for (int c = 0; c < C1; c++) {
                    float mx = -INFINITY;
                    for (int kh = 0; kh < 3; kh++)
                        for (int kw = 0; kw < 3; kw++) {
                            int ih = oh * 2 + kh, iw = ow * 2 + kw;
                            if (ih < H1 && iw < H1)
                                mx = fmaxf(mx, y1[((b * H1 + ih) * H1 + iw) * C1 + c]);
                        }
                    o[C2 + c] = mx;
                }
            }
    for (int b = 0; b < GN; b++)
        for (int j = 0; j < OUT; j++) {
            double acc = b3[j];
            for (int c = 0; c < C2 + C1; c++) {
                double m = 0;
                for (int s = 0; s < H2 * H2; s++)
                    m += cat[(b * H2 * H2 + s) * (C2 + C1) + c];
                acc += m / (H2 * H2) * w3[c * OUT + j];
            }
            ref[b * OUT + j] = (float)acc;
        }
    /* the import */
    slim_model *m = NULL;
    char *yaml = NULL, note[200] = "";
    slim_error err = {0};
    slim_status st = load(path, NULL, GN, &m, &yaml, note, sizeof note, &err);
    tap_ok(!st,
           "a graph of Pad, Conv2D + BiasAdd, FusedBatchNormV3, Relu6, DepthwiseConv2dNative, "
           "MaxPool SAME, ConcatV2, Mean, Squeeze, MatMul + BiasAdd, Softmax imports%s%s",
           st ? ": " : "", st ? err.msg : "");
    if (st)
        return;
    slim_graph *gr = slim_model_graph(m);
    static const char *const names[] = {"net/conv1/weights",
                                        "net/conv1/biases",
                                        "net/conv1/BatchNorm/gamma",
                                        "net/conv1/BatchNorm/moving_variance",
                                        "net/dw/weights",
                                        "net/dw/biases",
                                        "net/fc/weights",
                                        "net/fc/biases"};
    int found = 0;
    for (int i = 0; i < 8; i++) {
        slim_tensor v;
        slim_error e = {0};
        found += slim_graph_param_get(gr, names[i], &v, &e) == SLIM_OK;
    }
    tap_ok(found == 8 && !strcmp(note, "Softmax 'net/Predictions'"),
           "... its parameters named by TensorFlow's scopes (net/conv1/BatchNorm/gamma, "
           "net/dw/weights, ...: %d of 8), the Softmax dropped ('%s')",
           found, note);
    tap_ok(strstr(yaml, "conv2d: {name: conv1, num_outputs: 4, kernel_size: 3, padding: VALID, "
                        "activation: none}") &&
               strstr(yaml, "batch_norm: {name: conv1/BatchNorm") && !strstr(yaml, "transpose"),
           "... the BiasAdd in the conv2d layer, the batch norm its own layer, no transposes");
    int64_t ny = 0;
    float *y = run(m, x, sizeof x / 4, &ny, &err);
    double worst = y && ny == GN * OUT ? 0 : INFINITY;
    for (int i = 0; y && i < GN * OUT && ny == GN * OUT; i++)
        worst = fmax(worst, fabs(y[i] - ref[i]) / fmax(1, fabs(ref[i])));
    tap_ok(worst < 1e-5,
           "... its logits equal the plain computation's (largest relative difference %.2g; "
           "%.6f vs %.6f)%s%s",
           worst, y ? y[0] : 0, ref[0], y ? "" : ": ", y ? "" : err.msg);
    if (worst >= 1e-5)
        tap_diag("%s", yaml);
    free(y);
    free(yaml);
    slim_model_free(m);
}

/* ---- errors --------------------------------------------------------------------------- */

static void expect_error(const char *path, const char *output, const char *want, const char *what)
{
    slim_model *m = NULL;
    slim_error err = {0};
    slim_status st = load(path, output, 1, &m, NULL, NULL, 0, &err);
    bool ok = st != SLIM_OK && strstr(err.msg, want) != NULL;
    tap_ok(ok, "%s: %s", what, st ? err.msg : "(no error)");
    if (!ok)
        tap_diag("expected: %s", want);
    slim_model_free(m);
}

static void errors(void)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/garbage.pb", tap_tmpdir());
    tap_write_file(path, "\xff\xff\xff\xff not a graph", 16);
    expect_error(path, NULL, "garbage.pb: not a TensorFlow GraphDef", "bytes that do not parse");
    snprintf(path, sizeof path, "%s/empty.pb", tap_tmpdir());
    tap_write_file(path, "", 0);
    expect_error(path, NULL, "empty.pb: a GraphDef without nodes", "an empty file");
    expect_error("/nonexistent/graph.pb", NULL, "/nonexistent/graph.pb", "a missing file");

    char multi[1024];
    snprintf(multi, sizeof multi, "%s", tap_data_path("tfckpt/tf-core-v2/lite/multi_add.pb"));
    expect_error(multi, NULL,
                 "2 nodes end the graph: 'x' (Add), 'y' (Add); name the output "
                 "with --output_node=NAME",
                 "TensorFlow's multi_add.pb, two outputs");
    expect_error(multi, "x",
                 "multi_add.pb: the output needs 3 Placeholders ('a', 'b', 'c'): an "
                 "image classifier takes one",
                 "... its output x: three inputs");
    expect_error(multi, "nope", "no node named 'nope' (--output_node)", "... a node it lacks");

    gdef g = {0};
    placeholder(&g, "in", 1, 4, 1);
    add(&g, "a", "Relu", "in", "missing:1", NULL);
    expect_error(write_graph(&g, "missing.pb"), NULL,
                 "missing.pb: node 'a' (Relu): input 1 'missing:1' is not a node of the graph",
                 "an input naming no node");
    free_all();

    g = (gdef){0};
    placeholder(&g, "in", 1, 4, 1);
    add(&g, "a", "Add", "in", "b", NULL);
    add(&g, "b", "Relu", "a", NULL);
    add(&g, "out", "Relu", "b", NULL);
    expect_error(write_graph(&g, "cycle.pb"), NULL,
                 "cycle.pb: node 'b' (Relu): the graph has a cycle through this node", "a cycle");
    free_all();

    g = (gdef){0};
    placeholder(&g, "in", 1, 4, 1);
    add(&g, "e", "Erf", "in", NULL);
    add(&g, "f", "Floor", "e", NULL);
    add(&g, "out", "Relu", "f", NULL);
    expect_error(write_graph(&g, "unsup.pb"), NULL,
                 "unsup.pb: 2 nodes of TensorFlow ops slim does not import:\n  node 'e': Erf\n"
                 "  node 'f': Floor",
                 "unsupported ops listed by name and type");
    free_all();

    g = (gdef){0};
    placeholder(&g, "in", 1, 4, 2);
    cnst(&g, "w", 4, (int64_t[]){1, 1, 2, 2}, (float[]){1, 2, 3, 4}, NULL);
    Tensorflow__NodeDef *n = add(&g, "conv", "Conv2D", "in", "w", NULL);
    attr_ints(n, "strides", 4, (int64_t[]){1, 1, 1, 1});
    attr_s(n, "padding", "SAME");
    attr_s(n, "data_format", "NCHW");
    add(&g, "out", "Mean", "conv", "w", NULL);
    expect_error(write_graph(&g, "nchw.pb"), NULL,
                 "nchw.pb: node 'conv' (Conv2D): data_format NCHW: slim imports NHWC graphs",
                 "an NCHW Conv2D");
    free_all();

    g = (gdef){0};
    placeholder(&g, "in", 1, 4, 2);
    Tensorflow__NodeDef *w = cnst(&g, "w", 4, (int64_t[]){1, 1, 2, 2}, (float[]){1, 2, 3, 4}, NULL);
    w->attr[0]->value->tensor->tensor_content.len = 12; /* 3 floats for 4 */
    n = add(&g, "conv", "Conv2D", "in", "w", NULL);
    attr_ints(n, "strides", 4, (int64_t[]){1, 1, 1, 1});
    attr_s(n, "padding", "SAME");
    add(&g, "out", "Relu", "conv", NULL);
    expect_error(write_graph(&g, "short.pb"), NULL,
                 "short.pb: node 'w' (Const): tensor_content has 12 bytes; its 4 elements of 4 "
                 "bytes need 16",
                 "a Const whose bytes do not fill its shape");
    free_all();

    g = (gdef){0};
    placeholder(&g, "in", 1, 4, 2);
    float one[2] = {1, 1};
    cnst(&g, "s", 1, (int64_t[]){2}, one, NULL);
    n = add(&g, "bn", "FusedBatchNorm", "in", "s", "s", "s", "s", NULL);
    attr_b(n, "is_training", true);
    add(&g, "out", "Relu", "bn", NULL);
    expect_error(write_graph(&g, "train.pb"), NULL,
                 "train.pb: node 'bn' (FusedBatchNorm): is_training is true",
                 "a training-mode FusedBatchNorm");
    free_all();

    g = (gdef){0};
    add(&g, "in", "Placeholder", NULL);
    add(&g, "out", "Relu", "in", NULL);
    expect_error(write_graph(&g, "noshape.pb"), NULL,
                 "noshape.pb: node 'in' (Placeholder): its shape is unknown",
                 "a placeholder without a shape");
    free_all();
}

int main(void)
{
    if (!tap_shared_data())
        tap_skip_all("../shared/data not found");
    slim_error err = {0};
    if (slim_registry_new(&reg, &err) != SLIM_OK)
        tap_skip_all(err.msg);
    conv_0();
    lenet();
    ops_graph();
    errors();
    slim_registry_free(reg);
    return tap_done();
}
