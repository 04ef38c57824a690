/* datasets/image.c - JPEG (libjpeg-turbo) and PNG (libpng) decoding, PNG encoding.
 *
 * libjpeg's default error handler calls exit(): every decompressor here has
 * an error manager whose error_exit longjmps back with the message, and whose
 * emit_message turns "Premature end of JPEG file" into an error too (as
 * TensorFlow's decode_jpeg does by default), so a truncated file is never
 * silently padded with gray. Other warnings (extraneous bytes before a
 * marker, common in real photo collections) are ignored.
 *
 * CMYK/YCCK JPEGs (Adobe) are decoded to CMYK by libjpeg and converted to RGB
 * here the way TensorFlow's jpeg_mem.cc does: with the Adobe marker the
 * values are stored inverted, so R = C*K/255; without it R = (255-C)(255-K)/255. */
#include "datasets/image.h"
#include "datasets/jpeg_index.h"
#include "datasets/tfrecord.h"
#include "core/error.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>

slim_image_format slim_image_sniff(const void *data, size_t len)
{
    const uint8_t *p = data;
    if (len >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF)
        return SLIM_IMAGE_JPEG;
    if (len >= 8 && !memcmp(p, "\x89PNG\r\n\x1a\n", 8))
        return SLIM_IMAGE_PNG;
    return SLIM_IMAGE_UNKNOWN;
}

void slim_image_fini(slim_image *img)
{
    if (!img)
        return;
    free(img->data);
    img->data = NULL;
}

/* ---- JPEG ---------------------------------------------------------------- */

typedef struct errmgr {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
} errmgr;

struct slim__jpeg {
    struct jpeg_decompress_struct ci;
    errmgr em;
    bool started; /* jpeg_start_decompress called since the header */
    bool have_header;
    const char *name;
    uint8_t *buf;
    size_t cap;
    uint8_t *row4; /* CMYK scratch row */
    size_t row4_cap;
    JSAMPARRAY (*alloc_sarray)(j_common_ptr, int, JDIMENSION, JDIMENSION); /* libjpeg's own */
    bool fast_dct;         /* JDCT_IFAST instead of JDCT_ISLOW */
    bool plain_upsampling; /* do_fancy_upsampling off */
    const uint8_t *data;   /* the image of the last header */
    size_t len;
    slim__jpeg_index index; /* crops of restart-indexed files */
    bool used;              /* a header was read with this libjpeg object */
    bool last_cut;
    bool recover_truncated; /* tf.image.decode_jpeg's try_recover_truncated */
    bool truncated;         /* the last decode ran out of data (recovered) */
};

bool slim__jpeg_last_cut(const slim__jpeg *j)
{
    return j->last_cut;
}

void slim__jpeg_set_recover_truncated(slim__jpeg *j, bool on)
{
    j->recover_truncated = on;
}

bool slim__jpeg_truncated(const slim__jpeg *j)
{
    return j->truncated;
}

void slim__jpeg_set_method(slim__jpeg *j, bool fast_dct, bool fancy_upscaling)
{
    j->fast_dct = fast_dct;
    j->plain_upsampling = !fancy_upscaling;
}

static void on_error_exit(j_common_ptr c)
{
    errmgr *e = (errmgr *)c->err;
    (*c->err->format_message)(c, e->msg);
    longjmp(e->jb, 1);
}

static void on_emit(j_common_ptr c, int level)
{
    errmgr *e = (errmgr *)c->err;
    if (level < 0) {
        if (c->err->msg_code == JWRN_JPEG_EOF) {
            slim__jpeg *j = ((j_decompress_ptr)c)->client_data;
            if (j && j->recover_truncated) { /* libjpeg goes on with an EOI: gray from here */
                j->truncated = true;
                c->err->num_warnings++;
                return;
            }
            (*c->err->format_message)(c, e->msg);
            longjmp(e->jb, 1);
        }
        c->err->num_warnings++;
    }
}

static void on_output(j_common_ptr c)
{
    (void)c; /* never print */
}

