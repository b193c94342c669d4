# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 19 · A video analytics pipeline on the edge: sampling, regions, a cascade, threads
#
# The end-to-end use of the edge tier. Several fixed cameras watch a scene; most frames show
# nothing new, and most of each frame is background. The pipeline spends compute only where
# something changed:
#
# 1. **sample by motion**: a frame is processed only when it differs enough from the last
#    processed one (frame-difference energy against a threshold);
# 2. **regions of interest**: the thresholded difference to a running background model, its
#    connected components (numpy, two-pass union-find), their boxes;
# 3. **a cascade on the C runtime**: a tiny int8 CNN rejects regions with no digit, a heavier
#    int8 CNN names the digit in the rest (both `.mte` files run by `minitorch_edge.runtime`);
# 4. **threads**: one worker per stream (or streams dealt over workers); the runtime's C call
#    releases the GIL, so model runs overlap.
#
# Everything is scored against the ground truth of synthetic streams, and against the
# reference: every frame, every region through the heavy model.
# Read alongside: `minitorch_edge/video/` (streams.py, regions.py, models.py, pipeline.py,
# evaluate.py, report.py); `python -m minitorch_edge.video --short` prints the whole report.

# %%
import os
import tempfile
import time

import numpy as np

from minitorch_edge import runtime
from minitorch_edge.video import (BackgroundModel, CascadeModels, StreamProcessor,
                                  SyntheticCamera, agreement, box_iou, component_boxes,
                                  connected_components, dilate, find_regions, motion_energy,
                                  run_streams, score)
from minitorch_edge.video.models import build_models, training_crops
from minitorch_edge.video.report import CONFIGS, SETTINGS, _wide_model, gil_check

FAST = os.environ.get("MTE_TUTORIAL_FAST") == "1"
CFG = CONFIGS["short" if FAST else "full"]
_scratch = None if os.environ.get("MTE_TUTORIAL_OUT") else tempfile.TemporaryDirectory(
    prefix="mte_video_")
OUT = os.environ.get("MTE_TUTORIAL_OUT") or _scratch.name
os.makedirs(OUT, exist_ok=True)

# %% [markdown]
# ## 1. Synthetic cameras with ground truth
# A textured background, sensor noise on every frame, digits from the bundled Digits set
# (its *test* split: the models below never train on these) and plain shapes as distractors,
# moving in straight lines and bouncing off the edges; busy spells alternate with still ones.
# Everything comes from the seed: the same seed gives the same frames and truth, bit for bit.

# %%
cams = [SyntheticCamera(1000 + i, num_frames=CFG["frames"]) for i in range(CFG["streams"])]
cam = cams[0]
print(cam)
assert np.array_equal(cam.frames, SyntheticCamera(1000, num_frames=CFG["frames"]).frames)
t_busy = next(t for t, objs in enumerate(cam.truth) if len(objs) >= 2)
for obj in cam.truth[t_busy]:
    print(f"  frame {t_busy}: {obj.kind:5s} label {obj.label:2d} box {obj.box}")


def ascii_frame(frame, boxes=(), rows_per_char=3, cols_per_char=2):
    """A frame as characters (one per 3x2 pixels), the boxes' borders drawn with '#'."""
    shades = " .:-=+*%@"
    small = frame[::rows_per_char, ::cols_per_char]
    grid = [[shades[min(int(v * len(shades)), len(shades) - 1)] for v in row] for row in small]
    for r0, c0, r1, c1 in boxes:
        g0, g1 = r0 // rows_per_char, (r1 - 1) // rows_per_char
        h0, h1 = c0 // cols_per_char, (c1 - 1) // cols_per_char
        for g in range(g0, g1 + 1):
            grid[g][h0] = grid[g][h1] = "#"
        for h in range(h0, h1 + 1):
            grid[g0][h] = grid[g1][h] = "#"
    return "\n".join("".join(row) for row in grid)


print(ascii_frame(cam.frames[t_busy], [o.box for o in cam.truth[t_busy]]))

# %% [markdown]
# ## 2. Sampling by motion
# `motion_energy(a, b)` is the mean of |a - b| over the pixels where it exceeds 0.1: sensor
# noise (std 0.02) stays under that, so a still frame scores about 0 however noisy it is.
# Against the last *processed* frame, a slow object accumulates change until it counts.

# %%
threshold = 1e-3
energies, last, processed = [], cam.frames[0], [0]
for t in range(1, len(cam)):
    e = motion_energy(cam.frames[t], last)
    energies.append(e)
    if e >= threshold:
        processed.append(t)
        last = cam.frames[t]
still = [e for e, objs in zip(energies, cam.truth[1:]) if not objs]
print(f"energy on still frames: median {np.median(still):.1e}; on busy ones: median "
      f"{np.median([e for e, o in zip(energies, cam.truth[1:]) if o]):.1e}")
print(f"{len(processed)} of {len(cam)} frames pass the threshold {threshold:g}")

# %% [markdown]
# ## 3. Regions of interest: background difference, components, boxes
# The background model starts from the first (still) frame and follows slow changes where
# nothing stands in front of it. `connected_components` labels the foreground mask in two
# passes over *runs*: each row's runs of foreground pixels (numpy), then a union-find over runs
# that touch across neighbouring rows; labels come out in raster order, as a flood fill would
# number them. The mask is dilated by one pixel first so that a digit's strokes join.

