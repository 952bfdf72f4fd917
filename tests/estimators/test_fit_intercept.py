"""fit_intercept of every estimator and online class, and kernel.fit_intercept of a config."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from perceptron_lab import ALMA, BudgetPerceptron, MarginPerceptron, VotedPerceptron
from perceptron_lab.config.load import config_from_dict
from perceptron_lab.estimators import online
from perceptron_lab.run.plan import results_hash

# one feature, every value positive: the classes are split at x = 2.5, which no line through the
# origin does (sign(w x) is one sign for every x > 0), and a line with an intercept does
X1 = np.array([[1.0], [2.0], [3.0], [4.0], [1.5], [3.5], [0.5], [4.5]])
Y1 = np.array([0, 0, 1, 1, 0, 1, 0, 1])

BATCH = {
    "voted": lambda **kw: VotedPerceptron(epochs=50, random_state=0, **kw),
    "margin": lambda **kw: MarginPerceptron(epochs=50, random_state=0, **kw),
    "alma": lambda **kw: ALMA(alpha=0.9, epochs=50, random_state=0, **kw),
    "stoptron": lambda **kw: BudgetPerceptron(algorithm="stoptron", budget=None, epochs=50, random_state=0, **kw),
}


@pytest.mark.parametrize("name", ["voted", "margin", "alma"])
def test_batch_estimators_fit_a_threshold_only_with_an_intercept(name):
    without = BATCH[name](fit_intercept=False).fit(X1, Y1)
    assert without.score(X1, Y1) < 1.0  # every x > 0 gets the one sign of w
    with_ = BATCH[name]().fit(X1, Y1)   # the default, as scikit-learn's Perceptron
    assert with_.get_params()["fit_intercept"] is True
    assert with_.score(X1, Y1) == 1.0


@pytest.mark.parametrize("name", ["voted", "margin", "stoptron"])
def test_the_intercept_is_a_constant_feature(name):
    """fit_intercept=True is the same model as fit_intercept=False on X with a constant column a,
    the power of two nearest the training rows' root mean square norm (here sqrt 1.75: a = 1)."""
    rng = np.random.default_rng(3)
    X = rng.integers(-2, 3, size=(60, 4)).astype(float)   # integers: a^2 = 3.25 below is exact
    X[:, 3] = np.where(np.arange(60) % 2, 1.0, -1.0)
    X[:, :3] = np.where(X[:, :3] == 0, 1.0, X[:, :3])
    X[:, :3] = np.sign(X[:, :3]) * 0.5                     # every |x|^2 = 3 * 0.25 + 1 = 1.75
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    T = rng.normal(size=(20, 4))
    a = 1.0
    col = lambda A: np.hstack([A, np.full((len(A), 1), a)])  # noqa: E731
    with_ = BATCH[name]().fit(X, y)
    plain = BATCH[name](fit_intercept=False).fit(col(X), y)
    np.testing.assert_array_equal(with_.predict(T), plain.predict(col(T)))
    np.testing.assert_array_equal(with_.decision_function(T), plain.decision_function(col(T)))
    assert with_.support_vectors_ is None or with_.support_vectors_.shape[1] == 4  # X's units, no column


def test_the_model_is_the_same_on_x_times_a_power_of_two():
    """The constant is in the data's units: X * 2^k gives the mistakes and predictions of X."""
    rng = np.random.default_rng(8)
    X, T = rng.normal(size=(80, 5)), rng.normal(size=(30, 5))
    y = (X[:, 0] - 0.4 > 0).astype(int)
    ref = VotedPerceptron(epochs=3, random_state=0).fit(X, y)
    for k in (-600, -20, 20, 600):
        with warnings.catch_warnings():   # far scales are rescaled by a power of two, and it says so
            warnings.filterwarnings("ignore", message="the features are multiplied by", category=UserWarning)
            est = VotedPerceptron(epochs=3, random_state=0).fit(np.ldexp(X, k), y)
        assert est.n_mistakes_ == ref.n_mistakes_
        assert (est.predict(np.ldexp(T, k)) == ref.predict(T)).all()


def test_precomputed_gram_gets_the_same_constant():
    rng = np.random.default_rng(4)
    X, T = rng.normal(size=(40, 3)), rng.normal(size=(10, 3))
    y = (X[:, 1] - 0.3 > 0).astype(int)
    lin = VotedPerceptron(epochs=3, random_state=1).fit(X, y)
    pre = VotedPerceptron(kernel="precomputed", epochs=3, random_state=1).fit(X @ X.T, y)
    np.testing.assert_array_equal(lin.predict(T), pre.predict(T @ X.T))


@pytest.mark.parametrize("make", [
    lambda **kw: online.KernelPerceptron(kernel="linear", **kw),
    lambda **kw: online.BudgetKernelPerceptron("stoptron", budget=None, kernel="linear", **kw),
    lambda **kw: online.ALMA(alpha=0.9, **kw),
])
def test_online_classes_fit_a_threshold_only_with_an_intercept(make):
    def run(**kw):
        model = make(**kw)
        for _ in range(50):
            for x, y in zip(X1, Y1):
                model.learn_one({"x": float(x[0])}, int(y))
        return [model.predict_one({"x": float(x[0])}) for x in X1]

    assert run(fit_intercept=False) != Y1.tolist()
    assert run() == Y1.tolist()


def test_gaussian_intercept_is_the_kernel_plus_one_online():
    """With a Gaussian kernel the constant is in the kernel: after one update f = y K'(x1, .), so
    far from x1 (every Gaussian value 0 in float64) the score is y * (0 + 1)."""
    for fit, want in ((True, 1.0), (False, 0.0)):
        model = online.KernelPerceptron(kernel="gaussian", sigma=1.0, classes=[False, True], fit_intercept=fit)
        model.learn_one({"a": 0.3}, True)  # score 0: a mistake, f = +K'(x1, .)
        assert model.decision_one({"a": 1e3}) == {True: want}


@pytest.mark.parametrize("bad", ["yes", 2, None])
def test_fit_intercept_has_the_schema_range(bad):
    with pytest.raises(InvalidParameterError, match="'fit_intercept' parameter of VotedPerceptron"):
        VotedPerceptron(fit_intercept=bad).fit(X1, Y1)
    with pytest.raises(ValueError, match="'fit_intercept' parameter of KernelPerceptron"):
        online.KernelPerceptron(fit_intercept=bad)


def _cfg(**kernel):
    return config_from_dict({"name": "t", "dataset": {"name": "sonar"}, "kernel": {"type": "linear", **kernel}})


def test_config_key_defaults_to_false_and_keeps_the_results_hash():
    assert _cfg().kernel.fit_intercept is False
    # written with its default value, the key leaves every recorded hash as it was
    assert results_hash(_cfg(fit_intercept=False)) == results_hash(_cfg())
    assert results_hash(_cfg(fit_intercept=True)) != results_hash(_cfg())
    assert "fit_intercept" not in _cfg(fit_intercept=False).to_dict()["kernel"]
    assert _cfg(fit_intercept=True).to_dict()["kernel"]["fit_intercept"] is True


def test_config_key_is_checked_like_every_key():
    from perceptron_lab.errors import ConfigError

    with pytest.raises(ConfigError, match="kernel.fit_intercept"):
        _cfg(fit_intercept="sometimes")
