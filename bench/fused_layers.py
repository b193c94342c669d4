"""Fused layer pairs on and off: milliseconds per call for the zoo's models with
nn/functional/fused.py's fusion enabled and disabled, in one process, and their ratio.

    python bench/fused_layers.py [--repeats 30] [--warmup 5] [--threads 1] [--json out.json]
        [--cases mlp_train,mlp_forward,cnn_eval,transformer_eval,...]  (default: all)

Cases (batch sizes as in bench/train_step.py):

    mlp_train              MLP 784-256-256-10, batch 128: forward + cross-entropy + backward
                           + SGD(momentum 0.9) step  (Linear+ReLU fused as LinearRelu)
    mlp_forward            the same MLP, forward only under no_grad
    cnn_eval               SmallCNN, batch 64 1x28x28, eval forward under no_grad
                           (Conv2d+ReLU fused, inference paths allowed)
    transformer_eval       TransformerClassifier (vocab 1000, d_model 64, 4 heads, 2 layers,
                           feed-forward 128, ReLU), batch 32 x 64 tokens, eval forward, no_grad
    transformer_gelu_eval  the same with activation="gelu"
    ff_block_eval          that Transformer's feed-forward block alone (linear1 -> ReLU ->
                           linear2, 2048 rows), no_grad: what the fusion changes in the model
    ff_block_train         the same block, forward + backward

The switch is the module flag ``minitorch_edge.nn.functional.fused.enabled`` (what
``MTE_FUSE=0`` sets at import). Fused and unfused calls alternate, so both see the same machine
state; each figure is the median over ``--repeats`` calls after ``--warmup``. Ratio = fused /
unfused (below 1: fusion pays). Both runs start from the same weights and see the same batch;
the script checks that their outputs agree. Threads: ``set_num_threads(n)`` for the native
kernels and OPENBLAS_NUM_THREADS (set before numpy loads) for numpy's BLAS. As
bench/train_step.py, the script re-executes itself once with ``MALLOC_MMAP_THRESHOLD_`` and
``MALLOC_TRIM_THRESHOLD_`` set to 1e9 (glibc then reuses freed large buffers instead of
mmap/munmap-ing them on every call). ``MTE_BACKEND=numpy`` measures the numpy backend.
"""
import argparse
import json
import os
import statistics
import sys
import time

if __name__ == "__main__" and os.environ.get("_MTE_BENCH_REEXEC") != "1":
    # as bench/train_step.py: glibc keeps freed large buffers for reuse (no mmap/munmap and page
    # faults on every call, which would favour whichever setting allocates less), and numpy's
    # BLAS pool is sized before numpy loads
    _n = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else "1"
    _env = dict(os.environ, _MTE_BENCH_REEXEC="1")
    for _k, _v in (("MALLOC_MMAP_THRESHOLD_", "1000000000"),
                   ("MALLOC_TRIM_THRESHOLD_", "1000000000"), ("OPENBLAS_NUM_THREADS", _n)):
        _env.setdefault(_k, _v)
    os.execve(sys.executable, [sys.executable, os.path.abspath(__file__)] + sys.argv[1:], _env)

import numpy as np  # noqa: E402

import minitorch_edge as mte  # noqa: E402
from minitorch_edge import models, nn, optim  # noqa: E402
from minitorch_edge.nn.functional import fused  # noqa: E402

F = nn.functional


def _mlp_train():
    mte.manual_seed(0)
    model = models.MLP(784, (256, 256), 10)
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    x = mte.tensor(rng.standard_normal((128, 784)).astype(np.float32))
    y = mte.tensor(rng.integers(0, 10, 128))
    state = {k: v.clone() for k, v in model.state_dict().items()}

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def reset():  # the same starting point for both settings (momentum buffers included)
        model.load_state_dict(state)
        opt.state.clear()
    return step, reset


def _mlp_forward():
    mte.manual_seed(0)
    model = models.MLP(784, (256, 256), 10)
    x = mte.tensor(np.random.default_rng(0).standard_normal((128, 784)).astype(np.float32))

    def fwd():
        with mte.no_grad():
            return model(x)
    return fwd, None


def _cnn_eval():
    mte.manual_seed(0)
    model = models.SmallCNN(1, 10, 28).eval()
    x = mte.tensor(np.random.default_rng(0).standard_normal((64, 1, 28, 28)).astype(np.float32))

    def fwd():
        with mte.no_grad():
            return model(x)
    return fwd, None


def _transformer(activation):
    def build():
        mte.manual_seed(0)
        model = models.TransformerClassifier(1000, 10, d_model=64, nhead=4, num_layers=2,
                                             dim_feedforward=128, max_len=64,
                                             activation=activation).eval()
        tokens = mte.tensor(np.random.default_rng(0).integers(0, 1000, (32, 64)))

        def fwd():
            with mte.no_grad():
                return model(tokens)
        return fwd, None
    return build


def _ff_block(train):
    def build():
        mte.manual_seed(0)
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
        x = mte.randn(32, 64, 64, requires_grad=train)

        def fwd():
            if train:
                layer.zero_grad()
                y = layer._ff_block(x)
                y.sum().backward()
                return y
            with mte.no_grad():
                return layer._ff_block(x)
        return fwd, None
    return build


CASES = {"mlp_train": _mlp_train, "mlp_forward": _mlp_forward, "cnn_eval": _cnn_eval,
         "transformer_eval": _transformer("relu"), "transformer_gelu_eval": _transformer("gelu"),
         "ff_block_eval": _ff_block(False), "ff_block_train": _ff_block(True)}


def _timed(fn, reset, flag):
    fused.enabled = flag
    if reset is not None:
        reset()
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1e3, out


def measure(name, repeats, warmup):
    fn, reset = CASES[name]()
    outs = {}
    for flag in (True, False):      # outputs of the first call of each setting must agree
        outs[flag] = _timed(fn, reset, flag)[1].detach().numpy()
    np.testing.assert_allclose(outs[True], outs[False], rtol=1e-4, atol=1e-5)
    times = {True: [], False: []}
    for i in range(warmup + repeats):
        for flag in ((True, False) if i % 2 == 0 else (False, True)):
            ms = _timed(fn, reset, flag)[0]
            if i >= warmup:
                times[flag].append(ms)
    fused.enabled = True
    on, off = statistics.median(times[True]), statistics.median(times[False])
    return {"case": name, "fused_ms": on, "unfused_ms": off, "ratio": on / off}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    mte.set_num_threads(args.threads)
    rows = [measure(c, args.repeats, args.warmup) for c in args.cases.split(",")]
    print(f"backend {mte.backend.active()}, {args.threads} thread(s), median of "
          f"{args.repeats} calls")
    print(f"{'case':<24}{'fused ms':>10}{'unfused ms':>12}{'ratio':>8}")
    for r in rows:
        print(f"{r['case']:<24}{r['fused_ms']:>10.3f}{r['unfused_ms']:>12.3f}{r['ratio']:>8.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"backend": mte.backend.active(), "threads": args.threads,
                       "repeats": args.repeats, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
