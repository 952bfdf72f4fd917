"""Datasets: registry, loaders, checksums and downloads.

Typical use::

    from perceptron_lab.datasets import load_dataset
    ds = load_dataset("mnist")            # reads <data root>/mnist/*.gz
    ds = load_dataset("sonar")            # falls back to the packaged copy

The data root is ``--data-dir``, else ``$PLAB_DATA``, else ``~/.cache/perceptron_lab``
(see :func:`resolve_data_dir`). Missing data is reported with the command that fixes it
(``plab data fetch NAME``); nothing is generated in its place.
"""

from perceptron_lab.datasets.base import Dataset
from perceptron_lab.datasets.download import download_file, sha256_file
from perceptron_lab.datasets.images import load_fashion_mnist, load_mnist, read_idx
from perceptron_lab.datasets.letter import load_letter
from perceptron_lab.datasets.registry import (
    DATA_ENV_VAR,
    DATASET_NAMES,
    EMBEDDED_DIR,
    DatasetEntry,
    FetchResult,
    FileCheck,
    FileSpec,
    data_dir_source,
    dataset_path,
    default_data_dir,
    fetch_dataset,
    get_entry,
    list_datasets,
    load_dataset,
    resolve_data_dir,
    verify_dataset,
)
from perceptron_lab.datasets.usps import load_usps

__all__ = [
    "Dataset",
    "DatasetEntry",
    "FileSpec",
    "FileCheck",
    "FetchResult",
    "DATA_ENV_VAR",
    "DATASET_NAMES",
    "EMBEDDED_DIR",
    "default_data_dir",
    "resolve_data_dir",
    "data_dir_source",
    "list_datasets",
    "get_entry",
    "dataset_path",
    "load_dataset",
    "verify_dataset",
    "fetch_dataset",
    "download_file",
    "sha256_file",
    "read_idx",
    "load_mnist",
    "load_fashion_mnist",
    "load_usps",
    "load_letter",
]
