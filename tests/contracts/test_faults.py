"""Bad input fails clearly: every fault below is driven through ``plab run`` on tiny hand-made files
in a temporary data folder, and must end with one ``plab: error:`` line that names the file (or the
setting) and the fix, the documented exit status and no traceback.

Exit statuses: 3 data (DatasetError), 4 numerics (NumericError), 1 output folder (OutputError).
Data files here are hand-made, so they run with ``--no-verify`` (past the checksum check).
"""

from __future__ import annotations

import errno
import gzip
import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from clitools import packaged_data_root

from perceptron_lab.run import experiment, store
from perceptron_lab.cli.main import main
from perceptron_lab.datasets.base import Dataset, validate_dataset
from perceptron_lab.errors import DatasetError

KFOLD = """
name: fault
dataset:
  name: {name}
{extra}
evaluation:
  mode: kfold
  folds: 2
"""

HOLDOUT = """
name: fault
dataset:
  name: {name}
{extra}
"""


def run_plab(tmp_path, name, extra="", data=None, template=KFOLD, expect=None, warnings_ok=False):
    """``plab run`` of a small config on dataset ``name`` read from ``data`` (default: tmp_path/data).

    Returns (exit code, the error line). Asserts that the output is one error line, without a
    traceback (``warnings_ok``: Python warnings may precede it).
    """
    cfg = tmp_path / "fault.yaml"
    cfg.write_text(template.format(name=name, extra=extra))
    args = ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"]
    if data is not False:
        # hand-made files never match the registry's checksums: these cases test what the loaders
        # say about a file the user runs on anyway (checksums: tests/run/test_store.py)
        args += ["--data-dir", str(data or tmp_path / "data"), "--no-verify"]
    else:   # the registry's files, whatever data root this machine has
        args += ["--data-dir", str(packaged_data_root())]
    r = CliRunner().invoke(main, args, catch_exceptions=False)
    assert "Traceback" not in r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("plab: error: ")]
    if warnings_ok:
        lines = [lines[-1]]
    assert errors and len(errors) == len(lines) == 1 and lines[0] == errors[0], r.output
    if expect is not None:
        assert r.exit_code == expect, r.output
    return r.exit_code, errors[0]


def assert_says(line: str, *parts: str):
    for p in parts:
        assert p in line, f"{p!r} not in {line!r}"


# --------------------------------------------------------------------------- UCI (CSV) files

SONAR_COLS = 60


def sonar_row(label="M", value=0.5, n=SONAR_COLS):
    return ",".join([f"{value}"] * n + [label])


def write_sonar(tmp_path, rows) -> Path:
    folder = tmp_path / "data" / "uci"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "sonar.all-data"
    path.write_text("\n".join(rows) + "\n")
    return path


GOOD = [sonar_row("M", 0.1), sonar_row("R", 0.2), sonar_row("M", 0.3), sonar_row("R", 0.4)]


@pytest.mark.parametrize("bad", ["nan", "inf", "-Infinity"])
def test_nan_or_infinite_feature_in_csv(tmp_path, bad):
    rows = GOOD[:1] + [sonar_row("R").replace("0.5", bad, 1)] + GOOD[2:]
    path = write_sonar(tmp_path, rows)
    code, line = run_plab(tmp_path, "sonar", expect=3)
    assert_says(line, str(path), "line 2", "not a finite number", "plab data fetch sonar")


def test_non_numeric_value_in_csv(tmp_path):
    path = write_sonar(tmp_path, GOOD[:2] + [sonar_row("M").replace("0.5", "abc", 1)])
    code, line = run_plab(tmp_path, "sonar", expect=3)
    assert_says(line, str(path), "line 3", "'abc' is not a finite number", "plab data fetch sonar")


def test_ragged_row_in_csv(tmp_path):
    path = write_sonar(tmp_path, GOOD[:3] + [sonar_row("M", n=SONAR_COLS - 1)])
    code, line = run_plab(tmp_path, "sonar", expect=3)
    assert_says(line, str(path), "line 4", "expected 61 comma-separated fields, found 60", "plab data fetch sonar")


