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

The variants (:data:`VARIANTS`) are the x86-64 machines that one CPU can stand in for: ``avx2``
runs the code an AVX2 CPU runs (numba compiled for Haswell with Haswell's features, OpenBLAS's
Haswell kernels, which are also AMD Zen's, numpy without its AVX-512 loops); ``generic`` the
x86-64 baseline (numba's generic CPU: SSE2, no FMA; OpenBLAS's SSE3 kernel; glibc's math without
its AVX2 and FMA variants); ``host`` is what this CPU picks by itself (on an AVX-512 CPU, its
AVX-512 code); ``avx2+blas=NAME`` changes only OpenBLAS's kernel (``OPENBLAS_CORETYPE``: SSE3
``Prescott``, SSE4.2 ``Nehalem``, AVX ``Sandybridge``, AVX-512 ``SkylakeX``; OpenBLAS is
DYNAMIC_ARCH, bundled with numpy); ``avx2+threads2`` and ``host+threads2`` run two BLAS, OpenMP and
numba threads instead of one; ``avx2+dtype`` flips ``training.dtype`` between float32 and
float64, which is a different computation, not another machine, and is reported apart.

Each variant writes one row to ``results/spread/<config>.csv``: the variant, its environment and
the kernel OpenBLAS reports it used, the rows compared, the rows that differ and the largest
absolute difference of test errors (percentage points) and of counts (mistakes, support vectors,
corrections), per compared file. A value that is NaN (or not a number) on one side and a number
(or another text) on the other is a difference, of size ``inf``; NaN on both sides is the same
value. ``results/spread/summary.csv`` gathers every config's rows.

Measurements are never lost: a run replaces the rows it has just measured (the same config,
variant, overrides and compared file) and keeps every other row of the config's file, wherever
it stands (``--append`` is that behaviour, kept as a name), and ``summary.csv`` is merged the
same way. ``--exactness CONFIG ...`` replaces
those configs' rows of ``exactness.csv`` and keeps the others. A committed file that cannot be
read back whole stops the tool with one ``plab: error:`` line before anything is written.

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

from perceptron_lab.errors import PlabError
from perceptron_lab.run.store import atomic_write_text, read_back_csv

ROOT = Path(__file__).resolve().parents[2]
SPREAD_DIR = ROOT / "results" / "spread"
GOLDEN_DIR = ROOT / "results" / "golden"

