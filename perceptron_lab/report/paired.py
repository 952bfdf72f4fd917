"""Is learner A better than learner B on the same test sets? Paired tests whose assumptions hold
under plab's protocols, and the verdict they allow.

``plab compare --paired`` (two runs, or two grid points of one run) and ``--rules X,Y`` (two rules
of the same units) pair the test errors of the same fold and training order. Which interval is
valid depends on how the test sets were drawn:

**k-fold cross-validation** (``evaluation.mode: kfold``, and nested with ``outer: kfold``): the
folds' test sets are disjoint, but their training sets overlap (each pair of folds shares
``(K - 2) / (K - 1)`` of its training examples), so the differences ``d_k`` of the K folds are
positively correlated and the plain t-interval over them, ``sd / sqrt(K)``, is too narrow
(Dietterich 1998; Nadeau & Bengio 2003). :func:`corrected_t` is Nadeau & Bengio's corrected
resampled t (Machine Learning 52:239-281, 2003, eq. 12 / §4): the variance of the mean
difference is taken as ``(1/J + n_test/n_train) * s^2`` instead of ``s^2 / J``, with J the number
of paired differences, ``s^2`` their sample variance and ``n_test/n_train`` the ratio of a test
set's size to a training set's (``1 / (K - 1)`` for K folds of one data set), and Student's t
with ``J - 1`` degrees of freedom. The correction assumes the correlation between two
differences is ``n_test / (n_test + n_train)``; it is a heuristic, and its calibration under
plab's protocols is measured by :mod:`perceptron_lab.report.paired_calibration`.

*Training orders* (``training.permutations``) do not draw new folds: the P orders of fold k train
on the same examples and test on the same examples, so they are not further resamples of the
data. Each fold's P differences are averaged first (:func:`fold_means`), and the corrected t runs
over the J = K fold means. (Bouckaert & Frank's corrected *repeated* CV, J = K·R with
``1/(K R) + n_test/n_train``, is for R repetitions with re-drawn folds; applied to orders over the
same folds it would count P copies of each fold's test set as independent evidence.)

**One fixed test set** (``mode: holdout``, nested with ``outer: holdout``): every order tests on
the same n examples, so the spread over orders says nothing about the test examples' sampling.
The valid paired test compares the two sides' predictions example by example (McNemar's test),
but the run store keeps per-unit error rates, not per-example predictions. :func:`holdout_bound`
uses what the error rates do allow: for one test example, the difference of the two sides'
0/1 losses (averaged over the orders) z has ``E[z^2] <= E|z| <= min(e_A + e_B, 2 - e_A - e_B)``,
so ``Var(mean z) <= (min(e_A + e_B, 2 - e_A - e_B) - d^2) / n``: the largest variance the two
error rates allow, as if the two sides disagreed on as many examples as they can. The interval
(normal approximation) is conservative: wider than McNemar's, never narrower.

A verdict names the lower side only when the interval excludes 0; an interval containing 0 is
"no difference shown", which is not evidence that the two are equal. No verdict is given
(:data:`NO_VERDICT`) with fewer than :data:`MIN_FOLDS` folds, with fewer than
:data:`MIN_TEST_EXAMPLES` test examples, when the differences have no spread to estimate, or when
the sizes the correction needs are unknown.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

#: Confidence of the paired intervals unless asked otherwise.
PAIRED_CONFIDENCE = 0.95
#: Fewest folds (paired differences) the corrected t calls a winner with: one fold leaves no spread
#: to estimate. With 2 folds the interval is valid but wide (one degree of freedom: 12.7 at 95%);
#: the calibration study (:mod:`perceptron_lab.report.paired_calibration`) measures the rate at
#: K = 2, 3, 5 and 10.
MIN_FOLDS = 2
#: Fewest test examples the holdout bound calls a winner with (its interval is a normal
#: approximation to a mean of n bounded losses).
MIN_TEST_EXAMPLES = 30
#: The method names in the table (the ``method`` column).
CORRECTED_T = "corrected t"
HOLDOUT_BOUND = "holdout bound"
PLAIN_T = "plain t"
#: The start of every verdict that calls no winner for want of what the test needs.
NO_VERDICT = "no verdict"
NO_DIFFERENCE = "no difference shown"


def fold_means(d: pd.Series) -> pd.Series:
    """The paired differences of a (fold, permutation) index averaged over the permutations of each
    fold: one value per fold (the orders of a fold share its training and test examples)."""
    return d.groupby(level="fold").mean()


def _result(method: str, n: int, diff: float | None, se: float | None, q: float | None, why: str | None) -> dict:
    lo = hi = None
    if why is None and se is not None and q is not None:
        lo, hi = diff - q * se, diff + q * se
    return {"method": method, "n": n, "diff": diff, "se": se, "lo": lo, "hi": hi, "why": why}


def corrected_t(d, test_train_ratio: float | None, confidence: float = PAIRED_CONFIDENCE,
                min_folds: int = MIN_FOLDS) -> dict:
    """Nadeau & Bengio's corrected resampled t-interval of the mean of the J paired differences
    ``d`` (one per fold): ``mean ± t_{J-1, (1+confidence)/2} * sqrt((1/J + test_train_ratio) * s^2)``.

    Returns a dict: ``method``, ``n`` (J), ``diff`` (the mean), ``se`` (the corrected standard
    error), ``lo``, ``hi`` and ``why``: None, or why no interval is given (fewer than ``min_folds``
    differences, no spread, or an unknown ``test_train_ratio``); ``lo`` and ``hi`` are then None."""
    from perceptron_lab.run.evaluation import t_quantile

    d = np.asarray(d, dtype=float)
    J = int(d.size)
    diff = float(d.mean()) if J else None
    if J < max(2, min_folds):
        return _result(CORRECTED_T, J, diff, None, None, f"{J} fold{'s' if J != 1 else ''}, fewer than "
                                                          f"{max(2, min_folds)}")
    s2 = float(d.var(ddof=1))
    if test_train_ratio is None or not test_train_ratio > 0:
        return _result(CORRECTED_T, J, diff, None, None, "the sizes of the test and training sets are unknown")
    se = math.sqrt((1.0 / J + test_train_ratio) * s2)
    if se == 0.0 and diff != 0.0:
        return _result(CORRECTED_T, J, diff, 0.0, None, "the difference is the same on every fold, so its spread "
                                                         "cannot be estimated")
    return _result(CORRECTED_T, J, diff, se, t_quantile((1.0 + confidence) / 2.0, J - 1), None)


def plain_t(d, confidence: float = PAIRED_CONFIDENCE) -> dict:
    """The plain paired t-interval ``mean ± t_{n-1} sd / sqrt(n)`` over the values ``d`` as if they
    were independent: what ``plab compare`` printed over (fold, permutation) pairs before the
    corrected test. Kept for the calibration study only (it is too narrow under cross-validation)."""
    from perceptron_lab.run.evaluation import t_quantile

    d = np.asarray(d, dtype=float)
    n = int(d.size)
    diff = float(d.mean()) if n else None
    if n < 2:
        return _result(PLAIN_T, n, diff, None, None, f"{n} value")
    se = float(d.std(ddof=1)) / math.sqrt(n)
    return _result(PLAIN_T, n, diff, se, t_quantile((1.0 + confidence) / 2.0, n - 1), None)


def holdout_bound(err_a: float, err_b: float, n_test: int | None, confidence: float = PAIRED_CONFIDENCE,
                  min_examples: int = MIN_TEST_EXAMPLES) -> dict:
    """The interval of the difference of two test errors (in %) measured on the same ``n_test``
    examples, without their per-example predictions: ``d ± z_{(1+confidence)/2} * se`` with
    ``se = 100 * sqrt((min(e_A + e_B, 2 - e_A - e_B) - d^2) / n_test)`` (errors as fractions), the
    largest standard error the two error rates allow (see the module docstring). ``err_a`` and
    ``err_b`` are the mean test errors (%) over the orders both sides have. Same keys as
    :func:`corrected_t`, ``n`` being ``n_test``."""
    from scipy.special import ndtri

    diff = float(err_a - err_b)
    if not n_test:
        return _result(HOLDOUT_BOUND, 0, diff, None, None, "the size of the test set is unknown (run.json records "
                                                          "none)")
    if n_test < min_examples:
        return _result(HOLDOUT_BOUND, int(n_test), diff, None, None, f"{n_test} test examples, fewer than "
                                                                     f"{min_examples}")
    ea, eb, d = err_a / 100.0, err_b / 100.0, diff / 100.0
    var = max(0.0, min(ea + eb, 2.0 - ea - eb) - d * d) / n_test
    se = 100.0 * math.sqrt(var)
    return _result(HOLDOUT_BOUND, int(n_test), diff, se, float(ndtri((1.0 + confidence) / 2.0)), None)


def verdict(r: dict, a: str, b: str) -> str:
    """``"<a> lower"`` or ``"<b> lower"`` when the interval excludes 0 (a the first side of the
    difference a - b), :data:`NO_DIFFERENCE` when it contains 0, ``"no verdict: <why>"`` when there
    is no interval."""
    if r["why"] is not None or r["lo"] is None:
        return f"{NO_VERDICT}: {r['why'] or 'no interval'}"
    if r["hi"] < 0:
        return f"{a} lower"
    if r["lo"] > 0:
        return f"{b} lower"
    return NO_DIFFERENCE


def declared_different(r: dict) -> bool:
    """Whether the interval calls a winner (excludes 0)."""
    return r["why"] is None and r["lo"] is not None and (r["hi"] < 0 or r["lo"] > 0)


__all__ = ["PAIRED_CONFIDENCE", "MIN_FOLDS", "MIN_TEST_EXAMPLES", "fold_means", "corrected_t", "plain_t",
           "holdout_bound", "verdict", "declared_different"]
