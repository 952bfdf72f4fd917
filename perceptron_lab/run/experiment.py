"""Orchestration: a config becomes units of work (grid point x fold x permutation), each trained
once and evaluated at every checkpoint; results are written in long format with resume.

Output folder layout::

    OUT/results.csv     long format, one row per (unit, checkpoint, class, rule, metric)
    OUT/run.json        resolved config, versions, seed, git revision, times
    OUT/timings.json    seconds per unit
    OUT/parts/*.csv     finished work (what makes a run resumable)
    OUT/grid.csv        the values of every grid point (runs with a grid)
    OUT/search.csv      parameter search: the best point per plan and rule, its error (and accuracy)
    OUT/nested.csv      nested cross-validation: error (and accuracy) of the selected parameters, T-intervals
    OUT/*.png           the run's figures (output.figures; :mod:`perceptron_lab.run.figures`)

Work is persisted in *parts*: without a grid, one part per unit (such runs are few and long, e.g. a
full MNIST permutation); with a grid, one part per grid point holding all its folds, inner folds
and permutations (such runs are many and small), or, for a grid over the algorithm's settings with
the linear kernel on integer features, one part per fold holding all its grid points
(:func:`perceptron_lab.run.units.fold_shared`). ``jobs > 1`` runs parts in a process pool; every
part's rows depend only on the config and the part, so results are byte-identical for any number
of jobs and after any interruption.

Every write is atomic (temporary file + ``os.replace``): an interrupted run leaves finished parts
in ``parts/`` and no half-written file; running the same command again skips them.

Evaluation modes (:mod:`perceptron_lab.run.evaluation`): ``holdout`` (the dataset's test split),
``kfold`` (cross-validation over the training data; with ``evaluation.search`` also a parameter
search summary) and ``nested`` (double cross-validation: parameters chosen on inner folds of each
outer training part). Nested runs add two columns to the results contract: ``inner_fold`` (-1 for
outer units, else the inner fold) and ``search`` (empty for units; the plan label on the rows that
report, per outer fold, the selected point's outer test error and its inner-CV error).
"""

from __future__ import annotations

import io
import json
import os
import platform
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from perceptron_lab.config.load import ExperimentConfig, with_overrides
from perceptron_lab.constants import __version__, source_checkout
from perceptron_lab.engine import columns
from perceptron_lab.engine.kernels import load_jit
from perceptron_lab.errors import PlabError, UsageError
from perceptron_lab.run.evaluation import Grid
from perceptron_lab.run.inputs import load_data, read_inputs
from perceptron_lab.run.plan import RESULT_COLUMNS, Plan, make_plan, results_hash
from perceptron_lab.run.runtime import settings as runtime_settings
from perceptron_lab.run.store import RunFolder, csv_rows, read_back_csv, read_back_json
from perceptron_lab.run.runtime import peak_rss_mb, reset_peak_rss
from perceptron_lab.run.units import budget_update_notes, never_update_warnings, range_note, run_part

#: Seconds between rewrites of timings.json while a run is going (it is always written at the end),
#: at least.
TIMINGS_FLUSH_SECONDS = 5.0
#: Those rewrites take at most this share of a run's time: the file of a run of many small units
#: is large (Khardon & Wachman Table 3 UCI has tens of thousands of units), and rewriting it every
#: few seconds would take a large share of the run.
TIMINGS_WRITE_SHARE = 0.05
#: Runs going on in several threads (``make reproduce``) merge and write their outputs one at a
#: time: the papers' table writers share caches (the SVM baselines) and the work is short.
_OUTPUTS_LOCK = threading.RLock()


def git_revision():
    """The commit of the clone this package runs from (``+dirty`` with uncommitted changes), or None
    for an installed copy: a copy installed into a virtual environment that lies inside some other
    git repository must not record that repository's commit."""
    try:
        here = Path(__file__).resolve().parent
        if source_checkout() is None:
            return None
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
        if out.returncode == 0:
            dirty = subprocess.run(["git", "status", "--porcelain"], cwd=here, capture_output=True,
                                   text=True, timeout=5).stdout.strip()
            return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def versions():
    import numba

    return {"perceptron_lab": __version__, "python": sys.version.split()[0], "numpy": np.__version__,
            "numba": numba.__version__, "pandas": pd.__version__, "platform": platform.platform(),
            "machine": platform.machine(), "cpus": os.cpu_count(), **runtime_settings()}


