"""The spread tool's bookkeeping (``perceptron_lab/cli/spread.py``): a NaN is a difference, and a
measurement never deletes the rows it did not just recompute. Every case works on copies of the
committed ``results/spread/`` files in ``tmp_path``."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from perceptron_lab.cli import spread

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "results" / "spread"


def _results(values, metrics=None):
    n = len(values)
    return pd.DataFrame({"dataset": "d", "grid_point": range(n), "fold": range(n), "epoch": 1, "rule": "last",
                         "class": "all", "metric": metrics or ["test_error_pct"] * n, "value": values})


# ----------------------------------------------------------------------------- NaN is a difference


def test_a_nan_against_a_number_is_a_difference_of_size_inf(tmp_path):
    old = _results(["10.5", "20", "nan", "nan", "7", "3", "inf"], ["test_error_pct"] * 5 + ["mistakes", "mistakes"])
    new = old.copy()
    # NaN where a number was, a number where NaN was, NaN on both sides, the same number, a count
    # turned NaN, the same infinity
    new["value"] = ["nan", "20.0", "11", "NaN", "7", "nan", "inf"]
    old.to_csv(tmp_path / "old.csv", index=False)
    new.to_csv(tmp_path / "new.csv", index=False)
    out = spread.compare_results(tmp_path / "old.csv", tmp_path / "new.csv")
    assert out["rows_compared"] == 7 and out["rows_differing"] == 3
    assert math.isinf(out["max_abs_diff_test_error_pct"]) and math.isinf(out["max_abs_diff_counts"])


def test_a_choice_or_error_that_became_nan_is_counted_in_the_searches(tmp_path):
    cols = dict(search=["nothing", "tau"], rule="last", normalized="false", epoch=100, accuracy_pct=0, sd_pct=0,
                ci_pct=0, n_runs=10, grid_point=0, chosen="tau=0", n_candidates=[1, 7])
    pd.DataFrame({**cols, "error_pct": [5.0, 4.0]}).to_csv(tmp_path / "old.csv", index=False)
    pd.DataFrame({**cols, "error_pct": [5.0, float("nan")]}).to_csv(tmp_path / "new.csv", index=False)
    out = spread.compare_search(tmp_path / "old.csv", tmp_path / "new.csv")
    assert out["rows_compared"] == 2 and out["rows_differing"] == 1 and math.isinf(out["max_abs_diff_test_error_pct"])
    ncols = dict(search=["nothing", "tau"], rule="last", normalized="false", epoch=100, accuracy_pct=0, sd_pct=0,
                 ci_pct=0, n_folds=10, choices="tau=0 x10")
    pd.DataFrame({**ncols, "error_pct": [float("nan"), 4.0]}).to_csv(tmp_path / "old.csv", index=False)
    pd.DataFrame({**ncols, "error_pct": [3.0, 4.0]}).to_csv(tmp_path / "new.csv", index=False)
    out = spread.compare_nested(tmp_path / "old.csv", tmp_path / "new.csv", whole_grid=True)
    assert out["rows_differing"] == 1 and math.isinf(out["max_abs_diff_test_error_pct"])


def test_differences_of_equal_values_are_zero_whatever_their_text():
    old = pd.Series(["0.1", "1e3", "", "NaN", "x"])
    new = pd.Series(["0.10", "1000", "nan", "nan", "x"])
    assert spread.differences(old, new).tolist() == [0.0] * 5
    assert spread.differences(pd.Series(["x"]), pd.Series(["y"])).tolist() == [math.inf]


# ----------------------------------------------------------------------------- no measurement lost


def _copy_spread(tmp_path: Path) -> Path:
    d = tmp_path / "spread"
    shutil.copytree(COMMITTED, d)
    return d


def _config_with_two_variants() -> tuple[str, str]:
    """A committed config whose spread file holds several variants, and that file's name."""
    for p in sorted(COMMITTED.glob("*.csv")):
        if p.name in ("summary.csv", "exactness.csv"):
            continue
        t = pd.read_csv(p, dtype=str, keep_default_na=False)
        if t["variant"].nunique() >= 2:
            return t["config"].iloc[0], p.name
    pytest.skip("no committed spread file holds two variants")


def _one_variant(d: Path, name: str) -> pd.DataFrame:
    """A new measurement of the first variant of the file: its rows, with new numbers."""
    t = pd.read_csv(d / name, keep_default_na=False)
    first = t[t["variant"] == t["variant"].iloc[0]].copy()
    first["rows_differing"] = 12345
    first["wall_seconds"] = 1.5
    return first


