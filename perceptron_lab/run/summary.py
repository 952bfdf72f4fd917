"""What ``plab run`` prints at the end: one metric convention, test error in %.

* the prediction rules in the config's order, then the counts (mistakes, support vectors), each
  as mean ± standard deviation over runs;
* for parameter searches, the grid point each plan chose and its cross-validated error
  (:func:`search_lines`): k-fold searches choose on the same folds they report (the figure is
  optimistic), nested runs on inner folds (the inner-CV error), reported on the outer folds.

``search.csv`` and ``nested.csv`` carry the same convention (:func:`with_error`): ``error_pct``
first, then ``accuracy_pct`` (= 100 - error), kept because Khardon & Wachman report accuracy.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from perceptron_lab.run.store import read_back_csv

COUNT_ROWS = ("mistakes", "support_vectors")


def rule_order(rows, rules=()) -> list[str]:
    """Summary rows: the error rules (the config's order, each followed by its normalized form),
    then anything else, then the counts."""
    rows = list(rows)
    # a config may name a normalized rule itself (Freund & Schapire's list does): once each
    first = list(dict.fromkeys(r for base in rules for r in (base, f"{base}_norm") if r in rows))
    rest = [r for r in rows if r not in first and r not in COUNT_ROWS]
    return first + rest + [r for r in COUNT_ROWS if r in rows]


def with_error(table: pd.DataFrame) -> pd.DataFrame:
    """A search or nested summary with ``error_pct`` (100 - accuracy) before ``accuracy_pct``."""
    if "accuracy_pct" not in table.columns:
        return table
    t = table.copy()
    t.insert(list(t.columns).index("accuracy_pct"), "error_pct", 100.0 - t["accuracy_pct"].astype(float))
    return t


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def search_lines(out_dir) -> list[str]:
    """The chosen grid points of a run's searches with their cross-validated error, from
    ``search.csv`` (k-fold) or ``nested.csv`` and ``results.csv`` (nested); empty without a search."""
    out = Path(out_dir)
    lines = []
    s = out / "search.csv"
    if s.is_file():
        t = read_back_csv(s, ["search", "rule"])
        lines.append("parameter search (the same folds chose and report the point, so its error is optimistic): "
                     "the chosen point per plan and rule, its cross-validated test error %")
        for _, r in t.iterrows():
            err = _num(r.get("error_pct", 100.0 - _num(r.get("accuracy_pct"))))
            rule = r["rule"] + ("_norm" if str(r.get("normalized", "")).lower() == "true" else "")
            lines.append(f"  {r['search']:12s} {rule:12s} {r.get('chosen') or '(all inactive)':40s} "
                         f"{err:6.2f} ± {_num(r.get('sd_pct')):.2f}")
    n = out / "nested.csv"
    if n.is_file():
        t = read_back_csv(n, ["search", "rule", "choices"])
        inner = _inner_errors(out)
        lines.append("nested search: the points chosen on the inner folds (how often), their mean inner-CV error % "
                     "and the outer folds' test error % of the chosen points (± the maximum-likelihood sd over "
                     "outer folds, as in nested.csv)")
        for _, r in t.iterrows():
            err = _num(r.get("error_pct", 100.0 - _num(r.get("accuracy_pct"))))
            norm = str(r.get("normalized", "")).lower() == "true"
            rule = r["rule"] + ("_norm" if norm else "")
            ie = inner.get((r["search"], r["rule"], norm))
            lines.append(f"  {r['search']:12s} {rule:12s} chosen {r['choices']}; inner-CV error "
                         f"{'?' if ie is None else format(ie, '.2f')}; outer test error {err:.2f} ± "
                         f"{_num(r.get('sd_pct')):.2f}")
    return lines


def _inner_errors(out: Path) -> dict:
    """(plan, rule, normalized) -> the mean over outer folds of the chosen point's inner-CV error."""
    res = out / "results.csv"
    if not res.is_file():
        return {}
    d = read_back_csv(res, ["metric", "rule", "normalized", "fold", "value"])
    if "search" not in d:
        return {}
    d = d[(d["search"] != "") & (d["metric"] == "inner_cv_error_pct")]
    d = d.assign(value=pd.to_numeric(d["value"], errors="coerce"), norm=d["normalized"].str.lower() == "true")
    per_fold = d.groupby(["search", "rule", "norm", "fold"])["value"].mean()
    return {k: float(v) for k, v in per_fold.groupby(level=[0, 1, 2]).mean().items()}


__all__ = ["rule_order", "with_error", "search_lines", "COUNT_ROWS"]
