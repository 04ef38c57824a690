/* interop/tf_table.c - reading and writing TensorFlow's sorted tables (see
 * tf_table.h for the layout). */
#include "interop/tf_table.h"

#include "core/error.h"

#include <slim/data.h>

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TRAILER 5 /* compression type + masked CRC */

slim_status slim__tf_error(slim_error *err, slim_status code, const char *fmt, ...)
{
    char raw[2048], safe[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    return slim__error(err, code, "%s", slim__printable(raw, safe, sizeof safe));
}

/* ---- small encodings ------------------------------------------------------ */

size_t slim__varint64_get(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (size_t i = 0; i < 10 && p + i < end; i++) {
        uint64_t b = p[i];
        if (i == 9 && b > 1)
            return 0; /* more than 64 bits */
        r |= (b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = r;
            return i + 1;
        }
    }
    return 0;
}

size_t slim__varint64_put(uint8_t *buf, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        buf[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    buf[n++] = (uint8_t)v;
    return n;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void slim__buf_add(slim__buf *b, const void *data, size_t n)
{
    if (b->failed || n == 0)
        return;
    if (n > SIZE_MAX / 2 - b->n) {
        b->failed = true;
        return;
    }
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

void slim__buf_byte(slim__buf *b, uint8_t c)
{
    slim__buf_add(b, &c, 1);
}

void slim__buf_varint(slim__buf *b, uint64_t v)
{
    uint8_t tmp[10];
    slim__buf_add(b, tmp, slim__varint64_put(tmp, v));
}

void slim__buf_free(slim__buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ---- reading -------------------------------------------------------------- */

typedef struct ix_entry {
    size_t key_off, key_len; /* into slim__tft.keys */
    uint64_t off, size;      /* the block's handle */
} ix_entry;

struct slim__tft {
    char *name;
    int fd; /* -1: in memory */
    const uint8_t *mem;
    uint64_t size;
    ix_entry *ix;
    int n_ix;
    uint8_t *keys; /* the index keys, concatenated */
    uint8_t *raw;  /* the last block read (stored bytes + trailer) */
    size_t raw_cap;
    uint8_t *plain; /* its uncompressed contents when it was compressed */
    size_t plain_cap;
    slim__buf key; /* the current entry's key while walking a block */
    bool snappy;
};

const char *slim__tft_name(const slim__tft *t)
{
    return t->name;
}

uint64_t slim__tft_size(const slim__tft *t)
{
    return t->size;
}

bool slim__tft_saw_snappy(const slim__tft *t)
{
    return t->snappy;
}

static slim_status read_at(slim__tft *t, uint64_t off, size_t n, uint8_t *dst, slim_error *err)
{
    if (off > t->size || n > t->size - off)
        return slim__tf_error(err, SLIM_ECORRUPT,
                              "%s: %zu bytes at byte %llu lie past its end (%llu)", t->name, n,
                              (unsigned long long)off, (unsigned long long)t->size);
    if (t->fd < 0) {
        memcpy(dst, t->mem + off, n);
        return SLIM_OK;
    }
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(t->fd, dst + done, n - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return slim__tf_error(err, SLIM_EIO, "%s: cannot read %zu bytes at byte %llu: %s",
                                  t->name, n, (unsigned long long)(off + done),
                                  r < 0 ? strerror(errno) : "the file is shorter than it was");
        done += (size_t)r;
    }
    return SLIM_OK;
}

static bool grow(uint8_t **p, size_t *cap, size_t n)
{
    if (n <= *cap)
        return true;
    uint8_t *q = realloc(*p, n);
    if (!q)
        return false;
    *p = q;
    *cap = n;
    return true;
}

/* The block at handle (off, size): its checked, uncompressed contents. */
static slim_status read_block(slim__tft *t, uint64_t off, uint64_t size, const uint8_t **data,
                              size_t *len, slim_error *err)
{
    uint64_t end = t->size - SLIM__TFT_FOOTER;
    if (off > end || size > end - off || TRAILER > end - off - size)
        return slim__tf_error(err, SLIM_ECORRUPT,
                              "%s: a block handle (offset %llu, size %llu) points past the table's "
                              "data (%llu bytes before the footer)",
                              t->name, (unsigned long long)off, (unsigned long long)size,
                              (unsigned long long)end);
    size_t n = (size_t)size;
    if (!grow(&t->raw, &t->raw_cap, n + TRAILER))
        return slim__tf_error(err, SLIM_ENOMEM, "%s: out of memory reading a block of %zu bytes",
                              t->name, n);
    slim_status st = read_at(t, off, n + TRAILER, t->raw, err);
    if (st)
        return st;
    uint8_t type = t->raw[n];
    uint32_t want = le32(t->raw + n + 1);
    uint32_t got = slim_crc32c_mask(slim_crc32c(0, t->raw, n + 1));
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    got = want; /* let the fuzzer past the checksums to what they protect */
#endif
    if (want != got)
        return slim__tf_error(
            err, SLIM_ECORRUPT,
            "%s: block at byte %llu (%zu bytes): CRC-32C mismatch (stored 0x%08x, "
            "computed 0x%08x): the file is corrupt",
            t->name, (unsigned long long)off, n, want, got);
    if (type == 0) {
        *data = t->raw;
        *len = n;
        return SLIM_OK;
    }
    if (type != 1)
        return slim__tf_error(
            err, SLIM_ECORRUPT,
            "%s: block at byte %llu: unknown compression type %u (0 none, 1 snappy)", t->name,
            (unsigned long long)off, type);
    size_t ulen;
    if (snappy_uncompressed_length((const char *)t->raw, n, &ulen) != SNAPPY_OK ||
        ulen / 24 > n + 64)
        return slim__tf_error(err, SLIM_ECORRUPT,
                              "%s: snappy block at byte %llu (%zu bytes): bad uncompressed length",
                              t->name, (unsigned long long)off, n);
    if (!grow(&t->plain, &t->plain_cap, ulen ? ulen : 1))
        return slim__tf_error(err, SLIM_ENOMEM,
                              "%s: out of memory uncompressing a block of %zu bytes", t->name,
                              ulen);
    size_t got_len = ulen;
    if (snappy_uncompress((const char *)t->raw, n, (char *)t->plain, &got_len) != SNAPPY_OK ||
        got_len != ulen)
        return slim__tf_error(err, SLIM_ECORRUPT,
                              "%s: snappy block at byte %llu (%zu bytes): not valid snappy data",
                              t->name, (unsigned long long)off, n);
    t->snappy = true;
    *data = t->plain;
    *len = ulen;
    return SLIM_OK;
}

/* Walk the entries of a block, calling fn for each (fn may be NULL to only
 * check them). With target, stop at the first key >= target and report it. */
typedef struct walk {
    const void *target;
    size_t target_len;
    bool found;
    const uint8_t *val;
    size_t vlen;
} walk;

static int keycmp(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    size_t m = na < nb ? na : nb;
    int c = m ? memcmp(a, b, m) : 0;
    if (c)
        return c;
    return na < nb ? -1 : na > nb ? 1 : 0;
}

static slim_status walk_block(slim__tft *t, uint64_t boff, const uint8_t *d, size_t n,
                              slim__tft_fn fn, void *user, walk *w, slim_error *err)
{
    if (n < 4)
        return slim__tf_error(err, SLIM_ECORRUPT,
                              "%s: block at byte %llu: %zu bytes, too short for its restart count",
                              t->name, (unsigned long long)boff, n);
    uint32_t nr = le32(d + n - 4);
    if (nr > (n - 4) / 4)
        return slim__tf_error(
            err, SLIM_ECORRUPT,
            "%s: block at byte %llu: %u restart points do not fit in its %zu bytes", t->name,
            (unsigned long long)boff, nr, n);
    size_t lim = n - 4 - 4 * (size_t)nr; /* entries end where the restart array starts */
    t->key.n = 0;
    size_t p = 0;
    while (p < lim) {
        uint64_t shared, unshared, vlen;
        size_t a = slim__varint64_get(d + p, d + lim, &shared);
        size_t b = a ? slim__varint64_get(d + p + a, d + lim, &unshared) : 0;
        size_t c = b ? slim__varint64_get(d + p + a + b, d + lim, &vlen) : 0;
        if (!c)
            return slim__tf_error(err, SLIM_ECORRUPT,
                                  "%s: block at byte %llu: entry at byte %zu of the block: bad or "
                                  "truncated length varint",
                                  t->name, (unsigned long long)boff, p);
        size_t q = p + a + b + c, room = lim - q;
        if (shared > t->key.n || unshared > room || vlen > room - unshared)
            return slim__tf_error(err, SLIM_ECORRUPT,
                                  "%s: block at byte %llu: entry at byte %zu of the block: key "
                                  "(%llu shared + %llu bytes) and value (%llu bytes) do not fit "
                                  "(previous key %zu bytes, %zu bytes left)",
                                  t->name, (unsigned long long)boff, p, (unsigned long long)shared,
                                  (unsigned long long)unshared, (unsigned long long)vlen, t->key.n,
                                  room);
        t->key.n = (size_t)shared;
        slim__buf_add(&t->key, d + q, (size_t)unshared);
        if (t->key.failed)
            return slim__tf_error(err, SLIM_ENOMEM, "%s: out of memory", t->name);
        const uint8_t *val = d + q + unshared;
        if (w && keycmp(t->key.p, t->key.n, w->target, w->target_len) >= 0) {
            w->found = keycmp(t->key.p, t->key.n, w->target, w->target_len) == 0;
            w->val = val;
            w->vlen = (size_t)vlen;
            return SLIM_OK;
        }
        if (fn) {
            slim_status st = fn(user, t->key.p, t->key.n, val, (size_t)vlen, (int64_t)boff, err);
            if (st)
                return st;
        }
        p = q + (size_t)unshared + (size_t)vlen;
    }
    return SLIM_OK;
}

typedef struct ix_build {
    slim__tft *t;
    slim__buf keys;
    ix_entry *ix;
    int n, cap;
} ix_build;

static slim_status add_ix(void *user, const uint8_t *key, size_t klen, const uint8_t *val,
                          size_t vlen, int64_t boff, slim_error *err)
{
    ix_build *b = user;
    uint64_t off, size;
    size_t a = slim__varint64_get(val, val + vlen, &off);
    size_t c = a ? slim__varint64_get(val + a, val + vlen, &size) : 0;
    if (!c)
        return slim__tf_error(err, SLIM_ECORRUPT,
                              "%s: index block at byte %lld: entry %d: bad block handle",
                              b->t->name, (long long)boff, b->n);
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 16;
        ix_entry *ix = realloc(b->ix, (size_t)cap * sizeof *ix);
        if (!ix)
            return slim__tf_error(err, SLIM_ENOMEM, "%s: out of memory", b->t->name);
        b->ix = ix;
        b->cap = cap;
    }
    b->ix[b->n++] = (ix_entry){.key_off = b->keys.n, .key_len = klen, .off = off, .size = size};
    slim__buf_add(&b->keys, key, klen);
    if (b->keys.failed)
        return slim__tf_error(err, SLIM_ENOMEM, "%s: out of memory", b->t->name);
    return SLIM_OK;
}

static slim_status open_common(slim__tft *t, slim_error *err)
{
    if (t->size < SLIM__TFT_FOOTER)
        return slim__tf_error(err, SLIM_ECORRUPT,
                              "%s: not a TensorFlow table: %llu bytes, shorter than the %d-byte "
                              "footer",
                              t->name, (unsigned long long)t->size, SLIM__TFT_FOOTER);
    uint8_t f[SLIM__TFT_FOOTER];
    uint64_t foot = t->size - SLIM__TFT_FOOTER;
    slim_status st = read_at(t, foot, sizeof f, f, err);
    if (st)
        return st;
    uint64_t magic = le64(f + 40);
    if (magic != SLIM__TFT_MAGIC)
        return slim__tf_error(err, SLIM_ECORRUPT,
                              "%s: not a TensorFlow table: the last 8 bytes (at byte %llu) are "
                              "0x%016llx, not the table magic 0x%016llx",
                              t->name, (unsigned long long)(t->size - 8), (unsigned long long)magic,
                              (unsigned long long)SLIM__TFT_MAGIC);
    uint64_t moff, msize, ioff, isize;
    const uint8_t *e = f + 40;
    size_t a = slim__varint64_get(f, e, &moff);
    size_t b = a ? slim__varint64_get(f + a, e, &msize) : 0;
    size_t c = b ? slim__varint64_get(f + a + b, e, &ioff) : 0;
    size_t d = c ? slim__varint64_get(f + a + b + c, e, &isize) : 0;
    if (!d)
        return slim__tf_error(err, SLIM_ECORRUPT, "%s: footer at byte %llu: bad block handles",
                              t->name, (unsigned long long)foot);
    const uint8_t *data;
    size_t len;
    st = read_block(t, ioff, isize, &data, &len, err);
    if (st) {
        slim__error_prefix(err, "reading the index block: ");
        return st;
    }
    /* walk_block uses t->raw/plain only through data: copy the index out first */
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return slim__tf_error(err, SLIM_ENOMEM, "%s: out of memory", t->name);
    memcpy(copy, data, len);
    ix_build ib = {.t = t};
    st = walk_block(t, ioff, copy, len, add_ix, &ib, NULL, err);
    free(copy);
    if (st) {
        slim__buf_free(&ib.keys);
        free(ib.ix);
        return st;
    }
    t->ix = ib.ix;
    t->n_ix = ib.n;
    t->keys = ib.keys.p ? ib.keys.p : calloc(1, 1); /* every key empty: no bytes, a base */
    if (!t->keys)
        return slim__tf_error(err, SLIM_ENOMEM, "%s: out of memory", t->name);
    return SLIM_OK;
}

static slim_status tft_new(const char *name, slim__tft **out, slim_error *err)
{
    *out = NULL;
    slim__tft *t = calloc(1, sizeof *t);
    if (t)
        t->name = strdup(name ? name : "(memory)");
    if (!t || !t->name) {
        free(t);
        return slim__tf_error(err, SLIM_ENOMEM, "out of memory");
    }
    t->fd = -1;
    *out = t;
    return SLIM_OK;
}

slim_status slim__tft_open(const char *path, slim__tft **out, slim_error *err)
{
    slim__tft *t;
    slim_status st = tft_new(path, &t, err);
    if (st)
        return st;
    t->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (t->fd < 0 || fstat(t->fd, &sb) != 0) {
        int e = errno;
        slim__tft_close(t);
        *out = NULL;
        return slim__tf_error(err, e == ENOENT ? SLIM_ENOTFOUND : SLIM_EIO, "cannot open %s: %s",
                              path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        slim__tft_close(t);
        *out = NULL;
        return slim__tf_error(err, SLIM_EINVAL, "%s is not a regular file", path);
    }
    t->size = (uint64_t)sb.st_size;
    st = open_common(t, err);
    if (st) {
        slim__tft_close(t);
        return st;
    }
    *out = t;
    return SLIM_OK;
}

slim_status slim__tft_open_mem(const void *data, size_t size, const char *name, slim__tft **out,
                               slim_error *err)
{
    slim__tft *t;
    slim_status st = tft_new(name, &t, err);
    if (st)
        return st;
    t->mem = data;
    t->size = size;
    st = open_common(t, err);
    if (st) {
        slim__tft_close(t);
        return st;
    }
    *out = t;
    return SLIM_OK;
}

void slim__tft_close(slim__tft *t)
{
    if (!t)
        return;
    if (t->fd >= 0)
        close(t->fd);
    free(t->name);
    free(t->ix);
    free(t->keys);
    free(t->raw);
    free(t->plain);
    slim__buf_free(&t->key);
    free(t);
}

slim_status slim__tft_scan(slim__tft *t, slim__tft_fn fn, void *user, slim_error *err)
{
    for (int i = 0; i < t->n_ix; i++) {
        const uint8_t *data;
        size_t len;
        slim_status st = read_block(t, t->ix[i].off, t->ix[i].size, &data, &len, err);
        if (!st)
            st = walk_block(t, t->ix[i].off, data, len, fn, user, NULL, err);
        if (st)
            return st;
    }
    return SLIM_OK;
}

slim_status slim__tft_get(slim__tft *t, const void *key, size_t klen, const uint8_t **val,
                          size_t *vlen, int64_t *block_off, bool *found, slim_error *err)
{
    *found = false;
    /* the first block whose separator is >= key */
    int lo = 0, hi = t->n_ix;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (keycmp(t->keys + t->ix[mid].key_off, t->ix[mid].key_len, key, klen) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == t->n_ix)
        return SLIM_OK;
    const uint8_t *data;
    size_t len;
    slim_status st = read_block(t, t->ix[lo].off, t->ix[lo].size, &data, &len, err);
    if (st)
        return st;
    walk w = {.target = key, .target_len = klen};
    st = walk_block(t, t->ix[lo].off, data, len, NULL, NULL, &w, err);
    if (st || !w.found)
        return st;
    *found = true;
    *val = w.val;
    *vlen = w.vlen;
    if (block_off)
        *block_off = (int64_t)t->ix[lo].off;
    return SLIM_OK;
}

/* ---- writing -------------------------------------------------------------- */

typedef struct block_builder {
    slim__buf data;
    slim__buf restarts; /* u32 offsets, little-endian */
    slim__buf last;     /* the last key added */
    int counter, interval, n;
} block_builder;

static void bb_reset(block_builder *b)
{
    b->data.n = b->restarts.n = b->last.n = 0;
    b->counter = b->n = 0;
    uint8_t z[4] = {0};
    slim__buf_add(&b->restarts, z, 4);
}

static void bb_add(block_builder *b, const uint8_t *key, size_t klen, const void *val, size_t vlen)
{
    size_t shared = 0;
    if (b->counter < b->interval) {
        size_t m = klen < b->last.n ? klen : b->last.n;
        while (shared < m && b->last.p[shared] == key[shared])
            shared++;
    } else {
        uint8_t r[4];
        put_le32(r, (uint32_t)b->data.n);
        slim__buf_add(&b->restarts, r, 4);
        b->counter = 0;
    }
    slim__buf_varint(&b->data, shared);
    slim__buf_varint(&b->data, klen - shared);
    slim__buf_varint(&b->data, vlen);
    if (klen > shared)
        slim__buf_add(&b->data, key + shared, klen - shared);
    slim__buf_add(&b->data, val, vlen);
    b->last.n = 0;
    slim__buf_add(&b->last, key, klen);
    b->counter++;
    b->n++;
}

/* Appends the restart array: data then holds the finished block. */
static void bb_finish(block_builder *b)
{
    slim__buf_add(&b->data, b->restarts.p, b->restarts.n);
    uint8_t r[4];
    put_le32(r, (uint32_t)(b->restarts.n / 4));
    slim__buf_add(&b->data, r, 4);
}

static size_t bb_size(const block_builder *b)
{
    return b->data.n + b->restarts.n + 4;
}

static bool bb_failed(const block_builder *b)
{
    return b->data.failed || b->restarts.failed || b->last.failed;
}

static void bb_free(block_builder *b)
{
    slim__buf_free(&b->data);
    slim__buf_free(&b->restarts);
    slim__buf_free(&b->last);
}

struct slim__tft_writer {
    char *path;
    FILE *f;
    uint64_t off;
    slim__tft_opts o;
    block_builder data, index;
    slim__buf last_key, sep, comp;
    bool pending;
    uint64_t pend_off, pend_size;
    bool any;
};

static slim_status w_write(slim__tft_writer *w, const void *p, size_t n, slim_error *err)
{
    if (n && fwrite(p, 1, n, w->f) != n)
        return slim__tf_error(err, SLIM_EIO, "cannot write %s: %s", w->path, strerror(errno));
    w->off += n;
    return SLIM_OK;
}

static slim_status write_block(slim__tft_writer *w, block_builder *b, uint64_t *off, uint64_t *size,
                               slim_error *err)
{
    bb_finish(b);
    if (bb_failed(b))
        return slim__tf_error(err, SLIM_ENOMEM, "out of memory writing %s", w->path);
    const uint8_t *out = b->data.p;
    size_t n = b->data.n;
    uint8_t type = 0;
    if (w->o.snappy) {
        size_t cap = snappy_max_compressed_length(n);
        w->comp.n = 0;
        if (cap > w->comp.cap) {
            uint8_t *p = realloc(w->comp.p, cap);
            if (!p)
                return slim__tf_error(err, SLIM_ENOMEM, "out of memory writing %s", w->path);
            w->comp.p = p;
            w->comp.cap = cap;
        }
        size_t clen = cap;
        if (snappy_compress((const char *)b->data.p, n, (char *)w->comp.p, &clen) == SNAPPY_OK &&
            clen < n - n / 8) {
            out = w->comp.p;
            n = clen;
            type = 1;
        }
    }
    uint8_t trailer[TRAILER];
    trailer[0] = type;
    put_le32(trailer + 1, slim_crc32c_mask(slim_crc32c(slim_crc32c(0, out, n), &type, 1)));
    *off = w->off;
    *size = n;
    slim_status st = w_write(w, out, n, err);
    if (!st)
        st = w_write(w, trailer, TRAILER, err);
    bb_reset(b);
    return st;
}

/* The shortest key >= a and < b (bytewise; TensorFlow's and LevelDB's rule). */
static void separator(slim__buf *out, const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    out->n = 0;
    size_t m = na < nb ? na : nb, i = 0;
    while (i < m && a[i] == b[i])
        i++;
    if (i < m && a[i] < 0xff && a[i] + 1 < b[i]) {
        slim__buf_add(out, a, i + 1);
        out->p[i]++;
        return;
    }
    slim__buf_add(out, a, na);
}

/* The shortest key >= a. */
static void successor(slim__buf *out, const uint8_t *a, size_t na)
{
    out->n = 0;
    for (size_t i = 0; i < na; i++)
        if (a[i] != 0xff) {
            slim__buf_add(out, a, i + 1);
            out->p[i]++;
            return;
        }
    slim__buf_add(out, a, na);
}

static void add_index_entry(slim__tft_writer *w)
{
    uint8_t h[20];
    size_t n = slim__varint64_put(h, w->pend_off);
    n += slim__varint64_put(h + n, w->pend_size);
    bb_add(&w->index, w->sep.p, w->sep.n, h, n);
    w->pending = false;
}

slim_status slim__tft_writer_new(const char *path, const slim__tft_opts *o, slim__tft_writer **out,
                                 slim_error *err)
{
    *out = NULL;
    slim__tft_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return slim__tf_error(err, SLIM_ENOMEM, "out of memory");
    }
    if (o)
        w->o = *o;
    if (!w->o.block_size)
        w->o.block_size = 262144;
    if (w->o.restart_interval <= 0)
        w->o.restart_interval = 16;
    w->data.interval = w->o.restart_interval;
    w->index.interval = 1; /* every index key is a restart point, as LevelDB writes them */
    bb_reset(&w->data);
    bb_reset(&w->index);
    w->f = fopen(path, "wbe");
    if (!w->f) {
        int e = errno;
        slim__tft_writer_free(w);
        return slim__tf_error(err, SLIM_EIO, "cannot create %s: %s", path, strerror(e));
    }
    *out = w;
    return SLIM_OK;
}

slim_status slim__tft_writer_add(slim__tft_writer *w, const void *key, size_t klen, const void *val,
                                 size_t vlen, slim_error *err)
{
    if (w->any && keycmp(key, klen, w->last_key.p, w->last_key.n) <= 0)
        return slim__tf_error(err, SLIM_EINVAL,
                              "%s: table keys must be added in increasing order (internal error)",
                              w->path);
    if (w->pending) {
        separator(&w->sep, w->last_key.p, w->last_key.n, key, klen);
        add_index_entry(w);
    }
    bb_add(&w->data, key, klen, val, vlen);
    w->last_key.n = 0;
    slim__buf_add(&w->last_key, key, klen);
    w->any = true;
    if (bb_failed(&w->data) || w->last_key.failed || w->sep.failed)
        return slim__tf_error(err, SLIM_ENOMEM, "out of memory writing %s", w->path);
    if (bb_size(&w->data) >= w->o.block_size) {
        slim_status st = write_block(w, &w->data, &w->pend_off, &w->pend_size, err);
        if (st)
            return st;
        w->pending = true;
    }
    return SLIM_OK;
}

slim_status slim__tft_writer_finish(slim__tft_writer *w, slim_error *err)
{
    slim_status st = SLIM_OK;
    if (w->data.n) {
        st = write_block(w, &w->data, &w->pend_off, &w->pend_size, err);
        w->pending = !st;
    }
    uint64_t moff = 0, msize = 0, ioff = 0, isize = 0;
    if (!st) {
        block_builder meta = {.interval = 16};
        bb_reset(&meta);
        st = write_block(w, &meta, &moff, &msize, err);
        bb_free(&meta);
    }
    if (!st && w->pending) {
        successor(&w->sep, w->last_key.p, w->last_key.n);
        add_index_entry(w);
    }
    if (!st)
        st = write_block(w, &w->index, &ioff, &isize, err);
    if (!st) {
        uint8_t f[SLIM__TFT_FOOTER] = {0};
        size_t n = slim__varint64_put(f, moff);
        n += slim__varint64_put(f + n, msize);
        n += slim__varint64_put(f + n, ioff);
        slim__varint64_put(f + n, isize);
        for (int i = 0; i < 8; i++)
            f[40 + i] = (uint8_t)(SLIM__TFT_MAGIC >> (8 * i));
        st = w_write(w, f, sizeof f, err);
    }
    if (!st && (fflush(w->f) != 0 || fsync(fileno(w->f)) != 0))
        st = slim__tf_error(err, SLIM_EIO, "cannot write %s: %s", w->path, strerror(errno));
    if (w->f && fclose(w->f) != 0 && !st)
        st = slim__tf_error(err, SLIM_EIO, "cannot write %s: %s", w->path, strerror(errno));
    w->f = NULL;
    slim__tft_writer_free(w);
    return st;
}

void slim__tft_writer_free(slim__tft_writer *w)
{
    if (!w)
        return;
    if (w->f)
        fclose(w->f);
    bb_free(&w->data);
    bb_free(&w->index);
    slim__buf_free(&w->last_key);
    slim__buf_free(&w->sep);
    slim__buf_free(&w->comp);
    free(w->path);
    free(w);
}
