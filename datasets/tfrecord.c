/* datasets/tfrecord.c - TFRecord files, read and written.
 *
 * Format (TensorFlow, tensorflow/core/lib/io/record_writer.cc, documented in
 * the tf.data guide "TFRecord"): each record is
 *     uint64 length (little-endian)
 *     uint32 masked_crc32c(length)
 *     byte   data[length]
 *     uint32 masked_crc32c(data)
 * GZIP and ZLIB files are one compressed stream over those bytes. */
#include "datasets/tfrecord.h"
#include "datasets/crc32c.h"
#include "core/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define IN_BUF (256 * 1024)
/* A record longer than this is taken as corruption (TensorFlow caps Example
 * parsing at 2 GB as well): it protects the allocator from a garbage length. */
#define MAX_RECORD ((uint64_t)1 << 31)

struct slim_tfrecord_reader {
    char *path;
    int fd;
    slim_compression comp;
    bool check_data_crc;
    int64_t file_size;
    /* raw input buffer (file bytes) */
    uint8_t *in;
    size_t in_pos, in_len;
    int64_t raw_pos; /* file offset of in[in_len] */
    bool raw_eof;
    z_stream z;
    bool z_init, z_end;
    /* uncompressed stream position (offset of the next byte to hand out) */
    int64_t pos;
    int64_t record; /* records returned so far */
    uint8_t *rec;
    size_t rec_cap;
};

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

slim_status slim__data_error(slim_error *err, slim_status code, const char *path, const char *fmt,
                             ...)
{
    va_list ap;
    va_start(ap, fmt);
    slim__verror(err, code, fmt, ap);
    va_end(ap);
    if (err && path) {
        snprintf(err->file, sizeof err->file, "%s", path);
        err->line = err->col = 0;
    }
    return code;
}

static slim_status fill_raw(slim_tfrecord_reader *r, slim_error *err)
{
    if (r->in_pos < r->in_len || r->raw_eof)
        return SLIM_OK;
    ssize_t n;
    do
        n = read(r->fd, r->in, IN_BUF);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return slim__data_error(err, SLIM_EIO, r->path, "%s: byte %lld: read failed: %s", r->path,
                                (long long)r->raw_pos, strerror(errno));
    r->in_pos = 0;
    r->in_len = (size_t)n;
    r->raw_pos += n;
    if (n == 0)
        r->raw_eof = true;
    return SLIM_OK;
}

