"""The scikit-learn estimators: scikit-learn's own estimator checks, meta-estimators, pickling,
and equality with the engine path of ``plab run`` (run_unit, and a whole run on an MNIST subset).

Skipped estimator checks: none of ours. scikit-learn itself skips its array-API checks unless
the environment variable SCIPY_ARRAY_API is set (reported by pytest as skipped).
"""

from __future__ import annotations

import doctest
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from perceptron_lab import ALMA, MarginPerceptron, VotedPerceptron
from perceptron_lab.config.load import config_from_dict
from perceptron_lab.datasets import load_dataset
from perceptron_lab.model.predict import RULES
from perceptron_lab.run.plan import RESULT_COLUMNS, Unit
from perceptron_lab.run.inputs import load_data, preprocess
from perceptron_lab.run.spec import unit_spec
from perceptron_lab.run.units import run_unit, unit_data, unit_order

ESTIMATORS = [
    VotedPerceptron(random_state=0),
    MarginPerceptron(tau=0.1, lambda_=0.5, theta_init="avg_sq_norm", C="theta_init", eta=0.5, random_state=0),
    ALMA(alpha=0.9, random_state=0),
    ALMA(p=3.0, alpha=0.9, random_state=0),
    VotedPerceptron(kernel="precomputed", random_state=0),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def _sonar():
    ds = load_dataset("sonar")
    return ds.X_train, np.asarray(ds.classes)[ds.y_train]


# ----------------------------------------------------------------------------- same numbers as plab run

# settings that differ per algorithm: (config algorithm + kernel sections, the estimator)
RUN_UNIT_CASES = {
    "voted_poly": ({"kernel": {"type": "poly", "degree": 2, "scale": 10.0},
                    "algorithm": {"name": "perceptron"}},
                   VotedPerceptron(kernel="poly", degree=2, scale=10.0, epochs=3, shuffle=False)),
    "voted_linear_no_intercept": ({"kernel": {"type": "linear"}, "algorithm": {"name": "perceptron"}},
                                  VotedPerceptron(fit_intercept=False, epochs=3, shuffle=False)),
    # kernel.fit_intercept: true and the estimators' default fit_intercept=True are one setting
    "margin": ({"kernel": {"type": "linear", "fit_intercept": True},
                "algorithm": {"name": "perceptron", "tau": 0.125, "lambda": 0.5, "alpha_bound": 3, "eta": 0.1,
                              "theta_init": "avg_sq_norm", "C": "theta_init"}},
               MarginPerceptron(tau=0.125, lambda_=0.5, alpha_bound=3, eta=0.1, theta_init="avg_sq_norm",
                                C="theta_init", epochs=3, vote_weight="survival", shuffle=False)),
    "alma_gaussian": ({"kernel": {"type": "gaussian", "sigma": 2.0, "fit_intercept": True},
                       "algorithm": {"name": "alma", "alpha": 0.8}},
                      ALMA(alpha=0.8, kernel="gaussian", sigma=2.0, epochs=3, shuffle=False)),
}


@pytest.mark.parametrize("case", list(RUN_UNIT_CASES))
def test_same_test_errors_as_run_unit(case):
    """Fold 0 of a 5-fold run on sonar, trained in run_unit's order: every rule's test error from
    the estimator's predictions equals the one in run_unit's rows (the random rules draw their
    time slices from run_unit's own seed, so they are compared in the MNIST test instead)."""
    sections, est = RUN_UNIT_CASES[case]
    rules = [r for r in RULES if not r.startswith("random")]
    cfg = config_from_dict({"name": f"est_{case}", "dataset": {"name": "sonar"}, **sections,
                            "training": {"epochs": 3, "checkpoints": [3], "seed": 7},
                            "prediction": {"rules": rules, "vote_weight": "survival"},
                            "evaluation": {"mode": "kfold", "folds": 5}})
    ds = load_data(cfg)
    unit = Unit(0, {}, 0, 0)
    rows, _ = run_unit(unit_spec(cfg), ds, unit)
    df = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    df = df[(df.metric == "test_error_pct") & (df["class"] == "all")]
    Xtr, ytr, Xte, yte = unit_data(unit_spec(cfg), ds, unit)
    Xtr, Xte = preprocess(cfg.dataset.preprocess, Xtr, Xte)
    order, _ = unit_order(unit_spec(cfg), unit, len(ytr))
    for rule in rules:
        est.set_params(rule=rule).fit(Xtr[order], ytr[order])
        name, norm = (rule[:-5], "true") if rule.endswith("_norm") else (rule, "false")
        ours = int((est.predict(Xte) != yte).sum())
        theirs = float(df[(df.rule == name) & (df.normalized == norm)].value.iloc[0])
        assert ours == round(theirs * len(yte) / 100.0), (case, rule, ours, theirs)


def test_same_test_errors_as_plab_run_on_mnist(data_dir, tmp_path):
    """VotedPerceptron(kernel="poly", degree=4, epochs=1, random_state=s) against `plab run` of the
    equivalent config (training.seed: s, one permutation, holdout) on the first 3000 / 1000 MNIST
    examples: the same test errors for all eight rules, as written in the run's results.csv."""
    from perceptron_lab.run.experiment import run_experiment

    cfg = config_from_dict({
        "name": "est_mnist", "dataset": {"name": "mnist", "train_size": 3000, "test_size": 1000},
        "kernel": {"type": "poly", "degree": 4}, "algorithm": {"name": "perceptron"},
        "training": {"epochs": 1, "checkpoints": [1], "permutations": 1, "seed": 1999, "curve_every": None},
        "prediction": {"rules": list(RULES), "vote_weight": "survival"}, "evaluation": {"mode": "holdout"}})
    run_experiment(cfg, out_dir=tmp_path / "run", data_dir=data_dir, progress=False)
    res = pd.read_csv(tmp_path / "run" / "results.csv", dtype={"normalized": str})
    res = res[(res.metric == "test_error_pct") & (res["class"] == "all")]
    ds = load_data(cfg, data_dir)
    clf = VotedPerceptron(kernel="poly", degree=4, epochs=1, random_state=1999).fit(ds.X_train, ds.y_train)
    n_test = len(ds.y_test)
    for rule in RULES:
        name, norm = (rule[:-5], "true") if rule.endswith("_norm") else (rule, "false")
        theirs = res[(res.rule == name) & (res.normalized.str.lower() == norm)].value
        assert len(theirs) == 1, (rule, res[["rule", "normalized"]].drop_duplicates())
        ours = int((clf.set_params(rule=rule).predict(ds.X_test) != ds.y_test).sum())
        assert ours == round(float(theirs.iloc[0]) * n_test / 100.0), (rule, ours, float(theirs.iloc[0]))


# ----------------------------------------------------------------------------- behaviour


def test_precomputed_gram_gives_the_kernels_predictions():
    rng = np.random.default_rng(3)
    X = rng.integers(-3, 4, size=(120, 6)).astype(float)
    y = (X @ rng.normal(size=6) > 0).astype(int) + (X[:, 0] > 1)
    Xtr, ytr, Xte = X[:80], y[:80], X[80:]
    named = VotedPerceptron(kernel="poly", degree=3, epochs=2, random_state=1).fit(Xtr, ytr)
    # the poly kernel holds its own constant term (fit_intercept adds none); a given Gram matrix gets
    # fit_intercept's 1 added unless asked not to
    given = VotedPerceptron(kernel="precomputed", fit_intercept=False, epochs=2,
                            random_state=1).fit((1 + Xtr @ Xtr.T) ** 3, ytr)
    K_test = (1 + Xte @ Xtr.T) ** 3
    for rule in RULES:
        named.set_params(rule=rule)
        given.set_params(rule=rule)
        np.testing.assert_array_equal(named.predict(Xte), given.predict(K_test))
        np.testing.assert_allclose(named.decision_function(Xte), given.decision_function(K_test), rtol=1e-12)
    assert given.n_mistakes_ == named.n_mistakes_ > 0


@pytest.mark.parametrize("est", [VotedPerceptron(kernel="poly", degree=2, random_state=0),
                                 MarginPerceptron(tau=0.1, rule="longest", random_state=0),
                                 ALMA(alpha=0.8, kernel="gaussian", sigma=3.0, rule="avg", random_state=0)],
                         ids=["voted", "margin", "alma"])
def test_partial_fit_continues_the_online_run(est):
    X, y = _sonar()
    mix = np.random.default_rng(0).permutation(len(y))  # sonar lists one class first
    X, y = X[mix], y[mix]
    once = clone(est).set_params(shuffle=False).fit(X, y)
    expected, scores = once.predict(X), once.decision_function(X)
    pieces = clone(est).set_params(shuffle=False).fit(X[:50], y[:50])
    pieces.partial_fit(X[50:130], y[50:130]).partial_fit(X[130:], y[130:])
    np.testing.assert_array_equal(pieces.predict(X), expected)
    np.testing.assert_array_equal(pieces.decision_function(X), scores)
    fresh = clone(est).partial_fit(X[:100], y[:100], classes=np.unique(y))
    fresh = pickle.loads(pickle.dumps(fresh)).partial_fit(X[100:], y[100:])  # a pickle keeps its sequence
    np.testing.assert_array_equal(fresh.predict(X), expected)


def test_partial_fit_refuses_what_it_cannot_continue():
    X, y = _sonar()
    with pytest.raises(ValueError, match="classes must be passed"):
        VotedPerceptron().partial_fit(X, y)
    fitted = VotedPerceptron(random_state=0).fit(X, y)
    reloaded = pickle.loads(pickle.dumps(fitted))  # holds the support vectors, not the training data
    assert fitted._seq is not None and reloaded._seq is None
    with pytest.raises(ValueError, match="reloaded from a pickle"):
        reloaded.partial_fit(X, y)
    with pytest.raises(ValueError, match="not in classes"):
        VotedPerceptron().partial_fit(X[:10], y[:10], classes=["M", "R"]).partial_fit(X[:3], ["M", "Q", "R"])
    assert not hasattr(VotedPerceptron(kernel="precomputed"), "partial_fit")


@pytest.mark.parametrize("est", ESTIMATORS[:4] + [VotedPerceptron(kernel="poly", degree=3, rule="random",
                                                                   random_state=5)],
                         ids=["voted", "margin", "alma2", "alma3", "voted_random"])
def test_pickle_round_trip_predicts_the_same(est):
    X, y = _sonar()
    fitted = est.fit(X[::2], y[::2])
    back = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(back.predict(X[1::2]), fitted.predict(X[1::2]))
    np.testing.assert_array_equal(back.decision_function(X[1::2]), fitted.decision_function(X[1::2]))


def test_pipeline_grid_search_and_cross_val_score():
    X, y = _sonar()
    pipe = make_pipeline(StandardScaler(), VotedPerceptron(kernel="poly", degree=2, epochs=5, random_state=0))
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    scores = cross_val_score(pipe, X, y, cv=cv)
    assert scores.shape == (5,) and scores.mean() > 0.7
    grid = GridSearchCV(make_pipeline(StandardScaler(), MarginPerceptron(epochs=5, random_state=0)),
                        {"marginperceptron__tau": [0.0, 0.5], "marginperceptron__rule": ["last", "avg"]}, cv=cv)
    grid.fit(X, y)
    assert set(grid.best_params_) == {"marginperceptron__tau", "marginperceptron__rule"}
    assert grid.best_score_ > 0.65
    assert grid.predict(X).shape == y.shape and set(grid.predict(X)) <= {"M", "R"}


def test_multiclass_decision_function_and_labels():
    ds = load_dataset("ionosphere")
    X, y = ds.X_train, ds.y_train
    y3 = np.where(X[:, 2] > 0.9, "c", np.where(y == 1, "b", "a"))
    clf = VotedPerceptron(kernel="gaussian", sigma=2.0, epochs=2, random_state=0).fit(X, y3)
    S = clf.decision_function(X)
    assert S.shape == (len(y3), 3) and list(clf.classes_) == ["a", "b", "c"]
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(S, axis=1)])
    assert clf.score(X, y3) > 0.8 and clf.n_features_in_ == X.shape[1]


