/* datasets/jpeg_index.c - random access into JPEGs with a restart marker
 * after every MCU.
 *
 * A random crop needs the pixels of a small part of the image, but a plain
 * baseline JPEG is one Huffman-coded stream: every block up to the crop's
 * last row has to be entropy-decoded (jpeg_crop_scanline and
 * jpeg_skip_scanlines save only the IDCT and colour conversion of the rest),
 * and Huffman decoding is most of libjpeg-turbo's time. With a restart
 * interval of one MCU (DRI = 1) each MCU is coded on its own: byte-aligned,
 * its DC predictions restarting from 0, followed by an RSTn marker. Then the
 * MCUs a crop touches can be cut out and spliced into a smaller, valid JPEG
 * (same tables, the frame header's size changed, the restart markers
 * renumbered), which libjpeg-turbo decodes as a whole. Interior pixels come
 * out bit-identical to decoding the full image; a few pixels at the
 * sub-image's inner edges see a different neighbour in fancy chroma
 * upsampling, so the region is widened by a margin before it is rounded out
 * to MCUs.
 *
 * `slimrun convert` writes such JPEGs by default: a lossless transcode
 * (libjpeg's coefficient API, the quantized DCT coefficients unchanged,
 * optimized Huffman tables, the APPn/COM markers copied) of each image. */
#include "datasets/jpeg_index.h"
#include "datasets/image.h"
#include "core/error.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

static int be16(const uint8_t *p)
{
    return p[0] << 8 | p[1];
}

static bool grow(void **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return true;
    size_t c = need + need / 2;
    void *q = realloc(*p, c);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}

void slim__jpeg_index_fini(slim__jpeg_index *x)
{
    free(x->seg);
    free(x->sub);
    memset(x, 0, sizeof *x);
}

/* Walk the markers up to the scan. Only a baseline or extended sequential
 * Huffman frame with DRI = 1 and one scan of all components qualifies. */
static bool parse_header(const uint8_t *b, size_t n, size_t *sof, size_t *data, int *X, int *Y,
                         int *mw, int *mh)
{
    if (n < 4 || b[0] != 0xFF || b[1] != 0xD8)
        return false;
    size_t p = 2;
    int nf = 0, hmax = 1, vmax = 1, ri = 0;
    *sof = 0;
    for (;;) {
        if (p + 4 > n || b[p] != 0xFF)
            return false;
        int m = b[p + 1];
        if (m == 0xFF) { /* fill byte */
            p++;
            continue;
        }
        size_t L = (size_t)be16(b + p + 2);
        if (L < 2 || p + 2 + L > n)
            return false;
        const uint8_t *s = b + p + 4; /* segment payload, L - 2 bytes */
        if (m == 0xC0 || m == 0xC1) {
            if (*sof || L < 8 || s[0] != 8)
                return false;
            *sof = p;
            *Y = be16(s + 1);
            *X = be16(s + 3);
            nf = s[5];
            if (nf < 1 || nf > 4 || L != 8 + 3 * (size_t)nf || *X < 1 || *Y < 1)
                return false;
            for (int i = 0; i < nf; i++) {
                int h = s[7 + 3 * i] >> 4, v = s[7 + 3 * i] & 15;
                if (h < 1 || h > 4 || v < 1 || v > 4)
                    return false;
                hmax = h > hmax ? h : hmax;
                vmax = v > vmax ? v : vmax;
            }
        } else if (m >= 0xC2 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
            return false; /* progressive, lossless, hierarchical, arithmetic */
        } else if (m == 0xDD) {
            if (L != 4)
                return false;
            ri = be16(s);
        } else if (m == 0xDA) {
            if (!*sof || ri != 1 || L < 3 || s[0] != nf)
                return false;
            *data = p + 2 + L;
            break;
        } else if (m == 0xD8 || m == 0xD9 || (m >= 0xD0 && m <= 0xD7)) {
            return false;
        }
        p += 2 + L;
    }
    /* One component: its own 8x8 blocks; several: the interleaved MCU. */
    *mw = nf == 1 ? 8 : 8 * hmax;
    *mh = nf == 1 ? 8 : 8 * vmax;
    return true;
}

