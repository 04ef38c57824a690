/* core/error.h - filling slim_error, and the library's log sink. */
#ifndef SLIM_CORE_ERROR_H
#define SLIM_CORE_ERROR_H

#include <slim/slim.h>

/* Set err (may be NULL) to code with a printf-style message; returns code. */
slim_status slim__error(slim_error *err, slim_status code, const char *fmt, ...) SLIM_PRINTF(3, 4);
slim_status slim__verror(slim_error *err, slim_status code, const char *fmt, va_list ap);
/* Prepend "prefix" to an error message already set. */
void slim__error_prefix(slim_error *err, const char *fmt, ...) SLIM_PRINTF(2, 3);
void slim__log(int level, const char *fmt, ...) SLIM_PRINTF(2, 3);
/* "(2,8,8,3)" into buf. */
const char *slim__shape_str(const slim_shape *s, char *buf, size_t n);
/* Whether s's elements, elem bytes each, have a byte size that fits int64. */
bool slim__shape_bytes_fit(const slim_shape *s, size_t elem);
const char *slim__dtype_str(slim_dtype t);
/* s (NULL: "") as text safe for a terminal, into buf (size n, at least 8):
 * valid UTF-8 kept, control bytes, DEL and bytes that are not UTF-8 as
 * \xNN, cut with "..." when it does not fit. For names read from files. */
const char *slim__printable(const char *s, char *buf, size_t n);

#define SLIM_ASSERT(cond)                                                                          \
    do {                                                                                           \
        if (!(cond))                                                                               \
            slim__assert_fail(#cond, __FILE__, __LINE__);                                          \
    } while (0)
_Noreturn void slim__assert_fail(const char *what, const char *file, int line);

#endif
