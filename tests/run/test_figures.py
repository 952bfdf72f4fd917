"""Every figure kind: one style per rule across figures, legends clear of the panels, titles inside
the figure and y axes fitted to the data. The figures are drawn from small results written here
(no training), caught as matplotlib figures just after they are rendered to PNG."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba

from perceptron_lab.report import compare

from perceptron_lab.run import figures as plots
from perceptron_lab.papers.fs1999 import figures as fs_figures
from perceptron_lab.papers.gentile2001 import figures as gentile_figures
from perceptron_lab.papers.kw2007 import figures as kw_figures
from perceptron_lab.studies import budget

MODULES = (plots, compare, fs_figures, kw_figures, gentile_figures)
RULES = ("last", "avg", "vote")   # the order a run lists them in; vote is not first


@pytest.fixture(scope="module")
def drawn():
    """{PNG name: the Figure rendered into it} for every figure drawn while the fixture lives."""
    figs = {}
    real = plots.save_figure

    def catch(fig, out, **kwargs):
        real(fig, out, **kwargs)
        figs[str(out).replace("\\", "/").rsplit("/", 1)[-1]] = fig

    with pytest.MonkeyPatch.context() as mp:
        for m in MODULES:
            mp.setattr(m, "save_figure", catch)
        yield figs


def write_run(d, name="toy", base=1.58, folds=3, epochs=(1, 2, 4, 8), taus=(0.0, 0.5)):
    """A finished k-fold run folder with a grid over tau: test errors near ``base`` % (far from 0),
    vote lowest, counts in the hundreds."""
    d.mkdir(parents=True, exist_ok=True)
    rows = []
    for g, tau in enumerate(taus):
        for f in range(folds):
            for e in epochs:
                for k, rule in enumerate(RULES):
                    v = base + 0.06 * (2 - RULES.index(rule) if rule != "vote" else 0) + 0.02 * f + 0.01 * g + 0.3 / e
                    rows.append((g, f, e, rule, "all", "test_error_pct", round(v, 4)))
                rows.append((g, f, e, "none", "all", "mistakes", 300 + 40 * e + 5 * f))
                rows.append((g, f, e, "none", "all", "support_vectors", 250 + 20 * e + 5 * f))
    df = pd.DataFrame(rows, columns=["grid_point", "fold", "epoch", "rule", "class", "metric", "value"])
    df = df.assign(dataset="toy", permutation=0, normalized="")
    df.to_csv(d / "results.csv", index=False)
    pd.DataFrame({"grid_point": range(len(taus)), "algorithm.tau": taus}).to_csv(d / "grid.csv", index=False)
    (d / "run.json").write_text(json.dumps({"name": name, "config": {"dataset": {"name": "toy"},
                                                                     "evaluation": {"mode": "kfold"}}}))
    return d


def fs_results() -> pd.DataFrame:
    """Figure 2 rows for degrees 3 and 4: errors from about 1.6% (late) to 8% (epoch 0.1)."""
    rows = []
    for d in (3, 4):
        for p in range(2):
            for e in (0.1, 0.3, 1, 3, 10, 30):
                for k, (rule, norm) in enumerate((("vote", "false"), ("last", "false"), ("avg", "false"),
                                                  ("random", "false"))):
                    rows.append({"degree": d, "rule": rule, "normalized": norm, "epoch": e, "class": "all",
                                 "metric": "test_error_pct", "permutation": p,
                                 "value": 1.55 + 0.05 * k + 0.01 * p + 0.6 / e})
    return pd.DataFrame(rows)


def kw_curves() -> pd.DataFrame:
    rows = [{"setting": s, "parameter": p, "value": str(v), "position": i, "rule": r,
             "accuracy_pct": 80 + i + j + 3 * k}
            for s in ("sonar", "bupa") for p in ("tau", "lambda") for i, v in enumerate((0, 0.5, 1))
            for j, r in enumerate(("Last", "Longest", "Voted")) for k in range(1)]
    return pd.DataFrame(rows)


def budget_frames():
    rows = []
    for panel in ("usps", "adult"):
        for m in list(budget.ALGORITHMS) + ["nystroem_perceptron", "nystroem_sgd"]:
            for b in budget.BUDGETS[:3]:
                for r in ("last", "avg"):
                    rows.append({"panel": panel, "method": m, "budget": b, "rule": r,
                                 "test_error_pct": 5 + 1000 / b + len(m) / 10, "train_seconds": b / 100})
        for r in ("last", "avg", "vote"):
            rows.append({"panel": panel, "method": "perceptron", "budget": np.inf, "rule": r,
                         "test_error_pct": 5.2, "train_seconds": 3.0})
    seen = np.arange(0, 1000, 100)
    curves = {p: pd.DataFrame({"examples_seen": seen, "perceptron": seen // 5,
                               **{a: seen // (6 + i) for i, a in enumerate(budget.ALGORITHMS)}})
              for p in ("usps", "adult")}
    return pd.DataFrame(rows), curves


@pytest.fixture(scope="module")
def every_figure(tmp_path_factory, drawn):
    """Draw every figure kind once; returns {name: Figure}."""
    tmp_path = tmp_path_factory.mktemp("figures")
    a = write_run(tmp_path / "x" / "runs" / "toy")
    b = write_run(tmp_path / "y" / "runs" / "toy", base=1.64, taus=(0.25,))
    plots.plot_run(a, tmp_path / "figs")
    compare.plot_side_by_side([a, b], tmp_path / "compare.png")
    fs_figures.plot_fs1999_figure2(fs_results(), tmp_path / "fs1999_figure2.png",
                                   title="Freund & Schapire (1999) Figure 2, reproduced: MNIST test error vs "
                                         "epochs (lines: ours; open markers: the paper's Table 1)")
    kw_figures.plot_kw2007_figure4(kw_curves(), tmp_path / "kw2007_figure4.png",
                                   title="Khardon & Wachman (2007) Figure 4, reproduced on toy: "
                                         "cross-validated accuracy vs parameter value\n(second line)")
    rng = np.random.default_rng(0)
    margins = [rng.normal(0.1, 0.2, 300) for _ in range(2)]
    gentile_figures.plot_margin_distributions(
        [(f"toy, {r}", [(f"ALMA{i}", margins, {"color": f"C{i}"}) for i in range(3)]) for r in ("last", "avg")],
        tmp_path / "gentile2001_figure3.png", title="Gentile (2001) Figure 3, reproduced: a long title " * 2,
        zoom=0.4, note="a note under the panels " * 8)
    summary, curves = budget_frames()
    budget.plot_error(summary, tmp_path, "avg")
    budget.plot_mistakes(curves, tmp_path)
    return dict(drawn)


def _colors(fig) -> dict:
    """{label: RGBA} of every labelled line and marker of the figure's panels."""
    out = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            lab = line.get_label()
            if not lab.startswith("_"):
                out.setdefault(lab, to_rgba(line.get_color()))
        for c in ax.containers:   # error bars: the label is the container's
            if hasattr(c, "lines") and not c.get_label().startswith("_"):
                out.setdefault(c.get_label(), to_rgba(c.lines[0].get_color()))
    return out


