"""The ``plab`` command: thin click wrappers that parse, call and print.

Errors the user can fix (bad config, missing data, unwritable folder) are printed as one line
per problem with a non-zero exit status (2 for configs), never as a traceback.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import click

from perceptron_lab.constants import __version__
from perceptron_lab.errors import DatasetError, PlabError, UsageError

#: Signals that end a command the way Ctrl-C does: (signal name, exit status 128 + its number, as a shell
#: reports a process that signal ended; batch schedulers and supervisors read it so).
STOP_SIGNALS = (("SIGTERM", 143), ("SIGHUP", 129))
INTERRUPT_STATUS = 130


def _stop_handler(owner: int):
    """A handler raising :class:`~perceptron_lab.errors.Stopped` (a KeyboardInterrupt) in the process
    that installed it, once: later stop signals are ignored while it unwinds (the handlers are restored
    when the command ends). A child that inherited it by fork ends as the signal's default would."""
    import os
    import signal

    from perceptron_lab.errors import Stopped

    def handler(signum, frame):
        if os.getpid() != owner:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        for name, _ in STOP_SIGNALS:   # a second signal must not cut the cleanup short
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_IGN)
        raise Stopped(signum, signal.Signals(signum).name)

    return handler


def _install_stop_handlers() -> list:
    """SIGTERM and SIGHUP unwind like Ctrl-C (workers stopped, finished parts kept, temporaries
    removed); returns what to restore. Only the main thread can set handlers (else nothing is set)."""
    import os
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return []
    saved, handler = [], _stop_handler(os.getpid())
    for name, _ in STOP_SIGNALS:
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        old = signal.getsignal(sig)
        if old is signal.SIG_IGN:   # nohup: the user asked for this signal to be ignored
            continue
        signal.signal(sig, handler)
        saved.append((sig, old))
    return saved


def friendly_errors(fn):
    """Turn PlabError into 'plab: error: ...' lines and its exit code; Ctrl-C, SIGTERM and SIGHUP into
    one 'plab: error:' line saying how to resume and the statuses 130, 143 and 129."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        import signal

        from perceptron_lab.errors import Stopped

        saved = _install_stop_handlers()
        try:
            return fn(*args, **kwargs)
        except PlabError as exc:
            _error_lines(exc)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt as exc:
            if isinstance(exc, Stopped):
                what, status = f"stopped by {exc.name}", 128 + exc.signum
            else:
                what, status = "interrupted (Ctrl-C)", INTERRUPT_STATUS
            click.echo(f"\nplab: error: {what}; finished runs are kept (a run folder's parts/): run the same "
                       "command again to resume", err=True)
            sys.exit(status)
        finally:
            for sig, old in saved:
                signal.signal(sig, old)

    return wrapper


def _error_lines(exc) -> None:
    """Print a PlabError as its ``plab: error:`` lines (one per problem of a ConfigError)."""
    lines = getattr(exc, "problems", None) or str(exc).splitlines() or [type(exc).__name__]
    for line in lines:
        click.echo(f"plab: error: {line}", err=True)


class _Stdout:
    """Standard output while a command runs. A write or flush the system refuses -- ``> file`` on a
    full disk, ``> /dev/full``, a pipe whose reader stopped (``| head``) -- raises
    :class:`~perceptron_lab.errors.OutputError` (one ``plab: error:`` line, exit status 1) instead
    of an OSError traceback; :meth:`silence` then points the descriptor at the null device, so that
    the interpreter's last flush of what stays buffered cannot fail again after the error line.
    Everything else is the stream's own (click reads its encoding, ``isatty`` ...)."""

    def __init__(self, stream):
        self._stream = stream
        self.refused = None   # the OutputError of the first refused write, kept: click swallows some

    def write(self, text):
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise self._refused(exc) from None

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        try:
            self._stream.flush()
        except OSError as exc:
            raise self._refused(exc) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def _refused(self, exc: OSError):
        import errno

        from perceptron_lab.errors import OutputError

        if self.refused is None:
            if exc.errno == errno.EPIPE:
                what = "standard output was closed before plab finished printing (the program reading it stopped)"
            elif exc.errno == errno.EBADF:
                what = "standard output is closed (>&-)"
            else:
                what = f"cannot write to standard output ({exc.strerror or exc})"
            self.refused = OutputError(f"{what}: what plab printed is incomplete (a file plab wrote is whole); "
                                       "send the output to a file or program that takes all of it")
        return self.refused

    @classmethod
    def closed(cls) -> "_Stdout":
        """The guard of a closed standard output (``plab ... >&-``: Python's ``sys.stdout`` is None),
        which refuses the first write as the descriptor would, instead of dropping what plab prints."""
        import errno
        import io

        class Closed(io.TextIOBase):
            encoding, errors = "utf-8", "strict"

            def write(self, text):
                raise OSError(errno.EBADF, "Bad file descriptor")

        return cls(Closed())

    def silence(self) -> None:
        """After a refused write: send what stays buffered to the null device."""
        import os

        try:
            fd = self._stream.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)
        except (AttributeError, OSError, ValueError):   # a stream without a descriptor (the tests')
            pass


