/* tests/interop/test_tfckpt_write.c - writing TensorFlow checkpoints:
 *   - every V2 checkpoint TensorFlow wrote in ../shared/data/tfckpt/, read and
 *     written again, is byte for byte TensorFlow's file (index and data), except
 *     two whose differences are expected and checked field by field: the
 *     old string tensors (written out of name order, their CRCs over u32
 *     lengths where the current format's are over u64) and the MNIST index (TensorFlow
 * snappy-compressed its blocks; slim writes them uncompressed, as TensorFlow's BundleWriter now
 *     does);
 *   - the V1 file written again: byte for byte TensorFlow's;
 *   - partitioned variables (slices) over several shards, V1 and V2, read back
 *     assembled; strings, int64, scalars; TF2 object-graph names;
 *   - slim -> V2 -> slim and slim -> V1 -> slim keep every value. */
#include "interop/tf_checkpoint.h"
#include "interop/tf_checkpoint.pb-c.h"
#include "runtime/ckpt_convert.h"
#include "runtime/ckpt_reader.h"
#include "tests/data/tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool same_file(const char *a, const char *b)
{
    size_t la, lb;
    uint8_t *x = tap_read_file(a, &la), *y = tap_read_file(b, &lb);
    bool same = x && y && la == lb && !memcmp(x, y, la);
    free(x);
    free(y);
    return same;
}

static const char *tmp(const char *name)
{
    static char buf[4][600];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tap_tmpdir(), name);
    return buf[k];
}

static slim_status convert(const char *in, const char *out, const char *fmt, int shards,
                           slim_error *err)
{
    char notes[2048];
    static slim_registry *reg;
    if (!reg && slim_registry_new(&reg, err))
        return SLIM_EINTERNAL;
    return slim__ckpt_convert(in, out, fmt, shards, reg, notes, sizeof notes, err);
}

/* Both checkpoints hold the same names, dtypes, shapes and bytes. */
static bool same_tensors(const char *a, const char *b, char *why, size_t n)
{
    slim__ckpt *x = NULL, *y = NULL;
    slim_error err = {0};
    bool ok = !slim__ckpt_open(a, &x, &err) && !slim__ckpt_open(b, &y, &err);
    if (!ok)
        snprintf(why, n, "%.200s", err.msg);
    for (int i = 0; ok && i < slim__ckpt_count(x); i++) {
        const slim__ckpt_entry *e = slim__ckpt_at(x, i);
        if (e->kind == SLIM__CK_META || e->kind == SLIM__CK_STEP ||
            !strncmp(e->name, "slim_const/", 11))
            continue;
        int j = slim__ckpt_find(y, e->name);
        const slim__ckpt_entry *f = slim__ckpt_at(y, j);
        void *d1 = NULL, *d2 = NULL;
        size_t l1 = 0, l2 = 0;
        ok = f && f->dtype == e->dtype && f->numel == e->numel &&
             !slim__ckpt_read_raw(x, i, &d1, &l1, &err) &&
             !slim__ckpt_read_raw(y, j, &d2, &l2, &err) && l1 == l2 && !memcmp(d1, d2, l1);
        if (!ok)
            snprintf(why, n, "'%s' differs or is missing", e->name);
        free(d1);
        free(d2);
    }
    slim__ckpt_close(x);
    slim__ckpt_close(y);
    return ok;
}

static void test_v2_rewrite(void)
{
    static const char *const same[] = {
        "reference_data_test/dense",
        "reference_data_test/uniform_random",
        "resnet/batch_norm",
        "resnet/batch-size-32_bottleneck_projection_version-1_width-8_channels-4",
        "resnet/batch-size-32_bottleneck_projection_version-2_width-8_channels-4",
        "resnet/batch-size-32_bottleneck_version-1_width-8_channels-4",
        "resnet/batch-size-32_bottleneck_version-2_width-8_channels-4",
        "resnet/batch-size-32_building_projection_version-1_width-8_channels-4",
        "resnet/batch-size-32_building_projection_version-2_width-8_channels-4",
        "resnet/batch-size-32_building_version-1_width-8_channels-4",
        "resnet/batch-size-32_building_version-2_width-8_channels-4",
    };
    static const char *const core[] = {"half_plus_two/00000123/variables/variables",
                                       "profiler/ckpt", "feature_column/embedding.ckpt",
                                       "bundle_checkpoint/bundle_checkpoint"};
    for (size_t i = 0; i < 15; i++) {
        char src[400], idx[500], data[500];
        if (i < 11)
            snprintf(src, sizeof src, "%s/tfckpt/tf-models-reference/%s/model.ckpt",
                     tap_shared_data(), same[i]);
        else
            snprintf(src, sizeof src, "%s/tfckpt/tf-core-v2/%s", tap_shared_data(), core[i - 11]);
        slim_error err = {0};
        slim_status st = convert(src, tmp("re"), NULL, 1, &err);
        snprintf(idx, sizeof idx, "%s.index", src);
        snprintf(data, sizeof data, "%s.data-00000-of-00001", src);
        tap_ok(!st && same_file(idx, tmp("re.index")) &&
                   same_file(data, tmp("re.data-00000-of-00001")),
               "%s: written again, byte for byte TensorFlow's .index and .data%s%s",
               strstr(src, "tfckpt/") + 7, st ? ": " : "", st ? err.msg : "");
    }
}

