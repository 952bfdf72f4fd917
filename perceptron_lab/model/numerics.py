"""Numerical guards of the prediction rules: a training log whose recorded numbers are not finite,
or whose scores (or the averaged rules' sums) may overflow, stops the run with exit status 4
(:class:`~perceptron_lab.errors.NumericError`) instead of writing wrong error rates."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from perceptron_lab.engine.perceptron import TrainLog
from perceptron_lab.errors import NumericError
from perceptron_lab.engine.kernels import Kernel

if TYPE_CHECKING:  # annotations only
    from perceptron_lab.model.hypotheses import Hypotheses


def overflow_error(kernel: Kernel | None, dtype, what: str, detail: str = "") -> NumericError:
    k = f"the {kernel.describe()} kernel" if kernel is not None else "this kernel"
    dt = np.dtype(dtype).name
    more = "" if dt == "float64" else "training.dtype: float64, "
    return NumericError(
        f"{what} overflowed with {k} in {dt}{detail}; no results were written for this run (finished "
        f"runs are kept). Fix: set {more}a larger kernel.scale or a lower kernel.degree, or preprocess the "
        "features (dataset.preprocess: standardize or unit_norm)")


def score_factor(log: TrainLog, hyp: Hypotheses) -> float:
    """Bound on |score| / max|K|: the largest per-label sum of |coefficient| times the largest scale
    (for explicit hypotheses, whose scores are ``scale * w . x``, the largest scale)."""
    return _bounds(log, hyp)[0]


def _bounds(log: TrainLog, hyp: Hypotheses) -> tuple[float, float]:
    """(:func:`score_factor`, the largest |threshold|) of ``hyp``, computed once per hypotheses
    (a log's checks read them for every test block)."""
    cached = hyp.__dict__.get("_bounds")
    if cached is not None and cached[0] is log:
        return cached[1]
    if not log.n_updates:
        factor = 0.0
    elif log.hyp_w is not None:  # explicit hypotheses: a score is one column of Kt, not a sum
        factor = float(np.abs(hyp.scale).max())
    else:
        sums = np.bincount(log.upd_cls, weights=np.abs(log.upd_coef), minlength=log.n_labels)
        factor = float(sums.max()) * float(np.abs(hyp.scale).max())
    out = (factor, float(np.abs(hyp.theta).max()))
    hyp.__dict__["_bounds"] = (log, out)
    return out


def check_finite_training(log: TrainLog, hyp: Hypotheses | None, kernel: Kernel, X_train, dtype) -> None:
    """Refuse a training log whose recorded numbers are not finite, or whose scores may have overflowed.

    Called with ``hyp=None`` on the log alone, then with its :class:`Hypotheses` (feature-space
    norms and the score bound). Cost: one pass over the updates (and K(x, x) of the support
    vectors); the jitted loops are untouched. The score bound is
    ``max K(x, x) * max_label sum |coef| * max scale + max |theta|`` (Cauchy-Schwarz); training sums
    in ``dtype``, so it must stay below that type's largest number.
    """
    if hyp is None:
        recorded = {"scores": log.upd_score, "kernel values K(x, x)": log.upd_kxx,
                    "thresholds": log.upd_theta, "update coefficients": log.upd_coef, "hypothesis scales":
                    log.upd_scale, "hypothesis norms": log.upd_norm, "weight vectors": log.hyp_w}
    else:
        recorded = {"feature-space norms": hyp.norm}
    for what, a in recorded.items():
        if a is not None and a.size and not np.isfinite(a).all():
            raise overflow_error(kernel, dtype, f"{what} during training")
    if hyp is None or log.hyp_w is not None or not log.n_updates:
        return
    if log.kernel_normalized:
        kmax = 1.0
    else:
        # K(x, x) of every updating example is in the log: recomputing it would gather every
        # support vector's row, a pass over the data as large as a linear case's whole test call
        kmax = float(np.max(log.upd_kxx))
    with np.errstate(over="ignore", invalid="ignore"):
        factor, theta_max = _bounds(log, hyp)
        bound = kmax * factor + theta_max
    if not np.isfinite(bound) or bound > np.finfo(np.dtype(dtype)).max:
        raise overflow_error(kernel, dtype, "training scores",
                        f" (kernel values up to {kmax:.3g} summed over {log.n_updates} updates can reach "
                        f"{bound:.3g})")


def block_magnitude(Kt) -> float:
    """The largest absolute value of a block of kernel values (NaN or inf when one is)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return max(abs(float(Kt.max())), abs(float(Kt.min()))) if Kt.size else 0.0


def check_test_block(Kt, hyp: Hypotheses, log: TrainLog, kernel: Kernel, dtype, kt: float | None = None) -> None:
    """Refuse a block of test kernel values that is not finite, or whose scores could overflow the
    float64 sums of :func:`~perceptron_lab.model.scoring.score_block_t` (scores, then the averaged rules' sums over steps).
    ``kt``: the block's :func:`block_magnitude`, when already known (a block shared by several logs)."""
    if kt is None:
        kt = block_magnitude(Kt)
    with np.errstate(over="ignore", invalid="ignore"):
        factor, theta_max = _bounds(log, hyp)
        bound = (kt * factor + theta_max) * (log.total_steps + 1)
    if not np.isfinite(kt):
        raise overflow_error(kernel, dtype, "kernel values between test and training examples",
                        " (a test example is probably far larger than every training example: check the test data)")
    if not np.isfinite(bound) or bound > np.finfo(np.float64).max:
        raise overflow_error(kernel, dtype, "test scores", f" (kernel values up to {kt:.3g} on the test set)")
