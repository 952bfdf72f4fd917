"""The budgeted engine (perceptron_lab.engine.budget) against the literal transcriptions in
tests/naive.py, exactly, and the properties the papers prove."""

import math

import numpy as np
import pytest

from perceptron_lab.engine.base import EngineError
from perceptron_lab.engine.budget import (EV_INSERT, EV_MISTAKE, EV_REMOVE, BudgetParams, _vote_scores,
                                          budget_predict, budget_scores, train_budget)
from perceptron_lab.engine.perceptron import PerceptronParams, label_matrix, train
from perceptron_lab.engine.kernels import Kernel, gram

from naive import NaiveBudget, kernel_value

KERNELS = [Kernel("linear"), Kernel("poly", degree=3, scale=4.0), Kernel("gaussian", sigma=1.5)]

SETTINGS = [
    dict(algorithm="stoptron", budget=5),
    dict(algorithm="rbp", budget=4, seed=3),
    dict(algorithm="forgetron", budget=4),
    dict(algorithm="forgetron", budget=7),
    dict(algorithm="projectron", budget=6, eta=0.5),
    dict(algorithm="projectron", budget=40, eta=0.3),
    dict(algorithm="projectron++", budget=8, eta=0.5),
    dict(algorithm="norma", budget=6, eta=0.2, lam=0.1, rho=1.0, schedule="constant"),
    dict(algorithm="norma", budget=30, eta=0.5, lam=0.3, rho=0.5, schedule="sqrt"),
]


def small_problem(seed, n=30, f=4, n_classes=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + 12, f))
    W = rng.normal(size=(f, n_classes))
    y = np.argmax(X @ W + 0.8 * rng.normal(size=(n + 12, n_classes)), axis=1)
    return X[:n], y[:n], X[n:], y[n:]


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: f"{s['algorithm']}-B{s['budget']}")
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_engine_matches_naive(setting, kernel, n_classes):
    seed = 11 * n_classes + len(setting)
    X, y, Xt, yt = small_problem(seed, n_classes=n_classes)
    if kernel.name == "poly":
        X, Xt = X / 2, Xt / 2
    Y = label_matrix(y, n_classes)
    order = np.random.default_rng(seed).permutation(len(y))
    epochs, cps = 2.5, (0.4, 1, 2.5)
    log = train_budget(X, Y, kernel, BudgetParams(**setting), order, epochs, cps, chunk_size=7)
    kp = (kernel.name, kernel.degree, kernel.scale, kernel.sigma)
    for k, cp_step in enumerate(log.checkpoint_steps):
        ref = NaiveBudget(X, Y, kp, **setting)
        ev = ref.fit(order, int(cp_step))
        fast = [(int(s), int(c), int(kd), int(e)) for s, c, kd, e in
                zip(log.ev_step, log.ev_cls, log.ev_kind, log.ev_ex) if s < cp_step]
        assert fast == [tuple(int(v) for v in e) for e in ev], f"events differ at checkpoint step {cp_step}"
        for c in range(Y.shape[1]):
            exs, coefs = log.last[k][c]
            assert exs.tolist() == [j for j, _ in ref.sv[c]]
            np.testing.assert_allclose(coefs, [a for _, a in ref.sv[c]], rtol=1e-9, atol=1e-12)
            aex, acoef = log.avg[k][c]
            ref_avg = {j: v for j, v in ref.avg[c].items() if v != 0}
            assert aex.tolist() == sorted(ref_avg)
            np.testing.assert_allclose(acoef, [ref_avg[j] for j in sorted(ref_avg)], rtol=1e-9, atol=1e-12)
        assert log.mistakes_cp[k].tolist() == [sum(1 for e in ev if e[2] == EV_MISTAKE and e[1] == c)
                                              for c in range(Y.shape[1])]
    # prediction: the last hypothesis' scores computed literally
    s = budget_scores(log, kernel, X, Xt, "last")
    ref_s = [[sum(a * kernel_value(*kp, X[j], x) for j, a in zip(*log.last[-1][c])) for c in range(Y.shape[1])]
             for x in Xt]
    np.testing.assert_allclose(s, ref_s, rtol=1e-9, atol=1e-9)
    pred = budget_predict(log, kernel, X, Xt, "avg")
    assert pred.shape == yt.shape


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: f"{s['algorithm']}-B{s['budget']}")
def test_support_never_exceeds_budget(setting):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 6))
    y = rng.integers(0, 4, size=300)  # random labels: many mistakes, the budget fills
    Y = label_matrix(y, 4)
    log = train_budget(X, Y, Kernel("gaussian", sigma=1.0), BudgetParams(**setting), rng.permutation(300), 2,
                       (0.5, 1, 2), chunk_size=64)
    B = setting["budget"]
    assert log.max_support <= B
    # replay the events: the support set size after every event stays <= B
    for c in range(4):
        size = 0
        for kind, cls in zip(log.ev_kind, log.ev_cls):
            if cls == c:
                size += int(kind == EV_INSERT) - int(kind == EV_REMOVE)
                assert 0 <= size <= B
        assert size == len(log.last[-1][c][0])
    if setting["algorithm"] in ("stoptron", "rbp", "forgetron", "norma"):
        assert log.max_support == B  # the budget was reached, so the bound was tested


