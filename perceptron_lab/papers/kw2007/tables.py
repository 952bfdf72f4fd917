"""Our results next to Khardon & Wachman (2007), Tables 2-7, and their Figure 4.

Input is a run folder of a ``configs/kw2007/table<N>*.yaml`` config: the long results
(``results.csv``) and the config. Each table has a comparison (one row per printed cell: the
paper's value, ours, the difference, the tolerance and whether ours is within it) and a layout
(the printed arrangement, each cell ``ours (paper)``), written as CSV and Markdown:

* Table 2 -- dominance counts of voted (V), classical (C) and longest survivor (LS) over the
  artificial data sets, per noise rate (mean 10-fold CV accuracies, no variant).
* Tables 3 and 4 -- parameter search: the best mean accuracy per column, the column's inactive
  values excluded (:func:`perceptron_lab.run.evaluation.search_summary`).
* Table 5 -- Adult: accuracy and standard deviation by training-set size and tau.
* Tables 6 and 7 -- parameter optimization by nested cross-validation, mean ± the 95% T-interval
  (:func:`perceptron_lab.run.evaluation.nested_summary`); Table 6 adds the SVM L1 / L2 soft-margin
  baselines (:mod:`perceptron_lab.papers.kw2007.svm`, best of the paper's grids on the same outer folds).

Comparisons use the schema of :mod:`perceptron_lab.run.comparison` (``ours_mean``, ``ours_std``,
``n_runs``, ``tolerance``, ``within``, ``in_scope`` ...) plus ``dataset``, ``paper_ci`` (the
paper's 95% half-width), ``paper_sd`` (the paper's standard deviation, Table 5), ``ours_ci`` (ours)
and ``detail`` (the chosen parameters), then ``two_sample_consistent`` (Welch's check against the
paper's printed spread, :func:`perceptron_lab.run.comparison.two_sample_consistent`).

Tolerance: an accuracy is *within* when it lies in the paper's 95% interval where the paper
prints one (Table 6), otherwise when it is within :data:`ACC_TOL_PP` percentage points of the
paper. Standard deviations (Table 5) and dominance counts (Table 2) are shown next to the paper's
but are not scored (no tolerance, ``in_scope`` false): the paper gives no interval for them, and
it reports Table 2 only as who beats whom "because the variance in actual results is quite large"
(section 4) -- a count of data sets on which one rule's mean accuracy beats another's flips with
any small change of the underlying accuracies. :func:`~.layout.table2_claims` compares the paper's own
summary of Table 2 instead.

The printed arrangement, the Markdown and the files are written by :mod:`.layout`.

Several configs fill one paper table (e.g. Table 3: the UCI block, USPS and MNIST); each run writes
its own rows, and :func:`~perceptron_lab.papers.kw2007.layout.combine_kw2007` (``python -m perceptron_lab.papers.kw2007.layout results/kw2007``)
merges every run folder below a directory into whole tables.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from perceptron_lab.run.comparison import (
    CORE_COLUMNS,
    SAMPLING_COLUMNS,
    TWO_SAMPLE_COLUMNS,
    two_sample_consistent,
)
from perceptron_lab.run.evaluation import (
    TIE_TOL_PP,
    Grid,
    final_epoch,
    nested_summary,
    search_summary,
    t_interval,
)
from perceptron_lab.run.reference import reference_table
from perceptron_lab.run.store import atomic_write_text, read_back_csv

#: Artificial data sets per noise rate behind each Table 2 count (3 f x 5 M x 2 seeds).
TABLE2_SETS_PER_NOISE = 30


#: Tolerance (percentage points) for accuracies the paper prints without an interval.
ACC_TOL_PP = 2.0
_EPS = 1e-9

RULE_NAMES = {"last": "Last", "longest": "Longest", "vote": "Voted"}
RULE_ORDER = ("Last", "Longest", "Voted")
#: Plan labels (:class:`perceptron_lab.run.evaluation.SearchPlan`) -> the paper's column headers.
COLUMN_NAMES = {"nothing": "Nothing", "tau": "tau", "lambda": "lambda", "alpha": "alpha",
                "tau x lambda": "tau x lambda", "tau x alpha": "tau x alpha",
                "tau->alpha": "tau->alpha", "tau->lambda": "tau->lambda"}
COLUMNS = {
    3: ("Baseline", "Nothing", "tau", "lambda", "alpha", "tau x lambda", "tau x alpha"),
    4: ("Nothing", "tau", "lambda", "alpha", "tau x lambda", "tau x alpha"),
    6: ("Nothing", "tau", "lambda", "alpha", "tau x alpha", "tau x lambda", "tau->alpha", "tau->lambda",
        "SVM L1", "SVM L2"),
    7: ("Nothing", "tau", "lambda", "tau x lambda", "tau->lambda"),
}
TABLE2_COMPARISONS = ("V > C", "V > LS", "LS > C", "LS > V", "C > LS", "C > V", "V = LS = C")
TABLE_TITLES = {
    2: "Table 2: noise vs dominance over the artificial data (V = voted, C = classical, LS = longest survivor)",
    3: "Table 3: parameter search on UCI and other data sets (best 10-fold CV accuracy, %)",
    4: "Table 4: parameter search on artificial data, f = 50, M = 0.05 (best 10-fold CV accuracy, %)",
    5: "Table 5: Adult, accuracy and standard deviation by training-set size and tau (%)",
    6: "Table 6: parameter optimization (nested 10-fold CV), mean accuracy ± 95% T-interval (%)",
    7: "Table 7: parameter optimization on the large data sets (fixed test split), accuracy (%)",
}

COMPARISON_COLUMNS = (CORE_COLUMNS + ["dataset", "paper_ci", "paper_sd", "ours_ci", "detail"] + SAMPLING_COLUMNS
                      + TWO_SAMPLE_COLUMNS)

#: Grid settings whose values are independent draws of one experiment: of the data set (the
#: artificial generator's seed), of the cross-validation folds and so the training orders (the
#: fold seed), or of the training order alone on a fixed split (the training seed, Table 7). The
#: paper reports one draw per cell, so a cell is our mean ± sd over draws of the value each draw
#: gives, and the central 95% of those values is what sampling alone could give.
REPLICATE_KEYS = ("dataset.params.seed", "evaluation.fold_seed", "training.seed")
#: What a replicate key re-samples, as the comparison's ``sampling_basis`` names it.
REPLICATE_BASIS = {"dataset.params.seed": "draws", "evaluation.fold_seed": "draws", "training.seed": "orders"}


def table_number(cfg) -> int | None:
    """The paper table a config fills, from its ``paper: kw2007/table<N>``."""
    m = re.fullmatch(r"kw2007/table(\d+)", cfg.paper or "")
    return int(m.group(1)) if m else None


# ----------------------------------------------------------------------------- helpers


def _dataset_key(cfg, values: dict) -> str:
    """The reference tables' data-set key of a grid point (its setting values over the config)."""
    name = values.get("dataset.name", cfg.dataset.name)
    if name == "kw_artificial":
        p = dict(cfg.dataset.params or {})
        for k, v in values.items():
            if k.startswith("dataset.params."):
                p[k.split(".", 2)[2]] = v
        return f"artificial_f{p.get('f'):g}_N{p.get('noise'):g}_M{p.get('margin'):g}"
    return str(name)