/* Up to n bytes of the (uncompressed) stream into dst; *got < n only at the end. */
static slim_status stream_read(slim_tfrecord_reader *r, uint8_t *dst, size_t n, size_t *got,
                               slim_error *err)
{
    *got = 0;
    if (r->comp == SLIM_COMPRESSION_NONE) {
        while (*got < n) {
            if (r->in_pos < r->in_len) {
                size_t k = r->in_len - r->in_pos;
                if (k > n - *got)
                    k = n - *got;
                memcpy(dst + *got, r->in + r->in_pos, k);
                r->in_pos += k;
                *got += k;
                continue;
            }
            if (n - *got >= IN_BUF) { /* big payloads: straight into dst */
                ssize_t k;
                do
                    k = read(r->fd, dst + *got, n - *got);
                while (k < 0 && errno == EINTR);
                if (k < 0)
                    return slim__data_error(err, SLIM_EIO, r->path,
                                            "%s: byte %lld: read failed: %s", r->path,
                                            (long long)r->raw_pos, strerror(errno));
                if (k == 0)
                    break;
                r->raw_pos += k;
                *got += (size_t)k;
                continue;
            }
            slim_status st = fill_raw(r, err);
            if (st)
                return st;
            if (r->raw_eof)
                break;
        }
        r->pos += (int64_t)*got;
        return SLIM_OK;
    }
    /* GZIP / ZLIB: inflate. */
    r->z.next_out = dst;
    r->z.avail_out = (uInt)n;
    while (r->z.avail_out > 0 && !r->z_end) {
        if (r->in_pos >= r->in_len) {
            slim_status st = fill_raw(r, err);
            if (st)
                return st;
        }
        r->z.next_in = r->in + r->in_pos;
        r->z.avail_in = (uInt)(r->in_len - r->in_pos);
        int zr = inflate(&r->z, Z_NO_FLUSH);
        r->in_pos = r->in_len - r->z.avail_in;
        if (zr == Z_STREAM_END) {
            /* Concatenated gzip members are valid gzip: continue with the next one. */
            if (r->comp == SLIM_COMPRESSION_GZIP && (r->in_pos < r->in_len || !r->raw_eof)) {
                slim_status st = fill_raw(r, err);
                if (st)
                    return st;
                if (r->in_pos < r->in_len) {
                    inflateReset(&r->z);
                    continue;
                }
            }
            r->z_end = true;
            break;
        }
        if (zr == Z_BUF_ERROR && r->raw_eof && r->in_pos >= r->in_len)
            return slim__data_error(err, SLIM_ECORRUPT, r->path,
                                    "%s: byte %lld (uncompressed): the %s stream is truncated",
                                    r->path, (long long)(r->pos + (int64_t)(n - r->z.avail_out)),
                                    r->comp == SLIM_COMPRESSION_GZIP ? "gzip" : "zlib");
        if (zr != Z_OK && zr != Z_BUF_ERROR)
            return slim__data_error(err, SLIM_ECORRUPT, r->path,
                                    "%s: byte %lld of the file: %s data is corrupt: %s", r->path,
                                    (long long)(r->raw_pos - (int64_t)(r->in_len - r->in_pos)),
                                    r->comp == SLIM_COMPRESSION_GZIP ? "gzip" : "zlib",
                                    r->z.msg ? r->z.msg : "inflate failed");
    }
    *got = n - r->z.avail_out;
    r->pos += (int64_t)*got;
    return SLIM_OK;
}

static slim_compression sniff(const uint8_t *b, size_t n)
{
    if (n >= 12 && slim_crc32c_mask(slim_crc32c(0, b, 8)) == le32(b + 8))
        return SLIM_COMPRESSION_NONE;
    if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b)
        return SLIM_COMPRESSION_GZIP;
    if (n >= 2 && (b[0] & 0x0f) == 8 && (b[0] >> 4) <= 7 && ((b[0] << 8) | b[1]) % 31 == 0)
        return SLIM_COMPRESSION_ZLIB;
    return SLIM_COMPRESSION_AUTO; /* unknown */
}

slim_status slim_tfrecord_open(const char *path, slim_compression comp, bool check_data_crc,
                               slim_tfrecord_reader **out, slim_error *err)
{
    *out = NULL;
    slim_tfrecord_reader *r = calloc(1, sizeof *r);
    if (!r)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    r->fd = -1;
    r->path = strdup(path);
    r->in = malloc(IN_BUF);
    if (!r->path || !r->in) {
        slim_tfrecord_close(r);
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    r->check_data_crc = check_data_crc;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        slim_status st = slim__data_error(err, errno == ENOENT ? SLIM_ENOTFOUND : SLIM_EIO, path,
                                          "%s: cannot open: %s", path, strerror(errno));
        slim_tfrecord_close(r);
        return st;
    }
    struct stat sb;
    if (fstat(r->fd, &sb) == 0)
        r->file_size = sb.st_size;
    slim_status st = fill_raw(r, err);
    if (st) {
        slim_tfrecord_close(r);
        return st;
    }
    if (comp == SLIM_COMPRESSION_AUTO) {
        if (r->in_len == 0)
            comp = SLIM_COMPRESSION_NONE; /* an empty file holds zero records */
        else
            comp = sniff(r->in, r->in_len);
        if (comp == SLIM_COMPRESSION_AUTO) {
            st = slim__data_error(err, SLIM_ECORRUPT, path,
                                  "%s: byte 0: not a TFRecord file (the first record's length "
                                  "CRC does not match, and there is no gzip or zlib header)",
                                  path);
            slim_tfrecord_close(r);
            return st;
        }
    }
    r->comp = comp;
    if (comp != SLIM_COMPRESSION_NONE) {
        /* windowBits 15 + 16: gzip only; 15: zlib only. */
        if (inflateInit2(&r->z, comp == SLIM_COMPRESSION_GZIP ? 15 + 16 : 15) != Z_OK) {
            slim_tfrecord_close(r);
            return slim__error(err, SLIM_ENOMEM, "%s: cannot start zlib", path);
        }
        r->z_init = true;
    }
    *out = r;
    return SLIM_OK;
}

