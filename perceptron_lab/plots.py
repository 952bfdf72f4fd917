"""Figures: what every figure shares (atomic PNG writes, line styles) and the figures of any run
(``plab plot RUN_DIR``; drawn by ``plab run`` when ``output.figures`` is true). The papers' own
figures are drawn by their plug-ins (``perceptron_lab/papers/<paper>/figures.py``).

A run's figures, written beside its ``results.csv``:

``learning_curves.png``  test error (%) against epochs, one line per prediction rule (mean over
                         folds and permutations, band ± one standard deviation), a panel per grid
                         point
``counts.png``           mistakes and support vectors (totals over labels) against epochs
``parameter_curve.png``  runs with a grid: test error at the last epoch against the grid point
``folds.png``            k-fold and nested runs: the spread over folds of the last epoch's test
                         error, per rule (nested: the outer folds' errors of the selected points)

Every y axis starts at 0, so that a difference is seen at its true size.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

from .errors import PlabError
from .store import read_back_csv, read_back_json

#: (colour, line style, marker) per line, in order: every line differs in all three.
LINE_STYLES = (("C0", "-", "o"), ("C3", "--", "s"), ("C2", ":", "^"), ("C1", "-.", "D"),
               ("C4", (0, (5, 1.5, 1, 1.5, 1, 1.5)), "v"), ("C5", (0, (1, 1)), "P"), ("C6", (0, (8, 2)), "X"),
               ("C7", (0, (3, 1, 1, 1)), "*"), ("C8", "-", "<"), ("C9", "--", ">"))
#: At most this many grid points get a panel of their own (the rest are named in the title).
MAX_PANELS = 9
#: At most this many grid points are named on the parameter curve's axis.
MAX_NAMED_POINTS = 40
COUNT_METRICS = ("mistakes", "support_vectors")


def style(k: int) -> dict:
    color, ls, marker = LINE_STYLES[k % len(LINE_STYLES)]
    return {"color": color, "ls": ls, "marker": marker}


def save_figure(fig, out, **kwargs) -> None:
    """Render ``fig`` as PNG, marked as plab's (:func:`perceptron_lab.store.png_metadata`), and
    write it atomically (like every other output)."""
    from .store import atomic_write_bytes, png_metadata

    buf = io.BytesIO()
    kwargs.setdefault("metadata", png_metadata())
    fig.savefig(buf, format="png", **kwargs)
    atomic_write_bytes(out, buf.getvalue())


def _figure(w: float, h: float):
    # A bare Figure on the Agg canvas: no pyplot state, no dependence on the session's backend.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h))
    FigureCanvasAgg(fig)
    return fig


# ----------------------------------------------------------------------------- reading a run


def read_run(run_dir, info: dict | None = None):
    """(results, run.json, grid labels) of a finished run folder; PlabError when it is not one.

    ``results`` holds the multiclass rows (class ``all``) of the outer units with numeric
    ``epoch`` and ``value`` and a ``label`` per rule (``vote``, ``avg (norm)``); nested runs keep
    their selection rows (``search`` not empty) apart in ``results.attrs["selected"]``."""
    import pandas as pd

    run_dir = Path(run_dir)
    res = run_dir / "results.csv"
    if not res.is_file():
        raise PlabError(f"{run_dir}: no results.csv; give a run folder written by 'plab run'")
    if info is None:
        # a missing run.json leaves the run unnamed; a damaged one stops (DamagedFileError)
        info = read_back_json(run_dir / "run.json") if (run_dir / "run.json").exists() else {}
    need = ["rule", "metric", "value", "epoch", "grid_point", "fold", "permutation"]
    df = read_back_csv(res, need, rows=(info.get("csv_rows") or {}).get("results.csv"))
    if "class" in df:
        df = df[df["class"] == "all"]
    df = df.assign(epoch=pd.to_numeric(df["epoch"], errors="coerce"),
                   value=pd.to_numeric(df["value"], errors="coerce"),
                   gp=pd.to_numeric(df["grid_point"], errors="coerce").fillna(0).astype(int))
    norm = df["normalized"].str.lower() if "normalized" in df else pd.Series("", index=df.index)
    df["label"] = df["rule"].where(norm != "true", df["rule"] + " (norm)")
    selected = df[df["search"] != ""] if "search" in df else df.iloc[:0]
    if "inner_fold" in df:
        df = df[df["inner_fold"].isin(["-1", ""])]
    if "search" in df:
        df = df[df["search"] == ""]
    df = df.dropna(subset=["epoch", "value"])
    if df.empty:
        raise PlabError(f"{res}: no finished results to plot")
    df.attrs["selected"] = selected
    return df, info, grid_labels(run_dir)


def grid_labels(run_dir) -> dict:
    """Grid point -> the values that vary between points (``tau=0.125``), from ``grid.csv``."""
    import pandas as pd

    g = Path(run_dir) / "grid.csv"
    if not g.is_file():
        return {}
    t = read_back_csv(g, ["grid_point"])
    cols = [c for c in t.columns if c != "grid_point" and t[c].nunique() > 1]
    return {int(r["grid_point"]): ", ".join(f"{c.split('.')[-1]}={r[c]}" for c in cols) for _, r in t.iterrows()}


def _describe(info: dict, df) -> str:
    cfg = info.get("config") or {}
    ds = (cfg.get("dataset") or {}).get("name") or (df["dataset"].iloc[0] if "dataset" in df else "?")
    mode = (cfg.get("evaluation") or {}).get("mode", "holdout")
    runs = df.groupby(["fold", "permutation"]).ngroups
    what = {"kfold": "folds x permutations", "nested": "outer folds x permutations"}.get(mode, "permutations")
    return f"{ds}, {mode}; mean ± std over {runs} runs ({what})"


def _mean_std(df, keys):
    # pandas' grouped std (ddof=1) is NaN for a group of one value
    g = df.groupby(keys, sort=True)["value"]
    return g.agg(mean="mean", std="std").reset_index()


def _panels(n: int):
    ncols = min(3, n)
    return math.ceil(n / ncols), ncols


def _title(info, what: str) -> str:
    return f"{info.get('name') or 'run'}: {what}"


def suptitle(fig, text: str) -> None:
    """A figure title wrapped to the figure's width."""
    import textwrap

    fig.suptitle(textwrap.fill(text, max(40, int(fig.get_figwidth() * 13))), fontsize="medium")


