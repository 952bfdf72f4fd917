"""plab compare: short headers, only what differs, CSV, a row per run for sweeps, and the paired
difference that says whether run A (rule X) is better than run B (rule Y)."""

import io
import math
import statistics

import pandas as pd
import pytest
from click.testing import CliRunner

from perceptron_lab.cli.main import main
from perceptron_lab.report.compare import paired_difference
from perceptron_lab.run.figures import run_labels

#: t_{2, 0.975} and t_{5, 0.975}, from a table of Student's t distribution.
T2, T5 = 4.302652729911275, 2.570581835636314

BASE = """name: {name}
dataset: {{name: sonar}}
algorithm: {{eta: 0.1, tau: {tau}}}
training: {{epochs: 1, permutations: {perms}, seed: 0}}
prediction: {{rules: [vote, last]}}
evaluation: {{mode: kfold, folds: {folds}}}
output: {{figures: false}}
"""


def invoke(*args):
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return r


def make(tmp, name, tau=0, perms=1, folds=3, extra=()):
    cfg = tmp / f"{name}.yaml"
    cfg.write_text(BASE.format(name=name, tau=tau, perms=perms, folds=folds))
    r = invoke("run", cfg, "--out", tmp / name, "-q", *extra)
    assert r.exit_code == 0, r.output
    return tmp / name


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cmp")
    return {"a": make(tmp, "a"), "b": make(tmp, "b", tau=0.5), "c": make(tmp, "c", folds=4),
            "p2": make(tmp, "p2", tau=0.5, perms=2), "tmp": tmp}


def fold_errors(folder, rule, perm=0):
    df = pd.read_csv(folder / "results.csv", dtype={"class": str})
    d = df[(df["class"] == "all") & (df["metric"] == "test_error_pct") & (df["rule"] == rule)
           & (df["normalized"].astype(str).str.lower() != "true") & (df["permutation"] == perm)]
    d = d[d["epoch"] == d["epoch"].max()]
    return d.sort_values("fold")["value"].tolist()


# ----------------------------------------------------------------------------- the paired difference


def corrected_interval(d, folds):
    """Nadeau & Bengio's corrected resampled t-interval of the fold differences ``d`` of a
    ``folds``-fold cross-validation, worked from its formula: mean ± t_{J-1} sqrt((1/J + 1/(K-1)) s^2)."""
    J = len(d)
    mean, s2 = statistics.mean(d), statistics.variance(d)
    half = {3: T2, 6: T5}[J] * math.sqrt((1 / J + 1 / (folds - 1)) * s2)
    return mean, mean - half, mean + half


def test_paired_difference_by_hand():
    """Three folds, two training orders each: the orders of a fold are averaged first, then the
    corrected t runs over the three fold means (J = 3, n_test/n_train = 1/2)."""
    idx = pd.MultiIndex.from_tuples([(f, p) for f in range(3) for p in range(2)], names=["fold", "permutation"])
    x = pd.Series([10.0, 12.0, 20.0, 20.0, 30.0, 28.0], index=idx)
    y = pd.Series([8.0, 8.0, 19.0, 19.0, 25.0, 23.0], index=idx)
    r = paired_difference(x, y, proto={"kind": "kfold", "ratio": 0.5})
    # fold means of d: 3, 1, 5 -> mean 3, s^2 = 4; se = sqrt((1/3 + 1/2) * 4)
    se = math.sqrt((1 / 3 + 1 / 2) * 4)
    assert r["n"] == 3 and r["pairs"] == 6 and r["method"] == "corrected t"
    assert r["diff"] == pytest.approx(3.0) and r["se"] == pytest.approx(se)
    assert (r["lo"], r["hi"]) == (pytest.approx(3 - T2 * se), pytest.approx(3 + T2 * se))
    assert r["x"] - r["y"] == pytest.approx(r["diff"])
    # only the pairs both have count: y without fold 2 leaves two fold means, 3 and 1
    r2 = paired_difference(x, y.iloc[:4], proto={"kind": "kfold", "ratio": 0.5})
    assert r2["n"] == 2 and r2["diff"] == pytest.approx(2.0)
    # one fold: no interval, and the reason
    r1 = paired_difference(x, y.iloc[:2], proto={"kind": "kfold", "ratio": 0.5})
    assert r1["lo"] is None and r1["why"] == "1 fold, fewer than 2"


