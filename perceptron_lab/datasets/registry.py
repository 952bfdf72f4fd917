"""The dataset registry: where each dataset lives, how to check it, fetch it and load it.

Files live under a *data root* with one subfolder per source::

    <root>/mnist/          train-images-idx3-ubyte.gz ... (LeCun IDX files)
    <root>/fashion-mnist/  same four file names
    <root>/usps/           zip.train.gz, zip.test.gz (ESL layout)
    <root>/letter/         letter-recognition.data
    <root>/uci/            adult.data, adult.test, sonar.all-data, ...

The root is chosen by :func:`resolve_data_dir`: an explicit argument (the CLI's
``--data-dir``), else the ``PLAB_DATA`` environment variable, else the user cache
``$XDG_CACHE_HOME/perceptron_lab`` (``~/.cache/perceptron_lab``).

Only sonar and ionosphere have a copy inside the package (for the quickstart); every
other dataset must be present under the root, or loading fails with a message that
says how to get it. Nothing is ever synthesised in place of a missing file.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

from ..errors import DatasetError, PlabError
from .base import Dataset
from .download import download_file, sha256_file
from .images import load_fashion_mnist, load_mnist
from .letter import load_letter
from .usps import load_usps

__all__ = [
    "FileSpec",
    "DatasetEntry",
    "FileCheck",
    "FetchResult",
    "DATA_ENV_VAR",
    "DATASET_NAMES",
    "EMBEDDED_DIR",
    "default_data_dir",
    "resolve_data_dir",
    "data_dir_source",
    "list_datasets",
    "get_entry",
    "dataset_path",
    "load_dataset",
    "verify_dataset",
    "fetch_dataset",
]

DATA_ENV_VAR = "PLAB_DATA"
EMBEDDED_DIR = Path(__file__).resolve().parent / "embedded"

# Values returned by data_dir_source().
SOURCE_ARGUMENT = "--data-dir"
SOURCE_ENV = DATA_ENV_VAR
SOURCE_CACHE = "user cache"


# --------------------------------------------------------------------------- data root


def default_data_dir() -> Path:
    """``$XDG_CACHE_HOME/perceptron_lab``, or ``~/.cache/perceptron_lab`` when that is unset."""
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    # The XDG spec says relative paths in XDG_CACHE_HOME are invalid and must be ignored.
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "perceptron_lab"


def _resolve(explicit: str | os.PathLike | None) -> tuple[Path, str]:
    if explicit is not None and str(explicit).strip():
        return Path(explicit).expanduser().absolute(), SOURCE_ARGUMENT
    env = os.environ.get(DATA_ENV_VAR, "").strip()
    if env:
        return Path(env).expanduser().absolute(), SOURCE_ENV
    return default_data_dir(), SOURCE_CACHE


def resolve_data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """The data root: ``explicit`` if given, else ``$PLAB_DATA``, else the user cache folder.

    The folder need not exist. Empty strings count as unset.
    """
    return _resolve(explicit)[0]


def data_dir_source(explicit: str | os.PathLike | None = None) -> str:
    """Which rule :func:`resolve_data_dir` used: ``"--data-dir"``, ``"PLAB_DATA"`` or ``"user cache"``."""
    return _resolve(explicit)[1]


# --------------------------------------------------------------------------- entries


@dataclass(frozen=True)
class FileSpec:
    """One file of a dataset.

    ``sha256`` lists every accepted digest, the canonical download's first. ``size`` is
    the byte size of the canonical download (informational; the digest decides).
    ``confirmed`` is False when no published digest for the canonical URL was found and
    the registered one was computed from a copy with verified contents.
    """

    name: str
    sha256: tuple[str, ...]
    size: int
    urls: tuple[str, ...]
    confirmed: bool = True


@dataclass(frozen=True)
class DatasetEntry:
    """Everything the project knows about one dataset name."""

    name: str
    description: str
    subfolder: str
    files: tuple[FileSpec, ...]
    loader: Callable[[Path], Dataset] = field(repr=False, compare=False)
    citation: str
    license: str
    embedded: bool = False  # a copy ships in perceptron_lab/datasets/embedded/

    @property
    def file_names(self) -> list[str]:
        return [f.name for f in self.files]


class FileCheck(NamedTuple):
    """Result of checking one file: ``status`` is ``"ok"``, ``"missing"`` or ``"mismatch"``."""

    file: Path
    status: str
    detail: str


class FetchResult(NamedTuple):
    """Result of fetching one file: ``action`` is ``"downloaded"`` or ``"present"``."""

    file: Path
    action: str
    detail: str


_LECUN = "http://yann.lecun.com/exdb/mnist/"
_OSSCI = "https://ossci-datasets.s3.amazonaws.com/mnist/"
_ZALANDO = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
_ZALANDO_KERAS = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
_HASTIE = "https://hastie.su.domains/ElemStatLearn/datasets/"
_HASTIE_OLD = "https://web.stanford.edu/~hastie/ElemStatLearn/datasets/"
_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"

_UNCONFIRMED = (
    "the registered digest comes from a copy whose contents were checked by hand; "
    "no published digest of the canonical file was found"
)

_UCI_CITE = "Dua & Graff, UCI Machine Learning Repository (archive.ics.uci.edu)"
_UCI_LICENSE = "CC BY 4.0 (UCI Machine Learning Repository)"


def _mirrored(name: str, sha256: str | tuple[str, ...], size: int, bases: Sequence[str]) -> FileSpec:
    digests = (sha256,) if isinstance(sha256, str) else tuple(sha256)
    return FileSpec(name, digests, size, tuple(base + name for base in bases))


def _uci_file(path: str, sha256: str, size: int, confirmed: bool = True) -> FileSpec:
    return FileSpec(path.rsplit("/", 1)[-1], (sha256,), size, (_UCI + path,), confirmed)


def _uci_loader(name: str) -> Callable[[Path], Dataset]:
    def load(folder: Path) -> Dataset:
        from .uci import load_uci  # imported on first use

        return load_uci(name, Path(folder))

    load.__name__ = load.__qualname__ = f"load_uci_{name.replace('-', '_')}"
    return load


def _uci_entry(
    name: str,
    description: str,
    files: tuple[FileSpec, ...],
    citation: str,
    embedded: bool = False,
) -> DatasetEntry:
    return DatasetEntry(
        name=name,
        description=description,
        subfolder="uci",
        files=files,
        loader=_uci_loader(name),
        citation=f"{citation}. {_UCI_CITE}",
        license=_UCI_LICENSE,
        embedded=embedded,
    )


_ENTRIES: tuple[DatasetEntry, ...] = (
    DatasetEntry(
        name="mnist",
        description="MNIST handwritten digits: 60000 train / 10000 test, 28x28 pixels in 0..255, 10 classes",
        subfolder="mnist",
        files=(
            _mirrored("train-images-idx3-ubyte.gz",
                      "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", 9912422, (_LECUN, _OSSCI)),
            _mirrored("train-labels-idx1-ubyte.gz",
                      "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", 28881, (_LECUN, _OSSCI)),
            _mirrored("t10k-images-idx3-ubyte.gz",
                      "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", 1648877, (_LECUN, _OSSCI)),
            _mirrored("t10k-labels-idx1-ubyte.gz",
                      "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", 4542, (_LECUN, _OSSCI)),
        ),
        loader=load_mnist,
        citation="Y. LeCun, L. Bottou, Y. Bengio, P. Haffner, Gradient-based learning applied to document "
        "recognition, Proc. IEEE 86(11), 1998; data by Y. LeCun, C. Cortes, C. J. C. Burges",
        license="CC BY-SA 3.0",
    ),
    DatasetEntry(
        name="fashion-mnist",
        description="Fashion-MNIST clothing images: 60000 train / 10000 test, 28x28 pixels in 0..255, 10 classes",
        subfolder="fashion-mnist",
        # First digest: Zalando's download; second: the recompressed copy in Debian's
        # dataset-fashion-mnist package (same images and labels).
        files=(
            _mirrored("train-images-idx3-ubyte.gz",
                      ("3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
                       "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7"),
                      26421880, (_ZALANDO, _ZALANDO_KERAS)),
            _mirrored("train-labels-idx1-ubyte.gz",
                      ("a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
                       "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056"),
                      29515, (_ZALANDO, _ZALANDO_KERAS)),
            _mirrored("t10k-images-idx3-ubyte.gz",
                      ("346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
                       "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa"),
                      4422102, (_ZALANDO, _ZALANDO_KERAS)),
            _mirrored("t10k-labels-idx1-ubyte.gz",
                      ("67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
                       "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05"),
                      5148, (_ZALANDO, _ZALANDO_KERAS)),
        ),
        loader=load_fashion_mnist,
        citation="H. Xiao, K. Rasul, R. Vollgraf, Fashion-MNIST: a Novel Image Dataset for Benchmarking "
        "Machine Learning Algorithms, arXiv:1708.07747, 2017",
        license="MIT (Zalando Research)",
    ),
    DatasetEntry(
        name="usps",
        description="USPS handwritten digits (ESL 'zip' data): 7291 train / 2007 test, 256 features in [-1,1], 10 classes",
        subfolder="usps",
        # First digest: Hastie's files; second: text regenerated from the ElemStatLearn R
        # package with identical values (different number formatting).
        files=(
            _mirrored("zip.train.gz",
                      ("66ebf231ab51f2cf6ac1a892d0f98ccffee1079d7a5db638c1f11f366046ca16",
                       "2300ec7451f8deb52ab859a0576760a6e9de93a96b46cb719fe9b6fe4f33adef"),
                      1829071, (_HASTIE, _HASTIE_OLD)),
            _mirrored("zip.test.gz",
                      ("8dacc3c6e136af6c3488de9e5113a7daf140c8c2f1f0b61c54ee02f03f1a962f",
                       "078c098cc06a71faf904172371df3382091f616bf848656b2da40cd994163b35"),
                      439208, (_HASTIE, _HASTIE_OLD)),
        ),
        loader=load_usps,
        citation="Y. Le Cun et al., Handwritten digit recognition with a back-propagation network, NIPS 2, 1990; "
        "as distributed with T. Hastie, R. Tibshirani, J. Friedman, The Elements of Statistical Learning",
        license="no explicit license; redistributed by the ESL authors (ElemStatLearn R package: GPL-2+)",
    ),
    DatasetEntry(
        name="letter",
        description="UCI letter recognition: 20000 rows, 16 integer features, 26 classes; "
        "train = first 16000, test = last 4000 (Gentile 2001)",
        subfolder="letter",
        files=(
            _uci_file("letter-recognition/letter-recognition.data",
                      "2b89f3602cf768d3c8355267d2f13f2417809e101fc2b5ceee10db19a60de6e2", 712565),
        ),
        loader=load_letter,
        citation="P. W. Frey, D. J. Slate, Letter recognition using Holland-style adaptive classifiers, "
        f"Machine Learning 6(2), 1991. {_UCI_CITE}",
        license=_UCI_LICENSE,
    ),
    _uci_entry(
        "adult",
        "UCI adult (census income >50K): 32561 train / 16281 test rows, mixed categorical/numeric, 2 classes",
        (
            _uci_file("adult/adult.data",
                      "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d", 3974305),
            _uci_file("adult/adult.test",
                      "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05", 2003153),
        ),
        "R. Kohavi, Scaling up the accuracy of naive-Bayes classifiers: a decision-tree hybrid, KDD 1996 "
        "(donors B. Becker, R. Kohavi)",
    ),
    _uci_entry(
        "breast-cancer-wisconsin",
        "UCI Wisconsin breast cancer (original): 699 rows, 9 integer features (16 missing values), 2 classes",
        (
            _uci_file("breast-cancer-wisconsin/breast-cancer-wisconsin.data",
                      "402c585309c399237740f635ef9919dc512cca12cbeb20de5e563a4593f22b64", 19889),
        ),
        "W. H. Wolberg, O. L. Mangasarian, Multisurface method of pattern separation for medical diagnosis "
        "applied to breast cytology, PNAS 87, 1990",
    ),
    _uci_entry(
        "bupa",
        "UCI BUPA liver disorders: 345 rows, 6 numeric features, class = 'selector' field",
        (
            _uci_file("liver-disorders/bupa.data",
                      "a166a3e7a6f4dc41aaaedc59a107e57d8adcaeb8821f0873d756982f1ea74c92", 7297, confirmed=False),
        ),
        "BUPA Medical Research Ltd., donated by R. S. Forsyth",
    ),
    _uci_entry(
        "wdbc",
        "UCI Wisconsin diagnostic breast cancer: 569 rows, 30 real features, 2 classes (B/M)",
        (
            _uci_file("breast-cancer-wisconsin/wdbc.data",
                      "d606af411f3e5be8a317a5a8b652b425aaf0ff38ca683d5327ffff94c3695f4a", 124103),
        ),
        "W. N. Street, W. H. Wolberg, O. L. Mangasarian, Nuclear feature extraction for breast tumor "
        "diagnosis, IS&T/SPIE 1993",
    ),
    _uci_entry(
        "crx",
        "UCI credit approval (crx): 690 rows, 15 mixed features (37 rows with missing values), 2 classes",
        (
            _uci_file("credit-screening/crx.data",
                      "fff49bc186cbddb3ace7371d40d9fbbb3af4f126019c13ff3f562249b1454f4d", 32218),
        ),
        "J. R. Quinlan, Simplifying decision trees, Int. J. Man-Machine Studies 27, 1987",
    ),
    _uci_entry(
        "ionosphere",
        "UCI ionosphere radar returns: 351 rows, 34 real features, 2 classes (g/b)",
        (
            _uci_file("ionosphere/ionosphere.data",
                      "46d52186b84e20be52918adb93e8fb9926b34795ff7504c24350ae0616a04bbd", 76467),
        ),
        "V. G. Sigillito, S. P. Wing, L. V. Hutton, K. B. Baker, Classification of radar returns from the "
        "ionosphere using neural networks, Johns Hopkins APL Technical Digest 10, 1989",
        embedded=True,
    ),
    _uci_entry(
        "wpbc",
        "UCI Wisconsin prognostic breast cancer: 198 rows, 33 real features (4 missing values), 2 classes (N/R)",
        (
            _uci_file("breast-cancer-wisconsin/wpbc.data",
                      "f2bd5ccdb6086fa832370dc043319907430cf6bfcfd3b96a3961a357be345c8e", 44234),
        ),
        "W. N. Street, O. L. Mangasarian, W. H. Wolberg, An inductive learning approach to prognostic "
        "prediction, ICML 1995",
    ),
    _uci_entry(
        "sonar",
        "UCI sonar (mines vs rocks): 208 rows, 60 real features in [0,1], 2 classes (M/R)",
        (
            _uci_file("undocumented/connectionist-bench/sonar/sonar.all-data",
                      "e90434cdbf00fcf93ffa911fe447ae25606979658e60f1d32e155c3b5240234d", 87776),
        ),
        "R. P. Gorman, T. J. Sejnowski, Analysis of hidden units in a layered network trained to classify "
        "sonar targets, Neural Networks 1, 1988",
        embedded=True,
    ),
    _uci_entry(
        "promoters",
        "UCI E. coli promoter gene sequences: 106 rows, 57 nucleotides each, 2 classes (+/-)",
        (
            _uci_file("molecular-biology/promoter-gene-sequences/promoters.data",
                      "9cba9e8661ab04760d69b857f62259233446f2dce5ec9b515efe0b23c315bb29", 7089, confirmed=False),
        ),
        "G. G. Towell, J. W. Shavlik, M. O. Noordewier, Refinement of approximate domain theories by "
        "knowledge-based neural networks, AAAI 1990",
    ),
)

_REGISTRY: dict[str, DatasetEntry] = {entry.name: entry for entry in _ENTRIES}
DATASET_NAMES: tuple[str, ...] = tuple(_REGISTRY)


# --------------------------------------------------------------------------- lookup


def list_datasets() -> list[DatasetEntry]:
    """All registry entries, images first, then letter, then the UCI sets."""
    return list(_ENTRIES)


def get_entry(name: str) -> DatasetEntry:
    """The entry for ``name`` (case-insensitive, ``_`` accepted for ``-``).

    An unknown name raises :class:`DatasetError` with the closest known names.
    """
    key = str(name).strip().lower().replace("_", "-")
    entry = _REGISTRY.get(key)
    if entry is not None:
        return entry
    close = difflib.get_close_matches(key, DATASET_NAMES, n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise DatasetError(
        f"unknown dataset {name!r}.{hint} Known datasets: {', '.join(DATASET_NAMES)}."
    )


def dataset_path(name: str, data_dir: str | os.PathLike | None = None) -> Path:
    """The folder where ``name``'s files are expected under the data root (it may not exist)."""
    return resolve_data_dir(data_dir) / get_entry(name).subfolder


