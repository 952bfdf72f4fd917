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