# %%
bg = BackgroundModel()
for t in range(t_busy + 1):
    fg = bg.foreground(cam.frames[t])
    if t < t_busy:
        bg.update(cam.frames[t], fg)
labels, count = connected_components(dilate(fg, 1))
print(f"frame {t_busy}: {fg.sum()} foreground pixels, {count} components")
for box, area in component_boxes(labels, count):
    print(f"  component box {box} ({area} px)")
boxes = find_regions(fg)
for obj in cam.truth[t_busy]:
    best = max((box_iou(obj.box, b) for b in boxes), default=0.0)
    print(f"  true {obj.kind:5s} {obj.box}: best region IoU {best:.2f}")

# %% [markdown]
# ## 4. The two models, trained on crops the pipeline itself produces
# Training crops: one object (a Digits *train* digit, or a shape) blended onto a background
# patch, the same difference-threshold-components path, the same crop and normalisation.
# `TinyFilter` (8x8 in, 2 classes) and `DigitNet` (16x16 in, 10 digits + "not a digit") are
# trained with Adam, then `export_model(..., calibration_data=...)` writes each as int8.

# %%
x8, x16, y = training_crops(8, seed=0)
print("a few training labels (10 = not a digit):", y.tolist())
t0 = time.perf_counter()
built = build_models(OUT, num_train=CFG["num_train"], epochs=CFG["epochs"], width=CFG["width"])
print(f"trained and exported in {time.perf_counter() - t0:.1f} s; held-out accuracy: filter "
      f"{built['filter_accuracy']:.1%}, digits {built['digit_accuracy']:.1%}")
for key in ("filter", "digits"):
    with runtime.load(built[key], threads=1) as m:
        x = np.zeros(m.inputs[0].shape, np.float32)
        m(x)
        t0 = time.perf_counter()
        for _ in range(100):
            m(x)
        us = (time.perf_counter() - t0) / 100 * 1e6
        print(f"{key:6s} {os.path.getsize(built[key]):7,d} bytes, {len(m.kernels)} nodes, "
              f"{us:5.0f} us/call, kernels: {sorted({k.kernel for k in m.kernels})[:3]}")

# %% [markdown]
# ## 5. One stream through the cascade

# %%
models = CascadeModels(built["filter"], built["digits"])
stream = StreamProcessor(models, sampling=True, cascade=True, motion_threshold=threshold)
detections = [stream.process(f) for f in cam.frames]
print(f"frames {stream.stats.frames}, processed {stream.stats.processed}, regions "
      f"{stream.stats.regions}, sent to the heavy model {stream.stats.classified}")
print(f"frame {t_busy}: detected {[(d.label, d.box) for d in detections[t_busy]]}")
print(f"          truth    {[(o.label, o.box) for o in cam.truth[t_busy] if o.kind == 'digit']}")
print(score(detections, cam.truth))
models.close()

# %% [markdown]
# ## 6. All streams: with and without sampling and the cascade, on 1 and 2 threads
# `run_streams` deals the streams over worker threads; each worker loads its own copies of the
# models (a runtime model owns one arena). FPS counts the frames of all streams together.
# On a busy two-core machine the 2-thread numbers are noisy: the Python parts (regions, crops,
# the per-call argument checks) hold the GIL, and only the C calls overlap. The runtime's own
# kernel threads stay at 1 here: for models this small a second kernel thread costs more
# than it gains (`python -m minitorch_edge.video` measures that layout too).

# %%
frames, truth = [c.frames for c in cams], [c.truth for c in cams]
print("| setting | threads | FPS | processed | to heavy | F1 | found+right | vs reference |")
reference = None
for workers in (1, 2):
    for name, sampling, cascade in SETTINGS:
        dets, stats, seconds = run_streams(frames, built["filter"], built["digits"],
                                           workers=workers, sampling=sampling, cascade=cascade,
                                           motion_threshold=threshold)
        reference = reference or dets
        s = score(dets, truth)
        print(f"| {name} | {workers} | {stats.frames / seconds:.0f} | "
              f"{stats.processed / stats.frames:.0%} | "
              f"{stats.classified / max(stats.regions, 1):.0%} | {s.f1:.1%} | "
              f"{s.accuracy:.1%} | {agreement(dets, reference):.1%} |")

# %% [markdown]
# ## 7. Does the runtime call release the GIL?
# cffi releases it around every foreign call. Measured: with the interpreter's switch interval
# at 1 s, a worker that held the GIL would freeze the main thread for its whole run (the
# pure-Python control does exactly that); a worker inside `mte_model_run` does not.

# %%
g = gil_check(built["digits"], CFG["gil_calls"], _wide_model(OUT))
print(f"worker running a {g['wide_call_ms']:.1f} ms model for {g['worker_ms']:.0f} ms: main "
      f"thread's longest pause {g['max_stall_ms']:.1f} ms; pure-Python control: "
      f"{g['control_stall_ms']:.0f} ms of {g['control_worker_ms']:.0f} ms -> GIL "
      f"{'released' if g['released'] else 'held'}")
print(f"two threads vs one: heavy model {g['speedup']:.2f}x, wide model {g['wide_speedup']:.2f}x")

# %% [markdown]
# ## Clean up

# %%
if _scratch is not None:
    _scratch.cleanup()
    print("removed the temporary folder", OUT, "(set MTE_TUTORIAL_OUT=<folder> to keep the files)")
