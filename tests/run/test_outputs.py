"""Where runs write and what they tell: user runs never write into results/, make reproduce
does (and leaves the run records alone when nothing changed), shell-safe folder names of
overridden runs, one summary table per sweep, warnings for dropped checkpoints, and messages
that name the algorithm a key does not belong to."""

import json
from pathlib import Path

import numpy as np
import pytest

from clitools import one_error, plab

REPO = Path(__file__).resolve().parents[2]
SMALL = """name: small
dataset: {name: sonar}
algorithm: {eta: 0.1}
training: {epochs: 2, checkpoints: [1], permutations: 1}
prediction: {rules: [last, vote]}
evaluation: {mode: kfold, folds: 3}
output: {figures: false}
"""
FORGETRON = """name: f
dataset: {name: sonar}
algorithm: {name: forgetron, budget: 10}
prediction: {rules: [last]}
evaluation: {mode: kfold, folds: 2}
"""


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "small.yaml").write_text(SMALL)
    return tmp_path


# ----------------------------------------------------------------------------- messages


@pytest.mark.parametrize("args, expected", [
    (["-m", "algorithm.eta=0.1,0.2"], "evaluation.grid: algorithm.eta is a parameter of the perceptron, the "
                                      "Projectron, the Projectron++ and NORMA; the Forgetron does not use it"),
    (["algorithm.eta=0.1"], "algorithm.eta is a parameter of the perceptron, the Projectron, the Projectron++ and "
                            "NORMA; the Forgetron does not use it"),
    (["algorithm.tau=0.1"], "algorithm.tau is a perceptron parameter; the Forgetron does not use it"),
    (["algorithm.name=alma", "algorithm.tau=0.1"], "algorithm.tau is a perceptron parameter; ALMA does not use it"),
])
def test_a_key_the_algorithm_lacks_names_that_algorithm(here, args, expected):
    (here / "f.yaml").write_text(FORGETRON)
    line = one_error(2, "run", "f.yaml", *args, "--out", here / "never", "-q")
    assert line.endswith(expected), line


# ----------------------------------------------------------------------------- where runs write


def test_plab_run_of_a_packaged_config_writes_to_runs_never_to_results():
    from perceptron_lab.config.load import load_config
    from perceptron_lab.config.overrides import packaged_configs

    for name, path in packaged_configs():
        cfg = load_config(path)
        assert cfg.output.dir is None, name
        assert cfg.run_dir == Path("runs") / cfg.name
    assert load_config(REPO / "configs" / "mnist_d4.yaml").run_dir == Path("runs/mnist_d4")


def test_reproduce_maps_every_config_to_its_committed_folder_with_the_recorded_config():
    """The one table of results folders covers every config make reproduce runs, and each config
    as the reproduction runs it is the config its committed run.json records (so a reproduction
    that reuses the results has nothing new to record)."""
    import os

    from perceptron_lab.run.plan import results_hash
    from perceptron_lab.cli.reproduce import SETS, reproduction_config, results_dir

    os.chdir(REPO)
    for path in dict.fromkeys(c for s in SETS.values() for c in s):
        folder = Path(results_dir(path))
        assert folder.parts[0] == "results"
        cfg = reproduction_config(path)
        assert cfg.run_dir == folder
        info = REPO / folder / "run.json"
        if info.exists():
            recorded = json.loads(info.read_text())
            assert recorded["config"] == json.loads(json.dumps(cfg.to_dict(), default=str)), path
            assert recorded["config_hash"] == results_hash(cfg), path


def test_reproduce_refuses_a_config_it_does_not_run():
    from perceptron_lab.errors import UsageError
    from perceptron_lab.cli.reproduce import results_dir

    with pytest.raises(UsageError, match="not a config the reproduction runs.*plab run configs/mnist_d4.yaml"):
        results_dir("configs/mnist_d4.yaml")


def _records(folder):
    return {n: (folder / n).read_bytes() for n in ("run.json", "timings.json")}


