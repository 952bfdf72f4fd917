"""One schema for the long paper-vs-ours comparisons (``<paper>_table<N>..._comparison.csv``).

Every table writer (:mod:`perceptron_lab.papers.fs1999.tables` for Freund & Schapire,
:mod:`perceptron_lab.papers.kw2007.tables` for Khardon & Wachman, :mod:`perceptron_lab.papers.gentile2001.tables` for
Gentile) writes one row per printed cell. The core columns, in this order, are
:data:`CORE_COLUMNS`:

=========== ==================================================================================
table       the paper's table number
block       the printed block holding the cell (FS: ``d=4`` or ``label=3``; KW: the data set or
            ``N=0.1``; empty when the table has a single block)
row         the printed row (prediction rule or algorithm)
column      the printed column (FS: ``T=1``; KW: the searched variant, e.g. ``tau x alpha``;
            Gentile: ``1 Epoch TestErr``, a digit, ``eps=0, s=3``)
metric      what the cell holds: ``test_error_pct``, ``accuracy_pct``, ``mistakes``,
            ``support_vectors``, ``n_datasets`` ...
paper       the paper's value (empty where the paper prints none)
ours_mean   our mean over runs (permutations or folds)
ours_std    our standard deviation over runs
n_runs      how many runs the mean is over (0: we have no value)
diff        ``ours_mean - paper``
tolerance   how far ours may lie from the paper, in the cell's unit (empty: not scored)
within      ``|diff| <= tolerance`` (empty when a side or the tolerance is missing)
in_scope    whether the cell counts towards "cells within tolerance"
=========== ==================================================================================

Writer-specific columns follow (FS: ``d, label, T``; KW: ``dataset, paper_ci, ours_ci,
detail``), then :data:`SAMPLING_COLUMNS`: the range of values that sampling alone gives ours
(``sampling_lo``, ``sampling_hi``) and what was re-sampled (``sampling_basis``: ``draws`` of a
data set, ``folds`` of a cross-validation, ``runs`` -- permutations or folds -- when derived here
from ``ours_std`` and ``n_runs``). A scored cell outside its tolerance whose paper value lies in
that range is *consistent with sampling* (:func:`consistent`). :func:`normalize` brings files written before this schema to it (Khardon & Wachman:
``ours, ours_sd, n``; Gentile, before its writer used the schema: ``col`` and no ``block`` /
``in_scope``), so the report reads every run folder the same way.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

CORE_COLUMNS = ["table", "block", "row", "column", "metric", "paper", "ours_mean", "ours_std", "n_runs",
                "diff", "tolerance", "within", "in_scope"]
#: Older spellings -> core names.
ALIASES = {"ours": "ours_mean", "ours_sd": "ours_std", "n": "n_runs", "col": "column"}
_NUMERIC = ("paper", "ours_mean", "ours_std", "diff", "tolerance")
SAMPLING_COLUMNS = ["sampling_lo", "sampling_hi", "sampling_basis"]
#: Optional columns after the sampling range (see the module docstring).
TWO_SAMPLE_COLUMNS = ["two_sample_consistent"]
#: Level of Welch's two-sample test (two-sided).
TWO_SAMPLE_CONFIDENCE = 0.95
#: Level of the interval derived from ``ours_std`` and ``n_runs`` where a writer gives none.
SAMPLING_CONFIDENCE = 0.95
_TRUE = {"true", "1", "1.0", "yes"}
_FALSE = {"false", "0", "0.0", "no"}


def _flag(v):
    """True / False / NA from a bool, a number or the text a CSV round trip leaves."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return pd.NA
    s = str(v).strip().lower()
    return True if s in _TRUE else False if s in _FALSE else pd.NA


def _fmt_T(T) -> str:
    try:
        return f"T={float(T):g}"
    except (TypeError, ValueError):
        return ""


def text_column(s: pd.Series) -> pd.Series:
    """``s`` as text, a missing value as the empty text: an all-empty column a CSV round trip reads
    as float NaN included (filled as objects, since pandas refuses text as a float column's fill)."""
    return s.astype(object).where(s.notna(), "").astype(str)


