/* tests/data/test_feed.c - feeding pipeline batches to a program without a copy
 * (slim_program_bind_input): training on bound next_view batches gives the
 * same losses and weights, bit for bit, as copying next's batches into the
 * program; bind errors (name, kind, dtype, shape, alignment, slack); rebinding,
 * unbinding, and memory changed between runs read at run time. The net reads
 * the images input both through a conv and straight through fully_connected
 * (BLIS), so the slack rule matters. */
#include "tests/data/tap.h"

#include <slim/slim.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NREC 24
#define BATCH 8
#define S 16
#define K 3

static slim_registry *reg;

static slim_tid add1(slim_graph *g, const char *op, const char *name, const slim_tid *in, int n,
                     slim_attrs *a)
{
    slim_tid out = -1;
    slim_error err = {0};
    if (slim_graph_add(g, op, name, in, n, a, &out, 1, NULL, &err))
        tap_ok(false, "add %s: %s", name, err.msg);
    slim_attrs_free(a);
    return out;
}

static slim_tid param(slim_graph *g, const char *name, int rank, const int64_t *dim)
{
    slim_shape s = slim_shape_make(rank, dim);
    slim_init init = {.kind = SLIM_INIT_TRUNCATED_NORMAL, .stddev = 0.1};
    slim_tid t = -1;
    slim_error err = {0};
    if (slim_graph_param(g, name, &s, &init, NULL, &t, &err))
        tap_ok(false, "param %s: %s", name, err.msg);
    return t;
}

/* logits = fc(images) + fc(gap(relu(conv3x3(images)))); softmax cross entropy. */
static slim_graph *build(void)
{
    slim_graph *g;
    slim_error err = {0};
    slim_graph_new(reg, &g, &err);
    slim_tid x, y;
    slim_graph_input(g, "images", SLIM_F32, &(slim_shape){4, {BATCH, S, S, 3}}, &x, &err);
    slim_graph_input(g, "labels", SLIM_I32, &(slim_shape){1, {BATCH}}, &y, &err);
    slim_tid w1 = param(g, "conv/weights", 4, (int64_t[]){3, 3, 3, 8});
    slim_tid h = add1(g, "conv2d", "conv", (slim_tid[]){x, w1}, 2, NULL);
    h = add1(g, "relu", "relu", &h, 1, NULL);
    slim_attrs *a = slim_attrs_new();
    slim_attrs_set_bool(a, "keep_dims", false);
    h = add1(g, "global_avg_pool", "gap", &h, 1, a);
    slim_tid w2 = param(g, "fc1/weights", 2, (int64_t[]){8, K});
    slim_tid w3 = param(g, "fc2/weights", 2, (int64_t[]){S * S * 3, K});
    slim_tid l1 = add1(g, "fully_connected", "fc1", (slim_tid[]){h, w2}, 2, NULL);
    slim_tid l2 = add1(g, "fully_connected", "fc2", (slim_tid[]){x, w3}, 2, NULL);
    slim_tid logits = add1(g, "add", "logits", (slim_tid[]){l1, l2}, 2, NULL);
    slim_tid loss = add1(g, "softmax_cross_entropy", "loss", (slim_tid[]){logits, y}, 2, NULL);
    slim_graph_set_loss(g, loss, &err);
    slim_graph_mark_output(g, logits, &err);
    slim_graph_init_params(g, 5, &err);
    return g;
}

static slim_program *compile(slim_graph *g, bool training)
{
    slim_compile_opts co = {
        .training = training, .num_threads = 2, .optimizer = training ? "sgd_update" : NULL};
    slim_program *p = NULL;
    slim_error err = {0};
    if (slim_graph_compile(g, &co, &p, &err))
        tap_ok(false, "compile: %s", err.msg);
    return p;
}

/* NREC PNG records of S x S x 3 noise-like images, labels k % K. */
static const char *write_records(void)
{
    static char path[600];
    snprintf(path, sizeof path, "%s/feed-00000-of-00001", tap_tmpdir());
    slim_tfrecord_writer *w;
    slim_error err = {0};
    slim_tfrecord_writer_new(path, SLIM_COMPRESSION_NONE, &w, &err);
    slim_image im = {.height = 20, .width = 24, .channels = 3, .data = malloc(20 * 24 * 3)};
    for (int k = 0; k < NREC; k++) {
        for (int i = 0; i < 20 * 24 * 3; i++)
            im.data[i] = (uint8_t)(slim_rand_u64(9, (uint64_t)k, (uint64_t)i) >> 56);
        uint8_t *png, *buf;
        size_t plen, bl;
        slim_image_encode_png(&im, &png, &plen, &err);
        slim_example *ex;
        slim_example_new(&ex, &err);
        slim_example_set_bytes(ex, "image/encoded", png, plen);
        int64_t lab = k % K;
        slim_example_set_int64s(ex, "image/class/label", &lab, 1);
        slim_example_serialize(ex, &buf, &bl, &err);
        slim_tfrecord_write(w, buf, bl, &err);
        free(buf);
        free(png);
        slim_example_free(ex);
    }
    slim_image_fini(&im);
    slim_tfrecord_writer_close(w, &err);
    return path;
}

