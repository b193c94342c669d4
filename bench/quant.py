"""Int8: accuracy, fidelity and speed of our quantization, against float and onnxruntime's, in
one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/quant.py [--threads 1 2]
        [--parts digits,fidelity,speed] [--size 224] [--repeats 20] [--out FILE]

1. digits: the demo's SmallCNN trained on the bundled Digits (the demo's recipe: Adam 3e-3,
   cosine schedule, batch 16, 30 epochs, seed 0); test accuracy in float32, after post-
   training quantization (quant.quantize, 256 training images, per channel) with each
   observer, and after QAT (quant.prepare_qat, 3 epochs at lr 5e-4, quant.convert).
2. fidelity: MobileNetV2, randomly initialised, its BatchNorm statistics set by running 64
   random images through it in train mode (cumulative averages), then eval. 32 random images
   calibrate ours (quant.quantize, min/max) and onnxruntime's static quantization
   (quantize_static: QDQ, per channel, int8 weights, uint8 activations, MinMax; of the ONNX
   file torch.onnx.export writes from the PyTorch twin with the same weights); 16 other
   images measure each against the float32 output: SQNR (dB) and mean cosine similarity.
3. speed: MobileNetV2 and ResNet-18 at 224x224, batch 1: our int8 graph through the executor
   against onnxruntime running its own QDQ model (the fastest x86 form: uint8 activations,
   int8 per-channel weights, ORT_ENABLE_ALL), and both float32 runs for reference; medians of
   interleaved rounds (bench/models.py's timing), ratios in the same run.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import models as bench_models  # noqa: E402  (bench/models.py: re-exec, twins, ONNX, timing)

if __name__ == "__main__":
    bench_models._reexec_if_needed(sys.argv[1:], __file__)

import numpy as np  # noqa: E402

import minitorch_edge as mte  # noqa: E402
from minitorch_edge import models, nn, optim, quant  # noqa: E402
from minitorch_edge.data import DataLoader  # noqa: E402
from minitorch_edge.quant.mixed_precision import sqnr  # noqa: E402

ort = bench_models.ort
torch = bench_models.torch


# ---- 1. digits ----------------------------------------------------------------------------------
def _arrays(dataset):
    xs, ys = zip(*[dataset[i] for i in range(len(dataset))])
    return (np.stack([np.asarray(getattr(x, "_data", x)) for x in xs]).astype(np.float32),
            np.array([int(getattr(y, "item", lambda: y)()) for y in ys]))


def _accuracy(predict, x, y):
    return float((np.asarray(predict(x)).argmax(1) == y).mean())


def _train(model, loader, epochs, lr):
    from minitorch_edge.train import Trainer
    opt = optim.Adam(model.parameters(), lr=lr)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=sched, seed=0, verbose=0).fit(
        loader, epochs=epochs)
    return model.eval()


def digits(epochs=30):
    from minitorch_edge.data.datasets import Digits
    mte.manual_seed(0)
    train_set, test_set = Digits(train=True), Digits(train=False)
    loader = DataLoader(train_set, batch_size=16, shuffle=True)
    model = _train(models.SmallCNN(in_channels=1, num_classes=10, input_size=8), loader,
                   epochs, 3e-3)
    x_test, y_test = _arrays(test_set)
    x_cal = _arrays(train_set)[0][:256]
    calib = [x_cal[i:i + 32] for i in range(0, len(x_cal), 32)]

    def eager(x):
        with mte.no_grad():
            return model(mte.tensor(x)).numpy()
    rows = [("float32 (eager)", _accuracy(eager, x_test, y_test), "")]
    for obs in ("minmax", "moving_average", "percentile", "entropy"):
        t0 = time.perf_counter()
        g = quant.quantize(model, calib, observer=obs, example_inputs=(x_test,))
        secs = time.perf_counter() - t0
        rows.append((f"int8 PTQ ({obs})", _accuracy(g.compile(), x_test, y_test),
                     f"{secs:.2f} s to quantize"))
    try:
        mte.manual_seed(0)
        qat = quant.prepare_qat(model)
        qat = _train(qat, loader, 3, 5e-4)
        g = quant.convert(qat, x_test)
        rows.append(("int8 QAT (3 epochs, lr 5e-4)", _accuracy(g.compile(), x_test, y_test), ""))
    except Exception as e:   # QAT missing or broken: say so in the table
        rows.append(("int8 QAT", float("nan"), bench_models._reason(e)))
    return rows


# ---- 2. fidelity on MobileNetV2 -------------------------------------------------------------------
def _calibrated_mobilenet(seed=0, size=224):
    """MobileNetV2 with random weights and BatchNorm statistics from random images."""
    ours, _ = bench_models.build_ours("mobilenet_v2", seed)
    rng = np.random.default_rng(seed + 7)
    for m in ours.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None                  # cumulative average over the batches
    ours.train()
    with mte.no_grad():
        for _ in range(8):
            ours(mte.tensor(rng.standard_normal((8, 3, size, size)).astype(np.float32)))
    ours.eval()
    state = {k: np.array(v.numpy()) for k, v in ours.state_dict().items()}
    return ours, state


class _Reader:
    """onnxruntime's CalibrationDataReader over a list of arrays."""

    def __init__(self, name, arrays):
        self.name, self.items = name, iter(arrays)

    def get_next(self):
        x = next(self.items, None)
        return None if x is None else {self.name: x}

    def rewind(self):
        pass