class _Plab(click.Group):
    """The command group, with click's own usage errors (unknown option, missing argument, bad
    value) printed as one ``plab: error:`` line like every other error, exit status 2, and
    standard output guarded (:class:`_Stdout`): a full or closed stdout is one line, status 1."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        stdout = sys.stdout
        guard = sys.stdout = _Stdout.closed() if stdout is None else _Stdout(stdout)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            guard.flush()   # here, not in the interpreter's exit, where a failure is a traceback
            if guard.refused is not None:   # a refusal some caller swallowed: the output is incomplete
                raise guard.refused
        except click.ClickException as exc:
            hint = ""
            if isinstance(exc, click.UsageError) and exc.ctx is not None:
                hint = f" (see '{exc.ctx.command_path} --help')"
            click.echo(f"plab: error: {' '.join(exc.format_message().split())}{hint}", err=True)
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            click.echo("plab: error: interrupted (Ctrl-C)", err=True)
            sys.exit(INTERRUPT_STATUS)
        except PlabError as exc:   # outside a command's friendly_errors: --help or --version to a full stdout
            _error_lines(exc)
            sys.exit(exc.exit_code)
        finally:
            sys.stdout = stdout
            if guard.refused is not None:
                guard.silence()
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=_Plab, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="plab")
def main():
    """perceptron_lab: reproduce the perceptron-family papers from YAML configs.

    \b
    Examples:
      plab run                          # the quickstart: the perceptron on sonar, 10-fold CV
      plab run configs/mnist_d4.yaml    # Freund & Schapire Table 1, d = 4
      plab run fs1999/table1_d4 training.epochs=1   # a packaged config by name, one key overridden
      plab configs                      # the packaged configs
      plab data list                    # which datasets exist and where they are read from
      plab config check my.yaml         # validate a config without running it
    """
    from perceptron_lab.run.runtime import configure, tune_gc

    configure()   # before numpy loads OpenBLAS, which reads its settings once
    tune_gc()


def _load(config, overrides=(), multirun=False):
    """The config to run: a file, a packaged config's name, or the quickstart, with overrides applied."""
    from perceptron_lab.config.overrides import load_with_overrides

    return load_with_overrides(config, overrides, multirun)[1]


@main.command()
@click.argument("config", required=False)
@click.argument("overrides", nargs=-1)
@click.option("-m", "--multirun", is_flag=True,
              help="Sweep: each key=v1,v2,... override adds its values to evaluation.grid, and the run covers "
                   "their product as one grid.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Output folder (default: runs/NAME).")
@click.option("--data-dir", type=click.Path(file_okay=False), envvar="PLAB_DATA",
              help="Dataset folder (default: $PLAB_DATA, then ~/.cache/perceptron_lab).")
@click.option("--force", is_flag=True, help="Recompute everything, replacing earlier results in the output folder.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes; results are identical for any number of jobs.")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True,
              help="Where runs are computed: this machine (--jobs processes) or a Dask cluster (--scheduler); "
                   "results are identical. dask needs the extra: pip install 'perceptron_lab[dask]'.")
@click.option("--scheduler", metavar="ADDRESS",
              help="Dask scheduler address for --executor dask, e.g. tcp://head-node:8786. Workers load the "
                   "datasets themselves: --data-dir / PLAB_DATA must be a valid path on every worker.")
@click.option("--no-verify", is_flag=True,
              help="Run even on dataset files whose sha256 does not match the registry's (e.g. a copy you "
                   "edited on purpose); by default a mismatch stops the run with exit status 3.")
