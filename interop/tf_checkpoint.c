/* interop/tf_checkpoint.c - reading TensorFlow V1 and V2 checkpoints (see
 * tf_checkpoint.h). Files are untrusted: every length, offset, shape and
 * slice is checked against what holds it before it is used. */
#include "interop/tf_checkpoint.h"

#include "engine/error.h"
#include "interop/tf_checkpoint.pb-c.h"

#include <slim/data.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- EncodeTensorNameSlice (OrderedCode) ----------------------------------- */

static void oc_num(slim__buf *b, uint64_t v)
{
    uint8_t tmp[9];
    int n = 0;
    for (uint64_t x = v; x; x >>= 8)
        n++;
    tmp[0] = (uint8_t)n;
    for (int i = 0; i < n; i++)
        tmp[1 + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    slim__buf_add(b, tmp, (size_t)n + 1);
}

static void oc_string(slim__buf *b, const char *s)
{
    for (const uint8_t *p = (const uint8_t *)s; *p; p++) {
        if (*p == 0xff) {
            slim__buf_byte(b, 0xff);
            slim__buf_byte(b, 0x00);
        } else {
            slim__buf_byte(b, *p);
        }
    }
    slim__buf_byte(b, 0x00);
    slim__buf_byte(b, 0x01);
}

/* n bytes encode [-2^(7n-1), 2^(7n-1)); the first bytes carry the length in
 * unary, the sign in the first payload bit. */
static void oc_signed(slim__buf *b, int64_t v)
{
    static const uint8_t hdr[11][2] = {{0, 0},    {0x80, 0},    {0xc0, 0},   {0xe0, 0},
                                       {0xf0, 0}, {0xf8, 0},    {0xfc, 0},   {0xfe, 0},
                                       {0xff, 0}, {0xff, 0x80}, {0xff, 0xc0}};
    uint64_t x = v < 0 ? ~(uint64_t)v : (uint64_t)v;
    if (x < 64) {
        slim__buf_byte(b, (uint8_t)(0x80 ^ (uint8_t)v));
        return;
    }
    int bits = 64 - __builtin_clzll(x);
    int len = bits / 7 + 1;
    uint8_t buf[10];
    buf[0] = buf[1] = v < 0 ? 0xff : 0;
    for (int i = 0; i < 8; i++)
        buf[2 + i] = (uint8_t)((uint64_t)v >> (8 * (7 - i)));
    uint8_t *p = buf + 10 - len;
    p[0] ^= hdr[len][0];
    p[1] ^= hdr[len][1];
    slim__buf_add(b, p, (size_t)len);
}

void slim__tf_slice_key(slim__buf *out, const char *name, int rank, const int64_t *start,
                        const int64_t *length)
{
    out->n = 0;
    oc_num(out, 0);
    oc_string(out, name);
    oc_num(out, (uint64_t)rank);
    for (int d = 0; d < rank; d++) {
        oc_signed(out, start[d]);
        oc_signed(out, length[d]);
    }
}

/* ---- shapes and slices ------------------------------------------------------- */

typedef struct slices {
    int n, rank;
    int *shard;     /* V1: which file holds slice i */
    int64_t *start; /* n * rank */
    int64_t *len;   /* n * rank, -1 = the whole dimension */
} slices;

static void slices_free(slices *s)
{
    if (!s)
        return;
    free(s->shard);
    free(s->start);
    free(s->len);
    free(s);
}

static slim_status set_shape(const char *file, const char *name,
                             const Tensorflow__TensorShapeProto *sp, slim__ckpt_entry *e,
                             slim_error *err)
{
    if (!sp) {
        e->rank = 0;
        e->numel = 1;
        return SLIM_OK;
    }
    if (sp->unknown_rank || sp->n_dim > SLIM__CKPT_MAX_RANK)
        return slim__error(err, SLIM_EUNSUPPORTED, "%s: '%s' has %s (slim reads up to rank %d)",
                           file, name, sp->unknown_rank ? "an unknown rank" : "too many dimensions",
                           SLIM__CKPT_MAX_RANK);
    e->rank = (int)sp->n_dim;
    for (int i = 0; i < e->rank; i++)
        e->dim[i] = sp->dim[i]->size;
    e->numel = slim__ckpt_numel(e->rank, e->dim);
    if (e->numel < 0)
        return slim__error(err, SLIM_ECORRUPT,
                           "%s: '%s' has a bad shape (a negative or huge "
                           "dimension)",
                           file, name);
    return SLIM_OK;
}

/* Append the slices of protos to s (allocated on first use). */
static slim_status add_slices(const char *file, const char *name, int rank,
                              Tensorflow__TensorSliceProto **sp, size_t n, int shard, slices **s,
                              slim_error *err)
{
    if (!n)
        return SLIM_OK;
    if (!*s && !(*s = calloc(1, sizeof **s)))
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    slices *x = *s;
    x->rank = rank;
    if (n > (size_t)(1 << 20) || (size_t)x->n + n > (size_t)(1 << 20))
        return slim__error(err, SLIM_ECORRUPT, "%s: '%s' has too many slices", file, name);
    int total = x->n + (int)n;
    size_t per = rank ? (size_t)rank : 1;
    int *sh = realloc(x->shard, (size_t)total * sizeof *sh);
    if (sh)
        x->shard = sh;
    int64_t *st = sh ? realloc(x->start, (size_t)total * per * sizeof *st) : NULL;
    if (st)
        x->start = st;
    int64_t *ln = st ? realloc(x->len, (size_t)total * per * sizeof *ln) : NULL;
    if (ln)
        x->len = ln;
    if (!ln)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const Tensorflow__TensorSliceProto *p = sp[i];
        int k = x->n + (int)i;
        x->shard[k] = shard;
        if (p->n_extent != 0 && p->n_extent != (size_t)rank)
            return slim__error(err, SLIM_ECORRUPT,
                               "%s: '%s': a slice of %zu dimensions for a tensor of rank %d", file,
                               name, p->n_extent, rank);
        for (int d = 0; d < rank; d++) {
            const Tensorflow__TensorSliceProto__Extent *ex = p->n_extent ? p->extent[d] : NULL;
            bool has = ex && ex->has_length_case ==
                                 TENSORFLOW__TENSOR_SLICE_PROTO__EXTENT__HAS_LENGTH_LENGTH;
            x->start[(size_t)k * per + (size_t)d] = ex ? ex->start : 0;
            x->len[(size_t)k * per + (size_t)d] = has ? ex->length : -1;
        }
    }
    x->n = total;
    return SLIM_OK;
}

