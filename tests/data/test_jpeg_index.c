/* tests/data/test_jpeg_index.c - restart-indexed JPEGs (datasets/jpeg_index.c):
 * the transcode is lossless (the same pixels as the source), crops decoded
 * through the index equal the whole-image decode pixel for pixel at every
 * DCT scale, channel count, decoder setting and chroma layout, damaged files
 * give errors or fall back to the plain decode (never a crash), and a folder
 * conversion stores indexed JPEGs (or the source bytes with keep_jpeg_bytes),
 * as does rewriting shards of source JPEGs (--input_records).
 * The JPEGs are made here with libjpeg; ../shared/data's files are added when
 * present. */
#include "datasets/convert.h"
#include "datasets/image.h"
#include "datasets/jpeg_index.h"
#include "tests/data/tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jpeglib.h>

typedef struct layout {
    const char *name;
    int w, h, comps, hs, vs; /* luma sampling factors (chroma 1x1) */
    bool progressive;
} layout;

static const layout layouts[] = {
    {"4:2:0 227x149", 227, 149, 3, 2, 2, false},
    {"4:2:0 640x480", 640, 480, 3, 2, 2, false},
    {"4:2:2 100x77", 100, 77, 3, 2, 1, false},
    {"4:4:4 96x64", 96, 64, 3, 1, 1, false},
    {"4:1:1 131x50", 131, 50, 3, 4, 1, false},
    {"4:4:0 90x61", 90, 61, 3, 1, 2, false},
    {"gray 123x45", 123, 45, 1, 1, 1, false},
    {"progressive 4:2:0 200x120", 200, 120, 3, 2, 2, true},
};

static uint64_t rng = 88172645463325252ull;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

