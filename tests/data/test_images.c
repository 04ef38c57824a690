/* tests/data/test_images.c - JPEG and PNG decoding on every file of
 * ../shared/data/jpeg/ (sizes, EXIF orientation, CMYK, the broken files give
 * errors), region-of-interest and DCT-scaled decoding against whole-image
 * decodes, PNG round trips. */
#include "datasets/image.h"
#include "tests/data/tap.h"

#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jcase {
    const char *file;
    int w, h, c;       /* 0 = must fail */
    const char *error; /* substring of the expected error */
} jcase;

static const jcase cases[] = {
    {"libjpeg-turbo/monkey12.jpg", 0, 0, 0,
     "unsupported JPEG (not 8-bit samples: 12-bit and 16-bit JPEGs are not decoded; convert it to "
     "8 bits): Unsupported JPEG data precision 12"},
    {"libjpeg-turbo/testimgari.jpg", 227, 149, 3, NULL},
    {"libjpeg-turbo/testimggray.jpg", 227, 149, 1, NULL},
    {"libjpeg-turbo/testimgint.jpg", 227, 149, 3, NULL},
    {"libjpeg-turbo/testimgp.jpg", 227, 149, 3, NULL},
    {"libjpeg-turbo/testorig.jpg", 227, 149, 3, NULL},
    {"pillow/app13-multiple.jpg", 256, 160, 3, NULL},
    {"pillow/app13.jpg", 4, 4, 3, NULL},
    {"pillow/hopper.jpg", 128, 128, 3, NULL},
    {"pillow/hopper_16bit_qtables.jpg", 128, 128, 3, NULL},
    {"pillow/hopper_gray.jpg", 128, 128, 1, NULL},
    {"pillow/hopper_orientation_2.jpg", 128, 128, 3, NULL},
    {"pillow/hopper_orientation_3.jpg", 128, 128, 3, NULL},
    {"pillow/hopper_orientation_4.jpg", 128, 128, 3, NULL},
    {"pillow/hopper_orientation_5.jpg", 128, 128, 3, NULL},
    {"pillow/hopper_orientation_6.jpg", 128, 128, 3, NULL},
    {"pillow/hopper_orientation_7.jpg", 128, 128, 3, NULL},
    {"pillow/hopper_orientation_8.jpg", 128, 128, 3, NULL},
    {"pillow/icc-after-SOF.jpg", 10, 10, 1, NULL},
    {"pillow/iptc.jpg", 640, 480, 3, NULL},
    {"pillow/jpeg_ff00_header.jpg", 300, 225, 3, NULL},
    {"pillow/junk_jpeg_header.jpg", 1024, 768, 3, NULL},
    {"pillow/multiple_exif.jpg", 1, 1, 1, NULL},
    {"pillow/orientation_rectangle.jpg", 2, 1, 3, NULL},
    {"pillow/pil_sample_cmyk.jpg", 100, 100, 3, NULL},
    {"pillow/pil_sample_rgb.jpg", 100, 100, 3, NULL},
    {"pillow/truncated_app14.jpg", 100, 100, 3, NULL},
    {"pillow/truncated_jpeg.jpg", 0, 0, 0, "Premature end of JPEG file"},
};

static uint8_t *load(const char *rel, size_t *len)
{
    char p[1200];
    snprintf(p, sizeof p, "jpeg/%s", rel);
    return tap_read_file(tap_data_path(p), len);
}

static double mean_abs_diff(const slim_image *a, const slim_image *b)
{
    if (a->width != b->width || a->height != b->height || a->channels != b->channels)
        return 1e9;
    double s = 0;
    size_t n = (size_t)a->width * a->height * a->channels;
    for (size_t i = 0; i < n; i++)
        s += fabs((double)a->data[i] - b->data[i]);
    return s / (double)n;
}

