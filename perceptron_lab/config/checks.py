"""The checks of config values: each turns a YAML value into a validated one or a one-line
problem (the schema table that uses them is :mod:`perceptron_lab.config.schema`)."""

from __future__ import annotations

import difflib
import functools
import math
import numbers
import os
import re
import reprlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Iterable



def _plain(value: Any) -> Any:
    """Tuples to lists and mappings to dicts, recursively (YAML- and JSON-dumpable)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = 80
_repr.maxlist = _repr.maxtuple = _repr.maxdict = 6


def _show(value: Any) -> str:
    return "null" if value is None else _repr.repr(value)


def _render_path(path: tuple) -> str:
    out = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        else:
            text = part if isinstance(part, str) and part and part.isprintable() and " " not in part \
                else repr(part)
            out += ("." if out else "") + text
    return out or "top level"


# =========================================================================== checks
#
# A check turns a given value into the validated value, or reports why it cannot. Simple checks
# implement ``convert`` (raise _Mismatch); checks over containers implement ``validate`` and
# report problems at the paths of the offending items.


class _Invalid:
    def __repr__(self) -> str:
        return "<invalid>"


INVALID = _Invalid()  # a value that failed validation; combination rules skip it
_REQUIRED = object()  # Param.default: the key must be given
_FILE_STEM = object()  # Param.default: the stem of the config file


class _Mismatch(Exception):
    def __init__(self, wrong_type: bool = False, hint: str | None = None, nonfinite: bool = False):
        super().__init__()
        self.wrong_type, self.hint, self.nonfinite = wrong_type, hint, nonfinite


#: Names people use for a value that plab spells otherwise (offered only when the value is an option).
_VALUE_ALIASES = {"rbf": "gaussian", "polynomial": "poly", "voted": "vote", "average": "avg", "averaged": "avg",
                  "classical": "last", "longest_survivor": "longest", "float": "float64", "double": "float64",
                  "single": "float32", "cv": "kfold", "k-fold": "kfold", "crossval": "kfold"}


def _did_you_mean(word: Any, options: Iterable[object], cutoff: float = 0.6) -> str | None:
    """A 'did you mean' hint; dotted paths share long prefixes, so pass a higher ``cutoff``."""
    if not isinstance(word, str):
        return None
    opts = [o for o in options if isinstance(o, str)]
    low = word.strip().lower()
    # the same word in another case, a spelled-out form ('polynomial' -> 'poly'), an abbreviation
    # ('gauss' -> 'gaussian'), then the closest spelling
    close = ([o for o in opts if o.lower() == low]
             or [o for o in opts if _VALUE_ALIASES.get(low) == o]
             or sorted((o for o in opts if len(o) >= 3 and len(low) >= 3
                        and (low.startswith(o.lower()) or o.lower().startswith(low))), key=len, reverse=True)
             or difflib.get_close_matches(word, opts, n=1, cutoff=cutoff))
    return f"did you mean {close[0]!r}?" if close else None


_PATH_CUTOFF = 0.8  # dotted paths share long prefixes; ask for a closer match


def _fmt_num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


class _Check:
    noun = "a value"

    def expectation(self, m: _Mismatch | None = None) -> str:
        return f"must be {self.noun}"

    def convert(self, value: Any) -> Any:
        raise NotImplementedError

    def validate(self, value: Any, path: tuple, v) -> Any:
        try:
            return self.convert(value)
        except _Mismatch as m:
            v.expected(path, self.expectation(m), value, wrong_type=m.wrong_type, hint=m.hint)
            return INVALID


#: A number in exponent notation that YAML 1.1 (which PyYAML reads) takes for a string, as it wants
#: a dot in the mantissa and a sign in the exponent (``1e-9``, ``5E3``, ``1.0e9``); YAML 1.2 and
#: Python read them as floats.
_YAML11_FLOAT = re.compile(r"^([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))[eE]([-+]?)([0-9]+)$")


def _yaml11_hint(text: str) -> str:
    """The fix for a number YAML read as text: the same number with a dot in its mantissa and a
    sign in its exponent (``1e-9`` -> ``1.0e-9``, ``5E3`` -> ``5.0e+3``)."""
    match = _YAML11_FLOAT.match(text)
    assert match is not None, text   # the callers pass only text that matched
    mant, sign, digits = match.groups()
    if "." not in mant:
        mant += ".0"
    elif mant.endswith("."):
        mant += "0"
    return f"YAML reads {text} as text; write {mant}e{sign or '+'}{digits} for the number"


#: The largest integer a setting may have: the engine, NumPy and the run store count in signed
#: 64-bit integers (seeds, sizes, counts, bounds), so a larger one would overflow or wrap there.
INT64_MAX = 2**63 - 1
_BEYOND_INT64 = f"more than {INT64_MAX} = 2**63 - 1, the largest integer plab computes with"


class _Number(_Check):
    """A real number (never a bool) in a range; finite unless an alternative allows inf. An integer
    is at most :data:`INT64_MAX` (a larger one is refused with its own hint, whatever the range)."""

    def __init__(self, integer=False, lo=None, lo_open=False, hi=None, hi_open=False):
        self.integer, self.lo, self.lo_open, self.hi, self.hi_open = integer, lo, lo_open, hi, hi_open
        self.noun = self._noun(finite=False)

    def _noun(self, finite: bool) -> str:
        if self.lo == 0 and self.lo_open and self.hi is None:
            return "a positive integer" if self.integer else \
                ("a finite positive number" if finite else "a positive number")
        kind = "an integer" if self.integer else ("a finite number" if finite else "a number")
        bounds = []
        if self.lo is not None:
            bounds.append(f"{'>' if self.lo_open else '>='} {_fmt_num(self.lo)}")
        if self.hi is not None:
            bounds.append(f"{'<' if self.hi_open else '<='} {_fmt_num(self.hi)}")
        return f"{kind} {' and '.join(bounds)}" if bounds else kind

    def expectation(self, m=None) -> str:
        return f"must be {self._noun(finite=bool(m and m.nonfinite))}"

    def convert(self, value):
        if isinstance(value, str) and _YAML11_FLOAT.match(value.strip()):
            raise _Mismatch(wrong_type=True, hint=_yaml11_hint(value.strip()))
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise _Mismatch(wrong_type=True)
        x: float
        if self.integer:
            if isinstance(value, numbers.Integral):
                x = int(value)
            else:
                try:
                    f = float(value)
                except OverflowError:
                    raise _Mismatch() from None
                if not f.is_integer():
                    raise _Mismatch()
                x = int(f)
            if abs(x) > INT64_MAX:
                raise _Mismatch(hint=_BEYOND_INT64)
        else:
            try:
                x = float(value)
            except OverflowError:
                raise _Mismatch(nonfinite=True) from None
            if not math.isfinite(x):
                raise _Mismatch(nonfinite=True)
        if self.lo is not None and (x <= self.lo if self.lo_open else x < self.lo):
            raise _Mismatch()
        if self.hi is not None and (x >= self.hi if self.hi_open else x > self.hi):
            raise _Mismatch()
        return x


class _Literal(_Check):
    """One exact value (e.g. the string 'avg_sq_norm', or null), optionally mapped to another."""

    def __init__(self, *accepted: Any, result: Any = _REQUIRED, noun: str | None = None):
        self.accepted = accepted
        self.result = accepted[0] if result is _REQUIRED else result
        self.noun = noun or ("null" if accepted[0] is None else repr(accepted[0]))

    def convert(self, value):
        for a in self.accepted:
            if type(value) is type(a) and value == a:
                return self.result
        strings = [a for a in self.accepted if isinstance(a, str)]
        raise _Mismatch(wrong_type=not (strings and isinstance(value, str)),
                        hint=_did_you_mean(value, strings))


_NULL = _Literal(None)


class _Choice(_Check):
    def __init__(self, options: Sequence[str]):
        self.options = tuple(options)
        self.noun = "one of " + ", ".join(repr(o) for o in self.options)

    def convert(self, value):
        if not isinstance(value, str):
            raise _Mismatch(wrong_type=True)
        if value not in self.options:
            raise _Mismatch(hint=_did_you_mean(value, self.options))
        return value


class _Text(_Check):
    def __init__(self, nonempty=False, noun=None, pattern=None):
        self.nonempty, self.pattern = nonempty, pattern
        self.noun = noun or ("a non-empty string" if nonempty else "a string")

    def convert(self, value):
        if not isinstance(value, str):
            raise _Mismatch(wrong_type=True)
        if self.nonempty and not value.strip():
            raise _Mismatch()
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            raise _Mismatch()
        return value


class _Flag(_Check):
    noun = "true or false"

    def convert(self, value):
        if not isinstance(value, bool):
            raise _Mismatch(wrong_type=True)
        return value


#: The numbers ``output.float_format`` is tried on: test error percentages as plab writes them
#: (none, all, 49 of 104 sonar examples, one of 70,000 MNIST examples, two thirds, all but one of
#: 70,000), each as a NumPy and as a Python float, as both reach the format.
_FORMAT_PROBES = (0.0, 100.0, 47.11538461538461, 0.0014285714285714286, 66.66666666666667, 99.99857142857142)
#: A number as a format may write it: sign, digits, a fraction, an exponent (spaces around it are
#: not part of it); the digits shown after the point and the exponent give the precision it shows.
_DECIMAL = re.compile(r"\s*[+-]?(?:\d+\.?(\d*)|\.(\d+))(?:[eE]([+-]?\d+))?\s*")


def _format_problem(fmt: str) -> str | None:
    """Why ``fmt`` cannot be ``output.float_format``, judged by what it writes, or None.

    Each probe value goes the way of a number in ``results.csv``: ``fmt % value``, a field of a CSV
    row (the csv module, as :func:`perceptron_lab.run.units.rows_to_csv` writes it), read back as
    text and converted as plab's readers convert it (pandas ``astype(float)``). The format must
    write one plain field (no comma, quote or line break), a decimal number that plab reads back,
    and that number must be the value rounded to the digits the text shows (within half a unit of
    its last digit): rounding is the user's choice of precision, any other difference is a wrong
    number. ``'%.6g%%'`` (writes ``47.1154%``), ``'%.6g,'`` (two fields), ``'%r'``
    (``np.float64(...)``), ``'1%g'`` (another number) and ``'%d'`` (66.67 written ``66``) are
    refused; ``'%.6g'``, ``'%.10g'``, ``'%.4e'``, ``'%.4f'`` and ``'%.2f'`` are not."""
    import csv
    import io

    import numpy as np
    import pandas as pd

    for value in _FORMAT_PROBES:
        for x in (np.float64(value), float(value)):
            try:
                text: object = fmt % x   # checked below: a caller may pass what is not text
            except (TypeError, ValueError, KeyError, OverflowError) as exc:
                return f"it cannot format {value:g} ({exc})"
            if not isinstance(text, str):
                return "it formats no number"
            shown = _repr.repr(text)
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerow(["x", text, "y"])
            if buf.getvalue() != f"x,{text},y\n":   # quoted: a comma, a quote or a line break in it
                return f"it writes {value:g} as {shown}, which is not one plain field of a CSV line"
            m = _DECIMAL.fullmatch(text)
            try:
                back = float(pd.Series([text]).astype(float).iloc[0])
            except (TypeError, ValueError):
                m = None
            if m is None:
                return f"it writes {value:g} as {shown}, which plab cannot read back as a number"
            decimals = len(m.group(1) or m.group(2) or "")
            half_unit = 0.5 * 10.0 ** (int(m.group(3) or 0) - decimals)
            if not abs(back - value) <= half_unit * (1 + 1e-9) + 1e-12 * abs(value):
                return (f"it writes {value:g} as {shown}, which plab reads back as {back:g}: not {value:g} rounded to "
                        "the digits it shows")
    return None


class _FloatFormat(_Check):
    """``output.float_format``: a printf-style format judged by what it writes (:func:`_format_problem`)."""

    noun = "a printf-style format for one number, such as '%.6g'"

    def convert(self, value):
        if not isinstance(value, str):
            raise _Mismatch(wrong_type=True)
        try:
            value % 1.5
        except (TypeError, ValueError, KeyError, OverflowError):
            raise _Mismatch() from None
        why = _format_problem_cached(value)
        if why is not None:
            raise _Mismatch(hint=why)
        return value


@functools.lru_cache(maxsize=256)
def _format_problem_cached(fmt: str) -> str | None:
    return _format_problem(fmt)


class _Union(_Check):
    def __init__(self, *alternatives: _Check):
        self.alternatives = alternatives
        nouns = [a.noun for a in alternatives]
        self.noun = nouns[0] if len(nouns) == 1 else ", ".join(nouns[:-1]) + " or " + nouns[-1]

    def convert(self, value):
        mismatches = []
        for alt in self.alternatives:
            try:
                return alt.convert(value)
            except _Mismatch as m:
                mismatches.append(m)
        hint = next((m.hint for m in mismatches if m.hint), None)
        raise _Mismatch(wrong_type=all(m.wrong_type for m in mismatches), hint=hint)


class _ListOf(_Check):
    def __init__(self, item: _Check, noun: str, nonempty=False, unique=False):
        self.item, self.noun, self.nonempty, self.unique = item, noun, nonempty, unique

    def validate(self, value, path, v):
        if not isinstance(value, (list, tuple)) or (self.nonempty and not value):
            v.expected(path, self.expectation(), value, wrong_type=not isinstance(value, (list, tuple)))
            return INVALID
        items = [self.item.validate(x, path + (i,), v) for i, x in enumerate(value)]
        if any(x is INVALID for x in items):
            return INVALID
        if self.unique and len(set(items)) < len(items):
            v.expected(path, "must list each value once", value)
            return INVALID
        return tuple(items)


class _ParamValues(_Check):
    """``dataset.params``: generator arguments, each a scalar or a flat list of scalars."""

    noun = "a mapping of generator arguments"
    value_noun = "a finite number, a string, true/false or null, or a list of these"

    @staticmethod
    def scalar(value) -> bool:
        if value is None or isinstance(value, (bool, str)):
            return True
        if isinstance(value, numbers.Real):
            try:
                return math.isfinite(float(value))
            except OverflowError:
                return False
        return False

    def validate(self, value, path, v):
        if not isinstance(value, Mapping):
            v.expected(path, self.expectation(), value, wrong_type=True)
            return INVALID
        out, ok = {}, True
        for key, item in value.items():
            if not isinstance(key, str) or not key:
                v.expected(path, "keys must be non-empty strings", key, wrong_type=not isinstance(key, str))
                ok = False
            elif self.scalar(item) or (isinstance(item, (list, tuple)) and all(map(self.scalar, item))):
                out[key] = _plain(item)
            else:
                v.expected(path + (key,), f"must be {self.value_noun}", item)
                ok = False
        return out if ok else INVALID


class _ParamScalar(_Check):
    """One generator argument (a grid value for ``dataset.params.NAME``)."""

    noun = _ParamValues.value_noun

    def convert(self, value):
        if _ParamValues.scalar(value):
            return value
        if isinstance(value, (list, tuple)) and all(map(_ParamValues.scalar, value)):
            return tuple(value)
        raise _Mismatch(wrong_type=not isinstance(value, numbers.Real))


class _DatasetName(_Check):
    noun = "a dataset name"

    def validate(self, value, path, v):
        if value is None:  # a run on a file of the user's own (dataset.path) names no dataset
            return None
        if not isinstance(value, str) or not value.strip():
            v.expected(path, "must be a dataset name", value, wrong_type=not isinstance(value, str))
            return INVALID
        known = v.dataset_names
        if known is not None and value not in known:
            names = sorted(known)
            v.expected(path, "must be one of " + ", ".join(map(repr, names)), value,
                       hint=_did_you_mean(value, names))
            return INVALID
        return value


#: Directory of the configs shipped with the package (``extends: "package:NAME.yaml"``, ``plab run NAME``).
PACKAGE_CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"


def config_dir(label: str) -> Path:
    """The folder a config file named ``label`` (as in messages) sits in: relative paths in it are
    relative to that folder (``package:NAME`` configs: the packaged configs' folder; a config given
    as a mapping, such as ``<dict>``: the current folder)."""
    from perceptron_lab.constants import PACKAGE_CONFIG_PREFIX

    label = label[: -len(OVERRIDE_SUFFIX)] if label.endswith(OVERRIDE_SUFFIX) else label
    if label.startswith(PACKAGE_CONFIG_PREFIX):
        return (PACKAGE_CONFIG_DIR / label[len(PACKAGE_CONFIG_PREFIX):]).parent
    if label.startswith("<"):
        return Path(".")
    return Path(label).parent


#: How messages name a value that came from an override (``with_overrides``, ``plab run CONFIG k=v``).
OVERRIDE_SUFFIX = " (override)"


class _FilePath(_Check):
    """A data file's path. Relative paths are relative to the config file that gives them; a path
    given by a base config (``extends``) is rewritten relative to the config being loaded, so that
    the resolved config reads the same file from wherever it is loaded."""

    noun = "a file path"

    def validate(self, value, path, v):
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip() or "\x00" in value:
            v.expected(path, "must be a file path", value, wrong_type=not isinstance(value, str))
            return INVALID
        origin = v.file_of(path)
        if os.path.isabs(value) or origin.endswith(OVERRIDE_SUFFIX) or origin == v.default_file:
            return value
        return os.path.relpath(os.path.abspath(config_dir(origin) / value),
                               os.path.abspath(config_dir(v.default_file)))


class _ColumnName(_Check):
    """A column of a CSV/TSV file's header; a YAML number is read as the header text (``0`` -> '0')."""

    noun = "a column name"

    def convert(self, value):
        if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
            raise _Mismatch(wrong_type=not isinstance(value, (str, int)))
        return str(value)


