/* tests/data/test_pipeline.c - the input pipeline end to end on small TFRecord
 * shards written here from real photos: every example once per epoch,
 * bit-identical batches at 1 and 3 threads, eval order and the partial last
 * batch, checkpoint position and restore, corrupt records under fail and
 * skip, folders of loose images, the dataset descriptions. */
#include "tests/data/tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NPHOTO 10
#define SIZE 40

static const char *photos[NPHOTO] = {
    "photos/pets_examples_0000.jpg", "photos/pets_examples_0001.jpg",
    "photos/pets_examples_0002.jpg", "photos/pets_examples_0003.jpg",
    "photos/raccoon_test_0004.jpg",  "photos/raccoon_test_0005.jpg",
    "photos/raccoon_test_0006.jpg",  "photos/raccoon_test_0007.jpg",
    "photos/grace_hopper.jpg",       "photos/tf_medium.jpg"};

/* 3 shards of 23 examples (photos repeated), label = 1 + k % 7, ImageNet-style
 * 1-based; returns the shard directory. */
static const char *make_shards(int *n_examples)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/shards", tap_tmpdir());
    mkdir(dir, 0755);
    uint8_t *jpg[NPHOTO];
    size_t len[NPHOTO];
    for (int i = 0; i < NPHOTO; i++)
        jpg[i] = tap_read_file(tap_data_path(photos[i]), &len[i]);
    int k = 0;
    for (int s = 0; s < 3; s++) {
        char path[600];
        snprintf(path, sizeof path, "%s/train-%05d-of-00003", dir, s);
        slim_tfrecord_writer *w;
        slim_error err = {0};
        slim_tfrecord_writer_new(path, SLIM_COMPRESSION_NONE, &w, &err);
        int n = s == 2 ? 7 : 8;
        for (int r = 0; r < n; r++, k++) {
            slim_example *ex;
            slim_example_new(&ex, &err);
            slim_example_set_bytes(ex, "image/encoded", jpg[k % NPHOTO], len[k % NPHOTO]);
            slim_example_set_bytes(ex, "image/format", "JPEG", 4);
            int64_t lab = 1 + k % 7, id = k;
            slim_example_set_int64s(ex, "image/class/label", &lab, 1);
            slim_example_set_int64s(ex, "test/id", &id, 1);
            uint8_t *buf;
            size_t bl;
            slim_example_serialize(ex, &buf, &bl, &err);
            slim_tfrecord_write(w, buf, bl, &err);
            free(buf);
            slim_example_free(ex);
        }
        slim_tfrecord_writer_close(w, &err);
    }
    for (int i = 0; i < NPHOTO; i++)
        free(jpg[i]);
    char lp[600];
    snprintf(lp, sizeof lp, "%s/labels.txt", dir);
    FILE *f = fopen(lp, "w");
    fprintf(f, "0:background\n");
    for (int i = 1; i <= 7; i++)
        fprintf(f, "%d:class%d\n", i, i);
    fclose(f);
    *n_examples = k;
    return dir;
}

typedef struct run_out {
    float *images;
    int32_t *labels;
    int batches;
    int64_t skipped;
    int replaced;
    slim_status st;
    char msg[1024];
    int last_valid;
} run_out;

static void run_free(run_out *r)
{
    free(r->images);
    free(r->labels);
}

