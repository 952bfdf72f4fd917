"""The run folder proves what it holds: a resumed run reuses a part only when the part carries the
key of this run (config with its output format, data fingerprint, version) and is whole; one
``plab run`` writes a folder at a time; only plab's own temporary files are ever removed.

Each case runs ``plab run`` on the packaged sonar data (or a copy of it in a temporary data
folder), damages or changes something, and runs again. It asserts the exit status, the lines on
the terminal (one ``plab: warning:`` per reason a part is recomputed, or one ``plab: error:``
line) and that results.csv is byte-identical to an uninterrupted run of the same config -- or
absent.
"""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from perceptron_lab.cli.main import main
from perceptron_lab.datasets.registry import EMBEDDED_DIR
from perceptron_lab.run.store import RunFolder, timings_text

# figures off: every case compares results.csv, parts and messages; figures are drawn after results.csv
# (their own user-file protection is tests/contracts/test_user_files.py)
CONFIG = """
name: store
dataset: {{name: sonar}}
kernel: {{type: poly, degree: 2}}
algorithm: {{eta: 0.1, theta_init: avg_sq_norm, C: theta_init}}
training: {{epochs: {epochs}}}
prediction: {{rules: [last, vote], vote_weight: correct}}
evaluation:
  mode: kfold
  folds: 3
  grid: {{algorithm.tau: [0, 0.5, 1]}}
output: {{float_format: "{ff}", figures: false}}
"""


def write_cfg(tmp_path, epochs=3, ff="%.6g", name="store.yaml"):
    p = tmp_path / name
    p.write_text(CONFIG.format(epochs=epochs, ff=ff))
    return p


def data_copy(tmp_path):
    d = tmp_path / "data" / "uci"
    d.mkdir(parents=True)
    shutil.copy(EMBEDDED_DIR / "sonar.all-data", d / "sonar.all-data")
    return tmp_path / "data"


def plab(cfg, out, data=None, *extra):
    args = ["run", str(cfg), "--out", str(out), "-q"] + (["--data-dir", str(data)] if data else []) + list(extra)
    r = CliRunner().invoke(main, args, catch_exceptions=False)
    assert "Traceback" not in r.output
    return r


def notes(r):
    return [ln for ln in r.output.splitlines() if ln.startswith(("plab: warning:", "plab: error:"))]


def reference(tmp_path, cfg, data=None):
    """results.csv of an uninterrupted run of ``cfg`` in a fresh folder."""
    out = tmp_path / f"ref-{cfg.stem}"
    r = plab(cfg, out, data)
    assert r.exit_code == 0 and notes(r) == []
    return (out / "results.csv").read_bytes()


# ----------------------------------------------------------------------------- resume integrity


def test_changed_output_format_recomputes_every_part(tmp_path):
    out = tmp_path / "out"
    assert plab(write_cfg(tmp_path, ff="%.6g"), out).exit_code == 0
    (out / "results.csv").unlink()  # as after an interruption before the final write
    cfg2 = write_cfg(tmp_path, ff="%.3f", name="store3f.yaml")
    r = plab(cfg2, out)
    assert r.exit_code == 0
    assert notes(r) == [f"plab: warning: {out / 'parts' / 'g000.csv'} and 2 other part(s) not reused (computed "
                        "for another config, output format, data set or plab code); recomputing"]
    assert (out / "results.csv").read_bytes() == reference(tmp_path, cfg2)


def test_changed_data_file_recomputes_every_part(tmp_path):
    # the checksum check stops such a run (test_data_file_with_a_wrong_checksum...); past it, with
    # --no-verify, the parts computed on the old data are still not reused
    data, out = data_copy(tmp_path), tmp_path / "out"
    cfg = write_cfg(tmp_path)
    assert plab(cfg, out, data).exit_code == 0
    f = data / "uci" / "sonar.all-data"
    lines = f.read_text().splitlines()
    lines[0] = lines[0][:-1] + ("M" if lines[0].endswith("R") else "R")  # flip one label
    f.write_text("\n".join(lines) + "\n")
    r = plab(cfg, out, data, "--no-verify")
    assert r.exit_code == 0 and len(notes(r)) == 1 and "not reused (computed for another" in notes(r)[0]
    ref = tmp_path / "ref"
    assert plab(cfg, ref, data, "--no-verify").exit_code == 0
    assert (out / "results.csv").read_bytes() == (ref / "results.csv").read_bytes()


def test_lost_run_json_and_changed_epochs_do_not_mix_epochs(tmp_path):
    out = tmp_path / "out"
    assert plab(write_cfg(tmp_path, epochs=3), out).exit_code == 0
    (out / "run.json").unlink()
    cfg5 = write_cfg(tmp_path, epochs=5, name="store5.yaml")
    r = plab(cfg5, out)
    assert r.exit_code == 0 and len(notes(r)) == 1 and "not reused" in notes(r)[0]
    assert (out / "results.csv").read_bytes() == reference(tmp_path, cfg5)


