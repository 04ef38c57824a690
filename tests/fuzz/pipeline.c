/*
 * tests/fuzz/pipeline.c - any bytes as a TFRecord shard through the whole
 * input pipeline: reading, tf.train.Example parsing, labels, boxes, decoding
 * and a built-in recipe of models/pipelines/ (inception, vgg, cifarnet,
 * lenet), into batches of 2.
 *
 * data[0] is the options, the rest the shard:
 *   bits 0-1  the recipe                      bit 2  training (the train section, shuffled)
 *   bit 3     on_error skip (else fail)       bit 4  make the framing CRCs right
 *   bit 5     ROI and DCT-scaled decoding off bit 6  a labels.txt of 10 classes beside it
 *   bit 7     the shard gzipped (the compressed reader)
 * Properties: an error says why; labels are in range when the classes are
 * known; the run ends (one epoch); and it resumes: a second pipeline
 * restored to the position after the first batch gives the same second
 * batch, bit for bit.
 */
#include "datasets/jpeg_index.h"
#include "tests/fuzz/fuzz.h"

#include <stdlib.h>
#include <string.h>

#define MAX_BATCHES 8

static const char *const recipes[] = {"inception", "vgg", "cifarnet", "lenet"};

static slim_status open_pipeline(const slim_pipeline_opts *o, slim_pipeline **p)
{
    slim_error err = {0};
    slim_status st = slim_pipeline_new(o, p, &err);
    if (st)
        FUZZ_CHECK(err.msg[0], "a failed start says why");
    return st;
}

static int one(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t opt = data[0];
    size_t n = size - 1;
    uint8_t *shard = malloc(n ? n : 1);
    if (n)
        memcpy(shard, data + 1, n);
    if (opt & 16)
        fuzz_fix_tfrecord(shard, n);
    fuzz_clear_tmpdir();
    char path[600], labels[600];
    fuzz_path(opt & 128 ? "train-00000-of-00001.gz" : "train-00000-of-00001", path, sizeof path);
    if (opt & 128) {
        size_t zn;
        uint8_t *z = fuzz_deflate(shard, n, true, &zn);
        fuzz_write_file(path, z, zn);
        free(z);
    } else {
        fuzz_write_file(path, shard, n);
    }
    free(shard);
    if (opt & 64)
        fuzz_write_file(fuzz_path("labels.txt", labels, sizeof labels),
                        "0:a\n1:b\n2:c\n3:d\n4:e\n5:f\n6:g\n7:h\n8:i\n9:j\n", 40);
    fuzz_rng rng = fuzz_rng_from(data, size);
    slim_pipeline_opts o = {.file_pattern = path,
                            .recipe = recipes[opt & 3],
                            .is_training = opt & 4,
                            .batch_size = 2,
                            .image_size = 8 + fuzz_below(&rng, 33),
                            .num_threads = 1,
                            .seed = fuzz_next(&rng),
                            .num_epochs = 1,
                            .on_error = opt & 8 ? SLIM_ON_ERROR_SKIP : SLIM_ON_ERROR_FAIL,
                            .no_roi_decode = opt & 32,
                            .no_dct_scaling = opt & 32};
    slim_pipeline *p;
    if (open_pipeline(&o, &p))
        return 0;
    int N, H, W, C;
    slim_pipeline_shape(p, &N, &H, &W, &C);
    FUZZ_CHECK(N == 2 && H == o.image_size && W == o.image_size && (C == 1 || C == 3),
               "shape %dx%dx%dx%d", N, H, W, C);
    int nc = slim_pipeline_dataset(p)->num_classes;
    size_t elems = (size_t)N * H * W * C;
    float *img[MAX_BATCHES];
    int32_t lab[MAX_BATCHES][2];
    slim_pipeline_position after_first = {0};
    int got = 0;
    bool failed = false;
    for (; got < MAX_BATCHES; got++) {
        img[got] = malloc(elems * sizeof(float));
        slim_batch_info bi;
        slim_error err = {0};
        if (slim_pipeline_next(p, img[got], lab[got], &bi, &err)) {
            FUZZ_CHECK(err.msg[0], "a failed batch says why");
            failed = true;
            free(img[got]);
            break;
        }
        if (bi.end_of_data) {
            free(img[got]);
            break;
        }
        FUZZ_CHECK(bi.n_valid >= 1 && bi.n_valid <= N, "%d valid", bi.n_valid);
        for (int i = 0; i < bi.n_valid; i++)
            FUZZ_CHECK(lab[got][i] >= 0 && (nc <= 0 || lab[got][i] < nc), "label %d of %d",
                       lab[got][i], nc);
        if (got == 0)
            slim_pipeline_position_get(p, &after_first);
    }
    slim_pipeline_free(p);

    /* Resume after the first batch: the same second batch. */
    if (got >= 2 && !failed) {
        slim_pipeline *q;
        slim_error err = {0};
        FUZZ_CHECK(!open_pipeline(&o, &q), "the same pipeline starts again");
        FUZZ_CHECK(slim_pipeline_restore(q, &after_first, &err) == SLIM_OK, "restore: %s", err.msg);
        float *again = malloc(elems * sizeof(float));
        int32_t l2[2];
        slim_batch_info bi;
        FUZZ_CHECK(slim_pipeline_next(q, again, l2, &bi, &err) == SLIM_OK && !bi.end_of_data,
                   "the resumed pipeline gives a batch: %s", err.msg);
        FUZZ_CHECK(!memcmp(again, img[1], elems * sizeof(float)) && !memcmp(l2, lab[1], sizeof l2),
                   "the resumed pipeline's batch equals the uninterrupted one's");
        free(again);
        slim_pipeline_free(q);
    }
    for (int i = 0; i < got; i++)
        free(img[i]);
    return 0;
}