@pytest.mark.parametrize("est, fit_X, match", [
    (VotedPerceptron(rule="nope"), None, "The 'rule' parameter of VotedPerceptron must be"),
    (MarginPerceptron(tau=-1), None, "The 'tau' parameter"),
    (ALMA(alpha=1.5), None, "The 'alpha' parameter"),
    (ALMA(kernel="precomputed"), "gram", "kernel='precomputed' is not supported"),
    (ALMA(p=3.0, kernel="poly"), None, "needs kernel='linear'"),
    (VotedPerceptron(kernel="precomputed"), None, "square Gram matrix"),
    (VotedPerceptron(epochs=0.001), None, "less than one training step"),
    (VotedPerceptron(kernel="gaussian", sigma=1e-6), None, "kernel.sigma"),
])
def test_bad_settings_raise_value_errors(est, fit_X, match):
    X, y = _sonar()
    with pytest.raises(ValueError, match=match):
        est.fit(X @ X.T if fit_X == "gram" else X, y)


def test_docs_estimators_example_doctest():
    """The estimators page's first example (docs/estimators.md) runs and prints what it shows."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "estimators.md").read_text(encoding="utf-8")
    block = text.split("```pycon\n", 1)[1].split("```", 1)[0]
    test = doctest.DocTestParser().get_doctest(block, {}, "docs/estimators.md", "docs/estimators.md", 0)
    assert len(test.examples) >= 10
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    report = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
