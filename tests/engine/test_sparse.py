"""Sparse (scipy.sparse CSR) features: the same numbers as dense features, without densifying.

The data are small integers (and dyadic parameters), on which every inner product and every
sum of the engine is exact in any order, so the sparse and dense paths must agree bit for bit.
ALMA's step sizes and norms are not dyadic: it is compared exactly on data with two nonzero
columns (every sum then has at most two nonzero terms, exact in any order), and on general data
by its sequence of corrections. Sparse test rows are scored with one vector per label for the rules
that are one (last, avg, their normalized forms, longest): exact on integers, and otherwise equal
to the dense scan's scores up to the order of summation.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from perceptron_lab import ALMA, BudgetPerceptron, MarginPerceptron, VotedPerceptron
from perceptron_lab.engine import PerceptronParams, PerceptronSettings, label_matrix, train_algorithm
from perceptron_lab.engine.alma import AlmaParams
from perceptron_lab.engine.base import EngineError
from perceptron_lab.engine.linear import train_alma2_primal, train_perceptron_primal
from perceptron_lab.errors import EXIT_STATUSES
from perceptron_lab.engine.kernels import Kernel, gram, kernel_diag, sq_norms, sq_norms64
from perceptron_lab.model.predict import RULES

LOG_FIELDS = ("upd_step", "upd_ex", "upd_cls", "upd_coef", "upd_score", "upd_kxx", "upd_theta",
              "upd_cum_correct", "cum_correct_cp", "checkpoint_steps")
ALMA_FIELDS = LOG_FIELDS + ("upd_scale", "upd_norm")


def _data(n=80, f=40, density=0.3, seed=0, classes=3):
    """Small-integer features with about ``density`` nonzeros, some all-zero rows, and labels from
    a sparse integer hyperplane per class (with noise, so that mistakes keep coming)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-4, 5, size=(n, f)).astype(np.float64)
    X[rng.random(X.shape) > density] = 0.0
    X[:3] = 0.0
    W = rng.integers(-3, 4, size=(classes, f)) * (rng.random((classes, f)) < 0.3)
    y = np.argmax(X @ W.T + rng.integers(0, 3, size=(n, classes)), axis=1)
    return X, y


def _assert_same_log(a, b, fields=LOG_FIELDS):
    for k in fields:
        va, vb = getattr(a, k), getattr(b, k)
        assert np.array_equal(va, vb), k
    assert a.n_updates > 10


PERCEPTRON_SETTINGS = [
    dict(),
    dict(eta=0.5, theta_init=2.0, C=0.25),
    dict(tau_abs=8.0, lam=0.5),
    dict(tau_abs=8.0, lam=0.5, lam_diagonal=True),
    dict(eta=2.0, lam=0.5, lam_diagonal=True),
    dict(tau_abs=4.0, alpha_bound=2),
]


@pytest.mark.parametrize("kernel", [Kernel("linear"), Kernel("poly", 1, 4.0)], ids=["linear", "poly1"])
@pytest.mark.parametrize("settings", PERCEPTRON_SETTINGS, ids=lambda s: ",".join(s) or "plain")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_primal_perceptron_loop_on_csr_equals_dense(kernel, settings, dtype):
    X, y = _data()
    Y = label_matrix(y, 3)
    kw = dict(eta=1.0, theta_init=0.0, C=0.0, tau_abs=0.0, lam=0.0, alpha_bound=np.iinfo(np.int64).max)
    kw.update(settings)
    params = PerceptronParams(**kw)
    order = np.random.default_rng(1).permutation(len(y))
    for threads in (1, 2):
        dense = train_perceptron_primal(X, Y, kernel, params, order, 2.5, [0.5, 1, 2.5], dtype=dtype, threads=threads)
        csr = train_perceptron_primal(sp.csr_matrix(X), Y, kernel, params, order, 2.5, [0.5, 1, 2.5], dtype=dtype,
                                      threads=threads, segment=37)
        _assert_same_log(dense, csr)
        assert csr.info["sparse"] and "sparse" not in dense.info