/* Every BundleEntryProto of two V2 indexes, field by field. */
static bool same_entries(const char *a, const char *b, bool where, char *why, size_t n)
{
    slim__ckpt *x = NULL, *y = NULL;
    slim_error err = {0};
    bool ok = !slim__ckpt_open(a, &x, &err) && !slim__ckpt_open(b, &y, &err) &&
              slim__ckpt_count(x) == slim__ckpt_count(y);
    for (int i = 0; ok && i < slim__ckpt_count(x); i++) {
        const slim__ckpt_entry *e = slim__ckpt_at(x, i), *f = slim__ckpt_at(y, i);
        ok = !strcmp(e->name, f->name) && e->dtype == f->dtype && e->rank == f->rank &&
             !memcmp(e->dim, f->dim, sizeof e->dim) && e->shard == f->shard &&
             (!where || (e->off == f->off && e->len == f->len && e->crc == f->crc));
        if (!ok)
            snprintf(why, n, "entry '%s' differs", e->name);
    }
    slim__ckpt_close(x);
    slim__ckpt_close(y);
    return ok;
}

static void test_v2_expected_differences(void)
{
    char src[400], why[512] = "";
    slim_error err = {0};
    snprintf(src, sizeof src, "%s/tfckpt/tf-trt-mnist-v2/model.ckpt-46900", tap_shared_data());
    slim_status st = convert(src, tmp("mnist"), "v2", 1, &err);
    char data[500];
    snprintf(data, sizeof data, "%s.data-00000-of-00001", src);
    tap_ok(!st && same_file(data, tmp("mnist.data-00000-of-00001")) &&
               same_entries(src, tmp("mnist"), true, why, sizeof why),
           "MNIST (snappy index): the same data file, every entry's dtype, shape, shard, offset, "
           "size and CRC the same%s%s",
           why, st ? err.msg : "");
    snprintf(src, sizeof src, "%s/tfckpt/tf-core-v2/old_string_tensors/foo", tap_shared_data());
    st = convert(src, tmp("strs"), "v2", 1, &err);
    tap_ok(!st && same_entries(src, tmp("strs"), false, why, sizeof why) &&
               same_tensors(src, tmp("strs"), why, sizeof why),
           "old string tensors: the same entries and strings (in name order, with CRCs over u64 "
           "lengths) %s%s",
           why, st ? err.msg : "");
    slim__ckpt *c;
    tap_ok(slim__ckpt_open(tmp("strs"), &c, &err) == SLIM_OK && !slim__ckpt_verify_all(c, &err),
           "... which verify");
    slim__ckpt_close(c);
}

static void test_v1_rewrite(void)
{
    char src[400];
    snprintf(src, sizeof src, "%s/tfckpt/tf-tfprof-v1/ckpt", tap_shared_data());
    slim_error err = {0};
    slim_status st = convert(src, tmp("v1"), "v1", 1, &err);
    tap_ok(!st && same_file(src, tmp("v1")),
           "tf-tfprof-v1/ckpt: written again as V1, byte for byte TensorFlow's file (meta with "
           "versions, OrderedCode keys, packed float_val)%s%s",
           st ? ": " : "", st ? err.msg : "");
}

/* A partitioned (4,6) variable in three row slices, a scalar, int64 and
 * strings, written V1 and V2 (3 shards), read back. */
