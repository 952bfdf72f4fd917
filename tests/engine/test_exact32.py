"""Float32 inner products standing in for float64 ones on integer features (raw MNIST pixels):
the same values bit for bit, so float64 runs keep every result while their GEMMs run in float32."""

from __future__ import annotations

import numpy as np
import pytest

from perceptron_lab.engine import kernels

from perceptron_lab.model import predict
from perceptron_lab.engine.perceptron import PerceptronParams, add_product, chunk_dots, label_matrix, train
from perceptron_lab.engine.kernels import EXACT32_LIMIT, Kernel, exact32_ok, gram, integer_features, matmul_exact32


def _integer_rows(rng, n, d, hi):
    return rng.integers(0, hi, size=(n, d)).astype(np.float64)


def _with_heavy_rows(rng, n=300, d=64):
    """Mostly small integer rows, plus a few whose norm products pass 2^24, where a float32 sum rounds."""
    X = _integer_rows(rng, n, d, 256)
    X[:8] = rng.integers(2000, 4000, size=(8, d))      # |x| ~ 24000: |x||y| > 2^24 with each other
    return X


def test_exact32_ok_accepts_only_integer_values_below_2_24():
    assert exact32_ok(np.array([[0.0, 255.0], [3.0, -7.0]]))
    assert not exact32_ok(np.array([[0.5, 1.0]]))
    assert not exact32_ok(np.array([[np.nan, 1.0]]))
    assert not exact32_ok(np.array([[np.inf, 1.0]]))
    assert not exact32_ok(np.array([[EXACT32_LIMIT, 1.0]]))
    assert exact32_ok(np.array([[1.0, 2.0]], dtype=np.float32))   # float32 runs on integers take it too
    assert not exact32_ok(np.array([[1.5, 2.0]], dtype=np.float32))
    assert not exact32_ok(np.zeros((0, 3)))
    assert exact32_ok(np.array([[-0.0, -(EXACT32_LIMIT - 1)]]))
    assert not exact32_ok(np.array([[-EXACT32_LIMIT, 1.0]]))


def test_exact32_in_float32_equals_the_in_order_sum_heavy_pairs_included():
    """A float32 run on integer features: the float32 GEMM's values where every partial sum is
    exact, the heavy pairs (|a||b| >= 2^24, which a float32 sum may round) recomputed in order in
    float32, so that every value is the in-order float32 sum a BLAS of any blocking would not give."""
    from perceptron_lab.engine.kernels import matmul_exact32, ordered_dots

    rng = np.random.default_rng(8)
    A = rng.integers(0, 256, size=(60, 300)).astype(np.float32)
    B = rng.integers(0, 256, size=(70, 300)).astype(np.float32)
    A[:5] = 255.0                        # |a|^2 = 300 * 255^2: heavy against most of B
    G = matmul_exact32(A, B)
    assert G.dtype == np.float32
    np.testing.assert_array_equal(G, ordered_dots(A, B))
    t = np.float32
    for i, j in ((0, 0), (3, 17), (40, 2)):
        acc = t(0.0)
        for u, v in zip(A[i], B[j]):
            acc = t(acc + t(u * v))
        assert G[i, j] == acc


@pytest.mark.parametrize("bad", [None, 0.25, np.nan, -np.inf, 2.0**24])
def test_exact32_ok_reads_every_value_of_any_layout(bad):
    rng = np.random.default_rng(4)
    X = rng.integers(-300, 300, size=(50, 40)).astype(np.float64)
    views = [X, X[:, ::3], X.T, X[::-1]]
    if bad is not None:
        X[-1, -1] = bad  # the very last value read in C order
    for V in views:
        want = bad is None
        assert exact32_ok(V) is want


def test_matmul_exact32_equals_float64_where_plain_float32_does_not():
    rng = np.random.default_rng(0)
    A, B = _with_heavy_rows(rng), _with_heavy_rows(rng)
    want = A @ B.T
    plain = (A.astype(np.float32) @ B.astype(np.float32).T).astype(np.float64)
    assert (plain != want).any()  # the heavy pairs round in float32: the fix-up is needed
    got = matmul_exact32(A, B)
    assert got.dtype == np.float64 and np.array_equal(got, want)
    out = np.empty_like(want)
    assert matmul_exact32(A, B, out=out, B32=B.astype(np.float32)) is out and np.array_equal(out, want)


