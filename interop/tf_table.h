/* interop/tf_table.h - the sorted key/value tables TensorFlow writes (its copy
 * of LevelDB's table format, tensorflow/core/lib/io/): a V1 checkpoint is one
 * such table, a V2 checkpoint's PREFIX.index another.
 *
 * A table is data blocks, an (empty) metaindex block, an index block and a
 * 48-byte footer:
 *
 *   block    := entries, restart offsets (u32 each), restart count (u32),
 *               then a trailer: compression type (1 byte: 0 none, 1 snappy)
 *               and the masked CRC-32C of the stored block and that byte
 *   entry    := varint32 shared, varint32 non_shared, varint32 value_len,
 *               key bytes after the shared prefix, value
 *   handle   := varint64 offset, varint64 size (the size excludes the trailer)
 *   footer   := metaindex handle, index handle, zero padding to 40 bytes,
 *               magic 0xdb4775248b80fb57 (little-endian)
 *
 * The index block's keys separate the data blocks (each is >= every key of
 * its block and < every key of the next); its values are their handles.
 *
 * Reading checks every length, offset and varint against what holds it and
 * every block's CRC; a problem is SLIM_ECORRUPT naming the file, the byte
 * offset and the check that failed. Nothing in a file can make the reader
 * read out of bounds or allocate more than the file's size allows (a snappy
 * block expands at most 24-fold). */
#ifndef SLIM_INTEROP_TF_TABLE_H
#define SLIM_INTEROP_TF_TABLE_H

#include <slim/slim.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SLIM__TFT_MAGIC 0xdb4775248b80fb57ull
#define SLIM__TFT_FOOTER 48

typedef struct slim__tft slim__tft;

/* Open a table file (kept open; blocks are read on demand). */
slim_status slim__tft_open(const char *path, slim__tft **out, slim_error *err);
/* A table in memory (not copied: data must outlive the table); name is used
 * in messages. */
slim_status slim__tft_open_mem(const void *data, size_t size, const char *name, slim__tft **out,
                               slim_error *err);
void slim__tft_close(slim__tft *t);
const char *slim__tft_name(const slim__tft *t);
/* The file's size in bytes. */
uint64_t slim__tft_size(const slim__tft *t);
/* Whether any block read so far was snappy-compressed. */
bool slim__tft_saw_snappy(const slim__tft *t);

/* Every entry in order. fn's key and value are valid during the call; off is
 * the entry's byte offset within its block's stored bytes (for messages).
 * A nonzero status from fn stops the scan and is returned. */
typedef slim_status (*slim__tft_fn)(void *user, const uint8_t *key, size_t klen, const uint8_t *val,
                                    size_t vlen, int64_t block_off, slim_error *err);
slim_status slim__tft_scan(slim__tft *t, slim__tft_fn fn, void *user, slim_error *err);

/* The value of key: *found false when absent. *val points into a buffer of t,
 * valid until the next call on t; *block_off is its block's file offset. */
slim_status slim__tft_get(slim__tft *t, const void *key, size_t klen, const uint8_t **val,
                          size_t *vlen, int64_t *block_off, bool *found, slim_error *err);

/* ---- writing ------------------------------------------------------------ */

typedef struct slim__tft_writer slim__tft_writer;

typedef struct slim__tft_opts {
    size_t block_size;    /* uncompressed bytes per data block; 0: TensorFlow's 262144 */
    int restart_interval; /* keys between restart points; 0: 16 */
    bool snappy;          /* compress blocks that shrink by 1/8 or more (as LevelDB) */
} slim__tft_opts;

/* Write a table to path (created or truncated). */
slim_status slim__tft_writer_new(const char *path, const slim__tft_opts *o, slim__tft_writer **out,
                                 slim_error *err);
/* Keys must come in strictly increasing byte order. */
slim_status slim__tft_writer_add(slim__tft_writer *w, const void *key, size_t klen, const void *val,
                                 size_t vlen, slim_error *err);
/* The remaining blocks and the footer; flushes, fsyncs and closes the file,
 * and frees w (also on failure). */
slim_status slim__tft_writer_finish(slim__tft_writer *w, slim_error *err);
/* Abandon (closes and frees; the file stays as it is). */
void slim__tft_writer_free(slim__tft_writer *w);

/* slim__error for messages that carry names or bytes read from a file: the
 * formatted text goes through slim__printable (control and non-UTF-8 bytes as
 * \xNN), so a hostile checkpoint cannot write escape sequences to a
 * terminal. Messages are one line. */
slim_status slim__tf_error(slim_error *err, slim_status code, const char *fmt, ...)
    SLIM_PRINTF(3, 4);

/* ---- encodings the checkpoint code shares ------------------------------- */

/* A varint64 at p (< end): its length, or 0 when malformed or truncated. */
size_t slim__varint64_get(const uint8_t *p, const uint8_t *end, uint64_t *v);
/* Appends a varint64 to buf (room for 10 bytes); returns its length. */
size_t slim__varint64_put(uint8_t *buf, uint64_t v);

/* A growable byte buffer. */
typedef struct slim__buf {
    uint8_t *p;
    size_t n, cap;
    bool failed; /* an allocation failed: the contents are incomplete */
} slim__buf;
void slim__buf_add(slim__buf *b, const void *data, size_t n);
void slim__buf_byte(slim__buf *b, uint8_t c);
void slim__buf_varint(slim__buf *b, uint64_t v);
void slim__buf_free(slim__buf *b);

#endif
