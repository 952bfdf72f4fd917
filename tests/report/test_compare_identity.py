"""plab compare --paired pairs two runs only when their folds hold the same test examples, proved
by what run.json records: the fingerprint of the data read (its content, never its file name,
path or dataset name) and the settings that assign examples to folds, the grid point's own values
included. --rules pairs two rules of one run's units, which share their data by construction."""

import json
import shutil

import pytest
from click.testing import CliRunner

from perceptron_lab.cli.main import main

OWN = """name: {name}
dataset: {{path: {file}, label: y}}
algorithm: {{eta: 0.1, tau: {tau}}}
training: {{epochs: 1, permutations: 1, seed: 0}}
prediction: {{rules: [vote, last]}}
evaluation: {{mode: kfold, folds: 3}}
output: {{figures: false}}
"""

SONAR = """name: {name}
dataset: {{name: sonar}}
algorithm: {{eta: 0.1, tau: {tau}}}
training: {{epochs: 1, permutations: 1, seed: 0}}
prediction: {{rules: [vote, last]}}
evaluation: {{mode: kfold, folds: 3}}
output: {{figures: false}}
"""


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def rows(shift: int) -> str:
    """A small two-class CSV; ``shift`` changes the feature values (not the shape or the labels)."""
    return "a,b,y\n" + "".join(f"{(i * 7 + shift) % 11},{(i * 3) % 5 - 2},{i % 2}\n" for i in range(36))


def run(folder, name, file, text, tau=0):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / file).write_text(text)
    cfg = folder / f"{name}.yaml"
    cfg.write_text(OWN.format(name=name, file=file, tau=tau))
    r = invoke("run", cfg, "--out", folder / "out", "-q")
    assert r.exit_code == 0, r.output
    return folder / "out"


def one_error_line(output: str) -> str:
    lines = output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("plab: error: "), output
    return lines[0]


def test_runs_on_different_files_of_the_same_name_are_not_paired(tmp_path):
    a = run(tmp_path / "x", "same", "data.csv", rows(0))
    b = run(tmp_path / "y", "same", "data.csv", rows(5), tau=0.5)
    fa = json.loads((a / "run.json").read_text())["dataset"]["fingerprint"]
    fb = json.loads((b / "run.json").read_text())["dataset"]["fingerprint"]
    assert fa != fb
    r = invoke("compare", a, b, "--paired")
    assert r.exit_code == 2
    line = one_error_line(r.output)
    assert f"{a} and {b} are not comparable" in line
    assert f"they read different data (data fingerprint {fa} vs {fb})" in line
    assert line.endswith("a paired difference needs the same test sets: rerun one of them with the other's data "
                         "and evaluation settings (plab run CONFIG --out DIR), or compare rules within each run "
                         "with --rules")   # what to do
    r = invoke("compare", a, b, "--paired", "--csv")
    assert r.exit_code == 2 and "data fingerprint" in r.output


def test_the_same_data_under_another_file_name_is_paired(tmp_path):
    """Identity by content: the same rows in files of other names (so other dataset names) pair."""
    a = run(tmp_path / "x", "first", "one.csv", rows(0))
    b = run(tmp_path / "y", "second", "two.csv", rows(0), tau=0.5)
    r = invoke("compare", a, b, "--paired", "--csv")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0] == "rule,A,B,A - B,se,ci_low,ci_high,n,method,verdict"


@pytest.fixture(scope="module")
def sonar_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sonar")
    cfg = tmp / "s.yaml"
    cfg.write_text(SONAR.format(name="s", tau=0))
    assert invoke("run", cfg, "--out", tmp / "s", "-q").exit_code == 0
    return tmp, cfg


def test_a_run_json_without_a_data_fingerprint_is_refused(sonar_run, tmp_path):
    tmp, _ = sonar_run
    old = tmp_path / "old"
    shutil.copytree(tmp / "s", old)
    info = json.loads((old / "run.json").read_text())
    del info["dataset"]["fingerprint"]
    (old / "run.json").write_text(json.dumps(info, indent=2) + "\n")
    r = invoke("compare", tmp / "s", old, "--paired")
    assert r.exit_code == 2
    line = one_error_line(r.output)
    assert f"{old / 'run.json'} records no data fingerprint" in line and "rerun it" in line


def one_point_grid(cfg, tmp_path, setting):
    g = tmp_path / "g.yaml"
    g.write_text(cfg.read_text().replace("mode: kfold,", f"mode: kfold, grid: {{{setting}}},"))
    r = invoke("run", g, "--out", tmp_path / "g", "-q")
    assert r.exit_code == 0, r.output
    return tmp_path / "g"


def test_a_grid_point_that_sets_the_data_is_not_paired_with_another_run(sonar_run, tmp_path):
    """run.json's fingerprint is that of the config's data; a grid point over dataset.train_size
    read other data, with other folds, which no record of the run proves."""
    tmp, cfg = sonar_run
    g = one_point_grid(cfg, tmp_path, "dataset.train_size: [120]")
    r = invoke("compare", tmp / "s", g, "--paired")
    assert r.exit_code == 2
    line = one_error_line(r.output)
    assert "not comparable" in line and "grid point that sets dataset.train_size (120)" in line


def test_a_grid_point_with_other_folds_is_not_paired_with_another_run(sonar_run, tmp_path):
    """The grid point's evaluation.fold_seed, not the config's, assigns its folds."""
    tmp, cfg = sonar_run
    g = one_point_grid(cfg, tmp_path, "evaluation.fold_seed: [1]")
    r = invoke("compare", tmp / "s", g, "--paired")
    assert r.exit_code == 2
    line = one_error_line(r.output)
    assert "evaluation.fold_seed (0 vs 1)" in line


def test_a_grid_point_over_preprocessing_reads_the_same_examples(sonar_run, tmp_path):
    tmp, cfg = sonar_run
    g = one_point_grid(cfg, tmp_path, "dataset.preprocess: [standardize]")
    r = invoke("compare", tmp / "s", g, "--paired", "--csv")
    assert r.exit_code == 0, r.output


def test_rules_pair_within_a_run_whatever_its_data(tmp_path):
    a = run(tmp_path / "x", "same", "data.csv", rows(0))
    r = invoke("compare", a, "--rules", "vote,last", "--csv")
    assert r.exit_code == 0, r.output
