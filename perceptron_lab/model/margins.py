"""Margins of a trained hypothesis on its training examples (Gentile 2001, §4; the margin
distributions of its Figures 3-5), from a training log and the prediction rules' weights."""

from __future__ import annotations

import math

import numpy as np

from perceptron_lab.engine.alma import pnormalize
from perceptron_lab.engine.perceptron import TrainLog, normalizing_factors
from perceptron_lab.model.hypotheses import Hypotheses
from perceptron_lab.engine import ordered
from perceptron_lab.engine.kernels import Kernel, gram, kernel_diag


def hypothesis_at(log: TrainLog, label: int, rule: str = "last", cp_index: int = -1,
                  vote_weight: str = "survival"):
    """The hypothesis of one label at a checkpoint, as (support examples, coefficients) over the
    log's kernel (normalized for ALMA) or, for explicit hypotheses, as (None, weight vector).

    ``rule`` is ``last`` (the current hypothesis) or ``avg``: Gentile's (sum_k c_k w_k) with the
    prediction rules' weights c_k, divided here by sum_k c_k (the number of trials, the same for
    every label) so that it is a convex combination: for ALMA its norm stays <= 1.
    """
    if rule not in ("last", "avg"):
        raise ValueError(f"rule must be 'last' or 'avg', got {rule!r}")
    hyp = Hypotheses(log, vote_weight)
    cp = int(np.arange(log.checkpoint_steps.size)[cp_index])
    live, partial, _ = hyp.at_checkpoints([cp])
    K = int(live[0, label])
    h0 = hyp.hoff[label]
    u0 = hyp.uoff[label]
    # weight of hypothesis k = 0..K at this checkpoint
    if rule == "avg":
        c = np.append(hyp.wfull[h0:h0 + K], partial[0, label]).astype(np.float64)
        c /= max(c.sum(), 1.0)
    else:
        c = np.append(np.zeros(K), 1.0)
    if log.hyp_w is not None:
        idx = hyp.uidx[u0:u0 + K]
        w = ordered.vecmat(c[1:], log.hyp_w[idx]) if K else np.zeros(log.hyp_w.shape[1])
        return None, w
    s = hyp.scale[h0:h0 + K + 1]
    # sum_k c_k s_k sum_{j <= k} a_j x_j = sum_j a_j (sum_{k >= j} c_k s_k) x_j
    tail = np.cumsum((c * s)[::-1])[::-1]
    beta = hyp.coef[u0:u0 + K] * tail[1:]
    return hyp.uex[u0:u0 + K], beta


def training_margins(log: TrainLog, kernel: Kernel, X, y, binary: bool, rule: str = "last",
                     cp_index: int = -1, vote_weight: str = "survival", p: float | None = None,
                     block: int = 4096) -> np.ndarray:
    """Margins of the training examples (Gentile 2001, §4; the margin distributions of Figures 3-5).

    The paper's definition (§2, §4): the margin of a hyperplane ``w`` with ``|w|_q <= 1`` on
    ``(x, y)`` is ``y w . x^`` with ``x^ = x / |x|_p`` (in the kernel's feature space for a kernel;
    ``p`` defaults to ``log.info['p']``, else 2); for an N-class one-vs-rest problem it is the
    output of the correct label's classifier minus the largest output of the others. Here:

    * each label's hypothesis is :func:`hypothesis_at`'s: "last" is the final ``w``; "avg" is the
      paper's ``sum_k c_k w_k`` divided by ``sum_k c_k`` (the number of trials, the same for every
      label), a convex combination. ALMA keeps every ``w_k`` in the unit ball, so both its "last"
      and its "avg" are used as they are: the margin is ``y w . x^`` exactly as defined (an "avg"
      of norm 0.85 is not blown up to norm 1).
    * hypotheses outside the unit ball (the Perceptron's; norms 5 to 13 on USPS) are all divided by
      one common factor, the largest norm among the labels: the smallest factor that puts every
      label's hypothesis in the unit ball. One factor for all labels keeps the argmax, so a
      multiclass margin is positive exactly when the rule classifies the example right, as §4
      states. For a binary problem this is ``y w . x^ / |w|_q``.

    A binary margin lies in [-1, 1] (Hölder). A multiclass margin is a difference of two outputs
    in [-1, 1], so in general it lies in [-2, 2]: §4's "lies in [-1, +1] once weight vectors and
    instances are properly normalized" does not hold exactly (three orthogonal instances give 1.5,
    ``tests/engine/test_alma.py::test_training_margins_by_hand``); the difference is not rescaled here (on
    USPS all margins lie within +-0.3). Hypotheses with a threshold (Khardon & Wachman's) are
    refused: the paper's margins are those of hyperplanes through the origin (Remark 1).
    """
    if log.theta_init != 0 or np.any(np.asarray(log.upd_theta) != 0):
        raise ValueError("training margins are defined for hyperplanes through the origin (Gentile 2001, "
                         "Remark 1); this log's hypotheses have a threshold")
    X = np.asarray(X)
    y = np.asarray(y)
    L = log.n_labels
    n = X.shape[0]
    out = np.zeros((n, L))
    norms = np.zeros(L)
    if log.hyp_w is not None:
        pp = float(p if p is not None else log.info.get("p", 2.0))
        qq = pp / (pp - 1.0)
        Xh = pnormalize(X, pp)
        for c in range(L):
            _, w = hypothesis_at(log, c, rule, cp_index, vote_weight)
            norms[c] = math.fsum((np.abs(w) ** qq).tolist()) ** (1.0 / qq)
            out[:, c] = ordered.matvec(Xh, w)
    else:
        Xd = np.asarray(X, dtype=np.float64)
        r_all = normalizing_factors(kernel_diag(kernel, Xd))
        hyps = [hypothesis_at(log, c, rule, cp_index, vote_weight) for c in range(L)]
        sv_all = np.unique(np.concatenate([h[0] for h in hyps] + [np.empty(0, np.int64)]))
        if sv_all.size:
            # coefficients of phi(x_j) (not of the normalized phi(x_j)^) for every label
            Bc = np.zeros((sv_all.size, L))
            for c, (sv, beta) in enumerate(hyps):
                np.add.at(Bc[:, c], np.searchsorted(sv_all, sv), beta)
            if log.kernel_normalized:
                Bc *= r_all[sv_all, None]
            Xs = Xd[sv_all]
            GB = ordered.matmul(gram(kernel, Xs, Xs), Bc)   # (K B)[j, c], then B[:, c] . (K B)[:, c]
            norms = np.sqrt(np.maximum([ordered.vdot(Bc[:, c], GB[:, c]) for c in range(L)], 0.0))
            for a in range(0, n, block):
                e = min(n, a + block)
                out[a:e] = ordered.matmul(gram(kernel, Xd[a:e], Xs), Bc) * r_all[a:e, None]
    out /= max(1.0, float(norms.max()) if L else 1.0)
    if binary:
        return np.where(y == 1, 1.0, -1.0) * out[:, 0]
    idx = np.arange(n)
    own = out[idx, y]
    others = out.copy()
    others[idx, y] = -np.inf
    return own - others.max(axis=1)


def margin_distribution(margins, grid=None):
    """(s, fraction of margins <= s) for s on ``grid`` (default 401 points in [-1, 1])."""
    m = np.sort(np.asarray(margins, dtype=np.float64))
    s = np.linspace(-1.0, 1.0, 401) if grid is None else np.asarray(grid, dtype=np.float64)
    return s, np.searchsorted(m, s, side="right") / max(1, m.size)


__all__ = ["hypothesis_at", "training_margins", "margin_distribution"]
