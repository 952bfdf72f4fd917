"""A user's files are never deleted or overwritten. plab replaces or removes a file only when it can
prove it wrote it, by its name and its header (:func:`perceptron_lab.run.store.plab_wrote`); any other
file standing where plab must write stops the command with one line and exit status 1, before
anything is replaced, and the same command resumes once the file is moved away."""

from __future__ import annotations

import io
import json
import os

import pytest
from click.testing import CliRunner

from perceptron_lab.cli.main import main
from perceptron_lab.errors import UserFileError
from perceptron_lab.run.store import atomic_write_text, check_replaceable, plab_wrote

CONFIG = """
name: mine
dataset: {name: sonar}
kernel: {type: poly, degree: 2}
training: {epochs: 1}
evaluation:
  mode: kfold
  folds: 3
  grid: {algorithm.tau: [0, 1]}
"""
MOVE = "move it away (or choose another output folder with --out) and run the same command again"


def plab(*args):
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert "Traceback" not in r.output
    return r


def errors(r):
    return [ln for ln in r.output.splitlines() if ln.startswith("plab: error:")]


@pytest.fixture
def cfg(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text(CONFIG)
    return p


def run(cfg, out, *extra):
    return plab("run", cfg, "--out", out, "-q", *extra)


def user_png(text="mine"):
    """A PNG of the user's own, drawn with matplotlib."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1, 1))
    FigureCanvasAgg(fig)
    fig.text(0.5, 0.5, text)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


# ----------------------------------------------------------------------------- parts/


def test_force_keeps_a_users_csv_in_parts(cfg, tmp_path):
    out = tmp_path / "o"
    assert run(cfg, out).exit_code == 0
    notes = out / "parts" / "notes.csv"
    notes.write_text("my,own\n1,2\n")
    r = run(cfg, out, "--force")
    assert r.exit_code == 0 and errors(r) == []
    assert notes.read_text() == "my,own\n1,2\n"
    assert "6 run(s) computed, 0 reused" in r.output


@pytest.mark.parametrize("content", [b"grid_point,my,own\n0,1,2\n", b"", b"\xff\xfe binary", b"# plab-parts are mine\n"],
                         ids=["csv", "empty", "binary", "near-header"])
@pytest.mark.parametrize("force", [False, True], ids=["resume", "force"])
def test_file_without_part_header_at_a_part_path_stops_the_run(cfg, tmp_path, content, force):
    out = tmp_path / "o"
    assert run(cfg, out).exit_code == 0
    (out / "results.csv").unlink()
    part = out / "parts" / "g001.csv"
    part.write_bytes(content)
    r = run(cfg, out, *(["--force"] if force else []))
    assert r.exit_code == 1
    (e,) = errors(r)
    assert str(part) in e and "no plab part header" in e and "move it away" in e
    assert part.read_bytes() == content
    part.rename(tmp_path / "moved")   # the fix the message gives
    r = run(cfg, out)
    assert r.exit_code == 0 and errors(r) == []


# ----------------------------------------------------------------------------- the run folder's outputs


@pytest.mark.parametrize("name, content", [
    ("results.csv", "sample,weight\n1,2\n"),
    ("grid.csv", "point,value\n0,1\n"),
    ("results.csv", ""),
])
def test_users_output_file_is_not_overwritten_and_the_run_resumes(cfg, tmp_path, name, content):
    out = tmp_path / "o"
    assert run(cfg, out).exit_code == 0
    (out / name).write_text(content)
    r = run(cfg, out)
    assert r.exit_code == 1
    (e,) = errors(r)
    assert e == f"plab: error: {out / name} was not written by plab (its name or its first line is not plab's), " \
                f"and plab never overwrites a file it did not write: {MOVE}"
    assert (out / name).read_text() == content
    (out / name).rename(tmp_path / "moved")
    r = run(cfg, out)
    assert r.exit_code == 0 and "0 run(s) computed, 6 reused" in r.output


@pytest.mark.parametrize("name, content", [("run.json", '{"my": "notes"}\n'), ("timings.json", '{"a": 1}\n'),
                                           ("run.json", "[]\n")])
def test_users_json_in_the_folder_stops_the_run_before_any_work(cfg, tmp_path, name, content):
    out = tmp_path / "o"
    out.mkdir()
    (out / name).write_text(content)
    r = run(cfg, out, "--force")
    assert r.exit_code == 1 and str(out / name) in errors(r)[0]
    assert (out / name).read_text() == content
    assert not (out / "parts").exists() or not any((out / "parts").iterdir())


def test_symlink_in_place_of_results_is_not_replaced(cfg, tmp_path):
    out = tmp_path / "o"
    assert run(cfg, out).exit_code == 0
    target = tmp_path / "elsewhere.csv"
    target.write_text((out / "results.csv").read_text())
    (out / "results.csv").unlink()
    (out / "results.csv").symlink_to(target)
    r = run(cfg, out)
    assert r.exit_code == 1 and (out / "results.csv").is_symlink()


def test_plabs_own_files_are_replaced_on_force(cfg, tmp_path):
    out = tmp_path / "o"
    assert run(cfg, out).exit_code == 0
    first = (out / "results.csv").read_bytes()
    r = run(cfg, out, "--force")
    assert r.exit_code == 0 and "6 run(s) computed" in r.output and (out / "results.csv").read_bytes() == first


# ----------------------------------------------------------------------------- figures, report, tables


def test_compare_does_not_overwrite_a_users_compare_png(cfg, tmp_path, monkeypatch):
    out = tmp_path / "o"
    assert run(cfg, out).exit_code == 0
    monkeypatch.chdir(tmp_path)
    mine = user_png()
    (tmp_path / "compare.png").write_bytes(mine)
    r = plab("compare", out, out)
    assert r.exit_code == 1 and "compare.png was not written by plab" in errors(r)[0]
    assert "--figure" in errors(r)[0]
    assert (tmp_path / "compare.png").read_bytes() == mine
    assert plab("compare", out, out, "--figure", tmp_path / "other.png").exit_code == 0   # the fix it names
    assert (tmp_path / "compare.png").read_bytes() == mine
    (tmp_path / "compare.png").unlink()
    assert plab("compare", out, out).exit_code == 0
    assert plab("compare", out, out).exit_code == 0   # its own figure is replaced


@pytest.mark.parametrize("content", [b"my notes\n", "user"], ids=["text", "users-matplotlib-png"])
def test_plot_does_not_overwrite_a_users_figure(cfg, tmp_path, content):
    out = tmp_path / "o"
    assert run(cfg, out).exit_code == 0
    figs = tmp_path / "figs"
    figs.mkdir()
    data = content if isinstance(content, bytes) else user_png()
    (figs / "folds.png").write_bytes(data)
    if not isinstance(content, bytes):
        # a matplotlib PNG under a figure name of plab's counts as one plab drew before it marked its
        # figures; under a name plab does not use for figures it is the user's
        assert plab_wrote(figs / "folds.png")
        (figs / "folds.png").unlink()
        (figs / "compare.png").write_bytes(data)
        assert not plab_wrote(figs / "compare.png")
        return
    r = plab("plot", out, "--out", figs)
    assert r.exit_code == 1 and "folds.png was not written by plab" in errors(r)[0]
    assert (figs / "folds.png").read_bytes() == data


def test_plot_replaces_its_own_figures(cfg, tmp_path):
    out = tmp_path / "o"
    assert run(cfg, out).exit_code == 0
    assert plab("plot", out, "--out", tmp_path / "f").exit_code == 0
    assert plab("plot", out, "--out", tmp_path / "f").exit_code == 0


@pytest.mark.parametrize("name", ["report.md", "index.html"])
def test_report_does_not_overwrite_a_users_page(tmp_path, name):
    rep = tmp_path / "rep"
    assert plab("report", tmp_path, "--out", rep).exit_code == 0
    assert plab("report", tmp_path, "--out", rep).exit_code == 0   # its own pages
    (rep / name).write_text("<html><title>my page</title></html>\n" if name.endswith("html") else "# My notes\n")
    r = plab("report", tmp_path, "--out", rep)
    assert r.exit_code == 1 and f"{name} was not written by plab" in errors(r)[0]


def test_tables_does_not_overwrite_a_users_table(tmp_path):
    import shutil
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "results" / "gentile2001" / "usps_perceptron"
    d = tmp_path / "usps"
    shutil.copytree(src, d)
    assert plab("tables", d).exit_code == 0
    assert plab("tables", d).exit_code == 0   # its own tables
    (d / "gentile2001_table1.md").write_text("# My own summary\n")
    r = plab("tables", d)
    assert r.exit_code == 1 and "gentile2001_table1.md was not written by plab" in errors(r)[0]
    assert (d / "gentile2001_table1.md").read_text() == "# My own summary\n"


def test_tables_refused_for_one_folder_rewrites_none(tmp_path):
    """A refused call changes nothing: a folder that is no finished run, given after a good one,
    stops plab tables before the good one's tables are rewritten."""
    import shutil
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "results" / "gentile2001" / "usps_perceptron"
    good, bad = tmp_path / "usps", tmp_path / "half"
    shutil.copytree(src, good)
    bad.mkdir()
    (bad / "run.json").write_text("{}")
    before = {p.name: p.stat().st_mtime_ns for p in good.iterdir()}
    (good / "gentile2001_table1.csv").unlink()
    r = plab("tables", good, bad)
    assert r.exit_code == 2 and "not a finished run folder" in errors(r)[0]
    assert not (good / "gentile2001_table1.csv").exists()
    assert {p.name: p.stat().st_mtime_ns for p in good.iterdir()} == {
        k: v for k, v in before.items() if k != "gentile2001_table1.csv"}


# ----------------------------------------------------------------------------- the rule itself


def test_reproduction_log_of_someone_else_is_not_replaced(tmp_path):
    log = tmp_path / "reproduce.json"
    log.write_text('{"my": "log"}\n')
    with pytest.raises(UserFileError):
        atomic_write_text(log, json.dumps({"set": "core", "configs": {}}))
    log.write_text(json.dumps({"set": "core", "configs": {}}))   # plab's log: it has configs
    atomic_write_text(log, json.dumps({"set": "full", "configs": {}}))
    assert json.loads(log.read_text())["set"] == "full"


def test_no_temporary_file_is_left_when_a_write_is_refused(tmp_path):
    p = tmp_path / "results.csv"
    p.write_text("mine\n")
    with pytest.raises(UserFileError):
        atomic_write_text(p, "dataset,kernel\n")
    assert sorted(os.listdir(tmp_path)) == ["results.csv"]


def test_missing_file_is_always_writable(tmp_path):
    check_replaceable(tmp_path / "anything.csv", b"x\n")


def test_a_users_file_named_like_the_lock_is_kept(cfg, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / ".plab.lock").write_text("my notes\n")
    r = run(cfg, out)
    assert r.exit_code == 1 and ".plab.lock was not written by plab" in errors(r)[0]
    assert (out / ".plab.lock").read_text() == "my notes\n"


def test_every_committed_figure_plab_redraws_carries_plabs_mark():
    # make reproduce redraws these in place; one without plab's mark would stop it (exit 1)
    from pathlib import Path

    results = Path(__file__).resolve().parents[2] / "results"
    redrawn = [p for p in results.rglob("*.png") if not p.is_relative_to(results / "docs")
               and not p.is_relative_to(results / "figures_gallery") and not p.is_relative_to(results / "bench")
               and p.name != "landing.png"]
    assert redrawn and [p for p in redrawn if not plab_wrote(p)] == []


@pytest.mark.parametrize("name, old, new", [
    ("grid.csv", "grid_point,algorithm.tau,algorithm.lambda\n0,0,0\n",
     "grid_point,training.seed,algorithm.tau,algorithm.lambda\n0,1,0,0\n"),
    ("nested.csv", "search,rule,normalized,epoch,accuracy_pct,sd_pct,ci_pct,n_folds,choices\n",
     "training.seed,search,rule,normalized,epoch,accuracy_pct,sd_pct,ci_pct,n_folds,choices\n"),
])
def test_plabs_tables_of_an_earlier_grid_are_replaceable(tmp_path, name, old, new):
    (tmp_path / name).write_text(old)
    assert plab_wrote(tmp_path / name, new.encode())
    check_replaceable(tmp_path / name, new.encode())
    # a CSV of someone else's under the same name still is not
    (tmp_path / name).write_text("id,value\n1,2\n")
    assert not plab_wrote(tmp_path / name, new.encode())


def test_only_tables_led_by_the_grids_settings_are_recognized_by_their_last_columns(tmp_path):
    # results.csv's first columns never depend on the grid: a long-format CSV of someone else's
    # that ends as plab's does is still theirs
    new = b"dataset,kernel,degree,algorithm,params,grid_point,fold,permutation,epoch,rule,metric,value\n"
    (tmp_path / "results.csv").write_text("sample,metric,value\n1,a,2\n")
    assert not plab_wrote(tmp_path / "results.csv", new)
