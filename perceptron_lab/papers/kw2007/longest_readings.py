"""Readings of Khardon & Wachman's (2007) longest survivor, scored on MNIST and USPS (Table 7).

Run as ``python -m perceptron_lab.papers.kw2007.longest_readings [--data-dir DIR] [--out CSV]``.
It trains the perceptron once per dataset with the settings of
``configs/kw2007/table7_mnist.yaml`` and ``table7_usps.yaml`` in the "Nothing" column of Table 7
(tau = 0, lambda = 0; the fixed train/test split; the training order of ``training.seed``, one
permutation: the same run as the table's outer unit), then picks the longest survivor from the
training log under each reading below and scores it on the test split. One CSV row per
(dataset, reading): our accuracy, the paper's Table 7 cell (Longest, Nothing: MNIST line 411,
USPS line 403 of the paper's text) and the difference.

The readings (line numbers refer to ``khardon-wachman-2007-noise-tolerant-perceptron.txt``):

``a_figure2``
    Figure 2 (lines 140-170) literally, per label (§2.7, line 118: one classifier per label,
    trained "in parallel"): ``tally`` counts the label's correct predictions since its last
    update, every update resets it, and ``if (tally > best_tally)`` pockets the current
    hypothesis ``(w_k, theta_k)``: the first hypothesis to reach the longest run, the final
    hypothesis's run included (the test happens on every correct prediction). This is the
    engine's ``longest`` rule; the script asserts that both pick the same hypotheses and make
    the same test errors.
``b_shared``
    One pocket for the whole multiclass learner: the hypothesis is the tuple of the labels'
    current vectors, it changes whenever any label updates, and it survives an example only when
    no label updates on it (every binary prediction correct). Departs from §2.7 (line 118),
    which trains the labels as separate classifiers; Figure 2 is written for one binary one.
``c_final_theta``
    Per label, Figure 2's pocketed vector ``w_l.s.`` with the label's final threshold
    ``theta_k`` instead of ``theta_l.s.``. Departs from Figure 2's prediction
    ``sign(<w_l.s., x> - theta_l.s.)`` (line 158).
``d_theta_init``
    Per label, ``w_l.s.`` with ``theta_Init`` (Figure 2's initialisation
    ``theta_l.s. <- theta_Init``, line 143, never overwritten): the pocket's threshold not kept.
``e_ties_later``
    Per label, as (a) but ``tally >= best_tally``: of hypotheses with equally long runs the
    later one is kept. Departs from the strict ``>`` of Figure 2 (line 153).
``f_closed_runs``
    Per label, a run is compared with the best only when it ends, at an update: the final
    hypothesis's run, still open when training stops, never counts. This is the pocket of
    Gallant (1990), cited at line 107, and the bookkeeping line 109 describes for the votes
    ("Whenever an example is misclassified, ... records the number of correct classifications
    made since the previous misclassification"); Figure 2 instead compares on every correct
    prediction.
``g_tally_per_epoch``
    Per label, as (a) but the tally restarts at the start of every pass over the data ("for
    every training iteration", line 144): a run cannot span two passes. Departs from Figure 2,
    which sets ``tally <- 0`` once, before the passes (line 143). On MNIST (one pass) it is (a).

Line 107 defines the longest survivor as "the one who made the largest number of correct
predictions during training": without an alpha-bound a hypothesis is replaced at its first
mistake, so its correct predictions are one run and that definition is reading (a).

Each reading returns, per label, the hypothesis index ``k`` (``k`` updates of that label) and the
threshold to use; the weight vector of hypothesis ``k`` is ``sum_{j <= k} coef_j x_j`` over the
label's updates (linear kernel, in the features the engine trained on), and the multiclass
prediction is the argmax of the labels' scores (§2.7), as for the engine's rules.

The pockets are found by one loop over the training steps (:func:`pocket_steps`), written as
Figure 2 is: it needs, per step, whether the label updated, which the log records
(``upd_step``, ``upd_cls``). Without an alpha-bound every prediction that is not correct causes an
update (with tau > 0 too: a score inside the margin predicts 0, which is not correct), so the steps
without an update are the correct predictions; the script checks this against the log's own count
of correct predictions (``upd_cum_correct``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from perceptron_lab.config.load import load_config, with_overrides
from perceptron_lab.engine.base import UNBOUNDED, TrainLog
from perceptron_lab.errors import PlabError
from perceptron_lab.model.hypotheses import Hypotheses
from perceptron_lab.model.predict import RULE_INDEX, evaluate
from perceptron_lab.run.inputs import load_data
from perceptron_lab.run.plan import Unit
from perceptron_lab.run.spec import unit_spec
from perceptron_lab.run.units import train_unit, unit_data, unit_design, unit_kernel
from perceptron_lab.sparse import issparse

HERE = Path(__file__).resolve().parent
CONFIGS = HERE.parents[1] / "configs" / "kw2007"
REFERENCE = HERE / "reference" / "kw2007_table7.csv"
DATASETS = {"mnist": "table7_mnist.yaml", "usps": "table7_usps.yaml"}
#: The "Nothing" column of Table 7: no margin, no lambda-trick.
NOTHING = {"algorithm.tau": 0, "algorithm.lambda": 0}
READINGS = ("a_figure2", "b_shared", "c_final_theta", "d_theta_init", "e_ties_later", "f_closed_runs",
            "g_tally_per_epoch")
#: ``labels_unlike_a``: labels whose hypothesis or threshold differs from reading (a)'s.
#: ``minus_last`` / ``paper_minus_last``: the reading's accuracy minus the same run's last
#: hypothesis (the engine's ``last`` rule), and the paper's Longest minus its Last (Table 7,
#: "Nothing"): the gap between the rules, apart from any offset both rules share.
COLUMNS = ["dataset", "reading", "accuracy_pct", "paper_pct", "diff", "test_errors", "n_test", "labels_unlike_a",
           "minus_last", "paper_minus_last"]


class ReadingError(PlabError):
    """The run does not fit the readings' assumptions (exit status 1: an internal check failed)."""

    exit_code = 1