/* Collect up to max_batches batches. */
static run_out collect(const slim_pipeline_opts *o, int max_batches,
                       slim_pipeline_position *pos_after, int pos_at,
                       const slim_pipeline_position *restore)
{
    run_out r = {0};
    slim_pipeline *p;
    slim_error err = {0};
    r.st = slim_pipeline_new(o, &p, &err);
    if (r.st) {
        snprintf(r.msg, sizeof r.msg, "%s", err.msg);
        return r;
    }
    if (restore && (r.st = slim_pipeline_restore(p, restore, &err))) {
        snprintf(r.msg, sizeof r.msg, "%s", err.msg);
        slim_pipeline_free(p);
        return r;
    }
    int n, h, w, c;
    slim_pipeline_shape(p, &n, &h, &w, &c);
    size_t per = (size_t)n * h * w * c;
    r.images = malloc(sizeof(float) * per * max_batches);
    r.labels = malloc(sizeof(int32_t) * n * max_batches);
    for (int b = 0; b < max_batches; b++) {
        slim_batch_info bi;
        r.st = slim_pipeline_next(p, r.images + per * b, r.labels + n * b, &bi, &err);
        if (r.st) {
            snprintf(r.msg, sizeof r.msg, "%s", err.msg);
            break;
        }
        if (bi.end_of_data)
            break;
        r.replaced += bi.n_replaced;
        r.last_valid = bi.n_valid;
        r.batches++;
        if (pos_after && b + 1 == pos_at)
            slim_pipeline_position_get(p, pos_after);
    }
    slim_pipeline_stats st;
    slim_pipeline_get_stats(p, &st);
    r.skipped = st.skipped;
    slim_pipeline_free(p);
    return r;
}

static void test_epochs_and_threads(const char *dir, int total)
{
    char pat[600];
    snprintf(pat, sizeof pat, "%s/train-*", dir);
    slim_pipeline_opts o = {.file_pattern = pat,
                            .recipe = "inception",
                            .is_training = true,
                            .batch_size = 4,
                            .image_size = SIZE,
                            .seed = 11,
                            .num_epochs = 2,
                            .labels_offset = 1,
                            .shuffle_buffer = 8,
                            .num_readers = 2};
    o.num_threads = 1;
    run_out a = collect(&o, 100, NULL, 0, NULL);
    o.num_threads = 3;
    run_out b = collect(&o, 100, NULL, 0, NULL);
    tap_ok(a.st == SLIM_OK && b.st == SLIM_OK, "two epochs run (%s%s)", a.msg, b.msg);
    /* 46 examples in batches of 4: 11 full + 1 of 2 (num_epochs > 0, no drop_remainder). */
    tap_ok(a.batches == 12 && a.last_valid == 2,
           "2 x 23 examples -> 12 batches, the last with 2 (%d, %d)", a.batches, a.last_valid);
    size_t per = (size_t)4 * SIZE * SIZE * 3;
    tap_ok(a.batches == b.batches && !memcmp(a.images, b.images, sizeof(float) * per * a.batches) &&
               !memcmp(a.labels, b.labels, sizeof(int32_t) * 4 * a.batches),
           "batches are bit-identical at 1 and 3 threads");
    /* Every example once per epoch: label histogram of each epoch. */
    int hist[2][7] = {{0}}, want[7] = {0};
    for (int k = 0; k < total; k++)
        want[k % 7]++;
    int bad = 0;
    for (int i = 0; i < 2 * total; i++) {
        int l = a.labels[i];
        if (l < 0 || l > 6)
            bad++;
        else
            hist[i / total][l]++;
    }
    for (int e = 0; e < 2; e++)
        for (int l = 0; l < 7; l++)
            bad += hist[e][l] != want[l];
    tap_ok(bad == 0, "each epoch holds every example once (labels_offset 1 applied)");
    /* Shuffled: the first epoch's label order is not the file order. */
    int same = 0;
    for (int i = 0; i < total; i++)
        same += a.labels[i] == i % 7;
    tap_ok(same < total, "training order is shuffled");
    /* Replicas sharing by file: 2 processes, each its own files of an epoch;
     * together every example once, each fewer than all. */
    slim_pipeline_opts of = o;
    of.batch_size = 1;
    of.num_epochs = 1;
    of.replicas = 2;
    of.replica_by_file = true;
    int fh[7] = {0}, got[2] = {0}, fbad = 0;
    for (int k = 0; k < 2; k++) {
        of.replica = k;
        run_out f = collect(&of, 100, NULL, 0, NULL);
        fbad += f.st != SLIM_OK;
        got[k] = f.batches;
        for (int i = 0; i < f.batches; i++)
            if (f.labels[i] >= 0 && f.labels[i] <= 6)
                fh[f.labels[i]]++;
        run_free(&f);
    }
    for (int l = 0; l < 7; l++)
        fbad += fh[l] != want[l];
    tap_ok(!fbad && got[0] > 0 && got[1] > 0 && got[0] + got[1] == total,
           "shared by file, 2 replicas read %d + %d examples: each once", got[0], got[1]);
    of.replicas = 4;
    of.replica = 0;
    slim_pipeline *fp;
    slim_error ferr = {0};
    tap_ok(slim_pipeline_new(&of, &fp, &ferr) == SLIM_EINVAL && strstr(ferr.msg, "a file per"),
           "by file with fewer files than replicas is refused: %s", ferr.msg);
    /* Another seed, other batches. */
    o.seed = 12;
    run_out c = collect(&o, 3, NULL, 0, NULL);
    tap_ok(memcmp(a.images, c.images, sizeof(float) * per * 3) != 0,
           "another seed gives other batches");
    run_free(&a);
    run_free(&b);
    run_free(&c);
}

