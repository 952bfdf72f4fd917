"""One exit-status contract for every path: ``perceptron_lab.errors.EXIT_STATUSES`` is the table, and
each documented status is reached by several error paths here, each ending with exactly that status
and (for a non-zero one) exactly one ``plab: error:`` line and no traceback. A path whose status is
not the documented one fails; so does a status ``plab`` can exit with that the table leaves out."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from clitools import packaged_data_root

import perceptron_lab
from perceptron_lab.cli import main as plab_cli
from perceptron_lab.cli.main import main
from perceptron_lab.errors import EXIT_STATUSES, PlabError
from perceptron_lab.run.store import RunFolder

DOCUMENTED = {code for code, _ in EXIT_STATUSES}
SMALL = "name: small\ndataset: {name: sonar}\ntraining: {epochs: 1}\nevaluation: {mode: kfold, folds: 2}\n"


def _write(tmp, name, text):
    p = tmp / name
    p.write_text(text)
    return p


def _small(tmp):
    return _write(tmp, "small.yaml", SMALL)


def _not_dask_server():
    """A TCP server that answers like a web server, not a Dask scheduler; returns its address."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"tcp://127.0.0.1:{srv.getsockname()[1]}"


def _busy(tmp):
    out = tmp / "busy"
    folder = RunFolder(out)
    folder.__enter__()          # held until the test's process ends the lock (closed at teardown)
    _busy.held = folder
    return ["run", _small(tmp), "--out", out, "-q"]


def _other_config(tmp):
    small = _small(tmp)
    assert CliRunner().invoke(main, ["run", str(small), "--out", str(tmp / "o"), "-q"]).exit_code == 0
    return ["run", small, "--out", tmp / "o", "-q", "training.epochs=2"]


def _users_results(tmp):
    small = _small(tmp)
    assert CliRunner().invoke(main, ["run", str(small), "--out", str(tmp / "o"), "-q"]).exit_code == 0
    (tmp / "o" / "results.csv").write_text("mine\n")
    return ["run", small, "--out", tmp / "o", "-q"]


def _damaged_comparison(tmp):
    import shutil

    d = tmp / "usps"
    shutil.copytree(Path(__file__).resolve().parents[2] / "results" / "gentile2001" / "usps_perceptron", d)
    comp = d / "gentile2001_table1_comparison.csv"
    comp.write_bytes(comp.read_bytes()[:200])
    return ["compare", d]


def _out_below_a_file(tmp):
    _write(tmp, "file", "x")
    return ["run", _small(tmp), "--out", tmp / "file" / "out", "-q"]


def _finished(tmp, name="r", *overrides):
    """A finished small run of sonar (2 folds, 1 epoch) in ``tmp/name``."""
    out = tmp / name
    r = CliRunner().invoke(main, ["run", str(_small(tmp)), "--out", str(out), "-q", *overrides])
    assert r.exit_code == 0, r.output
    return out


def _damaged_results(tmp):
    out = _finished(tmp)
    res = out / "results.csv"
    res.write_bytes(res.read_bytes()[:300])
    return out


def _empty_folder(tmp):
    (tmp / "empty").mkdir()
    return tmp / "empty"


