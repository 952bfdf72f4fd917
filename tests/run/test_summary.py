"""The end-of-run summary: error rules first in the config's order, counts last with ±, the chosen
grid points of searches with their cross-validated error; search.csv / nested.csv lead with error.

Every number the summary prints is checked against a recomputation from ``results.csv`` done here,
row by row: a cell of a setting (a grid key no plan searches, such as ``training.seed``) must hold
that setting's rows only, and a cell of one run prints no spread."""

from __future__ import annotations

import re

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


# ----------------------------------------------------------------------------- every printed number, recomputed


NESTED_SEEDS = """
extends: "package:quickstart.yaml"
name: {name}
{dataset}
training:
  epochs: 2
  checkpoints: [1, 2]
evaluation:
  mode: nested
  {outer}
  inner_folds: 3
  grid:
    training.seed: [1, 2]
    algorithm.tau: [0, 0.5]
  search: [[algorithm.tau]]
output:
  dir: {out}
  figures: false
"""


def _run_nested(tmp_path, name, dataset="", outer="folds: 3"):
    cfg = tmp_path / f"{name}.yaml"
    out = tmp_path / name
    cfg.write_text(NESTED_SEEDS.format(name=name, dataset=dataset, outer=outer, out=out))
    r = CliRunner().invoke(main, ["run", str(cfg), "--quiet"])
    assert r.exit_code == 0, r.output
    res = pd.read_csv(out / "results.csv", keep_default_na=False, dtype=str)
    res["v"] = res["value"].astype(float)
    grid = pd.read_csv(out / "grid.csv", dtype=str, keep_default_na=False)
    return r.output, res, grid


def _cells(line: str) -> list[str]:
    """The cells of a printed table row (columns are two or more spaces apart)."""
    return re.split(r"\s{2,}", line.strip())


