"""Image transforms (torchvision's ``transforms``): converting, normalizing and augmenting.

A transform is a callable ``img -> img``; `Compose` chains them:

    Compose([RandomCrop(28, padding=2), RandomHorizontalFlip(), ToTensor(),
             Normalize((0.5,), (0.5,))])

Images are either tensors of shape (..., H, W) — e.g. (C, H, W) after `ToTensor` — or, before
`ToTensor`, numpy arrays laid out as PIL gives them, (H, W) or (H, W, C) (PIL images themselves
are read through ``np.asarray``). Geometric transforms return the same kind they were given.
They act on the data, not on the autograd graph (only `Normalize` and `Lambda` keep gradients).

Random transforms draw from minitorch_edge's default generator, so ``manual_seed(0)`` makes an
augmentation pipeline repeat exactly, and DataLoader workers (each seeded ``base_seed + id``)
draw different augmentations. Rules follow torchvision's tensor code: crop positions, padding
modes, rotation about the image centre (counter-clockwise for positive angles, sampled as
``grid_sample(align_corners=False)``, outside pixels filled with `fill`), Resize through
``nn.functional.interpolate``. Differences: Resize does not antialias, RandomRotation does not
``expand``.
"""
import enum
import math
import numbers

import numpy as np

from .. import dtypes as _dt
from ..random import np_rng
from ..tensor import Tensor

__all__ = ["Compose", "ToTensor", "Normalize", "Pad", "RandomCrop", "CenterCrop",
           "RandomHorizontalFlip", "RandomVerticalFlip", "RandomRotation", "Resize", "Lambda",
           "InterpolationMode"]


class InterpolationMode(str, enum.Enum):
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"


def _mode(interpolation, owner, allowed):
    value = interpolation.value if isinstance(interpolation, InterpolationMode) else interpolation
    if value not in allowed:
        raise ValueError(f"{owner}: interpolation {interpolation!r} is not supported; use one of "
                         f"{', '.join(allowed)}")
    return value


# ---- the image kinds: tensors (..., H, W) and PIL-like arrays (H, W[, C]) ----------------------
def _as_array(img, owner):
    if isinstance(img, np.ndarray):
        arr = img
    elif hasattr(img, "__array_interface__") or hasattr(img, "__array__"):
        arr = np.asarray(img)                     # a PIL Image or similar
    else:
        raise TypeError(f"{owner}: expected a Tensor (..., H, W) or a numpy/PIL image, got "
                        f"{type(img).__name__}")
    if arr.ndim not in (2, 3):
        raise ValueError(f"{owner}: a numpy image must be (H, W) or (H, W, C), got shape "
                         f"{arr.shape}")
    return arr


def _hw(img, owner):
    """(height, width) of an image of either kind."""
    if isinstance(img, Tensor):
        if img.ndim < 2:
            raise ValueError(f"{owner}: expected an image tensor of shape (..., H, W), got shape "
                             f"{tuple(img.shape)}")
        return tuple(img.shape[-2:])
    return tuple(_as_array(img, owner).shape[:2])


def _apply(img, fn, owner):
    """Run ``fn`` (on an array shaped (..., H, W)) on either kind of image, keeping its kind."""
    if isinstance(img, Tensor):
        _hw(img, owner)
        return Tensor._make(np.ascontiguousarray(fn(img._data)))
    arr = _as_array(img, owner)
    if arr.ndim == 2:
        return np.ascontiguousarray(fn(arr))
    return np.ascontiguousarray(np.moveaxis(fn(np.moveaxis(arr, -1, 0)), 0, -1))


def _setup_size(size, owner):
    if isinstance(size, numbers.Integral):
        return int(size), int(size)
    if isinstance(size, (list, tuple)) and len(size) in (1, 2):
        return (int(size[0]), int(size[0])) if len(size) == 1 else (int(size[0]), int(size[1]))
    raise ValueError(f"{owner}: size should be an int or a sequence (h, w), got {size!r}")


