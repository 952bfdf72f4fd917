"""Shared helpers of engine/perceptron.py, with expected values written by hand.

``label_matrix``: the +1/-1 label columns every engine trains on (Freund & Schapire §5, one
vs rest; a binary problem is one column, its second class positive). ``resolve_params``: the
perceptron's settings as written turned into absolute engine parameters (Khardon & Wachman §3.2:
theta_Init = avg <x_i, x_i> over the training examples, C = theta_Init, tau in units of that
average; numbers given for theta_init and C are in the units of the kernel as configured).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from perceptron_lab.engine.families import PerceptronSettings
from perceptron_lab.engine.perceptron import PerceptronParams, label_matrix, resolve_params
from perceptron_lab.errors import NumericError

UNBOUNDED = 2**31 - 1   # "no alpha-bound": more updates per example than any run makes


def test_label_matrix_binary_is_one_column_with_the_second_class_positive():
    Y = label_matrix(np.array([0, 1, 1, 0, 1]), 2)
    assert Y.dtype == np.int8 and Y.shape == (5, 1)
    assert Y[:, 0].tolist() == [-1, 1, 1, -1, 1]


def test_label_matrix_multiclass_is_one_vs_rest():
    Y = label_matrix(np.array([2, 0, 1, 2]), 3)
    assert Y.dtype == np.int8 and Y.shape == (4, 3)
    assert Y.tolist() == [[-1, -1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]]
    # a class with no example still has its column, all -1
    Y = label_matrix(np.array([0, 0, 3]), 4)
    assert Y.tolist() == [[1, -1, -1, -1], [1, -1, -1, -1], [-1, -1, -1, 1]]
    assert (Y.sum(axis=1) == 2 - 4).all()   # exactly one +1 per row


def _params(**kw):
    return PerceptronParams(**kw)


def test_defaults_are_freund_and_schapires_perceptron():
    p = resolve_params(PerceptronSettings(), np.array([1.0, 4.0]))
    assert p == _params(eta=1.0, theta_init=0.0, C=0.0, tau_abs=0.0, lam=0.0, alpha_bound=UNBOUNDED,
                        lam_diagonal=False)


def test_symbolic_thresholds_are_in_units_of_the_average_kernel_diagonal():
    # avg K(x, x) over the training rows = (1 + 2 + 3 + 6) / 4 = 3
    kd = np.array([1.0, 2.0, 3.0, 6.0])
    s = PerceptronSettings(eta=0.1, theta_init="avg_sq_norm", C="theta_init", tau=0.5, lambda_=0.25, alpha_bound=3,
                           lambda_term="diagonal")
    p = resolve_params(s, kd)
    assert p == _params(eta=0.1, theta_init=3.0, C=3.0, tau_abs=1.5, lam=0.25, alpha_bound=3, lam_diagonal=True)
    # tau's unit is the average K(x, x) even where theta_init is a number
    p = resolve_params(PerceptronSettings(theta_init=5.0, C=2.0, tau=0.5), kd)
    assert (p.theta_init, p.C, p.tau_abs) == (5.0, 2.0, 1.5)
    # C follows theta_init whatever theta_init is
    p = resolve_params(PerceptronSettings(theta_init=5.0, C="theta_init"), kd)
    assert p.C == 5.0


def test_numbers_are_converted_to_the_engines_kernel_units():
    """The engine may run a multiple of the configured kernel (values kept in float64's range):
    thresholds written as numbers move with it; symbolic ones are read on the engine's K(x, x)
    already; tau is relative; lambda and the alpha-bound have no unit."""
    kd = np.array([2.0, 6.0])            # engine units: average 4
    s = PerceptronSettings(theta_init=3.0, C=0.5, tau=0.25, lambda_=0.5, alpha_bound=2)
    p = resolve_params(s, kd, value_factor=0.125)
    assert p == _params(eta=1.0, theta_init=0.375, C=0.0625, tau_abs=1.0, lam=0.5, alpha_bound=2)
    p = resolve_params(s, kd, value_factor=lambda v: v * 2.0**-600)      # a factor beyond float64, exactly
    assert (p.theta_init, p.C) == (3.0 * 2.0**-600, 0.5 * 2.0**-600)
    p = resolve_params(PerceptronSettings(theta_init="avg_sq_norm", C="theta_init"), kd, value_factor=0.125)
    assert (p.theta_init, p.C) == (4.0, 4.0)                              # not converted twice
    assert resolve_params(PerceptronSettings(theta_init=0.0), kd, value_factor=lambda v: math.inf).theta_init == 0.0


def test_a_threshold_out_of_float64s_range_in_engine_units_stops():
    with pytest.raises(NumericError, match="algorithm.theta_init = 3 is out of range"):
        resolve_params(PerceptronSettings(theta_init=3.0), np.array([1.0]), value_factor=lambda v: v * 2.0**-1100)
    with pytest.raises(NumericError, match="algorithm.C = 1e\\+300 is out of range"):
        resolve_params(PerceptronSettings(C=1e300), np.array([1.0]), value_factor=1e10)


@pytest.mark.parametrize("ab, want", [(None, UNBOUNDED), (math.inf, UNBOUNDED), (1, 1), (80, 80), (5.0, 5)])
def test_the_alpha_bound(ab, want):
    p = resolve_params(PerceptronSettings(alpha_bound=ab), np.array([1.0]))
    assert p.alpha_bound == want and isinstance(p.alpha_bound, int)


def test_the_lambda_term_as_written():
    kd = np.array([1.0])
    assert resolve_params(PerceptronSettings(lambda_=1.0, lambda_term="indicator"), kd).lam_diagonal is False
    assert resolve_params(PerceptronSettings(lambda_=1.0, lambda_term="diagonal"), kd).lam_diagonal is True


def test_no_training_rows_give_a_zero_average():
    p = resolve_params(PerceptronSettings(theta_init="avg_sq_norm", C="theta_init", tau=1.0), np.zeros(0))
    assert (p.theta_init, p.C, p.tau_abs) == (0.0, 0.0, 0.0)
