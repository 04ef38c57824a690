#!/bin/sh
# tests/runtime/train_resume.sh - slimrun train end to end on synthetic data
# with a small model (tests/runtime/tiny.yaml: batch norm, dropout):
#   a run killed midway (SIGKILL) or stopped (SIGTERM) and restarted ends
#   with the same weights, slots and moving averages as an uninterrupted run;
#   damaged checkpoints are reported and the previous one is used; a full
#   disk while saving leaves the previous checkpoint intact; fine-tuning with
#   a new head names the scope to exclude, and works when it is excluded;
#   eval, run files, traces, metrics and flag errors. TAP output.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
SLIMRUN=$top_builddir/tools/slimrun
TOOL=$top_builddir/tests/runtime/ckpt_tool
MODEL=$top_srcdir/tests/runtime/tiny.yaml
T=$(mktemp -d "${TMPDIR:-/tmp}/slim-resume.XXXXXX")
trap 'rm -rf "$T"' EXIT
export SLIM_MODEL_PATH="$top_srcdir/models"

. "$top_srcdir/tests/tap.sh"
has() { grep -q -- "$2" "$1"; }

# Every run uses the same flags: rmsprop (two slots), moving averages, a
# staircase decay every 2 epochs of 64 examples, 2 threads.
FLAGS="--model=$MODEL --synthetic --synthetic_examples=64 --batch_size=8 --max_number_of_steps=40
 --optimizer=rmsprop --learning_rate=0.02 --num_epochs_per_decay=2 --moving_average_decay=0.9
 --save_interval_steps=10 --log_every_n_steps=10 --num_threads=2 --seed=7"
train() { "$SLIMRUN" train $FLAGS "$@"; }

# 1. the uninterrupted reference
train --train_dir="$T/a" > "$T/a.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ -f "$T/a/model.ckpt-40.slimckpt" ]; then ok "uninterrupted run"; else
    not_ok "uninterrupted run (exit $rc)"; sed 's/^/# /' "$T/a.log"; fi
check "its checkpoint verifies" "$TOOL" verify "$T/a/model.ckpt-40.slimckpt"

# 2. killed (SIGKILL, no chance to save) after step 23, then resumed from step 20
SLIM_TEST_CRASH_AFTER_STEP=23 train --train_dir="$T/b" > "$T/b1.log" 2>&1
rc=$?
if [ $rc -eq 137 ] && [ -f "$T/b/model.ckpt-20.slimckpt" ] && [ ! -f "$T/b/model.ckpt-30.slimckpt" ]
then ok "killed at step 23 (exit $rc) with the step-20 checkpoint"; else
    not_ok "killed at step 23 (exit $rc)"; sed 's/^/# /' "$T/b1.log"; fi
train --train_dir="$T/b" > "$T/b2.log" 2>&1
if has "$T/b2.log" "resuming from .*model.ckpt-20"; then ok "the rerun resumes from step 20"; else
    not_ok "the rerun resumes from step 20"; sed 's/^/# /' "$T/b2.log"; fi
check "killed and resumed = uninterrupted, bit for bit" \
    "$TOOL" same "$T/a/model.ckpt-40.slimckpt" "$T/b/model.ckpt-40.slimckpt"

# 2b. the same through the real input pipeline: PNG images converted to
# TFRecord shards, shuffled, several epochs; killed at step 25
"$TOOL" images "$T/png" 96 > /dev/null 2>&1 &&
    "$SLIMRUN" convert --input_dir="$T/png" --dataset_dir="$T/tfr" --dataset_name=tinyset \
        --shards=2 > "$T/conv.log" 2>&1
PFLAGS="--model=$MODEL --dataset_name=tinyset --dataset_dir=$T/tfr --preprocessing_name=lenet
 --batch_size=8 --max_number_of_steps=40 --optimizer=momentum --learning_rate=0.02
 --num_epochs_per_decay=1 --save_interval_steps=10 --num_threads=2 --seed=3"
"$SLIMRUN" train $PFLAGS --train_dir="$T/pa" > "$T/pa.log" 2>&1
SLIM_TEST_CRASH_AFTER_STEP=25 "$SLIMRUN" train $PFLAGS --train_dir="$T/pb" > "$T/pb1.log" 2>&1
"$SLIMRUN" train $PFLAGS --train_dir="$T/pb" > "$T/pb2.log" 2>&1
if [ -f "$T/pa/model.ckpt-40.slimckpt" ] && has "$T/pb2.log" "resuming from .*ckpt-20"; then
    ok "TFRecord pipeline: killed at step 25, resumed from step 20"; else
    not_ok "TFRecord pipeline run"; sed 's/^/# /' "$T/conv.log" "$T/pa.log" "$T/pb2.log"; fi
