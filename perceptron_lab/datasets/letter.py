"""UCI Letter Recognition (Slate 1991): 20000 rows of ``letter,16 integer features``.

The split follows Gentile (2001): the first 16000 rows train, the last 4000 test.
Classes A..Z map to indices 0..25.
"""

from __future__ import annotations

import string
from pathlib import Path

import numpy as np

from perceptron_lab.errors import DatasetError
from perceptron_lab.datasets.base import Dataset
from perceptron_lab.datasets.images import corrupt_file_error

__all__ = ["load_letter", "LETTER_FILE", "N_TRAIN", "N_TEST"]

LETTER_FILE = "letter-recognition.data"
N_TRAIN, N_TEST = 16000, 4000
_N_FEATURES = 16
_CLASSES = list(string.ascii_uppercase)


def load_letter(folder: str | Path) -> Dataset:
    """Letter recognition with Gentile's 16000/4000 train/test split, 16 integer features (0..15).

    Parameters
    ----------
    folder : str or pathlib.Path
        The folder holding the UCI ``letter-recognition.data`` file ([`load_dataset`][perceptron_lab.datasets.load_dataset] passes
        the dataset's folder of the data root).

    Returns
    -------
    Dataset
        The first 16000 rows for training and the last 4000 for testing, classes A..Z.

    Raises
    ------
    DatasetError
        When a file is missing, unreadable, or not what the format declares (wrong magic number,
        sizes, or value counts), naming the file.
    """
    path = Path(folder) / LETTER_FILE
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        raise DatasetError(f"{path} does not exist") from None
    except UnicodeDecodeError as exc:
        raise corrupt_file_error(path, f"not ASCII text ({exc})", "letter") from None
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}") from None

    lines = [line for line in text.splitlines() if line.strip()]
    y = np.empty(len(lines), dtype=np.int64)
    X = np.empty((len(lines), _N_FEATURES), dtype=np.float64)
    for i, line in enumerate(lines):
        fields = line.strip().split(",")
        if len(fields) != _N_FEATURES + 1 or fields[0] not in _CLASSES:
            raise corrupt_file_error(
                path, f"line {i + 1} is not 'LETTER,{_N_FEATURES} integers': {line[:60]!r}", "letter"
            )
        try:
            X[i] = [int(v) for v in fields[1:]]
        except ValueError:
            raise corrupt_file_error(
                path, f"line {i + 1} has a non-integer feature: {line[:60]!r}", "letter"
            ) from None
        y[i] = ord(fields[0]) - ord("A")
    if len(lines) != N_TRAIN + N_TEST:
        short = " (the file is cut short)" if len(lines) < N_TRAIN + N_TEST else ""
        raise corrupt_file_error(path, f"{len(lines)} rows, expected {N_TRAIN + N_TEST}{short}", "letter")

    return Dataset(
        "letter",
        X[:N_TRAIN],
        y[:N_TRAIN],
        X[N_TRAIN:],
        y[N_TRAIN:],
        classes=list(_CLASSES),
        meta={"split": "Gentile (2001): first 16000 rows train, last 4000 test"},
    )
