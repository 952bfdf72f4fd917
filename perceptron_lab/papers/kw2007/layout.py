"""Khardon & Wachman (2007) tables in the paper's printed arrangement: each cell ``ours (paper)``,
as CSV and Markdown next to the comparison, per run (:func:`write_kw2007_outputs`) and merged over
every run of a table (:func:`combine_kw2007`, ``python -m perceptron_lab.papers.kw2007.layout
results/kw2007``). The comparisons themselves are computed in :mod:`.tables`."""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

import pandas as pd

from perceptron_lab.run.comparison import compared, consistent, normalize, read_comparison
from perceptron_lab.run.store import atomic_write_text
from perceptron_lab.papers.kw2007.tables import (
    ACC_TOL_PP,
    COLUMNS,
    COMPARISON_COLUMNS,
    RULE_ORDER,
    TABLE2_COMPARISONS,
    TABLE2_SETS_PER_NOISE,
    TABLE_TITLES,
    kw2007_comparison,
    parameter_curves,
    table_number,
)

# ----------------------------------------------------------------------------- layout


def _fmt(x, digits=1) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def format_cell(r) -> str:
    """``ours (paper)``, with ``± ci`` on both sides where an interval exists; counts as integers."""
    digits = 0 if r.metric == "n_datasets" else 1
    ours = _fmt(r.ours_mean, digits) or "n/a"
    if not math.isnan(r.ours_ci) and r.table == 6:
        ours += f" ± {_fmt(r.ours_ci)}"
    paper = _fmt(r.paper, digits) or "n/a"
    if not math.isnan(r.paper_ci):
        paper += f" ± {_fmt(r.paper_ci)}"
    return f"{ours} ({paper})"


def table2_claims(cmp: pd.DataFrame) -> list[str]:
    """The paper's own summary of Table 2 (section 4: "Over all 150 artificial data sets, the voted
    perceptron strictly improves performance over the classical perceptron in 59 cases, and ties
    or improves in 138 cases") next to the same sums of our counts, over the noise rates both
    have. One Markdown bullet per claim."""
    c = cmp[cmp["metric"] == "n_datasets"]
    blocks = [b for b, part in c.groupby("block", sort=False)
              if part["paper"].notna().all() and (part["n_runs"] > 0).all()]
    if not blocks:
        return []
    c = c[c["block"].isin(blocks)]
    n_paper = TABLE2_SETS_PER_NOISE * len(blocks)
    n_ours = int(c.groupby("block")["n_runs"].first().sum())

    def total(which, side):
        return int(c.loc[c["row"] == which, side].sum())

    return [f"- The paper's summary, over the {len(blocks)} noise rates: voted strictly better than classical on "
            f"{total('V > C', 'paper')} of {n_paper} data sets (ours: {total('V > C', 'ours_mean')} of {n_ours}); "
            f"voted at least as good on {n_paper - total('C > V', 'paper')} of {n_paper} "
            f"(ours: {n_ours - total('C > V', 'ours_mean')} of {n_ours})."]


