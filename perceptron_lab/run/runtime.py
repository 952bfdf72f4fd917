"""Process settings of plab's own commands: OpenBLAS's idle spin, OpenMP's wait policy and the
garbage collector's schedule.

They change how the cores and the memory are used, never a value. They apply in ``plab``,
``python -m perceptron_lab.cli.reproduce`` and the benchmarks, and in the workers these start (which
inherit the environment). A setting the user made in the environment is kept as it is. The library
(the scikit-learn estimators, ``import perceptron_lab``) changes none of them. The measurements
behind each choice are in ``benchmarks/NOTES.md``.

**OpenBLAS's idle spin.** After a BLAS call OpenBLAS's worker threads spin for ``2^28`` processor
cycles before they sleep (``OPENBLAS_THREAD_TIMEOUT``, the log2 of that count, 4 to 30). plab
alternates GEMMs with numba's parallel loops (the kernel transform, the evaluation's scan), whose
threads then share the cores with the spinning ones, so plab shortens the spin to ``2^22`` cycles
(:data:`SPIN_LOG2_CYCLES`). OpenBLAS reads the variable when it loads, so it is set before numpy is
imported where plab starts the process, and in the workers it starts; other BLAS libraries ignore
it.

**OpenMP's wait policy.** numba's parallel loops run on OpenMP threads, which by default also spin
after a loop before they sleep, taking the cores from the GEMM that follows (the evaluation computes
a test block's kernel values right after scanning the previous block). plab sets
``OMP_WAIT_POLICY=PASSIVE``: the threads sleep at once.

Workers of a pool (``--jobs`` above 1) run BLAS and numba on one thread each, so neither setting
changes them.

**Huge pages are left to numpy** (it advises transparent huge pages for its large arrays;
``NUMPY_MADVISE_HUGEPAGE=0`` turns that off), and run.json records which was in effect. Turning the
advice off everywhere makes workers that allocate and free large blocks again and again fault far
more often. Only arrays written once into memory the process has not touched are mapped without
the advice (``perceptron_lab.engine.memory``: ``cold_array``, ``cold_copy``, ``cold_take``): where the kernel makes an
advised page fault wait for compaction (THP ``defrag`` mode ``madvise``) and a virtual machine's
host maps guest memory lazily, that first write is what the advice slows. These arrays are the
kernel column cache (the shared store, or a run's own), a dataset's features as loaded, and a run's
features in its dtype and in training order.

**The garbage collector** (:func:`tune_gc`, ``plab`` only). A run creates few objects in cycles but
imports libraries (numba, pandas, matplotlib) that hold hundreds of thousands of objects, which
every full collection walks, and the interpreter walks them all once more when it exits. ``plab``
collects the youngest generation less often (:data:`GC_THRESHOLDS`) and freezes the objects alive
at exit (``gc.freeze``), so that exit does not walk them; values are not touched.
"""

from __future__ import annotations

import os
import sys

HUGEPAGE_ENV = "NUMPY_MADVISE_HUGEPAGE"
SPIN_ENV = "OPENBLAS_THREAD_TIMEOUT"
WAIT_ENV = "OMP_WAIT_POLICY"
#: log2 of the processor cycles OpenBLAS's idle workers spin before they sleep (OpenBLAS: 28)
SPIN_LOG2_CYCLES = 22
# the variables configure() set after this process had loaded the library that reads them (numpy's
# OpenBLAS, numba's OpenMP threads): the workers get them, this process keeps the libraries' defaults
_late: set = set()


def configure(environ=os.environ) -> list[str]:
    """Make plab's process settings in ``environ`` (this process's environment by default, which
    the workers it starts inherit), each unless the user set it; returns the variables set. Each
    takes effect where its library loads after this call (:func:`settings` tells which did here)."""
    made = []
    for name, value, loaded in ((SPIN_ENV, str(SPIN_LOG2_CYCLES), _openblas_loaded),
                                (WAIT_ENV, "PASSIVE", _openmp_started)):
        if name not in environ:
            environ[name] = value
            made.append(name)
            if environ is os.environ and loaded():
                _late.add(name)
    return made


