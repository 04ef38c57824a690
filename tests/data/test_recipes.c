/* tests/data/test_recipes.c - the preprocessing recipes (models/pipelines/) and
 * their executor: every recipe loads; malformed recipes give exact
 * file:line:col errors; with fixed seeds the crop boxes are fixed and obey
 * TF's constraints; the lazily resampled output (ROI decode, folded affine
 * steps) equals a plain reference - whole decode, crop, TF1 resize_bilinear,
 * flip, color steps written out naively - within tolerance. */
#include "datasets/prep.h"
#include "tests/data/tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- a plain reference of the geometry and the pixel steps ---------------- */

typedef struct fimg {
    int h, w, c;
    float *d;
} fimg;

static fimg fimg_new(int h, int w, int c)
{
    fimg f = {h, w, c, calloc((size_t)h * w * c + 1, sizeof(float))};
    return f;
}

static float *px(const fimg *f, int y, int x)
{
    return f->d + ((size_t)y * f->w + x) * f->c;
}

/* Crop (x, y, w, h), zero outside the image (tf.pad + tf.slice). */
static fimg ref_crop(const fimg *in, int x0, int y0, int w, int h)
{
    fimg o = fimg_new(h, w, in->c);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int sy = y0 + y, sx = x0 + x;
            if (sy >= 0 && sy < in->h && sx >= 0 && sx < in->w)
                memcpy(px(&o, y, x), px(in, sy, sx), sizeof(float) * in->c);
        }
    return o;
}

/* TF resize_bilinear: interpolate along x on the two rows, then along y. */
static fimg ref_resize(const fimg *in, int oh, int ow, bool half)
{
    fimg o = fimg_new(oh, ow, in->c);
    double sy = (double)in->h / oh, sx = (double)in->w / ow;
    for (int y = 0; y < oh; y++) {
        double fy = half ? (y + 0.5) * sy - 0.5 : y * sy;
        int y0 = (int)floor(fy) < 0 ? 0 : (int)floor(fy);
        int y1 = (int)ceil(fy) > in->h - 1 ? in->h - 1 : (int)ceil(fy);
        double ly = fy - floor(fy);
        for (int x = 0; x < ow; x++) {
            double fx = half ? (x + 0.5) * sx - 0.5 : x * sx;
            int x0 = (int)floor(fx) < 0 ? 0 : (int)floor(fx);
            int x1 = (int)ceil(fx) > in->w - 1 ? in->w - 1 : (int)ceil(fx);
            double lx = fx - floor(fx);
            for (int c = 0; c < in->c; c++) {
                double tl = px(in, y0, x0)[c], tr = px(in, y0, x1)[c];
                double bl = px(in, y1, x0)[c], br = px(in, y1, x1)[c];
                double top = tl + (tr - tl) * lx, bot = bl + (br - bl) * lx;
                px(&o, y, x)[c] = (float)(top + (bot - top) * ly);
            }
        }
    }
    return o;
}

static void ref_flip(fimg *f)
{
    for (int y = 0; y < f->h; y++)
        for (int x = 0; x < f->w / 2; x++)
            for (int c = 0; c < f->c; c++) {
                float t = px(f, y, x)[c];
                px(f, y, x)[c] = px(f, y, f->w - 1 - x)[c];
                px(f, y, f->w - 1 - x)[c] = t;
            }
}

/* RGB <-> HSV as in TF's rgb_to_hsv / hsv_to_rgb (h in [0, 1)). */
static void rgb2hsv(const float *p, double *h, double *s, double *v)
{
    double r = p[0], g = p[1], b = p[2], mx = fmax(r, fmax(g, b)), mn = fmin(r, fmin(g, b));
    double range = mx - mn;
    *v = mx;
    *s = mx > 0 ? range / mx : 0;
    double hh = 0;
    if (range > 0) {
        if (mx == r)
            hh = (g - b) / range;
        else if (mx == g)
            hh = 2 + (b - r) / range;
        else
            hh = 4 + (r - g) / range;
        hh /= 6;
        if (hh < 0)
            hh += 1;
    }
    *h = hh;
}

static void hsv2rgb(double h, double s, double v, float *p)
{
    double c = s * v, m = v - c, dh = h * 6;
    double x = c * (1 - fabs(fmod(dh, 2) - 1));
    double r, g, b;
    int k = (int)floor(dh) % 6;
    switch (k) {
    case 0: r = c, g = x, b = 0; break;
    case 1: r = x, g = c, b = 0; break;
    case 2: r = 0, g = c, b = x; break;
    case 3: r = 0, g = x, b = c; break;
    case 4: r = x, g = 0, b = c; break;
    default: r = c, g = 0, b = x; break;
    }
    p[0] = (float)(r + m);
    p[1] = (float)(g + m);
    p[2] = (float)(b + m);
}

static void ref_saturation(fimg *f, double k)
{
    for (int i = 0; i < f->h * f->w; i++) {
        double h, s, v;
        rgb2hsv(f->d + 3 * i, &h, &s, &v);
        s = fmin(fmax(s * k, 0), 1);
        hsv2rgb(h, s, v, f->d + 3 * i);
    }
}

static void ref_map(fimg *f, double mul, double add)
{
    for (size_t i = 0; i < (size_t)f->h * f->w * f->c; i++)
        f->d[i] = (float)(f->d[i] * mul + add);
}

