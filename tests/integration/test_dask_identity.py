"""Dask workers prove what they compute on, by content: the data they read has the fingerprint the
plan's part keys carry (a long-lived worker re-reads a file that changed, and one that reads other
data stops the run), and their code has the code fingerprint of this process (not just its version
string), so that a part written from a worker's rows may be reused by a later local resume."""

import pytest
from click.testing import CliRunner

distributed = pytest.importorskip("distributed")

from perceptron_lab.cli.main import main  # noqa: E402
from perceptron_lab.run import executors  # noqa: E402

OWN = """name: own
dataset: {path: data.csv, label: y}
algorithm: {eta: 0.1}
training: {epochs: 2, permutations: 1, seed: 0}
prediction: {rules: [last, vote]}
evaluation: {mode: kfold, folds: 2}
output: {figures: false}
"""


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def rows(shift: int) -> str:
    """A small two-class CSV; ``shift`` changes the feature values, not the shape or the labels."""
    return "a,b,y\n" + "".join(f"{(i * 7 + shift) % 11},{(i * 3) % 5 - 2},{i % 2}\n" for i in range(40))


@pytest.fixture(scope="module")
def scheduler():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, host="127.0.0.1", processes=True,
                                  dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def on_workers(scheduler, code: str):
    """Run Python ``code`` in every worker process (a string: nothing of this module is pickled)."""
    with distributed.Client(scheduler, set_as_default=False) as client:
        client.run(exec, code)


OTHER_CODE = "import perceptron_lab.run.store as s; s._CODE[:] = [s.code_fingerprint().split('+')[0] + '+0ther']"
OWN_CODE = "import perceptron_lab.run.store as s; s._CODE.clear()"


def setup(tmp_path, shift=0):
    (tmp_path / "data.csv").write_text(rows(shift))
    cfg = tmp_path / "own.yaml"
    cfg.write_text(OWN)
    return cfg


def dask_run(cfg, out, scheduler):
    return invoke("run", cfg, "--out", out, "--executor", "dask", "--scheduler", scheduler, "-q")


def one_error_line(output: str) -> str:
    errors = [ln for ln in output.splitlines() if ln.startswith("plab: error:")]
    assert len(errors) == 1 and "Traceback" not in output, output
    return errors[0]


def test_a_long_lived_worker_rereads_a_data_file_that_changed(tmp_path, scheduler):
    cfg = setup(tmp_path)
    r = dask_run(cfg, tmp_path / "first", scheduler)
    assert r.exit_code == 0, r.output
    (tmp_path / "data.csv").write_text(rows(5))   # the user edits the file; the worker lives on
    r = dask_run(cfg, tmp_path / "second", scheduler)
    assert r.exit_code == 0, r.output
    r = invoke("run", cfg, "--out", tmp_path / "local", "-q")
    assert r.exit_code == 0, r.output
    second, local = ((tmp_path / d / "results.csv").read_bytes() for d in ("second", "local"))
    assert second == local
    assert second != (tmp_path / "first" / "results.csv").read_bytes()


def test_a_worker_that_reads_other_data_than_the_plan_stops_the_run(tmp_path, scheduler, monkeypatch):
    """The file changes after plab run read it to plan the run and before the workers read it."""
    cfg = setup(tmp_path)
    real = executors.run_dask

    def edit_then_run(*args, **kw):
        (tmp_path / "data.csv").write_text(rows(3))
        return real(*args, **kw)

    monkeypatch.setattr(executors, "run_dask", edit_then_run)
    out = tmp_path / "out"
    r = dask_run(cfg, out, scheduler)
    line = one_error_line(r.output)
    assert r.exit_code == 3, r.output   # data
    assert "on a Dask worker" in line and "data.csv" in line and "fingerprint" in line
    assert not list((out / "parts").glob("*.csv")) and not (out / "results.csv").exists()


def test_workers_running_other_code_under_the_same_version_are_refused(tmp_path, scheduler):
    cfg = setup(tmp_path)
    on_workers(scheduler, OTHER_CODE)
    try:
        r = dask_run(cfg, tmp_path / "out", scheduler)
    finally:
        on_workers(scheduler, OWN_CODE)
    assert r.exit_code == 5, r.output   # workers
    line = one_error_line(r.output)
    assert "other perceptron_lab code" in line and "+0ther" in line
    assert not (tmp_path / "out" / "parts").is_dir() or not list((tmp_path / "out" / "parts").glob("*.csv"))


def test_workers_of_another_version_are_named_as_such(tmp_path, scheduler):
    """The version is part of the code fingerprint: a worker of another release is refused with
    the version named, from the same one check."""
    cfg = setup(tmp_path)
    on_workers(scheduler, "import perceptron_lab.run.store as s; s._CODE[:] = ['0.0.9+0ld']")
    try:
        r = dask_run(cfg, tmp_path / "out", scheduler)
    finally:
        on_workers(scheduler, OWN_CODE)
    assert r.exit_code == 5, r.output
    line = one_error_line(r.output)
    assert "Dask workers run perceptron_lab 0.0.9, this process" in line and "same version everywhere" in line


def test_a_worker_whose_code_changes_after_the_connect_check_computes_nothing(tmp_path, scheduler, monkeypatch):
    """Each task proves the code fingerprint again (a worker that joins later, or is restarted on
    other code, never went through the check when plab connected)."""
    cfg = setup(tmp_path)
    real = executors.connect_dask

    def connect_then_change(*args, **kw):
        client = real(*args, **kw)
        client.run(exec, OTHER_CODE)
        return client

    monkeypatch.setattr(executors, "connect_dask", connect_then_change)
    try:
        r = dask_run(cfg, tmp_path / "out", scheduler)
    finally:
        on_workers(scheduler, OWN_CODE)
    assert r.exit_code == 5, r.output
    line = one_error_line(r.output)
    assert "on a Dask worker" in line and "+0ther" in line
    assert not list((tmp_path / "out" / "parts").glob("*.csv"))


def test_a_part_from_a_worker_is_reused_only_by_the_same_code(tmp_path, scheduler, monkeypatch):
    """A part written from a worker's rows carries the code fingerprint the worker proved; a local
    resume with the same code reuses it, one with other code recomputes it."""
    from perceptron_lab.run import store

    cfg = setup(tmp_path)
    out = tmp_path / "out"
    r = dask_run(cfg, out, scheduler)
    assert r.exit_code == 0, r.output
    (out / "results.csv").unlink()
    r = invoke("run", cfg, "--out", out, "-q")
    assert r.exit_code == 0 and "0 run(s) computed, 2 reused" in r.output, r.output
    (out / "results.csv").unlink()
    monkeypatch.setattr(store, "_CODE", [store.code_fingerprint().split("+")[0] + "+0ther"])
    r = invoke("run", cfg, "--out", out, "-q")
    assert r.exit_code == 0, r.output
    assert "2 run(s) computed, 0 reused" in r.output and "plab code); recomputing" in r.output
