"""The two models of the cascade, their training data and their export to the C runtime.

* `TinyFilter`: a ~7k-MAC int8 CNN on an 8x8 crop that answers one question, "is there a digit
  in this region?" (2 classes). It runs on every region, so it must be cheap.
* `DigitNet`: the heavier CNN on a 16x16 crop: 10 digits plus "not a digit" (class 10), so it
  can also stand alone (the no-cascade baseline runs it on every region).

Training crops come from the same path the pipeline takes (regions.py): one object -- a digit of
the Digits *train* split, or a shape -- is alpha-blended onto a random patch of a textured
background with sensor noise, the thresholded difference to that background gives the regions,
and each region is cropped from the difference image and contrast-normalised
(`normalise_crop`). Regions that are not a whole digit (shapes, noise, the rare broken piece)
are the "empty" examples. The streams the pipeline is scored on draw their digits from the
*test* split, so the scores are on digits the models never saw.

`build_models(folder, ...)` trains both, exports them with `export_model(...,
calibration_data=...)` as int8 `.mte` files and returns their paths and held-out accuracies.
This module needs the training stack; the pipeline (pipeline.py) needs only numpy + the runtime.
"""
import os

import numpy as np

from .models_io import DIGIT_SIZE, FILTER_SIZE, NOT_A_DIGIT_CLASS, normalise_crop
from .regions import box_iou, find_regions
from .streams import _shape_mask, _texture, digit_images

__all__ = ["TinyFilter", "DigitNet", "NOT_A_DIGIT_CLASS", "FILTER_SIZE", "DIGIT_SIZE",
           "normalise_crop", "training_crops", "train_classifier", "build_models"]