bool slim__jpeg_is_indexed(const uint8_t *b, size_t n)
{
    size_t sof, data;
    int X, Y, mw, mh;
    return parse_header(b, n, &sof, &data, &X, &Y, &mw, &mh);
}

/* Segment i's entropy-coded bytes are [seg[2i], seg[2i+1]): between one RSTn
 * (or the scan header) and the next. false unless there are exactly nseg,
 * numbered in order, and the scan ends with EOI. */
static bool index_scan(slim__jpeg_index *x, const uint8_t *b, size_t n, size_t p, size_t nseg)
{
    if (!grow((void **)&x->seg, &x->seg_cap, 2 * nseg * sizeof *x->seg))
        return false;
    uint32_t *seg = x->seg;
    size_t k = 0;
    seg[0] = (uint32_t)p;
    for (;;) {
        const uint8_t *q = memchr(b + p, 0xFF, n - p);
        if (!q)
            return false;
        p = (size_t)(q - b);
        size_t e = p;
        while (p + 1 < n && b[p + 1] == 0xFF) /* fill bytes before a marker */
            p++;
        if (p + 1 >= n)
            return false;
        int c = b[p + 1];
        if (c == 0x00) { /* a stuffed 0xFF data byte */
            p += 2;
            continue;
        }
        seg[2 * k + 1] = (uint32_t)e;
        if (c >= 0xD0 && c <= 0xD7) {
            if (c != 0xD0 + (int)(k & 7) || ++k >= nseg)
                return false;
            p += 2;
            seg[2 * k] = (uint32_t)p;
            continue;
        }
        return c == 0xD9 && k + 1 == nseg;
    }
}

bool slim__jpeg_index_crop(slim__jpeg_index *x, const uint8_t *b, size_t n, int d, int x0, int y0,
                           int x1, int y1, int *sx, int *sy)
{
    size_t sof = 0, data = 0;
    int X = 0, Y = 0, mw = 8, mh = 8;
    if (n >= UINT32_MAX || d < 1 || d > 8 || !parse_header(b, n, &sof, &data, &X, &Y, &mw, &mh))
        return false;
    int mcux = (X + mw - 1) / mw, mcuy = (Y + mh - 1) / mh;
    /* The region in full-resolution pixels, widened by the upsampling margin
     * (4 output pixels: a chroma sample of 4:1:1 on either side). */
    const int m = 4 * d;
    int fx0 = x0 * d - m, fy0 = y0 * d - m, fx1 = x1 * d + m, fy1 = y1 * d + m;
    int mx0 = fx0 < 0 ? 0 : fx0 / mw, my0 = fy0 < 0 ? 0 : fy0 / mh;
    int mx1 = (fx1 + mw - 1) / mw, my1 = (fy1 + mh - 1) / mh;
    mx1 = mx1 > mcux ? mcux : mx1;
    my1 = my1 > mcuy ? mcuy : my1;
    if (mx0 >= mx1 || my0 >= my1 || (mx0 == 0 && my0 == 0 && mx1 == mcux && my1 == mcuy))
        return false; /* nothing to cut away: the scan is not even read */
    if ((size_t)mcux * (size_t)mcuy > (n - data) / 2) /* each MCU but the last ends in RSTn */
        return false;
    if (!index_scan(x, b, n, data, (size_t)mcux * (size_t)mcuy))
        return false;
    int W2 = (mx1 * mw < X ? mx1 * mw : X) - mx0 * mw;
    int H2 = (my1 * mh < Y ? my1 * mh : Y) - my0 * mh;
    size_t need = data + 4;
    for (int my = my0; my < my1; my++) {
        size_t i0 = (size_t)my * (size_t)mcux + (size_t)mx0, i1 = i0 + (size_t)(mx1 - mx0) - 1;
        need += x->seg[2 * i1 + 1] - x->seg[2 * i0] + 2;
    }
    if (!grow((void **)&x->sub, &x->sub_cap, need))
        return false;
    uint8_t *o = x->sub;
    memcpy(o, b, data);
    o[sof + 5] = (uint8_t)(H2 >> 8);
    o[sof + 6] = (uint8_t)H2;
    o[sof + 7] = (uint8_t)(W2 >> 8);
    o[sof + 8] = (uint8_t)W2;
    size_t len = data;
    unsigned r = 0;
    for (int my = my0; my < my1; my++)
        for (int mx = mx0; mx < mx1; mx++) {
            size_t i = (size_t)my * (size_t)mcux + (size_t)mx;
            if (r) {
                o[len++] = 0xFF;
                o[len++] = (uint8_t)(0xD0 + ((r - 1) & 7));
            }
            size_t sl = x->seg[2 * i + 1] - x->seg[2 * i];
            memcpy(o + len, b + x->seg[2 * i], sl);
            len += sl;
            r++;
        }
    o[len++] = 0xFF;
    o[len++] = 0xD9;
    x->sub_len = len;
    *sx = mx0 * mw / d;
    *sy = my0 * mh / d;
    return true;
}

