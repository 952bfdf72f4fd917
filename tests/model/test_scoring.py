"""The evaluation scan (perceptron_lab.model.scoring): its two ways of finding the random rules'
hypotheses, and any number of test points per task, give the same scores."""

import numpy as np
import pytest

import perceptron_lab.model.predict as predict
from perceptron_lab.engine.perceptron import PerceptronParams, label_matrix, train
from perceptron_lab.engine.kernels import Kernel


@pytest.mark.parametrize("direct_theta", [False, True])
def test_random_rule_paths_and_task_sizes_agree(monkeypatch, direct_theta):
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(400, 6)), rng.integers(0, 4, 400)
    Xt = rng.normal(size=(333, 6))
    params = PerceptronParams(eta=0.1, theta_init=1.0, C=1.0, tau_abs=0.5) if direct_theta else PerceptronParams()
    log = train(X, label_matrix(y, 4), Kernel("poly", 2, 3.0), params, rng.permutation(400), 3,
                [0.1 * i for i in range(1, 31)])
    runs = []
    for history in (True, False):
        for points in (16, 128):
            monkeypatch.setattr(predict, "random_by_history", lambda *a, h=history: h)
            monkeypatch.setattr(predict, "points_per_task", lambda *a, p=points: p)
            runs.append(predict.decision_scores(log, Kernel("poly", 2, 3.0), X, Xt, seed=7))
    for other in runs[1:]:
        np.testing.assert_array_equal(other, runs[0])


def test_task_size_follows_the_hypotheses_per_checkpoint():
    from perceptron_lab.model.scoring import POINTS_PER_TASK, points_per_task

    # Freund & Schapire's layout: 300 checkpoints, 10 labels
    assert points_per_task(300, 10, 65_000) == POINTS_PER_TASK  # d = 1: the scan dominates
    assert points_per_task(300, 10, 400) < 32  # about one hypothesis a checkpoint: the score array stays small
    assert points_per_task(3, 10, 400) == POINTS_PER_TASK
    assert points_per_task(300, 10) == points_per_task(300, 10, 0) >= 16


@pytest.mark.parametrize("values", [
    np.array([5, 3, 5, 0, 3, 9, 9, 9], dtype=np.int64),        # few values: the table
    np.array([7, 7, 7], dtype=np.int32),
    np.array([10**9, 3, 10**9, 12], dtype=np.int64),           # sparse values: the sort
    np.zeros(0, dtype=np.int64),
    np.random.default_rng(5).integers(0, 208, 20_000),          # sonar-sized set, 100 epochs
])
def test_distinct_equals_numpy_unique(values):
    sv, inv = predict.distinct(values)
    want_sv, want_inv = np.unique(values, return_inverse=True)
    np.testing.assert_array_equal(sv, want_sv)
    assert sv.dtype == values.dtype and inv.dtype == np.int64
    np.testing.assert_array_equal(inv, want_inv.reshape(-1))
    np.testing.assert_array_equal(sv[inv], values)


def test_block_points_fit_the_block_bytes_within_their_bounds():
    from perceptron_lab.model.predict import BLOCK_BYTES, MAX_BLOCK_POINTS, MIN_BLOCK_POINTS, block_points

    # Table 3 MNIST's fold: 40,000 support examples of float32 -> one task's worth per thread
    assert block_points(40_000, 4, threads=1) == MIN_BLOCK_POINTS
    assert block_points(40_000, 4, threads=2) == 2 * MIN_BLOCK_POINTS
    # a few hundred support examples (the UCI sets): the largest block
    assert block_points(300, 8, threads=1) == MAX_BLOCK_POINTS
    # in between: as many points as fit
    n = 5_000
    b = block_points(n, 8, threads=1)
    assert MIN_BLOCK_POINTS < b < MAX_BLOCK_POINTS
    assert b * n * 8 <= BLOCK_BYTES < (b + 1) * n * 8
    assert block_points(0, 8, threads=1) == MAX_BLOCK_POINTS


