"""The number range, in both directions: features, kernels and preprocessing far from 1.

A run either gives the results of the data as if computed exactly (where the algorithm does not
depend on the features' scale, the scale-1 results) or stops with exit status 4 (NumericError)
and a fix that works. Each case below says what plab did before these checks, in its docstring.

Scales are powers of two where results must equal the scale-1 run bit for bit (a power of two
changes no rounding); decimal scales (1e-200) are checked too, on the mistakes and predictions.
"""

from __future__ import annotations

import dataclasses
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from clitools import plab
from perceptron_lab import ALMA, MarginPerceptron, VotedPerceptron
from perceptron_lab.config.load import config_from_dict, with_overrides
from perceptron_lab.datasets import load_dataset
from perceptron_lab.errors import NumericError
from perceptron_lab.engine.kernels import Kernel
from perceptron_lab.run.plan import RESULT_COLUMNS, Unit
from perceptron_lab.run.inputs import preprocess
from perceptron_lab.run.spec import unit_spec
from perceptron_lab.run.units import run_unit

SONAR = load_dataset("sonar")
UNIT = Unit(0, {}, 0, 0)


def config(kernel=None, algorithm=None, dataset=None, rules=("last", "vote", "avg_norm"), epochs=2, dtype="float64"):
    return config_from_dict({
        "name": "range", "dataset": {"name": "sonar", **(dataset or {})},
        "kernel": kernel or {"type": "linear"}, "algorithm": algorithm or {"name": "perceptron"},
        "training": {"epochs": epochs, "checkpoints": [epochs], "seed": 3, "dtype": dtype},
        "prediction": {"rules": list(rules), "vote_weight": "survival"},
        "evaluation": {"mode": "kfold", "folds": 4}})


def scaled(c, X=None):
    """Sonar with its features multiplied by ``c`` (or replaced by ``X``)."""
    X = SONAR.X_train if X is None else X
    return dataclasses.replace(SONAR, X_train=X * c)


def values(cfg, ds=SONAR):
    """The result column of fold 0 of ``cfg`` on ``ds`` (mistakes, support vectors, test errors)."""
    rows, _ = run_unit(unit_spec(cfg), ds, UNIT)
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)["value"].tolist()


def refusal(cfg, ds=SONAR) -> str:
    with pytest.raises(NumericError) as exc:
        run_unit(unit_spec(cfg), ds, UNIT)
    msg = str(exc.value)
    assert "\n" not in msg and "Fix:" in msg, msg
    return msg


def apply_fix(cfg, msg: str):
    """The config with the first fix ``msg`` suggests applied."""
    m = re.search(r"Fix: set (kernel\.sigma|kernel\.scale)(?::| near) ([0-9.e+-]+)", msg)
    if m:
        return with_overrides(cfg, {m.group(1): float(m.group(2))})
    if "algorithm.theta_init: avg_sq_norm" in msg:
        return with_overrides(cfg, {"algorithm.theta_init": "avg_sq_norm", "algorithm.C": "theta_init"})
    m = re.search(r"Fix: set (?:training\.dtype: float64, or )?kernel\.degree <= (\d+)", msg)
    if m:
        return with_overrides(cfg, {"kernel.degree": int(m.group(1))})
    if "Fix: set training.dtype: float64" in msg:
        return with_overrides(cfg, {"training.dtype": "float64"})
    m = re.search(r"dataset\.preprocess: (\w+)", msg)
    if m:
        return with_overrides(cfg, {"dataset.preprocess": m.group(1)})
    raise AssertionError(f"no fix found in {msg!r}")


def check_fix_works(cfg, ds=SONAR):
    """The run refuses with exit 4, and the fix it suggests makes it run."""
    msg = refusal(cfg, ds)
    fixed = apply_fix(cfg, msg)
    assert values(fixed, ds)
    return msg


LINEAR = config()


# ------------------------------------------------------------------------- features far from 1


@pytest.mark.parametrize("c", [1e-300, 1e-200, 1e-150, 1e150, 1e200, 1e300])
def test_linear_perceptron_at_decimal_scales(c):
    """Before: at 1e-200 and 1e-300 every inner product underflowed to 0, every example was a
    mistake, exit 0; at 1e200 and 1e300 the run was refused. 1e+-150 ran right before and still
    does. Now the scale-1 mistakes and test errors at every one."""
    assert values(LINEAR, scaled(c)) == values(LINEAR)


@pytest.mark.parametrize("k", [-1000, -700, 700, 1000])
def test_linear_perceptron_at_power_of_two_scales_float32(k):
    """float32 holds 1e-38 to 3e38 only: features of 2^-1000 (or 2^1000) ran with every kernel
    value 0 (or were refused). Now equal to the scale-1 float32 run."""
    cfg = config(dtype="float32")
    assert values(cfg, scaled(2.0**k)) == values(cfg)


def test_float32_features_out_of_its_range_only():
    """Features near 1e-25 are fine in float64 but their squares underflow float32. Before: exit 0
    with zero kernel values in float32. Now the same results as the float32 scale-1 run."""
    cfg = config(dtype="float32")
    assert values(cfg, scaled(2.0**-83)) == values(cfg)


