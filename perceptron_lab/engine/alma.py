"""ALMA_p, the approximate large margin algorithm of Gentile (2001), one-vs-rest over all labels.

Gentile, "A New Approximate Maximal Margin Classification Algorithm", JMLR 2 (2001), Figure 1::

    ALMA_p(alpha; B, C), alpha in (0, 1], B, C > 0.   w_1 = 0, k = 1.
    for t = 1 .. T:
        gamma_k = B sqrt(p - 1) / sqrt(k)
        if y_t w_k . x^_t <= (1 - alpha) gamma_k:               (a "correction")
            eta_k  = C / (sqrt(p - 1) sqrt(k))
            w'_k   = f^-1( f(w_k) + eta_k y_t x^_t )
            w_k+1  = w'_k / max(1, |w'_k|_q)                     (projection onto the unit q-ball)
            k     <- k + 1

with normalized instances ``x^ = x / |x|_p``, ``1/p + 1/q = 1`` and the link
``f_i(w) = sign(w_i) |w_i|^(q-1) / |w|_q^(q-2)``, whose inverse is the same map with q replaced by
p (§3). A zero instance causes no update (footnote 3). The shorthand ALMA_p(alpha) is
ALMA_p(alpha; 1/alpha, sqrt 2) (§4); Theorem 3 part 1 uses ALMA_p(alpha; sqrt(8)/alpha, sqrt 2).

Two forms, both returning a :class:`~perceptron_lab.engine.perceptron.TrainLog`:

* **p = 2, dual (a non-linear kernel, or ``form = "dual"``)**: the kernel perceptron's chunked driver
  (:func:`perceptron_lab.engine.perceptron.train` with ``rule = ALMA2``), on the normalized kernel
  ``K^(x, y) = K(x, y) / sqrt(K(x, x) K(y, y))`` (normalization in feature space). Each label keeps
  ``w = s u`` with ``u = sum_j a_j x^_j``: an update adds ``a = eta_k y / s`` to ``u``, updates
  ``|u|^2`` incrementally (Remark 5) and the projection only rescales ``s``. The log records each
  update's coefficient ``a`` and the scale after it, so hypothesis k scores ``s_k * prefix_k``.
* **linear kernel, p = 2 (the default for the linear kernel)**: the per-example loop of
  :func:`perceptron_lab.engine.linear.train_alma2_primal`, which logs in the dual form's format
  (coefficients and scales, no weight vector per update).
* **linear kernel, any p (primal; the default for p > 2, or ``form = "primal"``)**: :func:`_primal_chunk`
  keeps ``theta = f(w)`` per label (the projection divides it by the same factor as ``w``, f
  being homogeneous of degree 1, and ``|w'|_q = |theta'|_p`` by Lemma 2) and records every
  hypothesis ``w_k`` explicitly (``TrainLog.hyp_w``, n_updates x n_features floats; 24 MB for
  10000 updates on 300 features).

Range (any p >= 2). The link's powers ``|theta_i|^(p-1)`` and the norms' sums of p-th powers
leave float64 once p is in the hundreds (``0.5^1100 = 0``): the hypothesis came out 0 and every
example a correction. They are computed in the direct form where that is in float64's range (bit
for bit as before: Gentile's Table 6, p = 2, 6 and 10, reproduces byte for byte) and elsewhere in
a scaled form, the largest entry factored out (f is homogeneous of degree 1), which is the same
number computed in range (:func:`_pnorm`, :func:`_link_with_norm`). What
float64 still cannot hold are weights below ``2^-1074 |theta|_p`` (with p = 1000, those of every
feature below half the largest ``|theta_i|``): they are 0, and where the sum of such lost terms
could decide a correction (a margin within ``n 2^-1021`` of a threshold of 0, alpha = 1) the
run stops with a :class:`~perceptron_lab.errors.NumericError` rather than guess
(:func:`_primal_chunk`).
"""

from __future__ import annotations

import math
import time
from collections import namedtuple
from dataclasses import dataclass
from typing import ClassVar

import numba as nb
import numpy as np

from perceptron_lab.constants import ALMA_B_STATED, ALMA_B_THEOREM3
from perceptron_lab.engine.kernels import Kernel
from perceptron_lab.engine.base import update_buffers
from perceptron_lab.engine.perceptron import EngineError, TrainLog, chunk_bounds, epochs_to_steps, train
from perceptron_lab.errors import NumericError