/* Check slice i of e against the full shape: its extent per dimension into
 * st/ln (a whole dimension resolved), and its element count. */
static slim_status slice_box(const char *file, const slim__ckpt_entry *e, const slices *s, int i,
                             int64_t *st, int64_t *ln, int64_t *numel, slim_error *err)
{
    size_t per = e->rank ? (size_t)e->rank : 1;
    for (int d = 0; d < e->rank; d++) {
        int64_t a = s->start[(size_t)i * per + (size_t)d], l = s->len[(size_t)i * per + (size_t)d];
        if (l == -1) {
            if (a != 0)
                return slim__error(err, SLIM_ECORRUPT,
                                   "%s: '%s' slice %d: a whole-dimension extent starting at %lld",
                                   file, e->name, i, (long long)a);
            l = e->dim[d];
        }
        if (a < 0 || l < 0 || a > e->dim[d] || l > e->dim[d] - a)
            return slim__error(err, SLIM_ECORRUPT,
                               "%s: '%s' slice %d: extent [%lld, +%lld) of dimension %d is outside "
                               "its size %lld",
                               file, e->name, i, (long long)a, (long long)l, d,
                               (long long)e->dim[d]);
        st[d] = a;
        ln[d] = l;
    }
    *numel = slim__ckpt_numel(e->rank, ln);
    return SLIM_OK;
}

/* The slices must tile the tensor: inside it, not overlapping, covering it. */
static slim_status check_tiling(const char *file, const slim__ckpt_entry *e, const slices *s,
                                slim_error *err)
{
    int r = e->rank;
    int64_t a[SLIM__CKPT_MAX_RANK], al[SLIM__CKPT_MAX_RANK], b[SLIM__CKPT_MAX_RANK],
        bl[SLIM__CKPT_MAX_RANK];
    int64_t total = 0, n;
    for (int i = 0; i < s->n; i++) {
        slim_status st = slice_box(file, e, s, i, a, al, &n, err);
        if (st)
            return st;
        total += n;
        for (int j = 0; j < i && s->n <= 4096; j++) {
            slice_box(file, e, s, j, b, bl, &n, NULL);
            bool overlap = true;
            for (int d = 0; d < r && overlap; d++)
                overlap = a[d] < b[d] + bl[d] && b[d] < a[d] + al[d];
            if (overlap && r > 0)
                return slim__error(err, SLIM_ECORRUPT, "%s: '%s': slices %d and %d overlap", file,
                                   e->name, j, i);
        }
    }
    if (total != e->numel)
        return slim__error(err, SLIM_ECORRUPT,
                           "%s: '%s': its %d slices hold %lld of its %lld values", file, e->name,
                           s->n, (long long)total, (long long)e->numel);
    return SLIM_OK;
}

/* Copy a slice (row-major, extents st/ln) into the full tensor dst. */
static void place(void *dst, const void *src, int rank, const int64_t *dim, const int64_t *st,
                  const int64_t *ln, int es)
{
    if (rank == 0) {
        memcpy(dst, src, (size_t)es);
        return;
    }
    int64_t idx[SLIM__CKPT_MAX_RANK] = {0};
    size_t row = (size_t)ln[rank - 1] * (size_t)es;
    const char *s = src;
    for (int d = 0; d < rank; d++)
        if (ln[d] == 0)
            return;
    for (;;) {
        int64_t off = 0;
        for (int d = 0; d < rank; d++)
            off = off * dim[d] + st[d] + (d == rank - 1 ? 0 : idx[d]);
        memcpy((char *)dst + (size_t)off * (size_t)es, s, row);
        s += row;
        int d = rank - 2;
        while (d >= 0 && ++idx[d] == ln[d])
            idx[d--] = 0;
        if (d < 0)
            return;
    }
}

/* ---- V2 ------------------------------------------------------------------- */

typedef struct v2_slice {
    uint8_t *key;
    size_t klen;
    int dtype;
    int64_t numel, off, size;
    int shard;
    uint32_t crc;
} v2_slice;

typedef struct v2_impl {
    int num_shards;
    int *fd; /* per shard, opened on first use (-1) */
    int64_t *fsize;
    v2_slice *sl;
    int n_sl, cap_sl;
    const uint8_t *mem; /* in memory: the single data shard */
    size_t mem_size;
} v2_impl;

static void shard_name(const char *prefix, int i, int n, char *buf, size_t len)
{
    snprintf(buf, len, "%s.data-%05d-of-%05d", prefix, i, n);
}

static slim_status shard_fd(slim__ckpt *c, int i, int *fd, int64_t *size, slim_error *err)
{
    v2_impl *im = c->impl;
    if (im->fd[i] < 0) {
        char p[1300];
        shard_name(c->path, i, im->num_shards, p, sizeof p);
        int f = open(p, O_RDONLY | O_CLOEXEC);
        struct stat sb;
        if (f < 0 || fstat(f, &sb) != 0) {
            int e = errno;
            if (f >= 0)
                close(f);
            return slim__error(err, e == ENOENT ? SLIM_ENOTFOUND : SLIM_EIO,
                               "cannot open %s (data shard %d of %d of %s.index): %s", p, i,
                               im->num_shards, c->path, strerror(e));
        }
        im->fd[i] = f;
        im->fsize[i] = sb.st_size;
    }
    *fd = im->fd[i];
    *size = im->fsize[i];
    return SLIM_OK;
}

