"""Label identity: a class never merges with another nor splits in two.

Files (CSV/TSV, LIBSVM): a class is the text of its label (without the spaces around a field);
two texts of one number are refused. .npz files and the estimators' ``y``: numpy's equality on
the array as stored. Every case here either keeps the classes exactly or stops with one exit-3
line (files) or a ValueError (estimators).
"""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from clitools import refused
from perceptron_lab import MarginPerceptron, VotedPerceptron
from perceptron_lab.datasets.user import load_user_data

BIG = ["10000000000000000", "10000000000000001", "5"]  # float() makes the first two one number


def csv_file(path, labels, name="d.csv", quote=False):
    """A CSV file with two features and the label column 't'; returns its path."""
    cell = (lambda v: f'"{v}"') if quote else str
    f = path / name
    f.write_text("a,b,t\n" + "".join(f"{i % 7},{(i * 3) % 5},{cell(v)}\n" for i, v in enumerate(labels)))
    return f


def libsvm_file(path, labels, name="d.libsvm"):
    f = path / name
    f.write_text("".join(f"{v} 1:{i % 7} 2:{(i * 3) % 5}\n" for i, v in enumerate(labels)))
    return f


# ----------------------------------------------------------------------------- CSV / TSV: the text is the class


def test_big_integer_labels_stay_distinct(tmp_path):
    ds = load_user_data(csv_file(tmp_path, BIG * 4), "csv", label="t")
    assert ds.classes == [5, 10**16, 10**16 + 1]  # numeric order, exact Python ints
    assert all(type(c) is int for c in ds.classes)
    np.testing.assert_array_equal(ds.y_train, [1, 2, 0] * 4)


def test_labels_beyond_64_bits_stay_distinct(tmp_path):
    labels = [str(2**64), str(2**64 + 1), str(-(2**70))] * 3
    ds = load_user_data(csv_file(tmp_path, labels), "csv", label="t")
    assert ds.classes == [-(2**70), 2**64, 2**64 + 1]
    np.testing.assert_array_equal(ds.y_train, [1, 2, 0] * 3)


@pytest.mark.parametrize("a, b", [("1", "1.0"), ("1", "01"), ("1", "+1"), ("0", "-0"), ("1000", "1e3"),
                                  ("2", "2.00"), ("-1", "-1.")])
def test_two_texts_of_one_number_are_refused(tmp_path, a, b):
    f = csv_file(tmp_path, [a, b, "7"] * 3)
    refused(lambda: load_user_data(f, "csv", label="t"), "line 3:", "writes one number two ways",
            f"{a!r} (line 2) and {b!r} (line 3)", "write each class one way")


@pytest.mark.parametrize("a, b", [("caf\u00e9", "cafe\u0301"), ("1", "\uff11"), ("fi", "\ufb01")])
def test_two_unicode_encodings_of_one_label_are_refused(tmp_path, a, b):
    f = csv_file(tmp_path, [a, b, "z"] * 3)
    refused(lambda: load_user_data(f, "csv", label="t"), "line 3:", "writes one label two ways",
            f"{ascii(a)} (line 2) and {ascii(b)} (line 3)")


def test_non_ascii_labels_that_differ_are_distinct_classes(tmp_path):
    ds = load_user_data(csv_file(tmp_path, ["\u00e9t\u00e9", "hiver", "\u00c9T\u00c9"] * 3), "csv", label="t")
    assert ds.classes == ["hiver", "\u00c9T\u00c9", "\u00e9t\u00e9"]


def test_the_spaces_around_a_field_are_not_part_of_the_label(tmp_path):
    plain = load_user_data(csv_file(tmp_path, ["1", "2"] * 4, "p.csv"), "csv", label="t")
    f = tmp_path / "s.csv"
    f.write_text("a,b,t\n" + "".join(f"{i},{i % 3},{v}\n" for i, v in enumerate([" 1", "2 ", '" 1"', "1"] * 2)))
    spaced = load_user_data(f, "csv", label="t")
    assert spaced.classes == plain.classes == [1, 2]
    np.testing.assert_array_equal(spaced.y_train, [0, 1, 0, 0] * 2)


def test_case_and_spelling_make_distinct_classes(tmp_path):
    ds = load_user_data(csv_file(tmp_path, ["True", "False", "true", "Yes"] * 3), "csv", label="t")
    assert ds.classes == ["False", "True", "Yes", "true"]  # code-point order of the texts
    np.testing.assert_array_equal(ds.y_train, [1, 0, 3, 2] * 3)


