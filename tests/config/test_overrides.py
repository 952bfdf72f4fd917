"""`plab run CONFIG key=value ...`, sweeps with -m, the folders of overridden runs, and the configs
shipped in the package (`plab run NAME`, `plab configs`)."""

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from clitools import one_error, plab
from perceptron_lab.cli.main import main
from perceptron_lab.config.overrides import Override, override_dirname, packaged_configs

REPO = Path(__file__).resolve().parents[2]
SMALL = """name: small
dataset: {name: sonar}
algorithm: {eta: 0.1, theta_init: avg_sq_norm, C: theta_init}
training: {epochs: 2, checkpoints: [1]}
prediction: {rules: [last, vote, avg]}
evaluation: {mode: kfold, folds: 3}
"""



@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "small.yaml").write_text(SMALL)
    return tmp_path


def results(folder, drop=()):
    return pd.read_csv(Path(folder) / "results.csv", dtype=str, keep_default_na=False).drop(columns=list(drop))


# ----------------------------------------------------------------------------- overrides


def test_an_override_runs_what_the_edited_config_runs_in_its_own_folder(here):
    status, out, errors = plab("run", "small.yaml", "training.epochs=3", "algorithm.tau=0.125", "-q")
    assert status == 0, errors
    folder = here / "runs" / "small" / "algorithm.tau-0.125_training.epochs-3"
    assert f"results in {Path('runs/small/algorithm.tau-0.125_training.epochs-3/results.csv')}" in out
    info = json.loads((folder / "run.json").read_text())
    assert info["overrides"] == ["training.epochs=3", "algorithm.tau=0.125"]
    assert info["config"]["training"]["epochs"] == 3 and info["config"]["algorithm"]["tau"] == 0.125
    assert info["config"]["training"]["checkpoints"] == [1, 3]
    # the same keys edited in the file give byte-identical results
    (here / "edited.yaml").write_text(SMALL.replace("epochs: 2", "epochs: 3").replace("eta: 0.1,", "eta: 0.1, tau: 0.125,"))
    assert plab("run", "edited.yaml", "--out", here / "edited", "-q")[0] == 0
    assert (folder / "results.csv").read_text() == (here / "edited" / "results.csv").read_text()
    # the base run has its own folder; the overridden one is untouched by it
    before = (folder / "results.csv").read_text()
    assert plab("run", "small.yaml", "-q")[0] == 0
    assert (here / "runs" / "small" / "results.csv").exists()
    assert json.loads((here / "runs" / "small" / "run.json").read_text()).get("overrides") is None
    assert (folder / "results.csv").read_text() == before
    # the order of the overrides does not matter: the same folder, resumed
    status, out, _ = plab("run", "small.yaml", "algorithm.tau=0.125", "training.epochs=3", "-q")
    assert status == 0 and "0 run(s) computed, 3 reused" in out


def test_values_are_yaml(here):
    status, _, errors = plab("run", "small.yaml", "training.checkpoints=[0.5, 1]", "algorithm.alpha_bound=null",
                             "--out", here / "o", "-q")
    assert status == 0, errors
    cfg = json.loads((here / "o" / "run.json").read_text())["config"]
    assert cfg["training"]["checkpoints"] == [0.5, 1, 2]
    assert sorted(results(here / "o")["epoch"].unique(), key=float) == ["0.5", "1", "2"]


@pytest.mark.parametrize("args, expected", [
    (["training.epoch=3"], "small.yaml (override): unknown key training.epoch (did you mean 'epochs'?)"),
    (["trainig.epochs=3"], "small.yaml (override): unknown key trainig (did you mean 'training'?)"),
    (["training.epochs=-1"], "small.yaml (override): training.epochs must be a positive number, got -1"),
    (["kernel.type=poly", "kernel.degree=2,3"],
     "kernel.degree must be an integer >= 1, got '2,3' (str) (to sweep kernel.degree over several values, add -m)"),
    (["training.epochs"], "Got unexpected extra argument (training.epochs); after CONFIG come key=value overrides"),
    (["=3"], "override '=3': write overrides as key=value, e.g. training.epochs=3"),
    (["training.epochs=1", "training.epochs=2"], "override 'training.epochs=2': training.epochs is given twice"),
    (["training.epochs=[1"], "override 'training.epochs=[1': the value is not valid YAML"),
    (["-m", "training.checkpoints=[1],[2]"], "-m training.checkpoints=[1],[2]: training.checkpoints cannot be "
                                             "swept (it is not a grid parameter"),
    (["-m", "kernel.degre=2,3"], "-m kernel.degre: unknown key (did you mean 'kernel.degree'?)"),
    (["-m", "kernel.type=poly", "kernel.degree=2,x"], "small.yaml (override): evaluation.grid.kernel.degree[1] "
                                                      "must be an integer >= 1, got 'x' (str)"),
])
def test_bad_overrides_are_one_line_exit_2(here, args, expected):
    line = one_error(2, "run", "small.yaml", *args, "--out", here / "never", "-q")
    assert expected in line, line
    assert not (here / "never").exists()


def test_override_of_the_quickstart_and_of_own_data_paths_relative_to_the_current_folder(here):
    status, out, errors = plab("run", "training.epochs=1", "evaluation.folds=2", "-q")
    assert status == 0, errors
    assert (here / "runs" / "quickstart" / "evaluation.folds-2_training.epochs-1" / "results.csv").exists()
    (here / "data").mkdir()
    (here / "data" / "d.csv").write_text("a,b,y\n" + "".join(f"{i},{(i * 7) % 5},{i % 2}\n" for i in range(20)))
    (here / "cfgs").mkdir()
    (here / "cfgs" / "small.yaml").write_text(SMALL)
    status, _, errors = plab("run", "cfgs/small.yaml", "dataset.path=data/d.csv", "dataset.label=y",
                             "--out", here / "own", "-q")
    assert status == 0, errors
    ds = json.loads((here / "own" / "run.json").read_text())["config"]["dataset"]
    assert ds["path"] == str(here / "data" / "d.csv") and "name" not in ds  # the path replaced the name


