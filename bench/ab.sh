#!/bin/bash
# bench/ab.sh - two builds of slim on the same `slimrun bench` arguments, the
# way docs/performance.md's before/after figures for a change were taken:
#
#   bench/ab.sh [--pairs=N] [--side-by-side] BUILD_A BUILD_B -- SLIMRUN_BENCH_ARGS...
#
# BUILD_A and BUILD_B are build directories (each with tools/slimrun), say a
# worktree of the commit before and this one. Without --side-by-side the
# runs alternate, A then B, N times (for --num_threads=2: both cores each).
# With --side-by-side (1-thread runs) A and B run at once, one per core,
# swapping cores from pair to pair, so both see the same state of the VM.
# Prints each pair's ms/iter and ratio B/A, then the median per-node
# difference (slimrun bench --per_op), largest first; outputs stay in
# ${AB_OUT:-/tmp/slim_ab}.
set -euo pipefail
pairs=4 side=0
while [ $# -gt 0 ]; do
    case $1 in
    --pairs=*) pairs=${1#*=} ;;
    --side-by-side) side=1 ;;
    *) break ;;
    esac
    shift
done
[ $# -ge 3 ] && [ "$3" = -- ] || {
    echo "usage: bench/ab.sh [--pairs=N] [--side-by-side] BUILD_A BUILD_B -- SLIMRUN_BENCH_ARGS..." >&2
    exit 2
}
A=$1 B=$2
shift 3
out=${AB_OUT:-/tmp/slim_ab}
mkdir -p "$out"
rm -f "$out"/a_*.txt "$out"/b_*.txt
ms() { grep -m1 'ms/iter (' "$1" | awk '{print $1}'; }
for i in $(seq 1 "$pairs"); do
    if ((side)); then
        ca=$(((i + 1) % 2)) cb=$((i % 2))
        taskset -c $ca "$A/tools/slimrun" bench "$@" --per_op >"$out/a_$i.txt" 2>&1 &
        taskset -c $cb "$B/tools/slimrun" bench "$@" --per_op >"$out/b_$i.txt" 2>&1
        wait
    else
        "$A/tools/slimrun" bench "$@" --per_op >"$out/a_$i.txt" 2>&1
        "$B/tools/slimrun" bench "$@" --per_op >"$out/b_$i.txt" 2>&1
    fi
    a=$(ms "$out/a_$i.txt") b=$(ms "$out/b_$i.txt")
    echo "pair $i: A $a ms  B $b ms  B/A $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')"
done
python3 - "$out" "$pairs" <<'PY'
import re, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
def nodes(path):
    d = {}
    for l in open(path):
        m = re.match(r"  (\S.*?) +(forward|backward) +([\d.]+) ", l)
        if m and "/" in m.group(1):
            d[m.group(1) + " " + m.group(2)] = float(m.group(3))
    return d
A = [nodes("%s/a_%d.txt" % (out, i)) for i in range(1, n + 1)]
B = [nodes("%s/b_%d.txt" % (out, i)) for i in range(1, n + 1)]
rows = []
for k in A[0]:
    if all(k in d for d in A + B):
        a = statistics.median(d[k] for d in A); b = statistics.median(d[k] for d in B)
        rows.append((b - a, k, a, b))
rows.sort(key=lambda r: -abs(r[0]))
print("median per node, ms (A -> B), largest differences:")
for r in rows[:12]:
    print("  %+7.2f  %-64s %8.2f -> %8.2f" % r)
print("node sums: A %.1f ms, B %.1f ms" % (sum(r[2] for r in rows), sum(r[3] for r in rows)))
PY
