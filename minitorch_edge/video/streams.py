"""Synthetic camera streams with ground truth: the scene a fixed camera sees (a textured
background, sensor noise every frame) and the objects that cross it (handwritten digits from the
bundled Digits set, and plain shapes that are not digits), all drawn from one seed, so the same
seed gives the same frames and the same truth, bit for bit.

The timeline of a stream alternates busy spells (one to `max_objects` objects move, each on a
straight line that bounces off the frame's edges) and quiet spells (nothing moves: only the
noise changes), so a sampler that skips still frames has something to skip. Objects appear and
vanish whole (a camera cut, not a walk-in), so every object in the truth is fully visible.

    cam = SyntheticCamera(seed=3, num_frames=200)
    frames = cam.frames          # float32 (T, H, W) in [0, 1]
    truth = cam.truth[t]         # [GroundTruthObject(box=(r0, c0, r1, c1), label, kind)]

Boxes are (row0, col0, row1, col1), half-open, in pixels. label: the digit 0..9 for a digit,
-1 for a shape (`kind` is "digit" or "shape").
"""
import collections

import numpy as np

__all__ = ["GroundTruthObject", "SyntheticCamera", "digit_images", "NOT_A_DIGIT"]

NOT_A_DIGIT = -1
GroundTruthObject = collections.namedtuple("GroundTruthObject", "box label kind")

_digit_cache = {}


def digit_images(split):
    """(images float32 (N, 8, 8) in [0, 1], labels int64 (N,)) of the Digits `split` ("train",
    "test" or "all"; the dataset's fixed stratified split). Streams for training the models use
    "train", the ones the pipeline is measured on use "test": the digits it is scored on were
    never seen in training."""
    if split not in ("train", "test", "all"):
        raise ValueError(f"digit_images: split must be 'train', 'test' or 'all', got {split!r}")
    if split not in _digit_cache:
        from ..data.datasets.digits import Digits, load_digits_arrays
        images, labels = load_digits_arrays()
        if split != "all":
            train_idx, test_idx = Digits.split_indices(labels)
            idx = np.asarray(train_idx if split == "train" else test_idx)
            images, labels = images[idx], labels[idx]
        _digit_cache[split] = (images.astype(np.float32) / 16.0, np.asarray(labels, np.int64))
    images, labels = _digit_cache[split]
    return images.copy(), labels.copy()


def _texture(rng, height, width):
    """A static background: a few random low-frequency gratings plus fixed per-pixel grain, in
    about [0.1, 0.55] (dark enough that the bright objects stand out, busy enough that a plain
    threshold on the frame itself would not find them)."""
    rows, cols = np.mgrid[0:height, 0:width].astype(np.float32)
    bg = np.zeros((height, width), np.float32)
    for _ in range(4):
        fr, fc = rng.uniform(-0.25, 0.25, size=2)
        bg += rng.uniform(0.3, 1.0) * np.sin(fr * rows + fc * cols + rng.uniform(0, 2 * np.pi))
    bg = (bg - bg.min()) / max(float(bg.max() - bg.min()), 1e-6)
    grain = rng.uniform(-1.0, 1.0, size=(height, width)).astype(np.float32)
    return (0.12 + 0.33 * bg + 0.05 * grain).astype(np.float32)


