"""Workers outside the ``plab run`` process read their data by content, not by path: inside
:func:`~perceptron_lab.run.inputs.expecting_data` the per-process data cache answers only for data
proved to have the plan's fingerprint; a file edited since is read again, and other data than the
plan's stops the part (:class:`~perceptron_lab.run.inputs.DataChangedError`, exit status 3). The
``--jobs`` processes compute inside it as Dask workers do."""

import numpy as np
import pytest
from click.testing import CliRunner

from perceptron_lab.cli.main import main
from perceptron_lab.config.load import load_config, with_overrides
from perceptron_lab.run import executors, inputs
from perceptron_lab.run.store import data_fingerprint

OWN = """name: own
dataset: {path: data.csv, label: y}
training: {epochs: 1, permutations: 1, seed: 0}
prediction: {rules: [last]}
evaluation: {mode: kfold, folds: 2}
output: {figures: false}
"""


def rows(shift: int) -> str:
    return "a,b,y\n" + "".join(f"{(i * 7 + shift) % 11},{(i * 3) % 5 - 2},{i % 2}\n" for i in range(30))


@pytest.fixture
def own(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "_DATA_CACHE", {})
    monkeypatch.setattr(inputs, "_PROVED", {})
    (tmp_path / "data.csv").write_text(rows(0))
    (tmp_path / "own.yaml").write_text(OWN)
    return load_config(tmp_path / "own.yaml")


def fingerprint_of(cfg, shift, tmp_path):
    """The fingerprint of ``cfg``'s data with the file holding ``rows(shift)``, read afresh."""
    (tmp_path / "data.csv").write_text(rows(shift))
    with inputs.DATA_LOCK:
        inputs._DATA_CACHE.clear()
        inputs._PROVED.clear()
    return data_fingerprint(inputs.load_data(cfg))


def test_the_cache_answers_by_content(own, tmp_path):
    v0, v5 = fingerprint_of(own, 0, tmp_path), fingerprint_of(own, 5, tmp_path)
    (tmp_path / "data.csv").write_text(rows(0))
    with inputs.expecting_data(v0):
        first = inputs.load_data(own)
    assert data_fingerprint(first) == v0
    (tmp_path / "data.csv").write_text(rows(5))   # edited, under the same path
    assert inputs.load_data(own).X_train is first.X_train   # outside a check: by path, as before
    with inputs.expecting_data(v5):
        assert data_fingerprint(inputs.load_data(own)) == v5   # read again
    with inputs.expecting_data(v0), pytest.raises(inputs.DataChangedError) as e:
        inputs.load_data(own)   # the file no longer holds what this plan read
    assert e.value.exit_code == 3 and "\n" not in str(e.value)
    assert f"holds other data than plab run read to plan this run (data fingerprint {v5}, the plan's {v0})" \
        in str(e.value) and str(tmp_path / "data.csv") in str(e.value)


def test_subsets_of_one_unchanged_file_share_one_copy(own, tmp_path):
    """Points of a grid over dataset.train_size read the file again once each, and keep the copy
    already in memory when its contents are the same."""
    small, large = with_overrides(own, {"dataset.train_size": 10}), with_overrides(own, {"dataset.train_size": 20})
    fs, fl = (fingerprint_of(c, 0, tmp_path) for c in (small, large))
    with inputs.expecting_data(fs):
        a = inputs.load_data(small)
    with inputs.expecting_data(fl):
        b = inputs.load_data(large)
    with inputs.expecting_data(fs):
        c = inputs.load_data(small)
    assert len(a.y_train) == len(c.y_train) == 10 and len(b.y_train) == 20
    assert np.shares_memory(a.X_train, b.X_train) and np.shares_memory(b.X_train, c.X_train)


def test_a_pool_worker_that_reads_other_data_than_the_plan_stops_the_run(tmp_path, monkeypatch):
    (tmp_path / "data.csv").write_text(rows(0))
    (tmp_path / "own.yaml").write_text(OWN)
    real = executors.run_pool

    def edit_then_run(*args, **kw):   # the file changes after plab run read it, before the workers do
        (tmp_path / "data.csv").write_text(rows(4))
        return real(*args, **kw)

    monkeypatch.setattr(executors, "run_pool", edit_then_run)
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["run", str(tmp_path / "own.yaml"), "--out", str(out), "--jobs", "2", "-q"])
    assert r.exit_code == 3, r.output
    errors = [ln for ln in r.output.splitlines() if ln.startswith("plab: error:")]
    assert len(errors) == 1 and "holds other data than plab run read to plan this run" in errors[0], r.output
    assert not list((out / "parts").glob("*.csv"))
