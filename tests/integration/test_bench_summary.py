"""``results/bench/summary.md`` states the machines its numbers were measured on
(``benchmarks/summary.py``): the CPU, cores and float32 GEMM rate of the case CSVs' own rows, never
those of the machine that rewrites the summary (``python -m benchmarks --summary-only`` used to
measure its own GEMM rate and CPU and print them as the machine of every case)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd

from benchmarks import common, run

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "results" / "bench"


def _copy_cases(tmp_path: Path) -> Path:
    out = tmp_path / "bench"
    out.mkdir()
    for case in common.CASES:
        if (BENCH / f"{case.file}.csv").exists():
            shutil.copy(BENCH / f"{case.file}.csv", out)
    return out


def _summary_only(out: Path, monkeypatch, gflops: float = 9999.0) -> str:
    """``--summary-only`` on a machine that is not any of the measured ones."""
    monkeypatch.setattr(run, "gemm_gflops", lambda n=0, repeats=0: gflops)
    monkeypatch.setattr(run, "machine", lambda gf: {"cpu": "Elsewhere CPU", "cores": 64, "blas": "other BLAS",
                                                    "gemm_gflops": gf, "versions": "numpy 0", "date": "2099-01-01"})
    run.main(["--summary-only", "--out", str(out)])
    return (out / "summary.md").read_text(encoding="utf-8")


def _rows(out: Path) -> pd.DataFrame:
    frames = []
    for case in common.CASES:
        p = out / f"{case.file}.csv"
        if p.exists():
            frames.append(pd.read_csv(p).assign(case_number=case.number, case_file=case.file))
    return pd.concat(frames, ignore_index=True)


def _gemm_text(values) -> str:
    lo, hi = f"{min(values):.0f}", f"{max(values):.0f}"
    return lo if lo == hi else f"{lo}–{hi}"


def test_summary_only_states_the_machines_of_the_rows_not_its_own(tmp_path, monkeypatch):
    out = _copy_cases(tmp_path)
    text = _summary_only(out, monkeypatch)
    assert "Elsewhere" not in text and "9999" not in text and "2099" not in text
    rows = _rows(out)
    rows = rows[rows["cpu"].notna()] if "cpu" in rows else rows.iloc[:0]
    head = text.split("\nRatios compare")[0]
    # the machine paragraph: each machine of the rows with its own GEMM rates and cases, no other
    named = re.findall(r"^(?:- |Machine: )(.+?), (\d+) cores; .*?float32 GEMM ([\d–]+) GFLOP/s.*?\(cases? ([\d, ]+)",
                       head, re.M)
    assert named, head
    machines = {(c, str(int(k))): part for (c, k), part in rows.groupby(["cpu", "cores"])}
    assert {(c, k) for c, k, _, _ in named} == set(machines)
    for cpu, cores, gemm, cases in named:
        part = machines[(cpu, cores)]
        assert gemm == _gemm_text(part["gemm_gflops"].dropna()), (cpu, gemm)
        assert sorted(int(x) for x in cases.strip(", ").split(", ")) == sorted(set(part["case_number"]))
    # each case's section: the CPU and GEMM rate of its own rows
    for f, part in rows.groupby("case_file"):
        line = next(x for x in text.splitlines() if x.startswith(f"`{f}.csv`, measured"))
        for cpu, p in part.groupby("cpu"):
            assert f"on {cpu} (float32 GEMM {_gemm_text(p['gemm_gflops'].dropna())} GFLOP/s)" in line \
                or f", {cpu} (float32 GEMM {_gemm_text(p['gemm_gflops'].dropna())} GFLOP/s)" in line, line


def test_the_summary_is_the_same_wherever_it_is_written(tmp_path, monkeypatch):
    out = _copy_cases(tmp_path)
    first = _summary_only(out, monkeypatch)
    assert _summary_only(out, monkeypatch, gflops=1.0) == first


def test_one_machine_is_named_once(tmp_path, monkeypatch):
    out = _copy_cases(tmp_path)
    for p in out.glob("*.csv"):      # only the AMD EPYC cases
        t = pd.read_csv(p)
        if "cpu" not in t or (t["cpu"] != "AMD EPYC").any():
            p.unlink()
    text = _summary_only(out, monkeypatch)
    rows = _rows(out)
    line = next(x for x in text.splitlines() if x.startswith("Machine"))
    assert line.startswith("Machine: AMD EPYC, 2 cores; ")
    assert f"float32 GEMM {_gemm_text(rows['gemm_gflops'].dropna())} GFLOP/s" in line


def test_the_committed_summary_names_the_measured_machines():
    """results/bench/summary.md was written from the committed case CSVs as they are."""
    text = (BENCH / "summary.md").read_text(encoding="utf-8")
    rows = _rows(BENCH)
    for cpu, part in rows[rows["cpu"].notna()].groupby("cpu"):
        assert f"{cpu}, " in text and f"float32 GEMM {_gemm_text(part['gemm_gflops'].dropna())} GFLOP/s" in text


def test_a_damaged_case_csv_stops_the_summary(tmp_path, monkeypatch, capsys):
    """A case CSV cut short used to be summarized from the rows that survived, exit 0."""
    out = _copy_cases(tmp_path)
    (out / "summary.md").write_text("# Benchmarks\n\nthe earlier summary\n")
    victim = out / "kernel_poly4.csv"
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    import pytest

    with pytest.raises(SystemExit) as exc:
        _summary_only(out, monkeypatch)
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert exc.value.code == 1 and len(err) == 1 and err[0].startswith("plab: error: ") and "kernel_poly4.csv" in err[0]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
