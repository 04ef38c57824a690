#!/bin/sh
# tests/runtime/test_bench.sh - `slimrun bench` on LeNet (TAP): the report's
# structure, figures that must agree with each other and with the model
# (parameters, FLOPs per iteration, images/s against ms/iter, the memory plan
# against slim_graph_plan and slimrun inspect, resident memory at least the
# planned bytes), per-op and per-node rows, and the usage errors.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
SLIMRUN=$top_builddir/tools/slimrun
T=$(mktemp -d "${TMPDIR:-/tmp}/slim-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
export SLIM_MODEL_PATH="$top_srcdir/models"

. "$top_srcdir/tests/tap.sh"
# jv FILE SECTION KEY: the value of the first "KEY" at or after the line with "SECTION"
jv() {
    awk -v s="\"$2\":" -v k="\"$3\":" 'index($0, s) { on = 1 }
        on && index($0, k) { $0 = substr($0, index($0, k) + length(k)); sub(/^ */, "");
                             sub(/[,}].*/, ""); print; exit }' "$1"
}
# holds "awk condition over a, b, c": true when the numbers satisfy it
holds() { awk -v a="$2" -v b="$3" -v c="$4" "BEGIN { exit !($1) }"; }

J=$T/lenet.json
"$SLIMRUN" bench --model_name=lenet --batch_size=8 --iterations=3 --warmup=1 --budget=0 \
    --peak=100 --per_op --json="$J" > "$T/out.txt" 2> "$T/err.txt"
rc=$?
check "bench lenet: exit 0" test $rc = 0
check "the text report: both modes, images/s and the memory lines" sh -c "
    grep -q '^training (forward + loss + backward + update), 3 timed iterations after 1 warm-up:' '$T/out.txt' &&
    grep -q '^inference (forward), 3 timed iterations' '$T/out.txt' &&
    grep -q 'ms/iter (median; min .*images/s, .* GFLOP/s (.*% of peak)' '$T/out.txt' &&
    grep -q '^  planned memory: .* arena (.* without reuse) + 12.5 MiB parameters' '$T/out.txt' &&
    grep -q '^  peak resident memory: ' '$T/out.txt' &&
    grep -q '^  LeNet/conv2 (conv2d) *backward ' '$T/out.txt'"
check "the model: parameters, batch, FLOPs per image" sh -c "
    [ '$(jv "$J" model params)' = 3274634 ] && [ '$(jv "$J" model batch)' = 8 ] &&
    [ '$(jv "$J" model threads)' = 1 ] && [ '$(jv "$J" model fwd_gflop_per_img)' = 0.02777 ] &&
    [ '$(jv "$J" model peak_source)' = '\"given\"' ]"
for mode in train inference; do
    med=$(jv "$J" $mode ms_median)
    check "$mode: 3 iterations, min <= median <= max" holds "a >= 3 && b <= c" \
        "$(jv "$J" $mode iterations)" "$(jv "$J" $mode ms_min)" "$med"
    check "$mode: median <= max, > 0" holds "a > 0 && a <= b" "$med" "$(jv "$J" $mode ms_max)"
    check "$mode: images/s = batch / median" holds "a * b > 7990 && a * b < 8010" \
        "$(jv "$J" $mode img_s)" "$med"
    check "$mode: GFLOP/s = FLOPs per iteration / median, % of the given peak" \
        holds "a / (b / 1000) > 0.99 * c - 0.005 && a / (b / 1000) < 1.01 * c + 0.005" \
        "$(jv "$J" $mode gflop_per_iter)" "$med" "$(jv "$J" $mode gflops)"
    check "$mode: % of peak" holds "a > 0.99 * b && a < 1.01 * b" \
        "$(jv "$J" $mode pct_peak)" "$(jv "$J" $mode gflops)"
    check "$mode: slim_graph_plan gives the compiled program's plan" sh -c "
        [ '$(jv "$J" $mode plan_matches)' = true ] &&
        [ '$(jv "$J" $mode plan_only_arena_bytes)' = '$(jv "$J" $mode arena_bytes)' ]"
    check "$mode: memory reuse, 4 bytes per parameter" holds "a < b && c == 13098536" \
        "$(jv "$J" $mode arena_bytes)" "$(jv "$J" $mode naive_bytes)" "$(jv "$J" $mode param_bytes)"
    check "$mode: planned = arena + parameters + slots" holds "a == b + c" \
        "$(jv "$J" $mode planned_bytes)" \
        "$(($(jv "$J" $mode arena_bytes) + $(jv "$J" $mode param_bytes)))" \
        "$(jv "$J" $mode slot_bytes)"
    check "$mode: resident memory at least what is planned (all of it is touched)" \
        holds "a >= b && a < b + 256 * 1048576" \
        "$(jv "$J" $mode peak_rss_bytes)" "$(jv "$J" $mode planned_bytes)"
    check "$mode: forward time > 0" holds "a > 0" "$(jv "$J" $mode forward_ms)"
