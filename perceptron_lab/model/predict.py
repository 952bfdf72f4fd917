"""Prediction rules computed from a training log, for every checkpoint in one pass.

Freund & Schapire (1999, §5) define, for label l with weighted prediction vectors
(v_1, c_1) ... (v_k, c_k) (v_1 = 0), the scores

* ``last``          s = v_k · x                       ``last_norm``   s = v_k · x / |v_k|
* ``avg``           s = sum_i c_i v_i · x               ``avg_norm``    s = sum_i c_i v_i · x / |v_i|
* ``vote``          s = sum_i c_i sign(v_i · x)
* ``random``        s = v_r · x for the vector alive at a time slice r drawn uniformly from {0..t},
                    one r per test example shared by all labels;  ``random_norm`` likewise / |v_r|
* ``longest``       Khardon & Wachman (2007, Fig. 2): the hypothesis with the most correct
                    predictions during training (the first one to reach that count).

With a threshold (Khardon & Wachman) every ``v_i · x`` above reads ``v_i · x - theta_i``.
The weights c_i are either Freund & Schapire's counts (Figure 1: a vector created by an update starts
at c = 1 and gains 1 per correct prediction; the initial zero vector starts at 0) or Khardon &
Wachman's votes (correct predictions only). The random rule's time slice counts training steps.
Norms are taken in the kernel's feature space, from the recursion
``|v + a x|^2 = |v|^2 + 2 a v(x) + a^2 K(x, x)``.

ALMA (Gentile 2001, §4) uses "last", "avg" = (sum_k c_k w_k) · x and "voted" with the same survival
weights c_k; its hypotheses are w_k = s_k u_k (a per-hypothesis scale s_k recorded in the log, see
:class:`~perceptron_lab.engine.perceptron.TrainLog`) on the normalized kernel, or explicit weight
vectors in primal form. Every rule above is computed from the hypotheses' scores, so they apply
unchanged.

Multiclass prediction is the argmax over labels (the first label on ties); a binary prediction is
positive when the score is > 0 (a zero score counts as the negative class).

Scores use one kernel value per test point and support vector, and prefix sums along the update
sequence (§4): the cost is one pass over the updates per test point and label, for all
checkpoints and rules together (:mod:`perceptron_lab.model.scoring`, a run of test points at a time).
"""

from __future__ import annotations

import time
from collections import namedtuple

import numba as nb
import numpy as np

from perceptron_lab.model.counts import counts_at_checkpoints, few_keys  # noqa: F401  (counts_at_checkpoints re-exported: it lived here)
from perceptron_lab.engine import ordered
from perceptron_lab.engine.ordered import dot as fixed_dot
from perceptron_lab.engine.perceptron import TrainLog, normalizing_factors
from perceptron_lab.model.hypotheses import VOTE_WEIGHTS, Hypotheses  # noqa: F401  (re-exported)
from perceptron_lab.engine.kernels import (LINEAR, POLY, Kernel, as_csr, exact32_heavy_rows, exact32_ok, gram, kernel_diag,
                                          sq_norms, sq_norms64)
from perceptron_lab.model.numerics import block_magnitude, check_finite_training, check_test_block, overflow_error
from perceptron_lab.model.scoring import (Checkpoints, HypothesisArrays, ScanOptions, ScanOutputs, points_per_task,
                      random_by_history, random_indices, score_block_t)
from perceptron_lab.sparse import issparse

RULES = ("last", "last_norm", "avg", "avg_norm", "vote", "random", "random_norm", "longest")
RULE_INDEX = {r: i for i, r in enumerate(RULES)}

#: Bytes of kernel values in one block of test points (support examples x points). The scan reads
#: the block's rows in the order of the updates, which is the training order and so at random; the
#: narrower the block, the fewer bytes between its rows, until blocks too narrow shorten the scan's
#: vector loops (the block widths measured: benchmarks/NOTES.md).
BLOCK_BYTES = 16 << 20
#: Test points per block and thread, at least: one task of the scan
#: (:data:`~perceptron_lab.model.scoring.POINTS_PER_TASK`).
MIN_BLOCK_POINTS = 128
#: Test points per block, at most.
MAX_BLOCK_POINTS = 2048


def block_points(n_rows: int, itemsize: int, threads: int | None = None) -> int:
    """Test points per kernel block for a block of ``n_rows`` support examples (or explicit
    hypotheses) of ``itemsize`` bytes: within :data:`BLOCK_BYTES`, at least
    :data:`MIN_BLOCK_POINTS` per thread, at most :data:`MAX_BLOCK_POINTS`. A point's scores do not
    depend on the block it is in."""
    threads = nb.get_num_threads() if threads is None else threads
    fit = BLOCK_BYTES // max(1, n_rows * itemsize)
    return int(max(MIN_BLOCK_POINTS * threads, min(MAX_BLOCK_POINTS, fit)))


def random_slices(seed_seq, n_test: int, cp_steps) -> np.ndarray:
    """One uniform time slice r in {0..T} per (checkpoint, test example).

    The draws at a checkpoint of T steps come from their own generator, keyed by the seed and T
    alone, so a rule's result at a checkpoint does not depend on which other checkpoints (for
    example ``training.curve_every``) a run asks for.
    """
    base = seed_seq if isinstance(seed_seq, np.random.SeedSequence) else np.random.SeedSequence(seed_seq)
    out = np.empty((len(cp_steps), n_test), dtype=np.int64)
    for i, T in enumerate(cp_steps):
        child = np.random.SeedSequence(base.entropy, spawn_key=tuple(base.spawn_key) + (int(T),))
        out[i] = np.random.default_rng(child).integers(0, int(T) + 1, size=n_test)
    return out