def test_a_mixed_column_is_text_in_code_point_order(tmp_path):
    ds = load_user_data(csv_file(tmp_path, ["10", "x", "9"] * 3), "csv", label="t")
    assert ds.classes == ["10", "9", "x"]
    np.testing.assert_array_equal(ds.y_train, [0, 2, 1] * 3)


def test_numbers_written_non_canonically_keep_their_text_and_numeric_order(tmp_path):
    ds = load_user_data(csv_file(tmp_path, ["+1", "-1"] * 4), "csv", label="t")
    assert ds.classes == ["-1", "+1"]  # classes[1], the positive class, is +1
    ds = load_user_data(csv_file(tmp_path, ["10.0", "9.0", "-2.0"] * 3), "csv", label="t")
    assert ds.classes == ["-2.0", "9.0", "10.0"]
    np.testing.assert_array_equal(ds.y_train, [2, 1, 0] * 3)


def test_numbers_beyond_the_float_range_are_exact_labels(tmp_path):
    ds = load_user_data(csv_file(tmp_path, ["1e400", "2", "9" * 400, "9" * 399 + "8"] * 2), "csv", label="t")
    assert ds.classes == ["2", "9" * 399 + "8", "9" * 400, "1e400"]


@pytest.mark.parametrize("value", ["0.5", "1.0000000000000001", "1e-400"])
def test_fractional_labels_are_a_regression_target(tmp_path, value):
    f = csv_file(tmp_path, ["1", "2", value] * 3)
    refused(lambda: load_user_data(f, "csv", label="t"), "line 4:", f"holds {value!r}, not a class label")


@pytest.mark.parametrize("value, shown", [("", "an empty field"), ("NaN", "'NaN'"), ("NA", "'NA'"),
                                          ("#N/A", "'#N/A'"), ("<NA>", "'<NA>'"), ("-nan", "'-nan'"),
                                          ("null", "'null'")])
def test_missing_labels_are_refused_with_the_line(tmp_path, value, shown):
    f = csv_file(tmp_path, ["a", "b", "a", value, "b"])
    refused(lambda: load_user_data(f, "csv", label="t"), "d.csv, line 5:", f"missing value ({shown})")


@pytest.mark.parametrize("value", ["inf", "-Infinity"])
def test_infinite_labels_are_refused(tmp_path, value):
    f = csv_file(tmp_path, ["1", "2", value] * 2)
    refused(lambda: load_user_data(f, "csv", label="t"), "line 4:", f"holds {value!r}, not a class label")


def test_a_class_named_all_is_refused_only_when_results_csv_would_mix_it_up(tmp_path):
    f = csv_file(tmp_path, ["all", "some", "few"] * 3)
    refused(lambda: load_user_data(f, "csv", label="t"), "class named 'all'", "rename that class")
    assert load_user_data(csv_file(tmp_path, ["all", "some"] * 3), "csv", label="t").classes == ["all", "some"]


def test_a_test_file_label_is_matched_by_its_text(tmp_path):
    train = csv_file(tmp_path, ["1", "2"] * 4)
    test = csv_file(tmp_path, ["2", "1.0"], name="t.csv")
    refused(lambda: load_user_data(train, "csv", label="t", test_path=test), "t.csv, line 3:",
            "label '1.0' is written '1' in the training file")
    test = csv_file(tmp_path, ["2", "3"], name="t.csv")
    refused(lambda: load_user_data(train, "csv", label="t", test_path=test), "t.csv, line 3:",
            "label '3' does not occur in the training file")
    test = csv_file(tmp_path, ["2", " 1 "], name="t.csv")
    ds = load_user_data(train, "csv", label="t", test_path=test)
    np.testing.assert_array_equal(ds.y_test, [1, 0])


def test_tsv_labels_follow_the_same_rule(tmp_path):
    f = tmp_path / "d.tsv"
    f.write_text("a\tt\n" + "".join(f"{i}\t{v}\n" for i, v in enumerate(BIG * 3)))
    assert load_user_data(f, "tsv", label="t").classes == [5, 10**16, 10**16 + 1]


# ----------------------------------------------------------------------------- LIBSVM: labels read from the text


def test_libsvm_big_integer_labels_stay_distinct(tmp_path):
    ds = load_user_data(libsvm_file(tmp_path, BIG * 4), "libsvm")
    assert ds.classes == [5, 10**16, 10**16 + 1]
    np.testing.assert_array_equal(ds.y_train, [1, 2, 0] * 4)


