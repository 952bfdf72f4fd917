"""MNIST and Fashion-MNIST loaders for the gzipped IDX files.

IDX layout (LeCun): a 4-byte magic number ``00 00 <type> <ndim>`` (type 0x08 = unsigned
byte), then ``ndim`` big-endian uint32 dimensions, then the values in C order. Images are
``idx3`` (n, 28, 28); labels are ``idx1`` (n,). Pixels are returned as float64 in their raw
0..255 units: any scaling is the experiment's business, not the loader's.
"""

from __future__ import annotations

import gzip
import math
import struct
import zlib
from pathlib import Path

import numpy as np

from perceptron_lab.errors import DatasetError
from perceptron_lab.engine.memory import cold_copy
from perceptron_lab.datasets.base import Dataset

__all__ = ["read_idx", "load_mnist", "load_fashion_mnist", "IDX_FILES", "FASHION_CLASS_NAMES"]

IDX_FILES = {
    "train_images": "train-images-idx3-ubyte.gz",
    "train_labels": "train-labels-idx1-ubyte.gz",
    "test_images": "t10k-images-idx3-ubyte.gz",
    "test_labels": "t10k-labels-idx1-ubyte.gz",
}

FASHION_CLASS_NAMES = [
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
]

_UBYTE = 0x08
_N_TRAIN, _N_TEST, _SIDE = 60000, 10000, 28


def corrupt_file_error(path: Path, what: str, dataset: str | None) -> DatasetError:
    """The error for a data file that exists but cannot be parsed; says how to check and repair it."""
    name = dataset or "NAME"
    return DatasetError(
        f"{path} is unreadable: {what}. The copy is probably truncated or corrupt; "
        f"check it with `plab data verify {name}` and download it again with "
        f"`plab data fetch {name}` (files that fail the checksum are replaced)."
    )


#: Largest IDX payload read (values = bytes): well above MNIST's 47 million, far below memory.
MAX_IDX_VALUES = 1 << 30


class _Gunzip:
    """A gzip file read as :func:`gzip.open` reads it -- the members one after another, each
    checked against its CRC and length, zero padding after the last ignored -- but with each
    ``read`` decompressed by one call of zlib, which releases the interpreter for all of it
    (``gzip.open`` decompresses a few kilobytes per call, in a loop of the interpreter's). The
    compressed file is read whole; only the bytes asked for are decompressed."""

    def __init__(self, path, mode: str = "rb"):
        with open(path, "rb") as fh:
            self._pending = fh.read()      # compressed bytes not given to the decompressor yet
        self._empty = not self._pending
        self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def read(self, size: int) -> bytes:
        out, want = [], int(size)
        while want > 0 and not self._empty:
            if self._d.eof:                        # a member ended: another may follow
                rest = self._d.unused_data + self._pending
                if not rest.strip(b"\0"):
                    break
                self._d, self._pending = zlib.decompressobj(16 + zlib.MAX_WBITS), rest
            src = self._d.unconsumed_tail or self._pending
            self._pending = b""
            if not src:
                raise EOFError("Compressed file ended before the end-of-stream marker was reached")
            chunk = self._d.decompress(src, want)
            out.append(chunk)
            want -= len(chunk)
        return b"".join(out)


def read_idx(path: str | Path, ndim: int, dataset: str | None = None) -> np.ndarray:
    """Read a gzipped (``.gz``) or plain IDX file of unsigned bytes with ``ndim`` dimensions.

    Checks the magic number, the declared dimensions and that the payload has exactly
    the declared number of values. The header is read first and its dimensions multiplied in
    Python integers (no overflow); a declared size above :data:`MAX_IDX_VALUES` is refused, and
    no more than the declared size (plus one byte, to detect extra data) is ever decompressed, so
    a gzip bomb in place of a data file cannot exhaust memory. Any problem raises
    :class:`DatasetError` naming the file.
    """
    path = Path(path)
    header = 4 + 4 * ndim
    try:
        opener = _Gunzip if path.suffix == ".gz" else open
        with opener(path, "rb") as fh:
            head = fh.read(header)
            if len(head) < 4:
                raise corrupt_file_error(path, f"only {len(head)} bytes, no IDX header", dataset)
            zero, dtype_code, got_ndim = struct.unpack(">HBB", head[:4])
            if zero != 0 or dtype_code != _UBYTE or got_ndim != ndim:
                raise corrupt_file_error(
                    path,
                    f"bad IDX magic number 0x{head[:4].hex()} "
                    f"(expected 0x0000{_UBYTE:02x}{ndim:02x}: unsigned bytes, {ndim} dimensions)",
                    dataset,
                )
            if len(head) < header:
                raise corrupt_file_error(path, "IDX header is cut short", dataset)
            dims = struct.unpack(f">{ndim}I", head[4:header])
            count = math.prod(int(d) for d in dims)
            if count > MAX_IDX_VALUES:
                raise corrupt_file_error(
                    path, f"IDX header declares dimensions {dims} ({count} values), more than the "
                          f"{MAX_IDX_VALUES} plab reads", dataset)
            raw = fh.read(count + 1)
    except FileNotFoundError:
        raise DatasetError(f"{path} does not exist. Fix: download it with `plab data fetch {dataset or 'NAME'}`, "
                           "or point --data-dir / PLAB_DATA at the folder that holds it.") from None
    except NotADirectoryError:
        raise DatasetError(f"{path}: a folder above it is a file. Fix: point --data-dir / PLAB_DATA at the data "
                           "folder.") from None
    except IsADirectoryError:
        raise DatasetError(f"{path} is a folder, not an IDX file. Fix: move the folder away and download the "
                           f"file with `plab data fetch {dataset or 'NAME'}`.") from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise corrupt_file_error(path, f"gzip error ({exc})", dataset) from None
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}. Fix: check its permissions (e.g. "
                           f"chmod u+r {path.name}), or download it again with "
                           f"`plab data fetch {dataset or 'NAME'}`.") from None
    if len(raw) != count:
        held = f"{len(raw)}" if len(raw) <= count else "more"
        raise corrupt_file_error(
            path,
            f"IDX header declares dimensions {dims} ({count} values) but the file holds {held}",
            dataset,
        )
    return np.frombuffer(raw, dtype=np.uint8).reshape(dims)