SQRT2 = math.sqrt(2.0)


@dataclass(frozen=True)
class AlmaParams:
    """ALMA_p(alpha; B, C). ``B = None`` means Gentile's default ``1 / alpha``."""

    alpha: float = 1.0
    B: float | None = None
    C: float = SQRT2
    p: float = 2.0

    rule: ClassVar[str] = "alma"

    def __post_init__(self):
        if not 0.0 < self.alpha <= 1.0:
            raise EngineError(f"ALMA's alpha must be in (0, 1], got {self.alpha}")
        if self.B is None:
            object.__setattr__(self, "B", 1.0 / self.alpha)
        if self.B <= 0 or self.C <= 0:
            raise EngineError(f"ALMA's B and C must be positive, got B = {self.B}, C = {self.C}")
        if self.p < 2:
            raise EngineError(f"ALMA_p needs p >= 2, got p = {self.p}")

    @property
    def q(self) -> float:
        """The dual norm: 1/p + 1/q = 1."""
        return self.p / (self.p - 1.0)

    def gamma(self, k):
        """gamma_k = B sqrt(p - 1) / sqrt(k): the margin level of the k-th hypothesis."""
        return self.B * math.sqrt(self.p - 1.0) / np.sqrt(k)

    def eta(self, k):
        """eta_k = C / (sqrt(p - 1) sqrt(k)): the learning rate of the k-th correction."""
        return self.C / (math.sqrt(self.p - 1.0) * np.sqrt(k))


def resolve_B(B, alpha: float) -> float:
    """ALMA's B as a number: None (or ``'1/alpha'``) is Gentile's default 1/alpha (§4),
    ``'sqrt8/alpha'`` Theorem 3 part 1's sqrt(8)/alpha; a number is kept."""
    if B is None or B == ALMA_B_STATED:
        return 1.0 / alpha
    if B == ALMA_B_THEOREM3:
        return math.sqrt(8.0) / alpha
    if isinstance(B, str):
        raise EngineError(f"ALMA's B must be a positive number, {ALMA_B_THEOREM3!r}, {ALMA_B_STATED!r} or None, "
                          f"got {B!r}")
    return float(B)


def theorem3_bound(gamma_star: float, alpha: float, p: float) -> float:
    """Gentile (2001) Theorem 3 part 1, Eq. (1): the number of corrections of
    ALMA_p(alpha; sqrt(8)/alpha, sqrt 2) on a sequence with normalized p-norm margin gamma* is at
    most ``2 (p - 1) / gamma*^2 (2/alpha - 1)^2 + 8/alpha - 4``."""
    return 2.0 * (p - 1.0) / gamma_star**2 * (2.0 / alpha - 1.0) ** 2 + 8.0 / alpha - 4.0


# ----------------------------------------------------------------------------- p-norm link


@nb.njit(cache=True, inline="always")
def _pow(x, r, ri):
    """x ** r for x >= 0; ``ri`` = r as an integer when r is one (then by multiplication), else -1."""
    if ri >= 0:
        out = 1.0
        for _ in range(ri):
            out *= x
        return out
    return x ** r


#: The direct form of a p-norm, ``(sum |v_i|^p)^(1/p)``, is used when that sum is finite and at
#: least this: then the terms that underflowed (each below float64's normal range, off by at most
#: 2^-1075) are below the sum's own rounding (2^-53 relative) for any realistic length (up to
#: 2^60 entries). Below it, or at inf, the scaled form is used (:func:`_pnorm`).
_SUM_LO = 2.0 ** -960
#: float64's smallest normal number: a power below it has lost digits (or is 0).
_TINY = float(np.finfo(np.float64).tiny)
_INF = math.inf


