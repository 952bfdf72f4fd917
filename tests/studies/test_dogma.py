"""DOGMA's budget demo as a reference for the budgeted engine (perceptron_lab.studies.dogma)."""

import math

import numpy as np
import pandas as pd
import pytest

from perceptron_lab.datasets.synthetic import dogma_demo
from perceptron_lab.errors import ConfigError
from perceptron_lab.studies import dogma


def test_generator_follows_demo_m():
    d = dogma_demo(n=2000, noise=0.1, seed=3)
    assert d.X_train.shape == (1000, 2) and d.X_test.shape == (1000, 2)
    w = d.meta["w"]
    X = np.vstack([d.X_train, d.X_test])
    y = np.where(np.concatenate([d.y_train, d.y_test]) == 1, 1, -1)
    clean = np.where(X @ w > 0, 1, -1)
    # exactly 10% of the labels are flipped (the first positions of a random permutation)
    assert int((y != clean).sum()) == 200
    assert np.array_equal(y != clean, d.meta["flipped"])
    # same seed, same draw; another seed, another one
    again = dogma_demo(n=2000, noise=0.1, seed=3)
    assert np.array_equal(again.X_train, d.X_train) and np.array_equal(again.y_test, d.y_test)
    assert not np.array_equal(dogma_demo(n=2000, seed=4).X_train, d.X_train)


def test_generator_rejects_odd_n():
    with pytest.raises(ConfigError, match="even"):
        dogma_demo(n=11)


def test_reference_transcription():
    ref = dogma.reference()
    cell = {(r.algorithm, r.metric): r.value for r in ref.itertuples()}
    assert len(ref) == 25
    # demo.out: "Number of support vectors last solution:106" and " 9.96% of errors" (Projectron)
    assert cell[("Projectron", "support_vectors")] == 106
    assert cell[("Projectron", "test_error_avg_pct")] == pytest.approx(9.96)
    assert ("RBP", "test_error_avg_pct") not in cell


def _dogma_projectron_svs(X, y, gamma, eta):
    """DOGMA's k_projectron_train.m, transcribed: insert when K(x,x) - k' K^-1 k > eta."""
    S, beta, Kinv = [], [], None
    for i in range(len(y)):
        if S:
            k = np.exp(-gamma * ((X[S] - X[i]) ** 2).sum(1))
            f = float(np.dot(beta, k))
        else:
            k, f = np.zeros(0), 0.0
        if y[i] * f <= 0:
            coeff = k @ Kinv if S else np.zeros(0)
            delta = max(1.0 - float(coeff @ k), 0.0) if S else 1.0
            if delta <= eta:
                beta = list(np.asarray(beta) + y[i] * coeff)
            else:
                beta.append(float(y[i]))
                if S:
                    m = len(S)
                    v = np.append(coeff, -1.0)
                    tmp = np.zeros((m + 1, m + 1))
                    tmp[:m, :m] = Kinv
                    Kinv = tmp + np.outer(v, v) / delta
                else:
                    Kinv = np.array([[1.0]])
                S.append(i)
    return len(S)


def test_projectron_eta_is_on_the_squared_distance_in_dogma():
    from perceptron_lab import BudgetPerceptron

    d = dogma_demo(n=1200, seed=5)
    X, y = d.X_train, np.where(d.y_train == 1, 1, -1)
    want = _dogma_projectron_svs(X, y, gamma=1.0, eta=0.01)
    # DOGMA has no bias: the Gaussian kernel itself
    ours = BudgetPerceptron(algorithm="projectron", budget=None, eta=math.sqrt(0.01), kernel="gaussian", sigma=dogma.SIGMA,
                            shuffle=False, fit_intercept=False).fit(X, y)
    literal = BudgetPerceptron(algorithm="projectron", budget=None, eta=0.01, kernel="gaussian", sigma=dogma.SIGMA,
                               shuffle=False, fit_intercept=False).fit(X, y)
    assert len(ours.support_) == want
    assert len(literal.support_) > want


def test_compare_scores_against_the_range():
    ref = pd.DataFrame({"algorithm": ["Perceptron", "Perceptron", "OISVM"],
                        "metric": ["support_vectors", "online_error_pct", "support_vectors"],
                        "value": [2156.0, 21.56, 144.0]})
    draws = pd.DataFrame({"seed": [1, 2, 3, 1, 2, 3], "algorithm": ["Perceptron"] * 6,
                          "metric": ["support_vectors"] * 3 + ["online_error_pct"] * 3,
                          "value": [2100.0, 2156.0, 2200.0, 20.0, 21.0, 21.5]})
    c = dogma.compare(draws, ref)
    row = c.set_index(["algorithm", "metric"])
    assert bool(row.loc[("Perceptron", "support_vectors"), "within_range"]) is True     # on the edge counts
    assert bool(row.loc[("Perceptron", "online_error_pct"), "within_range"]) is False  # 21.56 > 21.5
    assert pd.isna(row.loc[("OISVM", "support_vectors"), "within_range"])
    assert row.loc[("OISVM", "support_vectors"), "status"].startswith("not run")
    assert dogma.counts(c) == (1, 2, 1)


def test_one_draw_runs_every_engine_row():
    rows = pd.DataFrame(dogma.run_draw(1, n=2000))
    have = set(rows["algorithm"])
    assert {"Perceptron", "Projectron", "Projectron++", "RBP", "Forgetron"} <= have
    sv = rows[rows["metric"] == "support_vectors"].set_index("algorithm")["value"]
    # RBP and the Forgetron get the Projectron's support-vector count as their budget, as in the demo
    assert sv["RBP"] <= sv["Projectron"] and sv["Forgetron"] <= sv["Projectron"]
    # the kernel perceptron keeps one support vector per mistake
    on = rows[rows["metric"] == "online_error_pct"].set_index("algorithm")["value"]
    assert on["Perceptron"] == pytest.approx(100.0 * sv["Perceptron"] / 1000)


def test_report_items_from_written_draws(tmp_path, monkeypatch):
    rows = dogma.run_draw(2, n=2000)
    draws = pd.DataFrame(rows)
    out = tmp_path / dogma.STUDY_DIR
    out.mkdir(parents=True)
    draws.to_csv(out / "draws.csv", index=False)
    dogma.compare(draws).to_csv(out / "comparison.csv", index=False)
    items = dogma.report_items(tmp_path)
    kinds = [k for k, _ in items]
    assert kinds[0] == "h3" and "table" in kinds
    text = " ".join(str(x) for k, x in items if k == "p")
    ok, n, not_run = dogma.counts(dogma.compare(draws))
    assert f"{ok}/{n} of the demo's cells lie within our range" in text and n == 18 and not_run == 7
    tab = next(x for k, x in items if k == "table")
    assert (tab[tab["algorithm"] == "OISVM"].iloc[:, 3] == "not run").all()
    assert dogma.report_items(tmp_path / "nothing") == []