def test_a_run_that_changes_no_result_leaves_run_json_and_timings_json_as_they_were(here):
    status, _, errors = plab("run", "small.yaml", "--out", "o", "-q")
    assert status == 0, errors
    folder = here / "o"
    first = _records(folder)
    # everything reused
    status, out, _ = plab("run", "small.yaml", "--out", "o", "-q")
    assert status == 0 and "0 run(s) computed, 3 reused" in out
    assert _records(folder) == first
    # everything computed again, to the same bytes
    for p in (folder / "parts").glob("*.csv"):
        p.unlink()
    status, out, _ = plab("run", "small.yaml", "--out", "o", "-q")
    assert status == 0 and "3 run(s) computed, 0 reused" in out
    assert _records(folder) == first
    # --force asks for a new record: the files are written anew (plab writes by replacing a file, so
    # a new one has a new inode), even where a fast run gives the same bytes in the same second
    inodes = {n: (folder / n).stat().st_ino for n in ("run.json", "timings.json")}
    assert plab("run", "small.yaml", "--out", "o", "-q", "--force")[0] == 0
    assert all((folder / n).stat().st_ino != ino for n, ino in inodes.items())


def test_a_changed_result_is_recorded_anew(here):
    assert plab("run", "small.yaml", "--out", "o", "-q")[0] == 0
    folder = here / "o"
    info = json.loads((folder / "run.json").read_text())
    # a table the reused run did not have before: the record lists it
    (here / "small.yaml").write_text(SMALL.replace("output: {figures: false}", "output: {figures: true}"))
    assert plab("run", "small.yaml", "--out", "o", "-q")[0] == 0
    new = json.loads((folder / "run.json").read_text())
    assert "learning_curves.png" in new["outputs"] and "learning_curves.png" not in (info.get("outputs") or [])
    assert new["started"] == info["started"] and new["ran"] == info["ran"]   # made by the first invocation


