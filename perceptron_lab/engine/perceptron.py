"""The kernel perceptron engine: one pass over a training sequence, all labels at once.

One engine serves every perceptron variant of the papers; the variants are parameters:

* Freund & Schapire (1999), Figure 1: the (voted) perceptron, ``eta = 1``, no threshold.
* Khardon & Wachman (2007), Figure 2: threshold ``theta`` (initial value ``theta_init``, moved by
  ``eta * C`` on each update), learning rate ``eta``, margin ``tau`` (an update happens when
  ``y * (SUM - theta) <= tau``; ``tau`` is given in units of the average ``K(x, x)`` on the training
  set, which is the paper's ``theta_Init``), the lambda-trick (``SUM += I[alpha_i != 0] y_i lambda
  K(x_i, x_i)`` during training) and the alpha-bound (no update on an example that has already
  caused ``alpha_bound`` updates).

Multiclass problems are one-vs-rest: column ``c`` of the label matrix ``Y`` holds +1/-1 for
"class c vs the rest", and every column is trained in the same pass over the sequence.

The engine does not store hypotheses. It records every update (step, example, label column,
coefficient, the score before the update, the threshold after it, and how many correct predictions
the label had made before it) plus counters at the requested checkpoints. Every prediction rule at
every checkpoint is derived from that log afterwards (:mod:`perceptron_lab.predict`), so one
training run yields all of Freund & Schapire's rules at T = 0.1, 1, 2, ... without retraining.

Speed. In dual (kernel) form the engine keeps the current score of every training example for
every label, ``S[i, c] = v_c(x_i) = sum_k coef_k K(x_{j_k}, x_i)``. The sequence is processed in
chunks; inside a chunk the jitted loop adds the contributions of the chunk's own updates, and at
the end of a chunk the new support vectors' kernel columns against the whole training set are
computed in one GEMM and cached, so each support vector costs one kernel column for the whole
run, however many epochs. In primal form (linear kernel) the weight vectors are kept explicitly.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numba as nb
import numpy as np

from ..errors import PlabError
from ..kernels import Kernel, dot_rows, gram, kernel_diag, kernel_from_dot, sq_norms

UNBOUNDED = np.iinfo(np.int32).max


class EngineError(PlabError):
    """The engine cannot run with the given settings (e.g. the kernel cache would not fit)."""


@dataclass(frozen=True)
class PerceptronParams:
    """Resolved numeric parameters of the perceptron engine (see the module docstring).

    ``theta_init``, ``C`` and ``tau_abs`` are absolute values; the config layer resolves the
    symbolic settings (``avg_sq_norm``, ``tau`` in units of the average ``K(x, x)``).
    """

    eta: float = 1.0
    theta_init: float = 0.0
    C: float = 0.0
    tau_abs: float = 0.0
    lam: float = 0.0
    alpha_bound: int = UNBOUNDED


@dataclass
class TrainLog:
    """Everything a training pass records; prediction rules are computed from it.

    Arrays ``upd_*`` have one entry per update, in the order the updates happened.
    ``upd_cum_correct`` is the number of correct predictions of that label before the update;
    ``cum_correct_cp[k, c]`` the same at checkpoint ``k``. ``upd_score`` is the score ``v(x)`` of
    the updating example before the update (without the lambda term or threshold), which gives the
    feature-space norms ``|v_{k+1}|^2 = |v_k|^2 + 2 a v_k(x) + a^2 K(x, x)``.
    """

    n_train: int
    n_labels: int
    total_steps: int
    order: np.ndarray
    checkpoint_steps: np.ndarray
    theta_init: float
    upd_step: np.ndarray
    upd_ex: np.ndarray
    upd_cls: np.ndarray
    upd_coef: np.ndarray
    upd_score: np.ndarray
    upd_kxx: np.ndarray
    upd_theta: np.ndarray
    upd_cum_correct: np.ndarray
    cum_correct_cp: np.ndarray
    seconds: float = 0.0
    info: dict = field(default_factory=dict)

    @property
    def n_updates(self) -> int:
        return int(self.upd_step.shape[0])


@nb.njit(cache=True)
def _run_chunk(S0, ex, Y, kdiag, theta, mcount, cum_correct, eta, C, tau_abs, lam, alpha_bound,
               step0, slot_of, Kc, X, sq, kcode, kdeg, kscale, ksigma, kdiv,
               o_step, o_ex, o_cls, o_coef, o_score, o_theta, o_cum):
    """Process one chunk of the sequence (distinct examples ``ex``); returns the number of updates.

    ``S0[p, c]`` is label c's score of example ``ex[p]`` from all updates before the chunk; the
    chunk's own updates are added through ``corr``. The kernel value between two examples of the
    chunk comes from the cache ``Kc`` when the updating example already has a column there, and is
    computed from ``X`` otherwise.
    """
    B = ex.shape[0]
    L = Y.shape[1]
    corr = np.zeros((B, L))
    krow = np.empty(B)
    n_out = 0
    for p in range(B):
        i = ex[p]
        first_update = True
        for c in range(L):
            y = Y[i, c]
            s = S0[p, c] + corr[p, c]
            s_train = s
            if lam != 0.0 and mcount[i, c] != 0:
                s_train += y * lam * kdiag[i]
            if y * (s_train - theta[c]) > tau_abs:
                cum_correct[c] += 1
                continue
            if mcount[i, c] >= alpha_bound:
                continue
            coef = eta * y
            o_step[n_out] = step0 + p
            o_ex[n_out] = i
            o_cls[n_out] = c
            o_coef[n_out] = coef
            o_score[n_out] = s
            o_cum[n_out] = cum_correct[c]
            mcount[i, c] += 1
            theta[c] -= eta * y * C
            o_theta[n_out] = theta[c]
            n_out += 1
            if p + 1 < B:
                if first_update:
                    first_update = False
                    slot = slot_of[i]
                    if slot >= 0:
                        for q in range(p + 1, B):
                            krow[q] = Kc[slot, ex[q]]
                    else:
                        for q in range(p + 1, B):
                            j = ex[q]
                            acc = dot_rows(X, i, j)
                            krow[q] = kernel_from_dot(kcode, kdeg, kscale, ksigma, kdiv, acc, sq[i], sq[j])
                for q in range(p + 1, B):
                    corr[q, c] += coef * krow[q]
    return n_out


def chunk_bounds(n: int, total_steps: int, checkpoint_steps, chunk_size: int) -> np.ndarray:
    """Step positions where chunks start/end: epoch boundaries, checkpoints and every chunk_size."""
    cuts = set(range(0, total_steps, n))
    cuts.update(int(s) for s in checkpoint_steps)
    cuts.add(total_steps)
    bounds = sorted(c for c in cuts if 0 <= c <= total_steps)
    out = [0]
    for a, b in zip(bounds[:-1], bounds[1:]):
        s = a
        while s + chunk_size < b:
            s += chunk_size
            out.append(s)
        out.append(b)
    return np.unique(np.asarray(out, dtype=np.int64))


def epochs_to_steps(epochs: float, n: int) -> int:
    """Number of training steps in ``epochs`` passes over ``n`` examples (rounded to the nearest)."""
    return int(round(epochs * n))


def train(X, Y, kernel: Kernel, params: PerceptronParams, order, epochs: float, checkpoints,
          chunk_size: int = 512, dtype=np.float64, form: str = "auto", cache_limit_gb: float = 8.0,
          progress=None, flush_at: int = 256) -> TrainLog:
    """Train one-vs-rest perceptrons on the sequence ``order`` repeated for ``epochs`` passes.

    X: (n, f) features; Y: (n, L) int8 in {-1, +1}; order: permutation of range(n) (the training
    sequence of one epoch; every epoch repeats it); checkpoints: epochs (fractions allowed) at which
    the counters are recorded. ``progress`` is an optional callable receiving the steps done.
    """
    t0 = time.perf_counter()
    n, L = Y.shape
    if X.shape[0] != n:
        raise EngineError(f"X has {X.shape[0]} rows but Y has {n}")
    if form == "auto":
        form = "primal" if kernel.name == "linear" else "dual"
    if form == "primal" and kernel.name != "linear":
        raise EngineError(f"primal form needs the linear kernel, got {kernel.describe()}")
    Xd = np.ascontiguousarray(X, dtype=dtype)
    Y = np.ascontiguousarray(Y, dtype=np.int8)
    order = np.ascontiguousarray(order, dtype=np.int64)
    total = epochs_to_steps(epochs, n)
    cp_steps = np.array(sorted({epochs_to_steps(c, n) for c in checkpoints}), dtype=np.int64)
    if total < 1 or cp_steps.size == 0 or cp_steps[0] < 1 or cp_steps[-1] > total:
        raise EngineError(f"checkpoints {list(checkpoints)} must lie in (0, {epochs}] and cover >= 1 step")
    bounds = chunk_bounds(n, total, cp_steps, chunk_size)

    kdiag = kernel_diag(kernel, Xd)
    sq = sq_norms(Xd)
    theta = np.full(L, params.theta_init, dtype=np.float64)
    mcount = np.zeros((n, L), dtype=np.int32)
    cum_correct = np.zeros(L, dtype=np.int64)
    slot_of = np.full(n, -1, dtype=np.int64)
    kcode, kdeg, kscale, ksigma, kdiv = kernel.params()

    if form == "dual":
        itemsize = np.dtype(dtype).itemsize
        cap = int(min(n, max(1, cache_limit_gb * 1e9 // (n * itemsize))))
        Kc = np.empty((cap, n), dtype=dtype)
        S = np.zeros((n, L), dtype=np.float64)
        n_slots = 0
        # Support vectors whose kernel column is not computed yet: their contribution to a chunk's
        # scores comes from a small kernel block, and their columns are computed together once
        # enough have accumulated (one kernel column alone runs at memory speed, not GEMM speed).
        pend_ex = np.empty(0, dtype=np.int64)
        pend_delta = np.empty((0, L), dtype=np.float64)
        pend_work = 0
        flush_at = max(1, int(flush_at))
    else:
        Kc = np.empty((1, 1), dtype=dtype)
        W = np.zeros((L, Xd.shape[1]), dtype=np.float64)

    maxb = int(np.max(np.diff(bounds)))
    bufs = {k: np.empty(maxb * L, dtype=t) for k, t in (
        ("step", np.int64), ("ex", np.int64), ("cls", np.int32), ("coef", np.float64),
        ("score", np.float64), ("theta", np.float64), ("cum", np.int64))}
    logs = {k: [] for k in bufs}
    cum_cp = np.zeros((cp_steps.size, L), dtype=np.int64)
    cp_ptr = 0

    for a, b in zip(bounds[:-1], bounds[1:]):
        pos = np.arange(a, b) % n
        ex = order[pos]
        if form == "dual":
            S0 = S[ex]
            if pend_ex.size:
                S0 += gram(kernel, Xd[ex], Xd[pend_ex], sq[ex], sq[pend_ex]) @ pend_delta.astype(dtype)
                pend_work += ex.size * pend_ex.size
        else:
            S0 = Xd[ex] @ W.T.astype(dtype)
            S0 = S0.astype(np.float64)
        m = _run_chunk(S0, ex, Y, kdiag, theta, mcount, cum_correct, params.eta, params.C,
                       params.tau_abs, params.lam, params.alpha_bound, a, slot_of, Kc, Xd, sq,
                       kcode, kdeg, kscale, ksigma, kdiv, bufs["step"], bufs["ex"], bufs["cls"],
                       bufs["coef"], bufs["score"], bufs["theta"], bufs["cum"])
        if m:
            for k in bufs:
                logs[k].append(bufs[k][:m].copy())
            u_ex = bufs["ex"][:m]
            touched, inv = np.unique(u_ex, return_inverse=True)
            delta = np.zeros((touched.size, L), dtype=np.float64)
            np.add.at(delta, (inv, bufs["cls"][:m]), bufs["coef"][:m])
            if form == "dual":
                cached = slot_of[touched] >= 0
                if cached.any():
                    S += Kc[slot_of[touched[cached]]].T @ delta[cached].astype(dtype)
                if not cached.all():
                    pend_ex, pend_delta = _merge_pending(pend_ex, pend_delta, touched[~cached], delta[~cached])
                # flush when the batch is large enough for GEMM speed, or when scoring chunks against
                # the pending set has cost about as much as a flush's pass over the data
                if pend_ex.size and (pend_ex.size >= flush_at or pend_work >= 32 * n or b == total):
                    n_slots = _flush_pending(kernel, Xd, sq, Kc, S, slot_of, n_slots, pend_ex, pend_delta,
                                             cap, cache_limit_gb, dtype)
                    pend_ex, pend_delta, pend_work = pend_ex[:0], pend_delta[:0], 0
            else:
                W += delta.T @ Xd[touched].astype(np.float64)
        while cp_ptr < cp_steps.size and cp_steps[cp_ptr] == b:
            cum_cp[cp_ptr] = cum_correct
            cp_ptr += 1
        if progress is not None:
            progress(b - a)

    cat = {k: (np.concatenate(v) if v else np.empty(0, dtype=bufs[k].dtype)) for k, v in logs.items()}
    return TrainLog(
        n_train=n, n_labels=L, total_steps=total, order=order, checkpoint_steps=cp_steps,
        theta_init=float(params.theta_init), upd_step=cat["step"], upd_ex=cat["ex"],
        upd_cls=cat["cls"], upd_coef=cat["coef"], upd_score=cat["score"],
        upd_kxx=kdiag[cat["ex"]], upd_theta=cat["theta"], upd_cum_correct=cat["cum"],
        cum_correct_cp=cum_cp, seconds=time.perf_counter() - t0,
        info={"form": form, "dtype": np.dtype(dtype).name, "chunks": int(bounds.size - 1)},
    )


def _merge_pending(pend_ex, pend_delta, ex, delta):
    """Add coefficient rows for examples ``ex`` to the pending set (rows of the same example add)."""
    all_ex = np.concatenate([pend_ex, ex])
    all_delta = np.concatenate([pend_delta, delta])
    uniq, inv = np.unique(all_ex, return_inverse=True)
    out = np.zeros((uniq.size, all_delta.shape[1]))
    np.add.at(out, inv, all_delta)
    return uniq, out


def _flush_pending(kernel, Xd, sq, Kc, S, slot_of, n_slots, pend_ex, pend_delta, cap, cache_limit_gb, dtype):
    """Compute the pending support vectors' kernel columns in one GEMM, cache them, update S."""
    n = Xd.shape[0]
    a0, a1 = n_slots, n_slots + pend_ex.size
    if a1 > cap:
        need = a1 * n * np.dtype(dtype).itemsize / 1e9
        raise EngineError(
            f"the kernel cache needs more than training.cache_limit_gb = {cache_limit_gb:g} GB "
            f"(>= {need:.1f} GB for {a1} support vectors of {n} examples); raise "
            "training.cache_limit_gb, train on fewer examples, or use the linear kernel (primal form)")
    slot_of[pend_ex] = np.arange(a0, a1)
    gram(kernel, Xd[pend_ex], Xd, sq[pend_ex], sq, out=Kc[a0:a1])
    S += Kc[a0:a1].T @ pend_delta.astype(dtype)
    return a1