/* libjpeg's sample rows (the IDCT output, the upsampler's rows) zeroed when
 * allocated, padding included. libjpeg-turbo's SIMD upsampling and colour
 * conversion work on whole vectors: they read the never-written padding after
 * each row and discard those lanes. That is harmless, but valgrind models
 * PMADDWD (the G term of YCbCr -> RGB) per 64 bits, so a garbage lane marks
 * its defined neighbour undefined: the G of the last 1-2 pixels of a decoded
 * row, in nearly every scaled or cropped decode, and then every value computed
 * from them (libjpeg-turbo issue #277, JSIMD_FORCENONE=1 makes it go away).
 * Rows are requested rounded up to 64 samples, libjpeg-turbo's own rounding
 * with SIMD (2 * ALIGN_SIZE), so the memset covers all the SIMD code reads.
 * Once per decode, a few KB: negligible next to the IDCT. */
static JSAMPARRAY alloc_sarray_zeroed(j_common_ptr c, int pool, JDIMENSION samplesperrow,
                                      JDIMENSION numrows)
{
    slim__jpeg *j = c->client_data;
    JDIMENSION w = samplesperrow;
    if (w <= (JDIMENSION)-1 - 63) /* else libjpeg refuses the size anyway */
        w = (w + 63) & ~(JDIMENSION)63;
    JSAMPARRAY rows = j->alloc_sarray(c, pool, w, numrows);
    for (JDIMENSION r = 0; r < numrows; r++)
        memset(rows[r], 0, (size_t)w * sizeof(JSAMPLE));
    return rows;
}

/* A fresh libjpeg object (the caller has set the error jump). */
static void create(slim__jpeg *j)
{
    jpeg_create_decompress(&j->ci);
    j->ci.client_data = j;
    j->alloc_sarray = j->ci.mem->alloc_sarray;
    j->ci.mem->alloc_sarray = alloc_sarray_zeroed;
}

slim__jpeg *slim__jpeg_new(void)
{
    slim__jpeg *volatile j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->ci.err = jpeg_std_error(&j->em.pub);
    j->em.pub.error_exit = on_error_exit;
    j->em.pub.emit_message = on_emit;
    j->em.pub.output_message = on_output;
    if (setjmp(j->em.jb)) { /* jpeg_create_decompress can only fail on memory */
        free(j);
        return NULL;
    }
    create(j);
    return j;
}

void slim__jpeg_free(slim__jpeg *j)
{
    if (!j)
        return;
    jpeg_destroy_decompress(&j->ci);
    slim__jpeg_index_fini(&j->index);
    free(j->buf);
    free(j->row4);
    free(j);
}

const char *slim__jpeg_unsupported(int msg_code)
{
    switch (msg_code) {
    case JERR_BAD_PRECISION:
        return "unsupported JPEG (not 8-bit samples: 12-bit and 16-bit JPEGs are not decoded; "
               "convert it to 8 bits)";
    case JERR_SOF_UNSUPPORTED:
        return "unsupported JPEG (lossless or hierarchical coding: only baseline, extended and "
               "progressive JPEGs are decoded; convert it)";
    default: return NULL;
    }
}

static slim_status jpeg_fail(slim__jpeg *j, slim_error *err)
{
    jpeg_abort_decompress(&j->ci);
    j->started = false;
    j->have_header = false;
    const char *why = slim__jpeg_unsupported(j->em.pub.msg_code);
    return slim__error(err, why ? SLIM_EUNSUPPORTED : SLIM_ECORRUPT, "%s: %s: %s",
                       j->name ? j->name : "image", why ? why : "corrupt JPEG", j->em.msg);
}

slim_status slim__not_an_image(slim_error *err, const char *name, const uint8_t *b, size_t n)
{
    if (n == 0)
        return slim__error(err, SLIM_ECORRUPT, "%s: an empty file (0 bytes), not an image", name);
    char head[16] = "";
    for (size_t i = 0; i < n && i < 4; i++) {
        size_t l = strlen(head);
        snprintf(head + l, sizeof head - l, "%s%02x", i ? " " : "", b[i]);
    }
    return slim__error(err, SLIM_ECORRUPT, "%s: not a JPEG or PNG image (%zu byte%s, starting %s)",
                       name, n, n == 1 ? "" : "s", head);
}

