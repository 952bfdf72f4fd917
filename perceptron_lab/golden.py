"""Golden values: a fast, real subset of the paper runs whose numbers CI guards.

``python -m perceptron_lab.golden`` (``make golden``) recomputes every case and rewrites
``results/golden/<case>.csv``; ``tests/test_golden.py`` recomputes them and fails when a cell
moves beyond its tolerance, naming the cell, the old and the new value. Refresh the golden files
only when a change of numbers is intended, and say why in the commit message.

Each golden file holds the mean over runs (permutations or folds) of every multiclass metric:
``grid_point, epoch, rule, normalized, metric, value``.

The cases (configs under ``configs/golden/``), about 15 s together on two shared cores:

* ``fs1999_d4_10k`` -- Freund & Schapire's d = 4 kernel on the first 10000 MNIST training
  examples, one permutation, to T = 1 (test errors of every rule, support vectors, mistakes);
* ``kw2007_sonar``, ``kw2007_ionosphere`` -- Khardon & Wachman's classical / longest survivor /
  voted / averaged perceptron with tau = 0 and 0.125, 10-fold cross-validation, 100 epochs;
* ``gentile2001_usps_alma`` -- Gentile's ALMA_2(alpha), alpha = 1.0 and 0.9, Gaussian kernel
  sigma = 3.5 on USPS, one epoch, two permutations (test errors, corrections, support vectors).

Tolerances (:data:`TOLERANCE`): test errors 0.15 percentage points, mistake / correction and
support-vector counts 1% (of the golden value, at least 0.01).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import pandas as pd

from .config import load_config
from .experiment import run_experiment

ROOT = Path(__file__).resolve().parents[1]
GOLDEN_DIR = ROOT / "results" / "golden"
CASES = {
    "fs1999_d4_10k": "configs/golden/fs1999_d4_10k.yaml",
    "kw2007_sonar": "configs/golden/kw2007_sonar.yaml",
    "kw2007_ionosphere": "configs/golden/kw2007_ionosphere.yaml",
    "gentile2001_usps_alma": "configs/golden/gentile2001_usps_alma.yaml",
}
# What a change may move before the guard fails: test errors in percentage points, counts
# relative. Numbers are deterministic on one machine; the slack covers float32 rounding on
# another BLAS, which can flip a near-tie mistake and shift a few later ones.
TOLERANCE = {"test_error_pct": 0.15, "mistakes": 0.01, "support_vectors": 0.01}
KEY = ["grid_point", "epoch", "rule", "normalized", "metric"]


def compute(case: str, data_dir=None) -> pd.DataFrame:
    """Run a golden case in a temporary folder; mean over runs of every multiclass metric."""
    cfg = load_config(ROOT / CASES[case])
    with tempfile.TemporaryDirectory() as tmp:
        res = run_experiment(cfg, out_dir=Path(tmp) / case, data_dir=data_dir, progress=False)
    return aggregate(res.results)


def aggregate(results: pd.DataFrame) -> pd.DataFrame:
    """The golden cells of a run's results: mean over runs of every multiclass metric."""
    df = results[results["class"].astype(str) == "all"].copy()
    df["value"] = df["value"].astype(float)
    out = df.groupby(KEY, sort=True)["value"].mean().reset_index()
    out["value"] = out["value"].round(6)
    return out


def compare(golden: pd.DataFrame, new: pd.DataFrame, case: str) -> list[str]:
    """One message per cell that moved beyond its tolerance (or appeared / disappeared)."""
    def keyed(df):
        df = df.copy()
        for k in KEY:
            df[k] = df[k].fillna("").astype(str)
        return df.set_index(KEY)["value"]

    g, n = keyed(golden), keyed(new)
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
        tol = TOLERANCE[metric] if metric == "test_error_pct" else TOLERANCE[metric] * max(abs(old), 1.0)
        if abs(cur - old) > tol + 1e-9:
            problems.append(f"{case}: cell [{cell}] moved from {old:g} to {cur:g} (tolerance ±{tol:g})")
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
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for case in args.cases:
        new = compute(case, args.data_dir)
        p = golden_path(case)
        if p.exists():
            for line in compare(read_golden(p), new, case):
                print("changed:", line)
        new.to_csv(p, index=False, lineterminator="\n")
        print(f"wrote {p.relative_to(ROOT)} ({len(new)} cells)")


if __name__ == "__main__":
    main()
