"""engine/seeds.py: the training order and the random rule's seed of a run, from plain numbers.

Expected values come from numpy's SeedSequence written out here: a run's key is [seed,
permutation, fold + 1] (+ [inner fold + 1] in nested cross-validation), its first child (spawn key
(0,)) draws the order, its second (spawn key (1,)) seeds the random rule. The + 1 matters:
SeedSequence pads a key with zeros, so [s, p, f] and [s, p, f, 0] are one stream.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from perceptron_lab.engine.seeds import training_order, unit_seed


def _child(key, which):
    return np.random.SeedSequence(key, spawn_key=(which,))


def test_the_key_of_a_run():
    assert list(unit_seed(7).entropy) == [7, 0, 0]                      # a held-out test set, fold -1
    assert list(unit_seed(7, 2, 3).entropy) == [7, 2, 4]
    assert list(unit_seed(7, 2, 3, 0).entropy) == [7, 2, 4, 1]           # nested: the inner fold too
    assert list(unit_seed(2007, 0, 9, 9).entropy) == [2007, 0, 10, 10]
    assert unit_seed(7, 2, 3).spawn_key == ()


@pytest.mark.parametrize("seed, permutation, fold, inner", [(0, 0, -1, -1), (1999, 3, -1, -1), (2007, 0, 4, -1),
                                                             (2007, 1, 4, 2)])
def test_the_order_and_the_rule_seed_from_plain_numbers(seed, permutation, fold, inner):
    n = 23
    key = [seed, permutation, fold + 1] + ([inner + 1] if inner >= 0 else [])
    order, rule_seed = training_order(n, seed, permutation, fold, inner)
    want = np.random.Generator(np.random.PCG64(_child(key, 0))).permutation(n)
    assert order.tolist() == want.tolist()
    assert sorted(order.tolist()) == list(range(n))
    assert list(rule_seed.entropy) == key and tuple(rule_seed.spawn_key) == (1,)
    assert rule_seed.generate_state(4).tolist() == _child(key, 1).generate_state(4).tolist()


def test_every_run_of_a_nested_grid_has_its_own_order_and_rule_seed():
    """Permutations, outer folds (the held-out set included) and inner folds never share a stream:
    an inner fold 0 is not its outer run, a fold 0 is not the held-out run."""
    n = 40
    orders, states = set(), set()
    units = list(itertools.product(range(3), range(-1, 4), range(-1, 3)))
    for p, f, i in units:
        order, rule_seed = training_order(n, 11, p, f, i)
        orders.add(tuple(order.tolist()))
        states.add(tuple(rule_seed.generate_state(4).tolist()))
    assert len(orders) == len(units) and len(states) == len(units)
    # and the order's stream is not the rule's
    order, rule_seed = training_order(n, 11)
    assert order.tolist() != np.random.default_rng(rule_seed).permutation(n).tolist()


def test_the_order_depends_on_the_seed_alone_not_on_the_data():
    a, _ = training_order(30, 5, 1, 2)
    b, _ = training_order(30, 5, 1, 2)
    c, _ = training_order(30, 6, 1, 2)
    assert a.tolist() == b.tolist() != c.tolist()
