/* tests/interop/test_tfckpt_read.c - every checkpoint TensorFlow wrote in
 * ../shared/data/tfckpt/ opens with the names, dtypes and shapes its MANIFEST
 * lists, every tensor's checksum verifies, and the values that are known
 * independently match: the reference cases' input_tensor against the
 * first/last/sum TensorFlow stored in results.json, the values of TensorFlow's
 * own tests (tensor_bundle_test's strings, half_plus_two's a/b/c, the
 * embedding of feature_column's test), global_step. Then damaged copies:
 * each fails with the file, the byte offset and the check. */
#include "interop/tf_checkpoint.h"
#include "runtime/ckpt_reader.h"
#include "tests/data/tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct want {
    const char *name;
    int dtype;
    int rank;
    int64_t dim[4];
} want;

#define F SLIM__DT_FLOAT

static const want w_v1[] = {{"DW", F, 4, {3, 3, 3, 6}}, {"DW2", F, 4, {2, 2, 6, 12}}, {0}};
static const want w_dense[] = {{"dense/bias", F, 1, {4}},      {"dense/kernel", F, 2, {2, 4}},
                               {"dense_1/bias", F, 1, {1}},    {"dense_1/kernel", F, 2, {4, 1}},
                               {"input_tensor", F, 2, {1, 2}}, {0}};
static const want w_uniform[] = {{"input_tensor", F, 2, {1, 1}}, {0}};
static const want w_bn[] = {{"batch_normalization/beta", F, 1, {3}},
                            {"batch_normalization/gamma", F, 1, {3}},
                            {"batch_normalization/moving_mean", F, 1, {3}},
                            {"batch_normalization/moving_variance", F, 1, {3}},
                            {"input_tensor", F, 4, {32, 16, 16, 3}},
                            {0}};
static const want w_bundle[] = {
    {"some_scope/embeddings", F, 2, {5, 16}}, {"some_scope/indices", SLIM__DT_INT64, 1, {5}}, {0}};
static const want w_embed[] = {{"my_embedding", F, 2, {3, 2}}, {0}};
static const want w_h2[] = {{"a", F, 0, {0}}, {"b", F, 0, {0}}, {"c", F, 0, {0}}, {0}};
static const want w_str[] = {{"floats", F, 2, {2, 3}},
                             {"scalar", SLIM__DT_STRING, 1, {1}},
                             {"string_tensor", SLIM__DT_STRING, 1, {1}},
                             {"strs", SLIM__DT_STRING, 1, {4}},
                             {0}};
static const want w_prof[] = {
    {"DW", F, 4, {3, 3, 3, 6}}, {"DW2", F, 4, {2, 2, 6, 12}}, {"ScalarW", F, 0, {0}}, {0}};
/* the MNIST CNN: 4 layers' weights and biases, Adam's two slots of each, beta
 * powers, global_step */
static const want w_mnist[] = {{"beta1_power", F, 0, {0}},
                               {"beta2_power", F, 0, {0}},
                               {"conv2d/bias", F, 1, {32}},
                               {"conv2d/kernel", F, 4, {3, 3, 1, 32}},
                               {"conv2d_1/bias", F, 1, {64}},
                               {"conv2d_1/kernel", F, 4, {3, 3, 32, 64}},
                               {"dense/bias", F, 1, {512}},
                               {"dense/kernel", F, 2, {64, 512}},
                               {"dense_1/bias", F, 1, {10}},
                               {"dense_1/kernel", F, 2, {512, 10}},
                               {"global_step", SLIM__DT_INT64, 0, {0}},
                               {0}};

static slim__ckpt *open_ok(const char *rel, const char *what)
{
    slim__ckpt *c = NULL;
    slim_error err = {0};
    slim_status st = slim__ckpt_open(tap_data_path(rel), &c, &err);
    tap_ok(st == SLIM_OK, "%s opens (%s)%s%s", rel, what, st ? ": " : "", st ? err.msg : "");
    return st ? NULL : c;
}

