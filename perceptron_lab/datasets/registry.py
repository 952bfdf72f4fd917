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

The catalogue of names, files and digests is :mod:`.catalog`.

Only sonar and ionosphere have a copy inside the package (for the quickstart); every
other dataset must be present under the root, or loading fails with a message that
says how to get it. Nothing is ever synthesised in place of a missing file.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import NamedTuple, Sequence

from perceptron_lab import constants as C
from perceptron_lab.errors import DatasetError, UsageError
from perceptron_lab.datasets.base import Dataset
from perceptron_lab.datasets.catalog import _ENTRIES, _REGISTRY, _UNCONFIRMED, DATASET_NAMES, DatasetEntry, FileSpec  # noqa: F401
from perceptron_lab.datasets.download import download_file, sha256_file

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

    Parameters
    ----------
    explicit : str or os.PathLike, optional
        A folder given by the caller (``--data-dir`` on the command line). Empty strings count
        as unset, here and in ``$PLAB_DATA``.

    Returns
    -------
    pathlib.Path
        The absolute folder, which need not exist.
    """
    return _resolve(explicit)[0]


def data_dir_source(explicit: str | os.PathLike | None = None) -> str:
    """Which rule :func:`resolve_data_dir` used: ``"--data-dir"``, ``"PLAB_DATA"`` or ``"user cache"``."""
    return _resolve(explicit)[1]


# --------------------------------------------------------------------------- results


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
        tmp = cache_path.with_name(f".{cache_path.name}.{os.getpid()}.plab.tmp")
        try:  # written whole and moved into place: a reader never sees half a cache
            cache_path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(cache, indent=0, sort_keys=True), encoding="utf-8")
            os.replace(tmp, cache_path)
        except OSError:
            tmp.unlink(missing_ok=True)  # no cache: the next run hashes again
    if embedded:
        return (f"reading the packaged copy of {entry.name} ({EMBEDDED_DIR}): the data root has none in "
                f"{resolve_data_dir(data_dir) / entry.subfolder}")
    return None


# --------------------------------------------------------------------------- load


def load_dataset(
    name: str, data_dir: str | os.PathLike | None = None, verify: bool = False, *, instance_name: str = "drop"
) -> Dataset:
    """Load the registered dataset ``name`` from the data root.

    Parameters
    ----------
    name : str
        A registered dataset (``plab data list``), e.g. ``"mnist"``, ``"usps"``, ``"sonar"``.
    data_dir : str or os.PathLike, optional
        The data root; by default ``$PLAB_DATA``, else the user cache folder
        ([`resolve_data_dir`][perceptron_lab.datasets.resolve_data_dir]). The small UCI sets
        fall back to a copy packaged with plab when the data root lacks them.
    verify : bool, default False
        Check every file's sha256 against the registry first.
    instance_name : {"drop", "nominal"}, default "drop"
        How promoters' instance name (UCI's attribute 2) enters the features: left out, or one
        0/1 indicator per name (``perceptron_lab.datasets.uci.load_uci``); the config key
        ``dataset.instance_name``. Other data sets take only ``"drop"``.

    Returns
    -------
    Dataset
        The train/test pair. ``meta["source"]`` records the file read (the folder, for
        multi-file datasets), ``meta["files"]`` every file and ``meta["embedded"]`` whether the
        packaged copy was used.

    Raises
    ------
    DatasetError
        When a file is missing (with the ``plab data fetch`` command that fetches it), corrupt,
        or fails verification; exit status 3 on the command line.

    Examples
    --------
    >>> from perceptron_lab.datasets import load_dataset
    >>> ds = load_dataset("sonar")
    >>> ds.X_train.shape, ds.X_test is None, ds.classes
    ((208, 60), True, ['R', 'M'])
    """
    entry = get_entry(name)
    if instance_name not in C.INSTANCE_NAME_READINGS:
        raise UsageError(f"instance_name must be one of {', '.join(C.INSTANCE_NAME_READINGS)}, got {instance_name!r}")
    if instance_name != "drop" and entry.name not in C.DATASETS_WITH_INSTANCE_NAME:
        raise UsageError(f"instance_name={instance_name!r}: {entry.name} has no instance name among its attributes "
                         f"(only {', '.join(C.DATASETS_WITH_INSTANCE_NAME)} has one); use instance_name='drop'")
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

    dataset = entry.loader(folder) if instance_name == "drop" else entry.loader(folder, instance_name=instance_name)
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
