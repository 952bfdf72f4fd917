"""Process settings of plab's own commands: numpy's huge-page advice and OpenBLAS's idle spin.

Both change how fast memory and threads are had, never a value. They apply in ``plab``,
``python -m perceptron_lab.reproduce`` and the benchmarks, and in the workers these start (which
inherit the environment). A setting the user made in the environment is kept as it is. The library
(the scikit-learn estimators, ``import perceptron_lab``) changes neither.

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
cycles, about a millisecond: the workers stay awake between the GEMMs of one training chunk and
the next, and sleep during a scan. Measured on case 5's evaluation (one permutation of
``configs/mnist_d4.yaml``): the scan took 0.95-1.28 s with the default and 0.49-0.54 s with a short
spin. OpenBLAS reads the variable when it loads, so it is set before numpy is imported where plab
starts the process, and in the workers it starts; other BLAS libraries ignore it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HUGEPAGE_ENV = "NUMPY_MADVISE_HUGEPAGE"
SPIN_ENV = "OPENBLAS_THREAD_TIMEOUT"
#: log2 of the processor cycles OpenBLAS's idle workers spin before they sleep (OpenBLAS: 28)
SPIN_LOG2_CYCLES = 22
THP_DIR = Path("/sys/kernel/mm/transparent_hugepage")
#: defrag modes in which a fault in an MADV_HUGEPAGE region waits for reclaim and compaction
STALLING_DEFRAG = ("always", "madvise", "defer+madvise")
# set by configure() when it set the spin after this process had loaded numpy (and OpenBLAS): the
# workers get it, this process keeps OpenBLAS's default
_spin_late = False


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
    numpy, if already imported). OpenBLAS's spin: takes effect where OpenBLAS loads after this call.
    """
    made = []
    if HUGEPAGE_ENV not in environ and advice_waits(thp_modes(root)):
        environ[HUGEPAGE_ENV] = "0"
        made.append(HUGEPAGE_ENV)
        if environ is os.environ:
            _numpy_switch(False)
    if SPIN_ENV not in environ:
        environ[SPIN_ENV] = str(SPIN_LOG2_CYCLES)
        made.append(SPIN_ENV)
        if environ is os.environ and "numpy" in sys.modules:
            global _spin_late
            _spin_late = True
    return made


def huge_pages() -> bool | None:
    """Whether this process's numpy advises huge pages (None when numpy cannot tell)."""
    import numpy as np

    getter = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "_get_madvise_hugepage", None)
    return bool(getter()) if getter is not None else None


def settings() -> dict:
    """This process's settings, for run.json: numpy's huge-page advice, and the OpenBLAS spin in
    effect here (None: OpenBLAS's default)."""
    spin = None if _spin_late else os.environ.get(SPIN_ENV)
    return {"numpy_huge_pages": huge_pages(), "openblas_thread_timeout": spin}


__all__ = ["HUGEPAGE_ENV", "SPIN_ENV", "SPIN_LOG2_CYCLES", "STALLING_DEFRAG", "selected", "thp_modes",
           "advice_waits", "configure", "huge_pages", "settings"]
