"""Training-step speed: milliseconds per forward + backward + optimizer step, ours vs PyTorch
at one thread, and where our step spends its time.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/train_step.py [--json out.json]
        [--steps 50] [--warmup 10] [--models mlp,cnn,transformer] [--threads 1 2]

Models (cross-entropy loss over 10 classes each):

    mlp          MLP 784-256-10 on a batch of 128 flattened images; SGD(momentum=0.9)
    cnn          SmallCNN on a batch of 64 1x28x28 images; SGD(momentum=0.9)
    transformer  nn.TransformerEncoder of 2 post-norm TransformerEncoderLayer(d_model=64,
                 nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True), the output
                 mean-pooled over the sequence into a Linear(64, 10) head, on a batch of 32
                 sequences of 32 float vectors; Adam(lr=1e-3). (dropout=0.0 so that both
                 frameworks compute the same thing.)

Both frameworks start from the same weights (ours copied into the PyTorch twin) and see the
same batch; the first step's loss and updated weights are compared. (With Adam the weights can
differ by a few percent of lr after it: Adam's first step is about lr * sign(grad), so a
parameter whose gradient is zero up to rounding -- the key bias of attention, whose gradient
is exactly zero in real arithmetic -- moves by +-lr on noise, in either framework.) Each
figure is the median over ``--steps`` steps after
``--warmup`` steps. Threads (``--threads 1 2`` measures each count; default 1):
``torch.set_num_threads(n)``, our ``set_num_threads(n)`` (native kernels) and numpy's BLAS
(OPENBLAS_NUM_THREADS, and threadpoolctl when installed).

Environment: the script re-executes itself once with ``MALLOC_MMAP_THRESHOLD_=1000000000
MALLOC_TRIM_THRESHOLD_=1000000000`` set: glibc then serves large buffers from its heap and keeps
freed ones for reuse instead of mmap/munmap-ing (and page-faulting) them on every step; both
frameworks run under the same setting. It also sets
OPENBLAS_NUM_THREADS=1. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset by the command above so
that OpenBLAS picks its kernels for this CPU as a plain install would; ``--no-reexec`` skips the
re-execution.

The per-op breakdown comes from a profiling hook local to this script: every Function
subclass's ``forward`` and ``backward`` is wrapped with a timer (library files are untouched and
the wrappers are removed afterwards). Only the outermost Function call is timed, so a backward
that runs other ops (a conv's backward doing matmuls) counts them as its own; the rest of the
step ("python / autograd overhead") is module calls, Function.apply bookkeeping and the
engine. The optimizer step and zero_grad are timed on their own.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections import defaultdict

_ENV = {"MALLOC_MMAP_THRESHOLD_": "1000000000", "MALLOC_TRIM_THRESHOLD_": "1000000000",
        "OPENBLAS_NUM_THREADS": "1"}   # raised to the largest --threads value at re-execution


def _reexec_if_needed(argv):
    if "--no-reexec" in argv or os.environ.get("_MTE_BENCH_REEXEC") == "1":
        return
    env = dict(os.environ, _MTE_BENCH_REEXEC="1")
    for k, v in _ENV.items():
        env.setdefault(k, v)
    if "--threads" in argv:          # numpy's BLAS pool must be sized before numpy loads
        counts = []
        for a in argv[argv.index("--threads") + 1:]:
            if not a.isdigit():
                break
            counts.append(int(a))
        if counts and "OPENBLAS_NUM_THREADS" not in os.environ:
            env["OPENBLAS_NUM_THREADS"] = str(max(counts))
    os.execve(sys.executable, [sys.executable, os.path.abspath(__file__)] + argv, env)


if __name__ == "__main__":
    _reexec_if_needed(sys.argv[1:])

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import minitorch_edge as mte  # noqa: E402
import minitorch_edge.models as models  # noqa: E402
from minitorch_edge import nn, optim  # noqa: E402
from minitorch_edge.autograd.function import Function  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


# ---- the profiling hook ------------------------------------------------------------------------
class OpProfiler:
    """Wrap forward/backward of every Function subclass with a timer (outermost call only)."""

    def __init__(self):
        self.times = defaultdict(float)
        self.calls = defaultdict(int)
        self._depth = 0
        self._saved = []

    @staticmethod
    def _subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from OpProfiler._subclasses(sub)

    @staticmethod
    def _resolve(cls, name):
        for klass in cls.__mro__:
            if name in klass.__dict__:
                return klass.__dict__[name]
        return None

    def _wrap(self, fn, key):
        prof = self

        def timed(*args):
            if prof._depth:
                return fn(*args)
            prof._depth += 1
            t0 = time.perf_counter()
            try:
                return fn(*args)
            finally:
                prof.times[key] += time.perf_counter() - t0
                prof.calls[key] += 1
                prof._depth -= 1
        return timed

    def __enter__(self):
        classes = list(dict.fromkeys(self._subclasses(Function)))
        originals = {(cls, name): self._resolve(cls, name)
                     for cls in classes for name in ("forward", "backward")}
        for (cls, name), raw in originals.items():
            if not isinstance(raw, staticmethod):
                continue
            self._saved.append((cls, name, cls.__dict__.get(name)))
            setattr(cls, name, staticmethod(self._wrap(raw.__func__, (cls.__name__, name))))
        return self

    def __exit__(self, *exc):
        for cls, name, original in reversed(self._saved):
            if original is None:
                delattr(cls, name)
            else:
                setattr(cls, name, original)
        self._saved.clear()

    def reset(self):
        self.times.clear()
        self.calls.clear()


# ---- the step ------------------------------------------------------------------------------------
def our_step(model, opt, x, y, timers=None):
    t0 = time.perf_counter()
    opt.zero_grad()
    t1 = time.perf_counter()
    loss = nn.functional.cross_entropy(model(x), y)
    t2 = time.perf_counter()
    loss.backward()
    t3 = time.perf_counter()
    opt.step()
    t4 = time.perf_counter()
    if timers is not None:
        for k, dt in (("zero_grad", t1 - t0), ("forward", t2 - t1), ("backward", t3 - t2),
                      ("optimizer step", t4 - t3)):
            timers[k] += dt
    return loss


def torch_step(model, opt, x, y):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def median_ms(step, steps, warmup):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), times


# ---- the cases -----------------------------------------------------------------------------------
class SeqClassifier(nn.Module):
    """The transformer case: encoder -> mean over the sequence -> Linear head (ours)."""

    def __init__(self, d_model=64, nhead=4, dim_feedforward=128, num_layers=2, classes=10):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, classes)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


LABELS = {"mlp": "MLP 784-256-10, batch 128", "cnn": "SmallCNN 1x28x28, batch 64",
          "transformer": "Transformer 2x(d64, 4 heads, ff128), batch 32 x seq 32, Adam"}


def build_cases(names, rng):
    cases = []
    for name in names:
        mte.manual_seed(0)
        if name == "mlp":
            ours, batch, shape = models.MLP(784, (256,), 10), 128, (784,)
        elif name == "cnn":
            ours, batch, shape = models.SmallCNN(1, 10), 64, (1, 28, 28)
        elif name == "transformer":
            ours, batch, shape = SeqClassifier(), 32, (32, 64)
        else:
            raise SystemExit(f"unknown model {name!r}; choose from {', '.join(LABELS)}")
        x = rng.standard_normal((batch,) + shape).astype(np.float32)
        y = rng.integers(0, 10, batch)
        theirs = None
        if torch is not None:
            theirs = _torch_model(name)
            theirs.load_state_dict({k: torch.from_numpy(np.array(v.numpy()))
                                    for k, v in ours.state_dict().items()})
        cases.append((name, LABELS[name], ours, theirs, x, y))
    return cases


def _torch_model(name):
    tnn = torch.nn
    if name == "mlp":
        class MLP(tnn.Module):
            def __init__(self):
                super().__init__()
                self.layers = tnn.Sequential(tnn.Linear(784, 256), tnn.ReLU(),
                                             tnn.Linear(256, 10))

            def forward(self, x):
                return self.layers(x)
        return MLP()

    if name == "transformer":
        class SeqClassifier(tnn.Module):
            def __init__(self):
                super().__init__()
                layer = tnn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
                self.encoder = tnn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
                self.head = tnn.Linear(64, 10)

            def forward(self, x):
                return self.head(self.encoder(x).mean(1))
        return SeqClassifier()

    class SmallCNN(tnn.Module):
        def __init__(self):
            super().__init__()
            self.features = tnn.Sequential(tnn.Conv2d(1, 16, 3), tnn.ReLU(), tnn.MaxPool2d(2),
                                           tnn.Conv2d(16, 32, 3), tnn.ReLU(), tnn.MaxPool2d(2))
            self.fc = tnn.Linear(800, 10)

        def forward(self, x):
            return self.fc(self.features(x).flatten(1))
    return SmallCNN()


def _optimizers(name, ours, theirs):
    """The case's optimizer for ours and (when given) for the PyTorch twin, and its name."""
    if name == "transformer":
        make, kw, opt_name = "Adam", dict(lr=1e-3), "Adam"
    else:
        make, kw, opt_name = "SGD", dict(lr=0.01, momentum=0.9), "SGD momentum"
    opt = getattr(optim, make)(ours.parameters(), **kw)
    topt = None if theirs is None else getattr(torch.optim, make)(theirs.parameters(), **kw)
    return opt, topt, opt_name