static void check_entries(slim__ckpt *c, const char *rel, const want *w, int total)
{
    int n = 0, bad = 0;
    for (; w[n].name; n++) {
        int i = slim__ckpt_find(c, w[n].name);
        const slim__ckpt_entry *e = slim__ckpt_at(c, i);
        bool ok = e && e->dtype == w[n].dtype && e->rank == w[n].rank;
        for (int d = 0; ok && d < w[n].rank; d++)
            ok = e->dim[d] == w[n].dim[d];
        if (!ok) {
            tap_diag("%s: '%s' missing or of another dtype/shape", rel, w[n].name);
            bad++;
        }
    }
    tap_ok(!bad && slim__ckpt_count(c) == (total ? total : n),
           "%s: %d tensors with the manifest's names, dtypes and shapes (%d entries)", rel, n,
           slim__ckpt_count(c));
    slim_error err = {0};
    slim_status st = slim__ckpt_verify_all(c, &err);
    tap_ok(st == SLIM_OK, "%s: every tensor reads, its CRC-32C verified%s%s", rel, st ? ": " : "",
           st ? err.msg : "");
}

static float *read_f32(slim__ckpt *c, const char *name, int64_t *n)
{
    int i = slim__ckpt_find(c, name);
    const slim__ckpt_entry *e = slim__ckpt_at(c, i);
    if (!e)
        return NULL;
    float *v = malloc((size_t)e->numel * sizeof *v + 1);
    slim_error err = {0};
    if (slim__ckpt_read_f32(c, i, v, e->numel, &err)) {
        tap_diag("%s", err.msg);
        free(v);
        return NULL;
    }
    *n = e->numel;
    return v;
}

/* results.json: [in shape..., first, last, sum, out shape..., first, last, sum] */
static void check_input(const char *dir)
{
    char rel[512];
    snprintf(rel, sizeof rel, "%s/results.json", dir);
    size_t len;
    uint8_t *raw = tap_read_file(tap_data_path(rel), &len);
    char *js = raw ? malloc(len + 1) : NULL;
    if (js) {
        memcpy(js, raw, len);
        js[len] = 0;
    }
    free(raw);
    double v[32];
    int n = 0;
    for (char *p = js ? strchr(js, '[') : NULL; p && n < 32;) {
        p++;
        char *end;
        double x = strtod(p, &end);
        if (end == p)
            break;
        v[n++] = x;
        p = strchr(end, ',');
    }
    free(js);
    snprintf(rel, sizeof rel, "%s/model.ckpt", dir);
    slim__ckpt *c = open_ok(rel, "V2");
    int64_t k = 0;
    float *x = c ? read_f32(c, "input_tensor", &k) : NULL;
    bool ok = x && n >= 7;
    if (ok) {
        int r = slim__ckpt_at(c, slim__ckpt_find(c, "input_tensor"))->rank;
        double sum = 0;
        for (int64_t i = 0; i < k; i++)
            sum += x[i];
        ok = x[0] == (float)v[r] && x[k - 1] == (float)v[r + 1] &&
             fabs(sum - v[r + 2]) <= 1e-5 * fabs(v[r + 2]) + 1e-3;
        tap_ok(ok, "%s: input_tensor first %.9g last %.9g sum %.6f = results.json's %.9g %.9g %.6f",
               dir, x[0], x[k - 1], sum, v[r], v[r + 1], v[r + 2]);
    } else {
        tap_ok(false, "%s: input_tensor and results.json", dir);
    }
    free(x);
    slim__ckpt_close(c);
}