@nb.njit(cache=True)
def _pnorm(v, p, pi=-1):
    """``|v|_p``, in float64's range for any p.

    The direct form ``(sum |v_i|^p)^(1/p)`` underflows for p in the hundreds (every ``|v_i|^p`` of
    entries below 1 is 0 once p > 1075 / log2(1 / |v_i|): the norm of ALMA_1000's first hypothesis
    came out 0) and overflows for large entries. It is kept where its sum is finite and at least
    :data:`_SUM_LO` (bit for bit as before there: the scaled form, used everywhere, would change
    the last bits of Table 6's p = 6 and 10 hypotheses); elsewhere the norm is taken in the
    scaled form ``m (sum (|v_i| / m)^p)^(1/p)`` with ``m = max |v_i|``, whose sum lies in
    [1, len(v)] (the same number, computed in range)."""
    acc = 0.0
    for x in v:
        acc += _pow(abs(x), p, pi)
    if acc >= _SUM_LO and acc < _INF:
        return acc ** (1.0 / p)
    m = 0.0
    for x in v:
        if abs(x) > m:
            m = abs(x)
    if m == 0.0:
        return 0.0
    acc = 0.0
    for x in v:
        acc += _pow(abs(x) / m, p, pi)
    return m * acc ** (1.0 / p)


@nb.njit(cache=True)
def _link_with_norm(v, r, ri, nrm, out):
    """``out_i = sign(v_i) |v_i|^(r-1) / nrm^(r-2)`` with ``nrm = |v|_r`` given (0 maps to 0).

    Direct form where it is in range: ``|v_i|^(r-1)`` and ``nrm^(r-2)`` both normal float64
    numbers (bit for bit as before there, as :func:`_pnorm`). An entry whose power
    underflows (ALMA_p with p in the hundreds: ``|theta_i|^(p-1)`` is 0 for every entry below
    1/2 once p > 1075, and ``nrm^(p-2)`` too, so w came out 0) or overflows is taken in the
    scaled form ``sign(v_i) (|v_i| / nrm)^(r-1) nrm`` (Gentile 2001, §2: f is homogeneous of
    degree 1), whose power lies in [0, 1]: what still underflows there is below
    ``2^-1074 nrm``, an entry float64 cannot hold next to the largest one (>= nrm / len(v))."""
    if nrm == 0.0:
        out[:] = 0.0
        return
    d = nrm ** (r - 2.0)
    direct = d >= _TINY and d < _INF
    rm1 = ri - 1 if ri >= 1 else -1
    for i in range(v.shape[0]):
        x = v[i]
        if x == 0.0:
            out[i] = 0.0
            continue
        a = abs(x)
        num = _pow(a, r - 1.0, rm1) if direct else 0.0
        if direct and num >= _TINY and num < _INF:
            val = num / d
        else:
            val = _pow(a / nrm, r - 1.0, rm1) * nrm
        out[i] = val if x > 0.0 else -val


@nb.njit(cache=True)
def _link(v, r, out):
    """``out_i = sign(v_i) |v_i|^(r-1) / |v|_r^(r-2)``: f with r = q, f^-1 with r = p (0 at v = 0)."""
    _link_with_norm(v, r, -1, _pnorm(v, r), out)


def _int_or_neg(r: float) -> int:
    return int(r) if float(r).is_integer() and r < 64 else -1


def _link_checked(v, r: float) -> np.ndarray:
    v = np.ascontiguousarray(v, dtype=np.float64)
    if not np.isfinite(v).all():
        raise NumericError("the p-norm link needs finite numbers; the vector holds NaN or inf")
    out = np.empty_like(v)
    _link(v, float(r), out)
    if not np.isfinite(out).all():  # |v|_r itself beyond float64 (entries near 1e308)
        raise NumericError(f"the p-norm link of a vector whose {float(r):g}-norm exceeds float64's range; "
                           "scale it down")
    return out


def link_f(w, q: float) -> np.ndarray:
    """Gentile's f (gradient of |w|_q^2 / 2): maps q-norm to p-norm (Lemma 2). In float64's
    range for any q and any w whose q-norm is a float64 number (:func:`_link_with_norm`)."""
    return _link_checked(w, q)


def link_f_inv(theta, p: float) -> np.ndarray:
    """The inverse of f: the same map with q replaced by p (any p >= 2, in range as :func:`link_f`)."""
    return _link_checked(theta, p)


@nb.njit(cache=True, parallel=False)
def _row_pnorms(X, p, pi):
    out = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        out[i] = _pnorm(X[i], p, pi)
    return out


