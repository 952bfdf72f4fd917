"""Dedicated primal training loops for kernels with a small explicit feature map.

The chunked driver of :mod:`perceptron_lab.engine.perceptron` serves every kernel: in primal
form it still works in chunks, scoring a chunk by GEMM and adding the chunk's own updates through
an in-chunk kernel block, whose cost grows with the chunk. For the linear kernel (and the
polynomial kernel of degree 1, Freund & Schapire's d = 1) a plain per-example loop is simpler and
faster: keep each label's weight vector, score the example, update on a mistake. The one-vs-rest
labels are independent given the order, so the loop visits one example at a time and scores every
label against it while the example's row is in cache; the perceptron's labels are split into
groups (one per thread) that run through the sequence in parallel, and their updates are merged
into the driver's order (by step, then label) afterwards.

Both loops record the same :class:`~perceptron_lab.engine.perceptron.TrainLog` as the driver
(same updates in the same order, same counters at every checkpoint), so every prediction rule and
checkpoint works unchanged:

* :func:`train_perceptron_primal`: Freund & Schapire (1999) Figure 1 with every Khardon &
  Wachman (2007) Figure 2 option (eta, threshold theta/C, margin tau, lambda-trick, alpha-bound),
  i.e. the parameters of :class:`~perceptron_lab.engine.perceptron.PerceptronParams`.
* :func:`train_alma2_primal`: ALMA_2 (Gentile 2001, Figure 1 with p = 2) for the linear kernel.
  The weight vector is kept explicitly (``w = f(w)`` for p = 2), but the log records it as the
  driver does, as a scaled expansion ``w_k = s_k sum_{j <= k} a_j x^_j`` over the normalized
  instances (``a_j = eta_j y_j / s_j``, ``s_{k+1} = s_k / max(1, |w'_k|)``): no weight vector is
  stored per update, and every rule is computed from the log.

Polynomial kernels of degree 1 are handled in their affine form
``K(x, y) = k0 + k1 x.y`` (``k0 = 1/c``, ``k1 = 1/(s c)``): a label's score is
``k0 b + k1 w.x`` with ``b`` the sum of its coefficients, which is the inner product with the
feature map ``(sqrt(k0), sqrt(k1) x)`` without building it.

Arithmetic: scores are float64 sums in a fixed order (:func:`perceptron_lab.engine.ordered.dot`),
one multiplication and one addition per term: the same bits on every CPU and thread count. A
primal score ``(sum_j a_j x_j) . x`` is associated otherwise than the driver's ``sum_j a_j (x_j . x)``,
so on non-integer data the last bits of the two can differ; on integer data with dyadic parameters
(raw pixels, eta = 1) every score is exact and the logs agree bit for bit.
"""

from __future__ import annotations

import math
import time
from collections import namedtuple

import numba as nb
import numpy as np

from perceptron_lab.engine.kernels import Kernel, as_csr
from perceptron_lab.engine.ordered import dot as fixed_dot
from perceptron_lab.engine.base import EngineError, PerceptronParams, TrainLog, chunk_bounds, epochs_to_steps, on_threads, update_buffers
from perceptron_lab.sparse import issparse

#: Steps per call of a jitted loop (progress is reported between calls).
SEGMENT_STEPS = 8192
#: Steps' worth of update buffers a primal run allocates at first, at most (they grow as needed).
INITIAL_UPDATES = 1 << 16


def affine_form(kernel: Kernel) -> tuple[float, float]:
    """``(k0, k1)`` with ``K(x, y) = k0 + k1 x.y``: (0, 1) for the linear kernel and
    ``(1/c, 1/(s c))`` for the polynomial kernel ``(1 + x.y/s) / c`` of degree 1."""
    if kernel.name == "linear":
        return 0.0, 1.0
    if kernel.name == "poly" and kernel.degree == 1:
        c = float(kernel.base_div)
        return 1.0 / c, 1.0 / (float(kernel.scale) * c)
    raise EngineError(f"no primal loop for {kernel.describe()} (linear or poly of degree 1 only)")