static void test_files(void)
{
    slim_error err = {0};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const jcase *c = &cases[k];
        size_t len;
        uint8_t *d = load(c->file, &len);
        if (!d) {
            tap_ok(false, "read %s", c->file);
            continue;
        }
        slim_image img;
        slim_decode_opts o = {.name = c->file};
        slim_status st = slim_image_decode(d, len, &o, &img, &err);
        if (c->w) {
            tap_ok(st == SLIM_OK && img.width == c->w && img.height == c->h && img.channels == c->c,
                   "%s decodes to %dx%dx%d%s%s", c->file, c->w, c->h, c->c, st ? ": " : "",
                   st ? err.msg : "");
            if (st == SLIM_OK) {
                int ph, pw, pc;
                st = slim_image_probe(d, len, c->file, &ph, &pw, &pc, &err);
                tap_ok(st == SLIM_OK && ph == c->h && pw == c->w && pc == c->c, "%s probe",
                       c->file);
                slim_image_fini(&img);
            }
            /* Forced RGB and gray. */
            o.channels = 3;
            st = slim_image_decode(d, len, &o, &img, &err);
            tap_ok(st == SLIM_OK && img.channels == 3, "%s as RGB", c->file);
            slim_image_fini(&img);
            o.channels = 1;
            st = slim_image_decode(d, len, &o, &img, &err);
            tap_ok(st == SLIM_OK && img.channels == 1, "%s as gray", c->file);
            slim_image_fini(&img);
        } else {
            char want[512];
            /* a JPEG libjpeg does not decode (12-bit) is unsupported, not corrupt */
            bool unsup = !strncmp(c->error, "unsupported", 11);
            snprintf(want, sizeof want, unsup ? "%s: %s" : "%s: corrupt JPEG: %s", c->file,
                     c->error);
            tap_ok(st == (unsup ? SLIM_EUNSUPPORTED : SLIM_ECORRUPT) && !strcmp(err.msg, want),
                   "%s fails: %s", c->file, err.msg);
        }
        /* Every truncation of every file: an error or a picture, never a crash. */
        if (len < 40000) {
            int errors = 0;
            for (size_t cut = 0; cut < len; cut += 1 + len / 61) {
                st = slim_image_decode(d, cut, &o, &img, &err);
                if (st == SLIM_OK)
                    slim_image_fini(&img);
                else
                    errors++;
            }
            tap_ok(errors > 0, "%s: truncated copies give errors, no crash (%d)", c->file, errors);
        }
        free(d);
    }
}

static void test_quality(void)
{
    /* testorig.jpg against the PPM it was made from: PSNR > 30 dB. */
    size_t len;
    uint8_t *ppm = tap_read_file(tap_data_path("jpeg/libjpeg-turbo/testorig.ppm"), &len);
    uint8_t *jpg = load("libjpeg-turbo/testorig.jpg", &len);
    slim_image img;
    slim_error err = {0};
    if (!ppm || !jpg || slim_image_decode(jpg, len, NULL, &img, &err)) {
        tap_ok(false, "testorig decode");
        free(ppm);
        free(jpg);
        return;
    }
    /* "P6\n227 149\n255\n" */
    const uint8_t *px = ppm;
    for (int nl = 0; nl < 3; px++)
        nl += *px == '\n';
    double se = 0;
    size_t n = (size_t)227 * 149 * 3;
    for (size_t i = 0; i < n; i++)
        se += ((double)img.data[i] - px[i]) * ((double)img.data[i] - px[i]);
    double psnr = 10 * log10(255.0 * 255.0 / (se / (double)n));
    tap_ok(psnr > 30, "testorig.jpg vs testorig.ppm: PSNR %.1f dB > 30", psnr);
    /* tf.image.decode_jpeg's faster settings: other pixels, about as close */
    for (int m = 1; m <= 3; m++) {
        slim_decode_opts o = {.dct_fast = m & 1, .no_fancy_upscaling = m & 2};
        slim_image f;
        if (slim_image_decode(jpg, len, &o, &f, &err)) {
            tap_ok(false, "testorig decode (%s)", err.msg);
            continue;
        }
        double sf = 0;
        size_t differ = 0;
        for (size_t i = 0; i < n; i++) {
            sf += ((double)f.data[i] - px[i]) * ((double)f.data[i] - px[i]);
            differ += f.data[i] != img.data[i];
        }
        double pf = 10 * log10(255.0 * 255.0 / (sf / (double)n));
        tap_ok(pf > 35 && differ > n / 100,
               "testorig.jpg with%s%s: PSNR %.1f dB > 35, %zu of %zu values differ from the "
               "accurate decode",
               m & 1 ? " INTEGER_FAST" : "", m & 2 ? " box upsampling" : "", pf, differ, n);
        slim_image_fini(&f);
    }
    slim_image_fini(&img);
    free(ppm);
    free(jpg);
}