static void test_slices(void)
{
    float full[24];
    for (int i = 0; i < 24; i++)
        full[i] = (float)i * 0.5f - 3;
    const int64_t dim[2] = {4, 6};
    int64_t rows[3][2] = {{0, 1}, {1, 2}, {3, 1}}; /* start, length */
    for (int fmt = 1; fmt <= 2; fmt++) {
        const char *path = tmp(fmt == 1 ? "part_v1" : "part_v2");
        slim__tfw *w;
        slim_error err = {0};
        slim_status st = slim__tfw_new(path, fmt, fmt == 2 ? 3 : 1, &w, &err);
        int64_t step = 77;
        st = st ? st : slim__tfw_add(w, "a/global", SLIM__DT_INT64, 0, NULL, &step, 8, &err);
        for (int s = 0; s < 3 && !st; s++) {
            /* columns whole (-1), rows sliced */
            int64_t start[2] = {rows[s][0], 0}, len[2] = {rows[s][1], -1};
            st = slim__tfw_add_slice(w, "b/part", SLIM__DT_FLOAT, 2, dim, start, len,
                                     full + rows[s][0] * 6, (size_t)rows[s][1] * 6 * 4, &err);
        }
        uint8_t sblob[8 * 2 + 7];
        uint64_t l0 = 3, l1 = 4;
        memcpy(sblob, &l0, 8);
        memcpy(sblob + 8, &l1, 8);
        memcpy(sblob + 16, "abcdefg", 7);
        st = st ? st
                : slim__tfw_add(w, "c/strs", SLIM__DT_STRING, 1, (int64_t[]){2}, sblob,
                                sizeof sblob, &err);
        st = st ? (slim__tfw_free(w), st) : slim__tfw_finish(w, &err);
        slim__ckpt *c = NULL;
        if (!st)
            st = slim__ckpt_open(path, &c, &err);
        if (!st)
            st = slim__ckpt_verify_all(c, &err);
        float got[24] = {0};
        int i = c ? slim__ckpt_find(c, "b/part") : -1;
        if (!st && i >= 0)
            st = slim__ckpt_read_f32(c, i, got, 24, &err);
        bool ok = !st && i >= 0 && slim__ckpt_at(c, i)->n_slices == 3 &&
                  !memcmp(got, full, sizeof full) && slim__ckpt_global_step(c) < 0;
        void *raw = NULL;
        size_t len = 0;
        int k = c ? slim__ckpt_find(c, "c/strs") : -1;
        ok = ok && k >= 0 && !slim__ckpt_read_raw(c, k, &raw, &len, &err) && len == sizeof sblob &&
             !memcmp(raw, sblob, len);
        free(raw);
        tap_ok(ok, "%s: a variable in 3 slices%s reads back whole; int64 and strings too%s%s",
               fmt == 1 ? "V1" : "V2", fmt == 2 ? " over 3 data shards" : "", st ? ": " : "",
               st ? err.msg : "");
        slim__ckpt_close(c);
    }
    /* a slice outside the tensor is refused when writing */
    slim__tfw *w;
    slim_error err = {0};
    slim__tfw_new(tmp("bad"), SLIM__TFW_V2, 1, &w, &err);
    slim_status st = slim__tfw_add_slice(w, "x", SLIM__DT_FLOAT, 2, dim, (int64_t[]){3, 0},
                                         (int64_t[]){2, -1}, full, 48, &err);
    tap_ok(st == SLIM_EINVAL, "a slice outside its tensor is refused: %s", err.msg);
    slim__tfw_free(w);
}

