"""Kernel perceptrons on a memory budget, and NORMA: one dual engine, the algorithms as settings.

Every label of a one-vs-rest problem keeps its own support set of at most ``budget`` examples,
each with a real coefficient; the hypothesis is ``f(x) = sum_j coef_j K(x_j, x)``. A prediction
mistake is ``y f(x) <= 0``. The algorithms (``BudgetParams.algorithm``):

* ``stoptron``: the perceptron until the support set holds ``budget`` examples, then no update.
* ``rbp``: Randomized Budget Perceptron, Cavallanti, Cesa-Bianchi & Gentile (Machine Learning
  2007), Figure 1: on a mistake with a full support set, one support vector chosen uniformly at
  random is discarded, then ``(x_t, y_t)`` is added with coefficient ``y_t``.
* ``forgetron``: the self-tuned Forgetron, Dekel, Shalev-Shwartz & Singer (SIAM J. Comput. 2008),
  Figure 3: on a mistake ``f'_t = f_t + y_t K(x_t, .)``; when ``|I'_t| > B`` the oldest support
  vector ``r_t`` is removed after every weight (the new one's included) is shrunk by
  ``phi_t = max{phi in (0, 1] : Psi(sigma_{r_t,t} phi, mu_t) + Q_t <= 15/32 M_t}``, with
  ``Psi(lam, mu) = lam^2 + 2 lam - 2 lam mu``, ``mu_t = y_{r_t} f'_t(x_{r_t})``, ``M_t`` the
  mistakes so far (this one included) and ``Q_{t+1} = Q_t + Psi(sigma_{r_t,t} phi_t, mu_t)``.
* ``projectron`` and ``projectron++``: Orabona, Keshet & Caputo (JMLR 2009), Figures 1 and 2
  (the Projectron, and Projectron++). On a mistake, with ``k_t = (K(x_j, x_t))_j`` over the
  support set, ``d* = K_S^{-1} k_t`` and ``delta_t^2 = K(x_t, x_t) - k_t . d*`` (the squared
  distance of ``phi(x_t)`` from the span of the support set): if ``delta_t <= eta`` the update is
  projected onto the span (``coef += y_t d*``, the support set unchanged), else ``x_t`` is added
  and ``K_S^{-1}`` is extended by the block-inverse (Schur complement) formula
  ``[[K^-1 + d d^T / delta^2, -d / delta^2], [-d^T / delta^2, 1 / delta^2]]``, never re-inverted.
  Projectron++ also updates on margin errors ``0 < y f(x) < 1``: with the hinge loss
  ``l_t = 1 - y f(x)`` and ``|P k|^2 = k_t . d*``, ``coef += y_t beta_t d*`` where
  ``beta_t = min(l_t / |P k|^2, 2 (l_t - delta_t / eta) / |P k|^2, 1)``, when ``beta_t > 0``.
* ``norma``: NORMA, Kivinen, Smola & Williamson (IEEE TSP 2004), §III, the update (eq. 9-10
  with the soft-margin loss ``max(0, rho - y f(x))``): every step
  ``f <- (1 - eta_t lambda) f``, then ``+ eta_t y_t K(x_t, .)`` when ``y_t f(x_t) < rho``;
  ``eta_t = eta`` (schedule ``constant``) or ``eta / sqrt(t)`` (``sqrt``, t = 1, 2, ... the
  examples seen); truncation (§III-D): only the ``budget`` (= tau) most recent terms are kept.

Readings of the papers we had to choose (assumptions):

* Projectron has no hard budget in the paper (its size is bounded by ``eta``). Here, when its
  support set is full, every mistake is projected whatever ``delta_t`` is, so memory never
  exceeds ``budget``; with ``budget`` at least the number of examples it is the paper's algorithm.
* Projectron++'s margin-error update is applied when ``beta_t > 0`` (i.e. ``l_t > delta_t / eta``)
  and ``|P k|^2 > 0``; it never adds a support vector.
* NORMA: no offset ``b`` and a fixed ``rho`` (not the nu-version); truncation counts terms with
  a non-zero coefficient (steps without an update add no term), the oldest is dropped first; the
  decay applies to the terms present before the new one is added.
* RBP draws ``u[t, c]`` uniform in [0, 1) for every (step, label) from ``numpy.random.default_rng(seed)``
  (row by row, whether it is used or not) and removes the support vector of insertion rank
  ``floor(u * budget)`` (0 = the oldest still present).
* Forgetron: ``mu_t`` is taken on ``f'_t`` (after adding ``x_t``, before the shrinking), so that
  ``phi_t`` is chosen with ``mu_t`` fixed; ``phi_t`` is the larger root of the quadratic in
  ``sigma_{r_t,t} phi`` (in closed form), clipped to 1. ``M_t`` and the mistakes counted are those
  of the label's own binary problem.

Prediction (:func:`budget_scores`). The state at each checkpoint is recorded twice:

* ``last``: the support set and coefficients of the current hypothesis (at most ``budget`` terms);
* ``avg``: ``sum_{t=1}^{T} h_t``, the sum of the hypotheses after each of the T steps so far (the
  averaged perceptron's weighting by survival: a hypothesis counts once per step it is current).
  Removals, shrinkings, projections and decays change earlier terms' weights; the sum is formed
  per example (in effect ``acc[c, i] += coef_i`` for every support vector after every step: each
  slot sums its coefficient while it is scored, and hands the sum to its example when removed),
  so every change is counted from the step it happens on. The averaged hypothesis is NOT budgeted: its
  support is every example that was ever a support vector. 
* ``vote``: ``sum_{t=1}^{T} sign(h_t(x))``, the same survival weighting (Freund & Schapire's counts:
  a hypothesis counts once per step it is current). Removals, shrinkings and projections change
  earlier terms, so the log cannot rebuild ``h_t`` from the insertions alone: with
  ``record_changes`` the run records every change of a coefficient (an insertion, a removal as
  minus the coefficient removed, each term of a projection or margin update) and every rescaling
  of a whole hypothesis (the Forgetron's phi, NORMA's decay) as it happens; prediction replays
  them on the test points' scores (:func:`_vote_replay`). Memory: one entry per change, e.g. the
  insertions and removals, plus support-set size entries per projection.

Speed: the sequence is processed in chunks; a chunk's kernel values against every example in
any label's support set at the chunk start come from one GEMM (``kernels.gram``), and against
the chunk's own examples (support vectors added inside the chunk) from a second small one, so a
step costs O(labels x budget) in the jitted loop. Names are resolved to integer codes before it.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import namedtuple
from dataclasses import dataclass, field

import numba as nb
import numpy as np

from perceptron_lab.engine import ordered
from perceptron_lab.engine.kernels import Kernel, exact32_ok, gram, kernel_diag, sq_norms
from perceptron_lab.engine.base import sign_of
from perceptron_lab.engine.base import EngineError, chunk_bounds, epochs_to_steps

ALG_STOPTRON, ALG_RBP, ALG_FORGETRON, ALG_PROJECTRON, ALG_PROJECTRON_PP, ALG_NORMA = 0, 1, 2, 3, 4, 5
ALGORITHM_CODES = {"stoptron": ALG_STOPTRON, "rbp": ALG_RBP, "forgetron": ALG_FORGETRON,
                   "projectron": ALG_PROJECTRON, "projectron++": ALG_PROJECTRON_PP, "norma": ALG_NORMA}
LR_CONSTANT, LR_SQRT = 0, 1
LR_CODES = {"constant": LR_CONSTANT, "sqrt": LR_SQRT}

#: Event kinds of :attr:`BudgetLog.ev_kind`.
EV_MISTAKE, EV_INSERT, EV_REMOVE, EV_PROJECT, EV_MARGIN = 0, 1, 2, 3, 4
#: Kinds of the coefficient changes (:attr:`BudgetLog.ch_kind`): add ``val`` to example ``ex``'s
#: coefficient, or multiply every coefficient of the label by ``val``.
CH_ADD, CH_SCALE = 0, 1


@dataclass(frozen=True)
class BudgetParams:
    """Settings of the budgeted engine (see the module docstring for each algorithm).

    ``budget``: the most support vectors per label (NORMA: the truncation tau); ``eta``: the
    Projectron's threshold on ``delta_t``, or NORMA's learning rate; ``lam``, ``rho`` and
    ``schedule`` are NORMA's; ``seed`` the RBP's random removals.
    """

    algorithm: str
    budget: int
    eta: float = 0.1
    lam: float = 0.0
    rho: float = 1.0
    schedule: str = "constant"
    seed: int = 0

    def validate(self, n: int) -> None:
        if self.algorithm not in ALGORITHM_CODES:
            raise EngineError(f"unknown budgeted algorithm {self.algorithm!r}; expected one of "
                              + ", ".join(ALGORITHM_CODES))
        if int(self.budget) < 1:
            raise EngineError(f"budget must be a positive integer, got {self.budget}")
        if self.schedule not in LR_CODES:
            raise EngineError(f"schedule must be one of {', '.join(LR_CODES)}, got {self.schedule!r}")
        if self.algorithm in ("projectron", "projectron++", "norma") and not self.eta > 0:
            raise EngineError(f"{self.algorithm} needs eta > 0, got {self.eta}")
        if self.algorithm == "norma":
            if self.lam < 0 or self.eta * self.lam >= 1:
                raise EngineError(f"norma needs 0 <= lambda and eta * lambda < 1 (the decay factor "
                                  f"1 - eta_t lambda must stay positive), got eta = {self.eta}, lambda = {self.lam}")


@dataclass
class BudgetLog:
    """What a budgeted run records.

    ``ev_*``: one entry per event, in order: (step, label, kind, example), kinds EV_MISTAKE
    (a prediction mistake, ``y f(x) <= 0``), EV_INSERT, EV_REMOVE, EV_PROJECT, EV_MARGIN.
    ``mistakes_cp[k, c]``: label c's mistakes up to checkpoint k. ``last[k][c]`` and ``avg[k][c]``:
    (examples, coefficients) of label c's last and summed hypotheses at checkpoint k (support in
    insertion order for ``last``, ascending example index for ``avg``). ``max_support``: the
    largest support set any label held at any time. ``ch_*`` (recorded when asked for, for the
    voted rule): every change of a hypothesis, in order, as (step, label, kind, example, value):
    CH_ADD adds ``value`` to the coefficient of ``example`` (an insertion, a removal as minus the
    coefficient removed, each term of a projection), CH_SCALE multiplies the label's whole
    hypothesis by ``value`` (the Forgetron's shrinking, NORMA's decay).
    """

    n_train: int
    n_labels: int
    total_steps: int
    order: np.ndarray
    checkpoint_steps: np.ndarray
    params: BudgetParams
    ev_step: np.ndarray
    ev_cls: np.ndarray
    ev_kind: np.ndarray
    ev_ex: np.ndarray
    mistakes_cp: np.ndarray
    last: list
    avg: list
    max_support: int
    seconds: float = 0.0
    info: dict = field(default_factory=dict)
    ch_step: np.ndarray | None = None
    ch_cls: np.ndarray | None = None
    ch_kind: np.ndarray | None = None
    ch_ex: np.ndarray | None = None
    ch_val: np.ndarray | None = None

    @property
    def n_updates(self) -> int:
        """Changes of a hypothesis: insertions, projections and margin updates."""
        return int(np.isin(self.ev_kind, (EV_INSERT, EV_PROJECT, EV_MARGIN)).sum())


@nb.njit(cache=True)
def _remove_at(c, k, sv_ord, size, free, nfree, sv_ex, refc, acc, slot_acc):
    """Remove the support vector of insertion rank k from label c; returns its slot. The slot's
    running sum of coefficients goes to the example's entry of the averaged hypothesis."""
    s = sv_ord[c, k]
    acc[c, sv_ex[c, s]] += slot_acc[c, s]
    slot_acc[c, s] = 0.0
    for q in range(k, size[c] - 1):
        sv_ord[c, q] = sv_ord[c, q + 1]
    size[c] -= 1
    free[c, nfree[c]] = s
    nfree[c] += 1
    refc[sv_ex[c, s]] -= 1
    return s


