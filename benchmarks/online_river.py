"""The online classes against River, per example, in one invocation.

``python -m benchmarks.online_river`` streams River's own data sets (Phishing, which ships with
River, and ``synth.SEA``) through plab's *online classes* (:mod:`perceptron_lab.estimators.online`:
``KernelPerceptron(kernel="linear")``, which runs in primal form, and ``ALMA``) and through River's
``linear_model.Perceptron`` and ``ALMAClassifier``, progressive validation style
(``predict_one`` then ``learn_one`` on every example), and writes
``results/bench/online_river.csv``: microseconds per example and the ratio to River's peer.

These rows are the online classes, one example per call from Python. The other cases of ``make
bench`` measure the *batch engine* (``plab run`` and the scikit-learn estimators, a whole training
set per call), whose costs are not comparable per example.

Each side is timed in the same process, interleaved, ``REPEATS`` times; the fastest pass counts
(the others absorb the load of a shared machine), and the ratio is taken between passes of the same
round. Both sides see the same dicts in the same order; both fit an intercept (River's linear
models do by default; plab's ``fit_intercept=True``). Progressive accuracy is reported beside the
time so that a fast wrong side shows.
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
#: Timed passes over each stream per side.
REPEATS = 5
#: Examples of synth.SEA streamed (it is generated on the fly; Phishing is used whole).
SEA_EXAMPLES = 5000


def _streams():
    from river import datasets
    from river.datasets import synth

    yield "Phishing", list(datasets.Phishing())
    yield "synth.SEA", list(itertools.islice(synth.SEA(seed=42), SEA_EXAMPLES))


def _pairs():
    from river import linear_model

    from perceptron_lab.estimators import online

    yield ("plab KernelPerceptron(kernel='linear')", lambda: online.KernelPerceptron(kernel="linear"),
           "river Perceptron", lambda: linear_model.Perceptron())
    yield ("plab ALMA", lambda: online.ALMA(alpha=0.9),
           "river ALMAClassifier", lambda: linear_model.ALMAClassifier(alpha=0.9))


def _pass(make, data) -> tuple[float, float]:
    """(seconds, progressive accuracy) of one pass: predict_one, then learn_one, per example."""
    model, right = make(), 0
    t0 = time.perf_counter()
    for x, y in data:
        right += model.predict_one(x) == y
        model.learn_one(x, y)
    return time.perf_counter() - t0, right / len(data)


def measure(repeats: int = REPEATS) -> pd.DataFrame:
    rows = []
    for name, data in _streams():
        for ours, make_ours, theirs, make_theirs in _pairs():
            _pass(make_ours, data[:200])  # compile / load the jitted steps: untimed
            t_ours, t_theirs, ratios = [], [], []
            for _ in range(repeats):
                a, acc_ours = _pass(make_ours, data)
                b, acc_theirs = _pass(make_theirs, data)
                t_ours.append(a)
                t_theirs.append(b)
                ratios.append(a / b)
            n = len(data)
            for tool, secs, acc in ((ours, t_ours, acc_ours), (theirs, t_theirs, acc_theirs)):
                rows.append({"stream": name, "examples": n, "side": "online class", "tool": tool,
                             "us_per_example": round(min(secs) / n * 1e6, 2), "progressive_accuracy": round(acc, 4),
                             "ratio_to_river": round(min(ratios), 3) if tool == ours else 1.0,
                             "ratio_median": round(sorted(ratios)[len(ratios) // 2], 3) if tool == ours else 1.0})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "online_river.csv"))
    ap.add_argument("--repeats", type=int, default=REPEATS)
    args = ap.parse_args(argv)
    df = measure(args.repeats)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out, index=False)
    print(df.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
