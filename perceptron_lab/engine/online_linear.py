"""The perceptron in primal form, one example at a time: the online classes' linear path.

Freund & Schapire (1999), Figure 1, with the linear kernel: each label keeps a weight vector
``w``; on a mistake ``y w.x <= 0`` of that label, ``w <- w + y x``. The dual form (the budgeted
engine's Stoptron without a budget, which the online kernel perceptron runs for the other
kernels) keeps the mistakes and costs O(mistakes x features) per example; this form costs
O(labels x features) whatever the stream's length, like River's linear models.

The averaged rule (``avg``) is the sum of the hypotheses after each step,
``sum_{t=1..T} w_t = (T + 1) w_T - sum_k k d_k`` over the updates ``d_k`` made at steps ``k``
(Freund & Schapire §5, as Daume's averaged perceptron keeps it): two vectors per label, updated
only on a mistake.

Arithmetic: every score is the plain sequential sum ``sum_j w[c, j] x[j]`` for j = 0, 1, ... in
that order, in float64, without ``fastmath`` (no reassociation, no fused multiply-add), so a
score is the same number whether it is computed for ``learn_one``, ``predict_one``,
``learn_many`` or ``predict_many``: :func:`learn_rows` runs :func:`_step` row after row, the
very code ``learn_one`` runs on one row, so a batch learned at once is bit for bit the stream
learned one example at a time.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

#: What :func:`_step` returns when a score is not a finite float64 number (nothing is changed).
NOT_FINITE = -1


@nb.njit(cache=True)
def _score(W, c, x):
    s = 0.0
    for j in range(x.shape[0]):
        s += W[c, j] * x[j]
    return s


@nb.njit(cache=True)
def _step(W, V, x, ylab, t, scores):
    """One step on the row ``x`` (its length at most ``W``'s width) with labels ``ylab`` (+1/-1
    per label) at step ``t`` (1, 2, ...): the scores of every label into ``scores`` first; if one is
    not finite, return :data:`NOT_FINITE` and change nothing; else update each label that errs
    (``y s <= 0``) and return how many did."""
    L = W.shape[0]
    for c in range(L):
        s = _score(W, c, x)
        if not math.isfinite(s):
            return NOT_FINITE
        scores[c] = s
    wrong = 0
    for c in range(L):
        y = ylab[c]
        if y * scores[c] <= 0.0:
            wrong += 1
            for j in range(x.shape[0]):
                W[c, j] += y * x[j]
                V[c, j] += t * (y * x[j])
    return wrong


@nb.njit(cache=True)
def learn_row(W, V, x, ylab, t, scores, mistakes):
    """:func:`_step` on one row at step ``t``, counting mistakes as :func:`learn_rows` does; returns
    :func:`_step`'s value."""
    r = _step(W, V, x, ylab, t, scores)
    if r != NOT_FINITE:
        for c in range(W.shape[0]):
            if ylab[c] * scores[c] <= 0.0:
                mistakes[c] += 1
    return r


@nb.njit(cache=True)
def learn_rows(W, V, X, Ylab, t0, mistakes):
    """:func:`_step` on each row of ``X`` in order, from step ``t0 + 1``; ``mistakes[c]`` counts
    each label's mistakes. Returns the number of rows learned: fewer than ``len(X)`` when a row's
    score is not finite (that row and the later ones are not learned)."""
    scores = np.empty(W.shape[0])
    for i in range(X.shape[0]):
        r = _step(W, V, X[i], Ylab[i], t0 + i + 1, scores)
        if r == NOT_FINITE:
            return i
        for c in range(W.shape[0]):
            if Ylab[i, c] * scores[c] <= 0.0:
                mistakes[c] += 1
    return X.shape[0]


