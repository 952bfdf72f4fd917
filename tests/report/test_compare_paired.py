"""The paired tests of ``plab compare --paired`` and ``--rules`` hold their level.

Expected values are worked by hand from the formulas (Nadeau & Bengio 2003; the bound on one
test set) and from printed t and normal tables, not taken from the code under test. The
calibration tests simulate data sets where the two sides do not differ and count how often a
test calls a winner: the plain t-interval ``plab compare`` printed before (over every fold and
order as if they were independent) and the tests it prints now.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from perceptron_lab.cli.main import main
from perceptron_lab.report import paired_calibration as cal
from perceptron_lab.report.compare import protocol
from perceptron_lab.report.paired import corrected_t, declared_different, holdout_bound, plain_t, verdict

#: t_{9, 0.975} and the normal 0.975 quantile, from printed tables.
T9, Z = 2.262157162740992, 1.959963984540054
ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def rate(k: int, n: int) -> tuple[float, float, float]:
    """(rate %, 95% Clopper-Pearson interval %) of k successes in n, by scipy.stats's beta."""
    from scipy.stats import beta

    lo = 0.0 if k == 0 else beta.ppf(0.025, k, n - k + 1)
    hi = 1.0 if k == n else beta.ppf(0.975, k + 1, n - k)
    return 100.0 * k / n, 100.0 * lo, 100.0 * hi


# ----------------------------------------------------------------------------- by hand


def test_corrected_t_by_hand():
    d = [1.5, -1.5, 3.5, 1.0, 3.0, -0.5, 4.5, 2.0, 0.5, 2.5]   # ten folds
    mean, s2 = 1.65, sum((v - 1.65) ** 2 for v in d) / 9
    r = corrected_t(d, 1 / 9)
    se = math.sqrt((1 / 10 + 1 / 9) * s2)    # not sqrt(s2 / 10)
    assert r["n"] == 10 and r["diff"] == pytest.approx(mean) and r["se"] == pytest.approx(se)
    assert (r["lo"], r["hi"]) == (pytest.approx(mean - T9 * se), pytest.approx(mean + T9 * se))
    p = plain_t(d)
    assert p["se"] == pytest.approx(math.sqrt(s2 / 10)) and p["hi"] - p["lo"] < r["hi"] - r["lo"]
    # the plain interval excludes 0 here, the corrected one does not
    assert verdict(p, "A", "B") == "B lower" and verdict(r, "A", "B") == "no difference shown"


def test_holdout_bound_by_hand():
    # 20% and 10% on 100 test examples: var <= (0.3 - 0.1^2) / 100
    r = holdout_bound(20.0, 10.0, 100)
    se = 100 * math.sqrt(0.29 / 100)
    assert r["n"] == 100 and r["diff"] == pytest.approx(10.0) and r["se"] == pytest.approx(se)
    assert r["lo"] == pytest.approx(10 - Z * se) and r["lo"] < 0 < r["hi"]
    assert verdict(r, "A", "B") == "no difference shown"
    # errors above 50%: the disagreement is bounded by 2 - e_A - e_B
    r = holdout_bound(90.0, 80.0, 1000)
    assert r["se"] == pytest.approx(100 * math.sqrt((0.3 - 0.01) / 1000))
    assert verdict(holdout_bound(30.0, 10.0, 1000), "vote", "last") == "last lower"


def test_no_winner_is_called_when_the_interval_contains_0():
    for d in ([1.0, 2.0, -0.5, 1.5], [-3.0, 0.5, -1.0], [0.2, 0.1, -0.3, 0.4, 0.0]):
        r = corrected_t(d, 1 / (len(d) - 1))
        assert r["lo"] <= 0 <= r["hi"] and verdict(r, "A", "B") == "no difference shown"
        assert not declared_different(r)