static void test_eval(const char *dir, int total)
{
    slim_pipeline_opts o = {.dataset_dir = dir,
                            .split = "train",
                            .recipe = "inception",
                            .batch_size = 5,
                            .image_size = SIZE,
                            .num_threads = 2,
                            .labels_offset = 1};
    run_out a = collect(&o, 100, NULL, 0, NULL);
    int inorder = 0;
    for (int i = 0; i < total; i++)
        inorder += a.labels[i] == i % 7;
    tap_ok(a.st == SLIM_OK && a.batches == 5 && a.last_valid == 3 && inorder == total,
           "eval: one epoch in file order, 5 batches, the last with 3 valid (%s)", a.msg);
    bool zero = true;
    size_t per = (size_t)SIZE * SIZE * 3;
    for (size_t i = per * (4 * 5 + 3); i < per * 25; i++)
        zero = zero && a.images[i] == 0;
    tap_ok(zero && a.labels[23] == 0 && a.labels[24] == 0,
           "the padding of the last batch is zeros, label 0");
    o.drop_remainder = true;
    run_out b = collect(&o, 100, NULL, 0, NULL);
    tap_ok(b.batches == 4, "drop_remainder drops the partial batch");
    run_free(&a);
    run_free(&b);
}

static void test_restore(const char *dir)
{
    char pat[600];
    snprintf(pat, sizeof pat, "%s/train-*", dir);
    slim_pipeline_opts o = {.file_pattern = pat,
                            .recipe = "inception",
                            .is_training = true,
                            .batch_size = 4,
                            .image_size = SIZE,
                            .seed = 3,
                            .num_threads = 2,
                            .labels_offset = 1,
                            .shuffle_buffer = 10};
    slim_pipeline_position pos;
    /* Forever mode: 15 batches cross two epoch boundaries; the position after 7. */
    run_out a = collect(&o, 15, &pos, 7, NULL);
    tap_ok(pos.consumed == 28 && pos.epoch == 1 && pos.index == 5,
           "position after 7 batches: epoch 1, index 5, consumed 28 (got %lld, %lld, %lld)",
           (long long)pos.epoch, (long long)pos.index, (long long)pos.consumed);
    run_out b = collect(&o, 8, NULL, 0, &pos);
    size_t per = (size_t)4 * SIZE * SIZE * 3;
    tap_ok(a.st == SLIM_OK && b.st == SLIM_OK && b.batches == 8 &&
               !memcmp(a.images + per * 7, b.images, sizeof(float) * per * 8) &&
               !memcmp(a.labels + 4 * 7, b.labels, sizeof(int32_t) * 4 * 8),
           "restored at the position, the next 8 batches equal the uninterrupted run's");
    slim_pipeline_position bad = {0, 0, -3};
    slim_pipeline *p;
    slim_error err = {0};
    slim_pipeline_new(&o, &p, &err);
    slim_status st = slim_pipeline_restore(p, &bad, &err);
    tap_ok(st == SLIM_EINVAL, "a negative position is refused: %s", err.msg);
    slim_pipeline_free(p);

    /* A position another batch size left (a run with another number of
     * processes): batch 2's position after 15 batches (30 examples) goes on
     * in batch 4 with examples 30..33 of the same stream. */
    slim_pipeline_opts o2 = o;
    o2.batch_size = 2;
    slim_pipeline_position p30;
    run_out c = collect(&o2, 17, &p30, 15, NULL);
    run_out d = collect(&o, 1, NULL, 0, &p30);
    size_t per2 = (size_t)2 * SIZE * SIZE * 3;
    tap_ok(c.st == SLIM_OK && d.st == SLIM_OK && d.batches == 1 && p30.consumed == 30 &&
               !memcmp(c.images + per2 * 15, d.images, sizeof(float) * per2 * 2) &&
               !memcmp(c.labels + 2 * 15, d.labels, sizeof(int32_t) * 4),
           "a position of batch 2 (consumed %lld) goes on in batch 4 with the same examples",
           (long long)p30.consumed);

    /* Replicas: 2 pipelines of batch 2 (replica 0 and 1) make the rows 0-1
     * and 2-3 of the batch-4 pipeline's batches, from the start and from
     * the position above; replica 0's position is the global one. */
    run_out r[2];
    slim_pipeline_position rpos[2];
    bool same = true;
    for (int k = 0; k < 2; k++) {
        slim_pipeline_opts ok = o2;
        ok.replica = k;
        ok.replicas = 2;
        r[k] = collect(&ok, 15, &rpos[k], 7, NULL);
        same &= r[k].st == SLIM_OK && r[k].batches == 15;
        for (int bt = 0; same && bt < 15; bt++)
            same &= !memcmp(a.images + per * bt + per2 * k, r[k].images + per2 * bt,
                            sizeof(float) * per2) &&
                    !memcmp(a.labels + 4 * bt + 2 * k, r[k].labels + 2 * bt, sizeof(int32_t) * 2);
    }
    tap_ok(same, "replicas 0 and 1 of batch 2 read the rows 0-1 and 2-3 of batch 4's batches");
    tap_ok(rpos[0].consumed == 28 && rpos[0].epoch == 1 && rpos[0].index == 5,
           "replica 0's position after 7 batches is the global one: epoch 1, index 5, consumed 28 "
           "(got %lld, %lld, %lld)",
           (long long)rpos[0].epoch, (long long)rpos[0].index, (long long)rpos[0].consumed);
    same = true;
    for (int k = 0; k < 2; k++) {
        slim_pipeline_opts ok = o2;
        ok.replica = k;
        ok.replicas = 2;
        run_out q = collect(&ok, 1, NULL, 0, &p30);
        same &= q.st == SLIM_OK && q.batches == 1 &&
                !memcmp(d.images + per2 * k, q.images, sizeof(float) * per2);
        run_free(&q);
    }
    tap_ok(same, "restored at an unaligned position, replicas 0 and 1 go on with batch 4's rows");
    slim_pipeline_opts badr = o2;
    badr.replica = 2;
    badr.replicas = 2;
    st = slim_pipeline_new(&badr, &p, &err);
    tap_ok(st == SLIM_EINVAL, "replica 2 of 2 is refused: %s", err.msg);
    run_free(&r[0]);
    run_free(&r[1]);
    run_free(&c);
    run_free(&d);
    run_free(&a);
    run_free(&b);
}

