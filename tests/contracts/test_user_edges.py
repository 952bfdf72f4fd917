"""User data at the edges of each reader (CSV, TSV, LIBSVM, .npz, IDX) and of the file system.

Every case either loads exactly the numbers the file holds or stops with one DatasetError line
(exit status 3) naming the file, the line where there is one, and a fix. A representative subset
runs through the real command line (``python -m perceptron_lab.cli.main run``): exit status 3, exactly
one ``plab: error:`` line and no traceback.
"""

import gzip
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clitools import refused
from perceptron_lab.datasets import images, user
from perceptron_lab.datasets.images import load_mnist, read_idx
from perceptron_lab.datasets.user import load_user_data
from perceptron_lab.errors import DatasetError

ROWS = [(0.5, 2.0, "yes"), (1.5, -1.0, "no"), (2.0, 0.0, "yes"), (-3.25, 4.0, "no")]
X_ROWS = np.array([r[:2] for r in ROWS])
Y_ROWS = np.array([1, 0, 1, 0])  # classes ['no', 'yes']
GOOD = "a,b,t\n" + "".join(f"{a},{b},{t}\n" for a, b, t in ROWS)


def write(path: Path, content) -> Path:
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    return path


def load_csv(tmp_path, content, fmt="csv", **kw):
    return load_user_data(write(tmp_path / f"d.{fmt}", content), fmt, label="t", **kw)


def exact(ds, X=X_ROWS, y=Y_ROWS):
    np.testing.assert_array_equal(ds.X_train, X)
    np.testing.assert_array_equal(ds.y_train, y)


# ----------------------------------------------------------------------------- CSV / TSV that load exactly


@pytest.mark.parametrize("content", [
    GOOD,
    "\ufeff" + GOOD,                                            # a byte-order mark
    GOOD.replace("\n", "\r\n"),                                 # Windows line ends
    GOOD.replace("\n", "\r"),                                   # old Mac line ends
    "\n\n" + GOOD.replace("\n", "\n\n"),                        # blank lines
    GOOD.replace("0.5,2.0,yes", '"0.5","2.0","yes"'),           # quoted fields
    GOOD.replace("0.5,2.0,yes", " 0.5 , 2.0 , yes "),           # spaces around fields
    GOOD.rstrip("\n"),                                          # no newline at the end
    GOOD.replace("0.5,", "5e-1,").replace("-3.25", "-325E-2"),  # exponents
], ids=["plain", "bom", "crlf", "cr", "blank-lines", "quoted", "spaces", "no-final-newline", "exponents"])
def test_csv_variants_load_the_same_numbers(tmp_path, content):
    exact(load_csv(tmp_path, content))


def test_tsv_with_crlf_and_bom_loads_the_same_numbers(tmp_path):
    exact(load_csv(tmp_path, "\ufeff" + GOOD.replace(",", "\t").replace("\n", "\r\n"), "tsv"))


def test_extreme_finite_values_are_read_exactly(tmp_path):
    content = GOOD.replace("0.5,2.0", "1.7976931348623157e308,5e-324").replace("1.5,-1.0", "-0.0,-1.0")
    ds = load_csv(tmp_path, content)
    assert ds.X_train[0, 0] == np.finfo(np.float64).max and ds.X_train[0, 1] == 5e-324
    assert ds.X_train[1, 0] == 0.0


def test_a_very_wide_file_loads(tmp_path):
    n = 5000  # one line of about 40 kB
    header = ",".join(f"c{j}" for j in range(n)) + ",t\n"
    lines = "".join(",".join(str((i * j) % 7) for j in range(n)) + f",{'ab'[i % 2]}\n" for i in range(4))
    ds = load_csv(tmp_path, header + lines)
    assert ds.X_train.shape == (4, n) and ds.X_train[3, 5] == (3 * 5) % 7


def test_codes_that_merely_contain_digits_stay_categories(tmp_path):
    content = "a,ip,version,day,t\n1,10.0.0.1,1.2.3,2020-01-01,x\n2,10.0.0.2,1.10.0,2020-01-02,y\n"
    ds = load_csv(tmp_path, content)
    assert ds.meta["feature_names"] == ["a", "ip=10.0.0.1", "ip=10.0.0.2", "version=1.10.0", "version=1.2.3",
                                        "day=2020-01-01", "day=2020-01-02"]


