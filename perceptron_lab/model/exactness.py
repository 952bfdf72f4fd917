"""Which results are the same on every machine, and how far the others were seen to move.

A run's numbers depend on the machine wherever a sum of non-integer floats is computed in an order
the machine chooses (a BLAS product picks its kernel and blocking by CPU and thread count; a
compiler allowed to reassociate vectorizes a sum in 4 lanes on an AVX2 CPU and in 8 on an AVX-512
one), and wherever a transcendental function comes from a library built differently for different
CPUs (glibc's ``exp`` and ``pow`` with and without fused multiply-adds, numpy's vectorized ones on
AVX-512). A perceptron's trajectory follows the sign of ``y (score - theta) - tau``; one rounding
at a near-zero margin flips an update and every later step.

The engine leaves neither to the machine (:mod:`perceptron_lab.engine.ordered`): every sum of
products is added term by term in index order, with no fused multiply-add, and the Gaussian
kernels' ``exp`` is computed by fixed operations. A run is therefore **exact by construction**:
the same bits on any machine and at any thread count. The one exception is ALMA with ``p != 2``,
whose p-norm link raises to non-integer powers by the C library's ``pow`` (correctly rounded in
nearly all cases, but not by specification); such a run may move, and :func:`exactness` says so,
with the spread measured for its config by :mod:`perceptron_lab.cli.spread` (``results/spread/``)
when there is one. ``run.json`` holds it under ``exactness`` and :func:`exactness_note` is its
one-line form for the report.
"""

from __future__ import annotations

from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
SPREAD_SUMMARY = ROOT / "results" / "spread" / "summary.csv"
#: Every committed config's exactness (``python -m perceptron_lab.cli.spread --exactness``), for runs
#: whose run.json predates the ``exactness`` entry.
EXACTNESS_TABLE = ROOT / "results" / "spread" / "exactness.csv"
#: Why a run is exact by construction.
EXACT_REASON = ("every sum is added in a fixed order, one rounded product and one rounded sum per term, and every "
                "exp is computed by fixed operations (perceptron_lab.engine.ordered): the same bits on any machine "
                "and at any thread count")


def _values(cfg, key: str, current):
    """``current`` and every value the grid gives ``key``."""
    grid = cfg.evaluation.grid or {}
    return [current, *grid.get(key, ())]


def construction_blockers(cfg, X_train=None, X_test=None) -> list[str]:
    """Why a run of ``cfg`` may depend on the machine (empty: it cannot).

    Parameters
    ----------
    cfg : ExperimentConfig
        The resolved config (its grid is read too: every value it takes must qualify).
    X_train, X_test : ndarray or None
        The features as loaded (not read: no feature makes a run machine-dependent any more; kept
        so that callers need not change).
    """
    algs = _values(cfg, "algorithm.name", cfg.algorithm.name)
    ps = [p for p in _values(cfg, "algorithm.p", getattr(cfg.algorithm, "p", None)) if p is not None]
    if "alma" in algs and any(float(p) != 2.0 for p in ps):
        odd = sorted({float(p) for p in ps if float(p) != 2.0})
        return [f"ALMA with p = {', '.join(f'{p:g}' for p in odd)} raises to non-integer powers by the C "
                "library's pow, whose last bit may differ between builds of the library"]
    return []


def _rel(config_file) -> str:
    """A run's ``config_file`` as the spread tables name it (``configs/...``, from the project root);
    ``package:NAME`` is the packaged config ``configs/NAME``."""
    text = str(config_file)
    if text.startswith("package:"):
        return "configs/" + text[len("package:"):]
    p = Path(text)
    if p.is_absolute() and p.resolve().is_relative_to(ROOT):
        p = p.resolve().relative_to(ROOT)
    return p.as_posix()


def measured_spread(config_file) -> dict | None:
    """The spread measured for ``config_file`` (``results/spread/summary.csv``), over the
    variants that change the machine (not the dtype): the largest number of rows that moved and the
    largest moves, or None when it was not measured."""
    if config_file is None or not SPREAD_SUMMARY.exists():
        return None
    import pandas as pd

    try:
        df = pd.read_csv(SPREAD_SUMMARY, keep_default_na=False)
    except (OSError, ValueError):
        return None
    rel = _rel(config_file)
    df = df[(df["config"] == rel) & ~df["variant"].astype(str).str.contains("dtype")]
    if df.empty:
        return None
    return {"variants": sorted(set(df["variant"])), "files": sorted(set(df["file"])),
            "rows_compared": int(df["rows_compared"].max()), "rows_differing": int(df["rows_differing"].max()),
            "max_abs_diff_test_error_pct": float(df["max_abs_diff_test_error_pct"].max()),
            "max_abs_diff_counts": float(df["max_abs_diff_counts"].max()),
            "source": "results/spread/summary.csv"}


def exactness(cfg, X_train, X_test=None) -> dict:
    """``run.json``'s ``exactness`` entry: whether the run is exact by construction, why, and the
    spread measured for its config across BLAS kernels, CPU code and thread counts."""
    why = construction_blockers(cfg, X_train, X_test)
    reason = (EXACT_REASON if not why else "; ".join(why))
    return {"exact_by_construction": not why, "reason": reason,
            "measured_spread": measured_spread(getattr(cfg, "source", None))}


def _from_table(config_file) -> dict | None:
    """A committed config's ``exactness`` entry from results/spread/exactness.csv."""
    if not config_file or not EXACTNESS_TABLE.exists():
        return None
    import pandas as pd

    try:
        df = pd.read_csv(EXACTNESS_TABLE, keep_default_na=False)
    except (OSError, ValueError):
        return None
    rel = _rel(config_file)
    row = df[df["config"] == rel]
    if row.empty:
        return None
    r = row.iloc[0]
    return {"exact_by_construction": str(r["exact_by_construction"]) == "True", "reason": r["reason"],
            "measured_spread": measured_spread(rel)}


def exactness_note(info: dict) -> str:
    """One line for the report from a run.json: whether its numbers are exact by construction and
    the spread measured for its config (from results/spread/exactness.csv for a run.json written
    before the ``exactness`` entry; empty when neither says)."""
    if not isinstance(info, dict):
        return ""
    ex = info.get("exactness")
    if not isinstance(ex, dict):
        ex = _from_table(info.get("config_file"))
    if not isinstance(ex, dict):
        return ""
    if ex.get("exact_by_construction"):
        return "exact by construction (the same bits on any machine and thread count): " + str(ex.get("reason", ""))
    m = ex.get("measured_spread")
    moved = ("spread not measured" if not m else
             f"measured across {len(m['variants'])} CPU/BLAS variants: up to {m['rows_differing']} of "
             f"{m['rows_compared']} rows move, by up to {m['max_abs_diff_test_error_pct']:g} points "
             f"(counts by up to {m['max_abs_diff_counts']:g})")
    return f"not exact by construction ({ex.get('reason', '')}); {moved}"


__all__ = ["construction_blockers", "exactness", "exactness_note", "measured_spread"]
