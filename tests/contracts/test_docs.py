"""The documentation: generated pages current, no number typed by hand, every example runs.

* ``README.md`` and every generated page or block of ``docs/`` equal what
  ``python -m perceptron_lab.cli.docs_pages`` writes from ``results/`` now (``make docs`` refreshes them);
* the README is at most 12 KB, and neither it nor a hand-written page has a measured number in its
  prose (numbers live in the generated blocks, which come from ``results/``);
* every ```` ```pycon ```` block runs as a doctest, and every ```` ```console ```` block runs in a
  shell (``$ `` commands, ``> `` continuation lines) with its shown output checked (``...`` matches
  anything), in a fresh folder per page, on the packaged data.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from perceptron_lab.cli import docs_pages

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").rglob("*.md"))
GENERATED = set(docs_pages.generated_paths())
FENCE = re.compile(r"^```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
BLOCK = re.compile(r"<!-- generated: ([a-z0-9-]+) [^>]*-->\n.*?<!-- end generated: \1 -->", re.S)
#: A measured number in prose: a decimal, a ratio "a / b", or a count with a unit of time, size or share.
MEASURED = re.compile(r"(?<![\d.§])\d+\.\d+\b(?![.\d])|\b\d+ / \d+\b|\b\d+(?:\.\d+)?\s?(?:%|s\b|ms\b|min\b|minutes\b|seconds\b|"
                      r"hours?\b|GB\b|MB\b|KB\b|×|GFLOP)")


def _blocks(path: Path, lang: str) -> list[str]:
    return [m.group("body") for m in FENCE.finditer(path.read_text(encoding="utf-8")) if m.group("lang") == lang]


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


# ----------------------------------------------------------------------------- generated content


def test_generated_pages_and_readme_blocks_are_current():
    stale = docs_pages.stale(ROOT)
    assert stale == [], f"stale (run `make docs` or python -m perceptron_lab.cli.docs_pages): {stale}"


def test_the_check_finds_a_stale_number(tmp_path):
    """The staleness check can fail: a README whose headline table was edited by hand."""
    for rel in ("README.md", "CITATION.cff"):
        (tmp_path / rel).write_text((ROOT / rel).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "results").symlink_to(ROOT / "results")
    (tmp_path / "docs").mkdir()
    text = (tmp_path / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- generated: headline-table .*?<!-- end generated: headline-table -->", text, re.S)
    assert block, "README.md lost its headline table"
    # a cell keeps "mean ± std" on one line with no-break spaces (the site's wide tables)
    cell = re.search(r"\d+\.\d\d[ \u00a0]±[ \u00a0]\d+\.\d\d", block.group(0)).group(0)
    (tmp_path / "README.md").write_text(text.replace(cell, "9.99 ± 9.99", 1), encoding="utf-8")
    assert "README.md" in docs_pages.stale(tmp_path)
    docs_pages.write(tmp_path)
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == text


def test_readme_headline_table_is_the_committed_run():
    """Every cell of the README's Table 1 (d = 4) is the committed layout's cell, row by row."""
    import pandas as pd

    layout = pd.read_csv(ROOT / "results/fs1999/d4/fs1999_table1_d4.csv", dtype=str, keep_default_na=False)
    text = README.read_text(encoding="utf-8").replace("\u00a0", " ")   # no-break spaces keep a cell on one line
    for _, r in layout.iterrows():
        line = f"| {r.iloc[1]} | " + " | ".join(r.iloc[2:]) + " |"
        assert line in text, f"README.md: the row {r.iloc[1]!r} of Table 1 (d = 4) is not the committed one"


def test_readme_size_and_sections():
    data = README.read_bytes()
    assert len(data) <= 12288, f"README.md is {len(data)} bytes; at most 12288"
    text = data.decode("utf-8")
    for needed in ("python -m pytest -q", "pip install -e", "<!-- generated: headline-table",
                   "```pycon", "## Data"):
        assert needed in text, needed


@pytest.mark.parametrize("path", [README] + [p for p in PAGES if _rel(p) not in GENERATED], ids=_rel)
def test_no_measured_number_typed_by_hand(path):
    """Prose outside the generated blocks and the code holds no measured number."""
    text = BLOCK.sub("", path.read_text(encoding="utf-8"))
    text = FENCE.sub("", text)
    text = re.sub(r"`[^`\n]+`", "", text)
    found = [m.group(0) for m in MEASURED.finditer(text)]
    assert found == [], f"{_rel(path)}: numbers typed by hand (generate them from results/): {found}"


def test_every_page_is_in_the_navigation():
    import yaml

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!!python/name:", ""))["nav"]

    def pages(x):
        if isinstance(x, str):
            yield x
        elif isinstance(x, dict):
            for v in x.values():
                yield from pages(v)
        elif isinstance(x, list):
            for v in x:
                yield from pages(v)

    listed = set(pages(nav))
    # changelog.md is the repository's CHANGELOG.md, which docs/hooks.py adds to the site
    assert (ROOT / "CHANGELOG.md").is_file()
    assert {p.relative_to(ROOT / "docs").as_posix() for p in PAGES} | {"changelog.md"} == listed


# ----------------------------------------------------------------------------- examples


@pytest.mark.parametrize("path", [p for p in [README] + PAGES if _blocks(p, "pycon")], ids=_rel)
def test_python_examples(path, tmp_path, monkeypatch):
    """Every ```pycon block of a page, in order and sharing one namespace, in a fresh folder."""
    monkeypatch.chdir(tmp_path)
    globs: dict = {}
    for i, block in enumerate(_blocks(path, "pycon")):
        test = doctest.DocTestParser().get_doctest(block, globs, f"{_rel(path)} block {i + 1}", str(path), 0)
        assert test.examples, f"{_rel(path)}: an empty pycon block"
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
        report: list = []
        runner.run(test, out=report.append, clear_globs=False)
        assert runner.failures == 0, "".join(report)
        globs = test.globs   # the next block sees this one's names


def parse_console(block: str) -> list[tuple[str, str]]:
    """(command, expected output) pairs of a console block: ``$ `` starts a command, ``> `` lines
    continue it (a here-document), the lines up to the next ``$ `` are its output."""
    steps: list = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append([line[2:], [], False])
        elif line.startswith("> ") and steps and not steps[-1][1]:
            steps[-1][0] += "\n" + line[2:]
        elif steps:
            steps[-1][1].append(line)
        else:
            raise AssertionError(f"console block output before any command: {line!r}")
    return [(cmd, "\n".join(out)) for cmd, out, _ in steps]


def _matches(expected: str, got: str) -> bool:
    want = "\n".join(line.rstrip() for line in expected.strip("\n").splitlines())
    have = "\n".join(line.rstrip() for line in got.replace("\r", "\n").strip("\n").splitlines())
    if not want:
        return have == ""
    return doctest.OutputChecker().check_output(want + "\n", have + "\n", doctest.ELLIPSIS)


def run_console(path: Path, cwd: Path) -> list[str]:
    """Run every console block of ``path`` in ``cwd``; the problems found. The blocks run as on a
    new user's machine, whose data root holds nothing (an empty ``PLAB_DATA``): the pages show
    what a newcomer sees, whatever datasets this machine has."""
    (cwd / "no-data").mkdir(exist_ok=True)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               COLUMNS="200", PLAB_DATA=str(cwd / "no-data"))
    problems = []
    for block in _blocks(path, "console"):
        for cmd, expected in parse_console(block):
            p = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=600)
            if p.returncode != 0:
                problems.append(f"{_rel(path)}: `{cmd}` exited with {p.returncode}:\n{p.stdout[-2000:]}")
            elif not _matches(expected, p.stdout):
                problems.append(f"{_rel(path)}: `{cmd}` printed\n{p.stdout[-3000:]}\ninstead of\n{expected}")
    return problems


@pytest.mark.parametrize("path", [p for p in [README] + PAGES if _blocks(p, "console")], ids=_rel)
def test_shell_examples(path, tmp_path):
    assert run_console(path, tmp_path) == []


def test_the_shell_check_finds_a_wrong_example(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```console\n$ echo one\ntwo\n$ false\n$ cat > f <<'E'\n> x\n> E\n$ cat f\nx\n```\n")
    ROOTED = tmp_path / "run"
    ROOTED.mkdir()
    global ROOT
    old, ROOT = ROOT, tmp_path
    try:
        problems = run_console(page, ROOTED)
    finally:
        ROOT = old
    assert len(problems) == 2 and "`echo one` printed" in problems[0] and "`false` exited with 1" in problems[1]


def test_paper_summary_counts_variant_runs_not_tables():
    """The paper summary's variant column names how many variant runs it counts: the run folders
    under results/<paper>/variants/ with a comparison, not their tables (one Gentile variant run
    holds Tables 1 and 2, and the README said 4 runs for 3)."""
    from perceptron_lab.config import plugins

    text = README.read_text(encoding="utf-8")
    block = text.split("<!-- generated: paper-summary")[1].split("<!-- end generated: paper-summary")[0]
    for p in plugins.papers():
        row = next((ln for ln in block.splitlines() if ln.startswith(f"| {p.title.split(':')[0]} |")), None)
        if row is None:
            continue
        runs = [d for d in (ROOT / "results" / p.name / "variants").glob("*")
                if (d / "run.json").is_file() and any(d.glob(f"{p.name}_*_comparison.csv"))]
        m = re.search(r"\((\d+) runs?\) \|$", row)
        assert (m and int(m.group(1))) == (len(runs) or None), (row, [d.name for d in runs])
