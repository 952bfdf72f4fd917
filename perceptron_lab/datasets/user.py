"""Data files of the user's own (``dataset: {path: ..., test_path: ..., label: ...}``).

Three formats, chosen by ``dataset.format`` or the file's extension:

* **CSV / TSV** (``.csv``; ``.tsv``, ``.tab``): UTF-8 text (a byte-order mark and any line ends are
  accepted), a header line naming every column, one example per line; ``dataset.label`` names the
  label column. The spaces around a field are not part of its value. A column whose every value is
  a number is a numeric feature; a column with no numeric value, or one listed in
  ``dataset.categorical``, is categorical and expanded as the UCI loaders expand nominal attributes
  (:mod:`perceptron_lab.datasets.uci`): one 0/1 indicator per value seen in the training file, in
  sorted order, named ``column=value``. A column that mixes numbers with other text is refused
  (a typo is more likely than a category), naming the first value that is not a number, and so is
  a column of numbers written with a decimal comma, digit groups, a currency or a percent sign
  ('1,5', '1,000', '1 000', '$5', '50%'), unless it is listed in ``dataset.categorical``. A header
  column without a name (a separator at the end of each line) is refused.
* **LIBSVM / SVMlight** (``.libsvm``, ``.svm``, ``.svmlight``): ``label index:value ...`` per line,
  indices increasing along a line, ``#`` comments, ``qid:`` tokens ignored. The features are read
  by scikit-learn's ``load_svmlight_file`` (training and test files together, so they share the
  feature count; an index 0 anywhere makes the files zero-based), and only the features that some
  example of either file has a nonzero value of are kept, in index order (feature ``f<index>``):
  memory follows the nonzeros, however large and gapped the indices (a feature that is 0 in every
  example adds 0 to every inner product and norm, and stays 0 under every preprocessing: the
  problem is the same). The features are then made dense, or kept as a CSR matrix where the run's
  engine reads sparse rows; the labels are read from the text. Indices above 2**31 - 1 (beyond
  scikit-learn's reader), and a training file without a single nonzero ``index:value`` pair, are
  refused; a line with no pairs is an example whose features are all 0.
* **NumPy** (``.npz``): arrays ``X`` (n x features, numbers) and ``y`` (n labels: integers, floats
  with integral values, booleans or strings), as written by ``np.savez(path, X=X, y=y)`` or
  ``np.savez_compressed``; never unpickled (object arrays are refused), and an array whose header
  declares more bytes than the file holds is refused before anything is allocated.

**What makes two labels one class.** In a CSV/TSV or LIBSVM file, the text of the label: two rows
are one class exactly when their labels are the same text. Labels never pass through a float, so
10000000000000000 and 10000000000000001 are two classes, and 'yes', 'Yes' and 'YES' are three. Two
different texts of one number ('1' and '1.0', '1' and '+1', '0' and '-0', '7' and '07', '1000' and
'1e3') stop the run: whether the file means one class or two is doubtful, and guessing would merge
or split a class. So do two texts that differ only in their Unicode encoding (equal in NFKC form:
a composed and a decomposed 'é', a full-width '１' and '1'). The same rule matches a test file's
labels to the training file's. The text rule was chosen because the text is what the user wrote
and what ``results.csv`` gives back in its ``class`` column, exactly; a numeric rule would rewrite
'+1' or '007', and a float would merge integers beyond 2**53. In a ``.npz`` file the labels are
numpy's values, compared as :func:`numpy.unique` compares them (integers of any width exactly,
floats by value with -0.0 equal to 0.0, strings exactly), with no conversion between types: the
array already says what the values are. A test file's ``y`` must be of the training file's kind
(numbers, booleans or text).

The classes are the sorted distinct labels of the training file: by exact numeric value when they
are all numbers (returned as Python ints when each is written as a plain integer, else as their
texts), else in code-point order of the texts; ``classes[1]`` is the positive class of a two-class
problem. Numeric labels must be integers (a column of fractions is a regression target or the
wrong column). A file with three or more classes may not name one ``all``: ``results.csv`` names
the rows about all classes so.

Missing values are refused, not imputed: an empty field, ``?``, ``NA``, ``N/A``, ``NaN``, ``null``
or ``None`` in a CSV/TSV file (for labels also the other texts pandas reads as missing, such as
``#N/A`` and ``<NA>``), NaN or infinity in any format, and an empty string in a ``.npz`` ``y``,
stop the run with the file, the line (row, for .npz) and the column. A test file must have the
training file's columns (in any order), labels and categories among the training file's, and
(.npz) as many features.

Every problem is one :class:`~perceptron_lab.errors.DatasetError` (exit status 3) naming the file,
the line and the fix: also a path that is a folder, a device or missing, and a file that cannot be
read.
"""

from __future__ import annotations

from typing import Any

import csv
import difflib
import io
import math
import re
import unicodedata
import zipfile
import zlib
from decimal import Decimal
from pathlib import Path

import numpy as np

from perceptron_lab.errors import DatasetError
from perceptron_lab.datasets.base import Dataset

__all__ = ["load_user_data", "MISSING_TOKENS", "MAX_DENSE_BYTES"]

