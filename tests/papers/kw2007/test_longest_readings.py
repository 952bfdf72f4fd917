"""Readings of Khardon & Wachman's (2007) longest survivor
(:mod:`perceptron_lab.papers.kw2007.longest_readings`): reading (a) is the engine's ``longest``
rule on real runs, and every reading picks, on hand-built update sequences, the hypotheses
derived by hand below."""

from __future__ import annotations

import numpy as np
import pytest

from perceptron_lab.config.load import config_from_dict
from perceptron_lab.engine import label_matrix, train_algorithm
from perceptron_lab.run.spec import unit_spec
from perceptron_lab.engine.base import TrainLog
from perceptron_lab.engine.kernels import Kernel
from perceptron_lab.model.predict import RULE_INDEX, evaluate
from perceptron_lab.run.inputs import load_data

pytest.importorskip("perceptron_lab.papers.kw2007", reason="the kw2007 paper plug-in is not installed")
from perceptron_lab.papers.kw2007 import longest_readings as lr  # noqa: E402

THETA0 = 10.0


def _train(cfg, X, Y, kernel, order, checkpoints, dtype, seed=0):
    """Train ``cfg``'s algorithm as a unit of ``plab run`` does: its spec's settings, epochs and
    engine options, through the one training call."""
    spec = unit_spec(cfg)
    return train_algorithm(spec.settings, X, Y, kernel, order, spec.epochs, checkpoints, dtype=dtype,
                           chunk_size=spec.chunk_size, cache_limit_gb=spec.cache_limit_gb, seed=seed)


def _cfg(epochs):
    return config_from_dict({"dataset": {"name": "sonar"},
                             "algorithm": {"eta": 0.1, "theta_init": "avg_sq_norm", "C": "theta_init"},
                             "training": {"epochs": epochs, "seed": 2007},
                             "prediction": {"rules": ["last", "longest", "vote"], "vote_weight": "correct"},
                             "evaluation": {"mode": "kfold", "folds": 2}})


def _engine_longest_errors(cfg, log, Xtr, Xte, yte):
    err, _ = evaluate(log, Kernel("linear"), Xtr, Xte, yte, log.n_labels == 1, vote_weight="correct",
                      rules=["longest"])
    return int(err[-1, RULE_INDEX["longest"]])


@pytest.mark.parametrize("epochs", [1, 7])
def test_reading_a_is_the_engines_longest_rule_on_sonar(epochs):
    cfg = _cfg(epochs)
    ds = load_data(cfg)
    rng = np.random.default_rng(3)
    idx = rng.permutation(len(ds.y_train))
    tr, te = idx[:140], idx[140:]
    Xtr, ytr, Xte, yte = ds.X_train[tr], ds.y_train[tr], ds.X_train[te], ds.y_train[te]
    order = rng.permutation(len(tr))
    log = _train(cfg, Xtr, label_matrix(ytr, 2), Kernel("linear"), order, [float(epochs)], np.float64)
    errors, choices = lr.score_readings(cfg, log, Xtr, Xte, yte, Kernel("linear"), np.float64, 0)
    assert errors["a_figure2"] == _engine_longest_errors(cfg, log, Xtr, Xte, yte)
    assert set(errors) == set(lr.READINGS) | {"last"}


def test_reading_a_is_the_engines_longest_rule_multiclass():
    cfg = _cfg(4)
    rng = np.random.default_rng(7)
    X = rng.integers(-4, 5, size=(260, 6)).astype(float)
    y = np.argmax(X @ rng.normal(size=(6, 4)) + 1.5 * rng.normal(size=(260, 4)), axis=1)
    Xtr, ytr, Xte, yte = X[:200], y[:200], X[200:], y[200:]
    log = _train(cfg, Xtr, label_matrix(ytr, 4), Kernel("linear"), rng.permutation(200), [4.0],
                            np.float64)
    errors, choices = lr.score_readings(cfg, log, Xtr, Xte, yte, Kernel("linear"), np.float64, 0)
    assert errors["a_figure2"] == _engine_longest_errors(cfg, log, Xtr, Xte, yte)


def test_an_alpha_bounded_run_fails_the_check_of_correct_predictions():
    # with an alpha-bound a mistake on an example that used up its updates neither updates nor
    # counts as correct: the steps without an update are then not the correct predictions, which
    # the pocket loop assumes. A margin (tau > 0) keeps the assumption: inside it the prediction
    # is 0, a mistake, and updates.
    from perceptron_lab.config.load import with_overrides

    ds = load_data(_cfg(5))
    Y, order = label_matrix(ds.y_train, 2), np.arange(len(ds.y_train))
    bounded = with_overrides(_cfg(5), {"algorithm.alpha_bound": 1})
    log = _train(bounded, ds.X_train, Y, Kernel("linear"), order, [5.0], np.float64)
    with pytest.raises(lr.ReadingError, match="no alpha-bound"):
        lr.check_assumptions(log)
    with pytest.raises(lr.ReadingError, match="alpha_bound: inf"):
        lr.score_readings(bounded, log, ds.X_train, ds.X_train, ds.y_train, Kernel("linear"), np.float64, 0)
    margin = with_overrides(_cfg(5), {"algorithm.tau": 1})
    lr.check_assumptions(_train(margin, ds.X_train, Y, Kernel("linear"), order, [5.0], np.float64))


# ----------------------------------------------------------------------- pockets, by hand

def test_pocket_strict_ties_keep_the_first_and_ties_later_keep_the_last():
    # three hypotheses with runs of 2 correct predictions each (steps 0-1, 3-4, 6-7)
    U = np.array([0, 0, 1, 0, 0, 1, 0, 0], dtype=bool)
    assert lr.pocket_steps(U, 8) == 1                    # hypothesis 0 reaches 2 first, at step 1
    assert lr.pocket_steps(U, 8, ties_later=True) == 7   # hypothesis 2 reaches 2 last, at step 7


