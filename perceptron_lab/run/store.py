"""The run folder: atomic writes, the lock, parts that prove they belong to their run, and cleanup.

A run folder (``plab run --out OUT``) holds ``run.json``, the finished units in ``parts/`` and the
final outputs. Resuming reuses a part only when it proves it belongs to the run (as Snakemake and
DVC reuse an output only when its inputs' checksums match):

* every part file starts with a header line ``# plab-part 1 key=K rows=N sha256=S`` where ``K``
  is the part's key -- a hash of the resolved config of the part (output format included), the
  units it holds, a fingerprint of the data actually read (:func:`data_fingerprint`) and of the
  package's code (:func:`code_fingerprint`) -- ``N`` the number of CSV rows after the header and
  ``S`` the sha256 of those rows. A part whose header, key, row count or checksum does not match is recomputed, with one
  warning line (:meth:`RunFolder.read_part`);
* one ``plab run`` at a time writes a folder: :class:`RunFolder` holds an exclusive ``fcntl``
  lock on ``OUT/.plab.lock`` while it runs (the kernel releases it when the process dies);
* every file is written to a temporary ``.NAME.PID.plab.tmp`` and moved into place; only files
  named in that pattern, of processes no longer running, are ever cleaned up.

**A user's files are never deleted or overwritten.** plab replaces or removes a file only when it
can prove it wrote it, by its name *and* its header (:func:`plab_wrote`): a part starts with
``# plab-part``; a CSV output's header line begins with the same two column names as the one plab
writes now (``grid.csv``: begins with ``grid_point``; ``search.csv`` and ``nested.csv``, led by
the grid's settings: or ends with the same two); a Markdown output's title line matches plab's;
an HTML page's ``<title>`` ends with
``perceptron_lab report``; ``run.json`` is a JSON object with plab's ``name`` and ``config_hash``,
``timings.json`` one of unit records, ``reproduce.json`` one with plab's ``configs``;
a PNG carries plab's ``Software`` text (figures drawn before it did: matplotlib's, under a figure
name plab uses). Any other file where plab must write stops the command with one line and exit
status 1 (:class:`~perceptron_lab.errors.UserFileError`) *before* anything is replaced: stopping
loses nothing (the finished parts stay and the same command resumes once the file is moved),
while overwriting would destroy work plab cannot recreate. ``plab run --force`` removes only the
parts that pass the same test; other files in ``parts/`` are left alone.

**Files plab reads back are validated** (:func:`read_back_text`, :func:`read_back_json`,
:func:`read_back_csv`): a file that is empty, not UTF-8 or not parseable, cut short (a CSV whose
last line has no end -- plab ends every CSV with one -- or with fewer rows than run.json's
``csv_rows`` records for it), with a row whose field count is not the header's, or without the
columns its reader needs raises :class:`~perceptron_lab.errors.DamagedFileError` (exit status 1) naming the
file and how to get a whole copy again; readers of many files (``plab report``) catch it, warn
and mark the run instead of leaving it out silently.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np

from perceptron_lab.constants import MIN_FREE_DISK_MB
from perceptron_lab.errors import DamagedFileError, OutputError, PlabError, UserFileError
from perceptron_lab.sparse import issparse

#: Suffix of plab's temporary files; nothing else is ever removed by a cleanup.
TMP_SUFFIX = ".plab.tmp"
_TMP_RE = re.compile(r"^\..+\.(\d+)" + re.escape(TMP_SUFFIX) + "$")
PART_FORMAT = 1
_HEADER_RE = re.compile(r"^# plab-part (\d+) key=([0-9a-f]+) rows=(\d+) sha256=([0-9a-f]{64})$")
LOCK_NAME = ".plab.lock"
INFO_NAME = "run.json"
TIMINGS_NAME = "timings.json"


# ----------------------------------------------------------------------------- atomic writes


def atomic_write_text(path: Path, text: str):
    """Write ``text`` to a temporary file and move it into place. On any failure the temporary file
    is removed; an OSError (disk full, no permission) becomes an :class:`OutputError` saying what to do."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes):
    """:func:`atomic_write_text` for bytes (figures). A file already at ``path`` is replaced only when
    plab wrote it (:func:`plab_wrote`); otherwise :class:`~perceptron_lab.errors.UserFileError`."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}{TMP_SUFFIX}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise PlabError(f"{path} is a folder where plab writes a file; move it away and run the command again")
        check_replaceable(path, data)
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:  # disk full, no permission, Ctrl-C: leave no temporary file behind
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise write_error(path, exc) from None
        raise


# ----------------------------------------------------------------------------- whose file is it


PART_HEADER = b"# plab-part "
#: The names of plab's part files: a grid point's (``g003``), a unit's (``g000_f+02_p001``,
#: ``g000_f-01_i03_p000``) and a fold's shared by every grid point (``f+02``, ``f-01_i03``;
#: :func:`perceptron_lab.run.plan.plan_parts`).
PART_NAME_RE = re.compile(r"^(g\d+(_f[+-]\d+(_i\d+)?_p\d+)?|f[+-]\d+(_i\d+)?)\.csv$")
#: Figures plab drew before it marked its PNGs: matplotlib's mark is accepted under these names.
_LEGACY_FIGURE_RE = re.compile(r"^(learning_curves|counts|parameter_curve|folds|[a-z0-9]+_figure[\w-]*|"
                               r"error_vs_budget_[\w-]+|seconds_vs_budget|mistakes_vs_examples)\.png$")
#: The ``Software`` text plab writes into its PNG figures (:func:`png_metadata`).
PNG_SOFTWARE = "perceptron_lab"
_HEAD_BYTES = 4096


def png_metadata() -> dict:
    """PNG text for plab's figures: the mark that proves plab drew them (``savefig(metadata=...)``)."""
    from perceptron_lab.constants import __version__

    return {"Software": f"{PNG_SOFTWARE} {__version__} (matplotlib)"}


