/* datasets/bbox.c - bounding boxes for the distorted crop: reading them from
 * an Example, and TensorFlow's sample_distorted_bounding_box.
 *
 * Boxes are normalized (ymin, xmin, ymax, xmax), TF's order. In a record they
 * are either four float lists KEY/xmin, KEY/ymin, KEY/xmax, KEY/ymax (TF-Slim's
 * and Inception's build_imagenet_data.py keys, KEY = image/object/bbox) or one
 * float list KEY of 4 values per box in TF's order (TFDS's BBoxFeature).
 *
 * The sampler is TF's sample_distorted_bounding_box_op.cc: boxes become pixel
 * rectangles by truncation (x_min = int(xmin * width)); per attempt an aspect
 * ratio, a random crop obeying the area range, accepted when it covers at
 * least min_object_covered of some box (intersection area / box area); boxes
 * with no pixel are skipped; with no boxes the whole image is the box; when
 * no attempt succeeds, the whole image. Where TF refuses data, slim is
 * lenient: coordinates outside [0, 1] are clipped (TF: an error), and boxes
 * that are NaN, inverted or have no pixel after clipping are dropped, so an
 * example whose boxes are all unusable is treated as one without boxes (TF:
 * the whole image, no crop). */
#include "datasets/prep.h"
#include "datasets/tfrecord.h"
#include "core/error.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- reading ----------------------------------------------------------------- */

/* A float list; a missing key or an empty Feature is an empty list. */
static slim_status floats_of(const slim_example *ex, const char *key, const float **v, size_t *n,
                             bool *present)
{
    *v = NULL;
    *n = 0;
    *present = false;
    slim_status st = slim_example_floats(ex, key, v, n);
    if (st == SLIM_ENOTFOUND)
        return SLIM_OK;
    *present = true;
    if (st == SLIM_ETYPE) {
        for (int i = 0; i < slim_example_count(ex); i++) {
            slim_feature_kind kind;
            size_t nv;
            const char *k = slim_example_key(ex, i, &kind, &nv);
            if (k && !strcmp(k, key) && kind == SLIM_FEATURE_NONE)
                return SLIM_OK;
        }
    }
    return st;
}

slim_status slim__bbox_from_example(const slim_example *ex, const char *key, prep_boxes *b,
                                    const char *name, const char *file, slim_error *err)
{
    memset(b, 0, sizeof *b);
    if (!key)
        return SLIM_OK;
    const float *v;
    size_t n;
    bool present;
    slim_status st = floats_of(ex, key, &v, &n, &present);
    if (st)
        return slim__data_error(err, SLIM_ECORRUPT, file,
                                "%s: '%s' is not a float list (bounding boxes: 4 floats per box, "
                                "ymin, xmin, ymax, xmax; or set keys: {bbox: none} in the recipe)",
                                name, key);
    if (present) { /* one list, 4 values per box */
        if (n % 4)
            return slim__data_error(err, SLIM_ECORRUPT, file,
                                    "%s: '%s' holds %zu floats, not 4 per box (ymin, xmin, ymax, "
                                    "xmax)",
                                    name, key, n);
        if (n == 0)
            return SLIM_OK; /* an empty list: no boxes */
        b->ymin = v, b->xmin = v + 1, b->ymax = v + 2, b->xmax = v + 3;
        b->stride = 4;
        b->n = (int)(n / 4);
        return SLIM_OK;
    }
    static const char *const suffix[4] = {"ymin", "xmin", "ymax", "xmax"};
    const float *c[4];
    size_t cn[4];
    int found = 0;
    char k[512];
    for (int i = 0; i < 4; i++) {
        snprintf(k, sizeof k, "%s/%s", key, suffix[i]);
        bool p;
        if (floats_of(ex, k, &c[i], &cn[i], &p))
            return slim__data_error(err, SLIM_ECORRUPT, file,
                                    "%s: '%s' is not a float list (normalized box coordinates)",
                                    name, k);
        found += p;
    }
    if (found == 0)
        return SLIM_OK;
    if (found < 4 || cn[0] != cn[1] || cn[0] != cn[2] || cn[0] != cn[3])
        return slim__data_error(err, SLIM_ECORRUPT, file,
                                "%s: the bounding box lists %s/{ymin,xmin,ymax,xmax} differ in "
                                "length (%zu, %zu, %zu, %zu; a missing key counts 0)",
                                name, key, cn[0], cn[1], cn[2], cn[3]);
    b->ymin = c[0], b->xmin = c[1], b->ymax = c[2], b->xmax = c[3];
    b->stride = 1;
    b->n = cn[0] > (size_t)(1 << 20) ? 1 << 20 : (int)cn[0];
    return SLIM_OK;
}

/* ---- pixel rectangles -------------------------------------------------------- */