def _kernel_key(cfg) -> str:
    return f"poly_degree{cfg.kernel.degree}" if cfg.kernel.type == "poly" else cfg.kernel.type


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _within(ours, paper, tol):
    if any(x is None or (isinstance(x, float) and math.isnan(x)) for x in (ours, paper, tol)):
        return pd.NA
    return bool(abs(ours - paper) <= tol + _EPS)


def _cmp_row(table, dataset, block, row, column, paper, paper_ci, ours, ours_sd=math.nan, ours_ci=math.nan,
             n=0, tolerance=None, detail="", metric="accuracy_pct", in_scope=None, sampling=None):
    """One cell. ``tolerance`` defaults to the paper's interval, else ACC_TOL_PP; a cell is in
    scope (scored) when it has a tolerance unless ``in_scope`` says otherwise. ``sampling`` is
    (low, high, basis) of the values sampling alone gives (default: our mean ± our T-interval
    over folds, basis ``folds``; none without an interval)."""
    if sampling is None:
        ci = _num(ours_ci)
        sampling = ((ours - ci, ours + ci, "folds") if not math.isnan(ci) and not math.isnan(_num(ours))
                    else (math.nan, math.nan, ""))
    if tolerance is None:
        tolerance = paper_ci if not math.isnan(_num(paper_ci)) else ACC_TOL_PP
    if in_scope is None:
        in_scope = not math.isnan(_num(tolerance))
    diff = ours - paper if not (math.isnan(_num(ours)) or math.isnan(_num(paper))) else math.nan
    return {"table": table, "block": block, "row": row, "column": column, "metric": metric,
            "paper": paper, "ours_mean": ours, "ours_std": ours_sd, "n_runs": n, "diff": diff,
            "tolerance": tolerance, "within": _within(ours, paper, tolerance), "in_scope": bool(in_scope),
            "dataset": dataset, "paper_ci": paper_ci, "paper_sd": math.nan, "ours_ci": ours_ci, "detail": detail,
            "sampling_lo": sampling[0], "sampling_hi": sampling[1], "sampling_basis": sampling[2]}