static void test_files(void)
{
    slim__ckpt *c;
    if ((c = open_ok("tfckpt/tf-tfprof-v1/ckpt", "V1"))) {
        tap_ok(slim__ckpt_format_of(c) == SLIM__CKPT_TF_V1, "... is V1: %s",
               slim__ckpt_describe(c));
        check_entries(c, "tf-tfprof-v1/ckpt", w_v1, 0);
        int64_t n;
        float *dw = read_f32(c, "DW", &n);
        /* the first float of the file's first data entry: e8 69 9a ba */
        tap_ok(dw && n == 162 && dw[0] == -0.00117808301f, "V1 DW[0] = %.9g", dw ? dw[0] : 0);
        free(dw);
        slim__ckpt_close(c);
    }
    const char *refs[] = {"reference_data_test/dense", "reference_data_test/uniform_random",
                          "resnet/batch_norm"};
    const want *rw[] = {w_dense, w_uniform, w_bn};
    for (int i = 0; i < 3; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tfckpt/tf-models-reference/%s/model.ckpt", refs[i]);
        if ((c = open_ok(rel, "V2 prefix"))) {
            check_entries(c, rel, rw[i], 0);
            slim__ckpt_close(c);
        }
    }
    /* the eight ResNet blocks: each checkpoint's input against results.json */
    const char *blocks[] = {"bottleneck_projection_version-1",
                            "bottleneck_projection_version-2",
                            "bottleneck_version-1",
                            "bottleneck_version-2",
                            "building_projection_version-1",
                            "building_projection_version-2",
                            "building_version-1",
                            "building_version-2"};
    for (int i = 0; i < 8; i++) {
        char dir[256], rel[300];
        snprintf(dir, sizeof dir,
                 "tfckpt/tf-models-reference/resnet/batch-size-32_%s_width-8_channels-4",
                 blocks[i]);
        snprintf(rel, sizeof rel, "%s/model.ckpt.index", dir);
        if ((c = open_ok(rel, "the .index"))) {
            check_entries(c, rel, (want[]){{"input_tensor", F, 4, {32, 8, 8, 4}}, {0}},
                          slim__ckpt_count(c));
            slim__ckpt_close(c);
        }
        check_input(dir);
    }
    check_input("tfckpt/tf-models-reference/resnet/batch_norm");

    /* the MNIST CNN: a directory with a `checkpoint` state file; snappy index blocks */
    if ((c = open_ok("tfckpt/tf-trt-mnist-v2", "a directory: its `checkpoint` file"))) {
        tap_ok(strstr(slim__ckpt_path(c), "model.ckpt-46900") &&
                   strstr(slim__ckpt_describe(c), "snappy"),
               "... is model.ckpt-46900, %s", slim__ckpt_describe(c));
        check_entries(c, "tf-trt-mnist-v2", w_mnist, 27);
        int kinds[6] = {0};
        for (int i = 0; i < slim__ckpt_count(c); i++)
            kinds[slim__ckpt_at(c, i)->kind]++;
        const slim__ckpt_entry *s = slim__ckpt_at(c, slim__ckpt_find(c, "dense/kernel/Adam_1"));
        tap_ok(kinds[SLIM__CK_VALUE] == 8 && kinds[SLIM__CK_SLOT] == 16 &&
                   kinds[SLIM__CK_OPT] == 2 && kinds[SLIM__CK_STEP] == 1 && s &&
                   !strcmp(s->var, "dense/kernel") && s->slot_index == 1,
               "8 variables, 16 Adam slots (dense/kernel/Adam_1: slot 1 of dense/kernel), 2 beta "
               "powers, global_step");
        tap_ok(slim__ckpt_global_step(c) == 46900, "global_step = 46900 (got %lld)",
               (long long)slim__ckpt_global_step(c));
        slim__ckpt_close(c);
    }
    if ((c = open_ok("tfckpt/tf-core-v2/bundle_checkpoint/bundle_checkpoint", "int64"))) {
        check_entries(c, "bundle_checkpoint", w_bundle, 0);
        void *raw;
        size_t len;
        slim_error err = {0};
        bool ok = slim__ckpt_read_raw(c, slim__ckpt_find(c, "some_scope/indices"), &raw, &len,
                                      &err) == SLIM_OK &&
                  len == 40;
        for (int i = 0; ok && i < 5; i++)
            ok = ((int64_t *)raw)[i] == 3 + i;
        free(raw);
        int64_t n;
        float *emb = read_f32(c, "some_scope/embeddings", &n);
        for (int i = 0; ok && emb && i < 80; i++)
            ok = emb[i] == (float)i;
        tap_ok(ok && emb, "indices 3..7 (int64), embeddings 0..79");
        free(emb);
        slim__ckpt_close(c);
    }
    if ((c = open_ok("tfckpt/tf-core-v2/feature_column/embedding.ckpt", "V2"))) {
        check_entries(c, "embedding.ckpt", w_embed, 0);
        int64_t n;
        float *v = read_f32(c, "my_embedding", &n);
        static const float primes[] = {1, 2, 3, 5, 7, 11};
        tap_ok(v && n == 6 && !memcmp(v, primes, sizeof primes), "my_embedding = 1 2 3 5 7 11");
        free(v);
        slim__ckpt_close(c);
    }
    if ((c = open_ok("tfckpt/tf-core-v2/half_plus_two/00000123/variables/variables", "scalars"))) {
        check_entries(c, "half_plus_two", w_h2, 0);
        int64_t n;
        float *a = read_f32(c, "a", &n), *b = read_f32(c, "b", &n), *cc = read_f32(c, "c", &n);
        tap_ok(a && b && cc && *a == 0.5f && *b == 2 && *cc == 3, "a = 0.5, b = 2, c = 3");
        free(a);
        free(b);
        free(cc);
        slim__ckpt_close(c);
    }
    if ((c = open_ok("tfckpt/tf-core-v2/old_string_tensors/foo", "strings"))) {
        check_entries(c, "old_string_tensors", w_str, 0);
        void *raw;
        size_t len;
        slim_error err = {0};
        bool ok = slim__ckpt_read_raw(c, slim__ckpt_find(c, "strs"), &raw, &len, &err) == 0;
        const uint64_t *l = raw;
        const char *s = (const char *)raw + 32;
        ok = ok && l[0] == 5 && l[1] == 0 && l[2] == 3 && l[3] == 1024 && !memcmp(s, "hellox01", 8);
        for (int i = 0; ok && i < 1024; i++)
            ok = s[8 + i] == 'c';
        free(raw);
        int64_t n;
        float *fl = read_f32(c, "floats", &n);
        for (int i = 0; ok && fl && i < 6; i++)
            ok = fl[i] == 16.18f;
        tap_ok(ok && fl, "strs = {\"hello\", \"\", \"x01\", 1024 x 'c'} (CRC over u32 lengths, as "
                         "files of that time), floats = 16.18");
        free(fl);
        slim__ckpt_close(c);
    }
    if ((c = open_ok("tfckpt/tf-core-v2/profiler/ckpt", "V2"))) {
        check_entries(c, "profiler/ckpt", w_prof, 0);
        slim__ckpt_close(c);
    }
}

