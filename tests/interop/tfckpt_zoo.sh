#!/bin/sh
# tests/interop/tfckpt_zoo.sh - TF-Slim's fine-tuning workflow on zoo models
# (LeNet, CifarNet, ResNet-50 v1) with TensorFlow V1 checkpoints, the format of
# TF-Slim's published lenet/cifarnet/resnet_v1_50 checkpoints: a model trained
# a step (momentum, moving averages) is converted to a V1 file with TF-Slim's
# names by `slimrun ckpt convert`; `ckpt diff` finds every variable in it;
# fine-tuning from the V1 file with the head excluded (a new class count)
# reaches, bit for bit, the weights fine-tuning from slim's own checkpoint
# reaches. Synthetic data; small inputs keep ResNet-50 quick. TAP output.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
SLIMRUN=$top_builddir/tools/slimrun
TOOL=$top_builddir/tests/runtime/ckpt_tool
T=$(mktemp -d "${TMPDIR:-/tmp}/slim-tfzoo.XXXXXX")
trap 'rm -rf "$T"' EXIT
export SLIM_MODEL_PATH="$top_srcdir/models"

. "$top_srcdir/tests/tap.sh"
has() { grep -q -- "$2" "$1"; }
show() { sed 's/^/# /' "$@"; }

# model  head scope  input size
for spec in "lenet LeNet/fc4 28" "cifarnet CifarNet/logits 32" "resnet_v1_50 resnet_v1_50/logits 32"; do
    set -- $spec
    m=$1 head=$2 size=$3
    D="$T/$m"
    COMMON="--model_name=$m --synthetic --synthetic_examples=8 --batch_size=2 --num_threads=2
     --train_image_size=$size --seed=5"
    "$SLIMRUN" train $COMMON --num_classes=10 --max_number_of_steps=1 --optimizer=momentum --learning_rate=0.01 \
        --moving_average_decay=0.99 --train_dir="$D/src" > "$D.src.log" 2>&1 &&
    "$SLIMRUN" ckpt convert "$D/src" "$D/$m.ckpt" --format=v1 > "$D.conv.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && has "$D.conv.log" "TensorFlow V1 (1 file)"; then
        ok "$m: trained a step, converted to a V1 checkpoint with TF-Slim's names"
    else not_ok "$m: train and convert (exit $rc)"; show "$D.src.log" "$D.conv.log"; continue; fi
    "$SLIMRUN" ckpt diff $m "$D/$m.ckpt" --num_classes=10 > "$D.diff.log" 2>&1
    rc=$?
    got=$(grep -o 'would restore [0-9]* of [0-9]*' "$D.diff.log")
    if [ $rc -eq 0 ] && [ -n "$got" ] &&
        [ "$(echo "$got" | awk '{print $3}')" = "$(echo "$got" | awk '{print $5}')" ]; then
        ok "$m: ckpt diff: $got parameters from the V1 file"
    else not_ok "$m: ckpt diff (exit $rc)"; show "$D.diff.log"; fi
    FT="$COMMON --num_classes=5 --max_number_of_steps=2 --optimizer=rmsprop --learning_rate=0.001
     --checkpoint_exclude_scopes=$head --save_interval_steps=2"
    "$SLIMRUN" train $FT --checkpoint_path="$D/src" --train_dir="$D/from_slim" > "$D.fs.log" 2>&1
    "$SLIMRUN" train $FT --checkpoint_path="$D/$m.ckpt" --train_dir="$D/from_v1" > "$D.fv.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && has "$D.fv.log" "excluded $head/" && has "$D.fv.log" "are not restored when fine-tuning"; then
        ok "$m: fine-tuned from the V1 file with --checkpoint_exclude_scopes=$head (5 classes)"
    else not_ok "$m: fine-tuning from the V1 file (exit $rc)"; show "$D.fv.log"; fi
    check "$m: ... the same weights, slots and averages as fine-tuning from slim's checkpoint" \
        "$TOOL" same "$D/from_slim/model.ckpt-2.slimckpt" "$D/from_v1/model.ckpt-2.slimckpt"
done
tap_end
