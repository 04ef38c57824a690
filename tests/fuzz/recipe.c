/*
 * tests/fuzz/recipe.c - any bytes as a preprocessing recipe (the YAML of
 * models/pipelines/), compiled for training and evaluation and run on small
 * images: a JPEG, its restart-indexed transcode, gray and RGB PNGs, raw u8
 * and f32 pixels, with and without bounding boxes.
 *
 * data[0] is the options, the rest the recipe:
 *   bits 0-2  the image (JPEG, indexed JPEG, gray PNG, RGB PNG, raw u8, raw
 *             f32, gray JPEG, 1x1 PNG)
 *   bits 3-4  channels: the recipe's, 1, 3, the recipe's
 *   bit 5     ROI and DCT-scaled decoding off    bit 6  boxes
 *   bit 7     the output size from the recipe (else small, from the input)
 * Properties: a recipe that fails to load or compile says why (with its
 * file name); a run is a pure function of (seed, epoch, index): run twice,
 * and with a fresh scratch, the output is the same bit for bit.
 */
#include "datasets/image.h"
#include "datasets/jpeg_index.h"
#include "datasets/prep.h"
#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

typedef struct image {
    uint8_t *data;
    size_t len;
    bool raw, f32;
    int h, w, c;
} image;

static image images[8];
static slim__prep_scratch *scratch, *scratch2;

/* A smooth w x h picture with noise, as JPEG (comps 1 or 3). */
static uint8_t *make_jpeg(int w, int h, int comps, size_t *len)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    unsigned char *buf = NULL;
    unsigned long n = 0;
    jpeg_mem_dest(&c, &buf, &n);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = comps;
    c.in_color_space = comps == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 80, TRUE);
    jpeg_start_compress(&c, TRUE);
    uint8_t *row = malloc((size_t)w * comps);
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w * comps; x++)
            row[x] = (uint8_t)(x * 5 + y * 3 + ((x * y) & 15));
        JSAMPROW r = row;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(row);
    *len = n;
    return buf;
}

static uint8_t *make_png(int w, int h, int c, size_t *len)
{
    slim_image img = {.height = h, .width = w, .channels = c, .data = malloc((size_t)w * h * c)};
    for (int i = 0; i < w * h * c; i++)
        img.data[i] = (uint8_t)(i * 7);
    uint8_t *out;
    if (slim_image_encode_png(&img, &out, len, NULL))
        abort();
    free(img.data);
    return out;
}

static void init(void)
{
    images[0].data = make_jpeg(45, 31, 3, &images[0].len);
    slim__jpeg_add_restarts(images[0].data, images[0].len, "seed", &images[1].data, &images[1].len,
                            NULL);
    if (!images[1].data)
        abort();
    images[2].data = make_png(20, 13, 1, &images[2].len);
    images[3].data = make_png(9, 17, 3, &images[3].len);
    images[4] = (image){.raw = true, .h = 5, .w = 7, .c = 3};
    images[4].len = 5 * 7 * 3;
    images[4].data = malloc(images[4].len);
    for (size_t i = 0; i < images[4].len; i++)
        images[4].data[i] = (uint8_t)(i * 11);
    images[5] = (image){.raw = true, .f32 = true, .h = 4, .w = 6, .c = 1};
    images[5].len = 4 * 6 * sizeof(float);
    images[5].data = malloc(images[5].len);
    for (int i = 0; i < 24; i++)
        ((float *)images[5].data)[i] = (float)i * 10.5f;
    images[6].data = make_jpeg(64, 48, 1, &images[6].len);
    images[7].data = make_png(1, 1, 3, &images[7].len);
    scratch = slim__prep_scratch_new();
    scratch2 = slim__prep_scratch_new();
}

static void run(const slim__prep *p, const image *im, const prep_boxes *b, uint64_t seed,
                const char *path)
{
    prep_input in = {.data = im->data,
                     .len = im->len,
                     .raw = im->raw,
                     .raw_f32 = im->f32,
                     .raw_h = im->h,
                     .raw_w = im->w,
                     .raw_c = im->c,
                     .name = "img: record 3",
                     .boxes = *b};
    size_t n = (size_t)p->out_h * p->out_w * p->channels;
    float *o1 = malloc(n * sizeof *o1), *o2 = malloc(n * sizeof *o2);
    slim_error err = {0};
    prep_trace tr;
    slim_status st = slim__prep_run(p, scratch, &in, seed, 2, 5, o1, &tr, &err);
    if (st) {
        FUZZ_CHECK(err.msg[0], "a failed run says why (%s)", path);
    } else {
        FUZZ_CHECK(slim__prep_run(p, scratch, &in, seed, 2, 5, o2, NULL, &err) == SLIM_OK,
                   "the same example runs again: %s", err.msg);
        FUZZ_CHECK(!memcmp(o1, o2, n * sizeof *o1), "the same example, the same output");
        FUZZ_CHECK(slim__prep_run(p, scratch2, &in, seed, 2, 5, o2, NULL, &err) == SLIM_OK,
                   "a fresh scratch runs it: %s", err.msg);
        FUZZ_CHECK(!memcmp(o1, o2, n * sizeof *o1), "a fresh scratch, the same output");
    }
    free(o1);
    free(o2);
}

