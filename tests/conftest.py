"""Shared fixtures.

``data_dir`` is the folder holding real copies of the datasets (layout ``mnist/``,
``fashion-mnist/``, ``usps/``, ``letter/``, ``uci/``): ``$PLAB_DATA`` if set, else
``shared/data`` next to the repository checkout (``<repo>/../shared/data``). Tests that
use it are skipped when neither exists.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# No symlink resolution: the checkout's sibling folder is what counts.
_REPO_SIBLING_DATA = Path(os.path.abspath(__file__)).parents[2] / "shared" / "data"


def find_data_dir() -> Path | None:
    """The real-data folder, or None when it is not available on this machine."""
    env = os.environ.get("PLAB_DATA", "").strip()
    candidate = Path(env).expanduser() if env else _REPO_SIBLING_DATA
    return candidate if candidate.is_dir() else None


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = find_data_dir()
    if path is None:
        pytest.skip(
            "real datasets not found: set PLAB_DATA or place them in "
            f"{_REPO_SIBLING_DATA}"
        )
    return path


#: The cross-cutting suites, each a folder of tests/ whose tests carry its name as a marker
#: (``python -m pytest -m contracts``); the other folders mirror the package's layers.
SUITE_FOLDERS = ("contracts", "integration")
_TESTS = Path(os.path.abspath(__file__)).parent


def pytest_collection_modifyitems(items):
    """A test in ``tests/contracts/`` or ``tests/integration/`` is marked with its folder's name."""
    for item in items:
        folder = Path(item.path).parent
        if folder.name in SUITE_FOLDERS and folder.parent == _TESTS:
            item.add_marker(folder.name)


def pytest_runtest_setup(item):
    """A test marked ``@pytest.mark.paper(name)`` is skipped when that paper's plug-in is not
    installed (its folder under perceptron_lab/papers/ removed); modules of one paper skip as a
    whole through ``pytest.importorskip`` of the paper's package."""
    from perceptron_lab.config import plugins

    for mark in item.iter_markers("paper"):
        if mark.args[0] not in plugins.names():
            pytest.skip(f"the {mark.args[0]} paper plug-in is not installed")


@pytest.fixture(autouse=True)
def _own_shared_columns_setting(monkeypatch):
    """The amount of other runs' kernel columns a run keeps is the default in every test unless the
    test sets it: the caller's setting is set aside, and whatever a test leaves behind is undone
    (the reproduction's main() writes it to os.environ for the workers it starts)."""
    from perceptron_lab.engine.columns import KEEP_ENV

    monkeypatch.setenv(KEEP_ENV, "")     # recorded, so that the undo restores the caller's value
    monkeypatch.delenv(KEEP_ENV)


@pytest.fixture(autouse=True)
def _own_working_directory():
    """Every test starts in the folder the session started in and leaves it there, whatever it (or
    code it calls, such as the reproduction's main()) changes into."""
    start = os.getcwd()
    yield
    os.chdir(start)
