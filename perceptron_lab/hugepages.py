"""numpy's transparent-huge-page advice in plab's own processes.

On Linux numpy asks the kernel to back every array of 4 MB or more with transparent huge pages
(``madvise(MADV_HUGEPAGE)``; numpy's "Global state" documentation, environment variable
``NUMPY_MADVISE_HUGEPAGE``). Where the kernel's THP ``defrag`` mode is ``madvise`` (the kernel's
default), ``defer+madvise`` or ``always``, a page fault in such an advised array enters direct
reclaim and compaction when no huge page is free, instead of falling back to a small page
(Documentation/admin-guide/mm/transhuge.rst; numpy issue 31590). On a virtual machine whose host
maps guest memory lazily this is also where the host's cost falls.

plab writes its large arrays once, in order (the features, the kernel column cache, the evaluation's
blocks), and then reads them in long runs, where huge pages save little. So in plab's own commands
(``plab``, ``python -m perceptron_lab.reproduce``, the benchmarks) the advice is turned off when
the defrag mode makes advised faults wait; a ``NUMPY_MADVISE_HUGEPAGE`` the user set is kept as it
is. The library (the scikit-learn estimators, ``import perceptron_lab``) never changes it.

Measured on the project's 2-core VM (kernel 6.18, THP ``enabled`` and ``defrag`` both ``madvise``):
filling 2.16 GB of fresh memory took 5.4-5.9 s with the advice and 1.1-3.4 s without; converting
MNIST's training images to float64, 0.8-1.1 s and 0.2 s. It changes no value, only page sizes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ENV = "NUMPY_MADVISE_HUGEPAGE"
THP_DIR = Path("/sys/kernel/mm/transparent_hugepage")
#: defrag modes in which a fault in an MADV_HUGEPAGE region waits for reclaim and compaction
STALLING_DEFRAG = ("always", "madvise", "defer+madvise")


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


def configure(environ=os.environ, root: Path | None = None) -> bool:
    """Turn numpy's huge-page advice off for this process and the workers it starts (they inherit
    ``environ``) when it makes faults wait here and the user has not set ``NUMPY_MADVISE_HUGEPAGE``;
    returns whether it did."""
    if ENV in environ or not advice_waits(thp_modes(root)):
        return False
    environ[ENV] = "0"
    if environ is os.environ:
        _numpy_switch(False)
    return True


def state() -> bool | None:
    """Whether this process's numpy advises huge pages (None when numpy cannot tell)."""
    import numpy as np

    getter = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "_get_madvise_hugepage", None)
    return bool(getter()) if getter is not None else None


__all__ = ["ENV", "STALLING_DEFRAG", "selected", "thp_modes", "advice_waits", "configure", "state"]
