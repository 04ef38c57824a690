/* runtime/ckpt_slim.c - the back end of the checkpoint reader
 * (ckpt_reader.h) for slim's own format (runtime/checkpoint.proto): a
 * TFRecord file of a header record and one record per tensor, each read with
 * its CRC-32C checked. */
#include "runtime/ckpt_reader.h"

#include "core/error.h"
#include "interop/tf_table.h"

#include <slim/data.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct slim_impl {
    int fd;
} slim_impl;

static slim_status slim_read(slim__ckpt *c, const slim__ckpt_entry *e, void *dst, void *out,
                             slim_error *err)
{
    slim_impl *im = c->impl;
    size_t n = (size_t)e->len;
    uint8_t *buf = malloc(n + 4);
    if (!buf)
        return slim__tf_error(err, SLIM_ENOMEM, "out of memory reading '%s'", e->name);
    /* the record's payload and its CRC (the header was checked on opening) */
    ssize_t got = pread(im->fd, buf, n + 4, (off_t)(e->off + 12));
    slim_status st = SLIM_OK;
    if (got != (ssize_t)(n + 4)) {
        st = slim__tf_error(err, SLIM_EIO, "%s: cannot read tensor '%s' at byte %lld: %s", c->path,
                            e->name, (long long)e->off, got < 0 ? strerror(errno) : "short read");
    } else {
        uint32_t want, have = slim_crc32c_mask(slim_crc32c(0, buf, n));
        memcpy(&want, buf + n, 4);
        Slimckpt__CheckpointTensor *t = NULL;
        if (want != have)
            st = slim__tf_error(err, SLIM_ECORRUPT,
                                "%s: record of '%s' at byte %lld: data CRC-32C mismatch (stored "
                                "0x%08x, computed 0x%08x): the file changed since it was opened",
                                c->path, e->name, (long long)e->off, want, have);
        else if (!(t = slimckpt__checkpoint_tensor__unpack(NULL, n, buf)) ||
                 t->data.len != (size_t)e->numel * 4)
            st = slim__tf_error(err, SLIM_ECORRUPT, "%s: bad tensor record '%s' at byte %lld",
                                c->path, e->name, (long long)e->off);
        else if (t->data.len)
            memcpy(dst, t->data.data, t->data.len);
        if (t)
            slimckpt__checkpoint_tensor__free_unpacked(t, NULL);
    }
    free(buf);
    (void)out;
    return st;
}

static void slim_close(slim__ckpt *c)
{
    slim_impl *im = c->impl;
    if (im && im->fd >= 0)
        close(im->fd);
    free(im);
}

static int64_t slim_bound(slim__ckpt *c, const slim__ckpt_entry *e)
{
    (void)c;
    return e->len; /* the record holds the f32 data */
}

static const slim__ckpt_ops slim_ops = {slim_read, slim_close, slim_bound};

