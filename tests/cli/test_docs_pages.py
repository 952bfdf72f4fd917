"""The documentation generator refuses what it cannot read (``perceptron_lab/cli/docs_pages.py``).

A README block whose end marker is missing, or a marker given twice, used to pass ``--check`` with
a hand-edited number inside; a damaged file under ``results/`` made the generator warn and then
write smaller totals ("0 / 0", "384 / 384" for 700 / 700) into README.md and docs/ with exit
status 0. Each case must now stop the check and the generator alike with one ``plab: error:`` line
naming the file, exit status 1, and no file written. Every case works on a copy of the repository's
documents in ``tmp_path`` whose ``results/`` links to the committed files, except the one damaged.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from perceptron_lab.cli import docs_pages

ROOT = Path(__file__).resolve().parents[2]
HEADLINE_END = "<!-- end generated: headline-table -->\n"


def mirror(tmp_path: Path, real: tuple[str, ...] = ()) -> Path:
    """A copy of what the generator reads and writes: README.md, CITATION.cff and docs/ copied,
    results/ as links to the committed files, except the files in ``real`` (copied, to be damaged)."""
    root = tmp_path / "repo"
    root.mkdir()
    for rel in ("README.md", "CITATION.cff"):
        shutil.copy(ROOT / rel, root / rel)
    shutil.copytree(ROOT / "docs", root / "docs")
    for rel in ("perceptron_lab", "configs"):   # the config comments the paper pages quote
        (root / rel).symlink_to(ROOT / rel)
    for d, _, files in os.walk(ROOT / "results"):
        here = root / Path(d).relative_to(ROOT)
        here.mkdir(parents=True, exist_ok=True)
        for f in files:
            rel = (Path(d) / f).relative_to(ROOT).as_posix()
            if rel in real:
                shutil.copy(ROOT / rel, here / f)
            else:
                (here / f).symlink_to(Path(d) / f)
    return root


def snapshot(root: Path) -> dict:
    """The bytes of every file the generator writes (README.md and docs/)."""
    files = [root / "README.md"] + sorted((root / "docs").rglob("*"))
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files if p.is_file()}


def refused(capsys, root: Path, check: bool, names: str) -> str:
    """Run the generator (or ``--check``) on ``root``: exit status 1, one ``plab: error:`` line
    naming ``names``, nothing written; the line."""
    before = snapshot(root)
    rc = docs_pages.main((["--check"] if check else []) + ["--root", str(root)])
    out, err = capsys.readouterr()
    lines = [x for x in (out + err).splitlines() if x.strip()]
    assert rc == 1, (out, err)
    assert len(lines) == 1 and lines[0].startswith("plab: error: ") and names in lines[0], lines
    assert snapshot(root) == before, "a refused run wrote a file"
    return lines[0]


# ----------------------------------------------------------------------------- block markers


def _edit_readme(root: Path, fn) -> None:
    p = root / "README.md"
    p.write_text(fn(p.read_text(encoding="utf-8")), encoding="utf-8")


def _hand_edited(text: str) -> str:
    """The headline table with a number typed by hand."""
    cell = re.search(r"\d+\.\d\d\s±\s\d+\.\d\d", text.split("<!-- generated: headline-table")[1]).group(0)
    return text.replace(cell, "9.99 ± 9.99", 1)


@pytest.mark.parametrize("damage, says", [
    # the case: the end marker gone, a hand-edited number in what was the block
    (lambda t: _hand_edited(t).replace(HEADLINE_END, ""), "block 'headline-table' has no end marker"),
    # a begin marker twice: the first block would swallow the second's begin
    (lambda t: t.replace(HEADLINE_END, HEADLINE_END.replace("end generated", "generated")[:-5]
                         + " (python -m perceptron_lab.cli.docs_pages); do not edit -->\n"), "begins before block"),
    # an end marker twice: the second one, left over, ends nothing
    (lambda t: _hand_edited(t).replace(HEADLINE_END, HEADLINE_END + "9.99 ± 9.99\n" + HEADLINE_END),
     "the end of block 'headline-table' without its beginning"),
    # the begin marker gone: the end marker stands alone
    (lambda t: re.sub(r"<!-- generated: headline-table [^\n]*\n", "", _hand_edited(t)),
     "the end of block 'headline-table' without its beginning"),
    # both markers gone: the table is hand-written text now, in a file that must hold the block
    (lambda t: re.sub(r"<!-- (end )?generated: headline-table[^\n]*\n", "", _hand_edited(t)),
     "the generated block 'headline-table' is missing"),
    # a marker that is not a whole line
    (lambda t: t.replace(HEADLINE_END, "see " + HEADLINE_END), "not one whole line"),
])
@pytest.mark.parametrize("check", [True, False], ids=["check", "generate"])
def test_block_markers_that_do_not_pair_up_are_refused(tmp_path, capsys, damage, says, check):
    root = mirror(tmp_path)
    _edit_readme(root, damage)
    line = refused(capsys, root, check, "README.md")
    assert says in line and "line " in line


def test_a_block_with_its_markers_is_filled_and_the_text_around_it_kept():
    text = ("intro\n" + docs_pages.begin_marker("exit-statuses") + "\nOLD TEXT\n" + docs_pages.end_marker("exit-statuses")
            + "\noutro\n")
    out = docs_pages.fill_blocks(text, ROOT)
    assert out.startswith("intro\n" + docs_pages.begin_marker("exit-statuses") + "\n| status | meaning |")
    assert out.endswith(docs_pages.end_marker("exit-statuses") + "\noutro\n") and "OLD TEXT" not in out


# ----------------------------------------------------------------------------- damaged results


def _cut(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def _cut_at_line_end(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[: len(lines) // 2]))


def _drop_column(path: Path, column: str = "metric") -> None:
    import csv
    import io

    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    i = rows[0].index(column)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([r[:i] + r[i + 1:] for r in rows])
    path.write_text(buf.getvalue(), encoding="utf-8")


@pytest.mark.parametrize("rel, damage", [
    # the case: the README then said 0 / 0 and 384 / 384 for Freund & Schapire's 700 / 700
    ("results/fs1999/d4/fs1999_table1_d4_comparison.csv", _cut),
    ("results/fs1999/d4/results.csv", _cut),
    ("results/fs1999/d4/results.csv", _cut_at_line_end),
    ("results/fs1999/d2/results.csv", _drop_column),
    ("results/fs1999/d4/fs1999_table1_d4.csv", _cut),
    ("results/reproduce.json", _cut),
], ids=["comparison-cut", "results-cut", "results-cut-at-line-end", "results-column-missing", "layout-cut",
        "reproduce-log-cut"])
def test_a_damaged_file_under_results_stops_the_generator(tmp_path, capsys, rel, damage):
    root = mirror(tmp_path, real=(rel,))
    damage(root / rel)
    line = refused(capsys, root, False, rel)
    assert "damaged" in line


def test_a_damaged_file_under_results_fails_the_check(tmp_path, capsys):
    rel = "results/fs1999/d4/fs1999_table1_d4_comparison.csv"
    root = mirror(tmp_path, real=(rel,))
    _cut(root / rel)
    refused(capsys, root, True, rel)


def test_the_mirror_is_current(tmp_path):
    """The copy the tests above damage passes the check as it is (so each refusal is the damage's)."""
    assert docs_pages.stale(mirror(tmp_path)) == []


def test_the_generator_rewrites_a_stale_generated_page_and_block(tmp_path, capsys):
    """A whole generated page (it begins with the generator's notice, not a title) and a README
    block edited by hand are written again, exit status 0."""
    root = mirror(tmp_path)
    want = snapshot(root)
    page = root / "docs" / "benchmarks.md"
    page.write_text(page.read_text(encoding="utf-8").replace("GFLOP/s", "GFLOP/h"), encoding="utf-8")
    _edit_readme(root, _hand_edited)
    assert docs_pages.main(["--root", str(root)]) == 0
    assert snapshot(root) == want
    assert not list(root.rglob(".*.tmp"))


# ----------------------------------------------------------------------------- what the blocks say


def test_the_dask_block_names_every_machine_and_day_of_its_rows(tmp_path):
    """The Dask measurement said the first row's CPU, cores, date and config for every row."""
    import pandas as pd

    d = tmp_path / "results" / "bench"
    d.mkdir(parents=True)
    t = pd.read_csv(ROOT / "results" / "bench" / "dask_scaling.csv", dtype=str, keep_default_na=False)
    t.loc[t.index[-1], ["cpu", "date"]] = ["Another CPU", "2031-01-02 03:04"]
    t.to_csv(d / "dask_scaling.csv", index=False, lineterminator="\n")
    text = docs_pages.dask_measurement(tmp_path)
    first = text.splitlines()[0]
    assert f"on {t['cpu'].iloc[0]} / Another CPU, " in first
    assert f"Measured {t['date'].iloc[0]} to 2031-01-02 03:04 UTC" in first


def test_a_cell_of_one_run_is_listed_without_a_spread():
    import pandas as pd
    from types import SimpleNamespace

    causes = pd.DataFrame([{"ours_mean": 12.5, "ours_std": 0.0, "n_runs": 1, "metric": "test_error_pct",
                            "block": "", "row": "vote", "column": "T=1", "paper": 10.0, "diff": 2.5,
                            "tolerance": 1.0, "cause": "unexplained", "cause_note": "n"}])
    line = docs_pages._outside_list(SimpleNamespace(causes=causes))
    assert "ours 12.50 (diff" in line and "±" not in line