def pnormalize(X, p: float) -> np.ndarray:
    """Rows ``x / |x|_p`` (a zero row stays zero).

    ``|x_i|^p`` underflows or overflows float64 on rows far from 1 in size (p = 8 on features near
    1e-50 or 1e50), and a row whose p-norm comes out as 0 or inf would be normalized to garbage.
    Such rows are first multiplied by a power of two that brings their largest value near 1,
    which changes neither ``x / |x|_p`` nor anything else; other rows are left as they are. For p
    beyond about 1000, where even ``0.6^p`` underflows, :func:`_pnorm` takes the norm in its
    scaled form."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.size:
        with np.errstate(divide="ignore"):
            top = np.log2(np.max(np.abs(X), axis=1))
        far = np.isfinite(top) & (np.abs(top) * float(p) + math.log2(max(X.shape[1], 1)) > 900.0)
        if far.any():
            X = X.copy()
            X[far] = np.ldexp(X[far], -np.ceil(top[far]).astype(np.int64)[:, None])
    n = _row_pnorms(X, float(p), _int_or_neg(p))
    return X / np.where(n > 0, n, 1.0)[:, None]


# ----------------------------------------------------------------------------- primal, p >= 2


#: The training set as :func:`_primal_chunk` reads it: the p-normalized rows ``Xh``, ``xnz[i]``
#: (row i is not zero) and the labels ``Y``.
PNormSet = namedtuple("PNormSet", "Xh xnz Y")

#: ALMA_p's settings: ``p``, ``pi`` (p as an integer when it is one, else -1: powers by
#: multiplication), ``alpha``, ``B`` and ``C`` (Gentile 2001, Figure 1).
AlmaRule = namedtuple("AlmaRule", "p pi alpha B C")

#: What the chunks carry forward per label: ``theta[c] = f(W[c])``, the hypothesis ``W[c]``, the
#: corrections so far ``ncorr`` and the correct predictions ``cum_correct``.
PNormState = namedtuple("PNormState", "theta W ncorr cum_correct")


def alma_rule(p, alpha, B, C) -> AlmaRule:
    """The :data:`AlmaRule` of these settings (``pi`` found from ``p``)."""
    return AlmaRule(p, _int_or_neg(p), alpha, B, C)


@nb.njit(cache=True)
def _lost_terms(theta, w, x):
    """Whether a term ``w_f x_f`` of the margin ``w . x`` fell below float64's normal range
    although neither factor is 0 in exact arithmetic (``w_f`` is 0 exactly when ``theta_f`` is,
    f^-1 keeping signs and zeros): with p in the hundreds, ``w_f = (|theta_f| / |theta|_p)^(p-1)
    |theta|_p`` underflows for every feature far below the largest."""
    for f in range(x.shape[0]):
        if x[f] != 0.0 and theta[f] != 0.0 and abs(w[f] * x[f]) < _TINY:
            return True
    return False


@nb.njit(cache=True)
def _unresolved(theta, W, x, out):
    nnz, top = 0, 0.0
    for f in range(x.shape[0]):
        if x[f] != 0.0:
            nnz += 1
            top = max(top, abs(x[f]))
    bound = nnz * 2.0 ** -1021 * max(1.0, top)
    for c in range(W.shape[0]):
        out[c] = bound if _lost_terms(theta[c], W[c], x) else 0.0


def unresolved_bound(theta, W, x) -> np.ndarray:
    """Per label (rows of ``theta = f(W)`` and ``W``), a bound on what the terms of the score
    ``W[c] . x`` lost below float64's normal range, 0 where none was: a term ``w_f x_f`` with
    ``theta_f`` and ``x_f`` non-zero whose computed product is below 2^-1022 (each true weight
    so lost is below 2^-1022 too, :func:`_link_with_norm`). The bound is ``n 2^-1021 max(1,
    |x|_inf)`` with ``n`` the non-zero features of x. A score within this bound of what decides it
    is not known in float64 (:func:`_primal_chunk` refuses such a correction test). One compiled
    pass: the online classes ask it of every prediction."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty(W.shape[0])
    _unresolved(np.ascontiguousarray(theta, dtype=np.float64), np.ascontiguousarray(W, dtype=np.float64), x, out)
    return out


