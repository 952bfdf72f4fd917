"""The first run after installing: numba's on-disk cache empty, every jitted function compiled.

``python -m benchmarks.coldstart [--baseline REV] [--out results/bench/coldstart.csv]``

Each task runs in a child process of its own with ``NUMBA_CACHE_DIR`` pointed at a new, empty
folder: the quickstart (``plab run``, sonar, 208 examples, with its figures), then the quickstart
again on the same cache (the warm run a user sees next; :data:`WARM_REPEATS` runs, the median
reported), and the first ``fit`` and ``predict`` of
each scikit-learn estimator on sonar. The child records every numba compilation (numba's
``numba:compile`` event) with the CPU seconds spent in it, less those of the compilations it
started (a jitted function's callees are compiled inside it): ``compile_cpu_s`` sums them.
Wall seconds and the child's CPU seconds (user + system, from ``os.wait4``) are both reported:
CPU is the steadier figure when other work shares the machine. The children write and read
Python's bytecode cache as a user's Python does (``PYTHONDONTWRITEBYTECODE`` is dropped from
their environment): the first run pays for compiling the modules, the warm runs do not.

``--baseline REV`` measures the same tasks on the code of a git revision too (its files taken with
``git archive`` into a temporary folder, imported ahead of the installed package), in the same
invocation, so that the rows before and after a change come from one machine and one load. The
two versions take turns, task by task and warm run by warm run (:func:`measure`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The estimators whose first fit is measured, with their settings (sonar, seeded).
ESTIMATORS = {
    "VotedPerceptron": {"random_state": 0},
    "MarginPerceptron": {"tau": 0.1, "random_state": 0},
    "ALMA": {"alpha": 0.9, "random_state": 0},
    "BudgetPerceptron": {"random_state": 0},
}
#: The target of a first run, in wall seconds.
TARGET_COLD_S = 10.0
#: The target of the warm quickstart, in wall seconds (with its figures).
TARGET_WARM_S = 2.0
#: Compiled functions listed per row (the costliest).
TOP = 4
#: The reference run, measured in turn with the warm quickstart: importing the libraries a run
#: imports, which no version of plab changes, so that a row's wall time can be read against the
#: machine's speed at that moment (``wall_over_reference``).
REFERENCE_IMPORTS = ("numpy", "pandas", "numba", "matplotlib.figure", "matplotlib.backends.backend_agg")
#: Runs of the warm quickstart; its row reports their median (one run's wall time moves by tenths
#: of a second with what else the machine does).
WARM_REPEATS = 5


# ----------------------------------------------------------------------------- child side


def use_source(src: str | None) -> None:
    """Import perceptron_lab from the folder ``src`` (another revision's files) from now on, ahead
    of the installed package; the editable install's import finder would take precedence over
    ``sys.path``, so it is dropped. None: the installed package."""
    if src:
        sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
        sys.path.insert(0, src)


def plab_command():
    """plab's click command, from the layer packages or from a revision before them."""
    try:
        from perceptron_lab.cli.main import main
    except ImportError:  # a baseline revision from before the layer packages
        from perceptron_lab.cli import main
    return main


def head_label() -> str:
    """This checkout's short revision, or "this checkout" outside git."""
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip() or "this checkout"


def _child(spec: dict) -> None:
    """Run one task with every numba compilation recorded; write the result to ``spec["result"]``."""
    use_source(spec.get("src"))
    import numba.core.event as ev

    records: list = []
    stack: list = []

    class _Compiles(ev.Listener):
        def on_start(self, event):
            stack.append([event.data["dispatcher"], time.process_time(), 0.0])

        def on_end(self, event):
            d, t0, inner = stack.pop()
            dt = time.process_time() - t0
            if stack:
                stack[-1][2] += dt
            f = getattr(d, "py_func", None)
            records.append((f"{f.__module__}.{f.__qualname__}" if f else str(d), dt - inner))

    ev.register("numba:compile", _Compiles())
    t0, c0 = time.perf_counter(), time.process_time()
    task = spec["task"]
    if task == "reference":
        for name in REFERENCE_IMPORTS:
            __import__(name)
    elif task == "quickstart":
        try:
            plab_command()(["run", "-q", "--force", "--out", spec["out"]], standalone_mode=False)
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise
    else:
        import numpy as np

        import perceptron_lab
        from perceptron_lab.datasets import load_dataset

        ds = load_dataset("sonar")
        est = getattr(perceptron_lab, task)(**ESTIMATORS[task])
        est.fit(ds.X_train, ds.y_train)
        spec["fit_s"] = time.perf_counter() - t0
        spec["accuracy"] = float(np.mean(est.predict(ds.X_train) == ds.y_train))
    by: dict = {}
    for name, s in records:
        by[name] = by.get(name, 0.0) + s
    top = sorted(by.items(), key=lambda kv: -kv[1])[:TOP]
    Path(spec["result"]).write_text(json.dumps({
        "inner_wall_s": time.perf_counter() - t0, "inner_cpu_s": time.process_time() - c0,
        "compile_cpu_s": sum(s for _, s in records), "compilations": len(records),
        "fit_s": spec.get("fit_s"), "accuracy": spec.get("accuracy"),
        "top_compiles": "; ".join(f"{n.rsplit('.', 1)[-1]} {s:.2f}" for n, s in top)}))


# ----------------------------------------------------------------------------- parent side


def _spawn(spec: dict, cache: str) -> dict:
    """One child: wall and CPU seconds (user + system, of this child alone) and peak memory."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    # Python's bytecode cache as a user's Python keeps it: the first run writes it, later ones read it
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    with tempfile.TemporaryDirectory() as tmp:
        spec = dict(spec, result=str(Path(tmp) / "result.json"))
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "benchmarks.coldstart", "--child", json.dumps(spec)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)   # reaped here: Popen must know (else a ResourceWarning)
        wall = time.perf_counter() - t0
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
        res = Path(spec["result"])
        code = os.waitstatus_to_exitcode(status)
        row = json.loads(res.read_text()) if code == 0 and res.exists() else {}
    row.update(wall_s=round(wall, 3), cpu_s=round(ru.ru_utime + ru.ru_stime, 3),
               peak_rss_mb=round(ru.ru_maxrss / 1e3), status="ok" if code == 0 else f"failed: {err[-300:]}")
    return row


def _median_row(rows: list[dict]) -> dict:
    """One row for repeated runs of a task: the run of median wall time, with every run's wall
    seconds (``wall_runs_s``); failed if any run failed."""
    ok = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: r["wall_s"])
    if len(ok) < len(rows):
        return next(r for r in rows if r["status"] != "ok")
    return dict(ok[len(ok) // 2], wall_runs_s=" ".join(f"{r['wall_s']:.2f}" for r in rows))


def measure(versions: list[tuple[str, str | None]], out_dir: Path) -> list[dict]:
    """Every task on each version of the code (``(code, src)``: its label and folder, None for
    the installed package), the versions taking turns task by task and, for the warm quickstart,
    run by run: the machine's speed drifts over the minutes a measurement takes, and taking turns
    spreads that drift over every version instead of charging it to the one measured last.
    Rows come grouped by version, in the order of ``versions``."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    rows: dict = {code: [] for code, _ in versions}
    with contextlib.ExitStack() as stack:
        caches = {code: stack.enter_context(tempfile.TemporaryDirectory()) for code, _ in versions}
        ref_cache = stack.enter_context(tempfile.TemporaryDirectory())   # it compiles nothing
        out = {code: str(out_dir / f"quickstart-{code}") for code, _ in versions}
        for code, src in versions:
            rows[code].append({"code": code, "task": "plab run (quickstart)", "numba_cache": "first run (cache empty)",
                               "load_avg": load, **_spawn({"task": "quickstart", "out": out[code], "src": src},
                                                          caches[code])})
        again: dict = {code: [] for code, _ in versions}
        reference = []
        for _ in range(WARM_REPEATS):
            for code, src in versions:
                again[code].append(_spawn({"task": "quickstart", "out": out[code], "src": src}, caches[code]))
            reference.append(_spawn({"task": "reference"}, ref_cache))
        ref = _median_row(reference)
        for code, _ in versions:
            row = _median_row(again[code])
            rows[code].append({"code": code, "task": "plab run (quickstart)",
                               "numba_cache": f"again (cache warm), median of {WARM_REPEATS}, versions in turn",
                               "load_avg": load, **row, **_over_reference(row, ref)})
    reference_row = {"code": "reference", "task": f"import {', '.join(REFERENCE_IMPORTS)}",
                     "numba_cache": f"in turn with the warm runs, median of {WARM_REPEATS}", "load_avg": load, **ref}
    for name in ESTIMATORS:
        for code, src in versions:
            with tempfile.TemporaryDirectory() as cache:
                rows[code].append({"code": code, "task": f"{name}().fit + predict, sonar",
                                   "numba_cache": "first run (cache empty)", "load_avg": load,
                                   **_spawn({"task": name, "src": src}, cache)})
    return [r for code, _ in versions for r in rows[code]] + [reference_row]


def _over_reference(row: dict, ref: dict) -> dict:
    """``wall_over_reference``: a row's wall seconds over the reference run's, both medians."""
    if row["status"] != "ok" or ref["status"] != "ok" or not ref["wall_s"]:
        return {}
    return {"wall_over_reference": round(row["wall_s"] / ref["wall_s"], 3)}


def _checkout(rev: str, dest: Path) -> str:
    """The files of git revision ``rev`` of this repository, unpacked under ``dest``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev], check=True, capture_output=True,
                          text=True).stdout.strip()


def run(baseline: str | None, out: Path, runs_dir: Path) -> "object":
    """The rows of every version measured (the baseline's first), as a DataFrame written to ``out``."""
    import pandas as pd

    runs_dir.mkdir(parents=True, exist_ok=True)
    head = head_label()
    with tempfile.TemporaryDirectory() as tmp:
        versions = [(f"after ({head})", None)]
        if baseline:
            versions.insert(0, (f"before ({_checkout(baseline, Path(tmp))})", tmp))
        rows = measure(versions, runs_dir)
    df = pd.DataFrame(rows)
    df["target_s"] = [None if code == "reference" else TARGET_WARM_S if "warm" in c else TARGET_COLD_S
                      for code, c in zip(df["code"], df["numba_cache"])]
    df["wall_over_target"] = (df["wall_s"] / df["target_s"]).round(3)
    df["cpu_over_target"] = (df["cpu_s"] / df["target_s"]).round(3)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False, float_format="%.3f")
    return df


def figure_rows(run_dir: Path, repeats: int = 5) -> list[dict]:
    """Case 10: each of the quickstart's four figures drawn ``repeats`` times in this process
    (:func:`perceptron_lab.run.figures.plot_run`'s functions, on the inputs it gives them), first and
    median wall seconds and median CPU seconds, next to a blank figure written as PNG in the same
    process; the ratio of the median to the target (:data:`benchmarks.figures.TARGET_S`)."""
    from perceptron_lab.run import figures as plots

    from .figures import TARGET_S, _blank, _time

    run_dir = Path(run_dir)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    t0 = time.perf_counter()
    df, info, labels = plots.read_run(run_dir)
    read_s = time.perf_counter() - t0
    ref_first, ref, ref_cpu = _time(_blank, repeats)
    rows = [{"figure": "reference: blank figure to PNG", "first_s": ref_first, "median_s": ref, "cpu_median_s": ref_cpu},
            {"figure": "read the run folder", "first_s": read_s, "median_s": read_s}]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        draws = (("learning_curves", lambda: plots.plot_learning_curves(df, info, labels, out / "a.png")),
                 ("counts", lambda: plots.plot_counts(df, info, labels, out / "b.png")),
                 ("parameter_curve", lambda: plots.plot_parameter_curve(df, info, run_dir, out / "c.png")),
                 ("folds", lambda: plots.plot_folds(df, info, labels, out / "d.png")),
                 ("plab plot: read + all four", lambda: plots.plot_run(run_dir, out)))
        for name, fn in draws:
            first, med, cpu = _time(fn, repeats)
            rows.append({"figure": name, "first_s": first, "median_s": med, "cpu_median_s": cpu})
    for r in rows:
        r.update(load_avg=load, reference_s=ref, median_over_reference=r["median_s"] / ref,
                 median_over_target=r["median_s"] / TARGET_S,
                 cpu_median_over_target=(r.get("cpu_median_s") or float("nan")) / TARGET_S)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=None, help="also measure this git revision (e.g. main), first")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "coldstart.csv")
    ap.add_argument("--runs", type=Path, default=None,
                    help="where the quickstart runs are written (default: a temporary folder)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child is not None:
        _child(json.loads(a.child))
        return
    with tempfile.TemporaryDirectory() as tmp:
        df = run(a.baseline, a.out, a.runs or Path(tmp))
    cols = ["code", "task", "numba_cache", "wall_s", "cpu_s", "compile_cpu_s", "compilations", "status"]
    print(df[cols].to_string(index=False))
    print(f"written {a.out}")


if __name__ == "__main__":
    main()
