/* tests/interop/test_tfckpt_models.c - models TensorFlow trained or built,
 * written in slim's DSL (tests/interop/models/), loaded from TensorFlow's own
 * checkpoints (../shared/data/tfckpt/), run, and compared with what
 * TensorFlow computed:
 *   - tensorflow/models' ResNet reference blocks (v1/v2, building and
 *     bottleneck, with and without a projection shortcut), its batch norm and
 *     its two dense layers: each run on the checkpoint's stored input_tensor
 *     in a training program (batch statistics, as TensorFlow ran them with
 *     training=True); the output's first and last value and its sum against
 *     results.json;
 *   - the trained MNIST CNN of TensorFlow's quantization test (snappy V2
 *     checkpoint, tf.layers names, Adam slots): evaluated on the 1000 MNIST
 *     examples of ../shared/data/tfrecord/tfx_mnist.tfrecord; its accuracy
 *     is reported (TensorFlow's test expects 0.966 on the 10k test set).
 * tf.layers' kernel/bias load as TF-Slim's weights/biases; the checkpoints'
 * root is the models' scope through the assignment map "/=ref/". */
#include "core/error.h"
#include "runtime/ckpt_reader.h"
#include "tests/data/tap.h"

#include <slim/model.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The numbers of results.json. */
static int results(const char *rel, double *v, int max)
{
    size_t len;
    uint8_t *raw = tap_read_file(tap_data_path(rel), &len);
    char *js = raw ? malloc(len + 1) : NULL;
    if (!js) {
        free(raw);
        return 0;
    }
    memcpy(js, raw, len);
    js[len] = 0;
    free(raw);
    int n = 0;
    for (char *p = strchr(js, '['); p && n < max;) {
        char *end;
        double x = strtod(p + 1, &end);
        if (end == p + 1)
            break;
        v[n++] = x;
        p = strchr(end, ',');
    }
    free(js);
    return n;
}

static char *src_path(const char *rel)
{
    static char buf[1024];
    const char *s = getenv("top_srcdir");
    snprintf(buf, sizeof buf, "%s/%s", s ? s : ".", rel);
    return buf;
}

typedef struct loaded {
    slim_registry *reg;
    slim_model *m;
    slim_program *p;
} loaded;

static void unload(loaded *l)
{
    slim_program_free(l->p);
    slim_model_free(l->m);
    slim_registry_free(l->reg);
    memset(l, 0, sizeof *l);
}

/* Load model yaml, compile it (training: batch statistics), restore ckpt. */
static slim_status load(const char *yaml, const char *ckpt, int batch, bool training,
                        const char *map, loaded *l, char *report, size_t nr, slim_error *err)
{
    memset(l, 0, sizeof *l);
    slim_model_opts mo = {.batch_size = batch, .training = training, .weight_decay = 0};
    slim_compile_opts co = {.training = training, .num_threads = 2};
    slim_restore_opts ro = {
        .use_ema = 0, .assignment_map = map, .report = report, .report_size = nr};
    slim_status st = slim_registry_new(&l->reg, err);
    if (!st)
        st = slim_model_load(l->reg, src_path(yaml), &mo, &l->m, err);
    if (!st)
        st = slim_graph_compile(slim_model_graph(l->m), &co, &l->p, err);
    if (!st)
        st = slim_checkpoint_restore(ckpt, slim_model_graph(l->m), &ro, NULL, err);
    return st;
}

