"""Orchestration: a config becomes units of work (grid point x fold x permutation), each trained
once and evaluated at every checkpoint; results are written in long format with resume.

Output folder layout::

    OUT/results.csv     long format, one row per (unit, checkpoint, class, rule, metric)
    OUT/run.json        resolved config, versions, seed, git revision, times
    OUT/timings.json    seconds per unit
    OUT/parts/*.csv     finished work (what makes a run resumable)
    OUT/grid.csv        the values of every grid point (runs with a grid)
    OUT/search.csv      parameter search: best accuracy per plan and rule (runs with evaluation.search)
    OUT/nested.csv      nested cross-validation: accuracy of the selected parameters, with T-intervals

Work is persisted in *parts*: without a grid, one part per unit (such runs are few and long, e.g. a
full MNIST permutation); with a grid, one part per grid point holding all its folds, inner folds
and permutations (such runs are many and small). ``jobs > 1`` runs parts in a process pool; every
part's rows depend only on the config and the part, so results are byte-identical for any number
of jobs and after any interruption.

Every write is atomic (temporary file + ``os.replace``): an interrupted run leaves finished parts
in ``parts/`` and no half-written file; running the same command again skips them.

Evaluation modes (:mod:`perceptron_lab.evaluation`): ``holdout`` (the dataset's test split),
``kfold`` (cross-validation over the training data; with ``evaluation.search`` also a parameter
search summary) and ``nested`` (double cross-validation: parameters chosen on inner folds of each
outer training part). Nested runs add two columns to the results contract: ``inner_fold`` (-1 for
outer units, else the inner fold) and ``search`` (empty for units; the plan label on the rows that
report, per outer fold, the selected point's outer test error and its inner-CV error).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from . import __version__
from .bounds import check_run_size
from .config import ExperimentConfig, with_overrides
from .constants import EPOCH_TOL, SINGLE_THREAD_MAX_ENTRIES
from .datasets.base import Dataset, validate_dataset
from .engine import label_matrix, train_from_config
from .errors import ConfigError, OutputError, PlabError
from .evaluation import (Grid, inner_kfold_indices, kfold_indices,  # noqa: F401  (kfold_indices re-exported)
                         training_folds)
from .kernels import Kernel
from .predict import RULES, counts_at_checkpoints, evaluate
from .store import (RunFolder, atomic_write_text, check_writable, code_fingerprint,  # noqa: F401 (re-exported)
                    data_fingerprint, part_key, remove_stale_temporaries, write_error)

RESULT_COLUMNS = ["dataset", "kernel", "degree", "algorithm", "params", "grid_point", "fold",
                  "permutation", "epoch", "rule", "normalized", "class", "metric", "value"]
#: Nested cross-validation adds the inner fold of a unit and the plan of a selection row.
NESTED_COLUMNS = RESULT_COLUMNS + ["inner_fold", "search"]

#: Seconds between rewrites of timings.json while a run is going (it is always written at the end).
TIMINGS_FLUSH_SECONDS = 5.0
#: Datasets kept in memory per process (a grid over dataset parameters loads one per point).
DATA_CACHE_SIZE = 8


def result_columns(cfg: ExperimentConfig) -> list[str]:
    return NESTED_COLUMNS if cfg.evaluation.mode == "nested" else RESULT_COLUMNS


# ----------------------------------------------------------------------------- data


_DATA_CACHE: dict = {}


def _load_source(cfg: ExperimentConfig, data_dir):
    """The dataset as its loader or generator returns it, cached per process (a few entries)."""
    name = cfg.dataset.name
    params = dict(cfg.dataset.params or {})
    key = (name, json.dumps(params, sort_keys=True, default=str), str(data_dir))
    if key in _DATA_CACHE:
        return _DATA_CACHE[key]
    if name in ("kw_artificial", "gentile_sparse"):
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


def load_data(cfg: ExperimentConfig, data_dir=None) -> Dataset:
    """The dataset of a config, with train/test subsets and preprocessing applied."""
    name = cfg.dataset.name
    ds = _load_source(cfg, data_dir)
    Xtr, ytr, Xte, yte = ds.X_train, ds.y_train, ds.X_test, ds.y_test
    if cfg.dataset.merge_splits:
        if Xte is None:
            raise ConfigError(f"{cfg.source}: dataset.merge_splits: dataset {name} has no test split to merge; "
                              "remove the key")
        Xtr, ytr = np.concatenate([Xtr, Xte]), np.concatenate([ytr, yte])
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
    """Fit a preprocessing on the training rows and apply it to both sets."""
    if kind == "none":
        return Xtr, Xte
    if kind == "unit_norm":
        def f(X):
            n = np.linalg.norm(X, axis=1, keepdims=True)
            return X / np.where(n > 0, n, 1.0)
    elif kind == "minmax":
        lo, hi = Xtr.min(axis=0), Xtr.max(axis=0)
        span = np.where(hi > lo, hi - lo, 1.0)

        def f(X):
            return (X - lo) / span
    elif kind == "standardize":
        mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
        sd = np.where(sd > 0, sd, 1.0)

        def f(X):
            return (X - mu) / sd
    else:
        raise PlabError(f"unknown preprocessing {kind!r}")
    return f(Xtr), (None if Xte is None else f(Xte))


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
    """Units persisted together in ``parts/<key>.csv``: all units of one grid point, or one unit."""

    key: str
    grid_point: int
    grid_values: dict
    units: list


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
        raise ConfigError(f"{cfg.source}: dataset {cfg.dataset.name} has no fixed test split; set {what}")
    pairs = _fold_pairs(cfg)
    units = []
    for g, values in enumerate(grid_points(cfg)):
        for f, j in pairs:
            for p in range(cfg.training.permutations):
                units.append(Unit(g, values, f, p, j))
    return units


def plan_parts(cfg: ExperimentConfig, units) -> list[Part]:
    """Group units into parts: one per grid point when the config has a grid, else one per unit."""
    if not cfg.evaluation.grid:
        return [Part(u.key, u.grid_point, u.grid_values, [u]) for u in units]
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


def blas_one_thread():
    """Limit BLAS to one thread now; returns the limiter, a context manager that restores the
    earlier limit on exit (kept unentered, the limit holds for the process's life). A no-op
    without threadpoolctl (which comes with scikit-learn)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(1)


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


def unit_kernel(ucfg: ExperimentConfig, Xtr: np.ndarray):
    """(float type, kernel checked against ``Xtr`` for overflow in that type) of a unit's run."""
    dtype = np.float32 if ucfg.training.dtype == "float32" else np.float64
    return dtype, Kernel.from_config(ucfg.kernel).range_safe(Xtr, dtype)


def unit_order(ucfg: ExperimentConfig, unit: Unit, n: int):
    """(training order, seed of the random prediction rule) of a unit on ``n`` training examples.
    Anything that retrains a unit (e.g. the Gentile margin figures) takes its order from here."""
    order_seed, rule_seed = unit_seed(ucfg, unit).spawn(2)
    return np.random.default_rng(order_seed).permutation(n), rule_seed


def run_unit(cfg: ExperimentConfig, ds: Dataset, unit: Unit, progress=None, ucfg=None, splits=None):
    """Train and evaluate one unit; returns (rows, timings).

    ``ucfg`` (the config with the unit's grid values applied) and ``splits`` may be passed by a
    caller that runs many units of one grid point.
    """
    if ucfg is None:
        ucfg = with_overrides(cfg, unit.grid_values) if unit.grid_values else cfg
    Xtr, ytr, Xte, yte = unit_data(ucfg, ds, unit, splits)
    Xtr, Xte = preprocess(ucfg.dataset.preprocess, Xtr, Xte)
    sub = fold_subsample(ucfg, unit, len(ytr))
    if sub is not None:
        Xtr, ytr = Xtr[sub], ytr[sub]
    dtype, kernel = unit_kernel(ucfg, Xtr)
    binary = ds.n_classes == 2
    Y = label_matrix(ytr, ds.n_classes)
    order, rule_seed = unit_order(ucfg, unit, len(ytr))
    epochs_all, main = eval_epochs(ucfg)
    with threads_for(Xtr.size):
        log = train_from_config(ucfg, Xtr, Y, kernel, order, epochs_all, dtype, progress=progress)
        t1 = time.perf_counter()
        err_m, err_b = evaluate(log, kernel, Xtr, Xte, yte, binary, vote_weight=ucfg.prediction.vote_weight,
                                seed=rule_seed, dtype=dtype, rules=ucfg.prediction.rules)
        eval_s = time.perf_counter() - t1
    # checkpoints that round to the same step count are evaluated once
    steps = [int(round(e * len(ytr))) for e in epochs_all]
    cp_of = {s: i for i, s in enumerate(log.checkpoint_steps.tolist())}
    counts = counts_at_checkpoints(log)

    ff = cfg.output.float_format
    base = [ds.name, kernel.name, kernel.degree, ucfg.algorithm.name, params_string(ucfg.algorithm),
            unit.grid_point, unit.fold, unit.permutation]
    tail = [str(unit.inner_fold), ""] if cfg.evaluation.mode == "nested" else []
    labels = ["all"] if binary else [str(c) for c in ds.classes]
    n_test = len(yte)
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
               "updates": log.n_updates, "n_train": len(ytr), "n_test": n_test}
    return rows, timings


