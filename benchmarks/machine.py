"""The machine a benchmark runs on (CPU, BLAS, GEMM rate, load) and the child processes that measure
each side."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from .common import ROOT


def gemm_gflops(n: int = 4096, repeats: int = 3) -> float:
    """Best float32 GEMM throughput over a few n x n products (GFLOP/s)."""
    rng = np.random.default_rng(0)
    A = rng.random((n, n), dtype=np.float32)
    B = rng.random((n, n), dtype=np.float32)
    A @ B
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        A @ B
        best = min(best, time.perf_counter() - t)
    return 2.0 * n**3 / best / 1e9


def blas_name() -> str:
    try:
        from threadpoolctl import threadpool_info

        info = [f"{i.get('internal_api')} {i.get('version')} ({i.get('num_threads')} threads)"
                for i in threadpool_info() if i.get("user_api") == "blas"]
        return "; ".join(info)
    except Exception:  # threadpoolctl is optional
        return "unknown"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def versions() -> str:
    out = []
    for mod in ("numpy", "numba", "sklearn", "river"):
        try:
            out.append(f"{mod} {__import__(mod).__version__}")
        except ImportError:
            pass
    return ", ".join(out)


def machine(gflops: float) -> dict:
    return {"cpu": cpu_name(), "cores": os.cpu_count(), "blas": blas_name(),
            "gemm_gflops": round(gflops, 1), "versions": versions(), "date": time.strftime("%Y-%m-%d %H:%M")}


# ----------------------------------------------------------------------------- child processes


def _maxrss_mb(ru) -> float:
    """ru_maxrss in MB (kilobytes on Linux, bytes on macOS)."""
    return ru.ru_maxrss / (1e6 if sys.platform == "darwin" else 1e3)


def spawn(cmd, env=None, timeout=None):
    """Run ``cmd``; returns (exit code or None on timeout, wall seconds, peak RSS MB, output).

    ``os.wait4`` gives the resource usage of this child alone (``RUSAGE_CHILDREN`` would report
    the largest of all children so far).
    """
    with tempfile.TemporaryFile() as log:
        fired = threading.Event()
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)

        def stop():
            fired.set()
            p.kill()

        timer = threading.Timer(timeout, stop) if timeout else None
        if timer:
            timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        except BaseException:
            p.kill()
            p.wait()
            raise
        finally:
            if timer:
                timer.cancel()
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        out = log.read().decode(errors="replace")
    return (None if fired.is_set() else p.returncode), wall, _maxrss_mb(ru), out


def run_worker(spec: dict, data_dir, threads: int | None = None, timeout: float | None = None) -> dict:
    """Measure one side (``spec["task"]``) in a child process; returns its result row."""
    env = dict(os.environ)
    if threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
            env[var] = str(threads)
    # the child runs ``python -m benchmarks`` from wherever this process was started
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    with tempfile.TemporaryDirectory() as tmp:
        spec = dict(spec, data_dir=None if data_dir is None else str(data_dir),
                    result=str(Path(tmp) / "result.json"))
        cmd = [sys.executable, "-m", "benchmarks", "--worker", json.dumps(spec)]
        load = load_average()
        code, wall, peak, out = spawn(cmd, env=env, timeout=timeout)
        res_path = Path(spec["result"])
        res = json.loads(res_path.read_text()) if code == 0 and res_path.exists() else {}
    row = {"threads": threads or "all", "wall_seconds": round(wall, 2), "peak_rss_mb": round(peak),
           "load_avg": load}
    if code is None:
        row["status"] = f"timed out after {timeout:g} s"
    elif code != 0:
        tail = out.strip().splitlines()[-1] if out.strip() else f"exit code {code}"
        row["status"] = f"failed: {tail[:200]}"
        print(f"bench: {spec['task']} failed:\n{out[-3000:]}", file=sys.stderr)
    else:
        row.update(res)
    return row


# ----------------------------------------------------------------------------- worker side


def _status_mb(key: str) -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1e3
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset this process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False
