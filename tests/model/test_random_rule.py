"""Freund & Schapire's random rule (§5) against tests/naive.py, whose time slices are its own.

The paper: "To classify x, we choose a 'time slice' r in {0, ..., t} uniformly at random", t the
rounds executed, and use "the final vector which existed at time r", r_l "the largest number in
{0, ..., k_l} satisfying sum_{i=1}^{r_l - 1} c_i^l <= r". The reference draws r from plain numbers
(:func:`naive.random_slices`) and never from the package, so a slice drawn from {0, ..., t - 1},
a checkpoint's t off by one, or a seed spawned from the wrong key shows as a different error.
"""

from __future__ import annotations

import numpy as np
import pytest

from perceptron_lab.config.load import config_from_dict
from perceptron_lab.engine.kernels import Kernel
from perceptron_lab.engine.perceptron import PerceptronParams, label_matrix, train
from perceptron_lab.engine.seeds import training_order
from perceptron_lab.model.predict import RULES, evaluate, random_slices as package_slices
from perceptron_lab.run.experiment import run_experiment
from perceptron_lab.run.inputs import load_data

from naive import NaivePerceptron, live_index, naive_errors, random_slices, steps_to


def test_the_reference_draws_every_slice_of_0_to_t_uniformly():
    """The reference itself, against the paper's text: t + 1 values, each with probability 1/(t + 1)."""
    for T in (1, 3, 10):
        r = random_slices(5, 60000, T)
        assert r.min() == 0 and r.max() == T
        freq = np.bincount(r, minlength=T + 1) / r.size
        sd = np.sqrt((1 / (T + 1)) * (1 - 1 / (T + 1)) / r.size)
        assert np.all(np.abs(freq - 1 / (T + 1)) < 6 * sd), (T, freq)
    assert random_slices(5, 10, 0).tolist() == [0] * 10   # before any round, the initial vector
    # reproducible from plain numbers, and a different stream per checkpoint and per key
    assert random_slices([1, 2, 3], 50, 7, (1,)).tolist() == random_slices([1, 2, 3], 50, 7, (1,)).tolist()
    assert random_slices([1, 2, 3], 50, 7, (1,)).tolist() != random_slices([1, 2, 3], 50, 8, (1,)).tolist()
    assert random_slices([1, 2, 3], 50, 7, (1,)).tolist() != random_slices([1, 2, 3], 50, 7, (0,)).tolist()


def test_the_live_vector_is_the_papers_r_l():
    """live_index(hyps, r) is r_l of §5 computed from the survival counts c_i of Figure 1 (c = 1 at
    a vector's creation, + 1 per correct prediction; the initial zero vector starts at 0)."""
    rng = np.random.default_rng(4)
    X = rng.integers(-3, 4, size=(30, 4)).astype(float)
    y = (X @ np.array([1.0, -2.0, 0.5, 1.0]) + rng.normal(size=30) > 0).astype(int)
    Y = np.where(y == 1, 1, -1)[:, None]
    T = 75
    ref = NaivePerceptron(X, Y, ("linear", 1, 1.0, 1.0)).fit(rng.permutation(30), T)
    hyps = ref.hyps[0]
    assert len(hyps) > 5
    c = [h["correct"] + (1 if k > 0 else 0) for k, h in enumerate(hyps)]
    assert sum(c) == T   # t = sum_i c_i: every round adds one to the vector current after it
    for r in range(T + 1):
        # 1-based in the paper: the largest r_l with c_1 + ... + c_(r_l - 1) <= r
        r_l = max(k for k in range(1, len(hyps) + 1) if sum(c[:k - 1]) <= r)
        assert live_index(hyps, r) == r_l - 1, r


@pytest.mark.parametrize("seed", [0, 7, [2007, 1, 3], [1999, 0, 0, 2]])
def test_the_package_draws_the_references_slices(seed):
    n, steps = 37, [0, 1, 12, 40, 41]
    got = package_slices(seed, n, steps)
    for k, T in enumerate(steps):
        assert got[k].tolist() == random_slices(seed, n, T).tolist(), T
    # a unit's rule seed: spawned from its key (training_order), the same draws from plain numbers
    _, rule_seed = training_order(10, 2007, permutation=1, fold=2)
    got = package_slices(rule_seed, n, steps)
    for k, T in enumerate(steps):
        assert got[k].tolist() == random_slices([2007, 1, 3], n, T, spawn_key=(1,)).tolist(), T


