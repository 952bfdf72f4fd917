"""Where numba keeps the compiled engine: a folder named by a fingerprint of the code it compiles.

numba's own on-disk cache (``cache=True``) trusts a compiled function while the timestamp and size
of the file that defines it are unchanged. It does not look at what the function calls: a jitted
callee from another module (``ordered.dot`` in every engine) is compiled into the caller, and so is
every global the code reads. After a change to ``ordered.py`` alone, the callers' cached machine
code still holds the old callee, and a run computes with code that no longer exists. Here the
folder is keyed by the content of every module whose code or globals can be compiled in (the engine,
the model, the package's bottom layer, any module that mentions numba) and by numba's version, so
any change to them is a cache miss and nothing stale can be loaded.

The folder is ``$NUMBA_CACHE_DIR/plab-<fingerprint>`` when ``NUMBA_CACHE_DIR`` is set, else
``$XDG_CACHE_HOME/perceptron_lab/numba/plab-<fingerprint>`` (``~/.cache`` when that is unset).
Importing :mod:`perceptron_lab.engine` sets it before any function is compiled; ``make clean``
removes the folders.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba
from numba.core import config as numba_settings

PACKAGE = Path(__file__).resolve().parents[1]
#: the packages and modules whose code or globals jitted code can compile in (the layers the jitted
#: modules import), besides any module that mentions numba
COMPILED_IN = ("engine", "model", "errors.py", "constants.py", "sparse.py")


def code_fingerprint(package: Path = PACKAGE) -> str:
    """sha256 (16 hex digits) of numba's version and the path and bytes of every module that can be
    compiled into the engine, in path order."""
    h = hashlib.sha256(numba.__version__.encode() + b"\0")
    for p in sorted(package.rglob("*.py")):
        rel = p.relative_to(package).as_posix()
        data = p.read_bytes()
        if rel.split("/")[0] in COMPILED_IN or b"numba" in data:
            h.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()[:16]


def cache_folder(fingerprint: str) -> Path:
    base = os.environ.get("NUMBA_CACHE_DIR")
    if base:
        return Path(base).resolve() / f"plab-{fingerprint}"
    home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(home) / "perceptron_lab" / "numba" / f"plab-{fingerprint}"


FINGERPRINT = code_fingerprint()
FOLDER = cache_folder(FINGERPRINT)
# numba picks a function's cache folder when it is decorated: this runs before the engine's modules
numba_settings.CACHE_DIR = str(FOLDER)
