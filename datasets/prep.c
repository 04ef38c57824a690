/* datasets/prep.c - the per-example executor of a preprocessing recipe.
 *
 * Why not graph ops: the engine's graphs have static shapes, while every
 * decoded image has its own size and every random crop its own box. So the
 * per-example work is this small executor over a table of image steps
 * (datasets/recipe.c); its output is a fixed (H,W,C) slot of a batch.
 *
 * Geometry is lazy. The state is
 *   window  a rectangle of the source image (may extend past it: zero padding),
 *   resize  the window resized to rw x rh (bilinear, TF1 or half-pixel mapping),
 *   view    a rectangle of the resized window (crops after the resize),
 *   flip    the view mirrored left-right,
 * which covers every TF-Slim recipe (crop -> resize, resize -> crop,
 * pad -> crop, crop-or-pad). Resampling runs once, straight from the decoded
 * pixels to the output, and decodes only the JPEG region the taps touch
 * (jpeg_crop_scanline + jpeg_skip_scanlines, stopping after the last row),
 * at a DCT scale 1/2, 1/4, 1/8 when the output is at most that fraction of
 * the window. The result equals TF's crop-then-resize exactly at full scale
 * (the bilinear taps and clamping are TF's resize_bilinear ones); DCT scaling
 * replaces point sampling by libjpeg's scaled IDCT (a low-pass), so it is an
 * option (on by default, off with no_dct_scaling).
 *
 * Per-pixel affine steps (convert_to_float, brightness, normalize,
 * subtract_mean) are folded into the resampling's output; the others
 * (saturation, hue, contrast, clip, standardization) are passes over the
 * output slot. */
#include "datasets/prep.h"
#include "datasets/image.h"
#include "core/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __SSE2__
#include <immintrin.h>
#endif

double slim__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct slim__prep_scratch {
    slim__jpeg *jpeg;
    slim__png *png;
    uint8_t *img; /* decoded whole images (PNG, oriented JPEG, channel conversions) */
    size_t img_cap;
    float *tmp; /* one vertically blended row */
    size_t tmp_cap;
    uint8_t *zero;
    size_t zero_cap;
    int *taps; /* columns: 2 per output; rows: 2 per output */
    float *w;
    size_t taps_cap, w_cap;
    float *row; /* one output row before a streaming store (64-byte aligned) */
    size_t row_cap;
    int *rects; /* the example's boxes in pixels (distorted crop) */
    size_t rects_cap;
};

slim__prep_scratch *slim__prep_scratch_new(void)
{
    slim__prep_scratch *s = calloc(1, sizeof *s);
    if (s && !(s->jpeg = slim__jpeg_new())) {
        free(s);
        return NULL;
    }
    return s;
}

void slim__prep_scratch_free(slim__prep_scratch *s)
{
    if (!s)
        return;
    slim__jpeg_free(s->jpeg);
    slim__png_free(s->png);
    free(s->img);
    free(s->tmp);
    free(s->zero);
    free(s->taps);
    free(s->w);
    free(s->row);
    free(s->rects);
    free(s);
}

static void *grow(void *p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return p;
    need += need / 4 + 64;
    void *q = realloc(p, need);
    if (!q)
        return NULL;
    *cap = need;
    return q;
}

/* ---- per-example state ---------------------------------------------------- */

typedef struct geom {
    int W0, H0;         /* source size (full resolution) */
    int wx, wy, ww, wh; /* window in source pixels */
    bool resized;
    int rw, rh; /* the window resized to */
    bool half;
    int vx, vy, vw, vh; /* view in resized (or window) coordinates */
    bool flip;
} geom;

typedef struct run {
    const slim__prep *p;
    slim__prep_scratch *s;
    const prep_input *in;
    const char *name;
    uint64_t seed, stream;
    int C;
    geom g;
    /* the source: JPEG decoded lazily, or pixels in memory */
    bool lazy_jpeg;
    const uint8_t *mem_u8;
    const float *mem_f32;
    size_t mem_stride; /* elements per row */
    /* the output */
    float *out;
    bool materialized;
    bool stream_out;   /* nothing reads the output after resampling: bypass the cache */
    double a[4], b[4]; /* pending per-channel affine y = a x + b */
    bool clamp;        /* pending clamp to [lo, hi], applied before a and b */
    float lo, hi;
    prep_trace *tr;
    slim_error *err;
} run;

static uint64_t rnd(const run *r, int step, int k)
{
    return slim_rand_u64(r->seed, r->stream, (uint64_t)step * 64 + (uint64_t)k);
}

