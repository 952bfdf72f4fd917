"""``results/bench/summary.md`` and ``ratios.csv`` from every case file present."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from .cases import _rules, linear_setting
from .common import (
    ALMA_RULES,
    CASES,
    SVC_C,
    SVC_CACHE_MB,
    SVC_PIXEL_MAX_N,
    TARGETS,
    Case,
)


def _f(x, nd=2) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return ""
    if isinstance(x, (int, np.integer)) or nd == 0:
        try:
            return str(int(round(float(x))))
        except (TypeError, ValueError):
            return str(x)
    try:
        return f"{float(x):.{nd}f}"
    except (TypeError, ValueError):
        return str(x)


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"] == "ok"] if "status" in df else df


def ratio_rows(case: str, df: pd.DataFrame) -> list[dict]:
    """Ours vs each peer row of a case CSV: speedup = peer seconds / our seconds."""
    out = []
    ok = _ok(df)
    ours = ok[ok.tool.str.startswith("ours")]
    peers = ok[~ok.tool.str.startswith("ours")]
    for _, o in ours.iterrows():
        for _, p in peers.iterrows():
            if case == "kernel" and o["n_train"] != p["n_train"]:
                continue
            out.append({
                "case": case, "n_train": o["n_train"], "ours": f"{o['setting']}" + (f", T={o['epochs']:g}" if case == "kernel" else "")
                + ("" if str(o["threads"]) == "all" else f", {o['threads']} thread"),
                "peer": f"{p['tool']} {p['setting']}" + ("" if str(p["threads"]) == "all" else f", {p['threads']} thread"),
                "fit_speedup": round(p["fit_seconds"] / o["fit_seconds"], 2),
                "total_speedup": round(p["total_seconds"] / o["total_seconds"], 2),
                "ours_error_pct": o["test_error_pct"], "peer_error_pct": p["test_error_pct"],
                "error_diff_points": round(o["test_error_pct"] - p["test_error_pct"], 3)})
    return out


MEASURE_HEAD = ("| tool | setting | threads | n train | T | fit s | test s | total s | warm-up s | "
                "peak MB | extra MB | test err % | status |")
MEASURE_SEP = "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"


def _measure_table(df: pd.DataFrame) -> list[str]:
    lines = [MEASURE_HEAD, MEASURE_SEP]
    for _, r in df.iterrows():
        err = r.get("test_error_pct")
        rule = r.get("rule")
        err_s = _f(err) + (f" ({rule})" if isinstance(rule, str) else "")
        lines.append(f"| {r['tool']} | {r['setting']} | {r.get('threads', '')} | {_f(r.get('n_train'), 0)} | "
                     f"{_f(r.get('epochs'), 0)} | {_f(r.get('fit_seconds'))} | {_f(r.get('test_seconds'))} | "
                     f"{_f(r.get('total_seconds'))} | {_f(r.get('warmup_seconds'))} | {_f(r.get('peak_rss_mb'), 0)} | "
                     f"{_f(r.get('extra_peak_mb'), 0)} | {err_s} | {r.get('status', '')} |")
    return lines


def _ratio_table(rr: list[dict]) -> list[str]:
    if not rr:
        return []
    lines = ["", "| ours | peer | n train | fit speedup | total speedup | our err % | peer err % |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rr:
        lines.append(f"| {r['ours']} | {r['peer']} | {_f(r['n_train'], 0)} | {_f(r['fit_speedup'])}x | "
                     f"{_f(r['total_speedup'])}x | {_f(r['ours_error_pct'])} | {_f(r['peer_error_pct'])} |")
    return lines


NOTES = {
    "sparse": [
        "Both sides read the same scipy.sparse CSR matrices (`benchmarks/workers.py: sparse_text`: term "
        "counts at Zipf-distributed features, labels from the sign of a sparse hyperplane) and train one pass "
        "in the same order with the same update (w += y x when y w.x <= 0, no intercept), so the `last` rule "
        "and scikit-learn's Perceptron make the same predictions (the `predictions` fingerprints in the CSV). "
        "Neither side densifies the data: a dense copy would take n train x features x 8 bytes. Ours is the "
        "estimator (`VotedPerceptron`), whose training reads each row's nonzeros only; its `last` and `avg` "
        "predictions come from one vector per label built from the support vectors' stored values "
        "(`predict.combined_decision_scores`), so a test row costs one sparse inner product (every rule "
        "comes from the one pass; `avg` is shown too).",
    ],
    "linear": [
        "Same algorithm on both sides: update w_c += y x when y w_c.x <= 0, no intercept, one pass in the "
        "same order, so ours (`last` rule) and scikit-learn reach the same test error. scikit-learn trains "
        "the 10 one-vs-rest problems with joblib threads (`n_jobs`); ours trains all labels in one pass. "
        "Ours trains in the primal loop of `engine/linear.py` (one example at a time, every label "
        "scored against it; the labels split into one group per numba thread, the groups running in "
        "parallel) and records the same log as the chunked driver, so every rule and checkpoint stays "
        "available. "
        "The test call computes the rule the peer computes (`last`, as a config with "
        "`prediction.rules: [last]` does), from one combined weight vector per label; the row "
        "'test: all 8 rules' computes every rule, which needs every intermediate hypothesis' score on "
        "each test point (vote, random), from the same training. scikit-learn predicts with the last "
        "hypothesis only. The one-thread row sets every thread pool of our child (BLAS, numba) to 1 "
        "and is compared with `n_jobs=1`. `training.chunk_size` no longer matters for primal runs of "
        "the perceptron (it applies to the dual form's chunked driver).",
    ],
    "averaged": [
        "The averaged perceptron is the `avg` rule of the same training as case 1 (one pass yields every "
        "rule); the test call computes `avg` only (`prediction.rules: [avg]`), from one averaged vector "
        "per label. scikit-learn's averaged SGD with the perceptron loss, constant step 1, no "
        "regularization and no intercept is the same algorithm.",
    ],
    "alma": [
        "Both sides see the same stream (our seeded order, unit-norm instances). River's `ALMAClassifier` "
        "(river/linear_model/alma.py) differs from Gentile's Figure 1 / our engine in: (a) it does not "
        "normalize instances (we pass unit-norm dicts, which our engine does internally); (b) after an "
        "update it divides only the weights of the features present in x by max(1, ||w||), so with "
        "sparse dicts the projection onto the unit ball is partial (dense dicts make it exact); (c) no "
        "link function, so only p = 2 is the paper's algorithm; (d) the update condition is "
        "y w.x < (1 - alpha) gamma_k (strict), the paper's is <=; (e) it is pure Python, one dict "
        "per example; building the dicts is not timed. River's predictions use the last hypothesis, as "
        "our `last` rule; our test call computes `last` and `avg` (`prediction.rules: [last, avg]`). Ours "
        "runs the p = 2 loop of `engine/linear.py` (one thread; normalization on the fly, no weight "
        "vector stored per correction) through the one training call of every door (`engine.train_algorithm`).",
    ],
    "kernel": [
        "Ours: F&S's K(x, y) = (1 + x.y)^4 on raw 0..255 pixels in float32 (base divided by "
        "max(1 + |x|^2) to stay in range, a constant factor), T = 1 and T = 10 epochs in a seeded "
        "order, `vote` rule; the test call computes every rule. SVC 'same kernel': gamma = coef0 = 1/c "
        "on raw pixels, i.e. ((1 + x.y)/c)^4 = our kernel / c^4 with c = mean((1 + |x|^2)^4)^(1/4) "
        f"(average K(x, x) = 1); C = {SVC_C:g}, chosen as the most accurate (and fastest) of 1, 10, 100 "
        "on 5000 examples; libsvm one-vs-one, one thread (it has no threading). The second SVC row "
        "(pixels / 255, gamma='scale', coef0 = 1, C = 1) is the setting a scikit-learn user would start "
        f"from; its kernel is a different function; run up to n = {SVC_PIXEL_MAX_N}. "
        f"SVC's kernel cache is {SVC_CACHE_MB} MB. Ours uses both cores (BLAS GEMM and numba).",
    ],
    "limit": [
        "wall s includes starting Python and loading MNIST (numba loads compiled code from its disk "
        "cache). limit s = 2 x support vectors x (train + test examples) x features / GEMM rate: the "
        "arithmetic no implementation of the dual-form run can avoid, at the float32 GEMM rate measured "
        "just before and just after the run (their mean; both are in the CSV). fraction of the limit = "
        "limit s / wall s (and / (train s + eval s), without start-up and data loading). The GEMM rate "
        "is measured on memory already mapped; the run writes its kernel cache (about 2 GB) into fresh "
        "memory, which on a virtual machine whose host backs memory lazily costs up to 2 s per GB to map "
        "(a 2.16 GB fill: 4.6 s after the machine idled, 0.24 s right after another process freed memory), "
        "so its training time varies by several seconds from run to run. The run has plab's process "
        "settings (perceptron_lab/run/runtime.py: OpenBLAS's idle spin about a millisecond, OpenMP threads "
        "that sleep at once); the benchmark sets them for its children as plab's commands do. Huge "
        "pages are numpy's default (on this VM a cold run trains about 3 s faster with "
        "NUMPY_MADVISE_HUGEPAGE=0, while the full reproduction runs 2 minutes slower), except for the "
        "arrays written once into fresh memory, which are mapped without numpy's advice "
        "(perceptron_lab/engine/memory.py): the kernel column cache, and the features as loaded and as the "
        "run copies them.",
    ],
    "memory": [
        "Each row is one `plab run` of the headline config in a child process of its own (`benchmarks/memory.py`); "
        "peak GB is the kernel's record of the child's largest resident set (`ru_maxrss`, GB of 10^9 bytes), "
        "run.json peak GB the run's own record of it. Each version ran the config on 300 examples first, untimed, "
        "so that no wall time holds compilation. `PLAB_SHARED_COLUMNS_GB=1` is the setting "
        "docs/troubleshooting.md gives for trading memory for time: a run then keeps up to 1 GB of other runs' "
        "kernel columns (by default none) and computes fewer of its own. A row from before a change of the "
        "default keeps the default of its code. Equal SHA-256 digests of results.csv: the rows computed the "
        "same numbers.",
    ],
    "scaling": [
        "The case-5 run (every rule, every checkpoint and every tenth of an epoch evaluated on the test "
        "set) on the first n training examples; exponents are least-squares slopes of log(quantity) "
        "against log(n). A kernel-perceptron pass costs about n x support vectors kernel values and the "
        "support vectors grow with n, so time grows faster than n.",
    ],
}


# ----------------------------------------------------------------------------- where each case ran
#
# Every row of a case CSV records the machine it was measured on (benchmarks/machine.py:
# machine(), the float32 GEMM rate measured at the start of that invocation, or by the case
# itself). The summary states those, never the machine that writes the summary
# (``--summary-only`` may run anywhere): a GEMM rate or CPU that no measurement was taken on
# would be a wrong number.


def _text_values(df: pd.DataFrame, col: str) -> list[str]:
    if col not in df:
        return []
    return list(dict.fromkeys(str(v) for v in df[col].dropna() if str(v).strip()))


def _span(values, nd: int = 0, sep: str = "–") -> str:
    """``193`` or ``191–205`` (the range of the values), formatted with ``nd`` decimals."""
    vals = sorted(float(v) for v in values if v is not None and math.isfinite(float(v)))
    if not vals:
        return ""
    lo, hi = _f(vals[0], nd), _f(vals[-1], nd)
    return lo if lo == hi else f"{lo}{sep}{hi}"


def _gemm_values(df: pd.DataFrame) -> list[float]:
    return list(pd.to_numeric(df["gemm_gflops"], errors="coerce").dropna()) if "gemm_gflops" in df else []


def _dates(df: pd.DataFrame) -> str:
    d = sorted(_text_values(df, "date"))
    return "" if not d else d[0] if d[0] == d[-1] else f"{d[0]} to {d[-1]}"


def _machines_of(df: pd.DataFrame) -> dict:
    """(cpu, cores) -> that machine's rows of a case CSV; rows that record no CPU under None."""
    if "cpu" not in df:
        return {None: df}
    cores = df["cores"] if "cores" in df else pd.Series("", index=df.index)
    key = [None if pd.isna(c) else (str(c), _f(k, 0) if pd.notna(k) else "?") for c, k in zip(df["cpu"], cores)]
    out: dict = {}
    for k, (_, row) in zip(key, df.iterrows()):
        out.setdefault(k, []).append(row)
    return {k: pd.DataFrame(v) for k, v in out.items()}


