"""Regenerate the paper tables: ``python -m perceptron_lab.reproduce`` (``make reproduce``).

Runs every paper-table config in turn, resuming whatever is already finished in its output
folder (each run shows a progress bar with the time left), merges the Khardon & Wachman table
parts, draws the combined Freund & Schapire figure and Gentile's Figures 3-5 (margin
distributions, ``results/gentile2001/gentile2001_figure{3,4,5}.png``, about two minutes of
training of their own), writes the report (results/report/) and
prints how many compared cells are within the tolerances. ``results/reproduce.json`` keeps the
wall time of every config (from the last invocation that computed it, so a reproduction split over
several invocations still adds up) and of the latest invocation; the next reproduction estimates
its time left from it.

Three sets of configs:

* ``core`` (the default): Freund & Schapire Tables 1-3 (d = 1..6, full MNIST, 10
  permutations); Khardon & Wachman Tables 2, 3 (UCI, USPS, MNIST), 4, 5 (Adult), 6 and 7 (Adult,
  USPS linear and degree 4); Gentile
  Tables 1-2 (USPS: the kernel-width searches, the chosen widths and the paper's sigma = 3.5),
  3-4 (MNIST, d = 4, 5, 6), 5 (Letter) and 6 (artificial data) -- the results committed under
  ``results/``;
* ``full`` adds Khardon & Wachman's Table 7 on MNIST (parameter optimization by 10-fold
  cross-validation on the 60000 training examples, linear and degree-4 kernels), which takes hours
  on two cores;
* ``budget``: the budget study beyond the papers (``configs/budget/``, then
  :func:`perceptron_lab.studies.budget.write_study`: ``results/budget/``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path


from . import plugins
from .config import load_config
from .experiment import run_experiment
from .store import atomic_write_text
from .report import collect, read_log, recorded_seconds, summary_lines, write_report
from .studies import budget as budget_study

ROOT = Path(__file__).resolve().parents[1]

CORE = (
    [f"configs/fs1999/table1_d{d}.yaml" for d in (4, 5, 6, 3, 2, 1)]
    + [f"configs/kw2007/{n}.yaml" for n in (
        "table2", "table3_uci", "table3_usps", "table3_mnist", "table4", "table5", "table6_artificial",
        "table6_uci", "table7_adult", "table7_usps", "table7_usps_poly4",
        "table3_usps_split", "table3_mnist_split", "table5_raw_units", "table5_standardized")]
    + [f"configs/gentile2001/{n}.yaml" for n in (
        "usps_sigma_cv", "usps_sigma_cv_perceptron", "table1_usps_alma", "table1_usps_perceptron",
        "table1_usps_alma_sigma3.5", "table1_usps_perceptron_sigma3.5",
        "table3_mnist_d4", "table3_mnist_d5", "table3_mnist_d6", "table3_mnist_perceptron",
        "table5_letter_alma", "table5_letter_perceptron",
        "table6", "table6_B_stated")]
)
FULL_EXTRA = [f"configs/kw2007/{n}.yaml" for n in ("table7_mnist", "table7_mnist_poly4")]
BUDGET = [f"configs/{c}.yaml" for c in budget_study.configs()]
SETS = {"core": CORE, "full": CORE + FULL_EXTRA, "budget": BUDGET}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="*", help="configs to run (default: the --set)")
    ap.add_argument("--set", choices=sorted(SETS), default="core", help="which configs (default: core)")
    ap.add_argument("--data-dir", default=os.environ.get("PLAB_DATA"))
    ap.add_argument("--jobs", type=int, default=1, help="worker processes per config (default 1)")
    ap.add_argument("--list", action="store_true", help="print the configs and exit")
    args = ap.parse_args(argv)
    os.chdir(ROOT)
    configs = args.configs or SETS[args.set]
    if args.list:
        print("\n".join(configs))
        return
    t0 = time.perf_counter()
    log_path = Path("results/reproduce.json")
    earlier_log = read_log(log_path)
    earlier = earlier_log.get("configs") or {}
    # figure times are kept from the last invocation that drew them, like the configs'
    figure_times = dict(earlier_log.get("figures") or {})
    previous = recorded_seconds(earlier)
    # every config's entry is the last invocation that computed it (this one or an earlier one)
    times = {c: dict(t, from_earlier_invocation=True) for c, t in earlier.items()}
    for i, path in enumerate(configs, 1):
        cfg = load_config(path)
        print(f"[{i}/{len(configs)}] {path}{time_left(configs[i - 1:], previous, time.perf_counter() - t0)}",
              flush=True)
        t1 = time.perf_counter()
        res = run_experiment(cfg, data_dir=args.data_dir, progress=True, jobs=args.jobs)
        record(times, path, res.ran, res.skipped, time.perf_counter() - t1, args.jobs, res.run_info)
        # the log so far, so an interrupted reproduction keeps the times of what finished
        write_log(log_path, args, None, time.perf_counter() - t0, times, figure_times)
    total = time.perf_counter() - t0
    print(f"all configs done in {total:.0f} s")
    # each paper's whole tables and figures, from its runs (Gentile's Figures 3-5 train runs of
    # their own), for the papers whose configs ran
    for paper in plugins.papers():
        if paper.combine:
            paper.combine("results")
        if paper.reproduce_figures and any(f"/{paper.name}/" in f"/{c}" for c in configs):
            print(f"{paper.short}: figures", flush=True)
            t1 = time.perf_counter()
            for p in paper.reproduce_figures("results", args.data_dir):
                print(f"  {p}")
            figure_times[f"{paper.name}_figures"] = {"wall_seconds": round(time.perf_counter() - t1, 1)}
    if any(c in BUDGET for c in configs):
        print("budget study: the Nyström peer, the mistake curves, figures and summary", flush=True)
        t1 = time.perf_counter()
        for p in budget_study.write_study("results", args.data_dir):
            print(f"  {p}")
        figure_times["budget_study"] = {"wall_seconds": round(time.perf_counter() - t1, 1)}
    # the finished log first: the report states the reproduction's time from it
    write_log(log_path, args, datetime.now(timezone.utc).isoformat(timespec="seconds"), total, times,
              figure_times)
    md, _ = write_report(["results"], "results/report")
    for line in summary_lines(collect(["results"])):
        print(line.replace("**", ""))
    print(f"report: {md}")


def record(times: dict, path: str, ran: int, reused: int, wall: float, jobs: int, run_info: dict) -> None:
    """Enter a config's invocation in the log's ``times``, unless nothing ran and an earlier
    invocation's entry (the one that computed it) is there."""
    if ran or path not in times:
        times[path] = {"wall_seconds": round(wall, 1), "ran": ran, "reused": reused, "jobs": jobs,
                       "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                       "train_seconds_total": run_info.get("train_seconds_total"),
                       "eval_seconds_total": run_info.get("eval_seconds_total"),
                       "load_seconds": run_info.get("load_seconds"), "write_seconds": run_info.get("write_seconds"),
                       "peak_rss_gb_per_process": run_info.get("peak_rss_gb_per_process")}


def time_left(remaining, previous: dict, elapsed: float) -> str:
    """`` (elapsed ..., about ... left)`` for the configs still to run, from the times recorded by
    an earlier reproduction; configs finished in their output folders take less (they are reused)."""
    if not previous:
        return ""
    known = [previous[c] for c in remaining if c in previous]
    unknown = len(remaining) - len(known)
    if not known:
        return f"  (elapsed {_minutes(elapsed)}; no recorded time for the {unknown} config(s) left)"
    left = f"at most about {_minutes(sum(known))} left"
    if unknown:
        left += f" + {unknown} config(s) without a recorded time"
    return f"  (elapsed {_minutes(elapsed)}; {left}, from results/reproduce.json)"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def write_log(log_path: Path, args, finished, total: float, times: dict, figure_times: dict) -> None:
    atomic_write_text(log_path, json.dumps({
        "finished": finished, "set": args.set if not args.configs else None,
        "jobs": args.jobs, "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
        "wall_seconds": round(total, 1), "configs": times, "figures": figure_times}, indent=2) + "\n")


if __name__ == "__main__":
    main()
