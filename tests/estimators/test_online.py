"""The River-style online classes (perceptron_lab.estimators.online): River's own estimator checks, the module's
progressive-validation doctest, and the same models as the batch estimators on the same stream."""

from __future__ import annotations

import doctest
import gc

import numpy as np
import pytest

from perceptron_lab import ALMA, BudgetPerceptron, VotedPerceptron
from perceptron_lab.estimators import online
from perceptron_lab.constants import BUDGET_ALGORITHMS
from perceptron_lab.datasets import load_dataset

NO_RIVER = "river is not installed (pip install perceptron_lab[online])"


def _river():
    return pytest.importorskip("river", reason=NO_RIVER)


def _models():
    for cls in (online.BudgetKernelPerceptron, online.KernelPerceptron, online.ALMA):
        for params in cls._unit_test_params():
            yield cls(**params)
    for alg in BUDGET_ALGORITHMS:
        # sigma 50: River's checks stream raw ImageSegments, whose examples lie up to 1523 apart
        yield online.BudgetKernelPerceptron(alg, budget=8, kernel="gaussian", sigma=50.0, seed=1)


def _river_checks():
    try:
        from river import checks
    except ImportError:
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=NO_RIVER))]
    cases = []
    for i, model in enumerate(_models()):
        for check in checks.yield_checks(model):
            if check.__name__ in model._unit_test_skips():
                continue
            dataset = getattr(check, "keywords", {}).get("dataset")
            name = check.__name__ + (f"[{type(dataset).__name__}]" if dataset is not None else "")
            cases.append(pytest.param(model, check, id=f"{type(model).__name__}{i}-{name}"))
    return cases


@pytest.mark.parametrize("model, check", _river_checks())
def test_river_estimator_checks(model, check):
    """River's checks (river.checks.yield_checks: the conventions, learn_one / predict_one purity,
    emerging and disappearing features, pickling, cloning, bounded memory growth)."""
    # River's memory check calls gc.collect(), whose cost grows with every object the test process
    # holds; the objects that exist before the check are set aside (gc.freeze), so each collection
    # walks only what the check itself allocates. What is measured, the model's own size, is the same.
    gc.freeze()
    try:
        check(model.clone())
    finally:
        gc.unfreeze()


def test_module_doctests_progressive_validation():
    """The module's examples, among them progressive_val_score on River's bundled Phishing stream."""
    _river()
    res = doctest.testmod(online, optionflags=doctest.ELLIPSIS)
    assert res.attempted >= 10 and res.failed == 0


def _stream(n_classes):
    ds = load_dataset("sonar")
    X, y = ds.X_train, ds.y_train
    if n_classes == 3:
        y = np.where(X[:, 10] > 0.3, 2, y)
    mix = np.random.default_rng(0).permutation(len(y))
    return X[mix], y[mix]


def _dicts(X):
    return [{f"f{j}": float(v) for j, v in enumerate(row)} for row in X]


@pytest.mark.parametrize("rule", ["last", "avg"])
@pytest.mark.parametrize("alg", BUDGET_ALGORITHMS)
def test_budget_online_is_the_batch_estimators_run(alg, rule):
    """learn_one over a stream, with the classes given, gives the model of BudgetPerceptron fit
    on the same sequence in one pass (train_budget, the path of plab run): the same mistakes and
    support sets, the same predictions and the same scores (to rounding: the kernel values come
    from blocks of another shape)."""
    X, y = _stream(3)
    kw = dict(budget=12, eta=0.3 if alg.startswith("projectron") else None, kernel="gaussian", sigma=2.0)
    model = online.BudgetKernelPerceptron(alg, **kw, rule=rule, classes=[0, 1, 2], seed=4)
    for x, t in zip(_dicts(X[:150]), y[:150]):
        model.learn_one(x, int(t))
    batch = BudgetPerceptron(algorithm=alg, **kw, rule=rule, shuffle=False, random_state=4).fit(X[:150], y[:150])
    assert model.n_mistakes_ == batch.n_mistakes_ > 0
    assert list(model.n_support_.values()) == [len(e) for e, _ in batch.log_.last[-1]]
    Xt = _dicts(X[150:])
    scores = np.array([list(model.decision_one(x).values()) for x in Xt])
    np.testing.assert_allclose(scores, batch.decision_function(X[150:]), rtol=1e-9, atol=1e-12)
    assert [model.predict_one(x) for x in Xt] == batch.predict(X[150:]).tolist()


