"""Shape rules of the package's code, checked on its source with ``ast``."""

import ast
import importlib
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
    assert {"engine/perceptron.py", "engine/budget.py", "scoring.py", "predict.py"} <= names


def test_no_function_takes_more_than_16_parameters():
    assert long_parameter_lists() == []


def test_the_count_sees_every_kind_of_parameter():
    tree = ast.parse("def f(a, /, b, *c, d, e=1, **g):\n    pass\n")
    assert n_parameters(tree.body[0]) == 6


def test_only_an_estimators_init_is_exempt():
    from perceptron_lab import estimators

    est = PACKAGE / "estimators.py"
    init = ast.parse("def __init__(self):\n    pass\n").body[0]
    assert is_estimator_init(est, init, "VotedPerceptron")
    assert issubclass(estimators.VotedPerceptron, BaseEstimator)
    assert not is_estimator_init(est, init, None)
    other = ast.parse("def fit(self):\n    pass\n").body[0]
    assert not is_estimator_init(est, other, "VotedPerceptron")
