"""One ``plab: error:`` line, everywhere (issue 53, class 5): what a careful user can give -- a full
or closed standard output, an output folder that refuses files or sits below a file, a number
format that cannot be read back, an integer beyond 64 bits, a LIBSVM index near 10**8, an absurd
run with ``--allow-large`` -- ends with exactly one ``plab: error:`` line, no traceback, the
documented exit status (``perceptron_lab.errors.EXIT_STATUSES``), and nothing written or changed.

Each case runs the real command: in-process through click's runner where that can show the
failure, in a child process where only a real descriptor can (``/dev/full``, a closed pipe) or
where a regression would hang or exhaust memory (the absurd runs, under a time and memory limit).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner
from clitools import packaged_data_root

from perceptron_lab.cli.main import main
from perceptron_lab.config.checks import _Number, _Union
from perceptron_lab.config.schema import SCHEMA
from perceptron_lab.errors import EXIT_STATUSES

DOCUMENTED = {code for code, _ in EXIT_STATUSES}
SMALL = "name: small\ndataset: {name: sonar}\ntraining: {epochs: 1}\nevaluation: {mode: kfold, folds: 2}\n"
BIG = 2**70   # 1180591620717411303424
INT64_MAX = 2**63 - 1   # the largest signed 64-bit integer: NumPy's and the engine's counters


def _env():
    # the registry's sonar from a data root: without one, a note that the packaged copy is read precedes
    return {"PLAB_DATA": str(packaged_data_root())}


def plab(*args):
    """(exit status, stdout, stderr) of plab in this process; an exception escaping plab fails the test."""
    r = CliRunner().invoke(main, [str(a) for a in args], env=_env(), catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def plab_child(*args, stdout=subprocess.DEVNULL, timeout=120, memory_gb=None, preexec=None):
    """(exit status, stderr) of plab in a child process, with a time limit (and a memory limit)."""
    def limits():
        if memory_gb is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory_gb * 2**30, memory_gb * 2**30))
        if preexec is not None:
            preexec()

    r = subprocess.run([sys.executable, "-m", "perceptron_lab.cli.main", *map(str, args)], stdout=stdout,
                       stderr=subprocess.PIPE, timeout=timeout, env={**os.environ, **_env()}, preexec_fn=limits)
    return r.returncode, r.stderr.decode("utf-8", "replace")


def one_line(status, code, stderr, *texts):
    """Exactly one 'plab: error:' line, no traceback, the documented status ``code``; the line."""
    assert code in DOCUMENTED
    errors = [ln for ln in stderr.splitlines() if ln.startswith("plab: error:")]
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr[-2000:]
    assert status == code and len(errors) == 1, (status, stderr[-2000:])
    for t in texts:
        assert t in errors[0], errors[0]
    return errors[0]


def snapshot(folder: Path) -> dict:
    """Every file and folder below ``folder``: its bytes (None for a folder)."""
    return {str(p.relative_to(folder)): (None if p.is_dir() else p.read_bytes())
            for p in sorted(folder.rglob("*"))}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A finished small run folder (sonar, 2 folds, 1 epoch)."""
    tmp = tmp_path_factory.mktemp("run")
    (tmp / "small.yaml").write_text(SMALL)
    status, out, err = plab("run", tmp / "small.yaml", "--out", tmp / "run", "-q")
    assert status == 0, err
    return tmp / "run"


@pytest.fixture
def work(tmp_path, run_dir):
    """A folder holding a copy of the run folder, a config, a file and a read-only folder maker."""
    import shutil

    shutil.copytree(run_dir, tmp_path / "run")
    (tmp_path / "small.yaml").write_text(SMALL)
    (tmp_path / "file").write_text("a file of the user's own\n")
    return tmp_path


@contextlib.contextmanager
def read_only(folder: Path):
    """``folder`` as a folder that refuses new files: its permissions (root ignores them) and, for
    root, the immutable attribute, which binds root too. Skips where neither holds."""
    folder.mkdir(exist_ok=True)
    folder.chmod(0o555)
    immutable = os.geteuid() == 0 and subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0
    try:
        try:
            (folder / "probe").write_text("x")
        except OSError:
            pass
        else:
            (folder / "probe").unlink()
            pytest.skip("no way to make a read-only folder here (root without chattr +i)")
        yield folder
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


