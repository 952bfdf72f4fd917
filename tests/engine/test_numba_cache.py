"""numba's on-disk cache never serves code older than the source (perceptron_lab.engine.numba_cache).

numba checks only the defining file's timestamp and size; a jitted callee inlined from another
module (``ordered.dot`` into ``linear._dot``) is not checked, so after a change to ``ordered.py``
alone the in-tree cache kept computing with the old callee."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "perceptron_lab"
PROBE = ("import numpy as np\n"
         "from perceptron_lab.engine.linear import _dot\n"
         "print(_dot(np.arange(3.0), np.ones(3)))\n")


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    shutil.copytree(PACKAGE, root / "perceptron_lab", ignore=shutil.ignore_patterns("__pycache__", "*.nb*"))
    return root


def _run(root: Path, cache: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONDONTWRITEBYTECODE")}
    env.update(PYTHONPATH=str(root), XDG_CACHE_HOME=str(cache), NUMBA_DISABLE_JIT="0")
    r = subprocess.run([sys.executable, "-c", PROBE], cwd=root, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_a_change_to_an_inlined_callee_is_compiled_again(tmp_path):
    root, cache = _copy(tmp_path), tmp_path / "cache"
    assert _run(root, cache) == "3.0"
    assert _run(root, cache) == "3.0"           # from the cache
    ordered = root / "perceptron_lab" / "engine" / "ordered.py"
    last = "    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))\n"
    text = ordered.read_text()
    assert text.count(last) == 1
    ordered.write_text(text.replace(last, last.rstrip("\n") + " + 1.0\n"))
    assert _run(root, cache) == "4.0"           # linear.py is unchanged; its cached _dot is not used
    folders = sorted(p.name for p in (cache / "perceptron_lab" / "numba").iterdir())
    assert len(folders) == 2 and all(f.startswith("plab-") for f in folders)


def test_the_fingerprint_follows_compiled_in_code_only(tmp_path):
    from perceptron_lab.engine import numba_cache

    root = _copy(tmp_path) / "perceptron_lab"
    base = numba_cache.code_fingerprint(root)
    assert base == numba_cache.code_fingerprint(PACKAGE) == numba_cache.FINGERPRINT
    cli = root / "cli" / "main.py"
    cli.write_text(cli.read_text() + "\n# a comment\n")
    assert numba_cache.code_fingerprint(root) == base      # the command line is never compiled in
    for name in ("constants.py", "model/scoring.py", "engine/seeds.py"):
        f = root / name
        f.write_text(f.read_text() + "\n# a comment\n")
        changed = numba_cache.code_fingerprint(root)
        assert changed != base, name
        base = changed


def test_the_engine_compiles_into_the_keyed_folder():
    from numba.core import config

    from perceptron_lab.engine import numba_cache

    assert config.CACHE_DIR == str(numba_cache.FOLDER)
    assert numba_cache.FOLDER.name == f"plab-{numba_cache.FINGERPRINT}"