@pytest.mark.parametrize("alg", [
    {"name": "perceptron", "eta": 0.3, "theta_init": "avg_sq_norm", "C": "theta_init", "tau": 0.5},
    {"name": "perceptron", "lambda": 0.5},
    {"name": "alma", "alpha": 0.9},
    {"name": "alma", "alpha": 0.9, "p": 8.0},
])
@pytest.mark.parametrize("k", [-800, 800])
def test_scale_free_settings(alg, k):
    """Thresholds in units of the average K(x, x), the lambda trick, ALMA (p = 2 and p = 8): none
    depends on the features' scale. Before: 2^-800 ran with zero kernel values (ALMA_8 already
    underflowed at 2^-200 in |x|_8). Now the scale-1 results."""
    cfg = config(algorithm=alg)
    assert values(cfg, scaled(2.0**k)) == values(cfg)


@pytest.mark.parametrize("k", [-140, -100, 100, 140])
def test_alma_p_norm_underflow(k):
    """ALMA_8 on features near 2^-140 (2^140): |x_i|^8 underflows (overflows) although |x|^2 does
    not; the row's 8-norm came out 0 (inf) and the instance was lost. 2^+-100 was right before
    and still is. Now the scale-1 results."""
    cfg = config(algorithm={"name": "alma", "alpha": 0.9, "p": 8.0})
    assert values(cfg, scaled(2.0**k)) == values(cfg)


def test_numeric_threshold_rescaled_with_the_kernel():
    """theta_init = 0.5 with features multiplied by 2^-600: the kernel is rescaled by 2^1200 and so
    is the threshold, so the run is that of features 2^-600 with threshold 0.5 computed exactly:
    every score is far below 0.5, every step updates. Compared with the same data at 2^0 and
    threshold 0.5 * 2^-1200 (not representable): we check it refuses rather than guess."""
    cfg = config(algorithm={"name": "perceptron", "theta_init": 0.5, "C": 0.5})
    msg = check_fix_works(cfg, scaled(2.0**-600))
    assert "theta_init" in msg


@pytest.mark.parametrize("extra", [{}, {"tau": 0.5, "lambda": 0.3, "eta": 0.25}])
@pytest.mark.parametrize("k", [-490, -530])
def test_numeric_threshold_exact_rescale(k, extra):
    """theta_init = 2^(2k+1) on features 2^k: the same run as theta_init = 2 on features 2^0 (the
    kernel and the threshold rescaled together, by a power of two). Both ran right before too (on
    sonar the subnormal inner products of k = -530 kept enough bits); at k = -530 the factor,
    2^1060, is beyond float64, so this checks that the threshold is converted exactly (with a
    margin tau and the lambda trick, which are in units of K, too)."""
    a = config(algorithm={"name": "perceptron", "theta_init": 2.0 ** (2 * k + 1), "C": 2.0 ** (2 * k + 1), **extra})
    b = config(algorithm={"name": "perceptron", "theta_init": 2.0, "C": 2.0, **extra})
    assert values(a, scaled(2.0**k)) == values(b)


def test_norm_spread_wider_than_float64_is_refused():
    """Rows near 1e-200 and rows near 1e200 in one data set: no single factor brings both into
    float64. Before: refused as an overflow, suggesting standardize first. Now exit 4 naming the
    spread; the fix it suggests (unit_norm) runs."""
    X = SONAR.X_train.copy()
    X[::2] *= 1e-200
    X[1::2] *= 1e200
    msg = check_fix_works(LINEAR, scaled(1.0, X))
    assert "unit_norm" in msg


def test_one_subnormal_feature_among_normal_ones_is_harmless():
    """A single feature of 1e-310 (subnormal) beside features near 1: no rescaling needed, and
    the results are those without it (its contribution is below rounding)."""
    X = SONAR.X_train.copy()
    X[:, 0] = 1e-310
    Y = SONAR.X_train.copy()
    Y[:, 0] = 0.0
    assert values(LINEAR, scaled(1.0, X)) == values(LINEAR, scaled(1.0, Y))


# ------------------------------------------------------------------------------------ kernels


@pytest.mark.parametrize("k", [-530, -500, 500])
def test_poly_kernel_with_scale_moved_along(k):
    """(1 + x.y / s)^d is unchanged by x -> 2^k x, s -> 2^2k s. Before: at k = -530 (s = 2^-1060,
    subnormal) the inner products lost their precision; k = +-500 was right before and still
    is. Now the scale-1 results."""
    a = config(kernel={"type": "poly", "degree": 3, "scale": 2.0 ** (2 * k)})
    b = config(kernel={"type": "poly", "degree": 3, "scale": 1.0})
    assert values(a, scaled(2.0**k)) == values(b)


def test_poly_kernel_constant_is_refused():
    """Features 1e-200 with kernel.scale 1: 1 + x.y rounds to 1, K = 1 everywhere. Before: exit 0,
    one class predicted. Now exit 4; the suggested scale runs."""
    msg = check_fix_works(config(kernel={"type": "poly", "degree": 3, "scale": 1.0}), scaled(1e-200))
    assert "kernel.scale" in msg


def test_poly_kernel_huge_scale_is_refused():
    """kernel.scale = 1e30 on sonar (|x|^2 about 10): K rounds to 1. Before: exit 0. Now exit 4
    with the suggested scale that runs."""
    msg = check_fix_works(config(kernel={"type": "poly", "degree": 2, "scale": 1e30}))
    assert "far above |x|^2" in msg


def test_poly_kernel_tiny_scale_overflow_fix_works():
    """kernel.scale = 1e-300: (1 + x.y/s)^d overflows; refused before and now (unchanged), and the
    suggested kernel.scale runs."""
    check_fix_works(config(kernel={"type": "poly", "degree": 3, "scale": 1e-300}))