def test_libsvm_plus_one_and_minus_one(tmp_path):
    ds = load_user_data(libsvm_file(tmp_path, ["+1", "-1"] * 4), "libsvm")
    assert ds.classes == ["-1", "+1"]
    np.testing.assert_array_equal(ds.y_train, [1, 0] * 4)


@pytest.mark.parametrize("labels, line, text", [
    (["1", "1.0", "2"], 2, "writes one number two ways: '1' (line 1) and '1.0' (line 2)"),
    (["1", "+1", "-1"], 2, "writes one number two ways: '1' (line 1) and '+1' (line 2)"),
    (["1", "nan", "2"], 2, "holds 'nan', not a class label"),
    (["1", "0.5", "2"], 2, "the label 0.5 is not an integer class label"),
    (["1", "1,2", "2"], 2, "holds several labels"),
    (["1", "yes", "2"], 2, "the label 'yes' is not a number"),
])
def test_libsvm_bad_labels(tmp_path, labels, line, text):
    f = libsvm_file(tmp_path, labels * 3)
    refused(lambda: load_user_data(f, "libsvm"), f"d.libsvm, line {line}:", text)


# ----------------------------------------------------------------------------- .npz: numpy's equality


def npz_file(path, y, X=None, name="d.npz"):
    X = np.arange(2 * len(y), dtype=float).reshape(len(y), 2) if X is None else X
    np.savez(path / name, X=X, y=y)
    return path / name


@pytest.mark.parametrize("y, classes", [
    (np.array([2**64 - 1, 2**64 - 2] * 4, dtype=np.uint64), [2**64 - 2, 2**64 - 1]),
    (np.array([2**62 + 1, 2**62] * 4, dtype=np.int64), [2**62, 2**62 + 1]),
    (np.array([1e19, 2e19, 3.0] * 3), [3, 10**19, 2 * 10**19]),         # was cast to int64 and merged
    (np.array([2.0**53, 2.0**53 + 2, 1.0] * 3), [1, 2**53, 2**53 + 2]),
    (np.array([-0.0, 0.0, 1.0, 1.0] * 2), [0, 1]),                       # numpy: -0.0 == 0.0
    (np.array([True, False] * 4), [False, True]),
    (np.array(["b", "a", "B"] * 3), ["B", "a", "b"]),
    (np.array([b"x", b"y"] * 4), ["x", "y"]),
])
def test_npz_labels_are_numpys_values(tmp_path, y, classes):
    ds = load_user_data(npz_file(tmp_path, y), "npz")
    assert ds.classes == classes and [type(c) for c in ds.classes] == [type(c) for c in classes]
    np.testing.assert_array_equal(np.asarray(ds.classes, dtype=object)[ds.y_train], y.tolist()
                                  if y.dtype.kind != "S" else [v.decode() for v in y.tolist()])


@pytest.mark.parametrize("y, text", [
    (np.array(["a", ""] * 4), "y[1] (row 2) is an empty string, a missing label"),
    (np.array(["a", "NA"] * 4), "y[1] (row 2) is 'NA', a missing label"),
    (np.array([1.0, np.nan] * 4), "y[1] is nan, not a class label"),
    (np.array([1.0, 0.5] * 4), "y[1] is 0.5, not a class label"),
    (np.array([b"a", b"\xff"] * 4), "y[1] is b'\\xff', not UTF-8 text"),
    (np.array(["all", "b", "c"] * 3), "class named 'all'"),
    (np.array(["2020-01-01", "2021-01-01"] * 4, dtype="datetime64[D]"), "y holds datetime64[D] values"),
])
def test_npz_bad_labels(tmp_path, y, text):
    f = npz_file(tmp_path, y)
    refused(lambda: load_user_data(f, "npz"), "d.npz", text)


def test_npz_test_labels_must_have_the_training_labels_type(tmp_path):
    train = npz_file(tmp_path, np.array([0, 1] * 4))
    test = npz_file(tmp_path, np.array(["0", "1"]), name="t.npz")
    refused(lambda: load_user_data(train, "npz", test_path=test), "t.npz: y holds text labels, but the training "
            "file")
    test = npz_file(tmp_path, np.array([True, False]), name="t.npz")
    refused(lambda: load_user_data(train, "npz", test_path=test), "y holds bool labels")
    test = npz_file(tmp_path, np.array([1.0, 0.0]), name="t.npz")
    np.testing.assert_array_equal(load_user_data(train, "npz", test_path=test).y_test, [1, 0])


# ----------------------------------------------------------------------------- the round trip to results.csv