@nb.njit(cache=True)
def _primal_chunk(data, ex, step0, rule, state, out, o_w):
    """Figure 1 on the examples ``ex`` (rows of the p-normalized ``Xh`` of ``data``, a
    :data:`PNormSet`), every label, by ``rule`` (:data:`AlmaRule`) from ``state``
    (:data:`PNormState`); returns the number of updates, written to the buffers of ``out``
    (:data:`~perceptron_lab.engine.base.Updates`) and their new hypotheses to the rows of ``o_w``.
    ``theta[c] = f(W[c])`` is kept alongside ``W[c]``.

    Returns ``-1 - t`` instead when the correction test of ``ex[t]`` cannot be decided in
    float64 (the state is then part way through that example; :meth:`PrimalRun.steps` restores
    it): its margin lies within ``len(x) 2^-1021`` of the threshold and some of its terms
    underflowed (:func:`_lost_terms`), so the sign of ``margin - threshold`` is not known. It
    happens only where the threshold is 0 or below float64's range (alpha = 1), and mostly for
    p in the hundreds or more, where every weight far below the largest is below 2^-1074."""
    Xh, xnz, Y = data
    p, pi, alpha, B, C = rule
    theta, W, ncorr, cum_correct = state
    o_step, o_ex, o_cls, o_coef, o_score, o_cum, o_norm = (
        out.step, out.ex, out.cls, out.coef, out.score, out.cum, out.norm)
    L = Y.shape[1]
    sp = math.sqrt(p - 1.0)
    lost = Xh.shape[1] * 2.0 ** -1021  # the most that the terms below float64's normal range add up to
    n_out = 0
    for t in range(ex.shape[0]):
        i = ex[t]
        x = Xh[i]
        for c in range(L):
            if not xnz[i]:  # footnote 3: no update on a zero instance
                cum_correct[c] += 1
                continue
            y = Y[i, c]
            m = 0.0
            for f in range(x.shape[0]):
                m += W[c, f] * x[f]
            m *= y
            sqk = math.sqrt(ncorr[c] + 1.0)
            thr = (1.0 - alpha) * B * sp / sqk
            if abs(m - thr) <= lost and _lost_terms(theta[c], W[c], x):
                return -1 - t
            if m > thr:
                cum_correct[c] += 1
                continue
            eta = C / (sp * sqk)
            for f in range(x.shape[0]):
                theta[c, f] += eta * y * x[f]
            # |w'|_q = |f(w')|_p = |theta'|_p (Lemma 2); projection: w = w' / N, theta = theta' / N
            nq = _pnorm(theta[c], p, pi)
            if nq > 1.0:
                for f in range(x.shape[0]):
                    theta[c, f] /= nq
                nq = 1.0
            _link_with_norm(theta[c], p, pi, nq, W[c])
            ncorr[c] += 1
            o_step[n_out] = step0 + t
            o_ex[n_out] = i
            o_cls[n_out] = c
            o_coef[n_out] = eta * y
            o_score[n_out] = m * y
            o_cum[n_out] = cum_correct[c]
            o_norm[n_out] = nq
            o_w[n_out, :] = W[c]
            n_out += 1
    return n_out


