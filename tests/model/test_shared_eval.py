"""Evaluation shared by the grid points of one fold (perceptron_lab.model.predict.evaluate_shared and
the one-part-per-fold plan of perceptron_lab.run.run_plan.fold_shared): the errors and the results file
equal those of each run evaluated alone."""

import numpy as np
import pandas as pd
import pytest

import perceptron_lab.model.predict as predict
from perceptron_lab.run import inputs as run_inputs
from perceptron_lab.run import plan as run_plan
from perceptron_lab.config.load import config_from_dict
from perceptron_lab.engine.perceptron import PerceptronParams, label_matrix, train
from perceptron_lab.run.experiment import run_experiment
from perceptron_lab.engine.kernels import Kernel


def _integer_data(rng, n, d):
    X = rng.integers(0, 16, size=(n, d)).astype(np.float64)
    X[:3] *= 500  # rows whose inner products with others pass 2^24: scored from float64 blocks
    return X


def _logs(X, y, labels, rng):
    settings = [PerceptronParams(), PerceptronParams(eta=0.1, theta_init=50.0, C=50.0, tau_abs=40.0),
                PerceptronParams(eta=0.1, theta_init=50.0, C=50.0, lam=2.0),
                PerceptronParams(eta=1.0, tau_abs=400.0)]
    cps = [0.5, 1.0, 2.0]
    return [train(X, label_matrix(y, labels), Kernel("linear"), p, rng.permutation(len(y)), 2, cps)
            for p in settings]


def _count_blocks(monkeypatch):
    calls = []
    real = predict.kernel_blocks

    def counting(kernel, Xsv, *a, **kw):
        calls.append(Xsv.shape[0])
        return real(kernel, Xsv, *a, **kw)

    monkeypatch.setattr(predict, "kernel_blocks", counting)
    return calls


@pytest.mark.parametrize("labels", [2, 4])
def test_shared_errors_equal_each_log_alone(monkeypatch, labels):
    rng = np.random.default_rng(11)
    X, y = _integer_data(rng, 500, 30), rng.integers(0, labels, 500)
    Xt, yt = _integer_data(rng, 300, 30), rng.integers(0, labels, 300)
    logs = _logs(X, y, labels, rng)
    rules = [None, ["last", "longest", "vote"], ["last", "avg"], ["vote", "random_norm"]]
    items = [(log, vw, seed, r) for log, vw, seed, r in zip(logs, ["survival", "correct", "survival", "correct"],
                                                           [1, 2, 3, 4], rules)]
    calls = _count_blocks(monkeypatch)
    shared = predict.evaluate_shared(items, Kernel("linear"), X, Xt, yt, labels == 2, block=128)
    # one kernel block for the three logs that score every hypothesis, against their union
    union = np.unique(np.concatenate([np.unique(predict.Hypotheses(log, vw).uex)
                                      for (log, vw, _, r) in items if r != ["last", "avg"]]))
    assert calls == [union.size]
    for (log, vw, seed, r), (err_m, err_b, secs) in zip(items, shared):
        alone = predict.evaluate(log, Kernel("linear"), X, Xt, yt, labels == 2, vote_weight=vw, seed=seed, rules=r)
        np.testing.assert_array_equal(err_m, alone[0])
        np.testing.assert_array_equal(err_b, alone[1])
        assert secs >= 0



def test_the_shared_block_holds_the_examples_in_the_order_training_visits_them(monkeypatch):
    # the units of a fold train in one order: the scan then reads the block's rows forwards
    rng = np.random.default_rng(5)
    X, y = _integer_data(rng, 400, 20), rng.integers(0, 3, 400)
    Xt, yt = _integer_data(rng, 200, 20), rng.integers(0, 3, 200)
    order = rng.permutation(len(y))
    logs = [train(X, label_matrix(y, 3), Kernel("linear"), p, order, 2, [1.0, 2.0])
            for p in (PerceptronParams(), PerceptronParams(eta=0.1, theta_init=50.0, C=50.0, tau_abs=40.0))]
    items = [(log, "survival", 1, ["last", "longest", "vote"]) for log in logs]
    blocks = []
    real = predict.kernel_blocks

    def recording(kernel, Xsv, *a, **kw):
        blocks.append(Xsv)
        return real(kernel, Xsv, *a, **kw)

    monkeypatch.setattr(predict, "kernel_blocks", recording)
    shared = predict.evaluate_shared(items, Kernel("linear"), X, Xt, yt, False, block=128)
    used = set(np.concatenate([log.upd_ex for log in logs]).tolist())
    visited = [i for i in order if i in used]
    assert len(blocks) == 1
    np.testing.assert_array_equal(blocks[0], X[visited])
    for (log, vw, seed, r), (err_m, err_b, _) in zip(items, shared):
        alone = predict.evaluate(log, Kernel("linear"), X, Xt, yt, False, vote_weight=vw, seed=seed, rules=r)
        np.testing.assert_array_equal(err_m, alone[0])
        np.testing.assert_array_equal(err_b, alone[1])

