/*
 * tests/fuzz/jpeg.c - any bytes as a JPEG: sniffing and probing, the header
 * with EXIF orientation, whole, region-of-interest and DCT-scaled decodes
 * (both decoder settings, 1/3/4 channels), the orientation transform, and the
 * lossless restart-marker transcode of `slimrun convert` with crops through
 * its index (the cut path).
 *
 * data[0] is the options, the rest the file:
 *   bits 0-1  DCT scale 1/1, 1/2, 1/4, 1/8     bits 2-3  channels 3, 1, 3, 4
 *   bit 4     INTEGER_FAST DCT                 bit 5     box chroma upsampling
 *   bit 6     EXIF orientation                 bit 7     transcode, crop the result
 * Properties, when libjpeg itself decodes the file without a warning (a
 * reference decode here): slim's whole decode equals libjpeg's pixel for
 * pixel; every crop equals the whole decode's region (but the two columns at
 * an inner edge of a plain ROI decode, where libjpeg's upsampling sees
 * another neighbour), through the index exactly; the transcode decodes to the
 * same pixels as the source, and crops of it through the index equal its
 * whole decode; the decoder (reused between images, as in the pipeline)
 * decodes the image to the same pixels after all that. Whatever the file,
 * nothing crashes and errors say why.
 *
 * tests/fuzz/jpeg_transcode.c is the same harness forced to transcode and to
 * cut small regions.
 */
#include "datasets/image.h"
#include "datasets/jpeg_index.h"
#include "tests/fuzz/fuzz.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

#ifndef JPEG_ALWAYS_TRANSCODE
#define JPEG_ALWAYS_TRANSCODE 0
#endif
/* Images above this are probed but not decoded (time per input). */
#define MAX_DECODE_PIXELS (1 << 22)

/* ---- the reference: libjpeg straight ---------------------------------------------- */

typedef struct ref_err {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
    int warnings;
} ref_err;

static void ref_error_exit(j_common_ptr c)
{
    longjmp(((ref_err *)c->err)->jb, 1);
}

static void ref_emit(j_common_ptr c, int level)
{
    if (level < 0)
        ((ref_err *)c->err)->warnings++;
}

static void ref_output(j_common_ptr c)
{
    (void)c;
}

typedef struct ref_image {
    uint8_t *px; /* rows of w * channels bytes */
    int w, h, channels;
    int warnings;
    bool cmyk;
} ref_image;

/* The whole image as slim decodes it (same settings); false on an error. */
static bool ref_decode(const uint8_t *d, size_t n, int denom, int channels, bool fast, bool plain,
                       ref_image *out)
{
    struct jpeg_decompress_struct ci;
    ref_err e = {0};
    memset(out, 0, sizeof *out);
    ci.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = ref_error_exit;
    e.pub.emit_message = ref_emit;
    e.pub.output_message = ref_output;
    uint8_t *volatile px = NULL;
    if (setjmp(e.jb)) {
        jpeg_destroy_decompress(&ci);
        free(px);
        out->px = NULL;
        return false;
    }
    jpeg_create_decompress(&ci);
    jpeg_mem_src(&ci, d, (unsigned long)n);
    jpeg_read_header(&ci, TRUE);
    out->cmyk = ci.jpeg_color_space == JCS_CMYK || ci.jpeg_color_space == JCS_YCCK;
    ci.out_color_space = out->cmyk       ? JCS_CMYK
                         : channels == 1 ? JCS_GRAYSCALE
                         : channels == 4 ? JCS_EXT_RGBX
                                         : JCS_RGB;
    ci.scale_num = 1;
    ci.scale_denom = (unsigned)denom;
    ci.dct_method = fast ? JDCT_IFAST : JDCT_ISLOW;
    ci.do_fancy_upsampling = plain ? FALSE : TRUE;
    jpeg_start_decompress(&ci);
    int w = (int)ci.output_width, h = (int)ci.output_height, oc = ci.output_components;
    px = malloc((size_t)w * (size_t)h * (size_t)oc + 1);
    if (!px)
        longjmp(e.jb, 1);
    while ((int)ci.output_scanline < h) {
        JSAMPROW row = px + (size_t)ci.output_scanline * (size_t)w * (size_t)oc;
        if (jpeg_read_scanlines(&ci, &row, 1) != 1)
            longjmp(e.jb, 1);
    }
    jpeg_finish_decompress(&ci);
    jpeg_destroy_decompress(&ci);
    out->px = px;
    out->w = w;
    out->h = h;
    out->channels = oc;
    out->warnings = e.warnings;
    return true;
}