def kw2007_layout(cmp: pd.DataFrame) -> pd.DataFrame:
    """The printed arrangement: one row per (block, row), one column per printed column."""
    if cmp.empty:
        return pd.DataFrame(columns=["block", "row"])
    table = int(cmp["table"].iloc[0])
    c = cmp.copy()
    c["cell"] = [format_cell(r) for r in c.itertuples(index=False)]
    if table == 2:
        cols = list(TABLE2_COMPARISONS)
        c["_col"], c["_row"] = c["row"], c["block"]
        c["row"] = ""
    else:
        cols = list(COLUMNS.get(table, ())) or list(dict.fromkeys(c["column"]))
        c["_col"], c["_row"] = c["column"], c["row"]
    extra = [x for x in dict.fromkeys(c["_col"]) if x not in cols]
    cols = [x for x in cols if x in set(c["_col"])] + extra
    blocks = list(dict.fromkeys(c["block"]))
    row_order = {r: i for i, r in enumerate(RULE_ORDER + ("SVM",))}
    out = []
    for b in blocks:
        part = c[c["block"] == b]
        keys = sorted(dict.fromkeys(part["row"] if table != 2 else [""]), key=lambda x: row_order.get(x, 9))
        for rname in keys:
            sub = part[part["row"] == rname] if table != 2 else part
            cells = dict(zip(sub["_col"], sub["cell"]))
            if table == 6 and rname == "Longest":  # the SVM cells are printed on the Longest row
                svm = c[(c["block"] == b) & (c["row"] == "SVM")]
                cells.update(dict(zip(svm["_col"], svm["cell"])))
            if table == 6 and rname == "SVM":
                continue
            out.append([b, rname] + [cells.get(col, "") for col in cols])
    return pd.DataFrame(out, columns=["block", "row"] + cols)


def layout_markdown(layout: pd.DataFrame, cmp: pd.DataFrame, title: str) -> str:
    """Markdown of a layout; cells outside the tolerance are marked ✗."""
    flagged = set()
    table = int(cmp["table"].iloc[0]) if len(cmp) else 0
    for r in cmp.itertuples(index=False):
        if r.in_scope and not pd.isna(r.within) and not r.within:
            row = "Longest" if (table == 6 and r.row == "SVM") else r.row
            flagged.add((r.block, row if table != 2 else "", r.column if table != 2 else r.row))
    scoped = cmp[cmp["in_scope"].astype(bool) & cmp["within"].notna()]
    n_ok = int(scoped["within"].astype(bool).sum())
    lines = [f"# Khardon & Wachman (2007) {title}", "",
             "Cells: ours (paper). Table 6: mean ± half-width of the 95% T-interval over the outer folds "
             "(footnote 5). ✗ marks a cell outside the tolerance: the paper's 95% interval where it prints "
             f"one, else {ACC_TOL_PP:g} percentage points. Dominance counts (Table 2) and standard deviations "
             "(Table 5) are shown side by side, not scored.",
             "", f"Within tolerance: {n_ok} of {len(scoped)} compared cells.", ""]
    if table == 2:
        lines += table2_claims(cmp) + [""]
    cols = list(layout.columns)
    lines.append("| " + " | ".join(["", ""] + cols[2:]) + " |")
    lines.append("|" + "|".join(["---", "---"] + ["---:"] * (len(cols) - 2)) + "|")
    prev = None
    for r in layout.itertuples(index=False):
        vals = list(r)
        block, row = vals[0], vals[1]
        cells = [f"{v} ✗" if (block, row, col) in flagged and v else v for col, v in zip(cols[2:], vals[2:])]
        lines.append("| " + " | ".join([block if block != prev else "", row] + cells) + " |")
        prev = block
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- files


def write_table(cmp: pd.DataFrame, out: Path, stem: str, title: str) -> list[Path]:
    layout = kw2007_layout(cmp)
    paths = [out / f"{stem}.csv", out / f"{stem}_comparison.csv", out / f"{stem}.md"]
    atomic_write_text(paths[0], layout.to_csv(index=False, lineterminator="\n"))
    atomic_write_text(paths[1], cmp.to_csv(index=False, lineterminator="\n", float_format="%.10g"))
    atomic_write_text(paths[2], layout_markdown(layout, cmp, title))
    return paths


def write_kw2007_outputs(cfg, out, df: pd.DataFrame, data_dir=None) -> list[Path]:
    """Write the run's part of its paper table (``kw2007_table<N>.{csv,md}`` and
    ``..._comparison.csv``) and, for parameter searches, Figure 4 (``kw2007_figure4.png``)."""
    out = Path(out)
    table = table_number(cfg)
    if table is None:
        return []
    cmp = kw2007_comparison(cfg, df, out, data_dir)
    written = []
    if cmp is not None and len(cmp):
        written += write_table(cmp, out, f"kw2007_table{table}", TABLE_TITLES[table] + f" -- {cfg.name}")
    if cfg.output.figures and cfg.evaluation.search and cfg.evaluation.mode != "nested":
        written += draw_figure4(cfg, df, out)
    return written


