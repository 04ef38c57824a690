#!/bin/sh
# tests/tools/newcomer.sh - what a new user hit (issue 31), as TAP:
# TF-Slim's boolean flags alone and as --noNAME, --save_summaries_secs noted
# like the other unused flags, `slimrun help CMD`, --set in train, eval,
# predict and bench (recorded in the checkpoint, reused by eval and predict
# with the training image size), predict without MODEL, eval's advice on a
# wrong --eval_image_size, no Recall_5 under 6 classes, convert making its
# output's parents and its progress line, and every flag profile's advice
# names being one train has; a flag's value never being the next flag
# (--trace alone is TRAIN_DIR/trace.json).
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

# ---- a flag's value never eats the next flag ------------------------------------
train --train_dir="$T/tr" --max_number_of_steps=3 --trace --trace_steps=2 > "$T/tr.log" 2>&1
check "train --trace --trace_steps=2: --trace alone writes TRAIN_DIR/trace.json of steps 1-2" \
    sh -c "test $? = 0 && grep -q 'trace of steps 1-2 to $T/tr/trace.json' '$T/tr.log' &&
           test -s '$T/tr/trace.json' && test ! -e ./--trace_steps=2"
train --max_number_of_steps=1 --trace > "$T/tr2.log" 2>&1
check "--trace alone without --train_dir: exit 2, says what to give" sh -c \
    "test $? = 2 && grep -q 'give --train_dir or --trace=FILE.json' '$T/tr2.log'"
train --train_dir --max_number_of_steps=1 > "$T/tr3.log" 2>&1
check "--train_dir followed by a flag: exit 2 naming both, not a directory '--max_...'" sh -c \
    "test $? = 2 && grep -q -- '--train_dir needs a value, and the next argument, --max_number_of_steps=1, is a flag' '$T/tr3.log' && test ! -e ./--max_number_of_steps=1"
"$SLIMRUN" eval --checkpoint_path --batch_size=2 > "$T/tr4.log" 2>&1
check "eval: the same rule (--checkpoint_path --batch_size=2: exit 2)" sh -c \
    "test $? = 2 && grep -q -- '--checkpoint_path needs a value, and the next argument' '$T/tr4.log'"
"$SLIMRUN" data decode --out --help > "$T/tr5.log" 2>&1
check "data decode: the same rule (--out --help: exit 2)" sh -c \
    "test $? = 2 && grep -q -- '--out needs a value, and the next argument, --help' '$T/tr5.log'"
"$SLIMRUN" inspect lenet --dot --batch_size=2 > "$T/tr6.log" 2>&1
check "inspect: the same rule (--dot --batch_size=2: exit 2)" sh -c \
    "test $? = 2 && grep -q -- '--dot needs a value (the next argument, --batch_size=2' '$T/tr6.log'"
"$SLIMRUN" eval --checkpoint_path=--nosuch --synthetic > "$T/tr7.log" 2>&1
check "a value starting with -- is still given with = (no checkpoint at --nosuch)" \
    grep -q -- "no checkpoint at --nosuch:" "$T/tr7.log"

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

# ---- messages that point the right way ------------------------------------------
J=$DATA/jpeg/libjpeg-turbo
if [ -f "$J/monkey12.jpg" ] && [ -f "$J/testorig.jpg" ]; then
    "$SLIMRUN" data decode "$J/monkey12.jpg" --out="$T/m.png" > "$T/j12.log" 2>&1
    check "a 12-bit JPEG: unsupported (not corrupt), what to do" sh -c \
        "test $? = 1 && grep -q 'unsupported JPEG (not 8-bit samples' '$T/j12.log' &&
         ! grep -q corrupt '$T/j12.log'"
    # a lossless JPEG's frame header: testorig.jpg with its first SOF0 marker made SOF3
    python3 -c "import sys; d = open(sys.argv[1], 'rb').read(); i = d.index(b'\xff\xc0')