def test_empty_csv(tmp_path):
    path = write_sonar(tmp_path, ["", "| a comment line, no data"])
    code, line = run_plab(tmp_path, "sonar", expect=3)
    assert_says(line, str(path), "no data rows", "plab data fetch sonar")


def test_label_outside_the_classes_in_csv(tmp_path):
    path = write_sonar(tmp_path, GOOD + [sonar_row("X")])
    code, line = run_plab(tmp_path, "sonar", expect=3)
    assert_says(line, str(path), "line 5", "class label 'X' is not 'R' or 'M'", "plab data fetch sonar")


def test_single_class_training_set(tmp_path):
    path = write_sonar(tmp_path, [sonar_row("M", v) for v in (0.1, 0.2, 0.3, 0.4)])
    code, line = run_plab(tmp_path, "sonar", expect=3)
    assert_says(line, str(path), "all 4 training rows have class 'M'", "at least two classes",
                "plab data verify sonar", "plab data fetch sonar")


def test_single_class_in_the_first_train_size_rows(tmp_path):
    # The packaged sonar file lists its 97 rocks before its 111 mines.
    code, line = run_plab(tmp_path, "sonar", extra="  train_size: 20", data=False, expect=3)
    assert_says(line, "fault.yaml", "sonar.all-data", "all 20 training rows have class 'R'",
                "raise dataset.train_size")


def test_single_class_in_a_training_fold(tmp_path):
    path = write_sonar(tmp_path, [sonar_row("M", v / 10) for v in range(1, 7)] + [sonar_row("R", 0.9)])
    code, line = run_plab(tmp_path, "sonar", expect=3)
    assert_says(line, str(path), "of 2 (evaluation.folds) holds only class 'M'", "'R': 1",
                "use fewer folds")


@pytest.mark.parametrize("fault, says", [
    ("nan", "the training features contain NaN or infinite values: row 2, feature 3 is nan"),
    ("no_features", "the training split has 0 features"),
    ("no_rows", "the training split holds no rows"),
    ("label", "training row 1 has label index 5, outside the 2 expected classes"),
    ("test_inf", "the test features contain NaN or infinite values: row 1, feature 1 is inf"),
])
def test_any_loader_output_is_validated(tmp_path, monkeypatch, fault, says):
    """The checks of load_data hold whatever a loader returns (here a stand-in for load_uci)."""
    X = np.ones((4, 3))
    y = np.array([0, 1, 0, 1])
    Xte, yte = None, None
    if fault == "nan":
        X[1, 2] = np.nan
    elif fault == "no_features":
        X = X[:, :0]
    elif fault == "no_rows":
        X, y = X[:0], y[:0]
    elif fault == "label":
        y = np.array([5, 1, 0, 1])
    elif fault == "test_inf":
        Xte, yte = np.full((1, 3), np.inf), np.array([0])

    def fake_load_uci(name, folder):
        return Dataset(name, X, y, Xte, yte, classes=["R", "M"],
                       meta={"source_files": [str(Path(folder) / "sonar.all-data")]})

    monkeypatch.setattr("perceptron_lab.datasets.uci.load_uci", fake_load_uci)
    write_sonar(tmp_path, GOOD)
    code, line = run_plab(tmp_path, "sonar", expect=3)
    assert_says(line, "fault.yaml", "dataset 'sonar'", "sonar.all-data", says, "Fix:")


def test_validate_dataset_accepts_good_data():
    ds = Dataset("t", np.ones((4, 2)), np.array([0, 1, 0, 1]), np.zeros((2, 2)), np.array([1, 0]), [0, 1])
    validate_dataset(ds, "t")
    with pytest.raises(DatasetError, match="test row 2 has label index -1"):
        validate_dataset(Dataset("t", ds.X_train, ds.y_train, ds.X_test, np.array([0, -1]), [0, 1]), "t")


# --------------------------------------------------------------------------- IDX (MNIST, Fashion-MNIST)

IDX = {"train_images": "train-images-idx3-ubyte.gz", "train_labels": "train-labels-idx1-ubyte.gz",
       "test_images": "t10k-images-idx3-ubyte.gz", "test_labels": "t10k-labels-idx1-ubyte.gz"}