@click.option("--allow-large", is_flag=True,
              help="Run even when the run's estimated size (runs, training steps, checkpoints) is beyond what a "
                   "config normally asks for; by default such a run stops before it starts, with its estimate.")
@friendly_errors
def run(config, overrides, multirun, out_dir, data_dir, force, quiet, jobs, executor, scheduler, no_verify,
        allow_large):
    """Run the experiment described by CONFIG (a YAML file, or a packaged config's name: 'plab configs'
    lists them), with OVERRIDES (key=value, values in YAML) replacing keys of the config.

    Without CONFIG, runs the packaged quickstart: Khardon & Wachman's perceptron with a threshold,
    without and with a margin (a grid over algorithm.tau), predicting with the rules last,
    longest survivor, vote and average, on the UCI sonar data (shipped inside the package),
    10-fold cross-validation. The summary's first line says what ran. A run writes to runs/NAME (the
    config's output.dir, or --out, chooses another folder; the paper configs write to runs/ too:
    'make reproduce' is what regenerates results/). An overridden run writes to its own folder,
    runs/NAME/KEY-VALUE_... (the overrides, shell-safe). Finished runs are kept in OUT/parts, so
    an interrupted command resumes where it stopped.

    \b
    Examples:
      plab run
      plab run fs1999/table1_d4 dataset.train_size=10000 training.epochs=1
      plab run my.yaml -m kernel.degree=2,3,4 training.epochs=1,10
      plab run configs/mnist_d4.yaml --out /scratch/mnist_d4
      plab run my.yaml --data-dir ~/datasets --force
      plab run configs/kw2007/table3_uci.yaml --jobs 2
      plab run configs/kw2007/table3_uci.yaml --executor dask --scheduler tcp://head-node:8786
    """
    from perceptron_lab.run.executors import check_executor
    from perceptron_lab.run.experiment import run_experiment, summarize
    from perceptron_lab.run.summary import format_summary

    from perceptron_lab.config.overrides import dropped_checkpoints, load_with_overrides, override_dir

    check_executor(executor, scheduler, jobs)
    _check_overrides(overrides)
    base, cfg, parsed = load_with_overrides(config, overrides, multirun)
    dropped = dropped_checkpoints(base, cfg, parsed)
    if dropped:
        click.echo(f"plab: warning: {dropped}", err=True)
    if out_dir is None and parsed:
        out_dir = override_dir(base, cfg, parsed)
    if base.paper and not cfg.paper:
        click.echo(f"plab: note: with these overrides the run is a variant, not scored against {base.paper} "
                   f"(add paper={base.paper} to score it)", err=True)
    res = run_experiment(cfg, out_dir=out_dir, data_dir=data_dir, force=force, progress=not quiet, jobs=jobs,
                         executor=executor, scheduler=scheduler, verify=not no_verify, allow_large=allow_large,
                         overrides=[f"{o.key}={o.text}" for o in parsed])
    main_epochs = sorted(set(cfg.training.checkpoints) | {cfg.training.epochs}
                         | set(cfg.evaluation.grid.get("training.epochs", ())))
    table = summarize(res.results, main_only_epochs=main_epochs)
    click.echo(format_summary(cfg, res, table))


def _check_overrides(args):
    """After CONFIG come key=value overrides only (one config per run)."""
    extra = [a for a in args if "=" not in a]
    if extra:
        raise click.UsageError(f"Got unexpected extra argument ({extra[0]}); after CONFIG come key=value "
                               "overrides, e.g. training.epochs=3", ctx=click.get_current_context())


@main.group()
def data():
    """List, locate, download and verify datasets.

    \b
    Examples:
      plab data list
      plab data path mnist
      plab data fetch usps
      PLAB_DATA=../shared/data plab data verify
    """


_data_dir_option = click.option("--data-dir", type=click.Path(file_okay=False), envvar="PLAB_DATA",
                                help="Dataset folder (default: $PLAB_DATA, then ~/.cache/perceptron_lab).")


@data.command("list")
@_data_dir_option
@friendly_errors
def data_list(data_dir):
    """Every dataset, whether it is present, and where it is read from.

    Example: plab data list --data-dir ../shared/data
    """
    from perceptron_lab.datasets import registry

    root = registry.resolve_data_dir(data_dir)
    click.echo(f"data folder: {root}")
    for entry in registry.list_datasets():
        folder = registry.dataset_path(entry.name, data_dir)
        present = all((folder / f.name).exists() for f in entry.files)
        mark = "present" if present else ("embedded" if entry.embedded else "missing")
        click.echo(f"  {entry.name:24s} {mark:9s} {entry.description}")
    click.echo("check checksums with 'plab data verify', download with 'plab data fetch NAME'")