def test_corrupt_run_json_is_never_overwritten_and_the_run_resumes_once_it_is_moved(tmp_path):
    # plab cannot prove it wrote "{not json": it stops before any work rather than overwrite it
    out = tmp_path / "out"
    assert plab(write_cfg(tmp_path, epochs=3), out).exit_code == 0
    (out / "run.json").write_text("{not json")
    cfg5 = write_cfg(tmp_path, epochs=5, name="store5.yaml")
    r = plab(cfg5, out)
    assert r.exit_code == 1 and len(notes(r)) == 1 and notes(r)[0].startswith(f"plab: error: {out / 'run.json'} "
                                                                            "was not written by plab")
    assert (out / "run.json").read_text() == "{not json"
    (out / "run.json").rename(tmp_path / "moved.json")   # the fix the message gives
    r = plab(cfg5, out)
    assert r.exit_code == 0 and len(notes(r)) == 1 and "not reused" in notes(r)[0]
    assert (out / "results.csv").read_bytes() == reference(tmp_path, cfg5)


def test_unchanged_config_reuses_every_part_silently(tmp_path):
    out, cfg = tmp_path / "out", write_cfg(tmp_path)
    assert plab(cfg, out).exit_code == 0
    first = (out / "results.csv").read_bytes()
    r = plab(cfg, out)
    assert r.exit_code == 0 and notes(r) == [] and "0 run(s) computed, 9 reused" in r.output
    assert (out / "results.csv").read_bytes() == first


# ----------------------------------------------------------------------------- damaged parts


@pytest.mark.parametrize("damage, why", [
    (lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), "damaged: its rows do not match their checksum"),
    (lambda p: p.write_bytes(p.read_bytes()[:-40]), "damaged: its rows do not match their checksum"),
    (lambda p: p.write_bytes(p.read_bytes().split(b"\n", 1)[0] + b"\n\xff\xfe\x00garbage\n"), "not UTF-8 text"),
    (lambda p: p.write_text(p.read_text().replace(",last,", ",vote,", 1)), "damaged: its rows do not match their checksum"),
])
def test_damaged_part_is_recomputed_with_one_warning(tmp_path, damage, why):
    out, cfg = tmp_path / "out", write_cfg(tmp_path)
    assert plab(cfg, out).exit_code == 0
    expected = (out / "results.csv").read_bytes()
    (out / "results.csv").unlink()
    part = out / "parts" / "g001.csv"
    damage(part)
    r = plab(cfg, out)
    assert r.exit_code == 0
    assert notes(r) == [f"plab: warning: {part} not reused ({why}); recomputing"], r.output
    assert (out / "results.csv").read_bytes() == expected


def test_folder_in_place_of_a_part_is_one_error_line(tmp_path):
    out, cfg = tmp_path / "out", write_cfg(tmp_path)
    assert plab(cfg, out).exit_code == 0
    (out / "results.csv").unlink()
    part = out / "parts" / "g002.csv"
    part.unlink()
    part.mkdir()
    r = plab(cfg, out)
    assert r.exit_code == 1
    assert notes(r) == [f"plab: error: {part} is a folder, not a part plab wrote; move it away and run the "
                        "command again"]
    assert not (out / "results.csv").exists()


# ----------------------------------------------------------------------------- concurrency


def test_second_run_into_a_busy_folder_stops_with_one_line(tmp_path):
    out = tmp_path / "out"
    with RunFolder(out):  # a plab run holding the folder
        r = plab(write_cfg(tmp_path), out)
    assert r.exit_code == 1
    (line,) = notes(r)
    assert line.startswith(f"plab: error: {out} is in use by another plab run (pid ") and "--out" in line
    assert not (out / "results.csv").exists() and not list((out / "parts").glob("*.csv"))
    r = plab(write_cfg(tmp_path), out)  # the lock goes with the process (or context) that held it
    assert r.exit_code == 0 and notes(r) == []


# ----------------------------------------------------------------------------- temporary files


def test_only_plab_temporaries_are_removed(tmp_path):
    out = tmp_path / "out"
    (out / "parts").mkdir(parents=True)
    mine = [out / ".notes.99999999.tmp", out / "parts" / ".draft.1.tmp", out / "keep.tmp"]
    plabs = [out / ".results.csv.99999999.plab.tmp", out / "parts" / ".g000.csv.99999998.plab.tmp"]
    for p in mine + plabs:
        p.write_text("x")
    assert plab(write_cfg(tmp_path), out).exit_code == 0
    assert all(p.exists() for p in mine) and not any(p.exists() for p in plabs)


# ----------------------------------------------------------------------------- data integrity


