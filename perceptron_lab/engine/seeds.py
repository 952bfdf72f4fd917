"""The training order of a run, from plain numbers.

Every door into the engine (``plab run``'s units, the estimators, the online classes, the papers'
retraining) draws the order in which a run visits its training examples, and the seed of its random
prediction rule, from the same numbers: the run's seed, its permutation, its fold and inner fold.
Nothing here reads a config.
"""

from __future__ import annotations

import numpy as np


def unit_seed(seed: int, permutation: int = 0, fold: int = -1, inner_fold: int = -1) -> np.random.SeedSequence:
    """The seed sequence of one run: ``seed`` (``training.seed``), the permutation, the fold (-1:
    a held-out test set) and the inner fold of nested cross-validation (-1: an outer run)."""
    key = [int(seed), int(permutation), int(fold) + 1]
    if inner_fold >= 0:
        key.append(int(inner_fold) + 1)
    return np.random.SeedSequence(key)


def training_order(n: int, seed: int, permutation: int = 0, fold: int = -1, inner_fold: int = -1):
    """(the order of the ``n`` training examples, the seed of the random prediction rule) of the
    run :func:`unit_seed` names: the order is a random permutation of ``range(n)``."""
    order_seed, rule_seed = unit_seed(seed, permutation, fold, inner_fold).spawn(2)
    return np.random.default_rng(order_seed).permutation(n), rule_seed


__all__ = ["training_order", "unit_seed"]
