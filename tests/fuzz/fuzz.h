/*
 * tests/fuzz/fuzz.h - what a fuzz harness is made of (see tests/fuzz/README.md).
 *
 * A harness is one file, tests/fuzz/NAME.c, ending in
 *
 *     FUZZ_TARGET(NAME, .one = one, .seeds = seeds, .max_len = 1 << 16)
 *
 * where one() takes any bytes and must return 0 without crashing, leaking or
 * failing a FUZZ_CHECK. The same file is built two ways:
 *   - by tests/fuzz/fuzz.sh (`make fuzz`) with clang -fsanitize=fuzzer,address,
 *     undefined and SLIM_LIBFUZZER defined: FUZZ_TARGET defines libFuzzer's
 *     entry points, one program per harness;
 *   - into tests/fuzz/test_fuzz_replay (`make check`, the ordinary build):
 *     FUZZ_TARGET registers the harness, and the replay driver feeds it every
 *     file of tests/fuzz/regress/NAME/ and of the harness's replay_dirs.
 */
#ifndef SLIM_TESTS_FUZZ_FUZZ_H
#define SLIM_TESTS_FUZZ_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where generated seeds go (fuzz_seed). */
typedef struct fuzz_seeds fuzz_seeds;

typedef struct fuzz_target {
    const char *name;
    int (*one)(const uint8_t *data, size_t size);
    /* Optional: write seed inputs (fuzz_seed), run by `make fuzz` before fuzzing. */
    void (*seeds)(fuzz_seeds *s);
    /* Folders (relative to the source tree) replayed by `make check` and used
     * as seeds, besides tests/fuzz/regress/NAME/ which always is. */
    const char *replay_dirs[8];
    /* Folders used as seeds only (e.g. ../shared/data/jpeg: big files). */
    const char *seed_dirs[8];
    size_t max_len;   /* libFuzzer's -max_len (0 = 4096) */
    const char *dict; /* tests/fuzz/dict/DICT.dict (NULL = NAME.dict when it exists) */
} fuzz_target;

#ifdef SLIM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
int slim__fuzz_initialize(const fuzz_target *t);
#define FUZZ_TARGET(NAME, ...)                                                                     \
    static const fuzz_target fuzz_target_ = {.name = #NAME, __VA_ARGS__};                          \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                                   \
    {                                                                                              \
        return fuzz_target_.one(data, size);                                                       \
    }                                                                                              \
    int LLVMFuzzerInitialize(int *argc, char ***argv)                                              \
    {                                                                                              \
        (void)argc, (void)argv;                                                                    \
        return slim__fuzz_initialize(&fuzz_target_);                                               \
    }
#else
/* The replay driver's registry (tests/fuzz/replay.c). */
void slim__fuzz_register(const fuzz_target *t);
extern const fuzz_target *slim__fuzz_targets[64];
extern int slim__fuzz_n_targets;
int slim__fuzz_write_seeds(const fuzz_target *t, const char *dir);
#define FUZZ_TARGET(NAME, ...)                                                                     \
    static const fuzz_target fuzz_target_ = {.name = #NAME, __VA_ARGS__};                          \
    __attribute__((constructor)) static void fuzz_register_##NAME(void)                            \
    {                                                                                              \
        slim__fuzz_register(&fuzz_target_);                                                        \
    }
#endif

/* A property that must hold: on failure, says which input and aborts (the
 * fuzzer keeps the input as a crash; the replay test fails). */
#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                                     \
    } while (0)
extern const char *slim__fuzz_current; /* the input being run (messages) */
_Noreturn void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- helpers ---------------------------------------------------------------- */

/* The source tree ($top_srcdir, else the one this was built from). */
const char *fuzz_srcdir(void);
/* A path under ../shared/data (the test data beside the source tree). */
const char *fuzz_shared(const char *rel, char *buf, size_t n);
/* A private temporary folder (under /dev/shm when it exists), emptied and
 * removed at exit; fuzz_path names a file in it. */
const char *fuzz_tmpdir(void);
const char *fuzz_path(const char *name, char *buf, size_t n);
/* Write a whole file (aborts on failure: the harness's own problem). */
void fuzz_write_file(const char *path, const void *data, size_t n);
/* Read a whole file (malloc'ed; NULL if it cannot be read). */
uint8_t *fuzz_read_file(const char *path, size_t *n);
/* Empty the temporary folder (between inputs). */
void fuzz_clear_tmpdir(void);

/* A seed input: the file is named by its contents' hash. */
void fuzz_seed(fuzz_seeds *s, const void *data, size_t n);
/* The same with one option byte in front (harnesses that read data[0] as options). */
void fuzz_seed_opt(fuzz_seeds *s, uint8_t opt, const void *data, size_t n);
/* Every regular file of a folder of ../shared/data, up to max_size bytes each,
 * through fn (e.g. to add option bytes). Returns how many. */
int fuzz_each_shared(const char *rel, size_t max_size,
                     void (*fn)(fuzz_seeds *s, const uint8_t *d, size_t n, const char *name),
                     fuzz_seeds *s);

/* Deterministic pseudo-random numbers from the input (crops, choices). */
typedef struct fuzz_rng {
    uint64_t s;
} fuzz_rng;
fuzz_rng fuzz_rng_from(const uint8_t *data, size_t n);
uint64_t fuzz_next(fuzz_rng *r);
/* Uniform in [0, n) (0 when n <= 0). */
int fuzz_below(fuzz_rng *r, int n);

/* TFRecord framing (8-byte length, masked CRC-32C of it, data, masked
 * CRC-32C of the data): make every CRC of b right, in place, walking the
 * records as their lengths say (a length past the end stops the walk).
 * Returns the records walked. */
int fuzz_fix_tfrecord(uint8_t *b, size_t n);
/* Frame payloads as TFRecords (malloc'ed); *n the size. */
uint8_t *fuzz_frame_tfrecord(const uint8_t *const *payloads, const size_t *lens, int count,
                             size_t *n);
/* gzip (gzip true) or zlib stream of d (malloc'ed). */
uint8_t *fuzz_deflate(const uint8_t *d, size_t n, bool gzip, size_t *out_n);
/* Examples: the same keys, kinds and values (floats bit for bit)? */
struct slim_example;
bool fuzz_same_example(const struct slim_example *a, const struct slim_example *b);
/* Parse d as an Example; when it parses, it must re-serialize and parse again
 * to the same Example (FUZZ_CHECK). */
void fuzz_check_example(const uint8_t *d, size_t n);

#endif