static double max_diff(const fimg *ref, const float *got)
{
    double m = 0;
    for (size_t i = 0; i < (size_t)ref->h * ref->w * ref->c; i++)
        m = fmax(m, fabs((double)ref->d[i] - got[i]));
    return m;
}

static fimg decode_ref(const uint8_t *d, size_t len, int c)
{
    slim_image img;
    slim_decode_opts o = {.channels = c};
    slim_error err = {0};
    fimg f = {0};
    if (slim_image_decode(d, len, &o, &img, &err))
        return f;
    f = fimg_new(img.height, img.width, c);
    for (size_t i = 0; i < (size_t)img.height * img.width * c; i++)
        f.d[i] = img.data[i];
    slim_image_fini(&img);
    return f;
}

/* The geometry of a trace, applied to a whole image. */
static fimg ref_geometry(const fimg *src, const prep_trace *t)
{
    fimg a = ref_crop(src, t->crop_x, t->crop_y, t->crop_w, t->crop_h);
    if (t->resize_w) {
        fimg b = ref_resize(&a, t->resize_h, t->resize_w, false);
        free(a.d);
        a = b;
    }
    fimg v = ref_crop(&a, t->view_x, t->view_y, t->view_w, t->view_h);
    free(a.d);
    if (t->flip)
        ref_flip(&v);
    return v;
}

/* ---- tests ----------------------------------------------------------------- */

static void test_load(void)
{
    struct {
        const char *name;
        int size, channels, n_train, n_eval;
    } want[] = {{"inception", 224, 3, 7, 5},
                {"vgg", 224, 3, 6, 5},
                {"cifarnet", 32, 3, 8, 4},
                {"lenet", 28, 1, 4, 4}};
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        slim__recipe *r;
        slim_error err = {0};
        slim_status st = slim__recipe_load(want[k].name, NULL, &r, &err);
        tap_ok(st == SLIM_OK && r->image_size == want[k].size && r->channels == want[k].channels &&
                   r->n_train == want[k].n_train && r->n_eval == want[k].n_eval,
               "recipe %s loads (size %d, %d channels, %d/%d steps)%s%s", want[k].name,
               want[k].size, want[k].channels, want[k].n_train, want[k].n_eval, st ? ": " : "",
               st ? err.msg : "");
        if (!st) {
            slim__prep p;
            tap_ok(slim__prep_init(&p, r, true, 0, 0, 0, true, true, &err) == SLIM_OK &&
                       slim__prep_init(&p, r, false, 0, 0, 0, true, true, &err) == SLIM_OK,
                   "recipe %s compiles (train and eval)", want[k].name);
            slim__recipe_free(r);
        }
    }
    slim__recipe *r;
    slim_error err = {0};
    slim_status st = slim__recipe_load("nosuch", NULL, &r, &err);
    tap_ok(st == SLIM_ENOTFOUND && strstr(err.msg, "no preprocessing recipe 'nosuch'"),
           "unknown recipe name: %s", err.msg);
}