def test_decimal_commas_listed_as_categorical_are_categories(tmp_path):
    content = 'a,k,t\n1,"1,5",x\n2,"2,5",y\n3,"1,5",x\n'
    ds = load_csv(tmp_path, content, categorical=["k"])
    assert ds.meta["feature_names"] == ["a", "k=1,5", "k=2,5"]


# ----------------------------------------------------------------------------- CSV / TSV that are refused


CSV_REFUSED = {
    "empty file": ("", "d.csv: the file is empty"),
    "blank lines only": ("\n \n\n", "d.csv: the file is empty"),
    "header only": ("a,b,t\n", "holds a header line but no examples"),
    "trailing comma": (GOOD.replace("\n", ",\n"), "line 1: column 4 of the header line has no name (a separator at "
                                                  "the end of the line?)"),
    "empty column name": (GOOD.replace("a,b,t", "a,,t"), "line 1: column 2 of the header line has no name"),
    "ragged short": (GOOD + "1,2\n", "line 6: 2 fields, but the header line has 3 columns"),
    "ragged long": (GOOD + "1,2,yes,4\n", "line 6: 4 fields, but the header line has 3 columns"),
    "unclosed quote": (GOOD.replace("1.5,-1.0", '"1.5,-1.0'), "not valid comma-separated text"),
    "huge field": (GOOD + '"' + "9" * 200_000 + '",1,yes\n', "line 6: not valid comma-separated text"),
    "latin-1": (GOOD.replace("yes", "s\xed").encode("latin-1"), "line 2: byte 0xed is not UTF-8 text"),
    "utf-16": (GOOD.encode("utf-16"), "line 1: byte 0xff is not UTF-8 text"),
    "NUL bytes": (GOOD.replace("2.0,", "2\x00,"), "line 2: holds NUL bytes"),
    "overflow to inf": (GOOD.replace("0.5,", "1e309,"), "line 2: column 'a' is inf, not a finite number"),
    "nan feature": (GOOD.replace("0.5,", "nan,"), "line 2: column 'a' has a missing value ('nan')"),
    "-inf feature": (GOOD.replace("0.5,", "-inf,"), "line 2: column 'a' is -inf, not a finite number"),
    "decimal comma": ('a,b,t\n"0,5",2,yes\n"1,5",1,no\n', "line 2: column 'a' holds '0,5': numbers written with "
                                                          "a decimal comma"),
    "thousands separator": ('a,b,t\n"1,000",2,yes\n"2,500",1,no\n', "column 'a' holds '1,000'"),
    "space digit groups": ("a,b,t\n1 000,2,yes\n2 500,1,no\n", "column 'a' holds '1 000'"),
    "grouped decimal comma": ('a,b,t\n"1.000,5",2,yes\n"2.500,25",1,no\n', "column 'a' holds '1.000,5'"),
    "percent": ("a,b,t\n50%,2,yes\n12.5 %,1,no\n", "column 'a' holds '50%'"),
    "currency": ("a,b,t\n$5,2,yes\n\u20ac 12.50,1,no\n", "column 'a' holds '$5'"),
    "hex number": (GOOD.replace("0.5,", "0x10,"), "line 2: column 'a' is '0x10', not a number"),
    "comment line": ("# exported\n" + GOOD, "line 1: the header line has 1 column ('# exported')"),
    "label only": ("t\nyes\nno\n", "the header line has 1 column ('t')"),
    "semicolons": (GOOD.replace(",", ";"), "the header line has 1 column ('a;b;t')"),
    "duplicate column": (GOOD.replace("a,b,t", "a,a,t"), "column 'a' appears 2 times"),
    "no label column": (GOOD.replace("a,b,t", "a,b,target"), "no column 't' (given by dataset.label)"),
    "one class": (GOOD.replace("no", "yes"), "holds one class ('yes') in all 4 rows"),
    "unicode twin category": ("a,k,t\n1,caf\u00e9,x\n2,cafe\u0301,y\n", "line 3: column 'k' writes one category two "
                                                                      "ways: 'caf\\xe9' (line 2) and 'cafe\\u0301'"),
}