def _first_line(data: bytes) -> bytes:
    return data.split(b"\n", 1)[0].rstrip(b"\r")


def _json_object(data: bytes):
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return obj if isinstance(obj, dict) else None


#: Outputs whose header begins with the setting keys of the config's grid, and ends with fixed columns.
GRID_LED_TABLES = ("search.csv", "nested.csv")


def plab_wrote(path: Path, new: bytes | None = None) -> bool:
    """Whether the file at ``path`` is one plab wrote, by its name and its header (see the module's
    docstring); ``new`` is what plab is about to write there (its header line is compared)."""
    path = Path(path)
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError:
        return False
    name, suffix = path.name, path.suffix.lower()
    if head.startswith(PART_HEADER):
        return PART_NAME_RE.match(name) is not None and (new is None or new.startswith(PART_HEADER))
    if suffix == ".csv":
        if path.parent.name == "parts" and PART_NAME_RE.match(name):
            return False   # a part without plab's header line
        old_cols = _first_line(head).split(b",")
        if new is None or len(old_cols) < 2:
            return False
        new_cols = _first_line(new).split(b",")
        if old_cols[:2] == new_cols[:2]:
            return True
        # the grid's keys lead grid.csv after its first column, and the setting keys lead
        # search.csv and nested.csv, so a config whose grid changed begins them otherwise: their
        # fixed first column (grid.csv) or fixed last two columns name them then
        if name == "grid.csv":
            return old_cols[0] == new_cols[0] == b"grid_point"
        return name in GRID_LED_TABLES and old_cols[-2:] == new_cols[-2:]
    if suffix == ".md":
        old = _first_line(head)
        if new is None or not old.startswith(b"# "):
            return False
        new_line = _first_line(new)
        return old == new_line or (b":" in old and old.split(b":", 1)[0] == new_line.split(b":", 1)[0])
    if suffix == ".html":
        return re.search(rb"<title>[^<]*perceptron_lab report</title>", head) is not None
    if suffix == ".png":
        if not head.startswith(b"\x89PNG\r\n\x1a\n"):
            return False
        if b"tEXtSoftware\x00" + PNG_SOFTWARE.encode() in head:
            return True
        return b"tEXtSoftware\x00Matplotlib" in head and _LEGACY_FIGURE_RE.match(name) is not None
    if suffix == ".json":
        try:
            obj = _json_object(path.read_bytes())
        except OSError:
            return False
        if obj is None:
            return False
        if name == INFO_NAME:
            return {"name", "config_hash"} <= set(obj)
        if name == TIMINGS_NAME:
            return all(isinstance(v, dict) and "unit" in v for v in obj.values())
        if name == "reproduce.json":
            return "configs" in obj
        return True   # plab's own caches (e.g. the dataset checksum cache)
    return new is not None and _first_line(head) == _first_line(new) and len(_first_line(head)) > 1