def _fill_array(fill, a, owner):
    """`fill` as an array broadcastable to `a` (..., C, H, W): a number, or one per channel."""
    f = np.asarray(fill, dtype=np.float64)
    if f.ndim == 0 or f.size == 1:
        return f.reshape(())
    if a.ndim < 3 or f.size != a.shape[-3]:
        raise ValueError(f"{owner}: fill has {f.size} values but the image has "
                         f"{a.shape[-3] if a.ndim >= 3 else 1} channel(s)")
    return f.reshape(-1, 1, 1)


def _cast_back(out, dtype):
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.clip(np.rint(out), info.min, info.max).astype(dtype)
    return out.astype(dtype, copy=False)


# ---- array operations on (..., H, W) -----------------------------------------------------------
_PAD_MODES = ("constant", "edge", "reflect", "symmetric")


def _parse_padding(padding, owner):
    if isinstance(padding, numbers.Integral):
        p = [int(padding)] * 4
    elif isinstance(padding, (list, tuple)) and len(padding) in (1, 2, 4):
        p = [int(v) for v in padding]
        p = p * 4 if len(p) == 1 else (p * 2 if len(p) == 2 else p)
    else:
        raise ValueError(f"{owner}: padding must be an int or a sequence of 1, 2 or 4 ints "
                         f"(left, top, right, bottom), got {padding!r}")
    if min(p) < 0:
        raise ValueError(f"{owner}: padding must be non-negative, got {padding!r}")
    return p                                              # left, top, right, bottom


def _pad(a, ltrb, fill, mode, owner="Pad"):
    left, top, right, bottom = ltrb
    if mode not in _PAD_MODES:
        raise ValueError(f"{owner}: padding_mode should be one of {', '.join(_PAD_MODES)}, got "
                         f"{mode!r}")
    if mode != "constant":
        width = [(0, 0)] * (a.ndim - 2) + [(top, bottom), (left, right)]
        return np.pad(a, width, mode=mode)
    h, w = a.shape[-2:]
    out = np.empty(a.shape[:-2] + (h + top + bottom, w + left + right), dtype=a.dtype)
    out[...] = _cast_back(np.broadcast_to(_fill_array(fill, a, owner), out.shape), a.dtype)
    out[..., top:top + h, left:left + w] = a
    return out


def _rotate(a, angle, mode, fill, center=None):
    """Rotate (..., H, W) by `angle` degrees counter-clockwise about `center` ((x, y), origin
    at the top-left corner of the image; default its centre). Output pixel p samples the input
    at ``R(-angle) (p - c) + c``: nearest (round half to even) or bilinear; pixels from outside
    get `fill` (bilinear blends it: ``v * m + (1 - m) * fill`` with m the in-image weight)."""
    h, w = a.shape[-2:]
    work = a.astype(np.float64 if a.dtype == np.float64 else np.float32)
    cx, cy = ((w - 1) / 2, (h - 1) / 2) if center is None else (center[0] - 0.5,
                                                                 center[1] - 0.5)
    r = math.radians(angle)
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    dx, dy = xs - cx, ys - cy
    sx = math.cos(r) * dx - math.sin(r) * dy + cx
    sy = math.sin(r) * dx + math.cos(r) * dy + cy
    if mode == "nearest":
        ix, iy = np.rint(sx).astype(np.int64), np.rint(sy).astype(np.int64)
        inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        out = work[..., np.clip(iy, 0, h - 1), np.clip(ix, 0, w - 1)] * inside
        if fill is not None:
            out = np.where(inside, out, _fill_array(fill, a, "RandomRotation"))
    else:
        x0, y0 = np.floor(sx).astype(np.int64), np.floor(sy).astype(np.int64)
        fx, fy = (sx - x0).astype(work.dtype), (sy - y0).astype(work.dtype)
        out = np.zeros(work.shape, dtype=work.dtype)
        mask = np.zeros((h, w), dtype=work.dtype)
        for oy, wy in ((0, 1 - fy), (1, fy)):
            for ox, wx in ((0, 1 - fx), (1, fx)):
                px, py = x0 + ox, y0 + oy
                ok = (px >= 0) & (px < w) & (py >= 0) & (py < h)
                weight = wx * wy * ok
                out += work[..., np.clip(py, 0, h - 1), np.clip(px, 0, w - 1)] * weight
                mask += weight
        if fill is not None:
            out = out * mask + (1 - mask) * _fill_array(fill, a, "RandomRotation")
    return _cast_back(out, a.dtype)


