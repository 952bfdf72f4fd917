"""The intercept (bias) of a kernel perceptron, as the papers' own devices give one.

A hypothesis ``f(x) = sum_i a_i K(x_i, x)`` has no constant term unless the kernel has one. The
classic devices add one without changing an algorithm (Freund & Schapire 1999, §1, and Gentile
2001, §4, write their kernels with the constant in; Cristianini & Shawe-Taylor 2000, §2.1.1, the
augmented vector ``(x, 1)``): either a constant feature appended to every example, or, the same
in a kernel's feature space, a constant added to the kernel, ``K'(x, y) = K(x, y) + c``. The
intercept is then ``b = c sum_i a_i``, learnt by the algorithm's own update, exactly as scikit-learn's
``Perceptron(fit_intercept=True)`` learns it (its intercept is the weight of a constant feature
1, updated by the same step as the others). plab takes ``c`` in the data's units
(:func:`intercept_constant`): the average ``K(x, x)`` of the training rows, so that the model on
``s X`` is the model on ``X`` and the range guarantees of ``Kernel.range_safe`` hold (the online
classes, which cannot average a stream ahead, take ``c = 1``):

* ``linear``: a constant feature ``a`` (a power of two, ``a^2`` near the average ``|x|^2``), so
  ``K'(x, y) = x·y + a^2`` (the primal forms keep one more weight);
* ``gaussian``: ``K'(x, y) = exp(-|x - y|^2 / (2 sigma^2)) + 1``, which is the ``poly_gaussian``
  kernel of degree 1 (Gentile 2001, §4.3): the kernel the engine then computes;
* ``poly`` and ``poly_gaussian``: ``(1 + k)^d`` already holds the constant term ``1`` (its
  expansion's term of degree 0), so nothing is added, and ``fit_intercept=False`` does not take
  it away;
* ``precomputed`` (scikit-learn's Gram matrices): ``c``, the power of two nearest the diagonal's
  average, added to every given kernel value.

ALMA normalizes instances in the kernel's feature space, so its normalized instances include the
constant; the budgeted algorithms see ``K'(x, x) = K(x, x) + c`` (2 with a Gaussian kernel).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from perceptron_lab.engine.kernels import Kernel
from perceptron_lab.sparse import issparse

#: The constant c of ``K'(x, y) = K(x, y) + c`` where the kernel does not give it
#: (:func:`intercept_constant`): a Gaussian kernel's ``K(x, x)``, and the online classes' (a stream
#: does not know its average ``K(x, x)`` in advance).
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


def intercept_constant(kernel: Kernel, X) -> float:
    """How the intercept enters for training rows ``X``, in the data's own units: with the linear
    kernel the value ``a`` of the constant feature, the power of two nearest the rows' root mean
    square norm (``a^2`` about the average ``K(x, x) = |x|^2``); with a precomputed kernel the
    constant ``c`` added, the power of two nearest the average of the Gram matrix's diagonal; 1
    otherwise (a Gaussian kernel's ``K(x, x)``). A power of two keeps the sums of integer data
    exact (as without an intercept). Multiplying X by s multiplies every
    kernel value, the constant included, by s^2, so the perceptron's mistakes and predictions are
    those on X (the scale invariance :meth:`~perceptron_lab.engine.kernels.Kernel.range_safe`
    keeps), and a tiny or huge X is rescaled, or refused, whole (with a fixed 1, features near
    1e-200 would vanish beside it). On standardized features ``a^2`` is near the number of features.
    The average is taken on the rows divided by a power of two near their largest value (exact),
    so that it neither overflows nor underflows where ``a`` itself is a float64 number. Rows of
    zeros only: 1. Rows whose squared norms span more than float64 holds are refused
    (:class:`~perceptron_lab.errors.NumericError`, from ``Kernel.range_safe``), as without an
    intercept."""
    if kernel.name not in ("linear", "precomputed"):
        return INTERCEPT_CONSTANT
    # the rows as given must fit float64's range on their own (NumericError otherwise): beside the
    # constant, rows whose norms span more than float64 holds would lose their small values unseen
    kernel.range_safe(X, np.float64)
    if kernel.name == "precomputed":
        v = np.diagonal(np.asarray(X, dtype=np.float64))
    elif issparse(X):
        v = np.asarray(X.data, dtype=np.float64)
    else:
        v = np.asarray(X, dtype=np.float64)
    top = float(np.max(np.abs(v))) if v.size else 0.0
    if not (top > 0.0 and math.isfinite(top)):
        return INTERCEPT_CONSTANT
    e = math.frexp(top)[1]
    if kernel.name == "precomputed":
        return _power_of_two(float(np.mean(np.ldexp(v, -e))), e)
    rows = X.shape[0]
    with np.errstate(under="ignore"):
        total = float(np.sum(np.square(np.ldexp(v, -e))))   # every scaled value is at most 1
    return _power_of_two(math.sqrt(total / max(rows, 1)), e) if total > 0.0 else INTERCEPT_CONSTANT


def _power_of_two(m: float, e: int) -> float:
    """The power of two nearest ``m * 2^e`` (on a log scale): a constant that keeps integer data's
    sums exact and is multiplied exactly when the data are multiplied by a power of two."""
    f, k = math.frexp(m)
    return math.ldexp(1.0, e + (k if f >= math.sqrt(0.5) else k - 1))


def add_constant_feature(X, value: float = 1.0):
    """``X`` with a last column of ``value`` (dense or CSR, as given)."""
    if issparse(X):
        import scipy.sparse as sp

        col = sp.csr_matrix(np.full((X.shape[0], 1), value, dtype=X.dtype))
        return sp.hstack([X, col], format="csr")
    X = np.asarray(X)
    return np.concatenate([X, np.full((X.shape[0], 1), value, dtype=X.dtype)], axis=1)


def with_intercept(kernel: Kernel, fit_intercept: bool, *Xs, constant: float | None = None):
    """(the kernel of :func:`intercept_kernel`, then each of ``Xs`` as that kernel takes them):
    with the linear kernel a constant feature ``a`` appended, so that ``K'(x, y) = x.y + a^2``;
    with a precomputed one ``c`` added to every given value (fit's Gram matrix and predict's rows
    alike); ``a`` or ``c`` is ``constant``, or :func:`intercept_constant` of the first of ``Xs``
    (the training rows). ``None`` in ``Xs`` stays None."""
    if fit_intercept and constant is None and Xs and Xs[0] is not None:
        constant = intercept_constant(kernel, Xs[0])
    c = INTERCEPT_CONSTANT if constant is None else float(constant)
    out = []
    for X in Xs:
        if X is None or not fit_intercept:
            out.append(X)
        elif kernel.name == "precomputed":
            out.append(np.asarray(X) + c)
        elif needs_feature(kernel, fit_intercept):
            out.append(add_constant_feature(X, c))
        else:
            out.append(X)
    return (intercept_kernel(kernel, fit_intercept), *out)


__all__ = ["INTERCEPT_CONSTANT", "KERNELS_WITH_CONSTANT", "add_constant_feature", "intercept_constant",
           "intercept_kernel", "needs_feature", "with_intercept"]