@nb.njit(cache=True, inline="always")
def _emit(o_step, o_cls, o_kind, o_ex, n_out, t, c, kind, example):
    """Record one event (step, label, kind, example) at position ``n_out``; returns the next position."""
    o_step[n_out] = t
    o_cls[n_out] = c
    o_kind[n_out] = kind
    o_ex[n_out] = example
    return n_out + 1


@nb.njit(cache=True, inline="always")
def _change(ch, ch_val, n_ch, t, c, kind, example, val):
    """Record one coefficient change (step, label, kind, example) with its value at ``n_ch``."""
    ch[n_ch, 0] = t
    ch[n_ch, 1] = c
    ch[n_ch, 2] = kind
    ch[n_ch, 3] = example
    ch_val[n_ch] = val
    return n_ch + 1


#: One chunk of the sequence as :func:`_run_chunk` reads it: its examples ``ex`` (steps ``step0 ...``),
#: the labels ``Y``, K(x, x) ``kdiag``, the kernel block ``Kall`` (the chunk's examples against the
#: ``m0`` support vectors at the chunk start, then against themselves) and the uniform draws
#: ``urand[p, c]`` of the random removals.
BudgetChunk = namedtuple("BudgetChunk", "ex step0 Y kdiag Kall m0 urand")

#: The algorithm and its settings, resolved once per run: ``alg`` (ALG_*), the budget ``B``, ``eta``,
#: ``lam``, ``rho``, the schedule code ``lr`` (LR_*), and ``use_gs`` (keep the support vectors'
#: kernel matrix ``Gs``: Forgetron).
BudgetRule = namedtuple("BudgetRule", "alg B eta lam rho lr use_gs")

