"""Figures: what every figure shares (one style per prediction rule, y limits fitted to the data,
legends outside the panels, atomic PNG writes) and the figures of any run (``plab plot RUN_DIR``;
drawn by ``plab run`` when ``output.figures`` is true). The papers' own figures are drawn by their
plug-ins (``perceptron_lab/papers/<paper>/figures.py``), the budget study's by
:mod:`perceptron_lab.studies.budget` and ``plab compare``'s by :mod:`perceptron_lab.report.compare`; all of
them take their styles and layout from here.

A run's figures, written beside its ``results.csv``:

``learning_curves.png``  test error (%) against epochs, one line per prediction rule (mean over
                         folds and permutations, band ± one standard deviation), a panel per grid
                         point
``counts.png``           mistakes and support vectors (totals over labels) against epochs
``parameter_curve.png``  runs with a grid: test error at the last epoch against the grid point
``folds.png``            k-fold and nested runs: the spread over folds of the last epoch's test
                         error, per rule (nested: the outer folds' errors of the selected points)

Conventions shared by every figure:

* a prediction rule has one colour, line style and marker everywhere (:data:`RULE_STYLES`; a
  normalised rule keeps its rule's colour in a darker shade, with half-filled markers), and a
  paper's published values are open markers of the rule's shape (:func:`paper_style`) labelled
  "paper";
* a y axis spans the data drawn (means, bands and paper values) and starts at 0 only when the data
  come close to 0 (:func:`fit_ylim`), so that 1.58 and 1.64 do not look equal;
* legends sit outside the panels (:func:`legend_outside`) and every figure is laid out by
  matplotlib's constrained layout, titles wrapped to the figure's width (:func:`suptitle`), so that
  nothing is clipped.
"""

from __future__ import annotations

import io
import json
import math
import zlib
from pathlib import Path

from perceptron_lab.errors import PlabError, UsageError
from perceptron_lab.run.store import damaged, read_back_csv, read_back_json

#: (colour, line style, marker) per line that is not a prediction rule (grid points, runs,
#: algorithms), in order: every line differs in all three.
LINE_STYLES = (("C0", "-", "o"), ("C3", "--", "s"), ("C2", ":", "^"), ("C1", "-.", "D"),
               ("C4", (0, (5, 1.5, 1, 1.5, 1, 1.5)), "v"), ("C5", (0, (1, 1)), "P"), ("C6", (0, (8, 2)), "X"),
               ("C7", (0, (3, 1, 1, 1)), "*"), ("C8", "-", "<"), ("C9", "--", ">"))
#: (colour, line style, marker) of each prediction rule, in every figure. Vote and avg often lie on
#: top of each other, so every pair differs in all three.
RULE_STYLES = {
    "vote": ("C0", "-", "o"),
    "last": ("C3", "--", "s"),
    "avg": ("C2", "-.", "^"),
    "random": ("C1", ":", "D"),
    "longest": ("C4", (0, (5, 1.5, 1, 1.5, 1, 1.5)), "v"),
}
#: Other spellings of the rules (the papers' own names) -> the key of :data:`RULE_STYLES`.
RULE_ALIASES = {"voted": "vote", "average": "avg", "averaged": "avg", "rand": "random", "classical": "last",
                "longest survivor": "longest", "longest_survivor": "longest"}
#: (colour, line style, marker) of each algorithm drawn as a line of its own (the budget study,
#: margin figures): one style per algorithm in every figure.
ALGORITHM_STYLES = {
    "perceptron": ("k", "-", None),
    "stoptron": ("C0", "-", "o"),
    "rbp": ("C3", "--", "s"),
    "forgetron": ("C2", ":", "^"),
    "projectron": ("C1", "-.", "D"),
    "projectron++": ("C4", (0, (5, 1.5, 1, 1.5, 1, 1.5)), "v"),
    "norma": ("C5", (0, (1, 1)), "P"),
    "nystroem_perceptron": ("C6", (0, (8, 2)), "X"),
    "nystroem_sgd": ("C7", (0, (3, 1, 1, 1)), "*"),
    "alma": ("C8", "-", "<"),
}
#: At most this many grid points get a panel of their own (the rest are named in the title).
MAX_PANELS = 9
#: At most this many grid points are named on the parameter curve's axis.
MAX_NAMED_POINTS = 40
COUNT_METRICS = ("mistakes", "support_vectors")
#: Resolution of every PNG written.
DPI = 110
#: zlib level of the PNGs (1: fastest).
PNG_COMPRESS_LEVEL = 1
#: An error axis is logarithmic when its curves span at least this factor (:func:`error_axis`).
LOG_Y_RATIO = 4.0
#: Margin above and below the data, as a fraction of their range.
Y_PAD = 0.06
#: The y axis starts at its floor (0 for errors and counts) when the smallest value lies within this
#: fraction of the data's range from it; otherwise it starts just below the data.
NEAR_FLOOR = 0.25


