"""plab report on folders of your own runs (no ``paper:``): a report of those runs -- each run's
table of rules x checkpoints with spread, its figures, the settings that differ between runs and
the paired comparisons that are valid -- and none of the papers' sections unless a paper run is
given too."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from perceptron_lab.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CONFIG = """name: mine
dataset: {name: sonar}
algorithm: {eta: 0.1, tau: 0}
training: {epochs: 2, checkpoints: [1, 2]}
prediction: {rules: [vote, last]}
evaluation: {mode: kfold, folds: 3}
output: {figures: false}
"""
PAPER_SECTIONS = ("How cells are scored", "Protocol choices and assumptions", "in-scope cells",
                  "Causes of the cells outside tolerance", "Not reproduced yet")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs of one config on sonar (tau 0 and 0.5, the same folds) and one on a 150-example subset
    (other data: not pairable with them)."""
    tmp = tmp_path_factory.mktemp("own")
    cfg = tmp / "mine.yaml"
    cfg.write_text(CONFIG)
    base = tmp / "runs"
    for name, extra in (("a", []), ("b", ["algorithm.tau=0.5"]), ("c", ["dataset.train_size=150"])):
        r = invoke("run", cfg, *extra, "--out", base / name, "-q")
        assert r.exit_code == 0, r.output
    return base


@pytest.fixture(scope="module")
def report(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("rep") / "report"
    r = invoke("report", runs, "--out", out)
    assert r.exit_code == 0, r.output
    return out, (out / "report.md").read_text(), (out / "index.html").read_text()


def _errors(run: Path, rule: str, epoch: float) -> np.ndarray:
    df = pd.read_csv(run / "results.csv", dtype={"class": str})
    d = df[(df["class"] == "all") & (df["metric"] == "test_error_pct") & (df["rule"] == rule)
           & (df["normalized"].astype(str).str.lower() != "true") & (df["epoch"] == epoch)]
    return d.sort_values(["fold", "permutation"])["value"].to_numpy(dtype=float)


def _row(md: str, after: str, first: str) -> list[str]:
    """The cells of the first Markdown table row starting with ``| first |`` after the text ``after``."""
    tail = md[md.index(after):]
    line = next(ln for ln in tail.splitlines() if ln.startswith(f"| {first} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_no_paper_sections_for_your_own_runs(report):
    _, md, page = report
    assert md.startswith("# perceptron_lab: your runs")
    for text in PAPER_SECTIONS:
        assert text not in md and text not in page, text
    assert "0 / 0" not in md and "0/0" not in md


def test_each_run_has_its_table_of_rules_by_checkpoint_with_spread(report, runs):
    _, md, _ = report
    for name in ("a", "b", "c"):
        assert f"— {runs / name}" in md
    cells = _row(md, f"— {runs / 'b'}", "test error % vote")
    assert len(cells) == 3   # the row's name, then T = 1 and T = 2
    for cell, epoch in zip(cells[1:], (1, 2)):
        v = _errors(runs / "b", "vote", epoch)
        assert cell == f"{v.mean():.2f} ± {v.std(ddof=1):.2f}"
    assert "| mistakes |" in md and "| support vectors |" in md


def test_the_figures_are_drawn_into_the_report(report):
    out, md, page = report
    imgs = re.findall(r"!\[[^]]*\]\(([^)]+)\)", md)
    assert len(imgs) >= 6 and all((out / p).is_file() for p in imgs)   # learning curves and counts of 3 runs
    assert all(f'src="{p}"' in page for p in imgs)


def test_the_settings_that_differ_are_listed(report):
    _, md, _ = report
    assert _row(md, "Settings that differ", "algorithm.tau") == ["algorithm.tau", "0", "0.5", "0"]
    assert _row(md, "Settings that differ", "dataset.train_size") == ["dataset.train_size", "null", "null", "150"]


def test_runs_on_the_same_folds_are_paired_and_others_are_not(report, runs):
    _, md, _ = report
    assert md.count("### A = ") == 1   # a and b; c read other data
    vote = _row(md, "### A = ", "vote")
    d = _errors(runs / "a", "vote", 2) - _errors(runs / "b", "vote", 2)
    assert vote[3] == f"{d.mean():.2f}"   # A - B: the mean of the fold differences
    assert re.search(r"and .* they read different data \(data fingerprint", md)


def test_a_paper_run_brings_the_papers_sections_and_your_runs_get_a_page(runs, tmp_path):
    out = tmp_path / "report"
    r = invoke("report", ROOT / "results" / "fs1999" / "d4", runs / "a", runs / "b", "--out", out)
    assert r.exit_code == 0, r.output
    md = (out / "report.md").read_text()
    assert "How cells are scored" in md and "## Your runs" in md
    assert md.index("## Your runs") > md.index("fs1999_table1_d4")
    assert 'href="runs.html"' in (out / "index.html").read_text()
    assert f"— {runs / 'a'}" in (out / "runs.html").read_text()


def test_a_damaged_results_csv_stops_the_report(runs, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in ("run.json", "results.csv"):
        (bad / f).write_bytes((runs / "a" / f).read_bytes())
    text = (bad / "results.csv").read_text()
    (bad / "results.csv").write_text(text[: len(text) // 2])
    r = invoke("report", bad, "--out", tmp_path / "rep")
    assert r.exit_code == 1 and "results.csv" in r.output and "--allow-damaged" in r.output
    assert not (tmp_path / "rep" / "report.md").exists()


def test_a_report_it_may_not_replace_is_refused_before_any_figure_is_drawn(runs, tmp_path):
    out = tmp_path / "rep"
    out.mkdir()
    (out / "report.md").write_text("my notes\n")
    r = invoke("report", runs, "--out", out)
    assert r.exit_code == 1 and "was not written by plab" in r.output
    assert sorted(p.name for p in out.iterdir()) == ["report.md"]


def test_a_report_replaces_the_report_plab_wrote_before(runs, report):
    """A second report into the same folder (as make reproduce writes results/report/ each time)
    replaces plab's own report.md and index.html: only a file plab did not write is refused."""
    out, md, _ = report
    assert str(runs / "c") in md
    r = invoke("report", runs / "a", runs / "b", "--out", out)
    assert r.exit_code == 0, r.output
    new = (out / "report.md").read_text()
    assert str(runs / "a") in new and str(runs / "c") not in new


def test_two_grid_points_of_a_sweep_are_paired_with_the_command_that_pairs_them(tmp_path):
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(CONFIG.replace("evaluation: {mode: kfold, folds: 3}",
                                  "evaluation: {mode: kfold, folds: 3, grid: {algorithm.tau: [0, 0.5]}}"))
    run = tmp_path / "sweep"
    assert invoke("run", cfg, "--out", run, "-q").exit_code == 0
    r = invoke("report", run, "--out", tmp_path / "rep")
    assert r.exit_code == 0, r.output
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "### A = tau=0, B = tau=0.5" in md
    assert f"`plab compare {run} --points 0,1 --paired` gives the same" in md
    vote = _row(md, "### A = ", "vote")
    df = pd.read_csv(run / "results.csv", dtype={"class": str})
    d = df[(df["class"] == "all") & (df["metric"] == "test_error_pct") & (df["rule"] == "vote") & (df["epoch"] == 2)
           & (df["normalized"].astype(str).str.lower() != "true")].sort_values("fold")
    diff = d[d["grid_point"] == 0]["value"].to_numpy() - d[d["grid_point"] == 1]["value"].to_numpy()
    assert vote[3] == f"{diff.mean():.2f}"
