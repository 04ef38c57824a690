#!/bin/sh
# tests/interop/test_onnx_export.sh - slimrun export against slimrun predict (TAP).
#
# Zoo models get a checkpoint of random values that make every folding show
# (tests/interop/export_fixture: batch norm statistics, biases, and for LeNet
# moving averages that both commands must prefer); each is exported and run
# in ONNX Runtime (npm's onnxruntime-node, through tests/interop/ort_run.js)
# on a random batch of 3 (the dynamic batch is built at 2): its logits and
# probabilities match predict's logits and their softmax within 1e-4 of the
# largest. Variants: fixed batch, opsets 17 and 21, batch norm kept, NCHW input.
# Round trips: exported (NCHW or NHWC input, dynamic batch), then `slimrun
# import`ed, the model file + checkpoint give predict's logits again at a batch
# of 3, and the parameters their original names. Torchvision models imported from Debian's
# PyTorch (tests/interop/torch_export.py) are exported and run in ONNX Runtime
# against PyTorch's logits. Errors: an op without ONNX counterpart, bad flags.
#
# ONNX Runtime: $ORT_NODE_DIR/node_modules/onnxruntime-node, by default
# ${XDG_CACHE_HOME:-~/.cache}/slim/onnxruntime, where ./quickstart check puts it
# (`npm install --ignore-scripts onnxruntime-node` there). Without node or it,
# and without torch, those checks skip; the round trips always run.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
SLIMRUN=$top_builddir/tools/slimrun
FIX=$top_builddir/tests/interop/export_fixture
ORT_RUN=$top_srcdir/tests/interop/ort_run.js
ORT_NODE_DIR=${ORT_NODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/slim/onnxruntime}
export ORT_NODE_DIR
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/slim-onnx-export.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$top_srcdir/tests/tap.sh"

ort=
if command -v node > /dev/null 2>&1 &&
    node -e "require('$ORT_NODE_DIR/node_modules/onnxruntime-node')" > /dev/null 2>&1; then
    ort=yes
fi
why_no_ort="no node or onnxruntime-node in $ORT_NODE_DIR (./quickstart check installs it)"

# run_ort NAME DIR FILE.onnx X.npy REF.npy: ONNX Runtime's outputs against REF's logits
run_ort() {
    if [ -z "$ort" ]; then
        skip "$1: ONNX Runtime gives predict's logits and their softmax" "$why_no_ort"
        return
    fi
    check "$1: ONNX Runtime gives predict's logits and their softmax" sh -c "
        node '$ORT_RUN' '$3' '$4' '$2/ort' &&
        '$FIX' compare '$2/ort.logits.npy' '$5' 1e-4 &&
        '$FIX' compare '$2/ort.probabilities.npy' '$5' 1e-4 softmax"
}

# zoo MODEL SIZE CHANNELS [FIXTURE_ARGS]: the checkpoint, input and predict's logits in $T/MODEL
zoo() {
    md=$T/$1
    mkdir -p "$md"
    check "$1: a random checkpoint, a batch of 3 (${2}px) and predict's logits" sh -c "
        '$FIX' ckpt '$1' '$md' image_size=$2 $4 &&
        '$FIX' input 3 $2 $2 $3 '$md/x.npy' 1 &&
        '$FIX' nchw '$md/x.npy' '$md/x_nchw.npy' &&
        '$SLIMRUN' predict --model='$1' --checkpoint_path='$md' --image_size=$2 \
            --input_npy='$md/x.npy' --output_npy='$md/ref.npy' --num_threads=2"
}

# export MODEL SIZE TAG [FLAGS...]: $T/MODEL/TAG.onnx, run in ONNX Runtime
export_ort() {
    m=$1 s=$2 tag=$3
    shift 3
    md=$T/$m
    x=$md/x.npy
    case " $* " in *" --input_layout=NCHW "*) x=$md/x_nchw.npy ;; esac
    if check "$m: slimrun export ${*:-(dynamic batch, opset 13)}" "$SLIMRUN" export --model="$m" \
        --checkpoint_path="$md" --image_size="$s" --output="$md/$tag.onnx" "$@"; then
        run_ort "$m $tag" "$md" "$md/$tag.onnx" "$x" "$md/ref.npy"
    fi
}