def _resize(a, size, mode):
    h, w = a.shape[-2:]
    if (h, w) == tuple(size):
        return a
    from ..nn.functional import interpolate
    smooth = mode in ("bilinear", "bicubic")
    x = a.reshape((1, -1, h, w))
    if smooth and a.dtype.kind != "f":
        x = x.astype(np.float32)
    out = interpolate(Tensor._make(np.ascontiguousarray(x)), size=tuple(size), mode=mode,
                      align_corners=False if smooth else None)._data
    return _cast_back(out, a.dtype).reshape(a.shape[:-2] + tuple(size))


# ---- the transforms ----------------------------------------------------------------------------
class Compose:
    """Apply transforms one after another."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        return "Compose(\n" + "".join(f"    {t}\n" for t in self.transforms) + ")"


class ToTensor:
    """A numpy / PIL image (H, W, C) or (H, W) -> a tensor (C, H, W) (2-D gives 1 x H x W).
    uint8 images are scaled to floats in [0, 1] (the default dtype); other dtypes keep their
    values and dtype, as torchvision."""

    def __call__(self, pic):
        if isinstance(pic, Tensor):
            raise TypeError("ToTensor: pic should be a PIL Image or an ndarray (H, W, C); got a "
                            "Tensor, which needs no conversion")
        from_pil = not isinstance(pic, np.ndarray)
        arr = _as_array(pic, "ToTensor")
        if arr.ndim == 2:
            arr = arr[:, :, None]
        chw = np.ascontiguousarray(arr.transpose(2, 0, 1))
        if from_pil and chw.dtype == np.bool_:           # PIL mode "1"
            chw = chw.astype(np.uint8) * 255
        if chw.dtype == np.uint8:
            ft = _dt.get_default_dtype().np
            return Tensor._make(chw.astype(ft) / ft.type(255))
        from ..creation import as_tensor
        return as_tensor(chw)

    def __repr__(self):
        return "ToTensor()"


class Normalize:
    """``(img - mean) / std`` per channel of a float tensor (..., C, H, W)."""

    def __init__(self, mean, std, inplace=False):
        self.mean, self.std, self.inplace = mean, std, inplace

    def __call__(self, tensor):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"Normalize: img should be a Tensor, got {type(tensor).__name__}; "
                            f"put ToTensor() before Normalize")
        if not tensor.is_floating_point():
            raise TypeError(f"Normalize: input tensor should be a float tensor. Got "
                            f"{tensor.dtype}; convert with .float() or use ToTensor()")
        if tensor.ndim < 3:
            raise ValueError(f"Normalize: expected tensor to be a tensor image of size (..., C, "
                             f"H, W). Got tensor.size() = {tuple(tensor.shape)}")
        dt = tensor._data.dtype
        mean, std = np.asarray(self.mean, dtype=dt), np.asarray(self.std, dtype=dt)
        if np.any(std == 0):
            raise ValueError(f"Normalize: std evaluated to zero after conversion to {dt}, "
                             f"leading to division by zero")
        channels = tensor.shape[-3]
        for name, v in (("mean", mean), ("std", std)):
            if v.ndim > 1 or v.size not in (1, channels):
                raise ValueError(f"Normalize: {name} has {v.size} values but the image has "
                                 f"{channels} channels")
        mean = Tensor._make(mean.reshape(-1, 1, 1) if mean.ndim == 1 else mean)
        std = Tensor._make(std.reshape(-1, 1, 1) if std.ndim == 1 else std)
        if self.inplace:
            return tensor.sub_(mean).div_(std)
        return (tensor - mean) / std

    def __repr__(self):
        return f"Normalize(mean={self.mean}, std={self.std})"


class Pad:
    """Pad the borders: ``padding`` int, (left/right, top/bottom) or (left, top, right,
    bottom); ``padding_mode`` constant (with ``fill``), edge, reflect or symmetric."""

    def __init__(self, padding, fill=0, padding_mode="constant"):
        self.padding = _parse_padding(padding, "Pad")
        if padding_mode not in _PAD_MODES:
            raise ValueError(f"Pad: padding_mode should be one of {', '.join(_PAD_MODES)}, got "
                             f"{padding_mode!r}")
        self.fill, self.padding_mode = fill, padding_mode

    def __call__(self, img):
        return _apply(img, lambda a: _pad(a, self.padding, self.fill, self.padding_mode), "Pad")

    def __repr__(self):
        return f"Pad(padding={self.padding}, fill={self.fill}, padding_mode={self.padding_mode})"


class RandomCrop:
    """Crop a random `size` (h, w) window, after optional `padding` (as `Pad`);
    ``pad_if_needed`` pads an image smaller than `size` first (by the missing amount on both
    sides, as torchvision). The top-left corner is uniform over the valid positions."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        self.size = _setup_size(size, "RandomCrop")
        self.padding = None if padding is None else _parse_padding(padding, "RandomCrop")
        if padding_mode not in _PAD_MODES:
            raise ValueError(f"RandomCrop: padding_mode should be one of "
                             f"{', '.join(_PAD_MODES)}, got {padding_mode!r}")
        self.pad_if_needed, self.fill, self.padding_mode = pad_if_needed, fill, padding_mode

    @staticmethod
    def get_params(img, output_size):
        """(top, left, height, width) of a random crop of `output_size` from `img`."""
        h, w = _hw(img, "RandomCrop")
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"RandomCrop: required crop size {(th, tw)} is larger than input "
                             f"image size {(h, w)}; use padding or pad_if_needed=True")
        if (h, w) == (th, tw):
            return 0, 0, h, w
        rng = np_rng(None)
        return int(rng.integers(0, h - th + 1)), int(rng.integers(0, w - tw + 1)), th, tw

    def __call__(self, img):
        def pad(im, ltrb):
            return _apply(im, lambda a: _pad(a, ltrb, self.fill, self.padding_mode, "RandomCrop"),
                          "RandomCrop")
        if self.padding is not None:
            img = pad(img, self.padding)
        h, w = _hw(img, "RandomCrop")
        th, tw = self.size
        if self.pad_if_needed and w < tw:
            img = pad(img, [tw - w, 0, tw - w, 0])
        if self.pad_if_needed and h < th:
            img = pad(img, [0, th - h, 0, th - h])
        i, j, ch, cw = self.get_params(img, self.size)
        return _apply(img, lambda a: a[..., i:i + ch, j:j + cw], "RandomCrop")

    def __repr__(self):
        return f"RandomCrop(size={self.size}, padding={self.padding})"


