"""Shape rules of the package's code, checked on its source with ``ast``."""

import ast
import importlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from sklearn.base import BaseEstimator

import perceptron_lab

PACKAGE = Path(perceptron_lab.__file__).parent

#: A function takes at most this many parameters (positional, keyword-only, ``*args`` and
#: ``**kwargs`` each count one). Longer lists go in records (named tuples, dataclasses), where two
#: arguments of the same type cannot be swapped without a word.
MAX_PARAMETERS = 16


def n_parameters(fn: ast.FunctionDef) -> int:
    a = fn.args
    return (len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None)
            + (a.kwarg is not None))


def functions(tree):
    """(function node, name of the class it is defined in or None) for every function of a module."""
    def walk(node, cls):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield child, cls
                yield from walk(child, None)
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, child.name)
            else:
                yield from walk(child, cls)
    yield from walk(tree, None)


def is_estimator_init(path: Path, fn, cls) -> bool:
    """An estimator's ``__init__``: its keyword hyperparameters are scikit-learn's convention."""
    if fn.name != "__init__" or cls is None:
        return False
    module = ".".join(("perceptron_lab",) + path.relative_to(PACKAGE).with_suffix("").parts)
    obj = getattr(importlib.import_module(module), cls, None)
    return isinstance(obj, type) and issubclass(obj, BaseEstimator)


def long_parameter_lists():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for fn, cls in functions(tree):
            k = n_parameters(fn)
            if k > MAX_PARAMETERS and not is_estimator_init(path, fn, cls):
                found.append(f"{path.relative_to(PACKAGE)}:{fn.lineno} {fn.name} takes {k}")
    return found


def test_every_module_is_counted():
    names = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}
    assert {"engine/perceptron.py", "engine/budget.py", "model/scoring.py", "model/predict.py"} <= names


def test_no_function_takes_more_than_16_parameters():
    assert long_parameter_lists() == []


def test_the_count_sees_every_kind_of_parameter():
    tree = ast.parse("def f(a, /, b, *c, d, e=1, **g):\n    pass\n")
    assert n_parameters(tree.body[0]) == 6


def test_only_an_estimators_init_is_exempt():
    from perceptron_lab.estimators import perceptron as estimators

    est = PACKAGE / "estimators" / "perceptron.py"
    init = ast.parse("def __init__(self):\n    pass\n").body[0]
    assert is_estimator_init(est, init, "VotedPerceptron")
    assert issubclass(estimators.VotedPerceptron, BaseEstimator)
    assert not is_estimator_init(est, init, None)
    other = ast.parse("def fit(self):\n    pass\n").body[0]
    assert not is_estimator_init(est, other, "VotedPerceptron")


# --------------------------------------------------------------------------- the layers contract

def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    """Run ``lint-imports`` on a copy of the package under ``root`` (found first on the path)."""
    exe = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(exe), "--no-cache", "--config", str(root / "pyproject.toml")], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300)


def _copy_package(tmp_path: Path) -> Path:
    shutil.copytree(PACKAGE, tmp_path / "perceptron_lab", ignore=shutil.ignore_patterns("__pycache__", "*.nb*"))
    shutil.copy(PACKAGE.parent / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_layers_cover_every_module_of_the_package():
    """Every package and module directly under perceptron_lab/ is one of the contract's layers
    (or package data), so that no module escapes the layers by being new."""
    text = (PACKAGE.parent / "pyproject.toml").read_text()
    contract = next(c for c in tomllib.loads(text)["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    assert contract.get("exhaustive") is True
    named = {m.strip() for layer in contract["layers"] for m in layer.split("|")}
    children = {p.stem for p in PACKAGE.iterdir()
                if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").exists()}
    assert children == named


def test_a_new_module_outside_the_layers_breaks_the_contract(tmp_path):
    root = _copy_package(tmp_path)
    assert _lint_imports(root).returncode == 0, "the contract holds on the package as it is"
    (root / "perceptron_lab" / "helpers.py").write_text("X = 1\n")
    out = _lint_imports(root)
    assert out.returncode != 0
    assert "perceptron_lab.helpers" in out.stdout


def test_an_import_up_the_layers_breaks_the_contract(tmp_path):
    root = _copy_package(tmp_path)
    kernels = root / "perceptron_lab" / "engine" / "kernels.py"
    kernels.write_text(kernels.read_text() + "\nfrom perceptron_lab.run import store  # noqa: E402,F401\n")
    out = _lint_imports(root)
    assert out.returncode != 0
    assert "perceptron_lab.engine.kernels -> perceptron_lab.run.store" in out.stdout