check "... same weights as uninterrupted (shuffled input restored at its position)" \
    "$TOOL" same "$T/pa/model.ckpt-40.slimckpt" "$T/pb/model.ckpt-40.slimckpt"
if has "$T/pa/labels.txt" "3:class_3"; then ok "labels.txt is copied to the train_dir"; else
    not_ok "labels.txt in the train_dir"; fi

# 3. SIGTERM after step 17: finishes the step, saves, exits 128+15
SLIM_TEST_STOP_AFTER_STEP=17 train --train_dir="$T/c" > "$T/c1.log" 2>&1
rc=$?
if [ $rc -eq 143 ] && [ -f "$T/c/model.ckpt-17.slimckpt" ]; then
    ok "SIGTERM saves step 17 and exits 143"; else
    not_ok "SIGTERM saves step 17 (exit $rc)"; sed 's/^/# /' "$T/c1.log"; fi
train --train_dir="$T/c" > "$T/c2.log" 2>&1
check "stopped and resumed = uninterrupted" \
    "$TOOL" same "$T/a/model.ckpt-40.slimckpt" "$T/c/model.ckpt-40.slimckpt"

# 4. damaged checkpoints: the newest with a flipped byte, the next truncated
mkdir -p "$T/d"
cp "$T/b/model.ckpt-20.slimckpt" "$T/b/model.ckpt-40.slimckpt" "$T/d/"
cp "$T/a/model.ckpt-30.slimckpt" "$T/d/"
size=$(wc -c < "$T/d/model.ckpt-40.slimckpt")
printf '\377' | dd of="$T/d/model.ckpt-40.slimckpt" bs=1 seek=$((size / 2)) conv=notrunc 2> /dev/null
head -c $((size / 3)) "$T/a/model.ckpt-30.slimckpt" > "$T/d/model.ckpt-30.slimckpt"
"$TOOL" verify "$T/d/model.ckpt-40.slimckpt" > "$T/d1.log" 2>&1
if [ $? -ne 0 ] && has "$T/d1.log" "CRC\|checksum"; then ok "a flipped byte is detected"; else
    not_ok "a flipped byte is detected"; sed 's/^/# /' "$T/d1.log"; fi
"$TOOL" verify "$T/d/model.ckpt-30.slimckpt" > "$T/d2.log" 2>&1
if [ $? -ne 0 ] && has "$T/d2.log" "truncated"; then ok "a truncated file is detected"; else
    not_ok "a truncated file is detected"; sed 's/^/# /' "$T/d2.log"; fi
train --train_dir="$T/d" > "$T/d3.log" 2>&1
if has "$T/d3.log" "skipping a damaged checkpoint" && has "$T/d3.log" "resuming from .*ckpt-20"
then ok "training reports both and resumes from the step-20 one"; else
    not_ok "training reports both and resumes from the step-20 one"; sed 's/^/# /' "$T/d3.log"; fi
check "... and still ends where the uninterrupted run did" \
    "$TOOL" same "$T/a/model.ckpt-40.slimckpt" "$T/d/model.ckpt-40.slimckpt"

mkdir -p "$T/d2"
head -c 5000 "$T/a/model.ckpt-40.slimckpt" > "$T/d2/model.ckpt-40.slimckpt"
train --train_dir="$T/d2" > "$T/d4.log" 2>&1
rc=$?
if [ $rc -eq 1 ] && has "$T/d4.log" "every checkpoint in .* is damaged"; then
    ok "only damaged checkpoints: an error, not a silent restart"; else
    not_ok "only damaged checkpoints (exit $rc)"; sed 's/^/# /' "$T/d4.log"; fi

# 5. a full disk while saving: a file-size limit (RLIMIT_FSIZE) that the
# step-20 checkpoint fits under but a larger one (with moving averages) does not
FLAGS_NOEMA=$(echo "$FLAGS" | sed 's/--moving_average_decay=0.9//')
"$SLIMRUN" train $FLAGS_NOEMA --max_number_of_steps=20 --train_dir="$T/e" > "$T/e1.log" 2>&1
size=$(wc -c < "$T/e/model.ckpt-20.slimckpt")
blocks=$(( (size + size / 8) / 1024 + 1 ))
(ulimit -f $blocks; exec "$SLIMRUN" train $FLAGS --train_dir="$T/e") > "$T/e2.log" 2>&1
rc=$?
if [ $rc -eq 1 ] && has "$T/e2.log" "earlier checkpoints are intact"; then
    ok "a save that cannot complete fails cleanly (exit $rc)"; else
    not_ok "a save that cannot complete fails cleanly (exit $rc)"; sed 's/^/# /' "$T/e2.log"; fi
