"""Running ``plab`` in-process from the tests: the exit status, stdout and the ``plab: error:``
lines, never a traceback; and :func:`refused`, a data error of one line with its fix."""

import pytest
from click.testing import CliRunner

from perceptron_lab.cli.main import main
from perceptron_lab.errors import DatasetError


def plab(*args):
    """(exit status, stdout, the 'plab: error:' lines); never a traceback."""
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("plab: error:")]
    assert "Traceback" not in r.output
    return r.exit_code, r.stdout, errors


def one_error(code, *args):
    """Run, expect exit status ``code`` and exactly one error line; return it."""
    status, out, errors = plab(*args)
    assert status == code and len(errors) == 1, (status, out, errors)
    return errors[0]


def refused(call, *texts):
    """Expect one DatasetError line with a fix and each of ``texts``; return the message."""
    with pytest.raises(DatasetError) as exc:
        call()
    msg = str(exc.value)
    assert "\n" not in msg and "Fix:" in msg, msg
    for t in texts:
        assert t in msg, msg
    return msg