# (documented status, what the path is, a function of a temporary folder giving the arguments)
PATHS = [
    (0, "run: a small run", lambda t: ["run", _small(t), "--out", t / "ok", "-q"]),
    (0, "config check: a valid config", lambda t: ["config", "check", _small(t)]),
    (0, "configs: the packaged configs", lambda t: ["configs"]),
    (0, "run: epochs written as a YAML float", lambda t: ["run", _small(t), "--out", t / "f", "-q", "training.epochs=1.0e-1"]),
    (1, "run: a folder in use by another run", _busy),
    (1, "run: a folder holding another config's results", _other_config),
    (1, "run: a results.csv plab did not write", _users_results),
    (1, "run: --out below a file", _out_below_a_file),
    (2, "run: --out is a file", lambda t: ["run", _small(t), "--out", _write(t, "file", "x"), "-q"]),
    (1, "compare: a damaged comparison", _damaged_comparison),
    (2, "run: an unknown option", lambda t: ["run", "--no-such-option"]),
    (2, "plab: an unknown command", lambda t: ["no-such-command"]),
    (2, "run: an extra argument", lambda t: ["run", _small(t), "notakeyvalue"]),
    (2, "run: an invalid config", lambda t: ["run", _write(t, "bad.yaml", SMALL + "trainng: {}\n"), "--out", t / "b"]),
    (2, "run: epochs below one training step", lambda t: ["run", _small(t), "--out", t / "e", "-q", "training.epochs=1.0e-9"]),
    (2, "run: a YAML 1.1 float read as text", lambda t: ["run", _small(t), "--out", t / "e", "-q", "training.epochs=1e-9"]),
    (2, "run: a YAML 1.1 float in a config file", lambda t: ["run", _write(t, "y.yaml", SMALL.replace(
        "{epochs: 1}", "{epochs: 1e-9}")), "--out", t / "y", "-q"]),
    (2, "run: a YAML 1.1 float in a checkpoint list", lambda t: ["run", _write(t, "z.yaml", SMALL.replace(
        "{epochs: 1}", "{epochs: 1, checkpoints: [5e-1]}")), "--out", t / "z", "-q"]),
    (2, "run: a checkpoint below one step", lambda t: ["run", _write(t, "cp.yaml", SMALL.replace(
        "{epochs: 1}", "{epochs: 1, checkpoints: [0.000001]}")), "--out", t / "cp", "-q"]),
    (2, "run: train_size beyond the data", lambda t: ["run", _write(t, "big.yaml", "name: b\ndataset: {name: sonar, "
                                                               "train_size: 5000}\n"), "--out", t / "big", "-q"]),
    (2, "run: more folds than examples", lambda t: ["run", _write(t, "k.yaml", SMALL.replace("folds: 2", "folds: 500")),
                                               "--out", t / "k", "-q"]),
    (2, "run: --executor dask without --scheduler", lambda t: ["run", _small(t), "--out", t / "d", "--executor", "dask"]),
    (2, "run: --scheduler without --executor dask", lambda t: ["run", _small(t), "--out", t / "d", "--scheduler",
                                                          "tcp://127.0.0.1:1"]),
    (2, "run: --jobs with --executor dask", lambda t: ["run", _small(t), "--out", t / "d", "--executor", "dask",
                                                  "--scheduler", "tcp://127.0.0.1:1", "--jobs", "2"]),
    (2, "report: an invalid causes file", lambda t: [(_write(t, "causes.yaml", "causes: [\n"), "report")[1], t,
                                             "--out", t / "rep"]),
    (3, "run: a dataset not in the data folder", lambda t: ["run", _write(t, "m.yaml", "name: m\ndataset: {name: mnist}\n"),
                                                       "--out", t / "m", "-q", "--data-dir", t / "empty"]),
    (3, "data verify: without the files", lambda t: ["data", "verify", "mnist", "--data-dir", t / "empty"]),
    (3, "data path: an unknown dataset name", lambda t: ["data", "path", "no_such_data"]),
    (3, "run: a data file of one's own that is missing", lambda t: ["run", _write(t, "u.yaml", "name: u\ndataset: "
                                                               "{path: nowhere.csv, label: y}\nevaluation: {mode: kfold, "
                                                               "folds: 2}\n"), "--out", t / "u", "-q"]),
    (3, "run: a data file of one's own that is empty", lambda t: ["run", _write(t, "v.yaml", f"name: v\ndataset: "
                                                             f"{{path: {_write(t, 'd.csv', '')}, label: y}}\n"
                                                             "evaluation: {mode: kfold, folds: 2}\n"), "--out", t / "v", "-q"]),
    (4, "run: a Gaussian width that makes K the identity", lambda t: ["run", _write(t, "n.yaml", SMALL + "kernel: {type: "
                                                                 "gaussian, sigma: 0.0001}\n"), "--out", t / "n", "-q"]),
    (4, "run: a polynomial kernel that overflows float64", lambda t: ["run", _write(t, "p.yaml", SMALL.replace(
        "{epochs: 1}", "{epochs: 1, dtype: float64}") + "kernel: {type: poly, degree: 300}\n"), "--out", t / "p", "-q"]),
    (4, "run: a Gaussian width of 1e-200", lambda t: ["run", _write(t, "g.yaml", SMALL + "kernel: {type: gaussian, "
                                                 "sigma: 1.0e-200}\n"), "--out", t / "g", "-q"]),
    # every other command: a usage error (status 2) and, where it reads or writes files, one of
    # those (the status the table gives that kind of file); FILE_ERRORS below names them
    (2, "data list: an extra argument", lambda t: ["data", "list", "extra"]),
    (2, "data path: no dataset name", lambda t: ["data", "path"]),
    (2, "data fetch: no dataset name", lambda t: ["data", "fetch"]),
    (3, "data fetch: a data folder below a file", lambda t: ["data", "fetch", "ionosphere", "--data-dir",
                                                             _write(t, "file", "x") / "sub"]),
    (2, "data verify: an unknown option", lambda t: ["data", "verify", "--no-such-option"]),
    (2, "config docs: an extra argument", lambda t: ["config", "docs", "extra"]),
    (2, "config check: no config", lambda t: ["config", "check"]),
    (2, "config check: a config file that is not there", lambda t: ["config", "check", t / "nowhere.yaml"]),
    (2, "config show: an unknown key overridden", lambda t: ["config", "show", _small(t), "training.epoch=3"]),
    (2, "config show: a config file that is not there", lambda t: ["config", "show", t / "nowhere.yaml"]),
    (2, "configs: an extra argument", lambda t: ["configs", "extra"]),
    (2, "report: a folder that is not there", lambda t: ["report", t / "nowhere", "--out", t / "rep"]),
    (1, "report: a report.md plab did not write", lambda t: ["report", _finished(t), "--out",
                                                            _write((t / "rep").mkdir() or t / "rep", "report.md",
                                                                   "mine\n").parent]),
    (2, "tables: no run folder", lambda t: ["tables"]),
    (2, "tables: a folder that is no run", lambda t: ["tables", _empty_folder(t)]),
    (1, "tables: a damaged results.csv", lambda t: ["tables", _damaged_results(t)]),
    (2, "figures gentile2001: a figure the paper has not", lambda t: ["figures", "gentile2001", "--figure", "7"]),
    (3, "figures gentile2001: without the USPS files", lambda t: ["figures", "gentile2001", "--out", t / "fig",
                                                                  "--data-dir", t / "empty", "-q"]),
    (2, "plot: a folder without results.csv", lambda t: ["plot", _empty_folder(t)]),
    (1, "plot: a damaged results.csv", lambda t: ["plot", _damaged_results(t), "--out", t / "figs"]),
    (2, "compare: a folder that is no run", lambda t: ["compare", _finished(t), _empty_folder(t)]),
    (2, "compare: runs on other folds", lambda t: ["compare", _finished(t), _finished(t, "k3", "evaluation.folds=3"),
                                                   "--paired"]),
    (2, "compare: three runs for --paired", lambda t: ["compare", _finished(t), _finished(t, "b"), _finished(t, "c"),
                                                       "--paired"]),
    (2, "compare: an unknown rule", lambda t: ["compare", _finished(t), "--rules", "vote,nope"]),
    (1, "compare: a damaged results.csv", lambda t: ["compare", _damaged_results(t), "--paired"]),
    (1, "compare: --figure onto a file plab did not write", lambda t: ["compare", _finished(t), "--figure",
                                                                       _write(t, "mine.png", "x")]),
    (5, "run: an unreachable Dask scheduler", lambda t: ["run", _small(t), "--out", t / "d", "-q", "--executor", "dask",
                                                    "--scheduler", "tcp://127.0.0.1:1"]),
    (5, "run: a server that is not a Dask scheduler", lambda t: ["run", _small(t), "--out", t / "d", "-q", "--executor", "dask",
                                                            "--scheduler", _not_dask_server()]),
]


