"""engine/families.py: the algorithm table and the settings records, with values written by hand.

The ``describe()`` texts are the ``params`` column of every committed results.csv: they must not
move. Defaults: Freund & Schapire's perceptron (eta = 1, no threshold); Gentile's ALMA_p(alpha; B =
1/alpha, C = sqrt 2), p = 2 (§4), or Theorem 3's B = sqrt(8)/alpha; the Projectron's eta = 0.1 and
NORMA's eta = 0.1, rho = 1 (constant rate) as the budget study states them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from perceptron_lab.engine import families as fam
from perceptron_lab.engine.alma import AlmaParams
from perceptron_lab.engine.base import EngineError
from perceptron_lab.engine.budget import BudgetParams
from perceptron_lab.engine.perceptron import PerceptronParams

BUDGETED = ("stoptron", "rbp", "forgetron", "projectron", "projectron++", "norma")


def test_the_table_of_algorithms():
    assert set(fam.ALGORITHMS) == {"perceptron", "alma", *BUDGETED}
    row = fam.ALGORITHMS["perceptron"]
    assert (row.family, row.settings, row.kernel, row.predict) == ("perceptron", fam.PerceptronSettings,
                                                                    "range_safe", "rules")
    row = fam.ALGORITHMS["alma"]
    assert (row.family, row.settings, row.kernel, row.predict) == ("alma", fam.AlmaSettings, "range_safe", "rules")
    for n in BUDGETED:
        row = fam.ALGORITHMS[n]
        assert (row.name, row.family, row.settings, row.kernel, row.predict) == (n, "budget", fam.BudgetSettings,
                                                                                 "unit_diag", "budget")


def test_an_unknown_name_names_the_closest():
    with pytest.raises(EngineError, match="unknown algorithm 'percepton'.*did you mean 'perceptron'"):
        fam.algorithm("percepton")
    with pytest.raises(EngineError, match="unknown algorithm"):
        fam.algorithm(None)


def test_settings_records_and_their_fields():
    assert fam.ALGORITHMS["perceptron"].setting_names == ("eta", "theta_init", "C", "tau", "lambda_", "alpha_bound",
                                                          "lambda_term", "form")
    assert fam.ALGORITHMS["alma"].setting_names == ("alpha", "B", "C", "p")
    assert fam.ALGORITHMS["norma"].setting_names == ("budget", "eta", "lambda_", "rho", "schedule")
    s = fam.ALGORITHMS["rbp"].make_settings(budget=7)
    assert s == fam.BudgetSettings(name="rbp", budget=7) and fam.algorithm_of(s).name == "rbp"
    assert fam.algorithm_of(fam.PerceptronSettings()).name == "perceptron"
    assert fam.algorithm_of(fam.AlmaSettings()).name == "alma"


def test_perceptron_settings():
    s = fam.PerceptronSettings()
    assert s.params(np.array([2.0])) == PerceptronParams(eta=1.0)
    assert s.describe() == "eta=1;theta_init=0.0;C=0.0;tau=0;lambda=0;alpha_bound=inf"
    s = fam.PerceptronSettings(eta=0.1, theta_init="avg_sq_norm", C="theta_init", tau=0.125, alpha_bound=80)
    assert s.describe() == "eta=0.1;theta_init=avg_sq_norm;C=theta_init;tau=0.125;lambda=0;alpha_bound=80"
    assert s.params(np.array([2.0, 4.0])) == PerceptronParams(eta=0.1, theta_init=3.0, C=3.0, tau_abs=0.375,
                                                              alpha_bound=80)


@pytest.mark.parametrize("B, alpha, want", [(None, 0.5, 2.0), ("1/alpha", 0.8, 1.25),
                                            ("sqrt8/alpha", 0.5, 2 * math.sqrt(8.0)), (3, 0.9, 3.0)])
def test_alma_settings_resolve_B(B, alpha, want):
    p = fam.AlmaSettings(alpha=alpha, B=B).params()
    assert isinstance(p, AlmaParams)
    assert (p.alpha, p.C, p.p) == (alpha, math.sqrt(2.0), 2.0)
    assert p.B == pytest.approx(want, rel=1e-15)


def test_alma_settings_describe_and_refuse():
    assert fam.AlmaSettings().describe() == "alpha=1;B=None;C=1.41421;p=2"
    assert fam.AlmaSettings(alpha=0.9, B="sqrt8/alpha", p=6).describe() == "alpha=0.9;B=sqrt8/alpha;C=1.41421;p=6"
    with pytest.raises(EngineError, match="ALMA's B must be"):
        fam.AlmaSettings(B="8/alpha").params()


def test_budget_settings_params():
    p = fam.BudgetSettings(name="stoptron").params()
    assert p == BudgetParams(algorithm="stoptron", budget=np.iinfo(np.int64).max, eta=0.1, lam=0.0, rho=1.0,
                             schedule="constant", seed=0)
    p = fam.BudgetSettings(name="norma", budget=20, eta=None, lambda_=None, rho=None, schedule=None).params(seed=9)
    assert p == BudgetParams(algorithm="norma", budget=20, eta=0.1, lam=0.0, rho=1.0, schedule="constant", seed=9)
    p = fam.BudgetSettings(name="norma", budget=5, eta=0.3, lambda_=0.01, rho=0.5, schedule="sqrt").params()
    assert (p.eta, p.lam, p.rho, p.schedule) == (0.3, 0.01, 0.5, "sqrt")
    assert fam.BudgetSettings(name="projectron", eta=None).params().eta == 0.1


def test_budget_settings_describe():
    assert fam.BudgetSettings(name="stoptron", budget=100).describe() == "budget=100"
    assert fam.BudgetSettings(name="rbp").describe() == "budget=inf"
    assert fam.BudgetSettings(name="projectron++", budget=30, eta=0.1).describe() == "budget=30;eta=0.1"
    assert (fam.BudgetSettings(name="norma", budget=1000, eta=0.1, lambda_=0, rho=1).describe()
            == "budget=1000;eta=0.1;lambda=0;rho=1;schedule=constant")
