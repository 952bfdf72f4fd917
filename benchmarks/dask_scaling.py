"""``plab run`` on a Dask ``LocalCluster`` of 1 and 2 worker processes: wall time against workers.

    python -m benchmarks.dask_scaling [--permutations 8] [--repeats 1] [--out results/bench/dask_scaling.csv]

The workload is ``configs/golden/fs1999_d4_10k.yaml`` (Freund & Schapire's d = 4 kernel on the
first 10000 MNIST examples, one epoch) with ``training.permutations`` independent parts, the unit
Dask distributes. Each setting runs ``plab run --force`` in a child process, first on this machine
(``--jobs 1``, the baseline without Dask), then with ``--executor dask`` against a fresh
``LocalCluster`` of N single-threaded worker processes. A worker process compiles the engine on its
first part, as a worker of a real cluster does, so the measured wall time includes that cost.

Every row records the CPU, the cores, the versions, the process's niceness and the one-minute
load average before and after the run: on a machine shared with other work the load says how much of the machine the
measurement had. Writes the CSV and a figure (``dask_scaling.png``) beside it.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from .common import ROOT
from .machine import cpu_name, load_average, versions

CONFIG = "configs/golden/fs1999_d4_10k.yaml"
FIELDS = ["setting", "workers", "permutations", "repeat", "wall_seconds", "load_avg_before", "load_avg_after",
          "nice", "cpu", "cores", "versions", "config", "date"]


def _plab(args: list[str], out: Path, permutations: int) -> float:
    cmd = [sys.executable, "-m", "perceptron_lab.cli.main", "run", CONFIG, f"training.permutations={permutations}",
           "--out", str(out), "--force", "-q", *args]
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def measure(permutations: int, repeats: int, worker_counts=(1, 2)) -> list[dict]:
    """One row per (setting, repeat): the local baseline, then a LocalCluster per worker count."""
    from dask.distributed import LocalCluster

    rows = []
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M")
    # the scheduling priority the runs had (os.nice(0): 0 normal, higher yields to other work)
    common = {"permutations": permutations, "nice": os.nice(0), "cpu": cpu_name(), "cores": os.cpu_count(), "versions": versions(),
              "config": CONFIG, "date": stamp}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats):
            before = load_average()
            wall = _plab(["--jobs", "1"], Path(tmp) / "local", permutations)
            rows.append({"setting": "local --jobs 1", "workers": 1, "repeat": r, "wall_seconds": round(wall, 2),
                         "load_avg_before": before, "load_avg_after": load_average(), **common})
            print(rows[-1]["setting"], rows[-1]["wall_seconds"], flush=True)
            for n in worker_counts:
                with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
                    before = load_average()
                    wall = _plab(["--executor", "dask", "--scheduler", cl.scheduler_address],
                                 Path(tmp) / f"dask{n}", permutations)
                rows.append({"setting": "dask LocalCluster", "workers": n, "repeat": r,
                             "wall_seconds": round(wall, 2), "load_avg_before": before,
                             "load_avg_after": load_average(), **common})
                print(rows[-1]["setting"], n, rows[-1]["wall_seconds"], flush=True)
    return rows


def draw(rows: list[dict], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    dask_rows = [r for r in rows if r["setting"] == "dask LocalCluster"]
    for rep in sorted({int(r["repeat"]) for r in dask_rows}):
        pts = sorted((int(r["workers"]), float(r["wall_seconds"])) for r in dask_rows if int(r["repeat"]) == rep)
        ax.plot(*zip(*pts), "o-", color="C0", label="Dask LocalCluster" if rep == 0 else None)
    local = [float(r["wall_seconds"]) for r in rows if r["setting"] == "local --jobs 1"]
    if local:
        ax.axhline(min(local), color="C1", ls="--", label="plab run --jobs 1, no Dask (fastest repeat)")
    ax.set_xlabel("worker processes (1 thread each)")
    ax.set_ylabel("wall seconds")
    ax.set_xticks(sorted({int(r["workers"]) for r in dask_rows}))
    ax.set_ylim(bottom=0)
    loads = [float(r[k]) for r in rows for k in ("load_avg_before", "load_avg_after") if r.get(k) not in (None, "")]
    ax.set_title(f"{rows[0]['permutations']} permutations, MNIST 10000 examples, d = 4\n"
                 f"{rows[0]['cores']} cores, 1-minute load average {min(loads):.1f}-{max(loads):.1f}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=100, metadata={"Software": None})
    plt.close(fig)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--permutations", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "dask_scaling.csv"))
    ap.add_argument("--draw-only", action="store_true", help="redraw the figure from the CSV; measure nothing")
    args = ap.parse_args(argv)
    out = Path(args.out)
    if args.draw_only:
        with out.open(newline="") as f:
            draw(list(csv.DictReader(f)), out.with_suffix(".png"))
        return
    rows = measure(args.permutations, args.repeats)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    draw(rows, out.with_suffix(".png"))
    print(f"wrote {out} and {out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