@data.command("path")
@click.argument("name")
@_data_dir_option
@friendly_errors
def data_path(name, data_dir):
    """Print the folder NAME is read from.

    Example: plab data path mnist
    """
    from perceptron_lab.datasets import registry

    folder = registry.dataset_path(name, data_dir)
    entry = registry.get_entry(name)
    if entry.embedded and not all((folder / f.name).exists() for f in entry.files):
        click.echo(f"{name} is not under {folder}; the copy shipped in the package is read", err=True)
        folder = registry.EMBEDDED_DIR
    click.echo(str(folder))


@data.command("fetch")
@click.argument("names", nargs=-1, required=True)
@_data_dir_option
@click.option("--force", is_flag=True, help="Download again even when a verified copy exists.")
@friendly_errors
def data_fetch(names, data_dir, force):
    """Download datasets from their canonical sources, verifying sha256 checksums.

    Downloads resume after an interruption; a file is moved into place only once its checksum
    matches. Use 'all' for every dataset.

    Example: plab data fetch mnist usps
    """
    from perceptron_lab.datasets import registry

    if names == ("all",):
        names = tuple(e.name for e in registry.list_datasets())
    for name in names:
        registry.fetch_dataset(name, data_dir, force=force, progress=sys.stderr.isatty())
        click.echo(f"{name}: ok ({registry.dataset_path(name, data_dir)})")


@data.command("verify")
@click.argument("names", nargs=-1)
@_data_dir_option
@friendly_errors
def data_verify(names, data_dir):
    """Check dataset files against their sha256 checksums (all datasets when no NAME).

    Exit status 0 when every requested file is present and matches; 3 otherwise.

    Example: plab data verify --data-dir ../shared/data
    """
    from perceptron_lab.datasets import registry

    names = names or tuple(e.name for e in registry.list_datasets())
    bad = 0
    for name in names:
        for fname, status, detail in registry.verify_dataset(name, data_dir):
            click.echo(f"{name:24s} {Path(fname).name:32s} {status:9s} {detail}")
            bad += status != "ok"
    if bad:
        raise DatasetError(f"{bad} file(s) missing or not matching; fetch them with 'plab data fetch NAME' "
                        "or point --data-dir / PLAB_DATA at a folder that has them")


@main.group("config")
def config_group():
    """Validate and inspect configs.

    \b
    Examples:
      plab config check configs/mnist_d4.yaml
      plab config show configs/mnist_d4.yaml
      plab config docs
    """


@config_group.command("docs")
@click.option("--markdown", is_flag=True, help="Print the Markdown table the README holds.")
def config_docs(markdown):
    """Print every config key: its type, default, allowed values, when it applies and what it does.

    Example: plab config docs | less
    """
    from perceptron_lab.config import docs

    click.echo(docs.markdown() if markdown else docs.text())


@config_group.command("check")
@click.argument("configs", nargs=-1, required=True)
@friendly_errors
def config_check(configs):
    """Validate CONFIGS; one line per problem, exit status 2 on any problem.

    Example: plab config check configs/*.yaml
    """
    from perceptron_lab.config.load import load_config
    from perceptron_lab.errors import ConfigError

    problems = []
    for c in configs:
        try:
            load_config(c)
            click.echo(f"{c}: ok")
        except ConfigError as exc:
            problems.extend(exc.problems)
    if problems:
        raise ConfigError(problems)


@config_group.command("show")
@click.argument("config")
@click.argument("overrides", nargs=-1)
@click.option("-m", "--multirun", is_flag=True, help="Read key=v1,v2,... as a sweep, as 'plab run -m' does.")
@friendly_errors
def config_show(config, overrides, multirun):
    """Print CONFIG fully resolved (base configs merged, defaults filled in, OVERRIDES applied), as YAML.

    Example: plab config show fs1999/table1_d4 training.epochs=1
    """
    import yaml

    _check_overrides(overrides)
    click.echo(yaml.safe_dump(_load(config, overrides, multirun).to_dict(), sort_keys=False), nl=False)