def ort_qdq_model(float_path, calib, out_path):
    """onnxruntime's static QDQ quantization of the ONNX file (per channel, U8 activations,
    S8 weights, MinMax)."""
    from onnxruntime.quantization import (CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process
    pre = out_path + ".pre.onnx"
    quant_pre_process(float_path, pre)
    quantize_static(pre, out_path, _Reader("x", calib), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, calibrate_method=CalibrationMethod.MinMax)
    return out_path


def _cosine(a, b):
    a, b = a.reshape(len(a), -1).astype(np.float64), b.reshape(len(b), -1).astype(np.float64)
    return float(np.mean(np.sum(a * b, 1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))))


def fidelity(tmpdir, size=224):
    ours, state = _calibrated_mobilenet(size=size)
    rng = np.random.default_rng(11)
    calib = [rng.standard_normal((1, 3, size, size)).astype(np.float32) for _ in range(32)]
    test = [rng.standard_normal((1, 3, size, size)).astype(np.float32) for _ in range(16)]
    with mte.no_grad():
        ref = [ours(mte.tensor(x)).numpy() for x in test]
    g = quant.quantize(ours, calib)
    run = g.compile()
    ref, ours_y = np.concatenate(ref), np.concatenate([run(x) for x in test])
    rows = [("ours (quant.quantize, min/max, per channel)", sqnr(ref, ours_y),
             _cosine(ref, ours_y))]
    if torch is None or ort is None:
        rows.append(("onnxruntime quantize_static", float("nan"), float("nan")))
        return rows
    twin = bench_models.build_twin("mobilenet_v2", state)
    fp = os.path.join(tmpdir, "mnv2.onnx")
    bench_models.export_onnx(twin, test[0], fp)
    qp = ort_qdq_model(fp, calib, os.path.join(tmpdir, "mnv2.qdq.onnx"))
    import onnxruntime
    s = onnxruntime.InferenceSession(qp, providers=["CPUExecutionProvider"])
    got = np.concatenate([s.run(None, {"x": x})[0] for x in test])
    rows.append(("onnxruntime quantize_static (QDQ, MinMax, per channel, U8S8)",
                 sqnr(ref, got), _cosine(ref, got)))
    return rows