# round_trip MODEL TAG [x]: $T/MODEL/TAG.onnx imported, predicted on (its input NCHW, or
# with x NHWC: the Transpose slim's export starts with makes the import take NHWC too)
round_trip() {
    md=$T/$1
    x=${3:-x_nchw}
    check "$1 $2: imported back, the model file + checkpoint give predict's logits" sh -c "
        '$SLIMRUN' import '$md/$2.onnx' --out='$md/rt-$2' > /dev/null &&
        '$SLIMRUN' predict --model='$md/rt-$2/model.yaml' --checkpoint_path='$md/rt-$2' \
            --input_npy='$md/$x.npy' --output_npy='$md/rt-$2.npy' &&
        '$FIX' compare '$md/rt-$2.npy' '$md/ref.npy' 1e-4"
}

# $T/names.sh MODEL TAG: the parameter names of $T/MODEL's checkpoint (names.a) and of
# its import rt-TAG's (names.b)
cat > "$T/names.sh" << EOF
"$SLIMRUN" ckpt ls "$T/\$1" | awk 'NR > 2 {print \$1}' | sort > "$T/names.a" &&
    "$SLIMRUN" ckpt ls "$T/\$1/rt-\$2" | awk 'NR > 2 {print \$1}' | sort > "$T/names.b"
EOF

# same_names MODEL TAG COUNT: exported with its batch norms kept, the import has the
# original's COUNT parameter names (depthwise_weights, gamma, moving_mean ... included)
same_names() {
    check "$1 $2: imported back, the checkpoint has the original's $3 parameter names" sh -c "
        sh '$T/names.sh' $1 $2 && test \$(wc -l < '$T/names.a') -eq $3 &&
        diff '$T/names.a' '$T/names.b'"
}

# folded_names MODEL TAG: exported with its batch norms folded, the import has the
# original's names but the batch norms' (and the constants standing in for absent
# scales), and LAYER/biases for each LAYER/BatchNorm folded into LAYER
folded_names() {
    check "$1 $2: imported back, folded batch norms are LAYER/biases, the rest keep names" sh -c "
        sh '$T/names.sh' $1 $2 &&
        { grep -v -e /BatchNorm/ -e '^slim_const/' '$T/names.a';
          sed -n 's|/BatchNorm/moving_mean\$|/biases|p' '$T/names.a'; } | sort > '$T/names.e' &&
        grep -q /BatchNorm/ '$T/names.a' && diff '$T/names.e' '$T/names.b'"
}

# has FILE.onnx OP COUNT: the file has COUNT nodes of type OP (0: none)
has() {
    "$FIX" ops "$1" > "$T/ops.txt" || return 1
    got=$(awk -v op="$2" '$1 == op {print $2}' "$T/ops.txt")
    [ "${got:-0}" -eq "$3" ] || { echo "$2: ${got:-0}, expected $3"; cat "$T/ops.txt"; return 1; }
}

# LeNet: fully connected layers, flatten, dropout; moving averages in the checkpoint
zoo lenet 28 1 --ema
export_ort lenet 28 dyn
check "lenet: no Dropout, no Transpose but the NHWC input's" sh -c "
    '$FIX' ops '$T/lenet/dyn.onnx' > '$T/lenet/ops.txt' && ! grep -q Dropout '$T/lenet/ops.txt' &&
    grep -q '^Transpose 1$' '$T/lenet/ops.txt' && grep -q '^Gemm 2$' '$T/lenet/ops.txt'"
round_trip lenet dyn x
export_ort lenet 28 b3 --batch=3
export_ort lenet 28 nchw --input_layout=NCHW --opset=17
round_trip lenet nchw
check "lenet: without --model, the model the checkpoint names (the same file)" sh -c "
    '$SLIMRUN' export --checkpoint_path='$T/lenet' --output='$T/lenet/named.onnx' &&
    cmp '$T/lenet/named.onnx' '$T/lenet/dyn.onnx'"
