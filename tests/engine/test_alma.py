"""ALMA_p (Gentile 2001) against the literal reference in tests/naive.py, and the paper's claims."""

import math

import numpy as np
import pandas as pd
import pytest

from perceptron_lab.engine import train_algorithm
from perceptron_lab.run.spec import algorithm_settings, unit_spec
from perceptron_lab.engine.alma import (AlmaParams, link_f, link_f_inv, pnormalize,
                                        theorem3_bound, train_alma, train_primal)
from perceptron_lab.model.margins import hypothesis_at, margin_distribution, training_margins
from perceptron_lab.engine.perceptron import EngineError, epochs_to_steps, label_matrix
from perceptron_lab.engine.kernels import Kernel, gram
from perceptron_lab.model.predict import RULES, counts_at_checkpoints, evaluate

from naive import NaiveAlma, naive_errors, random_slices, steps_to


def _train(cfg, X, Y, kernel, order, checkpoints, dtype, seed=0):
    """Train ``cfg``'s algorithm as a unit of ``plab run`` does: its spec's settings, epochs and
    engine options, through the one training call."""
    spec = unit_spec(cfg)
    return train_algorithm(spec.settings, X, Y, kernel, order, spec.epochs, checkpoints, dtype=dtype,
                           chunk_size=spec.chunk_size, cache_limit_gb=spec.cache_limit_gb, seed=seed)


def small_problem(seed, n=30, f=5, n_classes=3, integer=True, n_test=12):
    rng = np.random.default_rng(seed)
    if integer:
        X = rng.integers(-3, 4, size=(n + n_test, f)).astype(float)
    else:
        X = rng.normal(size=(n + n_test, f))
    W = rng.normal(size=(f, n_classes))
    y = np.argmax(X @ W + 0.8 * rng.normal(size=(n + n_test, n_classes)), axis=1)
    return X[:n], y[:n], X[n:], y[n:]


KERNELS = [
    Kernel("linear"),
    Kernel("poly", degree=3, scale=4.0),
    Kernel("gaussian", sigma=1.5),
    Kernel("poly_gaussian", degree=2, sigma=2.0),
]
SETTINGS = [dict(alpha=1.0), dict(alpha=0.7, B=1.3, C=0.9), dict(alpha=0.5)]


def run_both(kernel, setting, n_classes, seed, epochs=2.0, checkpoints=(0.4, 1, 2), chunk_size=7,
             form="auto", p=2.0, flush_at=16):
    X, y, Xt, yt = small_problem(seed, n_classes=n_classes, integer=kernel.name != "gaussian")
    Y = label_matrix(y, n_classes)
    order = np.random.default_rng(seed + 1).permutation(len(y))
    params = AlmaParams(p=p, **setting)
    log = train_alma(X, Y, kernel, params, order, epochs, checkpoints, chunk_size=chunk_size, form=form,
                     flush_at=flush_at)
    binary = n_classes == 2
    err_m, err_b = evaluate(log, kernel, X, Xt, yt, binary, seed=seed)
    kparams = (kernel.name, kernel.degree, kernel.scale, kernel.sigma)
    for k, cp in enumerate(checkpoints):
        steps = steps_to(cp, len(y))   # the reference's own count, and its own random slices
        ref = NaiveAlma(X, Y, kparams, p=p, **setting).fit(order, steps)
        sel = log.upd_step < steps
        fast_updates = [(int(s), int(e), int(c)) for s, e, c in zip(log.upd_step[sel], log.upd_ex[sel], log.upd_cls[sel])]
        assert fast_updates == ref.updates, f"correction sequence differs at checkpoint {cp}"
        np.testing.assert_allclose(log.upd_norm[sel], ref.norms, rtol=1e-9, atol=1e-12)
        rs = random_slices(seed, len(yt), steps)
        ref_err, ref_bin = naive_errors(ref, Xt, yt, binary, rs)
        for r, rule in enumerate(RULES):
            assert err_m[k, r] == ref_err[rule], (rule, cp)
            assert list(err_b[k, r]) == ref_bin[rule], (rule, cp)
    return log


# ----------------------------------------------------------------------------- exact agreement


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_dual_p2_matches_naive(kernel, n_classes):
    for i, setting in enumerate(SETTINGS):
        form = "dual" if kernel.name == "linear" else "auto"
        log = run_both(kernel, setting, n_classes, seed=3 + i, form=form)
        assert log.kernel_normalized and log.info["form"] == "dual"
        assert log.n_updates > 0


@pytest.mark.parametrize("chunk_size,flush_at", [(1, 1), (4, 3), (1000, 1000)])
def test_chunking_and_cache_batching_do_not_change_results(chunk_size, flush_at):
    run_both(KERNELS[1], SETTINGS[1], 3, seed=21, chunk_size=chunk_size, flush_at=flush_at)


def test_linear_p2_primal_and_dual_agree():
    # explicit primal loop, the chunked driver in primal form and in dual form
    from perceptron_lab.engine.perceptron import train

    a = run_both(Kernel("linear"), SETTINGS[1], 3, seed=7, form="primal")
    b = run_both(Kernel("linear"), SETTINGS[1], 3, seed=7, form="dual")
    assert a.info["form"] == "primal" and a.hyp_w is not None and b.info["form"] == "dual"
    X, y, _, _ = small_problem(7, n_classes=3)
    c = train(X, label_matrix(y, 3), Kernel("linear"), AlmaParams(**SETTINGS[1]),
              np.random.default_rng(8).permutation(len(y)), 2.0, [0.4, 1, 2], chunk_size=7, form="primal")
    assert c.info["form"] == "primal" and c.hyp_w is None
    for other in (b, c):
        for name in ("upd_step", "upd_ex", "upd_cls"):
            np.testing.assert_array_equal(getattr(a, name), getattr(other, name))
        np.testing.assert_allclose(a.upd_norm, other.upd_norm, rtol=1e-10)
    np.testing.assert_allclose(b.upd_scale, c.upd_scale, rtol=1e-10)


@pytest.mark.parametrize("p", [2.0, 6.0])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_explicit_primal_matches_naive(p, n_classes):
    # the explicit-weight primal loop (any p), including p = 2, against the literal link functions
    for i, setting in enumerate(SETTINGS):
        X, y, _, _ = small_problem(30 + i, n_classes=n_classes, integer=False)
        log = run_both_primal(setting, n_classes, seed=30 + i, p=p)
        assert log.hyp_w is not None and log.n_updates > 0