@main.command("configs")
@friendly_errors
def configs_list():
    """List the configs shipped in the package, by the name 'plab run NAME' takes.

    Example: plab configs
    """
    from perceptron_lab.config.overrides import config_summary, packaged_configs

    for name, path in packaged_configs():
        click.echo(f"{name:42s} {config_summary(path)}".rstrip())


@main.command()
@click.argument("results_dirs", nargs=-1, type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", default="results/report", show_default=True, type=click.Path(file_okay=False),
              help="Folder for report.md, index.html and one page per paper.")
@click.option("--allow-damaged", is_flag=True,
              help="Write the report even when a run folder or log is damaged: it is marked DAMAGED and left "
                   "out of the counts (by default a damaged one stops the report, exit status 1).")
@friendly_errors
def report(results_dirs, out_dir, allow_damaged):
    """Build the report (Markdown and HTML pages) of run folders: yours, the papers', or both.

    Every folder under RESULTS_DIRS holding a run.json is read (default: results/). Your own runs
    (no paper: in their config): each run's (sweep's) test error and counts at every checkpoint,
    mean ± std over folds and permutations, its figures, the settings that differ between the
    runs and the paired comparison of every two runs on the same test sets (as compare --paired).
    Runs that reproduce a paper table: for each table the paper's value, ours, the difference,
    whether it is within tolerance, a summary per table and overall; the figures; machine,
    versions and run times; these sections appear only when such runs are given. Open
    OUT/index.html. A damaged run folder stops the report (exit status 1) unless --allow-damaged.

    \b
    Examples:
      plab report runs/ --out runs/report        # your runs
      plab report results --out results/report   # the papers
    """
    from perceptron_lab.report.tables import write_report
    from perceptron_lab.run.store import check_output_folder

    check_output_folder(out_dir)
    md, page = write_report(results_dirs or ("results",), out_dir, allow_damaged=allow_damaged)
    click.echo(f"wrote {md} and {page}")


@main.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--figures", is_flag=True, help="Redraw the run's figures too.")
@friendly_errors
def tables(run_dirs, figures):
    """Rewrite the paper tables of finished runs from their results.csv, without training.

    For after a change to the table code: reads the config recorded in each RUN_DIR/run.json and
    rewrites the <paper>_table*.{csv,md} and *_comparison.csv files next to the results. Data
    sets a table needs (the Khardon-Wachman Baseline column) are read from $PLAB_DATA.

    Example: plab tables results/kw2007/table3_uci results/fs1999/d4
    """
    from perceptron_lab.run.experiment import check_rewritable, rewrite_paper_outputs
    from perceptron_lab.run.store import check_output_folder

    for d in run_dirs:   # every folder, before any is rewritten
        check_output_folder(d, "the tables are written into the run folder: copy it to a folder you can write, "
                               "and run plab tables on the copy")
        check_rewritable(d)
    for d in run_dirs:
        for p in rewrite_paper_outputs(d, figures=figures):
            click.echo(str(p))


@main.group()
def figures():
    """Draw paper figures that need training runs of their own.

    \b
    Examples:
      plab figures gentile2001
      plab figures gentile2001 --out /tmp/figs --figure 3
    """


@figures.command("gentile2001")
@click.option("--out", "out_dir", default="runs/gentile2001", show_default=True,
              type=click.Path(file_okay=False),
              help="Folder for gentile2001_figure{3,4,5}.png (make reproduce draws the committed ones in "
                   "results/gentile2001).")
@_data_dir_option
@click.option("--figure", "which", type=click.Choice(["3", "4", "5"]), multiple=True,
              help="Draw only this figure (repeatable; default: 3, 4 and 5).")
@click.option("--permutations", type=click.IntRange(min=1),
              help="Training orders averaged per curve (default: the configs', 10, as in the paper).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@friendly_errors
def figures_gentile2001(out_dir, data_dir, which, permutations, quiet):
    """Gentile (2001) Figures 3-5: margin distributions of the training set.

    For every s in [-1, 1], the fraction of training examples whose margin is at most s (binary:
    y w.x^; one-vs-rest: correct label's output minus the best other), averaged over the
    permutations. Trains the runs again with the settings and training orders of the Table
    configs in configs/gentile2001 (Figure 3: USPS, the Gaussian widths of
    table1_usps_perceptron.yaml and table1_usps_alma.yaml; Figures 4-5: table6.yaml's artificial
    data). About two minutes on two cores; deterministic.

    Example: plab figures gentile2001 --data-dir ../shared/data --out runs/gentile2001
    """
    from perceptron_lab.papers.gentile2001.figures import gentile_margin_figures
    from perceptron_lab.run.store import check_output_folder

    check_output_folder(out_dir)   # before minutes of training
    figs = tuple(int(w) for w in which) or (3, 4, 5)
    for p in gentile_margin_figures(out_dir, data_dir=data_dir, figures=figs, permutations=permutations,
                                    progress=not quiet):
        click.echo(str(p))


@main.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--only-outside", is_flag=True,
              help="Paper comparisons: list only the in-scope cells outside tolerance, with their causes.")
