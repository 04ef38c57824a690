/* interop/tf_checkpoint_v1.c - reading TensorFlow V1 checkpoints (see
 * tf_checkpoint.h): one table (or shards of it) whose "" key lists every
 * tensor and whose other keys hold each slice's values as TensorProto lists.
 * Files are untrusted: every count, type and slice is checked. */
#include "interop/tf_slices.h"

#include "core/error.h"
#include "interop/tf_checkpoint.pb-c.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    const void *vals = NULL; /* the values of the types kept as they are in memory */
    switch (dtype) {
    case SLIM__DT_FLOAT: got = p->n_float_val, vals = p->float_val; break;
    case SLIM__DT_DOUBLE: got = p->n_double_val, vals = p->double_val; break;
    case SLIM__DT_INT64: got = p->n_int64_val, vals = p->int64_val; break;
    case SLIM__DT_UINT64: got = p->n_uint64_val, vals = p->uint64_val; break;
    case SLIM__DT_UINT32: got = p->n_uint32_val, vals = p->uint32_val; break;
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
            return slim__tf_error(err, SLIM_EUNSUPPORTED, "%s: '%s': %s values in a V1 checkpoint",
                                  file, name, slim__dt_name(dtype));
        if ((got = p->n_int_val) != (size_t)n)
            goto count;
        for (int64_t i = 0; i < n; i++) {
            int32_t v = p->int_val[i];
            memcpy((char *)dst + (size_t)i * (size_t)es, &v, (size_t)es); /* low bytes */
        }
        return SLIM_OK;
    }
    if (got != (size_t)n)
        goto count;
    memcpy(dst, vals, (size_t)n * (size_t)es);
    return SLIM_OK;
count:
    return slim__tf_error(err, SLIM_ECORRUPT, "%s: '%s': a slice of %lld values stores %zu", file,
                          name, (long long)n, got);
bad:
    return slim__tf_error(err, SLIM_ECORRUPT, "%s: '%s': tensor_content of %zu bytes for %lld %s",
                          file, name, p->tensor_content.len, (long long)n, slim__dt_name(dtype));
}

static slim_status v1_read(slim__ckpt *c, const slim__ckpt_entry *e, void *dst, void *out,
                           slim_error *err)
{
    v1_impl *im = c->impl;
    const slim__tf_slices *s = e->priv;
    int es = slim__dt_size(e->dtype);
    if (e->dtype == SLIM__DT_STRING && (s->n != 1 || e->numel != (s->n ? e->numel : 0)))
        if (s->n != 1)
            return slim__tf_error(err, SLIM_EUNSUPPORTED, "%s: '%s': a string tensor in %d slices",
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
        slim__tf_slice_box(file, e, s, i, a, l, &n, NULL);
        slim__tf_slice_key(&key, e->name, e->rank, s->start + (size_t)i * per,
                           s->len + (size_t)i * per);
        const uint8_t *val;
        size_t vlen;
        int64_t boff;
        bool found;
        if (key.failed) {
            st = slim__tf_error(err, SLIM_ENOMEM, "out of memory");
            break;
        }
        st = slim__tft_get(t, key.p, key.n, &val, &vlen, &boff, &found, err);
        if (st)
            break;
        if (!found) {
            st = slim__tf_error(err, SLIM_ECORRUPT, "%s: the data of '%s' (slice %d) is missing",
                                file, e->name, i);
            break;
        }
        Tensorflow__SavedTensorSlices *sts =
            tensorflow__saved_tensor_slices__unpack(NULL, vlen, val);
        const Tensorflow__SavedSlice *d = sts ? sts->data : NULL;
        if (!d || !d->name || strcmp(d->name, e->name) != 0 || !d->data)
            st = slim__tf_error(err, SLIM_ECORRUPT,
                                "%s: block at byte %lld: the value stored for '%s' is not its "
                                "SavedSlice",
                                file, (long long)boff, e->name);
        else if (e->dtype == SLIM__DT_STRING)
            st = proto_values(file, e->name, d->data, e->dtype, n, NULL, out, err);
        else {
            void *tmp = s->n == 1 ? dst : malloc(n ? (size_t)(n * es) : 1);
            if (!tmp)
                st = slim__tf_error(err, SLIM_ENOMEM, "out of memory");
            else
                st = proto_values(file, e->name, d->data, e->dtype, n, tmp, NULL, err);
            if (!st && tmp != dst)
                slim__tf_place(dst, tmp, e->rank, e->dim, a, l, es);
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
        slim__tf_slices_free(c->e[i].priv);
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
        return slim__tf_error(err, SLIM_ECORRUPT,
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
            return slim__tf_error(
                err, SLIM_EINVAL,
                "%s looks like a TensorFlow V2 index: give the checkpoint's prefix "
                "(the name before .index), with its .index and .data-* files "
                "beside it",
                file);
        }
        return slim__tf_error(err, SLIM_ECORRUPT,
                              "%s: the \"\" key does not hold a SavedTensorSliceMeta: not a V1 "
                              "checkpoint",
                              file);
    }
    for (size_t i = 0; i < sts->meta->n_tensor && !st; i++) {
        const Tensorflow__SavedSliceMeta *m = sts->meta->tensor[i];
        if (!m->name || !m->name[0] || strlen(m->name) > 1000) {
            st = slim__tf_error(err, SLIM_ECORRUPT, "%s: a tensor without a usable name", file);
            break;
        }
        int k = -1;
        for (int j = 0; j < c->n && k < 0; j++) /* n is small; sorted later */
            if (!strcmp(c->e[j].name, m->name))
                k = j;
        slim__ckpt_entry *e = k >= 0 ? &c->e[k] : slim__ckpt_add(c, m->name);
        if (!e) {
            st = slim__tf_error(err, SLIM_ENOMEM, "out of memory");
            break;
        }
        if (k < 0) {
            e->dtype = m->type;
            st = slim__tf_set_shape(file, m->name, m->shape, e, err);
        } else if (e->dtype != (int)m->type) {
            st = slim__tf_error(err, SLIM_ECORRUPT, "%s: '%s' has another type in another shard",
                                file, m->name);
        }
        slim__tf_slices *sl = e->priv;
        if (!st && m->n_slice == 0) {
            /* no slices listed: one slice, the whole tensor */
            Tensorflow__TensorSliceProto whole = TENSORFLOW__TENSOR_SLICE_PROTO__INIT;
            Tensorflow__TensorSliceProto *wp = &whole;
            st = slim__tf_add_slices(file, m->name, e->rank, &wp, 1, shard, &sl, err);
        } else if (!st) {
            st = slim__tf_add_slices(file, m->name, e->rank, m->slice, m->n_slice, shard, &sl, err);
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
        slim_status st = slim__tf_check_tiling(c->path, &c->e[i], c->e[i].priv, err);
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
        return slim__tf_error(err, SLIM_ENOMEM, "out of memory");
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

slim_status slim__tfckpt_open_v1_table(slim__ckpt *c, slim__tft *t, slim_error *err)
{
    slim_status st = v1_init(c, 1, err);
    if (st) {
        slim__tft_close(t);
        return st;
    }
    v1_impl *im = c->impl;
    im->t[0] = t;
    im->n = 1;
    st = v1_meta(c, 0, err);
    return st ? st : v1_finish(c, err);
}
