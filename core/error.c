/* core/error.c - error values and logging. The library never prints on its own
 * behalf: messages go to the caller's slim_error or to the log callback. */
#include "core/error.h"

#include <stdio.h>

#include "config.h" /* PACKAGE_VERSION */
#include <stdlib.h>
#include <string.h>

static const char *const status_text[] = {
#define SLIM_X_TEXT(name, text) text,
    SLIM_STATUS_LIST(SLIM_X_TEXT)
#undef SLIM_X_TEXT
};

const char *slim_status_str(slim_status s)
{
    if (s < 0 || s >= SLIM_STATUS_COUNT)
        return "unknown status";
    return status_text[s];
}

const char *slim_version(void)
{
    return PACKAGE_VERSION;
}

slim_status slim__verror(slim_error *err, slim_status code, const char *fmt, va_list ap)
{
    if (err) {
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return code;
}

slim_status slim__error(slim_error *err, slim_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    slim__verror(err, code, fmt, ap);
    va_end(ap);
    return code;
}

void slim__error_prefix(slim_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    char pre[512], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    size_t lp = strlen(pre), lo = strnlen(old, sizeof old - 1);
    if (lp > sizeof err->msg - 1)
        lp = sizeof err->msg - 1;
    if (lo > sizeof err->msg - 1 - lp)
        lo = sizeof err->msg - 1 - lp;
    memcpy(err->msg, pre, lp);
    memcpy(err->msg + lp, old, lo);
    err->msg[lp + lo] = 0;
}

static slim_log_fn log_fn;
static void *log_user;

void slim_set_log(slim_log_fn fn, void *user)
{
    log_fn = fn;
    log_user = user;
}

void slim__log(int level, const char *fmt, ...)
{
    if (!log_fn)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    log_fn(level, buf, log_user);
}

bool slim__shape_bytes_fit(const slim_shape *s, size_t elem)
{
    int64_t n = (int64_t)elem;
    for (int i = 0; i < s->rank; i++)
        if (__builtin_mul_overflow(n, s->dim[i], &n))
            return false;
    return true;
}

const char *slim__shape_str(const slim_shape *s, char *buf, size_t n)
{
    return slim_shape_str(s, buf, n);
}

/* Length of the UTF-8 sequence at p (1..4), or 0 when it is not one
 * (overlong forms, surrogates and code points over U+10FFFF included). */
static int utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    int n = c < 0x80             ? 1
            : (c & 0xE0) == 0xC0 ? 2
            : (c & 0xF0) == 0xE0 ? 3
            : (c & 0xF8) == 0xF0 ? 4
                                 : 0;
    if (n == 0 || (n == 2 && c < 0xC2) || (n == 4 && c > 0xF4))
        return 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    if (n == 3 && ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0)))
        return 0;
    if (n == 4 && ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90)))
        return 0;
    return n;
}

const char *slim__printable(const char *s, char *buf, size_t n)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t o = 0;
    while (*p) {
        int k = utf8_len(p);
        bool esc = k == 0 || *p < 0x20 || *p == 0x7F;
        size_t need = esc ? 4 : (size_t)k;
        if (o + need + 4 > n) { /* room for "..." and the NUL */
            memcpy(buf + o, "...", 4);
            return buf;
        }
        if (esc) {
            snprintf(buf + o, 5, "\\x%02x", *p);
            p++;
        } else {
            memcpy(buf + o, p, need);
            p += need;
        }
        o += need;
    }
    buf[o] = 0;
    return buf;
}

const char *slim__dtype_str(slim_dtype t)
{
    switch (t) {
    case SLIM_F32: return "f32";
    case SLIM_U8: return "u8";
    case SLIM_I32: return "i32";
    case SLIM_I64: return "i64";
    }
    return "?";
}

void slim__assert_fail(const char *what, const char *file, int line)
{
    fprintf(stderr, "slim: internal error: %s (%s:%d)\n", what, file, line);
    abort();
}
