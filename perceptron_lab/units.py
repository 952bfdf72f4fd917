"""Units of work: a config becomes units (grid point x fold x permutation), each trained once and
evaluated at every checkpoint into rows of the long results format; units are persisted in parts.

Work is persisted in *parts*: without a grid, one part per unit (such runs are few and long, e.g. a
full MNIST permutation); with a grid, one part per grid point holding all its folds, inner folds
and permutations (such runs are many and small); with a grid over the algorithm's settings alone,
the linear kernel and integer features (:func:`fold_shared`), one part per fold holding all its
grid points, whose evaluation shares one kernel block
(:func:`~perceptron_lab.predict.evaluate_shared`); the same for single passes of the dual
perceptron with a polynomial kernel (:func:`fold_lockstep`), whose grid points also train in
lockstep. Every part's rows depend only on the config and the part, so results are byte-identical
for any number of jobs and after any interruption.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.sparse import issparse
import pandas as pd

from .config import ExperimentConfig, with_overrides
from .constants import BUDGET_ALGORITHMS, EPOCH_TOL, SINGLE_THREAD_MAX_ENTRIES
from .datasets.base import Dataset, validate_dataset
from .engine import label_matrix, train_from_config
from .engine.budget import budget_counts, budget_errors, unit_diag_kernel
from .errors import ConfigError, NumericError, PlabError
from .evaluation import Grid, inner_kfold_indices, kfold_indices, training_folds
from .kernels import Kernel, exact32_ok, kernel_diag
from .predict import RULES, counts_at_checkpoints, evaluate, evaluate_shared

RESULT_COLUMNS = ["dataset", "kernel", "degree", "algorithm", "params", "grid_point", "fold",
                  "permutation", "epoch", "rule", "normalized", "class", "metric", "value"]
#: Nested cross-validation adds the inner fold of a unit and the plan of a selection row.
NESTED_COLUMNS = RESULT_COLUMNS + ["inner_fold", "search"]

#: Datasets kept in memory per process (a grid over dataset parameters loads one per point).
DATA_CACHE_SIZE = 8


def result_columns(cfg: ExperimentConfig) -> list[str]:
    return NESTED_COLUMNS if cfg.evaluation.mode == "nested" else RESULT_COLUMNS


# ----------------------------------------------------------------------------- data


_DATA_CACHE: dict = {}
#: Held while the cache is read or filled: runs in several threads (``make reproduce``) share it.
DATA_LOCK = threading.RLock()


def _load_source(cfg: ExperimentConfig, data_dir):
    """The dataset as its loader or generator returns it, cached per process (a few entries)."""
    with DATA_LOCK:
        return _load_source_locked(cfg, data_dir)


def _load_source_locked(cfg: ExperimentConfig, data_dir):
    name = cfg.dataset.name
    params = dict(cfg.dataset.params or {})
    key = (name, json.dumps(params, sort_keys=True, default=str), str(data_dir), cfg.dataset.path,
           cfg.dataset.test_path, cfg.dataset.format, cfg.dataset.label, cfg.dataset.categorical, cfg.source,
           keeps_sparse(cfg))
    if key in _DATA_CACHE:
        return _DATA_CACHE[key]
    if cfg.dataset.path is not None:
        ds = _load_user_file(cfg)
    elif name in ("kw_artificial", "gentile_sparse"):
        from .datasets import synthetic

        try:
            ds = getattr(synthetic, name)(**params)
        except TypeError as exc:
            raise ConfigError(f"{cfg.source}: dataset.params for {name}: {exc}") from None
    else:
        from .datasets.registry import load_dataset

        ds = load_dataset(name, data_dir)
    while len(_DATA_CACHE) >= DATA_CACHE_SIZE:
        _DATA_CACHE.pop(next(iter(_DATA_CACHE)))
    _DATA_CACHE[key] = ds
    return ds


def _load_user_file(cfg: ExperimentConfig) -> Dataset:
    """A data file of the user's own (``dataset.path``), relative paths read from the config's folder."""
    import os

    from .config_checks import config_dir
    from .constants import USER_EXTENSIONS
    from .datasets.user import load_user_data

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
    from .engine.linear import sparse_refusal
    from .kernels import Kernel

    a = cfg.algorithm
    if cfg.dataset.path is None or cfg.dataset.preprocess != "none":
        return False
    try:
        kernel = Kernel.from_config(cfg.kernel)
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


def load_data(cfg: ExperimentConfig, data_dir=None) -> Dataset:
    """The dataset of a config, with train/test subsets and preprocessing applied."""
    name = cfg.dataset.title
    ds = _load_source(cfg, data_dir)
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


# ----------------------------------------------------------------------------- plan


@dataclass
class Unit:
    """One training run: a grid point, a fold (-1 for a held-out test set), an inner fold (nested
    cross-validation; -1 for an outer unit) and a permutation."""

    grid_point: int
    grid_values: dict
    fold: int
    permutation: int
    inner_fold: int = -1

    @property
    def key(self) -> str:
        if self.inner_fold < 0:
            return f"g{self.grid_point:03d}_f{self.fold:+03d}_p{self.permutation:03d}"
        return f"g{self.grid_point:03d}_f{self.fold:+03d}_i{self.inner_fold:02d}_p{self.permutation:03d}"


@dataclass
class Part:
    """Units persisted together in ``parts/<key>.csv``: all units of one grid point, or one unit,
    or (``shared``) the units of every grid point on one fold (``grid_point`` -1, no values)."""

    key: str
    grid_point: int
    grid_values: dict
    units: list
    shared: bool = False


def grid_points(cfg: ExperimentConfig):
    """The grid points of a config as {dotted path: value} dicts (one empty point without a grid):
    the cartesian product of evaluation.grid, or with evaluation.search the union of the plans'
    value products per setting (see :class:`perceptron_lab.evaluation.Grid`)."""
    return Grid.from_config(cfg).points


def _fold_pairs(cfg: ExperimentConfig):
    """(fold, inner_fold) of the units of one grid point and permutation, in run order."""
    ev = cfg.evaluation
    if ev.mode == "holdout":
        return [(-1, -1)]
    if ev.mode == "kfold":
        return [(k, -1) for k in range(ev.folds)]
    outer = [-1] if ev.outer == "holdout" else list(range(ev.folds))
    return [(k, j) for k in outer for j in [-1] + list(range(ev.inner_folds))]


def plan(cfg: ExperimentConfig, has_test_split: bool):
    """Every unit of a config, grid point by grid point."""
    ev = cfg.evaluation
    needs_test = ev.mode == "holdout" or (ev.mode == "nested" and ev.outer == "holdout")
    if (ev.fold_train_size is not None or "evaluation.fold_train_size" in ev.grid) and ev.mode != "kfold":
        raise ConfigError(f"{cfg.source}: evaluation.fold_train_size needs evaluation.mode: kfold, got {ev.mode}")
    if needs_test and not has_test_split:
        what = "evaluation.mode: kfold" if ev.mode == "holdout" else "evaluation.outer: kfold"
        raise ConfigError(f"{cfg.source}: dataset {cfg.dataset.title} has no fixed test split; set {what}")
    pairs = _fold_pairs(cfg)
    units = []
    for g, values in enumerate(grid_points(cfg)):
        for f, j in pairs:
            for p in range(cfg.training.permutations):
                units.append(Unit(g, values, f, p, j))
    return units


def fold_shared(cfg: ExperimentConfig, ds: Dataset | None = None) -> bool:
    """Whether a config's units are persisted and run one fold at a time across its grid points:
    cross-validation or a held-out test set, a grid of more than one point over settings of the
    algorithm alone (not its name), and (given the dataset ``ds``) integer features without
    preprocessing; with the linear kernel, or the perceptron in dual form with a polynomial kernel
    of degree 2 or more in at most one pass (:func:`fold_lockstep`). Those units of a fold train on
    the same examples and are tested on the same points with the same kernel, so their evaluation
    computes the kernel block once, against the union of their support examples, exactly
    (:func:`~perceptron_lab.predict.evaluate_shared`): on Khardon & Wachman's MNIST rows, 49 grid
    points of a fold have about 1.2 million support examples in all but 38 thousand distinct ones.
    Other features would be evaluated one unit at a time anyway, and keep one part per grid point."""
    ev = cfg.evaluation
    keys = list(ev.grid)
    ok = (bool(keys) and all(k.startswith("algorithm.") for k in keys) and "algorithm.name" not in keys
          and len(grid_points(cfg)) > 1 and ev.fold_train_size is None
          and (cfg.kernel.type == "linear" or fold_lockstep(cfg))
          and cfg.algorithm.name not in BUDGET_ALGORITHMS)
    if not ok or ds is None:
        return ok
    return cfg.dataset.preprocess == "none" and all(
        exact32_ok(np.asarray(X, dtype=np.float64)) for X in (ds.X_train, ds.X_test) if X is not None)


#: Settings of the perceptron that may differ between runs trained in lockstep.
LOCKSTEP_KEYS = ("algorithm.eta", "algorithm.theta_init", "algorithm.C", "algorithm.tau", "algorithm.lambda",
                 "algorithm.alpha_bound")


def fold_lockstep(cfg: ExperimentConfig) -> bool:
    """Whether a fold's grid points train together (:func:`~perceptron_lab.engine.perceptron.train_lockstep`):
    the perceptron in dual form (a polynomial kernel of degree 2 or more) in float64 for at most
    one pass, its grid over the perceptron's numeric settings only (:data:`LOCKSTEP_KEYS`). On
    integer features their single passes over the same order then compute each support vector's
    kernel values once for all of them, with the same logs as alone."""
    return (cfg.algorithm.name == "perceptron" and cfg.kernel.type == "poly" and (cfg.kernel.degree or 1) >= 2
            and cfg.algorithm.form in ("auto", "dual") and cfg.training.dtype == "float64"
            and cfg.training.epochs <= 1 and bool(cfg.evaluation.grid)
            and all(k in LOCKSTEP_KEYS for k in cfg.evaluation.grid))


def plan_parts(cfg: ExperimentConfig, units, ds: Dataset | None = None) -> list[Part]:
    """Group units into parts: one per grid point when the config has a grid, one per fold (inner
    fold included) when :func:`fold_shared` (on the dataset ``ds``, when given), else one per unit."""
    if not cfg.evaluation.grid:
        return [Part(u.key, u.grid_point, u.grid_values, [u]) for u in units]
    if fold_shared(cfg, ds):
        folds: dict = {}
        for u in units:
            key = f"f{u.fold:+03d}" + (f"_i{u.inner_fold:02d}" if u.inner_fold >= 0 else "")
            if key not in folds:
                folds[key] = Part(key, -1, {}, [], shared=True)
            folds[key].units.append(u)
        return list(folds.values())
    n_points = max((u.grid_point for u in units), default=0) + 1
    width = max(3, len(str(n_points - 1)))
    parts: dict[int, Part] = {}
    for u in units:
        if u.grid_point not in parts:
            parts[u.grid_point] = Part(f"g{u.grid_point:0{width}d}", u.grid_point, u.grid_values, [])
        parts[u.grid_point].units.append(u)
    return list(parts.values())


def eval_epochs(cfg: ExperimentConfig):
    """(all evaluation epochs sorted, the set of main checkpoints)."""
    main = sorted(set(float(c) for c in cfg.training.checkpoints) | {float(cfg.training.epochs)})
    pts = set(main)
    if cfg.training.curve_every:
        k = 1
        while k * cfg.training.curve_every <= cfg.training.epochs + EPOCH_TOL:
            pts.add(round(k * cfg.training.curve_every, 6))
            k += 1
    return sorted(pts), set(main)


# ----------------------------------------------------------------------------- running


def params_string(acfg) -> str:
    if acfg.name in BUDGET_ALGORITHMS:
        out = f"budget={'inf' if acfg.budget is None else acfg.budget}"
        if acfg.name in ("projectron", "projectron++", "norma"):
            out += f";eta={acfg.eta:g}"
        if acfg.name == "norma":
            out += f";lambda={acfg.lambda_:g};rho={acfg.rho:g};schedule={acfg.schedule}"
        return out
    if acfg.name == "perceptron":
        ab = "inf" if acfg.alpha_bound is None else acfg.alpha_bound
        return (f"eta={acfg.eta:g};theta_init={acfg.theta_init};C={acfg.C};tau={acfg.tau:g};"
                f"lambda={acfg.lambda_:g};alpha_bound={ab}")
    return f"alpha={acfg.alpha:g};B={acfg.B};C={acfg.C:g};p={acfg.p:g}"


def _fmt(v, float_format):
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return float_format % v


class _Splits:
    """Fold indices of one dataset, computed once per part."""

    def __init__(self, cfg: ExperimentConfig, n: int):
        self.cfg, self.n = cfg, n
        self._outer = None
        self._inner = {}

    def outer(self):
        if self._outer is None:
            ev = self.cfg.evaluation
            self._outer = kfold_indices(self.n, ev.folds, ev.fold_seed)
        return self._outer

    def inner(self, fold: int):
        if fold not in self._inner:
            ev = self.cfg.evaluation
            train = np.arange(self.n) if fold < 0 else self.outer()[fold][0]
            self._inner[fold] = inner_kfold_indices(train, ev.inner_folds, ev.fold_seed, fold)
        return self._inner[fold]


def unit_data(cfg: ExperimentConfig, ds: Dataset, unit: Unit, splits: _Splits | None = None):
    """(X_train, y_train, X_test, y_test) of a unit, before preprocessing."""
    if unit.fold < 0 and unit.inner_fold < 0:
        if ds.X_test is None:
            raise ConfigError(f"{cfg.source}: dataset {ds.name} has no fixed test split; "
                              "set evaluation.mode: kfold")
        return ds.X_train, ds.y_train, ds.X_test, ds.y_test
    splits = splits or _Splits(cfg, len(ds.y_train))
    tr, te = splits.inner(unit.fold)[unit.inner_fold] if unit.inner_fold >= 0 else splits.outer()[unit.fold]
    return ds.X_train[tr], ds.y_train[tr], ds.X_train[te], ds.y_train[te]


def fold_subsample(ucfg: ExperimentConfig, unit: Unit, n: int):
    """Rows of a fold's training part (``n`` rows) that a unit trains on: all of them, or
    ``evaluation.fold_train_size`` drawn at random without replacement.

    Khardon & Wachman (2007) Table 5 parameterizes 10-fold cross-validation on Adult "by the number
    of examples in the training set"; §3.2 permutes the training set at random before running, so
    N examples of a fold's training part are N examples drawn at random. The draw depends on the
    fold, the permutation and N only (not on the grid's other values), so every tau of a column
    trains on the same examples.
    """
    size = ucfg.evaluation.fold_train_size
    if size is None:
        return None
    if size > n:
        raise ConfigError(f"{ucfg.source}: evaluation.fold_train_size = {size} exceeds the {n} examples of a "
                          "fold's training part; lower it or use fewer folds")
    rng = np.random.default_rng(np.random.SeedSequence([ucfg.training.seed, 104729, unit.fold + 1,
                                                        unit.permutation, size]))
    return np.sort(rng.choice(n, size=size, replace=False))


def unit_seed(cfg: ExperimentConfig, unit: Unit) -> np.random.SeedSequence:
    """The seed of a unit's training order (and of the random rule)."""
    key = [cfg.training.seed, unit.permutation, unit.fold + 1]
    if unit.inner_fold >= 0:
        key.append(unit.inner_fold + 1)
    return np.random.SeedSequence(key)


@functools.lru_cache(maxsize=1)
def _blas_controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def blas_one_thread():
    """Limit BLAS to one thread now; returns the limiter, a context manager that restores the
    earlier limit on exit (kept unentered, the limit holds for the process's life). A no-op
    without threadpoolctl (which comes with scikit-learn).

    The loaded BLAS libraries are looked up once per process (a lookup reads every loaded
    library's file, which can cost more than a small unit's training); libraries loaded later are
    not limited."""
    try:
        controller = _blas_controller()
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")


@contextlib.contextmanager
def threads_for(entries: int):
    """Run the body on one numba and BLAS thread when the training set is small.

    Small problems (at most ``SINGLE_THREAD_MAX_ENTRIES`` examples x features) lose more to the
    thread team's start-up on every jitted call than they gain from a second core; results are
    the same on any number of threads.
    """
    if entries > SINGLE_THREAD_MAX_ENTRIES:
        yield
        return
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        with blas_one_thread():
            yield
    finally:
        numba.set_num_threads(before)


def peak_rss_mb() -> float | None:
    """The peak resident memory of this process since :func:`reset_peak_rss` (or its start), in MB
    (None where the OS does not say): Linux's VmHWM, else the process's maximum resident size."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 2**10, 1)
    except OSError:
        pass
    try:
        import resource
    except ImportError:  # pragma: no cover - not Unix
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux, bytes on macOS
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)


def reset_peak_rss() -> None:
    """Start :func:`peak_rss_mb` afresh from the memory in use now (Linux), so that a process that
    runs several configs (``make reproduce``) reports each one's own peak; elsewhere a no-op."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def unit_kernel(ucfg: ExperimentConfig, Xtr: np.ndarray):
    """(float type, kernel checked against ``Xtr`` for the range of that type) of a unit's run. The
    kernel takes its features through :meth:`~perceptron_lab.kernels.Kernel.features` (a power of
    two, when the features as given are beyond the float range)."""
    dtype = np.float32 if ucfg.training.dtype == "float32" else np.float64
    return dtype, Kernel.from_config(ucfg.kernel).range_safe(Xtr, dtype)


def range_note(ucfg: ExperimentConfig, ds: Dataset) -> str | None:
    """What :meth:`~perceptron_lab.kernels.Kernel.range_safe` does to the features of ``ucfg`` on the
    whole training set of ``ds``, in one line (None: nothing, or a kernel each unit refuses itself)."""
    Xtr, _ = preprocess(ucfg.dataset.preprocess, ds.X_train, None)
    try:
        _, kernel = budget_kernel(ucfg, Xtr) if ucfg.algorithm.name in BUDGET_ALGORITHMS else unit_kernel(ucfg, Xtr)
    except NumericError:
        return None
    return kernel.rescale_note()


def budget_kernel(ucfg: ExperimentConfig, Xtr: np.ndarray):
    """(float64, the config's kernel scaled by :func:`~perceptron_lab.engine.budget.unit_diag_kernel`
    to ``max_i K(x_i, x_i) = 1`` on the training rows) for a budgeted run; values that overflow
    float64 stop."""
    X64 = np.asarray(Xtr, dtype=np.float64)
    kernel = Kernel.from_config(ucfg.kernel).range_safe(X64, np.float64, rescale_values=False, unit_diag=True)
    kernel = unit_diag_kernel(kernel, kernel.features(X64))
    if not np.all(np.isfinite(kernel_diag(kernel, kernel.features(X64)))):
        raise NumericError(f"{ucfg.source}: K(x, x) overflows float64 for {kernel.describe()}; "
                           "use a larger kernel.scale or a smaller kernel.degree")
    return np.float64, kernel


def unit_order(ucfg: ExperimentConfig, unit: Unit, n: int):
    """(training order, seed of the random prediction rule) of a unit on ``n`` training examples.
    Anything that retrains a unit (e.g. the Gentile margin figures) takes its order from here."""
    order_seed, rule_seed = unit_seed(ucfg, unit).spawn(2)
    return np.random.default_rng(order_seed).permutation(n), rule_seed


def run_unit(cfg: ExperimentConfig, ds: Dataset, unit: Unit, progress=None, ucfg=None, splits=None, phase=None):
    """Train and evaluate one unit; returns (rows, timings).

    ``ucfg`` (the config with the unit's grid values applied) and ``splits`` may be passed by a
    caller that runs many units of one grid point. ``phase(text)`` is told when training and
    evaluation start (the progress bar shows it).
    """
    if ucfg is None:
        ucfg = with_overrides(cfg, unit.grid_values) if unit.grid_values else cfg
    data = _unit_inputs(ucfg, ds, unit, splits)
    Xtr, ytr, Xte, yte, dtype, kernel = data
    budgeted = ucfg.algorithm.name in BUDGET_ALGORITHMS
    binary = ds.n_classes == 2
    with threads_for(Xtr.size):
        log, rule_seed = _train_unit(ucfg, ds, unit, data, progress, phase)
        if phase is not None:
            phase(f"evaluating {unit.key} ({len(ucfg.prediction.rules)} rules x {log.checkpoint_steps.size} "
                  "checkpoints)")
        t1 = time.perf_counter()
        if budgeted:
            err_m, err_b = budget_errors(log, kernel, Xtr, Xte, yte, binary, RULES, ucfg.prediction.rules)
        else:
            err_m, err_b = evaluate(log, kernel, Xtr, Xte, yte, binary, vote_weight=ucfg.prediction.vote_weight,
                                    seed=rule_seed, dtype=dtype, rules=ucfg.prediction.rules)
        eval_s = time.perf_counter() - t1
    return _unit_rows(cfg, ucfg, ds, unit, kernel, log, err_m, err_b, len(ytr), len(yte), eval_s)


def _unit_inputs(ucfg: ExperimentConfig, ds: Dataset, unit: Unit, splits=None):
    """(X_train, y_train, X_test, y_test, float type, kernel) of a unit: its fold's data,
    preprocessed and subsampled, and the kernel checked on its training rows."""
    Xtr, ytr, Xte, yte = unit_data(ucfg, ds, unit, splits)
    Xtr, Xte = preprocess(ucfg.dataset.preprocess, Xtr, Xte)
    sub = fold_subsample(ucfg, unit, len(ytr))
    if sub is not None:
        Xtr, ytr = Xtr[sub], ytr[sub]
    budgeted = ucfg.algorithm.name in BUDGET_ALGORITHMS
    dtype, kernel = unit_kernel(ucfg, Xtr) if not budgeted else budget_kernel(ucfg, Xtr)
    return kernel.features(Xtr), ytr, kernel.features(Xte), yte, dtype, kernel


def _train_unit(ucfg: ExperimentConfig, ds: Dataset, unit: Unit, data, progress=None, phase=None):
    """(training log, seed of the random rule) of a unit on ``data`` (:func:`_unit_inputs`)."""
    Xtr, ytr, _, _, dtype, kernel = data
    order, rule_seed = unit_order(ucfg, unit, len(ytr))
    if phase is not None:
        phase(f"training {unit.key}")
    log = train_from_config(ucfg, Xtr, label_matrix(ytr, ds.n_classes), kernel, order, eval_epochs(ucfg)[0],
                            dtype, progress=progress, seed=rule_seed)
    return log, rule_seed


def _unit_rows(cfg, ucfg, ds, unit, kernel, log, err_m, err_b, n_train: int, n_test: int, eval_s: float):
    """(rows of the long results format, timings) of a trained and evaluated unit."""
    budgeted = ucfg.algorithm.name in BUDGET_ALGORITHMS
    binary = ds.n_classes == 2
    epochs_all, main = eval_epochs(ucfg)
    # checkpoints that round to the same step count are evaluated once
    steps = [int(round(e * n_train)) for e in epochs_all]
    cp_of = {s: i for i, s in enumerate(log.checkpoint_steps.tolist())}
    counts = budget_counts(log) if budgeted else counts_at_checkpoints(log)

    ff = cfg.output.float_format
    base = [ds.name, kernel.name, kernel.degree, ucfg.algorithm.name, params_string(ucfg.algorithm),
            unit.grid_point, unit.fold, unit.permutation]
    tail = [str(unit.inner_fold), ""] if cfg.evaluation.mode == "nested" else []
    labels = ["all"] if binary else [str(c) for c in ds.classes]
    rows = []
    for e, s in zip(epochs_all, steps):
        k = cp_of[s]
        ep = f"{e:g}"
        is_main = e in main
        rows.append(base + [ep, "none", "", "all", "mistakes", _fmt(int(counts["mistakes"][k].sum()), ff)] + tail)
        rows.append(base + [ep, "none", "", "all", "support_vectors",
                            _fmt(int(counts["support_vectors_union"][k]), ff)] + tail)
        if is_main and not binary:
            for c, lab in enumerate(labels):
                rows.append(base + [ep, "none", "", lab, "mistakes", _fmt(int(counts["mistakes"][k, c]), ff)] + tail)
                rows.append(base + [ep, "none", "", lab, "support_vectors",
                                    _fmt(int(counts["support_vectors"][k, c]), ff)] + tail)
        for rule in ucfg.prediction.rules:
            r = RULES.index(rule)
            name, norm = (rule[:-5], "true") if rule.endswith("_norm") else (rule, "false")
            rows.append(base + [ep, name, norm, "all", "test_error_pct",
                                _fmt(100.0 * err_m[k, r] / n_test, ff)] + tail)
            if is_main and not binary:
                for c, lab in enumerate(labels):
                    rows.append(base + [ep, name, norm, lab, "test_error_pct",
                                        _fmt(100.0 * err_b[k, r, c] / n_test, ff)] + tail)
    timings = {"unit": unit.key, "train_seconds": round(log.seconds, 3), "eval_seconds": round(eval_s, 3),
               "updates": log.n_updates, "n_train": n_train, "n_test": n_test, "peak_rss_mb": peak_rss_mb()}
    return rows, timings


def run_shared(cfg: ExperimentConfig, ds: Dataset, units, splits=None, progress=None, unit_done=None, phase=None):
    """Train the units of one fold across grid points (a :func:`fold_shared` part): one after
    another, or with :func:`fold_lockstep` those of each permutation together
    (:func:`~perceptron_lab.engine.perceptron.train_lockstep`); then evaluate them together
    (:func:`~perceptron_lab.predict.evaluate_shared`); returns (rows, timings) in the units' order.
    A unit's evaluation seconds are its own scan plus its share of the kernel block's."""
    ucfgs: dict = {}
    trained = {}
    data = None
    for u in units:
        if u.grid_point not in ucfgs:
            ucfgs[u.grid_point] = with_overrides(cfg, u.grid_values) if u.grid_values else cfg
        if data is None:
            # every unit of the part reads the same fold with the same kernel
            data = _unit_inputs(ucfgs[u.grid_point], ds, u, splits)
    lockstep = fold_lockstep(cfg)
    groups: dict = {}
    for u in units:
        groups.setdefault(u.permutation if lockstep else id(u), []).append(u)
    for group in groups.values():
        with threads_for(data[0].size):
            if len(group) > 1:
                logs = _train_lockstep(cfg, ucfgs, ds, group, data, progress, phase)
            else:
                logs = [_train_unit(ucfgs[group[0].grid_point], ds, group[0], data, progress, phase)]
        for u, log in zip(group, logs):
            trained[id(u)] = (u, ucfgs[u.grid_point]) + tuple(log)
            if unit_done is not None:
                unit_done(unit_steps(ucfgs[u.grid_point], ds, u))
    trained = [trained[id(u)] for u in units]
    Xtr, ytr, Xte, yte, dtype, kernel = data
    if phase is not None:
        phase(f"evaluating {len(units)} runs together")
    items = [(log, ucfg.prediction.vote_weight, rule_seed, ucfg.prediction.rules)
             for _, ucfg, log, rule_seed in trained]
    with threads_for(Xtr.size):
        results = evaluate_shared(items, kernel, Xtr, Xte, yte, ds.n_classes == 2, dtype=dtype)
    rows, timings = [], []
    for (u, ucfg, log, _), (err_m, err_b, secs) in zip(trained, results):
        r, tm = _unit_rows(cfg, ucfg, ds, u, kernel, log, err_m, err_b, len(ytr), len(yte), secs)
        rows.extend(r)
        timings.append(tm)
    return rows, timings


def _train_lockstep(cfg, ucfgs, ds, group, data, progress=None, phase=None):
    """[(training log, seed of the random rule)] of the units ``group`` (one fold and permutation,
    several grid points of a :func:`fold_lockstep` config) on ``data``, trained in lockstep."""
    from .engine import perceptron_params
    from .engine.perceptron import train_lockstep

    Xtr, ytr, _, _, dtype, kernel = data
    first = ucfgs[group[0].grid_point]
    orders = [unit_order(ucfgs[u.grid_point], u, len(ytr)) for u in group]
    order = orders[0][0]
    if not all(np.array_equal(o, order) for o, _ in orders):
        raise PlabError(f"{cfg.source}: units {group[0].key} ... trained in lockstep have different orders")
    seeds = [seed for _, seed in orders]
    params = perceptron_params([ucfgs[u.grid_point].algorithm for u in group], Xtr, kernel)
    if phase is not None:
        phase(f"training {len(group)} runs in lockstep ({group[0].key} ...)")
    tr = first.training
    logs = train_lockstep(Xtr, label_matrix(ytr, ds.n_classes), kernel, params, order, tr.epochs,
                          eval_epochs(first)[0], chunk_size=tr.chunk_size, dtype=dtype, progress=progress,
                          form=first.algorithm.form, cache_limit_gb=tr.cache_limit_gb)
    return list(zip(logs, seeds))


def part_config(cfg: ExperimentConfig, part: Part) -> ExperimentConfig:
    return with_overrides(cfg, part.grid_values) if part.grid_values else cfg


def part_configs(cfg: ExperimentConfig, parts) -> list[ExperimentConfig]:
    """:func:`part_config` of each of ``parts``, resolved once per grid point: the parts of one
    point (its folds) get the same config object (a config of 7,280 parts has 728 points)."""
    by_point: dict = {}
    out = []
    for p in parts:
        key = json.dumps(p.grid_values, sort_keys=True, default=str)
        if key not in by_point:
            by_point[key] = part_config(cfg, p)
        out.append(by_point[key])
    return out


def unit_steps(cfg: ExperimentConfig, ds: Dataset, unit: Unit) -> int:
    """Training steps of a unit (what the progress bar counts)."""
    n = len(ds.y_train)
    ev = cfg.evaluation
    if unit.fold >= 0:
        n -= len(np.array_split(np.arange(n), ev.folds)[unit.fold])
    if unit.inner_fold >= 0:
        n -= len(np.array_split(np.arange(n), ev.inner_folds)[unit.inner_fold])
    if ev.fold_train_size is not None:
        n = min(n, ev.fold_train_size)
    return int(round(cfg.training.epochs * n))


def run_part(cfg: ExperimentConfig, part: Part, data_dir=None, progress=None, unit_done=None, phase=None):
    """Run every unit of a part; returns (CSV text of its rows, list of unit timings).

    ``progress(steps)`` is called as training advances; ``unit_done(steps)`` after each unit.
    """
    ucfg = part_config(cfg, part)
    ds = load_data(ucfg, data_dir)
    splits = _Splits(ucfg, len(ds.y_train))
    if part.shared:
        rows, timings = run_shared(cfg, ds, part.units, splits, progress=progress, unit_done=unit_done, phase=phase)
        return rows_to_csv(rows, result_columns(cfg)), timings
    rows, timings = [], []
    for u in part.units:
        r, tm = run_unit(cfg, ds, u, progress=progress, ucfg=ucfg, splits=splits, phase=phase)
        rows.extend(r)
        timings.append(tm)
        if unit_done is not None:
            unit_done(unit_steps(ucfg, ds, u))
    return rows_to_csv(rows, result_columns(cfg)), timings


#: Training rows (and test rows) of the slice :func:`warm_up` runs on.
WARM_UP_ROWS = 200


def warm_up(cfg: ExperimentConfig, part: Part, ds: Dataset) -> None:
    """Compile (first use) or load from numba's on-disk cache the jitted code that ``part`` runs:
    its first units are trained and evaluated, through the same functions as :func:`run_part`, on
    the first :data:`WARM_UP_ROWS` rows of ``ds``, and their results are thrown away.

    Compilation then happens here, before any training is timed, and a progress bar's rate is
    measured on training alone. The slice keeps the features' dtype, the classes and the config,
    which are what numba specializes on. Nothing here changes a result: the warm-up's rows are
    never written, and the kernel columns it cached are released. A failure is left to the run
    itself to report (a config error, say, stops the run with its own message)."""
    from .engine import columns

    size = cfg.evaluation.fold_train_size or 0
    k = min(len(ds.y_train), max(WARM_UP_ROWS, 2 * size))
    kt = None if ds.X_test is None else min(len(ds.y_test), WARM_UP_ROWS)
    tiny = Dataset(ds.name, ds.X_train[:k], ds.y_train[:k], None if kt is None else ds.X_test[:kt],
                   None if kt is None else ds.y_test[:kt], ds.classes, ds.meta)
    try:
        ucfg = part_config(cfg, part)
        splits = _Splits(ucfg, k)
        if part.shared:   # two units of the first permutation: lockstep training and shared evaluation
            first = part.units[0].permutation
            run_shared(cfg, tiny, [u for u in part.units if u.permutation == first][:2], splits)
        else:
            run_unit(cfg, tiny, part.units[0], ucfg=ucfg, splits=splits)
    except Exception:   # noqa: BLE001 -- the run raises it again on the real data
        pass
    finally:
        columns.release()


# ----------------------------------------------------------------------------- files


def rows_to_csv(rows, columns=RESULT_COLUMNS) -> str:
    buf = io.StringIO()
    pd.DataFrame(rows, columns=columns).to_csv(buf, index=False, lineterminator="\n")
    return buf.getvalue()


