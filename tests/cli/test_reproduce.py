"""The reproduction driver (perceptron_lab.cli.reproduce): its time estimates, its log, and the configs
run side by side in one pool of workers."""

import json

import pytest

from perceptron_lab.errors import DamagedFileError
from perceptron_lab.cli.reproduce import CORE, SETS, read_log, record, recorded_seconds, time_left


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
    with pytest.raises(DamagedFileError, match="bad.json is damaged .*move it away"):
        read_log(bad)   # shown, not taken for an empty log (which the next write would replace)
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"configs": {"a.yaml": {"wall_seconds": 1.5, "ran": 1, "reused": 0}}}))
    assert recorded_seconds(read_log(good)["configs"]) == {"a.yaml": 1.5}


def test_every_config_of_the_sets_exists_and_the_full_set_extends_the_core():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    assert SETS["full"][: len(CORE)] == CORE
    missing = [c for c in SETS["full"] if not (root / c).is_file()]
    assert not missing


def test_record_keeps_the_invocation_that_computed_a_config():
    times = {"a.yaml": {"wall_seconds": 600.0, "ran": 10, "reused": 0, "from_earlier_invocation": True}}
    record(times, "a.yaml", ran=0, reused=10, wall=2.0, jobs=2, totals={})   # resumed whole: keep
    assert times["a.yaml"]["wall_seconds"] == 600.0
    record(times, "a.yaml", ran=10, reused=0, wall=550.0, jobs=2, totals={"train_seconds_total": 9.0})
    assert times["a.yaml"]["wall_seconds"] == 550.0 and "from_earlier_invocation" not in times["a.yaml"]
    assert times["a.yaml"]["train_seconds_total"] == 9.0
    record(times, "b.yaml", ran=0, reused=4, wall=1.0, jobs=1, totals={})    # no earlier entry
    assert recorded_seconds(times) == {"a.yaml": 550.0}


