/*
 * tests/fuzz/tfrecord.c - any bytes as a TFRecord file: the framing read as
 * it is, detected, or through GZIP / ZLIB, and every record parsed as a
 * tf.train.Example.
 *
 * data[0] is the options, the rest the file:
 *   bits 0-1  0: the bytes as they are, compression detected (AUTO);
 *             1: the harness gzips them, 2: zlibs them (the fuzzer controls
 *             the stream inside); 3: as they are, read as NONE
 *   bit 2     make the framing CRCs right first (else nearly every mutation
 *             stops at the first CRC)
 *   bit 3     check the data CRCs while reading
 * Properties: an error has a message naming the file; the records read,
 * written again with the same compression and read back, are the same
 * records; an Example re-serialized and parsed again has the same keys and
 * values.
 */
#include "tests/fuzz/fuzz.h"

#include <slim/data.h>

#include <stdlib.h>
#include <string.h>

#define MAX_RECORDS 64

static int one(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t opt = data[0];
    const uint8_t *body = data + 1;
    size_t n = size - 1;
    uint8_t *copy = malloc(n ? n : 1), *file = copy;
    if (n)
        memcpy(copy, body, n);
    if (opt & 4)
        fuzz_fix_tfrecord(copy, n);
    size_t fn = n;
    int mode = opt & 3;
    slim_compression comp = SLIM_COMPRESSION_AUTO;
    if (mode == 1 || mode == 2) {
        file = fuzz_deflate(copy, n, mode == 1, &fn);
        comp = mode == 1 ? SLIM_COMPRESSION_GZIP : SLIM_COMPRESSION_ZLIB;
    } else if (mode == 3) {
        comp = SLIM_COMPRESSION_NONE;
    }
    char path[512], path2[512];
    fuzz_write_file(fuzz_path("in.tfrecord", path, sizeof path), file, fn);

    slim_tfrecord_reader *r;
    slim_error err = {0};
    uint8_t *recs[MAX_RECORDS];
    size_t lens[MAX_RECORDS];
    int nrec = 0;
    slim_compression got = SLIM_COMPRESSION_NONE;
    if (slim_tfrecord_open(path, comp, opt & 8, &r, &err) == SLIM_OK) {
        got = slim_tfrecord_compression(r);
        FUZZ_CHECK(comp == SLIM_COMPRESSION_AUTO || got == comp, "the compression asked for");
        for (;;) {
            const uint8_t *rec;
            size_t len;
            int64_t off;
            slim_status st = slim_tfrecord_next(r, &rec, &len, &off, &err);
            if (st) {
                FUZZ_CHECK(err.msg[0] && strstr(err.msg, path), "errors name the file: %s",
                           err.msg);
                break;
            }
            if (!rec)
                break;
            fuzz_check_example(rec, len);
            if (nrec < MAX_RECORDS) {
                recs[nrec] = malloc(len ? len : 1);
                memcpy(recs[nrec], rec, len);
                lens[nrec++] = len;
            }
        }
        slim_tfrecord_close(r);
    } else {
        FUZZ_CHECK(err.msg[0], "a failed open says why");
    }

    /* What was read, written again and read back. */
    if (nrec) {
        slim_tfrecord_writer *w;
        fuzz_path("out.tfrecord", path2, sizeof path2);
        FUZZ_CHECK(slim_tfrecord_writer_new(path2, got, &w, &err) == SLIM_OK, "%s", err.msg);
        for (int i = 0; i < nrec; i++)
            FUZZ_CHECK(slim_tfrecord_write(w, recs[i], lens[i], &err) == SLIM_OK, "%s", err.msg);
        FUZZ_CHECK(slim_tfrecord_writer_close(w, &err) == SLIM_OK, "%s", err.msg);
        FUZZ_CHECK(slim_tfrecord_open(path2, SLIM_COMPRESSION_AUTO, true, &r, &err) == SLIM_OK,
                   "the written file opens: %s", err.msg);
        FUZZ_CHECK(slim_tfrecord_compression(r) == got, "its compression is detected");
        for (int i = 0; i <= nrec; i++) {
            const uint8_t *rec;
            size_t len;
            int64_t off;
            FUZZ_CHECK(slim_tfrecord_next(r, &rec, &len, &off, &err) == SLIM_OK, "%s", err.msg);
            if (i == nrec) {
                FUZZ_CHECK(!rec, "no more records than were written");
            } else {
                FUZZ_CHECK(rec && len == lens[i] && (!len || !memcmp(rec, recs[i], len)),
                           "record %d reads back as written", i);
            }
        }
        slim_tfrecord_close(r);
    }
    for (int i = 0; i < nrec; i++)
        free(recs[i]);
    if (file != copy)
        free(file);
    free(copy);
    return 0;
}

/* ---- seeds ------------------------------------------------------------------------ */

/* The first records of a shared file that fit in 12 KB, framed as they were. */
static void shared_records(fuzz_seeds *s, const uint8_t *d, size_t n, const char *name)
{
    (void)name;
    size_t keep = 0;
    while (keep + 16 <= n) {
        uint64_t len = 0;
        for (int i = 7; i >= 0; i--)
            len = len << 8 | d[keep + i];
        if (len > n - keep - 16 || keep + 16 + len > 12000)
            break;
        keep += 16 + (size_t)len;
    }
    if (!keep)
        return;
    fuzz_seed_opt(s, 0, d, keep);
    fuzz_seed_opt(s, 1 | 8, d, keep);
    fuzz_seed_opt(s, 2 | 4, d, keep);
    size_t zn;
    uint8_t *z = fuzz_deflate(d, keep, true, &zn); /* a gzip file, the fuzzer's to damage */
    fuzz_seed_opt(s, 0, z, zn);
    free(z);
}

static void seeds(fuzz_seeds *s)
{
    fuzz_each_shared("tfrecord", 1 << 30, shared_records, s);
    /* A few small Examples of every kind. */
    slim_example *ex;
    slim_example_new(&ex, NULL);
    const int64_t label[] = {3};
    const float box[] = {0.1f, 0.2f, 0.5f, 0.9f};
    slim_example_set_bytes(ex, "image/encoded", "\x89PNG\r\n\x1a\n", 8);
    slim_example_set_bytes(ex, "image/format", "png", 3);
    slim_example_set_int64s(ex, "image/class/label", label, 1);
    slim_example_set_floats(ex, "image/object/bbox/ymin", box, 4);
    slim_example_set_int64s(ex, "empty", NULL, 0);
    uint8_t *p[3];
    size_t l[3];
    slim_example_serialize(ex, &p[0], &l[0], NULL);
    p[1] = (uint8_t *)"";
    l[1] = 0;
    p[2] = p[0];
    l[2] = l[0];
    size_t fn;
    uint8_t *f = fuzz_frame_tfrecord((const uint8_t *const *)p, l, 3, &fn);
    for (int opt = 0; opt < 16; opt++)
        fuzz_seed_opt(s, (uint8_t)opt, f, fn);
    size_t zn;
    uint8_t *z = fuzz_deflate(f, fn, false, &zn);
    fuzz_seed_opt(s, 0, z, zn);
    free(z);
    free(f);
    free(p[0]);
    slim_example_free(ex);
}

FUZZ_TARGET(tfrecord, .one = one, .seeds = seeds, .max_len = 16384)
