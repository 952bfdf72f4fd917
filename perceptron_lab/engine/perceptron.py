"""The kernel perceptron engine: one pass over a training sequence, all labels at once.

One engine serves every perceptron variant of the papers; the variants are parameters:

* Freund & Schapire (1999), Figure 1: the (voted) perceptron, ``eta = 1``, no threshold.
* Khardon & Wachman (2007), Figure 2: threshold ``theta`` (initial value ``theta_init``, moved by
  ``eta * C`` on each update), learning rate ``eta``, margin ``tau`` (an update happens when
  ``y * (SUM - theta) <= tau``; ``tau`` is given in units of the average ``K(x, x)`` on the training
  set, which is the paper's ``theta_Init``), the lambda-trick (``SUM += I[alpha_i != 0] y_i lambda
  K(x_i, x_i)`` during training, eq. (1); or, with ``lam_diagonal``, ``SUM += eta alpha_i y_i lambda
  K(x_i, x_i)``: ``lambda K(x_i, x_i)`` added to the kernel's diagonal, the dual-form convention of
  the papers cited for the trick, Kowalczyk et al. 2001 and Li et al. 2002) and the alpha-bound (no update on an example that has already
  caused ``alpha_bound`` updates).

Multiclass problems are one-vs-rest: column ``c`` of the label matrix ``Y`` holds +1/-1 for
"class c vs the rest", and every column is trained in the same pass over the sequence.

The engine does not store hypotheses. It records every update (step, example, label column,
coefficient, the score before the update, the threshold after it, and how many correct predictions
the label had made before it) plus counters at the requested checkpoints. Every prediction rule at
every checkpoint is derived from that log afterwards (:mod:`perceptron_lab.model.predict`), so one
training run yields all of Freund & Schapire's rules at T = 0.1, 1, 2, ... without retraining.

Speed. In dual (kernel) form the engine keeps the current score of every training example for
every label, ``S[i, c] = v_c(x_i) = sum_k coef_k K(x_{j_k}, x_i)``. The sequence is processed in
chunks; inside a chunk the jitted loop adds the contributions of the chunk's own updates, and at
the end of a chunk the new support vectors' kernel columns against the whole training set are
computed in one GEMM and cached, so each support vector costs one kernel column for the whole
run, however many epochs; runs of one process on the same training set and kernel share these
columns (:mod:`perceptron_lab.engine.columns`). A single pass needs no cache: it computes a support
vector's values against the examples still to come only, and runs of several settings taking the
same pass go in lockstep, computing those values once for them all (:func:`train_lockstep`). In
primal form (linear kernel) the weight vectors are kept explicitly.

ALMA_2 (Gentile 2001, Figure 1 with p = 2) runs on the same driver with ``rule = ALMA2`` (see
:mod:`perceptron_lab.engine.alma`): the engine then works with the normalized kernel
``K^(x, y) = K(x, y) / sqrt(K(x, x) K(y, y))``, keeps ``w = s * u`` per label with
``u = sum_j a_j x^_j`` unscaled (the cache ``S`` holds u's scores) and a scale ``s``, and records
the scale after each update (``TrainLog.upd_scale``).
"""

from __future__ import annotations

import math
import time
from collections import namedtuple
from dataclasses import dataclass

import numba as nb
import numpy as np

from perceptron_lab.engine import columns, ordered
from perceptron_lab.errors import NumericError
from perceptron_lab.engine.kernels import (
    DOTS_EXACT_SQ_LIMIT, Kernel, dot_rows, dot_rows_exact, exact32_ok, gram, integer_features, kernel_diag,
    kernel_from_dot, matmul_exact32, sq_norms)
from perceptron_lab.engine.memory import cold_array, cold_copy, cold_take
from perceptron_lab.engine.base import (  # noqa: F401  (re-exported: the engine's shared types)
    RULE_ALMA2, RULE_CODES, RULE_PERCEPTRON, UNBOUNDED, EngineError, PerceptronParams, TrainLog, chunk_bounds,
    epochs_to_steps, update_buffers)

# A chunk's inner products come from one float64 GEMM (instead of a loop per updating example)
# when the previous chunk had at least this many examples updating without a cached kernel
# column. On integer features (MNIST pixels) both give the exact inner product.
CHUNK_DOTS_MIN_NEW = 16
_NO_DOTS = np.zeros((1, 1))


#: One chunk of the training sequence, as :func:`_run_chunk` reads it. ``S0[p, c]``: label c's score
#: of example ``ex[p]`` from the updates before the chunk; ``step0``: the step of ``ex[0]``; ``Xe``: the
#: chunk's features (row p: example ``ex[p]``); ``Kcc``/``use_kcc``: the chunk's own kernel block
#: (primal form); ``Dcc``/``use_dcc``: the chunk's inner products by one GEMM; ``exact_dots``: integer
#: features of small norms (exact inner products by :func:`~perceptron_lab.engine.kernels.dot_rows_exact`).
Chunk = namedtuple("Chunk", "S0 ex step0 Xe Kcc use_kcc Dcc use_dcc exact_dots")

#: What :func:`_run_chunk` reads about the training set: the labels ``Y``, ``kdiag`` (K(x, x)),
#: ``slot_of`` (an example's row of the column cache ``Kc``, -1 without one), the squared norms
#: ``sq``, the normalizing factors ``rscale`` (ones for an unnormalized kernel) and the kernel's
#: numeric parameters ``kparams`` (:meth:`~perceptron_lab.engine.kernels.Kernel.params`).
TrainingSet = namedtuple("TrainingSet", "Y kdiag slot_of Kc sq rscale kparams")

#: The update rule and its parameters, resolved once per run: ``code`` is RULE_PERCEPTRON (``eta`` ...
#: ``alpha_bound``, ``lam_diag``: the lambda term grows with the example's updates) or RULE_ALMA2
#: (``a_alpha``, ``a_B``, ``a_C``: Gentile's alpha, B and C).
Rule = namedtuple("Rule", "code eta C tau_abs lam alpha_bound a_alpha a_B a_C lam_diag")

#: Per-label state that the chunks carry forward: thresholds ``theta``, update counts ``mcount[i, c]``,
#: correct predictions ``cum_correct``, and for ALMA_2 the corrections ``ncorr``, the scales ``scale``
#: and ``usq = |u|^2``.
LabelState = namedtuple("LabelState", "theta mcount cum_correct ncorr scale usq")


