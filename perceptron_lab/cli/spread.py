"""How far committed results move under the BLAS kernels and thread counts of one machine.

``python -m perceptron_lab.cli.spread CONFIG ... [--variants NAME ...] [--set KEY=VALUE ...]`` reruns
each config once per variant, in a temporary folder and a fresh process (nice 15, one at a time),
and compares what it wrote with the committed run in the folder ``make reproduce`` writes for it:

* ``results.csv`` row by row, keyed by every column but ``grid_point`` and ``value`` (so a run
  over a subset of the grid, ``--set``, is compared on the rows it has), or by ``grid_point`` too
  where the other columns do not tell the grid points apart;
* ``search.csv`` (parameter searches), keyed by the cell and the search, on the rows whose search
  saw as many candidates as the committed one (a subset of the grid along a cell's own
  parameters is left out);
* ``nested.csv`` (nested cross-validation), keyed by the cell and the search: every row after a
  rerun of the whole grid, the ``nothing`` rows (one candidate) after a subset;
* for the golden cases (``configs/golden/``) the golden file ``results/golden/<case>.csv``
  (:func:`perceptron_lab.report.golden.compute`'s aggregation).

The variants (:data:`VARIANTS`) are the machines of this kind (x86-64 with AVX2 at least) that
one CPU can stand in for: ``avx2`` runs the code an AVX2 CPU runs (numba compiled for Haswell,
OpenBLAS's Haswell kernels, which are also AMD Zen's, numpy without its AVX-512 loops); ``host``
is what this CPU picks by itself (on an AVX-512 CPU, its AVX-512 code); ``avx2+blas=NAME`` changes only OpenBLAS's kernel
(``OPENBLAS_CORETYPE``: SSE3 ``Prescott``, SSE4.2 ``Nehalem``, AVX ``Sandybridge``, AVX-512
``SkylakeX``; OpenBLAS is DYNAMIC_ARCH, bundled with numpy); ``avx2+threads2`` runs two BLAS, OpenMP
and numba threads instead of one; ``avx2+dtype`` flips ``training.dtype`` between float32 and
float64, which is a different computation, not another machine, and is reported apart.

Each variant writes one row to ``results/spread/<config>.csv``: the variant, its environment and
the kernel OpenBLAS reports it used, the rows compared, the rows that differ and the largest
absolute difference of test errors (percentage points) and of counts (mistakes, support vectors,
corrections), per compared file. ``results/spread/summary.csv`` gathers every config's rows.

``python -m perceptron_lab.cli.spread --exactness`` writes ``results/spread/exactness.csv``: every
committed config, whether it is exact by construction (:mod:`perceptron_lab.model.exactness`) and why,
and the spread measured for it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
SPREAD_DIR = ROOT / "results" / "spread"
GOLDEN_DIR = ROOT / "results" / "golden"

_ONE = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
_TWO = {"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2", "NUMBA_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
_AVX2 = {"NUMBA_CPU_NAME": "haswell", "OPENBLAS_CORETYPE": "Haswell",
         "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"}
#: The variants: name -> environment of the rerun, on top of the current one with every key below
#: removed first. ``avx2`` is code for an AVX2 x86-64 CPU (numba compiled for Haswell, OpenBLAS's
#: Haswell kernels, which are also AMD Zen's, numpy's loops without their AVX-512 versions);
#: ``host`` is what this CPU selects by itself; the others change one thing from ``avx2``. ``dtype`` is handled apart (an override of ``avx2``).
VARIANTS = {
    "avx2": {**_ONE, **_AVX2},
    "host": dict(_ONE),
    "avx2+threads2": {**_TWO, **_AVX2},
    **{f"avx2+blas={c}": {**_ONE, **_AVX2, "OPENBLAS_CORETYPE": c}
       for c in ("Prescott", "Nehalem", "Sandybridge", "SkylakeX")},
}
_ENV_KEYS = sorted({k for env in VARIANTS.values() for k in env})
DTYPE_VARIANT = "avx2+dtype"
COUNT_METRICS = ("mistakes", "support_vectors", "corrections", "updates")
COLUMNS = ["config", "variant", "environment", "kernels", "overrides", "file", "rows_compared",
           "rows_missing", "rows_differing", "max_abs_diff_test_error_pct", "max_abs_diff_counts",
           "max_rel_diff_counts", "wall_seconds"]


def kernels_used(env: dict) -> str:
    """The CPU numba compiles for and the kernel OpenBLAS reports, under ``env`` (a fresh process)."""
    code = ("import numpy, threadpoolctl, numba.core.config as c\n"
            "blas = sorted({i.get('architecture') or '?' for i in threadpoolctl.threadpool_info()"
            " if i['user_api'] == 'blas'})\n"
            "import llvmlite.binding as ll\n"
            "print('numba=' + (c.CPU_NAME or ll.get_host_cpu_name()) + ' openblas=' + ','.join(blas))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    return out.stdout.strip() or "?"


def variant_env(name: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _ENV_KEYS}
    env.update(VARIANTS[name])
    return env


def _run(config: str, out: Path, overrides: list[str], env: dict) -> float:
    cmd = ["nice", "-n", "15", sys.executable, "-m", "perceptron_lab.cli.main", "run", config, *overrides,
           "--out", str(out), "-q", "--jobs", "1"]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    if res.returncode != 0:
        raise SystemExit(f"plab: error: {' '.join(cmd)} exited {res.returncode}: "
                         f"{(res.stderr.strip().splitlines() or ['?'])[-1]}")
    return time.perf_counter() - t0


def _diff_summary(old: pd.Series, new: pd.Series, counts: pd.Series) -> dict:
    """Rows compared / differing and the largest differences of ``new`` against ``old`` (aligned)."""
    both = old.index.intersection(new.index)
    o, n, c = old.loc[both].astype(float), new.loc[both].astype(float), counts.loc[both]
    d = (n - o).abs()
    err, cnt = d[~c], d[c]
    rel = (cnt / np.maximum(o[c].abs(), 1.0)) if len(cnt) else cnt
    return {"rows_compared": int(len(both)), "rows_missing": int(len(new.index.difference(old.index))),
            "rows_differing": int((d > 0).sum()),
            "max_abs_diff_test_error_pct": float(err.max()) if len(err) else 0.0,
            "max_abs_diff_counts": float(cnt.max()) if len(cnt) else 0.0,
            "max_rel_diff_counts": float(rel.max()) if len(rel) else 0.0}


def compare_results(committed: Path, new: Path) -> dict:
    """``results.csv`` of a rerun against the committed one, row by row."""
    read = lambda p: pd.read_csv(p, dtype=str, keep_default_na=False)  # noqa: E731
    o, n = read(committed), read(new)
    key = [c for c in o.columns if c not in ("grid_point", "value")]
    if o.duplicated(key).any():
        # grid points that differ in a setting no other column names: the grid point is part of
        # the key, which holds for a rerun of the whole grid only
        key = [c for c in o.columns if c != "value"]
    o, n = o.set_index(key)["value"], n.set_index(key)["value"]
    if not o.index.is_unique or not n.index.is_unique:
        raise SystemExit(f"plab: error: {committed}: rows are not unique; compare a rerun of the whole grid")
    counts = pd.Series(n.index.get_level_values("metric").isin(COUNT_METRICS), index=n.index)
    return _diff_summary(o, n, counts)


def compare_search(committed: Path, new: Path) -> dict:
    """``search.csv`` of a rerun against the committed one: the error of each cell's choice, on the
    searches that saw the same number of candidates."""
    o, n = pd.read_csv(committed, keep_default_na=False), pd.read_csv(new, keep_default_na=False)
    value_cols = {"error_pct", "accuracy_pct", "sd_pct", "ci_pct", "n_runs", "grid_point", "chosen", "n_candidates"}
    key = [c for c in o.columns if c not in value_cols]
    o, n = o.set_index(key), n.set_index(key)
    both = o.index.intersection(n.index)
    same = both[(o.loc[both, "n_candidates"].to_numpy() == n.loc[both, "n_candidates"].to_numpy())]
    n = n.loc[same]
    out = _diff_summary(o["error_pct"], n["error_pct"], pd.Series(False, index=n.index))
    out["rows_missing"] = int(len(n.index.difference(o.index)))
    out["choices_differing"] = int((o.loc[same, "chosen"].astype(str) != n["chosen"].astype(str)).sum())
    return out


def compare_nested(committed: Path, new: Path, whole_grid: bool) -> dict:
    """``nested.csv`` (nested cross-validation) of a rerun against the committed one: every row
    after a rerun of the whole grid, the ``nothing`` rows (a single candidate whatever the grid)
    after a rerun of a subset."""
    o, n = pd.read_csv(committed, keep_default_na=False), pd.read_csv(new, keep_default_na=False)
    value_cols = {"error_pct", "accuracy_pct", "sd_pct", "ci_pct", "n_folds", "choices"}
    key = [c for c in o.columns if c not in value_cols]
    if not whole_grid:
        n = n[n["search"].astype(str) == "nothing"]
    o, n = o.set_index(key), n.set_index(key)
    out = _diff_summary(o["error_pct"], n["error_pct"], pd.Series(False, index=n.index))
    both = o.index.intersection(n.index)
    out["choices_differing"] = int((o.loc[both, "choices"].astype(str) != n.loc[both, "choices"].astype(str)).sum())
    return out


def compare_golden(case: str, run_dir: Path) -> dict:
    """A golden case's rerun, aggregated as :func:`perceptron_lab.report.golden.compute` does, against
    ``results/golden/<case>.csv``."""
    from perceptron_lab.report.golden import KEY, aggregate, keyed_values, read_golden

    g = read_golden(GOLDEN_DIR / f"{case}.csv")
    n = aggregate(pd.read_csv(run_dir / "results.csv", keep_default_na=False, dtype={k: str for k in KEY}))
    g, n = keyed_values(g), keyed_values(n)
    counts = pd.Series(n.index.get_level_values("metric") != "test_error_pct", index=n.index)
    return _diff_summary(g, n, counts)


def _config_name(config: str) -> str:
    p = Path(config)
    return f"{p.parent.name}_{p.stem}"


def measure(config: str, variants: list[str], overrides: list[str]) -> pd.DataFrame:
    """Rerun ``config`` under each variant and compare with its committed outputs (one row per
    variant and compared file)."""
    from perceptron_lab.config.load import load_config

    cfg = load_config(ROOT / config)
    committed = committed_dir(config)
    golden_case = Path(config).stem if Path(config).parent.name == "golden" else None
    if committed is None and golden_case is None:
        raise SystemExit(f"plab: error: {config}: no committed run to compare with (neither a golden case nor a "
                         "config make reproduce writes under results/: perceptron_lab/cli/reproduce.py RESULTS_DIRS)")
    rows = []
    for name in variants:
        sets = list(overrides)
        if name == DTYPE_VARIANT:
            other = "float32" if cfg.training.dtype == "float64" else "float64"
            sets.append(f"training.dtype={other}")
            env, label = variant_env("avx2"), f"avx2+dtype={other}"
        else:
            env, label = variant_env(name), name
        tmp = Path(tempfile.mkdtemp(prefix="plab-spread-"))
        try:
            wall = _run(config, tmp / "run", sets, env)
            base = {"config": config, "variant": label,
                    "environment": " ".join(f"{k}={env[k]}" for k in _ENV_KEYS if k in env),
                    "kernels": kernels_used(env), "overrides": " ".join(sets), "wall_seconds": round(wall, 1)}
            if golden_case:
                rows.append({**base, "file": f"results/golden/{golden_case}.csv",
                             **compare_golden(golden_case, tmp / "run")})
            if committed is not None and (committed / "results.csv").exists():
                rows.append({**base, "file": str((committed / "results.csv").relative_to(ROOT)),
                             **compare_results(committed / "results.csv", tmp / "run" / "results.csv")})
            if committed is not None and (committed / "search.csv").exists() and (tmp / "run" / "search.csv").exists():
                rows.append({**base, "file": str((committed / "search.csv").relative_to(ROOT)),
                             **compare_search(committed / "search.csv", tmp / "run" / "search.csv")})
            if committed is not None and (committed / "nested.csv").exists() and (tmp / "run" / "nested.csv").exists():
                rows.append({**base, "file": str((committed / "nested.csv").relative_to(ROOT)),
                             **compare_nested(committed / "nested.csv", tmp / "run" / "nested.csv", not overrides)})
            print(f"{config} [{label}] {wall:.0f} s: "
                  + "; ".join(f"{Path(r['file']).name} {r['rows_differing']}/{r['rows_compared']} differ, "
                              f"max {r['max_abs_diff_test_error_pct']:g} pts, counts {r['max_abs_diff_counts']:g}"
                              for r in rows if r["variant"] == label), flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    df = pd.DataFrame(rows)
    return df.reindex(columns=COLUMNS + [c for c in df.columns if c not in COLUMNS])


def write(config: str, df: pd.DataFrame, append: bool = False) -> Path:
    """Write (or, with ``append``, add to) ``results/spread/<config>.csv`` and refresh summary.csv."""
    SPREAD_DIR.mkdir(parents=True, exist_ok=True)
    path = SPREAD_DIR / f"{_config_name(config)}.csv"
    if append and path.exists():
        old = pd.read_csv(path, keep_default_na=False)
        df = pd.concat([old[~old.set_index(["variant", "overrides", "file"]).index.isin(
            df.set_index(["variant", "overrides", "file"]).index)], df], ignore_index=True)
    df.to_csv(path, index=False, lineterminator="\n", float_format="%.6g")
    parts = [pd.read_csv(p, keep_default_na=False) for p in sorted(SPREAD_DIR.glob("*.csv"))
             if p.name not in ("summary.csv", "exactness.csv")]
    pd.concat(parts, ignore_index=True).to_csv(SPREAD_DIR / "summary.csv", index=False, lineterminator="\n",
                                               float_format="%.6g")
    return path


def read_spread(config: str | None = None) -> pd.DataFrame:
    """The measured spread rows (all, or one config's), empty when none were measured."""
    path = SPREAD_DIR / ("summary.csv" if config is None else f"{_config_name(config)}.csv")
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    return pd.read_csv(path, keep_default_na=False)


def committed_dir(config: str) -> Path | None:
    """The committed run folder of ``config`` (``configs/...yaml``): where ``make reproduce``
    writes it (:data:`perceptron_lab.cli.reproduce.RESULTS_DIRS`), or None for a config it does not run."""
    from perceptron_lab.errors import UsageError
    from perceptron_lab.cli.reproduce import results_dir

    try:
        return ROOT / results_dir(config)
    except UsageError:
        return None


def committed_configs() -> list[str]:
    """Every config whose run is committed under results/ (the folder make reproduce writes for it
    holds a run.json), and the golden cases."""
    from perceptron_lab.cli.reproduce import RESULTS_DIRS

    golden = [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "configs" / "golden").glob("*.yaml"))]
    return sorted(golden + [c for c, d in RESULTS_DIRS.items() if (ROOT / d / "run.json").exists()])