def run_case(case, steps, warmup):
    name, label, ours, theirs, x, y = case
    result = {"model": name, "label": label}
    ox, oy = mte.tensor(x), mte.tensor(y)
    opt, topt, opt_name = _optimizers(name, ours, theirs)
    if theirs is not None:
        # correctness first: the same first-step loss and updated weights
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        l_ours = float(our_step(ours, opt, ox, oy).item())
        l_torch = float(torch_step(theirs, topt, tx, ty).item())
        o_state = ours.state_dict()
        result["first_step_loss_diff"] = abs(l_ours - l_torch)
        result["weight_diff_after_step"] = max(
            float(np.abs(np.array(o_state[k].numpy()) - v.detach().numpy()).max())
            for k, v in theirs.state_dict().items())
        result["torch_ms"], _ = median_ms(lambda: torch_step(theirs, topt, tx, ty), steps, warmup)
    result["ours_ms"], _ = median_ms(lambda: our_step(ours, opt, ox, oy), steps, warmup)
    if theirs is not None:
        result["ratio"] = result["ours_ms"] / result["torch_ms"]

    # the breakdown (a separate, profiled run: the wrappers add a little time of their own)
    phases = defaultdict(float)
    with OpProfiler() as prof:
        for _ in range(max(2, warmup // 2)):
            our_step(ours, opt, ox, oy)
        prof.reset()
        n = max(5, steps // 2)
        t0 = time.perf_counter()
        for _ in range(n):
            our_step(ours, opt, ox, oy, phases)
        total = (time.perf_counter() - t0) / n * 1e3
    rows = []
    for (cls, kind), t in prof.times.items():
        rows.append({"op": f"{cls}.{kind}", "calls": prof.calls[(cls, kind)] // n,
                     "ms": t / n * 1e3})
    op_ms = sum(r["ms"] for r in rows)
    fb_ms = (phases["forward"] + phases["backward"]) / n * 1e3
    rows.append({"op": "python / autograd overhead (forward + backward - ops)", "calls": None,
                 "ms": fb_ms - op_ms})
    rows.append({"op": f"optimizer step ({opt_name})", "calls": None,
                 "ms": phases["optimizer step"] / n * 1e3})
    rows.append({"op": "zero_grad", "calls": None, "ms": phases["zero_grad"] / n * 1e3})
    rows.sort(key=lambda r: -r["ms"])
    for r in rows:
        r["pct"] = 100.0 * r["ms"] / total
    result["profiled_step_ms"] = total
    result["phases_ms"] = {k: v / n * 1e3 for k, v in phases.items()}
    result["breakdown"] = rows
    return result


def markdown(results):
    out = ["| model | ours (ms/step) | PyTorch (ms/step) | ours / PyTorch |",
           "|---|---:|---:|---:|"]
    for r in results:
        t = f"{r['torch_ms']:.2f}" if "torch_ms" in r else "n/a"
        q = f"{r['ratio']:.2f}x" if "ratio" in r else "n/a"
        out.append(f"| {r['label']} | {r['ours_ms']:.2f} | {t} | {q} |")
    for r in results:
        ph = r["phases_ms"]
        out += ["", f"**{r['label']}**: our step, profiled ({r['profiled_step_ms']:.2f} ms; "
                f"forward {ph['forward']:.2f}, backward {ph['backward']:.2f}, optimizer "
                f"{ph['optimizer step']:.2f}, zero_grad {ph['zero_grad']:.2f})", "",
                "| op | calls/step | ms/step | % of step |", "|---|---:|---:|---:|"]
        for row in r["breakdown"]:
            if row["ms"] < 0.005 and row["calls"] is not None:
                continue
            calls = "" if row["calls"] is None else str(row["calls"])
            out.append(f"| {row['op']} | {calls} | {row['ms']:.3f} | {row['pct']:.1f} |")
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--models", default="mlp,cnn,transformer")
    parser.add_argument("--json", default=None)
    parser.add_argument("--no-reexec", action="store_true")
    parser.add_argument("--threads", type=int, nargs="+", default=[1],
                        help="thread counts to measure, e.g. --threads 1 2")
    args = parser.parse_args(argv)
    if torch is None:
        print("PyTorch is not installed: measuring ours only", file=sys.stderr)
    results = []
    for threads in args.threads:
        mte.set_num_threads(threads)
        limit = None
        if torch is not None:
            torch.set_num_threads(threads)
        try:   # numpy's OpenBLAS (used for tiny heads) follows too, when threadpoolctl is there
            from threadpoolctl import threadpool_limits
            limit = threadpool_limits(threads)
        except ImportError:
            pass
        rng = np.random.default_rng(0)     # the same models and batches for every count
        for c in build_cases(args.models.split(","), rng):
            r = run_case(c, args.steps, args.warmup)
            r["threads"] = threads
            r["label"] = f"{r['label']}, {threads} thread{'s' if threads > 1 else ''}"
            results.append(r)
        if limit is not None and hasattr(limit, "unregister"):
            limit.unregister()
    env = {"python": platform.python_version(), "numpy": np.__version__,
           "torch": torch.__version__ if torch is not None else None,
           "backend": mte.backend.info().get("backend"),
           "isa": mte.backend.info().get("isa"),
           "cpu_count": os.cpu_count(), "machine": platform.machine(),
           "steps": args.steps, "warmup": args.warmup,
           **{k: os.environ.get(k) for k in list(_ENV) + ["OPENBLAS_CORETYPE",
                                                         "OPENBLAS_L2_SIZE"]}}
    print(markdown(results))
    for r in results:
        if "first_step_loss_diff" in r:
            print(f"\n{r['label']}: first-step loss |ours - torch| = "
                  f"{r['first_step_loss_diff']:.2e}, max weight diff after it = "
                  f"{r['weight_diff_after_step']:.2e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"env": env, "results": results}, f, indent=2)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