def _hypotheses(log: TrainLog, kernel: Kernel, X_train, dtype, vote_weight: str, cp_index):
    """(hypotheses, and at the checkpoints ``cp_index`` the live one, its partial weight and the
    longest survivor) of a log whose training sums are checked finite first."""
    check_finite_training(log, None, kernel, X_train, dtype)
    hyp = Hypotheses(log, vote_weight)
    check_finite_training(log, hyp, kernel, X_train, dtype)
    return (hyp,) + tuple(hyp.at_checkpoints(cp_index))


def evaluate(log: TrainLog, kernel: Kernel, X_train, X_test, y_test, binary: bool,
             cp_index=None, vote_weight: str = "survival", seed=0, dtype=np.float64,
             block: int | None = None, rules=None):
    """Error counts of every rule at the given checkpoints on a test set.

    Returns ``(errors_multi, errors_bin)``: arrays of shape (n_cp, n_rules) and
    (n_cp, n_rules, n_labels) counting wrong predictions; rule order is :data:`RULES`.

    ``rules`` (default: all) names the rules needed. For explicit hypotheses (``log.hyp_w``), or
    kernel expansions with a kernel of the form ``k0 + k1 x.y`` (linear, polynomial of degree 1:
    primal perceptron runs, ALMA_2 with the linear kernel), and rules that are linear in the
    hypotheses or pick one of them (all but ``vote`` and the random rules), each rule's classifier
    is formed first and the test set scored against it alone, instead of against every
    hypothesis. The normalized, random and averaged rules are computed only when asked for; rules
    not computed are reported as -1. ``block``: test points per kernel block (default :func:`block_points`).
    """
    if cp_index is None:
        cp_index = np.arange(log.checkpoint_steps.size)
    cp_index = np.asarray(cp_index, dtype=np.int64)
    if rules is not None:
        unknown = set(rules) - set(RULES)
        if unknown:
            raise ValueError(f"unknown rules {sorted(unknown)}; expected some of {RULES}")
    hyp, live, partial, longest = _hypotheses(log, kernel, X_train, dtype, vote_weight, cp_index)
    Xte = _rows(X_test, dtype)
    direct = log.hyp_w is not None
    if direct and rules is not None and not set(rules) & set(_PER_HYPOTHESIS_RULES):
        return _evaluate_combined(log, hyp, live, partial, longest, Xte, np.asarray(y_test, dtype=np.int64),
                                  binary, dtype)
    if (not direct and rules is not None and not set(rules) & set(_PER_HYPOTHESIS_RULES)
            and _has_affine_form(kernel)):
        return _evaluate_combined_expansion(log, kernel, hyp, live, partial, longest, _rows(X_train, dtype), Xte,
                                            np.asarray(y_test, dtype=np.int64), binary, rules)
    # the general scan reads the support examples' rows of X_train alone: they are taken, then cast
    return _evaluate_general(log, kernel, hyp, live, partial, longest, X_train, Xte, y_test, binary, cp_index, seed,
                             dtype, block, rules=rules)


def _evaluate_general(log, kernel, hyp, live, partial, longest, Xtr, Xte, y_test, binary, cp_index, seed,
                      dtype, block, out_scores=None, rules=None):
    """:func:`evaluate` scoring every hypothesis of every label on each test point (``rules``,
    default all: the normalized scores are computed only when a normalized rule is asked for);
    with ``out_scores`` (n_cp, n_rules, n_test, n_labels), the scores are written there too."""
    direct = log.hyp_w is not None
    given = kernel.name == "precomputed"  # Xte holds K(test, train), Xtr the training Gram matrix
    if direct:
        # explicit hypotheses: one column per update (the hypothesis it created), scored as w . x
        Wh = np.ascontiguousarray(log.hyp_w, dtype=dtype)
        ucol = hyp.uidx.astype(np.int64)
    else:
        sv, ucol = distinct(hyp.uex)
    if block is None:
        block = block_points(Wh.shape[0] if direct else sv.size, np.dtype(dtype).itemsize)
    scan = _Scan(log, hyp, live, partial, longest, y_test, binary, cp_index, seed, rules, kernel, dtype,
                 out_scores=out_scores, block=block)
    nt = Xte.shape[0]
    if direct or given:
        for a in range(0, nt, block):
            b = min(nt, a + block)
            idx = slice(a, b)
            if direct:
                KtT = ordered.matmul_nt(Wh, Xte[idx]) if Wh.shape[0] else np.zeros((1, b - a), dtype=dtype)
            elif sv.size:
                KtT = np.ascontiguousarray(Xte[idx][:, sv].T)
            else:
                KtT = np.zeros((1, b - a), dtype=dtype)
            scan.add(KtT, ucol, idx)
    else:
        Xsv = _rows(Xtr[sv], dtype) if issparse(Xtr) else np.ascontiguousarray(np.asarray(Xtr)[sv], dtype=dtype)
        for idx, KtT in kernel_blocks(kernel, Xsv, Xte, dtype, block, log.kernel_normalized):
            scan.add(KtT, ucol, idx)
    return scan.errors()


def _rows(X, dtype):
    """Feature rows in ``dtype``: a sparse matrix as CSR (its kernel blocks are computed from the
    stored values, :func:`~perceptron_lab.engine.kernels.gram`), anything else as a C-contiguous array."""
    return as_csr(X, dtype) if issparse(X) else np.ascontiguousarray(X, dtype=dtype)


