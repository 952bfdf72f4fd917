"""Orchestration: a config becomes units of work (grid point x fold x permutation), each trained
once and evaluated at every checkpoint; results are written in long format with resume.

Output folder layout::

    OUT/results.csv     long format, one row per (unit, checkpoint, class, rule, metric)
    OUT/run.json        resolved config, versions, seed, git revision, times
    OUT/parts/*.csv     one file per finished unit (what makes a run resumable)

Every write is atomic (temporary file + ``os.replace``): an interrupted run leaves finished units
in ``parts/`` and no half-written file; running the same command again skips them.
"""

from __future__ import annotations

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
from .config import ExperimentConfig, with_overrides
from .constants import EPOCH_TOL
from .datasets.base import Dataset
from .engine import label_matrix, train_from_config
from .errors import PlabError
from .kernels import Kernel
from .predict import RULES, counts_at_checkpoints, evaluate

RESULT_COLUMNS = ["dataset", "kernel", "degree", "algorithm", "params", "grid_point", "fold",
                  "permutation", "epoch", "rule", "normalized", "class", "metric", "value"]


# ----------------------------------------------------------------------------- data


def load_data(cfg: ExperimentConfig, data_dir=None) -> Dataset:
    """The dataset of a config, with train/test subsets and preprocessing applied."""
    name = cfg.dataset.name
    params = dict(cfg.dataset.params or {})
    if name in ("kw_artificial", "gentile_sparse"):
        from .datasets import synthetic

        try:
            ds = getattr(synthetic, name)(**params)
        except TypeError as exc:
            raise PlabError(f"{cfg.source}: dataset.params for {name}: {exc}") from None
    else:
        from .datasets.registry import load_dataset

        ds = load_dataset(name, data_dir)
    Xtr, ytr, Xte, yte = ds.X_train, ds.y_train, ds.X_test, ds.y_test
    if cfg.dataset.train_size is not None:
        if cfg.dataset.train_size > len(ytr):
            raise PlabError(f"{cfg.source}: dataset.train_size = {cfg.dataset.train_size} exceeds the "
                            f"{len(ytr)} training examples of {name}")
        Xtr, ytr = Xtr[:cfg.dataset.train_size], ytr[:cfg.dataset.train_size]
    if cfg.dataset.test_size is not None and Xte is not None:
        Xte, yte = Xte[:cfg.dataset.test_size], yte[:cfg.dataset.test_size]
    return Dataset(ds.name, Xtr, ytr, Xte, yte, ds.classes, dict(ds.meta))


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


def kfold_indices(n: int, folds: int, seed: int):
    """Shuffled k-fold split: list of (train_idx, test_idx), deterministic in ``seed``."""
    perm = np.random.default_rng(np.random.SeedSequence([seed, 7919])).permutation(n)
    parts = np.array_split(perm, folds)
    return [(np.sort(np.concatenate(parts[:k] + parts[k + 1:])), np.sort(parts[k])) for k in range(folds)]


# ----------------------------------------------------------------------------- plan


@dataclass
class Unit:
    """One training run: a grid point, a fold (-1 for a held-out test set) and a permutation."""

    grid_point: int
    grid_values: dict
    fold: int
    permutation: int

    @property
    def key(self) -> str:
        return f"g{self.grid_point:03d}_f{self.fold:+03d}_p{self.permutation:03d}"


def grid_points(cfg: ExperimentConfig):
    """Cartesian product of evaluation.grid, as a list of {dotted path: value} (one empty point
    when there is no grid)."""
    grid = cfg.evaluation.grid or {}
    keys = list(grid)
    return [dict(zip(keys, vals)) for vals in itertools.product(*(grid[k] for k in keys))] or [{}]


def plan(cfg: ExperimentConfig, has_test_split: bool):
    mode = cfg.evaluation.mode
    if mode == "nested":
        raise PlabError(f"{cfg.source}: evaluation.mode 'nested' (double cross-validation) is not "
                        "available yet; use 'kfold' with a grid for a parameter search")
    if mode == "holdout" and not has_test_split:
        raise PlabError(f"{cfg.source}: dataset {cfg.dataset.name} has no fixed test split; "
                        "set evaluation.mode: kfold")
    folds = [-1] if mode == "holdout" else list(range(cfg.evaluation.folds))
    units = []
    for g, values in enumerate(grid_points(cfg)):
        for f in folds:
            for p in range(cfg.training.permutations):
                units.append(Unit(g, values, f, p))
    return units


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