def has_affine_form(kernel: Kernel) -> bool:
    """True for the kernels :func:`affine_form` covers."""
    return kernel.name == "linear" or (kernel.name == "poly" and kernel.degree == 1)


@nb.njit(cache=True, inline="always")
def _dot(a, b):
    """Inner product of two vectors, in :func:`perceptron_lab.engine.ordered.dot`'s fixed order."""
    return fixed_dot(a, b)


@nb.njit(cache=True)
def _axpy(a, x, y):
    """``y += a x`` in place."""
    for f in range(x.shape[0]):
        y[f] += a * x[f]


@nb.njit(cache=True)
def _axpy_sq(a, x, y):
    """``y += a x`` in place; returns ``|y|^2`` after the update (:func:`_dot`'s order)."""
    for f in range(x.shape[0]):
        y[f] += a * x[f]
    return fixed_dot(y, y)


#: The training sequence as the primal loops read it: features ``X``, labels ``Y`` and the order
#: (example ``order[t % n]`` at step t).
Sequence = namedtuple("Sequence", "X Y order")

#: The perceptron's parameters (:class:`~perceptron_lab.engine.base.PerceptronParams`, without
#: ``theta_init``) and the kernel's affine form ``k0 + k1 x.y`` (``affine``: not the plain inner product).
PrimalRule = namedtuple("PrimalRule", "eta C tau_abs lam alpha_bound k0 k1 affine lam_diag")

#: What :func:`_perceptron_steps` carries from one segment to the next: weights ``W``, the affine
#: form's ``bias``, thresholds ``theta``, update counts ``mcount``, correct predictions
#: ``cum_correct`` and ``kx[g, i] = K(x_i, x_i)`` per label group (-1 before it is needed).
PrimalState = namedtuple("PrimalState", "W bias theta mcount cum_correct kx")


def _perceptron_steps(seq, a, b, rule, state, out, n_out):
    """Steps ``a .. b-1`` of the sequence ``seq`` (:data:`Sequence`), every label, by ``rule``
    (:data:`PrimalRule`) from ``state`` (:data:`PrimalState`).

    The labels are split into ``G = out.step.shape[0]`` groups (label c in group c mod G) that run in
    parallel (:func:`_perceptron_groups` on G threads), each over the whole sequence."""
    G = out.step.shape[0]
    on_threads(_perceptron_groups, G, seq, a, b, rule, state, out, n_out)