def _finish(rows) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
    df["within"] = df["within"].astype("boolean")
    df["in_scope"] = df["in_scope"].astype(bool)
    for c in ("paper", "paper_ci", "ours_mean", "ours_std", "ours_ci", "diff", "tolerance", "sampling_lo",
              "sampling_hi"):
        df[c] = df[c].astype(float)
    df["n_runs"] = df["n_runs"].astype(int)
    df["paper_sd"] = df["paper_sd"].astype(float)
    df["two_sample_consistent"] = two_sample_consistent(df)
    return df


def _paper_lookup(table: int) -> dict:
    ref = reference_table(f"kw2007_table{table}")
    out = {}
    for r in ref.to_dict("records"):
        ci = _num(r.get("ci")) if "ci" in r else math.nan
        if table == 3:
            key = (r["dataset"], r["algorithm"] if isinstance(r["algorithm"], str) else "",
                   r["variant_column"])
        elif table == 4:
            key = (f"{r['noise']:g}", r["algorithm"], r["variant_column"])
        elif table == 6:
            key = (r["dataset"], r["algorithm"], r["variant_column"])
        elif table == 7:
            key = (r["dataset"], r["kernel"], r["algorithm"], r["variant_column"])
        elif table == 5:
            key = (f"{r['tau']:g}", int(r["n_examples"]), r["algorithm"], r["metric"])
        elif table == 2:
            key = (f"{r['noise']:g}", r["comparison"])
        else:
            continue
        out[key] = (float(r["value"]), ci)
    return out


def _point_frame(df: pd.DataFrame, epoch: str) -> pd.DataFrame:
    """Mean accuracy per (grid point, rule) over runs, and the per-run accuracies."""
    m = (df["metric"] == "test_error_pct") & (df["class"] == "all") & (df["epoch"] == epoch) \
        & (df["normalized"] == "false")
    if "inner_fold" in df.columns:
        m &= (df["inner_fold"] == "-1") & (df["search"] == "")
    d = df.loc[m, ["grid_point", "fold", "permutation", "rule", "value"]].copy()
    d["acc"] = 100.0 - d["value"].astype(float)
    d["grid_point"] = d["grid_point"].astype(int)
    d = d.sort_values(["grid_point", "rule", "fold", "permutation"], kind="stable")
    return d


# ----------------------------------------------------------------------------- tables


def table2_comparison(cfg, df: pd.DataFrame) -> pd.DataFrame:
    """Dominance counts per noise rate: for every data set (grid point), compare the mean CV
    accuracies of voted, classical and longest survivor (ties within TIE_TOL_PP)."""
    grid = Grid.from_config(cfg)
    d = _point_frame(df, final_epoch(cfg))
    acc = d.groupby(["grid_point", "rule"])["acc"].mean().to_dict()
    counts: dict = {}
    n_sets: dict = {}
    for g, values in enumerate(grid.points):
        noise = values.get("dataset.params.noise", (cfg.dataset.params or {}).get("noise"))
        key = f"{float(noise):g}"
        try:
            V, C, LS = acc[(g, "vote")], acc[(g, "last")], acc[(g, "longest")]
        except KeyError:
            continue
        gt = lambda a, b: a > b + TIE_TOL_PP  # noqa: E731
        eq = lambda a, b: abs(a - b) <= TIE_TOL_PP  # noqa: E731
        res = {"V > C": gt(V, C), "V > LS": gt(V, LS), "LS > C": gt(LS, C), "LS > V": gt(LS, V),
               "C > LS": gt(C, LS), "C > V": gt(C, V), "V = LS = C": eq(V, LS) and eq(LS, C)}
        n_sets[key] = n_sets.get(key, 0) + 1
        for c, hit in res.items():
            counts[(key, c)] = counts.get((key, c), 0) + int(hit)
    paper = _paper_lookup(2)
    rows = []
    for key in sorted(n_sets, key=float):
        for c in TABLE2_COMPARISONS:
            p, _ = paper.get((key, c), (math.nan, math.nan))
            rows.append(_cmp_row(2, "artificial_all_f_M", f"noise={key}", c, "n_datasets", p, math.nan,
                                 float(counts.get((key, c), 0)), n=n_sets[key], tolerance=math.nan,
                                 detail=f"{n_sets[key]} data sets", metric="n_datasets", in_scope=False))
    return _finish(rows)