check "the previous checkpoint is intact" "$TOOL" verify "$T/e/model.ckpt-20.slimckpt"
if ls "$T/e" | grep -q tmp; then not_ok "no temporary file is left"; ls "$T/e" | sed 's/^/# /'
else ok "no temporary file is left"; fi

# 6. fine-tuning with a new head (5 classes from a 10-class checkpoint)
FT="--model=$MODEL --synthetic --synthetic_examples=64 --batch_size=8 --max_number_of_steps=5
 --num_classes=5 --num_threads=2 --checkpoint_path=$T/a"
"$SLIMRUN" train $FT --train_dir="$T/f1" > "$T/f1.log" 2>&1
rc=$?
if [ $rc -eq 1 ] && has "$T/f1.log" "Tiny/logits/weights" && \
    has "$T/f1.log" "checkpoint_exclude_scopes=Tiny/logits"; then
    ok "a head of another class count is named, with the flag that skips it"; else
    not_ok "a head of another class count is named (exit $rc)"; sed 's/^/# /' "$T/f1.log"; fi
"$SLIMRUN" train $FT --checkpoint_exclude_scopes=Tiny/logits --trainable_scopes=Tiny/logits \
    --train_dir="$T/f2" > "$T/f2.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && has "$T/f2.log" "excluded Tiny/logits/weights"; then
    ok "excluded, it is reported and skipped; training runs"; else
    not_ok "fine-tuning with the head excluded (exit $rc)"; sed 's/^/# /' "$T/f2.log"; fi
check "frozen layers keep their weights and batch-norm statistics" \
    "$TOOL" same "$T/a/model.ckpt-40.slimckpt" "$T/f2/model.ckpt-5.slimckpt" Tiny/conv1/
if "$TOOL" same "$T/a/model.ckpt-40.slimckpt" "$T/f2/model.ckpt-5.slimckpt" Tiny/fc2/ \
    > /dev/null; then ok "... (fc2 too)"; else not_ok "... (fc2 too)"; fi

# 7. evaluation (moving averages by default), and a YAML run file
"$SLIMRUN" eval --model=$MODEL --checkpoint_path="$T/a" --synthetic --batch_size=16 \
    --confusion_matrix > "$T/g.log" 2>&1
if [ $? -eq 0 ] && has "$T/g.log" "eval/Accuracy" && has "$T/g.log" "moving averages" && \
    has "$T/g.log" "confusion matrix"; then ok "slimrun eval"; else
    not_ok "slimrun eval"; sed 's/^/# /' "$T/g.log"; fi
"$SLIMRUN" eval --model=$MODEL --checkpoint_path="$T/a" --synthetic --watch --timeout=1 \
    --eval_interval_secs=0.2 --eval_dir="$T/ev" > "$T/w.log" 2>&1
if [ $? -eq 0 ] && has "$T/w.log" "step 40: eval/Accuracy" && has "$T/w.log" "no new checkpoint" \
    && has "$T/ev/eval.jsonl" '"step": 40'; then ok "slimrun eval --watch, with --eval_dir"; else
    not_ok "slimrun eval --watch"; sed 's/^/# /' "$T/w.log"; fi
# 7b. a checkpoint of another model: eval names the missing parameter (and
# not train's --ignore_missing_vars, which eval does not take); fine-tuning does
"$SLIMRUN" eval --model_name=lenet --checkpoint_path="$T/a" --synthetic --batch_size=16 \
    > "$T/em.log" 2>&1
rc=$?
if [ $rc -eq 1 ] && has "$T/em.log" "has no 'LeNet/.*a checkpoint of another model" && \
    ! has "$T/em.log" "ignore_missing_vars"; then
    ok "eval of another model's checkpoint: the missing parameter, no train-only flag"; else
    not_ok "eval of another model's checkpoint (exit $rc)"; sed 's/^/# /' "$T/em.log"; fi
"$SLIMRUN" train --model_name=lenet --synthetic --batch_size=8 --max_number_of_steps=1 \
    --num_threads=1 --checkpoint_path="$T/a" --train_dir="$T/fm" > "$T/fm.log" 2>&1
