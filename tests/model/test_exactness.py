"""Which runs are exact by construction (the same bits on any machine), as run.json reports, and
the spread comparison behind the others."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perceptron_lab.model import exactness as ex
from perceptron_lab.cli import spread
from perceptron_lab.config.load import load_config, with_overrides
from perceptron_lab.run.experiment import run_experiment

ROOT = Path(__file__).resolve().parents[2]

EXACT = load_config(ROOT / "configs/golden/kw2007_mnist_exact.yaml")


def _ints(rng, n=50, d=20, hi=256):
    return rng.integers(0, hi, size=(n, d)).astype(np.float64)


@pytest.mark.parametrize("change", [
    {},
    {"algorithm.eta": 0.1},
    {"kernel.type": "gaussian", "kernel.sigma": 3.0},
    {"kernel.type": "poly", "kernel.degree": 2},
    {"training.dtype": "float32"},
    {"dataset.preprocess": "standardize"},
    {"prediction.rules": ["last", "avg_norm"]},
    {"evaluation.grid": {"algorithm.eta": [1, 0.5]}},
    {"algorithm.name": "alma", "algorithm.alpha": 1.0, "algorithm.C": 1.0, "evaluation.grid": {},
     **{f"algorithm.{k}": None for k in ("eta", "theta_init", "tau", "lambda")}},
])
def test_every_setting_of_the_ordered_engine_is_exact(change):
    """Non-integer features, learning rates, kernels, float32, norms and ALMA_2: every sum is added
    in a fixed order (engine.ordered), so none of them makes a run depend on the machine."""
    cfg = with_overrides(EXACT, change)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 7))
    assert ex.construction_blockers(cfg, X, X) == []
    e = ex.exactness(cfg, X)
    assert e["exact_by_construction"] is True and "fixed order" in e["reason"]


def test_alma_with_p_other_than_2_is_named():
    cfg = with_overrides(EXACT, {"algorithm.name": "alma", "algorithm.alpha": 1.0, "algorithm.C": 1.0,
                                 "algorithm.p": 4, "evaluation.grid": {},
                                 **{f"algorithm.{k}": None for k in ("eta", "theta_init", "tau", "lambda")}})
    (why,) = ex.construction_blockers(cfg)
    assert "p = 4" in why and "pow" in why
    assert ex.exactness(cfg, None)["exact_by_construction"] is False
    grid = with_overrides(cfg, {"algorithm.p": 2, "evaluation.grid": {"algorithm.p": [2, 6]}})
    assert "p = 6" in ex.construction_blockers(grid)[0]


def test_run_json_says_whether_the_run_is_exact(tmp_path):
    cfg = with_overrides(load_config(ROOT / "configs/golden/kw2007_sonar.yaml"),
                         {"training.epochs": 1, "training.checkpoints": [1], "evaluation.grid": {}})
    res = run_experiment(cfg, out_dir=tmp_path / "run", progress=False)
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["exactness"]["exact_by_construction"] is True
    assert "fixed order" in info["exactness"]["reason"]
    assert res.run_info["exactness"] == info["exactness"]
    assert ex.exactness_note(info).startswith("exact by construction")


def test_exactness_note_states_the_measured_spread():
    info = {"exactness": {"exact_by_construction": False, "reason": "r",
                          "measured_spread": {"variants": ["avx2", "host"], "rows_compared": 150,
                                              "rows_differing": 14, "max_abs_diff_test_error_pct": 1.66667,
                                              "max_abs_diff_counts": 0.0}}}
    note = ex.exactness_note(info)
    assert "14 of 150 rows" in note and "1.66667 points" in note and "2 CPU/BLAS variants" in note
    assert ex.exactness_note({}) == ""
    assert ex.exactness_note({"exactness": {"exact_by_construction": True, "reason": "x"}}).startswith("exact")


def _results(values, metrics):
    return pd.DataFrame({"dataset": "d", "kernel": "linear", "grid_point": range(len(values)),
                         "fold": range(len(values)), "epoch": 1, "rule": "last", "class": "all",
                         "metric": metrics, "value": values})


def test_compare_results_counts_rows_and_the_largest_moves(tmp_path):
    old = _results([10.0, 20.0, 100.0, 50.0], ["test_error_pct", "test_error_pct", "mistakes", "support_vectors"])
    new = old.copy()
    new["value"] = [10.0, 21.5, 97.0, 50.0]
    new["grid_point"] = [7, 8, 9, 10]          # numbering of a subset grid: not part of the key
    old.to_csv(tmp_path / "old.csv", index=False)
    new.iloc[1:].to_csv(tmp_path / "new.csv", index=False)     # a subset run: three rows
    out = spread.compare_results(tmp_path / "old.csv", tmp_path / "new.csv")
    assert out["rows_compared"] == 3 and out["rows_differing"] == 2 and out["rows_missing"] == 0
    assert out["max_abs_diff_test_error_pct"] == pytest.approx(1.5)
    assert out["max_abs_diff_counts"] == pytest.approx(3.0)
    assert out["max_rel_diff_counts"] == pytest.approx(0.03)


def test_compare_search_skips_searches_over_fewer_candidates(tmp_path):
    cols = dict(noise=[0, 0, 0.1], search=["nothing", "tau", "nothing"], rule="last", normalized="false",
                epoch=100, accuracy_pct=0, sd_pct=0, ci_pct=0, n_runs=10, grid_point=0, chosen="tau=0")
    old = pd.DataFrame({**cols, "error_pct": [5.0, 4.0, 9.0], "n_candidates": [1, 7, 1]})
    new = pd.DataFrame({**cols, "error_pct": [5.5, 9.9, 9.0], "n_candidates": [1, 1, 1]})
    old.to_csv(tmp_path / "old.csv", index=False)
    new.to_csv(tmp_path / "new.csv", index=False)
    out = spread.compare_search(tmp_path / "old.csv", tmp_path / "new.csv")
    assert out["rows_compared"] == 2 and out["rows_differing"] == 1
    assert out["max_abs_diff_test_error_pct"] == pytest.approx(0.5)


def test_variants_cover_avx2_the_baseline_the_host_every_blas_kernel_and_two_threads():
    assert {"avx2", "host", "generic", "avx2+threads2", "host+threads2"} <= set(spread.VARIANTS)
    # numba takes the host's features whatever the CPU name unless NUMBA_CPU_FEATURES is set: empty,
    # the named CPU's own (haswell alone would compile AVX-512 code on an AVX-512 host)
    assert spread.VARIANTS["avx2"]["NUMBA_CPU_NAME"] == "haswell" and spread.VARIANTS["avx2"]["NUMBA_CPU_FEATURES"] == ""
    assert spread.VARIANTS["generic"]["NUMBA_CPU_NAME"] == "generic" and "FMA" in spread.VARIANTS["generic"]["GLIBC_TUNABLES"]
    env = spread.variant_env("host")
    assert "OPENBLAS_CORETYPE" not in env and "NUMBA_CPU_NAME" not in env and env["OPENBLAS_NUM_THREADS"] == "1"
    assert spread.variant_env("avx2+blas=Prescott")["OPENBLAS_CORETYPE"] == "Prescott"


def test_the_report_states_each_runs_exactness():
    from types import SimpleNamespace

    from perceptron_lab.report.tables import run_lines

    info = {"name": "x", "exactness": {"exact_by_construction": True, "reason": "integers"}}
    (line,) = run_lines(SimpleNamespace(runs=[("results/x", info)]))
    assert line.endswith("exact by construction (the same bits on any machine and thread count): integers")
    (line,) = run_lines(SimpleNamespace(runs=[("results/x", {"name": "x"})]))
    assert "exact" not in line


def test_compare_results_keys_by_grid_point_when_nothing_else_tells_points_apart(tmp_path):
    old = _results([10.0, 20.0], ["test_error_pct"] * 2)
    old["fold"] = 0                              # two grid points, same other columns
    new = old.copy()
    new["value"] = [10.0, 20.5]
    old.to_csv(tmp_path / "old.csv", index=False)
    new.to_csv(tmp_path / "new.csv", index=False)
    out = spread.compare_results(tmp_path / "old.csv", tmp_path / "new.csv")
    assert out["rows_compared"] == 2 and out["rows_differing"] == 1
    assert out["max_abs_diff_test_error_pct"] == pytest.approx(0.5)


def test_compare_nested_keeps_the_single_candidate_rows_of_a_subset_run(tmp_path):
    cols = dict(seed=[1, 1, 2], search=["nothing", "tau", "nothing"], rule="last", normalized="false", epoch=100,
                accuracy_pct=0, sd_pct=0, ci_pct=0, n_folds=10, choices="tau=0 x10")
    old = pd.DataFrame({**cols, "error_pct": [15.0, 12.0, 9.0]})
    new = pd.DataFrame({**cols, "error_pct": [15.5, 15.0, 9.0]})
    old.to_csv(tmp_path / "old.csv", index=False)
    new.to_csv(tmp_path / "new.csv", index=False)
    sub = spread.compare_nested(tmp_path / "old.csv", tmp_path / "new.csv", whole_grid=False)
    assert sub["rows_compared"] == 2 and sub["rows_differing"] == 1
    assert sub["max_abs_diff_test_error_pct"] == pytest.approx(0.5)
    whole = spread.compare_nested(tmp_path / "old.csv", tmp_path / "new.csv", whole_grid=True)
    assert whole["rows_compared"] == 3 and whole["max_abs_diff_test_error_pct"] == pytest.approx(3.0)


def test_configs_exact_by_construction_never_moved_in_a_measurement():
    """The committed measurements agree with the rule: every committed config but ALMA with p != 2 is
    exact by construction, no machine variant moved a number of one, and the committed runs read
    their exactness back."""
    table = pd.read_csv(ex.EXACTNESS_TABLE, keep_default_na=False)
    exact = set(table.loc[table["exact_by_construction"].astype(str) == "True", "config"])
    others = set(table["config"]) - exact
    assert {"configs/kw2007/table3_mnist.yaml", "configs/kw2007/table4.yaml", "configs/golden/kw2007_sonar.yaml"} <= exact
    assert others and all("ALMA with p" in r for r in table.loc[table["config"].isin(others), "reason"])
    summary = spread.read_spread()
    machine = summary[~summary["variant"].astype(str).str.contains("dtype")]
    measured_exact = machine[machine["config"].isin(exact)]
    assert len(measured_exact)
    # no exact config moved under any variant: Tables 2, 4 and 6 (artificial), which moved between
    # CPUs on the engine before the fixed-order sums, were measured again on it (host, avx2, generic,
    # two threads)
    moved = set(measured_exact.loc[measured_exact["rows_differing"].astype(float) > 0, "config"])
    assert not moved, moved
    assert ex._rel("package:budget/adult.yaml") == "configs/budget/adult.yaml"
    assert ex.exactness_note({"config_file": "configs/kw2007/table4.yaml"}).startswith("exact by construction")


def test_spread_finds_each_committed_run_where_reproduce_writes_it():
    # the paper configs name no output folder (plab run writes to runs/<name>); the measurement reads
    # the committed run where make reproduce writes it, and refuses a config with no committed run
    # instead of printing an empty comparison
    from perceptron_lab.cli import spread

    assert spread.committed_dir("configs/kw2007/table2.yaml") == spread.ROOT / "results" / "kw2007" / "table2"
    assert spread.committed_dir("configs/mnist_d4.yaml") is None
    committed = spread.committed_configs()
    assert "configs/kw2007/table4.yaml" in committed and "configs/golden/kw2007_sonar.yaml" in committed
    with pytest.raises(SystemExit, match="no committed run"):
        spread.measure("configs/mnist_d4.yaml", ["avx2"], [])
