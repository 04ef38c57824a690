#!/bin/sh
# tests/interop/test_torchvision.sh - torchvision classifiers exported by Debian's
# PyTorch (random weights, fixed seed: tests/interop/torch_export.py), imported by
# slim and compared with PyTorch's logits for a random batch: |slim - torch| <= 1e-4 x
# the largest |torch| (TAP). Between them the models take every mapping and idiom of
# the importer: batch norms kept trainable, Clip(0, 6), HardSigmoid + Mul (hard swish),
# Sigmoid + Mul (SiLU), squeeze-excitation, channel shuffle (Reshape, Transpose, Slice,
# folded Shape arithmetic), decomposed LayerNorm and GELU, MatMul + Add, Concat,
# grouped and depthwise convolutions. ResNet-18 goes through `slimrun import` and the
# model file + checkpoint, then fine-tunes a new 2-class head for two steps on photos
# from ../shared/data; ShuffleNet (whose export bakes its batch into reshapes),
# exported at batches of 2 and 1, is compared on a batch of 3. Exit 77 without /usr/bin/python3's torch and torchvision
# (apt-get install python3-torch python3-torchvision). tests/interop/coverage.py runs
# every classifier at opsets 11, 13 and 17.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
SLIMRUN=$top_builddir/tools/slimrun
PY=/usr/bin/python3
if ! $PY -c "import torch, torchvision, numpy" 2>/dev/null; then
    echo "1..0 # SKIP Debian's python3-torch / python3-torchvision are not installed"
    exit 0
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/slim-torchvision.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$top_srcdir/tests/tap.sh"

# close.py REF GOT: the logits agree within 1e-4 of the largest reference logit
cat > "$T/close.py" <<'PYEOF'
import sys
import numpy as np
y, s = np.load(sys.argv[1]), np.load(sys.argv[2])
d, m = float(np.abs(y - s).max()), float(np.abs(y).max())
print("max |torch| %.4g, max difference %.3g (%.2g relative)" % (m, d, d / m))
sys.exit(0 if y.shape == s.shape and d <= 1e-4 * m else 1)
PYEOF

# export MODEL OPSET SIZE [REF_BATCH [EXPORT_BATCH]]: into $T/MODEL-OPSET
export_model() {
    if $PY "$top_srcdir/tests/interop/torch_export.py" "$1" "$2" "$3" "${5:-2}" "$T/$1-$2" \
            --ref_batch="${4:-2}" > "$T/export.out" 2>&1; then
        ok "$1 opset $2: exported by PyTorch (${3}px, batch ${5:-2})"
        return 0
    fi
    not_ok "$1 opset $2: exported by PyTorch"
    sed 's/^/# /' "$T/export.out"
    return 1
}

# one MODEL OPSET SIZE [REF_BATCH [EXPORT_BATCH]]: export, predict on the .onnx, compare
one() {
    dir=$T/$1-$2
    export_model "$@" || return
    check "$1 opset $2: slim's logits (--model=model.onnx) match PyTorch's, batch ${4:-2}" sh -c "
        '$SLIMRUN' predict --model='$dir/model.onnx' --input_npy='$dir/x.npy' \
            --output_npy='$dir/s.npy' --num_threads=2 && $PY '$T/close.py' '$dir/y.npy' '$dir/s.npy'"
    rm -rf "$dir"
}

# ResNet-18 through slimrun import: the model file and its checkpoint
if export_model resnet18 13 64; then
    dir=$T/resnet18-13
    check "slimrun import resnet18: model.yaml and a checkpoint" sh -c "
        '$SLIMRUN' import '$dir/model.onnx' --out='$T/r18' --name=resnet18 &&
        test -s '$T/r18/model.yaml' && test -s '$T/r18/model.ckpt-0.slimckpt'"
    check "the model file: trainable batch norms, ONNX names as scopes, the head by num_classes" \
        sh -c "grep -q '^  - batch_norm: {name: layer4/1/bn2, decay: 0.9, epsilon: 1e-05, scale: true}' '$T/r18/model.yaml' &&
               grep -q '^  - conv2d: {name: layer4/1/conv2, num_outputs: 512, kernel_size: 3, padding: \[1, 1, 1, 1\], biases: none, activation: none}' '$T/r18/model.yaml' &&
               grep -q '^  - fully_connected: {name: fc, num_outputs: \$num_classes, activation: none}' '$T/r18/model.yaml'"
    check "resnet18 opset 13: the model file + checkpoint's logits match PyTorch's" sh -c "
        '$SLIMRUN' predict --model='$T/r18/model.yaml' --checkpoint_path='$T/r18' \
            --input_npy='$dir/x.npy' --output_npy='$dir/s.npy' && $PY '$T/close.py' '$dir/y.npy' '$dir/s.npy'"
    check "inspect lists resnet18/layer4/1/conv2 with its parameters" sh -c "
        '$SLIMRUN' inspect '$T/r18/model.yaml' --batch_size=2 --no_memory | grep -q '^layer4/1/conv2 *conv2d *(2,2,2,512) *2,359,296'"
    photos=${SLIM_SHARED_DATA:-$top_srcdir/../shared/data}/photos
    if [ -d "$photos" ]; then
        photos=$(cd "$photos" && pwd) # absolute: the links live in $T
        mkdir -p "$T/folder/pets" "$T/folder/raccoons"
        ln -s "$photos"/pets_examples_000*.jpg "$T/folder/pets/"
        ln -s "$photos"/raccoon_test_000*.jpg "$T/folder/raccoons/"
        check "fine-tune the imported resnet18: a new 2-class fc head, two steps on photos" sh -c "
            '$SLIMRUN' train --model='$T/r18/model.yaml' --checkpoint_path='$T/r18' \
                --checkpoint_exclude_scopes=resnet18/fc --file_pattern='$T/folder' --num_classes=2 \
                --train_dir='$T/ft' --max_number_of_steps=2 --batch_size=4 --train_image_size=64 \
                --preprocessing_name=torchvision --learning_rate=0.01 \
                --learning_rate_decay_type=fixed --num_threads=2 > '$T/train.out' 2>&1 &&
            grep -q 'excluded resnet18/fc/weights (512,1000)' '$T/train.out' &&
            grep -q 'final loss [0-9]' '$T/train.out' && test -s '$T/ft/model.ckpt-2.slimckpt'"
    else
        ok "# SKIP fine-tuning: no ../shared/data/photos"
    fi
    rm -rf "$dir"
fi

one mobilenet_v3_small 11 64      # HardSigmoid + Mul: hard swish and squeeze-excitation
one efficientnet_b0 13 64         # Sigmoid + Mul: SiLU; squeeze-excitation; depthwise
one shufflenet_v2_x0_5 17 64 3    # channel shuffle, Slice; its batch of 2 baked in reshapes
one shufflenet_v2_x0_5 13 64 3 1  # exported at batch 1 (baked in too), run at 3
one mobilenet_v2 17 64            # Clip(0, 6) = relu6; depthwise; residual adds
one squeezenet1_1 11 64           # Concat; the classifier a conv, pooled
one convnext_tiny 11 64           # decomposed LayerNorm and GELU; Transpose; MatMul + Add
tap_end
