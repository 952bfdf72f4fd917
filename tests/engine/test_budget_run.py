"""One resumable driver for the budgeted family (:class:`perceptron_lab.engine.budget.BudgetRun`):
a run stepped in pieces is the run stepped at once, so ``train_budget`` (``plab run``'s units and
``BudgetPerceptron.fit``), ``partial_fit`` and the online classes' ``learn_one`` compute one thing."""

from __future__ import annotations

import numpy as np
import pytest

from perceptron_lab.constants import BUDGET_ALGORITHMS
from perceptron_lab.engine.budget import BudgetParams, BudgetRun, train_budget
from perceptron_lab.engine.kernels import Kernel
from perceptron_lab.engine.perceptron import label_matrix


def _problem(n=90, f=5, L=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(-3, 4, size=(n, f)).astype(float)
    y = np.argmax(X @ rng.normal(size=(f, L)) + rng.normal(size=(n, L)), axis=1)
    return X, label_matrix(y, L)


def _params(name, budget=7):
    return BudgetParams(algorithm=name, budget=budget, eta=0.5 if name == "norma" else 0.1,
                        lam=0.1 if name == "norma" else 0.0, seed=11)


def _same(a, b):
    for k in ("ev_step", "ev_cls", "ev_kind", "ev_ex", "ch_step", "ch_cls", "ch_kind", "ch_ex", "ch_val"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k), err_msg=k)
    np.testing.assert_array_equal(a.mistakes_cp[-1], b.mistakes_cp[-1])
    for (ea, ca), (eb, cb) in zip(a.last[-1] + a.avg[-1], b.last[-1] + b.avg[-1]):
        np.testing.assert_array_equal(ea, eb)
        np.testing.assert_array_equal(ca, cb)


@pytest.mark.parametrize("name", BUDGET_ALGORITHMS)
def test_a_run_stepped_in_pieces_is_the_run_stepped_at_once(name):
    X, Y = _problem()
    kernel = Kernel("poly", 2, 10.0)
    order = np.random.default_rng(1).permutation(len(X))
    once = train_budget(X, Y, kernel, _params(name), order, 1.0, [1.0], chunk_size=len(X), record_changes=True)
    run = BudgetRun(X, Y, kernel, _params(name), record=True)
    cuts = [0, 1, 2, 13, 40, 41, 77, len(X)]
    for a, b in zip(cuts[:-1], cuts[1:]):
        run.steps(order[a:b], chunk_size=5)
    _same(run.log(), once)


@pytest.mark.parametrize("name", BUDGET_ALGORITHMS)
def test_examples_added_one_at_a_time_are_the_run_on_all_of_them(name):
    """learn_one's path (add an example, one step) against train_budget on all the examples."""
    X, Y = _problem(n=60)
    kernel = Kernel("gaussian", sigma=3.0)
    once = train_budget(X, Y, kernel, _params(name), np.arange(len(X)), 1.0, [1.0], record_changes=True)
    run = BudgetRun(X[:0], Y[:0], kernel, _params(name), record=True)
    for i in range(len(X)):
        run.steps(run.add_examples(X[i:i + 1], Y[i:i + 1]), chunk_size=1)
    _same(run.log(), once)