def _missing_error(entry: DatasetEntry, folder: Path, missing: list[str], data_dir) -> DatasetError:
    root, source = _resolve(data_dir)
    listed = ", ".join(missing)
    return DatasetError(
        f"dataset {entry.name!r} is not available: {len(missing)} of {len(entry.files)} file(s) "
        f"missing from {folder} ({listed}); the data root {root} was taken from {source}. "
        f"Fix: run `plab data fetch {entry.name}` to download it there, or, if you have a copy "
        f"elsewhere, set PLAB_DATA=/path/to/data or pass --data-dir /path/to/data "
        f"(the folder that contains {entry.subfolder}/)."
    )


def _locate(entry: DatasetEntry, data_dir) -> tuple[Path, bool, list[str]]:
    """(folder to read, whether it is the packaged copy, files missing from the data root).

    The packaged copy (sonar, ionosphere) is read only when the data root has none of the
    dataset's files: a file that is there but broken (a dangling link, a folder) is an error, never
    silently replaced."""
    folder = resolve_data_dir(data_dir) / entry.subfolder
    missing = [f.name for f in entry.files if not (folder / f.name).is_file()]
    broken = [f.name for f in entry.files if f.name in missing and ((folder / f.name).is_symlink()
                                                                     or (folder / f.name).exists())]
    if broken:
        raise DatasetError(f"dataset {entry.name!r}: {folder / broken[0]} is not a readable file (a dangling "
                           f"link or a folder); fix or remove it (plab data fetch {entry.name} downloads a copy)")
    if (missing and len(missing) == len(entry.files) and entry.embedded
            and all((EMBEDDED_DIR / f.name).is_file() for f in entry.files)):
        return EMBEDDED_DIR, True, missing
    return folder, False, missing