static void test_bad(void)
{
    struct {
        const char *text, *want;
    } bad[] = {
        {"name: x\ntrain:\n  - decode\n  - rezise: {height: 3}\n",
         "bad.yaml:4:5: unknown step 'rezise'; known steps: decode, convert_to_float, to_float, "
         "central_crop, distorted_bounding_box_crop, random_crop, central_crop_to, resize, "
         "aspect_preserving_resize, resize_with_crop_or_pad, pad, random_flip_left_right, "
         "random_brightness, random_saturation, random_hue, random_contrast, distort_color, clip, "
         "normalize, subtract_mean, per_image_standardization, rgb_to_grayscale"},
        {"train:\n  - resize: {heigth: 3}\n",
         "bad.yaml:2:14: unknown parameter 'heigth' of step 'resize'; known: "
         "height,width,method,half_pixel_centers"},
        {"train:\n  - decode: {try_recover: true}\n",
         "bad.yaml:2:14: unknown parameter 'try_recover' of step 'decode'; known: "
         "channels,exif_orientation,dct_method,fancy_upscaling,try_recover_truncated"},
        {"train:\n  - distorted_bounding_box_crop: {aspect_ratio_range: [1.5, 0.5]}\n",
         "bad.yaml:2:55: expected a range [low, high] with low <= high"},
        {"image_size: big\ntrain: [decode]\n", "bad.yaml:1:13: expected an integer, got 'big'"},
        {"train:\n  - resize: {height: 3\n", NULL /* syntax error: position checked loosely */},
        {"trian:\n  - decode\n",
         "bad.yaml:1:1: unknown key 'trian'; known: name, description, image_size, channels, keys, "
         "image_shape, train, eval"},
        {"train:\n  - random_flip_left_right: {probability: 2}\n",
         "bad.yaml:2:43: probability must be in [0, 1]"},
        {"train:\n  - resize: [1, 2]\n",
         "bad.yaml:2:13: the parameters of a step are a map, e.g. {height: 224}"},
        {"name: x\n", "bad.yaml:1:1: a recipe needs a train or an eval section"},
        {"train:\n  - resize: {method: bicubic}\n",
         "bad.yaml:2:22: only method 'bilinear' is implemented (TF-Slim's fast_mode)"},
        {"train:\n  - decode: {dct_method: INTEGER_FASTEST}\n",
         "bad.yaml:2:26: dct_method must be INTEGER_ACCURATE or INTEGER_FAST"},
        {"train:\n  - decode: {fancy_upscaling: sometimes}\n",
         "bad.yaml:2:31: expected true or false, got 'sometimes'"},
        {"train:\n  - decode: {try_recover_truncated: maybe}\n",
         "bad.yaml:2:37: expected true or false, got 'maybe'"},
        /* duplicate keys (issue 26: the last won, the earlier values leaked) */
        {"name: a\nname: b\ntrain: [decode]\n",
         "bad.yaml:2:1: duplicate key 'name' (first written at 1:1), expected each key once per "
         "mapping"},
        {"keys: {image: a, label: b, image: c}\ntrain: [decode]\n",
         "bad.yaml:1:28: duplicate key 'image' (first written at 1:8), expected each key once per "
         "mapping"},
        {"train: [decode]\neval: [decode]\ntrain:\n  - decode\n",
         "bad.yaml:3:1: duplicate key 'train' (first written at 1:1), expected each key once per "
         "mapping"},
        {"eval: [decode]\neval: [decode]\n",
         "bad.yaml:2:1: duplicate key 'eval' (first written at 1:1), expected each key once per "
         "mapping"},
        {"train:\n  - resize: {height: 3, height: 4}\n",
         "bad.yaml:2:25: duplicate key 'height' (first written at 2:14), expected each key once "
         "per mapping"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        slim__recipe *r = NULL;
        slim_error err = {0};
        slim_status st = slim__recipe_parse("bad.yaml", bad[k].text, &r, &err);
        if (bad[k].want) {
            tap_streq(err.msg, bad[k].want, "malformed recipe: exact message with line:col");
        } else {
            tap_ok(st == SLIM_EPARSE && !strncmp(err.msg, "bad.yaml:", 9) &&
                       strstr(err.msg, "YAML syntax error"),
                   "YAML syntax error with position: %s", err.msg);
        }
        tap_ok(st != SLIM_OK && err.line > 0 && !strcmp(err.file, "bad.yaml"),
               "err.file/line set (%d:%d)", err.line, err.col);
        slim__recipe_free(r);
    }
    /* Ordering rule at compile time. */
    slim__recipe *r;
    slim_error err = {0};
    slim__recipe_parse("order.yaml",
                       "train:\n  - decode\n  - per_image_standardization\n  - random_crop: {}\n",
                       &r, &err);
    slim__prep p;
    slim_status st = slim__prep_init(&p, r, true, 8, 8, 3, true, true, &err);
    tap_streq(err.msg,
              "order.yaml:4:5: random_crop after a pixel step: put crops, pads, resizes and flips "
              "before color and normalization steps",
              "geometry after a pixel step is refused");
    (void)st;
    slim__recipe_free(r);
    /* The colour steps need RGB (issue 26: on one channel they overran the
     * image); per-channel values must match the channels. */
    struct {
        const char *text;
        int channels;
        const char *want;
    } gray[] = {
        {"channels: 1\ntrain:\n  - decode\n  - to_float\n  - random_saturation: {}\n", 0,
         "gray.yaml:5:5: random_saturation needs 3 channels (RGB), but the images here have 1 (the "
         "model's input or the recipe's channels); drop the step or use a 3-channel recipe and "
         "model"},
        {"train:\n  - decode\n  - random_hue: {max_delta: 0.1}\n", 1,
         "gray.yaml:3:5: random_hue needs 3 channels (RGB), but the images here have 1 (the "
         "model's input or the recipe's channels); drop the step or use a 3-channel recipe and "
         "model"},
        {"train:\n  - decode\n  - distort_color: {fast_mode: true}\n", 1,
         "gray.yaml:3:5: distort_color needs 3 channels (RGB), but the images here have 1 (the "
         "model's input or the recipe's channels); drop the step or use a 3-channel recipe and "
         "model"},
        {"train:\n  - decode\n  - subtract_mean: {mean: [1, 2, 3]}\n", 1,
         "gray.yaml:3:5: subtract_mean has 3 per-channel values, but the images here have 1 "
         "channels"},
    };
    for (size_t k = 0; k < sizeof gray / sizeof *gray; k++) {
        r = NULL;
        err = (slim_error){0};
        st = slim__recipe_parse("gray.yaml", gray[k].text, &r, &err);
        if (!st)
            st = slim__prep_init(&p, r, true, 8, 8, gray[k].channels, true, true, &err);
        tap_ok(st == SLIM_EINVAL, "a colour step on gray is refused (status %d)", (int)st);
        tap_streq(err.msg, gray[k].want, "  with the step's position and the channel count");
        slim__recipe_free(r);
    }
    /* The built-in inception recipe with a 1-channel model: refused, naming its step. */
    r = NULL;
    st = slim__recipe_load("inception", NULL, &r, &err);
    if (!st)
        st = slim__prep_init(&p, r, true, 28, 28, 1, true, true, &err);
    tap_ok(
        st == SLIM_EINVAL && strstr(err.msg, "inception.yaml:") &&
            strstr(err.msg, ": distort_color needs 3 channels (RGB), but the images here have 1"),
        "inception's recipe on a 1-channel model is refused: %s", err.msg);
    slim__recipe_free(r);
}

/* dataset.yaml: bad values are named at file:line:col (issue 26: a class
 * count of 3000000000 or -4 gave "the number of classes is unknown"), and
 * duplicate keys are errors as in recipes. */
static void test_dataset_yaml(void)
{
    struct {
        const char *text, *want;
    } bad[] = {
        {"name: x\nnum_classes: 3000000000\n",
         "dataset.yaml:2:14: num_classes must be from 1 to 2147483647, got 3000000000"},
        {"num_classes: -4\n",
         "dataset.yaml:1:14: num_classes must be from 1 to 2147483647, got -4"},
        {"labels_offset: -1\n",
         "dataset.yaml:1:16: labels_offset must be from 0 to 2147483647, got -1"},
        {"image_size: [28, 28.5, 1]\n",
         "dataset.yaml:1:13: image_size is [height, width, channels], whole numbers from 0 (any) "
         "to 65536"},
        {"num_classes: 3\nnum_classes: 4\n",
         "dataset.yaml:2:1: duplicate key 'num_classes' (first written at 1:1), expected each key "
         "once per mapping"},
        {"splits:\n  train: {pattern: 'a*', size: -3}\n",
         "dataset.yaml:2:32: size must be 0 or more, got -3"},
    };
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s/ds", tap_tmpdir());
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/dataset.yaml", dir);
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        tap_write_file(path, bad[k].text, strlen(bad[k].text));
        slim_dataset *d = NULL;
        slim_error err = {0};
        slim_status st = slim_dataset_open(NULL, dir, "train", &d, &err);
        const char *m = strstr(err.msg, "dataset.yaml:");
        tap_ok(st == SLIM_EPARSE && m, "bad dataset.yaml %zu refused (status %d)", k, (int)st);
        tap_streq(m ? m : err.msg, bad[k].want, "  at its line:col");
        slim_dataset_free(d);
    }
}