def normalize(df: pd.DataFrame) -> pd.DataFrame:
    """A comparison with the core columns first (typed), then its own extra columns.

    Missing core columns are derived: ``column`` from ``T`` (``T=1``), ``block`` and ``metric``
    empty, ``in_scope`` = the cell has a tolerance (a cell without one cannot be scored).
    """
    c = df.rename(columns={k: v for k, v in ALIASES.items() if k in df.columns and v not in df.columns}).copy()
    if "column" not in c:
        c["column"] = c["T"].map(_fmt_T) if "T" in c else ""
    for k in ("block", "row", "metric"):
        if k not in c:
            c[k] = ""
        c[k] = text_column(c[k])
    c["column"] = text_column(c["column"])
    for k in _NUMERIC:
        c[k] = pd.to_numeric(c[k], errors="coerce").astype(float) if k in c else math.nan
    if "n_runs" not in c:
        c["n_runs"] = c["ours_mean"].notna().astype(int)
    c["n_runs"] = pd.to_numeric(c["n_runs"], errors="coerce").fillna(0).astype(int)
    missing = c["diff"].isna()
    c.loc[missing, "diff"] = c.loc[missing, "ours_mean"] - c.loc[missing, "paper"]
    c["within"] = c["within"].map(_flag).astype("boolean") if "within" in c else pd.array([pd.NA] * len(c),
                                                                                          dtype="boolean")
    if "in_scope" in c:
        c["in_scope"] = c["in_scope"].map(_flag).fillna(False).astype(bool)
    else:
        c["in_scope"] = c["tolerance"].notna()
    if "table" not in c:
        c["table"] = pd.NA
    _with_sampling(c)
    _with_two_sample(c)
    extra = [k for k in c.columns if k not in CORE_COLUMNS + SAMPLING_COLUMNS + TWO_SAMPLE_COLUMNS]
    return c[CORE_COLUMNS + extra + SAMPLING_COLUMNS + TWO_SAMPLE_COLUMNS].reset_index(drop=True)


def _with_sampling(c: pd.DataFrame) -> None:
    """Fill the sampling range where a writer gives none: our mean ± the T-interval of a mean over
    ``n_runs`` runs, ``t_{n-1, 0.975} * ours_std / sqrt(n_runs)`` (basis ``runs``)."""
    from perceptron_lab.run.evaluation import t_quantile

    for k in ("sampling_lo", "sampling_hi"):
        c[k] = pd.to_numeric(c[k], errors="coerce").astype(float) if k in c else math.nan
    c["sampling_basis"] = text_column(c["sampling_basis"]) if "sampling_basis" in c else ""
    n = c["n_runs"]
    need = c["sampling_lo"].isna() & c["ours_std"].notna() & c["ours_mean"].notna() & (n >= 2)
    if need.any():
        t = n[need].map(lambda k: t_quantile((1.0 + SAMPLING_CONFIDENCE) / 2.0, int(k) - 1))
        half = t * c.loc[need, "ours_std"] / n[need].astype(float).pow(0.5)
        c.loc[need, "sampling_lo"] = c.loc[need, "ours_mean"] - half
        c.loc[need, "sampling_hi"] = c.loc[need, "ours_mean"] + half
        c.loc[need, "sampling_basis"] = "runs"


def welch(diff: float, se_a: float, n_a: int, se_b: float, n_b: int,
          confidence: float = TWO_SAMPLE_CONFIDENCE) -> tuple[float, float, float]:
    """Welch's two-sample t-test of a difference of two means from their standard errors.

    Parameters
    ----------
    diff : float
        The difference of the two means.
    se_a, se_b : float
        The standard error of each mean.
    n_a, n_b : int
        How many runs each mean is over (degrees of freedom ``n - 1`` each).
    confidence : float
        Two-sided level: the difference is consistent when ``|t| <= t_{nu, (1 + confidence) / 2}``.

    Returns
    -------
    (t, nu, bound) : tuple of float
        The statistic ``diff / sqrt(se_a^2 + se_b^2)``, the Welch-Satterthwaite degrees of freedom
        ``(se_a^2 + se_b^2)^2 / (se_a^4 / (n_a - 1) + se_b^4 / (n_b - 1))`` and the largest
        ``|diff|`` consistent at that level, ``t_{nu, q} * sqrt(se_a^2 + se_b^2)``. With both
        standard errors zero, t is 0 for a zero difference and infinite otherwise (nu and the
        bound 0).
    """
    from perceptron_lab.run.evaluation import t_quantile

    va, vb = se_a * se_a, se_b * se_b
    se = math.sqrt(va + vb)
    if se == 0.0:
        return (0.0 if diff == 0 else math.copysign(math.inf, diff)), 0.0, 0.0
    nu = (va + vb) ** 2 / (va * va / (n_a - 1) + vb * vb / (n_b - 1))
    return diff / se, nu, t_quantile((1.0 + confidence) / 2.0, nu) * se