slim_compression slim_tfrecord_compression(const slim_tfrecord_reader *r)
{
    return r->comp;
}

int64_t slim__tfrecord_file_size(const slim_tfrecord_reader *r)
{
    return r->file_size;
}

/* Read and check a record header at the current position. *eof at a clean end. */
static slim_status read_header(slim_tfrecord_reader *r, uint64_t *len, int64_t *offset, bool *eof,
                               slim_error *err)
{
    uint8_t h[12];
    size_t got;
    *offset = r->pos;
    *eof = false;
    slim_status st = stream_read(r, h, 12, &got, err);
    if (st)
        return st;
    if (got == 0) {
        *eof = true;
        return SLIM_OK;
    }
    if (got < 12)
        return slim__data_error(err, SLIM_ECORRUPT, r->path,
                                "%s: record %lld at byte %lld: truncated header (the file ends "
                                "after %zu of its 12 bytes)",
                                r->path, (long long)r->record, (long long)*offset, got);
    uint32_t want = le32(h + 8), have = slim_crc32c_mask(slim_crc32c(0, h, 8));
    if (want != have)
        return slim__data_error(err, SLIM_ECORRUPT, r->path,
                                "%s: record %lld at byte %lld: length CRC mismatch (stored "
                                "0x%08x, computed 0x%08x)",
                                r->path, (long long)r->record, (long long)*offset, want, have);
    *len = le64(h);
    uint64_t need = 12 + *len + 4;
    if (*len > MAX_RECORD ||
        (r->comp == SLIM_COMPRESSION_NONE && (uint64_t)*offset + need > (uint64_t)r->file_size))
        return slim__data_error(err, SLIM_ECORRUPT, r->path,
                                "%s: record %lld at byte %lld: truncated (the record needs %llu "
                                "bytes, the file ends %lld bytes after its start)",
                                r->path, (long long)r->record, (long long)*offset,
                                (unsigned long long)need, (long long)(r->file_size - *offset));
    return SLIM_OK;
}

slim_status slim__tfrecord_check_data(const char *path, int64_t record, int64_t offset,
                                      const uint8_t *data, size_t len, const uint8_t crc[4],
                                      slim_error *err)
{
    uint32_t want = le32(crc), have = slim_crc32c_mask(slim_crc32c(0, data, len));
    if (want != have)
        return slim__data_error(err, SLIM_ECORRUPT, path,
                                "%s: record %lld at byte %lld: data CRC mismatch (stored 0x%08x, "
                                "computed 0x%08x)",
                                path, (long long)record, (long long)offset, want, have);
    return SLIM_OK;
}

