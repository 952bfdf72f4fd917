"""The golden cases that need no download, guarded on every machine (no ``data_dir`` fixture).

Their data ship in the package (sonar, ionosphere) or are drawn by its generators (Khardon &
Wachman's artificial data, Gentile's sparse target), so these guards run in CI without
``PLAB_DATA``: the Khardon & Wachman perceptron variants (tau, lambda, the alpha-bound), their
parameter search and nested cross-validation, Freund & Schapire's d = 1 rules (the random time slice
included), Gentile's ALMA_p for p > 2 and the six budgeted algorithms (:mod:`perceptron_lab.report.golden`).
"""

from __future__ import annotations

import pandas as pd
import pytest

from perceptron_lab.config.load import load_config
from perceptron_lab.report import golden

_COMPUTED = {}


@pytest.fixture(autouse=True)
def _no_data_folder(tmp_path_factory, monkeypatch):
    """An empty data folder: these cases must need nothing from $PLAB_DATA or a download."""
    monkeypatch.setenv("PLAB_DATA", str(tmp_path_factory.mktemp("no_data")))


def _computed(case):
    if case not in _COMPUTED:
        _COMPUTED[case] = golden.compute(case)
    return _COMPUTED[case]


def test_the_packaged_cases_are_golden_cases_on_packaged_or_generated_data():
    assert set(golden.PACKAGED_CASES) <= set(golden.CASES)
    assert {"kw2007_sonar", "kw2007_ionosphere"} <= set(golden.PACKAGED_CASES)
    for case in golden.PACKAGED_CASES:
        cfg = load_config(golden.ROOT / golden.CASES[case])
        assert cfg.dataset.name in {"sonar", "ionosphere", "kw_artificial", "gentile_sparse"}, case


def test_the_packaged_cases_cover_the_variants_ci_must_guard():
    cfgs = {c: load_config(golden.ROOT / golden.CASES[c]) for c in golden.PACKAGED_CASES}

    def grid(c):
        return dict(cfgs[c].evaluation.grid or {})

    assert any("algorithm.alpha_bound" in grid(c) for c in cfgs)                        # the alpha-bound
    assert any(cfg.algorithm.name == "alma" and min(grid(c).get("algorithm.p", [cfg.algorithm.p])) > 2
               for c, cfg in cfgs.items())                                             # ALMA p > 2
    assert any(set(grid(c).get("algorithm.name", [])) == {"stoptron", "rbp", "forgetron", "projectron",
                                                          "projectron++", "norma"} for c in cfgs)
    fs = [cfg for cfg in cfgs.values() if cfg.kernel.type == "poly" and cfg.kernel.degree == 1]
    assert fs and {"random", "random_norm", "avg_norm", "last_norm", "vote"} <= set(fs[0].prediction.rules)
    modes = {(cfg.evaluation.mode, bool(cfg.evaluation.search)) for cfg in cfgs.values()}
    assert {("kfold", True), ("nested", True)} <= modes
    nested = [cfg for cfg in cfgs.values() if cfg.evaluation.mode == "nested"][0]
    assert any(isinstance(s[0], (list, tuple)) for s in nested.evaluation.search)      # a sequential search


@pytest.mark.parametrize("case", golden.PACKAGED_CASES)
def test_packaged_golden_values_hold(case):
    p = golden.golden_path(case)
    assert p.exists(), f"{p} is missing; create it with `make golden`"
    problems = golden.compare(golden.read_golden(p), _computed(case), case)
    assert not problems, (
        "numbers moved beyond tolerance:\n  " + "\n  ".join(problems)
        + "\nIf the change is intended, refresh the golden files with `make golden` and say why in the commit.")


@pytest.mark.parametrize("case", ["kw2007_alpha_bound_artificial", "kw2007_search_artificial",
                                  "kw2007_nested_artificial"])