static double unif(const run *r, int step, int k)
{
    return (double)(rnd(r, step, k) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n). */
static int uniform_int(const run *r, int step, int k, int n)
{
    return n <= 1 ? 0 : (int)(rnd(r, step, k) % (uint64_t)n);
}

static void trace_event(run *r, slim_stage st, double t0, double t1)
{
    prep_trace *tr = r->tr;
    tr->t[st] += t1 - t0;
    if (tr->n_ev < 8) {
        tr->ev[tr->n_ev].stage = st;
        tr->ev[tr->n_ev].t0 = t0;
        tr->ev[tr->n_ev].t1 = t1;
        tr->n_ev++;
    }
}

/* ---- geometry ------------------------------------------------------------- */

/* Crop the current image (vw x vh, as seen: mirrored when flipped) to
 * (x, y, w, h); the rectangle may extend outside it (zero padding). */
static void crop(geom *g, int x, int y, int w, int h)
{
    if (g->flip)
        x = g->vw - x - w;
    if (!g->resized) {
        g->wx += x;
        g->wy += y;
        g->ww = w;
        g->wh = h;
        g->vx = g->vy = 0;
    } else {
        g->vx += x;
        g->vy += y;
    }
    g->vw = w;
    g->vh = h;
}

static void resize(geom *g, int w, int h, bool half)
{
    /* prep_init allows one resize, before which the view is the whole window. */
    g->resized = true;
    g->rw = w;
    g->rh = h;
    g->half = half;
    g->vx = g->vy = 0;
    g->vw = w;
    g->vh = h;
}

/* TensorFlow's sample_distorted_bounding_box (datasets/bbox.c) over the
 * example's boxes, in the coordinates of the image as this step sees it. */
static slim_status distorted_bbox_crop(run *r, int step, const prep_step *s)
{
    geom *g = &r->g;
    const prep_boxes *b = &r->in->boxes;
    int n = 0;
    if (b->n > 0) {
        r->s->rects = grow(r->s->rects, &r->s->rects_cap, (size_t)b->n * 4 * sizeof(int));
        if (!r->s->rects)
            return slim__error(r->err, SLIM_ENOMEM, "out of memory");
        n = slim__bbox_pixels(b, g->vw, g->vh, r->s->rects);
    }
    int x, y, w, h;
    bool ok = slim__bbox_sample(s, g->vw, g->vh, r->s->rects, n, r->seed, r->stream, step, &x, &y,
                                &w, &h);
    r->tr->n_boxes = n;
    r->tr->bbox_fallback = !ok;
    crop(g, x, y, w, h);
    return SLIM_OK;
}

static slim_status geometry_step(run *r, int i, const prep_step *s)
{
    geom *g = &r->g;
    int th = s->height ? s->height : r->p->out_h, tw = s->width ? s->width : r->p->out_w;
    switch (s->op) {
    case PREP_CENTRAL_CROP: {
        if (s->fraction >= 1.0)
            break;
        /* tf.image.central_crop: start = int((size - size * fraction) / 2) in float64. */
        int ys = (int)(((double)g->vh - (double)g->vh * s->fraction) / 2);
        int xs = (int)(((double)g->vw - (double)g->vw * s->fraction) / 2);
        crop(g, xs, ys, g->vw - 2 * xs, g->vh - 2 * ys);
        break;
    }
    case PREP_DISTORTED_BBOX_CROP: return distorted_bbox_crop(r, i, s);
    case PREP_RANDOM_CROP:
    case PREP_CENTRAL_CROP_TO:
        if (g->vw < tw || g->vh < th)
            return slim__error(r->err, SLIM_EINVAL,
                               "%s: %s to %dx%d of a %dx%d image (%s:%d:%d needs a larger image)",
                               r->name, slim__prep_op_name(s->op), tw, th, g->vw, g->vh,
                               r->p->recipe->path, s->line, s->col);
        if (s->op == PREP_RANDOM_CROP)
            crop(g, uniform_int(r, i, 1, g->vw - tw + 1), uniform_int(r, i, 0, g->vh - th + 1), tw,
                 th);
        else
            crop(g, (g->vw - tw) / 2, (g->vh - th) / 2, tw, th);
        break;
    case PREP_RESIZE: resize(g, tw, th, s->half_pixel); break;
    case PREP_ASPECT_RESIZE: {
        int side = s->side_min + uniform_int(r, i, 0, s->side_max - s->side_min + 1);
        /* vgg_preprocessing._smallest_size_at_least, in float32 with rint. */
        float h = (float)g->vh, w = (float)g->vw, sd = (float)side;
        float scale = h > w ? sd / w : sd / h;
        int nh = (int)rintf(h * scale), nw = (int)rintf(w * scale);
        resize(g, nw < 1 ? 1 : nw, nh < 1 ? 1 : nh, s->half_pixel);
        break;
    }
    case PREP_CROP_OR_PAD: {
        /* tf.image.resize_image_with_crop_or_pad: floor divisions as in Python. */
        int dw = tw - g->vw, dh = th - g->vh;
        int cxo = -dw / 2 > 0 ? (-dw) / 2 : 0, pxo = dw / 2 > 0 ? dw / 2 : 0;
        int cyo = -dh / 2 > 0 ? (-dh) / 2 : 0, pyo = dh / 2 > 0 ? dh / 2 : 0;
        crop(g, cxo - pxo, cyo - pyo, tw, th);
        break;
    }
    case PREP_PAD: crop(g, -s->pad, -s->pad, g->vw + 2 * s->pad, g->vh + 2 * s->pad); break;
    case PREP_FLIP:
        if (unif(r, i, 0) < s->p)
            g->flip = !g->flip;
        break;
    default: break;
    }
    return SLIM_OK;
}

/* ---- resampling ------------------------------------------------------------- */

/* Taps along one axis for n outputs: t[2o], t[2o+1] source indices (-1: zero)
 * and w[o] the weight of the second. The source image is size0 (full
 * resolution) or sized (decoded at 1/d). */
static void axis_taps(int n, int voff, bool flip, bool resized, int rsize, bool half, int woff,
                      int wsize, int size0, int d, int sized, int *t, float *w)
{
    double scale = resized ? (double)wsize / rsize : 1.0;
    int blo = 0, bhi = 0;
    if (d > 1) { /* the window's pixels in the scaled image */
        blo = woff / d;
        bhi = (woff + wsize + d - 1) / d - 1;
        if (blo < 0)
            blo = 0;
        if (bhi > sized - 1)
            bhi = sized - 1;
    }
    for (int o = 0; o < n; o++) {
        int v = voff + (flip ? n - 1 - o : o);
        int lo, hi;
        float lerp = 0;
        if (v < 0 || v >= (resized ? rsize : wsize)) {
            t[2 * o] = t[2 * o + 1] = -1;
            w[o] = 0;
            continue;
        }
        if (!resized) {
            lo = hi = woff + v;
        } else {
            double s = half ? (v + 0.5) * scale - 0.5 : v * scale;
            if (d > 1) {
                double sd = (woff + s + 0.5) / d - 0.5;
                double f = floor(sd);
                lo = (int)f;
                hi = lo + 1;
                lerp = (float)(sd - f);
                lo = lo < blo ? blo : lo > bhi ? bhi : lo;
                hi = hi < blo ? blo : hi > bhi ? bhi : hi;
                t[2 * o] = lo;
                t[2 * o + 1] = hi;
                w[o] = lerp;
                continue;
            }
            /* TF's compute_interpolation_weights: lower = max(floor, 0),
             * upper = min(ceil, size - 1), lerp = s - floor(s). */
            double f = floor(s);
            lo = (int)f < 0 ? 0 : (int)f;
            hi = (int)ceil(s) > wsize - 1 ? wsize - 1 : (int)ceil(s);
            if (lo > wsize - 1)
                lo = wsize - 1;
            lerp = (float)(s - f);
            lo += woff;
            hi += woff;
        }
        t[2 * o] = lo >= 0 && lo < size0 ? lo : -1;
        t[2 * o + 1] = hi >= 0 && hi < size0 ? hi : -1;
        w[o] = lerp;
    }
}

static slim_status materialize(run *r)
{
    const slim__prep *p = r->p;
    geom *g = &r->g;
    const int C = r->C, OW = g->vw, OH = g->vh;
    slim__prep_scratch *s = r->s;
    double t0 = slim__now();
    if (OW != p->out_w || OH != p->out_h)
        return slim__error(r->err, SLIM_ESHAPE,
                           "%s: the recipe %s (%s) makes %dx%d images, the pipeline needs %dx%d "
                           "(add a resize or crop step)",
                           r->name, p->recipe->name, p->recipe->path, OW, OH, p->out_w, p->out_h);
    /* DCT scale: the largest 1/d (d = 2, 4, 8) with the output at most 1/d of the window. */
    int d = 1;
    if (r->lazy_jpeg && p->dct && g->resized && g->wx >= 0 && g->wy >= 0 &&
        g->wx + g->ww <= g->W0 && g->wy + g->wh <= g->H0) {
        double fx = (double)g->ww / g->rw, fy = (double)g->wh / g->rh;
        double f = fx < fy ? fx : fy;
        while (d < 8 && f >= 2 * d)
            d *= 2;
    }
    int SW = g->W0, SH = g->H0;
    if (d > 1)
        slim__jpeg_scaled_size(s->jpeg, d, &SH, &SW);
    size_t ntap = 2 * (size_t)(OW + OH);
    s->taps = grow(s->taps, &s->taps_cap, ntap * sizeof *s->taps);
    s->w = grow(s->w, &s->w_cap, (size_t)(OW + OH) * sizeof *s->w);
    float *wbuf = s->w;
    if (!s->taps || !wbuf)
        return slim__error(r->err, SLIM_ENOMEM, "out of memory");
    int *ct = s->taps, *rt = s->taps + 2 * OW;
    float *cw = wbuf, *rw = wbuf + OW;
    axis_taps(OW, g->vx, g->flip, g->resized, g->rw, g->half, g->wx, g->ww, g->W0, d, SW, ct, cw);
    axis_taps(OH, g->vy, false, g->resized, g->rh, g->half, g->wy, g->wh, g->H0, d, SH, rt, rw);
    int cmin = 1 << 30, cmax = -1, rmin = 1 << 30, rmax = -1;
    for (int i = 0; i < 2 * OW; i++)
        if (ct[i] >= 0) {
            cmin = ct[i] < cmin ? ct[i] : cmin;
            cmax = ct[i] > cmax ? ct[i] : cmax;
        }
    for (int i = 0; i < 2 * OH; i++)
        if (rt[i] >= 0) {
            rmin = rt[i] < rmin ? rt[i] : rmin;
            rmax = rt[i] > rmax ? rt[i] : rmax;
        }
    prep_trace *tr = r->tr;
    tr->crop_x = g->wx, tr->crop_y = g->wy, tr->crop_w = g->ww, tr->crop_h = g->wh;
    tr->resize_w = g->resized ? g->rw : 0;
    tr->resize_h = g->resized ? g->rh : 0;
    tr->view_x = g->vx, tr->view_y = g->vy, tr->view_w = g->vw, tr->view_h = g->vh;
    tr->flip = g->flip;
    tr->scale_denom = d;
    float *out = r->out;
    size_t npx = (size_t)OW * OH;
    if (cmax < 0 || rmax < 0) { /* only padding */
        for (size_t i = 0; i < npx; i++)
            for (int c = 0; c < C; c++)
                out[i * C + c] = (float)r->b[c];
        trace_event(r, SLIM_STAGE_RESIZE, t0, slim__now());
        r->materialized = true;
        return SLIM_OK;
    }
    /* The pixels: decode the region the taps touch. */
    const uint8_t *base8 = NULL;
    const float *base32 = NULL;
    size_t stride; /* elements */
    int bx = 0, by = 0;
    double t1 = slim__now();
    trace_event(r, SLIM_STAGE_CROP, t0, t1);
    if (r->lazy_jpeg) {
        int x0 = 0, x1 = SW, y0 = 0, y1 = SH;
        if (p->roi) {
            /* 2 extra columns: libjpeg-turbo's fancy upsampling treats the
             * first and last column of a cropped scanline as image edges. */
            x0 = cmin - 2, x1 = cmax + 3, y0 = rmin, y1 = rmax + 1;
            x0 = x0 < 0 ? 0 : x0;
            x1 = x1 > SW ? SW : x1;
        }
        int bw;
        const uint8_t *px;
        slim_status st =
            slim__jpeg_decode(s->jpeg, d, C, x0, y0, x1, y1, &px, &stride, &bx, &bw, r->err);
        if (st)
            return st;
        tr->cut = slim__jpeg_last_cut(s->jpeg);
        base8 = px;
        by = y0;
        tr->roi = !(x0 == 0 && y0 == 0 && x1 == SW && y1 == SH);
        tr->decoded_w = bw;
        tr->decoded_h = y1 - y0;
        t0 = slim__now();
        trace_event(r, SLIM_STAGE_DECODE, t1, t0);
    } else {
        base8 = r->mem_u8;
        base32 = r->mem_f32;
        stride = r->mem_stride;
        t0 = t1;
    }
    /* Row buffers: tmp holds the blended columns [cmin, cmax] plus a zero pixel. */
    int span = cmax - cmin + 1;
    size_t tmpn = (size_t)(span + 1) * C + 8;
    s->tmp = grow(s->tmp, &s->tmp_cap, tmpn * sizeof *s->tmp);
    s->zero = grow(s->zero, &s->zero_cap, tmpn * sizeof(float));
    if (!s->tmp || !s->zero)
        return slim__error(r->err, SLIM_ENOMEM, "out of memory");
    memset(s->zero, 0, tmpn * sizeof(float));
    float *tmp = s->tmp;
    const int zslot = span * C;
    for (int c = 0; c < C; c++)
        tmp[zslot + c] = 0;
    /* Column taps as element offsets into tmp. */
    for (int i = 0; i < 2 * OW; i++)
        ct[i] = ct[i] >= 0 ? (ct[i] - cmin) * C : zslot;
    float A[4], B[4];
    for (int c = 0; c < C; c++) {
        A[c] = (float)r->a[c];
        B[c] = (float)r->b[c];
    }
    const int n = span * C;
    /* Streaming stores when the output is not read again here: no read-for-
     * ownership of the (cold, batch-sized) destination lines. */
    bool stream = false;
#ifdef __AVX__
    size_t rowlen = (size_t)OW * C;
    if (r->stream_out && ((uintptr_t)out & 31) == 0 && rowlen % 8 == 0) {
        if (rowlen + 16 > s->row_cap) {
            free(s->row);
            s->row = aligned_alloc(64, ((rowlen + 16) * sizeof(float) + 63) / 64 * 64);
            s->row_cap = s->row ? rowlen + 16 : 0;
        }
        stream = s->row != NULL;
    }
#endif
    for (int oy = 0; oy < OH; oy++) {
        int r0 = rt[2 * oy], r1 = rt[2 * oy + 1];
        float wy = rw[oy];
        float *o = stream ? s->row : out + (size_t)oy * OW * C;
        if (r0 < 0 && r1 < 0) {
            for (int ox = 0; ox < OW; ox++)
                for (int c = 0; c < C; c++)
                    o[ox * C + c] = B[c];
            goto row_done;
        }
        if (base32) {
            const float *zf = (const float *)s->zero;
            const float *p0 = r0 >= 0 ? base32 + (size_t)r0 * stride + (size_t)cmin * C : zf;
            const float *p1 = r1 >= 0 ? base32 + (size_t)r1 * stride + (size_t)cmin * C : zf;
            for (int k = 0; k < n; k++)
                tmp[k] = p0[k] + wy * (p1[k] - p0[k]);
        } else {
            const uint8_t *p0 =
                r0 >= 0 ? base8 + (size_t)(r0 - by) * stride + (size_t)(cmin - bx) * C : s->zero;
            const uint8_t *p1 =
                r1 >= 0 ? base8 + (size_t)(r1 - by) * stride + (size_t)(cmin - bx) * C : s->zero;
            if (p0 == p1 || wy == 0.0f) {
                for (int k = 0; k < n; k++)
                    tmp[k] = (float)p0[k];
            } else {
                for (int k = 0; k < n; k++) {
                    float a = (float)p0[k];
                    tmp[k] = a + wy * ((float)p1[k] - a);
                }
            }
        }
        if (C == 3) {
            int ox = 0;
#ifdef __AVX2__
            /* 2 pixels per step: lanes [R G B x | R G B x], packed to 6 floats
             * (the store's 2 extra lanes are overwritten by the next step). */
            const __m256 WA = _mm256_setr_ps(A[0], A[1], A[2], 0, A[0], A[1], A[2], 0);
            const __m256 WB = _mm256_setr_ps(B[0], B[1], B[2], 0, B[0], B[1], B[2], 0);
            const __m256i pack = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
            for (; ox + 2 < OW - 1; ox += 2) {
                __m256 a = _mm256_loadu2_m128(tmp + ct[2 * ox + 2], tmp + ct[2 * ox]);
                __m256 b = _mm256_loadu2_m128(tmp + ct[2 * ox + 3], tmp + ct[2 * ox + 1]);
                __m256 w = _mm256_set_m128(_mm_set1_ps(cw[ox + 1]), _mm_set1_ps(cw[ox]));
                __m256 v = _mm256_fmadd_ps(w, _mm256_sub_ps(b, a), a);
                v = _mm256_fmadd_ps(v, WA, WB);
                _mm256_storeu_ps(o + 3 * ox, _mm256_permutevar8x32_ps(v, pack));
            }
#endif
#ifdef __SSE2__
            /* 4 lanes per pixel (RGB + the next pixel's R, overwritten by the
             * next store); tmp has slack after the zero pixel, and the last
             * pixel of the row is done by the scalar loop below. */
            const __m128 VA = _mm_setr_ps(A[0], A[1], A[2], 0),
                         VB = _mm_setr_ps(B[0], B[1], B[2], 0);
            for (; ox < OW - 1; ox++) {
                __m128 a = _mm_loadu_ps(tmp + ct[2 * ox]), b = _mm_loadu_ps(tmp + ct[2 * ox + 1]);
                __m128 v = _mm_add_ps(a, _mm_mul_ps(_mm_set1_ps(cw[ox]), _mm_sub_ps(b, a)));
                _mm_storeu_ps(o + 3 * ox, _mm_add_ps(_mm_mul_ps(v, VA), VB));
            }
#endif
            for (; ox < OW; ox++) {
                const float *q0 = tmp + ct[2 * ox], *q1 = tmp + ct[2 * ox + 1];
                float wx = cw[ox];
                o[3 * ox + 0] = (q0[0] + wx * (q1[0] - q0[0])) * A[0] + B[0];
                o[3 * ox + 1] = (q0[1] + wx * (q1[1] - q0[1])) * A[1] + B[1];
                o[3 * ox + 2] = (q0[2] + wx * (q1[2] - q0[2])) * A[2] + B[2];
            }
        } else {
            for (int ox = 0; ox < OW; ox++) {
                float q0 = tmp[ct[2 * ox]], q1 = tmp[ct[2 * ox + 1]];
                o[ox] = (q0 + cw[ox] * (q1 - q0)) * A[0] + B[0];
            }
        }
    row_done:;
#ifdef __AVX__
        if (stream) {
            float *dst = out + (size_t)oy * rowlen;
            for (size_t k = 0; k < rowlen; k += 8)
                _mm256_stream_ps(dst + k, _mm256_load_ps(s->row + k));
        }
#endif
    }
#ifdef __AVX__
    if (stream)
        _mm_sfence();
#endif
    trace_event(r, SLIM_STAGE_RESIZE, t0, slim__now());
    r->materialized = true;
    for (int c = 0; c < C; c++) {
        r->a[c] = 1;
        r->b[c] = 0;
    }
    return SLIM_OK;
}

/* ---- pixel steps ------------------------------------------------------------ */

static void fold(run *r, const double *mul, int nmul, const double *add, int nadd)
{
    for (int c = 0; c < r->C; c++) {
        double m = mul ? mul[nmul > 1 ? c : 0] : 1.0, k = add ? add[nadd > 1 ? c : 0] : 0.0;
        r->a[c] *= m;
        r->b[c] = r->b[c] * m + k;
    }
}

/* Make the output hold the current values (resample, or apply what is pending). */
static slim_status flush(run *r)
{
    if (!r->materialized)
        return materialize(r);
    bool ident = true;
    for (int c = 0; c < r->C; c++)
        ident = ident && r->a[c] == 1 && r->b[c] == 0;
    if (ident && !r->clamp)
        return SLIM_OK;
    size_t n = (size_t)r->g.vw * r->g.vh;
    int C = r->C;
    float A[4], B[4];
    for (int c = 0; c < C; c++) {
        A[c] = (float)r->a[c];
        B[c] = (float)r->b[c];
        r->a[c] = 1;
        r->b[c] = 0;
    }
    float *o = r->out;
    if (r->clamp) { /* clip then affine in one pass (distort_color's clip, then normalize) */
        float lo = r->lo, hi = r->hi;
        r->clamp = false;
        if (C == 3) {
            for (size_t i = 0; i < n; i++)
                for (int c = 0; c < 3; c++) {
                    float v = o[i * 3 + c];
                    v = v < lo ? lo : v > hi ? hi : v;
                    o[i * 3 + c] = v * A[c] + B[c];
                }
        } else {
            for (size_t i = 0; i < n * (size_t)C; i++) {
                float v = o[i];
                v = v < lo ? lo : v > hi ? hi : v;
                o[i] = v * A[i % (size_t)C] + B[i % (size_t)C];
            }
        }
        return SLIM_OK;
    }
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < C; c++)
            o[i * C + c] = o[i * C + c] * A[c] + B[c];
    return SLIM_OK;
}

