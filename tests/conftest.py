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


def pytest_runtest_setup(item):
    """A test marked ``@pytest.mark.paper(name)`` is skipped when that paper's plug-in is not
    installed (its folder under perceptron_lab/papers/ removed); modules of one paper skip as a
    whole through ``pytest.importorskip`` of the paper's package."""
    from perceptron_lab.config import plugins

    for mark in item.iter_markers("paper"):
        if mark.args[0] not in plugins.names():
            pytest.skip(f"the {mark.args[0]} paper plug-in is not installed")