def style(k: int) -> dict:
    """Style of the ``k``-th line that is not a prediction rule (a grid point, a run)."""
    color, ls, marker = LINE_STYLES[k % len(LINE_STYLES)]
    return {"color": color, "ls": ls, "marker": marker}


def rule_key(label: str) -> tuple[str, bool]:
    """(rule, normalised) of a rule's label as the figures spell it: ``vote``, ``avg (norm)``,
    ``last_norm``, ``last (unnorm)``, ``Voted``, ``average (unnorm)``."""
    text = str(label).strip().lower()
    norm = ("norm" in text and "unnorm" not in text)
    base = text.split(" (")[0].split(",")[0].strip()
    if base.endswith("_norm"):
        base, norm = base[:-5], True
    return RULE_ALIASES.get(base, base), norm


def _darker(color: str, f: float = 0.6):
    from matplotlib.colors import to_rgb

    return tuple(f * c for c in to_rgb(color))


def rule_style(label: str) -> dict:
    """Colour, line style and marker of a prediction rule's line (:data:`RULE_STYLES`), the same in
    every figure; a normalised rule is its rule's style in a darker shade with half-filled markers.
    A label that is no known rule gets a style derived from its text, so that it too is stable
    from figure to figure."""
    base, norm = rule_key(label)
    if base in RULE_STYLES:
        color, ls, marker = RULE_STYLES[base]
    else:
        color, ls, marker = LINE_STYLES[zlib.crc32(base.encode()) % len(LINE_STYLES)]
    st = {"color": color, "ls": ls, "marker": marker}
    if norm:
        st.update(color=_darker(color), fillstyle="bottom", markerfacecoloralt="white")
    return st


def rule_order(labels) -> list[str]:
    """The rule labels in one order for every figure and legend: the order of
    :data:`RULE_STYLES`, each normalised rule after its rule, unknown labels last (as given)."""
    labels = list(dict.fromkeys(labels))
    known = list(RULE_STYLES)

    def key(i_lab):
        i, lab = i_lab
        base, norm = rule_key(lab)
        return (known.index(base) if base in known else len(known), norm, i)

    return [lab for _, lab in sorted(enumerate(labels), key=key)]


def algorithm_style(name: str) -> dict:
    """Colour, line style and marker of an algorithm's line (:data:`ALGORITHM_STYLES`)."""
    key = str(name).strip().lower()
    color, ls, marker = ALGORITHM_STYLES.get(key) or LINE_STYLES[zlib.crc32(key.encode()) % len(LINE_STYLES)]
    return {"color": color, "ls": ls, "marker": marker}


def paper_style(label: str) -> dict:
    """A paper's published values for a rule: large open markers of the rule's shape and colour,
    no line, drawn above the curves."""
    st = rule_style(label)
    return {"ls": "none", "marker": st["marker"], "ms": 6.5, "mfc": "none", "mec": st["color"], "mew": 1.3,
            "zorder": 4}