def idx_bytes(arr: np.ndarray, magic: bytes | None = None) -> bytes:
    arr = np.asarray(arr, dtype=np.uint8)
    head = magic if magic is not None else bytes([0, 0, 8, arr.ndim])
    return head + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.tobytes()


def write_idx_set(tmp_path, subfolder="mnist", n_train=3, n_test=2, **override) -> Path:
    """Four small, consistent IDX files; ``override`` replaces a file's bytes (already gzipped or not)."""
    folder = tmp_path / "data" / subfolder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    content = {
        "train_images": idx_bytes(rng.integers(0, 256, (n_train, 28, 28))),
        "train_labels": idx_bytes(np.arange(n_train) % 10),
        "test_images": idx_bytes(rng.integers(0, 256, (n_test, 28, 28))),
        "test_labels": idx_bytes(np.arange(n_test) % 10),
    }
    for key, name in IDX.items():
        raw = override.get(key)
        (folder / name).write_bytes(raw if raw is not None else gzip.compress(content[key]))
    return folder


MNIST_HOLDOUT = "kernel: {type: poly, degree: 2}"


def test_idx_with_wrong_magic_number(tmp_path):
    folder = write_idx_set(tmp_path, train_images=gzip.compress(
        idx_bytes(np.zeros((3, 28, 28)), magic=b"\x00\x00\x08\x01")))
    code, line = run_plab(tmp_path, "mnist", MNIST_HOLDOUT, template=HOLDOUT, expect=3)
    assert_says(line, str(folder / IDX["train_images"]), "bad IDX magic number 0x00000801",
                "plab data verify mnist", "plab data fetch mnist")


def test_idx_with_wrong_size(tmp_path):
    raw = idx_bytes(np.zeros((3, 28, 28)))[:-100]  # header says 3 images, the payload is shorter
    folder = write_idx_set(tmp_path, test_images=gzip.compress(raw))
    code, line = run_plab(tmp_path, "mnist", MNIST_HOLDOUT, template=HOLDOUT, expect=3)
    assert_says(line, str(folder / IDX["test_images"]), "declares dimensions (3, 28, 28) (2352 values) but "
                "the file holds 2252", "plab data fetch mnist")


@pytest.mark.parametrize("name", ["mnist", "fashion-mnist"])
def test_idx_image_and_label_counts_differ(tmp_path, name):
    folder = write_idx_set(tmp_path, name, train_labels=gzip.compress(idx_bytes(np.zeros(2))))
    code, line = run_plab(tmp_path, name, MNIST_HOLDOUT, template=HOLDOUT, expect=3)
    assert_says(line, str(folder / IDX["train_images"]), "3 images but 2 labels in train-labels-idx1-ubyte.gz",
                f"plab data fetch {name}")


def test_idx_gz_that_is_not_gzip(tmp_path):
    folder = write_idx_set(tmp_path, train_labels=b"<html>404 not found</html>")
    code, line = run_plab(tmp_path, "mnist", MNIST_HOLDOUT, template=HOLDOUT, expect=3)
    assert_says(line, str(folder / IDX["train_labels"]), "gzip error", "plab data fetch mnist")


