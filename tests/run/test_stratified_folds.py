"""evaluation.stratify: stratified k-fold as a config option; the default stays the shuffled split
(issue 55, item 5), and fit / partial_fit refuse per-example weights by the public class's name."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perceptron_lab import ALMA, BudgetPerceptron, MarginPerceptron, VotedPerceptron
from perceptron_lab.config.load import config_from_dict
from perceptron_lab.run.evaluation import inner_kfold_indices, kfold_indices
from perceptron_lab.run.plan import results_hash


def _cfg(**evaluation):
    return config_from_dict({"name": "s", "dataset": {"name": "sonar"},
                             "evaluation": {"mode": "kfold", "folds": 5, **evaluation}})


def test_stratified_folds_hold_each_class_to_within_one_example():
    rng = np.random.default_rng(0)
    y = rng.choice(3, size=103, p=[0.6, 0.3, 0.1])
    folds = kfold_indices(103, 5, 7, y)
    tests = [te for _, te in folds]
    assert sorted(np.concatenate(tests).tolist()) == list(range(103))   # a partition
    for c in range(3):
        counts = [int(np.sum(y[te] == c)) for te in tests]
        assert max(counts) - min(counts) <= 1, (c, counts)
    assert max(map(len, tests)) - min(map(len, tests)) <= 1
    for tr, te in folds:
        assert np.intersect1d(tr, te).size == 0 and tr.size + te.size == 103


def test_the_shuffled_split_leaves_a_fold_without_the_rare_class_and_stratified_does_not():
    y = np.array([1] * 5 + [0] * 95)
    shuffled = [int(np.sum(y[te])) for _, te in kfold_indices(100, 5, 0)]
    stratified = [int(np.sum(y[te])) for _, te in kfold_indices(100, 5, 0, y)]
    assert stratified == [1, 1, 1, 1, 1]
    assert shuffled != stratified and sum(shuffled) == 5


def test_inner_folds_are_stratified_within_the_outer_training_part():
    y = np.array([0, 1] * 30 + [2] * 12)
    tr, _ = kfold_indices(y.size, 4, 3, y)[1]
    for itr, ite in inner_kfold_indices(tr, 3, 3, 1, y):
        assert set(itr.tolist()) | set(ite.tolist()) == set(tr.tolist())
    tests = [ite for _, ite in inner_kfold_indices(tr, 3, 3, 1, y)]
    for c in range(3):
        counts = [int(np.sum(y[te] == c)) for te in tests]
        assert max(counts) - min(counts) <= 1


def test_default_is_the_shuffled_split_and_keeps_the_results_hash():
    assert _cfg().evaluation.stratify is False
    assert results_hash(_cfg(stratify=False)) == results_hash(_cfg())
    assert results_hash(_cfg(stratify=True)) != results_hash(_cfg())


def test_a_stratified_run_trains_on_stratified_folds(tmp_path):
    from perceptron_lab.datasets import load_dataset
    from perceptron_lab.run.experiment import run_experiment

    y = load_dataset("sonar").y_train
    cfg = config_from_dict({"name": "s", "dataset": {"name": "sonar"}, "training": {"epochs": 1, "checkpoints": [1]},
                            "prediction": {"rules": ["last"]},
                            "evaluation": {"mode": "kfold", "folds": 5, "stratify": True}})
    run_experiment(cfg, out_dir=tmp_path / "run", progress=False)
    res = pd.read_csv(tmp_path / "run" / "results.csv")
    assert sorted(res.fold.unique().tolist()) == [0, 1, 2, 3, 4]
    n_test = [te.size for _, te in kfold_indices(y.size, 5, 0, y)]
    assert max(n_test) - min(n_test) <= 1


@pytest.mark.parametrize("est", [VotedPerceptron(), MarginPerceptron(), ALMA(), BudgetPerceptron()])
@pytest.mark.parametrize("name", ["sample_weight", "class_weight"])
def test_weights_are_refused_by_the_public_class(est, name):
    X = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 2.0], [2.0, 0.0]])
    y = np.array([0, 1, 0, 1])
    cls = type(est).__name__
    with pytest.raises(TypeError, match=rf"^{cls}\.fit\(\) does not take {name}: its update rule"):
        est.fit(X, y, **{name: np.ones(4)})
    with pytest.raises(TypeError, match=rf"^{cls}\.partial_fit\(\) does not take {name}"):
        est.partial_fit(X, y, classes=[0, 1], **{name: np.ones(4)})
    with pytest.raises(TypeError, match=rf"^{cls}\.fit\(\) got an unexpected keyword argument 'nope'"):
        est.fit(X, y, nope=1)
