#!/bin/sh
# tests/fuzz/fuzz.sh SECONDS [NAME...] - build the fuzz harnesses with clang
# (libFuzzer, AddressSanitizer, UBSan, leak detection) and run each in turn
# for SECONDS (default: every harness of $FUZZ_HARNESSES). Run from the build
# directory by `make fuzz`, which sets FUZZ_HARNESSES.
#
# Per harness NAME, in $FUZZ_OUT (default ./fuzz-out):
#   NAME/corpus/      the inputs the fuzzer kept (grows from run to run)
#   NAME/seeds/       seeds the harness generated (regenerated every run)
#   NAME/artifacts/   findings: crash-*, leak-*, timeout-*, oom-*
#   NAME/log          libFuzzer's output
#   summary.tsv       one line per run: harness, seconds, executions,
#                     coverage (edges), features, corpus, findings
# Seeds are the generated ones, tests/fuzz/regress/NAME/ and the harness's
# replay_dirs and seed_dirs. A finding: fix it, then copy the input into
# tests/fuzz/regress/NAME/WHAT-IT-WAS.EXT so that `make check` replays it.
#
# Environment: FUZZ_JOBS (parallel compiles, 2), FUZZ_TIMEOUT (seconds one
# input may take, 30), FUZZ_RSS_MB (2560), FUZZ_MALLOC_MB (1100: one
# allocation larger than this is a finding, e.g. a small file claiming a huge
# size; slim's largest legitimate one, a 2^28-pixel RGBX decode, is 1024 MB),
# FUZZ_RUNS (stop a harness after this many executions, or SECONDS),
# FUZZ_KEEP_GOING=1 (libFuzzer's fork mode: keep fuzzing after a finding),
# FUZZ_MERGE=1 (minimize the run's corpus into NAME/merged/ to pick
# regression seeds from), CLANG (clang).
set -eu
secs=${1:-60}
[ $# -gt 0 ] && shift
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(pwd)
out=${FUZZ_OUT:-$build/fuzz-out}
cc=${CLANG:-clang}
case $out in /*) ;; *) out=$build/$out ;; esac

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' >"$probe/t.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$probe/t.c" -o "$probe/t" >/dev/null 2>&1; then
    echo "fuzz.sh: $cc cannot build a libFuzzer program (apt-get install clang libclang-rt-14-dev)" >&2
    exit 77
fi

names=
for h in ${FUZZ_HARNESSES:?run through make fuzz}; do
    n=$(basename "$h" .c)
    if [ $# -eq 0 ]; then
        names="$names $n"
    else
        for want in "$@"; do [ "$want" = "$n" ] && names="$names $n"; done
    fi
done
[ -n "$names" ] || { echo "fuzz.sh: no harness named $*" >&2; exit 2; }

${MAKE:-make} --no-print-directory -f "$src/tests/fuzz/build.mk" -j"${FUZZ_JOBS:-2}" \
    FUZZ_OUT="$out" FUZZ_CC="$cc" FUZZ_NAMES="$names" fuzz-build

export top_srcdir="$src"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
for n in $names; do
    bin=$out/bin/fuzz_$n
    d=$out/$n
    mkdir -p "$d/corpus" "$d/artifacts"
    max_len=4096 dict=$n replay_dirs= seed_dirs=
    eval "$(SLIM_FUZZ_INFO=1 "$bin")"
    rm -rf "$d/seeds" && mkdir -p "$d/seeds"
    nseeds=$(SLIM_FUZZ_SEEDS="$d/seeds" "$bin")
    dirs="$d/corpus $d/seeds"
    for s in "tests/fuzz/regress/$n" $replay_dirs $seed_dirs; do
        [ -d "$src/$s" ] && dirs="$dirs $src/$s"
    done
    opts="-max_len=$max_len -timeout=${FUZZ_TIMEOUT:-30} -rss_limit_mb=${FUZZ_RSS_MB:-2560}"
    opts="$opts -malloc_limit_mb=${FUZZ_MALLOC_MB:-1100}"
    [ -f "$src/tests/fuzz/dict/$dict.dict" ] && opts="$opts -dict=$src/tests/fuzz/dict/$dict.dict"
    [ -n "${FUZZ_RUNS:-}" ] && opts="$opts -runs=$FUZZ_RUNS"
    [ "${FUZZ_KEEP_GOING:-0}" = 1 ] && opts="$opts -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1"
    before=$(ls "$d/artifacts" | wc -l)
    echo "fuzz.sh: $n for $secs s ($nseeds generated seeds; log in $d/log)"
    t0=$(date +%s)
    # shellcheck disable=SC2086
    "$bin" -max_total_time="$secs" $opts -print_final_stats=1 -artifact_prefix="$d/artifacts/" \
        $dirs >"$d/log" 2>&1 || true
    t1=$(date +%s)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$d/log" | tail -1)
    [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$d/log" | tail -1)
    line=$(grep -E '(cov|ft): [0-9]+' "$d/log" | tail -1)
    cov=$(echo "$line" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$line" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
    corp=$(echo "$line" | sed -n 's/.*corp: \([0-9]*\).*/\1/p')
    found=$(($(ls "$d/artifacts" | wc -l) - before))
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" $((t1 - t0)) "${execs:-0}" "${cov:-0}" "${ft:-0}" \
        "${corp:-0}" "$found" >>"$out/summary.tsv"
    echo "fuzz.sh: $n: $((t1 - t0)) s, ${execs:-0} executions, coverage ${cov:-0} edges, ${ft:-0} features, corpus ${corp:-0}, $found new findings"
    if [ "$found" -gt 0 ]; then
        status=1
        ls -t "$d/artifacts" | head -"$found" | sed "s|^|    $d/artifacts/|"
        grep -m1 -E 'ERROR: |property failed|runtime error' "$d/log" | sed 's/^/    /' || true
    fi
    if [ "${FUZZ_MERGE:-0}" = 1 ]; then
        rm -rf "$d/merged" && mkdir -p "$d/merged"
        "$bin" -merge=1 -max_len="$max_len" "$d/merged" "$d/corpus" >/dev/null 2>&1 || true
    fi
done
# This run as a table (Markdown), for bench/results/fuzz.md.
tail -n "$(echo $names | wc -w)" "$out/summary.tsv" | awk -F'\t' '
    BEGIN { print "| harness | seconds | executions | coverage (edges) | features | corpus | findings |";
            print "|---|---:|---:|---:|---:|---:|---:|" }
    { printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7 }'
exit $status
