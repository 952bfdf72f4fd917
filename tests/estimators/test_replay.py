"""``partial_fit`` after ``fit`` replays the run's steps as rows: the model keeps the order and the
number of steps (never one index per step), and a replay beyond ``cache_limit_gb`` is refused
before anything changes."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from perceptron_lab import MarginPerceptron, VotedPerceptron


def _data(n=40, f=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f))
    return X, (X @ rng.normal(size=f) > 0).astype(int)


def test_fit_keeps_no_index_per_training_step():
    X, y = _data()
    clf = VotedPerceptron(epochs=500, random_state=0).fit(X, y)
    assert all(np.size(a) <= X.size for a in clf._seq[:3])   # X, y and the order; not 500 x 40 indices
    assert clf._seq[3] == 500 * len(y)


@pytest.mark.parametrize("est", [VotedPerceptron(epochs=3, random_state=0),
                                 MarginPerceptron(epochs=2, tau=0.1, random_state=1)])
def test_partial_fit_continues_fit_as_one_sequence(est):
    """fit then partial_fit equals one partial_fit on the steps fit visited, then the batch."""
    X, y = _data()
    X2, y2 = _data(seed=1)
    a = pickle.loads(pickle.dumps(est)).fit(X, y)
    _, _, order, steps = a._seq
    visited = order[np.arange(steps) % len(y)]
    a.partial_fit(X2, y2)
    b = pickle.loads(pickle.dumps(est)).partial_fit(np.concatenate([X[visited], X2]),
                                                    np.concatenate([y[visited], y2]), classes=[0, 1])
    np.testing.assert_array_equal(a.decision_function(X2), b.decision_function(X2))
    assert a.n_mistakes_ == b.n_mistakes_ and steps == int(est.epochs * len(y))


def test_a_replay_beyond_the_memory_allowance_is_refused_and_changes_nothing():
    X, y = _data()
    clf = VotedPerceptron(epochs=50, random_state=0, cache_limit_gb=1e-5).fit(X, y)
    before = pickle.dumps(clf)
    with pytest.raises(ValueError, match=r"replays the run's 2000 steps .* more than cache_limit_gb=1e-05"):
        clf.partial_fit(X[:5], y[:5])
    assert pickle.dumps(clf) == before
