"""Runs trained in lockstep (perceptron_lab.engine.perceptron.train_lockstep and the one-part-per-fold
plan of perceptron_lab.run.run_plan.fold_lockstep): each run's log equals its run alone, and the slow
reference's updates; each support vector's kernel values are computed once for all the runs."""

import numpy as np
import pandas as pd
import pytest

import perceptron_lab.engine.perceptron as engine
from perceptron_lab.run import inputs as run_inputs
from perceptron_lab.run import plan as run_plan
from perceptron_lab.config.load import config_from_dict
from perceptron_lab.engine.perceptron import PerceptronParams, label_matrix, train, train_lockstep
from perceptron_lab.run.experiment import run_experiment
from perceptron_lab.engine.kernels import Kernel

from naive import NaivePerceptron

LOG_FIELDS = ("upd_step", "upd_ex", "upd_cls", "upd_coef", "upd_score", "upd_kxx", "upd_theta", "upd_cum_correct",
              "cum_correct_cp", "checkpoint_steps")

SETTINGS = [dict(), dict(tau_abs=60.0), dict(eta=0.5, theta_init=200.0, C=100.0, tau_abs=300.0),
            dict(lam=0.5, tau_abs=20.0), dict(alpha_bound=1, tau_abs=600.0)]


def _problem(seed, n, d=16, labels=3, heavy=True):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 7, size=(n, d)).astype(np.float64)
    if heavy:
        X[:4] = rng.integers(2000, 4000, size=(4, d))  # |x||y| > 2^24: float64 fix-ups in the exact GEMMs
    y = (X[:, :4].sum(axis=1) + rng.integers(0, 5, n)).astype(np.int64) % labels
    return X, label_matrix(y, labels), rng.permutation(n)


def _spy_columns(monkeypatch):
    made = []
    real = engine.SharedSuffixColumns.__init__

    def init(self, *a, **kw):
        real(self, *a, **kw)
        made.append(self)

    monkeypatch.setattr(engine.SharedSuffixColumns, "__init__", init)
    return made


@pytest.mark.parametrize("labels,kernel", [(2, Kernel("poly", 2, 8.0)), (4, Kernel("poly", 3, 10.0)),
                                           (3, Kernel("poly", 4, 1.0))])
def test_each_run_in_lockstep_has_the_log_of_its_run_alone(monkeypatch, labels, kernel):
    X, Y, order = _problem(3 + labels, 600, labels=labels, heavy=kernel.degree < 4)
    params = [PerceptronParams(**s) for s in SETTINGS]
    cps = [0.25, 0.5, 1.0]
    alone = [train(X, Y, kernel, p, order, 1, cps, chunk_size=24, dtype=np.float64, form="dual", flush_at=12)
             for p in params]
    made = _spy_columns(monkeypatch)
    together = train_lockstep(X, Y, kernel, params, order, 1, cps, chunk_size=24, flush_at=12)
    assert len(made) == 1
    for a, b in zip(alone, together):
        assert a.n_updates > 50
        for name in LOG_FIELDS:
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
    # a support vector's column is computed once for all the runs: at most the distinct support
    # examples of them all, far fewer than the runs' own columns summed
    union = np.unique(np.concatenate([log.upd_ex for log in alone]))
    own = sum(np.unique(log.upd_ex).size for log in alone)
    assert 0 < made[0].computed <= union.size < own


def test_lockstep_updates_are_the_slow_references():
    X, Y, order = _problem(21, 90, d=5, heavy=False)
    kernel = Kernel("poly", 3, 4.0)
    params = [PerceptronParams(**s) for s in SETTINGS]
    logs = train_lockstep(X, Y, kernel, params, order, 1, [0.5, 1], chunk_size=7, flush_at=4)
    for s, log in zip(SETTINGS, logs):
        ref = NaivePerceptron(X, Y, ("poly", 3, 4.0, 1.0), alpha_bound=s.get("alpha_bound"),
                              **{k: v for k, v in s.items() if k != "alpha_bound"}).fit(order, len(order))
        assert [(int(t), int(e), int(c)) for t, e, c in zip(log.upd_step, log.upd_ex, log.upd_cls)] == ref.updates