def run_both_primal(setting, n_classes, seed, p, epochs=2.0, checkpoints=(0.4, 1, 2)):
    from perceptron_lab.engine.alma import train_primal

    X, y, Xt, yt = small_problem(seed, n_classes=n_classes, integer=False)
    Y = label_matrix(y, n_classes)
    order = np.random.default_rng(seed + 1).permutation(len(y))
    log = train_primal(X, Y, AlmaParams(p=p, **setting), order, epochs, checkpoints, chunk_size=5)
    binary = n_classes == 2
    err_m, err_b = evaluate(log, Kernel("linear"), X, Xt, yt, binary, seed=seed)
    for k, cp in enumerate(checkpoints):
        steps = steps_to(cp, len(y))   # the reference's own count, and its own random slices
        ref = NaiveAlma(X, Y, None, p=p, **setting).fit(order, steps)
        sel = log.upd_step < steps
        fast = [(int(s), int(e), int(c)) for s, e, c in zip(log.upd_step[sel], log.upd_ex[sel], log.upd_cls[sel])]
        assert fast == ref.updates, f"correction sequence differs at checkpoint {cp}"
        # the recorded hypotheses are the reference's, vector for vector
        ref_w = [h["w"] for hs in ref.hyps for h in hs[1:]]
        order_by_label = np.argsort(log.upd_cls[sel], kind="stable")
        np.testing.assert_allclose(log.hyp_w[sel][order_by_label], np.array(ref_w).reshape(-1, X.shape[1]),
                                   rtol=1e-9, atol=1e-12)
        rs = random_slices(seed, len(yt), steps)
        ref_err, ref_bin = naive_errors(ref, Xt, yt, binary, rs)
        for r, rule in enumerate(RULES):
            assert err_m[k, r] == ref_err[rule], (rule, cp)
            assert list(err_b[k, r]) == ref_bin[rule], (rule, cp)
    return log


def test_p6_runs_through_train_alma_and_rejects_kernels():
    X, y, _, _ = small_problem(5, n_classes=2, integer=False)
    Y = label_matrix(y, 2)
    log = train_alma(X, Y, Kernel("linear"), AlmaParams(alpha=0.8, p=6), np.arange(len(y)), 1, [1])
    assert log.info["form"] == "primal" and log.hyp_w.shape == (log.n_updates, X.shape[1])
    with pytest.raises(EngineError, match="primal form only"):
        train_alma(X, Y, Kernel("poly", degree=2), AlmaParams(p=6), np.arange(len(y)), 1, [1])
    with pytest.raises(EngineError, match="primal form only"):
        train_alma(X, Y, Kernel("linear"), AlmaParams(p=6), np.arange(len(y)), 1, [1], form="dual")


# ----------------------------------------------------------------------------- Figure 1 details


def test_first_updates_by_hand():
    """Figure 1 with p = 2, alpha = 0.5, B = 2, C = sqrt 2, worked by hand.

    k=1: w = 0, margin 0 <= 0.5*2/1 -> update, eta = sqrt2, |w'| = sqrt2 -> w_2 = x1 = (1, 0).
    k=2: x2 = (0, 3): margin 0 <= 0.5*2/sqrt2 -> eta = 1, w' = (1, 1), |w'| = sqrt2 -> (1, 1)/sqrt2.
    k=3: x3 at 105 degrees: margin cos(60 deg) = 0.5 <= 1/sqrt3 = 0.577 (gamma_k with 1/sqrt(k);
         with 1/k it would be 1/3 and no update) -> update with eta = sqrt(2/3).
    k=4: x4 = w_4 itself: margin 1 > 0.5 -> no update.
    """
    th = math.radians(105)
    X = np.array([[1.0, 0.0], [0.0, 3.0], [math.cos(th) * 2, math.sin(th) * 2], [0.0, 0.0]])
    w3 = np.array([1.0, 1.0]) / math.sqrt(2)
    wp = w3 + math.sqrt(2 / 3) * X[2] / 2
    w4 = wp / max(1.0, np.linalg.norm(wp))
    X[3] = 5 * w4
    Y = np.ones((4, 1), dtype=np.int8)
    for form in ("primal", "dual"):
        log = train_alma(X, Y, Kernel("linear"), AlmaParams(alpha=0.5, B=2.0), np.arange(4), 1, [1], form=form)
        assert log.upd_ex.tolist() == [0, 1, 2]
        np.testing.assert_allclose(log.upd_norm, [1.0, 1.0, 1.0])
        sv, w = hypothesis_at(log, 0, "last")
        if sv is not None:  # dual: coefficients of the normalized instances
            coef = np.zeros(4)
            np.add.at(coef, sv, w)
            w = coef @ pnormalize(X, 2)
        np.testing.assert_allclose(w, w4, rtol=1e-12)


def test_link_functions_follow_the_paper():
    rng = np.random.default_rng(0)
    for p in (2.0, 3.0, 6.0, 10.0):
        q = p / (p - 1)
        w = rng.normal(size=7)
        th = link_f(w, q)
        # Lemma 2: |f(w)|_p = |w|_q; f^-1 inverts f; p = 2 is the identity
        np.testing.assert_allclose(np.sum(np.abs(th) ** p) ** (1 / p), np.sum(np.abs(w) ** q) ** (1 / q))
        np.testing.assert_allclose(link_f_inv(th, p), w, rtol=1e-10)
        # f is the gradient of |w|_q^2 / 2
        h = 1e-6
        g = [(np.sum(np.abs(w + h * e) ** q) ** (2 / q) - np.sum(np.abs(w - h * e) ** q) ** (2 / q)) / (4 * h)
             for e in np.eye(7)]
        np.testing.assert_allclose(th, g, rtol=1e-5)
    np.testing.assert_allclose(link_f(w, 2.0), w)
    assert not np.any(link_f(np.zeros(3), 1.5))


def test_norm_stays_in_the_unit_ball_after_every_update():
    X, y, _, _ = small_problem(8, n=60, n_classes=3, integer=False)
    Y = label_matrix(y, 3)
    order = np.random.default_rng(1).permutation(60)
    # dual p = 2: recompute |w_k| from the log's coefficients and scales, from scratch
    k = Kernel("poly", degree=2, scale=3.0)
    log = train_alma(X, Y, k, AlmaParams(alpha=0.6), order, 3, [3])
    G = gram(k, X, X)
    d = np.sqrt(np.diag(G))
    Gh = G / np.outer(d, d)
    for c in range(3):
        beta = np.zeros(60)
        for u in np.flatnonzero(log.upd_cls == c):
            beta[log.upd_ex[u]] += log.upd_coef[u]
            w = log.upd_scale[u] * beta
            nrm = math.sqrt(w @ Gh @ w)
            assert nrm <= 1 + 1e-9
            assert nrm == pytest.approx(log.upd_norm[u], rel=1e-9)
    # primal p = 6: the q-norm of every recorded hypothesis
    log6 = train_alma(X, Y, Kernel("linear"), AlmaParams(alpha=0.6, p=6), order, 3, [3])
    q = 6 / 5
    norms = np.sum(np.abs(log6.hyp_w) ** q, axis=1) ** (1 / q)
    assert log6.n_updates > 20 and np.all(norms <= 1 + 1e-9)
    np.testing.assert_allclose(norms, log6.upd_norm, rtol=1e-9)
    # after the first few updates the projection is active: norms reach 1
    assert np.isclose(norms.max(), 1.0)


