#!/bin/sh
# tests/runtime/faults.sh - the faults a training run must survive, from the
# outside (TAP output):
#   - kill -9 before the first checkpoint, at random moments, while a
#     checkpoint is being written (its temporary file is there) and right
#     after one is saved; each time the
#     same command resumes, and the last checkpoint equals an uninterrupted
#     run's bit for bit (weights, optimizer slots, step); metrics.jsonl then
#     has one whole line per step;
#   - SIGINT and SIGTERM: stop after the step with a checkpoint, exit
#     128+signal; the rerun ends equal too;
#   - a full disk (a small tmpfs, when run as root; skipped otherwise):
#     saves fail cleanly, metrics and events keep whole lines and records,
#     no empty events file, no temporary file; with room again the run
#     resumes and ends equal;
#   - a bad --train_dir (a file, under a file, read-only): a clear error;
#   - damaged records: training stops naming the file and byte, or with
#     --on_error=skip counts and reports them and goes on;
#   - no temporary files are left behind.
#
# make check runs the short form (a few kills on LeNet). The long form:
#   tests/runtime/faults.sh --kills=60 --steps=300 --seed=$(date +%s)
# Flags: --kills=N (kill -9s: the first before any checkpoint, then cycling
# through the three other moments; default 4),
# --steps=N (the run's length; default 30), --seed=N (the kill times; default 1),
# --model_name=NAME (default lenet), --keep (keep the scratch folder).
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
SLIMRUN=$(cd "$(dirname "$top_builddir/tools/slimrun")" && pwd)/slimrun
TOOL=$top_builddir/tests/runtime/ckpt_tool
export SLIM_MODEL_PATH="$top_srcdir/models"
KILLS=4 STEPS=30 SEED=1 MODEL_NAME=lenet KEEP=
for a in "$@"; do
    case $a in
    --kills=*) KILLS=${a#*=} ;;
    --steps=*) STEPS=${a#*=} ;;
    --seed=*) SEED=${a#*=} ;;
    --model_name=*) MODEL_NAME=${a#*=} ;;
    --keep) KEEP=1 ;;
    *) echo "usage: $0 [--kills=N] [--steps=N] [--seed=N] [--model_name=NAME] [--keep]" >&2; exit 2 ;;
    esac