/* n pixels of c channels alike; of RGBX only RGB (libjpeg leaves X unwritten). */
static bool same_px(const uint8_t *a, const uint8_t *b, size_t n, int c)
{
    if (c != 4)
        return !memcmp(a, b, n * (size_t)c);
    for (size_t i = 0; i < n; i++)
        if (memcmp(a + 4 * i, b + 4 * i, 3))
            return false;
    return true;
}

/* ---- slim's decodes ------------------------------------------------------------------ */

typedef struct setting {
    int denom, channels;
    bool fast, plain;
} setting;

/* The whole image through slim (a copy, w * channels bytes a row). */
static uint8_t *slim_whole(slim__jpeg *j, const uint8_t *d, size_t n, const setting *s, int *w,
                           int *h)
{
    int H, W, comps;
    slim_error err = {0};
    if (slim__jpeg_header(j, d, n, "whole", false, &H, &W, &comps, NULL, &err))
        return NULL;
    slim__jpeg_scaled_size(j, s->denom, h, w);
    const uint8_t *px;
    size_t stride;
    int bx, bw;
    if (slim__jpeg_decode(j, s->denom, s->channels, 0, 0, *w, *h, &px, &stride, &bx, &bw, &err)) {
        FUZZ_CHECK(err.msg[0], "a failed decode says why");
        return NULL;
    }
    FUZZ_CHECK(bx == 0 && bw == *w, "the whole image is decoded whole (%d+%d of %d)", bx, bw, *w);
    size_t row = (size_t)*w * (size_t)s->channels;
    uint8_t *out = malloc(row * (size_t)*h + 1);
    for (int y = 0; y < *h; y++)
        memcpy(out + (size_t)y * row, px + (size_t)y * stride, row);
    return out;
}

/* Crops of d at setting s against whole (the whole decode, w x h), when
 * given: pixel for pixel. Regions are at most max_side pixels a side. */
static void check_crops(slim__jpeg *j, const uint8_t *d, size_t n, const setting *s,
                        const uint8_t *whole, int w, int h, int count, int max_side, fuzz_rng *rng)
{
    size_t row = (size_t)w * (size_t)s->channels;
    for (int t = 0; t < count; t++) {
        int x0 = fuzz_below(rng, w), y0 = fuzz_below(rng, h);
        int x1 = x0 + 1 + fuzz_below(rng, w - x0 < max_side ? w - x0 : max_side);
        int y1 = y0 + 1 + fuzz_below(rng, h - y0 < max_side ? h - y0 : max_side);
        int H, W, comps;
        slim_error err = {0};
        if (slim__jpeg_header(j, d, n, "crop", false, &H, &W, &comps, NULL, &err)) {
            FUZZ_CHECK(!whole, "the header read again: %s", err.msg);
            return;
        }
        const uint8_t *px;
        size_t stride;
        int bx, bw;
        slim_status st = slim__jpeg_decode(j, s->denom, s->channels, x0, y0, x1, y1, &px, &stride,
                                           &bx, &bw, &err);
        if (st) {
            FUZZ_CHECK(!whole, "crop %d,%d..%d,%d of %dx%d fails where the whole image decodes: %s",
                       x0, y0, x1, y1, w, h, err.msg);
            FUZZ_CHECK(err.msg[0], "a failed decode says why");
            continue;
        }
        FUZZ_CHECK(bx <= x0 && bx + bw >= x1, "the rows returned (%d+%d) cover %d..%d", bx, bw, x0,
                   x1);
        if (!whole)
            continue;
        bool cut = slim__jpeg_last_cut(j);
        /* A plain ROI decode: libjpeg's upsampling treats the crop's inner edges
         * as image edges (2 columns); a cut is exact. */
        int cx0 = x0, cx1 = x1;
        if (!cut && bx > 0 && cx0 < bx + 2)
            cx0 = bx + 2;
        if (!cut && bx + bw < w && cx1 > bx + bw - 2)
            cx1 = bx + bw - 2;
        for (int y = y0; y < y1 && cx0 < cx1; y++) {
            const uint8_t *a = px + (size_t)(y - y0) * stride + (size_t)(cx0 - bx) * s->channels;
            const uint8_t *b = whole + (size_t)y * row + (size_t)cx0 * s->channels;
            FUZZ_CHECK(same_px(a, b, (size_t)(cx1 - cx0), s->channels),
                       "crop %d,%d..%d,%d (1/%d, %d channels, %s%s) row %d equals the whole "
                       "decode",
                       x0, y0, x1, y1, s->denom, s->channels, cut ? "cut" : "ROI",
                       s->fast ? ", fast" : "", y);
        }
    }
}