rc=$?
if [ $rc -eq 1 ] && has "$T/fm.log" "has no 'LeNet/" && has "$T/fm.log" "--ignore_missing_vars keeps"; then
    ok "fine-tuning from it suggests --ignore_missing_vars"; else
    not_ok "fine-tuning from another model's checkpoint (exit $rc)"; sed 's/^/# /' "$T/fm.log"; fi

# 7c. --model given relative: the checkpoint records it absolute, so eval
# from another directory (without --model) finds it
ABS_SLIMRUN=$(cd "$(dirname "$SLIMRUN")" && pwd)/$(basename "$SLIMRUN")
mkdir -p "$T/rel/m" "$T/rel/elsewhere"
cp "$MODEL" "$T/rel/m/tiny.yaml"
(cd "$T/rel" && "$ABS_SLIMRUN" train --model=m/tiny.yaml --synthetic --synthetic_examples=32 \
    --batch_size=8 --max_number_of_steps=2 --num_threads=1 --train_dir=td) > "$T/rel1.log" 2>&1
(cd "$T/rel/elsewhere" && "$ABS_SLIMRUN" eval --checkpoint_path=../td --synthetic \
    --batch_size=8) > "$T/rel2.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && has "$T/rel2.log" "eval/Accuracy"; then
    ok "a relative --model is found by eval from another directory"; else
    not_ok "relative --model, eval elsewhere (exit $rc)"; sed 's/^/# /' "$T/rel1.log" "$T/rel2.log"; fi

cat > "$T/run.yaml" << EOF
model: $MODEL
synthetic: true
synthetic_examples: 64
batch_size: 8
max_number_of_steps: 12
train_dir: $T/h
optimizer: adam
learning_rate: 0.001
learning_rate_decay_type: fixed
num_threads: 2
eval:
  batch_size: 32
EOF
"$SLIMRUN" run "$T/run.yaml" --max_number_of_steps=6 > "$T/h.log" 2>&1
if [ $? -eq 0 ] && [ -f "$T/h/model.ckpt-6.slimckpt" ] && has "$T/h.log" "eval/Accuracy"; then
    ok "slimrun run: a run file, a flag overriding it, then its eval section"; else
    not_ok "slimrun run"; sed 's/^/# /' "$T/h.log"; fi

# predict: top-k of an image file through the eval preprocessing
IMG=$top_srcdir/../shared/data/jpeg/libjpeg-turbo/testimggray.jpg
if [ -f "$IMG" ]; then
    "$SLIMRUN" predict "$MODEL" "$T/a" "$IMG" --preprocessing_name=lenet --top_k=3 \
        > "$T/p.log" 2>&1
    if [ $? -eq 0 ] && has "$T/p.log" "3\. " && has "$T/p.log" "%"; then
        ok "slimrun predict prints the top 3"; else not_ok "slimrun predict"; sed 's/^/# /' "$T/p.log"; fi
else
    n=$((n + 1)); echo "ok $n - slimrun predict # SKIP no test image ($IMG)"
fi

# 8. what a run writes: metrics, TensorBoard events, a trace
if [ "$(grep -c '"step": ' "$T/a/metrics.jsonl")" -ge 4 ]; then ok "metrics.jsonl has a line per report"
else not_ok "metrics.jsonl"; fi
if ls "$T/a" | grep -q '^events.out.tfevents\.'; then ok "a TensorBoard event file"; else
    not_ok "a TensorBoard event file"; fi
"$SLIMRUN" train $FLAGS --max_number_of_steps=6 --trace="$T/trace.json" --trace_steps=4 \
    --train_dir="$T/i" > "$T/i.log" 2>&1
if [ $? -eq 0 ] && has "$T/trace.json" '"traceEvents"' && has "$T/trace.json" 'thread_name' && \
    has "$T/trace.json" '"cat": "backward"'; then ok "--trace writes Chrome trace events"; else
    not_ok "--trace"; sed 's/^/# /' "$T/i.log"; fi
if command -v python3 > /dev/null 2>&1; then
    check "the trace is valid JSON" python3 -c "import json,sys; json.load(open(sys.argv[1]))" \
        "$T/trace.json"
fi

# 9. slimrun profile: per-op times and a verdict
"$SLIMRUN" profile --model=$MODEL --synthetic --batch_size=8 --num_threads=2 --steps=5 \
    --warmup=1 > "$T/k.log" 2>&1
