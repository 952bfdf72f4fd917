"""Kernel columns kept between the runs of a process that train on the same examples.

A dual-form run caches the kernel column ``K(x_j, .)`` of each support vector ``x_j`` against its
whole training set (:func:`perceptron_lab.engine.perceptron.train`). Runs on the same training set
with the same kernel -- the permutations of Freund & Schapire's tables, Gentile's three values of
alpha, the points of a parameter grid -- need many of the same columns, whatever their order: a
column depends on the example and the training set only. A :class:`ColumnStore` holds the columns
computed so far in this process; a run takes the ones it needs from it and computes only the
others.

The numbers do not change. Each run still decides when its support vectors' columns enter its
scores exactly as it would alone; only where a column's values come from changes. A row of a
kernel block is the same whatever other rows are computed with it (BLAS computes each entry of a
product with the same sequence of operations whatever the number of rows; the kernel function is
applied entry by entry), and the store checks this once per run on the first column it hands out,
by computing that column again alone: a difference turns sharing off for the rest of the process
before any shared column has been used by the run.

Memory: the store's columns count against the run's ``cache_limit_gb`` like its own cache, and
besides its own columns a run keeps at most :func:`keep_gb` gigabytes of others' in it (default
:data:`KEEP_GB`; the environment variable ``PLAB_SHARED_COLUMNS_GB`` sets another amount): when a
run needs room beyond its cache limit, or the others' columns it has not used pass that amount,
the earliest of them within it are kept and the rest dropped. A process thus holds at most its
run's own columns plus that amount. The amount trades memory for time: the more columns are
kept, the fewer a later run computes itself (with 0, the default, a run keeps none of the others'
columns once it computes one of its own; ``make reproduce`` keeps
:data:`perceptron_lab.cli.reproduce.KEEP_GB` in each worker).

Pages: the store's array (and the cache of a run that does not share) is an anonymous memory map
of its own (:func:`perceptron_lab.engine.memory.cold_array`), without the transparent-huge-page advice
numpy gives its large arrays. Each column is written once, into memory the process has not touched
before, and then read a row at a time; where the kernel makes advised page faults wait for
compaction (THP ``defrag`` mode ``madvise``, its default) and the host of a virtual machine maps
memory lazily, the advice slows that first write. The features a run copies once (in its dtype,
in training order) are mapped the same way; numpy's other arrays keep its advice, which serves
arrays allocated and freed again and again (measurements: benchmarks/NOTES.md).
"""

from __future__ import annotations

import hashlib
import math
import os
import threading

import numpy as np

from perceptron_lab.engine.memory import cold_array
from perceptron_lab.errors import ConfigError

#: Gigabytes of columns a run keeps in the store beyond its own (the others' it has not used),
#: unless ``PLAB_SHARED_COLUMNS_GB`` says otherwise (:func:`keep_gb`). None by default, so that the
#: headline run (``configs/mnist_d4.yaml``) fits a laptop's memory: its own columns are most of
#: its peak, and others' kept on top of them raised the peak without a measurable gain in time
#: (bench case 13; benchmarks/NOTES.md). A run still takes every column the store holds until it
#: computes one of its own.
KEEP_GB = 0.0
#: The environment variable that sets :func:`keep_gb`.
KEEP_ENV = "PLAB_SHARED_COLUMNS_GB"

_STORE: dict = {}   # the process's one store: {"store": ColumnStore}
_STATE = {"enabled": True}


def keep_gb() -> float:
    """Gigabytes of other runs' columns a run keeps in the store: ``PLAB_SHARED_COLUMNS_GB`` when
    it is set (a number >= 0), else :data:`KEEP_GB`."""
    text = os.environ.get(KEEP_ENV, "").strip()
    if not text:
        return float(KEEP_GB)
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{KEEP_ENV} must be a number of gigabytes >= 0, got {text!r}: set it to e.g. "
                          f"{KEEP_ENV}={KEEP_GB:g}, or unset it for that default")
    return value


def enabled() -> bool:
    return _STATE["enabled"]


def set_enabled(on: bool) -> None:
    """Turn sharing on or off for this process (tests compare runs with and without it)."""
    _STATE["enabled"] = bool(on)
    if not on:
        _STORE.clear()


def release() -> None:
    """Free the store's columns (a process about to run something else)."""
    _STORE.clear()