def separable_data(seed, n, f, p, gamma0):
    """Instances whose p-normalized margin w.r.t. a unit-q-norm target u is >= gamma0."""
    rng = np.random.default_rng(seed)
    q = p / (p - 1)
    u = rng.normal(size=f)
    u /= np.sum(np.abs(u) ** q) ** (1 / q)
    X = []
    while len(X) < n:
        x = rng.normal(size=f)
        m = u @ (x / np.sum(np.abs(x) ** p) ** (1 / p))
        if abs(m) >= gamma0:
            X.append(x)
    X = np.array(X)
    y = (X @ u > 0).astype(int)
    margin = np.min(np.where(y == 1, 1, -1) * (pnormalize(X, p) @ u))
    return X, y, margin


@pytest.mark.parametrize("p,alpha", [(2.0, 0.5), (2.0, 0.9), (6.0, 0.5), (3.0, 1.0)])
def test_theorem3_correction_bound_on_separable_data(p, alpha):
    # Theorem 3 part 1: ALMA_p(alpha; sqrt8/alpha, sqrt2) makes at most
    # 2(p-1)/g^2 (2/alpha-1)^2 + 8/alpha - 4 corrections on any sequence of margin g* >= g, here
    # 300 cycles over the data; once an epoch passes without a correction the hypothesis is final
    # and separates the data with margin > (1-alpha) gamma_k.
    X, y, g = separable_data(int(p * 10 + alpha * 100), n=200, f=4, p=p, gamma0=0.25)
    Y = label_matrix(y, 2)
    params = AlmaParams(alpha=alpha, B=math.sqrt(8) / alpha, C=math.sqrt(2), p=p)
    kern = Kernel("linear")
    E = 300
    log = train_alma(X, Y, kern, params, np.random.default_rng(0).permutation(200), E, [E - 1, E])
    bound = theorem3_bound(g, alpha, p)
    assert 0 < log.n_updates <= bound, (log.n_updates, bound)
    assert not np.any(log.upd_step >= (E - 1) * 200), "not converged"
    m = training_margins(log, kern, X, y, binary=True, rule="last")
    k = log.n_updates + 1
    assert np.all(m > 0)
    if alpha < 1:
        assert np.min(m) >= (1 - alpha) * params.gamma(k) - 1e-12
        # and gamma_k >= gamma* throughout (part 1): the final margin is at least (1 - alpha) g
        assert np.min(m) >= (1 - alpha) * g - 1e-12


def test_defaults_are_gentiles_shorthand():
    # ALMA_p(alpha) = ALMA_p(alpha; 1/alpha, sqrt 2)
    a = AlmaParams(alpha=0.8)
    assert a.B == pytest.approx(1.25) and a.C == pytest.approx(math.sqrt(2)) and a.p == 2
    assert a.gamma(4) == pytest.approx(1.25 / 2) and a.eta(4) == pytest.approx(math.sqrt(2) / 2)
    assert AlmaParams(alpha=0.5, p=6).gamma(1) == pytest.approx(2 * math.sqrt(5))
    from perceptron_lab.config.load import config_from_dict

    cfg = config_from_dict({"dataset": {"name": "gentile_sparse"}, "algorithm": {"name": "alma", "alpha": 0.8}})
    par = algorithm_settings(cfg.algorithm).params()
    assert par == AlmaParams(alpha=0.8, B=1.25, C=math.sqrt(2), p=2.0)
    X, y, _, _ = small_problem(9, n_classes=3)
    Y = label_matrix(y, 3)
    order = np.arange(len(y))
    k = Kernel("gaussian", sigma=2.0)
    a = _train(cfg, X, Y, k, order, [1.0], np.float64)
    b = train_alma(X, Y, k, AlmaParams(alpha=0.8, B=1 / 0.8, C=math.sqrt(2)), order, 1, [1])
    np.testing.assert_array_equal(a.upd_ex, b.upd_ex)
    np.testing.assert_array_equal(a.upd_coef, b.upd_coef)


def test_counts_and_support_vectors_per_label():
    X, y, _, _ = small_problem(11, n=50, n_classes=3)
    Y = label_matrix(y, 3)
    log = train_alma(X, Y, KERNELS[1], AlmaParams(alpha=0.9), np.arange(50), 3, [1, 2, 3])
    counts = counts_at_checkpoints(log)
    # within the first epoch every correction is on a new example: corrections = support vectors
    np.testing.assert_array_equal(counts["mistakes"][0], counts["support_vectors"][0])
    assert np.all(np.diff(counts["mistakes"].sum(axis=1)) >= 0)
    assert np.all(counts["support_vectors"] <= counts["mistakes"])


def test_float32_kernel_gives_the_float64_corrections():
    # Poly kernel d = 6 on 0..255 "pixels" (range-safe in float32): normalization removes the
    # kernel's constant factor, so corrections match float64 on this data.
    rng = np.random.default_rng(0)
    X = rng.integers(0, 256, size=(150, 200)).astype(float) * (rng.random((150, 200)) < 0.3)
    y = rng.integers(0, 3, size=150)
    Y = label_matrix(y, 3)
    k = Kernel("poly", degree=6, scale=255.0)
    order = rng.permutation(150)
    a = train_alma(X, Y, k, AlmaParams(alpha=0.9), order, 2, [1, 2], dtype=np.float64)
    b = train_alma(X, Y, k.range_safe(X, np.float32), AlmaParams(alpha=0.9), order, 2, [1, 2], dtype=np.float32)
    np.testing.assert_array_equal(a.upd_ex, b.upd_ex)
    np.testing.assert_array_equal(a.upd_cls, b.upd_cls)