check "lenet: --use_ema=false exports other weights than predict's (the moving averages')" sh -c "
    '$SLIMRUN' export --model=lenet --checkpoint_path='$T/lenet' --output='$T/lenet/raw.onnx' \
        --use_ema=false && ! cmp -s '$T/lenet/raw.onnx' '$T/lenet/dyn.onnx'"

# From a TensorFlow checkpoint: LeNet's converted to V2, exported from its prefix
mkdir -p "$T/lenet/tf"
if check "lenet: exported from a TensorFlow V2 checkpoint (slimrun ckpt convert)" sh -c "
    '$SLIMRUN' ckpt convert '$T/lenet/model.ckpt-0.slimckpt' '$T/lenet/tf/model.ckpt-0' &&
    '$SLIMRUN' export --model=lenet --checkpoint_path='$T/lenet/tf/model.ckpt-0' \
        --output='$T/lenet/tf.onnx'"; then
    run_ort "lenet tf" "$T/lenet" "$T/lenet/tf.onnx" "$T/lenet/x.npy" "$T/lenet/ref.npy"
fi

# CifarNet: LRN (TensorFlow's alpha is per sum, ONNX's per mean)
zoo cifarnet 32 3
export_ort cifarnet 32 dyn

# MobileNets: depthwise convolutions, relu6, folded batch norms, residual adds
zoo mobilenet_v1 128 3
export_ort mobilenet_v1 128 dyn
check "mobilenet_v1: every batch norm folded" has "$T/mobilenet_v1/dyn.onnx" BatchNormalization 0
round_trip mobilenet_v1 dyn x
folded_names mobilenet_v1 dyn
export_ort mobilenet_v1 128 kept --nofold_batch_norm --opset=21
check "mobilenet_v1: --nofold_batch_norm keeps 27 BatchNormalization nodes" \
    has "$T/mobilenet_v1/kept.onnx" BatchNormalization 27
round_trip mobilenet_v1 kept x
same_names mobilenet_v1 kept 137
zoo mobilenet_v2 96 3
export_ort mobilenet_v2 96 nchw --input_layout=NCHW
check "mobilenet_v2: an NCHW input needs no Transpose" has "$T/mobilenet_v2/nchw.onnx" Transpose 0
round_trip mobilenet_v2 nchw
folded_names mobilenet_v2 nchw
export_ort mobilenet_v2 96 kept --nofold_batch_norm --input_layout=NCHW
round_trip mobilenet_v2 kept
same_names mobilenet_v2 kept 262

# ResNets: v1's bottlenecks; v2's pre-activation batch norms stay BatchNormalization
zoo resnet_v1_50 64 3
export_ort resnet_v1_50 64 dyn
# Parameter names round trip: the export's graph is named after the scope, the import
# strips slim's suffixes (.../weights is the layer ..., not .../weights/weights)
export_ort resnet_v1_50 64 kept --nofold_batch_norm --input_layout=NCHW
round_trip resnet_v1_50 kept
same_names resnet_v1_50 kept 267
check "resnet_v1_50 kept: ckpt diff restores all 267 from the import" sh -c "
    '$SLIMRUN' ckpt diff resnet_v1_50 '$T/resnet_v1_50/rt-kept' --image_size=64 |
        grep -q 'would restore 267 of 267 parameters'"
zoo resnet_v2_50 64 3
export_ort resnet_v2_50 64 nchw --input_layout=NCHW --opset=17
round_trip resnet_v2_50 nchw

# Inception v2: concatenations, SAME average pooling, a separable convolution (one
# separable_conv2d layer again after the import), batch norms without scale
zoo inception_v2 96 3
export_ort inception_v2 96 dyn
export_ort inception_v2 96 kept --nofold_batch_norm --input_layout=NCHW
round_trip inception_v2 kept
same_names inception_v2 kept 287