def test_every_figure_kind_is_drawn(every_figure):
    assert {"learning_curves.png", "counts.png", "parameter_curve.png", "folds.png", "compare.png",
            "fs1999_figure2.png", "kw2007_figure4.png", "gentile2001_figure3.png", "error_vs_budget_avg.png",
            "mistakes_vs_examples.png"} <= set(every_figure)


def test_a_rule_has_one_colour_in_every_figure(every_figure):
    """vote, last and avg get the colours of the shared table in the run's figures and in the
    papers' figures, whatever order the run lists the rules in."""
    lc = _colors(every_figure["learning_curves.png"])
    pc = _colors(every_figure["parameter_curve.png"])
    fs = _colors(every_figure["fs1999_figure2.png"])
    kw = _colors(every_figure["kw2007_figure4.png"])
    for rule, fs_name, kw_name in (("vote", "vote", "Voted"), ("last", "last (unnorm)", "Last"),
                                   ("avg", "average (unnorm)", None)):
        want = to_rgba(plots.RULE_STYLES[rule][0])
        assert lc[rule] == want and fs[fs_name] == want, rule
        assert pc[rule] == want
        if kw_name:
            assert kw[kw_name] == want
    # the folds' dots of a rule are in its colour too
    folds = every_figure["folds.png"]
    ax = folds.axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    dots = [ln for ln in ax.get_lines() if ln.get_linestyle() == "None"]
    assert [to_rgba(d.get_color()) for d in dots] == [to_rgba(plots.RULE_STYLES[t][0]) for t in ticks]