done
# 2 * 13,883,904 multiply-adds * 8 images, 3 passes for training
check "train: 3x the forward FLOPs; momentum slots; backward and update run" sh -c "
    [ '$(jv "$J" train gflop_per_iter)' = 0.6664 ] && [ '$(jv "$J" train slot_bytes)' = 13098536 ] &&
    awk 'BEGIN { exit !($(jv "$J" train backward_ms) > 0 && $(jv "$J" train update_ms) > 0) }'"
check "inference: the forward FLOPs, no slots, no backward" sh -c "
    [ '$(jv "$J" inference gflop_per_iter)' = 0.2221 ] && [ '$(jv "$J" inference slot_bytes)' = 0 ] &&
    [ '$(jv "$J" inference n_backward)' = 0 ] && [ '$(jv "$J" inference backward_ms)' = 0.000 ]"
check "per op kind: conv2d backward with its GFLOP/s" sh -c "
    grep -q '{\"op\": \"conv2d\", \"phase\": \"backward\", \"ms\": [0-9.]*, \"gflops\": [0-9.]*[1-9]' '$J'"
check "per node (--per_op): LeNet/fc3 forward" sh -c "
    grep -q '{\"name\": \"LeNet/fc3\", \"op\": \"fully_connected\", \"phase\": \"forward\"' '$J'"
# slimrun inspect reports the same plan (it plans without allocating)
mib=$(awk "BEGIN { printf \"%.1f MiB\", $(jv "$J" train arena_bytes) / 1048576 }")
check "slimrun inspect plans the same training arena ($mib)" sh -c "
    '$SLIMRUN' inspect lenet --batch_size=8 | grep -q '^  training:  $mib activations'"

"$SLIMRUN" bench --model_name=lenet --batch_size=4 --iterations=1 --warmup=0 --budget=0 \
    --mode=train --optimizer=sgd --peak=-1 --json="$T/t.json" > "$T/t.txt" 2>&1
rc=$?
check "--mode=train --optimizer=sgd: no inference section, no slots" sh -c "
    [ $rc = 0 ] && grep -q '\"train\": {' '$T/t.json' && ! grep -q '\"inference\"' '$T/t.json' &&
    [ '$(jv "$T/t.json" train slot_bytes)' = 0 ] && ! grep -q 'inference (' '$T/t.txt'"

# The measured peak can not be more FLOPs per cycle than two FMA ports start:
# a loop the compiler folds (chains it can prove equal computed once) is
# caught here (it once reported 1.4x the peak: 85 FLOP per cycle of 64).
"$SLIMRUN" bench --model_name=lenet --batch_size=1 --iterations=1 --warmup=0 --budget=0 \
    --mode=inference --json="$T/p.json" > "$T/p.txt" 2>&1
rc=$?
ghz=$(jv "$T/p.json" model clock_ghz)
if [ "$ghz" = 0.000 ]; then
    n=$((n + 1))
    echo "ok $n - # SKIP the measured peak per cycle (no clock estimate on this machine)"
else
    check "measured peak: at most the FLOP per cycle two FMA ports allow (+25% for the clock estimate)" \
        holds "a / b <= 1.25 * c && a / b > 0.05 * c" \
        "$(jv "$T/p.json" model peak_gflops)" "$ghz" "$(jv "$T/p.json" model peak_flop_per_cycle_max)"
    check "the text says it" sh -c "[ $rc = 0 ] && grep -q '^fp32 peak: [0-9.]* GFLOP/s (measured, 1 thread: [0-9.]* FLOP per cycle per core at [0-9.]* GHz, of the [0-9]* its vectors allow)' '$T/p.txt'"
fi