class PrimalRun:
    """ALMA_p (any p >= 2) in primal form, every label, as one run that continues: :meth:`steps` on
    p-normalized rows (:func:`pnormalize`) as many times as wanted. :func:`train_primal` drives it
    through a training sequence; the online :class:`~perceptron_lab.estimators.online.ALMA` feeds it
    one example at a time, adding labels (:meth:`add_label`) and features (:meth:`widen`) as they come.

    ``record``: keep every update (step, example, label, coefficient, margin, correct predictions so
    far, the new hypothesis and its q-norm) for :meth:`updates`; without it only the state is kept.
    """

    def __init__(self, n_labels: int, n_features: int, params: AlmaParams, record: bool = True):
        self.p = float(params.p)
        self.rule = alma_rule(self.p, float(params.alpha), float(params.B), float(params.C))
        self.theta = np.zeros((n_labels, n_features))
        self.W = np.zeros((n_labels, n_features))
        self.ncorr = np.zeros(n_labels, dtype=np.int64)
        self.cum_correct = np.zeros(n_labels, dtype=np.int64)
        self.steps_done = 0
        self.record = record
        self._logs = {k: [] for k in ("step", "ex", "cls", "coef", "score", "cum", "norm", "w")}
        self._bufs = self._out = self._wbuf = None

    @property
    def n_labels(self) -> int:
        return self.W.shape[0]

    def add_label(self) -> None:
        """A new label, its hypothesis 0 (every earlier example a negative it never saw)."""
        f = self.W.shape[1]
        self.theta = np.concatenate([self.theta, np.zeros((1, f))])
        self.W = np.concatenate([self.W, np.zeros((1, f))])
        self.ncorr = np.concatenate([self.ncorr, np.zeros(1, np.int64)])
        self.cum_correct = np.concatenate([self.cum_correct, np.zeros(1, np.int64)])

    def widen(self, n_features: int) -> None:
        """Zero weights for features that appear only now."""
        if n_features > self.W.shape[1]:
            pad = ((0, 0), (0, n_features - self.W.shape[1]))
            self.theta, self.W = np.pad(self.theta, pad), np.pad(self.W, pad)

    def steps(self, Xh, xnz, Y, ex) -> int:
        """Steps on the rows ``ex`` of the p-normalized ``Xh`` (``xnz[i]``: row i is not all zero;
        ``Y``: their labels in {-1, +1}, one column per label), in order (:func:`_primal_chunk`);
        returns the number of updates. A :class:`~perceptron_lab.errors.NumericError`, with the
        state as before the call, where a correction test cannot be decided in float64."""
        ex = np.ascontiguousarray(ex, dtype=np.int64)
        L, nf = self.W.shape
        size = max(1, ex.size * L)
        if self._bufs is None or self._bufs["step"].size < size or self._wbuf.shape[1] != nf:
            self._bufs, self._out = update_buffers(size, ("step", "ex", "cls", "coef", "score", "cum", "norm"))
            self._wbuf = np.empty((size, nf))
        state = PNormState(self.theta, self.W, self.ncorr, self.cum_correct)
        before = [a.copy() for a in state]
        m = _primal_chunk(PNormSet(Xh, xnz, np.ascontiguousarray(Y, dtype=np.int8)), ex, self.steps_done, self.rule,
                          state, self._out, self._wbuf)
        if m < 0:  # a correction test float64 cannot decide: refused, with the state as it was
            for a, b in zip(state, before):
                a[...] = b
            raise NumericError(
                f"ALMA_p with p = {self.p:g} and alpha = {self.rule.alpha:g}: the margin y w.x^ of a training example "
                f"is within {Xh.shape[1] * 2.0 ** -1021:.3g} of the threshold (1 - alpha) gamma_k and part of it "
                "fell below float64's range (for p this large, every weight far below the largest one is below "
                "2^-1074), so whether the example is a correction cannot be decided. Fix: set algorithm.alpha below 1 "
                "(the threshold is then a positive number float64 resolves), or a smaller algorithm.p")
        if m and self.record:
            for k in self._bufs:
                self._logs[k].append(self._bufs[k][:m].copy())
            self._logs["w"].append(self._wbuf[:m].copy())
        self.steps_done += ex.size
        return m

    def updates(self) -> dict:
        """Every update recorded so far, by field (``w``: the hypotheses, n_updates x n_features)."""
        dt = {k: v.dtype for k, v in (self._bufs or {}).items()}
        out = {k: (np.concatenate(v) if v else np.empty(0, dtype=dt.get(k, np.float64)))
               for k, v in self._logs.items() if k != "w"}
        out["w"] = np.concatenate(self._logs["w"]) if self._logs["w"] else np.empty((0, self.W.shape[1]))
        return out

    def __getstate__(self):
        state = dict(self.__dict__)   # the jitted step's scratch buffers are not the model
        state.update(_bufs=None, _out=None, _wbuf=None)
        return state