@dataclass
class RunResult:
    out_dir: Path
    results: pd.DataFrame
    run_info: dict
    skipped: int = 0
    ran: int = 0
    timings: list = field(default_factory=list)
    #: This invocation's own totals (wall, training, evaluation, load, write, peak memory). They
    #: differ from ``run_info`` when run.json keeps the earlier record of unchanged results.
    invocation: dict = field(default_factory=dict)


def run_experiment(cfg: ExperimentConfig, out_dir=None, data_dir=None, force=False, progress=True, jobs=1,
                   executor="local", scheduler=None, verify=True, allow_large=False, overrides=None, pool=None):
    """Run every part of a config, reusing the finished parts that belong to it, and write the results.

    The output folder is locked for the whole run and holds only what ``perceptron_lab.run.store.RunFolder``
    writes: ``results.csv``, ``run.json``, ``timings.json``, ``parts/`` and, for a config that names
    a paper table, the table in the paper's layout. The results are byte-identical whatever
    ``jobs`` or ``executor`` runs the parts.

    Parameters
    ----------
    cfg : ExperimentConfig
        The resolved config ([`load_config`][perceptron_lab.config.load.load_config]).
    out_dir : path-like, optional
        The output folder; default ``cfg.run_dir`` (``runs/<name>`` unless ``output.dir`` is set).
    data_dir : path-like, optional
        Where datasets are read from before ``$PLAB_DATA`` and the user cache.
    force : bool, default False
        Recompute every part instead of reusing the finished ones.
    progress : bool, default True
        Show progress bars on stderr.
    jobs : int, default 1
        Worker processes for the parts (one BLAS and numba thread each).
    executor : {"local", "dask"}, default "local"
        ``"dask"`` sends the parts to the Dask scheduler at ``scheduler``.
    scheduler : str, optional
        The Dask scheduler's address (with ``executor="dask"``).
    verify : bool, default True
        Check the dataset files against the registry's sha256 first.
    allow_large : bool, default False
        Run a config whose estimated size is beyond the limits of ``perceptron_lab.model.bounds``.
    overrides : list of str, optional
        The ``key=value`` texts of ``plab run CONFIG key=value``, recorded in run.json.
    pool : WorkerPool, optional
        Worker processes shared with runs going on at the same time in other threads
        (``make reproduce``); the run then reports its workers' peak memory only.

    Returns
    -------
    RunResult
        ``out_dir``, ``results`` (the long-format results as a DataFrame), ``run_info`` (what
        run.json records), ``skipped`` and ``ran`` (units reused and computed) and ``timings``.

    Raises
    ------
    ConfigError
        A config that does not fit its data or is beyond the size limits (exit status 2).
    DatasetError
        Data missing, corrupt or not matching its sha256 (exit status 3).
    NumericError
        Kernel values or scores that would leave the float range (exit status 4).
    OutputError
        An output folder that cannot be written, is in use, or holds another config's results,
        or a file plab did not write where it writes one (exit status 1).

    Examples
    --------
    >>> import tempfile
    >>> from perceptron_lab.config.load import load_config, with_overrides
    >>> from perceptron_lab.run.experiment import run_experiment
    >>> cfg = load_config("package:quickstart.yaml")  # sonar, 10 folds, two values of tau
    >>> cfg = with_overrides(cfg, {"training.epochs": 1, "training.checkpoints": [1], "evaluation.folds": 2,
    ...                            "output.figures": False})
    >>> result = run_experiment(cfg, out_dir=tempfile.mkdtemp(), progress=False)
    >>> result.ran, result.skipped  # 2 folds x 2 grid points, none reused
    (4, 0)
    >>> sorted(result.results["rule"].unique())
    ['avg', 'last', 'longest', 'none', 'vote']
    """
    from perceptron_lab.run.executors import check_executor

    check_executor(executor, scheduler, jobs)
    started, t0 = datetime.now(timezone.utc), time.perf_counter()
    if pool is None:
        columns.release()  # kernel columns an earlier run in this process kept
        reset_peak_rss()  # this run's peak, not an earlier run's in the same process
    if jobs == 1 and executor == "local":
        _prepare_meanwhile(cfg.output.figures)
    # the data and the plan before the output folder: a run they refuse (data missing or unusable, a
    # config that does not fit its data, a size no machine can run) leaves no folder behind
    ds, verified = read_inputs(cfg, data_dir, verify)
    load_s = time.perf_counter() - t0
    plan = make_plan(cfg, ds, data_dir, allow_large)
    with RunFolder(Path(out_dir) if out_dir else Path(cfg.run_dir)) as folder:
        folder.check_config(results_hash(cfg), force)
        if force:
            folder.clear_parts()
        texts = {} if force else folder.reusable((p.key, plan.keys[p.key]) for p in plan.parts)
        todo = [p for p in plan.parts if p.key not in texts]
        info = _run_info(plan, ds, jobs, executor, scheduler, started, verified)
        note = range_note(plan.spec(plan.units[0]), ds) if plan.units else None
        if note:
            print(f"plab: note: {note}", file=sys.stderr, flush=True)
            info["numerics"] = {"rescaled": note}
        cannot = never_update_warnings(plan, ds)
        for line in cannot:
            print(f"plab: warning: {line}", file=sys.stderr, flush=True)
        if cannot:
            info["warnings"] = cannot
        if overrides:
            info["overrides"] = list(overrides)
        earlier = None if force else _Record.read(folder)
        if todo or earlier is None:
            folder.write_info(info)   # status "running" while parts are computed
        timings = _execute(plan, folder, todo, texts, data_dir, ds, jobs, executor, scheduler, progress, force,
                           pool)
        t_write = time.perf_counter()
        with _OUTPUTS_LOCK:
            df = merge_parts(plan.parts, texts, plan.units)
            df, outputs = write_outputs(plan, folder, df, len(ds.y_train))
        ran = sum(len(p.units) for p in todo)
        for line in budget_update_notes(plan, timings):
            print(f"plab: note: {line}", file=sys.stderr, flush=True)
        totals = _run_summary(t0, ran, len(plan.units), timings, load_s, time.perf_counter() - t_write,
                              own_peak=pool is None)
        info = _Record.settle(folder, {**info, **outputs, **totals}, earlier, ran)
    return RunResult(folder.out, df, info, skipped=len(plan.units) - ran, ran=ran, timings=list(timings.values()),
                     invocation=totals)