def table34_comparison(cfg, df: pd.DataFrame, table: int, data_dir=None) -> pd.DataFrame:
    """Parameter search cells (Table 3 by data set, Table 4 by noise rate)."""
    grid = Grid.from_config(cfg)
    summ = search_summary(df, grid, cfg)
    summ = summ[summ["normalized"] == "false"]
    paper = _paper_lookup(table)
    cells: dict = {}
    for r in summ.to_dict("records"):
        values = _typed_values({k: r[k] for k in grid.setting_keys})
        alg = RULE_NAMES.get(r["rule"])
        col = COLUMN_NAMES.get(r["search"])
        if alg is None or col is None:
            continue
        if table == 3:
            ds = _dataset_key(cfg, values)
            block, key = ds, (ds, alg, col)
        else:
            noise = values.get("dataset.params.noise", (cfg.dataset.params or {}).get("noise"))
            ds = "artificial_f50_M0.05"
            block, key = f"N={float(noise):g}", (f"{float(noise):g}", alg, col)
        cells.setdefault((ds, block, alg, col, key), []).append(
            (r["accuracy_pct"], r["sd_pct"], r["ci_pct"], r["n_runs"], r["chosen"], _replicate(values)))
    rows = []
    for (ds, block, alg, col, key), draws in cells.items():
        p, _ = paper.get(key, (math.nan, math.nan))
        rows.append(_cell_over_draws(table, ds, block, alg, col, p, math.nan, draws))
    if table == 3:
        for ds in dict.fromkeys(x["dataset"] for x in rows):
            p, _ = paper.get((ds, "", "Baseline"), (math.nan, math.nan))
            ours = _baseline(cfg, ds, data_dir)
            if math.isnan(p) and math.isnan(ours):
                continue
            rows.append(_cmp_row(3, ds, ds, "Last", "Baseline", p, math.nan, ours, n=0 if math.isnan(ours) else 1,
                                 detail="majority class"))
    return _finish(rows)


def _baseline(cfg, name: str, data_dir=None) -> float:
    """Percentage of the majority class (Table 1's Baseline) of a registry data set."""
    from perceptron_lab.config.load import with_overrides
    from perceptron_lab.run.inputs import load_data

    try:
        ds = load_data(with_overrides(cfg, {"dataset.name": name}), data_dir)
    except Exception:  # noqa: BLE001 - a missing data set leaves the cell empty
        return math.nan
    if ds.n_classes > 2:
        return math.nan
    y = np.asarray(ds.y_train)
    return 100.0 * float(np.max(np.unique(y, return_counts=True)[1])) / len(y)