class CenterCrop:
    """Crop the central `size` (h, w) window (zero-padded first if the image is smaller)."""

    def __init__(self, size):
        self.size = _setup_size(size, "CenterCrop")

    def __call__(self, img):
        h, w = _hw(img, "CenterCrop")
        th, tw = self.size
        if th > h or tw > w:
            ltrb = [(tw - w) // 2 if tw > w else 0, (th - h) // 2 if th > h else 0,
                    (tw - w + 1) // 2 if tw > w else 0, (th - h + 1) // 2 if th > h else 0]
            img = _apply(img, lambda a: _pad(a, ltrb, 0, "constant", "CenterCrop"), "CenterCrop")
            h, w = _hw(img, "CenterCrop")
        top, left = int(round((h - th) / 2.0)), int(round((w - tw) / 2.0))
        return _apply(img, lambda a: a[..., top:top + th, left:left + tw], "CenterCrop")

    def __repr__(self):
        return f"CenterCrop(size={self.size})"


class RandomHorizontalFlip:
    """Mirror left-right with probability `p`."""

    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, img):
        if np_rng(None).random() < self.p:
            return _apply(img, lambda a: a[..., ::-1], "RandomHorizontalFlip")
        return img

    def __repr__(self):
        return f"RandomHorizontalFlip(p={self.p})"


class RandomVerticalFlip:
    """Mirror top-bottom with probability `p`."""

    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, img):
        if np_rng(None).random() < self.p:
            return _apply(img, lambda a: a[..., ::-1, :], "RandomVerticalFlip")
        return img

    def __repr__(self):
        return f"RandomVerticalFlip(p={self.p})"


