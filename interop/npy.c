/*
 * interop/npy.c - NumPy .npy float32 arrays in and out (see npy.h).
 *
 * The header dict is parsed by a small reader of exactly what numpy writes:
 * string keys, and values that are strings, True/False or tuples of
 * non-negative integers. Every byte is bounds-checked; sizes are checked for
 * overflow before anything is allocated, and the data must be exactly the
 * shape's bytes.
 */
#include "interop/npy.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "interop/onnx_proto.h"

typedef struct rd {
    const char *file;
    const uint8_t *p; /* the header */
    size_t n, i;
    size_t base; /* the header's offset in the file */
    slim_error *err;
} rd;

static slim_status bad(rd *r, const char *fmt, const char *what)
{
    return slim__error(r->err, SLIM_EPARSE, "%s: offset %zu: %s %s", r->file, r->base + r->i, fmt,
                       what ? what : "");
}

static void skip_ws(rd *r)
{
    while (r->i < r->n &&
           (r->p[r->i] == ' ' || r->p[r->i] == '\t' || r->p[r->i] == '\n' || r->p[r->i] == '\r'))
        r->i++;
}

static bool eat(rd *r, char c)
{
    skip_ws(r);
    if (r->i < r->n && r->p[r->i] == c) {
        r->i++;
        return true;
    }
    return false;
}

/* A quoted string into buf. */
static slim_status str(rd *r, char *buf, size_t size, const char *what)
{
    skip_ws(r);
    if (r->i >= r->n || (r->p[r->i] != '\'' && r->p[r->i] != '"'))
        return bad(r, "expected a quoted string for", what);
    char q = (char)r->p[r->i++];
    size_t k = 0;
    while (r->i < r->n && r->p[r->i] != q) {
        if (k + 1 >= size)
            return bad(r, "a string too long in", what);
        buf[k++] = (char)r->p[r->i++];
    }
    if (r->i >= r->n)
        return bad(r, "an unterminated string in", what);
    r->i++;
    buf[k] = '\0';
    return SLIM_OK;
}

static slim_status shape(rd *r, slim__npy *a)
{
    if (!eat(r, '('))
        return bad(r, "expected a tuple of dims '(2, 3)' for", "'shape'");
    a->rank = 0;
    for (;;) {
        if (eat(r, ')'))
            return SLIM_OK;
        skip_ws(r);
        if (r->i >= r->n || r->p[r->i] < '0' || r->p[r->i] > '9')
            return bad(r, "expected a non-negative integer in", "'shape'");
        int64_t v = 0;
        while (r->i < r->n && r->p[r->i] >= '0' && r->p[r->i] <= '9') {
            if (v > (INT64_MAX - 9) / 10)
                return bad(r, "a dimension too large in", "'shape'");
            v = v * 10 + (r->p[r->i++] - '0');
        }
        if (r->i < r->n && r->p[r->i] == 'L')
            r->i++; /* Python 2's long suffix */
        if (a->rank == SLIM__NPY_MAX_DIMS)
            return bad(r, "more dimensions than slim reads (8) in", "'shape'");
        a->dim[a->rank++] = v;
        if (eat(r, ','))
            continue;
        if (eat(r, ')'))
            return SLIM_OK;
        return bad(r, "expected ',' or ')' in", "'shape'");
    }
}