def _shape_mask(rng, size):
    """An alpha mask (size, size) of a filled rectangle, disc, ring or triangle."""
    rows, cols = np.mgrid[0:size, 0:size].astype(np.float32) + 0.5
    centre = size / 2.0
    kind = rng.integers(4)
    if kind == 0:
        inset_r, inset_c = rng.integers(0, size // 4 + 1, size=2)
        mask = np.zeros((size, size), np.float32)
        mask[inset_r:size - inset_r, inset_c:size - inset_c] = 1.0
    elif kind == 1:
        mask = (((rows - centre) ** 2 + (cols - centre) ** 2) <= (size / 2.0) ** 2)
    elif kind == 2:
        d2 = (rows - centre) ** 2 + (cols - centre) ** 2
        mask = (d2 <= (size / 2.0) ** 2) & (d2 >= (size / 4.0) ** 2)
    else:
        mask = cols >= np.abs(rows - centre) * 0.9
    return np.asarray(mask, np.float32)


class _Mover:
    """One object on screen: its alpha mask, ink, label, position and velocity (pixels/frame)."""

    def __init__(self, mask, ink, label, kind, pos, vel, start, stop):
        self.mask, self.ink, self.label, self.kind = mask, ink, label, kind
        self.pos, self.vel = np.asarray(pos, np.float64), np.asarray(vel, np.float64)
        self.start, self.stop = start, stop

    def step(self, height, width):
        """Advance one frame, bouncing off the frame's edges."""
        size = self.mask.shape[0]
        limits = np.array([height - size, width - size], np.float64)
        self.pos += self.vel
        for axis in range(2):
            if self.pos[axis] < 0:
                self.pos[axis], self.vel[axis] = -self.pos[axis], -self.vel[axis]
            if self.pos[axis] > limits[axis]:
                self.pos[axis] = 2 * limits[axis] - self.pos[axis]
                self.vel[axis] = -self.vel[axis]
        self.pos = np.clip(self.pos, 0, limits)


class SyntheticCamera:
    """A deterministic synthetic camera stream (see the module docstring).

    Args: ``seed``; ``num_frames``; ``height``/``width`` of a frame; ``digit_split`` ("test":
    the digits the models never trained on; "train" for training streams); ``scales`` (a digit
    8x8 is drawn at 8*scale pixels); ``max_objects`` at once; ``shape_probability`` (chance that
    an object is a shape, not a digit); ``quiet_fraction`` (about how much of the timeline is
    still); ``noise`` (sensor noise std per frame); ``speed`` (pixels per frame, (min, max)).
    Attributes: ``frames`` float32 (T, H, W), ``truth`` (a list per frame of GroundTruthObject),
    ``background`` (the noise-free empty scene)."""

    def __init__(self, seed, num_frames=240, height=72, width=96, digit_split="test",
                 scales=(2,), max_objects=3, shape_probability=0.35, quiet_fraction=0.3,
                 noise=0.02, speed=(0.6, 2.0)):
        for name, value in (("num_frames", num_frames), ("height", height), ("width", width),
                            ("max_objects", max_objects)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"SyntheticCamera: {name} must be a positive int, got {value!r}")
        if min(height, width) < 8 * max(scales) + 2:
            raise ValueError(f"SyntheticCamera: a {height}x{width} frame is too small for digits "
                             f"drawn at scale {max(scales)} ({8 * max(scales)} px); make it larger")
        if not 0.0 <= quiet_fraction < 1.0:
            raise ValueError(f"SyntheticCamera: quiet_fraction must be in [0, 1), got "
                             f"{quiet_fraction!r}")
        self.seed, self.num_frames, self.height, self.width = seed, num_frames, height, width
        self.noise = noise
        rng = np.random.default_rng(np.random.SeedSequence([0x5EED_C0DE, int(seed)]))
        self.background = _texture(rng, height, width)
        images, labels = digit_images(digit_split)
        movers = self._schedule(rng, images, labels, scales, max_objects, shape_probability,
                                quiet_fraction, speed)
        self.frames, self.truth = self._render(rng, movers)

    def _schedule(self, rng, images, labels, scales, max_objects, shape_probability,
                  quiet_fraction, speed):
        """The objects of the whole timeline: busy spells of 20..60 frames, each followed by a
        quiet spell sized so that about `quiet_fraction` of the frames are still; the first 6
        frames are quiet (the pipeline's background model starts from an empty scene)."""
        movers, t = [], 6
        while t < self.num_frames:
            busy = int(rng.integers(20, 61))
            for _ in range(int(rng.integers(1, max_objects + 1))):
                start = t + int(rng.integers(0, max(1, busy // 3)))
                stop = min(t + busy, start + int(rng.integers(12, busy + 1)))
                scale = int(rng.choice(scales))
                if rng.random() < shape_probability:
                    size = int(rng.integers(8 * scale - 4, 8 * scale + 3))
                    mask, label, kind = _shape_mask(rng, size), NOT_A_DIGIT, "shape"
                else:
                    k = int(rng.integers(len(images)))
                    mask = np.kron(images[k], np.ones((scale, scale), np.float32))
                    label, kind = int(labels[k]), "digit"
                size = mask.shape[0]
                pos = (rng.uniform(0, self.height - size), rng.uniform(0, self.width - size))
                angle, magnitude = rng.uniform(0, 2 * np.pi), rng.uniform(*speed)
                vel = (magnitude * np.sin(angle), magnitude * np.cos(angle))
                movers.append(_Mover(mask, float(rng.uniform(0.8, 1.0)), label, kind, pos, vel,
                                     start, stop))
            t += busy
            if quiet_fraction > 0:
                t += int(round(busy * quiet_fraction / (1 - quiet_fraction)
                               * rng.uniform(0.6, 1.4)))
        return movers

    def _render(self, rng, movers):
        frames = np.empty((self.num_frames, self.height, self.width), np.float32)
        truth = []
        for t in range(self.num_frames):
            frame = self.background.copy()
            objects = []
            for m in movers:
                if not m.start <= t < m.stop:
                    continue
                if t > m.start:
                    m.step(self.height, self.width)
                r0, c0 = (int(round(v)) for v in m.pos)
                size = m.mask.shape[0]
                window = frame[r0:r0 + size, c0:c0 + size]
                window += m.mask * (m.ink - window)          # alpha-blend the bright ink
                rows, cols = np.nonzero(m.mask > 0.05)
                objects.append(GroundTruthObject(
                    (r0 + int(rows.min()), c0 + int(cols.min()),
                     r0 + int(rows.max()) + 1, c0 + int(cols.max()) + 1), m.label, m.kind))
            frame += rng.normal(0.0, self.noise, size=frame.shape).astype(np.float32)
            frames[t] = np.clip(frame, 0.0, 1.0)
            truth.append(objects)
        return frames, truth

    def __len__(self):
        return self.num_frames

    def __repr__(self):
        busy = sum(1 for objs in self.truth if objs)
        return (f"SyntheticCamera(seed={self.seed}, {self.num_frames} frames of "
                f"{self.height}x{self.width}, {busy} with objects)")