def fit_ylim(ax, values, floor: float | None = 0.0, ceiling: float | None = None) -> tuple[float, float]:
    """Set the y limits of ``ax`` to the range of ``values`` (every number drawn: means, bands,
    paper values) with a margin of :data:`Y_PAD`; the axis starts at ``floor`` only when the
    smallest value lies within :data:`NEAR_FLOOR` of the range from it, and never crosses
    ``floor`` or ``ceiling``. Returns the limits set."""
    import numpy as np

    v = np.asarray([float(x) for x in values], dtype=float)
    v = v[np.isfinite(v)]
    if not len(v):
        return ax.get_ylim()
    lo, hi = float(v.min()), float(v.max())
    span = hi - lo if hi > lo else max(abs(hi) * 0.05, 0.5)
    bottom, top = lo - Y_PAD * span, hi + Y_PAD * span
    if floor is not None and lo >= floor:   # data below the floor are never cut off
        bottom = floor if lo - floor <= NEAR_FLOOR * span else max(floor, bottom)
    if ceiling is not None and hi <= ceiling:
        top = min(ceiling, top)
    ax.set_ylim(bottom, top)
    return bottom, top


def error_axis(ax, curves, extra=(), label: str = "test error (%)") -> None:
    """The y axis of an error rate: logarithmic when the curves' values (``curves``) span a factor of
    :data:`LOG_Y_RATIO` or more (a learning curve falling from 12% to 1.6%: the converged end keeps
    its detail), else linear and fitted by :func:`fit_ylim`; ``extra`` (bands, paper values) widens
    the limits. Sets the axis label too."""
    import numpy as np
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    c = np.asarray([float(x) for x in curves], dtype=float)
    c = c[np.isfinite(c) & (c > 0)]
    if len(c) and c.max() / c.min() >= LOG_Y_RATIO:
        v = np.concatenate([c, np.asarray([float(x) for x in extra], dtype=float)])
        v = v[np.isfinite(v) & (v > 0) & (v >= c.min() / 2)]
        ax.set_yscale("log")
        ax.set_ylim(v.min() / 1.06, min(100.0, v.max() * 1.06))
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_ylabel(label.replace(")", ", log scale)") if label.endswith(")") else f"{label} (log scale)")
    else:
        fit_ylim(ax, list(curves) + list(extra), ceiling=100.0)
        ax.set_ylabel(label)