def _module_classes():
    from .. import nn

    class TinyFilter(nn.Module):
        """8x8 crop -> conv3x3(4) relu pool -> conv3x3(8) relu pool -> linear(32, 2): about
        7k MACs."""

        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
            self.fc = nn.Linear(8 * 2 * 2, 2)

        def forward(self, x):
            return self.fc(self.features(x).flatten(1))

    class DigitNet(nn.Module):
        """16x16 crop -> conv3x3(w) relu -> conv3x3(2w) relu pool -> conv3x3(4w) relu pool
        -> linear(4w*4*4, 11). width=16: about 2.4M MACs."""

        def __init__(self, width=16):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, width, 3, padding=1), nn.ReLU(),
                nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(2 * width, 4 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
            self.fc = nn.Linear(4 * width * 4 * 4, NOT_A_DIGIT_CLASS + 1)

        def forward(self, x):
            return self.fc(self.features(x).flatten(1))

    return TinyFilter, DigitNet


def TinyFilter():
    """The cascade's cheap first stage (a fresh, untrained Module)."""
    return _module_classes()[0]()


def DigitNet(width=16):
    """The cascade's heavy second stage (a fresh, untrained Module)."""
    return _module_classes()[1](width)


def training_crops(num, seed, split="train", canvas=32, shape_probability=0.35,
                   empty_fraction=0.1, noise=0.02, threshold=0.12):
    """`num` region crops rendered as the pipeline sees them: (x8 float32 (n, 1, 8, 8), x16
    (n, 1, 16, 16), labels int64 (n,) -- the digit, or NOT_A_DIGIT_CLASS). A digit region is
    one whose box overlaps the digit's true box with IoU >= 0.5; every other region (and a
    share `empty_fraction` of pure-noise crops) is "not a digit"."""
    rng = np.random.default_rng(np.random.SeedSequence([0xC0FFEE, int(seed)]))
    images, labels = digit_images(split)
    textures = [_texture(rng, 72, 96) for _ in range(8)]
    x8, x16, ys = [], [], []
    while len(ys) < num:
        tex = textures[int(rng.integers(len(textures)))]
        r, c = int(rng.integers(0, 72 - canvas)), int(rng.integers(0, 96 - canvas))
        background = tex[r:r + canvas, c:c + canvas]
        frame = background.copy()
        truth_box, label = None, NOT_A_DIGIT_CLASS
        if rng.random() >= empty_fraction:
            if rng.random() < shape_probability:
                mask = _shape_mask(rng, int(rng.integers(12, 19)))
            else:
                k = int(rng.integers(len(images)))
                mask, label = np.kron(images[k], np.ones((2, 2), np.float32)), int(labels[k])
            size = mask.shape[0]
            r0, c0 = (int(v) for v in rng.integers(0, canvas - size + 1, size=2))
            window = frame[r0:r0 + size, c0:c0 + size]
            window += mask * (float(rng.uniform(0.8, 1.0)) - window)
            rows, cols = np.nonzero(mask > 0.05)
            truth_box = (r0 + rows.min(), c0 + cols.min(), r0 + rows.max() + 1,
                         c0 + cols.max() + 1)
        frame = np.clip(frame + rng.normal(0, noise, frame.shape).astype(np.float32), 0, 1)
        # the pipeline's background estimate averages many frames: a little residual noise
        estimate = background + rng.normal(0, noise / 4, background.shape).astype(np.float32)
        difference = frame - estimate
        boxes = find_regions(np.abs(difference) > threshold)
        if not boxes:                       # nothing stood out: a pure-noise crop
            side = int(rng.integers(8, 20))
            r0, c0 = (int(v) for v in rng.integers(0, canvas - side, size=2))
            boxes = [(r0, c0, r0 + side, c0 + side)]
        for box in boxes:
            is_digit = truth_box is not None and label != NOT_A_DIGIT_CLASS \
                and box_iou(box, truth_box) >= 0.5
            x8.append(normalise_crop(difference, box, FILTER_SIZE)[0])
            x16.append(normalise_crop(difference, box, DIGIT_SIZE)[0])
            ys.append(label if is_digit else NOT_A_DIGIT_CLASS)
    return (np.stack(x8[:num]), np.stack(x16[:num]), np.array(ys[:num], np.int64))


def train_classifier(model, x, y, epochs, batch_size=32, lr=3e-3, seed=0):
    """A plain Adam + cross-entropy loop over (x, y) numpy arrays; returns the model (eval)."""
    import minitorch_edge as mte
    from .. import nn, optim
    opt = optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(seed)
    model.train()
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for i in range(0, len(x), batch_size):
            idx = order[i:i + batch_size]
            loss = loss_fn(model(mte.tensor(x[idx])), mte.tensor(y[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    return model


def _accuracy(model, x, y):
    import minitorch_edge as mte
    with mte.no_grad():
        return float((model(mte.tensor(x)).numpy().argmax(1) == y).mean())


def build_models(folder, num_train=3000, epochs=6, width=16, seed=0):
    """Train TinyFilter and DigitNet on `num_train` training crops, export both int8 into
    `folder` (filter.int8.mte, digits.int8.mte; written atomically by export_model) and return
    {"filter": path, "digits": path, "filter_accuracy": .., "digit_accuracy": ..}: the
    accuracies on held-out crops (seed + 1, the test split's digits) of the float models."""
    from .. import backend
    previous = backend.get_num_threads()
    # tiny convolutions gain nothing from a second kernel thread, and lose 5-10x when the
    # cores are busy (measured on a loaded two-core machine): train on one
    backend.set_num_threads(1)
    try:
        return _build_models(folder, num_train, epochs, width, seed)
    finally:
        backend.set_num_threads(previous)


def _build_models(folder, num_train, epochs, width, seed):
    import minitorch_edge as mte
    os.makedirs(folder, exist_ok=True)
    mte.manual_seed(seed)
    x8, x16, y = training_crops(num_train, seed)
    v8, v16, vy = training_crops(max(num_train // 4, 200), seed + 1, split="test")
    is_digit, v_is_digit = (y != NOT_A_DIGIT_CLASS).astype(np.int64), \
        (vy != NOT_A_DIGIT_CLASS).astype(np.int64)
    tiny = train_classifier(TinyFilter(), x8, is_digit, epochs, seed=seed)
    heavy = train_classifier(DigitNet(width), x16, y, epochs, seed=seed)
    paths = {"filter": os.path.join(folder, "filter.int8.mte"),
             "digits": os.path.join(folder, "digits.int8.mte")}
    for key, model, x in (("filter", tiny, x8), ("digits", heavy, x16)):
        calibration = [x[i:i + 64] for i in range(0, min(len(x), 512), 64)]
        mte.export_model(model, x[:1], paths[key], calibration_data=calibration)
    return dict(paths, filter_accuracy=_accuracy(tiny, v8, v_is_digit),
                digit_accuracy=_accuracy(heavy, v16, vy))
