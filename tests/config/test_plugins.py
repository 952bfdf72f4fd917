"""Papers are plug-ins over the core: each registers by name, a config names the table it
reproduces (``paper: <paper>/<table>``), and only such runs are written in a paper's layout."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from perceptron_lab.config import plugins
from perceptron_lab.cli.main import main
from perceptron_lab.config.load import config_from_dict, load_config
from perceptron_lab.errors import ConfigError
from perceptron_lab.run.reference import reference_table, reference_tables


def test_the_shipped_papers_register_with_their_reference_tables():
    assert plugins.names() == ("fs1999", "gentile2001", "kw2007")
    for p in plugins.papers():
        assert p.name and p.title and p.short and p.tables
        assert p.scoring_rule().strip()
        own = [t for t in reference_tables() if t.startswith(p.name + "_")]
        assert own, p.name
        for t in p.tables:
            # every table a config may name has the paper's numbers
            assert f"{p.name}_{t}" in own, (p.name, t)
    # the GHW bound of Freund & Schapire's Table 2 ships with that paper
    assert len(reference_table("ghw2000_table1")) > 0


@pytest.mark.parametrize("ref, says", [
    ("kw2007/table9", "kw2007/table5"),
    ("kw2008/table5", "did you mean 'kw2007/table5'"),
    ("fs1999", "one of"),
    (7, "(int)"),
])
def test_an_unknown_paper_table_is_a_one_line_config_error(ref, says):
    with pytest.raises(ConfigError) as e:
        config_from_dict({"paper": ref, "dataset": {"name": "sonar"}})
    msg = str(e.value)
    assert "paper must be a paper's table" in msg and says in msg, msg
    assert "\n" not in msg


def test_paper_is_never_inherited_through_extends(tmp_path):
    (tmp_path / "base.yaml").write_text("paper: kw2007/table3\ndataset: {name: sonar}\n")
    (tmp_path / "mine.yaml").write_text("extends: base.yaml\ntraining: {epochs: 2}\n")
    assert load_config(tmp_path / "base.yaml").paper == "kw2007/table3"
    assert load_config(tmp_path / "mine.yaml").paper is None


def test_the_paper_key_does_not_change_the_results_hash():
    from perceptron_lab.run.plan import results_hash

    a = config_from_dict({"dataset": {"name": "sonar"}})
    b = config_from_dict({"paper": "kw2007/table3", "dataset": {"name": "sonar"}})
    assert results_hash(a) == results_hash(b)
    assert b.to_dict()["paper"] == "kw2007/table3" and "paper" not in a.to_dict()


RUN = """
name: own
{paper}
dataset: {{name: mnist, train_size: 300, test_size: 200}}
kernel: {{type: poly, degree: 2}}
training: {{epochs: 1, checkpoints: [0.1, 1]}}
output: {{figures: false}}
"""


@pytest.mark.parametrize("paper", ["", "paper: fs1999/table1"])
def test_only_a_run_that_names_a_paper_table_is_scored_against_it(tmp_path, paper):
    """A user's own MNIST run with a polynomial kernel is not Freund & Schapire's Table 1 unless its
    config says so."""
    import os

    cfg = tmp_path / "own.yaml"
    cfg.write_text(RUN.format(paper=paper))
    data = os.environ.get("PLAB_DATA")
    if not data:
        pytest.skip("needs MNIST (PLAB_DATA)")
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q", "--data-dir", data],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    tables = sorted(p.name for p in (tmp_path / "out").glob("fs1999_*"))
    if paper:
        assert "fs1999_table1_d2_comparison.csv" in tables
    else:
        assert tables == []


def test_each_shipped_paper_says_why_its_tolerances_are_what_they_are():
    """The paper pages' "Why each tolerance is what it is": the printed precision read from the
    reference tables, and Khardon & Wachman's Table 6 intervals (their range over the reference)."""
    import csv

    from perceptron_lab.config import plugins

    for name, decimals in (("fs1999", 1), ("gentile2001", 2), ("kw2007", 1)):
        p = plugins.get(name)
        lines = p.tolerance_basis()
        assert lines and all(isinstance(x, str) and x for x in lines)
        assert f"printed with {decimals} decimal" in " ".join(lines) or f"prints it with {decimals} decimal" in " ".join(lines)
    with open(plugins.get("kw2007").reference_dir / "kw2007_table6.csv", newline="", encoding="utf-8") as fh:
        cis = sorted(float(r["ci"]) for r in csv.DictReader(fh) if r["ci"])
    assert f"{cis[0]:g} to {cis[-1]:g} points" in plugins.get("kw2007").tolerance_basis()[1]
