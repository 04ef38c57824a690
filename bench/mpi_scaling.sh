#!/bin/sh
# bench/mpi_scaling.sh - training across processes: how it scales.
#
#   1. this machine, ranks on its cores (shared memory), the same per-process
#      batch (synthetic data), in rounds (--pairs) of: 1 process x 1 thread;
#      2 processes x 1 thread (mpirun --bind-to core); 1 process x 2 threads
#      (the same two cores without MPI); two independent 1-process runs at
#      once, one per core (no communication: what two cores give two
#      processes, the ceiling of the 2-process figure). Per run: the wall
#      images/s (global), the CPU seconds per step of each process
#      (metrics.jsonl cpu_seconds) and of its communication thread
#      (comm_cpu_seconds), the share of the step spent waiting for
#      communication, the communication thread's passes; then the medians.
#      The wall figures need an idle machine (on a loaded one they measure
#      the scheduler's shares: two processes get two); the CPU figures less so.
#      --shm_buckets="2 8 32": the bucket size, 2 processes on this machine.
#   2. "several machines" (root: bench/mpi_netns.sh): 2 hosts in network
#      namespaces, TCP over veth links shaped with tbf to 10 Gbit/s and to 1
#      Gbit/s; --links="1gbit:0.25ms" adds a delay each way on each link
#      (netem, or bench/delayline where the kernel has none); per step: the wall
#      step time, the gradient allreduce time on the wire, what the training
#      thread waited of it (the rest hid behind backward), with and without
#      overlap; rank 0's trace of the 1 Gbit/s run with overlap.
#      --buckets="2 8 32": also the bucket size on the 1 Gbit/s link.
#   3. on paper (bench/mpi_project.py): the efficiency at 2-256 nodes from
#      the compute time of a step (part 1's CPU seconds), when backward
#      completes each bucket (the trace), MPI's efficiency on the 1 Gbit/s
#      link (part 2) and the allreduce cost
#      2(N-1)/N * bytes / bandwidth + 2 log2(N) * latency.
#
# bench/mpi_scaling.sh [--models="resnet_v1_50 mobilenet_v2"] [--batch=8]
#                      [--steps=5] [--warmup=3] [--pairs=3] [--quick] [--no-netns]
#                      [--links="10gbit 1gbit 1gbit:0.25ms"] [--buckets="2 8 32"] [--batch_scale=1,4]
#                      [--shm_buckets="2 8 32"] [--bucket_rounds=1] [--ns_models=MODELS]
#                      [--tc="MODEL:SECONDS ..."]
#                      [--latency10=50e-6] [--latency1=500e-6]
#                      [--builddir=.] [--out=bench/results/mpi_scaling.md]
# --pairs=0 --tc="resnet_v1_50:2.47 ...": no part 1; part 3 takes these compute
# times (CPU seconds per step of 1 process, from an earlier part 1).
# --quick: a check of the script (LeNet, batch 8, a few steps, 1 pair); the
# figures mean nothing then. Takes flock /tmp/cpu.lock; every result line
# carries the load average before and after it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
models="resnet_v1_50 mobilenet_v2"
batch=8 steps=5 warmup=3 pairs=3 quick=no netns=yes buckets= bscale=1,4
lat10=50e-6 lat1=500e-6 builddir=. out= links="10gbit 1gbit" tcs= breps=1 shm_buckets= ns_models=
for a in "$@"; do
    case $a in
    --models=*) models=${a#*=} ;;
    --batch=*) batch=${a#*=} ;;
    --steps=*) steps=${a#*=} ;;
    --warmup=*) warmup=${a#*=} ;;
    --pairs=*) pairs=${a#*=} ;;
    --quick) quick=yes ;;
    --no-netns) netns=no ;;
    --latency10=*) lat10=${a#*=} ;;
    --latency1=*) lat1=${a#*=} ;;
    --buckets=*) buckets=${a#*=} ;;
    --bucket_rounds=*) breps=${a#*=} ;;
    --shm_buckets=*) shm_buckets=${a#*=} ;;
    --ns_models=*) ns_models=${a#*=} ;;
    --batch_scale=*) bscale=${a#*=} ;;
    --links=*) links=${a#*=} ;;
    --tc=*) tcs=${a#*=} ;;
    --builddir=*) builddir=${a#*=} ;;
    --out=*) out=${a#*=} ;;
    *) sed -n '2,/^set -eu/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
