/* tests/data/test_bbox.c - bounding boxes in the distorted crop (datasets/bbox.c):
 * boxes to pixels as TF truncates them, clipping and dropping of bad boxes;
 * with fixed seeds every crop covers >= min_object_covered of a box and obeys
 * the aspect and area ranges; no boxes (or the box [0, 0, 1, 1]) gives the
 * crops pinned before boxes existed; a known crop for a known seed; the
 * fallback to the whole image; boxes read from Examples (both layouts, bad
 * lists as errors); the pipeline feeding each record's boxes, with ROI
 * decoding, and keys: {bbox: none}. */
#include "datasets/prep.h"
#include "tests/data/tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W0 500
#define H0 375

/* The crops test_recipes pins for seed 42 on a 500x375 image (no boxes). */
#define GOLDEN_NO_BOX "51,0,426,374,0 7,55,277,296,0 71,31,210,221,1 178,216,165,144,1"

typedef struct runner {
    slim__recipe *r;
    slim__prep p;
    slim__prep_scratch *s;
} runner;

/* DCT scaling off: the pipelines below run with no_dct_scaling. */
static bool runner_init(runner *ru, const char *recipe, int size, bool roi)
{
    slim_error err = {0};
    memset(ru, 0, sizeof *ru);
    if (slim__recipe_load(recipe, NULL, &ru->r, &err) ||
        slim__prep_init(&ru->p, ru->r, true, size, size, 0, roi, false, &err)) {
        tap_ok(false, "load %s: %s", recipe, err.msg);
        return false;
    }
    ru->s = slim__prep_scratch_new();
    return true;
}

static void runner_fini(runner *ru)
{
    slim__prep_scratch_free(ru->s);
    slim__recipe_free(ru->r);
}

/* A raw W0 x H0 RGB image: only its size matters for the boxes. */
static uint8_t *raw_image(void)
{
    uint8_t *px = malloc((size_t)W0 * H0 * 3);
    for (size_t i = 0; i < (size_t)W0 * H0 * 3; i++)
        px[i] = (uint8_t)(i * 31 + i / 1500);
    return px;
}

static prep_input raw_input(const uint8_t *px, const float *yxyx, int n)
{
    prep_input in = {.data = px,
                     .len = (size_t)W0 * H0 * 3,
                     .raw = true,
                     .raw_h = H0,
                     .raw_w = W0,
                     .raw_c = 3,
                     .name = "raw"};
    if (n > 0)
        in.boxes = (prep_boxes){yxyx, yxyx + 1, yxyx + 2, yxyx + 3, 4, n};
    return in;
}

/* Crops of indices 0..n-1 for seed as "x,y,w,h,flip ..." */
static void crops(runner *ru, const prep_input *in, uint64_t seed, int n, char *out, size_t cap)
{
    float *o = malloc(sizeof(float) * 64 * 64 * 3);
    slim_error err = {0};
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        prep_trace t;
        if (slim__prep_run(&ru->p, ru->s, in, seed, 0, i, o, &t, &err)) {
            snprintf(out, cap, "error: %.400s", err.msg);
            break;
        }
        size_t k = strlen(out);
        snprintf(out + k, cap - k, "%s%d,%d,%d,%d,%d", i ? " " : "", t.crop_x, t.crop_y, t.crop_w,
                 t.crop_h, t.flip);
    }
    free(o);
}

/* ---- boxes to pixels ------------------------------------------------------------ */

