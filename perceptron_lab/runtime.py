"""Process settings of plab's own commands: numpy's huge-page advice, OpenBLAS's idle spin and
OpenMP's wait policy.

They change how fast memory and threads are had, never a value. They apply in ``plab``,
``python -m perceptron_lab.reproduce`` and the benchmarks, and in the workers these start (which
inherit the environment). A setting the user made in the environment is kept as it is. The library
(the scikit-learn estimators, ``import perceptron_lab``) changes none of them.

**Huge pages.** On Linux numpy asks the kernel to back every array of 4 MB or more with transparent
huge pages (``madvise(MADV_HUGEPAGE)``; numpy's "Global state" documentation,
``NUMPY_MADVISE_HUGEPAGE``). Where the kernel's THP ``defrag`` mode is ``madvise`` (the kernel's
default), ``defer+madvise`` or ``always``, a page fault in such an advised array enters direct
reclaim and compaction when no huge page is free, instead of falling back to a small page
(Documentation/admin-guide/mm/transhuge.rst; numpy issue 31590). plab writes its large arrays once,
in order (the features, the kernel column cache, the evaluation's blocks), and reads them in long
runs, where huge pages save little; so on such machines the advice is turned off. Measured on the
project's 2-core VM (kernel 6.18, THP ``enabled`` and ``defrag`` both ``madvise``): filling 2.16 GB
of fresh memory took 5.4-5.9 s with the advice and 1.1-3.4 s without; converting MNIST's training
images to float64, 0.8-1.1 s and 0.2 s.

**OpenBLAS's idle spin.** After a BLAS call OpenBLAS's worker threads spin for ``2^28`` processor
cycles (about 0.1 s) before they sleep (``OPENBLAS_THREAD_TIMEOUT``, the log2 of that count, 4 to
30). plab alternates GEMMs with numba's parallel loops (the kernel transform, the evaluation's
scan), whose threads then share the cores with the spinning ones. plab sets the spin to ``2^22``
cycles, about a millisecond. Measured on case 5 (one permutation of ``configs/mnist_d4.yaml``): its
evaluation's scan took 0.95-1.28 s with the default and 0.49-0.54 s with a short spin; its training
took 10.3 s with the default and 10.0-10.5 s with ``2^22`` (two runs each, the spread of this
machine). OpenBLAS reads the variable when it loads, so it is set before numpy is imported where plab
starts the process, and in the workers it starts; other BLAS libraries ignore it.

**OpenMP's wait policy.** numba's parallel loops run on OpenMP threads, which by default also spin
after a loop before they sleep, taking the cores from the GEMM that follows (the evaluation computes
a test block's kernel values right after scanning the previous block). plab sets
``OMP_WAIT_POLICY=PASSIVE``: the threads sleep at once. Measured on case 5's evaluation: its test
kernel blocks took 0.70-0.72 s instead of 0.85-0.88 s (the arithmetic at the measured GEMM rate is
0.71 s).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HUGEPAGE_ENV = "NUMPY_MADVISE_HUGEPAGE"
SPIN_ENV = "OPENBLAS_THREAD_TIMEOUT"
WAIT_ENV = "OMP_WAIT_POLICY"
#: log2 of the processor cycles OpenBLAS's idle workers spin before they sleep (OpenBLAS: 28)
SPIN_LOG2_CYCLES = 22
THP_DIR = Path("/sys/kernel/mm/transparent_hugepage")
#: defrag modes in which a fault in an MADV_HUGEPAGE region waits for reclaim and compaction
STALLING_DEFRAG = ("always", "madvise", "defer+madvise")
# the variables configure() set after this process had loaded the library that reads them (numpy's
# OpenBLAS, numba's OpenMP threads): the workers get them, this process keeps the libraries' defaults
_late: set = set()


def selected(text: str) -> str | None:
    """The bracketed choice of a sysfs mode file, e.g. ``always defer [madvise] never`` -> ``madvise``."""
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return None


def thp_modes(root: Path | None = None) -> dict:
    """The kernel's THP ``enabled`` and ``defrag`` modes (None where the file is absent or unreadable)."""
    root = THP_DIR if root is None else root
    modes = {}
    for name in ("enabled", "defrag"):
        try:
            modes[name] = selected((root / name).read_text())
        except OSError:
            modes[name] = None
    return modes


def advice_waits(modes: dict) -> bool:
    """Does numpy's huge-page advice make page faults wait for reclaim and compaction here?"""
    return modes.get("enabled") in ("always", "madvise") and modes.get("defrag") in STALLING_DEFRAG


def _numpy_switch(enabled: bool) -> None:
    """Apply ``enabled`` to a numpy already imported in this process (its own runtime switch)."""
    np = sys.modules.get("numpy")
    if np is None:
        return
    setter = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "_set_madvise_hugepage", None)
    if setter is not None:
        setter(enabled)


def configure(environ=os.environ, root: Path | None = None) -> list[str]:
    """Make plab's process settings in ``environ`` (this process's environment by default, which
    the workers it starts inherit), each unless the user set it; returns the variables set.

    Huge pages: numpy's advice is turned off where it makes faults wait (also in this process's
    numpy, if already imported). OpenBLAS's spin and OpenMP's wait policy take effect where the
    library loads after this call (:func:`settings` tells which did here).
    """
    made = []
    if HUGEPAGE_ENV not in environ and advice_waits(thp_modes(root)):
        environ[HUGEPAGE_ENV] = "0"
        made.append(HUGEPAGE_ENV)
        if environ is os.environ:
            _numpy_switch(False)
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


def settings() -> dict:
    """This process's settings, for run.json: numpy's huge-page advice, and the OpenBLAS spin and
    OpenMP wait policy in effect here (None: the library's default)."""
    def env(name):
        return None if name in _late else os.environ.get(name)

    return {"numpy_huge_pages": huge_pages(), "openblas_thread_timeout": env(SPIN_ENV),
            "omp_wait_policy": env(WAIT_ENV)}


__all__ = ["HUGEPAGE_ENV", "SPIN_ENV", "WAIT_ENV", "SPIN_LOG2_CYCLES", "STALLING_DEFRAG", "selected", "thp_modes",
           "advice_waits", "configure", "huge_pages", "settings"]