_ONE = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
_TWO = {"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2", "NUMBA_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
#: ``NUMBA_CPU_FEATURES`` empty: the named CPU's own features (numba takes the host's features
#: whatever the CPU name when it is unset, so ``haswell`` alone would still compile AVX-512 code).
_AVX2 = {"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": "", "OPENBLAS_CORETYPE": "Haswell",
         "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"}
#: The x86-64 baseline: numba's generic CPU (SSE2, no FMA), OpenBLAS's SSE3 kernel, numpy's baseline
#: loops (X86_V2, which numpy cannot disable), glibc's math without its AVX2/FMA variants.
_GENERIC = {"NUMBA_CPU_NAME": "generic", "NUMBA_CPU_FEATURES": "", "OPENBLAS_CORETYPE": "Prescott",
            "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
            "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2,-FMA,-AVX512F,-AVX_Usable,-AVX2_Usable,-FMA_Usable"}
#: The variants: name -> environment of the rerun, on top of the current one with every key below
#: removed first. ``avx2`` is code for an AVX2 x86-64 CPU (numba compiled for Haswell, OpenBLAS's
#: Haswell kernels, which are also AMD Zen's, numpy's loops without their AVX-512 versions);
#: ``generic`` the x86-64 baseline (:data:`_GENERIC`); ``host`` is what this CPU selects by itself;
#: the others change one thing from ``avx2`` or ``host``. ``dtype`` is handled apart (an override of ``avx2``).
VARIANTS = {
    "avx2": {**_ONE, **_AVX2},
    "host": dict(_ONE),
    "generic": {**_ONE, **_GENERIC},
    "avx2+threads2": {**_TWO, **_AVX2},
    "host+threads2": dict(_TWO),
    **{f"avx2+blas={c}": {**_ONE, **_AVX2, "OPENBLAS_CORETYPE": c}
       for c in ("Prescott", "Nehalem", "Sandybridge", "SkylakeX")},
}
_ENV_KEYS = sorted({k for env in VARIANTS.values() for k in env})
DTYPE_VARIANT = "avx2+dtype"
COUNT_METRICS = ("mistakes", "support_vectors", "corrections", "updates")
COLUMNS = ["config", "variant", "environment", "kernels", "overrides", "file", "rows_compared",
           "rows_missing", "rows_differing", "max_abs_diff_test_error_pct", "max_abs_diff_counts",
           "max_rel_diff_counts", "wall_seconds"]
#: What one measurement row is of: a row with the same key is the same measurement, done again.
KEY = ["config", "variant", "overrides", "file"]
#: What to do about a spread file that cannot be read back.
SPREAD_FIX = "restore it (git checkout -- FILE) before measuring again; nothing was written"


def kernels_used(env: dict) -> str:
    """The CPU numba compiles for and the kernel OpenBLAS reports, under ``env`` (a fresh process)."""
    code = ("import numpy, threadpoolctl, numba.core.config as c\n"
            "blas = sorted({i.get('architecture') or '?' for i in threadpoolctl.threadpool_info()"
            " if i['user_api'] == 'blas'})\n"
            "import llvmlite.binding as ll\n"
            "print('numba=' + (c.CPU_NAME or ll.get_host_cpu_name())"
            " + ('' if c.CPU_FEATURES is None else '(own features)') + ' openblas=' + ','.join(blas))")
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


def differences(old: pd.Series, new: pd.Series) -> pd.Series:
    """``|new - old|`` of aligned values (numbers or their text): 0 where they are the same value,
    NaN on both sides included (``nan``, ``NaN``, an empty cell: the same missing value); ``inf``
    where one side is NaN or not a number and the other is not the same (a comparison with NaN is
    false, so ``d > 0`` alone would count such a row as equal)."""
    o, n = pd.to_numeric(old, errors="coerce"), pd.to_numeric(new, errors="coerce")
    text = lambda v: v.astype(str).str.strip().str.lower().replace({"": "nan"})   # noqa: E731
    with np.errstate(invalid="ignore"):
        d = (n - o).abs()
    same_missing = o.isna() & n.isna() & (text(old) == text(new))
    d = d.where(~(o.isna() | n.isna() | d.isna()), np.inf)   # NaN or text on a side, or inf - inf
    d = d.where(~((o == n) | same_missing), 0.0)            # the same number, or the same missing value
    return d.astype(float)


def _diff_summary(old: pd.Series, new: pd.Series, counts: pd.Series) -> dict:
    """Rows compared / differing and the largest differences of ``new`` against ``old`` (aligned;
    :func:`differences`, so NaN against a number counts, with size ``inf``)."""
    both = old.index.intersection(new.index)
    o, c = pd.to_numeric(old.loc[both], errors="coerce"), counts.loc[both].astype(bool)
    d = differences(old.loc[both], new.loc[both])
    err, cnt = d[~c], d[c]
    rel = (cnt / np.maximum(o[c].abs().fillna(1.0), 1.0)) if len(cnt) else cnt
    return {"rows_compared": int(len(both)), "rows_missing": int(len(new.index.difference(old.index))),
            "rows_differing": int((d > 0).sum()),
            "max_abs_diff_test_error_pct": float(err.max()) if len(err) else 0.0,
            "max_abs_diff_counts": float(cnt.max()) if len(cnt) else 0.0,
            "max_rel_diff_counts": float(rel.max()) if len(rel) else 0.0}


def _read(path: Path) -> pd.DataFrame:
    """A CSV plab wrote, every cell as text, read back whole (one ``plab: error:`` line otherwise)."""
    return read_back_csv(path, fix=SPREAD_FIX.replace("FILE", str(path)))


def compare_results(committed: Path, new: Path) -> dict:
    """``results.csv`` of a rerun against the committed one, row by row."""
    o, n = _read(committed), _read(new)
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
    o, n = _read(committed), _read(new)
    value_cols = {"error_pct", "accuracy_pct", "sd_pct", "ci_pct", "n_runs", "grid_point", "chosen", "n_candidates"}
    key = [c for c in o.columns if c not in value_cols]
    o, n = o.set_index(key), n.set_index(key)
    both = o.index.intersection(n.index)
    same = both[(differences(o.loc[both, "n_candidates"], n.loc[both, "n_candidates"]) == 0).to_numpy()]
    n = n.loc[same]
    out = _diff_summary(o["error_pct"], n["error_pct"], pd.Series(False, index=n.index))
    out["rows_missing"] = int(len(n.index.difference(o.index)))
    out["choices_differing"] = int((o.loc[same, "chosen"].astype(str) != n["chosen"].astype(str)).sum())
    return out


def compare_nested(committed: Path, new: Path, whole_grid: bool) -> dict:
    """``nested.csv`` (nested cross-validation) of a rerun against the committed one: every row
    after a rerun of the whole grid, the ``nothing`` rows (a single candidate whatever the grid)
    after a rerun of a subset."""
    o, n = _read(committed), _read(new)
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


def _as_text(df: pd.DataFrame) -> pd.DataFrame:
    """New rows as the text the file will hold (floats as ``%.6g``), so that old rows, read back
    as text, are written again byte for byte."""
    import io

    text = df.to_csv(index=False, lineterminator="\n", float_format="%.6g")
    return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)