def test_pocket_closed_runs_ignore_the_final_open_run():
    # hypothesis 0: 1 correct (step 0), update at step 1, hypothesis 1: 3 correct, never closed
    U = np.array([0, 1, 0, 0, 0], dtype=bool)
    assert lr.pocket_steps(U, 5) == 4                    # Figure 2: hypothesis 1 at its 3rd correct
    assert lr.pocket_steps(U, 5, closed_runs=True) == 1  # only hypothesis 0's run was closed


def test_pocket_tally_per_epoch_splits_runs_at_pass_boundaries():
    # n = 6, three passes. Hypothesis 1 is correct on steps 1-8 (8, across the boundary at 6:
    # 5 + 3); hypothesis 2 on steps 10-17 (8: 2 + 6, the 6 within the third pass)
    U = np.zeros(18, dtype=bool)
    U[[0, 9]] = True
    assert lr.pocket_steps(U, 6) == 8                            # hypothesis 1's 8th, at step 8
    assert lr.pocket_steps(U, 6, reset_each_epoch=True) == 17    # hypothesis 2's 6 in one pass


def _log(total_steps, updates, n_labels, theta_init=THETA0, X=None):
    """A training log with the given updates (step, example, label, coef, theta after): what the
    readings read of it, built by hand."""
    updates = sorted(updates)
    step, ex, cls, coef, theta = (np.array(v) for v in zip(*updates))
    cum = np.array([s - sum(1 for u in updates if u[2] == c and u[0] < s) for s, _, c, _, _ in updates])
    final = np.array([[total_steps - sum(1 for u in updates if u[2] == c) for c in range(n_labels)]])
    z = np.zeros(len(updates))
    return TrainLog(n_train=total_steps, n_labels=n_labels, total_steps=total_steps, order=np.arange(total_steps),
                    checkpoint_steps=np.array([total_steps]), theta_init=theta_init,
                    upd_step=step.astype(np.int64), upd_ex=ex.astype(np.int64), upd_cls=cls.astype(np.int32),
                    upd_coef=coef.astype(float), upd_score=z, upd_kxx=z, upd_theta=theta.astype(float),
                    upd_cum_correct=cum.astype(np.int64), cum_correct_cp=final.astype(np.int64))


def test_readings_on_a_two_label_log_by_hand():
    # 6 steps, one pass. Label 0 updates at step 2 (theta 10 -> 9): runs 2 (hyp 0), 3 (hyp 1).
    # Label 1 updates at step 4 (theta 10 -> 11): runs 4 (hyp 0), 1 (hyp 1).
    # Shared pocket: some label updates at steps 2 and 4, tuple runs 2, 1, 1 -> the first tuple,
    # (hyp 0, hyp 0).
    log = _log(6, [(2, 2, 0, 1.0, 9.0), (4, 4, 1, -1.0, 11.0)], 2)
    lr.check_assumptions(log)
    ch = lr.reading_choices(log, 6)
    assert ch["a_figure2"] == [(1, 9.0), (0, THETA0)]
    assert ch["b_shared"] == [(0, THETA0), (0, THETA0)]
    assert ch["c_final_theta"] == [(1, 9.0), (0, 11.0)]     # label 1's final theta, its w_0
    assert ch["d_theta_init"] == [(1, THETA0), (0, THETA0)]
    assert ch["e_ties_later"] == ch["a_figure2"]            # no ties here
    assert ch["f_closed_runs"] == [(0, THETA0), (0, THETA0)]  # label 0's run of 3 is still open
    assert ch["g_tally_per_epoch"] == ch["a_figure2"]       # one pass


def test_weight_vectors_and_test_errors_by_hand():
    # label 0's hypothesis 1 is w = 2 * x_2 = (2, 0); label 1's hypotheses: w_0 = 0, w_1 = -x_4
    Xtr = np.zeros((6, 2))
    Xtr[2] = [1.0, 0.0]
    Xtr[4] = [0.0, 1.0]
    log = _log(6, [(2, 2, 0, 2.0, 9.0), (4, 4, 1, -1.0, 11.0)], 2)
    np.testing.assert_array_equal(lr.weight_vector(log, Xtr, 0, 1), [2.0, 0.0])
    np.testing.assert_array_equal(lr.weight_vector(log, Xtr, 1, 1), [0.0, -1.0])
    np.testing.assert_array_equal(lr.weight_vector(log, Xtr, 1, 0), [0.0, 0.0])
    # test point (10, 0): label 0 scores 2*10 - theta, label 1 scores 0 - theta
    Xte = np.array([[10.0, 0.0]])
    # (a): label 0 = 20 - 9 = 11, label 1 = -10: predicts 0
    assert lr.test_errors(log, Xtr, Xte, [0], [(1, 9.0), (0, THETA0)]) == 0
    # (b): both w_0 = 0 with theta 10: -10 and -10, a tie, argmax takes label 0
    assert lr.test_errors(log, Xtr, Xte, [1], [(0, THETA0), (0, THETA0)]) == 1
    # label 0 with theta 25: 20 - 25 = -5 against label 1's 0 - (-6) = 6: predicts 1
    assert lr.test_errors(log, Xtr, Xte, [1], [(1, 25.0), (0, -6.0)]) == 0


def test_main_without_the_data_stops_with_one_error_line(tmp_path, capsys):
    out = tmp_path / "readings.csv"
    code = lr.main(["--data-dir", str(tmp_path), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 3 and not out.exists()
    assert len(err) == 1 and err[0].startswith("plab: error: dataset 'mnist' is not available")