static void test_corrupt(const char *dir)
{
    /* Copy shard 1 with one payload byte flipped in its record 2. */
    char src[600], dst[900];
    snprintf(src, sizeof src, "%s/train-00001-of-00003", dir);
    size_t len;
    uint8_t *b = tap_read_file(src, &len);
    slim_tfrecord_reader *r;
    slim_error err = {0};
    slim_tfrecord_open(src, SLIM_COMPRESSION_AUTO, true, &r, &err);
    const uint8_t *d;
    size_t dl;
    int64_t off = 0;
    for (int i = 0; i < 3; i++)
        slim_tfrecord_next(r, &d, &dl, &off, &err);
    slim_tfrecord_close(r);
    b[off + 12 + 40] ^= 0x20;
    char cdir[600];
    snprintf(cdir, sizeof cdir, "%s/corrupt", tap_tmpdir());
    mkdir(cdir, 0755);
    snprintf(dst, sizeof dst, "%s/train-00001-of-00003", cdir);
    tap_write_file(dst, b, len);
    free(b);
    slim_pipeline_opts o = {.file_pattern = dst,
                            .recipe = "inception",
                            .batch_size = 4,
                            .image_size = SIZE,
                            .num_threads = 2,
                            .labels_offset = 1};
    run_out a = collect(&o, 10, NULL, 0, NULL);
    char want[1200];
    snprintf(want, sizeof want, "%s: record 2 at byte %lld: data CRC mismatch", dst,
             (long long)off);
    tap_ok(a.st == SLIM_ECORRUPT && !strncmp(a.msg, want, strlen(want)),
           "on_error fail: the corrupt record ends the run with file, record and offset");
    tap_diag("%s", a.msg);
    o.on_error = SLIM_ON_ERROR_SKIP;
    run_out s = collect(&o, 10, NULL, 0, NULL);
    tap_ok(s.st == SLIM_OK && s.skipped == 1 && s.replaced == 1 && s.batches == 2,
           "on_error skip: counted (1), replaced in its batch, 2 batches of 8 records");
    run_free(&a);
    run_free(&s);
    /* A label outside the classes (labels_offset 0 with 1-based labels and 7 classes + background).
     */
    o.on_error = SLIM_ON_ERROR_FAIL;
    o.labels_offset = -1;
    snprintf(src, sizeof src, "%s/train-00000-of-00003", dir);
    o.file_pattern = src;
    run_out l = collect(&o, 10, NULL, 0, NULL);
    tap_ok(l.st == SLIM_ECORRUPT && strstr(l.msg, "is outside [0, 8)"), "out-of-range label: %s",
           l.msg);
    run_free(&l);
    /* The wrong label key. */
    o.labels_offset = 1;
    o.label_key = "image/label";
    run_out k = collect(&o, 10, NULL, 0, NULL);
    tap_ok(k.st == SLIM_ECORRUPT && strstr(k.msg, "missing key 'image/label'"), "missing key: %s",
           k.msg);
    run_free(&k);
}

