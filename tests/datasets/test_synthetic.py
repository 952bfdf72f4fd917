"""The artificial data generators of Khardon & Wachman (2007) and Gentile (2001)."""

from __future__ import annotations

import numpy as np
import pytest

from perceptron_lab.datasets.synthetic import gentile_sparse, kw_artificial
from perceptron_lab.errors import ConfigError


def _same(a, b) -> bool:
    return (
        np.array_equal(a.X_train, b.X_train)
        and np.array_equal(a.y_train, b.y_train)
        and (a.X_test is None) == (b.X_test is None)
        and (a.X_test is None or np.array_equal(a.X_test, b.X_test))
        and (a.y_test is None or np.array_equal(a.y_test, b.y_test))
    )


# --- Khardon & Wachman ------------------------------------------------------------------------


@pytest.mark.parametrize("weight_rule", ["feature", "example"])
def test_kw_deterministic_and_seed_dependent(weight_rule):
    a = kw_artificial(50, 0.25, 0.1, seed=3, weight_rule=weight_rule)
    b = kw_artificial(50, 0.25, 0.1, seed=3, weight_rule=weight_rule)
    c = kw_artificial(50, 0.25, 0.1, seed=4, weight_rule=weight_rule)
    assert _same(a, b)
    assert np.array_equal(a.meta["w"], b.meta["w"]) and a.meta["theta"] == b.meta["theta"]
    assert not np.array_equal(a.X_train, c.X_train)


@pytest.mark.parametrize("f", [50, 200, 500])
@pytest.mark.parametrize("margin", [0.05, 0.75])
def test_kw_shape_values_and_margin_before_noise(f, margin):
    d = kw_artificial(f, margin, 0.15, seed=1)
    m = d.meta
    assert d.X_train.shape == (600, f) and d.y_train.shape == (600,)
    assert d.X_train.dtype == np.float64 and d.y_train.dtype == np.int64
    assert d.X_test is None and d.y_test is None
    assert d.classes == [-1, 1]
    # integer attributes in [-10, 10], all 21 values in use
    assert np.array_equal(d.X_train, np.round(d.X_train))
    assert set(np.unique(d.X_train)) == set(range(-10, 11))
    # w in {0, 1}^f from one coin per feature
    assert set(np.unique(m["w"])) <= {0.0, 1.0} and m["w"].shape == (f,)
    assert m["theta"] > 0
    a = d.X_train @ m["w"] - m["theta"]
    assert (np.abs(a) >= margin * m["theta"]).all()
    # clean labels are sign(<w, x> - theta); the observed labels differ exactly where flipped
    assert np.array_equal(m["clean_y"], np.where(a > 0, 1, -1))
    observed = np.where(d.y_train == 1, 1, -1)
    assert np.array_equal(observed != m["clean_y"], m["flipped"])
    assert m["n_flipped"] == int(m["flipped"].sum())
    assert (m["f"], m["M"], m["N"]) == (f, margin, 0.15)
    assert m["n_drawn"] >= 600


def test_kw_theta_is_half_mean_abs_activation_of_initial_pool():
    # with M = 0 (and no example exactly at theta) nothing is discarded, so the pool is the data
    d = kw_artificial(50, 0.0, 0.0, n=400, seed=7)
    assert d.meta["n_drawn"] == 400
    assert d.meta["theta"] == pytest.approx(np.mean(0.5 * np.abs(d.X_train @ d.meta["w"])))


def test_kw_larger_margin_discards_more():
    small = kw_artificial(200, 0.05, 0.0, seed=2)
    large = kw_artificial(200, 0.75, 0.0, seed=2)
    assert large.meta["n_drawn"] > small.meta["n_drawn"]
    assert small.meta["n_flipped"] == large.meta["n_flipped"] == 0


@pytest.mark.parametrize("noise", [0.05, 0.1, 0.25])
def test_kw_noise_rate_near_requested(noise):
    n = 20000
    d = kw_artificial(50, 0.1, noise, n=n, seed=11)
    rate = d.meta["n_flipped"] / n
    assert abs(rate - noise) < 4 * np.sqrt(noise * (1 - noise) / n)


def test_kw_noise_changes_only_labels():
    clean = kw_artificial(50, 0.25, 0.0, seed=5)
    noisy = kw_artificial(50, 0.25, 0.25, seed=5)
    assert np.array_equal(clean.X_train, noisy.X_train)
    assert np.array_equal(clean.meta["clean_y"], noisy.meta["clean_y"])
    assert noisy.meta["n_flipped"] > 0


def test_kw_example_weight_rule_sums_examples():
    d = kw_artificial(20, 0.1, 0.0, n=300, seed=0, weight_rule="example")
    w = d.meta["w"]
    assert np.array_equal(w, np.round(w)) and np.abs(w).max() > 10  # a sum of several examples
    a = d.X_train @ w - d.meta["theta"]
    assert (np.abs(a) >= 0.1 * d.meta["theta"]).all()