#: CSV/TSV fields that mean "no value"; a run refuses them (fill or drop those rows first).
MISSING_TOKENS = frozenset({"", "?", "na", "n/a", "nan", "null", "none"})
#: A sparse (LIBSVM) file made dense beyond this many bytes is refused before it is allocated.
MAX_DENSE_BYTES = 8 * 2**30


def _fail(file, problem: str, fix: str, line: int | None = None) -> DatasetError:
    where = f"{file}, line {line}" if line is not None else str(file)
    return DatasetError(f"{where}: {problem}. Fix: {fix}.")


def load_user_data(path, fmt: str, *, label: str | None = None, categorical=(), test_path=None,
                   config: str = "the config", sparse: bool = False) -> Dataset:
    """Read a data file of the user's own (and its test file) into a dataset.

    The formats, and what makes two labels one class, are described in the module
    ``perceptron_lab.datasets.user`` and on the "Your own data" page.

    Parameters
    ----------
    path : str or os.PathLike
        The training file.
    fmt : {"csv", "tsv", "libsvm", "npz"}
        Its format (a config's ``dataset.format: auto`` is resolved from the extension before
        this call).
    label : str, optional
        The name of the label column: required for CSV/TSV, unused by the other formats.
    categorical : sequence of str, default ()
        CSV/TSV only: columns to expand into 0/1 indicators even when every value is a number.
    test_path : str or os.PathLike, optional
        A test file of the same format; None: no fixed test split (cross-validation).
    config : str, default "the config"
        How the advice of an error names the config that gave the paths.
    sparse : bool, default False
        LIBSVM only: keep the features as scipy.sparse CSR matrices (memory in proportion to the
        nonzeros, for engines that read CSR rows) instead of dense arrays; the other formats are
        dense as written.

    Returns
    -------
    Dataset
        Float64 features, int64 class indices, and ``classes`` the labels as written;
        ``meta["feature_names"]`` names the feature columns.

    Raises
    ------
    DatasetError
        For a missing or unreadable file, or content the format does not allow, in one line
        naming the file and the fix; exit status 3 on the command line.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from perceptron_lab.datasets.user import load_user_data
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "points.csv"
    >>> _ = path.write_text("x1,x2,y\\n0,1,a\\n1,0,b\\n0,2,a\\n2,0,b\\n")
    >>> ds = load_user_data(path, "csv", label="y")
    >>> ds.X_train.shape, ds.classes, ds.y_train.tolist()
    ((4, 2), ['a', 'b'], [0, 1, 0, 1])
    """
    path = Path(path)
    test = Path(test_path) if test_path is not None else None
    for key, f in (("dataset.path", path), ("dataset.test_path", test)):
        if f is None:
            continue
        if not f.is_file():
            what = ("is a folder, not a file" if f.is_dir() else "is not a regular file (a device, pipe or socket)"
                    if f.exists() else "not found")
            raise _fail(f, what, f"correct {key} in {config} (a relative path is relative to the config "
                        "file's folder; on the command line, to the current folder)")
        try:
            with open(f, "rb") as fh:
                fh.read(1)
        except OSError as exc:
            raise _fail(f, f"cannot read the file ({exc.strerror or exc})", "check its permissions (e.g. "
                        f"chmod u+r {f.name}), or copy it to a folder of your own") from None
    if fmt in ("csv", "tsv"):
        X, y, Xt, yt, classes, names = _load_table(path, test, "," if fmt == "csv" else "\t", label,
                                                   tuple(categorical))
    elif fmt == "libsvm":
        X, y, Xt, yt, classes, names = _load_libsvm(path, test, sparse)
    elif fmt == "npz":
        X, y, Xt, yt, classes = _load_npz(path, test)
        names = [f"x{j}" for j in range(X.shape[1])]
    else:
        raise DatasetError(f"{path}: unknown data format {fmt!r}. Fix: set dataset.format to csv, tsv, libsvm or npz.")
    files = [str(path.absolute())] + ([str(test.absolute())] if test is not None else [])
    return Dataset(name=path.stem, X_train=X, y_train=y, X_test=Xt, y_test=yt, classes=classes,
                   meta={"source_files": files, "user_file": True, "format": fmt, "feature_names": names})


# ----------------------------------------------------------------------------- labels

#: Label texts refused as missing: :data:`MISSING_TOKENS` and the texts pandas reads as NaN (a class
#: written so would come back from ``results.csv`` as a missing value). Compared in lower case.
LABEL_MISSING = MISSING_TOKENS | frozenset({"#n/a", "#n/a n/a", "#na", "-1.#ind", "-1.#qnan", "-nan", "1.#ind",
                                            "1.#qnan", "<na>"})
#: ``results.csv`` names the whole-problem rows ``class = all``; a class of that name would be mistaken for them.
RESERVED_LABEL = "all"
# A label written as a decimal number (ASCII digits only): the numbers whose exact value is compared.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
# The canonical text of an integer, str(int(text)) == text: such labels are kept as Python ints.
_INTEGER = re.compile(r"0|-?[1-9][0-9]*", re.ASCII)


