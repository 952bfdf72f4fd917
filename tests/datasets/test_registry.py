"""Registry, data-root resolution, loaders on the real data, and the error paths.

Expected shapes and class counts are the ones listed in the data folder's MANIFEST.md.
"""

from __future__ import annotations

import gzip
import re
import shutil
import string
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from perceptron_lab.datasets import (
    EMBEDDED_DIR,
    Dataset,
    data_dir_source,
    dataset_path,
    default_data_dir,
    get_entry,
    list_datasets,
    load_dataset,
    read_idx,
    resolve_data_dir,
    sha256_file,
    verify_dataset,
)
from perceptron_lab.errors import DatasetError

UCI_NAMES = [
    "adult",
    "breast-cancer-wisconsin",
    "bupa",
    "wdbc",
    "crx",
    "ionosphere",
    "wpbc",
    "sonar",
    "promoters",
]
ALL_NAMES = ["mnist", "fashion-mnist", "usps", "letter", *UCI_NAMES]

MNIST_TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
MNIST_TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
MNIST_TRAIN_PIXEL_SUM = 1567298545
MNIST_TEST_PIXEL_SUM = 264923200
USPS_TRAIN_COUNTS = [1194, 1005, 731, 658, 652, 556, 664, 645, 542, 644]
USPS_TEST_COUNTS = [359, 264, 198, 166, 200, 160, 170, 147, 166, 177]
LETTER_COUNTS = [789, 766, 736, 805, 768, 775, 773, 734, 755, 747, 739, 761, 792,
                 783, 753, 803, 783, 758, 748, 796, 813, 764, 752, 787, 786, 734]

MNIST_FILES = [
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
]


def _copy_dataset(src_root: Path, dst_root: Path, subfolder: str) -> Path:
    dst = dst_root / subfolder
    shutil.copytree(src_root / subfolder, dst)
    for path in dst.iterdir():
        path.chmod(0o644)  # the shared copies are read-only
    return dst


# --------------------------------------------------------------------------- data root


class TestDataRoot:
    def test_explicit_argument_wins(self, monkeypatch, tmp_path):
        monkeypatch.setenv("PLAB_DATA", str(tmp_path / "env"))
        assert resolve_data_dir(tmp_path / "arg") == tmp_path / "arg"
        assert data_dir_source(tmp_path / "arg") == "--data-dir"
        assert resolve_data_dir(str(tmp_path / "arg")) == tmp_path / "arg"

    def test_env_var_used_without_argument(self, monkeypatch, tmp_path):
        monkeypatch.setenv("PLAB_DATA", str(tmp_path / "env"))
        assert resolve_data_dir(None) == tmp_path / "env"
        assert data_dir_source(None) == "PLAB_DATA"

    def test_user_cache_honours_xdg(self, monkeypatch, tmp_path):
        monkeypatch.delenv("PLAB_DATA", raising=False)
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert resolve_data_dir() == tmp_path / "xdg" / "perceptron_lab"
        assert data_dir_source() == "user cache"

    def test_user_cache_default_and_invalid_values(self, monkeypatch, tmp_path):
        monkeypatch.setenv("HOME", str(tmp_path))
        monkeypatch.setenv("PLAB_DATA", "  ")  # blank counts as unset
        monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # ignored per the XDG spec
        assert resolve_data_dir() == tmp_path / ".cache" / "perceptron_lab"
        monkeypatch.delenv("XDG_CACHE_HOME")
        assert default_data_dir() == tmp_path / ".cache" / "perceptron_lab"

    def test_relative_and_home_paths_are_made_absolute(self, monkeypatch, tmp_path):
        monkeypatch.setenv("HOME", str(tmp_path))
        monkeypatch.chdir(tmp_path)
        assert resolve_data_dir("~/d") == tmp_path / "d"
        assert resolve_data_dir("rel") == tmp_path / "rel"

    def test_dataset_path(self, tmp_path):
        assert dataset_path("mnist", tmp_path) == tmp_path / "mnist"
        assert dataset_path("sonar", tmp_path) == tmp_path / "uci"
        assert dataset_path("Fashion_MNIST", tmp_path) == tmp_path / "fashion-mnist"


# --------------------------------------------------------------------------- registry