#: run.json entries that describe the invocation rather than the results: when it was, on what
#: machine and code revision, how it was called, how long it took (:class:`_Record`).
VOLATILE_KEYS = ("config_file", "versions", "git_revision", "command", "jobs", "executor", "scheduler", "started",
                 "finished", "wall_seconds", "ran", "skipped", "train_seconds_total", "eval_seconds_total",
                 "load_seconds", "write_seconds", "peak_rss_gb_per_process")

#: run.json entries derived from the result files, which :class:`_Record` compares by their sha256
#: instead (records written before an entry existed are kept as they are).
_DERIVED_KEYS = ("csv_rows",)


@dataclass
class _Record:
    """A folder's run.json and timings.json as an earlier invocation left them, and the sha256 of
    the result files run.json lists (CSV and Markdown; figures are left out, their bytes follow the
    plotting library).

    Those two files are tracked for the paper runs under ``results/``, and an invocation that
    changes no result must leave them as they were (else every ``make reproduce`` dirties the
    clone with new times): :meth:`settle` keeps the earlier record, byte for byte, when the
    results' files and everything run.json says about them apart from :data:`VOLATILE_KEYS` are
    unchanged -- the earlier invocation's times and host still describe how those very bytes were
    made. An invocation that computed nothing but changed an output (new table code) keeps the
    earlier invocation's volatile entries and records the rest anew. ``--force`` always writes
    a new record."""
    info_text: str
    info: dict
    timings_text: str | None
    digests: dict

    @classmethod
    def read(cls, folder: RunFolder):
        from perceptron_lab.run.store import INFO_NAME, TIMINGS_NAME

        try:
            text = (folder.out / INFO_NAME).read_text(encoding="utf-8")
            info = json.loads(text)
        except (OSError, ValueError):
            return None
        if not isinstance(info, dict) or info.get("status") != "complete":
            return None
        try:
            timings = (folder.out / TIMINGS_NAME).read_text(encoding="utf-8")
        except OSError:
            timings = None
        return cls(text, info, timings, _digests(folder.out, info))

    @staticmethod
    def settle(folder: RunFolder, info: dict, earlier, ran: int) -> dict:
        """Write run.json (and put timings.json back) as the class describes; returns what
        run.json holds."""
        from perceptron_lab.run.store import INFO_NAME, TIMINGS_NAME, atomic_write_text

        if earlier is not None:
            old, new = earlier.info, json.loads(json.dumps(info, default=str))
            lasting = lambda d: {k: v for k, v in d.items() if k not in VOLATILE_KEYS + _DERIVED_KEYS}  # noqa: E731
            if lasting(old) == lasting(new) and _digests(folder.out, new) == earlier.digests:
                atomic_write_text(folder.out / INFO_NAME, earlier.info_text)
                if earlier.timings_text is not None:
                    atomic_write_text(folder.out / TIMINGS_NAME, earlier.timings_text)
                return old
            if not ran:   # the results were made by the earlier invocation: keep its times
                info = {k: (old[k] if k in VOLATILE_KEYS and k in old else v) for k, v in info.items()}
        folder.write_info(info)
        return info