#: The support sets and what the chunks carry forward, per label c: slot s holds example
#: ``sv_ex[c, s]`` with coefficient ``sv_coef[c, s]`` (column ``sv_col[c, s]`` of the chunk's kernel
#: block); ``sv_ord[c, :size[c]]`` the live slots in insertion order; ``free[c, :nfree[c]]`` the free
#: slots; ``refc[i]`` the support sets holding example i; ``Gs``/``Kinv`` the Forgetron's kernel
#: matrices and the Projectrons' inverses; ``Q``, ``M`` the Forgetron's counters; ``acc``/``slot_acc``
#: the averaged hypothesis' sums; ``mistakes`` per label; ``kbuf``/``dbuf`` scratch rows.
Support = namedtuple("Support", "sv_ex sv_coef sv_col sv_ord size free nfree refc Gs Kinv Q M acc slot_acc "
                                "mistakes kbuf dbuf")

#: Where :func:`_run_chunk` writes: the events (``step``, ``cls``, ``kind``, ``ex``), and with ``record``
#: the coefficient changes (``ch`` rows of step, label, kind, example; ``ch_val`` their values).
Events = namedtuple("Events", "step cls kind ex record ch ch_val")


@nb.njit(cache=True)
def _run_chunk(chunk, p_start, rule, st, out):
    """One chunk of the sequence (a :data:`BudgetChunk`) from its example ``p_start``, by ``rule``
    (:data:`BudgetRule`) on the support sets ``st`` (:data:`Support`), writing to ``out``
    (:data:`Events`); returns (events, coefficient changes, the example it stopped before). With
    ``record``, it stops early when the change buffer ``ch`` might not hold one more example's
    changes (the caller empties it and goes on from there).

    ``Kall[p, sv_col[c, s]]`` is the kernel value between the chunk's example p and the support
    vector in slot s of label c: columns below ``m0`` are the support vectors at the chunk start,
    column ``m0 + q`` the chunk's example q. ``slot_acc[c, s]`` sums the slot's coefficient over
    the hypotheses before each step (see :func:`train_budget` for the averaged hypothesis)."""
    ex, step0, Y, kdiag, Kall, m0, urand = chunk
    alg, B, eta, lam, rho, lr, use_gs = rule
    sv_ex, sv_coef, sv_col, sv_ord, size, free, nfree, refc = st.sv_ex, st.sv_coef, st.sv_col, st.sv_ord, \
        st.size, st.free, st.nfree, st.refc
    Gs, Kinv, Q, M, acc, slot_acc, mistakes, kbuf, dbuf = st.Gs, st.Kinv, st.Q, st.M, st.acc, st.slot_acc, \
        st.mistakes, st.kbuf, st.dbuf
    o_step, o_cls, o_kind, o_ex, record, ch, ch_val = out
    nb_ = ex.shape[0]
    L = Y.shape[1]
    n_out = 0
    n_ch = 0
    room = L * (B + 3)
    for p in range(p_start, nb_):
        if record and n_ch + room > ch.shape[0]:
            return n_out, n_ch, p
        i = ex[p]
        t = step0 + p
        for c in range(L):
            y = Y[i, c]
            m = size[c]
            f = 0.0
            for q in range(m):
                s = sv_ord[c, q]
                a_s = sv_coef[c, s]
                f += a_s * Kall[p, sv_col[c, s]]
                slot_acc[c, s] += a_s
            yf = y * f
            if yf <= 0.0:
                mistakes[c] += 1
                M[c] += 1
                n_out = _emit(o_step, o_cls, o_kind, o_ex, n_out, t, c, EV_MISTAKE, i)
            insert = False
            coef_new = float(y)
            if alg == ALG_NORMA:
                eta_t = eta if lr == LR_CONSTANT else eta / math.sqrt(t + 1.0)
                decay = 1.0 - eta_t * lam
                if decay != 1.0:
                    for q in range(m):
                        s = sv_ord[c, q]
                        sv_coef[c, s] *= decay
                    if record and m > 0:
                        n_ch = _change(ch, ch_val, n_ch, t, c, CH_SCALE, -1, decay)
                if yf < rho:
                    insert = True
                    coef_new = eta_t * y
                    if m >= B:
                        s = _remove_at(c, 0, sv_ord, size, free, nfree, sv_ex, refc, acc, slot_acc)
                        n_out = _emit(o_step, o_cls, o_kind, o_ex, n_out, t, c, EV_REMOVE, sv_ex[c, s])
                        if record:
                            n_ch = _change(ch, ch_val, n_ch, t, c, CH_ADD, sv_ex[c, s], -sv_coef[c, s])
            elif alg == ALG_STOPTRON:
                insert = yf <= 0.0 and m < B
            elif alg == ALG_RBP:
                if yf <= 0.0:
                    insert = True
                    if m >= B:
                        k = int(urand[p, c] * m)
                        s = _remove_at(c, k, sv_ord, size, free, nfree, sv_ex, refc, acc, slot_acc)
                        n_out = _emit(o_step, o_cls, o_kind, o_ex, n_out, t, c, EV_REMOVE, sv_ex[c, s])
                        if record:
                            n_ch = _change(ch, ch_val, n_ch, t, c, CH_ADD, sv_ex[c, s], -sv_coef[c, s])
            elif alg == ALG_FORGETRON:
                if yf <= 0.0:
                    insert = True
                    if m >= B:
                        r = sv_ord[c, 0]
                        yr = 1.0 if Y[sv_ex[c, r], c] > 0 else -1.0
                        sig = sv_coef[c, r] * yr
                        fr = 0.0
                        for q in range(m):
                            s = sv_ord[c, q]
                            fr += sv_coef[c, s] * Gs[c, r, s]
                        fr += y * Kall[p, sv_col[c, r]]
                        mu = yr * fr
                        # Psi(sig phi, mu) + Q <= 15/32 M: lam^2 + 2 (1 - mu) lam + (Q - 15 M / 32) <= 0
                        bq = 1.0 - mu
                        cq = Q[c] - 15.0 / 32.0 * M[c]
                        disc = bq * bq - cq
                        if disc < 0.0:
                            disc = 0.0
                        root = math.sqrt(disc)
                        if bq > 0.0:
                            lam_plus = -cq / (bq + root) if bq + root > 0.0 else 0.0
                        else:
                            lam_plus = -bq + root
                        phi = 1.0
                        if sig > 0.0 and lam_plus < sig:
                            phi = lam_plus / sig
                        if phi <= 0.0:
                            phi = 0.0
                        lmb = sig * phi
                        Q[c] += lmb * lmb + 2.0 * lmb - 2.0 * lmb * mu
                        for q in range(m):
                            s = sv_ord[c, q]
                            sv_coef[c, s] *= phi
                        coef_new = phi * y
                        if record and phi != 1.0:
                            n_ch = _change(ch, ch_val, n_ch, t, c, CH_SCALE, -1, phi)
                        s = _remove_at(c, 0, sv_ord, size, free, nfree, sv_ex, refc, acc, slot_acc)
                        n_out = _emit(o_step, o_cls, o_kind, o_ex, n_out, t, c, EV_REMOVE, sv_ex[c, s])
                        if record:
                            n_ch = _change(ch, ch_val, n_ch, t, c, CH_ADD, sv_ex[c, s], -sv_coef[c, s])
            else:  # Projectron, Projectron++
                margin_err = alg == ALG_PROJECTRON_PP and yf > 0.0 and yf < 1.0
                if yf <= 0.0 or margin_err:
                    # slots 0 .. m-1 in insertion order (the Projectron never removes)
                    for q in range(m):
                        kbuf[q] = Kall[p, sv_col[c, q]]
                    kd = 0.0
                    for a in range(m):
                        acc_d = 0.0
                        for b in range(m):
                            acc_d += Kinv[c, a, b] * kbuf[b]
                        dbuf[a] = acc_d
                        kd += kbuf[a] * acc_d
                    d2 = kdiag[i] - kd
                    delta = math.sqrt(d2) if d2 > 0.0 else 0.0
                    if yf <= 0.0:
                        if delta > eta and m < B:
                            insert = True
                            # block inverse of [[K, k], [k^T, K(x, x)]] from K^-1 (Schur complement d2)
                            for a in range(m):
                                for b in range(m):
                                    Kinv[c, a, b] += dbuf[a] * dbuf[b] / d2
                                Kinv[c, a, m] = -dbuf[a] / d2
                                Kinv[c, m, a] = -dbuf[a] / d2
                            Kinv[c, m, m] = 1.0 / d2
                        elif m > 0:
                            for q in range(m):
                                sv_coef[c, q] += y * dbuf[q]
                                if record:
                                    n_ch = _change(ch, ch_val, n_ch, t, c, CH_ADD, sv_ex[c, q], y * dbuf[q])
                            n_out = _emit(o_step, o_cls, o_kind, o_ex, n_out, t, c, EV_PROJECT, i)
                    elif kd > 0.0:
                        loss = 1.0 - yf
                        beta = min(loss / kd, 2.0 * (loss - delta / eta) / kd, 1.0)
                        if beta > 0.0:
                            for q in range(m):
                                sv_coef[c, q] += y * beta * dbuf[q]
                                if record:
                                    n_ch = _change(ch, ch_val, n_ch, t, c, CH_ADD, sv_ex[c, q], y * beta * dbuf[q])
                            n_out = _emit(o_step, o_cls, o_kind, o_ex, n_out, t, c, EV_MARGIN, i)
            if insert:
                if nfree[c] > 0:
                    nfree[c] -= 1
                    s = free[c, nfree[c]]
                else:
                    s = size[c]
                mm = size[c]
                if use_gs:
                    for q in range(mm):
                        s2 = sv_ord[c, q]
                        v = Kall[p, sv_col[c, s2]]
                        Gs[c, s, s2] = v
                        Gs[c, s2, s] = v
                    Gs[c, s, s] = kdiag[i]
                sv_ex[c, s] = i
                sv_coef[c, s] = coef_new
                sv_ord[c, mm] = s
                size[c] = mm + 1
                refc[i] += 1
                sv_col[c, s] = m0 + p
                n_out = _emit(o_step, o_cls, o_kind, o_ex, n_out, t, c, EV_INSERT, i)
                if record:
                    n_ch = _change(ch, ch_val, n_ch, t, c, CH_ADD, i, coef_new)
    return n_out, n_ch, nb_


