"""The engine's numbers are the same bits on every x86-64 machine and at every thread count.

``tests/tools/machine_probe.py`` trains every engine family on sonar's non-integer features and
prints a digest of every score, coefficient, threshold, test score and error count. It runs here
in fresh processes under the environments of ``perceptron_lab.cli.spread``'s variants: this CPU's
own code (``host``), an AVX2 CPU's (``avx2``: numba compiled for Haswell with Haswell's features,
OpenBLAS's Haswell kernels, numpy without AVX-512 loops), the x86-64 baseline (``generic``: no
AVX, no FMA, glibc's math without its FMA builds) and two threads; the AVX2 one runs with the
slow tests. Any sum left to the machine
(a BLAS product, a reassociated or fused loop, a vectorized transcendental) gives another digest.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perceptron_lab.cli.spread import variant_env

ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "tests" / "tools" / "machine_probe.py"
# CI compares this CPU's code at one and two threads with the x86-64 baseline (no AVX, no FMA: the
# farthest from the host); the AVX2 target, a fourth compilation of every engine, runs with the
# slow tests (make test-full)
VARIANTS = ("host", "generic", "host+threads2")
SLOW_VARIANTS = ("avx2",)


def _digest(variant: str) -> str:
    env = variant_env(variant)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, str(PROBE), "-v"], env=env, capture_output=True, text=True, cwd=ROOT,
                         timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout


def _same_bits(variants):
    out = {v: _digest(v) for v in variants}
    first = out[variants[0]]
    moved = {v: sorted(set(o.splitlines()[1:]) - set(first.splitlines()[1:])) for v, o in out.items()}
    assert all(o.splitlines()[0] == first.splitlines()[0] for o in out.values()), moved


def test_every_variant_gives_the_same_bits():
    _same_bits(VARIANTS)


@pytest.mark.slow
def test_the_avx2_target_gives_the_same_bits():
    _same_bits(("host", *SLOW_VARIANTS))