def test_training_margins_by_hand():
    """Gentile (2001) §4 margins worked by hand: three classes on the orthogonal instances
    2 e1, 3 e2, 0.5 e3 (x^ = e1, e2, e3), one epoch in that order, every trial a correction.

    ALMA_2(1.0) (B = 1, C = sqrt 2, gamma_k = 0), label 0 (y = +1, -1, -1):
      k=1: w = 0, margin 0 <= 0, eta = sqrt 2: w' = sqrt2 e1, |w'| = sqrt 2 -> w_2 = e1
      k=2: margin -e1.e2 = 0, eta = 1: w' = e1 - e2 -> w_3 = (e1 - e2)/sqrt 2
      k=3: margin 0, eta = sqrt(2/3): w' = w_3 - sqrt(2/3) e3, |w'|^2 = 5/3 -> w_4 = w' sqrt(3/5)
    and symmetrically for labels 1, 2. "last" outputs on e1: w_4^(0).e1 = sqrt(3/10) = b, the
    other labels -b: margin 2b = 1.095 (> 1: a difference of two outputs in [-1, 1]).
    "avg": survival weights c = 0, 1, 1, 1 (sum 3 = trials) -> avg = (w_2 + w_3 + w_4) / 3.
    The Perceptron updates every label at every trial (score 0): v_c = +-2 e1 +- 3 e2 +- 0.5 e3,
    |v_c| = sqrt(13.25) for all c; margins (o_y - max_c o_c) / sqrt(13.25) with o = +-|x|.
    """
    from perceptron_lab.engine.perceptron import PerceptronParams, train

    X = np.diag([2.0, 3.0, 0.5])
    y = np.array([0, 1, 2])
    Y = label_matrix(y, 3)
    lin = Kernel("linear")
    a, b, g = 1 / math.sqrt(2), math.sqrt(3 / 10), math.sqrt(2 / 5)
    last = [2 * b, 2 * a * math.sqrt(3 / 5), 2 * g]
    avg = [2 * (1 + a + b) / 3, 2 * (a + b) / 3, 2 * g / 3]
    for form in ("auto", "primal", "dual"):  # per-example loop, explicit hypotheses, kernel expansion
        log = train_alma(X, Y, lin, AlmaParams(alpha=1.0), np.arange(3), 1, [1], form=form)
        assert log.n_updates == 9
        np.testing.assert_allclose(training_margins(log, lin, X, y, False, "last"), last, rtol=1e-12)
        np.testing.assert_allclose(training_margins(log, lin, X, y, False, "avg"), avg, rtol=1e-12)
    # binary: y w.x^ itself, with label 0's run above (y = +1, -1, -1)
    yb = np.array([1, 0, 0])
    logb = train_alma(X, label_matrix(yb, 2), lin, AlmaParams(alpha=1.0), np.arange(3), 1, [1])
    w4 = np.array([a, -a, -math.sqrt(2 / 3)]) * math.sqrt(3 / 5)  # label 0's w_4 above
    np.testing.assert_allclose(training_margins(logb, lin, X, yb, True, "last"),
                               np.where(yb == 1, 1, -1) * w4, rtol=1e-12)
    # the Perceptron: one common factor, the largest norm, for every label
    for form in ("auto", "dual"):
        plog = train(X, Y, lin, PerceptronParams(), np.arange(3), 1, [1], form=form)
        np.testing.assert_allclose(training_margins(plog, lin, X, y, False, "last"),
                                   np.array([4.0, 6.0, 1.0]) / math.sqrt(13.25), rtol=1e-12)
    # thresholds (Khardon & Wachman) have no margin in this sense
    tlog = train(X, Y, lin, PerceptronParams(theta_init=1.0), np.arange(3), 1, [1])
    with pytest.raises(ValueError, match="through the origin"):
        training_margins(tlog, lin, X, y, False, "last")


def test_training_margins_and_distribution():
    X, y, _, _ = small_problem(12, n=60, n_classes=3, integer=False)
    Y = label_matrix(y, 3)
    k = Kernel("gaussian", sigma=2.0)
    log = train_alma(X, Y, k, AlmaParams(alpha=0.9), np.arange(60), 2, [1, 2])
    err, _ = evaluate(log, k, X, X, y, binary=False)
    for rule in ("last", "avg"):
        m = training_margins(log, k, X, y, binary=False, rule=rule)
        assert m.shape == (60,) and np.all(np.abs(m) <= 1 + 1e-12)
        # a positive margin is a correct training prediction (ties aside)
        r = RULES.index(rule)
        assert int(np.sum(m <= 0)) == err[-1, r]
    s, frac = margin_distribution(m)
    assert frac[0] <= frac[-1] == 1.0 and np.all(np.diff(frac) >= 0)


# ----------------------------------------------------------------------------- Gentile tables (layout code)
# The results frames below are made up (values in the results format): they check which value
# lands in which cell, the aggregation over runs and the tolerance rule -- not a reproduction.


def _made_up_results(dataset="usps", degree=1, n_perm=3):
    from perceptron_lab.run.plan import RESULT_COLUMNS

    rows = []
    runs = [("alma", "alpha=1;B=None;C=1.41421;p=2", 0), ("alma", "alpha=0.9;B=None;C=1.41421;p=2", 1),
            ("alma", "alpha=0.9;B=2;C=1;p=2", 2), ("perceptron", "eta=1;theta_init=0.0;C=0.0", 0)]
    for a, (alg, prm, g) in enumerate(runs):
        for perm in range(n_perm):
            off = perm - (n_perm - 1) / 2
            base = [dataset, "gaussian", degree, alg, prm, g, -1, perm]
            for e in (1, 2, 3):
                rows.append(base + [str(e), "none", "", "all", "mistakes", 1000 * (a + 1) + 10 * e + off])
                for c in range(10):
                    rows.append(base + [str(e), "none", "", str(c), "mistakes", 100 * a + 10 * e + c + off])
                    rows.append(base + [str(e), "none", "", str(c), "support_vectors", 100 * a + 10 * e + c - 1 + off])
                for r, rule in enumerate(("last", "avg", "vote")):
                    rows.append(base + [str(e), rule, "false", "all", "test_error_pct",
                                        1 + a + 0.1 * r + 0.01 * e + 0.1 * off])
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


