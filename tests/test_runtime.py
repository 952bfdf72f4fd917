"""The process settings of plab's commands (perceptron_lab.runtime): OpenBLAS's idle spin, OpenMP's
wait policy, and the record of numpy's huge-page advice."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from perceptron_lab import runtime as R


def test_the_openblas_spin_and_openmp_wait_are_set_unless_the_user_set_them():
    env = {}
    assert R.configure(env) == [R.SPIN_ENV, R.WAIT_ENV]
    assert env == {R.SPIN_ENV: str(R.SPIN_LOG2_CYCLES), R.WAIT_ENV: "PASSIVE"}
    assert 4 <= R.SPIN_LOG2_CYCLES < 28   # OpenBLAS's range, and shorter than its default
    env = {R.WAIT_ENV: "active"}
    assert R.configure(env) == [R.SPIN_ENV]
    assert env[R.WAIT_ENV] == "active"
    user = {R.SPIN_ENV: "30", R.WAIT_ENV: "ACTIVE"}
    env = dict(user)
    assert R.configure(env) == []
    assert env == user


def test_huge_pages_are_left_to_numpy():
    env = {}
    R.configure(env)
    assert R.HUGEPAGE_ENV not in env


def test_a_spin_set_after_openblas_loaded_is_not_recorded_as_in_effect(monkeypatch):
    """In a process whose numpy (and OpenBLAS) loaded before configure(), the spin reaches the
    workers only: run.json's value for the process is OpenBLAS's default (None)."""
    import numpy  # noqa: F401  (loaded, as in a test or a notebook)

    monkeypatch.delenv(R.SPIN_ENV, raising=False)
    monkeypatch.setenv(R.WAIT_ENV, "ACTIVE")
    monkeypatch.setattr(R, "_late", set())
    assert R.configure() == [R.SPIN_ENV]
    assert os.environ[R.SPIN_ENV] == str(R.SPIN_LOG2_CYCLES)
    assert R.settings()["openblas_thread_timeout"] is None
    assert R.settings()["omp_wait_policy"] == "ACTIVE"   # the user's, read when numba's threads start


def _child_settings(queue):
    queue.put((os.environ.get(R.SPIN_ENV), os.environ.get(R.WAIT_ENV)))


def test_spawned_workers_inherit_the_settings(monkeypatch):
    """configure() in the parent reaches a worker started the way the executors start theirs."""
    import multiprocessing as mp

    monkeypatch.delenv(R.SPIN_ENV, raising=False)
    monkeypatch.delenv(R.WAIT_ENV, raising=False)
    monkeypatch.setattr(R, "_late", set())
    R.configure()
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_child_settings, args=(queue,))
    child.start()
    got = queue.get(timeout=120)
    child.join(60)
    assert got == (str(R.SPIN_LOG2_CYCLES), "PASSIVE")


@pytest.mark.parametrize("hp, advised, spin, spin_run", [("0", False, None, "22"), ("1", True, "30", "30")])
def test_plab_run_keeps_the_users_settings_and_records_them(tmp_path, data_dir, hp, advised, spin, spin_run):
    """``plab run`` as a user runs it: OPENBLAS_THREAD_TIMEOUT kept when set, plab's otherwise;
    run.json's versions record it, OpenMP's policy and numpy's huge-page advice (set by the user
    through NUMPY_MADVISE_HUGEPAGE)."""
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in (R.SPIN_ENV, R.WAIT_ENV)}
    env[R.HUGEPAGE_ENV] = hp
    if spin is not None:
        env[R.SPIN_ENV] = spin
    cmd = [sys.executable, "-m", "perceptron_lab.cli", "run", "quickstart", "training.epochs=2",
           "training.checkpoints=[1,2]", "evaluation.folds=2", "--out", str(out), "-q", "--data-dir", str(data_dir)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    versions = json.loads((out / "run.json").read_text())["versions"]
    if sys.platform.startswith("linux"):   # numpy advises huge pages on Linux only
        assert versions["numpy_huge_pages"] is advised
    assert versions["openblas_thread_timeout"] == spin_run
    assert versions["omp_wait_policy"] == "PASSIVE"
