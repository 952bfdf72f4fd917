"""Smoke tests of ``python -m benchmarks --quick`` (MNIST subsets of a few hundred examples).

They check that the cases run end to end and write their CSV files and the summary; they make no
assertion about speed. Peers that are not installed (River) are reported, not required. MNIST comes
from the ``data_dir`` fixture (skipped when the real datasets are not on this machine): the MNIST
loader accepts only complete files, so there is no tiny stand-in.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks import cases, common, run

HAS_RIVER = importlib.util.find_spec("river") is not None


def _run(tmp_path, data, cases):
    out = tmp_path / "bench"
    run.main(["--quick", "--data-dir", str(data), "--out", str(out), "--cases", cases])
    return out


def test_select_cases():
    assert [c.name for c in common.select_cases("3,linear")] == ["linear", "alma"]
    assert len(common.select_cases(None)) == len(common.CASES) - len(common.ON_REQUEST)
    assert [c.name for c in common.select_cases("nystroem")] == ["nystroem"]   # run only when named
    with pytest.raises(SystemExit):
        common.select_cases("nope")


def test_coldstart_child_counts_compilations_on_an_empty_cache_only(tmp_path):
    """Case 9's child records numba's compilations: a first fit on an empty cache compiles, the
    same fit on the cache it filled loads the compiled code and compiles nothing."""
    from benchmarks import coldstart

    cache = str(tmp_path / "numba")
    first = coldstart._spawn({"task": "BudgetPerceptron"}, cache)
    again = coldstart._spawn({"task": "BudgetPerceptron"}, cache)
    assert first["status"] == again["status"] == "ok"
    assert first["compilations"] > 0 and first["compile_cpu_s"] > 0
    assert 0 < first["compile_cpu_s"] <= first["cpu_s"]
    assert again["compilations"] == 0 and again["compile_cpu_s"] == 0
    assert first["accuracy"] == again["accuracy"] > 0.5


def test_growth_exponent():
    n = np.array([1000, 2000, 4000])
    assert cases.growth_exponent(n, 3.0 * n**2) == pytest.approx(2.0)
    assert cases.growth_exponent([1000], [1.0]) is None


def test_missing_peer_and_engine_are_reported(monkeypatch):
    monkeypatch.setattr(cases, "_river_installed", lambda: False)
    monkeypatch.setattr(cases, "_alma_available", lambda: "not importable")
    rows = cases.case_alma(common.CASE_BY_NAME["alma"], common.QUICK, None)
    assert all(r["status"].startswith("not measured") for r in rows)
    assert any("pip install" in r["status"] for r in rows if r["tool"].startswith("river"))


def test_quick_linear(tmp_path, data_dir):
    out = _run(tmp_path, data_dir, "linear")
    lin = pd.read_csv(out / "linear_perceptron.csv")
    assert (lin.status == "ok").all()
    assert {"ours", "sklearn Perceptron"} <= set(lin.tool)
    # the same algorithm in the same order: ours (last rule) and scikit-learn make the same errors
    assert lin.test_error_pct.nunique() == 1
    for col in ("cpu", "cores", "blas", "peak_rss_mb", "fit_seconds", "total_seconds"):
        assert col in lin
    text = (out / "summary.md").read_text()
    assert "## 1. Linear perceptron" in text and "Machine:" in text and "Case 1:" in text
    assert (out / "ratios.csv").exists()


@pytest.mark.slow
def test_quick_all_cases(tmp_path, data_dir):
    out = _run(tmp_path, data_dir, "all")
    for case in common.select_cases("all"):
        assert (out / f"{case.file}.csv").exists(), case.name
    alma = pd.read_csv(out / "alma2_linear.csv")
    river = alma[alma.tool.str.startswith("river")]
    assert (river.status == "ok").all() if HAS_RIVER else river.status.str.contains("not installed").all()
    scaling = pd.read_csv(out / "scaling_d4.csv")
    assert list(scaling.n_train) == list(common.QUICK.scaling_sizes)
    assert "exponent_train_seconds" in scaling
    text = (out / "summary.md").read_text()
    assert "## 6. Scaling" in text and "fraction of limit" in text


def test_quick_evaluation_case_reports_its_limit(tmp_path, data_dir):
    out = _run(tmp_path, data_dir, "evaluation")
    ev = pd.read_csv(out / "evaluation_kw_mnist.csv")
    assert (ev.status == "ok").all() and list(ev.setting) == ["exact float32 GEMM", "float64 GEMM"]
    # the same unit, the same numbers: the float32 kernel block is exact on MNIST's integer pixels
    assert ev.test_error_pct.nunique() == 1 and ev.mistakes.nunique() == 1
    assert (ev.dtype == "float64").all() and (ev.fraction_of_limit > 0).all()
    expected = 2 * ev.mistakes * ev.eval_n_test * ev.n_features / (ev.gemm_gflops * 1e9)
    assert np.allclose(ev.limit_seconds, expected, rtol=0.01, atol=1e-3)
    assert "Case 7: evaluation at" in (out / "summary.md").read_text()


def test_quick_memory_case_runs_the_headline_config_with_its_defaults(tmp_path, data_dir, monkeypatch):
    # a setting in the caller's environment must not reach the row of every default: an invalid
    # one would stop that run
    monkeypatch.setenv("PLAB_SHARED_COLUMNS_GB", "not a number")
    out = _run(tmp_path, data_dir, "memory")
    m = pd.read_csv(out / "headline_memory.csv")
    assert list(m.setting) == ["every default", "PLAB_SHARED_COLUMNS_GB=1"], m.status.tolist()
    assert (m.status == "ok").all() and m.code.str.startswith("after").all()
    assert list(m.units) == [common.QUICK.memory_run[2]] * 2 and (m.n_train == common.QUICK.memory_run[0]).all()
    # the setting trades memory for time, never the numbers
    assert m.same_results.all() and m.results_sha256.nunique() == 1
    assert (m.peak_rss_gb > 0.1).all() and (m.run_json_peak_gb > 0).all()
    text = (out / "summary.md").read_text()
    assert "## 13. Peak memory of the headline run" in text and "Case 13: the headline run" in text


def test_quick_budget_case_reports_its_limit(tmp_path, data_dir):
    out = _run(tmp_path, data_dir, "budget")
    b = pd.read_csv(out / "budget_forgetron.csv")
    assert (b.status == "ok").all() and len(b) == 1
    r = b.iloc[0]
    # the budget binds per label: no label holds more, the labels together hold at most 10 x budget
    assert r.max_support <= 1000 and r.support_examples_last <= 10 * 1000 and r.mistakes > 0
    assert r.limit_seconds == pytest.approx(r.n_train * 1000 * 2 * r.n_features / (r.gemm_gflops * 1e9), rel=0.01, abs=1e-3)
    assert "Case 8: budgeted training" in (out / "summary.md").read_text()


def test_reproduction_line_checks_the_target_only_for_one_whole_invocation(tmp_path):
    import json

    from benchmarks.summary import reproduction_lines
    from perceptron_lab.cli.reproduce import SETS

    log = tmp_path / "reproduce.json"
    assert "not measured" in reproduction_lines(log)[0]
    whole = {c: {"wall_seconds": 60.0, "ran": 1, "reused": 0} for c in SETS["core"]}
    base = {"finished": "2026-01-01T00:00:00+00:00", "set": "core", "jobs": 2, "machine": {"cpus": 2}}
    log.write_text(json.dumps(dict(base, wall_seconds=50 * 60.0, configs=whole)))
    (line,) = reproduction_lines(log)
    assert "50.0 min" in line and "target <= 55 min: met" in line
    log.write_text(json.dumps(dict(base, wall_seconds=56 * 60.0, configs=whole)))
    assert "NOT met" in reproduction_lines(log)[0]
    # one config taken from an earlier invocation: the wall time is not the whole reproduction's
    first = SETS["core"][0]
    part = dict(whole, **{first: dict(whole[first], from_earlier_invocation=True)})
    log.write_text(json.dumps(dict(base, wall_seconds=10 * 60.0, configs=part)))
    (line,) = reproduction_lines(log)
    assert "not measured in one invocation" in line and "1 of" in line and "not checked" in line
    # a config that resumed from parts written before
    part = dict(whole, **{first: dict(whole[first], reused=3)})
    log.write_text(json.dumps(dict(base, wall_seconds=10 * 60.0, configs=part)))
    assert "not checked" in reproduction_lines(log)[0]


def test_reproduction_work_line_only_from_a_log_of_its_own_totals(tmp_path):
    """The work line sums each config's training and evaluation against the cores' time, only
    when the log says those totals are its invocation's own (older logs could carry an earlier
    invocation's), and only when every config has them."""
    import json

    from benchmarks.summary import reproduction_lines
    from perceptron_lab.cli.reproduce import SETS

    core = SETS["core"]
    # 60 s of training and 30 s of evaluation per config, the first config 10 times as much
    whole = {c: {"wall_seconds": 60.0, "ran": 1, "reused": 0, "train_seconds_total": 60.0 * (10 if i == 0 else 1),
                 "eval_seconds_total": 30.0 * (10 if i == 0 else 1)} for i, c in enumerate(core)}
    base = {"finished": "2026-01-01T00:00:00+00:00", "set": "core", "jobs": 2, "machine": {"cpus": 2},
            "wall_seconds": 3000.0}
    log = tmp_path / "reproduce.json"
    log.write_text(json.dumps(dict(base, configs=whole)))
    assert len(reproduction_lines(log)) == 1     # no own_totals: the totals may be an earlier run's
    log.write_text(json.dumps(dict(base, configs=whole, own_totals=True)))
    _, work = reproduction_lines(log)
    minutes = (900.0 + 90.0 * (len(core) - 1)) / 60
    assert f"took {minutes:.1f} of the 100.0 minutes its 2 worker processes had" in work
    assert f"({100 * minutes / 100:.0f} %;" in work
    first = Path(core[0])
    assert f"The most (minutes of work): `{first.parent.name}/{first.stem}` 15.0, " in work
    # a config without totals: no sum that leaves it out
    some = dict(whole, **{core[1]: {"wall_seconds": 60.0, "ran": 1, "reused": 0}})
    log.write_text(json.dumps(dict(base, configs=some, own_totals=True)))
    assert len(reproduction_lines(log)) == 1


