"""The plab command as a user meets it: run, resume, results contract, errors, help."""

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from perceptron_lab.cli.main import main
from perceptron_lab.run.plan import RESULT_COLUMNS

SMALL = """
name: small
dataset:
  name: sonar
algorithm:
  eta: 0.1
  theta_init: avg_sq_norm
  C: theta_init
training:
  epochs: 3
  checkpoints: [0.5, 1, 3]
prediction:
  rules: [last, last_norm, vote, avg, random, longest]
evaluation:
  mode: kfold
  folds: 3
"""


def write(tmp_path, text, name="c.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def invoke(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env, catch_exceptions=False)


def test_quickstart_runs_and_writes_the_results_contract(tmp_path):
    r = invoke("run", "--out", tmp_path / "qs", "-q")
    assert r.exit_code == 0, r.output
    assert "results in" in r.output and "vote" in r.output
    df = pd.read_csv(tmp_path / "qs" / "results.csv")
    for col in ("dataset", "kernel", "degree", "algorithm", "params", "permutation", "epoch", "rule",
                "normalized", "class", "metric", "value"):
        assert col in df.columns
    assert list(df.columns) == RESULT_COLUMNS
    assert set(df["metric"]) == {"test_error_pct", "mistakes", "support_vectors"}
    assert set(df["dataset"]) == {"sonar"}
    err = df[df.metric == "test_error_pct"]["value"]
    assert err.between(0, 100).all()
    info = json.loads((tmp_path / "qs" / "run.json").read_text())
    assert info["status"] == "complete"
    assert info["config"]["dataset"]["name"] == "sonar"
    assert {"numpy", "numba", "python", "perceptron_lab"} <= set(info["versions"])
    assert info["seed"] == 0 and info["units"] == 20


def test_same_config_gives_byte_identical_results(tmp_path):
    cfg = write(tmp_path, SMALL)
    for d in ("a", "b"):
        assert invoke("run", cfg, "--out", tmp_path / d, "-q").exit_code == 0
    assert (tmp_path / "a/results.csv").read_bytes() == (tmp_path / "b/results.csv").read_bytes()


def test_rerun_resumes_and_force_recomputes(tmp_path):
    cfg = write(tmp_path, SMALL)
    out = tmp_path / "o"
    assert invoke("run", cfg, "--out", out, "-q").exit_code == 0
    first = (out / "results.csv").read_bytes()
    parts = sorted((out / "parts").glob("*.csv"))
    assert len(parts) == 3
    parts[1].unlink()  # as if the run had been killed before this fold finished
    (out / "results.csv").unlink()
    r = invoke("run", cfg, "--out", out, "-q")
    assert "1 run(s) computed, 2 reused" in r.output
    assert (out / "results.csv").read_bytes() == first
    r = invoke("run", cfg, "--out", out, "-q", "--force")
    assert "3 run(s) computed, 0 reused" in r.output
    assert (out / "results.csv").read_bytes() == first


def test_force_recomputes_a_run_whose_parts_hold_whole_folds(tmp_path):
    # a grid on the linear kernel plans one part per fold (f+00.csv ...), shared by the grid points
    cfg = write(tmp_path, SMALL + "  grid:\n    algorithm.tau: [0, 0.125]\n")
    out = tmp_path / "o"
    assert invoke("run", cfg, "output.figures=false", "--out", out, "-q").exit_code == 0
    first = (out / "results.csv").read_bytes()
    assert sorted(p.name for p in (out / "parts").glob("*.csv")) == ["f+00.csv", "f+01.csv", "f+02.csv"]
    r = invoke("run", cfg, "output.figures=false", "--out", out, "-q", "--force")
    assert r.exit_code == 0, r.output
    assert "6 run(s) computed, 0 reused" in r.output
    assert (out / "results.csv").read_bytes() == first


def test_different_config_into_same_folder_is_refused(tmp_path):
    out = tmp_path / "o"
    assert invoke("run", write(tmp_path, SMALL), "--out", out, "-q").exit_code == 0
    other = write(tmp_path, SMALL.replace("epochs: 3", "epochs: 2").replace("[0.5, 1, 3]", "[1, 2]"), "d.yaml")
    r = invoke("run", other, "--out", out, "-q")
    assert r.exit_code == 1
    assert "different config" in r.output and "--force" in r.output


def test_misspelt_key_is_one_line_with_did_you_mean_and_exit_2(tmp_path):
    cfg = write(tmp_path, SMALL.replace("  rules:", "  rulez:"))
    r = invoke("run", cfg, "--out", tmp_path / "o")
    assert r.exit_code == 2
    lines = [l for l in r.output.splitlines() if l.strip()]
    assert len(lines) == 1
    assert "prediction.rulez" in lines[0] and "did you mean 'rules'" in lines[0]
    assert str(cfg) in lines[0] and "Traceback" not in r.output


def test_config_check_reports_every_problem(tmp_path):
    cfg = write(tmp_path, SMALL.replace("epochs: 3", "epochs: -3").replace("eta: 0.1", "eta: fast"))
    r = invoke("config", "check", cfg)
    assert r.exit_code == 2
    assert "training.epochs" in r.output and "algorithm.eta" in r.output


def test_missing_dataset_tells_the_user_what_to_do(tmp_path):
    cfg = write(tmp_path, "dataset: {name: mnist}\nkernel: {type: poly, degree: 2}\n")
    r = invoke("run", cfg, "--out", tmp_path / "o", "--data-dir", tmp_path / "empty", "-q")
    assert r.exit_code == 3
    assert "plab data fetch mnist" in r.output and "PLAB_DATA" in r.output
    assert "Traceback" not in r.output


def test_figures_gentile2001_without_usps_says_what_to_do(tmp_path):
    r = invoke("figures", "gentile2001", "--figure", "3", "--out", tmp_path / "o", "--data-dir", tmp_path / "empty",
               "-q")
    assert r.exit_code == 3
    assert "plab data fetch usps" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "o").exists()