/* ---- the lossless transcode ------------------------------------------------ */

/* Everything the error path needs lives behind one pointer that does not
 * change after setjmp. */
typedef struct transcode {
    struct jpeg_decompress_struct di;
    struct jpeg_compress_struct co;
    struct jpeg_error_mgr pub; /* shared by both */
    struct jpeg_destination_mgr dest;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
    /* The output, always owned here: libjpeg's jpeg_mem_dest frees the buffer
     * it handed out when it grows it and tells the caller only at the end, so
     * an error after a growth left a freed pointer behind (issue 26). */
    unsigned char *buf;
    size_t cap, blen;
    bool dmade, cmade;
    bool writing; /* the source has been read: an error now is the encoder's */
    bool damaged; /* a warning other than extraneous bytes before a marker */
} transcode;

static void d_init(j_compress_ptr c)
{
    transcode *t = c->client_data;
    t->dest.next_output_byte = t->buf;
    t->dest.free_in_buffer = t->cap;
}

static boolean d_grow(j_compress_ptr c)
{
    transcode *t = c->client_data;
    size_t cap = t->cap * 2;
    unsigned char *b = cap > t->cap ? realloc(t->buf, cap) : NULL;
    if (!b)
        ERREXIT1(c, JERR_OUT_OF_MEMORY, 10);
    t->dest.next_output_byte = b + t->cap;
    t->dest.free_in_buffer = cap - t->cap;
    t->buf = b;
    t->cap = cap;
    return TRUE;
}

static void d_term(j_compress_ptr c)
{
    transcode *t = c->client_data;
    t->blen = t->cap - t->dest.free_in_buffer;
}

static void t_error_exit(j_common_ptr c)
{
    transcode *t = c->client_data;
    (*c->err->format_message)(c, t->msg);
    longjmp(t->jb, 1);
}

static void t_emit(j_common_ptr c, int level)
{
    transcode *t = c->client_data;
    if (level < 0 && c->err->msg_code != JWRN_EXTRANEOUS_DATA)
        t->damaged = true;
}

static void t_free(transcode *t)
{
    if (t->cmade)
        jpeg_destroy_compress(&t->co);
    if (t->dmade)
        jpeg_destroy_decompress(&t->di);
    free(t->buf);
    free(t);
}

/* A progressive file that ended (EOI) before every coefficient was sent:
 * coef_bits holds -1 (never sent) or the last scan's Al per coefficient. */
static bool incomplete(const struct jpeg_decompress_struct *di)
{
    if (!di->progressive_mode || !di->coef_bits)
        return false;
    for (int c = 0; c < di->num_components; c++)
        for (int k = 0; k < DCTSIZE2; k++)
            if (di->coef_bits[c][k] != 0)
                return true;
    return false;
}

/* Sampling libjpeg cannot upsample: a component whose factors do not divide
 * the largest ones ("Fractional sampling not implemented yet"). Its
 * coefficients transcode, but no decode gives pixels to check the copy by. */
static bool fractional_sampling(const struct jpeg_decompress_struct *di)
{
    for (int c = 0; c < di->num_components; c++) {
        const jpeg_component_info *k = &di->comp_info[c];
        if (di->max_h_samp_factor % k->h_samp_factor || di->max_v_samp_factor % k->v_samp_factor)
            return true;
    }
    return false;
}