def epoch_axis(ax, epochs) -> None:
    """Epochs on x: logarithmic when they span two decades or more (0.1 ... 30), as in Freund &
    Schapire's Figure 2, else linear."""
    from matplotlib.ticker import FuncFormatter

    e = [float(x) for x in epochs if float(x) > 0]
    if e and max(e) / min(e) >= 100:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("epochs (log scale)")
    else:
        ax.set_xlabel("epochs")


# ----------------------------------------------------------------------------- the figures


def plot_learning_curves(df, info, labels, out) -> Path | None:
    """Test error against epochs, a line per rule, a panel per grid point."""
    err = df[df["metric"] == "test_error_pct"]
    if err.empty:
        return None
    curves = _mean_std(err, ["gp", "label", "epoch"])
    gps = sorted(curves["gp"].unique())
    shown = gps[:MAX_PANELS]
    nrows, ncols = _panels(len(shown))
    fig = _figure(4.4 * ncols, 3.3 * nrows + 0.35)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    rules = list(dict.fromkeys(err["label"]))
    many = curves["epoch"].nunique() > 25
    for ax, g in zip(axes.flat, shown):
        sub = curves[curves["gp"] == g]
        for k, rule in enumerate(rules):
            c = sub[sub["label"] == rule]
            if c.empty:
                continue
            st = style(k)
            ax.plot(c["epoch"], c["mean"], lw=1.4, ms=3.5, label=rule, markevery=max(1, len(c) // 10) if many else 1,
                    **st)
            if c["std"].notna().any():
                ax.fill_between(c["epoch"], c["mean"] - c["std"], c["mean"] + c["std"], color=st["color"],
                                alpha=0.10, lw=0)
        ax.set_ylim(0, max(1.0, float((sub["mean"] + sub["std"].fillna(0)).max()) * 1.08))
        epoch_axis(ax, sub["epoch"])
        ax.set_ylabel("test error (%)")
        if len(gps) > 1:
            ax.set_title(labels.get(int(g)) or f"grid point {g}", fontsize="medium")
        ax.grid(True, alpha=0.3, lw=0.5)
    for ax in list(axes.flat)[len(shown):]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize="small", frameon=False)
    more = f"; the first {len(shown)} of {len(gps)} grid points" if len(gps) > len(shown) else ""
    suptitle(fig, _title(info, f"test error vs epochs ({_describe(info, err)}{more})"))
    fig.tight_layout()
    save_figure(fig, out, dpi=110)
    return Path(out)