@nb.njit(cache=True)
def _run_chunk(chunk, data, rule, state, out):
    """Process one chunk of the sequence (distinct examples ``chunk.ex``, a :data:`Chunk`) on the
    training set ``data`` (:data:`TrainingSet`) with ``rule`` (:data:`Rule`), moving ``state``
    (:data:`LabelState`) forward and writing each update to the buffers of ``out``
    (:data:`~perceptron_lab.engine.base.Updates`); returns the number of updates.

    ``S0[p, c]`` is label c's score of example ``ex[p]`` from all updates before the chunk; the
    chunk's own updates are added through ``corr``. The kernel value between two examples of the
    chunk comes from the cache ``Kc`` when the updating example already has a column there, and is
    computed from the chunk's features ``Xe`` (row p: example ``ex[p]``; times ``rscale[i] *
    rscale[j]``) otherwise; with ``use_dcc`` the inner products for that come from ``Dcc[p, q]``
    (the chunk's rows against each other, by one GEMM in float64), else from a loop over the
    features of two rows of ``Xe``, which lie next to each other (rows of the whole set, in the
    order of the examples, would be read from all over it); with ``exact_dots`` (integer features
    of small enough norms) by :func:`~perceptron_lab.engine.kernels.dot_rows_exact`, the same values.

    ``rule.code`` selects the update: RULE_PERCEPTRON (the parameters eta ... alpha_bound) or
    RULE_ALMA2 (Gentile 2001, Figure 1 with p = 2; parameters a_alpha, a_B, a_C). For ALMA the
    scores are those of the unscaled ``u`` of ``w = scale * u``; ``ncorr[c]`` counts the label's
    corrections so far (k - 1) and ``usq[c]`` is ``|u|^2``.
    """
    S0, ex, step0, Xe, Kcc, use_kcc, Dcc, use_dcc, exact_dots = chunk
    Y, kdiag, slot_of, Kc, sq, rscale, kparams = data
    kcode, kdeg, kscale, ksigma, kdiv = kparams
    eta, C, tau_abs, lam, alpha_bound = rule.eta, rule.C, rule.tau_abs, rule.lam, rule.alpha_bound
    lam_diag = rule.lam_diag
    a_alpha, a_B, a_C = rule.a_alpha, rule.a_B, rule.a_C
    theta, mcount, cum_correct, ncorr, scale, usq = state
    o_step, o_ex, o_cls, o_coef, o_score, o_theta, o_cum, o_scale, o_norm = (
        out.step, out.ex, out.cls, out.coef, out.score, out.theta, out.cum, out.scale, out.norm)
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
            if rule.code == RULE_ALMA2:
                # Figure 1: correction when y w_k . x^ <= (1 - alpha) gamma_k, gamma_k = B / sqrt(k)
                # (sqrt(p - 1) = 1); a zero instance causes no update (footnote 3).
                if kdiag[i] <= 0.0:
                    cum_correct[c] += 1
                    continue
                sqk = math.sqrt(ncorr[c] + 1.0)
                if y * scale[c] * s > (1.0 - a_alpha) * a_B / sqk:
                    cum_correct[c] += 1
                    continue
                # w' = w + eta_k y x^ = scale (u + a x^) with a = eta_k y / scale; then
                # w_{k+1} = w' / max(1, |w'|), i.e. only the scale changes (Remark 5).
                coef = (a_C / sqk) * y / scale[c]
                usq[c] += 2.0 * coef * s + coef * coef * kdiag[i]
                nrm = scale[c] * math.sqrt(max(usq[c], 0.0))
                if nrm > 1.0:
                    scale[c] = scale[c] / nrm
                    nrm = 1.0
                ncorr[c] += 1
                o_scale[n_out] = scale[c]
                o_norm[n_out] = nrm
            else:
                s_train = s
                if lam != 0.0 and mcount[i, c] != 0:
                    if lam_diag:
                        s_train += y * lam * kdiag[i] * (eta * mcount[i, c])
                    else:
                        s_train += y * lam * kdiag[i]
                if y * (s_train - theta[c]) > tau_abs:
                    cum_correct[c] += 1
                    continue
                if mcount[i, c] >= alpha_bound:
                    continue
                coef = eta * y
                theta[c] -= eta * y * C
                o_scale[n_out] = 1.0
                o_norm[n_out] = 0.0
            o_step[n_out] = step0 + p
            o_ex[n_out] = i
            o_cls[n_out] = c
            o_coef[n_out] = coef
            o_score[n_out] = s
            o_cum[n_out] = cum_correct[c]
            mcount[i, c] += 1
            o_theta[n_out] = theta[c]
            n_out += 1
            if p + 1 < B:
                if first_update:
                    first_update = False
                    slot = slot_of[i]
                    if use_kcc:
                        for q in range(p + 1, B):
                            krow[q] = Kcc[p, q]
                    elif slot >= 0:
                        for q in range(p + 1, B):
                            krow[q] = Kc[slot, ex[q]]
                    else:
                        for q in range(p + 1, B):
                            j = ex[q]
                            if use_dcc:
                                acc = Dcc[p, q]
                            elif exact_dots:
                                acc = dot_rows_exact(Xe, p, q)
                            else:
                                acc = dot_rows(Xe, p, q)
                            krow[q] = (kernel_from_dot(kcode, kdeg, kscale, ksigma, kdiv, acc, sq[i], sq[j])
                                       * (rscale[i] * rscale[j]))
                for q in range(p + 1, B):
                    corr[q, c] += coef * krow[q]
    return n_out


@dataclass(frozen=True)
class RunOptions:
    """How :func:`train` runs a training pass (the settings after ``checkpoints`` in its signature;
    see its docstring). None of them changes the log."""

    chunk_size: int = 512
    dtype: object = np.float64
    form: str = "auto"
    cache_limit_gb: float = 8.0
    progress: object = None
    flush_at: int = 256
    primal_loop: bool = True
    stream: bool | None = None
    share: bool = True