def check_replaceable(path: Path, new: bytes | None = None) -> None:
    """Raise :class:`~perceptron_lab.errors.UserFileError` when a file plab did not write (by
    :func:`plab_wrote`) stands at ``path``, where plab is about to write ``new``."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return
    if not plab_wrote(path, new):
        raise UserFileError(f"{path} was not written by plab (its name or its first line is not plab's), and plab "
                            "never overwrites a file it did not write: move it away (or choose another output "
                            "folder with --out) and run the same command again")


def write_error(path: Path, exc: OSError) -> OutputError:
    """The one-line error for a failed write: a full disk says the run resumes, others name --out."""
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return OutputError(f"no space left on the disk while writing {path} ({exc.strerror or exc}); "
                           "nothing finished is lost (finished runs stay in the output folder's parts/): "
                           "free some disk space, or choose another folder with --out, and run the same "
                           "command again to resume")
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):   # a file where a folder above ``path`` must be
        above = next((p for p in Path(path).parents if p.exists() and not p.is_dir()), None)
        if above is not None:
            return OutputError(f"cannot write {path}: {above} is a file, not a folder; choose another output "
                               "folder with --out")
    return OutputError(f"cannot write {path}: {exc.strerror or exc}; choose another output folder with --out")


def remove_stale_temporaries(folder: Path) -> int:
    """Delete plab's temporary files (``.NAME.PID.plab.tmp``) left in ``folder`` and
    ``folder/parts`` by a process that was killed mid-write (SIGKILL, power loss). Files of a
    process still running, and every file not named in that pattern, are kept. Returns how many
    were removed."""
    removed = 0
    for d in (folder, folder / "parts"):
        if not d.is_dir():
            continue
        for p in d.iterdir():
            m = _TMP_RE.match(p.name)
            if not m or not p.is_file():
                continue
            pid = int(m.group(1))
            if pid != os.getpid() and _pid_alive(pid):
                continue
            try:
                p.unlink()
                removed += 1
            except OSError:
                pass
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def check_writable(out: Path):
    """Fail early when ``out`` cannot be written or its disk has less than MIN_FREE_DISK_MB free."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test.{os.getpid()}{TMP_SUFFIX}"
        probe.write_text("ok")
        probe.unlink()
        free = shutil.disk_usage(out).free
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise write_error(out, exc) from None
        raise OutputError(f"cannot write to output folder {out}: {exc.strerror or exc}; "
                          "choose another with --out") from None
    if free < MIN_FREE_DISK_MB * 2**20:
        raise OutputError(f"only {free / 2**20:.1f} MB free on the disk of output folder {out}; a run needs "
                          f"at least {MIN_FREE_DISK_MB} MB for its results: free some disk space or choose "
                          "another folder with --out")


def check_output_folder(out, fix: str = "choose another folder with --out") -> None:
    """Fail before any work, with one line (:class:`~perceptron_lab.errors.OutputError`, exit status
    1), when a command could write nothing into the folder ``out``: a file stands at ``out`` or
    above it, or the folder -- ``out``, or the nearest folder above it that exists when ``out``
    does not yet -- refuses a new file (read-only, no permission, full disk). Creates nothing: the
    probe file is removed again, and the folders are made by the writes that follow. ``fix`` says
    what to do instead (the default names ``--out``)."""
    out = Path(out)
    here = out
    while not here.exists() and not here.is_symlink() and here != here.parent:
        here = here.parent
    if not here.is_dir():
        what = "a file, not a folder" if here.is_file() else "not a folder"
        raise OutputError(f"cannot write to output folder {out}: {here} is {what}; {fix}")
    probe = here / f".write-test.{os.getpid()}{TMP_SUFFIX}"
    try:
        with open(probe, "wb") as fh:
            fh.write(b"ok")
        probe.unlink()
    except OSError as exc:
        try:
            probe.unlink(missing_ok=True)
        except OSError:
            pass
        raise OutputError(f"cannot write to output folder {out}" + (f" ({here} refuses new files)" if here != out else "")
                          + f": {exc.strerror or exc}; {fix}") from None


