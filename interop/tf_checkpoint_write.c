/* interop/tf_checkpoint_write.c - writing TensorFlow V1 and V2 checkpoints
 * the way TensorFlow's own writers lay them out (tensor_bundle.cc's
 * BundleWriter, tensor_slice_writer.cc): tables without compression, V2
 * header {num_shards, version {producer: 1}}, V1 meta versions {producer: 1},
 * whole tensors as one slice with empty extents. */
#include "interop/tf_checkpoint.h"

#include "core/error.h"
#include "interop/tf_checkpoint.pb-c.h"

#include <slim/data.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct kv {
    uint8_t *key;
    size_t klen;
    uint8_t *val; /* V1: the serialized SavedTensorSlices; V2: the BundleEntryProto */
    size_t vlen;
} kv;

typedef struct meta_t {
    char *name;
    int dtype, rank;
    int64_t dim[SLIM__CKPT_MAX_RANK];
    int n_slices; /* listed slices (V1 meta, V2 full entry of a partitioned variable) */
    int64_t *start, *len;
} meta_t;

struct slim__tfw {
    slim__tfw_format format;
    char *path;
    int num_shards, next;
    FILE **data;
    char (*tmp)[1400]; /* V2: data shards, then the index; V1: the file */
    int64_t *off;
    kv *kv;
    int nkv, capkv;
    meta_t *m;
    int nm, capm;
};

static slim_status oom(slim_error *err)
{
    return slim__tf_error(err, SLIM_ENOMEM, "out of memory writing a checkpoint");
}

static void final_name(const slim__tfw *w, int i, char *buf, size_t n)
{
    if (w->format == SLIM__TFW_V1)
        snprintf(buf, n, "%s", w->path);
    else if (i < w->num_shards)
        snprintf(buf, n, "%s.data-%05d-of-%05d", w->path, i, w->num_shards);
    else
        snprintf(buf, n, "%s.index", w->path);
}

slim_status slim__tfw_new(const char *path, slim__tfw_format format, int num_shards,
                          slim__tfw **out, slim_error *err)
{
    *out = NULL;
    if (format == SLIM__TFW_V1)
        num_shards = 0;
    else if (num_shards < 1 || num_shards > 9999)
        return slim__tf_error(err, SLIM_EINVAL, "%d data shards: expected 1 to 9999", num_shards);
    slim__tfw *w = calloc(1, sizeof *w);
    if (!w)
        return oom(err);
    w->format = format;
    w->num_shards = num_shards;
    w->path = strdup(path);
    int nf = num_shards + 1;
    w->tmp = calloc((size_t)nf, sizeof *w->tmp);
    w->data = calloc((size_t)nf, sizeof *w->data);
    w->off = calloc((size_t)nf, sizeof *w->off);
    if (!w->path || !w->tmp || !w->data || !w->off) {
        slim__tfw_free(w);
        return oom(err);
    }
    for (int i = 0; i < nf; i++) {
        char fin[1300];
        final_name(w, i, fin, sizeof fin);
        snprintf(w->tmp[i], sizeof w->tmp[i], "%s.tmp-%ld", fin, (long)getpid());
    }
    for (int i = 0; i < num_shards; i++) {
        w->data[i] = fopen(w->tmp[i], "wbe");
        if (!w->data[i]) {
            slim_status st =
                slim__tf_error(err, SLIM_EIO, "cannot create %s: %s", w->tmp[i], strerror(errno));
            slim__tfw_free(w);
            return st;
        }
    }
    *out = w;
    return SLIM_OK;
}

