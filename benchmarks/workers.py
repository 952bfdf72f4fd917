"""What one measured side does in its child process (``--worker``): load MNIST, run one tool, time it."""

from __future__ import annotations

import json
import math
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perceptron_lab.constants import DEFAULT_CHUNK

from .common import (
    ALMA_ALPHA,
    ALMA_RULES,
    NYSTROEM_C,
    NYSTROEM_COMPONENTS,
    NYSTROEM_GAMMA,
    POLY_DEGREE,
    RIVER_BATCH,
    ROOT,
    SEED,
    SPARSE_SEED,
    SVC_C,
    SVC_CACHE_MB,
    WARMUP_EXAMPLES,
)
from .machine import _reset_peak, _status_mb


@dataclass
class Data:
    Xtr: np.ndarray
    ytr: np.ndarray
    Xte: np.ndarray
    yte: np.ndarray
    order: np.ndarray
    n_classes: int

    def head(self, n: int, n_test: int) -> "Data":
        n = min(n, len(self.ytr))
        return Data(self.Xtr[:n], self.ytr[:n], self.Xte[:n_test], self.yte[:n_test],
                    np.random.default_rng(SEED).permutation(n), self.n_classes)


def sparse_text(n_train: int, n_test: int, n_features: int, density: float, seed: int = SPARSE_SEED):
    """A text-like binary problem as CSR matrices: ``(Xtr, ytr, Xte, yte)``.

    Each row holds about ``density x n_features`` term counts (small integers) at features drawn
    from a Zipf-like law (feature j with probability proportional to 1 / (j + 10)), as the words
    of a document; a row's repeated draws add up. The labels are the sign of a sparse hyperplane:
    one feature in 50 has a nonzero weight, drawn from a normal law. Deterministic in ``seed``."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    n = n_train + n_test
    per_row = max(1, int(round(density * n_features)))
    p = 1.0 / (np.arange(n_features) + 10.0)
    cols = rng.choice(n_features, size=n * per_row, p=p / p.sum())
    rows = np.repeat(np.arange(n), per_row)
    vals = rng.integers(1, 4, size=n * per_row).astype(np.float64)
    X = sp.csr_matrix((vals, (rows, cols)), shape=(n, n_features))
    X.sum_duplicates()
    w = rng.normal(size=n_features) * (rng.random(n_features) < 0.02)
    y = (X @ w > 0).astype(np.int64)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def load_data(spec: dict) -> Data:
    """MNIST (raw 0..255 float64), the first ``n_train``/``n_test`` examples, order seeded; or,
    with ``spec["sparse_shape"]``, the generated problem of :func:`sparse_text`."""
    from perceptron_lab.datasets.registry import load_dataset

    if spec.get("sparse_shape"):
        n, nt, f, density = spec["sparse_shape"]
        Xtr, ytr, Xte, yte = sparse_text(int(n), int(nt), int(f), float(density))
        return Data(Xtr, ytr, Xte, yte, np.random.default_rng(SEED).permutation(len(ytr)), 2)

    ds = load_dataset("mnist", spec.get("data_dir"))
    n, nt = spec.get("n_train"), spec.get("n_test")
    Xtr, ytr = ds.X_train[:n], np.asarray(ds.y_train[:n], dtype=np.int64)
    Xte, yte = ds.X_test[:nt], np.asarray(ds.y_test[:nt], dtype=np.int64)
    n_classes = len(ds.classes)
    if spec.get("binary_digit") is not None:
        ytr, yte = (ytr == spec["binary_digit"]).astype(np.int64), (yte == spec["binary_digit"]).astype(np.int64)
        n_classes = 2
    order = np.random.default_rng(SEED).permutation(len(ytr))
    return Data(np.ascontiguousarray(Xtr), ytr, np.ascontiguousarray(Xte), yte, order, n_classes)


def _err_pct(wrong, n) -> float:
    return round(100.0 * float(wrong) / n, 3)


def _ours_perceptron(spec: dict, d: Data) -> dict:
    """Our engine: train one-vs-rest perceptrons, then the rules ``spec["rules"]`` (default: every
    rule) on the test set."""
    from perceptron_lab.engine.perceptron import PerceptronParams, label_matrix, train
    from perceptron_lab.engine.kernels import Kernel
    from perceptron_lab.model.predict import RULES, evaluate

    T = float(spec.get("epochs", 1))
    t0 = time.perf_counter()
    if spec.get("degree"):
        dtype = np.float32
        kernel = Kernel("poly", degree=int(spec["degree"]), scale=1.0).range_safe(d.Xtr, dtype)
    else:
        dtype, kernel = np.float64, Kernel("linear")
    Y = label_matrix(d.ytr, d.n_classes)
    log = train(d.Xtr, Y, kernel, PerceptronParams(), d.order, T, [T],
                chunk_size=int(spec.get("chunk_size", DEFAULT_CHUNK)), dtype=dtype)
    t1 = time.perf_counter()
    err, _ = evaluate(log, kernel, d.Xtr, d.Xte, d.yte, d.n_classes == 2, dtype=dtype, rules=spec.get("rules"))
    t2 = time.perf_counter()
    errors = {r: _err_pct(err[0, i], len(d.yte)) for i, r in enumerate(RULES) if err[0, i] >= 0}
    return {"fit_seconds": t1 - t0, "test_seconds": t2 - t1,
            "test_error_pct": errors[spec.get("rule", "last")], "errors": errors,
            "mistakes": log.n_updates, "support_vectors": int(np.unique(log.upd_ex).size),
            "form": log.info.get("form"), "loop": log.info.get("loop", "chunked")}


def _sk_linear(spec: dict, d: Data) -> dict:
    """scikit-learn's Perceptron or averaged SGDClassifier, one pass in our order."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import Perceptron, SGDClassifier

    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    common = dict(shuffle=False, max_iter=1, tol=None, eta0=1.0, fit_intercept=False,
                  n_jobs=spec.get("n_jobs"))
    if spec["task"] == "sk_perceptron":
        model = Perceptron(**common)
    else:
        model = SGDClassifier(loss="perceptron", average=True, learning_rate="constant", alpha=0.0,
                              penalty=None, **common)
    Xo, yo = d.Xtr[d.order], d.ytr[d.order]
    t0 = time.perf_counter()
    model.fit(Xo, yo)
    t1 = time.perf_counter()
    wrong = int(np.sum(model.predict(d.Xte) != d.yte))
    t2 = time.perf_counter()
    return {"fit_seconds": t1 - t0, "test_seconds": t2 - t1, "test_error_pct": _err_pct(wrong, len(d.yte))}