static void test_orientation(void)
{
    slim_error err = {0};
    size_t len;
    uint8_t *d = load("pillow/hopper.jpg", &len);
    slim_image ref;
    slim_image_decode(d, len, NULL, &ref, &err);
    free(d);
    for (int o = 2; o <= 8; o++) {
        char f[64];
        snprintf(f, sizeof f, "pillow/hopper_orientation_%d.jpg", o);
        d = load(f, &len);
        slim_image img, raw;
        slim_decode_opts op = {.exif_orientation = true, .name = f};
        slim_image_decode(d, len, &op, &img, &err);
        slim_image_decode(d, len, NULL, &raw, &err);
        double m = mean_abs_diff(&img, &ref), m0 = mean_abs_diff(&raw, &ref);
        tap_ok(m < 8 && m0 > 40,
               "%s with EXIF applied matches hopper.jpg (mean |diff| %.2f; %.1f without)", f, m,
               m0);
        slim_image_fini(&img);
        slim_image_fini(&raw);
        free(d);
    }
    slim_image_fini(&ref);
    d = load("pillow/orientation_rectangle.jpg", &len);
    slim_image img;
    slim_decode_opts op = {.exif_orientation = true};
    slim_status st = slim_image_decode(d, len, &op, &img, &err);
    tap_ok(st == SLIM_OK && img.width == 1 && img.height == 2,
           "orientation_rectangle.jpg (2x1, orientation 8) becomes 1 wide, 2 high");
    slim_image_fini(&img);
    free(d);
    /* CMYK decodes close to the RGB version of the same picture. */
    slim_image a, b;
    d = load("pillow/pil_sample_cmyk.jpg", &len);
    slim_image_decode(d, len, NULL, &a, &err);
    free(d);
    d = load("pillow/pil_sample_rgb.jpg", &len);
    slim_image_decode(d, len, NULL, &b, &err);
    free(d);
    double m = mean_abs_diff(&a, &b);
    tap_ok(m < 12, "CMYK (Adobe, YCCK) decodes to RGB close to the RGB file (mean |diff| %.2f)", m);
    slim_image_fini(&a);
    slim_image_fini(&b);
}

/* ROI decoding equals the same region of a whole-image decode (away from the
 * region's first/last 2 columns, which libjpeg's fancy upsampling treats as
 * edges); DCT-scaled decoding has the ceil(W/d) size. */
