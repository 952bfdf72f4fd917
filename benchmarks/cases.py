"""Cases 1-6: each runs our engine and its peer side by side and returns one row per measured side."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from .common import (
    ALMA_ALPHA,
    ALMA_DIGIT,
    ALMA_RULES,
    NYSTROEM_C,
    NYSTROEM_COMPONENTS,
    NYSTROEM_GAMMA,
    POLY_DEGREE,
    ROOT,
    SVC_C,
    SVC_PIXEL_MAX_N,
    SVC_TIMEOUT,
    Case,
    Sizes,
)
from .machine import gemm_gflops, load_average, run_worker, spawn
from .workers import alma_config

# ----------------------------------------------------------------------------- cases 1-4


def _river_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("river") is not None


def _alma_available() -> str | None:
    """None when our ALMA engine can run, else the reason it cannot."""
    import importlib.util

    if importlib.util.find_spec("perceptron_lab.engine.alma") is None:
        return "perceptron_lab.engine.alma does not exist yet"
    try:
        alma_config()
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return f"config rejected: {exc}"
    return None


def _row(case: Case, tool: str, setting: str, res: dict, epochs, rule: str | None = None,
         n_train: int | None = None) -> dict:
    row = {"case": case.name, "tool": tool, "setting": setting, "epochs": epochs, "n_train": n_train}
    errors = res.pop("errors", None)
    row.update({k: v for k, v in res.items() if v is not None or k not in row})
    if rule is not None and errors:
        row["test_error_pct"] = errors[rule]
        row["rule"] = rule
    row.setdefault("status", "ok")
    return row


def case_sparse(case: Case, sz: Sizes, data_dir) -> list[dict]:
    """Case 9: our estimator and scikit-learn's Perceptron on the same generated CSR problem
    (:func:`benchmarks.workers.sparse_text`), neither densifying it; one pass, the same order."""
    n, nt, f, density = sz.sparse_shape
    base = {"sparse_shape": [n, nt, f, density], "n_train": n, "n_test": nt}
    setting = f"CSR {n} x {f}, density {density:g}"
    rows = []
    for rule in ("last", "avg"):
        res = run_worker(dict(base, task="ours_sparse", rule=rule), data_dir)
        rows.append(_row(case, "ours VotedPerceptron", f"{setting}, rule {rule}", res, 1, None, n))
    res = run_worker(dict(base, task="ours_sparse", rule="last"), data_dir, threads=1)
    rows.append(_row(case, "ours VotedPerceptron", f"{setting}, rule last", res, 1, None, n))
    res = run_worker(dict(base, task="sk_sparse"), data_dir)
    rows.append(_row(case, "sklearn Perceptron", setting, res, 1, None, n))
    res = run_worker(dict(base, task="sk_sparse"), data_dir, threads=1)
    rows.append(_row(case, "sklearn Perceptron", setting, res, 1, None, n))
    return rows


def case_linear(case: Case, sz: Sizes, data_dir, averaged: bool = False) -> list[dict]:
    base = {"n_train": sz.linear_train, "n_test": sz.test}
    rule = "avg" if averaged else "last"
    rows = []
    # ours as a config with prediction.rules: [rule] runs: the test computes that rule only
    res = run_worker(dict(base, task="ours_perceptron", rule=rule, rules=[rule]), data_dir)
    rows.append(_row(case, "ours", linear_setting(rule), res, 1, rule))
    if not averaged:
        # the same run with every rule computed on the test set (vote needs every hypothesis)
        res = run_worker(dict(base, task="ours_perceptron", rule=rule), data_dir)
        rows.append(_row(case, "ours", linear_setting(None), res, 1, rule))
    peer = "sk_sgd_avg" if averaged else "sk_perceptron"
    tool = "sklearn SGDClassifier(perceptron, average)" if averaged else "sklearn Perceptron"
    for n_jobs in (1, -1):
        res = run_worker(dict(base, task=peer, n_jobs=n_jobs), data_dir)
        rows.append(_row(case, tool, f"n_jobs={n_jobs}", res, 1))
    # both sides on one core: ours with every thread pool at 1, the peer with n_jobs=1
    res = run_worker(dict(base, task="ours_perceptron", rule=rule, rules=[rule]), data_dir, threads=1)
    rows.append(_row(case, "ours", linear_setting(rule), res, 1, rule))
    return rows


def linear_setting(rule: str | None) -> str:
    """Our setting in cases 1-2: the rules computed on the test set (None: all of them)."""
    return "primal, float64, " + (f"test: {rule} rule" if rule else f"test: all {len(_rules())} rules")


def _rules():
    from perceptron_lab.model.predict import RULES

    return RULES


def case_alma(case: Case, sz: Sizes, data_dir) -> list[dict]:
    base = {"n_train": sz.linear_train, "n_test": sz.test, "binary_digit": ALMA_DIGIT, "alpha": ALMA_ALPHA}
    setting = f"p=2, alpha={ALMA_ALPHA:g}, B=1/alpha, C=sqrt(2)"
    rows = []
    why = _alma_available()
    if why is None:
        res = run_worker(dict(base, task="ours_alma"), data_dir)
        rows.append(_row(case, "ours", setting + ", test: " + "/".join(ALMA_RULES), res, 1))
    else:
        rows.append({"case": case.name, "tool": "ours", "setting": setting, "epochs": 1,
                     "status": f"not measured: {why}"})
    for sparse in (False, True):
        s = setting + (", sparse dicts (non-zero pixels)" if sparse else ", dense dicts (all 784 pixels)")
        if _river_installed():
            res = run_worker(dict(base, task="river_alma", sparse=sparse), data_dir)
            rows.append(_row(case, "river ALMAClassifier", s, res, 1))
        else:
            rows.append({"case": case.name, "tool": "river ALMAClassifier", "setting": s, "epochs": 1,
                         "status": "not measured: river is not installed (pip install 'perceptron_lab[bench]')"})
    return rows


def case_kernel(case: Case, sz: Sizes, data_dir, svc_timeout: float = SVC_TIMEOUT) -> list[dict]:
    rows = []
    for n in sz.kernel_sizes:
        base = {"n_train": n, "n_test": sz.test}
        for T in sz.kernel_epochs:
            res = run_worker(dict(base, task="ours_perceptron", degree=POLY_DEGREE, epochs=T, rule="vote"), data_dir)
            rows.append(_row(case, "ours voted perceptron", "(1 + x.y)^4 raw pixels, float32", res, T, "vote", n))
        res = run_worker(dict(base, task="svc", style="same_kernel"), data_dir, timeout=svc_timeout)
        rows.append(_row(case, "sklearn SVC", f"same kernel / c^4 (see notes), C={SVC_C:g}", res, None, None, n))
        if n <= SVC_PIXEL_MAX_N:
            res = run_worker(dict(base, task="svc", style="pixels01"), data_dir, timeout=svc_timeout)
            rows.append(_row(case, "sklearn SVC", "pixels/255, gamma='scale', coef0=1, C=1 (other kernel)",
                             res, None, None, n))
    return rows


def case_nystroem(case: Case, sz: Sizes, data_dir) -> list[dict]:
    """Case 11: full MNIST through our VotedPerceptron estimator (d = 4, one epoch) and through
    scikit-learn's MNIST benchmark setting (Nystroem + LinearSVC), back to back; the row of the
    peer carries the ratio of the fit times and both errors."""
    base = {"n_train": sz.linear_train, "n_test": sz.test}
    ours = _row(case, "ours VotedPerceptron", "poly d=4 raw pixels, float32, 1 epoch, vote",
                run_worker(dict(base, task="ours_estimator"), data_dir), 1)
    peer = _row(case, "sklearn Nystroem + LinearSVC",
                f"gamma={NYSTROEM_GAMMA:g}, n_components={NYSTROEM_COMPONENTS}, C={NYSTROEM_C:g}, pixels/255",
                run_worker(dict(base, task="nystroem"), data_dir), None)
    if ours.get("status") == "ok" and peer.get("status") == "ok":
        peer["fit_ratio_peer_over_ours"] = round(peer["fit_seconds"] / ours["fit_seconds"], 2)
        peer["ours_error_pct"] = ours["test_error_pct"]
    return [ours, peer]


# ----------------------------------------------------------------------------- cases 5 and 6


def run_fs1999_d4(data_dir, train_size=None, epochs=30, test_size=None):
    """Run one permutation of configs/mnist_d4.yaml in a child ``plab run``; returns a dict."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "bench.yaml"
        lines = [f"extends: {ROOT / 'configs' / 'mnist_d4.yaml'}", "name: bench_fs1999_d4",
                 "training:", "  permutations: 1"]
        if epochs != 30:
            cps = [c for c in (0.1, 1, 2, 3, 4, 10, 30) if c < epochs] + [epochs]
            lines += [f"  epochs: {epochs}", f"  checkpoints: {cps}"]
        if train_size or test_size:
            lines += ["dataset:", "  name: mnist"]
            lines += [f"  train_size: {train_size}"] if train_size else []
            lines += [f"  test_size: {test_size}"] if test_size else []
        cfg.write_text("\n".join(lines) + "\n")
        out = Path(tmp) / "out"
        cmd = [sys.executable, "-m", "perceptron_lab.cli.main", "run", str(cfg), "--out", str(out), "-q"]
        if data_dir:
            cmd += ["--data-dir", str(data_dir)]
        load = load_average()
        code, wall, peak_mb, log = spawn(cmd)
        if code != 0:
            raise RuntimeError(f"plab run failed (exit {code}):\n{log[-3000:]}")
        timings = json.loads((out / "timings.json").read_text())
        unit = next(iter(timings.values()))
        df = pd.read_csv(out / "results.csv")
        info = json.loads((out / "run.json").read_text())
    allrows = df[df["class"] == "all"]
    last_T = allrows["epoch"].astype(float).max()
    at = allrows[allrows["epoch"].astype(float) == last_T]
    sv = float(at[at.metric == "support_vectors"]["value"].iloc[0])
    vote = float(at[(at.metric == "test_error_pct") & (at.rule == "vote")]["value"].iloc[0])
    n, n_test, f = info["dataset"]["n_train"], info["dataset"]["n_test"], info["dataset"]["n_features"]
    flops = 2.0 * sv * (n + n_test) * f
    return {"case": "fs1999_d4", "n_train": n, "n_test": n_test, "epochs": last_T, "wall_seconds": round(wall, 2),
            "train_seconds": unit["train_seconds"], "eval_seconds": unit["eval_seconds"],
            "peak_rss_gb": round(peak_mb / 1e3, 3), "support_vectors": int(sv),
            "mistakes": int(float(at[at.metric == "mistakes"]["value"].iloc[0])),
            "vote_test_error_pct": vote, "kernel_gflop": round(flops / 1e9, 3), "load_avg": load}


