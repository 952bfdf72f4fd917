"""The thread counts of numba and BLAS around the engine's jitted calls: one thread for a small
training set (:func:`threads_for`), one BLAS thread for a pool worker's life
(:func:`pin_blas_one_thread`). They change how the cores are used, never a value. numba and
threadpoolctl are imported only when called, so that importing this module sets nothing.
"""

from __future__ import annotations

import contextlib
import functools


@functools.lru_cache(maxsize=1)
def _blas_controller():
    # numpy first: its BLAS is loaded with it, and a controller only sees the libraries loaded
    # before it (a pool's worker sets its limits before anything has imported numpy)
    import numpy  # noqa: F401
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def blas_one_thread():
    """Limit BLAS to one thread now; returns the limiter, a context manager that restores the
    earlier limit on exit (kept unentered, the limit holds for the process's life). A no-op
    without threadpoolctl (which comes with scikit-learn).

    The loaded BLAS libraries are looked up once per process (a lookup reads every loaded
    library's file, which can cost more than a small unit's training); libraries loaded later are
    not limited (numpy's always is: it is imported first)."""
    try:
        controller = _blas_controller()
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")


@contextlib.contextmanager
def threads_for(entries: int):
    """Run the body on one numba and BLAS thread when the training set is small.

    Small problems (at most ``SINGLE_THREAD_MAX_ENTRIES`` examples x features) lose more to the
    thread team's start-up on every jitted call than they gain from a second core; results are
    the same on any number of threads.
    """
    from perceptron_lab.constants import SINGLE_THREAD_MAX_ENTRIES

    if entries > SINGLE_THREAD_MAX_ENTRIES:
        yield
        return
    import numba

    before = numba.get_num_threads()
    if before == 1 and _PINNED["blas"]:
        yield   # a worker on one thread for its life: nothing to set or restore
        return
    numba.set_num_threads(1)
    try:
        with blas_one_thread():
            yield
    finally:
        numba.set_num_threads(before)


#: Whether :func:`pin_blas_one_thread` has limited this process's BLAS to one thread for its life.
_PINNED = {"blas": False}


def pin_blas_one_thread():
    """:func:`blas_one_thread` for the rest of the process's life (a pool's worker): the limiter,
    kept unentered; :func:`threads_for` then leaves BLAS alone."""
    limiter = blas_one_thread()
    _PINNED["blas"] = True
    return limiter


__all__ = ["blas_one_thread", "pin_blas_one_thread", "threads_for"]