@nb.njit(cache=True, nogil=True)
def _perceptron_groups(g0, g1, seq, a, b, rule, state, out, n_out):
    """Label groups ``g0 .. g1 - 1`` of :func:`_perceptron_steps`: group g writes its updates, in
    order, to row g of the buffers of ``out`` (:data:`~perceptron_lab.engine.base.Updates`) after
    the ``n_out[g]`` written before, and adds their number to ``n_out[g]`` (the caller makes room
    for every step of the segment).

    Label c's score of x is ``W[c].x`` (linear) or ``k0 bias[c] + k1 W[c].x`` (affine). The update
    condition and the bookkeeping are those of the chunked driver (``_run_chunk`` with
    RULE_PERCEPTRON): a mistake when ``y (s + [lambda term] - theta) <= tau``, no update (and no
    count) when the example has reached the alpha-bound. ``kx[g, i]`` is K(x_i, x_i), computed at
    the example's first update in the group (-1 before): the lambda term needs it only for
    examples that already caused an update of the label."""
    X, Y, order = seq
    eta, C, tau_abs, lam, alpha_bound, k0, k1, affine, lam_diag = rule
    W, bias, theta, mcount, cum_correct, kx = state
    o_step, o_ex, o_cls, o_coef, o_score, o_theta, o_cum, o_kxx = (
        out.step, out.ex, out.cls, out.coef, out.score, out.theta, out.cum, out.kxx)
    n = order.shape[0]
    L = Y.shape[1]
    G = o_step.shape[0]
    for g in range(g0, g1):
        # the group's counters in thread-local copies (labels of different groups share cache lines)
        nl = (L - g + G - 1) // G
        cc = np.empty(nl, dtype=np.int64)
        th = np.empty(nl)
        bs = np.empty(nl)
        for q in range(nl):
            cc[q] = cum_correct[g + q * G]
            th[q] = theta[g + q * G]
            bs[q] = bias[g + q * G]
        m = n_out[g]
        for t in range(a, b):
            i = order[t % n]
            x = X[i]
            for q in range(nl):
                c = g + q * G
                y = Y[i, c]
                s = _dot(W[c], x)
                if affine:
                    s = k0 * bs[q] + k1 * s
                s_train = s
                if lam != 0.0 and mcount[i, c] != 0:
                    if lam_diag:
                        s_train += y * lam * kx[g, i] * (eta * mcount[i, c])
                    else:
                        s_train += y * lam * kx[g, i]
                if y * (s_train - th[q]) > tau_abs:
                    cc[q] += 1
                    continue
                if mcount[i, c] >= alpha_bound:
                    continue
                coef = eta * y
                th[q] -= eta * y * C
                if kx[g, i] < 0.0:
                    kx[g, i] = k0 + k1 * _dot(x, x) if affine else _dot(x, x)
                o_kxx[g, m] = kx[g, i]
                o_step[g, m] = t
                o_ex[g, m] = i
                o_cls[g, m] = c
                o_coef[g, m] = coef
                o_score[g, m] = s
                o_cum[g, m] = cc[q]
                o_theta[g, m] = th[q]
                mcount[i, c] += 1
                m += 1
                _axpy(coef, x, W[c])
                bs[q] += coef
        for q in range(nl):
            cum_correct[g + q * G] = cc[q]
            theta[g + q * G] = th[q]
            bias[g + q * G] = bs[q]
        n_out[g] = m


# ----------------------------------------------------------------------------- sparse (CSR) rows
#
# The same loops on a CSR matrix: a row is the stored values ``data[indptr[i]:indptr[i + 1]]`` at
# the features ``indices[...]``; an inner product with a (dense) weight vector and an update of it
# read and write those features alone, so a step costs O(nonzeros of the row), not O(n_features).
# The weight vectors stay dense (n_labels x n_features floats). Every product and update is the one
# the dense loop makes on the nonzero features (a zero feature adds 0 to a sum and leaves a weight
# unchanged), so the two loops agree bit for bit wherever the order of summation does not matter
# (integer features with dyadic parameters, as the dense loop's own exactness statement).

#: The training sequence of :data:`Sequence` with CSR features (``indptr``, ``indices``, ``data``).
CsrSequence = namedtuple("CsrSequence", "indptr indices data Y order")


@nb.njit(cache=True)
def _dot_csr(w, indices, data, a, b):
    """Inner product of the dense vector ``w`` with the CSR row stored at ``a .. b-1``."""
    acc = 0.0
    for k in range(a, b):
        acc += w[indices[k]] * data[k]
    return acc


@nb.njit(cache=True)
def _sq_csr(data, a, b):
    """Squared norm of the CSR row stored at ``a .. b-1``."""
    acc = 0.0
    for k in range(a, b):
        acc += data[k] * data[k]
    return acc


@nb.njit(cache=True)
def _axpy_csr(coef, indices, data, a, b, w):
    """``w += coef x`` in place for the CSR row ``x`` stored at ``a .. b-1``."""
    for k in range(a, b):
        w[indices[k]] += coef * data[k]


