"""`plab run --executor dask`: the same parts on a Dask cluster give the same bytes as a local run,
resume works, and misuse fails with one clear line."""

import json
import sys
import time

import pytest
from click.testing import CliRunner

distributed = pytest.importorskip("distributed")

from perceptron_lab.cli.main import main  # noqa: E402
from perceptron_lab.errors import PlabError  # noqa: E402
from perceptron_lab.run.executors import check_executor, connect_dask  # noqa: E402

# sonar ships inside the package, so the workers need no data folder; 2 folds x 3 permutations
CONFIG = """
name: dask_small
dataset:
  name: sonar
algorithm:
  eta: 0.1
  theta_init: avg_sq_norm
  C: theta_init
training:
  epochs: 3
  checkpoints: [0.5, 1, 3]
  permutations: 3
prediction:
  rules: [last, last_norm, vote, avg, random, longest]
evaluation:
  mode: kfold
  folds: 2
"""


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def scheduler():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", processes=True,
                                  dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def test_dask_matches_local_and_resumes(tmp_path, scheduler):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(CONFIG)
    r = invoke("run", cfg, "--out", tmp_path / "local", "-q")
    assert r.exit_code == 0, r.output
    t0 = time.perf_counter()
    # with the progress bar, to exercise the per-unit progress events
    r = invoke("run", cfg, "--out", tmp_path / "dask", "--executor", "dask", "--scheduler", scheduler)
    assert r.exit_code == 0, r.output
    assert "6 run(s) computed, 0 reused" in r.output
    local, dask_out = tmp_path / "local", tmp_path / "dask"
    assert (local / "results.csv").read_bytes() == (dask_out / "results.csv").read_bytes()
    info = json.loads((dask_out / "run.json").read_text())
    assert info["executor"] == "dask" and info["scheduler"] == scheduler and info["status"] == "complete"
    assert len(json.loads((dask_out / "timings.json").read_text())) == 6
    assert not list(dask_out.rglob("*.tmp"))

    parts = sorted((dask_out / "parts").glob("*.csv"))
    assert len(parts) == 6
    untouched = {p.name: p.stat().st_mtime_ns for p in parts}
    parts[2].unlink()  # as if the run had been interrupted before this part came back
    del untouched[parts[2].name]
    (dask_out / "results.csv").unlink()
    r = invoke("run", cfg, "--out", dask_out, "--executor", "dask", "--scheduler", scheduler, "-q")
    assert r.exit_code == 0, r.output
    assert "1 run(s) computed, 5 reused" in r.output
    assert {p.name: p.stat().st_mtime_ns for p in (dask_out / "parts").glob("*.csv")
            if p.name in untouched} == untouched
    assert (local / "results.csv").read_bytes() == (dask_out / "results.csv").read_bytes()
    assert time.perf_counter() - t0 < 60


