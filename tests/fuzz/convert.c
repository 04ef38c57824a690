/*
 * tests/fuzz/convert.c - any bytes as an image in a folder `slimrun convert`
 * turns into TFRecord shards (in/a/img.jpg beside a valid in/b/ok.png),
 * optionally with a bounding-box CSV, then the shard rewritten as
 * `convert --input_records` does.
 *
 * data[0] is the options, data[1..2] the image's length L (little-endian),
 * then L bytes of image and the rest, the CSV:
 *   bit 0  on_error skip (else fail)   bit 1  keep the JPEG bytes (no transcode)
 *   bit 2  the CSV as --bounding_boxes bit 3  verify_decode
 *   bit 4  then --input_records on the shard written
 * Properties: errors say why; a conversion that succeeds wrote one record
 * per image it did not skip; the image stored decodes to the source's
 * pixels (the restart transcode is lossless), and so does the one
 * --input_records rewrote.
 */
#include "datasets/convert.h"
#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Whether two encoded images decode (RGB) to the same pixels; -1 when a does not decode. */
static int same_pixels(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    slim_decode_opts o = {.channels = 3, .name = "a"};
    slim_image x, y;
    slim_error err = {0};
    if (slim_image_decode(a, an, &o, &x, &err))
        return -1;
    int same = 0;
    if (!slim_image_decode(b, bn, &o, &y, &err)) {
        same = x.width == y.width && x.height == y.height &&
               !memcmp(x.data, y.data, (size_t)x.width * x.height * 3);
        slim_image_fini(&y);
    }
    slim_image_fini(&x);
    return same;
}

/* The shard's records: how many, and the one of img.jpg checked against src. */
static int check_shard(const char *path, const uint8_t *src, size_t sn, bool *found)
{
    slim_tfrecord_reader *r;
    slim_error err = {0};
    FUZZ_CHECK(slim_tfrecord_open(path, SLIM_COMPRESSION_AUTO, true, &r, &err) == SLIM_OK,
               "the shard opens: %s", err.msg);
    int n = 0;
    *found = false;
    for (;; n++) {
        const uint8_t *d;
        size_t len;
        int64_t off;
        FUZZ_CHECK(slim_tfrecord_next(r, &d, &len, &off, &err) == SLIM_OK, "%s", err.msg);
        if (!d)
            break;
        slim_example *ex;
        FUZZ_CHECK(slim_example_parse(d, len, &ex, &err) == SLIM_OK, "%s", err.msg);
        const uint8_t *name, *img;
        size_t nl, il;
        FUZZ_CHECK(!slim_example_bytes(ex, "image/filename", 0, &name, &nl) &&
                       !slim_example_bytes(ex, "image/encoded", 0, &img, &il),
                   "a filename and an image");
        if (nl == 7 && !memcmp(name, "img.jpg", 7)) {
            *found = true;
            int same = same_pixels(src, sn, img, il);
            FUZZ_CHECK(same != 0, "the stored image decodes to the source's pixels");
            if (same < 0) /* the source does not decode: stored as it is */
                FUZZ_CHECK(il == sn && !memcmp(img, src, sn), "kept as it is");
        }
        slim_example_free(ex);
    }
    slim_tfrecord_close(r);
    return n;
}

