/* datasets/jpeg_index.h - random access into JPEGs with a restart marker after
 * every MCU (what `slimrun convert` writes), and the lossless transcode that
 * makes them. */
#ifndef SLIM_DATASETS_JPEG_INDEX_H
#define SLIM_DATASETS_JPEG_INDEX_H

#include <slim/data.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Per-decoder scratch, reused between images. */
typedef struct slim__jpeg_index {
    uint32_t *seg; /* 2 offsets per MCU: its entropy-coded bytes */
    size_t seg_cap;
    uint8_t *sub; /* the spliced JPEG */
    size_t sub_cap, sub_len;
} slim__jpeg_index;

void slim__jpeg_index_fini(slim__jpeg_index *x);

/* If b (n bytes) is a sequential Huffman JPEG with one scan and DRI = 1, and
 * the region [x0, x1) x [y0, y1) of its 1/d-scaled image (d = 1, 2, 4, 8)
 * leaves whole MCUs out: x->sub gets a JPEG of just the MCUs the region
 * needs (x->sub_len bytes), whose decoded pixel (i, j) at scale 1/d is the
 * full image's (sx + i, sy + j) for every pixel of the region, and true.
 * false otherwise (anything unexpected included; decode b then). */
bool slim__jpeg_index_crop(slim__jpeg_index *x, const uint8_t *b, size_t n, int d, int x0, int y0,
                           int x1, int y1, int *sx, int *sy);

/* Whether b's headers make it restart-indexed (the scan is not checked). */
bool slim__jpeg_is_indexed(const uint8_t *b, size_t n);

/* A lossless transcode of data with a restart marker after every MCU (and
 * optimized Huffman tables; progressive files become sequential), APPn and
 * COM markers kept. *out NULL (and SLIM_OK) when the file is better kept as
 * it is: already indexed, CMYK/YCCK, 12-bit, damaged (libjpeg warned of
 * anything but extraneous bytes before a marker), progressive with scans
 * that stop before every coefficient is sent (decoders smooth those, a
 * sequential copy would not be), or read fine but refused by libjpeg's
 * encoder (a DCT coefficient out of its range). *out is malloc'ed. An
 * error (naming the file) when libjpeg cannot read it at all. */
slim_status slim__jpeg_add_restarts(const uint8_t *data, size_t len, const char *name,
                                    uint8_t **out, size_t *olen, slim_error *err);

#endif