def pocket_steps(updated: np.ndarray, n: int, ties_later: bool = False, closed_runs: bool = False,
                 reset_each_epoch: bool = False) -> int:
    """The training step at which Figure 2's pocket last took the current hypothesis.

    ``updated[t]`` tells whether the hypothesis changed at step ``t`` (the example of step ``t``
    caused an update); every other step is a correct prediction (``tally <- tally + 1``).
    ``n``: steps per pass over the data. The hypothesis pocketed is the one live at the returned
    step, i.e. the one that had seen the updates of the steps before it (0: the initial one).

    Figure 2: ``tally > best_tally`` on every correct prediction. ``ties_later``: ``>=``.
    ``closed_runs``: the run is compared only when an update ends it. ``reset_each_epoch``:
    ``tally <- 0`` at the start of every pass.
    """
    tally, best, at = 0, 0, 0
    for t, up in enumerate(updated):
        if reset_each_epoch and t % n == 0:
            tally = 0
        if up:
            if closed_runs and tally > best:
                best, at = tally, t
            tally = 0
        else:
            tally += 1
            if not closed_runs and (tally > best or (ties_later and tally == best)):
                best, at = tally, t
    return at


def updated_matrix(log: TrainLog) -> np.ndarray:
    """``U[t, c]``: label ``c`` updated at training step ``t``."""
    U = np.zeros((log.total_steps, log.n_labels), dtype=bool)
    U[log.upd_step, log.upd_cls] = True
    return U


def hypothesis_at(log: TrainLog, c: int, step: int) -> int:
    """Index of label ``c``'s hypothesis live at ``step``: its number of updates before it."""
    return int(np.count_nonzero((log.upd_cls == c) & (log.upd_step < step)))


def threshold(log: TrainLog, c: int, k: int) -> float:
    """``theta_k`` of label ``c`` (``theta_Init`` for ``k = 0``)."""
    if k == 0:
        return float(log.theta_init)
    return float(log.upd_theta[np.flatnonzero(log.upd_cls == c)[k - 1]])


def weight_vector(log: TrainLog, Xtr, c: int, k: int) -> np.ndarray:
    """``w_k`` of label ``c``: the sum of ``coef_j x_j`` over its first ``k`` updates (linear kernel)."""
    u = np.flatnonzero(log.upd_cls == c)[:k]
    rows = Xtr[log.upd_ex[u]]
    rows = rows.toarray() if issparse(rows) else np.asarray(rows, dtype=np.float64)
    return log.upd_coef[u] @ rows


