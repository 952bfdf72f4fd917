"""USPS handwritten digits in the layout of Hastie, Tibshirani & Friedman's ESL site.

``zip.train.gz`` (7291 rows) and ``zip.test.gz`` (2007 rows) are gzipped text: each line
holds the digit label followed by 256 grey values in [-1, 1] (a 16x16 image, row-major),
separated by whitespace.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np

from perceptron_lab.errors import DatasetError
from perceptron_lab.datasets.base import Dataset
from perceptron_lab.datasets.images import corrupt_file_error

__all__ = ["load_usps", "USPS_FILES"]

USPS_FILES = {"train": "zip.train.gz", "test": "zip.test.gz"}
_N_ROWS = {"train": 7291, "test": 2007}
_N_PIXELS = 256


def _read_zip_text(path: Path, n_expected: int) -> tuple[np.ndarray, np.ndarray]:
    try:
        with gzip.open(path, "rt", encoding="ascii") as fh:
            lines = [line for line in fh.read().splitlines() if line.strip()]
    except FileNotFoundError:
        raise DatasetError(f"{path} does not exist") from None
    except (EOFError, zlib.error, gzip.BadGzipFile, UnicodeDecodeError) as exc:
        raise corrupt_file_error(path, f"{type(exc).__name__}: {exc}", "usps") from None
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}") from None

    tokens = [line.split() for line in lines]
    for i, row in enumerate(tokens):
        if len(row) != _N_PIXELS + 1:
            raise corrupt_file_error(
                path, f"line {i + 1} has {len(row)} fields, expected {_N_PIXELS + 1}", "usps"
            )
    try:
        data = np.array(tokens, dtype=np.float64)
    except ValueError as exc:
        raise corrupt_file_error(path, f"non-numeric value ({exc})", "usps") from None
    data = data.reshape(len(tokens), _N_PIXELS + 1)

    labels = data[:, 0]
    X = np.ascontiguousarray(data[:, 1:])
    bad = ~((labels == np.round(labels)) & (labels >= 0) & (labels <= 9))
    if bad.any():
        i = int(np.argmax(bad))
        raise corrupt_file_error(
            path, f"line {i + 1} has label {tokens[i][0]!r}; labels must be the integers 0..9", "usps"
        )
    finite = np.isfinite(X)
    if not finite.all():
        i, j = (int(v[0]) for v in np.nonzero(~finite))
        raise corrupt_file_error(
            path, f"line {i + 1}, pixel {j + 1} is {tokens[i][j + 1]!r}, not a finite number", "usps"
        )
    if X.size and (X.min() < -1.0 or X.max() > 1.0):
        i = int(np.argmax(((X < -1.0) | (X > 1.0)).any(axis=1)))
        raise corrupt_file_error(path, f"line {i + 1} has pixel values outside [-1, 1]", "usps")
    if len(lines) != n_expected:
        short = " (the file is cut short)" if len(lines) < n_expected else ""
        raise corrupt_file_error(path, f"{len(lines)} rows, expected {n_expected}{short}", "usps")
    return X, labels.astype(np.int64)


def load_usps(folder: str | Path) -> Dataset:
    """USPS digits: 7291 train / 2007 test rows, 256 features in [-1, 1], classes 0..9.

    Parameters
    ----------
    folder : str or pathlib.Path
        The folder holding the gzipped text files ``zip.train.gz`` and ``zip.test.gz`` ([`load_dataset`][perceptron_lab.datasets.load_dataset] passes
        the dataset's folder of the data root).

    Returns
    -------
    Dataset
        16 x 16 images as 256 features in [-1, 1], classes 0..9.

    Raises
    ------
    DatasetError
        When a file is missing, unreadable, or not what the format declares (wrong magic number,
        sizes, or value counts), naming the file.
    """
    folder = Path(folder)
    X_train, y_train = _read_zip_text(folder / USPS_FILES["train"], _N_ROWS["train"])
    X_test, y_test = _read_zip_text(folder / USPS_FILES["test"], _N_ROWS["test"])
    return Dataset(
        "usps",
        X_train,
        y_train,
        X_test,
        y_test,
        classes=list(range(10)),
        meta={"image_shape": (16, 16), "pixel_range": (-1.0, 1.0)},
    )