def distinct(ex):
    """``np.unique(ex, return_inverse=True)`` for non-negative integers ``ex`` (example indices),
    the inverse as int64: the distinct values in increasing order and each value's position among
    them. When the values are few next to their count (a small training set visited many times),
    a table of the values present replaces the sort (runs of many small units spent more time
    sorting than scoring)."""
    ex = np.asarray(ex)
    if ex.size and ex.ndim == 1 and np.issubdtype(ex.dtype, np.integer):
        lo, top = int(ex.min()), int(ex.max()) + 1
        if lo >= 0 and few_keys(top, ex.size):
            present = np.zeros(top, dtype=bool)
            present[ex] = True
            pos = np.cumsum(present, dtype=np.int64) - 1
            return np.flatnonzero(present).astype(ex.dtype), pos[ex]
    sv, inv = np.unique(ex, return_inverse=True)
    return sv, inv.reshape(-1).astype(np.int64)


def kernel_blocks(kernel: Kernel, Xsv, Xte, dtype, block: int, normalized: bool = False):
    """Yield ``(test rows, KtT)``: the kernel block transposed (support examples ``Xsv`` x test
    points ``Xte[rows]``, see :mod:`perceptron_lab.model.scoring`), a run of at most ``block`` test
    points at a time, every test point once.

    On integer features (raw MNIST pixels) the kernel values come from float32 GEMMs, equal to the
    inner products added in order (:func:`~perceptron_lab.engine.kernels.exact32_ok`). With the linear kernel, the test
    points whose every inner product with a support vector is exact in float32 are scored straight
    from a float32 block (the same integers as in float64, with no conversion pass); the few
    others from a block added in order in ``dtype``. The values of one (support example, test point) pair do not
    depend on the other rows in the block then: :func:`evaluate_shared` relies on it. On other
    dense features, :func:`~perceptron_lab.engine.kernels.gram` adds the inner products in feature
    order (:func:`~perceptron_lab.engine.kernels.ordered_dots`), for the same reason.
    """
    nt = Xte.shape[0]
    if not Xsv.shape[0]:
        for a in range(0, nt, block):
            b = min(nt, a + block)
            yield slice(a, b), np.zeros((1, b - a), dtype=dtype)
        return
    exact = exact32_ok(Xsv) and exact32_ok(Xte)
    if exact:
        sv32, sq_sv, sq_te = Xsv.astype(np.float32), sq_norms(Xsv), sq_norms(Xte)
        te32 = Xte.astype(np.float32)
    if normalized:
        r_sv = normalizing_factors(kernel_diag(kernel, Xsv)).astype(dtype)
    light32 = exact and kernel.code == LINEAR and not normalized
    if light32:
        heavy = exact32_heavy_rows(sq_norms64(Xte), sq_norms64(Xsv))   # float64 norms: float32 ones round
        segments = [(np.flatnonzero(~heavy), True), (np.flatnonzero(heavy), False)]
    else:
        segments = [(None, False)]
    for rows, use32 in segments:
        n_seg = nt if rows is None else rows.size
        for a in range(0, n_seg, block):
            b = min(n_seg, a + block)
            idx = slice(a, b) if rows is None else rows[a:b]
            if use32:
                KtT = sv32 @ te32[idx].T
            elif light32:
                KtT = ordered.matmul_nt(Xsv, Xte[idx])
            else:
                KtT = (gram(kernel, Xsv, Xte[idx], sq_sv, sq_te[idx], exact32=True, B32=te32[idx]) if exact
                       else gram(kernel, Xsv, Xte[idx]))
                if normalized:
                    r_te = normalizing_factors(kernel_diag(kernel, Xte[idx])).astype(dtype)
                    KtT *= r_sv[:, None]
                    KtT *= r_te[None, :]
            yield idx, KtT


