"""ALMA_p in 40-digit decimal arithmetic with exponents far beyond float64's: the reference for
large p, where float64's powers underflow (|theta_i|^(p-1) = 0 for |theta_i| < 1/2 once p > 1075).

Gentile (2001), Figure 1, literally, as :class:`naive.NaiveAlma` has it (x^ = x / |x|_p; the
link f and its inverse applied to w; the projection onto the unit q-ball), but every number a
:class:`decimal.Decimal` of 40 significant digits with exponents down to 10^-(10^18): no power,
norm or margin leaves its range for any p a test uses, so its run is Figure 1's exactly, up to
40-digit rounding. The inputs are float64 numbers, converted exactly.
"""

from __future__ import annotations

import decimal
import math
from decimal import Decimal as D

import numpy as np

CTX = decimal.Context(prec=40, Emin=decimal.MIN_EMIN, Emax=decimal.MAX_EMAX)


def _pnorm(v, r):
    s = sum((abs(x) ** r for x in v if x), D(0))
    return s ** (1 / r) if s else D(0)


def _link(v, r):
    """``sign(v_i) |v_i|^(r-1) / |v|_r^(r-2)`` (f with r = q, f^-1 with r = p; 0 at v = 0)."""
    n = _pnorm(v, r)
    if not n:
        return [D(0)] * len(v)
    d = n ** (r - 2)
    return [(abs(x) ** (r - 1) / d).copy_sign(x) if x else D(0) for x in v]


class ExactAlma:
    """One-vs-rest ALMA_p(alpha; B, C) on ``X`` (n x f floats) and ``Y`` (n x L in {-1, +1}).

    :meth:`fit` runs ``steps`` steps of the sequence ``order`` (repeated) and records every
    correction as ``(step, example, label)`` in :attr:`updates`, as the engine's log lists them;
    :attr:`W` holds the last hypothesis of each label; :meth:`scores` the exact ``W . x``.
    """

    def __init__(self, X, Y, alpha=1.0, B=None, C=math.sqrt(2.0), p=2.0):
        self.X = [[D(float(v)) for v in row] for row in np.asarray(X, dtype=np.float64)]
        self.Y = np.asarray(Y)
        with decimal.localcontext(CTX):
            self.alpha, self.C, self.p = D(float(alpha)), D(float(C)), D(float(p))
            self.B = D(float(1.0 / alpha if B is None else B))
            self.q = self.p / (self.p - 1)

    def fit(self, order, steps):
        with decimal.localcontext(CTX):
            n, L = self.Y.shape
            W = [[D(0)] * len(self.X[0]) for _ in range(L)]
            k = [1] * L
            norms = [_pnorm(row, self.p) for row in self.X]
            xh = [[x / nr for x in row] if nr else row for row, nr in zip(self.X, norms)]
            sp = (self.p - 1).sqrt()
            self.updates = []
            for t in range(steps):
                i = int(order[t % n])
                if not norms[i]:  # footnote 3: no update on a zero instance
                    continue
                for c in range(L):
                    y = int(self.Y[i, c])
                    sk = D(k[c]).sqrt()
                    if y * sum((w * x for w, x in zip(W[c], xh[i])), D(0)) > (1 - self.alpha) * self.B * sp / sk:
                        continue
                    eta = self.C / (sp * sk)
                    theta = [a + eta * y * b for a, b in zip(_link(W[c], self.q), xh[i])]
                    w = _link(theta, self.p)
                    N = max(D(1), _pnorm(w, self.q))
                    W[c] = [v / N for v in w]
                    k[c] += 1
                    self.updates.append((t, i, c))
            self.W = W
        return self

    def scores(self, X) -> list[list[D]]:
        """The exact scores ``W[c] . x`` of the rows of ``X`` (rows, then labels)."""
        with decimal.localcontext(CTX):
            rows = [[D(float(v)) for v in row] for row in np.asarray(X, dtype=np.float64)]
            return [[sum((w * x for w, x in zip(Wc, row)), D(0)) for Wc in self.W] for row in rows]
