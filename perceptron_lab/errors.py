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


# The exit-status contract of every ``plab`` command: (status, meaning). The documentation renders
# this table (docs/troubleshooting.md, by perceptron_lab.docs_pages); ``tests/test_cli.py`` runs at
# least one error path for each.
EXIT_STATUSES = (
    (0, "done"),
    (1, "the output folder: not writable, too little free disk space, full during the run, in use "
        "by another `plab run`, or holding another config's results"),
    (2, "usage and configs: an unknown option or command, an invalid config, a config that does not "
        "fit its data (`train_size` beyond the data, a holdout on a dataset without a test split), "
        "a run whose estimated size is absurd (`--allow-large` insists)"),
    (3, "data: a dataset missing, corrupt or not matching its sha256 (`plab run`, `plab data verify`; "
        "`--no-verify` insists), an unknown dataset name, a data file of your own that cannot be "
        "used (`dataset.path`)"),
    (4, "numerics: kernel values or scores that would overflow, underflow or stop being finite"),
    (130, "interrupted (Ctrl-C); finished parts are kept and the same command resumes"),
)