static slim_status add_kv(slim__tfw *w, const slim__buf *key, const ProtobufCMessage *msg,
                          slim_error *err)
{
    if (w->nkv == w->capkv) {
        int cap = w->capkv ? 2 * w->capkv : 64;
        kv *p = realloc(w->kv, (size_t)cap * sizeof *p);
        if (!p)
            return oom(err);
        w->kv = p;
        w->capkv = cap;
    }
    size_t n = protobuf_c_message_get_packed_size(msg);
    kv *e = &w->kv[w->nkv];
    e->key = malloc(key->n ? key->n : 1);
    e->val = malloc(n ? n : 1);
    if (!e->key || !e->val || key->failed) {
        free(e->key);
        free(e->val);
        return oom(err);
    }
    if (key->n)
        memcpy(e->key, key->p, key->n);
    e->klen = key->n;
    e->vlen = protobuf_c_message_pack(msg, e->val);
    w->nkv++;
    return SLIM_OK;
}

static slim_status add_meta(slim__tfw *w, const char *name, int dtype, int rank, const int64_t *dim,
                            const int64_t *start, const int64_t *len, meta_t **out, slim_error *err)
{
    meta_t *m = NULL;
    for (int i = w->nm - 1; i >= 0 && !m; i--)
        if (!strcmp(w->m[i].name, name))
            m = &w->m[i];
    if (m && (m->dtype != dtype || m->rank != rank ||
              (rank && memcmp(m->dim, dim, (size_t)rank * sizeof *dim) != 0)))
        return slim__tf_error(err, SLIM_EINVAL, "'%s' added twice with different shapes or types",
                              name);
    if (!m) {
        if (w->nm == w->capm) {
            int cap = w->capm ? 2 * w->capm : 64;
            meta_t *p = realloc(w->m, (size_t)cap * sizeof *p);
            if (!p)
                return oom(err);
            w->m = p;
            w->capm = cap;
        }
        m = &w->m[w->nm];
        memset(m, 0, sizeof *m);
        if (!(m->name = strdup(name)))
            return oom(err);
        m->dtype = dtype;
        m->rank = rank;
        if (rank)
            memcpy(m->dim, dim, (size_t)rank * sizeof *dim);
        w->nm++;
    }
    size_t per = rank ? (size_t)rank : 1, k = (size_t)m->n_slices;
    int64_t *s = realloc(m->start, (k + 1) * per * sizeof *s);
    if (s)
        m->start = s;
    int64_t *l = s ? realloc(m->len, (k + 1) * per * sizeof *l) : NULL;
    if (!l)
        return oom(err);
    m->len = l;
    for (int d = 0; d < rank; d++) {
        m->start[k * per + (size_t)d] = start ? start[d] : 0;
        m->len[k * per + (size_t)d] = len ? len[d] : -1;
    }
    m->n_slices++;
    *out = m;
    return SLIM_OK;
}

/* The TensorSliceProto of one slice: an empty extent for a whole dimension. */
typedef struct slice_msg {
    Tensorflow__TensorSliceProto p;
    Tensorflow__TensorSliceProto__Extent ex[SLIM__CKPT_MAX_RANK];
    Tensorflow__TensorSliceProto__Extent *exp[SLIM__CKPT_MAX_RANK];
} slice_msg;

static void slice_proto(slice_msg *s, int rank, const int64_t *start, const int64_t *len)
{
    tensorflow__tensor_slice_proto__init(&s->p);
    for (int d = 0; d < rank; d++) {
        tensorflow__tensor_slice_proto__extent__init(&s->ex[d]);
        if (len && len[d] != -1) {
            s->ex[d].start = start[d];
            s->ex[d].has_length_case = TENSORFLOW__TENSOR_SLICE_PROTO__EXTENT__HAS_LENGTH_LENGTH;
            s->ex[d].length = len[d];
        }
        s->exp[d] = &s->ex[d];
    }
    s->p.n_extent = (size_t)rank;
    s->p.extent = s->exp;
}

typedef struct shape_msg {
    Tensorflow__TensorShapeProto p;
    Tensorflow__TensorShapeProto__Dim d[SLIM__CKPT_MAX_RANK];
    Tensorflow__TensorShapeProto__Dim *dp[SLIM__CKPT_MAX_RANK];
} shape_msg;