def test_run_a_against_run_b_is_the_hand_computed_paired_interval(runs):
    r = invoke("compare", runs["a"], runs["b"], "--paired", "--csv")
    assert r.exit_code == 0, r.output
    got = pd.read_csv(io.StringIO(r.output)).set_index("rule")
    for rule in ("vote", "last"):
        a, b = fold_errors(runs["a"], rule), fold_errors(runs["b"], rule)
        mean, lo, hi = corrected_interval([x - y for x, y in zip(a, b)], folds=3)
        row = got.loc[rule]
        assert row["n"] == 3 and row["method"] == "corrected t"
        assert row["A - B"] == pytest.approx(mean, abs=1e-4) and row["A"] == pytest.approx(statistics.mean(a), abs=1e-4)
        assert row["ci_low"] == pytest.approx(lo, abs=1e-4)
        assert row["ci_high"] == pytest.approx(hi, abs=1e-4)
        assert row["verdict"] == ("A lower" if hi < 0 else "B lower" if lo > 0 else "no difference shown")
    text = " ".join(invoke("compare", runs["a"], runs["b"], "--paired").output.split())
    assert "A = a against B = b" in text and "95% CI" in text and "Nadeau & Bengio's corrected resampled t" in text


def test_only_the_shared_permutations_are_paired(runs):
    """b has one permutation, p2 two with the same settings: the pairs are b's three folds, all
    equal: no difference shown."""
    r = invoke("compare", runs["b"], runs["p2"], "--paired", "--csv")
    assert r.exit_code == 0, r.output
    got = pd.read_csv(io.StringIO(r.output)).set_index("rule")
    assert (got["n"] == 3).all() and (got["A - B"] == 0).all()
    assert (got["verdict"] == "no difference shown").all()


def test_rule_x_against_rule_y_in_each_run(runs):
    r = invoke("compare", runs["a"], "--rules", "vote,last", "--csv")
    assert r.exit_code == 0, r.output
    got = pd.read_csv(io.StringIO(r.output)).iloc[0]
    mean, lo, hi = corrected_interval([x - y for x, y in zip(fold_errors(runs["a"], "vote"),
                                                              fold_errors(runs["a"], "last"))], folds=3)
    assert got["rule"] == "vote - last" and got["n"] == 3
    assert got["A - B"] == pytest.approx(mean, abs=1e-4)
    assert got["ci_low"] == pytest.approx(lo, abs=1e-4) and got["ci_high"] == pytest.approx(hi, abs=1e-4)
    assert got["verdict"] == ("vote lower" if hi < 0 else "last lower" if lo > 0 else "no difference shown")


def test_runs_on_other_folds_are_not_comparable(runs):
    r = invoke("compare", runs["a"], runs["c"], "--paired")
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        f"plab: error: {runs['a']} and {runs['c']} are not comparable: they differ in evaluation.folds (3 vs 4), "
        "so fold k holds other examples; a paired difference needs the same test sets"]


def test_a_refused_figure_prints_no_table(runs, tmp_path):
    """--figure onto a file plab did not write: one error line, status 1, no table before it."""
    mine = tmp_path / "mine.png"
    mine.write_text("my notes")
    r = invoke("compare", runs["a"], runs["b"], "--figure", mine)
    assert r.exit_code == 1
    assert r.output.splitlines() == [f"plab: error: {mine} was not written by plab, and plab never overwrites a file "
                                     "it did not write: move it away, or name another file with --figure"]
    assert mine.read_text() == "my notes"


def test_a_folder_that_is_no_run_is_refused_before_anything_is_printed(runs, tmp_path):
    r = invoke("compare", runs["a"], tmp_path)
    assert r.exit_code == 2
    (line,) = r.output.splitlines()
    assert line.startswith(f"plab: error: {tmp_path}: no results.csv and no paper tables")


def test_paired_needs_two_columns(runs):
    r = invoke("compare", runs["a"], runs["b"], runs["p2"], "--paired")
    assert r.exit_code == 2 and "a paired comparison takes two runs" in r.output