# --------------------------------------------------------------------------- verify


def _check_file(spec: FileSpec, path: Path) -> FileCheck:
    if not path.is_file():
        return FileCheck(path, "missing", "not found")
    try:
        actual = sha256_file(path)
    except OSError as exc:
        return FileCheck(path, "missing", f"cannot read: {exc.strerror or exc}")
    size = path.stat().st_size
    if actual in spec.sha256:
        return FileCheck(path, "ok", f"sha256 {actual[:16]}…, {size} bytes")
    detail = f"sha256 {actual} ({size} bytes), expected {' or '.join(spec.sha256)}"
    if not spec.confirmed:
        detail += f" ({_UNCONFIRMED})"
    return FileCheck(path, "mismatch", detail)


def verify_dataset(name: str, data_dir: str | os.PathLike | None = None) -> list[FileCheck]:
    """Check the sha256 of each file of ``name``; one :class:`FileCheck` per file.

    Checks the copy :func:`load_dataset` would read: the data root's, or the packaged
    copy for sonar/ionosphere when the data root has none (its ``detail`` says so).
    """
    entry = get_entry(name)
    folder, embedded, _ = _locate(entry, data_dir)
    checks = [_check_file(spec, folder / spec.name) for spec in entry.files]
    if embedded:
        where = resolve_data_dir(data_dir) / entry.subfolder
        checks = [
            FileCheck(c.file, c.status, f"{c.detail}; packaged copy (none in {where})") for c in checks
        ]
    return checks