def test_a_reproduction_that_computes_nothing_keeps_its_log(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import perceptron_lab.cli.reproduce as R

    (tmp_path / "results").mkdir()
    log = tmp_path / "results" / "reproduce.json"
    log.write_text(json.dumps({"finished": "then", "configs": {"a.yaml": {"wall_seconds": 9.0, "ran": 1}},
                               "figures": {}}, indent=2) + "\n")
    before = log.read_bytes()
    monkeypatch.setattr(R, "ROOT", tmp_path)
    monkeypatch.setattr(R, "reproduction_config", lambda path: path)
    monkeypatch.setattr(R, "verify_inputs", lambda cfg, data_dir, note=None: True)
    monkeypatch.setattr(R, "outdated", lambda cfgs: [])
    monkeypatch.setattr(R, "write_report", lambda paths, out: (tmp_path / "r.md", tmp_path / "r.html"))
    monkeypatch.setattr(R, "collect", lambda paths: None)
    monkeypatch.setattr(R, "summary_lines", lambda rep: [])
    monkeypatch.setattr(R, "run_experiment", lambda cfg, **kw: SimpleNamespace(ran=0, skipped=4, invocation={}))
    R.main(["a.yaml"])
    assert log.read_bytes() == before
    monkeypatch.setattr(R, "run_experiment", lambda cfg, **kw: SimpleNamespace(ran=4, skipped=0, invocation={}))
    R.main(["a.yaml"])
    assert json.loads(log.read_text())["configs"]["a.yaml"]["ran"] == 4


# ----------------------------------------------------------------------------- folder names


SHELL_SPECIAL = set("[],= '\"*?$&;|<>(){}!`\\#~")


@pytest.mark.parametrize("overrides, expected", [
    ([("training.epochs", "3"), ("kernel.degree", "2")], "kernel.degree-2_training.epochs-3"),
    ([("kernel.degree", "2,3"), ("training.epochs", "1,10")], "kernel.degree-2+3_training.epochs-1+10"),
    ([("algorithm.tau", "0.125")], "algorithm.tau-0.125"),
])
def test_folder_names_are_key_value_pairs_without_shell_characters(overrides, expected):
    from perceptron_lab.config.overrides import Override, override_dirname

    assert override_dirname([Override(k, t, (t,)) for k, t in overrides]) == expected


def test_every_folder_name_is_shell_safe_and_distinct():
    from perceptron_lab.config.overrides import Override, override_dirname

    texts = ["[1, 2]", "[1,2]", "/data/a b.csv", "/data/a_b.csv", "-1", "1", "avg_sq_norm", "'x'", "a=b", "x" * 500,
             "1,2", "12"]
    names = [override_dirname([Override("k.v", t, (t,))]) for t in texts]
    assert len(set(names)) == len(names)
    for n in names:
        assert not SHELL_SPECIAL & set(n), n
        assert len(n) < 140 and not n.startswith(("-", "."))


def test_a_sweep_writes_a_shell_safe_folder_and_records_its_overrides(here):
    status, out, errors = plab("run", "small.yaml", "-m", "algorithm.tau=0,0.5", "training.epochs=1", "-q")
    assert status == 0, errors
    folder = here / "runs" / "small" / "algorithm.tau-0+0.5_training.epochs-1"
    assert f"results in {folder.relative_to(here)}/results.csv" in out
    assert json.loads((folder / "run.json").read_text())["overrides"] == ["algorithm.tau=0,0.5", "training.epochs=1"]


def test_a_folder_named_as_before_is_resumed(here):
    old = here / "runs" / "small" / "training.epochs=1"
    assert plab("run", "small.yaml", "--out", old, "training.epochs=1", "-q")[0] == 0
    status, out, _ = plab("run", "small.yaml", "training.epochs=1", "-q")
    assert status == 0 and "0 run(s) computed, 3 reused" in out and "training.epochs=1/results.csv" in out


# ----------------------------------------------------------------------------- sweeps


CP = SMALL.replace("training: {epochs: 2, checkpoints: [1], permutations: 1}",
                   "training: {epochs: 10, checkpoints: [1, 2, 5, 10], permutations: 1}")


def test_a_sweep_prints_one_table_a_row_per_grid_point(here):
    status, out, errors = plab("run", "small.yaml", "-m", "algorithm.tau=0,0.5", "training.epochs=1,2", "-q")
    assert status == 0, errors
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("test error %"))
    assert lines[start] == "test error % at each point's last epoch (mean ± std over 3 runs), one row per grid point"
    assert lines[start + 1].split() == ["point", "tau", "epochs", "last", "vote"]
    rows = [ln.split() for ln in lines[start + 2:start + 6]]
    assert [r[:3] for r in rows] == [["0", "0", "1"], ["1", "0", "2"], ["2", "0.5", "1"], ["3", "0.5", "2"]]
    assert len(lines) == start + 6 and "grid point" not in out.replace("one row per grid point", "")
    # each cell is the mean ± std over the folds of results.csv at that point's last epoch
    import pandas as pd

    folder = here / "runs" / "small" / "algorithm.tau-0+0.5_training.epochs-1+2"
    df = pd.read_csv(folder / "results.csv", dtype={"class": str})
    cell = df[(df["grid_point"] == 1) & (df["epoch"] == 2) & (df["rule"] == "vote") & (df["class"] == "all")
              & (df["metric"] == "test_error_pct")]["value"]
    assert rows[1][6:9] == [f"{cell.mean():.2f}", "±", f"{cell.std():.2f}"]


def test_checkpoints_beyond_a_swept_epochs_are_warned_about_in_one_line(here):
    from click.testing import CliRunner

    from perceptron_lab.cli.main import main

    (here / "cp.yaml").write_text(CP)
    r = CliRunner().invoke(main, ["run", "cp.yaml", "-m", "training.epochs=1,3,10", "-q", "--out", "o"])
    assert r.exit_code == 0, r.output
    warnings = [ln for ln in r.stderr.splitlines() if ln.startswith("plab: warning:")]
    assert warnings == ["plab: warning: the grid points with training.epochs=1 drop checkpoint(s) 2, 5; the grid "
                        "points with training.epochs=3 drop checkpoint(s) 5 (beyond the last epoch; set "
                        "training.checkpoints to choose the checkpoints yourself)"]


