"""CIFAR-10 from its *binary* version: 60,000 32x32 colour images in 10 classes.

The CIFAR page offers a "python version" (pickled batches) and a "binary version" for C
programs. Unpickling can run arbitrary code, so this loader reads only the binary version,
``cifar-10-binary.tar.gz``, which unpacks to ``cifar-10-batches-bin/``:

    data_batch_1.bin ... data_batch_5.bin   training, 10,000 records each
    test_batch.bin                          test, 10,000 records
    batches.meta.txt                        the class names, one a line

Each record is 3073 bytes: 1 label byte (0..9), then 3072 pixel bytes: the 1024 red values,
then green, then blue, each 32x32 row by row (so channels-first). The loader checks that each
file's size is a positive multiple of 3073 and every label is below 10, and raises
``DatasetFormatError`` naming the file otherwise.

Like torchvision: ``.data`` is a uint8 numpy array (N, 32, 32, 3) (channels last, HWC),
``.targets`` a list of ints, and ``dataset[i]`` is ``(image, label)``. Without a transform the
image is a float32 Tensor (3, 32, 32) scaled to [0, 1]; with one, the transform receives the
uint8 HWC numpy array (32, 32, 3) (what a PIL image is in torchvision), e.g. for
``transforms.ToTensor()``.

``download=True`` fetches the archive from the CIFAR page, checks its published MD5 and unpacks
it with ``safe_extract_tar`` (which refuses absolute paths, '..' and links).
"""
import os

import numpy as np

from ...tensor import Tensor
from ..dataset import Dataset
from ._download import (DatasetFormatError, DatasetNotFoundError, check_index, download_file,
                        safe_extract_tar)

__all__ = ["CIFAR10", "read_cifar_binary"]

RECORD = 1 + 3 * 32 * 32


def read_cifar_binary(path, num_classes=10):
    """Read one CIFAR binary batch file into (images uint8 (N, 32, 32, 3), labels int64 (N,))."""
    path = os.fspath(path)
    size = os.path.getsize(path)
    if size == 0 or size % RECORD:
        n, rest = divmod(size, RECORD)
        raise DatasetFormatError(
            f"{path}: {size} bytes is not a positive multiple of {RECORD} (1 label byte + 3072 "
            f"pixel bytes per image): {n} whole record(s) and {rest} extra byte(s). The file is "
            f"truncated or not a CIFAR-10 binary batch (the python-version batches are pickles "
            f"and are not read); delete it and download again.")
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size != size:  # the file changed under us
        raise DatasetFormatError(f"{path}: read {raw.size} bytes, expected {size}")
    records = raw.reshape(-1, RECORD)
    labels = records[:, 0].astype(np.int64)
    if labels.size and int(labels.max()) >= num_classes:
        bad = int(np.argmax(labels >= num_classes))
        raise DatasetFormatError(f"{path}: record {bad} has label {int(labels[bad])}; expected "
                                 f"0..{num_classes - 1}. Is this a CIFAR-10 (not CIFAR-100) "
                                 f"binary file?")
    images = records[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels


class CIFAR10(Dataset):
    """CIFAR-10: 50,000 training and 10,000 test colour images (32x32), 10 classes.

    ``CIFAR10(root, train=True, transform=None, target_transform=None, download=False)`` reads
    ``root/cifar-10-batches-bin/*.bin``; see the module docstring for the format and what
    ``dataset[i]`` returns.
    """

    base_folder = "cifar-10-batches-bin"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
    filename = "cifar-10-binary.tar.gz"
    tgz_md5 = "c32a1d4ab5d03f1284b67883e8d87530"  # published on the CIFAR page
    train_list = [f"data_batch_{i}.bin" for i in range(1, 6)]
    test_list = ["test_batch.bin"]
    classes = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
               "truck"]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        if root is None:
            raise TypeError(f"{type(self).__name__}: root must be a folder path, got None")
        self.root = os.path.expanduser(os.fspath(root))
        self.train = bool(train)
        self.transform = transform
        self.target_transform = target_transform
        if download:
            self.download()
        images, labels = [], []
        for path in self._paths():
            x, y = read_cifar_binary(path, len(self.classes))
            images.append(x)
            labels.append(y)
        self.data = np.concatenate(images) if len(images) > 1 else images[0]
        self.targets = (np.concatenate(labels) if len(labels) > 1 else labels[0]).tolist()

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self.classes)}

    def _files(self):
        return self.train_list if self.train else self.test_list

    def _check_exists(self):
        folder = os.path.join(self.root, self.base_folder)
        return all(os.path.isfile(os.path.join(folder, f))
                   for f in self.train_list + self.test_list)

    def _paths(self):
        name = type(self).__name__
        folder = os.path.join(self.root, self.base_folder)
        paths = [os.path.join(folder, f) for f in self._files()]
        missing = [os.path.basename(p) for p in paths if not os.path.isfile(p)]
        if missing:
            raise DatasetNotFoundError(
                f"{name}: dataset not found: {', '.join(missing)} missing from {folder}. Use "
                f"{name}(root, download=True), or unpack {self.filename} (the binary version, "
                f"not the python version) into {self.root}.")
        return paths

    def download(self, urlopen=None):
        """Fetch and verify the archive (unless all batch files exist), then unpack it safely.

        `urlopen` replaces the network for tests (see _download).
        """
        if self._check_exists():
            return
        archive = os.path.join(self.root, self.filename)
        download_file(self.url, archive, md5=self.tgz_md5, urlopen=urlopen)
        safe_extract_tar(archive, self.root)

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        index = check_index(self, index, len(self.targets))
        image = self.data[index]
        if self.transform is not None:
            image = self.transform(image.copy())
        else:
            chw = np.ascontiguousarray(image.transpose(2, 0, 1), dtype=np.float32)
            image = Tensor._make(chw / np.float32(255.0))
        target = int(self.targets[index])
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __repr__(self):
        lines = [f"Dataset {type(self).__name__}", f"    Number of datapoints: {len(self)}",
                 f"    Root location: {self.root}",
                 f"    Split: {'Train' if self.train else 'Test'}"]
        if self.transform is not None:
            lines.append(f"    Transform: {self.transform!r}")
        if self.target_transform is not None:
            lines.append(f"    Target transform: {self.target_transform!r}")
        return "\n".join(lines)