@pytest.mark.parametrize("n_classes", [2, 3])
def test_random_rule_errors_at_every_checkpoint_match_the_reference(n_classes):
    """The engine's random and random_norm errors, with the rule seed of a unit, at checkpoints
    that end inside and at the end of a pass, equal the reference's with its own slices."""
    rng = np.random.default_rng(40 + n_classes)
    X = rng.integers(-3, 4, size=(50, 5)).astype(float)
    W = rng.normal(size=(5, n_classes))
    y = np.argmax(X @ W + 0.8 * rng.normal(size=(50, n_classes)), axis=1)
    Xtr, ytr, Xte, yte = X[:35], y[:35], X[35:], y[35:]
    order, rule_seed = training_order(35, 11, permutation=2, fold=0)
    cps = (0.2, 1, 1.6, 3)
    Y = label_matrix(ytr, n_classes)
    log = train(Xtr, Y, Kernel("poly", degree=2, scale=4.0), PerceptronParams(), order, 3, cps, chunk_size=4)
    err_m, err_b = evaluate(log, Kernel("poly", degree=2, scale=4.0), Xtr, Xte, yte, n_classes == 2,
                            seed=rule_seed, rules=["random", "random_norm"])
    for k, cp in enumerate(cps):
        T = steps_to(cp, 35)
        ref = NaivePerceptron(Xtr, Y, ("poly", 2, 4.0, 1.0)).fit(order, T)
        rs = random_slices([11, 2, 1], len(yte), T, spawn_key=(1,))
        ref_m, ref_b = naive_errors(ref, Xte, yte, n_classes == 2, rs)
        for rule in ("random", "random_norm"):
            assert err_m[k, RULES.index(rule)] == ref_m[rule], (rule, cp)
            assert list(err_b[k, RULES.index(rule)]) == ref_b[rule], (rule, cp)


def _naive_order(n, seed, permutation, fold):
    """The training order of a unit from plain numbers: numpy's PCG64 seeded with the unit's key
    [seed, permutation, fold + 1] and spawn key (0,) (the first of its two children; the second
    seeds the random rule), a uniform permutation of range(n)."""
    seq = np.random.SeedSequence([seed, permutation, fold + 1], spawn_key=(0,))
    return np.random.Generator(np.random.PCG64(seq)).permutation(n)


def test_a_runs_random_rule_rows_match_the_reference_from_plain_numbers(tmp_path):
    """End to end: ``plab run`` on generated data with a test split, two permutations; each row of
    the random rules in results.csv equals the reference's error, with the training order and the
    slices both drawn from the run's seed, permutation and fold (a held-out test set: fold -1)."""
    cfg = config_from_dict({
        "name": "random_rule_reference",
        "dataset": {"name": "gentile_sparse",
                    "params": {"n_train": 40, "n_test": 30, "n_features": 6, "s": 3, "epsilon": 0.1, "seed": 3}},
        "kernel": {"type": "linear"},
        "algorithm": {"name": "perceptron"},
        "training": {"epochs": 2, "checkpoints": [0.3, 1, 2], "permutations": 2, "seed": 31, "dtype": "float64"},
        "prediction": {"rules": ["last", "random", "random_norm"], "vote_weight": "survival"},
        "evaluation": {"mode": "holdout"},
        "output": {"figures": False},
    })
    res = run_experiment(cfg, out_dir=tmp_path / "run", progress=False)
    ds = load_data(cfg)
    Xtr, Xte = np.asarray(ds.X_train, float), np.asarray(ds.X_test, float)
    ytr, yte = np.asarray(ds.y_train), np.asarray(ds.y_test)
    Y = np.where(ytr == 1, 1, -1)[:, None]   # binary: the second class (+1) is the positive one
    df = res.results
    df = df[(df["class"].astype(str) == "all") & (df["metric"] == "test_error_pct")]
    checked = 0
    for perm in range(2):
        order = _naive_order(len(ytr), 31, perm, -1)
        for cp in (0.3, 1, 2):
            T = steps_to(cp, len(ytr))
            ref = NaivePerceptron(Xtr, Y, ("linear", 1, 1.0, 1.0)).fit(order, T)
            rs = random_slices([31, perm, 0], len(yte), T, spawn_key=(1,))
            ref_m, _ = naive_errors(ref, Xte, yte, True, rs)
            for rule, norm in (("last", "false"), ("random", "false"), ("random", "true")):
                name = rule + ("_norm" if norm == "true" else "")
                row = df[(df["permutation"].astype(int) == perm) & (df["epoch"].astype(float) == cp)
                         & (df["rule"] == rule) & (df["normalized"] == norm)]
                assert len(row) == 1, (perm, cp, rule, norm)
                assert float(row["value"].iloc[0]) == pytest.approx(100.0 * ref_m[name] / len(yte), abs=5e-5), \
                    (perm, cp, name)
                checked += 1
    assert checked == 18