def test_an_epochs_override_names_the_checkpoints_it_drops_and_none_when_none(here):
    from click.testing import CliRunner

    from perceptron_lab.cli.main import main

    (here / "cp.yaml").write_text(CP)
    r = CliRunner().invoke(main, ["run", "cp.yaml", "training.epochs=3", "-q", "--out", "o"])
    assert r.exit_code == 0
    assert [ln for ln in r.stderr.splitlines() if "warning" in ln] == [
        "plab: warning: training.epochs=3 drops checkpoint(s) 5 (beyond the last epoch; set training.checkpoints "
        "to choose the checkpoints yourself)"]
    r = CliRunner().invoke(main, ["run", "cp.yaml", "training.epochs=3", "training.checkpoints=[1]", "-q", "--out", "o2"])
    assert r.exit_code == 0 and "warning" not in r.stderr


def _pandas_csv(rows, columns):
    import io

    import pandas as pd

    buf = io.StringIO()
    pd.DataFrame(rows, columns=columns).to_csv(buf, index=False, lineterminator="\n")
    return buf.getvalue()


@pytest.mark.parametrize("rows", [
    [],
    [["sonar", "linear", 1, "perceptron", "eta=0.1;tau=0", 0, 3, 0, "1", "none", "", "all", "mistakes", "83"]],
    [["a,b", 'say "hi"', -7, "two\nlines", "", 2**70, 0, 1, "0.5", "vote", "false", "3", "test_error_pct", "1e-05"],
     ["x", "\r", 0, " lead", "trail ", 5, 6, 7, "", "", "", "", "", ""]],
    # other value types take pandas' own path: numpy integers, floats, None, booleans
    [["d", "k", np.int64(2), "a", "p", 0, 0, 0, 1.5, None, True, "all", "m", float("nan")]],
])
def test_part_csv_text_is_what_pandas_writes(rows):
    """A part's CSV text (``rows_to_csv``) is byte for byte pandas' ``to_csv`` of the same rows,
    whether the rows take the csv module's path (str and int values) or pandas' own."""
    from perceptron_lab.run.plan import RESULT_COLUMNS
    from perceptron_lab.run.units import rows_to_csv

    assert rows_to_csv(rows, RESULT_COLUMNS) == _pandas_csv(rows, RESULT_COLUMNS)


def test_part_csv_text_of_real_units_is_what_pandas_writes(tmp_path, monkeypatch):
    """The rows of real parts (k-fold, binary and multiclass; nested; one rule each way) are
    written as pandas writes them."""
    from perceptron_lab.config.load import load_config, with_overrides
    from perceptron_lab.run import units
    from perceptron_lab.run.experiment import run_experiment

    written = []
    real = units.rows_to_csv

    def check(rows, columns=units.RESULT_COLUMNS):
        text = real(rows, columns)
        written.append(text == _pandas_csv(rows, columns))
        return text

    monkeypatch.setattr(units, "rows_to_csv", check)
    for name, extra in [("package:quickstart.yaml", {"training.epochs": 2, "training.checkpoints": [1]}),
                        ("package:quickstart.yaml", {"evaluation.mode": "nested", "evaluation.outer": "kfold",
                                                     "evaluation.inner_folds": 2, "evaluation.folds": 2,
                                                     "evaluation.search": [["algorithm.tau"]],
                                                     "training.epochs": 1, "training.checkpoints": [1]})]:
        cfg = with_overrides(load_config(name), {**extra, "output.figures": False})
        run_experiment(cfg, out_dir=tmp_path / str(len(written)), progress=False)
    assert written and all(written)
