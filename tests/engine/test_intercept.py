"""engine/intercept.py: the intercept as a constant feature or a constant added to the kernel, with
kernel values computed here by hand (numpy), never by the engine's own code."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from perceptron_lab.engine.intercept import (add_constant_feature, intercept_constant, intercept_kernel, needs_feature,
                                             with_intercept)
from perceptron_lab.engine.kernels import Kernel, gram
from perceptron_lab.errors import NumericError


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(7, 3)), rng.normal(size=(4, 3))


def test_linear_takes_a_constant_feature_a_power_of_two_near_the_rms_norm():
    X, T = _data()
    kernel, Xi, Ti = with_intercept(Kernel("linear"), True, X, T)
    rms = float(np.sqrt(np.mean(np.sum(X * X, axis=1))))      # the training rows' root mean square norm
    a = 2.0 ** np.round(np.log2(rms))                           # the power of two nearest it
    assert kernel == Kernel("linear") and needs_feature(Kernel("linear"), True)
    assert Xi.shape == (7, 4) and np.array_equal(Xi[:, :3], X) and np.all(Xi[:, -1] == a)
    np.testing.assert_allclose(gram(kernel, Ti, Xi), T @ X.T + a * a, rtol=1e-12)
    # in the data's units: X * 2^k gives the constant times 2^k exactly
    assert intercept_constant(Kernel("linear"), np.ldexp(X, -900)) == np.ldexp(Xi[0, -1], -900)
    assert intercept_constant(Kernel("linear"), np.ldexp(X, 900)) == np.ldexp(Xi[0, -1], 900)


def test_rows_beyond_float64s_spread_are_refused_before_a_constant_hides_them():
    X = np.array([[1e-300, 0.0], [0.0, 1e300]])
    with pytest.raises(NumericError, match="spread"):
        with_intercept(Kernel("linear"), True, X)


def test_sparse_rows_take_the_constant_feature_too():
    X, _ = _data(1)
    Xi = add_constant_feature(sp.csr_matrix(X))
    assert sp.issparse(Xi) and Xi.format == "csr"
    np.testing.assert_array_equal(Xi.toarray(), np.hstack([X, np.ones((7, 1))]))


def test_gaussian_becomes_the_kernel_plus_one():
    X, T = _data(2)
    kernel, Xi, Ti = with_intercept(Kernel("gaussian", sigma=1.5), True, X, T)
    assert Xi is X and Ti is T  # the constant is in the kernel, not in the features
    d2 = ((T[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    np.testing.assert_allclose(gram(kernel, T, X), np.exp(-d2 / (2 * 1.5 ** 2)) + 1.0, rtol=1e-12)


def test_kernels_with_a_constant_term_of_their_own_are_left_as_they_are():
    X, T = _data(3)
    for k in (Kernel("poly", degree=3, scale=2.0), Kernel("poly_gaussian", degree=2, sigma=1.0)):
        for fit in (True, False):
            kernel, Xi, Ti = with_intercept(k, fit, X, T)
            assert kernel == k and Xi is X and Ti is T
    # and (1 + x.y/s)^d does hold the constant 1: its value at x.y = 0
    assert gram(Kernel("poly", degree=3, scale=2.0), np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]))[0, 0] == 1.0


def test_precomputed_values_get_one_added_and_nothing_without_an_intercept():
    G = np.array([[4.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 1.0, 3.0]])
    assert np.array_equal(with_intercept(Kernel("precomputed"), True, G)[1], G + 4.0)   # diagonal mean 3: 2^2
    X, _ = _data(4)
    for k in (Kernel("linear"), Kernel("gaussian"), Kernel("precomputed")):
        kernel, Xi = with_intercept(k, False, X)
        assert kernel == k and Xi is X
    assert intercept_kernel(Kernel("gaussian"), False) == Kernel("gaussian")