def test_folder_names_are_sorted_safe_and_distinct():
    o = lambda k, t: Override(k, t, (t,))  # noqa: E731
    assert override_dirname([o("training.epochs", "3"), o("kernel.degree", "2")]) == "kernel.degree-2_training.epochs-3"
    assert override_dirname([o("name", "x"), o("output.dir", "y")]) is None
    a = override_dirname([o("dataset.path", "/data/a b.csv")])
    b = override_dirname([o("dataset.path", "/data/a_b.csv")])
    assert "/" not in a and " " not in a and a != b
    long = override_dirname([o("dataset.params.f", "x" * 500)])
    assert len(long) < 140


# ----------------------------------------------------------------------------- sweeps


def test_a_sweep_is_one_grid_whose_points_equal_single_runs(here):
    status, out, errors = plab("run", "small.yaml", "-m", "kernel.type=poly", "kernel.degree=2,3",
                               "training.epochs=1,2", "-q")
    assert status == 0, errors
    folder = here / "runs" / "small" / "kernel.degree-2+3_kernel.type-poly_training.epochs-1+2"
    grid = pd.read_csv(folder / "grid.csv")
    assert grid[["kernel.degree", "training.epochs"]].values.tolist() == [[2, 1], [2, 2], [3, 1], [3, 2]]
    assert "12 run(s) computed" in out
    assert [ln.split()[:3] for ln in out.splitlines() if ln.split()[:1] == ["2"]] == [["2", "3", "1"]]
    info = json.loads((folder / "run.json").read_text())
    assert info["config"]["evaluation"]["grid"] == {"kernel.degree": [2, 3], "training.epochs": [1, 2]}
    swept = results(folder)
    point = swept[swept["grid_point"] == "2"].drop(columns=["grid_point"]).reset_index(drop=True)
    assert plab("run", "small.yaml", "kernel.type=poly", "kernel.degree=3", "training.epochs=1", "-q")[0] == 0
    single = results(here / "runs" / "small" / "kernel.degree-3_kernel.type-poly_training.epochs-1", ["grid_point"])
    pd.testing.assert_frame_equal(point, single)


def test_a_sweep_adds_settings_to_a_config_grid(here):
    (here / "grid.yaml").write_text(SMALL.replace("folds: 3}", "folds: 3, grid: {algorithm.tau: [0, 0.125]}}"))
    status, _, errors = plab("run", "grid.yaml", "-m", "training.seed=0,1", "--out", here / "g", "-q")
    assert status == 0, errors
    grid = pd.read_csv(here / "g" / "grid.csv")
    assert len(grid) == 4 and set(grid.columns) == {"grid_point", "algorithm.tau", "training.seed"}


# ----------------------------------------------------------------------------- packaged configs


def test_packaged_configs_are_the_repository_configs():
    # configs/ is a link to perceptron_lab/configs: the paths make reproduce records keep working
    repo = sorted(p.relative_to(REPO / "configs").as_posix() for p in (REPO / "configs").rglob("*.yaml"))
    assert repo and [f"{n}.yaml" for n, _ in packaged_configs()] == repo
    assert os.path.samefile(REPO / "configs" / "kw2007" / "table5.yaml",
                            REPO / "perceptron_lab" / "configs" / "kw2007" / "table5.yaml")
    status, out, _ = plab("configs")
    assert status == 0
    names = [ln.split()[0] for ln in out.splitlines()]
    assert names == [n for n, _ in packaged_configs()] and "fs1999/table1_d4" in names
    assert "Freund & Schapire (1999) Table 1, d = 4" in out


def test_a_packaged_config_runs_by_name(here):
    status, out, _ = plab("config", "show", "fs1999/table1_d4")
    assert status == 0 and "paper: fs1999/table1" in out and "epochs: 30" in out
    status, out, _ = plab("config", "show", "fs1999/table1_d4", "training.epochs=1")
    assert status == 0 and "paper:" not in out and "epochs: 1" in out
    status, out, errors = plab("run", "golden/kw2007_sonar", "training.epochs=1", "evaluation.folds=2", "-q")
    assert status == 0, errors
    info = json.loads((here / "runs" / "golden_kw2007_sonar" / "evaluation.folds-2_training.epochs-1"
                       / "run.json").read_text())
    assert info["config_file"] == "package:golden/kw2007_sonar.yaml"
    line = one_error(2, "run", "fs1999/table1_d9")
    assert "fs1999/table1_d9: no such config file, and no packaged config of that name (did you mean " \
           "'fs1999/table1_d6'?)" in line


def test_an_overridden_paper_run_is_a_variant_not_scored_against_the_paper(here):
    (here / "paper.yaml").write_text("extends: " + str(REPO / "configs" / "golden" / "kw2007_sonar.yaml")
                                     + "\nname: p\npaper: kw2007/table2\n")
    r = CliRunner().invoke(main, ["run", "paper.yaml", "training.epochs=1", "evaluation.folds=2", "-q"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "not scored against kw2007/table2 (add paper=kw2007/table2 to score it)" in r.stderr
    folder = here / "runs" / "p" / "evaluation.folds-2_training.epochs-1"
    info = json.loads((folder / "run.json").read_text())
    assert "paper" not in info["config"] and info["paper_outputs"] == []
    assert not list(folder.glob("kw2007_*"))
    # naming keys alone keep the paper
    status, out, _ = plab("config", "show", "paper.yaml", "description=x")
    assert status == 0 and "paper: kw2007/table2" in out