def merge_rows(old: pd.DataFrame, new: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """``old`` with the rows whose ``key`` ``new`` holds replaced where they stood (by ``new``'s
    rows of that key); ``new``'s other rows after the last row of ``old`` with the same first key
    (the same config), else at the end; every other row of ``old`` kept as it was. Columns:
    ``old``'s, then ``new``'s others. Both hold text."""
    cols = list(old.columns) + [c for c in new.columns if c not in old.columns]
    old, new = old.reindex(columns=cols, fill_value=""), new.reindex(columns=cols, fill_value="")
    keys_new = list(zip(*(new[k] for k in key)))
    by_key: dict = {}
    for i, k in enumerate(keys_new):
        by_key.setdefault(k, []).append(i)
    keys_old = list(zip(*(old[k] for k in key)))
    fresh = [k for k in by_key if k not in set(keys_old)]
    last_of = {k[0]: i for i, k in enumerate(keys_old)}     # the last old row of each first key
    after: dict = {}
    for k in fresh:
        after.setdefault(last_of.get(k[0], len(keys_old) - 1), []).extend(by_key[k])
    out, done = [new.iloc[after.pop(-1)]] if -1 in after else [], set()
    for i, k in enumerate(keys_old):
        if k not in by_key:
            out.append(old.iloc[[i]])
        elif k not in done:
            out.append(new.iloc[by_key[k]])
            done.add(k)
        if i in after:
            out.append(new.iloc[after[i]])
    return pd.concat(out, ignore_index=True) if out else new.iloc[:0]


def _write_csv(path: Path, df: pd.DataFrame) -> None:
    atomic_write_text(path, df.to_csv(index=False, lineterminator="\n"))


def write(config: str, df: pd.DataFrame, append: bool = True, spread_dir: Path | None = None) -> Path:
    """Merge the rows just measured into ``results/spread/<config>.csv`` and into summary.csv
    (:func:`merge_rows`: the same config, variant, overrides and file replaced, every other row
    kept as it was; a missing summary.csv is built from every config's file). Every
    file is read back first: a damaged one stops it (:class:`~perceptron_lab.errors.DamagedFileError`)
    before anything is written. ``append`` is accepted for the old interface: there is no other
    way now (a run without ``--append`` used to overwrite the file with its own rows)."""
    spread_dir = Path(spread_dir or SPREAD_DIR)
    spread_dir.mkdir(parents=True, exist_ok=True)
    path = spread_dir / f"{_config_name(config)}.csv"
    new = _as_text(df)
    merged = merge_rows(_read(path), new, KEY) if path.exists() else new
    summary_path = spread_dir / "summary.csv"
    if summary_path.exists():
        # the rows just measured replace theirs; every other row stays as it was, the rows of
        # configs whose own file is gone included
        summary = merge_rows(_read(summary_path), new, KEY)
    else:
        files = sorted({*spread_dir.glob("*.csv"), path} - {summary_path, spread_dir / "exactness.csv"})
        parts = [merged if p == path else _read(p) for p in files]
        cols = list(dict.fromkeys(c for p in parts for c in p.columns))
        summary = pd.concat([p.reindex(columns=cols, fill_value="") for p in parts], ignore_index=True)
    _write_csv(path, merged)
    _write_csv(summary_path, summary)
    return path


def read_spread(config: str | None = None) -> pd.DataFrame:
    """The measured spread rows (all, or one config's), empty when none were measured."""
    path = SPREAD_DIR / ("summary.csv" if config is None else f"{_config_name(config)}.csv")
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    _read(path)   # whole, or one plab: error: line
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
    ap.add_argument("--append", action="store_true",
                    help="(the default now) keep the rows of the config's spread file that this run does not measure")
    args = ap.parse_args(argv)
    try:
        if args.exactness:
            path = write_exactness(exactness_table(args.configs or None, args.data_dir))
            table = _read(path)
            print(f"wrote {path} ({len(table)} configs, "
                  f"{int((table['exact_by_construction'] == 'True').sum())} exact by construction)")
            return
        for config in args.configs:
            df = measure(config, args.variants, args.overrides)
            path = write(config, df)
            print("wrote", path.relative_to(ROOT) if path.is_relative_to(ROOT) else path, flush=True)
    except PlabError as exc:
        print(f"plab: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)


def write_exactness(table: pd.DataFrame, spread_dir: Path | None = None) -> Path:
    """Merge ``table`` into ``exactness.csv`` by config: the configs it holds replaced, every other
    config's row kept (``--exactness CONFIG`` used to leave only that config's row)."""
    spread_dir = Path(spread_dir or SPREAD_DIR)
    spread_dir.mkdir(parents=True, exist_ok=True)
    path = spread_dir / "exactness.csv"
    new = _as_text(table)
    _write_csv(path, merge_rows(_read(path), new, ["config"]) if path.exists() else new)
    return path


if __name__ == "__main__":
    main()