def test_poly_kernel_float32_tiny_scale():
    """float32, kernel.scale 1e-30: values beyond float32 handled by the base division (a constant
    factor), before and now; the mistakes are those of float64."""
    a = config(kernel={"type": "poly", "degree": 2, "scale": 1e-30}, dtype="float32")
    b = config(kernel={"type": "poly", "degree": 2, "scale": 1e-30})
    assert values(a)[0] == values(b)[0]


@pytest.mark.parametrize("sigma", [1e6, 1e200])
def test_gaussian_sigma_huge_is_refused(sigma):
    """sigma far above the distances: K = 1 in float64 for every pair, one class everywhere.
    Before: exit 0 (only too small a sigma was refused). Now exit 4; the suggested sigma runs."""
    msg = check_fix_works(config(kernel={"type": "gaussian", "sigma": sigma}))
    assert "far above" in msg


def test_gaussian_sigma_huge_float32():
    """float32 resolves less: sigma = 1e3 on sonar gives K = 1 - 1e-6, a few bits. Refused in
    float32 with a sigma that runs; float64 still runs it."""
    cfg = config(kernel={"type": "gaussian", "sigma": 1e3}, dtype="float32")
    check_fix_works(cfg)
    assert values(with_overrides(cfg, {"training.dtype": "float64"}))


@pytest.mark.parametrize("sigma", [1e-3, 1e-200])
def test_gaussian_sigma_tiny_is_refused(sigma):
    """K = I: refused before and now. Before, sigma = 1e-200 was refused with "a larger sigma" and
    no value; now with the median nearest-neighbour distance, and each suggested sigma runs."""
    check_fix_works(config(kernel={"type": "gaussian", "sigma": sigma}))


def test_poly_gaussian_sigma_huge_is_refused():
    """poly_gaussian with K = (1 + 1)^d everywhere: refused now (before: exit 0)."""
    check_fix_works(config(kernel={"type": "poly_gaussian", "degree": 2, "sigma": 1e8}))


def test_poly_gaussian_sigma_tiny_is_refused():
    """poly_gaussian with K = 1 + (2^d - 1) I: refused now (before: exit 0, label 0 everywhere)."""
    check_fix_works(config(kernel={"type": "poly_gaussian", "degree": 2, "sigma": 1e-4}))


@pytest.mark.parametrize("k", [-700, 700])
def test_gaussian_with_sigma_moved_along(k):
    """Features 2^k x and sigma 2^k sigma: the same kernel. Before (k = -700): distances
    underflowed, K = 1, exit 0. Now the scale-1 results."""
    a = config(kernel={"type": "gaussian", "sigma": 2.0 ** k})
    b = config(kernel={"type": "gaussian", "sigma": 1.0})
    assert values(a, scaled(2.0**k)) == values(b)


def test_gaussian_features_tiny_sigma_one_is_refused():
    """Features 1e-200 with sigma 1: the kernel is 1 everywhere (mathematically too); exit 4,
    and the suggested sigma runs."""
    check_fix_works(config(kernel={"type": "gaussian", "sigma": 1.0}), scaled(1e-200))


# ----------------------------------------------------------------------------- budgeted engines

BUDGET_RULES = ("last", "avg")


@pytest.mark.parametrize("alg", ["forgetron", "norma"])
def test_budget_gaussian_with_sigma_moved_along(alg):
    """A budgeted run sees the same kernel values when features and sigma move together."""
    a = config(kernel={"type": "gaussian", "sigma": 2.0**-700}, algorithm={"name": alg, "budget": 20},
               rules=BUDGET_RULES)
    b = config(kernel={"type": "gaussian", "sigma": 1.0}, algorithm={"name": alg, "budget": 20}, rules=BUDGET_RULES)
    assert values(a, scaled(2.0**-700)) == values(b)


@pytest.mark.parametrize("c", [1e-200, 1e200])
def test_budget_linear_out_of_range_is_refused(c):
    """The budgeted algorithms depend on the kernel's scale, so linear features near 1e-200 cannot
    be rescaled. Before: zero kernel values (or inf), exit 0. Now exit 4, and unit_norm runs."""
    cfg = config(algorithm={"name": "stoptron", "budget": 20}, rules=BUDGET_RULES)
    assert "unit_norm" in check_fix_works(cfg, scaled(c))


def test_budget_gaussian_sigma_huge_is_refused():
    """NORMA with sigma 1e8: K = 1 everywhere. Before: exit 0. Now exit 4 and the fix runs."""
    check_fix_works(config(kernel={"type": "gaussian", "sigma": 1e8}, algorithm={"name": "norma", "budget": 20},
                           rules=BUDGET_RULES))


# ------------------------------------------------------------------------------ preprocessing


@pytest.mark.parametrize("kind", ["standardize", "minmax", "unit_norm"])
@pytest.mark.parametrize("c", [1e-300, 1e-200, 1e200, 1e300])
def test_preprocessing_far_from_one(kind, c):
    """Before: standardize on features near 1e200 overflowed in the variance (inf, then NaN or
    zeros), and near 1e-200 underflowed (spread 0, so not divided); unit_norm's norms underflowed
    or overflowed; minmax was right and still is. Now the preprocessed features are those of the
    scale-1 data (to rounding)."""
    X = SONAR.X_train - 0.3   # negative values too: minmax spans of 2e300 overflow
    ref, _ = preprocess(kind, X, None)
    got, _ = preprocess(kind, X * c, None)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)