if [ $? -eq 0 ] && has "$T/k.log" "verdict: compute-bound" && has "$T/k.log" "Tiny/conv1" && \
    has "$T/k.log" "backward"; then ok "slimrun profile times ops and gives a verdict"; else
    not_ok "slimrun profile"; sed 's/^/# /' "$T/k.log"; fi

# 9b. a deliberately starved pipeline: a tiny model fed by one worker decoding
# real photographs (inception preprocessing, 224x224) waits for its input
PHOTOS=$top_srcdir/../shared/data/photos
if [ -d "$PHOTOS" ]; then
    mkdir -p "$T/photos/a" "$T/photos/b"
    k=0
    for f in "$PHOTOS"/*.jpg; do
        [ $((k % 2)) -eq 0 ] && d=a || d=b
        ln -s "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" "$T/photos/$d/"
        k=$((k + 1))
    done
    cat > "$T/tiny224.yaml" <<'EOF2'
name: Tiny
num_classes: 2
image_size: 224
layers:
  - conv2d: {name: conv1, num_outputs: 4, kernel_size: 3, stride: 8}
  - flatten:
  - fully_connected: {name: logits, num_outputs: $num_classes, activation: none}
EOF2
    "$SLIMRUN" profile --model="$T/tiny224.yaml" --file_pattern="$T/photos" \
        --preprocessing_name=inception --num_classes=2 --learning_rate_decay_type=fixed \
        --batch_size=8 --num_threads=2 --num_preprocessing_threads=1 --steps=5 --warmup=1 \
        > "$T/starved.log" 2>&1
    rc=$?
    # the restart-index advice comes when decoding is the slowest stage (in
    # an optimized build; under the sanitizers the resampler can be slower)
    if [ $rc -eq 0 ] && has "$T/starved.log" "verdict: input-bound" && \
        has "$T/starved.log" "num_preprocessing_threads" && \
        { ! has "$T/starved.log" "Slowest input stage: decode" || \
            has "$T/starved.log" "store the JPEGs restart-indexed"; }; then
        ok "slimrun profile on a starved pipeline: input-bound, with advice (restart-indexed JPEGs when decoding is slowest)"
    else
        not_ok "slimrun profile on a starved pipeline"; sed 's/^/# /' "$T/starved.log"
    fi
    # the same photos converted (restart-indexed): the crops are cuts, the advice says so
    "$SLIMRUN" convert --input_dir="$T/photos" --dataset_dir="$T/photo_rec" --shards=1 \
        > /dev/null 2>&1
    "$SLIMRUN" profile --model="$T/tiny224.yaml" --file_pattern="$T/photo_rec/train-*" \
        --preprocessing_name=inception --num_classes=2 --learning_rate_decay_type=fixed \
        --batch_size=8 --num_threads=2 --num_preprocessing_threads=1 --steps=5 --warmup=1 \
        > "$T/starved2.log" 2>&1
    if [ $? -eq 0 ] && has "$T/starved2.log" "verdict: input-bound" && \
        ! has "$T/starved2.log" "store the JPEGs restart-indexed"; then
        ok "... from restart-indexed shards: still input-bound, no advice to index them"
    else
        not_ok "starved profile from restart-indexed shards"; sed 's/^/# /' "$T/starved2.log"
    fi
else
    n=$((n + 1)); echo "ok $n - starved profile # SKIP no photos ($PHOTOS)"
    n=$((n + 1)); echo "ok $n - starved profile from indexed shards # SKIP no photos ($PHOTOS)"
fi

# 9b. global-norm clipping from the command line, with sgd and momentum (whose
# update ops take the scale like every other): the norm is on the progress
# line and in metrics.jsonl, a tiny clip changes the weights, a huge one does not
CLIP="--model=$MODEL --synthetic --synthetic_examples=64 --batch_size=8 --max_number_of_steps=6
 --learning_rate=0.05 --learning_rate_decay_type=fixed --log_every_n_steps=3 --num_threads=2"
for opt in sgd momentum; do
    "$SLIMRUN" train $CLIP --optimizer=$opt --clip_gradient_norm=0.01 --train_dir="$T/clip_$opt" \
        > "$T/clip_$opt.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && has "$T/clip_$opt.log" "grad norm [0-9]" &&
        has "$T/clip_$opt/metrics.jsonl" '"grad_norm": [0-9]'; then
        ok "--optimizer=$opt --clip_gradient_norm=0.01: the global norm is reported"
    else
        not_ok "--optimizer=$opt --clip_gradient_norm (exit $rc)"; sed 's/^/# /' "$T/clip_$opt.log"
    fi
done
"$SLIMRUN" train $CLIP --optimizer=sgd --train_dir="$T/noclip" > "$T/noclip.log" 2>&1
"$SLIMRUN" train $CLIP --optimizer=sgd --clip_gradient_norm=1e9 --train_dir="$T/bigclip" \
    > "$T/bigclip.log" 2>&1
if "$TOOL" same "$T/noclip/model.ckpt-6.slimckpt" "$T/bigclip/model.ckpt-6.slimckpt" \
    > /dev/null 2>&1 && ! "$TOOL" same "$T/noclip/model.ckpt-6.slimckpt" \
    "$T/clip_sgd/model.ckpt-6.slimckpt" > /dev/null 2>&1 &&
    ! has "$T/noclip.log" "grad norm"; then
    ok "a clip above the norm leaves sgd bit-identical; a clip of 0.01 changes the weights"
else
    not_ok "clipping changes the weights only when the norm exceeds it"
fi
"$SLIMRUN" train $CLIP --optimizer=sgd --clip_gradient_norm=-1 --train_dir="$T/badclip" \
    > "$T/badclip.log" 2>&1
rc=$?
if [ $rc -eq 1 ] && has "$T/badclip.log" "clip_gradient_norm=-1: expected"; then
    ok "a negative --clip_gradient_norm is refused"
else
    not_ok "a negative --clip_gradient_norm (exit $rc)"; sed 's/^/# /' "$T/badclip.log"
fi

# 9c. --aux_loss_weight: a model with an auxiliary head trains with it (its
# loss moves with the weight); one without says the flag is ignored
cat > "$T/aux.yaml" <<'EOF2'
name: Aux
num_classes: 10
image_size: 12
channels: 1
layers:
  - flatten: {name: flat}
  - fully_connected: {name: aux, num_outputs: $num_classes, activation: none}
  - fully_connected: {name: logits, inputs: flat, num_outputs: $num_classes, activation: none}
head: {logits: logits, aux_logits: aux}
EOF2
AUX="--model=$T/aux.yaml --synthetic --synthetic_examples=64 --batch_size=8 --max_number_of_steps=1
 --optimizer=sgd --learning_rate_decay_type=fixed --log_every_n_steps=1 --num_threads=1"
"$SLIMRUN" train $AUX --aux_loss_weight=0 --train_dir="$T/aux0" > "$T/aux0.log" 2>&1
"$SLIMRUN" train $AUX --train_dir="$T/aux4" > "$T/aux4.log" 2>&1
"$SLIMRUN" train $AUX --aux_loss_weight=2 --train_dir="$T/aux20" > "$T/aux20.log" 2>&1
l0=$(sed -n 's/.*"loss": \([0-9.e+-]*\).*/\1/p' "$T/aux0/metrics.jsonl")
l4=$(sed -n 's/.*"loss": \([0-9.e+-]*\).*/\1/p' "$T/aux4/metrics.jsonl")
l20=$(sed -n 's/.*"loss": \([0-9.e+-]*\).*/\1/p' "$T/aux20/metrics.jsonl")
if [ -n "$l0" ] && awk -v a="$l0" -v b="$l4" -v c="$l20" \
    'BEGIN { d = (c - a) / 2; exit !(d > 0.1 && (b - a - 0.4 * d) < 1e-4 && (a + 0.4 * d - b) < 1e-4) }'
then
    ok "--aux_loss_weight: loss $l0 at 0, $l4 by default (0.4), $l20 at 2"
else
    not_ok "--aux_loss_weight: losses '$l0' '$l4' '$l20'"; sed 's/^/# /' "$T/aux0.log"
fi
"$SLIMRUN" train $CLIP --optimizer=sgd --aux_loss_weight=0.3 --max_number_of_steps=1 \
    --train_dir="$T/noaux" > "$T/noaux.log" 2>&1
if has "$T/noaux.log" "aux_loss_weight: Tiny has no auxiliary head"; then
    ok "--aux_loss_weight on a model without an auxiliary head is reported"
else
    not_ok "--aux_loss_weight without an auxiliary head"; sed 's/^/# /' "$T/noaux.log"
fi

# 10. flag errors are usage errors with a suggestion
"$SLIMRUN" train --model_nme=lenet > "$T/j.log" 2>&1
rc=$?
if [ $rc -eq 2 ] && has "$T/j.log" "did you mean --model_name"; then ok "unknown flags suggest"; else
    not_ok "unknown flags suggest (exit $rc)"; sed 's/^/# /' "$T/j.log"; fi

tap_end
