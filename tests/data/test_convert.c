/* tests/data/test_convert.c - converters: a folder of class folders -> shards
 * (labels, sharding, validation split, synsets, resume, corrupt images, gzip),
 * then read back through the pipeline; Fashion-MNIST IDX -> TFRecord (PNG and
 * raw) -> lenet pipeline, pixel for pixel; CIFAR-10 binary batches likewise. */
#include "datasets/convert.h"
#include "datasets/idx.h"
#include "tests/data/tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static int count_records(const char *path)
{
    slim_tfrecord_reader *r;
    slim_error err = {0};
    if (slim_tfrecord_open(path, SLIM_COMPRESSION_AUTO, true, &r, &err))
        return -1;
    int n = 0;
    for (;;) {
        const uint8_t *d;
        size_t len;
        int64_t off;
        if (slim_tfrecord_next(r, &d, &len, &off, &err) || !d)
            break;
        n++;
    }
    slim_tfrecord_close(r);
    return n;
}

static char *path_in(const char *dir, const char *name)
{
    static char b[4][1024];
    static int k;
    char *p = b[k++ & 3];
    snprintf(p, sizeof b[0], "%s/%s", dir, name);
    return p;
}

static void test_folder(void)
{
    char in[600], out[600];
    snprintf(in, sizeof in, "%s/imgs", tap_tmpdir());
    snprintf(out, sizeof out, "%s/shards", tap_tmpdir());
    mkdir(in, 0755);
    const char *cls[3] = {"n01440764", "n01443537", "n01484850"}; /* the first 3 ImageNet synsets */
    const char *src[4] = {"photos/pets_examples_0000.jpg", "photos/raccoon_test_0004.jpg",
                          "jpeg/libjpeg-turbo/testorig.jpg", "jpeg/pillow/hopper.jpg"};
    int n = 0;
    for (int c = 0; c < 3; c++) {
        mkdir(path_in(in, cls[c]), 0755);
        for (int i = 0; i < 3 + c; i++, n++) {
            size_t len;
            uint8_t *d = tap_read_file(tap_data_path(src[(i + c) % 4]), &len);
            char f[1200];
            snprintf(f, sizeof f, "%s/%s/img%d.JPEG", in, cls[c], i);
            tap_write_file(f, d, len);
            free(d);
        }
    }
    /* n = 12 images: 3 + 4 + 5 */
    convert_opts o = {.input_dir = in, .output_dir = out, .shards = 3, .num_threads = 2};
    convert_result res;
    slim_error err = {0};
    slim_status st = slim__convert_folder(&o, &res, &err);
    tap_ok(st == SLIM_OK && res.images == 12 && res.shards == 3 && res.num_classes == 3,
           "folder -> 3 shards of 12 images, 3 classes%s%s", st ? ": " : "", st ? err.msg : "");
    int total = 0;
    for (int s = 0; s < 3; s++) {
        char f[64];
        snprintf(f, sizeof f, "train-%05d-of-00003", s);
        total += count_records(path_in(out, f));
    }
    tap_ok(total == 12, "the shards hold 12 records (%d)", total);
    char **names;
    int nn;
    st = slim_labels_read(path_in(out, "labels.txt"), &names, &nn, &err);
    tap_ok(st == SLIM_OK && nn == 3 && !strcmp(names[1], "n01443537"),
           "labels.txt: sorted folder names");
    slim_labels_free(names, nn);
    /* Read back: every label's count. */
    slim_pipeline_opts po = {.dataset_dir = out,
                             .split = "train",
                             .recipe = "inception",
                             .batch_size = 12,
                             .image_size = 32,
                             .num_threads = 2};
    slim_pipeline *p;
    float *x = malloc(sizeof(float) * 12 * 32 * 32 * 3);
    int32_t y[12];
    slim_batch_info bi;
    st = slim_pipeline_new(&po, &p, &err);
    if (!st)
        st = slim_pipeline_next(p, x, y, &bi, &err);
    int hist[3] = {0};
    for (int i = 0; !st && i < 12; i++)
        if (y[i] >= 0 && y[i] < 3)
            hist[y[i]]++;
    tap_ok(st == SLIM_OK && hist[0] == 3 && hist[1] == 4 && hist[2] == 5,
           "the pipeline reads the converted split (dataset.yaml): labels 3/4/5 (%s)",
           st ? err.msg : "");
    if (!st) {
        const slim_dataset_info *di = slim_pipeline_dataset(p);
        tap_ok(di->num_examples == 12 && di->num_classes == 3, "dataset.yaml: size 12, 3 classes");
        slim_pipeline_free(p);
    }
    /* Resume: remove one shard, run again: it is rewritten identically, the others kept. */
    size_t l1, l2;
    uint8_t *before = tap_read_file(path_in(out, "train-00001-of-00003"), &l1);
    unlink(path_in(out, "train-00001-of-00003"));
    st = slim__convert_folder(&o, &res, &err);
    uint8_t *after = tap_read_file(path_in(out, "train-00001-of-00003"), &l2);
    tap_ok(st == SLIM_OK && res.shards_resumed == 2 && res.images == 12 && after && l1 == l2 &&
               !memcmp(before, after, l1),
           "resume: 2 shards kept, the missing one rewritten byte for byte");
    free(before);
    free(after);
    /* Another plan into the same directory is refused without overwrite. */
    o.shards = 2;
    st = slim__convert_folder(&o, &res, &err);
    tap_ok(st == SLIM_EEXIST && strstr(err.msg, "--overwrite"), "a different plan is refused: %s",
           err.msg);
    o.shards = 3;
    /* Synsets (ImageNet labels, 1-based), a validation split, gzip. */
    char out2[600];
    snprintf(out2, sizeof out2, "%s/imagenet", tap_tmpdir());
    convert_opts o2 = {.input_dir = in,
                       .output_dir = out2,
                       .shards = 2,
                       .num_threads = 2,
                       .synsets = tap_data_path("imagenet-meta/imagenet_lsvrc_2015_synsets.txt"),
                       .metadata = tap_data_path("imagenet-meta/imagenet_metadata.txt"),
                       .validation_size = 4,
                       .compression = SLIM_COMPRESSION_GZIP};
    st = slim__convert_folder(&o2, &res, &err);
    tap_ok(st == SLIM_OK && res.images == 12 && res.num_classes == 1001,
           "synsets: 1001 classes, a validation split of 4 (%s)", st ? err.msg : "");
    int nval = count_records(path_in(out2, "validation-00000-of-00002")) +
               count_records(path_in(out2, "validation-00001-of-00002"));
    tap_ok(nval == 4, "validation split: 4 records in gzip shards");
    slim_dataset *d;
    st = slim_dataset_open(NULL, out2, "validation", &d, &err);
    const slim_dataset_info *di = st ? NULL : slim_dataset_get_info(d);
    tap_ok(di && di->num_examples == 4 && di->num_classes == 1001 && di->label_names &&
               !strcmp(di->label_names[0], "background") &&
               !strncmp(di->label_names[1], "tench", 5),
           "dataset.yaml + labels.txt of a synset conversion (label 1 = %s)",
           di && di->label_names ? di->label_names[1] : "?");
    slim_dataset_free(d);
    po.dataset_dir = out2;
    po.split = "train";
    po.batch_size = 8;
    po.labels_offset = 0;
    st = slim_pipeline_new(&po, &p, &err);
    if (!st)
        st = slim_pipeline_next(p, x, y, &bi, &err);
    bool range = !st;
    for (int i = 0; !st && i < 8; i++)
        range = range && y[i] >= 1 && y[i] <= 3;
    tap_ok(range, "gzip shards through the pipeline: labels in 1..3 (%s)", st ? err.msg : "");
    if (!st)
        slim_pipeline_free(p);
    /* A corrupt image: fail names it; skip counts it. */
    char bad[1200];
    snprintf(bad, sizeof bad, "%s/%s/broken.jpg", in, cls[0]);
    tap_write_file(bad, "\xff\xd8\xff\xe0 not really", 15);
    char out3[600];
    snprintf(out3, sizeof out3, "%s/broken", tap_tmpdir());
    convert_opts o3 = {.input_dir = in, .output_dir = out3, .shards = 1};
    st = slim__convert_folder(&o3, &res, &err);
    tap_ok(st == SLIM_ECORRUPT && strstr(err.msg, "broken.jpg: corrupt JPEG"),
           "a corrupt image fails: %s", err.msg);
    o3.on_error = SLIM_ON_ERROR_SKIP;
    o3.overwrite = true;
    st = slim__convert_folder(&o3, &res, &err);
    tap_ok(st == SLIM_OK && res.skipped == 1 && res.images == 12 &&
               strstr(res.first_skip, "broken.jpg"),
           "on_error skip: 12 written, 1 skipped (%s)", res.first_skip);
    free(x);
}