class TestRegistry:
    def test_names(self):
        assert [e.name for e in list_datasets()] == ALL_NAMES

    @pytest.mark.parametrize("name", ALL_NAMES)
    def test_entry_is_complete(self, name):
        entry = get_entry(name)
        assert entry.description and entry.citation and entry.license
        assert callable(entry.loader)
        assert entry.subfolder in {"mnist", "fashion-mnist", "usps", "letter", "uci"}
        assert entry.files
        for spec in entry.files:
            assert spec.sha256 and all(re.fullmatch(r"[0-9a-f]{64}", d) for d in spec.sha256)
            assert spec.size > 0
            assert spec.urls and all(u.startswith(("http://", "https://")) for u in spec.urls)
            assert all(u.endswith("/" + spec.name) for u in spec.urls)

    def test_mnist_urls_have_lecun_and_mirror(self):
        for spec in get_entry("mnist").files:
            assert spec.urls[0] == f"http://yann.lecun.com/exdb/mnist/{spec.name}"
            assert f"https://ossci-datasets.s3.amazonaws.com/mnist/{spec.name}" in spec.urls

    def test_usps_accepts_canonical_and_local_digests(self):
        files = {f.name: f for f in get_entry("usps").files}
        assert files["zip.train.gz"].sha256 == (
            "66ebf231ab51f2cf6ac1a892d0f98ccffee1079d7a5db638c1f11f366046ca16",
            "2300ec7451f8deb52ab859a0576760a6e9de93a96b46cb719fe9b6fe4f33adef",
        )
        assert files["zip.test.gz"].sha256 == (
            "8dacc3c6e136af6c3488de9e5113a7daf140c8c2f1f0b61c54ee02f03f1a962f",
            "078c098cc06a71faf904172371df3382091f616bf848656b2da40cd994163b35",
        )
        for spec in files.values():
            assert spec.urls[0] == "https://hastie.su.domains/ElemStatLearn/datasets/" + spec.name

    @pytest.mark.parametrize(
        "name, paths",
        [
            ("adult", ["adult/adult.data", "adult/adult.test"]),
            ("breast-cancer-wisconsin", ["breast-cancer-wisconsin/breast-cancer-wisconsin.data"]),
            ("wdbc", ["breast-cancer-wisconsin/wdbc.data"]),
            ("wpbc", ["breast-cancer-wisconsin/wpbc.data"]),
            ("crx", ["credit-screening/crx.data"]),
            ("ionosphere", ["ionosphere/ionosphere.data"]),
            ("sonar", ["undocumented/connectionist-bench/sonar/sonar.all-data"]),
            ("bupa", ["liver-disorders/bupa.data"]),
            ("promoters", ["molecular-biology/promoter-gene-sequences/promoters.data"]),
            ("letter", ["letter-recognition/letter-recognition.data"]),
        ],
    )
    def test_uci_urls(self, name, paths):
        base = "https://archive.ics.uci.edu/ml/machine-learning-databases/"
        assert [f.urls[0] for f in get_entry(name).files] == [base + p for p in paths]

    def test_embedded_copies_match_registry(self):
        for name in ("sonar", "ionosphere"):
            entry = get_entry(name)
            assert entry.embedded
            for spec in entry.files:
                assert sha256_file(EMBEDDED_DIR / spec.name) in spec.sha256
        assert [e.name for e in list_datasets() if e.embedded] == ["ionosphere", "sonar"]

    def test_name_normalisation(self):
        assert get_entry(" MNIST ").name == "mnist"
        assert get_entry("fashion_mnist").name == "fashion-mnist"

    def test_unknown_name_suggests_close_match(self):
        with pytest.raises(DatasetError, match=r"Did you mean 'mnist'\?") as info:
            get_entry("mnsit")
        assert info.value.exit_code == 3
        with pytest.raises(DatasetError, match=r"Did you mean 'sonar'\?"):
            load_dataset("sonr")

    def test_unknown_name_lists_known_names(self):
        with pytest.raises(DatasetError) as info:
            get_entry("imagenet")
        message = str(info.value)
        assert "Did you mean" not in message
        assert "mnist" in message and "promoters" in message


# --------------------------------------------------------------------------- real data