# --------------------------------------------------------------------------- checked on every run

#: File (in the user cache) remembering files whose sha256 matched, by path, size and mtime.
VERIFIED_CACHE_NAME = ".verified.json"


def _verified_cache() -> Path:
    return default_data_dir() / VERIFIED_CACHE_NAME


def check_dataset_files(name: str, data_dir: str | os.PathLike | None = None) -> str | None:
    """Check the sha256 of every file :func:`load_dataset` would read for ``name`` before a run.

    A file whose (path, size, mtime) matched before is not hashed again (the record lives in the
    user cache). Raises a one-line :class:`DatasetError` (exit status 3) on a mismatch or an
    unreadable file. Returns a note when the packaged copy is read (nothing is substituted without
    saying so), else None.
    """
    import json

    entry = get_entry(name)
    folder, embedded, missing = _locate(entry, data_dir)
    if missing and not embedded:
        raise _missing_error(entry, folder, missing, data_dir)
    cache_path = _verified_cache()
    try:
        cache = json.loads(cache_path.read_text(encoding="utf-8"))
        cache = cache if isinstance(cache, dict) else {}
    except (OSError, ValueError):
        cache = {}
    changed = False
    for spec in entry.files:
        path = (folder / spec.name).resolve()
        try:
            st = path.stat()
        except OSError as exc:
            raise DatasetError(f"dataset {entry.name!r}: cannot read {path}: {exc.strerror or exc}") from None
        stamp = [st.st_size, st.st_mtime_ns]
        rec = cache.get(str(path))
        if isinstance(rec, dict) and rec.get("stamp") == stamp and rec.get("sha256") in spec.sha256:
            continue
        try:
            actual = sha256_file(path)
        except OSError as exc:
            raise DatasetError(f"dataset {entry.name!r}: cannot read {path}: {exc.strerror or exc}") from None
        if actual not in spec.sha256:
            raise DatasetError(f"dataset {entry.name!r}: {path} does not match its checksum (sha256 {actual[:16]}…, "
                               f"expected {spec.sha256[0][:16]}…); run `plab data fetch {entry.name} --force` to "
                               "replace it, or pass --no-verify to run on it anyway")
        cache[str(path)] = {"stamp": stamp, "sha256": actual}
        changed = True
    if changed:
        from ..store import atomic_write_text

        try:
            atomic_write_text(cache_path, json.dumps(cache, indent=0, sort_keys=True))
        except PlabError:
            pass  # no cache: the next run hashes again
    if embedded:
        return (f"reading the packaged copy of {entry.name} ({EMBEDDED_DIR}): the data root has none in "
                f"{resolve_data_dir(data_dir) / entry.subfolder}")
    return None


