"""The in-memory form every dataset loader returns."""

from __future__ import annotations

from typing import Any

from dataclasses import dataclass, field

import numpy as np

from perceptron_lab.errors import DatasetError
from perceptron_lab.sparse import issparse


@dataclass
class Dataset:
    """A train/test pair of feature matrices and integer labels, as every loader returns it.

    Datasets without a fixed test split (most UCI sets) have ``X_test`` and ``y_test`` set to
    None; their evaluation is by cross-validation.

    Attributes
    ----------
    name : str
        The dataset's name (a registry name, or the user file's).
    X_train : ndarray of shape (n_train, n_features)
        Training features, float64.
    y_train : ndarray of shape (n_train,)
        Training labels as int64 class indices 0..n_classes-1.
    X_test : ndarray of shape (n_test, n_features) or None
        Test features, float64.
    y_test : ndarray of shape (n_test,) or None
        Test labels as class indices.
    classes : list
        The original label of each index (e.g. digits 0..9, or ``["b", "g"]``); for a file of the
        user's own, the label as written (the module ``perceptron_lab.datasets.user`` says what
        makes two labels one class). ``str(classes[k])`` is what ``results.csv`` shows for class k.
    meta : dict
        Where the data came from (``source``, ``files``, ``embedded``) and facts of the dataset
        (e.g. ``image_shape``, ``class_names``, ``feature_names``).
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray | None
    y_test: np.ndarray | None
    classes: list
    meta: dict = field(default_factory=dict)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])


def dataset_fix(ds: Dataset) -> str:
    """How to repair the files of ``ds``: re-verify and re-fetch (generated datasets: check params)."""
    if ds.meta.get("user_file"):
        return "correct the file, or choose another with dataset.path / dataset.test_path"
    if "source" in ds.meta or "source_files" in ds.meta:
        return (f"check the files with `plab data verify {ds.name}` and download them again with "
                f"`plab data fetch {ds.name}`")
    return "check dataset.params"


def _describe(ds: Dataset, where: str) -> str:
    source = ds.meta.get("source") or ", ".join(ds.meta.get("source_files", []))
    return f"{where} ({source})" if source and str(source) not in where else where


def _first_nonfinite(X: np.ndarray) -> str:
    rows, cols = np.nonzero(~np.isfinite(X))
    i, j = int(rows[0]), int(cols[0])
    return f"row {i + 1}, feature {j + 1} is {float(X[i, j])!r} ({rows.size} non-finite value(s) in all)"


def _class_name(ds: Dataset, index) -> str:
    return repr(ds.classes[int(index)]) if 0 <= int(index) < len(ds.classes) else repr(int(index))


def validate_dataset(ds: Dataset, where: str, folds=(), subset: bool = False) -> None:
    """Reject data no experiment can use, with one line naming the data and the fix.

    Checks, in order: matching row counts of features and labels, at least one row and one
    feature, finite features (NaN and infinities are refused), integer labels in
    ``0..n_classes-1``, at least two classes among the training rows, and the same for every
    training part in ``folds`` (an iterable of ``(description, row indices)``, consumed only after
    the other checks passed, so it may be a lazy generator). ``subset`` says the training rows are
    the first ``dataset.train_size`` rows of the file, which changes the advice for a single class.
    Raises :class:`~perceptron_lab.errors.DatasetError`; returns None when everything is usable.
    """
    what = _describe(ds, where)
    fix = dataset_fix(ds)

    def fail(problem: str, how: str = fix):
        raise DatasetError(f"{what}: {problem}. Fix: {how}.")

    splits: list[tuple[str, Any, Any]] = [("training", ds.X_train, ds.y_train)]
    if ds.X_test is not None or ds.y_test is not None:
        splits.append(("test", ds.X_test, ds.y_test))
    for split, X, y in splits:
        if X is None or y is None:
            fail(f"the {split} split has {'no features' if X is None else 'no labels'}")
        # a scipy.sparse matrix is checked through its stored values (the others are zeros)
        X, y = (X if issparse(X) else np.asarray(X)), np.asarray(y)
        if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
            fail(f"the {split} split has features of shape {X.shape} but {y.shape[0] if y.ndim else 0} labels")
        if X.shape[0] == 0:
            how = "use a non-empty file; " + fix if split == "training" else fix
            fail(f"the {split} split holds no rows (the dataset is empty)", how)
        if X.shape[1] == 0:
            fail(f"the {split} split has 0 features")
        if not np.issubdtype(X.dtype, np.number) or np.iscomplexobj(X):
            fail(f"the {split} features are not real numbers (dtype {X.dtype})")
        # A finite sum proves every value finite, without the temporary array of np.isfinite.
        if issparse(X) and not np.isfinite(X.data).all():
            fail(f"the {split} features contain NaN or infinite values")
        if not issparse(X) and not np.isfinite(np.sum(X, dtype=np.float64)) and not np.isfinite(X).all():
            fail(f"the {split} features contain NaN or infinite values: {_first_nonfinite(X)}")
    if ds.n_classes < 2:
        fail(f"{ds.n_classes} class(es) declared ({ds.classes}); at least two are needed")
    for split, _, y in splits:
        y = np.asarray(y)
        if not np.issubdtype(y.dtype, np.integer):
            fail(f"the {split} labels are not integer class indices (dtype {y.dtype})")
        bad = np.flatnonzero((y < 0) | (y >= ds.n_classes))
        if bad.size:
            fail(f"{split} row {int(bad[0]) + 1} has label index {int(y[bad[0]])}, outside the "
                 f"{ds.n_classes} expected classes {ds.classes} ({bad.size} such row(s))")
    present = np.unique(ds.y_train)
    if present.size < 2:
        how = (f"raise dataset.train_size (the first {len(ds.y_train)} training rows all have this class), "
               f"or {fix}" if subset else fix)
        fail(f"all {len(ds.y_train)} training rows have class {_class_name(ds, present[0])}; "
             f"a classifier needs examples of at least two classes", how)
    for label, idx in folds:
        y = ds.y_train[idx]
        present = np.unique(y)
        if present.size < 2:
            counts = np.bincount(ds.y_train, minlength=ds.n_classes)
            rare = ", ".join(f"{_class_name(ds, c)}: {int(counts[c])}" for c in np.flatnonzero(counts)
                             if c != (present[0] if present.size else -1))
            fail(f"the training part of {label} holds only class "
                 f"{_class_name(ds, present[0]) if present.size else '(none)'} ({y.size} rows); the other "
                 f"classes have too few examples ({rare})",
                 "use fewer folds (evaluation.folds / evaluation.inner_folds) or more data")