def _section(lines: list[str], starts: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the printed table under the line that starts with ``starts``."""
    i = next(k for k, x in enumerate(lines) if x.startswith(starts))
    rows = []
    for x in lines[i + 2:]:
        if not x.startswith(" ") or not x.strip():
            break
        rows.append(_cells(x))
    return _cells(lines[i + 1]), rows


def _mean_pm(text: str):
    """(mean, sd or None) of a printed cell ``12.34 ± 1.23`` or ``12.34``."""
    m = re.fullmatch(r"(-?\d+\.\d+)(?: ± (\d+\.\d+))?", text)
    assert m, f"not a number or a number ± sd: {text!r}"
    return float(m.group(1)), (None if m.group(2) is None else float(m.group(2)))


def _rule_rows(d: pd.DataFrame, rule: str) -> pd.DataFrame:
    base, norm = (rule[:-5], "true") if rule.endswith("_norm") else (rule, "false")
    return d[(d["rule"] == base) & (d["normalized"] == norm)]


def _check_tables(text: str, res: pd.DataFrame, grid: pd.DataFrame, n_outer: int):
    lines = text.splitlines()
    last = res["epoch"].astype(float).max()
    at_last = res[(res["epoch"].astype(float) == last) & (res["class"] == "all")]
    outer = at_last[(at_last["inner_fold"] == "-1") & (at_last["search"] == "") & (at_last["metric"] == "test_error_pct")]
    # the run's table: a row per grid point, each rule's mean ± sample sd over that point's outer runs
    head, rows = _section(lines, "test error % at the last epoch")
    assert head[:3] == ["point", "tau", "seed"] and len(rows) == len(grid)
    for row in rows:
        g = grid[grid["grid_point"] == row[0]].iloc[0]
        assert row[1:3] == [g["algorithm.tau"], g["training.seed"]]
        for rule, cell in zip(head[3:], row[3:]):
            vals = _rule_rows(outer[outer["grid_point"] == row[0]], rule)["v"]
            assert len(vals) == n_outer
            mean, sd = _mean_pm(cell)
            assert mean == round(vals.mean(), 2), (row, rule)
            if n_outer == 1:
                assert sd is None, f"one run, yet a spread is printed: {cell!r}"
            else:
                assert sd == round(vals.std(ddof=1), 2), (row, rule)
    # the nested table: a row per setting (seed), plan and rule, each from its own setting's rows
    head, rows = _section(lines, "nested search:")
    assert head == ["seed", "plan", "rule", "chosen", "inner-CV error %", "outer test error %"]
    sel = at_last[at_last["search"] != ""]
    rules = sorted(set(outer["rule"]))
    assert sorted((r[0], r[1], r[2]) for r in rows) == sorted(
        (seed, plan, rule) for seed in ("1", "2") for plan in ("nothing", "tau") for rule in rules)
    tau_of = dict(zip(grid["grid_point"], grid["algorithm.tau"]))
    for seed, plan, rule, chosen, inner, test in rows:
        points = set(grid.loc[grid["training.seed"] == seed, "grid_point"])
        mine = _rule_rows(sel[(sel["search"] == plan) & sel["grid_point"].isin(points)], rule)
        t = mine[mine["metric"] == "test_error_pct"]
        per_fold = t.groupby("fold")["v"].mean()
        assert len(per_fold) == n_outer
        mean, sd = _mean_pm(test)
        assert mean == round(per_fold.mean(), 2), (seed, plan, rule)
        if n_outer == 1:
            assert sd is None, f"one outer fold, yet a spread is printed: {test!r}"
        else:
            assert sd == round(float(np.sqrt(np.mean((per_fold - per_fold.mean()) ** 2))), 2), (seed, plan, rule)
        inner_fold = mine[mine["metric"] == "inner_cv_error_pct"].groupby("fold")["v"].mean()
        assert float(inner) == round(inner_fold.mean(), 2), (seed, plan, rule)
        picks = t.drop_duplicates("fold")["grid_point"].map(tau_of).value_counts()
        assert sorted(chosen.split("; ")) == sorted(f"tau={v} x{c}" for v, c in picks.items()), (seed, plan, rule)
    return rows


def test_nested_summary_gives_each_setting_its_own_inner_cv_error(tmp_path):
    """Khardon & Wachman's Table 7 protocol on sonar: a grid over training.seed (not searched) with
    tau searched in nested CV. Each seed's row holds that seed's inner-CV error, not the mean over
    seeds (which printed the same number on both seeds' rows)."""
    text, res, grid = _run_nested(tmp_path, "seeds")
    rows = _check_tables(text, res, grid, n_outer=3)
    by_seed = {(p, r): {} for _, p, r, *_ in rows}
    for seed, plan, rule, _, inner, _ in rows:
        by_seed[(plan, rule)][seed] = inner
    assert any(v["1"] != v["2"] for v in by_seed.values()), "the seeds' inner-CV errors should differ"


def test_one_outer_fold_prints_no_spread(tmp_path):
    """A nested run with a holdout outer split (one outer fold, one run per grid point): each cell
    is the value alone, never '± nan' or a made-up '± 0.00'. The data: the packaged sonar, split in
    two files."""
    from perceptron_lab.datasets import load_dataset

    s = load_dataset("sonar")
    y = np.array(s.classes)[s.y_train]
    order = np.random.default_rng(0).permutation(len(y))
    np.savez(tmp_path / "train.npz", X=s.X_train[order[:150]], y=y[order[:150]])
    np.savez(tmp_path / "test.npz", X=s.X_train[order[150:]], y=y[order[150:]])
    data = f"dataset: {{name: null, path: {tmp_path / 'train.npz'}, test_path: {tmp_path / 'test.npz'}}}"
    text, res, grid = _run_nested(tmp_path, "holdout", data, "outer: holdout")
    assert "nan" not in text and "± 0.00" not in text, text
    _check_tables(text, res, grid, n_outer=1)


def test_a_kfold_search_over_a_setting_prints_each_settings_choice(tmp_path):
    """A k-fold search with a grid key it does not search (the seed): one row per seed, plan and
    rule, naming the seed, with the chosen point's mean error over its own runs."""
    cfg = tmp_path / "k.yaml"
    out = tmp_path / "k"
    cfg.write_text(NESTED_SEEDS.format(name="k", dataset="", outer="folds: 3", out=out).replace(
        "mode: nested", "mode: kfold").replace("  inner_folds: 3\n", ""))
    r = CliRunner().invoke(main, ["run", str(cfg), "--quiet"])
    assert r.exit_code == 0, r.output
    res = pd.read_csv(out / "results.csv", keep_default_na=False, dtype=str)
    res["v"] = res["value"].astype(float)
    grid = pd.read_csv(out / "grid.csv", dtype=str, keep_default_na=False)
    e = res[(res["epoch"].astype(float) == 2) & (res["class"] == "all") & (res["metric"] == "test_error_pct")]
    head, rows = _section(r.output.splitlines(), "parameter search")
    assert head == ["seed", "plan", "rule", "chosen", "test error %"] and len(rows) == 2 * 2 * 4
    for seed, plan, rule, chosen, err in rows:
        g = grid[(grid["training.seed"] == seed) & ("tau=" + grid["algorithm.tau"] == chosen)]
        assert len(g) == 1, (seed, chosen)
        vals = _rule_rows(e[e["grid_point"] == g["grid_point"].iloc[0]], rule)["v"]
        mean, sd = _mean_pm(err)
        assert mean == round(vals.mean(), 2)
        assert sd == round(float(np.sqrt(np.mean((vals - vals.mean()) ** 2))), 2)
        # a seed's choice is among its own points: 'nothing' the inactive tau = 0, 'tau' an active one
        assert (chosen == "tau=0") == (plan == "nothing")