def test_data_file_with_a_wrong_checksum_stops_the_run_unless_no_verify(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    data, out, cfg = data_copy(tmp_path), tmp_path / "out", write_cfg(tmp_path)
    assert plab(cfg, out, data).exit_code == 0  # verified, and remembered by size and mtime
    f = data / "uci" / "sonar.all-data"
    f.write_text(f.read_text().replace(",R\n", ",M\n", 1))  # an edited label
    r = plab(cfg, tmp_path / "out2", data)
    assert r.exit_code == 3
    assert notes(r) == [ln for ln in r.output.splitlines() if ln.strip()] and len(notes(r)) == 1
    assert notes(r)[0].startswith(f"plab: error: dataset 'sonar': {f} does not match its checksum")
    assert "--no-verify" in notes(r)[0] and not (tmp_path / "out2" / "results.csv").exists()
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(tmp_path / "out2"), "-q", "--data-dir", str(data),
                                  "--no-verify"], catch_exceptions=False)
    assert r.exit_code == 0 and notes(r) == []


def test_broken_data_file_is_never_replaced_by_the_packaged_copy(tmp_path):
    data = tmp_path / "data" / "uci"
    data.mkdir(parents=True)
    (data / "sonar.all-data").symlink_to(tmp_path / "nowhere")
    r = plab(write_cfg(tmp_path), tmp_path / "out", tmp_path / "data")
    assert r.exit_code == 3 and len(notes(r)) == 1
    assert "is not a readable file (a dangling link or a folder)" in notes(r)[0]
    r = plab(write_cfg(tmp_path), tmp_path / "out", tmp_path / "empty")  # no copy at all: the packaged one, said
    assert r.exit_code == 0 and "plab: note: reading the packaged copy of sonar" in r.output


def test_parts_computed_by_other_code_are_not_reused(tmp_path, monkeypatch):
    from perceptron_lab.run import store

    out, cfg = tmp_path / "out", write_cfg(tmp_path)
    assert plab(cfg, out).exit_code == 0
    first = (out / "results.csv").read_bytes()
    monkeypatch.setattr(store, "_CODE", ["0.1.0+edited-engine"])  # as after an edit of the package
    r = plab(cfg, out)
    assert r.exit_code == 0 and "0 reused" in r.output and len(notes(r)) == 1 and "not reused" in notes(r)[0]
    assert (out / "results.csv").read_bytes() == first


# --------------------------------------------------------------------------- determinism

RANDOM_CFG = """
name: det
dataset: {{name: sonar}}
kernel: {{type: poly, degree: 2}}
training: {{epochs: 2, {training}}}
prediction: {{rules: [last, random, random_norm, vote]}}
evaluation: {{mode: kfold, folds: 3}}
"""


@pytest.mark.parametrize("training", ["checkpoints: [0.5, 2], curve_every: 0.25",
                                      "checkpoints: [0.5, 2], curve_every: 0.1",
                                      "checkpoints: [2]"])
def test_random_rules_do_not_depend_on_the_outputs_requested(tmp_path, training):
    """The random rules draw their time slices per checkpoint from the seed and the step count
    alone: asking for a learning curve, or for fewer checkpoints, leaves every shared row as it was."""
    import pandas as pd

    for out, tr in (("a", "checkpoints: [0.5, 2]"), ("b", training)):
        cfg = tmp_path / f"{out}.yaml"
        cfg.write_text(RANDOM_CFG.format(training=tr))
        assert plab(cfg, tmp_path / out).exit_code == 0
    # epochs read as floats on both sides (one run's are all whole numbers, which pandas reads as int)
    a = pd.read_csv(tmp_path / "a" / "results.csv", dtype={"epoch": float})
    b = pd.read_csv(tmp_path / "b" / "results.csv", dtype={"epoch": float})
    keys = [c for c in a.columns if c != "value"]
    m = a.merge(b, on=keys, suffixes=("_a", "_b"))
    assert (m["epoch"] == 2).any() and m["rule"].isin(["random", "random_norm"]).any()
    assert len(m) >= min(len(a), len(b)) // 2
    assert (m["value_a"] == m["value_b"]).all(), m[m["value_a"] != m["value_b"]]


def test_a_run_records_its_time_split_and_peak_memory(tmp_path):
    """run.json (and so results/reproduce.json) gets training, evaluation, loading and writing
    seconds and the largest per-process peak memory of the invocation."""
    from perceptron_lab.config.load import config_from_dict
    from perceptron_lab.run.experiment import run_experiment

    cfg = config_from_dict({"name": "t", "dataset": {"name": "sonar"}, "training": {"epochs": 2},
                            "evaluation": {"mode": "kfold", "folds": 3}})
    res = run_experiment(cfg, out_dir=tmp_path / "o", progress=False)
    info = json.loads((tmp_path / "o" / "run.json").read_text())
    for key in ("train_seconds_total", "eval_seconds_total", "load_seconds", "write_seconds"):
        assert isinstance(info[key], float) and info[key] >= 0, key
        assert res.run_info[key] == info[key], key
    # at least the interpreter, numpy and numba: tens of MB, and far below the machine
    assert 0.03 < info["peak_rss_gb_per_process"] < 64
    timings = json.loads((tmp_path / "o" / "timings.json").read_text())
    assert all(t["peak_rss_mb"] > 30 for t in timings.values())