slim_status slim_tfrecord_next(slim_tfrecord_reader *r, const uint8_t **data, size_t *len,
                               int64_t *offset, slim_error *err)
{
    *data = NULL;
    *len = 0;
    uint64_t n;
    int64_t off;
    bool eof;
    slim_status st = read_header(r, &n, &off, &eof, err);
    if (offset)
        *offset = off;
    if (st || eof)
        return st;
    /* An uncompressed record was checked against the file size; a compressed
     * stream's length is only a claim, so its buffer grows with the data that
     * actually arrives (a few bytes of gzip must not cost gigabytes). */
    size_t want = (size_t)n + 4, got = 0;
    while (got < want) {
        if (want + 1 > r->rec_cap) {
            size_t cap = want + 1 + (want + 1) / 2;
            if (r->comp != SLIM_COMPRESSION_NONE && cap > 2 * r->rec_cap + (1 << 20))
                cap = 2 * r->rec_cap + (1 << 20);
            uint8_t *p = realloc(r->rec, cap);
            if (!p)
                return slim__data_error(err, SLIM_ENOMEM, r->path,
                                        "%s: record %lld at byte %lld: cannot allocate %llu bytes",
                                        r->path, (long long)r->record, (long long)off,
                                        (unsigned long long)n);
            r->rec = p;
            r->rec_cap = cap;
        }
        size_t ask = (want < r->rec_cap ? want : r->rec_cap) - got, k;
        st = stream_read(r, r->rec + got, ask, &k, err);
        if (st)
            return st;
        got += k;
        if (k < ask)
            break; /* the end of the stream */
    }
    if (got < n + 4)
        return slim__data_error(err, SLIM_ECORRUPT, r->path,
                                "%s: record %lld at byte %lld: truncated (the record needs %llu "
                                "bytes, the file ends %lld bytes after its start)",
                                r->path, (long long)r->record, (long long)off,
                                (unsigned long long)(n + 16), (long long)(12 + got));
    if (r->check_data_crc) {
        st = slim__tfrecord_check_data(r->path, r->record, off, r->rec, (size_t)n, r->rec + n, err);
        if (st)
            return st;
    }
    r->record++;
    *data = r->rec;
    *len = (size_t)n;
    return SLIM_OK;
}

slim_status slim__tfrecord_next_location(slim_tfrecord_reader *r, int64_t *offset, uint64_t *len,
                                         bool *eof, slim_error *err)
{
    if (r->comp != SLIM_COMPRESSION_NONE)
        return slim__error(err, SLIM_EINTERNAL, "next_location on a compressed file");
    slim_status st = read_header(r, len, offset, eof, err);
    if (st || *eof)
        return st;
    /* Skip the payload and its CRC: drop what is buffered, seek past the rest. */
    uint64_t skip = *len + 4;
    size_t buffered = r->in_len - r->in_pos;
    if (skip <= buffered) {
        r->in_pos += (size_t)skip;
    } else {
        off_t to = (off_t)(*offset + 12 + (int64_t)skip);
        if (lseek(r->fd, to, SEEK_SET) < 0)
            return slim__data_error(err, SLIM_EIO, r->path, "%s: byte %lld: seek failed: %s",
                                    r->path, (long long)to, strerror(errno));
        r->in_pos = r->in_len = 0;
        r->raw_pos = to;
        r->raw_eof = false;
    }
    r->pos = *offset + 12 + (int64_t)skip;
    r->record++;
    return SLIM_OK;
}

int64_t slim__tfrecord_record_index(const slim_tfrecord_reader *r)
{
    return r->record;
}

void slim_tfrecord_close(slim_tfrecord_reader *r)
{
    if (!r)
        return;
    if (r->z_init)
        inflateEnd(&r->z);
    if (r->fd >= 0)
        close(r->fd);
    free(r->in);
    free(r->rec);
    free(r->path);
    free(r);
}

/* ---- writer ------------------------------------------------------------ */

struct slim_tfrecord_writer {
    char *path;
    FILE *f;
    slim_compression comp;
    z_stream z;
    bool z_init, z_finished;
    uint8_t *zbuf;
};

#define ZBUF (256 * 1024)

slim_status slim_tfrecord_writer_new(const char *path, slim_compression comp,
                                     slim_tfrecord_writer **out, slim_error *err)
{
    *out = NULL;
    if (comp == SLIM_COMPRESSION_AUTO)
        comp = SLIM_COMPRESSION_NONE;
    slim_tfrecord_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    w->comp = comp;
    w->f = fopen(path, "wbe");
    if (!w->f) {
        slim_status st =
            slim__data_error(err, SLIM_EIO, path, "%s: cannot create: %s", path, strerror(errno));
        slim_tfrecord_writer_free(w);
        return st;
    }
    if (comp != SLIM_COMPRESSION_NONE) {
        w->zbuf = malloc(ZBUF);
        /* windowBits 15 + 16 writes a gzip header and trailer; 15 a zlib one. */
        if (!w->zbuf || deflateInit2(&w->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
                                     comp == SLIM_COMPRESSION_GZIP ? 15 + 16 : 15, 8,
                                     Z_DEFAULT_STRATEGY) != Z_OK) {
            slim_tfrecord_writer_free(w);
            return slim__error(err, SLIM_ENOMEM, "%s: cannot start zlib", path);
        }
        w->z_init = true;
    }
    *out = w;
    return SLIM_OK;
}