open(sys.argv[2], 'wb').write(d[:i] + b'\xff\xc3' + d[i + 2:])" \
        "$J/testorig.jpg" "$T/lossless.jpg" 2> /dev/null ||
        { od -An -v -tx1 "$J/testorig.jpg" | tr -s ' \n' '\n\n' | grep . |
            awk 'prev == "ff" && $1 == "c0" && !done { $1 = "c3"; done = 1 } { prev = $1; print }' |
            while read -r b; do printf "\\$(printf %o "0x$b")"; done > "$T/lossless.jpg"; }
    "$SLIMRUN" data decode "$T/lossless.jpg" --out="$T/l.png" > "$T/jl.log" 2>&1
    check "a lossless JPEG (SOF3): unsupported, lossless named" sh -c \
        "test $? = 1 && grep -q 'unsupported JPEG (lossless' '$T/jl.log'"
    : > "$T/empty.jpg"
    "$SLIMRUN" data decode "$T/empty.jpg" --out="$T/e.png" > "$T/je.log" 2>&1
    check "a 0-byte file: 'an empty file', no invented bytes" sh -c \
        "test $? = 1 && grep -q 'empty.jpg: an empty file (0 bytes)' '$T/je.log' &&
         ! grep -q 'starting' '$T/je.log'"
    printf 'ab' > "$T/two.jpg"
    "$SLIMRUN" data decode "$T/two.jpg" --out="$T/e.png" > "$T/j2.log" 2>&1
    check "a 2-byte file: its 2 bytes only ('2 bytes, starting 61 62')" \
        grep -q '(2 bytes, starting 61 62)' "$T/j2.log"
    # truncated: the first 3000 bytes of testorig.jpg
    head -c 3000 "$J/testorig.jpg" > "$T/trunc.jpg"
    "$SLIMRUN" data decode "$T/trunc.jpg" --out="$T/t0.png" > "$T/t0.log" 2>&1
    check "a truncated JPEG fails by default (Premature end)" sh -c \
        "test $? = 1 && grep -q 'Premature end' '$T/t0.log' && test ! -e '$T/t0.png'"
    "$SLIMRUN" data decode "$T/trunc.jpg" --out="$T/t1.png" --try_recover_truncated \
        > "$T/t1.log" 2>&1
    check "--try_recover_truncated: decoded at full size (227x149), said truncated" sh -c \
        "test $? = 0 && grep -q '227x149, 3 channels' '$T/t1.log' &&
         grep -q 'truncated: the rows after the end of the data are gray' '$T/t1.log'"
    "$SLIMRUN" data decode "$J/testorig.jpg" --out="$T/t2.png" --try_recover_truncated \
        > "$T/t2.log" 2>&1
    check "--try_recover_truncated on a whole file: no truncation said" sh -c \
        "test $? = 0 && ! grep -q truncated '$T/t2.log'"
    # the same choice in train and eval: a truncated JPEG is a damaged record
    # (--on_error: stop naming it, or skip it), decoded only when the recipe's
    # decode step says try_recover_truncated, as tf.image.decode_jpeg's
    mkdir -p "$T/tf/a" "$T/tf/b"
    cp "$J/testorig.jpg" "$T/tf/a/o.jpg"
    cp "$DATA/jpeg/pillow/truncated_jpeg.jpg" "$T/tf/a/t.jpg"
    cp "$J/testimgint.jpg" "$T/tf/b/g.jpg"
    "$SLIMRUN" convert --input_dir="$T/tf" --dataset_dir="$T/tfr" --shards=1 > "$T/tfc.log" 2>&1
    "$SLIMRUN" convert --input_dir="$T/tf" --dataset_dir="$T/tfv" --verify_decode > "$T/tfv.log" 2>&1
    check "convert --verify_decode: the truncated JPEG stops it (exit 1), named" sh -c \
        "test $? = 1 && grep -q 'a/t.jpg: corrupt JPEG: Premature end of JPEG file' '$T/tfv.log'"
    tj() { "$SLIMRUN" train --model="$T/tiny.yaml" --dataset_dir="$T/tfr" --batch_size=3 \
        --max_number_of_steps=2 --num_threads=1 "$@"; }
    tj --train_dir="$T/tj1" --preprocessing_name=lenet > "$T/tj1.log" 2>&1
    check "train on a truncated JPEG: stops (exit 1) naming the record and 'Premature end'" \
        sh -c "test $? = 1 && grep -q 'record .*: corrupt JPEG: Premature end of JPEG file' '$T/tj1.log'"
    tj --train_dir="$T/tj2" --preprocessing_name=lenet --on_error=skip > "$T/tj2.log" 2>&1
    check "... with --on_error=skip: trained, the record skipped and counted" sh -c \
        "test $? = 0 && grep -q 'skipped [0-9]* damaged record' '$T/tj2.log'"
    sed 's/- decode: {channels: 1}/- decode: {channels: 1, try_recover_truncated: true}/' \
        "$top_srcdir/models/pipelines/lenet.yaml" > "$T/recover.yaml"
    tj --train_dir="$T/tj3" --preprocessing_name="$T/recover.yaml" > "$T/tj3.log" 2>&1
    check "... with a recipe whose decode has try_recover_truncated: true: trained, nothing skipped" \
        sh -c "test $? = 0 && ! grep -q skipped '$T/tj3.log'"
    "$SLIMRUN" eval --model="$T/tiny.yaml" --checkpoint_path="$T/tj3" --dataset_dir="$T/tfr" \
        --dataset_split_name=train --batch_size=3 --preprocessing_name=lenet > "$T/tj4.log" 2>&1
    check "eval: the same (stops at the truncated JPEG by default)" sh -c \
        "test $? = 1 && grep -q 'Premature end of JPEG file' '$T/tj4.log'"
    "$SLIMRUN" eval --model="$T/tiny.yaml" --checkpoint_path="$T/tj3" --dataset_dir="$T/tfr" \
        --dataset_split_name=train --batch_size=3 --preprocessing_name="$T/recover.yaml" \
        > "$T/tj5.log" 2>&1
    check "... and evaluates all 3 images with the recovering recipe" sh -c \
        "test $? = 0 && grep -q '3 images' '$T/tj5.log'"
