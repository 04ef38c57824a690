#!/usr/bin/python3
"""bench/torch_fmnist.py - the PyTorch side of bench/fmnist_compare.sh.

Trains the same nets as slim's models/lenet.yaml and models/resnet_fmnist.yaml
on Fashion-MNIST with the same optimizer, schedule, batch, preprocessing and
initializers, and prints one JSON line per epoch: test accuracy, training
seconds (the epoch's steps only; evaluation is timed apart) and how many cores
other processes used meanwhile.

    /usr/bin/python3 bench/torch_fmnist.py --model=lenet --epochs=5 --lock=/tmp/cpu.lock

  lenet   TF-Slim nets/lenet.py: conv 5x5x32 SAME + relu, max_pool 2/2, conv
          5x5x64 SAME + relu, max_pool 2/2, fc 1024 + relu, dropout 0.5, fc 10;
          weights truncated normal (stddev 0.1, redrawn beyond 2 stddev),
          biases 0.
  resnet  ResNet-14 for 28x28x1 (models/resnet_fmnist.yaml): conv 3x3x16,
          three stages of two basic blocks (16, 32, 64 channels, stride 2 at
          the start of the last two), batch norm (momentum 0.1 = TF decay 0.9,
          eps 1e-5) after every conv, 1x1 conv + BN shortcuts where the shape
          changes, global average pooling, fc 10; convs He normal (fan_in),
          fc Xavier uniform, biases 0.

Input: pixels (x - 128) / 128 (TF-Slim's lenet_preprocessing, which slim's
recipe uses for both nets); a new random order every epoch. Optimizer: SGD
with momentum (TF's and PyTorch's momentum rules agree: a = m a + g,
w -= lr a), a fixed learning rate, L2 weight decay on conv/fc weights only
(TF-Slim's l2_regularizer: decay_mult 1 for weights, 0 for biases and BN).

Written for this project; the shared anchor ../shared/anchors/torch_fmnist.py
(PyTorch's default init, inputs /255) is a different run.
"""
import argparse
import fcntl
import gzip
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(d, stem):
    def path(kind):
        p = os.path.join(d, "%s-%s-idx%d-ubyte.gz" % (stem, kind, 3 if kind == "images" else 1))
        return p if os.path.exists(p) else p[:-3]
    x = torch.from_numpy(read_idx(path("images")).astype(np.float32))
    x = ((x - 128.0) / 128.0).unsqueeze(1).contiguous()  # N, 1, 28, 28
    y = torch.from_numpy(read_idx(path("labels")).astype(np.int64))
    return x, y


def trunc_normal_(w, std):
    # TF's truncated_normal: redraw values beyond 2 stddev
    with torch.no_grad():
        t = torch.randn(w.shape)
        while True:
            bad = t.abs() > 2
            if not bad.any():
                break
            t[bad] = torch.randn(int(bad.sum()))
        w.copy_(t * std)


class LeNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.fc3 = nn.Linear(7 * 7 * 64, 1024)
        self.fc4 = nn.Linear(1024, classes)
        for m in (self.conv1, self.conv2, self.fc3, self.fc4):
            trunc_normal_(m.weight, 0.1)
            nn.init.zeros_(m.bias)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        # NHWC flatten order as slim's: irrelevant to training, kept for parity
        x = torch.flatten(x.permute(0, 2, 3, 1), 1)
        x = F.dropout(F.relu(self.fc3(x)), 0.5, self.training)
        return self.fc4(x)


def conv_bn(cin, cout, k, stride):
    conv = nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False)
    nn.init.kaiming_normal_(conv.weight, mode="fan_in", nonlinearity="relu")
    return nn.Sequential(conv, nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1))


class Basic(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = conv_bn(cin, cout, 3, stride)
        self.conv2 = conv_bn(cout, cout, 3, 1)
        self.shortcut = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else None

    def forward(self, x):
        s = self.shortcut(x) if self.shortcut is not None else x
        return F.relu(s + self.conv2(F.relu(self.conv1(x))))


class ResNet(nn.Module):
    def __init__(self, n=2, classes=10):
        super().__init__()
        self.conv1 = conv_bn(1, 16, 3, 1)
        blocks, cin = [], 16
        for depth, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(n):
                blocks.append(Basic(cin, depth, stride if i == 0 else 1))
                cin = depth
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, classes)
        nn.init.xavier_uniform_(self.fc.weight)
        nn.init.zeros_(self.fc.bias)

    def forward(self, x):
        x = self.blocks(F.relu(self.conv1(x)))
        return self.fc(x.mean((2, 3)))


def busy_seconds():
    with open("/proc/stat") as f:
        v = [int(t) for t in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def my_cpu_seconds():
    t = os.times()
    return t.user + t.system


def evaluate(model, x, y, batch=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            correct += (model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    model.train()
    return correct / len(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["lenet", "resnet"], default="lenet")
    ap.add_argument("--dataset_dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch_size", type=int, default=64)
    ap.add_argument("--learning_rate", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight_decay", type=float, default=0.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lock", default="", help="hold this flock file while each epoch trains")
    ap.add_argument("--json", default="", help="also append the JSON lines to this file")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    xtr, ytr = load(a.dataset_dir, "train")
    xte, yte = load(a.dataset_dir, "t10k")
    model = LeNet() if a.model == "lenet" else ResNet()
    decay = [p for n, p in model.named_parameters() if p.dim() > 1]
    other = [p for n, p in model.named_parameters() if p.dim() <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": a.weight_decay},
                           {"params": other, "weight_decay": 0.0}],
                          lr=a.learning_rate, momentum=a.momentum)
    n = len(xtr)
    steps_per_epoch = math.ceil(n / a.batch_size)
    out = open(a.json, "a") if a.json else None
    for epoch in range(1, a.epochs + 1):
        perm = torch.randperm(n)
        lock = open(a.lock, "w") if a.lock else None
        if lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
        b0, c0, t0 = busy_seconds(), my_cpu_seconds(), time.perf_counter()
        loss_sum = 0.0
        for s in range(steps_per_epoch):
            idx = perm[s * a.batch_size:(s + 1) * a.batch_size]
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            loss_sum += loss.item()
        secs = time.perf_counter() - t0
        other_cores = max(0.0, (busy_seconds() - b0 - (my_cpu_seconds() - c0)) / secs)
        t1 = time.perf_counter()
        acc = evaluate(model, xte, yte)
        eval_s = time.perf_counter() - t1
        if lock:
            lock.close()
        rec = {"side": "pytorch", "model": a.model, "epoch": epoch,
               "train_loss": round(loss_sum / steps_per_epoch, 4),
               "test_accuracy": round(acc, 4), "train_seconds": round(secs, 2),
               "images_per_sec": round(n / secs, 1), "eval_seconds": round(eval_s, 2),
               "other_cores": round(other_cores, 2), "threads": a.threads,
               "torch": torch.__version__}
        line = json.dumps(rec)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()


if __name__ == "__main__":
    sys.exit(main())
