"""Sums of products in one fixed order: the same bits on every x86-64 CPU and at every thread count.

A perceptron's trajectory follows the sign of ``y (score - theta) - tau``; one rounding at a
near-zero margin flips an update and every later step. A BLAS product picks its kernel, blocking
and order of summation by CPU and thread count, and a compiler allowed to reassociate a sum
(numba's ``fastmath``) vectorizes it in 4 lanes on an AVX2 CPU and in 8 on an AVX-512 one; either
moves the last bits of a score with the machine. Every sum that feeds a training decision or a
prediction is therefore computed here, by one rule:

    **a sum of products is added term by term, in increasing order of its index, one multiplication
    and one addition per term, each rounded** (no fused multiply-add, no reassociation);

the one variation is :func:`dot`, the inner product of a single pair inside the per-example loops,
which adds in eight interleaved partial sums combined in a stated order: as fixed, and not waiting
on each addition.

The loops below are compiled without ``fastmath``, so LLVM may neither reorder a sum nor contract
``a * b + c`` into an FMA; it still vectorizes them across *independent* sums (the entries of a
product's row), which changes no rounding. Parallel loops share out whole entries, never the terms
of one. The value of an entry depends on its two rows alone, not on the shapes around them (a BLAS
product's can), so a block computed against other rows, or a row computed on its own, is the same.

The plain loops of ``tests/naive.py`` add in the first order too, so a kernel block matches them bit
for bit on any features, not only on integers. (A term with a zero factor adds a signed zero, which changes
no value: features and coefficients are finite, the loaders refuse NaN and inf.)

Exact integer products (integer features whose partial sums stay below 2^24 or 2^53) are the same
in every order; :func:`perceptron_lab.engine.kernels.matmul_exact32` computes those by float32 GEMM.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

#: Columns of a product computed per pass over the inner dimension (a tile of the output rows,
#: ``ROWS x COLS`` values, stays in the first-level cache while the inner dimension streams by).
COLS = 256
#: Rows of ``A`` sharing one pass over a tile of ``B``'s columns.
ROWS = 8


@nb.njit(cache=True, inline="always")
def dot(a, b):
    """``sum_f a[f] * b[f]`` for one pair of vectors, in eight interleaved partial sums: ``s_r``
    adds the terms ``f = r, r + 8, r + 16, ...`` of the whole blocks of eight in increasing ``f``,
    the remaining terms go to ``s_0`` in order, and the sum is ``((s0 + s1) + (s2 + s3)) + ((s4 +
    s5) + (s6 + s7))``. A fixed order like the others (the per-example loops compute one inner
    product at a time, and a single running sum would wait on each addition's latency); the value
    can differ in its last bits from :func:`matmul`'s, which adds each entry term by term."""
    F = a.shape[0]
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    f = 0
    while f + 8 <= F:
        s0 += a[f] * b[f]
        s1 += a[f + 1] * b[f + 1]
        s2 += a[f + 2] * b[f + 2]
        s3 += a[f + 3] * b[f + 3]
        s4 += a[f + 4] * b[f + 4]
        s5 += a[f + 5] * b[f + 5]
        s6 += a[f + 6] * b[f + 6]
        s7 += a[f + 7] * b[f + 7]
        f += 8
    while f < F:
        s0 += a[f] * b[f]
        f += 1
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


@nb.njit(cache=True, inline="always")
def _axpy(a, x, y):
    """``y += a x`` (views of equal length: a loop from 0 that the compiler vectorizes)."""
    for j in range(y.shape[0]):
        y[j] += a * x[j]


@nb.njit(cache=True, inline="always")
def _axpy4(a0, a1, a2, a3, x0, x1, x2, x3, y):
    """``y += a0 x0``, then ``+= a1 x1``, ``+= a2 x2``, ``+= a3 x3``: four terms added in that
    order, in one pass over ``y`` (the same roundings as four passes)."""
    for j in range(y.shape[0]):
        y[j] = (((y[j] + a0 * x0[j]) + a1 * x1[j]) + a2 * x2[j]) + a3 * x3[j]


@nb.njit(cache=True, parallel=True)
def _matmul(A, B, out):
    """``out = A @ B`` (``A``: n x d, ``B``: d x m, C-contiguous), each entry added over k in
    increasing order; rows of A are shared out in blocks of :data:`ROWS`."""
    n, d = A.shape
    m = B.shape[1]
    nblocks = (n + ROWS - 1) // ROWS
    for blk in nb.prange(nblocks):
        i0 = blk * ROWS
        i1 = min(n, i0 + ROWS)
        for j0 in range(0, m, COLS):
            j1 = min(m, j0 + COLS)
            for i in range(i0, i1):
                out[i, j0:j1] = 0.0
            k = 0
            while k + 4 <= d:
                b0, b1, b2, b3 = B[k, j0:j1], B[k + 1, j0:j1], B[k + 2, j0:j1], B[k + 3, j0:j1]
                for i in range(i0, i1):
                    _axpy4(A[i, k], A[i, k + 1], A[i, k + 2], A[i, k + 3], b0, b1, b2, b3, out[i, j0:j1])
                k += 4
            while k < d:
                b = B[k, j0:j1]
                for i in range(i0, i1):
                    _axpy(A[i, k], b, out[i, j0:j1])
                k += 1


@nb.njit(cache=True, parallel=True)
def _matmul_tn(A, D, out):
    """``out = A.T @ D`` (``A``: K x n, ``D``: K x L, C-contiguous; ``out``: L x n, the result
    transposed), each entry added over k in increasing order; columns of A are shared out in tiles
    of :data:`COLS`."""
    K, n = A.shape
    L = D.shape[1]
    ntiles = (n + COLS - 1) // COLS
    for t in nb.prange(ntiles):
        j0 = t * COLS
        j1 = min(n, j0 + COLS)
        for c in range(L):
            out[c, j0:j1] = 0.0
        k = 0
        while k + 4 <= K:
            a0, a1, a2, a3 = A[k, j0:j1], A[k + 1, j0:j1], A[k + 2, j0:j1], A[k + 3, j0:j1]
            for c in range(L):
                _axpy4(D[k, c], D[k + 1, c], D[k + 2, c], D[k + 3, c], a0, a1, a2, a3, out[c, j0:j1])
            k += 4
        while k < K:
            a = A[k, j0:j1]
            for c in range(L):
                _axpy(D[k, c], a, out[c, j0:j1])
            k += 1


def _out(out, shape, dtype):
    if out is None:
        return np.empty(shape, dtype=dtype)
    if out.shape != shape or out.dtype != dtype or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous {np.dtype(dtype).name} array of shape {shape}, "
                         f"got {out.dtype} {out.shape}")
    return out


