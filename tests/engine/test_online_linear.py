"""engine/online_linear.py and the online KernelPerceptron's primal path (issue 55, item 4):
against a literal perceptron written here, learn_many against learn_one looped, bit for bit."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from perceptron_lab.engine.online_linear import LinearRun
from perceptron_lab.estimators import online


def _naive(X, Y):
    """Freund & Schapire's Figure 1 with the linear kernel, per label, in plain Python; also the
    sum of the hypotheses after each step (the averaged rule)."""
    L, d = Y.shape[1], X.shape[1]
    w = [[0.0] * d for _ in range(L)]
    total = [[0.0] * d for _ in range(L)]
    mistakes = [0] * L
    for x, ys in zip(X.tolist(), Y.tolist()):
        for c in range(L):
            s = 0.0
            for j in range(d):
                s += w[c][j] * x[j]
            if ys[c] * s <= 0.0:
                mistakes[c] += 1
                for j in range(d):
                    w[c][j] += ys[c] * x[j]
        for c in range(L):
            for j in range(d):
                total[c][j] += w[c][j]
    return np.array(w), np.array(total), mistakes


def test_the_run_is_the_literal_perceptron_on_integer_features():
    rng = np.random.default_rng(0)
    X = rng.integers(-3, 4, size=(300, 7)).astype(float)
    Y = np.where(X @ rng.normal(size=(7, 3)) > 0, 1.0, -1.0)
    run = LinearRun(3, 7)
    assert run.learn(X, Y) == 300
    w, total, mistakes = _naive(X, Y)
    np.testing.assert_array_equal(run.W, w)
    assert run.mistakes.tolist() == mistakes
    # integers: the averaged hypothesis (T + 1) W - V is exact
    T = rng.integers(-3, 4, size=(20, 7)).astype(float)
    np.testing.assert_array_equal(run.scores(T, avg=True), T @ total.T)
    np.testing.assert_array_equal(run.scores(T), T @ w.T)


def _phishing(n=600):
    datasets = pytest.importorskip("river.datasets")
    return list(itertools.islice(datasets.Phishing(), n))


@pytest.mark.parametrize("classes", [[False, True], None])
@pytest.mark.parametrize("rule", ["last", "avg"])
def test_learn_many_is_learn_one_looped_bit_for_bit(classes, rule):
    data = _phishing()
    one = online.KernelPerceptron(kernel="linear", classes=classes, rule=rule)
    for x, y in data:
        one.learn_one(x, y)
    many = online.KernelPerceptron(kernel="linear", classes=classes, rule=rule)
    X = pd.DataFrame([x for x, _ in data])
    y = pd.Series([y for _, y in data])
    many.learn_many(X.iloc[:250], y.iloc[:250])
    many.learn_many(X.iloc[250:], y.iloc[250:])
    assert one._run.W.tobytes() == many._run.W.tobytes() and one._run.V.tobytes() == many._run.V.tobytes()
    assert one.n_mistakes_ == many.n_mistakes_ > 0
    for x, _ in data[:50]:
        assert one.decision_one(x) == many.decision_one(x)
    assert many.predict_many(X.iloc[:50]).tolist() == [one.predict_one(x) for x, _ in data[:50]]


def test_learn_many_starts_a_new_class_where_its_first_example_comes():
    rows = [({"a": 1.0, "b": 0.0}, "x"), ({"a": 0.0, "b": 1.0}, "y"), ({"a": -1.0, "b": 0.5}, "z"),
            ({"a": 0.5, "b": -1.0}, "x"), ({"a": -0.5, "b": -0.5}, "z")]
    one = online.KernelPerceptron(kernel="linear")
    for x, y in rows:
        one.learn_one(x, y)
    many = online.KernelPerceptron(kernel="linear")
    many.learn_many(pd.DataFrame([x for x, _ in rows]), pd.Series([y for _, y in rows]))
    assert one._run.W.tobytes() == many._run.W.tobytes()
    assert many._classes == ["x", "y", "z"]


def test_a_refused_batch_changes_nothing():
    data = _phishing(100)
    model = online.KernelPerceptron(kernel="linear", classes=[False, True])
    for x, y in data[:50]:
        model.learn_one(x, y)
    W, feats = model._run.W.copy(), dict(model._features)
    X = pd.DataFrame([x for x, _ in data[50:]])
    X.iloc[30, 0] = float("nan")
    with pytest.raises(ValueError, match="not finite"):
        model.learn_many(X, pd.Series([y for _, y in data[50:]]))
    assert np.array_equal(model._run.W, W) and model._features == feats


def test_the_primal_path_predicts_as_the_dual_form_on_integer_features():
    """The kernel perceptron in primal form (KernelPerceptron, linear) and in dual form (the
    budgeted engine's Stoptron without a budget): on integer features both are exact, so their
    mistakes and scores are equal."""
    rng = np.random.default_rng(5)
    X = rng.integers(-2, 3, size=(200, 4)).astype(float)
    y = (X @ np.array([1.0, -2.0, 0.5, 1.0]) + 0.5 > 0).tolist()
    primal = online.KernelPerceptron(kernel="linear", classes=[False, True])
    dual = online.BudgetKernelPerceptron("stoptron", budget=None, kernel="linear", classes=[False, True])
    for row, t in zip(X, y):
        x = {f"f{j}": float(v) for j, v in enumerate(row)}
        assert primal.decision_one(x) == dual.decision_one(x)
        primal.learn_one(x, t)
        dual.learn_one(x, t)
    assert primal.n_mistakes_ == dual.n_mistakes_ > 0


def test_predict_proba_one_names_decision_one():
    model = online.KernelPerceptron(kernel="linear")
    model.learn_one({"a": 1.0}, True)
    with pytest.raises(NotImplementedError, match=r"use decision_one\(x\) for the scores"):
        model.predict_proba_one({"a": 1.0})
    with pytest.raises(NotImplementedError, match="decision_one"):
        online.ALMA().predict_proba_one({"a": 1.0})
