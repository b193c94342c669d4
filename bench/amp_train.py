"""Mixed precision on the CPU: the training step under bfloat16 autocast against our float32
step, with PyTorch's CPU step (float32 and bfloat16 autocast) in the same run for reference;
then accuracy: the Digits CNN and the sort-task Transformer trained under bfloat16 autocast
against float32.

    python bench/amp_train.py [--json out.json] [--steps 30] [--warmup 5] [--threads 1]
        [--skip-accuracy] [--epochs 10] [--sort-steps 400]

Step timing (milliseconds per forward + loss + backward + optimizer step; medians over
``--steps`` rounds after ``--warmup``). The four variants of one model are *interleaved*: each
round runs ours-fp32, ours-bf16, torch-fp32, torch-bf16 once, so drift in the machine's load
hits them alike. Models:

    transformer  TransformerClassifier(vocab 1000, 2 classes... see CASES) on int tokens
    mlp          MLP 784-256-10, batch 128, SGD momentum

The bf16 step is autocast("cpu", dtype=bfloat16) around forward and loss; parameters and the
optimizer stay float32 (what ``Trainer(precision="bf16")`` runs). Its speed depends on the
bfloat16 kernels behind matmul/linear/conv (``_C.half_gemm_path``: AMX tdpbf16ps, VDPBF16PS,
or float32 widening) and on the per-op work around them; the table says which backend and
bf16 path ran.

Accuracy: SmallCNN on the bundled Digits split (Adam 3e-3, batch 16, ``--epochs``) with
Trainer(precision="32") and precision="bf16", test accuracy; the sort-task Transformer of
tutorials/07 (``--sort-steps`` Adam steps on random length-6 sequences), token accuracy on
2,000 held-out sequences, float32 and bf16 autocast. Same seeds in both precisions.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import minitorch_edge as mte  # noqa: E402
import minitorch_edge.nn.functional as F  # noqa: E402
from minitorch_edge import models, nn, optim  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

VOCAB, SEQ, BATCH_T = 1000, 64, 32
TRANSFORMER_KW = dict(vocab_size=VOCAB, num_classes=2, d_model=128, nhead=4, num_layers=2,
                      dim_feedforward=256, max_len=SEQ, dropout=0.0)
LABELS = {"transformer": f"TransformerClassifier d128 4 heads ff256 x2, batch {BATCH_T} x seq "
                         f"{SEQ}, Adam",
          "mlp": "MLP 784-256-10, batch 128, SGD momentum"}


# ---- the models, ours and PyTorch's twin -------------------------------------------------------
def _torch_transformer():
    tnn = torch.nn

    class TorchTransformerClassifier(tnn.Module):
        def __init__(self, kw):
            super().__init__()
            d = kw["d_model"]
            self.embed = tnn.Embedding(kw["vocab_size"], d)
            self.pos_embed = tnn.Parameter(torch.zeros(1, kw["max_len"], d))
            layer = tnn.TransformerEncoderLayer(d, kw["nhead"], kw["dim_feedforward"], 0.0,
                                                batch_first=True, norm_first=True)
            self.encoder = tnn.TransformerEncoder(layer, kw["num_layers"],
                                                  enable_nested_tensor=False)
            self.norm = tnn.LayerNorm(d)
            self.head = tnn.Linear(d, kw["num_classes"])

        def forward(self, tokens):
            h = self.embed(tokens) + self.pos_embed[:, :tokens.shape[1]]
            return self.head(self.norm(self.encoder(h)).mean(1))
    return TorchTransformerClassifier(TRANSFORMER_KW)


def _torch_mlp():
    tnn = torch.nn
    return tnn.Sequential(tnn.Linear(784, 256), tnn.ReLU(), tnn.Linear(256, 10))


def build(name, rng):
    mte.manual_seed(0)
    if name == "transformer":
        ours = models.TransformerClassifier(**TRANSFORMER_KW)
        x = rng.integers(0, VOCAB, (BATCH_T, SEQ))
        y = rng.integers(0, 2, BATCH_T)
        theirs = _torch_transformer() if torch is not None else None
        make_opt = ("Adam", dict(lr=1e-3))
    else:
        ours = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
        x = rng.standard_normal((128, 784)).astype(np.float32)
        y = rng.integers(0, 10, 128)
        theirs = _torch_mlp() if torch is not None else None
        make_opt = ("SGD", dict(lr=0.01, momentum=0.9))
    return ours, theirs, x, y, make_opt


def our_step(model, opt, x, y, dtype):
    with mte.autocast("cpu", dtype=dtype or mte.bfloat16, enabled=dtype is not None):
        loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def torch_step(model, opt, x, y, dtype):
    with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def time_case(name, steps, warmup, rng):
    ours, theirs, x, y, (opt_name, kw) = build(name, rng)
    ox, oy = mte.tensor(x), mte.tensor(y)
    variants = {"ours_fp32": (lambda o=getattr(optim, opt_name)(ours.parameters(), **kw):
                              our_step(ours, o, ox, oy, None)),
                "ours_bf16": (lambda o=getattr(optim, opt_name)(ours.parameters(), **kw):
                              our_step(ours, o, ox, oy, mte.bfloat16))}
    if theirs is not None:
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        variants["torch_fp32"] = (lambda o=getattr(torch.optim, opt_name)(theirs.parameters(),
                                                                          **kw):
                                  torch_step(theirs, o, tx, ty, None))
        variants["torch_bf16"] = (lambda o=getattr(torch.optim, opt_name)(theirs.parameters(),
                                                                          **kw):
                                  torch_step(theirs, o, tx, ty, torch.bfloat16))
    times = {k: [] for k in variants}
    for round_ in range(warmup + steps):
        for key, step in variants.items():          # interleaved
            t0 = time.perf_counter()
            step()
            dt = (time.perf_counter() - t0) * 1e3
            if round_ >= warmup:
                times[key].append(dt)
    out = {"model": name, "label": LABELS[name]}
    out.update({k + "_ms": statistics.median(v) for k, v in times.items()})
    out["ours_speedup"] = out["ours_fp32_ms"] / out["ours_bf16_ms"]
    if theirs is not None:
        out["torch_speedup"] = out["torch_fp32_ms"] / out["torch_bf16_ms"]
    return out


# ---- accuracy in each precision ----------------------------------------------------------------
def digits_accuracy(precision, epochs):
    from minitorch_edge.data import DataLoader
    from minitorch_edge.data.datasets import Digits
    from minitorch_edge.train import Trainer
    mte.manual_seed(0)
    model = models.SmallCNN(1, 10, input_size=8)
    opt = optim.Adam(model.parameters(), lr=3e-3)
    train, test = Digits(train=True), Digits(train=False)
    trainer = Trainer(model, opt, F.cross_entropy, verbose=0, seed=0, precision=precision,
                      scheduler=optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs))
    trainer.fit(DataLoader(train, batch_size=16, shuffle=True), epochs=epochs)
    return trainer.evaluate(DataLoader(test, batch_size=256))["accuracy"]


class Sorter(nn.Module):
    """tutorials/07_transformer.py's sort-task model."""

    def __init__(self, vocab=10, length=6, d_model=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(mte.randn(length, d_model) * 0.1)
        layer = nn.TransformerEncoderLayer(d_model, nhead=2, dim_feedforward=64, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens) + self.pos))