else
    skip "JPEG messages" "no $J"
fi
printf '\010\001\022\004onnx\000\001\002' > "$T/model.bin"
"$SLIMRUN" inspect "$T/model.bin" > "$T/bin.log" 2>&1
check "a binary file given as a model: said to be binary (and where ONNX goes), not YAML" sh -c \
    "test $? != 0 && grep -q 'model.bin is a binary file, not a model file' '$T/bin.log' &&
     grep -q 'named \*.onnx' '$T/bin.log' && ! grep -q 'YAML syntax' '$T/bin.log'"
cp "$T/model.bin" "$T/model.onnx"
"$SLIMRUN" inspect "$T/model.onnx" > "$T/onnx.log" 2>&1
check "a damaged .onnx: the ONNX importer's message, not a YAML syntax error" sh -c \
    "test $? != 0 && grep -q 'not an ONNX model' '$T/onnx.log' && ! grep -q 'YAML' '$T/onnx.log'"
"$SLIMRUN" inspect "$T/s/model.ckpt-2.slimckpt" > "$T/ck.log" 2>&1
check "a checkpoint given as a model: said to be a checkpoint" \
    grep -q 'is a slim checkpoint, not a model file' "$T/ck.log"
printf 'name: T\nnum_classes: 10\nvars:\n  a: [1, 2\n  b: 3\nlayers: []\n' > "$T/flow.yaml"
"$SLIMRUN" inspect "$T/flow.yaml" > "$T/flow.log" 2>&1
check "an unclosed [ : reported at its line (4:6), not libyaml's next line" \
    grep -q 'flow.yaml:4:6: YAML syntax error: this \[ list is not closed' "$T/flow.log"
printf 'name: T\nvars:\n  a: "abc\n  b: 3\n' > "$T/quote.yaml"
"$SLIMRUN" inspect "$T/quote.yaml" > "$T/quote.log" 2>&1
check "an unclosed quote: reported where it opens (3:6)" \
    grep -q 'quote.yaml:3:6: YAML syntax error: this quoted string is not closed' "$T/quote.log"