/* Clip: resample / apply what is pending, then keep the clamp pending so the
 * next affine steps share its pass. */
static slim_status clip_later(run *r, float lo, float hi)
{
    slim_status st = flush(r);
    if (st)
        return st;
    r->clamp = true;
    r->lo = lo;
    r->hi = hi;
    return SLIM_OK;
}

static size_t npix(const run *r)
{
    return (size_t)r->g.vw * r->g.vh;
}

/* One primitive color step (draws with counter base k). */
enum { C_BRIGHT, C_SAT, C_HUE, C_CONTRAST };

static slim_status color_step(run *r, int step, int k, int what, double lo, double hi)
{
    double x = lo + (hi - lo) * unif(r, step, k);
    switch (what) {
    case C_BRIGHT:
        r->tr->brightness = x;
        fold(r, NULL, 0, &x, 1);
        return SLIM_OK;
    case C_SAT: r->tr->saturation = x; break;
    case C_HUE: r->tr->hue = x; break;
    default: r->tr->contrast = x; break;
    }
    slim_status st = flush(r);
    if (st)
        return st;
    if (what == C_SAT)
        slim__px_saturation(r->out, npix(r), (float)x);
    else if (what == C_HUE)
        slim__px_hue(r->out, npix(r), (float)x);
    else
        slim__px_contrast(r->out, npix(r), r->C, (float)x);
    return SLIM_OK;
}