# Graphs built in C that use every op the exporter maps (tests/interop/export_graphs.c):
# ONNX Runtime at opsets 13, 17 and 20 and a dynamic batch; imported back (the dynamic
# one also at a batch of 3, other than the 2 it is built and run at)
mkdir -p "$T/graphs"
if check "graphs using every mapped op: built, run and exported" "$FIX" graphs "$T/graphs"; then
    for g in conv act shape; do
        for v in 13 17 20 dyn; do
            f=$T/graphs/$g-$v.onnx
            if [ -n "$ort" ]; then
                check "graph $g-$v: ONNX Runtime gives slim's logits" sh -c "
                    node '$ORT_RUN' '$f' '$T/graphs/$g.x.npy' '$T/graphs/ort' &&
                    '$FIX' compare '$T/graphs/ort.logits.npy' '$T/graphs/$g.ref.npy' 1e-4"
            else
                skip "graph $g-$v: ONNX Runtime gives slim's logits" "$why_no_ort"
            fi
            check "graph $g-$v: imported back (predict --model=$g-$v.onnx), slim's logits" sh -c "
                '$SLIMRUN' predict --model='$f' --input_npy='$T/graphs/$g.x.npy' \
                    --output_npy='$T/graphs/rt.npy' &&
                '$FIX' compare '$T/graphs/rt.npy' '$T/graphs/$g.ref.npy' 1e-4"
        done
        # the dynamic batch imported (slimrun import), run at a batch of 3: the batch
        # axis stays the batch through the reshapes and transposes
        check "graph $g-dyn: imported, its model file at a batch of 3 gives slim's logits" sh -c "
            '$FIX' rows '$T/graphs/$g.x.npy' '$T/graphs/x3.npy' 3 &&
            '$FIX' rows '$T/graphs/$g.ref.npy' '$T/graphs/ref3.npy' 3 &&
            '$SLIMRUN' import '$T/graphs/$g-dyn.onnx' --out='$T/graphs/$g-dyn' > /dev/null &&
            '$SLIMRUN' predict --model='$T/graphs/$g-dyn/model.yaml' \
                --checkpoint_path='$T/graphs/$g-dyn' --input_npy='$T/graphs/x3.npy' \
                --output_npy='$T/graphs/rt3.npy' &&
            '$FIX' compare '$T/graphs/rt3.npy' '$T/graphs/ref3.npy' 1e-4"
    done
fi

# A plugin op that declared its ONNX op type (plugins/swish.c: Swish) is written as it
swish=$(cd "$top_builddir" && pwd)/plugins/.libs/swish.so
if [ -f "$swish" ]; then
    mkdir -p "$T/swish"
    cat > "$T/swish.yaml" << EOF
name: sw
num_classes: 4
image_size: 8
channels: 3
plugins: [$swish]
layers:
  - conv2d: {name: conv, num_outputs: 6, kernel_size: 3, activation: {swish: {beta: 1.5}}}
  - global_avg_pool: {name: pool, keep_dims: false}
  - fully_connected: {name: fc, num_outputs: 4, activation: none}
EOF
    check "a plugin op with an ONNX op type: a Swish node, imported back with the plugin" sh -c "
        '$FIX' ckpt '$T/swish.yaml' '$T/swish' && '$FIX' input 2 8 8 3 '$T/swish/x.npy' 3 &&
        '$FIX' nchw '$T/swish/x.npy' '$T/swish/x_nchw.npy' &&
        '$SLIMRUN' predict --model='$T/swish.yaml' --checkpoint_path='$T/swish' \
            --input_npy='$T/swish/x.npy' --output_npy='$T/swish/ref.npy' &&
        '$SLIMRUN' export --model='$T/swish.yaml' --checkpoint_path='$T/swish' --batch=2 \
            --input_layout=NCHW --output='$T/swish/m.onnx' &&
        '$FIX' ops '$T/swish/m.onnx' | grep -q '^Swish 1$' &&
        '$SLIMRUN' predict --model='$T/swish/m.onnx' --plugin='$swish' \
            --input_npy='$T/swish/x_nchw.npy' --output_npy='$T/swish/rt.npy' &&
        '$FIX' compare '$T/swish/rt.npy' '$T/swish/ref.npy' 1e-4"