def test_the_artificial_cases_are_exact_and_guarded_exactly(case):
    new = _computed(case)
    assert new.attrs["exact_by_construction"] is True
    tol = golden.tolerances(case, True, new.attrs["runs"], new.attrs["smallest_test"])
    assert all(v == (0.0, 0.0) for v in tol.values())


def test_a_search_guards_its_choices():
    """A search's cells name the point it chose: another choice is a cell gone and one new, caught
    whatever the tolerance; the error of the choice is guarded like any other cell."""
    g = golden.read_golden(golden.golden_path("kw2007_search_artificial"))
    cells = g[g["grid_point"].str.startswith("search ")]
    plans = {gp.split(":")[0] for gp in cells["grid_point"]}
    assert plans == {"search nothing", "search tau", "search lambda", "search alpha", "search tau x lambda",
                     "search tau x alpha"}
    assert len(cells) == len(plans) * 3                              # last, longest, vote
    moved = g.copy()
    i = moved.index[moved["grid_point"] == cells["grid_point"].iloc[3]][0]
    moved.loc[i, "grid_point"] = moved.loc[i, "grid_point"].replace("tau=1", "tau=0.25")
    problems = golden.compare(g, moved, "kw2007_search_artificial", {m: (1.0, 100.0) for m in golden.METRICS})
    assert len(problems) == 2 and any("no longer computed" in p for p in problems) \
        and any("is new" in p for p in problems)


def test_a_nested_case_guards_the_outer_runs_and_each_searchs_choices():
    new = _computed("kw2007_nested_artificial")
    assert new.attrs["runs"] == 3 and new.attrs["smallest_test"] == 100       # 3 outer folds of 300
    nested = new[new["grid_point"].str.startswith("nested ")]
    assert {gp.split(":")[0] for gp in nested["grid_point"]} == {
        "nested nothing", "nested tau", "nested lambda", "nested tau x lambda", "nested tau->lambda"}
    assert set(new["metric"]) <= set(golden.METRICS)          # the inner CV errors are not cells
    # the outer runs' cells: one per grid point (3 tau x 2 lambda), epoch, rule and metric
    plain = new[~new["grid_point"].str.startswith("nested ")]
    assert sorted(set(plain["grid_point"].astype(int))) == list(range(6))
    assert len(plain) == 6 * (3 + 2)
    # a choice's error is the mean over the outer folds of the chosen points' errors
    row = nested[(nested["grid_point"].str.startswith("nested nothing")) & (nested["rule"] == "last")].iloc[0]
    base = plain[(plain["grid_point"].astype(int) == 0) & (plain["rule"] == "last")].iloc[0]
    assert row["value"] == pytest.approx(base["value"], abs=1e-6)


def test_the_guard_catches_a_perturbed_engine_on_the_artificial_data(monkeypatch):
    """Exact cases: a learning rate 1.5 times larger moves the cells (zero tolerance)."""
    import perceptron_lab.engine.families as engine

    real = engine.resolve_params

    def perturbed(acfg, kdiag, value_factor=1.0):
        p = real(acfg, kdiag, value_factor)
        return type(p)(eta=p.eta * 1.5, theta_init=p.theta_init, C=p.C, tau_abs=p.tau_abs, lam=p.lam,
                       alpha_bound=p.alpha_bound, lam_diagonal=p.lam_diagonal)

    monkeypatch.setattr(engine, "resolve_params", perturbed)
    case = "kw2007_alpha_bound_artificial"
    problems = golden.compare(golden.read_golden(golden.golden_path(case)), golden.compute(case), case)
    assert problems and all("moved from" in p for p in problems)


def test_the_golden_files_of_the_packaged_cases_hold_only_guarded_metrics():
    for case in golden.PACKAGED_CASES:
        g = golden.read_golden(golden.golden_path(case))
        assert set(g["metric"]) <= set(golden.METRICS), case
        assert not g.duplicated(golden.KEY).any(), case
        assert pd.api.types.is_float_dtype(g["value"]), case
