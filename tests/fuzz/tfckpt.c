/*
 * tests/fuzz/tfckpt.c - any bytes as a TensorFlow checkpoint (interop/): a V1
 * tensor-slice table, a V2 index with its data shard, or one snappy block of
 * a table; every tensor read.
 *
 * data[0] is the options, the rest the input:
 *   bits 0-1  0: a V1 file (in memory); 1: a V2 checkpoint: u32 index length
 *             (little-endian), the index, then the data shard (in memory);
 *             2: one snappy-compressed data block, which the harness frames
 *             into a table with right CRCs, an index block and a footer;
 *             3: a V1 file on disk, found by slim__ckpt_open's sniffing
 *   bit 2     read every tensor twice
 * The fuzz build defines FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, under which
 * the table blocks' and V2 tensors' CRCs are not compared (so mutations reach
 * what they protect); the replay build compares them.
 * Properties: errors say why; a tensor reads the same twice; every tensor
 * that reads, written as a V2 checkpoint and read back, has the same name,
 * dtype, shape and bytes.
 */
#include "interop/tf_checkpoint.h"
#include "interop/tf_table.h"
#include "runtime/ckpt_reader.h"
#include "tests/fuzz/fuzz.h"

#include <slim/data.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static slim_status nop(void *user, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen,
                       int64_t off, slim_error *err)
{
    (void)user, (void)key, (void)klen, (void)val, (void)vlen, (void)off, (void)err;
    return SLIM_OK;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void trailer(slim__buf *b, const uint8_t *d, size_t n, uint8_t type)
{
    uint8_t t[5] = {type};
    put32(t + 1, slim_crc32c_mask(slim_crc32c(slim_crc32c(0, d, n), t, 1)));
    slim__buf_add(b, t, 5);
}

/* A table whose only data block is the input, marked snappy. */
static void snappy_block(const uint8_t *d, size_t n)
{
    slim__buf b = {0}, ix = {0};
    slim__buf_add(&b, d, n);
    trailer(&b, d, n, 1);
    size_t ioff = b.n;
    /* the index block: "~" -> (0, n), one restart point */
    uint8_t h[20];
    size_t hl = slim__varint64_put(h, 0);
    hl += slim__varint64_put(h + hl, n);
    slim__buf_add(&ix, (uint8_t[]){0, 1, (uint8_t)hl, '~'}, 4);
    slim__buf_add(&ix, h, hl);
    slim__buf_add(&ix, (uint8_t[]){0, 0, 0, 0, 1, 0, 0, 0}, 8);
    slim__buf_add(&b, ix.p, ix.n);
    trailer(&b, ix.p, ix.n, 0);
    uint8_t f[48] = {0};
    size_t fl = slim__varint64_put(f, ioff); /* metaindex: the index again (never read) */
    fl += slim__varint64_put(f + fl, ix.n);
    fl += slim__varint64_put(f + fl, ioff);
    slim__varint64_put(f + fl, ix.n);
    for (int i = 0; i < 8; i++)
        f[40 + i] = (uint8_t)(SLIM__TFT_MAGIC >> (8 * i));
    slim__buf_add(&b, f, 48);
    slim__buf_free(&ix);
    FUZZ_CHECK(!b.failed, "out of memory framing the block");
    slim__tft *t;
    slim_error err = {0};
    if (slim__tft_open_mem(b.p, b.n, "fuzz", &t, &err) == SLIM_OK) {
        slim_status st = slim__tft_scan(t, nop, NULL, &err);
        FUZZ_CHECK(st == SLIM_OK || err.msg[0], "a failed scan says why");
        const uint8_t *v;
        size_t vl;
        bool found;
        slim__tft_get(t, "a", 1, &v, &vl, NULL, &found, &err);
        slim__tft_close(t);
    } else {
        FUZZ_CHECK(err.msg[0], "a failed open says why");
    }
    slim__buf_free(&b);
}

/* Every tensor that reads, written as V2 and read back. */
static void round_trip(slim__ckpt *c, const bool *ok)
{
    char prefix[512];
    fuzz_path("rt", prefix, sizeof prefix);
    slim__tfw *w;
    slim_error err = {0};
    FUZZ_CHECK(slim__tfw_new(prefix, SLIM__TFW_V2, 1, &w, &err) == SLIM_OK, "%s", err.msg);
    int written = 0;
    for (int i = 0; i < slim__ckpt_count(c); i++) {
        const slim__ckpt_entry *e = slim__ckpt_at(c, i);
        if (!ok[i])
            continue;
        void *d;
        size_t len;
        FUZZ_CHECK(slim__ckpt_read_raw(c, i, &d, &len, &err) == SLIM_OK, "a re-read: %s", err.msg);
        FUZZ_CHECK(slim__tfw_add(w, e->name, e->dtype, e->rank, e->dim, d, len, &err) == SLIM_OK,
                   "'%s' is written again: %s", e->name, err.msg);
        free(d);
        written++;
    }
    FUZZ_CHECK(slim__tfw_finish(w, &err) == SLIM_OK, "%s", err.msg);
    slim__ckpt *r;
    FUZZ_CHECK(slim__ckpt_open(prefix, &r, &err) == SLIM_OK, "what was written opens: %s", err.msg);
    int seen = 0;
    for (int i = 0; i < slim__ckpt_count(c); i++) {
        const slim__ckpt_entry *e = slim__ckpt_at(c, i);
        if (!ok[i])
            continue;
        int j = slim__ckpt_find(r, e->name);
        const slim__ckpt_entry *f = slim__ckpt_at(r, j);
        FUZZ_CHECK(f && f->dtype == e->dtype && f->rank == e->rank &&
                       !memcmp(f->dim, e->dim, sizeof e->dim),
                   "'%s' comes back with its dtype and shape", e->name);
        void *a, *b;
        size_t la, lb;
        FUZZ_CHECK(slim__ckpt_read_raw(c, i, &a, &la, &err) == SLIM_OK &&
                       slim__ckpt_read_raw(r, j, &b, &lb, &err) == SLIM_OK,
                   "%s", err.msg);
        FUZZ_CHECK(la == lb && !memcmp(a, b, la), "'%s' comes back bit for bit", e->name);
        free(a);
        free(b);
        seen++;
    }
    FUZZ_CHECK(seen == written, "every tensor written is read back");
    slim__ckpt_close(r);
}

static int one(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    uint8_t opt = data[0];
    int mode = opt & 3;
    data++, size--;
    if (mode == 2) {
        snappy_block(data, size);
        return 0;
    }
    fuzz_clear_tmpdir();
    slim__ckpt *c = NULL;
    slim_error err = {0};
    slim_status st;
    if (mode == 0) {
        st = slim__tfckpt_open_mem(data, size, NULL, 0, false, &c, &err);
    } else if (mode == 3) {
        char path[512];
        fuzz_write_file(fuzz_path("model.ckpt", path, sizeof path), data, size);
        st = slim__ckpt_open(path, &c, &err);
    } else {
        if (size < 4)
            return 0;
        uint32_t n = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                     (uint32_t)data[3] << 24;
        if (n > size - 4)
            return 0;
        st = slim__tfckpt_open_mem(data + 4, n, data + 4 + n, size - 4 - n, true, &c, &err);
    }
    FUZZ_CHECK(st == SLIM_OK || err.msg[0], "a failed open says why");
    if (st)
        return 0;
    bool *ok = calloc((size_t)slim__ckpt_count(c) + 1, sizeof *ok);
    int64_t total = 0;
    for (int i = 0; i < slim__ckpt_count(c); i++) {
        const slim__ckpt_entry *e = slim__ckpt_at(c, i);
        void *raw;
        size_t len;
        st = slim__ckpt_read_raw(c, i, &raw, &len, &err);
        FUZZ_CHECK(st == SLIM_OK || err.msg[0], "a failed read of '%s' says why", e->name);
        if (st)
            continue;
        if (opt & 4) {
            void *again;
            size_t l2;
            FUZZ_CHECK(slim__ckpt_read_raw(c, i, &again, &l2, &err) == SLIM_OK && l2 == len &&
                           !memcmp(raw, again, len),
                       "'%s' reads the same twice", e->name);
            free(again);
        }
        if (slim__dt_is_real(e->dtype)) {
            float *f = malloc((size_t)e->numel * sizeof *f + 1);
            FUZZ_CHECK(slim__ckpt_read_f32(c, i, f, e->numel, &err) == SLIM_OK,
                       "'%s' read as f32 once it reads: %s", e->name, err.msg);
            free(f);
        }
        free(raw);
        ok[i] = e->kind != SLIM__CK_META && e->name[0];
        total += (int64_t)len;
    }
    if (total < (1 << 20))
        round_trip(c, ok);
    free(ok);
    slim__ckpt_close(c);
    return 0;
}

/* ---- seeds ------------------------------------------------------------------------ */

static void add_file(fuzz_seeds *s, uint8_t opt, const char *rel)
{
    char p[1024];
    size_t n;
    uint8_t *d = fuzz_read_file(fuzz_shared(rel, p, sizeof p), &n);
    if (d)
        fuzz_seed_opt(s, opt, d, n);
    free(d);
}

/* opt 1: u32 index length, the index, the data (cut to keep seeds small) */
static void add_v2(fuzz_seeds *s, const char *prefix)
{
    char p[1024], rel[600];
    size_t ni, nd;
    snprintf(rel, sizeof rel, "%s.index", prefix);
    uint8_t *ix = fuzz_read_file(fuzz_shared(rel, p, sizeof p), &ni);
    snprintf(rel, sizeof rel, "%s.data-00000-of-00001", prefix);
    uint8_t *dt = fuzz_read_file(fuzz_shared(rel, p, sizeof p), &nd);
    if (ix && dt) {
        if (nd > 8192)
            nd = 8192;
        uint8_t *b = malloc(4 + ni + nd);
        put32(b, (uint32_t)ni);
        memcpy(b + 4, ix, ni);
        memcpy(b + 4 + ni, dt, nd);
        fuzz_seed_opt(s, 1, b, 4 + ni + nd);
        fuzz_seed_opt(s, 5, b, 4 + ni + nd);
        free(b);
    }
    free(ix);
    free(dt);
}

static void seeds(fuzz_seeds *s)
{
    add_file(s, 0, "tfckpt/tf-tfprof-v1/ckpt");
    add_file(s, 3, "tfckpt/tf-tfprof-v1/ckpt");
    add_v2(s, "tfckpt/tf-models-reference/reference_data_test/dense/model.ckpt");
    add_v2(s, "tfckpt/tf-models-reference/resnet/batch_norm/model.ckpt");
    add_v2(s, "tfckpt/tf-core-v2/old_string_tensors/foo");
    add_v2(s, "tfckpt/tf-core-v2/bundle_checkpoint/bundle_checkpoint");
    add_v2(s, "tfckpt/tf-core-v2/half_plus_two/00000123/variables/variables");
    add_v2(s, "tfckpt/tf-trt-mnist-v2/model.ckpt-46900");
    /* written here: a partitioned variable (V1 and V2), strings, int64 */
    for (int f = 1; f <= 2; f++) {
        char path[512];
        fuzz_path(f == 1 ? "seed_v1" : "seed_v2", path, sizeof path);
        slim__tfw *w;
        slim_error err = {0};
        if (slim__tfw_new(path, f, 1, &w, &err))
            abort();
        float v[12];
        for (int i = 0; i < 12; i++)
            v[i] = (float)i;
        int64_t dim[2] = {4, 3}, step = 9;
        slim__tfw_add_slice(w, "p", SLIM__DT_FLOAT, 2, dim, (int64_t[]){0, 0}, (int64_t[]){1, -1},
                            v, 12, &err);
        slim__tfw_add_slice(w, "p", SLIM__DT_FLOAT, 2, dim, (int64_t[]){1, 0}, (int64_t[]){3, -1},
                            v + 3, 36, &err);
        uint8_t str[8 + 3] = {3, 0, 0, 0, 0, 0, 0, 0, 'a', 'b', 'c'};
        slim__tfw_add(w, "s", SLIM__DT_STRING, 1, (int64_t[]){1}, str, sizeof str, &err);
        slim__tfw_add(w, "step", SLIM__DT_INT64, 0, NULL, &step, 8, &err);
        if (slim__tfw_finish(w, &err))
            abort();
        size_t ni, nd;
        char ip[600], dp[600];
        snprintf(ip, sizeof ip, "%s%s", path, f == 2 ? ".index" : "");
        snprintf(dp, sizeof dp, "%s.data-00000-of-00001", path);
        uint8_t *ix = fuzz_read_file(ip, &ni);
        if (f == 1) {
            fuzz_seed_opt(s, 0, ix, ni);
        } else {
            uint8_t *dt = fuzz_read_file(dp, &nd);
            uint8_t *b = malloc(4 + ni + nd);
            put32(b, (uint32_t)ni);
            memcpy(b + 4, ix, ni);
            memcpy(b + 4 + ni, dt, nd);
            fuzz_seed_opt(s, 1, b, 4 + ni + nd);
            free(b);
            free(dt);
        }
        free(ix);
    }
}

FUZZ_TARGET(tfckpt, .one = one, .seeds = seeds, .max_len = 1 << 16)
