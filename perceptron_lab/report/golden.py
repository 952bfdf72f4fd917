"""Golden values: a fast, real subset of the paper runs whose numbers CI guards.

``python -m perceptron_lab.report.golden`` (``make golden``) recomputes every case and rewrites
``results/golden/<case>.csv``; ``tests/integration/test_golden.py`` recomputes them and fails when a cell
moves beyond its tolerance, naming the cell, the old and the new value. Refresh the golden files
only when a change of numbers is intended, and say why in the commit message.

Each golden file holds the mean over runs (permutations or folds) of every multiclass metric:
``grid_point, epoch, rule, normalized, metric, value``.

The cases (configs under ``configs/golden/``), under a minute together on two shared cores:

* ``fs1999_d4_10k`` -- Freund & Schapire's d = 4 kernel on the first 10000 MNIST training
  examples, one permutation, to T = 1 (test errors of every rule, support vectors, mistakes);
* ``kw2007_sonar``, ``kw2007_ionosphere`` -- Khardon & Wachman's classical / longest survivor /
  voted / averaged perceptron with tau = 0 and 0.125, 10-fold cross-validation, 100 epochs;
* ``kw2007_mnist_exact`` -- Khardon & Wachman's perceptron (eta = 1) with the linear kernel on
  the first 10000 raw MNIST training examples, two passes, tau and lambda each at two values: the
  case that is exact by construction;
* ``gentile2001_usps_alma`` -- Gentile's ALMA_2(alpha), alpha = 1.0 and 0.9, Gaussian kernel
  sigma = 3.5 on USPS, one epoch, two permutations (test errors, corrections, support vectors).

The cases below need no download (:data:`PACKAGED_CASES`: data shipped in the package, or drawn by
the package's generators), so CI guards them on any machine, in a few seconds each:

* ``kw2007_sonar``, ``kw2007_ionosphere`` (above);
* ``kw2007_alpha_bound_artificial`` -- Khardon & Wachman's alpha-bound (1, 3, 10, none) with and
  without the lambda-trick on one draw of their artificial data, eta = 1: exact by construction;
* ``kw2007_search_artificial`` -- their parameter search (tau, lambda, alpha and two joint
  searches) by 5-fold cross-validation on the same draw: exact by construction;
* ``kw2007_nested_artificial`` -- their nested 3 x 3-fold optimization with the single, joint and
  sequential (tau -> lambda) searches on the same draw: exact by construction;
* ``fs1999_d1_sonar`` -- Freund & Schapire's d = 1 kernel with every rule of their §5 (the random
  time slice included) on sonar;
* ``gentile2001_alma_p_sparse`` -- Gentile's primal ALMA_p with p = 4 and 10 on his sparse
  artificial target;
* ``budget_sonar`` -- the six budgeted kernel perceptrons at a budget of 20 on sonar.

A case with a parameter search or nested cross-validation (``evaluation.search``) also guards,
per search, rule and setting, the test error of the point(s) chosen, in a cell whose
``grid_point`` names the search and the choice (``search tau: tau=1;...``, ``nested tau->lambda:
tau=1;... x2; ...``): a different choice is a cell that disappears and one that appears, caught
whatever the tolerance. Its other cells are the outer runs' (nested: the inner folds' runs are
summarized by the choices). The spread tool (:mod:`perceptron_lab.cli.spread`) measures the
outer runs' cells, from which a choice's error comes.

Tolerances (:func:`tolerances`). The guard must hold on any machine of this kind (x86-64 with AVX2
or AVX-512, numpy's bundled OpenBLAS with any of its kernels, one or two threads), so a cell may
move by what such machines can make it move, and no more:

* a case that is exact by construction (:func:`perceptron_lab.model.exactness.construction_blockers`:
  every sum added in a fixed order, :mod:`perceptron_lab.engine.ordered`; every case but ALMA with
  p != 2) must give its golden values exactly, on every machine;
* any other case may move by :data:`SPREAD_MARGIN` times the largest move measured for it across
  the machines one CPU can stand in for (``python -m perceptron_lab.cli.spread
  configs/golden/<case>.yaml``, written to ``results/spread/golden_<case>.csv``; the variants that
  change ``training.dtype`` are left out, they are another computation), and never by less than
  one step of the cell: one test prediction in the smallest run for a test error (100 / (its test
  examples x the runs behind the mean)), one update in one run for a count (1 / the runs). A case
  that is not exact and has no measured spread is refused, with the command that measures it.
  The spread is measured against the golden file: after refreshing a case that is not exact,
  measure it again.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import pandas as pd

from perceptron_lab.config.load import load_config
from perceptron_lab.constants import source_checkout
from perceptron_lab.errors import CheckoutRequired
from perceptron_lab.run.comparison import text_column
from perceptron_lab.run.experiment import run_experiment

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_DIR = ROOT / "results" / "golden"
SPREAD_DIR = ROOT / "results" / "spread"
CASES = {
    "fs1999_d4_10k": "configs/golden/fs1999_d4_10k.yaml",
    "kw2007_sonar": "configs/golden/kw2007_sonar.yaml",
    "kw2007_ionosphere": "configs/golden/kw2007_ionosphere.yaml",
    "kw2007_mnist_exact": "configs/golden/kw2007_mnist_exact.yaml",
    "gentile2001_usps_alma": "configs/golden/gentile2001_usps_alma.yaml",
    "kw2007_alpha_bound_artificial": "configs/golden/kw2007_alpha_bound_artificial.yaml",
    "kw2007_search_artificial": "configs/golden/kw2007_search_artificial.yaml",
    "kw2007_nested_artificial": "configs/golden/kw2007_nested_artificial.yaml",
    "fs1999_d1_sonar": "configs/golden/fs1999_d1_sonar.yaml",
    "gentile2001_alma_p_sparse": "configs/golden/gentile2001_alma_p_sparse.yaml",
    "budget_sonar": "configs/golden/budget_sonar.yaml",
}
#: The cases that need no download: their data ship in the package (sonar, ionosphere) or are drawn
#: by its generators (Khardon & Wachman's artificial data, Gentile's sparse target).
PACKAGED_CASES = ("kw2007_sonar", "kw2007_ionosphere", "kw2007_alpha_bound_artificial", "kw2007_search_artificial",
                  "kw2007_nested_artificial", "fs1999_d1_sonar", "gentile2001_alma_p_sparse", "budget_sonar")
#: Metrics the golden files hold; every one but the test error is a count.
METRICS = ("test_error_pct", "mistakes", "support_vectors")
#: How many times the largest measured cross-machine move a non-exact cell may move.
SPREAD_MARGIN = 2.0
KEY = ["grid_point", "epoch", "rule", "normalized", "metric"]


class SpreadNotMeasured(RuntimeError):
    """A golden case that is not exact by construction has no measured spread to derive a
    tolerance from."""



def keyed_values(df: pd.DataFrame) -> pd.Series:
    """``value`` of golden rows indexed by :data:`KEY`, the key columns as text (missing: empty)."""
    df = df.copy()
    for k in KEY:
        df[k] = text_column(df[k])
    return df.set_index(KEY)["value"]


def compute(case: str, data_dir=None) -> pd.DataFrame:
    """Run a golden case in a temporary folder; mean over runs of every multiclass metric.

    ``attrs`` of the frame hold what :func:`tolerances` needs: ``exact_by_construction`` (from
    the run's ``run.json``), ``runs`` (runs behind each mean: permutations, times folds; nested
    cross-validation: its outer folds) and ``smallest_test`` (the fewest test examples of a run:
    the test set, or the smallest fold)."""
    cfg = load_config(ROOT / CASES[case])
    with tempfile.TemporaryDirectory() as tmp:
        res = run_experiment(cfg, out_dir=Path(tmp) / case, data_dir=data_dir, progress=False)
    out = aggregate(res.results, cfg)
    info, ds = res.run_info, res.run_info["dataset"]
    folds = cfg.evaluation.mode in ("kfold", "nested")   # nested: the outer folds
    runs = int(cfg.training.permutations) * (int(cfg.evaluation.folds) if folds else 1)
    smallest = ds["n_train"] // int(cfg.evaluation.folds) if folds else ds["n_test"]
    out.attrs.update(exact_by_construction=bool(info["exactness"]["exact_by_construction"]), runs=runs,
                     smallest_test=int(smallest))
    return out


def aggregate(results: pd.DataFrame, cfg=None) -> pd.DataFrame:
    """The golden cells of a run's results: mean over runs of every multiclass metric (nested
    cross-validation: over the outer runs), then, for a config (``cfg``) with ``evaluation.search``,
    the :func:`search_cells`."""
    df = results[results["class"].astype(str) == "all"].copy()
    if "inner_fold" in df.columns:   # nested CV: the outer runs (the inner ones lead to the choices)
        df = df[(df["inner_fold"].astype(str) == "-1") & (df["search"].astype(str) == "")]
    df["value"] = df["value"].astype(float)
    out = df.groupby(KEY, sort=True)["value"].mean().reset_index()
    if cfg is not None and cfg.evaluation.search:
        out = pd.concat([out, search_cells(results, cfg)], ignore_index=True)
    out["value"] = out["value"].round(6)
    return out


def search_cells(results: pd.DataFrame, cfg) -> pd.DataFrame:
    """Per search, setting and rule, the mean test error of the point(s) chosen
    (:func:`perceptron_lab.run.evaluation.search_summary`, or ``nested_summary`` for nested
    cross-validation), in golden cells whose ``grid_point`` names the search and the choice."""
    from perceptron_lab.run.evaluation import Grid, nested_summary, search_summary

    grid = Grid.from_config(cfg)
    nested = cfg.evaluation.mode == "nested"
    table = (nested_summary if nested else search_summary)(results, grid, cfg)
    rows = []
    for r in table.to_dict("records"):
        setting = ";".join(f"{k}={r[k]}" for k in grid.setting_keys)
        choice = r["choices"] if nested else r["chosen"]
        rows.append({"grid_point": f"{'nested' if nested else 'search'} {r['search']}: "
                                   f"{setting + ' ' if setting else ''}{choice}",
                     "epoch": str(r["epoch"]), "rule": r["rule"], "normalized": r["normalized"],
                     "metric": "test_error_pct", "value": 100.0 - float(r["accuracy_pct"])})
    return pd.DataFrame(rows, columns=KEY + ["value"])


def measured_spread(case: str) -> dict | None:
    """The largest move of each metric measured for ``case`` across machine variants
    (``results/spread/golden_<case>.csv``): test errors in points, counts relative to the golden
    value; None when the case was not measured."""
    path = SPREAD_DIR / f"golden_{case}.csv"
    if not path.exists():
        return None
    df = pd.read_csv(path, keep_default_na=False)
    df = df[(df["file"] == f"results/golden/{case}.csv") & ~df["variant"].astype(str).str.contains("dtype")]
    if df.empty:
        return None
    return {"test_error_pct": float(df["max_abs_diff_test_error_pct"].max()),
            "counts_relative": float(df["max_rel_diff_counts"].max()),
            "variants": sorted(set(df["variant"]))}


def tolerances(case: str, exact: bool, runs: int, smallest_test: int) -> dict:
    """How far each metric of ``case`` may move (test error: points; counts: relative to the
    golden value, with an absolute floor): 0 when the case is exact by construction, otherwise
    :data:`SPREAD_MARGIN` times the measured spread, at least one step of the cell.

    Returns ``{metric: (relative, absolute floor)}``; a cell may move by
    ``max(relative * |golden value| (counts) or relative (test error), floor)``."""
    if exact:
        return {m: (0.0, 0.0) for m in METRICS}
    spread = measured_spread(case)
    if spread is None:
        raise SpreadNotMeasured(
            f"{CASES[case]}: not exact by construction and its cross-machine spread was not measured; "
            f"run `python -m perceptron_lab.cli.spread {CASES[case]}` to measure it")
    # one prediction of the smallest run moves a mean test error by this much; one update, a count
    err_step, count_step = 100.0 / max(smallest_test * runs, 1), 1.0 / max(runs, 1)
    tol = {"test_error_pct": (SPREAD_MARGIN * spread["test_error_pct"], err_step)}
    for m in METRICS[1:]:
        tol[m] = (SPREAD_MARGIN * spread["counts_relative"], count_step)
    return tol


def compare(golden: pd.DataFrame, new: pd.DataFrame, case: str, tol: dict | None = None) -> list[str]:
    """One message per cell that moved beyond its tolerance (or appeared / disappeared).

    ``tol`` is :func:`tolerances`' answer; without it, the one for ``new.attrs`` (as
    :func:`compute` sets them)."""
    if tol is None:
        a = new.attrs
        tol = tolerances(case, a["exact_by_construction"], a["runs"], a["smallest_test"])
    g, n = keyed_values(golden), keyed_values(new)
    problems = []
    for key in sorted(set(g.index) | set(n.index)):
        cell = ", ".join(f"{k}={v}" for k, v in zip(KEY, key))
        if key not in n.index:
            problems.append(f"{case}: cell [{cell}] is in the golden file but no longer computed")
            continue
        if key not in g.index:
            problems.append(f"{case}: cell [{cell}] is new (not in the golden file)")
            continue
        old, cur = float(g[key]), float(n[key])
        metric = key[KEY.index("metric")]
        if metric not in tol:
            problems.append(f"{case}: cell [{cell}] has a metric the guard has no tolerance for")
            continue
        rel, floor = tol[metric]
        allowed = max(rel if metric == "test_error_pct" else rel * abs(old), floor)
        # golden values are rounded to 6 decimals: a move below that is no move
        if abs(cur - old) > allowed + 1e-6:
            problems.append(f"{case}: cell [{cell}] moved from {old:g} to {cur:g} (tolerance ±{allowed:g})")
    return problems


def golden_path(case: str) -> Path:
    return GOLDEN_DIR / f"{case}.csv"


def read_golden(path) -> pd.DataFrame:
    return pd.read_csv(path, dtype={k: str for k in KEY}, keep_default_na=False).astype({"value": float})


def main(argv=None):
    ap = argparse.ArgumentParser(description="Recompute the golden values CI guards.")
    ap.add_argument("cases", nargs="*", default=list(CASES))
    ap.add_argument("--data-dir", default=os.environ.get("PLAB_DATA"))
    args = ap.parse_args(argv)
    if source_checkout() is None:   # the golden values are the clone's results/golden/
        exc = CheckoutRequired("python -m perceptron_lab.report.golden (make golden)")
        print(f"plab: error: {exc}", file=sys.stderr)
        return exc.exit_code
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for case in args.cases:
        new = compute(case, args.data_dir)
        p = golden_path(case)
        if p.exists():
            try:
                for line in compare(read_golden(p), new, case):
                    print("changed:", line)
            except SpreadNotMeasured as exc:
                print(f"not compared: {exc}")
        new.to_csv(p, index=False, lineterminator="\n")
        print(f"wrote {p.relative_to(ROOT)} ({len(new)} cells)")


if __name__ == "__main__":
    sys.exit(main())