@click.option("--figure", "figure", type=click.Path(dir_okay=False), default=None,
              help="Where to draw the runs side by side (default: compare.png in the current folder).")
@click.option("--diff", "diff_only", is_flag=True,
              help="Only what differs: the settings whose values differ between the runs, and the rows of the "
                   "table whose cells differ.")
@click.option("--layout", type=click.Choice(["auto", "columns", "rows"]), default="auto", show_default=True,
              help="columns: a column per run (per grid point); rows: a row per run (per grid point), as suits "
                   "a sweep; auto: rows when there are more than 3.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the table as CSV on stdout (no figure).")
@click.option("--paired", is_flag=True,
              help="Is run A better than run B? For two runs (or one run with two grid points): per rule, the "
                   "test error difference A - B paired over the folds and permutations both have, with an "
                   "interval valid under the protocol (corrected resampled t over folds; a bound on one test "
                   "set) and a verdict.")
@click.option("--rules", "rule_pair", metavar="X,Y",
              help="Is rule X better than rule Y? In each run (grid point): the test error difference X - Y "
                   "paired over its folds and permutations, with the same interval and verdict as --paired.")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True, help="Level of the paired intervals.")
@click.option("--points", "points_text", metavar="I,J,...",
              help="Only these grid points of each run (numbered as in its grid.csv and plab run's summary), in "
                   "this order: e.g. --points 0,2 --paired pairs two points of one sweep.")
