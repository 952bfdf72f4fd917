"""How often the paired tests of ``plab compare`` call a winner when there is none: their
calibration, measured by simulation (as Dietterich 1998 and Nadeau & Bengio 2003, §5, measure it).

Each simulation draws a fresh data set from one population: labels ``y = ±1`` with probability
1/2, features ``x = MU * y * 1 + N(0, I)`` in two blocks of :data:`FEATURES`. The learner is the
perceptron (one epoch, last hypothesis); A and B are paired as ``plab compare --paired`` pairs
them (the same folds, and the same training order where the null allows). Three nulls
(:func:`_pair`):

* ``feature blocks`` -- A reads the first block, B the second. The blocks are exchangeable, so A
  and B have the same expected error at every training-set size, but on one data set one of them
  is luckier, on overlapping training sets alike: the correlation between folds that
  cross-validation induces arises by itself, it is not imposed. This is the null a
  cross-validated comparison asks about (Nadeau & Bengio's).
* ``two seeds`` -- A and B are the same perceptron in independent training orders.
* ``two views`` -- one perceptron per order, trained on the first block; A predicts a test example
  from its first block, B from its second. The two classifiers have the same error on the
  population and err on different examples: the null of a comparison on one test set
  (McNemar's), which is about the trained classifiers, not about other training sets.

The data set is evaluated as plab's protocols do, and a test declares A and B different when its
interval excludes 0:

* ``kfold``: K folds of :data:`N` examples, P training orders per fold. *Before*: the plain
  t-interval over the K x P (fold, order) differences, as ``plab compare`` printed it until this
  study (:func:`perceptron_lab.report.paired.plain_t`). *Now*: the corrected resampled t over the
  K fold means (:func:`perceptron_lab.report.paired.corrected_t`, ``n_test/n_train = 1/(K-1)``).
* ``holdout``: :data:`N_TRAIN` training and :data:`N_TEST` test examples, P orders. *Before*: the
  plain t over the P orders' differences (none with one order). *Now*:
  :func:`perceptron_lab.report.paired.holdout_bound`.

The perceptron runs in numpy on every simulation at once (the tests are statistics of the paired
errors; which implementation of the perceptron produced them does not enter them), so thousands
of simulations take seconds. Every simulation is seeded (:data:`SEED` and the design).
:func:`engine_null` adds the ``two seeds`` null on plab's own engine and data (:data:`ENGINE`:
sonar, one run with a grid over ``training.seed``), each pair of seeds compared by
``plab compare --paired``'s own code, per rule.

``python -m perceptron_lab.report.paired_calibration`` runs :data:`DESIGNS` with :data:`SIMS`
simulations each and writes ``results/compare/calibration.csv`` (a row per design and test: the
simulations, how many were declared different, the rate and its 95% Clopper-Pearson interval,
in %) and ``results/compare/calibration.png``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from perceptron_lab.report.paired import PAIRED_CONFIDENCE, corrected_t, declared_different, holdout_bound, plain_t

#: Simulations per design in the study (the rate's 95% interval is about ±0.7 points at 5%).
SIMS = 4000
SEED = 20030
#: Features each learner sees, and the per-feature class separation (Bayes error
#: Phi(-MU sqrt(FEATURES)) = 18.6% for each learner).
FEATURES = 5
MU = 0.4
#: Examples of a cross-validated data set; training and test examples of a holdout data set.
N = 100
N_TRAIN = 100
N_TEST = 100

#: (name, protocol, folds K, training orders P, null) of each design; the nulls are described in
#: :func:`_pair`: ``blocks`` is the null of a cross-validated comparison (equal expected error over
#: data sets), ``views`` that of one test set (equal error of the two trained classifiers, which
#: err on different examples: McNemar's null), ``orders`` the same learner under two seeds.
DESIGNS = (
    ("10-fold, 1 order, feature blocks", "kfold", 10, 1, "blocks"),
    ("10-fold, 5 orders, feature blocks", "kfold", 10, 5, "blocks"),
    ("5-fold, 1 order, feature blocks", "kfold", 5, 1, "blocks"),
    ("3-fold, 5 orders, feature blocks", "kfold", 3, 5, "blocks"),
    ("2-fold, 1 order, feature blocks", "kfold", 2, 1, "blocks"),
    ("10-fold, 5 orders, two seeds", "kfold", 10, 5, "orders"),
    ("holdout, 1 order, two views", "holdout", 1, 1, "views"),
    ("holdout, 5 orders, two views", "holdout", 1, 5, "views"),
    ("holdout, 5 orders, two seeds", "holdout", 1, 5, "orders"),
)

OUT = Path("results") / "compare"


def _draw(rng, sims: int, n: int):
    y = rng.choice(np.array([-1.0, 1.0]), size=(sims, n))
    x = MU * y[:, :, None] + rng.standard_normal((sims, n, 2 * FEATURES))
    return x, y


def _train(xs, y, rows, blocks) -> np.ndarray:
    """One perceptron epoch over the examples ``rows`` (in that order) per simulation and per
    learner, learner j reading the feature block ``blocks[j]``: weights (sims, learners, FEATURES)
    of the last hypothesis."""
    sims = xs.shape[0]
    w = np.zeros((sims, len(blocks), FEATURES))
    for i in rows:
        xi, yi = xs[:, i][:, blocks], y[:, i, None]
        wrong = yi * np.einsum("sbf,sbf->sb", w, xi) <= 0
        w += (wrong * yi)[:, :, None] * xi
    return w


def _errors(w, xs, y, test, blocks) -> np.ndarray:
    """Test error (%) of each learner's weights on its feature block of the ``test`` examples."""
    scores = np.einsum("sbf,stbf->stb", w, xs[:, test][:, :, blocks])
    return (y[:, test, None] * scores <= 0).mean(axis=1) * 100.0


