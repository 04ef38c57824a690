/*
 * tests/fuzz/replay.c - the fuzz harnesses without libFuzzer: every kept
 * input through its harness, in the ordinary build (`make check`).
 *
 *   test_fuzz_replay                 every harness: tests/fuzz/regress/NAME/
 *                                    and its replay_dirs (one TAP line each)
 *   test_fuzz_replay NAME [PATH...]  one harness, on the files or folders
 *                                    given (default: as above)
 *   test_fuzz_replay --list          the harnesses' names
 *   test_fuzz_replay --seeds NAME DIR   write NAME's generated seeds into DIR
 *
 * An input that breaks a harness's property aborts with its file name; a
 * crash does too (the name is printed by a signal handler, or by
 * AddressSanitizer's report in a --enable-sanitizers build).
 */
#include "tests/fuzz/fuzz.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int n_tests, n_failed;

static void on_signal(int sig)
{
    const char *c = slim__fuzz_current ? slim__fuzz_current : "(none)";
    static const char msg[] = "test_fuzz_replay: crashed on input ";
    ssize_t r = write(2, msg, sizeof msg - 1);
    r = write(2, c, strlen(c));
    r = write(2, "\n", 1);
    (void)r;
    signal(sig, SIG_DFL);
    raise(sig);
}

static int cmpstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmptarget(const void *a, const void *b)
{
    return strcmp((*(const fuzz_target *const *)a)->name, (*(const fuzz_target *const *)b)->name);
}

static int replay_file(const fuzz_target *t, const char *path)
{
    size_t n;
    uint8_t *b = fuzz_read_file(path, &n);
    if (!b)
        return 0;
    slim__fuzz_current = path;
    t->one(b, n);
    slim__fuzz_current = NULL;
    free(b);
    return 1;
}

/* Every regular file of dir (sorted), or dir itself when it is a file;
 * -1 when it does not exist. */
static int replay_path(const fuzz_target *t, const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return -1;
    if (S_ISREG(sb.st_mode))
        return replay_file(t, dir);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char **names = NULL;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            char **nn = realloc(names, (size_t)(n + 1) * sizeof *names);
            if (!nn)
                break;
            names = nn;
            names[n++] = strdup(e->d_name);
        }
    closedir(d);
    if (n)
        qsort(names, (size_t)n, sizeof *names, cmpstr);
    int done = 0;
    for (int i = 0; i < n; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
            done += replay_file(t, path);
        free(names[i]);
    }
    free(names);
    return done;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void replay_target(const fuzz_target *t)
{
    const char *src = fuzz_srcdir();
    char dir[1024], what[1024];
    double t0 = now();
    snprintf(dir, sizeof dir, "%s/tests/fuzz/regress/%s", src, t->name);
    int n = replay_path(t, dir), total = n > 0 ? n : 0;
    snprintf(what, sizeof what, "regress/%s: %d", t->name, n > 0 ? n : 0);
    bool ok = true;
    for (int i = 0; i < 8 && t->replay_dirs[i]; i++) {
        snprintf(dir, sizeof dir, "%s/%s", src, t->replay_dirs[i]);
        int k = replay_path(t, dir);
        if (k < 0)
            ok = false; /* a folder of the source tree went missing */
        total += k > 0 ? k : 0;
        size_t l = strlen(what);
        snprintf(what + l, sizeof what - l, ", %s: %d", t->replay_dirs[i], k);
    }
    n_tests++;
    if (!ok)
        n_failed++;
    printf("%s %d - %s: %d inputs run (%s) in %.1f s\n", ok ? "ok" : "not ok", n_tests, t->name,
           total, what, now() - t0);
    fflush(stdout);
}

static const fuzz_target *find(const char *name)
{
    for (int i = 0; i < slim__fuzz_n_targets; i++)
        if (!strcmp(slim__fuzz_targets[i]->name, name))
            return slim__fuzz_targets[i];
    fprintf(stderr, "test_fuzz_replay: no harness '%s' (--list lists them)\n", name);
    exit(2);
}

int main(int argc, char **argv)
{
#if !defined(__SANITIZE_ADDRESS__)
    signal(SIGSEGV, on_signal);
    signal(SIGBUS, on_signal);
    signal(SIGFPE, on_signal);
#endif
    signal(SIGABRT, on_signal);
    qsort(slim__fuzz_targets, (size_t)slim__fuzz_n_targets, sizeof *slim__fuzz_targets, cmptarget);
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (int i = 0; i < slim__fuzz_n_targets; i++)
            printf("%s\n", slim__fuzz_targets[i]->name);
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "--seeds")) {
        printf("%d\n", slim__fuzz_write_seeds(find(argv[2]), argv[3]));
        return 0;
    }
    if (argc >= 2) {
        const fuzz_target *t = find(argv[1]);
        if (argc == 2) {
            replay_target(t);
        } else {
            for (int i = 2; i < argc; i++) {
                int k = replay_path(t, argv[i]);
                n_tests++;
                if (k < 0)
                    n_failed++;
                printf("%s %d - %s: %s: %d inputs run\n", k < 0 ? "not ok" : "ok", n_tests, t->name,
                       argv[i], k);
            }
        }
    } else {
        for (int i = 0; i < slim__fuzz_n_targets; i++)
            replay_target(slim__fuzz_targets[i]);
    }
    printf("1..%d\n", n_tests);
    return n_failed ? 1 : 0;
}