class TestRealData:
    @pytest.mark.parametrize("name", ALL_NAMES)
    def test_verify_passes(self, data_dir, name):
        checks = verify_dataset(name, data_dir)
        assert [c.file.name for c in checks] == get_entry(name).file_names
        assert all(c.status == "ok" for c in checks), checks
        assert all(c.file.parent == data_dir / get_entry(name).subfolder for c in checks)

    def test_mnist(self, data_dir):
        ds = load_dataset("mnist", data_dir)
        assert isinstance(ds, Dataset)
        assert ds.X_train.shape == (60000, 784) and ds.X_test.shape == (10000, 784)
        assert ds.X_train.dtype == np.float64 and ds.y_train.dtype == np.int64
        assert ds.classes == list(range(10))
        assert np.bincount(ds.y_train).tolist() == MNIST_TRAIN_COUNTS
        assert np.bincount(ds.y_test).tolist() == MNIST_TEST_COUNTS
        assert ds.X_train.min() == 0 and ds.X_train.max() == 255  # raw units, not scaled
        assert ds.X_train.sum() == MNIST_TRAIN_PIXEL_SUM
        assert ds.X_test.sum() == MNIST_TEST_PIXEL_SUM
        assert ds.meta["source"] == str(data_dir / "mnist")
        assert ds.meta["files"] == [str(data_dir / "mnist" / f) for f in MNIST_FILES]
        assert ds.meta["embedded"] is False

    def test_fashion_mnist(self, data_dir):
        ds = load_dataset("fashion-mnist", data_dir)
        assert ds.X_train.shape == (60000, 784) and ds.X_test.shape == (10000, 784)
        assert np.bincount(ds.y_train).tolist() == [6000] * 10
        assert np.bincount(ds.y_test).tolist() == [1000] * 10
        assert ds.X_train.min() == 0 and ds.X_train.max() == 255
        assert ds.meta["class_names"][9] == "Ankle boot"

    def test_usps(self, data_dir):
        ds = load_dataset("usps", data_dir, verify=True)
        assert ds.X_train.shape == (7291, 256) and ds.X_test.shape == (2007, 256)
        assert ds.X_train.dtype == np.float64
        assert np.bincount(ds.y_train).tolist() == USPS_TRAIN_COUNTS
        assert np.bincount(ds.y_test).tolist() == USPS_TEST_COUNTS
        for X in (ds.X_train, ds.X_test):
            assert X.min() == -1.0 and X.max() == 1.0

    def test_letter(self, data_dir):
        ds = load_dataset("letter", data_dir, verify=True)
        assert ds.X_train.shape == (16000, 16) and ds.X_test.shape == (4000, 16)
        assert ds.classes == list(string.ascii_uppercase)
        counts = np.bincount(np.concatenate([ds.y_train, ds.y_test]), minlength=26)
        assert counts.tolist() == LETTER_COUNTS
        assert ds.X_train.min() == 0 and ds.X_train.max() == 15
        assert np.array_equal(ds.X_train, np.round(ds.X_train))
        # Gentile's split keeps file order: first row is "T,2,8,3,5,1,8,13,0,6,6,10,8,0,8,0,8".
        assert ds.y_train[0] == ord("T") - ord("A")
        assert ds.X_train[0].tolist() == [2, 8, 3, 5, 1, 8, 13, 0, 6, 6, 10, 8, 0, 8, 0, 8]
        assert ds.meta["source"] == str(data_dir / "letter" / "letter-recognition.data")

    def test_uci_through_registry_prefers_data_root(self, data_dir):
        ds = load_dataset("sonar", data_dir, verify=True)
        assert ds.meta["source"] == str(data_dir / "uci" / "sonar.all-data")
        assert ds.meta["embedded"] is False
        n = len(ds.y_train) + (0 if ds.y_test is None else len(ds.y_test))
        assert (n, ds.n_features) == (208, 60)

    def test_adult_records_both_files(self, data_dir):
        ds = load_dataset("adult", data_dir)
        assert ds.meta["source"] == str(data_dir / "uci")
        assert ds.meta["files"] == [str(data_dir / "uci" / f) for f in ("adult.data", "adult.test")]


# --------------------------------------------------------------------------- missing data


