"""Every file plab reads back is validated: a damaged one is refused with one line and exit status 1,
or -- in ``plab report``, which reads many runs -- warned about and marked on its run, in Markdown
and HTML, and left out of the counts ("damaged: 1 run not counted"). No reader presents fewer cells
as if they were all there were, and none ends in a traceback.

The run folder is a copy of a committed Gentile (2001) Table 1 run (results/gentile2001/
usps_perceptron) whose tables ``plab tables`` rewrites first, so run.json records their row counts.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from perceptron_lab.cli.main import main
from perceptron_lab.errors import DamagedFileError
from perceptron_lab.run.store import read_back_csv, read_back_json

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "results" / "gentile2001" / "usps_perceptron"
COMP = "gentile2001_table1_comparison.csv"
LAYOUT = "gentile2001_table1.csv"


def plab(*args):
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert "Traceback" not in r.output
    return r


def notes(r, kind):
    return [ln for ln in r.output.splitlines() if ln.startswith(f"plab: {kind}:")]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    d = tmp_path_factory.mktemp("src") / "results" / "gentile2001" / "usps_perceptron"
    shutil.copytree(SOURCE, d)
    r = plab("tables", d)
    assert r.exit_code == 0, r.output
    info = json.loads((d / "run.json").read_text())
    assert info["csv_rows"][COMP] > 10
    # as a run now records it (test_a_run_records_the_rows_of_its_csv_files)
    info["csv_rows"]["results.csv"] = len((d / "results.csv").read_text().splitlines()) - 1
    (d / "run.json").write_text(json.dumps(info, indent=2) + "\n")
    return d


@pytest.fixture
def run(pristine, tmp_path):
    d = tmp_path / "results" / "gentile2001" / "usps_perceptron"
    shutil.copytree(pristine, d)
    (d / ".plab.lock").unlink(missing_ok=True)
    return d


def cut_mid_line(p):
    b = p.read_bytes()
    p.write_bytes(b[: len(b) // 2 - 3] if b[len(b) // 2 - 4: len(b) // 2 - 3] != b"\n" else b[: len(b) // 2])


def cut_at_line_end(p):
    lines = p.read_bytes().splitlines(keepends=True)
    p.write_bytes(b"".join(lines[: len(lines) // 2]))


def header_only(p):
    p.write_bytes(p.read_bytes().splitlines(keepends=True)[0])


def not_utf8(p):
    b = p.read_bytes()
    p.write_bytes(b[:40] + b"\xff\xfe\xe9" + b[43:])


def short_row(p):
    lines = p.read_text().splitlines(keepends=True)
    lines[3] = ",".join(lines[3].split(",")[:4]) + "\n"
    p.write_text("".join(lines))


def foreign_columns(p):
    p.write_text("a,b,c\n1,2,3\n")


DAMAGES = {"cut mid-line": (cut_mid_line, "cut short"),
           "cut at a line end": (cut_at_line_end, "rows where plab wrote"),
           "header only": (header_only, "0 rows where plab wrote 54"),
           "not UTF-8": (not_utf8, "not UTF-8"),
           "short row": (short_row, "line 4 has 4 fields, the header"),
           "another file's columns": (foreign_columns, "no column paper"),
           "empty": (lambda p: p.write_bytes(b""), "empty")}


# ----------------------------------------------------------------------------- plab report


def report(tmp_path, *dirs):
    r = plab("report", *dirs, "--out", tmp_path / "rep", "--allow-damaged")
    md = (tmp_path / "rep" / "report.md").read_text() if r.exit_code == 0 else ""
    html = (tmp_path / "rep" / "index.html").read_text() if r.exit_code == 0 else ""
    return r, md, html


def test_whole_run_is_counted_without_marks(run, tmp_path):
    r, md, html = report(tmp_path, run.parents[1])
    assert r.exit_code == 0 and notes(r, "warning") == [] and "DAMAGED" not in md and "damaged" not in html
    assert "`gentile2001_table1` (" in md


@pytest.mark.parametrize("damage", list(DAMAGES), ids=list(DAMAGES))
def test_a_damaged_run_stops_the_report_unless_allowed(run, tmp_path, damage):
    """By default the report does not leave a damaged run out of its counts silently: one error line
    naming the file, exit status 1, nothing written."""
    fn, why = DAMAGES[damage]
    fn(run / COMP)
    r = plab("report", run.parents[1], "--out", tmp_path / "strict")
    assert r.exit_code == 1, r.output
    (line,) = notes(r, "error")
    assert str(run / COMP) in line and why in line and "--allow-damaged" in line
    assert not (tmp_path / "strict").exists() or not any((tmp_path / "strict").iterdir())


@pytest.mark.parametrize("damage", list(DAMAGES), ids=list(DAMAGES))
def test_damaged_comparison_is_marked_in_the_report_and_not_counted(run, tmp_path, damage):
    fn, why = DAMAGES[damage]
    fn(run / COMP)
    r, md, html = report(tmp_path, run.parents[1])
    assert r.exit_code == 0, r.output
    (w,) = notes(r, "warning")
    assert str(run / COMP) in w and why in w and "marked damaged and not counted" in w
    # the run's table is not presented with fewer cells: it is out of the counts, and said so
    assert "`gentile2001_table1` (" not in md
    assert "DAMAGED: 1 run folder or log not counted" in md and "damaged: 1 run not counted" in md
    assert f"`{run}`: **DAMAGED, not counted**" in md
    assert "damaged: 1 run not counted" in html and "DAMAGED: 1 run folder" in html


@pytest.mark.parametrize("damage, why", [(header_only, "no cells"), (cut_mid_line, "cut short")])
def test_damage_is_found_in_runs_written_before_row_counts_were_recorded(run, tmp_path, damage, why):
    info = json.loads((run / "run.json").read_text())
    del info["csv_rows"]
    (run / "run.json").write_text(json.dumps(info))
    damage(run / COMP)
    r, md, _ = report(tmp_path, run.parents[1])
    (w,) = notes(r, "warning")
    assert why in w and "damaged: 1 run not counted" in md


@pytest.mark.parametrize("content, why", [(b"{not json", "not JSON"), (b"", "empty"),
                                          (b"[1, 2]\n", "a JSON list"), (b'{"a": "\xe9"}\n', "not UTF-8")],
                         ids=["corrupt", "empty", "list", "latin-1"])
def test_damaged_run_json_is_marked_not_dropped(run, tmp_path, content, why):
    (run / "run.json").write_bytes(content)
    r, md, _ = report(tmp_path, run.parents[1])
    assert r.exit_code == 0
    (w,) = notes(r, "warning")
    assert str(run / "run.json") in w and why in w
    assert f"`{run}`: **DAMAGED, not counted**" in md and "damaged: 1 run not counted" in md


def test_damaged_layout_is_marked(run, tmp_path):
    cut_at_line_end(run / LAYOUT)
    r, md, _ = report(tmp_path, run.parents[1])
    (w,) = notes(r, "warning")
    assert str(run / LAYOUT) in w and "rows where plab wrote" in w and "DAMAGED" in md


def test_only_the_damaged_run_is_left_out(run, pristine, tmp_path):
    other = run.parent / "usps_second"
    shutil.copytree(pristine, other)
    header_only(run / COMP)
    r, md, _ = report(tmp_path, run.parents[1])
    assert len(notes(r, "warning")) == 1
    assert f"`gentile2001_table1` ({other}" in md and f"`gentile2001_table1` ({run}" not in md


def test_damaged_reproduction_log_is_marked(run, tmp_path):
    results = run.parents[1]
    (results / "reproduce.json").write_text('{"configs": {"a": ')
    r, md, _ = report(tmp_path, results)
    assert r.exit_code == 0
    (w,) = notes(r, "warning")
    assert "reproduce.json is damaged (not JSON" in w and "its run times are not shown" in w
    assert "DAMAGED: 1 run folder or log not counted" in md


@pytest.mark.parametrize("content, says", [
    (b"causes:\n  - {cause: data-copy, note: \"\xe9\"}\n", "not UTF-8 text"),
    (b"causes: [\n", "not a readable YAML file"),
    (b"causes:\n  - {cause: sampling, note: x}\n", "'sampling' is computed"),
    (b"- a\n", "expected a mapping with a 'causes' list"),
])
def test_unusable_causes_file_stops_the_report_as_a_config_error(run, tmp_path, content, says):
    (run.parents[1] / "causes.yaml").write_bytes(content)
    r = plab("report", run.parents[1], "--out", tmp_path / "rep")
    assert r.exit_code == 2
    (e,) = notes(r, "error")
    assert "causes.yaml" in e and says in e


# ----------------------------------------------------------------------------- plab compare, plot, tables


@pytest.mark.parametrize("damage", ["cut mid-line", "cut at a line end", "header only", "not UTF-8"])
def test_compare_refuses_a_damaged_comparison_and_its_fix_works(run, damage):
    fn, why = DAMAGES[damage]
    fn(run / COMP)
    r = plab("compare", run)
    assert r.exit_code == 1 and "cells compared" not in r.output and " compared)" not in r.output
    (e,) = notes(r, "error")
    assert str(run / COMP) in e and why in e and f"plab tables {run}" in e
    (run / COMP).rename(run.parent / "moved.csv")   # the fix the message gives
    assert plab("tables", run).exit_code == 0
    r = plab("compare", run)
    assert r.exit_code == 0 and "12/12 in-scope cells within tolerance" in r.output and "(12 compared)" in r.output


@pytest.mark.parametrize("damage", ["cut mid-line", "cut at a line end", "not UTF-8", "short row"])
def test_compare_side_by_side_refuses_damaged_results(run, pristine, tmp_path, damage):
    DAMAGES[damage][0](run / "results.csv")
    r = plab("compare", run, pristine, "--figure", tmp_path / "cmp.png")
    assert r.exit_code == 1
    (e,) = notes(r, "error")
    assert str(run / "results.csv") in e and DAMAGES[damage][1] in e
    assert not (tmp_path / "cmp.png").exists()


@pytest.mark.parametrize("column, text", [("fold", "f"), ("value", "12,5"), ("epoch", "ten"), ("permutation", "x")])
def test_compare_and_plot_refuse_text_in_a_numeric_column(run, pristine, tmp_path, column, text):
    """A results.csv whose number cells hold text: before, its rows were dropped or merged into one
    fold and compare printed other means, exit 0; now one line naming the cell, nothing drawn."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO((run / "results.csv").read_text())))
    col = rows[0].index(column)
    rows[3][col] = text
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    (run / "results.csv").write_text(buf.getvalue())
    for args in (("compare", run, pristine, "--figure", tmp_path / "cmp.png"), ("plot", run, "--out", tmp_path / "f")):
        r = plab(*args)
        assert r.exit_code == 1, (args, r.output)
        (e,) = notes(r, "error")
        assert str(run / "results.csv") in e and f"{column} = {text!r} on line 4 is not a number" in e
    assert not (tmp_path / "cmp.png").exists() and not (tmp_path / "f").exists()


