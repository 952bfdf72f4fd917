"""Mistake and support-vector counts at checkpoints, from a training log (Freund & Schapire
Table 1's "Mistake" and "SupVec"); re-exported by :mod:`perceptron_lab.model.predict`."""

from __future__ import annotations

import numpy as np

from perceptron_lab.engine.base import TrainLog


def counts_at_checkpoints(log: TrainLog, cp_index=None):
    """Mistakes (updates) and support vectors at each checkpoint.

    Returns a dict of arrays: ``mistakes`` (n_cp, L), ``support_vectors`` (n_cp, L) per label and
    ``support_vectors_union`` (n_cp,): the number of distinct training examples on which any label
    updated (Freund & Schapire Table 1).
    """
    if cp_index is None:
        cp_index = np.arange(log.checkpoint_steps.size)
    L = log.n_labels
    T = log.checkpoint_steps[np.asarray(cp_index, dtype=np.int64)]
    step, cls, ex = log.upd_step, log.upd_cls.astype(np.int64), log.upd_ex.astype(np.int64)
    # an example is a support vector of a label from its first update on that label: count the
    # first steps (per (example, label) pair, and per example for the union) below each checkpoint
    pairs, pair_first = _first_steps(ex * L + cls, step)
    pair_cls = pairs % L
    mist = np.zeros((T.size, L), dtype=np.int64)
    sv = np.zeros((T.size, L), dtype=np.int64)
    # updates are logged in training order, so their steps are sorted already (checked)
    in_order = step.size < 2 or bool(np.all(step[1:] >= step[:-1]))
    for c in range(L):
        steps_c = step[cls == c]
        mist[:, c] = np.searchsorted(steps_c if in_order else np.sort(steps_c), T, side="left")
        sv[:, c] = np.searchsorted(np.sort(pair_first[pair_cls == c]), T, side="left")
    svu = np.searchsorted(np.sort(_first_steps(ex, step)[1]), T, side="left").astype(np.int64)
    return {"mistakes": mist, "support_vectors": sv, "support_vectors_union": svu}


def few_keys(top: int, n: int) -> bool:
    """Whether a table over the key range [0, top) costs little next to ``n`` keys (small training
    sets visited many times): then one pass over the keys replaces a sort."""
    return top <= 4 * n + 4096


def _first_steps(keys, steps):
    """(the distinct keys in increasing order, the smallest step of each)."""
    if keys.size == 0:
        return keys[:0], np.empty(0, dtype=np.int64)
    top = int(keys.max()) + 1
    if few_keys(top, keys.size):
        # few possible keys (small training sets): the smallest step per key in one pass
        none = np.iinfo(np.int64).max
        first = np.full(top, none, dtype=np.int64)
        np.minimum.at(first, keys, steps.astype(np.int64))
        uniq = np.flatnonzero(first != none)
        return uniq.astype(keys.dtype), first[uniq]
    order = np.lexsort((steps, keys))
    k = keys[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    return k[starts], steps[order][starts].astype(np.int64)
