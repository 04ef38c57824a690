#!/bin/sh
# tests/interop/fuzz.sh [SECONDS] - build the TensorFlow checkpoint fuzzer
# (tests/interop/fuzz_tfckpt.c: V1 tables, V2 index + data, snappy blocks) with
# libFuzzer, AddressSanitizer and UBSan (clang), and run it from the kept
# inputs. The build defines FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, which
# accepts any block and tensor CRC so that mutations reach what they protect. Crashes land in $FUZZ_OUT/crash-*: fix them, then copy each into
# tests/interop/fuzz/regress/ so that make check replays it. MERGE=1 adds the
# run's new coverage to tests/interop/fuzz/regress/.
#
# Needs clang and its runtime: apt-get install clang libclang-rt-14-dev
set -eu
secs=${1:-60}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(pwd)
out=${FUZZ_OUT:-$build/tests/interop/fuzz-out}
cc=${CLANG:-clang}
command -v "$cc" >/dev/null || { echo "fuzz.sh: $cc not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 77; }
[ -f "$build/interop/tf_checkpoint.pb-c.c" ] || { echo "fuzz.sh: run it from a configured build directory (make first)" >&2; exit 2; }
mkdir -p "$out/corpus" "$out/obj"
flags="-g -O1 -std=c11 -D_GNU_SOURCE -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -I$src/include -I$src -I$build -I$build/interop -I$build/runtime"
objs=""
for f in "$src"/interop/tf_table.c "$src"/interop/tf_checkpoint.c "$src"/runtime/ckpt_reader.c \
         "$build"/interop/tf_tensor.pb-c.c "$build"/interop/tf_checkpoint.pb-c.c \
         "$build"/runtime/checkpoint.pb-c.c "$src"/datasets/crc32c.c "$src"/engine/error.c \
         "$src"/tests/interop/fuzz_tfckpt.c "$src"/tests/interop/fuzz_stubs.c; do
    o="$out/obj/$(basename "$(dirname "$f")")_$(basename "$f" .c).o"
    if [ ! -f "$o" ] || [ "$f" -nt "$o" ]; then
        $cc $flags -c "$f" -o "$o"
    fi
    objs="$objs $o"
done
$cc -fsanitize=fuzzer,address,undefined $objs -o "$out/fuzz_tfckpt" \
    $(pkg-config --libs libprotobuf-c snappy) -lpthread -lm
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
"$out/fuzz_tfckpt" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$out/" "$out/corpus" "$src/tests/interop/fuzz/regress"
if [ "${MERGE:-0}" = 1 ]; then
    rm -rf "$out/merged" && mkdir -p "$out/merged"
    "$out/fuzz_tfckpt" -merge=1 -max_len=65536 "$out/merged" "$src/tests/interop/fuzz/regress" "$out/corpus"
    for f in "$out"/merged/*; do
        h=$(basename "$f")
        [ -e "$src/tests/interop/fuzz/regress/$h.bin" ] || cp "$f" "$src/tests/interop/fuzz/regress/$h.bin"
    done
fi
ls "$out"/crash-* "$out"/leak-* "$out"/timeout-* 2>/dev/null && exit 1
echo "fuzz.sh: no crash in $secs s"