slim_status slim__ckpt_open_slim(slim__ckpt *c, slim_error *err)
{
    slim_impl *im = calloc(1, sizeof *im);
    if (!im)
        return slim__tf_error(err, SLIM_ENOMEM, "out of memory");
    im->fd = -1;
    c->impl = im;
    c->ops = &slim_ops;
    c->format = SLIM__CKPT_SLIM;
    snprintf(c->desc, sizeof c->desc, "slim");
    slim_tfrecord_reader *r = NULL;
    slim_status st = slim_tfrecord_open(c->path, SLIM_COMPRESSION_NONE, true, &r, err);
    const uint8_t *data;
    size_t len;
    int64_t off;
    if (!st)
        st = slim_tfrecord_next(r, &data, &len, &off, err);
    if (!st && !data)
        st = slim__tf_error(err, SLIM_ECORRUPT, "%s: empty file, not a checkpoint", c->path);
    if (!st) {
        c->header = slimckpt__checkpoint_header__unpack(NULL, len, data);
        if (!c->header || !c->header->format || strcmp(c->header->format, "slim-checkpoint") != 0)
            st = slim__tf_error(err, SLIM_ECORRUPT, "%s: not a slim checkpoint (bad header record)",
                                c->path);
        else if (c->header->version != 1)
            st = slim__tf_error(err, SLIM_EUNSUPPORTED,
                                "%s: checkpoint format version %u (this slim reads version 1)",
                                c->path, c->header->version);
    }
    const char *opt = c->header ? c->header->optimizer : NULL;
    uint32_t crc = 0;
    for (int i = 0; !st; i++) {
        st = slim_tfrecord_next(r, &data, &len, &off, err);
        if (st)
            break;
        if (!data) {
            st = slim__tf_error(err, SLIM_ECORRUPT,
                                "%s: truncated checkpoint: it ends after %d of %d tensors, without "
                                "its footer",
                                c->path, i, c->header->has_n_tensors ? c->header->n_tensors : -1);
            break;
        }
        if (i == c->header->n_tensors) {
            Slimckpt__CheckpointFooter *f = slimckpt__checkpoint_footer__unpack(NULL, len, data);
            if (!f)
                st = slim__tf_error(err, SLIM_ECORRUPT, "%s: bad footer record at byte %lld",
                                    c->path, (long long)off);
            else if (f->n_tensors != c->header->n_tensors || f->data_crc32c != crc)
                st = slim__tf_error(
                    err, SLIM_ECORRUPT,
                    "%s: the footer does not match the tensors (corrupt checkpoint)", c->path);
            if (f)
                slimckpt__checkpoint_footer__free_unpacked(f, NULL);
            break;
        }
        Slimckpt__CheckpointTensor *t = slimckpt__checkpoint_tensor__unpack(NULL, len, data);
        if (!t) {
            st = slim__tf_error(err, SLIM_ECORRUPT, "%s: bad tensor record %d at byte %lld",
                                c->path, i, (long long)off);
            break;
        }
        int64_t dims[SLIM__CKPT_MAX_RANK];
        int rank = (int)t->n_shape;
        /* the element count, checked before it can overflow */
        const char *why = rank > SLIM_MAX_DIMS ? " (too many dimensions)" : "";
        for (int k = 0; k < rank && !*why; k++) {
            dims[k] = t->shape[k];
            if (dims[k] < 0)
                why = " (a negative dimension)";
            else if (slim__ckpt_numel(k + 1, dims) < 0)
                why = " (its element count overflows)";
        }
        int64_t numel = *why ? -1 : slim__ckpt_numel(rank, dims);
        if (*why || !t->has_data || t->data.len % sizeof(float) ||
            t->data.len / sizeof(float) != (uint64_t)numel) {
            char nm[256], shp[160] = "";
            for (size_t k = 0, o = 0; k < t->n_shape; k++) {
                if (o > sizeof shp - 26) {
                    snprintf(shp + o, sizeof shp - o, ",...");
                    break;
                }
                o += (size_t)snprintf(shp + o, sizeof shp - o, "%s%lld", k ? "," : "",
                                      (long long)t->shape[k]);
            }
            st = slim__tf_error(
                err, SLIM_ECORRUPT,
                "%s: tensor '%s' at byte %lld: %zu data bytes do not match its shape "
                "[%s]%s",
                c->path, slim__printable(t->name, nm, sizeof nm), (long long)off, t->data.len, shp,
                why);
            slimckpt__checkpoint_tensor__free_unpacked(t, NULL);
            break;
        }
        crc = slim_crc32c(crc, t->data.data, t->data.len);
        char name[1200], suffix[64];
        const char *slot = NULL;
        if (t->kind == SLIMCKPT__TENSOR_KIND__EMA) {
            snprintf(name, sizeof name, "%s" SLIM__CKPT_EMA_SUFFIX, t->name);
        } else if (t->kind == SLIMCKPT__TENSOR_KIND__SLOT) {
            int k = t->has_slot_index ? t->slot_index : 0;
            if (slim__tf_optimizer_name(opt))
                slim__tf_slot_suffix(opt, k, suffix, sizeof suffix);
            else
                snprintf(suffix, sizeof suffix, "%s", t->slot ? t->slot : "slot");
            slot = suffix;
            snprintf(name, sizeof name, "%s/%s", t->name, suffix);
        } else {
            snprintf(name, sizeof name, "%s", t->name);
        }
        slim__ckpt_entry *e = slim__ckpt_add(c, name);
        if (!e) {
            slimckpt__checkpoint_tensor__free_unpacked(t, NULL);
            st = slim__tf_error(err, SLIM_ENOMEM, "out of memory");
            break;
        }
        e->dtype = SLIM__DT_FLOAT;
        e->rank = rank;
        memcpy(e->dim, dims, sizeof(int64_t) * (size_t)rank);
        e->numel = numel;
        e->stored = (int64_t)t->data.len;
        e->off = off;
        e->len = (int64_t)len;
        e->kind = t->kind == SLIMCKPT__TENSOR_KIND__EMA    ? SLIM__CK_EMA
                  : t->kind == SLIMCKPT__TENSOR_KIND__SLOT ? SLIM__CK_SLOT
                                                           : SLIM__CK_VALUE;
        if (e->kind != SLIM__CK_VALUE && !(e->var = strdup(t->name)))
            st = slim__tf_error(err, SLIM_ENOMEM, "out of memory");
        if (slot) {
            e->slot = strdup(slot);
            e->slot_index = t->has_slot_index ? t->slot_index : -1;
        }
        slimckpt__checkpoint_tensor__free_unpacked(t, NULL);
    }
    slim_tfrecord_close(r);
    if (!st) {
        im->fd = open(c->path, O_RDONLY | O_CLOEXEC);
        if (im->fd < 0)
            st = slim__tf_error(err, SLIM_EIO, "cannot open %s: %s", c->path, strerror(errno));
    }
    if (!st)
        st = slim__ckpt_finish(c, false, err);
    c->global_step = c->header ? c->header->global_step : -1;
    return st;
}
