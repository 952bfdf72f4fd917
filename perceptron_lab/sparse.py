"""Whether an array is a SciPy sparse matrix, without importing :mod:`scipy.sparse`.

A sparse matrix can exist only once :mod:`scipy.sparse` has been imported, so until then nothing
is sparse. Checking that way keeps the import of :mod:`scipy.sparse`, one of the larger ones a run
makes, out of the runs whose data are dense (the quickstart's among them). A module that builds
sparse matrices imports :mod:`scipy.sparse` itself, where it builds them.
"""

from __future__ import annotations

import sys


def issparse(x) -> bool:
    """``scipy.sparse.issparse(x)``, False while :mod:`scipy.sparse` is not imported."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(x)


__all__ = ["issparse"]