static void shape_proto(shape_msg *s, int rank, const int64_t *dim)
{
    tensorflow__tensor_shape_proto__init(&s->p);
    for (int d = 0; d < rank; d++) {
        tensorflow__tensor_shape_proto__dim__init(&s->d[d]);
        s->d[d].size = dim[d];
        s->dp[d] = &s->d[d];
    }
    s->p.n_dim = (size_t)rank;
    s->p.dim = s->dp;
}

/* Numbers as they are; strings from u64 lengths + bytes to TensorFlow's
 * varint lengths, masked CRC of the lengths, bytes; with the entry's CRC. */
static slim_status v2_write(slim__tfw *w, int shard, const char *name, int dtype, int64_t numel,
                            const void *data, size_t len, int64_t *off, int64_t *size,
                            uint32_t *crc, slim_error *err)
{
    FILE *f = w->data[shard];
    *off = w->off[shard];
    if (dtype != SLIM__DT_STRING) {
        int es = slim__dt_size(dtype);
        if (!es || len != (size_t)numel * (size_t)es)
            return slim__tf_error(err, SLIM_EINVAL, "'%s': %zu bytes for %lld %s values", name, len,
                                  (long long)numel, slim__dt_name(dtype));
        if (len && fwrite(data, 1, len, f) != len)
            return slim__tf_error(err, SLIM_EIO, "cannot write %s: %s", w->tmp[shard],
                                  strerror(errno));
        *size = (int64_t)len;
        *crc = slim_crc32c_mask(slim_crc32c(0, data, len));
        w->off[shard] += (int64_t)len;
        return SLIM_OK;
    }
    if ((uint64_t)numel > len / 8)
        return slim__tf_error(err, SLIM_EINVAL, "'%s': bad string data", name);
    const uint8_t *p = data;
    uint64_t total = 0;
    slim__buf b = {0};
    uint32_t c = 0;
    for (int64_t i = 0; i < numel; i++) {
        uint64_t l;
        memcpy(&l, p + 8 * i, 8);
        total += l;
        slim__buf_varint(&b, l);
        c = slim_crc32c(c, &l, 8);
    }
    if (total != len - 8 * (uint64_t)numel) {
        slim__buf_free(&b);
        return slim__tf_error(err, SLIM_EINVAL, "'%s': bad string data", name);
    }
    uint8_t ck[4];
    uint32_t m = slim_crc32c_mask(c);
    memcpy(ck, &m, 4);
    c = slim_crc32c(c, ck, 4);
    slim__buf_add(&b, ck, 4);
    const uint8_t *s = p + 8 * numel;
    c = slim_crc32c(c, s, (size_t)total);
    slim__buf_add(&b, s, (size_t)total);
    slim_status st = SLIM_OK;
    if (b.failed)
        st = oom(err);
    else if (b.n && fwrite(b.p, 1, b.n, f) != b.n)
        st = slim__tf_error(err, SLIM_EIO, "cannot write %s: %s", w->tmp[shard], strerror(errno));
    *size = (int64_t)b.n;
    *crc = slim_crc32c_mask(c);
    w->off[shard] += (int64_t)b.n;
    slim__buf_free(&b);
    return st;
}

