"""Digits: 1,797 handwritten digits as 8x8 images, shipped inside the package (works offline).

The data is the test part of the UCI "Optical Recognition of Handwritten Digits" dataset
(E. Alpaydin and C. Kaynak, 1998, https://doi.org/10.24432/C50P49), licensed CC BY 4.0; see
``DIGITS_ATTRIBUTION``. 43 people filled in forms; each 32x32 bitmap of a digit was cut into
4x4 blocks and the "on" pixels of each block counted, giving an 8x8 image of values 0..16.
Class sizes for digits 0..9: 178, 182, 177, 183, 181, 182, 181, 179, 174, 180.

The file ``digits_8x8.csv.gz`` holds the rows exactly as scikit-learn distributes them
(``sklearn/datasets/data/digits.csv.gz``: 64 pixel values then the label, one image a line)
after a few ``#`` comment lines with the attribution. Its SHA-256 is checked against
``DIGITS_SHA256`` every time it is read, so a damaged install fails loudly (``ChecksumError``).

``Digits(root=None, train=None, transform=None, target_transform=None)``:
  * ``train=None``: all 1,797 images; ``train=True`` / ``False``: the 80% / 20% parts of a
    fixed, seeded, stratified split (see ``Digits.split_indices``): 1,438 / 359 images, with
    every digit in the same proportion in both parts. ``split_seed`` and ``test_fraction``
    (keyword-only) choose another split; ``Digits.split()`` returns both parts at once.
  * ``dataset[i]`` is ``(image, label)``: without a transform, image is a float32 Tensor
    (1, 8, 8) = pixel / 16, in [0, 1]; with a transform, the transform receives that same
    image as a float32 numpy array (8, 8) in [0, 1] (a fresh copy). label is an int 0..9.
  * ``.data``: uint8 Tensor (N, 8, 8) of the raw values 0..16; ``.targets``: int64 Tensor
    (N,); ``.indices``: int64 numpy array, the rows of the full 1,797 this part holds;
    ``classes``: ["0", ..., "9"].
  * ``root``: None reads the copy inside the package; a folder reads
    ``root/digits_8x8.csv.gz`` instead (same checksum). ``download`` is accepted so all
    built-in datasets share a signature; nothing is ever downloaded.
"""
import gzip
import hashlib
import io
import os

import numpy as np

from ...random import Generator
from ...tensor import Tensor
from ..dataset import Dataset
from ._download import ChecksumError, DatasetFormatError, DatasetNotFoundError, check_index

__all__ = ["Digits", "DIGITS_ATTRIBUTION", "DIGITS_SHA256", "DIGITS_FILENAME"]

DIGITS_FILENAME = "digits_8x8.csv.gz"
DIGITS_SHA256 = "8139cca3159a17207467357e271b0092513dfd9612bb443524012e2dbe45fcb2"
DIGITS_ATTRIBUTION = (
    'Digits data: UCI Machine Learning Repository, "Optical Recognition of Handwritten '
    'Digits", E. Alpaydin and C. Kaynak, 1998, https://doi.org/10.24432/C50P49. '
    "Licensed under CC BY 4.0 (https://creativecommons.org/licenses/by/4.0/). "
    "minitorch_edge ships the dataset's test part (1,797 images, as distributed by "
    "scikit-learn) unchanged, with an attribution header added.")
NUM_SAMPLES = 1797
SPLIT_SEED = 0
TEST_FRACTION = 0.2

_cache = {}  # (path, size, mtime_ns) -> (images uint8 (N, 8, 8), labels int64 (N,))


def _package_file():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), DIGITS_FILENAME)


def load_digits_arrays(path=None):
    """(images uint8 (1797, 8, 8) with values 0..16, labels int64 (1797,)), checksum verified.

    Returns fresh copies; the parsed file is cached per process (keyed by path, size, mtime).
    """
    path = os.fspath(path) if path is not None else _package_file()
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DatasetNotFoundError(
            f"Digits: {path} does not exist. The package copy ships with minitorch_edge; "
            f"reinstall it, or pass root=None to use that copy.") from None
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    if key not in _cache:
        with open(path, "rb") as f:
            blob = f.read()
        got = hashlib.sha256(blob).hexdigest()
        if got != DIGITS_SHA256:
            raise ChecksumError(
                f"Digits: {path} has SHA-256 {got}, expected {DIGITS_SHA256}: the file is "
                f"damaged or not the shipped digits_8x8.csv.gz; reinstall minitorch_edge.")
        text = gzip.decompress(blob).decode("ascii")
        table = np.loadtxt(io.StringIO(text), delimiter=",", dtype=np.int64, comments="#",
                           ndmin=2)
        if table.shape != (NUM_SAMPLES, 65) or table[:, :64].min() < 0 or \
                table[:, :64].max() > 16 or table[:, 64].min() < 0 or table[:, 64].max() > 9:
            raise DatasetFormatError(f"Digits: {path}: expected {NUM_SAMPLES} rows of 64 pixels "
                                     f"0..16 and a label 0..9, found shape {table.shape}")
        images = table[:, :64].astype(np.uint8).reshape(NUM_SAMPLES, 8, 8)
        _cache[key] = (images, table[:, 64].copy())
    images, labels = _cache[key]
    return images.copy(), labels.copy()


