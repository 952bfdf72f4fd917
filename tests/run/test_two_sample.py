"""The two-sample check against a paper's printed spread (perceptron_lab.run.comparison).

Expected values are worked by hand from a printed t table (t_{18, 0.975} = 2.101,
t_{13, 0.975} = 2.160, t_{14, 0.975} = 2.145), not taken from the code under test.
"""

import math

import pandas as pd
import pytest

from perceptron_lab.run.comparison import (
    normalize,
    read_comparison,
    scored,
    two_sample_checked,
    two_sample_ok,
    welch,
)


def test_welch_equal_errors_by_hand():
    # se 1 on each side, 10 runs each: se of the difference sqrt(2), nu = 4 / (2/9) = 18,
    # bound = 2.101 * 1.4142 = 2.971
    t, nu, bound = welch(2.0, 1.0, 10, 1.0, 10)
    assert t == pytest.approx(2.0 / math.sqrt(2.0))
    assert nu == pytest.approx(18.0)
    assert bound == pytest.approx(2.101 * math.sqrt(2.0), abs=2e-3)


def test_welch_unequal_errors_by_hand():
    # se 1 and 2 over 10 runs each: nu = 25 / (17 / 9) = 13.24, t quantile between 2.160 and 2.145
    _, nu, bound = welch(1.0, 1.0, 10, 2.0, 10)
    assert nu == pytest.approx(225.0 / 17.0)
    assert 2.145 * math.sqrt(5.0) < bound < 2.160 * math.sqrt(5.0)


def test_welch_zero_errors():
    assert welch(0.0, 0.0, 10, 0.0, 10)[0] == 0.0
    assert math.isinf(welch(0.5, 0.0, 10, 0.0, 10)[0])


def _cells(**extra):
    base = {"table": 5, "block": "b", "row": "Last", "column": "c", "metric": "accuracy_pct",
            "tolerance": 2.0, "in_scope": True, "n_runs": 10}
    rows = []
    for paper, ours, kw in extra["rows"]:
        r = dict(base, paper=paper, ours_mean=ours, **kw)
        r["within"] = abs(ours - paper) <= 2.0
        rows.append(r)
    return normalize(pd.DataFrame(rows))


def test_paper_sd_against_our_sample_sd():
    # paper_sd 3 (maximum-likelihood sd over 10 folds): se 3/3 = 1; ours_std sqrt(10) (sample sd): se 1;
    # bound 2.971 (Welch, nu = 18). A z-test would stop at 2.772, a t with 9 degrees of freedom at 3.199.
    kw = {"paper_sd": 3.0, "ours_std": math.sqrt(10.0)}
    c = _cells(rows=[(80.0, 82.9, kw), (80.0, 83.0, kw), (80.0, 77.05, kw), (80.0, 80.5, kw)])
    assert c["two_sample_consistent"].tolist() == [True, False, True, True]
    # the strict count is untouched: only the last cell is within the 2-point tolerance
    assert c["within"].tolist() == [False, False, False, True]
    assert int(two_sample_ok(c).sum()) == 3 and int(two_sample_checked(c).sum()) == 4


def test_paper_ci_against_our_ci():
    # paper_ci = t_{9,0.975} * 1 (se 1), ours_ci = t_{9,0.975} * 2 (se 2): bound about 2.157 * sqrt(5) = 4.82
    t9 = 2.2621572
    kw = {"paper_ci": t9, "ours_ci": 2 * t9, "ours_std": 99.0}
    c = _cells(rows=[(70.0, 74.7, kw), (70.0, 65.05, kw)])
    assert c["two_sample_consistent"].tolist() == [True, False]


def test_no_printed_spread_no_check():
    c = _cells(rows=[(70.0, 74.7, {"ours_std": 1.0})])
    assert c["two_sample_consistent"].isna().all()
    assert int(two_sample_checked(c).sum()) == 0 and bool(scored(c).all())


def test_one_run_no_check():
    c = _cells(rows=[(70.0, 70.5, {"paper_ci": 2.0, "ours_std": 1.0, "n_runs": 1})])
    assert c["two_sample_consistent"].isna().all()


def test_column_read_back_from_a_file(tmp_path):
    kw = {"paper_sd": 3.0, "ours_std": math.sqrt(10.0)}
    c = _cells(rows=[(80.0, 82.9, kw), (80.0, 83.0, kw)])
    p = tmp_path / "kw2007_table5_comparison.csv"
    c.drop(columns=["two_sample_consistent"]).to_csv(p, index=False)
    back = read_comparison(p)
    assert back.columns[-1] == "two_sample_consistent"
    assert back["two_sample_consistent"].tolist() == [True, False]