@pytest.mark.paper("gentile2001")
def test_gentile_table1_cells_and_tolerance():
    from perceptron_lab.run.reference import reference_table
    from perceptron_lab.papers.gentile2001.tables import gentile_comparison, gentile_layout

    cmp = gentile_comparison(_made_up_results(), 1)
    get = lambda row, col: cmp[(cmp["row"] == row) & (cmp["column"] == col)].iloc[0]
    c = get("ALMA2(0.9) avg", "2 Epochs TestErr")
    assert c.ours_mean == pytest.approx(1 + 1 + 0.1 + 0.02) and c.ours_std == pytest.approx(0.1) and c.n_runs == 3
    assert c.paper == 4.72 and c.tolerance == pytest.approx(0.472) and not c.within
    c = get("ALMA2(1.0) last", "3 Epochs Correct")
    assert c.ours_mean == pytest.approx(1030) and c.paper == 1713 and c.tolerance == pytest.approx(171.3)
    assert get("Perceptron voted", "1 Epoch TestErr").ours_mean == pytest.approx(4.21)
    assert np.isnan(get("Perceptron voted", "1 Epoch TestErr").paper)  # the paper has no voted row here
    # a run with non-default B, C gets its own row, with no paper value
    odd = cmp[cmp["row"].str.startswith("ALMA2(0.9; B=2")]
    assert len(odd) and odd["paper"].isna().all()
    # cells only the paper has: ALMA2(0.95)
    assert (cmp.loc[cmp["row"] == "ALMA2(0.95) avg", "n_runs"] == 0).all()
    # the tolerance: max(0.2 points, 10%) -- a test error of 1.5 accepts 1.3 .. 1.7
    from perceptron_lab.papers.gentile2001.tables import _tolerance
    assert _tolerance("test_error_pct", 1.5) == 0.2 and _tolerance("test_error_pct", 6.0) == pytest.approx(0.6)
    lay = gentile_layout(cmp)
    assert list(lay.columns) == ["row"] + [f"{e} Epoch{'s' if e > 1 else ''} {m}" for e in (1, 2, 3)
                                           for m in ("TestErr", "Correct")]
    assert lay["row"].tolist()[:2] == ["Perceptron last", "Perceptron avg"]
    assert lay.set_index("row").loc["ALMA2(0.9) avg", "2 Epochs TestErr"] == "2.12 ± 0.10 (4.72)"
    ref = reference_table("gentile2001_table1")
    assert len(ref) == int((cmp["paper"].notna()).sum())


@pytest.mark.paper("gentile2001")
def test_gentile_digit_tables_and_files(tmp_path):
    from perceptron_lab.papers.gentile2001.tables import gentile_comparison, gentile_layout, write_gentile_tables

    cmp = gentile_comparison(_made_up_results(), 2)
    lay = gentile_layout(cmp).set_index("row")
    assert list(lay.columns) == [str(c) for c in range(10)]
    assert lay.loc["ALMA2(0.9) 2 Epochs Corr", "3"] == "123 ± 1 (294)"
    assert lay.loc["ALMA2(1.0) 1 Epoch SV", "0"] == "9 ± 1 (99)"
    assert lay.loc["SVM (SV)", "1"] == "n/a (91)"
    res = _made_up_results("mnist", degree=4)
    path = tmp_path / "results.csv"
    res.to_csv(path, index=False)
    written = write_gentile_tables([path], tmp_path / "out")
    names = sorted(p.name for p in written)
    assert names == sorted(f"gentile2001_table{t}{s}" for t in (3, 4) for s in (".csv", "_comparison.csv", ".md"))
    md = (tmp_path / "out" / "gentile2001_table3.md").read_text()
    assert "ALMA2(0.9) d=4 avg" in md and "✗" in md
    # the comparison CSV is written in the shared schema, no normalization needed
    from perceptron_lab.run.comparison import CORE_COLUMNS, normalize

    raw = pd.read_csv(tmp_path / "out" / "gentile2001_table3_comparison.csv", keep_default_na=False)
    assert list(raw.columns) == CORE_COLUMNS
    assert (raw["block"] == "").all()
    # in scope exactly where the paper prints a value (and so a tolerance); the cited rows we
    # have no run for stay in scope but are not compared (n_runs = 0)
    c = normalize(raw)
    assert (c["in_scope"] == c["paper"].notna()).all() and (c["in_scope"] == c["tolerance"].notna()).all()


@pytest.mark.paper("gentile2001")
def test_gentile_table6_columns_from_dataset_names():
    from perceptron_lab.papers.gentile2001.tables import gentile_comparison, gentile_layout

    frames = []
    for eps, s in ((0.0, 3), (0.15, 300)):
        r = _made_up_results(f"gentile_sparse(s={s},epsilon={eps:g},seed=2001)", n_perm=2)
        r = r[r["algorithm"] == "alma"]
        r.loc[:, "params"] = r["params"].str.replace("p=2", "p=6")
        frames.append(r)
    cmp = gentile_comparison(pd.concat(frames), 6)
    lay = gentile_layout(cmp).set_index("row")
    assert list(lay.columns) == [f"eps={e:g}, s={s}" for e in (0.0, 0.1, 0.15) for s in (3, 300)]
    assert lay.loc["ALMA6(0.9) last", "eps=0, s=3"] == "2.0 ± 0.1 (n/a)"   # the paper has no alpha=0.9 row
    assert lay.loc["ALMA6(1.0) avg", "eps=0.15, s=300"] == "1.1 ± 0.1 (17.1)"
    assert lay.loc["ALMA10(0.5) avg", "eps=0.1, s=3"] == "n/a (1.3)"


@pytest.mark.paper("gentile2001")
def test_gentile_tables_refuse_mixed_settings():
    from perceptron_lab.papers.gentile2001.tables import gentile_comparison

    r = _made_up_results()
    with pytest.raises(ValueError, match="more than one run"):
        gentile_comparison(pd.concat([r, r]), 1)


def _check_distributions(spec, binary):
    for _, curves in spec["panels"]:
        for label, runs, _style in curves:
            assert len(runs) == 2, label  # one margin array per permutation
            for m in runs:
                s, frac = margin_distribution(m)
                assert s[0] == -1.0 and s[-1] == 1.0
                assert np.all(np.diff(frac) >= 0), label  # nondecreasing in s
                assert 0.0 <= frac[0] < 0.5 < frac[-1], label
                if binary:  # y w.x^ with |w|_q <= 1 lies in [-1, 1] (Hölder): every example by s = 1
                    assert frac[-1] == 1.0 and np.all(np.abs(m) <= 1 + 1e-12), label


@pytest.mark.paper("gentile2001")
def test_margin_figures_are_drawn(tmp_path):
    from perceptron_lab.papers.gentile2001.figures import gentile_margin_figures, gentile_margin_panels, plot_margin_distributions

    rng = np.random.default_rng(0)
    out = plot_margin_distributions([("a", [("x", rng.uniform(-1, 1, 50)), ("y", rng.uniform(0, 1, 50))])],
                                    tmp_path / "m.png", title="t")
    assert out.stat().st_size > 1000
    # Figures 4-5 from configs/gentile2001/table6.yaml, on 300 examples and 2 permutations
    specs = gentile_margin_panels(figures=(4, 5), artificial_n=300, permutations=2)
    assert sorted(specs) == [4, 5]
    assert [t for t, _ in specs[4]["panels"]] == ["eps = 0, s = 3", "eps = 0.1, s = 3", "eps = 0, s = 300",
                                                    "eps = 0.1, s = 300"]
    assert [c[0] for c in specs[5]["panels"][0][1]][:2] == ["ALMA2(1.0) last", "ALMA2(1.0) avg"]
    for n in (4, 5):
        _check_distributions(specs[n], binary=True)
    # seeded: the same margins again; the PNGs are written
    again = gentile_margin_panels(figures=(4,), artificial_n=300, permutations=2)
    for (_, c1), (_, c2) in zip(specs[4]["panels"], again[4]["panels"]):
        for a, b in zip(c1, c2):
            for m1, m2 in zip(a[1], b[1]):
                np.testing.assert_array_equal(m1, m2)
    paths = gentile_margin_figures(tmp_path, figures=(4, 5), artificial_n=300, permutations=1)
    assert [p.name for p in paths] == ["gentile2001_figure4.png", "gentile2001_figure5.png"]
    assert all(p.stat().st_size > 1000 for p in paths)