class Digits(Dataset):
    """The 8x8 handwritten digits (1,797 images, 10 classes); see the module docstring."""

    classes = [str(d) for d in range(10)]

    def __init__(self, root=None, train=None, transform=None, target_transform=None,
                 download=False, *, split_seed=SPLIT_SEED, test_fraction=TEST_FRACTION):
        if train not in (None, True, False):
            raise ValueError(f"Digits: train must be None (all images), True or False, got "
                             f"{train!r}")
        self.root = None if root is None else os.path.expanduser(os.fspath(root))
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        self.split_seed, self.test_fraction = split_seed, test_fraction
        path = None if root is None else os.path.join(self.root, DIGITS_FILENAME)
        images, labels = load_digits_arrays(path)
        if train is None:
            indices = np.arange(len(labels), dtype=np.int64)
        else:
            train_idx, test_idx = self.split_indices(labels, split_seed, test_fraction)
            indices = train_idx if train else test_idx
        self.indices = indices
        self.data = Tensor._make(np.ascontiguousarray(images[indices]))
        self.targets = Tensor._make(np.ascontiguousarray(labels[indices]))

    @staticmethod
    def split_indices(targets, seed=SPLIT_SEED, test_fraction=TEST_FRACTION):
        """A stratified split: (train_indices, test_indices), sorted int64 numpy arrays.

        For each class c in increasing order, the positions of class c (in file order) are
        shuffled with ``rng.permutation``, one numpy PCG64 generator seeded with `seed` (the
        generator ``minitorch_edge.Generator().manual_seed(seed)`` wraps) drawing for every
        class in turn; the first ``floor(test_fraction * n_c + 0.5)`` of them go to the test
        part and the rest to the train part. For the 1,797 digits with seed=0 and 0.2 that is
        359 test and 1,438 train images. The result depends only on `targets`, `seed` and
        `test_fraction`, never on the global random state.
        """
        labels = np.asarray(targets._data if isinstance(targets, Tensor) else targets)
        if labels.ndim != 1:
            raise ValueError(f"Digits.split_indices: targets must be 1-D, got shape "
                             f"{labels.shape}")
        try:
            fraction = float(test_fraction)
        except (TypeError, ValueError):
            fraction = float("nan")
        if not 0.0 < fraction < 1.0:
            raise ValueError(f"Digits.split_indices: test_fraction must be in (0, 1), got "
                             f"{test_fraction!r}")
        rng = Generator().manual_seed(int(seed)).numpy
        train, test = [], []
        for c in np.unique(labels):
            members = np.flatnonzero(labels == c)
            perm = rng.permutation(members)
            n_test = int(np.floor(fraction * len(members) + 0.5))
            test.append(perm[:n_test])
            train.append(perm[n_test:])
        return (np.sort(np.concatenate(train)).astype(np.int64),
                np.sort(np.concatenate(test)).astype(np.int64))

    @classmethod
    def split(cls, seed=SPLIT_SEED, test_fraction=TEST_FRACTION, **kwargs):
        """(train_dataset, test_dataset): ``Digits(train=True/False, split_seed=seed, ...)``.

        Other keyword arguments (root, transform, target_transform) go to both.
        """
        return (cls(train=True, split_seed=seed, test_fraction=test_fraction, **kwargs),
                cls(train=False, split_seed=seed, test_fraction=test_fraction, **kwargs))

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self.classes)}

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        index = check_index(self, index, len(self.targets))
        image = self.data._data[index].astype(np.float32) / np.float32(16.0)
        if self.transform is not None:
            image = self.transform(image)
        else:
            image = Tensor._make(image[None])
        target = int(self.targets._data[index])
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __repr__(self):
        split = {None: "All", True: "Train", False: "Test"}[self.train]
        lines = ["Dataset Digits", f"    Number of datapoints: {len(self)}",
                 f"    Root location: {self.root or '(inside the package)'}",
                 f"    Split: {split}" + ("" if self.train is None else
                                          f" (seed {self.split_seed}, test fraction "
                                          f"{self.test_fraction})")]
        if self.transform is not None:
            lines.append(f"    Transform: {self.transform!r}")
        if self.target_transform is not None:
            lines.append(f"    Target transform: {self.target_transform!r}")
        return "\n".join(lines)
