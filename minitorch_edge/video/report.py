"""The video report: trains and exports the cascade's models, renders the test streams, runs
the pipeline with and without motion sampling and the cascade on 1 and 2 threads, and scores
every run against the ground truth and against the reference run (every frame, every region
through the heavy model).

    report = run_report(short=True)        # seconds; the CI mode
    print(format_report(report))

Stream workers run with 1-thread kernels; one more layout runs 1 worker with 2-thread kernels
(the runtime's own parallelism inside each call).

`run_report` returns a dict (JSON-ready): "config", "models" (paths, sizes, held-out
accuracies, per-call latency of each on the runtime), "gil" (the same number of heavy-model
calls on 1 and 2 threads: does the C call release the GIL?), "runs" (one row per setting) and
"sweep" (the motion threshold against frames processed and accuracy). Each run's
"stage_seconds" splits its time by stage; the share spent in runtime calls bounds what a
second thread can gain (Amdahl: the rest holds the GIL).
"""
import json
import os
import sys
import tempfile
import threading
import time

import numpy as np

from .. import runtime
from .evaluate import agreement, score
from .pipeline import STAGES, run_streams
from .streams import SyntheticCamera

__all__ = ["SETTINGS", "run_report", "format_report", "gil_check", "CONFIGS"]

# (name, sampling, cascade); the first is the reference
SETTINGS = (("every frame, heavy model only", False, False),
            ("every frame, cascade", False, True),
            ("motion sampling, heavy model only", True, False),
            ("motion sampling + cascade", True, True))

CONFIGS = {
    "short": dict(streams=2, frames=90, num_train=1200, epochs=4, width=8, repeats=1,
                  sweep=(1e-3, 4e-3), gil_calls=200),
    "full": dict(streams=4, frames=300, num_train=4000, epochs=8, width=16, repeats=5,
                 sweep=(5e-4, 1e-3, 2e-3, 4e-3, 8e-3), gil_calls=2000),
}


def _per_call_ms(model, calls=200):
    x = np.zeros(model.inputs[0].shape, np.float32)
    model(x)
    t0 = time.perf_counter()
    for _ in range(calls):
        model(x)
    return 1e3 * (time.perf_counter() - t0) / calls


def _wide_model(folder, width=96):
    """A float32 DigitNet(width) with random weights as a .mte file: milliseconds per call, so
    the C part of a call dwarfs the Python around it."""
    import minitorch_edge as mte
    from .models import DigitNet
    path = os.path.join(folder, f"wide{width}.mte")
    mte.manual_seed(0)
    mte.export_model(DigitNet(width).eval(), np.zeros((1, 1, 16, 16), np.float32), path)
    return path