class TestMissing:
    @pytest.mark.parametrize("name", [n for n in ALL_NAMES if n not in ("sonar", "ionosphere")])
    def test_missing_dataset_message_is_actionable(self, tmp_path, name):
        with pytest.raises(DatasetError) as info:
            load_dataset(name, tmp_path)
        message = str(info.value)
        folder = tmp_path / get_entry(name).subfolder
        assert repr(name) in message
        assert str(folder) in message
        assert f"plab data fetch {name}" in message
        assert "PLAB_DATA=" in message and "--data-dir" in message
        assert info.value.exit_code == 3

    def test_message_names_the_root_source(self, tmp_path, monkeypatch):
        monkeypatch.setenv("PLAB_DATA", str(tmp_path))
        with pytest.raises(DatasetError, match=r"taken from PLAB_DATA"):
            load_dataset("letter")

    def test_partially_present_lists_only_missing_files(self, data_dir, tmp_path):
        folder = tmp_path / "usps"
        folder.mkdir()
        shutil.copy(data_dir / "usps" / "zip.test.gz", folder)
        with pytest.raises(DatasetError, match=r"1 of 2 file\(s\) missing .*\(zip\.train\.gz\)"):
            load_dataset("usps", tmp_path)
        statuses = [(c.file.name, c.status) for c in verify_dataset("usps", tmp_path)]
        assert statuses == [("zip.train.gz", "missing"), ("zip.test.gz", "ok")]

    def test_verify_reports_missing(self, tmp_path):
        checks = verify_dataset("mnist", tmp_path)
        assert [c.status for c in checks] == ["missing"] * 4
        assert [c.file for c in checks] == [tmp_path / "mnist" / f for f in MNIST_FILES]


# --------------------------------------------------------------------------- corrupt data


