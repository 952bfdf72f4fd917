"""Loaders for the two-class UCI data sets of Khardon & Wachman (2007), from the raw UCI files.

Khardon & Wachman (JMLR 8, 2007, section 3.1): "any nominal attribute in these data sets was
translated to a set of binary attributes each being an indicator function for one of the values".
Their Table 1 lists the number of features after that transformation.  The rules below reproduce
every count in Table 1 exactly:

=========================  ========  =======  ================================================
name                       examples  features how the features are formed
=========================  ========  =======  ================================================
adult                      32561     105      6 continuous + 99 indicators of the 8 nominal
                                              attributes (all values seen in adult.data)
breast-cancer-wisconsin    699       9        sample code number dropped
bupa                       345       6        the "selector" column is the class
wdbc                       569       30       ID dropped
crx                        690       46       6 continuous + 40 indicators (values seen in
                                              crx.data; A4 value "t" never occurs)
ionosphere                 351       34       all columns kept (column 2 is constant 0)
wpbc                       198       33       ID dropped; "time" kept (see below)
sonar                      208       60       all columns kept
promoters                  106       228      not in Table 1; 57 positions x {a, c, g, t};
                                              334 with the instance name's 106 indicators
=========================  ========  =======  ================================================

Rules, common to all sets:

* Rows are kept in file order; no row is dropped (Table 1's example counts include the rows with
  missing values, e.g. 699 for breast-cancer-wisconsin, which has 16 missing values).
* Nominal attributes: one 0/1 indicator per value that occurs in the (training) file, in the order
  the UCI ``.names`` file lists the values.  A value the ``.names`` file does not list is reported
  as a malformed row.  Values listed there but absent from the file get no indicator; this is what
  gives 46 and not 47 features for crx.  A missing nominal value (``?``) sets all indicators of
  that attribute to 0, so it contributes nothing to a linear score.  Making ``?`` an indicator of
  its own would give adult 108 and crx 51 features, which does not match the paper.
* Missing numeric values (``?``: 16 in breast-cancer-wisconsin "bare nuclei", 4 in wpbc "lymph node
  status", 12 in crx A2 and 13 in crx A14) are replaced by the mean of the observed values of that
  column in the same file.  The paper does not say how it treated them; any imputation keeps its
  counts.  The mean uses the whole file, so it sees the rows of later cross-validation test folds;
  ``meta["missing_rows"]`` lists the affected rows so a fold-wise treatment can redo it.
* Continuous values are left in their raw units.  Scaling is a separate preprocessing step.
* Two classes.  ``classes[1]`` is the positive class (label +1 for the perceptron):
  adult ``>50K``, breast-cancer-wisconsin ``4`` (malignant), bupa selector ``2``, wdbc ``M``,
  crx ``+``, ionosphere ``g``, wpbc ``R`` (recurrent), sonar ``M`` (mine), promoters ``+``.
  The UCI notes say the bupa selector was meant as a train/test split, not as a diagnosis; it is
  used as the class here, as Khardon & Wachman (baseline 58% = 200/345) and most other papers do.

Per-set notes:

* adult: the 6 continuous attributes (age, fnlwgt, education-num, capital-gain, capital-loss,
  hours-per-week) are all kept; 6 + 8 + 16 + 7 + 14 + 6 + 5 + 2 + 41 = 105.  Khardon & Wachman use
  the 32561 rows of adult.data.  adult.test (16281 rows, first line ``|1x3 Cross validator``,
  labels ending in ``.``) is returned as ``X_test``/``y_test``, encoded with the indicators found
  in adult.data; a nominal value there that adult.data lacks is reported as an error (none occurs).
* wpbc: the 35 columns are ID, outcome, time, 30 cell-nucleus features, tumour size and lymph node
  status.  33 features means time + 30 + tumour size + lymph node status.  Note that "time" is the
  recurrence time for recurrent cases and the disease-free time otherwise, so it carries
  information about the label; it is kept because the paper's count includes it.
* promoters: each of the 57 nucleotides (positions -50..-1, +1..+7) is expanded to 4 indicators.
  The instance name (second column; UCI's promoters.names lists it as attribute 2 of 59, "The
  instance name", and says "No numeric features used") is dropped by default
  (``instance_name="drop"``); ``instance_name="nominal"`` expands it like any other nominal
  attribute, one indicator per name in file order, placed where the attribute stands (before the
  sequence). Every one of the 106 names is different, so each example gets an indicator of its own:
  on a training example it adds 1 to K(x, x) and nothing to K(x, x') for another example, and a
  test example's indicator is 0 in every weight vector trained without it. Only promoters has such
  a name (:data:`perceptron_lab.constants.DATASETS_WITH_INSTANCE_NAME`); the numeric identifiers
  of breast-cancer-wisconsin, wdbc and wpbc are always dropped, as Table 1's feature counts show.

``Dataset.meta`` holds ``source_files`` (paths read), ``feature_names``, ``n_features_paper`` and
``n_examples_paper`` (Table 1 values, ``None`` for promoters), ``positive_class``,
``missing_counts`` (``?`` count per original attribute), ``missing_rows`` (row indices per imputed
feature), ``imputed_values`` (the value used per imputed feature) and ``test_split`` (a note, adult
only).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from perceptron_lab import constants as C
from perceptron_lab.datasets.base import Dataset
from perceptron_lab.errors import DatasetError, UsageError

__all__ = ["UCI_FILES", "UCI_NAMES", "load_uci"]

MISSING = "?"

# Column kinds. NAME: an identifier that is not a number (promoters' instance name), dropped or
# expanded as a nominal attribute (``instance_name``); ID: a numeric identifier, always dropped.
ID, NAME, NUM, NOM, LABEL = "id", "name", "num", "nom", "label"


@dataclass(frozen=True)
class _Spec:
    files: tuple[str, ...]  # files[0] is the data; files[1], when present, the fixed test split
    columns: tuple[tuple[str, str], ...]  # (attribute name, kind) in file order
    classes: tuple[str, str]  # (negative, positive) as spelled in the file
    n_features_paper: int | None
    n_examples_paper: int | None
    domains: dict[str, tuple[str, ...]] = field(default_factory=dict)  # nominal value lists
    fixed_sequence: bool = False  # promoters: "class,name,sequence"
    label_suffix: str = ""  # adult.test writes "<=50K." and ">50K."


def _cols(kind: str, names) -> list[tuple[str, str]]:
    return [(n, kind) for n in names]


_NUCLEUS = [
    "radius", "texture", "perimeter", "area", "smoothness",
    "compactness", "concavity", "concave_points", "symmetry", "fractal_dimension",
]
_NUCLEUS_30 = [f"{f}_{stat}" for stat in ("mean", "se", "worst") for f in _NUCLEUS]

_PROMOTER_POSITIONS = [f"p{i}" for i in range(-50, 0)] + [f"p+{i}" for i in range(1, 8)]

_SPECS: dict[str, _Spec] = {
    "adult": _Spec(
        files=("adult.data", "adult.test"),
        columns=(
            ("age", NUM), ("workclass", NOM), ("fnlwgt", NUM), ("education", NOM),
            ("education-num", NUM), ("marital-status", NOM), ("occupation", NOM),
            ("relationship", NOM), ("race", NOM), ("sex", NOM), ("capital-gain", NUM),
            ("capital-loss", NUM), ("hours-per-week", NUM), ("native-country", NOM),
            ("income", LABEL),
        ),
        classes=("<=50K", ">50K"),
        n_features_paper=105,
        n_examples_paper=32561,
        label_suffix=".",
        domains={  # as listed in adult.names
            "workclass": ("Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov",
                          "Local-gov", "State-gov", "Without-pay", "Never-worked"),
            "education": ("Bachelors", "Some-college", "11th", "HS-grad", "Prof-school",
                          "Assoc-acdm", "Assoc-voc", "9th", "7th-8th", "12th", "Masters",
                          "1st-4th", "10th", "Doctorate", "5th-6th", "Preschool"),
            "marital-status": ("Married-civ-spouse", "Divorced", "Never-married", "Separated",
                               "Widowed", "Married-spouse-absent", "Married-AF-spouse"),
            "occupation": ("Tech-support", "Craft-repair", "Other-service", "Sales",
                           "Exec-managerial", "Prof-specialty", "Handlers-cleaners",
                           "Machine-op-inspct", "Adm-clerical", "Farming-fishing",
                           "Transport-moving", "Priv-house-serv", "Protective-serv",
                           "Armed-Forces"),
            "relationship": ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative",
                             "Unmarried"),
            "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
            "sex": ("Female", "Male"),
            "native-country": (
                "United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
                "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China",
                "Cuba", "Iran", "Honduras", "Philippines", "Italy", "Poland", "Jamaica",
                "Vietnam", "Mexico", "Portugal", "Ireland", "France", "Dominican-Republic",
                "Laos", "Ecuador", "Taiwan", "Haiti", "Columbia", "Hungary", "Guatemala",
                "Nicaragua", "Scotland", "Thailand", "Yugoslavia", "El-Salvador",
                "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands",
            ),
        },
    ),
    "breast-cancer-wisconsin": _Spec(
        files=("breast-cancer-wisconsin.data",),
        columns=(
            ("sample_code_number", ID),
            *_cols(NUM, ["clump_thickness", "uniformity_of_cell_size",
                         "uniformity_of_cell_shape", "marginal_adhesion",
                         "single_epithelial_cell_size", "bare_nuclei", "bland_chromatin",
                         "normal_nucleoli", "mitoses"]),
            ("class", LABEL),
        ),
        classes=("2", "4"),
        n_features_paper=9,
        n_examples_paper=699,
    ),
    "bupa": _Spec(
        files=("bupa.data",),
        columns=(
            *_cols(NUM, ["mcv", "alkphos", "sgpt", "sgot", "gammagt", "drinks"]),
            ("selector", LABEL),
        ),
        classes=("1", "2"),
        n_features_paper=6,
        n_examples_paper=345,
    ),
    "wdbc": _Spec(
        files=("wdbc.data",),
        columns=(("id", ID), ("diagnosis", LABEL), *_cols(NUM, _NUCLEUS_30)),
        classes=("B", "M"),
        n_features_paper=30,
        n_examples_paper=569,
    ),
    "crx": _Spec(
        files=("crx.data",),
        columns=(
            ("A1", NOM), ("A2", NUM), ("A3", NUM), ("A4", NOM), ("A5", NOM), ("A6", NOM),
            ("A7", NOM), ("A8", NUM), ("A9", NOM), ("A10", NOM), ("A11", NUM), ("A12", NOM),
            ("A13", NOM), ("A14", NUM), ("A15", NUM), ("A16", LABEL),
        ),
        classes=("-", "+"),
        n_features_paper=46,
        n_examples_paper=690,
        domains={  # as listed in crx.names
            "A1": ("b", "a"),
            "A4": ("u", "y", "l", "t"),
            "A5": ("g", "p", "gg"),
            "A6": ("c", "d", "cc", "i", "j", "k", "m", "r", "q", "w", "x", "e", "aa", "ff"),
            "A7": ("v", "h", "bb", "j", "n", "z", "dd", "ff", "o"),
            "A9": ("t", "f"),
            "A10": ("t", "f"),
            "A12": ("t", "f"),
            "A13": ("g", "p", "s"),
        },
    ),
    "ionosphere": _Spec(
        files=("ionosphere.data",),
        columns=(*_cols(NUM, [f"a{i:02d}" for i in range(1, 35)]), ("class", LABEL)),
        classes=("b", "g"),
        n_features_paper=34,
        n_examples_paper=351,
    ),
    "wpbc": _Spec(
        files=("wpbc.data",),
        columns=(
            ("id", ID), ("outcome", LABEL), ("time", NUM), *_cols(NUM, _NUCLEUS_30),
            ("tumor_size", NUM), ("lymph_node_status", NUM),
        ),
        classes=("N", "R"),
        n_features_paper=33,
        n_examples_paper=198,
    ),
    "sonar": _Spec(
        files=("sonar.all-data",),
        columns=(*_cols(NUM, [f"band{i:02d}" for i in range(1, 61)]), ("class", LABEL)),
        classes=("R", "M"),
        n_features_paper=60,
        n_examples_paper=208,
    ),
    "promoters": _Spec(
        files=("promoters.data",),
        columns=(("class", LABEL), ("instance", NAME), *_cols(NOM, _PROMOTER_POSITIONS)),
        classes=("-", "+"),
        n_features_paper=None,
        n_examples_paper=None,
        domains={p: ("a", "c", "g", "t") for p in _PROMOTER_POSITIONS},
        fixed_sequence=True,
    ),
}

#: The UCI data sets of Khardon & Wachman (2007), in the order of their Table 1 (plus promoters).
UCI_NAMES: tuple[str, ...] = tuple(_SPECS)

#: The raw files each data set needs, as named in the UCI repository.
UCI_FILES: dict[str, list[str]] = {name: list(spec.files) for name, spec in _SPECS.items()}


class _RowError(Exception):
    """A problem with one row; the caller adds the file name and line number."""


def _split_fields(spec: _Spec, line: str) -> list[str]:
    n_expected = len(spec.columns)
    if spec.fixed_sequence:
        parts = line.split(",")
        if len(parts) != 3:
            raise _RowError(
                f"expected 3 comma-separated fields (class, name, sequence), found {len(parts)}"
            )
        seq = parts[2].strip()
        n_positions = n_expected - 2
        if len(seq) != n_positions:
            raise _RowError(f"sequence has {len(seq)} nucleotides, expected {n_positions}")
        return [parts[0].strip(), parts[1].strip(), *seq.lower()]
    fields = [f.strip() for f in line.split(",")]
    if len(fields) != n_expected:
        raise _RowError(f"expected {n_expected} comma-separated fields, found {len(fields)}")
    return fields


def _require_file(path: Path, spec: _Spec, name: str) -> None:
    if not path.is_file():
        raise DatasetError(
            f"{name}: data file {path} not found. Run `plab data fetch {name}`, or set PLAB_DATA "
            f"(or pass --data-dir) to a data directory whose uci/ folder holds "
            f"{', '.join(spec.files)}."
        )


def _read_rows(path: Path, spec: _Spec, name: str, label_suffix: str = ""):
    """Parse one raw file into (fields per row, line number per row, label index per row)."""
    _require_file(path, spec, name)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{name}: cannot read {path}: {exc.strerror or exc}") from exc

    label_col = next(j for j, (_, kind) in enumerate(spec.columns) if kind == LABEL)
    class_index = {c + label_suffix: i for i, c in enumerate(spec.classes)}
    rows, lines, labels = [], [], []
    for lineno, raw_line in enumerate(raw.split(b"\n"), start=1):
        try:
            line = raw_line.decode("ascii").rstrip("\r")
        except UnicodeDecodeError:
            raise DatasetError(
                f"{name}: {path}, line {lineno}: non-ASCII bytes; the file is corrupt. "
                f"Re-fetch it with `plab data fetch {name}`."
            ) from None
        if not line.strip() or line.startswith("|"):  # blank line or UCI comment line
            continue
        try:
            fields = _split_fields(spec, line)
            label = fields[label_col]
            if label not in class_index:
                expected = " or ".join(repr(c) for c in class_index)
                raise _RowError(f"class label {label!r} is not {expected}")
        except _RowError as exc:
            raise DatasetError(
                f"{name}: {path}, line {lineno}: malformed row: {exc}. "
                f"Re-fetch the file with `plab data fetch {name}`."
            ) from None
        rows.append(fields)
        lines.append(lineno)
        labels.append(class_index[label])
    if not rows:
        raise DatasetError(
            f"{name}: {path} holds no data rows. Re-fetch it with `plab data fetch {name}`."
        )
    return rows, lines, np.asarray(labels, dtype=np.int64)


class _Encoder:
    """Maps parsed rows to the numeric feature matrix; fitted on the training file."""

    def __init__(self, spec: _Spec, name: str):
        self.spec = spec
        self.name = name
        self.values: dict[int, list[str]] = {}  # nominal column -> values with an indicator

    def _malformed(self, path: Path, lineno: int, msg: str) -> DatasetError:
        return DatasetError(
            f"{self.name}: {path}, line {lineno}: malformed row: {msg}. "
            f"Re-fetch the file with `plab data fetch {self.name}`."
        )

    def fit(self, rows, lines, path: Path) -> None:
        for j, (attr, kind) in enumerate(self.spec.columns):
            if kind != NOM:
                continue
            domain = self.spec.domains[attr]
            seen = set()
            for fields, lineno in zip(rows, lines):
                v = fields[j]
                if v == MISSING:
                    continue
                if v not in domain:
                    raise self._malformed(
                        path, lineno, f"attribute {attr!r} has unknown value {v!r}"
                    )
                seen.add(v)
            self.values[j] = [v for v in domain if v in seen]

    def feature_names(self) -> list[str]:
        names = []
        for j, (attr, kind) in enumerate(self.spec.columns):
            if kind == NUM:
                names.append(attr)
            elif kind == NOM:
                names.extend(f"{attr}={v}" for v in self.values[j])
        return names

    def transform(self, rows, lines, path: Path):
        """Return (X, missing_counts, missing_rows) with numeric '?' still NaN."""
        n = len(rows)
        blocks = []
        missing_counts: dict[str, int] = {}
        missing_rows: dict[str, np.ndarray] = {}
        for j, (attr, kind) in enumerate(self.spec.columns):
            if kind == NUM:
                col = np.empty(n, dtype=np.float64)
                for i, (fields, lineno) in enumerate(zip(rows, lines)):
                    v = fields[j]
                    if v == MISSING:
                        col[i] = np.nan
                        continue
                    try:
                        x = float(v)
                    except ValueError:
                        x = math.nan
                        ok = False
                    else:
                        ok = math.isfinite(x)
                    if not ok:
                        raise self._malformed(
                            path, lineno, f"attribute {attr!r}: {v!r} is not a finite number"
                        )
                    col[i] = x
                miss = np.flatnonzero(np.isnan(col))
                blocks.append(col[:, None])
            elif kind == NOM:
                values = self.values[j]
                index = {v: k for k, v in enumerate(values)}
                block = np.zeros((n, len(values)), dtype=np.float64)
                miss_list = []
                for i, (fields, lineno) in enumerate(zip(rows, lines)):
                    v = fields[j]
                    if v == MISSING:
                        miss_list.append(i)
                    elif v in index:
                        block[i, index[v]] = 1.0
                    else:
                        where = "the training file" if v in self.spec.domains[attr] else (
                            "the UCI attribute description"
                        )
                        raise self._malformed(
                            path, lineno, f"attribute {attr!r} has value {v!r}, unknown to {where}"
                        )
                miss = np.asarray(miss_list, dtype=np.int64)
                blocks.append(block)
            else:
                continue
            if miss.size:
                missing_counts[attr] = int(miss.size)
                if kind == NUM:
                    missing_rows[attr] = miss
        X = np.ascontiguousarray(np.hstack(blocks), dtype=np.float64)
        return X, missing_counts, missing_rows


def has_instance_name(name: str) -> bool:
    """Whether UCI data set ``name`` lists a non-numeric instance name among its attributes."""
    return name in _SPECS and any(kind == NAME for _, kind in _SPECS[name].columns)


def load_uci(name: str, folder: Path, instance_name: str = "drop") -> Dataset:
    """Load UCI data set ``name`` from the raw files in ``folder`` (e.g. ``<data dir>/uci``).

    The feature construction, missing-value treatment and class order are described in the
    module docstring. ``instance_name`` (one of :data:`perceptron_lab.constants.INSTANCE_NAME_READINGS`):
    ``drop`` leaves promoters' instance name out, ``nominal`` expands it into one indicator per
    name. Raises :class:`DatasetError` when a file is missing or a row is malformed, and
    :class:`UsageError` for ``instance_name="nominal"`` with a data set that has no instance name.
    """
    if name not in _SPECS:
        raise DatasetError(
            f"unknown UCI data set {name!r}; known: {', '.join(UCI_NAMES)}"
        )
    if instance_name not in C.INSTANCE_NAME_READINGS:
        raise UsageError(f"instance_name must be one of {', '.join(C.INSTANCE_NAME_READINGS)}, "
                         f"got {instance_name!r}")
    if instance_name == "nominal" and not has_instance_name(name):
        raise UsageError(f"instance_name='nominal': {name} has no instance name among its attributes "
                         f"(only {', '.join(n for n in UCI_NAMES if has_instance_name(n))} has one); "
                         "use instance_name='drop'")
    spec = _SPECS[name]
    folder = Path(folder)
    paths = [folder / f for f in spec.files]
    for path in paths:  # report a missing file before spending time on parsing
        _require_file(path, spec, name)

    rows, lines, y_train = _read_rows(paths[0], spec, name)
    if instance_name == "nominal":
        # the name becomes a nominal attribute whose values are the names in the file, in file order
        j = next(j for j, (_, kind) in enumerate(spec.columns) if kind == NAME)
        attr = spec.columns[j][0]
        spec = dataclasses.replace(
            spec, columns=tuple((a, NOM if k == NAME else k) for a, k in spec.columns),
            domains={**spec.domains, attr: tuple(dict.fromkeys(f[j] for f in rows if f[j] != MISSING))})
    enc = _Encoder(spec, name)
    enc.fit(rows, lines, paths[0])
    X_train, missing_counts, missing_rows = enc.transform(rows, lines, paths[0])

    # Mean imputation of missing numeric values, column by column, from the training file.
    feature_names = enc.feature_names()
    imputed: dict[str, float] = {}
    for attr, idx in missing_rows.items():
        k = feature_names.index(attr)
        observed = np.delete(X_train[:, k], idx)
        if observed.size == 0:
            raise DatasetError(f"{name}: {paths[0]}: attribute {attr!r} has no observed values")
        imputed[attr] = float(observed.mean())
        X_train[idx, k] = imputed[attr]

    X_test = y_test = None
    meta_test = {}
    if len(paths) > 1:
        t_rows, t_lines, y_test = _read_rows(paths[1], spec, name, label_suffix=spec.label_suffix)
        X_test, t_counts, t_missing = enc.transform(t_rows, t_lines, paths[1])
        for attr, idx in t_missing.items():  # numeric test gaps get the training mean
            k = feature_names.index(attr)
            value = imputed.get(attr)
            if value is None:
                value = float(X_train[:, k].mean())
            X_test[idx, k] = value
        meta_test = {
            "test_split": (
                f"{spec.files[1]} ({len(t_rows)} rows), encoded with the indicators of "
                f"{spec.files[0]}; Khardon & Wachman (2007) use {spec.files[0]} only"
            ),
            "missing_counts_test": t_counts,
        }

    meta = {
        "source_files": [str(p) for p in paths],
        "feature_names": feature_names,
        "n_features_paper": spec.n_features_paper,
        "n_examples_paper": spec.n_examples_paper,
        "positive_class": spec.classes[1],
        "instance_name": instance_name if has_instance_name(name) else None,
        "missing_counts": missing_counts,
        "missing_rows": missing_rows,
        "imputed_values": imputed,
        **meta_test,
    }
    return Dataset(
        name=name,
        X_train=X_train,
        y_train=y_train,
        X_test=X_test,
        y_test=y_test,
        classes=list(spec.classes),
        meta=meta,
    )