def test_idx_gz_cut_short(tmp_path):
    whole = gzip.compress(idx_bytes(np.random.default_rng(1).integers(0, 256, (3, 28, 28))))
    folder = write_idx_set(tmp_path, train_images=whole[: len(whole) // 2])
    code, line = run_plab(tmp_path, "mnist", MNIST_HOLDOUT, template=HOLDOUT, expect=3)
    assert_says(line, str(folder / IDX["train_images"]), "gzip error", "truncated or corrupt",
                "plab data fetch mnist")


def test_idx_label_outside_0_to_9(tmp_path):
    folder = write_idx_set(tmp_path, test_labels=gzip.compress(idx_bytes(np.array([1, 12]))))
    code, line = run_plab(tmp_path, "mnist", MNIST_HOLDOUT, template=HOLDOUT, expect=3)
    assert_says(line, str(folder / IDX["test_labels"]), "label 12 (item 2) outside the classes 0..9",
                "plab data fetch mnist")


def test_idx_files_with_too_few_images(tmp_path):
    folder = write_idx_set(tmp_path)
    code, line = run_plab(tmp_path, "mnist", MNIST_HOLDOUT, template=HOLDOUT, expect=3)
    assert_says(line, str(folder / IDX["train_images"]), "3 images, expected 60000", "plab data fetch mnist")


# --------------------------------------------------------------------------- USPS and Letter text files


def usps_line(label=3, value="0.5"):
    return " ".join([str(label)] + [value] * 256)


def write_usps(tmp_path, train_lines, train_raw=None) -> Path:
    folder = tmp_path / "data" / "usps"
    folder.mkdir(parents=True, exist_ok=True)
    data = gzip.compress(("\n".join(train_lines) + "\n").encode())
    (folder / "zip.train.gz").write_bytes(train_raw if train_raw is not None else data)
    (folder / "zip.test.gz").write_bytes(gzip.compress((usps_line(1) + "\n").encode()))
    return folder / "zip.train.gz"


USPS_CFG = "kernel: {type: poly, degree: 2}"


def test_usps_cut_short(tmp_path):
    path = write_usps(tmp_path, [usps_line(d % 10) for d in range(5)])
    code, line = run_plab(tmp_path, "usps", USPS_CFG, template=HOLDOUT, expect=3)
    assert_says(line, str(path), "5 rows, expected 7291 (the file is cut short)", "plab data fetch usps")


def test_usps_gz_cut_short(tmp_path):
    whole = gzip.compress(("\n".join(usps_line(d % 10, f"0.{d}") for d in range(50)) + "\n").encode())
    path = write_usps(tmp_path, [], train_raw=whole[:-200])
    code, line = run_plab(tmp_path, "usps", USPS_CFG, template=HOLDOUT, expect=3)
    assert_says(line, str(path), "EOFError", "truncated or corrupt", "plab data fetch usps")


def test_usps_nan_pixel(tmp_path):
    bad = usps_line(4).split()
    bad[5] = "nan"
    path = write_usps(tmp_path, [usps_line(1), " ".join(bad)])
    code, line = run_plab(tmp_path, "usps", USPS_CFG, template=HOLDOUT, expect=3)
    assert_says(line, str(path), "line 2, pixel 5 is 'nan', not a finite number", "plab data fetch usps")


def test_usps_label_outside_0_to_9(tmp_path):
    path = write_usps(tmp_path, [usps_line(1), usps_line(10)])
    code, line = run_plab(tmp_path, "usps", USPS_CFG, template=HOLDOUT, expect=3)
    assert_says(line, str(path), "line 2 has label '10'; labels must be the integers 0..9", "plab data fetch usps")


def write_letter(tmp_path, lines) -> Path:
    folder = tmp_path / "data" / "letter"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "letter-recognition.data"
    path.write_text("\n".join(lines) + "\n")
    return path


def letter_line(c="A", v=3):
    return ",".join([c] + [str(v)] * 16)


LETTER_CFG = "kernel: {type: poly, degree: 2}"


def test_letter_cut_short(tmp_path):
    path = write_letter(tmp_path, [letter_line(c) for c in "ABCAB"])
    code, line = run_plab(tmp_path, "letter", LETTER_CFG, template=HOLDOUT, expect=3)
    assert_says(line, str(path), "5 rows, expected 20000 (the file is cut short)", "plab data fetch letter")


def test_letter_last_line_cut_in_the_middle(tmp_path):
    path = write_letter(tmp_path, [letter_line("A"), letter_line("B"), "C,1,2,3"])
    code, line = run_plab(tmp_path, "letter", LETTER_CFG, template=HOLDOUT, expect=3)
    assert_says(line, str(path), "line 3 is not 'LETTER,16 integers'", "plab data fetch letter")


def test_letter_non_integer_feature(tmp_path):
    path = write_letter(tmp_path, [letter_line("A"), letter_line("B").replace(",3", ",x", 1)])
    code, line = run_plab(tmp_path, "letter", LETTER_CFG, template=HOLDOUT, expect=3)
    assert_says(line, str(path), "line 2 has a non-integer feature", "plab data fetch letter")


# --------------------------------------------------------------------------- numerics


def test_poly_kernel_that_overflows_float64_is_refused(tmp_path):
    # Packaged sonar: |x|^2 <= 15.4, so K(x, x) = (1 + |x|^2)^300 reaches about 1e364.
    extra = "kernel: {type: poly, degree: 300}\ntraining: {dtype: float64}"
    code, line = run_plab(tmp_path, "sonar", extra, data=False, expect=4)
    assert_says(line, "poly(d=300, s=1) kernel in float64", "reaches 1e3", "overflow float64", "Fix: set kernel.scale:",
                "lower kernel.degree to", "dataset.preprocess")
    assert not (tmp_path / "out" / "results.csv").exists()


def test_poly_gaussian_that_overflows_float32_is_refused(tmp_path):
    extra = "kernel: {type: poly_gaussian, degree: 200, sigma: 1}\ntraining: {dtype: float32}"
    code, line = run_plab(tmp_path, "sonar", extra, data=False, expect=4)
    assert_says(line, "2^200", "overflow float32", "training.dtype: float64", "kernel.degree <=")


def test_gaussian_sigma_too_small_is_refused(tmp_path):
    extra = "kernel: {type: gaussian, sigma: 1.0e-200}"
    code, line = run_plab(tmp_path, "sonar", extra, data=False, expect=4)
    assert_says(line, "kernel.sigma = 1e-200 is too small", "NaN", "Fix: set kernel.sigma near")


def test_features_too_large_for_float32_run_rescaled_with_float64s_results(tmp_path):
    """Features whose squared norms (6e+61) pass float32's range, but whose spread fits it, run on
    the features times a power of two (exact), with one note; the mistakes and test errors are
    those of the float64 run of the same file, which needs no rescaling. (Before the range checks
    went both ways, this run was refused with exit 4.)"""
    import pandas as pd

    write_sonar(tmp_path, [sonar_row("M", 1e30), sonar_row("R", 0.2), sonar_row("M", 0.3), sonar_row("R", 0.4)])
    results = {}
    for dtype in ("float32", "float64"):
        cfg = tmp_path / f"{dtype}.yaml"
        cfg.write_text(KFOLD.format(name="sonar", extra=f"training: {{dtype: {dtype}}}"))
        out = tmp_path / dtype
        r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(out), "-q", "--data-dir", str(tmp_path / "data"),
                                      "--no-verify"], catch_exceptions=False)
        assert r.exit_code == 0, r.output
        notes = [ln for ln in r.output.splitlines() if ln.startswith("plab: note:")]
        assert len(notes) == (dtype == "float32") and all("multiplied by 2^" in n for n in notes), r.output
        results[dtype] = pd.read_csv(out / "results.csv")
    keys = ["fold", "permutation", "epoch", "rule", "normalized", "class", "metric"]
    merged = results["float32"].merge(results["float64"], on=keys, suffixes=("_32", "_64"))
    assert len(merged) == len(results["float64"]) > 0
    assert (merged["value_32"] == merged["value_64"]).all()