def _two_thread_speedup(path, calls):
    """(seconds for `calls` runs of the model at `path` on one thread, seconds for the same
    calls split over two threads with a model each)."""
    models = [runtime.load(path), runtime.load(path)]
    x = np.zeros(models[0].inputs[0].shape, np.float32)

    def loop(model, n):
        for _ in range(n):
            model(x)

    for m in models:
        loop(m, 3)
    t0 = time.perf_counter()
    loop(models[0], calls)
    one = time.perf_counter() - t0
    threads = [threading.Thread(target=loop, args=(m, calls // 2)) for m in models]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    two = time.perf_counter() - t0
    for m in models:
        m.close()
    return one, two


def gil_check(path, calls, wide_path):
    """Does a runtime call release the GIL? (cffi's documentation says it does, for every
    foreign call.) Measured three ways:

    * stall: while another thread runs `wide_path` (a model taking milliseconds per call) 20
      times, the main thread spins a Python loop, with the interpreter's switch interval at
      1 s; its longest pause ("max_stall_ms") is the worker's whole run ("worker_ms") if a
      call holds the GIL, and a scheduler slice (or a call, where the cores are busy) if not.
    * throughput: the same runs on one thread and split over two threads (a model each), for
      the pipeline's heavy model at `path` (`calls` runs; microseconds each, so the Python
      around the call -- argument checks, output allocation -- is a large share and serialises)
      and for the wide model (C-dominated: near 2x on two free cores).
    """
    runtime.set_num_threads(1)
    one, two = _two_thread_speedup(path, calls)
    wide_one, wide_two = _two_thread_speedup(wide_path, max(calls // 20, 10))
    out = {"calls": calls, "one_thread_s": one, "two_threads_s": two, "speedup": one / two,
           "wide_speedup": wide_one / wide_two}
    with runtime.load(wide_path) as wide:
        xw = np.zeros(wide.inputs[0].shape, np.float32)
        wide(xw)
        t0 = time.perf_counter()
        for _ in range(5):
            wide(xw)
        out["wide_call_ms"] = 1e3 * (time.perf_counter() - t0) / 5
        run_wide = lambda: [wide(xw) for _ in range(20)]                  # noqa: E731
        out["worker_ms"], out["max_stall_ms"] = _longest_pause(run_wide)
    # the control: a worker that holds the GIL (pure Python) for about as long
    spin = lambda: _spin(out["worker_ms"] / 1e3)                           # noqa: E731
    out["control_worker_ms"], out["control_stall_ms"] = _longest_pause(spin)
    out["released"] = out["max_stall_ms"] < 0.5 * out["worker_ms"]
    return out


def _spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _longest_pause(work):
    """(ms `work` takes on a worker thread, the longest pause of a Python loop on this thread
    meanwhile). The switch interval is 1 s while it runs: a worker that kept the GIL through
    its work would keep it for all of it; the loop here gives it up at every sleep(0)."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    try:
        worker = threading.Thread(target=work)
        t0 = last = time.perf_counter()
        stall, running = 0.0, True
        worker.start()                  # a GIL-holding worker already stalls this line
        while running:
            running = worker.is_alive()
            time.sleep(0)
            now = time.perf_counter()
            stall, last = max(stall, now - last), now
        worker.join()
        return 1e3 * (time.perf_counter() - t0), 1e3 * stall
    finally:
        sys.setswitchinterval(previous)


def run_report(short=False, threads=(1, 2), folder=None, seed=0, motion_threshold=1e-3,
               width=None):
    """The report as a dict (see the module docstring). `folder`: where the .mte files go (kept);
    None: a temporary folder, removed afterwards. `width`: the heavy model's (DigitNet) width,
    instead of the mode's."""
    from .models import build_models
    cfg = dict(CONFIGS["short" if short else "full"])
    if width is not None:
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise ValueError(f"run_report: width must be a positive int, got {width!r}")
        cfg["width"] = width
    for t in threads:
        if isinstance(t, bool) or not isinstance(t, int) or t < 1:
            raise ValueError(f"run_report: threads must be positive ints, got {threads!r}")
    scratch = tempfile.TemporaryDirectory(prefix="mte_video_") if folder is None else None
    folder = scratch.name if scratch else folder
    try:
        t0 = time.perf_counter()
        built = build_models(folder, num_train=cfg["num_train"], epochs=cfg["epochs"],
                             width=cfg["width"], seed=seed)
        build_s = time.perf_counter() - t0
        models = {"build_s": build_s, "filter_accuracy": built["filter_accuracy"],
                  "digit_accuracy": built["digit_accuracy"]}
        for key in ("filter", "digits"):
            with runtime.load(built[key], threads=1) as m:
                models[key] = {"bytes": os.path.getsize(built[key]),
                               "ms_per_call": _per_call_ms(m)}
        cams = [SyntheticCamera(1000 + seed * 100 + i, num_frames=cfg["frames"])
                for i in range(cfg["streams"])]
        frames, truth = [c.frames for c in cams], [c.truth for c in cams]
        paths = (built["filter"], built["digits"])
        # (workers, kernel threads): each worker count with 1-thread kernels, then one worker
        # with 2-thread kernels (the runtime's own parallelism inside each call)
        layouts = [(w, 1) for w in threads] + [(1, 2)]
        timed = {}
        run_streams(frames, *paths, sampling=False, cascade=False)       # warm-up, untimed
        for _ in range(cfg["repeats"]):     # rounds interleave the settings: drift hits all
            for layout in layouts:
                for name, sampling, cascade in SETTINGS:
                    dets, stats, seconds = run_streams(
                        frames, *paths, workers=layout[0], kernel_threads=layout[1],
                        sampling=sampling, cascade=cascade, motion_threshold=motion_threshold)
                    key = (layout, name)
                    if key in timed:
                        timed[key][2].append(seconds)
                        timed[key][3].append(stats.cpu_seconds)
                    else:
                        timed[key] = (dets, stats, [seconds], [stats.cpu_seconds])
        reference = timed[(layouts[0], SETTINGS[0][0])][0]
        runs = []
        for layout in layouts:
            for name, sampling, cascade in SETTINGS:
                dets, stats, times, cpu_times = timed[(layout, name)]
                seconds, cpu_seconds = float(np.median(times)), float(np.median(cpu_times))
                s = score(dets, truth)
                runs.append({
                    "setting": name, "threads": layout[0], "kernel_threads": layout[1],
                    "sampling": sampling, "cascade": cascade, "fps": stats.frames / seconds,
                    "seconds": seconds, "all_seconds": times,
                    "cpu_fps": stats.frames / max(cpu_seconds, 1e-9), "cpu_seconds": cpu_seconds,
                    "frames": stats.frames, "processed": stats.processed / stats.frames,
                    "regions": stats.regions,
                    "heavy_fraction": stats.classified / max(stats.regions, 1),
                    "precision": s.precision, "recall": s.recall, "f1": s.f1,
                    "classification": s.classification, "accuracy": s.accuracy,
                    "missed": s.missed, "missed_touching": s.missed_touching,
                    "stage_seconds": dict(stats.seconds),
                    "agreement": agreement(dets, reference)})
        sweep = []
        for threshold in cfg["sweep"]:
            times = []
            for _ in range(cfg["repeats"]):
                dets, stats, seconds = run_streams(frames, *paths, workers=1, sampling=True,
                                                   cascade=True, motion_threshold=threshold)
                times.append(seconds)
            seconds = float(np.median(times))
            s = score(dets, truth)
            sweep.append({"motion_threshold": threshold, "fps": stats.frames / seconds,
                          "processed": stats.processed / stats.frames, "f1": s.f1,
                          "accuracy": s.accuracy, "agreement": agreement(dets, reference)})
        gil = gil_check(built["digits"], cfg["gil_calls"], _wide_model(folder))
        busy = sum(1 for c in cams for objs in c.truth if objs)
        config = dict(cfg, mode="short" if short else "full", seed=seed, threads=list(threads),
                      motion_threshold=motion_threshold, frame_shape=list(frames[0].shape[1:]),
                      frames_with_objects=busy / sum(len(c) for c in cams),
                      true_digits=score(reference, truth).true_digits,
                      cpus=os.cpu_count())
        return {"config": config, "models": models, "gil": gil, "runs": runs, "sweep": sweep}
    finally:
        if scratch is not None:
            scratch.cleanup()


def format_report(report):
    """The report as Markdown tables."""
    c, m, g = report["config"], report["models"], report["gil"]
    lines = [f"Video pipeline report ({c['mode']} mode, heavy model width {c['width']}): "
             f"{c['streams']} streams x {c['frames']} "
             f"frames of {c['frame_shape'][0]}x{c['frame_shape'][1]}, "
             f"{c['frames_with_objects']:.0%} of frames with objects, {c['true_digits']} "
             f"true digit boxes; motion threshold {c['motion_threshold']:g}; {c['cpus']} CPUs.",
             "",
             f"Models (trained + exported in {m['build_s']:.1f} s): filter "
             f"{m['filter']['bytes']:,} B, {m['filter']['ms_per_call'] * 1e3:.0f} us/call, "
             f"held-out accuracy {m['filter_accuracy']:.1%}; digits {m['digits']['bytes']:,} B, "
             f"{m['digits']['ms_per_call'] * 1e3:.0f} us/call, held-out accuracy "
             f"{m['digit_accuracy']:.1%}.",
             f"GIL: {g['calls']} heavy-model calls take {g['one_thread_s'] * 1e3:.0f} ms on one "
             f"thread, {g['two_threads_s'] * 1e3:.0f} ms on two ({g['speedup']:.2f}x; a "
             f"{g['wide_call_ms']:.1f} ms model: {g['wide_speedup']:.2f}x); while another "
             f"thread runs that model for {g['worker_ms']:.0f} ms, the main thread's longest "
             f"pause is {g['max_stall_ms']:.1f} ms (control: a pure-Python worker of "
             f"{g['control_worker_ms']:.0f} ms stalls it {g['control_stall_ms']:.0f} ms): the "
             f"C call {'releases' if g['released'] else 'holds'} the GIL.",
             "",
             "FPS: frames of all streams per wall-clock second; per CPU s: per second of "
             "the process's CPU time (all threads; steady on a busy machine where wall time is "
             f"not). Medians of {c['repeats']} interleaved rounds. Threads: stream workers x the "
             "runtime's kernel threads.",
             "",
             "| setting | threads | FPS | per CPU s | frames processed | regions | to heavy model "
             "| precision | recall | digit accuracy | found+right | agreement with reference |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in report["runs"]:
        lines.append(f"| {r['setting']} | {r['threads']}x{r['kernel_threads']} | {r['fps']:.0f} | "
                     f"{r['cpu_fps']:.0f} | "
                     f"{r['processed']:.0%} | {r['regions']} | {r['heavy_fraction']:.0%} | "
                     f"{r['precision']:.1%} | {r['recall']:.1%} | {r['classification']:.1%} | "
                     f"{r['accuracy']:.1%} | {r['agreement']:.1%} |")
    lines += ["", "Where the time goes (1 thread; share of the stages' total; the runtime calls "
                  "include their Python argument checks):", "",
              "| setting | " + " | ".join(STAGES) + " | in runtime calls | 2-thread bound |",
              "|---|" + "---:|" * (len(STAGES) + 2)]
    for r in report["runs"]:
        if (r["threads"], r["kernel_threads"]) != (1, 1):
            continue
        total = sum(r["stage_seconds"].values()) or 1.0
        share = {k: v / total for k, v in r["stage_seconds"].items()}
        in_c = share["filter"] + share["digits"]
        lines.append(f"| {r['setting']} | " + " | ".join(f"{share[k]:.0%}" for k in STAGES)
                     + f" | {in_c:.0%} | {1 / (1 - in_c / 2):.2f}x |")
    ref = report["runs"][0]
    lines += ["", f"The reference misses {ref['missed']} true digit boxes; "
                  f"{ref['missed_touching']} of them were touching another object (their regions "
                  f"merge into one box).",
              "", "Motion threshold (sampling + cascade, 1 thread):", "",
              "| threshold | FPS | frames processed | F1 | found+right | agreement |",
              "|---:|---:|---:|---:|---:|---:|"]
    for s in report["sweep"]:
        lines.append(f"| {s['motion_threshold']:g} | {s['fps']:.0f} | {s['processed']:.0%} | "
                     f"{s['f1']:.1%} | {s['accuracy']:.1%} | {s['agreement']:.1%} |")
    return "\n".join(lines)


def write_report(report, folder):
    """report.json and report.md into `folder`, each written atomically."""
    from ..utils.serialization import atomic_write
    os.makedirs(folder, exist_ok=True)
    atomic_write(os.path.join(folder, "report.json"),
                 lambda f: f.write(json.dumps(report, indent=1).encode()))
    atomic_write(os.path.join(folder, "report.md"),
                 lambda f: f.write((format_report(report) + "\n").encode()))