def test_kw_rejects_bad_parameters():
    with pytest.raises(ConfigError, match="noise"):
        kw_artificial(50, 0.1, 1.5)
    with pytest.raises(ConfigError, match="margin"):
        kw_artificial(50, -0.1, 0.0)
    with pytest.raises(ConfigError, match="weight_rule"):
        kw_artificial(50, 0.1, 0.0, weight_rule="coin")
    with pytest.raises(ConfigError, match="smaller margin"):
        kw_artificial(5, 100.0, 0.0, n=10)


# --- Gentile ----------------------------------------------------------------------------------


def test_gentile_deterministic_and_seed_dependent():
    a = gentile_sparse(n_train=2000, n_test=1000, seed=3, epsilon=0.1)
    b = gentile_sparse(n_train=2000, n_test=1000, seed=3, epsilon=0.1)
    c = gentile_sparse(n_train=2000, n_test=1000, seed=4, epsilon=0.1)
    assert _same(a, b) and np.array_equal(a.meta["u"], b.meta["u"])
    assert not np.array_equal(a.X_train, c.X_train)
    assert not np.array_equal(a.X_test, c.X_test)


def test_gentile_default_shapes():
    d = gentile_sparse()
    assert d.X_train.shape == (10000, 300) and d.X_test.shape == (10000, 300)
    assert d.y_train.shape == (10000,) and d.y_test.shape == (10000,)
    assert d.X_train.dtype == np.float64 and d.y_train.dtype == np.int64
    assert d.classes == [-1, 1]


@pytest.mark.parametrize("s", [3, 10, 100, 300])
def test_gentile_target_margin_and_clean_test(s):
    d = gentile_sparse(n_train=3000, n_test=3000, s=s, epsilon=0.0, seed=1)
    u = d.meta["u"]
    assert u.shape == (300,)
    assert set(np.unique(u[:s])) <= {-1.0, 1.0} and not u[s:].any()
    for X in (d.X_train, d.X_test):
        assert X.min() >= -1.0 and X.max() <= 1.0
    margins = d.X_train @ u
    assert (np.abs(margins) >= 1.0).all()  # margin 1 on the training set
    assert np.array_equal(d.y_train, (margins > 0).astype(np.int64))  # epsilon = 0: clean
    assert np.array_equal(d.y_test, (d.X_test @ u > 0).astype(np.int64))
    assert np.abs(d.X_test @ u).min() < 1.0  # no margin forced on the test set


@pytest.mark.parametrize("epsilon", [0.05, 0.15])
def test_gentile_noise_on_training_labels_only(epsilon):
    n = 10000
    d = gentile_sparse(n_train=n, n_test=2000, s=10, epsilon=epsilon, seed=2)
    u = d.meta["u"]
    clean = np.where(d.X_train @ u > 0, 1, -1)
    assert np.array_equal(clean, d.meta["clean_y_train"])
    observed = np.where(d.y_train == 1, 1, -1)
    assert np.array_equal(observed != clean, d.meta["flipped"])
    rate = d.meta["n_flipped"] / n
    assert abs(rate - epsilon) < 4 * np.sqrt(epsilon * (1 - epsilon) / n)
    assert np.array_equal(d.y_test, (d.X_test @ u > 0).astype(np.int64))


def test_gentile_noise_and_train_size_keep_instances():
    a = gentile_sparse(n_train=1000, n_test=500, epsilon=0.0, seed=9)
    b = gentile_sparse(n_train=1000, n_test=500, epsilon=0.15, seed=9)
    c = gentile_sparse(n_train=3000, n_test=500, epsilon=0.0, seed=9)
    assert np.array_equal(a.X_train, b.X_train) and np.array_equal(a.meta["u"], b.meta["u"])
    assert np.array_equal(a.X_test, c.X_test) and np.array_equal(a.y_test, c.y_test)
    assert np.array_equal(a.X_train, c.X_train[:1000])


def test_gentile_acceptance_rate_for_s3():
    # P(|x1 + x2 + x3| >= 1) = 1/3 for independent uniform x_i in [-1, 1]
    d = gentile_sparse(n_train=6000, n_test=0, s=3, seed=0)
    assert d.meta["n_drawn"] / 6000 == pytest.approx(3.0, rel=0.06)
    assert d.X_test.shape == (0, 300)


def test_gentile_rejects_bad_parameters():
    with pytest.raises(ConfigError, match="s must be >= 2"):
        gentile_sparse(s=1)
    with pytest.raises(ConfigError, match="exceeds"):
        gentile_sparse(s=301)
    with pytest.raises(ConfigError, match="epsilon"):
        gentile_sparse(epsilon=-0.1)