static slim_status distort_color(run *r, int step, const prep_step *s)
{
    /* inception_preprocessing.distort_color: the orderings, then clip to [0, 1]. */
    static const int fast[2][2] = {{C_BRIGHT, C_SAT}, {C_SAT, C_BRIGHT}};
    static const int full[4][4] = {{C_BRIGHT, C_SAT, C_HUE, C_CONTRAST},
                                   {C_SAT, C_BRIGHT, C_CONTRAST, C_HUE},
                                   {C_CONTRAST, C_HUE, C_BRIGHT, C_SAT},
                                   {C_HUE, C_SAT, C_CONTRAST, C_BRIGHT}};
    int cases = s->fast_mode ? 1 : 4; /* TF-Slim: num_distort_cases = 1 if fast_mode else 4 */
    int ord = s->ordering >= 0 ? s->ordering : uniform_int(r, step, 63, cases);
    if (s->fast_mode && ord > 1)
        ord = 1;
    r->tr->color_ordering = ord;
    int n = s->fast_mode ? 2 : 4;
    for (int i = 0; i < n; i++) {
        int what = s->fast_mode ? fast[ord][i] : full[ord][i];
        double lo, hi;
        switch (what) {
        case C_BRIGHT: lo = -32.0 / 255, hi = 32.0 / 255; break;
        case C_SAT: lo = 0.5, hi = 1.5; break;
        case C_HUE: lo = -0.2, hi = 0.2; break;
        default: lo = 0.5, hi = 1.5; break;
        }
        slim_status st = color_step(r, step, i, what, lo, hi);
        if (st)
            return st;
    }
    return clip_later(r, 0, 1);
}