/* A damaged copy of a file: byte at off xor'ed (or the file cut at off). */
static const char *damaged(const char *rel, const char *name, long off, bool cut)
{
    static char path[600];
    size_t len;
    uint8_t *d = tap_read_file(tap_data_path(rel), &len);
    snprintf(path, sizeof path, "%s/%s", tap_tmpdir(), name);
    if (!d)
        return path;
    size_t o = (size_t)(off < 0 ? (long)len + off : off);
    if (cut)
        len = o;
    else if (o < len)
        d[o] ^= 0x40;
    tap_write_file(path, d, len);
    free(d);
    return path;
}

static void expect_error(const char *path, const char *what, const char *s1, const char *s2)
{
    slim__ckpt *c = NULL;
    slim_error err = {0};
    slim_status st = slim__ckpt_open(path, &c, &err);
    if (!st)
        st = slim__ckpt_verify_all(c, &err);
    slim__ckpt_close(c);
    tap_ok(st != SLIM_OK && strstr(err.msg, s1) && (!s2 || strstr(err.msg, s2)), "%s: %s", what,
           err.msg);
}

static void test_damage(void)
{
    const char *v2 = "tfckpt/tf-models-reference/reference_data_test/dense/model.ckpt";
    char idx[300], data[300];
    snprintf(idx, sizeof idx, "%s.index", v2);
    snprintf(data, sizeof data, "%s.data-00000-of-00001", v2);
    /* a flipped bit in a tensor's bytes: its CRC */
    size_t len;
    uint8_t *ix = tap_read_file(tap_data_path(idx), &len);
    char p[600];
    snprintf(p, sizeof p, "%s/flip.index", tap_tmpdir());
    tap_write_file(p, ix, len);
    free(ix);
    damaged(data, "flip.data-00000-of-00001", 20, false);
    snprintf(p, sizeof p, "%s/flip", tap_tmpdir());
    expect_error(p, "a flipped byte in the data", "flip.data-00000-of-00001: tensor 'dense/kernel'",
                 "CRC-32C mismatch");
    expect_error(damaged(idx, "x.index", 40, false), "a flipped byte in the index",
                 "block at byte 0 (168 bytes): CRC-32C mismatch", NULL);
    expect_error(damaged(idx, "y.index", -3, false), "a damaged footer", "not a TensorFlow table",
                 "0xdb4775248b80fb57");
    expect_error(damaged(idx, "z.index", 100, true), "a truncated index", "z.index",
                 "not a TensorFlow table");
    expect_error(damaged("tfckpt/tf-tfprof-v1/ckpt", "v1", 700, false), "a V1 file's flipped byte",
                 "CRC-32C mismatch", NULL);
    expect_error(damaged("tfckpt/tf-tfprof-v1/ckpt", "v1cut", 1000, true), "a cut V1 file",
                 "not a checkpoint", NULL);
    expect_error(
        damaged("tfckpt/tf-models-reference/resnet/batch_norm/results.json", "json", 0, false),
        "a JSON file", "not a checkpoint: neither slim's format", NULL);
    snprintf(p, sizeof p, "%s/nothing", tap_tmpdir());
    expect_error(p, "a path that is nothing", "no checkpoint at", "nothing.index");
    /* index entries whose data lies outside the file */
    snprintf(p, sizeof p, "%s/short.index", tap_tmpdir());
    ix = tap_read_file(tap_data_path(idx), &len);
    tap_write_file(p, ix, len);
    free(ix);
    damaged(data, "short.data-00000-of-00001", 60, true);
    snprintf(p, sizeof p, "%s/short", tap_tmpdir());
    expect_error(p, "a data file cut short",
                 "tensor 'dense_1/kernel' (16 bytes at byte 52) lies past the end of the file (60",
                 NULL);
}

