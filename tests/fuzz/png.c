/*
 * tests/fuzz/png.c - any bytes as a PNG: probing, and decoding through the
 * fast path (8-bit gray/RGB, non-interlaced, a zlib stream reused between
 * images) or libpng for the rest, to 1 or 3 channels or as stored.
 *
 * data[0] is the options, the rest the file: bits 0-1 channels (as stored,
 * 1, 3, 3); bit 2 the decoded image is encoded again and decoded back.
 * Properties: where slim and libpng (its simplified API, here, alpha
 * dropped) both decode the file, the pixels are the same, but for colour to
 * gray, which the fast path does as TensorFlow (ITU-R BT.601) and libpng its
 * own way; the probe
 * agrees with the decode on the size; an encoded image decodes to itself.
 *
 * tests/fuzz/png_crc.c is the same with every chunk's CRC made right first.
 */
#include "datasets/image.h"
#include "tests/fuzz/fuzz.h"

#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#ifndef PNG_FIX_CRCS
#define PNG_FIX_CRCS 0
#endif

static uint32_t be32(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void put_be32(uint8_t *b, uint32_t v)
{
    b[0] = (uint8_t)(v >> 24), b[1] = (uint8_t)(v >> 16), b[2] = (uint8_t)(v >> 8),
    b[3] = (uint8_t)v;
}

/* Every chunk's CRC made right, walking the chunks as their lengths say. */
static void fix_crcs(uint8_t *d, size_t n)
{
    for (size_t at = 8; at + 12 <= n;) {
        uint32_t len = be32(d + at);
        if (len > n - at - 12)
            break;
        put_be32(d + at + 8 + len, (uint32_t)crc32(0, d + at + 4, len + 4));
        at += 12 + (size_t)len;
    }
}

static slim__png *dec;

static int one(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t opt = data[0];
    static const int chans[4] = {0, 1, 3, 3};
    int want = chans[opt & 3];
    size_t n = size - 1;
    uint8_t *d = malloc(n ? n : 1);
    if (n)
        memcpy(d, data + 1, n);
    if (PNG_FIX_CRCS)
        fix_crcs(d, n);
    if (slim_image_sniff(d, n) != SLIM_IMAGE_PNG) { /* callers sniff first */
        slim_image img;
        slim_error err = {0};
        FUZZ_CHECK(slim_image_decode(d, n, NULL, &img, &err) != SLIM_OK || img.data,
                   "a decode either fails or gives pixels");
        slim_image_fini(&img);
        free(d);
        return 0;
    }
    if (!dec)
        dec = slim__png_new();

    uint8_t *out = NULL;
    size_t cap = 0;
    int h, w, c;
    slim_error err = {0};
    slim_status st = slim__png_decode(dec, d, n, "f.png", want, &out, &cap, &h, &w, &c, &err);
    if (st) {
        FUZZ_CHECK(strstr(err.msg, "f.png"), "errors name the file: %s", err.msg);
    } else {
        FUZZ_CHECK(h > 0 && w > 0 && (c == 1 || c == 3) && (!want || c == want), "%dx%dx%d", w, h,
                   c);
        int ph, pw, pc;
        FUZZ_CHECK(slim_image_probe(d, n, "f.png", &ph, &pw, &pc, &err) == SLIM_OK && ph == h &&
                       pw == w && (want || pc == c),
                   "the probe agrees with the decode: %s", err.msg);
    }

    /* libpng, as slim's fallback calls it (after the same check of chunk lengths). */
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    if (!slim__png_check_chunks(d, n, NULL, NULL) && png_image_begin_read_from_memory(&im, d, n)) {
        int stored = (im.format & PNG_FORMAT_FLAG_COLOR) ? 3 : 1, oc = want ? want : stored;
        if ((uint64_t)im.width * im.height <= ((uint64_t)1 << 24)) {
            /* with alpha, then without it (TensorFlow strips alpha) */
            bool alpha = im.format & PNG_FORMAT_FLAG_ALPHA;
            im.format =
                (oc == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB) | (alpha ? PNG_FORMAT_FLAG_ALPHA : 0);
            uint8_t *ref = malloc(PNG_IMAGE_SIZE(im) + 1);
            bool ok = png_image_finish_read(&im, NULL, ref, 0, NULL);
            if (ok && alpha)
                for (size_t i = 0; i < (size_t)im.width * im.height; i++)
                    for (int k = 0; k < oc; k++)
                        ref[i * oc + k] = ref[i * (oc + 1) + k];
            if (ok && !st && !(stored == 3 && oc == 1)) {
                FUZZ_CHECK(im.width == (png_uint_32)w && im.height == (png_uint_32)h && oc == c,
                           "slim %dx%dx%d, libpng %ux%ux%d", w, h, c, im.width, im.height, oc);
                FUZZ_CHECK(!memcmp(out, ref, (size_t)w * h * c),
                           "slim's pixels (%dx%dx%d) equal libpng's", w, h, c);
            }
            free(ref);
        }
        png_image_free(&im);
    }

    if (!st && (opt & 4)) {
        slim_image img = {.height = h, .width = w, .channels = c, .data = out};
        uint8_t *enc;
        size_t elen;
        FUZZ_CHECK(slim_image_encode_png(&img, &enc, &elen, &err) == SLIM_OK, "%s", err.msg);
        uint8_t *back = NULL;
        size_t bcap = 0;
        int bh, bw, bc;
        FUZZ_CHECK(slim__png_decode(dec, enc, elen, "again.png", 0, &back, &bcap, &bh, &bw, &bc,
                                    &err) == SLIM_OK,
                   "an encoded image decodes: %s", err.msg);
        FUZZ_CHECK(bh == h && bw == w && bc == c && !memcmp(back, out, (size_t)w * h * c),
                   "an encoded image decodes to itself");
        free(back);
        free(enc);
    }
    free(out);
    free(d);
    return 0;
}

/* ---- seeds ------------------------------------------------------------------------ */

typedef struct membuf {
    uint8_t *b;
    size_t n, cap;
} membuf;

static void mem_write(png_structp p, png_bytep data, png_size_t len)
{
    membuf *m = png_get_io_ptr(p);
    if (m->n + len > m->cap) {
        m->cap = (m->n + len) * 2;
        m->b = realloc(m->b, m->cap);
    }
    memcpy(m->b + m->n, data, len);
    m->n += len;
}

static void mem_flush(png_structp p)
{
    (void)p;
}

/* A w x h PNG of colour type `type`, `depth` bits, interlaced or not, with a
 * tEXt chunk and small IDAT chunks (several of them). */
static void make_png(fuzz_seeds *s, int w, int h, int type, int depth, bool interlace)
{
    png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(p);
    membuf m = {0};
    if (setjmp(png_jmpbuf(p))) {
        png_destroy_write_struct(&p, &info);
        free(m.b);
        return;
    }
    png_set_write_fn(p, &m, mem_write, mem_flush);
    png_set_IHDR(p, info, (png_uint_32)w, (png_uint_32)h, depth, type,
                 interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_color pal[16];
    for (int i = 0; i < 16; i++)
        pal[i].red = (png_byte)(i * 16), pal[i].green = (png_byte)(255 - i * 16),
        pal[i].blue = (png_byte)(i * 7);
    if (type == PNG_COLOR_TYPE_PALETTE)
        png_set_PLTE(p, info, pal, 16);
    png_text text = {.compression = PNG_TEXT_COMPRESSION_NONE, .key = "Comment", .text = "fuzz"};
    png_set_text(p, info, &text, 1);
    png_set_compression_buffer_size(p, 64); /* several IDAT chunks */
    png_write_info(p, info);
    int ch = type == PNG_COLOR_TYPE_RGB          ? 3
             : type == PNG_COLOR_TYPE_RGB_ALPHA  ? 4
             : type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
                                                 : 1;
    size_t rowbytes = ((size_t)w * ch * depth + 7) / 8;
    uint8_t *row = malloc(rowbytes);
    int passes = interlace ? png_set_interlace_handling(p) : 1;
    for (int pass = 0; pass < passes; pass++)
        for (int y = 0; y < h; y++) {
            for (size_t i = 0; i < rowbytes; i++)
                row[i] = (uint8_t)(type == PNG_COLOR_TYPE_PALETTE ? (i * 17 + y) & 0x77
                                                                  : i * 7 + y * 13);
            png_write_row(p, row);
        }
    png_write_end(p, info);
    png_destroy_write_struct(&p, &info);
    free(row);
    for (int opt = 0; opt < 8; opt++)
        fuzz_seed_opt(s, (uint8_t)opt, m.b, m.n);
    free(m.b);
}

static void shared_pngs(fuzz_seeds *s, const uint8_t *d, size_t n, const char *name)
{
    (void)name;
    size_t p = 0;
    while (p + 16 <= n) {
        uint64_t len = 0;
        for (int i = 7; i >= 0; i--)
            len = len << 8 | d[p + i];
        if (len > n - p - 16)
            break;
        slim_example *ex;
        const uint8_t *img;
        size_t ilen;
        if (!slim_example_parse(d + p + 12, (size_t)len, &ex, NULL)) {
            if (!slim_example_bytes(ex, "image/encoded", 0, &img, &ilen) &&
                slim_image_sniff(img, ilen) == SLIM_IMAGE_PNG) {
                fuzz_seed_opt(s, 0, img, ilen);
                fuzz_seed_opt(s, 5, img, ilen);
            }
            slim_example_free(ex);
        }
        p += 16 + (size_t)len;
    }
}

static void png_seeds(fuzz_seeds *s)
{
    make_png(s, 28, 28, PNG_COLOR_TYPE_GRAY, 8, false);
    make_png(s, 32, 32, PNG_COLOR_TYPE_RGB, 8, false);
    make_png(s, 7, 5, PNG_COLOR_TYPE_RGB, 8, false);
    make_png(s, 13, 9, PNG_COLOR_TYPE_PALETTE, 4, false);
    make_png(s, 10, 10, PNG_COLOR_TYPE_RGB_ALPHA, 8, false);
    make_png(s, 9, 6, PNG_COLOR_TYPE_GRAY_ALPHA, 8, false);
    make_png(s, 8, 8, PNG_COLOR_TYPE_RGB, 16, false);
    make_png(s, 17, 11, PNG_COLOR_TYPE_GRAY, 1, false);
    make_png(s, 16, 16, PNG_COLOR_TYPE_RGB, 8, true);
    make_png(s, 1, 1, PNG_COLOR_TYPE_GRAY, 8, false);
    fuzz_each_shared("tfrecord", 1 << 16, shared_pngs, s);
}

#if !PNG_FIX_CRCS
FUZZ_TARGET(png, .one = one, .seeds = png_seeds, .max_len = 1 << 14)
#endif