@pytest.mark.paper("gentile2001")
def test_margin_figure3_uses_the_table1_widths(tmp_path, data_dir):
    # Figure 3 on the first 300 USPS examples: the kernel widths come from the Table 1 configs
    from perceptron_lab.config.load import load_config
    from perceptron_lab.papers.gentile2001.figures import GENTILE_CONFIG_DIR, gentile_margin_figures, gentile_margin_panels

    specs = gentile_margin_panels(data_dir, figures=(3,), usps_train_size=300, permutations=2)
    sig_p = load_config(GENTILE_CONFIG_DIR / "table1_usps_perceptron.yaml").kernel.sigma
    sig_a = load_config(GENTILE_CONFIG_DIR / "table1_usps_alma.yaml").kernel.sigma
    labels = [c[0] for c in specs[3]["panels"][0][1]]
    assert labels[0] == f"Perceptron, σ = {sig_p:g}, 1 epoch" and labels[-1] == f"ALMA2(0.9), σ = {sig_a:g}, 3 epochs"
    assert f"Perceptron σ = {sig_p:g}, ALMA2 σ = {sig_a:g}" in specs[3]["title"]
    assert [t for t, _ in specs[3]["panels"]] == ['USPS, "last"', 'USPS, "avg"']
    _check_distributions(specs[3], binary=False)
    paths = gentile_margin_figures(tmp_path, data_dir, figures=(3,), usps_train_size=200, permutations=1)
    assert [p.name for p in paths] == ["gentile2001_figure3.png"] and paths[0].stat().st_size > 1000


@pytest.mark.parametrize("n_classes", [2, 3])
def test_combined_classifiers_give_the_per_hypothesis_errors(n_classes):
    # explicit hypotheses: last/avg/longest (and normalized) from one combined vector per rule
    from perceptron_lab.engine.alma import train_primal

    X, y, Xt, yt = small_problem(40, n=80, n_classes=n_classes, integer=False, n_test=200)
    Y = label_matrix(y, n_classes)
    log = train_primal(X, Y, AlmaParams(alpha=0.7, p=6), np.random.default_rng(0).permutation(80), 2.5, [0.5, 2, 2.5])
    full_m, full_b = evaluate(log, Kernel("linear"), X, Xt, yt, n_classes == 2)
    rules = ["last", "avg", "avg_norm", "last_norm", "longest"]
    comb_m, comb_b = evaluate(log, Kernel("linear"), X, Xt, yt, n_classes == 2, rules=rules)
    idx = [RULES.index(r) for r in rules]
    np.testing.assert_array_equal(comb_m[:, idx], full_m[:, idx])
    np.testing.assert_array_equal(comb_b[:, idx], full_b[:, idx])
    assert (comb_m[:, RULES.index("vote")] == -1).all()


@pytest.mark.paper("gentile2001")
def test_gentile_tables_any_B_compares_other_parameterizations():
    from perceptron_lab.papers.gentile2001.tables import gentile_comparison

    r = _made_up_results()
    odd = r[r["params"] == "alpha=0.9;B=2;C=1;p=2"]
    cmp = gentile_comparison(odd, 1, any_B=True)
    c = cmp[(cmp["row"] == "ALMA2(0.9) avg") & (cmp["column"] == "1 Epoch TestErr")].iloc[0]
    assert c.paper == 5.06 and c.n_runs == 3
    with pytest.raises(ValueError, match="more than one run"):
        gentile_comparison(r[r["algorithm"] == "alma"], 1, any_B=True)  # alpha 0.9 twice


# ----------------------------------------------------------------------------- p = 2 per-example loop


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("integer", [True, False])
def test_alma2_linear_loop_matches_naive_and_the_driver(n_classes, integer):
    # train_alma's default for the linear kernel and p = 2: engine.linear's loop, logged as scaled
    # expansions (no weight vector per update); every rule at every checkpoint against the naive
    # reference (run_both), and the log against the chunked driver's in primal form
    from perceptron_lab.engine.perceptron import train

    for i, setting in enumerate(SETTINGS):
        seed = 70 + 3 * i + n_classes
        if integer:
            log = run_both(Kernel("linear"), setting, n_classes, seed=seed, checkpoints=(0.1, 0.4, 1, 1.5, 2))
        else:
            log = _run_both_float(setting, n_classes, seed)
        assert log.info.get("loop") == "linear" and log.hyp_w is None and log.kernel_normalized
        X, y, _, _ = small_problem(seed, n_classes=n_classes, integer=integer)
        order = np.random.default_rng(seed + 1).permutation(len(y))
        cps = log.checkpoint_steps / len(y)
        drv = train(X, label_matrix(y, n_classes), Kernel("linear"), AlmaParams(**setting), order, 2.0, cps,
                    chunk_size=7, form="primal")
        for name in ("upd_step", "upd_ex", "upd_cls", "upd_cum_correct", "cum_correct_cp", "upd_theta", "upd_kxx"):
            np.testing.assert_array_equal(getattr(log, name), getattr(drv, name), err_msg=name)
        for name in ("upd_coef", "upd_score", "upd_scale", "upd_norm"):
            np.testing.assert_allclose(getattr(log, name), getattr(drv, name), rtol=1e-10, atol=1e-13, err_msg=name)


def _run_both_float(setting, n_classes, seed):
    """run_both on real-valued data (Gaussian features), through train_alma's default dispatch."""
    X, y, Xt, yt = small_problem(seed, n_classes=n_classes, integer=False)
    Y = label_matrix(y, n_classes)
    order = np.random.default_rng(seed + 1).permutation(len(y))
    cps = (0.1, 0.4, 1, 1.5, 2)
    log = train_alma(X, Y, Kernel("linear"), AlmaParams(**setting), order, 2.0, cps)
    err_m, err_b = evaluate(log, Kernel("linear"), X, Xt, yt, n_classes == 2, seed=seed)
    for k, cp in enumerate(cps):
        steps = steps_to(cp, len(y))   # the reference's own count, and its own random slices
        ref = NaiveAlma(X, Y, ("linear", 1, 1.0, 1.0), **setting).fit(order, steps)
        sel = log.upd_step < steps
        fast = [(int(s), int(e), int(c)) for s, e, c in zip(log.upd_step[sel], log.upd_ex[sel], log.upd_cls[sel])]
        assert fast == ref.updates, f"correction sequence differs at checkpoint {cp}"
        np.testing.assert_allclose(log.upd_norm[sel], ref.norms, rtol=1e-9, atol=1e-12)
        rs = random_slices(seed, len(yt), steps)
        ref_err, ref_bin = naive_errors(ref, Xt, yt, n_classes == 2, rs)
        for r, rule in enumerate(RULES):
            assert err_m[k, r] == ref_err[rule], (rule, cp)
            assert list(err_b[k, r]) == ref_bin[rule], (rule, cp)
    return log


