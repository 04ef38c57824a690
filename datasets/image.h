/* datasets/image.h - image decoding internals used by the preprocessing executor:
 * a reusable JPEG decompressor with region-of-interest and DCT-scaled decoding. */
#ifndef SLIM_DATASETS_IMAGE_H
#define SLIM_DATASETS_IMAGE_H

#include "core/error.h"

#include <slim/data.h>

/* The most pixels (width x height) an image may have, checked from its
 * header wherever one is opened: decoded, probed or transcoded, JPEG or PNG
 * (a 6 KB file can claim 65000x65000; this is 16384x16384). */
#define SLIM__MAX_PIXELS ((int64_t)1 << 28)

/* SLIM_EUNSUPPORTED naming the file, its format and size when w x h is over
 * SLIM__MAX_PIXELS; SLIM_OK otherwise. Inline here: png.c and jpeg_index.c,
 * which image.c calls, check it too. */
static inline slim_status slim__pixel_limit(const char *name, const char *format, uint64_t w,
                                            uint64_t h, slim_error *err)
{
    if (w * h <= (uint64_t)SLIM__MAX_PIXELS) /* both are at most 2^32 - 1 */
        return SLIM_OK;
    return slim__error(err, SLIM_EUNSUPPORTED,
                       "%s: %s of %llux%llu pixels is larger than the limit of %lld pixels",
                       name ? name : "image", format, (unsigned long long)w, (unsigned long long)h,
                       (long long)SLIM__MAX_PIXELS);
}

/* A JPEG decoder kept per worker thread (its buffers are reused; libjpeg's object is
 * made afresh for each image, so that no table of one image is used for another). */
typedef struct slim__jpeg slim__jpeg;

slim__jpeg *slim__jpeg_new(void);
void slim__jpeg_free(slim__jpeg *j);

/* Read the header of data (kept borrowed until the next header call):
 * size and stored components; *orientation (1..8, 1 if absent) when want_exif. */
slim_status slim__jpeg_header(slim__jpeg *j, const uint8_t *data, size_t len, const char *name,
                              bool want_exif, int *height, int *width, int *components,
                              int *orientation, slim_error *err);

/* How later decodes run (tf.image.decode_jpeg's dct_method and
 * fancy_upscaling): the accurate integer DCT (JDCT_ISLOW) and fancy chroma
 * upsampling by default; JDCT_IFAST and box upsampling are faster and differ
 * by a few levels per pixel. */
void slim__jpeg_set_method(slim__jpeg *j, bool fast_dct, bool fancy_upscaling);
/* tf.image.decode_jpeg's try_recover_truncated: a file that ends early is
 * decoded to its end, the rows after it gray (libjpeg's fill), instead of
 * failing; slim__jpeg_truncated says whether the last decode was. */
void slim__jpeg_set_recover_truncated(slim__jpeg *j, bool on);
bool slim__jpeg_truncated(const slim__jpeg *j);
/* What libjpeg's error msg_code means when it is a JPEG libjpeg does not
 * decode (12-bit, lossless) rather than a damaged one; NULL otherwise. */
const char *slim__jpeg_unsupported(int msg_code);
/* "NAME: an empty file" / "NAME: not a JPEG or PNG image (N bytes, starting
 * xx xx xx xx)" (SLIM_ECORRUPT). */
slim_status slim__not_an_image(slim_error *err, const char *name, const uint8_t *data, size_t n);

/* Output size at DCT scale 1/denom (denom 1, 2, 4, 8): libjpeg's ceil(W / denom). */
void slim__jpeg_scaled_size(const slim__jpeg *j, int denom, int *height, int *width);

/* Decode rows [y0, y1) and at least columns [x0, x1) of the image at scale
 * 1/denom (coordinates in the scaled image), channels 1 (gray), 3 (RGB) or
 * 4 (RGBX). libjpeg widens the columns to iMCU boundaries: the rows returned
 * start at column *bx and are *bw wide; row r of the region is at
 * *pixels + r * *stride. Rows below y1 are never decoded. The buffer belongs
 * to j (valid until the next decode). After an error j is ready for reuse. */
slim_status slim__jpeg_decode(slim__jpeg *j, int denom, int channels, int x0, int y0, int x1,
                              int y1, const uint8_t **pixels, size_t *stride, int *bx, int *bw,
                              slim_error *err);

/* Whether the last successful decode went through a restart-index cut. */
bool slim__jpeg_last_cut(const slim__jpeg *j);

/* PNG: a fast path for 8-bit gray/RGB non-interlaced images with a zlib
 * stream reused per thread, libpng for the rest. p may be NULL. *out grows
 * (capacity *cap); channels 0 = as stored. */
typedef struct slim__png slim__png;
slim__png *slim__png_new(void);
void slim__png_free(slim__png *p);
slim_status slim__png_decode(slim__png *p, const uint8_t *data, size_t len, const char *name,
                             int channels, uint8_t **out, size_t *cap, int *h, int *w, int *c,
                             slim_error *err);

/* Every chunk's length within the file (up to IEND): libpng allocates what a
 * chunk claims before reading it, so a 100-byte file could cost gigabytes. */
slim_status slim__png_check_chunks(const uint8_t *data, size_t len, const char *name,
                                   slim_error *err);

/* EXIF orientation (1..8) applied to an HWC image, in place (may reallocate). */
slim_status slim__image_orient(slim_image *img, int orientation, slim_error *err);

/* Parse the Orientation tag out of an APP1 "Exif\0\0" payload; 1 if absent/malformed. */
int slim__exif_orientation(const uint8_t *app1, size_t len);

#endif