/* slim's whole decode against the reference; returns it (or NULL). */
static uint8_t *whole_checked(slim__jpeg *j, const uint8_t *d, size_t n, const setting *s, int *w,
                              int *h, bool *clean)
{
    ref_image ref;
    bool ref_ok = ref_decode(d, n, s->denom, s->channels, s->fast, s->plain, &ref);
    uint8_t *whole = slim_whole(j, d, n, s, w, h);
    *clean = ref_ok && ref.warnings == 0 && !ref.cmyk;
    if (*clean) {
        FUZZ_CHECK(whole, "slim decodes what libjpeg decodes without a warning");
        FUZZ_CHECK(ref.w == *w && ref.h == *h && ref.channels == s->channels,
                   "the size: %dx%dx%d, libjpeg %dx%dx%d", *w, *h, s->channels, ref.w, ref.h,
                   ref.channels);
        size_t total = (size_t)*w * (size_t)*h * (size_t)s->channels, i = 0;
        while (i < total && (whole[i] == ref.px[i] || (s->channels == 4 && i % 4 == 3)))
            i++;
        FUZZ_CHECK(i == total,
                   "slim's whole decode (1/%d, %d channels, %dx%d) equals libjpeg's: byte %zu "
                   "is %d, libjpeg's %d",
                   s->denom, s->channels, *w, *h, i, i < total ? whole[i] : 0,
                   i < total ? ref.px[i] : 0);
    }
    free(ref.px);
    return whole;
}

static void check_orientation(const uint8_t *d, size_t n, const setting *s)
{
    slim_decode_opts o = {.channels = s->channels == 4 ? 3 : s->channels,
                          .scale_denom = s->denom,
                          .name = "exif.jpg",
                          .dct_fast = s->fast,
                          .no_fancy_upscaling = s->plain};
    slim_image plain, turned;
    slim_error err = {0};
    if (slim_image_decode(d, n, &o, &plain, &err)) {
        FUZZ_CHECK(strstr(err.msg, "exif.jpg"), "errors name the image: %s", err.msg);
        return;
    }
    o.exif_orientation = true;
    FUZZ_CHECK(slim_image_decode(d, n, &o, &turned, &err) == SLIM_OK, "with EXIF: %s", err.msg);
    slim__jpeg *j = slim__jpeg_new();
    int H, W, comps, orient;
    FUZZ_CHECK(!slim__jpeg_header(j, d, n, NULL, true, &H, &W, &comps, &orient, &err), "%s",
               err.msg);
    slim__jpeg_free(j);
    FUZZ_CHECK(orient >= 1 && orient <= 8, "orientation %d", orient);
    bool swap = orient >= 5;
    FUZZ_CHECK(turned.width == (swap ? plain.height : plain.width) &&
                   turned.height == (swap ? plain.width : plain.height) &&
                   turned.channels == plain.channels,
               "orientation %d: %dx%d from %dx%d", orient, turned.width, turned.height, plain.width,
               plain.height);
    /* The corner pixel (0, 0) of the turned image comes from the corner the
     * orientation names. */
    int X = plain.width - 1, Y = plain.height - 1, sx = 0, sy = 0;
    switch (orient) {
    case 2: sx = X; break;
    case 3: sx = X, sy = Y; break;
    case 4: sy = Y; break;
    case 6: sy = Y; break;
    case 7: sx = X, sy = Y; break;
    case 8: sx = X; break;
    default: break;
    }
    FUZZ_CHECK(!memcmp(turned.data, plain.data + ((size_t)sy * plain.width + sx) * plain.channels,
                       (size_t)plain.channels),
               "orientation %d moves the right corner to (0, 0)", orient);
    slim_image_fini(&plain);
    slim_image_fini(&turned);
}