@pytest.mark.parametrize("n_classes", [2, 3])
def test_alma2_requested_rules_from_combined_classifiers(n_classes):
    # last/avg (and the normalized and longest-survivor rules) from one combined vector each,
    # on the normalized instances, give the per-hypothesis errors and the naive reference's
    X, y, Xt, yt = small_problem(80, n=80, n_classes=n_classes, n_test=60)
    Y = label_matrix(y, n_classes)
    order = np.random.default_rng(81).permutation(80)
    cps = (0.3, 1, 2.5)
    log = train_alma(X, Y, Kernel("linear"), AlmaParams(alpha=0.7, B=1.3, C=0.9), order, 2.5, cps)
    assert log.hyp_w is None
    full_m, full_b = evaluate(log, Kernel("linear"), X, Xt, yt, n_classes == 2)
    for rules in (["last"], ["avg"], ["last", "avg"], ["last", "last_norm", "avg", "avg_norm", "longest"]):
        m, b = evaluate(log, Kernel("linear"), X, Xt, yt, n_classes == 2, rules=rules)
        idx = [RULES.index(r) for r in rules]
        np.testing.assert_array_equal(m[:, idx], full_m[:, idx])
        np.testing.assert_array_equal(b[:, idx], full_b[:, idx])
        rest = [i for i in range(len(RULES)) if i not in idx]
        assert (m[:, rest] == -1).all()
    for k, cp in enumerate(cps):
        ref = NaiveAlma(X, Y, ("linear", 1, 1.0, 1.0), alpha=0.7, B=1.3, C=0.9).fit(order, epochs_to_steps(cp, 80))
        ref_err, _ = naive_errors(ref, Xt, yt, n_classes == 2, np.zeros(len(yt), dtype=np.int64))
        for rule in ("last", "avg", "longest"):
            assert m[k, RULES.index(rule)] == ref_err[rule], (rule, cp)


def test_alma2_zero_instances_and_margins_through_the_expansion_log():
    # footnote 3 (a zero instance never causes a correction) and the Figure 3-5 margins of a
    # p = 2 log without explicit hypotheses agree with the explicit-hypotheses loop's
    X, y, _, _ = small_problem(90, n=50, n_classes=3, integer=False)
    X[::7] = 0.0
    Y = label_matrix(y, 3)
    order = np.random.default_rng(91).permutation(50)
    a = train_alma(X, Y, Kernel("linear"), AlmaParams(alpha=0.6), order, 3, [1, 3])
    b = train_alma(X, Y, Kernel("linear"), AlmaParams(alpha=0.6), order, 3, [1, 3], form="primal")
    assert a.hyp_w is None and b.hyp_w is not None
    assert not np.isin(a.upd_ex, np.arange(0, 50, 7)).any()
    np.testing.assert_array_equal(a.upd_ex, b.upd_ex)
    np.testing.assert_array_equal(a.cum_correct_cp, b.cum_correct_cp)
    for rule in ("last", "avg"):
        np.testing.assert_allclose(training_margins(a, Kernel("linear"), X, y, False, rule),
                                   training_margins(b, Kernel("linear"), X, y, False, rule), rtol=1e-9, atol=1e-12)


def test_gentile_width_search_runs_and_writes_search_csv(tmp_path):
    # Gentile §4.1/§4.3: the kernel width is chosen by k-fold cross-validation over a sigma grid
    # (configs/gentile2001/*_sigma_cv.yaml). Such a run holds several widths per permutation, which
    # the paper-table writer refuses, so it used to fail after training; it must end with search.csv.
    from click.testing import CliRunner

    from perceptron_lab.cli.main import main

    cfg = tmp_path / "cv.yaml"
    cfg.write_text("""
name: gentile2001_width_search_test
dataset:
  name: sonar
kernel:
  type: gaussian
  sigma: 1.0
algorithm:
  name: alma
training:
  epochs: 1
  checkpoints: [1]
  permutations: 2
prediction:
  rules: [last, avg]
evaluation:
  mode: kfold
  folds: 3
  grid:
    kernel.sigma: [0.5, 2.0, 8.0]
  search:
    - [kernel.sigma]
""")
    out = tmp_path / "cv"
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(out), "-q"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    s = pd.read_csv(out / "search.csv")
    s = s[s["search"] == "sigma"]
    assert sorted(s["rule"]) == ["avg", "last"]
    assert set(s["n_candidates"]) == {3} and (s["n_runs"] == 6).all()
    assert set(s["chosen"]) <= {"sigma=0.5", "sigma=2", "sigma=8"}
    assert not list(out.glob("gentile2001_table*"))


# ----------------------------------------------------------------------------- p in the hundreds and beyond

def _updates(log):
    return [(int(s), int(e), int(c)) for s, e, c in zip(log.upd_step, log.upd_ex, log.upd_cls)]


def _large_p_setting(p, alpha):
    """alpha = 1 (threshold 0), or alpha < 1 with B = 0.3 / sqrt(p - 1), so that the threshold
    (1 - alpha) B sqrt(p - 1) / sqrt(k) is 0.3 (1 - alpha) / sqrt(k), below the margins' range
    [-1, 1] (Gentile's B = 1/alpha puts it above 1 for large p: every step a correction)."""
    return dict(alpha=alpha) if alpha == 1.0 else dict(alpha=alpha, B=0.3 / math.sqrt(p - 1.0))