def sort_accuracy(dtype, steps):
    mte.manual_seed(0)
    model = Sorter()
    opt = optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        seq = mte.randint(0, 10, (64, 6))
        target = seq.sort(dim=-1).values
        with mte.autocast("cpu", dtype=dtype or mte.bfloat16, enabled=dtype is not None):
            loss = F.cross_entropy(model(seq).reshape(-1, 10), target.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    rng = np.random.default_rng(123)
    test = mte.tensor(rng.integers(0, 10, (2000, 6)))
    with mte.no_grad(), mte.autocast("cpu", dtype=dtype or mte.bfloat16,
                                     enabled=dtype is not None):
        pred = model(test).argmax(-1)
    return float((pred == test.sort(dim=-1).values).float().mean().item())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--models", default="transformer,mlp")
    ap.add_argument("--skip-accuracy", action="store_true")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--sort-steps", type=int, default=400)
    args = ap.parse_args(argv)
    mte.set_num_threads(args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
    from minitorch_edge import backend
    dispatch = backend.table()
    info = {"machine": platform.processor() or platform.machine(), "threads": args.threads,
            "backend": backend.active(),
            "kernels": {k: dispatch.get(k) for k in ("matmul", "linear", "conv2d")},
            "torch": None if torch is None else torch.__version__}
    try:
        from minitorch_edge import _C
        info["bf16_gemm"] = _C.half_gemm_path(mte.bfloat16.np)
    except ImportError:
        info["bf16_gemm"] = "numpy twin (float32 widening)"
    print(f"backend {info['backend']}, kernels {info['kernels']}; bf16 GEMM: "
          f"{info['bf16_gemm']}")
    rng = np.random.default_rng(0)
    rows = [time_case(m, args.steps, args.warmup, rng) for m in args.models.split(",")]
    print(f"training step, ms (median of {args.steps}, interleaved; threads {args.threads})")
    print(f"{'model':12s} {'ours fp32':>10s} {'ours bf16':>10s} {'speedup':>8s} "
          f"{'torch fp32':>11s} {'torch bf16':>11s} {'speedup':>8s}")
    for r in rows:
        print(f"{r['model']:12s} {r['ours_fp32_ms']:10.2f} {r['ours_bf16_ms']:10.2f} "
              f"{r['ours_speedup']:7.2f}x {r.get('torch_fp32_ms', float('nan')):11.2f} "
              f"{r.get('torch_bf16_ms', float('nan')):11.2f} "
              f"{r.get('torch_speedup', float('nan')):7.2f}x")
    acc = {}
    if not args.skip_accuracy:
        acc["digits_fp32"] = digits_accuracy("32", args.epochs)
        acc["digits_bf16"] = digits_accuracy("bf16", args.epochs)
        acc["sort_fp32"] = sort_accuracy(None, args.sort_steps)
        acc["sort_bf16"] = sort_accuracy(mte.bfloat16, args.sort_steps)
        print("\naccuracy (same seeds)       float32    bf16 autocast   difference (points)")
        for task in ("digits", "sort"):
            a, b = acc[task + "_fp32"], acc[task + "_bf16"]
            print(f"{task:24s} {a:10.2%} {b:14.2%} {100 * (b - a):+12.2f}")
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"info": info, "steps": rows, "accuracy": acc}, f, indent=1)
        os.replace(tmp, args.json)


if __name__ == "__main__":
    main()