def _openblas_loaded() -> bool:
    return "numpy" in sys.modules


def _openmp_started() -> bool:
    """Has numba started its thread pool (which reads OMP_WAIT_POLICY) in this process?"""
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    return parallel is not None and bool(getattr(parallel, "_is_initialized", True))


def huge_pages() -> bool | None:
    """Whether this process's numpy advises huge pages (None when numpy cannot tell)."""
    import numpy as np

    getter = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "_get_madvise_hugepage", None)
    return bool(getter()) if getter is not None else None


def numba_cpu_name() -> str | None:
    """The CPU numba compiles for: ``NUMBA_CPU_NAME`` when set, else this machine's (LLVM's name).
    Runs whose numbers are not exact by construction can differ between targets (the order of
    vectorized sums), so run.json records it."""
    from numba.core import config

    if config.CPU_NAME:
        return str(config.CPU_NAME)
    try:
        import llvmlite.binding as llvm

        return llvm.get_host_cpu_name()
    except Exception:   # noqa: BLE001 -- a record, not a setting: unknown rather than a failed run
        return None


def settings() -> dict:
    """This process's settings, for run.json: numpy's huge-page advice, the OpenBLAS spin and
    OpenMP wait policy in effect here (None: the library's default), and the CPU numba compiles
    for (:func:`numba_cpu_name`)."""
    def env(name):
        return None if name in _late else os.environ.get(name)

    return {"numpy_huge_pages": huge_pages(), "openblas_thread_timeout": env(SPIN_ENV),
            "omp_wait_policy": env(WAIT_ENV), "numba_cpu_name": numba_cpu_name()}


#: :func:`tune_gc`'s collection thresholds (the interpreter's default: 700, 10, 10).
GC_THRESHOLDS = (200_000, 30, 30)


def tune_gc() -> None:
    """plab's garbage-collector settings for its own commands (see the module's docstring): fewer
    collections of the youngest generation, and the objects alive at exit frozen so that the
    interpreter's last collection skips them. Buffered files must be closed before exit (plab's
    outputs are written and closed before its commands return)."""
    import atexit
    import gc

    gc.set_threshold(*GC_THRESHOLDS)
    atexit.unregister(gc.freeze)   # once per process, however many commands run in it
    atexit.register(gc.freeze)


__all__ = ["HUGEPAGE_ENV", "SPIN_ENV", "WAIT_ENV",
           "SPIN_LOG2_CYCLES", "GC_THRESHOLDS", "configure", "huge_pages", "settings", "tune_gc"]


# ----------------------------------------------------------------------------- threads and memory
# Scoped settings, restored on exit (threads), and the process's own memory record. They import
# numba and threadpoolctl only when called, so that importing this module sets nothing.


# numba's and BLAS's thread counts around a jitted call belong to the engine
# (:mod:`perceptron_lab.engine.threads`: threads_for, pin_blas_one_thread), which the estimators use
# too. Not imported here: importing this module must load no numpy before :func:`configure`.


def peak_rss_mb() -> float | None:
    """The peak resident memory of this process since :func:`reset_peak_rss` (or its start), in MB
    (None where the OS does not say): Linux's VmHWM, else the process's maximum resident size."""
    try:
        with open("/proc/self/status", "rb") as f:
            status = f.read()
        at = status.find(b"\nVmHWM:")
        if at >= 0:
            return round(int(status[at + 7:status.index(b"\n", at + 1)].split()[0]) / 2**10, 1)
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # pragma: no cover - not Unix
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux, bytes on macOS
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)


def reset_peak_rss() -> None:
    """Start :func:`peak_rss_mb` afresh from the memory in use now (Linux), so that a process that
    runs several configs (``make reproduce``) reports each one's own peak; elsewhere a no-op."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