@pytest.mark.parametrize("code, what, args", PATHS, ids=[f"{c}-{w}" for c, w, _ in PATHS])
def test_each_path_ends_with_its_documented_status(tmp_path, code, what, args):
    assert code in DOCUMENTED, f"{what}: status {code} is not in EXIT_STATUSES"
    argv = [str(a) for a in args(tmp_path)]
    assert what.split(": ", 1)[0] == (_command_of(argv) or "plab"), f"{what}: the path runs {argv[:2]}"
    try:
        r = CliRunner().invoke(main, argv, catch_exceptions=False)
    finally:
        held = getattr(_busy, "held", None)
        if held is not None:
            held.__exit__(None, None, None)
            _busy.held = None
    assert "Traceback" not in r.output
    errors = [ln for ln in r.output.splitlines() if ln.startswith("plab: error:")]
    assert r.exit_code == code, f"{what}: exit status {r.exit_code}, documented {code}: {r.output[-500:]}"
    assert len(errors) == (code != 0), r.output


#: Each command's path through a file it reads or writes (a description in PATHS), or why it has
#: none. The status is the one EXIT_STATUSES gives that kind of file: 1 for output folders and the
#: files plab reads back, 2 for config files, 3 for data.
FILE_ERRORS = {
    "run": "run: a results.csv plab did not write",
    "data list": None,        # lists what is where; a missing folder is listed as missing, not an error
    "data path": None,        # prints a path, opens nothing
    "data fetch": "data fetch: a data folder below a file",
    "data verify": "data verify: without the files",
    "config docs": None,      # prints the schema, opens nothing
    "config check": "config check: a config file that is not there",
    "config show": "config show: a config file that is not there",
    "configs": None,          # lists the packaged configs
    "report": "report: a report.md plab did not write",
    "tables": "tables: a damaged results.csv",
    "figures gentile2001": "figures gentile2001: without the USPS files",
    "compare": "compare: a damaged results.csv",
    "plot": "plot: a damaged results.csv",
}