int slim__exif_orientation(const uint8_t *p, size_t n)
{
    /* "Exif\0\0" then a TIFF header: byte order "II"/"MM", 42, IFD0 offset. */
    if (n < 14 || memcmp(p, "Exif\0\0", 6))
        return 1;
    p += 6;
    n -= 6;
    bool le = p[0] == 'I' && p[1] == 'I';
    if (!le && !(p[0] == 'M' && p[1] == 'M'))
        return 1;
#define U16(q) (le ? (unsigned)((q)[0] | (q)[1] << 8) : (unsigned)((q)[0] << 8 | (q)[1]))
#define U32(q)                                                                                     \
    (le ? ((uint32_t)(q)[0] | (uint32_t)(q)[1] << 8 | (uint32_t)(q)[2] << 16 |                     \
           (uint32_t)(q)[3] << 24)                                                                 \
        : ((uint32_t)(q)[0] << 24 | (uint32_t)(q)[1] << 16 | (uint32_t)(q)[2] << 8 | (q)[3]))
    if (U16(p + 2) != 42)
        return 1;
    uint32_t ifd = U32(p + 4);
    if (ifd > n || n - ifd < 2)
        return 1;
    unsigned count = U16(p + ifd);
    for (unsigned k = 0; k < count; k++) {
        size_t e = (size_t)ifd + 2 + 12 * (size_t)k;
        if (e + 12 > n)
            break;
        if (U16(p + e) == 0x0112) { /* Orientation, SHORT, 1 value, inline */
            unsigned v = U16(p + e + 8);
            return v >= 1 && v <= 8 ? (int)v : 1;
        }
    }
    return 1;
#undef U16
#undef U32
}

slim_status slim__jpeg_header(slim__jpeg *j, const uint8_t *data, size_t len, const char *name,
                              bool want_exif, int *height, int *width, int *components,
                              int *orientation, slim_error *err)
{
    j->name = name;
    j->started = false;
    j->have_header = false;
    if (setjmp(j->em.jb))
        return jpeg_fail(j, err);
    /* libjpeg keeps the Huffman and quantization tables of the images it read
     * before (abbreviated datastreams): a file that leaves one out would be
     * decoded with the last image's, its pixels depending on what the thread
     * decoded earlier. Each image gets a fresh object (about a microsecond),
     * so a missing table is what it is for a fresh decoder: the standard
     * Huffman table, or an error. */
    if (j->used) {
        jpeg_destroy_decompress(&j->ci);
        create(j);
    }
    j->used = true;
    jpeg_mem_src(&j->ci, data, (unsigned long)len);
    j->data = data;
    j->len = len;
    if (want_exif)
        jpeg_save_markers(&j->ci, JPEG_APP0 + 1, 0xFFFF);
    else
        jpeg_save_markers(&j->ci, JPEG_APP0 + 1, 0);
    jpeg_read_header(&j->ci, TRUE);
    j->have_header = true;
    slim_status st = slim__pixel_limit(name, "JPEG", j->ci.image_width, j->ci.image_height, err);
    /* Cut short: a Huffman-coded file's first scan spends at least a bit on
     * each block of its component(s), so fewer bits than the smallest
     * component has blocks is a truncated file, which libjpeg would find
     * only after allocating and decoding what the header claims. */
    uint64_t least = UINT64_MAX;
    for (int c = 0; c < j->ci.num_components; c++) {
        uint64_t b =
            (uint64_t)j->ci.comp_info[c].width_in_blocks * j->ci.comp_info[c].height_in_blocks;
        least = b < least ? b : least;
    }
    if (!st && !j->ci.arith_code && (uint64_t)len * 8 < least)
        st = slim__error(err, SLIM_ECORRUPT,
                         "%s: corrupt JPEG: %zu bytes are too few for %ux%u pixels (the file is "
                         "cut short)",
                         name ? name : "image", len, j->ci.image_width, j->ci.image_height);
    if (st) {
        jpeg_abort_decompress(&j->ci);
        j->have_header = false;
        return st;
    }
    *height = (int)j->ci.image_height;
    *width = (int)j->ci.image_width;
    *components = j->ci.num_components;
    if (orientation) {
        *orientation = 1;
        if (want_exif)
            for (jpeg_saved_marker_ptr m = j->ci.marker_list; m; m = m->next)
                if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 &&
                    !memcmp(m->data, "Exif\0\0", 6)) {
                    *orientation = slim__exif_orientation(m->data, m->data_length);
                    break; /* the first EXIF segment wins */
                }
    }
    return SLIM_OK;
}