/* --bounding_boxes: ImageNet's CSV -> the image/object/bbox lists (and its label) per image by file
 * name; the pipeline's distorted crop then uses them; a malformed line is an error. */
static void test_boxes(void)
{
    char in[600], out[600], csv[600];
    snprintf(in, sizeof in, "%s/boxed", tap_tmpdir());
    snprintf(out, sizeof out, "%s/boxed_out", tap_tmpdir());
    snprintf(csv, sizeof csv, "%s/boxes.csv", tap_tmpdir());
    mkdir(in, 0755);
    size_t len;
    uint8_t *jpg = tap_read_file(tap_data_path("photos/pets_examples_0001.jpg"), &len);
    const char *cls[2] = {"a", "b"};
    for (int c = 0; c < 2; c++) {
        mkdir(path_in(in, cls[c]), 0755);
        for (int i = 0; i < 2 + c; i++) {
            char f[1200];
            snprintf(f, sizeof f, "%s/%s/img%d.JPEG", in, cls[c], i);
            tap_write_file(f, jpg, len);
        }
    }
    free(jpg);
    const char *boxes = "img1.JPEG,0.0000,0.0000,1.0000,1.0000\n"
                        "img0.JPEG,0.1000,0.2000,0.5000,0.6000\n"
                        "img0.JPEG,0.3000,0.3000,0.9000,0.8000\n"
                        "other.JPEG,0.1,0.1,0.2,0.2\n";
    tap_write_file(csv, boxes, strlen(boxes));
    convert_opts o = {.input_dir = in,
                      .output_dir = out,
                      .shards = 1,
                      .num_threads = 1,
                      .no_shuffle = true,
                      .bounding_boxes = csv};
    convert_result res;
    slim_error err = {0};
    slim_status st = slim__convert_folder(&o, &res, &err);
    tap_ok(st == SLIM_OK && res.images == 5, "--bounding_boxes: 5 images converted (%s)",
           st ? err.msg : "");
    /* Records in folder order: a/img0 a/img1 b/img0 b/img1 b/img2. */
    static const int want_n[5] = {2, 1, 2, 1, 0};
    slim_tfrecord_reader *r;
    int ok = 0, k = 0;
    if (!st && !slim_tfrecord_open(path_in(out, "train-00000-of-00001"), SLIM_COMPRESSION_AUTO,
                                   true, &r, &err)) {
        const uint8_t *d;
        size_t dl;
        int64_t off;
        while (k < 5 && !slim_tfrecord_next(r, &d, &dl, &off, &err) && d) {
            slim_example *ex;
            if (slim_example_parse(d, dl, &ex, &err))
                break;
            const float *xmin, *ymin, *xmax, *ymax;
            const int64_t *lab, *cl;
            size_t n[6];
            bool good = !slim_example_floats(ex, "image/object/bbox/xmin", &xmin, &n[0]) &&
                        !slim_example_floats(ex, "image/object/bbox/ymin", &ymin, &n[1]) &&
                        !slim_example_floats(ex, "image/object/bbox/xmax", &xmax, &n[2]) &&
                        !slim_example_floats(ex, "image/object/bbox/ymax", &ymax, &n[3]) &&
                        !slim_example_int64s(ex, "image/object/bbox/label", &lab, &n[4]) &&
                        !slim_example_int64s(ex, "image/class/label", &cl, &n[5]);
            good = good && n[0] == (size_t)want_n[k] && n[1] == n[0] && n[2] == n[0] &&
                   n[3] == n[0] && n[4] == n[0];
            for (size_t b = 0; good && b < n[4]; b++)
                good = lab[b] == cl[0];
            if (good && want_n[k] == 2)
                good = xmin[0] == 0.1f && ymin[0] == 0.2f && xmax[0] == 0.5f && ymax[0] == 0.6f &&
                       xmin[1] == 0.3f && ymax[1] == 0.8f;
            if (good && want_n[k] == 1)
                good = xmin[0] == 0 && ymin[0] == 0 && xmax[0] == 1 && ymax[0] == 1;
            ok += good;
            k++;
            slim_example_free(ex);
        }
        slim_tfrecord_close(r);
    }
    tap_ok(ok == 5,
           "every record holds its file's boxes (2, 1, 2, 1, 0) as build_imagenet_data.py writes "
           "them, with the class label per box (%d of %d)",
           ok, k);
    /* The pipeline's distorted crop reads them. */
    slim_pipeline_opts po = {.dataset_dir = out,
                             .split = "train",
                             .recipe = "inception",
                             .is_training = true,
                             .batch_size = 5,
                             .image_size = 32,
                             .num_epochs = 1};
    slim_pipeline *p;
    float *x = malloc(sizeof(float) * 5 * 32 * 32 * 3);
    int32_t y[5];
    slim_batch_info bi;
    slim_pipeline_stats ps = {0};
    st = slim_pipeline_new(&po, &p, &err);
    if (!st) {
        st = slim_pipeline_next(p, x, y, &bi, &err);
        slim_pipeline_get_stats(p, &ps);
        slim_pipeline_free(p);
    }
    tap_ok(!st && ps.boxed_examples == 4, "the pipeline crops 4 of the 5 around their boxes (%lld)",
           (long long)ps.boxed_examples);
    free(x);
    /* A malformed line. */
    tap_write_file(csv, "img0.JPEG,0.1,0.2,0.5\n", 22);
    o.overwrite = true;
    st = slim__convert_folder(&o, &res, &err);
    char want[800];
    snprintf(want, sizeof want,
             "%s: line 1: expected 'filename,xmin,ymin,xmax,ymax' (normalized coordinates)", csv);
    tap_streq(err.msg, want, "a malformed box line is an error naming the line");
}