if [ $quick = yes ]; then
    models=lenet batch=8 steps=4 warmup=2 pairs=1
fi
[ -n "$ns_models" ] || ns_models=$models
src=$(cd "$here/.." && pwd)
SLIMRUN=$(cd "$builddir" && pwd)/tools/slimrun
[ -x "$SLIMRUN" ] || { echo "mpi_scaling.sh: no $SLIMRUN (build first)" >&2; exit 1; }
export SLIM_MODEL_PATH="$src/models"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ -z "$out" ]; then
    out="$src/bench/results/mpi_scaling.md"
    [ $quick = yes ] && out="$src/bench/results/mpi_scaling_quick.md"
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/slim-mpiscale.XXXXXX")
cleanup() {
    [ "${netns_up:-no}" = yes ] && "$here/mpi_netns.sh" down > /dev/null 2>&1
    rm -rf "$T"
}
trap cleanup EXIT

load() { cut -d' ' -f1 /proc/loadavg; }

# The mean of a metrics.jsonl field over the log lines after the warm-up.
field() { # FILE KEY
    awk -v k="\"$2\": " -v w="$warmup" '
        { s = $0; i = index(s, "\"step\": "); st = substr(s, i + 8) + 0
          if (st <= w) next
          j = index(s, k); if (!j) next
          v = substr(s, j + length(k)) + 0; sum += v; n++ }
        END { if (n) printf "%.4g", sum / n; else print "nan" }' "$1"
}
# images/s over the steps after the warm-up, from the elapsed times.
rate() { # FILE GLOBAL_BATCH
    awk -v w="$warmup" -v gb="$2" '
        { s = $0; i = index(s, "\"step\": "); st = substr(s, i + 8) + 0
          j = index(s, "\"elapsed\": "); el = substr(s, j + 11) + 0
          if (st == w) { s0 = st; e0 = el }
          if (st > w) { s1 = st; e1 = el } }
        END { if (e1 > e0 && s1 > s0) printf "%.3f", (s1 - s0) * gb / (e1 - e0); else print "nan" }' "$1"
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {
    if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
div() { awk -v a="$1" -v b="$2" -v f="${3:-%.2f}" 'BEGIN {if (b > 0) printf f, a / b; else print "-"}'; }

train_flags() { # MODEL
    echo "--model_name=$1 --synthetic --num_classes=1000 --batch_size=$batch --num_threads=1
        --max_number_of_steps=$((warmup + steps)) --log_every_n_steps=1 --optimizer=momentum
        --learning_rate=0.01 --save_interval_secs=0 --replica_check_steps=0"
}

# Bucket-size sweeps: --bucket_rounds rounds over the sizes in turn; a run
# appends "MB BUCKETS VALUE... LOAD" to FILE, and the table has per size the
# median of each value.
sweep() { # RUN_FUNCTION SIZES FILE
    i=1
    while [ $i -le "$breps" ]; do
        for mb in $2; do
            l0=$(load)
            $1 "$mb" > "$T/row" || exit 1
            tr '\n' ' ' < "$T/row" >> "$3"
            echo "$l0-$(load)" >> "$3"
        done
        i=$((i + 1))
    done
}
sweep_table() { # FILE SIZES
    for mb in $2; do
        awk -v mb="$mb" '$1 == mb {
            for (c = 3; c < NF; c++) v[c, n + 0] = $c
            load = load " " $NF; nb = $2; nf = NF; n++ }
            END { printf "| %s | %s |", mb, nb
                  for (c = 3; c < nf; c++) {
                      for (i = 0; i < n; i++) x[i] = v[c, i]
                      for (i = 1; i < n; i++) for (j = i; j > 0 && x[j - 1] > x[j]; j--) {
                          t = x[j]; x[j] = x[j - 1]; x[j - 1] = t }
                      printf " %.4g |", n % 2 ? x[(n - 1) / 2] : (x[n / 2 - 1] + x[n / 2]) / 2 }
                  printf "%s |\n", load }' "$1"
    done
}
buckets_of() { sed -n 's/.*MB per step in \([0-9]*\) bucket.*/\1/p' "$1" | head -1; }
shm_row() { # MB: 2 processes on this machine
    rm -rf "$T/two"
    mpirun -np 2 --bind-to core --map-by core "$SLIMRUN" train $(train_flags "$m") \
        --allreduce_bucket_mb="$1" --train_dir="$T/two" > "$T/two.log" 2>&1 ||
        { echo "2 processes, bucket $1 failed:"; cat "$T/two.log"; exit 1; } >&2
    f=$T/two/metrics.jsonl
    echo "$1 $(buckets_of "$T/two.log") $(rate "$f" $((2 * batch))) $(field "$f" cpu_seconds)" \
        "$(field "$f" comm_cpu_seconds) $(field "$f" comm_polls)" \
        "$(awk -v c="$(field "$f" comm_wait)" 'BEGIN {print 100 * c}')"
}
ns_row() { # MB: 2 hosts on the shaped link
    rm -rf "$T/ns"
    "$here/mpi_netns.sh" run -- "$SLIMRUN" train $(train_flags "$m") \
        --allreduce_bucket_mb="$1" --train_dir="$T/ns" > "$T/ns.log" 2>&1 ||
        { echo "netns bucket $1 failed:"; cat "$T/ns.log"; exit 1; } >&2
    f=$T/ns/metrics.jsonl
    ar=$(field "$f" allreduce_seconds) cw=$(field "$f" comm_wait_seconds)
    echo "$1 $(buckets_of "$T/ns.log") $(div $((2 * batch)) "$(rate "$f" $((2 * batch)))" %.3f)" \
        "$ar $cw $(awk -v a="$ar" -v c="$cw" 'BEGIN {h = 0; if (a > 0 && c < a) h = 100 * (1 - c / a); print h}')" \
        "$(awk -v c="$(field "$f" comm_wait)" 'BEGIN {print 100 * c}')"
}

exec 9> /tmp/cpu.lock
flock 9
{
    echo "# Training across processes: scaling"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(sed -n 's/^model name\t*: //p' /proc/cpuinfo | head -1),"
    echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the start (other jobs sharing the cores)."
    echo "build: $(cd "$src" && git rev-parse --short HEAD 2>/dev/null || echo '?'); batch $batch per process, 1 thread per process,"
    echo "synthetic data, momentum; figures over steps $((warmup + 1))-$((warmup + steps)) (means), then medians over the runs."
    [ $quick = yes ] && echo "(--quick: a check of the script, not a measurement)"
    echo
} > "$out"

for x in $tcs; do eval "tc_${x%%:*}=${x#*:}"; done
# ---- 1. this machine -----------------------------------------------------------
# Per round, in this order: 1 process x 1 thread; 2 processes x 1 thread
# (mpirun --bind-to core); 1 process x 2 threads (the same two cores, no MPI);
# two independent 1-process runs at once, one per core (taskset; no MPI: what
# the two cores give two processes that never communicate - the ceiling).
[ "$pairs" -gt 0 ] && {
    echo "## 1. One machine, processes on its cores (shared memory)"
    echo
    echo "images/s: wall clock, global (every process). 1x1: 1 process, 1 thread; 2x1: 2 processes"
    echo "(mpirun --bind-to core), 1 thread each; 1x2: 1 process, --num_threads=2; 2 alone: two"
    echo "independent 1x1 runs at once, one per core (taskset), no communication. cpu: CPU seconds"
    echo "per step of each process (every thread); comm cpu: of it, the communication thread's;"
    echo "wait: the share of the step the training thread waited for communication; polls: the"
    echo "communication thread's passes per step."
    echo
    echo "| model | run | 1x1 images/s | 2x1 images/s | 1x2 images/s | 2 alone images/s | 1x1 cpu s/step | 2x1 cpu s/step | 2 alone cpu s/step | 2x1 comm cpu s/step | 2x1 wait | 2x1 polls/step | load |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
} >> "$out"
run1() { # DIR LOG [taskset CPU] [--num_threads=N]
    dir=$1 log=$2
    shift 2
    rm -rf "$dir"
    if [ "${1:-}" = taskset ]; then
        cpu=$2
        shift 2
        taskset -c "$cpu" "$SLIMRUN" train $(train_flags "$m") "$@" --train_dir="$dir" > "$log" 2>&1
    else
        "$SLIMRUN" train $(train_flags "$m") "$@" --train_dir="$dir" > "$log" 2>&1
    fi || { echo "$m, $dir failed:"; cat "$log"; exit 1; } >&2
}
for m in $models; do
    [ "$pairs" -gt 0 ] || break
    R1= R2= R12= RA= C1= C2= CA= X2= W2= P2=
    i=1
    while [ $i -le "$pairs" ]; do
        l0=$(load)
        run1 "$T/one" "$T/one.log"
        r1=$(rate "$T/one/metrics.jsonl" "$batch")
        c1=$(field "$T/one/metrics.jsonl" cpu_seconds)
        rm -rf "$T/two"
        mpirun -np 2 --bind-to core --map-by core "$SLIMRUN" train $(train_flags "$m") \
            --train_dir="$T/two" > "$T/two.log" 2>&1 ||
            { echo "2 processes, $m failed:"; cat "$T/two.log"; exit 1; } >&2
        r2=$(rate "$T/two/metrics.jsonl" $((2 * batch)))
        c2=$(field "$T/two/metrics.jsonl" cpu_seconds)
        x2=$(field "$T/two/metrics.jsonl" comm_cpu_seconds)
        cw=$(field "$T/two/metrics.jsonl" comm_wait)
        p2=$(field "$T/two/metrics.jsonl" comm_polls)
        run1 "$T/thr" "$T/thr.log" --num_threads=2
        r12=$(rate "$T/thr/metrics.jsonl" "$batch")
        run1 "$T/a0" "$T/a0.log" taskset 0 &
        pa=$!
        run1 "$T/a1" "$T/a1.log" taskset 1
        wait $pa || exit 1
        ra=$(awk -v a="$(rate "$T/a0/metrics.jsonl" "$batch")" \
            -v b="$(rate "$T/a1/metrics.jsonl" "$batch")" 'BEGIN {printf "%.3f", a + b}')
        ca=$(awk -v a="$(field "$T/a0/metrics.jsonl" cpu_seconds)" \
            -v b="$(field "$T/a1/metrics.jsonl" cpu_seconds)" 'BEGIN {printf "%.4g", (a + b) / 2}')
        R1="$R1 $r1" R2="$R2 $r2" R12="$R12 $r12" RA="$RA $ra" C1="$C1 $c1" C2="$C2 $c2"
        CA="$CA $ca" X2="$X2 $x2" W2="$W2 $cw" P2="$P2 $p2"
        echo "| $m | $i | $r1 | $r2 | $r12 | $ra | $c1 | $c2 | $ca | $x2 |" \
            "$(awk -v c="$cw" 'BEGIN {printf "%.1f%%", 100 * c}') | $p2 | $l0-$(load) |" >> "$out"
        i=$((i + 1))
    done
    r1=$(echo $R1 | median) r2=$(echo $R2 | median) r12=$(echo $R12 | median)
    ra=$(echo $RA | median) c1=$(echo $C1 | median) c2=$(echo $C2 | median)
    ca=$(echo $CA | median) x2=$(echo $X2 | median)
    eval "tc_$m=$c1"
    echo "| $m | median | $r1 | $r2 | $r12 | $ra | $c1 | $c2 | $ca | $x2 |" \
        "$(echo $W2 | median | awk '{printf "%.1f%%", 100 * $1}') | $(echo $P2 | median) | |" >> "$out"
    {
        echo "$m: wall speed-up 1 to 2 processes $(div "$r2" "$r1") (2x1 / 1x1);" \
            "two processes without communication $(div "$ra" "$r1") (2 alone / 1x1, the ceiling);" \
            "2 processes against 1 process of 2 threads $(div "$r2" "$r12") (2x1 / 1x2)"
        echo "$m: CPU per step, 2 processes against 1: $(div "$c2" "$c1" %.3f)x" \
            "(of it the communication thread $(div "$x2" "$c1" %.3f), the two cores' sharing" \
            "$(div "$ca" "$c1" %.3f)x without communication)"
    } >> "$T/speedup.txt"
done
if [ "$pairs" -gt 0 ]; then
    echo >> "$out"
    sed 's/$/  /' "$T/speedup.txt" >> "$out"
fi

if [ -n "$shm_buckets" ]; then
    m=$(echo $models | cut -d' ' -f1)
    {
        echo
        echo "Bucket size (--allreduce_bucket_mb), $m, 2 processes on this machine (shared memory),"
        echo "$breps round(s) over the sizes in turn, then the medians:"
        echo
        echo "| bucket MB | buckets | images/s | cpu s/step | comm cpu s/step | polls/step | comm wait % | load |"
        echo "|---|---|---|---|---|---|---|---|"
    } >> "$out"
    sweep shm_row "$shm_buckets" "$T/ssweep.txt"
    sweep_table "$T/ssweep.txt" "$shm_buckets" >> "$out"
fi

# ---- 2. shaped links between network namespaces -----------------------------------
if [ $netns = yes ] && [ "$(id -u)" -ne 0 ]; then
    echo "(parts 2 and 3 skipped: bench/mpi_netns.sh needs root)" >> "$out"
    netns=no
fi
if [ $netns = yes ]; then
    {
        echo
        echo "## 2. Two hosts (network namespaces, TCP over veth or delay lines), shaped links"
        echo
        echo "Per step, means: wall step time; the gradient allreduce on the wire; what the training"
        echo "thread waited of it (the rest hid behind backward); CPU seconds of each process."
        echo
        echo "| model | link | overlap | step s | allreduce s/step | waited s/step | hidden | cpu s/step | load |"
        echo "|---|---|---|---|---|---|---|---|---|"
    } >> "$out"
    netns_up=yes
    for link in $links; do # RATE or RATE:DELAY (each way on each link)
        delay=
        case $link in *:*) delay=${link#*:} ;; esac
        "$here/mpi_netns.sh" down > /dev/null 2>&1 || true
        "$here/mpi_netns.sh" up 2 "${link%%:*}" $delay >> "$T/netns.log" 2>&1
        for m in $ns_models; do
            for ov in on off; do
                l0=$(load)
                rm -rf "$T/ns"
                flag=
                [ $ov = off ] && flag=--no_overlap
                [ $ov = on ] && [ $link = 1gbit ] &&
                    flag="--trace=$T/trace_$m.json --trace_steps=$((warmup + steps))"
                "$here/mpi_netns.sh" run -- "$SLIMRUN" train $(train_flags "$m") $flag \
                    --train_dir="$T/ns" > "$T/ns.log" 2>&1 ||
                    { echo "netns $link $m $ov failed:"; cat "$T/ns.log"; exit 1; } >&2
                r=$(rate "$T/ns/metrics.jsonl" $((2 * batch)))
                ar=$(field "$T/ns/metrics.jsonl" allreduce_seconds)
                cw=$(field "$T/ns/metrics.jsonl" comm_wait_seconds)
                cpu=$(field "$T/ns/metrics.jsonl" cpu_seconds)
                echo "| $m | $link | $ov | $(div $((2 * batch)) "$r" %.3f) | $ar | $cw |" \
                    "$(awk -v a="$ar" -v c="$cw" 'BEGIN {if (a > 0) printf "%.0f%%", c < a ? 100 * (1 - c / a) : 0; else print "-"}') |" \
                    "$cpu | $l0-$(load) |" >> "$out"
                [ $ov = off ] && [ $link = 1gbit ] && eval "wire_$m=$ar"
            done
        done
    done
    if [ -n "$buckets" ]; then
        m=$(echo $ns_models | cut -d' ' -f1)
        {
            echo
            echo "Bucket size (--allreduce_bucket_mb), $m on the 1 Gbit/s link, overlap on;"
            echo "$breps round(s) over the sizes in turn, then the medians:"
            echo
            echo "| bucket MB | buckets | step s | allreduce s/step | waited s/step | hidden % | comm wait % | load |"
            echo "|---|---|---|---|---|---|---|---|"
        } >> "$out"
        "$here/mpi_netns.sh" down > /dev/null 2>&1 || true
        "$here/mpi_netns.sh" up 2 1gbit >> "$T/netns.log" 2>&1
        sweep ns_row "$buckets" "$T/bsweep.txt"
        sweep_table "$T/bsweep.txt" "$buckets" >> "$out"
    fi
    echo >> "$out"
    echo "links: $(grep -h "links\|netem\|delay" "$T/netns.log" | tr '\n' ' ')" >> "$out"

    # ---- 3. on paper ------------------------------------------------------------------
    {
        echo
        echo "## 3. On paper: efficiency at N nodes (bench/mpi_project.py)"
        echo
        echo "Allreduce of bucket k (S_k bytes) over N nodes: T_k = 2(N-1)/N * S_k / (eta B) + 2 log2(N) a"
        echo "(B the link, a the latency per message: $lat10 s at 10 Gbit/s, $lat1 s at 1 Gbit/s, not"
        echo "measured: no netem here; eta: MPI over TCP on the 1 Gbit/s link of part 2, against S/B)."
        echo "T_c: part 1's CPU seconds per step of 1 process. With overlap the link takes the buckets as"
        echo "backward completes them (when, from the trace); without, after backward. Efficiency = T_c / step."
        echo "\"x4 batch\": 4 times the compute per step (batch $((4 * batch)) per node), the same gradients."
        echo
        echo "| model | link | overlap | 2 | 4 | 16 | 64 | 256 |"
        echo "|---|---|---|---|---|---|---|---|"
    } >> "$out"
    for m in $ns_models; do
        eval "tc=\${tc_$m:-} wire=\${wire_$m:-}"
        python3 "$here/mpi_project.py" --model="$m" --trace="$T/trace_$m.json" --tc="$tc" \
            --wire="$wire" --rate=1e9 --links="10:$lat10,1:$lat1" --batch_scale="$bscale" \
            > "$T/proj_$m.txt"
        grep '^|' "$T/proj_$m.txt" >> "$out"
        grep -v '^|' "$T/proj_$m.txt" >> "$T/paper.txt"
    done
    {
        echo
        sed 's/^/    /' "$T/paper.txt"
        echo
        echo "Published, for comparison: Horovod 90% for Inception V3 and ResNet-101 on 128 servers"
        echo "x 4 Pascal GPUs over 25 Gbit/s RoCE (68% for VGG-16; horovod docs/benchmarks); Intel:"
        echo "ResNet-50 on Xeon clusters at over 90% on up to 128 nodes (Omni-Path)."
    } >> "$out"
fi
cat "$out"