# ----------------------------------------------------------------------------- reading back


#: What a damaged file's message suggests when its reader gives no better fix.
REWRITE_FIX = ("move it away and run the command that wrote it again (plab run with the same config and --out "
               "reuses the run's finished parts)")


def damaged(path: Path, why: str, fix: str | None = None) -> DamagedFileError:
    """The one-line error for a file plab reads back that is not whole."""
    return DamagedFileError(f"{path} is damaged ({why}); {fix or REWRITE_FIX}")


def read_back_text(path, fix: str | None = None, whole_lines: bool = True) -> str:
    """The UTF-8 text of a file plab reads back; :class:`~perceptron_lab.errors.DamagedFileError`
    when it cannot be read, is not UTF-8, is empty or (``whole_lines``) does not end with a newline
    (plab ends every CSV it writes with one, so a missing one means the file was cut short)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise damaged(path, f"unreadable: {exc.strerror or exc}", fix) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise damaged(path, f"not UTF-8 text: byte {exc.start}", fix) from None
    if not text.strip():
        raise damaged(path, "empty", fix)
    if whole_lines and not text.endswith("\n"):
        raise damaged(path, "cut short: its last line has no end", fix)
    return text


#: The entries of run.json its readers use, and the JSON type each has where plab wrote it: a
#: run.json holding another type there is damaged (not an AttributeError in a reader).
_NUMBER = (int, float)
RUN_JSON_TYPES = {"name": str, "config_hash": str, "status": str, "config_file": str, "config": dict, "dataset": dict,
                  "csv_rows": dict, "versions": dict, "exactness": dict, "numerics": dict, "outputs": list,
                  "paper_outputs": list, "overrides": list, "warnings": list, "units": int, "parts": int, "seed": int,
                  "jobs": int, "ran": int, "skipped": int, "wall_seconds": _NUMBER, "load_seconds": _NUMBER,
                  "write_seconds": _NUMBER, "train_seconds_total": _NUMBER, "eval_seconds_total": _NUMBER,
                  "peak_rss_gb_per_process": _NUMBER}
_JSON_NAMES = {str: "a string", dict: "an object", list: "a list", int: "an integer", _NUMBER: "a number"}


def _run_json_problem(obj: dict) -> str | None:
    """Why the run.json ``obj`` is not what plab writes (an entry of another type), or None."""
    def kind(v):
        return "null" if v is None else type(v).__name__
    for key, want in RUN_JSON_TYPES.items():
        v = obj.get(key)
        if key in obj and v is not None and (isinstance(v, bool) or not isinstance(v, want)):
            return f"its {key} is {kind(v)}, not {_JSON_NAMES[want]}"
    for section, v in (obj.get("config") or {}).items():
        if section in ("dataset", "kernel", "algorithm", "training", "prediction", "evaluation", "output") \
                and not isinstance(v, dict):
            return f"its config.{section} is {kind(v)}, not an object"
    for name, v in (obj.get("csv_rows") or {}).items():
        if isinstance(v, bool) or not isinstance(v, int):
            return f"its csv_rows.{name} is {kind(v)}, not an integer"
    return None


def read_back_json(path, fix: str | None = None, keys=()) -> dict:
    """A JSON object plab wrote (run.json, timings.json, reproduce.json), validated as
    :func:`read_back_text` does (a JSON file cut short does not parse), with ``keys`` present;
    a run.json also with each entry its readers use of the type plab writes (:data:`RUN_JSON_TYPES`)."""
    text = read_back_text(path, fix, whole_lines=False)
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise damaged(Path(path), f"not JSON: {str(exc).split(':')[0]}", fix) from None
    if not isinstance(obj, dict):
        raise damaged(Path(path), f"a JSON {type(obj).__name__}, not an object", fix)
    missing = [k for k in keys if k not in obj]
    if missing:
        raise damaged(Path(path), f"no {', '.join(missing)}", fix)
    why = _run_json_problem(obj) if Path(path).name == INFO_NAME else None
    if why:
        raise damaged(Path(path), why, fix)
    return obj


def csv_rows(path) -> int:
    """The data rows of a CSV file plab wrote (its lines after the header), for run.json's record
    (``csv_rows``) that lets a reader tell a file cut at a line's end from a whole one."""
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b"")) - 1