def _ours_sparse(spec: dict, d: Data) -> dict:
    """Our estimator on the CSR rows as given (one pass in the seeded order, rule ``spec["rule"]``)."""
    from perceptron_lab import VotedPerceptron

    model = VotedPerceptron(rule=spec.get("rule", "last"), shuffle=False, epochs=1)
    Xo, yo = d.Xtr[d.order], d.ytr[d.order]
    t0 = time.perf_counter()
    model.fit(Xo, yo)
    t1 = time.perf_counter()
    pred = model.predict(d.Xte)
    t2 = time.perf_counter()
    return {"fit_seconds": t1 - t0, "test_seconds": t2 - t1, "test_error_pct": _err_pct(np.sum(pred != d.yte), len(d.yte)),
            "mistakes": model.n_mistakes_, "support_vectors": int(model.support_.size), "nnz": int(d.Xtr.nnz),
            "n_features": int(d.Xtr.shape[1]), "predictions": _digest(pred)}


def _sk_sparse(spec: dict, d: Data) -> dict:
    """scikit-learn's Perceptron on the same CSR rows, one pass in the same order."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import Perceptron

    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    model = Perceptron(shuffle=False, max_iter=1, tol=None, eta0=1.0, fit_intercept=False)
    Xo, yo = d.Xtr[d.order], d.ytr[d.order]
    t0 = time.perf_counter()
    model.fit(Xo, yo)
    t1 = time.perf_counter()
    pred = model.predict(d.Xte)
    t2 = time.perf_counter()
    return {"fit_seconds": t1 - t0, "test_seconds": t2 - t1, "test_error_pct": _err_pct(np.sum(pred != d.yte), len(d.yte)),
            "nnz": int(d.Xtr.nnz), "n_features": int(d.Xtr.shape[1]), "predictions": _digest(pred)}


def _digest(pred) -> str:
    """A short fingerprint of a prediction vector (equal vectors, equal fingerprints)."""
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(pred, dtype=np.int64).tobytes()).hexdigest()[:16]


def alma_config(alpha: float = ALMA_ALPHA, chunk_size: int | None = None, rules=ALMA_RULES):
    """The config a user would write for case 3 (linear kernel, ALMA_2, one epoch, rules last and avg)."""
    from perceptron_lab.config.load import config_from_dict

    training = {"epochs": 1, "checkpoints": [1], "permutations": 1, "dtype": "float64"}
    if chunk_size is not None:
        training["chunk_size"] = int(chunk_size)
    return config_from_dict({
        "dataset": {"name": "mnist"}, "kernel": {"type": "linear"},
        "algorithm": {"name": "alma", "alpha": alpha, "p": 2},
        "training": training, "prediction": {"rules": list(rules)}}, source="<bench alma>")


def _ours_alma(spec: dict, d: Data) -> dict:
    """Our ALMA_2 through the one training call of every door (``engine.train_algorithm``)."""
    from perceptron_lab.engine import train_algorithm
    from perceptron_lab.engine.perceptron import label_matrix
    from perceptron_lab.model.predict import RULES, evaluate
    from perceptron_lab.run.spec import unit_spec

    cfg = alma_config(float(spec.get("alpha", ALMA_ALPHA)), spec.get("chunk_size"))
    us = unit_spec(cfg)
    kernel = us.kernel
    t0 = time.perf_counter()
    log = train_algorithm(us.settings, d.Xtr, label_matrix(d.ytr, 2), kernel, d.order, us.epochs, [1.0],
                          chunk_size=us.chunk_size, cache_limit_gb=us.cache_limit_gb)
    t1 = time.perf_counter()
    err, _ = evaluate(log, kernel, d.Xtr, d.Xte, d.yte, True, dtype=np.float64, rules=list(cfg.prediction.rules))
    t2 = time.perf_counter()
    return {"fit_seconds": t1 - t0, "test_seconds": t2 - t1,
            "test_error_pct": _err_pct(err[0, RULES.index("last")], len(d.yte)), "mistakes": log.n_updates,
            "avg_test_error_pct": _err_pct(err[0, RULES.index("avg")], len(d.yte)),
            "loop": log.info.get("loop", "chunked")}


def _unit_rows(X: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.where(norms > 0, norms, 1.0)


def _river_dicts(X: np.ndarray, sparse: bool):
    keys = list(range(X.shape[1]))
    if sparse:
        return [{j: v for j, v in zip(keys, row) if v != 0.0} for row in X.tolist()]
    return [dict(zip(keys, row)) for row in X.tolist()]


def _river_alma(spec: dict, d: Data) -> dict:
    """River's ALMAClassifier: learn_one over the stream, predict_one over the test set.

    Instances are scaled to unit Euclidean norm first (Gentile's ALMA assumes ||x||_2 = 1; our
    engine normalizes inside its timed call). Dicts are built RIVER_BATCH at a time, untimed.
    """
    from river.linear_model import ALMAClassifier

    a = float(spec.get("alpha", ALMA_ALPHA))
    sparse = bool(spec.get("sparse"))
    model = ALMAClassifier(p=2, alpha=a, B=1.0 / a, C=math.sqrt(2.0))
    Xo, yo = _unit_rows(d.Xtr[d.order]), (d.ytr[d.order] == 1).tolist()
    fit = 0.0
    for s in range(0, len(yo), RIVER_BATCH):
        xs = _river_dicts(Xo[s:s + RIVER_BATCH], sparse)
        t = time.perf_counter()
        for x, y in zip(xs, yo[s:s + RIVER_BATCH]):
            model.learn_one(x, y)
        fit += time.perf_counter() - t
    Xt, yt = _unit_rows(d.Xte), (d.yte == 1).tolist()
    test, wrong = 0.0, 0
    for s in range(0, len(yt), RIVER_BATCH):
        xs = _river_dicts(Xt[s:s + RIVER_BATCH], sparse)
        t = time.perf_counter()
        wrong += sum(model.predict_one(x) != y for x, y in zip(xs, yt[s:s + RIVER_BATCH]))
        test += time.perf_counter() - t
    return {"fit_seconds": fit, "test_seconds": test, "test_error_pct": _err_pct(wrong, len(yt)),
            "mistakes": model.k - 1}


def svc_same_kernel(X: np.ndarray, degree: int = POLY_DEGREE) -> tuple[float, float]:
    """(gamma, coef0) making SVC's kernel our (1 + x.y)^d on raw pixels up to a constant factor.

    SVC computes (gamma x.y + coef0)^d; with gamma = coef0 = 1/c that is ((1 + x.y) / c)^d, i.e.
    our kernel divided by c^d. c is chosen so that the average K(x, x) over the training set is 1:
    c = mean((1 + |x|^2)^d)^(1/d). The perceptron is unchanged by the factor; the SVM is not
    (kernel c K with parameter C equals kernel K with parameter c C), so C = SVC_C was chosen on a
    5000-example probe as the value with the lowest test error of {1, 10, 100}, which is also the
    fastest: the SVM is then close to its hard-margin solution, which does not depend on the factor.
    """
    diag = (1.0 + np.einsum("ij,ij->i", X, X)) ** degree
    c = float(np.mean(diag) ** (1.0 / degree))
    return 1.0 / c, 1.0 / c


def _svc(spec: dict, d: Data) -> dict:
    """scikit-learn's SVC (libsvm; one-vs-one over the 10 digits)."""
    from sklearn.svm import SVC

    Xtr, Xte = d.Xtr, d.Xte
    t0 = time.perf_counter()
    if spec.get("style") == "pixels01":
        Xtr, Xte = Xtr / 255.0, Xte / 255.0
        t0 = time.perf_counter()
        model = SVC(kernel="poly", degree=POLY_DEGREE, gamma="scale", coef0=1.0, C=1.0,
                    cache_size=SVC_CACHE_MB)
    else:
        gamma, coef0 = svc_same_kernel(Xtr)
        model = SVC(kernel="poly", degree=POLY_DEGREE, gamma=gamma, coef0=coef0, C=SVC_C,
                    cache_size=SVC_CACHE_MB)
    model.fit(Xtr, d.ytr)
    t1 = time.perf_counter()
    wrong = int(np.sum(model.predict(Xte) != d.yte))
    t2 = time.perf_counter()
    return {"fit_seconds": t1 - t0, "test_seconds": t2 - t1, "test_error_pct": _err_pct(wrong, len(d.yte)),
            "support_vectors": int(model.n_support_.sum())}