def _digests(out: Path, info: dict) -> dict:
    """{name: sha256} of results.csv and the CSV / Markdown outputs ``info`` lists."""
    import hashlib

    names = ["results.csv"] + list(info.get("outputs") or []) + list(info.get("paper_outputs") or [])
    found = {}
    for n in dict.fromkeys(names):
        if n.endswith((".csv", ".md")):
            try:
                found[n] = hashlib.sha256((out / n).read_bytes()).hexdigest()
            except OSError:
                found[n] = None
    return found


def _prepare_meanwhile(figures: bool) -> None:
    """On a thread of its own, while this one reads, checks and hashes the data: import the figure
    library (when the run draws figures) and load numba's compiled-code runtime
    (:func:`~perceptron_lab.engine.kernels.load_jit`). Both are the interpreter's work; reading the data
    is mostly decompressing (one zlib call per read), casting and hashing, which release it, so
    the two overlap. A failure there is left to the run's own import or jitted call to report."""
    def prepare():
        try:
            if figures:
                import matplotlib.backends.backend_agg  # noqa: F401
                import matplotlib.figure  # noqa: F401
            load_jit()
        except Exception:   # noqa: BLE001 -- the run raises it again where it needs the module
            pass

    threading.Thread(target=prepare, name="plab-prepare", daemon=True).start()


def merge_parts(parts, texts: dict, units=None) -> pd.DataFrame:
    """The rows of every part, in plan order (whatever order they were computed in): units in the
    order of ``units`` (the plan's) when parts hold a fold across grid points, each unit's rows in
    the order it wrote them."""
    df = pd.concat([pd.read_csv(io.StringIO(texts[p.key]), dtype=str, keep_default_na=False) for p in parts],
                   ignore_index=True)
    if units is not None and any(p.shared for p in parts):
        pos = {(u.grid_point, u.fold, u.permutation, u.inner_fold): n for n, u in enumerate(units)}
        inner = df["inner_fold"].astype(int) if "inner_fold" in df else pd.Series(-1, index=df.index)
        keys = zip(df["grid_point"].astype(int), df["fold"].astype(int), df["permutation"].astype(int), inner)
        order = np.argsort(np.fromiter((pos[k] for k in keys), dtype=np.int64, count=len(df)), kind="stable")
        df = df.iloc[order].reset_index(drop=True)
    return df


def _run_summary(t0: float, ran: int, n_units: int, timings: dict, load_s: float, write_s: float,
                 own_peak: bool = True) -> dict:
    """The invocation's totals: wall time; training and evaluation summed over the units computed
    (in whichever process ran them); reading the data and merging / writing the outputs in this
    process; the largest peak resident memory of any one process (this one unless ``own_peak`` is
    false, or a worker at the end of a unit: with ``--jobs N`` the machine holds up to N workers at
    once)."""
    peaks = [t.get("peak_rss_mb") for t in timings.values()] + ([peak_rss_mb()] if own_peak else [])
    peaks = [p for p in peaks if p is not None]
    return {"status": "complete", "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "wall_seconds": round(time.perf_counter() - t0, 3), "ran": ran, "skipped": n_units - ran,
            "train_seconds_total": round(sum(t["train_seconds"] for t in timings.values()), 3),
            "eval_seconds_total": round(sum(t["eval_seconds"] for t in timings.values()), 3),
            "load_seconds": round(load_s, 3), "write_seconds": round(write_s, 3),
            "peak_rss_gb_per_process": round(max(peaks) / 1024.0, 2) if peaks else None}


