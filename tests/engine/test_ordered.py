"""perceptron_lab.engine.ordered: every sum added term by term in index order, one rounded product
and one rounded sum per term, whatever the shapes, the rows around it and the thread count.

The references below add in that order with Python floats (float64) or numpy float32 scalars, and
share nothing with the module under test."""

import math

import numba
import numpy as np
import pytest

from perceptron_lab.engine import ordered
from perceptron_lab.engine.kernels import Kernel, gram
from tests.naive import kernel_value


def _in_order(a, b, dtype):
    """sum_k a[k] * b[k], added from k = 0 in ``dtype`` (each product and each sum rounded to it)."""
    t = np.dtype(dtype).type
    acc = t(0.0)
    for u, v in zip(a, b):
        acc = t(acc + t(t(u) * t(v)))
    return acc


def _reference_nt(A, B, dtype):
    return np.array([[_in_order(a, b, dtype) for b in B] for a in A], dtype=dtype)


def _data(rng, shape, dtype, zeros=0.2):
    X = (rng.normal(size=shape) * 10.0 ** rng.uniform(-3, 3, size=shape)).astype(dtype)
    X[rng.random(shape) < zeros] = 0.0
    return X


# shapes that leave every tail of the blocked loops: inner dimensions not a multiple of 4,
# output widths beyond one column tile, row counts beyond one row block; the last one is large
# enough for the threaded path (ordered.SERIAL_BELOW), the others run on the calling thread
SHAPES = [(1, 1, 1), (3, 5, 2), (9, 7, ordered.COLS + 3), (ordered.ROWS * 2 + 1, 13, 40), (4, 4, 4),
          (ordered.ROWS * 3 + 5, 37, ordered.COLS + 9)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,d,m", SHAPES)
def test_products_add_in_index_order(dtype, n, d, m):
    rng = np.random.default_rng(n * 100 + d * 10 + m)
    A, B = _data(rng, (n, d), dtype), _data(rng, (m, d), dtype)
    want = _reference_nt(A, B, dtype)
    np.testing.assert_array_equal(ordered.matmul_nt(A, B), want)
    np.testing.assert_array_equal(ordered.matmul(A, np.ascontiguousarray(B.T)), want)
    # A.T @ D over A's rows: the entry (j, c) adds A[k, j] * D[k, c] for k in order
    D = _data(rng, (n, 3), dtype)
    want_tn = _reference_nt(A.T, D.T, dtype)
    np.testing.assert_array_equal(ordered.matmul_tn(A, D), want_tn)
    np.testing.assert_array_equal(ordered.matvec(A, B[0]), want[:, 0])
    np.testing.assert_array_equal(ordered.vecmat(B[0], np.ascontiguousarray(A.T)), want[:, 0])
    assert ordered.vdot(A[0], B[0]) == float(want[0, 0])


def test_a_value_does_not_depend_on_the_rows_around_it_nor_on_threads():
    rng = np.random.default_rng(5)
    A, B = _data(rng, (37, 29), np.float64), _data(rng, (301, 29), np.float64)
    D = _data(rng, (301, 4), np.float64)
    whole = ordered.matmul_nt(A, B)
    np.testing.assert_array_equal(ordered.matmul_nt(A[11:12], B[[7, 300, 5]]), whole[11:12][:, [7, 300, 5]])
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = ordered.matmul_nt(A, B), ordered.matmul_tn(B, D)
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(whole, one[0])
    np.testing.assert_array_equal(ordered.matmul_tn(B, D), one[1])


def test_the_threaded_and_the_serial_loops_give_the_same_bits():
    rng = np.random.default_rng(11)
    A, B, D = _data(rng, (21, 19), np.float64), _data(rng, (19, 270), np.float64), _data(rng, (21, 3), np.float64)
    one, two = np.empty((21, 270)), np.empty((21, 270))
    ordered._matmul_serial(A, B, one)
    ordered._matmul(A, B, two)
    np.testing.assert_array_equal(one, two)
    one, two = np.empty((3, 19)), np.empty((3, 19))
    ordered._matmul_tn_serial(A, D, one)
    ordered._matmul_tn(A, D, two)
    np.testing.assert_array_equal(one, two)


def test_out_must_have_the_result_shape_and_type():
    A = np.ones((3, 4))
    with pytest.raises(ValueError, match="shape"):
        ordered.matmul_nt(A, A, out=np.empty((3, 4)))
    with pytest.raises(ValueError, match="do not multiply"):
        ordered.matmul(A, A)
    out = np.empty((3, 3))
    assert ordered.matmul_nt(A, A, out=out) is out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sq_norms_add_in_feature_order(dtype):
    rng = np.random.default_rng(2)
    X = _data(rng, (17, 23), dtype)
    np.testing.assert_array_equal(ordered.sq_norms(X), np.array([_in_order(x, x, dtype) for x in X], dtype=dtype))


def test_mean_is_the_same_in_any_order():
    rng = np.random.default_rng(4)
    v = rng.normal(size=5000) * 10.0 ** rng.uniform(-8, 8, size=5000)
    means = {ordered.mean(rng.permutation(v)) for _ in range(5)}
    assert len(means) == 1
    assert means.pop() == math.fsum(v.tolist()) / v.size
    assert ordered.mean([]) == 0.0


def test_gram_of_float_features_is_the_in_order_inner_product():
    """The linear kernel's block on non-integer features equals the naive oracle's inner product bit
    for bit (a BLAS product rounds some of them otherwise)."""
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(40, 33)), rng.normal(size=(50, 33))
    ref = np.array([[kernel_value("linear", 1, 1.0, 1.0, a, b) for b in B] for a in A])
    G = gram(Kernel("linear"), A, B)
    np.testing.assert_array_equal(G, ref)
    assert (ref != A @ B.T).any()


