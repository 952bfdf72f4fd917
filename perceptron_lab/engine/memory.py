"""Where the engine puts the large arrays it writes once: memory placement, not process settings.

numpy advises transparent huge pages for its large arrays (``perceptron_lab.run.runtime`` says why plab
leaves that advice alone for the process). An array written once into memory the process has not
touched -- the kernel column cache, a dataset's features as loaded, a run's features in its dtype
and in training order -- is mapped here without the advice: where the kernel makes an advised page
fault wait for compaction (THP ``defrag`` mode ``madvise``) and a virtual machine's host maps guest
memory lazily, that first write is what the advice slows. The values are numpy's own, bit for bit.
"""

from __future__ import annotations

import mmap

#: Arrays smaller than this come from numpy as usual (numpy advises huge pages from 4 MB on).
COLD_MIN_BYTES = 4 << 20
#: Rows gathered at a time by :func:`cold_take` (a small temporary, reused).
_TAKE_ROWS = 4096


def cold_array(shape, dtype, zero: bool = True):
    """A zero-filled C-contiguous array in a private anonymous memory map of its own: the kernel's
    default pages, without numpy's huge-page advice; unmapped when the array is freed. For an array
    written once into memory the process has not touched, whose first write the advice slows where
    the kernel compacts memory on an advised fault and the host maps guest memory lazily (see the
    module's docstring). Arrays under :data:`COLD_MIN_BYTES` (or of
    zero size) come from numpy; ``zero=False`` then leaves them uninitialized."""
    import numpy as np

    dtype = np.dtype(dtype)
    shape = tuple(int(d) for d in np.atleast_1d(shape))
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes < COLD_MIN_BYTES:
        return np.zeros(shape, dtype=dtype) if zero else np.empty(shape, dtype=dtype)
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
    buf = mmap.mmap(-1, nbytes, flags=flags) if flags else mmap.mmap(-1, nbytes)
    return np.frombuffer(buf, dtype=dtype).reshape(shape)


def cold_copy(a, dtype=None):
    """``np.ascontiguousarray(a, dtype)`` (the same values) in a :func:`cold_array` when it makes a
    copy; ``a`` itself when it is already C-contiguous of that dtype."""
    import numpy as np

    a = np.asarray(a)
    dtype = a.dtype if dtype is None else np.dtype(dtype)
    if a.dtype == dtype and a.flags.c_contiguous:
        return a
    out = cold_array(a.shape, dtype, zero=False)
    np.copyto(out, a, casting="unsafe")
    return out


def cold_take(a, rows, dtype=None):
    """``a[rows]`` cast to ``dtype`` (the same values as ``a[rows].astype(dtype)``) in a
    :func:`cold_array`, gathered a block of rows at a time."""
    import numpy as np

    a = np.asarray(a)
    rows = np.asarray(rows, dtype=np.int64)
    dtype = a.dtype if dtype is None else np.dtype(dtype)
    out = cold_array((rows.size,) + a.shape[1:], dtype, zero=False)
    for s in range(0, rows.size, _TAKE_ROWS):
        out[s:s + _TAKE_ROWS] = a[rows[s:s + _TAKE_ROWS]]
    return out



__all__ = ["COLD_MIN_BYTES", "cold_array", "cold_copy", "cold_take"]