/* EncodeTensorNameSlice: the V1 file's key, and TensorFlow's examples. */
static void test_keys(void)
{
    slim__buf b = {0};
    slim__tf_slice_key(&b, "DW", 4, (int64_t[]){0, 0, 0, 0}, (int64_t[]){-1, -1, -1, -1});
    static const uint8_t key[] = {0x00, 'D',  'W',  0x00, 0x01, 0x01, 0x04, 0x80,
                                  0x7f, 0x80, 0x7f, 0x80, 0x7f, 0x80, 0x7f};
    tap_ok(b.n == sizeof key && !memcmp(b.p, key, sizeof key),
           "the key of DW's whole-tensor slice is the V1 file's");
    /* signed numbers: 1 byte for [-64, 64), 2 for [-8192, 8192) ... */
    slim__tf_slice_key(&b, "", 1, (int64_t[]){63}, (int64_t[]){64});
    tap_ok(b.n == 8 && b.p[5] == 0xbf && b.p[6] == 0xc0 && b.p[7] == 0x40,
           "63 -> bf, 64 -> c0 40 (OrderedCode's signed encoding)");
    slim__tf_slice_key(&b, "", 1, (int64_t[]){-65}, (int64_t[]){100000});
    tap_ok(b.n == 10 && b.p[5] == 0x3f && b.p[6] == 0xbf && b.p[7] == 0xe1 && b.p[8] == 0x86 &&
               b.p[9] == 0xa0,
           "-65 -> 3f bf, 100000 -> e1 86 a0");
    slim__buf_free(&b);
}

int main(void)
{
    test_keys();
    if (!tap_shared_data()) {
        tap_diag("../shared/data not found: TensorFlow's files skipped");
        return tap_done();
    }
    test_files();
    test_damage();
    return tap_done();
}