static void test_folder(void)
{
    /* root/cat/{a,b}.jpg root/dog/c.jpg -> labels 0, 0, 1. */
    char root[600], p[700];
    snprintf(root, sizeof root, "%s/folder", tap_tmpdir());
    mkdir(root, 0755);
    const char *names[3] = {"cat/a.jpg", "cat/b.JPG", "dog/c.jpeg"};
    snprintf(p, sizeof p, "%s/cat", root);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/dog", root);
    mkdir(p, 0755);
    for (int i = 0; i < 3; i++) {
        size_t len;
        uint8_t *d = tap_read_file(tap_data_path(photos[i]), &len);
        snprintf(p, sizeof p, "%s/%s", root, names[i]);
        tap_write_file(p, d, len);
        free(d);
    }
    slim_pipeline_opts o = {.file_pattern = root,
                            .recipe = "vgg",
                            .batch_size = 3,
                            .image_size = SIZE,
                            .num_threads = 2};
    run_out a = collect(&o, 5, NULL, 0, NULL);
    tap_ok(a.st == SLIM_OK && a.batches == 1 && a.labels[0] == 0 && a.labels[1] == 0 &&
               a.labels[2] == 1,
           "a folder of class folders: labels from the sorted folder names (%s)", a.msg);
    run_free(&a);
    snprintf(p, sizeof p, "%s/*/*", root);
    o.file_pattern = p;
    run_out b = collect(&o, 5, NULL, 0, NULL);
    tap_ok(b.st == SLIM_OK && b.batches == 1 && b.labels[2] == 1,
           "a glob of loose images: labels from parent folders");
    run_free(&b);
}