static int one(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!scratch)
        init();
    uint8_t opt = data[0];
    char *text = malloc(size);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    slim__recipe *r;
    slim_error err = {0};
    slim_status st = slim__recipe_parse("fuzz.yaml", text, &r, &err);
    free(text);
    if (st) {
        FUZZ_CHECK(strstr(err.msg, "fuzz.yaml"), "recipe errors name the file: %s", err.msg);
        return 0;
    }
    fuzz_rng rng = fuzz_rng_from(data, size);
    static const int chans[4] = {0, 1, 3, 0};
    int channels = chans[(opt >> 3) & 3];
    bool fast = (opt >> 5) & 1;
    int side = (opt & 0x80) && r->image_size <= 256 ? 0 : 1 + fuzz_below(&rng, 40);
    int side_w = side ? 1 + fuzz_below(&rng, 40) : 0;
    const image *im = &images[opt & 7];
    static const float boxes[] = {0.1f, 0.2f, 0.7f, 0.9f, 0.0f, 0.0f,
                                  1.0f, 1.0f, 0.5f, 0.5f, 0.5f, 0.6f};
    prep_boxes b = {0};
    if ((opt >> 6) & 1)
        b = (prep_boxes){boxes, boxes + 1, boxes + 2, boxes + 3, 4, 3};
    for (int training = 0; training < 2; training++) {
        slim__prep p;
        if (slim__prep_init(&p, r, training, side, side_w, channels, !fast, !fast, &err)) {
            FUZZ_CHECK(strstr(err.msg, "fuzz.yaml"), "compile errors name the file: %s", err.msg);
            continue;
        }
        FUZZ_CHECK(p.out_h > 0 && p.out_w > 0 && (p.channels == 1 || p.channels == 3),
                   "output %dx%dx%d", p.out_h, p.out_w, p.channels);
        run(&p, im, &b, fuzz_next(&rng), "fuzz.yaml");
    }
    slim__recipe_free(r);
    return 0;
}

/* ---- seeds ------------------------------------------------------------------------ */

static const char every_step[] =
    "name: every\nimage_size: 24\nchannels: 3\n"
    "keys: {image: image/encoded, label: image/class/label, bbox: image/object/bbox}\n"
    "train:\n"
    "  - decode: {channels: 3, exif_orientation: true, dct_method: INTEGER_FAST, "
    "fancy_upscaling: false}\n"
    "  - convert_to_float\n"
    "  - distorted_bounding_box_crop: {min_object_covered: 0.1, aspect_ratio_range: [0.75, "
    "1.33], area_range: [0.05, 1.0], max_attempts: 100}\n"
    "  - central_crop: {fraction: 0.875}\n"
    "  - random_crop: {height: 20, width: 20}\n"
    "  - pad: {padding: 2}\n"
    "  - resize: {method: bilinear, half_pixel_centers: true}\n"
    "  - random_flip_left_right: {probability: 0.5}\n"
    "  - random_brightness: {max_delta: 0.125}\n"
    "  - random_saturation: {lower: 0.5, upper: 1.5}\n"
    "  - random_hue: {max_delta: 0.2}\n"
    "  - random_contrast: {lower: 0.5, upper: 1.5}\n"
    "  - distort_color: {fast_mode: true, color_ordering: -1}\n"
    "  - clip: {min: 0.0, max: 1.0}\n"
    "  - normalize: {subtract: 0.5, multiply: 2.0}\n"
    "eval:\n"
    "  - decode\n"
    "  - to_float\n"
    "  - aspect_preserving_resize: {side: 28}\n"
    "  - central_crop_to: {height: 24, width: 24}\n"
    "  - resize_with_crop_or_pad: {height: 26, width: 22}\n"
    "  - subtract_mean: {mean: [123.68, 116.78, 103.94]}\n"
    "  - per_image_standardization\n";

static void shared_recipe(fuzz_seeds *s, const char *path)
{
    size_t n;
    uint8_t *b = fuzz_read_file(path, &n);
    if (!b)
        return;
    for (int opt = 0; opt < 256; opt += 29)
        fuzz_seed_opt(s, (uint8_t)opt, b, n);
    free(b);
}

static void seeds(fuzz_seeds *s)
{
    static const char *const names[] = {"inception", "vgg", "cifarnet", "lenet"};
    for (int i = 0; i < 4; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/models/pipelines/%s.yaml", fuzz_srcdir(), names[i]);
        shared_recipe(s, path);
    }
    for (int opt = 0; opt < 256; opt += 13)
        fuzz_seed_opt(s, (uint8_t)opt, every_step, sizeof every_step - 1);
}

FUZZ_TARGET(recipe, .one = one, .seeds = seeds, .max_len = 4096)
