"""The package's metadata says one thing in one place.

The version has one source, ``perceptron_lab/constants.py``: ``pyproject.toml`` reads it
(``[tool.setuptools.dynamic]``) and ``CITATION.cff`` must carry the same string. The MIT license
named in ``pyproject.toml`` and ``CITATION.cff`` has its text in ``LICENSE``, which the build ships
(``license-files``); ``tests/integration/test_wheel.py`` checks the built wheel itself.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

import perceptron_lab
from perceptron_lab.constants import __version__

ROOT = Path(__file__).resolve().parents[2]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_version_has_one_source():
    project = _pyproject()["project"]
    assert "version" not in project, "pyproject.toml must not repeat the version"
    assert "version" in project["dynamic"]
    attr = _pyproject()["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    module, name = attr.rsplit(".", 1)
    assert (module, name) == ("perceptron_lab.constants", "__version__")
    assert perceptron_lab.__version__ == __version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


def test_citation_carries_the_package_version_and_license():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert str(cff["version"]) == __version__
    assert cff["license"] == _pyproject()["project"]["license"]


def test_license_text_matches_the_declared_license():
    project = _pyproject()["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "Permission is hereby granted, free of charge" in text


def test_build_requirements_read_the_spdx_license():
    build = _pyproject()["build-system"]["requires"]
    assert build == ["setuptools>=77"], "the SPDX license string needs setuptools 77; wheel is not needed"


def test_classifiers_name_the_supported_pythons():
    project = _pyproject()["project"]
    floor = re.fullmatch(r">=3\.(\d+)", project["requires-python"])
    assert floor, project["requires-python"]
    named = sorted(
        int(c.rsplit(".", 1)[1])
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    assert named and named[0] == int(floor.group(1))
    assert named == list(range(named[0], named[-1] + 1))
    # PEP 639: a license expression excludes license classifiers
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]


def test_py_typed_ships():
    assert (ROOT / "perceptron_lab" / "py.typed").is_file()
    assert "py.typed" in _pyproject()["tool"]["setuptools"]["package-data"]["perceptron_lab"]