def table5_comparison(cfg, df: pd.DataFrame) -> pd.DataFrame:
    """Adult by training-set size and tau: accuracy (2 pp tolerance) and the standard deviation
    over the folds (shown, not compared).

    One run (no replicate setting in the grid): the cell is the mean over the folds, its sampling
    range the T-interval over the folds. Several runs over a replicate setting
    (:data:`REPLICATE_KEYS`; Table 5 uses ``training.seed``, which redraws each fold's N examples and
    its training order, :func:`perceptron_lab.run.units.fold_subsample`): the accuracy cell is the mean
    over the draws, ``ours_std`` and ``n_runs`` their standard deviation and number, and sampling the
    central 95% of the draws' values (:func:`_cell_over_draws`), the range a single run such as the
    paper's falls in; ``ours_ci`` is the T-interval over the folds of the per-fold accuracies averaged
    over the draws, which the two-sample check reads with the number of folds (the paper's spread is
    over its 10 folds). The std cell is the mean over the draws of each draw's standard deviation over
    its folds, the quantity the paper prints for its one run.
    """
    grid = Grid.from_config(cfg)
    d = _point_frame(df, final_epoch(cfg))
    paper = _paper_lookup(5)
    conf = cfg.evaluation.confidence
    cells: dict = {}
    for (g, rule), part in d.groupby(["grid_point", "rule"], sort=True):
        alg = RULE_NAMES.get(rule)
        if alg is None:
            continue
        v = grid.points[g]
        tau = f"{float(v.get('algorithm.tau', cfg.algorithm.tau)):g}"
        n = int(v.get("evaluation.fold_train_size", cfg.evaluation.fold_train_size)
                or v.get("dataset.train_size", cfg.dataset.train_size or 0))
        cells.setdefault((tau, n, alg), []).append((part, _replicate(v)))
    rows, over_draws, n_folds = [], [], []
    for (tau, n, alg), draws in cells.items():
        pa, _ = paper.get((tau, n, alg, "accuracy_pct"), (math.nan, math.nan))
        ps, _ = paper.get((tau, n, alg, "std_dev"), (math.nan, math.nan))
        block = f"tau={tau}"
        per = [t_interval(part["acc"].to_numpy(), conf) for part, _ in draws]
        if len(draws) == 1:
            (mean, sd, ci), (part, _) = per[0], draws[0]
            acc = _cmp_row(5, "adult", block, alg, f"n={n} accuracy", pa, math.nan, mean, sd, ci, n=len(part))
            std = _cmp_row(5, "adult", block, alg, f"n={n} std", ps, math.nan, sd, n=len(part),
                           tolerance=math.nan, metric="std_dev_pct", in_scope=False)
        else:
            acc = _cell_over_draws(5, "adult", block, alg, f"n={n} accuracy", pa, math.nan,
                                   [(m, s, c, len(part), "", rep) for (m, s, c), (part, rep) in zip(per, draws)])
            folds = pd.concat([part for part, _ in draws]).groupby(["fold", "permutation"])["acc"].mean()
            acc["ours_ci"] = t_interval(folds.to_numpy(), conf)[2]
            seeds = sorted(int(float(rep[1])) for _, rep in draws)
            vals = np.array([m for m, _, _ in per], dtype=float)
            acc["sampling_basis"] = "draws"
            acc["detail"] = (f"{len(draws)} draws of each fold's {n} examples and training order "
                             f"({draws[0][1][0].rsplit('.', 1)[-1]} {seeds[0]}-{seeds[-1]}): {vals.min():.1f} to {vals.max():.1f}")
            sds = np.array([s for _, s, _ in per], dtype=float)
            std = _cmp_row(5, "adult", block, alg, f"n={n} std", ps, math.nan, float(np.nanmean(sds)), n=len(draws),
                           tolerance=math.nan, detail=f"mean over {len(draws)} draws of the sd over the folds",
                           metric="std_dev_pct", in_scope=False)
            over_draws.append(len(rows))
            n_folds.append(len(folds))
        # the paper prints Table 5's spread as a standard deviation: kept beside the cell for the
        # two-sample check (perceptron_lab.run.comparison)
        rows.append({**acc, "paper_sd": ps})
        rows.append(std)
    out = _finish(rows)
    if over_draws:   # the two-sample check over the folds, on both sides (the paper's 10, ours averaged)
        alt = out.copy()
        alt.loc[over_draws, "n_runs"] = n_folds
        out.loc[over_draws, "two_sample_consistent"] = two_sample_consistent(alt).loc[over_draws]
    return out


