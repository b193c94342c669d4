"""MNIST and Fashion-MNIST: 28x28 grey images in the IDX file format.

The IDX format (from the MNIST page) is a tiny header followed by raw bytes:

    bytes 0-1   0x00 0x00
    byte  2     element type: 0x08 = unsigned byte (the only type these datasets use)
    byte  3     number of dimensions d (3 for images, 1 for labels)
    then d big-endian uint32 sizes (N, 28, 28 for images; N for labels)
    then N*28*28 (or N) bytes, row by row.

So an image file must be exactly 16 + N*784 bytes and a label file 8 + N bytes. The reader
checks every one of those facts and raises ``DatasetFormatError`` naming the file, what was
expected and what was found; it reads in chunks, so a header that claims a huge size cannot
make it allocate more than the file really holds.

Files live where torchvision puts them: ``root/MNIST/raw/train-images-idx3-ubyte`` (and
``train-labels-idx1-ubyte``, ``t10k-...`` for the test split), plain or ``.gz``-compressed;
the plain file is preferred when both exist. ``download=True`` fetches the official ``.gz``
files (MNIST from the ossci-datasets S3 mirror that torchvision uses, Fashion-MNIST from
Zalando Research's S3 bucket), verifies their published MD5s, and reads them compressed.

Like torchvision: ``.data`` is a uint8 Tensor (N, 28, 28), ``.targets`` an int64 Tensor (N,),
and ``dataset[i]`` is ``(image, label)`` with label an int. Without a transform the image is a
float32 Tensor (1, 28, 28) scaled to [0, 1]; with one, the transform receives the image as a
uint8 numpy array (28, 28) (the role a PIL image plays in torchvision), e.g. for
``transforms.ToTensor()``.
"""
import gzip
import os
import zlib

import numpy as np

from ...tensor import Tensor
from ..dataset import Dataset
from ._download import DatasetFormatError, DatasetNotFoundError, check_index, download_file

__all__ = ["MNIST", "FashionMNIST", "read_idx"]

_IDX_UBYTE = 0x08
_IDX_TYPE_NAMES = {0x08: "unsigned byte", 0x09: "signed byte", 0x0B: "int16", 0x0C: "int32",
                   0x0D: "float32", 0x0E: "float64"}
_CHUNK = 4 << 20


def _open(path):
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def _read_upto(f, n):
    """Up to n bytes from f, read in chunks (never allocates more than the file delivers)."""
    buf = bytearray()
    while len(buf) < n:
        block = f.read(min(_CHUNK, n - len(buf)))
        if not block:
            break
        buf += block
    return buf


def read_idx(path, ndim, item_shape=()):
    """Read an unsigned-byte IDX file into a uint8 array of shape (N, *item_shape).

    ndim: the number of dimensions the header must declare (3 for images, 1 for labels).
    item_shape: the sizes every dimension after the first must have, e.g. (28, 28).
    Raises DatasetFormatError (naming the file, the rule, expected and found) on a wrong magic
    number, element type, dimension count or sizes, a truncated file, trailing bytes, or a
    corrupted gzip stream.
    """
    path = os.fspath(path)
    name = os.path.basename(path)
    expect_dims = "(N, " + ", ".join(map(str, item_shape)) + ")" if item_shape else "(N,)"
    try:
        with _open(path) as f:
            head = _read_upto(f, 4)
            if len(head) < 4:
                raise DatasetFormatError(f"{path}: the file is {len(head)} bytes long, too short "
                                         f"for an IDX header (4-byte magic number expected)")
            magic = int.from_bytes(head, "big")
            want_magic = (_IDX_UBYTE << 8) | ndim
            if head[0] != 0 or head[1] != 0:
                raise DatasetFormatError(
                    f"{path}: not an IDX file: magic number 0x{magic:08X}, expected "
                    f"0x{want_magic:08X} (first two bytes must be zero); is this the right file "
                    f"for {name}?")
            if head[2] != _IDX_UBYTE:
                kind = _IDX_TYPE_NAMES.get(head[2], "unknown")
                raise DatasetFormatError(
                    f"{path}: IDX element type 0x{head[2]:02X} ({kind}) in magic number "
                    f"0x{magic:08X}; expected 0x08 (unsigned byte), magic 0x{want_magic:08X}")
            if head[3] != ndim:
                raise DatasetFormatError(
                    f"{path}: the IDX header declares {head[3]} dimension(s) (magic "
                    f"0x{magic:08X}); expected {ndim} {expect_dims}, magic 0x{want_magic:08X}. "
                    f"Image and label files may have been swapped.")
            raw_dims = _read_upto(f, 4 * ndim)
            if len(raw_dims) < 4 * ndim:
                raise DatasetFormatError(f"{path}: truncated IDX header: {4 + len(raw_dims)} "
                                         f"bytes, expected {4 + 4 * ndim} (magic + {ndim} sizes)")
            dims = tuple(int.from_bytes(raw_dims[4 * i:4 * i + 4], "big") for i in range(ndim))
            if tuple(dims[1:]) != tuple(item_shape):
                raise DatasetFormatError(f"{path}: the IDX header gives sizes {dims}; expected "
                                         f"{expect_dims}")
            count = 1
            for d in dims:
                count *= d
            header_len = 4 + 4 * ndim
            payload = _read_upto(f, count)
            if len(payload) < count:
                raise DatasetFormatError(
                    f"{path}: truncated: the header's sizes {dims} imply {count} data bytes "
                    f"({header_len + count} bytes in all), but the file holds only "
                    f"{len(payload)} ({header_len + len(payload)} in all). Delete it and "
                    f"download it again.")
            if f.read(1):
                raise DatasetFormatError(
                    f"{path}: the file is longer than its header's sizes {dims} imply "
                    f"({header_len + count} bytes expected); trailing bytes found")
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise DatasetFormatError(f"{path}: corrupted gzip stream ({type(e).__name__}: {e}); "
                                 f"delete it and download it again") from None
    return np.frombuffer(payload, dtype=np.uint8).reshape(dims)  # writable: a bytearray