class _PaperRef(_Check):
    noun = "a paper's table as <paper>/<table>"

    def validate(self, value, path, v):
        from perceptron_lab.config import plugins

        if value is None:
            return None
        refs = [f"{p.name}/{t}" for p in plugins.papers() for t in p.tables]
        if not isinstance(value, str) or value not in refs:
            v.expected(path, "must be a paper's table, one of " + ", ".join(refs), value,
                       wrong_type=not isinstance(value, str), hint=_did_you_mean(value, refs))
            return INVALID
        return value


class _Grid(_Check):
    noun = "a mapping from parameter paths (such as 'algorithm.tau') to lists of values"

    def validate(self, value, path, v):
        if not isinstance(value, Mapping):
            v.expected(path, self.expectation(), value, wrong_type=True)
            return INVALID
        out, ok = {}, True
        for key, values in value.items():
            check = v.grid_check(key, path)
            if check is INVALID:
                ok = False
                continue
            kpath = path + (key,)
            if not isinstance(values, (list, tuple)) or not values:
                v.expected(kpath, "must be a non-empty list of values", values,
                           wrong_type=not isinstance(values, (list, tuple)))
                ok = False
                continue
            if check is None:  # the parameter's check depends on a selector that is itself invalid
                continue
            items = [check.validate(x, kpath + (i,), v) for i, x in enumerate(values)]
            if any(x is INVALID for x in items):
                ok = False
            elif len(set(map(_hashable, items))) < len(items):
                v.expected(kpath, "must list each value once", values)
                ok = False
            else:
                out[key] = tuple(items)
        return out if ok else INVALID