typedef struct runner {
    slim__recipe *r;
    slim__prep p;
    slim__prep_scratch *s;
} runner;

static bool runner_init(runner *ru, const char *name, bool training, int size, bool roi, bool dct)
{
    slim_error err = {0};
    memset(ru, 0, sizeof *ru);
    if (slim__recipe_load(name, NULL, &ru->r, &err))
        return false;
    if (slim__prep_init(&ru->p, ru->r, training, size, size, 0, roi, dct, &err))
        return false;
    ru->s = slim__prep_scratch_new();
    return true;
}

static void runner_fini(runner *ru)
{
    slim__prep_scratch_free(ru->s);
    slim__recipe_free(ru->r);
}

static void test_inception(const uint8_t *jpg, size_t len, const char *fname)
{
    runner ru, full;
    runner_init(&ru, "inception", true, 224, true, false);
    runner_init(&full, "inception", true, 224, false, false);
    fimg src = decode_ref(jpg, len, 3);
    float *out = malloc(sizeof(float) * 224 * 224 * 3),
          *out2 = malloc(sizeof(float) * 224 * 224 * 3);
    slim_error err = {0};
    double worst = 0, worst_full = 0;
    int ok_box = 0, n = 40, flips = 0, rois = 0;
    for (int i = 0; i < n; i++) {
        prep_trace t, t2;
        prep_input in = {.data = jpg, .len = len, .name = fname};
        if (slim__prep_run(&ru.p, ru.s, &in, 42, 0, i, out, &t, &err) ||
            slim__prep_run(&full.p, full.s, &in, 42, 0, i, out2, &t2, &err)) {
            tap_ok(false, "inception run: %s", err.msg);
            break;
        }
        /* TF's constraints: area >= min_object_covered (0.1) of the image, aspect in range. */
        double area = (double)t.crop_w * t.crop_h / ((double)src.w * src.h);
        double aspect = (double)t.crop_w / t.crop_h;
        bool whole = t.crop_w == src.w && t.crop_h == src.h;
        if (whole ||
            (area >= 0.1 - 1e-9 && area <= 1 && aspect > 0.74 && aspect < 1.34 && t.crop_x >= 0 &&
             t.crop_y >= 0 && t.crop_x + t.crop_w <= src.w && t.crop_y + t.crop_h <= src.h))
            ok_box++;
        flips += t.flip;
        rois += t.roi;
        /* Reference: [0,1], crop, resize, flip, brightness+saturation (ordering 0), clip, [-1,1].
         */
        fimg a = ref_geometry(&src, &t);
        ref_map(&a, 1 / 255.0, 0);
        ref_map(&a, 1, t.brightness);
        ref_saturation(&a, t.saturation);
        for (size_t k = 0; k < (size_t)a.h * a.w * 3; k++)
            a.d[k] = fminf(fmaxf(a.d[k], 0), 1);
        ref_map(&a, 2, -1);
        worst = fmax(worst, max_diff(&a, out));
        worst_full = fmax(worst_full, max_diff(&a, out2));
        free(a.d);
    }
    tap_ok(ok_box == n,
           "%s: %d/%d inception crop boxes obey area >= 0.1, aspect in [0.75, 1.33], "
           "inside the image",
           fname, ok_box, n);
    tap_ok(flips > 5 && flips < 35, "%s: flips drawn (%d of %d)", fname, flips, n);
    tap_ok(rois > 0, "%s: ROI decoding used (%d of %d)", fname, rois, n);
    tap_ok(worst < 2e-5, "%s: inception train (ROI decode) equals the reference (max |diff| %.2g)",
           fname, worst);
    tap_ok(worst_full < 2e-5,
           "%s: inception train (whole decode) equals the reference (max |diff| %.2g)", fname,
           worst_full);
    /* Same (seed, epoch, index) -> same bytes; another index -> another crop. */
    prep_trace t1, t2;
    prep_input in = {.data = jpg, .len = len, .name = fname};
    slim__prep_run(&ru.p, ru.s, &in, 42, 3, 17, out, &t1, &err);
    slim__prep_run(&ru.p, ru.s, &in, 42, 3, 17, out2, &t2, &err);
    tap_ok(!memcmp(out, out2, sizeof(float) * 224 * 224 * 3),
           "%s: same (seed, epoch, index) gives the same output", fname);
    slim__prep_run(&ru.p, ru.s, &in, 42, 4, 17, out2, &t2, &err);
    tap_ok(memcmp(out, out2, sizeof(float) * 224 * 224 * 3) != 0,
           "%s: another epoch gives another output", fname);
    free(out);
    free(out2);
    free(src.d);
    runner_fini(&ru);
    runner_fini(&full);
}

