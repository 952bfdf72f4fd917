"""Khardon & Wachman (2007) Figure 4, drawn from the parameter-search results."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from perceptron_lab.run.figures import _figure, label_outer, legend_outside, rule_order, rule_style, save_figure

# Khardon & Wachman (2007) Figure 4: one line per prediction rule, in the rule's style of
# perceptron_lab.run.figures.RULE_STYLES.
FIGURE4_RULES = ("Last", "Longest", "Voted")
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
    the rules keep their styles of :data:`perceptron_lab.run.figures.RULE_STYLES` (the legend sits right of
    the panels), and the panels of a row (one data set) share a y axis spanning at least
    :data:`MIN_SPAN_PCT` accuracy points.
    """
    if curves.empty:
        raise ValueError("no parameter curves to plot")
    settings = list(dict.fromkeys(curves["setting"]))
    params = list(dict.fromkeys(curves["parameter"]))
    nrows, ncols = len(settings), len(params)
    if title:
        import textwrap

        width = int(3.6 * ncols * 12)   # characters of a medium font per line
        title = "\n".join(textwrap.fill(part, width) for part in title.split("\n"))
    lines = title.count("\n") + 1 if title else 0
    fig = _figure(3.6 * ncols + 1.1, 2.6 * nrows + 0.2 * lines + 0.1)
    # a column is one parameter: its x axis is shared, labelled under the bottom panel only; a row is
    # one data set (setting): its panels compare one accuracy, on one y axis
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex="col", sharey="row")
    for i, s in enumerate(settings):
        for j, p in enumerate(params):
            ax = axes[i][j]
            sub = curves[(curves["setting"] == s) & (curves["parameter"] == p)]
            for rule in rule_order(FIGURE4_RULES):
                c = sub[sub["rule"] == rule].sort_values("position")
                if c.empty:
                    continue
                ax.plot(c["position"], c["accuracy_pct"], ms=4, lw=1.3, label=rule, **rule_style(rule))
            row = curves[curves["setting"] == s]
            if len(row):
                ax.set_ylim(*y_limits(row["accuracy_pct"].astype(float)))
            ticks = sub.drop_duplicates("position").sort_values("position")
            ax.set_xticks(ticks["position"].tolist())
            ax.set_xticklabels(ticks["value"].tolist(), fontsize="small")
            ax.set_xlabel(p)
            if j == 0:
                ax.set_ylabel(f"{s}\naccuracy (%)", fontsize="small")
            ax.grid(True, alpha=0.3, lw=0.5)
    label_outer(axes, nrows * ncols, ncols, ylabels=True)
    for ax in axes[:, 1:].flat:   # the row's scale is read off its first panel
        ax.tick_params(labelleft=False)
    legend_outside(fig)
    if title:
        fig.suptitle(title, fontsize="medium")
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, out)
    return out
