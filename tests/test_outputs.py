"""Where runs write and what they tell: user runs never write into results/, make reproduce
does (and leaves the run records alone when nothing changed), shell-safe folder names of
overridden runs, one summary table per sweep, warnings for dropped checkpoints, and messages
that name the algorithm a key does not belong to."""

import json
from pathlib import Path

import pytest

from clitools import one_error, plab

REPO = Path(__file__).resolve().parents[1]
SMALL = """name: small
dataset: {name: sonar}
algorithm: {eta: 0.1}
training: {epochs: 2, checkpoints: [1], permutations: 1}
prediction: {rules: [last, vote]}
evaluation: {mode: kfold, folds: 3}
output: {figures: false}
"""
FORGETRON = """name: f
dataset: {name: sonar}
algorithm: {name: forgetron, budget: 10}
prediction: {rules: [last]}
evaluation: {mode: kfold, folds: 2}
"""


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "small.yaml").write_text(SMALL)
    return tmp_path


# ----------------------------------------------------------------------------- messages


@pytest.mark.parametrize("args, expected", [
    (["-m", "algorithm.eta=0.1,0.2"], "evaluation.grid: algorithm.eta is a parameter of the perceptron, the "
                                      "Projectron, the Projectron++ and NORMA; the Forgetron does not use it"),
    (["algorithm.eta=0.1"], "algorithm.eta is a parameter of the perceptron, the Projectron, the Projectron++ and "
                            "NORMA; the Forgetron does not use it"),
    (["algorithm.tau=0.1"], "algorithm.tau is a perceptron parameter; the Forgetron does not use it"),
    (["algorithm.name=alma", "algorithm.tau=0.1"], "algorithm.tau is a perceptron parameter; ALMA does not use it"),
])
def test_a_key_the_algorithm_lacks_names_that_algorithm(here, args, expected):
    (here / "f.yaml").write_text(FORGETRON)
    line = one_error(2, "run", "f.yaml", *args, "--out", here / "never", "-q")
    assert line.endswith(expected), line