#define GOLDEN_BOXES "51,0,426,374,0 7,55,277,296,0 71,31,210,221,1 178,216,165,144,1"

/* Golden crop boxes for seed 42 on a 500x375 image: the random stream is part of
 * the checkpoint contract (a resumed run must draw the same crops). */
static void test_golden(const uint8_t *jpg, size_t len)
{
    runner ru;
    runner_init(&ru, "inception", true, 224, true, false);
    float *out = malloc(sizeof(float) * 224 * 224 * 3);
    slim_error err = {0};
    char got[512] = "";
    for (int i = 0; i < 4; i++) {
        prep_trace t;
        prep_input in = {.data = jpg, .len = len, .name = "golden"};
        slim__prep_run(&ru.p, ru.s, &in, 42, 0, i, out, &t, &err);
        char b[80];
        snprintf(b, sizeof b, "%s%d,%d,%d,%d,%d", i ? " " : "", t.crop_x, t.crop_y, t.crop_w,
                 t.crop_h, t.flip);
        strcat(got, b);
    }
    tap_streq(got, GOLDEN_BOXES, "inception crop boxes for seed 42, indices 0..3 (x,y,w,h,flip)");
    free(out);
    runner_fini(&ru);
}

static void test_inception_eval_and_dct(const uint8_t *jpg, size_t len, const char *fname)
{
    runner ru, dct;
    runner_init(&ru, "inception", false, 224, true, false);
    runner_init(&dct, "inception", false, 112, true, true);
    fimg src = decode_ref(jpg, len, 3);
    float *out = malloc(sizeof(float) * 224 * 224 * 3);
    slim_error err = {0};
    prep_trace t;
    prep_input in = {.data = jpg, .len = len, .name = fname};
    slim_status st = slim__prep_run(&ru.p, ru.s, &in, 1, 0, 0, out, &t, &err);
    /* central_crop(0.875): start = int((n - 0.875 n) / 2). */
    int xs = (int)((src.w - src.w * 0.875) / 2), ys = (int)((src.h - src.h * 0.875) / 2);
    tap_ok(st == SLIM_OK && t.crop_x == xs && t.crop_y == ys && t.crop_w == src.w - 2 * xs &&
               t.crop_h == src.h - 2 * ys && !t.flip,
           "%s: inception eval central crop %d,%d %dx%d", fname, xs, ys, src.w - 2 * xs,
           src.h - 2 * ys);
    fimg a = ref_geometry(&src, &t);
    ref_map(&a, 2 / 255.0, -1);
    double d = max_diff(&a, out);
    tap_ok(d < 2e-5, "%s: inception eval equals the reference (max |diff| %.2g)", fname, d);
    free(a.d);
    /* DCT-scaled decode at 112 output: scale 1/2 or less when the crop is >= 224. */
    st = slim__prep_run(&dct.p, dct.s, &in, 1, 0, 0, out, &t, &err);
    a = ref_geometry(&src, &t);
    ref_map(&a, 2 / 255.0, -1);
    double mean = 0;
    for (size_t k = 0; k < (size_t)112 * 112 * 3; k++)
        mean += fabs(a.d[k] - out[k]);
    mean /= 112.0 * 112 * 3;
    tap_ok(
        st == SLIM_OK && t.scale_denom >= 2 && mean < 0.05,
        "%s: DCT-scaled decode (1/%d) stays close to point sampling (mean |diff| %.3f on [-1,1])",
        fname, t.scale_denom, mean);
    free(a.d);
    free(out);
    free(src.d);
    runner_fini(&ru);
    runner_fini(&dct);
}

/* --use_grayscale: inception's eval with rgb_to_grayscale before its
 * normalize is, in every channel, the gray of the colour output (the
 * normalization is affine and the weights sum to 0.9999). */