def exactness_table(configs=None, data_dir=None) -> pd.DataFrame:
    """One row per committed config: exact by construction or not, why, and the spread measured
    for it (machine variants; the dtype variant apart). Written to results/spread/exactness.csv."""
    from perceptron_lab.config.load import load_config
    from perceptron_lab.model.exactness import exactness
    from perceptron_lab.run.inputs import read_inputs

    summary = read_spread()
    rows = []
    for config in configs or committed_configs():
        cfg = load_config(ROOT / config)
        ds, _ = read_inputs(cfg, data_dir, False)
        e = exactness(cfg, ds.X_train, ds.X_test)
        s = summary[summary["config"] == config] if len(summary) else summary
        machine = s[~s["variant"].astype(str).str.contains("dtype")] if len(s) else s
        dt = s[s["variant"].astype(str).str.contains("dtype")] if len(s) else s
        rows.append({"config": config, "exact_by_construction": e["exact_by_construction"], "reason": e["reason"],
                     "variants_measured": len(set(machine["variant"])) if len(machine) else 0,
                     "rows_compared": int(machine["rows_compared"].max()) if len(machine) else "",
                     "rows_differing": int(machine["rows_differing"].max()) if len(machine) else "",
                     "max_abs_diff_test_error_pct": float(machine["max_abs_diff_test_error_pct"].max())
                     if len(machine) else "",
                     "max_abs_diff_counts": float(machine["max_abs_diff_counts"].max()) if len(machine) else "",
                     "dtype_rows_differing": int(dt["rows_differing"].max()) if len(dt) else "",
                     "dtype_max_abs_diff_test_error_pct": float(dt["max_abs_diff_test_error_pct"].max())
                     if len(dt) else ""})
    return pd.DataFrame(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="*", help="config files, relative to the project root")
    ap.add_argument("--exactness", action="store_true",
                    help="write results/spread/exactness.csv (every committed config) and stop")
    ap.add_argument("--data-dir", default=os.environ.get("PLAB_DATA"))
    ap.add_argument("--variants", nargs="+", default=[*VARIANTS, DTYPE_VARIANT],
                    choices=[*VARIANTS, DTYPE_VARIANT])
    ap.add_argument("--set", dest="overrides", action="append", default=[],
                    help="KEY=VALUE override for every rerun (e.g. a subset of the grid)")
    ap.add_argument("--append", action="store_true", help="add to the config's spread file")
    args = ap.parse_args(argv)
    if args.exactness:
        SPREAD_DIR.mkdir(parents=True, exist_ok=True)
        table = exactness_table(args.configs or None, args.data_dir)
        table.to_csv(SPREAD_DIR / "exactness.csv", index=False, lineterminator="\n", float_format="%.6g")
        print(f"wrote results/spread/exactness.csv ({len(table)} configs, "
              f"{int(table['exact_by_construction'].sum())} exact by construction)")
        return
    for config in args.configs:
        df = measure(config, args.variants, args.overrides)
        print("wrote", write(config, df, append=args.append).relative_to(ROOT), flush=True)


if __name__ == "__main__":
    main()