# --------------------------------------------------------------------------- load


def load_dataset(
    name: str, data_dir: str | os.PathLike | None = None, verify: bool = False
) -> Dataset:
    """Load ``name`` from the data root (see :func:`resolve_data_dir`).

    With ``verify=True`` every file's sha256 is checked first. ``meta["source"]`` records
    the file read (the folder, for multi-file datasets), ``meta["files"]`` every file
    and ``meta["embedded"]`` whether the packaged copy was used.
    Raises :class:`DatasetError` if files are missing, corrupt or fail verification.
    """
    entry = get_entry(name)
    folder, embedded, missing = _locate(entry, data_dir)
    if missing and not embedded:
        raise _missing_error(entry, folder, missing, data_dir)

    if verify:
        bad = [c for c in verify_dataset(entry.name, data_dir) if c.status != "ok"]
        if bad:
            lines = "; ".join(f"{c.file}: {c.status}: {c.detail}" for c in bad)
            raise DatasetError(
                f"dataset {entry.name!r} failed verification ({lines}). "
                f"Fix: run `plab data fetch {entry.name}` to replace the bad file(s)."
            )

    dataset = entry.loader(folder)
    files = [str(folder / f.name) for f in entry.files]
    dataset.meta["source"] = files[0] if len(files) == 1 else str(folder)
    dataset.meta["files"] = files
    dataset.meta["embedded"] = embedded
    return dataset


