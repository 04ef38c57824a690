#!/usr/bin/python3
"""bench/torch_anchor.py - run the PyTorch anchor (../shared/anchors/torch_bench.py)
at a chosen thread count, for the side-by-side in bench/run.sh.

The anchor script fixes 2 threads and merges its results into its own
torch_results.json. This loads it as a module instead (its timing and FLOP
counting unchanged), sets its THREADS, calls its bench() per model and prints
one JSON line per model on stdout; nothing is written next to it.

    /usr/bin/python3 bench/torch_anchor.py [--anchors DIR] [--threads N]
                                           [--budget-scale X] [--min-iters N]
                                           [--batch N] [--scaling] MODEL...

MODEL is one of the anchor's names (lenet, cifarnet, vgg16, resnet50,
mobilenet_v2, inception_v3, ...) or one of slim's zoo names, which run the
PyTorch model that matches the zoo file layer for layer:

  vgg_16        torchvision vgg16 (1000 classes)
  resnet_v1_50  ResNet-50 v1 with TF-Slim's layout (defined here): the stride
                of blocks 1-3 in the 3x3 conv of their *last* unit and a 1x1
                max-pool shortcut there; torchvision's resnet50 strides the
                first unit of layers 2-4 instead (4.09 G multiply-adds per
                image against TF-Slim's 3.48 G; the same 25.56 M parameters)
  inception_v3  torchvision inception_v3 with its auxiliary head, 1001 classes
  mobilenet_v1  TF-Slim's MobileNet v1 1.0/224 (defined here: torchvision has
                none), 1001 classes
  mobilenet_v2  torchvision mobilenet_v2, 1001 classes
  lenet, cifarnet  the anchor's own

Each model runs in a child process of its own, so that the peak resident
memory it reports (peak_rss_bytes: the child's ru_maxrss, which includes the
Python interpreter and torch itself, base_rss_bytes before the model is
built) is that model's alone.

--budget-scale multiplies the anchor's timing budgets (warm-up 3 s + 40 s for
training, 2 s + 20 s for inference); --min-iters the timed iterations at least
(the anchor's 5). --scaling (with --threads N > 1) times every iteration
twice, on 1 thread and on N, the order alternating (torch.set_num_threads
between them), and adds train_scaling / infer_scaling: the median of the
per-pair ratios (1-thread time / N-thread time), the pairs and the 1-thread
median; the other figures are the N-thread ones. Exit status 77 when torch is
not importable or the anchor is missing.
"""
import argparse
import contextlib
import importlib.util
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import time

# zoo name -> (anchor name or our own, input (C, H, W), batch, classes)
ZOO = {
    "vgg_16": ("vgg16", (3, 224, 224), 8, 1000),
    "resnet_v1_50": ("resnet_v1_50", (3, 224, 224), 16, 1000),
    "inception_v3": ("inception_v3", (3, 299, 299), 8, 1001),
    "mobilenet_v1": ("mobilenet_v1", (3, 224, 224), 16, 1001),
    "mobilenet_v2": ("mobilenet_v2", (3, 224, 224), 16, 1001),
}