/* size bytes of shard at off into buf, checked against crc. */
static slim_status v2_bytes(slim__ckpt *c, const char *name, int shard, int64_t off, int64_t size,
                            uint32_t crc, int dtype, void *buf, slim_error *err)
{
    int fd = -1;
    int64_t fsize = 0;
    slim_status st = ((v2_impl *)c->impl)->mem ? SLIM_OK : shard_fd(c, shard, &fd, &fsize, err);
    if (st)
        return st;
    v2_impl *im = c->impl;
    char p[1300];
    shard_name(c->path, shard, im->num_shards, p, sizeof p);
    if (im->mem)
        fsize = shard == 0 ? (int64_t)im->mem_size : 0;
    if (off < 0 || size < 0 || off > fsize || size > fsize - off)
        return slim__error(err, SLIM_ECORRUPT,
                           "%s: tensor '%s' (%lld bytes at byte %lld) lies past the end of the "
                           "file (%lld bytes)",
                           p, name, (long long)size, (long long)off, (long long)fsize);
    size_t done = im->mem ? (size_t)size : 0;
    if (im->mem && size)
        memcpy(buf, im->mem + off, (size_t)size);
    while (done < (size_t)size) {
        ssize_t r =
            pread(fd, (char *)buf + done, (size_t)size - done, (off_t)(off + (int64_t)done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return slim__error(err, SLIM_EIO, "%s: cannot read tensor '%s' at byte %lld: %s", p,
                               name, (long long)off, r < 0 ? strerror(errno) : "short read");
        done += (size_t)r;
    }
    if (dtype == SLIM__DT_STRING)
        return SLIM_OK; /* checked while parsing */
    uint32_t have = slim_crc32c_mask(slim_crc32c(0, buf, (size_t)size));
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    have = crc;
#endif
    if (have != crc)
        return slim__error(err, SLIM_ECORRUPT,
                           "%s: tensor '%s' (%lld bytes at byte %lld): CRC-32C mismatch (the index "
                           "says 0x%08x, the data gives 0x%08x): the checkpoint is corrupt",
                           p, name, (long long)size, (long long)off, crc, have);
    return SLIM_OK;
}

/* A stored string tensor (varint64 lengths, the masked CRC of the lengths,
 * the bytes) into out as u64 lengths + bytes, checking both CRCs. TensorFlow
 * extends the CRCs over each length as a u64; files written before it did so
 * used a u32 ("old_string_tensors"). */
static slim_status parse_strings(const char *file, const char *name, const uint8_t *p, size_t n,
                                 int64_t numel, uint32_t crc, slim__buf *out, slim_error *err)
{
    const uint8_t *end = p + n, *q = p;
    if (numel < 0 || (uint64_t)numel > n)
        return slim__error(err, SLIM_ECORRUPT,
                           "%s: string tensor '%s': %lld strings cannot fit in %zu bytes", file,
                           name, (long long)numel, n);
    size_t base = out->n;
    uint64_t total = 0;
    uint32_t c64 = 0, c32 = 0;
    for (int64_t i = 0; i < numel; i++) {
        uint64_t l;
        size_t k = slim__varint64_get(q, end, &l);
        if (!k || l > n)
            return slim__error(err, SLIM_ECORRUPT,
                               "%s: string tensor '%s': bad length of string %lld", file, name,
                               (long long)i);
        q += k;
        total += l;
        slim__buf_add(out, &l, 8);
        uint32_t l32 = (uint32_t)l;
        c64 = slim_crc32c(c64, &l, 8);
        c32 = slim_crc32c(c32, &l32, 4);
    }
    if ((size_t)(end - q) < 4 || total != (uint64_t)(end - q - 4))
        return slim__error(err, SLIM_ECORRUPT,
                           "%s: string tensor '%s': its lengths (%llu bytes of strings) do not "
                           "match its %zu stored bytes",
                           file, name, (unsigned long long)total, n);
    uint32_t lc;
    memcpy(&lc, q, 4);
    bool w64 = lc == slim_crc32c_mask(c64), w32 = lc == slim_crc32c_mask(c32);
    if (!w64 && !w32)
        return slim__error(err, SLIM_ECORRUPT,
                           "%s: string tensor '%s': the CRC-32C of its lengths does not match",
                           file, name);
    uint32_t all = slim_crc32c(w64 ? c64 : c32, q, 4 + (size_t)total);
    if (slim_crc32c_mask(all) != crc)
        return slim__error(err, SLIM_ECORRUPT,
                           "%s: string tensor '%s': CRC-32C mismatch (the index says 0x%08x, the "
                           "data gives 0x%08x)",
                           file, name, crc, slim_crc32c_mask(all));
    slim__buf_add(out, q + 4, (size_t)total);
    (void)base;
    return SLIM_OK;
}

static int slice_cmp(const void *a, const void *b)
{
    const v2_slice *x = a, *y = b;
    size_t m = x->klen < y->klen ? x->klen : y->klen;
    int r = memcmp(x->key, y->key, m);
    return r ? r : x->klen < y->klen ? -1 : x->klen > y->klen ? 1 : 0;
}

/* The bytes the data shards hold: an entry (or the slices of one) cannot
 * decode to more. */
static int64_t v2_bound(slim__ckpt *c, const slim__ckpt_entry *e)
{
    v2_impl *im = c->impl;
    if (im->mem)
        return e->dtype == SLIM__DT_STRING ? (int64_t)im->mem_size * 8 : (int64_t)im->mem_size;
    int64_t total = 0;
    for (int i = 0; i < im->num_shards; i++) {
        int fd;
        int64_t size;
        slim_error err;
        if (shard_fd(c, i, &fd, &size, &err) != SLIM_OK)
            return e->n_slices || i == e->shard ? 0 : total; /* reading will say why */
        total += size;
    }
    /* strings: u64 lengths of at least one stored byte each, and the bytes */
    return e->dtype == SLIM__DT_STRING ? total * 8 : total;
}

static slim_status v2_read(slim__ckpt *c, const slim__ckpt_entry *e, void *dst, void *out,
                           slim_error *err)
{
    v2_impl *im = c->impl;
    char p[1300];
    int es = slim__dt_size(e->dtype);
    if (!e->n_slices) {
        if (e->dtype == SLIM__DT_STRING) {
            if (e->len > v2_bound(c, e))
                return slim__error(err, SLIM_ECORRUPT,
                                   "%s.index: string tensor '%s' claims %lld bytes, more than the "
                                   "data files hold",
                                   c->path, e->name, (long long)e->len);
            uint8_t *buf = malloc(e->len ? (size_t)e->len : 1);
            if (!buf)
                return slim__error(err, SLIM_ENOMEM, "out of memory reading '%s'", e->name);
            slim_status st =
                v2_bytes(c, e->name, e->shard, e->off, e->len, e->crc, e->dtype, buf, err);
            if (!st) {
                shard_name(c->path, e->shard, im->num_shards, p, sizeof p);
                st = parse_strings(p, e->name, buf, (size_t)e->len, e->numel, e->crc, out, err);
            }
            free(buf);
            return st;
        }
        return v2_bytes(c, e->name, e->shard, e->off, e->len, e->crc, e->dtype, dst, err);
    }
    if (e->dtype == SLIM__DT_STRING)
        return slim__error(err, SLIM_EUNSUPPORTED, "%s: '%s': partitioned string tensors", c->path,
                           e->name);
    const slices *s = e->priv;
    slim__buf key = {0};
    int64_t st_[SLIM__CKPT_MAX_RANK], ln[SLIM__CKPT_MAX_RANK], n;
    slim_status st = SLIM_OK;
    for (int i = 0; i < s->n && !st; i++) {
        size_t per = e->rank ? (size_t)e->rank : 1;
        slim__tf_slice_key(&key, e->key ? e->key : e->name, e->rank, s->start + (size_t)i * per,
                           s->len + (size_t)i * per);
        if (key.failed) {
            st = slim__error(err, SLIM_ENOMEM, "out of memory");
            break;
        }
        v2_slice want = {.key = key.p, .klen = key.n};
        const v2_slice *sl =
            im->n_sl ? bsearch(&want, im->sl, (size_t)im->n_sl, sizeof *im->sl, slice_cmp) : NULL;
        slice_box(c->path, e, s, i, st_, ln, &n, NULL);
        if (!sl)
            st = slim__error(err, SLIM_ECORRUPT,
                             "%s.index: '%s': the entry of its slice %d is missing", c->path,
                             e->name, i);
        else if (sl->dtype != e->dtype || sl->numel != n || sl->size != n * es)
            st = slim__error(err, SLIM_ECORRUPT,
                             "%s.index: '%s': slice %d has %lld %s values in %lld bytes, expected "
                             "%lld %s values",
                             c->path, e->name, i, (long long)sl->numel, slim__dt_name(sl->dtype),
                             (long long)sl->size, (long long)n, slim__dt_name(e->dtype));
        if (st)
            break;
        void *tmp = malloc(n ? (size_t)(n * es) : 1);
        if (!tmp) {
            st = slim__error(err, SLIM_ENOMEM, "out of memory");
            break;
        }
        st = v2_bytes(c, e->name, sl->shard, sl->off, sl->size, sl->crc, e->dtype, tmp, err);
        if (!st)
            place(dst, tmp, e->rank, e->dim, st_, ln, es);
        free(tmp);
    }
    slim__buf_free(&key);
    return st;
}

static void v2_close(slim__ckpt *c)
{
    v2_impl *im = c->impl;
    if (!im)
        return;
    for (int i = 0; im->fd && i < im->num_shards; i++)
        if (im->fd[i] >= 0)
            close(im->fd[i]);
    free(im->fd);
    free(im->fsize);
    for (int i = 0; i < im->n_sl; i++)
        free(im->sl[i].key);
    free(im->sl);
    for (int i = 0; i < c->n; i++)
        slices_free(c->e[i].priv);
    free(im);
}

static const slim__ckpt_ops v2_ops = {v2_read, v2_close, v2_bound};

typedef struct v2_scan {
    slim__ckpt *c;
    const char *file;
    bool header;
} v2_scan;

static slim_status v2_entry(void *user, const uint8_t *key, size_t klen, const uint8_t *val,
                            size_t vlen, int64_t boff, slim_error *err)
{
    v2_scan *s = user;
    slim__ckpt *c = s->c;
    v2_impl *im = c->impl;
    if (klen == 0) {
        Tensorflow__BundleHeaderProto *h = tensorflow__bundle_header_proto__unpack(NULL, vlen, val);
        if (!h)
            return slim__error(err, SLIM_ECORRUPT, "%s: bad BundleHeaderProto (block at byte %lld)",
                               s->file, (long long)boff);
        int ns = h->num_shards, big = h->endianness;
        tensorflow__bundle_header_proto__free_unpacked(h, NULL);
        if (ns < 1 || ns > 100000)
            return slim__error(err, SLIM_ECORRUPT, "%s: the header says %d data shards", s->file,
                               ns);
        if (big)
            return slim__error(err, SLIM_EUNSUPPORTED,
                               "%s: a big-endian checkpoint (slim reads little-endian ones)",
                               s->file);
        im->num_shards = ns;
        s->header = true;
        return SLIM_OK;
    }
    if (!s->header)
        return slim__error(err, SLIM_ECORRUPT,
                           "%s: no BundleHeaderProto under the \"\" key: not "
                           "a TensorFlow V2 index",
                           s->file);
    Tensorflow__BundleEntryProto *b = tensorflow__bundle_entry_proto__unpack(NULL, vlen, val);
    if (!b)
        return slim__error(err, SLIM_ECORRUPT,
                           "%s: entry '%.*s' (block at byte %lld): bad BundleEntryProto", s->file,
                           (int)(klen < 200 ? klen : 200), (const char *)key, (long long)boff);
    slim_status st = SLIM_OK;
    char name[1100];
    if (klen >= sizeof name || memchr(key, 0, klen)) {
        if (key[0] != 0 || klen > (1 << 16)) {
            st = slim__error(err, SLIM_ECORRUPT, "%s: a key of %zu bytes is not a tensor name",
                             s->file, klen);
            goto done;
        }
        /* a slice of a partitioned variable, under its encoded key */
        if (im->n_sl == im->cap_sl) {
            int cap = im->cap_sl ? 2 * im->cap_sl : 16;
            v2_slice *p = realloc(im->sl, (size_t)cap * sizeof *p);
            if (!p) {
                st = slim__error(err, SLIM_ENOMEM, "out of memory");
                goto done;
            }
            im->sl = p;
            im->cap_sl = cap;
        }
        slim__ckpt_entry tmp = {.name = "(slice)"};
        st = set_shape(s->file, "(a slice)", b->shape, &tmp, err);
        if (st)
            goto done;
        v2_slice *sl = &im->sl[im->n_sl];
        sl->key = malloc(klen);
        if (!sl->key) {
            st = slim__error(err, SLIM_ENOMEM, "out of memory");
            goto done;
        }
        memcpy(sl->key, key, klen);
        sl->klen = klen;
        sl->dtype = b->dtype;
        sl->numel = tmp.numel;
        sl->off = b->offset;
        sl->size = b->size;
        sl->shard = b->shard_id;
        sl->crc = b->crc32c;
        im->n_sl++;
        if (b->shard_id < 0 || b->shard_id >= im->num_shards)
            st = slim__error(err, SLIM_ECORRUPT, "%s: a slice entry in shard %d of %d", s->file,
                             b->shard_id, im->num_shards);
        goto done;
    }
    memcpy(name, key, klen);
    name[klen] = 0;
    slim__ckpt_entry *e = slim__ckpt_add(c, name);
    if (!e) {
        st = slim__error(err, SLIM_ENOMEM, "out of memory");
        goto done;
    }
    e->dtype = b->dtype;
    st = set_shape(s->file, name, b->shape, e, err);
    if (st)
        goto done;
    e->shard = b->shard_id;
    e->off = b->offset;
    e->len = b->size;
    e->stored = b->size;
    e->crc = b->crc32c;
    if (b->n_slices) {
        slices *sl = NULL;
        st = add_slices(s->file, name, e->rank, b->slices, b->n_slices, 0, &sl, err);
        e->priv = sl;
        e->n_slices = (int)b->n_slices;
        e->stored = 0;
        goto done;
    }
    int es = slim__dt_size(e->dtype);
    if (e->shard < 0 || e->shard >= im->num_shards)
        st = slim__error(err, SLIM_ECORRUPT, "%s: '%s' is in data shard %d of %d", s->file, name,
                         e->shard, im->num_shards);
    else if (e->off < 0 || e->len < 0)
        st = slim__error(err, SLIM_ECORRUPT, "%s: '%s' has a negative offset or size", s->file,
                         name);
    else if (es && (e->numel > INT64_MAX / es || e->len != e->numel * es))
        st = slim__error(err, SLIM_ECORRUPT,
                         "%s: '%s' is %lld %s values but has %lld bytes (expected %lld)", s->file,
                         name, (long long)e->numel, slim__dt_name(e->dtype), (long long)e->len,
                         (long long)(e->numel * es));
done:
    tensorflow__bundle_entry_proto__free_unpacked(b, NULL);
    return st;
}

#define ATTR_SUFFIX "/.ATTRIBUTES/VARIABLE_VALUE"
#define SLOT_MARK "/.OPTIMIZER_SLOT/"

static slim_status rename_entry(slim__ckpt_entry *e, const char *name)
{
    char *n = strdup(name);
    if (!n)
        return SLIM_ENOMEM;
    if (!e->key)
        e->key = e->name;
    else
        free(e->name);
    e->name = n;
    return SLIM_OK;
}

/* TF2: name entries by their variables (see tf_checkpoint.h). */
static slim_status tf2_names(slim__ckpt *c, slim_error *err)
{
    int og = -1;
    bool any = false;
    for (int i = 0; i < c->n; i++) {
        if (!strcmp(c->e[i].name, "_CHECKPOINTABLE_OBJECT_GRAPH"))
            og = i;
        if (strstr(c->e[i].name, ATTR_SUFFIX))
            any = true;
    }
    if (!any)
        return SLIM_OK;
    Tensorflow__TrackableObjectGraph *g = NULL;
    if (og >= 0 && c->e[og].dtype == SLIM__DT_STRING && c->e[og].numel == 1) {
        slim__buf out = {0};
        slim_status st = v2_read(c, &c->e[og], NULL, &out, err);
        uint64_t l = 0;
        if (!st && out.n >= 8)
            memcpy(&l, out.p, 8);
        if (!st && l <= out.n - 8)
            g = tensorflow__trackable_object_graph__unpack(NULL, (size_t)l, out.p + 8);
        slim__buf_free(&out);
        if (st)
            return st;
        if (!g)
            return slim__error(err, SLIM_ECORRUPT, "%s: bad _CHECKPOINTABLE_OBJECT_GRAPH", c->path);
    }
    slim_status st = SLIM_OK;
    for (int i = 0; i < c->n && !st; i++) {
        slim__ckpt_entry *e = &c->e[i];
        const char *n = e->name;
        size_t len = strlen(n), ls = strlen(ATTR_SUFFIX);
        if (i == og) {
            e->kind = SLIM__CK_META;
            continue;
        }
        if (len <= ls || strcmp(n + len - ls, ATTR_SUFFIX) != 0)
            continue;
        char base[1100];
        snprintf(base, sizeof base, "%.*s", (int)(len - ls), n);
        const char *full = NULL;
        const char *slot = NULL, *var = NULL;
        for (size_t a = 0; g && a < g->n_nodes && !full; a++) {
            const Tensorflow__TrackableObjectGraph__TrackableObject *o = g->nodes[a];
            for (size_t b = 0; b < o->n_attributes; b++)
                if (o->attributes[b]->checkpoint_key &&
                    !strcmp(o->attributes[b]->checkpoint_key, n) && o->attributes[b]->full_name &&
                    o->attributes[b]->full_name[0] && strlen(o->attributes[b]->full_name) < 1000) {
                    full = o->attributes[b]->full_name;
                    /* is node a a slot? (an optimizer's slot_variables point at it) */
                    for (size_t x = 0; x < g->n_nodes && !slot; x++)
                        for (size_t y = 0; y < g->nodes[x]->n_slot_variables; y++) {
                            const Tensorflow__TrackableObjectGraph__TrackableObject__SlotVariableReference
                                *r = g->nodes[x]->slot_variables[y];
                            if (r->slot_variable_node_id != (int)a)
                                continue;
                            int ov = r->original_variable_node_id;
                            if (ov >= 0 && (size_t)ov < g->n_nodes && g->nodes[ov]->n_attributes &&
                                g->nodes[ov]->attributes[0]->full_name)
                                var = g->nodes[ov]->attributes[0]->full_name;
                            slot = r->slot_name;
                            break;
                        }
                    break;
                }
        }
        char nm[2300];
        const char *mark = strstr(base, SLOT_MARK);
        if (slot && var && var[0] && strlen(var) + strlen(slot) < 1000) {
            snprintf(nm, sizeof nm, "%s/%s", var, slot);
        } else if (mark) {
            const char *ls2 = strrchr(base, '/');
            snprintf(nm, sizeof nm, "%.*s/%s", (int)(mark - base), base, ls2 + 1);
            slot = ls2 + 1;
            var = NULL;
        } else {
            snprintf(nm, sizeof nm, "%s", full ? full : base);
        }
        if (slot || mark) {
            e->kind = SLIM__CK_SLOT;
            const char *sl = strrchr(nm, '/');
            e->var = strndup(nm, (size_t)(sl - nm));
            e->slot = strdup(sl + 1);
            if (!e->var || !e->slot)
                st = SLIM_ENOMEM;
        } else if (!strncmp(base, "optimizer/", 10)) {
            e->kind = SLIM__CK_OPT;
        } else if (!strcmp(base, "save_counter")) {
            e->kind = SLIM__CK_META;
        }
        if (!st)
            st = rename_entry(e, nm);
        if (st)
            st = slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    if (g)
        tensorflow__trackable_object_graph__free_unpacked(g, NULL);
    return st;
}

static slim_status open_v2(slim__ckpt *c, slim__tft *t, const char *ip, slim_error *err)
{
    v2_impl *im = c->impl;
    slim_status st;
    v2_scan s = {.c = c, .file = ip};
    st = slim__tft_scan(t, v2_entry, &s, err);
    if (!st && !s.header)
        st = slim__error(err, SLIM_ECORRUPT, "%s: no BundleHeaderProto: not a TensorFlow V2 index",
                         ip);
    bool snappy = slim__tft_saw_snappy(t);
    slim__tft_close(t);
    if (st)
        return st;
    im->fd = malloc((size_t)im->num_shards * sizeof *im->fd);
    im->fsize = calloc((size_t)im->num_shards, sizeof *im->fsize);
    if (!im->fd || !im->fsize)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    for (int i = 0; i < im->num_shards; i++)
        im->fd[i] = -1;
    if (im->n_sl > 1)
        qsort(im->sl, (size_t)im->n_sl, sizeof *im->sl, slice_cmp);
    for (int i = 0; i < c->n; i++)
        if (c->e[i].priv && (st = check_tiling(ip, &c->e[i], c->e[i].priv, err)))
            return st;
    snprintf(c->desc, sizeof c->desc, "TensorFlow V2 (%d shard%s%s)", im->num_shards,
             im->num_shards == 1 ? "" : "s", snappy ? ", index blocks snappy-compressed" : "");
    st = tf2_names(c, err);
    if (st)
        return st;
    return slim__ckpt_finish(c, true, err);
}

static slim_status v2_init(slim__ckpt *c, slim_error *err)
{
    v2_impl *im = calloc(1, sizeof *im);
    if (!im)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    c->impl = im;
    c->ops = &v2_ops;
    c->format = SLIM__CKPT_TF_V2;
    return SLIM_OK;
}

slim_status slim__tfckpt_open_v2(slim__ckpt *c, slim_error *err)
{
    slim_status st = v2_init(c, err);
    if (st)
        return st;
    char ip[1300];
    snprintf(ip, sizeof ip, "%s.index", c->path);
    slim__tft *t;
    st = slim__tft_open(ip, &t, err);
    return st ? st : open_v2(c, t, ip, err);
}

/* ---- V1 ------------------------------------------------------------------- */

typedef struct v1_impl {
    slim__tft **t;
    int n;
} v1_impl;

/* The values of a TensorProto of dtype into dst (n elements, little-endian). */
static slim_status proto_values(const char *file, const char *name,
                                const Tensorflow__TensorProto *p, int dtype, int64_t n, void *dst,
                                slim__buf *strs, slim_error *err)
{
    int es = slim__dt_size(dtype);
    size_t got;
    if (n == 0)
        return SLIM_OK;
    if (p->tensor_content.len) {
        if (!es || p->tensor_content.len != (size_t)n * (size_t)es)
            goto bad;
        memcpy(dst, p->tensor_content.data, p->tensor_content.len);
        return SLIM_OK;
    }
    switch (dtype) {
    case SLIM__DT_FLOAT:
        if ((got = p->n_float_val) != (size_t)n)
            goto count;
        memcpy(dst, p->float_val, (size_t)n * 4);
        return SLIM_OK;
    case SLIM__DT_DOUBLE:
        if ((got = p->n_double_val) != (size_t)n)
            goto count;
        memcpy(dst, p->double_val, (size_t)n * 8);
        return SLIM_OK;
    case SLIM__DT_INT64:
        if ((got = p->n_int64_val) != (size_t)n)
            goto count;
        memcpy(dst, p->int64_val, (size_t)n * 8);
        return SLIM_OK;
    case SLIM__DT_UINT64:
        if ((got = p->n_uint64_val) != (size_t)n)
            goto count;
        memcpy(dst, p->uint64_val, (size_t)n * 8);
        return SLIM_OK;
    case SLIM__DT_UINT32:
        if ((got = p->n_uint32_val) != (size_t)n)
            goto count;
        memcpy(dst, p->uint32_val, (size_t)n * 4);
        return SLIM_OK;
    case SLIM__DT_BOOL:
        if ((got = p->n_bool_val) != (size_t)n)
            goto count;
        for (int64_t i = 0; i < n; i++)
            ((uint8_t *)dst)[i] = p->bool_val[i] ? 1 : 0;
        return SLIM_OK;
    case SLIM__DT_HALF:
    case SLIM__DT_BFLOAT16:
        if ((got = p->n_half_val) != (size_t)n)
            goto count;
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = (uint16_t)p->half_val[i];
            memcpy((char *)dst + 2 * i, &h, 2);
        }
        return SLIM_OK;
    case SLIM__DT_STRING:
        if ((got = p->n_string_val) != (size_t)n)
            goto count;
        for (int64_t i = 0; i < n; i++) {
            uint64_t l = p->string_val[i].len;
            slim__buf_add(strs, &l, 8);
        }
        for (int64_t i = 0; i < n; i++)
            slim__buf_add(strs, p->string_val[i].data, p->string_val[i].len);
        return SLIM_OK;
    default:
        if (!es || es > 4 || dtype == 8)
            return slim__error(err, SLIM_EUNSUPPORTED, "%s: '%s': %s values in a V1 checkpoint",
                               file, name, slim__dt_name(dtype));
        if ((got = p->n_int_val) != (size_t)n)
            goto count;
        for (int64_t i = 0; i < n; i++) {
            int32_t v = p->int_val[i];
            memcpy((char *)dst + (size_t)i * (size_t)es, &v, (size_t)es); /* low bytes */
        }
        return SLIM_OK;
    }
count:
    return slim__error(err, SLIM_ECORRUPT, "%s: '%s': a slice of %lld values stores %zu", file,
                       name, (long long)n, got);
bad:
    return slim__error(err, SLIM_ECORRUPT, "%s: '%s': tensor_content of %zu bytes for %lld %s",
                       file, name, p->tensor_content.len, (long long)n, slim__dt_name(dtype));
}

static slim_status v1_read(slim__ckpt *c, const slim__ckpt_entry *e, void *dst, void *out,
                           slim_error *err)
{
    v1_impl *im = c->impl;
    const slices *s = e->priv;
    int es = slim__dt_size(e->dtype);
    if (e->dtype == SLIM__DT_STRING && (s->n != 1 || e->numel != (s->n ? e->numel : 0)))
        if (s->n != 1)
            return slim__error(err, SLIM_EUNSUPPORTED, "%s: '%s': a string tensor in %d slices",
                               c->path, e->name, s->n);
    if (dst && es)
        memset(dst, 0, (size_t)e->numel * (size_t)es);
    slim__buf key = {0};
    slim_status st = SLIM_OK;
    int64_t a[SLIM__CKPT_MAX_RANK], l[SLIM__CKPT_MAX_RANK], n;
    size_t per = e->rank ? (size_t)e->rank : 1;
    for (int i = 0; i < s->n && !st; i++) {
        slim__tft *t = im->t[s->shard[i]];
        const char *file = slim__tft_name(t);
        slice_box(file, e, s, i, a, l, &n, NULL);
        slim__tf_slice_key(&key, e->name, e->rank, s->start + (size_t)i * per,
                           s->len + (size_t)i * per);
        const uint8_t *val;
        size_t vlen;
        int64_t boff;
        bool found;
        if (key.failed) {
            st = slim__error(err, SLIM_ENOMEM, "out of memory");
            break;
        }
        st = slim__tft_get(t, key.p, key.n, &val, &vlen, &boff, &found, err);
        if (st)
            break;
        if (!found) {
            st = slim__error(err, SLIM_ECORRUPT, "%s: the data of '%s' (slice %d) is missing", file,
                             e->name, i);
            break;
        }
        Tensorflow__SavedTensorSlices *sts =
            tensorflow__saved_tensor_slices__unpack(NULL, vlen, val);
        const Tensorflow__SavedSlice *d = sts ? sts->data : NULL;
        if (!d || !d->name || strcmp(d->name, e->name) != 0 || !d->data)
            st = slim__error(err, SLIM_ECORRUPT,
                             "%s: block at byte %lld: the value stored for '%s' is not its "
                             "SavedSlice",
                             file, (long long)boff, e->name);
        else if (e->dtype == SLIM__DT_STRING)
            st = proto_values(file, e->name, d->data, e->dtype, n, NULL, out, err);
        else {
            void *tmp = s->n == 1 ? dst : malloc(n ? (size_t)(n * es) : 1);
            if (!tmp)
                st = slim__error(err, SLIM_ENOMEM, "out of memory");
            else
                st = proto_values(file, e->name, d->data, e->dtype, n, tmp, NULL, err);
            if (!st && tmp != dst)
                place(dst, tmp, e->rank, e->dim, a, l, es);
            if (tmp != dst)
                free(tmp);
        }
        if (sts)
            tensorflow__saved_tensor_slices__free_unpacked(sts, NULL);
    }
    slim__buf_free(&key);
    return st;
}

static void v1_close(slim__ckpt *c)
{
    v1_impl *im = c->impl;
    if (!im)
        return;
    for (int i = 0; i < im->n; i++)
        slim__tft_close(im->t[i]);
    free(im->t);
    for (int i = 0; i < c->n; i++)
        slices_free(c->e[i].priv);
    free(im);
}

/* V1 values are protobuf lists: every element takes at least one byte of
 * the files, and decodes to at most 8. */
static int64_t v1_bound(slim__ckpt *c, const slim__ckpt_entry *e)
{
    v1_impl *im = c->impl;
    (void)e;
    int64_t total = 0;
    for (int i = 0; i < im->n; i++)
        total += slim__tft_size(im->t[i]);
    return total * 8;
}

static const slim__ckpt_ops v1_ops = {v1_read, v1_close, v1_bound};

/* Shard `shard`'s metadata: add its tensors (or their slices) to c. */
static slim_status v1_meta(slim__ckpt *c, int shard, slim_error *err)
{
    v1_impl *im = c->impl;
    slim__tft *t = im->t[shard];
    const char *file = slim__tft_name(t);
    const uint8_t *val;
    size_t vlen;
    bool found;
    slim_status st = slim__tft_get(t, "", 0, &val, &vlen, NULL, &found, err);
    if (st)
        return st;
    if (!found)
        return slim__error(err, SLIM_ECORRUPT,
                           "%s: a TensorFlow table without the \"\" key of a checkpoint", file);
    Tensorflow__SavedTensorSlices *sts = tensorflow__saved_tensor_slices__unpack(NULL, vlen, val);
    if (!sts || !sts->meta) {
        /* a V2 index under another name? */
        Tensorflow__BundleHeaderProto *h =
            sts ? NULL : tensorflow__bundle_header_proto__unpack(NULL, vlen, val);
        if (sts)
            tensorflow__saved_tensor_slices__free_unpacked(sts, NULL);
        if (h) {
            tensorflow__bundle_header_proto__free_unpacked(h, NULL);
            return slim__error(err, SLIM_EINVAL,
                               "%s looks like a TensorFlow V2 index: give the checkpoint's prefix "
                               "(the name before .index), with its .index and .data-* files "
                               "beside it",
                               file);
        }
        return slim__error(err, SLIM_ECORRUPT,
                           "%s: the \"\" key does not hold a SavedTensorSliceMeta: not a V1 "
                           "checkpoint",
                           file);
    }
    for (size_t i = 0; i < sts->meta->n_tensor && !st; i++) {
        const Tensorflow__SavedSliceMeta *m = sts->meta->tensor[i];
        if (!m->name || !m->name[0] || strlen(m->name) > 1000) {
            st = slim__error(err, SLIM_ECORRUPT, "%s: a tensor without a usable name", file);
            break;
        }
        int k = -1;
        for (int j = 0; j < c->n && k < 0; j++) /* n is small; sorted later */
            if (!strcmp(c->e[j].name, m->name))
                k = j;
        slim__ckpt_entry *e = k >= 0 ? &c->e[k] : slim__ckpt_add(c, m->name);
        if (!e) {
            st = slim__error(err, SLIM_ENOMEM, "out of memory");
            break;
        }
        if (k < 0) {
            e->dtype = m->type;
            st = set_shape(file, m->name, m->shape, e, err);
        } else if (e->dtype != (int)m->type) {
            st = slim__error(err, SLIM_ECORRUPT, "%s: '%s' has another type in another shard", file,
                             m->name);
        }
        slices *sl = e->priv;
        if (!st && m->n_slice == 0) {
            /* no slices listed: one slice, the whole tensor */
            Tensorflow__TensorSliceProto whole = TENSORFLOW__TENSOR_SLICE_PROTO__INIT;
            Tensorflow__TensorSliceProto *wp = &whole;
            st = add_slices(file, m->name, e->rank, &wp, 1, shard, &sl, err);
        } else if (!st) {
            st = add_slices(file, m->name, e->rank, m->slice, m->n_slice, shard, &sl, err);
        }
        e->priv = sl;
        e->n_slices = sl && sl->n > 1 ? sl->n : 0;
        int es = slim__dt_size(e->dtype);
        e->stored = es ? e->numel * es : 0;
    }
    tensorflow__saved_tensor_slices__free_unpacked(sts, NULL);
    return st;
}

static slim_status v1_finish(slim__ckpt *c, slim_error *err)
{
    v1_impl *im = c->impl;
    for (int i = 0; i < c->n; i++) {
        slim_status st = check_tiling(c->path, &c->e[i], c->e[i].priv, err);
        if (st)
            return st;
    }
    snprintf(c->desc, sizeof c->desc, "TensorFlow V1 (%d file%s)", im->n, im->n == 1 ? "" : "s");
    return slim__ckpt_finish(c, true, err);
}

static slim_status v1_init(slim__ckpt *c, int n, slim_error *err)
{
    v1_impl *im = calloc(1, sizeof *im);
    if (im)
        im->t = calloc((size_t)n, sizeof *im->t);
    if (!im || !im->t) {
        free(im);
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    c->impl = im;
    c->ops = &v1_ops;
    c->format = SLIM__CKPT_TF_V1;
    return SLIM_OK;
}

slim_status slim__tfckpt_open_table(slim__ckpt *c, slim_error *err)
{
    slim_status st = v1_init(c, 1, err);
    if (st)
        return st;
    v1_impl *im = c->impl;
    st = slim__tft_open(c->path, &im->t[0], err);
    if (st)
        return st;
    im->n = 1;
    st = v1_meta(c, 0, err);
    return st ? st : v1_finish(c, err);
}

slim_status slim__tfckpt_open_v1_sharded(slim__ckpt *c, slim_error *err)
{
    /* PREFIX-00000-of-NNNNN: find NNNNN from the directory */
    char dir[1200];
    snprintf(dir, sizeof dir, "%s", c->path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : dir;
    if (slash)
        *slash = 0;
    size_t bl = strlen(base);
    char basecopy[1200];
    snprintf(basecopy, sizeof basecopy, "%s", base);
    DIR *d = opendir(slash ? dir : ".");
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        int a, b;
        char tail;
        if (!strncmp(de->d_name, basecopy, bl) &&
            sscanf(de->d_name + bl, "-%5d-of-%5d%c", &a, &b, &tail) == 2 && a == 0 && b > 0 &&
            strlen(de->d_name + bl) == 16)
            n = b;
    }
    if (d)
        closedir(d);
    if (!n)
        return SLIM_ENOTFOUND;
    slim_status st = v1_init(c, n, err);
    if (st)
        return st;
    v1_impl *im = c->impl;
    for (int i = 0; i < n && !st; i++) {
        char p[1300];
        snprintf(p, sizeof p, "%s-%05d-of-%05d", c->path, i, n);
        st = slim__tft_open(p, &im->t[i], err);
        if (!st) {
            im->n = i + 1;
            st = v1_meta(c, i, err);
        }
    }
    return st ? st : v1_finish(c, err);
}

slim_status slim__tfckpt_open_mem(const void *table, size_t n, const void *data, size_t dn, bool v2,
                                  slim__ckpt **out, slim_error *err)
{
    slim__ckpt *c;
    slim_status st = slim__ckpt_new(v2 ? "(memory)" : "(memory V1)", &c, err);
    if (st)
        return st;
    slim__tft *t = NULL;
    st = v2 ? v2_init(c, err) : v1_init(c, 1, err);
    if (!st)
        st = slim__tft_open_mem(table, n, v2 ? "(memory).index" : "(memory V1)", &t, err);
    if (!st && v2) {
        v2_impl *im = c->impl;
        im->mem = data ? data : (const uint8_t *)"";
        im->mem_size = dn;
        st = open_v2(c, t, "(memory).index", err);
    } else if (!st) {
        v1_impl *im = c->impl;
        im->t[0] = t;
        im->n = 1;
        st = v1_meta(c, 0, err);
        if (!st)
            st = v1_finish(c, err);
    }
    if (st) {
        slim__ckpt_close(c);
        return st;
    }
    *out = c;
    return SLIM_OK;
}
