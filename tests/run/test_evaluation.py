"""Ties in a parameter search and in nested cross-validation go to the first point listed.

``search_summary`` (Khardon & Wachman's Tables 3-4) takes the best mean accuracy over a search's
points and ``select_nested`` (Tables 6-7) the lowest mean inner error, "the first one listed on
ties": a grid listed [0, 0.5, 1] whose 0.5 and 1 tie reports 0.5. Means that differ by float noise
only (below ``TIE_TOL_PP``, 1e-6 points) are ties; a real difference (1e-4 points, a thousandth of
one test prediction in ten thousand) is not. The results frames are made up, in the results format.
"""

from __future__ import annotations

import pandas as pd
import pytest

from perceptron_lab.config.load import config_from_dict
from perceptron_lab.run import evaluation as ev
from perceptron_lab.run.plan import NESTED_COLUMNS, RESULT_COLUMNS


def _cfg(mode, search, taus=(0, 0.5, 1, 2)):
    ev_cfg = {"mode": mode, "folds": 2, "grid": {"algorithm.tau": list(taus)}, "search": search}
    if mode == "nested":
        ev_cfg["inner_folds"] = 2
    return config_from_dict({"dataset": {"name": "sonar"}, "training": {"epochs": 2},
                             "prediction": {"rules": ["last", "vote"]}, "evaluation": ev_cfg})


def _results(cfg, err, nested=False):
    """One test-error row per grid point, outer fold, inner fold (nested: -1 and 0, 1) and rule,
    valued ``err(tau, fold, inner fold)``."""
    grid = ev.Grid.from_config(cfg)
    rows = []
    for g, p in enumerate(grid.points):
        for k in (0, 1):
            for j in ((-1, 0, 1) if nested else (-1,)):
                for r in ("last", "vote"):
                    row = ["sonar", "linear", "1", "perceptron", f"p{g}", str(g), str(k), "0", "2", r, "false", "all",
                           "test_error_pct", repr(float(err(p["algorithm.tau"], k, j)))]
                    rows.append(row + ([str(j), ""] if nested else []))
    return grid, pd.DataFrame(rows, columns=NESTED_COLUMNS if nested else RESULT_COLUMNS)


def _chosen(summary, search="tau", rule="vote"):
    row = summary[(summary["search"] == search) & (summary["rule"] == rule)].iloc[0]
    return row["chosen"], row["accuracy_pct"]


@pytest.mark.parametrize("errors, want", [
    ({0: 30.0, 0.5: 20.0, 1: 20.0, 2: 25.0}, "tau=0.5"),                 # an exact tie: the first listed
    ({0: 30.0, 0.5: 20.0, 1: 20.0 - 4e-7, 2: 25.0}, "tau=0.5"),          # float noise is a tie
    ({0: 30.0, 0.5: 20.0, 1: 20.0 - 1e-4, 2: 25.0}, "tau=1"),            # a real difference is not
    ({0: 30.0, 0.5: 25.0, 1: 20.0, 2: 20.0}, "tau=1"),
])
def test_a_search_reports_the_first_of_tied_points(errors, want):
    cfg = _cfg("kfold", [["algorithm.tau"]])
    grid, df = _results(cfg, lambda t, k, j: errors[t])
    chosen, acc = _chosen(ev.search_summary(df, grid, cfg))
    assert chosen == want and acc == pytest.approx(100 - errors[float(want.split("=")[1])])


@pytest.mark.parametrize("inner, want", [
    ({0: 30.0, 0.5: 20.0, 1: 20.0, 2: 25.0}, 0.5),
    ({0: 30.0, 0.5: 20.0, 1: 20.0 - 4e-7, 2: 25.0}, 0.5),
    ({0: 30.0, 0.5: 20.0, 1: 20.0 - 1e-4, 2: 25.0}, 1.0),
])
def test_nested_selection_takes_the_first_of_tied_points(inner, want):
    cfg = _cfg("nested", [["algorithm.tau"]])
    # the outer folds would prefer tau = 2: they never enter the choice
    grid, df = _results(cfg, lambda t, k, j: (1.0 if t == 2 else 40.0) if j < 0 else inner[t], nested=True)
    sels = [s for s in ev.select_nested(df, grid, cfg) if s.plan == "tau"]
    assert len(sels) == 4                                     # 2 outer folds x 2 rules
    assert {grid.points[s.grid_point]["algorithm.tau"] for s in sels} == {want}