static void check_transcode(slim__jpeg *j, const uint8_t *d, size_t n, const setting *s,
                            bool src_clean, const uint8_t *src_whole, int src_w, int src_h,
                            int max_side, fuzz_rng *rng)
{
    uint8_t *idx = NULL;
    size_t in = 0;
    slim_error err = {0};
    if (slim__jpeg_add_restarts(d, n, "t.jpg", &idx, &in, &err)) {
        FUZZ_CHECK(strstr(err.msg, "t.jpg"), "transcode errors name the file: %s", err.msg);
        return;
    }
    if (!idx)
        return; /* kept as it is */
    FUZZ_CHECK(slim__jpeg_is_indexed(idx, in), "the transcode is restart-indexed");
    int w, h;
    bool clean;
    uint8_t *whole = whole_checked(j, idx, in, s, &w, &h, &clean);
    if (src_clean && src_whole) {
        FUZZ_CHECK(whole, "the transcode of a clean file decodes");
        FUZZ_CHECK(w == src_w && h == src_h, "the transcode is %dx%d, the source %dx%d", w, h,
                   src_w, src_h);
        FUZZ_CHECK(same_px(whole, src_whole, (size_t)w * (size_t)h, s->channels),
                   "the transcode decodes to the source's pixels (1/%d, %d channels)", s->denom,
                   s->channels);
    }
    /* Again: an indexed file is kept. */
    uint8_t *again = NULL;
    size_t an = 0;
    FUZZ_CHECK(slim__jpeg_add_restarts(idx, in, "t.jpg", &again, &an, &err) == SLIM_OK && !again,
               "an indexed file is kept as it is");
    if (whole || !clean)
        check_crops(j, idx, in, s, clean ? whole : NULL, w, h, 4, max_side, rng);
    free(whole);
    free(idx);
}

static slim__jpeg *dec;

static int one(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t opt = data[0];
    const uint8_t *d = data + 1;
    size_t n = size - 1;
    static const int chans[4] = {3, 1, 3, 4};
    setting s = {1 << (opt & 3), chans[(opt >> 2) & 3], (opt >> 4) & 1, (opt >> 5) & 1};
    bool exif = (opt >> 6) & 1, transcode = JPEG_ALWAYS_TRANSCODE || (opt >> 7);
    fuzz_rng rng = fuzz_rng_from(data, size);
    if (!dec)
        dec = slim__jpeg_new();
    slim__jpeg_set_method(dec, s.fast, !s.plain);

    int H, W, C;
    slim_error err = {0};
    slim_image_format f = slim_image_sniff(d, n);
    slim_status st = slim_image_probe(d, n, "p.jpg", &H, &W, &C, &err);
    if (st) {
        FUZZ_CHECK(strstr(err.msg, "p.jpg"), "probe errors name the file: %s", err.msg);
        if (f != SLIM_IMAGE_JPEG)
            return 0;
    }
    int comps, orient = 1;
    if (slim__jpeg_header(dec, d, n, "h.jpg", exif, &H, &W, &comps, &orient, &err)) {
        FUZZ_CHECK(strstr(err.msg, "h.jpg"), "header errors name the file: %s", err.msg);
        return 0;
    }
    FUZZ_CHECK(!st, "probe agrees with the header");
    FUZZ_CHECK(orient >= 1 && orient <= 8, "orientation %d", orient);
    if ((int64_t)W * H > MAX_DECODE_PIXELS)
        return 0;
    int w, h;
    bool clean;
    uint8_t *whole = whole_checked(dec, d, n, &s, &w, &h, &clean);
    int max_side = JPEG_ALWAYS_TRANSCODE ? 16 : 1 << 16;
    if (!JPEG_ALWAYS_TRANSCODE && (whole || !clean))
        check_crops(dec, d, n, &s, clean ? whole : NULL, w, h, 3, max_side, &rng);
    if (exif)
        check_orientation(d, n, &s);
    if (transcode)
        check_transcode(dec, d, n, &s, clean, whole, w, h, max_side, &rng);
    if (whole) { /* the decoder is reused: what it decoded before must not matter */
        int w2, h2;
        uint8_t *again = slim_whole(dec, d, n, &s, &w2, &h2);
        FUZZ_CHECK(again && w2 == w && h2 == h &&
                       same_px(again, whole, (size_t)w * (size_t)h, s.channels),
                   "the same image decoded again by the same decoder is the same");
        free(again);
    }
    free(whole);
    return 0;
}

/* ---- seeds ------------------------------------------------------------------------ */

typedef struct layout {
    int w, h, comps, hs, vs;
    bool progressive, arith;
    int restart;       /* restart interval in MCUs (0 = none) */
    int orientation;   /* EXIF (0 = no APP1) */
    size_t big_marker; /* a COM segment this long (the transcode's buffer grows) */
} layout;

static void exif_app1(uint8_t *b, int orientation)
{
    /* "Exif\0\0", big-endian TIFF header, IFD0 with one entry: Orientation (SHORT). */
    static const uint8_t head[] = {'E', 'x', 'i', 'f', 0,    0,    'M', 'M', 0, 42, 0, 0,
                                   0,   8,   0,   1,   0x01, 0x12, 0,   3,   0, 0,  0, 1};
    memcpy(b, head, sizeof head);
    b[24] = 0;
    b[25] = (uint8_t)orientation;
    b[26] = b[27] = 0;
    b[28] = b[29] = b[30] = b[31] = 0; /* no next IFD */
}