# --------------------------------------------------------------------------- fetch


def fetch_dataset(
    name: str,
    data_dir: str | os.PathLike | None = None,
    force: bool = False,
    progress: bool = True,
    *,
    mirrors: Sequence[str] | None = None,
    canonical: bool = True,
    retries: int = 3,
    backoff: float = 1.0,
    timeout: float = 60.0,
) -> list[FetchResult]:
    """Download the files of ``name`` into its folder under the data root.

    Files already present with an accepted digest are skipped unless ``force``; others
    are downloaded and verified (see :func:`download_file`). ``mirrors`` are extra base
    URLs laid out like the data root (``<base>/<subfolder>/<file>``) and are tried before
    the registry's URLs; ``canonical=False`` uses the mirrors only.
    """
    entry = get_entry(name)
    folder = resolve_data_dir(data_dir) / entry.subfolder
    extra = [m.rstrip("/") for m in (mirrors or [])]
    results: list[FetchResult] = []
    for spec in entry.files:
        dest = folder / spec.name
        if not force and dest.is_file() and sha256_file(dest) in spec.sha256:
            results.append(FetchResult(dest, "present", "checksum ok"))
            continue
        urls = [f"{base}/{entry.subfolder}/{spec.name}" for base in extra]
        if canonical:
            urls += list(spec.urls)
        try:
            download_file(
                urls,
                dest,
                spec.sha256,
                progress=progress,
                retries=retries,
                backoff=backoff,
                timeout=timeout,
                force=True,
            )
        except DatasetError as exc:
            note = f" Note: {_UNCONFIRMED}." if not spec.confirmed else ""
            raise DatasetError(f"{entry.name}: {exc}{note}") from None
        results.append(FetchResult(dest, "downloaded", "checksum ok"))
    return results
