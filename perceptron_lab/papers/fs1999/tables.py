"""Our results next to the published tables: Freund & Schapire (1999) Tables 1-3, with the
Graepel, Herbrich & Williamson (2000) sparsity bound as an extra row of Table 2.

Input is the long results format written by :mod:`perceptron_lab.run.experiment` (one row per run,
checkpoint, class, rule and metric). Two views are produced:

* :func:`fs1999_comparison` -- one row per table cell: the paper's value, our mean and standard
  deviation over runs (permutations, and folds if any), the difference, the tolerance and whether
  our mean is within it;
* :func:`fs1999_layout` -- the same cells arranged like the printed table, each cell a string
  ``"ours ± std (paper)"``.

:func:`write_fs1999_tables` finds which tables a results file can fill and writes both views
(CSV) plus a Markdown rendering of the layout.

Where our runs map onto the paper's rows
----------------------------------------
* Table 1 (NIST 10-class): class ``all`` (the multiclass result; ``support_vectors`` is the
  union over the ten labels and ``mistakes`` the total).
* Table 2 (one-vs-rest, d = 4): the per-label rows (class = the label) of a 10-class run.
* Table 3 ("9" vs rest): the class ``9`` rows, for every degree.

Tables 2 and 3 print one ``Last`` and one ``Rand.`` row; for a single binary classifier the
normalised and unnormalised scores have the same sign, so our unnormalised values are used.

The ``GHW bound`` row of Table 2 evaluates :func:`ghw_sparsity_bound` at each run's per-label
support-vector count (``||alpha||_0``) and averages over runs. The paper value is GHW's Table 1
bound, computed from Freund & Schapire's T = 30 counts, so only T = 30 has one. The bound is a
guarantee only for a hypothesis consistent with the training set (a converged perceptron); at
earlier T the row is the same formula, shown for how it evolves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from perceptron_lab.run.comparison import CORE_COLUMNS
from perceptron_lab.run.store import atomic_write_text, read_back_json, read_back_results
from perceptron_lab.run.reference import reference_table

# ----------------------------------------------------------------------------- tolerances
#
# A test error is "within" when |ours - paper| <= max(ERROR_ABS_TOL_PP, ERROR_REL_TOL * paper)
# (percentage points); a count (support vectors, mistakes) when |ours - paper| <= COUNT_REL_TOL *
# paper; the GHW bound (a function of the support-vector count) when |ours - paper| <=
# BOUND_REL_TOL * paper. Cells with d < SCOPE_MIN_DEGREE or T < SCOPE_MIN_T are still compared but
# have in_scope = False: they are not part of what a reproduction is expected to match.

ERROR_ABS_TOL_PP = 0.3
ERROR_REL_TOL = 0.10
COUNT_REL_TOL = 0.10
BOUND_REL_TOL = 0.10
SCOPE_MIN_DEGREE = 2
SCOPE_MIN_T = 1.0
# Small slack so that a difference equal to the tolerance is not lost to float rounding.
_EPS = 1e-9

GHW_DELTA = 0.05
DEFAULT_N_TRAIN = 60000

# The epochs at which the paper reports results (the columns of Tables 1 and 3).
FS1999_T = (0.1, 1.0, 2.0, 3.0, 4.0, 10.0, 30.0)
# Table 2 is for the degree-4 kernel only.
FS1999_TABLE2_DEGREE = 4
FS1999_TABLE3_LABEL = "9"

#: The shared schema (:mod:`perceptron_lab.run.comparison`; ``column`` is ``T=<epochs>``) plus the
#: degree, the label of the binary problem (Tables 2-3) and T as a number.
COMPARISON_COLUMNS = CORE_COLUMNS + ["d", "label", "T"]


@dataclass(frozen=True)
class _Row:
    """One printed row: where our value comes from and where the paper's value is stored."""

    name: str
    metric: str              # our metric (or "ghw_bound_pct", derived from support_vectors)
    rule: str                # our rule ("none" for counts)
    normalized: str          # our normalized flag, "true"/"false" ("" for counts)
    ref_method: str | None   # reference CSV: method
    ref_normalized: str | None
    ref_metric: str | None

    @property
    def kind(self) -> str:
        if self.metric == "test_error_pct":
            return "error"
        if self.metric == "ghw_bound_pct":
            return "bound"
        return "count"


