#!/bin/sh
# tests/data/data_cli.sh - `slimrun data decode` from the command line (TAP):
# the size line and the PNG it writes (PNG signature and IHDR size), DCT
# scaling, the decoder settings (tf.image.decode_jpeg's dct_method and
# fancy_upscaling: other pixels, same size), and the errors: a bad setting
# (usage, exit 2), a truncated JPEG (names the file, exit 1, no output file);
# `slimrun convert` of a folder stores restart-indexed JPEGs (data info counts
# them, a preview from them equals one from --nojpeg_restart shards), and
# --input_records rewrites TensorFlow-written shards the same way.
# Needs ../shared/data (or SLIM_SHARED_DATA); skips (a "1..0 # SKIP" plan) without it.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
SLIMRUN=$top_builddir/tools/slimrun
DATA=${SLIM_SHARED_DATA:-$top_srcdir/../shared/data}
if [ ! -f "$DATA/MANIFEST.md" ]; then
    echo "1..0 # SKIP ../shared/data is absent"
    exit 0 # the TAP driver counts a "1..0 # SKIP" plan as skipped (77 would be an error here)
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/slim-datacli.XXXXXX")
trap 'rm -rf "$T"' EXIT

. "$top_srcdir/tests/tap.sh"
# png_size FILE: "WIDTH HEIGHT" from the IHDR chunk, after the 8-byte signature
png_size() {
    od -An -tu1 -j16 -N8 "$1" | awk '{ print $1*16777216 + $2*65536 + $3*256 + $4,
                                             $5*16777216 + $6*65536 + $7*256 + $8 }'
}
png_sig() { od -An -tx1 -N8 "$1" | tr -d ' \n'; }

J=$DATA/jpeg/libjpeg-turbo/testorig.jpg
"$SLIMRUN" data decode "$J" --out="$T/a.png" > "$T/a.txt" 2>&1
rc=$?
check "decode testorig.jpg: exit 0" test $rc = 0
check "the size line: 227x149, 3 channels" grep -q 'testorig.jpg: 227x149, 3 channels' "$T/a.txt"
check "a PNG file (signature 89 50 4e 47 0d 0a 1a 0a)" test "$(png_sig "$T/a.png")" = 89504e470d0a1a0a
check "the PNG is 227x149" test "$(png_size "$T/a.png")" = "227 149"

"$SLIMRUN" data decode "$J" --out="$T/h.png" --scale_denom=2 > "$T/h.txt" 2>&1
check "--scale_denom=2: exit 0, 114x75 (libjpeg's ceil(227/2) x ceil(149/2))" grep -q '114x75' "$T/h.txt"
check "... the PNG is 114x75" test "$(png_size "$T/h.png")" = "114 75"

"$SLIMRUN" data decode "$J" --out="$T/f.png" --dct_method=INTEGER_FAST --fancy_upscaling=false \
    > "$T/f.txt" 2>&1
rc=$?
check "INTEGER_FAST, fancy_upscaling=false: exit 0" test $rc = 0
check "... the same size" test "$(png_size "$T/f.png")" = "227 149"
check "... and other pixels than the accurate decode" sh -c "! cmp -s '$T/a.png' '$T/f.png'"
"$SLIMRUN" data decode "$J" --out="$T/a2.png" --dct_method=INTEGER_ACCURATE > /dev/null 2>&1
check "INTEGER_ACCURATE is the default (the same file)" cmp -s "$T/a.png" "$T/a2.png"

"$SLIMRUN" data decode "$J" --out="$T/x.png" --dct_method=FLOAT > "$T/x.txt" 2>&1
rc=$?
check "--dct_method=FLOAT: exit 2" test $rc = 2
check "... with the expected values named" grep -q -- \
    '--dct_method=FLOAT: expected INTEGER_ACCURATE or INTEGER_FAST' "$T/x.txt"
check "... and no output file" test ! -e "$T/x.png"

B=$DATA/jpeg/pillow/truncated_jpeg.jpg
"$SLIMRUN" data decode "$B" --out="$T/b.png" > "$T/b.txt" 2>&1
rc=$?
check "a truncated JPEG: exit 1" test $rc = 1
check "... the error names the file" grep -q 'truncated_jpeg.jpg' "$T/b.txt"
check "... and no output file" test ! -e "$T/b.png"

# convert: restart-indexed by default, the source bytes with --nojpeg_restart
mkdir -p "$T/in/a" "$T/in/b"
cp "$J" "$T/in/a/1.jpg"
cp "$DATA/jpeg/pillow/hopper.jpg" "$T/in/a/2.jpg"
cp "$DATA/jpeg/libjpeg-turbo/testimgp.jpg" "$T/in/b/3.jpg"
cp "$DATA/jpeg/pillow/iptc.jpg" "$T/in/b/4.jpg"
"$SLIMRUN" convert --input_dir="$T/in" --dataset_dir="$T/idx" --shards=1 > /dev/null 2>&1
check "convert: exit 0" test $? = 0
"$SLIMRUN" data info "$T"/idx/train-* --verify > "$T/i.txt" 2>&1
rc=$?
check "data info --verify: exit 0" test $rc = 0
check "... 4 JPEGs, all restart-indexed" grep -q 'formats: JPEG 4 (4 restart-indexed)' "$T/i.txt"
"$SLIMRUN" convert --input_dir="$T/in" --dataset_dir="$T/plain" --shards=1 --nojpeg_restart \
    > /dev/null 2>&1
"$SLIMRUN" data info "$T"/plain/train-* > "$T/p.txt" 2>&1
check "--nojpeg_restart: none indexed" grep -q 'formats: JPEG 4 (0 restart-indexed)' "$T/p.txt"
"$SLIMRUN" data preview --pipeline=inception "$T"/idx/train-* --out="$T/g1.png" --num=8 \
    > /dev/null 2>&1
"$SLIMRUN" data preview --pipeline=inception "$T"/plain/train-* --out="$T/g2.png" --num=8 \
    > /dev/null 2>&1
check "inception training crops from both: the same preview, byte for byte" \
    sh -c "test -s '$T/g1.png' && cmp -s '$T/g1.png' '$T/g2.png'"

# --input_records on shards TensorFlow wrote: JPEGs indexed, the same crops; PNG shard as it was
TF=$DATA/tfrecord
"$SLIMRUN" convert --input_records="$TF/tensorflow_c_testdata_tf_record,$TF/slim_gan_cifar10_train.tfrecord" \
    --dataset_dir="$T/tfre" > "$T/r.txt" 2>&1
rc=$?
check "--input_records on TensorFlow-written shards: exit 0" test $rc = 0
check "... 3 JPEGs restart-indexed, 1 record kept" \
    grep -q '3 JPEGs restart-indexed, 1 records kept' "$T/r.txt"
check "... the PNG shard is copied byte for byte" \
    cmp -s "$TF/slim_gan_cifar10_train.tfrecord" "$T/tfre/slim_gan_cifar10_train.tfrecord"
"$SLIMRUN" data preview --pipeline=inception "$TF/tensorflow_c_testdata_tf_record" \
    --out="$T/t1.png" --num=6 > /dev/null 2>&1
"$SLIMRUN" data preview --pipeline=inception "$T/tfre/tensorflow_c_testdata_tf_record" \
    --out="$T/t2.png" --num=6 > /dev/null 2>&1
check "... and the same inception preview as the original" \
    sh -c "test -s '$T/t1.png' && cmp -s '$T/t1.png' '$T/t2.png'"

tap_end
