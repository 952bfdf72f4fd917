"""plab compare names runs by the shortest text that tells them apart (the values of the settings
that differ, not their folders), shows a setting that does not apply as a dash, not ``null``, and
pairs two grid points of one sweep (``--points``)."""

import io
import os

import pandas as pd
import pytest
from click.testing import CliRunner

from perceptron_lab.cli.main import main

CONFIG = """name: bud
dataset: {name: sonar}
kernel: {type: gaussian, sigma: 3}
algorithm: {name: stoptron, budget: 10}
training: {epochs: 1}
prediction: {rules: [last, avg]}
evaluation: {mode: kfold, folds: 3}
output: {figures: false}
"""

SWEEP = """name: sweep
dataset: {name: sonar}
algorithm: {eta: 0.1}
training: {epochs: 1}
prediction: {rules: [vote, last]}
evaluation: {mode: kfold, folds: 3, grid: {algorithm.tau: [0, 0.25, 0.5]}}
output: {figures: false}
"""


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def budget_runs(tmp_path_factory):
    """A Stoptron with budgets 10 and 20 and an unbudgeted perceptron, one config with overrides:
    every run is named ``bud``, and their folders are the override strings."""
    tmp = tmp_path_factory.mktemp("labels")
    cfg = tmp / "bud.yaml"
    cfg.write_text(CONFIG)
    dirs, here = [], os.getcwd()
    os.chdir(tmp)   # runs/bud/<overrides>, as a user's runs are
    try:
        for extra in ([], ["algorithm.budget=20"], ["algorithm.name=perceptron", "algorithm.budget=null"]):
            r = invoke("run", cfg, *extra, "-q")
            assert r.exit_code == 0, r.output
            dirs.append(r.output.splitlines()[1].split("results in ")[1].removesuffix("/results.csv"))
    finally:
        os.chdir(here)
    return tmp, dirs


def test_labels_are_the_values_that_differ_not_the_folders(budget_runs, monkeypatch):
    tmp, dirs = budget_runs
    monkeypatch.chdir(tmp)
    assert len(set(dirs)) == 3
    r = invoke("compare", *dirs, "--csv")
    assert r.exit_code == 0, r.output
    assert list(pd.read_csv(io.StringIO(r.output))["run"]) == ["stoptron/10", "stoptron/20", "perceptron"]
    r = invoke("compare", *dirs, "--figure", tmp / "c.png")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[1].split() == ["stoptron/10", "stoptron/20", "perceptron"]


def test_a_setting_that_does_not_apply_shows_a_dash(budget_runs, monkeypatch):
    tmp, dirs = budget_runs
    monkeypatch.chdir(tmp)
    r = invoke("compare", *dirs, "--diff", "--figure", tmp / "c.png")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    rows = {ln.split()[0]: ln.split()[1:] for ln in lines[2:lines.index("")]}
    assert rows["algorithm.budget"] == ["10", "20", "\u2014"]        # the perceptron has no budget
    assert rows["algorithm.eta"] == ["\u2014", "\u2014", "1"]        # nor the Stoptron a learning rate
    assert rows["algorithm.alpha_bound"] == ["\u2014", "\u2014", "null"]   # null: the perceptron's value
    assert not any("null" in v for k, v in rows.items() if k != "algorithm.alpha_bound")


def _vote_errors(run, gp):
    df = pd.read_csv(run / "results.csv", dtype={"class": str})
    d = df[(df["class"] == "all") & (df["metric"] == "test_error_pct") & (df["rule"] == "vote")
           & (df["normalized"].astype(str).str.lower() != "true") & (df["grid_point"] == gp)]
    d = d[d["epoch"] == d["epoch"].max()]
    return d.sort_values("fold")["value"].to_numpy()


def test_two_grid_points_of_a_sweep_are_paired(tmp_path):
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(SWEEP)
    run = tmp_path / "sweep"
    assert invoke("run", cfg, "--out", run, "-q").exit_code == 0
    r = invoke("compare", run, "--paired")
    assert r.exit_code == 2
    assert "pick two grid points with --points I,J" in r.output and "0 tau=0, 1 tau=0.25, 2 tau=0.5" in r.output
    r = invoke("compare", run, "--points", "0,2", "--paired", "--csv")
    assert r.exit_code == 0, r.output
    got = pd.read_csv(io.StringIO(r.output)).set_index("rule")
    a, b = _vote_errors(run, 0), _vote_errors(run, 2)   # one training order: a fold is one pair
    assert got.loc["vote", "A - B"] == pytest.approx((a - b).mean(), abs=1e-5)
    assert got.loc["vote", "n"] == 3
    r = invoke("compare", run, "--points", "0,2", "--paired")
    assert "A = tau=0 against B = tau=0.5" in r.output.splitlines()[0]


def test_points_that_do_not_exist_are_refused(tmp_path):
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(SWEEP)
    run = tmp_path / "sweep"
    assert invoke("run", cfg, "--out", run, "-q").exit_code == 0
    r = invoke("compare", run, "--points", "0,7", "--paired")
    assert r.exit_code == 2
    assert r.output.splitlines() == [f"plab: error: {run} has no grid point 7 (its points are 0, 1, 2, numbered as "
                                     "in its grid.csv)"]
    r = invoke("compare", run, "--points", "0,zero")
    assert r.exit_code == 2 and "give grid point numbers separated by commas" in r.output