def part_config(cfg: ExperimentConfig, part: Part) -> ExperimentConfig:
    return with_overrides(cfg, part.grid_values) if part.grid_values else cfg


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


def run_part(cfg: ExperimentConfig, part: Part, data_dir=None, progress=None, unit_done=None):
    """Run every unit of a part; returns (CSV text of its rows, list of unit timings).

    ``progress(steps)`` is called as training advances; ``unit_done(steps)`` after each unit.
    """
    ucfg = part_config(cfg, part)
    ds = load_data(ucfg, data_dir)
    splits = _Splits(ucfg, len(ds.y_train))
    rows, timings = [], []
    for u in part.units:
        r, tm = run_unit(cfg, ds, u, progress=progress, ucfg=ucfg, splits=splits)
        rows.extend(r)
        timings.append(tm)
        if unit_done is not None:
            unit_done(unit_steps(ucfg, ds, u))
    return rows_to_csv(rows, result_columns(cfg)), timings


# ----------------------------------------------------------------------------- files


def rows_to_csv(rows, columns=RESULT_COLUMNS) -> str:
    buf = io.StringIO()
    pd.DataFrame(rows, columns=columns).to_csv(buf, index=False, lineterminator="\n")
    return buf.getvalue()


def git_revision():
    try:
        here = Path(__file__).resolve().parent
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
        if out.returncode == 0:
            dirty = subprocess.run(["git", "status", "--porcelain"], cwd=here, capture_output=True,
                                   text=True, timeout=5).stdout.strip()
            return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def versions():
    import numba

    return {"perceptron_lab": __version__, "python": sys.version.split()[0], "numpy": np.__version__,
            "numba": numba.__version__, "pandas": pd.__version__, "platform": platform.platform(),
            "machine": platform.machine(), "cpus": os.cpu_count()}