static slim_pipeline *open_pipeline(const char *shard)
{
    slim_pipeline_opts o = {.file_pattern = shard,
                            .recipe = "inception",
                            .is_training = true,
                            .batch_size = BATCH,
                            .image_size = S,
                            .num_threads = 2,
                            .seed = 3};
    slim_pipeline *p = NULL;
    slim_error err = {0};
    if (slim_pipeline_new(&o, &p, &err))
        tap_ok(false, "pipeline: %s", err.msg);
    return p;
}

static const slim_tensor_desc xdesc = {SLIM_F32, {4, {BATCH, S, S, 3}}};
static const slim_tensor_desc ydesc = {SLIM_I32, {1, {BATCH}}};
#define XBYTES (sizeof(float) * BATCH * S * S * 3)

/* 6 training steps; bind: next_view batches bound, else next's batches copied. */
static void train(const char *shard, bool bind, float *losses, float *weights)
{
    slim_graph *g = build();
    slim_program *p = compile(g, true);
    slim_pipeline *pl = open_pipeline(shard);
    float *x = malloc(XBYTES);
    int32_t y[BATCH];
    slim_error err = {0};
    int bad = 0;
    for (int s = 0; s < 6; s++) {
        slim_batch_info bi;
        if (bind) {
            const float *vx;
            const int32_t *vy;
            bad += slim_pipeline_next_view(pl, &vx, &vy, &bi, &err) != SLIM_OK;
            bad += slim_program_bind_input(p, "images", &xdesc, vx, XBYTES + SLIM_BIND_SLACK,
                                           &err) != SLIM_OK;
            bad += slim_program_bind_input(p, "labels", &ydesc, vy, 64 + SLIM_BIND_SLACK, &err) !=
                   SLIM_OK;
        } else {
            bad += slim_pipeline_next(pl, x, y, &bi, &err) != SLIM_OK;
            slim_tensor xv, yv;
            slim_program_input(p, "images", &xv, &err);
            slim_program_input(p, "labels", &yv, &err);
            memcpy(xv.data, x, XBYTES);
            memcpy(yv.data, y, sizeof y);
        }
        slim_run_opts ro = {.learning_rate = 0.1f, .step = s, .seed = 1};
        bad += slim_program_run(p, &ro, &err) != SLIM_OK;
        slim_tensor lv;
        bad += slim_program_output(p, "loss", &lv, &err) != SLIM_OK;
        losses[s] = bad ? 0 : *(const float *)lv.data;
    }
    if (bad)
        tap_ok(false, "training (%s): %s", bind ? "bound" : "copied", err.msg);
    slim_tensor w;
    slim_graph_param_get(g, "fc2/weights", &w, &err);
    memcpy(weights, w.data, sizeof(float) * S * S * 3 * K);
    slim_pipeline_free(pl);
    slim_program_free(p);
    slim_graph_free(g);
    free(x);
}

static void test_training(const char *shard)
{
    float l1[6], l2[6];
    float *w1 = malloc(sizeof(float) * S * S * 3 * K), *w2 = malloc(sizeof(float) * S * S * 3 * K);
    train(shard, false, l1, w1);
    train(shard, true, l2, w2);
    tap_ok(!memcmp(l1, l2, sizeof l1) && l1[0] != l1[5],
           "6 training steps on bound next_view batches: the losses of the copying path, bit for "
           "bit (%.6f ... %.6f)",
           l2[0], l2[5]);
    tap_ok(!memcmp(w1, w2, sizeof(float) * S * S * 3 * K),
           "and the same weights after the updates");
    free(w1);
    free(w2);
}

/* Logits of the inference program on whatever it reads now. */
static void logits(slim_program *p, float *out)
{
    slim_error err = {0};
    slim_tensor lv;
    if (slim_program_run(p, NULL, &err) || slim_program_output(p, "logits", &lv, &err)) {
        tap_ok(false, "run: %s", err.msg);
        return;
    }
    memcpy(out, lv.data, sizeof(float) * BATCH * K);
}

static void fill(float *x, int32_t *y, uint64_t seed)
{
    for (size_t i = 0; i < BATCH * S * S * 3; i++)
        x[i] = slim_rand_uniform(seed, 0, i) - 0.5f;
    for (int i = 0; i < BATCH; i++)
        y[i] = i % K;
}

/* The copying path's logits for (x, y). */
static void copied(slim_program *p, const float *x, const int32_t *y, float *out)
{
    slim_error err = {0};
    slim_program_bind_input(p, "images", NULL, NULL, 0, &err);
    slim_program_bind_input(p, "labels", NULL, NULL, 0, &err);
    slim_tensor xv, yv;
    slim_program_input(p, "images", &xv, &err);
    slim_program_input(p, "labels", &yv, &err);
    memcpy(xv.data, x, XBYTES);
    memcpy(yv.data, y, sizeof(int32_t) * BATCH);
    logits(p, out);
}