def train(X, Y, kernel: Kernel, params: PerceptronParams, order, epochs: float, checkpoints,
          chunk_size: int = 512, dtype=np.float64, form: str = "auto", cache_limit_gb: float = 8.0,
          progress=None, flush_at: int = 256, primal_loop: bool = True, stream: bool | None = None,
          share: bool = True) -> TrainLog:
    """Train one-vs-rest perceptrons on the sequence ``order`` repeated for ``epochs`` passes.

    Primal runs of the perceptron (the linear kernel or poly of degree 1, ``form`` auto or primal)
    go to the per-example loop of :mod:`perceptron_lab.engine.linear`, which records the same log;
    ``primal_loop=False`` keeps them on this chunked driver (``chunk_size`` matters only there).

    X: (n, f) features; Y: (n, L) int8 in {-1, +1}; order: permutation of range(n) (the training
    sequence of one epoch; every epoch repeats it); checkpoints: epochs (fractions allowed) at which
    the counters are recorded. ``progress`` is an optional callable receiving the steps done.

    ``params`` is a :class:`PerceptronParams`, or an ALMA parameter set with ``p = 2``
    (:class:`perceptron_lab.engine.alma.AlmaParams`; use :func:`~perceptron_lab.engine.alma.train_alma`,
    which also handles p > 2): the same driver then runs ALMA_2 on the normalized kernel.

    ``stream`` (default: for runs of at most one pass) computes the dual form's kernel columns
    block by block without caching them; ``cache_limit_gb`` then does not apply. Otherwise the
    cached columns are shared with the process's other runs on the same training set and kernel
    (:mod:`perceptron_lab.engine.columns`; ``share=False`` keeps them to this run).
    """
    opts = RunOptions(chunk_size=chunk_size, dtype=dtype, form=form, cache_limit_gb=cache_limit_gb,
                      progress=progress, flush_at=flush_at, primal_loop=primal_loop, stream=stream, share=share)
    run = _train_run(X, Y, kernel, params, order, epochs, checkpoints, opts)
    while True:
        try:
            next(run)
        except StopIteration as done:
            return done.value


def _train_run(X, Y, kernel, params, order, epochs, checkpoints, opts: RunOptions, suffix_columns=None):
    """:func:`train` as a generator. A streamed pass over a suffix of the order yields
    ``(b, flush, pending examples)`` at the end of each chunk ``[a, b)``, before it adds its pending
    support vectors' columns to the scores (``flush``: it will now); :func:`train_lockstep` drives
    several such runs a chunk at a time and hands them ``suffix_columns``, a
    :class:`SharedSuffixColumns`, from which they take those columns. The return value is the
    :class:`TrainLog`.

    The setup (:class:`_ChunkRun`) resolves the form, the rule and the memory strategy once; the
    loop then runs :func:`_run_chunk` on each chunk and folds its updates into the scores."""
    t0 = time.perf_counter()
    form, code = _resolve_form(X, Y, kernel, params, opts.form)
    if form == "primal" and code == RULE_PERCEPTRON and opts.primal_loop:
        from perceptron_lab.engine.linear import train_perceptron_primal

        return train_perceptron_primal(X, Y, kernel, params, order, epochs, checkpoints, dtype=opts.dtype,
                                       progress=opts.progress)
    run = _ChunkRun(X, Y, kernel, params, order, epochs, checkpoints, opts, form, code, suffix_columns)
    for a, b in zip(run.bounds[:-1], run.bounds[1:]):
        m = _run_chunk(run.chunk(a, b), run.data, run.rule, run.state, run.out)
        yield from run.absorb(m, b)
        run.checkpoint(b)
        if opts.progress is not None:
            opts.progress(b - a)
    return run.log(time.perf_counter() - t0)


def _resolve_form(X, Y, kernel, params, form):
    """The form (primal or dual) and the rule code of a run, or an :class:`EngineError` for settings
    the driver cannot run."""
    n = Y.shape[0]
    if X.shape[0] != n:
        raise EngineError(f"X has {X.shape[0]} rows but Y has {n}")
    has_primal = kernel.name == "linear" or (kernel.name == "poly" and kernel.degree == 1)
    if form == "auto":
        form = "primal" if has_primal else "dual"
    if form == "primal" and not has_primal:
        raise EngineError(f"primal form needs the linear kernel (or poly of degree 1), got {kernel.describe()}")
    code = RULE_CODES[getattr(params, "rule", "perceptron")]
    # kernel "precomputed": X is the Gram matrix of the training examples, taken whole as the cache
    if kernel.name == "precomputed" and (form != "dual" or code != RULE_PERCEPTRON or X.shape[1] != n):
        raise EngineError(f"a precomputed kernel needs the perceptron in dual form and a square Gram matrix, "
                          f"got form {form!r}, X of shape {X.shape}")
    return form, code


def _resolve_rule(params, code) -> tuple[Rule, float]:
    """The :data:`Rule` of ``params`` for the rule ``code``, and the initial threshold."""
    if code == RULE_ALMA2:
        if float(params.p) != 2.0:
            raise EngineError(f"this driver runs ALMA_p with p = 2 only, got p = {params.p:g}; "
                              "p > 2 runs in primal form (engine.alma.train_alma)")
        return Rule(code, 1.0, 0.0, 0.0, 0.0, UNBOUNDED, float(params.alpha), float(params.B), float(params.C),
                    False), 0.0
    return Rule(code, params.eta, params.C, params.tau_abs, params.lam, params.alpha_bound, 0.0, 0.0, 0.0,
                bool(params.lam_diagonal)), params.theta_init


