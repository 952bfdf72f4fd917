"""The process settings of plab's commands (perceptron_lab.runtime): numpy's huge-page advice,
OpenBLAS's idle spin."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from perceptron_lab import runtime as H


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
    user = {H.SPIN_ENV: "28", H.WAIT_ENV: "ACTIVE"}
    env = dict(user)
    assert H.configure(env, root) == ([H.HUGEPAGE_ENV] if waits else [])
    assert env == (dict(user, **{H.HUGEPAGE_ENV: "0"}) if waits else user)


def test_a_users_setting_is_kept(tmp_path):
    root = _sysfs(tmp_path, "always [madvise] never", "always defer defer+madvise [madvise] never")
    for value in ("1", "0"):
        user = {H.HUGEPAGE_ENV: value, H.SPIN_ENV: "30", H.WAIT_ENV: "ACTIVE"}
        env = dict(user)
        assert H.configure(env, root) == []
        assert env == user


def test_no_sysfs_changes_nothing(tmp_path):
    user = {H.SPIN_ENV: "28", H.WAIT_ENV: "ACTIVE"}
    env = dict(user)
    assert H.configure(env, tmp_path / "absent") == []
    assert env == user


def test_the_openblas_spin_and_openmp_wait_are_set_unless_the_user_set_them(tmp_path):
    env = {}
    assert H.configure(env, tmp_path / "absent") == [H.SPIN_ENV, H.WAIT_ENV]
    assert env == {H.SPIN_ENV: str(H.SPIN_LOG2_CYCLES), H.WAIT_ENV: "PASSIVE"}
    assert 4 <= H.SPIN_LOG2_CYCLES < 28   # OpenBLAS's range, and shorter than its default
    env = {H.WAIT_ENV: "active"}
    assert H.configure(env, tmp_path / "absent") == [H.SPIN_ENV]
    assert env[H.WAIT_ENV] == "active"


def _child_state(queue):
    queue.put(H.huge_pages())


def test_spawned_processes_inherit_the_choice(tmp_path, monkeypatch):
    """After configure() on a machine whose defrag mode stalls (a fake sysfs folder), this process's
    numpy and a spawned worker's (the executors' start method) no longer advise huge pages."""
    import multiprocessing as mp

    before = H.huge_pages()
    monkeypatch.delenv(H.HUGEPAGE_ENV, raising=False)
    monkeypatch.setenv(H.SPIN_ENV, "28")
    monkeypatch.setenv(H.WAIT_ENV, "ACTIVE")
    monkeypatch.setattr(H, "THP_DIR", _sysfs(tmp_path, "always [madvise] never",
                                             "always defer defer+madvise [madvise] never"))
    try:
        assert H.configure() == [H.HUGEPAGE_ENV]
        assert H.huge_pages() is False
        ctx = mp.get_context("spawn")
        queue = ctx.Queue()
        child = ctx.Process(target=_child_state, args=(queue,))
        child.start()
        got = queue.get(timeout=120)
        child.join(60)
        assert got is False
    finally:
        H._numpy_switch(bool(before))


@pytest.mark.parametrize("value, advised, spin, spin_run", [("0", False, None, "22"), ("1", True, "30", "30")])
def test_plab_run_keeps_the_users_settings_and_records_them(tmp_path, data_dir, value, advised, spin, spin_run):
    """``plab run`` as a user runs it, with NUMPY_MADVISE_HUGEPAGE set and OPENBLAS_THREAD_TIMEOUT
    set or not: the user's values are kept, plab's spin is used otherwise, and run.json's versions
    record both."""
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in (H.SPIN_ENV, H.WAIT_ENV)}
    env[H.HUGEPAGE_ENV] = value
    if spin is not None:
        env[H.SPIN_ENV] = spin
    cmd = [sys.executable, "-m", "perceptron_lab.cli", "run", "quickstart", "training.epochs=2",
           "training.checkpoints=[1,2]", "evaluation.folds=2", "--out", str(out), "-q", "--data-dir", str(data_dir)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    versions = json.loads((out / "run.json").read_text())["versions"]
    assert versions["numpy_huge_pages"] is advised
    assert versions["openblas_thread_timeout"] == spin_run
    assert versions["omp_wait_policy"] == "PASSIVE"


def test_a_spin_set_after_openblas_loaded_is_not_recorded_as_in_effect(tmp_path, monkeypatch):
    """In a process whose numpy (and OpenBLAS) loaded before configure(), the spin reaches the
    workers only: run.json's value for the process is OpenBLAS's default (None)."""
    import numpy  # noqa: F401  (loaded, as in a test or a notebook)

    monkeypatch.delenv(H.SPIN_ENV, raising=False)
    monkeypatch.setenv(H.HUGEPAGE_ENV, "1")
    monkeypatch.setenv(H.WAIT_ENV, "ACTIVE")
    monkeypatch.setattr(H, "_late", set())
    assert H.configure() == [H.SPIN_ENV]
    assert os.environ[H.SPIN_ENV] == str(H.SPIN_LOG2_CYCLES)
    assert H.settings()["openblas_thread_timeout"] is None
    assert H.settings()["omp_wait_policy"] == "ACTIVE"   # the user's, read when numba's threads start