static void test_bind(void)
{
    slim_graph *g = build();
    slim_program *p = compile(g, false);
    size_t cap = XBYTES + SLIM_BIND_SLACK;
    float *a = aligned_alloc(64, cap), *b = aligned_alloc(64, cap);
    int32_t *ya = aligned_alloc(64, 64 + SLIM_BIND_SLACK),
            *yb = aligned_alloc(64, 64 + SLIM_BIND_SLACK);
    fill(a, ya, 1);
    fill(b, yb, 2);
    float want_a[BATCH * K], want_b[BATCH * K], got[BATCH * K];
    copied(p, a, ya, want_a);
    copied(p, b, yb, want_b);
    slim_error err = {0};
    /* bound, then rebound to other memory */
    slim_status st = slim_program_bind_input(p, "images", &xdesc, a, cap, &err);
    slim_tensor v;
    slim_program_input(p, "images", &v, &err);
    tap_ok(!st && v.data == a, "bind: slim_program_input then views the bound memory");
    slim_program_bind_input(p, "labels", &ydesc, ya, 64 + SLIM_BIND_SLACK, &err);
    logits(p, got);
    tap_ok(!memcmp(got, want_a, sizeof got), "bound a: the logits of copying a, bit for bit");
    slim_program_bind_input(p, "images", &xdesc, b, cap, &err);
    slim_program_bind_input(p, "labels", &ydesc, yb, 64 + SLIM_BIND_SLACK, &err);
    logits(p, got);
    tap_ok(!memcmp(got, want_b, sizeof got), "rebound to b: the logits of copying b");
    /* memory changed between runs is read at run time */
    memcpy(b, a, XBYTES);
    memcpy(yb, ya, sizeof(int32_t) * BATCH);
    logits(p, got);
    tap_ok(!memcmp(got, want_a, sizeof got), "b overwritten with a's values: the logits of a");
    /* unbinding: the program's own buffer again (it still holds b's copy) */
    slim_program_bind_input(p, "images", NULL, NULL, 0, &err);
    slim_program_bind_input(p, "labels", NULL, NULL, 0, &err);
    slim_program_input(p, "images", &v, &err);
    logits(p, got);
    tap_ok(v.data != b && !memcmp(got, want_b, sizeof got),
           "unbound: the program reads its own buffer again (the last copy, b)");
    st = slim_program_bind_input(p, "images", NULL, NULL, 0, &err);
    tap_ok(st == SLIM_OK, "unbinding an unbound input is a no-op");
    /* errors */
    st = slim_program_bind_input(p, "imgs", &xdesc, a, cap, &err);
    tap_ok(st == SLIM_ENOTFOUND, "unknown name: %s", err.msg);
    st = slim_program_bind_input(p, "fc2/weights", &xdesc, a, cap, &err);
    tap_streq(err.msg, "'fc2/weights' is not an input of the graph", "a parameter is not an input");
    st = slim_program_bind_input(p, "images", &ydesc, a, cap, &err);
    tap_ok(st == SLIM_ETYPE, "dtype mismatch: %s", err.msg);
    tap_streq(err.msg, "binding input 'images': the memory holds i32, the input is f32",
              "its message");
    slim_tensor_desc d = xdesc;
    d.shape.dim[0] = 4;
    st = slim_program_bind_input(p, "images", &d, a, cap, &err);
    tap_ok(st == SLIM_ESHAPE, "shape mismatch: %s", err.msg);
    tap_streq(err.msg,
              "binding input 'images': the memory holds (4,16,16,3), the input is (8,16,16,3)",
              "its message");
    st = slim_program_bind_input(p, "images", &xdesc, (char *)a + 4, cap - 4, &err);
    tap_ok(st == SLIM_EINVAL && strstr(err.msg, "is not 64-byte aligned"), "misaligned: %s",
           err.msg);
    st = slim_program_bind_input(p, "images", &xdesc, a, XBYTES, &err);
    tap_ok(st == SLIM_EINVAL, "no slack: %s", err.msg);
    char want[300];
    snprintf(want, sizeof want,
             "binding input 'images': %zu bytes given, the tensor needs %zu plus SLIM_BIND_SLACK "
             "(256) readable bytes after it (BLIS kernels read past the end of their operands)",
             XBYTES + SLIM_BIND_SLACK - 1, XBYTES);
    st = slim_program_bind_input(p, "images", &xdesc, a, cap - 1, &err);
    tap_streq(err.msg, want, "one byte short of the slack: its message");
    st = slim_program_bind_input(p, "images", NULL, a, cap, &err);
    tap_ok(st == SLIM_EINVAL, "no description: %s", err.msg);
    /* a failed bind leaves the input as it was (unbound: own buffer) */
    slim_program_input(p, "images", &v, &err);
    logits(p, got);
    tap_ok(v.data != a && !memcmp(got, want_b, sizeof got), "failed binds change nothing");
    free(a);
    free(b);
    free(ya);
    free(yb);
    slim_program_free(p);
    slim_graph_free(g);
}

int main(void)
{
    slim_error err = {0};
    if (slim_registry_new(&reg, &err)) {
        tap_ok(false, "registry: %s", err.msg);
        return tap_done();
    }
    test_bind();
    test_training(write_records());
    slim_registry_free(reg);
    return tap_done();
}