# the engine's overflow, with the up-front check switched off, is numpy's RuntimeWarning first and
# the error line after it: the warning is part of what this test provokes
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_scores_that_become_non_finite_during_a_run_stop_it(tmp_path, monkeypatch):
    """If a kernel escapes the up-front check, the overflow is caught before any result is written.

    (numpy's overflow warnings from the training engine may be printed before the error line.)
    """
    from perceptron_lab.engine.kernels import Kernel

    monkeypatch.setattr(Kernel, "range_safe", lambda self, X, dtype: self)
    extra = "kernel: {type: poly, degree: 300}\ntraining: {dtype: float64}"
    code, line = run_plab(tmp_path, "sonar", extra, data=False, expect=4, warnings_ok=True)
    assert_says(line, "during training overflowed with the poly(d=300, s=1) kernel in float64", "no results were written",
                "kernel.scale", "kernel.degree")
    assert not list((tmp_path / "out").glob("parts/*.csv"))
    assert not (tmp_path / "out" / "results.csv").exists()


ADULT = ("39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, "
         "2174, 0, 40, United-States, {label}")


def test_test_scores_that_overflow_stop_the_run(tmp_path):
    """A test row far larger than every training row overflows K(test, train) at prediction time."""
    folder = tmp_path / "data" / "uci"
    folder.mkdir(parents=True)
    (folder / "adult.data").write_text("\n".join(ADULT.format(label=lab).replace("39,", f"{a},", 1)
                                                 for a, lab in ((39, "<=50K"), (50, ">50K"), (28, "<=50K"),
                                                                (61, ">50K"))) + "\n")
    (folder / "adult.test").write_text("|1x3 Cross validator\n" + ADULT.format(label="<=50K.") + "\n"
                                       + ADULT.format(label=">50K.").replace("39,", "1e200,", 1) + "\n")
    extra = "kernel: {type: poly, degree: 2}"
    code, line = run_plab(tmp_path, "adult", extra, template=HOLDOUT, expect=4)
    assert_says(line, "kernel values between test and training examples overflowed", "poly(d=2, s=1)",
                "no results were written", "Fix:")
    assert not (tmp_path / "out" / "results.csv").exists()