static uint8_t *make_jpeg(const layout *l, size_t *len)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    unsigned char *buf = NULL;
    unsigned long n = 0;
    jpeg_mem_dest(&c, &buf, &n);
    c.image_width = (JDIMENSION)l->w;
    c.image_height = (JDIMENSION)l->h;
    c.input_components = l->comps == 1 ? 1 : l->comps == 4 ? 4 : 3;
    c.in_color_space = l->comps == 1 ? JCS_GRAYSCALE : l->comps == 4 ? JCS_CMYK : JCS_RGB;
    jpeg_set_defaults(&c);
    if (l->comps == 4)
        jpeg_set_colorspace(&c, JCS_YCCK);
    jpeg_set_quality(&c, 75, TRUE);
    c.comp_info[0].h_samp_factor = l->hs;
    c.comp_info[0].v_samp_factor = l->vs;
    c.restart_interval = (unsigned)l->restart;
    c.arith_code = l->arith;
    if (l->progressive)
        jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    if (l->orientation) {
        uint8_t app1[32];
        exif_app1(app1, l->orientation);
        jpeg_write_marker(&c, JPEG_APP0 + 1, app1, sizeof app1);
    }
    if (l->big_marker) {
        uint8_t *com = malloc(l->big_marker);
        memset(com, 'c', l->big_marker);
        jpeg_write_marker(&c, JPEG_COM, com, (unsigned)l->big_marker);
        free(com);
    }
    int ic = c.input_components;
    uint8_t *row = malloc((size_t)l->w * (size_t)ic);
    uint64_t r = 88172645463325252ull;
    for (int y = 0; y < l->h; y++) {
        for (int x = 0; x < l->w; x++)
            for (int k = 0; k < ic; k++) {
                r ^= r << 13, r ^= r >> 7, r ^= r << 17;
                int v = (x * (3 + k) + y * (5 - k)) % 256 + (int)(r % 48) - 24;
                row[x * ic + k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        JSAMPROW rp = row;
        jpeg_write_scanlines(&c, &rp, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(row);
    *len = n;
    return buf;
}

static void shared_jpeg(fuzz_seeds *s, const uint8_t *d, size_t n, const char *name)
{
    (void)name;
    fuzz_seed_opt(s, 0x00, d, n);
    fuzz_seed_opt(s, 0x80 | 0x40 | 0x05, d, n);
}

static void jpeg_seeds(fuzz_seeds *s, size_t max_len)
{
    static const layout layouts[] = {
        {33, 17, 3, 2, 2, false, false, 0, 0, 0},    {40, 24, 3, 2, 1, false, false, 0, 6, 0},
        {24, 24, 3, 1, 1, false, false, 1, 0, 0},    {29, 13, 1, 1, 1, false, false, 0, 3, 0},
        {48, 32, 3, 2, 2, true, false, 0, 8, 0},     {20, 20, 3, 2, 2, false, true, 0, 0, 0},
        {17, 9, 4, 1, 1, false, false, 0, 0, 0},     {64, 16, 3, 4, 1, false, false, 2, 5, 0},
        {16, 16, 3, 2, 2, false, false, 0, 0, 5000}, {9, 40, 3, 1, 2, false, false, 0, 7, 0},
    };
    for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++) {
        size_t n;
        uint8_t *b = make_jpeg(&layouts[i], &n);
        for (int opt = 0; opt < 256; opt += 37)
            fuzz_seed_opt(s, (uint8_t)opt, b, n);
        uint8_t *idx = NULL;
        size_t in;
        if (!slim__jpeg_add_restarts(b, n, "seed", &idx, &in, NULL) && idx) {
            fuzz_seed_opt(s, 0x01, idx, in);
            fuzz_seed_opt(s, 0x0c, idx, in);
            free(idx);
        }
        free(b);
    }
    fuzz_each_shared("jpeg/libjpeg-turbo", max_len, shared_jpeg, s);
    fuzz_each_shared("jpeg/pillow", max_len, shared_jpeg, s);
}

#if !JPEG_ALWAYS_TRANSCODE
static void seeds(fuzz_seeds *s)
{
    jpeg_seeds(s, 1 << 16);
}

FUZZ_TARGET(jpeg, .one = one, .seeds = seeds, .max_len = 1 << 16)
#endif