# --------------------------------------------------------------------------- standard output


def _full():
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    return open("/dev/full", "w")


# (what, the arguments given the work folder): each prints, and its output goes to /dev/full
PRINTING = [
    ("run", lambda w: ["run", w / "small.yaml", "--out", w / "printed", "-q"]),
    ("config show", lambda w: ["config", "show", w / "small.yaml"]),
    ("config check", lambda w: ["config", "check", w / "small.yaml"]),
    ("config docs", lambda w: ["config", "docs"]),
    ("configs", lambda w: ["configs"]),
    ("data list", lambda w: ["data", "list"]),
    ("data path", lambda w: ["data", "path", "sonar"]),
    ("compare", lambda w: ["compare", w / "run", "--csv"]),
    ("plot", lambda w: ["plot", w / "run", "--out", w / "figures"]),
    ("report", lambda w: ["report", w / "run", "--out", w / "report"]),
    ("--help", lambda w: ["--help"]),
    ("--version", lambda w: ["--version"]),
]


@pytest.mark.parametrize("what, args", PRINTING, ids=[w for w, _ in PRINTING])
def test_a_full_stdout_is_one_line(work, what, args):
    with _full() as full:
        status, err = plab_child(*args(work), stdout=full)
    one_line(status, 1, err, "cannot write to standard output (No space left on device)",
             "what plab printed is incomplete")
    if what == "run":   # the run's files were written before its summary, whole
        from perceptron_lab.run.store import read_back_results

        assert len(read_back_results(work / "printed" / "results.csv", ["value"]))