@pytest.mark.parametrize("what", ["results.csv", "run.json"])
def test_plot_and_tables_refuse_damaged_inputs(run, tmp_path, what):
    (cut_at_line_end if what == "results.csv" else lambda p: p.write_text("{"))(run / what)
    for args in (("plot", run, "--out", tmp_path / "figs"), ("tables", run)):
        r = plab(*args)
        assert r.exit_code == 1, (args, r.output)
        (e,) = notes(r, "error")
        assert str(run / what) in e and "damaged" in e


def test_damaged_grid_csv_is_refused_by_plot(run, tmp_path):
    (run / "grid.csv").write_text("grid_point,algorithm.tau\n0,0\n1")
    r = plab("plot", run, "--out", tmp_path / "figs")
    assert r.exit_code == 1 and "grid.csv is damaged (cut short" in notes(r, "error")[0]


# ----------------------------------------------------------------------------- the readers themselves


def test_search_and_nested_summaries_refuse_damaged_files(tmp_path):
    from perceptron_lab.run.summary import search_lines

    (tmp_path / "search.csv").write_text("search,rule,chosen,error_pct,sd_pct\ns,vote,tau=0,1.0,0.1\ns,la")
    with pytest.raises(DamagedFileError, match="search.csv is damaged"):
        search_lines(tmp_path)


