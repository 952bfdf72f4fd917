"""The intercept (bias) of a kernel perceptron, as the papers' own devices give one.

A hypothesis ``f(x) = sum_i a_i K(x_i, x)`` has no constant term unless the kernel has one. The
classic devices add one without changing an algorithm (Freund & Schapire 1999, §1, and Gentile
2001, §4, write their kernels with the constant in; Cristianini & Shawe-Taylor 2000, §2.1.1, the
augmented vector ``(x, 1)``): either a constant feature appended to every example, or, the same
in a kernel's feature space, a constant added to the kernel, ``K'(x, y) = K(x, y) + c``. The
intercept is then ``b = c sum_i a_i``, learnt by the algorithm's own update, exactly as scikit-learn's
``Perceptron(fit_intercept=True)`` learns it (its intercept is the weight of a constant feature
1, updated by the same step as the others). plab takes ``c = 1``:

* ``linear``: the constant feature 1, so ``K'(x, y) = x·y + 1`` (the primal forms keep one more
  weight);
* ``gaussian``: ``K'(x, y) = exp(-|x - y|^2 / (2 sigma^2)) + 1``, which is the ``poly_gaussian``
  kernel of degree 1 (Gentile 2001, §4.3): the kernel the engine then computes;
* ``poly`` and ``poly_gaussian``: ``(1 + k)^d`` already holds the constant term ``1`` (its
  expansion's term of degree 0), so nothing is added, and ``fit_intercept=False`` does not take
  it away;
* ``precomputed`` (scikit-learn's Gram matrices): 1 added to every given kernel value.

ALMA normalizes instances in the kernel's feature space, so its normalized instances include the
constant; the budgeted algorithms see ``K'(x, x) = K(x, x) + 1`` (2 with a Gaussian kernel).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from perceptron_lab.engine.kernels import Kernel
from perceptron_lab.sparse import issparse

#: The constant c of ``K'(x, y) = K(x, y) + c`` (the value of the constant feature, squared).
INTERCEPT_CONSTANT = 1.0
#: Kernels whose values hold a constant term of their own (the 1 of ``(1 + k)^d``).
KERNELS_WITH_CONSTANT = ("poly", "poly_gaussian")


def intercept_kernel(kernel: Kernel, fit_intercept: bool) -> Kernel:
    """The kernel a run with ``fit_intercept`` computes: a Gaussian kernel becomes ``K + 1`` (the
    ``poly_gaussian`` kernel of degree 1); every other kernel is returned as given (the linear one
    takes its constant as a feature, :func:`needs_feature`)."""
    if fit_intercept and kernel.name == "gaussian":
        return dataclasses.replace(kernel, name="poly_gaussian", degree=1)
    return kernel


def needs_feature(kernel: Kernel, fit_intercept: bool) -> bool:
    """Whether the intercept is a constant feature appended to the examples (the linear kernel)."""
    return bool(fit_intercept) and kernel.name == "linear"


def add_constant_feature(X):
    """``X`` with a last column of ones (dense or CSR, as given)."""
    if issparse(X):
        import scipy.sparse as sp

        ones = sp.csr_matrix(np.ones((X.shape[0], 1), dtype=X.dtype))
        return sp.hstack([X, ones], format="csr")
    X = np.asarray(X)
    return np.concatenate([X, np.ones((X.shape[0], 1), dtype=X.dtype)], axis=1)


def with_intercept(kernel: Kernel, fit_intercept: bool, *Xs):
    """(the kernel of :func:`intercept_kernel`, then each of ``Xs`` with the constant feature where
    the kernel takes one as a feature, :func:`needs_feature`). A ``precomputed`` kernel takes its
    constant in the given values: 1 is added to each (fit's Gram matrix and predict's rows alike).
    ``None`` in ``Xs`` stays None."""
    out = []
    for X in Xs:
        if X is None or not fit_intercept:
            out.append(X)
        elif kernel.name == "precomputed":
            out.append(np.asarray(X) + INTERCEPT_CONSTANT)
        elif needs_feature(kernel, fit_intercept):
            out.append(add_constant_feature(X))
        else:
            out.append(X)
    return (intercept_kernel(kernel, fit_intercept), *out)


__all__ = ["INTERCEPT_CONSTANT", "KERNELS_WITH_CONSTANT", "add_constant_feature", "intercept_kernel",
           "needs_feature", "with_intercept"]
