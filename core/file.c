/* core/file.c - reading a whole file (see file.h). */
#include "core/file.h"

#include "core/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

slim_status slim__file_read(const char *path, const char *what, size_t max_bytes, uint8_t **data,
                            size_t *len, slim_error *err)
{
    *data = NULL;
    *len = 0;
    if (!what)
        what = "file";
    FILE *f = fopen(path, "rbe");
    if (!f)
        return slim__error(err, errno == ENOENT ? SLIM_ENOTFOUND : SLIM_EIO,
                           "cannot open %s '%s': %s", what, path, strerror(errno));
    /* the size is a hint (pipes and /proc files have none): read to the end */
    struct stat sb;
    size_t cap = fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0
                     ? (size_t)sb.st_size + 1
                     : 1 << 16;
    if (max_bytes && cap > max_bytes + 1)
        cap = max_bytes + 1;
    uint8_t *buf = malloc(cap);
    size_t n = 0;
    slim_status st = SLIM_OK;
    while (buf) {
        if (n == cap) { /* full: grow (reading ends with room left for the NUL) */
            if (max_bytes && n > max_bytes) {
                st = slim__error(err, SLIM_EINVAL, "%s '%s' is larger than %zu MiB", what, path,
                                 max_bytes >> 20);
                break;
            }
            size_t nc = max_bytes && 2 * cap > max_bytes + 1 ? max_bytes + 1 : 2 * cap;
            uint8_t *nb = nc > cap ? realloc(buf, nc) : NULL;
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap = nc;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    if (!st && buf && ferror(f))
        st = slim__error(err, SLIM_EIO, "cannot read %s '%s': %s", what, path, strerror(errno));
    fclose(f);
    if (!st && !buf)
        return slim__error(err, SLIM_ENOMEM, "out of memory reading %s '%s'", what, path);
    if (st) {
        free(buf);
        return st;
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return SLIM_OK;
}