def test_standardize_near_1e200_gives_the_scale_1_run():
    """The case seen: standardize suggested by plab's own exit-4 message, on features near 1e200.
    Before: garbage with exit 0. Now the mistakes of the scale-1 standardized run."""
    cfg = config(dataset={"preprocess": "standardize"})
    assert values(cfg, scaled(1e200))[:2] == values(cfg)[:2]


def test_minmax_span_beyond_float64():
    """Values from -1.5e308 to 1.5e308: the span max - min overflows, and every value became 0.
    Now the scale-1 result."""
    X = SONAR.X_train * 2.0 - 1.0
    ref, _ = preprocess("minmax", X, None)
    got, _ = preprocess("minmax", X * 1.5e308, None)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)


def test_standardize_constant_column():
    """A column of 0.1 in every row: its computed spread is rounding (about 1e-17), and dividing by
    it gave values near +-1. Now the column is centred only (values below 1e-15)."""
    X = SONAR.X_train.copy()
    X[:, 0] = 0.1
    Xs, _ = preprocess("standardize", X, None)
    assert np.abs(Xs[:, 0]).max() < 1e-15


def test_preprocessing_test_values_far_beyond_the_training_values():
    """Test values of 1e308 against a training spread of 1e-300: standardize gives inf. Now
    NumericError (exit 4)."""
    X = np.full((4, 2), 1.0)
    X[:, 0] += np.arange(4) * 1e-300 * 0 + np.array([0, 1e-15, 2e-15, 3e-15])
    with pytest.raises(NumericError, match="preprocess"):
        preprocess("standardize", np.array([[0.0], [1e-300], [2e-300]]), np.array([[1e308]]))


# ------------------------------------------------------------------------------- the estimators


def est_fit(est, X, y=SONAR.y_train):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        est.fit(X, y)
    return est, [str(x.message) for x in w]


@pytest.mark.parametrize("c", [1e-300, 1e-200, 1e200, 1e300])
def test_estimator_decimal_scales(c):
    """Before: VotedPerceptron on X * 1e-200 counted every example a mistake. Now the scale-1
    mistakes and predictions, and one warning that says what was rescaled."""
    X = SONAR.X_train
    # without an intercept: fit_intercept's constant is the power of two nearest the data's rms
    # norm, which a decimal factor moves by up to sqrt 2 relative to the data (a power-of-two factor
    # keeps it: tests/estimators/test_fit_intercept.py)
    ref, _ = est_fit(VotedPerceptron(epochs=2, random_state=0, fit_intercept=False), X)
    est, w = est_fit(VotedPerceptron(epochs=2, random_state=0, fit_intercept=False), X * c)
    assert est.n_mistakes_ == ref.n_mistakes_
    assert (est.predict(X * c) == ref.predict(X)).all()
    assert len(w) == 1 and "multiplied by 2^" in w[0]


def test_estimator_decision_function_units():
    """Scores are in the units of the data given: at 2^-500 they are 2^-1000 times the scale-1 ones
    (2^-500 for a score divided by the hypothesis' norm; votes do not change). Before: the rescaled
    kernel's units for the linear kernel, and a poly kernel's float32 factor divided votes too."""
    X = SONAR.X_train
    for rule, factor in (("avg", 2.0**-1000), ("last_norm", 2.0**-500), ("vote", 1.0)):
        ref, _ = est_fit(VotedPerceptron(epochs=2, random_state=0, rule=rule), X)
        est, _ = est_fit(VotedPerceptron(epochs=2, random_state=0, rule=rule), X * 2.0**-500)
        np.testing.assert_array_equal(est.decision_function(X * 2.0**-500), ref.decision_function(X) * factor)


def test_estimator_decision_function_beyond_float64():
    """At 1e-200 the scores are near 1e-400, beyond float64: decision_function refuses (before it
    returned zeros), predict still works."""
    est, _ = est_fit(VotedPerceptron(epochs=2, random_state=0, rule="last"), SONAR.X_train * 1e-200)
    with pytest.raises(ValueError, match="outside float64"):
        est.decision_function(SONAR.X_train * 1e-200)
    assert est.predict(SONAR.X_train * 1e-200).size


@pytest.mark.parametrize("c", [2.0**-1060, 2.0**-1000, 2.0**1010, 2.0**1015])
def test_precomputed_gram_far_from_one(c):
    """kernel="precomputed" with a Gram matrix times 2^1010 or 2^1015: the scores overflowed and
    the fit was refused. 2^-1000 and 2^-1060 (subnormal values) gave the right results before
    and still do. Now all give the scale-1 mistakes and predictions."""
    X = SONAR.X_train
    G = X @ X.T
    ref, _ = est_fit(VotedPerceptron(kernel="precomputed", epochs=2, random_state=0), G)
    est, _ = est_fit(VotedPerceptron(kernel="precomputed", epochs=2, random_state=0), G * c)
    assert est.n_mistakes_ == ref.n_mistakes_
    assert (est.predict(G * c) == ref.predict(G)).all()


def test_precomputed_gram_spread_too_wide():
    """A Gram matrix whose diagonal spans 1e-300 to 1e300: refused (ValueError from NumericError)."""
    d = np.where(np.arange(10) % 2, 1e-300, 1e300)
    with pytest.raises(ValueError, match="spread wider"):
        VotedPerceptron(kernel="precomputed").fit(np.diag(d), np.arange(10) % 2)