def reading_choices(log: TrainLog, n: int) -> dict:
    """Per reading, per label: (hypothesis index, threshold) of the longest survivor."""
    U = updated_matrix(log)
    L = log.n_labels
    last = [int(np.count_nonzero(log.upd_cls == c)) for c in range(L)]
    out = {}

    def per_label(**opts):
        ks = [hypothesis_at(log, c, pocket_steps(U[:, c], n, **opts)) for c in range(L)]
        return [(k, threshold(log, c, k)) for c, k in enumerate(ks)]

    out["a_figure2"] = per_label()
    shared_at = pocket_steps(U.any(axis=1), n)
    out["b_shared"] = [(k, threshold(log, c, k)) for c, k in
                       enumerate(hypothesis_at(log, c, shared_at) for c in range(L))]
    out["c_final_theta"] = [(k, threshold(log, c, last[c])) for c, (k, _) in enumerate(out["a_figure2"])]
    out["d_theta_init"] = [(k, float(log.theta_init)) for k, _ in out["a_figure2"]]
    out["e_ties_later"] = per_label(ties_later=True)
    out["f_closed_runs"] = per_label(closed_runs=True)
    out["g_tally_per_epoch"] = per_label(reset_each_epoch=True)
    return out


def test_errors(log: TrainLog, Xtr, Xte, yte, choice) -> int:
    """Test errors of the hypotheses ``choice`` (per label: index, threshold); argmax over the
    labels (first label on ties), or for one label column positive when the score is > 0."""
    W = np.stack([weight_vector(log, Xtr, c, k) for c, (k, _) in enumerate(choice)], axis=1)
    theta = np.array([th for _, th in choice])
    S = np.asarray(Xte @ W, dtype=np.float64) - theta[None, :]
    pred = (S[:, 0] > 0).astype(np.int64) if log.n_labels == 1 else np.argmax(S, axis=1)
    return int(np.count_nonzero(pred != np.asarray(yte)))


def check_assumptions(log: TrainLog) -> None:
    """Every step without an update is a correct prediction: before the ``j``-th update of a
    label (``j`` = 0, 1, ...), at step ``t``, the log counts ``t - j`` correct predictions of that
    label, and ``total_steps`` minus its number of updates at the end."""
    for c in range(log.n_labels):
        u = np.flatnonzero(log.upd_cls == c)
        expected = log.upd_step[u] - np.arange(u.size)
        if not np.array_equal(log.upd_cum_correct[u], expected) or \
                int(log.cum_correct_cp[-1, c]) != log.total_steps - u.size:
            raise ReadingError(f"label {c}: the log's counts of correct predictions are not the steps without an "
                               "update; the readings assume no alpha-bound (algorithm.alpha_bound: inf)")


def train_config(cfg, data_dir=None):
    """(log, features of the training and test rows, test labels, kernel, dtype, rule seed) of
    ``cfg``'s run on its fixed train/test split, as its outer unit trains it
    (:func:`perceptron_lab.run.units.run_unit`)."""
    ds = load_data(cfg, data_dir)
    spec = unit_spec(cfg)
    unit = Unit(0, {}, -1, 0, -1)
    Xtr, ytr, Xte, yte = unit_data(spec, ds, unit)
    Xtr, Xte = unit_design(spec, Xtr, Xte)
    dtype, kernel = unit_kernel(spec, Xtr)
    if kernel.name != "linear":
        raise ReadingError(f"{cfg.source}: the readings build weight vectors and need kernel.type: linear, "
                           f"got {kernel.name}")
    data = (kernel.features(Xtr), ytr, kernel.features(Xte), yte, dtype, kernel)
    log, rule_seed = train_unit(spec, ds, unit, data)
    return log, data[0], data[2], yte, kernel, dtype, rule_seed


