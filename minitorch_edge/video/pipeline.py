"""The video analytics pipeline on the C runtime: per stream, frames sampled by motion, regions
of interest from a background difference, and a cascade of two int8 models -- the tiny filter
drops regions with no digit, the heavy model names the digit in the rest.

    models = CascadeModels(filter_path, digits_path)      # runtime.load of both .mte files
    stream = StreamProcessor(models, sampling=True, cascade=True)
    for frame in frames:
        detections = stream.process(frame)                # [Detection(box, label, score)]

A frame is *processed* when sampling is off, or when its motion energy against the last
processed frame reaches `motion_threshold`; an unprocessed frame is unchanged enough that the
last processed frame's detections stand for it (they are returned again). Without the cascade
every region goes to the heavy model, whose 11th class ("not a digit") then does the filter's
job.

`run_streams(frames_per_stream, filter_path, digits_path, workers=...)` runs several streams on
`workers` threads (streams dealt round-robin; each thread loads its own copies of the models, a
runtime model owns one arena and is not shared between threads). The runtime's C call releases
the GIL (cffi does so around every foreign call), so two threads overlap their model runs; the
numpy and Python parts (regions, crops) hold it for most of their time. The runtime's own
kernel threads are 1 by default (`kernel_threads`, runtime.set_num_threads): the parallelism
is across streams (for models this small a second kernel thread costs more than it gains on a
busy machine; bench/results/video-2026-12-03.md).

Imports numpy and minitorch_edge.runtime only -- what a device needs.
"""
import collections
import threading
import time

import numpy as np

from .. import runtime
from .regions import BackgroundModel, find_regions, motion_energy
from .models_io import DIGIT_SIZE, FILTER_SIZE, NOT_A_DIGIT_CLASS, normalise_crop

__all__ = ["Detection", "CascadeModels", "StreamProcessor", "StreamStats", "STAGES",
           "run_streams"]

Detection = collections.namedtuple("Detection", "box label score")


def _softmax(logits):
    z = np.exp(logits - logits.max())
    return z / z.sum()


class CascadeModels:
    """The two int8 models loaded on the C runtime: `filter` (8x8 crop -> [empty, digit]) and
    `digits` (16x16 crop -> 10 digits + not-a-digit). `calls` counts the runs of each."""

    def __init__(self, filter_path, digits_path):
        self.filter = runtime.load(filter_path)
        self.digits = runtime.load(digits_path)
        for model, size in ((self.filter, FILTER_SIZE), (self.digits, DIGIT_SIZE)):
            if model.inputs[0].shape != (1, 1, size, size):
                raise ValueError(f"CascadeModels: {model.path} takes {model.inputs[0].shape}; "
                                 f"the pipeline feeds (1, 1, {size}, {size}) crops")
        self.calls = {"filter": 0, "digits": 0}

    def is_digit(self, crop8, threshold):
        self.calls["filter"] += 1
        return float(_softmax(self.filter(crop8)[0])[1]) >= threshold

    def classify(self, crop16):
        self.calls["digits"] += 1
        p = _softmax(self.digits(crop16)[0])
        label = int(p.argmax())
        return label, float(p[label])

    def close(self):
        self.filter.close()
        self.digits.close()


STAGES = ("motion", "regions", "crops", "filter", "digits", "background")