def run_unit(cfg: ExperimentConfig, ds: Dataset, unit: Unit, progress=None):
    """Train and evaluate one unit; returns (rows, timings)."""
    ucfg = with_overrides(cfg, unit.grid_values) if unit.grid_values else cfg
    if unit.fold < 0:
        Xtr, ytr, Xte, yte = ds.X_train, ds.y_train, ds.X_test, ds.y_test
    else:
        tr, te = kfold_indices(len(ds.y_train), cfg.evaluation.folds, cfg.evaluation.fold_seed)[unit.fold]
        Xtr, ytr, Xte, yte = ds.X_train[tr], ds.y_train[tr], ds.X_train[te], ds.y_train[te]
    Xtr, Xte = preprocess(cfg.dataset.preprocess, Xtr, Xte)
    dtype = np.float32 if ucfg.training.dtype == "float32" else np.float64
    kernel = Kernel.from_config(ucfg.kernel).range_safe(Xtr, dtype)
    binary = ds.n_classes == 2
    Y = label_matrix(ytr, ds.n_classes)
    ss = np.random.SeedSequence([ucfg.training.seed, unit.permutation, unit.fold + 1])
    order_seed, rule_seed = ss.spawn(2)
    order = np.random.default_rng(order_seed).permutation(len(ytr))
    epochs_all, main = eval_epochs(ucfg)
    log = train_from_config(ucfg, Xtr, Y, kernel, order, epochs_all, dtype, progress=progress)
    # checkpoints that round to the same step count are evaluated once
    steps = [int(round(e * len(ytr))) for e in epochs_all]
    cp_of = {s: i for i, s in enumerate(log.checkpoint_steps.tolist())}
    t1 = time.perf_counter()
    err_m, err_b = evaluate(log, kernel, Xtr, Xte, yte, binary, vote_weight=ucfg.prediction.vote_weight,
                            seed=rule_seed, dtype=dtype)
    eval_s = time.perf_counter() - t1
    counts = counts_at_checkpoints(log)

    ff = cfg.output.float_format
    base = [ds.name, kernel.name, kernel.degree, ucfg.algorithm.name, params_string(ucfg.algorithm),
            unit.grid_point, unit.fold, unit.permutation]
    labels = ["all"] if binary else [str(c) for c in ds.classes]
    n_test = len(yte)
    rows = []
    for e, s in zip(epochs_all, steps):
        k = cp_of[s]
        ep = f"{e:g}"
        is_main = e in main
        rows.append(base + [ep, "none", "", "all", "mistakes", _fmt(int(counts["mistakes"][k].sum()), ff)])
        rows.append(base + [ep, "none", "", "all", "support_vectors",
                            _fmt(int(counts["support_vectors_union"][k]), ff)])
        if is_main and not binary:
            for c, lab in enumerate(labels):
                rows.append(base + [ep, "none", "", lab, "mistakes", _fmt(int(counts["mistakes"][k, c]), ff)])
                rows.append(base + [ep, "none", "", lab, "support_vectors",
                                    _fmt(int(counts["support_vectors"][k, c]), ff)])
        for rule in ucfg.prediction.rules:
            r = RULES.index(rule)
            name, norm = (rule[:-5], "true") if rule.endswith("_norm") else (rule, "false")
            rows.append(base + [ep, name, norm, "all", "test_error_pct",
                                _fmt(100.0 * err_m[k, r] / n_test, ff)])
            if is_main and not binary:
                for c, lab in enumerate(labels):
                    rows.append(base + [ep, name, norm, lab, "test_error_pct",
                                        _fmt(100.0 * err_b[k, r, c] / n_test, ff)])
    timings = {"unit": unit.key, "train_seconds": round(log.seconds, 3), "eval_seconds": round(eval_s, 3),
               "updates": log.n_updates, "n_train": len(ytr), "n_test": n_test}
    return rows, timings


# ----------------------------------------------------------------------------- files


