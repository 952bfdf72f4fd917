"""Figures of the reproduced papers, drawn from the long results format."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

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
    fig.savefig(out, dpi=130)
    return out


# Khardon & Wachman (2007) Figure 4: one line per prediction rule.
FIGURE4_RULES = (("Last", "C3"), ("Longest", "C2"), ("Voted", "C0"))


def plot_kw2007_figure4(curves: pd.DataFrame, out_png, title: str | None = None) -> Path:
    """Khardon & Wachman (2007) Figure 4: mean cross-validated accuracy (%) against the value of
    each parameter (tau, alpha, lambda), the other parameters inactive; one row of panels per data
    set (setting), one column per parameter, one line per prediction rule.

    ``curves`` has columns ``setting``, ``parameter``, ``value`` (text), ``position`` (the value's
    index in the grid, which runs from no effect to strong effect, as on the paper's x axes),
    ``rule`` and ``accuracy_pct`` (:func:`perceptron_lab.tables_kw.parameter_curves`). Returns the
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
    fig.savefig(out, dpi=110)
    return out


# ----------------------------------------------------------------------------- Gentile (2001) Figures 3-5


def plot_margin_distributions(panels, out_png, title: str | None = None, ncols: int = 2) -> Path:
    """Margin distribution graphs (Schapire et al. 1998, as in Gentile 2001 Figures 3-5): for each
    curve, the fraction of training examples whose margin is at most s, for s in [-1, 1].

    ``panels`` is a list of ``(panel title, [(curve label, margins), ...])``; margins are arrays
    (e.g. from :func:`perceptron_lab.engine.alma.training_margins`). Returns the PNG path.
    """
    from .engine.alma import margin_distribution

    nrows = math.ceil(len(panels) / ncols)
    ncols = min(ncols, len(panels))
    fig = Figure(figsize=(4.6 * ncols, 3.6 * nrows))
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    styles = ["-", "--", ":", "-."]
    for ax, (ptitle, curves) in zip(axes.flat, panels):
        for i, (label, margins) in enumerate(curves):
            s, frac = margin_distribution(margins)
            ax.plot(s, frac, lw=1.3, color=f"C{i % 10}", ls=styles[(i // 10) % len(styles)], label=label)
        ax.axvline(0.0, color="0.6", lw=0.6)
        ax.set_xlim(-1, 1)
        ax.set_ylim(0, 1.02)
        ax.set_title(ptitle, fontsize="medium")
        ax.set_xlabel("margin s")
        ax.set_ylabel("fraction with margin <= s")
        ax.grid(True, alpha=0.3, lw=0.5)
        ax.legend(fontsize="x-small", frameon=False, loc="lower right")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=130)
    return out


#: The four artificial data sets of Figures 4-5 (the paper does not say which 4 of its 16; these
#: are two sparse and two dense targets, without and with label noise, all in Table 6).
FIGURE45_DATASETS = ((0.0, 3), (0.1, 3), (0.0, 300), (0.1, 300))


def gentile_margin_figures(out_dir, data_dir=None, figures=(3, 4, 5), seed: int = 2001,
                           usps_train_size: int | None = None, artificial_n: int = 10000) -> list[Path]:
    """Train what Gentile (2001) Figures 3-5 show (one permutation each) and draw them.

    * Figure 3 (USPS, Gaussian kernel sigma = 3.5): the Perceptron, ALMA_2(1.0) and ALMA_2(0.9)
      after 1 and 3 epochs; "last" (left) and "avg" (right); 10-class margins.
    * Figure 4: ALMA_p(alpha) "avg" with p = 2, 6 and alpha = 1.0, 0.5 after one epoch, on the four
      artificial data sets of :data:`FIGURE45_DATASETS`.
    * Figure 5: the same runs, "last" against "avg".

    Writes ``gentile2001_figure{3,4,5}.png`` in ``out_dir``; returns their paths.
    """
    from .datasets.registry import load_dataset
    from .datasets.synthetic import gentile_sparse
    from .engine.alma import AlmaParams, train_alma, training_margins
    from .engine.perceptron import PerceptronParams, label_matrix, train
    from .kernels import Kernel

    out = Path(out_dir)
    written = []
    rng = np.random.default_rng(seed)
    if 3 in figures:
        ds = load_dataset("usps", data_dir)
        X, y = ds.X_train, ds.y_train
        if usps_train_size:
            X, y = X[:usps_train_size], y[:usps_train_size]
        Y = label_matrix(y, 10)
        order = rng.permutation(len(y))
        k = Kernel("gaussian", sigma=3.5)
        runs = [("Perceptron", train(X, Y, k, PerceptronParams(), order, 3, [1, 3], dtype=np.float32))]
        for a in (1.0, 0.9):
            runs.append((f"ALMA2({a:.1f})", train_alma(X, Y, k, AlmaParams(alpha=a), order, 3, [1, 3],
                                                          dtype=np.float32)))
        panels = []
        for rule in ("last", "avg"):
            curves = [(f"{name}, {e} epoch{'s' if e > 1 else ''}",
                       training_margins(log, k, X, y, False, rule=rule, cp_index=i))
                      for name, log in runs for i, e in enumerate((1, 3))]
            panels.append((f'USPS, "{rule}"', curves))
        written.append(plot_margin_distributions(panels, out / "gentile2001_figure3.png",
                                                 "Gentile (2001) Figure 3: margin distributions on USPS"))
    if 4 in figures or 5 in figures:
        lin = Kernel("linear")
        runs = {}
        for eps, s in FIGURE45_DATASETS:
            ds = gentile_sparse(n_train=artificial_n, n_test=0, s=s, epsilon=eps, seed=seed)
            Y = label_matrix(ds.y_train, 2)
            order = rng.permutation(len(ds.y_train))
            for p in (2.0, 6.0):
                for a in (1.0, 0.5):
                    log = train_alma(ds.X_train, Y, lin, AlmaParams(alpha=a, p=p), order, 1, [1], chunk_size=128)
                    runs[(eps, s, p, a)] = {r: training_margins(log, lin, ds.X_train, ds.y_train, True, rule=r)
                                            for r in ("last", "avg")}
        name = lambda p, a: f"ALMA{p:g}({a:.1f})"
        if 4 in figures:
            panels = [(f"eps = {eps:g}, s = {s}", [(name(p, a), runs[(eps, s, p, a)]["avg"])
                                                  for p in (2.0, 6.0) for a in (1.0, 0.5)])
                      for eps, s in FIGURE45_DATASETS]
            written.append(plot_margin_distributions(
                panels, out / "gentile2001_figure4.png",
                'Gentile (2001) Figure 4: ALMA_p(alpha) "avg", one epoch, artificial data'))
        if 5 in figures:
            panels = [(f"eps = {eps:g}, s = {s}", [(f"{name(p, a)} {r}", runs[(eps, s, p, a)][r])
                                                  for p in (2.0, 6.0) for a in (1.0, 0.5) for r in ("last", "avg")])
                      for eps, s in FIGURE45_DATASETS]
            written.append(plot_margin_distributions(
                panels, out / "gentile2001_figure5.png",
                'Gentile (2001) Figure 5: "last" vs "avg", one epoch, artificial data'))
    return written