def limit_run(data_dir, train_size, epochs, test_size, gemm_n: int = 4096) -> dict:
    """:func:`run_fs1999_d4` with the GEMM rate measured just before and just after it.

    On a shared machine the rate varies with the load; the run is compared with the mean of the
    two measurements, and both are recorded.
    """
    g0 = gemm_gflops(gemm_n)
    row = run_fs1999_d4(data_dir, train_size, epochs, test_size)
    g1 = gemm_gflops(gemm_n)
    row.update(gemm_gflops_before=round(g0, 1), gemm_gflops_after=round(g1, 1))
    return add_limit(row, 0.5 * (g0 + g1))


def add_limit(row: dict, gflops: float) -> dict:
    row["gemm_gflops"] = round(gflops, 1)
    row["limit_seconds"] = round(row["kernel_gflop"] / gflops, 3)
    row["fraction_of_limit"] = round(row["limit_seconds"] / row["wall_seconds"], 3)
    row["fraction_of_limit_train_eval"] = round(row["limit_seconds"] / (row["train_seconds"] + row["eval_seconds"]), 3)
    return row


def case_evaluation(case: Case, sz: Sizes, data_dir, gemm_n: int = 4096) -> list[dict]:
    """Case 7: the evaluation of one Khardon & Wachman Table 3 MNIST unit against its limit,
    ``2 x updates x test points x features / float32 GEMM rate`` (every hypothesis scored on every
    test point by one GEMM), the rate measured just before and after; with the exact float32
    kernel block (what runs) and with float64 GEMMs (before it), in the same invocation."""
    rows = []
    base = {"task": "ours_eval", "n_train": sz.linear_train, "n_test": sz.test}
    for exact in (True, False):
        g0 = gemm_gflops(gemm_n)
        res = run_worker(dict(base, exact32=exact), data_dir)
        g1 = gemm_gflops(gemm_n)
        row = _row(case, "ours", "exact float32 GEMM" if exact else "float64 GEMM", res, 1, "vote")
        if row.get("status") == "ok":
            g = 0.5 * (g0 + g1)
            limit = 2.0 * row["mistakes"] * row["eval_n_test"] * row["n_features"] / (g * 1e9)
            row.update(gemm_gflops=round(g, 1), limit_seconds=round(limit, 3),
                       fraction_of_limit_first_call=round(limit / row["test_seconds"], 3),
                       fraction_of_limit=round(limit / row["test_seconds_repeat"], 3))
        rows.append(row)
    return rows