static slim_status zwrite(slim_tfrecord_writer *w, const void *data, size_t n, int flush,
                          slim_error *err)
{
    w->z.next_in = (Bytef *)data;
    w->z.avail_in = (uInt)n;
    do {
        w->z.next_out = w->zbuf;
        w->z.avail_out = ZBUF;
        int zr = deflate(&w->z, flush);
        if (zr == Z_STREAM_ERROR)
            return slim__error(err, SLIM_EINTERNAL, "%s: deflate failed", w->path);
        size_t have = ZBUF - w->z.avail_out;
        if (have && fwrite(w->zbuf, 1, have, w->f) != have)
            return slim__data_error(err, SLIM_EIO, w->path, "%s: write failed: %s", w->path,
                                    strerror(errno));
        if (flush == Z_FINISH && zr == Z_STREAM_END)
            break;
    } while (w->z.avail_out == 0 || (flush == Z_FINISH) || w->z.avail_in > 0);
    return SLIM_OK;
}

static slim_status raw_write(slim_tfrecord_writer *w, const void *data, size_t n, slim_error *err)
{
    if (w->comp != SLIM_COMPRESSION_NONE)
        return zwrite(w, data, n, Z_NO_FLUSH, err);
    if (n && fwrite(data, 1, n, w->f) != n)
        return slim__data_error(err, SLIM_EIO, w->path, "%s: write failed: %s", w->path,
                                strerror(errno));
    return SLIM_OK;
}

slim_status slim_tfrecord_write(slim_tfrecord_writer *w, const void *data, size_t len,
                                slim_error *err)
{
    uint8_t h[12], t[4];
    for (int i = 0; i < 8; i++)
        h[i] = (uint8_t)((uint64_t)len >> (8 * i));
    put32(h + 8, slim_crc32c_mask(slim_crc32c(0, h, 8)));
    put32(t, slim_crc32c_mask(slim_crc32c(0, data, len)));
    slim_status st = raw_write(w, h, 12, err);
    if (!st)
        st = raw_write(w, data, len, err);
    if (!st)
        st = raw_write(w, t, 4, err);
    return st;
}

slim_status slim_tfrecord_flush(slim_tfrecord_writer *w, bool sync, slim_error *err)
{
    if (w->comp != SLIM_COMPRESSION_NONE && !w->z_finished) {
        slim_status st = zwrite(w, NULL, 0, Z_SYNC_FLUSH, err);
        if (st)
            return st;
    }
    if (fflush(w->f) != 0)
        return slim__data_error(err, SLIM_EIO, w->path, "%s: write failed: %s", w->path,
                                strerror(errno));
    if (sync && fsync(fileno(w->f)) != 0)
        return slim__data_error(err, SLIM_EIO, w->path, "%s: fsync failed: %s", w->path,
                                strerror(errno));
    return SLIM_OK;
}

slim_status slim_tfrecord_writer_close(slim_tfrecord_writer *w, slim_error *err)
{
    slim_status st = SLIM_OK;
    if (w->comp != SLIM_COMPRESSION_NONE) {
        st = zwrite(w, NULL, 0, Z_FINISH, err);
        w->z_finished = true;
    }
    if (!st)
        st = slim_tfrecord_flush(w, true, err);
    if (w->f) {
        if (fclose(w->f) != 0 && !st)
            st = slim__data_error(err, SLIM_EIO, w->path, "%s: close failed: %s", w->path,
                                  strerror(errno));
        w->f = NULL;
    }
    slim_tfrecord_writer_free(w);
    return st;
}

void slim_tfrecord_writer_free(slim_tfrecord_writer *w)
{
    if (!w)
        return;
    if (w->z_init)
        deflateEnd(&w->z);
    if (w->f)
        fclose(w->f);
    free(w->zbuf);
    free(w->path);
    free(w);
}