static void test_pixels(void)
{
    /* ymin, xmin, ymax, xmax */
    const float b[] = {
        0.1f,  0.2f, 0.5f,   0.6f, /* 37.5 -> 37, 100, 187.5 -> 187, 300 */
        -0.2f, 0.9f, 0.3f,   1.4f, /* clipped: 0, 450, 112, 500 */
        0.5f,  0.5f, 0.5f,   0.9f, /* no height: dropped */
        0.6f,  0.7f, 0.2f,   0.9f, /* inverted: dropped */
        NAN,   0.1f, 0.2f,   0.3f, /* NaN: dropped */
        1.2f,  1.1f, 1.5f,   1.9f, /* outside the image: nothing left after clipping */
        0.3f,  0.3f, 0.301f, 0.9f, /* 112.5 -> 112 and 112.875 -> 112: no pixel row */
    };
    prep_boxes pb = {b, b + 1, b + 2, b + 3, 4, 7};
    int r[7 * 4];
    int n = slim__bbox_pixels(&pb, W0, H0, r);
    char got[200];
    snprintf(got, sizeof got, "%d: %d,%d,%d,%d %d,%d,%d,%d", n, r[0], r[1], r[2], r[3], r[4], r[5],
             r[6], r[7]);
    tap_streq(got, "2: 100,37,300,187 450,0,500,112",
              "boxes to pixels: TF's truncation, clipping to the image, bad boxes dropped");
    /* Separate lists (stride 1), as the Inception keys store them. */
    const float ymin[] = {0, 0.25f}, xmin[] = {0, 0.5f}, ymax[] = {1, 0.75f}, xmax[] = {1, 1};
    prep_boxes ps = {ymin, xmin, ymax, xmax, 1, 2};
    n = slim__bbox_pixels(&ps, W0, H0, r);
    snprintf(got, sizeof got, "%d: %d,%d,%d,%d %d,%d,%d,%d", n, r[0], r[1], r[2], r[3], r[4], r[5],
             r[6], r[7]);
    tap_streq(got, "2: 0,0,500,375 250,93,500,281", "separate coordinate lists (stride 1)");
}

/* ---- sampling -------------------------------------------------------------------- */

/* The fraction of the box (x0, y0)-(x1, y1) inside a traced crop. */
static double coverage(const prep_trace *t, int x0, int y0, int x1, int y1)
{
    int ix0 = t->crop_x > x0 ? t->crop_x : x0, iy0 = t->crop_y > y0 ? t->crop_y : y0;
    int ix1 = t->crop_x + t->crop_w < x1 ? t->crop_x + t->crop_w : x1;
    int iy1 = t->crop_y + t->crop_h < y1 ? t->crop_y + t->crop_h : y1;
    return ix1 > ix0 && iy1 > iy0
               ? (double)(ix1 - ix0) * (iy1 - iy0) / ((double)(x1 - x0) * (y1 - y0))
               : 0;
}

static void test_constraints(runner *ru, const uint8_t *px)
{
    /* A box in the upper right quarter: 150x93 pixels of the 500x375 image. */
    const float box[4] = {0.05f, 0.6f, 0.3f, 0.9f};
    int rx0 = (int)(0.6f * W0), ry0 = (int)(0.05f * H0), rx1 = (int)(0.9f * W0),
        ry1 = (int)(0.3f * H0);
    prep_input in = raw_input(px, box, 1), none = raw_input(px, NULL, 0);
    float *o = malloc(sizeof(float) * 64 * 64 * 3);
    slim_error err = {0};
    int n = 300, ok = 0, fallback = 0, differ = 0, errors = 0;
    double min_cov = 1;
    for (int i = 0; i < n; i++) {
        prep_trace t, t0;
        if (slim__prep_run(&ru->p, ru->s, &in, 7, 0, i, o, &t, &err) ||
            slim__prep_run(&ru->p, ru->s, &none, 7, 0, i, o, &t0, &err)) {
            errors++;
            continue;
        }
        differ += t.crop_x != t0.crop_x || t.crop_y != t0.crop_y || t.crop_w != t0.crop_w ||
                  t.crop_h != t0.crop_h;
        if (t.bbox_fallback) {
            fallback += t.crop_x == 0 && t.crop_y == 0 && t.crop_w == W0 && t.crop_h == H0;
            continue;
        }
        double cov = coverage(&t, rx0, ry0, rx1, ry1);
        double area = (double)t.crop_w * t.crop_h / ((double)W0 * H0);
        double aspect = (double)t.crop_w / t.crop_h;
        min_cov = cov < min_cov ? cov : min_cov;
        ok += cov >= 0.1 && area >= 0.05 - 1e-9 && area <= 1 && aspect > 0.74 && aspect < 1.34 &&
              t.crop_x >= 0 && t.crop_y >= 0 && t.crop_x + t.crop_w <= W0 &&
              t.crop_y + t.crop_h <= H0 && t.n_boxes == 1;
    }
    tap_ok(errors == 0, "300 runs with a box: no errors (%s)", errors ? err.msg : "");
    tap_ok(ok + fallback == n && ok > 250,
           "every sampled crop covers >= 0.1 of the box (least %.3f), area in [0.05, 1], aspect "
           "in [0.75, 1.33], inside the image (%d sampled, %d whole-image fallbacks)",
           min_cov, ok, fallback);
    tap_ok(differ > 60, "the box changes the crops (%d of %d differ from the no-box crops)", differ,
           n);
    free(o);
}

