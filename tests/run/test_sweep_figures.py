"""A sweep's figures read at a glance: every bottom panel has tick labels (also above an empty
slot), panels that show one quantity share their y axis, an integer parameter gets integer ticks,
spread bands keep their edges where they overlap; Khardon & Wachman's Figure 4 says on what it
was computed. The figures are drawn from small results written here and caught as matplotlib
figures when they are saved."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest
from matplotlib.colors import to_rgba

from perceptron_lab.papers.kw2007 import figures as kw_figures
from perceptron_lab.papers.kw2007.layout import figure4_where
from perceptron_lab.run import figures as plots

RULES = ("vote", "last", "avg")


@pytest.fixture
def caught(monkeypatch):
    figs = {}

    def catch(fig, out, **kwargs):
        fig.canvas.draw()
        figs[str(out).replace("\\", "/").rsplit("/", 1)[-1]] = fig

    monkeypatch.setattr(plots, "save_figure", catch)
    monkeypatch.setattr(kw_figures, "save_figure", catch)
    return figs


def write_sweep(d, degrees, folds=3, epochs=(1, 2, 3)):
    """A finished k-fold run with a grid over kernel.degree; each grid point's errors at another level
    (so that separate y scales would differ), spread over folds."""
    d.mkdir(parents=True, exist_ok=True)
    rows = []
    for g in range(len(degrees)):
        for f in range(folds):
            for e in epochs:
                for k, rule in enumerate(RULES):
                    rows.append((g, f, e, rule, "test_error_pct", 10.0 + 6 * g + 2 * k + 3 * f - e))
                rows.append((g, f, e, "none", "mistakes", 100 + 10 * e + f))
                rows.append((g, f, e, "none", "support_vectors", 80 + 5 * e + f))
    df = pd.DataFrame(rows, columns=["grid_point", "fold", "epoch", "rule", "metric", "value"])
    df.assign(dataset="toy", permutation=0, normalized="", **{"class": "all"}).to_csv(d / "results.csv", index=False)
    pd.DataFrame({"grid_point": range(len(degrees)), "kernel.degree": degrees}).to_csv(d / "grid.csv", index=False)
    (d / "run.json").write_text(json.dumps({"name": "toy", "config": {"dataset": {"name": "toy"},
                                                                     "evaluation": {"mode": "kfold"}}}))
    return d


def _labelled(ax) -> bool:
    return any(t.get_visible() and t.get_text() for t in ax.get_xticklabels())


def test_every_bottom_panel_has_tick_labels_and_the_panels_share_y(tmp_path, caught):
    plots.plot_run(write_sweep(tmp_path / "run", [1, 2, 3, 4, 5]))
    fig = caught["learning_curves.png"]
    shown = [ax for ax in fig.axes if ax.get_visible() and ax.get_subplotspec() is not None]
    assert len(shown) == 5   # 2 rows of 3 columns, the last slot empty
    for ax in shown:
        ss = ax.get_subplotspec()
        below = [b for b in shown if b.get_subplotspec().colspan.start == ss.colspan.start
                 and b.get_subplotspec().rowspan.start > ss.rowspan.start]
        assert _labelled(ax) == (not below), ax.get_title()   # degree=3 sits above the empty slot
        assert (ax.get_xlabel() != "") == (not below)
    assert len({ax.get_ylim() for ax in shown}) == 1   # one test error scale for every grid point
    assert all(shown[0].get_shared_y_axes().joined(shown[0], ax) for ax in shown)


def test_bands_keep_their_edges(tmp_path, caught):
    plots.plot_run(write_sweep(tmp_path / "run", [1, 2]))
    ax = next(a for a in caught["learning_curves.png"].axes if a.get_visible())
    for rule in RULES:
        colour = to_rgba(plots.rule_style(rule)["color"])[:3]
        edges = [ln for ln in ax.get_lines() if to_rgba(ln.get_color())[:3] == colour and ln.get_linestyle() == "--"
                 and ln.get_linewidth() < 1]
        assert len(edges) == 2, rule   # mean - std and mean + std
    fills = ax.collections
    assert fills and all(c.get_alpha() <= 0.1 for c in fills)


def test_an_integer_parameter_gets_integer_ticks(tmp_path, caught):
    plots.plot_run(write_sweep(tmp_path / "run", [2, 3]))
    ax = caught["parameter_curve.png"].axes[0]
    assert [t.get_text() for t in ax.get_xticklabels() if t.get_visible()] == ["2", "3"]


def test_figure4_says_how_many_data_sets_it_shows():
    names = ["breast-cancer-wisconsin", "bupa", "wdbc", "crx", "promoters", "ionosphere", "wpbc", "sonar"]
    cfg = SimpleNamespace(dataset=SimpleNamespace(name="breast-cancer-wisconsin"),
                          evaluation=SimpleNamespace(grid={"dataset.name": names, "algorithm.tau": [0, 1]}))
    curves = pd.DataFrame({"setting": names})
    assert figure4_where(cfg, curves) == "8 data sets, a row of panels per data set"
    one = SimpleNamespace(dataset=SimpleNamespace(name="usps"), evaluation=SimpleNamespace(grid={"algorithm.tau": [0]}))
    assert figure4_where(one, pd.DataFrame({"setting": ["usps"]})) == "usps"


def test_figure4_rows_share_their_y_axis(tmp_path, caught):
    rows = []
    for s, base in (("bupa", 60.0), ("sonar", 75.0)):
        for p in ("tau", "lambda"):
            for pos in range(3):
                for rule in ("Last", "Voted"):
                    rows.append((s, p, str(pos), pos, rule, base + (5 * pos if p == "tau" else -pos)))
    curves = pd.DataFrame(rows, columns=["setting", "parameter", "value", "position", "rule", "accuracy_pct"])
    kw_figures.plot_kw2007_figure4(curves, tmp_path / "kw2007_figure4.png", title="t")
    axes = [ax for ax in caught["kw2007_figure4.png"].axes if ax.get_subplotspec() is not None]
    by_row: dict = {}
    for ax in axes:
        by_row.setdefault(ax.get_subplotspec().rowspan.start, []).append(ax)
    for row in by_row.values():
        assert len({ax.get_ylim() for ax in row}) == 1
        assert all(any(t.get_text() for t in ax.get_yticklabels()) == (k == 0) for k, ax in enumerate(row))
