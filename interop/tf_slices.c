/* interop/tf_slices.c - tensor slices and their keys, shared by the V1 and
 * V2 readers and the writer (see tf_slices.h). */
#include "interop/tf_slices.h"

#include "core/error.h"

#include <stdlib.h>
#include <string.h>

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

void slim__tf_slices_free(slim__tf_slices *s)
{
    if (!s)
        return;
    free(s->shard);
    free(s->start);
    free(s->len);
    free(s);
}

slim_status slim__tf_set_shape(const char *file, const char *name,
                               const Tensorflow__TensorShapeProto *sp, slim__ckpt_entry *e,
                               slim_error *err)
{
    if (!sp) {
        e->rank = 0;
        e->numel = 1;
        return SLIM_OK;
    }
    if (sp->unknown_rank || sp->n_dim > SLIM__CKPT_MAX_RANK)
        return slim__tf_error(
            err, SLIM_EUNSUPPORTED, "%s: '%s' has %s (slim reads up to rank %d)", file, name,
            sp->unknown_rank ? "an unknown rank" : "too many dimensions", SLIM__CKPT_MAX_RANK);
    e->rank = (int)sp->n_dim;
    for (int i = 0; i < e->rank; i++)
        e->dim[i] = sp->dim[i]->size;
    e->numel = slim__ckpt_numel(e->rank, e->dim);
    if (e->numel < 0)
        return slim__tf_error(err, SLIM_ECORRUPT,
                              "%s: '%s' has a bad shape (a negative or huge "
                              "dimension)",
                              file, name);
    return SLIM_OK;
}

/* Append the slices of protos to s (allocated on first use). */
slim_status slim__tf_add_slices(const char *file, const char *name, int rank,
                                Tensorflow__TensorSliceProto **sp, size_t n, int shard,
                                slim__tf_slices **s, slim_error *err)
{
    if (!n)
        return SLIM_OK;
    if (!*s && !(*s = calloc(1, sizeof **s)))
        return slim__tf_error(err, SLIM_ENOMEM, "out of memory");
    slim__tf_slices *x = *s;
    x->rank = rank;
    if (n > (size_t)(1 << 20) || (size_t)x->n + n > (size_t)(1 << 20))
        return slim__tf_error(err, SLIM_ECORRUPT, "%s: '%s' has too many slices", file, name);
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
        return slim__tf_error(err, SLIM_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const Tensorflow__TensorSliceProto *p = sp[i];
        int k = x->n + (int)i;
        x->shard[k] = shard;
        if (p->n_extent != 0 && p->n_extent != (size_t)rank)
            return slim__tf_error(err, SLIM_ECORRUPT,
                                  "%s: '%s': a slice of %zu dimensions for a tensor of rank %d",
                                  file, name, p->n_extent, rank);
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
slim_status slim__tf_slice_box(const char *file, const slim__ckpt_entry *e,
                               const slim__tf_slices *s, int i, int64_t *st, int64_t *ln,
                               int64_t *numel, slim_error *err)
{
    size_t per = e->rank ? (size_t)e->rank : 1;
    for (int d = 0; d < e->rank; d++) {
        int64_t a = s->start[(size_t)i * per + (size_t)d], l = s->len[(size_t)i * per + (size_t)d];
        if (l == -1) {
            if (a != 0)
                return slim__tf_error(
                    err, SLIM_ECORRUPT,
                    "%s: '%s' slice %d: a whole-dimension extent starting at %lld", file, e->name,
                    i, (long long)a);
            l = e->dim[d];
        }
        if (a < 0 || l < 0 || a > e->dim[d] || l > e->dim[d] - a)
            return slim__tf_error(
                err, SLIM_ECORRUPT,
                "%s: '%s' slice %d: extent [%lld, +%lld) of dimension %d is outside "
                "its size %lld",
                file, e->name, i, (long long)a, (long long)l, d, (long long)e->dim[d]);
        st[d] = a;
        ln[d] = l;
    }
    *numel = slim__ckpt_numel(e->rank, ln);
    return SLIM_OK;
}

/* The slices must tile the tensor: inside it, not overlapping, covering it. */
slim_status slim__tf_check_tiling(const char *file, const slim__ckpt_entry *e,
                                  const slim__tf_slices *s, slim_error *err)
{
    int r = e->rank;
    int64_t a[SLIM__CKPT_MAX_RANK], al[SLIM__CKPT_MAX_RANK], b[SLIM__CKPT_MAX_RANK],
        bl[SLIM__CKPT_MAX_RANK];
    int64_t total = 0, n;
    for (int i = 0; i < s->n; i++) {
        slim_status st = slim__tf_slice_box(file, e, s, i, a, al, &n, err);
        if (st)
            return st;
        total += n;
        for (int j = 0; j < i && s->n <= 4096; j++) {
            slim__tf_slice_box(file, e, s, j, b, bl, &n, NULL);
            bool overlap = true;
            for (int d = 0; d < r && overlap; d++)
                overlap = a[d] < b[d] + bl[d] && b[d] < a[d] + al[d];
            if (overlap && r > 0)
                return slim__tf_error(err, SLIM_ECORRUPT, "%s: '%s': slices %d and %d overlap",
                                      file, e->name, j, i);
        }
    }
    if (total != e->numel)
        return slim__tf_error(err, SLIM_ECORRUPT,
                              "%s: '%s': its %d slices hold %lld of its %lld values", file, e->name,
                              s->n, (long long)total, (long long)e->numel);
    return SLIM_OK;
}

/* Copy a slice (row-major, extents st/ln) into the full tensor dst. */
void slim__tf_place(void *dst, const void *src, int rank, const int64_t *dim, const int64_t *st,
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