static void test_roi(void)
{
    const char *files[] = {"libjpeg-turbo/testorig.jpg",
                           "libjpeg-turbo/testimgp.jpg",
                           "libjpeg-turbo/testimggray.jpg",
                           "pillow/pil_sample_cmyk.jpg",
                           "pillow/iptc.jpg",
                           "pillow/jpeg_ff00_header.jpg",
                           "pillow/junk_jpeg_header.jpg"};
    slim_error err = {0};
    slim__jpeg *j = slim__jpeg_new();
    for (int fast = 0; fast <= 1; fast++) {
        /* the accurate decode, then INTEGER_FAST with box upsampling */
        slim__jpeg_set_method(j, fast, !fast);
        for (size_t k = 0; k < sizeof files / sizeof *files; k++) {
            size_t len;
            uint8_t *d = load(files[k], &len);
            int bad = 0, tried = 0;
            for (int denom = 1; denom <= 8; denom *= 2) {
                for (int ch = 1; ch <= 4; ch += (ch == 1 ? 2 : 1)) {
                    int H, W, comps;
                    slim__jpeg_header(j, d, len, files[k], false, &H, &W, &comps, NULL, &err);
                    int sh, sw;
                    slim__jpeg_scaled_size(j, denom, &sh, &sw);
                    if (sw != (W + denom - 1) / denom)
                        bad++;
                    const uint8_t *px;
                    size_t stride;
                    int bx, bw;
                    if (slim__jpeg_decode(j, denom, ch, 0, 0, sw, sh, &px, &stride, &bx, &bw,
                                          &err)) {
                        bad++;
                        tap_diag("%s", err.msg);
                        continue;
                    }
                    uint8_t *full = malloc((size_t)sh * stride);
                    memcpy(full, px, (size_t)sh * stride);
                    size_t fstride = stride;
                    uint64_t s = 99 + (uint64_t)k;
                    for (int t = 0; t < 6; t++) {
                        s = s * 6364136223846793005ull + 1442695040888963407ull;
                        int x0 = (int)((s >> 33) % (uint64_t)sw),
                            y0 = (int)((s >> 13) % (uint64_t)sh);
                        int x1 = x0 + 1 + (int)((s >> 40) % (uint64_t)(sw - x0));
                        int y1 = y0 + 1 + (int)((s >> 20) % (uint64_t)(sh - y0));
                        slim__jpeg_header(j, d, len, files[k], false, &H, &W, &comps, NULL, &err);
                        if (slim__jpeg_decode(j, denom, ch, x0, y0, x1, y1, &px, &stride, &bx, &bw,
                                              &err)) {
                            bad++;
                            continue;
                        }
                        tried++;
                        if (bx > x0 || bx + bw < x1)
                            bad++;
                        for (int y = y0; y < y1; y++)
                            for (int x = x0; x < x1; x++) {
                                bool inner =
                                    (x >= bx + 2 || bx == 0) && (x < bx + bw - 2 || bx + bw == sw);
                                if (!inner)
                                    continue;
                                if (memcmp(px + (size_t)(y - y0) * stride + (size_t)(x - bx) * ch,
                                           full + (size_t)y * fstride + (size_t)x * ch, (size_t)ch))
                                    bad++;
                            }
                    }
                    free(full);
                }
            }
            tap_ok(bad == 0 && tried > 0,
                   "%s: %d ROI decodes (scales 1..1/8, 1/3/4 channels%s) equal the "
                   "whole-image decode",
                   files[k], tried, fast ? ", INTEGER_FAST, box upsampling" : "");
            free(d);
        }
    }
    slim__jpeg_free(j);
}