def _leaf_commands(group, prefix=()):
    import click

    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            yield from _leaf_commands(cmd, prefix + (name,))
        else:
            yield " ".join(prefix + (name,))


def _command_of(args) -> str:
    import click

    words, group = [], main
    for a in (str(x) for x in args):
        cmd = group.commands.get(a)
        if cmd is None:
            break
        words.append(a)
        if not isinstance(cmd, click.Group):
            break
        group = cmd
    return " ".join(words)


def test_every_command_has_a_usage_error_and_a_file_error():
    """Every command of ``plab --help`` (and of its groups) has a usage path (status 2) in PATHS, and
    one through a file it reads or writes, with the status the table gives that kind of file (each
    path's description starts with its command, checked when the path runs)."""
    leaves = set(_leaf_commands(main))
    assert set(FILE_ERRORS) == leaves, "declare every command's file error (or why it has none) in FILE_ERRORS"
    by_command: dict = {}
    for code, what, _ in PATHS:
        by_command.setdefault(what.split(": ", 1)[0], []).append((code, what))
    for leaf in sorted(leaves):
        paths = by_command.get(leaf, [])
        assert any(code == 2 for code, what in paths if what != FILE_ERRORS[leaf]), f"{leaf}: no usage error path"
        if FILE_ERRORS[leaf] is not None:
            assert FILE_ERRORS[leaf] in [what for _, what in paths], f"{leaf}: its file error is not a path of it"
            code = next(c for c, w in paths if w == FILE_ERRORS[leaf])
            assert code in (1, 2, 3), f"{leaf}: a file error ends with {code}"