@friendly_errors
def compare(run_dirs, only_outside, figure, diff_only, layout, as_csv, paired, rule_pair, confidence, points_text):
    """Compare runs: several side by side, one against another, or one run against its paper.

    One run folder that reproduces a paper table: every cell, the paper's value, ours, within
    tolerance (--only-outside: only the cells outside it, with their causes). Otherwise, and
    for several runs: one table with a column per run (per grid point, headed by the shortest
    label that tells them apart) -- the test error of each rule at the last epoch, then
    mistakes and support vectors, mean ± std over folds and permutations -- and one figure
    (test error vs epochs, a panel per rule). --diff keeps what differs, --layout rows puts a
    run (grid point) per row, --csv prints CSV.

    --paired and --rules answer "is A better than B?": the mean of the differences over the
    folds and permutations both sides share (the same index in both) and an interval whose
    assumptions hold: over k folds, Nadeau & Bengio's corrected resampled t (the folds' training
    sets overlap); on one test set, a conservative bound from the two error rates. A side is
    called lower only when the interval excludes 0 ("no difference shown" otherwise, "no
    verdict" when the test lacks what it needs). --paired refuses runs
    whose test sets are not provably the same: other data by the fingerprint run.json records
    (whatever the files are called), a run.json without one, another evaluation mode, fold
    count or fold seed.

    --points I,J keeps only those grid points of each run (numbered as in its grid.csv and in
    plab run's summary): with --paired, two points of one sweep are paired (they share the run's
    folds and training orders unless the grid changes the data or the evaluation).

    \b
    Examples:
      plab compare results/fs1999/d4
      plab compare results/kw2007/table3_usps --only-outside
      plab compare runs/quickstart runs/my_variant --figure cmp.png
      plab compare runs/my_run/kernel.degree-2+3 --diff --layout rows
      plab compare runs/a runs/b --paired
      plab compare runs/my_sweep --points 0,2 --paired
      plab compare runs/quickstart --rules vote,last --csv
    """
    from perceptron_lab.report.compare import (_columns, check_figure, differing, left_out, numbers, paired_notes,
                                               paired_rules, paired_runs, paired_text, plot_side_by_side, settings,
                                               short_rows, side_by_side, table_text)
    from perceptron_lab.report.tables import collect, compare_text

    papers = [d for d in run_dirs if collect([d], strict=True).tables]
    users = [d for d in run_dirs if (Path(d) / "results.csv").is_file()]
    neither = [d for d in run_dirs if d not in users and d not in papers]
    if neither:   # a usage problem: refused before anything is printed or drawn
        raise UsageError(f"{neither[0]}: no results.csv and no paper tables, so not a finished run folder; give "
                         "folders written by plab run (or plab tables)")
    if (paired or rule_pair) and not users:
        raise UsageError("--paired and --rules compare run folders with a results.csv; none was given")
    points = _points(points_text)
    if points is not None and not users:
        raise UsageError("--points selects grid points of run folders with a results.csv; none was given")
    if len(run_dirs) == 1 and papers and not (paired or rule_pair or as_csv or diff_only or points is not None):
        click.echo(compare_text(run_dirs[0], only_outside=only_outside))
        return
    if users:
        cols = _columns(users, points)
        if paired or rule_pair:
            if rule_pair:
                x, _, y = rule_pair.partition(",")
                if not x.strip() or not y.strip():
                    raise UsageError(f"--rules {rule_pair}: give two rules as X,Y, e.g. --rules vote,last")
                table = paired_rules(cols, x.strip(), y.strip(), confidence)
                what = f"rule {x.strip()} (A) against rule {y.strip()} (B) in each run"
            else:
                table = paired_runs(cols, confidence)
                what = f"A = {cols[0]['name']} against B = {cols[1]['name']}"
            if as_csv:
                click.echo(table.to_csv(index=False, lineterminator="\n", float_format="%.6g"), nl=False)
                return
            click.echo(f"paired difference of test error % at the last epoch, {what}: the mean of A - B over the "
                       f"folds and training orders both have (same index in both), its {confidence * 100:g}% interval")
            click.echo(paired_text(table, confidence))
            for line in paired_notes(table, confidence):
                click.echo(line)
            return
        table = side_by_side(users, cols)
        if diff_only:
            table = differing(table)
        rows = layout == "rows" or (layout == "auto" and len(cols) > 3)
        if as_csv:
            click.echo(numbers(cols, set(table.index)).to_csv(index=False, lineterminator="\n", float_format="%.6g"),
                       nl=False)
            return
        if rows:
            table = short_rows(table)
        if diff_only:
            sets = differing(settings(cols))
            click.echo("settings that differ" if len(sets) else "settings: all the same")
            if len(sets):
                click.echo(table_text(sets.T if rows else sets))
            click.echo("")
        target = Path(figure or "compare.png")
        check_figure(cols, target)   # before anything is printed: a refused call prints no table
        click.echo("runs side by side: test error % of each rule at each run's last epoch T, then counts (totals "
                   "over labels); mean ± std over folds and permutations" + ("; only what differs" if diff_only else ""))
        click.echo(table_text(table.T if rows else table))
        fig = plot_side_by_side(users, target, cols)
        click.echo(f"figure: {fig}")
        if left_out(cols):
            click.echo(f"plab: warning: {left_out(cols)}", err=True)
    if as_csv:
        return
    for d in papers:
        click.echo("")
        click.echo(compare_text(d, only_outside=only_outside, cells=only_outside))


def _points(text):
    """``--points 0,2`` as grid point numbers (None without the option); a usage error otherwise."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if not all(p.isdigit() for p in parts):
        raise UsageError(f"--points {text}: give grid point numbers separated by commas, e.g. --points 0,2")
    points = [int(p) for p in parts]
    if len(set(points)) < len(points):
        raise UsageError(f"--points {text}: each grid point once")
    return points


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Folder for the figures (default: the run folder, beside results.csv).")
@friendly_errors
def plot(run_dir, out_dir):
    """Draw a run's figures from its results.csv (no training).

    learning_curves.png (test error vs epochs per rule), counts.png (mistakes and support
    vectors vs epochs), parameter_curve.png (runs with a grid: test error vs grid point) and
    folds.png (k-fold and nested runs: the spread over folds). plab run draws them too when
    output.figures is true.

    Example: plab plot runs/quickstart
    """
    from perceptron_lab.run.figures import plot_run
    from perceptron_lab.run.store import check_output_folder

    check_output_folder(out_dir or run_dir)
    for p in plot_run(run_dir, out_dir):
        click.echo(str(p))


if __name__ == "__main__":  # pragma: no cover
    main()