void slim__jpeg_scaled_size(const slim__jpeg *j, int denom, int *height, int *width)
{
    unsigned d = (unsigned)(denom > 0 ? denom : 1);
    *width = (int)((j->ci.image_width + d - 1) / d);
    *height = (int)((j->ci.image_height + d - 1) / d);
}

static void cmyk_to_rgb(const uint8_t *src, uint8_t *dst, int n, int out_c, bool adobe)
{
    for (int i = 0; i < n; i++) {
        int c = src[4 * i], m = src[4 * i + 1], y = src[4 * i + 2], k = src[4 * i + 3];
        int r, g, b;
        if (adobe) {
            r = c * k / 255;
            g = m * k / 255;
            b = y * k / 255;
        } else {
            r = (255 - c) * (255 - k) / 255;
            g = (255 - m) * (255 - k) / 255;
            b = (255 - y) * (255 - k) / 255;
        }
        if (out_c == 1) {
            /* TF rgb_to_grayscale weights (ITU-R BT.601). */
            dst[i] = (uint8_t)(0.2989f * r + 0.5870f * g + 0.1140f * b + 0.5f);
        } else {
            dst[out_c * i] = (uint8_t)r;
            dst[out_c * i + 1] = (uint8_t)g;
            dst[out_c * i + 2] = (uint8_t)b;
            if (out_c == 4)
                dst[4 * i + 3] = 255;
        }
    }
}

/* Whether libjpeg smooths this image across blocks: a progressive file whose
 * scans end (EOI) before every coefficient is known gets its missing AC
 * coefficients estimated from the neighbouring blocks' DC values (libjpeg's
 * block smoothing, on by default, as in TensorFlow). A crop of such an image
 * would take its own edges for the image's and come out different from the
 * whole decode, so these (rare) files are decoded in whole rows from the top.
 * After jpeg_start_decompress the whole file is in the coefficient buffer
 * and coef_bits is final: -1 (never sent) or the last scan's Al per coefficient. */
static bool smoothed_progressive(const struct jpeg_decompress_struct *ci)
{
    if (!ci->progressive_mode || !ci->coef_bits || !ci->do_block_smoothing)
        return false;
    for (int c = 0; c < ci->num_components; c++)
        for (int k = 0; k < DCTSIZE2; k++)
            if (ci->coef_bits[c][k] != 0)
                return true;
    return false;
}

/* Whether jpeg_crop_scanline would spoil the upsampling (libjpeg-turbo 2.1.5):
 * it resets each component's downsampled width to output_width * h / max_h,
 * which ignores a scaled IDCT doing part of the upsampling (a component whose
 * DCT size exceeds the smallest one, e.g. Y 2x2, Cb 1x4, Cr 1x1 at 1/4). When
 * such a component still needs an upsampler (h1v2 fancy reads that width), its
 * right-hand columns are never filled in and a crop differs from the whole
 * decode. Such files decode whole rows. */
