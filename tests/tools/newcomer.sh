#!/bin/sh
# tests/tools/newcomer.sh - what a new user hit (issue 31), as TAP:
# TF-Slim's boolean flags alone and as --noNAME, --save_summaries_secs noted
# like the other unused flags, `slimrun help CMD`, --set in train, eval,
# predict and bench (recorded in the checkpoint, reused by eval and predict
# with the training image size), predict without MODEL, eval's advice on a
# wrong --eval_image_size, no Recall_5 under 6 classes, convert making its
# output's parents and its progress line, and every flag profile's advice
# names being one train has.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
SLIMRUN=$top_builddir/tools/slimrun
[ -x "$SLIMRUN" ] || { echo "1..0 # SKIP $SLIMRUN not built"; exit 0; }
DATA=${SLIM_SHARED_DATA:-$top_srcdir/../shared/data}
T=$(mktemp -d "${TMPDIR:-/tmp}/slim-newcomer.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$top_srcdir/tests/tap.sh"
has() { grep -q -- "$2" "$1"; }

# a small model whose var `width` changes its parameters' shapes
cat > "$T/tiny.yaml" <<'EOF'
name: Tiny
num_classes: 10
image_size: 28
channels: 1
vars:
  width: 8
layers:
  - conv2d:   {name: conv1, num_outputs: $width, kernel_size: 3, activation: relu}
  - max_pool: {name: pool1, kernel_size: 2, stride: 2}
  - flatten:  {name: Flatten}
  - fully_connected: {name: logits, num_outputs: $num_classes, activation: none}
EOF
train() { "$SLIMRUN" train --model="$T/tiny.yaml" --synthetic --batch_size=8 "$@"; }

# ---- flags as TF-Slim users type them -------------------------------------------
train --train_dir="$T/b1" --max_number_of_steps=1 --clone_on_cpu --sync_replicas > "$T/b1.log" 2>&1
check "train --clone_on_cpu --sync_replicas (bare, absl's true): exit 0" test $? = 0
check "... each noted as =true" sh -c "grep -q 'note: --clone_on_cpu=true' '$T/b1.log' &&
    grep -q 'note: --sync_replicas=true' '$T/b1.log'"
train --train_dir="$T/b2" --max_number_of_steps=1 --noclone_on_cpu --nosync_replicas > "$T/b2.log" 2>&1
check "train --noclone_on_cpu --nosync_replicas: exit 0, noted as =false" sh -c \
    "grep -q 'note: --clone_on_cpu=false' '$T/b2.log' && grep -q 'note: --sync_replicas=false' '$T/b2.log'"
train --train_dir="$T/b3" --max_number_of_steps=1 --sync_replicas=maybe > "$T/b3.log" 2>&1
check "--sync_replicas=maybe: a usage error (exit 2) naming it" sh -c \
    "test $? = 2 && grep -q -- '--sync_replicas=maybe: expected true or false' '$T/b3.log'"
train --train_dir="$T/b4" --max_number_of_steps=1 --save_summaries_secs=60 > "$T/b4.log" 2>&1
check "--save_summaries_secs=60: noted like the other unused flags" has "$T/b4.log" \
    'note: --save_summaries_secs=60 (ignored: the summaries'
"$SLIMRUN" help train > "$T/h1.txt" 2>&1
"$SLIMRUN" train --help > "$T/h2.txt" 2>&1
check "slimrun help train is slimrun train --help" cmp "$T/h1.txt" "$T/h2.txt"
"$SLIMRUN" help nosuch > /dev/null 2>&1
check "slimrun help nosuch: exit 2" test $? = 2

# ---- --set, and the model as trained --------------------------------------------
train --train_dir="$T/s" --max_number_of_steps=2 --set width=4 --train_image_size=20 \
    > "$T/s.log" 2>&1
check "train --set width=4 --train_image_size=20: exit 0" test $? = 0
check "... the header counts the narrower model (Tiny: 3*3*4+4 + 400*10+10 = 4050 parameters)" \
    grep -q 'Tiny: 4050 parameters' "$T/s.log"
"$SLIMRUN" eval --checkpoint_path="$T/s" --synthetic --batch_size=8 --max_num_batches=1 \
    > "$T/e1.log" 2>&1
check "eval without --model, --set or --eval_image_size: the checkpoint's model, width 4, size 20" \
    sh -c "test $? = 0 && grep -q 'eval/Accuracy' '$T/e1.log'"
"$SLIMRUN" eval --checkpoint_path="$T/s" --synthetic --batch_size=8 --max_num_batches=1 \
    --eval_image_size=28 > "$T/e2.log" 2>&1
check "eval --eval_image_size=28: fails naming the training size, not a train-only flag" sh -c \
    "test $? = 1 && grep -q 'trained at image size 20' '$T/e2.log' &&
     grep -q -- '--eval_image_size=20' '$T/e2.log' && ! grep -q exclude_scopes '$T/e2.log'"
"$SLIMRUN" eval --checkpoint_path="$T/s" --synthetic --batch_size=8 --max_num_batches=1 \
    --set width=8 > "$T/e3.log" 2>&1
check "eval --set width=8: fails naming the checkpoint's --set width=4" sh -c \
    "test $? = 1 && grep -q -- '--set width=4' '$T/e3.log'"
if [ -f "$DATA/photos/grace_hopper.jpg" ]; then
    IMG=$DATA/photos/grace_hopper.jpg
    "$SLIMRUN" predict "$T/s" "$IMG" --top_k=3 > "$T/p1.log" 2>&1
    check "predict TRAIN_DIR IMAGE (no MODEL: the checkpoint's): 3 classes listed" sh -c \
        "test $? = 0 && test \$(grep -c '(class [0-9]*)' '$T/p1.log') = 3"
    "$SLIMRUN" predict "$T/tiny.yaml" "$T/s" "$IMG" --top_k=3 > "$T/p2.log" 2>&1
    check "predict MODEL TRAIN_DIR IMAGE: the same probabilities" sh -c \
        "test $? = 0 && cmp '$T/p1.log' '$T/p2.log'"
    "$SLIMRUN" predict "$T/s" "$IMG" --image_size=28 > "$T/p3.log" 2>&1
    check "predict --image_size=28 (not the training size): fails" test $? = 1
else
    skip "predict without MODEL" "no $DATA/photos"
fi
"$SLIMRUN" bench --model="$T/tiny.yaml" --set width=2 --mode=inference --iterations=1 --warmup=0 \
    --batch_size=2 > "$T/bench.log" 2>&1
rc=$?
"$SLIMRUN" bench --model="$T/tiny.yaml" --set nosuch=2 --mode=inference --iterations=1 --warmup=0 \
    --batch_size=2 > "$T/bench2.log" 2>&1
check "bench --set width=2 runs; --set nosuch=2 fails naming nosuch" sh -c \
    "test $rc = 0 && test $? != 0 && grep -q nosuch '$T/bench2.log'"

# ---- top-5 of 2 classes ---------------------------------------------------------
train --train_dir="$T/c2" --max_number_of_steps=1 --num_classes=2 > /dev/null 2>&1
"$SLIMRUN" eval --checkpoint_path="$T/c2" --synthetic --batch_size=8 --max_num_batches=1 \
    --num_classes=2 > "$T/c2.log" 2>&1
check "a 2-class eval prints accuracy without Recall_5" sh -c \
    "grep -q 'eval/Accuracy' '$T/c2.log' && ! grep -q Recall_5 '$T/c2.log'"
check "a 10-class eval prints Recall_5" has "$T/e1.log" 'eval/Recall_5'

# ---- convert --------------------------------------------------------------------
if [ -f "$DATA/photos/pets_examples_0005.jpg" ]; then
    mkdir -p "$T/imgs/cat" "$T/imgs/dog"
    cp "$DATA"/photos/pets_examples_000[0-2].jpg "$T/imgs/cat/"
    cp "$DATA"/photos/pets_examples_000[3-5].jpg "$T/imgs/dog/"
    printf 'not a jpeg' > "$T/imgs/dog/broken.jpg"
    "$SLIMRUN" convert --input_dir="$T/imgs" --dataset_dir="$T/new/parent/pets" \
        --dataset_name=pets --on_error=skip > "$T/cv.log" 2>&1
    check "convert into a missing parent directory: exit 0, shards there" sh -c \
        "test $? = 0 && ls '$T/new/parent/pets/'*.tfrecord"
    if command -v script > /dev/null 2>&1; then
        # on a terminal (script(1) gives it one): the progress line
        script -qec "'$SLIMRUN' convert --input_dir='$T/imgs' --dataset_dir='$T/cv2' \
            --dataset_name=pets --on_error=skip" /dev/null > "$T/cv2.log" 2>&1
        check "the progress line: the ETA and the skip count apart ('ETA 0:00:00  1 skipped')" \
            grep -q 'ETA [0-9:]*  1 skipped' "$T/cv2.log"
    else
        skip "convert's progress line" "no script(1)"
    fi
else
    skip "convert" "no $DATA/photos"
fi

# ---- profile's advice names flags that exist ------------------------------------
"$SLIMRUN" train --help > "$T/th.txt"
"$SLIMRUN" convert --help > "$T/ch.txt" 2>&1
bad=
for f in $(grep -o -- '--[a-z_]*' "$top_srcdir/runtime/profile.c" | sort -u); do
    grep -q -- "$f" "$T/th.txt" "$T/ch.txt" || bad="$bad $f"
done
check "every --flag in profile's advice is one train or convert has:${bad:- all}" test -z "$bad"

tap_end