def test_a_run_records_the_rows_of_its_csv_files(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: c\ndataset: {name: sonar}\ntraining: {epochs: 1}\n"
                   "evaluation: {mode: kfold, folds: 2, grid: {algorithm.tau: [0, 1]}}\n")
    r = plab("run", cfg, "--out", tmp_path / "o", "-q")
    assert r.exit_code == 0, r.output
    rows = json.loads((tmp_path / "o" / "run.json").read_text())["csv_rows"]
    for name in ("results.csv", "grid.csv"):
        assert rows[name] == len(pd.read_csv(tmp_path / "o" / name)) > 0


def test_readers_accept_what_plab_writes(pristine):
    info = read_back_json(pristine / "run.json", keys=("config_hash",))
    df = read_back_csv(pristine / COMP, ["paper"], rows=info["csv_rows"][COMP])
    assert len(df) == info["csv_rows"][COMP]
    assert pd.read_csv(pristine / COMP).shape == df.shape


def test_packaged_reference_tables_are_whole():
    from perceptron_lab.run.reference import reference_table, reference_tables

    for name in reference_tables():
        assert len(reference_table(name)) > 0


def test_damaged_reference_table_is_one_line_error(tmp_path, monkeypatch):
    from perceptron_lab.run import reference

    bad = tmp_path / "fs1999_table1.csv"
    bad.write_bytes(b"table,row,value\n1,Vote,2.\xff\n")
    monkeypatch.setattr(reference, "_files", lambda: {"fs1999_table1": bad})
    with pytest.raises(DamagedFileError, match="not UTF-8.*reinstall perceptron_lab"):
        reference.reference_table("fs1999_table1")


