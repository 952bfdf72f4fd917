"""The end-of-run summary: error rules first in the config's order, counts last with ±, the chosen
grid points of searches with their cross-validated error; search.csv / nested.csv lead with error."""

from __future__ import annotations

import numpy as np
import pandas as pd
from click.testing import CliRunner

from perceptron_lab.cli.main import main
from perceptron_lab.run.summary import rule_order

CFG = """
extends: "package:quickstart.yaml"
name: {name}
training:
  epochs: 2
  checkpoints: [1, 2]
evaluation:
  mode: {mode}
  folds: 3
  inner_folds: 3
  grid:
    algorithm.tau: [0, 0.5]
  search: [[algorithm.tau]]
output:
  dir: {out}
  figures: false
"""


def run(tmp_path, mode):
    cfg = tmp_path / f"{mode}.yaml"
    out = tmp_path / mode
    cfg.write_text(CFG.format(name=mode, mode=mode, out=out))
    r = CliRunner().invoke(main, ["run", str(cfg), "--quiet"])
    assert r.exit_code == 0, r.output
    return out, r.output


def test_rule_order_puts_errors_first_and_counts_last():
    rows = ["avg", "mistakes", "last_norm", "support_vectors", "vote", "last"]
    assert rule_order(rows, ["vote", "last", "avg"]) == ["vote", "last", "last_norm", "avg", "mistakes",
                                                         "support_vectors"]


def test_kfold_search_summary_and_search_csv(tmp_path):
    out, text = run(tmp_path, "kfold")
    lines = text.splitlines()
    head = next(i for i, x in enumerate(lines) if x.startswith("test error %"))
    # a grid: one table, a row per point, the quickstart's rules in its order as columns, each with a ±
    assert lines[head + 1].split() == ["point", "tau", "last", "longest", "vote", "avg"]
    assert [x.split()[:2] for x in lines[head + 2:head + 4]] == [["0", "0"], ["1", "0.5"]]
    assert lines[head + 2].count("±") == 4
    s = pd.read_csv(out / "search.csv")
    assert list(s.columns).index("error_pct") < list(s.columns).index("accuracy_pct")
    assert ((s["error_pct"] + s["accuracy_pct"] - 100).abs() < 1e-3).all()
    # the chosen point of the tau plan for vote, with its error, is printed as search.csv has it
    r = s[(s["search"] == "tau") & (s["rule"] == "vote")].iloc[0]
    line = next(x for x in lines if x.strip().startswith("tau") and " vote " in x)
    assert r["chosen"] in line and f"{r['error_pct']:6.2f}".strip() in line


def test_progress_log_has_a_line_per_part(tmp_path):
    out, _ = run(tmp_path, "kfold")
    lines = (out / "progress.log").read_text().splitlines()
    # one part per fold, each holding the fold's 2 grid points
    assert lines[0].endswith("start: 3 part(s) to compute")
    assert [x.split()[1:3] for x in lines[1:]] == [["part", "1/3"], ["part", "2/3"], ["part", "3/3"]]
    assert all("units=2" in x and "train=" in x and "eval=" in x for x in lines[1:])


def test_nested_summary_prints_the_choices_and_inner_cv_error(tmp_path):
    out, text = run(tmp_path, "nested")
    n = pd.read_csv(out / "nested.csv", keep_default_na=False)
    res = pd.read_csv(out / "results.csv", keep_default_na=False)
    inner = res[(res["search"] == "tau") & (res["rule"] == "avg") & (res["metric"] == "inner_cv_error_pct")]
    expect = inner.groupby("fold")["value"].mean().mean()
    r = n[(n["search"] == "tau") & (n["rule"] == "avg")].iloc[0]
    line = next(x for x in text.splitlines() if x.strip().startswith("tau") and " avg " in x)
    assert f"chosen {r['choices']}" in line and f"inner-CV error {expect:.2f}" in line
    assert f"outer test error {r['error_pct']:.2f}" in line


def test_rule_order_lists_a_rule_once_when_the_config_names_its_normalized_form():
    """Freund & Schapire's configs list avg and avg_norm both: the summary has one row of each."""
    rows = ["avg", "avg_norm", "last", "last_norm", "vote", "mistakes"]
    rules = ["vote", "avg", "avg_norm", "last", "last_norm"]
    assert rule_order(rows, rules) == ["vote", "avg", "avg_norm", "last", "last_norm", "mistakes"]


def test_accuracies_by_point_are_each_points_runs_in_fold_and_permutation_order():
    # the search reads each point's runs from one sort of all rows: the same arrays, element for
    # element, as sorting each point's rows on its own, whatever order the rows come in
    from perceptron_lab.run.evaluation import _accuracies_by_point

    rng = np.random.default_rng(3)
    rows = [(g, r, nz, f, p, float(rng.random() * 30))
            for g in range(12) for r in ("last", "vote") for nz in ("false", "true")
            for f in range(5) for p in range(3) if not (g == 7 and r == "vote")]
    d = pd.DataFrame(rows, columns=["grid_point", "rule", "normalized", "fold", "permutation", "value"])
    d = d.iloc[rng.permutation(len(d))].reset_index(drop=True)
    got = _accuracies_by_point(d)
    expected = {(g, r, nz): 100.0 - part.sort_values(["fold", "permutation"])["value"].to_numpy()
                for (g, r, nz), part in d.groupby(["grid_point", "rule", "normalized"])}
    assert list(got) == sorted(expected)
    for key, vals in expected.items():
        np.testing.assert_array_equal(got[key], vals)
        assert float(got[key].mean()) == float(vals.mean())
    assert _accuracies_by_point(d.iloc[:0]) == {}
