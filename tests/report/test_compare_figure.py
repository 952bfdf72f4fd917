"""The figure of ``plab compare`` shows every run it is given, each under a label a reader can
read (at most 40 characters a line, at most 3 lines), or says in the figure and on stderr which
runs it left out and why."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner
from matplotlib.colors import to_rgba

from perceptron_lab.cli.main import main
from perceptron_lab.report import compare

SMALL = ("name: r\ndataset: {name: sonar}\ntraining: {epochs: 2, checkpoints: [1, 2]}\n"
         "evaluation: {mode: kfold, folds: 2}\noutput: {figures: false}\n")
#: What a reader can read in a legend: characters a line, lines a label.
WIDTH, LINES = 40, 3


@pytest.fixture(scope="module")
def thirteen(tmp_path_factory):
    """13 copies of one finished run, in folders with the long descriptive names people give them
    (about 230 characters; the runs share their name, so each is labelled by its folder)."""
    tmp = tmp_path_factory.mktemp("thirteen")
    cfg = tmp / "r.yaml"
    cfg.write_text(SMALL)
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(tmp / "one"), "-q"])
    assert r.exit_code == 0, r.output
    dirs = []
    for k in range(13):
        d = (tmp / "experiments" / ("2026-11-28_sonar_perceptron_kfold2_two_epochs_margin_study_"
                                    f"variant_{k:02d}_with_a_long_descriptive_suffix_that_people_write_into_"
                                    "folder_names_for_their_records_learning_rate_0.1_no_margin_no_kernel_"
                                    "seed_0_all_rules_recorded_at_every_epoch"))
        shutil.copytree(tmp / "one", d)
        dirs.append(d)
    assert len(compare._columns(dirs)[0]["name"]) > 200
    return dirs


@pytest.fixture
def caught(monkeypatch):
    figs = {}
    real = compare.save_figure

    def catch(fig, out, **kw):
        real(fig, out, **kw)
        figs["fig"] = fig

    monkeypatch.setattr(compare, "save_figure", catch)
    return figs


def _legend_texts(fig):
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return [t.get_text() for leg in legends for t in leg.get_texts()]


def _styles(fig):
    ax = next(a for a in fig.axes if a.get_visible())
    return [(to_rgba(ln.get_color()), str(ln.get_linestyle()), ln.get_marker()) for ln in ax.get_lines()
            if not ln.get_label().startswith("_")]


def test_every_one_of_13_runs_is_drawn_under_a_readable_label(thirteen, caught, tmp_path):
    out = tmp_path / "cmp.png"
    r = CliRunner().invoke(main, ["compare", *map(str, thirteen), "--figure", str(out)])
    assert r.exit_code == 0, r.output
    fig = caught["fig"]
    texts = _legend_texts(fig)
    assert len(texts) == 13 and len(set(texts)) == 13, texts
    for t in texts:
        lines = t.split("\n")
        assert len(lines) <= LINES and max(map(len, lines)) <= WIDTH, repr(t)
    styles = _styles(fig)
    assert len(styles) == 13 and len(set(styles)) == 13, "two runs drawn alike"
    assert "left out" not in r.output
    # each legend label is the part of its run's label that tells it apart: its variant
    assert sorted(texts) == [f"variant {k:02d}" for k in range(13)]
    # and the figure says what every label left out
    title = "".join(fig._suptitle.get_text().split())   # wrapped to the figure's width
    assert "thelegendgivesthe*ofeachrun'slabel,r(2026-11-28_sonar_perceptron_kfold2_two_epochs" in title
    assert "_variant_*_with_a_long" in title
    # the legend stays inside the figure
    rend = fig.canvas.get_renderer()
    fb = fig.bbox
    for leg in list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]:
        b = leg.get_window_extent(rend)
        assert b.x0 >= fb.x0 - 1 and b.x1 <= fb.x1 + 1 and b.y0 >= fb.y0 - 1 and b.y1 <= fb.y1 + 1


def test_runs_left_out_are_named_in_the_figure_and_on_stderr(thirteen, caught, tmp_path, monkeypatch):
    monkeypatch.setattr(compare, "MAX_LINES", 5)
    r = CliRunner().invoke(main, ["compare", *map(str, thirteen), "--figure", str(tmp_path / "cmp.png")])
    assert r.exit_code == 0, r.output
    fig = caught["fig"]
    assert len(_legend_texts(fig)) == 5
    title = fig._suptitle.get_text().replace("\n", " ")
    assert "8 of the 13 runs are not drawn" in title, title
    warning = [ln for ln in r.stderr.splitlines() if ln.startswith("plab: warning:")]
    assert len(warning) == 1 and "8 of the 13 runs are not drawn" in warning[0]
    assert "variant_12" in warning[0] and "variant_04" not in warning[0]


def test_short_labels_are_kept_as_they_are():
    labels, template, key = compare.legend_labels(["x/runs/toy [tau=0.0]", "x/runs/toy [tau=0.5]", "y/runs/toy"])
    assert labels == ["x/runs/toy [tau=0.0]", "x/runs/toy [tau=0.5]", "y/runs/toy"] and not template and not key


def test_a_long_label_loses_what_every_run_shares_and_is_wrapped():
    names = [f"quickstart (sweeps/2026/kernel.degree-{d}+training.epochs-30+algorithm.eta-0.1+evaluation.folds-10)"
             for d in (2, 3, 4)]
    labels, template, key = compare.legend_labels(names)
    assert labels == ["kernel.degree-2", "kernel.degree-3", "kernel.degree-4"] and not key
    assert template == "quickstart (sweeps/2026/*+training.epochs-30+algorithm.eta-0.1+evaluation.folds-10)"


def test_labels_that_cannot_be_shortened_get_a_key():
    names = [f"{k}_" + "_".join(f"word{k}{i}" for i in range(40)) for k in range(3)]
    labels, template, key = compare.legend_labels(names)
    assert [lab.split(" ", 1)[0] for lab in labels] == ["#1", "#2", "#3"]
    assert all(len(ln) <= WIDTH for lab in labels for ln in lab.split("\n"))
    assert [k for k, _ in key] == ["#1", "#2", "#3"] and [full for _, full in key] == names