slim_status slim__jpeg_add_restarts(const uint8_t *data, size_t len, const char *name,
                                    uint8_t **out, size_t *olen, slim_error *err)
{
    *out = NULL;
    *olen = 0;
    transcode *t = calloc(1, sizeof *t);
    if (!t)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    t->di.err = t->co.err = jpeg_std_error(&t->pub);
    t->pub.error_exit = t_error_exit;
    t->pub.emit_message = t_emit;
    t->di.client_data = t->co.client_data = t;
    if (setjmp(t->jb)) {
        /* The encoder refusing what the decoder read (a DCT coefficient out
         * of its range, say): the file is fine to decode, keep it. */
        slim_status st = t->writing ? SLIM_OK
                                    : slim__error(err, SLIM_ECORRUPT, "%s: corrupt JPEG: %s",
                                                  name ? name : "image", t->msg);
        t_free(t);
        return st;
    }
    jpeg_create_decompress(&t->di);
    t->dmade = true;
    jpeg_mem_src(&t->di, data, (unsigned long)len);
    jpeg_save_markers(&t->di, JPEG_COM, 0xFFFF);
    for (int m = 0; m < 16; m++)
        jpeg_save_markers(&t->di, JPEG_APP0 + m, 0xFFFF);
    jpeg_read_header(&t->di, TRUE);
    slim_status lim = slim__pixel_limit(name, "JPEG", t->di.image_width, t->di.image_height, err);
    if (lim) {
        t_free(t);
        return lim;
    }
    /* A Huffman-coded scan spends at least a bit on every block (its DC):
     * a file shorter than that is cut short, kept as it is without reading
     * its coefficients (which would take 2 bytes each of what the header
     * claims: a few KB claiming 16384x16384 would take 800 MB). */
    uint64_t blocks = 0;
    for (int c = 0; c < t->di.num_components; c++)
        blocks +=
            (uint64_t)t->di.comp_info[c].width_in_blocks * t->di.comp_info[c].height_in_blocks;
    bool short_file = !t->di.arith_code && (uint64_t)len * 8 < blocks;
    bool ok = !short_file && t->di.data_precision == 8 && !fractional_sampling(&t->di) &&
              (t->di.jpeg_color_space == JCS_YCbCr || t->di.jpeg_color_space == JCS_GRAYSCALE);
    bool already = t->di.restart_interval == 1 && !t->di.progressive_mode && !t->di.arith_code &&
                   t->di.comps_in_scan == t->di.num_components;
    if (!ok || already) { /* kept as it is */
        t_free(t);
        return SLIM_OK;
    }
    jvirt_barray_ptr *coef = jpeg_read_coefficients(&t->di);
    if (t->damaged || incomplete(&t->di)) {
        /* corrupt data: libjpeg made something up; or a progressive file
         * whose scans stop early: decoders smooth its missing coefficients,
         * a sequential copy would not. Keep the original. */
        t_free(t);
        return SLIM_OK;
    }
    t->writing = true;
    jpeg_create_compress(&t->co);
    t->cmade = true;
    t->cap = len + len / 8 + 4096; /* about the source's size; grown by doubling */
    if (!(t->buf = malloc(t->cap)))
        ERREXIT1(&t->co, JERR_OUT_OF_MEMORY, 11);
    t->dest.init_destination = d_init;
    t->dest.empty_output_buffer = d_grow;
    t->dest.term_destination = d_term;
    t->co.dest = &t->dest;
    jpeg_copy_critical_parameters(&t->di, &t->co);
    t->co.restart_interval = 1;
    t->co.optimize_coding = TRUE;
    jpeg_write_coefficients(&t->co, coef);
    for (jpeg_saved_marker_ptr m = t->di.marker_list; m; m = m->next) {
        /* libjpeg writes its own JFIF (APP0) and Adobe (APP14) headers. */
        if (t->co.write_JFIF_header && m->marker == JPEG_APP0 && m->data_length >= 5 &&
            !memcmp(m->data, "JFIF", 5))
            continue;
        if (t->co.write_Adobe_marker && m->marker == JPEG_APP0 + 14 && m->data_length >= 5 &&
            !memcmp(m->data, "Adobe", 5))
            continue;
        jpeg_write_marker(&t->co, m->marker, m->data, m->data_length);
    }
    jpeg_finish_compress(&t->co);
    jpeg_finish_decompress(&t->di);
    if (!t->damaged) {
        *out = t->buf;
        *olen = t->blen;
        t->buf = NULL;
    }
    t_free(t);
    return SLIM_OK;
}
