#!/usr/bin/env python3
"""bench/mpi_project.py - the efficiency of data-parallel training at N nodes,
on paper, from measured figures (bench/mpi_scaling.sh calls it).

Inputs, all measured on this machine:
  --trace   rank 0's trace (--trace) of a 2-process run with overlap: the
            forward / backward / update shares of a step, and for each
            gradient bucket its size and when in backward it was complete
            (its allreduce started): a fraction of backward
  --tc      the compute time of a step of one process (1 thread): the CPU
            seconds per step of a 1-process run (on a loaded machine the
            wall time is not the compute time; the CPU time is)
  --wire    seconds per step the gradient allreduce took on the wire between
            2 hosts over a --rate link without overlap: with the ideal time
            S/B of 2 processes it gives the efficiency eta of MPI over TCP
            on that link, applied to every link speed

Model (for a power-of-two N; slim uses Rabenseifner's allreduce there):
  T_k   = 2(N-1)/N * S_k / (eta * B) + 2 log2(N) * a     bucket k, S_k bytes
  with overlap: the link takes the buckets in order as backward completes
  them: done_k = max(ready_k, done_{k-1}) + T_k; the step is
  max(end of backward, done_last) + update. Without: T_c + sum T_k.
  efficiency = T_c / step.
--batch_scale: also the efficiency with the compute of a step scaled by it
(a larger batch per node: the gradients stay the same size).
"""
import argparse
import json
import math
import statistics
import sys


def trace_profile(path):
    with open(path) as f:
        d = json.load(f)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    steps = sorted((e for e in ev if e.get("cat") == "step" and e.get("ph") == "X"),
                   key=lambda e: e["ts"])
    ops = [e for e in ev if e.get("tid") == 1 and e.get("ph") == "X"]
    buckets = [e for e in ev if e.get("tid") == 1000 and e.get("cat") == "allreduce"
               and e.get("name", "").startswith("allreduce bucket")]
    prof = []
    for s in steps[1:]:  # the first step lays the buckets out
        t0, t1 = s["ts"], s["ts"] + s["dur"]
        sops = [e for e in ops if t0 <= e["ts"] <= t1]
        bwd = [e for e in sops if e.get("cat") in ("backward", "gradient_sum")]
        if not sops or not bwd:
            continue
        # compute only: the update phase's waits for the allreduces are not
        compute = sum(e["dur"] for e in sops if e.get("args", {}).get("op") != "allreduce_wait")
        fwd = sum(e["dur"] for e in sops if e.get("cat") == "forward")
        b0 = min(e["ts"] for e in bwd)
        b1 = max(e["ts"] + e["dur"] for e in bwd)
        n = int(s["name"].split()[-1])
        bk = {int(e["name"].split()[-1]): e for e in buckets if e["args"].get("step") == n}
        if not bk or compute <= 0 or b1 <= b0:
            continue
        prof.append({
            "fwd": fwd / compute,
            "bwd": sum(e["dur"] for e in bwd) / compute,
            "ready": {k: min(1.0, max(0.0, (e["ts"] - b0) / (b1 - b0))) for k, e in bk.items()},
            "bytes": {k: e["args"]["MB"] * 1e6 for k, e in bk.items()},
        })
    if not prof:
        sys.exit("mpi_project.py: no usable step in %s" % path)
    size = {}
    for p in prof:
        size.update(p["bytes"])
    ready = {k: statistics.median(p["ready"][k] for p in prof if k in p["ready"]) for k in size}
    order = sorted(size, key=lambda k: (ready[k], k))  # the order the link takes them
    return {
        "fwd": statistics.median(p["fwd"] for p in prof),
        "bwd": statistics.median(p["bwd"] for p in prof),
        "ready": [ready[k] for k in order],
        "bytes": [size[k] for k in order],
        "steps": len(prof),
    }


def step_time(p, tc, n, bw, lat, overlap):
    t_fwd, t_bwd = p["fwd"] * tc, p["bwd"] * tc
    t_upd = max(0.0, tc - t_fwd - t_bwd)
    cost = [2 * (n - 1) / n * s / bw + 2 * math.log2(n) * lat for s in p["bytes"]]
    if not overlap:
        return tc + sum(cost)
    done = 0.0
    for r, c in zip(p["ready"], cost):
        done = max(t_fwd + r * t_bwd, done) + c
    return max(t_fwd + t_bwd, done) + t_upd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--tc", type=float, required=True)
    ap.add_argument("--wire", type=float, required=True)
    ap.add_argument("--rate", type=float, default=1e9, help="bits/s of the --wire link")
    ap.add_argument("--links", default="10:50e-6,1:500e-6",
                    help="Gbit/s:latency per message (s), comma separated")
    ap.add_argument("--nodes", default="2,4,16,64,256")
    ap.add_argument("--batch_scale", default="1")
    ap.add_argument("--extra_mb", type=float, default=0,
                    help="a gradient the traced run did not have, final first in backward "
                         "(a 1000-class head where the run had 10): MB")
    a = ap.parse_args()
    p = trace_profile(a.trace)
    if a.extra_mb > 0:
        p["ready"].insert(0, 0.0)
        p["bytes"].insert(0, a.extra_mb * 1e6)
    total = sum(p["bytes"])
    traced = total - a.extra_mb * 1e6
    eta = min(1.0, traced / (a.rate / 8) / a.wire)
    nodes = [int(x) for x in a.nodes.split(",")]
    print("%s: T_c %.3f s (1 process, CPU), forward %.0f%% / backward %.0f%% of a step; "
          "%d buckets, %.1f MB; completed at %s of backward (median of %d steps); "
          "eta %.2f (2 hosts, %.0f Mbit/s link: %.3f s measured, %.3f s ideal)%s" %
          (a.model, a.tc, 100 * p["fwd"], 100 * p["bwd"], len(p["bytes"]), total / 1e6,
           "/".join("%.0f%%" % (100 * r) for r in p["ready"]), p["steps"], eta,
           a.rate / 1e6, a.wire, traced / (a.rate / 8),
           "; + %.1f MB first (--extra_mb)" % a.extra_mb if a.extra_mb > 0 else ""))
    for bs in [float(x) for x in a.batch_scale.split(",")]:
        for link in a.links.split(","):
            g, lat = link.split(":")
            bw = float(g) * 1e9 / 8 * eta
            for ov in (False, True):
                row = ["%s%s" % (a.model, "" if bs == 1 else " (x%g batch)" % bs),
                       "%s Gbit/s" % g, "yes" if ov else "no"]
                for n in nodes:
                    tc = a.tc * bs
                    row.append("%.0f%%" % (100 * tc / step_time(p, tc, n, bw, float(lat), ov)))
                print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