# Two threads on one core measure half the peak per core, as when the VM takes
# a vCPU away while measuring (it once read 16.4 FLOP per cycle of 32 and
# reported a step at 138% of the peak): measured again, then said. The
# check is that the note comes exactly when the figure printed is under 3/4
# of the vectors' FLOP per cycle: on a machine busy with other work the
# clock estimate drops too, and the two threads can then read 3/4 or more.
if command -v taskset > /dev/null && [ "$ghz" != 0.000 ]; then
    taskset -c 0 "$SLIMRUN" bench --model_name=lenet --batch_size=1 --iterations=1 --warmup=0 \
        --budget=0 --mode=inference --num_threads=2 > "$T/q.txt" 2>&1
    qrc=$?
    fpc=$(sed -n 's/^fp32 peak: .* \([0-9.]*\) FLOP per cycle per core at .* of the \([0-9]*\) its vectors allow)$/\1 \2/p' "$T/q.txt")
    flagged=0
    grep -q '^  (under 3/4 of it: other work held a core while measuring' "$T/q.txt" && flagged=1
    check "a peak measured under 3/4 of a core's FMAs is flagged, and only then ($fpc)" sh -c \
        "[ $qrc = 0 ] && [ -n '$fpc' ] && [ \$(echo '$fpc' | awk '{ print (\$1 < 0.75 * \$2) }') = $flagged ]"
else
    n=$((n + 1))
    echo "ok $n - # SKIP a peak measured on a held core (no taskset or no clock estimate)"
fi

# --scaling: a 1-thread copy beside the 2-thread program, iterations in pairs
"$SLIMRUN" bench --model_name=lenet --batch_size=8 --num_threads=2 --scaling --iterations=4 \
    --warmup=1 --budget=0 --peak=-1 --per_op --json="$T/s.json" > "$T/s.txt" 2>&1
rc=$?
check "--scaling: exit 0, a speed-up line per mode" sh -c "
    [ $rc = 0 ] && [ \$(grep -c '^  thread scaling: [0-9.]*x over 1 thread (median of 4 alternating pairs; 1 thread [0-9.]* ms/iter, 2 threads [0-9.]*)' '$T/s.txt') = 2 ]"
for mode in train inference; do
    check "--scaling $mode: 4 pairs, the ratio and the 1-thread median > 0" sh -c "
        grep -A30 '\"$mode\": {' '$T/s.json' |
            grep -q '\"scaling\": {\"speedup\": [0-9]*\\.[0-9]*, \"pairs\": 4, \"ms_median_1thread\": [1-9]'"
done
check "--scaling: per-op rows carry the 1-thread time and the speed-up" sh -c "
    grep -q '^  LeNet/conv2 (conv2d) *backward .*[0-9]x\$' '$T/s.txt' &&
    grep -q '\"name\": \"LeNet/conv2\", \"op\": \"conv2d\", \"phase\": \"backward\", \"ms\": [0-9.]*, \"gflops\": [0-9.]*, \"ms_1thread\": [0-9]' '$T/s.json'"
# the resident peak is the 2-thread program's alone (taken before the copy exists)
check "--scaling: the resident peak is one program's, as without it" holds "a < b + 16 * 1048576" \
    "$(jv "$T/s.json" train peak_rss_bytes)" "$(jv "$J" train peak_rss_bytes)"

# usage errors: exit 2 (1 for a model that cannot be found), a message
err() { # err "description" expected-rc pattern args...
    d=$1 want=$2 pat=$3
    shift 3
    "$SLIMRUN" bench "$@" > "$T/e.txt" 2>&1
    rc=$?
    if [ $rc = "$want" ] && grep -q -- "$pat" "$T/e.txt"; then ok "$d"; else
        not_ok "$d (exit $rc)"; sed 's/^/# /' "$T/e.txt"; fi
}
err "an unknown zoo model" 1 "no model named 'lenett', did you mean 'lenet'?" --model_name=lenett
err "a misspelt flag" 2 "unknown flag --batch_sise (did you mean --batch_size?)" \
    --model_name=lenet --batch_sise=8
err "no model" 2 "give a model: --model_name=NAME" --batch_size=8
err "a bad --mode" 2 "mode=fast: expected train, inference or both" --model_name=lenet --mode=fast
err "a bad --batch_size" 2 "batch_size must be at least 1" --model_name=lenet --batch_size=0
err "an unknown optimizer" 2 "optimizer=adamw: no update op 'adamw_update'" \
    --model_name=lenet --optimizer=adamw
err "a stray argument" 2 "unexpected argument 'lenet'" lenet
err "--scaling on 1 thread" 2 "scaling compares --num_threads with 1 thread" \
    --model_name=lenet --scaling
"$SLIMRUN" bench --help > "$T/h.txt" 2>&1
check "--help lists the flags" sh -c "[ $? = 0 ] && grep -q -- '--per_op' '$T/h.txt'"

tap_end
