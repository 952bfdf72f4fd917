"""Case 13: the peak memory of the headline run, ``plab run configs/mnist_d4.yaml`` (Freund &
Schapire Table 1, d = 4: full MNIST, every permutation, T = 30), run as a user runs it: one
``plab run`` with every default, in a child process of its own.

``python -m benchmarks --cases memory [--baseline REV]``

The peak is the kernel's record of the child's largest resident set (``ru_maxrss`` from
``os.wait4``), in GB of 10^9 bytes; the run's own record (``peak_rss_gb_per_process`` in its
``run.json``) is given beside it. Rows, in this order:

* with ``--baseline REV``: the code of that revision (its files taken with ``git archive``, imported
  ahead of the installed package), every default;
* this checkout, every default: the row the target (:data:`TARGET_GB`) is checked on;
* this checkout with ``PLAB_SHARED_COLUMNS_GB=1``, the setting docs/troubleshooting.md gives for
  trading memory for time (a run keeps up to 1 GB of other runs' kernel columns; by default it
  keeps none).

Each version first runs the same config on :data:`WARM_UP_TRAIN` examples, untimed, so that no
row's wall time holds compilation: the baseline with a numba cache of its own, this checkout with
the cache it always uses (already warm when the package has run before). Each row gives the run's
training and evaluation seconds summed over its units (``timings.json``) and the SHA-256 of its
``results.csv``: the rows compute the same numbers, so the hashes agree (``same_results``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

from .coldstart import _checkout, head_label
from .machine import load_average, spawn

ROOT = Path(__file__).resolve().parents[1]

#: The headline run's peak memory target with every default, in GB (10^9 bytes).
TARGET_GB = 4.0
#: Training examples of each version's untimed warm-up run (the same config otherwise).
WARM_UP_TRAIN = 300
#: The documented setting that trades memory for time (docs/troubleshooting.md, "Memory").
TRADE_ENV = {"PLAB_SHARED_COLUMNS_GB": "1"}

# A child: ``plab run`` from the code in ``argv[1]`` (empty: the installed package).
_CHILD = ("import sys\n"
          "from benchmarks.coldstart import plab_command, use_source\n"
          "use_source(sys.argv[1] or None)\n"
          "plab_command()(sys.argv[2:], prog_name='plab')\n")


def _config(root: Path, folder: Path, name: str, overrides: list[str]) -> Path:
    """The headline config of the code under ``root``, extended by ``overrides`` (YAML lines)."""
    headline = root / "perceptron_lab" / "configs" / "mnist_d4.yaml"
    if not overrides:
        return headline
    path = folder / f"{name}.yaml"
    path.write_text("\n".join([f"extends: {headline}", f"name: {name}"] + overrides) + "\n")
    return path


def _size_lines(train_size: int | None, epochs: float | None, permutations: int | None) -> list[str]:
    lines = []
    if train_size:
        lines += ["dataset:", "  name: mnist", f"  train_size: {train_size}"]
    if epochs is not None or permutations is not None:
        lines += ["training:"]
        if epochs is not None:
            cps = [c for c in (0.1, 1, 2, 3, 4, 10, 30) if c < epochs] + [epochs]
            lines += [f"  epochs: {epochs:g}", f"  checkpoints: {cps}"]
        if permutations is not None:
            lines += [f"  permutations: {permutations}"]
    return lines


def _run(src: str | None, cfg: Path, out: Path, data_dir, env: dict) -> tuple:
    env = dict(env, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p))
    cmd = [sys.executable, "-c", _CHILD, src or "", "run", str(cfg), "--out", str(out), "-q", "--force"]
    if data_dir:
        cmd += ["--data-dir", str(data_dir)]
    return spawn(cmd, env=env)


def _row(code: str, setting: str, res: tuple, out: Path, load) -> dict:
    exit_code, wall, peak_mb, log = res
    row = {"code": code, "setting": setting, "wall_s": round(wall, 2), "load_avg": load}
    if exit_code != 0:
        return dict(row, status=f"failed (exit {exit_code}): {log.strip().splitlines()[-1] if log.strip() else ''}")
    info = json.loads((out / "run.json").read_text())
    timings = json.loads((out / "timings.json").read_text())
    data = (out / "results.csv").read_bytes()
    return dict(row, status="ok",
                # spawn's MB are ru_maxrss kilobytes / 1000; kilobytes of 1024 bytes
                peak_rss_gb=round(peak_mb * 1e3 * 1024 / 1e9, 3),
                run_json_peak_gb=info.get("peak_rss_gb_per_process"),
                n_train=(info.get("dataset") or {}).get("n_train"), units=len(timings),
                train_s=round(sum(t["train_seconds"] for t in timings.values()), 2),
                eval_s=round(sum(t["eval_seconds"] for t in timings.values()), 2),
                results_sha256=hashlib.sha256(data).hexdigest()[:16], target_gb=TARGET_GB)


def _with_cache(env: dict, cache: str | None) -> dict:
    """``env`` with numba's cache folder set to ``cache`` (None: as ``env`` has it)."""
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    return env


def run(baseline: str | None, data_dir, runs_dir: Path, train_size: int | None = None,
        epochs: float | None = None, permutations: int | None = None) -> list[dict]:
    """The rows of case 13 (see the module's docstring). ``train_size``, ``epochs`` and
    ``permutations`` shrink the run (a smoke test, not the measurement)."""
    head = head_label()
    size = _size_lines(train_size, epochs, permutations)
    load = load_average()
    rows = []
    with contextlib.ExitStack() as stack:
        versions = [(f"after ({head})", None)]
        if baseline:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            versions.insert(0, (f"before ({_checkout(baseline, tmp)})", str(tmp)))
        cfg_dir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        caches = {code: stack.enter_context(tempfile.TemporaryDirectory()) if src else None for code, src in versions}
        tasks = [(code, src, "every default", {}) for code, src in versions]
        tasks.append((versions[-1][0], None, "PLAB_SHARED_COLUMNS_GB=1", TRADE_ENV))
        for v, (code, src) in enumerate(versions):   # compile first, untimed
            root = Path(src) if src else ROOT
            warm = _config(root, cfg_dir, f"warm{v}", _size_lines(WARM_UP_TRAIN, 1, 1))
            res = _run(src, warm, runs_dir / f"warm-{v}", data_dir, _with_cache(dict(os.environ), caches[code]))
            if res[0] != 0:
                raise RuntimeError(f"bench: the warm-up of {code} failed (exit {res[0]}):\n{res[3][-3000:]}")
        for k, (code, src, setting, extra) in enumerate(tasks):
            root = Path(src) if src else ROOT
            cfg = _config(root, cfg_dir, f"headline{k}", size)
            out = runs_dir / f"headline-{k}"
            # every default: not the caller's own setting of it either
            env = {k: v for k, v in os.environ.items() if k not in TRADE_ENV}
            env = _with_cache(env, caches[code])
            env.update(extra)
            rows.append(_row(code, setting, _run(src, cfg, out, data_dir, env), out, load))
    first = next((r.get("results_sha256") for r in rows if r.get("status") == "ok"), None)
    for r in rows:
        r["same_results"] = r.get("results_sha256") == first if r.get("status") == "ok" else None
    return rows
