#!/bin/sh
# bench/fmnist_compare.sh - Fashion-MNIST, slim beside PyTorch, epoch by epoch:
# test accuracy and training seconds per epoch for LeNet and ResNet-14, with
# the same net, initializers, preprocessing ((x - 128) / 128), optimizer (SGD
# with momentum 0.9), fixed learning rate, weight decay and batch on both sides.
#
#   bench/fmnist_compare.sh [BUILD_DIR] [OUT_DIR]
#
# BUILD_DIR holds tools/slimrun (default: the current directory); OUT_DIR gets
# the records, the runs and fmnist_compare.md (default /tmp/fmnist_compare).
# Environment: EPOCHS (5), MODELS ("lenet resnet"), SIDES ("slim torch": rerun
# one side, keeping the other's records), ROUNDS (0; N > 0: instead of the
# epoch table, epoch 1 from scratch N times, slim and PyTorch alternating, into
# fmnist_rounds.md with the median time ratio), THREADS (2), PYTHON
# (/usr/bin/python3, which has torch), FMNIST (the IDX files,
# /usr/share/datasets/fashion-mnist), LOCK (/tmp/cpu.lock).
#
# Timing: slim trains one epoch per `slimrun train` (each resumes from the
# previous epoch's checkpoint, which gives the same weights as one long run),
# and bench/torch_fmnist.py one epoch per lock hold, so every timed piece holds
# $LOCK for about a minute or two. Each side's seconds are the training loop's
# alone (slim: metrics.jsonl's elapsed at the epoch's last step; PyTorch: the
# epoch's steps), evaluation apart; "other" is how many cores other processes
# used meanwhile (/proc/stat).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
build=$(cd "${1:-.}" && pwd)
out=${2:-/tmp/fmnist_compare}
EPOCHS=${EPOCHS:-5}
MODELS=${MODELS:-"lenet resnet"}
SIDES=${SIDES:-"slim torch"}
THREADS=${THREADS:-2}
PYTHON=${PYTHON:-/usr/bin/python3}
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
LOCK=${LOCK:-/tmp/cpu.lock}
ROUNDS=${ROUNDS:-0}
[ "$ROUNDS" -gt 0 ] && EPOCHS=1
slimrun=$build/tools/slimrun
[ -x "$slimrun" ] || { echo "fmnist_compare: no $slimrun (build first)" >&2; exit 1; }
mkdir -p "$out"
data=$out/fashion_mnist
if [ ! -f "$data/fashion_mnist_train.tfrecord" ]; then
    "$slimrun" convert --dataset_name=fashion_mnist --input_dir="$FMNIST" --dataset_dir="$data"
fi

# other processes' cores while a command runs: ../shared/anchors/otherload.py
# when it is there (it prints "# otherload: ... other processes X cores ...")
otherload=$src/../shared/anchors/otherload.py
[ -f "$otherload" ] || otherload=

# the last value of KEY in a JSON-lines file, from lines that have it
last_value() {
    grep "\"$2\"" "$1" | tail -1 | sed -e "s/.*\"$2\": *\\([-0-9.eE+]*\\).*/\\1/"
}

# model -> slim flags and PyTorch flags
flags_for() {
    case $1 in
    lenet)
        SLIM_MODEL="--model_name=lenet"
        LR=0.01 WD=0
        ;;
    resnet)
        SLIM_MODEL="--model=$src/models/examples/resnet_fmnist.yaml --preprocessing_name=lenet"
        LR=0.05 WD=0.0001
        ;;
    *) echo "fmnist_compare: unknown model $1" >&2; exit 2 ;;
    esac
}

slim_side() {
    m=$1
    flags_for "$m"
    dir=$out/slim_$m
    rm -rf "$dir"
    rec=$out/slim_$m.jsonl
    : > "$rec"
    e=1
    while [ "$e" -le "$EPOCHS" ]; do
        # shellcheck disable=SC2086
        flock "$LOCK" ${otherload:+"$PYTHON" "$otherload"} "$slimrun" train $SLIM_MODEL \
            --dataset_name=fashion_mnist --dataset_dir="$data" --train_dir="$dir" \
            --optimizer=momentum --momentum=0.9 --learning_rate=$LR \
            --learning_rate_decay_type=fixed --weight_decay=$WD --batch_size=64 \
            --num_epochs="$e" --num_threads="$THREADS" --log_every_n_steps=100 \
            --save_interval_secs=100000 > "$dir.out" 2>> "$dir.log" ||
            { echo "fmnist_compare: slimrun train failed, see $dir.log" >&2; exit 1; }
        other=$(sed -n 's/.*other processes \([0-9.]*\) cores.*/\1/p' "$dir.out")
        secs=$(last_value "$dir/metrics.jsonl" elapsed)
        acc=$(flock "$LOCK" "$slimrun" eval --checkpoint_path="$dir" --dataset_name=fashion_mnist \
            --dataset_dir="$data" --num_threads="$THREADS" 2> /dev/null |
            sed -n 's/.*eval\/Accuracy \([0-9.]*\).*/\1/p')
        echo "{\"side\": \"slim\", \"model\": \"$m\", \"epoch\": $e, \"test_accuracy\": $acc, \"train_seconds\": $secs, \"other_cores\": ${other:-null}}" |
            tee -a "$rec"
        e=$((e + 1))
    done
}