def table67_comparison(cfg, df: pd.DataFrame, table: int, svm: pd.DataFrame | None = None) -> pd.DataFrame:
    """Parameter optimization cells (Table 6 with the paper's intervals, Table 7 without)."""
    grid = Grid.from_config(cfg)
    summ = nested_summary(df, grid, cfg)
    summ = summ[summ["normalized"] == "false"]
    paper = _paper_lookup(table)
    kernel = _kernel_key(cfg)
    cells: dict = {}
    for r in summ.to_dict("records"):
        values = _typed_values({k: r[k] for k in grid.setting_keys})
        alg = RULE_NAMES.get(r["rule"])
        col = COLUMN_NAMES.get(r["search"])
        if alg is None or col is None:
            continue
        ds = _dataset_key(cfg, values)
        if table == 6:
            key, block = (ds, alg, col), ds
        else:
            key, block = (ds, kernel, alg, col), f"{ds}, {kernel}"
        cells.setdefault((ds, block, alg, col, key), []).append(
            (r["accuracy_pct"], r["sd_pct"], r["ci_pct"], r["n_folds"], r["choices"], _replicate(values)))
    rows = []
    for (ds, block, alg, col, key), draws in cells.items():
        p, pci = paper.get(key, (math.nan, math.nan))
        rows.append(_cell_over_draws(table, ds, block, alg, col, p, pci, draws))
    if table == 6 and svm is not None:
        for s in svm.itertuples(index=False):
            col = "SVM L1" if s.kind == "l1" else "SVM L2"
            p, pci = paper.get((s.dataset, "SVM", col), (math.nan, math.nan))
            what = "C" if s.kind == "l1" else "lambda"
            rows.append(_cmp_row(6, s.dataset, s.dataset, "SVM", col, p, pci, s.accuracy_pct, s.sd_pct, s.ci_pct,
                                 s.n_folds, detail=f"best {what}={s.value:g}; {s.n_capped} grid value(s) "
                                 "not converged" if s.n_capped else f"best {what}={s.value:g}"))
    return _finish(rows)


def _cell_over_draws(table, ds, block, alg, col, paper, paper_ci, draws) -> dict:
    """A cell from the values of one or more independent draws of its data set.

    ``draws``: (accuracy, sd, ci, n, detail, seed) per draw. With one draw, the cell is that
    draw's value (sampling: its T-interval over folds). With several (:data:`REPLICATE_KEYS`), the
    cell is the mean over draws, its sd the sample standard deviation over draws, ``n_runs`` the
    number of draws, and sampling the central 95% of the draws' values (percentiles 2.5 and 97.5,
    linear interpolation): the range a single draw such as the paper's falls in 95% of the time.
    """
    if len(draws) == 1:
        acc, sd, ci, n, detail, _ = draws[0]
        return _cmp_row(table, ds, block, alg, col, paper, paper_ci, acc, sd, ci, n, detail=detail)
    vals = np.array([d[0] for d in draws], dtype=float)
    vals = vals[~np.isnan(vals)]
    if vals.size == 0:
        return _cmp_row(table, ds, block, alg, col, paper, paper_ci, math.nan, n=0)
    lo, hi = np.percentile(vals, [2.5, 97.5]) if vals.size > 1 else (vals[0], vals[0])
    seeds = sorted(int(float(d[5][1])) for d in draws if d[5] is not None)
    key = draws[0][5][0] if draws[0][5] is not None else ""
    what = key.rsplit(".", 1)[-1] if key else "seed"
    basis = REPLICATE_BASIS.get(key, "draws")
    noun = "training orders" if basis == "orders" else "draws"
    detail = (f"{vals.size} {noun} ({what} {seeds[0]}-{seeds[-1]}): {vals.min():.1f} to {vals.max():.1f}"
              if seeds else f"{vals.size} {noun}")
    sd = float(vals.std(ddof=1)) if vals.size > 1 else math.nan
    return _cmp_row(table, ds, block, alg, col, paper, paper_ci, float(vals.mean()), sd, math.nan, int(vals.size),
                    detail=detail, sampling=(float(lo), float(hi), basis))


def _replicate(values: dict):
    """(key, value) of the replicate setting of a grid point's settings, or None."""
    return next(((k, values[k]) for k in REPLICATE_KEYS if k in values), None)


def _typed_values(text_values: dict) -> dict:
    """Setting values back from their text form (generator arguments as numbers)."""
    out = {}
    for k, v in text_values.items():
        try:
            out[k] = float(v) if k.startswith("dataset.params.") else v
        except (TypeError, ValueError):
            out[k] = v
    return out


