"""The jitted scan behind :func:`perceptron_lab.model.predict.evaluate`: every rule's score of every
hypothesis on a block of test points.

The kernel block comes transposed, ``KtT[support example, test point]``, so that the scan over a
label's hypotheses (outer loop) updates a run of consecutive test points at a time (inner loops
over contiguous memory, which the compiler vectorizes). Each test point's arithmetic is the same
as scoring it alone, in the same order: the prefix sums, the averaged and voted sums and so the
errors are identical to a point-by-point scan.
"""

from __future__ import annotations

from collections import namedtuple

import numba as nb
import numpy as np

from perceptron_lab.engine.base import on_threads, sign_of
from perceptron_lab.model.prefetch import prefetch_item

#: Test points scanned together by one task (the inner vector loop's length), at most.
POINTS_PER_TASK = 128
#: A task's score array (checkpoints x rules x labels x points) is kept within this many values
#: (4 MB) when the checkpoints are about as many as a label's hypotheses, so that writing every
#: checkpoint's scores stays in cache: such runs scan fewer points per task.
TASK_SCORES = 1 << 19
#: A run whose labels have at least this many hypotheses per checkpoint scans
#: :data:`POINTS_PER_TASK` points per task whatever its score array's size: the scan over the
#: hypotheses then outweighs the checkpoints' writes, and short vector loops would slow it
#: (Freund & Schapire d = 1, with 300 checkpoints and tens of thousands of hypotheses a label).
HYPOTHESES_PER_CHECKPOINT = 2
#: The scan asks for the block row of the update this many updates ahead (:mod:`perceptron_lab.model.prefetch`).
PREFETCH_AHEAD = 4


def random_by_history(n_checkpoints: int, n_labels: int, max_hypotheses: int) -> bool:
    """How the random rules find each point's hypothesis: by keeping every hypothesis' scores of
    the task's points (when that history is no larger than the checkpoints' score array), else by
    visiting the (checkpoint, point) pairs sorted by their hypothesis during the scan."""
    return 2 * max_hypotheses <= n_checkpoints * N_RULES * n_labels