/* One reference case: its checkpoint's input_tensor through the model. */
static void reference_case(const char *yaml, const char *dir)
{
    char ckpt[600], rel[600];
    snprintf(rel, sizeof rel, "tfckpt/tf-models-reference/%s/model.ckpt", dir);
    snprintf(ckpt, sizeof ckpt, "%s", tap_data_path(rel));
    snprintf(rel, sizeof rel, "tfckpt/tf-models-reference/%s/results.json", dir);
    double v[32];
    int nv = results(rel, v, 32);
    slim__ckpt *c = NULL;
    slim_error err = {0};
    loaded l;
    char report[4096] = "";
    float *x = NULL;
    slim_status st = slim__ckpt_open(ckpt, &c, &err);
    int ix = st ? -1 : slim__ckpt_find(c, "input_tensor");
    const slim__ckpt_entry *in = slim__ckpt_at(c, ix);
    if (!st && !in)
        st = slim__error(&err, SLIM_ENOTFOUND, "no input_tensor");
    if (!st) {
        x = malloc((size_t)in->numel * sizeof *x);
        st = slim__ckpt_read_f32(c, ix, x, in->numel, &err);
    }
    memset(&l, 0, sizeof l);
    if (!st)
        st = load(yaml, ckpt, (int)in->dim[0], true, "/=ref/", &l, report, sizeof report, &err);
    slim_tensor images, labels, out;
    if (!st)
        st = slim_program_input(l.p, "images", &images, &err);
    if (!st && slim_shape_numel(&images.shape) != in->numel)
        st = slim__error(&err, SLIM_ESHAPE, "the model's input is not input_tensor's shape");
    if (!st) {
        memcpy(images.data, x, (size_t)in->numel * sizeof *x);
        if (slim_program_input(l.p, "labels", &labels, NULL) == SLIM_OK)
            memset(labels.data, 0, (size_t)slim_shape_numel(&labels.shape) * sizeof(int32_t));
        st = slim_program_run(l.p, &(slim_run_opts){.learning_rate = 0}, &err);
    }
    if (!st)
        st = slim_program_output(l.p, "logits", &out, &err);
    /* the output's [first, last, sum] are results.json's last three numbers */
    bool ok = !st && nv >= 5;
    double first = 0, last = 0, sum = 0;
    if (ok) {
        const float *y = out.data;
        int64_t n = slim_shape_numel(&out.shape);
        for (int64_t i = 0; i < n; i++)
            sum += y[i];
        first = y[0];
        last = y[n - 1];
        double wf = v[nv - 3], wl = v[nv - 2], ws = v[nv - 1];
        ok = fabs(first - wf) <= 1e-4 + 1e-4 * fabs(wf) &&
             fabs(last - wl) <= 1e-4 + 1e-4 * fabs(wl) && fabs(sum - ws) <= 1e-3 + 2e-5 * n;
        tap_ok(ok,
               "%s in the DSL (%s) on %s's input_tensor: first %.7g last %.7g sum %.6g; "
               "TensorFlow's %.7g %.7g %.6g",
               dir, strrchr(yaml, '/') + 1, dir, first, last, sum, wf, wl, ws);
        if (!strstr(report, "unused input_tensor"))
            tap_diag("restore report: %s", report);
    } else {
        tap_ok(false, "%s: %s", dir, st ? err.msg : "results.json");
    }
    free(x);
    unload(&l);
    slim__ckpt_close(c);
}