def machine_lines(frames: list[tuple[Case, pd.DataFrame]]) -> list[str]:
    """The summary's machine paragraph, from the rows it summarizes: per machine (CPU and cores)
    its BLAS, its float32 GEMM rates, the library versions, the cases measured on it and when."""
    per: dict = {}
    for case, df in frames:
        for key, rows in _machines_of(df).items():
            m = per.setdefault(key, {"cases": [], "rows": []})
            if case.number not in m["cases"]:
                m["cases"].append(case.number)
            m["rows"].append(rows)

    def describe(key, m) -> str:
        rows = pd.concat(m["rows"], ignore_index=True)
        cases = f"case{'s' if len(m['cases']) > 1 else ''} {', '.join(map(str, sorted(m['cases'])))}"
        if key is None:
            return f"not recorded for {cases}"
        gemm = _span(_gemm_values(rows))
        parts = [f"{key[0]}, {key[1]} cores"]
        parts += [f"BLAS {' / '.join(_text_values(rows, 'blas'))}"] if _text_values(rows, "blas") else []
        parts += [f"float32 GEMM {gemm} GFLOP/s"] if gemm else []
        parts += [" / ".join(_text_values(rows, "versions"))] if _text_values(rows, "versions") else []
        when = _dates(rows)
        return "; ".join(parts) + f" ({cases}{f', measured {when}' if when else ''})"

    if not per:
        return ["Machine: no case has been measured yet."]
    known = [k for k in per if k is not None]
    head = ("Every number below comes from the case CSVs written by `python -m benchmarks` (see "
            "benchmarks/__init__.py for the method), as each row recorded the machine it was measured on; "
            "the GEMM rate is the one measured with the case's rows, and each case says when, and on which "
            "CPU, it was measured.")
    if len(per) == 1 and known:
        return [f"Machine: {describe(known[0], per[known[0]])}. {head}"]
    kinds = f"{len(known)} kind{'s' if len(known) != 1 else ''} of machine"
    return [f"Machines: the cases were measured on {kinds} (CPU model and cores; one kind may be several "
            f"hosts, as its range of GEMM rates shows). {head}",
            ""] + [f"- {describe(k, per[k])}." for k in known + ([None] if None in per else [])]


