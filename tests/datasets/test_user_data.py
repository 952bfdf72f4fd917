"""Data files of one's own from the command line: CSV, TSV, LIBSVM and .npz end to end, their bad
inputs (exit status 3 with the file, the line and the fix; config problems exit 2), and resume
never reusing results computed on a file that has changed since."""

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from clitools import one_error, plab
from perceptron_lab.cli.main import main
from perceptron_lab.datasets.user import load_user_data

RUN = "training: {epochs: 2, checkpoints: [1]}\nprediction: {rules: [last, avg, vote]}\n"
KFOLD = RUN + "evaluation: {mode: kfold, folds: 3}\n"



def problem(n=60, seed=0):
    """A small two-class problem: three numeric features and a colour that matters."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 3)), 4)
    colour = rng.choice(["red", "green", "blue"], n)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + (colour == "red") > 0.3, 1, -1)
    return X, colour, y


def write_csv(path, X, colour, y, sep=",", header=("a", "b", "c", "colour", "target")):
    lines = [sep.join(header)]
    lines += [sep.join([*(f"{v:.4f}" for v in X[i]), colour[i], str(y[i])]) for i in range(len(y))]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_config(tmp_path, dataset, extra=KFOLD, name="c.yaml"):
    p = tmp_path / name
    p.write_text(f"dataset: {dataset}\n{extra}")
    return p


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ----------------------------------------------------------------------------- formats end to end


def test_categorical_columns_expand_to_indicators_as_the_uci_loaders_do(here):
    X, colour, y = problem()
    write_csv(here / "d.csv", X, colour, y)
    ds = load_user_data(here / "d.csv", "csv", label="target")
    assert ds.meta["feature_names"] == ["a", "b", "c", "colour=blue", "colour=green", "colour=red"]
    np.testing.assert_array_equal(ds.X_train[:, :3], X)
    for k, value in enumerate(["blue", "green", "red"]):
        np.testing.assert_array_equal(ds.X_train[:, 3 + k], (colour == value).astype(float))
    assert ds.classes == [-1, 1]  # numeric labels sort as numbers; classes[1] is the positive class
    np.testing.assert_array_equal(ds.y_train, (y == 1).astype(int))
    # a numeric column listed in dataset.categorical is expanded too
    ds = load_user_data(here / "d.csv", "csv", label="colour", categorical=["target"])
    assert ds.meta["feature_names"][-2:] == ["target=-1", "target=1"] and ds.classes == ["blue", "green", "red"]


def test_csv_tsv_libsvm_and_npz_give_byte_identical_results(here):
    from sklearn.datasets import dump_svmlight_file

    X, colour, y = problem()
    write_csv(here / "d.csv", X, colour, y)
    write_csv(here / "d.tsv", X, colour, y, sep="\t")
    features = load_user_data(here / "d.csv", "csv", label="target").X_train  # indicators included
    dump_svmlight_file(features, y, str(here / "d.libsvm"), zero_based=False)
    np.savez(here / "d.npz", X=features, y=y)
    texts = {}
    for ext in ("csv", "tsv", "libsvm", "npz"):
        label = ", label: target" if ext in ("csv", "tsv") else ""
        cfg = write_config(here, f"{{path: d.{ext}{label}}}", name=f"{ext}.yaml")
        status, out, errors = plab("run", cfg, "--out", here / ext, "-q")
        assert status == 0 and not errors, errors
        assert "3 run(s) computed" in out
        texts[ext] = (here / ext / "results.csv").read_text()
        info = json.loads((here / ext / "run.json").read_text())
        assert info["dataset"]["n_features"] == 6 and info["dataset"]["n_train"] == 60
    assert texts["csv"] == texts["tsv"] == texts["libsvm"] == texts["npz"]
    df = pd.read_csv(here / "csv" / "results.csv")
    assert set(df["dataset"]) == {"d"} and sorted(df["fold"].unique()) == [0, 1, 2]


def test_a_test_file_is_the_holdout_split_and_columns_may_come_in_any_order(here):
    X, colour, y = problem(80)
    write_csv(here / "train.csv", X[:60], colour[:60], y[:60])
    # the test file lists its columns in another order
    rows = ["target,colour,c,b,a"] + [f"{y[i]},{colour[i]},{X[i, 2]:.4f},{X[i, 1]:.4f},{X[i, 0]:.4f}"
                                      for i in range(60, 80)]
    (here / "test.csv").write_text("\n".join(rows) + "\n")
    cfg = write_config(here, "{path: train.csv, test_path: test.csv, label: target}", extra=RUN)
    status, out, errors = plab("run", cfg, "--out", here / "out", "-q")
    assert status == 0, errors
    info = json.loads((here / "out" / "run.json").read_text())
    assert (info["dataset"]["n_train"], info["dataset"]["n_test"]) == (60, 20)
    ds = load_user_data(here / "train.csv", "csv", label="target", test_path=here / "test.csv")
    ref = load_user_data(here / "test.csv", "csv", label="target")  # its own column order
    np.testing.assert_array_equal(ds.X_test[:, :3], X[60:80])
    assert ds.X_test.shape == (20, 6) and ref.meta["feature_names"][0] == "colour=blue"


def test_paths_are_relative_to_the_config_file_and_to_the_extending_one(tmp_path, monkeypatch):
    X, colour, y = problem()
    (tmp_path / "data").mkdir()
    (tmp_path / "exp" / "sub").mkdir(parents=True)
    write_csv(tmp_path / "data" / "d.csv", X, colour, y)
    base = write_config(tmp_path / "exp", "{path: ../data/d.csv, label: target}", name="base.yaml")
    (tmp_path / "exp" / "sub" / "child.yaml").write_text("extends: ../base.yaml\ntraining: {epochs: 1}\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for cfg, stored in ((base, "../data/d.csv"), (tmp_path / "exp" / "sub" / "child.yaml", "../../data/d.csv")):
        status, out, errors = plab("run", cfg, "--out", tmp_path / cfg.stem, "-q")
        assert status == 0, errors
        info = json.loads((tmp_path / cfg.stem / "run.json").read_text())
        assert info["config"]["dataset"]["path"] == stored  # relative to the config being run
        assert "name" not in info["config"]["dataset"]


# ----------------------------------------------------------------------------- bad inputs


def csv_case(text, extra=KFOLD, dataset="{path: d.csv, label: target}"):
    def make(here):
        (here / "d.csv").write_text(text)
        return write_config(here, dataset, extra)
    return make


GOOD = "a,b,target\n" + "".join(f"{i},{i % 3},{'yes' if i % 2 else 'no'}\n" for i in range(12))

CSV_CASES = {
    "missing file": (csv_case(GOOD, dataset="{path: nope.csv, label: target}"),
                     ["nope.csv: not found. Fix: correct dataset.path in ", "c.yaml (a relative path is relative to"]),
    "label column (did you mean)": (csv_case(GOOD, dataset="{path: d.csv, label: targt}"),
                                    ["d.csv, line 1: no column 'targt'", "did you mean 'target'?"]),
    "ragged row": (csv_case(GOOD.replace("3,0,yes\n", "3,0\n")),
                   ["d.csv, line 5: 2 fields, but the header line has 3 columns"]),
    "non-numeric": (csv_case(GOOD.replace("7,1,yes", "7,x1,yes")),
                    ["d.csv, line 9: column 'b' is 'x1', not a number", "dataset.categorical"]),
    "empty file": (csv_case(""), ["d.csv: the file is empty"]),
    "header only": (csv_case("a,b,target\n"), ["d.csv: holds a header line but no examples"]),
    "one class": (csv_case(GOOD.replace("no\n", "yes\n")),
                  ["label column 'target' holds one class ('yes') in all 12 rows"]),
    "NaN": (csv_case(GOOD.replace("4,1,no", "NaN,1,no")),
            ["d.csv, line 6: column 'a' has a missing value ('NaN')", "does not impute"]),
    "empty field": (csv_case(GOOD.replace("4,1,no", "4,,no")), ["d.csv, line 6: column 'b' has a missing value"]),
    "inf": (csv_case(GOOD.replace("4,1,no", "inf,1,no")), ["d.csv, line 6: column 'a' is inf, not a finite number"]),
    "not UTF-8": (csv_case(GOOD.replace("4,1,no", "4,1,n\xf6")), []),  # written as UTF-8: valid
    "regression target": (csv_case(GOOD.replace("yes\n", "1\n").replace("no\n", "0\n").replace("4,1,0", "4,1,0.25")),
                          ["d.csv, line 6: the label column 'target' holds '0.25', not a class label"]),
    "duplicate column": (csv_case(GOOD.replace("a,b,target", "a,a,target")), ["column 'a' appears 2 times"]),
}


@pytest.mark.parametrize("case", list(CSV_CASES))
def test_bad_csv_stops_with_the_file_the_line_and_the_fix(here, case):
    make, expected = CSV_CASES[case]
    cfg = make(here)
    if not expected:  # a control: the same file with a valid change runs
        status, _, errors = plab("run", cfg, "--out", here / "out", "-q")
        assert status == 0, errors
        return
    line = one_error(3, "run", cfg, "--out", here / "out", "-q")
    for text in expected:
        assert text in line, line
    assert "Fix:" in line
    assert not (here / "out" / "results.csv").exists()


def test_bad_test_files(here):
    (here / "d.csv").write_text(GOOD)
    (here / "t.csv").write_text(GOOD.replace("a,b,target", "a,bb,target"))
    cfg = write_config(here, "{path: d.csv, test_path: t.csv, label: target}", RUN)
    line = one_error(3, "run", cfg, "--out", here / "o1", "-q")
    assert "t.csv, line 1: the header line has other columns than the training file" in line
    assert "missing 'b'" in line and "not in the training file 'bb'" in line
    (here / "t.csv").write_text("a,b,target\n1,2,maybe\n")
    line = one_error(3, "run", cfg, "--out", here / "o2", "-q")
    assert "t.csv, line 2: label 'maybe' does not occur in the training file" in line
    (here / "t.csv").write_text("a,b,target\n1,two,yes\n")
    line = one_error(3, "run", cfg, "--out", here / "o3", "-q")
    assert "t.csv, line 2: column 'b' is 'two', not a number (the column is numeric in the training file" in line
    # categories come from the training file
    (here / "c.csv").write_text("a,k,target\n" + "".join(f"{i},{'pq'[i % 2]},{'yn'[i % 2]}\n" for i in range(8)))
    (here / "ct.csv").write_text("a,k,target\n1,p,y\n2,r,n\n")
    cfg = write_config(here, "{path: c.csv, test_path: ct.csv, label: target}", RUN)
    line = one_error(3, "run", cfg, "--out", here / "o4", "-q")
    assert "ct.csv, line 3: column 'k' has the category 'r', which the training file" in line


def test_bad_libsvm_files(here):
    good = "".join(f"{1 if i % 2 else -1} 1:{i}.5 3:{i % 3}\n" for i in range(10))
    cfg = write_config(here, "{path: d.libsvm}")
    (here / "d.libsvm").write_text(good.replace("1:2.5 3:2", "1:2.5 x:2"))
    line = one_error(3, "run", cfg, "--out", here / "o1", "-q")
    assert "d.libsvm, line 3: not LIBSVM/SVMlight text: 'x:2' is not an index:value pair" in line and "Fix:" in line
    (here / "d.libsvm").write_text(good.replace("-1 1:4.5 3:1", "0.5 1:4.5 3:1"))
    line = one_error(3, "run", cfg, "--out", here / "o2", "-q")
    assert "d.libsvm, line 5: the label 0.5 is not an integer class label" in line
    (here / "d.libsvm").write_text(good.replace("1:6.5", "1:nan"))
    line = one_error(3, "run", cfg, "--out", here / "o3", "-q")
    assert "d.libsvm, line 7: a feature value is NaN or infinite" in line
    (here / "d.libsvm").write_text("# nothing but a comment\n")
    assert "d.libsvm: the file is empty" in one_error(3, "run", cfg, "--out", here / "o4", "-q")
    (here / "d.libsvm").write_text(good.replace("-1 ", "1 "))
    assert "holds one class (1) in all 10 rows" in one_error(3, "run", cfg, "--out", here / "o5", "-q")
    # a test file may use feature indices the training file lacks (sparse data): they share one
    # feature space, of the features that appear (1 and 3 in the training file, 1, 2 and 7 in the test file)
    (here / "d.libsvm").write_text(good)
    (here / "t.libsvm").write_text("1 1:0.5 7:1\n-1 2:1\n")
    cfg = write_config(here, "{path: d.libsvm, test_path: t.libsvm}", RUN)
    status, _, errors = plab("run", cfg, "--out", here / "o6", "-q")
    assert status == 0, errors
    assert json.loads((here / "o6" / "run.json").read_text())["dataset"]["n_features"] == 4


def test_bad_npz_files(here):
    X = np.arange(24, dtype=float).reshape(12, 2)
    y = np.array(["a", "b"] * 6)
    cfg = write_config(here, "{path: d.npz}")
    np.savez(here / "d.npz", X=X, labels=y)
    line = one_error(3, "run", cfg, "--out", here / "o1", "-q")
    assert "d.npz: has no array y (its arrays: X, labels)" in line and "np.savez(path, X=features, y=labels)" in line
    np.savez(here / "d.npz", features=X, y=y)
    assert "has no array X" in one_error(3, "run", cfg, "--out", here / "o2", "-q")
    np.savez(here / "d.npz", X=X, y=y[:-1])
    assert "d.npz: X has 12 rows but y has 11 labels" in one_error(3, "run", cfg, "--out", here / "o3", "-q")
    Xn = X.copy()
    Xn[2, 1] = np.inf
    np.savez(here / "d.npz", X=Xn, y=y)
    assert "d.npz: X[2, 1] (row 3) is inf, not a finite number" in one_error(3, "run", cfg, "--out", here / "o4", "-q")
    np.savez(here / "d.npz", X=X, y=np.array([0.5] * 12))
    assert "y[0] is 0.5, not a class label" in one_error(3, "run", cfg, "--out", here / "o5", "-q")
    np.savez(here / "d.npz", X=X, y=np.array([object()] * 12, dtype=object))
    assert "holds Python objects" in one_error(3, "run", cfg, "--out", here / "o6", "-q")
    (here / "d.npz").write_bytes(b"not a zip file")
    assert "d.npz: cannot read it as a NumPy .npz file" in one_error(3, "run", cfg, "--out", here / "o7", "-q")
    # a test file with other features
    np.savez(here / "d.npz", X=X, y=y)
    np.savez(here / "t.npz", X=np.ones((3, 3)), y=np.array(["a", "b", "a"]))
    cfg = write_config(here, "{path: d.npz, test_path: t.npz}", RUN)
    line = one_error(3, "run", cfg, "--out", here / "o8", "-q")
    assert "t.npz: X has 3 features, but the training file" in line and "has 2" in line


CONFIG_CASES = {
    "holdout without a test file": ("{path: d.csv, label: target}", RUN,
                                    "evaluation.mode = 'holdout' tests on a test file, and dataset.path has none: "
                                    "set dataset.test_path, or evaluation.mode: kfold to cross-validate"),
    "unknown extension": ("{path: d.dat, label: target}", KFOLD,
                          "dataset.path = 'd.dat': cannot tell the format from the extension '.dat'; "
                          "set dataset.format: csv, tsv, libsvm or npz"),
    "name and path": ("{name: sonar, path: d.csv, label: target}", KFOLD,
                      "a run reads a registered dataset or a file of your own; remove one"),
    "label missing": ("{path: d.csv}", KFOLD, "missing key dataset.label (required for a CSV file"),
    "label for npz": ("{path: d.npz, label: y}", KFOLD, "dataset.label applies to CSV/TSV files"),
    "label without path": ("{name: sonar, label: y}", KFOLD, "dataset.label describes a data file of your own"),
    "typo": ("{path: d.csv, label: target, test_pat: t.csv}", KFOLD, "unknown key dataset.test_pat (did you mean 'test_path'?)"),
}


@pytest.mark.parametrize("case", list(CONFIG_CASES))
def test_config_problems_of_own_data_are_one_line_exit_2(here, case):
    dataset, extra, expected = CONFIG_CASES[case]
    (here / "d.csv").write_text(GOOD)
    cfg = write_config(here, dataset, extra)
    assert expected in one_error(2, "run", cfg, "--out", here / "out", "-q")


def test_a_format_given_explicitly_reads_any_extension(here):
    (here / "d.dat").write_text(GOOD)
    cfg = write_config(here, "{path: d.dat, format: csv, label: target}")
    status, _, errors = plab("run", cfg, "--out", here / "out", "-q")
    assert status == 0, errors


# ----------------------------------------------------------------------------- resume


def test_an_edited_file_is_never_reused_on_resume(here):
    X, colour, y = problem()
    write_csv(here / "d.csv", X, colour, y)
    cfg = write_config(here, "{path: d.csv, label: target}")
    status, out, _ = plab("run", cfg, "--out", here / "out", "-q")
    assert status == 0 and "3 run(s) computed, 0 reused" in out
    first = (here / "out" / "results.csv").read_text()
    fingerprint = json.loads((here / "out" / "run.json").read_text())["dataset"]["fingerprint"]
    status, out, _ = plab("run", cfg, "--out", here / "out", "-q")  # unchanged: everything reused
    assert status == 0 and "0 run(s) computed, 3 reused" in out
    assert (here / "out" / "results.csv").read_text() == first
    y2 = y.copy()
    y2[:10] = -y2[:10]  # flip ten labels, same file name, same config
    write_csv(here / "d.csv", X, colour, y2)
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(here / "out"), "-q"], catch_exceptions=False)
    assert r.exit_code == 0 and "3 run(s) computed, 0 reused" in r.stdout
    assert "not reused" in r.stderr
    info = json.loads((here / "out" / "run.json").read_text())
    assert info["dataset"]["fingerprint"] != fingerprint
    assert (here / "out" / "results.csv").read_text() != first
    # the recomputed results are those of a fresh run on the edited file
    status, _, _ = plab("run", cfg, "--out", here / "fresh", "-q")
    assert (here / "fresh" / "results.csv").read_text() == (here / "out" / "results.csv").read_text()