def train_primal(X, Y, params: AlmaParams, order, epochs: float, checkpoints, chunk_size: int = 512,
                 progress=None) -> TrainLog:
    """ALMA_p (any p >= 2) in primal form (linear kernel), every label in one pass: a
    :class:`PrimalRun` driven through ``order`` repeated for ``epochs`` passes.

    The log's ``hyp_w`` holds each update's new hypothesis (float64; n_updates x n_features), its
    ``upd_norm`` the q-norm of that hypothesis, ``upd_coef`` the learning rate times the label and
    ``upd_score`` the margin ``y w_k . x^`` of the corrected example before the update.
    """
    t0 = time.perf_counter()
    n, L = Y.shape
    if X.shape[0] != n:
        raise EngineError(f"X has {X.shape[0]} rows but Y has {n}")
    p = float(params.p)
    Xh = np.ascontiguousarray(pnormalize(X, p))
    xnz = np.ascontiguousarray(np.any(np.asarray(X) != 0, axis=1))
    Y = np.ascontiguousarray(Y, dtype=np.int8)
    order = np.ascontiguousarray(order, dtype=np.int64)
    total = epochs_to_steps(epochs, n)
    cp_steps = np.array(sorted({epochs_to_steps(c, n) for c in checkpoints}), dtype=np.int64)
    if total < 1 or cp_steps.size == 0 or cp_steps[0] < 1 or cp_steps[-1] > total:
        raise EngineError(f"checkpoints {list(checkpoints)} must lie in (0, {epochs}] and cover >= 1 step")
    bounds = chunk_bounds(n, total, cp_steps, chunk_size)
    run = PrimalRun(L, Xh.shape[1], params)
    cum_cp = np.zeros((cp_steps.size, L), dtype=np.int64)
    cp_ptr = 0
    for a, b in zip(bounds[:-1], bounds[1:]):
        run.steps(Xh, xnz, Y, order[np.arange(a, b) % n])
        while cp_ptr < cp_steps.size and cp_steps[cp_ptr] == b:
            cum_cp[cp_ptr] = run.cum_correct
            cp_ptr += 1
        if progress is not None:
            progress(b - a)
    cat = run.updates()
    nu = cat["step"].size
    return TrainLog(
        n_train=n, n_labels=L, total_steps=total, order=order, checkpoint_steps=cp_steps, theta_init=0.0,
        upd_step=cat["step"], upd_ex=cat["ex"], upd_cls=cat["cls"], upd_coef=cat["coef"],
        upd_score=cat["score"], upd_kxx=np.ones(nu), upd_theta=np.zeros(nu),
        upd_cum_correct=cat["cum"], cum_correct_cp=cum_cp, seconds=time.perf_counter() - t0,
        info={"form": "primal", "dtype": "float64", "chunks": int(bounds.size - 1), "algorithm": "alma",
              "p": p, "alpha": float(params.alpha), "B": float(params.B), "C": float(params.C)},
        upd_norm=cat["norm"], hyp_w=cat["w"],
    )


# ----------------------------------------------------------------------------- public entry point


def train_alma(X, Y, kernel: Kernel, params: AlmaParams, order, epochs: float, checkpoints,
               chunk_size: int = 512, dtype=np.float64, form: str = "auto", cache_limit_gb: float = 8.0,
               progress=None, flush_at: int = 256) -> TrainLog:
    """Train one-vs-rest ALMA_p on the sequence ``order`` repeated for ``epochs`` passes.

    With the linear kernel and p = 2 (``form`` auto) the per-example loop of
    :func:`perceptron_lab.engine.linear.train_alma2_primal` runs and logs the hypotheses as scaled
    expansions (no weight vector per update). With the linear kernel and p > 2, or ``form =
    "primal"``, the explicit primal loop runs, for any p: an update costs O(n_features) and every
    hypothesis is recorded (``TrainLog.hyp_w``, n_updates x n_features floats). Otherwise (a
    non-linear kernel, or ``form = "dual"``) p must be 2 and the kernel perceptron's chunked dual
    driver runs on the normalized kernel. Arguments as
    :func:`perceptron_lab.engine.perceptron.train`.
    """
    if kernel.name == "linear" and form == "auto" and float(params.p) == 2.0:
        # p = 2: the per-example loop of engine.linear, logging hypotheses as scaled expansions
        # (no weight vector per update); form = "primal" keeps the explicit hypotheses below
        from perceptron_lab.engine.linear import train_alma2_primal

        return train_alma2_primal(X, Y, params, order, epochs, checkpoints, progress=progress)
    if kernel.name == "linear" and form in ("auto", "primal"):
        return train_primal(X, Y, params, order, epochs, checkpoints, chunk_size=chunk_size, progress=progress)
    if form == "primal":
        raise EngineError(f"primal form needs the linear kernel, got {kernel.describe()}")
    if float(params.p) != 2.0:
        raise EngineError(f"ALMA_p with p = {params.p:g} > 2 runs in primal form only and needs the "
                          f"linear kernel, got {kernel.describe()} (form {form!r})")
    return train(X, Y, kernel, params, order, epochs, checkpoints, chunk_size=chunk_size, dtype=dtype,
                 form="dual", cache_limit_gb=cache_limit_gb, progress=progress, flush_at=flush_at)


__all__ = ["AlmaParams", "theorem3_bound", "link_f", "link_f_inv", "pnormalize",
           "train_alma", "train_primal"]