def test_primal_perceptron_on_csr_with_unsorted_and_duplicate_entries():
    """A CSR matrix as users build it (COO with repeated coordinates, unsorted indices) means the
    dense matrix with the repeated values summed."""
    X, y = _data(seed=3)
    rows, cols = np.nonzero(X)
    vals = X[rows, cols]
    half = np.floor(vals / 2)
    coo = sp.coo_matrix((np.concatenate([half, vals - half]), (np.concatenate([rows, rows]),
                                                               np.concatenate([cols, cols]))), shape=X.shape)
    messy = coo.tocsr(copy=True)
    messy.has_canonical_format = False
    Y = label_matrix(y, 3)
    params = PerceptronParams(eta=1.0, theta_init=0.0, C=0.0, tau_abs=0.0, lam=0.0, alpha_bound=10**9)
    order = np.arange(len(y))
    _assert_same_log(train_perceptron_primal(X, Y, Kernel(), params, order, 2, [2]),
                     train_perceptron_primal(coo, Y, Kernel(), params, order, 2, [2]))


def _alma_params():
    return AlmaParams(p=2.0, alpha=0.9, B=1 / 0.9, C=np.sqrt(2.0))


def test_alma2_loop_on_csr_equals_dense_where_sums_are_exact():
    """Two nonzero columns among 30: every sum has at most two nonzero terms, exact in any order."""
    rng = np.random.default_rng(4)
    X = np.zeros((60, 30))
    X[:, 7] = rng.integers(-3, 4, 60)
    X[:, 21] = rng.integers(-3, 4, 60)
    y = (X[:, 7] - 0.5 * X[:, 21] + rng.normal(0, 1, 60) > 0).astype(int) + (X[:, 21] > 1)
    Y = label_matrix(y, 3)
    order = rng.permutation(60)
    dense = train_alma2_primal(X, Y, _alma_params(), order, 3, [1, 3])
    csr = train_alma2_primal(sp.csr_matrix(X), Y, _alma_params(), order, 3, [1, 3], segment=50)
    _assert_same_log(dense, csr, ALMA_FIELDS)


def test_alma2_loop_on_csr_makes_the_dense_corrections():
    X, y = _data(seed=5)
    Y = label_matrix(y, 3)
    order = np.arange(len(y))
    dense = train_alma2_primal(X, Y, _alma_params(), order, 2, [2])
    csr = train_alma2_primal(sp.csr_matrix(X), Y, _alma_params(), order, 2, [2])
    for k in ("upd_step", "upd_ex", "upd_cls", "upd_cum_correct", "cum_correct_cp"):
        assert np.array_equal(getattr(dense, k), getattr(csr, k)), k
    for k in ("upd_coef", "upd_score", "upd_scale", "upd_norm"):
        np.testing.assert_allclose(getattr(csr, k), getattr(dense, k), rtol=1e-12, atol=1e-15)


KERNELS = [Kernel("linear"), Kernel("poly", 3, 8.0), Kernel("gaussian", sigma=3.0), Kernel("poly_gaussian", 2, 1, 3.0)]


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_kernel_blocks_norms_and_diagonal_from_csr_rows(kernel):
    X, _ = _data(n=30)
    S = sp.csr_matrix(X)
    assert np.array_equal(sq_norms(S), sq_norms(X))
    assert np.array_equal(sq_norms64(S.astype(np.float32)), sq_norms64(X.astype(np.float32)))
    assert np.array_equal(kernel_diag(kernel, S), kernel_diag(kernel, X))
    want = gram(kernel, X[:7], X)
    for a, b in ((S[:7], S), (S[:7], X), (X[:7], S)):
        got = gram(kernel, a, b)
        assert isinstance(got, np.ndarray) and got.dtype == np.float64
        assert np.array_equal(got, want)


@pytest.mark.parametrize("factor", [1.0, 2.0**-700, 2.0**600])
@pytest.mark.parametrize("kernel", KERNELS[:3], ids=lambda k: k.name)
def test_range_checks_see_a_csr_matrix_as_its_dense_twin(kernel, factor):
    X, _ = _data(n=30)
    X = X * factor
    outcome = []
    for A in (X, sp.csr_matrix(X)):
        try:
            outcome.append(kernel.range_safe(A, np.float64))
        except Exception as exc:  # noqa: BLE001 - the same refusal is expected from both
            outcome.append((type(exc), str(exc)))
    assert outcome[0] == outcome[1]
    if isinstance(outcome[0], Kernel) and outcome[0].feature_exp:
        k = outcome[0]
        assert np.array_equal(k.features(sp.csr_matrix(X)).toarray(), k.features(X))