class TestCorrupt:
    def test_truncated_mnist_is_refused(self, data_dir, tmp_path):
        folder = _copy_dataset(data_dir, tmp_path, "mnist")
        target = folder / "train-labels-idx1-ubyte.gz"
        data = target.read_bytes()
        target.write_bytes(data[: len(data) // 2])

        checks = {c.file.name: c for c in verify_dataset("mnist", tmp_path)}
        assert checks[target.name].status == "mismatch"
        assert "expected 3552534a" in checks[target.name].detail
        assert all(c.status == "ok" for n, c in checks.items() if n != target.name)

        with pytest.raises(DatasetError) as info:
            load_dataset("mnist", tmp_path)
        message = str(info.value)
        assert str(target) in message
        assert "plab data verify mnist" in message and "plab data fetch mnist" in message

        with pytest.raises(DatasetError, match=r"failed verification \(.*train-labels-idx1-ubyte\.gz: mismatch"):
            load_dataset("mnist", tmp_path, verify=True)

    def test_truncated_usps_is_refused(self, data_dir, tmp_path):
        folder = _copy_dataset(data_dir, tmp_path, "usps")
        target = folder / "zip.test.gz"
        target.write_bytes(target.read_bytes()[:-5000])
        with pytest.raises(DatasetError, match=re.escape(str(target))):
            load_dataset("usps", tmp_path)

    def test_edited_letter_is_refused(self, data_dir, tmp_path):
        folder = _copy_dataset(data_dir, tmp_path, "letter")
        target = folder / "letter-recognition.data"
        text = target.read_text()
        target.write_text(text.replace("T,2,8,3,5", "T,2,8,3,x", 1))
        with pytest.raises(DatasetError, match=r"letter-recognition\.data: mismatch: sha256 "):
            load_dataset("letter", tmp_path, verify=True)
        with pytest.raises(DatasetError, match=r"letter-recognition\.data is unreadable: line 1 "):
            load_dataset("letter", tmp_path)

    def test_letter_row_count_checked(self, data_dir, tmp_path):
        folder = _copy_dataset(data_dir, tmp_path, "letter")
        target = folder / "letter-recognition.data"
        target.write_text("".join(target.read_text().splitlines(keepends=True)[:19999]))
        with pytest.raises(DatasetError, match=r"19999 rows, expected 20000"):
            load_dataset("letter", tmp_path)


class TestReadIdx:
    def _write(self, path: Path, raw: bytes) -> Path:
        path.write_bytes(gzip.compress(raw))
        return path

    def test_valid_file(self, tmp_path):
        raw = bytes([0, 0, 8, 1]) + (3).to_bytes(4, "big") + bytes([7, 8, 9])
        assert read_idx(self._write(tmp_path / "l.gz", raw), 1).tolist() == [7, 8, 9]

    def test_bad_magic(self, tmp_path):
        raw = bytes([0, 0, 9, 1]) + (3).to_bytes(4, "big") + bytes(3)
        with pytest.raises(DatasetError, match=r"l\.gz is unreadable: bad IDX magic number 0x00000901"):
            read_idx(self._write(tmp_path / "l.gz", raw), 1, "mnist")

    def test_wrong_dimension_count(self, tmp_path):
        raw = bytes([0, 0, 8, 1]) + (3).to_bytes(4, "big") + bytes(3)
        with pytest.raises(DatasetError, match=r"bad IDX magic"):
            read_idx(self._write(tmp_path / "l.gz", raw), 3, "mnist")

    def test_payload_shorter_than_header_says(self, tmp_path):
        raw = bytes([0, 0, 8, 3]) + b"".join(n.to_bytes(4, "big") for n in (2, 28, 28)) + bytes(784)
        with pytest.raises(DatasetError, match=r"declares dimensions \(2, 28, 28\) \(1568 values\) but the file holds 784"):
            read_idx(self._write(tmp_path / "i.gz", raw), 3, "mnist")

    def test_truncated_gzip(self, tmp_path):
        path = tmp_path / "t.gz"
        path.write_bytes(gzip.compress(bytes([0, 0, 8, 1]) + (1000).to_bytes(4, "big") + bytes(1000))[:30])
        with pytest.raises(DatasetError, match=r"t\.gz is unreadable: gzip error .*plab data verify fashion-mnist"):
            read_idx(path, 1, "fashion-mnist")

    def test_not_gzip(self, tmp_path):
        path = tmp_path / "n.gz"
        path.write_bytes(b"<html>404 Not Found</html>")
        with pytest.raises(DatasetError, match=r"n\.gz is unreadable"):
            read_idx(path, 1)

    def test_image_label_count_mismatch(self, data_dir, tmp_path):
        folder = tmp_path / "mnist"
        folder.mkdir()
        for name in MNIST_FILES:
            (folder / name).symlink_to(data_dir / "mnist" / name)
        labels = read_idx(data_dir / "mnist" / "t10k-labels-idx1-ubyte.gz", 1)[:9999]
        (folder / "t10k-labels-idx1-ubyte.gz").unlink()
        self._write(folder / "t10k-labels-idx1-ubyte.gz",
                    bytes([0, 0, 8, 1]) + (9999).to_bytes(4, "big") + labels.tobytes())
        with pytest.raises(DatasetError, match=r"10000 images but 9999 labels in t10k-labels-idx1-ubyte\.gz"):
            load_dataset("mnist", tmp_path)


# --------------------------------------------------------------------------- embedded copies


class TestEmbedded:
    @pytest.mark.parametrize("name, fname, shape", [
        ("sonar", "sonar.all-data", (208, 60)),
        ("ionosphere", "ionosphere.data", (351, 34)),
    ])
    def test_fallback_to_packaged_copy(self, tmp_path, name, fname, shape):
        ds = load_dataset(name, tmp_path, verify=True)
        assert ds.meta["source"] == str(EMBEDDED_DIR / fname)
        assert ds.meta["embedded"] is True
        n = len(ds.y_train) + (0 if ds.y_test is None else len(ds.y_test))
        assert (n, ds.n_features) == shape
        assert not (tmp_path / "uci").exists()  # nothing written to the data root

        (check,) = verify_dataset(name, tmp_path)
        assert check.status == "ok" and "packaged copy" in check.detail
        assert check.file == EMBEDDED_DIR / fname

    def test_fallback_passes_packaged_folder_to_loader(self, tmp_path, monkeypatch):
        seen = []

        def fake_load_uci(name, folder):
            seen.append((name, Path(folder)))
            return Dataset(name, np.zeros((1, 1)), np.zeros(1, dtype=np.int64), None, None, ["M"])

        fake = types.ModuleType("perceptron_lab.datasets.uci")
        fake.load_uci = fake_load_uci
        monkeypatch.setitem(sys.modules, "perceptron_lab.datasets.uci", fake)

        load_dataset("sonar", tmp_path)
        (tmp_path / "uci").mkdir()
        (tmp_path / "uci" / "sonar.all-data").write_bytes((EMBEDDED_DIR / "sonar.all-data").read_bytes())
        ds = load_dataset("sonar", tmp_path)
        assert seen == [("sonar", EMBEDDED_DIR), ("sonar", tmp_path / "uci")]
        assert ds.meta["embedded"] is False

    def test_no_fallback_for_other_uci_sets(self, tmp_path, monkeypatch):
        entry = get_entry("bupa")
        assert not entry.embedded
        with pytest.raises(DatasetError, match=r"plab data fetch bupa"):
            load_dataset("bupa", tmp_path)

    def test_corrupt_data_root_copy_is_not_silently_replaced(self, tmp_path):
        # A broken copy in the data root takes precedence and fails verification.
        (tmp_path / "uci").mkdir()
        (tmp_path / "uci" / "sonar.all-data").write_text("0.1,R\n")
        with pytest.raises(DatasetError, match=r"sonar\.all-data: mismatch"):
            load_dataset("sonar", tmp_path, verify=True)

