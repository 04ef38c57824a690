/*
 * tests/fuzz/npy.c - any bytes as a NumPy .npy file (predict --input_npy):
 * parsed; what parses is written again and read back the same.
 */
#include "interop/npy.h"
#include "tests/fuzz/fuzz.h"

#include <stdlib.h>
#include <string.h>

static int one(const uint8_t *data, size_t size)
{
    slim__npy a, b;
    slim_error err = {0};
    if (slim__npy_parse("fuzz.npy", data, size, &a, &err) != SLIM_OK) {
        FUZZ_CHECK(err.msg[0], "a parse error without a message");
        return 0;
    }
    char path[512];
    fuzz_path("a.npy", path, sizeof path);
    FUZZ_CHECK(slim__npy_write(path, a.data, a.rank, a.dim, &err) == SLIM_OK &&
                   slim__npy_read(path, &b, &err) == SLIM_OK,
               "a parsed array does not write and read back: %s", err.msg);
    FUZZ_CHECK(b.rank == a.rank && !memcmp(b.dim, a.dim, (size_t)a.rank * sizeof *a.dim) &&
                   !memcmp(b.data, a.data, (size_t)a.numel * sizeof(float)),
               "the array read back differs");
    slim__npy_free(&a);
    slim__npy_free(&b);
    return 0;
}

/* A few arrays as numpy writes them: a scalar, 1-D, 4-D, version 2.0. */
static void seeds(fuzz_seeds *s)
{
    static const int64_t dims[][4] = {{0}, {3}, {2, 3, 2, 2}};
    static const int ranks[] = {0, 1, 4};
    float v[24];
    for (int i = 0; i < 24; i++)
        v[i] = (float)i * 0.5f - 3;
    for (int k = 0; k < 3; k++) {
        char path[512];
        fuzz_path("seed.npy", path, sizeof path);
        slim_error err;
        if (slim__npy_write(path, v, ranks[k], dims[k], &err) != SLIM_OK)
            continue;
        size_t n;
        uint8_t *b = fuzz_read_file(path, &n);
        if (!b)
            continue;
        fuzz_seed(s, b, n);
        if (k == 2 && n > 10) { /* the same as version 2.0: a 4-byte header length */
            uint8_t *b2 = malloc(n + 2);
            memcpy(b2, b, 8);
            b2[6] = 2;
            b2[8] = b[8];
            b2[9] = b[9];
            b2[10] = b2[11] = 0;
            memcpy(b2 + 12, b + 10, n - 10);
            fuzz_seed(s, b2, n + 2);
            free(b2);
        }
        free(b);
    }
}

FUZZ_TARGET(npy, .one = one, .seeds = seeds, .max_len = 4096)