def run_cli(cfg, out):
    r = subprocess.run([sys.executable, "-m", "perceptron_lab.cli.main", "run", str(cfg), "--out", str(out), "-q"],
                       capture_output=True, text=True)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def test_results_csv_holds_the_exact_label_texts(tmp_path):
    labels = ["10000000000000000", "10000000000000001", "5", '"b,c"', "+7"] * 6
    csv_file(tmp_path, labels)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: {path: d.csv, label: t}\ntraining: {epochs: 1, checkpoints: [1]}\n"
                   "prediction: {rules: [last]}\nevaluation: {mode: kfold, folds: 2}\n")
    r = run_cli(cfg, tmp_path / "out")
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(tmp_path / "out" / "results.csv", dtype=str, keep_default_na=False)
    assert set(df["class"]) == {"all", "10000000000000000", "10000000000000001", "5", "b,c", "+7"}


def test_two_texts_of_one_number_stop_the_cli_with_one_line(tmp_path):
    csv_file(tmp_path, ["1", "1.0", "2"] * 4)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: {path: d.csv, label: t}\nevaluation: {mode: kfold, folds: 2}\n")
    r = run_cli(cfg, tmp_path / "out")
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("plab: error:")]
    assert r.returncode == 3 and len(errors) == 1, r.stderr
    assert "d.csv, line 3: the label column 't' writes one number two ways" in errors[0]


# ----------------------------------------------------------------------------- estimators: numpy's notion of y


X2 = np.array([[1.0, 0.2], [-1.0, 0.1], [0.9, -0.3], [-1.2, 0.0], [1.1, 0.4], [-0.8, -0.2]])


@pytest.mark.parametrize("y", [
    [10**16 + 1, 10**16, 10**16 + 1, 10**16, 10**16 + 1, 10**16],
    np.array([2**64 - 1, 2**64 - 2] * 3, dtype=np.uint64),
    np.array([2**62 + 1, 2**62] * 3, dtype=np.int64),
    np.array(["pos", "neg"] * 3, dtype=object),
    np.array([True, False] * 3),
    pd.Series(pd.Categorical(["pos", "neg"] * 3, categories=["pos", "neg"])),
    pd.Series(pd.Categorical([10**16 + 1, 10**16] * 3)),
])
def test_predictions_return_the_original_labels(y):
    clf = VotedPerceptron(rule="last", epochs=3, random_state=0).fit(X2, y)
    expected = np.asarray(y)
    assert len(clf.classes_) == 2
    pred = clf.predict(X2)  # the data are separable through the origin: every training label comes back
    assert pred.dtype == clf.classes_.dtype
    assert pred.tolist() == expected.tolist()


@pytest.mark.parametrize("y, text", [
    (["1", 1, "1", 1, 2, 2], "y mixes label types"),
    ([True, 1, 0, True, 1, 0], "y mixes label types"),
    ([2**53, 2**53 + 1, 1.0, 2**53, 2**53 + 1, 1.0], "is not exactly a float"),
    ([2**1100, 1.0] * 3, "is not exactly a float"),
    (np.array([np.uint64(2**64 - 1), 1.5] * 3, dtype=object), "is not exactly a float"),
    (pd.Series(["a", pd.NA] * 3, dtype="string"), "y[1] is <NA>, not a class label"),
    (np.array([1, "1"] * 3, dtype=object), "y mixes label types"),
    (np.array(["a", None] * 3, dtype=object), "y[1] is None, not a class label"),
])
def test_labels_numpy_would_merge_are_refused(y, text):
    with pytest.raises(ValueError, match=text.replace("[", r"\[").replace("]", r"\]")):
        VotedPerceptron().fit(X2, y)


def test_negative_zero_is_zero_as_numpy_compares():
    clf = VotedPerceptron(random_state=0).fit(X2, np.array([-0.0, 0.0, 1.0] * 2))
    assert clf.classes_.tolist() == [0.0, 1.0]


def test_partial_fit_encodes_labels_exactly():
    y = np.array([2**60 + 1, 2**60] * 3, dtype=np.uint64)  # np.searchsorted against int64 classes made one class
    clf = MarginPerceptron(shuffle=False).partial_fit(X2, y, classes=[2**60, 2**60 + 1])
    np.testing.assert_array_equal(clf._seq[1], [1, 0] * 3)
    assert clf.predict(X2).tolist() == y.tolist()
    with pytest.raises(ValueError, match="not in classes"):
        clf.partial_fit(X2[:1], np.array(["1152921504606846976"]))
    with pytest.raises(ValueError, match="mixes label types"):
        MarginPerceptron().partial_fit(X2, [1, 0] * 3, classes=[0, "1"])