def test_holdout_on_a_dataset_without_test_split_is_refused(tmp_path):
    cfg = write(tmp_path, "dataset: {name: sonar}\n")
    r = invoke("run", cfg, "--out", tmp_path / "o", "-q")
    assert r.exit_code == 2 and "kfold" in r.output  # a config that does not fit its data


def test_unwritable_output_folder_fails_before_work(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = invoke("run", write(tmp_path, SMALL), "--out", blocker / "sub", "-q")
    assert r.exit_code == 1 and "cannot write to output folder" in r.output


def test_data_verify_passes_on_shared_data(data_dir):
    r = invoke("data", "verify", "--data-dir", data_dir)
    assert r.exit_code == 0, r.output
    assert "mismatch" not in r.output and "missing" not in r.output


def test_data_list_and_path(tmp_path):
    r = invoke("data", "list", "--data-dir", tmp_path)
    assert r.exit_code == 0 and "mnist" in r.output and "missing" in r.output and "embedded" in r.output
    r = invoke("data", "path", "mnist", "--data-dir", tmp_path)
    assert Path(r.output.strip()) == tmp_path / "mnist"


@pytest.mark.parametrize("cmd", [[], ["run"], ["data"], ["data", "list"], ["data", "path"], ["data", "fetch"],
                                 ["data", "verify"], ["config"], ["config", "check"], ["config", "show"],
                                 ["report"], ["compare"], ["tables"], ["figures"], ["figures", "gentile2001"],
                                 ["configs"]])
def test_every_command_has_help_with_an_example(cmd):
    r = invoke(*cmd, "--help")
    assert r.exit_code == 0
    assert "Example" in r.output


def test_packaged_configs_and_repo_configs_validate():
    from perceptron_lab.config.load import load_config

    root = Path(__file__).resolve().parents[2]
    paths = sorted(root.glob("configs/**/*.yaml")) + sorted((root / "perceptron_lab" / "configs").glob("*.yaml"))
    assert paths
    for p in paths:
        load_config(p)


def test_large_grid_summary_is_one_line_per_point(tmp_path):
    taus = [0, 0.125, 0.25, 0.5, 1, 2, 4]
    cfg = write(tmp_path, SMALL.replace("  folds: 3", f"  folds: 2\n  grid:\n    algorithm.tau: {taus}"))
    r = invoke("run", cfg, "--out", tmp_path / "g", "-q")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("test error %"))
    assert "one row per grid point" in lines[head] and lines[head + 1].split()[:2] == ["point", "tau"]
    points = [ln for ln in lines if ln.strip().split(" ")[0].isdigit()]
    assert [ln.split()[1] for ln in points] == [f"{t:g}" for t in taus]
    df = pd.read_csv(tmp_path / "g" / "results.csv")
    e = df[(df.metric == "test_error_pct") & (df.rule == "vote") & (df["class"] == "all") & (df.epoch == 3)]
    means = e.groupby("grid_point")["value"].mean()
    for ln, (g, m) in zip(points, means.items()):
        assert int(ln.split()[0]) == g
        assert f"{m:.2f}" in ln