@pytest.mark.parametrize("make", [
    lambda: MarginPerceptron(tau=0.2, theta_init="avg_sq_norm", C="theta_init", eta=0.5, epochs=2, random_state=0),
    lambda: ALMA(alpha=0.9, epochs=2, random_state=0),
    lambda: ALMA(alpha=0.9, p=6.0, epochs=2, random_state=0),
    lambda: VotedPerceptron(kernel="gaussian", sigma=1.0, epochs=2, random_state=0),
])
def test_estimators_tiny(make):
    """The other estimators at 2^-900 (with sigma moved along for the Gaussian kernel)."""
    X = SONAR.X_train
    ref, _ = est_fit(make(), X)
    est = make()
    if est.kernel == "gaussian":
        est.set_params(sigma=2.0**-900)
    est, _ = est_fit(est, X * 2.0**-900)
    assert est.n_mistakes_ == ref.n_mistakes_
    assert (est.predict(X * 2.0**-900) == ref.predict(X)).all()


def test_estimator_gaussian_sigma_huge():
    """The estimators share the check: sigma 1e6 is refused (before: fitted, one class)."""
    with pytest.raises(ValueError, match="far above"):
        VotedPerceptron(kernel="gaussian", sigma=1e6).fit(SONAR.X_train, SONAR.y_train)


# ----------------------------------------------------------------------------- property tests

SMALL = slice(0, None, 3)   # 70 rows of sonar, both classes, keep each example fast


@settings(max_examples=60, deadline=None)
@given(k=st.integers(-996, 996), alg=st.sampled_from([
    {"name": "perceptron"},
    {"name": "perceptron", "eta": 0.5, "theta_init": "avg_sq_norm", "C": "theta_init", "tau": 0.2},
    {"name": "alma", "alpha": 0.8}]))
def test_property_engine_scale(k, alg):
    """``plab run``'s engine path on 70 rows of sonar, features times 2^k from about 1e-300 to 1e300:
    the scale-1 results, or NumericError."""
    ds = scaled(1.0, SONAR.X_train[SMALL])
    ds = dataclasses.replace(ds, y_train=SONAR.y_train[SMALL])
    cfg = config(algorithm=alg, epochs=1)
    ref = values(cfg, ds)
    try:
        got = values(cfg, dataclasses.replace(ds, X_train=ds.X_train * 2.0**k))
    except NumericError:
        return
    assert got == ref


@settings(max_examples=60, deadline=None)
@given(k=st.integers(-996, 996), dtype=st.sampled_from(["float64", "float32"]))
def test_property_estimator_scale(k, dtype):
    """VotedPerceptron on 70 rows of sonar, X times 2^k: the scale-1 mistakes and predictions, or a
    ValueError (the estimators' form of NumericError)."""
    X, y = SONAR.X_train[SMALL], SONAR.y_train[SMALL]
    ref = VotedPerceptron(epochs=1, random_state=0, dtype=dtype).fit(X, y)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = VotedPerceptron(epochs=1, random_state=0, dtype=dtype).fit(X * 2.0**k, y)
    except ValueError:
        return
    assert est.n_mistakes_ == ref.n_mistakes_
    assert (est.predict(X * 2.0**k) == ref.predict(X)).all()


# --------------------------------------------------------------------------------- the command


def test_cli_run_at_1e_minus_200(tmp_path):
    """``plab run`` on a data file of sonar times 1e-200: exit 0, one note, the note in run.json,
    the scale-1 results."""
    out = {}
    for name, c in (("one", 1.0), ("tiny", 1e-200)):
        np.savez(tmp_path / f"{name}.npz", X=SONAR.X_train * c, y=SONAR.y_train)
        (tmp_path / f"{name}.yaml").write_text(
            f"name: {name}\ndataset:\n  path: {name}.npz\nkernel:\n  type: linear\nalgorithm:\n  name: perceptron\n"
            "training:\n  epochs: 2\n  seed: 0\nprediction:\n  rules: [last, vote]\nevaluation:\n  mode: kfold\n"
            "  folds: 3\noutput:\n  figures: false\n")
        from click.testing import CliRunner
        from perceptron_lab.cli.main import main
        r = CliRunner().invoke(main, ["run", str(tmp_path / f"{name}.yaml"), "--out", str(tmp_path / name),
                                      "-q"], catch_exceptions=False)
        assert r.exit_code == 0, r.output
        notes = [ln for ln in r.stderr.splitlines() if "multiplied by 2^" in ln]
        assert len(notes) == (1 if c != 1.0 else 0), r.stderr
        if notes:
            assert notes[0].startswith("plab: note:")
            assert "numerics" in (tmp_path / name / "run.json").read_text()
        out[name] = pd.read_csv(tmp_path / name / "results.csv")["value"].tolist()
    assert out["one"] == out["tiny"]


def test_cli_gaussian_sigma_huge_exit_4(tmp_path):
    """``plab run`` with sigma 1e6 on sonar: exit 4 and one ``plab: error:`` line."""
    (tmp_path / "g.yaml").write_text(
        "name: g\ndataset:\n  name: sonar\nkernel:\n  type: gaussian\n  sigma: 1.0e+6\nalgorithm:\n  name: perceptron\n"
        "training:\n  epochs: 1\nevaluation:\n  mode: kfold\n  folds: 2\noutput:\n  figures: false\n")
    status, _, errors = plab("run", tmp_path / "g.yaml", "--out", tmp_path / "o", "-q")
    assert status == 4 and len(errors) == 1 and "kernel.sigma near" in errors[0]


def test_kernel_describe_in_user_units():
    """Messages name the kernel as configured, not as rescaled."""
    k = Kernel("gaussian", sigma=2.0**-700).range_safe(SONAR.X_train * 2.0**-700, np.float64)
    assert k.feature_exp != 0 and k.describe() == Kernel("gaussian", sigma=2.0**-700).describe()