def _grow(a: np.ndarray, shape: tuple) -> np.ndarray:
    """``a`` zero-padded at the end of each axis to ``shape``."""
    out = np.zeros(shape, dtype=a.dtype)
    out[tuple(slice(0, s) for s in a.shape)] = a
    return out


class BudgetRun:
    """One budgeted run that continues: :meth:`steps` on examples (rows of ``X``), as many times as
    wanted, then :meth:`log`. :func:`train_budget` (``plab run``'s units, ``BudgetPerceptron.fit``),
    ``BudgetPerceptron.partial_fit`` and the online classes' ``learn_one`` are all this one driver.

    X: (n, f) features; Y: (n, L) labels in {-1, +1} (:func:`~perceptron_lab.engine.perceptron.label_matrix`).
    ``record``: keep every change of the hypotheses (``BudgetLog.ch_*``, what the voted rule
    replays). ``capacity``: support slots per label allocated at once, and the most a support set
    holds while :attr:`limit` is not raised (:func:`train_budget` gives the number of training
    examples: a budget beyond it acts as that number); None: slots grown as the support sets grow,
    up to the budget, for a run whose length is not known. The Forgetron and the
    Projectrons keep a budget x budget matrix per label; growing it past ``memory_limit_gb``
    stops with an :class:`~perceptron_lab.engine.base.EngineError`.

    Rows can be added (:meth:`add_examples`, :meth:`add_label`, :meth:`widen`) and dropped when
    no hypothesis refers to them (:meth:`compact`); ``pos[r]`` is row r's position in the stream
    of examples seen, which the events record.
    """

    def __init__(self, X, Y, kernel: Kernel, params: BudgetParams, record: bool = False,
                 memory_limit_gb: float = 8.0, capacity: int | None = None, change_buffer: int = 1 << 16):
        if kernel.name == "precomputed":
            raise EngineError("the budgeted engine needs a kernel function, not a precomputed Gram matrix")
        X = np.ascontiguousarray(X, dtype=np.float64)
        Y = np.ascontiguousarray(Y, dtype=np.int8)
        n, L = Y.shape
        if X.shape[0] != n:
            raise EngineError(f"X has {X.shape[0]} rows but Y has {n}")
        params.validate(n)
        self.kernel, self.params, self.record = kernel, params, record
        self.memory_limit_gb, self.change_buffer = float(memory_limit_gb), int(change_buffer)
        self.alg = ALGORITHM_CODES[params.algorithm]
        self.X, self.Y = X, Y
        self.kdiag, self.sq = kernel_diag(kernel, X), sq_norms(X)
        # integer features (raw pixels, 0/1 indicators): kernel blocks by exact float32 GEMMs, the same values
        self.exact = exact32_ok(X)
        self.X32 = X.astype(np.float32) if self.exact else None
        self.pos, self.n_seen = np.arange(n), n
        self.steps_done = 0
        self.cap = 0
        B = 1 if capacity is None else max(1, int(min(params.budget, capacity)))
        #: The most support vectors a label holds (the budget, or ``capacity`` when given).
        self.limit = int(params.budget) if capacity is None else B
        self._check_memory(B, L)
        self.sv_ex, self.sv_coef = np.zeros((L, B), np.int64), np.zeros((L, B))
        self.sv_ord, self.free, self.slot_acc = np.zeros((L, B), np.int64), np.zeros((L, B), np.int64), np.zeros((L, B))
        self.size, self.nfree, self.refc = np.zeros(L, np.int64), np.zeros(L, np.int64), np.zeros(n, np.int64)
        self.Gs = np.zeros((L, B, B) if self.alg == ALG_FORGETRON else (1, 1, 1))
        self.Kinv = np.zeros((L, B + 1, B + 1) if self._proj else (1, 1, 1))
        self.Q, self.M = np.zeros(L), np.zeros(L, np.int64)
        self.acc, self.mistakes = np.zeros((L, n)), np.zeros(L, np.int64)
        self.rng = np.random.default_rng(params.seed)
        self.cap = B
        self.kbuf, self.dbuf = np.zeros(B + 1), np.zeros(B + 1)
        self._bufs, self._ch, self._ch_val = None, None, None
        self.keep_events = True   # the events of the log (the online classes keep counts only)
        self.events, self.changes = [], []
        self.max_support, self.kernel_seconds, self.chunks = 0, 0.0, 0

    @property
    def _proj(self) -> bool:
        return self.alg in (ALG_PROJECTRON, ALG_PROJECTRON_PP)

    def _check_memory(self, B: int, L: int) -> None:
        if self.alg in (ALG_FORGETRON, ALG_PROJECTRON, ALG_PROJECTRON_PP):
            need = L * (B + 1) ** 2 * 8 / 1e9
            if need > self.memory_limit_gb:
                raise EngineError(f"{self.params.algorithm} keeps a {B} x {B} kernel matrix per label: {need:.1f} GB "
                                  f"for {L} labels, more than the {self.memory_limit_gb:g} GB allowed (cache_limit_gb); "
                                  "set a smaller budget")

    def _reserve(self, extra: int) -> None:
        """Room for ``extra`` more insertions per label (up to the budget)."""
        want = int(min(self.limit, int(self.size.max(initial=0)) + extra))
        if want <= self.cap:
            return
        want = int(min(self.limit, max(want, 2 * self.cap)))
        L = self.Y.shape[1]
        self._check_memory(want, L)
        for k in ("sv_ex", "sv_coef", "sv_ord", "free", "slot_acc"):
            setattr(self, k, _grow(getattr(self, k), (L, want)))
        if self.alg == ALG_FORGETRON:
            self.Gs = _grow(self.Gs, (L, want, want))
        if self._proj:
            self.Kinv = _grow(self.Kinv, (L, want + 1, want + 1))
        self.cap = want
        self.kbuf, self.dbuf = np.zeros(want + 1), np.zeros(want + 1)

    # ------------------------------------------------------------------ the examples it holds

    def add_label(self) -> None:
        """A new label column (one-vs-rest), empty, its examples so far all negative."""
        L = self.Y.shape[1]
        self.Y = np.concatenate([self.Y, -np.ones((self.Y.shape[0], 1), np.int8)], axis=1)
        for k in ("sv_ex", "sv_coef", "sv_ord", "size", "free", "nfree", "Gs", "Kinv", "Q", "M", "acc", "slot_acc",
                  "mistakes"):
            a = getattr(self, k)
            if k in ("Gs", "Kinv") and a.shape[0] != L:
                continue  # the (1, 1, 1) placeholder of an algorithm that does not use it
            setattr(self, k, _grow(a, (L + 1, *a.shape[1:])))

    def widen(self, n_features: int) -> None:
        """Zero columns for features that appear only now (every earlier example lacks them)."""
        if n_features > self.X.shape[1]:
            self.X = _grow(self.X, (self.X.shape[0], n_features))
            if self.X32 is not None:
                self.X32 = self.X.astype(np.float32)

    def add_examples(self, X, Y) -> np.ndarray:
        """Append new examples (their features and label columns); returns their row indices."""
        X = np.asarray(X, dtype=np.float64)
        n0 = self.X.shape[0]
        self.X = np.concatenate([self.X, X])
        self.Y = np.concatenate([self.Y, np.asarray(Y, dtype=np.int8)])
        self.kdiag = np.concatenate([self.kdiag, kernel_diag(self.kernel, X)])
        self.sq = np.concatenate([self.sq, sq_norms(X)])
        self.refc = np.concatenate([self.refc, np.zeros(len(X), np.int64)])
        self.acc = np.concatenate([self.acc, np.zeros((self.Y.shape[1], len(X)))], axis=1)
        self.pos = np.concatenate([self.pos, np.arange(self.n_seen, self.n_seen + len(X))])
        self.n_seen += len(X)
        self.exact = self.exact and exact32_ok(X)
        self.X32 = self.X.astype(np.float32) if self.exact else None
        return np.arange(n0, self.X.shape[0])

    def drop_last_unused(self) -> None:
        """Forget the last example if no hypothesis refers to it (the common case of a step
        without an insertion; :meth:`compact` in O(1))."""
        i = self.X.shape[0] - 1
        if i >= 0 and self.refc[i] == 0 and not self.acc[:, i].any() and not self.record:
            for k in ("X", "Y", "kdiag", "sq", "refc", "pos"):
                setattr(self, k, getattr(self, k)[:i])
            self.acc = self.acc[:, :i]
            if self.X32 is not None:
                self.X32 = self.X32[:i]

    def compact(self, keep_avg: bool = True) -> None:
        """Keep the rows some hypothesis refers to (in a copy: never the caller's array), renumbered
        in order: those in a support set, in the averaged hypothesis, or in a recorded change.
        Without ``keep_avg`` the averaged hypothesis is given up (for a run that never predicts
        with it): only the support sets' rows (and the changes') are kept."""
        used = (self.refc > 0) | (self.acc.any(axis=0) if keep_avg else False)
        for ch, _ in self.changes:
            used[ch[ch[:, 2] == CH_ADD, 3]] = True
        keep = np.flatnonzero(used)
        new = np.zeros(self.X.shape[0], dtype=np.int64)
        new[keep] = np.arange(keep.size)
        for k in ("X", "Y", "kdiag", "sq", "refc", "pos"):
            setattr(self, k, np.ascontiguousarray(getattr(self, k)[keep]))
        if self.X32 is not None:
            self.X32 = np.ascontiguousarray(self.X32[keep])
        self.acc = np.ascontiguousarray(self.acc[:, keep])
        self.sv_ex = new[self.sv_ex]  # free slots keep some row: never read before an insertion sets them
        for ch, _ in self.changes:
            adds = ch[:, 2] == CH_ADD
            ch[adds, 3] = new[ch[adds, 3]]

    # ------------------------------------------------------------------ training

    def steps(self, seq, chunk_size: int = 512) -> None:
        """Steps on the examples ``seq`` (row indices), in order, ``chunk_size`` at a time: each
        chunk's kernel block (its examples against the support vectors and against themselves)
        by one GEMM, then the jitted loop of :func:`_run_chunk`."""
        seq = np.asarray(seq, dtype=np.int64)
        L = self.Y.shape[1]
        p = self.params
        for a in range(0, len(seq), chunk_size):
            ex = np.ascontiguousarray(seq[a:a + chunk_size])
            self._reserve(ex.size)
            B = int(min(self.limit, self.cap))
            pool = np.flatnonzero(self.refc)
            colmap = np.full(self.X.shape[0], -1, dtype=np.int64)
            colmap[pool] = np.arange(pool.size)
            sv_col = colmap[self.sv_ex]  # slots not in use get garbage, never read
            cols = np.concatenate([pool, ex])
            tg = time.perf_counter()
            Kall = gram(self.kernel, self.X[ex], self.X[cols], self.sq[ex], self.sq[cols], exact32=self.exact,
                        B32=self.X32[cols] if self.exact else None)
            urand = self.rng.random((ex.size, L))
            self.kernel_seconds += time.perf_counter() - tg
            if self._bufs is None or self._bufs[0].size < 3 * ex.size * L:
                self._bufs = [np.empty(3 * ex.size * L, dtype=np.int64) for _ in range(4)]
            need_ch = max(self.change_buffer, 2 * L * (B + 3)) if self.record else 1
            if self._ch is None or self._ch.shape[0] < need_ch:
                self._ch, self._ch_val = np.empty((need_ch, 4), dtype=np.int64), np.empty(need_ch)
            p_start = 0
            while p_start < ex.size:
                m, n_ch, p_start = _run_chunk(
                    BudgetChunk(ex, self.steps_done + a, self.Y, self.kdiag, Kall, pool.size, urand), p_start,
                    resolve_rule(p, self.alg, B),
                    Support(self.sv_ex, self.sv_coef, sv_col, self.sv_ord, self.size, self.free, self.nfree,
                            self.refc, self.Gs, self.Kinv, self.Q, self.M, self.acc, self.slot_acc, self.mistakes,
                            self.kbuf, self.dbuf),
                    Events(*self._bufs, self.record, self._ch, self._ch_val))
                if m and self.keep_events:
                    ev = np.stack([b[:m] for b in self._bufs], axis=1)
                    ev[:, 3] = self.pos[ev[:, 3]]  # events name stream positions, which compact() keeps
                    self.events.append(ev)
                if n_ch:
                    self.changes.append((self._ch[:n_ch].copy(), self._ch_val[:n_ch].copy()))
            self.max_support = max(self.max_support, int(self.size.max(initial=0)))
            self.chunks += 1
        self.steps_done += len(seq)

    # ------------------------------------------------------------------ what it holds

    def hypotheses(self, avg: bool = True):
        """(last, avg) now: per label, (examples, coefficients) of the current hypothesis and of
        the summed one (empty without ``avg``)."""
        L = self.Y.shape[1]
        live = [self.sv_ord[c, :self.size[c]] for c in range(L)]
        last = [(self.sv_ex[c, o].copy(), self.sv_coef[c, o].copy()) for c, o in enumerate(live)]
        summed = [_avg_state(self.acc[c], self.sv_ex[c], self.sv_coef[c], self.slot_acc[c], o) if avg
                  else (np.empty(0, np.int64), np.empty(0)) for c, o in enumerate(live)]
        return last, summed

    def log(self, avg: bool = True, snapshots=None, order=None, checkpoint_steps=None, seconds: float = 0.0) -> BudgetLog:
        """The :class:`BudgetLog` of the run so far: at the checkpoints ``snapshots`` (a list of
        (mistakes, last, avg) taken by :meth:`snapshot`, at ``checkpoint_steps``), or at one
        checkpoint, now (without ``avg``, the averaged hypothesis is left empty)."""
        L = self.Y.shape[1]
        if snapshots is None:
            last, summed = self.hypotheses(avg)
            snapshots, checkpoint_steps = [(self.mistakes.copy(), last, summed)], np.array([self.steps_done])
        ev = np.concatenate(self.events) if self.events else np.empty((0, 4), np.int64)
        chs = {}
        if self.record:
            allc = np.concatenate([c for c, _ in self.changes]) if self.changes else np.empty((0, 4), np.int64)
            chs = dict(ch_step=allc[:, 0].copy(), ch_cls=allc[:, 1].copy(), ch_kind=allc[:, 2].copy(),
                       ch_ex=allc[:, 3].copy(),
                       ch_val=np.concatenate([v for _, v in self.changes]) if self.changes else np.empty(0))
        info = {"algorithm": self.params.algorithm, "budget": int(min(self.limit, self.cap)),
                "Q": self.Q.tolist() if self.alg == ALG_FORGETRON else None,
                "kernel_seconds": round(self.kernel_seconds, 3), "chunks": self.chunks}
        return BudgetLog(n_train=self.X.shape[0], n_labels=L, total_steps=int(self.steps_done),
                         order=np.empty(0, np.int64) if order is None else order,
                         checkpoint_steps=np.asarray(checkpoint_steps, dtype=np.int64), params=self.params,
                         ev_step=ev[:, 0].copy(), ev_cls=ev[:, 1].copy(), ev_kind=ev[:, 2].copy(),
                         ev_ex=ev[:, 3].copy(), mistakes_cp=np.array([m for m, _, _ in snapshots]).reshape(-1, L),
                         last=[la for _, la, _ in snapshots], avg=[av for _, _, av in snapshots],
                         max_support=self.max_support, seconds=seconds, info=info, **chs)

    def __getstate__(self):
        state = dict(self.__dict__)   # the scratch buffers of the jitted step are not the model
        state.update(_bufs=None, _ch=None, _ch_val=None)
        return state

    def snapshot(self):
        """(mistakes per label, last, avg) now: one checkpoint of :meth:`log`."""
        last, summed = self.hypotheses()
        return self.mistakes.copy(), last, summed


