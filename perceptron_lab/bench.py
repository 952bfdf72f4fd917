"""Speed benchmarks: ``python -m perceptron_lab.bench`` (``make bench``).

Case ``fs1999_d4``: one permutation of ``configs/mnist_d4.yaml`` (full MNIST, d = 4, T up to 30,
every rule at every checkpoint and every tenth of an epoch), run as ``plab run`` in a child
process so that its wall time and peak memory are those a user sees. The machine's float32 GEMM
throughput is measured in the same run, and the unavoidable kernel arithmetic of the run (each
support vector's kernel column against the training set once, plus the test block) is divided by
it: the "fraction of the limit" reached.

Writes ``results/bench/<case>.csv`` and ``results/bench/summary.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


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


def run_fs1999_d4(data_dir, train_size=None, epochs=30):
    """Run one permutation in a child process; returns a dict of measurements."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "bench.yaml"
        lines = [f"extends: {ROOT / 'configs' / 'mnist_d4.yaml'}", "name: bench_fs1999_d4",
                 "training:", "  permutations: 1"]
        if epochs != 30:
            cps = [c for c in (0.1, 1, 2, 3, 4, 10, 30) if c < epochs] + [epochs]
            lines += [f"  epochs: {epochs}", f"  checkpoints: {cps}"]
        if train_size:
            lines += ["dataset:", "  name: mnist", f"  train_size: {train_size}"]
        cfg.write_text("\n".join(lines) + "\n")
        out = Path(tmp) / "out"
        cmd = [sys.executable, "-m", "perceptron_lab.cli", "run", str(cfg), "--out", str(out), "-q"]
        if data_dir:
            cmd += ["--data-dir", str(data_dir)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        timings = json.loads((out / "timings.json").read_text())
        unit = next(iter(timings.values()))
        df = pd.read_csv(out / "results.csv")
        info = json.loads((out / "run.json").read_text())
    allrows = df[df["class"] == "all"]
    last_T = allrows["epoch"].astype(float).max()
    at = allrows[allrows["epoch"].astype(float) == last_T]
    sv = float(at[at.metric == "support_vectors"]["value"].iloc[0])
    vote = float(at[(at.metric == "test_error_pct") & (at.rule == "vote")]["value"].iloc[0])
    n, n_test, f = info["dataset"]["n_train"], info["dataset"]["n_test"], info["dataset"]["n_features"]
    flops = 2.0 * sv * (n + n_test) * f
    return {"case": "fs1999_d4", "n_train": n, "epochs": last_T, "wall_seconds": round(wall, 2),
            "train_seconds": unit["train_seconds"], "eval_seconds": unit["eval_seconds"],
            "peak_rss_gb": round(max(before, peak_kb) / 1e6, 3), "support_vectors": int(sv),
            "mistakes": int(float(at[at.metric == "mistakes"]["value"].iloc[0])),
            "vote_test_error_pct": vote, "kernel_gflop": round(flops / 1e9, 1)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=os.environ.get("PLAB_DATA"))
    ap.add_argument("--train-size", type=int, default=None, help="first N MNIST examples (default: all)")
    ap.add_argument("--epochs", type=float, default=30)
    ap.add_argument("--out", default=str(ROOT / "results" / "bench"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gf = gemm_gflops()
    row = run_fs1999_d4(args.data_dir, args.train_size, args.epochs)
    row["gemm_gflops"] = round(gf, 1)
    row["limit_seconds"] = round(row["kernel_gflop"] / gf, 2)
    row["fraction_of_limit"] = round(row["limit_seconds"] / row["wall_seconds"], 3)
    row.update({"cpu": cpu_name(), "cores": os.cpu_count(), "blas": blas_name(),
                "date": time.strftime("%Y-%m-%d")})
    pd.DataFrame([row]).to_csv(out / "fs1999_d4.csv", index=False)
    md = ["# Benchmarks", "",
          f"Machine: {row['cpu']}, {row['cores']} cores; BLAS {row['blas']}; float32 GEMM {gf:.0f} GFLOP/s.", "",
          "| case | n_train | T | wall s | train s | eval s | peak GB | SVs | mistakes | vote err % | limit s | fraction of limit |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
          f"| one permutation of configs/mnist_d4.yaml | {row['n_train']} | {row['epochs']:g} | {row['wall_seconds']} | "
          f"{row['train_seconds']} | {row['eval_seconds']} | {row['peak_rss_gb']} | {row['support_vectors']} | "
          f"{row['mistakes']} | {row['vote_test_error_pct']} | {row['limit_seconds']} | {row['fraction_of_limit']} |", "",
          "wall s includes starting Python, loading MNIST and compiling nothing (numba caches to disk after the "
          "first run). limit s = 2 x support vectors x (train + test examples) x features / GEMM rate."]
    (out / "summary.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
