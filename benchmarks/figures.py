"""Draw time of every figure kind, next to a reference taken in the same process.

``python -m benchmarks.figures [--run RUN_DIR] [--out results/bench/figures.csv]``

Each figure function is called :data:`REPEATS` times on the inputs ``plab`` gives it (the
quickstart run folder, ``runs/quickstart`` unless ``--run`` names another, and the committed
runs under ``results/``). Khardon & Wachman's Figure 4 needs a parameter search's results.csv,
which ``results/`` does not keep; ``--kw-run`` (default ``runs/kw_small``) names one, e.g. the run of
:data:`KW_SMALL` (Table 3's search on two data sets, one fold assignment: about a minute), written
with ``plab run kw_small.yaml --out runs/kw_small``. the CSV holds the first call's and the median call's seconds, the
reference (a blank figure of the default size written as PNG, in the same process) and the ratio
of the median to the target of :data:`TARGET_S` seconds per figure; CPU seconds of the process
beside the wall seconds (steadier when other work shares the machine). Reading the inputs is not
timed (``plab run`` reads a run's results once for all its figures), except in ``plab plot``'s row
(reading the run folder and drawing its four figures) and in ``compare``'s (which reads its runs).

Gentile's margin figures need minutes of training; their drawing is timed on seeded random
margins of Figure 3's size (USPS: 7291 training examples, 10 permutations, 6 curves per panel).
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

#: Calls per figure kind (the first one pays for fonts and caches; the median is reported too).
REPEATS = 5
#: The target per figure, in seconds.
TARGET_S = 0.3
ROOT = Path(__file__).resolve().parents[1]
#: A config for ``--kw-run``: Khardon & Wachman's Table 3 search on sonar and bupa, one fold seed.
KW_SMALL = """extends: {root}/configs/kw2007/table3_uci.yaml
name: kw_small
evaluation:
  grid:
    dataset.name: [sonar, bupa]
    evaluation.fold_seed: [2007]
"""
#: Figure kinds timed on made-up inputs: never kept in the gallery.
SYNTHETIC = ("gentile2001_margins",)


def _time(fn, repeats=REPEATS) -> tuple[float, float, float]:
    """(first call's wall seconds, median wall seconds, median CPU seconds of this process). CPU
    time is the steadier figure on a machine that other work shares."""
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall[0], statistics.median(wall), statistics.median(cpu)


def _blank() -> None:
    """The reference: matplotlib alone (no plab code), one empty panel of the default size."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.8))
    FigureCanvasAgg(fig)
    fig.add_subplot()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)