def test_paper_values_are_drawn_and_labelled(every_figure):
    labels = _colors(every_figure["fs1999_figure2.png"])
    assert {"vote, paper", "last (unnorm), paper"} <= set(labels)


def _legends(fig):
    return list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]


def test_legends_lie_outside_the_panels(every_figure):
    for name, fig in every_figure.items():
        r = fig.canvas.get_renderer()
        legends = _legends(fig)
        if name != "folds.png":     # folds: the rules are the x axis, no legend needed
            assert legends, name
        for leg in legends:
            lb = leg.get_window_extent(r)
            for ax in fig.axes:
                if not ax.get_visible():
                    continue
                ab = ax.get_window_extent(r)
                overlap_w = min(lb.x1, ab.x1) - max(lb.x0, ab.x0)
                overlap_h = min(lb.y1, ab.y1) - max(lb.y0, ab.y0)
                assert overlap_w <= 1 or overlap_h <= 1, f"{name}: legend over a panel"


def test_titles_and_legends_lie_inside_the_figure(every_figure):
    for name, fig in every_figure.items():
        r = fig.canvas.get_renderer()
        fb = fig.bbox
        texts = [fig._suptitle] if fig._suptitle is not None else []
        texts += [ax.title for ax in fig.axes if ax.get_visible() and ax.get_title()]
        texts += [fig._supxlabel] if fig._supxlabel is not None else []
        boxes = [t.get_window_extent(r) for t in texts] + [leg.get_window_extent(r) for leg in _legends(fig)]
        for b in boxes:
            assert b.x0 >= fb.x0 - 1 and b.x1 <= fb.x1 + 1 and b.y0 >= fb.y0 - 1 and b.y1 <= fb.y1 + 1, name
        if fig._suptitle is not None:   # the title clears the legends too
            tb = fig._suptitle.get_window_extent(r)
            for leg in _legends(fig):
                lb = leg.get_window_extent(r)
                assert not (min(tb.x1, lb.x1) > max(tb.x0, lb.x0) + 1 and min(tb.y1, lb.y1) > max(tb.y0, lb.y0) + 1), name


def test_y_axes_do_not_start_at_zero_when_the_data_are_far_from_it(every_figure):
    """Errors between 1.58% and 2% (and counts in the hundreds): the axis starts near the data,
    so that 1.58 and 1.64 are told apart."""
    for name in ("learning_curves.png", "parameter_curve.png", "folds.png", "compare.png", "fs1999_figure2.png",
                 "counts.png", "error_vs_budget_avg.png"):
        for ax in every_figure[name].axes:
            if ax.get_visible():
                assert ax.get_ylim()[0] > 0.5 * min(y for ln in ax.get_lines() for y in ln.get_ydata()
                                                    if np.isfinite(y)), name


def test_y_axis_starts_at_zero_when_the_data_come_close_to_it():
    fig = plots._figure(3, 3)
    ax = fig.add_subplot()
    plots.fit_ylim(ax, [0.4, 10.0, 20.0])
    assert ax.get_ylim()[0] == 0
    plots.fit_ylim(ax, [1.58, 1.64, 1.70])
    lo, hi = ax.get_ylim()
    assert 1.5 < lo < 1.58 and 1.70 < hi < 1.8
    plots.fit_ylim(ax, [-0.2, 0.5])     # data below the floor stay in view
    assert ax.get_ylim()[0] < -0.2


