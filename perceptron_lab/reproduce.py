"""Regenerate the paper tables: ``python -m perceptron_lab.reproduce`` (``make reproduce``).

Runs every paper-table config in turn, resuming whatever is already finished in its output
folder, then prints how many compared cells are within the tolerances. Only the Freund &
Schapire (1999) tables exist so far; the Khardon & Wachman and Gentile tables join this list
as their configs land.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import pandas as pd

from .config import load_config
from .experiment import run_experiment

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = [f"configs/fs1999/table1_d{d}.yaml" for d in (4, 5, 6, 3, 2, 1)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="*", default=CONFIGS, help="configs to run (default: every paper table)")
    ap.add_argument("--data-dir", default=os.environ.get("PLAB_DATA"))
    args = ap.parse_args(argv)
    os.chdir(ROOT)
    t0 = time.perf_counter()
    for i, path in enumerate(args.configs, 1):
        cfg = load_config(path)
        print(f"[{i}/{len(args.configs)}] {path}", flush=True)
        run_experiment(cfg, data_dir=args.data_dir, progress=True)
    print(f"all configs done in {time.perf_counter() - t0:.0f} s")
    rows = []
    for p in sorted(Path("results").glob("fs1999/*/fs1999_table*_comparison.csv")):
        df = pd.read_csv(p)
        scoped = df[df["in_scope"].astype(bool) & df["paper"].notna() & (df["n_runs"] > 0)]
        rows.append((str(p), int(scoped["within"].astype(bool).sum()), len(scoped)))
    for p, ok, n in rows:
        print(f"{p}: {ok}/{n} in-scope cells within tolerance")


if __name__ == "__main__":
    main()