static bool crop_spoils_upsampling(const struct jpeg_decompress_struct *ci)
{
#if JPEG_LIB_VERSION >= 70
    int m = ci->min_DCT_h_scaled_size;
#else
    int m = ci->min_DCT_scaled_size;
#endif
    for (int c = 0; c < ci->num_components; c++) {
        const jpeg_component_info *k = &ci->comp_info[c];
#if JPEG_LIB_VERSION >= 70
        int s = k->DCT_h_scaled_size;
#else
        int s = k->DCT_scaled_size;
#endif
        if (s != m && (k->h_samp_factor * s != ci->max_h_samp_factor * m ||
                       k->v_samp_factor * s != ci->max_v_samp_factor * m))
            return true;
    }
    return false;
}

/* Decode [rx0, rx1) x [ry0, ry1) of the image in ci's source; sub: that source is
 * the index's cut, its pixel (0, 0) at (sx, sy) of the whole image. */
static slim_status decode_region(slim__jpeg *j, int denom, int channels, int rx0, int ry0, int rx1,
                                 int ry1, bool sub, int shift_x, int shift_y,
                                 const uint8_t **pixels, size_t *stride, int *bx, int *bw,
                                 slim_error *err)
{
    struct jpeg_decompress_struct *ci = &j->ci;
    bool cmyk = ci->jpeg_color_space == JCS_CMYK || ci->jpeg_color_space == JCS_YCCK;
    if (setjmp(j->em.jb))
        return jpeg_fail(j, err);
    if (sub) { /* the header libjpeg just read, with the smaller size */
        jpeg_abort_decompress(ci);
        jpeg_save_markers(ci, JPEG_APP0 + 1, 0);
        jpeg_mem_src(ci, j->index.sub, (unsigned long)j->index.sub_len);
        jpeg_read_header(ci, TRUE);
    }
    if (cmyk)
        ci->out_color_space = JCS_CMYK;
    else if (channels == 1)
        ci->out_color_space = JCS_GRAYSCALE;
    else if (channels == 4)
        ci->out_color_space = JCS_EXT_RGBX;
    else
        ci->out_color_space = JCS_RGB;
    ci->scale_num = 1;
    ci->scale_denom = (unsigned)(denom > 0 ? denom : 1);
    ci->dct_method = j->fast_dct ? JDCT_IFAST : JDCT_ISLOW;
    ci->do_fancy_upsampling = j->plain_upsampling ? FALSE : TRUE;
    jpeg_start_decompress(ci);
    j->started = true;
    int W = (int)ci->output_width, H = (int)ci->output_height;
    int x0 = rx0 < 0 ? 0 : rx0, y0 = ry0 < 0 ? 0 : ry0;
    int x1 = rx1 > W ? W : rx1, y1 = ry1 > H ? H : ry1;
    if (x1 <= x0 || y1 <= y0) {
        jpeg_abort_decompress(ci);
        j->started = j->have_header = false;
        return slim__error(err, SLIM_EINTERNAL, "%s: empty decode region", j->name);
    }
    bool smoothed = smoothed_progressive(ci);
    JDIMENSION xoff = (JDIMENSION)x0, width = (JDIMENSION)(x1 - x0);
    if (sub || smoothed || crop_spoils_upsampling(ci)) /* whole rows (a cut: about as wide) */
        xoff = 0, width = (JDIMENSION)W;
    else if (x0 > 0 || x1 < W)
        jpeg_crop_scanline(ci, &xoff, &width); /* widens to iMCU boundaries */
    int oc = ci->output_components;            /* 1, 3, 4 */
    size_t st = ((size_t)width * (size_t)channels + 31) & ~(size_t)31;
    size_t need = st * (size_t)(y1 - y0) + 64; /* slack: vector loads read past the last pixel */
    size_t row4 = cmyk ? (size_t)width * 4 + 64 : 0;
    if (need > j->cap) {
        free(j->buf);
        j->buf = malloc(need);
        j->cap = j->buf ? need : 0;
    }
    if (row4 > j->row4_cap) {
        free(j->row4);
        j->row4 = malloc(row4);
        j->row4_cap = j->row4 ? row4 : 0;
    }
    if (!j->buf || (cmyk && !j->row4)) {
        jpeg_abort_decompress(ci);
        j->started = j->have_header = false;
        return slim__error(err, SLIM_ENOMEM, "%s: cannot allocate %zu bytes", j->name, need);
    }
    if (y0 > 0 && (j->plain_upsampling || smoothed)) {
        /* With box (merged) upsampling, libjpeg-turbo 2.1.5's
         * jpeg_skip_scanlines reads and writes memory freed with the previous
         * image (valgrind, tests/data/test_images): decode the rows above the
         * region and drop them instead (and for smoothed images, to decode
         * exactly as the whole image is). */
        for (int r = 0; r < y0;) {
            JSAMPROW row = cmyk ? j->row4 : j->buf;
            int got = (int)jpeg_read_scanlines(ci, &row, 1);
            if (got <= 0) {
                snprintf(j->em.msg, sizeof j->em.msg, "no scanline returned at row %d",
                         shift_y + r);
                return jpeg_fail(j, err);
            }
            r += got;
        }
    } else if (y0 > 0) {
        jpeg_skip_scanlines(ci, (JDIMENSION)y0);
    }
    for (int r = 0; r < y1 - y0;) {
        JSAMPROW rows[8];
        int want = y1 - y0 - r < 8 ? y1 - y0 - r : 8;
        if (cmyk)
            want = 1;
        for (int k = 0; k < want; k++)
            rows[k] = cmyk ? j->row4 : j->buf + (size_t)(r + k) * st;
        int got = (int)jpeg_read_scanlines(ci, rows, (JDIMENSION)want);
        if (got <= 0) {
            snprintf(j->em.msg, sizeof j->em.msg, "no scanline returned at row %d",
                     shift_y + y0 + r);
            return jpeg_fail(j, err);
        }
        if (cmyk)
            cmyk_to_rgb(j->row4, j->buf + (size_t)r * st, (int)width, channels,
                        ci->saw_Adobe_marker);
        else if (oc != channels) /* cannot happen: libjpeg honours out_color_space */
            return jpeg_fail(j, err);
        r += got;
    }
    if (y1 == H && x0 == 0 && x1 == W)
        jpeg_finish_decompress(ci); /* whole image: reads up to EOI, notices truncation */
    else
        jpeg_abort_decompress(ci); /* rows below the region are never decoded */
    j->started = j->have_header = false;
    *pixels = j->buf;
    *stride = st;
    *bx = (int)xoff + shift_x;
    *bw = (int)width;
    return SLIM_OK;
}