def label_matrix(y: np.ndarray, n_classes: int) -> np.ndarray:
    """+1/-1 label columns: one column for a binary problem (class 1 positive), else one per class."""
    y = np.asarray(y)
    if n_classes == 2:
        return np.where(y == 1, 1, -1).astype(np.int8)[:, None]
    return np.where(y[:, None] == np.arange(n_classes)[None, :], 1, -1).astype(np.int8)


def resolve_params(acfg, kdiag_train: np.ndarray, value_factor: float = 1.0) -> PerceptronParams:
    """Turn the algorithm section of a config into absolute engine parameters.

    ``theta_init: avg_sq_norm`` and the unit of ``tau`` are the average K(x, x) over the training
    examples (Khardon & Wachman §3.2: theta_Init = avg <x_i, x_i>, C = theta_Init).
    """
    avg = float(np.mean(kdiag_train)) if kdiag_train.size else 0.0
    theta_init = avg if acfg.theta_init == "avg_sq_norm" else float(acfg.theta_init) * value_factor
    C = theta_init if acfg.C == "theta_init" else float(acfg.C) * value_factor
    ab = acfg.alpha_bound
    alpha_bound = UNBOUNDED if ab is None or (isinstance(ab, float) and math.isinf(ab)) else int(ab)
    return PerceptronParams(eta=float(acfg.eta), theta_init=theta_init, C=C,
                            tau_abs=float(acfg.tau) * avg, lam=float(acfg.lambda_),
                            alpha_bound=alpha_bound)
