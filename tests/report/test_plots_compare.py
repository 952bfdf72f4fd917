"""plab plot and the multi-run plab compare on small user runs of sonar (shipped in the package)."""

from __future__ import annotations

import struct

import pandas as pd
import pytest
from click.testing import CliRunner

from perceptron_lab.cli.main import main
from perceptron_lab.report.compare import side_by_side

KFOLD = """
extends: "package:quickstart.yaml"
name: {name}
training:
  epochs: 3
  checkpoints: [1, 3]
  curve_every: 1
evaluation:
  mode: kfold
  folds: 3
  grid:
    algorithm.tau: {taus}
output:
  dir: {out}
  figures: {figures}
"""


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def run(tmp_path, name, taus="[0, 0.5]", figures="true", mode_lines=""):
    cfg = tmp_path / f"{name}.yaml"
    out = tmp_path / "runs" / name
    cfg.write_text(KFOLD.format(name=name, taus=taus, out=out, figures=figures) + mode_lines)
    r = CliRunner().invoke(main, ["run", str(cfg), "--quiet"])
    assert r.exit_code == 0, r.output
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plots")
    return {"a": run(tmp, "a"), "b": run(tmp, "b", taus="[0.125]"), "nofig": run(tmp, "nofig", figures="false")}


def test_plab_run_draws_the_figures_beside_the_results(runs):
    a = runs["a"]
    for name in ("learning_curves", "counts", "parameter_curve", "folds"):
        w, h = png_size(a / f"{name}.png")
        assert w > 300 and h > 200
    # a single grid point has no parameter curve; output.figures: false draws nothing
    assert not (runs["b"] / "parameter_curve.png").exists() and (runs["b"] / "folds.png").exists()
    assert not list(runs["nofig"].glob("*.png"))


def test_plab_plot_redraws_into_another_folder(runs, tmp_path):
    r = CliRunner().invoke(main, ["plot", str(runs["nofig"]), "--out", str(tmp_path / "figs")])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "figs").glob("*.png")) == [
        "counts.png", "folds.png", "learning_curves.png", "parameter_curve.png"]


def test_plab_plot_of_a_folder_without_results_is_a_one_line_error(tmp_path):
    r = CliRunner().invoke(main, ["plot", str(tmp_path)])
    assert r.exit_code != 0 and "no results.csv" in r.output and "Traceback" not in r.output


def test_side_by_side_table_holds_each_runs_means(runs):
    """The table's cells are the means ± std over folds of results.csv at the last epoch, computed
    here from the file directly."""
    t = side_by_side([runs["a"], runs["b"]])
    assert list(t.columns) == ["a [tau=0]", "a [tau=0.5]", "b"]
    rows = list(t.index)
    # error rules first, counts last
    assert rows[-2:] == ["mistakes", "support vectors"] and all(r.startswith("test error %") for r in rows[2:-2])
    res = pd.read_csv(runs["a"] / "results.csv")
    sel = res[(res["grid_point"] == 1) & (res["epoch"] == 3) & (res["rule"] == "vote")
              & (res["metric"] == "test_error_pct") & (res["class"] == "all")]
    assert len(sel) == 3
    assert t.loc["test error % vote", "a [tau=0.5]"] == f"{sel['value'].mean():.2f} ± {sel['value'].std():.2f}"
    mis = res[(res["grid_point"] == 0) & (res["epoch"] == 3) & (res["metric"] == "mistakes") & (res["class"] == "all")]
    assert t.loc["mistakes", "a [tau=0]"] == f"{mis['value'].mean():.1f} ± {mis['value'].std():.1f}"


def test_cli_compare_several_runs_writes_a_figure(runs, tmp_path):
    fig = tmp_path / "cmp.png"
    r = CliRunner().invoke(main, ["compare", str(runs["a"]), str(runs["b"]), "--figure", str(fig)])
    assert r.exit_code == 0, r.output
    assert "a [tau=0.5]" in r.output and "test error % vote" in r.output and png_size(fig)[0] > 300


def test_compare_only_outside_lists_causes(tmp_path):
    from test_report import make_run

    d = make_run(tmp_path)
    r = CliRunner().invoke(main, ["compare", str(d), "--only-outside"])
    assert r.exit_code == 0, r.output
    assert "unexplained" in r.output and "Last" in r.output
    assert "Vote" not in r.output.split("\n", 1)[1]     # the within-tolerance cell is left out
