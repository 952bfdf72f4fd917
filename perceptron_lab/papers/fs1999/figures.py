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
    over runs (permutations) with a light band of ± one standard deviation. The x axis is
    logarithmic, as in the paper. Returns the path of the PNG written.
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
    colors = dict(zip([r for r, _ in FIGURE2_RULES], ["C0", "C3", "C2", "C1"]))
    for ax, d in zip(axes.flat, degrees):
        sub = curves[curves["degree"] == d]
        for rule, name in FIGURE2_RULES:
            c = sub[sub["rule"] == rule]
            if c.empty:
                continue
            x, y, s = c["epoch_f"].to_numpy(), c["mean"].to_numpy(), c["std"].to_numpy()
            ax.plot(x, y, color=colors[rule], lw=1.2, label=name)
            if np.isfinite(s).any():
                ax.fill_between(x, y - s, y + s, color=colors[rule], alpha=0.15, lw=0)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_title(f"d = {d}")
        ax.set_xlabel("epoch")
        ax.set_ylabel("test error (%)")
        ax.grid(True, which="both", alpha=0.3, lw=0.5)
    for ax in list(axes.flat)[len(degrees):]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize="small", frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, out, dpi=130)
    return out