# --------------------------------------------------------------------------- output folder

SMALL_RUN = "algorithm: {eta: 0.1}\ntraining: {epochs: 1}"


def test_low_disk_space_fails_before_work(tmp_path, monkeypatch):
    real = store.shutil.disk_usage

    def tiny(path):
        return real(path)._replace(free=3 * 2**20)

    monkeypatch.setattr(store.shutil, "disk_usage", tiny)
    code, line = run_plab(tmp_path, "sonar", SMALL_RUN, data=False, expect=1)
    assert_says(line, "only 3.0 MB free", str(tmp_path / "out"), "free some disk space", "--out")
    assert not (tmp_path / "out" / "run.json").exists()


def test_disk_full_while_writing_keeps_finished_parts_and_resumes(tmp_path, monkeypatch):
    real_replace = os.replace
    written = []

    def replace(src, dst):
        if Path(dst).parent.name == "parts" and written:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_replace(src, dst)
        if Path(dst).parent.name == "parts":
            written.append(dst)

    monkeypatch.setattr(experiment.os, "replace", replace)
    code, line = run_plab(tmp_path, "sonar", SMALL_RUN, data=False, expect=1)
    parts = tmp_path / "out" / "parts"
    assert_says(line, "no space left on the disk while writing", str(parts), "nothing finished is lost",
                "free some disk space", "run the same command again to resume")
    assert [p.name for p in parts.iterdir()] == [Path(written[0]).name]  # no temporary file left behind
    monkeypatch.setattr(experiment.os, "replace", real_replace)

    cfg = tmp_path / "fault.yaml"
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "1 run(s) computed, 1 reused" in r.output


def test_unwritable_output_file_names_the_file_and_out(tmp_path, monkeypatch):
    def replace(src, dst):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(experiment.os, "replace", replace)
    code, line = run_plab(tmp_path, "sonar", SMALL_RUN, data=False, expect=1)
    assert_says(line, "cannot write", "run.json", "Permission denied", "--out")


# --------------------------------------------------------------------------- numerics that would go silently wrong


