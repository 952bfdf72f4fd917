"""numpy's huge-page advice in plab's commands (perceptron_lab.hugepages)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from perceptron_lab import hugepages as H


def _sysfs(tmp_path, enabled, defrag):
    (tmp_path / "enabled").write_text(enabled + "\n")
    (tmp_path / "defrag").write_text(defrag + "\n")
    return tmp_path


def test_selected_reads_the_bracketed_mode():
    assert H.selected("always defer defer+madvise [madvise] never") == "madvise"
    assert H.selected("[always] madvise never") == "always"
    assert H.selected("always madvise never") is None


def test_modes_of_a_missing_folder_are_none(tmp_path):
    assert H.thp_modes(tmp_path / "absent") == {"enabled": None, "defrag": None}


@pytest.mark.parametrize("enabled, defrag, waits", [
    ("always [madvise] never", "always defer defer+madvise [madvise] never", True),
    ("[always] madvise never", "always defer [defer+madvise] madvise never", True),
    ("always [madvise] never", "[always] defer defer+madvise madvise never", True),
    ("always [madvise] never", "always [defer] defer+madvise madvise never", False),
    ("always [madvise] never", "always defer defer+madvise madvise [never]", False),
    ("always madvise [never]", "always defer defer+madvise [madvise] never", False),
])
def test_advice_is_turned_off_only_where_advised_faults_wait(tmp_path, enabled, defrag, waits):
    root = _sysfs(tmp_path, enabled, defrag)
    env = {}
    assert H.configure(env, root) is waits
    assert env == ({H.ENV: "0"} if waits else {})


def test_a_users_setting_is_kept(tmp_path):
    root = _sysfs(tmp_path, "always [madvise] never", "always defer defer+madvise [madvise] never")
    for value in ("1", "0"):
        env = {H.ENV: value}
        assert H.configure(env, root) is False
        assert env == {H.ENV: value}


def test_no_sysfs_changes_nothing(tmp_path):
    env = {}
    assert H.configure(env, tmp_path / "absent") is False
    assert env == {}


def _child_state(queue):
    queue.put(H.state())


def test_spawned_processes_inherit_the_choice(tmp_path, monkeypatch):
    """After configure() on a machine whose defrag mode stalls (a fake sysfs folder), this process's
    numpy and a spawned worker's (the executors' start method) no longer advise huge pages."""
    import multiprocessing as mp

    before = H.state()
    monkeypatch.delenv(H.ENV, raising=False)
    monkeypatch.setattr(H, "THP_DIR", _sysfs(tmp_path, "always [madvise] never",
                                             "always defer defer+madvise [madvise] never"))
    try:
        assert H.configure() is True
        assert H.state() is False
        ctx = mp.get_context("spawn")
        queue = ctx.Queue()
        child = ctx.Process(target=_child_state, args=(queue,))
        child.start()
        got = queue.get(timeout=120)
        child.join(60)
        assert got is False
    finally:
        H._numpy_switch(bool(before))


@pytest.mark.parametrize("value, advised", [("0", False), ("1", True)])
def test_plab_run_keeps_the_users_setting_and_records_it(tmp_path, data_dir, value, advised):
    """``plab run`` as a user runs it, with NUMPY_MADVISE_HUGEPAGE set: kept, and run.json's
    versions record the advice the run had."""
    out = tmp_path / "out"
    env = dict(os.environ, **{H.ENV: value})
    cmd = [sys.executable, "-m", "perceptron_lab.cli", "run", "quickstart", "training.epochs=2",
           "training.checkpoints=[1,2]", "evaluation.folds=2", "--out", str(out), "-q", "--data-dir", str(data_dir)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "run.json").read_text())["versions"]["numpy_huge_pages"] is advised
