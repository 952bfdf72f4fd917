"""The reproduction driver's time estimates (perceptron_lab.reproduce)."""

import json

import pytest

from perceptron_lab.reproduce import CORE, SETS, read_log, record, recorded_seconds, time_left


def test_recorded_seconds_keeps_only_configs_computed_from_scratch():
    configs = {
        "a.yaml": {"wall_seconds": 120.0, "ran": 10, "reused": 0},
        "b.yaml": {"wall_seconds": 3.0, "ran": 0, "reused": 10},   # resumed: not its cost
        "c.yaml": {"wall_seconds": 50.0, "ran": 4, "reused": 6},   # partly resumed
    }
    assert recorded_seconds(configs) == {"a.yaml": 120.0}


def test_time_left_sums_the_remaining_recorded_times():
    previous = {"a.yaml": 120.0, "b.yaml": 600.0, "c.yaml": 30.0}
    msg = time_left(["b.yaml", "c.yaml"], previous, elapsed=125.0)
    assert "elapsed 2 min" in msg
    assert "about 10 min left" in msg  # 630 s
    assert "without a recorded time" not in msg
    msg = time_left(["c.yaml", "new.yaml"], previous, elapsed=5.0)
    assert "about 30 s left + 1 config(s) without a recorded time" in msg
    assert time_left(["a.yaml"], {}, elapsed=1.0) == ""
    assert "no recorded time for the 1 config(s) left" in time_left(["new.yaml"], previous, elapsed=1.0)


def test_read_log_tolerates_a_missing_or_broken_log(tmp_path):
    assert read_log(tmp_path / "none.json") == {}
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert read_log(bad) == {}
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"configs": {"a.yaml": {"wall_seconds": 1.5, "ran": 1, "reused": 0}}}))
    assert recorded_seconds(read_log(good)["configs"]) == {"a.yaml": 1.5}


def test_every_config_of_the_sets_exists_and_the_full_set_extends_the_core():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    assert SETS["full"][: len(CORE)] == CORE
    missing = [c for c in SETS["full"] if not (root / c).is_file()]
    assert not missing


def test_record_keeps_the_invocation_that_computed_a_config():
    times = {"a.yaml": {"wall_seconds": 600.0, "ran": 10, "reused": 0, "from_earlier_invocation": True}}
    record(times, "a.yaml", ran=0, reused=10, wall=2.0, jobs=2, run_info={})   # resumed whole: keep
    assert times["a.yaml"]["wall_seconds"] == 600.0
    record(times, "a.yaml", ran=10, reused=0, wall=550.0, jobs=2, run_info={"train_seconds_total": 9.0})
    assert times["a.yaml"]["wall_seconds"] == 550.0 and "from_earlier_invocation" not in times["a.yaml"]
    assert times["a.yaml"]["train_seconds_total"] == 9.0
    record(times, "b.yaml", ran=0, reused=4, wall=1.0, jobs=1, run_info={})    # no earlier entry
    assert recorded_seconds(times) == {"a.yaml": 550.0}


def test_main_writes_the_finished_log_before_the_report_and_keeps_figure_times(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import perceptron_lab.reproduce as R

    (tmp_path / "results").mkdir()
    log = tmp_path / "results" / "reproduce.json"
    log.write_text(json.dumps({"configs": {"old.yaml": {"wall_seconds": 9.0, "ran": 1, "reused": 0}},
                               "figures": {"gentile2001_figure3-5": {"wall_seconds": 64.0}}}))
    monkeypatch.setattr(R, "ROOT", tmp_path)
    monkeypatch.setattr(R, "load_config", lambda path: path)
    monkeypatch.setattr(R, "run_experiment", lambda cfg, **kw: SimpleNamespace(
        ran=2, skipped=0, run_info={"train_seconds_total": 1.0, "eval_seconds_total": 0.5}))
    seen = {}

    def fake_report(paths, out):
        seen.update(json.loads(log.read_text()))
        return tmp_path / "report.md", tmp_path / "report.html"

    monkeypatch.setattr(R, "write_report", fake_report)
    monkeypatch.setattr(R, "collect", lambda paths: None)
    monkeypatch.setattr(R, "summary_lines", lambda rep: [])
    R.main(["new.yaml", "--jobs", "2"])
    assert seen["finished"]                                   # the report saw a finished log
    assert seen["figures"] == {"gentile2001_figure3-5": {"wall_seconds": 64.0}}
    assert seen["configs"]["old.yaml"]["from_earlier_invocation"] is True
    assert seen["configs"]["new.yaml"]["ran"] == 2 and seen["configs"]["new.yaml"]["jobs"] == 2


def test_each_run_reports_its_own_peak_memory_not_an_earlier_runs():
    import os

    import numpy as np

    from perceptron_lab.units import peak_rss_mb, reset_peak_rss

    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("the peak is reset on Linux only")
    big = np.ones(300_000_000 // 8)  # 300 MB resident, then freed
    before = peak_rss_mb()
    del big
    reset_peak_rss()
    assert peak_rss_mb() < before - 200