static slim_status pixel_step(run *r, int i, const prep_step *s)
{
    slim_status st = SLIM_OK;
    switch (s->op) {
    case PREP_CONVERT_TO_FLOAT: {
        double m = 1.0 / 255.0;
        fold(r, &m, 1, NULL, 0);
        break;
    }
    case PREP_TO_FLOAT: break;
    case PREP_NORMALIZE: {
        double add[4];
        int nadd = s->nv > s->nmul ? s->nv : s->nmul;
        for (int c = 0; c < nadd; c++)
            add[c] = -s->v[s->nv > 1 ? c : 0] * s->mul[s->nmul > 1 ? c : 0];
        fold(r, s->mul, s->nmul, NULL, 0);
        fold(r, NULL, 0, add, nadd);
        break;
    }
    case PREP_SUBTRACT_MEAN: {
        double add[4];
        for (int c = 0; c < s->nv; c++)
            add[c] = -s->v[c];
        fold(r, NULL, 0, add, s->nv);
        break;
    }
    case PREP_BRIGHTNESS: st = color_step(r, i, 0, C_BRIGHT, -s->delta, s->delta); break;
    case PREP_SATURATION: st = color_step(r, i, 0, C_SAT, s->lo, s->hi); break;
    case PREP_HUE: st = color_step(r, i, 0, C_HUE, -s->delta, s->delta); break;
    case PREP_CONTRAST: st = color_step(r, i, 0, C_CONTRAST, s->lo, s->hi); break;
    case PREP_DISTORT_COLOR: st = distort_color(r, i, s); break;
    case PREP_CLIP: st = clip_later(r, (float)s->lo, (float)s->hi); break;
    case PREP_STANDARDIZE:
        st = flush(r);
        if (!st)
            slim__px_standardize(r->out, npix(r) * (size_t)r->C);
        break;
    case PREP_GRAYSCALE: /* tf.image.rgb_to_grayscale's weights; one channel is gray already */
        st = flush(r);
        if (!st && r->C == 3)
            for (size_t k = 0, n = npix(r); k < n; k++) {
                float *px = r->out + 3 * k;
                px[0] = px[1] = px[2] = 0.2989f * px[0] + 0.5870f * px[1] + 0.1140f * px[2];
            }
        break;
    default: break;
    }
    return st;
}