def test_projectron_support_bounded_on_separable_data():
    """Orabona et al. (2009), Theorem 3: on a finite-dimensional feature space the support set
    of the Projectron is bounded whatever the length of the sequence; here a linear kernel in 5
    dimensions: at most 5 linearly independent support vectors, then only projections."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5))
    w = rng.normal(size=5)
    keep = np.abs(X @ w) > 0.3 * np.linalg.norm(w)
    X = X[keep]
    y = (X @ w > 0).astype(int)
    Y = label_matrix(y, 2)
    log = train_budget(X, Y, Kernel("linear"), BudgetParams("projectron", budget=len(y), eta=0.05),
                       np.arange(len(y)), 3, chunk_size=128)
    assert log.max_support <= 5
    assert log.mistakes_cp[-1, 0] > log.max_support  # mistakes went on after the set stopped growing
    # Gaussian kernel, separable: the support set grows far less than the mistakes
    Xg = rng.normal(size=(1500, 2))
    yg = (Xg[:, 0] * Xg[:, 1] > 0).astype(int)
    lg = train_budget(Xg, label_matrix(yg, 2), Kernel("gaussian", sigma=1.0),
                      BudgetParams("projectron", budget=1500, eta=0.5), np.arange(1500), 3)
    plain = train(Xg, label_matrix(yg, 2), Kernel("gaussian", sigma=1.0), PerceptronParams(), np.arange(1500), 3, [3])
    assert lg.max_support < len(np.unique(plain.upd_ex)) / 2


def test_forgetron_mistake_bound():
    """Dekel, Shalev-Shwartz & Singer (2008), Theorem (self-tuned Forgetron): with K(x, x) <= 1,
    B >= 83 and any g with |g| <= U = sqrt((B + 1) / log(B + 1)) / 4, the mistakes satisfy
    M <= 2 |g|^2 + 4 sum_t max(0, 1 - y_t g(x_t)). The sequence: unit vectors labelled by a
    direction u, 20% of the labels flipped, so that the budget fills and removals happen."""
    B = 100
    U = math.sqrt((B + 1) / math.log(B + 1)) / 4
    rng = np.random.default_rng(1)
    n = 4000
    X = rng.normal(size=(n, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)  # linear kernel: K(x, x) = 1
    u = np.array([1.0, 0.0, 0.0])
    y = np.where(X @ u > 0, 1, -1)
    flip = rng.random(n) < 0.2
    y[flip] = -y[flip]
    Y = y[:, None].astype(np.int8)
    log = train_budget(X, Y, Kernel("linear"), BudgetParams("forgetron", budget=B), np.arange(n), 1)
    mistakes = int(log.mistakes_cp[-1, 0])
    assert log.max_support == B and (log.ev_kind == EV_REMOVE).sum() > 0
    Q, M = log.info["Q"][0], mistakes
    assert Q <= 15 / 32 * M + 1e-9  # the invariant the self-tuning keeps
    for scale in (0.25, 0.5, 1.0):
        g = scale * U * u
        hinge = np.maximum(0.0, 1 - y * (X @ g)).sum()
        assert mistakes <= 2 * (scale * U) ** 2 + 4 * hinge


def test_bad_settings():
    X, Y = np.zeros((5, 2)), -np.ones((5, 1), dtype=np.int8)
    with pytest.raises(EngineError, match="budget"):
        train_budget(X, Y, Kernel("linear"), BudgetParams("rbp", budget=0), np.arange(5), 1)
    with pytest.raises(EngineError, match="unknown"):
        train_budget(X, Y, Kernel("linear"), BudgetParams("forgetronn", budget=3), np.arange(5), 1)
    with pytest.raises(EngineError, match="eta"):
        train_budget(X, Y, Kernel("linear"), BudgetParams("norma", budget=3, eta=1.0, lam=1.0), np.arange(5), 1)


def test_deterministic():
    X, y, _, _ = small_problem(3)
    Y = label_matrix(y, 3)
    a = train_budget(X, Y, Kernel("gaussian", sigma=1.0), BudgetParams("rbp", budget=3, seed=9), np.arange(30), 2)
    b = train_budget(X, Y, Kernel("gaussian", sigma=1.0), BudgetParams("rbp", budget=3, seed=9), np.arange(30), 2,
                     chunk_size=5)
    assert a.ev_ex.tolist() == b.ev_ex.tolist() and a.ev_kind.tolist() == b.ev_kind.tolist()


# ----------------------------------------------------------------------------- from configs


def _budget_cfg(tmp_path, algorithm, rules=None, grid=None):
    import yaml

    cfg = {"dataset": {"name": "sonar"}, "kernel": {"type": "gaussian", "sigma": 1.0},
           "algorithm": algorithm, "training": {"epochs": 2, "checkpoints": [1, 2]},
           "evaluation": {"mode": "kfold", "folds": 3, **({"grid": grid} if grid else {})}}
    if rules is not None:
        cfg["prediction"] = {"rules": rules}
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_sonar_config_runs_and_matches_engine(tmp_path):
    """`plab run` of a budgeted config: its numbers are the engine's on the same fold and order."""
    import pandas as pd
    from click.testing import CliRunner

    from perceptron_lab.cli.main import main
    from perceptron_lab.config.load import load_config
    from perceptron_lab.run.plan import make_plan as plan_work
    from perceptron_lab.run.inputs import read_inputs
    from perceptron_lab.run.spec import unit_spec
    from perceptron_lab.run.units import unit_data, unit_order

    path = _budget_cfg(tmp_path, {"name": "forgetron", "budget": 15})
    res = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    df = pd.read_csv(tmp_path / "out" / "results.csv")
    assert set(df["rule"].dropna()) - {"none"} == {"last", "avg"}
    cfg = load_config(path)
    ds = read_inputs(cfg, None, verify=False)[0]
    unit = plan_work(cfg, ds).units[0]
    Xtr, ytr, Xte, yte = unit_data(unit_spec(cfg), ds, unit, None)
    order, _ = unit_order(unit_spec(cfg), unit, len(ytr))
    log = train_budget(Xtr, label_matrix(ytr, 2), Kernel("gaussian", sigma=1.0), BudgetParams("forgetron", 15),
                       order, 2, [1, 2])
    err = 100.0 * np.sum(budget_predict(log, Kernel("gaussian", sigma=1.0), Xtr, Xte, "last") != yte) / len(yte)
    row = df[(df["fold"] == unit.fold) & (df["rule"] == "last") & (df["epoch"] == 2) & (df["metric"] == "test_error_pct")]
    assert float(row["value"].iloc[0]) == pytest.approx(err)
    sv = df[(df["fold"] == unit.fold) & (df["metric"] == "support_vectors") & (df["epoch"] == 2)]
    assert int(sv["value"].iloc[0]) <= 15