static void test_png(void)
{
    slim_error err = {0};
    slim_image img = {.height = 5, .width = 7, .channels = 3};
    img.data = malloc(5 * 7 * 3);
    for (int i = 0; i < 5 * 7 * 3; i++)
        img.data[i] = (uint8_t)(i * 37);
    uint8_t *png;
    size_t len;
    bool ok = slim_image_encode_png(&img, &png, &len, &err) == SLIM_OK;
    tap_ok(ok && slim_image_sniff(png, len) == SLIM_IMAGE_PNG, "PNG encode");
    slim_image back;
    ok = ok && slim_image_decode(png, len, NULL, &back, &err) == SLIM_OK;
    tap_ok(ok && back.width == 7 && back.height == 5 && back.channels == 3 &&
               !memcmp(back.data, img.data, 5 * 7 * 3),
           "PNG round trip is exact (RGB)");
    if (ok)
        slim_image_fini(&back);
    /* Truncated PNG: error, no crash. */
    slim_status st = slim_image_decode(png, len / 2, NULL, &back, &err);
    tap_ok(st == SLIM_ECORRUPT && strstr(err.msg, "corrupt PNG"), "truncated PNG: %s", err.msg);
    st = slim_image_decode("nope", 4, NULL, &back, &err);
    tap_ok(st == SLIM_ECORRUPT, "unknown format: %s", err.msg);
    free(png);
    slim_image_fini(&img);

    /* Larger images (every row filter gets used): the fast path is exact, gray and RGB,
     * and converts between them. */
    for (int c = 1; c <= 3; c += 2) {
        slim_image big = {.height = 61, .width = 77, .channels = c};
        big.data = malloc(61 * 77 * 3);
        for (int i = 0; i < 61 * 77 * c; i++)
            big.data[i] = (uint8_t)((i % 77) * 3 + (i / 231) * 5 + ((i * 7919) % 13));
        bool ok2 = slim_image_encode_png(&big, &png, &len, &err) == SLIM_OK &&
                   slim_image_decode(png, len, NULL, &back, &err) == SLIM_OK;
        tap_ok(ok2 && back.channels == c && !memcmp(back.data, big.data, (size_t)61 * 77 * c),
               "PNG %s 77x61 round trip is exact", c == 1 ? "gray" : "RGB");
        if (ok2)
            slim_image_fini(&back);
        slim_decode_opts o = {.channels = c == 1 ? 3 : 1};
        ok2 = slim_image_decode(png, len, &o, &back, &err) == SLIM_OK;
        bool conv = ok2 && back.channels == o.channels;
        if (conv && c == 1)
            for (int i = 0; i < 61 * 77 && conv; i++)
                conv = back.data[3 * i] == big.data[i] && back.data[3 * i + 2] == big.data[i];
        tap_ok(conv, "PNG %s decoded as %s", c == 1 ? "gray" : "RGB", c == 1 ? "RGB" : "gray");
        if (ok2)
            slim_image_fini(&back);
        /* A flipped byte inside the image data: the chunk CRC catches it. */
        png[len - 30] ^= 0x10;
        st = slim_image_decode(png, len, NULL, &back, &err);
        tap_ok(st == SLIM_ECORRUPT && strstr(err.msg, "corrupt PNG"), "PNG with a flipped byte: %s",
               err.msg);
        free(png);
        slim_image_fini(&big);
    }
    /* Formats the fast path leaves to libpng: 16-bit gray, RGBA. */
    uint16_t g16[6 * 5];
    uint8_t rgba[6 * 5 * 4];
    for (int i = 0; i < 30; i++) {
        g16[i] = (uint16_t)(i * 2000);
        rgba[4 * i] = (uint8_t)(i * 8), rgba[4 * i + 1] = 7, rgba[4 * i + 2] = 200,
                 rgba[4 * i + 3] = 255;
    }
    for (int k = 0; k < 2; k++) {
        png_image pi;
        memset(&pi, 0, sizeof pi);
        pi.version = PNG_IMAGE_VERSION;
        pi.width = 6;
        pi.height = 5;
        pi.format = k ? PNG_FORMAT_RGBA : PNG_FORMAT_LINEAR_Y;
        png_alloc_size_t sz = 0;
        const void *src = k ? (const void *)rgba : (const void *)g16;
        png_image_write_to_memory(&pi, NULL, &sz, 0, src, 0, NULL);
        uint8_t *buf = malloc(sz);
        png_image_write_to_memory(&pi, buf, &sz, 0, src, 0, NULL);
        st = slim_image_decode(buf, sz, NULL, &back, &err);
        tap_ok(st == SLIM_OK && back.width == 6 && back.height == 5 &&
                   back.channels == (k ? 3 : 1) &&
                   (!k || (back.data[3] == 8 && back.data[5] == 200)),
               "PNG %s decodes through libpng", k ? "RGBA" : "16-bit gray");
        if (!st)
            slim_image_fini(&back);
        free(buf);
    }
}

int main(void)
{
    test_png();
    if (!tap_shared_data())
        tap_skip_all("../shared/data is absent");
    test_files();
    test_quality();
    test_orientation();
    test_roi();
    return tap_done();
}
