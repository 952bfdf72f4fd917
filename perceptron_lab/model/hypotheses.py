"""The hypotheses of a training log: per label, the sequence of vectors after each update, with
their thresholds, feature-space norms, scales and vote weights (no kernel values), and which of
them is live, partly weighted or the longest survivor at each checkpoint."""

from __future__ import annotations

import numpy as np

from perceptron_lab.engine.perceptron import TrainLog

VOTE_WEIGHTS = ("survival", "correct")


class Hypotheses:
    """Per-label hypothesis sequences derived from a :class:`TrainLog` (no kernel values).

    Hypothesis ``k`` of label ``c`` is the vector after the label's first ``k`` updates
    (``k = 0`` is the zero vector with the initial threshold). Arrays are concatenated over
    labels; ``uoff``/``hoff`` give the offsets of each label's updates / hypotheses.
    """

    def __init__(self, log: TrainLog, vote_weight: str = "survival"):
        if vote_weight not in VOTE_WEIGHTS:
            raise ValueError(f"vote_weight must be one of {VOTE_WEIGHTS}, got {vote_weight!r}")
        L = log.n_labels
        # one label: its updates are the log's, in order (a slice reads them without a gather)
        one = L == 1
        order = np.arange(log.n_updates) if one else np.argsort(log.upd_cls, kind="stable")
        self.uidx = order
        counts = np.bincount(log.upd_cls, minlength=L) if log.n_updates else np.zeros(L, np.int64)
        self.uoff = np.zeros(L + 1, dtype=np.int64)
        self.uoff[1:] = np.cumsum(counts)
        self.hoff = self.uoff + np.arange(L + 1)
        nh = int(self.hoff[-1])
        self.step = np.zeros(nh, dtype=np.int64)
        self.theta = np.zeros(nh)
        self.norm = np.zeros(nh)
        self.scale = np.ones(nh)
        self.cumb = np.zeros(nh, dtype=np.int64)
        self.wfull = np.zeros(nh)
        self.correct_full = np.zeros(nh, dtype=np.int64)
        self.ustep = log.upd_step.copy() if one else log.upd_step[order]
        self.coef = log.upd_coef.copy() if one else log.upd_coef[order]
        self.uex = log.upd_ex.copy() if one else log.upd_ex[order]
        for c in range(L):
            u = slice(None) if one else order[self.uoff[c]:self.uoff[c + 1]]
            h0, h1 = self.hoff[c], self.hoff[c + 1]
            self.step[h0 + 1:h1] = log.upd_step[u]
            self.theta[h0] = log.theta_init
            self.theta[h0 + 1:h1] = log.upd_theta[u]
            if log.upd_scale is not None:
                self.scale[h0 + 1:h1] = log.upd_scale[u]
            if log.upd_norm is not None:
                self.norm[h0 + 1:h1] = log.upd_norm[u]
            else:
                a = log.upd_coef[u]
                inc = 2.0 * a * log.upd_score[u] + a * a * log.upd_kxx[u]
                self.norm[h0 + 1:h1] = self.scale[h0 + 1:h1] * np.sqrt(np.maximum(np.cumsum(inc), 0.0))
            self.cumb[h0 + 1:h1] = log.upd_cum_correct[u]
            cb = self.cumb[h0:h1]
            self.correct_full[h0:h1 - 1] = np.diff(cb)
            self.wfull[h0:h1 - 1] = np.diff(cb)
            if vote_weight == "survival":
                self.wfull[h0 + 1:h1 - 1] += 1
        self.log = log
        self.vote_weight = vote_weight

    def at_checkpoints(self, cp_index):
        """For checkpoints ``cp_index`` (indices into log.checkpoint_steps): index of the live
        hypothesis (relative to the label), its partial weight, and the longest survivor."""
        log = self.log
        L = log.n_labels
        ncp = len(cp_index)
        live = np.zeros((ncp, L), dtype=np.int64)
        partial = np.zeros((ncp, L))
        longest = np.zeros((ncp, L), dtype=np.int64)
        for a, k in enumerate(cp_index):
            T = int(log.checkpoint_steps[k])
            for c in range(L):
                h0, h1 = self.hoff[c], self.hoff[c + 1]
                K = int(np.searchsorted(self.step[h0 + 1:h1], T, side="left"))
                live[a, c] = K
                corr_live = int(log.cum_correct_cp[k, c] - self.cumb[h0 + K])
                partial[a, c] = corr_live + (1 if (self.vote_weight == "survival" and K >= 1) else 0)
                cc = np.append(self.correct_full[h0:h0 + K], corr_live)
                longest[a, c] = int(np.argmax(cc))
        return live, partial, longest