/* TF2: keys are object paths; the object graph names the variables. */
static void test_tf2(void)
{
    Tensorflow__TrackableObjectGraph g = TENSORFLOW__TRACKABLE_OBJECT_GRAPH__INIT;
    Tensorflow__TrackableObjectGraph__TrackableObject nodes[3];
    Tensorflow__TrackableObjectGraph__TrackableObject *np[3];
    Tensorflow__TrackableObjectGraph__TrackableObject__SerializedTensor at[2];
    Tensorflow__TrackableObjectGraph__TrackableObject__SerializedTensor *ap[2];
    Tensorflow__TrackableObjectGraph__TrackableObject__SlotVariableReference sv;
    Tensorflow__TrackableObjectGraph__TrackableObject__SlotVariableReference *svp = &sv;
    for (int i = 0; i < 3; i++) {
        tensorflow__trackable_object_graph__trackable_object__init(&nodes[i]);
        np[i] = &nodes[i];
    }
    for (int i = 0; i < 2; i++) {
        tensorflow__trackable_object_graph__trackable_object__serialized_tensor__init(&at[i]);
        ap[i] = &at[i];
    }
    const char *k0 = "model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE";
    const char *k1 = "model/layer_with_weights-0/kernel/.OPTIMIZER_SLOT/optimizer/m/"
                     ".ATTRIBUTES/VARIABLE_VALUE";
    at[0].name = "VARIABLE_VALUE";
    at[0].full_name = "dense/kernel";
    at[0].checkpoint_key = (char *)k0;
    at[1].name = "VARIABLE_VALUE";
    at[1].full_name = "dense/kernel/Adam";
    at[1].checkpoint_key = (char *)k1;
    nodes[0].n_attributes = 1;
    nodes[0].attributes = &ap[0];
    nodes[1].n_attributes = 1;
    nodes[1].attributes = &ap[1];
    tensorflow__trackable_object_graph__trackable_object__slot_variable_reference__init(&sv);
    sv.original_variable_node_id = 0;
    sv.slot_name = "m";
    sv.slot_variable_node_id = 1;
    nodes[2].n_slot_variables = 1;
    nodes[2].slot_variables = &svp;
    g.n_nodes = 3;
    g.nodes = np;
    size_t gl = tensorflow__trackable_object_graph__get_packed_size(&g);
    uint8_t *blob = malloc(8 + gl);
    uint64_t l = gl;
    memcpy(blob, &l, 8);
    tensorflow__trackable_object_graph__pack(&g, blob + 8);
    float w[6] = {1, 2, 3, 4, 5, 6}, m[6] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
    int64_t it = 10;
    slim__tfw *wr;
    slim_error err = {0};
    slim_status st = slim__tfw_new(tmp("tf2"), SLIM__TFW_V2, 1, &wr, &err);
    st = st ? st
            : slim__tfw_add(wr, "_CHECKPOINTABLE_OBJECT_GRAPH", SLIM__DT_STRING, 0, NULL, blob,
                            8 + gl, &err);
    st = st ? st : slim__tfw_add(wr, k0, SLIM__DT_FLOAT, 2, (int64_t[]){2, 3}, w, 24, &err);
    st = st ? st : slim__tfw_add(wr, k1, SLIM__DT_FLOAT, 2, (int64_t[]){2, 3}, m, 24, &err);
    st = st ? st
            : slim__tfw_add(wr, "optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE", SLIM__DT_INT64, 0,
                            NULL, &it, 8, &err);
    st = st ? (slim__tfw_free(wr), st) : slim__tfw_finish(wr, &err);
    free(blob);
    slim__ckpt *c = NULL;
    if (!st)
        st = slim__ckpt_open(tmp("tf2"), &c, &err);
    int kv = c ? slim__ckpt_find(c, "dense/kernel") : -1,
        ks = c ? slim__ckpt_find(c, "dense/kernel/m") : -1;
    const slim__ckpt_entry *e = c ? slim__ckpt_at(c, kv) : NULL,
                           *s = c ? slim__ckpt_at(c, ks) : NULL;
    float got[6] = {0};
    bool ok = !st && e && s && e->kind == SLIM__CK_VALUE && e->key && !strcmp(e->key, k0) &&
              s->kind == SLIM__CK_SLOT && !strcmp(s->var, "dense/kernel") &&
              !strcmp(s->slot, "m") && !slim__ckpt_read_f32(c, kv, got, 6, &err) &&
              !memcmp(got, w, sizeof w);
    int ko = c ? slim__ckpt_find(c, "optimizer/iter") : -1;
    ok = ok && ko >= 0 && slim__ckpt_at(c, ko)->kind == SLIM__CK_OPT;
    tap_ok(ok,
           "TF2 object-based names: '%s' is dense/kernel (its graph name), its Adam m slot "
           "dense/kernel/m, optimizer/iter optimizer state%s%s",
           k0, st ? ": " : "", st ? err.msg : "");
    slim__ckpt_close(c);
}

/* slim's format through TensorFlow's and back. */
static void test_round_trips(void)
{
    char src[400], why[256] = "";
    snprintf(src, sizeof src, "%s/tfckpt/tf-trt-mnist-v2", tap_shared_data());
    slim_error err = {0};
    slim_status st = convert(src, tmp("m.slimckpt"), NULL, 1, &err);
    tap_ok(!st, "MNIST V2 -> slim%s%s", st ? ": " : "", st ? err.msg : "");
    for (int f = 1; f <= 2 && !st; f++) {
        const char *o = tmp(f == 1 ? "m1" : "m2"),
                   *back = tmp(f == 1 ? "b1.slimckpt" : "b2.slimckpt");
        st = convert(tmp("m.slimckpt"), o, f == 1 ? "v1" : "v2", f == 2 ? 2 : 1, &err);
        if (!st)
            st = convert(o, back, NULL, 1, &err);
        slim__ckpt *c = NULL;
        bool ok = !st && same_tensors(tmp("m.slimckpt"), o, why, sizeof why) &&
                  same_tensors(o, back, why, sizeof why) &&
                  same_tensors(back, tmp("m.slimckpt"), why, sizeof why) &&
                  !slim__ckpt_open(o, &c, &err) && slim__ckpt_global_step(c) == 46900 &&
                  slim__ckpt_header(c) != NULL;
        slim__ckpt_close(c);
        tap_ok(ok, "slim -> %s -> slim: every value, global_step 46900 and the run header kept%s%s",
               f == 1 ? "V1" : "V2 (2 shards)", why, st ? err.msg : "");
    }
}

int main(void)
{
    if (!tap_shared_data()) {
        test_slices();
        test_tf2();
        return tap_done();
    }
    test_v2_rewrite();
    test_v2_expected_differences();
    test_v1_rewrite();
    test_slices();
    test_tf2();
    test_round_trips();
    return tap_done();
}
