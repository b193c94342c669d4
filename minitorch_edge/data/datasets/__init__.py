"""Built-in datasets: Digits (shipped, offline), MNIST, FashionMNIST and CIFAR10 (local files or
download=True with checksum checks). No file format here is a pickle.

    from minitorch_edge.data.datasets import Digits, MNIST
    train, test = Digits(train=True), Digits(train=False)   # fixed, seeded, stratified 80/20
    mnist = MNIST("data", train=True, download=True)         # data/MNIST/raw/*.gz

Each dataset subclasses ``data.Dataset`` and follows torchvision's names: ``dataset[i]`` is
``(image, label)``, plus ``.data``, ``.targets``, ``.classes``, ``transform`` and
``target_transform``. Files that are not what they should be raise ``DatasetFormatError`` (a
ValueError) naming the file, what was expected and what was found.
"""
from ._download import (ChecksumError, DatasetFormatError, DatasetNotFoundError, DownloadError,
                        UnsafeArchiveError, check_integrity, download_file, safe_extract_tar)
from .cifar import CIFAR10
from .digits import DIGITS_ATTRIBUTION, DIGITS_SHA256, Digits
from .mnist import MNIST, FashionMNIST

__all__ = ["Digits", "MNIST", "FashionMNIST", "CIFAR10", "DIGITS_ATTRIBUTION", "DIGITS_SHA256",
           "DatasetFormatError", "ChecksumError", "UnsafeArchiveError", "DatasetNotFoundError",
           "DownloadError", "check_integrity", "download_file", "safe_extract_tar"]