static void test_grayscale(const uint8_t *jpg, size_t len, const char *fname)
{
    runner col, gray;
    slim_error err = {0};
    bool ok = runner_init(&col, "inception", false, 64, true, false);
    ok = ok && !slim__recipe_load("inception", NULL, &gray.r, &err) &&
         !slim__recipe_add_grayscale(gray.r, false, &err) &&
         !slim__prep_init(&gray.p, gray.r, false, 64, 64, 0, true, false, &err) &&
         (gray.s = slim__prep_scratch_new());
    int at = -1;
    for (int i = 0; ok && i < gray.r->n_eval; i++)
        if (gray.r->eval[i].op == PREP_GRAYSCALE)
            at = i;
    tap_ok(ok && at >= 0 && gray.r->eval[at + 1].op == PREP_NORMALIZE &&
               gray.r->n_eval == col.r->n_eval + 1,
           "%s: --use_grayscale puts rgb_to_grayscale just before inception's normalize", fname);
    float *a = malloc(sizeof(float) * 64 * 64 * 3), *b = malloc(sizeof(float) * 64 * 64 * 3);
    prep_trace t;
    prep_input in = {.data = jpg, .len = len, .name = fname};
    ok = ok && !slim__prep_run(&col.p, col.s, &in, 1, 0, 0, a, &t, &err) &&
         !slim__prep_run(&gray.p, gray.s, &in, 1, 0, 0, b, &t, &err);
    double d = 0, spread = 0;
    for (int k = 0; ok && k < 64 * 64; k++) {
        const float *c = a + 3 * k, *g = b + 3 * k;
        double want = 0.2989 * c[0] + 0.5870 * c[1] + 0.1140 * c[2] - 0.0001;
        for (int ch = 0; ch < 3; ch++)
            d = fmax(d, fabs(g[ch] - want));
        spread = fmax(spread, fabs(c[0] - c[1]));
    }
    tap_ok(ok && d < 1e-4 && spread > 0.05,
           "%s: grayscale output = 0.2989 R + 0.587 G + 0.114 B of the colour one, in every "
           "channel (max |diff| %.2g; colour channels differ by up to %.2f)",
           fname, d, spread);
    free(a);
    free(b);
    runner_fini(&col);
    runner_fini(&gray);
}

static void test_vgg(const uint8_t *jpg, size_t len, const char *fname)
{
    for (int training = 1; training >= 0; training--) {
        runner ru;
        runner_init(&ru, "vgg", training, 224, true, false);
        fimg src = decode_ref(jpg, len, 3);
        float *out = malloc(sizeof(float) * 224 * 224 * 3);
        slim_error err = {0};
        double worst = 0;
        int sides_ok = 0;
        for (int i = 0; i < 12; i++) {
            prep_trace t;
            prep_input in = {.data = jpg, .len = len, .name = fname};
            if (slim__prep_run(&ru.p, ru.s, &in, 7, 1, i, out, &t, &err)) {
                tap_ok(false, "vgg: %s", err.msg);
                break;
            }
            int small = t.resize_w < t.resize_h ? t.resize_w : t.resize_h;
            sides_ok += training ? (small >= 256 && small <= 512) : small == 256;
            fimg a = ref_geometry(&src, &t);
            static const double mean[3] = {123.68, 116.78, 103.94};
            for (size_t k = 0; k < (size_t)a.h * a.w * 3; k++)
                a.d[k] = (float)(a.d[k] - mean[k % 3]);
            worst = fmax(worst, max_diff(&a, out));
            free(a.d);
        }
        tap_ok(sides_ok == 12, "%s: vgg %s short side %s", fname, training ? "train" : "eval",
               training ? "in [256, 512]" : "256");
        tap_ok(worst < 1e-3,
               "%s: vgg %s (resize then crop, lazily) equals the reference (max |diff| %.2g)",
               fname, training ? "train" : "eval", worst);
        free(out);
        free(src.d);
        runner_fini(&ru);
    }
}

static void test_cifarnet(void)
{
    size_t len;
    uint8_t *rec = tap_read_file(tap_data_path("tfrecord/slim_gan_cifar10_train.tfrecord"), &len);
    if (!rec) {
        tap_ok(false, "read the cifar10 record");
        return;
    }
    slim_example *ex;
    slim_error err = {0};
    const uint8_t *png;
    size_t plen;
    if (slim_example_parse(rec + 12, len - 16, &ex, &err) ||
        slim_example_bytes(ex, "image/encoded", 0, &png, &plen)) {
        tap_ok(false, "cifar10 example");
        free(rec);
        return;
    }
    runner ru, ev;
    runner_init(&ru, "cifarnet", true, 32, true, true);
    runner_init(&ev, "cifarnet", false, 32, true, true);
    fimg src = decode_ref(png, plen, 3);
    float out[32 * 32 * 3];
    double worst = 0;
    int padded = 0;
    for (int i = 0; i < 20; i++) {
        prep_trace t;
        prep_input in = {.data = png, .len = plen, .name = "cifar"};
        slim__prep_run(&ru.p, ru.s, &in, 5, 0, i, out, &t, &err);
        padded += t.crop_x < 0 || t.crop_y < 0 || t.crop_x + 32 > 32 || t.crop_y + 32 > 32;
        fimg a = ref_geometry(&src, &t);
        ref_map(&a, 1, t.brightness);
        double m[3] = {0};
        for (int k = 0; k < 32 * 32 * 3; k++)
            m[k % 3] += a.d[k] / 1024.0;
        for (int k = 0; k < 32 * 32 * 3; k++)
            a.d[k] = (float)((a.d[k] - m[k % 3]) * t.contrast + m[k % 3]);
        double s = 0, s2 = 0;
        for (int k = 0; k < 32 * 32 * 3; k++)
            s += a.d[k], s2 += (double)a.d[k] * a.d[k];
        double mean = s / 3072, sd = sqrt(s2 / 3072 - mean * mean);
        sd = fmax(sd, 1 / sqrt(3072.0));
        for (int k = 0; k < 32 * 32 * 3; k++)
            a.d[k] = (float)((a.d[k] - mean) / sd);
        worst = fmax(worst, max_diff(&a, out));
        free(a.d);
    }
    tap_ok(padded > 0, "cifarnet train: padded random crops (%d of 20 reach the padding)", padded);
    tap_ok(worst < 1e-4, "cifarnet train equals the reference (max |diff| %.2g)", worst);
    prep_trace t;
    prep_input in = {.data = png, .len = plen, .name = "cifar"};
    slim__prep_run(&ev.p, ev.s, &in, 5, 0, 0, out, &t, &err);
    double s = 0, s2 = 0;
    for (int k = 0; k < 3072; k++)
        s += out[k], s2 += (double)out[k] * out[k];
    tap_ok(fabs(s / 3072) < 1e-4 && fabs(s2 / 3072 - 1) < 1e-3,
           "cifarnet eval: standardized (mean 0, var 1)");
    free(src.d);
    runner_fini(&ru);
    runner_fini(&ev);
    slim_example_free(ex);
    free(rec);
}