def train_budget(X, Y, kernel: Kernel, params: BudgetParams, order, epochs: float, checkpoints=None,
                 chunk_size: int = 512, progress=None, memory_limit_gb: float = 8.0,
                 record_changes: bool = False, change_buffer: int = 1 << 20, run: BudgetRun | None = None) -> BudgetLog:
    """Train one-vs-rest budgeted kernel perceptrons (or NORMA) on ``order`` repeated for ``epochs``.

    X: (n, f) features; Y: (n, L) in {-1, +1} (:func:`~perceptron_lab.engine.perceptron.label_matrix`);
    order: a permutation of range(n); checkpoints: epochs (fractions allowed; default: ``epochs``).
    Kernel values are float64. Forgetron and the Projectrons keep a budget x budget matrix per
    label; a run whose matrices would exceed ``memory_limit_gb`` stops with an error.
    ``record_changes``: keep every change of the hypotheses (``BudgetLog.ch_*``, what the voted
    rule replays), gathered ``change_buffer`` at a time. ``run``: a :class:`BudgetRun` started on
    ``(X, Y)`` to drive (an estimator keeps it to continue the run); by default one is started
    here. Returns a :class:`BudgetLog`; :func:`budget_scores` predicts from it.
    """
    t0 = time.perf_counter()
    n = np.shape(Y)[0]
    if run is None:
        run = BudgetRun(X, Y, kernel, params, record_changes, memory_limit_gb, capacity=n, change_buffer=change_buffer)
    order = np.ascontiguousarray(order, dtype=np.int64)
    checkpoints = [epochs] if checkpoints is None else list(checkpoints)
    total = epochs_to_steps(epochs, n)
    cp_steps = np.array(sorted({epochs_to_steps(c, n) for c in checkpoints} | {total}), dtype=np.int64)
    if total < 1 or cp_steps[0] < 1 or cp_steps[-1] > total:
        raise EngineError(f"checkpoints {checkpoints} must lie in (0, {epochs}] and cover >= 1 step")
    bounds = chunk_bounds(n, total, cp_steps, chunk_size)
    snapshots = []
    cp_ptr = 0
    for a, b in zip(bounds[:-1], bounds[1:]):
        run.steps(order[np.arange(a, b) % n], chunk_size=b - a)
        while cp_ptr < cp_steps.size and cp_steps[cp_ptr] == b:
            snapshots.append(run.snapshot())
            cp_ptr += 1
        if progress is not None:
            progress(b - a)
    log = run.log(snapshots=snapshots, order=order, checkpoint_steps=cp_steps, seconds=time.perf_counter() - t0)
    run.limit = int(params.budget)   # a run continued after this one (partial_fit) has the whole budget
    return log