class RandomRotation:
    """Rotate by an angle drawn uniformly from `degrees` ((-d, d) for a number d), counter-
    clockwise for positive angles, about `center` (default the image centre); ``interpolation``
    nearest or bilinear; pixels that come from outside the image get `fill` (a number or one
    per channel; None: zeros without blending). Meant for small angles: the output keeps the
    input's size (``expand=True`` is not supported)."""

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False,
                 center=None, fill=0):
        if isinstance(degrees, numbers.Real):
            if degrees < 0:
                raise ValueError(f"RandomRotation: if degrees is a single number, it must be "
                                 f"positive, got {degrees}")
            degrees = (-float(degrees), float(degrees))
        elif isinstance(degrees, (list, tuple)) and len(degrees) == 2:
            degrees = (float(degrees[0]), float(degrees[1]))
        else:
            raise ValueError(f"RandomRotation: degrees should be a number or a sequence of 2 "
                             f"numbers, got {degrees!r}")
        if expand:
            raise NotImplementedError("RandomRotation: expand=True is not supported; the output "
                                      "keeps the input size (use small angles or pad first)")
        if center is not None and (not isinstance(center, (list, tuple)) or len(center) != 2):
            raise ValueError(f"RandomRotation: center should be a sequence (x, y), got "
                             f"{center!r}")
        self.degrees = degrees
        self.interpolation = _mode(interpolation, "RandomRotation", ("nearest", "bilinear"))
        self.expand, self.center, self.fill = expand, center, fill

    @staticmethod
    def get_params(degrees):
        return float(np_rng(None).uniform(degrees[0], degrees[1]))

    def __call__(self, img):
        angle = self.get_params(self.degrees)
        return _apply(img, lambda a: _rotate(a, angle, self.interpolation, self.fill,
                                             self.center), "RandomRotation")

    def __repr__(self):
        return (f"RandomRotation(degrees={list(self.degrees)}, "
                f"interpolation={self.interpolation}, fill={self.fill})")


class Resize:
    """Resize to `size`: (h, w), or an int to match the smaller edge keeping the aspect ratio
    (then ``max_size`` caps the longer edge). ``interpolation`` nearest, nearest-exact,
    bilinear (default) or bicubic, through ``nn.functional.interpolate`` (align_corners=False);
    integer images are rounded back. No antialiasing (torchvision's ``antialias=False``)."""

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
                 antialias=None):
        if isinstance(size, numbers.Integral):
            size = [int(size)]
        elif not (isinstance(size, (list, tuple)) and len(size) in (1, 2)):
            raise ValueError(f"Resize: size should be an int or a sequence of 1 or 2 ints, got "
                             f"{size!r}")
        if max_size is not None and len(size) != 1:
            raise ValueError(f"Resize: max_size should only be passed if size specifies the "
                             f"length of the smaller edge, i.e. size should be an int or a "
                             f"sequence of length 1; got size={size}")
        if antialias:
            raise NotImplementedError("Resize: antialias=True is not implemented; pass "
                                      "antialias=False (the result then matches torchvision's "
                                      "antialias=False)")
        self.size, self.max_size = list(size), max_size
        self.interpolation = _mode(interpolation, "Resize",
                                   ("nearest", "nearest-exact", "bilinear", "bicubic"))

    def output_size(self, h, w):
        if len(self.size) == 2:
            return self.size[0], self.size[1]
        short, long = (w, h) if w <= h else (h, w)
        new_short, new_long = self.size[0], int(self.size[0] * long / short)
        if self.max_size is not None:
            if self.max_size <= new_short:
                raise ValueError(f"Resize: max_size = {self.max_size} must be strictly greater "
                                 f"than the requested size for the smaller edge = {self.size}")
            if new_long > self.max_size:
                new_short, new_long = int(self.max_size * new_short / new_long), self.max_size
        return (new_long, new_short) if w <= h else (new_short, new_long)

    def __call__(self, img):
        size = self.output_size(*_hw(img, "Resize"))
        return _apply(img, lambda a: _resize(a, size, self.interpolation), "Resize")

    def __repr__(self):
        return (f"Resize(size={self.size}, interpolation={self.interpolation}, "
                f"max_size={self.max_size})")


class Lambda:
    """Wrap any function as a transform."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Lambda: argument lambd should be callable, got "
                            f"{type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self):
        return "Lambda()"