def test_integer_features_accepts_float32_and_float64_integers_below_2_24():
    assert integer_features(np.array([[0.0, 255.0], [3.0, -7.0]], dtype=np.float32))
    assert integer_features(np.array([[0.0, 255.0], [3.0, -7.0]]))
    assert integer_features(np.arange(12.0, dtype=np.float32).reshape(3, 4)[:, ::2])   # any layout
    assert not integer_features(np.array([[0.5, 1.0]], dtype=np.float32))
    assert not integer_features(np.array([[np.nan, 1.0]], dtype=np.float32))
    assert not integer_features(np.array([[2.0**24, 1.0]], dtype=np.float32))
    assert not integer_features(np.array([[1, 2]], dtype=np.int64))    # not a float array: not asked
    assert not integer_features(np.zeros((0, 3), dtype=np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chunk_dots_of_integer_features_equal_the_float64_gemm(dtype):
    rng = np.random.default_rng(7)
    Xe = _with_heavy_rows(rng, n=96, d=64).astype(dtype)
    want = Xe.astype(np.float64) @ Xe.astype(np.float64).T
    plain = (Xe.astype(np.float32) @ Xe.astype(np.float32).T).astype(np.float64)
    assert (plain != want).any()   # the heavy pairs would round in a plain float32 GEMM
    got = chunk_dots(Xe, ints=True)
    assert got.dtype == np.float64 and np.array_equal(got, want)
    assert np.array_equal(chunk_dots(Xe), want)


def _in_order_tn(A, d):
    """``A.T @ d`` added over A's rows in order, one rounded product and one rounded sum per term,
    in A's type (numpy's elementwise operations round each one)."""
    P = np.zeros((A.shape[1], d.shape[1]), dtype=A.dtype)
    for k in range(A.shape[0]):
        P += A[k][:, None] * d[k][None, :]
    return P


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_add_product_adds_in_order_bit_for_bit(dtype):
    """Scores get ``S += A.T @ d`` with the product in a buffer kept by the run: each entry added
    over A's rows in order, whatever the rows of A and however much of the buffer the call uses."""
    rng = np.random.default_rng(3)
    n, L = 500, 10
    S0 = rng.normal(size=(n, L)) * 1e3
    buf = np.full((n, L), np.nan, dtype=dtype)     # stale contents must not leak into S
    for k in (1, 3, 5, 40):
        A = (rng.normal(size=(k, n)) * 1e4).astype(dtype)
        d = rng.normal(size=(k, L)).astype(dtype)
        d[:, 1::3] = 0.0
        want = S0.copy()
        want += _in_order_tn(A, d)
        got = S0.copy()
        add_product(got, A, d, buf)
        assert np.array_equal(got, want)
        want = S0.copy()
        want[200:] += _in_order_tn(A[:, 200:], d)      # a suffix of the scores (a streamed pass)
        got = S0.copy()
        add_product(got[200:], A[:, 200:], d, buf)
        assert np.array_equal(got, want)


@pytest.mark.parametrize("kernel", [Kernel("linear"), Kernel("poly", 3, 1000.0), Kernel("gaussian", sigma=3000.0)])
def test_gram_exact32_is_bit_identical(kernel):
    rng = np.random.default_rng(1)
    A, B = _with_heavy_rows(rng), _with_heavy_rows(rng)
    assert np.array_equal(gram(kernel, A, B, exact32=True), gram(kernel, A, B))


def _problem(seed=2, n=400, d=40, L=3):
    rng = np.random.default_rng(seed)
    X = _with_heavy_rows(rng, n, d)
    y = (X[:, :3].sum(1) // 100).astype(np.int64) % L
    return X, y, L


def _force_float64(monkeypatch):
    monkeypatch.setattr(kernels, "exact32_ok", lambda X: False)
    monkeypatch.setattr(predict, "exact32_ok", lambda X: False)
    import perceptron_lab.engine.perceptron as ep

    monkeypatch.setattr(ep, "exact32_ok", lambda X: False)


@pytest.mark.parametrize("kernel", [Kernel("poly", 2, 1e6), Kernel("linear")])
def test_dual_training_and_evaluation_are_unchanged(monkeypatch, kernel):
    """A float64 run (for the polynomial kernel: kernel cache, pending blocks) and its evaluation on
    integer features, heavy test rows included, give the same log and the same error counts with and
    without the float32 GEMMs (for the linear kernel: float32 kernel blocks scored directly)."""
    X, y, L = _problem()
    Xtr, ytr, Xte, yte = X[:300], y[:300], X[300:], y[300:]
    Xte = Xte.copy()
    Xte[:3] = np.random.default_rng(9).integers(2000, 4000, size=(3, Xte.shape[1]))  # heavy test rows
    assert predict.exact32_ok(Xte) and kernels.exact32_heavy_rows((Xte**2).sum(1), (Xtr**2).sum(1)).sum() >= 3
    params = PerceptronParams(eta=1.0, theta_init=0.0, C=0.0, tau_abs=0.0, lam=0.0, alpha_bound=2**62)
    order = np.random.default_rng(3).permutation(300)

    def run():
        log = train(Xtr, label_matrix(ytr, L), kernel, params, order, 3, [1, 3], chunk_size=32,
                    dtype=np.float64, form="dual" if kernel.name == "poly" else "auto", flush_at=8)
        return log, predict.evaluate(log, kernel, Xtr, Xte, yte, False, dtype=np.float64, block=37)

    log32, (em32, eb32) = run()
    scores32 = predict.decision_scores(log32, kernel, Xtr, Xte, block=37)
    _force_float64(monkeypatch)
    log64, (em64, eb64) = run()
    # every rule's score, bit for bit: one rounded inner product would show here before in a count
    assert np.array_equal(scores32, predict.decision_scores(log64, kernel, Xtr, Xte, block=37))
    assert log32.n_updates == log64.n_updates > 50
    for name in ("upd_step", "upd_ex", "upd_cls", "upd_score", "upd_theta"):
        assert np.array_equal(getattr(log32, name), getattr(log64, name)), name
    assert np.array_equal(em32, em64) and np.array_equal(eb32, eb64)


def test_a_single_pass_streams_kernel_columns_with_the_same_log():
    """One pass never reads a support vector's kernel column again: streaming the columns gives the
    same log as caching them, and needs no cache (a cache limit far too small for the run is fine)."""
    from perceptron_lab.engine.base import EngineError

    X, y, L = _problem(seed=5, n=500)
    X = X / 7.0  # not integer: the float64 GEMMs
    kernel = Kernel("poly", 3, 1e4)
    params = PerceptronParams(eta=1.0, theta_init=0.0, C=0.0, tau_abs=0.0, lam=0.0, alpha_bound=2**62)
    order = np.random.default_rng(6).permutation(500)
    Y = label_matrix(y, L)

    def run(**kw):
        return train(X, Y, kernel, params, order, 1, [0.5, 1], chunk_size=16, dtype=np.float64, form="dual",
                     flush_at=8, **kw)

    cached, streamed = run(stream=False), run(cache_limit_gb=1e-6)
    assert streamed.n_updates == cached.n_updates > 50
    for name in ("upd_step", "upd_ex", "upd_cls", "upd_score", "upd_theta", "cum_correct_cp"):
        assert np.array_equal(getattr(streamed, name), getattr(cached, name)), name
    with pytest.raises(EngineError, match="kernel cache"):
        run(stream=False, cache_limit_gb=1e-6)


def test_a_single_pass_on_integer_features_computes_only_the_columns_still_needed(monkeypatch):
    """On integer features a streamed pass computes a support vector's kernel values for the
    examples after it in the order only (a suffix of the order), with the same log as caching the
    whole columns."""
    import perceptron_lab.engine.perceptron as engine

    rng = np.random.default_rng(8)
    n, L = 700, 3
    X = rng.integers(0, 6, size=(n, 20)).astype(np.float64)
    y = (X[:, :5].sum(axis=1) + rng.integers(0, 4, n)) % L
    kernel = Kernel("poly", 3, 10.0)
    params = PerceptronParams(eta=1.0, theta_init=0.0, C=0.0, tau_abs=50.0, lam=0.0, alpha_bound=2**62)
    order = rng.permutation(n)
    widths = []
    real = engine._flush_suffix

    def spy(cols, pend_ex, pend_delta, S, b, dtype, buf):
        widths.append(S.shape[0] - b)
        return real(cols, pend_ex, pend_delta, S, b, dtype, buf)

    monkeypatch.setattr(engine, "_flush_suffix", spy)

    def run(**kw):
        return train(X, label_matrix(y, L), kernel, params, order, 1, [0.5, 1], chunk_size=32, dtype=np.float64,
                     form="dual", flush_at=16, **kw)

    streamed = run()
    assert len(widths) > 3 and widths == sorted(widths, reverse=True) and max(widths) < n
    cached = run(stream=False)
    assert streamed.n_updates == cached.n_updates > 100
    for name in ("upd_step", "upd_ex", "upd_cls", "upd_coef", "upd_score", "upd_theta", "cum_correct_cp"):
        assert np.array_equal(getattr(streamed, name), getattr(cached, name)), name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dot_rows_exact_equals_dot_rows_on_integer_features(dtype):
    """Eight running sums instead of one: the same inner products where every partial sum is an
    exact integer (integer features of norms below the limit), including products float32 rounds."""
    import numba as nb

    from perceptron_lab.engine.kernels import DOTS_EXACT_SQ_LIMIT, dot_rows, dot_rows_exact

    @nb.njit
    def both(X):
        n = X.shape[0]
        a = np.empty((n, n))
        b = np.empty((n, n))
        for i in range(n):
            for j in range(n):
                a[i, j] = dot_rows(X, i, j)
                b[i, j] = dot_rows_exact(X, i, j)
        return a, b

    rng = np.random.default_rng(11)
    for d in (1, 7, 8, 9, 784):
        X = rng.integers(-255, 256, size=(40, d)).astype(dtype)
        X[0] = rng.integers(-(2**20), 2**20, size=d)          # products that float32 rounds
        assert float(np.max(np.einsum("ij,ij->i", X.astype(np.float64), X.astype(np.float64)))) < DOTS_EXACT_SQ_LIMIT
        a, b = both(X)
        assert np.array_equal(a, b)
        assert np.array_equal(b[1:, 1:], X[1:].astype(np.float64) @ X[1:].astype(np.float64).T)


def test_training_takes_exact_dots_only_on_integer_features_with_the_same_log(monkeypatch):
    """The eight-sum loop is used for integer features only, and the run's log is the same as with
    the one-sum loop (forced by a norm limit of 0)."""
    import perceptron_lab.engine.perceptron as engine

    rng = np.random.default_rng(12)
    n, L = 400, 3
    y = rng.integers(0, L, n)
    flags = []
    real = engine._run_chunk

    def spy(chunk, *args):
        flags.append(chunk.exact_dots)
        return real(chunk, *args)

    monkeypatch.setattr(engine, "_run_chunk", spy)
    kernel = Kernel("poly", 3, 1000.0)
    params = PerceptronParams(eta=1.0, theta_init=0.0, C=0.0, tau_abs=0.0, lam=0.0, alpha_bound=2**62)
    order = rng.permutation(n)

    def run(X):
        flags.clear()
        return train(X, label_matrix(y, L), kernel, params, order, 3, [1, 3], chunk_size=32, dtype=np.float64)

    X = rng.integers(0, 30, size=(n, 20)).astype(np.float64)
    fast = run(X)
    assert set(flags) == {True} and fast.upd_ex.size > 100
    monkeypatch.setattr(engine, "DOTS_EXACT_SQ_LIMIT", 0.0)
    slow = run(X)
    assert set(flags) == {False}
    for name in ("upd_step", "upd_ex", "upd_cls", "upd_coef", "upd_score", "upd_theta", "cum_correct_cp"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    monkeypatch.setattr(engine, "DOTS_EXACT_SQ_LIMIT", 2.0**52)
    run(rng.normal(size=(n, 20)))
    assert set(flags) == {False}


def test_ordered_dots_sum_each_pair_in_feature_order_whatever_the_other_rows():
    from perceptron_lab.engine.kernels import ordered_dots

    rng = np.random.default_rng(4)
    A = rng.normal(size=(40, 120))
    A[A < 0.4] = 0.0  # zero entries are skipped: they add nothing
    B = rng.normal(size=(30, 120))
    G = ordered_dots(A, B)
    loop = np.array([[sum(float(u) * float(v) for u, v in zip(a, b)) for b in B] for a in A])
    np.testing.assert_array_equal(G, loop)
    assert (G != A @ B.T).any()  # the BLAS product rounds some of them otherwise
    np.testing.assert_array_equal(ordered_dots(A[7:9], B[[3, 11, 29]]), G[7:9][:, [3, 11, 29]])
    # a kernel block from ordered dots: each value the same in a block of other rows
    poly = gram(Kernel("poly", degree=3), A, B)
    np.testing.assert_array_equal(gram(Kernel("poly", degree=3), A[5:6], B[2:4]), poly[5:6, 2:4])
