/*
 * tests/fuzz/jpeg_transcode.c - tests/fuzz/jpeg.c forced down the path of
 * `slimrun convert`: every input is transcoded with a restart marker after
 * every MCU, and small regions (at most 16 pixels a side) are cut out of the
 * result through its index. Same options byte and properties as jpeg.c.
 */
#define JPEG_ALWAYS_TRANSCODE 1
#include "tests/fuzz/jpeg.c"

static void seeds(fuzz_seeds *s)
{
    jpeg_seeds(s, 1 << 15);
}

FUZZ_TARGET(jpeg_transcode, .one = one, .seeds = seeds, .max_len = 1 << 15, .dict = "jpeg")
