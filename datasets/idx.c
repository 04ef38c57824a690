/* datasets/idx.c - the IDX format (LeCun et al., the MNIST database page):
 * magic = 0x00 0x00 <type> <rank>, rank big-endian u32 sizes, then the data.
 * Type 0x08 is unsigned bytes. zlib's gzread reads gzip and plain files alike. */
#include "datasets/idx.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static slim_status read_exact(gzFile f, void *buf, size_t n, const char *path, size_t offset,
                              const char *what, slim_error *err)
{
    size_t got = 0;
    while (got < n) {
        unsigned chunk = n - got > (1u << 30) ? (1u << 30) : (unsigned)(n - got);
        int r = gzread(f, (char *)buf + got, chunk);
        if (r < 0) {
            int zerr;
            const char *m = gzerror(f, &zerr);
            return slim__error(err, SLIM_ECORRUPT, "%s: byte %zu: cannot read %s: %s", path,
                               offset + got, what, m ? m : "zlib error");
        }
        if (r == 0)
            return slim__error(err, SLIM_ECORRUPT,
                               "%s: byte %zu: file ends inside the %s (%zu of %zu bytes read)",
                               path, offset + got, what, got, n);
        got += (size_t)r;
    }
    return SLIM_OK;
}

slim_status slim_idx_read(const char *path, slim_idx *out, slim_error *err)
{
    memset(out, 0, sizeof *out);
    gzFile f = gzopen(path, "rb");
    if (!f)
        return slim__error(err, SLIM_EIO, "%s: cannot open: %m", path);
    uint8_t magic[4];
    slim_status st = read_exact(f, magic, 4, path, 0, "header", err);
    if (st == SLIM_OK && (magic[0] || magic[1]))
        st = slim__error(err, SLIM_ECORRUPT,
                         "%s: byte 0: not an IDX file (magic %02x %02x %02x %02x)", path, magic[0],
                         magic[1], magic[2], magic[3]);
    if (st == SLIM_OK && magic[2] != 0x08)
        st = slim__error(
            err, SLIM_EUNSUPPORTED,
            "%s: byte 2: element type 0x%02x is not supported (only 0x08, unsigned bytes)", path,
            magic[2]);
    if (st == SLIM_OK && (magic[3] < 1 || magic[3] > SLIM_MAX_DIMS))
        st = slim__error(err, SLIM_ECORRUPT, "%s: byte 3: rank %u is out of range 1..%d", path,
                         magic[3], SLIM_MAX_DIMS);
    size_t total = 1;
    for (int i = 0; st == SLIM_OK && i < magic[3]; i++) {
        uint8_t b[4];
        st = read_exact(f, b, 4, path, 4 + 4 * (size_t)i, "header", err);
        if (st != SLIM_OK)
            break;
        uint32_t d = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
        if (d == 0 || total > ((size_t)1 << 40) / d) {
            st = slim__error(err, SLIM_ECORRUPT, "%s: byte %zu: dimension %d is %u", path,
                             4 + 4 * (size_t)i, i, d);
            break;
        }
        out->shape.dim[i] = d;
        total *= d;
    }
    if (st == SLIM_OK) {
        out->shape.rank = magic[3];
        out->dtype = SLIM_U8;
    }
    /* The sizes are only a claim until the data is there: the buffer grows
     * with what is read (a 20-byte file may claim a terabyte), from 64 KB,
     * doubling, then by 64 MB at a time. */
    size_t have = 0, cap = 0, off = 4 + 4 * (size_t)magic[3];
    while (st == SLIM_OK && have < total) {
        if (have == cap) {
            size_t c = cap ? cap + (cap < ((size_t)64 << 20) ? cap : ((size_t)64 << 20))
                           : ((size_t)64 << 10);
            if (c > total)
                c = total;
            uint8_t *b = realloc(out->data, c);
            if (!b) {
                st = slim__error(err, SLIM_ENOMEM, "%s: cannot allocate %zu bytes", path, c);
                break;
            }
            out->data = b;
            cap = c;
        }
        size_t n = cap - have;
        st = read_exact(f, out->data + have, n, path, off + have, "data", err);
        have += n;
    }
    gzclose(f);
    if (st != SLIM_OK)
        slim_idx_fini(out);
    return st;
}

void slim_idx_fini(slim_idx *idx)
{
    if (!idx)
        return;
    free(idx->data);
    idx->data = NULL;
}