#: Below this many multiply-adds a product runs on the calling thread: starting numba's threads
#: costs more than such a product (an online step computes several a few rows wide). Each entry
#: is added in the same order on either path, so the bits do not depend on it.
SERIAL_BELOW = 1 << 16

# the same loops compiled without threads (``prange`` is ``range`` there)
_matmul_serial = nb.njit(cache=True)(_matmul.py_func)
_matmul_tn_serial = nb.njit(cache=True)(_matmul_tn.py_func)


def matmul(A, B, out=None) -> np.ndarray:
    """``A @ B`` in A's float type, every entry added over the inner index in increasing order
    (module docstring). ``out``: a C-contiguous array of the result's shape and type."""
    A = np.ascontiguousarray(A)
    B = np.ascontiguousarray(B, dtype=A.dtype)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"shapes {A.shape} and {B.shape} do not multiply")
    out = _out(out, (A.shape[0], B.shape[1]), A.dtype)
    if out.size:
        (_matmul_serial if A.size * B.shape[1] < SERIAL_BELOW else _matmul)(A, B, out)
    return out


def matmul_nt(A, B, out=None, BT=None) -> np.ndarray:
    """``A @ B.T`` (the inner products of A's rows with B's), as :func:`matmul`. ``BT``: B's
    transpose as a C-contiguous array, when the caller keeps one (a run multiplies by all of its
    training set many times; a fresh transpose per call would copy it each time)."""
    return matmul(A, np.asarray(B).T if BT is None else BT, out=out)


def matmul_tn(A, D, out=None) -> np.ndarray:
    """``A.T @ D`` in A's float type, every entry added over A's rows in increasing order; no
    transposed copy of A is made (A: the kernel columns of a few support vectors against every
    example, D: their coefficients per label)."""
    A = np.ascontiguousarray(A)
    D = np.ascontiguousarray(D, dtype=A.dtype)
    if A.ndim != 2 or D.ndim != 2 or A.shape[0] != D.shape[0]:
        raise ValueError(f"shapes {A.shape}.T and {D.shape} do not multiply")
    out = _out(out, (A.shape[1], D.shape[1]), A.dtype)
    if out.size:
        outT = np.empty((D.shape[1], A.shape[1]), dtype=A.dtype)
        (_matmul_tn_serial if A.size * D.shape[1] < SERIAL_BELOW else _matmul_tn)(A, D, outT)
        out[...] = outT.T
    return out


