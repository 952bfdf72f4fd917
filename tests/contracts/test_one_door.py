"""One door to the engine: a config is read for the last time where the plan is made.

* No module under ``perceptron_lab/engine/`` names or reads a config (checked on the source).
* ``run/units.py`` reads no config: every part of real plans runs with the plan's config and
  per-point configs replaced by objects that fail on any attribute read, and gives the same rows.
* No estimator builds a stand-in config; ``estimators`` never imports ``run`` (also an
  import-linter contract in pyproject.toml, which CI runs).
* Every algorithm name of the config schema has exactly one row in the engine's table.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

import perceptron_lab
from perceptron_lab import constants
from perceptron_lab.config.load import config_from_dict
from perceptron_lab.datasets.registry import load_dataset
from perceptron_lab.engine.families import ALGORITHMS, algorithm
from perceptron_lab.run import plan as run_plan
from perceptron_lab.run import units

PACKAGE = Path(perceptron_lab.__file__).parent
#: Names a config (or one of its sections) goes by in plab's code.
CONFIG_NAME = re.compile(r"^(\w*cfg|config|\w+_config|\w+_cfg)$")
#: The config's sections: reading one off an object is reading a config.
SECTIONS = {"dataset", "training", "prediction", "evaluation", "output"}


def _config_reads(path: Path) -> list[str]:
    """Where the module at ``path`` names or reads a config: an import of the config package, a
    parameter, variable or function named like a config (``cfg``, ``ucfg``, ``from_config``), or an
    attribute read of a config section (``x.training``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("perceptron_lab.config"):
            found.append(f"{where} imports {node.module}")
        elif isinstance(node, ast.Import) and any(a.name.startswith("perceptron_lab.config") for a in node.names):
            found.append(f"{where} imports the config package")
        elif isinstance(node, ast.arg) and CONFIG_NAME.match(node.arg):
            found.append(f"{where} takes a parameter {node.arg!r}")
        elif isinstance(node, ast.Name) and CONFIG_NAME.match(node.id):
            found.append(f"{where} names {node.id!r}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "config" in node.name:
            found.append(f"{where} defines {node.name}()")
        elif isinstance(node, ast.Attribute) and (node.attr in SECTIONS or "from_config" in node.attr):
            found.append(f"{where} reads .{node.attr}")
    return found


def test_the_checker_finds_a_config_read(tmp_path):
    """The source check itself: each kind of config read it looks for is found."""
    sample = tmp_path / "sample.py"
    sample.write_text("from perceptron_lab.config.load import ExperimentConfig\n"
                      "def train_from_config(ucfg):\n    return ucfg.training.epochs\n"
                      "def other(spec):\n    return Kernel.from_config(spec)\n")
    reads = _config_reads(sample)
    assert len(reads) >= 5 and any("imports perceptron_lab.config.load" in r for r in reads)
    assert any(".training" in r for r in reads) and any("from_config" in r for r in reads)


def test_no_module_under_engine_names_or_reads_a_config():
    reads = [r for p in sorted((PACKAGE / "engine").rglob("*.py")) for r in _config_reads(p)]
    assert not reads, "the engine reads configs:\n  " + "\n  ".join(reads)


def test_run_units_names_no_config():
    reads = _config_reads(PACKAGE / "run" / "units.py")
    assert not reads, "run/units.py reads configs:\n  " + "\n  ".join(reads)


def test_no_estimator_builds_a_stand_in_config():
    for path in sorted((PACKAGE / "estimators").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                assert not mod.startswith(("perceptron_lab.run", "perceptron_lab.config.load")), (path, mod)
                assert not (mod == "types" and any(a.name == "SimpleNamespace" for a in node.names)), path
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert not node.func.id.endswith("Config"), f"{path}:{node.lineno} builds {node.func.id}"


def test_the_layers_contract_forbids_estimators_importing_run():
    text = (PACKAGE.parent / "pyproject.toml").read_text()
    block = text[text.index('name = "Estimators never import run'):]
    assert 'source_modules = ["perceptron_lab.estimators"]' in block
    assert 'forbidden_modules = ["perceptron_lab.run"]' in block


def test_every_schema_algorithm_has_one_table_row():
    assert tuple(ALGORITHMS) == constants.ALGORITHMS
    for name in constants.ALGORITHMS:
        row = algorithm(name)
        assert row.name == name and row.settings.__dataclass_params__.frozen
    with pytest.raises(Exception, match="did you mean 'norma'"):
        algorithm("norm")


class _Poison:
    """A stand-in for a config that records and fails any attribute read (the warm-up swallows
    failures, so the record is what the test checks)."""

    reads: list = []

    def __init__(self, what):
        object.__setattr__(self, "_what", what)

    def __getattr__(self, name):
        _Poison.reads.append(f"{self._what}.{name}")
        raise AssertionError(f"{self._what}.{name} was read below the plan")


def _sonar():
    return load_dataset("sonar")


CASES = {
    "perceptron kfold grid": {"algorithm": {"eta": 0.1, "theta_init": "avg_sq_norm", "C": "theta_init"},
                              "training": {"epochs": 2, "checkpoints": [1]},
                              "prediction": {"rules": ["last", "vote", "avg_norm", "random"]},
                              "evaluation": {"mode": "kfold", "folds": 3, "grid": {"algorithm.tau": [0.0, 0.5]}}},
    "perceptron lockstep (poly, one pass)": {"kernel": {"type": "poly", "degree": 2},
                                             "evaluation": {"mode": "kfold", "folds": 3,
                                                            "grid": {"algorithm.tau": [0.0, 0.1]}}},
    "alma nested": {"algorithm": {"name": "alma", "alpha": 0.8}, "training": {"epochs": 1},
                    "evaluation": {"mode": "nested", "folds": 2, "inner_folds": 2,
                                   "grid": {"algorithm.alpha": [0.5, 0.9]}, "search": [["algorithm.alpha"]]}},
    "budget (norma, gaussian)": {"kernel": {"type": "gaussian", "sigma": 8.0},
                                 "algorithm": {"name": "norma", "budget": 20, "eta": 0.5, "lambda": 0.2},
                                 "evaluation": {"mode": "kfold", "folds": 2}},
    "budget subsample (rbp)": {"algorithm": {"name": "rbp", "budget": 10}, "training": {"seed": 3},
                               "evaluation": {"mode": "kfold", "folds": 4, "fold_train_size": 60}},
}


@pytest.mark.parametrize("case", list(CASES))
def test_units_run_from_specs_with_every_config_read_poisoned(case, monkeypatch):
    d = {"dataset": {"name": "sonar"}, **CASES[case]}
    cfg = config_from_dict(d, source="case.yaml")
    ds = _sonar()
    plan = run_plan.make_plan(cfg, ds)
    expected = [units.run_part(plan, p)[0] for p in plan.parts]
    poisoned = dataclasses.replace(plan, config=_Poison("plan.config"),
                                   points={g: _Poison(f"plan.points[{g}]") for g in plan.points})
    monkeypatch.setattr(run_plan.Plan, "data", lambda self, part, data_dir=None: ds)
    monkeypatch.setattr(_Poison, "reads", [])
    got = [units.run_part(poisoned, p)[0] for p in poisoned.parts]
    assert got == expected
    for p in poisoned.parts:   # the warm-up runs the same code on a slice
        units.warm_up(poisoned, p, ds)
    assert _Poison.reads == []