static void test_known(runner *ru, const uint8_t *px)
{
    char got[512];
    prep_input none = raw_input(px, NULL, 0);
    crops(ru, &none, 42, 4, got, sizeof got);
    tap_streq(got, GOLDEN_NO_BOX, "no boxes: the crops pinned before boxes existed (seed 42)");
    const float whole[4] = {0, 0, 1, 1};
    prep_input w = raw_input(px, whole, 1);
    crops(ru, &w, 42, 4, got, sizeof got);
    tap_streq(got, GOLDEN_NO_BOX, "the box [0, 0, 1, 1] gives the same crops (TF-Slim's default)");
    /* Unusable boxes only (NaN, inverted, outside): as without boxes. */
    const float bad[12] = {NAN, 0, 1, 1, 0.7f, 0.7f, 0.2f, 0.9f, 1.1f, 1.2f, 1.3f, 1.4f};
    prep_input b = raw_input(px, bad, 3);
    crops(ru, &b, 42, 4, got, sizeof got);
    tap_streq(got, GOLDEN_NO_BOX, "only unusable boxes: as without boxes");
    /* A known crop for a known seed: a small box in the lower left (x 25-75, y 262-318). */
    const float box[8] = {0.7f, 0.05f, 0.85f, 0.15f, 0.7f, 0.05f, 0.85f, 0.15f};
    prep_input k = raw_input(px, box, 1);
    crops(ru, &k, 42, 4, got, sizeof got);
    tap_streq(got, "51,0,426,374,0 7,55,277,296,0 65,62,353,297,1 42,68,229,292,1",
              "a box at (0.05, 0.7)-(0.15, 0.85): pinned crops for seed 42");
    /* The same box twice: the same crops (any box covered suffices). */
    prep_input k2 = raw_input(px, box, 2);
    char got2[512];
    crops(ru, &k2, 42, 4, got2, sizeof got2);
    tap_streq(got2, got, "a duplicated box gives the same crops");
}

