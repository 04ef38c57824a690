/*
 * tests/fuzz/png_crc.c - tests/fuzz/png.c with every chunk's CRC made right
 * before decoding, so that mutations reach the chunk contents, the zlib
 * stream and the row filters instead of stopping at a CRC mismatch. Same
 * options byte and properties as png.c.
 */
#define PNG_FIX_CRCS 1
#include "tests/fuzz/png.c"

FUZZ_TARGET(png_crc, .one = one, .seeds = png_seeds, .max_len = 1 << 14, .dict = "png")