@nb.njit(cache=True, parallel=True)
def _perceptron_steps_csr(seq, a, b, rule, state, out, n_out):
    """:func:`_perceptron_steps` on CSR rows (``seq``: :data:`CsrSequence`): the same updates,
    counters and log, each step in O(nonzeros of the example x labels)."""
    indptr, indices, data, Y, order = seq
    eta, C, tau_abs, lam, alpha_bound, k0, k1, affine, lam_diag = rule
    W, bias, theta, mcount, cum_correct, kx = state
    o_step, o_ex, o_cls, o_coef, o_score, o_theta, o_cum, o_kxx = (
        out.step, out.ex, out.cls, out.coef, out.score, out.theta, out.cum, out.kxx)
    n = order.shape[0]
    L = Y.shape[1]
    G = o_step.shape[0]
    for g in nb.prange(G):
        nl = (L - g + G - 1) // G
        cc = np.empty(nl, dtype=np.int64)
        th = np.empty(nl)
        bs = np.empty(nl)
        for q in range(nl):
            cc[q] = cum_correct[g + q * G]
            th[q] = theta[g + q * G]
            bs[q] = bias[g + q * G]
        m = n_out[g]
        for t in range(a, b):
            i = order[t % n]
            r0 = indptr[i]
            r1 = indptr[i + 1]
            for q in range(nl):
                c = g + q * G
                y = Y[i, c]
                s = _dot_csr(W[c], indices, data, r0, r1)
                if affine:
                    s = k0 * bs[q] + k1 * s
                s_train = s
                if lam != 0.0 and mcount[i, c] != 0:
                    if lam_diag:   # the trick on the kernel's diagonal: grows with x_i's updates
                        s_train += y * lam * kx[g, i] * (eta * mcount[i, c])
                    else:          # eq. (1) as printed: once x_i has caused an update
                        s_train += y * lam * kx[g, i]
                if y * (s_train - th[q]) > tau_abs:
                    cc[q] += 1
                    continue
                if mcount[i, c] >= alpha_bound:
                    continue
                coef = eta * y
                th[q] -= eta * y * C
                if kx[g, i] < 0.0:
                    sq = _sq_csr(data, r0, r1)
                    kx[g, i] = k0 + k1 * sq if affine else sq
                o_kxx[g, m] = kx[g, i]
                o_step[g, m] = t
                o_ex[g, m] = i
                o_cls[g, m] = c
                o_coef[g, m] = coef
                o_score[g, m] = s
                o_cum[g, m] = cc[q]
                o_theta[g, m] = th[q]
                mcount[i, c] += 1
                m += 1
                _axpy_csr(coef, indices, data, r0, r1, W[c])
                bs[q] += coef
        for q in range(nl):
            cum_correct[g + q * G] = cc[q]
            theta[g + q * G] = th[q]
            bias[g + q * G] = bs[q]
        n_out[g] = m


@nb.njit(cache=True)
def _scale_sq(w, a, b, indices, data, coef):
    """``w += coef x`` for the CSR row ``x`` at ``a .. b-1``; returns ``|w|^2`` after the update,
    summed over every feature as :func:`_axpy_sq` does."""
    for k in range(a, b):
        w[indices[k]] += coef * data[k]
    acc = 0.0
    for f in range(w.shape[0]):
        acc += w[f] * w[f]
    return acc