def tf_slim_models(nn, F):
    """ResNet-50 v1 (TF-Slim layout) and MobileNet v1, NCHW."""

    class FixedConv(nn.Module):
        """conv2d_same of TF-Slim: explicit symmetric padding, then VALID."""

        def __init__(self, cin, cout, k, stride):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, bias=False)

        def forward(self, x):
            return self.conv(x)

    class Bottleneck(nn.Module):
        def __init__(self, cin, depth, bottleneck, stride):
            super().__init__()
            if depth == cin:  # subsample (1x1 max pool) or the input itself
                self.shortcut = nn.MaxPool2d(1, stride) if stride > 1 else nn.Identity()
            else:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, depth, 1, stride, bias=False),
                                              nn.BatchNorm2d(depth))
            self.conv1 = nn.Conv2d(cin, bottleneck, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(bottleneck)
            self.conv2 = FixedConv(bottleneck, bottleneck, 3, stride)
            self.bn2 = nn.BatchNorm2d(bottleneck)
            self.conv3 = nn.Conv2d(bottleneck, depth, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(depth)

        def forward(self, x):
            y = F.relu(self.bn1(self.conv1(x)))
            y = F.relu(self.bn2(self.conv2(y)))
            y = self.bn3(self.conv3(y))
            return F.relu(y + self.shortcut(x))

    class ResNetV1Slim(nn.Module):
        """nets/resnet_v1.py resnet_v1_50: blocks (64, 3, 2), (128, 4, 2),
        (256, 6, 2), (512, 3, 1), each block's stride in its last unit."""

        def __init__(self, num_classes=1000):
            super().__init__()
            self.conv1 = FixedConv(3, 64, 7, 2)
            self.bn1 = nn.BatchNorm2d(64)
            self.pool1 = nn.MaxPool2d(3, 2, padding=1)
            units, cin = [], 64
            for base, n, stride in ((64, 3, 2), (128, 4, 2), (256, 6, 2), (512, 3, 1)):
                for i in range(n):
                    units.append(Bottleneck(cin, base * 4, base, stride if i == n - 1 else 1))
                    cin = base * 4
            self.units = nn.Sequential(*units)
            self.logits = nn.Conv2d(cin, num_classes, 1)

        def forward(self, x):
            x = self.pool1(F.relu(self.bn1(self.conv1(x))))
            x = self.units(x)
            x = F.adaptive_avg_pool2d(x, 1)
            return self.logits(x).flatten(1)

    class MobileNetV1(nn.Module):
        """nets/mobilenet_v1.py at depth multiplier 1.0, 224x224: conv 3x3/2 32,
        13 depthwise-separable layers, batch norm and ReLU6 after every conv,
        average pool, dropout, 1x1 conv logits."""

        LAYERS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1),
                  (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))

        def __init__(self, num_classes=1001):
            super().__init__()

            def cbr(cin, cout, k, stride, groups=1):
                return [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                        nn.BatchNorm2d(cout, eps=0.001), nn.ReLU6(inplace=True)]

            layers, cin = cbr(3, 32, 3, 2), 32
            for cout, stride in self.LAYERS:
                layers += cbr(cin, cin, 3, stride, groups=cin) + cbr(cin, cout, 1, 1)
                cin = cout
            self.features = nn.Sequential(*layers)
            self.dropout = nn.Dropout(0.001)
            self.logits = nn.Conv2d(cin, num_classes, 1)

        def forward(self, x):
            x = F.adaptive_avg_pool2d(self.features(x), 1)
            return self.logits(self.dropout(x)).flatten(1)

    return ResNetV1Slim, MobileNetV1


def patch(tb, batch_override):
    """Teach the anchor's build() slim's zoo names."""
    import torch.nn as nn
    import torch.nn.functional as F

    ResNetV1Slim, MobileNetV1 = tf_slim_models(nn, F)
    build = tb.build

    def zoo_build(name):
        import torchvision.models as tvm

        if name in ZOO:
            _, shape, batch, classes = ZOO[name]
            if name == "vgg_16":
                model = tvm.vgg16(weights=None, num_classes=classes)
            elif name == "resnet_v1_50":
                model = ResNetV1Slim(classes)
            elif name == "inception_v3":
                model = tvm.inception_v3(weights=None, aux_logits=True, init_weights=True,
                                         num_classes=classes)
            elif name == "mobilenet_v1":
                model = MobileNetV1(classes)
            else:
                model = tvm.mobilenet_v2(weights=None, num_classes=classes)
        else:
            model, shape, batch = build(name)
        return model, shape, batch_override or batch

    tb.build = zoo_build
    for k, v in ZOO.items():
        tb.DISPLAY.setdefault(k, "%s (%dx%dx%d)" % (k, v[1][1], v[1][2], v[1][0]))


