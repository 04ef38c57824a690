/* interop/tf_checkpoint.c - reading TensorFlow V2 checkpoints (see
 * tf_checkpoint.h; V1 is tf_checkpoint_v1.c). Files are untrusted: every
 * length, offset, shape and slice is checked against what holds it before it
 * is used. */
#include "interop/tf_slices.h"

#include "core/error.h"
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
            return slim__tf_error(err, e == ENOENT ? SLIM_ENOTFOUND : SLIM_EIO,
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
        return slim__tf_error(err, SLIM_ECORRUPT,
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
            return slim__tf_error(err, SLIM_EIO, "%s: cannot read tensor '%s' at byte %lld: %s", p,
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
        return slim__tf_error(
            err, SLIM_ECORRUPT,
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
        return slim__tf_error(err, SLIM_ECORRUPT,
                              "%s: string tensor '%s': %lld strings cannot fit in %zu bytes", file,
                              name, (long long)numel, n);
    size_t base = out->n;
    uint64_t total = 0;
    uint32_t c64 = 0, c32 = 0;
    for (int64_t i = 0; i < numel; i++) {
        uint64_t l;
        size_t k = slim__varint64_get(q, end, &l);
        if (!k || l > n)
            return slim__tf_error(err, SLIM_ECORRUPT,
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
        return slim__tf_error(err, SLIM_ECORRUPT,
                              "%s: string tensor '%s': its lengths (%llu bytes of strings) do not "
                              "match its %zu stored bytes",
                              file, name, (unsigned long long)total, n);
    uint32_t lc;
    memcpy(&lc, q, 4);
    bool w64 = lc == slim_crc32c_mask(c64), w32 = lc == slim_crc32c_mask(c32);
    if (!w64 && !w32)
        return slim__tf_error(err, SLIM_ECORRUPT,
                              "%s: string tensor '%s': the CRC-32C of its lengths does not match",
                              file, name);
    uint32_t all = slim_crc32c(w64 ? c64 : c32, q, 4 + (size_t)total);
    if (slim_crc32c_mask(all) != crc)
        return slim__tf_error(
            err, SLIM_ECORRUPT,
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
                return slim__tf_error(
                    err, SLIM_ECORRUPT,
                    "%s.index: string tensor '%s' claims %lld bytes, more than the "
                    "data files hold",
                    c->path, e->name, (long long)e->len);
            uint8_t *buf = malloc(e->len ? (size_t)e->len : 1);
            if (!buf)
                return slim__tf_error(err, SLIM_ENOMEM, "out of memory reading '%s'", e->name);
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
        return slim__tf_error(err, SLIM_EUNSUPPORTED, "%s: '%s': partitioned string tensors",
                              c->path, e->name);
    const slim__tf_slices *s = e->priv;
    slim__buf key = {0};
    int64_t st_[SLIM__CKPT_MAX_RANK], ln[SLIM__CKPT_MAX_RANK], n;
    slim_status st = SLIM_OK;
    for (int i = 0; i < s->n && !st; i++) {
        size_t per = e->rank ? (size_t)e->rank : 1;
        slim__tf_slice_key(&key, e->key ? e->key : e->name, e->rank, s->start + (size_t)i * per,
                           s->len + (size_t)i * per);
        if (key.failed) {
            st = slim__tf_error(err, SLIM_ENOMEM, "out of memory");
            break;
        }
        v2_slice want = {.key = key.p, .klen = key.n};
        const v2_slice *sl =
            im->n_sl ? bsearch(&want, im->sl, (size_t)im->n_sl, sizeof *im->sl, slice_cmp) : NULL;
        slim__tf_slice_box(c->path, e, s, i, st_, ln, &n, NULL);
        if (!sl)
            st = slim__tf_error(err, SLIM_ECORRUPT,
                                "%s.index: '%s': the entry of its slice %d is missing", c->path,
                                e->name, i);
        else if (sl->dtype != e->dtype || sl->numel != n || sl->size != n * es)
            st = slim__tf_error(
                err, SLIM_ECORRUPT,
                "%s.index: '%s': slice %d has %lld %s values in %lld bytes, expected "
                "%lld %s values",
                c->path, e->name, i, (long long)sl->numel, slim__dt_name(sl->dtype),
                (long long)sl->size, (long long)n, slim__dt_name(e->dtype));
        if (st)
            break;
        void *tmp = malloc(n ? (size_t)(n * es) : 1);
        if (!tmp) {
            st = slim__tf_error(err, SLIM_ENOMEM, "out of memory");
            break;
        }
        st = v2_bytes(c, e->name, sl->shard, sl->off, sl->size, sl->crc, e->dtype, tmp, err);
        if (!st)
            slim__tf_place(dst, tmp, e->rank, e->dim, st_, ln, es);
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
        slim__tf_slices_free(c->e[i].priv);
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
            return slim__tf_error(err, SLIM_ECORRUPT,
                                  "%s: bad BundleHeaderProto (block at byte %lld)", s->file,
                                  (long long)boff);
        int ns = h->num_shards, big = h->endianness;
        tensorflow__bundle_header_proto__free_unpacked(h, NULL);
        if (ns < 1 || ns > 100000)
            return slim__tf_error(err, SLIM_ECORRUPT, "%s: the header says %d data shards", s->file,
                                  ns);
        if (big)
            return slim__tf_error(err, SLIM_EUNSUPPORTED,
                                  "%s: a big-endian checkpoint (slim reads little-endian ones)",
                                  s->file);
        im->num_shards = ns;
        s->header = true;
        return SLIM_OK;
    }
    if (!s->header)
        return slim__tf_error(err, SLIM_ECORRUPT,
                              "%s: no BundleHeaderProto under the \"\" key: not "
                              "a TensorFlow V2 index",
                              s->file);
    Tensorflow__BundleEntryProto *b = tensorflow__bundle_entry_proto__unpack(NULL, vlen, val);
    if (!b)
        return slim__tf_error(
            err, SLIM_ECORRUPT, "%s: entry '%.*s' (block at byte %lld): bad BundleEntryProto",
            s->file, (int)(klen < 200 ? klen : 200), (const char *)key, (long long)boff);
    slim_status st = SLIM_OK;
    char name[1100];
    if (klen >= sizeof name || memchr(key, 0, klen)) {
        if (key[0] != 0 || klen > (1 << 16)) {
            st = slim__tf_error(err, SLIM_ECORRUPT, "%s: a key of %zu bytes is not a tensor name",
                                s->file, klen);
            goto done;
        }
        /* a slice of a partitioned variable, under its encoded key */
        if (im->n_sl == im->cap_sl) {
            int cap = im->cap_sl ? 2 * im->cap_sl : 16;
            v2_slice *p = realloc(im->sl, (size_t)cap * sizeof *p);
            if (!p) {
                st = slim__tf_error(err, SLIM_ENOMEM, "out of memory");
                goto done;
            }
            im->sl = p;
            im->cap_sl = cap;
        }
        slim__ckpt_entry tmp = {.name = "(slice)"};
        st = slim__tf_set_shape(s->file, "(a slice)", b->shape, &tmp, err);
        if (st)
            goto done;
        v2_slice *sl = &im->sl[im->n_sl];
        sl->key = malloc(klen);
        if (!sl->key) {
            st = slim__tf_error(err, SLIM_ENOMEM, "out of memory");
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
            st = slim__tf_error(err, SLIM_ECORRUPT, "%s: a slice entry in shard %d of %d", s->file,
                                b->shard_id, im->num_shards);
        goto done;
    }
    memcpy(name, key, klen);
    name[klen] = 0;
    slim__ckpt_entry *e = slim__ckpt_add(c, name);
    if (!e) {
        st = slim__tf_error(err, SLIM_ENOMEM, "out of memory");
        goto done;
    }
    e->dtype = b->dtype;
    st = slim__tf_set_shape(s->file, name, b->shape, e, err);
    if (st)
        goto done;
    e->shard = b->shard_id;
    e->off = b->offset;
    e->len = b->size;
    e->stored = b->size;
    e->crc = b->crc32c;
    if (b->n_slices) {
        slim__tf_slices *sl = NULL;
        st = slim__tf_add_slices(s->file, name, e->rank, b->slices, b->n_slices, 0, &sl, err);
        e->priv = sl;
        e->n_slices = (int)b->n_slices;
        e->stored = 0;
        goto done;
    }
    int es = slim__dt_size(e->dtype);
    if (e->shard < 0 || e->shard >= im->num_shards)
        st = slim__tf_error(err, SLIM_ECORRUPT, "%s: '%s' is in data shard %d of %d", s->file, name,
                            e->shard, im->num_shards);
    else if (e->off < 0 || e->len < 0)
        st = slim__tf_error(err, SLIM_ECORRUPT, "%s: '%s' has a negative offset or size", s->file,
                            name);
    else if (es && (e->numel > INT64_MAX / es || e->len != e->numel * es))
        st = slim__tf_error(err, SLIM_ECORRUPT,
                            "%s: '%s' is %lld %s values but has %lld bytes (expected %lld)",
                            s->file, name, (long long)e->numel, slim__dt_name(e->dtype),
                            (long long)e->len, (long long)(e->numel * es));
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
            return slim__tf_error(err, SLIM_ECORRUPT, "%s: bad _CHECKPOINTABLE_OBJECT_GRAPH",
                                  c->path);
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
            st = slim__tf_error(err, SLIM_ENOMEM, "out of memory");
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
        st = slim__tf_error(err, SLIM_ECORRUPT,
                            "%s: no BundleHeaderProto: not a TensorFlow V2 index", ip);
    bool snappy = slim__tft_saw_snappy(t);
    slim__tft_close(t);
    if (st)
        return st;
    im->fd = malloc((size_t)im->num_shards * sizeof *im->fd);
    im->fsize = calloc((size_t)im->num_shards, sizeof *im->fsize);
    if (!im->fd || !im->fsize)
        return slim__tf_error(err, SLIM_ENOMEM, "out of memory");
    for (int i = 0; i < im->num_shards; i++)
        im->fd[i] = -1;
    if (im->n_sl > 1)
        qsort(im->sl, (size_t)im->n_sl, sizeof *im->sl, slice_cmp);
    for (int i = 0; i < c->n; i++)
        if (c->e[i].priv && (st = slim__tf_check_tiling(ip, &c->e[i], c->e[i].priv, err)))
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
        return slim__tf_error(err, SLIM_ENOMEM, "out of memory");
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

slim_status slim__tfckpt_open_mem(const void *table, size_t n, const void *data, size_t dn, bool v2,
                                  slim__ckpt **out, slim_error *err)
{
    slim__ckpt *c;
    slim_status st = slim__ckpt_new(v2 ? "(memory)" : "(memory V1)", &c, err);
    if (st)
        return st;
    slim__tft *t = NULL;
    st = v2 ? v2_init(c, err) : SLIM_OK;
    if (!st)
        st = slim__tft_open_mem(table, n, v2 ? "(memory).index" : "(memory V1)", &t, err);
    if (!st && v2) {
        v2_impl *im = c->impl;
        im->mem = data ? data : (const uint8_t *)"";
        im->mem_size = dn;
        st = open_v2(c, t, "(memory).index", err);
    } else if (!st) {
        st = slim__tfckpt_open_v1_table(c, t, err);
    }
    if (st) {
        slim__ckpt_close(c);
        return st;
    }
    *out = c;
    return SLIM_OK;
}