/* ---- seeds ------------------------------------------------------------------------ */

/* A shard of two Examples around the image (label 3 and 7, one with boxes). */
static void seed_shard(fuzz_seeds *s, const uint8_t *img, size_t n, const char *format)
{
    uint8_t *p[2];
    size_t l[2];
    for (int k = 0; k < 2; k++) {
        slim_example *ex;
        slim_example_new(&ex, NULL);
        const int64_t label = k ? 7 : 3;
        slim_example_set_bytes(ex, "image/encoded", img, n);
        slim_example_set_bytes(ex, "image/format", format, strlen(format));
        slim_example_set_int64s(ex, "image/class/label", &label, 1);
        if (k) {
            const float b[] = {0.1f, 0.2f, 0.8f, 0.9f};
            slim_example_set_floats(ex, "image/object/bbox/ymin", b, 1);
            slim_example_set_floats(ex, "image/object/bbox/xmin", b + 1, 1);
            slim_example_set_floats(ex, "image/object/bbox/ymax", b + 2, 1);
            slim_example_set_floats(ex, "image/object/bbox/xmax", b + 3, 1);
        }
        slim_example_serialize(ex, &p[k], &l[k], NULL);
        slim_example_free(ex);
    }
    size_t fn;
    uint8_t *f = fuzz_frame_tfrecord((const uint8_t *const *)p, l, 2, &fn);
    for (int opt = 0; opt < 256; opt += 23)
        fuzz_seed_opt(s, (uint8_t)opt, f, fn);
    free(f);
    free(p[0]);
    free(p[1]);
}

static void shared_shard(fuzz_seeds *s, const uint8_t *d, size_t n, const char *name)
{
    (void)name;
    size_t keep = 0;
    while (keep + 16 <= n) {
        uint64_t len = 0;
        for (int i = 7; i >= 0; i--)
            len = len << 8 | d[keep + i];
        if (len > n - keep - 16 || keep + 16 + len > 24000)
            break;
        keep += 16 + (size_t)len;
    }
    if (keep)
        for (int opt = 0; opt < 256; opt += 37)
            fuzz_seed_opt(s, (uint8_t)opt, d, keep);
}

static void seeds(fuzz_seeds *s)
{
    /* small images in every form the pipeline reads */
    slim_image img = {.height = 12, .width = 10, .channels = 3, .data = malloc(360)};
    for (int i = 0; i < 360; i++)
        img.data[i] = (uint8_t)(i * 13);
    uint8_t *png;
    size_t pn;
    slim_image_encode_png(&img, &png, &pn, NULL);
    seed_shard(s, png, pn, "png");
    free(png);
    seed_shard(s, img.data, 360, "raw");
    free(img.data);
    char path[1024];
    size_t jn;
    uint8_t *jpg = fuzz_read_file(fuzz_shared("jpeg/pillow/hopper.jpg", path, sizeof path), &jn);
    if (jpg) {
        seed_shard(s, jpg, jn, "jpeg");
        uint8_t *idx = NULL;
        size_t in;
        if (!slim__jpeg_add_restarts(jpg, jn, "seed", &idx, &in, NULL) && idx) {
            seed_shard(s, idx, in, "jpeg");
            free(idx);
        }
        free(jpg);
    }
    fuzz_each_shared("tfrecord", 1 << 30, shared_shard, s);
}

FUZZ_TARGET(pipeline, .one = one, .seeds = seeds, .max_len = 1 << 15, .dict = "tfrecord")