def matvec(A, v) -> np.ndarray:
    """``A @ v`` for a vector ``v``, as :func:`matmul`."""
    return matmul(A, np.asarray(v).reshape(-1, 1))[:, 0]


def vecmat(v, A) -> np.ndarray:
    """``v @ A`` for a vector ``v`` (a weighted sum of A's rows, added in row order), as :func:`matmul`."""
    return matmul(np.asarray(v).reshape(1, -1), A)[0]


def vdot(a, b) -> float:
    """``a @ b`` for two vectors, added in index order."""
    return float(matmul(np.asarray(a).reshape(1, -1), np.asarray(b).reshape(-1, 1))[0, 0])


def times(X, B) -> np.ndarray:
    """``X @ B`` for dense ``B`` and ``X`` dense (:func:`matmul`) or sparse (scipy's product, which
    adds each row's stored values in their order, one term at a time, on any machine)."""
    from perceptron_lab.sparse import issparse
    if issparse(X):
        return np.asarray(X @ B)
    return matmul(X, B)


@nb.njit(cache=True)
def _sq_norms(X, out):
    for i in range(X.shape[0]):
        x = X[i]
        out[i] = 0.0    # the sum is kept in X's float type (out's)
        for f in range(x.shape[0]):
            out[i] += x[f] * x[f]


def sq_norms(X) -> np.ndarray:
    """``|x|^2`` of each row of the dense 2-D ``X``, in X's float type, added in feature order."""
    X = np.ascontiguousarray(X)
    if X.dtype.kind != "f":
        X = X.astype(np.float64)
    out = np.empty(X.shape[0], dtype=X.dtype)
    if X.size:
        _sq_norms(X, out)
    else:
        out[:] = 0
    return out


def mean(v) -> float:
    """The mean of the values ``v``, from their correctly rounded sum (``math.fsum``): the same
    in any order of the values."""
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    return math.fsum(v.tolist()) / v.size if v.size else 0.0


__all__ = ["COLS", "ROWS", "dot", "matmul", "matmul_nt", "matmul_tn", "matvec", "mean", "sq_norms", "times", "vdot",
           "vecmat", "exp", "exp_array"]


# ----------------------------------------------------------------------------- exp

#: ln 2 split in two (fdlibm's): the high part has 21 trailing zero bits, so ``k * _LN2_HI`` is exact
#: for every |k| < 2^21, and ``x - k ln 2`` is reduced without cancellation error.
_LN2_HI = float.fromhex("0x1.62e42feep-1")
_LN2_LO = float.fromhex("0x1.a39ef35793c76p-33")
_INV_LN2 = float.fromhex("0x1.71547652b82fep0")
#: 1/k! for k = 2 .. 13, each a correctly rounded quotient (the same constants on every machine).
_C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9, _C10, _C11, _C12, _C13 = (1.0 / math.factorial(k) for k in range(2, 14))


@nb.njit(cache=True, inline="always")
def exp(x):
    """``e^x`` computed by fixed operations (no call to the C library, whose ``exp`` is built with
    fused multiply-adds on some CPUs and without on others, and differs between libraries): the
    same bits on every machine, within about one unit in the last place of the true value.

    ``x = k ln 2 + r`` with ``|r| <= ln 2 / 2`` (Cody and Waite's reduction in two parts); ``e^r``
    by its Taylor polynomial of degree 13 in Horner's form (the first term left out is below
    2^-60 relative); ``e^x = 2^k e^r`` by ``ldexp`` (one rounding, also into the subnormals)."""
    if x != x:
        return x
    if x > 709.782712893384:
        return math.inf
    if x < -745.1332191019412:
        return 0.0
    k = math.floor(x * _INV_LN2 + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = _C13
    p = _C12 + r * p
    p = _C11 + r * p
    p = _C10 + r * p
    p = _C9 + r * p
    p = _C8 + r * p
    p = _C7 + r * p
    p = _C6 + r * p
    p = _C5 + r * p
    p = _C4 + r * p
    p = _C3 + r * p
    p = _C2 + r * p
    p = 1.0 + r * p
    p = 1.0 + r * p
    return math.ldexp(p, int(k))


@nb.njit(cache=True)
def _exp_into(x, out):
    for i in range(x.shape[0]):
        out[i] = exp(x[i])


def exp_array(x) -> np.ndarray:
    """:func:`exp` of every value of ``x`` (float64), the same bits on every machine (numpy's own
    exp is a vectorized approximation on AVX-512 CPUs and the C library's elsewhere)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty(x.size)
    _exp_into(np.ascontiguousarray(x).reshape(-1), out)
    return out.reshape(x.shape)
