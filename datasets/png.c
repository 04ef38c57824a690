/* datasets/png.c - PNG decoding: a fast path for what datasets hold, libpng for the rest.
 *
 * MNIST/CIFAR-style records are tiny PNGs (28x28 gray, 32x32 RGB) for which
 * libpng's per-image setup (structs, a fresh zlib stream and window) costs
 * more than the pixels: ~20 us per 28x28 image. The fast path handles 8-bit
 * gray and RGB, non-interlaced images (what TF-Slim's converters and ours
 * write) with a zlib stream reused per thread: chunk walk with CRC checks,
 * one inflate of the IDAT data, the five row filters of the PNG
 * specification (RFC 2083, 6). Anything else (palette, alpha, 16 bits,
 * interlacing) goes to libpng's simplified API. Ancillary chunks are ignored
 * as TensorFlow's decode_png does (no gamma correction). */
#include "datasets/image.h"
#include "core/error.h"

#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

struct slim__png {
    z_stream z;
    bool init;
    uint8_t *raw; /* filtered rows */
    size_t raw_cap;
};

slim__png *slim__png_new(void)
{
    return calloc(1, sizeof(slim__png));
}

void slim__png_free(slim__png *p)
{
    if (!p)
        return;
    if (p->init)
        inflateEnd(&p->z);
    free(p->raw);
    free(p);
}

