"""A run's inputs: its dataset, read (and checked against the registry's sha256) afresh for every
run, kept in a small per-process cache for the units that read it again, and preprocessed per unit.

A worker that outlives a run (a Dask worker, a process of the pool ``make reproduce`` keeps) reads
its data inside :func:`expecting_data`, with the fingerprint the part's key carries: its cache then
answers by content, not by path, so a file edited since is read again, and data that differs from
the plan's stops the part (:class:`DataChangedError`) before anything is computed on it."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import weakref
from pathlib import Path

import numpy as np

from perceptron_lab.config.load import ExperimentConfig
from perceptron_lab.datasets.base import Dataset, validate_dataset
from perceptron_lab.errors import ConfigError, DatasetError, NumericError, PlabError
from perceptron_lab.run.evaluation import training_folds
from perceptron_lab.sparse import issparse

#: Datasets kept in memory per process (a grid over dataset parameters loads one per point).
DATA_CACHE_SIZE = 8


_DATA_CACHE: dict = {}
#: Held while the cache is read or filled: runs in several threads (``make reproduce``) share it.
DATA_LOCK = threading.RLock()


def _load_source(cfg: ExperimentConfig, data_dir):
    """The dataset as its loader or generator returns it, cached per process (a few entries)."""
    with DATA_LOCK:
        return _load_source_locked(cfg, data_dir)


def _source_key(cfg: ExperimentConfig, data_dir) -> tuple:
    """Where a config's data is read from, and how: the cache's key (its first item the dataset's name)."""
    params = dict(cfg.dataset.params or {})
    return (cfg.dataset.name, json.dumps(params, sort_keys=True, default=str), str(data_dir), cfg.dataset.path,
            cfg.dataset.test_path, cfg.dataset.format, cfg.dataset.label, cfg.dataset.categorical, cfg.source,
            keeps_sparse(cfg), cfg.dataset.instance_name)


def _load_source_locked(cfg: ExperimentConfig, data_dir):
    name = cfg.dataset.name
    params = dict(cfg.dataset.params or {})
    key = _source_key(cfg, data_dir)
    if key in _DATA_CACHE:
        return _DATA_CACHE[key]
    if cfg.dataset.path is not None:
        ds = _load_user_file(cfg)
    elif name in ("kw_artificial", "gentile_sparse"):
        from perceptron_lab.datasets import synthetic

        try:
            ds = getattr(synthetic, name)(**params)
        except TypeError as exc:
            raise ConfigError(f"{cfg.source}: dataset.params for {name}: {exc}") from None
    else:
        from perceptron_lab.datasets.registry import load_dataset

        ds = load_dataset(name, data_dir, instance_name=cfg.dataset.instance_name)
    while len(_DATA_CACHE) >= DATA_CACHE_SIZE:
        oldest = next(iter(_DATA_CACHE))
        del _DATA_CACHE[oldest]
        _PROVED.pop(oldest, None)
    _DATA_CACHE[key] = ds
    return ds


def _load_user_file(cfg: ExperimentConfig) -> Dataset:
    """A data file of the user's own (``dataset.path``), relative paths read from the config's folder."""
    import os

    from perceptron_lab.config.checks import config_dir
    from perceptron_lab.constants import USER_EXTENSIONS
    from perceptron_lab.datasets.user import load_user_data

    d = cfg.dataset
    folder = config_dir(cfg.source or "<dict>")
    path = Path(d.path) if os.path.isabs(d.path) else folder / d.path
    test = None if d.test_path is None else (Path(d.test_path) if os.path.isabs(d.test_path)
                                             else folder / d.test_path)
    fmt = d.format if d.format != "auto" else USER_EXTENSIONS.get(path.suffix.lower(), "auto")
    return load_user_data(path, fmt, label=d.label, categorical=d.categorical, test_path=test,
                          config=cfg.source or "the config", sparse=fmt == "libsvm" and keeps_sparse(cfg))


def _sparse_vstack(A, B):
    """The rows of the CSR matrices A then B, as one CSR matrix (B with fewer columns is widened)."""
    import scipy.sparse as sp

    f = max(A.shape[1], B.shape[1])
    A, B = (M if M.shape[1] == f else sp.csr_matrix((M.data, M.indices, M.indptr), shape=(M.shape[0], f))
            for M in (A, B))
    return sp.vstack([A, B], format="csr")


def keeps_sparse(cfg: ExperimentConfig) -> bool:
    """Whether a LIBSVM file of ``cfg`` is kept as CSR up to the engine: its algorithm and kernel
    read CSR rows (:func:`~perceptron_lab.engine.linear.sparse_refusal`) and it has no
    preprocessing (``dataset.preprocess: none``; the others are computed on dense arrays).
    Otherwise it is made dense when read, as every other format is."""
    from perceptron_lab.engine.linear import sparse_refusal
    from perceptron_lab.run.spec import kernel_of

    a = cfg.algorithm
    if cfg.dataset.path is None or cfg.dataset.preprocess != "none":
        return False
    try:
        kernel = kernel_of(cfg.kernel)
    except ValueError:
        return False
    return sparse_refusal(a.name, kernel, getattr(a, "p", None) or 2.0, getattr(a, "form", None) or "auto") is None


def keep_only_dataset(name: str) -> None:
    """Drop the cached datasets other than ``name``'s: a worker that starts a part of another
    config keeps the data that config reads too (the Freund-Schapire, Gentile and Khardon-Wachman
    MNIST configs all read MNIST) and frees the rest, so that its peak memory is that config's."""
    with DATA_LOCK:
        for key in [k for k in _DATA_CACHE if k[0] != name]:
            del _DATA_CACHE[key]
            _PROVED.pop(key, None)


# ----------------------------------------------------------------------------- data proved by content

#: Per cache key: (a weak reference to the cached source it describes, that source's fingerprint or
#: None until one is needed, the fingerprints of the data :func:`load_data` derived from it and
#: checked). What :func:`expecting_data` may answer from the cache without reading the files.
_PROVED: dict = {}
_EXPECTED = threading.local()


class DataChangedError(DatasetError):
    """The data a process read is not the data the run was planned on (exit status 3): its
    fingerprint is not the one the part's key carries. The message says what to do."""


@contextlib.contextmanager
def expecting_data(fingerprint: str | None):
    """Within the block, in this thread, :func:`load_data` returns only data whose fingerprint
    (:func:`perceptron_lab.run.store.data_fingerprint`) is ``fingerprint``, by content: the cache
    answers only when its entry was proved to give that data; otherwise the files are read again
    and the data they give is checked, :class:`DataChangedError` when it differs. ``None``: no
    check. A worker computes a part inside it, with the fingerprint its part's key carries
    (:func:`perceptron_lab.run.executors.part_expectations`)."""
    before = getattr(_EXPECTED, "fingerprint", None)
    _EXPECTED.fingerprint = fingerprint
    try:
        yield
    finally:
        _EXPECTED.fingerprint = before


def _load_proved(cfg: ExperimentConfig, data_dir, expected: str) -> Dataset:
    """:func:`load_data` inside :func:`expecting_data`: the cached source when it was proved to give
    data with fingerprint ``expected``, else the files read again and their data checked. A source
    read again whose contents are those of the cached one keeps the cached copy (and what was
    proved of it): a grid over ``dataset.train_size`` shares one copy of the file in memory."""
    from perceptron_lab.run.store import data_fingerprint

    key = _source_key(cfg, data_dir)
    with DATA_LOCK:
        src, proof = _DATA_CACHE.get(key), _PROVED.get(key)
        proved = src is not None and proof is not None and proof[0]() is src and expected in proof[2]
    if proved:
        return _derived(cfg, src)
    with DATA_LOCK:   # not proved to hold the plan's data: read the files again
        old = _DATA_CACHE.pop(key, None)
        proof = _PROVED.pop(key, None)
        fresh = _load_source_locked(cfg, data_dir)
        source_print, prints = None, set()
        if old is not None and proof is not None and proof[0]() is old:
            source_print = data_fingerprint(fresh)
            if (proof[1] or data_fingerprint(old)) == source_print:   # unchanged: keep the copy in memory
                fresh, prints = old, set(proof[2])
                _DATA_CACHE[key] = old
        out = _derived(cfg, fresh)
        got = data_fingerprint(out)
        if got != expected:
            raise DataChangedError(
                f"{_data_origin(cfg, data_dir)} holds other data than plab run read to plan this run (data "
                f"fingerprint {got}, the plan's {expected}): the data changed after the run started, or this "
                "machine sees other files at that path; keep the data unchanged until the run ends, with the "
                "same contents at the same path on every worker, and run the same command again (finished "
                "parts are kept)")
        _PROVED[key] = (weakref.ref(fresh), source_print, prints | {expected})
        return out


def _data_origin(cfg: ExperimentConfig, data_dir) -> str:
    """The files a config's data is read from, as a message names them."""
    import os

    from perceptron_lab.config.checks import config_dir

    d = cfg.dataset
    if d.path is not None:
        folder = config_dir(cfg.source or "<dict>")
        files = [p if os.path.isabs(p) else str(folder / p) for p in (d.path, d.test_path) if p is not None]
        return " and ".join(files)
    where = f" in {data_dir}" if data_dir is not None else ""
    return f"dataset {d.title}{where}"


def load_data(cfg: ExperimentConfig, data_dir=None) -> Dataset:
    """The dataset of a config, with train/test subsets and preprocessing applied (inside
    :func:`expecting_data`: only data with the expected fingerprint)."""
    expected = getattr(_EXPECTED, "fingerprint", None)
    if expected is not None:
        return _load_proved(cfg, data_dir, expected)
    return _derived(cfg, _load_source(cfg, data_dir))


def _derived(cfg: ExperimentConfig, ds: Dataset) -> Dataset:
    """The dataset ``ds`` as read, with ``cfg``'s train/test subsets (and split merge) applied."""
    name = cfg.dataset.title
    Xtr, ytr, Xte, yte = ds.X_train, ds.y_train, ds.X_test, ds.y_test
    if cfg.dataset.merge_splits:
        if Xte is None:
            raise ConfigError(f"{cfg.source}: dataset.merge_splits: dataset {name} has no test split to merge; "
                              "remove the key")
        Xtr = _sparse_vstack(Xtr, Xte) if issparse(Xtr) else np.concatenate([Xtr, Xte])
        ytr = np.concatenate([ytr, yte])
        Xte = yte = None
    if cfg.dataset.train_size is not None:
        if cfg.dataset.train_size > len(ytr):
            raise ConfigError(f"{cfg.source}: dataset.train_size = {cfg.dataset.train_size} exceeds the "
                              f"{len(ytr)} training examples of {name}")
        Xtr, ytr = Xtr[:cfg.dataset.train_size], ytr[:cfg.dataset.train_size]
    if cfg.dataset.test_size is not None and Xte is not None:
        Xte, yte = Xte[:cfg.dataset.test_size], yte[:cfg.dataset.test_size]
    out = Dataset(ds.name, Xtr, ytr, Xte, yte, ds.classes, dict(ds.meta))
    validate_dataset(out, f"{cfg.source}: dataset {name!r}", folds=training_folds(cfg, ytr),
                     subset=cfg.dataset.train_size is not None)
    return out


def preprocess(kind: str, Xtr, Xte):
    """Fit a preprocessing on the training rows and apply it to both sets.

    Columns (rows, for ``unit_norm``) whose largest value is far from 1 (beyond 2^+-400) are first
    multiplied by a power of two that brings it near 1: exact, and no preprocessing depends on it,
    but means, variances, spans and norms of values near 1e+-200 would overflow or underflow.
    ``standardize`` treats a column whose spread is below the rounding of its values (2^-40 of its
    largest value) as constant, like a column of one value: it is centred, not divided. Values
    that still come out not finite (test values far beyond the training values' range) stop with
    a :class:`~perceptron_lab.errors.NumericError`.
    """
    if kind == "none":
        return Xtr, Xte
    if kind == "unit_norm":
        def f(X):
            X = _near_one(X, axis=1)
            n = np.linalg.norm(X, axis=1, keepdims=True)
            return X / np.where(n > 0, n, 1.0)
    elif kind in ("minmax", "standardize"):
        e = _near_one_exp(Xtr, axis=0)

        def near(X):
            return X if e is None else np.ldexp(X, e)
        Xs = near(Xtr)
        if kind == "minmax":
            lo, hi = Xs.min(axis=0), Xs.max(axis=0)
            span = np.where(hi > lo, hi - lo, 1.0)

            def f(X):
                return (near(X) - lo) / span
        else:
            mu, sd = Xs.mean(axis=0), Xs.std(axis=0)
            top = np.max(np.abs(Xs), axis=0) if len(Xs) else np.zeros(Xs.shape[1:])
            sd = np.where(sd > top * 2.0**-40, sd, 1.0)

            def f(X):
                return (near(X) - mu) / sd
    else:
        raise PlabError(f"unknown preprocessing {kind!r}")
    with np.errstate(over="ignore", invalid="ignore"):
        out = f(Xtr), (None if Xte is None else f(Xte))
    for X, which in zip(out, ("training", "test")):
        if X is not None and not np.isfinite(X).all():
            raise NumericError(
                f"dataset.preprocess: {kind} gives values beyond float64 on the {which} set (its values lie far "
                "outside the training values' range). Fix: check the data, or set dataset.preprocess: unit_norm")
    return out


#: Columns (rows) whose largest |value| is beyond 2^+-this are brought near 1 before preprocessing.
_NEAR_ONE_LOG2 = 400.0


def _near_one_exp(X, axis: int):
    """Per column (``axis=0``) or row (``axis=1``) of ``X``: the power of two that brings its largest
    |value| near 1 where that is beyond 2^+-400, else 0 (shaped to broadcast); None when all are 0."""
    X = np.asarray(X)
    if not X.size:
        return None
    with np.errstate(divide="ignore"):
        top = np.log2(np.max(np.abs(X), axis=axis, keepdims=True))
    e = np.where(np.isfinite(top) & (np.abs(top) > _NEAR_ONE_LOG2), -np.round(np.where(np.isfinite(top), top, 0)), 0)
    return e.astype(np.int64) if e.any() else None


def _near_one(X, axis: int):
    """``X`` with its rows (``axis=1``) or columns brought near 1 by :func:`_near_one_exp`."""
    e = _near_one_exp(X, axis)
    return X if e is None else np.ldexp(X, e)


def read_inputs(cfg: ExperimentConfig, data_dir, verify: bool):
    """(the dataset, whether its files were checked against the registry's sha256). Every run reads
    its data afresh: the files may have changed since the last."""
    with DATA_LOCK:
        _DATA_CACHE.clear()
        _PROVED.clear()
    verified = verify_inputs(cfg, data_dir) if verify else False
    return load_data(cfg, data_dir), verified


def verify_inputs(cfg: ExperimentConfig, data_dir=None, note=None) -> bool:
    """Check the sha256 of every registry dataset a config reads (its grid's ``dataset.name``
    values included; :func:`perceptron_lab.datasets.registry.check_dataset_files`): a mismatch is a
    one-line DatasetError (exit status 3). A packaged copy read instead of the data root's is said
    on the terminal. Returns True."""
    from perceptron_lab.constants import DATASET_SYNTHETIC
    from perceptron_lab.datasets.registry import check_dataset_files

    say = note or (lambda msg: print(f"plab: note: {msg}", file=sys.stderr, flush=True))
    names = dict.fromkeys([cfg.dataset.name, *cfg.evaluation.grid.get("dataset.name", [])])
    for name in names:
        if name is None or name in DATASET_SYNTHETIC:  # None: a file of the user's own (dataset.path)
            continue
        msg = check_dataset_files(name, data_dir)
        if msg:
            say(msg)
    return True
