"""The process settings of plab's commands (perceptron_lab.run.runtime): OpenBLAS's idle spin, OpenMP's
wait policy, and the record of numpy's huge-page advice."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pages import vm_flags
from perceptron_lab.run import runtime as R
from perceptron_lab.engine import memory as M


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


def test_a_pool_worker_runs_numpys_blas_on_one_thread():
    """A worker limits BLAS before it has imported numpy; the limit must still reach numpy's BLAS
    (a limiter only sees the libraries loaded when it is made), or every BLAS call of a worker
    wakes a second thread that then spins, on a machine whose cores the workers already fill."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    from worker_probe import worker_blas_threads   # a module that does not import numpy

    child = ctx.Process(target=worker_blas_threads, args=(queue,))
    child.start()
    before, threads = queue.get(timeout=120)
    child.join(60)
    assert before is False   # the case that matters: numpy not loaded when the worker starts
    assert threads and all(t == 1 for t in threads), threads


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
    cmd = [sys.executable, "-m", "perceptron_lab.cli.main", "run", "quickstart", "training.epochs=2",
           "training.checkpoints=[1,2]", "evaluation.folds=2", "--out", str(out), "-q", "--data-dir", str(data_dir)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    versions = json.loads((out / "run.json").read_text())["versions"]
    if sys.platform.startswith("linux"):   # numpy advises huge pages on Linux only
        assert versions["numpy_huge_pages"] is advised
    assert versions["openblas_thread_timeout"] == spin_run
    assert versions["omp_wait_policy"] == "PASSIVE"


def test_cold_copies_hold_the_same_values_as_numpys():
    import numpy as np

    rng = np.random.default_rng(5)
    a = rng.integers(0, 256, size=(3000, 700)).astype(np.float64) / 7.0   # 16.8 MB, not exact in float32
    for dtype in (np.float32, np.float64, None):
        got = M.cold_copy(a[:, ::-1], dtype)          # a non-contiguous view: a copy is made
        want = np.ascontiguousarray(a[:, ::-1], dtype=dtype)
        assert got.dtype == want.dtype and got.flags.c_contiguous and got.flags.writeable
        assert np.array_equal(got, want)
    assert M.cold_copy(a, np.float64) is a            # nothing to copy
    order = rng.permutation(3000)
    for dtype in (np.float32, None):
        got = M.cold_take(a, order, dtype)
        assert np.array_equal(got, a[order].astype(dtype or a.dtype))
    small = M.cold_copy(np.arange(10, dtype=np.int64), np.float32)
    assert np.array_equal(small, np.arange(10, dtype=np.float32))
    assert M.cold_array((0, 5), np.float32).shape == (0, 5)
    z = M.cold_array((2000, 1000), np.float64)
    assert z.shape == (2000, 1000) and not z.any()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
def test_cold_arrays_are_mapped_without_numpys_huge_page_advice():
    """A copy into a cold array sits in a mapping without MADV_HUGEPAGE ('hg'), where numpy's own
    array of the same size has it (when numpy advises)."""
    import numpy as np

    a = np.ones((3000, 700), dtype=np.uint8)
    cold = M.cold_copy(a, np.float64)
    assert "hg" not in vm_flags(cold)
    assert "hg" not in vm_flags(M.cold_take(cold, np.arange(3000)[::-1], np.float32))
    if R.huge_pages():
        assert "hg" in vm_flags(a.astype(np.float64))


def test_plab_tunes_the_garbage_collector_and_the_library_does_not():
    """``plab`` collects less often and freezes the objects alive at exit (so that the interpreter's
    last collection skips them); importing the package changes neither."""
    code = """if True:
        import atexit, gc
        atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))  # runs last
        before = gc.get_threshold()
        import perceptron_lab
        print("after import:", gc.get_threshold() == before)
        from perceptron_lab.cli.main import main
        from perceptron_lab.run.runtime import GC_THRESHOLDS
        main(["configs"], standalone_mode=False)
        print("after plab:", gc.get_threshold() == GC_THRESHOLDS)
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith(("after", "frozen"))]
    assert lines == ["after import: True", "after plab: True", "frozen at exit: True"]


def test_the_jit_runtime_loads_on_a_thread_of_its_own_and_its_failures_stay_there(monkeypatch):
    """``plab run`` on one process loads numba's runtime on another thread while it reads the data;
    the thread ends, and an error there is left to the run's own first jitted call."""
    import threading

    from perceptron_lab.run import experiment

    calls = []
    monkeypatch.setattr(experiment, "load_jit", lambda: calls.append(threading.current_thread().name))
    experiment._prepare_meanwhile(False)
    for t in threading.enumerate():
        if t.name == "plab-prepare":
            t.join(10)
    assert calls == ["plab-prepare"]

    def broken():
        raise RuntimeError("no compiler")

    monkeypatch.setattr(experiment, "load_jit", broken)
    seen = []
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append(args.exc_type))
    experiment._prepare_meanwhile(True)
    for t in threading.enumerate():
        if t.name == "plab-prepare":
            t.join(10)
    assert seen == []


def test_load_jit_runs_a_cached_jitted_function():
    code = ("from perceptron_lab.engine.kernels import _small_integers, load_jit\n"
            "before = len(_small_integers.signatures)\n"
            "load_jit()\n"
            "print(before, len(_small_integers.signatures))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split() == ["0", "1"]


def test_run_json_records_the_cpu_numba_compiles_for(monkeypatch):
    from numba.core import config

    import perceptron_lab.run.runtime as R

    monkeypatch.setattr(config, "CPU_NAME", "haswell")
    assert R.settings()["numba_cpu_name"] == "haswell"
    monkeypatch.setattr(config, "CPU_NAME", None)
    import llvmlite.binding as llvm

    assert R.settings()["numba_cpu_name"] == llvm.get_host_cpu_name()


def test_importing_the_runtime_module_loads_no_numpy():
    """configure() must run before numpy loads (OpenBLAS reads its spin setting then): importing
    the module that holds it, and the CLI that calls it, may not load numpy on the way."""
    code = ("import sys; import perceptron_lab.run.runtime; import perceptron_lab.cli.main; "
            "print('numpy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