# ---- 3. speed -----------------------------------------------------------------------------------
def speed(name, threads, size, repeats, warmup, tmpdir, cache):
    if name not in cache:
        ours, state = bench_models.build_ours(name, 0)
        rng = np.random.default_rng(3)
        calib = [rng.standard_normal((1, 3, size, size)).astype(np.float32) for _ in range(4)]
        entry = {"ours": ours, "int8": quant.quantize(ours, calib), "calib": calib}
        if torch is not None and ort is not None:
            twin = bench_models.build_twin(name, state)
            fp = os.path.join(tmpdir, f"{name}.onnx")
            bench_models.export_onnx(twin, calib[0], fp)
            entry["onnx"] = fp
            entry["qdq"] = ort_qdq_model(fp, calib, os.path.join(tmpdir, f"{name}.qdq.onnx"))
        cache[name] = entry
    e = cache[name]
    x = e["calib"][0]
    from minitorch_edge import graph
    f32 = graph.trace(e["ours"], x).optimize().compile()
    i8 = e["int8"].compile()
    runners = {"ours float32": lambda: f32(x), "ours int8": lambda: i8(x)}
    if "qdq" in e:
        runners["ORT float32"] = bench_models.ort_runner(e["onnx"], x, threads)
        runners["ORT int8"] = bench_models.ort_runner(e["qdq"], x, threads)
    times = bench_models.time_interleaved(runners, repeats, warmup)
    return {k: statistics.median(v) for k, v in times.items()}


# ---- the report ---------------------------------------------------------------------------------
def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--parts", default="digits,fidelity,speed")
    p.add_argument("--models", default="mobilenet_v2,resnet18")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--out", default=None)
    p.add_argument("--no-reexec", action="store_true")
    a = p.parse_args(argv)
    parts = a.parts.split(",")
    out = [f"### Int8 (bench/quant.py), backend {mte.backend.active()} "
           f"({mte.backend.info().get('isa', 'numpy')}), onnxruntime "
           f"{getattr(ort, '__version__', 'not installed')}", ""]
    if "digits" in parts:
        out += ["Digits, the demo's SmallCNN, test accuracy:", "",
                "| model | accuracy | note |", "|---|---:|---|"]
        out += [f"| {n} | {acc * 100:.2f} % | {note} |" for n, acc, note in digits(a.epochs)]
        out.append("")
    with tempfile.TemporaryDirectory(prefix="mte-bench-quant-") as tmpdir:
        if "fidelity" in parts:
            out += [f"MobileNetV2 {a.size}x{a.size} (random weights, BatchNorm statistics from "
                    "random images), int8 against float32 on 16 random images:", "",
                    "| quantization | SQNR (dB) | cosine similarity |", "|---|---:|---:|"]
            out += [f"| {n} | {s:.2f} | {c:.5f} |" for n, s, c in fidelity(tmpdir, a.size)]
            out.append("")
        if "speed" in parts:
            out += [f"Batch 1, {a.size}x{a.size}, medians of {a.repeats} interleaved rounds (ms):",
                    "", "| model | threads | ours float32 | ours int8 | ORT float32 | ORT int8 "
                    "| ours int8 / ORT int8 | ours int8 / ours float32 |",
                    "|---|---:|---:|---:|---:|---:|---:|---:|"]
            cache = {}
            for threads in a.threads:
                bench_models._set_native_threads(threads)
                for name in a.models.split(","):
                    ms = speed(name, threads, a.size, a.repeats, a.warmup, tmpdir, cache)
                    get = lambda k: f"{ms[k]:.2f}" if k in ms else "n/a"  # noqa: E731
                    ratio = (f"{ms['ours int8'] / ms['ORT int8']:.2f}x" if "ORT int8" in ms
                             else "n/a")
                    out.append(f"| {bench_models.LABELS[name]} | {threads} | "
                               f"{get('ours float32')} | {get('ours int8')} | "
                               f"{get('ORT float32')} | {get('ORT int8')} | {ratio} | "
                               f"{ms['ours int8'] / ms['ours float32']:.2f}x |")
                    print(out[-1], file=sys.stderr)
    text = "\n".join(out)
    print(text)
    if a.out:
        bench_models.write_atomic(a.out, text)


if __name__ == "__main__":
    main()