@pytest.mark.parametrize("case", list(CSV_REFUSED))
def test_csv_edges_are_refused(tmp_path, case):
    content, text = CSV_REFUSED[case]
    refused(lambda: load_csv(tmp_path, content), str(tmp_path / "d.csv"), text)


def test_tsv_edges_are_refused(tmp_path):
    tsv = GOOD.replace(",", "\t")
    refused(lambda: load_csv(tmp_path, tsv.replace("\n", "\t\n"), "tsv"), "d.tsv, line 1: column 4 of the header "
            "line has no name")
    refused(lambda: load_csv(tmp_path, GOOD, "tsv"), "the header line has 1 column ('a,b,t')",
            "separate the columns by tabs")


# ----------------------------------------------------------------------------- LIBSVM


LIB = "+1 1:0.5 2:2\n-1 1:1.5 2:-1\n+1 1:2\n-1 1:-3.25 2:4\n"
LIB_X = np.array([[0.5, 2.0], [1.5, -1.0], [2.0, 0.0], [-3.25, 4.0]])


def load_lib(tmp_path, content, name="d.libsvm", **kw):
    return load_user_data(write(tmp_path / name, content), "libsvm", **kw)


@pytest.mark.parametrize("content", [
    LIB,
    LIB.replace("\n", "\r\n"),
    "# a comment line\n\n" + LIB.replace("2:2\n", "2:2  # trailing comment, caf\xe9\n"),
    LIB.replace(" 1:", " qid:3 1:"),                   # query ids are ignored
    LIB.replace(" ", "\t"),
    LIB.replace("1:0.5", "1:5e-1").rstrip("\n"),
], ids=["plain", "crlf", "comments", "qid", "tabs", "exponent-no-final-newline"])
def test_libsvm_variants_load_the_same_numbers(tmp_path, content):
    ds = load_lib(tmp_path, content.encode("utf-8"))
    assert ds.classes == ["-1", "+1"]
    exact(ds, LIB_X, [1, 0, 1, 0])


def test_libsvm_zero_based_indices_add_a_column_and_keep_the_numbers(tmp_path):
    ds = load_lib(tmp_path, LIB.replace(" 1:", " 0:").replace(" 2:", " 1:"))
    exact(ds, LIB_X, [1, 0, 1, 0])  # index 0 seen: the file is zero-based, columns 0 and 1
    ds = load_lib(tmp_path, LIB.replace("+1 1:2\n", "+1 0:7 1:2\n"))
    exact(ds, np.c_[[0, 0, 7, 0], LIB_X], [1, 0, 1, 0])


def test_libsvm_examples_without_features_are_zero_rows(tmp_path):
    ds = load_lib(tmp_path, LIB + "+1\n")
    exact(ds, np.r_[LIB_X, [[0.0, 0.0]]], [1, 0, 1, 0, 1])


def test_libsvm_a_wide_line_loads_the_features_that_appear(tmp_path):
    # 20000 indices, every fifth written as 0: 16000 features appear, index 7 the sixth of them
    line = " ".join(f"{j}:{j % 5}" for j in range(1, 20001))
    ds = load_lib(tmp_path, f"+1 {line}\n-1 3:1\n")
    assert ds.X_train.shape == (2, 16000) and ds.X_train[0, 5] == 2.0 and ds.X_train[1, 2] == 1.0
    assert ds.meta["feature_names"][:6] == ["f1", "f2", "f3", "f4", "f6", "f7"]


def test_libsvm_a_huge_index_is_one_feature(tmp_path):
    # one index near 2**31 and one near 10**8: two columns, not two billion (memory follows the nonzeros)
    ds = load_lib(tmp_path, LIB.replace("1:1.5 2:-1", "2147483647:1.5").replace("+1 1:2\n", "+1 100000000:2\n"))
    exact(ds, np.array([[0.5, 2.0, 0, 0], [0, 0, 0, 1.5], [0, 0, 2.0, 0], [-3.25, 4.0, 0, 0]]), [1, 0, 1, 0])
    assert ds.meta["feature_names"] == ["f1", "f2", "f100000000", "f2147483647"]