def _hashable(x):
    return tuple(map(_hashable, x)) if isinstance(x, (list, tuple)) else x


class _Search(_Check):
    noun = "a list of search plans, each a list of parameter paths from evaluation.grid"
    _stage_noun = "a non-empty list of parameter paths, or a list of such lists (stages searched in turn)"

    def validate(self, value, path, v):
        if not isinstance(value, (list, tuple)):
            v.expected(path, self.expectation(), value, wrong_type=True)
            return INVALID
        grid = v.values.get("evaluation", {}).get("grid", INVALID)
        plans, ok = [], True
        for i, plan in enumerate(value):
            ppath = path + (i,)
            if not isinstance(plan, (list, tuple)) or not plan:
                v.expected(ppath, f"must be {self._stage_noun}", plan,
                           wrong_type=not isinstance(plan, (list, tuple)))
                ok = False
                continue
            staged = any(isinstance(x, (list, tuple)) for x in plan)
            if staged and not all(isinstance(x, (list, tuple)) and x for x in plan):
                v.expected(ppath, f"must be {self._stage_noun}, not a mix of both", plan)
                ok = False
                continue
            stages = [(ppath + (j,), list(x)) for j, x in enumerate(plan)] if staged else [(ppath, list(plan))]
            plan_ok, keys = True, []
            for spath, stage in stages:
                for j, key in enumerate(stage):
                    if not isinstance(key, str):
                        v.expected(spath + (j,), "must be a parameter path listed in evaluation.grid", key,
                                   wrong_type=True)
                        plan_ok = False
                    elif grid is not INVALID and key not in grid:
                        v.expected(spath + (j,), "must be a parameter path listed in evaluation.grid", key,
                                   hint=_did_you_mean(key, list(grid), _PATH_CUTOFF))
                        plan_ok = False
                    else:
                        keys.append(key)
            if plan_ok and len(set(keys)) < len(keys):
                v.expected(ppath, "must list each parameter once", plan)
                plan_ok = False
            ok = ok and plan_ok
            plans.append(tuple(tuple(s) for _, s in stages) if staged else tuple(plan))
        return tuple(plans) if ok else INVALID