def _run_info(plan: Plan, ds, jobs, executor, scheduler, started, verified: bool) -> dict:
    return {
        "name": plan.name, "config_file": plan.source, "config_hash": plan.results_hash,
        "config": plan.settings, "versions": versions(), "git_revision": git_revision(),
        "seed": plan.seed, "command": " ".join(sys.argv),
        "dataset": {"name": ds.name, "n_train": int(len(ds.y_train)),
                    "n_test": None if ds.y_test is None else int(len(ds.y_test)),
                    "n_features": ds.n_features, "n_classes": ds.n_classes,
                    "fingerprint": plan.fingerprint,
                    "source": {k: str(v) for k, v in ds.meta.items() if k in ("source", "source_files")},
                    "checksums_verified": verified},
        # same numbers on every machine, or how far they were measured to move (perceptron_lab.model.exactness)
        "exactness": plan.exactness,
        "units": len(plan.units), "parts": len(plan.parts), "jobs": int(jobs), "executor": executor,
        **({"scheduler": scheduler} if executor == "dask" else {}),
        "started": started.isoformat(timespec="seconds"), "status": "running",
    }


def _execute(plan: Plan, folder: RunFolder, todo, texts, data_dir, ds, jobs, executor, scheduler, progress,
             force, pool=None) -> dict:
    """Compute the parts of ``todo`` (locally, in a pool or on Dask), writing each as it finishes
    and adding its text to ``texts``; returns every unit's timings (earlier invocations' included)."""
    from tqdm.auto import tqdm

    timings = {} if force else folder.read_timings()
    total = sum(plan.steps[u.key] for p in todo for u in p.units)
    n_units = len(plan.units)
    n_todo = sum(len(p.units) for p in todo)
    tty = sys.stderr.isatty()
    every = 0.1 if tty else 30.0   # a log file gets a line at most every half minute (and each bar's last)
    log = _PartLog(folder.out / PROGRESS_LOG, len(todo))
    if progress and todo and pool is None and executor in ("local", "dask"):
        _compile_step(plan, todo, ds, data_dir, log, every, scheduler if executor == "dask" else None)
    # two bars, started once the engine is compiled, so that their rates (and the time left) are
    # measured on the run's own work: the parts done of those to run, and below it the training
    # steps of every unit (evaluation is not counted in steps). tqdm shows no time left before
    # its first measured step.
    parts_bar = tqdm(total=len(todo), disable=not progress or len(todo) < 2, unit="part", position=0,
                     desc=f"{plan.name}: parts ({n_todo} of {n_units} runs to compute)", smoothing=0,
                     dynamic_ncols=True, mininterval=every)
    bar = tqdm(total=total, disable=not progress or not todo, unit="step", unit_scale=True,
               position=1 if len(todo) > 1 else 0, smoothing=0,
               desc="training steps" if len(todo) > 1 else f"{plan.name} ({n_todo}/{n_units} runs)",
               dynamic_ncols=True, mininterval=every)
    flush = _TimingsWriter(folder, timings, dirty=force or not (folder.out / "timings.json").exists())
    try:
        def finished(part, text, tms):
            folder.write_part(part.key, plan.keys[part.key], text)
            texts[part.key] = text
            flush.add(tms)
            log.line(part, tms)
            parts_bar.update(1)

        if executor == "dask" and todo:
            from perceptron_lab.run.executors import run_dask

            run_dask(plan, todo, data_dir, scheduler, finished, bar if progress else None)
        elif pool is not None and todo:
            pool.run(plan, todo, data_dir, finished, bar if progress else None)
        elif jobs > 1 and len(todo) > 1:
            from perceptron_lab.run.executors import run_pool

            run_pool(plan, todo, data_dir, jobs, finished, bar if progress else None)
        else:
            for part in todo:
                text, tms = run_part(plan, part, data_dir, progress=bar.update if progress else None,
                                     phase=(lambda t: bar.set_postfix_str(t, refresh=False)) if progress else None)
                finished(part, text, tms)
        # every part is written, so all the training is done: the bars end full, whatever share of
        # the steps reached them between their redraws (worker processes report per unit)
        for b in (bar, parts_bar):
            b.set_postfix_str("", refresh=False)
            if b.total is not None and b.n < b.total:
                b.update(b.total - b.n)
    finally:
        parts_bar.close()   # a bar's last state is drawn on close, however long its redraw interval
        bar.close()
        flush.write()
    return timings


