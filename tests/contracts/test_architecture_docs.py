"""Docstrings and comments in the package say what the code does and why, never a diary of timings.

Measurements belong in ``benchmarks/NOTES.md`` (with the commit they were taken at), not in the
package: a docstring with "12.0 s instead of 15.0 s" is stale the day the code or the machine
changes. This test reads every comment and every string statement (module, class, function and
attribute docstrings) of ``perceptron_lab/`` and fails on a timing figure (a number followed by
s, ms, min, seconds, ...), a memory figure (a number followed by KB, MB, GB, ...), a count of page
faults, or an "N times faster/slower" claim.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "perceptron_lab"

_NUM = r"\d+(?:[.,]\d+)*"
_RANGE = rf"{_NUM}(?:\s*(?:-|–|to)\s*{_NUM})?"
DIARY = re.compile(
    rf"\b{_RANGE}\s*(?:ms|µs|us|ns|s|secs?|seconds?|mins?|minutes?|hours?)\b"   # timings
    rf"|\b{_RANGE}\s*[KMGT]i?B\b"                                                # memory figures
    rf"|\b{_NUM}\s*(?:thousand|million|billion)?\s*(?:minor |major )?page faults?"
    r"|\b(?:\w+ times|twice|\d+(?:\.\d+)?\s*x)\s+(?:faster|slower)\b"
    r"|\b(?:[\d.]+ times|twice) as (?:long|fast|slow)\b|\btwice the rate\b",
    re.IGNORECASE,
)

#: Figures that match the patterns but are not measurements: (file, exact text) -> why it stays.
ALLOWED = {
    ("engine/memory.py", "from 4 MB on"): "numpy's huge-page threshold, the reason for COLD_MIN_BYTES",
    ("run/evaluation.py", "0.754 s"): "s is the sample standard deviation of the formula, not seconds",
    ("model/scoring.py", "(4 MB)"): "the size of the TASK_SCORES setting (2^19 float64 values)",
    ("engine/alma.py", "24 MB for"): "arithmetic: 10000 x 300 float64 values, not a measurement",
    ("engine/budget.py", "(256 MB in float64)"): "the size of the default entries (2^25 float64 values)",
}

#: Modules being rewritten elsewhere that still hold measurement diaries. Each is expected to fail
#: (strictly: once a file is clean its test passes, the expected failure turns into an error, and
#: the name must come off this list, so the check is strict for every module from then on).
PENDING = {
}


def _texts(path: Path):
    """(line, text) of every comment and every string statement (docstrings) of ``path``."""
    src = path.read_text(encoding="utf-8")
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(src)):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            for i, line in enumerate(node.value.value.splitlines()):
                yield node.lineno + i, line


def diary_lines(path: Path) -> list[str]:
    """``file:line: text`` of each comment or docstring line of ``path`` holding a measurement."""
    rel = path.relative_to(PACKAGE).as_posix()
    allowed = [text for (name, text) in ALLOWED if name == rel]
    found = []
    for line, text in _texts(path):
        spans = [(m.start(), m.end()) for a in allowed for m in re.finditer(re.escape(a), text)]
        if any(not any(s <= m.start() and m.end() <= e for s, e in spans) for m in DIARY.finditer(text)):
            found.append(f"perceptron_lab/{rel}:{line}: {text.strip()}")
    return found


MODULES = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("rel", [
    pytest.param(rel, marks=pytest.mark.xfail(strict=True, reason=f"being rewritten: {PENDING[rel]}"))
    if rel in PENDING else rel for rel in MODULES])
def test_no_measurement_diary(rel):
    found = diary_lines(PACKAGE / rel)
    assert not found, ("measurements in docstrings or comments (move them to benchmarks/NOTES.md "
                       "and say what the code does and why):\n" + "\n".join(found))


def test_pattern_catches_diaries():
    """The pattern flags the kinds of figures a diary holds, and not ordinary prose or settings."""
    for diary in ("took 57 min 55 s instead of 56 min", "0.95-1.28 s with the default",
                  "a new 2.4 MB allocation", "270 million page faults", "2 GB of columns",
                  "runs about ten times slower", "1.7 s a rewrite", "12.3-13.3 s with 128",
                  "take 2.5 times as long as 128", "at about twice the rate"):
        assert DIARY.search(diary), diary
    for prose in ("the 95% interval", "eps=0, s=3", "K(x, y) = k0 + k1 x.y", "2^22 cycles",
                  "1/(s c)", "Table 3 MNIST rows", "advised page faults wait for compaction"):
        assert not DIARY.search(prose), prose


def test_allow_list_is_used():
    """Every allow-list entry still names text in its file, so that the list cannot grow stale."""
    for (rel, text), why in ALLOWED.items():
        assert any(text in t for _, t in _texts(PACKAGE / rel)), f"{rel}: {text!r} ({why}) is gone"


def test_pending_files_exist():
    for rel in PENDING:
        assert (PACKAGE / rel).is_file(), rel