slim_status slim__jpeg_decode(slim__jpeg *j, int denom, int channels, int rx0, int ry0, int rx1,
                              int ry1, const uint8_t **pixels, size_t *stride, int *bx, int *bw,
                              slim_error *err)
{
    struct jpeg_decompress_struct *ci = &j->ci;
    if (!j->have_header || j->started)
        return slim__error(err, SLIM_ESTATE, "jpeg decode without a fresh header");
    bool cmyk = ci->jpeg_color_space == JCS_CMYK || ci->jpeg_color_space == JCS_YCCK;
    /* Restart-indexed files: decode a JPEG of just the MCUs the region needs. */
    int sx = 0, sy = 0;
    bool sub = false;
    if (!cmyk && ci->restart_interval == 1 && !ci->progressive_mode) {
        int sh, sw, d = denom > 0 ? denom : 1;
        slim__jpeg_scaled_size(j, d, &sh, &sw);
        int cx0 = rx0 < 0 ? 0 : rx0, cy0 = ry0 < 0 ? 0 : ry0;
        int cx1 = rx1 > sw ? sw : rx1, cy1 = ry1 > sh ? sh : ry1;
        sub = cx0 < cx1 && cy0 < cy1 &&
              slim__jpeg_index_crop(&j->index, j->data, j->len, d, cx0, cy0, cx1, cy1, &sx, &sy);
    }
    slim_status st = decode_region(j, denom, channels, rx0 - sx, ry0 - sy, rx1 - sx, ry1 - sy, sub,
                                   sx, sy, pixels, stride, bx, bw, err);
    j->last_cut = !st && sub;
    return st;
}

/* ---- orientation --------------------------------------------------------- */

