"""The evaluation scan (perceptron_lab.scoring): its two ways of finding the random rules'
hypotheses, and any number of test points per task, give the same scores."""

import numpy as np
import pytest

import perceptron_lab.predict as predict
from perceptron_lab.engine.perceptron import PerceptronParams, label_matrix, train
from perceptron_lab.kernels import Kernel


@pytest.mark.parametrize("direct_theta", [False, True])
def test_random_rule_paths_and_task_sizes_agree(monkeypatch, direct_theta):
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(400, 6)), rng.integers(0, 4, 400)
    Xt = rng.normal(size=(333, 6))
    params = PerceptronParams(eta=0.1, theta_init=1.0, C=1.0, tau_abs=0.5) if direct_theta else PerceptronParams()
    log = train(X, label_matrix(y, 4), Kernel("poly", 2, 3.0), params, rng.permutation(400), 3,
                [0.1 * i for i in range(1, 31)])
    runs = []
    for history in (True, False):
        for points in (16, 128):
            monkeypatch.setattr(predict, "random_by_history", lambda *a, h=history: h)
            monkeypatch.setattr(predict, "points_per_task", lambda *a, p=points: p)
            runs.append(predict.decision_scores(log, Kernel("poly", 2, 3.0), X, Xt, seed=7))
    for other in runs[1:]:
        np.testing.assert_array_equal(other, runs[0])


def test_task_size_follows_the_hypotheses_per_checkpoint():
    from perceptron_lab.scoring import POINTS_PER_TASK, points_per_task

    # Freund & Schapire's layout: 300 checkpoints, 10 labels
    assert points_per_task(300, 10, 65_000) == POINTS_PER_TASK  # d = 1: the scan dominates
    assert points_per_task(300, 10, 400) < 32  # about one hypothesis a checkpoint: the score array stays small
    assert points_per_task(3, 10, 400) == POINTS_PER_TASK
    assert points_per_task(300, 10) == points_per_task(300, 10, 0) >= 16


@pytest.mark.parametrize("values", [
    np.array([5, 3, 5, 0, 3, 9, 9, 9], dtype=np.int64),        # few values: the table
    np.array([7, 7, 7], dtype=np.int32),
    np.array([10**9, 3, 10**9, 12], dtype=np.int64),           # sparse values: the sort
    np.zeros(0, dtype=np.int64),
    np.random.default_rng(5).integers(0, 208, 20_000),          # sonar-sized set, 100 epochs
])
def test_distinct_equals_numpy_unique(values):
    sv, inv = predict.distinct(values)
    want_sv, want_inv = np.unique(values, return_inverse=True)
    np.testing.assert_array_equal(sv, want_sv)
    assert sv.dtype == values.dtype and inv.dtype == np.int64
    np.testing.assert_array_equal(inv, want_inv.reshape(-1))
    np.testing.assert_array_equal(sv[inv], values)