/* The V1 value of one slice: SavedTensorSlices {data {name, slice, data}}. */
static slim_status v1_value(slim__tfw *w, const char *name, int dtype, int rank,
                            const int64_t *start, const int64_t *len, int64_t numel,
                            const void *data, size_t bytes, slim_error *err)
{
    Tensorflow__TensorProto tp = TENSORFLOW__TENSOR_PROTO__INIT;
    int es = slim__dt_size(dtype);
    void *tmp = NULL;
    ProtobufCBinaryData *sv = NULL;
    if (dtype == SLIM__DT_STRING) {
        if ((uint64_t)numel > bytes / 8)
            return slim__tf_error(err, SLIM_EINVAL, "'%s': bad string data", name);
        sv = calloc((size_t)numel + 1, sizeof *sv);
        if (!sv)
            return oom(err);
        const uint8_t *s = (const uint8_t *)data + 8 * numel;
        uint64_t total = 0;
        for (int64_t i = 0; i < numel; i++) {
            uint64_t l;
            memcpy(&l, (const uint8_t *)data + 8 * i, 8);
            if (l > bytes - 8 * (uint64_t)numel - total) {
                free(sv);
                return slim__tf_error(err, SLIM_EINVAL, "'%s': bad string data", name);
            }
            sv[i].data = (uint8_t *)s + total;
            sv[i].len = (size_t)l;
            total += l;
        }
        tp.n_string_val = (size_t)numel;
        tp.string_val = sv;
    } else {
        if (!es || bytes != (size_t)numel * (size_t)es)
            return slim__tf_error(err, SLIM_EINVAL, "'%s': %zu bytes for %lld %s values", name,
                                  bytes, (long long)numel, slim__dt_name(dtype));
        size_t n = (size_t)numel;
        switch (dtype) {
        case SLIM__DT_FLOAT: tp.n_float_val = n, tp.float_val = (float *)data; break;
        case SLIM__DT_DOUBLE: tp.n_double_val = n, tp.double_val = (double *)data; break;
        case SLIM__DT_INT64: tp.n_int64_val = n, tp.int64_val = (int64_t *)data; break;
        case SLIM__DT_UINT64: tp.n_uint64_val = n, tp.uint64_val = (uint64_t *)data; break;
        case SLIM__DT_UINT32: tp.n_uint32_val = n, tp.uint32_val = (uint32_t *)data; break;
        default: {
            /* bool, half and the narrow integers: widened to the proto's lists */
            tmp = malloc(n ? n * sizeof(int32_t) : 1);
            if (!tmp)
                return oom(err);
            for (size_t i = 0; i < n; i++) {
                const uint8_t *q = (const uint8_t *)data + i * (size_t)es;
                int32_t v = 0;
                switch (dtype) {
                case SLIM__DT_INT8: v = (int8_t)q[0]; break;
                case SLIM__DT_INT16: v = (int16_t)(q[0] | q[1] << 8); break;
                case SLIM__DT_INT32: memcpy(&v, q, 4); break;
                case SLIM__DT_BOOL: v = q[0] != 0; break;
                default: v = es == 1 ? q[0] : es == 2 ? (q[0] | q[1] << 8) : 0; break;
                }
                ((int32_t *)tmp)[i] = v;
            }
            if (dtype == SLIM__DT_BOOL) {
                protobuf_c_boolean *bv = malloc(n ? n * sizeof *bv : 1);
                if (!bv) {
                    free(tmp);
                    return oom(err);
                }
                for (size_t i = 0; i < n; i++)
                    bv[i] = ((int32_t *)tmp)[i];
                free(tmp);
                tmp = bv;
                tp.n_bool_val = n;
                tp.bool_val = bv;
            } else if (dtype == SLIM__DT_HALF) {
                tp.n_half_val = n;
                tp.half_val = tmp;
            } else if (dtype == SLIM__DT_BFLOAT16 || dtype == 8 || dtype == SLIM__DT_COMPLEX128) {
                free(tmp);
                return slim__tf_error(err, SLIM_EUNSUPPORTED,
                                      "'%s': V1 checkpoints cannot hold %s values (write V2)", name,
                                      slim__dt_name(dtype));
            } else {
                tp.n_int_val = n;
                tp.int_val = tmp;
            }
        }
        }
    }
    slice_msg sm;
    slice_proto(&sm, rank, start, len);
    Tensorflow__SavedSlice ss = TENSORFLOW__SAVED_SLICE__INIT;
    ss.name = (char *)name;
    ss.slice = &sm.p;
    ss.data = &tp;
    Tensorflow__SavedTensorSlices sts = TENSORFLOW__SAVED_TENSOR_SLICES__INIT;
    sts.data = &ss;
    slim__buf key = {0};
    slim__tf_slice_key(&key, name, rank, start, len);
    slim_status st = add_kv(w, &key, &sts.base, err);
    slim__buf_free(&key);
    free(tmp);
    free(sv);
    return st;
}