static int one(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    uint8_t opt = data[0];
    size_t li = (size_t)data[1] | (size_t)data[2] << 8;
    if (li > size - 3)
        li = size - 3;
    const uint8_t *img = data + 3, *csv = data + 3 + li;
    size_t cn = size - 3 - li;
    fuzz_clear_tmpdir();
    char in[512], out[512], out2[512], path[700];
    fuzz_path("in", in, sizeof in);
    fuzz_path("out", out, sizeof out);
    fuzz_path("out2", out2, sizeof out2);
    mkdir(in, 0700);
    snprintf(path, sizeof path, "%s/a", in);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/b", in);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/a/img.jpg", in);
    fuzz_write_file(path, img, li);
    slim_image ok = {.height = 3, .width = 5, .channels = 3, .data = (uint8_t[45]){1, 2, 3}};
    uint8_t *png;
    size_t pn;
    FUZZ_CHECK(slim_image_encode_png(&ok, &png, &pn, NULL) == SLIM_OK, "encode");
    snprintf(path, sizeof path, "%s/b/ok.png", in);
    fuzz_write_file(path, png, pn);
    free(png);
    char csvpath[600];
    fuzz_path("boxes.csv", csvpath, sizeof csvpath);
    fuzz_write_file(csvpath, csv, cn);

    convert_opts o = {.input_dir = in,
                      .output_dir = out,
                      .shards = 1,
                      .num_threads = 1,
                      .on_error = opt & 1 ? SLIM_ON_ERROR_SKIP : SLIM_ON_ERROR_FAIL,
                      .keep_jpeg_bytes = opt & 2,
                      .bounding_boxes = opt & 4 ? csvpath : NULL,
                      .verify_decode = opt & 8};
    convert_result res;
    slim_error err = {0};
    if (slim__convert_folder(&o, &res, &err)) {
        FUZZ_CHECK(err.msg[0], "a failed conversion says why");
        return 0;
    }
    FUZZ_CHECK(res.images + res.skipped == 2 && res.images >= 1, "%lld written, %lld skipped",
               (long long)res.images, (long long)res.skipped);
    snprintf(path, sizeof path, "%s/train-00000-of-00001", out);
    bool found;
    int n = check_shard(path, img, li, &found);
    FUZZ_CHECK(n == res.images && found == (res.skipped == 0), "%d records, %lld images", n,
               (long long)res.images);
    if (opt & 16) {
        const char *files[1] = {path};
        convert_opts o2 = {.output_dir = out2, .num_threads = 1, .on_error = o.on_error};
        convert_result r2;
        if (slim__convert_records(files, 1, NULL, &o2, &r2, &err)) {
            /* Only a JPEG the first convert stored unread (--nojpeg_restart
             * without --verify_decode) can stop the rewrite: one that does
             * not decode, named by shard and record (on_error skip keeps it). */
            bool unread = o.keep_jpeg_bytes && !o.verify_decode;
            FUZZ_CHECK(unread && o.on_error == SLIM_ON_ERROR_FAIL,
                       "a shard convert wrote is rewritten: %s", err.msg);
            FUZZ_CHECK(same_pixels(img, li, img, li) < 0,
                       "the rewrite stops only at an image that does not decode: %s", err.msg);
            FUZZ_CHECK(strstr(err.msg, path) && strstr(err.msg, ": record "),
                       "the rewrite's error names the shard and the record: %s", err.msg);
        } else {
            snprintf(path, sizeof path, "%s/train-00000-of-00001", out2);
            FUZZ_CHECK(check_shard(path, img, li, &found) == n, "as many records rewritten");
        }
    }
    return 0;
}

/* ---- seeds ------------------------------------------------------------------------ */

static void with_image(fuzz_seeds *s, const uint8_t *d, size_t n, const char *name)
{
    (void)name;
    if (n > 60000)
        return;
    static const char csv[] = "img.jpg,0.1,0.2,0.8,0.9\nimg.jpg,0,0,1,1\nok.png,0.5,0.5,0.6,0.6\n";
    uint8_t *b = malloc(3 + n + sizeof csv);
    for (int opt = 0; opt < 32; opt += 7) {
        b[0] = (uint8_t)opt;
        b[1] = (uint8_t)n;
        b[2] = (uint8_t)(n >> 8);
        memcpy(b + 3, d, n);
        memcpy(b + 3 + n, csv, sizeof csv - 1);
        fuzz_seed(s, b, 3 + n + sizeof csv - 1);
    }
    free(b);
}

static void seeds(fuzz_seeds *s)
{
    fuzz_each_shared("jpeg/libjpeg-turbo", 1 << 16, with_image, s);
    fuzz_each_shared("jpeg/pillow", 1 << 15, with_image, s);
}

FUZZ_TARGET(convert, .one = one, .seeds = seeds, .max_len = 1 << 15, .dict = "jpeg")