def log_axis(axis, ticks=None) -> None:
    """A logarithmic ``axis`` (``ax.xaxis`` or ``ax.yaxis``) labelled in plain numbers (``200``, not
    ``2 x 10^2``): major ticks at ``ticks`` (e.g. the budgets tried) or at 1, 2 and 5 per decade,
    no minor ticks (unlabelled minor ticks cost most of a log axis's drawing time)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator

    getattr(axis.axes, f"set_{axis.axis_name}scale")("log")
    axis.set_major_locator(FixedLocator(sorted(set(ticks))) if ticks is not None else LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_locator(NullLocator())


#: A spread band: a light fill and its two edges drawn as thin lines of the curve's colour, so that
#: where the bands of several curves overlap each one's edges can still be followed.
BAND_ALPHA = 0.07
BAND_EDGE = {"lw": 0.7, "alpha": 0.55, "ls": (0, (4, 2))}


def spread_band(ax, x, mean, std, color) -> None:
    """Mean ± std of a curve as a band: a light fill (:data:`BAND_ALPHA`) bounded by thin dashed
    lines of ``color`` (:data:`BAND_EDGE`); nothing where the std is unknown (one run)."""
    import numpy as np

    x, mean, std = (np.asarray(v, dtype=float) for v in (x, mean, std))
    ok = np.isfinite(std)
    if not ok.any():
        return
    lo, hi = mean - std, mean + std
    ax.fill_between(x[ok], lo[ok], hi[ok], color=color, alpha=BAND_ALPHA, lw=0)
    for edge in (lo, hi):
        ax.plot(x[ok], edge[ok], color=color, **BAND_EDGE)


def label_outer(axes, n: int, ncols: int, sharey: bool = False, ylabels: bool = False) -> None:
    """Panels of one grid sharing their x axis (and, with ``sharey``, their y axis): x tick labels
    and x label on the lowest panel of each column only, y label on the first column only (y tick
    labels too with ``sharey``; ``ylabels`` keeps every panel's y label, for panels whose y scales
    differ). Fewer texts to lay out and draw, and less repetition to read."""
    flat = list(axes.flat)[:n]
    ylabel = flat[0].get_ylabel() if flat else ""
    xlabel = flat[-1].get_xlabel() if flat else ""
    for k, ax in enumerate(flat):
        if k + ncols < n:
            ax.tick_params(labelbottom=False)
            ax.set_xlabel("")
        else:   # the lowest panel of its column, above an empty slot too: matplotlib's sharex hid them
            ax.tick_params(labelbottom=True)
            ax.xaxis.get_offset_text().set_visible(True)
            ax.set_xlabel(ax.get_xlabel() or xlabel)
        if k % ncols:
            if not ylabels:
                ax.set_ylabel("")
            if sharey:
                ax.tick_params(labelleft=False)
        elif sharey:
            ax.set_ylabel(ylabel)


def legend_outside(fig, axes=None, where: str = "right", **kwargs):
    """One legend for the figure, outside the panels, holding every labelled line of ``axes``
    (default: all) once. ``where="right"``: right of the top-right panel, attached to it, so that
    constrained layout (:func:`_figure`) reserves its width beside the panels and the figure's
    title stays above it; ``where="below"``: under the panels, in columns. Returns the legend,
    or None when no line is labelled."""
    axes = [ax for ax in (axes if axes is not None else fig.axes)]
    seen: dict = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab and not lab.startswith("_"):
                seen.setdefault(lab, h)
    if not seen:
        return None
    opts = {"fontsize": "small", "frameon": False}
    if where == "below":
        opts["ncol"] = min(len(seen), 4)
        opts.update(kwargs)
        return fig.legend(list(seen.values()), list(seen), loc="outside lower center", **opts)
    opts.update(kwargs)
    visible = [ax for ax in fig.axes if ax.get_visible() and ax.get_subplotspec() is not None]
    if not visible:
        return fig.legend(list(seen.values()), list(seen), loc="outside right upper", **opts)
    spec = lambda ax: ax.get_subplotspec()
    top_right = min(visible, key=lambda ax: (spec(ax).rowspan.start, -spec(ax).colspan.stop))
    return top_right.legend(list(seen.values()), list(seen), loc="upper left", bbox_to_anchor=(1.02, 1.0),
                            borderaxespad=0.0, **opts)


def save_figure(fig, out, **kwargs) -> None:
    """Render ``fig`` as PNG (:data:`DPI` unless ``dpi`` is given), marked as plab's
    (:func:`perceptron_lab.run.store.png_metadata`), and write it atomically (like every other output)."""
    from perceptron_lab.run.store import atomic_write_bytes, png_metadata

    kwargs.setdefault("dpi", DPI)
    # zlib's fastest level: a few per cent larger files, several times less time than the default
    kwargs.setdefault("pil_kwargs", {"compress_level": PNG_COMPRESS_LEVEL})
    _lay_out_once(fig, kwargs["dpi"])
    buf = io.BytesIO()
    kwargs.setdefault("metadata", png_metadata())
    fig.savefig(buf, format="png", **kwargs)
    atomic_write_bytes(out, buf.getvalue())


def _lay_out_once(fig, dpi) -> None:
    """Run ``fig``'s constrained layout now and detach it, when the figure is drawn at its own dpi.

    With a layout engine attached, ``savefig`` first draws the whole figure without rendering it,
    only to run the layout, then draws it again for the PNG. Running the layout directly gives the
    same positions (the engine runs once, from the same state, in both cases; the PNG is the same
    byte for byte) and saves that first draw."""
    import matplotlib as mpl
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    engine = fig.get_layout_engine()
    if not isinstance(engine, ConstrainedLayoutEngine) or dpi != fig.dpi:
        return
    engine.execute(fig)
    # None (not "none", which keeps a placeholder engine and so the extra draw) detaches it
    with mpl.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)


def _figure(w: float, h: float):
    """A bare Figure on the Agg canvas (no pyplot state, no dependence on the session's backend),
    laid out by constrained layout when it is saved (:func:`save_figure`): titles, labels and
    outside legends get their room."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


# ----------------------------------------------------------------------------- reading a run


def read_run(run_dir, info: dict | None = None):
    """(results, run.json, grid labels) of a finished run folder; UsageError (exit status 2) when it
    is not one (no results.csv), PlabError when its results.csv holds no finished row.

    ``results`` holds the multiclass rows (class ``all``) of the outer units with numeric
    ``epoch`` and ``value`` and a ``label`` per rule (``vote``, ``avg (norm)``); nested runs keep
    their selection rows (``search`` not empty) apart in ``results.attrs["selected"]``."""
    import pandas as pd

    run_dir = Path(run_dir)
    res = run_dir / "results.csv"
    if not res.is_file():
        raise UsageError(f"{run_dir}: no results.csv; give a run folder written by 'plab run'")
    if info is None:
        # a missing run.json leaves the run unnamed; a damaged one stops (DamagedFileError)
        info = read_back_json(run_dir / "run.json") if (run_dir / "run.json").exists() else {}
    need = ["rule", "metric", "value", "epoch", "grid_point", "fold", "permutation"]
    df = read_back_csv(res, need, rows=(info.get("csv_rows") or {}).get("results.csv"))
    for col in ("epoch", "value", "grid_point", "fold", "permutation"):
        # plab writes numbers there: text would be dropped or merged silently, moving every mean
        cells = df[col]
        bad = cells.ne("") & pd.to_numeric(cells, errors="coerce").isna() & \
            ~cells.str.lower().isin(["nan", "inf", "-inf"])
        if bad.any():
            i = int(bad.to_numpy().argmax())
            raise damaged(res, f"{col} = {cells.iloc[i]!r} on line {i + 2} is not a number")
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

    fig.suptitle(textwrap.fill(text, max(40, int(fig.get_figwidth() * 12))), fontsize="medium")


def run_labels(paths, names=None) -> list[str]:
    """Short labels that tell runs apart in a legend or a table header: each run's name (default:
    its folder's name) where no other run has it; otherwise the shortest tail of its path (folders
    counted from the end) that no other run's path ends with, after the name when the two differ
    (``mnist_d4 (fs1999/d4)``). The same folder given twice gets ``#1``, ``#2``."""
    paths = [Path(p).resolve() for p in paths]
    names = [str(n) for n in names] if names is not None else [p.name for p in paths]
    out = []
    for i, (p, n) in enumerate(zip(paths, names)):
        if names.count(n) == 1:
            out.append(n)
            continue
        others = [q for j, q in enumerate(paths) if j != i]
        tail = p.parts
        for k in range(1, len(p.parts) + 1):
            if all(q.parts[-k:] != p.parts[-k:] for q in others):
                tail = p.parts[-k:]
                break
        label = "/".join(tail)
        if any(q == p for q in others):
            tail = (p.name,)
            label = f"{p.name} #{sum(q == p for q in paths[:i]) + 1}"
        out.append(label if tail[-1] == n else f"{n} ({label})")
    return out


def epoch_axis(ax, epochs) -> None:
    """Epochs on x: logarithmic when they span two decades or more (0.1 ... 30), as in Freund &
    Schapire's Figure 2, else linear, with a tick at each epoch when there are at most 12."""
    from matplotlib.ticker import FuncFormatter, NullLocator

    e = [float(x) for x in epochs if float(x) > 0]
    if e and max(e) / min(e) >= 100:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(NullLocator())   # labelled decades only: minor ticks cost most of a draw
        ax.set_xlabel("epochs (log scale)")
    else:
        ax.set_xlabel("epochs")
        if 0 < len(set(e)) <= 12:   # a few checkpoints: a tick at each (one epoch: a single tick)
            ax.set_xticks(sorted(set(e)))


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
    fig = _figure(4.4 * ncols + 1.3, 3.3 * nrows + 0.35)
    # every panel shows one quantity, the test error: one y scale, so that panels compare at a glance
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True)
    rules = rule_order(err["label"])
    many = curves["epoch"].nunique() > 25
    drawn = curves[curves["gp"].isin(shown)]
    for ax, g in zip(axes.flat, shown):
        sub = curves[curves["gp"] == g]
        for k, rule in enumerate(rules):
            c = sub[sub["label"] == rule]
            if c.empty:
                continue
            st = rule_style(rule)
            ax.plot(c["epoch"], c["mean"], lw=1.4, ms=3.5, label=rule, markevery=max(1, len(c) // 10) if many else 1,
                    **st)
            spread_band(ax, c["epoch"], c["mean"], c["std"], st["color"])
        epoch_axis(ax, sub["epoch"])
        if len(gps) > 1:
            ax.set_title(labels.get(int(g)) or f"grid point {g}", fontsize="medium")
        ax.grid(True, alpha=0.3, lw=0.5)
    sd = drawn["std"].fillna(0)
    error_axis(axes.flat[0], drawn["mean"], list(drawn["mean"] - sd) + list(drawn["mean"] + sd))
    for ax in list(axes.flat)[len(shown):]:
        ax.set_visible(False)
    label_outer(axes, len(shown), ncols, sharey=True)
    legend_outside(fig)
    more = f"; the first {len(shown)} of {len(gps)} grid points" if len(gps) > len(shown) else ""
    suptitle(fig, _title(info, f"test error vs epochs ({_describe(info, err)}{more})"))
    save_figure(fig, out)
    return Path(out)


def plot_counts(df, info, labels, out) -> Path | None:
    """Mistakes and support vectors (totals over labels) against epochs, a line per grid point."""
    cnt = df[df["metric"].isin(COUNT_METRICS)]
    if cnt.empty:
        return None
    curves = _mean_std(cnt, ["metric", "gp", "epoch"])
    gps = sorted(curves["gp"].unique())[:len(LINE_STYLES)]
    metrics = [m for m in COUNT_METRICS if m in set(curves["metric"])]
    fig = _figure(4.6 * len(metrics) + (1.6 if len(gps) > 1 else 0), 3.6)
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, m in zip(axes, metrics):
        sub = curves[curves["metric"] == m]
        for k, g in enumerate(gps):
            c = sub[sub["gp"] == g]
            name = labels.get(int(g)) or ("" if len(gps) == 1 else f"grid point {g}")
            ax.plot(c["epoch"], c["mean"], lw=1.4, ms=3.5, label=name or None,
                    markevery=max(1, len(c) // 10), **style(k))
            spread_band(ax, c["epoch"], c["mean"], c["std"], style(k)["color"])
        sd = sub["std"].fillna(0)
        fit_ylim(ax, list(sub["mean"] - sd) + list(sub["mean"] + sd))
        epoch_axis(ax, sub["epoch"])
        ax.set_ylabel(m.replace("_", " ") + " (total over labels)")
        ax.grid(True, alpha=0.3, lw=0.5)
    if len(gps) > 1:
        legend_outside(fig)
    suptitle(fig, _title(info, f"mistakes and support vectors vs epochs ({_describe(info, cnt)})"))
    save_figure(fig, out)
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
    fig = _figure(max(5.5, min(12, 0.5 * curves["gp"].nunique() + 3)) + 1.3, 4.0)
    ax = fig.subplots()
    rules = rule_order(curves["label"])
    vals = sorted(xs.values()) if numeric else []
    logx = numeric and vals[0] > 0 and vals[-1] / vals[0] >= 100
    # the rules' points side by side around each x, so that their error bars do not hide each other
    span = (vals[-1] - vals[0]) if numeric and not logx else (1.0 if not numeric else 0.0)
    for k, rule in enumerate(rules):
        c = curves[curves["label"] == rule].sort_values("gp")
        dodge = (k - (len(rules) - 1) / 2) * 0.012 * span
        x = [xs[int(p)] + dodge for p in c["gp"]] if numeric else [i + dodge * 5 for i in range(len(c))]
        order = sorted(range(len(x)), key=lambda i: x[i])
        st = rule_style(rule)
        ax.errorbar([x[i] for i in order], c["mean"].to_numpy()[order], yerr=c["std"].fillna(0).to_numpy()[order],
                    capsize=2.5, lw=1.4, ms=4, label=rule, **st)
    if numeric:
        ax.set_xlabel(cols[0])
        if logx:
            log_axis(ax.xaxis, vals if len(vals) <= MAX_NAMED_POINTS else None)
        elif len(vals) <= MAX_NAMED_POINTS:   # a tick at each value tried: degree 2 and 3, not 2.2, 2.4 ...
            ax.set_xticks(vals)
            ax.set_xticklabels([f"{v:g}" for v in vals], fontsize="small" if len(vals) > 12 else None)
        elif all(float(v).is_integer() for v in vals):
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        gps = sorted(curves["gp"].unique())
        if len(gps) <= MAX_NAMED_POINTS:
            ax.set_xticks(range(len(gps)))
            ax.set_xticklabels([labels.get(int(p)) or str(p) for p in gps], rotation=30, ha="right", fontsize="small")
            ax.set_xlabel("grid point")
        else:  # too many to name legibly (and slow to draw): numbered, grid.csv names them
            ax.set_xlabel("grid point (numbered in plan order; grid.csv gives each one's values)")
    sd = curves["std"].fillna(0)
    fit_ylim(ax, list(curves["mean"] - sd) + list(curves["mean"] + sd), ceiling=100.0)
    ax.set_ylabel(f"test error (%) at epoch {last:g}")
    ax.grid(True, alpha=0.3, lw=0.5)
    legend_outside(fig)
    suptitle(fig, _title(info, f"test error vs grid point ({_describe(info, err)}, bars ± std)"))
    save_figure(fig, out)
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
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=True)
    rng = np.random.default_rng(0)   # jitter of the dots only
    drawn = []
    for ax, (name, sub) in zip(axes.flat, groups):
        per_fold = sub.groupby(["label", "fold"], sort=False)["value"].mean().reset_index()
        rules = rule_order(per_fold["label"])
        data = [per_fold.loc[per_fold["label"] == r, "value"].to_numpy() for r in rules]
        ax.boxplot(data, widths=0.5, showfliers=False, medianprops={"color": "k"})
        for r, d in zip(rules, data):
            st = rule_style(r)
            ax.plot(rules.index(r) + 1 + rng.uniform(-0.12, 0.12, len(d)), d, ls="none", marker=st["marker"],
                    color=st["color"], ms=4, alpha=0.8)
            drawn += list(d)
        ax.set_xticks(range(1, len(rules) + 1))
        ax.set_xticklabels(rules, fontsize="small")
        ax.set_ylabel("test error (%)")
        if name:
            ax.set_title(name, fontsize="medium")
        ax.grid(True, axis="y", alpha=0.3, lw=0.5)
    fit_ylim(axes.flat[0], drawn, ceiling=100.0)   # one scale for every panel: they compare at a glance
    for ax in list(axes.flat)[len(groups):]:
        ax.set_visible(False)
    for k, ax in enumerate(list(axes.flat)[:len(groups)]):   # the shared scale is read off the first column
        if k % ncols:
            ax.set_ylabel("")
    n = err["fold"].nunique()
    suptitle(fig, _title(info, f"{what} ({n} folds; box: quartiles, dots: folds)"))
    save_figure(fig, out)
    return Path(out)


def plot_run(run_dir, out_dir=None, info: dict | None = None) -> list[Path]:
    """Every figure of a run folder (see the module's docstring), written to ``out_dir`` (default:
    the run folder). ``info`` stands for the folder's run.json (its ``name`` and ``config``).
    Returns the paths written."""
    run_dir = Path(run_dir)
    out = Path(out_dir) if out_dir else run_dir
    df, info, labels = read_run(run_dir, info)   # first: a damaged run leaves no folder behind
    out.mkdir(parents=True, exist_ok=True)
    written = [plot_learning_curves(df, info, labels, out / "learning_curves.png"),
               plot_counts(df, info, labels, out / "counts.png"),
               plot_parameter_curve(df, info, run_dir, out / "parameter_curve.png"),
               plot_folds(df, info, labels, out / "folds.png")]
    return [p for p in written if p is not None]


__all__ = ["LINE_STYLES", "RULE_STYLES", "RULE_ALIASES", "ALGORITHM_STYLES", "style", "rule_key", "rule_style",
           "rule_order", "algorithm_style", "paper_style", "spread_band", "fit_ylim", "error_axis", "log_axis", "label_outer", "legend_outside", "run_labels", "suptitle",
           "epoch_axis", "save_figure", "read_run", "grid_labels", "plot_run", "plot_learning_curves", "plot_counts",
           "plot_parameter_curve", "plot_folds"]