def results_hash(cfg: ExperimentConfig) -> str:
    """Hash of everything that determines the numbers in results.csv.

    The name, description and output section are left out, so configs that differ only there
    (e.g. Freund & Schapire's Table 2 config, which reuses the Table 1 d = 4 runs) share a folder.
    """
    import hashlib

    text = json.dumps(numbers_settings(cfg), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def numbers_settings(cfg: ExperimentConfig) -> dict:
    """The resolved config without what cannot change a number (name, description, extends and
    the output section)."""
    d = cfg.to_dict()
    for k in ("name", "description", "output", "extends"):
        d.pop(k, None)
    return d


@dataclass
class RunResult:
    out_dir: Path
    results: pd.DataFrame
    run_info: dict
    skipped: int = 0
    ran: int = 0
    timings: list = field(default_factory=list)


def run_experiment(cfg: ExperimentConfig, out_dir=None, data_dir=None, force=False, progress=True, jobs=1,
                   executor="local", scheduler=None, verify=True, allow_large=False):
    """Run every part of a config (reusing the finished parts that belong to it unless ``force``)
    and write the results.

    ``jobs`` > 1 runs parts in that many worker processes (one BLAS and numba thread each);
    ``executor="dask"`` sends them to the Dask scheduler at ``scheduler`` instead (see
    :mod:`perceptron_lab.executors`). The results are byte-identical to a serial run. The output
    folder is locked for the whole run and holds only what :class:`perceptron_lab.store.RunFolder`
    writes. With ``verify`` the dataset files are checked against the registry's sha256 first
    (:func:`verify_inputs`); a run beyond :mod:`perceptron_lab.bounds`' limits is refused unless
    ``allow_large``.
    """
    from .executors import check_executor

    check_executor(executor, scheduler, jobs)
    with RunFolder(Path(out_dir) if out_dir else Path(cfg.run_dir)) as folder:
        folder.check_config(results_hash(cfg), force)
        if force:
            folder.clear_parts()
        started, t0 = datetime.now(timezone.utc), time.perf_counter()
        ds, verified = read_inputs(cfg, data_dir, verify)
        check_run_size(cfg, len(ds.y_train), allow_large)
        work = plan_work(cfg, ds, data_dir)
        texts = {} if force else folder.reusable((p.key, work.keys[p.key]) for p in work.parts)
        todo = [p for p in work.parts if p.key not in texts]
        info = _run_info(cfg, ds, work, jobs, executor, scheduler, started, verified)
        folder.write_info(info)
        timings = _execute(cfg, folder, todo, work.keys, texts, data_dir, ds, jobs, executor, scheduler,
                           progress, force, len(work.units))
        df = merge_parts(work.parts, texts)
        df, outputs = write_outputs(cfg, folder, df, len(ds.y_train))
        ran = sum(len(p.units) for p in todo)
        folder.write_info({**info, **outputs, **_run_summary(t0, ran, len(work.units), timings)})
    return RunResult(folder.out, df, info, skipped=len(work.units) - ran, ran=ran, timings=list(timings.values()))


@dataclass
class Work:
    """A run's plan: its units, the parts that persist them, the key each part must carry and the
    fingerprint of the data read."""
    units: list
    parts: list
    keys: dict
    fingerprint: str


def read_inputs(cfg: ExperimentConfig, data_dir, verify: bool):
    """(the dataset, whether its files were checked against the registry's sha256). Every run reads
    its data afresh: the files may have changed since the last."""
    _DATA_CACHE.clear()
    verified = verify_inputs(cfg, data_dir) if verify else False
    return load_data(cfg, data_dir), verified


def plan_work(cfg: ExperimentConfig, ds: Dataset, data_dir=None) -> Work:
    units = plan(cfg, ds.X_test is not None)
    parts = plan_parts(cfg, units)
    fingerprint = data_fingerprint(ds)
    return Work(units, parts, part_keys(cfg, parts, fingerprint, data_dir), fingerprint)


def merge_parts(parts, texts: dict) -> pd.DataFrame:
    """The rows of every part, in plan order (whatever order they were computed in)."""
    return pd.concat([pd.read_csv(io.StringIO(texts[p.key]), dtype=str, keep_default_na=False) for p in parts],
                     ignore_index=True)


def _run_summary(t0: float, ran: int, n_units: int, timings: dict) -> dict:
    return {"status": "complete", "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "wall_seconds": round(time.perf_counter() - t0, 3), "ran": ran, "skipped": n_units - ran,
            "train_seconds_total": round(sum(t["train_seconds"] for t in timings.values()), 3),
            "eval_seconds_total": round(sum(t["eval_seconds"] for t in timings.values()), 3)}


def verify_inputs(cfg: ExperimentConfig, data_dir=None, note=None) -> bool:
    """Check the sha256 of every registry dataset a config reads (its grid's ``dataset.name``
    values included; :func:`perceptron_lab.datasets.registry.check_dataset_files`): a mismatch is a
    one-line DatasetError (exit status 3). A packaged copy read instead of the data root's is said
    on the terminal. Returns True."""
    from .constants import DATASET_SYNTHETIC
    from .datasets.registry import check_dataset_files

    say = note or (lambda msg: print(f"plab: note: {msg}", file=sys.stderr, flush=True))
    names = dict.fromkeys([cfg.dataset.name, *cfg.evaluation.grid.get("dataset.name", [])])
    for name in names:
        if name in DATASET_SYNTHETIC:
            continue
        msg = check_dataset_files(name, data_dir)
        if msg:
            say(msg)
    return True


def part_keys(cfg: ExperimentConfig, parts, fingerprint: str, data_dir=None) -> dict:
    """The key each part must carry (:func:`perceptron_lab.store.part_key`): the part's resolved
    config with the output format, its units, the fingerprint of the data it reads and of the
    package's code. ``fingerprint`` is the config's data's (:func:`perceptron_lab.store.data_fingerprint`);
    parts whose grid values change the data are fingerprinted on their own data."""
    prints: dict = {}
    keys = {}
    code = code_fingerprint()
    for p in parts:
        pcfg = part_config(cfg, p)
        d = {**numbers_settings(pcfg), "output": {"float_format": pcfg.output.float_format}}
        fp = fingerprint
        if any(k.startswith("dataset.") for k in p.grid_values):
            dkey = json.dumps(d["dataset"], sort_keys=True, default=str)
            if dkey not in prints:
                prints[dkey] = data_fingerprint(load_data(pcfg, data_dir))
            fp = prints[dkey]
        keys[p.key] = part_key(d, [u.key for u in p.units], fp, code)
    return keys


def _run_info(cfg, ds, work: Work, jobs, executor, scheduler, started, verified: bool) -> dict:
    return {
        "name": cfg.name, "config_file": str(cfg.source), "config_hash": results_hash(cfg),
        "config": cfg.to_dict(), "versions": versions(), "git_revision": git_revision(),
        "seed": cfg.training.seed, "command": " ".join(sys.argv),
        "dataset": {"name": ds.name, "n_train": int(len(ds.y_train)),
                    "n_test": None if ds.y_test is None else int(len(ds.y_test)),
                    "n_features": ds.n_features, "n_classes": ds.n_classes,
                    "fingerprint": work.fingerprint,
                    "source": {k: str(v) for k, v in ds.meta.items() if k in ("source", "source_files")},
                    "checksums_verified": verified},
        "units": len(work.units), "parts": len(work.parts), "jobs": int(jobs), "executor": executor,
        **({"scheduler": scheduler} if executor == "dask" else {}),
        "started": started.isoformat(timespec="seconds"), "status": "running",
    }


def _execute(cfg, folder: RunFolder, todo, keys, texts, data_dir, ds, jobs, executor, scheduler, progress,
             force, n_units) -> dict:
    """Compute the parts of ``todo`` (locally, in a pool or on Dask), writing each as it finishes
    and adding its text to ``texts``; returns every unit's timings (earlier invocations' included)."""
    from tqdm.auto import tqdm

    timings = {} if force else folder.read_timings()
    total = 0
    if progress:
        for p in todo:
            pcfg = part_config(cfg, p)
            pds = load_data(pcfg, data_dir) if p.grid_values else ds
            total += sum(unit_steps(pcfg, pds, u) for u in p.units)
    n_todo = sum(len(p.units) for p in todo)
    bar = tqdm(total=total, disable=not progress, unit="step", unit_scale=True,
               desc=f"{cfg.name} ({n_todo}/{n_units} runs)", dynamic_ncols=True,
               mininterval=0.1 if sys.stderr.isatty() else 30.0)  # a log file gets a line per 30 s
    flush = _TimingsWriter(folder, timings)
    try:
        def finished(part, text, tms):
            folder.write_part(part.key, keys[part.key], text)
            texts[part.key] = text
            flush.add(tms)

        if executor == "dask" and todo:
            from .executors import run_dask

            run_dask(cfg, todo, data_dir, scheduler, finished, bar if progress else None)
        elif jobs > 1 and len(todo) > 1:
            _run_pool(cfg, todo, data_dir, jobs, finished, bar if progress else None)
        else:
            for part in todo:
                text, tms = run_part(cfg, part, data_dir, progress=bar.update if progress else None)
                finished(part, text, tms)
    finally:
        bar.close()
        flush.write()
    return timings


def write_outputs(cfg: ExperimentConfig, folder: RunFolder, df: pd.DataFrame, n_train) -> tuple[pd.DataFrame, dict]:
    """results.csv, the protocol outputs (grid, searches, selections) and the paper's tables;
    returns the results and run.json's ``outputs`` / ``paper_outputs`` entries."""
    outputs = []
    grid = Grid.from_config(cfg) if cfg.evaluation.grid else None
    if grid is not None:
        outputs.append(folder.write_output("grid.csv", grid.frame().to_csv(index=False, lineterminator="\n")))
    if cfg.evaluation.mode == "nested":
        df = _with_selections(cfg, df, grid)
    folder.write_output("results.csv", df.to_csv(index=False, lineterminator="\n"))
    outputs += write_protocol_outputs(cfg, folder, df, grid)
    out = folder.out
    entries = {"outputs": [str(Path(p).relative_to(out)) for p in outputs]} if outputs else {}
    entries["paper_outputs"] = [str(Path(p).relative_to(out)) for p in write_paper_outputs(cfg, out, df, n_train)]
    return df, entries


class _TimingsWriter:
    """Collects unit timings and rewrites timings.json at most every TIMINGS_FLUSH_SECONDS."""

    def __init__(self, folder: RunFolder, timings: dict):
        self.folder, self.timings, self.last = folder, timings, time.perf_counter()

    def add(self, tms):
        for t in tms:
            self.timings[t["unit"]] = t
        if time.perf_counter() - self.last >= TIMINGS_FLUSH_SECONDS:
            self.write()

    def write(self):
        self.folder.write_timings(self.timings)
        self.last = time.perf_counter()


# ----------------------------------------------------------------------------- process pool

_WORKER: dict = {}


def _die_with_parent(parent_pid: int) -> None:
    """Linux: ask the kernel to SIGKILL this process when its parent dies, however it dies
    (SIGKILL included), so that no worker outlives a killed ``plab run``; if the parent is already
    gone, exit now."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:
        os._exit(1)


def _worker_init(cfg, data_dir, queue, parent_pid=None):
    """Worker process setup: die with the parent, one thread for BLAS and numba (the pool supplies
    the parallelism)."""
    if parent_pid is not None:
        _die_with_parent(parent_pid)
    _WORKER["limits"] = blas_one_thread()
    import numba

    numba.set_num_threads(1)
    _WORKER.update(cfg=cfg, data_dir=data_dir, queue=queue)


def _worker_run(part: Part):
    q = _WORKER["queue"]
    text, tms = run_part(_WORKER["cfg"], part, _WORKER["data_dir"], unit_done=q.put)
    return part.key, text, tms


def _run_pool(cfg, todo, data_dir, jobs, finished, bar):
    """Run parts in ``jobs`` spawned worker processes; ``finished(part, text, timings)`` is called
    in this process, in completion order, as each part ends."""
    import multiprocessing as mp
    import queue as queue_mod
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    by_key = {p.key: p for p in todo}

    def drain():
        while True:
            try:
                n = q.get_nowait()
            except queue_mod.Empty:
                return
            if bar is not None:
                bar.update(n)

    ex = ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=ctx, initializer=_worker_init,
                             initargs=(cfg, data_dir, q, os.getpid()))
    try:
        pending = {ex.submit(_worker_run, p) for p in todo}
        while pending:
            done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            drain()
            for fut in done:
                key, text, tms = fut.result()
                finished(by_key[key], text, tms)
        drain()
    except BaseException:
        ex.shutdown(wait=False, cancel_futures=True)
        raise
    ex.shutdown(wait=True)


# ----------------------------------------------------------------------------- protocols


def _with_selections(cfg: ExperimentConfig, df: pd.DataFrame, grid: Grid) -> pd.DataFrame:
    """Append the nested-CV selection rows (see :func:`perceptron_lab.evaluation.select_nested`)."""
    from .evaluation import final_epoch, select_nested, selection_rows

    ep = final_epoch(cfg)
    sels = select_nested(df, grid, cfg, ep)
    rows = selection_rows(df, sels, list(df.columns), cfg.output.float_format, ep)
    if not rows:
        return df
    return pd.concat([df, pd.DataFrame(rows, columns=list(df.columns))], ignore_index=True)


def write_protocol_outputs(cfg: ExperimentConfig, folder: RunFolder, df: pd.DataFrame, grid) -> list[Path]:
    """``search.csv`` for a parameter search (kfold or holdout with evaluation.search) and
    ``nested.csv`` for nested cross-validation."""
    from .evaluation import nested_summary, search_summary

    if grid is None or not cfg.evaluation.search:
        return []
    if cfg.evaluation.mode == "nested":
        name, table = "nested.csv", nested_summary(df, grid, cfg)
    else:
        name, table = "search.csv", search_summary(df, grid, cfg)
    return [folder.write_output(name, table.to_csv(index=False, lineterminator="\n", float_format="%.6g"))]


def write_paper_outputs(cfg: ExperimentConfig, out: Path, df: pd.DataFrame, n_train=None):
    """Tables in the papers' own layouts (next to the papers' numbers) and figures, for the runs
    a paper reports: Freund & Schapire's MNIST runs with a polynomial kernel, Gentile's holdout runs
    (configs named ``gentile2001...``, see :mod:`perceptron_lab.tables_gentile`), and the Khardon &
    Wachman configs (named ``kw2007_table<N>...``, see :mod:`perceptron_lab.tables_kw`)."""
    written = []
    fs_run = (cfg.dataset.name == "mnist" and cfg.kernel.type == "poly" and cfg.algorithm.name == "perceptron"
              and cfg.evaluation.mode == "holdout" and not cfg.evaluation.grid
              and not cfg.name.startswith("gentile2001"))
    if fs_run:
        from .tables import write_fs1999_tables

        written += write_fs1999_tables(out / "results.csv", out, n_train=n_train)
        if cfg.output.figures and cfg.training.curve_every:
            from .figures import plot_fs1999_figure2

            written.append(plot_fs1999_figure2(df, out / "fs1999_figure2.png",
                                               title=f"{cfg.name}: test error vs epochs"))
    if cfg.name.startswith("gentile2001") and cfg.evaluation.mode == "holdout":
        # (the paper's tables are holdout results; its cross-validation runs, e.g. the kernel-width
        # searches usps_sigma_cv.yaml, hold several widths per permutation and write search.csv)
        from .tables_gentile import write_gentile_tables

        # a run with an explicit B (not the shorthand 1/alpha) is compared with the paper's
        # ALMA_p(alpha) rows as well; a numeric B in tables of its own (suffix _B), a symbolic one
        # (sqrt8/alpha: Table 6 as the paper's own counts identify its B) in the paper's tables
        B = getattr(cfg.algorithm, "B", None)
        written += write_gentile_tables(out / "results.csv", out, any_B=B is not None,
                                        suffix="_B" if isinstance(B, (int, float)) else "")
    if cfg.name.startswith("kw2007_table"):
        from .tables_kw import write_kw2007_outputs

        written += write_kw2007_outputs(cfg, out, df)
    return [Path(p) for p in written]


def rewrite_paper_outputs(run_dir, figures: bool = False) -> list[Path]:
    """Rewrite a finished run's paper tables from its ``results.csv`` and the config recorded in
    its ``run.json``, without training (after a change to the table code). Figures are redrawn
    only with ``figures``. Data sets are read from ``$PLAB_DATA`` where a table needs them (the
    Khardon-Wachman Baseline column); cached SVM baselines (``svm_folds.csv``) are reused."""
    from .config import config_from_dict

    run_dir = Path(run_dir)
    info_path, res_path = run_dir / "run.json", run_dir / "results.csv"
    if not info_path.exists() or not res_path.exists():
        raise PlabError(f"{run_dir}: not a finished run folder (needs run.json and results.csv)")
    info = json.loads(info_path.read_text())
    if info.get("status") != "complete":
        raise PlabError(f"{run_dir}: the run is not complete (status {info.get('status')!r})")
    cfg = config_from_dict(info["config"], source=str(info.get("config_file") or info_path))
    if results_hash(cfg) != info.get("config_hash"):
        raise PlabError(f"{run_dir}: the config in run.json no longer validates to the same settings "
                        f"(hash {results_hash(cfg)}, recorded {info.get('config_hash')}); rerun the config instead")
    if not figures:
        cfg = with_overrides(cfg, {"output.figures": False})
    df = pd.read_csv(res_path, dtype=str, keep_default_na=False)
    written = write_paper_outputs(cfg, run_dir, df, (info.get("dataset") or {}).get("n_train"))
    names = [str(Path(p).relative_to(run_dir)) for p in written]
    kept = [] if figures else [n for n in info.get("paper_outputs") or [] if n.endswith(".png") and n not in names]
    info["paper_outputs"] = names + kept  # figures not redrawn are kept as they were
    atomic_write_text(info_path, json.dumps(info, indent=2, default=str) + "\n")
    return written


def summarize(df: pd.DataFrame, main_only_epochs=None) -> pd.DataFrame:
    """Mean and std over permutations/folds of the multiclass test error and the counts, per
    (grid point, epoch, rule): the table printed at the end of a run."""
    d = df[df["class"] == "all"]
    if "inner_fold" in d.columns:  # nested CV: outer units only
        d = d[(d["inner_fold"].astype(str) == "-1") & (d["search"].astype(str) == "")]
    d = d.copy()
    d["value"] = d["value"].astype(float)
    d["epoch_f"] = d["epoch"].astype(float)
    if main_only_epochs is not None:
        d = d[d["epoch_f"].isin(main_only_epochs)]
    d["rule"] = np.where(d["normalized"] == "true", d["rule"] + "_norm", d["rule"])
    d.loc[d["metric"] != "test_error_pct", "rule"] = d["metric"]
    g = d.groupby(["grid_point", "params", "epoch_f", "rule"], sort=True)["value"]
    out = g.agg(["mean", "std", "count"]).reset_index().rename(columns={"epoch_f": "epoch"})
    return out
