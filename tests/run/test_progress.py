"""What ``plab run`` shows while it works: the engine's compilation as a step of its own, before
the timed bars, and every bar ending full (stderr a file, so tqdm redraws at most every 30 s and
only each bar's closing state is sure to be drawn)."""

import re
import subprocess
import sys

import pytest

#: The packaged sonar quickstart (2 grid points x 10 folds), small.
QUICK = ["quickstart", "training.epochs=2", "training.checkpoints=[1,2]", "output.figures=false"]
COMPILE = "compiling the engine"


def plab_run(*args):
    """(stdout, stderr) of ``plab run`` in a process of its own (stderr is not a terminal)."""
    p = subprocess.run([sys.executable, "-c", "from perceptron_lab.cli.main import main; main()", "run", *map(str, args)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout, p.stderr


def bar_states(stderr: str) -> dict:
    """{bar description: [(percent, n, total), ...]} in the order drawn."""
    states: dict = {}
    for seg in re.split(r"[\r\n]+", re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", stderr)):
        m = re.match(r"(.+?):\s+(\d+)%\|.*?\|\s*([\d.]+k?)/([\d.]+k?)\b", seg)
        if m:
            states.setdefault(m.group(1).strip(), []).append((int(m.group(2)), m.group(3), m.group(4)))
    return states


def assert_bars_end_full(stderr: str) -> dict:
    states = bar_states(stderr)
    assert states, stderr
    for desc, seen in states.items():
        pct, n, total = seen[-1]
        assert pct == 100 and n == total, (desc, seen)
    return states


def test_compile_step_comes_first_and_every_bar_ends_full(tmp_path):
    _, err = plab_run(*QUICK, "--out", tmp_path / "a")
    states = assert_bars_end_full(err)
    descs = list(states)
    assert descs[0].startswith(COMPILE), descs
    assert any(d.startswith("training steps") for d in descs) and any(": parts (" in d for d in descs), descs
    # the compile step is over before the training bar is first drawn
    assert err.index("training steps") > err.rindex(COMPILE)
    log = (tmp_path / "a" / "progress.log").read_text().splitlines()
    n = int(log[0].split("start: ")[1].split()[0])
    assert n > 1 and " compile: " in log[1], log
    assert all(f" part {k}/{n} " in log[1 + k] for k in range(1, n + 1)), log


def test_results_are_the_same_with_and_without_progress(tmp_path):
    plab_run(*QUICK, "--out", tmp_path / "shown")
    plab_run(*QUICK, "--out", tmp_path / "quiet", "-q")
    assert (tmp_path / "shown" / "results.csv").read_bytes() == (tmp_path / "quiet" / "results.csv").read_bytes()
    assert " compile: " not in (tmp_path / "quiet" / "progress.log").read_text()


def test_bars_end_full_with_two_jobs(tmp_path):
    _, err = plab_run(*QUICK, "--out", tmp_path / "j2", "--jobs", "2")
    assert list(assert_bars_end_full(err))[0].startswith(COMPILE)


@pytest.mark.parametrize("removed", [1, 2])
def test_bars_end_full_when_parts_are_reused(tmp_path, removed):
    out = tmp_path / "r"
    plab_run(*QUICK, "--out", out, "-q")
    parts = sorted((out / "parts").glob("*.csv"))
    per_part = 20 // len(parts)  # the 20 runs (2 grid points x 10 folds) fall evenly into the parts
    for part in parts[:removed]:
        part.unlink()
    _, err = plab_run(*QUICK, "--out", out)
    states = assert_bars_end_full(err)
    n = per_part * removed
    assert f"({n} of 20 runs to compute)" in err or f"({n}/20 runs)" in err, states


def test_no_bar_when_everything_is_reused(tmp_path):
    out = tmp_path / "r"
    plab_run(*QUICK, "--out", out, "-q")
    _, err = plab_run(*QUICK, "--out", out)
    assert bar_states(err) == {}, err


@pytest.mark.parametrize("kind", ["shared", "lockstep"])
def test_warm_up_of_a_fold_part_changes_no_result(tmp_path, capsys, kind):
    """Parts holding one fold of every grid point (evaluated together; with a polynomial kernel in
    one pass, also trained in lockstep): the compile step runs them on a slice of the data, and
    the results are those of a run without it."""
    import numpy as np
    import pandas as pd

    from perceptron_lab.run import plan as run_plan
    from perceptron_lab.config.load import config_from_dict
    from perceptron_lab.run.experiment import run_experiment

    rng = np.random.default_rng(2)
    X = rng.integers(0, 9, size=(240, 12))
    y = (X[:, :4].sum(axis=1) + rng.integers(0, 6, 240)) % 3
    pd.DataFrame(X, columns=[f"f{j}" for j in range(12)]).assign(target=y).to_csv(tmp_path / "d.csv", index=False)
    cfg = {"dataset": {"path": str(tmp_path / "d.csv"), "label": "target"},
           "algorithm": {"eta": 0.1, "theta_init": "avg_sq_norm", "C": "theta_init"},
           "training": {"epochs": 2, "checkpoints": [1], "permutations": 2},
           "prediction": {"rules": ["last", "longest", "vote"], "vote_weight": "correct"},
           "evaluation": {"mode": "nested", "folds": 3, "inner_folds": 2, "grid": {"algorithm.tau": [0, 0.5, 2]},
                          "search": [["algorithm.tau"]]},
           "output": {"figures": False}}
    if kind == "lockstep":
        cfg["kernel"] = {"type": "poly", "degree": 2}
        cfg["training"].update(epochs=1)
    cfg = config_from_dict(cfg)
    assert run_plan.fold_shared(cfg) and run_plan.fold_lockstep(cfg) == (kind == "lockstep")
    run_experiment(cfg, out_dir=tmp_path / "shown", progress=True)
    err = capsys.readouterr().err
    run_experiment(cfg, out_dir=tmp_path / "quiet", progress=False)
    assert (tmp_path / "shown" / "results.csv").read_bytes() == (tmp_path / "quiet" / "results.csv").read_bytes()
    assert list(assert_bars_end_full(err))[0].startswith(COMPILE)
    assert " compile: " in (tmp_path / "shown" / "progress.log").read_text()