def test_no_verdict_without_what_the_test_needs():
    assert verdict(corrected_t([2.0], 1.0), "A", "B") == "no verdict: 1 fold, fewer than 2"
    assert verdict(corrected_t([1.0, 2.0], None), "A", "B") == \
        "no verdict: the sizes of the test and training sets are unknown"
    r = corrected_t([1.0, 1.0, 1.0], 0.5)       # A lower by 1 point in every fold: no spread to estimate
    assert r["lo"] is None and verdict(r, "A", "B").startswith("no verdict: the difference is the same on every fold")
    assert verdict(corrected_t([0.0, 0.0, 0.0], 0.5), "A", "B") == "no difference shown"
    assert verdict(holdout_bound(30.0, 5.0, 20), "A", "B") == "no verdict: 20 test examples, fewer than 30"
    assert verdict(holdout_bound(30.0, 5.0, None), "A", "B").startswith("no verdict: the size of the test set")


def _col(mode, folds=10, n_train=200, n_test=None, **ev):
    return {"grid": {}, "info": {"dataset": {"n_train": n_train, "n_test": n_test},
                                 "config": {"evaluation": {"mode": mode, "folds": folds, **ev}}}}


def test_the_protocol_gives_the_correction_its_sizes():
    assert protocol(_col("kfold")) == {"kind": "kfold", "folds": 10, "ratio": pytest.approx(1 / 9)}
    # Khardon & Wachman's Table 5: 10 folds of 200, each trained on 50 of its 180 examples: 20 / 50
    assert protocol(_col("kfold", fold_train_size=50))["ratio"] == pytest.approx(0.4)
    assert protocol(_col("nested", folds=5))["ratio"] == pytest.approx(1 / 4)
    assert protocol(_col("nested", outer="holdout", n_test=500)) == {"kind": "holdout", "n_test": 500}
    assert protocol(_col("holdout", n_test=2007)) == {"kind": "holdout", "n_test": 2007}


# ----------------------------------------------------------------------------- calibration


def test_the_corrected_t_holds_its_level_where_its_assumption_holds():
    """Differences of 10 folds, normal with the correlation Nadeau & Bengio assume between two
    folds (n_test / n = 1/10): the corrected statistic is then exactly Student's t with 9 degrees
    of freedom, so it calls a winner in 5% of the simulations; the plain t in
    P(|t_9| > 2.262 / sqrt(1 + 10/9)) = 15.4%."""
    from scipy.stats import t as student

    sims, K, rho = 20000, 10, 0.1
    rng = np.random.default_rng(7)
    d = np.sqrt(rho) * rng.standard_normal((sims, 1)) + np.sqrt(1 - rho) * rng.standard_normal((sims, K))
    now = sum(declared_different(corrected_t(row, 1 / 9)) for row in d)
    before = sum(declared_different(plain_t(row)) for row in d)
    r_now, lo, hi = rate(now, sims)
    assert lo <= 5.0 <= hi, f"corrected t: {r_now:.2f}% [{lo:.2f}, {hi:.2f}] of {sims}"
    expected = 100 * 2 * student.sf(T9 / math.sqrt(1 + K * rho / (1 - rho)), K - 1)
    r_before, lo, hi = rate(before, sims)
    assert lo <= expected <= hi and expected > 15, (r_before, expected)


def test_runs_of_plab_with_two_seeds_are_compared_by_compare_itself():
    """The engine null on a few pairs: every comparison goes through paired_runs (a verdict per rule)."""
    sim = cal.engine_null(seeds=6)
    assert len(sim) == 6 and set(sim["rule"]) == {"vote", "last"} and sim["now"].dtype == bool


@pytest.mark.parametrize("name", ["10-fold, 5 orders, feature blocks", "10-fold, 1 order, feature blocks",
                                  "holdout, 5 orders, two views"])
def test_no_real_difference_is_declared_at_most_at_the_nominal_rate(name):
    """1000 data sets where A and B have the same expected error (paired_calibration): the tests
    printed now call a winner at most at about 5% (the 95% interval of the rate reaches 5% or lies
    below it); the plain t printed before, far more often."""
    _, protocol_, folds, orders, null = next(d for d in cal.DESIGNS if d[0] == name)
    sims = 1000
    sim = cal.simulate(protocol_, folds, orders, null, sims, cal.SEED)
    now, now_lo, now_hi = rate(int(sim["now"].sum()), sims)
    before, before_lo, _ = rate(int(sim["before"].sum()), sims)
    print(f"{name}: now {now:.1f}% [{now_lo:.1f}, {now_hi:.1f}], before {before:.1f}% of {sims}")
    assert now_lo <= 5.0, f"now {now:.1f}% [{now_lo:.1f}, {now_hi:.1f}]"
    assert before_lo > 2 * 5.0 if orders > 1 else before_lo > 5.0, f"before {before:.1f}%"