/* Every output element is written, for each recipe, mode, size (37: odd rows,
 * vector tails), ROI/DCT choice and draw: the output is filled with a NaN
 * before one run and with -inf before a second run of the same example, and
 * the two must give the same, finite bits. An element left unwritten (padding,
 * a view past the resized window, the last column of a flipped row, a buffer
 * reused across examples) keeps its sentinel or something computed from it
 * (clip turns -inf into 0, standardization spreads it to the whole image).
 * Valgrind would see it too; this needs no valgrind. */
static void check_all_written(const char *recipe, const prep_input *in, const char *what)
{
    static const int sizes[] = {40, 37};
    const uint32_t nan_bits = 0x7fc0beefu;
    float nan_fill;
    memcpy(&nan_fill, &nan_bits, sizeof nan_fill);
    int runs = 0, bad = 0;
    slim_error err = {0};
    for (int training = 0; training < 2; training++)
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
            for (int fast = 0; fast < 2; fast++) {
                int size = sizes[k];
                runner ru;
                if (!runner_init(&ru, recipe, training, size, fast, fast)) {
                    bad++;
                    continue;
                }
                size_t n = (size_t)size * size * 3;
                /* 64-byte aligned: the executor's streaming-store path needs 32 */
                size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
                float *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes);
                for (int i = 0; i < 6; i++) {
                    for (size_t e = 0; e < n; e++) {
                        a[e] = nan_fill;
                        b[e] = -INFINITY;
                    }
                    if (slim__prep_run(&ru.p, ru.s, in, 7, 0, i, a, NULL, &err) ||
                        slim__prep_run(&ru.p, ru.s, in, 7, 0, i, b, NULL, &err)) {
                        tap_diag("%s %s: %s", recipe, what, err.msg);
                        bad++;
                        continue;
                    }
                    runs++;
                    size_t e = 0;
                    while (e < n && isfinite(a[e]) && !memcmp(&a[e], &b[e], sizeof *a))
                        e++;
                    if (e < n && bad++ == 0)
                        tap_diag("%s %s, %s, %dx%d, roi/dct %s, index %d: element (%zu, %zu, "
                                 "%zu) is %g after a NaN fill, %g after -inf",
                                 recipe, what, training ? "train" : "eval", size, size,
                                 fast ? "on" : "off", i, e / 3 / size, e / 3 % size, e % 3,
                                 (double)a[e], (double)b[e]);
                }
                free(a);
                free(b);
                runner_fini(&ru);
            }
    tap_ok(bad == 0 && runs == 48,
           "%s on %s: every output element is written (%d runs, NaN and -inf fills give the "
           "same finite bits)",
           recipe, what, runs);
}

static void test_all_written(const uint8_t *jpg, size_t len, const char *fname)
{
    prep_input in = {.data = jpg, .len = len, .name = fname};
    check_all_written("inception", &in, fname);
    check_all_written("vgg", &in, fname);
    /* cifarnet on a 32x32 image: its pad-4 random crops reach the padding. */
    uint8_t raw[32 * 32 * 3];
    for (int i = 0; i < 32 * 32 * 3; i++)
        raw[i] = (uint8_t)(i * 7 + i / 96);
    prep_input r = {.data = raw,
                    .len = sizeof raw,
                    .raw = true,
                    .raw_h = 32,
                    .raw_w = 32,
                    .raw_c = 3,
                    .name = "raw"};
    check_all_written("cifarnet", &r, "a raw 32x32 image");
}

static void test_lenet(void)
{
    /* A 20x30 gray image: crop_or_pad to 28x28 = crop 1 column each side... pads rows. */
    uint8_t raw[20 * 30];
    for (int i = 0; i < 600; i++)
        raw[i] = (uint8_t)(i * 13);
    runner ru;
    runner_init(&ru, "lenet", true, 28, true, true);
    float out[28 * 28];
    slim_error err = {0};
    prep_trace t;
    prep_input in = {.data = raw,
                     .len = sizeof raw,
                     .raw = true,
                     .raw_h = 20,
                     .raw_w = 30,
                     .raw_c = 1,
                     .name = "raw"};
    slim_status st = slim__prep_run(&ru.p, ru.s, &in, 1, 0, 0, out, &t, &err);
    /* TF: width 30 -> crop offset 1; height 20 -> pad offset 4. */
    bool ok = st == SLIM_OK;
    for (int y = 0; ok && y < 28; y++)
        for (int x = 0; ok && x < 28; x++) {
            int sy = y - 4, sx = x + 1;
            float want = (sy >= 0 && sy < 20) ? (raw[sy * 30 + sx] - 128.0f) / 128.0f : -1.0f;
            ok = fabsf(out[y * 28 + x] - want) < 1e-6f;
        }
    tap_ok(ok, "lenet: crop-or-pad of a 30x20 raw image, (x - 128) / 128 (padding is -1)");
    /* A PNG of the wrong kind of data: clean error. */
    prep_input bad = {
        .data = (const uint8_t *)"\x89PNG\r\n\x1a\nxxxx", .len = 12, .name = "shard-0: record 3"};
    st = slim__prep_run(&ru.p, ru.s, &bad, 1, 0, 0, out, &t, &err);
    tap_ok(st == SLIM_ECORRUPT && !strncmp(err.msg, "shard-0: record 3: corrupt PNG", 30),
           "corrupt PNG names the record: %s", err.msg);
    runner_fini(&ru);
}