def draw_figure4(cfg, df: pd.DataFrame, out: Path) -> list[Path]:
    """Figure 4 of a parameter-search run (``out/kw2007_figure4.png``) from its results; [] when
    the search gives no curve."""
    from perceptron_lab.papers.kw2007.figures import plot_kw2007_figure4

    curves = parameter_curves(cfg, df)
    if not len(curves):
        return []
    return [plot_kw2007_figure4(curves, Path(out) / "kw2007_figure4.png",
                                title=f"Khardon & Wachman (2007) Figure 4, reproduced on {figure4_where(cfg, curves)}: "
                                      "cross-validated accuracy vs parameter value\n(the paper's figure prints no "
                                      "numbers to overlay; a row's panels share their y axis, which spans at least "
                                      "10 points)")]


def figure4_where(cfg, curves: pd.DataFrame) -> str:
    """What Figure 4's panels were computed on: the data set, or how many data sets when the grid
    sweeps ``dataset.name`` (Table 3 UCI: 8, a row each), and what a row of panels is."""
    names = list(dict.fromkeys(cfg.evaluation.grid.get("dataset.name") or ())) or [cfg.dataset.name]
    rows = len(dict.fromkeys(curves["setting"]))
    where = str(names[0]) if len(names) == 1 else f"{len(names)} data sets"
    if rows > 1:
        where += ", a row of panels per " + ("data set" if rows == len(names) else "setting")
    return where


def combine_kw2007(root, out_dir=None) -> list[Path]:
    """Merge the ``kw2007_table<N>_comparison.csv`` of every run folder below ``root`` into whole
    tables ``<out_dir>/kw2007_table<N>.{csv,md}`` (out_dir defaults to root) and a summary
    ``kw2007_summary.md`` of the cells within tolerance per table. Runs in deeper folders (e.g.
    ``root/variants/...``, settings the paper does not state) stay out of the merged tables."""
    root = Path(root)
    out = Path(out_dir) if out_dir else root
    found: dict[int, list[pd.DataFrame]] = {}
    for p in sorted(root.glob("*/kw2007_table*_comparison.csv")):
        m = re.match(r"kw2007_table(\d+)_comparison", p.stem)
        if m:
            found.setdefault(int(m.group(1)), []).append(read_comparison(p))
    written, summary = [], ["# Khardon & Wachman (2007): reproduced cells within tolerance", "",
                            "Dominance counts (Table 2) and standard deviations (Table 5) are compared but not scored.",
                            "", "| table | cells compared | scored | within tolerance | consistent with sampling |",
                            "|---|---:|---:|---:|---:|"]
    for t in sorted(found):
        cmp = pd.concat(found[t], ignore_index=True).reindex(columns=COMPARISON_COLUMNS)
        written += write_table(cmp, out, f"kw2007_table{t}", TABLE_TITLES[t])
        scoped = cmp[cmp["in_scope"] & cmp["within"].notna()]
        summary.append(f"| {t} | {int(compared(cmp).sum())} | {len(scoped)} | "
                       f"{int(scoped['within'].astype(bool).sum())} | {int(consistent(normalize(cmp)).sum())} |")
    if found:
        atomic_write_text(out / "kw2007_summary.md", "\n".join(summary) + "\n")
        written.append(out / "kw2007_summary.md")
    return written


def main(argv=None):
    ap = argparse.ArgumentParser(description="Merge the Khardon & Wachman table parts of run folders.")
    ap.add_argument("root", nargs="?", default="results/kw2007")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    for p in combine_kw2007(args.root, args.out):
        print(p)


if __name__ == "__main__":
    main()