def test_option_errors_are_one_line(tmp_path):
    r = CliRunner().invoke(main, ["run", "--executor", "dask", "-q", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2   # usage
    assert r.output.strip().splitlines() == [
        "plab: error: --executor dask needs --scheduler ADDRESS (where 'dask scheduler' listens, "
        "e.g. tcp://head-node:8786)"]
    with pytest.raises(PlabError, match="--jobs applies to --executor local"):
        check_executor("dask", "tcp://127.0.0.1:8786", jobs=2)
    with pytest.raises(PlabError, match="--scheduler applies to --executor dask"):
        check_executor("local", "tcp://127.0.0.1:8786")


def test_missing_extra_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails as if not installed
    with pytest.raises(PlabError, match=r"pip install 'perceptron_lab\[dask\]'"):
        check_executor("dask", "tcp://127.0.0.1:8786")


def test_unreachable_scheduler_is_one_line():
    import socket

    with socket.socket() as s:  # a free port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    with pytest.raises(PlabError, match=r"cannot reach the Dask scheduler at tcp://127.0.0.1:\d+ within 1 s") as e:
        connect_dask(f"tcp://127.0.0.1:{port}", timeout=1)
    assert "\n" not in str(e.value)
    assert time.perf_counter() - t0 < 10


# a degree-2 kernel keeps one part per grid point (40 parts: the scheduler dies mid-run)
GRID = CONFIG.replace("  name: sonar\n", "  name: sonar\nkernel:\n  type: poly\n  degree: 2\n").replace(
    "evaluation:\n", "evaluation:\n  grid: {algorithm.tau: [" + ", ".join(
    str(0.05 * k) for k in range(40)) + "]}\n").replace("epochs: 3", "epochs: 30").replace(
    "checkpoints: [0.5, 1, 3]", "checkpoints: [1, 30]")


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_scheduler_killed_mid_run_is_one_line_and_resume_works(tmp_path):
    import os
    import signal
    import subprocess

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    sched = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                              "--port", str(port), "--dashboard-address", ":0"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nworkers", "1",
                               "--nthreads", "1", "--no-dashboard"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(GRID)
    out = tmp_path / "out"
    try:
        run = subprocess.Popen([sys.executable, "-m", "perceptron_lab.cli.main", "run", str(cfg), "--out", str(out), "-q",
                                "--executor", "dask", "--scheduler", address],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        t0 = time.time()
        while time.time() - t0 < 120 and len(list((out / "parts").glob("*.csv"))) < 2 and run.poll() is None:
            time.sleep(0.1)
        assert len(list((out / "parts").glob("*.csv"))) >= 2, run.communicate(timeout=60)
        sched.send_signal(signal.SIGKILL)
        stdout, stderr = run.communicate(timeout=120)
    finally:
        for p in (sched, worker):
            p.kill()
            p.wait(timeout=30)
    errors = [ln for ln in stderr.splitlines() if ln.startswith("plab: error:")]
    assert run.returncode == 5 and "Traceback" not in stderr, stderr   # workers
    assert len(errors) == 1 and "lost the Dask scheduler at" in errors[0] and "resume" in errors[0], stderr
    assert not (out / "results.csv").exists()
    kept = len(list((out / "parts").glob("*.csv")))
    r = invoke("run", cfg, "--out", out, "-q")  # resume locally
    assert r.exit_code == 0 and "reused" in r.output
    ref = tmp_path / "ref"
    assert invoke("run", cfg, "--out", ref, "-q").exit_code == 0
    assert (out / "results.csv").read_bytes() == (ref / "results.csv").read_bytes()
    assert kept >= 2


@pytest.mark.parametrize("mode, says", [
    ("banner", "is not a Dask scheduler: its first bytes b'SSH-2.0-' are no Dask handshake"),
    ("silent", "does not answer as a Dask scheduler within 2 s"),
    ("http", "does not answer as a Dask scheduler within 2 s"),
])
def test_a_port_that_is_not_a_dask_scheduler_is_one_line(mode, says):
    # servers on loopback that accept connections but do not speak Dask's protocol: an SSH-like
    # banner (read by distributed as a frame length of exabytes), silence, an HTTP reply
    import socket
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    stop = threading.Event()

    def serve():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            with c:
                if mode == "banner":
                    c.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
                c.settimeout(3)
                try:
                    c.recv(1024)
                    if mode == "http":
                        c.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
                except OSError:
                    pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(PlabError) as e:
            connect_dask(f"tcp://127.0.0.1:{srv.getsockname()[1]}", timeout=2.0)
    finally:
        stop.set()
        t.join(5)
        srv.close()
    assert says in str(e.value) and "\n" not in str(e.value)
    assert time.perf_counter() - t0 < 10


OWN = """name: own
dataset: {path: data.csv, label: y}
training: {epochs: 2, permutations: 1}
prediction: {rules: [last, vote]}
evaluation: {mode: kfold, folds: 2}
output: {figures: false}
"""


def test_a_relative_config_path_is_read_by_workers_in_another_folder(tmp_path, monkeypatch, scheduler):
    """The workers were started in another folder than this process's: a config named by a
    relative path whose dataset.path is relative to it is read from the same file there."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "own.yaml").write_text(OWN)
    (tmp_path / "cfg" / "data.csv").write_text("a,b,y\n" + "".join(f"{i % 7},{(i * 3) % 5},{i % 2}\n" for i in range(30)))
    r = invoke("run", "cfg/own.yaml", "--out", "local", "-q")
    assert r.exit_code == 0, r.output
    r = invoke("run", "cfg/own.yaml", "--out", "dask", "--executor", "dask", "--scheduler", scheduler, "-q")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "local" / "results.csv").read_bytes() == (tmp_path / "dask" / "results.csv").read_bytes()


def test_a_data_file_a_worker_cannot_read_names_the_worker_not_the_config():
    from perceptron_lab.errors import DatasetError
    from perceptron_lab.run.executors import WORKER_DATA_FIX, _worker_error

    err = _worker_error(DatasetError("/d/x.csv: not found. Fix: correct dataset.path in c.yaml (a relative path ...)."))
    assert str(err) == f"on a Dask worker: /d/x.csv: not found on the worker. Fix: {WORKER_DATA_FIX}."
    assert err.exit_code == 3 and "correct dataset.path" not in str(err)