@pytest.mark.parametrize("args, says", [
    # click 8.2 (the floor) writes "No such option: --bogus", later versions "No such option '--bogus'"
    (["run", "--bogus"], "plab: error: No such option"),
    (["nosuch"], "plab: error: No such command 'nosuch'."),
    (["run", "--jobs", "0"], "plab: error: Invalid value for '--jobs'"),
    (["run", "a.yaml", "b.yaml"], "plab: error: Got unexpected extra argument (b.yaml)"),
])
def test_click_usage_errors_are_one_plab_error_line_exit_2(args, says):
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "perceptron_lab.cli.main", *args], capture_output=True, text=True,
                       timeout=120)
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith(says) and "--help')" in lines[0], lines
    assert args[-1] in lines[0] or args[0] == "run" and args[1] == "--jobs"


def test_every_exit_status(tmp_path):
    # the README's table of exit statuses, one case each (130: tests/integration/test_interrupt.py)
    import subprocess
    import sys

    from perceptron_lab.run.store import RunFolder

    def plab(*args):
        r = subprocess.run([sys.executable, "-m", "perceptron_lab.cli.main", *map(str, args)], capture_output=True,
                           text=True, timeout=300)
        errors = [ln for ln in r.stderr.splitlines() if ln.startswith("plab: error:")]
        assert "Traceback" not in r.stderr and len(errors) == (r.returncode != 0), r.stderr
        return r.returncode

    small = tmp_path / "small.yaml"
    small.write_text("name: small\ndataset: {name: sonar}\ntraining: {epochs: 1}\nevaluation: {mode: kfold, folds: 2}\n")
    assert plab("run", small, "--out", tmp_path / "ok", "-q") == 0
    with RunFolder(tmp_path / "busy"):
        assert plab("run", small, "--out", tmp_path / "busy", "-q") == 1
    assert plab("run", "--no-such-option") == 2
    big = tmp_path / "big.yaml"
    big.write_text("name: big\ndataset: {name: sonar, train_size: 5000}\n")
    assert plab("run", big, "--out", tmp_path / "big", "-q") == 2
    assert plab("run", small, "--out", tmp_path / "nodata", "-q", "--data-dir", tmp_path / "empty") == 0  # packaged
    mnist = tmp_path / "mnist.yaml"
    mnist.write_text("name: m\ndataset: {name: mnist}\n")
    assert plab("run", mnist, "--out", tmp_path / "m", "-q", "--data-dir", tmp_path / "empty") == 3
    assert plab("data", "verify", "mnist", "--data-dir", tmp_path / "empty") == 3
    narrow = tmp_path / "narrow.yaml"
    narrow.write_text("name: n\ndataset: {name: sonar}\nkernel: {type: gaussian, sigma: 0.0001}\n"
                      "evaluation: {mode: kfold, folds: 2}\n")
    assert plab("run", narrow, "--out", tmp_path / "n", "-q") == 4