LIB_REFUSED = {
    "labels but no features": ("+1\n-1\n+1\n", "d.libsvm: holds labels but no features"),
    "index 10^12": (LIB.replace("1:1.5", "1000000000000:1.5"), "line 2: not LIBSVM/SVMlight text: feature index "
                    "1000000000000 is beyond the largest one scikit-learn's reader takes (2147483647). Fix: number "
                    "the features from 1 (gaps are fine)."),
    "index 2^31": (LIB.replace("1:1.5", "2147483648:1.5"), "line 2: not LIBSVM/SVMlight text: feature index "
                                                           "2147483648 is beyond"),
    "duplicate index": (LIB.replace("1:1.5 2:-1", "1:1.5 1:-1"), "line 2: not LIBSVM/SVMlight text: feature indices "
                                                                 "must increase along a line (1 follows 1)"),
    "unsorted indices": (LIB.replace("1:1.5 2:-1", "2:-1 1:1.5"), "line 2: not LIBSVM/SVMlight text: feature "
                                                                  "indices must increase along a line (1 follows 2)"),
    "negative index": (LIB.replace("1:1.5", "-2:1.5"), "line 2: not LIBSVM/SVMlight text: feature index -2 is "
                                                       "negative"),
    "missing value": (LIB.replace("1:1.5", "1:"), "line 2: not LIBSVM/SVMlight text: '1:' is not an index:value"),
    "text value": (LIB.replace("1:1.5", "1:abc"), "line 2: not LIBSVM/SVMlight text: '1:abc' is not an index:value"),
    "spaces in a pair": (LIB.replace("1:1.5", "1 : 1.5"), "line 2: not LIBSVM/SVMlight text: '1' is not an "
                                                          "index:value pair"),
    "no label": (LIB.replace("-1 1:1.5", "1:1.5"), "line 2: the line starts with '1:1.5', not with a label"),
    "inf value": (LIB.replace("1:1.5", "1:inf"), "line 2: a feature value is NaN or infinite"),
    "overflow value": (LIB.replace("1:1.5", "1:1e400"), "line 2: a feature value is NaN or infinite"),
    "nan value": (LIB.replace("1:1.5", "1:nan"), "line 2: a feature value is NaN or infinite"),
    "non-ASCII value": (LIB.encode() .replace(b"1:1.5", b"1:1\xb75"), "line 2: not LIBSVM/SVMlight text: holds "
                                                                      "bytes that are not ASCII text"),
    "non-ASCII label": (LIB.encode().replace(b"-1 1:1.5", b"\xe21 1:1.5"), "line 2: not LIBSVM/SVMlight text: the "
                                                                           "label holds bytes that are not ASCII"),
    "empty file": ("", "d.libsvm: the file is empty"),
    "comments only": ("# nothing\n\n", "d.libsvm: the file is empty"),
    "a CSV file": (GOOD, "line 1: the label 'a,b,t' holds several labels"),
    "byte-order mark": ("\ufeff" + LIB, "line 1: starts with a byte-order mark"),
    "index:value:value": (LIB.replace("1:1.5", "1:1.5:2"), "line 2: not LIBSVM/SVMlight text: '1:1.5:2' is not"),
    "fractional index": (LIB.replace("1:1.5", "1.5:1.5"), "line 2: not LIBSVM/SVMlight text: '1.5:1.5' is not"),
}


@pytest.mark.parametrize("case", list(LIB_REFUSED))
def test_libsvm_edges_are_refused(tmp_path, case):
    content, text = LIB_REFUSED[case]
    refused(lambda: load_lib(tmp_path, content), str(tmp_path / "d.libsvm"), text)


def test_libsvm_test_file_edges(tmp_path):
    write(tmp_path / "d.libsvm", LIB)
    ds = load_user_data(tmp_path / "d.libsvm", "libsvm", test_path=write(tmp_path / "t.libsvm", "-1 5:1\n+1\n"))
    np.testing.assert_array_equal(ds.X_test, [[0, 0, 1], [0, 0, 0]])   # features 1, 2 and 5
    np.testing.assert_array_equal(ds.y_test, [0, 1])
    write(tmp_path / "t.libsvm", "-1 1:1\n1 2:1\n")
    refused(lambda: load_user_data(tmp_path / "d.libsvm", "libsvm", test_path=tmp_path / "t.libsvm"),
            "t.libsvm, line 2: label '1' is written '+1' in the training file")
    write(tmp_path / "t.libsvm", "-1 1:1\n+1 2:-\n")
    refused(lambda: load_user_data(tmp_path / "d.libsvm", "libsvm", test_path=tmp_path / "t.libsvm"),
            "t.libsvm, line 2: not LIBSVM/SVMlight text")