static slim_status add_any(slim__tfw *w, const char *name, int dtype, int rank, const int64_t *dim,
                           const int64_t *start, const int64_t *length, const void *data,
                           size_t len, slim_error *err)
{
    if (!name[0] || rank < 0 || rank > SLIM__CKPT_MAX_RANK)
        return slim__tf_error(err, SLIM_EINVAL, "cannot write '%s' (rank %d)", name, rank);
    int64_t sdim[SLIM__CKPT_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        sdim[d] = length && length[d] != -1 ? length[d] : dim[d];
        int64_t a = length && length[d] != -1 ? start[d] : 0;
        if (a < 0 || sdim[d] < 0 || a > dim[d] || sdim[d] > dim[d] - a)
            return slim__tf_error(err, SLIM_EINVAL, "'%s': a slice outside its shape", name);
    }
    int64_t numel = slim__ckpt_numel(rank, sdim);
    if (numel < 0)
        return slim__tf_error(err, SLIM_EINVAL, "'%s': bad shape", name);
    meta_t *m = NULL;
    slim_status st = add_meta(w, name, dtype, rank, dim, length ? start : NULL, length, &m, err);
    if (st)
        return st;
    int64_t z[SLIM__CKPT_MAX_RANK], all[SLIM__CKPT_MAX_RANK];
    for (int d = 0; d < rank; d++)
        z[d] = 0, all[d] = -1;
    if (w->format == SLIM__TFW_V1)
        return v1_value(w, name, dtype, rank, length ? start : z, length ? length : all, numel,
                        data, len, err);
    int shard = w->next++ % w->num_shards;
    int64_t off = 0, size = 0;
    uint32_t crc = 0;
    st = v2_write(w, shard, name, dtype, numel, data, len, &off, &size, &crc, err);
    if (st)
        return st;
    shape_msg sm;
    shape_proto(&sm, rank, sdim);
    Tensorflow__BundleEntryProto e = TENSORFLOW__BUNDLE_ENTRY_PROTO__INIT;
    e.dtype = dtype;
    e.shape = &sm.p;
    e.shard_id = shard;
    e.offset = off;
    e.size = size;
    e.crc32c = crc;
    slim__buf key = {0};
    if (length)
        slim__tf_slice_key(&key, name, rank, start, length);
    else
        slim__buf_add(&key, name, strlen(name));
    if (!length) /* a whole tensor: one entry under its name (index: no slices) */
        m->n_slices = -1;
    st = add_kv(w, &key, &e.base, err);
    slim__buf_free(&key);
    return st;
}

slim_status slim__tfw_add(slim__tfw *w, const char *name, int dtype, int rank, const int64_t *dim,
                          const void *data, size_t len, slim_error *err)
{
    return add_any(w, name, dtype, rank, dim, NULL, NULL, data, len, err);
}

slim_status slim__tfw_add_slice(slim__tfw *w, const char *name, int dtype, int rank,
                                const int64_t *dim, const int64_t *start, const int64_t *length,
                                const void *data, size_t len, slim_error *err)
{
    return add_any(w, name, dtype, rank, dim, start, length, data, len, err);
}

static int kv_cmp(const void *a, const void *b)
{
    const kv *x = a, *y = b;
    size_t m = x->klen < y->klen ? x->klen : y->klen;
    int r = m ? memcmp(x->key, y->key, m) : 0;
    return r ? r : x->klen < y->klen ? -1 : x->klen > y->klen ? 1 : 0;
}

