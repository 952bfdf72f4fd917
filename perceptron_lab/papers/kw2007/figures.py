"""Khardon & Wachman (2007) Figure 4, drawn from the parameter-search results."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ...plots import save_figure

# Khardon & Wachman (2007) Figure 4: one line per prediction rule.
FIGURE4_RULES = (("Last", "C3"), ("Longest", "C2"), ("Voted", "C0"))


def plot_kw2007_figure4(curves: pd.DataFrame, out_png, title: str | None = None) -> Path:
    """Khardon & Wachman (2007) Figure 4: mean cross-validated accuracy (%) against the value of
    each parameter (tau, alpha, lambda), the other parameters inactive; one row of panels per data
    set (setting), one column per parameter, one line per prediction rule.

    ``curves`` has columns ``setting``, ``parameter``, ``value`` (text), ``position`` (the value's
    index in the grid, which runs from no effect to strong effect, as on the paper's x axes),
    ``rule`` and ``accuracy_pct`` (:func:`perceptron_lab.papers.kw2007.tables.parameter_curves`). Returns the
    path of the PNG written.
    """
    if curves.empty:
        raise ValueError("no parameter curves to plot")
    settings = list(dict.fromkeys(curves["setting"]))
    params = list(dict.fromkeys(curves["parameter"]))
    nrows, ncols = len(settings), len(params)
    fig = Figure(figsize=(3.6 * ncols, 2.6 * nrows + 0.4))
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for i, s in enumerate(settings):
        for j, p in enumerate(params):
            ax = axes[i][j]
            sub = curves[(curves["setting"] == s) & (curves["parameter"] == p)]
            for rule, color in FIGURE4_RULES:
                c = sub[sub["rule"] == rule].sort_values("position")
                if c.empty:
                    continue
                ax.plot(c["position"], c["accuracy_pct"], marker="o", ms=3, lw=1.2, color=color, label=rule)
            ticks = sub.drop_duplicates("position").sort_values("position")
            ax.set_xticks(ticks["position"].tolist())
            ax.set_xticklabels(ticks["value"].tolist(), fontsize="small")
            ax.set_xlabel(p)
            if j == 0:
                ax.set_ylabel(f"{s}\naccuracy (%)", fontsize="small")
            ax.grid(True, alpha=0.3, lw=0.5)
    axes[0][0].legend(fontsize="small", frameon=False)
    if title:
        fig.suptitle(title)
    # keep 0.4 inch at the top for the title
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.4 / fig.get_figheight()))
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, out, dpi=110)
    return out