def test_a_measurement_without_append_keeps_the_other_variants(tmp_path):
    d = _copy_spread(tmp_path)
    config, name = _config_with_two_variants()
    before = {p.name: p.read_bytes() for p in d.glob("*.csv")}
    old = pd.read_csv(d / name, dtype=str, keep_default_na=False)
    new = _one_variant(d, name)
    spread.write(config, new, append=False, spread_dir=d)
    after = pd.read_csv(d / name, dtype=str, keep_default_na=False)
    # the same rows in the same order: the measured variant's replaced, the others as they were
    assert len(after) == len(old) and list(after["variant"]) == list(old["variant"])
    measured = after["variant"] == new["variant"].iloc[0]
    assert (after.loc[measured, "rows_differing"] == "12345").all()
    pd.testing.assert_frame_equal(after[~measured], old[~measured])
    # summary.csv: every config's rows, the other configs' byte for byte as they were
    s_old = pd.read_csv(COMMITTED / "summary.csv", dtype=str, keep_default_na=False)
    s_new = pd.read_csv(d / "summary.csv", dtype=str, keep_default_na=False)
    assert len(s_new) == len(s_old)
    pd.testing.assert_frame_equal(s_new[s_new["config"] != config].reset_index(drop=True),
                                  s_old[s_old["config"] != config].reset_index(drop=True))
    others = {n for n in before if n not in (name, "summary.csv")}
    assert all((d / n).read_bytes() == before[n] for n in others)


def test_the_command_line_keeps_the_other_variants(tmp_path, monkeypatch):
    d = _copy_spread(tmp_path)
    config, name = _config_with_two_variants()
    old = pd.read_csv(d / name, dtype=str, keep_default_na=False)
    monkeypatch.setattr(spread, "SPREAD_DIR", d)
    monkeypatch.setattr(spread, "measure", lambda c, v, o: _one_variant(d, name))
    spread.main([config, "--variants", "host"])
    after = pd.read_csv(d / name, dtype=str, keep_default_na=False)
    assert sorted(after["variant"]) == sorted(old["variant"])


def test_a_rerun_of_every_row_writes_the_same_bytes(tmp_path):
    """Merging a file's own rows back changes nothing: old rows keep their text."""
    d = _copy_spread(tmp_path)
    config, name = _config_with_two_variants()
    before = {p.name: p.read_bytes() for p in d.glob("*.csv")}
    spread.write(config, pd.read_csv(d / name, keep_default_na=False), spread_dir=d)
    assert {p.name: p.read_bytes() for p in d.glob("*.csv")} == before


def test_summary_keeps_the_rows_of_a_config_without_its_own_file(tmp_path):
    d = _copy_spread(tmp_path)
    config, name = _config_with_two_variants()
    s_old = pd.read_csv(d / "summary.csv", dtype=str, keep_default_na=False)
    gone = next(p for p in sorted(d.glob("*.csv")) if p.name not in (name, "summary.csv", "exactness.csv"))
    gone_config = pd.read_csv(gone, dtype=str, keep_default_na=False)["config"].iloc[0]
    gone.unlink()
    spread.write(config, _one_variant(d, name), spread_dir=d)
    s_new = pd.read_csv(d / "summary.csv", dtype=str, keep_default_na=False)
    assert (s_new["config"] == gone_config).sum() == (s_old["config"] == gone_config).sum() > 0


def test_a_damaged_spread_file_stops_before_anything_is_written(tmp_path, monkeypatch, capsys):
    d = _copy_spread(tmp_path)
    config, name = _config_with_two_variants()
    (d / name).write_bytes((d / name).read_bytes()[:-7])     # cut short
    before = {p.name: p.read_bytes() for p in d.glob("*.csv")}
    monkeypatch.setattr(spread, "SPREAD_DIR", d)
    monkeypatch.setattr(spread, "measure", lambda c, v, o: _one_variant(d, "summary.csv").assign(config=config))
    with pytest.raises(SystemExit) as exc:
        spread.main([config, "--variants", "host"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 1 and len(err) == 1 and err[0].startswith("plab: error: ") and name in err[0]
    assert {p.name: p.read_bytes() for p in d.glob("*.csv")} == before


def test_exactness_of_some_configs_keeps_the_others(tmp_path):
    d = _copy_spread(tmp_path)
    old = pd.read_csv(d / "exactness.csv", dtype=str, keep_default_na=False)
    one = pd.read_csv(d / "exactness.csv", keep_default_na=False).iloc[[0]].assign(reason="measured again")
    spread.write_exactness(one, spread_dir=d)
    new = pd.read_csv(d / "exactness.csv", dtype=str, keep_default_na=False)
    assert list(new["config"]) == list(old["config"])
    assert new["reason"].iloc[0] == "measured again"
    pd.testing.assert_frame_equal(new.iloc[1:], old.iloc[1:])
