#!/bin/bash
# bench/run.sh - build the benchmarks, run slim's and the PyTorch anchor side
# by side, and write bench/results/latest.md (plus the raw JSON next to it).
#
#   bench/run.sh [--quick] [--threads="1 2"] [--rounds=N] [--no-torch] [--no-conv]
#                [--no-train] [--models=big|NAME[:BATCH],...] [--builddir=DIR]
#                [--idle-wait=SECONDS]
#
# --no-conv / --no-train skip a part and keep its previous results in
# bench/results (the report is written from whatever is there).
# --models runs `slimrun bench` on zoo models beside PyTorch (big = vgg_16:8,
# resnet_v1_50:16, inception_v3:8, mobilenet_v1:16, mobilenet_v2:16); none by
# default, so --quick stays short; a model's previous results are replaced
# when it runs again and reported otherwise. Out of tree: run it from the build directory (or give
# --builddir=DIR / BUILDDIR=DIR); results go to the source tree's bench/results.
#
# 1. make bench; conv_bench --check (fast conv kernels against the reference)
# 2. conv_bench: conv2d GFLOP/s per layer and direction, with the oneDNN anchors
# 3. rounds of train_step (slim) and ../shared/anchors/torch_bench.py (through
#    bench/torch_anchor.py), alternating per thread count so both see the same
#    machine; medians over the rounds and the per-round ratio slim/PyTorch
# 4. one profiled slim step per model (where the time goes)
# 5. with --models: rounds of `slimrun bench` and the PyTorch model matching
#    each zoo file (bench/torch_anchor.py), alternating per model and thread
#    count; images/s, GFLOP/s against PEAK1/PEAK2 (this machine's fp32 peak,
#    measured at the start unless given), peak resident memory of each side and slim's
#    planned memory; the per-op profile of each slim run in big_slim_*.txt;
#    then, per round, the 2-thread scaling of ResNet-50 (SCALING_MODELS) measured
#    within one process on each side (`slimrun bench --scaling`,
#    `torch_anchor.py --scaling`: 1- and 2-thread iterations alternating, the
#    median of the per-pair ratios), which the VM's drift between runs minutes
#    apart does not reach
#
# Every timed command runs under `flock /tmp/cpu.lock` (the anchors' convention:
# one heavy job at a time on this machine) after waiting, up to --idle-wait
# seconds (60), for other processes to leave the CPUs idle; each result records how many cores
# other processes still used meanwhile. PyTorch is skipped, with a note, when
# /usr/bin/python3 cannot import torch or ../shared/anchors is absent.
set -euo pipefail
CALLER=$PWD
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/bench/results}
# the build: this directory when run from an out-of-tree build, else the source tree
if [ -z "${BUILDDIR:-}" ]; then
    BUILDDIR=$ROOT
    [ -f "$CALLER/config.status" ] && [ -f "$CALLER/Makefile" ] && BUILDDIR=$CALLER
fi
PEAK1=${PEAK1:-}   # empty: the anchors' peak_fma.txt, else measured below
PEAK2=${PEAK2:-}
MODELS=""
BIG_BUDGET=5     # seconds of timed iterations per mode, each side, beyond the minimum
BIG_ITERS=3      # timed iterations at least, each side
BIG_TORCH_SCALE=0.125 # of torch_bench.py's budgets (40 s training, 20 s inference)
SCALING_MODELS=${SCALING_MODELS:-resnet_v1_50} # measured interleaved when in --models
PY=${PYTHON:-/usr/bin/python3}
ANCHORS=${SLIM_ANCHORS:-$ROOT/../shared/anchors}
THREADS="1 2"
ROUNDS=3
TORCH_SCALE=0.25 # of torch_bench.py's budgets: ~1 + 10 s training, 0.5 + 5 s inference
SLIM_BUDGET=4
CONV_BUDGET=1.5
DO_TORCH=1
DO_CONV=1
DO_TRAIN=1
IDLE_WAIT=60
for a in "$@"; do
    case $a in
    --quick) ROUNDS=1 TORCH_SCALE=0.1 SLIM_BUDGET=1.5 CONV_BUDGET=0.5 ;;
    --threads=*) THREADS=${a#*=} ;;
    --rounds=*) ROUNDS=${a#*=} ;;
    --no-torch) DO_TORCH=0 ;;
    --no-conv) DO_CONV=0 ;;
    --no-train) DO_TRAIN=0 ;;
    --idle-wait=*) IDLE_WAIT=${a#*=} ;;
    --models=*) MODELS=${a#*=} ;;
    --builddir=*) BUILDDIR=$(cd "${a#*=}" && pwd) ;;
    *) sed -n '2,19p' "$0" >&2; exit 2 ;;
    esac