def test_every_documented_status_has_several_paths():
    counts = {c: sum(1 for code, _, _ in PATHS if code == c) for c in DOCUMENTED}
    signals = {plab_cli.INTERRUPT_STATUS, *(s for _, s in plab_cli.STOP_SIGNALS)}
    thin = {c: n for c, n in counts.items() if c not in signals and n < 2}
    assert not thin, f"statuses with fewer than two error paths here: {thin}"


def test_the_messages_name_the_config_and_a_fix_that_works(tmp_path, monkeypatch):
    small = _small(tmp_path)
    # the registry's sonar from a data root (without one, a note that the packaged copy is read
    # would precede the error line)
    monkeypatch.setenv("PLAB_DATA", str(packaged_data_root()))
    r = CliRunner().invoke(main, ["run", str(small), "--out", str(tmp_path / "e"), "-q", "training.epochs=1.0e-9"])
    (line,) = r.output.splitlines()
    assert str(small) in line and "training.epochs" in line
    least = re.search(r"use at least ([0-9.e-]+) epochs", line).group(1)
    r = CliRunner().invoke(main, ["run", str(small), "--out", str(tmp_path / "e"), "-q", f"training.epochs={least}"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["run", str(small), "--out", str(tmp_path / "y"), "-q", "training.epochs=1e-1"])
    assert r.exit_code == 2 and "write 1.0e-1 for the number" in r.output
    r = CliRunner().invoke(main, ["run", str(small), "--out", str(tmp_path / "y"), "-q", "training.epochs=1.0e-1"])
    assert r.exit_code == 0
    r = CliRunner().invoke(main, ["run", str(small), "--out", str(tmp_path / "z"), "-q", "training.epochs=5E3"])
    assert r.exit_code == 2 and "write 5.0e+3 for the number" in r.output
    import yaml

    assert yaml.safe_load("5.0e+3") == 5000.0 and yaml.safe_load("1.0e-9") == 1e-9   # the fixes parse as numbers


# ----------------------------------------------------------------------------- every status plab can exit with


def _all_modules():
    for m in pkgutil.walk_packages(perceptron_lab.__path__, "perceptron_lab."):
        if m.name.endswith("__main__"):
            continue
        try:
            yield importlib.import_module(m.name)
        except ImportError:   # an optional extra that is not installed
            continue


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_every_status_plab_can_exit_with_is_documented():
    list(_all_modules())
    import click

    statuses = {getattr(c, "exit_code") for c in _subclasses(PlabError)}
    statuses |= {c.exit_code for c in _subclasses(click.ClickException) if c.__module__.startswith("click")
                 and c is not click.exceptions.FileError and c is not click.ClickException}
    statuses |= {plab_cli.INTERRUPT_STATUS, *(s for _, s in plab_cli.STOP_SIGNALS), 0}
    # literal statuses in the command-line modules
    for mod in ("cli/main.py", "cli/reproduce.py"):
        text = (Path(perceptron_lab.__file__).parent / mod).read_text()
        statuses |= {int(x) for x in re.findall(r"sys\.exit\((\d+)\)", text)}
    missing = statuses - DOCUMENTED
    assert not missing, f"plab can exit with {sorted(missing)}, which EXIT_STATUSES does not document"
    # and each PlabError subclass carries one of the statuses its docstring's family allows
    assert {c.__name__: c.exit_code for c in _subclasses(PlabError)}["WorkerError"] == 5


def test_click_file_errors_are_not_reachable_as_status_1():
    # click.FileError (exit 1) comes only from click.File / click.Path(exists=True) on a file open;
    # plab's options open no files through click, so status 1 stays the output folder's
    text = (Path(perceptron_lab.__file__).parent / "cli" / "main.py").read_text()
    assert "click.File(" not in text


# ----------------------------------------------------------------------------- signals


CONFIG = """
name: sig
dataset: {name: ionosphere}
algorithm: {eta: 0.1, theta_init: avg_sq_norm, C: theta_init}
training: {epochs: 300, checkpoints: [1, 300], permutations: 4}
prediction: {rules: [last, vote, avg]}
evaluation: {mode: kfold, folds: 4}
"""


def _start(cfg, out, jobs):
    def child():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    return subprocess.Popen([sys.executable, "-m", "perceptron_lab.cli.main", "run", str(cfg), "--out", str(out), "-q",
                             "--jobs", str(jobs)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=child)


def _wait_parts(out, proc, n=2, timeout=120):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if len(list((out / "parts").glob("*.csv"))) >= n:
            return
        if proc.poll() is not None:
            pytest.fail(proc.stderr.read())
        time.sleep(0.05)
    pytest.fail("no progress")


def _cmdline(pid) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    except OSError:   # the process ended meanwhile
        return ""


def _descendants(pid):
    kids = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        kids.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = set(), [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


def _alive(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig, status, jobs", [(signal.SIGTERM, 143, 2), (signal.SIGHUP, 129, 2),
                                               (signal.SIGTERM, 143, 1), (signal.SIGINT, 130, 2)],
                         ids=["SIGTERM-jobs2", "SIGHUP-jobs2", "SIGTERM-jobs1", "SIGINT-jobs2"])
def test_signals_end_like_ctrl_c_with_their_documented_status(tmp_path, sig, status, jobs):
    assert status in DOCUMENTED
    cfg = _write(tmp_path, "sig.yaml", CONFIG)
    out = tmp_path / "out"
    p = _start(cfg, out, jobs)
    _wait_parts(out, p)
    everyone = _descendants(p.pid)
    p.send_signal(sig)
    code = p.wait(timeout=60)
    err = p.stderr.read()
    p.stdout.close(), p.stderr.close()   # every pipe closed (an open one is a ResourceWarning)
    assert code == status, err
    errors = [ln for ln in err.splitlines() if ln.startswith("plab: error:")]
    assert len(errors) == 1 and "run the same command again to resume" in errors[0], err
    assert "leaked semaphore" not in err and "Traceback" not in err, err
    t0 = time.time()
    while time.time() - t0 < 20 and any(_alive(q) for q in everyone):
        time.sleep(0.2)
    assert not [q for q in everyone if _alive(q)], "workers outlived plab"
    assert not [f for f in out.rglob("*") if f.name.endswith(".tmp")]
    done = len(list((out / "parts").glob("*.csv")))
    r = subprocess.run([sys.executable, "-m", "perceptron_lab.cli.main", "run", str(cfg), "--out", str(out), "-q"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and f"{done} reused" in r.stdout, r.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("when", ["pool start", "after a part"])
def test_a_worker_that_dies_ends_the_run_with_status_5(tmp_path, when):
    # a run long enough that it cannot finish between seeing its workers and killing one (with a
    # short run, a fast machine finished every part first and the run rightly exited 0)
    cfg = _write(tmp_path, "sig.yaml", CONFIG.replace("epochs: 300, checkpoints: [1, 300], permutations: 4",
                                                      "epochs: 3000, checkpoints: [1, 3000], permutations: 8"))
    out = tmp_path / "out"
    p = _start(cfg, out, 2)
    t0, workers = time.time(), []
    while not workers and time.time() - t0 < 120:
        if p.poll() is not None:
            pytest.fail(p.stderr.read())
        workers = [q for q in _descendants(p.pid)
                   if "multiprocessing" in _cmdline(q) and "resource_tracker" not in _cmdline(q)]
        time.sleep(0.05)
    assert workers
    if when == "after a part":   # the pool is running: a part came back, the others are computed
        _wait_parts(out, p, n=1)
    assert p.poll() is None, p.stderr.read()
    os.kill(workers[0], signal.SIGKILL)
    code = p.wait(timeout=60)
    err = p.stderr.read()
    p.stdout.close(), p.stderr.close()   # every pipe closed (an open one is a ResourceWarning)
    assert code == 5, err
    assert [ln for ln in err.splitlines() if ln.startswith("plab: error:")] and "Traceback" not in err
