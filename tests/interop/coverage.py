#!/usr/bin/python3
"""ONNX import coverage: every torchvision 0.14 classifier, exported by
Debian's PyTorch at opsets 11, 13 and 17, imported by slim and compared with
PyTorch's logits for a random batch (|slim - torch| <= 1e-4 * max |torch|).

usage: tests/interop/coverage.py SLIMRUN [--out=TABLE.md] [--models=a,b] [--opsets=11,13,17]
                                 [--mode=preserve|eval] [--work=DIR] [--threads=N]

Writes a markdown table (model x opset: the largest difference relative to
the largest logit, or why it fails) to --out (default: stdout) and prints
progress to stderr. The README's "ONNX" section has the table of a full run.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

MODELS = [
    "alexnet", "vgg11", "vgg11_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn",
    "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
    "resnext50_32x4d", "wide_resnet50_2", "squeezenet1_0", "squeezenet1_1",
    "densenet121", "googlenet", "inception_v3", "mobilenet_v2",
    "mobilenet_v3_small", "mobilenet_v3_large", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0",
    "mnasnet0_5", "mnasnet1_0", "efficientnet_b0", "efficientnet_b1", "efficientnet_b2",
    "efficientnet_b3", "efficientnet_v2_s", "regnet_x_400mf", "regnet_x_800mf",
    "regnet_x_1_6gf", "regnet_x_3_2gf", "regnet_y_400mf", "regnet_y_800mf",
    "regnet_y_1_6gf", "regnet_y_3_2gf", "convnext_tiny",
]

# The smallest input each exports at: AlexNet's and VGG's adaptive pooling
# exports only when its output size divides its input (6x6, 7x7 at 224).
SIZES = {"alexnet": 224, "inception_v3": 96}
for m in MODELS:
    if m.startswith("vgg"):
        SIZES[m] = 224

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, timeout=1800):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def first_line(text):
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("Warning"):
            return line[:300]
    return "?"


def one(slimrun, model, opset, mode, work, threads):
    import numpy as np
    d = os.path.join(work, "%s-%d" % (model, opset))
    size = SIZES.get(model, 64)
    rc, out = run([sys.executable, os.path.join(HERE, "torch_export.py"), model, str(opset),
                   str(size), "2", d, "--mode=" + mode])
    if rc != 0:
        return "export fails: " + first_line(out)
    t0 = time.time()
    rc, out = run([slimrun, "predict", "--model=" + os.path.join(d, "model.onnx"),
                   "--input_npy=" + os.path.join(d, "x.npy"),
                   "--output_npy=" + os.path.join(d, "s.npy"), "--num_threads=%d" % threads])
    secs = time.time() - t0
    if rc != 0:
        return "fails: " + first_line(out.replace(d + "/", ""))
    y = np.load(os.path.join(d, "y.npy"))
    s = np.load(os.path.join(d, "s.npy"))
    rel = float(np.abs(y - s).max() / np.abs(y).max())
    shutil.rmtree(d, ignore_errors=True)
    verdict = "matches" if rel <= 1e-4 else "differs"
    return "%s (%.1e, %dpx, %.1fs)" % (verdict, rel, size, secs)


def main(argv):
    opts = dict(a[2:].split("=", 1) for a in argv[1:] if a.startswith("--"))
    slimrun = os.path.abspath(argv[0])
    models = opts["models"].split(",") if "models" in opts else MODELS
    opsets = [int(o) for o in opts.get("opsets", "11,13,17").split(",")]
    mode = opts.get("mode", "preserve")
    threads = int(opts.get("threads", "2"))
    work = opts.get("work") or tempfile.mkdtemp(prefix="slim-onnx-")
    try:
        import numpy, torch, torchvision  # noqa: F401
    except ImportError as e:
        print("coverage.py: %s (apt-get install python3-torch python3-torchvision)" % e,
              file=sys.stderr)
        return 77
    rows = ["| model | " + " | ".join("opset %d" % o for o in opsets) + " |",
            "|---|" + "---|" * len(opsets)]
    counts = {"matches": 0, "other": 0}
    for model in models:
        cells = []
        for opset in opsets:
            r = one(slimrun, model, opset, mode, work, threads)
            counts["matches" if r.startswith("matches") else "other"] += 1
            print("%s opset %d: %s" % (model, opset, r), file=sys.stderr, flush=True)
            cells.append(r.replace("|", "/"))
        rows.append("| %s | %s |" % (model, " | ".join(cells)))
    rows.append("")
    rows.append("%d of %d match (mode %s)." % (counts["matches"],
                                              counts["matches"] + counts["other"], mode))
    text = "\n".join(rows) + "\n"
    if "out" in opts:
        with open(opts["out"], "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0 if counts["other"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