static int meta_cmp(const void *a, const void *b)
{
    return strcmp(((const meta_t *)a)->name, ((const meta_t *)b)->name);
}

/* The "" entry: V2's BundleHeaderProto, V1's SavedTensorSlices {meta}; and
 * V2's entries of partitioned variables. */
static slim_status add_meta_entries(slim__tfw *w, slim_error *err)
{
    slim__buf key = {0};
    slim_status st = SLIM_OK;
    Tensorflow__VersionDef v = TENSORFLOW__VERSION_DEF__INIT;
    v.producer = 1; /* kTensorBundleVersion, TF_CHECKPOINT_VERSION */
    if (w->format == SLIM__TFW_V2) {
        Tensorflow__BundleHeaderProto h = TENSORFLOW__BUNDLE_HEADER_PROTO__INIT;
        h.num_shards = w->num_shards;
        h.version = &v;
        st = add_kv(w, &key, &h.base, err);
        for (int i = 0; i < w->nm && !st; i++) {
            meta_t *m = &w->m[i];
            if (m->n_slices < 0)
                continue;
            shape_msg sm;
            shape_proto(&sm, m->rank, m->dim);
            Tensorflow__BundleEntryProto e = TENSORFLOW__BUNDLE_ENTRY_PROTO__INIT;
            e.dtype = m->dtype;
            e.shape = &sm.p;
            slice_msg *sl = calloc((size_t)m->n_slices, sizeof *sl);
            Tensorflow__TensorSliceProto **sp = calloc((size_t)m->n_slices, sizeof *sp);
            if (!sl || !sp)
                st = oom(err);
            size_t per = m->rank ? (size_t)m->rank : 1;
            for (int k = 0; !st && k < m->n_slices; k++) {
                slice_proto(&sl[k], m->rank, m->start + (size_t)k * per, m->len + (size_t)k * per);
                sp[k] = &sl[k].p;
            }
            e.n_slices = (size_t)m->n_slices;
            e.slices = sp;
            key.n = 0;
            slim__buf_add(&key, m->name, strlen(m->name));
            if (!st)
                st = add_kv(w, &key, &e.base, err);
            free(sl);
            free(sp);
        }
        slim__buf_free(&key);
        return st;
    }
    qsort(w->m, (size_t)w->nm, sizeof *w->m, meta_cmp);
    Tensorflow__SavedSliceMeta *sm = calloc((size_t)w->nm + 1, sizeof *sm);
    Tensorflow__SavedSliceMeta **smp = calloc((size_t)w->nm + 1, sizeof *smp);
    shape_msg *shp = calloc((size_t)w->nm + 1, sizeof *shp);
    slice_msg **sl = calloc((size_t)w->nm + 1, sizeof *sl);
    Tensorflow__TensorSliceProto ***slp = calloc((size_t)w->nm + 1, sizeof *slp);
    if (!sm || !smp || !shp || !sl || !slp)
        st = oom(err);
    for (int i = 0; i < w->nm && !st; i++) {
        meta_t *m = &w->m[i];
        tensorflow__saved_slice_meta__init(&sm[i]);
        sm[i].name = m->name;
        shape_proto(&shp[i], m->rank, m->dim);
        sm[i].shape = &shp[i].p;
        sm[i].type = m->dtype;
        sl[i] = calloc((size_t)m->n_slices, sizeof **sl);
        slp[i] = calloc((size_t)m->n_slices, sizeof **slp);
        if (!sl[i] || !slp[i]) {
            st = oom(err);
            break;
        }
        size_t per = m->rank ? (size_t)m->rank : 1;
        for (int k = 0; k < m->n_slices; k++) {
            bool whole = true;
            for (int d = 0; d < m->rank; d++)
                whole = whole && m->len[(size_t)k * per + (size_t)d] == -1;
            slice_proto(&sl[i][k], m->rank, m->start + (size_t)k * per,
                        whole ? NULL : m->len + (size_t)k * per);
            slp[i][k] = &sl[i][k].p;
        }
        sm[i].n_slice = (size_t)m->n_slices;
        sm[i].slice = slp[i];
        smp[i] = &sm[i];
    }
    if (!st) {
        Tensorflow__SavedTensorSliceMeta meta = TENSORFLOW__SAVED_TENSOR_SLICE_META__INIT;
        meta.n_tensor = (size_t)w->nm;
        meta.tensor = smp;
        meta.versions = &v;
        Tensorflow__SavedTensorSlices sts = TENSORFLOW__SAVED_TENSOR_SLICES__INIT;
        sts.meta = &meta;
        st = add_kv(w, &key, &sts.base, err);
    }
    for (int i = 0; sl && slp && i < w->nm; i++) {
        free(sl[i]);
        free(slp[i]);
    }
    free(sm);
    free(smp);
    free(shp);
    free(sl);
    free(slp);
    slim__buf_free(&key);
    return st;
}

