"""Which results are the same on every x86-64 machine, and how far the others were seen to move.

A run's numbers depend on the machine wherever a sum of non-integer floats is computed in an order
the machine chooses: OpenBLAS picks its GEMM kernel (and blocking) by CPU and thread count, and
numba compiles its loops for the host CPU, so a reduction it may reorder (``fastmath`` reassoc, as
in the linear engine's inner products) is summed in 4 lanes on an AVX2 CPU and in 8 on an AVX-512
one. A perceptron's trajectory follows the sign of ``y (score - theta) - tau``; one rounding at a
near-zero margin flips an update and every later step.

A run is **exact by construction** when no such sum ever rounds: the perceptron (not ALMA, whose
updates are normalized, nor a budget variant) with the linear kernel on integer features (raw
pixels, 0/1 indicators; ``dataset.preprocess: none``) in float64, with an integer learning rate, so
that every weight, score and vote is an integer below 2^53 whatever the order of its sum (the
threshold, margin and lambda term are added in a fixed order by the engine's scalar loop), and
only rules without a norm (``last``, ``longest``, ``vote``, ``avg``, ``random``). Such a run gives
the same bits on any machine (float32 GEMMs stand in for float64 ones only where they are exact:
:func:`perceptron_lab.engine.kernels.matmul_exact32`).

Every other run may move. :func:`exactness` says which case a run is and why, with the spread
measured for its config by :mod:`perceptron_lab.cli.spread` (``results/spread/``) when there is one;
``run.json`` holds it under ``exactness`` and :func:`exactness_note` is its one-line form for the
report.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from perceptron_lab.engine.kernels import integer_features, sq_norms64
from perceptron_lab.sparse import issparse

ROOT = Path(__file__).resolve().parents[2]
SPREAD_SUMMARY = ROOT / "results" / "spread" / "summary.csv"
#: Every committed config's exactness (``python -m perceptron_lab.cli.spread --exactness``), for runs
#: whose run.json predates the ``exactness`` entry.
EXACTNESS_TABLE = ROOT / "results" / "spread" / "exactness.csv"
#: Rules that divide by a norm (their scores are not integers).
NORM_RULES = ("last_norm", "avg_norm", "random_norm", "vote_norm")
#: Every integer of magnitude below this is a float64.
EXACT_INT_LIMIT = 2.0 ** 53


def _values(cfg, key: str, current):
    """``current`` and every value the grid gives ``key``."""
    grid = cfg.evaluation.grid or {}
    return [current, *grid.get(key, ())]


def _integer_matrix(X) -> bool:
    """Every value an integer of magnitude below 2^24 (read in place, no copy of X)."""
    if X is not None and issparse(X):
        return integer_features(X)   # from the stored values
    if X is None or not np.asarray(X).size:
        return True
    X = np.asarray(X)
    if X.dtype.kind in "iub":
        return bool(X.size == 0 or np.abs(X).max() < 2 ** 24)
    return integer_features(X) if X.ndim == 2 else integer_features(X.reshape(len(X), -1))


def construction_blockers(cfg, X_train, X_test=None) -> list[str]:
    """Why a run of ``cfg`` on these features may depend on the machine (empty: it cannot).

    Parameters
    ----------
    cfg : ExperimentConfig
        The resolved config (its grid is read too: every value it takes must qualify).
    X_train, X_test : ndarray or None
        The features as loaded, before ``dataset.preprocess``.
    """
    why = []
    if any(a != "perceptron" for a in _values(cfg, "algorithm.name", cfg.algorithm.name)):
        why.append(f"algorithm {cfg.algorithm.name} rescales its hypotheses (non-integer weights)")
    if any(k != "linear" for k in _values(cfg, "kernel.type", cfg.kernel.type)):
        why.append(f"{cfg.kernel.type} kernel values are not integers")
    if any(p != "none" for p in _values(cfg, "dataset.preprocess", cfg.dataset.preprocess)):
        why.append(f"dataset.preprocess: {cfg.dataset.preprocess} makes the features non-integer")
    elif not (_integer_matrix(X_train) and _integer_matrix(X_test)):
        why.append("the features are not integers")
    elif len(_values(cfg, "dataset.name", cfg.dataset.name)) > 1:
        why.append("evaluation.grid runs other datasets, whose features were not checked")
    if any(d != "float64" for d in _values(cfg, "training.dtype", cfg.training.dtype)):
        why.append("training.dtype: float32 rounds sums of integers beyond 2^24")
    etas = [float(e) for e in _values(cfg, "algorithm.eta", cfg.algorithm.eta) if e is not None] or [1.0]
    if any(e != round(e) for e in etas):
        why.append(f"algorithm.eta = {cfg.algorithm.eta:g} is not an integer (updates eta*y round)")
    rules = [r for r in cfg.prediction.rules if r in NORM_RULES]
    if rules:
        why.append(f"rules {', '.join(rules)} divide by a norm")
    if not why and X_train is not None and X_train.size:
        max_sq = max(float(np.max(sq_norms64(X))) for X in (X_train, X_test) if X is not None and X.size)
        steps = max(float(max(_values(cfg, "training.epochs", cfg.training.epochs))) * X_train.shape[0], 1.0)
        bound = max(abs(e) for e in etas) * steps * max_sq * (steps if "avg" in cfg.prediction.rules else 1.0)
        if not bound < EXACT_INT_LIMIT:
            why.append(f"scores may reach {bound:.3g}, beyond float64's exact integers (2^53)")
    return why


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
    reason = ("linear perceptron on integer features in float64 with an integer learning rate: every "
              "weight, score and vote is an integer below 2^53, the same whatever the order of its sums"
              if not why else "; ".join(why) + ": sums of non-integers round in an order the CPU and BLAS choose")
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
        return "exact by construction (same bits on any x86-64 machine): " + str(ex.get("reason", ""))
    m = ex.get("measured_spread")
    moved = ("spread not measured" if not m else
             f"measured across {len(m['variants'])} CPU/BLAS variants: up to {m['rows_differing']} of "
             f"{m['rows_compared']} rows move, by up to {m['max_abs_diff_test_error_pct']:g} points "
             f"(counts by up to {m['max_abs_diff_counts']:g})")
    return f"not exact by construction ({ex.get('reason', '')}); {moved}"


__all__ = ["construction_blockers", "exactness", "exactness_note", "measured_spread"]