@pytest.mark.parametrize("rule", ["vote", "last_norm", "avg"])
def test_float32_poly_decision_function_units(rule):
    """float32 divides a poly kernel by a constant c^d to stay in range. Before: decision_function
    divided every rule's scores by that factor, so votes came out times c^d and normalized scores
    times c^(d/2). Now each rule's scores are those of float64 (to float32 rounding)."""
    X, y = SONAR.X_train, SONAR.y_train
    kw = dict(kernel="poly", degree=3, scale=0.01, epochs=1, random_state=0, rule=rule)
    a = VotedPerceptron(dtype="float32", **kw).fit(X, y)
    b = VotedPerceptron(dtype="float64", **kw).fit(X, y)
    assert a.kernel_.value_factor != 1.0
    sa, sb = a.decision_function(X), b.decision_function(X)
    np.testing.assert_allclose(sa, sb, rtol=1e-3, atol=1e-4 * np.abs(sb).max())


def test_float32_linear_beyond_float32_only():
    """float32, features near 2^70 (1e21): squared norms beyond float32, fine in float64. Before:
    refused. Now the float32 scale-1 results."""
    cfg = config(dtype="float32")
    assert values(cfg, scaled(2.0**70)) == values(cfg)


def test_poly_gaussian_degree_overflow_fix_works():
    """poly_gaussian of degree 1100: 2^1100 overflows float64; refused before and now, and the
    suggested degree runs."""
    check_fix_works(config(kernel={"type": "poly_gaussian", "degree": 1100, "sigma": 1.0}))


def test_float32_poly_small_rows_fix_works():
    """float32, poly degree 12 on rows whose norms differ 100-fold: divided to fit float32, the
    small rows' K(x, x) falls below its range. Refused before and now; the suggested
    training.dtype: float64 runs."""
    X = SONAR.X_train.copy()
    X[::2] *= 100.0
    check_fix_works(config(kernel={"type": "poly", "degree": 12, "scale": 0.01}, dtype="float32"), scaled(1.0, X))


def test_minmax_constant_column():
    """minmax on a column of one value gives 0 there, before and now."""
    X = SONAR.X_train.copy()
    X[:, 3] = 1e300
    got, _ = preprocess("minmax", X, None)
    assert (got[:, 3] == 0).all() and np.isfinite(got).all()


def test_test_features_far_beyond_the_training_features():
    """Training features of sonar, test features times 1e300: kernel values between them overflow
    on the scores; refused (exit 4) before and now, never a wrong error rate."""
    cfg = config_from_dict({
        "name": "range", "dataset": {"name": "sonar"}, "kernel": {"type": "poly", "degree": 6},
        "algorithm": {"name": "perceptron"}, "training": {"epochs": 1, "checkpoints": [1], "seed": 3},
        "prediction": {"rules": ["last"]}, "evaluation": {"mode": "holdout"}})
    half = len(SONAR.y_train) // 2
    ds = dataclasses.replace(SONAR, X_train=SONAR.X_train[:half], y_train=SONAR.y_train[:half],
                             X_test=SONAR.X_train[half:] * 1e300, y_test=SONAR.y_train[half:])
    with pytest.raises(NumericError):
        run_unit(unit_spec(cfg), ds, Unit(0, {}, -1, 0))