def digest(X: np.ndarray) -> str:
    """SHA-256 of an array's values (its bytes in C order)."""
    return hashlib.sha256(np.ascontiguousarray(X).view(np.uint8).ravel()).hexdigest()


class Digest:
    """:func:`digest` of ``X`` computed on a thread of its own (the hash releases the interpreter);
    :meth:`result` waits for it. ``X`` must not change meanwhile."""

    def __init__(self, X: np.ndarray):
        self._out: list = []
        self._thread = threading.Thread(target=self._run, args=(X,), name="plab-digest", daemon=True)
        self._thread.start()

    def _run(self, X) -> None:
        try:
            self._out.append(digest(X))
        except BaseException as exc:   # noqa: BLE001 -- raised again by result()
            self._out.append(exc)

    def result(self) -> str:
        self._thread.join()
        if isinstance(self._out[0], BaseException):
            raise self._out[0]
        return self._out[0]


def data_key(X: np.ndarray, kernel_params: tuple, normalized: bool, digest_: str | None = None) -> tuple:
    """What a column depends on: the training set's values, the kernel and its normalization
    (``digest_``: the :func:`digest` of ``X``, when known)."""
    h = digest(X) if digest_ is None else digest_
    return (X.shape, X.dtype.str, h, tuple(kernel_params), bool(normalized))


class ColumnStore:
    """Columns ``K[r]`` (``r = row_of[j]``) of training examples ``j`` against all ``n`` of them."""

    def __init__(self, key: tuple, n: int, cap: int, dtype):
        self.key, self.n, self.cap = key, n, cap
        self.K = cold_array((max(cap, 1), n), dtype)
        self.row_of = np.full(n, -1, dtype=np.int64)
        self.used = 0
        self.checked = False   # the first shared column of the current run was checked

    def make_room(self, k: int, slot_of: np.ndarray) -> bool:
        """Room for ``k`` more columns. When they would pass the capacity, or the columns the
        current run does not use (its rows are ``slot_of``'s non-negative entries) fill more than
        :func:`keep_gb`, the run's columns are kept with the earliest of the others that fit
        within that amount and the capacity, the rest are dropped, and the rows renumbered in
        place (in their order). False if even then there is no room."""
        mine = slot_of >= 0
        rows = slot_of[mine]
        keep = int(keep_gb() * 1e9 // (self.n * self.K.itemsize))
        if self.used + k <= self.cap and self.used - rows.size <= keep:
            return True
        # the others' rows, earliest first, with the example each holds (not one of the run's)
        held = np.flatnonzero(self.row_of >= 0)
        ex_of_row = np.full(self.used, -1, dtype=np.int64)
        ex_of_row[self.row_of[held]] = held
        is_mine = np.zeros(self.used, dtype=bool)
        is_mine[rows] = True
        others = np.flatnonzero(~is_mine & (ex_of_row >= 0))
        others = others[~mine[ex_of_row[others]]]
        room = max(0, min(keep, self.cap - k - rows.size)) if enabled() else 0
        kept = np.sort(np.concatenate([rows, others[:room]]))
        new_of_old = np.full(self.used, -1, dtype=np.int64)
        new_of_old[kept] = np.arange(kept.size)
        for new, old in enumerate(kept.tolist()):   # ascending: a row only ever moves down
            if old != new:
                self.K[new] = self.K[old]
        slot_of[mine] = new_of_old[rows]
        self.row_of[:] = -1
        self.row_of[np.flatnonzero(mine)] = slot_of[mine]
        kept_others = others[:room]
        self.row_of[ex_of_row[kept_others]] = new_of_old[kept_others]
        self.used = int(kept.size)
        return self.used + k <= self.cap


def store_for(X: np.ndarray, kernel_params: tuple, normalized: bool, cap: int, dtype,
              digest: str | None = None) -> ColumnStore:
    """The process's store for this training set and kernel (a new, empty one if it holds another
    set's columns). ``digest``: the :func:`digest` of ``X``, when known."""
    keep_gb()   # a bad PLAB_SHARED_COLUMNS_GB stops the run before it trains
    key = data_key(X, kernel_params, normalized, digest)
    st = _STORE.get("store")
    if st is None or st.key != key or st.cap != cap or st.K.dtype != np.dtype(dtype):
        _STORE.pop("store", None)    # free the old columns before allocating
        st = ColumnStore(key, X.shape[0], cap, dtype)
        _STORE["store"] = st
    st.checked = False
    return st