else
    skip "a plugin op with an ONNX op type: a Swish node" "$swish not built"
fi

# Imported torchvision models, exported again, against PyTorch's logits
# torch_model NAME OPSET REF_BATCH [FLAGS...]
torch_model() {
    name=$1 opset=$2 rb=$3
    shift 3
    md=$T/tv-$name
    if [ -z "$ort" ]; then
        skip "$name (torchvision, imported): exported, ONNX Runtime gives PyTorch's logits" \
            "$why_no_ort"
        return
    fi
    if ! $PY -c "import torch, torchvision" 2> /dev/null; then
        skip "$name (torchvision, imported): exported, ONNX Runtime gives PyTorch's logits" \
            "Debian's python3-torch / python3-torchvision are not installed"
        return
    fi
    check "$name (torchvision, imported): exported, ONNX Runtime gives PyTorch's logits" sh -c "
        $PY '$top_srcdir/tests/interop/torch_export.py' $name $opset 64 2 '$md' --ref_batch=$rb &&
        '$SLIMRUN' export --model='$md/model.onnx' --output='$md/e.onnx' --opset=$opset $* &&
        node '$ORT_RUN' '$md/e.onnx' '$md/x.npy' '$md/ort' &&
        '$FIX' compare '$md/ort.logits.npy' '$md/y.npy' 1e-4"
    rm -rf "$md"
}
torch_model convnext_tiny 17 2            # layer_norm, gelu, transpose, matmul
torch_model mobilenet_v3_small 13 3       # hard_swish (decomposed at 13), squeeze-excitation

# Errors
cat > "$T/sym.yaml" << 'EOF'
name: sym
num_classes: 4
image_size: 8
channels: 1
layers:
  - pad: {name: mirror, paddings: [0, 0, 1, 1, 1, 1, 0, 0], mode: SYMMETRIC}
  - conv2d: {name: conv, num_outputs: 4, kernel_size: 3, padding: VALID}
  - global_avg_pool: {name: pool, keep_dims: false}
EOF
mkdir -p "$T/sym"
check "a pad mode ONNX lacks: the error names the op, the node and the mode" sh -c "
    '$FIX' ckpt '$T/sym.yaml' '$T/sym' &&
    ! '$SLIMRUN' export --model='$T/sym.yaml' --checkpoint_path='$T/sym' \
        --output='$T/sym/m.onnx' 2> '$T/sym/err' &&
    grep -q \"pad 'sym/mirror': pad mode SYMMETRIC has no ONNX counterpart\" '$T/sym/err' &&
    test ! -e '$T/sym/m.onnx'"
check "ops ONNX lacks: one error lists every node (op and name), SLIM_EUNSUPPORTED" sh -c "
    '$FIX' unsupported > '$T/unsup' &&
    grep -q \"2 nodes have no ONNX counterpart: l2_loss 'l2', softmax_cross_entropy 'xent'\" '$T/unsup'"
check "--opset=12 is refused, naming the opsets written" sh -c "
    ! '$SLIMRUN' export --model=lenet --checkpoint_path='$T/lenet' --output='$T/x.onnx' \
        --opset=12 2> '$T/err' && grep -q 'opset 12: slim writes opsets 13 to 21' '$T/err'"
check "--batch=0 and --input_layout=NCWH are usage errors" sh -c "
    '$SLIMRUN' export --model=lenet --checkpoint_path='$T/lenet' --output='$T/x.onnx' \
        --batch=0 2> /dev/null; test \$? -eq 2 &&
    '$SLIMRUN' export --model=lenet --checkpoint_path='$T/lenet' --output='$T/x.onnx' \
        --input_layout=NCWH 2> /dev/null; test \$? -eq 2"
tap_end