@pytest.mark.parametrize("case", ["floats", "two_epochs", "linear"])
def test_runs_that_cannot_share_columns_train_one_after_another(monkeypatch, case):
    X, Y, order = _problem(9, 300, heavy=False)
    kernel, epochs = Kernel("poly", 2, 8.0), 1
    if case == "floats":
        X = X / 3.0
    elif case == "two_epochs":
        epochs = 2
    else:
        kernel = Kernel("linear")
    params = [PerceptronParams(**s) for s in SETTINGS[:3]]
    made = _spy_columns(monkeypatch)
    together = train_lockstep(X, Y, kernel, params, order, epochs, [1, epochs], chunk_size=16)
    assert not made
    for p, b in zip(params, together):
        a = train(X, Y, kernel, p, order, epochs, [1, epochs], chunk_size=16)
        for name in LOG_FIELDS:
            assert np.array_equal(getattr(a, name), getattr(b, name)), name


def _write_data(tmp_path, n=300):
    rng = np.random.default_rng(4)
    X = rng.integers(0, 9, size=(n, 10))
    y = (X[:, :3].sum(axis=1) + rng.integers(0, 5, n)) % 3
    pd.DataFrame(X, columns=[f"f{j}" for j in range(10)]).assign(target=y).to_csv(tmp_path / "d.csv", index=False)
    return tmp_path / "d.csv"


def _config(path, **training):
    return config_from_dict({
        "dataset": {"path": str(path), "label": "target"},
        "kernel": {"type": "poly", "degree": 3, "scale": 10},
        "algorithm": {"eta": 1, "theta_init": 0, "C": 0},
        "training": {"epochs": 1, "checkpoints": [0.5], "chunk_size": 16, "permutations": 2, **training},
        "prediction": {"rules": ["last", "longest", "vote"], "vote_weight": "correct"},
        "evaluation": {"mode": "nested", "folds": 3, "inner_folds": 2,
                       "grid": {"algorithm.tau": [0, 0.25, 1], "algorithm.lambda": [0, 0.5]},
                       "search": [["algorithm.tau"], ["algorithm.tau", "algorithm.lambda"]]},
        # the runs compare their result files; figures are drawn from those files after the run
        "output": {"figures": False}})


def test_a_fold_of_a_lockstep_grid_writes_the_results_of_one_part_per_grid_point(tmp_path, monkeypatch):
    cfg = _config(_write_data(tmp_path))
    assert run_plan.fold_lockstep(cfg) and run_plan.fold_shared(cfg, run_inputs.load_data(cfg))
    made = _spy_columns(monkeypatch)
    together = run_experiment(cfg, out_dir=tmp_path / "together", progress=False)
    # 3 outer folds x (the outer unit + 2 inner folds) x 2 permutations, each a lockstep of 6 points
    assert len(made) == 3 * 3 * 2
    parts = sorted(p.stem for p in (tmp_path / "together" / "parts").glob("*.csv"))
    assert parts == sorted(f"f+{k:02d}" + s for k in range(3) for s in ("", "_i00", "_i01"))
    monkeypatch.setattr(run_plan, "fold_shared", lambda cfg, ds=None, grid=None: False)
    alone = run_experiment(cfg, out_dir=tmp_path / "alone", progress=False)
    assert len(list((tmp_path / "alone" / "parts").glob("*.csv"))) == 6
    for name in ("results.csv", "grid.csv", "nested.csv"):
        assert (tmp_path / "together" / name).read_bytes() == (tmp_path / "alone" / name).read_bytes(), name
    assert together.ran == alone.ran == 6 * 9 * 2


@pytest.mark.parametrize("change", [{"training": {"epochs": 2}}, {"kernel": {"type": "poly", "degree": 1}},
                                    {"kernel": {"type": "gaussian", "sigma": 2.0}}, {"kernel": {"type": "linear"}},
                                    {"training": {"epochs": 1, "dtype": "float32"}},
                                    {"algorithm": {"name": "alma"},
                                     "evaluation": {"mode": "kfold", "grid": {"algorithm.alpha": [0.5, 1]}}},
                                    {"evaluation": {"mode": "kfold", "grid": {"algorithm.tau": [0, 1],
                                                                              "training.chunk_size": [8, 16]}}}])
def test_only_single_passes_of_the_dual_perceptron_over_its_settings_go_in_lockstep(change):
    raw = {"dataset": {"name": "sonar"}, "kernel": {"type": "poly", "degree": 3}, "training": {"epochs": 1},
           "evaluation": {"mode": "kfold", "grid": {"algorithm.tau": [0, 1]}}}
    assert run_plan.fold_lockstep(config_from_dict(raw))
    assert not run_plan.fold_lockstep(config_from_dict({**raw, **change})), change
