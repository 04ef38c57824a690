/*
 * tests/fuzz/fuzz.c - what the harnesses share: temporary files, seeds,
 * TFRecord framing, the libFuzzer start-up (SLIM_LIBFUZZER) or the registry
 * the replay driver walks (the ordinary build).
 */
#include "tests/fuzz/fuzz.h"

#include <slim/data.h>

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

struct fuzz_seeds {
    const char *dir;
    int count;
};

/* The input being run, for messages (set by the replay driver). */
const char *slim__fuzz_current;

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    fprintf(stderr, "%s:%d: property failed: %s: ", file, line, cond);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    if (slim__fuzz_current)
        fprintf(stderr, "input: %s\n", slim__fuzz_current);
    abort();
}

const char *fuzz_srcdir(void)
{
    const char *s = getenv("top_srcdir");
    return s && *s ? s : ".";
}

const char *fuzz_shared(const char *rel, char *buf, size_t n)
{
    const char *env = getenv("SLIM_SHARED_DATA");
    if (env && *env)
        snprintf(buf, n, "%s/%s", env, rel);
    else
        snprintf(buf, n, "%s/../shared/data/%s", fuzz_srcdir(), rel);
    return buf;
}

/* ---- temporary files -------------------------------------------------------- */

static char tmpdir[256];

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag;
    if (ftw->level > 0)
        remove(p);
    return 0;
}

void fuzz_clear_tmpdir(void)
{
    if (tmpdir[0])
        nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void tmpdir_remove(void)
{
    fuzz_clear_tmpdir();
    if (tmpdir[0])
        rmdir(tmpdir);
}

const char *fuzz_tmpdir(void)
{
    if (!tmpdir[0]) {
        struct stat sb;
        const char *base =
            stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) && access("/dev/shm", W_OK) == 0
                ? "/dev/shm"
            : getenv("TMPDIR") ? getenv("TMPDIR")
                               : "/tmp";
        snprintf(tmpdir, sizeof tmpdir, "%s/slim-fuzz-%ld-XXXXXX", base, (long)getpid());
        if (!mkdtemp(tmpdir)) {
            fprintf(stderr, "fuzz: cannot create %s: %s\n", tmpdir, strerror(errno));
            abort();
        }
        atexit(tmpdir_remove);
    }
    return tmpdir;
}

const char *fuzz_path(const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s", fuzz_tmpdir(), name);
    return buf;
}

void fuzz_write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
        fprintf(stderr, "fuzz: cannot write %s: %s\n", path, strerror(errno));
        abort();
    }
}

uint8_t *fuzz_read_file(const char *path, size_t *n)
{
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return NULL;
    }
    size_t len = (size_t)sb.st_size;
    uint8_t *b = malloc(len ? len : 1); /* exactly the file: overreads are caught */
    if (b && len && fread(b, 1, len, f) != len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b)
        *n = len;
    return b;
}

/* ---- seeds ---------------------------------------------------------------------- */

static uint64_t fnv(const uint8_t *d, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ d[i]) * 0x100000001b3ull;
    return h;
}

void fuzz_seed(fuzz_seeds *s, const void *data, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%016llx", s->dir, (unsigned long long)fnv(data, n));
    fuzz_write_file(path, data, n);
    s->count++;
}

void fuzz_seed_opt(fuzz_seeds *s, uint8_t opt, const void *data, size_t n)
{
    uint8_t *b = malloc(n + 1);
    if (!b)
        abort();
    b[0] = opt;
    if (n)
        memcpy(b + 1, data, n);
    fuzz_seed(s, b, n + 1);
    free(b);
}

static int cmpstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int fuzz_each_shared(const char *rel, size_t max_size,
                     void (*fn)(fuzz_seeds *s, const uint8_t *d, size_t n, const char *name),
                     fuzz_seeds *s)
{
    char dir[1024];
    fuzz_shared(rel, dir, sizeof dir);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
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
    qsort(names, (size_t)n, sizeof *names, cmpstr);
    int done = 0;
    for (int i = 0; i < n; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        size_t len;
        uint8_t *b = fuzz_read_file(path, &len);
        if (b && len <= max_size) {
            fn(s, b, len, names[i]);
            done++;
        }
        free(b);
        free(names[i]);
    }
    free(names);
    return done;
}

/* ---- randomness ------------------------------------------------------------------- */

fuzz_rng fuzz_rng_from(const uint8_t *data, size_t n)
{
    return (fuzz_rng){fnv(data, n < 64 ? n : 64) ^ (uint64_t)n};
}