/* ---- sources ------------------------------------------------------------------ */

static slim_status load_png(run *r, int *H, int *W)
{
    if (!r->s->png && !(r->s->png = slim__png_new()))
        return slim__error(r->err, SLIM_ENOMEM, "out of memory");
    int c;
    slim_status st = slim__png_decode(r->s->png, r->in->data, r->in->len, r->name, r->C, &r->s->img,
                                      &r->s->img_cap, H, W, &c, r->err);
    if (st)
        return st;
    r->mem_u8 = r->s->img;
    r->mem_stride = (size_t)*W * r->C;
    return SLIM_OK;
}

/* Raw pixels with c channels into r->C channels (in scratch when they differ). */
static slim_status load_raw(run *r)
{
    const prep_input *in = r->in;
    size_t es = in->raw_f32 ? 4 : 1, n = (size_t)in->raw_h * in->raw_w;
    if (in->raw_h <= 0 || in->raw_w <= 0 || (in->raw_c != 1 && in->raw_c != 3) ||
        in->len != n * in->raw_c * es)
        return slim__error(
            r->err, SLIM_ECORRUPT, "%s: %zu bytes of raw pixels do not make a %dx%dx%d %s image",
            r->name, in->len, in->raw_h, in->raw_w, in->raw_c, in->raw_f32 ? "float" : "uint8");
    if (in->raw_c == r->C) {
        if (in->raw_f32)
            r->mem_f32 = (const float *)in->data;
        else
            r->mem_u8 = in->data;
        r->mem_stride = (size_t)in->raw_w * r->C;
        return SLIM_OK;
    }
    r->s->img = grow(r->s->img, &r->s->img_cap, n * r->C * es + 64);
    if (!r->s->img)
        return slim__error(r->err, SLIM_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (in->raw_f32) {
            const float *src = (const float *)in->data;
            float *dst = (float *)r->s->img;
            if (r->C == 3)
                dst[3 * i] = dst[3 * i + 1] = dst[3 * i + 2] = src[i];
            else
                dst[i] = 0.2989f * src[3 * i] + 0.5870f * src[3 * i + 1] + 0.1140f * src[3 * i + 2];
        } else {
            const uint8_t *src = in->data;
            uint8_t *dst = r->s->img;
            if (r->C == 3)
                dst[3 * i] = dst[3 * i + 1] = dst[3 * i + 2] = src[i];
            else
                dst[i] = (uint8_t)(0.2989f * src[3 * i] + 0.5870f * src[3 * i + 1] +
                                   0.1140f * src[3 * i + 2] + 0.5f);
        }
    }
    if (in->raw_f32)
        r->mem_f32 = (const float *)r->s->img;
    else
        r->mem_u8 = r->s->img;
    r->mem_stride = (size_t)in->raw_w * r->C;
    return SLIM_OK;
}

