#!/bin/sh
# tests/interop/tfckpt_cli.sh - TensorFlow checkpoints from the command line,
# on tests/runtime/tiny.yaml with synthetic data (rmsprop: two slots; moving
# averages):
#   train --save_format=tf writes V2 checkpoints and a `checkpoint` state file
#   with the same tensors as slim's format, and a run killed midway resumes
#   from them to the same weights, slots and averages bit for bit;
#   ckpt convert to V1 and V2, fine-tuning from them with a new head reaches
#   the same weights as from slim's file; eval and predict take them;
#   ckpt ls / diff, and the errors for missing names and other shapes.
# TAP output.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
SLIMRUN=$top_builddir/tools/slimrun
TOOL=$top_builddir/tests/runtime/ckpt_tool
MODEL=$top_srcdir/tests/runtime/tiny.yaml
T=$(mktemp -d "${TMPDIR:-/tmp}/slim-tfckpt.XXXXXX")
trap 'rm -rf "$T"' EXIT
export SLIM_MODEL_PATH="$top_srcdir/models"

. "$top_srcdir/tests/tap.sh"
has() { grep -q -- "$2" "$1"; }
show() { sed 's/^/# /' "$@"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

FLAGS="--model=$MODEL --synthetic --synthetic_examples=64 --batch_size=8 --max_number_of_steps=40
 --optimizer=rmsprop --learning_rate=0.02 --num_epochs_per_decay=2 --moving_average_decay=0.9
 --save_interval_steps=10 --log_every_n_steps=10 --num_threads=2 --seed=7"
train() { "$SLIMRUN" train $FLAGS "$@"; }

# 1. slim's format and TensorFlow's, the same run
train --train_dir="$T/a" > "$T/a.log" 2>&1
train --train_dir="$T/t" --save_format=tf > "$T/t.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ -f "$T/t/model.ckpt-40.index" ] && [ -f "$T/t/model.ckpt-40.data-00000-of-00001" ] &&
    has "$T/t/checkpoint" 'model_checkpoint_path: "model.ckpt-40"' &&
    has "$T/t/checkpoint" 'all_model_checkpoint_paths: "model.ckpt-10"'
then ok "--save_format=tf: model.ckpt-40.index + .data-00000-of-00001, and a \`checkpoint\` state file"
else not_ok "--save_format=tf (exit $rc)"; show "$T/t.log"; ls "$T/t" | show; fi
check "the same parameters, slots, moving averages and step as slim's format" \
    "$TOOL" same "$T/a/model.ckpt-40.slimckpt" "$T/t"
"$SLIMRUN" ckpt ls "$T/t" > "$T/ls.log" 2>&1
if has "$T/ls.log" "TensorFlow V2 (1 shard)" && has "$T/ls.log" "global_step 40" &&
    has "$T/ls.log" "Tiny/conv1/weights/RMSProp_1 *slot" &&
    has "$T/ls.log" "Tiny/conv1/BatchNorm/moving_mean/ExponentialMovingAverage *ema" &&
    has "$T/ls.log" "_SLIM_CHECKPOINT_HEADER *meta *string"; then
    ok "ckpt ls: TF-Slim's names (NAME/RMSProp_1, NAME/ExponentialMovingAverage), global_step, the run header"
else not_ok "ckpt ls of a --save_format=tf checkpoint"; show "$T/ls.log"; fi

# 2. killed after step 23, resumed from the step-20 TensorFlow checkpoint
SLIM_TEST_CRASH_AFTER_STEP=23 train --train_dir="$T/k" --save_format=tf > "$T/k1.log" 2>&1
train --train_dir="$T/k" --save_format=tf > "$T/k2.log" 2>&1
if has "$T/k2.log" "resuming from .*model.ckpt-20.index (step 20, 160 examples seen)"; then
    ok "a killed --save_format=tf run resumes from its step-20 V2 checkpoint, input position included"
else not_ok "resuming from a V2 checkpoint"; show "$T/k1.log" "$T/k2.log"; fi
check "... to the same weights, slots and averages as the uninterrupted run, bit for bit" \
    "$TOOL" same "$T/a/model.ckpt-40.slimckpt" "$T/k"

# 3. convert to V1 and V2; fine-tune from each with a new head
mkdir -p "$T/v2"
"$SLIMRUN" ckpt convert "$T/a" "$T/tiny_v1.ckpt" --format=v1 > "$T/c1.log" 2>&1 &&
"$SLIMRUN" ckpt convert "$T/a/model.ckpt-40.slimckpt" "$T/v2/tiny.ckpt" > "$T/c2.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && has "$T/c1.log" "TensorFlow V1 (1 file)" && has "$T/c2.log" "TensorFlow V2 (1 shard)"
then ok "ckpt convert: slim -> V1 file, slim -> V2 prefix"; else
    not_ok "ckpt convert (exit $rc)"; show "$T/c1.log" "$T/c2.log"; fi
check "... the V1 file holds every tensor of the slim one" "$TOOL" same "$T/a/model.ckpt-40.slimckpt" "$T/tiny_v1.ckpt"
FT="--model=$MODEL --synthetic --synthetic_examples=64 --batch_size=8 --max_number_of_steps=6
 --num_classes=5 --num_threads=2 --optimizer=momentum --learning_rate=0.05
 --checkpoint_exclude_scopes=Tiny/logits --save_interval_steps=6"
"$SLIMRUN" train $FT --checkpoint_path="$T/a" --train_dir="$T/fs" > "$T/fs.log" 2>&1
"$SLIMRUN" train $FT --checkpoint_path="$T/tiny_v1.ckpt" --train_dir="$T/f1" > "$T/f1.log" 2>&1
rc=$?
"$SLIMRUN" train $FT --checkpoint_path="$T/v2/tiny.ckpt.index" --train_dir="$T/f2" > "$T/f2.log" 2>&1
if [ $rc -eq 0 ] && has "$T/f1.log" "excluded Tiny/logits/weights" &&
    has "$T/f1.log" "optimizer tensors of the checkpoint .* are not restored"; then
    ok "fine-tuning from the V1 file: the head excluded, its RMSProp slots not restored (a note)"
else not_ok "fine-tuning from V1 (exit $rc)"; show "$T/f1.log"; fi
check "... reaches the same weights as fine-tuning from slim's file" \
    "$TOOL" same "$T/fs/model.ckpt-6.slimckpt" "$T/f1/model.ckpt-6.slimckpt"
check "... and from the V2 prefix's .index" \
    "$TOOL" same "$T/fs/model.ckpt-6.slimckpt" "$T/f2/model.ckpt-6.slimckpt"

# 4. eval (moving averages), predict
"$SLIMRUN" eval --model=$MODEL --checkpoint_path="$T/t" --synthetic --batch_size=16 > "$T/e1.log" 2>&1
"$SLIMRUN" eval --model=$MODEL --checkpoint_path="$T/a" --synthetic --batch_size=16 > "$T/e2.log" 2>&1
a1=$(grep -o 'eval/Accuracy [0-9.]*' "$T/e1.log"); a2=$(grep -o 'eval/Accuracy [0-9.]*' "$T/e2.log")
if [ -n "$a1" ] && [ "$a1" = "$a2" ] && has "$T/e1.log" "moving averages" && has "$T/e1.log" "step 40"; then
    ok "eval of the TensorFlow train_dir: $a1 at step 40 with the moving averages, as from slim's"
else not_ok "eval of a TensorFlow checkpoint"; show "$T/e1.log" "$T/e2.log"; fi
"$SLIMRUN" eval --model=$MODEL --checkpoint_path="$T/tiny_v1.ckpt" --synthetic --batch_size=16 \
    --moving_average_decay=0.9999 > "$T/e3.log" 2>&1
a3=$(grep -o 'eval/Accuracy [0-9.]*' "$T/e3.log")
if [ "$a3" = "$a1" ]; then ok "eval of the V1 file with TF-Slim's --moving_average_decay: $a3"
else not_ok "eval of the V1 file"; show "$T/e3.log"; fi
"$TOOL" images "$T/img" 4 > /dev/null 2>&1
img=$(ls "$T"/img/class_0/*.png | head -1)
"$SLIMRUN" predict "$MODEL" "$T/tiny_v1.ckpt" "$img" --top_k=2 > "$T/p1.log" 2>&1
"$SLIMRUN" predict "$MODEL" "$T/a" "$img" --top_k=2 > "$T/p2.log" 2>&1
if [ -s "$T/p1.log" ] && cmp -s "$T/p1.log" "$T/p2.log" && has "$T/p1.log" "1\\."; then
    ok "predict from the V1 file prints what it prints from slim's"
else not_ok "predict from a V1 file"; show "$T/p1.log" "$T/p2.log"; fi

# 5. ckpt diff and the errors
"$SLIMRUN" ckpt diff "$MODEL" "$T/tiny_v1.ckpt" > "$T/d1.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && has "$T/d1.log" "would restore 8 of 8 parameters" &&
    has "$T/d1.log" "not restored: .* moving averages, .* optimizer tensors, global_step"; then
    ok "ckpt diff: everything restores (exit 0)"; else not_ok "ckpt diff (exit $rc)"; show "$T/d1.log"; fi
"$SLIMRUN" ckpt diff "$MODEL" "$T/tiny_v1.ckpt" --num_classes=9 > "$T/d2.log" 2>&1
rc=$?
if [ $rc -eq 1 ] && has "$T/d2.log" "shapes that differ (2)" &&
    has "$T/d2.log" "Tiny/logits/weights  model \[32, 9\], checkpoint Tiny/logits/weights \[32, 10\]"; then
    ok "ckpt diff --num_classes=9: the head's two shapes differ (exit 1)"
else not_ok "ckpt diff with another head (exit $rc)"; show "$T/d2.log"; fi
"$SLIMRUN" train $FT --num_classes=9 --checkpoint_exclude_scopes= --checkpoint_path="$T/tiny_v1.ckpt" \
    --train_dir="$T/x1" > "$T/x1.log" 2>&1
rc=$?
if [ $rc -eq 1 ] && has "$T/x1.log" "'Tiny/logits/weights' is (32,10) in the checkpoint but (32,9) in the model" &&
    has "$T/x1.log" "checkpoint_exclude_scopes=Tiny/logits" && has "$T/x1.log" "labels_offset=1"; then
    ok "a head of one class more: both shapes, the scope to exclude, and --labels_offset for TF-Slim's 1001 classes"
else not_ok "the shape error (exit $rc)"; show "$T/x1.log"; fi
sed 's/name: conv1,/name: conv_1,/' "$MODEL" > "$T/renamed.yaml"
"$SLIMRUN" train $FT --model="$T/renamed.yaml" --checkpoint_path="$T/tiny_v1.ckpt" \
    --train_dir="$T/x2" > "$T/x2.log" 2>&1
rc=$?
if [ $rc -eq 1 ] && has "$T/x2.log" "has no 'Tiny/conv_1/weights' (a parameter of the model" &&
    has "$T/x2.log" "4 of the model's 9 parameters are not in it" &&
    has "$T/x2.log" "'Tiny/conv_1/weights' (3,3,1,8) (nearest in the checkpoint: 'Tiny/conv1/weights')" &&
    has "$T/x2.log" "checkpoint_exclude_scopes=SCOPE" && has "$T/x2.log" "ignore_missing_vars keeps"; then
    ok "names the model has and the checkpoint lacks: listed, with the nearest name and both flags"
else not_ok "the missing-names error (exit $rc)"; show "$T/x2.log"; fi
"$SLIMRUN" ckpt diff "$T/renamed.yaml" "$T/tiny_v1.ckpt" > "$T/d3.log" 2>&1
if has "$T/d3.log" "missing in the checkpoint (4)" && has "$T/d3.log" "in the checkpoint, not in the model (4)" &&
    has "$T/d3.log" "Tiny/conv_1/weights \[3, 3, 1, 8\]  (nearest: Tiny/conv1/weights)"; then
    ok "ckpt diff lists both sides"; else not_ok "ckpt diff of a renamed layer"; show "$T/d3.log"; fi
printf 'not a checkpoint at all\n' > "$T/junk.ckpt"
"$SLIMRUN" train $FT --checkpoint_path="$T/junk.ckpt" --train_dir="$T/x3" > "$T/x3.log" 2>&1
if [ $? -eq 1 ] && has "$T/x3.log" "junk.ckpt: not a checkpoint"; then
    ok "a file that is not a checkpoint is named as such"; else not_ok "not a checkpoint"; show "$T/x3.log"; fi
"$SLIMRUN" train $FLAGS --save_format=tensorflow --train_dir="$T/x4" > "$T/x4.log" 2>&1
if [ $? -ne 0 ] && has "$T/x4.log" "expected slim .* or tf"; then ok "--save_format=tensorflow is refused"
else not_ok "a bad --save_format"; show "$T/x4.log"; fi

# 6. TensorFlow's own files
D=$top_srcdir/../shared/data/tfckpt
if [ -d "$D/tf-trt-mnist-v2" ]; then
    "$SLIMRUN" ckpt ls "$D/tf-trt-mnist-v2" > "$T/m.log" 2>&1
    if has "$T/m.log" "model.ckpt-46900: TensorFlow V2 (1 shard, index blocks snappy-compressed), 27 tensors" &&
        has "$T/m.log" "global_step 46900" && has "$T/m.log" "dense_1/kernel/Adam_1 *slot *float *\[512, 10\]"; then
        ok "ckpt ls of TensorFlow's MNIST directory (its \`checkpoint\` file, snappy index)"
    else not_ok "ckpt ls of TensorFlow's MNIST checkpoint"; show "$T/m.log"; fi
    "$SLIMRUN" ckpt ls "$D/tf-tfprof-v1/ckpt" --tensor_name=DW2 > "$T/v.log" 2>&1
    if has "$T/v.log" "DW2  float  \[2, 2, 6, 12\]" && has "$T/v.log" "sum "; then
        ok "ckpt ls --tensor_name on the V1 file"; else not_ok "ckpt ls --tensor_name"; show "$T/v.log"; fi
else
    skip "ckpt ls of TensorFlow's files" "../shared/data/tfckpt not found"
    skip "ckpt ls --tensor_name" "../shared/data/tfckpt not found"
fi

# 7. frozen graphs: slimrun import FROZEN.pb, --model=FROZEN.pb
G=$D/dl4j-tf-graphs
if [ -f "$G/lenet_frozen.pb" ]; then
    "$SLIMRUN" import "$G/lenet_frozen.pb" --out="$T/lenet" > "$T/i.log" 2>&1
    "$SLIMRUN" ckpt ls "$T/lenet" > "$T/il.log" 2>&1
    if has "$T/i.log" "8 layers, 61706 parameters, input (N,28,28,1) NHWC, 10 classes" &&
        has "$T/i.log" "dropped after the logits: ArgMax 'output'" &&
        has "$T/lenet/model.yaml" "^name: Lenet" &&
        has "$T/il.log" "Lenet/conv1/weights *value *float *\[5, 5, 1, 6\]"; then
        ok "slimrun import lenet_frozen.pb: model Lenet, TF-Slim's names, its ArgMax dropped"
    else not_ok "slimrun import lenet_frozen.pb"; show "$T/i.log" "$T/il.log"; fi
    "$SLIMRUN" inspect "$G/lenet_frozen.pb" > "$T/in.log" 2>&1
    if [ $? -eq 0 ] && has "$T/in.log" "^fc9 *fully_connected *(32,10)"; then
        ok "a FROZEN.pb loads wherever a model file does (inspect)"
    else not_ok "--model=FROZEN.pb"; show "$T/in.log"; fi
    "$SLIMRUN" import "$D/tf-core-v2/lite/multi_add.pb" --output_node=y --out="$T/ma" > "$T/ma.log" 2>&1
    if [ $? -eq 1 ] && has "$T/ma.log" "multi_add.pb: the output needs 3 Placeholders ('d', 'b', 'c')"; then
        ok "import --output_node=y of TensorFlow's multi_add.pb: its three inputs named"
    else not_ok "import --output_node"; show "$T/ma.log"; fi
else
    skip "slimrun import lenet_frozen.pb" "../shared/data/tfckpt not found"
    skip "--model=FROZEN.pb" "../shared/data/tfckpt not found"
    skip "import --output_node" "../shared/data/tfckpt not found"
fi
tap_end