@nb.njit(cache=True)
def _alma2_steps_csr(seq, a, b, alpha, B, C, state, out):
    """:func:`_alma2_steps` on CSR rows (``seq``: :data:`CsrSequence`). A step's margins cost
    O(nonzeros x labels); a correction also costs O(n_features), as in the dense loop: the
    hypothesis' norm is summed over every feature (the same sum as the dense loop's) and a
    projection rescales the whole vector."""
    indptr, indices, data, Y, order = seq
    W, scale, ncorr, cum_correct = state
    o_step, o_ex, o_cls, o_coef, o_score, o_scale, o_norm, o_cum = (
        out.step, out.ex, out.cls, out.coef, out.score, out.scale, out.norm, out.cum)
    n = order.shape[0]
    L = Y.shape[1]
    n_out = 0
    for t in range(a, b):
        i = order[t % n]
        r0 = indptr[i]
        r1 = indptr[i + 1]
        sq = _sq_csr(data, r0, r1)
        if sq <= 0.0:
            for c in range(L):
                cum_correct[c] += 1
            continue
        r = 1.0 / math.sqrt(sq)
        for c in range(L):
            y = Y[i, c]
            m = _dot_csr(W[c], indices, data, r0, r1) * r
            sqk = math.sqrt(ncorr[c] + 1.0)
            if y * m > (1.0 - alpha) * B / sqk:
                cum_correct[c] += 1
                continue
            eta = C / sqk
            s = scale[c]
            o_coef[n_out] = eta * y / s
            o_score[n_out] = m / s
            nrm = math.sqrt(_scale_sq(W[c], r0, r1, indices, data, eta * y * r))
            if nrm > 1.0:
                inv = 1.0 / nrm
                wc = W[c]
                for f in range(wc.shape[0]):
                    wc[f] *= inv
                scale[c] = s / nrm
                nrm = 1.0
            ncorr[c] += 1
            o_step[n_out] = t
            o_ex[n_out] = i
            o_cls[n_out] = c
            o_scale[n_out] = scale[c]
            o_norm[n_out] = nrm
            o_cum[n_out] = cum_correct[c]
            n_out += 1
    return n_out


def _csr_sequence(X, Y, order, dtype):
    """(:data:`CsrSequence` of the sparse ``X`` in ``dtype``, n_features)."""
    Xc = as_csr(X, dtype)
    return CsrSequence(Xc.indptr.astype(np.int64), Xc.indices.astype(np.int64), Xc.data, Y, order), Xc.shape[1]


def sparse_refusal(algorithm: str, kernel: Kernel, p: float = 2.0, form: str = "auto") -> str | None:
    """Why a run of ``algorithm`` with ``kernel`` cannot take sparse (scipy.sparse) features, or
    None when it can: the perceptron with the linear kernel or a poly kernel of degree 1 (primal
    loop), and ALMA_2 with the linear kernel. The other engines read dense rows."""
    if algorithm == "perceptron" and has_affine_form(kernel) and form in ("auto", "primal"):
        return None
    if algorithm == "alma" and kernel.name == "linear" and float(p) == 2.0 and form == "auto":
        return None
    what = (f"ALMA with p = {float(p):g}" if algorithm == "alma" and float(p) != 2.0 else
            f"{algorithm} with the {kernel.describe()} kernel" + (f" in {form} form" if form not in ("auto",) else ""))
    return (f"sparse features are taken by the perceptron with the linear kernel (or poly of degree 1) and by "
            f"ALMA with p = 2 and the linear kernel; {what} reads dense rows. Fix: pass dense features "
            f"(X.toarray(), if n_samples x n_features floats fit in memory) or use one of those settings")


def _check_sequence(X, Y, order, epochs, checkpoints):
    n = Y.shape[0]
    if X.shape[0] != n:
        raise EngineError(f"X has {X.shape[0]} rows but Y has {n}")
    total = epochs_to_steps(epochs, n)
    cp_steps = np.array(sorted({epochs_to_steps(c, n) for c in checkpoints}), dtype=np.int64)
    if total < 1 or cp_steps.size == 0 or cp_steps[0] < 1 or cp_steps[-1] > total:
        raise EngineError(f"checkpoints {list(checkpoints)} must lie in (0, {epochs}] and cover >= 1 step")
    return total, cp_steps


def _concat(parts, dtype):
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def _grown(bufs, fields, cap, used):
    """(buffers, :data:`~perceptron_lab.engine.base.Updates`) of ``cap`` updates per group holding
    the first ``used`` of each row of ``bufs``."""
    G = bufs["step"].shape[0]
    new, out = update_buffers((G, cap), fields)
    for k, v in bufs.items():
        new[k][:, :used] = v[:, :used]
    return new, out