def two_sample_consistent(c: pd.DataFrame) -> pd.Series:
    """Per cell, whether Welch's test finds ours and the paper's mean consistent (module
    docstring); NA where the paper prints no spread or a side has fewer than two runs."""
    from perceptron_lab.run.evaluation import t_quantile

    out = pd.Series(pd.NA, index=c.index, dtype="boolean")
    n = c["n_runs"]
    q = (1.0 + TWO_SAMPLE_CONFIDENCE) / 2.0
    for i in c.index:
        k = int(n[i])
        paper, ours = c.at[i, "paper"], c.at[i, "ours_mean"]
        if k < 2 or pd.isna(paper) or pd.isna(ours):
            continue
        pci = _get_float(c, i, "paper_ci")
        psd = _get_float(c, i, "paper_sd")
        if not math.isnan(pci):
            se_p = pci / t_quantile(q, k - 1)
        elif not math.isnan(psd):
            se_p = psd / math.sqrt(k - 1)
        else:
            continue
        oci, osd = _get_float(c, i, "ours_ci"), _get_float(c, i, "ours_std")
        if not math.isnan(oci):
            se_o = oci / t_quantile(q, k - 1)
        elif not math.isnan(osd):
            se_o = osd / math.sqrt(k)
        else:
            continue
        _, _, bound = welch(float(ours) - float(paper), se_p, k, se_o, k)
        out[i] = bool(abs(float(ours) - float(paper)) <= bound + 1e-9)
    return out


def _get_float(c: pd.DataFrame, i, col: str) -> float:
    if col not in c:
        return math.nan
    try:
        v = float(c.at[i, col])
    except (TypeError, ValueError):
        return math.nan
    return v


def _with_two_sample(c: pd.DataFrame) -> None:
    """Fill ``two_sample_consistent`` where a writer gives none (see :func:`two_sample_consistent`)."""
    derived = two_sample_consistent(c)
    if "two_sample_consistent" in c:
        given = c["two_sample_consistent"].map(_flag).astype("boolean")
        c["two_sample_consistent"] = given.where(given.notna(), derived)
    else:
        c["two_sample_consistent"] = derived


#: Columns every comparison file has, in every schema it was written in (:func:`normalize`).
REQUIRED_COLUMNS = ("paper",)
_TEXT_COLUMNS = ("block", "row", "column", "col", "label", "metric")


def read_comparison(path, fix: str | None = None, rows: int | None = None) -> pd.DataFrame:
    """A ``*_comparison.csv`` in the core schema (see :func:`normalize`), validated first
    (:func:`perceptron_lab.run.store.read_back_csv`): a file cut short, not UTF-8, with short rows,
    without the columns of a comparison or without a single cell raises
    :class:`~perceptron_lab.errors.DamagedFileError` (``fix`` says how to get it again), so that no
    reader presents fewer cells as if they were all there were; ``rows``: the row count run.json
    records for it (``csv_rows``), which tells a file cut at a line's end from a whole one."""
    from perceptron_lab.run.store import damaged, read_back_csv

    path = Path(path)
    df = read_back_csv(path, REQUIRED_COLUMNS, fix, rows)
    if not {"ours_mean", "ours"} & set(df.columns):
        raise damaged(path, "no column ours_mean", fix)
    if df.empty:
        raise damaged(path, "no cells: a comparison has one row per cell of the paper's table", fix)
    for k in df.columns:   # empty cells are missing; text columns stay text, others are numbers where all parse
        col = df[k].replace("", math.nan)
        if k in _TEXT_COLUMNS:
            df[k] = col
            continue
        try:
            df[k] = pd.to_numeric(col)
        except (ValueError, TypeError):
            df[k] = col
    return normalize(df)


def compared(c: pd.DataFrame) -> pd.Series:
    """Cells with both the paper's value and ours."""
    return c["paper"].notna() & (c["n_runs"] > 0) & c["ours_mean"].notna()


def scored(c: pd.DataFrame) -> pd.Series:
    """Cells that count towards the score: compared, in scope, with a tolerance."""
    return compared(c) & c["in_scope"] & c["tolerance"].notna()


def consistent(c: pd.DataFrame) -> pd.Series:
    """Scored cells within tolerance, or whose paper value lies in our sampling range."""
    return scored(c) & ((c["within"] == True) | sampling_covers(c))  # noqa: E712


def two_sample_checked(c: pd.DataFrame) -> pd.Series:
    """Scored cells where the paper prints its spread, so the two-sample check applies."""
    return scored(c) & c["two_sample_consistent"].notna() if "two_sample_consistent" in c else scored(c) & False


def two_sample_ok(c: pd.DataFrame) -> pd.Series:
    """Scored cells that Welch's two-sample test finds consistent (never part of the strict count)."""
    return two_sample_checked(c) & (c["two_sample_consistent"] == True).fillna(False)  # noqa: E712


def sampling_covers(c: pd.DataFrame) -> pd.Series:
    """Cells whose paper value lies in our sampling range."""
    return ((c["paper"] >= c["sampling_lo"]) & (c["paper"] <= c["sampling_hi"])).fillna(False)


__all__ = ["CORE_COLUMNS", "ALIASES", "SAMPLING_COLUMNS", "TWO_SAMPLE_COLUMNS", "normalize", "read_comparison",
           "compared", "scored", "consistent", "sampling_covers", "welch", "two_sample_consistent",
           "two_sample_checked", "two_sample_ok"]