# ----------------------------------------------------------------------------- estimators


ESTIMATORS = [
    VotedPerceptron(random_state=0, epochs=3),
    VotedPerceptron(kernel="poly", degree=1, scale=4.0, random_state=2, epochs=2),
    MarginPerceptron(tau=0.5, lambda_=0.25, alpha_bound=3, theta_init="avg_sq_norm", C="theta_init", eta=0.5,
                     random_state=1, epochs=2),
]


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil", "csr_array"])
def test_estimator_on_sparse_input_predicts_as_on_dense(est, fmt):
    X, y = _data(seed=7)
    S = sp.csr_array(X) if fmt == "csr_array" else sp.csr_matrix(X).asformat(fmt)
    dense = type(est)(**est.get_params()).fit(X, y)
    sparse = type(est)(**est.get_params()).fit(S, y)
    assert sp.issparse(sparse.support_vectors_)
    assert np.array_equal(sparse.support_, dense.support_)
    for rule in RULES:
        dense.set_params(rule=rule)
        sparse.set_params(rule=rule)
        want = dense.decision_function(X)
        got = [sparse.decision_function(S), sparse.decision_function(X), dense.decision_function(S)]
        if rule in COMBINED:
            # one vector per label (combined_decision_scores): the same sums in another order, exact
            # on integers; the normalized and thresholded rules round alike to the last bits
            for g in got:
                np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-9, err_msg=rule)
        else:
            for g in got:
                assert np.array_equal(g, want), rule
        assert np.array_equal(sparse.predict(S), dense.predict(X)), rule


COMBINED = ("last", "last_norm", "avg", "avg_norm", "longest")


def test_sparse_rows_are_scored_by_one_vector_per_label_exactly_on_integers():
    """VotedPerceptron (eta 1, integer features): every combined rule's scores equal the dense
    scan's bit for bit."""
    X, y = _data(seed=11)
    dense = VotedPerceptron(random_state=0, epochs=2).fit(X, y)
    sparse = VotedPerceptron(random_state=0, epochs=2).fit(sp.csr_matrix(X), y)
    for rule in ("last", "avg", "longest"):
        dense.set_params(rule=rule)
        sparse.set_params(rule=rule)
        assert np.array_equal(sparse.decision_function(sp.csr_matrix(X)), dense.decision_function(X)), rule


def test_alma_estimator_on_sparse_input_predicts_as_on_dense():
    rng = np.random.default_rng(8)
    X = np.zeros((50, 25))
    X[:, 3] = rng.integers(-3, 4, 50)
    X[:, 19] = rng.integers(-3, 4, 50)
    y = (X[:, 3] + X[:, 19] + rng.normal(0, 1, 50) > 0).astype(int)
    dense = ALMA(alpha=0.8, epochs=2, random_state=0).fit(X, y)
    sparse = ALMA(alpha=0.8, epochs=2, random_state=0).fit(sp.csr_matrix(X), y)
    for rule in RULES:
        dense.set_params(rule=rule)
        sparse.set_params(rule=rule)
        got, want = sparse.decision_function(sp.csr_matrix(X)), dense.decision_function(X)
        if rule in COMBINED:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=rule)
        else:
            assert np.array_equal(got, want), rule
        assert np.array_equal(sparse.predict(sp.csr_matrix(X)), dense.predict(X)), rule


def test_partial_fit_on_sparse_batches_continues_as_on_dense():
    X, y = _data(seed=9)
    dense = VotedPerceptron(random_state=0, epochs=2, rule="avg").fit(X[:40], y[:40])
    sparse = VotedPerceptron(random_state=0, epochs=2, rule="avg").fit(sp.csr_matrix(X[:40]), y[:40])
    dense.partial_fit(X[40:], y[40:])
    sparse.partial_fit(sp.csr_matrix(X[40:]), y[40:])
    assert np.array_equal(sparse.decision_function(X), dense.decision_function(X))
    online = VotedPerceptron(rule="avg")
    for a in range(0, 80, 20):
        online.partial_fit(sp.csr_matrix(X[a:a + 20]), y[a:a + 20], classes=[0, 1, 2])
    assert sp.issparse(online._seq[0])
    ref = VotedPerceptron(rule="avg", shuffle=False).fit(X, y)
    assert np.array_equal(online.decision_function(X), ref.decision_function(X))


