"""The wheel, installed outside the checkout, works as the checkout does.

``python -m build`` makes the sdist and, from it, the wheel; the wheel is installed with
``--no-deps`` into a fresh virtual environment in a temporary folder (never under the checkout),
and every command runs there with that folder as its working directory. The dependencies are
those of the environment running the tests, reached through one ``.pth`` line (so no download is
needed; ``.ci/lowest`` installs them from the index at their lowest pins): the package itself must
come from the wheel, which the first test asserts. The quickstart, an estimator example and
``plab report`` run there, and the quickstart's ``results.csv`` and the example's output must be the
same as the checkout's. Tools that regenerate the repository's own files (``make reproduce``,
``make golden``, ``make docs``) refuse an installed copy with one ``plab: error:`` line and write
nothing.

About 40 s on two cores (the build takes a few seconds and needs the package index for
setuptools, as ``pip install`` does); the module runs in the fast suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

ESTIMATOR_EXAMPLE = """
from sklearn.model_selection import StratifiedKFold, cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from perceptron_lab import ALMA, MarginPerceptron, VotedPerceptron
from perceptron_lab.datasets import load_dataset
sonar = load_dataset("sonar")
X, y = sonar.X_train, [sonar.classes[i] for i in sonar.y_train]
X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
clf = VotedPerceptron(kernel="poly", degree=3, scale=10.0, epochs=10, random_state=0).fit(X_tr, y_tr)
print("".join(clf.predict(X_te)), clf.n_mistakes_, len(clf.support_))
print({rule: clf.set_params(rule=rule).score(X_te, y_te) for rule in ("vote", "avg", "last")})
pipe = make_pipeline(StandardScaler(), VotedPerceptron(kernel="poly", degree=4, scale=60.0, epochs=10, random_state=0))
print(cross_val_score(pipe, X, y, cv=StratifiedKFold(5, shuffle=True, random_state=0)).tolist())
print(MarginPerceptron(tau=0.1, epochs=10, random_state=0).fit(X_tr, y_tr).score(X_te, y_te))
print(ALMA(p=2.0, alpha=0.9, epochs=10, random_state=0).fit(X_tr, y_tr).score(X_te, y_te))
"""


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PLAB_", "VIRTUAL_ENV"))}
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv, bin folder, work folder, wheel) of a fresh environment holding only the wheel."""
    pytest.importorskip("build", reason="the wheel test needs `build` (the test extras install it)")
    base = tmp_path_factory.mktemp("wheel")
    assert not base.resolve().is_relative_to(ROOT)
    dist = base / "dist"
    out = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    wheels = sorted(dist.glob("perceptron_lab-*.whl"))
    assert len(wheels) == 1 and len(list(dist.glob("perceptron_lab-*.tar.gz"))) == 1
    # the venv lies inside a git repository of its own: the installed copy must not take its commit
    subprocess.run(["git", "init", "-q", str(base)], check=True)
    (base / "README").write_text("someone else's project\n")
    subprocess.run(["git", "-C", str(base), "-c", "user.name=t", "-c", "user.email=t@t", "add", "README"], check=True)
    subprocess.run(
        ["git", "-C", str(base), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x"], check=True
    )
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    bindir = venv / "bin"
    py = bindir / "python"
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib, "_test_dependencies.pth").write_text("".join(f"{d}\n" for d in sorted(deps)))
    out = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheels[0])],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    work = base / "work"
    work.mkdir()
    return venv, bindir, work, wheels[0]


def _run(installed, *args, timeout=600):
    _, bindir, work, _ = installed
    env = _env()
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(list(args), cwd=work, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_package_comes_from_the_wheel(installed):
    venv, bindir, _, wheel = installed
    out = _run(installed, str(bindir / "python"), "-c", "import perceptron_lab; print(perceptron_lab.__file__)")
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).resolve().is_relative_to(venv.resolve())
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    for data in (
        "perceptron_lab/py.typed",
        "perceptron_lab/configs/quickstart.yaml",
        "perceptron_lab/templates/index.html",
        "perceptron_lab/papers/REFERENCE.md",
    ):
        assert data in names, data
    assert any(n.startswith("perceptron_lab/datasets/embedded/") for n in names)
    assert not [n for n in names if n.startswith(("tests/", "results/", "docs/"))]


def test_quickstart_gives_the_checkouts_results(installed, tmp_path):
    _, bindir, work, _ = installed
    out = _run(installed, str(bindir / "plab"), "run")
    assert out.returncode == 0, out.stderr[-3000:]
    ours = work / "runs" / "quickstart" / "results.csv"
    assert ours.is_file()
    # the same run from the checkout (the interpreter running these tests)
    ref = subprocess.run(
        [sys.executable, "-m", "perceptron_lab.cli.main", "run", "--out", str(tmp_path / "ck")],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ref.returncode == 0, ref.stderr[-3000:]
    assert ours.read_bytes() == (tmp_path / "ck" / "results.csv").read_bytes()
    import json

    info = json.loads((work / "runs" / "quickstart" / "run.json").read_text())
    assert info["git_revision"] is None, "an installed copy took the commit of the repository around it"


def test_estimator_example_gives_the_checkouts_output(installed, tmp_path):
    _, bindir, _, _ = installed
    out = _run(installed, str(bindir / "python"), "-c", ESTIMATOR_EXAMPLE)
    assert out.returncode == 0, out.stderr[-3000:]
    ref = subprocess.run(
        [sys.executable, "-c", ESTIMATOR_EXAMPLE], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600
    )
    assert ref.returncode == 0, ref.stderr[-3000:]
    assert out.stdout == ref.stdout and len(out.stdout.splitlines()) == 5


def test_report_of_the_quickstart(installed):
    _, bindir, work, _ = installed
    if not (work / "runs" / "quickstart" / "run.json").exists():
        assert _run(installed, str(bindir / "plab"), "run").returncode == 0
    out = _run(installed, str(bindir / "plab"), "report", "runs", "--out", "report")
    assert out.returncode == 0, out.stderr[-3000:]
    md = (work / "report" / "report.md").read_text()
    assert "quickstart" in md
    assert (work / "report" / "index.html").stat().st_size > 0


@pytest.mark.parametrize(
    "module", ["perceptron_lab.cli.reproduce", "perceptron_lab.report.golden", "perceptron_lab.cli.docs_pages"]
)
def test_checkout_tools_refuse_an_installed_copy(installed, module):
    venv, bindir, work, _ = installed
    before = sorted(p for p in venv.rglob("*") if "__pycache__" not in p.parts)
    out = _run(installed, str(bindir / "python"), "-m", module)
    assert out.returncode == 2, (out.stdout[-2000:], out.stderr[-2000:])
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("plab: error:") and "clone" in lines[0], out.stderr
    after = sorted(p for p in venv.rglob("*") if "__pycache__" not in p.parts)
    assert after == before
    assert not (work / "results").exists()


@pytest.mark.xfail(
    strict=True,
    reason="model/exactness.py reads results/spread/ from the source tree, so an "
    "installed copy knows no measured spread (issue 56: to ship inside the package)",
)
def test_installed_copy_knows_the_measured_spreads(installed, tmp_path):
    _, bindir, _, _ = installed
    code = (
        "from perceptron_lab.model.exactness import measured_spread; "
        "print(measured_spread('configs/golden/kw2007_sonar.yaml'))"
    )
    ref = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(), capture_output=True, text=True)
    assert ref.returncode == 0 and ref.stdout.strip() != "None", ref.stderr
    out = _run(installed, str(bindir / "python"), "-c", code)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ref.stdout
