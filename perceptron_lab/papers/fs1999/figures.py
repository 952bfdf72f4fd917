"""Freund & Schapire (1999) Figure 2, drawn from the long results format."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from ...plots import save_figure

# Freund & Schapire (1999) Figure 2: "vote" and the unnormalised "last", "average" and "random".
FIGURE2_RULES = (
    ("vote", "vote"),
    ("last", "last (unnorm)"),
    ("avg", "average (unnorm)"),
    ("random", "random (unnorm)"),
)
#: Each rule's colour, line style and marker (for the paper's values): vote and average lie close
#: together, so they differ in all three.
STYLES = {"vote": ("C0", "-", "o"), "last": ("C3", "--", "s"), "avg": ("C2", ":", "^"), "random": ("C1", "-.", "D")}
#: Rule -> the method spelling of the paper's Table 1 reference.
_REF_METHOD = {"vote": "vote", "last": "last", "avg": "avg", "random": "rand"}


def paper_points() -> pd.DataFrame:
    """The paper's test errors (Table 1, the 10-class problem) for the rules of Figure 2: columns
    ``degree``, ``rule``, ``T``, ``value``. Figure 2 plots the same runs as Table 1, whose printed
    numbers are the values a reader can check the curves against."""
    ref = pd.read_csv(Path(__file__).resolve().parent / "reference" / "fs1999_table1.csv", dtype=str)
    ref = ref[(ref["metric"] == "test_error_pct") & (ref["problem"] == "nist_10class")]
    rows = []
    for rule, method in _REF_METHOD.items():
        sel = ref[(ref["method"] == method) & ((ref["normalized"].fillna("") == "unnorm") | (method == "vote"))]
        rows += [{"degree": int(r["d"]), "rule": rule, "T": float(r["T"]), "value": float(r["value"])}
                 for _, r in sel.iterrows()]
    return pd.DataFrame(rows, columns=["degree", "rule", "T", "value"])


def _curves(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over runs of the multiclass test error, per degree, rule and epoch."""
    df = results[(results["class"].astype(str) == "all")
                 & (results["metric"].astype(str) == "test_error_pct")].copy()
    df["normalized"] = df["normalized"].astype(str).str.strip().str.lower()
    df = df[df["normalized"] == "false"]
    df = df[df["rule"].astype(str).isin([r for r, _ in FIGURE2_RULES])]
    df["degree"] = pd.to_numeric(df["degree"]).astype(int)
    df["epoch_f"] = pd.to_numeric(df["epoch"]).astype(float).round(6)
    df["value"] = pd.to_numeric(df["value"]).astype(float)
    g = df.groupby(["degree", "rule", "epoch_f"], sort=True)["value"]
    return g.agg(mean="mean", std=lambda s: s.std(ddof=1) if len(s) > 1 else np.nan,
                 n="count").reset_index()


def plot_fs1999_figure2(results: pd.DataFrame, out_png, title: str | None = None) -> Path:
    """Freund & Schapire (1999) Figure 2: test error (%, class ``all``) against the number of
    epochs for vote and the unnormalised last / average / random rules, one panel per degree.

    Every evaluated epoch is a point (the paper plots one per tenth of an epoch); lines are means
    over runs (permutations) with a light band of ± one standard deviation, one line style per
    rule. The paper's own values (its Table 1, the same runs) are drawn as open markers. The x axis
    is logarithmic, as in the paper; the y axis starts at 0. Returns the path of the PNG written.
    """
    curves = _curves(results)
    if curves.empty:
        raise ValueError("no multiclass test-error rows for the vote/last/avg/random rules")
    degrees = sorted(curves["degree"].unique())
    ncols = min(3, len(degrees))
    nrows = math.ceil(len(degrees) / ncols)
    # A bare Figure on the Agg canvas: no pyplot state, no dependence on the session's backend.
    fig = Figure(figsize=(4.2 * ncols, 3.4 * nrows))
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    paper = paper_points()
    for ax, d in zip(axes.flat, degrees):
        sub = curves[curves["degree"] == d]
        top = 0.0
        for rule, name in FIGURE2_RULES:
            c = sub[sub["rule"] == rule]
            color, ls, marker = STYLES[rule]
            if not c.empty:
                x, y, s = c["epoch_f"].to_numpy(), c["mean"].to_numpy(), c["std"].to_numpy()
                ax.plot(x, y, color=color, ls=ls, lw=1.4, label=f"{name}, ours")
                if np.isfinite(s).any():
                    ax.fill_between(x, y - s, y + s, color=color, alpha=0.12, lw=0)
                top = max(top, float(np.nanmax(y)))
            pp = paper[(paper["degree"] == d) & (paper["rule"] == rule)]
            if len(pp) and not c.empty:
                ax.plot(pp["T"], pp["value"], ls="none", marker=marker, mfc="none", mec=color, ms=5, mew=1.1,
                        label=f"{name}, paper")
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_ylim(0, top * 1.08 if top > 0 else None)
        ax.set_title(f"degree d = {d}")
        ax.set_xlabel("epochs (log scale)")
        ax.set_ylabel("test error (%)")
        ax.grid(True, which="both", alpha=0.3, lw=0.5)
    for ax in list(axes.flat)[len(degrees):]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize="x-small", frameon=False, ncol=2)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, out, dpi=130)
    return out