static void test_fallback(const uint8_t *px)
{
    /* min_object_covered 1 of a box the crop can never contain whole (area <= 0.5
     * of the image, the box is 0.9 of it): every attempt fails -> the whole image. */
    const char *yaml = "name: t\n"
                       "train:\n"
                       "  - decode\n"
                       "  - distorted_bounding_box_crop: {min_object_covered: 1.0,\n"
                       "      area_range: [0.05, 0.5], max_attempts: 50}\n"
                       "  - resize\n";
    slim__recipe *r = NULL;
    slim__prep p;
    slim_error err = {0};
    slim_status st = slim__recipe_parse("t.yaml", yaml, &r, &err);
    if (!st)
        st = slim__prep_init(&p, r, true, 32, 32, 3, true, true, &err);
    tap_ok(!st && p.wants_boxes, "a recipe with the default bbox key reads boxes (%s)", err.msg);
    const float big[4] = {0.05f, 0.05f, 0.95f, 0.95f};
    prep_input in = raw_input(px, big, 1);
    slim__prep_scratch *s = slim__prep_scratch_new();
    float *o = malloc(sizeof(float) * 32 * 32 * 3);
    int whole = 0;
    for (int i = 0; i < 20 && !st; i++) {
        prep_trace t;
        st = slim__prep_run(&p, s, &in, 3, 0, i, o, &t, &err);
        whole += !st && t.bbox_fallback && t.crop_x == 0 && t.crop_y == 0 && t.crop_w == W0 &&
                 t.crop_h == H0;
    }
    tap_ok(whole == 20, "no attempt satisfies the constraints: the whole image (%d of 20)", whole);
    free(o);
    slim__prep_scratch_free(s);
    slim__recipe_free(r);
    /* keys: {bbox: none} */
    const char *nobox = "name: t\nkeys: {bbox: none}\ntrain:\n  - decode\n"
                        "  - distorted_bounding_box_crop\n  - resize\n";
    st = slim__recipe_parse("t.yaml", nobox, &r, &err);
    if (!st)
        st = slim__prep_init(&p, r, true, 32, 32, 3, true, true, &err);
    tap_ok(!st && !p.wants_boxes && !r->bbox_key, "keys: {bbox: none} reads no boxes");
    slim__recipe_free(r);
    st = slim__recipe_parse("t.yaml", "name: t\nkeys: {boxes: x}\ntrain: [decode]\n", &r, &err);
    tap_streq(err.msg, "t.yaml:2:8: unknown key 'boxes'; known: image, label, format, bbox",
              "an unknown key in keys: is an error");
}

/* ---- boxes from Examples ------------------------------------------------------------ */