@nb.njit(cache=True)
def score_rows(W, V, X, T, avg, out):
    """Scores of each row of ``X`` against the last hypotheses (``avg`` false) or their sum over
    the ``T`` steps so far, ``(T + 1) W - V`` (``avg`` true), each a sequential sum over the
    features in order; a column of ``X`` beyond ``W``'s width (a feature never learned) has
    weight 0 and is skipped, as are ``W``'s columns beyond ``X``'s."""
    L = W.shape[0]
    d = min(X.shape[1], W.shape[1])
    for i in range(X.shape[0]):
        for c in range(L):
            s = 0.0
            if avg:
                for j in range(d):
                    s += ((T + 1) * W[c, j] - V[c, j]) * X[i, j]
            else:
                for j in range(d):
                    s += W[c, j] * X[i, j]
            out[i, c] = s
    return out


@nb.njit(cache=True)
def score_one(W, V, x, T, avg):
    """:func:`score_rows` of one row ``x`` (the same sums), as a new array."""
    out = np.empty(W.shape[0])
    d = min(x.shape[0], W.shape[1])
    for c in range(W.shape[0]):
        s = 0.0
        if avg:
            for j in range(d):
                s += ((T + 1) * W[c, j] - V[c, j]) * x[j]
        else:
            for j in range(d):
                s += W[c, j] * x[j]
        out[c] = s
    return out


class LinearRun:
    """The state of a primal perceptron run over a stream: ``W`` (labels x features), ``V`` (the
    step-weighted updates the averaged rule needs), the steps ``t`` and each label's mistakes.
    Labels and features may be added as they appear (a new label starts at 0, which is what it
    would be had it been there from the start and erred on no earlier example only when it is a
    positive it never saw: the online classes say so)."""

    def __init__(self, n_labels: int, n_features: int = 0):
        self.W = np.zeros((n_labels, n_features))
        self.V = np.zeros((n_labels, n_features))
        self.t = 0
        self.mistakes = np.zeros(n_labels, dtype=np.int64)
        self._scores = np.empty(n_labels)

    @property
    def n_labels(self) -> int:
        return self.W.shape[0]

    def widen(self, n_features: int) -> None:
        """Room for ``n_features`` features (new ones have weight 0)."""
        d = self.W.shape[1]
        if n_features > d:
            grow = max(n_features, 2 * d)  # amortized: a stream that adds a feature per example
            self.W = np.concatenate([self.W, np.zeros((self.n_labels, grow - d))], axis=1)
            self.V = np.concatenate([self.V, np.zeros((self.n_labels, grow - d))], axis=1)

    def add_label(self) -> None:
        self.W = np.concatenate([self.W, np.zeros((1, self.W.shape[1]))])
        self.V = np.concatenate([self.V, np.zeros((1, self.V.shape[1]))])
        self.mistakes = np.concatenate([self.mistakes, np.zeros(1, dtype=np.int64)])
        self._scores = np.empty(self.n_labels)

    def learn(self, X: np.ndarray, Ylab: np.ndarray) -> int:
        """Learn the rows of ``X`` (each as wide as the run or narrower: missing features are 0) with
        labels ``Ylab`` in order; returns how many were learned before a score that is not finite."""
        done = learn_rows(self.W, self.V, X, Ylab, self.t, self.mistakes)
        self.t += done
        return done

    def learn_one(self, x: np.ndarray, ylab: np.ndarray) -> bool:
        """Learn one row (as :meth:`learn` on a batch of one, the same step); False, with nothing
        changed, when a score is not finite."""
        if learn_row(self.W, self.V, x, ylab, self.t + 1, self._scores, self.mistakes) == NOT_FINITE:
            return False
        self.t += 1
        return True

    def score_one(self, x: np.ndarray, avg: bool = False) -> np.ndarray:
        """The scores of one row (a new array), as :meth:`scores` computes them."""
        return score_one(self.W, self.V, x, self.t, avg)

    def scores(self, X: np.ndarray, avg: bool = False) -> np.ndarray:
        """Scores of the rows of ``X`` by the last or averaged rule (features beyond the run's
        width have weight 0)."""
        out = np.empty((X.shape[0], self.n_labels))
        return score_rows(self.W, self.V, X, self.t, avg, out)


__all__ = ["LinearRun", "NOT_FINITE", "learn_row", "learn_rows", "score_one", "score_rows"]