def test_main_writes_the_finished_log_before_the_report_and_keeps_figure_times(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import perceptron_lab.cli.reproduce as R

    (tmp_path / "results").mkdir()
    log = tmp_path / "results" / "reproduce.json"
    log.write_text(json.dumps({"configs": {"old.yaml": {"wall_seconds": 9.0, "ran": 1, "reused": 0}},
                               "figures": {"gentile2001_figure3-5": {"wall_seconds": 64.0}}}))
    monkeypatch.setattr(R, "ROOT", tmp_path)
    monkeypatch.setattr(R, "reproduction_config", lambda path: path)
    monkeypatch.setattr(R, "verify_inputs", lambda cfg, data_dir, note=None: True)
    monkeypatch.setattr(R, "outdated", lambda cfgs: [])
    monkeypatch.setattr(R, "run_experiment", lambda cfg, **kw: SimpleNamespace(
        ran=2, skipped=0, invocation={"train_seconds_total": 1.0, "eval_seconds_total": 0.5}))
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


def test_the_budget_set_also_reruns_the_dogma_study_before_the_report(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import perceptron_lab.cli.reproduce as R

    (tmp_path / "results").mkdir()
    order = []
    monkeypatch.setattr(R, "ROOT", tmp_path)
    monkeypatch.setattr(R, "reproduction_config", lambda path: path)
    monkeypatch.setattr(R, "verify_inputs", lambda cfg, data_dir, note=None: True)
    monkeypatch.setattr(R, "outdated", lambda cfgs: [])
    monkeypatch.setattr(R, "run_experiment", lambda cfg, **kw: SimpleNamespace(
        ran=1, skipped=0, invocation={"train_seconds_total": 1.0, "eval_seconds_total": 0.5}))
    monkeypatch.setattr(R.budget_study, "write_study", lambda results, data_dir: order.append("budget") or [])
    monkeypatch.setattr(R.dogma_study, "write", lambda results, log=print: order.append("dogma") or [])
    monkeypatch.setattr(R, "write_report", lambda paths, out: order.append("report") or (tmp_path / "r.md", None))
    monkeypatch.setattr(R, "collect", lambda paths: None)
    monkeypatch.setattr(R, "summary_lines", lambda rep: [])
    R.main([R.BUDGET[0]])
    assert order == ["budget", "dogma", "report"]
    assert "dogma_study" in json.loads((tmp_path / "results" / "reproduce.json").read_text())["figures"]


def test_each_run_reports_its_own_peak_memory_not_an_earlier_runs():
    import os

    import numpy as np

    from perceptron_lab.run.runtime import peak_rss_mb, reset_peak_rss

    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("the peak is reset on Linux only")
    big = np.ones(300_000_000 // 8)  # 300 MB resident, then freed
    before = peak_rss_mb()
    del big
    reset_peak_rss()
    assert peak_rss_mb() < before - 200


# ----------------------------------------------------------------------------- side by side


def test_schedule_starts_untimed_configs_then_the_longest_recorded_work():
    from perceptron_lab.cli.reproduce import schedule, work_seconds

    earlier = {"short.yaml": {"train_seconds_total": 5.0, "eval_seconds_total": 1.0},
               "long.yaml": {"train_seconds_total": 50.0, "eval_seconds_total": 400.0},
               "walled.yaml": {"wall_seconds": 100.0, "jobs": 2}}          # an older log: no split
    assert work_seconds(earlier["walled.yaml"]) == 200.0
    assert work_seconds({}) is None
    order = schedule(["short.yaml", "new.yaml", "walled.yaml", "long.yaml"], earlier)
    assert order == ["new.yaml", "long.yaml", "walled.yaml", "short.yaml"]


class _FakePool:
    made: list = []

    def __init__(self, jobs):
        self.jobs, self.terminated = jobs, False
        _FakePool.made.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def terminate(self):
        self.terminated = True

    def submit(self, fn, *args):
        from concurrent.futures import Future

        fut = Future()
        try:
            fut.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - as a worker would hand it back
            fut.set_exception(exc)
        return fut


def _side_by_side(tmp_path, monkeypatch, fake_run, configs, jobs=2, papers=()):
    """``reproduce.main`` over ``configs`` (path -> output folder) with ``fake_run`` in place of the
    runs and a fake worker pool; returns the log it wrote."""
    from types import SimpleNamespace

    import perceptron_lab.run.executors as E
    import perceptron_lab.cli.reproduce as R

    (tmp_path / "results").mkdir()
    monkeypatch.setattr(R, "ROOT", tmp_path)
    monkeypatch.setattr(R, "reproduction_config", lambda path: SimpleNamespace(path=path, run_dir=str(tmp_path / configs[path])))
    monkeypatch.setattr(R, "verify_inputs", lambda cfg, data_dir, note=None: True)
    monkeypatch.setattr(R, "outdated", lambda cfgs: [])
    monkeypatch.setattr(R, "run_experiment", fake_run)
    monkeypatch.setattr(R, "write_report", lambda paths, out: (tmp_path / "r.md", tmp_path / "r.html"))
    monkeypatch.setattr(R, "collect", lambda paths: None)
    monkeypatch.setattr(R, "summary_lines", lambda rep: [])
    monkeypatch.setattr(R.plugins, "papers", lambda: list(papers))
    monkeypatch.setattr(R.plugins, "get", lambda name: {p.name: p for p in papers}[name])
    monkeypatch.setattr(E, "WorkerPool", _FakePool)
    _FakePool.made.clear()
    R.cli([*configs, "--jobs", str(jobs)])
    return json.loads((tmp_path / "results" / "reproduce.json").read_text())


def test_configs_run_side_by_side_in_one_pool_never_two_on_one_folder(tmp_path, monkeypatch):
    import threading
    import time
    from types import SimpleNamespace

    configs = {f"c{i}.yaml": f"out{i}" for i in range(6)}
    configs["twin.yaml"] = "out0"            # writes the same folder as c0.yaml
    lock, running, seen = threading.Lock(), [], {"most": 0, "pools": set(), "overlap": False}

    def fake_run(cfg, **kw):
        with lock:
            if cfg.run_dir in [c.run_dir for c in running]:
                seen["overlap"] = True
            running.append(cfg)
            seen["most"] = max(seen["most"], len(running))
            seen["pools"].add(id(kw["pool"]))
        time.sleep(0.15)
        with lock:
            running.remove(cfg)
        return SimpleNamespace(ran=3, skipped=0, invocation={"train_seconds_total": 1.0, "eval_seconds_total": 2.0})

    log = _side_by_side(tmp_path, monkeypatch, fake_run, configs, jobs=2)
    assert set(log["configs"]) == set(configs)
    assert all(t["side_by_side"] and t["ran"] == 3 for t in log["configs"].values())
    assert log["side_by_side"] is True and log["finished"]
    assert seen["most"] == 3                     # jobs + 1 configs at once, not more
    assert not seen["overlap"]                   # a folder is written by one config at a time
    assert len(_FakePool.made) == 1 and seen["pools"] == {id(_FakePool.made[0])}


def test_figures_that_read_no_results_are_drawn_in_the_pool_beside_the_configs(tmp_path, monkeypatch, capsys):
    from types import SimpleNamespace

    events = []

    def fake_run(cfg, **kw):
        events.append(("config", cfg.path))
        return SimpleNamespace(ran=1, skipped=0, invocation={})

    def paper(name, reads):
        def figures(results_dir, data_dir, progress=True):
            events.append(("figures", name, progress))
            return [f"{results_dir}/{name}/{name}_figure1.png"]
        return SimpleNamespace(name=name, short=name.upper(), combine=None, reproduce_figures=figures,
                               figures_read_runs=reads)

    papers = [paper("own", False), paper("fromruns", True), paper("absent", False)]
    log = _side_by_side(tmp_path, monkeypatch, fake_run, {"configs/own/a.yaml": "a", "configs/fromruns/b.yaml": "b"},
                        papers=papers)
    # the figures of their own runs went to the pool first (no bar of their own), the others after
    # every config; a paper without configs in the set draws none
    assert events[0] == ("figures", "own", False)
    assert events[-1] == ("figures", "fromruns", True)
    assert sorted(e[1] for e in events[1:-1]) == ["configs/fromruns/b.yaml", "configs/own/a.yaml"]
    assert log["figures"]["own_figures"]["side_by_side"] is True
    assert "side_by_side" not in log["figures"]["fromruns_figures"]
    out = capsys.readouterr().out
    assert "OWN: figures (drawn beside the configs)\n  results/own/own_figure1.png" in out


def test_a_failing_config_stops_the_side_by_side_reproduction_with_its_error_line(tmp_path, monkeypatch, capsys):
    from types import SimpleNamespace

    from perceptron_lab.errors import DatasetError

    def fake_run(cfg, **kw):
        if cfg.path == "bad.yaml":
            raise DatasetError("dataset 'x' is not available; run `plab data fetch x`")
        return SimpleNamespace(ran=1, skipped=0, invocation={})

    with pytest.raises(SystemExit) as exc:
        _side_by_side(tmp_path, monkeypatch, fake_run, {"good.yaml": "a", "bad.yaml": "b"})
    assert exc.value.code == DatasetError.exit_code
    err = capsys.readouterr().err
    assert [ln for ln in err.splitlines() if ln.startswith("plab: error:")] == [
        "plab: error: dataset 'x' is not available; run `plab data fetch x`"]
    assert "Traceback" not in err
    assert _FakePool.made[0].terminated


def test_a_worker_pool_serves_configs_from_threads_that_end_before_it(tmp_path):
    """Real workers: two configs computed from two threads, one after the other, in one pool give
    the results of runs of their own; the workers outlive the thread that first used them."""
    import threading

    from perceptron_lab.config.load import load_config
    from perceptron_lab.run.executors import WorkerPool
    from perceptron_lab.run.experiment import run_experiment

    text = """
name: {name}
dataset: {{name: sonar}}
training: {{epochs: 2}}
prediction: {{rules: [last, vote]}}
evaluation: {{mode: kfold, folds: 3, grid: {{algorithm.tau: [0, {tau}]}}}}
"""
    cfgs = []
    for name, tau in (("a", 0.5), ("b", 1.0)):
        p = tmp_path / f"{name}.yaml"
        p.write_text(text.format(name=name, tau=tau))
        cfgs.append(load_config(p))
    own = [run_experiment(c, out_dir=tmp_path / f"own-{c.name}", progress=False).out_dir / "results.csv"
           for c in cfgs]
    errors = []
    import tempfile

    from perceptron_lab.run.plan import Plan

    plans_dir = tmp_path / "tmp"
    plans_dir.mkdir()
    tasks = []
    with pytest.MonkeyPatch.context() as mp, WorkerPool(2) as pool:
        mp.setattr(tempfile, "tempdir", str(plans_dir))
        real_submit = pool._ex.submit

        def submit(fn, *args):
            tasks.append(args)
            return real_submit(fn, *args)

        mp.setattr(pool._ex, "submit", submit)
        for c in cfgs:
            def go(c=c):
                try:
                    run_experiment(c, out_dir=tmp_path / f"pool-{c.name}", progress=False, jobs=2, pool=pool)
                except BaseException as exc:  # noqa: BLE001 - reported below
                    errors.append(exc)
            t = threading.Thread(target=go)
            t.start()
            t.join()                              # the thread ends; the pool's workers must not
    assert errors == []
    # a part's task names the file the plan was pickled to, once per config, not the plan itself
    assert tasks and not any(isinstance(a, Plan) for args in tasks for a in args)
    assert len({args[0] for args in tasks if isinstance(args[0], str) and "plab-plan-" in args[0]}) == 2
    assert list(plans_dir.iterdir()) == []        # and the files are gone once the configs finish
    for c, ref in zip(cfgs, own):
        assert (tmp_path / f"pool-{c.name}" / "results.csv").read_bytes() == ref.read_bytes()


def test_the_report_states_a_side_by_side_reproduction_by_its_own_wall_time():
    from types import SimpleNamespace

    from perceptron_lab.report.tables import reproduction_lines

    configs = {f"c{i}.yaml": {"wall_seconds": 600.0, "ran": 5, "reused": 0, "jobs": 2, "side_by_side": True}
               for i in range(3)}
    log = {"wall_seconds": 900.0, "side_by_side": True, "finished": "x", "configs": configs,
           "figures": {"f": {"wall_seconds": 60.0}}, "machine": {"cpus": 2}}
    (line,) = reproduction_lines(SimpleNamespace(reproductions=[("results/reproduce.json", log)]))
    assert "3 of 3 configs computed from scratch, side by side" in line
    assert "in 15.0 min, plus 1.0 min for the figures" in line     # not the 30 min their times add to
    beside = {**log, "figures": {"f": {"wall_seconds": 60.0}, "g_figures": {"wall_seconds": 90.0, "side_by_side": True}}}
    (line,) = reproduction_lines(SimpleNamespace(reproductions=[("r.json", beside)]))
    assert "one pool of workers with g_figures, in 15.0 min, plus 1.0 min for the figures" in line
    (line,) = reproduction_lines(SimpleNamespace(reproductions=[("r.json", {**log, "side_by_side": False})]))
    assert "in 30.0 min" in line


def test_a_worker_frees_the_last_configs_columns_and_other_data_when_a_part_of_another_begins(monkeypatch):
    import perceptron_lab.run.executors as E
    import perceptron_lab.run.inputs as I
    import perceptron_lab.run.units as U
    from perceptron_lab.engine import columns

    class Q:
        def put(self, item):
            pass

    monkeypatch.setattr(E, "_WORKER", {"queue": Q()})
    monkeypatch.setattr(E, "_worker_plan", lambda path, tag: path)   # the plan itself, not its file
    monkeypatch.setattr(U, "run_part", lambda cfg, part, data_dir, unit_done=None: ("", []))
    released = []
    monkeypatch.setattr(columns, "release", lambda: released.append(1))
    part = type("P", (), {"key": "k"})()
    def config(name, dataset):   # a plan: its name, and the config of the part's point
        point = type("C", (), {"dataset": type("D", (), {"name": dataset})()})()
        return type("P", (), {"name": name, "point": lambda self, part: point})()

    a, b, c = config("a", "usps"), config("b", "mnist"), config("c", "mnist")
    monkeypatch.setattr(I, "_DATA_CACHE", {})
    E._worker_run(a, None, "t", part)
    I._DATA_CACHE[("usps", "{}")] = object()
    I._DATA_CACHE[("mnist", "{}")] = object()
    E._worker_run(a, None, "t", part)           # the same config: its data stay
    assert len(I._DATA_CACHE) == 2 and len(released) == 1
    E._worker_run(b, None, "t", part)           # another config: freed, but for the data it reads
    assert list(I._DATA_CACHE) == [("mnist", "{}")] and len(released) == 2
    E._worker_run(c, None, "t", part)
    assert list(I._DATA_CACHE) == [("mnist", "{}")] and len(released) == 3


def test_a_folder_an_earlier_version_of_its_config_wrote_is_recomputed(tmp_path):
    from perceptron_lab.cli.reproduce import outdated
    from perceptron_lab.config.load import config_from_dict
    from perceptron_lab.run.plan import results_hash

    cfgs = {}
    for name, tau in (("same", 0.5), ("changed", 0.5), ("new", 0.5)):
        cfgs[name] = config_from_dict({"dataset": {"name": "sonar"}, "algorithm": {"tau": tau},
                                       "output": {"dir": str(tmp_path / name)}})
        (tmp_path / name).mkdir()
    (tmp_path / "same" / "run.json").write_text(json.dumps({"config_hash": results_hash(cfgs["same"])}))
    (tmp_path / "changed" / "run.json").write_text(json.dumps({"config_hash": "0123456789ab"}))
    assert outdated(cfgs) == ["changed"]


def test_a_worker_reads_a_plan_from_its_file_once_and_keeps_the_latest_few(tmp_path, monkeypatch):
    import pickle

    import perceptron_lab.run.executors as E

    monkeypatch.setattr(E, "_WORKER", {})
    paths = {}
    for i in range(E.PLANS_KEPT + 1):
        paths[f"t{i}"] = tmp_path / f"p{i}.pickle"
        paths[f"t{i}"].write_bytes(pickle.dumps({"plan": i}))
    assert E._worker_plan(str(paths["t0"]), "t0") == {"plan": 0}
    paths["t0"].unlink()                                  # read once: the file is not needed again
    assert E._worker_plan(str(paths["t0"]), "t0") == {"plan": 0}
    for i in range(1, E.PLANS_KEPT + 1):
        assert E._worker_plan(str(paths[f"t{i}"]), f"t{i}") == {"plan": i}
    assert "t0" not in E._WORKER["plans"] and len(E._WORKER["plans"]) == E.PLANS_KEPT
    with pytest.raises(FileNotFoundError):               # dropped, so read again: its file is gone
        E._worker_plan(str(paths["t0"]), "t0")


@pytest.mark.parametrize("caller", [None, "2"])
def test_a_reproduction_keeps_its_own_amount_of_shared_columns_unless_the_caller_set_one(
        tmp_path, monkeypatch, caller):
    import perceptron_lab.cli.reproduce as R
    from perceptron_lab.engine import columns

    monkeypatch.chdir(tmp_path)   # main changes into ROOT; the fixture changes back
    if caller is not None:
        monkeypatch.setenv(columns.KEEP_ENV, caller)
    assert columns.KEEP_GB == 0 < R.KEEP_GB   # plab run keeps none; a reproduction keeps some
    R.main(["--list"])
    # the workers a reproduction starts inherit this process's environment
    assert columns.keep_gb() == (R.KEEP_GB if caller is None else 2.0)