done
[ "$MODELS" = big ] && MODELS="vgg_16:8,resnet_v1_50:16,inception_v3:8,mobilenet_v1:16,mobilenet_v2:16"
mkdir -p "$OUT"
LOCK=()
command -v flock >/dev/null && LOCK=(flock /tmp/cpu.lock)

# Wait (at most IDLE_WAIT s) until other processes use under 0.2 cores over 2 s.
wait_idle() {
    local hz a b i
    hz=$(getconf CLK_TCK)
    for ((i = 0; i < IDLE_WAIT / 2; i++)); do
        a=($(head -1 /proc/stat)); sleep 2; b=($(head -1 /proc/stat))
        (( (b[1]+b[2]+b[3]+b[6]+b[7]+b[8]) - (a[1]+a[2]+a[3]+a[6]+a[7]+a[8]) < hz * 2 / 5 )) && return 0
    done
    echo "run.sh: the machine stayed busy; timing anyway (see other_cores)" >&2
}

echo "== build ($BUILDDIR)" >&2
make -C "$BUILDDIR" -j2 bench tools/slimrun >/dev/null
B=$BUILDDIR/bench
SLIMRUN=$BUILDDIR/tools/slimrun
# The fp32 peak for the big models' percentages: PEAK1/PEAK2 if given, else
# the anchors' peak_fma.txt (102.6 / 205.8 GFLOP/s, the figures docs/performance.md
# and conv_bench use), else slimrun bench's FMA loop (about 100 / 200 on
# this Zen3 VM): the best of three, since one short loop can start while
# the VM has not yet given the second vCPU its share (it once read 103 on 2
# threads, then 201 and 198 a second later).
measure_peak() {
    local i best=0 g
    for i in 1 2 3; do
        g=$("${LOCK[@]}" "$SLIMRUN" bench --model_name=lenet --mode=inference --batch_size=1 \
            --iterations=1 --warmup=0 --budget=0 --num_threads="$1" 2>/dev/null |
            sed -n 's/^fp32 peak: \([0-9.]*\) GFLOP.*/\1/p')
        best=$(awk -v a="$best" -v b="${g:-0}" 'BEGIN { print (b > a ? b : a) }')
    done
    echo "$best"
}
anchor_peak() { # "threads=N  peak fp32 FMA: G GFLOP/s total, ..." -> G
    [ -f "$ANCHORS/peak_fma.txt" ] &&
        sed -n "s/^threads=$1 .*peak fp32 FMA: \([0-9.]*\) GFLOP\/s total.*/\1/p" \
            "$ANCHORS/peak_fma.txt" | head -1
}
[ -n "$PEAK1" ] || PEAK1=$(anchor_peak 1)
[ -n "$PEAK2" ] || PEAK2=$(anchor_peak 2)
[ -n "$PEAK1" ] || PEAK1=$(measure_peak 1)
[ -n "$PEAK2" ] || PEAK2=$(measure_peak 2)
echo "== fp32 peak: $PEAK1 GFLOP/s on 1 thread, $PEAK2 on 2" >&2
"${LOCK[@]}" "$B/conv_bench" --check >"$OUT/conv_check.txt" ||
    { cat "$OUT/conv_check.txt"; echo "run.sh: conv_bench --check failed" >&2; exit 1; }