def _load_idx_set(folder: Path, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    folder = Path(folder)
    arrays = {}
    for key, filename in IDX_FILES.items():
        arrays[key] = read_idx(folder / filename, 3 if key.endswith("images") else 1, name)

    # Consistency first (it names the precise fault), then the expected sizes of the real files.
    splits = (("train", _N_TRAIN), ("test", _N_TEST))
    for split, _ in splits:
        images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
        img_file = folder / IDX_FILES[f"{split}_images"]
        lbl_file = folder / IDX_FILES[f"{split}_labels"]
        if images.shape[1:] != (_SIDE, _SIDE):
            raise corrupt_file_error(img_file, f"images are {images.shape[1:]}, expected 28x28", name)
        if images.shape[0] != labels.shape[0]:
            raise corrupt_file_error(
                img_file,
                f"{images.shape[0]} images but {labels.shape[0]} labels in {lbl_file.name}",
                name,
            )
        if labels.size and labels.max() > 9:
            bad = int(np.argmax(labels > 9))
            raise corrupt_file_error(
                lbl_file, f"label {int(labels[bad])} (item {bad + 1}) outside the classes 0..9", name
            )
    for split, n_expected in splits:
        images = arrays[f"{split}_images"]
        img_file = folder / IDX_FILES[f"{split}_images"]
        if images.shape[0] != n_expected:
            raise corrupt_file_error(img_file, f"{images.shape[0]} images, expected {n_expected}", name)

    def x(a: np.ndarray) -> np.ndarray:
        return cold_copy(a.reshape(a.shape[0], -1), np.float64)

    def y(a: np.ndarray) -> np.ndarray:
        return a.astype(np.int64)

    return (
        x(arrays["train_images"]),
        y(arrays["train_labels"]),
        x(arrays["test_images"]),
        y(arrays["test_labels"]),
    )


def _load(folder: Path, name: str, meta: dict) -> Dataset:
    X_train, y_train, X_test, y_test = _load_idx_set(folder, name)
    meta = {"image_shape": (_SIDE, _SIDE), "pixel_range": (0, 255), **meta}
    return Dataset(name, X_train, y_train, X_test, y_test, classes=list(range(10)), meta=meta)


def load_mnist(folder: str | Path) -> Dataset:
    """MNIST from the four LeCun ``*.gz`` files in ``folder``: 60000 train, 10000 test, 784 features.

    Parameters
    ----------
    folder : str or pathlib.Path
        The folder holding the four IDX files (``train-images-idx3-ubyte.gz`` and the others) ([`load_dataset`][perceptron_lab.datasets.load_dataset] passes
        the dataset's folder of the data root).

    Returns
    -------
    Dataset
        Raw pixels 0..255 as float64, classes 0..9, LeCun's fixed train/test split.

    Raises
    ------
    DatasetError
        When a file is missing, unreadable, or not what the format declares (wrong magic number,
        sizes, or value counts), naming the file.
    """
    return _load(Path(folder), "mnist", {})


def load_fashion_mnist(folder: str | Path) -> Dataset:
    """Fashion-MNIST (same file names and format as MNIST); class names are in ``meta``.

    Parameters
    ----------
    folder : str or pathlib.Path
        The folder holding the four IDX files, named as MNIST's ([`load_dataset`][perceptron_lab.datasets.load_dataset] passes
        the dataset's folder of the data root).

    Returns
    -------
    Dataset
        As for MNIST; ``meta["class_names"]`` names classes 0..9.

    Raises
    ------
    DatasetError
        When a file is missing, unreadable, or not what the format declares (wrong magic number,
        sizes, or value counts), naming the file.
    """
    return _load(Path(folder), "fashion-mnist", {"class_names": list(FASHION_CLASS_NAMES)})