static void test_example(void)
{
    slim_example *ex;
    slim_error err = {0};
    slim_example_new(&ex, &err);
    const float xmin[] = {0.1f, 0.5f}, ymin[] = {0.2f, 0.6f}, xmax[] = {0.3f, 0.7f},
                ymax[] = {0.4f, 0.8f};
    slim_example_set_floats(ex, "image/object/bbox/xmin", xmin, 2);
    slim_example_set_floats(ex, "image/object/bbox/ymin", ymin, 2);
    slim_example_set_floats(ex, "image/object/bbox/xmax", xmax, 2);
    slim_example_set_floats(ex, "image/object/bbox/ymax", ymax, 2);
    prep_boxes b;
    slim_status st = slim__bbox_from_example(ex, "image/object/bbox", &b, "rec", "f", &err);
    tap_ok(!st && b.n == 2 && b.stride == 1 && b.xmin[1] == 0.5f && b.ymin[0] == 0.2f &&
               b.xmax[1] == 0.7f && b.ymax[0] == 0.4f,
           "the four image/object/bbox/* lists: 2 boxes");
    st = slim__bbox_from_example(ex, NULL, &b, "rec", "f", &err);
    tap_ok(!st && b.n == 0, "no key: no boxes");
    st = slim__bbox_from_example(ex, "objects/bbox", &b, "rec", "f", &err);
    tap_ok(!st && b.n == 0, "absent keys: no boxes");
    /* TFDS: one list of (ymin, xmin, ymax, xmax) per box. */
    const float tfds[8] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f};
    slim_example_set_floats(ex, "objects/bbox", tfds, 8);
    st = slim__bbox_from_example(ex, "objects/bbox", &b, "rec", "f", &err);
    tap_ok(!st && b.n == 2 && b.stride == 4 && b.ymin[4] == 0.5f && b.xmin[4] == 0.6f &&
               b.ymax[0] == 0.3f && b.xmax[0] == 0.4f,
           "one list of 4 floats per box (TFDS)");
    slim_example_set_floats(ex, "objects/bbox", tfds, 7);
    st = slim__bbox_from_example(ex, "objects/bbox", &b, "rec 3", "f", &err);
    tap_ok(st == SLIM_ECORRUPT, "7 floats is an error");
    tap_streq(err.msg,
              "rec 3: 'objects/bbox' holds 7 floats, not 4 per box (ymin, xmin, ymax, xmax)",
              "its message");
    slim_example_set_floats(ex, "image/object/bbox/ymax", ymax, 1);
    st = slim__bbox_from_example(ex, "image/object/bbox", &b, "rec 4", "f", &err);
    tap_streq(err.msg,
              "rec 4: the bounding box lists image/object/bbox/{ymin,xmin,ymax,xmax} differ in "
              "length (2, 2, 1, 2; a missing key counts 0)",
              "lists of different lengths are an error");
    const int64_t iv[2] = {1, 2};
    slim_example_set_int64s(ex, "image/object/bbox/ymax", iv, 2);
    st = slim__bbox_from_example(ex, "image/object/bbox", &b, "rec 5", "f", &err);
    tap_streq(err.msg,
              "rec 5: 'image/object/bbox/ymax' is not a float list (normalized box "
              "coordinates)",
              "an int64 list is an error");
    /* Empty lists (build_imagenet_data.py writes them for images without boxes). */
    slim_example_set_floats(ex, "image/object/bbox/xmin", NULL, 0);
    slim_example_set_floats(ex, "image/object/bbox/ymin", NULL, 0);
    slim_example_set_floats(ex, "image/object/bbox/xmax", NULL, 0);
    slim_example_set_floats(ex, "image/object/bbox/ymax", NULL, 0);
    st = slim__bbox_from_example(ex, "image/object/bbox", &b, "rec 6", "f", &err);
    tap_ok(!st && b.n == 0, "empty lists: no boxes");
    /* A round trip through the wire format keeps them. */
    slim_example_set_floats(ex, "image/object/bbox/xmin", xmin, 2);
    slim_example_set_floats(ex, "image/object/bbox/ymin", ymin, 2);
    slim_example_set_floats(ex, "image/object/bbox/xmax", xmax, 2);
    slim_example_set_floats(ex, "image/object/bbox/ymax", ymax, 2);
    uint8_t *buf;
    size_t len;
    slim_example_serialize(ex, &buf, &len, &err);
    slim_example *ex2;
    slim_example_parse(buf, len, &ex2, &err);
    st = slim__bbox_from_example(ex2, "image/object/bbox", &b, "rec", "f", &err);
    tap_ok(!st && b.n == 2 && b.xmax[1] == 0.7f, "boxes survive serialization");
    free(buf);
    slim_example_free(ex2);
    slim_example_free(ex);
}

/* ---- the pipeline -------------------------------------------------------------------- */

#define NREC 6

/* One shard of NREC records of an encoded image; record k has box k (record 0
 * none, record 5 an empty list set). */
static const char *write_shard(const uint8_t *img, size_t len, float boxes[NREC][4])
{
    static char path[600];
    snprintf(path, sizeof path, "%s/bbox-train-00000-of-00001", tap_tmpdir());
    slim_tfrecord_writer *w;
    slim_error err = {0};
    slim_tfrecord_writer_new(path, SLIM_COMPRESSION_NONE, &w, &err);
    for (int k = 0; k < NREC; k++) {
        slim_example *ex;
        slim_example_new(&ex, &err);
        slim_example_set_bytes(ex, "image/encoded", img, len);
        int64_t lab = k % 3;
        slim_example_set_int64s(ex, "image/class/label", &lab, 1);
        int n = k == 0 ? -1 : k == 5 ? 0 : 1;
        if (n >= 0) {
            slim_example_set_floats(ex, "image/object/bbox/xmin", &boxes[k][1], (size_t)n);
            slim_example_set_floats(ex, "image/object/bbox/ymin", &boxes[k][0], (size_t)n);
            slim_example_set_floats(ex, "image/object/bbox/xmax", &boxes[k][3], (size_t)n);
            slim_example_set_floats(ex, "image/object/bbox/ymax", &boxes[k][2], (size_t)n);
        }
        uint8_t *buf;
        size_t bl;
        slim_example_serialize(ex, &buf, &bl, &err);
        slim_tfrecord_write(w, buf, bl, &err);
        free(buf);
        slim_example_free(ex);
    }
    slim_tfrecord_writer_close(w, &err);
    return path;
}

