"""The API reference (docs/api.md, rendered by mkdocstrings with ``docstring_style: numpy``) is
built from docstrings that are numpydoc, document exactly the parameters each signature takes,
hold no Sphinx roles (which the site shows as literal text) and whose examples run."""

from __future__ import annotations

import dataclasses
import doctest
import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
API_PAGE = ROOT / "docs" / "api.md"
#: Sphinx roles: mkdocstrings renders ":class:`X`" as that text; use [`X`][path.to.X] or ``X``.
SPHINX_ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj|ref|py:\w+):`")
#: Objects whose docstrings live in modules being rewritten elsewhere, with what they still lack.
PENDING: dict = {}


def _targets():
    """(dotted name, object) of every ``::: target`` of the API page and of its listed members."""
    out = []
    text = API_PAGE.read_text(encoding="utf-8")
    for block in re.split(r"(?m)^(?=::: )", text)[1:]:
        name = block.split()[1]
        module, _, attr = name.rpartition(".")
        obj = getattr(importlib.import_module(module), attr)
        out.append((name, obj))
        members = re.search(r"members: \[([^\]]*)\]", block.split("\n\n")[0])
        if members:
            for m in (s.strip() for s in members.group(1).split(",")):
                out.append((f"{name}.{m}", getattr(obj, m)))
    return out


TARGETS = _targets()


def _param(name, obj):
    marks = [pytest.mark.xfail(strict=True, reason=PENDING[name])] if name in PENDING else []
    return pytest.param(name, obj, id=name.removeprefix("perceptron_lab."), marks=marks)


def _section(doc: str, title: str) -> list[str] | None:
    """The lines of a numpydoc section (None when the docstring has none)."""
    m = re.search(rf"(?m)^{title}\n-{{{len(title)}}}\n", doc)
    if not m:
        return None
    rest = doc[m.end():]
    end = re.search(r"(?m)^\n?\w[\w ]*\n-{3,}\n", rest)
    return rest[:end.start() if end else len(rest)].splitlines()


def _documented(lines: list[str]) -> list[str]:
    """The names of a Parameters section: its unindented lines, up to a colon."""
    return [ln.split(":")[0].strip() for ln in lines if ln and not ln[0].isspace()]


def _signature_names(obj) -> list[str]:
    fn = obj.__init__ if inspect.isclass(obj) else obj
    params = list(inspect.signature(fn).parameters.values())
    return [p.name for p in params if p.name != "self"
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def test_api_page_lists_the_public_entry_points():
    names = {n for n, _ in TARGETS}
    for needed in ("perceptron_lab.config.load.load_config", "perceptron_lab.run.experiment.run_experiment",
                   "perceptron_lab.datasets.load_dataset", "perceptron_lab.datasets.user.load_user_data",
                   "perceptron_lab.estimators.perceptron.VotedPerceptron", "perceptron_lab.estimators.perceptron.MarginPerceptron",
                   "perceptron_lab.estimators.perceptron.ALMA", "perceptron_lab.estimators.budget.BudgetPerceptron"):
        assert needed in names, needed


@pytest.mark.parametrize("name,obj", [_param(n, o) for n, o in TARGETS])
def test_no_sphinx_roles(name, obj):
    doc = inspect.getdoc(obj) or ""
    assert not SPHINX_ROLE.search(doc), f"{name}: {SPHINX_ROLE.findall(doc)} render literally on the site"


@pytest.mark.parametrize("name,obj", [_param(n, o) for n, o in TARGETS
                                      if not (inspect.isclass(o) and issubclass(o, BaseException))])
def test_numpydoc_sections(name, obj):
    """Parameters name exactly the signature's parameters, in its order; a function that returns
    something has a Returns section."""
    doc = inspect.getdoc(obj) or ""
    expected = _signature_names(obj)
    # a dataclass's fields are its parameters, documented as its attributes
    params = _section(doc, "Attributes" if dataclasses.is_dataclass(obj) else "Parameters")
    if expected:
        assert params is not None, f"{name}: no Parameters section"
        documented = _documented(params)
        if inspect.isclass(obj):  # an estimator documents its own parameters, then the shared ones
            assert sorted(documented) == sorted(expected), f"{name}: documents {documented}, takes {expected}"
        else:
            assert documented == expected, f"{name}: documents {documented}, takes {expected}"
    if not inspect.isclass(obj):
        returns = inspect.signature(obj).return_annotation
        if returns not in (None, "None"):
            assert _section(doc, "Returns"), f"{name}: no Returns section"


def test_sections_parser_reads_a_known_docstring():
    doc = "Head.\n\nParameters\n----------\na : int\n    A.\nb, c : float\n    B.\n\nReturns\n-------\nx : int\n"
    assert _documented(_section(doc, "Parameters")) == ["a", "b, c"]
    assert _section(doc, "Returns") == ["x : int"]
    assert _section(doc, "Raises") is None


@pytest.mark.parametrize("name,obj", [_param(n, o) for n, o in TARGETS
                                      if ">>>" in (inspect.getdoc(o) or "")])
def test_docstring_examples_run(name, obj, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    report = []
    for test in finder.find(obj, name, globs={}):
        runner.run(test, out=report.append)
    assert runner.tries > 0 and runner.failures == 0, "".join(report)