done
T=$(mktemp -d "${TMPDIR:-/tmp}/slim-faults.XXXXXX")
MOUNTS=
cleanup() {
    for m in $MOUNTS; do umount "$m" 2> /dev/null; done
    if [ -n "$KEEP" ]; then echo "# kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
. "$top_srcdir/tests/tap.sh"
has() { grep -q -- "$2" "$1"; }
now() { date +%s.%N; }
# a pseudo-random number in [lo, hi) from the seed and a counter
RNG=0
rand() {
    RNG=$((RNG + 1))
    awk -v s="$SEED" -v k="$RNG" -v lo="$1" -v hi="$2" \
        'BEGIN { srand(s * 7919 + k); for (i = 0; i < k % 7; i++) rand(); printf "%.3f", lo + (hi - lo) * rand() }'
}
# the steps of metrics.jsonl's training rows, in order
metric_steps() { grep -v eval_ "$1" | sed -n 's/^{"step": \([0-9]*\),.*}$/\1/p'; }
# one whole line per step 1..N (and no cut line)
one_row_per_step() {
    [ "$(metric_steps "$1" | tr '\n' ' ')" = "$(seq 1 "$2" | tr '\n' ' ')" ] &&
        [ "$(grep -vc '^{.*}$' "$1")" = 0 ]
}
no_temp_files() { ! ls -a "$1" | grep -q '\.tmp'; }

FLAGS="--model_name=$MODEL_NAME --synthetic --synthetic_examples=256 --batch_size=8
 --optimizer=momentum --learning_rate=0.01 --learning_rate_decay_type=fixed
 --save_interval_steps=10 --log_every_n_steps=1 --num_threads=2 --seed=7
 --max_number_of_steps=$STEPS"
train() { "$SLIMRUN" train $FLAGS "$@"; }
LAST=model.ckpt-$STEPS.slimckpt

# 1. the uninterrupted reference (its wall time spreads the random kills)
t0=$(now)
train --train_dir="$T/ref" > "$T/ref.log" 2>&1
rc=$?
t1=$(now)
REF_SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
if [ $rc -eq 0 ] && [ -f "$T/ref/$LAST" ]; then
    ok "the uninterrupted run: $MODEL_NAME, $STEPS steps in ${REF_SECS}s"; else
    not_ok "the uninterrupted run (exit $rc)"; sed 's/^/# /' "$T/ref.log"; tap_end; exit; fi

# 2. kill -9: before any checkpoint, at a random moment, during a checkpoint
# write, right after one
saves() { n=$(grep -c '^saved ' "$1" 2> /dev/null); echo "${n:-0}"; }
done_early=0 killed=0 i=0
: > "$T/kills.txt"
while [ $i -lt "$KILLS" ]; do
    mode=$(( i == 0 ? 3 : (i - 1) % 3 ))
    log="$T/k$i.log"
    "$SLIMRUN" train $FLAGS --train_dir="$T/k" > "$log" 2>&1 &
    pid=$!
    case $mode in
    3) # a few steps in, before the first checkpoint (the rerun starts over)
        what="without reaching step 3"
        while kill -0 $pid 2> /dev/null; do
            if grep -q '"step": 3,' "$T/k/metrics.jsonl" 2> /dev/null; then
                what="at step 3, before any checkpoint"; break; fi
            sleep 0.005
        done ;;
    0) # a random moment of the rest of the run: after a random step from
        # its newest checkpoint on (a step, not a time: a drawn time often
        # came after a resumed run on a loaded machine had ended, which ended
        # the kills), and a random part of a step's time more
        from=$(ls "$T/k" 2> /dev/null | grep -v tmp | grep -o 'ckpt-[0-9]*' | cut -d- -f2 |
            sort -n | tail -1)
        at=$(rand "${from:-0}" "$((STEPS - 1))" | cut -d. -f1)
        extra=$(rand 0 "$(awk -v s="$REF_SECS" -v n="$STEPS" 'BEGIN { printf "%.3f", s / n }')")
        what="without reaching step $at"
        while kill -0 $pid 2> /dev/null; do
            if grep -q "^step $at/" "$log" 2> /dev/null || [ "$at" = 0 ]; then
                sleep "$extra"; what="after step $at + ${extra}s"; break; fi
            sleep 0.005
        done ;;
    1) # while a checkpoint's temporary file is there
        what="without catching a checkpoint write"
        while kill -0 $pid 2> /dev/null; do
            if ls "$T/k" 2> /dev/null | grep -q '\.tmp-'; then what="during a checkpoint write"; break; fi
            sleep 0.005
        done ;;
    2) # right after a checkpoint is saved
        what="without a save"
        while kill -0 $pid 2> /dev/null; do
            if [ "$(saves "$log")" -gt 0 ]; then what="right after a save"; break; fi
            sleep 0.005
        done ;;
    esac
    kill -9 $pid 2> /dev/null
    { wait $pid; } 2> /dev/null
    rc=$?
    if [ $rc -eq 0 ]; then
        done_early=1
        echo "kill $i: the run had finished ($what)" >> "$T/kills.txt"
        break
    fi
    killed=$((killed + 1))
    echo "kill $i: $what (exit $rc; newest checkpoint: $(ls "$T/k" | grep -v tmp | grep -o 'ckpt-[0-9]*' | sort -t- -k2 -n | tail -1))" >> "$T/kills.txt"
    i=$((i + 1))
done
sed 's/^/# /' "$T/kills.txt"
train --train_dir="$T/k" > "$T/k-end.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ -f "$T/k/$LAST" ]; then
    ok "$killed kill -9s ($KILLS asked$([ $done_early = 1 ] && echo ', the run finished first')), each resumed; the last run ends"
else
    not_ok "killed $killed times, the last run (exit $rc)"; sed 's/^/# /' "$T/k-end.log"; fi
check "... its last checkpoint equals the uninterrupted run's bit for bit" \
    "$TOOL" same "$T/ref/$LAST" "$T/k/$LAST"
if one_row_per_step "$T/k/metrics.jsonl" "$STEPS"; then
    ok "metrics.jsonl: one whole line per step 1..$STEPS (the replayed steps once)"; else
    not_ok "metrics.jsonl rows after kills: $(metric_steps "$T/k/metrics.jsonl" | tr '\n' ' ')"; fi