def _ours_eval_unit(spec: dict, d: Data) -> dict:
    """One unit of ``configs/kw2007/table3_mnist.yaml`` (linear kernel, tau = 0, one epoch, float64,
    the rules last / longest / vote): MNIST's train and test examples merged, the first tenth of a
    seeded permutation as the test fold. ``spec["exact32"]`` False computes the test kernel block
    by float64 GEMMs instead of the exact float32 ones (the same numbers, for the comparison)."""
    from perceptron_lab.model import predict
    from perceptron_lab.run import units
    from perceptron_lab.config.load import load_config
    from perceptron_lab.engine import train_algorithm
    from perceptron_lab.engine.perceptron import label_matrix
    from perceptron_lab.run.spec import unit_spec

    cfg = load_config(ROOT / "configs" / "kw2007" / "table3_mnist.yaml")
    us = unit_spec(cfg)
    X, y = np.concatenate([d.Xtr, d.Xte]), np.concatenate([d.ytr, d.yte])
    perm = np.random.default_rng(SEED).permutation(len(y))
    te, tr = perm[:len(y) // 10], perm[len(y) // 10:]
    dtype, kernel = units.unit_kernel(us, X[tr])
    order = np.random.default_rng(SEED + 1).permutation(tr.size)
    t0 = time.perf_counter()
    log = train_algorithm(us.settings, X[tr], label_matrix(y[tr], d.n_classes), kernel, order, us.epochs, [1.0],
                          dtype=dtype, chunk_size=us.chunk_size, cache_limit_gb=us.cache_limit_gb)
    t1 = time.perf_counter()
    if not spec.get("exact32", True):
        predict.exact32_ok = lambda A: False
    err, _ = predict.evaluate(log, kernel, X[tr], X[te], y[te], d.n_classes == 2, dtype=dtype,
                              rules=cfg.prediction.rules, vote_weight=cfg.prediction.vote_weight)
    t2 = time.perf_counter()
    # the same evaluation again: a worker of `plab run` evaluates unit after unit, and the first
    # full-size call of a process also pays one-time costs (thread start-up, first-touch memory)
    again, _ = predict.evaluate(log, kernel, X[tr], X[te], y[te], d.n_classes == 2, dtype=dtype,
                                rules=cfg.prediction.rules, vote_weight=cfg.prediction.vote_weight)
    t3 = time.perf_counter()
    assert (again == err).all()
    errors = {r: _err_pct(err[0, i], te.size) for i, r in enumerate(predict.RULES) if err[0, i] >= 0}
    return {"fit_seconds": t1 - t0, "test_seconds": t2 - t1, "test_seconds_repeat": round(t3 - t2, 3),
            "test_error_pct": errors["vote"], "errors": errors,
            "mistakes": log.n_updates, "support_vectors": int(np.unique(log.upd_ex).size),
            "n_features": int(X.shape[1]), "dtype": np.dtype(dtype).name, "eval_n_test": int(te.size)}


def _ours_budget(spec: dict, d: Data) -> dict:
    """The self-tuned Forgetron (budget ``spec["budget"]`` per label) with the degree-4 kernel
    (1 + x.y / (100 * 255^2))^4 on MNIST, one epoch in the seeded order, then the last and averaged
    rules on the test set (the kernel scaled to max K(x, x) = 1, as in a plab run)."""
    from perceptron_lab.engine.budget import BudgetParams, budget_errors, train_budget, unit_diag_kernel
    from perceptron_lab.engine.perceptron import label_matrix
    from perceptron_lab.engine.kernels import Kernel

    # scaled to max K(x, x) = 1 on the training rows, as a plab run of a budgeted algorithm is
    kernel = unit_diag_kernel(Kernel("poly", degree=POLY_DEGREE, scale=100.0 * 255.0**2), d.Xtr)
    params = BudgetParams(algorithm=spec.get("algorithm", "forgetron"), budget=int(spec.get("budget", 1000)))
    t0 = time.perf_counter()
    log = train_budget(d.Xtr, label_matrix(d.ytr, d.n_classes), kernel, params, d.order, 1.0, [1.0],
                       chunk_size=int(spec.get("chunk_size", 2048)))
    t1 = time.perf_counter()
    rules = ("last", "avg")
    err, _ = budget_errors(log, kernel, d.Xtr, d.Xte, d.yte, d.n_classes == 2, rules, rules)
    t2 = time.perf_counter()
    errors = {r: _err_pct(err[-1, i], len(d.yte)) for i, r in enumerate(rules)}
    held = np.unique(np.concatenate([ex for ex, _ in log.last[-1]]))  # distinct examples over the labels
    return {"fit_seconds": t1 - t0, "test_seconds": t2 - t1, "test_error_pct": errors["last"], "errors": errors,
            "mistakes": int(log.mistakes_cp[-1].sum()), "max_support": int(log.max_support),
            "n_features": int(d.Xtr.shape[1]), "support_examples_last": int(held.size),
            "err_last": errors["last"], "err_avg": errors["avg"]}


def _ours_estimator(spec: dict, d: Data) -> dict:
    """The scikit-learn estimator a user would reach for: ``VotedPerceptron`` with the degree-4
    polynomial kernel on raw pixels, one epoch, float32 kernel values, predicting by vote."""
    from perceptron_lab import VotedPerceptron

    clf = VotedPerceptron(kernel="poly", degree=POLY_DEGREE, epochs=1.0, dtype="float32", random_state=SEED)
    t0 = time.perf_counter()
    clf.fit(d.Xtr, d.ytr)
    t1 = time.perf_counter()
    wrong = int(np.sum(clf.predict(d.Xte) != d.yte))
    t2 = time.perf_counter()
    return {"fit_seconds": t1 - t0, "test_seconds": t2 - t1, "test_error_pct": _err_pct(wrong, len(d.yte)),
            "support_vectors": int(clf.support_.size)}


def _nystroem(spec: dict, d: Data) -> dict:
    """scikit-learn's own MNIST benchmark setting: ``Nystroem(gamma=0.015, n_components=1000)`` then
    ``LinearSVC(C=100)``, on pixels / 255."""
    from sklearn.kernel_approximation import Nystroem
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import LinearSVC

    Xtr, Xte = d.Xtr / 255.0, d.Xte / 255.0
    model = make_pipeline(Nystroem(gamma=NYSTROEM_GAMMA, n_components=min(NYSTROEM_COMPONENTS, len(Xtr)),
                                   random_state=SEED),
                          LinearSVC(C=NYSTROEM_C))
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # LinearSVC's convergence warning, as in scikit-learn's benchmark
        model.fit(Xtr, d.ytr)
    t1 = time.perf_counter()
    wrong = int(np.sum(model.predict(Xte) != d.yte))
    t2 = time.perf_counter()
    return {"fit_seconds": t1 - t0, "test_seconds": t2 - t1, "test_error_pct": _err_pct(wrong, len(d.yte))}


TASKS = {"ours_estimator": _ours_estimator, "nystroem": _nystroem, "ours_perceptron": _ours_perceptron, "ours_eval": _ours_eval_unit, "ours_budget": _ours_budget, "sk_perceptron": _sk_linear, "sk_sgd_avg": _sk_linear,
         "ours_sparse": _ours_sparse, "sk_sparse": _sk_sparse, "ours_alma": _ours_alma, "river_alma": _river_alma, "svc": _svc}


def worker_main(spec: dict) -> None:
    """Child side of :func:`run_worker`: warm up, reset the peak-memory counter, measure, write JSON."""
    task = TASKS[spec["task"]]
    data = load_data(spec)
    t = time.perf_counter()
    task(spec, data.head(WARMUP_EXAMPLES, WARMUP_EXAMPLES))
    warm = time.perf_counter() - t
    rss0 = _status_mb("VmRSS")
    reset = _reset_peak()
    res = task(spec, data)
    hwm = _status_mb("VmHWM")
    res["total_seconds"] = res["fit_seconds"] + res["test_seconds"]
    for k in ("fit_seconds", "test_seconds", "total_seconds"):
        res[k] = round(res[k], 3)
    res.update(n_train=len(data.ytr), n_test=len(data.yte), warmup_seconds=round(warm, 2), status="ok",
               extra_peak_mb=round(hwm - rss0) if reset and hwm is not None and rss0 is not None else None)
    Path(spec["result"]).write_text(json.dumps(res))
