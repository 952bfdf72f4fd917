"""The Khardon-Wachman UCI loaders: shapes, class counts and feature counts against the paper."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import pytest

from perceptron_lab.datasets.uci import UCI_FILES, UCI_NAMES, load_uci
from perceptron_lab.errors import DatasetError


def _data_dir() -> Path:
    env = os.environ.get("PLAB_DATA")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    return repo.parent / "shared" / "data"


UCI_DIR = _data_dir() / "uci"
needs_data = pytest.mark.skipif(
    not UCI_DIR.is_dir(), reason=f"UCI files not found in {UCI_DIR} (set PLAB_DATA)"
)


@functools.lru_cache(maxsize=None)
def _load(name: str):
    return load_uci(name, UCI_DIR)


# name: (rows, class counts [negative, positive], features, classes) -- rows and class counts
# from the data manifest, features from Khardon & Wachman (2007) Table 1 (promoters: 57 x 4).
EXPECTED = {
    "adult": (32561, [24720, 7841], 105, ["<=50K", ">50K"]),
    "breast-cancer-wisconsin": (699, [458, 241], 9, ["2", "4"]),
    "bupa": (345, [145, 200], 6, ["1", "2"]),
    "wdbc": (569, [357, 212], 30, ["B", "M"]),
    "crx": (690, [383, 307], 46, ["-", "+"]),
    "ionosphere": (351, [126, 225], 34, ["b", "g"]),
    "wpbc": (198, [151, 47], 33, ["N", "R"]),
    "sonar": (208, [97, 111], 60, ["R", "M"]),
    "promoters": (106, [53, 53], 228, ["-", "+"]),
}


def test_registry_lists_every_set():
    assert set(UCI_FILES) == set(UCI_NAMES) == set(EXPECTED)
    assert UCI_FILES["adult"] == ["adult.data", "adult.test"]
    assert UCI_FILES["sonar"] == ["sonar.all-data"]


@needs_data
@pytest.mark.parametrize("name", list(EXPECTED))
def test_shape_classes_and_paper_feature_count(name):
    rows, counts, n_features, classes = EXPECTED[name]
    d = _load(name)
    assert d.X_train.shape == (rows, n_features)
    assert d.X_train.dtype == np.float64 and d.y_train.dtype == np.int64
    assert np.isfinite(d.X_train).all()
    assert d.classes == classes
    assert np.bincount(d.y_train, minlength=2).tolist() == counts
    assert len(d.meta["feature_names"]) == n_features
    assert len(set(d.meta["feature_names"])) == n_features
    paper = d.meta["n_features_paper"]
    if name == "promoters":
        assert paper is None
    else:
        assert paper == n_features  # every Table 1 count is reproduced exactly
        assert d.meta["n_examples_paper"] == rows
    assert d.meta["positive_class"] == classes[1]
    assert [Path(p).name for p in d.meta["source_files"]] == UCI_FILES[name]
    if name != "adult":
        assert d.X_test is None and d.y_test is None


@needs_data
def test_adult_test_split():
    d = _load("adult")
    assert d.X_test.shape == (16281, 105)
    assert np.bincount(d.y_test).tolist() == [12435, 3846]
    assert np.isfinite(d.X_test).all()
    # first test row: "25, Private, 226802, 11th, 7, Never-married, ..., 40, United-States, <=50K."
    names = d.meta["feature_names"]
    row = dict(zip(names, d.X_test[0]))
    assert row["age"] == 25 and row["fnlwgt"] == 226802 and row["education-num"] == 7
    assert row["workclass=Private"] == 1 and row["education=11th"] == 1
    assert d.y_test[0] == 0


@needs_data
def test_adult_missing_nominal_values_have_no_indicator():
    d = _load("adult")
    expected = {"workclass": 1836, "occupation": 1843, "native-country": 583}
    assert d.meta["missing_counts"] == expected
    names = d.meta["feature_names"]
    for attr, n_missing in d.meta["missing_counts"].items():
        cols = [j for j, f in enumerate(names) if f.startswith(attr + "=")]
        row_sums = d.X_train[:, cols].sum(axis=1)
        assert set(np.unique(row_sums)) <= {0.0, 1.0}
        assert int((row_sums == 0).sum()) == n_missing
    # 6 continuous attributes kept in raw units, 99 indicators
    continuous = [f for f in names if "=" not in f]
    assert continuous == ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                          "hours-per-week"]


@needs_data
def test_crx_indicators_are_the_values_that_occur():
    d = _load("crx")
    names = d.meta["feature_names"]
    assert [f for f in names if f.startswith("A4=")] == ["A4=u", "A4=y", "A4=l"]  # no "t"
    assert sum("=" in f for f in names) == 40
    # A2 and A14 missing values are replaced by the column mean of the observed values
    assert set(d.meta["imputed_values"]) == {"A2", "A14"}
    for attr in ("A2", "A14"):
        j = names.index(attr)
        rows = d.meta["missing_rows"][attr]
        assert len(rows) == d.meta["missing_counts"][attr]
        observed = np.delete(d.X_train[:, j], rows)
        assert np.allclose(d.X_train[rows, j], observed.mean())


@needs_data
def test_bcw_row_order_id_dropped_and_imputation():
    d = _load("breast-cancer-wisconsin")
    # first line: 1000025,5,1,1,1,2,1,3,1,1,2
    assert d.X_train[0].tolist() == [5, 1, 1, 1, 2, 1, 3, 1, 1]
    assert d.y_train[0] == 0
    assert d.meta["missing_counts"] == {"bare_nuclei": 16}
    j = d.meta["feature_names"].index("bare_nuclei")
    rows = d.meta["missing_rows"]["bare_nuclei"]
    assert np.allclose(d.X_train[rows, j], d.meta["imputed_values"]["bare_nuclei"])


@needs_data
def test_wpbc_keeps_time_and_lymph_node_status():
    d = _load("wpbc")
    names = d.meta["feature_names"]
    assert names[0] == "time" and names[-2:] == ["tumor_size", "lymph_node_status"]
    # first line: 119513,N,31,18.02,...,5,5
    assert d.X_train[0, 0] == 31 and d.X_train[0, -1] == 5
    assert d.meta["missing_counts"] == {"lymph_node_status": 4}


@needs_data
def test_promoters_one_indicator_per_position():
    d = _load("promoters")
    assert (d.X_train.reshape(106, 57, 4).sum(axis=2) == 1).all()
    # first sequence starts with "tactag": p-50 = t
    assert d.X_train[0, :4].tolist() == [0, 0, 0, 1]


# --- broken and missing files --------------------------------------------------------------


def test_missing_file_names_file_and_fix(tmp_path):
    with pytest.raises(DatasetError) as err:
        load_uci("wdbc", tmp_path)
    msg = str(err.value)
    assert "wdbc.data" in msg and "plab data fetch wdbc" in msg and "PLAB_DATA" in msg


def test_missing_adult_test_is_reported(tmp_path):
    (tmp_path / "adult.data").write_text(
        "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, "
        "White, Male, 2174, 0, 40, United-States, <=50K\n"
    )
    with pytest.raises(DatasetError, match=r"adult\.test.*plab data fetch adult"):
        load_uci("adult", tmp_path)


def test_unknown_name(tmp_path):
    with pytest.raises(DatasetError, match="unknown UCI data set"):
        load_uci("iris", tmp_path)


@needs_data
def test_broken_copy_wrong_field_count(tmp_path):
    src = (UCI_DIR / "breast-cancer-wisconsin.data").read_text().splitlines(keepends=True)
    src[9] = src[9].replace(",", ",,", 1)  # line 10 gets an extra field
    (tmp_path / "breast-cancer-wisconsin.data").write_text("".join(src))
    with pytest.raises(DatasetError) as err:
        load_uci("breast-cancer-wisconsin", tmp_path)
    msg = str(err.value)
    assert "breast-cancer-wisconsin.data" in msg and "line 10" in msg
    assert "expected 11" in msg and "found 12" in msg


@needs_data
def test_broken_copy_truncated_last_row(tmp_path):
    text = (UCI_DIR / "sonar.all-data").read_text()
    (tmp_path / "sonar.all-data").write_text(text[:-40])  # a download cut short in row 208
    with pytest.raises(DatasetError, match=r"sonar\.all-data, line 208: malformed row"):
        load_uci("sonar", tmp_path)


def _write(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)


def test_unparsable_number(tmp_path):
    _write(tmp_path, "bupa.data", "85,92,45,27,31,0.0,1\n85,64,5x9,32,23,0.0,2\n")
    with pytest.raises(DatasetError, match=r"bupa\.data, line 2: .*'sgpt'.*'5x9'"):
        load_uci("bupa", tmp_path)


def test_non_finite_number(tmp_path):
    _write(tmp_path, "bupa.data", "85,92,45,27,31,nan,1\n")
    with pytest.raises(DatasetError, match=r"line 1: .*not a finite number"):
        load_uci("bupa", tmp_path)


def test_unknown_class_label(tmp_path):
    _write(tmp_path, "bupa.data", "85,92,45,27,31,0.0,1\n85,64,59,32,23,0.0,3\n")
    with pytest.raises(DatasetError, match=r"bupa\.data, line 2: .*class label '3'"):
        load_uci("bupa", tmp_path)


def test_unknown_nominal_value(tmp_path):
    _write(
        tmp_path,
        "crx.data",
        "b,30.83,0,u,g,w,v,1.25,t,t,01,f,g,00202,0,+\n"
        "a,58.67,4.46,u,zz,q,h,3.04,t,t,06,f,g,00043,560,+\n",
    )
    with pytest.raises(DatasetError, match=r"crx\.data, line 2: .*'A5'.*'zz'"):
        load_uci("crx", tmp_path)


def test_adult_test_value_unseen_in_training(tmp_path):
    row = ("39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, "
           "White, Male, 2174, 0, 40, United-States, <=50K")
    _write(tmp_path, "adult.data", row + "\n")
    test_row = row.replace("State-gov", "Private") + "."
    _write(tmp_path, "adult.test", "|1x3 Cross validator\n" + test_row + "\n")
    with pytest.raises(DatasetError, match=r"adult\.test, line 2: .*'Private'"):
        load_uci("adult", tmp_path)


def test_promoters_short_sequence(tmp_path):
    good = "+,S10,\t\t" + "a" * 57 + "\n"
    _write(tmp_path, "promoters.data", good + "-,X1,\t\t" + "c" * 56 + "\n")
    with pytest.raises(DatasetError, match=r"promoters\.data, line 2: .*56 nucleotides"):
        load_uci("promoters", tmp_path)


def test_empty_file(tmp_path):
    _write(tmp_path, "wdbc.data", "\n")
    with pytest.raises(DatasetError, match="no data rows"):
        load_uci("wdbc", tmp_path)


def test_small_file_round_trip(tmp_path):
    """A two-row crx file: indicators only for the values present, '?' gives all zeros."""
    _write(
        tmp_path,
        "crx.data",
        "b,30.83,0,u,g,w,v,1.25,t,t,01,f,g,00202,0,+\n"
        "?,?,4.46,u,g,q,h,3.04,t,f,06,f,g,00043,560,-\n",
    )
    d = load_uci("crx", tmp_path)
    names = d.meta["feature_names"]
    assert [f for f in names if f.startswith("A1=")] == ["A1=b"]
    assert d.X_train[1, names.index("A1=b")] == 0
    assert d.X_train[1, names.index("A2")] == pytest.approx(30.83)  # mean of the one observed
    assert d.y_train.tolist() == [1, 0]


@needs_data
def test_embedded_copies_load_the_same():
    embedded = Path(__file__).resolve().parents[2] / "perceptron_lab" / "datasets" / "embedded"
    if not embedded.is_dir():
        pytest.skip("no embedded data")
    for name in ("ionosphere", "sonar"):
        if not all((embedded / f).is_file() for f in UCI_FILES[name]):
            continue
        a, b = load_uci(name, embedded), _load(name)
        assert np.array_equal(a.X_train, b.X_train) and np.array_equal(a.y_train, b.y_train)



# --- promoters' instance name (dataset.instance_name) ----------------------------------------------


@needs_data
def test_promoters_instance_name_as_nominal_gives_each_example_a_private_indicator():
    from perceptron_lab.datasets.uci import load_uci

    dropped, nominal = _load("promoters"), load_uci("promoters", UCI_DIR, instance_name="nominal")
    names = [line.split(",")[1].strip() for line in (UCI_DIR / "promoters.data").read_text().splitlines()
             if line.strip()]
    assert len(set(names)) == len(names) == 106   # every name differs: one indicator per example
    assert nominal.X_train.shape == (106, 106 + 228)
    # attribute 2 of 59: its indicators stand before the 57 positions, in file order
    assert nominal.meta["feature_names"][:106] == [f"instance={n}" for n in names]
    assert (nominal.X_train[:, :106] == np.eye(106)).all()
    assert (nominal.X_train[:, 106:] == dropped.X_train).all()
    assert (nominal.y_train == dropped.y_train).all()
    assert nominal.meta["instance_name"] == "nominal" and dropped.meta["instance_name"] == "drop"


def test_instance_name_refused_where_no_data_set_has_one(tmp_path):
    from perceptron_lab import constants as C
    from perceptron_lab.datasets.uci import has_instance_name
    from perceptron_lab.errors import UsageError

    # the loader's data sets with a non-numeric name are the ones the config key applies to
    assert [n for n in UCI_NAMES if has_instance_name(n)] == list(C.DATASETS_WITH_INSTANCE_NAME)
    with pytest.raises(UsageError, match="sonar has no instance name"):
        load_uci("sonar", tmp_path, instance_name="nominal")
    with pytest.raises(UsageError, match="must be one of drop, nominal"):
        load_uci("promoters", tmp_path, instance_name="indicator")
