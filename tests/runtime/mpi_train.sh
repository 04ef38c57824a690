#!/bin/sh
# tests/runtime/mpi_train.sh - slimrun train across processes (mpirun -np 2):
#   equivalence: 2 processes x batch 8 against 1 process x batch 16, same data
#   and seed (the TFRecord pipeline shuffled over several epochs; batch norm
#   synchronized; dropout), weights after 20 steps within float tolerance, and
#   two runs with 2 processes bit-identical; LeNet without batch norm alike;
#   faults: kill -9 of rank 1 mid-run and of rank 0 while it writes a
#   checkpoint end the job within the timeout, and the same command resumes
#   to the bits of an uninterrupted run; a rank that hangs (SIGSTOP) or
#   straggles ends every rank with a message naming it and the step; SIGTERM
#   to one rank stops both after the same step with a checkpoint; resuming
#   with another number of processes; diverged weights (a process with
#   other flags) are caught by the checksum; the trace has every rank's
#   allreduce spans; TF-Slim's distribution flags say what they map onto.
# Skips (77) without mpirun or in a build without MPI; in a build without
# MPI it checks instead that a process a launcher started as one of several
# refuses to train. TAP output.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
SLIMRUN=$top_builddir/tools/slimrun
TOOL=$top_builddir/tests/runtime/ckpt_tool
MODEL=$top_srcdir/tests/runtime/tiny.yaml
T=$(mktemp -d "${TMPDIR:-/tmp}/slim-mpi.XXXXXX")
trap 'rm -rf "$T"' EXIT
export SLIM_MODEL_PATH="$top_srcdir/models"
. "$top_srcdir/tests/tap.sh"
has() { grep -q -- "$2" "$1"; }
show() { sed 's/^/# /' "$@"; }

if ! grep -q "define SLIM_HAVE_MPI 1" "$top_builddir/config.h" 2>/dev/null; then
    # a build without MPI, started as one of several processes
    OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 "$SLIMRUN" train --model="$MODEL" --synthetic \
        --max_number_of_steps=2 --train_dir="$T/x" > "$T/x.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ] && has "$T/x.log" "built without MPI" && [ ! -d "$T/x" ]; then
        ok "without MPI, a process mpirun starts as 1 of 2 refuses to train"
    else not_ok "without MPI under a launcher (exit $rc)"; show "$T/x.log"; fi
    tap_end
    exit $?
fi
MPIRUN=$(command -v mpirun) || { echo "1..0 # SKIP mpirun not found (apt-get install openmpi-bin)"; exit 0; }
# Open MPI refuses root unless told; the tests may run on one core; no
# InfiniBand probing; shared memory without the ptrace-based copy (containers).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader,tcp
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi2() { timeout 300 "$MPIRUN" -np 2 "$SLIMRUN" train "$@"; }
# with --enable-sanitizers: Open MPI's own allocations at exit are not slim's
# leaks (full stacks, so that the suppressions see the MPI frames)
export LSAN_OPTIONS="suppressions=$top_srcdir/tests/runtime/lsan-mpi.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
unset SLIM_TEST_RANK SLIM_TEST_CRASH_AFTER_STEP SLIM_TEST_STOP_AFTER_STEP SLIM_TEST_HANG_AFTER_STEP

# data: 96 PNGs in 4 classes, as 2 TFRecord shards; 20 steps of 16 are 3.3 epochs
"$TOOL" images "$T/png" 96 > /dev/null 2>&1 &&
    "$SLIMRUN" convert --input_dir="$T/png" --dataset_dir="$T/tfr" --dataset_name=tinyset \
        --shards=2 > "$T/conv.log" 2>&1 || { show "$T/conv.log"; exit 1; }
P="--model=$MODEL --dataset_name=tinyset --dataset_dir=$T/tfr --preprocessing_name=lenet
 --max_number_of_steps=20 --optimizer=momentum --learning_rate=0.02 --num_epochs_per_decay=1
 --save_interval_steps=10 --num_threads=2 --seed=3 --collective_timeout=60"