def test_the_committed_calibration_holds_what_the_docs_say():
    """results/compare/calibration.csv (python -m perceptron_lab.report.paired_calibration): every
    test printed now stays at or below the nominal rate within its interval; the old plain t
    exceeded it wherever folds or orders were taken for independent evidence."""
    t = pd.read_csv(ROOT / "results" / "compare" / "calibration.csv")
    simulated = t["design"].isin([d[0] for d in cal.DESIGNS])
    assert set(t.loc[simulated, "design"]) == {d[0] for d in cal.DESIGNS} and (t.loc[simulated, "simulations"] >= 4000).all()
    engine = t[~simulated]      # plab's own runs: a comparison per pair of seeds, per rule
    assert len(engine) == 4 and (engine["simulations"] == cal.ENGINE[3] // 2).all()
    now, before = t[t["test"] == "now"], t[t["test"] == "before"]
    assert (now["ci_low_pct"] <= now["nominal_pct"]).all(), now
    worst = before[(before["orders"] > 1) & (before["null"] != "orders")]
    assert (worst["ci_low_pct"] > 4 * worst["nominal_pct"]).all(), worst
    for row in t.itertuples():
        r, lo, hi = rate(row.declared_different, row.simulations)
        assert (row.rate_pct, row.ci_low_pct, row.ci_high_pct) == (pytest.approx(r, abs=1e-3),
                                                                    pytest.approx(lo, abs=1e-3),
                                                                    pytest.approx(hi, abs=1e-3))
    assert (ROOT / "results" / "compare" / "calibration.png").is_file()


def test_the_study_writes_its_table_and_figure(tmp_path, monkeypatch):
    monkeypatch.setattr(cal, "DESIGNS", cal.DESIGNS[-3:])
    csv, png = cal.main(tmp_path, sims=40, engine=False)
    t = pd.read_csv(csv)
    assert len(t) == 6 and list(t["test"]) == ["before", "now"] * 3
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------------------- one test set, end to end


def _rows(n: int, shift: int) -> str:
    return "a,b,y\n" + "".join(f"{(i * 7 + shift) % 11},{(i * 3 + shift) % 5 - 2},{(i * 5 + shift) % 3 == 0:d}\n"
                               for i in range(n))


def test_a_holdout_run_is_compared_on_its_test_examples(tmp_path):
    (tmp_path / "train.csv").write_text(_rows(60, 0))
    (tmp_path / "test.csv").write_text(_rows(45, 1))
    cfg = tmp_path / "h.yaml"
    cfg.write_text("name: h\ndataset: {path: train.csv, test_path: test.csv, label: y}\n"
                   "algorithm: {eta: 1}\ntraining: {epochs: 1, permutations: 3, seed: 0}\n"
                   "prediction: {rules: [vote, last]}\nevaluation: {mode: holdout}\noutput: {figures: false}\n")
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(tmp_path / "h"), "-q"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["compare", str(tmp_path / "h"), "--rules", "vote,last", "--csv"])
    assert r.exit_code == 0, r.output
    got = pd.read_csv(io.StringIO(r.output)).iloc[0]
    res = pd.read_csv(tmp_path / "h" / "results.csv", dtype={"class": str})
    err = res[(res["class"] == "all") & (res["metric"] == "test_error_pct")]
    ea, eb = (err[err["rule"] == k]["value"].mean() / 100 for k in ("vote", "last"))
    se = 100 * math.sqrt((min(ea + eb, 2 - ea - eb) - (ea - eb) ** 2) / 45)
    assert got["method"] == "holdout bound" and got["n"] == 45
    assert got["A - B"] == pytest.approx(100 * (ea - eb), abs=1e-3)
    assert got["ci_low"] == pytest.approx(100 * (ea - eb) - Z * se, abs=1e-3)
    text = " ".join(CliRunner().invoke(main, ["compare", str(tmp_path / "h"), "--rules", "vote,last"]).output.split())
    assert "McNemar" in text and "largest variance" in text