def case_budget(case: Case, sz: Sizes, data_dir, gemm_n: int = 4096) -> list[dict]:
    """Case 8: one epoch of the self-tuned Forgetron with budget 1000 per label on MNIST, d = 4.
    Its limit is the issue's ``examples x budget x 2 x features / float32 GEMM rate`` (one support
    set of ``budget`` examples scored against every example once)."""
    g0 = gemm_gflops(gemm_n)
    res = run_worker({"task": "ours_budget", "n_train": sz.linear_train, "n_test": sz.test, "budget": 1000}, data_dir)
    g1 = gemm_gflops(gemm_n)
    row = _row(case, "ours", "forgetron, budget 1000, (1 + x.y/(100*255^2))^4, float64", res, 1, "last")
    if row.get("status") == "ok":
        g = 0.5 * (g0 + g1)
        limit = row["n_train"] * 1000 * 2.0 * row["n_features"] / (g * 1e9)
        row.update(gemm_gflops=round(g, 1), limit_seconds=round(limit, 3),
                   fraction_of_limit=round(limit / row["fit_seconds"], 3))
    return [row]


def growth_exponent(n, y) -> float | None:
    """Slope of log y against log n (least squares); None with fewer than two usable points."""
    n, y = np.asarray(n, dtype=float), np.asarray(y, dtype=float)
    ok = (n > 0) & (y > 0) & np.isfinite(y)
    if ok.sum() < 2:
        return None
    return round(float(np.polyfit(np.log(n[ok]), np.log(y[ok]), 1)[0]), 2)


def case_scaling(sz: Sizes, data_dir, gemm_n: int = 4096, reuse: dict | None = None) -> list[dict]:
    rows = []
    for n in sz.scaling_sizes:
        if reuse and reuse.get("n_train") == n and float(reuse.get("epochs")) == float(sz.scaling_epochs):
            row = dict(reuse, note="the case-5 run")
        else:
            row = limit_run(data_dir, n, sz.scaling_epochs, sz.test, gemm_n)
        rows.append(dict(row, case="scaling"))
    ns = [r["n_train"] for r in rows]
    expo = {f"exponent_{k}": growth_exponent(ns, [r[k] for r in rows])
            for k in ("wall_seconds", "train_seconds", "eval_seconds", "peak_rss_gb", "support_vectors")}
    return [dict(r, **expo) for r in rows]


# ----------------------------------------------------------------------------- summary