torch_side() {
    m=$1
    flags_for "$m"
    rec=$out/torch_$m.jsonl
    : > "$rec"
    "$PYTHON" "$here/torch_fmnist.py" --model="$m" --dataset_dir="$FMNIST" --epochs="$EPOCHS" \
        --batch_size=64 --learning_rate=$LR --momentum=0.9 --weight_decay=$WD \
        --threads="$THREADS" --lock="$LOCK" --json="$rec"
}

if [ "$ROUNDS" -gt 0 ]; then
    # epoch 1 from scratch, slim then PyTorch, ROUNDS times: time per epoch
    # side by side under the same drift of the machine's speed
    for m in $MODELS; do
        : > "$out/rounds_$m.jsonl"
        i=1
        while [ "$i" -le "$ROUNDS" ]; do
            for side in $SIDES; do
                "${side}_side" "$m"
                sed -e "s/^{/{\"round\": $i, /" "$out/${side}_$m.jsonl" >> "$out/rounds_$m.jsonl"
            done
            i=$((i + 1))
        done
    done
    # shellcheck disable=SC2086
    "$PYTHON" - "$out" $MODELS > "$out/fmnist_rounds.md" <<'PY'
import json, statistics, sys
out, models = sys.argv[1], sys.argv[2:]
names = {"lenet": "LeNet", "resnet": "ResNet-14"}
print("| model | round | slim s/epoch | PyTorch s/epoch | PyTorch/slim time | slim test acc "
      "| PyTorch test acc | other cores (slim, PyTorch) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for m in models:
    rows = {}
    for r in map(json.loads, open("%s/rounds_%s.jsonl" % (out, m))):
        rows.setdefault(r["round"], {})[r["side"]] = r
    ratios, ss, ts = [], [], []
    for i in sorted(rows):
        a, b = rows[i].get("slim", {}), rows[i].get("pytorch", {})
        if a.get("train_seconds") and b.get("train_seconds"):
            ratios.append(b["train_seconds"] / a["train_seconds"])
        ss += [a["train_seconds"]] if a.get("train_seconds") else []
        ts += [b["train_seconds"]] if b.get("train_seconds") else []
        f = lambda r, k, fmt: fmt % r[k] if r.get(k) is not None else "-"
        print("| %s | %d | %s | %s | %s | %s | %s | %s, %s |" % (
            names.get(m, m), i, f(a, "train_seconds", "%.1f"), f(b, "train_seconds", "%.1f"),
            "%.2f" % ratios[-1] if a.get("train_seconds") and b.get("train_seconds") else "-",
            f(a, "test_accuracy", "%.4f"), f(b, "test_accuracy", "%.4f"),
            f(a, "other_cores", "%.2f"), f(b, "other_cores", "%.2f")))
    if ratios:
        print("| %s | median | %.1f | %.1f | %.2f | | | |" % (
            names.get(m, m), statistics.median(ss), statistics.median(ts),
            statistics.median(ratios)))
PY
    cat "$out/fmnist_rounds.md"
    exit 0
fi

for m in $MODELS; do
    for side in $SIDES; do
        "${side}_side" "$m"
    done
done

# the table: one row per epoch, slim beside PyTorch
# shellcheck disable=SC2086
"$PYTHON" - "$out" $MODELS > "$out/fmnist_compare.md" <<'PY'
import json, sys
out, models = sys.argv[1], sys.argv[2:]
def read(p):
    try:
        return {r["epoch"]: r for r in map(json.loads, open(p))}
    except FileNotFoundError:
        return {}
names = {"lenet": "LeNet", "resnet": "ResNet-14"}
print("| model | epoch | slim test acc | PyTorch test acc | slim s/epoch | PyTorch s/epoch "
      "| PyTorch/slim time | other cores (slim, PyTorch) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for m in models:
    s, t = read("%s/slim_%s.jsonl" % (out, m)), read("%s/torch_%s.jsonl" % (out, m))
    for e in sorted(set(s) | set(t)):
        a, b = s.get(e, {}), t.get(e, {})
        f = lambda r, k, fmt: fmt % r[k] if r.get(k) is not None else "-"
        ratio = ("%.2f" % (b["train_seconds"] / a["train_seconds"])
                 if a.get("train_seconds") and b.get("train_seconds") else "-")
        print("| %s | %d | %s | %s | %s | %s | %s | %s, %s |" % (
            names.get(m, m), e, f(a, "test_accuracy", "%.4f"), f(b, "test_accuracy", "%.4f"),
            f(a, "train_seconds", "%.1f"), f(b, "train_seconds", "%.1f"), ratio,
            f(a, "other_cores", "%.2f"), f(b, "other_cores", "%.2f")))
PY
cat "$out/fmnist_compare.md"