def _updates_in_order(bufs, n_out, L):
    """Each field's updates of the groups' rows (``n_out[g]`` in row g), in the driver's order: by
    step, then label (a group's row is in that order already; each (step, label) updates once at
    most). One group's row is returned as it is (a view, trimmed by a copy when it holds much
    spare room)."""
    G = n_out.size
    if G == 1:
        m = int(n_out[0])
        spare = bufs["step"].shape[1] > 2 * m + 1024
        return {k: (v[0, :m].copy() if spare else v[0, :m]) for k, v in bufs.items()}
    cat = {k: np.concatenate([v[g, :n_out[g]] for g in range(G)]) for k, v in bufs.items()}
    perm = np.argsort(cat["step"] * L + cat["cls"], kind="stable")
    return {k: v[perm] for k, v in cat.items()}


def train_perceptron_primal(X, Y, kernel: Kernel, params: PerceptronParams, order, epochs: float, checkpoints,
                            dtype=np.float64, progress=None, segment: int = SEGMENT_STEPS,
                            threads: int | None = None) -> TrainLog:
    """One-vs-rest perceptrons (any :class:`PerceptronParams`) in primal form, one example at a time.

    Arguments and result as :func:`perceptron_lab.engine.perceptron.train` (which calls this for
    primal runs of the perceptron); the kernel must be linear or polynomial of degree 1. ``X`` is
    used in ``dtype`` (no copy when it already is); scores and weights are float64. The labels run
    in ``threads`` groups in parallel (default: numba's thread count, at most one group per label).
    """
    t0 = time.perf_counter()
    k0, k1 = affine_form(kernel)
    n, L = Y.shape
    total, cp_steps = _check_sequence(X, Y, order, epochs, checkpoints)
    Y = np.ascontiguousarray(Y, dtype=np.int8)
    order = np.ascontiguousarray(order, dtype=np.int64)
    if issparse(X):
        # CSR rows (memory and time per step follow the nonzeros); W stays dense
        seq, nf = _csr_sequence(X, Y, order, dtype)
        steps = _perceptron_steps_csr
    else:
        Xd = np.ascontiguousarray(X, dtype=dtype)
        seq, nf = Sequence(Xd, Y, order), Xd.shape[1]
        steps = _perceptron_steps
    lam = float(params.lam)
    G = max(1, min(L, int(threads) if threads else nb.get_num_threads()))
    kx = np.full((G, n), -1.0)
    W = np.zeros((L, nf), dtype=np.float64)
    bias = np.zeros(L, dtype=np.float64)
    theta = np.full(L, float(params.theta_init), dtype=np.float64)
    mcount = np.zeros((n, L), dtype=np.int32)
    cum_correct = np.zeros(L, dtype=np.int64)
    # segments may span epochs: the loop takes example order[t % n] at step t itself
    bounds = chunk_bounds(n, total, cp_steps, max(1, int(segment)), epochs=False)
    maxb = int(np.max(np.diff(bounds)))
    per_step = (L + G - 1) // G   # a group's labels: its most updates per step
    fields = ("step", "ex", "cls", "coef", "score", "theta", "cum", "kxx")
    # room for the longest segment, or for a small run's every step at once (most runs of small
    # training sets then never grow their buffers)
    bufs, out = update_buffers((G, max(maxb, min(total, INITIAL_UPDATES)) * per_step), fields)
    n_out = np.zeros(G, dtype=np.int64)   # each group's updates so far, in its row of the buffers
    cum_cp = np.zeros((cp_steps.size, L), dtype=np.int64)
    cp_ptr = 0
    affine = k0 != 0.0 or k1 != 1.0
    rule = PrimalRule(float(params.eta), float(params.C), float(params.tau_abs), lam, int(params.alpha_bound),
                      k0, k1, affine, bool(params.lam_diagonal))
    state = PrimalState(W, bias, theta, mcount, cum_correct, kx)
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        need = int(n_out.max()) + (b - a) * per_step
        if need > bufs["step"].shape[1]:
            # room for every step of the segment: the buffers grow (at least double), keeping the updates so far
            used = int(n_out.max())
            bufs, out = _grown(bufs, fields, max(need, 2 * bufs["step"].shape[1]), used)
        steps(seq, a, b, rule, state, out, n_out)
        while cp_ptr < cp_steps.size and cp_steps[cp_ptr] == b:
            cum_cp[cp_ptr] = cum_correct
            cp_ptr += 1
        if progress is not None:
            progress(b - a)
    cat = _updates_in_order(bufs, n_out, L)
    return TrainLog(
        n_train=n, n_labels=L, total_steps=total, order=order, checkpoint_steps=cp_steps,
        theta_init=float(params.theta_init), upd_step=cat["step"], upd_ex=cat["ex"], upd_cls=cat["cls"],
        upd_coef=cat["coef"], upd_score=cat["score"], upd_kxx=cat["kxx"], upd_theta=cat["theta"],
        upd_cum_correct=cat["cum"], cum_correct_cp=cum_cp, seconds=time.perf_counter() - t0,
        info={"form": "primal", "dtype": np.dtype(dtype).name, "chunks": int(bounds.size - 1),
              "loop": "linear", **({"sparse": True} if issparse(X) else {})},
    )


