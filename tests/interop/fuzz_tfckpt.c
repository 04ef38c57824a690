/*
 * tests/interop/fuzz_tfckpt.c - the fuzz target for TensorFlow checkpoints:
 * any bytes as a V1 table, a V2 index with its data shard, or a snappy
 * block. The first byte picks the form:
 *
 *   0  a V1 checkpoint file
 *   1  a V2 checkpoint: u32 index length (little-endian), the index, then the
 *      data shard
 *   2  the rest is one snappy-compressed block of a table (the harness frames
 *      it with a valid CRC, an index block and a footer, so the block's
 *      decompression and entries are what gets fuzzed, not the CRC)
 *
 * Built two ways: with clang -fsanitize=fuzzer,address,undefined by
 * tests/interop/fuzz.sh (libFuzzer supplies main), and into
 * test_tfckpt_fuzz_replay, which feeds it every kept input
 * (tests/interop/fuzz/regress/). Opening and reading every tensor must return
 * a status, never crash, hang or leak.
 */
#include "interop/tf_checkpoint.h"
#include "interop/tf_table.h"

#include <slim/data.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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

/* A table whose only data block is the input, marked snappy. */
static void snappy_block(const uint8_t *d, size_t n)
{
    slim__buf b = {0};
    slim__buf_add(&b, d, n);
    uint8_t t[5] = {1};
    put32(t + 1, slim_crc32c_mask(slim_crc32c(slim_crc32c(0, d, n), t, 1)));
    slim__buf_add(&b, t, 5);
    /* index block: one entry "~" -> (0, n), one restart */
    size_t ioff = b.n;
    slim__buf ix = {0};
    slim__buf_byte(&ix, 0);
    slim__buf_byte(&ix, 1);
    uint8_t h[20];
    size_t hl = slim__varint64_put(h, 0);
    hl += slim__varint64_put(h + hl, n);
    slim__buf_byte(&ix, (uint8_t)hl);
    slim__buf_byte(&ix, '~');
    slim__buf_add(&ix, h, hl);
    uint8_t r[8] = {0};
    put32(r + 4, 1);
    slim__buf_add(&ix, r, 8);
    slim__buf_add(&b, ix.p, ix.n);
    t[0] = 0;
    put32(t + 1, slim_crc32c_mask(slim_crc32c(slim_crc32c(0, ix.p, ix.n), t, 1)));
    slim__buf_add(&b, t, 5);
    uint8_t f[48] = {0};
    size_t fl = slim__varint64_put(f, ioff); /* metaindex: reuse the index (never read) */
    fl += slim__varint64_put(f + fl, ix.n);
    fl += slim__varint64_put(f + fl, ioff);
    slim__varint64_put(f + fl, ix.n);
    for (int i = 0; i < 8; i++)
        f[40 + i] = (uint8_t)(0xdb4775248b80fb57ull >> (8 * i));
    slim__buf_add(&b, f, 48);
    slim__buf_free(&ix);
    if (!b.failed) {
        slim__tft *tab;
        if (slim__tft_open_mem(b.p, b.n, "fuzz", &tab, NULL) == SLIM_OK) {
            slim__tft_scan(tab, nop, NULL, NULL);
            const uint8_t *v;
            size_t vl;
            bool found;
            slim__tft_get(tab, "a", 1, &v, &vl, NULL, &found, NULL);
            slim__tft_close(tab);
        }
    }
    slim__buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    int mode = data[0] % 3;
    data++, size--;
    slim__ckpt *c = NULL;
    slim_error err;
    if (mode == 2) {
        snappy_block(data, size);
        return 0;
    }
    slim_status st;
    if (mode == 0) {
        st = slim__tfckpt_open_mem(data, size, NULL, 0, false, &c, &err);
    } else {
        if (size < 4)
            return 0;
        uint32_t n = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                     (uint32_t)data[3] << 24;
        if (n > size - 4)
            return 0;
        st = slim__tfckpt_open_mem(data + 4, n, data + 4 + n, size - 4 - n, true, &c, &err);
    }
    if (st == SLIM_OK) {
        for (int i = 0; i < slim__ckpt_count(c); i++) {
            const slim__ckpt_entry *e = slim__ckpt_at(c, i);
            if (e->numel > (1 << 20))
                continue; /* reading is bounded by the data anyway; keep runs fast */
            void *raw;
            size_t len;
            if (slim__ckpt_read_raw(c, i, &raw, &len, &err) == SLIM_OK)
                free(raw);
            if (slim__dt_is_real(e->dtype)) {
                float *f = malloc((size_t)e->numel * sizeof *f + 1);
                if (f)
                    slim__ckpt_read_f32(c, i, f, e->numel, &err);
                free(f);
            }
        }
        slim__ckpt_close(c);
    }
    return 0;
}