uint64_t fuzz_next(fuzz_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int fuzz_below(fuzz_rng *r, int n)
{
    return n <= 0 ? 0 : (int)(fuzz_next(r) % (uint64_t)n);
}

/* ---- TFRecord framing and compression ----------------------------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

int fuzz_fix_tfrecord(uint8_t *b, size_t n)
{
    size_t p = 0;
    int k = 0;
    while (p + 12 <= n) {
        uint64_t len = le64(b + p);
        put32(b + p + 8, slim_crc32c_mask(slim_crc32c(0, b + p, 8)));
        if (len > n - p - 12 || n - p - 12 - len < 4)
            break;
        put32(b + p + 12 + len, slim_crc32c_mask(slim_crc32c(0, b + p + 12, (size_t)len)));
        p += 16 + (size_t)len;
        k++;
    }
    return k;
}

uint8_t *fuzz_frame_tfrecord(const uint8_t *const *payloads, const size_t *lens, int count,
                             size_t *n)
{
    size_t total = 0;
    for (int i = 0; i < count; i++)
        total += 16 + lens[i];
    uint8_t *b = malloc(total ? total : 1), *p = b;
    if (!b)
        abort();
    for (int i = 0; i < count; i++) {
        for (int k = 0; k < 8; k++)
            p[k] = (uint8_t)((uint64_t)lens[i] >> (8 * k));
        if (lens[i])
            memcpy(p + 12, payloads[i], lens[i]);
        p += 16 + lens[i];
    }
    fuzz_fix_tfrecord(b, total);
    *n = total;
    return b;
}

uint8_t *fuzz_deflate(const uint8_t *d, size_t n, bool gzip, size_t *out_n)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, gzip ? 15 + 16 : 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        abort();
    size_t cap = deflateBound(&z, (uLong)n) + 32;
    uint8_t *out = malloc(cap);
    if (!out)
        abort();
    z.next_in = (Bytef *)d;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        abort();
    *out_n = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

/* ---- tf.train.Example ------------------------------------------------------------ */

/* Same keys, kinds and values (floats bit for bit). */
bool fuzz_same_example(const slim_example *a, const slim_example *b)
{
    if (slim_example_count(a) != slim_example_count(b))
        return false;
    for (int i = 0; i < slim_example_count(a); i++) {
        slim_feature_kind ka, kb;
        size_t na, nb;
        const char *keya = slim_example_key(a, i, &ka, &na),
                   *keyb = slim_example_key(b, i, &kb, &nb);
        if (strcmp(keya, keyb) || ka != kb || na != nb)
            return false;
    }
    /* values through the lookups (the last entry of a key wins in both) */
    for (int i = 0; i < slim_example_count(a); i++) {
        slim_feature_kind k;
        size_t n;
        const char *key = slim_example_key(a, i, &k, &n);
        if (k == SLIM_FEATURE_BYTES) {
            for (size_t j = 0;; j++) {
                const uint8_t *da, *db;
                size_t la, lb;
                slim_status sa = slim_example_bytes(a, key, j, &da, &la);
                slim_status sb = slim_example_bytes(b, key, j, &db, &lb);
                if (sa != sb)
                    return false;
                if (sa)
                    break;
                if (la != lb || (la && memcmp(da, db, la)))
                    return false;
            }
        } else if (k == SLIM_FEATURE_FLOAT) {
            const float *va, *vb;
            size_t la, lb;
            if (slim_example_floats(a, key, &va, &la) != slim_example_floats(b, key, &vb, &lb))
                return false;
            if (!slim_example_floats(a, key, &va, &la) &&
                (la != lb || (la && memcmp(va, vb, la * sizeof *va))))
                return false;
        } else if (k == SLIM_FEATURE_INT64) {
            const int64_t *va, *vb;
            size_t la, lb;
            if (slim_example_int64s(a, key, &va, &la) != slim_example_int64s(b, key, &vb, &lb))
                return false;
            if (!slim_example_int64s(a, key, &va, &la) &&
                (la != lb || (la && memcmp(va, vb, la * sizeof *va))))
                return false;
        }
    }
    return true;
}

/* Parse, re-serialize, parse again: the same Example. */
void fuzz_check_example(const uint8_t *d, size_t n)
{
    slim_example *ex;
    slim_error err = {0};
    if (slim_example_parse(d, n, &ex, &err) != SLIM_OK) {
        FUZZ_CHECK(err.msg[0], "a failed parse says why");
        return;
    }
    uint8_t *buf;
    size_t len;
    FUZZ_CHECK(slim_example_serialize(ex, &buf, &len, &err) == SLIM_OK, "%s", err.msg);
    slim_example *again;
    FUZZ_CHECK(slim_example_parse(buf, len, &again, &err) == SLIM_OK,
               "a serialized Example parses: %s", err.msg);
    FUZZ_CHECK(fuzz_same_example(ex, again), "an Example re-serialized has the same values");
    slim_example_free(again);
    free(buf);
    slim_example_free(ex);
}

/* ---- start-up ------------------------------------------------------------------------ */

#ifdef SLIM_LIBFUZZER
/* SLIM_FUZZ_INFO=1: print the harness's settings for fuzz.sh and exit;
 * SLIM_FUZZ_SEEDS=DIR: write its generated seeds into DIR and exit. */
int slim__fuzz_initialize(const fuzz_target *t)
{
    if (getenv("SLIM_FUZZ_INFO")) {
        printf("max_len=%zu\n", t->max_len ? t->max_len : 4096);
        printf("dict=%s\n", t->dict ? t->dict : t->name);
        printf("replay_dirs='");
        for (int i = 0; i < 8 && t->replay_dirs[i]; i++)
            printf("%s%s", i ? " " : "", t->replay_dirs[i]);
        printf("'\nseed_dirs='");
        for (int i = 0; i < 8 && t->seed_dirs[i]; i++)
            printf("%s%s", i ? " " : "", t->seed_dirs[i]);
        printf("'\n");
        exit(0);
    }
    const char *dir = getenv("SLIM_FUZZ_SEEDS");
    if (dir) {
        fuzz_seeds s = {dir, 0};
        if (t->seeds)
            t->seeds(&s);
        printf("%d\n", s.count);
        exit(0);
    }
    return 0;
}
#else
const fuzz_target *slim__fuzz_targets[64];
int slim__fuzz_n_targets;

void slim__fuzz_register(const fuzz_target *t)
{
    if (slim__fuzz_n_targets == 64)
        abort();
    slim__fuzz_targets[slim__fuzz_n_targets++] = t;
}

/* The replay driver can write seeds too (the ordinary build, no clang). */
int slim__fuzz_write_seeds(const fuzz_target *t, const char *dir)
{
    fuzz_seeds s = {dir, 0};
    if (t->seeds)
        t->seeds(&s);
    return s.count;
}
#endif
