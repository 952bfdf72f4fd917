"""SVM baselines of Khardon & Wachman (2007), Table 6, with scikit-learn's libsvm.

The paper ran SVMlight "with several values for the constants controlling the soft margin" and
reports the best value of each grid (parameter search, i.e. an upper bound on SVM's accuracy):

* **L1 soft margin**: ``min 1/2 |w|^2 + C sum_i xi_i``, C in {1e-5, ..., 1e4} (SVMlight's ``-c``).
  This is libsvm's C-SVC (:class:`sklearn.svm.SVC`).
* **L2 soft margin**: ``min 1/2 |w|^2 + C/2 sum_i xi_i^2``, listed by ``lambda`` in {1e-4, ..., 1e3}.
  Its dual is the hard-margin dual with the kernel ``K + lambda I`` and ``lambda = 1/C``
  (Cristianini & Shawe-Taylor 2000, §6.1.2), and the decision function on a new point uses ``K``
  itself (a new point is never one of the training points). We solve it as C-SVC on the
  precomputed matrix ``K + lambda I`` with a box bound ``C_box`` large enough never to bind
  (checked after the fit, and raised until it holds), which is then the hard-margin solution.

Both use the linear kernel on the same features as the perceptron runs (no scaling), and the same
outer folds as the perceptron's cross-validation, so the columns of Table 6 are comparable.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

#: SVMlight ``-c`` values of the L1 soft margin (Khardon & Wachman §3.4).
L1_C_GRID = tuple(10.0 ** k for k in range(-5, 5))
#: ``lambda`` values of the L2 soft margin (the diagonal added to the kernel matrix).
L2_LAMBDA_GRID = tuple(10.0 ** k for k in range(-4, 4))
#: libsvm stopping tolerance (its default) and iteration cap per fit. On raw (unscaled) UCI
#: features the large-C fits are badly conditioned: on bupa, C >= 10 does not converge in 1e7
#: iterations. A fit that stops at the cap is not the SVM's solution, so a grid value with any
#: such fold is left out of the best-of-grid choice (and counted in ``n_capped``).
SVM_TOL = 1e-3
SVM_MAX_ITER = 200_000
#: The L2 route's box bound starts at this multiple of 1/lambda and grows x100 while it binds.
L2_BOX_FACTOR = 1e3
L2_BOX_TRIES = 4

KINDS = ("l1", "l2")


def linear_kernel(A, B) -> np.ndarray:
    return np.asarray(A, dtype=np.float64) @ np.asarray(B, dtype=np.float64).T


def _svc(C: float):
    from sklearn.svm import SVC

    return SVC(kernel="precomputed", C=C, tol=SVM_TOL, max_iter=SVM_MAX_ITER, cache_size=500)


def fit_l1(K_train: np.ndarray, y, C: float):
    """L1 soft-margin SVM on a precomputed training kernel; returns the fitted SVC."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at the iteration cap is recorded by the caller
        return _svc(C).fit(K_train, y)


def fit_l2(K_train: np.ndarray, y, lam: float):
    """L2 soft-margin SVM (``C = 1/lambda``) as a hard margin on ``K + lambda I``; returns the SVC.

    Predict with ``decision_function(K(test, train))`` -- the plain kernel, no diagonal term.
    """
    if not lam > 0:
        raise ValueError(f"lambda must be > 0, got {lam}")
    Kl = np.array(K_train, dtype=np.float64, copy=True)
    Kl[np.diag_indices_from(Kl)] += lam
    box = L2_BOX_FACTOR / lam
    for _ in range(L2_BOX_TRIES):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            svc = _svc(box).fit(Kl, y)
        amax = float(np.max(np.abs(svc.dual_coef_))) if svc.dual_coef_.size else 0.0
        if amax < box * (1 - 1e-6):
            return svc
        box *= 100.0
    return svc


def svm_fold_errors(X, y, folds, kind: str, values=None) -> pd.DataFrame:
    """Test error (%) of every grid value on every fold: columns ``value``, ``fold``, ``error_pct``,
    ``n_iter`` (libsvm iterations; equal to the cap when the fit stopped there).

    ``folds`` is a list of (train_idx, test_idx); labels may be any two values.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    values = values or (L1_C_GRID if kind == "l1" else L2_LAMBDA_GRID)
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    # From the easiest fit to the hardest: libsvm needs more iterations as C grows (L1) or as
    # lambda shrinks (L2). Once a fold's fit stops at the iteration cap, the harder values of that
    # fold are not fitted (recorded with error NaN and n_iter = the cap).
    easy_first = sorted(values) if kind == "l1" else sorted(values, reverse=True)
    out = []
    for k, (tr, te) in enumerate(folds):
        Ktr = linear_kernel(X[tr], X[tr])
        Kte = linear_kernel(X[te], X[tr])
        capped = False
        res = {}
        for v in easy_first:
            if capped:
                res[v] = (math.nan, SVM_MAX_ITER)
                continue
            svc = fit_l1(Ktr, y[tr], v) if kind == "l1" else fit_l2(Ktr, y[tr], v)
            pred = svc.predict(Kte)
            n_iter = int(np.max(getattr(svc, "n_iter_", 0)))
            res[v] = (100.0 * float(np.mean(pred != y[te])), n_iter)
            capped = n_iter >= SVM_MAX_ITER
        for v in values:
            out.append({"value": v, "fold": k, "error_pct": res[v][0], "n_iter": res[v][1]})
    return pd.DataFrame(out, columns=["value", "fold", "error_pct", "n_iter"])


def best_of_grid(errors: pd.DataFrame, confidence: float = 0.95) -> dict:
    """The grid value with the best mean accuracy (first on ties) among those whose fits all
    converged, and its mean, ML sd and T-interval half-width over folds (Khardon & Wachman's
    footnote 5)."""
    from perceptron_lab.run.evaluation import TIE_TOL_PP, t_interval

    best, best_acc, n_capped = None, -math.inf, 0
    for v, part in errors.groupby("value", sort=False):
        if (part["n_iter"] >= SVM_MAX_ITER).any():
            n_capped += 1
            continue
        acc = float(100.0 - part["error_pct"].mean())
        if acc > best_acc + TIE_TOL_PP:
            best, best_acc = v, acc
    if best is None:
        return {"value": math.nan, "accuracy_pct": math.nan, "sd_pct": math.nan, "ci_pct": math.nan,
                "n_folds": 0, "n_capped": n_capped}
    accs = 100.0 - errors.loc[errors["value"] == best].sort_values("fold")["error_pct"].to_numpy()
    mean, sd, ci = t_interval(accs, confidence)
    return {"value": best, "accuracy_pct": mean, "sd_pct": sd, "ci_pct": ci, "n_folds": int(accs.size),
            "n_capped": n_capped}