static uint32_t be32(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void *grow(void *ptr, size_t *cap, size_t need)
{
    if (need <= *cap)
        return ptr;
    void *q = realloc(ptr, need + need / 4 + 64);
    if (q)
        *cap = need + need / 4 + 64;
    return q;
}

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* SLIM_EUNSUPPORTED (err untouched) = use libpng. */
static slim_status fast(slim__png *p, const uint8_t *d, size_t len, const char *name, int want_c,
                        uint8_t **out, size_t *cap, int *h, int *w, int *c, slim_error *err)
{
    if (len < 8 + 25 || memcmp(d + 12, "IHDR", 4) || be32(d + 8) != 13)
        return SLIM_EUNSUPPORTED;
    const uint8_t *ih = d + 16;
    uint32_t W = be32(ih), H = be32(ih + 4);
    int depth = ih[8], type = ih[9];
    if (depth != 8 || (type != 0 && type != 2) || ih[10] || ih[11] || ih[12] || !W || !H ||
        (uint64_t)W * H > (uint64_t)SLIM__MAX_PIXELS)
        return SLIM_EUNSUPPORTED;
    int sc = type == 2 ? 3 : 1, oc = want_c ? want_c : sc;
    size_t rowb = (size_t)W * sc, rawn = (rowb + 1) * H;
    if (!p->init) {
        if (inflateInit(&p->z) != Z_OK)
            return SLIM_EUNSUPPORTED;
        p->init = true;
    } else {
        inflateReset(&p->z);
    }
    p->raw = grow(p->raw, &p->raw_cap, rawn + rowb);
    if (!p->raw)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    p->z.next_out = p->raw;
    p->z.avail_out = (uInt)rawn;
    bool end = false, iend = false;
    for (size_t at = 8; at + 8 <= len && !iend;) { /* a chunk header, whole or cut */
        uint32_t n = be32(d + at);
        const uint8_t *type4 = d + at + 4, *data = d + at + 8;
        if (len - at < 12 || n > len - at - 12)
            return slim__error(err, SLIM_ECORRUPT,
                               "%s: corrupt PNG: chunk %.4s at byte %zu is truncated", name,
                               (const char *)type4, at);
        for (int k = 0; k < 4; k++)
            if (!((type4[k] >= 'A' && type4[k] <= 'Z') || (type4[k] >= 'a' && type4[k] <= 'z')))
                return SLIM_EUNSUPPORTED; /* not a chunk type: libpng says so */
        uint32_t crc = (uint32_t)crc32(crc32(0, type4, 4), data, n);
        if (crc != be32(data + n))
            return slim__error(err, SLIM_ECORRUPT,
                               "%s: corrupt PNG: chunk %.4s at byte %zu: CRC error", name,
                               (const char *)type4, at);
        if (!memcmp(type4, "IDAT", 4) && !end) {
            p->z.next_in = (Bytef *)data;
            p->z.avail_in = n;
            int zr = inflate(&p->z, Z_NO_FLUSH);
            if (zr == Z_STREAM_END)
                end = true;
            else if (zr != Z_OK && !(zr == Z_BUF_ERROR && p->z.avail_out == 0))
                return slim__error(err, SLIM_ECORRUPT, "%s: corrupt PNG: IDAT: %s", name,
                                   p->z.msg ? p->z.msg : "bad compressed data");
        } else if (!memcmp(type4, "IEND", 4)) {
            iend = true;
        } else if (!(type4[0] & 0x20) && (at != 8 || memcmp(type4, "IHDR", 4))) {
            /* a critical chunk we do not handle (PLTE, ...), or a second IHDR */
            return SLIM_EUNSUPPORTED;
        }
        at += 12 + (size_t)n;
    }
    if (p->z.avail_out != 0)
        return slim__error(err, SLIM_ECORRUPT,
                           "%s: corrupt PNG: image data ends after %zu of %zu bytes", name,
                           rawn - p->z.avail_out, rawn);
    *out = grow(*out, cap, (size_t)W * H * oc + 64);
    if (!*out)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    /* Unfilter in place: row y's bytes at raw + y*(rowb+1) + 1. */
    uint8_t *prev = NULL;
    for (uint32_t y = 0; y < H; y++) {
        uint8_t *row = p->raw + (size_t)y * (rowb + 1), f = row[0];
        uint8_t *x = row + 1;
        switch (f) {
        case 0: break;
        case 1:
            for (size_t i = (size_t)sc; i < rowb; i++)
                x[i] = (uint8_t)(x[i] + x[i - sc]);
            break;
        case 2:
            if (prev)
                for (size_t i = 0; i < rowb; i++)
                    x[i] = (uint8_t)(x[i] + prev[i]);
            break;
        case 3:
            for (size_t i = 0; i < rowb; i++) {
                int a = i >= (size_t)sc ? x[i - sc] : 0, b = prev ? prev[i] : 0;
                x[i] = (uint8_t)(x[i] + ((a + b) >> 1));
            }
            break;
        case 4:
            for (size_t i = 0; i < rowb; i++) {
                int a = i >= (size_t)sc ? x[i - sc] : 0, b = prev ? prev[i] : 0;
                int cc = prev && i >= (size_t)sc ? prev[i - sc] : 0;
                x[i] = (uint8_t)(x[i] + paeth(a, b, cc));
            }
            break;
        default:
            return slim__error(err, SLIM_ECORRUPT, "%s: corrupt PNG: row %u has filter type %d",
                               name, y, f);
        }
        uint8_t *o = *out + (size_t)y * W * oc;
        if (oc == sc)
            memcpy(o, x, rowb);
        else if (oc == 3) /* gray -> RGB */
            for (uint32_t i = 0; i < W; i++)
                o[3 * i] = o[3 * i + 1] = o[3 * i + 2] = x[i];
        else /* RGB -> gray, ITU-R BT.601 as tf.image.rgb_to_grayscale */
            for (uint32_t i = 0; i < W; i++)
                o[i] = (uint8_t)(0.2989f * x[3 * i] + 0.5870f * x[3 * i + 1] +
                                 0.1140f * x[3 * i + 2] + 0.5f);
        prev = x;
    }
    *h = (int)H;
    *w = (int)W;
    *c = oc;
    return SLIM_OK;
}

slim_status slim__png_check_chunks(const uint8_t *d, size_t len, const char *name, slim_error *err)
{
    if (!name)
        name = "image";
    for (size_t at = 8; at + 8 <= len;) { /* as the fast path walks them */
        uint32_t n = be32(d + at);
        if (len - at < 12 || n > len - at - 12)
            return slim__error(err, SLIM_ECORRUPT,
                               "%s: corrupt PNG: chunk %.4s at byte %zu claims %u bytes, past the "
                               "end of the file (%zu bytes)",
                               name, (const char *)d + at + 4, at, n, len);
        if (!memcmp(d + at + 4, "IEND", 4))
            break;
        at += 12 + (size_t)n;
    }
    return SLIM_OK;
}

/* deflate packs at most 1032 bytes into one: image data too short for the
 * rows the header claims (filter bytes included) is corrupt, and refused
 * before allocating for them (a 100-byte file claiming 2^28 pixels). */
static slim_status enough_data(const uint8_t *d, size_t len, const char *name, slim_error *err)
{
    if (len < 33 || memcmp(d + 12, "IHDR", 4))
        return SLIM_OK; /* libpng says what is wrong */
    uint32_t W = be32(d + 16), H = be32(d + 20);
    int depth = d[24], type = d[25];
    int ch = type == 2 ? 3 : type == 4 ? 2 : type == 6 ? 4 : 1;
    uint64_t need = (uint64_t)H * (((uint64_t)W * (uint64_t)ch * (uint64_t)depth + 7) / 8 + 1);
    uint64_t idat = 0;
    for (size_t at = 8; at + 12 <= len;) {
        uint32_t n = be32(d + at);
        if (n > len - at - 12 || !memcmp(d + at + 4, "IEND", 4))
            break;
        if (!memcmp(d + at + 4, "IDAT", 4))
            idat += n;
        at += 12 + (size_t)n;
    }
    if (need > 1032 * idat + 1024)
        return slim__error(err, SLIM_ECORRUPT,
                           "%s: corrupt PNG: %ux%u pixels need %llu bytes of image data, more "
                           "than its %llu bytes of IDAT can hold",
                           name, W, H, (unsigned long long)need, (unsigned long long)idat);
    return SLIM_OK;
}

slim_status slim__png_decode(slim__png *p, const uint8_t *data, size_t len, const char *name,
                             int channels, uint8_t **out, size_t *cap, int *h, int *w, int *c,
                             slim_error *err)
{
    if (!name)
        name = "image";
    slim_status st = enough_data(data, len, name, err);
    if (st)
        return st;
    slim__png *own = NULL;
    if (!p && !(p = own = slim__png_new()))
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    st = fast(p, data, len, name, channels, out, cap, h, w, c, err);
    slim__png_free(own);
    if (st != SLIM_EUNSUPPORTED)
        return st;
    st = slim__png_check_chunks(data, len, name, err);
    if (st)
        return st;
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&im, data, len))
        return slim__error(err, SLIM_ECORRUPT, "%s: corrupt PNG: %s", name, im.message);
    int stored = (im.format & PNG_FORMAT_FLAG_COLOR) ? 3 : 1;
    int oc = channels ? channels : stored;
    slim_status lim = slim__pixel_limit(name, "PNG", im.width, im.height, err);
    if (lim) {
        png_image_free(&im);
        return lim;
    }
    /* Alpha (an alpha channel or tRNS) is dropped, as TensorFlow's decode_png
     * does (png_set_strip_alpha): read with it, then keep the colour. Asking
     * libpng for a format without alpha would composite onto whatever the
     * buffer held. */
    bool alpha = im.format & PNG_FORMAT_FLAG_ALPHA;
    im.format = (oc == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB) | (alpha ? PNG_FORMAT_FLAG_ALPHA : 0);
    *out = grow(*out, cap, PNG_IMAGE_SIZE(im) + 64);
    if (!*out) {
        png_image_free(&im);
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    if (!png_image_finish_read(&im, NULL, *out, 0, NULL))
        return slim__error(err, SLIM_ECORRUPT, "%s: corrupt PNG: %s", name, im.message);
    if (alpha) {
        size_t npix = (size_t)im.width * im.height;
        uint8_t *px = *out;
        for (size_t i = 0; i < npix; i++)
            memmove(px + i * (size_t)oc, px + i * (size_t)(oc + 1), (size_t)oc);
    }
    *h = (int)im.height;
    *w = (int)im.width;
    *c = oc;
    return SLIM_OK;
}
