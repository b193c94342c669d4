"""Getting dataset files onto disk safely: download, checksum, atomic write, safe extraction.

Every built-in dataset that can download (MNIST, FashionMNIST, CIFAR10) goes through three
helpers here:

* ``download_file(urls, path, md5=..., sha256=...)`` fetches a file over HTTP(S) with
  ``urllib``, streaming it into a temporary file in the destination folder while hashing it.
  Only a file whose checksum matches the published value is renamed into place (``os.replace``
  is atomic), so an interrupted or corrupted download never leaves a half-written file under
  the final name. A file already present and verified is not fetched again.
* ``check_integrity(path, md5=..., sha256=...)`` says whether a file on disk matches.
* ``safe_extract_tar(archive, folder)`` unpacks a tar archive after checking *every* member
  first: no absolute paths, no ``..``, no links or device files, nothing that would land outside
  ``folder``. A hostile archive is rejected before a single byte is written.

Tests never touch the network: every function that downloads takes ``urlopen``, a callable
``urlopen(url, timeout=...)`` returning a readable, closable response (``io.BytesIO`` will do).
When it is None the module-level ``default_urlopen`` is used, looked up at call time, so a test
can also replace that one attribute.

Errors: ``DatasetFormatError`` (a ValueError) for files that are not what they should be,
``ChecksumError`` (a DatasetFormatError) for a checksum mismatch, ``UnsafeArchiveError`` (a
DatasetFormatError) for a rejected archive member, ``DatasetNotFoundError`` (a
FileNotFoundError, and a RuntimeError like torchvision's "Dataset not found" error) for
missing files, ``DownloadError`` (a RuntimeError) when no mirror could be reached.
``check_index`` is the index check every dataset's ``__getitem__`` shares.
"""
import hashlib
import http.client
import os
import sys
import tarfile
import tempfile
import urllib.request

__all__ = ["DatasetFormatError", "ChecksumError", "UnsafeArchiveError", "DatasetNotFoundError",
           "DownloadError", "file_digest", "check_integrity", "download_file",
           "safe_extract_tar", "default_urlopen", "check_index"]

CHUNK = 1 << 20
USER_AGENT = "minitorch-edge (https://pypi.org/project/minitorch-edge/)"


class DatasetFormatError(ValueError):
    """A dataset file is malformed: wrong magic number, sizes, checksum, or archive member."""


class ChecksumError(DatasetFormatError):
    """A file's MD5/SHA-256 differs from the published value."""


class UnsafeArchiveError(DatasetFormatError):
    """An archive member would be written outside the target folder, or is a link/device."""


class DatasetNotFoundError(FileNotFoundError, RuntimeError):
    """The dataset's files are not in the root folder (and download=False)."""


class DownloadError(RuntimeError):
    """No mirror could deliver the file (network errors); the message lists each attempt."""


def default_urlopen(url, timeout=60.0):
    """``urllib.request.urlopen`` with a User-Agent header (some mirrors refuse Python's)."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    return urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 (http/https only)


# --------------------------------------------------------------------------------- checksums

def _hasher(algorithm):
    if algorithm == "md5":  # MD5 identifies published files here; it is not a security check
        try:
            return hashlib.md5(usedforsecurity=False)
        except TypeError:  # Python builds whose hashlib lacks the keyword
            return hashlib.md5()
    return hashlib.new(algorithm)


def file_digest(path, algorithm="sha256"):
    """The hex digest of a file's bytes ("md5" or "sha256"), read in 1 MiB chunks."""
    h = _hasher(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _expected(md5, sha256):
    """[(algorithm, expected hex)] for the checksums given."""
    pairs = [(a, v.lower()) for a, v in (("md5", md5), ("sha256", sha256)) if v]
    return pairs


def check_integrity(path, md5=None, sha256=None):
    """True when `path` is a file whose MD5/SHA-256 equal the given ones (those not None).

    With no checksum given, only existence is checked.
    """
    if not os.path.isfile(path):
        return False
    return all(file_digest(path, a) == v for a, v in _expected(md5, sha256))


# ---------------------------------------------------------------------------------- download

def _remove_quietly(path):
    try:
        os.remove(path)
    except OSError:
        pass


def _fsync_folder(folder):
    """Make a rename durable (best effort: not every platform can open a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fetch_one(url, path, expected, urlopen, timeout):
    """Stream `url` into a temp file next to `path`, verify, rename. Returns nothing."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".",
                               suffix=".part")
    try:
        hashers = [(a, v, _hasher(a)) for a, v in expected]
        size = 0
        with os.fdopen(fd, "wb") as out:
            response = urlopen(url, timeout=timeout)
            try:
                while True:
                    block = response.read(CHUNK)
                    if not block:
                        break
                    out.write(block)
                    size += len(block)
                    for _, _, h in hashers:
                        h.update(block)
            finally:
                close = getattr(response, "close", None)
                if close is not None:
                    close()
            out.flush()
            os.fsync(out.fileno())
        for algorithm, want, h in hashers:
            got = h.hexdigest()
            if got != want:
                raise ChecksumError(
                    f"download_file: {url} gave {size} bytes whose {algorithm.upper()} is {got}, "
                    f"but the published {algorithm.upper()} of {os.path.basename(path)} is {want}; "
                    f"the file was discarded. The mirror may be serving a corrupted or changed "
                    f"file: retry later, or download it by hand into {folder} and check it.")
        os.replace(tmp, path)
        tmp = None
        _fsync_folder(folder)
    finally:
        if tmp is not None:
            _remove_quietly(tmp)