# 1. equivalence with one process of the global batch
"$SLIMRUN" train $P --batch_size=16 --train_dir="$T/one" > "$T/one.log" 2>&1
start=$(date +%s)
mpi2 $P --batch_size=8 --sync_batch_norm --train_dir="$T/two" > "$T/two.log" 2>&1
rc=$?
# the kill and hang checks below allow a whole run of this length (start-up and 20
# steps, slower on a loaded machine) twice, plus 40 s (the timeout is 5 s)
base=$(($(date +%s) - start))
if [ $rc -eq 0 ] && [ -f "$T/two/model.ckpt-20.slimckpt" ] &&
    has "$T/two.log" "batch 8 per process x 2 processes = global batch 16"; then
    ok "2 processes x batch 8 train 20 steps (the log says the global batch)"
else not_ok "2 processes x batch 8 (exit $rc)"; show "$T/two.log"; fi
check "... the same weights, slots and statistics as 1 process x batch 16 (float tolerance)" \
    "$TOOL" close "$T/one/model.ckpt-20.slimckpt" "$T/two/model.ckpt-20.slimckpt" 1e-4
mpi2 $P --batch_size=8 --sync_batch_norm --train_dir="$T/two2" > "$T/two2.log" 2>&1
check "... and a second run of 2 processes gives the same bits" \
    "$TOOL" same "$T/two/model.ckpt-20.slimckpt" "$T/two2/model.ckpt-20.slimckpt"
if [ "$(grep -c '^step ' "$T/two.log")" -eq 2 ] && ! has "$T/two.log" "rank 1"; then
    ok "rank 0 alone prints progress"; else not_ok "rank 0 alone prints"; show "$T/two.log"; fi
if [ -f "$T/two/metrics.jsonl" ] && has "$T/two/metrics.jsonl" '"processes": 2' &&
    has "$T/two/metrics.jsonl" '"comm_wait"' && has "$T/two/metrics.jsonl" '"allreduce_seconds"'; then
    ok "metrics.jsonl says 2 processes and the communication wait"
else not_ok "metrics.jsonl across processes"; show "$T/two/metrics.jsonl"; fi
# the communication thread's share: some CPU (never more than the process's),
# at least one pass per step (every step has collectives)
if [ -f "$T/two/metrics.jsonl" ] && awk '
    { c = $0; sub(/.*"cpu_seconds": /, "", c); c += 0
      x = $0; if (!sub(/.*"comm_cpu_seconds": /, "", x)) exit 1; x += 0
      p = $0; if (!sub(/.*"comm_polls": /, "", p)) exit 1; p += 0
      if (!(x > 0 && x < c && p >= 1)) exit 1; n++ }
    END { exit n ? 0 : 1 }' "$T/two/metrics.jsonl"; then
    ok "metrics.jsonl: the communication thread's CPU seconds and passes per step"
else not_ok "comm_cpu_seconds / comm_polls"; show "$T/two/metrics.jsonl"; fi

# LeNet (no batch norm: no statistics to synchronize), momentum, synthetic data
L="--model_name=lenet --synthetic --synthetic_examples=96 --max_number_of_steps=20
 --optimizer=momentum --learning_rate=0.001 --num_threads=1 --seed=5 --save_interval_steps=20"
"$SLIMRUN" train $L --batch_size=16 --train_dir="$T/l1" > "$T/l1.log" 2>&1
mpi2 $L --batch_size=8 --train_dir="$T/l2" > "$T/l2.log" 2>&1
check "LeNet with dropout: 2 x 8 = 1 x 16 (float tolerance)" \
    "$TOOL" close "$T/l1/model.ckpt-20.slimckpt" "$T/l2/model.ckpt-20.slimckpt" 1e-4