@pytest.mark.parametrize("est", [VotedPerceptron(kernel="gaussian"), VotedPerceptron(kernel="poly", degree=2),
                                 ALMA(p=3.0), ALMA(kernel="gaussian")], ids=repr)
def test_settings_whose_engine_reads_dense_rows_refuse_sparse_input_with_the_fix(est):
    X, y = _data()
    with pytest.raises(ValueError, match=r"sparse features are taken by .*Fix: pass dense features") as info:
        est.fit(sp.csr_matrix(X), y)
    assert "\n" not in str(info.value)
    assert not est.__sklearn_tags__().input_tags.sparse
    est.fit(X, y)  # the fix works


@pytest.mark.parametrize("est", [VotedPerceptron(kernel="precomputed"), BudgetPerceptron(algorithm="forgetron", budget=5)],
                         ids=repr)
def test_estimators_without_a_sparse_engine_refuse_sparse_input(est):
    X, y = _data()
    if est.kernel == "precomputed":
        X = X @ X.T
    with pytest.raises(TypeError, match="[Ss]parse"):
        est.fit(sp.csr_matrix(X), y)
    assert not est.__sklearn_tags__().input_tags.sparse


def test_train_algorithm_refuses_sparse_features_for_a_dense_engine_with_a_settings_error():
    X, y = _data()
    with pytest.raises(EngineError, match=r"^configs/x.yaml: sparse features") as info:
        train_algorithm(PerceptronSettings(), sp.csr_matrix(X), label_matrix(y, 3), Kernel("gaussian"),
                        np.arange(len(y)), 1, [1], chunk_size=64, cache_limit_gb=1.0, source="configs/x.yaml")
    assert info.value.exit_code == 2 and 2 in dict(EXIT_STATUSES)


def test_a_wide_sparse_problem_trains_and_predicts_without_densifying():
    """200 x 4,000,000 features at 10 nonzeros a row: a dense copy would take 6.4 GB; the fit
    and the predictions must stay near the size of the nonzeros and the (dense) weight vectors."""
    n, f = 200, 4_000_000
    rng = np.random.default_rng(0)
    cols = rng.integers(0, 1000, size=(n, 10)) * 4000 + rng.integers(0, 4000, size=(n, 10))
    vals = rng.integers(1, 4, size=(n, 10)).astype(np.float64)
    X = sp.csr_matrix((vals.ravel(), cols.ravel(), np.arange(0, 10 * n + 1, 10)), shape=(n, f))
    w = rng.normal(size=f)
    y = (X @ w > 0).astype(int)
    for est in (VotedPerceptron(random_state=0, rule="avg"), ALMA(alpha=0.9, random_state=0)):
        est.fit(X[:10], y[:10])  # compile outside the measurement
        tracemalloc.start()
        est.fit(X, y)
        pred = est.predict(X)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert pred.shape == (n,)
        # the weight vector of one label (32 MB) and a few of its size, not n x f floats
        assert peak < 8 * f * 8, (type(est).__name__, peak)


def test_sparse_check_needs_no_scipy_sparse_and_agrees_with_scipy(tmp_path):
    """``perceptron_lab.sparse.issparse`` is scipy's answer for every kind of input, and a dense
    run's code path (the run module, a dense dataset read, a run of the quickstart's engine) does
    not import scipy.sparse just to ask."""
    import subprocess
    import sys

    from perceptron_lab.sparse import issparse

    dense = np.arange(6.0).reshape(2, 3)
    for x in (sp.csr_matrix(dense), sp.csc_array(dense), sp.coo_matrix(dense)):
        assert issparse(x) and sp.issparse(x)
    for x in (dense, dense.tolist(), None, np.float64(1.0)):
        assert not issparse(x) and not sp.issparse(x)
    code = ("import sys\n"
            "from perceptron_lab.config.load import load_config, with_overrides\n"
            "from perceptron_lab.run.experiment import run_experiment\n"
            "cfg = with_overrides(load_config('package:quickstart.yaml'), {'training.epochs': 1, "
            "'training.checkpoints': [1], 'evaluation.folds': 2, 'output.figures': False})\n"
            "r = run_experiment(cfg, out_dir=sys.argv[1], progress=False)\n"
            "assert r.ran == 4, r.ran\n"
            "print(sorted(m for m in sys.modules if m.startswith('scipy.sparse')))\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
