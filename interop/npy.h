/*
 * interop/npy.h - NumPy .npy files of float32 arrays.
 *
 * The format (numpy.lib.format): the magic "\x93NUMPY", a version byte pair
 * (1.0: a 2-byte header length, 2.0: 4 bytes; 3.0 is 2.0 with UTF-8), the
 * little-endian header length, an ASCII header that is a Python dict literal
 * {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
 * spaces and a newline, then the data. slim reads little-endian float32 in C
 * order ('<f4', fortran_order False); anything else is an error naming the
 * file, the byte offset and the field. It writes version 1.0.
 */
#ifndef SLIM_INTEROP_NPY_H
#define SLIM_INTEROP_NPY_H

#include <slim/slim.h>

#include <stddef.h>
#include <stdint.h>

#define SLIM__NPY_MAX_DIMS 8

typedef struct slim__npy {
    int rank;
    int64_t dim[SLIM__NPY_MAX_DIMS];
    int64_t numel;
    float *data; /* numel values (malloc'd) */
} slim__npy;

/* Parse a whole file's bytes (file names it in messages). */
slim_status slim__npy_parse(const char *file, const uint8_t *buf, size_t len, slim__npy *out,
                            slim_error *err);
slim_status slim__npy_read(const char *path, slim__npy *out, slim_error *err);
void slim__npy_free(slim__npy *a);
/* Write data (numel of dim) as a version 1.0 '<f4' C-order file. */
slim_status slim__npy_write(const char *path, const float *data, int rank, const int64_t *dim,
                            slim_error *err);

#endif