if no_temp_files "$T/k"; then ok "no temporary file is left"; else
    not_ok "temporary files left: $(ls -a "$T/k" | grep tmp)"; fi

# 3. SIGINT and SIGTERM: the step finishes, a checkpoint, exit 128+signal
for sig in INT TERM; do
    d="$T/sig$sig"
    "$SLIMRUN" train $FLAGS --train_dir="$d" > "$d.log" 2>&1 &
    pid=$!
    while kill -0 $pid 2> /dev/null && ! grep -q '"step": 3,' "$d/metrics.jsonl" 2> /dev/null; do
        sleep 0.01
    done
    kill -$sig $pid 2> /dev/null
    { wait $pid; } 2> /dev/null
    rc=$?
    want=$([ $sig = INT ] && echo 130 || echo 143)
    if [ $rc -eq $want ] && has "$d.log" "stopped at step [0-9]*; checkpoint saved"; then
        ok "SIG$sig: stopped with a checkpoint, exit $rc"; else
        not_ok "SIG$sig (exit $rc, want $want)"; sed 's/^/# /' "$d.log"; fi
    train --train_dir="$d" > "$d-2.log" 2>&1
    check "... resumed, it ends equal to the uninterrupted run" "$TOOL" same "$T/ref/$LAST" "$d/$LAST"
done

# 4. a bad --train_dir: refused before a step, naming it
refused() {
    train --train_dir="$1" --max_number_of_steps=2 > "$T/bad.log" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && has "$T/bad.log" "$1" && ! has "$T/bad.log" "step 1"; then
        ok "$2 is refused before training: $(tail -1 "$T/bad.log")"; else
        not_ok "$2 (exit $rc)"; sed 's/^/# /' "$T/bad.log"; fi
}
: > "$T/afile"
refused "$T/afile" "--train_dir=FILE"
refused "$T/afile/sub" "--train_dir=FILE/sub"
mkdir -p "$T/ro"
ro_ok=
if [ "$(id -u)" = 0 ]; then
    mount -t tmpfs -o ro,size=64k tmpfs "$T/ro" 2> /dev/null && MOUNTS="$MOUNTS $T/ro" && ro_ok=1
else
    chmod 555 "$T/ro" && ro_ok=1
fi
if [ -n "$ro_ok" ]; then refused "$T/ro/run" "a read-only --train_dir"
else skip "a read-only --train_dir" "cannot make one here"; fi

# 5. damaged records: stop naming them, or skip them counted
"$TOOL" images "$T/png" 64 > /dev/null 2>&1 &&
    "$SLIMRUN" convert --input_dir="$T/png" --dataset_dir="$T/tfr" --dataset_name=tinyset \
        --shards=2 > "$T/conv.log" 2>&1