def cases(run_dir: Path, results: Path, kw_run: Path, tmp: Path) -> list[tuple[str, str, object]]:
    """(figure kind, input, a call drawing it) for every figure kind."""
    import json

    import numpy as np
    import pandas as pd

    from perceptron_lab.run import figures as plots
    from perceptron_lab.report.compare import plot_side_by_side
    from perceptron_lab.config.load import config_from_dict
    from perceptron_lab.papers.fs1999.figures import plot_fs1999_figure2
    from perceptron_lab.papers.gentile2001.figures import plot_margin_distributions
    from perceptron_lab.papers.kw2007.figures import plot_kw2007_figure4
    from perceptron_lab.papers.kw2007.tables import parameter_curves
    from perceptron_lab.studies import budget

    out = []
    df, info, labels = plots.read_run(run_dir)
    rel = run_dir.name
    out += [("learning_curves", rel, lambda: plots.plot_learning_curves(df, info, labels, tmp / "lc.png")),
            ("counts", rel, lambda: plots.plot_counts(df, info, labels, tmp / "counts.png")),
            ("parameter_curve", rel, lambda: plots.plot_parameter_curve(df, info, run_dir, tmp / "pc.png")),
            ("folds", rel, lambda: plots.plot_folds(df, info, labels, tmp / "folds.png"))]
    out.append(("plab plot: read + all four", rel, lambda: plots.plot_run(run_dir, tmp / "run")))
    cmp_runs = [results / "fs1999" / "d3", results / "fs1999" / "d4"]
    out.append(("compare", "results/fs1999/d3 + d4", lambda: plot_side_by_side(cmp_runs, tmp / "compare.png")))
    fs = pd.concat([pd.read_csv(p, dtype=str, keep_default_na=False)
                    for p in sorted((results / "fs1999").glob("d*/results.csv"))])
    fs = fs[fs["class"] == "all"]
    out.append(("fs1999_figure2", "results/fs1999/d*", lambda: plot_fs1999_figure2(fs, tmp / "fs.png", title="t")))
    kw_dir = kw_run
    kw_info = json.loads((kw_dir / "run.json").read_text())
    kw_cfg = config_from_dict(kw_info["config"])
    kw_curves = parameter_curves(kw_cfg, pd.read_csv(kw_dir / "results.csv", dtype=str, keep_default_na=False))
    out.append(("kw2007_figure4", kw_dir.name,
                lambda: plot_kw2007_figure4(kw_curves, tmp / "kw.png", title="t\nsubtitle")))
    rng = np.random.default_rng(0)
    margins = [rng.normal(0.1, 0.2, 7291) for _ in range(10)]
    panels = [(f"USPS, {r}", [(f"curve {i}", margins) for i in range(6)]) for r in ("last", "avg")]
    out.append(("gentile2001_margins", "seeded random margins, Figure 3's size",
                lambda: plot_margin_distributions(panels, tmp / "g.png", title="t", zoom=0.4, note="note")))
    summary = pd.read_csv(results / "budget" / "summary.csv")
    curves = {p.name: pd.read_csv(results / "budget" / f"mistakes_{p.name}.csv")
              .drop(columns=["panel", "config_hash"], errors="ignore")
              for p in budget.PANELS if (results / "budget" / f"mistakes_{p.name}.csv").is_file()}
    out += [("budget_error", "results/budget/summary.csv", lambda: budget.plot_error(summary, tmp, "avg")),
            ("budget_seconds", "results/budget/summary.csv", lambda: budget.plot_seconds(summary, tmp)),
            ("budget_mistakes", "results/budget/mistakes_*.csv", lambda: budget.plot_mistakes(curves, tmp))]
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, default=ROOT / "runs" / "quickstart",
                    help="a finished quickstart run folder (plab run writes runs/quickstart)")
    ap.add_argument("--kw-run", type=Path, default=ROOT / "runs" / "kw_small",
                    help="a finished Khardon & Wachman parameter-search run folder (see the module's docstring)")
    ap.add_argument("--results", type=Path, default=ROOT / "results")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "figures.csv")
    ap.add_argument("--code", default="this checkout",
                    help="what code is measured, written in every row (e.g. a commit), for before/after tables")
    ap.add_argument("--gallery", type=Path, default=None,
                    help="keep the last drawing of every figure kind in this folder (e.g. results/figures_gallery)")
    a = ap.parse_args(argv)
    if not (a.run / "results.csv").is_file():
        sys.exit(f"benchmarks.figures: error: {a.run} holds no results.csv; run 'plab run' first "
                 "(it writes the quickstart to runs/quickstart) or give --run RUN_DIR")
    if not (a.kw_run / "results.csv").is_file():
        sys.exit(f"benchmarks.figures: error: {a.kw_run} holds no results.csv; write benchmarks.figures.KW_SMALL "
                 f"(with {{root}} = {ROOT}) to kw_small.yaml and run 'plab run kw_small.yaml --out {a.kw_run}', "
                 "or give --kw-run RUN_DIR")
    import pandas as pd

    t0 = time.perf_counter()
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.figure  # noqa: F401
    import_s = time.perf_counter() - t0
    ref_first, ref, ref_cpu = _time(_blank, 5)
    rows = [{"figure": "import matplotlib", "input": "", "first_s": import_s, "median_s": import_s,
             "cpu_median_s": float("nan")},
            {"figure": "reference: blank figure to PNG", "input": "6.4 x 4.8 in, dpi 110",
             "first_s": ref_first, "median_s": ref, "cpu_median_s": ref_cpu}]
    with tempfile.TemporaryDirectory() as tmp:
        for kind, src, fn in cases(a.run.resolve(), a.results.resolve(), a.kw_run.resolve(), Path(tmp)):
            first, med, cpu = _time(fn)
            rows.append({"figure": kind, "input": src, "first_s": first, "median_s": med, "cpu_median_s": cpu})
            print(f"{kind:26s} first {first:6.3f} s  median {med:6.3f} s  cpu {cpu:6.3f} s  ({src})", flush=True)
            pngs = sorted(Path(tmp).glob("*.png"))
            for png in pngs:   # one PNG per call: kept as gallery_<kind>.png in the gallery, else dropped
                if a.gallery and kind not in SYNTHETIC:
                    # the prefix keeps a gallery drawing (some from small stand-in runs) from being taken
                    # for a paper's figure (<paper>_figure*.png) by plab report and the documentation
                    a.gallery.mkdir(parents=True, exist_ok=True)
                    png.replace(a.gallery / (f"gallery_{kind}.png" if len(pngs) == 1 else f"gallery_{kind}_{png.name}"))
                else:
                    png.unlink()
    t = pd.DataFrame(rows)
    t.insert(0, "code", a.code)
    t["reference_s"] = ref
    t["reference_cpu_s"] = ref_cpu
    t["median_over_reference"] = t["median_s"] / ref
    t["cpu_over_reference_cpu"] = t["cpu_median_s"] / ref_cpu
    t["median_over_target"] = t["median_s"] / TARGET_S
    a.out.parent.mkdir(parents=True, exist_ok=True)
    t.to_csv(a.out, index=False, float_format="%.4f")
    print(f"reference (blank figure to PNG): {ref:.3f} s, cpu {ref_cpu:.3f} s; written {a.out}")


if __name__ == "__main__":
    main()