def _compile_step(plan: Plan, todo, ds, data_dir, log, every: float, scheduler=None) -> None:
    """The progress step before the timed bars: numba compiles the engine's jitted code on its
    first use (then loads it from its on-disk cache), which can take longer than a small run's
    training. :func:`~perceptron_lab.run.units.warm_up` does that on a slice of the data for the first
    part of each kind in ``todo`` (:func:`_engine_kind`: a grid over the kernel or the algorithm
    runs other jitted code), as a bar of its own, and ``progress.log`` records its time. With a
    Dask ``scheduler`` every worker does it (:func:`~perceptron_lab.run.executors.compile_on_dask`)."""
    from tqdm.auto import tqdm

    from perceptron_lab.run.units import warm_up

    t0 = time.perf_counter()
    first: dict = {}
    for p in todo:
        first.setdefault(_engine_kind(plan.point(p), p), p)
    with tqdm(total=len(first), desc="compiling the engine (first use; numba caches it)", unit="step",
              dynamic_ncols=True, mininterval=every,
              bar_format="{desc}: {percentage:3.0f}%|{bar}| {n}/{total} [{elapsed}]") as step:
        if scheduler is not None:
            from perceptron_lab.run.executors import compile_on_dask

            step.set_description_str("compiling the engine on every Dask worker (first use; numba caches it)")
            compile_on_dask(plan, [(p, load_data(plan.point(p), data_dir) if p.grid_values else ds)
                                   for p in first.values()], scheduler, step)
        else:
            for p in first.values():
                warm_up(plan, p, load_data(plan.point(p), data_dir) if p.grid_values else ds)
                step.update(1)
    log.compiled(time.perf_counter() - t0)


def _engine_kind(pcfg: ExperimentConfig, part) -> tuple:
    """What selects the jitted functions a part runs (and the types numba specializes them on):
    parts of one kind run the same compiled code, whatever their numeric settings."""
    a, k, t = pcfg.algorithm, pcfg.kernel, pcfg.training
    return (a.name, getattr(a, "form", None), k.type, (k.degree or 1) >= 2, t.dtype, pcfg.dataset.name,
            getattr(pcfg.dataset, "path", None), pcfg.dataset.preprocess, part.shared, tuple(pcfg.prediction.rules),
            pcfg.prediction.vote_weight)


#: One line per finished part (appended; every invocation starts with a header line).
PROGRESS_LOG = "progress.log"


class _PartLog:
    """``OUT/progress.log``: a line per finished part -- when, which, its units and their summed
    training and evaluation seconds."""

    def __init__(self, path: Path, n_todo: int):
        self.path, self.n, self.done, self.t0 = path, n_todo, 0, time.perf_counter()
        self._write(f"{_now()} start: {n_todo} part(s) to compute")

    def _write(self, line: str) -> None:
        try:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        except OSError:
            pass   # the log is a convenience; the parts themselves are what a resume needs

    def line(self, part, tms) -> None:
        self.done += 1
        train = sum(float(t.get("train_seconds") or 0) for t in tms)
        ev = sum(float(t.get("eval_seconds") or 0) for t in tms)
        self._write(f"{_now()} part {self.done}/{self.n} {part.key} units={len(tms)} train={train:.2f}s "
                    f"eval={ev:.2f}s elapsed={time.perf_counter() - self.t0:.1f}s")

    def compiled(self, seconds: float) -> None:
        """The engine's compile step (before any part) took ``seconds``."""
        self._write(f"{_now()} compile: the engine is ready ({seconds:.2f}s; not counted in the parts' times)")


def _now() -> str:
    import datetime as _dt

    return _dt.datetime.now().isoformat(timespec="seconds")


