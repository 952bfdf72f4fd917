"""CI regression guard: the golden subset must keep its error rates and counts."""

import numpy as np
import pandas as pd
import pytest

import perceptron_lab.engine as engine
from perceptron_lab import golden


def _golden(case):
    p = golden.golden_path(case)
    assert p.exists(), f"{p} is missing; create it with `make golden`"
    return golden.read_golden(p)


@pytest.mark.parametrize("case", list(golden.CASES))
def test_golden_values_hold(case, data_dir, monkeypatch):
    monkeypatch.setenv("PLAB_DATA", str(data_dir))
    problems = golden.compare(_golden(case), golden.compute(case, data_dir), case)
    assert not problems, (
        "numbers moved beyond tolerance:\n  " + "\n  ".join(problems)
        + "\nIf the change is intended, refresh the golden files with `make golden` and say why in the commit.")


def test_guard_catches_a_perturbed_engine(monkeypatch):
    """A small change to the engine (a learning-rate slip that only matters with a threshold)
    must trip the guard on the sonar case, which needs no external data."""
    real = engine.resolve_params

    def perturbed(acfg, kdiag, value_factor=1.0):
        p = real(acfg, kdiag, value_factor)
        return type(p)(eta=p.eta * 1.5, theta_init=p.theta_init, C=p.C, tau_abs=p.tau_abs,
                       lam=p.lam, alpha_bound=p.alpha_bound)

    monkeypatch.setattr(engine, "resolve_params", perturbed)
    problems = golden.compare(_golden("kw2007_sonar"), golden.compute("kw2007_sonar"), "kw2007_sonar")
    assert problems
    assert all("moved from" in p and "kw2007_sonar: cell [" in p for p in problems)


def test_every_case_has_a_config_and_a_golden_file():
    assert set(golden.CASES) >= {"fs1999_d4_10k", "kw2007_sonar", "kw2007_ionosphere", "gentile2001_usps_alma"}
    assert {p.stem for p in golden.GOLDEN_DIR.glob("*.csv")} == set(golden.CASES)
    for case, cfg in golden.CASES.items():
        assert (golden.ROOT / cfg).exists(), cfg
        assert set(_golden(case)["metric"]) <= set(golden.TOLERANCE), case


def test_compare_names_cell_old_and_new_value():
    g = pd.DataFrame({"grid_point": [0], "epoch": ["1"], "rule": ["vote"], "normalized": ["false"],
                      "metric": ["test_error_pct"], "value": [2.2]})
    n = g.copy()
    n.loc[0, "value"] = 2.6
    (msg,) = golden.compare(g, n, "case")
    assert "rule=vote" in msg and "epoch=1" in msg and "2.2" in msg and "2.6" in msg
    n.loc[0, "value"] = 2.3
    assert golden.compare(g, n, "case") == []
    assert np.isclose(golden.TOLERANCE["test_error_pct"], 0.15)