def test_compare_legend_names_runs_by_their_shortest_distinguishing_tail(every_figure, tmp_path_factory):
    fig = every_figure["compare.png"]
    texts = [t.get_text() for leg in _legends(fig) for t in leg.get_texts()]
    assert texts == ["x/runs/toy [tau=0.0]", "x/runs/toy [tau=0.5]", "y/runs/toy"]
    assert not any(str(tmp_path_factory.getbasetemp()) in t for t in texts)


def test_run_labels():
    assert plots.run_labels(["/r/a/d4", "/r/b/d4"]) == ["a/d4", "b/d4"]
    assert plots.run_labels(["/r/a/d4", "/r/b/d5"]) == ["d4", "d5"]
    assert plots.run_labels(["/r/a/x", "/r/b/y"], ["m", "m"]) == ["m (x)", "m (y)"]
    assert plots.run_labels(["/r/a", "/r/a"]) == ["a #1", "a #2"]


def test_rule_style_reads_the_papers_spellings():
    assert plots.rule_style("Voted")["color"] == plots.rule_style("vote")["color"] == plots.RULE_STYLES["vote"][0]
    assert plots.rule_key("average (unnorm)") == ("avg", False)
    assert plots.rule_key("avg (norm)") == ("avg", True) and plots.rule_key("last_norm") == ("last", True)
    assert plots.rule_style("mystery") == plots.rule_style("mystery")
    assert plots.rule_order(["avg (norm)", "last", "vote", "avg", "x"]) == ["vote", "last", "avg", "avg (norm)", "x"]


def test_importing_the_figure_modules_does_not_import_matplotlib():
    """matplotlib is imported when a figure is drawn, not when plab or a paper plug-in loads."""
    import subprocess
    import sys

    code = ("import sys, perceptron_lab.cli.main, perceptron_lab.report.compare, perceptron_lab.run.figures, "
            "perceptron_lab.papers.fs1999.figures, perceptron_lab.papers.kw2007.figures, "
            "perceptron_lab.papers.gentile2001.figures, perceptron_lab.studies.budget; "
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def _two_panel_figure(where: str):
    fig = plots._figure(6.0, 3.0)
    axes = fig.subplots(1, 2)
    for i, ax in enumerate(axes):
        ax.plot([1, 10, 100], [30.0, 20.0 - i, 25.0 + i], label=f"rule {i}", **plots.style(i))
        ax.plot([1, 10, 100], [35.0, 22.0, 21.0 + i], label=f"other rule {i}", **plots.style(i + 2))
        ax.set_xscale("log")
        ax.set_xlabel("epochs (log scale)")
        ax.set_ylabel("test error (%)")
    plots.suptitle(fig, "a title long enough to be wrapped to the width of the figure, " * 3)
    plots.legend_outside(fig, where=where)
    return fig


@pytest.mark.parametrize("where", ["right", "below"])
def test_save_figure_lays_out_once_and_writes_the_png_matplotlib_would(tmp_path, where):
    import io

    from perceptron_lab.run.store import png_metadata

    ours = _two_panel_figure(where)
    plots.save_figure(ours, tmp_path / "a.png")
    assert ours.get_layout_engine() is None   # so savefig drew it once, not twice
    theirs = _two_panel_figure(where)
    assert theirs.get_layout_engine() is not None
    buf = io.BytesIO()
    theirs.savefig(buf, format="png", dpi=plots.DPI, pil_kwargs={"compress_level": plots.PNG_COMPRESS_LEVEL},
                   metadata=png_metadata())
    assert (tmp_path / "a.png").read_bytes() == buf.getvalue()
    # drawn at another dpi, the layout stays matplotlib's to run
    other = _two_panel_figure(where)
    plots.save_figure(other, tmp_path / "b.png", dpi=plots.DPI * 2)
    assert other.get_layout_engine() is not None
