/*
 * tests/fuzz/example.c - any bytes as a serialized tf.train.Example: parsing,
 * the typed lookups, editing, serializing, and the bounding boxes the
 * distorted crop reads from it.
 *
 * Properties: a parsed Example re-serializes and parses again to the same
 * keys and values; after replacing a key and adding one, both read back
 * (and survive another round trip); the boxes' pixel rectangles lie inside
 * the image and are not empty; a sampled crop lies inside the image.
 */
#include "datasets/prep.h"
#include "tests/fuzz/fuzz.h"

#include <stdlib.h>
#include <string.h>

static void check_boxes(const slim_example *ex, const char *key, fuzz_rng *rng)
{
    prep_boxes b;
    slim_error err = {0};
    if (slim__bbox_from_example(ex, key, &b, "fuzz: record 0", "fuzz.tfrecord", &err)) {
        FUZZ_CHECK(strstr(err.msg, "fuzz: record 0"), "box errors name the record: %s", err.msg);
        return;
    }
    if (!b.n)
        return;
    int W = 1 + fuzz_below(rng, 4000), H = 1 + fuzz_below(rng, 4000);
    int *rects = malloc((size_t)b.n * 4 * sizeof *rects);
    int m = slim__bbox_pixels(&b, W, H, rects);
    FUZZ_CHECK(m >= 0 && m <= b.n, "%d usable boxes of %d", m, b.n);
    for (int i = 0; i < m; i++) {
        const int *r = rects + 4 * i;
        FUZZ_CHECK(r[0] >= 0 && r[1] >= 0 && r[0] < r[2] && r[1] < r[3] && r[2] <= W && r[3] <= H,
                   "box %d (%d,%d)-(%d,%d) inside %dx%d", i, r[0], r[1], r[2], r[3], W, H);
    }
    static const double aspects[][2] = {{0.75, 1.33}, {0.5, 2.0}, {1.0, 1.0}, {0.01, 100.0}};
    static const double areas[][2] = {{0.05, 1.0}, {0.5, 1.0}, {1e-4, 1e-3}, {1.0, 1.0}};
    prep_step s = {.op = PREP_DISTORTED_BBOX_CROP};
    int k = fuzz_below(rng, 4);
    memcpy(s.aspect, aspects[k], sizeof s.aspect);
    memcpy(s.area, areas[fuzz_below(rng, 4)], sizeof s.area);
    s.min_covered = fuzz_below(rng, 11) / 10.0;
    s.max_attempts = 1 + fuzz_below(rng, 100);
    int x, y, w, h;
    slim__bbox_sample(&s, W, H, rects, m, fuzz_next(rng), 7, 0, &x, &y, &w, &h);
    FUZZ_CHECK(x >= 0 && y >= 0 && w > 0 && h > 0 && x + w <= W && y + h <= H,
               "crop %d,%d %dx%d inside %dx%d", x, y, w, h, W, H);
    free(rects);
}

static int one(const uint8_t *data, size_t size)
{
    fuzz_check_example(data, size);
    slim_example *ex;
    slim_error err = {0};
    if (slim_example_parse(data, size, &ex, &err))
        return 0;
    fuzz_rng rng = fuzz_rng_from(data, size);
    check_boxes(ex, "image/object/bbox", &rng);
    check_boxes(ex, "bbox", &rng);
    int n = slim_example_count(ex);
    for (int i = 0; i < n; i++) {
        slim_feature_kind kind;
        size_t nv;
        const char *key = slim_example_key(ex, i, &kind, &nv);
        FUZZ_CHECK(key, "key %d of %d", i, n);
        const uint8_t *b;
        size_t len;
        slim_example_bytes(ex, key, nv, &b, &len); /* one past the end: not found */
    }
    /* Edit: replace an existing key (the first), add a new one. */
    const int64_t vals[] = {-1, 0, INT64_MAX};
    const char *first = n ? slim_example_key(ex, 0, NULL, NULL) : "first";
    char *k0 = strdup(first);
    FUZZ_CHECK(slim_example_set_int64s(ex, k0, vals, 3) == SLIM_OK, "set %s", k0);
    FUZZ_CHECK(slim_example_set_bytes(ex, "fuzz/new", data, size > 64 ? 64 : size) == SLIM_OK,
               "set a new key");
    const int64_t *got;
    size_t gn;
    FUZZ_CHECK(slim_example_int64s(ex, k0, &got, &gn) == SLIM_OK && gn == 3 && got[2] == INT64_MAX,
               "the replaced key reads back");
    uint8_t *buf;
    size_t len;
    FUZZ_CHECK(slim_example_serialize(ex, &buf, &len, &err) == SLIM_OK, "%s", err.msg);
    slim_example *again;
    FUZZ_CHECK(slim_example_parse(buf, len, &again, &err) == SLIM_OK, "%s", err.msg);
    FUZZ_CHECK(fuzz_same_example(ex, again), "the edited Example survives a round trip");
    slim_example_free(again);
    free(buf);
    free(k0);
    slim_example_free(ex);
    return 0;
}

/* ---- seeds ------------------------------------------------------------------------ */

/* Each record of the shared TFRecord files (up to 4 per file, 8 KB each). */
static void shared_examples(fuzz_seeds *s, const uint8_t *d, size_t n, const char *name)
{
    (void)name;
    size_t p = 0;
    for (int k = 0; k < 4 && p + 16 <= n; k++) {
        uint64_t len = 0;
        for (int i = 7; i >= 0; i--)
            len = len << 8 | d[p + i];
        if (len > n - p - 16)
            break;
        if (len <= 8192)
            fuzz_seed(s, d + p + 12, (size_t)len);
        p += 16 + (size_t)len;
    }
}

static void seeds(fuzz_seeds *s)
{
    fuzz_each_shared("tfrecord", 1 << 30, shared_examples, s);
    slim_example *ex;
    slim_example_new(&ex, NULL);
    const float four[] = {0.1f, 0.2f, 0.6f, 0.9f, 0.0f, 0.0f, 1.0f, 1.0f};
    slim_example_set_floats(ex, "image/object/bbox/ymin", four, 2);
    slim_example_set_floats(ex, "image/object/bbox/xmin", four + 1, 2);
    slim_example_set_floats(ex, "image/object/bbox/ymax", four + 2, 2);
    slim_example_set_floats(ex, "image/object/bbox/xmax", four + 3, 2);
    slim_example_set_bytes(ex, "image/encoded", "\xff\xd8\xff", 3);
    uint8_t *b;
    size_t n;
    slim_example_serialize(ex, &b, &n, NULL);
    fuzz_seed(s, b, n);
    free(b);
    slim_example_free(ex);
    slim_example_new(&ex, NULL);
    slim_example_set_floats(ex, "bbox", four, 8);
    slim_example_serialize(ex, &b, &n, NULL);
    fuzz_seed(s, b, n);
    free(b);
    slim_example_free(ex);
}

FUZZ_TARGET(example, .one = one, .seeds = seeds, .max_len = 8192, .dict = "tfrecord")