printf 'name: T\nvars:\n  a: 1\n  b 2\n  c: 3\n' > "$T/colon.yaml"
"$SLIMRUN" inspect "$T/colon.yaml" > "$T/colon.log" 2>&1
check "a key without its ':': reported on its line (4:3), not the next" \
    grep -q "colon.yaml:4:3: YAML syntax error: no ':' after this key" "$T/colon.log"
printf 'model: %s\nsynthetic: true\nmax_number_of_steps: 1\nlearning_rat: 0.1\ntrain_dir: %s/r\n' \
    "$T/tiny.yaml" "$T" > "$T/run.yaml"
"$SLIMRUN" run "$T/run.yaml" > "$T/run.log" 2>&1
check "a run file's unknown flag: FILE:LINE:COL (4:1) and the suggestion" sh -c \
    "test $? = 2 &&
     grep -q 'run.yaml:4:1: unknown flag --learning_rat (did you mean --learning_rate?)' '$T/run.log'"
printf 'model: %s\nsynthetic: true\nbatch_size: many\n' "$T/tiny.yaml" > "$T/run2.yaml"
"$SLIMRUN" run "$T/run2.yaml" > "$T/run2.log" 2>&1
check "a run file's bad value: its line (3:1)" \
    grep -q 'run2.yaml:3:1: --batch_size=many: expected an integer' "$T/run2.log"
printf 'model: %s\ncommand: trian\n' "$T/tiny.yaml" > "$T/run5.yaml"
"$SLIMRUN" run "$T/run5.yaml" > "$T/run5.log" 2>&1
check "a run file's unknown command: its line (2:10)" sh -c "test $? = 2 &&
    grep -q \"run5.yaml:2:10: command 'trian': expected train or eval\" '$T/run5.log'"
printf 'model: %s\nsynthetic: true\noptimizer: adamx\ntrain_dir: %s/r5\n' "$T/tiny.yaml" "$T" \
    > "$T/run6.yaml"
"$SLIMRUN" run "$T/run6.yaml" > "$T/run6.log" 2>&1
check "a run file's value refused after parsing (optimizer: adamx): its line (3:1)" \
    grep -q 'run6.yaml:3:1: --optimizer=adamx: expected' "$T/run6.log"
printf 'synthetic: true\ntrain_dir: %s/r6\nmodel: %s/nosuch.yaml\n' "$T" "$T" > "$T/run7.yaml"
"$SLIMRUN" run "$T/run7.yaml" > "$T/run7.log" 2>&1
check "a run file's missing model file: its line (3:1)" \
    grep -q "run7.yaml:3:1: cannot open model file '$T/nosuch.yaml'" "$T/run7.log"
printf 'model: %s\nsynthetic: true\nbatch_size: 8\nmax_number_of_steps: 1\ntrain_dir: %s/r7\neval:\n  checkpoint_path: %s/nockpt\n' \
    "$T/tiny.yaml" "$T" "$T" > "$T/run8.yaml"
"$SLIMRUN" run "$T/run8.yaml" > "$T/run8.log" 2>&1
check "a run file's eval: section, a missing checkpoint: its line (7:3)" \
    grep -q "run8.yaml:7:3: no checkpoint at $T/nockpt" "$T/run8.log"
printf 'model: %s\nsynthetic: true\nset:\n  - width=4\nmax_number_of_steps: 1\ntrain_dir: %s/r3\n' \
    "$T/tiny.yaml" "$T" > "$T/run3.yaml"
"$SLIMRUN" run "$T/run3.yaml" --batch_size=8 > "$T/run3.log" 2>&1
check "a run file's set: list is --set (Tiny: 7890 parameters at width 4)" \
    grep -q 'Tiny: 7890 parameters' "$T/run3.log"
rm -rf "$T/r3"
"$SLIMRUN" run "$T/run3.yaml" --batch_size=8 --set width=2 > "$T/run4.log" 2>&1
check "--set after the run file replaces its width=4 (width 2: 3950 parameters)" \
    grep -q 'Tiny: 3950 parameters' "$T/run4.log"

