#!/bin/sh
# tests/interop/export_zoo.sh - every zoo model exported and run in ONNX Runtime
# against slimrun predict (not part of make check: the big models take minutes).
#
#   tests/interop/export_zoo.sh [BUILD_DIR] [MODEL...]
#
# For each model (default: every models/*.yaml of the zoo, at its own image
# size): a random checkpoint (tests/interop/export_fixture), a random batch
# of 2, predict's logits, `slimrun export` (dynamic batch, opset 13), ONNX
# Runtime's logits (tests/interop/ort_run.js) and probabilities; prints a
# Markdown table row per model: the largest difference relative to the
# largest logit, the file's size and the seconds each step took. Needs node
# and onnxruntime-node (ORT_NODE_DIR, default ~/.cache/slim/onnxruntime).
# Exit status: the number of models that did not match within 1e-4.
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src}
[ $# -gt 0 ] && shift
SLIMRUN=$build/tools/slimrun
FIX=$build/tests/interop/export_fixture
ORT_NODE_DIR=${ORT_NODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/slim/onnxruntime}
export ORT_NODE_DIR
models=$*
[ -n "$models" ] || models=$(cd "$src/models" && ls *.yaml | sed 's/\.yaml$//')
T=$(mktemp -d "${TMPDIR:-/tmp}/slim-export-zoo.XXXXXX")
trap 'rm -rf "$T"' EXIT

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

echo "| model | image | logits: max diff / max | probabilities | .onnx MB | export s | predict s | ORT s |"
echo "|---|---|---|---|---|---|---|---|"
bad=0
for m in $models; do
    d=$T/$m
    mkdir -p "$d"
    size=$("$SLIMRUN" inspect "$m" --batch_size=1 --no_memory 2> /dev/null |
        sed -n 's/.*: input \([0-9]*\)x[0-9]*x\([0-9]*\),.*/\1 \2/p' | head -1)
    s=${size% *} c=${size#* }
    if [ -z "$s" ] || ! "$FIX" ckpt "$m" "$d" > "$d/log" 2>&1 ||
        ! "$FIX" input 2 "$s" "$s" "$c" "$d/x.npy" 1 >> "$d/log" 2>&1; then
        echo "| $m | | setup failed: $(tail -1 "$d/log") | | | | | |"
        bad=$((bad + 1))
        continue
    fi
    t0=$(now)
    "$SLIMRUN" export --model="$m" --checkpoint_path="$d" --output="$d/m.onnx" >> "$d/log" 2>&1
    e1=$?
    t1=$(now)
    "$SLIMRUN" predict --model="$m" --checkpoint_path="$d" --input_npy="$d/x.npy" \
        --output_npy="$d/ref.npy" >> "$d/log" 2>&1
    e2=$?
    t2=$(now)
    node "$src/tests/interop/ort_run.js" "$d/m.onnx" "$d/x.npy" "$d/ort" >> "$d/log" 2>&1
    e3=$?
    t3=$(now)
    if [ $e1 -ne 0 ] || [ $e2 -ne 0 ] || [ $e3 -ne 0 ]; then
        echo "| $m | $s | failed: $(tail -1 "$d/log") | | | | | |"
        bad=$((bad + 1))
        rm -rf "$d"
        continue
    fi
    l=$("$FIX" compare "$d/ort.logits.npy" "$d/ref.npy" 1e-4) || bad=$((bad + 1))
    p=$("$FIX" compare "$d/ort.probabilities.npy" "$d/ref.npy" 1e-4 softmax) || bad=$((bad + 1))
    rel() { echo "$1" | sed -n 's/.*), \([^ ]*\) of the largest |value| \(.*\)$/\1 of \2/p'; }
    mb=$(du -m "$d/m.onnx" | cut -f1)
    echo "| $m | $s | $(rel "$l") | $(rel "$p") | $mb | $(secs "$t0" "$t1") | $(secs "$t1" "$t2") | $(secs "$t2" "$t3") |"
    rm -rf "$d"
done
exit $bad
