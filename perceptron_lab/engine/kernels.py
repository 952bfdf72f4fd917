"""Kernel functions and block Gram matrices.

Names are resolved to integer codes once, before any hot loop (as pynndescent and
scikit-learn do): the jitted code never sees a string.

Kernels (x, y are rows of the data matrix after preprocessing):

* ``linear``         K(x, y) = x·y
* ``poly``           K(x, y) = (1 + x·y / s)^d          (Freund & Schapire 1999, Eq. 1, with scale s)
* ``gaussian``       K(x, y) = exp(-|x - y|² / (2σ²))
* ``poly_gaussian``  K(x, y) = (1 + exp(-|x - y|² / (2σ²)))^d   (Gentile 2001, §4.3)
* ``precomputed``    the kernel values are given (scikit-learn's ``kernel="precomputed"``, used by
                     :mod:`perceptron_lab.estimators.perceptron` only, never in configs): the training "features"
                     are the square Gram matrix K(train, train) and a test row holds K(x, train); the
                     engine takes the whole Gram matrix as its kernel cache

Gram blocks are computed as one BLAS matrix product plus an elementwise transform, so the
expensive part runs at GEMM speed on all cores.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from perceptron_lab.engine import ordered
from perceptron_lab.engine.ordered import dot as fixed_dot
from perceptron_lab.engine.ordered import exp as fixed_exp
from perceptron_lab.errors import NumericError
from perceptron_lab.sparse import issparse

LINEAR, POLY, GAUSSIAN, POLY_GAUSSIAN = 0, 1, 2, 3
PARALLEL_MIN_ELEMENTS = 4_000_000  # kernel blocks smaller than this are transformed on one thread
KERNEL_CODES = {"linear": LINEAR, "poly": POLY, "gaussian": GAUSSIAN, "poly_gaussian": POLY_GAUSSIAN}
#: Given kernel values (not a config kernel: absent from KERNEL_CODES); see the module docstring.
PRECOMPUTED = 4


@dataclass(frozen=True)
class Kernel:
    """A resolved kernel: integer code plus its parameters."""

    name: str = "linear"
    degree: int = 1
    scale: float = 1.0
    sigma: float = 1.0
    base_div: float = 1.0  # internal: polynomial base divided by this (see range_safe)
    feature_exp: int = 0  # internal: the features are multiplied by 2^feature_exp (see range_safe)

    @property
    def code(self) -> int:
        return PRECOMPUTED if self.name == "precomputed" else KERNEL_CODES[self.name]

    @property
    def uses_norms(self) -> bool:
        return self.code in (GAUSSIAN, POLY_GAUSSIAN)

    @classmethod
    def named(cls, name: str, degree=1, scale=1.0, sigma=None) -> "Kernel":
        """The kernel ``name`` (one of :data:`KERNEL_CODES`) with its settings; ``sigma`` None
        (a kernel without a width) is 1. An unknown name is a ValueError."""
        if name not in KERNEL_CODES:
            raise ValueError(f"unknown kernel {name!r}; expected one of {sorted(KERNEL_CODES)}")
        return cls(name, int(degree), float(scale), 1.0 if sigma is None else float(sigma))

    def params(self):
        """The tuple passed to jitted code: (code, degree, scale, sigma, base_div)."""
        return self.code, self.degree, float(self.scale), float(self.sigma), float(self.base_div)

    def range_safe(self, X, dtype, rescale_values: bool = True, unit_diag: bool = False) -> "Kernel":
        """The same kernel, checked against the training rows ``X`` for the range of ``dtype`` in
        both directions, and if need be made to work on features multiplied by a power of two.

        The values the engine computes are the squared norms and inner products of the rows (in
        ``dtype``), the kernel values and their sums over updates. Too large, they overflow; too
        small, they underflow to zero (features near 1e-200: every inner product is 0 and every
        example a mistake). So the squared norms must lie between ``tiny / eps`` of ``dtype``
        (full precision) and ``max / 4`` (``max / (4 n^2)`` for the linear kernel, whose values
        are summed over up to n updates and n steps). When they do not, but their spread fits,
        the features are multiplied by ``2^e`` (:attr:`feature_exp`; exact, a power of two), and

        * ``poly``: ``scale`` by ``2^(2e)``, ``gaussian``/``poly_gaussian``: ``sigma`` by ``2^e``,
          so that every kernel value is the one the unscaled features give, bit for bit;
        * ``linear`` (``precomputed``: the Gram matrix by ``2^e``): the kernel values are
          multiplied by ``2^(2e)`` (``2^e``). The perceptron's mistakes, votes and argmax do not
          change when the kernel is multiplied by a positive constant (thresholds given as numbers
          are rescaled by :attr:`value_factor`; ``tau`` and ``avg_sq_norm`` are in units of the
          average K(x, x)), and ALMA normalizes instances. The budgeted algorithms depend on the
          kernel's scale: pass ``rescale_values=False`` and such a case is refused instead.

        The caller multiplies every feature matrix by :meth:`features`; :meth:`rescale_note`
        says what was done. A spread of norms wider than ``dtype`` holds is refused with a
        :class:`NumericError` (fix: ``dataset.preprocess: unit_norm``).

        Polynomial kernels on raw pixels overflow float32 ((1 + x·y)^6 reaches 1e46 on MNIST).
        In float32 the base is divided by c = max_i (1 + |x_i|^2 / s), which keeps every
        |K(x, y)| <= 1 (Cauchy-Schwarz); the kernel is then multiplied by the constant
        :attr:`value_factor`.

        Every other case is checked and left unchanged, or refused with a :class:`NumericError`
        that says what to change: the largest kernel value on the training rows (c^d for poly,
        2^d for poly_gaussian, max |x|^2 for linear), times n^2, must stay below the largest
        ``dtype`` number; a kernel that is constant in ``dtype`` (a Gaussian sigma far above the
        distances between examples, a poly scale far above |x|^2) or the identity (a Gaussian
        sigma far below them) is refused too: its predictions would not be the kernel's.
        ``unit_diag``: the caller divides a poly kernel so that its largest K(x, x) is 1 (the
        budgeted runs), so the poly kernel's overflow checks do not apply.
        """
        if X.shape[0] == 0:
            return self
        dt = np.dtype(dtype)
        X = as_csr(X) if issparse(X) else np.asarray(X)
        if not np.isfinite(_values(X)).all():
            if self.code == PRECOMPUTED:
                raise NumericError(f"precomputed kernel: the Gram matrix has values that are not finite in "
                                   f"{dt.name}; scale it down")
            raise NumericError(f"{self.describe()} kernel: the features hold values that are not finite "
                               "(NaN or inf); check the data")
        kernel = self._fit_range(X, dt, rescale_values)
        return kernel._checked(kernel.features(X), dt, unit_diag)

    def _fit_range(self, X, dt, rescale_values: bool) -> "Kernel":
        """This kernel, or its twin on features multiplied by a power of two (see :meth:`range_safe`)."""
        log2_max, log2_tiny, mant = _RANGE[dt.type]
        sums = self.code in (LINEAR, PRECOMPUTED)
        hi = log2_max - 2.0 - (2.0 * math.log2(max(X.shape[0], 2)) if sums else 0.0)
        lo = log2_tiny + mant
        r = _log2_range(X, diagonal=self.code == PRECOMPUTED)
        if r is None:
            return self
        l_min, l_max = r
        if lo <= l_min and l_max <= hi:
            return self
        what = f"{self.describe()} kernel in {dt.name}"
        name = "the Gram matrix's diagonal K(x, x)" if self.code == PRECOMPUTED else "squared feature norms |x|^2"
        seen = f"{name} range from {_pow2_text(l_min)} to {_pow2_text(l_max)}"
        fix = ("Fix: multiply the Gram matrix by a constant" if self.code == PRECOMPUTED else
               "Fix: set dataset.preprocess: unit_norm (or standardize)")
        if l_max - l_min > hi - lo:
            raise NumericError(f"{what}: {seen}, a spread wider than {dt.name} holds in one kernel (from "
                               f"{_pow2_text(lo)} to {_pow2_text(hi)}), so some kernel values would underflow or "
                               f"overflow. {fix}")
        if sums and not rescale_values:
            raise NumericError(f"{what}: {seen}, outside {dt.name}'s range ({_pow2_text(lo)} to {_pow2_text(hi)}), "
                               f"and this algorithm depends on the kernel's scale, so plab cannot rescale them. {fix}")
        # the values' exponent: the largest to about 2^0 (or the smallest to lo when that is higher)
        per = 1 if self.code == PRECOMPUTED else 2
        e = int(round(-l_max / per))
        e = max(e, int(math.ceil((lo - l_min) / per)))
        e = min(e, int(math.floor((hi - l_max) / per)))
        with np.errstate(over="ignore", under="ignore"):
            Xv = _values(X)
            Xe = np.ldexp(np.asarray(Xv, dtype=np.float64), e)
            exact = bool(np.array_equal(np.ldexp(Xe, -e), Xv))
        if not exact:
            raise NumericError(f"{what}: {seen}, outside {dt.name}'s range, and multiplying them by 2^{e} would "
                               f"round some values (they span more than {dt.name} holds). {fix}")
        scale, sigma = self.scale, self.sigma
        with np.errstate(over="ignore", under="ignore"):
            if self.code == POLY:
                scale = float(np.ldexp(self.scale, 2 * e))
            elif self.uses_norms:
                sigma = float(np.ldexp(self.sigma, e))
        for v, key in ((scale, "kernel.scale"), (sigma, "kernel.sigma")):
            if not (math.isfinite(v) and v >= float(np.finfo(np.float64).tiny)):
                kind = "constant" if v == math.inf else "the identity or overflows"
                typical = _typical_text(self, l_min, l_max)
                fix = (f"Fix: set {key} near {typical} (the size of the data)" if float(typical) > 0 and
                       math.isfinite(float(typical)) else
                       f"Fix: set dataset.preprocess: standardize (or unit_norm), with a {key} for features near 1")
                raise NumericError(
                    f"{what}: {seen}, and {key} = {getattr(self, key.split('.')[1]):g} is so far from them that the "
                    f"kernel is {kind} in {dt.name}. {fix}")
        return dataclasses.replace(self, scale=scale, sigma=sigma, feature_exp=self.feature_exp + e)

    def _checked(self, X, dt, unit_diag: bool = False) -> "Kernel":
        """The overflow and degeneracy checks of :meth:`range_safe` on features ``X`` in range."""
        if self.code == PRECOMPUTED:
            if float(np.max(np.abs(X))) > float(np.finfo(dt).max) / 4:
                raise NumericError(f"precomputed kernel: the Gram matrix has values that are not finite in "
                                   f"{dt.name}; scale it down")
            return self
        fmax = float(np.finfo(dt).max)
        log_max = math.log10(fmax)
        headroom = 2.0 * math.log10(max(X.shape[0], 2))  # sums over up to n updates, then over n steps
        with np.errstate(over="ignore", invalid="ignore"):
            norms = sq_norms64(X)
        sq, sq_min = float(np.max(norms)), float(np.min(norms))
        what = f"{self.describe()} kernel in {dt.name}"
        more = "training.dtype: float64, or " if dt != np.float64 else ""
        if not math.isfinite(sq) or sq > fmax / 4:
            raise NumericError(
                f"{what}: squared feature norms reach {self._user_sq(sq):.3g}, beyond the {dt.name} range "
                f"({fmax:.3g}); kernel values would overflow. Fix: set {more}dataset.preprocess: "
                "standardize (or minmax, unit_norm)")
        if self.code == LINEAR:
            if math.log10(max(sq, 1.0)) + headroom > log_max:
                raise NumericError(
                    f"{what}: |x|^2 reaches {self._user_sq(sq):.3g}; scores summed over {X.shape[0]} examples could "
                    f"exceed {fmax:.3g}. Fix: set {more}dataset.preprocess: standardize (or minmax, unit_norm)")
            return self
        if self.code in (GAUSSIAN, POLY_GAUSSIAN):
            two_s2 = 2.0 * self.sigma * self.sigma
            if two_s2 == 0.0 or 1.0 / two_s2 > fmax:
                d2 = _sample_d2(X)
                np.fill_diagonal(d2, np.inf)
                nn = d2.min(axis=1)
                nn = nn[np.isfinite(nn) & (nn > 0)]
                typical = self._user_sigma(float(np.sqrt(np.median(nn)))) if nn.size else 0.0
                near = (f"kernel.sigma near {_ceil_1digit(typical):g} (the median distance to the nearest example)"
                        if typical > 0 else "a larger kernel.sigma (about the distance between examples)")
                raise NumericError(
                    f"{what}: kernel.sigma = {self._user_sigma(self.sigma):g} is too small, 1/(2 sigma^2) overflows "
                    f"{dt.name} and K(x, x) would be NaN. Fix: set {more}{near}")
            if self.code == POLY_GAUSSIAN and self.degree * math.log10(2.0) + headroom > log_max:
                top = int((log_max - headroom) / math.log10(2.0))
                raise NumericError(
                    f"{what}: values reach 2^{self.degree} = 1e{self.degree * math.log10(2.0):.0f}, so scores "
                    f"overflow {dt.name} (largest {fmax:.3g}). Fix: set {more}kernel.degree <= {top}")
            self._check_width(X, dt, what)
            return self
        # the base 1 + x.y/s must differ from 1 in dt for most examples, or K is constant (rows of
        # zeros have K = 1 with every row, rightly: they do not count)
        nonzero = norms[norms > 0]
        med_sq = float(np.median(nonzero)) if nonzero.size else 0.0
        if nonzero.size and med_sq / self.scale < float(np.finfo(dt).eps) ** _RESOLVED:
            raise NumericError(
                f"{what}: kernel.scale = {self._user_sq(self.scale):g} is far above |x|^2 (median "
                f"{self._user_sq(med_sq):.3g}): 1 + x.y/scale rounds to 1 in {dt.name}, so the kernel is constant and "
                f"every example looks alike. Fix: set kernel.scale near {_ceil_1digit(self._user_sq(med_sq)):g} "
                "(or smaller)")
        c = 1.0 + sq / self.scale
        if unit_diag and math.isfinite(c):
            return self
        if not math.isfinite(c):
            raise NumericError(
                f"{what}: 1 + |x|^2/scale = inf. Fix: set kernel.scale to at least {self._user_sq(sq):.3g}, or "
                "dataset.preprocess: standardize")
        if dt == np.float32:
            scaled = dataclasses.replace(self, base_div=max(c, 1.0))
            # the division keeps the largest K(x, x) at 1; it must not push the smallest below
            # float32's normal range, or those examples' kernel rows become all zero
            per_degree = math.log10(1.0 + sq_min / self.scale) - math.log10(max(c, 1.0))  # <= 0
            low = self.degree * per_degree
            floor = math.log10(float(np.finfo(dt).tiny)) + 2.0  # some room for the products of a row
            if low < floor:
                top = max(int(floor / per_degree), 1)
                raise NumericError(
                    f"{what}: scaled to fit float32, K(x, x) falls to 1e{low:.0f} on some training rows (those with "
                    f"the smallest |x|), below float32's range, so their kernel rows would be all zero. Fix: set "
                    f"training.dtype: float64, or lower kernel.degree to {top} or less, or set "
                    "dataset.preprocess: unit_norm (every K(x, x) alike)")
            return scaled
        log_k = self.degree * math.log10(c)
        if log_k + headroom > log_max:
            top = max(int((log_max - headroom) / math.log10(c)), 1)
            # the smallest scale s with (1 + sq/s)^d * n^2 within range
            room = 10.0 ** ((log_max - headroom) / self.degree) - 1.0
            s_min = self._user_sq(sq) / room if room > 0 else math.inf
            scale = f"{_ceil_1digit(s_min):g}" if math.isfinite(s_min) else "a larger value"
            raise NumericError(
                f"{what}: K(x, x) = (1 + |x|^2/{self._user_sq(self.scale):g})^{self.degree} reaches 1e{log_k:.0f} on the "
                f"training rows, so scores overflow {dt.name} (largest {fmax:.3g}). Fix: set kernel.scale: "
                f"{scale} or larger, lower kernel.degree to {top} or less, or "
                "preprocess the features (dataset.preprocess: unit_norm)")
        return self

    def _check_width(self, X, dt, what: str, sample: int = 2000) -> None:
        """Refuse a Gaussian width that makes the kernel degenerate in ``dt``, checked on up to
        ``sample`` training rows:

        * far below the distances between examples: each nearest neighbour's kernel value
          underflows to 0, K = I, no test point gets a score and every prediction is label 0;
        * far above them: ``|x - y|^2 / (2 sigma^2)`` is below the resolution of ``dt`` for most
          pairs, K = 1 everywhere (or nearly, to a few bits) and one class is predicted everywhere.
        """
        if X.shape[0] < 2:
            return
        d2 = _sample_d2(X, sample)
        two_s2 = 2.0 * self.sigma * self.sigma
        off = d2[~np.eye(len(d2), dtype=bool)]
        off = off[off > 0]   # pairs of equal examples have K = 1, rightly: they do not count
        med = float(np.median(off)) if off.size else 0.0
        if off.size and med / two_s2 < float(np.finfo(dt).eps) ** _RESOLVED:
            typical = self._user_sigma(math.sqrt(med))
            fix = f"Fix: set kernel.sigma near {_ceil_1digit(typical):g}"
            raise NumericError(
                f"{what}: kernel.sigma = {self._user_sigma(self.sigma):g} is far above the distance between examples "
                f"(median {typical:.3g}): K(x, y) rounds to 1 in {dt.name} for most pairs, so the kernel is constant "
                f"and one class would be predicted everywhere. {fix}")
        np.fill_diagonal(d2, np.inf)
        nn = d2.min(axis=1)
        nn = nn[np.isfinite(nn)]
        if nn.size == 0:
            return
        with np.errstate(under="ignore"):
            k_nn = np.exp(-nn / two_s2).astype(dt)
        if np.mean(k_nn == 0) >= 0.5:
            typical = self._user_sigma(float(np.sqrt(np.median(nn))))
            raise NumericError(
                f"{what}: kernel.sigma = {self._user_sigma(self.sigma):g} is far below the distance between examples "
                f"(median nearest-neighbour distance {typical:.3g}): K(x, y) underflows to 0 for {np.mean(k_nn == 0):.0%} "
                f"of the examples' nearest neighbours, so K is the identity and every prediction would be label 0. "
                f"Fix: set kernel.sigma near {_ceil_1digit(typical):g}")

    # --------------------------------------------------------------- features multiplied by 2^e

    def features(self, X):
        """``X`` as this kernel takes it: multiplied by ``2^feature_exp`` (exact; ``X`` itself when
        the exponent is 0, and None stays None)."""
        if X is None or self.feature_exp == 0:
            return X
        if issparse(X):
            # the stored values alone: the zeros stay zeros, and no dense copy is made
            Xs = as_csr(X, np.float64, copy=True)
            Xs.data = np.ldexp(Xs.data, self.feature_exp)
            return Xs
        return np.ldexp(np.asarray(X, dtype=np.float64), self.feature_exp)

    def _user_sq(self, v: float) -> float:
        """A squared norm (or poly scale) of the rescaled features in the units of the data given."""
        return math.ldexp(v, -2 * self.feature_exp) if self.feature_exp else v

    def _user_sigma(self, v: float) -> float:
        """A distance (or sigma) of the rescaled features in the units of the data given."""
        return math.ldexp(v, -self.feature_exp) if self.feature_exp else v

    def rescale_note(self) -> str | None:
        """One line saying how :meth:`range_safe` rescaled the features (None when it did not)."""
        e = self.feature_exp
        if not e:
            return None
        if self.code == PRECOMPUTED:
            return (f"the Gram matrix is multiplied by 2^{e} to keep its values within the float range; the "
                    "mistakes, votes and predictions are those of the matrix as given")
        head = f"the features are multiplied by 2^{e} to keep their inner products within the float range"
        if self.code == LINEAR:
            return (f"{head} (the kernel values by 2^{2 * e}, thresholds given as numbers alike); the perceptron's "
                    "and ALMA's mistakes, votes and predictions do not depend on that factor")
        key = "kernel.scale by 2^%d" % (2 * e) if self.code == POLY else "kernel.sigma by 2^%d" % e
        return f"{head}, and {key}: every kernel value is the one the features as given have"

    @property
    def value_factor(self) -> float:
        """Factor between this kernel's values and the unscaled kernel's (1 unless range_safe
        divided a poly kernel or rescaled linear features or a Gram matrix; may be inf or 0)."""
        with np.errstate(over="ignore", under="ignore"):
            if self.code == POLY:
                # c^-d by repeated multiplication (fixed operations: the C library's pow differs
                # between builds); exact for a power of two, as range_safe picks
                c = float(self.base_div)
                p = 1.0
                for _ in range(int(self.degree)):
                    p *= c
                return 1.0 / p
            if self.code == LINEAR:
                return float(np.ldexp(1.0, 2 * self.feature_exp))
            if self.code == PRECOMPUTED:
                return float(np.ldexp(1.0, self.feature_exp))
        return 1.0

    def to_values(self, x: float) -> float:
        """A number in the units of the unscaled kernel (a threshold) in this kernel's units: times
        :attr:`value_factor`, exactly for a power of two even where that factor is beyond float64.
        ``inf`` or 0 for a nonzero number that does not fit a float64 there."""
        x = float(x)
        e = 2 * self.feature_exp if self.code == LINEAR else self.feature_exp if self.code == PRECOMPUTED else 0
        with np.errstate(over="ignore", under="ignore"):
            return float(np.ldexp(x, e)) * (self.value_factor if self.code == POLY else 1.0)

    def from_values(self, S, power: float = 1.0):
        """Scores ``S`` of this kernel in the units of the unscaled kernel: divided by
        :attr:`value_factor` to the ``power`` (1: a hypothesis' score; 0.5: a score divided by the
        hypothesis' norm; 0: a vote), exactly for a power of two. A :class:`NumericError` when they
        do not fit a float64 there (data near 1e-200 have scores near 1e-400)."""
        S = np.asarray(S, dtype=np.float64)
        if power == 0:
            return S
        if self.code == POLY:
            f = self.value_factor
            return S / (f if power == 1 else math.sqrt(f) if power == 0.5 else f ** power)
        e = 2 * self.feature_exp if self.code == LINEAR else self.feature_exp if self.code == PRECOMPUTED else 0
        if not e:
            return S
        whole = math.floor(e * power)
        with np.errstate(over="ignore", under="ignore"):
            out = np.ldexp(S, -whole) / 2.0 ** (e * power - whole)
            lost = (S != 0) & ((np.abs(out) < np.finfo(np.float64).tiny) | ~np.isfinite(out))
        if lost.any():
            top = float(np.log2(np.max(np.abs(S[S != 0])))) - e * power
            raise NumericError(
                f"the scores of the {self.describe()} kernel are of order {_pow2_text(top)} in the units of the data "
                "given, outside float64's range (the predictions are unaffected). Fix: multiply the features by a "
                "constant first")
        return out

    def describe(self) -> str:
        """The kernel and its parameters, in the units of the data given (before :meth:`range_safe`)."""
        if self.name in ("linear", "precomputed"):
            return self.name
        if self.name == "poly":
            return f"poly(d={self.degree}, s={self._user_sq(self.scale):g})"
        if self.name == "gaussian":
            return f"gaussian(sigma={self._user_sigma(self.sigma):g})"
        return f"poly_gaussian(d={self.degree}, sigma={self._user_sigma(self.sigma):g})"


#: (log2 of the largest number, log2 of the smallest normal number, mantissa bits) of a float type.
_RANGE = {np.float64: (1024.0, -1022.0, 52.0), np.float32: (128.0, -126.0, 23.0)}
#: A kernel whose values differ from a constant by less than ``eps ** _RESOLVED`` (relative) for
#: most pairs of examples is refused as constant: fewer than half of the float type's significant
#: bits would tell the examples apart (float64: 1.5e-8, float32: 3.5e-4).
_RESOLVED = 0.5


def _log2_range(X, diagonal: bool = False):
    """(log2 of the smallest nonzero, log2 of the largest) squared row norm of ``X`` (``diagonal``:
    absolute diagonal value of a square Gram matrix), computed without underflow or overflow;
    -inf as the smallest when some nonzero row's norm underflows even so; None when all are 0."""
    if issparse(X):
        return _log2_range_csr(as_csr(X))
    X = np.asarray(X)
    if diagonal:
        d = np.abs(np.diagonal(X)).astype(np.float64)
        d = d[d > 0]
        return (float(np.log2(d.min())), float(np.log2(d.max()))) if d.size else None
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        n2 = sq_norms64(X)
        top = float(np.max(n2))
        zero = n2 == 0
        lost = bool(zero.any()) and bool(np.any(X[zero] != 0))
        pos = n2[~zero]
        # the common case, in range as computed: no second pass
        if math.isfinite(top) and not lost and (not pos.size or (float(pos.min()) > 2.0**-1000 and top < 2.0**1000)):
            return (float(np.log2(pos.min())), float(np.log2(top))) if pos.size else None
        m = float(np.max(np.abs(X)))
        if m == 0.0:
            return None
        e = math.frexp(m)[1]
        Xs = np.ldexp(np.asarray(X, dtype=np.float64), -e)   # largest |value| in [0.5, 1): no overflow
        n2 = ordered.sq_norms(Xs)
    nz = n2 > 0
    lost = bool(np.any(~nz & np.any(X != 0, axis=1)))
    return (-math.inf if lost else float(np.log2(n2[nz].min())) + 2 * e), float(np.log2(n2.max())) + 2 * e


def _sample_d2(X, sample: int = 2000) -> np.ndarray:
    """Squared distances between up to ``sample`` rows of ``X`` drawn with a fixed seed, in float64."""
    n = X.shape[0]
    rows = np.random.default_rng(0).choice(n, size=min(n, sample), replace=False)
    if issparse(X):
        A = as_csr(X)[rows].astype(np.float64)
        sq = sq_norms(A)
        return np.maximum(sq[:, None] + sq[None, :] - 2.0 * (A @ A.T).toarray(), 0.0)
    A = np.asarray(X[rows], dtype=np.float64)
    sq = ordered.sq_norms(A)
    return np.maximum(sq[:, None] + sq[None, :] - 2.0 * ordered.matmul_nt(A, A), 0.0)


def _pow2_text(l2: float) -> str:
    """``2^l2`` as a decimal order of magnitude (``1e-400``), for numbers beyond a float's range too."""
    if not math.isfinite(l2):
        return "0" if l2 < 0 else "inf"
    return f"1e{l2 * math.log10(2.0):.0f}"


def _typical_text(kernel: "Kernel", l_min: float, l_max: float) -> str:
    """The size of the data that a poly scale (|x|^2) or Gaussian sigma (|x|) should be near."""
    l2 = (l_min + l_max) / 2 if math.isfinite(l_min) else l_max
    if kernel.code == POLY:
        return _pow2_text(l2)
    return _pow2_text(l2 / 2)


def _ceil_1digit(x: float) -> float:
    """``x`` rounded up to one significant digit (1.47 -> 2, 172 -> 200)."""
    p = 10.0 ** math.floor(math.log10(x)) if x > 0 else 1.0
    return math.ceil(x / p - 1e-9) * p


@nb.njit(cache=True, inline="always")
def kernel_from_dot(code, degree, scale, sigma, base_div, dot, sq_a, sq_b):
    """K(a, b) from the inner product a·b and the squared norms |a|², |b|²."""
    if code == LINEAR:
        return dot
    if code == POLY:
        base = (1.0 + dot / scale) / base_div
        r = base
        for _ in range(degree - 1):
            r *= base
        return r
    d2 = sq_a + sq_b - 2.0 * dot
    if d2 < 0.0:
        d2 = 0.0
    g = fixed_exp(-d2 / (2.0 * sigma * sigma))   # the same bits on every machine (engine.ordered)
    if code == GAUSSIAN:
        return g
    base = 1.0 + g
    r = base
    for _ in range(degree - 1):
        r *= base
    return r


@nb.njit(cache=True, inline="always")
def _powi(b, degree):
    r = b
    for _ in range(degree - 1):
        r *= b
    return r


@nb.njit(cache=True, inline="always")
def dot_rows(X, i, j):
    """Inner product of rows i and j of X, in :func:`perceptron_lab.engine.ordered.dot`'s fixed order."""
    return fixed_dot(X[i], X[j])


#: :func:`dot_rows_exact` stands for :func:`dot_rows` on integer features whose squared norms stay
#: below this (so that ``|x|·|y| < 2^52``: every partial sum of the products is an integer held
#: exactly by a float64, in whatever order).
DOTS_EXACT_SQ_LIMIT = 2.0**52


@nb.njit(cache=True, inline="always")
def dot_rows_exact(X, i, j):
    """:func:`dot_rows` itself (the same eight running sums, the same value), named for where the
    value is exact: on integer features with ``|x|² < DOTS_EXACT_SQ_LIMIT`` every partial sum is
    an integer a float64 holds, so it equals any other order's."""
    return fixed_dot(X[i], X[j])


@nb.njit(cache=True, parallel=True)
def _transform_block(G, code, degree, scale, sigma, base_div, sq_a, sq_b):
    """Turn a block of inner products into kernel values, in place.

    The degree is dispatched outside the inner loop so that the loop vectorizes (a loop over the
    degree inside it does not). No ``fastmath``: ``one + row[j] * inv`` is a multiplication and an
    addition, each rounded, on every CPU (a fused multiply-add, where the CPU has one, would round
    once).
    """
    n, m = G.shape
    one = G.dtype.type(1.0 / base_div)
    inv = G.dtype.type(1.0 / (scale * base_div))
    g2 = G.dtype.type(-1.0 / (2.0 * sigma * sigma))
    for i in nb.prange(n):
        row = G[i]
        if code == POLY:
            # one pass per row: base and power fused
            if degree == 1:
                for j in range(m):
                    row[j] = one + row[j] * inv
            elif degree == 2:
                for j in range(m):
                    b = one + row[j] * inv
                    row[j] = b * b
            elif degree == 3:
                for j in range(m):
                    b = one + row[j] * inv
                    row[j] = b * b * b
            elif degree == 4:
                for j in range(m):
                    b = one + row[j] * inv
                    b2 = b * b
                    row[j] = b2 * b2
            elif degree == 5:
                for j in range(m):
                    b = one + row[j] * inv
                    b2 = b * b
                    row[j] = b2 * b2 * b
            elif degree == 6:
                for j in range(m):
                    b = one + row[j] * inv
                    b3 = b * b * b
                    row[j] = b3 * b3
            else:
                for j in range(m):
                    row[j] = _powi(one + row[j] * inv, degree)
        elif code == POLY_GAUSSIAN:
            for j in range(m):
                d2 = max(sq_a[i] + sq_b[j] - 2 * row[j], 0)
                row[j] = _powi(1 + fixed_exp(d2 * g2), degree)
        elif code == GAUSSIAN:
            for j in range(m):
                d2 = max(sq_a[i] + sq_b[j] - 2 * row[j], 0)
                row[j] = fixed_exp(d2 * g2)


@nb.njit(cache=True)
def _transform_block_serial(G, code, degree, scale, sigma, base_div, sq_a, sq_b):
    """Single-threaded twin of :func:`_transform_block` for small blocks."""
    n, m = G.shape
    one = G.dtype.type(1.0 / base_div)
    inv = G.dtype.type(1.0 / (scale * base_div))
    g2 = G.dtype.type(-1.0 / (2.0 * sigma * sigma))
    for i in range(n):
        row = G[i]
        if code == POLY:
            # one pass per row: base and power fused
            if degree == 1:
                for j in range(m):
                    row[j] = one + row[j] * inv
            elif degree == 2:
                for j in range(m):
                    b = one + row[j] * inv
                    row[j] = b * b
            elif degree == 3:
                for j in range(m):
                    b = one + row[j] * inv
                    row[j] = b * b * b
            elif degree == 4:
                for j in range(m):
                    b = one + row[j] * inv
                    b2 = b * b
                    row[j] = b2 * b2
            elif degree == 5:
                for j in range(m):
                    b = one + row[j] * inv
                    b2 = b * b
                    row[j] = b2 * b2 * b
            elif degree == 6:
                for j in range(m):
                    b = one + row[j] * inv
                    b3 = b * b * b
                    row[j] = b3 * b3
            else:
                for j in range(m):
                    row[j] = _powi(one + row[j] * inv, degree)
        elif code == POLY_GAUSSIAN:
            for j in range(m):
                d2 = max(sq_a[i] + sq_b[j] - 2 * row[j], 0)
                row[j] = _powi(1 + fixed_exp(d2 * g2), degree)
        elif code == GAUSSIAN:
            for j in range(m):
                d2 = max(sq_a[i] + sq_b[j] - 2 * row[j], 0)
                row[j] = fixed_exp(d2 * g2)


def sq_norms(X: np.ndarray) -> np.ndarray:
    """Row-wise squared Euclidean norms, in the dtype of X (a sparse X: from its stored values)."""
    if issparse(X):
        Xc = as_csr(X)
        return _csr_sq_norms(Xc.indptr, Xc.data).astype(Xc.dtype, copy=False)
    return ordered.sq_norms(X)


# ----------------------------------------------------------------------------- sparse rows
#
# A scipy.sparse matrix (any format, taken as CSR) stands for a dense feature matrix wherever these
# functions take features: squared norms, K(x, x) and kernel blocks are computed from the stored
# values alone, so their cost and memory follow the number of nonzeros; a kernel block itself is
# dense (its size is rows x columns, not features).


def as_csr(X, dtype=None, copy: bool = False):
    """``X`` (a scipy.sparse matrix or array) as a canonical CSR matrix: duplicates summed, indices
    sorted, in ``dtype`` (default: its own float type, float64 for integers). Copies only what a
    conversion needs (``copy``: always a new matrix, sharing nothing with ``X``)."""
    import scipy.sparse as sp

    Xc = X.tocsr(copy=copy) if issparse(X) else sp.csr_matrix(X)
    if not isinstance(Xc, sp.csr_matrix):
        Xc = sp.csr_matrix(Xc)  # a csr_array: the matrix API (X @ Y.T, X[rows]) the engine uses
    if dtype is None:
        dtype = Xc.dtype if Xc.dtype in (np.float32, np.float64) else np.float64
    if Xc.dtype != dtype:
        Xc = Xc.astype(dtype)
    if not Xc.has_canonical_format:
        Xc = Xc.copy() if Xc is X else Xc
        Xc.sum_duplicates()
    return Xc


def _values(X):
    """The values that may be nonzero: a sparse matrix's stored values, or ``X`` itself."""
    return as_csr(X).data if issparse(X) else X


@nb.njit(cache=True)
def _csr_sq_norms(indptr, data):
    """Squared norm of each CSR row, in float64, summed in the order of the stored values."""
    n = indptr.shape[0] - 1
    out = np.zeros(n)
    for i in range(n):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            v = float(data[k])
            acc += v * v
        out[i] = acc
    return out


def _log2_range_csr(X):
    """:func:`_log2_range` of the rows of a CSR matrix, from its stored values."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        m = float(np.max(np.abs(X.data))) if X.nnz else 0.0
        if m == 0.0:
            return None
        e = math.frexp(m)[1]
        n2 = _csr_sq_norms(X.indptr, np.ldexp(np.asarray(X.data, dtype=np.float64), -e))  # largest |value| in [0.5, 1)
        nz = n2 > 0
        row_has = np.diff(X.indptr) > 0
        if row_has.any():
            row_has[row_has] = np.logical_or.reduceat(X.data != 0, X.indptr[:-1][row_has])
        lost = bool(np.any(~nz & row_has))
    return (-math.inf if lost else float(np.log2(n2[nz].min())) + 2 * e), float(np.log2(n2.max())) + 2 * e


@nb.njit(cache=True, parallel=True)
def _csr_csc_dots(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, out):
    """``out[i, j] = A_i . B_j`` (``out`` zeroed first) for A in CSR and B in CSC form transposed
    (for each feature f, the rows j of B that hold it: ``b_indices[b_indptr[f]:b_indptr[f + 1]]``).
    Row i of ``out`` is one thread's: for each stored value of A_i it adds the products with the
    rows of B holding that feature, in the order of A_i's features. Cost: the number of
    (feature, row of B) pairs met, the work of a sparse product, without building a sparse result."""
    n = a_indptr.shape[0] - 1
    for i in nb.prange(n):
        row = out[i]
        for j in range(row.shape[0]):
            row[j] = 0
        for k in range(a_indptr[i], a_indptr[i + 1]):
            f = a_indices[k]
            v = a_data[k]
            for q in range(b_indptr[f], b_indptr[f + 1]):
                row[b_indices[q]] += v * b_data[q]


def sparse_dots(A, B, out=None) -> np.ndarray:
    """``A @ B.T`` as a dense array in A's float type, for A and B of which one or both are
    sparse (CSR). The stored values alone are multiplied; the result has one entry per pair of
    rows, the size of a kernel block, whatever the number of features. ``out``: a C-contiguous
    array of that shape to write into."""
    if issparse(A):
        A = as_csr(A)
    if issparse(B):
        B = as_csr(B)
    dt = A.dtype if A.dtype in (np.float32, np.float64) else np.float64
    if issparse(A) and issparse(B):
        if out is None:
            out = np.empty((A.shape[0], B.shape[0]), dtype=dt)
        Bc = B.astype(out.dtype).tocsc()  # for each feature, the rows of B that hold it
        _csr_csc_dots(A.indptr.astype(np.int64), A.indices.astype(np.int64), A.data.astype(out.dtype),
                      Bc.indptr.astype(np.int64), Bc.indices.astype(np.int64), Bc.data, out)
        return out
    P = A @ B.T
    if issparse(P):
        P = P.toarray()
    P = np.asarray(P)
    if out is None:
        return np.ascontiguousarray(P, dtype=dt)
    out[...] = P
    return out


def ordered_dots(A: np.ndarray, B: np.ndarray, out=None, BT=None) -> np.ndarray:
    """``A @ B.T`` with every entry added over the features in their order
    (:func:`perceptron_lab.engine.ordered.matmul_nt`): the value of a pair of rows does not depend on
    the other rows of A or B, nor on the machine. ``out``: a C-contiguous array of shape
    (len(A), len(B)) in A's dtype; ``BT``: B's transpose, C-contiguous, when the caller keeps one."""
    return ordered.matmul_nt(A, B, out=out, BT=BT)


#: Rows converted to float64 at a time by :func:`sq_norms64`.
SQ_NORMS_ROWS = 4096


def sq_norms64(X: np.ndarray) -> np.ndarray:
    """``sq_norms(X as float64)``, the same values, converting a block of rows at a time: no
    float64 copy of a whole float32 training set (eight bytes per entry, 60000 x 784 for MNIST),
    whose fresh pages cost more to map than the sums cost to compute."""
    if issparse(X):
        return sq_norms(as_csr(X, np.float64))
    X = np.asarray(X)
    if X.dtype == np.float64 or X.ndim != 2:
        return sq_norms(np.asarray(X, dtype=np.float64))
    out = np.empty(X.shape[0])
    for a in range(0, X.shape[0], SQ_NORMS_ROWS):
        out[a:a + SQ_NORMS_ROWS] = sq_norms(np.asarray(X[a:a + SQ_NORMS_ROWS], dtype=np.float64))
    return out


#: Inner products of integer vectors are exact in float32 while |x|·|y| stays below this: every
#: partial sum of x_i y_i, in whatever order a BLAS adds them, is then an integer of magnitude at
#: most sum |x_i y_i| <= |x| |y| (Cauchy-Schwarz), and float32 holds every integer below 2^24.
EXACT32_LIMIT = float(2**24)


def exact32_ok(X: np.ndarray) -> bool:
    """Whether a float32 GEMM can compute the inner products of ``X`` (float64 or float32): every
    value an integer of magnitude below 2^24 (e.g. MNIST's raw pixels, 0/1 indicators), so that
    each pair with ``|x|·|y| < 2^24`` has the same, exact inner product in float32 and float64, in
    any order of its sum (:func:`matmul_exact32`)."""
    if issparse(X):
        return False  # the float32 GEMM path is for dense blocks
    X = np.asarray(X)
    return X.dtype in (np.float64, np.float32) and integer_features(X)


def integer_features(X: np.ndarray) -> bool:
    """Whether ``X`` (float32 or float64, not empty) holds integers of magnitude below 2^24 alone:
    their inner products computed in float64 are those :func:`matmul_exact32` gives."""
    if issparse(X):
        X = as_csr(X).data   # the stored values (the others are zeros)
    X = np.asarray(X)
    if X.dtype not in (np.float32, np.float64) or not X.size:
        return False
    return bool(_small_integers(np.ascontiguousarray(X).reshape(-1), EXACT32_LIMIT))


@nb.njit(cache=True)
def _small_integers(x, limit):
    """Whether every value of ``x`` is an integer of magnitude below ``limit`` (NaN and inf are
    not): one pass that stops at the first other value, with no temporary arrays
    (``np.floor(x) == x`` would write a copy of the data and a mask of its size, which costs more
    than reading the values once)."""
    for i in range(x.shape[0]):
        v = x[i]
        if not (abs(v) < limit and math.floor(v) == v):
            return False
    return True


def load_jit() -> None:
    """Load numba's runtime of compiled code, as the first call of a cached jitted function in a
    process does: that first load is the costly one, once per process, so a caller can do it on a
    thread of its own while it waits on I/O; each further function then loads quickly."""
    _small_integers(np.zeros(1), 1.0)


#: The squared bound, with a margin for the rounding of the float64 norms themselves.
_EXACT32_LIMIT2 = EXACT32_LIMIT * EXACT32_LIMIT * (1.0 - 1e-9)


def exact32_heavy_rows(sq_a, sq_b) -> np.ndarray:
    """Which rows of A (squared norms ``sq_a``) may have an inner product with a row of B (squared
    norms ``sq_b``) that float32 does not hold exactly; the others' products with all of B are exact."""
    sq_a = np.asarray(sq_a, dtype=np.float64)
    if not sq_a.size or not np.size(sq_b):
        return np.zeros(sq_a.shape, dtype=bool)
    return sq_a * float(np.max(sq_b)) >= _EXACT32_LIMIT2


def matmul_exact32(A: np.ndarray, B: np.ndarray, sq_a=None, sq_b=None, out=None, B32=None) -> np.ndarray:
    """``A @ B.T`` in A's float type, equal bit for bit to :func:`ordered_dots` (the inner products
    added in feature order), for A and B that pass :func:`exact32_ok`.

    The product runs as a float32 GEMM (a SIMD register holds twice as many float32 values as
    float64 ones): a pair with ``|a|·|b| < 2^24`` has every partial sum an integer float32 holds,
    so its value is exact in any order, and equal to the ordered sum in float32 or float64. The few
    pairs with ``|a|·|b| >= 2^24``, whose sums could round, are recomputed by :func:`ordered_dots` in
    A's type (on MNIST, 27 of 70000 examples have a norm that can reach that bound with any
    other). ``B32`` may pass a float32 copy of B made once by the caller.
    """
    # the bound is tested on float64 norms (float32 ones round beyond 2^24)
    sq_a = sq_norms64(A) if sq_a is None or np.asarray(sq_a).dtype != np.float64 else np.asarray(sq_a)
    sq_b = sq_norms64(B) if sq_b is None or np.asarray(sq_b).dtype != np.float64 else np.asarray(sq_b)
    B32 = B.astype(np.float32, copy=False) if B32 is None else B32
    G32 = np.matmul(A.astype(np.float32, copy=False), B32.T)
    G = np.empty(G32.shape, dtype=A.dtype) if out is None else out
    G[...] = G32
    if not (sq_a.size and sq_b.size):
        return G
    heavy = np.flatnonzero(exact32_heavy_rows(sq_a, sq_b))
    heavy = heavy[np.argsort(-sq_a[heavy], kind="stable")]
    lim2 = _EXACT32_LIMIT2
    for g in range(0, heavy.size, 256):
        rows = heavy[g:g + 256]
        cols = np.flatnonzero(sq_b * float(sq_a[rows[0]]) >= lim2)
        if cols.size:
            G[np.ix_(rows, cols)] = ordered.matmul_nt(A[rows], B[cols])
    return G


def gram(kernel: Kernel, A: np.ndarray, B: np.ndarray, sq_a=None, sq_b=None, out=None, exact32: bool = False,
         B32=None, BT=None) -> np.ndarray:
    """Kernel block K(A_i, B_j), shape (len(A), len(B)), in the dtype of A.

    ``sq_a``/``sq_b`` may pass precomputed squared norms (used by the Gaussian kernels); ``out``
    may name a C-contiguous array to write into (e.g. rows of a kernel cache), saving a copy.
    ``exact32`` (A and B that pass :func:`exact32_ok`) computes the inner products by
    :func:`matmul_exact32`: the same values, at float32 GEMM speed. Other dense A and B
    take them from :func:`ordered_dots`: each value added in feature order, independent of the other
    rows and of the machine (``BT``: B's transpose, C-contiguous, when the caller keeps one).
    """
    if kernel.code == PRECOMPUTED:
        raise ValueError("a precomputed kernel has no kernel function: take its values from the Gram matrix")
    if issparse(A) or issparse(B):
        G = sparse_dots(A, B, out=out)
    elif exact32:
        G = matmul_exact32(A, B, sq_a, sq_b, out=out, B32=B32)
    else:
        G = ordered_dots(A, B, out=out, BT=BT)
    if kernel.code == LINEAR:
        return G
    if kernel.uses_norms:
        sq_a = sq_norms(A) if sq_a is None else sq_a
        sq_b = sq_norms(B) if sq_b is None else sq_b
    else:
        sq_a = sq_b = np.zeros(1, dtype=G.dtype)
    code, degree, scale, sigma, base_div = kernel.params()
    # Small blocks run on one thread: waking a thread team costs more than it saves, and its
    # spinning threads slow the BLAS calls that follow.
    fn = _transform_block if G.size >= PARALLEL_MIN_ELEMENTS else _transform_block_serial
    fn(G, code, degree, scale, sigma, base_div, sq_a.astype(G.dtype), sq_b.astype(G.dtype))
    return G


def kernel_diag(kernel: Kernel, X: np.ndarray) -> np.ndarray:
    """K(x, x) for every row of X, in float64 (precomputed: the diagonal of the square Gram matrix X)."""
    if kernel.code == PRECOMPUTED:
        if X.ndim != 2 or X.shape[0] != X.shape[1]:
            raise ValueError(f"a precomputed kernel's K(x, x) needs the square Gram matrix, got shape {X.shape}")
        return np.diagonal(X).astype(np.float64)
    sq = sq_norms64(X)
    if kernel.code == LINEAR:
        return sq
    if kernel.code == POLY:
        # the power by repeated multiplication, as kernel_from_dot and _transform_block take it (numpy's
        # power is a vectorized approximation on some CPUs, e.g. AVX-512, and libm's on others)
        base = (1.0 + sq / kernel.scale) / kernel.base_div
        out = base.copy()
        for _ in range(int(kernel.degree) - 1):
            out *= base
        return out
    if kernel.code == GAUSSIAN:
        return np.ones_like(sq)
    return np.full_like(sq, 2.0**kernel.degree)