@pytest.mark.parametrize("p", [300.0, 1000.0, 1e4, 1e6])
def test_link_inverse_in_range_for_large_p(p):
    """f^-1(theta)_i = sign(theta_i) |theta_i|^(p-1) / |theta|_p^(p-2) against 40-digit decimals.
    Before: every |theta_i|^(p-1) and |theta|_p^(p-2) underflowed (0.5^999 = 1e-301, 0.3^999 =
    0), and f^-1 was 0; now each entry is the exact value rounded (0 where that is below 2^-1074),
    and Lemma 2's |f^-1(theta)|_q = |theta|_p holds."""
    from decimal import Decimal as D, localcontext

    from exact_alma import CTX, _link

    theta = np.array([0.05, -0.41, 0.4, 0.3, -0.002, 0.0, 0.399999])
    got = link_f_inv(theta, p)
    with localcontext(CTX):
        want = np.array([float(v) for v in _link([D(float(t)) for t in theta], D(p))])
    assert np.abs(got).max() > 0.1
    np.testing.assert_allclose(got, want, rtol=64 * p * np.finfo(float).eps, atol=np.finfo(float).tiny)
    q = p / (p - 1.0)
    np.testing.assert_allclose(np.sum(np.abs(got) ** q) ** (1 / q), np.sum(np.abs(theta / 0.41) ** p) ** (1 / p) * 0.41,
                               rtol=1e-9)


@pytest.mark.parametrize("c", [2.0**-1000, 2.0**-600, 2.0**600, 2.0**1000])
@pytest.mark.parametrize("q", [1.5, 1.001, 6 / 5])
def test_link_is_homogeneous_far_from_one(c, q):
    """f(c w) = c f(w) (degree 1, Gentile 2001 §2). Before, for q = 1.5 and 6/5: at c = 2^-1000 every
    |w_i|^q underflowed, |w|_q came out 0 and f(c w) was 0; at 2^1000 the sum overflowed and f was
    0. (q = 1.001, and 2^+-600, were right before and still are.)"""
    w = np.random.default_rng(3).normal(size=9)
    np.testing.assert_allclose(link_f(c * w, q), c * link_f(w, q), rtol=1e-13)


@pytest.mark.parametrize("p", [300.0, 1000.0, 1e4, 1e6])
@pytest.mark.parametrize("alpha", [1.0, 0.7])
def test_large_p_runs_are_figure_1s(p, alpha):
    """The primal loop at p in the hundreds to a million, against Figure 1 in 40-digit decimals
    (tests/exact_alma.py): the same corrections, the same last hypotheses (to p x float64's
    rounding: the link's power amplifies a relative error by p - 1) and the same test predictions.
    Before: from p = 300 on, w underflowed to 0 (its norm's sum of p-th powers came out 0), every
    example became a correction, and the corrections differed from Figure 1's."""
    from exact_alma import ExactAlma

    X, y, Xt, _ = small_problem(41, n=30, f=5, n_classes=3, integer=False)
    Y = label_matrix(y, 3)
    order = np.random.default_rng(42).permutation(len(y))
    setting = _large_p_setting(p, alpha)
    log = train_primal(X, Y, AlmaParams(p=p, **setting), order, 2.0, [2.0], chunk_size=7)
    ref = ExactAlma(X, Y, p=p, **setting).fit(order, 2 * len(y))
    assert _updates(log) == ref.updates
    if alpha == 1.0:
        assert len(ref.updates) < 2 * len(y) * 3 / 2  # the margins decide (before: every step a correction)
    for c in range(3):
        mine = log.upd_cls == c
        if mine.any():
            want = np.array([float(v) for v in ref.W[c]])
            np.testing.assert_allclose(log.hyp_w[mine][-1], want, rtol=64 * p * np.finfo(float).eps,
                                       atol=np.finfo(float).tiny)
    last = np.array([log.hyp_w[log.upd_cls == c][-1] if (log.upd_cls == c).any() else np.zeros(5) for c in range(3)])
    exact = np.array([[float(s) for s in row] for row in ref.scores(Xt)])
    assert (np.argmax(Xt @ last.T, axis=1) == np.argmax(exact, axis=1)).all()


def test_sonar_alma_1000_is_figure_1s():
    """ALMA_1000(1) on sonar, one epoch. Before: 208 corrections of 208 steps (w = 0 after every
    update, every margin 0), exit 0 through plab run; now Figure 1's 100 corrections, step for step."""
    from exact_alma import ExactAlma
    from perceptron_lab.datasets import load_dataset

    ds = load_dataset("sonar")
    Y = label_matrix(ds.y_train, 2)
    order = np.random.default_rng(0).permutation(len(ds.y_train))
    log = train_primal(ds.X_train, Y, AlmaParams(alpha=1.0, p=1000.0), order, 1.0, [1.0])
    ref = ExactAlma(ds.X_train, Y, alpha=1.0, p=1000.0).fit(order, len(ds.y_train))
    assert _updates(log) == ref.updates and len(ref.updates) == 100


def _integer_stream():
    rng = np.random.default_rng(1)
    X = rng.integers(-3, 4, size=(60, 12)).astype(float)
    y = (X @ rng.normal(size=12) > 0).astype(int)
    return X, label_matrix(y, 2), rng.permutation(60)


def test_undecidable_correction_is_refused_and_the_fix_runs():
    """ALMA_100000(1) on integer features: the weights of every feature but the largest underflow
    (|theta_i / |theta|_p|^(p-1) < 2^-1074), an example that is 0 on the others gets margin 0 in
    float64 where Figure 1's is positive (about 10^-4575), and with alpha = 1 that decides the
    correction. Before: w underflowed to 0 and all 120 steps were corrections (Figure 1 makes 38),
    exit 0; with the link in range alone, that margin still made 51 corrections. Now NumericError
    with the state as before the call, and the fix it names (alpha below 1) runs Figure 1."""
    from exact_alma import ExactAlma
    from perceptron_lab.engine.alma import PrimalRun
    from perceptron_lab.errors import NumericError

    X, Y, order = _integer_stream()
    with pytest.raises(NumericError, match="cannot be decided") as exc:
        train_primal(X, Y, AlmaParams(alpha=1.0, p=1e5), order, 2.0, [2.0])
    msg = str(exc.value)
    assert "\n" not in msg and "Fix: set algorithm.alpha below 1" in msg
    # the run refuses with the state it had before the call
    run = PrimalRun(1, X.shape[1], AlmaParams(alpha=1.0, p=1e5))
    Xh, xnz = pnormalize(X, 1e5), np.any(X != 0, axis=1)
    seq = np.concatenate([order, order])
    done = 0
    for t in range(seq.size):
        before = [a.copy() for a in (run.theta, run.W, run.ncorr, run.cum_correct)]
        try:
            run.steps(Xh, xnz, Y[:, :1], seq[t:t + 1])
            done += 1
        except NumericError:
            for a, b in zip((run.theta, run.W, run.ncorr, run.cum_correct), before):
                np.testing.assert_array_equal(a, b)
            break
    assert 0 < done < seq.size
    fixed = _large_p_setting(1e5, 0.9)
    log = train_primal(X, Y, AlmaParams(p=1e5, **fixed), order, 2.0, [2.0])
    assert _updates(log) == ExactAlma(X, Y, p=1e5, **fixed).fit(order, 120).updates