def resolve_rule(params: BudgetParams, alg: int, B: int) -> BudgetRule:
    """The :data:`BudgetRule` of ``params`` for the algorithm code ``alg`` and the budget ``B``."""
    return BudgetRule(alg, B, float(params.eta), float(params.lam), float(params.rho), LR_CODES[params.schedule],
                      alg == ALG_FORGETRON)


def _avg_state(acc, sv_ex, sv_coef, slot_acc, live):
    """(examples, coefficients) of the summed hypothesis sum_{t=1}^{T} h_t. The jitted loop sums
    the hypotheses before each step (``h_0 ... h_{T-1}``, h_0 = 0): removed slots in ``acc``,
    live ones in ``slot_acc``; adding the current hypothesis h_T gives ``h_1 + ... + h_T``."""
    tot = acc.copy()
    np.add.at(tot, sv_ex[live], slot_acc[live] + sv_coef[live])
    nz = np.flatnonzero(tot)
    return nz, tot[nz]


@nb.njit(cache=True)
def _vote_replay(steps, kinds, cols, vals, Kc, T, out):
    """Add ``sum_{t=1}^{T} sign(h_t(x))`` to ``out`` for every test point x, where h_t is one label's
    hypothesis after step t: its coefficient changes (``steps`` ascending, ``kinds``, ``vals``; the
    example of a CH_ADD is row ``cols[j]`` of ``Kc``, its kernel values against the test points) are
    replayed on the test scores, and the hypothesis in force after step s until the next change at
    s' counts s' - s times (T - s for the last one): Freund & Schapire's survival counts."""
    n_test = Kc.shape[1]
    F = np.zeros(n_test)
    cur = -1
    for j in range(steps.shape[0]):
        st = steps[j]
        if st != cur:
            if cur >= 0:
                w = float(st - cur)
                for r in range(n_test):
                    out[r] += w * sign_of(F[r])
            cur = st
        v = vals[j]
        if kinds[j] == CH_SCALE:
            for r in range(n_test):
                F[r] *= v
        else:
            col = cols[j]
            for r in range(n_test):
                F[r] += v * Kc[col, r]
    if cur >= 0:
        w = float(T - cur)
        for r in range(n_test):
            out[r] += w * sign_of(F[r])