def read_back_csv(path, columns=(), fix: str | None = None, rows: int | None = None):
    """A CSV plab wrote, every cell as text (``dtype=str``, no NA parsing), validated: UTF-8,
    whole (ends with a newline), every row as long as the header, at least the ``columns``
    given and, when ``rows`` is given (run.json's ``csv_rows``), exactly that many rows.
    :class:`~perceptron_lab.errors.DamagedFileError` otherwise."""
    import io

    import pandas as pd

    path = Path(path)
    text = read_back_text(path, fix)
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise damaged(path, f"not a CSV table: {' '.join(str(exc).split())[:80]}", fix) from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise damaged(path, f"no column {', '.join(missing)}", fix)
    import csv

    width = len(df.columns)
    for line, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if len(row) != width:
            raise damaged(path, f"line {line} has {len(row)} fields, the header {width}", fix)
    lines = text.count("\n") - 1
    if rows is not None and lines != int(rows):
        raise damaged(path, f"{lines} rows where plab wrote {int(rows)} (run.json's csv_rows)", fix)
    return df


# ----------------------------------------------------------------------------- fingerprints and keys



def read_back_results(path, columns=(), fix: str | None = None):
    """A run's ``results.csv`` validated by :func:`read_back_csv`, with the row count its run.json
    records (``csv_rows``) when there is one: a damaged results.csv or run.json raises
    :class:`~perceptron_lab.errors.DamagedFileError`, so no table or figure is drawn from part of
    a run."""
    path = Path(path)
    info = path.with_name(INFO_NAME)
    rows = None
    if info.is_file():
        recorded = read_back_json(info, fix).get("csv_rows")
        rows = recorded.get(path.name) if isinstance(recorded, dict) else None
    return read_back_csv(path, columns, fix, rows)

def data_fingerprint(ds) -> str:
    """SHA-256 (its first 16 bytes) of the arrays a run reads (training and test features and
    labels, with their shapes and types): any change of the data files' contents changes it.
    SHA-256, not blake2b: processors with SHA instructions compute it in hardware."""
    h = hashlib.sha256()
    for a in (ds.X_train, ds.y_train, ds.X_test, ds.y_test):
        if a is None:
            h.update(b"none")
            continue
        if issparse(a):
            # CSR in canonical form (sorted indices, no duplicates): the same matrix, the same bytes
            from perceptron_lab.engine.kernels import as_csr

            c = as_csr(a)
            h.update(f"csr{c.dtype.str}{c.shape}".encode())
            for part in (c.indptr.astype(np.int64), c.indices.astype(np.int64), np.ascontiguousarray(c.data)):
                h.update(memoryview(part).cast("B"))
            continue
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(memoryview(a).cast("B"))
    return h.hexdigest()[:32]


_CODE: list = []


def code_fingerprint() -> str:
    """The package version and a hash of every module of the installed package: a part computed
    by other code (an edit, an upgrade without a version change) is not reused."""
    if not _CODE:
        from perceptron_lab.constants import __version__

        h = hashlib.blake2b(digest_size=12)
        root = Path(__file__).resolve().parents[1]
        for f in sorted(root.rglob("*.py")):
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
        _CODE.append(f"{__version__}+{h.hexdigest()}")
    return _CODE[0]