def test_float32_poly_kernel_that_underflows_is_refused_with_a_degree_that_fits(tmp_path):
    # scaled to keep the largest K(x, x) at 1, the smallest falls below float32's range: those
    # examples' kernel rows would be all zero (a wrong result with exit 0 before)
    extra = "kernel: {type: poly, degree: 80}\ntraining: {epochs: 1, dtype: float32}"
    code, line = run_plab(tmp_path, "sonar", extra, data=False, expect=4)
    assert_says(line, "K(x, x) falls to 1e-", "below float32's range", "training.dtype: float64",
                "lower kernel.degree to")
    top = int(line.split("lower kernel.degree to ")[1].split()[0])
    ok = f"kernel: {{type: poly, degree: {top}}}\ntraining: {{epochs: 1, dtype: float32}}"
    r = CliRunner().invoke(main, ["run", str(_write(tmp_path, ok)), "--out", str(tmp_path / "ok"), "-q"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output


def test_gaussian_width_that_makes_k_the_identity_is_refused_with_a_width(tmp_path):
    code, line = run_plab(tmp_path, "sonar", "kernel: {type: gaussian, sigma: 0.001}\ntraining: {epochs: 1}",
                          data=False, expect=4)
    assert_says(line, "K is the identity", "every prediction would be label 0", "set kernel.sigma near")
    sigma = line.split("set kernel.sigma near ")[1].split()[0]
    r = CliRunner().invoke(main, ["run", str(_write(tmp_path, f"kernel: {{type: gaussian, sigma: {sigma}}}\n"
                                                            "training: {epochs: 1}")),
                                  "--out", str(tmp_path / "ok"), "-q"], catch_exceptions=False)
    assert r.exit_code == 0, r.output


def _write(tmp_path, extra):
    p = tmp_path / "ok.yaml"
    p.write_text(KFOLD.format(name="sonar", extra=extra))
    return p


# --------------------------------------------------------------------------- bounds checked before work starts

_HUGE_GRID = "\n".join(f"    {k}: [{', '.join(str(v) for v in range(1, 51))}]" for k in (
    "algorithm.tau", "algorithm.eta", "algorithm.lambda", "training.epochs", "training.permutations",
    "training.seed"))


@pytest.mark.parametrize("extra, says", [
    ("training: {epochs: 1000000000}", "training steps (runs x epochs x 208 examples"),
    ("training: {permutations: 1000000000000}", "2e+12 runs (grid points x folds x permutations"),
    ("training: {epochs: 1000, curve_every: 0.001}", "checkpoints per run (training.epochs / training.curve_every"),
])
def test_absurd_run_sizes_are_refused_before_work(tmp_path, extra, says):
    code, line = run_plab(tmp_path, "sonar", extra, data=False, expect=2)
    assert_says(line, "this run would need", says, "hours of training", "--allow-large")
    assert not (tmp_path / "out" / "parts").exists() or not list((tmp_path / "out" / "parts").iterdir())


def test_grid_of_six_keys_by_fifty_values_is_refused_without_building_it(tmp_path):
    cfg = tmp_path / "big.yaml"
    cfg.write_text(f"name: big\ndataset: {{name: sonar}}\nevaluation:\n  mode: kfold\n  grid:\n{_HUGE_GRID}\n")
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"], catch_exceptions=False)
    errors = [ln for ln in r.output.splitlines() if ln.startswith("plab: error:")]
    assert r.exit_code == 2 and len(errors) == 1 and "1.56e+11 runs" in errors[0]


def test_allow_large_lifts_the_limits(monkeypatch):
    from perceptron_lab.model import bounds
    from perceptron_lab.model.bounds import check_run_size
    from perceptron_lab.config.load import config_from_dict

    monkeypatch.setattr(bounds, "physical_memory", lambda: 64 * 2**30)   # a machine with 64 GB
    cfg = config_from_dict({"dataset": {"name": "sonar"}, "training": {"permutations": 3 * 10**6}})
    assert check_run_size(cfg, 208, allow_large=True)["units"] == 3 * 10**6
    with pytest.raises(Exception, match="--allow-large"):
        check_run_size(cfg, 208)
    # but not a run no machine can do: 10**12 runs' plan is petabytes
    cfg = config_from_dict({"dataset": {"name": "sonar"}, "training": {"permutations": 10**12}})
    with pytest.raises(Exception, match="more than this machine's 64 GB of memory, even with --allow-large"):
        check_run_size(cfg, 208, allow_large=True)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "big"])
def test_extends_of_a_device_fifo_or_huge_file_is_refused(tmp_path, target):
    if target == "fifo":
        path = tmp_path / "f.yaml"
        os.mkfifo(path)
    elif target == "big":
        path = tmp_path / "big.yaml"
        path.write_text("# " + "x" * (2 << 20) + "\n")
    else:
        path = Path(target)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"extends: {path}\nname: c\ndataset: {{name: sonar}}\n")
    r = CliRunner().invoke(main, ["config", "check", str(cfg)], catch_exceptions=False)
    errors = [ln for ln in r.output.splitlines() if ln.startswith("plab: error:")]
    assert r.exit_code == 2 and len(errors) == 1
    assert "not a regular file" in errors[0] or "a config is at most" in errors[0]