def points_per_task(n_checkpoints: int, n_labels: int, max_hypotheses: int = 0) -> int:
    """How many test points one task scans together (16 ... :data:`POINTS_PER_TASK`), for a run
    whose labels have at most ``max_hypotheses`` hypotheses each. The scores of a point do not
    depend on the task size."""
    if max_hypotheses >= HYPOTHESES_PER_CHECKPOINT * n_checkpoints:
        return POINTS_PER_TASK
    return int(max(16, min(POINTS_PER_TASK, TASK_SCORES // max(1, n_checkpoints * N_RULES * n_labels))))


@nb.njit(cache=True)
def _bucket_order(keys, n_keys, out):
    """``out``: the positions of ``keys`` (integers in [0, n_keys)) in increasing key order (a
    counting sort: one pass to count, one to place)."""
    start = np.zeros(n_keys + 1, dtype=np.int64)
    for q in range(keys.shape[0]):
        start[keys[q] + 1] += 1
    for v in range(n_keys):
        start[v + 1] += start[v]
    for q in range(keys.shape[0]):
        v = keys[q]
        out[start[v]] = q
        start[v] += 1
@nb.njit(cache=True)
def _stable_order(keys, out):
    """``out``: the positions of ``keys`` in increasing key order, equal keys in their order (an
    insertion sort: the keys are a run's checkpoints, few and mostly in order already)."""
    n = keys.shape[0]
    for q in range(n):
        out[q] = q
    for q in range(1, n):
        v = out[q]
        kv = keys[v]
        p = q
        while p > 0 and keys[out[p - 1]] > kv:
            out[p] = out[p - 1]
            p -= 1
        out[p] = v


#: The rules' rows in the score arrays (the order of :data:`perceptron_lab.model.predict.RULES`).
N_RULES = 8


@nb.njit(cache=True, inline="always")
def rule_skipped(rr, need_norm, need_random, need_avg):
    """Whether the scan leaves rule row ``rr`` uncomputed: the normalized rules (rows 1, 3, 6)
    without ``need_norm``, the random ones (rows 5, 6) without ``need_random``, the averaged ones
    (rows 2, 3) without ``need_avg``."""
    return ((not need_norm and (rr == 1 or rr == 3 or rr == 6)) or (not need_random and (rr == 5 or rr == 6))
            or (not need_avg and (rr == 2 or rr == 3)))


def random_indices(hstep, hoff, live, rslice):
    """The random rules' hypothesis per (checkpoint, label, test point): ``out[cp, c, x]`` is the
    number of label c's updates (hypotheses ``hoff[c] + 1 ...``, steps ``hstep``) among its first
    ``live[cp, c]`` made at steps <= ``rslice[cp, x]``, the point's time slice. Each checkpoint's
    slices are visited in increasing order and each label's steps walked once alongside them (a
    merge), instead of a binary search per entry: Freund & Schapire's runs ask for 300 checkpoints,
    ten labels and 10,000 test points, 3e7 entries. The slices are ordered by numpy (an entry does
    not depend on the order of equal slices), so no sort is compiled."""
    rslice = np.ascontiguousarray(rslice, dtype=np.int64)
    order = np.ascontiguousarray(np.argsort(rslice, axis=1), dtype=np.int64)
    ncp, nt = rslice.shape
    out = np.empty((ncp, hoff.shape[0] - 1, nt), dtype=np.int32)
    on_threads(_random_indices, ncp, np.ascontiguousarray(hstep, dtype=np.int64),
               np.ascontiguousarray(hoff, dtype=np.int64), np.ascontiguousarray(live, dtype=np.int64), rslice,
               order, out)
    return out


@nb.njit(cache=True, nogil=True)
def _random_indices(cp0, cp1, hstep, hoff, live, rslice, order, out):
    """:func:`random_indices` of checkpoints ``cp0 .. cp1 - 1``, given each checkpoint's points in
    increasing order of their slice."""
    nt = rslice.shape[1]
    L = hoff.shape[0] - 1
    for cp in range(cp0, cp1):
        for c in range(L):
            h0 = hoff[c]
            kmax = live[cp, c]
            k = 0
            for t in range(nt):
                x = order[cp, t]
                r = rslice[cp, x]
                while k < kmax and hstep[h0 + 1 + k] <= r:
                    k += 1
                out[cp, c, x] = k


#: The hypotheses of a training log as :func:`score_block_t` reads them: update u's example is row
#: ``ucol[u]`` of the kernel block and its coefficient ``coef[u]``; label c's updates are
#: ``uoff[c] .. uoff[c + 1]`` and its hypotheses ``hoff[c] .. hoff[c + 1]`` (hypothesis 0 first), each
#: with its threshold ``theta``, ``scale``, ``norm`` and the number of steps ``wfull`` it was in force.
HypothesisArrays = namedtuple("HypothesisArrays", "ucol coef uoff hoff theta scale norm wfull")

#: Which hypothesis each rule reads at each checkpoint ``cp`` for label ``c``: ``live[cp, c]`` (the
#: last one), ``partial[cp, c]`` (the steps it has been in force by then), ``longest[cp, c]`` and
#: ``rindex[cp, c, x]`` (the random rules', per test point; :func:`random_indices`).
Checkpoints = namedtuple("Checkpoints", "live partial longest rindex")

#: How to scan: ``binary`` problem; ``direct`` (explicit hypotheses, a row per update); which rules
#: to compute (``need_norm``, ``need_random``, ``need_avg``); ``want_scores`` (write the scores, not
#: only the counts); ``points`` per task (:func:`points_per_task`); ``history`` (how the random rules
#: find their hypothesis, :func:`random_by_history`).
ScanOptions = namedtuple("ScanOptions", "binary direct need_norm need_random want_scores points history need_avg",
                         defaults=(True,))

#: Where :func:`score_block_t` writes: ``right_multi[task, cp, rule]``, ``right_bin[task, cp, rule, c]``
#: and, with ``want_scores``, ``scores[cp, rule, x, c]``.
ScanOutputs = namedtuple("ScanOutputs", "right_multi right_bin scores")


def score_block_t(KtT, y, hyps, cps, opts, outs):
    """For each test point (column of ``KtT``, true label ``y``): every rule's score per label at every
    checkpoint, then correctness. ``hyps``: :data:`HypothesisArrays`; ``cps``: :data:`Checkpoints`;
    ``opts``: :data:`ScanOptions`; ``outs``: :data:`ScanOutputs`.

    Hypothesis k of a label scores ``scale_k * P_k - theta_k`` with ``P_k`` the prefix sum
    ``sum_{j <= k} coef_j KtT[ucol_j, x]`` over the label's updates, or, when ``direct``, the
    row ``KtT[ucol_k, x]`` itself (explicit hypotheses, one row per update).

    The test points are scanned by tasks of ``points`` points (``task = x // points``):
    right_multi[task, cp, rule] counts the task's points whose multiclass (or binary) prediction is
    right; right_bin[task, cp, rule, c] those whose label c's binary one-vs-rest prediction is right;
    with ``want_scores``, scores[cp, rule, x, c] = the score itself. Without ``need_norm`` the
    normalized scores are not computed, without ``need_random`` the random rules' are not; those
    rules' outputs are then meaningless. ``rindex[cp, c, x]``: the random rules' hypothesis of
    label c for the point (:func:`random_indices`). ``points``: test points per task (:func:`points_per_task`);
    ``history``: how the random rules find their hypothesis (:func:`random_by_history`).

    The tasks run on numba's thread count of the calling thread (:func:`on_threads`, each thread
    a contiguous range of them); a task's results do not depend on the thread that computes it.
    """
    B = int(opts.points)
    n_tasks = (KtT.shape[1] + B - 1) // B
    on_threads(_scan_tasks, n_tasks, KtT, y, hyps, cps, opts, outs)


@nb.njit(cache=True, nogil=True)
def _scan_tasks(t0, t1, KtT, y, hyps, cps, opts, outs):
    """Tasks ``t0 .. t1 - 1`` of :func:`score_block_t`: task ``t`` scans the ``points`` test points
    from ``t * points`` on, every label and hypothesis, and writes its rows of the outputs."""
    ucol, coef, uoff, hoff, theta, scale, norm, wfull = hyps
    live, partial, longest, rindex = cps
    binary, direct, need_norm, need_random, want_scores, points, history, need_avg = opts
    right_multi, right_bin, out_scores = outs
    nt = KtT.shape[1]
    L = uoff.shape[0] - 1
    ncp = live.shape[0]
    R = N_RULES
    B = points
    line = max(1, 64 // KtT.itemsize)  # block entries per cache line
    maxh = 0
    if need_random and history:
        for lab in range(L):
            maxh = max(maxh, hoff[lab + 1] - hoff[lab])
    maxh_n = maxh if need_norm else 0
    for task in range(t0, t1):
        x0 = task * B
        m = min(nt, x0 + B) - x0
        # every computed rule's entry is written at its checkpoint; the others are zero
        sc = np.empty((ncp, R, L, m))
        for rr in range(R):
            if rule_skipped(rr, need_norm, need_random, need_avg):
                for zcp in range(ncp):
                    for c in range(L):
                        for j in range(m):
                            sc[zcp, rr, c, j] = 0.0
        P = np.zeros(m)
        f = np.zeros(m)
        fn = np.zeros(m)
        cumA = np.zeros(m)
        cumAN = np.zeros(m)
        cumV = np.zeros(m)
        # the random rules: every hypothesis' scores of the task's points, read at the end
        Fh = np.zeros(maxh * m)
        Fnh = np.zeros(maxh_n * m)
        # otherwise: the (checkpoint, point) pairs in the order of their hypothesis
        sorted_random = need_random and not history
        lo = np.zeros(ncp * m if sorted_random else 0, dtype=np.int64)
        rorder = np.zeros(ncp * m if sorted_random else 0, dtype=np.int64)
        rv = np.zeros(ncp * m if sorted_random else 0)
        rvn = np.zeros(ncp * m if sorted_random else 0)
        lkey = np.empty(ncp, dtype=np.int64)
        lorder = np.empty(ncp, dtype=np.int64)
        for c in range(L):
            h0 = hoff[c]
            nh = hoff[c + 1] - h0
            u0 = uoff[c]
            # the random rule's hypothesis per (checkpoint, point), visited in order of its index
            if sorted_random:
                for rcp in range(ncp):
                    for j in range(m):
                        lo[rcp * m + j] = rindex[rcp, c, x0 + j]
                _bucket_order(lo, nh, rorder)
            rp = 0
            # the checkpoints in increasing order of their longest survivor (a stable order)
            for lcp in range(ncp):
                lkey[lcp] = longest[lcp, c]
            _stable_order(lkey, lorder)
            lp = 0
            cp = 0
            for j in range(m):
                P[j] = 0.0
                cumA[j] = 0.0
                cumAN[j] = 0.0
                cumV[j] = 0.0
            k = -1
            while k + 1 < nh:
                k += 1
                w = wfull[h0 + k]   # hypothesis k's weight in the averaged and voted sums
                if k == 0:
                    t0 = theta[h0]
                    for j in range(m):
                        f[j] = -t0
                        fn[j] = 0.0
                else:
                    u = u0 + k - 1
                    col = ucol[u]
                    cu = coef[u]
                    s = scale[h0 + k]
                    th = theta[h0 + k]
                    ahead = u + PREFETCH_AHEAD
                    if ahead < ucol.shape[0]:
                        r_ahead = ucol[ahead]
                        for j in range(0, m, line):
                            prefetch_item(KtT, r_ahead, x0 + j)
                        prefetch_item(KtT, r_ahead, x0 + m - 1)
                    row = KtT[col, x0:x0 + m]
                    if (not direct and not need_norm and not need_random and k + 1 < nh
                            and not (lp < ncp and longest[lorder[lp], c] <= k + 1)
                            and not (cp < ncp and live[cp, c] <= k + 1)):
                        # no rule reads the scores of hypotheses k and k + 1 themselves: only their
                        # shares of the running sums, both in one pass over the points, each point's
                        # sums kept in registers between the two steps (the same operations in the
                        # same order as the steps below, so the same values)
                        w2 = wfull[h0 + k + 1]
                        cu2 = coef[u + 1]
                        s2 = scale[h0 + k + 1]
                        th2 = theta[h0 + k + 1]
                        if ahead + 1 < ucol.shape[0]:
                            r_ahead = ucol[ahead + 1]
                            for j in range(0, m, line):
                                prefetch_item(KtT, r_ahead, x0 + j)
                            prefetch_item(KtT, r_ahead, x0 + m - 1)
                        row2 = KtT[ucol[u + 1], x0:x0 + m]
                        if need_avg:
                            for j in range(m):
                                p = P[j] + cu * row[j]
                                fj = s * p - th
                                a = cumA[j] + w * fj
                                v = cumV[j] + w * sign_of(fj)
                                p = p + cu2 * row2[j]
                                fj = s2 * p - th2
                                P[j] = p
                                cumA[j] = a + w2 * fj
                                cumV[j] = v + w2 * sign_of(fj)
                        else:
                            for j in range(m):
                                p = P[j] + cu * row[j]
                                v = cumV[j] + w * sign_of(s * p - th)
                                p = p + cu2 * row2[j]
                                P[j] = p
                                cumV[j] = v + w2 * sign_of(s2 * p - th2)
                        k += 1
                        continue
                    if direct:
                        for j in range(m):
                            P[j] = row[j]
                            f[j] = s * P[j] - th
                    else:
                        for j in range(m):
                            P[j] += cu * row[j]
                            f[j] = s * P[j] - th
                    if need_norm:
                        nk = norm[h0 + k]
                        if nk > 0.0:
                            for j in range(m):
                                fn[j] = f[j] / nk
                        else:
                            for j in range(m):
                                fn[j] = 0.0
                while rp < rorder.shape[0] and lo[rorder[rp]] == k:
                    q = rorder[rp]
                    j = q - (q // m) * m
                    rv[q] = f[j]
                    rvn[q] = fn[j]
                    rp += 1
                if need_random and history:
                    for j in range(m):
                        Fh[k * m + j] = f[j]
                    if need_norm:
                        for j in range(m):
                            Fnh[k * m + j] = fn[j]
                # the longest rule reads hypothesis k's scores now (k <= the live one)
                while lp < ncp and longest[lorder[lp], c] == k:
                    lcp = lorder[lp]
                    for j in range(m):
                        sc[lcp, 7, c, j] = f[j]
                    lp += 1
                while cp < ncp and live[cp, c] == k:
                    pw = partial[cp, c]
                    for j in range(m):
                        sc[cp, 0, c, j] = f[j]
                        sc[cp, 1, c, j] = fn[j]
                        sc[cp, 4, c, j] = cumV[j] + pw * sign_of(f[j])
                    if need_avg:
                        for j in range(m):
                            sc[cp, 2, c, j] = cumA[j] + pw * f[j]
                            sc[cp, 3, c, j] = cumAN[j] + pw * fn[j]
                    cp += 1
                if need_avg and need_norm:
                    for j in range(m):
                        cumA[j] += w * f[j]
                        cumAN[j] += w * fn[j]
                        cumV[j] += w * sign_of(f[j])
                elif need_avg:
                    for j in range(m):
                        cumA[j] += w * f[j]
                        cumV[j] += w * sign_of(f[j])
                else:
                    for j in range(m):
                        cumV[j] += w * sign_of(f[j])
            if sorted_random:
                for rcp in range(ncp):
                    for j in range(m):
                        sc[rcp, 5, c, j] = rv[rcp * m + j]
                        sc[rcp, 6, c, j] = rvn[rcp * m + j]
            elif need_random:  # the hypothesis alive at each point's time slice
                for rcp in range(ncp):
                    for j in range(m):
                        q = rindex[rcp, c, x0 + j]
                        sc[rcp, 5, c, j] = Fh[q * m + j]
                        if need_norm:
                            sc[rcp, 6, c, j] = Fnh[q * m + j]
        # predictions, reading the scores in memory order (point innermost); this task's counts
        # of right predictions go to its own row of the outputs
        best = np.empty(m, dtype=np.int64)
        bestv = np.empty(m)
        for cp in range(ncp):
            for rr in range(R):
                if want_scores:
                    for c in range(L):
                        for j in range(m):
                            out_scores[cp, rr, x0 + j, c] = sc[cp, rr, c, j]
                if rule_skipped(rr, need_norm, need_random, need_avg):
                    continue   # not computed: reported as -1 (predict._Scan.errors)
                if binary:
                    right = 0
                    for j in range(m):
                        right += 1 if (1 if sc[cp, rr, 0, j] > 0.0 else 0) == y[x0 + j] else 0
                    right_multi[task, cp, rr] = right
                    right_bin[task, cp, rr, 0] = right
                    continue
                # the first label of the highest score, as a scan over the labels keeping the best
                for j in range(m):
                    best[j] = 0
                    bestv[j] = sc[cp, rr, 0, j]
                for c in range(1, L):
                    for j in range(m):
                        v = sc[cp, rr, c, j]
                        if v > bestv[j]:
                            bestv[j] = v
                            best[j] = c
                right = 0
                for j in range(m):
                    right += 1 if best[j] == y[x0 + j] else 0
                right_multi[task, cp, rr] = right
                for c in range(L):
                    right = 0
                    for j in range(m):
                        right += 1 if (sc[cp, rr, c, j] > 0.0) == (y[x0 + j] == c) else 0
                    right_bin[task, cp, rr, c] = right