# ---- fine-tuning with --trainable_scopes: the header and batch norm ---------------
printf '%s\n' 'name: BN' 'num_classes: 10' 'image_size: 12' 'channels: 1' 'layers:' \
    '  - conv2d:     {name: conv1, num_outputs: 4, kernel_size: 3, activation: none}' \
    '  - batch_norm: {name: conv1/BatchNorm}' \
    '  - relu:       {name: relu1}' \
    '  - flatten:    {name: Flatten}' \
    '  - fully_connected: {name: logits, num_outputs: $num_classes, activation: none}' \
    > "$T/bn.yaml"
bn() { "$SLIMRUN" train --model="$T/bn.yaml" --synthetic --batch_size=8 --seed=3 "$@"; }
bneval() {
    "$SLIMRUN" eval --checkpoint_path="$1" --synthetic --batch_size=8 --max_num_batches=2 2>&1 |
        sed -n 's/.*  loss \([0-9.]*\) .*/\1/p'
}
bn --train_dir="$T/bn0" --max_number_of_steps=3 --num_threads=1 > "$T/bn0.log" 2>&1
check "--num_threads=1: the header says the input worker goes over the budget" \
    grep -q '1 model thread + 1 input worker (2 threads on --num_threads=1 cores' "$T/bn0.log"
bn --train_dir="$T/bn1" --checkpoint_path="$T/bn0" --trainable_scopes=BN/logits \
    --learning_rate=1e-30 --max_number_of_steps=6 > "$T/bn1.log" 2>&1
check "--trainable_scopes=BN/logits: the header counts the head's 12*12*4*10+10 = 5770" \
    grep -q '5822 parameters (5770 trained: --trainable_scopes)' "$T/bn1.log"
check "... and says the batch norm outside is frozen, naming --train_frozen_batch_norm" sh -c \
    "grep -q 'frozen: [0-9]* batch-norm statistics tensors' '$T/bn1.log' &&
     grep -q -- '--train_frozen_batch_norm' '$T/bn1.log'"
bn --train_dir="$T/bn2" --checkpoint_path="$T/bn0" --trainable_scopes=BN/logits \
    --learning_rate=1e-30 --max_number_of_steps=6 --train_frozen_batch_norm > "$T/bn2.log" 2>&1
l0=$(bneval "$T/bn0")
l1=$(bneval "$T/bn1")
l2=$(bneval "$T/bn2")
check "learning rate 1e-30, frozen: the moving statistics kept (eval loss $l1 = $l0)" \
    test -n "$l0" -a "$l0" = "$l1"
check "--train_frozen_batch_norm: the moving averages updated (eval loss $l2 != $l0)" \
    test -n "$l2" -a "$l2" != "$l0"