# ----------------------------------------------------------------------------- ALMA_2


#: What :func:`_alma2_steps` carries from one segment to the next, per label: the hypothesis ``W``,
#: the scale of its expansion, the corrections so far ``ncorr`` and the correct predictions.
AlmaState = namedtuple("AlmaState", "W scale ncorr cum_correct")


@nb.njit(cache=True)
def _alma2_steps(seq, a, b, alpha, B, C, state, out):
    """Gentile (2001) Figure 1 with p = 2 on steps ``a .. b-1`` of ``seq`` (:data:`Sequence`), every
    label, from ``state`` (:data:`AlmaState`); returns the number of corrections written to the
    buffers of ``out`` (:data:`~perceptron_lab.engine.base.Updates`).

    ``W[c]`` is label c's hypothesis ``w`` (explicit; f is the identity for p = 2) and
    ``scale[c]`` the scale s of its expansion ``w = s u`` (see :func:`train_alma2_primal`). The
    instance is normalized on the fly (x^ = x / |x|); a zero instance causes no correction
    (footnote 3)."""
    X, Y, order = seq
    W, scale, ncorr, cum_correct = state
    o_step, o_ex, o_cls, o_coef, o_score, o_scale, o_norm, o_cum = (
        out.step, out.ex, out.cls, out.coef, out.score, out.scale, out.norm, out.cum)
    n = order.shape[0]
    L = Y.shape[1]
    n_out = 0
    for t in range(a, b):
        i = order[t % n]
        x = X[i]
        sq = _dot(x, x)
        if sq <= 0.0:
            for c in range(L):
                cum_correct[c] += 1
            continue
        r = 1.0 / math.sqrt(sq)
        for c in range(L):
            y = Y[i, c]
            m = _dot(W[c], x) * r  # w_k . x^
            sqk = math.sqrt(ncorr[c] + 1.0)
            # a correction when y w_k . x^ <= (1 - alpha) gamma_k, gamma_k = B / sqrt(k)
            if y * m > (1.0 - alpha) * B / sqk:
                cum_correct[c] += 1
                continue
            eta = C / sqk
            s = scale[c]
            o_coef[n_out] = eta * y / s  # a_k: w' = s (u + a_k x^)
            o_score[n_out] = m / s       # u's score, as the chunked driver records it
            nrm = math.sqrt(_axpy_sq(eta * y * r, x, W[c]))
            if nrm > 1.0:
                # projection onto the unit ball: w = w' / |w'|, i.e. the scale shrinks
                inv = 1.0 / nrm
                wc = W[c]
                for f in range(wc.shape[0]):
                    wc[f] *= inv
                scale[c] = s / nrm
                nrm = 1.0
            ncorr[c] += 1
            o_step[n_out] = t
            o_ex[n_out] = i
            o_cls[n_out] = c
            o_scale[n_out] = scale[c]
            o_norm[n_out] = nrm
            o_cum[n_out] = cum_correct[c]
            n_out += 1
    return n_out