slim_status slim__image_orient(slim_image *img, int o, slim_error *err)
{
    if (o <= 1 || o > 8)
        return SLIM_OK;
    int H = img->height, W = img->width, C = img->channels;
    bool transpose = o >= 5; /* 5..8 swap the axes */
    int OH = transpose ? W : H, OW = transpose ? H : W;
    uint8_t *dst = malloc((size_t)OH * OW * C + 1);
    if (!dst)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    /* For output (y, x) find the source pixel. EXIF 2: mirror; 3: rotate 180;
     * 4: flip vertical; 5: transpose; 6: rotate 90 CW; 7: transverse; 8: rotate 90 CCW. */
    for (int y = 0; y < OH; y++)
        for (int x = 0; x < OW; x++) {
            int sy, sx;
            switch (o) {
            case 2: sy = y, sx = W - 1 - x; break;
            case 3: sy = H - 1 - y, sx = W - 1 - x; break;
            case 4: sy = H - 1 - y, sx = x; break;
            case 5: sy = x, sx = y; break;
            case 6: sy = H - 1 - x, sx = y; break;
            case 7: sy = H - 1 - x, sx = W - 1 - y; break;
            default: sy = x, sx = W - 1 - y; break; /* 8 */
            }
            memcpy(dst + ((size_t)y * OW + x) * C, img->data + ((size_t)sy * W + sx) * C,
                   (size_t)C);
        }
    free(img->data);
    img->data = dst;
    img->height = OH;
    img->width = OW;
    return SLIM_OK;
}

/* ---- whole-image decode --------------------------------------------------- */

static slim_status decode_png(const void *data, size_t len, const slim_decode_opts *o,
                              slim_image *out, slim_error *err)
{
    size_t cap = 0;
    out->data = NULL;
    slim_status st =
        slim__png_decode(NULL, data, len, o && o->name ? o->name : "image", o ? o->channels : 0,
                         &out->data, &cap, &out->height, &out->width, &out->channels, err);
    if (st)
        slim_image_fini(out);
    return st;
}

static slim_status decode_jpeg(const void *data, size_t len, const slim_decode_opts *o,
                               slim_image *out, slim_error *err)
{
    const char *name = o && o->name ? o->name : "image";
    slim__jpeg *j = slim__jpeg_new();
    if (!j)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    int H, W, comps, orient = 1;
    bool exif = o && o->exif_orientation;
    slim__jpeg_set_method(j, o && o->dct_fast, !(o && o->no_fancy_upscaling));
    slim__jpeg_set_recover_truncated(j, o && o->try_recover_truncated);
    slim_status st = slim__jpeg_header(j, data, len, name, exif, &H, &W, &comps, &orient, err);
    if (!st) {
        int c = o && o->channels ? o->channels : (comps == 1 ? 1 : 3);
        int d = o && o->scale_denom ? o->scale_denom : 1;
        if (d != 1 && d != 2 && d != 4 && d != 8) {
            st = slim__error(err, SLIM_EINVAL, "%s: scale_denom %d is not 1, 2, 4 or 8", name, d);
        } else {
            int sh, sw, bx, bw;
            slim__jpeg_scaled_size(j, d, &sh, &sw);
            const uint8_t *px;
            size_t stride;
            st = slim__jpeg_decode(j, d, c, 0, 0, sw, sh, &px, &stride, &bx, &bw, err);
            if (!st) {
                out->data = malloc((size_t)sh * sw * c + 1);
                if (!out->data) {
                    st = slim__error(err, SLIM_ENOMEM, "out of memory");
                } else {
                    for (int y = 0; y < sh; y++)
                        memcpy(out->data + (size_t)y * sw * c, px + (size_t)y * stride,
                               (size_t)sw * c);
                    out->height = sh;
                    out->width = sw;
                    out->channels = c;
                    out->truncated = j->truncated;
                    if (orient != 1)
                        st = slim__image_orient(out, orient, err);
                }
            }
        }
    }
    slim__jpeg_free(j);
    if (st)
        slim_image_fini(out);
    return st;
}