class MNIST(Dataset):
    """The MNIST handwritten digits: 60,000 training and 10,000 test images, 28x28 grey.

    ``MNIST(root, train=True, transform=None, target_transform=None, download=False)`` reads
    ``root/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]``; see the module
    docstring for the format, the layout and what ``dataset[i]`` returns.
    """

    mirrors = ["https://ossci-datasets.s3.amazonaws.com/mnist/"]
    # (file name, published MD5), as listed by torchvision and the MNIST page
    resources = [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six",
               "7 - seven", "8 - eight", "9 - nine"]
    image_size = (28, 28)

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        if root is None:
            raise TypeError(f"{type(self).__name__}: root must be a folder path, got None")
        self.root = os.path.expanduser(os.fspath(root))
        self.train = bool(train)
        self.transform = transform
        self.target_transform = target_transform
        if download:
            self.download()
        images, labels = self._load()
        self.data = Tensor._make(images)
        self.targets = Tensor._make(labels)

    # ------------------------------------------------------------------------------ files
    @property
    def raw_folder(self):
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self.classes)}

    def _split_files(self):
        prefix = "train" if self.train else "t10k"
        return f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"

    def _find(self, stem):
        """The path of `stem` or `stem.gz` in raw_folder (plain file preferred), else None."""
        for candidate in (stem, stem + ".gz"):
            path = os.path.join(self.raw_folder, candidate)
            if os.path.isfile(path):
                return path
        return None

    def _check_exists(self):
        return all(self._find(stem) for stem in self._split_files())

    def _load(self):
        name = type(self).__name__
        paths = []
        for stem in self._split_files():
            path = self._find(stem)
            if path is None:
                raise DatasetNotFoundError(
                    f"{name}: dataset not found: neither {stem} nor {stem}.gz is in "
                    f"{self.raw_folder}. Use {name}(root, download=True) to download it, or put "
                    f"the IDX files there.")
            paths.append(path)
        images = read_idx(paths[0], 3, self.image_size)
        labels = read_idx(paths[1], 1)
        if len(images) != len(labels):
            raise DatasetFormatError(f"{name}: {paths[0]} holds {len(images)} images but "
                                     f"{paths[1]} holds {len(labels)} labels; they must match")
        n_classes = len(self.classes)
        if len(labels) and int(labels.max()) >= n_classes:
            bad = int(np.argmax(labels >= n_classes))
            raise DatasetFormatError(f"{name}: {paths[1]}: label {int(labels[bad])} at index "
                                     f"{bad} is out of range; expected 0..{n_classes - 1}")
        return images, labels.astype(np.int64)

    def download(self, urlopen=None):
        """Fetch the four .gz files into raw_folder (skipping those present and verified).

        A file is also skipped when its uncompressed version is already there (it is then
        validated when loaded). `urlopen` replaces the network for tests (see _download).
        """
        os.makedirs(self.raw_folder, exist_ok=True)
        for filename, md5 in self.resources:
            stem = filename[:-3] if filename.endswith(".gz") else filename
            if os.path.isfile(os.path.join(self.raw_folder, stem)):
                continue
            urls = [mirror + filename for mirror in self.mirrors]
            download_file(urls, os.path.join(self.raw_folder, filename), md5=md5,
                          urlopen=urlopen)

    # ---------------------------------------------------------------------------- samples
    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        # read .data/.targets each time (as torchvision does), so edits to them take effect
        index = check_index(self, index, len(self.targets))
        image = self.data._data[index]
        if self.transform is not None:
            image = self.transform(image.copy())
        else:
            image = Tensor._make((image.astype(np.float32) / np.float32(255.0))[None])
        target = int(self.targets._data[index])
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def extra_repr(self):
        return f"Split: {'Train' if self.train else 'Test'}"

    def __repr__(self):
        lines = [f"Dataset {type(self).__name__}", f"    Number of datapoints: {len(self)}",
                 f"    Root location: {self.root}", f"    {self.extra_repr()}"]
        if self.transform is not None:
            lines.append(f"    Transform: {self.transform!r}")
        if self.target_transform is not None:
            lines.append(f"    Target transform: {self.target_transform!r}")
        return "\n".join(lines)


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: clothing images in MNIST's format (60,000 + 10,000, 28x28).

    Same loader as MNIST; files in ``root/FashionMNIST/raw/``; downloaded from Zalando
    Research's S3 bucket with the MD5s published in the fashion-mnist repository.
    """

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot"]