class _ChunkRun:
    """One run of the chunked driver: the setup, resolved once (the sequence and its chunks, the
    kernel's diagonal and normalization, the label state, the memory strategy of the scores and
    kernel columns), and what each chunk needs before (:meth:`chunk`) and after (:meth:`absorb`)
    :func:`_run_chunk`."""

    def __init__(self, X, Y, kernel, params, order, epochs, checkpoints, opts, form, code, suffix_columns):
        self.rule, self.theta_init = _resolve_rule(params, code)
        self.kernel, self.opts, self.form, self.dtype = kernel, opts, form, opts.dtype
        self.normalized = code == RULE_ALMA2
        self.given = kernel.name == "precomputed"
        self.suffix_columns = suffix_columns
        self.Xd = Xd = cold_copy(X, self.dtype)
        self.Y = np.ascontiguousarray(Y, dtype=np.int8)
        self.n, self.L = n, L = Y.shape
        self.order = np.ascontiguousarray(order, dtype=np.int64)
        self.total = total = epochs_to_steps(epochs, n)
        self.cp_steps = cp_steps = np.array(sorted({epochs_to_steps(c, n) for c in checkpoints}), dtype=np.int64)
        if total < 1 or cp_steps.size == 0 or cp_steps[0] < 1 or cp_steps[-1] > total:
            raise EngineError(f"checkpoints {list(checkpoints)} must lie in (0, {epochs}] and cover >= 1 step")
        self.bounds = chunk_bounds(n, total, cp_steps, opts.chunk_size)
        kdiag = kernel_diag(kernel, Xd)
        if self.normalized:
            # K^(x, y) = r_x r_y K(x, y) with r = 1 / sqrt(K(x, x)) (0 for a zero instance)
            self.rscale = normalizing_factors(kdiag)
            kdiag = np.where(kdiag > 0, 1.0, 0.0)
        else:
            self.rscale = np.ones(n)
        self.kdiag = kdiag
        self.sq = sq_norms(Xd)
        self.state = LabelState(theta=np.full(L, self.theta_init, dtype=np.float64),
                                mcount=np.zeros((n, L), dtype=np.int32), cum_correct=np.zeros(L, dtype=np.int64),
                                ncorr=np.zeros(L, dtype=np.int64), scale=np.ones(L, dtype=np.float64),
                                usq=np.zeros(L, dtype=np.float64))
        self.slot_of = np.full(n, -1, dtype=np.int64)
        self._memory()
        maxb = int(np.max(np.diff(self.bounds)))
        self.bufs, self.out = update_buffers(maxb * L, ("step", "ex", "cls", "coef", "score", "theta", "cum",
                                                        "scale", "norm"))
        self.data = TrainingSet(self.Y, kdiag, self.slot_of, self.Kc, self.sq, self.rscale, kernel.params())
        self.logs = {k: [] for k in self.bufs}
        self.cum_cp = np.zeros((cp_steps.size, L), dtype=np.int64)
        self.cp_ptr = 0
        self.pend_rows = None  # the pending examples' features (and float32 copy), gathered when they change
        self._XdT = None       # Xd transposed, for the kernel columns' ordered products (XdT)
        self.ints = None       # integer features of small norms (chunk_dots, _run_chunk), found at the first chunk

    def _memory(self):
        """The memory strategy: where the scores and kernel columns live (a given Gram matrix, a
        column cache shared through the process's store, streamed columns, a streamed suffix, or
        the primal weights), and the pending support vectors."""
        n, L, dtype, total, opts = self.n, self.L, self.dtype, self.total, self.opts
        Xd, kernel = self.Xd, self.kernel
        suffix_columns = self.suffix_columns
        self.suffix = False  # a streamed pass over the suffix of the order (set below)
        self.stream, self.store, self.Xo, self.cap, self.n_slots = False, None, None, 0, 0
        self.exact, self.Xd32 = False, None
        if self.given:
            self.Kc, self.cap, self.n_slots = Xd, n, n
            self.slot_of[:] = np.arange(n)
            self.S = np.zeros((n, L), dtype=np.float64)
        elif self.form == "dual":
            itemsize = np.dtype(dtype).itemsize
            # At most one pass: no example is visited twice, so a support vector's kernel column is
            # never read after the flush that adds it to S. Such runs stream the columns (a block of
            # the pending support vectors at a time) instead of caching them: memory O(block x n)
            # instead of O(support vectors x n), the same numbers.
            self.stream = stream = total <= n if opts.stream is None else bool(opts.stream)
            self.cap = cap = 0 if stream else int(min(n, max(1, opts.cache_limit_gb * 1e9 // (n * itemsize))))
            # cached columns live in the process's column store: runs on the same training set with
            # the same kernel take the columns computed before them (engine.columns; same numbers)
            sharing = bool(cap and opts.share and columns.enabled())
            # The store knows a training set by a hash of its values, computed on a thread of its own
            # (it releases the interpreter) while this one puts the features in training order.
            digest = columns.Digest(Xd) if sharing else None
            # Several passes: the features in training order, once, so that a chunk's rows are a
            # slice of them rather than a gather from the whole set at every visit (a chunk never
            # spans two epochs: chunk_bounds cuts at each epoch's start).
            self.Xo = cold_take(Xd, self.order) if total > n else None
            self.store = (columns.store_for(Xd, kernel.params(), self.normalized, cap, dtype,
                                            digest=digest.result()) if sharing else None)
            self.Kc = self.store.K if self.store is not None else cold_array((max(cap, 1), n), dtype)
            self.S = np.zeros((n, L), dtype=np.float64)
            # runs on integer features: kernel blocks from exact float32 GEMMs (the same values)
            self.exact = exact = exact32_ok(Xd)
            self.Xd32 = None if not exact else (suffix_columns.Xd32 if suffix_columns is not None
                                                else Xd if Xd.dtype == np.float32 else cold_copy(Xd, np.float32))
            # One pass: a support vector's kernel column is read only by the examples after it in the
            # order. The features and the scores S are then held in training order (S[q] is the score
            # of the example at position q), so that a flush computes the columns of those examples
            # alone, a suffix: half of the whole columns' arithmetic on average. Only on integer
            # features, whose kernel blocks are exact whatever their shape; float64 GEMMs of other
            # features may round a narrower block differently (small-matrix kernels), which would move
            # the scores in their last bits.
            self.suffix = stream and total <= n and exact
            if self.suffix:
                self.cols = suffix_columns if suffix_columns is not None else SuffixColumns(
                    kernel, Xd, self.sq, self.order[:total], self.rscale if self.normalized else None, dtype,
                    self.Xd32)
                self.S = np.zeros((total, L), dtype=np.float64)
        if suffix_columns is not None and not self.suffix:
            raise EngineError("shared suffix columns need a streamed pass over integer features in float64")
        # Support vectors whose kernel column is not computed yet: their contribution to a chunk's
        # scores comes from a small kernel block, and their columns are computed together once
        # enough have accumulated (one kernel column alone runs at memory speed, not GEMM speed).
        self.pend_ex = np.empty(0, dtype=np.int64)
        self.pend_delta = np.empty((0, L), dtype=np.float64)
        self.pend_work = 0
        self.flush_at = max(1, int(opts.flush_at))
        # examples first updating in the last chunk while they had no cached column: when many,
        # the next chunk's inner products are computed together by GEMM (see _run_chunk)
        self.new_last = opts.chunk_size
        if self.given:
            self.pend_ex, self.pend_delta, self.pend_work, self.flush_at, self.new_last = (
                np.empty(0, np.int64), np.empty((0, L)), 0, 1, 0)
        elif self.form != "dual":
            self.S = None   # the primal weights W hold the scores
            self.Kc = np.empty((1, 1), dtype=dtype)
            self.Xf = primal_features(kernel, Xd)
            self.W = np.zeros((L, self.Xf.shape[1]), dtype=np.float64)
        # the products added to the scores are written here, one array for the run (add_product)
        self.Sbuf = np.empty(self.S.shape, dtype=dtype) if self.form == "dual" else None

    @property
    def XdT(self):
        """The features transposed (C-contiguous), made once for the run: the kernel columns of
        features that are not exact integers are ordered products, which read B transposed. None
        where the columns come from the exact float32 GEMM."""
        if self._XdT is None and self.Xd32 is None and self.Xd.ndim == 2:
            self._XdT = np.ascontiguousarray(self.Xd.T)
        return self._XdT

    def chunk(self, a, b) -> Chunk:
        """The :data:`Chunk` of steps ``[a, b)``: its examples, their scores before it (with the
        pending support vectors' contributions) and the kernel blocks or inner products it reads."""
        n, dtype, Xd, sq = self.n, self.dtype, self.Xd, self.sq
        pos = np.arange(a, b) % n
        ex = self.order[pos]
        Dcc = _NO_DOTS
        if self.form == "dual":
            Kcc = self.Kc[:1, :1]
            S0 = self.S[a:b].copy() if self.suffix else self.S[ex]
            Xe = Xd[ex] if self.Xo is None else self.Xo[pos[0]:pos[0] + pos.size]
            if self.ints is None:
                # integer features of norms below the limit: a chunk's inner products by the exact
                # float32 path (chunk_dots) and by dot_rows_exact (_run_chunk), the same values (a
                # given Gram matrix has no inner products to compute)
                small = not sq.size or float(np.max(sq)) < DOTS_EXACT_SQ_LIMIT
                self.ints = not self.given and small and (bool(self.exact) or integer_features(Xd))
            if self.new_last >= CHUNK_DOTS_MIN_NEW:
                Dcc = (self.suffix_columns.chunk_dots(a, Xe) if self.suffix_columns is not None
                       else chunk_dots(Xe, self.ints))
            pend_ex, pend_delta = self.pend_ex, self.pend_delta
            if pend_ex.size:
                if self.pend_rows is None:
                    self.pend_rows = (Xd[pend_ex], sq[pend_ex], self.Xd32[pend_ex] if self.exact else None)
                G = gram(self.kernel, Xe, self.pend_rows[0], sq[ex], self.pend_rows[1], exact32=self.exact,
                         B32=self.pend_rows[2])
                if self.normalized:
                    S0 += self.rscale[ex, None] * ordered.matmul(G, (self.rscale[pend_ex, None] * pend_delta).astype(dtype))
                else:
                    S0 += ordered.matmul(G, pend_delta.astype(dtype))
                self.pend_work += ex.size * pend_ex.size
        else:
            Xe = Xd[:1]   # not read: the chunk's kernel block Kcc holds every value needed
            S0 = ordered.matmul_nt(self.Xf[ex], self.W.astype(dtype))
            # the chunk's own kernel block by GEMM: mistakes are frequent in primal runs (the
            # data are rarely separable), and a row per updating example would cost more
            Fe = self.Xf[ex]
            Kcc = ordered.matmul_nt(Fe, Fe)
            if self.normalized:
                Kcc *= np.outer(self.rscale[ex], self.rscale[ex]).astype(Kcc.dtype)
            S0 = S0.astype(np.float64)
            if self.normalized:
                S0 *= self.rscale[ex, None]
        return Chunk(S0, ex, a, Xe, Kcc, self.form != "dual", Dcc, Dcc.shape[0] > 1, bool(self.ints))

    def absorb(self, m, b):
        """Keep the chunk's ``m`` updates and add them to the scores of the examples to come (the
        primal weights, the cached columns, or the pending set, flushed when large enough). A
        generator: a streamed suffix pass yields ``(b, flush, pending examples)`` (see
        :func:`_train_run`)."""
        L, dtype, bufs, S = self.L, self.dtype, self.bufs, self.S
        if self.form == "dual":
            self.new_last = 0
        if m:
            for k in bufs:
                self.logs[k].append(bufs[k][:m].copy())
            u_ex = bufs["ex"][:m]
            touched, inv = np.unique(u_ex, return_inverse=True)
            delta = np.zeros((touched.size, L), dtype=np.float64)
            np.add.at(delta, (inv, bufs["cls"][:m]), bufs["coef"][:m])
            if self.form == "dual":
                slot_of, Kc = self.slot_of, self.Kc
                cached = slot_of[touched] >= 0
                if cached.any():
                    add_product(S, Kc[slot_of[touched[cached]]], delta[cached].astype(dtype), self.Sbuf)
                self.new_last = int((~cached).sum())
                if not cached.all():
                    self.pend_ex, self.pend_delta = _merge_pending(self.pend_ex, self.pend_delta, touched[~cached],
                                                                   delta[~cached])
                    self.pend_rows = None
                # flush when the batch is large enough for GEMM speed, or when scoring chunks against
                # the pending set has cost about as much as a flush's pass over the data
                pend_ex = self.pend_ex
                flush = bool(pend_ex.size) and (pend_ex.size >= self.flush_at or self.pend_work >= 32 * self.n
                                                or b == self.total)
                if self.suffix:
                    yield b, flush, pend_ex
                if flush:
                    if self.suffix:
                        _flush_suffix(self.cols, pend_ex, self.pend_delta, S, b, dtype, self.Sbuf)
                    else:
                        self.n_slots = _flush_pending(self, pend_ex, self.pend_delta)
                    self.pend_ex, self.pend_delta, self.pend_work, self.pend_rows = (
                        pend_ex[:0], self.pend_delta[:0], 0, None)
            else:
                rows = self.Xf[touched].astype(np.float64)
                if self.normalized:
                    rows *= self.rscale[touched, None]
                self.W += ordered.matmul(np.ascontiguousarray(delta.T), rows)
        elif self.suffix:
            yield b, False, self.pend_ex

    def checkpoint(self, b):
        """Record the correct predictions at the checkpoints that end at step ``b``."""
        cp_steps = self.cp_steps
        while self.cp_ptr < cp_steps.size and cp_steps[self.cp_ptr] == b:
            self.cum_cp[self.cp_ptr] = self.state.cum_correct
            self.cp_ptr += 1

    def log(self, seconds) -> TrainLog:
        """The run's :class:`TrainLog`."""
        bufs, normalized, rule = self.bufs, self.normalized, self.rule
        cat = {k: (np.concatenate(v) if v else np.empty(0, dtype=bufs[k].dtype)) for k, v in self.logs.items()}
        info = {"form": self.form, "dtype": np.dtype(self.dtype).name, "chunks": int(self.bounds.size - 1)}
        if normalized:
            info.update(algorithm="alma", p=2.0, alpha=rule.a_alpha, B=rule.a_B, C=rule.a_C)
        return TrainLog(
            n_train=self.n, n_labels=self.L, total_steps=self.total, order=self.order,
            checkpoint_steps=self.cp_steps, theta_init=float(self.theta_init), upd_step=cat["step"],
            upd_ex=cat["ex"], upd_cls=cat["cls"], upd_coef=cat["coef"], upd_score=cat["score"],
            upd_kxx=self.kdiag[cat["ex"]], upd_theta=cat["theta"], upd_cum_correct=cat["cum"],
            cum_correct_cp=self.cum_cp, seconds=seconds, info=info,
            upd_scale=cat["scale"] if normalized else None, upd_norm=cat["norm"] if normalized else None,
            kernel_normalized=normalized,
        )


def normalizing_factors(kdiag) -> np.ndarray:
    """``1 / sqrt(K(x, x))`` per example (0 where ``K(x, x) = 0``): the factors of the normalized
    kernel ``K^(x, y) = K(x, y) / sqrt(K(x, x) K(y, y))``, i.e. of ``x^ = x / |x|`` in feature space."""
    kdiag = np.asarray(kdiag, dtype=np.float64)
    out = np.zeros_like(kdiag)
    pos = kdiag > 0
    out[pos] = 1.0 / np.sqrt(kdiag[pos])
    return out


@nb.njit(cache=True)
def _scale_block(K, ra, rb):
    """``K[i, j] *= ra[i] * rb[j]`` in place."""
    for i in range(K.shape[0]):
        f = ra[i]
        row = K[i]
        for j in range(K.shape[1]):
            row[j] *= f * rb[j]


def primal_features(kernel: Kernel, X: np.ndarray) -> np.ndarray:
    """Explicit feature map of a kernel with a small one: x for the linear kernel, and
    (1, x / sqrt(s)) / sqrt(c) for (1 + x·y/s) / c, the polynomial kernel of degree 1
    (Freund & Schapire's d = 1), so that Phi(x)·Phi(y) = K(x, y)."""
    if kernel.name == "linear":
        return X
    if kernel.name == "poly" and kernel.degree == 1:
        c = float(kernel.base_div)
        ones = np.full((X.shape[0], 1), 1.0 / np.sqrt(c), dtype=X.dtype)
        return np.ascontiguousarray(np.hstack([ones, X / np.sqrt(kernel.scale * c)]).astype(X.dtype))
    raise EngineError(f"no explicit feature map for {kernel.describe()}")


def _merge_pending(pend_ex, pend_delta, ex, delta):
    """Add coefficient rows for examples ``ex`` to the pending set (rows of the same example add)."""
    all_ex = np.concatenate([pend_ex, ex])
    all_delta = np.concatenate([pend_delta, delta])
    uniq, inv = np.unique(all_ex, return_inverse=True)
    out = np.zeros((uniq.size, all_delta.shape[1]))
    np.add.at(out, inv, all_delta)
    return uniq, out


def chunk_dots(Xe, ints: bool = False):
    """The inner products of a chunk's examples with each other, in float64: added in feature
    order (:func:`~perceptron_lab.engine.ordered.matmul_nt`, as :func:`~perceptron_lab.engine.kernels.dot_rows`
    adds them), or with ``ints`` (features that are integers below 2^24, :func:`~perceptron_lab.engine.kernels.integer_features`)
    by :func:`~perceptron_lab.engine.kernels.matmul_exact32`, a float32 GEMM and float64 for the pairs
    float32 could round: the same values, with float32 arithmetic (twice the values per SIMD
    register)."""
    Xe64 = Xe.astype(np.float64)
    return matmul_exact32(Xe64, Xe64) if ints else ordered.matmul_nt(Xe64, Xe64)


@nb.njit(cache=True)
def _add_into(S, P):
    """``S += P`` (``P`` in the run's dtype, ``S`` float64): numpy's own sum, without its buffered
    cast of ``P``."""
    for i in range(S.shape[0]):
        for c in range(S.shape[1]):
            S[i, c] += P[i, c]


def add_product(S, A, d, buf):
    """``S += A.T @ d``: the product (each entry added over A's rows in order,
    :func:`~perceptron_lab.engine.ordered.matmul_tn`) written into ``buf`` (rows of ``S``'s shape,
    the dtype of ``A``), then added to ``S``: no fresh product array per call, whose first touch of
    new memory would cost about as much as the product."""
    P = buf[:S.shape[0]]
    ordered.matmul_tn(A, d, out=P)
    _add_into(S, P)


def _flush_suffix(cols, pend_ex, pend_delta, S, b, dtype, buf):
    """One pass, streamed: add the pending support vectors' contributions to the scores ``S[b:]``
    of the examples still to come (``S`` in training order), their kernel values from ``cols``
    (:class:`SuffixColumns`). Nothing is cached."""
    if b >= S.shape[0]:
        return
    add_product(S[b:], cols.block(pend_ex, b), pend_delta.astype(dtype), buf)


class SuffixColumns:
    """The kernel values a streamed pass (at most one epoch, integer features: exact float32 GEMMs)
    needs at a flush: the pending support vectors against the examples at positions ``b, b + 1,
    ...`` of the order, the only ones still to come. Holds the features in training order (and a
    float32 copy of them and of all features) once for the run, or for all the runs of
    :func:`train_lockstep`. ``rscale``: the normalizing factors of a normalized kernel, else None."""

    def __init__(self, kernel, Xd, sq, seq, rscale, dtype, Xd32=None):
        self.kernel, self.Xd, self.sq, self.rscale, self.dtype = kernel, Xd, sq, rscale, dtype
        self.Xp = cold_take(Xd, seq)
        self.sqp = sq[seq]
        self.Xp32 = cold_copy(self.Xp, np.float32)
        self.rp = None if rscale is None else rscale[seq]
        self.Xd32 = cold_copy(Xd, np.float32) if Xd32 is None else Xd32

    def compute(self, ex, b):
        """K(x_e, x_{order[q]}) for the examples ``ex`` and positions ``q >= b``, shape (len(ex), total - b)."""
        G = gram(self.kernel, self.Xd[ex], self.Xp[b:], self.sq[ex], self.sqp[b:], exact32=True, B32=self.Xp32[b:])
        if self.rscale is not None:
            _scale_block(G, self.rscale[ex].astype(self.dtype), self.rp[b:].astype(self.dtype))
        return G

    def block(self, ex, b):
        return self.compute(ex, b)


class SharedSuffixColumns(SuffixColumns):
    """:class:`SuffixColumns` shared by runs that take the same single pass over the same examples
    in lockstep (:func:`train_lockstep`). Before the runs flush at the end of a chunk,
    :meth:`prepare` computes in one block the columns of the pending examples of the runs flushing
    there that no run has had yet; a row that a run not flushing there also holds pending is kept
    until every run holding it has flushed it (each flushes it later, from a later position: a
    slice of the kept row). A run's block has the same rows in the same order, each with the same
    values as if computed alone (a kernel value depends on its two examples only; the float32
    GEMM of integer features is exact), so its scores and log are those of its run alone."""

    def __init__(self, kernel, Xd, sq, seq, dtype):
        super().__init__(kernel, Xd, sq, seq, None, dtype)
        self.kept: dict = {}          # example -> (position its row starts at, row)
        self.rows: dict = {}          # example -> row of the current block
        self.cur = None               # the current block (positions b, b + 1, ...)
        self.b = -1
        self.computed = 0             # rows computed (each example's once at most)
        self._dots = (-1, None)       # (chunk start, its inner products)

    def chunk_dots(self, a, Xe):
        """:func:`chunk_dots` of the chunk starting at step ``a``, computed once for the runs (they
        are the same examples; the GEMM of integer features is exact, so the same values)."""
        if self._dots[0] != a:
            self._dots = (a, chunk_dots(Xe, ints=True))
        return self._dots[1]

    def prepare(self, b, flushing, holding):
        """Before the flushes at ``b``: ``flushing`` the pending examples of the runs that flush
        there, ``holding`` those of the others (each an array of example indices)."""
        self.cur, self.rows, self.b = None, {}, b
        live = set()
        for ex in list(flushing) + list(holding):
            live.update(ex.tolist())
        self.kept = {e: v for e, v in self.kept.items() if e in live}
        need = np.unique(np.concatenate([np.asarray(e, dtype=np.int64) for e in flushing] or [np.empty(0, np.int64)]))
        need = np.array([e for e in need.tolist() if e not in self.kept], dtype=np.int64)
        if not need.size or b >= self.Xp.shape[0]:
            return
        self.cur = self.compute(need, b)
        self.computed += int(need.size)
        self.rows = {e: k for k, e in enumerate(need.tolist())}
        later = set()
        for ex in holding:
            later.update(ex.tolist())
        for e in later.intersection(self.rows):
            self.kept[e] = (b, self.cur[self.rows[e]].copy())

    def block(self, ex, b):
        if b != self.b:
            raise EngineError(f"a run flushed at {b}, but the shared columns were prepared for {self.b}")
        idx = [self.rows.get(e, -1) for e in ex.tolist()]
        if self.cur is not None and all(k >= 0 for k in idx):
            if idx == list(range(idx[0], idx[0] + len(idx))):
                return self.cur[idx[0]:idx[0] + len(idx)]
            return self.cur[idx]
        G = np.empty((len(idx), self.Xp.shape[0] - b), dtype=self.dtype)
        for k, (e, r) in enumerate(zip(ex.tolist(), idx)):
            if r >= 0:
                G[k] = self.cur[r]
            else:
                start, row = self.kept[e]
                G[k] = row[b - start:]
        return G


def train_lockstep(X, Y, kernel: Kernel, params_list, order, epochs: float, checkpoints, chunk_size: int = 512,
                   dtype=np.float64, progress=None, flush_at: int = 256, form: str = "auto",
                   cache_limit_gb: float = 8.0) -> list:
    """:func:`train` of each parameter set of ``params_list`` (:class:`PerceptronParams`) on the same
    examples, order and checkpoints: the same logs, in the same order.

    Runs of at most one pass in dual form on integer features in float64 (streamed, see
    :func:`train`) go in lockstep, a chunk at a time, and compute each support vector's kernel
    values once for them all (:class:`SharedSuffixColumns`): on Khardon & Wachman's MNIST rows
    with the degree-4 kernel, the 7 values of tau of a fold have about 120,000 support examples
    in all but 29,000 distinct ones. Other runs train one after another. Each log's ``seconds``
    is an equal share of the time of them all."""
    t0 = time.perf_counter()
    params_list = list(params_list)
    n = Y.shape[0]
    Xd = np.ascontiguousarray(X, dtype=dtype)
    order = np.ascontiguousarray(order, dtype=np.int64)
    total = epochs_to_steps(epochs, n)
    primal = kernel.name == "linear" or (kernel.name == "poly" and kernel.degree == 1)
    together = (len(params_list) > 1 and not primal and form in ("auto", "dual") and kernel.name != "precomputed"
                and 0 < total <= n and np.dtype(dtype) == np.float64
                and all(isinstance(p, PerceptronParams) for p in params_list) and exact32_ok(Xd))
    if not together:
        return [train(Xd, Y, kernel, p, order, epochs, checkpoints, chunk_size=chunk_size, dtype=dtype, form=form,
                      cache_limit_gb=cache_limit_gb, progress=progress, flush_at=flush_at) for p in params_list]
    cols = SharedSuffixColumns(kernel, Xd, sq_norms(Xd), order[:total], dtype)
    opts = RunOptions(chunk_size=chunk_size, dtype=dtype, form="dual", cache_limit_gb=cache_limit_gb,
                      progress=progress, flush_at=flush_at, primal_loop=True, stream=True, share=False)
    runs = [_train_run(Xd, Y, kernel, p, order, epochs, checkpoints, opts, suffix_columns=cols) for p in params_list]
    logs = [None] * len(runs)
    live = list(range(len(runs)))
    while live:
        states = {}
        for r in live:
            try:
                states[r] = next(runs[r])
            except StopIteration as done:
                logs[r] = done.value
        live = [r for r in live if logs[r] is None]
        if states:
            bs = {st[0] for st in states.values()}
            if len(bs) != 1 or len(states) != len(live):
                raise EngineError("runs in lockstep left step with each other")
            cols.prepare(bs.pop(), [st[2] for st in states.values() if st[1]],
                         [st[2] for st in states.values() if not st[1]])
    share = (time.perf_counter() - t0) / len(logs)
    for log in logs:
        log.seconds = share
        log.info["lockstep"] = len(logs)
    return logs


def _flush_pending(run, pend_ex, pend_delta):
    """Compute the pending support vectors' kernel columns in one GEMM, cache them, update the
    scores of ``run`` (a :class:`_ChunkRun`); returns the number of cache slots in use.
    With a normalized kernel the cached columns are those of ``rscale_i rscale_j K``; with
    ``run.Xd32`` (a float32 copy of integer features) by exact float32 GEMMs; with ``run.stream``
    the columns update the scores and are dropped (nothing is cached); with ``run.store`` (whose
    array is ``run.Kc``) the columns already in the process's column store are taken from it.
    The products go through the run's buffer ``run.Sbuf`` (:func:`add_product`)."""
    kernel, Xd, sq, S, dtype, Xd32 = run.kernel, run.Xd, run.sq, run.S, run.dtype, run.Xd32
    rscale = run.rscale if run.normalized else None
    n = Xd.shape[0]
    if run.store is not None:
        return _flush_shared(run, pend_ex, pend_delta)
    if run.stream:
        G = gram(kernel, Xd[pend_ex], Xd, sq[pend_ex], sq, exact32=Xd32 is not None, B32=Xd32, BT=run.XdT)
        if rscale is not None:
            r = rscale.astype(dtype)
            _scale_block(G, r[pend_ex], r)
        add_product(S, G, pend_delta.astype(dtype), run.Sbuf)
        return run.n_slots
    a0, a1 = run.n_slots, run.n_slots + pend_ex.size
    if a1 > run.cap:
        raise _cache_full(run.opts.cache_limit_gb, a1, n, dtype)
    run.slot_of[pend_ex] = np.arange(a0, a1)
    _columns(kernel, Xd, sq, pend_ex, run.Kc[a0:a1], dtype, rscale, Xd32, run.XdT)
    add_product(S, run.Kc[a0:a1], pend_delta.astype(dtype), run.Sbuf)
    return a1


def _cache_full(cache_limit_gb, n_sv, n, dtype) -> EngineError:
    need = n_sv * n * np.dtype(dtype).itemsize / 1e9
    return EngineError(
        f"the kernel cache needs more than training.cache_limit_gb = {cache_limit_gb:g} GB "
        f"(>= {need:.1f} GB for {n_sv} support vectors of {n} examples); raise "
        "training.cache_limit_gb, train on fewer examples, or use the linear kernel (primal form)")


def _columns(kernel, Xd, sq, ex, out, dtype, rscale, Xd32, XdT=None):
    """Kernel columns of examples ``ex`` against all of ``Xd`` into ``out`` (normalized with ``rscale``;
    ``XdT``: Xd transposed, when the run keeps it)."""
    gram(kernel, Xd[ex], Xd, sq[ex], sq, out=out, exact32=Xd32 is not None, B32=Xd32, BT=XdT)
    if rscale is not None:
        r = rscale.astype(dtype)
        _scale_block(out, r[ex], r)


def _flush_shared(run, pend_ex, pend_delta):
    """:func:`_flush_pending` with the column store: the pending examples' columns found in the
    store are used as they are, the others computed (in one GEMM) and added to it. The scores get
    the same product as from a cache of the run's own: the same rows, in the same order."""
    kernel, Xd, sq, store, S, slot_of = run.kernel, run.Xd, run.sq, run.store, run.S, run.slot_of
    dtype, Xd32, n_slots = run.dtype, run.Xd32, run.n_slots
    rscale = run.rscale if run.normalized else None
    n = Xd.shape[0]
    rows = store.row_of[pend_ex]
    if not columns.enabled():
        rows = np.full(pend_ex.size, -1, dtype=np.int64)   # sharing was turned off: compute them all
    elif (rows >= 0).any() and not store.checked:
        # once per run, before it uses a column it did not compute: the same values computed alone?
        j = int(np.flatnonzero(rows >= 0)[0])
        alone = np.empty((1, n), dtype=dtype)
        _columns(kernel, Xd, sq, pend_ex[j:j + 1], alone, dtype, rscale, Xd32, run.XdT)
        store.checked = True
        if not np.array_equal(alone[0], store.K[rows[j]], equal_nan=True):
            columns.set_enabled(False)
            rows = np.full(pend_ex.size, -1, dtype=np.int64)
    slot_of[pend_ex] = rows     # the columns taken from the store are the run's own from now on
    new = np.flatnonzero(rows < 0)
    if new.size:
        if not store.make_room(new.size, slot_of):
            raise _cache_full(run.opts.cache_limit_gb, n_slots + pend_ex.size, n, dtype)
        rows = slot_of[pend_ex]    # renumbered if the store made room
        a0, a1 = store.used, store.used + new.size
        _columns(kernel, Xd, sq, pend_ex[new], store.K[a0:a1], dtype, rscale, Xd32, run.XdT)
        rows[new] = np.arange(a0, a1)
        slot_of[pend_ex[new]] = rows[new]
        if columns.enabled():
            store.row_of[pend_ex[new]] = rows[new]
        store.used = a1
    # the rows in the pending order: a view when they are consecutive (none came from the store),
    # else a copy -- the same matrix either way
    a = int(rows[0])
    block = store.K[a:a + rows.size] if np.array_equal(rows, np.arange(a, a + rows.size)) else store.K[rows]
    add_product(S, block, pend_delta.astype(dtype), run.Sbuf)
    return n_slots + pend_ex.size


def label_matrix(y: np.ndarray, n_classes: int) -> np.ndarray:
    """+1/-1 label columns: one column for a binary problem (class 1 positive), else one per class."""
    y = np.asarray(y)
    if n_classes == 2:
        return np.where(y == 1, 1, -1).astype(np.int8)[:, None]
    return np.where(y[:, None] == np.arange(n_classes)[None, :], 1, -1).astype(np.int8)


def resolve_params(settings, kdiag_train: np.ndarray, value_factor=1.0) -> PerceptronParams:
    """Turn the perceptron's settings as written (a
    :class:`~perceptron_lab.engine.families.PerceptronSettings`) into absolute engine parameters.

    ``value_factor``: the factor between the engine's kernel and the kernel as configured, or a
    function taking a number to the engine's kernel units (:meth:`~perceptron_lab.engine.kernels.Kernel.to_values`,
    exact where the factor itself is beyond float64); thresholds given as numbers are converted.

    ``theta_init: avg_sq_norm`` and the unit of ``tau`` are the average K(x, x) over the training
    examples (Khardon & Wachman §3.2: theta_Init = avg <x_i, x_i>, C = theta_Init).
    """
    avg = ordered.mean(kdiag_train)   # the same in any order of the examples
    theta_init = avg if settings.theta_init == "avg_sq_norm" else _in_kernel_units(settings.theta_init, value_factor, "theta_init")
    C = theta_init if settings.C == "theta_init" else _in_kernel_units(settings.C, value_factor, "C")
    ab = settings.alpha_bound
    alpha_bound = UNBOUNDED if ab is None or (isinstance(ab, float) and math.isinf(ab)) else int(ab)
    return PerceptronParams(eta=float(settings.eta), theta_init=theta_init, C=C,
                            tau_abs=float(settings.tau) * avg, lam=float(settings.lambda_),
                            alpha_bound=alpha_bound, lam_diagonal=settings.lambda_term == "diagonal")


def _in_kernel_units(value, value_factor, key: str) -> float:
    """``algorithm.<key>`` (a number, in the units of the kernel as configured) in the units of the
    kernel the engine runs (see :func:`resolve_params`). A value that does not fit a float64 there
    stops with a :class:`~perceptron_lab.errors.NumericError`."""
    v = float(value)
    if v == 0.0 or (not callable(value_factor) and value_factor == 1.0):
        return v
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        out = value_factor(v) if callable(value_factor) else v * value_factor
    if not math.isfinite(out) or abs(out) < np.finfo(np.float64).tiny:
        raise NumericError(
            f"algorithm.{key} = {v:g} is out of range against the kernel values, which lie far outside float64's "
            f"range on these features (they were rescaled by a power of two to keep them in range, and {key} would "
            "be with them). Fix: set algorithm.theta_init: avg_sq_norm and algorithm.C: theta_init (in units of the "
            "average K(x, x)), or set dataset.preprocess: unit_norm")
    return out