@nb.njit(cache=True)
def _hypotheses(steps, kinds, cols, vals, j0, coef, T, C, w):
    """From change ``j0``, the coefficient vectors (rows of ``C``, over the columns ``cols`` index)
    of the successive hypotheses and their survival counts ``w``, as many as ``C`` holds; ``coef``
    carries the current vector between calls. Returns (hypotheses written, the next change)."""
    n = steps.shape[0]
    j = j0
    k = 0
    while j < n and k < C.shape[0]:
        st = steps[j]
        while j < n and steps[j] == st:
            if kinds[j] == CH_SCALE:
                for q in range(coef.shape[0]):
                    coef[q] *= vals[j]
            else:
                coef[cols[j]] += vals[j]
            j += 1
        C[k, :] = coef
        w[k] = (steps[j] if j < n else T) - st
        k += 1
    return k, j


#: The voted rule scores every hypothesis with one matrix product when its changes average more
#: than (support examples / this) per hypothesis (projections), else it replays the changes.
GEMM_VOTE_RATIO = 64


def _vote_scores(log: BudgetLog, kernel: Kernel, X_train, X_test, checkpoint: int, block: int = 2048,
                 method: str = "auto"):
    """Scores (m, L) of the voted rule: ``sum_{t=1}^{T} sign(h_t(x))`` per label (T the checkpoint's
    steps), from the recorded coefficient changes, test points in blocks of ``block``. ``method``:
    ``replay`` applies each change to the test scores (cost: changes x test points); ``gemm`` builds
    the hypotheses' coefficient vectors and scores them with matrix products (hypotheses x support
    examples x test points, at GEMM speed: the faster one when each projection changes every
    coefficient); ``auto`` picks by :data:`GEMM_VOTE_RATIO`."""
    if log.ch_step is None:
        raise EngineError("the voted rule of a budgeted run needs its hypotheses' changes: train with "
                          "record_changes=True (a config run does so when prediction.rules lists vote)")
    T = int(log.checkpoint_steps[checkpoint])
    out = np.zeros((X_test.shape[0], log.n_labels))
    upto = log.ch_step < T
    # one kernel block per run of test points against every example any label's changes name
    # (the labels' supports overlap), each label reading its own rows of it
    union = np.unique(log.ch_ex[upto & (log.ch_kind == CH_ADD)])
    labels = []
    for c in range(log.n_labels):
        sel = upto & (log.ch_cls == c)
        steps, kinds, exs, vals = log.ch_step[sel], log.ch_kind[sel], log.ch_ex[sel], log.ch_val[sel]
        if steps.size == 0:
            continue
        adds = kinds == CH_ADD
        cols = np.full(exs.size, -1, dtype=np.int64)
        cols[adds] = np.searchsorted(union, exs[adds])
        n_hyp = int(np.unique(steps).size)
        # this label's support rows of the shared block, and its changes' columns among them
        sup, local = np.unique(cols[adds], return_inverse=True)
        gemm = method == "gemm" or (method == "auto" and steps.size * GEMM_VOTE_RATIO > n_hyp * sup.size)
        lcols = np.full(cols.size, -1, dtype=np.int64)
        lcols[adds] = local
        labels.append((c, steps, kinds, cols, vals, n_hyp, gemm, sup, lcols))
    if not labels:
        return out
    Xu = X_train[union]
    for a, b in _test_blocks(X_test.shape[0], union.size, min(1 << 25, block * union.size)):
        Kc = np.ascontiguousarray(gram(kernel, Xu, X_test[a:b]))
        for c, steps, kinds, cols, vals, n_hyp, gemm, sup, lcols in labels:
            if not gemm:
                part = np.zeros(b - a)
                _vote_replay(steps, kinds, cols, vals, Kc, T, part)
                out[a:b, c] = part
                continue
            Ks = Kc[sup]  # the hypotheses' coefficient vectors are over this label's support rows
            rows = max(1, min(n_hyp, (1 << 22) // max(sup.size, b - a, 1)))
            C, w, coef = np.empty((rows, sup.size)), np.empty(rows), np.zeros(sup.size)
            j = 0
            while j < steps.size:
                k, j = _hypotheses(steps, kinds, lcols, vals, j, coef, T, C, w)
                out[a:b, c] += ordered.vecmat(w[:k], np.sign(ordered.matmul(C[:k], Ks)))
    return out


def budget_scores(log: BudgetLog, kernel: Kernel, X_train, X_test, rule: str = "last", checkpoint: int = -1):
    """Scores (m, L) of the ``last``, ``avg`` or ``vote`` hypothesis at checkpoint index ``checkpoint``."""
    if rule not in ("last", "avg", "vote"):
        raise EngineError(f"budgeted runs predict with the rules last, avg and vote, got {rule!r}")
    X_train = np.ascontiguousarray(X_train, dtype=np.float64)
    X_test = np.ascontiguousarray(X_test, dtype=np.float64)
    if rule == "vote":
        return _vote_scores(log, kernel, X_train, X_test, checkpoint % log.checkpoint_steps.size)
    state = (log.last if rule == "last" else log.avg)[checkpoint]
    # the labels' supports overlap: one kernel block against their union, one coefficient column per label
    union = np.unique(np.concatenate([exs for exs, _ in state])) if state else np.empty(0, dtype=np.int64)
    out = np.zeros((X_test.shape[0], log.n_labels))
    if union.size == 0:
        return out
    A = np.zeros((union.size, log.n_labels))
    for c, (exs, coefs) in enumerate(state):
        np.add.at(A[:, c], np.searchsorted(union, exs), coefs)  # an example may hold several terms (NORMA)
    Xu = X_train[union]
    for a, b in _test_blocks(X_test.shape[0], union.size):
        out[a:b] = ordered.matmul(gram(kernel, X_test[a:b], Xu), A)
    return out


def _test_blocks(n_test: int, width: int, entries: int = 1 << 25):
    """(start, stop) of test blocks whose kernel block against ``width`` columns holds at most
    ``entries`` values (256 MB in float64), at least 64 points each."""
    step = max(64, entries // max(width, 1))
    return [(a, min(a + step, n_test)) for a in range(0, n_test, step)]


def budget_predict(log: BudgetLog, kernel: Kernel, X_train, X_test, rule: str = "last", checkpoint: int = -1):
    """Predicted classes: argmax over labels (first on ties), or score > 0 for one binary column."""
    s = budget_scores(log, kernel, X_train, X_test, rule, checkpoint)
    if log.n_labels == 1:
        return (s[:, 0] > 0).astype(np.int64)
    return np.argmax(s, axis=1)


def budget_errors(log: BudgetLog, kernel: Kernel, X_train, X_test, y_test, binary: bool, rule_names, rules):
    """Wrong predictions ``(errors_multi, errors_bin)`` of shapes (n_cp, len(rule_names)) and
    (n_cp, len(rule_names), L), as :func:`perceptron_lab.model.predict.evaluate` returns them (rule order
    ``rule_names``; rules not computed are -1): multiclass by argmax (first on ties), each label and
    binary problems by score > 0."""
    n_cp, L = log.checkpoint_steps.size, log.n_labels
    err_m = np.full((n_cp, len(rule_names)), -1, dtype=np.int64)
    err_b = np.full((n_cp, len(rule_names), L), -1, dtype=np.int64)
    y_test = np.asarray(y_test)
    truth = (y_test == 1)[:, None] if binary else (y_test[:, None] == np.arange(L)[None, :])
    for k in range(n_cp):
        for rule in rules:
            r = rule_names.index(rule)
            s = budget_scores(log, kernel, X_train, X_test, rule, k)
            if not np.all(np.isfinite(s)):
                from perceptron_lab.errors import NumericError

                raise NumericError(f"the {rule} hypothesis of {log.params.algorithm} has non-finite test scores; "
                                   "use a smaller kernel scale (kernel.scale) or degree")
            pred = (s[:, 0] > 0).astype(np.int64) if binary else np.argmax(s, axis=1)
            err_m[k, r] = int(np.sum(pred != y_test))
            err_b[k, r] = np.sum((s > 0) != truth, axis=0)
    return err_m, err_b


def budget_counts(log: BudgetLog) -> dict:
    """``mistakes`` (n_cp, L): prediction mistakes so far; ``support_vectors`` (n_cp, L): the size
    of each label's support set at the checkpoint; ``support_vectors_union`` (n_cp,): distinct
    examples in any label's support set then."""
    sv = np.array([[len(exs) for exs, _ in state] for state in log.last], dtype=np.int64)
    svu = np.array([np.unique(np.concatenate([exs for exs, _ in state])).size for state in log.last], dtype=np.int64)
    return {"mistakes": log.mistakes_cp, "support_vectors": sv, "support_vectors_union": svu}


def unit_diag_kernel(kernel: Kernel, X) -> Kernel:
    """The kernel a budgeted run uses: ``kernel`` scaled so that ``max_i K(x_i, x_i) = 1`` on ``X``.

    The budgeted algorithms' thresholds are not invariant under a constant factor of the kernel,
    and their papers state them for ``K(x, x) <= 1``: the Forgetron's shrinking and mistake bound
    assume ``||phi(x)|| <= 1`` (Dekel et al. 2008, §2), the Projectron's eta is a distance between
    unit-norm instances (Orabona et al. 2009 use Gaussian kernels), NORMA's rho and lambda are read
    against ``k(x, x) <= 1`` (Kivinen et al. 2004, §III). A polynomial kernel's base is divided by
    ``c = max_i (1 + |x_i|^2 / s)`` (as :meth:`Kernel.range_safe` does for float32), which divides
    every value by ``c^d``: the Stoptron's and the RBP's mistakes do not change. Gaussian kernels
    already have ``K(x, x) = 1``; linear and poly-Gaussian kernels are returned as given."""
    X = np.asarray(X, dtype=np.float64)
    if kernel.name != "poly" or not len(X):
        return kernel
    c = 1.0 + float(np.max(sq_norms(np.asarray(X, dtype=np.float64)))) / kernel.scale
    if not (math.isfinite(c) and c > 1.0):
        return kernel
    return dataclasses.replace(kernel, base_div=c)