def _shown(text: str, most: int = 60) -> str:
    """``repr`` of a label, cut short in the middle when it is long."""
    return repr(text) if len(text) <= most else repr(text[: most // 2]) + "..." + repr(text[-10:])


def _unicode_twin(texts):
    """The first two of ``texts`` (distinct) that are equal in Unicode's NFKC form, or None."""
    forms = {t: t for t in texts if t.isascii()}  # NFKC leaves ASCII text as it is
    for t in texts:
        if not t.isascii():
            other = forms.setdefault(unicodedata.normalize("NFKC", t), t)
            if other != t:
                return other, t
    return None


def _label_value(text: str):
    """The exact value (a Decimal) of a label text that is a decimal number, else None."""
    return Decimal(text) if _NUMBER.fullmatch(text) else None


def _is_nonfinite_number(text: str) -> bool:
    """'inf', '-Infinity', 'nan': a number to float() but no decimal number."""
    try:
        return not np.isfinite(float(text))
    except ValueError:
        return False


def _text_classes(file, texts, where: str, line_of, libsvm: bool = False):
    """(classes, index per row, text -> index) of label texts: the identity of a class is its text.

    Two rows are one class exactly when their label texts are equal (after the surrounding spaces
    every field loses). Two different texts of one number ('1' and '1.0', '0' and '-0', '7' and
    '07'), and two texts equal in Unicode's NFKC form (a composed and a decomposed 'é', '１' and
    '1'), are refused, not merged or split: which the file means is doubtful. Labels that are all
    numbers must be integers (a column of fractions is a regression target, or the wrong column),
    sort by their exact value (no rounding: 10000000000000001 is not 10000000000000000) and, when
    every one is written as a canonical integer, are returned as Python ints; otherwise the classes
    are the texts in code-point order.
    """
    first: dict[str, int] = {}  # text -> first row
    for i, t in enumerate(texts):
        first.setdefault(t, i)
    values = {}
    for t, i in first.items():
        v = _label_value(t)
        if v is None and _is_nonfinite_number(t):
            raise _fail(file, f"{where} holds {_shown(t)}, not a class label", "give every example a class label (drop "
                        "the examples without one)", line_of(i))
        if v is not None:
            values[t] = v
    seen: dict[Any, str] = {}
    for t, v in values.items():
        other = seen.setdefault(v, t)
        if other != t:
            a, b = sorted((other, t), key=first.__getitem__)
            raise _fail(file, f"{where} writes one number two ways: {_shown(a)} (line {line_of(first[a])}) and "
                        f"{_shown(b)} (line {line_of(first[b])}); plab takes the text of a label as its class and "
                        "will not guess whether these are one class or two",
                        f"write each class one way (e.g. {_shown(a)} everywhere), or give distinct classes distinct "
                        "numbers", line_of(first[b]))
    twin = _unicode_twin(first)
    if twin:
        a, b = sorted(twin, key=first.__getitem__)
        raise _fail(file, f"{where} writes one label two ways: {ascii(a)} (line {line_of(first[a])}) and "
                    f"{ascii(b)} (line {line_of(first[b])}), which differ only in their Unicode encoding "
                    "(composed or decomposed accents, full-width or compatibility characters)", "write each "
                    "class with the same characters (e.g. normalize the file to NFC)", line_of(first[b]))
    if len(values) == len(first):
        frac = [t for t, v in values.items() if v != v.to_integral_value()]
        if frac and libsvm:
            raise _fail(file, f"the label {_shown(frac[0])[1:-1]} is not an integer class label", "use class labels "
                        "such as -1/+1 or 1..k (LIBSVM regression files cannot be classified)", line_of(first[frac[0]]))
        if frac:
            raise _fail(file, f"{where} holds {_shown(frac[0])}, not a class label (numeric labels must be integers)",
                        "choose the class column with dataset.label, or use labels such as -1/+1 or 1..k",
                        line_of(first[frac[0]]))
        order = sorted(first, key=values.__getitem__)
    else:
        order = sorted(first)
    classes: list[Any] = list(order)
    if all(_INTEGER.fullmatch(t) for t in order):
        try:
            classes = [int(t) for t in order]
        except ValueError:  # beyond Python's digit limit for int(): keep the texts
            pass
    _check_class_count(file, where, classes, len(texts), column=not libsvm)
    index = {t: k for k, t in enumerate(order)}
    return classes, np.fromiter((index[t] for t in texts), dtype=np.int64, count=len(texts)), index


def _check_class_count(file, where, classes, n_rows, column: bool = False):
    if len(classes) < 2:
        raise _fail(file, f"{where} holds one class ({classes[0]!r}) in all {n_rows} rows; a classifier needs at "
                    "least two", ("choose the label column with dataset.label, or " if column else "") +
                    "use a file with examples of two or more classes")
    if len(classes) > 2 and RESERVED_LABEL in [str(c) for c in classes]:
        raise _fail(file, f"{where} has a class named {RESERVED_LABEL!r}, the name results.csv gives the rows "
                    "about all classes together", f"rename that class (e.g. {RESERVED_LABEL + '_'!r})")


def _test_texts(test, train, texts, index, line_of):
    """Class indices of a test file's label texts, by the training file's classes (same identity rule)."""
    out = np.empty(len(texts), dtype=np.int64)
    values = None
    for i, t in enumerate(texts):
        k = index.get(t)
        if k is None:
            if values is None:
                values = {v: s for s in index if (v := _label_value(s)) is not None}
            v = _label_value(t)
            if v is not None and v in values:
                raise _fail(test, f"label {t!r} is written {values[v]!r} in the training file {train}; plab takes "
                            "the text of a label as its class", "write each class the same way in both files",
                            line_of(i))
            raise _fail(test, f"label {t!r} does not occur in the training file {train} (its classes: "
                        f"{', '.join(map(repr, list(index)[:10]))})", "drop those rows, or add examples of that "
                        "class to the training file", line_of(i))
        out[i] = k
    return out


# ----------------------------------------------------------------------------- CSV / TSV


def _read_table(file: Path, delim: str):
    """(header, rows, file line of each row) of a CSV/TSV file."""
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise _fail(file, f"cannot read the file ({exc.strerror or exc})", "check its permissions") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise _fail(file, f"byte 0x{raw[exc.start]:02x} is not UTF-8 text", "save the file as UTF-8 text",
                    line) from None
    if "\x00" in text:
        raise _fail(file, "holds NUL bytes: not a text file", "give a CSV/TSV text file, or set dataset.format",
                    text[: text.index("\x00")].count("\n") + 1)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim, strict=True)
    kind = "comma" if delim == "," else "tab"
    header, rows, lines = None, [], []
    try:
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue  # blank line
            if header is None:
                header = [c.strip() for c in row]
                if len(header) < 2:
                    raise _fail(file, f"the header line has {len(header)} column ({header[0]!r}); a data file "
                                "needs a label column and at least one feature",
                                f"separate the columns by {kind}s (or set dataset.format)", reader.line_num)
                continue
            if len(row) != len(header):
                raise _fail(file, f"{len(row)} fields, but the header line has {len(header)} columns",
                            "give every line one value per column (no missing or extra separators)",
                            reader.line_num)
            rows.append([c.strip() for c in row])
            lines.append(reader.line_num)
    except csv.Error as exc:
        raise _fail(file, f"not valid {kind}-separated text ({exc})", "fix the quoting on that line",
                    reader.line_num) from None
    if header is None:
        raise _fail(file, "the file is empty", "give a file with a header line and one example per line")
    if "" in header:
        k = header.index("")
        trailing = " (a separator at the end of the line?)" if k == len(header) - 1 else ""
        raise _fail(file, f"column {k + 1} of the header line has no name{trailing}",
                    "give every column a name, or remove the extra separator from every line", 1)
    dup = [c for c in dict.fromkeys(header) if header.count(c) > 1]
    if dup:
        raise _fail(file, f"column {dup[0]!r} appears {header.count(dup[0])} times in the header",
                    "give every column its own name", 1)
    if not rows:
        raise _fail(file, "holds a header line but no examples", "give one example per line after the header")
    return header, rows, lines


def _column_hint(name: str, header) -> str:
    close = difflib.get_close_matches(name, header, n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}? " if close else ""
    shown = ", ".join(repr(c) for c in header[:8]) + (", ..." if len(header) > 8 else "")
    return f"{hint}the columns are {shown}"


def _numeric(col: list[str]):
    """The column as floats, or None when a value is not a number."""
    try:
        return np.asarray(col, dtype=np.float64)
    except ValueError:
        return None


# Numbers as spreadsheets in many locales write them: a decimal comma ('1,5'), digit groups ('1,000',
# '1 000', "1'000", '1.000,5'), a currency sign ('$5') or a percent sign ('50%'). float() reads none
# of them, so a column of them would otherwise become categories.
_GROUPED = (r"(?:[0-9]{1,3}(?:[ .'\u00a0\u202f\u2019][0-9]{3})+(?:,[0-9]+)?|[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?"
            r"|[0-9]+,[0-9]+|[0-9]+(?:\.[0-9]*)?)")
_DISGUISED_NUMBER = re.compile(rf"[+-]?(?:[$\u20ac\u00a3\u00a5] ?{_GROUPED}|{_GROUPED} ?[%\u20ac$\u00a3\u00a5]?)")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _check_present(file, name, col, lines, missing=MISSING_TOKENS):
    for v, ln in zip(col, lines):
        if v.lower() in missing:
            shown = "an empty field" if v == "" else f"{v!r}"
            raise _fail(file, f"column {name!r} has a missing value ({shown})",
                        "fill in the missing values or drop those rows; plab does not impute them", ln)


def _check_finite(file, name, values, lines):
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise _fail(file, f"column {name!r} is {float(values[bad[0]])!r}, not a finite number ({bad.size} such value(s))",
                    "replace the non-finite values or drop those rows", lines[bad[0]])


def _load_table(path: Path, test: Path | None, delim: str, label: str | None, categorical: tuple):
    header, rows, lines = _read_table(path, delim)
    for name, key in [(label, "dataset.label")] + [(c, "dataset.categorical") for c in categorical]:
        if name not in header:
            raise _fail(path, f"no column {name!r} (given by {key}) in the header line",
                        f"{key} must name a column: {_column_hint(name, header)}", 1)
    if test is not None:
        t_header, t_rows, t_lines = _read_table(test, delim)
        missing = [c for c in header if c not in t_header]
        extra = [c for c in t_header if c not in header]
        if missing or extra:
            diff = "; ".join(part for part in (
                "missing " + ", ".join(map(repr, missing[:5])) if missing else "",
                "not in the training file " + ", ".join(map(repr, extra[:5])) if extra else "") if part)
            raise _fail(test, f"the header line has other columns than the training file {path} ({diff})",
                        "give the test file the training file's columns", 1)
        order = [t_header.index(c) for c in header]
        t_rows = [[r[j] for j in order] for r in t_rows]
    j_label = header.index(label)
    labels = [r[j_label] for r in rows]
    _check_present(path, label, labels, lines, LABEL_MISSING)
    classes, y, index = _text_classes(path, labels, f"the label column {label!r}", lambda i: lines[i])
    yt = None
    if test is not None:
        t_labels = [r[j_label] for r in t_rows]
        _check_present(test, label, t_labels, t_lines, LABEL_MISSING)
        yt = _test_texts(test, path, t_labels, index, lambda i: t_lines[i])
    blocks, t_blocks, names = [], [], []
    for j, name in enumerate(header):
        if j == j_label:
            continue
        col = [r[j] for r in rows]
        t_col = None if test is None else [r[j] for r in t_rows]
        values = None if name in categorical else _numeric(col)
        if values is None or not np.isfinite(values).all():  # only then look for missing-value tokens
            _check_present(path, name, col, lines)
        t_values = None if t_col is None or name in categorical else _numeric(t_col)
        if t_col is not None and (t_values is None or not np.isfinite(t_values).all()):
            _check_present(test, name, t_col, t_lines)
        if values is not None:
            _check_finite(path, name, values, lines)
            blocks.append(values[:, None])
            names.append(name)
            if t_col is not None:
                if t_values is None:
                    i = next(i for i, v in enumerate(t_col) if not _is_number(v))
                    raise _fail(test, f"column {name!r} is {t_col[i]!r}, not a number (the column is numeric "
                                f"in the training file {path})", "correct the value", t_lines[i])
                _check_finite(test, name, t_values, t_lines)
                t_blocks.append(t_values[:, None])
            continue
        if name not in categorical:
            numbers = [i for i, v in enumerate(col) if _is_number(v)]
            if numbers:
                i = next(i for i, v in enumerate(col) if not _is_number(v))
                raise _fail(path, f"column {name!r} is {col[i]!r}, not a number ({len(numbers)} of its "
                            f"{len(col)} values are numbers)", "correct the value, or list the column in "
                            "dataset.categorical to read its values as categories", lines[i])
        if name not in categorical and all(_DISGUISED_NUMBER.fullmatch(v) for v in col):
            raise _fail(path, f"column {name!r} holds {col[0]!r}: numbers written with a decimal comma, digit "
                        "groups, a currency or a percent sign would be read as categories", "write the numbers "
                        "with a decimal point and nothing else, or list the column in dataset.categorical to read "
                        "its values as categories", lines[0])
        cats = sorted(set(col))
        twin = _unicode_twin(cats)
        if twin:
            a, b = sorted(twin, key=col.index)
            raise _fail(path, f"column {name!r} writes one category two ways: {ascii(a)} (line "
                        f"{lines[col.index(a)]}) and {ascii(b)}, which differ only in their Unicode encoding",
                        "write each category with the same characters (e.g. normalize the file to NFC)",
                        lines[col.index(b)])
        pos = {c: k for k, c in enumerate(cats)}
        block = np.zeros((len(col), len(cats)))
        block[np.arange(len(col)), [pos[v] for v in col]] = 1.0
        blocks.append(block)
        names.extend(f"{name}={c}" for c in cats)
        if t_col is not None:
            t_block = np.zeros((len(t_col), len(cats)))
            for i, v in enumerate(t_col):
                if v not in pos:
                    raise _fail(test, f"column {name!r} has the category {v!r}, which the training file {path} "
                                "lacks (categories are the training file's values)",
                                "drop those rows, or add an example with that value to the training file",
                                t_lines[i])
                t_block[i, pos[v]] = 1.0
            t_blocks.append(t_block)
    X = np.ascontiguousarray(np.hstack(blocks), dtype=np.float64)
    Xt = np.ascontiguousarray(np.hstack(t_blocks), dtype=np.float64) if test is not None else None
    return X, y, Xt, yt, classes, names


# ----------------------------------------------------------------------------- LIBSVM

_LIBSVM_FIX = "write each line as 'label index:value index:value ...' with increasing indices"
#: The largest feature index scikit-learn's LIBSVM reader takes (a C int).
MAX_LIBSVM_INDEX = 2**31 - 1


def _libsvm_lines(file: Path):
    """(file line, text) of each example line: not blank, not a comment."""
    with open(file, "rb") as fh:
        for n, raw in enumerate(fh, start=1):
            text = raw.split(b"#", 1)[0].strip()
            if text:
                yield n, text


def _libsvm_labels(file: Path):
    """(label texts, file line of each example) of a LIBSVM file, read from its text.

    scikit-learn's reader parses labels as float64, which merges labels beyond 2**53 and reads
    '1' and '1.0' as one number; plab takes the label's text (see :func:`_text_classes`).
    """
    texts, lines = [], []
    for n, text in _libsvm_lines(file):
        token = text.split(None, 1)[0]
        if n == 1 and token.startswith(b"\xef\xbb\xbf"):
            raise _fail(file, "starts with a byte-order mark, which LIBSVM readers take for part of the label",
                        "save the file without a BOM (e.g. as 'UTF-8', not 'UTF-8 with BOM')", n)
        try:
            label = token.decode("ascii")
        except UnicodeDecodeError:
            raise _fail(file, "not LIBSVM/SVMlight text: the label holds bytes that are not ASCII text",
                        _LIBSVM_FIX, n) from None
        if "," in label:
            raise _fail(file, f"the label {label!r} holds several labels (a multi-label file); plab classifies "
                        "examples of one class each", "give each example one label", n)
        if ":" in label:
            raise _fail(file, f"the line starts with {label!r}, not with a label", _LIBSVM_FIX, n)
        if _label_value(label) is None and not _is_nonfinite_number(label):
            raise _fail(file, f"the label {label!r} is not a number (LIBSVM labels are numbers such as -1/+1 or "
                        "1..k)", _LIBSVM_FIX, n)
        texts.append(label)
        lines.append(n)
    return texts, lines


def _libsvm_problem(file: Path):
    """(line, problem[, fix]) of the first line LIBSVM's grammar (or scikit-learn's reader) refuses, or None."""
    for n, text in _libsvm_lines(file):
        try:
            tokens = text.decode("ascii").split()
        except UnicodeDecodeError:
            return n, "holds bytes that are not ASCII text"
        last = -1
        for tok in tokens[1:]:
            idx, sep, val = tok.partition(":")
            if not sep:
                return n, f"{tok!r} is not an index:value pair"
            if idx == "qid":
                continue
            try:
                i, _ = int(idx), float(val)
            except ValueError:
                return n, f"{tok!r} is not an index:value pair of an integer and a number"
            if i < 0:
                return n, f"feature index {i} is negative"
            if i > MAX_LIBSVM_INDEX:
                return n, (f"feature index {i} is beyond the largest one scikit-learn's reader takes "
                           f"({MAX_LIBSVM_INDEX})"), "number the features from 1 (gaps are fine)"
            if i <= last:
                return n, f"feature indices must increase along a line ({i} follows {last})"
            last = i
    return None


def _load_libsvm(path: Path, test: Path | None, sparse: bool = False):
    from sklearn.datasets import load_svmlight_file, load_svmlight_files

    files = [path] + ([test] if test is not None else [])
    labels = []
    for f in files:
        texts, lines = _libsvm_labels(f)
        if not texts:
            raise _fail(f, "the file is empty (no example lines)", "give one example per line: label index:value ...")
        labels.append((texts, lines))
    try:
        if test is None:
            X, _ = load_svmlight_file(str(path), dtype=np.float64)
            parts = [X]
        else:
            X, _, Xt, _ = load_svmlight_files([str(path), str(test)], dtype=np.float64)
            parts = [X, Xt]
    except (ValueError, UnicodeDecodeError, IndexError, OverflowError) as exc:
        for f in files:
            found = _libsvm_problem(f)
            if found is not None:
                fix = found[2] if len(found) > 2 else _LIBSVM_FIX
                raise _fail(f, f"not LIBSVM/SVMlight text: {found[1]}", fix, found[0]) from None
        raise _fail(path, f"not LIBSVM/SVMlight text ({type(exc).__name__}: {' '.join(str(exc).split())})",
                    "write each line as 'label index:value ...', or set dataset.format") from None
    for f, Xs, (texts, _) in zip(files, parts, labels):
        if Xs.shape[0] != len(texts):  # the two readers must see the same examples
            raise _fail(f, f"scikit-learn's reader found {Xs.shape[0]} examples, plab's {len(texts)} label(s)",
                        _LIBSVM_FIX)
    parts, kept = _present_features(parts)
    if parts[0].nnz == 0:
        raise _fail(path, "holds labels but no features (no nonzero index:value pair on any line)", "give each "
                    "example its features as index:value pairs after the label, e.g. '+1 1:0.5 3:2'")
    names = [f"f{j + 1}" for j in kept.tolist()]
    n_features = len(kept)
    rows = sum(p.shape[0] for p in parts)
    if sparse:
        return (*_sparse_libsvm(path, test, files, parts, labels), names)
    if rows * max(n_features, 1) * 8 > MAX_DENSE_BYTES:
        raise _fail(path, f"{rows} examples x {n_features} features would take "
                    f"{rows * n_features * 8 / 2**30:.1f} GB as a dense matrix (more than "
                    f"{MAX_DENSE_BYTES / 2**30:.0f} GB)", "select fewer features or examples first, number the "
                    "features 1..n, or run a setting that reads the file sparse: the perceptron with "
                    "kernel.type linear (or poly of degree 1), or ALMA with p = 2 and the linear kernel, with "
                    "dataset.preprocess: none")
    dense = []
    for f, Xs, (_, lines) in zip(files, parts, labels):
        Xd = np.ascontiguousarray(Xs.toarray(), dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(Xd).all(axis=1))
        if bad.size:
            raise _fail(f, "a feature value is NaN or infinite", "replace the non-finite values or drop those lines",
                        lines[int(bad[0])])
        dense.append(Xd)
    return (*_with_labels(path, test, labels, dense), names)


def _present_features(parts):
    """The CSR matrices ``parts`` (a file and its test file, one feature space) with only the
    features some example has a nonzero value of, in index order, and the kept column numbers.

    Memory and time follow the nonzeros, not the largest index: a file with one index near 10**8
    gives a matrix of a few columns, not of 10**8 (nor a weight vector or a list of names as long).
    The problem does not change: a feature that is 0 in every example (stored as 0, or absent)
    adds 0 to every inner product, norm and distance, gets no weight from any update, and stays 0
    under every preprocessing. The loops over a row's stored values (the sparse path) visit the
    other values in the same order; a floating-point sum over whole vectors (a BLAS product of
    dense rows, ALMA's ``|w|^2``) may group its terms differently, as between any two layouts of
    one matrix."""
    import scipy.sparse as sp

    mats = []
    for X in parts:
        X = sp.csr_matrix(X, copy=True)
        X.eliminate_zeros()
        mats.append(X)
    kept = np.unique(np.concatenate([X.indices for X in mats])).astype(np.int64)
    out = []
    for X in mats:
        cols = np.searchsorted(kept, X.indices).astype(X.indices.dtype, copy=False)
        out.append(sp.csr_matrix((X.data, cols, X.indptr), shape=(X.shape[0], len(kept))))
    return out, kept


def _sparse_libsvm(path, test, files, parts, labels):
    """:func:`_load_libsvm`'s result with CSR features (canonical: indices sorted, no duplicates):
    the values are checked for being finite from the stored values alone."""
    from perceptron_lab.engine.kernels import as_csr

    mats = []
    for f, Xs, (_, lines) in zip(files, parts, labels):
        Xc = as_csr(Xs, np.float64)
        bad = np.flatnonzero(~np.isfinite(Xc.data))
        if bad.size:
            row = int(np.searchsorted(Xc.indptr, bad[0], side="right")) - 1
            raise _fail(f, "a feature value is NaN or infinite", "replace the non-finite values or drop those lines",
                        lines[row])
        mats.append(Xc)
    return _with_labels(path, test, labels, mats)


def _with_labels(path, test, labels, mats):
    """(X, y, X_test, y_test, classes) of a LIBSVM file and its test file, from their feature
    matrices ``mats`` (dense or CSR) and the label texts read with them."""
    (texts, lines), = labels[:1]
    classes, y, index = _text_classes(path, texts, "the label column", lambda i: lines[i], libsvm=True)
    yt = Xt = None
    if test is not None:
        t_texts, t_lines = labels[1]
        yt = _test_texts(test, path, t_texts, index, lambda i: t_lines[i])
        Xt = mats[1]
    return mats[0], y, Xt, yt, classes


# ----------------------------------------------------------------------------- npz

_NPZ_FIX = "write the file with np.savez(path, X=features, y=labels)"


def _npz_arrays(file: Path):
    with open(file, "rb") as fh:
        magic = fh.read(4)
    if magic not in (b"PK\x03\x04", b"PK\x05\x06"):  # a zip member, or the end record of an empty zip
        what = "an empty file" if not magic else ("a single .npy array" if magic.startswith(b"\x93NUM")
                                                   else "not a zip archive")
        raise _fail(file, f"cannot read it as a NumPy .npz file ({what})", _NPZ_FIX)
    try:
        _npz_check_sizes(file)
        with np.load(file, allow_pickle=False) as z:
            keys = list(z.files)
            missing = [k for k in ("X", "y") if k not in keys]
            if missing:
                raise _fail(file, f"has no array {' or '.join(missing)} (its arrays: "
                            f"{', '.join(keys) or 'none'})", _NPZ_FIX)
            X, y = z["X"], z["y"]
    except DatasetError:
        raise
    except MemoryError:
        raise _fail(file, "its arrays do not fit in memory", "select fewer examples or features first") from None
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
            raise _fail(file, "holds Python objects (a pickled array)", _NPZ_FIX + " from numeric (or string-label) "
                        "arrays, not object arrays") from None
        raise _fail(file, f"not a NumPy .npz file ({' '.join(str(exc).split())})", _NPZ_FIX) from None
    except (OSError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        raise _fail(file, f"cannot read it as a NumPy .npz file ({type(exc).__name__}: "
                    f"{' '.join(str(exc).split())})", _NPZ_FIX) from None
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise _fail(file, f"X has shape {X.shape}; it must be a matrix of n examples x features (n, features >= 1)",
                    _NPZ_FIX)
    if y.ndim != 1:
        raise _fail(file, f"y has shape {y.shape}; it must hold one label per example (shape (n,))",
                    "save y.ravel()")
    if X.shape[0] != y.shape[0]:
        raise _fail(file, f"X has {X.shape[0]} rows but y has {y.shape[0]} labels", "give one label per row of X")
    if X.dtype == bool:
        X = X.astype(np.float64)
    if not (np.issubdtype(X.dtype, np.integer) or np.issubdtype(X.dtype, np.floating)):
        raise _fail(file, f"X holds {X.dtype} values, not real numbers", "save X as a float or integer array")
    X = np.ascontiguousarray(X, dtype=np.float64)
    bad = np.argwhere(~np.isfinite(X))
    if bad.size:
        i, j = (int(v) for v in bad[0])
        raise _fail(file, f"X[{i}, {j}] (row {i + 1}) is {float(X[i, j])!r}, not a finite number ({len(bad)} such "
                    "value(s))", "replace or drop the non-finite values; plab does not impute them")
    return X, _array_labels(file, y)


def _npz_check_sizes(file: Path) -> None:
    """Refuse an array whose header declares more bytes than its member holds, before numpy
    allocates them (a damaged or crafted header could ask for terabytes)."""
    with zipfile.ZipFile(file) as zf:
        for info in zf.infolist():
            if info.filename not in ("X.npy", "y.npy"):
                continue
            with zf.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                shape, _, dtype = (np.lib.format.read_array_header_1_0(fh) if version == (1, 0)
                                   else np.lib.format.read_array_header_2_0(fh))
            if dtype.hasobject:
                continue  # np.load refuses it without unpickling (allow_pickle=False)
            need = math.prod(shape) * dtype.itemsize
            if need > info.file_size:
                raise _fail(file, f"{info.filename[0]} declares shape {shape} ({need} bytes) but holds "
                            f"{info.file_size} bytes: the file is damaged or cut short", _NPZ_FIX)


def _array_labels(file: Path, y: np.ndarray):
    """(labels as Python values, their kind: 'number', 'bool' or 'text') of an array ``y``.

    The identity of a class is numpy's (:func:`numpy.unique` on the array as stored): integers of any
    width exactly, floats by value (integral values only; -0.0 is 0.0; converted to Python ints,
    which is exact), booleans, and strings exactly (bytes decoded as UTF-8). Empty strings and the
    texts read as missing values are refused.
    """
    kind = y.dtype.kind
    if kind == "f":
        bad = np.flatnonzero(~np.isfinite(y) | (y != np.round(y)))
        if bad.size:
            raise _fail(file, f"y[{bad[0]}] is {float(y[bad[0]])!r}, not a class label", "use integer or string "
                        "class labels")
        return [int(v) for v in y.tolist()], "number"
    if kind in "iu":
        return y.tolist(), "number"
    if kind == "b":
        return y.tolist(), "bool"
    if kind not in "US":
        raise _fail(file, f"y holds {y.dtype} values", "use integer or string class labels")
    labels = y.tolist()
    if kind == "S":
        for i, v in enumerate(labels):
            try:
                labels[i] = v.decode("utf-8")
            except UnicodeDecodeError:
                raise _fail(file, f"y[{i}] is {v!r}, not UTF-8 text", "save the labels as a str array (dtype "
                            "'U'), or as integers") from None
    for i, v in enumerate(labels):
        if v.strip().lower() in LABEL_MISSING:
            shown = "an empty string" if v == "" else repr(v)
            raise _fail(file, f"y[{i}] (row {i + 1}) is {shown}, a missing label", "give every row a class label "
                        "(drop the rows without one); plab does not impute them")
    return labels, "text"


def _value_classes(file, labels, where):
    """(classes, index per row, label -> index) of Python label values: sorted, distinct by ``==``."""
    classes = sorted(set(labels))
    _check_class_count(file, where, classes, len(labels))
    index = {c: k for k, c in enumerate(classes)}
    return classes, np.fromiter((index[v] for v in labels), dtype=np.int64, count=len(labels)), index


def _load_npz(path: Path, test: Path | None):
    X, (labels, kind) = _npz_arrays(path)
    classes, y, index = _value_classes(path, labels, "y")
    Xt = yt = None
    if test is not None:
        Xt, (t_labels, t_kind) = _npz_arrays(test)
        if Xt.shape[1] != X.shape[1]:
            raise _fail(test, f"X has {Xt.shape[1]} features, but the training file {path} has {X.shape[1]}",
                        "give both files the same features")
        if t_kind != kind:
            raise _fail(test, f"y holds {t_kind} labels, but the training file {path} holds {kind} labels",
                        "save both files' y with one type")
        yt = np.empty(len(t_labels), dtype=np.int64)
        for i, v in enumerate(t_labels):
            if v not in index:
                raise _fail(test, f"y[{i}] (row {i + 1}) is {v!r}, a label that does not occur in the training "
                            f"file {path} (its classes: {', '.join(map(repr, classes[:10]))})", "drop those rows, "
                            "or add examples of that class to the training file")
            yt[i] = index[v]
    return X, y, Xt, yt, classes