def test_a_pipe_closed_by_its_reader_is_one_line(work):
    p = subprocess.Popen([sys.executable, "-m", "perceptron_lab.cli.main", "config", "docs"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env={**os.environ, **_env()})
    p.stdout.close()   # the reader is gone before plab prints (``plab config docs | head -0``)
    err = p.stderr.read().decode()
    p.stderr.close()   # every pipe closed: an open one is a ResourceWarning, an error under the strict settings
    one_line(p.wait(timeout=120), 1, err, "standard output was closed before plab finished printing")


def test_a_closed_stdout_is_one_line_not_silence(work):
    status, err = plab_child("configs", preexec=lambda: os.close(1))
    one_line(status, 1, err, "standard output is closed")


# --------------------------------------------------------------------------- output folders


def _compare_figure(w, where):
    return ["compare", w / "run", w / "run", "--figure", where]


# (what, status, the arguments given the work folder and the read-only folder, texts of the line)
WRITERS = [
    ("report --out a read-only folder", lambda w, ro: ["report", w / "run", "--out", ro]),
    ("report --out below a read-only folder", lambda w, ro: ["report", w / "run", "--out", ro / "report"]),
    ("plot --out a read-only folder", lambda w, ro: ["plot", w / "run", "--out", ro]),
    ("plot --out below a read-only folder", lambda w, ro: ["plot", w / "run", "--out", ro / "figures"]),
    ("run --out a read-only folder", lambda w, ro: ["run", w / "small.yaml", "--out", ro, "-q"]),
    ("run --out below a read-only folder", lambda w, ro: ["run", w / "small.yaml", "--out", ro / "o", "-q"]),
    ("figures --out below a read-only folder", lambda w, ro: ["figures", "gentile2001", "--out", ro / "f",
                                                              "--figure", "4", "--permutations", "1", "-q"]),
    ("compare --figure in a read-only folder", lambda w, ro: _compare_figure(w, ro / "cmp.png")),
]


@pytest.mark.parametrize("what, args", WRITERS, ids=[w for w, _ in WRITERS])
def test_an_output_folder_that_refuses_files_is_one_line_and_changes_nothing(work, what, args):
    with read_only(work / "ro") as ro:
        before = snapshot(work)
        status, out, err = plab(*args(work, ro))
        one_line(status, 1, err, "cannot write", str(ro))
        assert snapshot(work) == before


BELOW_A_FILE = [
    ("report", lambda w: ["report", w / "run", "--out", w / "file" / "report"]),
    ("plot", lambda w: ["plot", w / "run", "--out", w / "file" / "figures"]),
    ("run", lambda w: ["run", w / "small.yaml", "--out", w / "file" / "o", "-q"]),
    ("figures", lambda w: ["figures", "gentile2001", "--out", w / "file" / "f", "--figure", "4", "--permutations",
                           "1", "-q"]),
    ("compare --figure", lambda w: _compare_figure(w, w / "file" / "cmp.png")),
]


@pytest.mark.parametrize("what, args", BELOW_A_FILE, ids=[w for w, _ in BELOW_A_FILE])
def test_an_output_below_a_file_is_one_line_and_changes_nothing(work, what, args):
    before = snapshot(work)
    status, out, err = plab(*args(work))
    one_line(status, 1, err, str(work / "file"))
    # the fix it names is an option of that command (compare's path is --figure; it has no --out)
    assert ("--figure" in err and "--out" not in err) if what == "compare --figure" else "--out" in err
    assert snapshot(work) == before


def test_a_read_only_run_folder_is_refused_before_plot_or_tables_draw(work):
    with read_only(work / "run") as ro:
        before = snapshot(work)
        for args in (["plot", ro], ["tables", ro]):
            status, out, err = plab(*args)
            one_line(status, 1, err, f"cannot write to output folder {ro}")
        assert snapshot(work) == before


# (status, what, the config): runs refused by their data or by the plan, after reading the config
REFUSED_RUNS = [
    (3, "a dataset not in the data folder", "name: m\ndataset: {name: mnist}\n"),
    (3, "a data file of one's own that is missing", "name: u\ndataset: {path: nowhere.csv, label: y}\n"
                                                    "evaluation: {mode: kfold, folds: 2}\n"),
    (2, "train_size beyond the data", "name: b\ndataset: {name: sonar, train_size: 5000}\n"
                                      "evaluation: {mode: kfold, folds: 2}\n"),
    (2, "more folds than examples", SMALL.replace("folds: 2", "folds: 500")),
    (2, "a run beyond the size limits", SMALL.replace("{epochs: 1}", "{epochs: 1, permutations: 100000000}")),
]


@pytest.mark.parametrize("code, what, config", REFUSED_RUNS, ids=[w for _, w, _ in REFUSED_RUNS])
def test_a_run_refused_by_its_data_or_plan_leaves_no_folder(work, code, what, config):
    (work / "c.yaml").write_text(config)
    before = snapshot(work)
    status, out, err = plab("run", work / "c.yaml", "--out", work / "o", "-q", "--data-dir", work / "no-data")
    one_line(status, code, err)
    assert snapshot(work) == before


# --------------------------------------------------------------------------- run.json of another shape


# (what, how run.json is changed): JSON that parses, with an entry of a type plab never writes there
RUN_JSON = [
    ("config a number", lambda info: {**info, "config": 5}),
    ("config.dataset a number", lambda info: {**info, "config": {**info["config"], "dataset": 5}}),
    ("csv_rows a string", lambda info: {**info, "csv_rows": "x"}),
    ("a csv_rows count a string", lambda info: {**info, "csv_rows": {"results.csv": "10"}}),
]


@pytest.mark.parametrize("what, change", RUN_JSON, ids=[w for w, _ in RUN_JSON])
def test_a_run_json_of_another_shape_is_a_damaged_file_for_every_reader(work, what, change):
    import json

    info = json.loads((work / "run" / "run.json").read_text())
    (work / "run" / "run.json").write_text(json.dumps(change(info)))
    before = snapshot(work)
    for args in (["plot", work / "run", "--out", work / "figures"], ["tables", work / "run"],
                 ["compare", work / "run"], ["compare", work / "run", work / "run", "--figure", work / "c.png"],
                 ["report", work / "run", "--out", work / "report"]):
        status, out, err = plab(*args)
        one_line(status, 1, err, f"{work / 'run' / 'run.json'} is damaged")
    assert snapshot(work) == before


# --------------------------------------------------------------------------- number formats


# formats that pass a pattern check and write what plab cannot read back as the number written
BAD_FORMATS = {
    "%.6g%%": "which plab cannot read back as a number",              # 47.1154%
    "a%g": "which plab cannot read back as a number",
    "%r": "which plab cannot read back as a number",                  # np.float64(47.11538461538461)
    "%.6g,": "not one plain field of a CSV line",                     # two fields
    "%.6g\n": "not one plain field of a CSV line",                    # two lines
    "1%g": "rounded to the digits it shows",                          # 147.115: another number
    "-%g": "rounded to the digits it shows",                          # -47.1154: another number
    "%d": "rounded to the digits it shows",                           # 66.67 written 66: cut, not rounded
}


@pytest.mark.parametrize("fmt", list(BAD_FORMATS))
def test_a_float_format_that_cannot_be_read_back_is_refused_before_anything_is_written(work, fmt):
    import json

    (work / "f.yaml").write_text(SMALL + f"output: {{float_format: {json.dumps(fmt)}}}\n")   # JSON is YAML
    before = snapshot(work)
    status, out, err = plab("config", "check", work / "f.yaml")
    one_line(status, 2, err, "output.float_format", BAD_FORMATS[fmt])
    status, out, err = plab("run", work / "f.yaml", "--out", work / "o", "-q")
    one_line(status, 2, err, "output.float_format", BAD_FORMATS[fmt])
    assert snapshot(work) == before


@pytest.mark.parametrize("fmt", ["%.6g", "%.10g", "%.4e", "%f", "%.4f", "%.2f", "%+.8g"])
def test_a_float_format_that_reads_back_runs_and_its_numbers_read_back(work, fmt):
    from perceptron_lab.run.store import read_back_results

    status, out, err = plab("run", work / "small.yaml", "--out", work / "o", "-q", f"output.float_format='{fmt}'")
    assert status == 0, err
    df = read_back_results(work / "o" / "results.csv", ["value"])
    df["value"].astype(float)   # the reader every table and summary uses


# --------------------------------------------------------------------------- integers beyond int64


def _is_integer(check) -> bool:
    alts = check.alternatives if isinstance(check, _Union) else (check,)
    return any(isinstance(a, _Number) and a.integer for a in alts)


def _integer_keys():
    """Every integer key of the config schema, with the overrides that put it in effect."""
    out = {}
    for p in SCHEMA:
        if not _is_integer(p.check) or p.path in out:
            continue
        context = [] if p.when is None else [f"{p.section}.{p.when[0]}={p.when[1][0]}"]
        if p.path == "kernel.degree":
            context.append("kernel.scale=1")
        out[p.path] = context
    return out


INTEGER_KEYS = _integer_keys()


def test_the_integer_keys_are_those_a_user_writes():
    assert {"algorithm.alpha_bound", "algorithm.budget", "training.seed", "training.permutations",
            "training.chunk_size", "evaluation.folds", "evaluation.inner_folds", "evaluation.fold_seed",
            "dataset.train_size", "dataset.test_size", "kernel.degree"} <= set(INTEGER_KEYS)


@pytest.mark.parametrize("key", sorted(INTEGER_KEYS))
def test_an_integer_beyond_int64_is_refused_with_one_line(work, key):
    context = INTEGER_KEYS[key]
    before = snapshot(work)
    for value in (BIG, INT64_MAX + 1, "1.0e+30"):
        status, out, err = plab("config", "show", work / "small.yaml", *context, f"{key}={value}")
        one_line(status, 2, err, key, "2**63 - 1")
        status, out, err = plab("run", work / "small.yaml", "--out", work / "o", "-q", *context, f"{key}={value}")
        one_line(status, 2, err, key, "2**63 - 1")
    status, out, err = plab("config", "show", work / "small.yaml", *context, f"{key}={INT64_MAX}")
    assert status == 0, err
    assert snapshot(work) == before


def test_alpha_bound_2_to_the_70_in_a_config_file_and_in_a_grid(work):
    (work / "ab.yaml").write_text(SMALL + f"algorithm: {{alpha_bound: {BIG}}}\n")
    before = snapshot(work)
    for args, texts in ((["config", "check", work / "ab.yaml"], ["algorithm.alpha_bound", str(BIG), "2**63 - 1"]),
                        (["run", work / "ab.yaml", "--out", work / "o", "-q"], ["algorithm.alpha_bound"]),
                        (["run", work / "small.yaml", "--out", work / "o", "-q", "-m", f"training.seed=1,{BIG}"],
                         ["evaluation.grid.training.seed[1]", "2**63 - 1"])):
        status, out, err = plab(*args)
        one_line(status, 2, err, *texts)
    assert snapshot(work) == before


def test_the_python_doors_refuse_the_same_integers():
    from perceptron_lab.config.settings import PATHS, setting

    names = [n for n, path in PATHS.items() if path in INTEGER_KEYS]
    assert {"alpha_bound", "degree", "seed", "budget"} <= set(names)
    for name in names:
        s = setting(name)
        assert s.accepts(INT64_MAX)
        text = s.problem(INT64_MAX + 1)
        assert text is not None and "2**63 - 1" in text, (name, text)


# --------------------------------------------------------------------------- a LIBSVM index near 10**8


LIBSVM = "".join(f"{1 if i % 2 else -1} {1 + i % 7}:{1 + i % 3} {9 + i % 5}:1\n" for i in range(40))


@pytest.mark.parametrize("setting", ["linear perceptron (sparse path)", "alma (sparse path)",
                                     "gaussian kernel (dense path)"])
def test_a_libsvm_index_near_1e8_takes_memory_of_its_nonzeros(work, setting):
    extra = {"linear perceptron (sparse path)": "", "alma (sparse path)": "algorithm: {name: alma}\n",
             "gaussian kernel (dense path)": "kernel: {type: gaussian, sigma: 2}\n"}[setting]
    cfg = ("name: big\ndataset: {path: big.libsvm}\nevaluation: {mode: kfold, folds: 2}\ntraining: {epochs: 1}\n"
           "output: {figures: false}\n" + extra)
    (work / "big.libsvm").write_text(LIBSVM)
    (work / "big.yaml").write_text(cfg)
    status, out, err = plab("run", work / "big.yaml", "--out", work / "warm", "-q")   # compiles what the run needs
    assert status == 0, err
    (work / "big.libsvm").write_text(LIBSVM.replace(" 9:1\n", " 9:1 100000000:2\n", 1))
    tracemalloc.start()
    try:
        status, out, err = plab("run", work / "big.yaml", "--out", work / "o", "-q")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert status == 0, err
    # a list of 10**8 names, or one weight vector of 10**8 floats, would take 800 MB and more
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.0f} MB"
    import json

    assert json.loads((work / "o" / "run.json").read_text())["dataset"]["n_features"] == 13  # 1..7, 9..13, 1e8