def test_duplicates_and_zero_rows_are_not_a_constant_kernel():
    """Rows of zeros (K = 1 with every row under a poly kernel) and repeated examples (K = 1 between
    copies under a Gaussian kernel) are right as they are: two thirds of the rows so do not make
    the kernel count as constant."""
    X = SONAR.X_train.copy()
    X[: 2 * len(X) // 3] = 0.0
    assert values(config(kernel={"type": "poly", "degree": 2, "scale": 1.0}), scaled(1.0, X))
    X = SONAR.X_train.copy()
    X[: 2 * len(X) // 3] = X[0]
    assert values(config(kernel={"type": "gaussian", "sigma": 1.0}), scaled(1.0, X))


# ----------------------------------------------------------------------------- the budgeted estimator


@pytest.mark.parametrize("alg", ["forgetron", "projectron", "norma", "stoptron"])
@pytest.mark.parametrize("k", [-700, 700])
def test_budget_estimator_gaussian_with_sigma_moved_along(alg, k):
    """Before: BudgetPerceptron took the features as given, so at 2^-700 with sigma moved along
    every squared distance underflowed. Now the scale-1 mistakes, support sets and predictions,
    through partial_fit too, and the support vectors in the caller's units."""
    from perceptron_lab import BudgetPerceptron

    X, y = SONAR.X_train, SONAR.y_train
    c = 2.0**k

    def make(sigma):
        return BudgetPerceptron(algorithm=alg, budget=20, kernel="gaussian", sigma=sigma, epochs=2, random_state=0)

    ref = make(2.0).fit(X[:150], y[:150]).partial_fit(X[150:180], y[150:180])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        est = make(2.0 * c).fit(X[:150] * c, y[:150]).partial_fit(X[150:180] * c, y[150:180])
    assert any("multiplied by 2^" in str(x.message) for x in w)
    assert est.n_mistakes_ == ref.n_mistakes_ and (est.support_ == ref.support_).all()
    assert (est.support_vectors_ == X[:180][ref.support_] * c).all()
    for rule in ("last", "avg", "vote"):
        assert (est.set_params(rule=rule).predict(X[180:] * c) == ref.set_params(rule=rule).predict(X[180:])).all()


@pytest.mark.parametrize("c", [1e-200, 1e200])
def test_budget_estimator_linear_out_of_range_is_refused(c):
    """Before: BudgetPerceptron(kernel="linear") on sonar * 1e-200 made 208 mistakes out of 208
    with no error. The budgeted algorithms depend on the kernel's scale, so it is refused, and
    the fix it names for Python (X divided by one constant) runs, with the mistakes and predictions
    of the scale-1 data divided the same way (scikit-learn's MaxAbsScaler would leave 1e-200 as is)."""
    from perceptron_lab import BudgetPerceptron

    X, y = SONAR.X_train * c, SONAR.y_train
    with pytest.raises(ValueError, match="divide X") as exc:
        BudgetPerceptron(algorithm="stoptron", budget=20, kernel="linear").fit(X, y)
    assert "\n" not in str(exc.value)
    top = np.abs(X).max()  # the fix it names: one constant for fit and predict
    est = BudgetPerceptron(algorithm="stoptron", budget=20, kernel="linear", random_state=0).fit(X / top, y)
    ref = BudgetPerceptron(algorithm="stoptron", budget=20, kernel="linear", random_state=0).fit(
        SONAR.X_train / np.abs(SONAR.X_train).max(), y)
    assert est.n_mistakes_ == ref.n_mistakes_
    assert (est.predict(X / top) == ref.predict(SONAR.X_train / np.abs(SONAR.X_train).max())).all()


def test_budget_estimator_test_set_beyond_the_training_scale_is_refused():
    from perceptron_lab import BudgetPerceptron

    with pytest.warns(UserWarning, match="multiplied by 2"):   # the rescaling is said, once
        est = BudgetPerceptron(algorithm="forgetron", budget=20, kernel="gaussian", sigma=2.0**-698).fit(
            SONAR.X_train * 2.0**-700, SONAR.y_train)
    with pytest.raises(ValueError, match="far from the scale"):
        est.predict(SONAR.X_train * 2.0**-100)


# ------------------------------------------------------------------------- ALMA over p (any p >= 2)

ALMA_ROWS = SONAR.X_train[::7]            # 30 rows of sonar, both classes; the others' test rows
ALMA_TEST = SONAR.X_train[3::7]
#: the same rows with 4 features in 5 set to 0: with p in the hundreds the weights of all but the
#: largest features underflow, and an example that is 0 on those gets a margin float64 cannot sign
ALMA_SPARSE = ALMA_ROWS * (np.random.default_rng(11).random(ALMA_ROWS.shape) < 0.2)
_EXACT_ALMA: dict = {}


def _exact_alma(X, Y, order, steps, p, setting):
    """Figure 1 in 40-digit decimals (tests/exact_alma.py) on the float64 rows ``X``, cached for
    the unscaled rows: x^ = x / |x|_p is the same for every positive multiple of x, so in exact
    arithmetic the run on 2^k X is the run on X wherever 2^k X is X exactly (no rounding)."""
    from exact_alma import ExactAlma

    key = (X.tobytes(), p, tuple(sorted(setting.items())))
    if key not in _EXACT_ALMA:
        _EXACT_ALMA[key] = ExactAlma(X, Y, p=p, **setting).fit(order, steps)
    return _EXACT_ALMA[key]


@settings(max_examples=25, deadline=None)
@given(k=st.integers(-1070, 1020), alpha=st.sampled_from([1.0, 0.8]), sparse=st.booleans(),
       p=st.one_of(st.sampled_from([2.0, 6.0, 10.0, 300.0, 1000.0, 5000.0]),
                   st.floats(0.31, 6.0).map(lambda e: float(round(10.0**e, 3)))))
def test_property_alma_over_p(k, alpha, sparse, p):
    """ALMA_p's primal loop (plab run's and the estimators') on 30 rows of sonar (dense, or with 4
    features in 5 set to 0) times 2^k, from
    2^-1070 (subnormal features) to 2^1020, p from 2 to a million: the corrections of Figure 1 in
    40-digit decimals on the same rows, and its signs on test rows, or NumericError. The
    invariance: ALMA normalizes instances (x^ = x / |x|_p), so the exact run does not depend on k
    (wherever 2^k X is exact; below 2^-1022 the rows are rounded, and the exact run is taken on the
    rounded rows). Before: from p = 300 on, w underflowed to 0 and every step was a correction."""
    from perceptron_lab.engine.alma import AlmaParams, pnormalize, train_primal
    from perceptron_lab.engine.perceptron import label_matrix

    setting = dict(alpha=alpha) if alpha == 1.0 else dict(alpha=alpha, B=0.3 / np.sqrt(p - 1.0))
    y = SONAR.y_train[::7]
    Y = label_matrix(y, 2)
    order = np.random.default_rng(5).permutation(len(y))
    X = ALMA_SPARSE if sparse else ALMA_ROWS
    with np.errstate(under="ignore"):
        Xs = np.ldexp(X, k)
    exact_rows = X if np.array_equal(np.ldexp(Xs, -k), X) else Xs
    ref = _exact_alma(exact_rows, Y, order, 2 * len(y), p, setting)
    try:
        log = train_primal(Xs, Y, AlmaParams(p=p, **setting), order, 2.0, [2.0])
    except NumericError as exc:
        assert "Fix:" in str(exc)
        return
    assert [(int(s), int(e), int(c)) for s, e, c in zip(log.upd_step, log.upd_ex, log.upd_cls)] == ref.updates
    if log.n_updates:
        w = log.hyp_w[-1]
        exact = np.array([float(np.sign(s[0])) for s in ref.scores(ALMA_TEST)])
        assert (np.sign(pnormalize(ALMA_TEST, p) @ w) == exact).all()


def test_cli_alma_undecidable_margin_exit_4(tmp_path):
    """``plab run`` with ALMA_10000(1) on sonar with 4 features in 5 set to 0: a margin float64
    cannot sign decides a correction. Before: exit 0 with w = 0 after every update (every step a
    correction). Now exit 4, one ``plab: error:`` line, and its fix (alpha below 1) runs."""
    X = SONAR.X_train * (np.random.default_rng(11).random(SONAR.X_train.shape) < 0.2)
    np.savez(tmp_path / "sparse.npz", X=X, y=SONAR.y_train)
    (tmp_path / "a.yaml").write_text(
        "name: a\ndataset:\n  path: sparse.npz\nkernel:\n  type: linear\nalgorithm:\n  name: alma\n  p: 10000\n"
        "  alpha: 1.0\ntraining:\n  epochs: 1\nprediction:\n  rules: [last]\nevaluation:\n  mode: kfold\n"
        "  folds: 2\noutput:\n  figures: false\n")
    status, _, errors = plab("run", tmp_path / "a.yaml", "--out", tmp_path / "o", "-q")
    assert status == 4 and len(errors) == 1 and "Fix: set algorithm.alpha below 1" in errors[0], errors
    status, _, errors = plab("run", tmp_path / "a.yaml", "algorithm.alpha=0.9", "--out", tmp_path / "f", "-q")
    assert status == 0, errors


# ------------------------------------------------------------------------- the online classes

ONLINE_ROWS = SONAR.X_train[np.random.default_rng(7).permutation(len(SONAR.y_train))[:40]]
ONLINE_Y = SONAR.y_train[np.random.default_rng(7).permutation(len(SONAR.y_train))[:40]]


def _refusal_kind(exc: ValueError) -> str:
    msg = str(exc)
    for kind in ("outside float64's range", "overflows float64", "below float64's range"):
        if kind in msg:
            return kind
    raise AssertionError(f"an unexpected refusal: {msg}")


def _progressive(model, X):
    """Predict, then learn, each example of the stream X (ONLINE_Y): the class predicted or the
    kind of refusal, and whether it was learned. A predicted class must come from scores that are
    numbers (the decision_one values of that example)."""
    out = []
    for x, t in zip([{f"f{j}": float(v) for j, v in enumerate(row)} for row in X], ONLINE_Y.tolist()):
        try:
            pred = model.predict_one(x)
            if model._started:
                scores = list(model.decision_one(x).values())
                assert np.isfinite(scores).all(), "a class from scores that are not numbers"
        except ValueError as exc:
            pred = _refusal_kind(exc)
        try:
            model.learn_one(x, t)
            learned = "learned"
        except ValueError as exc:
            learned = _refusal_kind(exc)
        out.append((pred, learned))
    return out


@settings(max_examples=50, deadline=None)
@given(k=st.integers(-540, 540), degree=st.integers(1, 400), gaussian=st.booleans(),
       sigma=st.sampled_from([0.02, 0.3, 2.0]), scale=st.sampled_from([0.1, 1.0, 30.0]),
       alg=st.sampled_from(["kernel_perceptron", "stoptron", "rbp", "forgetron", "projectron", "norma"]),
       rule=st.sampled_from(["last", "avg"]))
def test_property_online_kernel_scale(k, degree, gaussian, sigma, scale, alg, rule):
    """KernelPerceptron and BudgetKernelPerceptron on a stream of 40 sonar rows times 2^k, the
    kernel moved along (poly: scale times 4^k; Gaussian: sigma times 2^k), polynomial degrees up
    to 400: every kernel value is the one of the unscaled stream, bit for bit (x.y / scale and
    |x - y|^2 / sigma^2 are unchanged by a power of two while the squared norms stay in float64's
    range), so predictions, updates and refusals are those of the unscaled stream; or the stream is
    refused for its range. A class is never predicted from scores that are not numbers. sigma 0.02
    puts most Gaussian kernel values below float64's range (sonar's examples lie 0.5 to 2 apart):
    predictions from the exact scores' signs, and learn_one's refusals, alike at every scale.
    Before: at high degrees K overflowed, the scores were inf or NaN, and predict_one still
    returned a class."""
    from perceptron_lab.estimators.online import BudgetKernelPerceptron, KernelPerceptron

    def make(e):
        kern = (dict(kernel="gaussian", sigma=float(np.ldexp(sigma, e))) if gaussian else
                dict(kernel="poly", degree=degree, scale=float(np.ldexp(scale, 2 * e))))
        if alg == "kernel_perceptron":
            return KernelPerceptron(**kern, rule=rule, classes=[0, 1])
        eta = {"projectron": 0.3, "norma": 0.5}.get(alg)
        return BudgetKernelPerceptron(alg, budget=10, eta=eta, **kern, rule=rule, classes=[0, 1], seed=3)

    with np.errstate(over="ignore", under="ignore"):
        moved = float(np.ldexp(sigma, k) if gaussian else np.ldexp(scale, 2 * k))
    assume(np.finfo(float).tiny <= moved < np.inf)  # a kernel setting float64 holds
    ref = _progressive(make(0), ONLINE_ROWS)
    got = _progressive(make(k), np.ldexp(ONLINE_ROWS, k))
    if any("outside float64's range" in (a, b) for a, b in got):
        assert all(b == "outside float64's range" for _, b in got)
    else:
        assert got == ref
