"""Regenerate the paper tables: ``python -m perceptron_lab.cli.reproduce`` (``make reproduce``).

Runs every paper-table config, resuming whatever is already finished in its output folder. With
``--jobs 1`` the configs run in turn, each with its progress bar and the time left. With
``--jobs N > 1`` they run side by side in one pool of N worker processes: up to N + 1 configs are
planned, computed and written at once, the longest recorded first, so that no worker waits while a
config's last part or its writing finishes (a bar counts the configs done). A config's results do
not depend on this: each part's rows depend only on its config and the part. Each process keeps
:data:`KEEP_GB` of other runs' kernel columns (``PLAB_SHARED_COLUMNS_GB`` sets another amount;
``plab run`` keeps none by default). Every config and its
data files are checked before any work starts. Then it merges the Khardon & Wachman table parts,
draws the combined Freund & Schapire figure and Gentile's Figures 3-5 (margin distributions,
``results/gentile2001/gentile2001_figure{3,4,5}.png``, about a minute of training of their own,
which read no results: with ``--jobs N > 1`` a worker draws them beside the configs), writes the report (results/report/) and prints how many compared cells are within the tolerances. ``results/reproduce.json`` keeps the
wall time of every config (from the last invocation that computed it, so a reproduction split over
several invocations still adds up) and of the latest invocation; the next reproduction estimates
its time left from it.

Three sets of configs:

* ``core`` (the default): Freund & Schapire Tables 1-3 (d = 1..6, full MNIST, 10
  permutations); Khardon & Wachman Tables 2, 3 (UCI, USPS, MNIST), 4, 5 (Adult, over 10 draws of
  each fold's N examples and order), 6 and 7 (Adult, USPS linear and degree 4, each over 10
  training orders) and the variants below ``results/kw2007/variants/``; Gentile
  Tables 1-2 (USPS: the kernel-width searches, the chosen widths and the paper's sigma = 3.5),
  3-4 (MNIST, d = 4, 5, 6), 5 (Letter) and 6 (artificial data) -- the results committed under
  ``results/``;
* ``full`` adds Khardon & Wachman's Table 7 on MNIST (parameter optimization by 10-fold
  cross-validation on the 60000 training examples, linear and degree-4 kernels, one training
  order each), which takes hours on two cores;
* ``budget``: the budget study beyond the papers (``configs/budget/``, then
  :func:`perceptron_lab.studies.budget.write_study`: ``results/budget/``), and DOGMA's budget demo
  over many draws (:func:`perceptron_lab.studies.dogma.write`: ``results/budget/dogma_demo/``).

Where each config's results go is :data:`RESULTS_DIRS`, and only here: the packaged configs have
no ``output.dir``, so ``plab run CONFIG`` writes to ``runs/<name>/`` (or ``--out``) and never into
the tracked ``results/``. A reproduction runs each config with ``output.dir`` set from the table,
so its ``run.json`` records the folder it was written to.

A reproduction that changes no result leaves the tracked records as they were
(:func:`perceptron_lab.run.experiment.run_experiment`: a run folder's ``run.json`` and
``timings.json`` keep the times, host and revision of the invocation that made its results while
those results stay byte for byte the same; ``results/reproduce.json`` is rewritten only by an
invocation that computed something).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from perceptron_lab.run.runtime import configure as configure_process

if __name__ == "__main__":
    configure_process()   # plab's process settings, before numpy loads OpenBLAS (perceptron_lab.run.runtime)

from perceptron_lab.config import plugins  # noqa: E402  (after the process settings)
from perceptron_lab.config.load import load_config, with_overrides  # noqa: E402
from perceptron_lab.engine import columns  # noqa: E402
from perceptron_lab.constants import source_checkout  # noqa: E402
from perceptron_lab.errors import CheckoutRequired, UsageError  # noqa: E402
from perceptron_lab.run.experiment import run_experiment  # noqa: E402
from perceptron_lab.run.inputs import verify_inputs
from perceptron_lab.run.store import atomic_write_text  # noqa: E402
from perceptron_lab.run.runtime import peak_rss_mb  # noqa: E402
from perceptron_lab.report.tables import collect, read_log, recorded_seconds, summary_lines, write_report  # noqa: E402
from perceptron_lab.studies import budget as budget_study  # noqa: E402
from perceptron_lab.studies import dogma as dogma_study  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

#: Gigabytes of other runs' kernel columns each process of a reproduction keeps
#: (``PLAB_SHARED_COLUMNS_GB``, :mod:`perceptron_lab.engine.columns`), unless the caller set an
#: amount: a reproduction is a batch of many runs on the same training sets, and its recorded times
#: (``results/reproduce.json``) and peaks (each ``run.json``) were measured with this amount;
#: ``plab run`` keeps none by default, to stay within a laptop's memory.
KEEP_GB = 0.5

CORE = (
    [f"configs/fs1999/table1_d{d}.yaml" for d in (4, 5, 6, 3, 2, 1)]
    + [f"configs/kw2007/{n}.yaml" for n in (
        "table2", "table3_uci", "table3_usps", "table3_mnist", "table4", "table5", "table6_artificial",
        "table6_uci", "table7_adult", "table7_usps", "table7_usps_poly4",
        "table3_usps_split", "table3_mnist_split", "table5_raw_units", "table5_standardized",
        "table3_uci_lambda_indicator", "table4_lambda_indicator", "table4_weight_per_example",
        "table3_uci_promoters_name_dropped", "table5_single_run")]
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

#: The folder under ``results/`` each config of the reproduction writes: the one place that maps
#: configs to tracked results. A table here rather than a config key because a config key is
#: inherited by ``extends`` (``configs/mnist_d4.yaml`` extends Table 1's d = 4 config, and with it
#: used to write into ``results/fs1999/d4``) and would shadow ``output.dir``, the key a user's
#: config sets; the list of what ``make reproduce`` runs lives in this module anyway.
RESULTS_DIRS = {
    **{f"configs/fs1999/table1_d{d}.yaml": f"results/fs1999/d{d}" for d in range(1, 7)},
    **{f"configs/kw2007/{n}.yaml": f"results/kw2007/{n}" for n in (
        "table2", "table3_uci", "table3_usps", "table3_mnist", "table4", "table5", "table6_artificial", "table6_uci",
        "table7_adult", "table7_usps", "table7_usps_poly4", "table7_mnist", "table7_mnist_poly4")},
    **{f"configs/kw2007/{n}.yaml": f"results/kw2007/variants/{n}" for n in (
        "table3_usps_split", "table3_mnist_split", "table5_raw_units", "table5_standardized",
        "table3_uci_lambda_indicator", "table4_lambda_indicator", "table4_weight_per_example",
        "table3_uci_promoters_name_dropped", "table5_single_run")},
    **{f"configs/gentile2001/{c}.yaml": f"results/gentile2001/{d}" for c, d in (
        ("usps_sigma_cv", "usps_sigma_cv"), ("usps_sigma_cv_perceptron", "usps_sigma_cv_perceptron"),
        ("letter_sigma_cv", "letter_sigma_cv"),
        ("table1_usps_alma", "usps_alma"), ("table1_usps_perceptron", "usps_perceptron"),
        ("table1_usps_alma_sigma3.5", "variants/usps_alma_sigma3.5"),
        ("table1_usps_perceptron_sigma3.5", "variants/usps_perceptron_sigma3.5"),
        ("table3_mnist_d4", "mnist_d4"), ("table3_mnist_d5", "mnist_d5"), ("table3_mnist_d6", "mnist_d6"),
        ("table3_mnist_perceptron", "mnist_perceptron"),
        ("table5_letter_alma", "letter_alma"), ("table5_letter_perceptron", "letter_perceptron"),
        ("table6", "table6"), ("table6_B_stated", "variants/table6_B_stated"))},
    **{f"configs/{c}.yaml": f"results/{c}" for c in budget_study.configs()},
}


def results_dir(path: str) -> str:
    """The folder under ``results/`` that the reproduction writes for config ``path`` (as
    :data:`SETS` names it, ``configs/...yaml``); a :class:`~perceptron_lab.errors.UsageError` for a
    config the reproduction does not run."""
    key = Path(path).as_posix()
    key = key[2:] if key.startswith("./") else key
    if key not in RESULTS_DIRS:
        raise UsageError(f"{path}: not a config the reproduction runs (perceptron_lab/cli/reproduce.py RESULTS_DIRS "
                         f"lists them); run other configs with plab run {path}, which writes to runs/")
    return RESULTS_DIRS[key]


def outdated(cfgs: dict) -> list[str]:
    """The configs (of ``cfgs``: path -> reproduction config) whose ``output.dir`` holds the
    results of another config, as its ``run.json`` records it: an earlier version of the config,
    whose results the reproduction replaces."""
    from perceptron_lab.run.plan import results_hash
    from perceptron_lab.run.store import RunFolder

    out = []
    for path, cfg in cfgs.items():
        info = RunFolder(cfg.output.dir).read_info()
        if info is not None and info.get("config_hash") not in (None, results_hash(cfg)):
            out.append(path)
    return out


def reproduction_config(path: str):
    """Config ``path`` as the reproduction runs it: ``output.dir`` set to :func:`results_dir`."""
    return with_overrides(load_config(path), {"output.dir": results_dir(path)})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="*", help="configs to run (default: the --set)")
    ap.add_argument("--set", choices=sorted(SETS), default="core", help="which configs (default: core)")
    ap.add_argument("--data-dir", default=os.environ.get("PLAB_DATA"))
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1); above 1, the configs run side by side in one pool")
    ap.add_argument("--list", action="store_true", help="print the configs and exit")
    args = ap.parse_args(argv)
    if source_checkout() is None:   # it writes the clone's results/, which an installed copy lacks
        raise CheckoutRequired("python -m perceptron_lab.cli.reproduce (make reproduce)")
    configure_process()   # again when called as a function: the settings reach the workers it starts
    os.environ.setdefault(columns.KEEP_ENV, f"{KEEP_GB:g}")   # likewise, unless the caller set it
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
    # every config and the files of every dataset they read are checked before any work starts
    cfgs = {path: reproduction_config(path) for path in configs}
    for cfg in cfgs.values():
        verify_inputs(cfg, args.data_dir, note=lambda msg: None)   # each run says its notes itself
    # a folder whose results an earlier version of its config wrote is regenerated from scratch
    replace = outdated(cfgs)
    for path in replace:
        print(f"{results_dir(path)}: written by an earlier version of {path}; recomputing it", flush=True)
    side_by_side = args.jobs > 1 and len(configs) > 1
    # each paper's figures, for the papers whose configs ran; those that read no results (Gentile's
    # Figures 3-5 train runs of their own) are drawn in the pool beside the configs
    figure_papers = [paper for paper in plugins.papers()
                     if paper.reproduce_figures and any(f"/{paper.name}/" in f"/{c}" for c in configs)]
    early = [paper.name for paper in figure_papers if side_by_side and not paper.figures_read_runs]
    drawn: dict = {}
    computed = []   # configs this invocation computed something of: only those rewrite the log

    def save_log(res, pool=False):
        # the log so far, so an interrupted reproduction keeps the times of what finished
        if res.ran:
            computed.append(res)
            write_log(log_path, args, None, time.perf_counter() - t0, times, figure_times, pool=pool)

    if side_by_side:
        drawn = run_side_by_side(cfgs, args, earlier, times, t0, lambda res: save_log(res, pool=True), early,
                                 replace)
    else:
        for i, path in enumerate(configs, 1):
            cfg = cfgs[path]
            print(f"[{i}/{len(configs)}] {path}{time_left(configs[i - 1:], previous, time.perf_counter() - t0)}",
                  flush=True)
            t1 = time.perf_counter()
            res = run_experiment(cfg, data_dir=args.data_dir, progress=True, jobs=args.jobs, force=path in replace)
            record(times, path, res.ran, res.skipped, time.perf_counter() - t1, args.jobs, res.invocation)
            save_log(res)
    total = time.perf_counter() - t0
    print(f"all configs done in {total:.0f} s")
    # each paper's whole tables and figures, from its runs
    for paper in plugins.papers():
        if paper.combine:
            paper.combine("results")
        if paper in figure_papers:
            print(f"{paper.short}: figures" + (" (drawn beside the configs)" if paper.name in drawn else ""),
                  flush=True)
            t1 = time.perf_counter()
            paths, seconds = drawn.get(paper.name) or (paper.reproduce_figures("results", args.data_dir), None)
            for p in paths:
                print(f"  {p}")
            figure_times[f"{paper.name}_figures"] = {
                "wall_seconds": round(time.perf_counter() - t1 if seconds is None else seconds, 1),
                **({"side_by_side": True} if paper.name in drawn else {})}
    if any(c in BUDGET for c in configs):
        print("budget study: the Nyström peer, the mistake curves, figures and summary", flush=True)
        t1 = time.perf_counter()
        for p in budget_study.write_study("results", args.data_dir):
            print(f"  {p}")
        figure_times["budget_study"] = {"wall_seconds": round(time.perf_counter() - t1, 1)}
        print("DOGMA's budget demo over many draws, against the demo's own numbers", flush=True)
        t1 = time.perf_counter()
        for p in dogma_study.write("results", log=lambda msg: print(f"  {msg}", flush=True)):
            print(f"  {p}")
        figure_times["dogma_study"] = {"wall_seconds": round(time.perf_counter() - t1, 1)}
    # the finished log first: the report states the reproduction's time from it. An invocation that
    # computed nothing (every config reused) leaves the tracked log as it was.
    if computed or not earlier_log:
        write_log(log_path, args, datetime.now(timezone.utc).isoformat(timespec="seconds"), total, times,
                  figure_times, pool=side_by_side)
    else:
        print(f"{log_path} kept: nothing was computed")
    md, _ = write_report(["results"], "results/report")
    for line in summary_lines(collect(["results"])):
        print(line.replace("**", ""))
    print(f"report: {md}")


def record(times: dict, path: str, ran: int, reused: int, wall: float, jobs: int, totals: dict,
           side_by_side: bool = False) -> None:
    """Enter a config's invocation in the log's ``times``, unless nothing ran and an earlier
    invocation's entry (the one that computed it) is there. ``totals``: the invocation's own
    (:attr:`~perceptron_lab.run.experiment.RunResult.invocation`), not the run.json an unchanged
    result keeps from an earlier invocation. ``side_by_side``: the config shared its workers with
    others, so its wall time overlaps theirs."""
    if ran or path not in times:
        times[path] = {"wall_seconds": round(wall, 1), "ran": ran, "reused": reused, "jobs": jobs,
                       "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                       "train_seconds_total": totals.get("train_seconds_total"),
                       "eval_seconds_total": totals.get("eval_seconds_total"),
                       "load_seconds": totals.get("load_seconds"), "write_seconds": totals.get("write_seconds"),
                       "peak_rss_gb_per_process": totals.get("peak_rss_gb_per_process"),
                       **({"side_by_side": True} if side_by_side else {})}


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


def write_log(log_path: Path, args, finished, total: float, times: dict, figure_times: dict,
              pool: bool = False) -> None:
    """``results/reproduce.json``; ``pool``: the configs ran side by side in one pool of workers, so
    their times overlap and only the invocation's ``wall_seconds`` is the time of them all.
    ``own_totals``: each config's training, evaluation, load and write seconds are those of the
    invocation that entry records (logs written before lack it: theirs could be an earlier one's)."""
    atomic_write_text(log_path, json.dumps({
        "finished": finished, "set": args.set if not args.configs else None,
        "jobs": args.jobs, "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
        "wall_seconds": round(total, 1), "side_by_side": pool, "own_totals": True,
        # side by side, each config's peak is that of its workers; this process planned and wrote them all
        **({"peak_rss_gb_main_process": round((peak_rss_mb() or 0) / 1024.0, 2)} if pool else {}),
        "configs": times, "figures": figure_times}, indent=2) + "\n")


def work_seconds(entry: dict) -> float | None:
    """A recorded config's computing time summed over its worker processes (training and
    evaluation of every unit), else its wall time times its jobs; None when it was never timed."""
    tr, ev = entry.get("train_seconds_total"), entry.get("eval_seconds_total")
    if tr is not None and ev is not None:
        return float(tr) + float(ev)
    w = entry.get("wall_seconds")
    return None if w is None else float(w) * int(entry.get("jobs") or 1)


def schedule(configs: list, earlier: dict) -> list:
    """The order in which configs start side by side: the longest recorded work first (so that the
    last to finish are short), configs never timed before all others (their cost is unknown);
    configs writing the same output folder keep their relative order (they run one after another)."""
    def cost(path):
        w = work_seconds(earlier.get(path) or {})
        return float("inf") if w is None else w

    return sorted(configs, key=cost, reverse=True)


def draw_figures(paper_name: str, results_dir: str, data_dir) -> tuple:
    """(paths, seconds) of a paper's :attr:`~perceptron_lab.config.plugins.Paper.reproduce_figures` that
    reads no results, drawn in a worker of the pool (no progress bar of its own)."""
    t0 = time.perf_counter()
    paths = plugins.get(paper_name).reproduce_figures(results_dir, data_dir, progress=False)
    return [str(p) for p in paths], time.perf_counter() - t0


def run_side_by_side(cfgs: dict, args, earlier: dict, times: dict, t0: float, save_log, figures=(),
                     replace=()) -> dict:
    """Run the configs ``cfgs`` (path -> config) with one pool of ``args.jobs`` worker processes for them all: up to
    ``jobs + 1`` configs are planned, computed and written at once (one thread each), their parts
    queued for the workers in the order the configs started, so that no worker waits while a
    config's last part or its writing finishes. Every config's results are those of a run of its
    own (each part's rows depend only on its config and itself). The first failure stops the
    reproduction: the workers are stopped, finished parts stay written for a rerun to resume.

    ``figures``: papers whose figures read no results (:func:`draw_figures`), queued first, in a
    worker beside the configs; returns {paper: (paths, seconds)}. ``replace``: the configs whose
    folders are recomputed from scratch (:func:`outdated`)."""
    import queue
    import threading

    from tqdm.auto import tqdm

    from perceptron_lab.run.executors import WorkerPool

    order = schedule(list(cfgs), earlier)
    todo, lock, busy_dirs = list(order), threading.Lock(), set()
    done_q: queue.Queue = queue.Queue()
    stop = threading.Event()

    def next_config():
        with lock:
            for path in todo:
                out = str(Path(cfgs[path].run_dir).resolve())
                if out not in busy_dirs:
                    todo.remove(path)
                    busy_dirs.add(out)
                    return path, out
        return None, None

    def lane(pool):
        while not stop.is_set():
            path, out = next_config()
            if path is None:
                with lock:
                    if not todo:
                        return
                time.sleep(0.2)   # the only configs left write a folder another config holds
                continue
            t1 = time.perf_counter()
            try:
                res = run_experiment(cfgs[path], data_dir=args.data_dir, progress=False, jobs=args.jobs, pool=pool,
                                     force=path in replace)
                done_q.put((path, res, time.perf_counter() - t1, None))
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which stops
                done_q.put((path, None, time.perf_counter() - t1, exc))
                return
            finally:
                with lock:
                    busy_dirs.discard(out)

    recorded = {c: work_seconds(earlier.get(c) or {}) for c in order}
    known = sum(w for w in recorded.values() if w is not None)
    est = f"; about {_minutes(known / args.jobs)} of work recorded" if known else ""
    print(f"{len(order)} configs side by side on {args.jobs} worker processes, the longest first{est} "
          f"(results/reproduce.json)", flush=True)
    bar = tqdm(total=len(order), unit="config", desc="configs", dynamic_ncols=True,
               mininterval=0.1 if sys.stderr.isatty() else 30.0)
    with WorkerPool(args.jobs) as pool:
        drawing = {name: pool.submit(draw_figures, name, "results", args.data_dir) for name in figures}
        lanes = [threading.Thread(target=lane, args=(pool,), daemon=True, name=f"plab-config-{i}")
                 for i in range(min(args.jobs + 1, len(order)))]
        for t in lanes:
            t.start()
        try:
            for _ in order:
                path, res, wall, exc = done_q.get()
                if exc is not None:
                    raise exc
                record(times, path, res.ran, res.skipped, wall, args.jobs, res.invocation, side_by_side=True)
                save_log(res)  # the log so far, so an interrupted reproduction keeps the times of what finished
                bar.update(1)
                tqdm.write(f"  {path}: {res.ran} run(s) computed, {res.skipped} reused, {wall:.0f} s "
                           f"(elapsed {_minutes(time.perf_counter() - t0)})")
            return {name: fut.result() for name, fut in drawing.items()}
        except BaseException:
            stop.set()
            pool.terminate()
            raise
        finally:
            bar.close()



def cli(argv=None) -> None:
    """:func:`main` with the command line's errors, as ``plab`` has them
    (:func:`perceptron_lab.cli.main.friendly_errors`): a PlabError (a missing dataset, a bad config ...)
    is one ``plab: error:`` line and its exit status; Ctrl-C, SIGTERM and SIGHUP say what is kept
    and end with 130, 143 and 129."""
    from perceptron_lab.cli.main import friendly_errors

    friendly_errors(main)(argv)


if __name__ == "__main__":
    cli()