# ---- slimrun plot ---------------------------------------------------------------
png_size() {
    od -An -tu1 -j16 -N8 "$1" | awk '{ print $1*16777216 + $2*65536 + $3*256 + $4,
                                             $5*16777216 + $6*65536 + $7*256 + $8 }'
}
if command -v gnuplot > /dev/null 2>&1; then
    train --train_dir="$T/pa" --max_number_of_steps=30 --log_every_n_steps=2 \
        --eval_every_n_steps=10 --plot > "$T/pa.log" 2>&1
    check "train --plot: draws --train_dir/metrics.png at the end (a 1200x750 PNG)" sh -c \
        "grep -q 'plot: $T/pa/metrics.png' '$T/pa.log' &&
         test \"\$(od -An -tx1 -N8 '$T/pa/metrics.png' | tr -d ' \n')\" = 89504e470d0a1a0a &&
         test \"$(png_size "$T/pa/metrics.png" 2> /dev/null)\" = '1200 750'"
    train --train_dir="$T/pb" --max_number_of_steps=30 --log_every_n_steps=2 \
        --learning_rate=0.05 > /dev/null 2>&1
    "$SLIMRUN" plot "$T/pa" "$T/pb" --out="$T/both.svg" --title="two runs" > "$T/pl.log" 2>&1
    check "plot RUN RUN --out=X.svg: exit 0, an SVG" sh -c \
        "test $? = 0 && grep -q '<svg' '$T/both.svg' && grep -q 'wrote $T/both.svg' '$T/pl.log'"
    check "... five panels: loss, accuracy, learning rate, images/s, input wait" sh -c \
        "for t in '>loss<' '>accuracy<' '>learning rate<' '>images/s<' '>input wait<'; do
             grep -q \"\$t\" '$T/both.svg' || exit 1; done"
    check "... both runs in the legend, the title, and the evaluations" sh -c \
        "grep -q '>pa<' '$T/both.svg' && grep -q '>pb<' '$T/both.svg' &&
         grep -q '>two runs<' '$T/both.svg' && grep -q '>eval<' '$T/both.svg'"
    check "... drawn: the SVG has line paths (over 20)" \
        test "$(grep -c '<path' "$T/both.svg")" -gt 20
    "$SLIMRUN" plot "$T/pa" --gnuplot="$T/no-such-gnuplot" > "$T/ng.log" 2>&1
    check "no gnuplot: exit 1, says what to install" sh -c \
        "test $? = 1 && grep -q 'apt-get install gnuplot-nox' '$T/ng.log'"
    mkdir -p "$T/notrun"
    "$SLIMRUN" plot "$T/notrun" > "$T/nr.log" 2>&1
    check "a folder without metrics.jsonl: exit 1, named" sh -c \
        "test $? = 1 && grep -q 'notrun has no metrics.jsonl' '$T/nr.log'"
    "$SLIMRUN" plot "$T/pa" --out="$T/x.jpg" > "$T/xj.log" 2>&1
    check "--out=x.jpg: a usage error (png or svg)" test $? = 2
else
    skip "slimrun plot" "no gnuplot (apt-get install gnuplot-nox)"
fi

# ---- colour: on a terminal only, never with NO_COLOR ------------------------------
if command -v script > /dev/null 2>&1; then
    esc=$(printf '\033')
    run_tty() { script -qec "$1" /dev/null > "$2" 2>&1; }
    run_tty "'$SLIMRUN' train --model='$T/tiny.yaml' --synthetic --batch_size=8 \
        --train_dir='$T/col1' --max_number_of_steps=2 --log_every_n_steps=1" "$T/col1.log"
    check "on a terminal: the progress line's loss in colour (ESC[1;36m)" \
        grep -q "${esc}\[1;36m" "$T/col1.log"
    run_tty "NO_COLOR=1 '$SLIMRUN' train --model='$T/tiny.yaml' --synthetic --batch_size=8 \
        --train_dir='$T/col2' --max_number_of_steps=2 --log_every_n_steps=1" "$T/col2.log"
    check "NO_COLOR=1 on a terminal: no colour (no ESC[...m)" sh -c \
        "grep -q 'step 2/2' '$T/col2.log' && ! grep -q '${esc}\[[0-9;]*m' '$T/col2.log'"
    run_tty "'$SLIMRUN' eval --checkpoint_path='$T/nowhere' --synthetic" "$T/col3.log"
    check "an error on a terminal: 'slimrun eval:' in red" grep -q "${esc}\[1;31mslimrun eval:" \
        "$T/col3.log"
    "$SLIMRUN" train --model="$T/tiny.yaml" --synthetic --batch_size=8 --train_dir="$T/col4" \
        --max_number_of_steps=2 --log_every_n_steps=1 > "$T/col4.log" 2>&1
    check "not a terminal: no escape sequences at all" sh -c \
        "grep -q 'step 2/2' '$T/col4.log' && ! grep -q '$esc' '$T/col4.log'"
else
    skip "colour" "no script(1)"
fi

# ---- the man page ---------------------------------------------------------------
if [ -f "$top_builddir/tools/slimrun.1" ]; then
    M=$top_builddir/tools/slimrun.1
    check "slimrun.1: a section-1 page with every command's flags (train, plot, --set)" sh -c \
        "grep -q '^\.TH SLIMRUN \"1\"' '$M' && grep -q 'slimrun train' '$M' &&
         grep -q 'slimrun plot' '$M' && grep -q 'train_image_size' '$M' &&
         grep -q 'NO_COLOR' '$M'"
else
    skip "the man page" "not built (configure without help2man)"
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
