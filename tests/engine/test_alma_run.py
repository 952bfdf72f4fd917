"""One resumable driver for ALMA_p in primal form (:class:`perceptron_lab.engine.alma.PrimalRun`):
``train_primal`` and the online class's ``learn_one`` step the same run."""

from __future__ import annotations

import numpy as np
import pytest

from perceptron_lab.engine.alma import AlmaParams, PrimalRun, pnormalize, train_primal
from perceptron_lab.engine.perceptron import label_matrix
from perceptron_lab.estimators.online import ALMA as OnlineALMA


def _problem(n=120, f=6, L=3, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f))
    y = np.argmax(X @ rng.normal(size=(f, L)) + 0.3 * rng.normal(size=(n, L)), axis=1)
    return X, y


@pytest.mark.parametrize("p", [2.0, 3.0, 7.5])
def test_a_primal_run_stepped_in_pieces_is_train_primal(p):
    X, y = _problem()
    Y = label_matrix(y, 3)
    params = AlmaParams(alpha=0.8, B=1.25, C=2 ** 0.5, p=p)
    order = np.random.default_rng(0).permutation(len(y))
    log = train_primal(X, Y, params, order, 1.0, [1.0], chunk_size=len(y))
    run = PrimalRun(3, X.shape[1], params)
    Xh, xnz = pnormalize(X, p), np.any(X != 0, axis=1)
    for a, b in [(0, 1), (1, 30), (30, 31), (31, 120)]:
        run.steps(Xh, xnz, Y, order[a:b])
    upd = run.updates()
    np.testing.assert_array_equal(upd["step"], log.upd_step)
    np.testing.assert_array_equal(upd["ex"], log.upd_ex)
    np.testing.assert_array_equal(upd["w"], log.hyp_w)


def test_learn_one_steps_the_run_train_primal_steps():
    """The online ALMA on a stream (classes given, features named 0..f-1) ends in the weights and
    corrections of train_primal on the same sequence."""
    X, y = _problem()
    params = AlmaParams(alpha=0.9, B=1 / 0.9, C=2 ** 0.5, p=3.0)
    log = train_primal(X, label_matrix(y, 3), params, np.arange(len(y)), 1.0, [1.0])
    model = OnlineALMA(p=3.0, alpha=0.9, classes=[0, 1, 2], fit_intercept=False)   # the engine run has none
    for row, label in zip(X, y):
        model.learn_one(dict(enumerate(row)), int(label))
    assert model.n_corrections_ == log.n_updates
    last = {c: log.hyp_w[np.flatnonzero(log.upd_cls == c)[-1]] for c in range(3)}
    for c in range(3):
        np.testing.assert_array_equal(model._run.W[c], last[c])


def test_unresolved_bound_flags_exactly_the_terms_lost_below_float64s_range():
    """Per label: n 2^-1021 max(1, |x|_inf) (n: x's non-zero features) where a term w_f x_f with
    theta_f and x_f non-zero came out below 2^-1022, else 0; written out term by term here."""
    from perceptron_lab.engine.alma import unresolved_bound

    rng = np.random.default_rng(4)
    tiny = np.finfo(np.float64).tiny
    for _ in range(200):
        L, f = rng.integers(1, 4), rng.integers(1, 7)
        x = rng.normal(size=f) * 10.0 ** rng.integers(-200, 5, size=f)
        x[rng.random(f) < 0.3] = 0.0
        theta = rng.normal(size=(L, f))
        theta[rng.random((L, f)) < 0.3] = 0.0
        W = theta * 10.0 ** rng.integers(-320, 3, size=(L, f)).astype(float)
        want = np.zeros(L)
        n = sum(1 for v in x if v != 0.0)
        top = max([1.0] + [abs(float(v)) for v in x])
        for c in range(L):
            if any(x[j] != 0.0 and theta[c, j] != 0.0 and abs(float(W[c, j]) * float(x[j])) < tiny for j in range(f)):
                want[c] = n * 2.0 ** -1021 * top
        np.testing.assert_array_equal(unresolved_bound(theta, W, x), want)