static slim_status open_source(run *r, bool exif, int *H, int *W)
{
    const prep_input *in = r->in;
    if (in->raw) {
        *H = in->raw_h;
        *W = in->raw_w;
        return load_raw(r);
    }
    switch (slim_image_sniff(in->data, in->len)) {
    case SLIM_IMAGE_PNG: return load_png(r, H, W);
    case SLIM_IMAGE_JPEG: {
        int comps, orient = 1;
        slim_status st = slim__jpeg_header(r->s->jpeg, in->data, in->len, r->name, exif, H, W,
                                           &comps, &orient, r->err);
        if (st)
            return st;
        if (orient == 1) {
            r->lazy_jpeg = true;
            return SLIM_OK;
        }
        /* EXIF rotation: decode the whole image, orient it, sample from memory. */
        const uint8_t *px;
        size_t stride;
        int bx, bw;
        st = slim__jpeg_decode(r->s->jpeg, 1, r->C, 0, 0, *W, *H, &px, &stride, &bx, &bw, r->err);
        if (st)
            return st;
        slim_image img = {.height = *H, .width = *W, .channels = r->C};
        img.data = malloc((size_t)*H * *W * r->C + 1);
        if (!img.data)
            return slim__error(r->err, SLIM_ENOMEM, "out of memory");
        for (int y = 0; y < *H; y++)
            memcpy(img.data + (size_t)y * *W * r->C, px + (size_t)y * stride, (size_t)*W * r->C);
        st = slim__image_orient(&img, orient, r->err);
        if (!st) {
            free(r->s->img);
            r->s->img = img.data;
            r->s->img_cap = (size_t)img.height * img.width * r->C + 1;
            *H = img.height;
            *W = img.width;
            r->mem_u8 = r->s->img;
            r->mem_stride = (size_t)*W * r->C;
        } else {
            slim_image_fini(&img);
        }
        return st;
    }
    default: {
        return slim__not_an_image(r->err, r->name, in->data, in->len);
    }
    }
}