def test_warm_quickstart_row_is_the_median_run_and_a_failure_is_not_hidden():
    """Case 10's warm quickstart reports the run of median wall time with every run's wall time;
    one failed run makes the row a failure instead of being left out of the median."""
    from benchmarks import coldstart

    runs = [{"wall_s": w, "cpu_s": 10 * w, "status": "ok"} for w in (2.4, 1.9, 3.1, 2.0, 2.2)]
    row = coldstart._median_row(runs)
    assert (row["wall_s"], row["cpu_s"]) == (2.2, 22.0)
    assert row["wall_runs_s"] == "2.40 1.90 3.10 2.00 2.20"
    failed = runs[:2] + [{"wall_s": 0.4, "cpu_s": 0.3, "status": "failed: boom"}]
    assert coldstart._median_row(failed)["status"] == "failed: boom"


def test_coldstart_children_keep_python_bytecode_like_a_user(tmp_path, monkeypatch):
    """The children do not inherit PYTHONDONTWRITEBYTECODE: a warm run reads the bytecode the
    first run wrote, as on a user's machine."""
    import subprocess

    from benchmarks import coldstart

    seen = {}

    class Stop(Exception):
        pass

    def popen(args, env=None, **kw):
        seen.update(env)
        raise Stop

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setattr(subprocess, "Popen", popen)
    with pytest.raises(Stop):
        coldstart._spawn({"task": "BudgetPerceptron"}, str(tmp_path))
    assert "PYTHONDONTWRITEBYTECODE" not in seen and seen["NUMBA_CACHE_DIR"] == str(tmp_path)