static float *pipeline_batch(const char *shard, const char *recipe, int size, int64_t *boxed)
{
    slim_pipeline_opts o = {.file_pattern = shard,
                            .recipe = recipe,
                            .is_training = true,
                            .batch_size = NREC,
                            .image_size = size,
                            .num_threads = 2,
                            .num_readers = 1,
                            .shuffle_buffer = -1,
                            .no_dct_scaling = true,
                            .num_epochs = 1,
                            .seed = 42};
    slim_pipeline *p;
    slim_error err = {0};
    if (slim_pipeline_new(&o, &p, &err)) {
        tap_ok(false, "pipeline: %s", err.msg);
        return NULL;
    }
    float *x = malloc(sizeof(float) * NREC * size * size * 3);
    int32_t y[NREC];
    slim_batch_info bi;
    slim_status st = slim_pipeline_next(p, x, y, &bi, &err);
    slim_pipeline_stats ps;
    slim_pipeline_get_stats(p, &ps);
    *boxed = ps.boxed_examples;
    slim_pipeline_free(p);
    if (st || bi.end_of_data || bi.index != 0) {
        tap_ok(false, "pipeline batch: %s", err.msg);
        free(x);
        return NULL;
    }
    return x;
}

static void test_pipeline(const uint8_t *img, size_t len, const char *what, bool jpeg)
{
    float boxes[NREC][4] = {{0},
                            {0.45f, 0.02f, 0.5f, 0.06f},
                            {0.8f, 0.85f, 0.86f, 0.9f},
                            {-0.1f, 0.95f, 0.04f, 1.3f}, /* clipped */
                            {0.4f, 0.4f, 0.4f, 0.6f},    /* degenerate: as without boxes */
                            {0}};
    const char *shard = write_shard(img, len, boxes);
    const int S = 48;
    int64_t boxed = 0, boxed_none = 0;
    float *x = pipeline_batch(shard, "inception", S, &boxed);
    char nobox[600];
    snprintf(nobox, sizeof nobox, "%s/nobox.yaml", tap_tmpdir());
    FILE *f = fopen(nobox, "w");
    fputs("name: nobox\nkeys: {bbox: none}\ntrain:\n  - decode: {channels: 3}\n"
          "  - convert_to_float\n  - distorted_bounding_box_crop: {min_object_covered: 0.1,\n"
          "      aspect_ratio_range: [0.75, 1.33], area_range: [0.05, 1.0], max_attempts: 100}\n"
          "  - resize: {method: bilinear}\n  - random_flip_left_right\n"
          "  - distort_color: {fast_mode: true}\n  - normalize: {subtract: 0.5, multiply: 2.0}\n",
          f);
    fclose(f);
    float *xn = pipeline_batch(shard, nobox, S, &boxed_none);
    if (!x || !xn) {
        free(x);
        free(xn);
        return;
    }
    /* Each slot equals the executor run on that record's boxes (ROI and whole decode). */
    runner ru, full;
    runner_init(&ru, "inception", S, true);
    runner_init(&full, "inception", S, false);
    float *o = malloc(sizeof(float) * S * S * 3), *o2 = malloc(sizeof(float) * S * S * 3);
    size_t per = (size_t)S * S * 3;
    int same = 0, same_none = 0, differ = 0, misses = 0, rois = 0;
    double worst = 0;
    slim_error err = {0};
    for (int k = 0; k < NREC; k++) {
        prep_input in = {.data = img, .len = len, .name = what};
        if (k >= 1 && k <= 4)
            in.boxes = (prep_boxes){&boxes[k][0], &boxes[k][1], &boxes[k][2], &boxes[k][3], 4, 1};
        prep_input plain = {.data = img, .len = len, .name = what};
        prep_trace t, t2;
        slim__prep_run(&ru.p, ru.s, &in, 42, 0, k, o, &t, &err);
        slim__prep_run(&full.p, full.s, &in, 42, 0, k, o2, &t2, &err);
        same += !memcmp(o, x + per * k, per * sizeof(float));
        rois += t.roi;
        for (size_t i = 0; i < per; i++)
            worst = fmax(worst, fabs(o[i] - o2[i]));
        slim__prep_run(&ru.p, ru.s, &plain, 42, 0, k, o, &t, &err);
        same_none += !memcmp(o, xn + per * k, per * sizeof(float));
        differ += memcmp(xn + per * k, x + per * k, per * sizeof(float)) != 0;
        /* Where the no-box crop misses the box, the boxed crop must differ. */
        if (k >= 1 && k <= 3) {
            int r[4];
            slim__bbox_pixels(&in.boxes, t.src_w, t.src_h, r);
            misses += coverage(&t, r[0], r[1], r[2], r[3]) < 0.1;
        }
    }
    tap_ok(same == NREC, "%s: every pipeline slot equals the executor on its record's boxes (%d)",
           what, same);
    tap_ok(boxed == 3 && boxed_none == 0,
           "%s: stats count the examples with usable boxes (%lld; with bbox: none %lld)", what,
           (long long)boxed, (long long)boxed_none);
    tap_ok(same_none == NREC, "%s: keys: {bbox: none} gives the no-box crops", what);
    tap_ok(differ >= misses && misses > 0,
           "%s: records whose no-box crop misses their box get other crops (%d of 3 miss, %d "
           "differ)",
           what, misses, differ);
    if (jpeg) {
        tap_ok(rois > 0, "%s: box crops are decoded by ROI (%d of %d)", what, rois, NREC);
        tap_ok(worst < 2e-5, "%s: ROI decode equals whole decode on box crops (max |diff| %.2g)",
               what, worst);
    }
    free(o);
    free(o2);
    free(x);
    free(xn);
    runner_fini(&ru);
    runner_fini(&full);
}