@pytest.mark.parametrize("algorithm, rules, grid, message", [
    ({"name": "rbp", "budget": 5}, ["last", "longest"], None, "predicts with the rules last, avg, vote only"),
    ({"name": "perceptron"}, ["longest"], {"algorithm.name": ["perceptron", "rbp"]}, "'rbp': a budgeted algorithm"),
    ({"name": "perceptron", "budget": 5}, None, None, "only the budgeted algorithms"),
    ({"name": "forgetron", "rho": 1}, None, None, "is a NORMA parameter"),
    ({"name": "norma", "budget": 0}, None, None, "algorithm.budget"),
    ({"name": "alma", "eta": 0.5}, None, None, "algorithm.eta is a parameter of the perceptron, the Projectron, the Projectron++ and NORMA; "
     "ALMA does not use it\n"),
])
def test_config_errors(tmp_path, algorithm, rules, grid, message):
    from click.testing import CliRunner

    from perceptron_lab.cli.main import main

    path = _budget_cfg(tmp_path, algorithm, rules, grid)
    res = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1  # one line, even for a key listed for several algorithms


def test_unit_diag_kernel_scales_poly_to_unit_diagonal():
    """Budgeted runs use K / c^d with c = max (1 + |x|^2 / s): the largest K(x, x) is 1, every
    value is the literal kernel's divided by the same constant, and the Stoptron and RBP (whose
    updates do not depend on the kernel's scale) make the same events either way."""
    from perceptron_lab.engine.budget import unit_diag_kernel

    rng = np.random.default_rng(4)
    X = rng.integers(0, 256, size=(25, 12)).astype(float)
    base = Kernel("poly", degree=4, scale=100.0)
    k = unit_diag_kernel(base, X)
    c = max(1.0 + float(x @ x) / 100.0 for x in X)
    lit = np.array([[kernel_value("poly", 4, 100.0, 1.0, a, b) for b in X[:6]] for a in X[:9]])
    np.testing.assert_allclose(gram(k, X[:9], X[:6]), lit / c**4, rtol=1e-12)
    assert max(kernel_value("poly", 4, 100.0, 1.0, x, x) for x in X) / c**4 == pytest.approx(1.0, rel=1e-12)
    for other in (Kernel("gaussian", sigma=3.0), Kernel("linear")):
        assert unit_diag_kernel(other, X) == other
    y = (X[:, 0] > 128).astype(int)
    for setting in (dict(algorithm="stoptron", budget=4), dict(algorithm="rbp", budget=3, seed=2)):
        a = train_budget(X, label_matrix(y, 2), base, BudgetParams(**setting), np.arange(25), 2)
        b = train_budget(X, label_matrix(y, 2), k, BudgetParams(**setting), np.arange(25), 2)
        assert a.ev_kind.tolist() == b.ev_kind.tolist() and a.ev_ex.tolist() == b.ev_ex.tolist()


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: f"{s['algorithm']}-B{s['budget']}")
@pytest.mark.parametrize("kernel", KERNELS[1:], ids=lambda k: k.name)
def test_vote_matches_naive(setting, kernel):
    """The voted rule (sum over steps of sign(h_t(x))) replayed from the recorded changes equals the
    naive transcription's, which scores every step's hypothesis from scratch; a small change buffer
    makes the engine stop and resume inside its chunks."""
    X, y, Xt, yt = small_problem(5, n_classes=3)
    if kernel.name == "poly":
        X, Xt = X / 2, Xt / 2
    Y = label_matrix(y, 3)
    order = np.random.default_rng(5).permutation(len(y))
    log = train_budget(X, Y, kernel, BudgetParams(**setting), order, 2.5, (1, 2.5), chunk_size=7,
                       record_changes=True, change_buffer=8)
    plain = train_budget(X, Y, kernel, BudgetParams(**setting), order, 2.5, (1, 2.5), chunk_size=7)
    assert log.ev_kind.tolist() == plain.ev_kind.tolist() and log.ev_ex.tolist() == plain.ev_ex.tolist()
    kp = (kernel.name, kernel.degree, kernel.scale, kernel.sigma)
    for k, cp_step in enumerate(log.checkpoint_steps):
        ref = NaiveBudget(X, Y, kp, **setting)
        ref.fit(order, int(cp_step), X_vote=Xt)
        np.testing.assert_array_equal(budget_scores(log, kernel, X, Xt, "vote", k), ref.vote)
        for method in ("replay", "gemm"):  # both ways of scoring the hypotheses, whichever auto picks
            np.testing.assert_array_equal(_vote_scores(log, kernel, X, Xt, k, block=5, method=method), ref.vote)
    with pytest.raises(EngineError, match="record_changes"):
        budget_scores(plain, kernel, X, Xt, "vote")