def write_outputs(plan: Plan, folder: RunFolder, df: pd.DataFrame, n_train) -> tuple[pd.DataFrame, dict]:
    """results.csv, the protocol outputs (grid, searches, selections) and the paper's tables;
    returns the results and run.json's ``outputs`` / ``paper_outputs`` entries."""
    outputs = []
    cfg, grid = plan.config, plan.grid
    if grid is not None:
        outputs.append(folder.write_output("grid.csv", grid.frame().to_csv(index=False, lineterminator="\n")))
    if cfg.evaluation.mode == "nested":
        df = _with_selections(cfg, df, grid)
    folder.write_output("results.csv", df.to_csv(index=False, lineterminator="\n"))
    outputs += write_protocol_outputs(cfg, folder, df, grid)
    out = folder.out
    entries = {"outputs": [str(Path(p).relative_to(out)) for p in outputs]} if outputs else {}
    entries["paper_outputs"] = [str(Path(p).relative_to(out)) for p in write_paper_outputs(cfg, out, df, n_train)]
    if cfg.output.figures:
        from perceptron_lab.run.figures import plot_run

        figs = plot_run(out, info={"name": plan.name, "config": plan.settings})
        entries.setdefault("outputs", []).extend(str(Path(p).relative_to(out)) for p in figs)
    entries["csv_rows"] = _csv_rows(out, ["results.csv"] + entries.get("outputs", []) + entries["paper_outputs"])
    return df, entries


def _csv_rows(out: Path, names) -> dict:
    """{name: data rows} of the CSV files among ``names``, for readers to check them against
    (:func:`perceptron_lab.run.store.read_back_csv`)."""
    return {n: csv_rows(out / n) for n in names if n.endswith(".csv") and (out / n).is_file()}


class _TimingsWriter:
    """Collects unit timings and rewrites timings.json at most every TIMINGS_FLUSH_SECONDS, and
    no more often than keeps the rewrites within TIMINGS_WRITE_SHARE of the time."""

    def __init__(self, folder: RunFolder, timings: dict, dirty: bool = True):
        self.folder, self.timings, self.last = folder, timings, time.perf_counter()
        self.every = TIMINGS_FLUSH_SECONDS
        # ``dirty``: the file does not hold ``timings`` yet; else nothing is written until a unit finishes
        self.dirty = dirty

    def add(self, tms):
        for t in tms:
            self.timings[t["unit"]] = t
        self.dirty = True
        if time.perf_counter() - self.last >= self.every:
            self.write()

    def write(self):
        if not self.dirty:
            return
        t0 = time.perf_counter()
        self.folder.write_timings(self.timings)
        self.last = time.perf_counter()
        self.every = max(TIMINGS_FLUSH_SECONDS, (self.last - t0) / TIMINGS_WRITE_SHARE)


# ----------------------------------------------------------------------------- protocols


def _with_selections(cfg: ExperimentConfig, df: pd.DataFrame, grid: Grid) -> pd.DataFrame:
    """Append the nested-CV selection rows (see :func:`perceptron_lab.run.evaluation.select_nested`)."""
    from perceptron_lab.run.evaluation import final_epoch, select_nested, selection_rows

    ep = final_epoch(cfg)
    sels = select_nested(df, grid, cfg, ep)
    rows = selection_rows(df, sels, list(df.columns), cfg.output.float_format, ep)
    if not rows:
        return df
    return pd.concat([df, pd.DataFrame(rows, columns=list(df.columns))], ignore_index=True)


def write_protocol_outputs(cfg: ExperimentConfig, folder: RunFolder, df: pd.DataFrame, grid) -> list[Path]:
    """``search.csv`` for a parameter search (kfold or holdout with evaluation.search) and
    ``nested.csv`` for nested cross-validation."""
    from perceptron_lab.run.evaluation import nested_summary, search_summary

    if grid is None or not cfg.evaluation.search:
        return []
    from perceptron_lab.run.summary import with_error

    if cfg.evaluation.mode == "nested":
        name, table = "nested.csv", nested_summary(df, grid, cfg)
    else:
        name, table = "search.csv", search_summary(df, grid, cfg)
    table = with_error(table)   # error first, as everywhere; accuracy kept (Khardon & Wachman report it)
    return [folder.write_output(name, table.to_csv(index=False, lineterminator="\n", float_format="%.6g"))]


def write_paper_outputs(cfg: ExperimentConfig, out: Path, df: pd.DataFrame, n_train=None) -> list[Path]:
    """The tables (next to the paper's numbers) and figures of the paper table the config names
    (``paper: <paper>/<table>``), written by that paper's plug-in (:mod:`perceptron_lab.config.plugins`).
    A run that names no paper table is not written in a paper's layout."""
    if not cfg.paper:
        return []
    from perceptron_lab.config.plugins import parse_ref

    paper, table = parse_ref(cfg.paper)
    return [Path(p) for p in paper.write_outputs(cfg, table, out, df, n_train)]