def part_key(config: dict, units: list[str], fingerprint: str, code: str) -> str:
    """The key a part must carry to be reused: its resolved config (output format included), its
    units, the data fingerprint and the code fingerprint."""
    text = json.dumps({"config": config, "units": units, "data": fingerprint, "code": code},
                      sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def encode_part(key: str, csv_text: str) -> str:
    rows = csv_text.count("\n")
    digest = hashlib.sha256(csv_text.encode("utf-8")).hexdigest()
    return f"# plab-part {PART_FORMAT} key={key} rows={rows} sha256={digest}\n{csv_text}"


def decode_part(text: str, key: str) -> tuple[str | None, str]:
    """(the CSV text of a part, "") when it is whole and carries ``key``, else (None, why not)."""
    head, sep, body = text.partition("\n")
    m = _HEADER_RE.match(head)
    if not sep or not m:
        return None, "no plab part header"
    if int(m.group(1)) != PART_FORMAT:
        return None, f"part format {m.group(1)}, not {PART_FORMAT}"
    if m.group(2) != key:
        return None, "computed for another config, output format, data set or plab code"
    if body.count("\n") != int(m.group(3)) or hashlib.sha256(body.encode("utf-8")).hexdigest() != m.group(4):
        return None, "damaged: its rows do not match their checksum"
    return body, ""


# ----------------------------------------------------------------------------- the folder


def _not_a_part(path: Path) -> UserFileError:
    return UserFileError(f"{path} has no plab part header, so plab cannot tell it from a file of yours and will "
                         "not overwrite it: move it away (delete it if it is a damaged part) and run the same "
                         "command again")


def timings_text(timings: dict, cache: dict) -> str:
    """``json.dumps(timings, indent=1)``, each entry's text taken from ``cache`` (key -> (the
    entry's compact JSON, its text)) while its compact JSON is unchanged, and stored there
    otherwise. The compact text tells apart what equality does not (1, 1.0 and True; 0.0 and
    -0.0; the order of a dict's keys), and is encoded by json's C encoder, unlike an indented one.
    In the indented layout an entry's lines are its own ``indent=1`` text, every line after the
    first indented by one more space (json escapes line breaks inside strings)."""
    if not timings or not all(isinstance(k, str) for k in timings):
        return json.dumps(timings, indent=1)
    texts = []
    for key, entry in timings.items():
        compact = json.dumps(entry)
        hit = cache.get(key)
        if hit is None or hit[0] != compact:
            body = json.dumps(entry, indent=1).replace("\n", "\n ")
            hit = cache[key] = (compact, f" {json.dumps(key)}: {body}")
        texts.append(hit[1])
    return "{\n" + ",\n".join(texts) + "\n}"


class RunFolder:
    """An output folder, locked for one ``plab run`` while the context is open."""

    def __init__(self, out: Path, warn=None):
        self.out = Path(out)
        self.parts = self.out / "parts"
        self._fh = None
        self.warn = warn or (lambda msg: print(f"plab: warning: {msg}", file=sys.stderr, flush=True))
        self._timing_texts: dict = {}   # timings.json's entry texts (:func:`timings_text`)

    def __enter__(self):
        import fcntl

        check_writable(self.out)
        path = self.out / LOCK_NAME
        try:
            fh = open(path, "a+", encoding="utf-8")
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}; choose another output folder "
                              "with --out") from None
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise PlabError(f"{self.out} is in use by another plab run ({holder}); wait for it to finish or "
                            "choose another output folder with --out") from None
        fh.seek(0)
        held = fh.read()
        if held.strip() and not re.fullmatch(r"pid \d+\n?", held):   # not plab's lock record: keep it
            fh.close()
            raise UserFileError(f"{path} was not written by plab (plab's lock file holds 'pid N'), and plab never "
                                "overwrites a file it did not write: move it away (or choose another output folder "
                                "with --out) and run the same command again")
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}\n")
        fh.flush()
        self._fh = fh
        remove_stale_temporaries(self.out)
        return self

    def __exit__(self, *exc):
        if self._fh is not None:
            self._fh.close()  # closing releases the lock
            self._fh = None
        return False

    def part_path(self, name: str) -> Path:
        return self.parts / f"{name}.csv"

    def read_part(self, name: str, key: str) -> tuple[str | None, str]:
        """(the CSV text of part ``name``, "") if it exists and belongs to this run (carries ``key``
        and is whole); (None, "") when there is no such file; (None, why not) when a file is there
        but cannot be reused."""
        path = self.part_path(name)
        if not path.exists() and not path.is_symlink():
            return None, ""
        if path.is_dir():
            raise PlabError(f"{path} is a folder, not a part plab wrote; move it away and run the command again")
        try:
            raw = path.read_bytes()
        except OSError as exc:
            return None, f"unreadable ({exc.strerror or exc})"
        if not raw.startswith(PART_HEADER) or path.is_symlink():
            # not provably plab's: recomputing would overwrite it
            raise _not_a_part(path)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None, "not UTF-8 text"
        return decode_part(text, key)

    def reusable(self, names_keys) -> dict:
        """{name: CSV text} of the parts (``(name, key)`` pairs) that exist and belong to this run.
        Files that are there but cannot be reused get one warning line per reason."""
        texts, bad = {}, {}
        for name, key in names_keys:
            text, why = self.read_part(name, key)
            if text is not None:
                texts[name] = text
            elif why:
                bad.setdefault(why, []).append(name)
        for why, names in bad.items():
            first = self.part_path(names[0])
            more = f" and {len(names) - 1} other part(s)" if len(names) > 1 else ""
            self.warn(f"{first}{more} not reused ({why}); recomputing")
        return texts

    def write_part(self, name: str, key: str, csv_text: str) -> None:
        atomic_write_text(self.part_path(name), encode_part(key, csv_text))

    def clear_parts(self) -> None:
        """Remove the parts plab wrote (``--force``): files named as parts that start with plab's
        part header. Every other file in ``parts/`` is left as it is; a file named as a part but
        without the header stops the run first (:class:`~perceptron_lab.errors.UserFileError`),
        before anything is removed, since a run may have to write there."""
        if not self.parts.is_dir():
            return
        mine = []
        for p in sorted(self.parts.glob("*.csv")):
            if not PART_NAME_RE.match(p.name):
                continue
            if not plab_wrote(p):
                raise _not_a_part(p)
            mine.append(p)
        for p in mine:
            p.unlink()

    # -- run.json, timings.json and the final outputs

    def read_info(self) -> dict | None:
        """The folder's run.json, or None when it is missing or unreadable."""
        try:
            info = json.loads((self.out / INFO_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return info if isinstance(info, dict) else None

    def check_config(self, config_hash: str, force: bool) -> None:
        """Refuse a folder whose run.json records another config (unless ``force``). An unreadable
        run.json refuses nothing: every part still has to prove it belongs to this run. A run.json
        or timings.json that plab did not write (or that is damaged past recognition) stops the run
        before any work, even with ``force``: plab would have to overwrite it."""
        for name in (INFO_NAME, TIMINGS_NAME):
            check_replaceable(self.out / name)
        old = None if force else self.read_info()
        if old is not None and old.get("config_hash") not in (None, config_hash):
            raise PlabError(f"{self.out} holds results of a different config (hash {old.get('config_hash')}, "
                            f"this one {config_hash}); pass --force to replace them or choose another --out")

    def write_info(self, info: dict) -> None:
        atomic_write_text(self.out / INFO_NAME, json.dumps(info, indent=2, default=str) + "\n")

    def read_timings(self) -> dict:
        """Seconds per unit recorded by earlier invocations ({} when none or unreadable)."""
        try:
            timings = json.loads((self.out / TIMINGS_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return timings if isinstance(timings, dict) else {}

    def write_timings(self, timings: dict) -> None:
        """Write ``timings`` as ``json.dumps(timings, indent=1)`` writes them, each entry's indented
        text encoded once (:func:`timings_text`): a run rewrites the file as its units finish, and
        json encodes indented text in Python."""
        atomic_write_text(self.out / TIMINGS_NAME, timings_text(timings, self._timing_texts) + "\n")

    def write_output(self, name: str, text: str) -> Path:
        """Write a final output (results.csv, a table) atomically; returns its path."""
        path = self.out / name
        atomic_write_text(path, text)
        return path


__all__ = ["read_back_results", "PART_NAME_RE", "PNG_SOFTWARE", "png_metadata", "plab_wrote", "check_replaceable", "damaged",
           "read_back_text", "read_back_json", "read_back_csv", "csv_rows", "TMP_SUFFIX", "atomic_write_text", "atomic_write_bytes", "write_error", "remove_stale_temporaries", "check_writable", "check_output_folder",
           "data_fingerprint", "code_fingerprint", "part_key", "encode_part", "decode_part", "RunFolder"]