def test_idx_header_whose_dimensions_overflow_is_refused(tmp_path):
    from perceptron_lab.datasets.images import read_idx

    p = tmp_path / "x-idx3-ubyte.gz"
    with gzip.open(p, "wb") as fh:
        fh.write(struct.pack(">HBB3I", 0, 8, 3, 2**32 - 1, 2**32 - 1, 2**32 - 1) + b"\0" * 100)
    with pytest.raises(DatasetError, match=r"more than the \d+ plab reads"):
        read_idx(p, 3)


def test_gzip_bomb_in_place_of_an_idx_file_is_not_decompressed_past_its_header(tmp_path):
    from perceptron_lab.datasets.images import read_idx

    p = tmp_path / "bomb-idx1-ubyte.gz"
    with gzip.open(p, "wb", compresslevel=1) as fh:
        fh.write(struct.pack(">HBBI", 0, 8, 1, 10))
        block = b"\0" * (1 << 20)
        for _ in range(256):  # 256 MB of zeros behind a header that declares 10 labels
            fh.write(block)
    assert p.stat().st_size < 2 << 20
    with pytest.raises(DatasetError, match=r"declares dimensions \(10,\) \(10 values\) but the file holds more"):
        read_idx(p, 1)


@pytest.mark.parametrize("evaluation, says", [
    ("{mode: kfold, folds: 300}", "evaluation.folds = 300 exceeds the 208 examples of sonar"),
    ("{mode: nested, folds: 2, inner_folds: 150, grid: {algorithm.tau: [0, 1]}, search: [[algorithm.tau]]}",
     "evaluation.inner_folds = 150 exceeds the 104 examples"),
])
def test_more_folds_than_examples_is_refused(tmp_path, evaluation, says):
    cfg = tmp_path / "f.yaml"
    cfg.write_text(f"name: f\ndataset: {{name: sonar}}\ntraining: {{epochs: 1}}\nevaluation: {evaluation}\n")
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"], catch_exceptions=False)
    errors = [ln for ln in r.output.splitlines() if ln.startswith("plab: error:")]
    assert r.exit_code == 2 and len(errors) == 1 and says in errors[0], r.output
    assert not (tmp_path / "out" / "results.csv").exists()


@pytest.mark.parametrize("case", ["one", "members", "padded", "empty"])
def test_idx_gzip_reads_what_gzip_open_reads(tmp_path, case):
    """MNIST's files are decompressed a read at a time by zlib (the interpreter released): the same
    bytes as ``gzip.open``, whatever the sizes asked for."""
    from perceptron_lab.datasets.images import _Gunzip

    payload = np.random.default_rng(5).integers(0, 256, 70000).astype(np.uint8).tobytes()
    raw = {"one": gzip.compress(payload), "members": gzip.compress(payload[:30000]) + gzip.compress(payload[30000:]),
           "padded": gzip.compress(payload) + b"\0" * 64, "empty": b""}[case]
    p = tmp_path / "f.gz"
    p.write_bytes(raw)
    with gzip.open(p, "rb") as fh:
        want = fh.read()
    for sizes in ([10**9], [16, 10**9], [3, 5, 29990, 7, 10**9]):
        with _Gunzip(p) as fh:
            got = b"".join(fh.read(s) for s in sizes)
        assert got == want


@pytest.mark.parametrize("damage", ["cut", "crc", "trailing"])
def test_idx_gzip_refuses_what_gzip_open_refuses(tmp_path, damage):
    from perceptron_lab.datasets.images import _Gunzip

    whole = bytearray(gzip.compress(np.random.default_rng(6).integers(0, 256, 5000).astype(np.uint8).tobytes()))
    if damage == "cut":
        raw = bytes(whole[:-20])
    elif damage == "crc":
        whole[-8] ^= 0xFF      # the stored CRC-32
        raw = bytes(whole)
    else:
        raw = bytes(whole) + b"junk"
    p = tmp_path / "f.gz"
    p.write_bytes(raw)
    with pytest.raises((EOFError, OSError)):
        with gzip.open(p, "rb") as fh:
            fh.read()
    with pytest.raises((EOFError, zlib.error)):
        with _Gunzip(p) as fh:
            fh.read(10**9)