@numba.njit
def _exp_all(x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = ordered.exp(x[i])
    return out


def test_exp_is_within_one_unit_in_the_last_place():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-50.0, 1.0, 20000), rng.uniform(-708.0, 709.0, 5000), -rng.exponential(3.0, 5000)])
    got = _exp_all(x)
    want = np.array([math.exp(v) for v in x])
    ulps = np.abs(got - want) / np.spacing(want)
    assert ulps.max() <= 1.0
    special = np.array([0.0, -0.0, 1.0, -800.0, 800.0, -math.inf, math.inf, math.nan, -745.0, 709.7])
    got = _exp_all(special)
    assert got[0] == 1.0 and got[1] == 1.0 and got[3] == 0.0 and got[4] == math.inf
    assert got[5] == 0.0 and got[6] == math.inf and math.isnan(got[7])
    assert got[8] == math.exp(-745.0) and abs(got[9] - math.exp(709.7)) <= np.spacing(math.exp(709.7))


def _eight_lanes(a, b):
    """The order ordered.dot states: s_r over f = r (mod 8) in the whole blocks of eight, the tail
    into s_0, then ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)), in Python floats."""
    s = [0.0] * 8
    whole = len(a) // 8 * 8
    for f in range(whole):
        s[f % 8] += float(a[f]) * float(b[f])
    for f in range(whole, len(a)):
        s[0] += float(a[f]) * float(b[f])
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))


@numba.njit
def _dots(A, B):
    out = np.empty(A.shape[0])
    for i in range(A.shape[0]):
        out[i] = ordered.dot(A[i], B[i])
    return out


@pytest.mark.parametrize("d", [1, 7, 8, 9, 64, 259])
def test_dot_adds_in_its_eight_stated_lanes(d):
    rng = np.random.default_rng(d)
    A, B = _data(rng, (30, d), np.float64), _data(rng, (30, d), np.float64)
    assert _dots(A, B).tolist() == [_eight_lanes(a, b) for a, b in zip(A, B)]