int main(void)
{
    test_pixels();
    test_example();
    uint8_t *px = raw_image();
    runner ru;
    if (runner_init(&ru, "inception", 64, true)) {
        test_constraints(&ru, px);
        test_known(&ru, px);
        runner_fini(&ru);
    }
    test_fallback(px);
    /* The pipeline on a PNG record (no shared data needed). */
    slim_image im = {.height = 120, .width = 160, .channels = 3, .data = malloc(160 * 120 * 3)};
    for (int i = 0; i < 160 * 120 * 3; i++)
        im.data[i] = (uint8_t)(i * 7 + i / 480);
    uint8_t *png;
    size_t plen;
    slim_error err = {0};
    if (slim_image_encode_png(&im, &png, &plen, &err) == SLIM_OK) {
        test_pipeline(png, plen, "png record", false);
        free(png);
    }
    slim_image_fini(&im);
    free(px);
    if (tap_shared_data()) {
        size_t len;
        uint8_t *jpg = tap_read_file(tap_data_path("photos/pets_examples_0001.jpg"), &len);
        if (jpg)
            test_pipeline(jpg, len, "jpeg record", true);
        free(jpg);
    } else {
        tap_diag("../shared/data is absent: the JPEG pipeline checks are skipped");
    }
    return tap_done();
}