tlist=${THREADS// /,}
if ((DO_CONV)); then
    echo "== conv_bench (threads $tlist)" >&2
    wait_idle
    "${LOCK[@]}" "$B/conv_bench" --threads="$tlist" --budget=$CONV_BUDGET --anchors="$ANCHORS" \
        --json="$OUT/conv.json" >"$OUT/conv.md"
fi

TORCH_OK=0
if ((DO_TORCH)); then
    if [ ! -f "$ANCHORS/torch_bench.py" ]; then
        echo "run.sh: $ANCHORS/torch_bench.py not found; PyTorch skipped" >&2
    elif ! "$PY" -c 'import torch' 2>/dev/null; then
        echo "run.sh: $PY cannot import torch (apt-get install python3-torch python3-torchvision); PyTorch skipped" >&2
    else
        TORCH_OK=1
    fi
fi

TROUNDS=$ROUNDS # train_step's rounds; --no-train keeps --rounds for the big models
((DO_TRAIN)) || TROUNDS=0
((TROUNDS == 0)) || rm -f "$OUT"/train_slim_r*.json "$OUT"/train_torch_r*.jsonl
for ((r = 1; r <= TROUNDS; r++)); do
    for t in $THREADS; do
        echo "== round $r/$ROUNDS, $t thread(s): slim" >&2
        wait_idle
        "${LOCK[@]}" "$B/train_step" --threads="$t" --budget=$SLIM_BUDGET \
            --json="$OUT/train_slim_r${r}_t$t.json" >/dev/null
        if ((TORCH_OK)); then
            echo "== round $r/$ROUNDS, $t thread(s): PyTorch" >&2
            wait_idle
            "${LOCK[@]}" "$PY" bench/torch_anchor.py --anchors "$ANCHORS" --threads "$t" \
                --budget-scale $TORCH_SCALE lenet cifarnet >"$OUT/train_torch_r${r}_t$t.jsonl"
        fi
    done
done

if ((DO_TRAIN)); then
    echo "== profile" >&2
    last=${THREADS##* }
    wait_idle
    "${LOCK[@]}" "$B/train_step" --threads="$last" --budget=1 --min_reps=3 --profile \
        >"$OUT/profile.md"
fi

# 5. the zoo models: slimrun bench and PyTorch, alternating per model
if [ -n "$MODELS" ]; then
    for mb in ${MODELS//,/ }; do
        rm -f "$OUT/big_slim_${mb%%:*}"_r* "$OUT/big_torch_${mb%%:*}"_r* \
            "$OUT/big_scaling_slim_${mb%%:*}"_r* "$OUT/big_scaling_torch_${mb%%:*}"_r*
    done
    brounds=$ROUNDS
    ((brounds > 0)) || brounds=1
    for ((r = 1; r <= brounds; r++)); do
        for t in $THREADS; do
            peak=$PEAK1
            ((t == 1)) || peak=$(awk -v a="$PEAK1" -v b="$PEAK2" -v t="$t" \
                'BEGIN { print (t == 2 ? b : a * t) }')
            for mb in ${MODELS//,/ }; do
                m=${mb%%:*} bs=${mb#*:}
                [ "$bs" = "$mb" ] && bs=16
                tag=${m}_r${r}_t$t
                echo "== round $r/$brounds, $t thread(s): slim $m (batch $bs)" >&2
                wait_idle
                "${LOCK[@]}" "$SLIMRUN" bench --model_name="$m" --batch_size="$bs" \
                    --num_threads="$t" --peak="$peak" --iterations=$BIG_ITERS --warmup=2 \
                    --budget=$BIG_BUDGET --weight_decay=0 --per_op \
                    --json="$OUT/big_slim_$tag.json" >"$OUT/big_slim_$tag.txt" ||
                    echo "run.sh: slimrun bench $m failed" >&2
                if ((TORCH_OK)); then
                    echo "== round $r/$brounds, $t thread(s): PyTorch $m" >&2
                    wait_idle
                    "${LOCK[@]}" "$PY" bench/torch_anchor.py --anchors "$ANCHORS" --threads "$t" \
                        --budget-scale $BIG_TORCH_SCALE --min-iters $BIG_ITERS --batch "$bs" "$m" \
                        >"$OUT/big_torch_$tag.jsonl" || echo "run.sh: PyTorch $m failed" >&2
                fi
            done
        done
        [[ " $THREADS " == *" 2 "* ]] || continue
        for mb in ${MODELS//,/ }; do
            m=${mb%%:*} bs=${mb#*:}
            [ "$bs" = "$mb" ] && bs=16
            [[ ",$SCALING_MODELS," == *",$m,"* ]] || continue
            echo "== round $r/$brounds: $m 1 vs 2 threads, interleaved" >&2
            wait_idle
            "${LOCK[@]}" "$SLIMRUN" bench --model_name="$m" --batch_size="$bs" --num_threads=2 \
                --scaling --peak=-1 --iterations=5 --warmup=1 --budget=0 --weight_decay=0 \
                --json="$OUT/big_scaling_slim_${m}_r$r.json" >/dev/null ||
                echo "run.sh: slimrun bench --scaling $m failed" >&2
            if ((TORCH_OK)); then
                wait_idle
                "${LOCK[@]}" "$PY" bench/torch_anchor.py --anchors "$ANCHORS" --threads 2 \
                    --scaling --budget-scale 0 --min-iters 5 --batch "$bs" "$m" \
                    >"$OUT/big_scaling_torch_${m}_r$r.jsonl" ||
                    echo "run.sh: PyTorch --scaling $m failed" >&2
            fi
        done
    done
fi

"$PY" - "$OUT" "$TORCH_OK" "$PEAK1" "$PEAK2" <<'EOF'
import glob, json, os, platform, statistics, subprocess, sys, time

out, torch_ok = sys.argv[1], sys.argv[2] == "1"
med = statistics.median
slim, torch = {}, {}
for f in sorted(glob.glob(os.path.join(out, "train_slim_r*.json"))):
    rnd = int(os.path.basename(f).split("_r")[1].split("_")[0])
    for r in json.load(open(f)):
        slim.setdefault((r["model"], r["threads"]), {})[rnd] = r
for f in sorted(glob.glob(os.path.join(out, "train_torch_r*.jsonl"))):
    rnd = int(os.path.basename(f).split("_r")[1].split("_")[0])
    for line in open(f):
        if line.startswith("{"):
            r = json.loads(line)
            torch.setdefault((r["model"], r["threads"]), {})[rnd] = r

try:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
except OSError:
    commit, dirty = "?", ""
cpu = "?"
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip()
        break
L = ["# slim benchmarks", "",
     "%s, commit %s%s, %s (%d CPUs). Peak fp32 102.6 GFLOP/s on 1 thread, 205.8 on 2 "
     "(../shared/anchors/peak_fma.txt)." % (time.strftime("%Y-%m-%d %H:%M"), commit,
                                              " + local changes" if dirty else "", cpu,
                                              os.cpu_count()), ""]
if "AMD" not in cpu:
    L += ["**Note:** the anchors (peak, oneDNN, PyTorch results in ../shared/anchors) were measured "
          "on a Zen3 (AMD EPYC, AVX2, no AVX-512); this run's CPU is different, so the percentages "
          "of peak and the oneDNN columns are a scale, not this machine's limits. The PyTorch "
          "columns below were measured here, in this session.", ""]
if os.path.exists(os.path.join(out, "conv.md")):
    L += ["## conv2d per layer (bench/conv_bench)", "",
          "FLOPs = 2*N*OH*OW*O*KH*KW*C for every direction; backward-data computes only dx, "
          "backward-filter only dw. The oneDNN columns are the anchors' own runs (nhwc: the "
          "same plain layout as slim; any: its blocked layouts).", ""]
    L += [l.rstrip("\n") for l in open(os.path.join(out, "conv.md"))] + [""]

L += ["## Training step and inference, slim vs PyTorch (bench/train_step, torch_bench.py)", "",
      "Images/s, median over %d alternating rounds (each a median step after warm-up); "
      "ratio = median of the per-round slim/PyTorch ratios. Training = forward + loss + "
      "backward + momentum update; synthetic input." % max([len(v) for v in slim.values()] or [0]),
      ""]
if torch_ok:
    L += ["| model | batch | threads | slim train | PyTorch train | slim/PyTorch | slim inference "
          "| PyTorch inference | slim/PyTorch |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
else:
    L += ["PyTorch was not run (not installed for /usr/bin/python3, or ../shared/anchors "
          "absent).", "", "| model | batch | threads | slim train | slim inference |",
          "|---|---:|---:|---:|---:|"]
other = []
for key in sorted(slim, key=lambda k: (k[0] != "lenet", k[0], k[1])):
    s = slim[key]
    st = med([r["train_img_s"] for r in s.values()])
    si = med([r["infer_img_s"] for r in s.values()])
    other += [r["other_cores"] for r in s.values()]
    batch = next(iter(s.values()))["batch"]
    if not torch_ok:
        L.append("| %s | %d | %d | %.0f | %.0f |" % (key[0], batch, key[1], st, si))
        continue
    t = torch.get(key, {})
    if not t:
        L.append("| %s | %d | %d | %.0f | - | - | %.0f | - | - |" % (key[0], batch, key[1], st, si))
        continue
    other += [max(r["train_other_cores"], r["infer_other_cores"]) for r in t.values()]
    tt = med([r["train_img_s"] for r in t.values()])
    ti = med([r["infer_img_s"] for r in t.values()])
    rt = med([s[k]["train_img_s"] / t[k]["train_img_s"] for k in s if k in t])
    ri = med([s[k]["infer_img_s"] / t[k]["infer_img_s"] for k in s if k in t])
    L.append("| %s | %d | %d | %.0f | %.0f | **%.2f** | %.0f | %.0f | **%.2f** |"
             % (key[0], batch, key[1], st, tt, rt, si, ti, ri))
L += ["", "Other processes used up to %.2f cores during these timings (0 = idle machine)."
      % max(other or [0]), ""]
L += ["Planned memory of slim's training program (slim_program_get_stats):", "",
      "| model | batch | arena MiB (one buffer per tensor) | parameters MiB | momentum MiB | "
      "inference arena MiB |", "|---|---:|---:|---:|---:|---:|"]
seen = set()
for key in sorted(slim):
    if key[0] in seen:
        continue
    seen.add(key[0])
    r = next(iter(slim[key].values()))
    m = 1 << 20
    L.append("| %s | %d | %.1f (%.1f) | %.1f | %.1f | %.1f |" % (
        key[0], r["batch"], r["train_arena_bytes"] / m, r["train_naive_bytes"] / m,
        r["param_bytes"] / m, r["slot_bytes"] / m, r["infer_arena_bytes"] / m))
prof = os.path.join(out, "profile.md")
L += ["", "## Where a slim step goes (train_step --profile)", ""]
L += [l.rstrip("\n") for l in (open(prof) if os.path.exists(prof) else [])
      if not l.startswith("| model") and not l.startswith("|---|---:|---:|---:")
      and not l.startswith("| lenet") and not l.startswith("| cifarnet")
      and not l.startswith("Median step")]

# ---- the zoo models (slimrun bench beside bench/torch_anchor.py) ----
peaks = {1: float(sys.argv[3]), 2: float(sys.argv[4])}
bs, bt = {}, {}
for f in glob.glob(os.path.join(out, "big_slim_*_r*_t*.json")):
    r = json.load(open(f))
    rnd = int(f.rsplit("_r", 1)[1].split("_")[0])
    bs.setdefault((r["model"], r["threads"]), {})[rnd] = r
for f in glob.glob(os.path.join(out, "big_torch_*_r*_t*.jsonl")):
    rnd = int(f.rsplit("_r", 1)[1].split("_")[0])
    for line in open(f):
        if line.startswith("{"):
            r = json.loads(line)
            bt.setdefault((r["model"], r["threads"]), {})[rnd] = r
# rounds timed beside a busy neighbour (other processes > 0.25 cores) are left
# out when a cleaner round of the same model and thread count exists
def clean(d, busy):
    dropped = 0
    for k, rounds in d.items():
        ok = {i: r for i, r in rounds.items() if busy(r) <= 0.25}
        if ok and len(ok) < len(rounds):
            dropped += len(rounds) - len(ok)
            d[k] = ok
    return dropped
n_dropped = clean(bs, lambda r: max(r["train"]["other_cores"], r["inference"]["other_cores"]))
n_dropped += clean(bt, lambda r: max(r["train_other_cores"], r["infer_other_cores"]))
ORDER = ["lenet", "cifarnet", "mobilenet_v1", "mobilenet_v2", "resnet_v1_50", "inception_v3",
         "vgg_16"]
keys = sorted(bs, key=lambda k: (ORDER.index(k[0]) if k[0] in ORDER else 99, k[0], k[1]))
if keys:
    mib = lambda b: b / 1048576.0
    pct = lambda g, t: "%.0f%%" % (100 * g / peaks[t]) if t in peaks else "-"
    L += ["", "## Big models, slim vs PyTorch (slimrun bench, bench/torch_anchor.py)", "",
          "Median iteration after warm-up, median over %d round(s); ratios = median of the "
          "per-round ratios. PyTorch runs the model matching each zoo file layer for layer "
          "(bench/torch_anchor.py: TF-Slim's ResNet-50 layout, MobileNet v1 defined there). "
          "Training = forward + loss + backward + momentum update, no weight decay on either "
          "side; GFLOP/s = 2 x conv/fc multiply-adds (training 3x forward), %% of this "
          "machine's fp32 peak (%.1f GFLOP/s on 1 thread, %.1f on 2)."
          % (max(len(v) for v in bs.values()), peaks[1], peaks[2]), "",
          "| model | batch | threads | slim train img/s | PyTorch | slim/PyTorch | slim inference "
          "img/s | PyTorch | slim/PyTorch | slim train GFLOP/s | PyTorch train GFLOP/s | slim "
          "inference GFLOP/s | PyTorch inference GFLOP/s |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    other = []
    for k in keys:
        s, t = bs[k], bt.get(k, {})
        one = next(iter(s.values()))
        st = med([r["train"]["img_s"] for r in s.values()])
        si = med([r["inference"]["img_s"] for r in s.values()])
        sg = med([r["train"]["gflops"] for r in s.values()])
        sgi = med([r["inference"]["gflops"] for r in s.values()])
        other += [max(r["train"]["other_cores"], r["inference"]["other_cores"]) for r in s.values()]
        row = "| %s | %d | %d | %.2f | " % (k[0], one["batch"], k[1], st)
        if t:
            other += [max(r["train_other_cores"], r["infer_other_cores"]) for r in t.values()]
            for r in t.values():  # from the medians: the anchor rounds images/s to 0.01
                r["train_img_s"] = 1e3 * r["batch"] / r["train_ms_median"]
                r["infer_img_s"] = 1e3 * r["batch"] / r["infer_ms_median"]
            tt = med([r["train_img_s"] for r in t.values()])
            ti = med([r["infer_img_s"] for r in t.values()])
            both = [i for i in s if i in t]  # else (busy rounds left out): ratio of the medians
            rt = med([s[i]["train"]["img_s"] / t[i]["train_img_s"] for i in both]) if both else st / tt
            ri = med([s[i]["inference"]["img_s"] / t[i]["infer_img_s"] for i in both]) if both \
                else si / ti
            tg = med([r["train_gflops"] for r in t.values()])
            tgi = med([r["infer_gflops"] for r in t.values()])
            row += "%.2f | **%.2f** | %.2f | %.2f | **%.2f** | %.1f (%s) | %.1f (%s) | %.1f (%s) | " \
                   "%.1f (%s) |" % (tt, rt, si, ti, ri, sg, pct(sg, k[1]), tg, pct(tg, k[1]),
                                    sgi, pct(sgi, k[1]), tgi, pct(tgi, k[1]))
        else:
            row += "- | - | %.2f | - | - | %.1f (%s) | - | %.1f (%s) | - |" % (
                si, sg, pct(sg, k[1]), sgi, pct(sgi, k[1]))
        L.append(row)
    L += ["", "Other processes used up to %.2f cores during these timings%s." % (
        max(other or [0]), "; %d run(s) with more than 0.25 left out where a cleaner round "
        "exists" % n_dropped if n_dropped else ""), ""]
    # scaling from 1 to 2 threads
    sc = []
    for m in dict.fromkeys(k[0] for k in keys):
        if (m, 1) in bs and (m, 2) in bs:
            f = lambda d, sel: med([sel(r) for r in d.values()])
            s1 = f(bs[(m, 1)], lambda r: r["train"]["img_s"])
            s2 = f(bs[(m, 2)], lambda r: r["train"]["img_s"])
            i1 = f(bs[(m, 1)], lambda r: r["inference"]["img_s"])
            i2 = f(bs[(m, 2)], lambda r: r["inference"]["img_s"])
            tx = "-"
            if (m, 1) in bt and (m, 2) in bt:
                tx = "%.2f / %.2f" % (
                    f(bt[(m, 2)], lambda r: r["train_img_s"]) / f(bt[(m, 1)], lambda r: r["train_img_s"]),
                    f(bt[(m, 2)], lambda r: r["infer_img_s"]) / f(bt[(m, 1)], lambda r: r["infer_img_s"]))
            sc.append("| %s | %.2f / %.2f | %s |" % (m, s2 / s1, i2 / i1, tx))
    if sc:
        L += ["Scaling from 1 to 2 threads (images/s on 2 threads / on 1; training / inference):",
              "", "| model | slim | PyTorch |", "|---|---:|---:|"] + sc + [""]
    # the same within one process: 1- and 2-thread iterations alternating
    ss, ts = {}, {}
    for f in glob.glob(os.path.join(out, "big_scaling_slim_*_r*.json")):
        r = json.load(open(f))
        rnd = int(f.rsplit("_r", 1)[1].split(".")[0])
        if "scaling" in r.get("train", {}) and "scaling" in r.get("inference", {}):
            ss.setdefault(r["model"], {})[rnd] = r
    for f in glob.glob(os.path.join(out, "big_scaling_torch_*_r*.jsonl")):
        rnd = int(f.rsplit("_r", 1)[1].split(".")[0])
        for line in open(f):
            if line.startswith("{"):
                r = json.loads(line)
                if "train_scaling" in r:
                    ts.setdefault(r["model"], {})[rnd] = r
    if ss:
        L += ["Scaling within one process (`slimrun bench --scaling`, `torch_anchor.py "
              "--scaling`: every iteration timed on 1 thread and on 2, the order alternating; "
              "median of the per-pair ratios, each round; training / inference):", "",
              "| model | slim, per round | slim, median | PyTorch, per round | PyTorch, median |",
              "|---|---|---:|---|---:|"]
        for m in sorted(ss):
            per = lambda d, a, b: (", ".join("%.2f / %.2f" % (a(d[i]), b(d[i])) for i in sorted(d)),
                                   "%.2f / %.2f" % (med([a(x) for x in d.values()]),
                                                    med([b(x) for x in d.values()])))
            sp, sm = per(ss[m], lambda r: r["train"]["scaling"]["speedup"],
                         lambda r: r["inference"]["scaling"]["speedup"])
            tp, tm = per(ts[m], lambda r: r["train_scaling"]["speedup"],
                         lambda r: r["infer_scaling"]["speedup"]) if m in ts else ("-", "-")
            L.append("| %s | %s | **%s** | %s | %s |" % (m, sp, sm, tp, tm))
        L.append("")
    # memory
    L += ["Memory (MiB). slim planned = the compiler's arena + parameters + optimizer slots "
          "(slim_program_get_stats); peak RSS = the process's VmHWM over the mode (slim: reset "
          "between training and inference) or ru_maxrss (PyTorch: one process per model, "
          "training then inference; the interpreter and torch before the model take the "
          "'before' figure).", "",
          "| model | batch | threads | slim planned, training | slim peak RSS, training | "
          "planned / RSS | slim planned, inference | slim peak RSS, inference | PyTorch peak RSS "
          "(before the model) | slim / PyTorch peak RSS |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for k in keys:
        s, t = bs[k], bt.get(k, {})
        one = next(iter(s.values()))
        tr, inf = one["train"], one["inference"]
        rss = max(r["train"]["peak_rss_bytes"] for r in s.values())
        irss = max(r["inference"]["peak_rss_bytes"] for r in s.values())
        row = "| %s | %d | %d | %.0f | %.0f | %.2f | %.0f | %.0f | " % (
            k[0], one["batch"], k[1], mib(tr["planned_bytes"]), mib(rss),
            tr["planned_bytes"] / rss, mib(inf["planned_bytes"]), mib(irss))
        if t and "peak_rss_bytes" in next(iter(t.values())):
            trss = max(r["peak_rss_bytes"] for r in t.values())
            tbase = min(r["base_rss_bytes"] for r in t.values())
            row += "%.0f (%.0f) | %.2f |" % (mib(trss), mib(tbase), max(rss, irss) / trss)
        else:
            row += "- | - |"
        L.append(row)
    # where ResNet-50's training step goes
    pk = [k for k in keys if k[0] == "resnet_v1_50"]
    if pk:
        k = pk[-1]
        rnd = max(bs[k])
        r = bs[k][rnd]["train"]
        tot = r["forward_ms"] + r["backward_ms"] + r["update_ms"] + r["grad_sum_ms"]
        L += ["", "## Where ResNet-50's training step goes (slimrun bench --per_op, %d thread%s, "
              "batch %d)" % (k[1], "s" if k[1] > 1 else "", bs[k][rnd]["batch"]), "",
              "%.0f ms profiled per step: forward %.0f, backward %.0f, update %.0f, gradient "
              "sums %.0f. Per op kind:" % (tot, r["forward_ms"], r["backward_ms"], r["update_ms"],
                                           r["grad_sum_ms"]), "",
              "| op | phase | ms | share | GFLOP/s (% of peak) |", "|---|---|---:|---:|---:|"]
        for o in r["ops"][:14]:
            g = "%.1f (%s)" % (o["gflops"], pct(o["gflops"], k[1])) if o["gflops"] > 0 else ""
            L.append("| %s | %s | %.1f | %.1f%% | %s |" % (o["op"], o["phase"], o["ms"],
                                                           100 * o["ms"] / tot, g))
        L += ["", "Slowest nodes:", "", "| node | op | phase | ms | GFLOP/s |",
              "|---|---|---|---:|---:|"]
        for o in r.get("nodes", [])[:15]:
            L.append("| %s | %s | %s | %.1f | %s |" % (o["name"], o["op"], o["phase"], o["ms"],
                                                       "%.1f" % o["gflops"] if o["gflops"] else ""))
        L += ["", "Every node of every run: big_slim_MODEL_rR_tT.txt in this directory."]

L += ["", "Raw results: conv.json, train_slim_r*.json, train_torch_r*.jsonl, profile.md, "
      "big_slim_*.json/txt, big_torch_*.jsonl in this directory. Rerun: `bench/run.sh` (about "
      "15 minutes; `--quick` for a rough pass; `--models=big` adds the zoo's big models, about "
      "45 minutes more: 58 minutes in all on 2026-11-26)."]
open(os.path.join(out, "latest.md"), "w").write("\n".join(L).replace("\n\n\n", "\n\n") + "\n")
print("\n".join(L))
EOF