def _case_section(case: Case, df: pd.DataFrame, targets: list[str]) -> list[str]:
    when = _dates(df)
    # cases are measured in separate invocations, possibly on other machines than the others
    on = []
    for key, rows in _machines_of(df).items():
        if key is None:
            continue
        gemm = _span(_gemm_values(rows))
        on.append(f"{key[0]}" + (f" (float32 GEMM {gemm} GFLOP/s)" if gemm else ""))
    cpus = ", ".join(on)
    load = ", ".join(sorted({_f(x) for x in df.get("load_avg", pd.Series(dtype=float)).dropna()}))
    lines = [f"## {case.number}. {case.title}", "",
             f"`{case.file}.csv`, measured {when or '(no date recorded)'}{f' on {cpus}' if cpus else ''}; "
             f"1-minute load average at the start of each child: {load or 'n/a'}.", ""]
    if case.name == "coldstart":
        lines += ["| code | task | numba cache | wall s | wall / reference | CPU s | compile CPU s | compilations | "
                  "costliest compiles (CPU s) | status |", "|---|---|---|---:|---:|---:|---:|---:|---|---|"]
        for _, r in df.iterrows():
            lines.append(f"| {r['code']} | {r['task']} | {r['numba_cache']} | {_f(r.get('wall_s'))} | "
                         f"{_f(r.get('wall_over_reference'))} | "
                         f"{_f(r.get('cpu_s'))} | {_f(r.get('compile_cpu_s'))} | {_f(r.get('compilations'), 0)} | "
                         f"{r.get('top_compiles', '') if pd.notna(r.get('top_compiles')) else ''} | {r.get('status', '')} |")
        after = df[df["code"].astype(str).str.startswith("after")]
        for _, r in after.iterrows():
            t = float(r["target_s"])
            ref = r.get("wall_over_reference")
            targets.append(f"Case {case.number}, {r['task']}, {r['numba_cache']}: {r['wall_s']:.2f} s wall, {r['cpu_s']:.2f} s CPU"
                           + (f", {ref:.2f}x the reference run in turn with it" if pd.notna(ref) else "") + "; "
                           f"target <= {t:g} s: {'met' if r['wall_s'] <= t else 'NOT met'} on wall time, "
                           f"{'met' if r['cpu_s'] <= t else 'NOT met'} on CPU time.")
    elif case.name == "figures":
        lines += ["| figure | first s | median s | CPU median s | median / target |",
                  "|---|---:|---:|---:|---:|"]
        for _, r in df.iterrows():
            lines.append(f"| {r['figure']} | {_f(r.get('first_s'), 3)} | {_f(r.get('median_s'), 3)} | "
                         f"{_f(r.get('cpu_median_s'), 3)} | {_f(r.get('median_over_target'), 2)} |")
        figs = df[df["figure"].isin(["learning_curves", "counts", "parameter_curve", "folds"])]
        if len(figs):
            worst = figs.loc[figs["median_s"].idxmax()]
            targets.append(f"Case {case.number}: the slowest quickstart figure ({worst['figure']}) {worst['median_s']:.3f} s "
                           f"median wall, {worst['cpu_median_s']:.3f} s CPU; target <= 0.3 s: "
                           f"{'met' if worst['median_s'] <= 0.3 else 'NOT met'} on wall time, "
                           f"{'met' if worst['cpu_median_s'] <= 0.3 else 'NOT met'} on CPU time.")
    elif case.name == "nystroem":
        lines += ["| tool | setting | fit s | test s | test error % | peer fit s / ours | status |",
                  "|---|---|---:|---:|---:|---:|---|"]
        for _, r in df.iterrows():
            lines.append(f"| {r['tool']} | {r['setting']} | {_f(r.get('fit_seconds'))} | {_f(r.get('test_seconds'))} | "
                         f"{_f(r.get('test_error_pct'))} | {_f(r.get('fit_ratio_peer_over_ours'))} | "
                         f"{r.get('status', '')} |")
        ours = df[df["tool"].astype(str).str.startswith("ours") & (df["status"] == "ok")]
        peer = df[~df["tool"].astype(str).str.startswith("ours") & (df["status"] == "ok")]
        if len(ours) and len(peer):
            o, q = ours.iloc[0], peer.iloc[0]
            targets.append(f"Case {case.number}: the MNIST estimator fits in {o['fit_seconds']:.1f} s "
                           f"({o['test_error_pct']:.2f}% error), {q['fit_seconds'] / o['fit_seconds']:.1f}x faster "
                           f"than {q['tool']} ({q['fit_seconds']:.1f} s, {q['test_error_pct']:.2f}%), "
                           "both in one invocation.")
    elif case.name == "memory":
        lines += ["| code | setting | units | wall s | train s | eval s | peak GB | run.json peak GB | "
                  "results.csv SHA-256 | same results | status |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---|---|---|"]

        def text(v):
            return "" if v is None or (isinstance(v, float) and pd.isna(v)) else str(v)

        for _, r in df.iterrows():
            lines.append(f"| {r['code']} | {r['setting']} | {_f(r.get('units'), 0)} | {_f(r.get('wall_s'))} | "
                         f"{_f(r.get('train_s'))} | {_f(r.get('eval_s'))} | {_f(r.get('peak_rss_gb'), 3)} | "
                         f"{_f(r.get('run_json_peak_gb'), 3)} | {text(r.get('results_sha256'))} | "
                         f"{text(r.get('same_results'))} | {text(r.get('status'))} |")
        after = df[df["code"].astype(str).str.startswith("after") & (df["setting"] == "every default")]
        for _, r in after.iterrows():
            if r.get("status") != "ok":
                targets.append(f"Case {case.number}: the headline run {r['status']}; target not checked.")
                continue
            t = float(r["target_gb"])
            targets.append(f"Case {case.number}: the headline run (`plab run configs/mnist_d4.yaml`, every default, "
                           f"{int(r['units'])} units) peaked at {r['peak_rss_gb']:.2f} GB in {r['wall_s']:.0f} s; "
                           f"target <= {t:g} GB: {'met' if r['peak_rss_gb'] <= t else 'NOT met'}.")
    elif case.name == "evaluation":
        lines += ["| setting | n test | updates | train s | eval s (first call) | eval s (again) | vote err % | "
                  "GEMM GFLOP/s | limit s | fraction of limit (first call) | fraction of limit (again) |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for _, r in df.iterrows():
            lines.append(f"| {r['setting']} | {r.get('eval_n_test')} | {r.get('mistakes')} | "
                         f"{_f(r.get('fit_seconds'))} | {_f(r.get('test_seconds'))} | {_f(r.get('test_seconds_repeat'))} | "
                         f"{_f(r.get('test_error_pct'))} | {_f(r.get('gemm_gflops'), 0)} | {_f(r.get('limit_seconds'))} | "
                         f"{_f(r.get('fraction_of_limit_first_call'), 3)} | {_f(r.get('fraction_of_limit'), 3)} |")
        ours = df[df["setting"].astype(str).str.startswith("exact")]
        if len(ours) and "fraction_of_limit" in ours:
            fr = float(ours["fraction_of_limit"].iloc[0])
            targets.append(f"Case 7: evaluation at {fr:.1%} of its limit; target >= {TARGETS['evaluation']:.0%}: "
                           f"{'met' if fr >= TARGETS['evaluation'] else 'NOT met'}.")
    elif case.name == "budget":
        lines += ["| setting | n train | train s | test s | last err % | avg err % | mistakes | largest support | "
                  "distinct support examples (last) | GEMM GFLOP/s | limit s | fraction of limit |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for _, r in df.iterrows():
            errs = {k: r.get(f"err_{k}") for k in ("last", "avg")}
            lines.append(f"| {r['setting']} | {r.get('n_train')} | {_f(r.get('fit_seconds'))} | {_f(r.get('test_seconds'))} | "
                         f"{_f(r.get('test_error_pct'))} | {_f(errs['avg'])} | {r.get('mistakes')} | "
                         f"{r.get('max_support')} | {r.get('support_examples_last')} | {_f(r.get('gemm_gflops'), 0)} | "
                         f"{_f(r.get('limit_seconds'))} | {_f(r.get('fraction_of_limit'), 3)} |")
        if "fit_seconds" in df:
            s = float(df["fit_seconds"].iloc[0])
            targets.append(f"Case 8: budgeted training {s:.1f} s; target <= {TARGETS['budget_seconds']:g} s: "
                           f"{'met' if s <= TARGETS['budget_seconds'] else 'NOT met'}.")
    elif case.name in ("limit", "scaling"):
        lines += ["| n train | T | wall s | train s | eval s | peak GB | SVs | mistakes | vote err % | GEMM GFLOP/s | "
                  "limit s | fraction of limit | of train+eval |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for _, r in df.iterrows():
            lines.append(f"| {r['n_train']} | {r['epochs']:g} | {_f(r['wall_seconds'])} | {_f(r['train_seconds'])} | "
                         f"{_f(r['eval_seconds'])} | {_f(r['peak_rss_gb'], 3)} | {r['support_vectors']} | "
                         f"{r['mistakes']} | {_f(r['vote_test_error_pct'])} | {_f(r['gemm_gflops'], 0)} | "
                         f"{_f(r['limit_seconds'])} | "
                         f"{_f(r['fraction_of_limit'], 3)} | {_f(r.get('fraction_of_limit_train_eval'), 3)} |")
        if case.name == "scaling":
            r = df.iloc[0]
            lines += ["", "Growth exponents (time or memory ~ n^k): " + ", ".join(
                f"{k[len('exponent_'):]} {_f(r[k])}" for k in df.columns if k.startswith("exponent_"))]
        else:
            fr = float(df["fraction_of_limit"].iloc[0])
            targets.append(f"Case 5: {fr:.1%} of the limit (wall, n = {df['n_train'].iloc[0]}, "
                           f"T = {df['epochs'].iloc[0]:g}); target >= {TARGETS['limit']:.0%}: "
                           f"{'met' if fr >= TARGETS['limit'] else 'NOT met'}.")
    else:
        lines += _measure_table(df)
        rr = ratio_rows(case.name, df)
        lines += _ratio_table(rr)
        targets.extend(_target_lines(case, df, rr))
    lines += [""] + [f"{n}" for n in NOTES.get(case.name, [])] + [""]
    return lines


def _target_lines(case: Case, df: pd.DataFrame, rr: list[dict]) -> list[str]:
    ok = _ok(df)
    ours = ok[ok.tool.str.startswith("ours")]
    if case.name in ("linear", "averaged"):
        rule = "avg" if case.name == "averaged" else "last"
        d = [r for r in rr if r["ours"] == linear_setting(rule)]
        if not d:
            return [f"Case {case.number}: not measured."]
        best = min(d, key=lambda r: r["total_speedup"])  # against scikit-learn's slower-for-us setting
        t = [r for r in rr if r["ours"] == linear_setting(None)]
        tb = min(t, key=lambda r: r["total_speedup"]) if t else None
        line = (f"Case {case.number}: ours (test: {rule} rule) vs {best['peer']}: "
                f"{best['fit_speedup']:.2f}x on training, {best['total_speedup']:.2f}x on training + test")
        if tb:
            line += (f"; computing all {len(_rules())} rules on the test set: "
                     f"{tb['total_speedup']:.2f}x on training + test")
        met = best["fit_speedup"] >= TARGETS["linear"] and best["total_speedup"] >= TARGETS["linear"]
        line += f". Target >= {TARGETS['linear']:g}x: {'met' if met else 'NOT met'}"
        return [line + "."]
    if case.name == "alma":
        if ours.empty:
            st = df[df.tool == "ours"]["status"].iloc[0] if (df.tool == "ours").any() else "not measured"
            return [f"Case 3: ours {st}; target >= {TARGETS['alma']:g}x River not checked."]
        mine = [r for r in rr if "thread" not in r["ours"]]
        if not mine:
            return ["Case 3: River not measured."]
        parts = [f"{r['fit_speedup']:.1f}x / {r['total_speedup']:.1f}x vs "
                 f"{'dense' if 'dense' in r['peer'] else 'sparse'} dicts" for r in mine]
        verdict = ", ".join(f"{'met' if r['total_speedup'] >= TARGETS['alma'] else 'NOT met'} vs "
                            f"{'dense' if 'dense' in r['peer'] else 'sparse'} dicts" for r in mine)
        return [f"Case 3, ours (test: {'/'.join(ALMA_RULES)}): training / training + test {', '.join(parts)}; "
                f"target >= {TARGETS['alma']:g}x on training + test: {verdict}."]
    if case.name == "kernel":
        out = []
        for n in sorted(set(ours.n_train)):
            o = ours[(ours.n_train == n) & (ours.epochs.astype(float) == 10)]
            s = df[(df.n_train == n) & (df.tool == "sklearn SVC") & df.setting.str.startswith("same kernel")]
            if o.empty or s.empty:
                continue
            o, s = o.iloc[0], s.iloc[0]
            if s["status"] != "ok":
                out.append(f"Case 4, n = {n}: SVC {s['status']}; ours T = 10 took {o['total_seconds']:.1f} s, "
                           f"{o['test_error_pct']:.2f}% error.")
                continue
            sp = s["total_seconds"] / o["total_seconds"]
            diff = o["test_error_pct"] - s["test_error_pct"]
            met = sp >= TARGETS["kernel_speedup"] and diff <= TARGETS["kernel_points"]
            out.append(f"Case 4, n = {n}: ours T = 10 {o['test_error_pct']:.2f}% in {o['total_seconds']:.1f} s vs "
                       f"SVC {s['test_error_pct']:.2f}% in {s['total_seconds']:.1f} s: {sp:.1f}x faster, "
                       f"{diff:+.2f} points; target (<= +0.5 points in <= 1/5 of the time): "
                       f"{'met' if met else 'NOT met'}.")
        return out
    return []


#: The full reproduction's target, in minutes of wall time (``make reproduce JOBS=2``, the core set).
REPRODUCTION_TARGET_MIN = 55.0


def reproduction_lines(log: Path) -> list[str]:
    """The full reproduction's wall time against its target, from ``results/reproduce.json`` (the
    log ``python -m perceptron_lab.cli.reproduce`` writes): measured only when its latest
    invocation computed every config, else said to be unmeasured."""
    from perceptron_lab.cli.reproduce import SETS
    from perceptron_lab.report.tables import read_log, recorded_seconds

    d = read_log(log)
    if not d:
        return ["Full reproduction: not measured (no results/reproduce.json)."]
    logged = d.get("configs") or {}
    scratch = recorded_seconds(logged)   # computed from scratch: every unit ran, none reused
    configs = SETS[d.get("set") or "core"]
    earlier = [c for c in configs if c not in scratch or logged[c].get("from_earlier_invocation")]
    minutes = float(d.get("wall_seconds") or 0.0) / 60.0
    what = f"`make reproduce JOBS={d.get('jobs')}` (set {d.get('set') or 'core'})"
    if earlier or not configs or not d.get("finished"):
        return [f"Full reproduction, {what}: not measured in one invocation (the latest, {minutes:.1f} min, "
                f"reused or left {len(earlier)} of {len(configs)} configs); target <= "
                f"{REPRODUCTION_TARGET_MIN:g} min not checked."]
    cores = d.get("machine", {}).get("cpus")
    lines = [f"Full reproduction, {what}: {minutes:.1f} min wall for all {len(configs)} configs, the figures and "
             f"the report in one invocation on {cores} cores (finished {d['finished']}); "
             f"target <= {REPRODUCTION_TARGET_MIN:g} min: {'met' if minutes <= REPRODUCTION_TARGET_MIN else 'NOT met'}."]
    return lines + work_lines(d, configs)


def work_lines(d: dict, configs) -> list[str]:
    """Where a reproduction's cores went: training and evaluation summed over every unit of
    ``configs`` (in whichever process ran it), against the cores' time, and the configs with the
    most of it. Only for logs that record each config's own totals (``own_totals``): older logs
    could carry an earlier invocation's."""
    from perceptron_lab.cli.reproduce import work_seconds

    logged = d.get("configs") or {}
    cores = int(d.get("jobs") or 1)
    # work_seconds falls back on wall time x jobs, which is not work: only entries with both totals
    work = {c: work_seconds(logged[c]) for c in configs if c in logged
            and logged[c].get("train_seconds_total") is not None and logged[c].get("eval_seconds_total") is not None}
    if not d.get("own_totals") or len(work) != len(configs) or not d.get("wall_seconds"):
        return []
    total = sum(work.values())
    avail = float(d["wall_seconds"]) * cores
    top = sorted(work, key=lambda c: -work[c])[:5]
    most = ", ".join(f"`{Path(c).parent.name}/{Path(c).stem}` {work[c] / 60:.1f}" for c in top)
    return [f"Its work: training and evaluation, summed over the units of its {len(configs)} configs, took "
            f"{total / 60:.1f} of the {avail / 60:.1f} minutes its {cores} worker processes had "
            f"({100 * total / avail:.0f} %; the rest went to planning, loading, writing, the figures, the "
            f"report and waiting). The most (minutes of work): {most}."]


def read_case(path: Path) -> pd.DataFrame:
    """A case CSV, read back whole first (UTF-8, ending with a newline, every row as wide as the
    header): a file cut short raises :class:`~perceptron_lab.errors.DamagedFileError` instead of
    summarizing the rows that survived."""
    from perceptron_lab.run.store import read_back_csv

    read_back_csv(path, fix="restore it (git checkout -- FILE) or measure the case again (python -m benchmarks "
                            "--cases N)".replace("FILE", str(path)))
    return pd.read_csv(path)


def write_summary(out: Path) -> str:
    """summary.md (and ratios.csv) from every case CSV present in ``out``. Nothing is measured
    here: the machine paragraph comes from the rows summarized (:func:`machine_lines`), so the
    file is the same wherever and whenever it is written from the same CSVs. A damaged case CSV
    or reproduction log stops it before anything is written (:func:`read_case`)."""
    frames = []
    for case in CASES:
        path = out / f"{case.file}.csv"
        if not path.exists():
            continue
        df = read_case(path)
        if "status" not in df and case.name not in ("limit", "scaling", "figures"):
            continue
        frames.append((case, df))
    lines = ["# Benchmarks", ""] + machine_lines(frames) + ["",
             "Ratios compare two sides measured back to back in one invocation on the same data; "
             "speedup = peer seconds / our seconds (> 1: ours is faster). total = fit + test predictions. "
             "peak MB is the child process's peak resident memory (including the loaded MNIST arrays, "
             "the same for both sides); extra MB is the peak above the memory in use before the timed call.", ""]
    targets: list[str] = []
    body: list[str] = []
    all_ratios = []
    for case, df in frames:
        body += _case_section(case, df, targets)
        if case.name not in ("limit", "scaling", "coldstart", "figures", "nystroem", "memory"):
            all_ratios += ratio_rows(case.name, df)
    targets += reproduction_lines(out.parent / "reproduce.json")
    lines += ["## Targets", ""] + [f"- {t}" for t in targets] + [""] + body
    text = "\n".join(lines).rstrip() + "\n"
    # written once everything is read: a damaged input leaves both files as they were
    if all_ratios:
        pd.DataFrame(all_ratios).to_csv(out / "ratios.csv", index=False)
    (out / "summary.md").write_text(text)
    return text


# ----------------------------------------------------------------------------- main
