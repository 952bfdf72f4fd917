"""A paper is one folder: with ``perceptron_lab/papers/kw2007/`` deleted from a copy of the
package, the rest imports and runs, a config naming that paper's table is a one-line config
error, and that paper's tests are skipped rather than failing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import perceptron_lab

PACKAGE = Path(perceptron_lab.__file__).resolve().parent
TESTS = Path(__file__).resolve().parents[1]

PROBE = r"""
import importlib, pkgutil, sys
import perceptron_lab
from perceptron_lab.config import plugins
assert perceptron_lab.__file__.startswith(sys.argv[1]), perceptron_lab.__file__
print("names", ",".join(plugins.names()))
failed = []
for m in pkgutil.walk_packages(perceptron_lab.__path__, "perceptron_lab."):
    try:
        importlib.import_module(m.name)
    except Exception as exc:
        failed.append(f"{m.name}: {exc!r}")
print("import failures", len(failed), *failed, sep="\n")
from perceptron_lab.config.load import config_from_dict
from perceptron_lab.errors import ConfigError
try:
    config_from_dict({"paper": "kw2007/table5", "dataset": {"name": "sonar"}})
except ConfigError as exc:
    print("config error", exc)
from perceptron_lab.report.tables import collect
print("report ok", type(collect).__name__)
"""


@pytest.fixture(scope="module")
def without_kw2007(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("copy")
    # numba's cache files come along (copytree keeps the sources' times, which the cache checks),
    # so the copy compiles only what the package has not compiled yet; bytecode does not
    shutil.copytree(PACKAGE, root / "perceptron_lab", ignore=shutil.ignore_patterns("*.pyc"))
    shutil.rmtree(root / "perceptron_lab" / "papers" / "kw2007")
    return root


def _run(root: Path, *args, cwd=None) -> subprocess.CompletedProcess:
    # the copy's own numba cache (next to its sources), not a cache folder the caller may have set
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = str(root)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


def test_the_rest_imports_and_the_paper_is_gone(without_kw2007, tmp_path):
    r = _run(without_kw2007, "-c", PROBE, str(without_kw2007), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert "names fs1999,gentile2001" in out
    assert "import failures" in out and out[out.index("import failures") + 1] == "0", r.stdout
    (err,) = [line for line in out if line.startswith("config error")]
    assert "paper must be a paper's table" in err and "got 'kw2007/table5'" in err and "kw2007/" not in err.split("got")[0]
    assert "report ok function" in out


def test_a_run_without_a_paper_still_runs(without_kw2007, tmp_path):
    """The packaged quickstart (sonar, 10-fold CV, no paper) runs end to end on the copy."""
    r = _run(without_kw2007, "-m", "perceptron_lab.cli.main", "run", "--out", str(tmp_path / "out"), "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "out" / "results.csv").stat().st_size > 0


def test_the_removed_papers_tests_are_skipped(without_kw2007, tmp_path):
    """Its test module skips as a whole; the other papers' marked tests still run."""
    r = _run(without_kw2007, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "--rootdir", str(TESTS.parent),
             str(TESTS / "papers" / "kw2007" / "test_kw.py"), cwd=tmp_path)
    assert r.returncode == 5, r.stdout[-2000:]  # pytest's "no test ran": the module skipped as a whole
    assert "1 skipped" in r.stdout and "passed" not in r.stdout and "failed" not in r.stdout, r.stdout[-2000:]
    r = _run(without_kw2007, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "--rootdir", str(TESTS.parent),
             str(TESTS / "engine" / "test_alma.py"), "-k", "gentile_table1_cells_and_tolerance", cwd=tmp_path)
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout[-2000:]
