#!/usr/bin/python3
"""Export a torchvision classifier to ONNX with Debian's PyTorch, with the
reference logits for a random batch: what slim's import is compared with.

usage: torch_export.py MODEL OPSET SIZE BATCH OUTDIR [--mode=preserve|eval] [--seed=N]
                       [--ref_batch=N]

Writes OUTDIR/model.onnx, OUTDIR/x.npy (float32 (BATCH, 3, SIZE, SIZE)) and
OUTDIR/y.npy (PyTorch's logits). The weights are torchvision's random
initialization (fixed seed), with every batch norm's scale, shift and
running statistics drawn at random too, so that the comparison exercises
them. --mode=preserve (default) exports with TrainingMode.PRESERVE on the
model in eval mode: batch norms stay BatchNormalization nodes with their
parameters' names; eval is torch.onnx.export's default, which folds them
into the convolutions. --ref_batch: x.npy and y.npy for a batch of N instead
(the export still traces BATCH: exporters bake it into some reshapes, which
slim's import must not keep). Exit 77 when torch or torchvision is missing.
"""
import os
import sys
import warnings

try:
    import numpy as np
    import torch
    import torchvision
except ImportError as e:  # the test skips
    print("torch_export.py: %s (apt-get install python3-torch python3-torchvision)" % e,
          file=sys.stderr)
    sys.exit(77)


def main(argv):
    opts = dict(a[2:].split("=", 1) for a in argv if a.startswith("--"))
    pos = [a for a in argv if not a.startswith("--")]
    name, opset, size, batch, out = pos[0], int(pos[1]), int(pos[2]), int(pos[3]), pos[4]
    mode = opts.get("mode", "preserve")
    seed = int(opts.get("seed", "1"))
    torch.manual_seed(seed)
    kwargs = {}
    if name in ("googlenet", "inception_v3"):
        kwargs = {"aux_logits": False, "init_weights": True}
    model = getattr(torchvision.models, name)(**kwargs)
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                c = m.num_features
                m.weight.copy_(0.5 + torch.rand(c, generator=gen))
                m.bias.copy_(0.1 * torch.randn(c, generator=gen))
                m.running_mean.copy_(0.1 * torch.randn(c, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(c, generator=gen))
            elif isinstance(m, torch.nn.LayerNorm):
                m.weight.copy_(0.5 + torch.rand(m.weight.shape, generator=gen))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))
            if hasattr(m, "layer_scale"):  # ConvNeXt's 1e-6 would hide its blocks
                m.layer_scale.copy_(0.1 + 0.1 * torch.rand(m.layer_scale.shape, generator=gen))
    model.eval()
    x = torch.randn(batch, 3, size, size, generator=gen)
    ref_batch = int(opts.get("ref_batch", batch))
    xr = torch.randn(ref_batch, 3, size, size, generator=gen) if ref_batch != batch else x
    with torch.no_grad():
        y = model(xr)
    os.makedirs(out, exist_ok=True)
    training = (torch.onnx.TrainingMode.PRESERVE if mode == "preserve"
                else torch.onnx.TrainingMode.EVAL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, x, os.path.join(out, "model.onnx"), opset_version=opset,
                          training=training, do_constant_folding=True,
                          input_names=["images"], output_names=["logits"])
    np.save(os.path.join(out, "x.npy"), xr.numpy().astype(np.float32))
    np.save(os.path.join(out, "y.npy"), y.numpy().astype(np.float32))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