# 2. kill -9 of rank 1 after step 13: the job ends, the rerun resumes from step 10
start=$(date +%s)
SLIM_TEST_RANK=1 SLIM_TEST_CRASH_AFTER_STEP=13 mpi2 $P --batch_size=8 --sync_batch_norm \
    --train_dir="$T/k" > "$T/k1.log" 2>&1
rc=$?
took=$(($(date +%s) - start))
if [ $rc -ne 0 ] && [ $took -lt $((60 + 2 * base)) ] && [ -f "$T/k/model.ckpt-10.slimckpt" ] &&
    [ ! -f "$T/k/model.ckpt-20.slimckpt" ] && has "$T/k1.log" "rank 1" &&
    has "$T/k1.log" "step 14"; then
    ok "kill -9 of rank 1 in step 14 ends the job in ${took} s, naming the rank and the step"
else not_ok "kill -9 of rank 1 (exit $rc, ${took} s)"; show "$T/k1.log"; fi
mpi2 $P --batch_size=8 --sync_batch_norm --train_dir="$T/k" > "$T/k2.log" 2>&1
if has "$T/k2.log" "resuming from .*model.ckpt-10"; then ok "the rerun resumes from step 10"
else not_ok "the rerun resumes from step 10"; show "$T/k2.log"; fi
check "... to the bits of the uninterrupted run" \
    "$TOOL" same "$T/two/model.ckpt-20.slimckpt" "$T/k/model.ckpt-20.slimckpt"

