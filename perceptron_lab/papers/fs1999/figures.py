"""Freund & Schapire (1999) Figure 2, drawn from the long results format."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from perceptron_lab.run.figures import _figure, epoch_axis, error_axis, label_outer, legend_outside, paper_style, rule_style, save_figure, suptitle

# Freund & Schapire (1999) Figure 2: "vote" and the unnormalised "last", "average" and "random".
FIGURE2_RULES = (
    ("vote", "vote"),
    ("last", "last (unnorm)"),
    ("avg", "average (unnorm)"),
    ("random", "random (unnorm)"),
)
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
        sel = ref[(ref["method"] == method) & ((ref["normalized"].astype(object).fillna("") == "unnorm") | (method == "vote"))]
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
    # pandas' grouped std (ddof=1) is NaN for a group of one value, as wanted
    return g.agg(mean="mean", std="std", n="count").reset_index()


def plot_fs1999_figure2(results: pd.DataFrame, out_png, title: str | None = None) -> Path:
    """Freund & Schapire (1999) Figure 2: test error (%, class ``all``) against the number of
    epochs for vote and the unnormalised last / average / random rules, one panel per degree.

    Every evaluated epoch is a point (the paper plots one per tenth of an epoch); lines are means
    over runs (permutations) with a light band of ± one standard deviation, in each rule's style of
    :data:`perceptron_lab.run.figures.RULE_STYLES`. The paper's own values (its Table 1, the same runs) are
    open markers labelled "paper". The x axis is logarithmic, as in the paper; the y axis spans the
    values drawn, logarithmic when the curves span a factor of
    :data:`perceptron_lab.run.figures.LOG_Y_RATIO` or more (:func:`perceptron_lab.run.figures.error_axis`). Returns the
    path of the PNG written.
    """

    curves = _curves(results)
    if curves.empty:
        raise ValueError("no multiclass test-error rows for the vote/last/avg/random rules")
    degrees = sorted(curves["degree"].unique())
    ncols = min(3, len(degrees))
    nrows = math.ceil(len(degrees) / ncols)
    fig = _figure(4.2 * ncols + 1.9, 3.4 * nrows + (0.5 if title else 0))
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex=True)
    paper = paper_points()
    for ax, d in zip(axes.flat, degrees):
        sub = curves[curves["degree"] == d]
        means, drawn = [], []
        for rule, name in FIGURE2_RULES:
            c = sub[sub["rule"] == rule]
            st = rule_style(rule)
            if not c.empty:
                x, y, s = c["epoch_f"].to_numpy(), c["mean"].to_numpy(), c["std"].to_numpy()
                ax.plot(x, y, color=st["color"], ls=st["ls"], lw=1.4, label=name)
                if np.isfinite(s).any():
                    ax.fill_between(x, y - s, y + s, color=st["color"], alpha=0.12, lw=0)
                means += list(y)
                drawn += list(y - np.nan_to_num(s)) + list(y + np.nan_to_num(s))
            pp = paper[(paper["degree"] == d) & (paper["rule"] == rule)]
            if len(pp) and not c.empty:
                ax.plot(pp["T"], pp["value"], label=f"{name}, paper", **paper_style(rule))
                drawn += list(pp["value"])
        epoch_axis(ax, sub["epoch_f"])
        error_axis(ax, means, drawn)
        ax.set_title(f"degree d = {d}")
        ax.grid(True, which="major", alpha=0.3, lw=0.5)
    for ax in list(axes.flat)[len(degrees):]:
        ax.set_visible(False)
    label_outer(axes, len(degrees), ncols, ylabels=True)
    legend_outside(fig, fontsize="x-small")
    if title:
        suptitle(fig, title)
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, out)
    return out