/* A smooth picture with noise on top (so the scan has stuffed 0xFF bytes). */
static uint8_t *make_jpeg(const layout *l, int quality, size_t *len)
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
    c.input_components = l->comps;
    c.in_color_space = l->comps == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, quality, TRUE);
    c.comp_info[0].h_samp_factor = l->hs;
    c.comp_info[0].v_samp_factor = l->vs;
    for (int k = 1; k < l->comps; k++)
        c.comp_info[k].h_samp_factor = c.comp_info[k].v_samp_factor = 1;
    if (l->progressive)
        jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    uint8_t *row = malloc((size_t)l->w * (size_t)l->comps);
    for (int y = 0; y < l->h; y++) {
        for (int x = 0; x < l->w; x++)
            for (int k = 0; k < l->comps; k++) {
                int v = (x * (3 + k) + y * (5 - k)) % 256 + (int)rnd(48) - 24;
                row[x * l->comps + k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        JSAMPROW r = row;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(row);
    *len = n;
    return buf;
}

/* Whole image at scale 1/d: a copy, *stride bytes a row. */
static uint8_t *decode_all(slim__jpeg *j, const uint8_t *d, size_t n, int denom, int ch, int *sw,
                           int *sh, size_t *fstride)
{
    int H, W, comps;
    slim_error err = {0};
    if (slim__jpeg_header(j, d, n, "whole", false, &H, &W, &comps, NULL, &err))
        return NULL;
    slim__jpeg_scaled_size(j, denom, sh, sw);
    const uint8_t *px;
    int bx, bw;
    if (slim__jpeg_decode(j, denom, ch, 0, 0, *sw, *sh, &px, fstride, &bx, &bw, &err))
        return NULL;
    uint8_t *full = malloc((size_t)*sh * *fstride);
    memcpy(full, px, (size_t)*sh * *fstride);
    return full;
}

/* Random regions of the indexed file, decoded through the index, against the
 * source's whole-image decode. *cut counts the decodes that used a cut. */
static int check_regions(slim__jpeg *j, const uint8_t *src, size_t sn, const uint8_t *idx,
                         size_t in, int regions, int *tried, int *cut)
{
    int bad = 0;
    slim__jpeg_index probe = {0};
    for (int fast = 0; fast <= 1; fast++) {
        slim__jpeg_set_method(j, fast, !fast);
        for (int denom = 1; denom <= 8; denom *= 2)
            for (int ch = 1; ch <= 4; ch += ch == 1 ? 2 : 1) {
                int sw, sh;
                size_t fstride;
                uint8_t *full = decode_all(j, src, sn, denom, ch, &sw, &sh, &fstride);
                if (!full) {
                    bad++;
                    continue;
                }
                for (int t = 0; t < regions; t++) {
                    int x0 = (int)rnd((unsigned)sw), y0 = (int)rnd((unsigned)sh);
                    int x1 = x0 + 1 + (int)rnd((unsigned)(sw - x0));
                    int y1 = y0 + 1 + (int)rnd((unsigned)(sh - y0));
                    int H, W, comps, sx, sy;
                    slim_error err = {0};
                    slim__jpeg_header(j, idx, in, "indexed", false, &H, &W, &comps, NULL, &err);
                    const uint8_t *px;
                    size_t stride;
                    int bx, bw;
                    if (slim__jpeg_decode(j, denom, ch, x0, y0, x1, y1, &px, &stride, &bx, &bw,
                                          &err)) {
                        tap_diag("%s", err.msg);
                        bad++;
                        continue;
                    }
                    (*tried)++;
                    bool viacut =
                        slim__jpeg_index_crop(&probe, idx, in, denom, x0, y0, x1, y1, &sx, &sy);
                    *cut += viacut;
                    if (bx > x0 || bx + bw < x1) {
                        bad++;
                        continue;
                    }
                    /* Without a cut, libjpeg's cropped scanlines take their first and last
                     * columns for image edges (test_images.c): those are not compared. */
                    int cx0 = x0, cx1 = x1;
                    if (!viacut && bx > 0 && cx0 < bx + 2)
                        cx0 = bx + 2;
                    if (!viacut && bx + bw < sw && cx1 > bx + bw - 2)
                        cx1 = bx + bw - 2;
                    for (int y = y0; y < y1 && cx0 < cx1; y++)
                        if (memcmp(px + (size_t)(y - y0) * stride + (size_t)(cx0 - bx) * ch,
                                   full + (size_t)y * fstride + (size_t)cx0 * ch,
                                   (size_t)(cx1 - cx0) * ch)) {
                            bad++;
                            tap_diag("differs: decoder setting %d, 1/%d, %d channels, region "
                                     "%d,%d..%d,%d, row %d",
                                     fast, denom, ch, x0, y0, x1, y1, y);
                            break;
                        }
                }
                free(full);
            }
    }
    slim__jpeg_index_fini(&probe);
    return bad;
}

static bool same_pixels(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    slim_image x, y;
    slim_decode_opts o = {.channels = 0, .name = "a"};
    slim_error err = {0};
    if (slim_image_decode(a, an, &o, &x, &err))
        return false;
    if (slim_image_decode(b, bn, &o, &y, &err)) {
        slim_image_fini(&x);
        return false;
    }
    bool same = x.width == y.width && x.height == y.height && x.channels == y.channels &&
                !memcmp(x.data, y.data, (size_t)x.width * x.height * x.channels);
    slim_image_fini(&x);
    slim_image_fini(&y);
    return same;
}

static void test_layouts(void)
{
    slim__jpeg *j = slim__jpeg_new();
    for (size_t k = 0; k < sizeof layouts / sizeof *layouts; k++) {
        const layout *l = &layouts[k];
        size_t sn, in;
        uint8_t *src = make_jpeg(l, 90, &sn), *idx = NULL;
        slim_error err = {0};
        slim_status st = slim__jpeg_add_restarts(src, sn, l->name, &idx, &in, &err);
        tap_ok(st == SLIM_OK && idx && same_pixels(src, sn, idx, in),
               "%s: the transcode decodes to the source's pixels (%zu -> %zu bytes)", l->name, sn,
               in);
        if (!idx) {
            free(src);
            continue;
        }
        /* Transcoding an indexed file again keeps it. */
        uint8_t *again = NULL;
        size_t an = 0;
        st = slim__jpeg_add_restarts(idx, in, l->name, &again, &an, &err);
        tap_ok(st == SLIM_OK && !again, "%s: an indexed file is kept as it is", l->name);
        free(again);
        int tried = 0, cut = 0;
        int bad = check_regions(j, src, sn, idx, in, 6, &tried, &cut);
        tap_ok(bad == 0 && cut > tried / 3,
               "%s: %d crops (scales 1..1/8, 1/3/4 channels, both decoder settings), %d through "
               "the index, equal the whole-image decode (%d differ)",
               l->name, tried, cut, bad);
        /* The plain file never takes the index. */
        slim__jpeg_index probe = {0};
        int sx, sy;
        tap_ok(!slim__jpeg_index_crop(&probe, src, sn, 1, 1, 1, 2, 2, &sx, &sy),
               "%s: the source (no restart markers) is not indexed", l->name);
        slim__jpeg_index_fini(&probe);
        free(src);
        free(idx);
    }
    slim__jpeg_free(j);
}

/* Truncated and overwritten scans and headers: every crop decodes or fails
 * with an error naming the file. */
static void test_damage(void)
{
    size_t sn, in;
    uint8_t *src = make_jpeg(&layouts[1], 90, &sn), *idx = NULL;
    slim_error err = {0};
    slim__jpeg_add_restarts(src, sn, "damage", &idx, &in, &err);
    if (!idx) {
        tap_ok(false, "transcode for the damage cases");
        free(src);
        return;
    }
    slim__jpeg *j = slim__jpeg_new();
    uint8_t *b = malloc(in);
    int decoded = 0, failed = 0, other = 0;
    /* SLIM_DAMAGE_ROUNDS=N: more rounds of each kind (a fuzzing run under the sanitizers). */
    const char *env = getenv("SLIM_DAMAGE_ROUNDS");
    int rounds = env && atoi(env) > 0 ? atoi(env) : 1, total = 60 * rounds;
    for (int u = 0; u < total; u++) {
        int t = u % 60;
        memcpy(b, idx, in);
        size_t n = in;
        if (t >= 40) {
            /* the headers and the scan's start: the frame size, tables, DRI, SOS */
            for (int k = 0; k < 1 + t % 3; k++)
                b[rnd(700)] = (uint8_t)rnd(256);
        } else if (t < 10) {
            n = in / 4 + (size_t)t * (in / 14); /* truncated inside the scan */
        } else if (t < 30) {
            for (int k = 0; k < 1 + t % 4; k++) /* bytes overwritten, markers included */
                b[in / 8 + rnd((unsigned)(in - in / 8 - 2))] = (uint8_t)(t & 1 ? 0xFF : rnd(256));
        } else {
            for (size_t p = in / 3; p + 1 < in; p++) /* an RST marker renumbered */
                if (b[p] == 0xFF && b[p + 1] >= 0xD0 && b[p + 1] <= 0xD7) {
                    b[p + 1] = (uint8_t)(0xD0 + (b[p + 1] + 1 + (unsigned)t) % 8);
                    break;
                }
        }
        for (int r = 0; r < 4; r++) {
            int H, W, comps;
            if (slim__jpeg_header(j, b, n, "damaged", false, &H, &W, &comps, NULL, &err)) {
                failed++;
                continue;
            }
            /* a region inside the size the (maybe damaged) header gives */
            int d = 1 + (r & 1), sh, sw;
            slim__jpeg_scaled_size(j, d, &sh, &sw);
            int x0 = (int)rnd((unsigned)sw), y0 = (int)rnd((unsigned)sh);
            int x1 = x0 + 1 + (int)rnd((unsigned)(sw - x0 < 40 ? sw - x0 : 40));
            int y1 = y0 + 1 + (int)rnd((unsigned)(sh - y0 < 40 ? sh - y0 : 40));
            const uint8_t *px;
            size_t stride;
            int bx, bw;
            slim_status st =
                slim__jpeg_decode(j, d, 3, x0, y0, x1, y1, &px, &stride, &bx, &bw, &err);
            if (st == SLIM_OK)
                decoded++;
            else if (st == SLIM_ECORRUPT && strstr(err.msg, "damaged: corrupt JPEG"))
                failed++;
            else {
                other++;
                if (other < 4)
                    tap_diag("status %d: %s", (int)st, err.msg);
            }
        }
    }
    tap_ok(other == 0 && failed > 0 && decoded > 0,
           "damaged indexed files (%d): %d crops decoded, %d failed with the file named, %d "
           "otherwise",
           total, decoded, failed, other);
    /* The decoder is still good afterwards. */
    int tried = 0, cut = 0;
    int bad = check_regions(j, src, sn, idx, in, 2, &tried, &cut);
    tap_ok(bad == 0 && cut > 0, "the same decoder then decodes %d crops right", tried);
    free(b);
    free(src);
    free(idx);
    slim__jpeg_free(j);
}

/* Every file of ../shared/data/jpeg that transcodes: lossless, crops exact. */
static void test_shared(void)
{
    const char *files[] = {"libjpeg-turbo/testorig.jpg",
                           "libjpeg-turbo/testimgp.jpg",
                           "libjpeg-turbo/testimgari.jpg",
                           "libjpeg-turbo/testimggray.jpg",
                           "pillow/iptc.jpg",
                           "pillow/hopper_orientation_6.jpg",
                           "pillow/jpeg_ff00_header.jpg",
                           "pillow/junk_jpeg_header.jpg",
                           "pillow/pil_sample_cmyk.jpg",
                           "pillow/truncated_jpeg.jpg"};
    slim__jpeg *j = slim__jpeg_new();
    for (size_t k = 0; k < sizeof files / sizeof *files; k++) {
        char p[256];
        snprintf(p, sizeof p, "jpeg/%s", files[k]);
        size_t sn, in;
        uint8_t *src = tap_read_file(tap_data_path(p), &sn), *idx = NULL;
        slim_error err = {0};
        slim_status st = slim__jpeg_add_restarts(src, sn, files[k], &idx, &in, &err);
        if (strstr(files[k], "cmyk") || strstr(files[k], "truncated")) {
            tap_ok(st == SLIM_OK && !idx, "%s: kept as it is (CMYK, or damaged)", files[k]);
        } else {
            int tried = 0, cut = 0, bad = -1;
            if (idx)
                bad = check_regions(j, src, sn, idx, in, 3, &tried, &cut);
            tap_ok(st == SLIM_OK && idx && same_pixels(src, sn, idx, in) && bad == 0 && cut > 0,
                   "%s: transcoded losslessly (%zu -> %zu bytes); %d crops, %d through the "
                   "index, exact",
                   files[k], sn, in, tried, cut);
        }
        if (idx && strstr(files[k], "orientation")) {
            int H, W, c, o;
            slim__jpeg_header(j, idx, in, files[k], true, &H, &W, &c, &o, &err);
            tap_ok(o == 6, "%s: the EXIF orientation survives (%d)", files[k], o);
        }
        free(src);
        free(idx);
    }
    slim__jpeg_free(j);
}

/* A folder conversion stores indexed JPEGs by default, the source bytes with keep_jpeg_bytes. */
static void test_convert(void)
{
    char in[600], out[600], out2[600];
    snprintf(in, sizeof in, "%s/imgs", tap_tmpdir());
    snprintf(out, sizeof out, "%s/indexed", tap_tmpdir());
    snprintf(out2, sizeof out2, "%s/kept", tap_tmpdir());
    mkdir(in, 0755);
    char cls[700];
    snprintf(cls, sizeof cls, "%s/a", in);
    mkdir(cls, 0755);
    size_t sn;
    uint8_t *src = make_jpeg(&layouts[0], 85, &sn);
    char f[800];
    snprintf(f, sizeof f, "%s/x.jpg", cls);
    tap_write_file(f, src, sn);
    for (int keep = 0; keep <= 1; keep++) {
        convert_opts o = {.input_dir = in,
                          .output_dir = keep ? out2 : out,
                          .shards = 1,
                          .num_threads = 1,
                          .keep_jpeg_bytes = keep};
        convert_result res;
        slim_error err = {0};
        slim_status st = slim__convert_folder(&o, &res, &err);
        char shard[800];
        snprintf(shard, sizeof shard, "%s/train-00000-of-00001", o.output_dir);
        slim_tfrecord_reader *r = NULL;
        const uint8_t *d = NULL;
        size_t len = 0;
        int64_t off;
        slim_example *ex = NULL;
        const uint8_t *jb = NULL;
        size_t jn = 0;
        if (!st && !slim_tfrecord_open(shard, SLIM_COMPRESSION_AUTO, true, &r, &err) &&
            !slim_tfrecord_next(r, &d, &len, &off, &err) && d &&
            !slim_example_parse(d, len, &ex, &err))
            slim_example_bytes(ex, "image/encoded", 0, &jb, &jn);
        slim__jpeg_index probe = {0};
        int sx, sy;
        bool indexed = jb && slim__jpeg_index_crop(&probe, jb, jn, 1, 100, 60, 140, 90, &sx, &sy);
        if (keep)
            tap_ok(jb && jn == sn && !memcmp(jb, src, sn) && !indexed,
                   "keep_jpeg_bytes: the record holds the source file's bytes");
        else
            tap_ok(jb && indexed && same_pixels(jb, jn, src, sn),
                   "convert: the record holds an indexed JPEG with the source's pixels (%zu -> %zu "
                   "bytes)",
                   sn, jn);
        slim__jpeg_index_fini(&probe);
        slim_example_free(ex);
        if (r)
            slim_tfrecord_close(r);
    }
    free(src);
}

static uint8_t *slurp(const char *path, size_t *n)
{
    uint8_t *d = tap_read_file(path, n);
    if (!d)
        *n = 0;
    return d;
}

/* --input_records: shards of source JPEGs -> the shards a default folder conversion writes. */
static void test_records(void)
{
    char in[600], plain[600], idx[600], re[600];
    snprintf(in, sizeof in, "%s/imgs2", tap_tmpdir());
    snprintf(plain, sizeof plain, "%s/plain2", tap_tmpdir());
    snprintf(idx, sizeof idx, "%s/idx2", tap_tmpdir());
    snprintf(re, sizeof re, "%s/re2", tap_tmpdir());
    mkdir(in, 0755);
    for (int c = 0; c < 2; c++) {
        char cls[700];
        snprintf(cls, sizeof cls, "%s/c%d", in, c);
        mkdir(cls, 0755);
        for (int i = 0; i < 3; i++) {
            size_t sn;
            uint8_t *src = make_jpeg(&layouts[(size_t)(c * 3 + i) % 8], 80 + i, &sn);
            char f[800];
            snprintf(f, sizeof f, "%s/%d.jpg", cls, i);
            tap_write_file(f, src, sn);
            free(src);
        }
    }
    convert_result res;
    slim_error err = {0};
    convert_opts o = {.input_dir = in,
                      .output_dir = plain,
                      .shards = 2,
                      .num_threads = 2,
                      .keep_jpeg_bytes = true};
    slim_status st = slim__convert_folder(&o, &res, &err);
    o.output_dir = idx;
    o.keep_jpeg_bytes = false;
    if (!st)
        st = slim__convert_folder(&o, &res, &err);
    char s0[800], s1[800];
    snprintf(s0, sizeof s0, "%s/train-00000-of-00002", plain);
    snprintf(s1, sizeof s1, "%s/train-00001-of-00002", plain);
    const char *files[2] = {s0, s1};
    convert_opts r = {.output_dir = re, .num_threads = 2};
    if (!st)
        st = slim__convert_records(files, 2, NULL, &r, &res, &err);
    bool same = !st;
    for (int k = 0; k < 2 && same; k++) {
        char a[800], b[800];
        snprintf(a, sizeof a, "%s/train-0000%d-of-00002", idx, k);
        snprintf(b, sizeof b, "%s/train-0000%d-of-00002", re, k);
        size_t an, bn;
        uint8_t *x = slurp(a, &an), *y = slurp(b, &bn);
        same = x && y && an == bn && !memcmp(x, y, an);
        free(x);
        free(y);
    }
    char lab[800];
    snprintf(lab, sizeof lab, "%s/labels.txt", re);
    tap_ok(same && res.indexed == 6 && res.kept == 0 && res.images == 6 && access(lab, R_OK) == 0,
           "--input_records: 6 records rewritten, the shards equal the folder conversion's byte "
           "for byte, labels.txt copied (%s)",
           st ? err.msg : "");
    /* Again: the shards are there (resume). */
    st = slim__convert_records(files, 2, NULL, &r, &res, &err);
    tap_ok(!st && res.shards_resumed == 2, "--input_records again: both shards kept (%d)",
           res.shards_resumed);
    /* The input's own folder is refused. */
    convert_opts self = {.output_dir = plain, .num_threads = 1};
    char moved[800];
    snprintf(moved, sizeof moved, "%s/renamed", plain);
    rename(s1, moved);
    const char *one[1] = {moved};
    st = slim__convert_records(one, 1, NULL, &self, &res, &err);
    tap_ok(st == SLIM_EINVAL && strstr(err.msg, "the output folder is the input's"),
           "--input_records into the input's folder is refused: %s", err.msg);
    /* A corrupt record: fail names it; skip ends that file there. */
    size_t n;
    uint8_t *d = slurp(s0, &n);
    if (d && n > 100) {
        d[n / 2] ^= 0x5a;
        char bad[800], out3[800];
        snprintf(bad, sizeof bad, "%s/bad-00000", tap_tmpdir());
        snprintf(out3, sizeof out3, "%s/re3", tap_tmpdir());
        tap_write_file(bad, d, n);
        const char *b1[1] = {bad};
        convert_opts f = {.output_dir = out3, .num_threads = 1};
        st = slim__convert_records(b1, 1, NULL, &f, &res, &err);
        tap_ok(st == SLIM_ECORRUPT && strstr(err.msg, "bad-00000") && strstr(err.msg, "CRC"),
               "a corrupt record fails, naming the file: %s", err.msg);
        f.on_error = SLIM_ON_ERROR_SKIP;
        st = slim__convert_records(b1, 1, NULL, &f, &res, &err);
        tap_ok(!st && res.skipped == 1 && res.images < 3,
               "on_error skip: the file ends at the corrupt record (%lld kept, %lld dropped)",
               (long long)res.images, (long long)res.skipped);
    }
    free(d);
    /* A record without a JPEG is copied as it is. */
    char pngrec[800], out4[800];
    snprintf(pngrec, sizeof pngrec, "%s/png-00000", tap_tmpdir());
    snprintf(out4, sizeof out4, "%s/re4", tap_tmpdir());
    uint8_t px[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, *png = NULL, *ex = NULL;
    slim_image img = {.data = px, .width = 2, .height = 2, .channels = 3};
    size_t pl = 0, el = 0;
    slim_example *e = NULL;
    slim_tfrecord_writer *w = NULL;
    if (!slim_image_encode_png(&img, &png, &pl, &err) && !slim_example_new(&e, &err) &&
        !slim_example_set_bytes(e, "image/encoded", png, pl) &&
        !slim_example_serialize(e, &ex, &el, &err) &&
        !slim_tfrecord_writer_new(pngrec, SLIM_COMPRESSION_NONE, &w, &err)) {
        slim_tfrecord_write(w, ex, el, &err);
        slim_tfrecord_writer_close(w, &err);
    }
    const char *p1[1] = {pngrec};
    convert_opts q = {.output_dir = out4, .num_threads = 1};
    st = slim__convert_records(p1, 1, NULL, &q, &res, &err);
    char o4[900];
    snprintf(o4, sizeof o4, "%s/png-00000", out4);
    size_t an, bn;
    uint8_t *x = slurp(pngrec, &an), *y = slurp(o4, &bn);
    tap_ok(!st && res.kept == 1 && res.indexed == 0 && x && y && an == bn && !memcmp(x, y, an),
           "a PNG record is copied byte for byte");
    free(x);
    free(y);
    free(png);
    free(ex);
    slim_example_free(e);
}

/* A 16x8 gray baseline JPEG that decodes but that libjpeg cannot re-encode:
 * the first AC coefficient of each block is 1024, an 11-bit magnitude the
 * decoder takes and the encoder refuses ("DCT coefficient out of range"),
 * after a COM marker of com_len bytes (more than libjpeg's first 4096-byte
 * memory-destination buffer, so the transcode has grown its buffer by the
 * time it fails). Made byte by byte: libjpeg's encoder would refuse it. */
static uint8_t *untranscodable_jpeg(size_t com_len, size_t *len)
{
    uint8_t *b = malloc(com_len + 200), *p = b;
    *p++ = 0xFF, *p++ = 0xD8; /* SOI */
    *p++ = 0xFF, *p++ = 0xFE; /* COM */
    *p++ = (uint8_t)((com_len + 2) >> 8), *p++ = (uint8_t)(com_len + 2);
    for (size_t i = 0; i < com_len; i++)
        *p++ = (uint8_t)('a' + i % 26);
    static const uint8_t tables[] = {
        0xFF, 0xDB, 0, 67, 0x00, /* DQT 0: all ones (64 bytes follow) */
    };
    memcpy(p, tables, sizeof tables);
    p += sizeof tables;
    memset(p, 1, 64);
    p += 64;
    static const uint8_t rest[] = {
        0xFF, 0xC0, 0, 11, 8, 0, 8, 0, 16, 1, 1, 0x11, 0, /* SOF0 16x8, 1 component */
        /* DHT DC 0: one 1-bit code "0" for size 0 */
        0xFF, 0xC4, 0, 20, 0x00, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00,
        /* DHT AC 0: two 2-bit codes, "00" EOB and "01" run 0 size 11 */
        0xFF, 0xC4, 0, 21, 0x10, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x0B, 0xFF,
        0xDA, 0, 8, 1, 1, 0x00, 0, 63, 0, /* SOS */
        /* each block: DC "0", AC "01" + 10000000000 (1024), EOB "00": 0x30 0x00 */
        0x30, 0x00, 0x30, 0x00, 0xFF, 0xD9};
    memcpy(p, rest, sizeof rest);
    p += sizeof rest;
    *len = (size_t)(p - b);
    return b;
}

/* Such a file is stored as it is (never a crash, nor an error): by the
 * transcode itself, a folder conversion and --input_records. */
static void test_untranscodable(void)
{
    size_t sn;
    uint8_t *src = untranscodable_jpeg(6000, &sn);
    slim_image img;
    slim_decode_opts d = {.channels = 3, .name = "coef.jpg"};
    slim_error err = {0};
    slim_status st = slim_image_decode(src, sn, &d, &img, &err);
    tap_ok(!st && img.width == 16 && img.height == 8,
           "the out-of-range-coefficient JPEG decodes: %s", st ? err.msg : "16x8");
    if (!st)
        slim_image_fini(&img);
    for (size_t com = 0; com <= 6000; com += 3000) { /* buffer grown or not */
        size_t n;
        uint8_t *b = untranscodable_jpeg(com, &n), *idx = NULL;
        size_t in = 0;
        st = slim__jpeg_add_restarts(b, n, "coef.jpg", &idx, &in, &err);
        tap_ok(!st && !idx,
               "a JPEG libjpeg cannot re-encode (COM of %zu bytes) is kept as it is: %s", com,
               st ? err.msg : "ok");
        free(idx);
        free(b);
    }
    /* Folder conversion: the record holds the source bytes. */
    char in[600], out[600], cls[700], f[800];
    snprintf(in, sizeof in, "%s/coef", tap_tmpdir());
    snprintf(out, sizeof out, "%s/coef-out", tap_tmpdir());
    snprintf(cls, sizeof cls, "%s/a", in);
    mkdir(in, 0755);
    mkdir(cls, 0755);
    snprintf(f, sizeof f, "%s/coef.jpg", cls);
    tap_write_file(f, src, sn);
    convert_opts o = {.input_dir = in, .output_dir = out, .shards = 1, .num_threads = 1};
    convert_result res;
    st = slim__convert_folder(&o, &res, &err);
    char shard[800];
    snprintf(shard, sizeof shard, "%s/train-00000-of-00001", out);
    size_t rn = 0;
    uint8_t *rec = st ? NULL : tap_read_file(shard, &rn);
    bool found = false;
    for (size_t i = 0; rec && i + sn <= rn && !found; i++)
        found = !memcmp(rec + i, src, sn);
    tap_ok(!st && res.images == 1 && res.skipped == 0 && found,
           "convert: the record holds the JPEG's own bytes (%s)", st ? err.msg : "ok");
    free(rec);
    /* --input_records: that shard again, the record kept. */
    char out2[800];
    snprintf(out2, sizeof out2, "%s/coef-re", tap_tmpdir());
    const char *files[1] = {shard};
    convert_opts r = {.output_dir = out2, .num_threads = 1};
    if (!st)
        st = slim__convert_records(files, 1, NULL, &r, &res, &err);
    tap_ok(!st && res.kept == 1 && res.indexed == 0,
           "--input_records: the record is kept as it is (%s)", st ? err.msg : "ok");
    free(src);
}

/* The frame header's size set to w x h (the scan left as it is). */
static void set_size(uint8_t *b, size_t n, int w, int h)
{
    for (size_t p = 2; p + 9 < n; p++)
        if (b[p] == 0xFF && (b[p + 1] == 0xC0 || b[p + 1] == 0xC2)) {
            b[p + 5] = (uint8_t)(h >> 8), b[p + 6] = (uint8_t)h;
            b[p + 7] = (uint8_t)(w >> 8), b[p + 8] = (uint8_t)w;
            return;
        }
}

/* One shard of one Example holding jpg under image/encoded. */
static void write_record_shard(const char *path, const uint8_t *jpg, size_t n)
{
    slim_error err = {0};
    slim_example *e = NULL;
    uint8_t *ex = NULL;
    size_t el = 0;
    slim_tfrecord_writer *w = NULL;
    if (!slim_example_new(&e, &err) && !slim_example_set_bytes(e, "image/encoded", jpg, n) &&
        !slim_example_serialize(e, &ex, &el, &err) &&
        !slim_tfrecord_writer_new(path, SLIM_COMPRESSION_NONE, &w, &err)) {
        slim_tfrecord_write(w, ex, el, &err);
        slim_tfrecord_writer_close(w, &err);
    }
    free(ex);
    slim_example_free(e);
}

/* Decompression bombs: a few KB claiming a huge size. Over the pixel limit:
 * the same error wherever the JPEG is opened (probe, decode, the pipeline's
 * header, the transcode, a folder and a records conversion); under it but
 * far too short for its size: the transcode keeps it without reading it. */
static void test_bombs(void)
{
    size_t sn;
    uint8_t *src = make_jpeg(&layouts[0], 85, &sn);
    const char *want = "bomb.jpg: JPEG of 25000x25000 pixels is larger than the limit of "
                       "268435456 pixels";
    set_size(src, sn, 25000, 25000);
    slim_error err = {0};
    uint8_t *idx = NULL;
    size_t in = 0;
    slim_status st = slim__jpeg_add_restarts(src, sn, "bomb.jpg", &idx, &in, &err);
    tap_ok(st == SLIM_EUNSUPPORTED && !idx, "transcode of a %zu-byte JPEG claiming 25000x25000: %s",
           sn, err.msg);
    tap_streq(err.msg, want, "  the limit's message");
    int h, w, c;
    err = (slim_error){0};
    st = slim_image_probe(src, sn, "bomb.jpg", &h, &w, &c, &err);
    tap_streq(err.msg, want, "probe: the same limit");
    slim_image img;
    slim_decode_opts d = {.channels = 3, .name = "bomb.jpg"};
    err = (slim_error){0};
    if (!slim_image_decode(src, sn, &d, &img, &err))
        slim_image_fini(&img);
    tap_streq(err.msg, want, "decode: the same limit");
    slim__jpeg *j = slim__jpeg_new();
    err = (slim_error){0};
    slim__jpeg_header(j, src, sn, "bomb.jpg", false, &h, &w, &c, NULL, &err);
    tap_streq(err.msg, want, "the pipeline's header: the same limit");
    slim__jpeg_free(j);
    set_size(src, sn, 65000, 65000);
    err = (slim_error){0};
    st = slim__jpeg_add_restarts(src, sn, "bomb.jpg", &idx, &in, &err);
    tap_ok(st == SLIM_EUNSUPPORTED &&
               strstr(err.msg, "65000x65000 pixels is larger than the limit"),
           "transcode claiming 65000x65000: %s", err.msg);
    /* --input_records: fails naming the record, or with skip keeps it. */
    set_size(src, sn, 25000, 25000);
    char shard[800], out[800], out2[800];
    snprintf(shard, sizeof shard, "%s/bomb-00000", tap_tmpdir());
    snprintf(out, sizeof out, "%s/bomb-out", tap_tmpdir());
    snprintf(out2, sizeof out2, "%s/bomb-out2", tap_tmpdir());
    write_record_shard(shard, src, sn);
    const char *files[1] = {shard};
    convert_opts r = {.output_dir = out, .num_threads = 1};
    convert_result res;
    err = (slim_error){0};
    st = slim__convert_records(files, 1, NULL, &r, &res, &err);
    tap_ok(st == SLIM_EUNSUPPORTED &&
               strstr(err.msg, "bomb-00000: record 0 at byte 0: JPEG of "
                               "25000x25000 pixels is larger than the limit"),
           "--input_records: the record over the limit fails, named: %s", err.msg);
    r.output_dir = out2;
    r.on_error = SLIM_ON_ERROR_SKIP;
    st = slim__convert_records(files, 1, NULL, &r, &res, &err);
    tap_ok(!st && res.kept == 1 && res.indexed == 0,
           "--input_records --on_error=skip: kept as it is (%lld kept)", (long long)res.kept);
    /* Folder conversion: the same error. */
    char dir[800], cls[900], f[1000], out3[800];
    snprintf(dir, sizeof dir, "%s/bombs", tap_tmpdir());
    snprintf(cls, sizeof cls, "%s/a", dir);
    snprintf(f, sizeof f, "%s/bomb.jpg", cls);
    snprintf(out3, sizeof out3, "%s/bomb-out3", tap_tmpdir());
    mkdir(dir, 0755);
    mkdir(cls, 0755);
    tap_write_file(f, src, sn);
    convert_opts o = {.input_dir = dir, .output_dir = out3, .shards = 1, .num_threads = 1};
    err = (slim_error){0};
    st = slim__convert_folder(&o, &res, &err);
    tap_ok(st == SLIM_EUNSUPPORTED && strstr(err.msg, "bomb.jpg: JPEG of 25000x25000 pixels is "
                                                      "larger than the limit"),
           "folder convert: the same limit: %s", err.msg);
    /* Under the limit (16384x16384) but a few KB: the transcode keeps it unread. */
    set_size(src, sn, 16384, 16384);
    err = (slim_error){0};
    st = slim__jpeg_add_restarts(src, sn, "short.jpg", &idx, &in, &err);
    tap_ok(!st && !idx, "a %zu-byte JPEG claiming 16384x16384 is kept as it is", sn);
    err = (slim_error){0};
    st = slim_image_probe(src, sn, "short.jpg", &h, &w, &c, &err);
    tap_ok(st == SLIM_ECORRUPT &&
               strstr(err.msg, "short.jpg: corrupt JPEG: 17267 bytes are too few "
                               "for 16384x16384 pixels (the file is cut short)"),
           "...and refused as cut short where it is decoded: %s", err.msg);
    free(idx);
    free(src);
}

int main(void)
{
    test_layouts();
    test_damage();
    test_convert();
    test_records();
    test_untranscodable();
    test_bombs();
    if (tap_shared_data())
        test_shared();
    else
        tap_diag("../shared/data is absent: its files are not tried");
    return tap_done();
}