class StreamStats:
    """Counts of one stream's run: frames seen / processed, regions found / classified by the
    heavy model; `seconds`: wall time per stage (STAGES: motion energy, foreground + regions,
    crops, the filter's and the heavy model's runtime calls, the background update);
    `cpu_seconds` (set by run_streams): the CPU time the whole process used meanwhile, all
    threads, the runtime's kernel threads too -- what the work cost, however busy the machine
    was (wall time also counts the waits for a core)."""

    def __init__(self):
        self.frames = self.processed = self.regions = self.classified = 0
        self.cpu_seconds = 0.0
        self.seconds = dict.fromkeys(STAGES, 0.0)

    def add(self, other):
        for k in ("frames", "processed", "regions", "classified"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        for k in STAGES:
            self.seconds[k] += other.seconds[k]
        return self


class StreamProcessor:
    """One camera's pipeline state: the background model, the last processed frame and its
    detections. Args: `models` (CascadeModels), `sampling`, `cascade`, `motion_threshold`
    (motion energy that makes a frame worth processing), `pixel_threshold` (the per-pixel
    change that counts as motion), `filter_threshold` (the filter's digit probability a region
    needs to reach the heavy model), `min_area` (smallest region, pixels), `merge_gap` (regions
    this close are one), `background_threshold` (the difference to the background that makes a
    pixel foreground)."""

    def __init__(self, models, sampling=True, cascade=True, motion_threshold=1e-3,
                 pixel_threshold=0.1, filter_threshold=0.5, min_area=12, merge_gap=0,
                 background_threshold=0.12):
        if motion_threshold < 0:
            raise ValueError(f"StreamProcessor: motion_threshold must be >= 0, got "
                             f"{motion_threshold!r}")
        self.models, self.sampling, self.cascade = models, sampling, cascade
        self.motion_threshold, self.pixel_threshold = motion_threshold, pixel_threshold
        self.filter_threshold, self.min_area, self.merge_gap = filter_threshold, min_area, merge_gap
        self.background = BackgroundModel(threshold=background_threshold)
        self.last_frame, self.last_detections = None, []
        self.stats = StreamStats()

    def _lap(self, stage, start):
        """Add the time since `start` to `stage`; the time now."""
        now = time.perf_counter()
        self.stats.seconds[stage] += now - start
        return now

    def process(self, frame):
        """The detections for `frame` (float32 (H, W) in [0, 1])."""
        self.stats.frames += 1
        t = time.perf_counter()
        if self.sampling and self.last_frame is not None:
            still = motion_energy(frame, self.last_frame, self.pixel_threshold) \
                < self.motion_threshold
            t = self._lap("motion", t)
            if still:
                return self.last_detections
        self.stats.processed += 1
        foreground = self.background.foreground(frame)
        difference = self.background.difference(frame)
        boxes = find_regions(foreground, self.min_area, self.merge_gap)
        t = self._lap("regions", t)
        detections = []
        for box in boxes:
            self.stats.regions += 1
            if self.cascade:
                crop8 = normalise_crop(difference, box, FILTER_SIZE)
                t = self._lap("crops", t)
                keep = self.models.is_digit(crop8, self.filter_threshold)
                t = self._lap("filter", t)
                if not keep:
                    continue
            self.stats.classified += 1
            crop16 = normalise_crop(difference, box, DIGIT_SIZE)
            t = self._lap("crops", t)
            label, score = self.models.classify(crop16)
            t = self._lap("digits", t)
            if label != NOT_A_DIGIT_CLASS:
                detections.append(Detection(box, label, score))
        self.background.update(frame, foreground)
        self._lap("background", t)
        self.last_frame, self.last_detections = frame, detections
        return detections


def run_streams(frames_per_stream, filter_path, digits_path, workers=1, kernel_threads=1,
                **options):
    """Run every stream (a sequence of float32 (T, H, W) arrays) through its own
    StreamProcessor(**options) on `workers` threads; the runtime's kernels use `kernel_threads`
    (process-wide, runtime.set_num_threads). Returns (detections: one list per stream of one
    list per frame, StreamStats summed, wall seconds of the processing -- model loading
    excluded)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"run_streams: workers must be a positive int, got {workers!r}")
    runtime.set_num_threads(kernel_threads)
    n = len(frames_per_stream)
    results, stats = [None] * n, [None] * n
    errors = []
    ready = threading.Barrier(workers + 1)

    def work(indices):
        try:
            models = CascadeModels(filter_path, digits_path)
        except BaseException as exc:       # still meet the barrier, then report
            errors.append(exc)
            ready.wait()
            return
        ready.wait()
        try:
            for i in indices:
                proc = StreamProcessor(models, **options)
                results[i] = [proc.process(f) for f in frames_per_stream[i]]
                stats[i] = proc.stats
        except BaseException as exc:
            errors.append(exc)
        finally:
            models.close()

    threads = [threading.Thread(target=work, args=(list(range(w, n, workers)),))
               for w in range(workers)]
    for t in threads:
        t.start()
    ready.wait()
    start, cpu_start = time.perf_counter(), time.process_time()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    if errors:
        raise errors[0]
    total = StreamStats()
    for s in stats:
        total.add(s)
    total.cpu_seconds = cpu_seconds
    return results, total, seconds