def download_file(urls, path, md5=None, sha256=None, urlopen=None, timeout=60.0, quiet=False):
    """Download a file to `path` unless it is already there and verified; return `path`.

    urls: one URL or a list of mirrors, tried in order until one delivers a verified file.
    md5 / sha256: published checksums (hex); at least one should be given, since an unchecked
        download cannot be told from a corrupted one.
    urlopen: ``urlopen(url, timeout=...)`` returning an object with ``read(n)`` (and optionally
        ``close()``); None means ``default_urlopen`` (real network).

    The bytes go to a temporary file in the same folder, are hashed while streaming, fsync'd,
    and renamed to `path` only when every checksum matches; otherwise the temp file is deleted
    and ``ChecksumError`` is raised (``DownloadError`` if no mirror answered at all).
    """
    if isinstance(urls, (str, bytes, os.PathLike)):
        urls = [urls]
    urls = [os.fspath(u) for u in urls]
    if not urls:
        raise ValueError("download_file: no URL given")
    expected = _expected(md5, sha256)
    path = os.fspath(path)
    if expected and check_integrity(path, md5, sha256):
        return path
    if not expected and os.path.isfile(path):
        return path
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    if urlopen is None:
        urlopen = default_urlopen  # looked up now, so tests may replace the module attribute
    failures = []
    for url in urls:
        if not quiet:
            print(f"Downloading {url} to {path}", file=sys.stderr)
        try:
            _fetch_one(url, path, expected, urlopen, timeout)
            return path
        except ChecksumError as e:
            failures.append((url, e))
        except (OSError, EOFError, ValueError, http.client.HTTPException) as e:
            failures.append((url, e))  # URLError, HTTPError, timeouts, IncompleteRead, ...
    details = "; ".join(f"{u}: {type(e).__name__}: {e}" for u, e in failures)
    if all(isinstance(e, ChecksumError) for _, e in failures):
        if len(failures) == 1:
            raise failures[0][1]
        raise ChecksumError(f"download_file: every mirror gave a file with the wrong checksum "
                            f"for {os.path.basename(path)} ({details})")
    raise DownloadError(f"download_file: could not download {os.path.basename(path)} from any "
                        f"of {len(urls)} mirror(s) ({details}). Check the network, or download "
                        f"the file by hand into {folder}.")


# ------------------------------------------------------------------------------- extraction

def _member_problem(member, folder_real):
    """Why a tar member may not be extracted into folder_real (None when it is fine)."""
    name = member.name
    if not name or "\x00" in name:
        return "has an empty name or a NUL byte in its name"
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "has an absolute path"
    parts = name.replace("\\", "/").split("/")
    if ".." in parts:
        return "contains a '..' path component"
    if not (member.isfile() or member.isdir()):
        kind = ("symbolic link" if member.issym() else "hard link" if member.islnk()
                else "device, FIFO or other special file")
        return f"is a {kind}; only regular files and folders are extracted"
    target = os.path.realpath(os.path.join(folder_real, *[p for p in parts if p not in ("", ".")]))
    if target != folder_real and not target.startswith(folder_real + os.sep):
        return f"would be written outside the target folder (to {target})"
    return None


def safe_extract_tar(archive, folder):
    """Extract a (possibly compressed) tar archive into `folder`; return the member names.

    All members are checked before anything is written; a single unsafe member (absolute path,
    '..', a link, a device file, or a path that resolves outside `folder`, e.g. through an
    existing symlink) rejects the whole archive with ``UnsafeArchiveError``. Files are written
    through a temp file and renamed into place, with mode 0o644 whatever the archive says.
    """
    archive, folder = os.fspath(archive), os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    folder_real = os.path.realpath(folder)
    try:
        tar = tarfile.open(archive, "r:*")
    except (tarfile.TarError, OSError, EOFError) as e:
        raise DatasetFormatError(f"safe_extract_tar: {archive} is not a readable tar archive "
                                 f"({type(e).__name__}: {e}); delete it and download again") \
            from None
    with tar:
        try:
            members = tar.getmembers()
        except (tarfile.TarError, OSError, EOFError) as e:
            raise DatasetFormatError(f"safe_extract_tar: {archive} is truncated or corrupted "
                                     f"({type(e).__name__}: {e}); delete it and download "
                                     f"again") from None
        for m in members:
            problem = _member_problem(m, folder_real)
            if problem:
                raise UnsafeArchiveError(f"safe_extract_tar: refusing to extract {archive}: "
                                         f"member {m.name!r} {problem}. Nothing was extracted.")
        for m in members:
            parts = [p for p in m.name.replace("\\", "/").split("/") if p not in ("", ".")]
            target = os.path.join(folder_real, *parts)
            if m.isdir():
                os.makedirs(target, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            src = tar.extractfile(m)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target),
                                       prefix="." + os.path.basename(target) + ".", suffix=".part")
            try:
                with os.fdopen(fd, "wb") as out:
                    for block in iter(lambda: src.read(CHUNK), b""):
                        out.write(block)
                os.chmod(tmp, 0o644)
                os.replace(tmp, target)
                tmp = None
            except (tarfile.TarError, EOFError, OSError) as e:
                raise DatasetFormatError(f"safe_extract_tar: member {m.name!r} of {archive} "
                                         f"could not be read ({type(e).__name__}: {e})") from None
            finally:
                if tmp is not None:
                    _remove_quietly(tmp)
        return [m.name for m in members]


# ------------------------------------------------------------------------- shared by all
def check_index(dataset, index, n):
    """`index` as a non-negative int in range(n), with PyTorch-like errors."""
    try:
        i = int(index.__index__())
    except AttributeError:
        raise TypeError(f"{type(dataset).__name__} indices must be integers, got "
                        f"{type(index).__name__}") from None
    if not -n <= i < n:
        raise IndexError(f"{type(dataset).__name__} index {i} is out of range for {n} samples")
    return i + n if i < 0 else i