slim_status slim__npy_parse(const char *file, const uint8_t *buf, size_t len, slim__npy *a,
                            slim_error *err)
{
    memset(a, 0, sizeof *a);
    rd r = {.file = file, .err = err};
    static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    if (len < 10 || memcmp(buf, magic, 6) != 0)
        return slim__error(err, SLIM_EPARSE,
                           "%s: offset 0: not a NumPy .npy file (no \\x93NUMPY magic)", file);
    int major = buf[6], minor = buf[7];
    size_t hlen, hoff;
    if (major == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        hoff = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return slim__error(err, SLIM_EPARSE, "%s: offset 8: the header length is cut off",
                               file);
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        hoff = 12;
    } else {
        return slim__error(err, SLIM_EUNSUPPORTED,
                           "%s: offset 6: format version %d.%d, slim reads 1.0, 2.0 and 3.0", file,
                           major, minor);
    }
    if (minor != 0)
        return slim__error(err, SLIM_EUNSUPPORTED,
                           "%s: offset 7: format version %d.%d, slim reads 1.0, 2.0 and 3.0", file,
                           major, minor);
    if (hlen > len - hoff)
        return slim__error(err, SLIM_EPARSE,
                           "%s: offset %zu: a header of %zu bytes, but the file has %zu after it",
                           file, hoff - (major == 1 ? 2 : 4), hlen, len - hoff);
    r.p = buf + hoff;
    r.n = hlen;
    r.base = hoff;
    bool have_descr = false, have_order = false, have_shape = false;
    if (!eat(&r, '{'))
        return bad(&r, "expected the header dict '{' ", NULL);
    for (;;) {
        if (eat(&r, '}'))
            break;
        char key[32], val[32];
        slim_status st = str(&r, key, sizeof key, "a header key");
        if (st != SLIM_OK)
            return st;
        if (!eat(&r, ':'))
            return bad(&r, "expected ':' after key", key);
        size_t at = r.i;
        if (!strcmp(key, "descr")) {
            if ((st = str(&r, val, sizeof val, "'descr'")) != SLIM_OK)
                return st;
            if (strcmp(val, "<f4") != 0) {
                r.i = at;
                skip_ws(&r);
                return slim__error(err, SLIM_EUNSUPPORTED,
                                   "%s: offset %zu: 'descr' is '%s'; slim reads little-endian "
                                   "float32 ('<f4': numpy.float32, astype(np.float32))",
                                   file, r.base + r.i, val);
            }
            have_descr = true;
        } else if (!strcmp(key, "fortran_order")) {
            skip_ws(&r);
            if (r.n - r.i >= 5 && !memcmp(r.p + r.i, "False", 5)) {
                r.i += 5;
            } else if (r.n - r.i >= 4 && !memcmp(r.p + r.i, "True", 4)) {
                return slim__error(err, SLIM_EUNSUPPORTED,
                                   "%s: offset %zu: 'fortran_order' is True; slim reads C order "
                                   "(np.ascontiguousarray)",
                                   file, r.base + r.i);
            } else {
                return bad(&r, "expected True or False for", "'fortran_order'");
            }
            have_order = true;
        } else if (!strcmp(key, "shape")) {
            if ((st = shape(&r, a)) != SLIM_OK)
                return st;
            have_shape = true;
        } else {
            r.i = at;
            return bad(&r, "unexpected header key", key);
        }
        if (eat(&r, ','))
            continue;
        if (eat(&r, '}'))
            break;
        return bad(&r, "expected ',' or '}' in the header dict", NULL);
    }
    if (!have_descr || !have_order || !have_shape)
        return slim__error(err, SLIM_EPARSE, "%s: offset %zu: the header lacks %s", file, hoff,
                           !have_descr   ? "'descr'"
                           : !have_order ? "'fortran_order'"
                                         : "'shape'");
    int64_t numel = slim__ox_numel(a->rank, a->dim);
    if (numel < 0)
        return slim__error(err, SLIM_EUNSUPPORTED,
                           "%s: offset %zu: a shape of more than %lld elements", file, hoff,
                           (long long)SLIM__OX_MAX_ELEMS);
    size_t data_off = hoff + hlen, have = len - data_off, need = (size_t)numel * 4;
    if (have != need)
        return slim__error(err, SLIM_EPARSE,
                           "%s: offset %zu: %zu bytes of data for a shape of %lld float32 (%zu "
                           "bytes)",
                           file, data_off, have, (long long)numel, need);
    a->numel = numel;
    a->data = malloc(need ? need : 4);
    if (!a->data)
        return slim__error(err, SLIM_ENOMEM, "%s: out of memory for %lld floats", file,
                           (long long)numel);
    const uint8_t *d = buf + data_off;
    for (int64_t k = 0; k < numel; k++) {
        uint32_t u = (uint32_t)d[4 * k] | (uint32_t)d[4 * k + 1] << 8 |
                     (uint32_t)d[4 * k + 2] << 16 | (uint32_t)d[4 * k + 3] << 24;
        memcpy(&a->data[k], &u, 4);
    }
    return SLIM_OK;
}

slim_status slim__npy_read(const char *path, slim__npy *a, slim_error *err)
{
    memset(a, 0, sizeof *a);
    size_t len;
    uint8_t *buf = slim__ox_read_file(path, (size_t)SLIM__OX_MAX_ELEMS * 4 + 65536, &len, err);
    if (!buf)
        return err ? err->code : SLIM_EIO;
    slim_status st = slim__npy_parse(path, buf, len, a, err);
    free(buf);
    if (st != SLIM_OK)
        slim__npy_free(a);
    return st;
}

void slim__npy_free(slim__npy *a)
{
    free(a->data);
    a->data = NULL;
}

slim_status slim__npy_write(const char *path, const float *data, int rank, const int64_t *dim,
                            slim_error *err)
{
    if (rank < 0 || rank > SLIM__NPY_MAX_DIMS)
        return slim__error(err, SLIM_EINVAL, "%s: rank %d", path, rank);
    char h[512];
    size_t k = (size_t)snprintf(h, sizeof h, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    for (int i = 0; i < rank; i++)
        k += (size_t)snprintf(h + k, sizeof h - k, "%s%lld", i ? ", " : "", (long long)dim[i]);
    k += (size_t)snprintf(h + k, sizeof h - k, "%s), }", rank == 1 ? "," : "");
    /* pad with spaces so that the data starts at a multiple of 64, newline last */
    size_t total = 10 + k + 1, pad = (64 - total % 64) % 64;
    if (k + pad + 1 >= sizeof h)
        return slim__error(err, SLIM_EINVAL, "%s: header too long", path);
    memset(h + k, ' ', pad);
    k += pad;
    h[k++] = '\n';
    int64_t numel = slim__ox_numel(rank, dim);
    FILE *f = fopen(path, "wb");
    if (!f)
        return slim__error(err, SLIM_EIO, "cannot create %s: %s", path, strerror(errno));
    uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)(k & 0xff), (uint8_t)(k >> 8)};
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(h, 1, k, f) == k;
    for (int64_t i = 0; ok && i < numel; i++) {
        uint32_t u;
        memcpy(&u, &data[i], 4);
        uint8_t le[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
        ok = fwrite(le, 1, 4, f) == 4;
    }
    if (fclose(f) != 0)
        ok = false;
    if (!ok)
        return slim__error(err, SLIM_EIO, "cannot write %s: %s", path, strerror(errno));
    return SLIM_OK;
}
