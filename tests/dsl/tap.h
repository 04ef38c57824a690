/* tests/dsl/tap.h - the few TAP helpers the DSL tests share (header-only). */
#ifndef SLIM_TESTS_DSL_TAP_H
#define SLIM_TESTS_DSL_TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

__attribute__((format(printf, 2, 3), unused)) static bool tap_ok(bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", ok ? "ok" : "not ok", ++tap_n);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (!ok)
        tap_failed++;
    fflush(stdout);
    return ok;
}

__attribute__((format(printf, 1, 2), unused)) static void tap_diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("# ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

/* Whether a case named `name` runs: all of them without arguments, else those
 * named on the command line. */
__attribute__((unused)) static bool tap_selected(int argc, char **argv, const char *name)
{
    bool want = argc < 2;
    for (int k = 1; k < argc; k++)
        want |= !strcmp(argv[k], name);
    return want;
}

__attribute__((unused)) static int tap_done(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

#endif
