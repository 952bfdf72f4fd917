"""Running ``plab`` in-process from the tests: the exit status, stdout and the ``plab: error:``
lines, never a traceback; and :func:`refused`, a data error of one line with its fix."""

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

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


@functools.lru_cache(maxsize=None)
def packaged_data_root() -> Path:
    """A data root holding byte-for-byte copies of the datasets packaged with plab (sonar,
    ionosphere), made once per process. A run given it reads the registry's checksummed files
    whatever data root this machine has; without one, plab reads the packaged copy and says so in
    a ``plab: note:`` line, which a test of the exact output would then have to expect."""
    from perceptron_lab.datasets.registry import EMBEDDED_DIR, list_datasets

    root = Path(tempfile.mkdtemp(prefix="plab-packaged-root-"))
    atexit.register(shutil.rmtree, root, True)
    for entry in list_datasets():
        if entry.embedded:
            (root / entry.subfolder).mkdir(parents=True, exist_ok=True)
            for f in entry.files:
                shutil.copyfile(EMBEDDED_DIR / f.name, root / entry.subfolder / f.name)
    return root