_VOTE = _Row("Vote", "test_error_pct", "vote", "false", "vote", None, "test_error_pct")
_AVG_U = _Row("Avg unnorm", "test_error_pct", "avg", "false", "avg", "unnorm", "test_error_pct")
_AVG_N = _Row("Avg norm", "test_error_pct", "avg", "true", "avg", "norm", "test_error_pct")
_SUPVEC = _Row("SupVec", "support_vectors", "none", "", "perceptron", None, "supvec")
_MISTAKE = _Row("Mistake", "mistakes", "none", "", "perceptron", None, "mistakes")

TABLE1_ROWS = (
    _VOTE, _AVG_U, _AVG_N,
    _Row("Last unnorm", "test_error_pct", "last", "false", "last", "unnorm", "test_error_pct"),
    _Row("Last norm", "test_error_pct", "last", "true", "last", "norm", "test_error_pct"),
    _Row("Rand unnorm", "test_error_pct", "random", "false", "rand", "unnorm", "test_error_pct"),
    _Row("Rand norm", "test_error_pct", "random", "true", "rand", "norm", "test_error_pct"),
    _SUPVEC, _MISTAKE,
)
TABLE3_ROWS = (
    _VOTE, _AVG_U, _AVG_N,
    _Row("Last", "test_error_pct", "last", "false", "last", None, "test_error_pct"),
    _Row("Rand", "test_error_pct", "random", "false", "rand", None, "test_error_pct"),
    _SUPVEC, _MISTAKE,
)
GHW_ROW = _Row("GHW bound", "ghw_bound_pct", "none", "", None, None, None)
TABLE2_ROWS = TABLE3_ROWS + (GHW_ROW,)
_ROWS = {1: TABLE1_ROWS, 2: TABLE2_ROWS, 3: TABLE3_ROWS}


# ----------------------------------------------------------------------------- GHW bound