#: How to get a whole run.json or results.csv of a run folder again.
RERUN_FIX = "move it away and run the config again with plab run (the same --out reuses its finished parts)"


def check_rewritable(run_dir) -> tuple[dict, object]:
    """The recorded run of ``run_dir`` as ``(run.json, config)``, or the error that says why its
    tables cannot be rewritten: no run.json or results.csv, not complete, or a recorded config that
    no longer validates to the same settings. ``plab tables`` checks every folder with it before it
    rewrites any."""
    from perceptron_lab.config.load import config_from_dict

    run_dir = Path(run_dir)
    info_path, res_path = run_dir / "run.json", run_dir / "results.csv"
    if not info_path.exists() or not res_path.exists():
        raise UsageError(f"{run_dir}: not a finished run folder (needs run.json and results.csv); give a folder "
                         "written by plab run")
    info = read_back_json(info_path, fix=RERUN_FIX, keys=("config",))
    if info.get("status") != "complete":
        raise PlabError(f"{run_dir}: the run is not complete (status {info.get('status')!r})")
    cfg = config_from_dict(info["config"], source=str(info.get("config_file") or info_path))
    if results_hash(cfg) != info.get("config_hash"):
        raise PlabError(f"{run_dir}: the config in run.json no longer validates to the same settings "
                        f"(hash {results_hash(cfg)}, recorded {info.get('config_hash')}); rerun the config instead")
    return info, cfg


def rewrite_paper_outputs(run_dir, figures: bool = False) -> list[Path]:
    """Rewrite a finished run's paper tables from its ``results.csv`` and the config recorded in
    its ``run.json``, without training (after a change to the table code). Figures are redrawn
    only with ``figures``. Data sets are read from ``$PLAB_DATA`` where a table needs them (the
    Khardon-Wachman Baseline column); cached SVM baselines (``svm_folds.csv``) are reused."""

    check_rewritable(run_dir)
    with RunFolder(Path(run_dir)) as folder:
        return _rewrite_paper_outputs(folder, figures)


def _rewrite_paper_outputs(folder: RunFolder, figures: bool) -> list[Path]:
    run_dir = folder.out
    res_path = run_dir / "results.csv"
    info, cfg = check_rewritable(run_dir)   # again, under the folder's lock
    if not figures:
        cfg = with_overrides(cfg, {"output.figures": False})
    df = read_back_csv(res_path, RESULT_COLUMNS[:1], fix=RERUN_FIX,
                       rows=(info.get("csv_rows") or {}).get("results.csv"))
    written = write_paper_outputs(cfg, run_dir, df, (info.get("dataset") or {}).get("n_train"))
    names = [str(Path(p).relative_to(run_dir)) for p in written]
    kept = [] if figures else [n for n in info.get("paper_outputs") or [] if n.endswith(".png") and n not in names]
    info["paper_outputs"] = names + kept  # figures not redrawn are kept as they were
    info["csv_rows"] = {**(info.get("csv_rows") or {}), **_csv_rows(run_dir, names)}
    folder.write_info(info)
    return written


def summarize(df: pd.DataFrame, main_only_epochs=None) -> pd.DataFrame:
    """Mean and std over permutations/folds of the multiclass test error and the counts, per
    (grid point, epoch, rule): the table printed at the end of a run."""
    d = df[df["class"] == "all"]
    if "inner_fold" in d.columns:  # nested CV: outer units only
        d = d[(d["inner_fold"].astype(str) == "-1") & (d["search"].astype(str) == "")]
    d = d.copy()
    d["value"] = d["value"].astype(float)
    d["epoch_f"] = d["epoch"].astype(float)
    if main_only_epochs is not None:
        d = d[d["epoch_f"].isin(main_only_epochs)]
    d["rule"] = np.where(d["normalized"] == "true", d["rule"] + "_norm", d["rule"])
    d.loc[d["metric"] != "test_error_pct", "rule"] = d["metric"]
    g = d.groupby(["grid_point", "params", "epoch_f", "rule"], sort=True)["value"]
    out = g.agg(["mean", "std", "count"]).reset_index().rename(columns={"epoch_f": "epoch"})
    return out