shard=$(ls "$T/tfr"/*train_00000-of-* 2> /dev/null | head -1)
if [ -n "$shard" ]; then
    size=$(wc -c < "$shard")
    # a byte in the middle of a record's payload (past the first record)
    printf '\001' | dd of="$shard" bs=1 seek=$((size / 2)) conv=notrunc 2> /dev/null
    DFLAGS="--model=$top_srcdir/tests/runtime/tiny.yaml --dataset_name=tinyset --dataset_dir=$T/tfr
     --preprocessing_name=lenet --batch_size=8 --max_number_of_steps=24 --optimizer=sgd
     --learning_rate_decay_type=fixed --num_threads=2"
    "$SLIMRUN" train $DFLAGS --train_dir="$T/dmg1" > "$T/dmg1.log" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && has "$T/dmg1.log" "train_00000-of-00002.tfrecord: record [0-9]* at byte [0-9]*: data CRC mismatch"
    then ok "a damaged record stops training, named with its file and byte"; else
        not_ok "a damaged record (exit $rc)"; sed 's/^/# /' "$T/dmg1.log"; fi
    "$SLIMRUN" train $DFLAGS --on_error=skip --train_dir="$T/dmg2" > "$T/dmg2.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && has "$T/dmg2.log" "skipped [0-9]* damaged record.*--on_error=skip.*e.g. .*train_00000-of-00002.tfrecord: record [0-9]* at byte"
    then ok "--on_error=skip: training goes on; $(grep -o 'skipped [0-9]* damaged records*' "$T/dmg2.log" | head -1)"
    else not_ok "--on_error=skip (exit $rc)"; sed 's/^/# /' "$T/dmg2.log"; fi
    "$SLIMRUN" train $DFLAGS --on_error=sometimes --train_dir="$T/dmg3" > "$T/dmg3.log" 2>&1
    rc=$?
    if [ $rc -eq 2 ] && has "$T/dmg3.log" "expected fail or skip"; then ok "--on_error takes fail or skip"
    else not_ok "--on_error=sometimes (exit $rc)"; sed 's/^/# /' "$T/dmg3.log"; fi
else
    not_ok "converting images for the damaged-record runs"; sed 's/^/# /' "$T/conv.log"
fi

# 6. a full disk: a tmpfs a few checkpoints big, filled after the first ones
TINY="--model=$top_srcdir/tests/runtime/tiny.yaml --synthetic --synthetic_examples=64
 --batch_size=8 --optimizer=rmsprop --learning_rate=0.02 --learning_rate_decay_type=fixed
 --moving_average_decay=0.9 --save_interval_steps=5 --log_every_n_steps=1 --num_threads=2 --seed=3"
"$SLIMRUN" train $TINY --max_number_of_steps=30 --train_dir="$T/tref" > "$T/tref.log" 2>&1
F="$T/full"
mkdir -p "$F"
csize=$(wc -c < "$T/tref/model.ckpt-30.slimckpt" 2> /dev/null || echo 0)
if [ "$(id -u)" != 0 ]; then
    skip "a full disk" "not root (a small tmpfs is mounted as root)"
elif [ "$csize" -eq 0 ] || ! mount -t tmpfs -o size=$(( (csize * 6 + 65536) / 1024 ))k tmpfs "$F" 2> /dev/null
then
    skip "a full disk" "cannot mount a tmpfs here"
else
    MOUNTS="$MOUNTS $F"
    "$SLIMRUN" train $TINY --max_number_of_steps=10 --train_dir="$F/run" > "$T/f1.log" 2>&1
    dd if=/dev/zero of="$F/filler" bs=4096 > /dev/null 2>&1 # until the disk is full
    # (past step 22 metrics.jsonl grows into a page the disk no longer has)
    "$SLIMRUN" train $TINY --max_number_of_steps=30 --train_dir="$F/run" > "$T/f2.log" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && has "$T/f2.log" "resuming from .*ckpt-10" &&
        has "$T/f2.log" "not written (earlier checkpoints are intact)" &&
        has "$T/f2.log" "its metrics are dropped until they can be written"; then
        ok "on a full disk: resumed, saves fail cleanly, metrics warned about (exit $rc)"; else
        not_ok "on a full disk (exit $rc)"; sed 's/^/# /' "$T/f2.log"; fi
    if [ -z "$(find "$F/run" -size 0)" ] && no_temp_files "$F/run" &&
        [ "$(grep -vc '^{.*}$' "$F/run/metrics.jsonl")" = 0 ]; then
        ok "... no empty file, no temporary file, metrics.jsonl has whole lines only"; else
        not_ok "files on the full disk"; ls -la "$F/run" | sed 's/^/# /'; fi
    check "... the step-10 checkpoint is intact" "$TOOL" verify "$F/run/model.ckpt-10.slimckpt"
    ok_events=1
    for e in "$F/run"/events.out.tfevents.*; do
        "$TOOL" records "$e" > /dev/null 2>&1 || ok_events=
    done
    if [ -n "$ok_events" ]; then ok "... every events file reads to its end (whole records)"; else
        not_ok "an events file ends in a cut record"; fi
    rm -f "$F/filler"
    "$SLIMRUN" train $TINY --max_number_of_steps=30 --train_dir="$F/run" > "$T/f3.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && has "$T/f3.log" "resuming from .*ckpt-10"; then
        ok "with room again, the run resumes from step 10 and ends"; else
        not_ok "with room again (exit $rc)"; sed 's/^/# /' "$T/f3.log"; fi
    check "... equal to the run that never saw a full disk" \
        "$TOOL" same "$T/tref/model.ckpt-30.slimckpt" "$F/run/model.ckpt-30.slimckpt"
    if one_row_per_step "$F/run/metrics.jsonl" 30; then ok "... metrics.jsonl: one line per step 1..30"
    else not_ok "metrics.jsonl after the full disk: $(metric_steps "$F/run/metrics.jsonl" | tr '\n' ' ')"; fi
fi

tap_end