slim_status slim_image_decode(const void *data, size_t len, const slim_decode_opts *opts,
                              slim_image *out, slim_error *err)
{
    memset(out, 0, sizeof *out);
    const char *name = opts && opts->name ? opts->name : "image";
    if (opts && opts->channels && opts->channels != 1 && opts->channels != 3)
        return slim__error(err, SLIM_EINVAL, "%s: channels must be 0, 1 or 3 (got %d)", name,
                           opts->channels);
    switch (slim_image_sniff(data, len)) {
    case SLIM_IMAGE_JPEG: return decode_jpeg(data, len, opts, out, err);
    case SLIM_IMAGE_PNG: return decode_png(data, len, opts, out, err);
    default: return slim__not_an_image(err, name, data, len);
    }
}

slim_status slim_image_probe(const void *data, size_t len, const char *name, int *height,
                             int *width, int *channels, slim_error *err)
{
    if (!name)
        name = "image";
    slim_image_format f = slim_image_sniff(data, len);
    if (f == SLIM_IMAGE_PNG) {
        slim_status st = slim__png_check_chunks(data, len, name, err);
        if (st)
            return st;
        png_image im;
        memset(&im, 0, sizeof im);
        im.version = PNG_IMAGE_VERSION;
        if (!png_image_begin_read_from_memory(&im, data, len))
            return slim__error(err, SLIM_ECORRUPT, "%s: corrupt PNG: %s", name, im.message);
        *height = (int)im.height;
        *width = (int)im.width;
        *channels = (im.format & PNG_FORMAT_FLAG_COLOR) ? 3 : 1;
        png_image_free(&im);
        return slim__pixel_limit(name, "PNG", im.width, im.height, err);
    }
    if (f == SLIM_IMAGE_JPEG) {
        slim__jpeg *j = slim__jpeg_new();
        if (!j)
            return slim__error(err, SLIM_ENOMEM, "out of memory");
        int comps;
        slim_status st =
            slim__jpeg_header(j, data, len, name, false, height, width, &comps, NULL, err);
        *channels = comps == 1 ? 1 : 3;
        slim__jpeg_free(j);
        return st;
    }
    return slim__error(err, SLIM_ECORRUPT, "%s: not a JPEG or PNG image", name);
}

/* ---- PNG encoding --------------------------------------------------------- */

slim_status slim_image_encode_png(const slim_image *img, uint8_t **out, size_t *len,
                                  slim_error *err)
{
    *out = NULL;
    *len = 0;
    if (img->channels != 1 && img->channels != 3)
        return slim__error(err, SLIM_EINVAL, "PNG encoding needs 1 or 3 channels (got %d)",
                           img->channels);
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    im.width = (png_uint_32)img->width;
    im.height = (png_uint_32)img->height;
    im.format = img->channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
    png_alloc_size_t size = 0;
    if (!png_image_write_to_memory(&im, NULL, &size, 0, img->data, 0, NULL))
        return slim__error(err, SLIM_EINTERNAL, "PNG encoding failed: %s", im.message);
    *out = malloc(size ? size : 1);
    if (!*out)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    if (!png_image_write_to_memory(&im, *out, &size, 0, img->data, 0, NULL)) {
        free(*out);
        *out = NULL;
        return slim__error(err, SLIM_EINTERNAL, "PNG encoding failed: %s", im.message);
    }
    *len = (size_t)size;
    return SLIM_OK;
}

slim_status slim_image_write_png(const char *path, const slim_image *img, slim_error *err)
{
    uint8_t *buf;
    size_t len;
    slim_status st = slim_image_encode_png(img, &buf, &len, err);
    if (st)
        return st;
    FILE *f = fopen(path, "wbe");
    if (!f) {
        free(buf);
        return slim__data_error(err, SLIM_EIO, path, "%s: cannot create: %m", path);
    }
    size_t w = fwrite(buf, 1, len, f);
    free(buf);
    if (fclose(f) != 0 || w != len)
        return slim__data_error(err, SLIM_EIO, path, "%s: write failed", path);
    return SLIM_OK;
}