def _pair(rng, xs, y, train, test, null: str) -> np.ndarray:
    """The test errors (%) of A and B, shape (sims, 2), on one split and one training order, for
    the null ``blocks`` (A and B read exchangeable feature blocks, same order), ``orders`` (the
    same learner in two independent orders) or ``views`` (one perceptron trained on block 0, A
    predicting from a test example's block 0 and B from its block 1)."""
    order = train[rng.permutation(train.size)]
    if null == "blocks":
        return _errors(_train(xs, y, order, [0, 1]), xs, y, test, [0, 1])
    if null == "orders":
        other = train[rng.permutation(train.size)]
        wa, wb = _train(xs, y, order, [0]), _train(xs, y, other, [0])
        return _errors(np.concatenate([wa, wb], axis=1), xs, y, test, [0, 0])
    if null == "views":
        w = _train(xs, y, order, [0])
        return _errors(np.concatenate([w, w], axis=1), xs, y, test, [0, 1])
    raise ValueError(f"unknown null {null!r}")


def simulate(protocol: str, folds: int, orders: int, null: str, sims: int, seed: int,
             confidence: float = PAIRED_CONFIDENCE) -> pd.DataFrame:
    """``sims`` simulations of one design: a row each with the mean difference A - B and whether
    the test of before (``before``: the plain t over every pair) and the test of now (``now``)
    declared A and B different."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, folds, orders, protocol == "holdout",
                                                        ("blocks", "orders", "views").index(null)]))
    if protocol == "kfold":
        x, y = _draw(rng, sims, N)
        xs = x.reshape(sims, N, 2, FEATURES)
        parts = np.array_split(rng.permutation(N), folds)
        d = np.empty((sims, folds, orders))
        for k in range(folds):
            train = np.sort(np.concatenate(parts[:k] + parts[k + 1:]))
            for p in range(orders):
                e = _pair(rng, xs, y, train, parts[k], null)
                d[:, k, p] = e[:, 0] - e[:, 1]
        ratio = (N / folds) / (N - N / folds)
        before = [declared_different(plain_t(row.ravel(), confidence)) for row in d]
        now = [declared_different(corrected_t(row.mean(axis=1), ratio, confidence)) for row in d]
        diff = d.mean(axis=(1, 2))
    elif protocol == "holdout":
        x, y = _draw(rng, sims, N_TRAIN + N_TEST)
        xs = x.reshape(sims, N_TRAIN + N_TEST, 2, FEATURES)
        train, test = np.arange(N_TRAIN), np.arange(N_TRAIN, N_TRAIN + N_TEST)
        e = np.stack([_pair(rng, xs, y, train, test, null) for _ in range(orders)], axis=1)
        ea, eb = e[:, :, 0], e[:, :, 1]
        before = [declared_different(plain_t(a - b, confidence)) for a, b in zip(ea, eb)]
        now = [declared_different(holdout_bound(a.mean(), b.mean(), N_TEST, confidence)) for a, b in zip(ea, eb)]
        diff = (ea - eb).mean(axis=1)
    else:
        raise ValueError(f"unknown protocol {protocol!r}")
    return pd.DataFrame({"diff": diff, "before": before, "now": now})


#: The null on plab's own engine and data: (dataset, folds, training orders, seeds). One run with a
#: grid over ``training.seed``; grid points 2i and 2i+1 (the same perceptron, other training
#: orders) are one comparison, made by ``plab compare --paired``'s own code.
ENGINE = ("sonar", 10, 3, 1000)


def engine_null(seeds: int | None = None, confidence: float = PAIRED_CONFIDENCE) -> pd.DataFrame:
    """The ``two seeds`` null on real runs (:data:`ENGINE`): a row per (pair of grid points, rule)
    with whether the plain t over every (fold, order) pair (``before``) and the test of
    :func:`perceptron_lab.report.compare.paired_runs` (``now``) declared the two different."""
    import tempfile

    from perceptron_lab.config.load import config_from_dict
    from perceptron_lab.report.compare import _columns, _errors, paired_runs
    from perceptron_lab.run.experiment import run_experiment

    data, folds, orders, n = ENGINE
    n = n if seeds is None else seeds
    cfg = config_from_dict({"name": "paired_null", "dataset": {"name": data}, "algorithm": {"eta": 1.0},
                            "training": {"epochs": 1, "permutations": orders},
                            "prediction": {"rules": ["vote", "last"]},
                            "evaluation": {"mode": "kfold", "folds": folds, "grid": {"training.seed": list(range(n))}},
                            "output": {"figures": False}})
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        run_experiment(cfg, Path(tmp) / "run", progress=False)
        cols = _columns([Path(tmp) / "run"])
        for i in range(0, len(cols) - 1, 2):
            table = paired_runs([cols[i], cols[i + 1]], confidence).set_index("rule")
            for rule in ("vote", "last"):
                d = _errors(cols[i], rule) - _errors(cols[i + 1], rule)
                rows.append({"pair": i // 2, "rule": rule, "before": declared_different(plain_t(d, confidence)),
                             "now": not table.loc[rule, "verdict"].startswith(("no ",))})
    return pd.DataFrame(rows)


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a binomial proportion k / n."""
    from scipy.special import betaincinv

    a = (1.0 - confidence) / 2.0
    lo = 0.0 if k == 0 else float(betaincinv(k, n - k + 1, a))
    hi = 1.0 if k == n else float(betaincinv(k + 1, n - k, 1.0 - a))
    return lo, hi


