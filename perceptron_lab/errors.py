"""Exceptions that the command line turns into one clear line and a non-zero exit status."""


class PlabError(Exception):
    """Base class of errors reported to the user without a traceback."""

    exit_code = 1


class ConfigError(PlabError):
    """A config file is invalid. ``problems`` holds one message per problem."""

    exit_code = 2

    def __init__(self, problems):
        if isinstance(problems, str):
            problems = [problems]
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class DatasetError(PlabError):
    """A dataset is missing, corrupt or fails its checksum; the message says how to fix it."""

    exit_code = 3


class NumericError(PlabError):
    """Kernel values or scores would overflow (or did overflow) the chosen float type."""

    exit_code = 4


class OutputError(PlabError):
    """The output folder cannot be written: not writable, or the disk is full."""

    exit_code = 1


class UsageError(PlabError):
    """A command-line option or argument is wrong (click's own usage errors exit with 2 too)."""

    exit_code = 2


class CheckoutRequired(UsageError):
    """A tool that regenerates the repository's own files (results/, docs/) runs from a clone of the
    repository, not from an installed copy (:func:`perceptron_lab.constants.source_checkout`).
    Exit status 2; nothing is written."""

    def __init__(self, tool: str):
        super().__init__(f"{tool} regenerates the files of a clone of the perceptron_lab repository and "
                         "this perceptron_lab is an installed copy; run it from a clone (pip install -e .)")


class DamagedFileError(OutputError):
    """A file plab reads back (results, tables, run records, parts, logs) is damaged: cut short,
    not UTF-8, not parseable, or missing columns. The message names the file and how to get a
    whole copy again. Exit status 1, as for every other problem of an output folder."""


class UserFileError(OutputError):
    """A file plab did not write stands where plab must write (or is asked to remove) one of its
    own: plab stops instead of overwriting or deleting it (exit status 1)."""


class WorkerError(PlabError):
    """The processes that compute the runs failed: the Dask scheduler cannot be reached, has no
    workers or went away, its workers cannot run this perceptron_lab, or a worker process (local
    or Dask) died. Finished parts are kept; the same command resumes."""

    exit_code = 5


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP received: unwinds like Ctrl-C (workers stopped, finished parts kept) and
    ends with the shell's status for that signal, 128 + its number."""

    def __init__(self, signum: int, name: str):
        super().__init__(name)
        self.signum = signum
        self.name = name


# The exit-status contract of every ``plab`` command: (status, meaning). The README and the
# documentation render this table (docs/troubleshooting.md, by perceptron_lab.cli.docs_pages); ``tests/contracts/test_exit_contract.py`` maps each status to several
# error paths that must end with it, and checks that ``plab`` exits with no status left out here.
EXIT_STATUSES = (
    (0, "done"),
    (1, "the output folder, standard output and the files plab reads back: not writable, too little free disk "
        "space, full during the run, standard output full or closed before plab finished printing (`> /dev/full`, "
        "a `| head` that stopped reading), in use by another `plab run`, holding another config's results, a file "
        "plab did not write standing where plab writes one of its own (plab never overwrites or deletes it), or a "
        "file plab reads back (results.csv, run.json, a comparison, a part without its header) damaged"),
    (2, "usage and configs: an unknown option or command, an invalid config, a config that does not "
        "fit its data (`train_size` beyond the data, a holdout on a dataset without a test split), "
        "a run whose estimated size is absurd (`--allow-large` insists, short of a run no machine can do: a "
        "plan beyond its memory, a century of training), epochs or checkpoints that cover "
        "less than one training step, settings the engine cannot run with, `--executor` options that do not fit "
        "together (`dask` without `--scheduler`) or need the dask extra, an invalid causes file, a folder given "
        "as a run folder that is not one, runs `plab compare` cannot pair (other test sets, not two runs, "
        "an unknown rule)"),
    (3, "data: a dataset missing, corrupt or not matching its sha256 (`plab run`, `plab data verify`; "
        "`--no-verify` insists), an unknown dataset name, a data file of your own that cannot be "
        "used (`dataset.path`)"),
    (4, "numerics: kernel values or scores that would overflow, underflow or stop being finite"),
    (5, "workers: the Dask scheduler cannot be reached, has no workers or went away, its workers cannot run "
        "this perceptron_lab, a worker process died; finished parts are kept and the same command resumes"),
    (129, "stopped by SIGHUP (the terminal closed); as for Ctrl-C, finished parts are kept and the same "
          "command resumes"),
    (130, "interrupted (Ctrl-C); finished parts are kept and the same command resumes"),
    (143, "stopped by SIGTERM (`kill`, a batch scheduler's time limit); as for Ctrl-C, finished parts are "
          "kept and the same command resumes"),
)