def test_kernel_perceptron_is_the_voted_perceptrons_last_hypothesis():
    """KernelPerceptron (the Stoptron without a budget) against VotedPerceptron's last rule, the
    perceptron engine of plab run, on a two-class stream with the classes given."""
    X, y = _stream(2)
    model = online.KernelPerceptron(kernel="poly", degree=2, scale=4.0, classes=[0, 1])
    for x, t in zip(_dicts(X[:150]), y[:150]):
        model.learn_one(x, int(t))
    batch = VotedPerceptron(kernel="poly", degree=2, scale=4.0, rule="last", shuffle=False).fit(X[:150], y[:150])
    assert model.n_mistakes_ == batch.n_mistakes_ > 0
    Xt = _dicts(X[150:])
    scores = np.array([model.decision_one(x)[1] for x in Xt])
    # the budgeted engine scales nothing here: the kernel as given, as the estimator's
    np.testing.assert_allclose(scores, batch.decision_function(X[150:]), rtol=1e-9, atol=1e-9)
    assert [model.predict_one(x) for x in Xt] == batch.predict(X[150:]).tolist()


@pytest.mark.parametrize("p", [2.0, 3.0])
def test_alma_online_is_the_batch_alma(p):
    """online.ALMA against perceptron_lab.ALMA (linear kernel, one pass in order, three classes):
    the same corrections and predictions, and scores proportional per example (the batch scores
    the p-normalized instance)."""
    X, y = _stream(3)
    model = online.ALMA(p=p, alpha=0.8, classes=[0, 1, 2], fit_intercept=False)
    for x, t in zip(_dicts(X[:150]), y[:150]):
        model.learn_one(x, int(t))
    batch = ALMA(p=p, alpha=0.8, rule="last", shuffle=False, fit_intercept=False).fit(X[:150], y[:150])
    assert model.n_corrections_ == batch.n_mistakes_ > 0
    Xt = _dicts(X[150:])
    assert [model.predict_one(x) for x in Xt] == batch.predict(X[150:]).tolist()
    ours = np.array([list(model.decision_one(x).values()) for x in Xt])
    theirs = batch.decision_function(X[150:])
    ratio = ours / theirs
    np.testing.assert_allclose(ratio, ratio[:, :1] * np.ones((1, 3)), rtol=1e-8)


def test_classes_learned_as_they_come_and_bad_input():
    model = online.BudgetKernelPerceptron("forgetron", budget=3)
    assert model.predict_one({"a": 1.0}) is None
    model.learn_one({"a": 1.0}, "x")
    assert model.predict_one({"a": 1.0}) == "x"
    model.learn_one({"a": -1.0, "b": 2.0}, "y")
    model.learn_one({"b": -3.0}, "z")
    assert set(model.decision_one({"a": 0.5})) == {"x", "y", "z"}
    with pytest.raises(ValueError, match="takes numbers only"):
        model.learn_one({"a": "red"}, "x")
    with pytest.raises(ValueError, match="not in classes"):
        online.ALMA(classes=[0, 1]).learn_one({"a": 1.0}, 2)
    with pytest.raises(ValueError, match="The 'rule' parameter of KernelPerceptron must be one of 'last', 'avg'"):
        online.KernelPerceptron(rule="vote")
    with pytest.raises(ValueError, match="The 'budget' parameter of BudgetKernelPerceptron must be an integer >= 1"):
        online.BudgetKernelPerceptron(budget=0)
    with pytest.raises(ValueError, match="The 'algorithm' parameter of BudgetKernelPerceptron must be one of"):
        online.BudgetKernelPerceptron("nope")