def ghw_sparsity_bound(m: int, d: int, delta: float = GHW_DELTA) -> float:
    """Graepel, Herbrich & Williamson (2000), Theorem 3, eq. (7): the generalisation error bound
    of a classifier reconstructed from ``d`` of ``m`` training examples and consistent with the
    other ``m - d`` (e.g. the kernel perceptron's final hypothesis with ``||alpha||_0 = d`` after
    convergence on separable data), holding with probability at least ``1 - delta``::

        eps(m, d) = ( ln C(m, d) + ln m + ln(1 / delta) ) / (m - d)

    ``ln C(m, d)`` is the union bound over the subsets of size ``d`` (Lemma 1) and ``ln m`` the
    union bound over the possible values of ``d``. Returned as a fraction (multiply by 100 for %);
    values >= 1 are vacuous, and ``d = m`` gives ``inf``.
    """
    m = int(m)
    d = int(d)
    if m < 1:
        raise ValueError(f"m must be >= 1, got {m}")
    if not 0 <= d <= m:
        raise ValueError(f"d must be in [0, m] = [0, {m}], got {d}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if d == m:
        return math.inf
    log_binom = math.lgamma(m + 1) - math.lgamma(d + 1) - math.lgamma(m - d + 1)
    return (log_binom + math.log(m) + math.log(1.0 / delta)) / (m - d)


# ----------------------------------------------------------------------------- results


def _epoch_key(x) -> float:
    """Epochs as floats rounded so that '0.1' and 0.1 (or 1 and '1.0') compare equal."""
    return round(float(x), 6)


def _label_str(x) -> str:
    s = str(x).strip()
    try:
        f = float(s)
    except ValueError:
        return s
    return str(int(f)) if f.is_integer() else s


def _flag_str(v) -> str:
    """'true' / 'false' from a string or bool flag; '' when empty or missing."""
    if v is None or (isinstance(v, float) and np.isnan(v)) or str(v).strip() == "":
        return ""
    return "true" if str(v).strip().lower() == "true" else "false"


def _map_unique(s: pd.Series, fn) -> pd.Series:
    """``s.map(fn)``, calling ``fn`` once per distinct value."""
    return s.map({u: fn(u) for u in s.unique()})


def _normalize_results(results: pd.DataFrame) -> pd.DataFrame:
    """Typed copy of a results frame (read as strings or with pandas' default parsing)."""
    need = {"degree", "epoch", "rule", "normalized", "class", "metric", "value", "permutation"}
    missing = need - set(results.columns)
    if missing:
        raise ValueError(f"results lack the columns {sorted(missing)}")
    df = results.copy()
    for col in ("fold", "grid_point"):
        if col not in df.columns:
            df[col] = -1 if col == "fold" else 0
    df["degree"] = pd.to_numeric(df["degree"]).astype(int)
    df["T"] = _map_unique(df["epoch"], _epoch_key)
    df["class"] = _map_unique(df["class"], _label_str)
    df["rule"] = df["rule"].astype(str)
    df["normalized"] = _map_unique(df["normalized"], _flag_str)
    df.loc[df["rule"] == "none", "normalized"] = ""
    df["metric"] = df["metric"].astype(str)
    df["value"] = pd.to_numeric(df["value"]).astype(float)
    df["run"] = df["fold"].astype(str) + "/" + df["permutation"].astype(str)
    _check_one_setting_per_degree(df)
    return df


def _check_one_setting_per_degree(df: pd.DataFrame):
    keys = [c for c in ("dataset", "kernel", "algorithm", "params", "grid_point") if c in df.columns]
    if not keys:
        return
    for d, sub in df.groupby("degree"):
        settings = sub[keys].astype(str).drop_duplicates()
        if len(settings) > 1:
            desc = "; ".join(", ".join(f"{k}={v}" for k, v in r.items()) for r in settings.to_dict("records"))
            raise ValueError(f"results hold {len(settings)} different settings at degree {d} ({desc}); "
                             "select one before building a table")


def _aggregate(values: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Mean, std (ddof=1, NaN for one run) and the number of runs of ``value``."""
    g = values.groupby(by, sort=True)["value"]
    out = g.agg(ours_mean="mean", ours_std=lambda s: s.std(ddof=1) if len(s) > 1 else np.nan,
                n_runs="count").reset_index()
    return out


# ----------------------------------------------------------------------------- comparison


def _tolerance(kind: str, paper: float) -> float:
    if np.isnan(paper):
        return np.nan
    if kind == "error":
        return max(ERROR_ABS_TOL_PP, ERROR_REL_TOL * abs(paper))
    if kind == "bound":
        return BOUND_REL_TOL * abs(paper)
    return COUNT_REL_TOL * abs(paper)


def _in_scope(d: int, T: float) -> bool:
    return d >= SCOPE_MIN_DEGREE and T >= SCOPE_MIN_T - _EPS


def _paper_values(table: int) -> dict:
    """{(d, label, T, row name): value} from the packaged reference tables."""
    ref = reference_table(f"fs1999_table{table}")
    ref = ref[ref["T"].notna()]  # the Cortes & Vapnik rows have no T
    rows = _ROWS[table]
    out = {}
    for r in ref.itertuples(index=False):
        norm = None if pd.isna(r.normalized) else str(r.normalized)
        for spec in rows:
            if spec.ref_method == r.method and spec.ref_normalized == norm and spec.ref_metric == r.metric:
                label = "all" if table == 1 else _label_str(r.label)
                out[(int(r.d), label, _epoch_key(r.T), spec.name)] = float(r.value)
                break
        else:
            raise ValueError(f"fs1999_table{table}: unmapped reference row {r}")
    if table == 2:
        ghw = reference_table("ghw2000_table1")
        ghw = ghw[(ghw["algorithm"] == "perceptron") & (ghw["metric"] == "bound_pct")]
        # GHW quote FS Table 2 at T = 30 (see the reference README, note D2).
        for r in ghw.itertuples(index=False):
            out[(FS1999_TABLE2_DEGREE, _label_str(r.digit), 30.0, GHW_ROW.name)] = float(r.value)
    return out


def _our_values(df: pd.DataFrame, rows, cls_filter, n_train: int) -> pd.DataFrame:
    """Per-run values of every row, long: degree, class, T, row, run, value."""
    parts = []
    for spec in rows:
        if spec.metric == "ghw_bound_pct":
            sel = df[(df["metric"] == "support_vectors") & (df["rule"] == "none") & cls_filter]
            vals = sel["value"].map(lambda v: 100.0 * ghw_sparsity_bound(n_train, int(round(v))))
        else:
            sel = df[(df["metric"] == spec.metric) & (df["rule"] == spec.rule)
                     & (df["normalized"] == spec.normalized) & cls_filter]
            vals = sel["value"]
        if sel.empty:
            continue
        part = sel[["degree", "class", "T", "run"]].copy()
        part["row"] = spec.name
        part["value"] = vals.to_numpy(dtype=float)
        parts.append(part)
    if not parts:
        return pd.DataFrame(columns=["degree", "class", "T", "run", "row", "value"])
    return pd.concat(parts, ignore_index=True)


def _main_checkpoints(df: pd.DataFrame) -> set:
    """Epochs that are main checkpoints: those with per-label rows in a multiclass run, and the
    paper's T values."""
    per_label = df.loc[df["class"] != "all", "T"]
    return set(per_label.unique()) | set(FS1999_T)


def fs1999_comparison(results: pd.DataFrame, table: int, degree: int | None = None,
                      label: str | None = None, n_train: int = DEFAULT_N_TRAIN) -> pd.DataFrame:
    """Long comparison of our results with Freund & Schapire (1999) Table ``table`` (1, 2 or 3).

    Blocks are the degrees present in ``results`` (Tables 1 and 3; restrict with ``degree``) or
    the labels present at d = 4 (Table 2; restrict with ``label``). Within a block there is one row
    per (paper row, T) for every T among the paper's columns and our main checkpoints: cells only
    we have get ``paper`` = NaN, cells only the paper has get ``n_runs`` = 0. ``within`` is NA when
    either side is missing. ``n_train`` (m) is used for the GHW bound row of Table 2.
    """
    return _comparison(_normalize_results(results), table, degree, label, n_train)


def _comparison(df: pd.DataFrame, table: int, degree, label, n_train: int) -> pd.DataFrame:
    """:func:`fs1999_comparison` on a frame already passed through :func:`_normalize_results`."""
    if table not in _ROWS:
        raise ValueError(f"table must be 1, 2 or 3, got {table!r}")
    rows = _ROWS[table]
    if table == 1:
        if label is not None:
            raise ValueError("Table 1 is the 10-class problem; it has no label blocks")
        cls_filter = df["class"] == "all"
    elif table == 2:
        if degree is not None and int(degree) != FS1999_TABLE2_DEGREE:
            raise ValueError(f"Table 2 is for d = {FS1999_TABLE2_DEGREE} only, got degree={degree}")
        degree = FS1999_TABLE2_DEGREE
        cls_filter = df["class"] != "all"
        if label is not None:
            cls_filter &= df["class"] == _label_str(label)
    else:
        if label is not None and _label_str(label) != FS1999_TABLE3_LABEL:
            raise ValueError(f"Table 3 is the '{FS1999_TABLE3_LABEL}' vs rest problem, got label={label!r}")
        cls_filter = df["class"] == FS1999_TABLE3_LABEL
    if degree is not None:
        cls_filter &= df["degree"] == int(degree)

    main_T = _main_checkpoints(df)
    ours = _our_values(df, rows, cls_filter, n_train)
    ours = ours[ours["T"].isin(main_T)]
    agg = _aggregate(ours, ["degree", "class", "row", "T"]) if len(ours) else None
    paper = _paper_values(table)

    # blocks: (degree, class) pairs we have
    if agg is None:
        blocks = []
    else:
        blocks = sorted({(int(d), c) for d, c in zip(agg["degree"], agg["class"])},
                        key=lambda b: (b[0], _label_order(b[1])))
    ours_map = {} if agg is None else {
        (int(d), c, row, T): (mean, std, int(n))
        for d, c, row, T, mean, std, n in zip(agg["degree"], agg["class"], agg["row"], agg["T"],
                                              agg["ours_mean"], agg["ours_std"], agg["n_runs"])}

    out = []
    for d, cls in blocks:
        Ts = {T for (dd, c, _, T) in ours_map if dd == d and c == cls}
        Ts |= {T for (dd, c, T, _) in paper if dd == d and c == cls}
        for spec in rows:
            for T in sorted(Ts):
                p = paper.get((d, cls, T, spec.name), np.nan)
                mean, std, n = ours_map.get((d, cls, spec.name, T), (np.nan, np.nan, 0))
                if np.isnan(p) and n == 0:
                    continue
                diff = mean - p
                tol = _tolerance(spec.kind, p)
                within = pd.NA if (np.isnan(p) or n == 0) else bool(abs(diff) <= tol + _EPS)
                out.append({
                    "table": table,
                    "block": f"d={d}" if table in (1, 3) else f"label={cls}",
                    "d": d, "label": "" if table == 1 else cls,
                    "row": spec.name, "column": f"T={_fmt_T(T)}", "metric": spec.metric, "T": T,
                    "paper": p, "ours_mean": mean, "ours_std": std, "n_runs": n,
                    "diff": diff, "tolerance": tol, "within": within, "in_scope": _in_scope(d, T),
                })
    res = pd.DataFrame(out, columns=COMPARISON_COLUMNS)
    res["within"] = res["within"].astype("boolean")
    res["in_scope"] = res["in_scope"].astype(bool)
    res["n_runs"] = res["n_runs"].astype(int)
    for c in ("T", "paper", "ours_mean", "ours_std", "diff", "tolerance"):
        res[c] = res[c].astype(float)
    return res


def _label_order(c: str):
    return (0, int(c)) if c.isdigit() else (1, c)


# ----------------------------------------------------------------------------- layout


def _fmt_T(T: float) -> str:
    return f"{T:g}"


def format_cell(mean: float, std: float, paper: float, kind: str) -> str:
    """``"ours ± std (paper)"``: test errors and bounds with two decimals (the paper's one), counts
    as integers. A missing std (one run) is left out; a missing side is written ``n/a``."""
    if kind == "count":
        f_ours, f_paper = "{:.0f}", "{:.0f}"
    else:
        f_ours, f_paper = "{:.2f}", "{:.1f}"
    if mean is None or pd.isna(mean):
        ours = "n/a"
    else:
        ours = f_ours.format(mean)
        if std is not None and not pd.isna(std):
            ours += " ± " + f_ours.format(std)
    ptxt = "n/a" if paper is None or pd.isna(paper) else f_paper.format(paper)
    return f"{ours} ({ptxt})"


def fs1999_layout(comparison: pd.DataFrame, columns: str | None = None) -> pd.DataFrame:
    """Arrange a :func:`fs1999_comparison` like the printed table.

    Returns a frame with columns ``block``, ``row`` and one string column per T (``columns="T"``,
    the arrangement of Tables 1 and 3, blocks = degrees) or per label (``columns="label"``, the
    arrangement of Table 2, blocks = T). The default is the paper's arrangement for the table.
    Rows follow the paper's order within each block; cells are :func:`format_cell` strings and
    cells absent from the comparison are empty.
    """
    if comparison.empty:
        return pd.DataFrame(columns=["block", "row"])
    tables = comparison["table"].unique()
    if len(tables) != 1:
        raise ValueError(f"comparison mixes tables {sorted(tables)}")
    table = int(tables[0])
    columns = columns or _default_columns(table)
    if columns not in ("T", "label"):
        raise ValueError(f"columns must be 'T' or 'label', got {columns!r}")
    if columns == "label" and table != 2:
        raise ValueError("columns='label' is the arrangement of Table 2")
    kinds = {spec.name: spec.kind for spec in _ROWS[table]}
    order = [spec.name for spec in _ROWS[table]]
    cmp = comparison.copy()
    cmp["cell"] = [format_cell(r.ours_mean, r.ours_std, r.paper, kinds[r.row]) for r in cmp.itertuples()]
    cmp["_row_order"] = cmp["row"].map(order.index)
    cmp["_label_order"] = cmp["label"].map(lambda c: _label_order(str(c)))
    if columns == "T":
        cmp["_block"] = cmp["block"]
        cmp["_block_order"] = list(zip(cmp["d"], cmp["_label_order"]))
        cmp["_col"] = cmp["T"].map(_fmt_T)
        col_order = [_fmt_T(T) for T in sorted(cmp["T"].unique())]
    else:
        cmp["_block"] = cmp["T"].map(lambda T: f"T={_fmt_T(T)}")
        cmp["_block_order"] = cmp["T"]
        cmp["_col"] = cmp["label"].astype(str)
        col_order = [c for _, c in sorted({(o, str(c)) for o, c in zip(cmp["_label_order"], cmp["label"])})]
    wide = cmp.pivot_table(index=["_block_order", "_block", "_row_order", "row"], columns="_col",
                           values="cell", aggfunc="first")
    wide = wide.sort_index().reset_index()
    wide = wide.rename(columns={"_block": "block"})
    wide = wide[["block", "row"] + col_order].astype(object).fillna("")
    wide.columns.name = None
    return wide.reset_index(drop=True)


def _default_columns(table: int) -> str:
    return "label" if table == 2 else "T"


def layout_markdown(layout: pd.DataFrame, comparison: pd.DataFrame, title: str,
                    columns: str | None = None) -> str:
    """Markdown pipe table of a :func:`fs1999_layout` (built with the same ``columns``); in-scope
    cells outside the tolerance are marked with ✗."""
    table = int(comparison["table"].iloc[0]) if len(comparison) else 1
    arrangement = columns or _default_columns(table)
    flagged = set()
    for r in comparison.itertuples():
        if r.in_scope and not pd.isna(r.within) and not r.within:
            if arrangement == "T":
                flagged.add((r.block, r.row, _fmt_T(r.T)))
            else:
                flagged.add((f"T={_fmt_T(r.T)}", r.row, str(r.label)))
    runs = sorted(set(int(n) for n in comparison["n_runs"] if n > 0))
    runs_txt = ", ".join(map(str, runs)) if runs else "0"
    cols = list(layout.columns)
    head = "block" if arrangement == "T" else "T"
    lines = [f"# {title}", "",
             f"Cells: our mean ± standard deviation over runs ({runs_txt} runs), the paper's value in "
             "parentheses; `n/a` = not available. Test errors and the GHW bound in %.",
             "✗ marks an in-scope cell outside the tolerance (test error: max("
             f"{ERROR_ABS_TOL_PP:g} points, {100 * ERROR_REL_TOL:g}% of the paper's value); counts: "
             f"{100 * COUNT_REL_TOL:g}%; GHW bound: {100 * BOUND_REL_TOL:g}%; in scope: d >= "
             f"{SCOPE_MIN_DEGREE} and T >= {_fmt_T(SCOPE_MIN_T)}).", ""]
    header = [head if c == "block" else ("" if c == "row" else c) for c in cols]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join(["---", "---"] + ["---:"] * (len(cols) - 2)) + "|")
    prev_block = None
    for r in layout.itertuples(index=False):
        vals = list(r)
        block, row = vals[0], vals[1]
        cells = []
        for c, v in zip(cols[2:], vals[2:]):
            cells.append(f"{v} ✗" if (block, row, c) in flagged else v)
        shown_block = block if block != prev_block else ""
        prev_block = block
        lines.append("| " + " | ".join([shown_block, row] + cells) + " |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- files


def _read_results(paths) -> tuple[pd.DataFrame, int]:
    if isinstance(paths, (str, Path)):
        paths = [paths]
    frames, n_train = [], None
    for p in paths:
        p = Path(p)
        frames.append(read_back_results(p, ["rule", "metric", "value"]))
        info = p.with_name("run.json")
        if info.is_file():
            n = (read_back_json(info).get("dataset") or {}).get("n_train")
            if n is not None:
                if n_train is not None and int(n) != n_train:
                    raise ValueError(f"results use different training-set sizes ({n_train} and {n})")
                n_train = int(n)
    return pd.concat(frames, ignore_index=True), (n_train or DEFAULT_N_TRAIN)


def available_fs1999_tables(results: pd.DataFrame) -> list[tuple[int, int]]:
    """The (table, degree) pairs a results frame can fill: Table 1 for every degree of a
    multiclass run, Table 2 when per-label rows exist at d = 4, Table 3 for every degree with
    rows for label 9."""
    return _available(_normalize_results(results))


def _available(df: pd.DataFrame) -> list[tuple[int, int]]:
    found = []
    multiclass = df.loc[df["class"] != "all", "degree"].unique()
    for d in sorted(multiclass):
        found.append((1, int(d)))
    if FS1999_TABLE2_DEGREE in set(int(d) for d in multiclass):
        found.append((2, FS1999_TABLE2_DEGREE))
    for d in sorted(df.loc[df["class"] == FS1999_TABLE3_LABEL, "degree"].unique()):
        found.append((3, int(d)))
    return found


def write_fs1999_tables(results_csv_path, out_dir, n_train: int | None = None) -> list[Path]:
    """Write every Freund & Schapire table the results can fill.

    ``results_csv_path`` is a ``results.csv`` (or a list of them, e.g. one run per degree). For
    each (table, degree) of :func:`available_fs1999_tables` this writes, in ``out_dir``:
    ``fs1999_table{N}_d{d}.csv`` (layout), ``fs1999_table{N}_d{d}_comparison.csv`` (long) and
    ``fs1999_table{N}_d{d}.md``. ``n_train`` (m for the GHW bound) defaults to
    ``dataset.n_train`` of the ``run.json`` next to the results, else 60000. Returns the paths
    written.
    """
    results, m = _read_results(results_csv_path)
    if n_train is not None:
        m = int(n_train)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    df = _normalize_results(results)
    for table, d in _available(df):
        cmp = _comparison(df, table, d, None, m)
        if cmp.empty:
            continue
        layout = fs1999_layout(cmp)
        stem = f"fs1999_table{table}_d{d}"
        what = {1: "NIST 10-class", 2: "NIST one-vs-rest, per label", 3: 'NIST "9" vs rest'}[table]
        title = f"Freund & Schapire (1999) Table {table}: {what}, d = {d}"
        if table == 2:
            title += f" (GHW bound: δ = {GHW_DELTA:g}, m = {m})"
        paths = (out / f"{stem}.csv", out / f"{stem}_comparison.csv", out / f"{stem}.md")
        atomic_write_text(paths[0], layout.to_csv(index=False, lineterminator="\n"))
        atomic_write_text(paths[1], cmp.to_csv(index=False, lineterminator="\n", float_format="%.10g"))
        atomic_write_text(paths[2], layout_markdown(layout, cmp, title))
        written.extend(paths)
    return written
