"""Gentile (2001) Figures 3-5: margin distributions of runs trained with the Table configs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from perceptron_lab.config.checks import PACKAGE_CONFIG_DIR
from perceptron_lab.run.figures import _figure, algorithm_style, legend_outside, rule_style, save_figure, suptitle

def plot_margin_distributions(panels, out_png, title: str | None = None, ncols: int = 2,
                              zoom: float | None = None, note: str | None = None) -> Path:
    """Margin distribution graphs (Schapire et al. 1998, as in Gentile 2001 Figures 3-5): for each
    curve, the fraction of training examples whose margin is at most s, for s in [-1, 1].

    ``panels`` is a list of ``(panel title, curves)``; a curve is ``(label, margins)`` or
    ``(label, margins, style)`` with ``style`` keyword arguments for ``Axes.plot`` (color,
    linestyle ...). ``margins`` is an array (e.g. from
    :func:`perceptron_lab.model.margins.training_margins`) or a list of arrays, one per run
    (permutation): the curve is then the mean of the runs' distributions. A label gets
    "(x% beyond +-1)" when some margins lie outside [-1, 1] (possible for multiclass margins).
    With ``zoom``, a second row repeats the panels for s in [-zoom, zoom]. ``note`` is printed
    under the panels. Returns the PNG path.
    """
    from perceptron_lab.model.margins import margin_distribution

    ncols = min(ncols, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    rows = nrows * (2 if zoom else 1)
    fig = _figure(5.0 * ncols + 2.4, 3.7 * rows + (0.6 if note else 0.0) + (0.4 if title else 0.0))
    axes = fig.subplots(rows, ncols, squeeze=False)
    styles = ["-", "--", ":", "-."]
    grid = np.linspace(-1.0, 1.0, 801)
    if zoom:
        grid = np.union1d(grid, np.linspace(-zoom, zoom, 801))
    prepared = []
    for ptitle, curves in panels:
        lines = []
        for i, curve in enumerate(curves):
            label, margins = curve[0], curve[1]
            style = dict(curve[2]) if len(curve) > 2 else {}
            style.setdefault("color", f"C{i % 10}")
            style.setdefault("ls", styles[(i // 10) % len(styles)])
            runs = [np.asarray(margins, dtype=np.float64)] if np.ndim(margins[0]) == 0 else \
                [np.asarray(m, dtype=np.float64) for m in margins]
            frac = np.mean([margin_distribution(m, grid)[1] for m in runs], axis=0)
            beyond = np.mean([np.mean(np.abs(m) > 1.0) for m in runs])
            if beyond > 0:
                label = f"{label} ({100 * beyond:.2g}% beyond ±1)"
            lines.append((label, grid, frac, style))
        prepared.append((ptitle, lines))
    flat = [axes[r][c] for r in range(nrows) for c in range(ncols)]
    zflat = [axes[nrows + r][c] for r in range(nrows) for c in range(ncols)] if zoom else []
    for k, (ptitle, lines) in enumerate(prepared):
        targets = [(flat[k], 1.0, ptitle)] + ([(zflat[k], zoom, f"{ptitle}, zoom")] if zoom else [])
        for ax, lim, t in targets:
            for label, s, frac, style in lines:
                ax.plot(s, frac, lw=1.3, label=label, **style)
            ax.set_ylim(0, 1.02)
            ax.axvline(0.0, color="0.6", lw=0.6)
            ax.set_xlim(-lim, lim)
            ax.set_title(t, fontsize="medium")
            ax.set_xlabel("margin s")
            ax.set_ylabel("fraction with margin ≤ s")
            ax.grid(True, alpha=0.3, lw=0.5)
    # one legend right of the panels when every panel draws the same curves, else one per panel
    # (right of it): a legend never covers the curves
    if len({tuple(lab for lab, *_ in lines) for _, lines in prepared}) == 1:
        legend_outside(fig, flat[:1], fontsize="x-small")
    else:
        for k in range(len(prepared)):
            flat[k].legend(fontsize="x-small", frameon=False, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    for ax in flat[len(prepared):] + zflat[len(prepared):]:
        ax.set_visible(False)
    if title:
        suptitle(fig, title)
    if note:
        import textwrap

        fig.supxlabel(textwrap.fill(note, int(fig.get_figwidth() * 15)), fontsize="x-small")
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, out)
    return out


#: Where the configs of Figures 3-5 are read: the packaged ``configs/gentile2001`` (the repository's
#: ``configs/`` is a link to the package's), so an installed copy draws them too.
GENTILE_CONFIG_DIR = PACKAGE_CONFIG_DIR / "gentile2001"
#: Figure 3 (USPS): the Perceptron and ALMA_2(alpha) at the kernel width of their Table 1 config.
FIGURE3_RUNS = (("Perceptron", "table1_usps_perceptron.yaml", {}),
                ("ALMA2(1.0)", "table1_usps_alma.yaml", {"algorithm.alpha": 1.0}),
                ("ALMA2(0.9)", "table1_usps_alma.yaml", {"algorithm.alpha": 0.9}))
FIGURE3_EPOCHS = (1.0, 3.0)
#: Figures 4-5: ALMA_p(alpha) on Table 6's artificial data, p = 2, 6 and alpha = 1.0, 0.5, one epoch.
FIGURE45_CONFIG = "table6.yaml"
FIGURE45_P = (2.0, 6.0)
FIGURE45_ALPHA = (1.0, 0.5)
#: The four artificial data sets of Figures 4-5 as (epsilon, s) (the paper does not say which 4 of
#: its 16; §4.4 puts the two "s = 3" sets on the left: these are two sparse and two dense targets,
#: without and with label noise, all in Table 6).
FIGURE45_DATASETS = ((0.0, 3), (0.1, 3), (0.0, 300), (0.1, 300))


def _margin_runs(cfg, overrides: dict, epochs, rules, permutations: int, data_dir, bar):
    """Train ``cfg`` with ``overrides`` on permutations 0..permutations-1 (the training orders of
    the config's own runs) and return ``{(epoch, rule): [margins per permutation]}``."""
    from perceptron_lab.config.load import with_overrides
    from perceptron_lab.engine import label_matrix, train_algorithm
    from perceptron_lab.model.margins import training_margins
    from perceptron_lab.run.plan import Unit
    from perceptron_lab.run.inputs import load_data
    from perceptron_lab.run.spec import unit_spec
    from perceptron_lab.run.units import unit_design, unit_kernel, unit_order

    ucfg = with_overrides(cfg, overrides) if overrides else cfg
    spec = unit_spec(ucfg)
    ds = load_data(ucfg, data_dir)
    X, _ = unit_design(spec, ds.X_train, ds.X_test)
    y = ds.y_train
    binary = ds.n_classes == 2
    dtype, kernel = unit_kernel(spec, X)
    X = kernel.features(X)
    Y = label_matrix(y, ds.n_classes)
    epochs = sorted(float(e) for e in epochs)
    out = {(e, r): [] for e in epochs for r in rules}
    for perm in range(permutations):
        order, _ = unit_order(spec, Unit(0, dict(overrides), -1, perm), len(y))
        log = train_algorithm(spec.settings, X, Y, kernel, order, spec.epochs, epochs, dtype=dtype,
                              chunk_size=spec.chunk_size, cache_limit_gb=spec.cache_limit_gb, source=spec.source)
        for i, e in enumerate(epochs):
            for r in rules:
                out[(e, r)].append(training_margins(log, kernel, X, y, binary, rule=r, cp_index=i,
                                                    vote_weight=spec.vote_weight))
        bar.update(1)
    return out, ucfg, ds


def gentile_margin_figures(out_dir, data_dir=None, figures=(3, 4, 5), permutations: int | None = None,
                           usps_train_size: int | None = None, artificial_n: int | None = None,
                           config_dir=None, progress: bool = False) -> list[Path]:
    """Train what Gentile (2001) Figures 3-5 show and draw them (``gentile2001_figure{3,4,5}.png``
    in ``out_dir``); returns the paths written. Arguments and settings as
    :func:`gentile_margin_panels`."""
    specs = gentile_margin_panels(data_dir, figures, permutations, usps_train_size, artificial_n, config_dir,
                                  progress)
    out = Path(out_dir)
    return [plot_margin_distributions(spec["panels"], out / f"gentile2001_figure{n}.png", spec["title"],
                                      zoom=spec.get("zoom"), note=spec["note"])
            for n, spec in sorted(specs.items())]


def gentile_margin_panels(data_dir=None, figures=(3, 4, 5), permutations: int | None = None,
                          usps_train_size: int | None = None, artificial_n: int | None = None,
                          config_dir=None, progress: bool = False) -> dict:
    """Train what Gentile (2001) Figures 3-5 show; returns ``{figure number: {"title", "panels",
    "note"[, "zoom"]}}`` for :func:`plot_margin_distributions` (each curve's margins are a list,
    one array per permutation).

    Settings come from the Table configs (``config_dir``, default ``configs/gentile2001``), so the
    runs are those of the tables: same kernel, data, dtype and training orders (the config's seed;
    permutation k here is permutation k there). Each curve is the mean over ``permutations``
    (default: the config's, 10, as §4 states for Tables 1-6 and Figures 3-5) of the fraction of
    training examples with margin <= s (:func:`perceptron_lab.model.margins.training_margins`).

    * Figure 3 (USPS): the Perceptron, ALMA_2(1.0) and ALMA_2(0.9) after 1 and 3 epochs; "last"
      (left) and "avg" (right); 10-class margins. The Gaussian width is each algorithm's Table 1
      config's (``table1_usps_perceptron.yaml``, ``table1_usps_alma.yaml``: the widths the paper's
      5-fold cross-validation selects on our copy of USPS), not the paper's 3.5; the legend says
      which. ``usps_train_size`` trains on the first examples only (tests).
    * Figure 4 (``table6.yaml``'s artificial data): ALMA_p(alpha) "avg" with p = 2, 6 and alpha =
      1.0, 0.5 after one epoch, on the four data sets of :data:`FIGURE45_DATASETS`.
      ``artificial_n`` replaces the config's 10000 training (and test) examples (tests).
    * Figure 5: the same runs, "last" against "avg".

    ``progress`` shows a bar over the training runs (with 10 permutations: Figure 3 trains 30
    times on USPS, Figures 4-5 160 times on artificial data; about two minutes in all on two cores).
    """
    from tqdm.auto import tqdm

    from perceptron_lab.config.load import load_config

    cdir = Path(config_dir) if config_dir else GENTILE_CONFIG_DIR
    specs = {}
    n3 = len(FIGURE3_RUNS) if 3 in figures else 0
    n45 = len(FIGURE45_DATASETS) * len(FIGURE45_P) * len(FIGURE45_ALPHA) if (4 in figures or 5 in figures) else 0
    cfgs = {}

    def cfg_of(name):
        if name not in cfgs:
            cfgs[name] = load_config(cdir / name)
        return cfgs[name]

    perms = {}
    for name in ({r[1] for r in FIGURE3_RUNS} if n3 else set()) | ({FIGURE45_CONFIG} if n45 else set()):
        perms[name] = int(permutations or cfg_of(name).training.permutations)
    total = sum(perms[r[1]] for r in FIGURE3_RUNS) if n3 else 0
    total += n45 * perms.get(FIGURE45_CONFIG, 0)
    bar = tqdm(total=total, disable=not progress, unit="run", desc="Gentile Figures 3-5 (training)",
               delay=1.0, leave=False)
    try:
        if 3 in figures:
            runs, widths = [], {}
            for label, name, ov in FIGURE3_RUNS:
                cfg = cfg_of(name)
                if usps_train_size:
                    ov = {**ov, "dataset.train_size": int(usps_train_size)}
                m, ucfg, ds = _margin_runs(cfg, ov, FIGURE3_EPOCHS, ("last", "avg"), perms[name], data_dir, bar)
                widths[label] = ucfg.kernel.sigma
                runs.append((label, m, len(ds.y_train)))
            # the Perceptron in its shared style; the two ALMA2 runs in the styles after it
            colors = {"Perceptron": algorithm_style("perceptron")["color"], "ALMA2(1.0)": algorithm_style("alma")["color"],
                      "ALMA2(0.9)": "C9"}
            panels = []
            for rule in ("last", "avg"):
                curves = [(f"{label}, σ = {widths[label]:g}, {e:g} epoch{'s' if e > 1 else ''}", m[(e, rule)],
                           {"color": colors.get(label), "ls": "--" if e == 1 else "-"})
                          for label, m, _ in runs for e in FIGURE3_EPOCHS]
                panels.append((f'USPS, "{rule}"', curves))
            n_train = runs[0][2]
            n_perm = sorted({perms[r[1]] for r in FIGURE3_RUNS})
            note = (f"Training-set margins (o_y(x) - max_{{c≠y}} o_c(x), x^ = x/|x| in feature space; the "
                    f"Perceptron's hypotheses divided by their largest norm), {n_train} USPS training examples, mean "
                    f"over {'/'.join(map(str, n_perm))} permutations (the Table 1 runs' orders). Gaussian width σ "
                    f"from our 5-fold cross-validation (configs/gentile2001/table1_usps_*.yaml); the paper used "
                    f"σ = 3.5. Bottom row: the same curves near s = 0.")
            specs[3] = {"panels": panels, "note": note, "zoom": 0.4,
                        "title": "Gentile (2001) Figure 3, reproduced: margin distributions on USPS (Perceptron "
                                 f"σ = {widths['Perceptron']:g}, ALMA2 σ = {widths['ALMA2(1.0)']:g})"}
        if n45:
            cfg = cfg_of(FIGURE45_CONFIG)
            runs = {}
            n_train = None
            for eps, s in FIGURE45_DATASETS:
                for p in FIGURE45_P:
                    for a in FIGURE45_ALPHA:
                        ov = {"dataset.params.epsilon": eps, "dataset.params.s": s, "algorithm.p": p,
                              "algorithm.alpha": a}
                        if artificial_n:
                            ov.update({"dataset.params.n_train": int(artificial_n),
                                       "dataset.params.n_test": int(artificial_n)})
                        m, ucfg, ds = _margin_runs(cfg, ov, (1.0,), ("last", "avg"), perms[FIGURE45_CONFIG],
                                                   data_dir, bar)
                        runs[(eps, s, p, a)] = {r: m[(1.0, r)] for r in ("last", "avg")}
                        n_train = len(ds.y_train)
            name = lambda p, a: f"ALMA{p:g}({a:.1f})"
            color = {(p, a): f"C{i}" for i, (p, a) in enumerate((p, a) for p in FIGURE45_P for a in FIGURE45_ALPHA)}
            B = {None: "1/alpha", "sqrt8/alpha": "sqrt(8)/alpha"}.get(cfg.algorithm.B, cfg.algorithm.B)
            note = (f"Training-set margins y w.x^ (x^ = x/|x|_p, |w|_q ≤ 1), {n_train} training examples per data "
                    f"set (configs/gentile2001/{FIGURE45_CONFIG}: B = {B}, target with s non-zero entries of 300, "
                    f"training labels flipped with probability eps), one epoch, mean over "
                    f"{perms[FIGURE45_CONFIG]} permutations of the training sequence.")
            if 4 in figures:
                panels = [(f"eps = {eps:g}, s = {s}", [(name(p, a), runs[(eps, s, p, a)]["avg"],
                                                        {"color": color[(p, a)], "ls": "-"})
                                                       for p in FIGURE45_P for a in FIGURE45_ALPHA])
                          for eps, s in FIGURE45_DATASETS]
                specs[4] = {"panels": panels, "note": note,
                            "title": 'Gentile (2001) Figure 4, reproduced: ALMA_p(α) "avg", one epoch, '
                                     'artificial data'}
            if 5 in figures:
                panels = [(f"eps = {eps:g}, s = {s}", [(f"{name(p, a)} {r}", runs[(eps, s, p, a)][r],
                                                        {"color": color[(p, a)], "ls": rule_style(r)["ls"]})
                                                       for p in FIGURE45_P for a in FIGURE45_ALPHA
                                                       for r in ("last", "avg")])
                          for eps, s in FIGURE45_DATASETS]
                specs[5] = {"panels": panels, "note": note,
                            "title": 'Gentile (2001) Figure 5, reproduced: "last" (dashed) vs "avg" (dash-dotted), '
                                     'one epoch, artificial data'}
    finally:
        bar.close()
    return specs