def test_versions_take_turns_run_by_run_and_rows_come_grouped(tmp_path, monkeypatch):
    """Case 10 with a baseline: the versions alternate, task by task and warm run by warm run, so
    that a drift of the machine's speed is spread over both; the rows are grouped by version."""
    from benchmarks import coldstart

    calls = []

    def spawn(spec, cache):
        calls.append((spec.get("src"), spec["task"], cache))
        return {"wall_s": float(len(calls)), "cpu_s": 1.0, "status": "ok"}

    monkeypatch.setattr(coldstart, "_spawn", spawn)
    rows = coldstart.measure([("before", "/old"), ("after", None)], tmp_path)
    srcs = [c[0] if c[1] != "reference" else "ref" for c in calls]
    n_warm = coldstart.WARM_REPEATS
    assert srcs[:2] == ["/old", None]                        # the two first runs, cache empty
    assert srcs[2:2 + 3 * n_warm] == ["/old", None, "ref"] * n_warm   # warm runs in turn, then the reference
    assert srcs[2 + 3 * n_warm:] == ["/old", None] * len(coldstart.ESTIMATORS)
    # each version's warm runs share the cache its first run filled; no two versions share one
    quick = [c for c in calls if c[1] == "quickstart"]
    cache = {src: {c[2] for c in quick if c[0] == src} for src in ("/old", None)}
    assert all(len(v) == 1 for v in cache.values()) and cache["/old"] != cache[None]
    assert [r["code"] for r in rows] == ["before"] * (2 + len(coldstart.ESTIMATORS)) + \
        ["after"] * (2 + len(coldstart.ESTIMATORS)) + ["reference"]
    warm = [r for r in rows if r["code"] != "reference" and "warm" in r["numba_cache"]]
    # the median of the "before" runs' wall times (calls 3, 6, 9, ...), over the reference's (5, 8, ...)
    assert warm[0]["wall_s"] == sorted(float(3 + 3 * i) for i in range(n_warm))[n_warm // 2]
    ref = rows[-1]["wall_s"]
    assert ref == sorted(float(5 + 3 * i) for i in range(n_warm))[n_warm // 2]
    assert warm[0]["wall_over_reference"] == round(warm[0]["wall_s"] / ref, 3)
