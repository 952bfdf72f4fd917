"""Slow, obvious reference implementations that the fast engines must match exactly.

Written straight from the papers' pseudo-code, with no caching, chunking or prefix sums:
Freund & Schapire (1999) Figure 1 and §5, Khardon & Wachman (2007) Figure 2. Every hypothesis is
stored explicitly as a list of (example, coefficient) pairs and evaluated from scratch. Training to
a checkpoint is simply training for that many steps.
"""

from __future__ import annotations

import math

import numpy as np


def kernel_value(name, degree, scale, sigma, a, b):
    dot = float(sum(float(u) * float(v) for u, v in zip(a, b)))
    if name == "linear":
        return dot
    if name == "poly":
        return (1.0 + dot / scale) ** degree
    d2 = float(sum((float(u) - float(v)) ** 2 for u, v in zip(a, b)))
    g = math.exp(-d2 / (2.0 * sigma * sigma))
    if name == "gaussian":
        return g
    return (1.0 + g) ** degree


class NaivePerceptron:
    """One-vs-rest perceptrons with every Khardon-Wachman option, trained for ``steps`` steps.

    ``Y`` holds the +1/-1 label columns. After training, ``hyps[c]`` is the list of hypotheses of
    label c, each a dict with ``sv`` (list of (example, coef)), ``theta``, ``created`` (step),
    ``correct`` (correct predictions made while it was current).
    """

    def __init__(self, X, Y, kernel, eta=1.0, theta_init=0.0, C=0.0, tau_abs=0.0, lam=0.0,
                 alpha_bound=None):
        self.X, self.Y = np.asarray(X, float), np.asarray(Y)
        self.k = kernel  # (name, degree, scale, sigma)
        self.eta, self.theta_init, self.C = eta, theta_init, C
        self.tau_abs, self.lam, self.alpha_bound = tau_abs, lam, alpha_bound

    def K(self, i, j):
        return kernel_value(*self.k, self.X[i], self.X[j])

    def score(self, hyp, i):
        return sum(coef * self.K(j, i) for j, coef in hyp["sv"])

    def fit(self, order, steps):
        n, L = self.Y.shape
        self.hyps = [[{"sv": [], "theta": self.theta_init, "created": 0, "correct": 0}] for _ in range(L)]
        self.updates = []
        mcount = np.zeros((n, L), dtype=int)
        for t in range(steps):
            i = order[t % n]
            for c in range(L):
                cur = self.hyps[c][-1]
                y = self.Y[i, c]
                s = self.score(cur, i)
                if self.lam and mcount[i, c] != 0:
                    s += y * self.lam * self.K(i, i)
                if s < cur["theta"] - self.tau_abs:
                    yhat = -1
                elif s > cur["theta"] + self.tau_abs:
                    yhat = 1
                else:
                    yhat = 0
                if yhat == y:
                    cur["correct"] += 1
                elif self.alpha_bound is None or mcount[i, c] < self.alpha_bound:
                    mcount[i, c] += 1
                    self.hyps[c].append({
                        "sv": cur["sv"] + [(i, self.eta * y)],
                        "theta": cur["theta"] - self.eta * y * self.C,
                        "created": t, "correct": 0,
                    })
                    self.updates.append((t, i, c))
        self.steps = steps
        return self

    def norm(self, hyp):
        return math.sqrt(max(0.0, sum(a * b * self.K(i, j) for i, a in hyp["sv"] for j, b in hyp["sv"])))

    def test_score(self, hyp, x):
        return sum(coef * kernel_value(*self.k, self.X[j], x) for j, coef in hyp["sv"]) - hyp["theta"]

    def rule_scores(self, x, r, vote_weight="survival"):
        """Scores of every rule for test point x; r is the random time slice."""
        out = {name: [] for name in
               ("last", "last_norm", "avg", "avg_norm", "vote", "random", "random_norm", "longest")}
        for hyps in self.hyps:
            f = [self.test_score(h, x) for h in hyps]
            nrm = [self.norm(h) for h in hyps]
            fn = [fk / nk if nk > 0 else 0.0 for fk, nk in zip(f, nrm)]
            if vote_weight == "survival":  # Freund & Schapire Figure 1: c = 1 at creation
                w = [h["correct"] + (1 if k > 0 else 0) for k, h in enumerate(hyps)]
            else:
                w = [h["correct"] for h in hyps]
            sign = [int(fk > 0) - int(fk < 0) for fk in f]
            alive = max(k for k, h in enumerate(hyps) if k == 0 or h["created"] <= r)
            best = max(h["correct"] for h in hyps)
            ls = min(k for k, h in enumerate(hyps) if h["correct"] == best)
            out["last"].append(f[-1])
            out["last_norm"].append(fn[-1])
            out["avg"].append(sum(a * b for a, b in zip(w, f)))
            out["avg_norm"].append(sum(a * b for a, b in zip(w, fn)))
            out["vote"].append(sum(a * b for a, b in zip(w, sign)))
            out["random"].append(f[alive])
            out["random_norm"].append(fn[alive])
            out["longest"].append(f[ls])
        return out


def naive_errors(model, X_test, y_test, binary, rslices, vote_weight="survival"):
    """Wrong predictions per rule: multiclass (argmax, first on ties) or binary (score > 0)."""
    err = {}
    err_bin = {}
    L = len(model.hyps)
    for t, x in enumerate(np.asarray(X_test, float)):
        sc = model.rule_scores(x, rslices[t], vote_weight)
        for rule, s in sc.items():
            if binary:
                pred = 1 if s[0] > 0 else 0
            else:
                pred = int(np.argmax(s))
            err[rule] = err.get(rule, 0) + int(pred != y_test[t])
            eb = err_bin.setdefault(rule, [0] * L)
            for c in range(L):
                truth = (y_test[t] == 1) if binary else (y_test[t] == c)
                eb[c] += int((s[c] > 0) != truth)
    return err, err_bin