def test_a_recomputed_run_reports_its_own_times_while_run_json_keeps_the_earlier_record(tmp_path):
    """Recomputing every part into a folder whose results come out the same leaves run.json as the
    earlier invocation wrote it (its times made those bytes), while the result's ``invocation``
    gives this invocation's own totals: what results/reproduce.json records for it."""
    from perceptron_lab.config.load import config_from_dict
    from perceptron_lab.run.experiment import run_experiment

    cfg = config_from_dict({"name": "t", "dataset": {"name": "sonar"}, "training": {"epochs": 2},
                            "evaluation": {"mode": "kfold", "folds": 3}})
    run_experiment(cfg, out_dir=tmp_path / "o", progress=False)
    # an earlier record whose times cannot be this invocation's
    info = json.loads((tmp_path / "o" / "run.json").read_text())
    info.update(train_seconds_total=1234.5, eval_seconds_total=678.5, wall_seconds=9999.0)
    (tmp_path / "o" / "run.json").write_text(json.dumps(info, indent=1))
    before = (tmp_path / "o" / "run.json").read_bytes()
    shutil.rmtree(tmp_path / "o" / "parts")
    again = run_experiment(cfg, out_dir=tmp_path / "o", progress=False)
    assert again.ran == 3 and (tmp_path / "o" / "run.json").read_bytes() == before
    assert again.run_info["train_seconds_total"] == 1234.5
    own = again.invocation
    assert own["ran"] == 3 and own["wall_seconds"] < 9999.0
    assert own["train_seconds_total"] == pytest.approx(sum(t["train_seconds"] for t in again.timings), abs=1e-3)
    assert own["eval_seconds_total"] == pytest.approx(sum(t["eval_seconds"] for t in again.timings), abs=1e-3)


def test_timings_rewrites_take_a_bounded_share_of_a_run(monkeypatch):
    """A large timings.json (slow to write) is rewritten less often, so that writing it stays
    within TIMINGS_WRITE_SHARE of the run; a small one every TIMINGS_FLUSH_SECONDS."""
    import perceptron_lab.run.experiment as E

    clock = [0.0]
    monkeypatch.setattr(E.time, "perf_counter", lambda: clock[0])

    def run(write_cost):
        writes = []

        class Folder:
            def write_timings(self, timings):
                writes.append(clock[0])
                clock[0] += write_cost

        clock[0] = 0.0
        w = E._TimingsWriter(Folder(), {})
        for i in range(2000):      # a unit finishes every 0.1 s: 200 s of run
            clock[0] += 0.1
            w.add([{"unit": f"u{i}"}])
        return writes, clock[0]

    writes, total = run(0.001)
    assert len(writes) >= 200 / E.TIMINGS_FLUSH_SECONDS - 2   # cheap: every 5 s
    writes, total = run(2.0)
    assert len(writes) * 2.0 <= E.TIMINGS_WRITE_SHARE * total + 2.0
    assert len(writes) >= 2


_JSON_SCALARS = (st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.text(max_size=6)
                 | st.floats(allow_nan=False, allow_infinity=False))
_JSON_VALUES = st.recursive(_JSON_SCALARS, lambda inner: st.lists(inner, max_size=3)
                            | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(first=st.dictionaries(st.text(max_size=5), _JSON_VALUES, max_size=5),
       changes=st.dictionaries(st.text(max_size=5), _JSON_VALUES, max_size=3))
def test_timings_text_is_json_dumps_with_indent_1_while_entries_change(first, changes):
    # timings.json is rewritten as units finish, from texts kept per entry: the bytes must stay
    # json.dumps's, also after entries are replaced, changed in place or added
    cache = {}
    assert timings_text(first, cache) == json.dumps(first, indent=1)
    for key, value in changes.items():
        first[key] = value
    for value in first.values():
        if isinstance(value, dict):
            value["changed in place"] = 1
    assert timings_text(first, cache) == json.dumps(first, indent=1)


def test_timings_text_tells_apart_entries_that_compare_equal():
    cache = {}
    entries = [{"s": 1, "t": 0.0}, {"s": 1.0, "t": 0.0}, {"s": True, "t": 0.0}, {"s": True, "t": -0.0},
               {"t": -0.0, "s": True}]
    for entry in entries:
        assert timings_text({"u": entry}, cache) == json.dumps({"u": entry}, indent=1)