class _Scan:
    """One log's evaluation by :func:`~perceptron_lab.model.scoring.score_block_t`, fed kernel blocks of
    test points in any order (:meth:`add`); :meth:`errors` gives the error counts summed over them."""

    def __init__(self, log, hyp, live, partial, longest, y_test, binary, cp_index, seed, rules, kernel, dtype,
                 out_scores=None, block=None):
        L = log.n_labels
        self.log, self.hyp, self.kernel, self.dtype = log, hyp, kernel, dtype
        self.live, self.partial, self.longest = live, partial, longest
        self.y_test = np.asarray(y_test, dtype=np.int64)
        self.binary = binary
        self.direct = log.hyp_w is not None
        self.need_norm = rules is None or bool(set(rules) & set(_NORM_RULES))
        self.need_random = rules is None or bool(set(rules) & set(_RANDOM_RULES))
        self.need_avg = rules is None or bool(set(rules) & set(_AVG_RULES))
        # the random rules' hypothesis of each (checkpoint, label, test point), found once
        self.rindex = _NO_RINDEX
        if self.need_random:
            rs = random_slices(seed, self.y_test.size, log.checkpoint_steps[cp_index])
            self.rindex = random_indices(hyp.step, hyp.hoff, np.ascontiguousarray(live, dtype=np.int64), rs)
        maxh = int(np.diff(hyp.hoff).max()) if L else 0
        self.by_history = random_by_history(cp_index.size, L, maxh)
        self.points = points_per_task(cp_index.size, L, maxh)
        if block is not None:  # every thread gets a task of the block
            self.points = max(16, min(self.points, block // nb.get_num_threads()))
        self.ncp = cp_index.size
        self.out_scores = out_scores
        self.err_m = np.zeros((cp_index.size, len(RULES)), dtype=np.int64)
        self.err_b = np.zeros((cp_index.size, len(RULES), L), dtype=np.int64)

    def add(self, KtT, ucol, idx, kt=None) -> None:
        """Score the test points ``idx`` from ``KtT`` (support examples x those points), whose row
        ``ucol[u]`` holds update u's example; ``kt``: the block's magnitude, when known."""
        hyp, L = self.hyp, self.log.n_labels
        check_test_block(KtT, hyp, self.log, self.kernel, self.dtype, kt)
        m = KtT.shape[1]
        n_tasks = -(-m // self.points)
        om = np.zeros((n_tasks, self.ncp, len(RULES)), dtype=np.int64)
        ob = np.zeros((n_tasks, self.ncp, len(RULES), L), dtype=np.int64)
        out = self.out_scores
        sc = _NO_SCORES if out is None else np.zeros(out.shape[:2] + (m, L))
        rindex = np.ascontiguousarray(self.rindex[:, :, idx]) if self.need_random else _NO_RINDEX
        score_block_t(np.ascontiguousarray(KtT), self.y_test[idx],
                      HypothesisArrays(ucol=ucol, coef=hyp.coef, uoff=hyp.uoff, hoff=hyp.hoff, theta=hyp.theta,
                                       scale=hyp.scale, norm=hyp.norm, wfull=hyp.wfull),
                      Checkpoints(self.live, self.partial, self.longest, rindex),
                      ScanOptions(self.binary, self.direct, self.need_norm, self.need_random, out is not None,
                                  self.points, self.by_history, self.need_avg),
                      ScanOutputs(om, ob, sc))
        if out is not None:
            out[:, :, idx] = sc
        self.err_m += m - om.sum(axis=0)
        self.err_b += m - ob.sum(axis=0)

    def errors(self):
        err_m, err_b = self.err_m, self.err_b
        skipped = ((() if self.need_norm else _NORM_RULES) + (() if self.need_random else _RANDOM_RULES)
                   + (() if self.need_avg else _AVG_RULES))
        if skipped:  # not computed
            cols = sorted({RULE_INDEX[r] for r in skipped})
            err_m[:, cols] = -1
            err_b[:, cols] = -1
        return err_m, err_b


def evaluate_shared(items, kernel: Kernel, X_train, X_test, y_test, binary: bool, dtype=np.float64,
                    block: int | None = None):
    """:func:`evaluate` for several training logs on the same training and test data and kernel
    (e.g. the grid points of one cross-validation fold): ``items`` are ``(log, vote_weight, seed,
    rules)``. Returns ``[(errors_multi, errors_bin, seconds)]`` in the order of ``items``.

    Where every log scores every hypothesis (a rule of :data:`_PER_HYPOTHESIS_RULES` asked for, a
    kernel expansion) with a linear or polynomial kernel on dense features, the test points' kernel
    values are computed once against the union of the logs' support examples, and each log's scan reads
    its rows of that block. On integer features the values are exact integers either way
    (:func:`kernel_blocks`); on other features the block's inner products are added in feature
    order (:func:`~perceptron_lab.engine.kernels.ordered_dots`), so that each value is the same
    whatever the union: the errors equal :func:`evaluate`'s for each log alone. The others are
    evaluated one by one.
    A shared block's seconds are divided among its logs in proportion to their support examples.
    ``block``: test points per kernel block (default :func:`block_points` of the union).
    """
    Xtr = _rows(X_train, dtype)
    Xte = _rows(X_test, dtype)
    y_test = np.asarray(y_test, dtype=np.int64)
    out: list = [None] * len(items)
    shared = []
    for i, (log, vote_weight, seed, rules) in enumerate(items):
        if (log.hyp_w is None and not issparse(Xtr) and not log.kernel_normalized and kernel.code in (LINEAR, POLY)
                and (rules is None or set(rules) & set(_PER_HYPOTHESIS_RULES))):
            shared.append(i)
    prepared, svs = {}, {}
    if len(shared) > 1:
        for i in shared:
            log, vote_weight = items[i][:2]
            t0 = time.perf_counter()
            cp_index = np.arange(log.checkpoint_steps.size, dtype=np.int64)
            hyps = _hypotheses(log, kernel, Xtr, dtype, vote_weight, cp_index)
            prepared[i] = ((cp_index,) + hyps, time.perf_counter() - t0)
            svs[i] = np.unique(prepared[i][0][1].uex)
        union = _visit_order(np.unique(np.concatenate(list(svs.values()))),
                             [prepared[i][0][1] for i in shared], Xtr.shape[0])
    else:
        shared = []
    for i, (log, vote_weight, seed, rules) in enumerate(items):
        if i not in shared:
            t0 = time.perf_counter()
            err_m, err_b = evaluate(log, kernel, Xtr, Xte, y_test, binary, vote_weight=vote_weight, seed=seed,
                                    dtype=dtype, block=block, rules=rules)
            out[i] = (err_m, err_b, time.perf_counter() - t0)
    if not shared:
        return out
    scans, ucols, seconds = {}, {}, {}
    shared_block = block_points(union.size, np.dtype(dtype).itemsize) if block is None else block
    where = np.empty(Xtr.shape[0], dtype=np.int64)   # each example's row in the shared block
    where[union] = np.arange(union.size)
    for i in shared:
        log, vote_weight, seed, rules = items[i]
        (cp_index, hyp, live, partial, longest), seconds[i] = prepared[i]
        scans[i] = _Scan(log, hyp, live, partial, longest, y_test, binary, cp_index, seed, rules, kernel, dtype,
                         block=shared_block)
        # each update's row in the shared block
        ucols[i] = where[hyp.uex]
    kernel_s = 0.0
    blocks = kernel_blocks(kernel, Xtr[union], Xte, dtype, shared_block)
    while True:
        t0 = time.perf_counter()
        nxt = next(blocks, None)
        if nxt is None:
            kernel_s += time.perf_counter() - t0
            break
        idx, KtT = nxt
        KtT = np.ascontiguousarray(KtT)
        kt = block_magnitude(KtT)  # once for every log
        kernel_s += time.perf_counter() - t0
        for i in shared:
            t0 = time.perf_counter()
            scans[i].add(KtT, ucols[i], idx, kt)
            seconds[i] += time.perf_counter() - t0
    total_sv = sum(svs[i].size for i in shared)
    for i in shared:
        err_m, err_b = scans[i].errors()
        out[i] = (err_m, err_b, seconds[i] + kernel_s * svs[i].size / max(1, total_sv))
    return out


def _visit_order(union, hyps, n: int) -> np.ndarray:
    """The examples ``union`` in the order a training epoch visits them (the update at step t is
    example ``order[t % n]``; the units of a fold share one order): the scan then reads the shared
    block's rows in increasing addresses within an epoch rather than at random. A row's values do
    not depend on its place in the block (:func:`evaluate_shared`), so neither does any score."""
    key = np.zeros(n, dtype=np.int64)
    for hyp in hyps:
        key[hyp.uex] = hyp.ustep % n
    return union[np.argsort(key[union], kind="stable")]


#: Rules that divide each hypothesis' score by its feature-space norm.
_NORM_RULES = ("last_norm", "avg_norm", "random_norm")
#: Rules that score a hypothesis drawn per test point.
_RANDOM_RULES = ("random", "random_norm")
#: Rules that read the running sum of the hypotheses' scores (the averaged perceptron).
_AVG_RULES = ("avg", "avg_norm")


_NO_SCORES = np.zeros((1, 1, 1, 1))
_NO_RINDEX = np.zeros((1, 1, 1), dtype=np.int32)


def decision_scores(log: TrainLog, kernel: Kernel, X_train, X_test, cp_index=None, vote_weight: str = "survival",
                    seed=0, dtype=np.float64, block: int | None = None):
    """Every rule's score per label at the given checkpoints (default: all), from the same jitted
    scoring as :func:`evaluate` (whose predictions are the argmax of these scores, the first label
    on ties, or for one label ``score > 0``). Returns an array (n_cp, n_rules, n_test, n_labels)."""
    if cp_index is None:
        cp_index = np.arange(log.checkpoint_steps.size)
    cp_index = np.asarray(cp_index, dtype=np.int64)
    hyp, live, partial, longest = _hypotheses(log, kernel, X_train, dtype, vote_weight, cp_index)
    Xte = _rows(X_test, dtype)
    out = np.zeros((cp_index.size, len(RULES), Xte.shape[0], log.n_labels))
    _evaluate_general(log, kernel, hyp, live, partial, longest, _rows(X_train, dtype), Xte,
                      np.zeros(Xte.shape[0], dtype=np.int64), log.n_labels == 1, cp_index, seed, dtype, block,
                      out_scores=out)
    return out


def combined_decision_scores(log: TrainLog, kernel: Kernel, X_train, X_test, rule: str, cp_index=None,
                             vote_weight: str = "survival", dtype=np.float64):
    """Scores per label (n_cp, n_test, n_labels) of one rule of :data:`_EXPANSION_RULES` for a
    kernel-expansion log with a kernel ``k0 + k1 x.y`` (linear, polynomial of degree 1): each
    checkpoint's classifier is one vector per label (:func:`_expansion_vectors`), and a test point
    costs one inner product with it, not one kernel value per support vector. The scores are those
    of :func:`decision_scores`, summed in another order (equal where the sums are exact, e.g. on
    integer features with integer coefficients). Serves scipy.sparse test rows, whose kernel blocks
    against many support vectors cost far more than these inner products."""
    from perceptron_lab.engine.linear import affine_form

    if cp_index is None:
        cp_index = np.arange(log.checkpoint_steps.size)
    cp_index = np.asarray(cp_index, dtype=np.int64)
    if log.hyp_w is not None or not _has_affine_form(kernel) or rule not in _EXPANSION_RULES:
        raise ValueError(f"no combined classifier for rule {rule!r} with {kernel.describe()}")
    hyp, live, partial, longest = _hypotheses(log, kernel, X_train, dtype, vote_weight, cp_index)
    Xtr, Xte = _rows(X_train, dtype), _rows(X_test, dtype)
    k0, k1 = affine_form(kernel)
    ncp, L = live.shape
    nf = Xtr.shape[1]
    slot = np.array([0 if r == rule else -1 for r in _EXPANSION_RULES], dtype=np.int64)
    V, V0, b, D = np.zeros((ncp, 1, L, nf)), np.zeros((ncp, 1, L)), np.zeros((ncp, 1, L)), np.ones((ncp, 1, L))
    rscale = np.ones(Xtr.shape[0])
    if log.kernel_normalized:
        sv = np.unique(hyp.uex)
        rscale[sv] = normalizing_factors(kernel_diag(kernel, Xtr[sv]))
    hyps = HypothesisArrays(ucol=hyp.uex.astype(np.int64), coef=hyp.coef.astype(np.float64), uoff=hyp.uoff,
                            hoff=hyp.hoff, theta=hyp.theta, scale=hyp.scale, norm=hyp.norm, wfull=hyp.wfull)
    cps = Checkpoints(live, partial.astype(np.float64), longest, _NO_RINDEX)
    if issparse(Xtr):
        Xc = as_csr(Xtr, np.float64)
        _expansion_vectors_csr(Xc.indptr.astype(np.int64), Xc.indices.astype(np.int64), Xc.data, nf, rscale, hyps,
                               cps, slot, Combined(V, V0, b, D))
    else:
        _expansion_vectors(np.ascontiguousarray(Xtr, dtype=np.float64), rscale, hyps, cps, slot, Combined(V, V0, b, D))
    Vt = np.ascontiguousarray(V.reshape(-1, nf).T.astype(Xte.dtype))
    P = np.asarray(ordered.times(Xte, Vt), dtype=np.float64)
    if k1 != 1.0:
        P *= k1
    if k0 != 0.0:
        P += (k0 * V0).reshape(-1)[None, :]
    S = P.reshape(-1, ncp, L)
    if log.kernel_normalized:
        S *= normalizing_factors(kernel_diag(kernel, Xte))[:, None, None]
    S -= b[None, :, 0, :]
    if rule == "last_norm":
        Dr = D[None, :, 0, :]
        np.divide(S, Dr, out=S, where=Dr > 0)
        S[:, D[:, 0, :] <= 0] = 0.0
    if not np.isfinite(S).all():
        raise overflow_error(kernel, dtype, "test scores")
    return np.ascontiguousarray(S.transpose(1, 0, 2))


#: Rules that need every hypothesis' score on a test point (not one combined classifier).
_PER_HYPOTHESIS_RULES = ("vote", "random", "random_norm")
_COMBINED_RULES = ("last", "last_norm", "avg", "avg_norm", "longest")


def _evaluate_combined(log, hyp, live, partial, longest, Xte, y_test, binary, dtype):
    """:func:`evaluate` for explicit hypotheses and the rules of :data:`_COMBINED_RULES`: each
    rule's classifier at each checkpoint is one vector (and threshold), e.g. ``sum_k c_k w_k``."""
    ncp, L = live.shape
    nf = log.hyp_w.shape[1]
    R = len(_COMBINED_RULES)
    V = np.zeros((ncp, R, L, nf))
    b = np.zeros((ncp, R, L))
    for a in range(ncp):
        for c in range(L):
            h0, u0 = hyp.hoff[c], hyp.uoff[c]
            K = int(live[a, c])
            Wk = np.zeros((K + 1, nf))
            if K:
                Wk[1:] = log.hyp_w[hyp.uidx[u0:u0 + K]] * hyp.scale[h0 + 1:h0 + K + 1, None]
            th = hyp.theta[h0:h0 + K + 1]
            nrm = hyp.norm[h0:h0 + K + 1]
            inv = np.where(nrm > 0, 1.0 / np.where(nrm > 0, nrm, 1.0), 0.0)
            w = np.append(hyp.wfull[h0:h0 + K], partial[a, c])
            lo = int(longest[a, c])
            for r, (vec, off) in enumerate((
                    (Wk[K], th[K]), (Wk[K] * inv[K], th[K] * inv[K]), (ordered.vecmat(w, Wk), ordered.vdot(w, th)),
                    (ordered.vecmat(w, Wk * inv[:, None]), ordered.vdot(w, th * inv)), (Wk[lo], th[lo]))):
                V[a, r, c] = vec
                b[a, r, c] = off
    S = (ordered.times(Xte, np.ascontiguousarray(V.reshape(-1, nf).T.astype(dtype)))
         .astype(np.float64).reshape(-1, ncp, R, L) - b[None])
    if not np.isfinite(S).all():
        raise overflow_error(None, dtype, "test scores")
    err_m = np.full((ncp, len(RULES)), -1, dtype=np.int64)
    err_b = np.full((ncp, len(RULES), L), -1, dtype=np.int64)
    cols = [RULE_INDEX[r] for r in _COMBINED_RULES]
    if binary:
        pred = (S[..., 0] > 0).astype(np.int64)
        wrong = pred != y_test[:, None, None]
        err_m[:, cols] = wrong.sum(axis=0)
        err_b[:, cols, 0] = err_m[:, cols]
    else:
        wrong = np.argmax(S, axis=3) != y_test[:, None, None]
        err_m[:, cols] = wrong.sum(axis=0)
        truth = y_test[:, None] == np.arange(L)[None, :]
        err_b[:, cols, :] = ((S > 0) != truth[:, None, None, :]).sum(axis=0)
    return err_m, err_b


def _has_affine_form(kernel: Kernel) -> bool:
    from perceptron_lab.engine.linear import has_affine_form

    return has_affine_form(kernel)


#: The combined classifiers :func:`_expansion_vectors` writes, per (checkpoint, slot, label): the
#: vector ``V`` of the ``x`` parts, the scalar ``V0`` (the ``k0`` part), the threshold ``b`` and the
#: divisor ``D``.
Combined = namedtuple("Combined", "V V0 b D")

#: Slots of the combined classifiers built by :func:`_expansion_vectors` (rule -> slot).
_EXPANSION_RULES = ("last", "last_norm", "avg", "avg_norm", "longest")


@nb.njit(cache=True, parallel=True)
def _expansion_vectors(X, rscale, hyps, cps, slot, out):
    """Combined classifiers of kernel-expansion hypotheses for kernels ``K(x, y) = k0 + k1 x.y``.

    ``hyps`` (:data:`~perceptron_lab.model.scoring.HypothesisArrays`) gives the hypotheses, update u's
    example being row ``hyps.ucol[u]`` of ``X``; ``cps`` (:data:`~perceptron_lab.model.scoring.Checkpoints`,
    whose ``rindex`` is not read) the hypotheses each rule reads at each checkpoint; ``out``
    (:data:`Combined`) receives the classifiers.

    Hypothesis k of label c is ``scale_k * sum_{j <= k} coef_j phi(x^_j) - theta_k`` with
    ``x^_j = rscale[uex_j] x_{uex_j}`` (``rscale`` all ones unless the log's kernel is normalized).
    Each rule at each checkpoint is one combination ``sum_k c_k (hypothesis k)``, written as the
    vector ``V`` (of the ``x`` parts), the scalar ``V0`` (sum of the coefficients, the ``k0`` part)
    and the threshold ``b``; the score is divided by ``D`` (the norm for ``last_norm``, so that its
    score is the hypothesis' own score divided by its norm; 0: the score is 0). Running sums along
    the label's updates cost one vector operation per update and rule: ``last`` (c = e_K),
    ``last_norm`` (e_K / |v_K|), ``avg`` (the weights w_k and the live hypothesis' partial weight),
    ``avg_norm`` (w_k / |v_k|), ``longest`` (e_longest).
    ``slot[r]`` is the output slot of rule r of :data:`_EXPANSION_RULES` (-1: not wanted).
    """
    uex, coef, uoff, hoff, theta, scale, norm, wfull = hyps
    live, partial, longest = cps.live, cps.partial, cps.longest
    V, V0, b, D = out
    L = uoff.shape[0] - 1
    ncp = live.shape[0]
    nf = X.shape[1]
    s_last, s_lnorm, s_avg, s_anorm, s_long = slot[0], slot[1], slot[2], slot[3], slot[4]
    for c in nb.prange(L):
        u = np.zeros(nf)
        A = np.zeros(nf)
        AN = np.zeros(nf)
        u0s = 0.0
        A0 = 0.0
        AN0 = 0.0
        thA = 0.0
        thAN = 0.0
        h0 = hoff[c]
        q0 = uoff[c]
        nh = hoff[c + 1] - h0
        for k in range(nh):
            if k > 0:
                j = uex[q0 + k - 1]
                a = coef[q0 + k - 1] * rscale[j]
                xj = X[j]
                for f in range(nf):
                    u[f] += a * xj[f]
                u0s += a
            s = scale[h0 + k]
            th = theta[h0 + k]
            nk = norm[h0 + k]
            inv = 1.0 / nk if nk > 0.0 else 0.0
            for cp in range(ncp):
                if live[cp, c] == k:
                    pw = partial[cp, c]
                    if s_last >= 0:
                        for f in range(nf):
                            V[cp, s_last, c, f] = s * u[f]
                        V0[cp, s_last, c] = s * u0s
                        b[cp, s_last, c] = th
                    if s_lnorm >= 0:
                        for f in range(nf):
                            V[cp, s_lnorm, c, f] = s * u[f]
                        V0[cp, s_lnorm, c] = s * u0s
                        b[cp, s_lnorm, c] = th
                        D[cp, s_lnorm, c] = nk if nk > 0.0 else 0.0
                    if s_avg >= 0:
                        for f in range(nf):
                            V[cp, s_avg, c, f] = A[f] + pw * s * u[f]
                        V0[cp, s_avg, c] = A0 + pw * s * u0s
                        b[cp, s_avg, c] = thA + pw * th
                    if s_anorm >= 0:
                        for f in range(nf):
                            V[cp, s_anorm, c, f] = AN[f] + pw * inv * s * u[f]
                        V0[cp, s_anorm, c] = AN0 + pw * inv * s * u0s
                        b[cp, s_anorm, c] = thAN + pw * inv * th
                if s_long >= 0 and longest[cp, c] == k:
                    for f in range(nf):
                        V[cp, s_long, c, f] = s * u[f]
                    V0[cp, s_long, c] = s * u0s
                    b[cp, s_long, c] = th
            w = wfull[h0 + k]
            if w != 0.0 and k > 0:
                if s_avg >= 0:
                    ws = w * s
                    for f in range(nf):
                        A[f] += ws * u[f]
                    A0 += ws * u0s
                if s_anorm >= 0:
                    ws = w * inv * s
                    for f in range(nf):
                        AN[f] += ws * u[f]
                    AN0 += ws * u0s
            if w != 0.0:
                thA += w * th
                thAN += w * inv * th


@nb.njit(cache=True, parallel=True)
def _expansion_vectors_csr(indptr, indices, data, nf, rscale, hyps, cps, slot, out):
    """:func:`_expansion_vectors` for training rows in CSR form (``indptr``, ``indices``, ``data``;
    ``nf`` features), in time proportional to the updates' nonzeros rather than to updates x
    features: each combined classifier is written as ``sum_j beta_j a_j x^_j`` over the label's
    updates j, where update j belongs to every hypothesis k > j, so ``beta_j`` is the sum of the
    weights (times scales) of the hypotheses after it -- a suffix sum -- and the vector is one
    scatter of the updates' stored values. The same classifiers as the dense loop, summed in
    another order."""
    uex, coef, uoff, hoff, theta, scale, norm, wfull = hyps
    live, partial, longest = cps.live, cps.partial, cps.longest
    V, V0, b, D = out
    L = uoff.shape[0] - 1
    ncp = live.shape[0]
    for c in nb.prange(L):
        h0 = hoff[c]
        q0 = uoff[c]
        nu = hoff[c + 1] - h0 - 1          # updates of the label: update j makes hypothesis j + 1
        beta = np.zeros(max(nu, 1))
        for cp in range(ncp):
            K = live[cp, c]
            pw = partial[cp, c]
            for r in range(5):
                sl = slot[r]
                if sl < 0:
                    continue
                for j in range(nu):
                    beta[j] = 0.0
                if r == 0 or r == 1 or r == 4:   # last, last_norm, longest: one hypothesis
                    k = K if r != 4 else longest[cp, c]
                    for j in range(k):
                        beta[j] = scale[h0 + k]
                    th = theta[h0 + k]
                    if r == 1:
                        D[cp, sl, c] = norm[h0 + k] if norm[h0 + k] > 0.0 else 0.0
                else:                             # avg (r = 2), avg_norm (r = 3)
                    nK = norm[h0 + K]
                    invK = (1.0 / nK if nK > 0.0 else 0.0) if r == 3 else 1.0
                    acc = pw * invK * scale[h0 + K]
                    th = pw * invK * theta[h0 + K]
                    for k in range(K - 1, -1, -1):
                        if k < nu:
                            beta[k] = acc
                        nk = norm[h0 + k]
                        inv = (1.0 / nk if nk > 0.0 else 0.0) if r == 3 else 1.0
                        w = wfull[h0 + k] * inv
                        acc += w * scale[h0 + k]
                        th += w * theta[h0 + k]
                b[cp, sl, c] = th
                v = V[cp, sl, c]
                v0 = 0.0
                for j in range(nu):
                    if beta[j] == 0.0:
                        continue
                    e = uex[q0 + j]
                    a = beta[j] * coef[q0 + j] * rscale[e]
                    v0 += a
                    for q in range(indptr[e], indptr[e + 1]):
                        v[indices[q]] += a * data[q]
                V0[cp, sl, c] = v0


@nb.njit(cache=True, parallel=True)
def _rows_dot(X, V, out):
    """``out = X @ V.T`` row by row, each entry in :func:`~perceptron_lab.engine.ordered.dot`'s fixed
    order, in float64: faster than a blocked product when V has only a few rows."""
    for i in nb.prange(X.shape[0]):
        x = X[i]
        for j in range(V.shape[0]):
            out[i, j] = fixed_dot(V[j], x)


#: Below this many combined vectors the test set is scored by :func:`_rows_dot`, else by a blocked
#: product (:func:`~perceptron_lab.engine.ordered.matmul`).
_ROWS_DOT_MAX = 16


def _evaluate_combined_expansion(log, kernel, hyp, live, partial, longest, Xtr, Xte, y_test, binary, rules,
                                 block_elems: int = 1 << 23):
    """:func:`evaluate` for kernel-expansion logs (e.g. primal perceptron runs, ALMA_2) with a
    kernel of the form ``K(x, y) = k0 + k1 x.y`` (linear, polynomial of degree 1) and rules of
    :data:`_COMBINED_RULES`: each requested rule's classifier at each checkpoint is one vector
    (:func:`_expansion_vectors`), and the test set is scored against those vectors only. Rules
    not requested are reported as -1."""
    from perceptron_lab.engine.linear import affine_form

    k0, k1 = affine_form(kernel)
    ncp, L = live.shape
    nf = Xtr.shape[1]
    wanted = [r for r in _EXPANSION_RULES if r in set(rules)]
    slot = np.array([wanted.index(r) if r in wanted else -1 for r in _EXPANSION_RULES], dtype=np.int64)
    R = len(wanted)
    V = np.zeros((ncp, R, L, nf))
    V0 = np.zeros((ncp, R, L))
    b = np.zeros((ncp, R, L))
    D = np.ones((ncp, R, L))
    if log.kernel_normalized:
        rscale = np.ones(Xtr.shape[0])
        sv = np.unique(hyp.uex)
        rscale[sv] = normalizing_factors(kernel_diag(kernel, Xtr[sv]))
    else:
        rscale = np.ones(Xtr.shape[0])
    if R:
        hyps = HypothesisArrays(ucol=hyp.uex.astype(np.int64), coef=hyp.coef.astype(np.float64), uoff=hyp.uoff,
                                hoff=hyp.hoff, theta=hyp.theta, scale=hyp.scale, norm=hyp.norm, wfull=hyp.wfull)
        cps = Checkpoints(live, partial.astype(np.float64), longest, _NO_RINDEX)
        if issparse(Xtr):
            Xc = as_csr(Xtr, np.float64)
            _expansion_vectors_csr(Xc.indptr.astype(np.int64), Xc.indices.astype(np.int64), Xc.data, nf, rscale,
                                   hyps, cps, slot, Combined(V, V0, b, D))
        else:
            _expansion_vectors(Xtr, rscale, hyps, cps, slot, Combined(V, V0, b, D))
    Vr = np.ascontiguousarray(V.reshape(-1, nf))
    Vt = np.ascontiguousarray(Vr.T.astype(Xte.dtype))
    off = (k0 * V0).reshape(-1)
    nt = Xte.shape[0]
    cols = [RULE_INDEX[r] for r in wanted]
    err_m = np.full((ncp, len(RULES)), -1, dtype=np.int64)
    err_b = np.full((ncp, len(RULES), L), -1, dtype=np.int64)
    if R:
        err_m[:, cols] = 0
        err_b[:, cols, :] = 0
    step = max(1, block_elems // max(1, Vt.shape[1]))
    classes = np.arange(L)
    # a binary prediction is the sign of the score: without thresholds, the test point's positive
    # normalizing factor (0 for a zero point, whose score is 0 either way) changes no prediction
    sign_only = binary and not b.any()
    for a in range(0, nt if R else 0, step):
        e = min(nt, a + step)
        if issparse(Xte):
            P = np.asarray(Xte[a:e] @ Vt, dtype=np.float64)   # the test rows' stored values alone
        elif Vr.shape[0] <= _ROWS_DOT_MAX:
            P = np.empty((e - a, Vr.shape[0]))
            _rows_dot(Xte[a:e], Vr, P)
        else:
            P = ordered.matmul(Xte[a:e], Vt).astype(np.float64)
        if k1 != 1.0:
            P *= k1
        if k0 != 0.0:
            P += off[None, :]
        S = P.reshape(e - a, ncp, R, L)
        if log.kernel_normalized and not sign_only:
            S *= normalizing_factors(kernel_diag(kernel, Xte[a:e]))[:, None, None, None]
        S -= b[None]
        if slot[1] >= 0:
            np.divide(S, D[None], out=S, where=D[None] > 0)
            S[:, D <= 0] = 0.0
        yt = y_test[a:e]
        if binary:
            wrong = (S[..., 0] > 0).astype(np.int64) != yt[:, None, None]
            err_m[:, cols] += wrong.sum(axis=0)
            err_b[:, cols, 0] += wrong.sum(axis=0)
        else:
            err_m[:, cols] += (np.argmax(S, axis=3) != yt[:, None, None]).sum(axis=0)
            truth = yt[:, None] == classes[None, :]
            err_b[:, cols, :] += ((S > 0) != truth[:, None, None, :]).sum(axis=0)
    return err_m, err_b