# ----------------------------------------------------------------------------- the views


def test_labels_are_the_shortest_that_tell_runs_apart(tmp_path):
    assert run_labels(["x/a", "y/b"], ["one", "two"]) == ["one", "two"]
    assert run_labels([tmp_path / "r/small/tau-0", tmp_path / "r/small/tau-1"], ["small", "small"]) == ["small (tau-0)", "small (tau-1)"]
    assert run_labels([tmp_path / "x/same", tmp_path / "y/same"], ["s", "s"]) == ["s (x/same)", "s (y/same)"]


def test_diff_shows_only_the_settings_and_rows_that_differ(runs):
    r = invoke("compare", runs["a"], runs["b"], "--diff", "--figure", runs["tmp"] / "cmp.png")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "settings that differ"
    settings = lines[1:lines.index("")]
    assert [ln.split()[0] for ln in settings[1:]] == ["algorithm.tau"]
    assert settings[0].split() == ["a", "b"] and settings[1].split() == ["algorithm.tau", "0", "0.5"]
    table = lines[lines.index("") + 2:]
    assert not any(ln.startswith(("epoch (last)", "runs (folds")) for ln in table)   # the same in both
    assert any(ln.startswith("test error % vote") for ln in table)


def test_a_sweep_is_a_row_per_grid_point_with_short_headers_and_csv_numbers(tmp_path):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(BASE.format(name="s", tau=0, perms=1, folds=3))
    r = invoke("run", cfg, "-m", "algorithm.tau=0,0.25,0.5,1", "--out", tmp_path / "s", "-q")
    assert r.exit_code == 0, r.output
    r = invoke("compare", tmp_path / "s", "--figure", tmp_path / "c.png")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[1].split() == ["T", "n", "runs", "vote", "last", "mistakes", "SVs"]
    assert [ln.split()[0] for ln in lines[2:6]] == ["tau=0", "tau=0.25", "tau=0.5", "tau=1"]
    assert max(len(ln) for ln in lines[1:6]) < 100
    r = invoke("compare", tmp_path / "s", "--csv")
    got = pd.read_csv(io.StringIO(r.output))
    assert list(got["run"]) == ["tau=0", "tau=0.25", "tau=0.5", "tau=1"]
    df = pd.read_csv(tmp_path / "s" / "results.csv", dtype={"class": str})
    v = df[(df["grid_point"] == 2) & (df["class"] == "all") & (df["metric"] == "test_error_pct")
           & (df["rule"] == "vote")]["value"]
    assert got.loc[2, "vote_mean"] == pytest.approx(v.mean(), rel=1e-5)
    assert got.loc[2, "vote_std"] == pytest.approx(v.std(), rel=1e-5)


def test_grid_points_of_one_run_pair_unless_the_grid_changes_the_folds(runs):
    tmp = runs["tmp"]
    cfg = tmp / "g.yaml"
    cfg.write_text(BASE.format(name="g", tau=0, perms=1, folds=3))
    assert invoke("run", cfg, "-m", "algorithm.tau=0,0.5", "--out", tmp / "g", "-q").exit_code == 0
    r = invoke("compare", tmp / "g", "--paired", "--csv")
    assert r.exit_code == 0, r.output
    got = pd.read_csv(io.StringIO(r.output)).set_index("rule")
    # the grid point tau=0 is run a's setting and tau=0.5 run b's: the same pairs, the same difference
    a, b = fold_errors(runs["a"], "vote"), fold_errors(runs["b"], "vote")
    assert got.loc["vote", "n"] == 3
    assert got.loc["vote", "A - B"] == pytest.approx(statistics.mean([x - y for x, y in zip(a, b)]), abs=1e-4)
    assert invoke("run", cfg, "-m", "evaluation.fold_seed=0,1", "--out", tmp / "fs", "-q").exit_code == 0
    r = invoke("compare", tmp / "fs", "--paired")
    assert r.exit_code == 2 and r.output.strip() == (
        f"plab: error: fold_seed=0 and fold_seed=1 of {tmp / 'fs'} are not comparable: their grid points differ in "
        "evaluation.fold_seed (0 vs 1); a paired difference needs the same test sets")