def rates(designs=None, sims: int = SIMS, seed: int = SEED, confidence: float = PAIRED_CONFIDENCE,
          engine: bool = False) -> pd.DataFrame:
    """A row per design (default :data:`DESIGNS`) and test (``before``, ``now``): simulations,
    declared different, the rate (%) and its 95% Clopper-Pearson interval (%), the nominal rate (%).
    ``engine`` adds the rows of :func:`engine_null` (one per rule, a simulation per pair of seeds)."""
    rows = []
    for name, protocol, folds, orders, null in (DESIGNS if designs is None else designs):
        sim = simulate(protocol, folds, orders, null, sims, seed, confidence)
        rows += _rows(name, protocol, folds, orders, null, sim, confidence)
    if engine:
        data, folds, orders, _ = ENGINE
        sim = engine_null(confidence=confidence)
        for rule in ("vote", "last"):
            rows += _rows(f"{data}, plab, {folds}-fold, {orders} orders, two seeds, {rule}", "kfold", folds, orders,
                          "orders", sim[sim["rule"] == rule], confidence)
    return pd.DataFrame(rows)


def _rows(name, protocol, folds, orders, null, sim, confidence) -> list[dict]:
    rows = []
    for test in ("before", "now"):
        k, n = int(sim[test].sum()), len(sim)
        lo, hi = clopper_pearson(k, n)
        rows.append({"design": name, "protocol": protocol, "folds": folds, "orders": orders, "null": null,
                     "test": test, "method": _method(protocol, test), "simulations": n, "declared_different": k,
                     "rate_pct": 100.0 * k / n, "ci_low_pct": 100.0 * lo, "ci_high_pct": 100.0 * hi,
                     "nominal_pct": 100.0 * (1.0 - confidence)})
    return rows


