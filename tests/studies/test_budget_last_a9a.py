"""The last hypothesis of every budgeted algorithm on a slice of KOL's a9a, against the literal
references of tests/naive.py, and the Forgetron's last hypothesis there pinned as the algorithm's
own behaviour, not a defect of the engine, the stored hypothesis, the scoring or the labels.

KOL's setting (``perceptron_lab.studies.kol``): Gaussian ``exp(-gamma |x - y|^2)``, gamma = 0.01
(plab's sigma^2 = 50), one pass in file order. a9a's rows are 0/1 vectors with at most 14 ones, so
``|x - y|^2 <= 28`` and every kernel value lies in ``[exp(-0.28), 1]``: a hypothesis is, to a
first approximation, the constant sum of its coefficients. Once the Forgetron's budget is full the
newest terms keep their weight (phi = 1) and the older ones have been shrunk; a hypothesis that
predicts one class everywhere errs on the next example of the other class, whose term flips the
sum. So the mistakes alternate between the classes, the support set is half +1, and the last
hypothesis predicts, almost everywhere, the class of the last mistake; the whole of a9a's pass ends
on a mistake on a +1 example (its last line), hence plab's 28% test accuracy against 81% one step
before. DOGMA's and KOL's reading of mu (on the shrunk hypothesis) does the same.

The reference reads the files itself (``naive.read_libsvm``) and computes its own kernel values;
the tests are skipped without KOL's files (``$PLAB_DATA/kol``, MANIFEST.md).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from naive import NaiveBudget, read_libsvm

from perceptron_lab.engine.budget import EV_MISTAKE, BudgetParams, budget_scores, train_budget
from perceptron_lab.engine.kernels import Kernel

#: a9a's first rows: enough for hundreds of removals at this budget, small enough for the reference.
N_TRAIN, N_TEST, BUDGET, N_FEATURES = 1000, 300, 20, 123
#: KOL's gamma = 0.01 as plab's Gaussian width: exp(-|x - y|^2 / (2 sigma^2)).
SIGMA = math.sqrt(1.0 / (2.0 * 0.01))
#: The hypotheses compared: after each of the last LAST_STEPS steps of the pass, and at its end.
LAST_STEPS = 12

SETTINGS = [dict(algorithm="forgetron"), dict(algorithm="rbp", seed=3), dict(algorithm="stoptron"),
            dict(algorithm="projectron", eta=0.1), dict(algorithm="projectron++", eta=0.1),
            dict(algorithm="norma", eta=0.1, lam=0.0, rho=1.0)]


@pytest.fixture(scope="module")
def a9a(data_dir):
    train, test = data_dir / "kol" / "a9a_train", data_dir / "kol" / "a9a_test"
    if not (train.is_file() and test.is_file()):
        pytest.skip(f"KOL's a9a files not found under {data_dir / 'kol'}")
    X, y = read_libsvm(train, N_TRAIN, N_FEATURES)
    Xt, yt = read_libsvm(test, N_TEST, N_FEATURES)
    return X, y, Xt, yt


def _steps():
    return list(range(N_TRAIN - LAST_STEPS, N_TRAIN + 1))


def _engine(a9a, setting):
    X, y, _, _ = a9a
    kernel = Kernel("gaussian", sigma=SIGMA)
    log = train_budget(X, y[:, None].astype(np.int8), kernel, BudgetParams(budget=BUDGET, **setting),
                       np.arange(N_TRAIN), 1, [T / N_TRAIN for T in _steps()], chunk_size=64)
    assert log.checkpoint_steps.tolist() == _steps()
    return log, kernel


def _reference(a9a, setting, **kw):
    X, y, _, _ = a9a
    ref = NaiveBudget(X, y[:, None], ("gaussian", 1, 1.0, SIGMA), budget=BUDGET, **setting, **kw)
    events = ref.fit(np.arange(N_TRAIN), N_TRAIN, keep=_steps())
    return ref, events


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s["algorithm"])
def test_last_hypothesis_matches_naive_on_a9a(a9a, setting):
    """Every event, the last hypothesis (support in insertion order, coefficients) after each of
    the last steps, and its test predictions, exactly those of the literal reference."""
    X, _, Xt, _ = a9a
    log, kernel = _engine(a9a, setting)
    ref, events = _reference(a9a, setting)
    fast = [(int(s), int(c), int(k), int(e)) for s, c, k, e in zip(log.ev_step, log.ev_cls, log.ev_kind, log.ev_ex)]
    assert fast == [tuple(int(v) for v in e) for e in events]
    assert (log.ev_kind == 2).sum() > 0 or setting["algorithm"] in ("stoptron", "projectron", "projectron++")
    for k, T in enumerate(_steps()):
        exs, coefs = log.last[k][0]
        sv = ref.kept[T][0]
        assert exs.tolist() == [j for j, _ in sv], f"support after step {T}"
        np.testing.assert_allclose(coefs, [a for _, a in sv], rtol=1e-9, atol=1e-12)
        s = budget_scores(log, kernel, X, Xt, "last", k)[:, 0]
        rs = ref.scores(sv, Xt)
        assert np.all(np.abs(rs) > 1e-9), "a test score at 0 would make the sign comparison moot"
        np.testing.assert_array_equal(s > 0, rs > 0, err_msg=f"test predictions after step {T}")
        np.testing.assert_allclose(s, rs, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("mu", ["before", "shrunk"])
def test_forgetron_last_hypothesis_predicts_the_last_mistakes_class(a9a, mu):
    """The reference Forgetron (plab's reading of mu, and DOGMA's and KOL's) on the slice: after
    each of the last steps the last hypothesis predicts one class on (almost) every test point,
    the class of the latest mistake, which is also the sign of its coefficients' sum; the class
    flips from step to step, and the pass ends predicting the minority class +1 though the support
    set holds both classes equally."""
    X, y, Xt, yt = a9a
    assert int((X != 0).sum(axis=1).max()) <= 14 and set(np.unique(X)) <= {0.0, 1.0}
    ref, events = _reference(a9a, dict(algorithm="forgetron"), forgetron_mu=mu)
    mistakes = [(t, int(y[e])) for t, c, kind, e in events if kind == EV_MISTAKE]
    predicted = []
    for T in _steps():
        sv = ref.kept[T][0]
        share = float(np.mean(ref.scores(sv, Xt) > 0))
        assert share >= 0.95 or share <= 0.05, f"after step {T} the hypothesis predicts +1 on {share:.0%}"
        cls = 1 if share > 0.5 else -1
        last_label = [lab for t, lab in mistakes if t < T][-1]
        assert cls == last_label == np.sign(sum(a for _, a in sv))
        predicted.append(cls)
    assert set(predicted) == {-1, 1}
    sv = ref.kept[N_TRAIN][0]
    assert len(sv) == BUDGET and sum(y[j] == 1 for j, _ in sv) == BUDGET // 2
    assert predicted[-1] == 1 and np.mean(yt == 1) < 0.5
    # the kernel is nearly flat against the support set: exp(-28 gamma) at least
    assert min(ref.test_kernel(j, x) for j, _ in sv for x in Xt) >= math.exp(-28 * 0.01) - 1e-12
    # the newest terms carry full weight, the oldest were shrunk
    assert abs(sv[-1][1]) == 1.0 and abs(sv[0][1]) < 1.0


def test_forgetron_estimator_predicts_the_reference_last_hypothesis(a9a):
    """BudgetPerceptron (rule last) on the slice: the reference's predictions, labels as given."""
    from perceptron_lab.estimators.budget import BudgetPerceptron

    X, y, Xt, _ = a9a
    plain = {"fit_intercept": False} if "fit_intercept" in BudgetPerceptron().get_params() else {}
    est = BudgetPerceptron(algorithm="forgetron", budget=BUDGET, kernel="gaussian", sigma=SIGMA, shuffle=False,
                           rule="last", **plain).fit(X, y)
    ref, _ = _reference(a9a, dict(algorithm="forgetron"))
    expected = np.where(ref.scores(ref.kept[N_TRAIN][0], Xt) > 0, 1, -1)
    np.testing.assert_array_equal(est.predict(Xt), expected)
    assert sorted(y[est.support_].tolist()) == [-1] * (BUDGET // 2) + [1] * (BUDGET // 2)
