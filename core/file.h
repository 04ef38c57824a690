/* core/file.h - reading a whole file (model files, images, binary batches). */
#ifndef SLIM_CORE_FILE_H
#define SLIM_CORE_FILE_H

#include <slim/slim.h>

#include <stddef.h>
#include <stdint.h>

/* The whole file at path into a malloc'ed buffer *data of *len bytes, with a
 * NUL byte after them (text can be parsed in place). Files of more than
 * max_bytes (0: no limit) are SLIM_EINVAL. what names the file in messages
 * ("model file": "cannot open model file 'PATH': REASON"); NULL: "file".
 * Errors: SLIM_ENOTFOUND (no such file), SLIM_EIO (cannot open or read),
 * SLIM_ENOMEM, SLIM_EINVAL (too large); *data is then NULL. */
slim_status slim__file_read(const char *path, const char *what, size_t max_bytes, uint8_t **data,
                            size_t *len, slim_error *err);

#endif