static void test_truncated(void)
{
    size_t len;
    uint8_t *d = tap_read_file(tap_data_path("jpeg/pillow/truncated_jpeg.jpg"), &len);
    runner ru;
    runner_init(&ru, "inception", false, 64, true, true);
    float *out = malloc(sizeof(float) * 64 * 64 * 3);
    slim_error err = {0};
    prep_input in = {.data = d, .len = len, .name = "t.tfrecord: record 9"};
    slim_status st = slim__prep_run(&ru.p, ru.s, &in, 1, 0, 0, out, NULL, &err);
    tap_streq(err.msg, "t.tfrecord: record 9: corrupt JPEG: Premature end of JPEG file",
              "truncated JPEG in a pipeline: error names the record");
    (void)st;
    /* The scratch is reusable after the error. */
    size_t glen;
    uint8_t *g = tap_read_file(tap_data_path("jpeg/pillow/hopper.jpg"), &glen);
    prep_input in2 = {.data = g, .len = glen, .name = "hopper"};
    st = slim__prep_run(&ru.p, ru.s, &in2, 1, 0, 0, out, NULL, &err);
    tap_ok(st == SLIM_OK, "the decoder works again after an error");
    free(g);
    free(out);
    runner_fini(&ru);

    /* decode's try_recover_truncated (tf.image.decode_jpeg's): the pipeline
     * decodes it as slim_image_decode with the option does (`slimrun data
     * decode --try_recover_truncated`), through the crop-only decode. */
    slim_image img = {0};
    slim_decode_opts o = {.channels = 3, .try_recover_truncated = true};
    st = slim_image_decode(d, len, &o, &img, &err);
    tap_ok(st == SLIM_OK && img.truncated && img.height == 100 && img.width == 100,
           "the whole decode with the option: 100x100, said truncated");
    fimg src = fimg_new(100, 100, 3);
    for (size_t i = 0; st == SLIM_OK && i < (size_t)100 * 100 * 3; i++)
        src.d[i] = img.data[i];
    slim_image_fini(&img);
    const char *text = "image_size: 64\nchannels: 3\neval:\n"
                       "  - decode: {channels: 3, try_recover_truncated: true}\n"
                       "  - central_crop: {fraction: 0.875}\n  - resize: {}\n  - to_float\n";
    slim__recipe *r = NULL;
    slim__prep p;
    slim__prep_scratch *s = slim__prep_scratch_new();
    out = malloc(sizeof(float) * 64 * 64 * 3);
    prep_trace t;
    st = slim__recipe_parse("recover.yaml", text, &r, &err);
    if (!st)
        st = slim__prep_init(&p, r, false, 64, 64, 0, true, false, &err);
    if (!st)
        st = slim__prep_run(&p, s, &in, 1, 0, 0, out, &t, &err);
    tap_ok(st == SLIM_OK, "a recipe with try_recover_truncated: true decodes it (%s)",
           st ? err.msg : "ok");
    if (st == SLIM_OK) {
        fimg a = ref_geometry(&src, &t);
        double dd = max_diff(&a, out);
        tap_ok(dd < 1e-3,
               "... to the whole recovered decode, cropped and resized (max |diff| %.2g)", dd);
        free(a.d);
    } else {
        tap_ok(false, "... to the whole recovered decode");
    }
    free(src.d);
    free(out);
    slim__prep_scratch_free(s);
    slim__recipe_free(r);
    free(d);
}

int main(void)
{
    test_load();
    test_bad();
    test_dataset_yaml();
    test_lenet();
    if (!tap_shared_data()) {
        tap_diag("../shared/data is absent: image-based recipe tests skipped");
        return tap_done();
    }
    const char *files[] = {"photos/pets_examples_0001.jpg", "photos/raccoon_test_0018.jpg",
                           "jpeg/libjpeg-turbo/testimgp.jpg", "jpeg/pillow/pil_sample_cmyk.jpg"};
    for (size_t k = 0; k < sizeof files / sizeof *files; k++) {
        size_t len;
        uint8_t *d = tap_read_file(tap_data_path(files[k]), &len);
        if (!d) {
            tap_ok(false, "read %s", files[k]);
            continue;
        }
        test_inception(d, len, files[k]);
        if (k < 2) {
            test_vgg(d, len, files[k]);
            test_inception_eval_and_dct(d, len, files[k]);
        }
        if (k == 0)
            test_grayscale(d, len, files[k]);
        if (k == 0) {
            test_golden(d, len);
            test_all_written(d, len, files[k]);
        }
        free(d);
    }
    test_cifarnet();
    test_truncated();
    return tap_done();
}