# 3. kill -9 of rank 0 while it writes the step-20 checkpoint (LeNet's take a
# moment: 26 MB); the step-10 one stays the newest good one. Rank 1 ends by
# mpirun's teardown (SIGTERM, SIGKILL a second later) or else by its own
# --collective_timeout: the bound, from the kill to the job's end, is that
# timeout (made short here) plus time to exit on a loaded machine.
L30="$L --batch_size=8 --max_number_of_steps=30 --save_interval_steps=10 --collective_timeout=60"
CT=20
bound=$((CT + 40))
mpi2 $L30 --train_dir="$T/w0" > "$T/w0.log" 2>&1
mpi2 $L30 --collective_timeout=$CT --train_dir="$T/w" > "$T/w1.log" 2>&1 &
job=$!
pid=
while kill -0 $job 2> /dev/null && [ -z "$pid" ]; do
    tmp=$(ls "$T/w/" 2> /dev/null | grep 'model.ckpt-20.slimckpt.tmp-' | head -1)
    [ -n "$tmp" ] && pid=${tmp##*.tmp-}
done
killed=$(date +%s)
[ -n "$pid" ] && kill -9 "$pid" 2> /dev/null
wait $job
rc=$?
took=$(($(date +%s) - killed))
if [ -n "$pid" ] && [ $rc -ne 0 ] && [ $took -lt $bound ] && [ -f "$T/w/model.ckpt-10.slimckpt" ] &&
    [ ! -f "$T/w/model.ckpt-20.slimckpt" ]; then
    ok "kill -9 of rank 0 during the step-20 checkpoint ends the job in ${took} s (< $bound), step 10 kept"
else not_ok "kill -9 of rank 0 while saving (pid '$pid', exit $rc, ${took} s, bound $bound)"; ls -l "$T/w"
    show "$T/w1.log"; fi
mpi2 $L30 --train_dir="$T/w" > "$T/w2.log" 2>&1
if has "$T/w2.log" "resuming from .*model.ckpt-10"; then
    ok "the rerun resumes from step 10 (the half-written file is not used)"
else not_ok "the rerun after the kill in a save"; show "$T/w2.log"; fi
check "... to the bits of the uninterrupted run" \
    "$TOOL" same "$T/w0/model.ckpt-30.slimckpt" "$T/w/model.ckpt-30.slimckpt"

# 4. a rank that hangs (SIGSTOP after step 13) or straggles: every rank ends
# within the timeout, with a message naming the rank and the step
start=$(date +%s)
SLIM_TEST_RANK=1 SLIM_TEST_HANG_AFTER_STEP=13 mpi2 $P --batch_size=8 --collective_timeout=5 \
    --train_dir="$T/h" > "$T/h.log" 2>&1
rc=$?
took=$(($(date +%s) - start))
if [ $rc -ne 0 ] && [ $took -lt $((40 + 2 * base)) ] &&
    has "$T/h.log" "rank 0 of 2 (host [^)]*), step 14: rank 1 (host .*) has not been heard from"
then ok "rank 1 hangs: rank 0 stops in ${took} s (a whole run: ${base} s) naming rank 1 and step 14"
else not_ok "rank 1 hangs (exit $rc, ${took} s)"; show "$T/h.log"; fi
start=$(date +%s)
SLIM_TEST_RANK=0 SLIM_TEST_HANG_AFTER_STEP=13 mpi2 $P --batch_size=8 --collective_timeout=5 \
    --train_dir="$T/h0" > "$T/h0.log" 2>&1
rc=$?
took=$(($(date +%s) - start))
if [ $rc -ne 0 ] && [ $took -lt $((40 + 2 * base)) ] &&
    has "$T/h0.log" "rank 1 of 2 (host [^)]*), step 14: rank 0 (host .*) has not been heard from"
then ok "rank 0 hangs: rank 1 stops in ${took} s (a whole run: ${base} s) naming rank 0"
else not_ok "rank 0 hangs (exit $rc, ${took} s)"; show "$T/h0.log"; fi
SLIM_TEST_RANK=1 SLIM_TEST_SLOW_AFTER_STEP=13:15 mpi2 $P --batch_size=8 --collective_timeout=5 \
    --train_dir="$T/s" > "$T/s.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && has "$T/s.log" "step 14: the gradient allreduce .* did not finish within 5 s" &&
    has "$T/s.log" "rank 1 (host .*) is alive but has not joined: it is at step 13"; then
    ok "a straggler beyond the timeout is named, alive, with its step"
else not_ok "a straggler (exit $rc)"; show "$T/s.log"; fi

# 5. SIGTERM to rank 1 after step 17: both stop after step 18? no: after the
# step in which they agree (the signal comes between steps 17 and 18, so
# after step 18), rank 0 saves, and the rerun ends with the same bits
SLIM_TEST_RANK=1 SLIM_TEST_STOP_AFTER_STEP=17 mpi2 $P --batch_size=8 --sync_batch_norm \
    --train_dir="$T/t" > "$T/t1.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && [ -f "$T/t/model.ckpt-18.slimckpt" ] && has "$T/t1.log" "stopped at step 18"
then ok "SIGTERM to rank 1: both stop after step 18, rank 0 saves it"
else not_ok "SIGTERM to rank 1 (exit $rc)"; ls "$T/t"; show "$T/t1.log"; fi
mpi2 $P --batch_size=8 --sync_batch_norm --train_dir="$T/t" > "$T/t2.log" 2>&1
check "... and the rerun reaches the bits of the uninterrupted run" \
    "$TOOL" same "$T/two/model.ckpt-20.slimckpt" "$T/t/model.ckpt-20.slimckpt"

# 6. another number of processes: the 2-process checkpoint of step 10 goes on
# in 1 process of batch 16 (the same global batch and data order)
mkdir -p "$T/r" && cp "$T/two/model.ckpt-10.slimckpt" "$T/r/"
"$SLIMRUN" train $P --batch_size=16 --train_dir="$T/r" > "$T/r.log" 2>&1
if has "$T/r.log" "resuming from" && has "$T/r.log" "batch 8 x 2 processes"; then
    ok "1 process resumes a 2-process checkpoint (and says it was 8 x 2)"
else not_ok "resuming with 1 process"; show "$T/r.log"; fi
check "... close to the 2-process run at step 20" \
    "$TOOL" close "$T/two/model.ckpt-20.slimckpt" "$T/r/model.ckpt-20.slimckpt" 1e-4

# 7. diverged weights: one process with another learning rate (mpirun's MPMD
# form); the checksum after 5 steps names rank 1
D="--model=$MODEL --synthetic --batch_size=8 --max_number_of_steps=20 --num_threads=1
 --replica_check_steps=5 --collective_timeout=60 --train_dir=$T/d"
timeout 300 "$MPIRUN" -np 1 "$SLIMRUN" train $D --learning_rate=0.01 : \
    -np 1 "$SLIMRUN" train $D --learning_rate=0.02 > "$T/d.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && has "$T/d.log" "step 5: the weights of rank 1 .* differ from rank 0's"; then
    ok "weights that differ across processes are caught at step 5, naming rank 1"
else not_ok "diverged weights (exit $rc)"; show "$T/d.log"; fi

# 8. the input shared by file (each process its own shard): a crash and the
# rerun reach the uninterrupted run's bits; 1 process resuming it starts the
# epoch over and says so
F="$P --batch_size=8 --input_sharding=file"
mpi2 $F --train_dir="$T/f0" > "$T/f0.log" 2>&1
SLIM_TEST_RANK=0 SLIM_TEST_CRASH_AFTER_STEP=15 mpi2 $F --train_dir="$T/f" > "$T/f1.log" 2>&1
mpi2 $F --train_dir="$T/f" > "$T/f2.log" 2>&1
if has "$T/f0.log" "input shared by file across the 2 processes" && has "$T/f2.log" "resuming from"
then ok "input shared by file: trained, killed at step 15, resumed"
else not_ok "input shared by file"; show "$T/f0.log" "$T/f2.log"; fi
check "... to the bits of the uninterrupted run (every process's input position kept)" \
    "$TOOL" same "$T/f0/model.ckpt-20.slimckpt" "$T/f/model.ckpt-20.slimckpt"
mkdir -p "$T/f3" && cp "$T/f0/model.ckpt-10.slimckpt" "$T/f3/"
"$SLIMRUN" train $P --batch_size=16 --train_dir="$T/f3" > "$T/f3.log" 2>&1
if [ -f "$T/f3/model.ckpt-20.slimckpt" ] &&
    has "$T/f3.log" "input was shared by file across 2 processes, this run's by record across 1"
then ok "1 process resumes a by-file checkpoint, starting the epoch over (and says so)"
else not_ok "1 process resuming a by-file checkpoint"; show "$T/f3.log"; fi

# 9. the trace has each rank's allreduce spans; TF-Slim's distribution flags
mpi2 --model="$MODEL" --synthetic --batch_size=8 --max_number_of_steps=4 --num_threads=1 \
    --trace="$T/trace.json" --trace_steps=3 --num_clones=2 --worker_replicas=2 --task=0 \
    --num_ps_tasks=1 --sync_replicas --replicas_to_aggregate=2 --train_dir="$T/tr" \
    > "$T/tr.log" 2>&1
if has "$T/trace.json" "rank 1: gradient allreduce on the wire" &&
    has "$T/trace.json" '"allreduce bucket 1"' && has "$T/trace.json" '"rank": 1'; then
    ok "the trace (rank 0 writes it) has rank 1's allreduce spans"
else not_ok "allreduce spans in the trace"; show "$T/tr.log"; fi
if has "$T/tr.log" "num_clones=2 (clones are processes here" &&
    has "$T/tr.log" "num_ps_tasks=1 (no parameter servers" &&
    has "$T/tr.log" "this run has 2 processes" && [ "$(grep -c 'sync_replicas' "$T/tr.log")" -eq 1 ]
then ok "TF-Slim's distribution flags print what they map onto (once, from rank 0)"
else not_ok "TF-Slim's distribution flags"; show "$T/tr.log"; fi

tap_end
