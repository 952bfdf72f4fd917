"""Budgeted runs that can never update, or that ran as a simpler algorithm, say so (issue 55, item 3).

The Projectron adds a mistake only when its distance from the span of the support set exceeds
eta; with the set empty that distance is sqrt(K(x, x)), so at eta >= sqrt(max K(x, x)) nothing is
ever added and the run predicts one class. NORMA with rho = 0 never passes y f(x) < rho at f = 0.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from perceptron_lab import BudgetPerceptron
from perceptron_lab.config.load import config_from_dict
from perceptron_lab.engine.families import BudgetSettings, never_updates
from perceptron_lab.estimators import online
from perceptron_lab.studies import budget as study


def test_never_updates_at_the_threshold_and_not_below():
    for alg in ("projectron", "projectron++"):
        assert never_updates(BudgetSettings(name=alg, eta=1.0), 1.0) is not None
        assert never_updates(BudgetSettings(name=alg, eta=0.999), 1.0) is None
        assert never_updates(BudgetSettings(name=alg, eta=1.2), 2.0) is None   # sqrt 2 > 1.2
        assert "eta = 1.5" in never_updates(BudgetSettings(name=alg, eta=1.5), 2.0, prefix="")
    assert never_updates(BudgetSettings(name="norma", rho=0.0), 1.0) is not None
    assert never_updates(BudgetSettings(name="norma", rho=0.5), 1.0) is None
    assert never_updates(BudgetSettings(name="stoptron"), 1.0) is None


def _sonar():
    from perceptron_lab.datasets import load_dataset

    ds = load_dataset("sonar")
    return ds.X_train, ds.y_train


@pytest.mark.parametrize("kw", [dict(algorithm="projectron", eta=1.0), dict(algorithm="projectron++", eta=2.0),
                                dict(algorithm="norma", rho=0.0)])
def test_a_run_that_cannot_update_warns_and_indeed_never_updates(kw):
    X, y = _sonar()
    est = BudgetPerceptron(kernel="gaussian", sigma=3.0, fit_intercept=False, random_state=0, **kw)
    with pytest.warns(UserWarning, match="never|no example ever passes"):
        est.fit(X, y)
    assert est.n_updates_ == 0 and len(np.unique(est.predict(X))) == 1


def test_a_run_that_can_update_does_not_warn():
    X, y = _sonar()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = BudgetPerceptron(algorithm="projectron", eta=0.99, kernel="gaussian", sigma=3.0, fit_intercept=False,
                               random_state=0).fit(X, y)
    assert est.n_updates_ > 0


def test_online_gaussian_projectron_warns_when_eta_reaches_one():
    with pytest.warns(UserWarning, match="never updates"):
        online.BudgetKernelPerceptron("projectron", eta=1.0, kernel="gaussian", fit_intercept=False)
    # with the intercept K(x, x) = 2: eta = 1 is below sqrt 2, the run can update
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        online.BudgetKernelPerceptron("projectron", eta=1.0, kernel="gaussian")


def _run(tmp_path, name, algorithm, capsys):
    from perceptron_lab.run.experiment import run_experiment

    cfg = config_from_dict({"name": name, "dataset": {"name": "sonar"},
                            "kernel": {"type": "gaussian", "sigma": 1.0},
                            "algorithm": algorithm, "training": {"epochs": 1, "checkpoints": [1]},
                            "prediction": {"rules": ["last", "avg"]},
                            "evaluation": {"mode": "kfold", "folds": 3}})
    run_experiment(cfg, out_dir=tmp_path / name, progress=False)
    return capsys.readouterr().err, tmp_path / name


def test_plab_run_warns_before_a_run_that_cannot_update(tmp_path, capsys):
    err, out = _run(tmp_path, "never", {"name": "projectron", "eta": 1.0, "budget": 30}, capsys)
    assert "plab: warning: projectron: algorithm.eta = 1 is at least sqrt(max K(x, x)) = 1" in err
    res = pd.read_csv(out / "results.csv")
    assert (res[res.metric == "support_vectors"].value == 0).all()
    assert json.loads((out / "run.json").read_text())["warnings"]


def test_plab_run_notes_a_projectron_pp_without_margin_updates(tmp_path, capsys):
    err, out = _run(tmp_path, "pp", {"name": "projectron++", "eta": 0.1, "budget": 200}, capsys)
    timings = json.loads((out / "timings.json").read_text())
    units = [t for t in timings.values() if isinstance(t, dict) and "margin_updates" in t]
    assert units and all(t["margin_updates"] == 0 for t in units)
    assert "no margin update in 3 unit(s)" in err and "warning" not in err
    # with a budget no unit fills, and every mistake farther than eta from the span: no projection
    assert all(t["projections"] == 0 for t in units) and "no mistake was projected" in err


def test_the_study_reads_a_null_budget_as_unbounded_and_says_why_rows_coincide():
    assert study._budget(float("nan")) == math.inf and study._budget(None) == math.inf
    assert study._budget(100) == 100.0
    rows = [{"panel": "p", "method": m, "budget": b, "rule": "avg", "test_error_pct": e}
            for m, errs in (("projectron", (5.0, 4.0)), ("projectron++", (5.0, 4.0)), ("stoptron", (6.0, 4.0)))
            for b, e in zip((100.0, math.inf), errs)]
    df = pd.DataFrame(rows)
    assert study.coinciding_rows(df, "p") == [("projectron++", "projectron")]
    (line,) = study.coincidence_lines(df, "p")
    assert line.startswith("Projectron++ equals Projectron at every budget: a margin update")