# ----------------------------------------------------------------------------- .npz


class Trap:
    """Unpickling it would create a file: the proof that a payload ran."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def save(tmp_path, name="d.npz", **arrays):
    np.savez(tmp_path / name, **arrays)
    return tmp_path / name


def test_npz_loads_exactly(tmp_path):
    X = np.array([[1, 2**40], [3, -4], [5, 6], [0, 7]], dtype=np.int64)
    ds = load_user_data(save(tmp_path, X=X, y=np.array([1, 0, 1, 0]), extra=np.ones(3)), "npz")
    exact(ds, X.astype(np.float64), [1, 0, 1, 0])
    ds = load_user_data(save(tmp_path, X=X > 2, y=np.array([1, 0, 1, 0])), "npz")
    exact(ds, (X > 2).astype(np.float64), [1, 0, 1, 0])
    ds = load_user_data(save(tmp_path, X=X.astype(np.uint8), y=np.array([1, 0, 1, 0])), "npz")
    assert ds.X_train.dtype == np.float64 and ds.X_train[0, 1] == 0.0  # uint8 wraps in the file, not here


def test_npz_never_unpickles(tmp_path):
    marker = tmp_path / "payload-ran"
    f = save(tmp_path, X=np.array([[Trap(marker)], [Trap(marker)]], dtype=object), y=np.array([0, 1]))
    refused(lambda: load_user_data(f, "npz"), "holds Python objects (a pickled array)")
    f = save(tmp_path, X=np.ones((2, 1)), y=np.array([Trap(marker), Trap(marker)], dtype=object))
    refused(lambda: load_user_data(f, "npz"), "holds Python objects (a pickled array)")
    with open(tmp_path / "p.npz", "wb") as fh:
        np.save(fh, np.array([Trap(marker)], dtype=object), allow_pickle=True)
    refused(lambda: load_user_data(tmp_path / "p.npz", "npz"), "(a single .npy array)")
    assert not marker.exists()


NPZ_REFUSED = {
    "1-D X": (dict(X=np.arange(4.0), y=np.array([0, 1, 0, 1])), "X has shape (4,); it must be a matrix"),
    "3-D X": (dict(X=np.ones((4, 2, 1)), y=np.array([0, 1, 0, 1])), "X has shape (4, 2, 1)"),
    "no rows": (dict(X=np.ones((0, 2)), y=np.array([], dtype=int)), "X has shape (0, 2)"),
    "no features": (dict(X=np.ones((4, 0)), y=np.array([0, 1, 0, 1])), "X has shape (4, 0)"),
    "0-d X": (dict(X=np.array(1.0), y=np.array([0, 1])), "X has shape ()"),
    "2-D y": (dict(X=np.ones((4, 2)), y=np.array([[0], [1], [0], [1]])), "y has shape (4, 1)"),
    "short y": (dict(X=np.ones((4, 2)), y=np.array([0, 1, 0])), "X has 4 rows but y has 3 labels"),
    "string X": (dict(X=np.array([["1", "2"], ["3", "4"]]), y=np.array([0, 1])), "X holds <U1 values"),
    "complex X": (dict(X=np.ones((2, 2)) * 1j, y=np.array([0, 1])), "X holds complex128 values"),
    "inf X": (dict(X=np.array([[1.0, np.inf], [2, 3]]), y=np.array([0, 1])), "X[0, 1] (row 1) is inf"),
    "nan X": (dict(X=np.array([[1.0, 2], [np.nan, 3]]), y=np.array([0, 1])), "X[1, 0] (row 2) is nan"),
    "float16 -inf": (dict(X=np.array([[1, -np.inf], [2, 3]], dtype=np.float16), y=np.array([0, 1])), "is -inf"),
    "no y": (dict(X=np.ones((2, 2)), labels=np.array([0, 1])), "has no array y (its arrays: X, labels)"),
    "no X": (dict(features=np.ones((2, 2)), y=np.array([0, 1])), "has no array X"),
    "complex y": (dict(X=np.ones((2, 2)), y=np.array([1j, 2j])), "y holds complex128 values"),
    "one class": (dict(X=np.ones((2, 2)), y=np.array([3, 3])), "y holds one class (3) in all 2 rows"),
    "structured X": (dict(X=np.zeros((2, 2), dtype=[("a", "f8")]), y=np.array([0, 1])),
                     "X holds [('a', '<f8')] values"),
    "no arrays": ({}, "has no array X or y (its arrays: none)"),
}


@pytest.mark.parametrize("case", list(NPZ_REFUSED))
def test_npz_edges_are_refused(tmp_path, case):
    arrays, text = NPZ_REFUSED[case]
    refused(lambda: load_user_data(save(tmp_path, **arrays), "npz"), "d.npz", text)


@pytest.mark.parametrize("content, text", [
    (b"", "(an empty file)"),
    (b"X,y\n1,2\n", "(not a zip archive)"),
    (b"\x93NUMPY", "(a single .npy array)"),
], ids=["empty", "text", "npy"])
def test_npz_that_is_not_an_npz(tmp_path, content, text):
    refused(lambda: load_user_data(write(tmp_path / "d.npz", content), "npz"), "cannot read it as a NumPy .npz "
            "file", text)


def test_npz_truncated_and_damaged(tmp_path):
    f = save(tmp_path, X=np.ones((50, 20)), y=np.arange(50) % 2)
    whole = f.read_bytes()
    write(f, whole[: len(whole) // 2])
    refused(lambda: load_user_data(f, "npz"), "d.npz: cannot read it as a NumPy .npz file")
    data = bytearray(whole)
    data[200:260] = b"\xff" * 60  # inside the X member
    write(f, bytes(data))
    refused(lambda: load_user_data(f, "npz"), "d.npz")


def test_npz_header_declaring_terabytes_is_refused_before_allocating(tmp_path):
    import io
    import zipfile

    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "<f8", "fortran_order": False, "shape": (10**6, 10**6)})
    y = io.BytesIO()
    np.save(y, np.array([0, 1]))
    with zipfile.ZipFile(tmp_path / "d.npz", "w") as z:
        z.writestr("X.npy", b"\x93NUMPY\x01\x00" + head.getvalue()[8:] + bytes(64))
        z.writestr("y.npy", y.getvalue())
    refused(lambda: load_user_data(tmp_path / "d.npz", "npz"), "d.npz: X declares shape (1000000, 1000000) "
            "(8000000000000 bytes) but holds")


def test_npz_compressed_loads_exactly(tmp_path):
    X = np.arange(12.0).reshape(4, 3)
    np.savez_compressed(tmp_path / "d.npz", X=X, y=np.array(["a", "b", "a", "b"]))
    ds = load_user_data(tmp_path / "d.npz", "npz")
    exact(ds, X, [0, 1, 0, 1])


def test_npz_test_file_edges(tmp_path):
    train = save(tmp_path, X=np.ones((4, 2)), y=np.array([0, 1, 0, 1]))
    test = save(tmp_path, "t.npz", X=np.ones((2, 3)), y=np.array([0, 1]))
    refused(lambda: load_user_data(train, "npz", test_path=test), "t.npz: X has 3 features, but the training file")
    test = save(tmp_path, "t.npz", X=np.ones((2, 2)), y=np.array([0, 2]))
    refused(lambda: load_user_data(train, "npz", test_path=test), "t.npz: y[1] (row 2) is 2, a label that does not "
            "occur in the training file")


# ----------------------------------------------------------------------------- the file itself


@pytest.mark.parametrize("fmt", ["csv", "libsvm", "npz"])
def test_a_folder_a_missing_file_and_a_device_are_refused(tmp_path, fmt):
    kw = {"label": "t"} if fmt == "csv" else {}
    (tmp_path / f"d.{fmt}").mkdir()
    refused(lambda: load_user_data(tmp_path / f"d.{fmt}", fmt, **kw), "is a folder, not a file", "dataset.path")
    refused(lambda: load_user_data(tmp_path / f"e.{fmt}", fmt, **kw), "e." + fmt + ": not found", "dataset.path")
    refused(lambda: load_user_data("/dev/null", fmt, **kw), "/dev/null: is not a regular file")
    write(tmp_path / "t.csv", GOOD)
    refused(lambda: load_user_data(tmp_path / "t.csv", fmt, test_path=tmp_path / "nope", **kw),
            "nope: not found", "correct dataset.test_path")


@pytest.mark.parametrize("fmt", ["csv", "libsvm", "npz"])
def test_a_file_without_read_permission_is_refused(tmp_path, monkeypatch, fmt):
    f = write(tmp_path / f"d.{fmt}", GOOD)

    def no_permission(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(user, "open", no_permission, raising=False)  # the tests may run as root
    refused(lambda: load_user_data(f, fmt, **({"label": "t"} if fmt == "csv" else {})),
            f"d.{fmt}: cannot read the file (Permission denied)", "check its permissions")


# ----------------------------------------------------------------------------- IDX


def idx(dims, payload=None, code=0x08):
    head = struct.pack(">HBB", 0, code, len(dims)) + struct.pack(f">{len(dims)}I", *dims)
    n = int(np.prod(dims))
    return head + (bytes(i % 10 for i in range(n)) if payload is None else payload)


def test_idx_reads_plain_and_gzipped_files_exactly(tmp_path):
    raw = idx((3, 2, 2))
    a = read_idx(write(tmp_path / "a.idx", raw), 3)
    b = read_idx(write(tmp_path / "a.gz", gzip.compress(raw)), 3)
    np.testing.assert_array_equal(a, np.arange(12).reshape(3, 2, 2) % 10)
    np.testing.assert_array_equal(a, b)


IDX_REFUSED = {
    "wrong magic (float)": (idx((3,), bytes(12), code=0x0D), "bad IDX magic number 0x00000d01"),
    "wrong dimensions": (idx((3, 1)), "bad IDX magic number 0x00000802"),
    "empty": (b"", "only 0 bytes, no IDX header"),
    "short header": (idx((3,))[:6], "IDX header is cut short"),
    "truncated": (idx((3,))[:-1], "declares dimensions (3,) (3 values) but the file holds 2"),
    "extra bytes": (idx((3,)) + b"\0", "but the file holds more"),
    "absurd size": (idx((2**32 - 1,), b""), "more than the 1073741824 plab reads"),
    "truncated gzip": (gzip.compress(idx((300,)))[:-6], "gzip error"),
    "not gzip": (b"plain text", "gzip error"),
}


@pytest.mark.parametrize("case", list(IDX_REFUSED))
def test_idx_edges_are_refused(tmp_path, case):
    content, text = IDX_REFUSED[case]
    gz = case in ("truncated gzip", "not gzip")
    f = write(tmp_path / ("l.gz" if gz else "l.idx"), content)
    with pytest.raises(DatasetError) as exc:
        read_idx(f, 1, "mnist")
    msg = str(exc.value)
    assert str(f) in msg and text in msg and "plab data fetch mnist" in msg and "\n" not in msg, msg


def test_idx_folder_missing_and_unreadable_files(tmp_path, monkeypatch):
    (tmp_path / "dir.gz").mkdir()
    write(tmp_path / "file", "x")
    for path, text in ((tmp_path / "dir.gz", "is a folder, not an IDX file"), (tmp_path / "none.gz", "does not exist"),
                       (tmp_path / "file" / "l.gz", "a folder above it is a file")):
        with pytest.raises(DatasetError) as exc:
            read_idx(path, 1, "mnist")
        assert text in str(exc.value) and "Fix: " in str(exc.value) and "\n" not in str(exc.value)
    f = write(tmp_path / "l.gz", gzip.compress(idx((3,))))

    def no_permission(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(images, "open", no_permission, raising=False)
    with pytest.raises(DatasetError, match=r"cannot read .*l\.gz: Permission denied\. Fix: check its permissions"):
        read_idx(f, 1, "mnist")


def test_mnist_files_that_disagree_are_refused(tmp_path):
    def folder(n_img, labels):
        for key, name in images.IDX_FILES.items():
            if key.endswith("images"):
                write(tmp_path / name, gzip.compress(idx((n_img, 28, 28))))
            else:
                write(tmp_path / name, gzip.compress(idx((len(labels),), bytes(labels))))

    folder(2, [1, 2, 3])
    with pytest.raises(DatasetError, match="2 images but 3 labels"):
        load_mnist(tmp_path)
    folder(2, [1, 10])
    with pytest.raises(DatasetError, match=r"label 10 \(item 2\) outside the classes 0..9"):
        load_mnist(tmp_path)
    folder(2, [1, 2])
    with pytest.raises(DatasetError, match="2 images, expected 60000"):
        load_mnist(tmp_path)


# ----------------------------------------------------------------------------- through the command line


def cli(tmp_path, name, content, label=True):
    write(tmp_path / name, content)
    cfg = tmp_path / "c.yaml"
    lab = ", label: t" if label else ""
    cfg.write_text(f"dataset: {{path: {name}{lab}}}\ntraining: {{epochs: 1, checkpoints: [1]}}\n"
                   "prediction: {rules: [last]}\nevaluation: {mode: kfold, folds: 2}\n")
    r = subprocess.run([sys.executable, "-m", "perceptron_lab.cli.main", "run", str(cfg), "--out", str(tmp_path / "out"),
                        "-q"], capture_output=True, text=True)
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, [ln for ln in r.stderr.splitlines() if ln.startswith("plab: error:")]


def npz_bytes(tmp_path, **arrays):
    np.savez(tmp_path / "tmp.npz", **arrays)
    return (tmp_path / "tmp.npz").read_bytes()


CLI_CASES = {
    "libsvm without features": ("d.libsvm", "+1\n-1\n+1\n-1\n", "d.libsvm: holds labels but no features"),
    "libsvm index 10^12": ("d.libsvm", LIB.replace("1:1.5", "1000000000000:1.5"),
                           "d.libsvm, line 2: not LIBSVM/SVMlight text: feature index"),
    "libsvm non-ASCII": ("d.libsvm", LIB.encode().replace(b"1:1.5", b"1:\xf6"), "d.libsvm, line 2:"),
    "csv non-UTF-8": ("d.csv", GOOD.replace("yes", "s\xed").encode("latin-1"), "d.csv, line 2: byte 0xed is not "
                                                                               "UTF-8 text"),
    "csv empty": ("d.csv", "", "d.csv: the file is empty"),
    "csv trailing comma": ("d.csv", GOOD.replace("\n", ",\n"), "d.csv, line 1: column 4 of the header line"),
    "csv NaN label": ("d.csv", GOOD.replace("no\n", "NaN\n", 1), "d.csv, line 3: column 't' has a missing value"),
    "csv decimal comma": ("d.csv", 'a,b,t\n"0,5",2,yes\n"1,5",1,no\n', "d.csv, line 2: column 'a' holds '0,5'"),
    "npz pickle": ("d.npz", None, "d.npz: holds Python objects"),
    "npz 1-D X": ("d.npz", "1d", "d.npz: X has shape (4,)"),
}


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_edges_through_the_command_line(tmp_path, case):
    name, content, text = CLI_CASES[case]
    if content is None:
        content = npz_bytes(tmp_path, X=np.array([[1], ["a"]], dtype=object), y=np.array([0, 1]))
    elif content == "1d":
        content = npz_bytes(tmp_path, X=np.arange(4.0), y=np.array([0, 1, 0, 1]))
    status, errors = cli(tmp_path, name, content, label=name.endswith(".csv"))
    assert status == 3 and len(errors) == 1, (status, errors)
    assert text in errors[0] and "Fix:" in errors[0], errors[0]


def test_a_folder_in_place_of_the_file_through_the_command_line(tmp_path):
    (tmp_path / "d.csv").mkdir()
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: {path: d.csv, label: t}\nevaluation: {mode: kfold, folds: 2}\n")
    r = subprocess.run([sys.executable, "-m", "perceptron_lab.cli.main", "run", str(cfg), "--out", str(tmp_path / "out")],
                       capture_output=True, text=True)
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("plab: error:")]
    assert r.returncode == 3 and len(errors) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "d.csv: is a folder, not a file. Fix: correct dataset.path in" in errors[0]