def test_features_that_are_not_integers_share_one_block_whose_values_do_not_depend_on_the_union(monkeypatch):
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(300, 8)), rng.integers(0, 3, 300)
    Xt, yt = rng.normal(size=(200, 8)), rng.integers(0, 3, 200)
    logs = _logs(X, y, 3, rng)
    # a log trained on the first 60 examples alone: its union with another log is smaller
    small = train(X[:60], label_matrix(y[:60], 3), Kernel("linear"), PerceptronParams(), rng.permutation(60), 2,
                  [1.0, 2.0])
    items = [(log, "survival", 0, None) for log in logs]
    calls = _count_blocks(monkeypatch)
    shared = predict.evaluate_shared(items, Kernel("linear"), X, Xt, yt, False)
    union = np.unique(np.concatenate([np.unique(predict.Hypotheses(log, "survival").uex) for log in logs]))
    assert calls == [union.size]
    for item, (err_m, err_b, _) in zip(items, shared):
        pair = predict.evaluate_shared([item, (small, "survival", 0, None)], Kernel("linear"), X, Xt, yt, False)
        np.testing.assert_array_equal(err_m, pair[0][0])
        np.testing.assert_array_equal(err_b, pair[0][1])
        # and the rules' errors are those of the log alone (here no score lies within rounding of 0)
        alone = predict.evaluate(item[0], Kernel("linear"), X, Xt, yt, False, seed=0)
        np.testing.assert_array_equal(err_m, alone[0])


def _write_data(tmp_path):
    rng = np.random.default_rng(2)
    n = 240
    X = rng.integers(0, 9, size=(n, 12))
    y = (X[:, :4].sum(axis=1) + rng.integers(0, 6, n)) % 3
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(12)]).assign(target=y)
    df.to_csv(tmp_path / "d.csv", index=False)
    return tmp_path / "d.csv"


@pytest.mark.parametrize("mode", ["kfold", "nested"])
def test_one_part_per_fold_writes_the_results_of_one_part_per_grid_point(tmp_path, monkeypatch, mode):
    path = _write_data(tmp_path)
    evaluation = {"mode": mode, "folds": 3, "grid": {"algorithm.tau": [0, 0.5, 2], "algorithm.lambda": [0, 1]},
                  "search": [["algorithm.tau"], ["algorithm.tau", "algorithm.lambda"]]}
    if mode == "nested":
        evaluation["inner_folds"] = 2
    cfg = config_from_dict({"dataset": {"path": str(path), "label": "target"},
                            "algorithm": {"eta": 0.1, "theta_init": "avg_sq_norm", "C": "theta_init"},
                            "training": {"epochs": 2, "checkpoints": [1]},
                            "prediction": {"rules": ["last", "longest", "vote"], "vote_weight": "correct"},
                            "evaluation": evaluation,
                            # the runs compare their result files; figures are drawn from those files
                            "output": {"figures": False}})
    assert run_plan.fold_shared(cfg)
    shared = run_experiment(cfg, out_dir=tmp_path / "shared", progress=False)
    parts = sorted(p.stem for p in (tmp_path / "shared" / "parts").glob("*.csv"))
    folds = [f"f+{k:02d}" for k in range(3)]
    assert parts == (folds if mode == "kfold" else sorted(folds + [f"{f}_i{j:02d}" for f in folds for j in range(2)]))
    monkeypatch.setattr(run_plan, "fold_shared", lambda cfg, ds=None, grid=None: False)
    alone = run_experiment(cfg, out_dir=tmp_path / "alone", progress=False)
    assert len(list((tmp_path / "alone" / "parts").glob("*.csv"))) == 6
    for name in ("results.csv", "grid.csv", "search.csv" if mode == "kfold" else "nested.csv"):
        assert (tmp_path / "shared" / name).read_bytes() == (tmp_path / "alone" / name).read_bytes(), name
    assert shared.ran == alone.ran == 6 * (3 if mode == "kfold" else 9)


def test_only_grids_over_the_algorithms_settings_with_the_linear_kernel_or_in_lockstep_share_folds(tmp_path):
    base = {"dataset": {"name": "sonar"}, "evaluation": {"mode": "kfold", "grid": {"algorithm.tau": [0, 1]}}}
    cfg = config_from_dict(base)
    assert run_plan.fold_shared(cfg)
    # with the linear kernel, on any dense features (their blocks are summed in feature order)
    assert run_plan.fold_shared(cfg, run_inputs.load_data(cfg))
    path = _write_data(tmp_path)
    user = config_from_dict({**base, "dataset": {"path": str(path), "label": "target"}})
    assert run_plan.fold_shared(user, run_inputs.load_data(user))
    scaled = config_from_dict({**base, "dataset": {"path": str(path), "label": "target", "preprocess": "minmax"}})
    assert run_plan.fold_shared(scaled, run_inputs.load_data(scaled))
    # training orders drawn from a grid over the training seed share their fold's test block too
    seeds = config_from_dict({**base, "evaluation": {"mode": "kfold", "grid": {"algorithm.tau": [0, 1],
                                                                                 "training.seed": [1, 2]}}})
    assert run_plan.fold_shared(seeds, run_inputs.load_data(seeds))
    # the dual perceptron in lockstep needs integer features without preprocessing
    lock = {**base, "kernel": {"type": "poly", "degree": 2}, "training": {"epochs": 1}}
    assert run_plan.fold_shared(config_from_dict(lock))
    assert not run_plan.fold_shared(config_from_dict(lock), run_inputs.load_data(config_from_dict(lock)))
    # other kernels: the single passes of the dual perceptron (tests/engine/test_lockstep.py) only
    for change in ({"kernel": {"type": "poly", "degree": 2}, "training": {"epochs": 2}},
                   {"kernel": {"type": "gaussian", "sigma": 2.0}},
                   {"evaluation": {"mode": "kfold", "grid": {"algorithm.tau": [0, 1], "dataset.name": ["sonar"]}}},
                   {"evaluation": {"mode": "kfold", "grid": {"algorithm.tau": [0]}}},
                   {"evaluation": {"mode": "kfold"}}):
        assert not run_plan.fold_shared(config_from_dict({**base, **change})), change