@pytest.mark.parametrize("threads", [1, 2])
def test_errors_do_not_depend_on_the_block_size(threads):
    """Blocks narrower than a task, one task per thread, and the default: the same errors for every
    rule (the scan prefetches rows ahead of the update it scores, up to the last update)."""
    import numba

    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("needs 2 numba threads")
    rng = np.random.default_rng(8)
    X, y = rng.integers(0, 9, size=(600, 12)).astype(np.float64), rng.integers(0, 5, 600)
    Xt, yt = rng.integers(0, 9, size=(517, 12)).astype(np.float64), rng.integers(0, 5, 517)
    log = train(X, label_matrix(y, 5), Kernel("linear"), PerceptronParams(), rng.permutation(600), 2, [0.5, 1.0, 2.0])
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        runs = [predict.evaluate(log, Kernel("linear"), X, Xt, yt, False, seed=4, block=b)
                for b in (None, 2048, 37, 256)]
    finally:
        numba.set_num_threads(before)
    assert runs[0][0].min() >= 0 and runs[0][0].max() > 0
    for err_m, err_b in runs[1:]:
        np.testing.assert_array_equal(err_m, runs[0][0])
        np.testing.assert_array_equal(err_b, runs[0][1])


def test_prefetch_changes_no_value_and_takes_only_a_matrix():
    import numba as nb

    from perceptron_lab.model.prefetch import prefetch_item

    @nb.njit
    def rows_sum(A, order):
        s = 0.0
        for k in range(order.size):
            if k + 1 < order.size:
                prefetch_item(A, order[k + 1], 0)
            s += A[order[k]].sum()
        return s

    rng = np.random.default_rng(2)
    for dtype in (np.float32, np.float64):
        A = rng.integers(0, 100, size=(50, 33)).astype(dtype)
        order = rng.permutation(50)
        assert rows_sum(A, order) == float(A.sum(dtype=np.float64))

    @nb.njit
    def on_a_vector(v):
        prefetch_item(v, 0, 0)

    with pytest.raises(nb.core.errors.TypingError):
        on_a_vector(np.zeros(3))


def test_random_indices_equal_a_search_per_entry():
    """Each (checkpoint, label, point)'s hypothesis of the random rules is the count of the label's
    first live[cp, c] updates made at steps <= the point's slice: checked against numpy's
    searchsorted entry by entry, with slices equal to update steps (the bound is inclusive), slices
    before the first update and past the last live one, and a label with no update at all."""
    from perceptron_lab.model.scoring import random_indices

    rng = np.random.default_rng(5)
    steps = [np.sort(rng.choice(np.arange(1, 500), size=k, replace=False)) for k in (40, 1, 0, 17)]
    hoff = np.zeros(len(steps) + 1, dtype=np.int64)
    hstep = [np.zeros(1, dtype=np.int64)]
    for c, st in enumerate(steps):    # hypothesis 0 of a label (before any update) has step 0
        hstep += [np.zeros(1, dtype=np.int64), st.astype(np.int64)]
        hoff[c + 1] = hoff[c] + 1 + st.size
    hstep = np.concatenate(hstep[1:])
    T = np.array([60, 250, 499, 499])
    live = np.array([[np.searchsorted(st, t, side="right") for st in steps] for t in T], dtype=np.int64)
    live[3] = [min(5, v) for v in live[3]]     # fewer live hypotheses than updates at <= T
    rslice = np.stack([rng.integers(0, t + 1, size=300) for t in T]).astype(np.int64)
    rslice[:, :40] = np.stack([np.resize(steps[0][steps[0] <= t], 40) if (steps[0] <= t).any()
                               else np.zeros(40, dtype=np.int64) for t in T])
    got = random_indices(hstep, hoff, live, rslice)
    assert got.shape == (T.size, len(steps), 300)
    for cp in range(T.size):
        for c, st in enumerate(steps):
            first = st[:live[cp, c]]
            want = np.searchsorted(first, rslice[cp], side="right")
            assert np.array_equal(got[cp, c], want), (cp, c)
    assert got[:, 2].max() == 0 and got[:, 0].max() > 0
