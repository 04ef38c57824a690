#!/bin/sh
# tests/data/jpeg_simd.sh - libjpeg-turbo's SIMD paths give determined pixels
# (TAP). Its SIMD colour conversion reads each row's padding past the image
# width (a vector at a time), memory nothing wrote, and for chroma sampling
# such as 4:4:0 (Y 1x2), 4:2:2 at 1/4 scale or Y 2x2 / Cb 1x4 / Cr 1x1 at any
# scale, valgrind's memcheck reports the decoded pixels as uninitialised.
# They are not: for every file of tests/data/jpeg-sampling/ (53x41 images of
# those samplings, see its MANIFEST.md), at scales 1/1, 1/2, 1/4, 1/8, 1 and 3
# channels, fancy and box upsampling, `slimrun data decode` writes the same
# PNG with libjpeg-turbo's SIMD, without it (JSIMD_FORCENONE=1, its C code,
# which memcheck finds clean) and with the heap filled with other bytes
# (glibc's MALLOC_PERTURB_), so no pixel depends on the padding. That is why
# `make check-valgrind` runs libjpeg-turbo's C paths (docs/testing.md).
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
SLIMRUN=$top_builddir/tools/slimrun
T=$(mktemp -d "${TMPDIR:-/tmp}/slim-jpegsimd.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$top_srcdir/tests/tap.sh"

for f in "$top_srcdir"/tests/data/jpeg-sampling/*.jpg; do
    b=$(basename "$f" .jpg)
    for s in 1 2 4 8; do
        for c in 1 3; do
            for fancy in true false; do
                what="$b 1/$s, $c channel(s), fancy_upscaling=$fancy"
                set -- data decode "$f" --scale_denom=$s --channels=$c --fancy_upscaling=$fancy
                rm -f "$T"/*.png "$T"/*.log # the logs shown on a failure: this setting's
                "$SLIMRUN" "$@" --out="$T/simd.png" > "$T/simd.log" 2>&1 &&
                    JSIMD_FORCENONE=1 "$SLIMRUN" "$@" --out="$T/c.png" > "$T/c.log" 2>&1 &&
                    MALLOC_PERTURB_=1 "$SLIMRUN" "$@" --out="$T/p1.png" > "$T/p1.log" 2>&1 &&
                    MALLOC_PERTURB_=160 "$SLIMRUN" "$@" --out="$T/p2.png" > "$T/p2.log" 2>&1
                if [ $? -ne 0 ]; then
                    not_ok "$what: decodes"
                    cat "$T"/*.log | sed 's/^/# /'
                    continue
                fi
                check "$what: SIMD = C = other heap bytes" sh -c \
                    "cmp '$T/simd.png' '$T/c.png' && cmp '$T/simd.png' '$T/p1.png' && cmp '$T/simd.png' '$T/p2.png'"
            done
        done
    done
done
tap_end
