/*
 * tests/fuzz/idx.c - any bytes as the IDX files of `slimrun convert
 * --dataset_name=mnist` (train-images-idx3-ubyte, train-labels-idx1-ubyte,
 * plain or gzipped): read, then converted to TFRecord shards.
 *
 * data[0] is the options, data[1..2] the length L of the images file
 * (little-endian), then L bytes of images and the labels file:
 *   bit 0  gzip the images file    bit 1  gzip the labels file
 *   bit 2  image_format raw (else PNG)
 * The test split (t10k-*) is a valid 1-image pair. Properties: errors name
 * the file; a file read has as many bytes as its dimensions say; a
 * conversion that succeeds wrote one record per image, each with its label
 * and its pixels (the PNG decodes to them, or the raw bytes are them).
 */
#include "datasets/convert.h"
#include "datasets/idx.h"
#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void put(const char *dir, const char *name, const uint8_t *d, size_t n, bool gz)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s%s", dir, name, gz ? ".gz" : "");
    if (gz) {
        size_t zn;
        uint8_t *z = fuzz_deflate(d, n, true, &zn);
        fuzz_write_file(path, z, zn);
        free(z);
    } else {
        fuzz_write_file(path, d, n);
    }
}

/* Every record of the train shard against the IDX data. */
static void check_shard(const char *path, const slim_idx *im, const slim_idx *lb, bool raw)
{
    slim_tfrecord_reader *r;
    slim_error err = {0};
    FUZZ_CHECK(slim_tfrecord_open(path, SLIM_COMPRESSION_AUTO, true, &r, &err) == SLIM_OK, "%s",
               err.msg);
    size_t n = (size_t)im->shape.dim[0], per = (size_t)im->shape.dim[1] * im->shape.dim[2];
    size_t k = 0;
    for (;; k++) {
        const uint8_t *d;
        size_t len;
        int64_t off;
        FUZZ_CHECK(slim_tfrecord_next(r, &d, &len, &off, &err) == SLIM_OK, "%s", err.msg);
        if (!d)
            break;
        FUZZ_CHECK(k < n, "no more records than images");
        slim_example *ex;
        FUZZ_CHECK(slim_example_parse(d, len, &ex, &err) == SLIM_OK, "%s", err.msg);
        const int64_t *v;
        size_t nv;
        FUZZ_CHECK(!slim_example_int64s(ex, "image/class/label", &v, &nv) && nv == 1 &&
                       v[0] == lb->data[k],
                   "record %zu's label", k);
        const uint8_t *img;
        size_t ilen;
        FUZZ_CHECK(!slim_example_bytes(ex, "image/encoded", 0, &img, &ilen), "an image");
        if (raw) {
            FUZZ_CHECK(ilen == per && !memcmp(img, im->data + k * per, per),
                       "record %zu's raw pixels", k);
        } else {
            slim_image px;
            FUZZ_CHECK(slim_image_decode(img, ilen, NULL, &px, &err) == SLIM_OK, "%s", err.msg);
            FUZZ_CHECK(px.height == (int)im->shape.dim[1] && px.width == (int)im->shape.dim[2] &&
                           px.channels == 1 && !memcmp(px.data, im->data + k * per, per),
                       "record %zu's PNG decodes to its pixels", k);
            slim_image_fini(&px);
        }
        slim_example_free(ex);
    }
    FUZZ_CHECK(k == n, "%zu records for %zu images", k, n);
    slim_tfrecord_close(r);
}

static int one(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    uint8_t opt = data[0];
    size_t li = (size_t)data[1] | (size_t)data[2] << 8;
    const uint8_t *images = data + 3;
    size_t rest = size - 3;
    if (li > rest)
        li = rest;
    fuzz_clear_tmpdir();
    char in[512], out[512];
    fuzz_path("in", in, sizeof in);
    fuzz_path("out", out, sizeof out);
    mkdir(in, 0700);
    put(in, "train-images-idx3-ubyte", images, li, opt & 1);
    put(in, "train-labels-idx1-ubyte", images + li, rest - li, opt & 2);
    static const uint8_t t_images[] = {0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4};
    static const uint8_t t_labels[] = {0, 0, 8, 1, 0, 0, 0, 1, 7};
    put(in, "t10k-images-idx3-ubyte", t_images, sizeof t_images, false);
    put(in, "t10k-labels-idx1-ubyte", t_labels, sizeof t_labels, false);

    char path[700];
    slim_idx im = {0}, lb = {0};
    slim_error err = {0};
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte%s", in, opt & 1 ? ".gz" : "");
    slim_status si = slim_idx_read(path, &im, &err);
    if (si)
        FUZZ_CHECK(strstr(err.msg, "train-images"), "errors name the file: %s", err.msg);
    snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte%s", in, opt & 2 ? ".gz" : "");
    slim_status sl = slim_idx_read(path, &lb, &err);
    if (sl)
        FUZZ_CHECK(strstr(err.msg, "train-labels"), "errors name the file: %s", err.msg);

    bool raw = opt & 4;
    convert_opts o = {
        .input_dir = in, .output_dir = out, .num_threads = 1, .image_format = raw ? "raw" : "png"};
    convert_result res;
    slim_status st = slim__convert_idx("mnist", &o, &res, &err);
    if (st) {
        FUZZ_CHECK(err.msg[0], "a failed conversion says why");
    } else {
        FUZZ_CHECK(!si && !sl, "a conversion reads both files");
        snprintf(path, sizeof path, "%s/mnist_train.tfrecord", out);
        check_shard(path, &im, &lb, raw);
    }
    slim_idx_fini(&im);
    slim_idx_fini(&lb);
    return 0;
}

/* ---- seeds ------------------------------------------------------------------------ */

static void seed(fuzz_seeds *s, uint8_t opt, int n, int h, int w)
{
    size_t li = 16 + (size_t)n * h * w, ll = 8 + (size_t)n;
    uint8_t *b = malloc(3 + li + ll), *p = b;
    *p++ = opt;
    *p++ = (uint8_t)li;
    *p++ = (uint8_t)(li >> 8);
    const uint8_t ih[16] = {0, 0, 8, 3,          0, 0, 0, (uint8_t)n,
                            0, 0, 0, (uint8_t)h, 0, 0, 0, (uint8_t)w};
    memcpy(p, ih, 16);
    p += 16;
    for (size_t i = 0; i < (size_t)n * h * w; i++)
        *p++ = (uint8_t)(i * 37);
    const uint8_t lh[8] = {0, 0, 8, 1, 0, 0, 0, (uint8_t)n};
    memcpy(p, lh, 8);
    p += 8;
    for (int i = 0; i < n; i++)
        *p++ = (uint8_t)(i % 10);
    fuzz_seed(s, b, (size_t)(p - b));
    free(b);
}

static void seeds(fuzz_seeds *s)
{
    for (int opt = 0; opt < 8; opt++) {
        seed(s, (uint8_t)opt, 3, 28, 28);
        seed(s, (uint8_t)opt, 5, 4, 7);
    }
}

FUZZ_TARGET(idx, .one = one, .seeds = seeds, .max_len = 8192)