/* The MNIST CNN on tfx_mnist.tfrecord's 1000 examples. */
static void mnist(void)
{
    char ckpt[600];
    snprintf(ckpt, sizeof ckpt, "%s", tap_data_path("tfckpt/tf-trt-mnist-v2"));
    enum { B = 100 };
    loaded l;
    slim_error err = {0};
    char report[4096] = "";
    slim_status st = load("tests/interop/models/mnist_cnn.yaml", ckpt, B, false, "/=mnist/", &l,
                          report, sizeof report, &err);
    tap_ok(!st, "the MNIST CNN in the DSL restores from TensorFlow's snappy V2 checkpoint%s%s",
           st ? ": " : "", st ? err.msg : "");
    if (st) {
        unload(&l);
        return;
    }
    tap_ok(strstr(report, "note: 18 optimizer tensors") != NULL,
           "... its Adam slots and beta powers not restored, with a note");
    slim_tfrecord_reader *r = NULL;
    st = slim_tfrecord_open(tap_data_path("tfrecord/tfx_mnist.tfrecord"), SLIM_COMPRESSION_NONE,
                            true, &r, &err);
    int n = 0, correct = 0, bad = 0;
    float *img = malloc((size_t)B * 784 * sizeof *img);
    int label[B];
    for (bool done = false; !st && !done;) {
        int k = 0;
        while (k < B) {
            const uint8_t *d;
            size_t len;
            int64_t off;
            if ((st = slim_tfrecord_next(r, &d, &len, &off, &err)) || !d) {
                done = true;
                break;
            }
            slim_example *ex;
            const float *f;
            const int64_t *c;
            size_t nf, nc;
            if (slim_example_parse(d, len, &ex, &err) ||
                slim_example_floats(ex, "image_floats", &f, &nf) ||
                slim_example_int64s(ex, "image_class", &c, &nc) || nf != 784 || nc != 1) {
                bad++;
                slim_example_free(ex);
                continue;
            }
            /* TFX stores pixel / 255 - 0.5; the model takes 2 * (pixel / 255) - 1 */
            for (int i = 0; i < 784; i++)
                img[k * 784 + i] = 2 * f[i];
            label[k++] = (int)c[0];
            slim_example_free(ex);
        }
        if (st || k == 0)
            break;
        slim_tensor images, logits;
        if ((st = slim_program_input(l.p, "images", &images, &err)))
            break;
        memset(images.data, 0, (size_t)B * 784 * sizeof(float));
        memcpy(images.data, img, (size_t)k * 784 * sizeof(float));
        if ((st = slim_program_run(l.p, NULL, &err)) ||
            (st = slim_program_output(l.p, "logits", &logits, &err)))
            break;
        for (int i = 0; i < k; i++) {
            const float *y = (const float *)logits.data + i * 10;
            int best = 0;
            for (int j = 1; j < 10; j++)
                best = y[j] > y[best] ? j : best;
            correct += best == label[i];
        }
        n += k;
    }
    slim_tfrecord_close(r);
    free(img);
    double acc = n ? (double)correct / n : 0;
    tap_ok(!st && n == 1000 && !bad && acc >= 0.95,
           "TensorFlow's trained MNIST CNN, run by slim on tfx_mnist's %d examples: accuracy "
           "%.3f (%d correct; TensorFlow measured 0.966 on the 10k test set)%s%s",
           n, acc, correct, st ? ": " : "", st ? err.msg : "");
    unload(&l);
}

int main(void)
{
    if (!tap_shared_data())
        tap_skip_all("../shared/data not found");
    static const char *const cases[][2] = {
        {"building_v1", "batch-size-32_building_version-1_width-8_channels-4"},
        {"building_v1_projection",
         "batch-size-32_building_projection_version-1_width-8_channels-4"},
        {"building_v2", "batch-size-32_building_version-2_width-8_channels-4"},
        {"building_v2_projection",
         "batch-size-32_building_projection_version-2_width-8_channels-4"},
        {"bottleneck_v1", "batch-size-32_bottleneck_version-1_width-8_channels-4"},
        {"bottleneck_v1_projection",
         "batch-size-32_bottleneck_projection_version-1_width-8_channels-4"},
        {"bottleneck_v2", "batch-size-32_bottleneck_version-2_width-8_channels-4"},
        {"bottleneck_v2_projection",
         "batch-size-32_bottleneck_projection_version-2_width-8_channels-4"},
        {"batch_norm", "batch_norm"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char yaml[256], dir[256];
        snprintf(yaml, sizeof yaml, "tests/interop/models/%s.yaml", cases[i][0]);
        snprintf(dir, sizeof dir, "resnet/%s", cases[i][1]);
        reference_case(yaml, dir);
    }
    reference_case("tests/interop/models/dense.yaml", "reference_data_test/dense");
    mnist();
    return tap_done();
}