def test_damaged_budget_study_summary_is_marked(tmp_path):
    study = tmp_path / "results" / "budget"
    study.mkdir(parents=True)
    src = ROOT / "results" / "budget" / "summary.csv"
    (study / "summary.csv").write_bytes(src.read_bytes()[: len(src.read_bytes()) // 2])
    r, md, _ = report(tmp_path, tmp_path / "results")
    assert r.exit_code == 0
    (w,) = notes(r, "warning")
    assert "summary.csv is damaged" in w and "the budget study is not shown" in w
    assert "DAMAGED" in md and "Beyond the papers: kernel perceptrons on a memory budget" not in md


@pytest.mark.parametrize("what, damage", [("results.csv", cut_at_line_end), ("results.csv", not_utf8),
                                          ("run.json", lambda p: p.write_text("{"))],
                         ids=["results-cut", "results-latin1", "run-json"])
def test_the_fix_for_a_damaged_run_file_works(tmp_path, what, damage):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: c\ndataset: {name: sonar}\ntraining: {epochs: 1}\nevaluation: {mode: kfold, folds: 2}\n")
    out = tmp_path / "o"
    assert plab("run", cfg, "--out", out, "-q").exit_code == 0
    whole = (out / "results.csv").read_bytes()
    damage(out / what)
    r = plab("plot", out, "--out", tmp_path / "f")
    (e,) = notes(r, "error")
    assert r.exit_code == 1 and "move it away and run" in e and "plab run" in e
    (out / what).rename(tmp_path / "moved")
    r = plab("run", cfg, "--out", out, "-q")
    assert r.exit_code == 0 and "0 run(s) computed, 2 reused" in r.output
    assert (out / "results.csv").read_bytes() == whole
    assert plab("plot", out, "--out", tmp_path / "f").exit_code == 0


# ----------------------------------------------------------------------------- the papers' and the study's readers


def _results_folder(tmp_path, cut: str | None = None, run_json: str | None = None) -> Path:
    """A run folder with a small results.csv (and a run.json recording its row count)."""
    d = tmp_path / "run"
    d.mkdir(parents=True)
    text = ("rule,metric,value,class,epoch,grid_point,fold,permutation\n"
            + "".join(f"vote,test_error_pct,{i}.5,all,1,0,-1,{i}\n" for i in range(4)))
    if cut == "mid-line":
        text = text[:-5]
    elif cut == "line-end":
        text = "".join(text.splitlines(keepends=True)[:-2])
    (d / "results.csv").write_text(text)
    (d / "run.json").write_text(run_json if run_json is not None else
                                json.dumps({"name": "r", "config_hash": "x", "csv_rows": {"results.csv": 4},
                                            "dataset": {"n_train": 10}}))
    return d


@pytest.mark.parametrize("reader", ["fs1999", "gentile2001"])
@pytest.mark.parametrize("damage", ["mid-line", "line-end", "run.json"])
def test_the_papers_table_readers_refuse_a_damaged_run(tmp_path, reader, damage):
    # before: fs1999 and gentile2001 read results.csv with pandas alone (a file cut at a line's end
    # gave tables of fewer runs), and fs1999 ignored a run.json that did not parse
    from perceptron_lab.papers.fs1999.tables import _read_results as fs_read
    from perceptron_lab.papers.gentile2001.tables import _read_results as g_read

    read = fs_read if reader == "fs1999" else g_read
    whole = _results_folder(tmp_path / "whole")
    assert len(fs_read(whole / "results.csv")[0] if reader == "fs1999" else read(whole / "results.csv")) == 4
    d = _results_folder(tmp_path, cut=None if damage == "run.json" else damage,
                        run_json='{"name": "r", "config' if damage == "run.json" else None)
    with pytest.raises(DamagedFileError, match="is damaged"):
        read(d / "results.csv")


def test_the_budget_studys_run_reader_refuses_damaged_timings(tmp_path):
    from perceptron_lab.studies.budget import _run_rows

    d = _results_folder(tmp_path)
    (d / "timings.json").write_text('{"unit": ')
    with pytest.raises(DamagedFileError, match="timings.json is damaged"):
        _run_rows(d, "panel", lambda *a: "m")