def score_readings(cfg, log, Xtr, Xte, yte, kernel, dtype, rule_seed) -> dict:
    """(test errors, chosen hypotheses) of every reading (dicts by reading; the errors also of
    the engine's ``last`` rule, key ``"last"``); reading (a) checked against the engine's
    ``longest`` rule (same hypotheses, same test errors)."""
    if log.total_steps != log.checkpoint_steps[-1]:
        raise ReadingError(f"{cfg.source}: the log's last checkpoint is not its end of training")
    if cfg.algorithm.alpha_bound not in (float("inf"), None, UNBOUNDED):
        raise ReadingError(f"{cfg.source}: the readings assume no alpha-bound; set algorithm.alpha_bound: inf")
    check_assumptions(log)
    choices = reading_choices(log, log.n_train)
    hyp = Hypotheses(log, cfg.prediction.vote_weight)
    _, _, engine_longest = hyp.at_checkpoints([log.checkpoint_steps.size - 1])
    mine = [k for k, _ in choices["a_figure2"]]
    if mine != engine_longest[0].tolist():
        raise ReadingError(f"{cfg.source}: Figure 2's pocket picks hypotheses {mine}, the engine's longest rule "
                           f"{engine_longest[0].tolist()}")
    err_m, _ = evaluate(log, kernel, Xtr, Xte, yte, log.n_labels == 1, vote_weight=cfg.prediction.vote_weight,
                        seed=rule_seed, dtype=dtype, rules=["last", "longest"])
    engine_errors = int(err_m[-1, RULE_INDEX["longest"]])
    errors = {r: test_errors(log, Xtr, Xte, yte, choices[r]) for r in READINGS}
    if errors["a_figure2"] != engine_errors:
        raise ReadingError(f"{cfg.source}: Figure 2's pocket makes {errors['a_figure2']} test errors, the engine's "
                           f"longest rule {engine_errors}")
    errors["last"] = int(err_m[-1, RULE_INDEX["last"]])
    return errors, choices


def paper_value(dataset: str, algorithm: str = "Longest") -> float:
    """The paper's Table 7 accuracy (%) of ``algorithm`` (the row: Last, Longest, Voted) without
    parameters ("Nothing") on ``dataset``, from the reference CSV."""
    ref = pd.read_csv(REFERENCE)
    row = ref[(ref.dataset == dataset) & (ref.kernel == "linear") & (ref.algorithm == algorithm)
              & (ref.variant_column == "Nothing")]
    if len(row) != 1:
        raise ReadingError(f"{REFERENCE}: expected one {algorithm} / Nothing row for {dataset}, found {len(row)}")
    return float(row.value.iloc[0])


def run(data_dir=None, datasets=tuple(DATASETS)) -> pd.DataFrame:
    """Train each of ``datasets`` (names of :data:`DATASETS`) once and score every reading.

    Returns
    -------
    pandas.DataFrame
        One row per (dataset, reading), columns :data:`COLUMNS`; ``diff`` is ours minus the paper's.
    """
    rows = []
    for name in datasets:
        cfg = with_overrides(load_config(CONFIGS / DATASETS[name]), NOTHING)
        log, Xtr, Xte, yte, kernel, dtype, rule_seed = train_config(cfg, data_dir)
        errors, choices = score_readings(cfg, log, Xtr, Xte, yte, kernel, dtype, rule_seed)
        paper = paper_value(name)
        paper_gap = round(paper - paper_value(name, "Last"), 2)
        last = 100.0 * (1.0 - errors["last"] / len(yte))
        for r in READINGS:
            acc = round(100.0 * (1.0 - errors[r] / len(yte)), 2)
            unlike = sum(a != b for a, b in zip(choices[r], choices["a_figure2"]))
            rows.append([name, r, acc, paper, round(acc - paper, 2), errors[r], len(yte), unlike,
                         round(acc - last, 2), paper_gap])
    return pd.DataFrame(rows, columns=COLUMNS)


def main(argv=None) -> int:
    """Command line: write the CSV and print it; on a :class:`~perceptron_lab.errors.PlabError`
    one ``plab: error:`` line and its exit status, nothing written."""
    ap = argparse.ArgumentParser(prog="python -m perceptron_lab.papers.kw2007.longest_readings",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=None, help="datasets folder (default: $PLAB_DATA)")
    ap.add_argument("--out", default="results/kw2007/longest_readings.csv", help="CSV to write")
    args = ap.parse_args(argv)
    try:
        df = run(args.data_dir or os.environ.get("PLAB_DATA"))
    except PlabError as exc:
        print(f"plab: error: {exc}", file=sys.stderr)
        return exc.exit_code
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False)
    print(df.to_string(index=False))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