# --------------------------------------------------------------------------- --allow-large on absurd runs


def _values(n, start=0):
    return ",".join(str(start + i) for i in range(n))


ABSURD = [
    ("a grid of 10**12 points", lambda w: ["-m", f"training.seed={_values(1000)}", f"evaluation.fold_seed={_values(1000)}",
                                           f"training.permutations={_values(1000, 1)}",
                                           f"algorithm.eta={_values(1000, 1)}"], "more than this machine's"),
    ("10**12 permutations", lambda w: ["training.permutations=1000000000000"], "more than this machine's"),
    ("1e300 epochs", lambda w: ["training.epochs=1.0e+300"], "hours of training"),
    ("1e15 epochs", lambda w: ["training.epochs=1.0e+15"], "hours of training"),
]


@pytest.mark.parametrize("what, args, text", ABSURD, ids=[w for w, _, _ in ABSURD])
def test_allow_large_on_an_absurd_run_is_one_line_not_a_hang(work, what, args, text):
    before = snapshot(work)
    try:
        status, err = plab_child("run", work / "small.yaml", "--out", work / "o", "-q", "--allow-large", *args(work),
                                 timeout=90, memory_gb=4)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what}: no answer within 90 s")
    one_line(status, 2, err, "even with --allow-large", text)
    assert snapshot(work) == before


def test_allow_large_lifts_the_limits_but_not_what_no_machine_can_do(monkeypatch):
    from perceptron_lab.model import bounds

    monkeypatch.setattr(bounds, "physical_memory", lambda: 16 * 2**30)
    large = bounds.estimate_size(2_500_000, 1.0, 100, 2)          # beyond MAX_UNITS, 12 GB: --allow-large runs it
    assert bounds.over_limit(large) == "units" and bounds.impossible(large) is None
    assert "more than this machine's 16 GB" in bounds.impossible(bounds.estimate_size(10**8, 1.0, 100, 2))
    assert "hours of training" in bounds.impossible(bounds.estimate_size(2, 1e15, 104, 2))