def train_alma2_primal(X, Y, params, order, epochs: float, checkpoints, progress=None,
                       segment: int = SEGMENT_STEPS) -> TrainLog:
    """One-vs-rest ALMA_2(alpha; B, C) with the linear kernel, one example at a time.

    ``params`` is an :class:`~perceptron_lab.engine.alma.AlmaParams` with ``p = 2``. The log has
    the chunked driver's format for ALMA_2 (``kernel_normalized``, ``upd_scale``, ``upd_norm``;
    no ``hyp_w``): hypothesis k of a label scores ``upd_scale[k] * sum_{j <= k} upd_coef[j] x^_j . x^``.
    """
    t0 = time.perf_counter()
    if float(params.p) != 2.0:
        raise EngineError(f"this loop runs ALMA_p with p = 2 only, got p = {params.p:g}")
    n, L = Y.shape
    total, cp_steps = _check_sequence(X, Y, order, epochs, checkpoints)
    Y = np.ascontiguousarray(Y, dtype=np.int8)
    order = np.ascontiguousarray(order, dtype=np.int64)
    if issparse(X):
        seq, nf = _csr_sequence(X, Y, order, np.float64)
        steps = _alma2_steps_csr
    else:
        Xd = np.ascontiguousarray(X, dtype=np.float64)
        seq, nf = Sequence(Xd, Y, order), Xd.shape[1]
        steps = _alma2_steps
    W = np.zeros((L, nf), dtype=np.float64)
    scale = np.ones(L, dtype=np.float64)
    ncorr = np.zeros(L, dtype=np.int64)
    cum_correct = np.zeros(L, dtype=np.int64)
    bounds = chunk_bounds(n, total, cp_steps, max(1, int(segment)), epochs=False)  # the loop wraps itself
    maxb = int(np.max(np.diff(bounds)))
    bufs, out = update_buffers(maxb * L, ("step", "ex", "cls", "coef", "score", "scale", "norm", "cum"))
    logs = {k: [] for k in bufs}
    cum_cp = np.zeros((cp_steps.size, L), dtype=np.int64)
    cp_ptr = 0
    alpha, B, C = float(params.alpha), float(params.B), float(params.C)
    state = AlmaState(W, scale, ncorr, cum_correct)
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        m = steps(seq, a, b, alpha, B, C, state, out)
        if m:
            for k in bufs:
                logs[k].append(bufs[k][:m].copy())
        while cp_ptr < cp_steps.size and cp_steps[cp_ptr] == b:
            cum_cp[cp_ptr] = cum_correct
            cp_ptr += 1
        if progress is not None:
            progress(b - a)
    cat = {k: _concat(v, bufs[k].dtype) for k, v in logs.items()}
    nu = cat["step"].size
    return TrainLog(
        n_train=n, n_labels=L, total_steps=total, order=order, checkpoint_steps=cp_steps, theta_init=0.0,
        upd_step=cat["step"], upd_ex=cat["ex"], upd_cls=cat["cls"], upd_coef=cat["coef"],
        upd_score=cat["score"], upd_kxx=np.ones(nu), upd_theta=np.zeros(nu),
        upd_cum_correct=cat["cum"], cum_correct_cp=cum_cp, seconds=time.perf_counter() - t0,
        info={"form": "primal", "dtype": "float64", "chunks": int(bounds.size - 1), "loop": "linear",
              **({"sparse": True} if issparse(X) else {}), "algorithm": "alma", "p": 2.0, "alpha": alpha, "B": B, "C": C},
        upd_scale=cat["scale"], upd_norm=cat["norm"], kernel_normalized=True,
    )


__all__ = ["SEGMENT_STEPS", "affine_form", "has_affine_form", "sparse_refusal", "train_perceptron_primal",
           "train_alma2_primal"]
