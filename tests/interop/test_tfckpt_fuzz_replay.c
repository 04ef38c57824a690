/*
 * tests/interop/test_tfckpt_fuzz_replay.c - every input the checkpoint fuzzer
 * kept (tests/interop/fuzz/regress/: seeds made from TensorFlow's files and
 * findings) through the fuzz target: none may crash. tests/interop/fuzz.sh
 * replays the same files with the sanitizers.
 */
#include "tests/data/tap.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(void)
{
    const char *src = getenv("top_srcdir");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/interop/fuzz/regress", src ? src : ".");
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        size_t len;
        uint8_t *data = tap_read_file(path, &len);
        if (!data)
            continue;
        LLVMFuzzerTestOneInput(data, len);
        free(data);
        n++;
    }
    if (d)
        closedir(d);
    tap_ok(d && n > 0, "%s: %d inputs open or fail cleanly", dir, n);
    return tap_done();
}
