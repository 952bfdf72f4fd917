"""``plab compare RUN_A RUN_B ...``: several runs side by side.

One table, a column per run (and per grid point of a run with a grid): the test error of every
prediction rule at the run's last epoch, then the mistake and support-vector counts, each as mean
± standard deviation over the run's folds and permutations; and one figure (test error against
epochs, a panel per rule, a line per column). Runs that reproduce a paper's table also get their
counts of cells within tolerance, and with ``--only-outside`` the cells outside it with their
causes (:func:`perceptron_lab.report.compare_text`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .errors import PlabError
from .plots import (COUNT_METRICS, _figure, epoch_axis, error_axis, label_outer, legend_outside, read_run, rule_order,
                    run_labels, save_figure, style, suptitle)

#: At most this many columns in the figure (the table keeps them all).
MAX_LINES = 10


def _columns(run_dirs) -> list[dict]:
    """One entry per (run, grid point): its name, results and last epoch."""
    cols, read = [], [(Path(d), *read_run(d)) for d in run_dirs]
    # two runs of one config are told apart by the shortest distinguishing tail of their folders
    names = run_labels([r[0] for r in read], [str(r[2].get("name") or r[0].name) for r in read])
    for (d, df, info, labels), name in zip(read, names):
        gps = sorted(df["gp"].unique())
        for g in gps:
            sub = df[df["gp"] == g]
            label = name + (f" [{labels.get(int(g)) or f'grid point {g}'}]" if len(gps) > 1 else "")
            cols.append({"name": label, "df": sub, "last": float(sub["epoch"].max()),
                         "runs": sub.groupby(["fold", "permutation"]).ngroups})
    return cols


def _cell(values: pd.Series, count: bool) -> str:
    if values.empty:
        return ""
    m = values.mean()
    s = values.std(ddof=1) if len(values) > 1 else float("nan")
    if count:
        return f"{m:.1f}" + ("" if s != s else f" ± {s:.1f}")
    return f"{m:.2f}" + ("" if s != s else f" ± {s:.2f}")


def side_by_side(run_dirs) -> pd.DataFrame:
    """The table: rows ``test error % <rule>`` (the rules in the order the runs list them), then
    ``mistakes`` and ``support vectors``; a column per run (per grid point)."""
    cols = _columns(run_dirs)
    rules: list[str] = []
    for c in cols:
        rules += [r for r in dict.fromkeys(c["df"].loc[c["df"]["metric"] == "test_error_pct", "label"])
                  if r not in rules]
    rows = {"epoch (last)": [f"{c['last']:g}" for c in cols], "runs (folds x permutations)": [str(c["runs"]) for c in cols]}
    for r in rules:
        rows[f"test error % {r}"] = [_cell(_at_last(c, "test_error_pct", r), False) for c in cols]
    for m in COUNT_METRICS:
        vals = [_cell(_at_last(c, m, None), True) for c in cols]
        if any(vals):
            rows[m.replace("_", " ")] = vals
    return pd.DataFrame(rows, index=[c["name"] for c in cols]).T


def _at_last(c: dict, metric: str, rule) -> pd.Series:
    d = c["df"]
    d = d[(d["metric"] == metric) & (d["epoch"] == c["last"])]
    if rule is not None:
        d = d[d["label"] == rule]
    # one value per fold and permutation (counts: totals over labels are already one row each)
    return d.groupby(["fold", "permutation"])["value"].sum() if rule is None else d.set_index(
        ["fold", "permutation"])["value"]


def plot_side_by_side(run_dirs, out) -> Path:
    """Test error against epochs, a panel per rule, a line per run (per grid point), every panel on
    one y scale fitted to the data (:func:`perceptron_lab.plots.error_axis`); the legend, outside the panels, names each run by its shortest
    distinguishing label (:func:`perceptron_lab.plots.run_labels`)."""
    cols = _columns(run_dirs)[:MAX_LINES]
    rules: list[str] = []
    for c in cols:
        rules += [r for r in dict.fromkeys(c["df"].loc[c["df"]["metric"] == "test_error_pct", "label"])
                  if r not in rules]
    if not rules:
        raise PlabError("the runs have no test-error results to draw")
    rules = rule_order(rules)
    ncols = min(3, len(rules))
    nrows = -(-len(rules) // ncols)
    longest = max(len(c["name"]) for c in cols)
    fig = _figure(4.4 * ncols + 0.6 + 0.075 * min(longest, 60), 3.3 * nrows + 0.6)
    # one x and one y scale for every panel: tick labels on the outer panels only (less to lay out)
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True)
    drawn, epochs = [], [e for c in cols for e in c["df"]["epoch"].unique()]
    for ax, rule in zip(axes.flat, rules):
        for k, c in enumerate(cols):
            d = c["df"]
            d = d[(d["metric"] == "test_error_pct") & (d["label"] == rule)]
            if d.empty:
                continue
            curve = d.groupby("epoch")["value"].mean()
            ax.plot(curve.index, curve.values, lw=1.4, ms=3.5, label=c["name"],
                    markevery=max(1, len(curve) // 10), **style(k))
            drawn += list(curve.values)
        ax.set_title(rule, fontsize="medium")
        epoch_axis(ax, epochs)
        ax.grid(True, alpha=0.3, lw=0.5)
    error_axis(axes.flat[0], drawn)    # shared by every panel
    for ax in list(axes.flat)[len(rules):]:
        ax.set_visible(False)
    label_outer(axes, len(rules), ncols, sharey=True)
    legend_outside(fig, fontsize="x-small")
    suptitle(fig, "test error vs epochs, runs side by side (mean over folds and permutations)")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, out)
    return out


def table_text(table: pd.DataFrame) -> str:
    with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 250,
                           "display.max_colwidth", 60):
        return table.to_string()


__all__ = ["side_by_side", "plot_side_by_side", "table_text"]