static float clip01(float v)
{
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

int slim__bbox_pixels(const prep_boxes *b, int W, int H, int *rects)
{
    int m = 0;
    for (int i = 0; i < b->n; i++) {
        size_t k = (size_t)i * (size_t)b->stride;
        float y0 = b->ymin[k], x0 = b->xmin[k], y1 = b->ymax[k], x1 = b->xmax[k];
        if (isnan(y0) || isnan(x0) || isnan(y1) || isnan(x1))
            continue;
        /* TF: static_cast<int32>(coordinate * size), in float. */
        int px0 = (int)(clip01(x0) * (float)W), py0 = (int)(clip01(y0) * (float)H);
        int px1 = (int)(clip01(x1) * (float)W), py1 = (int)(clip01(y1) * (float)H);
        if (px1 <= px0 || py1 <= py0)
            continue; /* no pixel: TF's coverage test skips it too */
        rects[4 * m + 0] = px0;
        rects[4 * m + 1] = py0;
        rects[4 * m + 2] = px1;
        rects[4 * m + 3] = py1;
        m++;
    }
    return m;
}

/* ---- sampling ------------------------------------------------------------------ */

typedef struct draws {
    uint64_t seed, stream;
    int step;
} draws;

static uint64_t rnd(const draws *d, int k)
{
    return slim_rand_u64(d->seed, d->stream, (uint64_t)d->step * 64 + (uint64_t)k);
}

static double unif(const draws *d, int k)
{
    return (double)(rnd(d, k) >> 11) * (1.0 / 9007199254740992.0);
}

static int uniform_int(const draws *d, int k, int n)
{
    return n <= 1 ? 0 : (int)(rnd(d, k) % (uint64_t)n);
}

/* TF's GenerateRandomCrop: a height uniform between the sizes the area range
 * allows for this aspect ratio (rounding as TF), a position in [0, H - h). */
static bool random_crop_attempt(const draws *d, int k, int W, int H, float amin, float amax,
                                float aspect, int *cx, int *cy, int *cw, int *ch)
{
    const float min_area = amin * (float)W * (float)H;
    const float max_area = amax * (float)W * (float)H;
    int height = (int)lrintf(sqrtf(min_area / aspect));
    int max_height = (int)lrintf(sqrtf(max_area / aspect));
    if (lrintf((float)max_height * aspect) > W) {
        const float eps = 0.0000001f;
        max_height = (int)(((float)W + 0.5f - eps) / aspect);
        if (lrintf((float)max_height * aspect) > W)
            max_height -= 1;
    }
    if (max_height > H)
        max_height = H;
    if (height >= max_height)
        height = max_height;
    if (height < max_height)
        height += uniform_int(d, k, max_height - height + 1);
    int width = (int)lrintf((float)height * aspect);
    float area = (float)width * (float)height;
    if (area < min_area) {
        height += 1;
        width = (int)lrintf((float)height * aspect);
        area = (float)width * (float)height;
    }
    if (area > max_area) {
        height -= 1;
        width = (int)lrintf((float)height * aspect);
        area = (float)width * (float)height;
    }
    if (area < min_area || area > max_area || width > W || height > H || width <= 0 || height <= 0)
        return false;
    *cy = height < H ? uniform_int(d, k + 1, H - height) : 0;
    *cx = width < W ? uniform_int(d, k + 2, W - width) : 0;
    *cw = width;
    *ch = height;
    return true;
}

/* TF's SatisfiesOverlapConstraints: some box is covered at least min_covered. */
static bool covers(int x, int y, int w, int h, const int *rects, int n, double min_covered)
{
    for (int i = 0; i < n; i++) {
        const int *r = rects + 4 * i;
        int ix0 = x > r[0] ? x : r[0], iy0 = y > r[1] ? y : r[1];
        int ix1 = x + w < r[2] ? x + w : r[2], iy1 = y + h < r[3] ? y + h : r[3];
        double inter = ix1 > ix0 && iy1 > iy0 ? (double)(ix1 - ix0) * (iy1 - iy0) : 0.0;
        if (inter / ((double)(r[2] - r[0]) * (r[3] - r[1])) >= min_covered)
            return true;
    }
    return false;
}

bool slim__bbox_sample(const prep_step *s, int W, int H, const int *rects, int n, uint64_t seed,
                       uint64_t stream, int step, int *x, int *y, int *w, int *h)
{
    const int whole[4] = {0, 0, W, H};
    if (n == 0) { /* use_image_if_no_bounding_boxes */
        rects = whole;
        n = 1;
    }
    const draws d = {seed, stream, step};
    for (int a = 0; a < s->max_attempts; a++) {
        float aspect = (float)(s->aspect[0] + (s->aspect[1] - s->aspect[0]) * unif(&d, 4 * a));
        int cx, cy, cw, ch;
        if (!random_crop_attempt(&d, 4 * a + 1, W, H, (float)s->area[0], (float)s->area[1], aspect,
                                 &cx, &cy, &cw, &ch))
            continue;
        if (!covers(cx, cy, cw, ch, rects, n, s->min_covered))
            continue;
        *x = cx, *y = cy, *w = cw, *h = ch;
        return true;
    }
    *x = 0, *y = 0, *w = W, *h = H;
    return false;
}