slim_status slim__tfw_finish(slim__tfw *w, slim_error *err)
{
    slim_status st = SLIM_OK;
    for (int i = 0; i < w->num_shards && !st; i++) {
        FILE *f = w->data[i];
        w->data[i] = NULL;
        if (fflush(f) != 0 || fsync(fileno(f)) != 0)
            st = slim__tf_error(err, SLIM_EIO, "cannot write %s: %s", w->tmp[i], strerror(errno));
        if (fclose(f) != 0 && !st)
            st = slim__tf_error(err, SLIM_EIO, "cannot write %s: %s", w->tmp[i], strerror(errno));
    }
    if (!st)
        st = add_meta_entries(w, err);
    if (!st && w->nkv > 1)
        qsort(w->kv, (size_t)w->nkv, sizeof *w->kv, kv_cmp);
    for (int i = 1; !st && i < w->nkv; i++)
        if (!kv_cmp(&w->kv[i - 1], &w->kv[i]))
            st = slim__tf_error(err, SLIM_EINVAL, "'%.*s' added twice", (int)w->kv[i].klen,
                                (const char *)w->kv[i].key);
    int ti = w->num_shards; /* the table: V2's index, V1's file */
    slim__tft_writer *tw = NULL;
    if (!st)
        st = slim__tft_writer_new(w->tmp[ti], &(slim__tft_opts){0}, &tw, err);
    for (int i = 0; !st && i < w->nkv; i++)
        st =
            slim__tft_writer_add(tw, w->kv[i].key, w->kv[i].klen, w->kv[i].val, w->kv[i].vlen, err);
    if (tw)
        st = st ? (slim__tft_writer_free(tw), st) : slim__tft_writer_finish(tw, err);
    /* data first, the index last: a V2 checkpoint exists once its index does */
    for (int i = 0; !st && i <= w->num_shards; i++) {
        char fin[1300];
        final_name(w, i, fin, sizeof fin);
        if (rename(w->tmp[i], fin) != 0)
            st = slim__tf_error(err, SLIM_EIO, "cannot rename %s to %s: %s", w->tmp[i], fin,
                                strerror(errno));
        else
            w->tmp[i][0] = 0;
    }
    slim__tfw_free(w);
    return st;
}

void slim__tfw_free(slim__tfw *w)
{
    if (!w)
        return;
    for (int i = 0; w->data && i <= w->num_shards; i++)
        if (w->data[i])
            fclose(w->data[i]);
    for (int i = 0; w->tmp && i <= w->num_shards; i++)
        if (w->tmp[i][0])
            unlink(w->tmp[i]);
    for (int i = 0; i < w->nkv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].val);
    }
    for (int i = 0; i < w->nm; i++) {
        free(w->m[i].name);
        free(w->m[i].start);
        free(w->m[i].len);
    }
    free(w->kv);
    free(w->m);
    free(w->data);
    free(w->tmp);
    free(w->off);
    free(w->path);
    free(w);
}
