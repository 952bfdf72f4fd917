"""Regenerate the paper tables: ``python -m perceptron_lab.reproduce`` (``make reproduce``).

Runs every paper-table config in turn, resuming whatever is already finished in its output
folder (each run shows a progress bar with the time left), draws the combined figures, writes the
report (results/report/) and prints how many compared cells are within the tolerances. Only the Freund &
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
from .figures import plot_fs1999_figure2
from .report import collect, summary_lines, write_report

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
    fs_runs = sorted(Path("results/fs1999").glob("d*/results.csv"))
    if fs_runs:
        curves = pd.concat([pd.read_csv(p, dtype=str, keep_default_na=False) for p in fs_runs])
        curves = curves[curves["class"] == "all"]
        plot_fs1999_figure2(curves, Path("results/fs1999/fs1999_figure2.png"),
                            title="Freund & Schapire (1999) Figure 2, reproduced: test error vs epochs")
    md, _ = write_report(["results"], "results/report")
    for line in summary_lines(collect(["results"])):
        print(line.replace("**", ""))
    print(f"report: {md}")


if __name__ == "__main__":
    main()