/* Write the first n images/labels of an IDX pair as gzip IDX files. */
static int write_idx_subset(const char *img, const char *lab, const char *dir, const char *prefix,
                            int n, slim_idx *keep_img, slim_idx *keep_lab)
{
    slim_error err = {0};
    if (slim_idx_read(img, keep_img, &err) || slim_idx_read(lab, keep_lab, &err))
        return -1;
    char p[1024];
    snprintf(p, sizeof p, "%s/%s-images-idx3-ubyte.gz", dir, prefix);
    gzFile f = gzopen(p, "wb");
    uint8_t h[16] = {0, 0, 8, 3, 0, 0, 0, (uint8_t)n, 0, 0, 0, 28, 0, 0, 0, 28};
    gzwrite(f, h, 16);
    gzwrite(f, keep_img->data, (unsigned)(n * 784));
    gzclose(f);
    snprintf(p, sizeof p, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
    f = gzopen(p, "wb");
    uint8_t h1[8] = {0, 0, 8, 1, 0, 0, 0, (uint8_t)n};
    gzwrite(f, h1, 8);
    gzwrite(f, keep_lab->data, (unsigned)n);
    gzclose(f);
    return 0;
}

static void test_idx(void)
{
    const char *fm = "/usr/share/datasets/fashion-mnist";
    char ti[512], tl[512];
    snprintf(ti, sizeof ti, "%s/t10k-images-idx3-ubyte.gz", fm);
    snprintf(tl, sizeof tl, "%s/t10k-labels-idx1-ubyte.gz", fm);
    if (access(ti, R_OK) != 0) {
        tap_diag("Fashion-MNIST is absent (apt-get install dataset-fashion-mnist): IDX round trip "
                 "skipped");
        return;
    }
    char src[600];
    snprintf(src, sizeof src, "%s/fmsrc", tap_tmpdir());
    mkdir(src, 0755);
    slim_idx im, lb;
    int bad_subset = write_idx_subset(ti, tl, src, "train", 40, &im, &lb);
    slim_idx_fini(&im);
    slim_idx_fini(&lb);
    if (bad_subset || write_idx_subset(ti, tl, src, "t10k", 20, &im, &lb)) {
        tap_ok(false, "IDX subset");
        return;
    }
    for (int fmt = 0; fmt < 2; fmt++) {
        char out[600];
        snprintf(out, sizeof out, "%s/fm_%s", tap_tmpdir(), fmt ? "raw" : "png");
        convert_opts o = {.input_dir = src, .output_dir = out, .image_format = fmt ? "raw" : "png"};
        convert_result res;
        slim_error err = {0};
        slim_status st = slim__convert_idx("fashion_mnist", &o, &res, &err);
        tap_ok(st == SLIM_OK && res.images == 60,
               "IDX (gzip) -> fashion_mnist_{train,test}.tfrecord, %s (%s)", fmt ? "raw" : "PNG",
               st ? err.msg : "");
        slim_pipeline_opts po = {.dataset_name = "fashion_mnist",
                                 .dataset_dir = out,
                                 .split = "test",
                                 .batch_size = 20,
                                 .num_threads = 2};
        slim_pipeline *p;
        float x[20 * 28 * 28];
        int32_t y[20];
        slim_batch_info bi;
        st = slim_pipeline_new(&po, &p, &err);
        if (!st)
            st = slim_pipeline_next(p, x, y, &bi, &err);
        int bad = 0;
        for (int i = 0; !st && i < 20; i++) {
            bad += y[i] != lb.data[i];
            for (int k = 0; k < 784; k++)
                bad += fabsf(x[i * 784 + k] - (im.data[i * 784 + k] - 128.0f) / 128.0f) > 1e-6f;
        }
        tap_ok(st == SLIM_OK && bi.n_valid == 20 && bad == 0,
               "IDX -> TFRecord (%s) -> lenet pipeline: 20 test images and labels exact (%s)",
               fmt ? "raw" : "PNG", st ? err.msg : "");
        if (!st) {
            const slim_dataset_info *di = slim_pipeline_dataset(p);
            tap_ok(di->num_classes == 10 && di->label_names &&
                       !strcmp(di->label_names[9], "Ankle boot") &&
                       !strcmp(di->default_recipe, "lenet"),
                   "fashion_mnist: 10 classes named, recipe lenet");
            slim_pipeline_free(p);
        }
    }
    slim_idx_fini(&im);
    slim_idx_fini(&lb);
}

static void test_cifar(void)
{
    char src[600], out[600];
    snprintf(src, sizeof src, "%s/cifar-10-batches-bin", tap_tmpdir());
    snprintf(out, sizeof out, "%s/cifar10", tap_tmpdir());
    mkdir(src, 0755);
    uint8_t rec[3][3073];
    for (int r = 0; r < 3; r++) {
        rec[r][0] = (uint8_t)(r * 3 + 1);
        for (int k = 0; k < 3072; k++)
            rec[r][1 + k] = (uint8_t)(k * (r + 1) + (k >> 10) * 77);
    }
    const char *files[6] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                            "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
    for (int f = 0; f < 6; f++)
        tap_write_file(path_in(src, files[f]), rec, sizeof rec);
    convert_opts o = {.input_dir = tap_tmpdir(), .output_dir = out};
    convert_result res;
    slim_error err = {0};
    slim_status st = slim__convert_cifar("cifar10", &o, &res, &err);
    tap_ok(st == SLIM_OK && res.images == 18,
           "CIFAR-10 binaries (in cifar-10-batches-bin/) -> 15 + 3 records (%s)",
           st ? err.msg : "");
    /* Read the test split back as raw decoded pixels: CHW planes -> HWC. */
    slim_tfrecord_reader *r;
    slim_tfrecord_open(path_in(out, "cifar10_test.tfrecord"), SLIM_COMPRESSION_AUTO, true, &r,
                       &err);
    const uint8_t *d;
    size_t len;
    int64_t off;
    int ok = 0;
    for (int i = 0; i < 3; i++) {
        if (slim_tfrecord_next(r, &d, &len, &off, &err) || !d)
            break;
        slim_example *ex;
        slim_example_parse(d, len, &ex, &err);
        const uint8_t *png;
        size_t pl;
        const int64_t *lab;
        size_t nl;
        slim_example_bytes(ex, "image/encoded", 0, &png, &pl);
        slim_example_int64s(ex, "image/class/label", &lab, &nl);
        slim_image img;
        slim_image_decode(png, pl, NULL, &img, &err);
        bool same = img.width == 32 && img.height == 32 && img.channels == 3 && lab[0] == rec[i][0];
        for (int y = 0; same && y < 1024; y++)
            for (int c = 0; c < 3; c++)
                same = same && img.data[y * 3 + c] == rec[i][1 + c * 1024 + y];
        ok += same;
        slim_image_fini(&img);
        slim_example_free(ex);
    }
    slim_tfrecord_close(r);
    tap_ok(ok == 3, "CIFAR-10 test records: PNG 32x32 RGB equals the binary planes, labels kept");
    char **names;
    int nn;
    st = slim_labels_read(path_in(out, "labels.txt"), &names, &nn, &err);
    tap_ok(st == SLIM_OK && nn == 10 && !strcmp(names[0], "airplane"), "cifar10 labels.txt");
    slim_labels_free(names, nn);
    /* A truncated batch file. */
    tap_write_file(path_in(src, "test_batch.bin"), rec, 3073 + 100);
    st = slim__convert_cifar("cifar10", &o, &res, &err);
    tap_ok(st == SLIM_ECORRUPT &&
               strstr(err.msg, "test_batch.bin: byte 3073: 3173 bytes is not a whole number"),
           "truncated CIFAR batch: %s", err.msg);
}

int main(void)
{
    if (!tap_shared_data())
        tap_skip_all("../shared/data is absent");
    test_folder();
    test_boxes();
    test_idx();
    test_cifar();
    return tap_done();
}
