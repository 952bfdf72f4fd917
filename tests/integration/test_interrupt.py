"""Killing `plab run` at any moment loses nothing finished, leaves no half-written result file,
and the same command resumes to results identical to an uninterrupted run."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CONFIG = """
name: interrupt
dataset:
  name: ionosphere
algorithm:
  eta: 0.1
  theta_init: avg_sq_norm
  C: theta_init
training:
  epochs: 1000
  checkpoints: [1, 100, 1000]
  permutations: 6
prediction:
  rules: [last, vote, avg, longest]
  vote_weight: correct
evaluation:
  mode: kfold
  folds: 4
"""


N_PARTS = 24  # 6 permutations x 4 folds: enough that a kill after the second lands mid-run


def _default_sigint():
    # A test runner started in the background by a non-interactive shell (`nohup ... &`) inherits
    # SIGINT as ignored, and so would plab: give the child the default disposition, as a terminal has.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


#: Every plab process a test started, so that its pipes are closed after the test (an open pipe
#: left to the garbage collector is a ResourceWarning, an error under the strict settings).
_STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _close_pipes():
    yield
    while _STARTED:
        p = _STARTED.pop()
        if p.poll() is None:
            p.kill()
            p.wait(timeout=60)
        for pipe in (p.stdout, p.stderr):
            if pipe is not None:
                pipe.close()


def plab(*args, **kw):
    p = subprocess.Popen([sys.executable, "-m", "perceptron_lab.cli.main", *map(str, args)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_default_sigint, **kw)
    _STARTED.append(p)
    return p


def wait_for_parts(out: Path, n: int, proc, timeout=120):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if len(list((out / "parts").glob("*.csv"))) >= n:
            return
        if proc.poll() is not None:
            pytest.fail(f"run ended before {n} parts were written: {proc.stderr.read()}")
        time.sleep(0.05)
    pytest.fail("no progress")


def no_partial_files(out: Path):
    leftovers = [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    assert not leftovers, leftovers


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    cfg = d / "c.yaml"
    cfg.write_text(CONFIG)
    p = plab("run", cfg, "--out", d / "out", "-q")
    assert p.wait(timeout=300) == 0, p.stderr.read()
    return cfg, (d / "out" / "results.csv").read_bytes()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_kill_then_resume_gives_identical_results(tmp_path, reference, sig):
    cfg, expected = reference
    out = tmp_path / "out"
    p = plab("run", cfg, "--out", out, "-q")
    wait_for_parts(out, 2, p)
    p.send_signal(sig)
    code = p.wait(timeout=60)
    if sig == signal.SIGINT:
        assert code == 130
        assert "resume" in p.stderr.read()
    else:
        assert code == -signal.SIGKILL
    if sig == signal.SIGINT:
        no_partial_files(out)  # Ctrl-C removes the temporary file of a write it interrupts
    # (a SIGKILL in the middle of a write can leave a hidden temporary file: never a result file,
    # and the next run removes it)
    for part in (out / "parts").glob("*.csv"):
        assert part.read_text().endswith("\n")  # every result file is complete
    done = len(list((out / "parts").glob("*.csv")))
    assert 2 <= done < N_PARTS
    assert not (out / "results.csv").exists() or (out / "results.csv").read_bytes() == expected
    r = plab("run", cfg, "--out", out, "-q")
    stdout, stderr = r.communicate(timeout=300)
    assert r.returncode == 0, stderr
    assert f"{N_PARTS - done} run(s) computed, {done} reused" in stdout
    assert (out / "results.csv").read_bytes() == expected
    no_partial_files(out)


def test_stale_temporaries_of_dead_processes_are_removed(tmp_path):
    from perceptron_lab.run.store import remove_stale_temporaries

    parts = tmp_path / "parts"
    parts.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = parts / f".g000_f-01_p000.csv.{dead.pid}.plab.tmp"
    live = parts / f".g000_f-01_p001.csv.{os.getppid()}.plab.tmp"  # a running process (our parent)
    result = parts / "g000_f-01_p002.csv"
    users = [tmp_path / f".notes.{dead.pid}.tmp", parts / f".draft.{dead.pid}.tmp"]  # not plab's pattern
    for p in (stale, live, result, *users):
        p.write_text("x\n")
    assert remove_stale_temporaries(tmp_path) == 1
    assert not stale.exists() and live.exists() and result.exists() and all(p.exists() for p in users)


def _children(pid: int) -> set[int]:
    """Every descendant of ``pid`` (from /proc)."""
    kids: dict[int, list[int]] = {}
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


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_no_worker_outlives_a_killed_parallel_run(tmp_path, sig):
    cfg = tmp_path / "interrupt.yaml"
    cfg.write_text(CONFIG)
    out = tmp_path / "out"
    r = plab("run", cfg, "--out", out, "--jobs", "2", "-q")
    t0 = time.time()
    workers: set[int] = set()
    while time.time() - t0 < 120 and len(workers) < 2:  # the pool's workers (and resource tracker)
        time.sleep(0.2)
        workers = {p for p in _children(r.pid) if "perceptron_lab" in Path(f"/proc/{p}/cmdline").read_text()
                   or "multiprocessing" in Path(f"/proc/{p}/cmdline").read_text()} if r.poll() is None else set()
    assert len(workers) >= 2, "the pool did not start"
    everyone = _children(r.pid)
    r.send_signal(sig)
    r.wait(timeout=60)
    t0 = time.time()
    while time.time() - t0 < 20 and any(_alive(p) for p in everyone):
        time.sleep(0.2)
    assert not [p for p in everyone if _alive(p)], "child processes outlived plab run"
    assert not (out / "results.csv").exists()
