"""Print one digest of the engine's numbers on sonar, for ``tests/contracts/test_machine_independence.py``.

Run in a fresh process under the environment of a machine variant (``perceptron_lab.cli.spread``'s
``VARIANTS``: the CPU numba compiles for, OpenBLAS's kernel, the thread counts). It trains each
engine family on sonar's standardized features (non-integer: every sum rounds) and hashes the
bits of what feeds a decision or a reported number: each update's score and coefficient, the
thresholds, the budgeted runs' test scores and the test errors of every rule. The same digest
under every variant is the claim of :mod:`perceptron_lab.engine.ordered`; any reduction left to the
machine shows as another digest.
"""

from __future__ import annotations

import hashlib
import sys

import numpy as np


def main() -> None:
    from perceptron_lab.datasets import load_dataset
    from perceptron_lab.engine.alma import AlmaParams, train_alma
    from perceptron_lab.engine.base import PerceptronParams
    from perceptron_lab.engine.budget import BudgetParams, budget_scores, train_budget
    from perceptron_lab.engine.kernels import Kernel
    from perceptron_lab.engine.perceptron import label_matrix, train
    from perceptron_lab.model.predict import evaluate

    ds = load_dataset("sonar")   # 208 examples, no test split: the last 58 of a fixed shuffle are the test set
    perm = np.random.default_rng(3).permutation(len(ds.y_train))
    X0, y0 = np.asarray(ds.X_train, dtype=np.float64)[perm], np.asarray(ds.y_train)[perm]
    mu, sd = X0[:150].mean(axis=0), X0[:150].std(axis=0)
    sd[sd == 0] = 1.0
    X, Xt = (X0[:150] - mu) / sd, (X0[150:] - mu) / sd
    y, yt = y0[:150], y0[150:]
    Y = label_matrix(y, 2)
    order = np.random.default_rng(7).permutation(len(y))
    h = hashlib.sha256()
    parts = []

    def add(name, *arrays):
        for a in arrays:
            if a is not None:
                b = np.ascontiguousarray(np.asarray(a)).tobytes()
                h.update(b)
                parts.append(f"{name}:{hashlib.sha256(b).hexdigest()[:12]}")

    kernels = [Kernel("linear"), Kernel("poly", degree=3, scale=60.0), Kernel("gaussian", sigma=4.0)]
    for k in kernels:
        for dtype in (np.float64, np.float32):
            for form in (("auto", "dual") if k.name == "linear" else ("auto",)):
                p = PerceptronParams(eta=0.1, theta_init=0.37, C=0.37, tau_abs=0.05, lam=0.01)
                log = train(X, Y, k, p, order, 3.0, [1.0, 3.0], chunk_size=64, dtype=dtype, form=form)
                add(f"perceptron/{k.name}/{np.dtype(dtype).name}/{form}", log.upd_score, log.upd_coef, log.upd_theta)
                err_m, err_b = evaluate(log, k, X, Xt, yt, True, dtype=dtype)
                add(f"perceptron/{k.name}/{np.dtype(dtype).name}/{form}/errors", err_m, err_b)
        a2 = train_alma(X, Y, k, AlmaParams(alpha=0.9, p=2.0), order, 2.0, [2.0])
        add(f"alma2/{k.name}", a2.upd_score, a2.upd_coef, a2.upd_scale)
    a3 = train_alma(X, Y, Kernel("linear"), AlmaParams(alpha=0.9, p=3.0), order, 2.0, [2.0])
    add("alma3/linear", a3.upd_score, a3.upd_coef, getattr(a3, "hyp_w", None))
    for alg in ("forgetron", "projectron", "projectron++", "norma", "rbp"):
        bp = BudgetParams(algorithm=alg, budget=20, eta=0.1 if alg != "norma" else 0.5, lam=0.01 if alg == "norma" else 0.0)
        blog = train_budget(X, Y, Kernel("gaussian", sigma=4.0), bp, order, 2.0, [1.0, 2.0])
        add(f"budget/{alg}", budget_scores(blog, Kernel("gaussian", sigma=4.0), X, Xt, "avg"))
    # the online classes (River's interface): each example learned, then the test scores
    from perceptron_lab.estimators.online import ALMA as OnlineALMA
    from perceptron_lab.estimators.online import KernelPerceptron as OnlineKernelPerceptron

    rows = [{f"x{j}": float(v) for j, v in enumerate(x)} for x in X]
    tests = [{f"x{j}": float(v) for j, v in enumerate(x)} for x in Xt]
    for name, model in (("online/kernel_gaussian", OnlineKernelPerceptron(kernel="gaussian", sigma=4.0)),
                        ("online/kernel_poly", OnlineKernelPerceptron(kernel="poly", degree=3, scale=60.0)),
                        ("online/alma", OnlineALMA(alpha=0.9))):
        for r, label in zip(rows, y):
            model.learn_one(r, int(label))
        add(name, np.array([[v for _, v in sorted(model.decision_one(t).items())] for t in tests], dtype=float))
    print(h.hexdigest())
    if "-v" in sys.argv:
        print("\n".join(parts))


if __name__ == "__main__":
    main()
