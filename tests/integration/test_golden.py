"""CI regression guard: the golden subset must keep its error rates and counts."""

import pandas as pd
import pytest

import perceptron_lab.engine.families as engine
from perceptron_lab.report import golden


_COMPUTED = {}


def _computed(case, data_dir):
    """golden.compute(case, data_dir), run once per test process: the exact MNIST case serves both
    the guard of its values and the check of its zero tolerance. Callers copy before changing it."""
    if case not in _COMPUTED:
        _COMPUTED[case] = golden.compute(case, data_dir)
    return _COMPUTED[case]


def _golden(case):
    p = golden.golden_path(case)
    assert p.exists(), f"{p} is missing; create it with `make golden`"
    return golden.read_golden(p)


@pytest.mark.parametrize("case", list(golden.CASES))
def test_golden_values_hold(case, data_dir, monkeypatch):
    monkeypatch.setenv("PLAB_DATA", str(data_dir))
    problems = golden.compare(_golden(case), _computed(case, data_dir), case)
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


def test_exact_case_is_exact_by_construction_and_guarded_exactly(data_dir, monkeypatch):
    """The MNIST linear case is exact by construction (run.json says so), so its tolerance is zero:
    a move of one test prediction is caught, whatever the measured spread says."""
    monkeypatch.setenv("PLAB_DATA", str(data_dir))
    new = _computed("kw2007_mnist_exact", data_dir)
    assert new.attrs["exact_by_construction"] is True
    tol = golden.tolerances("kw2007_mnist_exact", True, new.attrs["runs"], new.attrs["smallest_test"])
    assert all(v == (0.0, 0.0) for v in tol.values())
    moved = new.copy()
    i = moved.index[moved["metric"] == "test_error_pct"][0]
    moved.loc[i, "value"] += 0.01   # one of the 10000 test predictions
    (msg,) = golden.compare(new, moved, "kw2007_mnist_exact", tol)
    assert "tolerance ±0" in msg


def test_only_alma_p_is_not_exact_and_it_has_a_measured_spread():
    """Every case is exact by construction (tolerance zero) but ALMA with p != 2, whose C library
    pow may round otherwise elsewhere; it has a spread measured across machine variants
    (results/spread/golden_<case>.csv), from which its tolerance comes."""
    from perceptron_lab.config.load import load_config
    from perceptron_lab.model.exactness import construction_blockers

    not_exact = {c for c, path in golden.CASES.items() if construction_blockers(load_config(golden.ROOT / path))}
    assert not_exact == {"gentile2001_alma_p_sparse"}
    for case in not_exact:
        spread = golden.measured_spread(case)
        assert spread is not None, case
        assert {"avx2", "host"} <= set(spread["variants"]), case


def _spread_csv(folder, case, rows):
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([{"config": golden.CASES[case], "variant": v, "file": f"results/golden/{case}.csv",
                   "rows_compared": 10, "rows_differing": int(e > 0), "max_abs_diff_test_error_pct": e,
                   "max_abs_diff_counts": 0.0, "max_rel_diff_counts": r} for v, e, r in rows]
                 ).to_csv(folder / f"golden_{case}.csv", index=False)


def test_tolerance_is_the_margin_times_the_measured_spread(tmp_path, monkeypatch):
    """Twice the largest move over the machine variants (the dtype variant is another computation
    and is left out), and never below one step of the cell."""
    monkeypatch.setattr(golden, "SPREAD_DIR", tmp_path)
    _spread_csv(tmp_path, "kw2007_sonar", [("avx2", 0.0, 0.0), ("host", 0.3, 0.02), ("avx2+dtype=float32", 5.0, 0.5)])
    tol = golden.tolerances("kw2007_sonar", False, runs=10, smallest_test=20)
    assert tol["test_error_pct"] == (pytest.approx(0.6), pytest.approx(100 / 200))
    assert tol["mistakes"] == (pytest.approx(0.04), pytest.approx(0.1))
    g = pd.DataFrame({"grid_point": ["0"] * 2, "epoch": ["1"] * 2, "rule": ["vote", "none"],
                      "normalized": ["false", ""], "metric": ["test_error_pct", "mistakes"], "value": [20.0, 100.0]})
    n = g.copy()
    n["value"] = [20.0 + 0.599, 100.0 + 3.99]
    assert golden.compare(g, n, "kw2007_sonar", tol) == []
    n["value"] = [20.0 + 0.62, 100.0 + 4.1]
    assert len(golden.compare(g, n, "kw2007_sonar", tol)) == 2
    _spread_csv(tmp_path, "kw2007_sonar", [("avx2", 0.0, 0.0), ("host", 0.0, 0.0)])
    tol = golden.tolerances("kw2007_sonar", False, runs=10, smallest_test=20)
    assert tol["test_error_pct"][0] == 0 and tol["test_error_pct"][1] == pytest.approx(100 / 200)


def test_a_case_without_exactness_or_measured_spread_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(golden, "SPREAD_DIR", tmp_path)
    with pytest.raises(golden.SpreadNotMeasured, match="python -m perceptron_lab.cli.spread configs/golden/kw2007_sonar.yaml"):
        golden.tolerances("kw2007_sonar", False, runs=10, smallest_test=20)
    _spread_csv(tmp_path, "kw2007_sonar", [("avx2+dtype=float32", 1.0, 0.1)])   # dtype alone: not a machine
    with pytest.raises(golden.SpreadNotMeasured):
        golden.tolerances("kw2007_sonar", False, runs=10, smallest_test=20)


def test_every_case_has_a_config_and_a_golden_file():
    assert set(golden.CASES) >= {"fs1999_d4_10k", "kw2007_sonar", "kw2007_ionosphere", "gentile2001_usps_alma",
                                 "kw2007_mnist_exact"}
    assert {p.stem for p in golden.GOLDEN_DIR.glob("*.csv")} == set(golden.CASES)
    for case, cfg in golden.CASES.items():
        assert (golden.ROOT / cfg).exists(), cfg
        assert set(_golden(case)["metric"]) <= set(golden.METRICS), case


def test_compare_names_cell_old_and_new_value():
    g = pd.DataFrame({"grid_point": [0], "epoch": ["1"], "rule": ["vote"], "normalized": ["false"],
                      "metric": ["test_error_pct"], "value": [2.2]})
    n = g.copy()
    n.loc[0, "value"] = 2.6
    tol = {m: (0.15, 0.0) for m in golden.METRICS}
    (msg,) = golden.compare(g, n, "case", tol)
    assert "rule=vote" in msg and "epoch=1" in msg and "2.2" in msg and "2.6" in msg
    n.loc[0, "value"] = 2.3
    assert golden.compare(g, n, "case", tol) == []
