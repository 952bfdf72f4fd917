"""plab report / plab compare on a small, hand-made run folder (tests the report code only)."""

import json

import pandas as pd
from click.testing import CliRunner

from perceptron_lab.cli import main
from perceptron_lab.report import collect, write_report

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")


def make_run(tmp_path):
    d = tmp_path / "results" / "fs1999" / "d9"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"name": "x", "units": 2, "wall_seconds": 3.5,
                                            "versions": {"numpy": "1"}, "git_revision": "abc"}))
    comp = pd.DataFrame({
        "table": 1, "block": "d=9", "row": ["Vote", "Vote", "Last", "SupVec"], "T": [0.1, 1, 1, 1],
        "paper": [5.0, 2.0, 3.0, None], "ours_mean": [5.1, 2.1, 3.9, 100.0], "ours_std": 0.1,
        "n_runs": 2, "diff": [0.1, 0.1, 0.9, None], "tolerance": [0.5, 0.3, 0.3, None],
        "within": [True, True, False, None], "in_scope": [False, True, True, True]})
    comp.to_csv(d / "fs1999_table1_d9_comparison.csv", index=False)
    pd.DataFrame({"block": ["d=9"], "row": ["Vote"], "1": ["2.10 ± 0.10 (2.0)"]}).to_csv(
        d / "fs1999_table1_d9.csv", index=False)
    (d / "fs1999_figure2.png").write_bytes(PNG)
    return d


def test_counts_only_in_scope_cells_with_both_values(tmp_path):
    d = make_run(tmp_path)
    (t,) = collect([tmp_path / "results"]).tables
    assert t.counts == (1, 2, 3)  # in scope and compared: Vote@1 (within), Last@1 (outside)
    md, page = write_report([tmp_path / "results"], tmp_path / "report")
    text = md.read_text()
    assert "**1/2** in-scope cells within tolerance" in text
    assert "Overall: 1/2" in text
    assert "In-scope cells outside tolerance" in text and "| fs1999_table1_d9 | d=9 | Last |" in text
    assert "2.10 ± 0.10 (2.0)" in text
    assert "../results/fs1999/d9/fs1999_figure2.png" in text
    h = page.read_text()
    assert "data:image/png;base64," in h and "2.10 ± 0.10 (2.0)" in h


def test_cli_report_and_compare(tmp_path):
    d = make_run(tmp_path)
    r = CliRunner().invoke(main, ["report", str(tmp_path / "results"), "--out", str(tmp_path / "rep")])
    assert r.exit_code == 0 and (tmp_path / "rep" / "report.html").exists()
    r = CliRunner().invoke(main, ["compare", str(d)])
    assert r.exit_code == 0 and "1/2 in-scope cells within tolerance" in r.output and "Last" in r.output
