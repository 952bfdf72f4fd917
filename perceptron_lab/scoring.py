"""The jitted scan behind :func:`perceptron_lab.predict.evaluate`: every rule's score of every
hypothesis on a block of test points.

The kernel block comes transposed, ``KtT[support example, test point]``, so that the scan over a
label's hypotheses (outer loop) updates a run of consecutive test points at a time (inner loops
over contiguous memory, which the compiler vectorizes). Each test point's arithmetic is the same
as scoring it alone, in the same order: the prefix sums, the averaged and voted sums and so the
errors are identical to a point-by-point scan.
"""

from __future__ import annotations

import numba as nb
import numpy as np

#: Test points scanned together by one task (the inner vector loop's length).
POINTS_PER_TASK = 128
#: The rules' rows in the score arrays (the order of :data:`perceptron_lab.predict.RULES`).
N_RULES = 8


@nb.njit(cache=True, inline="always")
def _sign(v):
    if v > 0.0:
        return 1.0
    if v < 0.0:
        return -1.0
    return 0.0


@nb.njit(cache=True)
def _random_index(hstep, h0, k, r):
    """The number of a label's updates (hypotheses h0+1 ... h0+k, steps ``hstep``) at steps <= r."""
    lo = 0
    hi = k
    while lo < hi:
        mid = (lo + hi) // 2
        if hstep[h0 + 1 + mid] <= r:
            lo = mid + 1
        else:
            hi = mid
    return lo


@nb.njit(cache=True, parallel=True)
def score_block_t(KtT, ucol, coef, uoff, hoff, hstep, theta, scale, norm, wfull, live, partial, longest,
                  rslice, y, binary, direct, need_norm, need_random, out_multi, out_bin, want_scores, out_scores):
    """For each test point (column of ``KtT``): every rule's score per label at every checkpoint,
    then correctness.

    Hypothesis k of a label scores ``scale_k * P_k - theta_k`` with ``P_k`` the prefix sum
    ``sum_{j <= k} coef_j KtT[ucol_j, x]`` over the label's updates, or, when ``direct``, the
    row ``KtT[ucol_k, x]`` itself (explicit hypotheses, one row per update).

    out_multi[cp, rule, x] = 1 when the multiclass (or binary) prediction is right;
    out_bin[cp, rule, x, c] = 1 when label c's binary one-vs-rest prediction is right;
    with ``want_scores``, out_scores[cp, rule, x, c] = the score itself. Without ``need_norm`` the
    normalized scores are not computed, without ``need_random`` the random rules' are not; those
    rules' outputs are then meaningless.
    """
    nt = KtT.shape[1]
    L = uoff.shape[0] - 1
    ncp = live.shape[0]
    R = N_RULES
    B = POINTS_PER_TASK
    n_tasks = (nt + B - 1) // B
    for task in nb.prange(n_tasks):
        x0 = task * B
        m = min(nt, x0 + B) - x0
        sc = np.zeros((ncp, R, L, m))
        P = np.zeros(m)
        f = np.zeros(m)
        fn = np.zeros(m)
        cumA = np.zeros(m)
        cumAN = np.zeros(m)
        cumV = np.zeros(m)
        lo = np.zeros(ncp * m, dtype=np.int64)
        for c in range(L):
            h0 = hoff[c]
            nh = hoff[c + 1] - h0
            u0 = uoff[c]
            # the random rule's hypothesis per (checkpoint, point), visited in order of its index
            if need_random:
                for cp in range(ncp):
                    for j in range(m):
                        lo[cp * m + j] = _random_index(hstep, h0, live[cp, c], rslice[cp, x0 + j])
                rorder = np.argsort(lo, kind="mergesort")
            else:
                rorder = np.zeros(0, dtype=np.int64)
            lorder = np.argsort(longest[:, c], kind="mergesort")
            rp = 0
            lp = 0
            cp = 0
            for j in range(m):
                P[j] = 0.0
                cumA[j] = 0.0
                cumAN[j] = 0.0
                cumV[j] = 0.0
            for k in range(nh):
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
                    row = KtT[col, x0:x0 + m]
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
                # the random and longest rules read hypothesis k's scores now (k <= the live one)
                while rp < rorder.shape[0] and lo[rorder[rp]] == k:
                    q = rorder[rp]
                    rcp = q // m
                    j = q - rcp * m
                    sc[rcp, 5, c, j] = f[j]
                    sc[rcp, 6, c, j] = fn[j]
                    rp += 1
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
                        sc[cp, 2, c, j] = cumA[j] + pw * f[j]
                        sc[cp, 3, c, j] = cumAN[j] + pw * fn[j]
                        sc[cp, 4, c, j] = cumV[j] + pw * _sign(f[j])
                    cp += 1
                w = wfull[h0 + k]
                if need_norm:
                    for j in range(m):
                        cumA[j] += w * f[j]
                        cumAN[j] += w * fn[j]
                        cumV[j] += w * _sign(f[j])
                else:
                    for j in range(m):
                        cumA[j] += w * f[j]
                        cumV[j] += w * _sign(f[j])
        for j in range(m):
            x = x0 + j
            if want_scores:
                for cp in range(ncp):
                    for rr in range(R):
                        for c in range(L):
                            out_scores[cp, rr, x, c] = sc[cp, rr, c, j]
            yx = y[x]
            for cp in range(ncp):
                for rr in range(R):
                    if binary:
                        pred = 1 if sc[cp, rr, 0, j] > 0.0 else 0
                        out_multi[cp, rr, x] = 1 if pred == yx else 0
                        out_bin[cp, rr, x, 0] = out_multi[cp, rr, x]
                    else:
                        best = 0
                        for c in range(1, L):
                            if sc[cp, rr, c, j] > sc[cp, rr, best, j]:
                                best = c
                        out_multi[cp, rr, x] = 1 if best == yx else 0
                        for c in range(L):
                            pos = sc[cp, rr, c, j] > 0.0
                            out_bin[cp, rr, x, c] = 1 if pos == (yx == c) else 0