def _method(protocol: str, test: str) -> str:
    if test == "before":
        return "plain t over every (fold, order) pair"
    return "corrected resampled t over fold means" if protocol == "kfold" else "holdout bound"


def plot(table: pd.DataFrame, out) -> Path:
    """The rates with their 95% intervals, before and now, a row per design, the nominal rate as a
    vertical line."""
    from perceptron_lab.run.figures import _figure, save_figure, suptitle

    designs = list(dict.fromkeys(table["design"]))
    fig = _figure(10.0, 0.55 * len(designs) + 1.8)
    ax = fig.subplots()
    ypos = {d: i for i, d in enumerate(designs)}
    for test, dy, color, marker, label in (("before", 0.15, "C3", "s", "before: plain t over every pair"),
                                           ("now", -0.15, "C0", "o", "now: corrected t (k-fold), bound (holdout)")):
        t = table[table["test"] == test]
        y = [ypos[d] + dy for d in t["design"]]
        ax.errorbar(t["rate_pct"], y, xerr=[t["rate_pct"] - t["ci_low_pct"], t["ci_high_pct"] - t["rate_pct"]],
                    fmt=marker, color=color, ms=5, capsize=3, lw=1.2, label=label)
    nominal = float(table["nominal_pct"].iloc[0])
    ax.axvline(nominal, color="k", lw=0.8, ls="--", label=f"nominal {nominal:g}%")
    ax.set_yticks(range(len(designs)), designs)
    ax.invert_yaxis()
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(0, 100)
    ax.set_xticks([0, 1, 2, 5, 10, 20, 50, 100], ["0", "1", "2", "5", "10", "20", "50", "100"])
    ax.set_xlabel("declared different where A and B do not differ (% of simulations, 95% interval)")
    ax.grid(True, axis="x", alpha=0.3, lw=0.5)
    fig.legend(loc="outside lower center", fontsize="small", frameon=False, ncol=2)
    sims = table.loc[table["null"] != "orders", "simulations"]
    n = int(sims.iloc[0]) if len(sims) else int(table["simulations"].iloc[0])
    engine = table[table["design"].str.contains(", plab, ")]
    suptitle(fig, f"plab compare --paired and --rules: how often a winner is called where there is none "
                  f"({n} simulated data sets per design"
                  + (f"; {int(engine['simulations'].iloc[0])} pairs of seeds of plab's own runs on sonar"
                     if len(engine) else "")
                  + f"). Feature blocks: A and B read exchangeable features (N = {N}); two seeds: one learner, "
                    "two training orders; two views: one trained perceptron scored on two exchangeable views of "
                    "each test example. Before, holdout with one order: no interval")
    out = Path(out)
    save_figure(fig, out)
    return out


def main(out_dir=OUT, sims: int = SIMS, engine: bool = True) -> tuple[Path, Path]:
    """Run the study (with ``engine``, the real runs of :func:`engine_null` too) and write
    ``calibration.csv`` and ``calibration.png`` into ``out_dir``."""
    from perceptron_lab.run.store import atomic_write_text

    table = rates(sims=sims, engine=engine)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv = out_dir / "calibration.csv"
    atomic_write_text(csv, table.to_csv(index=False, lineterminator="\n", float_format="%.6g"))
    png = plot(table, out_dir / "calibration.png")
    with pd.option_context("display.width", 200, "display.max_columns", None):
        print(table[["design", "test", "simulations", "declared_different", "rate_pct", "ci_low_pct",
                     "ci_high_pct"]].to_string(index=False))
    return csv, png


if __name__ == "__main__":  # pragma: no cover
    main()