def plot_counts(df, info, labels, out) -> Path | None:
    """Mistakes and support vectors (totals over labels) against epochs, a line per grid point."""
    cnt = df[df["metric"].isin(COUNT_METRICS)]
    if cnt.empty:
        return None
    curves = _mean_std(cnt, ["metric", "gp", "epoch"])
    gps = sorted(curves["gp"].unique())[:len(LINE_STYLES)]
    metrics = [m for m in COUNT_METRICS if m in set(curves["metric"])]
    fig = _figure(4.6 * len(metrics), 3.6)
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, m in zip(axes, metrics):
        sub = curves[curves["metric"] == m]
        for k, g in enumerate(gps):
            c = sub[sub["gp"] == g]
            name = labels.get(int(g)) or ("" if len(gps) == 1 else f"grid point {g}")
            ax.plot(c["epoch"], c["mean"], lw=1.4, ms=3.5, label=name or None,
                    markevery=max(1, len(c) // 10), **style(k))
            if c["std"].notna().any():
                ax.fill_between(c["epoch"], c["mean"] - c["std"], c["mean"] + c["std"], color=style(k)["color"],
                                alpha=0.10, lw=0)
        ax.set_ylim(0, None)
        epoch_axis(ax, sub["epoch"])
        ax.set_ylabel(m.replace("_", " ") + " (total over labels)")
        ax.grid(True, alpha=0.3, lw=0.5)
    if len(gps) > 1:
        axes[0].legend(fontsize="small", frameon=False)
    suptitle(fig, _title(info, f"mistakes and support vectors vs epochs ({_describe(info, cnt)})"))
    fig.tight_layout()
    save_figure(fig, out, dpi=110)
    return Path(out)


def _numeric(values) -> list | None:
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        return None


def plot_parameter_curve(df, info, run_dir, out) -> Path | None:
    """Runs with a grid: test error at the last epoch against the grid point, a line per rule.
    With one numeric grid parameter the x axis is its value, otherwise the grid points in order."""
    import pandas as pd

    err = df[df["metric"] == "test_error_pct"]
    if err.empty or err["gp"].nunique() < 2:
        return None
    last = err["epoch"].max()
    curves = _mean_std(err[err["epoch"] == last], ["gp", "label"])
    g = read_back_csv(Path(run_dir) / "grid.csv", ["grid_point"]) \
        if (Path(run_dir) / "grid.csv").is_file() else pd.DataFrame({"grid_point": []})
    cols = [c for c in g.columns if c != "grid_point" and g[c].nunique() > 1]
    xs = dict(zip(g["grid_point"].astype(int), _numeric(g[cols[0]]) or [])) if len(cols) == 1 else {}
    labels = grid_labels(run_dir)
    numeric = len(xs) == curves["gp"].nunique()
    fig = _figure(max(5.5, min(12, 0.5 * curves["gp"].nunique() + 3)), 4.0)
    ax = fig.subplots()
    rules = list(dict.fromkeys(curves["label"]))
    vals = sorted(xs.values()) if numeric else []
    logx = numeric and vals[0] > 0 and vals[-1] / vals[0] >= 100
    # the rules' points side by side around each x, so that their error bars do not hide each other
    span = (vals[-1] - vals[0]) if numeric and not logx else (1.0 if not numeric else 0.0)
    for k, rule in enumerate(rules):
        c = curves[curves["label"] == rule].sort_values("gp")
        dodge = (k - (len(rules) - 1) / 2) * 0.012 * span
        x = [xs[int(p)] + dodge for p in c["gp"]] if numeric else [i + dodge * 5 for i in range(len(c))]
        order = sorted(range(len(x)), key=lambda i: x[i])
        st = style(k)
        ax.errorbar([x[i] for i in order], c["mean"].to_numpy()[order], yerr=c["std"].fillna(0).to_numpy()[order],
                    capsize=2.5, lw=1.4, ms=4, label=rule, **st)
    if numeric:
        ax.set_xlabel(cols[0])
        if logx:
            ax.set_xscale("log")
    else:
        gps = sorted(curves["gp"].unique())
        if len(gps) <= MAX_NAMED_POINTS:
            ax.set_xticks(range(len(gps)))
            ax.set_xticklabels([labels.get(int(p)) or str(p) for p in gps], rotation=30, ha="right", fontsize="small")
            ax.set_xlabel("grid point")
        else:  # too many to name legibly (and slow to draw): numbered, grid.csv names them
            ax.set_xlabel("grid point (numbered in plan order; grid.csv gives each one's values)")
    ax.set_ylim(0, max(1.0, float((curves["mean"] + curves["std"].fillna(0)).max()) * 1.08))
    ax.set_ylabel(f"test error (%) at epoch {last:g}")
    ax.grid(True, alpha=0.3, lw=0.5)
    ax.legend(fontsize="small", frameon=False)
    suptitle(fig, _title(info, f"test error vs grid point ({_describe(info, err)}, bars ± std)"))
    fig.tight_layout()
    save_figure(fig, out, dpi=110)
    return Path(out)


def plot_folds(df, info, labels, out) -> Path | None:
    """k-fold and nested runs: the spread over folds of the last epoch's test error per rule
    (mean over permutations within a fold); one box per rule, each fold a dot. Nested runs show
    the outer folds' errors of the parameters selected on the inner folds, per search plan."""
    import numpy as np

    mode = ((info.get("config") or {}).get("evaluation") or {}).get("mode", "holdout")
    sel = df.attrs.get("selected")
    if mode == "nested" and sel is not None and len(sel):
        err = sel[sel["metric"] == "test_error_pct"].dropna(subset=["value"])
        groups = [(f"plan {s}", err[err["search"] == s]) for s in dict.fromkeys(err["search"])]
        what = "outer-fold test error of the selected parameters"
    else:
        err = df[df["metric"] == "test_error_pct"]
        if err.empty or err["fold"].nunique() < 2:
            return None
        err = err[err["epoch"] == err["epoch"].max()]
        gps = sorted(err["gp"].unique())[:MAX_PANELS]
        groups = [(labels.get(int(g)) or ("" if len(gps) == 1 else f"grid point {g}"), err[err["gp"] == g])
                  for g in gps]
        what = f"test error at epoch {err['epoch'].max():g} over folds"
    if not groups:
        return None
    nrows, ncols = _panels(len(groups))
    fig = _figure(4.4 * ncols, 3.4 * nrows + 0.35)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    rng = np.random.default_rng(0)   # jitter of the dots only
    top = 1.0
    for ax, (name, sub) in zip(axes.flat, groups):
        per_fold = sub.groupby(["label", "fold"], sort=False)["value"].mean().reset_index()
        rules = list(dict.fromkeys(per_fold["label"]))
        data = [per_fold.loc[per_fold["label"] == r, "value"].to_numpy() for r in rules]
        ax.boxplot(data, widths=0.5, showfliers=False)
        for k, d in enumerate(data):
            ax.plot(k + 1 + rng.uniform(-0.12, 0.12, len(d)), d, ls="none", marker=style(k)["marker"],
                    color=style(k)["color"], ms=4, alpha=0.8)
            top = max(top, float(d.max()) if len(d) else 0)
        ax.set_xticks(range(1, len(rules) + 1))
        ax.set_xticklabels(rules, fontsize="small")
        ax.set_ylabel("test error (%)")
        if name:
            ax.set_title(name, fontsize="medium")
        ax.grid(True, axis="y", alpha=0.3, lw=0.5)
    for ax in axes.flat:
        ax.set_ylim(0, top * 1.08)
    for ax in list(axes.flat)[len(groups):]:
        ax.set_visible(False)
    n = err["fold"].nunique()
    suptitle(fig, _title(info, f"{what} ({n} folds; box: quartiles, dots: folds)"))
    fig.tight_layout()
    save_figure(fig, out, dpi=110)
    return Path(out)


def plot_run(run_dir, out_dir=None, info: dict | None = None) -> list[Path]:
    """Every figure of a run folder (see the module's docstring), written to ``out_dir`` (default:
    the run folder). ``info`` stands for the folder's run.json (its ``name`` and ``config``).
    Returns the paths written."""
    run_dir = Path(run_dir)
    out = Path(out_dir) if out_dir else run_dir
    out.mkdir(parents=True, exist_ok=True)
    df, info, labels = read_run(run_dir, info)
    written = [plot_learning_curves(df, info, labels, out / "learning_curves.png"),
               plot_counts(df, info, labels, out / "counts.png"),
               plot_parameter_curve(df, info, run_dir, out / "parameter_curve.png"),
               plot_folds(df, info, labels, out / "folds.png")]
    return [p for p in written if p is not None]


__all__ = ["LINE_STYLES", "style", "suptitle", "epoch_axis", "save_figure", "read_run", "grid_labels", "plot_run", "plot_learning_curves",
           "plot_counts", "plot_parameter_curve", "plot_folds"]