/* A pixel step (or the final flush when s is NULL), timed as COLOR minus
 * whatever resampling it triggered. */
static slim_status timed_pixel(run *r, int i, const prep_step *s)
{
    double t0 = slim__now();
    double before =
        r->tr->t[SLIM_STAGE_DECODE] + r->tr->t[SLIM_STAGE_CROP] + r->tr->t[SLIM_STAGE_RESIZE];
    slim_status st = s ? pixel_step(r, i, s) : flush(r);
    double t1 = slim__now();
    double inner = r->tr->t[SLIM_STAGE_DECODE] + r->tr->t[SLIM_STAGE_CROP] +
                   r->tr->t[SLIM_STAGE_RESIZE] - before;
    double dt = t1 - t0 - inner;
    if (dt > 2e-7)
        trace_event(r, SLIM_STAGE_COLOR, t1 - dt, t1);
    return st;
}

slim_status slim__prep_run(const slim__prep *p, slim__prep_scratch *s, const prep_input *in,
                           uint64_t seed, int64_t epoch, int64_t index, float *out, prep_trace *tr,
                           slim_error *err)
{
    prep_trace local;
    if (!tr)
        tr = &local;
    memset(tr, 0, sizeof *tr);
    tr->saturation = tr->contrast = 1;
    run r = {.p = p,
             .s = s,
             .in = in,
             .name = in->name ? in->name : "image",
             .seed = seed,
             .C = p->channels,
             .out = out,
             .tr = tr,
             .err = err};
    r.stream = slim_rand_u64(0x5eedULL, (uint64_t)epoch, (uint64_t)index);
    for (int c = 0; c < 4; c++) {
        r.a[c] = 1;
        r.b[c] = 0;
    }
    const prep_step *dec = p->n > 0 && p->steps[0].op == PREP_DECODE ? &p->steps[0] : NULL;
    bool exif = dec && dec->exif;
    if (s->jpeg) {
        slim__jpeg_set_method(s->jpeg, dec && dec->fast_dct, !(dec && dec->plain_upsampling));
        slim__jpeg_set_recover_truncated(s->jpeg, dec && dec->recover_truncated);
    }
    double t0 = slim__now();
    int H, W;
    slim_status st = open_source(&r, exif, &H, &W);
    trace_event(&r, SLIM_STAGE_DECODE, t0, slim__now());
    if (st)
        return st;
    tr->src_h = H;
    tr->src_w = W;
    r.g = (geom){.W0 = W, .H0 = H, .ww = W, .wh = H, .rw = W, .rh = H, .vw = W, .vh = H};
    for (int i = 0; i < p->n && !st; i++) {
        const prep_step *sp = &p->steps[i];
        if (sp->op == PREP_DECODE)
            continue;
        switch (sp->op) {
        case PREP_CENTRAL_CROP:
        case PREP_DISTORTED_BBOX_CROP:
        case PREP_RANDOM_CROP:
        case PREP_CENTRAL_CROP_TO:
        case PREP_RESIZE:
        case PREP_ASPECT_RESIZE:
        case PREP_CROP_OR_PAD:
        case PREP_PAD:
        case PREP_FLIP: st = geometry_step(&r, i, sp); break;
        default: st = timed_pixel(&r, i, sp); break;
        }
    }
    r.stream_out = true; /* the final flush: nothing reads the output after it */
    if (!st)
        st = timed_pixel(&r, -1, NULL);
    return st;
}