def svm_baselines(cfg, data_dir=None, out: Path | None = None) -> pd.DataFrame:
    """Best-of-grid SVM L1 and L2 accuracies on the config's outer folds, per data set; cached
    as ``svm_folds.csv`` (every grid value and fold) in ``out``."""
    from perceptron_lab.config.load import with_overrides
    from perceptron_lab.run.evaluation import kfold_indices
    from perceptron_lab.run.inputs import load_data
    from perceptron_lab.papers.kw2007.svm import best_of_grid, svm_fold_errors

    grid = Grid.from_config(cfg)
    cache = out / "svm_folds.csv" if out is not None else None
    folds_df = None
    if cache is not None and cache.exists():
        read_back_csv(cache, fix=f"move {cache} away: the next run computes the SVM baselines again")
        folds_df = pd.read_csv(cache)
    frames, rows = [], []
    for s in grid.settings():
        values = dict(zip(grid.setting_keys, s))
        ucfg = with_overrides(cfg, values) if values else cfg
        name = _dataset_key(cfg, values)
        for kind in ("l1", "l2"):
            if folds_df is not None and ((folds_df["dataset"] == name) & (folds_df["kind"] == kind)).any():
                e = folds_df[(folds_df["dataset"] == name) & (folds_df["kind"] == kind)]
            else:
                ds = load_data(ucfg, data_dir)
                folds = kfold_indices(len(ds.y_train), cfg.evaluation.folds, cfg.evaluation.fold_seed)
                e = svm_fold_errors(ds.X_train, ds.y_train, folds, kind)
                e = e.assign(dataset=name, kind=kind)
            frames.append(e)
            rows.append({"dataset": name, "kind": kind, **best_of_grid(e, cfg.evaluation.confidence)})
    if cache is not None and frames:
        allf = pd.concat(frames, ignore_index=True)[["dataset", "kind", "value", "fold", "error_pct", "n_iter"]]
        atomic_write_text(cache, allf.to_csv(index=False, lineterminator="\n", float_format="%.10g"))
    return pd.DataFrame(rows, columns=["dataset", "kind", "value", "accuracy_pct", "sd_pct", "ci_pct",
                                       "n_folds", "n_capped"])


# ----------------------------------------------------------------------------- files


def kw2007_comparison(cfg, df: pd.DataFrame, out: Path | None = None, data_dir=None) -> pd.DataFrame | None:
    """The comparison a run can fill, by the table its config names (None for other configs)."""
    table = table_number(cfg)
    if table == 2:
        return table2_comparison(cfg, df)
    if table in (3, 4):
        return table34_comparison(cfg, df, table, data_dir)
    if table == 5:
        return table5_comparison(cfg, df)
    if table in (6, 7):
        svm = svm_baselines(cfg, data_dir, out) if (table == 6 and cfg.evaluation.outer == "kfold"
                                                   and _svm_wanted(cfg)) else None
        return table67_comparison(cfg, df, table, svm)
    return None


def _svm_wanted(cfg) -> bool:
    """Table 6 prints SVM baselines for the UCI data sets only (not for the artificial block)."""
    return cfg.dataset.name != "kw_artificial"


def parameter_curves(cfg, df: pd.DataFrame) -> pd.DataFrame:
    """Figure 4 data: for each setting and single parameter, the mean accuracy at each of its
    grid values with every other searched parameter inactive. Columns ``setting``, ``parameter``,
    ``value`` (text), ``position`` (index in the grid's list), ``rule``, ``accuracy_pct``."""
    from perceptron_lab.run.evaluation import _text, short_name

    grid = Grid.from_config(cfg)
    d = _point_frame(df, final_epoch(cfg))
    acc = d.groupby(["grid_point", "rule"])["acc"].mean().to_dict()
    rules = [r for r in ("last", "longest", "vote") if r in set(d["rule"])]
    rows = []
    for s in grid.settings():
        # draws of one experiment (REPLICATE_KEYS) are one curve: the mean over draws
        label = ", ".join(_text(v, k) if k == "dataset.name" else f"{short_name(k)}={_text(v, k)}"
                          for k, v in zip(grid.setting_keys, s) if k not in REPLICATE_KEYS) or cfg.dataset.name
        for key in grid.searched_keys:
            for pos, v in enumerate(cfg.evaluation.grid[key]):
                cur = dict(grid.base)
                cur[key] = v
                g = grid.find(s, cur)
                if g is None:
                    continue
                for r in rules:
                    if (g, r) in acc:
                        rows.append({"setting": label, "parameter": short_name(key), "value": _text(v, key),
                                     "position": pos, "rule": RULE_NAMES[r], "accuracy_pct": acc[(g, r)]})
    cols = ["setting", "parameter", "value", "position", "rule", "accuracy_pct"]
    out = pd.DataFrame(rows, columns=cols)
    return out.groupby(cols[:-1], sort=False, as_index=False)["accuracy_pct"].mean()[cols]