def test_the_last_rule_keeps_memory_within_the_budget():
    """With rule="last" the rows of removed support vectors are let go: after a long stream the
    model holds at most a few budgets' worth of rows, and predicts as a model that kept them."""
    X, y = _stream(3)
    lean = online.BudgetKernelPerceptron("rbp", budget=5, kernel="gaussian", sigma=2.0, classes=[0, 1, 2])
    full = online.BudgetKernelPerceptron("rbp", budget=5, kernel="gaussian", sigma=2.0, classes=[0, 1, 2],
                                         rule="avg")
    stream = list(zip(_dicts(X), y.tolist())) * 3
    for x, t in stream:
        lean.learn_one(x, t)
        full.learn_one(x, t)
    assert lean.n_mistakes_ == full.n_mistakes_ > 3 * 3 * 5 + 64
    assert lean._run.X.shape[0] <= 2 * 15 + 64 < full._run.X.shape[0]
    full.rule = "last"  # the same last hypothesis: scores from the model that kept every row
    for x, _ in stream[:50]:
        a, b = lean.decision_one(x), full.decision_one(x)
        assert a.keys() == b.keys() and np.allclose(list(a.values()), list(b.values()), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("first, second", [(1, True), (True, 1), (1.0, True), (0, False)])
def test_labels_of_two_kinds_never_merge_into_one_class(first, second):
    # Python's == makes True == 1 == 1.0; a stream mixing booleans and numbers must stop, not merge them
    model = online.KernelPerceptron()
    model.learn_one({"a": 1.0}, first)
    with pytest.raises(ValueError, match="another type"):
        model.learn_one({"a": -1.0}, second)


def test_ints_and_floats_of_one_value_are_one_class_and_distinct_values_two():
    model = online.KernelPerceptron()
    model.learn_one({"a": 1.0}, 2**53)
    model.learn_one({"a": -1.0}, 2**53 + 1)  # distinct ints beyond float precision stay two classes
    model.learn_one({"a": 2.0}, float(2**53))  # the same number as an int and a float: one class
    assert model._classes == [2**53, 2**53 + 1]


@pytest.mark.parametrize("c", [1e-200, 1e200])
def test_an_example_beyond_float64s_range_is_refused_and_the_fix_works(c):
    # before: features of 1e-200 gave inner products of 0, every example a mistake, and no error
    X, y = load_dataset("sonar").X_train[:40], load_dataset("sonar").y_train[:40]
    model = online.KernelPerceptron(classes=[0, 1])
    with pytest.raises(ValueError, match="outside float64's range"):
        model.learn_one(dict(enumerate(X[0] * c)), y[0])
    fixed, ref = online.KernelPerceptron(classes=[0, 1]), online.KernelPerceptron(classes=[0, 1])
    for xi, yi in zip(X, y):
        fixed.learn_one(dict(enumerate(xi * c / c)), yi)  # the fix: one constant back to near 1
        ref.learn_one(dict(enumerate(xi)), yi)
    assert fixed.n_mistakes_ == ref.n_mistakes_


# ------------------------------------------------------------------ scores outside float64's range


def _state(model) -> bytes:
    import pickle

    return pickle.dumps(model)


def _scale_from(msg: str) -> float:
    import re

    return float(re.search(r"Fix: set scale to at least ([0-9.e+-]+)", msg).group(1))


@pytest.mark.parametrize("degree, c", [(300, 1.0), (3, 1e100), (40, 1e5)])
def test_poly_overflow_is_refused_unchanged_and_the_fix_runs(degree, c):
    """KernelPerceptron(poly) on sonar whose K(x, x) = (1 + |x|^2)^d or scores overflow float64.
    Before: NaN or inf scores, learn_one's test y f <= 0 False on NaN (no update, silently), and
    predict_one returned a class for them, exit 0. Now learn_one raises a ValueError naming a scale
    that works, and the refused call changes nothing; with that scale the whole stream runs, every
    score a number."""
    X, y = _stream(2)
    X = X[:60] * c
    model = online.KernelPerceptron(kernel="poly", degree=degree, classes=[0, 1])
    msg = None
    for x, t in zip(_dicts(X), y):
        before = _state(model)
        try:
            model.learn_one(x, int(t))
        except ValueError as exc:
            msg = str(exc)
            assert _state(model) == before
            break
    assert msg is not None and "overflows float64" in msg and "\n" not in msg
    fixed = online.KernelPerceptron(kernel="poly", degree=degree, scale=_scale_from(msg) * 2.0**4, classes=[0, 1])
    for x, t in zip(_dicts(X), y):
        fixed.learn_one(x, int(t))
        assert np.isfinite(list(fixed.decision_one(x).values())).all()
    assert fixed.n_mistakes_ > 0


@pytest.mark.parametrize("cls", [online.KernelPerceptron, online.BudgetKernelPerceptron])
def test_no_class_is_predicted_from_an_overflowing_score(cls):
    """A model trained on sonar (poly degree 3), asked about an example 1e103 times larger: its
    kernel values (1 + x.y)^3 reach 1e309 and overflow. Before: decision_one
    gave inf or NaN and predict_one a class; now both raise a ValueError."""
    X, y = _stream(2)
    model = cls(kernel="poly", degree=3, classes=[0, 1]) if cls is online.KernelPerceptron else \
        cls("stoptron", budget=None, kernel="poly", degree=3, classes=[0, 1])
    for x, t in zip(_dicts(X[:100]), y[:100]):
        model.learn_one(x, int(t))
    far = {f"f{j}": v * 1e103 for j, v in enumerate(X[150])}
    for call in (model.predict_one, model.decision_one):
        with pytest.raises(ValueError, match="overflows float64"):
            call(far)
    assert model.predict_one(_dicts(X[150:151])[0]) in (0, 1)


def test_gaussian_scores_below_float64s_range():
    """Two support vectors at 0 (class p) and 100 (class n), sigma 1: at 40 the kernel values are
    e^-800 and e^-1800, both 0 in float64, and the score e^-800 - e^-1800 is positive.
    Before: score 0, predicted n; now p, the class of the true score (decision_one shows the
    float64 score, 0). Learning p at 40 would count a mistake on that 0 where the kernel
    perceptron has none: refused, with nothing changed; the sigma it names runs."""
    # the Gaussian kernel itself (fit_intercept's K + 1 holds a constant that no distance underflows)
    model = online.KernelPerceptron(kernel="gaussian", sigma=1.0, classes=["n", "p"], fit_intercept=False)
    model.learn_one({"a": 0.0}, "p")
    model.learn_one({"a": 100.0}, "n")
    assert model.n_support_ == {"p": 2}
    assert model.predict_one({"a": 40.0}) == "p" and model.predict_one({"a": 60.0}) == "n"
    assert model.decision_one({"a": 40.0}) == {"p": 0.0}
    model.learn_one({"a": 140.0}, "p")  # a mistake on 0 and on the true score (-e^-800): learned
    assert model.n_support_ == {"p": 3}
    before = _state(model)
    with pytest.raises(ValueError, match="below float64's range") as exc:
        model.learn_one({"a": 40.0}, "p")
    assert _state(model) == before
    import re

    sigma = float(re.search(r"set sigma near ([0-9.e+-]+)", str(exc.value)).group(1))
    fixed = online.KernelPerceptron(kernel="gaussian", sigma=sigma, classes=["n", "p"], fit_intercept=False)
    for a, t in ((0.0, "p"), (100.0, "n"), (140.0, "p"), (40.0, "p")):
        fixed.learn_one({"a": a}, t)
    assert fixed.n_mistakes_ == 3 and fixed.predict_one({"a": 40.0}) == "p"


def test_alma_class_below_float64s_range_is_refused():
    """Online ALMA_100000 after one correction on (a, b) = (1, 0.5): w_b = 0.5^99999 |theta|_p
    underflows to 0, so the score of {b: 1}, positive in exact arithmetic, comes out 0. Before:
    predict_one returned class 0 (the score's float64 sign); now a ValueError, and {a: 1}, whose
    score float64 holds, is still predicted."""
    model = online.ALMA(p=1e5, alpha=0.8, B=1e-3, classes=[0, 1], fit_intercept=False)
    model.learn_one({"a": 1.0, "b": 0.5}, 1)
    assert model.n_corrections_ == 1
    with pytest.raises(ValueError, match="cannot be decided"):
        model.predict_one({"b": 1.0})
    assert model.predict_one({"a": 1.0}) == 1 and model.predict_one({"a": -1.0, "b": 1.0}) == 0


def test_online_alma_refusal_changes_nothing():
    """Online ALMA_100000(1) on integer features (tests/engine/test_alma.py::
    test_undecidable_correction_is_refused_and_the_fix_runs): a correction test float64 cannot
    decide. Before: learned as a correction (w = 0 after every update). Now learn_one raises a
    ValueError whose fix names the class's own parameters, and the model is as before: features,
    classes, weights, corrections."""
    rng = np.random.default_rng(1)
    X = rng.integers(-3, 4, size=(60, 12)).astype(float)
    y = (X @ rng.normal(size=12) > 0).astype(int)
    order = rng.permutation(60)
    model = online.ALMA(p=1e5, alpha=1.0, classes=[0, 1])
    refused = 0
    for i in np.concatenate([order, order]):
        x, label = {f"f{j}": float(v) for j, v in enumerate(X[i]) if v}, int(y[i])
        state = (dict(model._features), list(model._classes), model._run.W.copy(), model._run.theta.copy(),
                 model._run.ncorr.copy(), model.n_corrections_)
        try:
            model.learn_one(x, label)
        except ValueError as exc:
            assert "Fix: set alpha below 1" in str(exc)
            after = (model._features, model._classes, model._run.W, model._run.theta, model._run.ncorr,
                     model.n_corrections_)
            assert after[:2] == state[:2] and after[5] == state[5]
            for a, b in zip(after[2:5], state[2:5]):
                np.testing.assert_array_equal(a, b)
            refused += 1
    assert refused