def rss_now():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def run_one(a, name):
    """In the child: bench one model, add its memory, print one JSON line."""
    spec = importlib.util.spec_from_file_location("torch_bench", os.path.join(a.anchors,
                                                                             "torch_bench.py"))
    tb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tb)
    tb.THREADS = a.threads
    patch(tb, a.batch)
    loop = tb.timed_loop

    def scaled(step, warm_s, budget_s, min_iters=5, max_iters=200):
        return loop(step, warm_s * a.budget_scale, budget_s * a.budget_scale,
                    a.min_iters or min_iters, max_iters)

    scaling = []

    def interleaved(step, warm_s, budget_s, min_iters=5, max_iters=200):
        """--scaling: pairs of iterations on 1 thread and on a.threads, order alternating."""
        torch = tb.torch
        budget_s *= a.budget_scale
        min_iters = a.min_iters or min_iters
        for n in (1, a.threads):
            torch.set_num_threads(n)
            step()
            step()
        times, t1s, ratios = [], [], []
        snap0 = tb.cpu_snapshot()
        t0 = time.perf_counter()
        while len(times) < min_iters or (time.perf_counter() - t0 < budget_s
                                         and len(times) < max_iters):
            d = {}
            for n in ((1, a.threads) if len(times) % 2 == 0 else (a.threads, 1)):
                torch.set_num_threads(n)
                t = time.perf_counter()
                step()
                d[n] = time.perf_counter() - t
            times.append(d[a.threads])
            t1s.append(d[1])
            ratios.append(d[1] / d[a.threads])
        torch.set_num_threads(a.threads)
        other = tb.other_cpu_frac(snap0, tb.cpu_snapshot(), time.perf_counter() - t0)
        scaling.append({"speedup": statistics.median(ratios), "pairs": len(ratios),
                        "ms_median_1thread": 1e3 * statistics.median(t1s)})
        return times, 4, other

    tb.timed_loop = interleaved if a.scaling else scaled
    base = rss_now()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # the anchor prints its JSON line itself
        r = tb.bench(name)
    r["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    r["base_rss_bytes"] = base
    r["min_iters"] = a.min_iters or 5
    for key, sc in zip(("train_scaling", "infer_scaling"), scaling):
        r[key] = sc
    print(json.dumps(r), flush=True)
    if r.get("threads") != a.threads:
        print("torch_anchor: asked for %d threads, torch runs %s" % (a.threads, r.get("threads")),
              file=sys.stderr)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--anchors", default=os.path.join(here, "..", "..", "shared", "anchors"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--budget-scale", type=float, default=1.0)
    ap.add_argument("--min-iters", type=int, default=0)
    ap.add_argument("--batch", type=int, default=0, help="override the model's batch")
    ap.add_argument("--scaling", action="store_true",
                    help="also time 1 thread, alternating iterations with --threads")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    path = os.path.join(a.anchors, "torch_bench.py")
    if not os.path.exists(path):
        print("torch_anchor: %s not found" % path, file=sys.stderr)
        sys.exit(77)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch_anchor: %s cannot import torch (apt-get install python3-torch "
              "python3-torchvision; use /usr/bin/python3)" % sys.executable, file=sys.stderr)
        sys.exit(77)
    if a.scaling and a.threads < 2:
        print("torch_anchor: --scaling compares --threads N (2 or more) with 1", file=sys.stderr)
        sys.exit(2)
    if a.child:
        run_one(a, a.models[0])
        return
    rc = 0
    for m in a.models:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--anchors", a.anchors,
               "--threads", str(a.threads), "--budget-scale", str(a.budget_scale),
               "--min-iters", str(a.min_iters), "--batch", str(a.batch), m]
        if a.scaling:
            cmd.insert(-1, "--scaling")
        p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        sys.stdout.write(p.stdout)
        sys.stdout.flush()
        if p.returncode:
            print("torch_anchor: %s failed (exit %d)" % (m, p.returncode), file=sys.stderr)
            rc = 1
    sys.exit(rc)


if __name__ == "__main__":
    main()