static void test_datasets(const char *dir)
{
    slim_dataset *d;
    slim_error err = {0};
    slim_status st = slim_dataset_open(NULL, dir, "train", &d, &err);
    const slim_dataset_info *in = st ? NULL : slim_dataset_get_info(d);
    tap_ok(in && in->n_files == 3 && in->num_classes == 8 && in->label_names &&
               !strcmp(in->label_names[3], "class3"),
           "generic dataset: 3 shards, 8 classes from labels.txt");
    slim_dataset_free(d);
    st = slim_dataset_open("cifar10", dir, "train", &d, &err);
    tap_ok(st == SLIM_ENOTFOUND && strstr(err.msg, "cifar10_train.tfrecord"),
           "missing cifar10 files: %s", err.msg);
    st = slim_dataset_open("imagenet", dir, "train", &d, &err);
    in = st ? NULL : slim_dataset_get_info(d);
    tap_ok(in && in->num_examples == 1281167 && in->num_classes == 1001 && in->n_files == 3 &&
               !strcmp(in->default_recipe, "inception"),
           "imagenet description: 1281167 train examples, 1001 classes, train-* shards");
    slim_dataset_free(d);
    st = slim_dataset_open("mnist", dir, "validation", &d, &err);
    tap_ok(st == SLIM_EINVAL && strstr(err.msg, "no split 'validation'"), "unknown split: %s",
           err.msg);
    tap_streq(slim_recipe_for_model("inception_v3"), "inception", "inception_v3 -> inception");
    tap_streq(slim_recipe_for_model("resnet_v1_50"), "vgg", "resnet_v1_50 -> vgg");
    tap_streq(slim_recipe_for_model("lenet"), "lenet", "lenet -> lenet");
    /* The zoo files' scope names (issue 26: these fell back to the dataset's recipe). */
    tap_streq(slim_recipe_for_model("LeNet"), "lenet", "LeNet -> lenet");
    tap_streq(slim_recipe_for_model("CifarNet"), "cifarnet", "CifarNet -> cifarnet");
    tap_streq(slim_recipe_for_model("InceptionV3"), "inception", "InceptionV3 -> inception");
    tap_streq(slim_recipe_for_model("MobilenetV1"), "inception", "MobilenetV1 -> inception");
}

static void test_preprocessor(void)
{
    size_t len;
    uint8_t *d = tap_read_file(tap_data_path(photos[1]), &len);
    slim_pipeline_opts o = {.recipe = "inception", .image_size = 64};
    slim_preprocessor *pp;
    slim_error err = {0};
    slim_status st = slim_preprocessor_new(&o, &pp, &err);
    float *out = malloc(sizeof(float) * 64 * 64 * 3);
    if (!st)
        st = slim_preprocessor_run(pp, d, len, "x.jpg", 0, 0, out, &err);
    float mn = 1e9f, mx = -1e9f;
    for (int i = 0; i < 64 * 64 * 3; i++)
        mn = out[i] < mn ? out[i] : mn, mx = out[i] > mx ? out[i] : mx;
    tap_ok(st == SLIM_OK && mn >= -1 - 1e-6f && mx <= 1 + 1e-6f && mx > mn,
           "preprocessor: eval image in [-1, 1]");
    slim_preprocessor_free(pp);
    free(out);
    free(d);
}

int main(void)
{
    if (!tap_shared_data())
        tap_skip_all("../shared/data is absent");
    int total;
    const char *dir = make_shards(&total);
    test_epochs_and_threads(dir, total);
    test_eval(dir, total);
    test_restore(dir);
    test_corrupt(dir);
    test_folder();
    test_datasets(dir);
    test_preprocessor();
    return tap_done();
}