def atomic_write_text(path: Path, text: str):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def rows_to_csv(rows) -> str:
    buf = io.StringIO()
    pd.DataFrame(rows, columns=RESULT_COLUMNS).to_csv(buf, index=False, lineterminator="\n")
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

    d = cfg.to_dict()
    for k in ("name", "description", "output", "extends"):
        d.pop(k, None)
    text = json.dumps(d, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def check_writable(out: Path):
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test.{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise PlabError(f"cannot write to output folder {out}: {exc.strerror or exc}; "
                        "choose another with --out") from None


@dataclass
class RunResult:
    out_dir: Path
    results: pd.DataFrame
    run_info: dict
    skipped: int = 0
    ran: int = 0
    timings: list = field(default_factory=list)


def run_experiment(cfg: ExperimentConfig, out_dir=None, data_dir=None, force=False, progress=True):
    """Run every unit of a config (skipping finished ones unless ``force``) and write the results."""
    from tqdm.auto import tqdm

    out = Path(out_dir) if out_dir else Path(cfg.run_dir)
    check_writable(out)
    chash = results_hash(cfg)
    info_path = out / "run.json"
    parts = out / "parts"
    if info_path.exists() and not force:
        try:
            old = json.loads(info_path.read_text())
        except (OSError, ValueError):
            old = {}
        if old.get("config_hash") not in (None, chash):
            raise PlabError(f"{out} holds results of a different config (hash {old.get('config_hash')}, "
                            f"this one {chash}); pass --force to replace them or choose another --out")
    if force and parts.exists():
        for p in parts.glob("*.csv"):
            p.unlink()
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    ds = load_data(cfg, data_dir)
    units = plan(cfg, ds.X_test is not None)
    todo = [u for u in units if force or not (parts / f"{u.key}.csv").exists()]
    timings_path = out / "timings.json"
    timings = json.loads(timings_path.read_text()) if timings_path.exists() and not force else {}
    info = {
        "name": cfg.name, "config_file": str(cfg.source), "config_hash": chash,
        "config": cfg.to_dict(), "versions": versions(), "git_revision": git_revision(),
        "seed": cfg.training.seed, "command": " ".join(sys.argv),
        "dataset": {"name": ds.name, "n_train": int(len(ds.y_train)),
                    "n_test": None if ds.y_test is None else int(len(ds.y_test)),
                    "n_features": ds.n_features, "n_classes": ds.n_classes,
                    "source": {k: str(v) for k, v in ds.meta.items() if k in ("source", "source_files")}},
        "units": len(units), "started": started.isoformat(timespec="seconds"), "status": "running",
    }
    atomic_write_text(info_path, json.dumps(info, indent=2, default=str) + "\n")
    n_steps = lambda: int(round(cfg.training.epochs * (len(ds.y_train) if cfg.evaluation.mode == "holdout"
                                                       else len(ds.y_train) * (1 - 1 / cfg.evaluation.folds))))
    bar = tqdm(total=len(todo) * n_steps(), disable=not progress, unit="step", unit_scale=True,
               desc=f"{cfg.name} ({len(todo)}/{len(units)} runs)", dynamic_ncols=True)
    try:
        for u in todo:
            rows, tm = run_unit(cfg, ds, u, progress=bar.update if progress else None)
            atomic_write_text(parts / f"{u.key}.csv", rows_to_csv(rows))
            timings[u.key] = tm
            atomic_write_text(timings_path, json.dumps(timings, indent=1) + "\n")
    finally:
        bar.close()
    frames = [pd.read_csv(parts / f"{u.key}.csv", dtype=str, keep_default_na=False) for u in units]
    df = pd.concat(frames, ignore_index=True)
    atomic_write_text(out / "results.csv", df.to_csv(index=False, lineterminator="\n"))
    info["paper_outputs"] = [str(p.relative_to(out)) for p in write_paper_outputs(cfg, out, df, len(ds.y_train))]
    info.update({"status": "complete", "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 "wall_seconds": round(time.perf_counter() - t0, 3), "ran": len(todo),
                 "skipped": len(units) - len(todo),
                 "train_seconds_total": round(sum(t["train_seconds"] for t in timings.values()), 3),
                 "eval_seconds_total": round(sum(t["eval_seconds"] for t in timings.values()), 3)})
    atomic_write_text(info_path, json.dumps(info, indent=2, default=str) + "\n")
    return RunResult(out, df, info, skipped=len(units) - len(todo), ran=len(todo), timings=list(timings.values()))


def write_paper_outputs(cfg: ExperimentConfig, out: Path, df: pd.DataFrame, n_train=None):
    """Tables in the papers' own layouts (next to the papers' numbers) and figures, for the runs
    a paper reports: Freund & Schapire's MNIST runs with a polynomial kernel, for now."""
    written = []
    if cfg.dataset.name == "mnist" and cfg.kernel.type == "poly" and cfg.evaluation.mode == "holdout":
        from .tables import write_fs1999_tables

        written += write_fs1999_tables(out / "results.csv", out, n_train=n_train)
        if cfg.output.figures and cfg.training.curve_every:
            from .figures import plot_fs1999_figure2

            written.append(plot_fs1999_figure2(df, out / "fs1999_figure2.png",
                                               title=f"{cfg.name}: test error vs epochs"))
    return [Path(p) for p in written]


def summarize(df: pd.DataFrame, main_only_epochs=None) -> pd.DataFrame:
    """Mean and std over permutations/folds of the multiclass test error and the counts, per
    (grid point, epoch, rule): the table printed at the end of a run."""
    d = df[df["class"] == "all"].copy()
    d["value"] = d["value"].astype(float)
    d["epoch_f"] = d["epoch"].astype(float)
    if main_only_epochs is not None:
        d = d[d["epoch_f"].isin(main_only_epochs)]
    d["rule"] = np.where(d["normalized"] == "true", d["rule"] + "_norm", d["rule"])
    d.loc[d["metric"] != "test_error_pct", "rule"] = d["metric"]
    g = d.groupby(["grid_point", "params", "epoch_f", "rule"], sort=True)["value"]
    out = g.agg(["mean", "std", "count"]).reset_index().rename(columns={"epoch_f": "epoch"})
    return out
