"""Khardon & Wachman (2007) Figure 4, drawn from the parameter-search results."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ...plots import save_figure

# Khardon & Wachman (2007) Figure 4: one line per prediction rule (colour, line style, marker).
FIGURE4_RULES = (("Last", "C3", "--", "s"), ("Longest", "C2", ":", "^"), ("Voted", "C0", "-", "o"))
#: The y axis spans at least this many accuracy points, so that a flat curve looks flat.
MIN_SPAN_PCT = 10.0


def y_limits(values) -> tuple[float, float]:
    """Accuracy limits spanning at least :data:`MIN_SPAN_PCT` points, within [0, 100]."""
    lo, hi = float(min(values)), float(max(values))
    pad = max(0.0, MIN_SPAN_PCT - (hi - lo)) / 2 + 0.5
    lo, hi = lo - pad, hi + pad
    if hi > 100:
        lo, hi = lo - (hi - 100), 100.0
    return max(0.0, lo), hi


def plot_kw2007_figure4(curves: pd.DataFrame, out_png, title: str | None = None) -> Path:
    """Khardon & Wachman (2007) Figure 4: mean cross-validated accuracy (%) against the value of
    each parameter (tau, alpha, lambda), the other parameters inactive; one row of panels per data
    set (setting), one column per parameter, one line per prediction rule.

    ``curves`` has columns ``setting``, ``parameter``, ``value`` (text), ``position`` (the value's
    index in the grid, which runs from no effect to strong effect, as on the paper's x axes),
    ``rule`` and ``accuracy_pct`` (:func:`perceptron_lab.papers.kw2007.tables.parameter_curves`). Returns the
    path of the PNG written. The paper's Figure 4 prints no numbers, so no paper values are drawn;
    the rules differ in colour, line style and marker, and each y axis spans at least
    :data:`MIN_SPAN_PCT` accuracy points.
    """
    if curves.empty:
        raise ValueError("no parameter curves to plot")
    settings = list(dict.fromkeys(curves["setting"]))
    params = list(dict.fromkeys(curves["parameter"]))
    nrows, ncols = len(settings), len(params)
    if title:
        import textwrap

        width = int(3.6 * ncols * 13)   # characters of a medium font per line
        title = "\n".join(textwrap.fill(part, width) for part in title.split("\n"))
    lines = title.count("\n") + 1 if title else 0
    fig = Figure(figsize=(3.6 * ncols, 2.6 * nrows + 0.2 * lines + 0.1))
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for i, s in enumerate(settings):
        for j, p in enumerate(params):
            ax = axes[i][j]
            sub = curves[(curves["setting"] == s) & (curves["parameter"] == p)]
            for rule, color, ls, marker in FIGURE4_RULES:
                c = sub[sub["rule"] == rule].sort_values("position")
                if c.empty:
                    continue
                ax.plot(c["position"], c["accuracy_pct"], marker=marker, ms=4, lw=1.3, ls=ls, color=color,
                        label=rule)
            if len(sub):
                ax.set_ylim(*y_limits(sub["accuracy_pct"].astype(float)))
            ticks = sub.drop_duplicates("position").sort_values("position")
            ax.set_xticks(ticks["position"].tolist())
            ax.set_xticklabels(ticks["value"].tolist(), fontsize="small")
            ax.set_xlabel(p)
            if j == 0:
                ax.set_ylabel(f"{s}\naccuracy (%)", fontsize="small")
            ax.grid(True, alpha=0.3, lw=0.5)
    axes[0][0].legend(fontsize="small", frameon=False, loc="best")
    if title:
        fig.suptitle(title, fontsize="medium")
    fig.tight_layout()   # makes room for the title too
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, out, dpi=110)
    return out


