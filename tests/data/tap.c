/* tests/data/tap.c - TAP helpers for the data tests. */
#include "tests/data/tap.h"

#include "core/file.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int n_tests, n_fail;
static char tmpdir[256];

void tap_ok(bool ok, const char *fmt, ...)
{
    va_list ap;
    n_tests++;
    if (!ok)
        n_fail++;
    printf("%s %d - ", ok ? "ok" : "not ok", n_tests);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

void tap_diag(const char *fmt, ...)
{
    va_list ap;
    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

void tap_streq(const char *got, const char *want, const char *what)
{
    bool ok = got && want && !strcmp(got, want);
    tap_ok(ok, "%s", what);
    if (!ok) {
        tap_diag("got:  %s", got ? got : "(null)");
        tap_diag("want: %s", want ? want : "(null)");
    }
}

int tap_failures(void)
{
    return n_fail;
}

int tap_done(void)
{
    if (tmpdir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            tap_diag("could not remove %s", tmpdir);
    }
    printf("1..%d\n", n_tests);
    return n_fail ? 1 : 0;
}

const char *tap_shared_data(void)
{
    static char buf[1024];
    const char *e = getenv("SLIM_SHARED_DATA");
    if (e && *e)
        snprintf(buf, sizeof buf, "%s", e);
    else
        snprintf(buf, sizeof buf, "%s/../shared/data",
                 getenv("top_srcdir") ? getenv("top_srcdir") : ".");
    char probe[1100];
    snprintf(probe, sizeof probe, "%s/MANIFEST.md", buf);
    return access(probe, R_OK) == 0 ? buf : NULL;
}

const char *tap_data_path(const char *rel)
{
    static char bufs[8][1200];
    static int k;
    char *b = bufs[k++ & 7];
    snprintf(b, sizeof bufs[0], "%s/%s", tap_shared_data() ? tap_shared_data() : ".", rel);
    return b;
}

void tap_skip_all(const char *why)
{
    if (n_tests > 0) { /* some checks ran: end the plan there */
        tap_diag("the rest is skipped: %s", why);
        exit(tap_done());
    }
    /* TAP: a plan of 0 with a SKIP directive is a skipped test (under the
     * TAP driver, exit 77 would count as an error) */
    printf("1..0 # SKIP %s\n", why);
    exit(0);
}

const char *tap_tmpdir(void)
{
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "%s/slim-test-XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(tmpdir)) {
            printf("Bail out! cannot create a temporary directory\n");
            exit(1);
        }
    }
    return tmpdir;
}

uint8_t *tap_read_file(const char *path, size_t *len)
{
    uint8_t *p;
    return slim__file_read(path, NULL, 0, &p, len, NULL) ? NULL : p;
}

int tap_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, len, f);
    return fclose(f) == 0 && w == len ? 0 : -1;
}
