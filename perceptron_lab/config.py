"""Experiment configs: YAML in, typed and validated dataclasses out.

A config is a YAML mapping of sections (``dataset``, ``kernel``, ``algorithm``, ``training``,
``prediction``, ``evaluation``, ``output``) plus ``name``, ``description`` and ``extends``.
Every key, its type, default and constraint is one row of :data:`SCHEMA`; one validator walks
that table and reports every problem it finds, one line each, in one template::

    configs/foo.yaml: training.epochs must be a positive number, got -3
    configs/foo.yaml: kernel.degree must be an integer >= 1, got 'four' (str)
    configs/foo.yaml: unknown key training.epoch (did you mean 'epochs'?)
    configs/foo.yaml: algorithm.p = 6 with kernel.type = 'poly': ALMA with p > 2 runs in primal form only; use kernel.type: linear

``extends: base.yaml`` (or a list of files) merges the named configs first, paths relative
to the extending file, ``package:NAME.yaml`` for a config shipped in ``perceptron_lab/configs``.
Mappings merge key by key with the extending file winning; any other value, lists included,
is replaced whole. Later bases in a list win over earlier ones. ``name`` is never inherited:
it defaults to the stem of the file being loaded.

Public API: :func:`load_config`, :func:`config_from_dict`, :func:`with_overrides`,
:func:`config_hash` and :meth:`ExperimentConfig.to_dict`.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import math
import numbers
import os
import re
import reprlib
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml

from . import constants as C
from .errors import ConfigError

__all__ = [
    "SCHEMA",
    "Param",
    "DatasetConfig",
    "KernelConfig",
    "AlgorithmConfig",
    "TrainingConfig",
    "PredictionConfig",
    "EvaluationConfig",
    "OutputConfig",
    "ExperimentConfig",
    "load_config",
    "config_from_dict",
    "with_overrides",
    "config_hash",
    "PACKAGE_CONFIG_DIR",
]

#: Directory of the configs shipped with the package (``extends: "package:NAME.yaml"``).
PACKAGE_CONFIG_DIR = Path(__file__).resolve().parent / "configs"

SECTIONS = ("dataset", "kernel", "algorithm", "training", "prediction", "evaluation", "output")
#: A config file (or a file it extends) larger than this is refused before it is read.
MAX_CONFIG_BYTES = 1 << 20
_TOP_KEYS = ("name", "description", "paper", "extends")


# =========================================================================== dataclasses


@dataclass(frozen=True, kw_only=True)
class DatasetConfig:
    """Which data to load and how to preprocess it."""

    name: str
    #: Use only the first N training (test) examples; None uses all of them.
    train_size: int | None
    test_size: int | None
    #: One of :data:`perceptron_lab.constants.PREPROCESS`.
    preprocess: str
    #: Generator arguments of a synthetic dataset (e.g. f, margin, noise, seed).
    params: dict
    #: Append the test split to the training split (cross-validation over the whole data set).
    merge_splits: bool = False


@dataclass(frozen=True, kw_only=True)
class KernelConfig:
    """The kernel K(x, y). ``degree`` is 1 and ``sigma`` None for kernels that do not use them."""

    type: str
    degree: int
    scale: float
    sigma: float | None


@dataclass(frozen=True, kw_only=True)
class AlgorithmConfig:
    """The learner. Parameters of the algorithm not selected by ``name`` are None.

    Perceptron: ``eta``, ``theta_init`` (a number or ``'avg_sq_norm'``), ``C`` (a number or
    ``'theta_init'``), ``tau``, ``lambda_``, ``alpha_bound`` (None: unbounded), ``form``.
    ALMA (Gentile 2001): ``alpha``, ``B`` (None: 1/alpha; ``'sqrt8/alpha'``: sqrt(8)/alpha), ``C``, ``p``.
    """

    name: str
    eta: float | None
    theta_init: float | str | None
    C: float | str | None
    tau: float | None
    lambda_: float | None
    alpha_bound: int | None
    form: str | None
    alpha: float | None
    B: float | str | None
    p: float | None


@dataclass(frozen=True, kw_only=True)
class TrainingConfig:
    """Passes over the data and the positions (in epochs) where results are recorded."""

    epochs: float
    #: Sorted, unique, each <= epochs, always ending with epochs.
    checkpoints: tuple[float, ...]
    curve_every: float | None
    permutations: int
    seed: int
    multiclass: str
    dtype: str
    chunk_size: int
    cache_limit_gb: float


@dataclass(frozen=True, kw_only=True)
class PredictionConfig:
    """Prediction rules evaluated at every checkpoint."""

    rules: tuple[str, ...]
    vote_weight: str


@dataclass(frozen=True, kw_only=True)
class EvaluationConfig:
    """How test error is measured, and which parameter values are searched."""

    mode: str
    folds: int
    inner_folds: int
    #: Parameter path (e.g. ``'algorithm.tau'``) -> the values to try, each validated.
    grid: dict
    #: Search plans. A plan is a tuple of grid parameter paths searched jointly, or a tuple of
    #: stages (each a tuple of paths) searched one after another, each stage's parameters fixed at
    #: their chosen values before the next stage (Khardon & Wachman's tau -> alpha).
    search: tuple[tuple[str, ...] | tuple[tuple[str, ...], ...], ...]
    fold_seed: int
    confidence: float
    #: Outer loop of nested cross-validation: ``kfold`` (``folds`` folds of the training data) or
    #: ``holdout`` (the dataset's fixed test split). ``kfold`` unless mode is ``nested``.
    outer: str
    #: Train each cross-validation unit on this many examples drawn at random from its training
    #: part (Khardon & Wachman's Table 5); None trains on the whole part.
    fold_train_size: int | None = None


@dataclass(frozen=True, kw_only=True)
class OutputConfig:
    """Where results go and how numbers are written."""

    dir: str | None
    figures: bool
    float_format: str


@dataclass(frozen=True, kw_only=True)
class ExperimentConfig:
    """A fully resolved, validated experiment. ``source`` is the file it came from."""

    name: str
    description: str
    dataset: DatasetConfig
    kernel: KernelConfig
    algorithm: AlgorithmConfig
    training: TrainingConfig
    prediction: PredictionConfig
    evaluation: EvaluationConfig
    output: OutputConfig
    paper: str | None = None
    source: str | None = dataclasses.field(default=None, compare=False)

    @property
    def run_dir(self) -> Path:
        """``output.dir``, or ``runs/<name>`` when it is not set."""
        return Path(self.output.dir) if self.output.dir else Path(C.DEFAULT_RUNS_DIR) / self.name

    def to_dict(self) -> dict:
        """The resolved config as plain YAML/JSON types, keys spelled as in YAML.

        Only the parameters in effect are listed (e.g. no ALMA keys for the perceptron, no
        ``kernel.sigma`` for a polynomial kernel), so the result loads back unchanged through
        :func:`config_from_dict`.
        """
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.paper is not None:
            out["paper"] = self.paper
        for section in SECTIONS:
            obj = getattr(self, section)
            body: dict[str, Any] = {}
            for param in _params_of(section):
                if param.key in body or not param.applies(lambda k: getattr(obj, _attr(section, k))):
                    continue
                if param.omit_default and getattr(obj, param.attr) == param.default:
                    continue
                body[param.key] = _plain(getattr(obj, param.attr))
            out[section] = body
        return out


_SECTION_TYPES = {
    "dataset": DatasetConfig,
    "kernel": KernelConfig,
    "algorithm": AlgorithmConfig,
    "training": TrainingConfig,
    "prediction": PredictionConfig,
    "evaluation": EvaluationConfig,
    "output": OutputConfig,
}


def _plain(value: Any) -> Any:
    """Tuples to lists and mappings to dicts, recursively (YAML- and JSON-dumpable)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


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


def _did_you_mean(word: Any, options: Iterable[str], cutoff: float = 0.6) -> str | None:
    """A 'did you mean' hint; dotted paths share long prefixes, so pass a higher ``cutoff``."""
    if not isinstance(word, str):
        return None
    close = difflib.get_close_matches(word, [o for o in options if isinstance(o, str)], n=1, cutoff=cutoff)
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

    def validate(self, value: Any, path: tuple, v: "_Validator") -> Any:
        try:
            return self.convert(value)
        except _Mismatch as m:
            v.expected(path, self.expectation(m), value, wrong_type=m.wrong_type, hint=m.hint)
            return INVALID


class _Number(_Check):
    """A real number (never a bool) in a range; finite unless an alternative allows inf."""

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
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise _Mismatch(wrong_type=True)
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


class _FloatFormat(_Check):
    noun = "a printf-style format for one number, such as '%.6g'"

    def convert(self, value):
        if not isinstance(value, str):
            raise _Mismatch(wrong_type=True)
        try:
            formatted = value % 1.5
        except (TypeError, ValueError, KeyError, OverflowError):
            raise _Mismatch() from None
        if not isinstance(formatted, str):
            raise _Mismatch()
        return value


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


class _PaperRef(_Check):
    noun = "a paper's table as <paper>/<table>"

    def validate(self, value, path, v):
        from . import plugins

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


# =========================================================================== the schema table


@dataclass(frozen=True)
class Param:
    """One config key: its check, default and documentation.

    ``when = (selector, values)`` makes the key apply only while the section's ``selector`` key
    has one of ``values``. Outside that, the key takes ``neutral`` and may be given only with
    that value; otherwise ``off`` (a format string) says why it does not fit.
    """

    path: str
    check: _Check
    default: Any
    doc: str
    attr: str = ""
    when: tuple[str, tuple[str, ...]] | None = None
    neutral: Any = None
    off: str = ""
    grid: bool = True
    #: Listed by ``to_dict`` (and so in the results hash) only when it differs from the default:
    #: for keys added after results were recorded, so that configs not using them keep their hash.
    omit_default: bool = False

    @property
    def section(self) -> str:
        return self.path.split(".", 1)[0] if "." in self.path else ""

    @property
    def key(self) -> str:
        return self.path.split(".", 1)[-1]

    def applies(self, lookup: Callable[[str], Any]) -> bool:
        """Whether the key is in effect, ``lookup(key)`` giving the section's selector value."""
        return self.when is None or lookup(self.when[0]) in self.when[1]


def _P(path, check, default, doc, **kw) -> Param:
    kw.setdefault("attr", path.rsplit(".", 1)[-1])
    return Param(path, check, default, doc, **kw)


_POSITIVE = _Number(lo=0, lo_open=True)
_NONNEG = _Number(lo=0)
_INT_GE1 = _Number(integer=True, lo=1)
_INT_GE0 = _Number(integer=True, lo=0)
_INT_GE2 = _Number(integer=True, lo=2)

_IS_ALMA = "{path} is an ALMA parameter; set algorithm.name: alma to use it"
_IS_PERCEPTRON = "{path} is a perceptron parameter; ALMA does not use it"


def _perceptron(path, check, default, doc, off=_IS_PERCEPTRON, **kw):
    return _P(path, check, default, doc, when=("name", ("perceptron",)), off=off, **kw)


def _alma(path, check, default, doc, off=_IS_ALMA, **kw):
    return _P(path, check, default, doc, when=("name", ("alma",)), off=off, **kw)


#: Every config key, in the order keys are validated and written out.
SCHEMA: tuple[Param, ...] = (
    _P("name", _Text(nonempty=True, pattern=r"(?!\.\.?$)[^/\\\x00]*",
                     noun="a non-empty name without '/', '\\' or NUL that is not '.' or '..'"),
       _FILE_STEM, "Run name; outputs go to runs/<name>. Defaults to the config file's stem "
       "and is never inherited through extends.", grid=False),
    _P("description", _Text(), "", "Free text shown in reports.", grid=False),
    _P("paper", _PaperRef(), None, "The paper table the run reproduces, as <paper>/<table> (e.g. kw2007/table5): "
       "its outputs are then also written in the paper's layout and scored against it. Runs without it "
       "are never scored against a paper. Never inherited through extends.", grid=False),
    # ---------------------------------------------------------------- dataset
    _P("dataset.name", _DatasetName(), _REQUIRED,
       "A registered dataset, or a synthetic one: " + ", ".join(C.DATASET_SYNTHETIC) + "."),
    _P("dataset.train_size", _Union(_INT_GE1, _NULL), None,
       "Use only the first N training examples; null uses all."),
    _P("dataset.test_size", _Union(_INT_GE1, _NULL), None,
       "Use only the first N test examples; null uses all."),
    _P("dataset.preprocess", _Choice(C.PREPROCESS), "none",
       "Feature preprocessing, fitted on the training split."),
    _P("dataset.params", _ParamValues(), {},
       "Generator arguments of a synthetic dataset (e.g. f, margin, noise, seed).", grid=False),
    _P("dataset.merge_splits", _Flag(), False,
       "Append the test split to the training split, so that cross-validation runs over the whole "
       "data set (e.g. Khardon & Wachman's 10-fold CV over all 9298 USPS examples).", omit_default=True),
    # ---------------------------------------------------------------- kernel
    _P("kernel.type", _Choice(C.KERNELS), "linear",
       "linear: x·y; poly: (1 + x·y/scale)^degree; gaussian: exp(-|x-y|²/(2 sigma²)); "
       "poly_gaussian: (1 + exp(-|x-y|²/(2 sigma²)))^degree."),
    _P("kernel.degree", _INT_GE1, 1, "Degree of the poly and poly_gaussian kernels.",
       when=("type", C.KERNELS_WITH_DEGREE), neutral=1,
       off="{path}{shown} with {sel_path} = {sel}: only the poly and poly_gaussian kernels have a degree"),
    _P("kernel.scale", _POSITIVE, 1.0,
       "Scale s of the poly kernel (1 + x·y/s)^d, e.g. 255 for raw pixels (Gentile 2001)."),
    _P("kernel.sigma", _POSITIVE, _REQUIRED, "Width of the gaussian and poly_gaussian kernels.",
       when=("type", C.KERNELS_WITH_SIGMA), neutral=None,
       off="{path}{shown} with {sel_path} = {sel}: only the gaussian and poly_gaussian kernels have a width"),
    # ---------------------------------------------------------------- algorithm
    _P("algorithm.name", _Choice(C.ALGORITHMS), "perceptron",
       "perceptron (Freund & Schapire 1999; Khardon & Wachman 2007) or alma (Gentile 2001)."),
    _perceptron("algorithm.eta", _POSITIVE, C.DEFAULT_ETA, "Learning rate."),
    _perceptron("algorithm.theta_init", _Union(_Number(), _Literal(C.THETA_AVG_SQ_NORM)), 0.0,
                "Initial margin threshold; 'avg_sq_norm' is the average <x_i, x_i>."),
    _perceptron("algorithm.C", _Union(_NONNEG, _Literal(C.C_SAME_AS_THETA)), 0.0,
                "Threshold increment per mistake; 'theta_init' means the same value as theta_init."),
    _perceptron("algorithm.tau", _NONNEG, 0.0, "Margin parameter tau."),
    _perceptron("algorithm.lambda", _NONNEG, 0.0, "Regularisation lambda.", attr="lambda_"),
    _perceptron("algorithm.alpha_bound", _Union(_INT_GE1, _NULL, _Literal(C.ALPHA_BOUND_UNBOUNDED, math.inf,
                                                                          result=None, noun="'inf'")),
                None, "Largest dual coefficient alpha_i; null or 'inf' means unbounded.",
                off="{path} is a perceptron parameter; ALMA's margin parameter is algorithm.alpha"),
    _perceptron("algorithm.form", _Choice(C.FORMS), "auto",
                "primal keeps a weight vector (linear kernel only); dual keeps the mistakes."),
    _alma("algorithm.alpha", _Number(lo=0, lo_open=True, hi=1), C.DEFAULT_ALMA_ALPHA,
          "ALMA's margin parameter alpha.",
          off="{path} is an ALMA parameter; for the perceptron's mistake bound use alpha_bound"),
    _alma("algorithm.B", _Union(_POSITIVE, _Literal(C.ALMA_B_THEOREM3), _Literal(C.ALMA_B_STATED, result=None),
                                _NULL), None,
          f"ALMA's B; null or '{C.ALMA_B_STATED}' means 1/alpha (Gentile 2001, §4), '{C.ALMA_B_THEOREM3}' "
          "Theorem 3's sqrt(8)/alpha; both follow alpha (e.g. each value of a grid over algorithm.alpha)."),
    _alma("algorithm.C", _POSITIVE, C.DEFAULT_ALMA_C, "ALMA's C (default sqrt 2)."),
    _alma("algorithm.p", _Number(lo=2), C.DEFAULT_ALMA_P, "The norm p of ALMA_p."),
    # ---------------------------------------------------------------- training
    _P("training.epochs", _POSITIVE, C.DEFAULT_EPOCHS, "Passes over the training data; may be fractional."),
    _P("training.checkpoints", _ListOf(_POSITIVE, "a list of positive numbers"), (),
       "Epoch positions where results are recorded; epochs is always one of them.", grid=False),
    _P("training.curve_every", _Union(_POSITIVE, _NULL), None,
       "Record test error every this many epochs (e.g. 0.1); null records none."),
    _P("training.permutations", _INT_GE1, 1, "Number of random orderings of the training data."),
    _P("training.seed", _INT_GE0, 0, "Seed of the permutations."),
    _P("training.multiclass", _Choice(C.MULTICLASS), "ovr", "Multiclass reduction (one-vs-rest)."),
    _P("training.dtype", _Choice(C.DTYPES), "float64", "Floating point precision of kernel values."),
    _P("training.chunk_size", _INT_GE1, C.DEFAULT_CHUNK, "Rows per block of kernel evaluations."),
    _P("training.cache_limit_gb", _POSITIVE, C.DEFAULT_CACHE_LIMIT_GB,
       "Memory allowed for cached kernel rows."),
    # ---------------------------------------------------------------- prediction
    _P("prediction.rules", _ListOf(_Choice(C.RULES), "a non-empty list of rule names", nonempty=True, unique=True),
       C.DEFAULT_RULES, "Prediction rules to evaluate.", grid=False),
    _P("prediction.vote_weight", _Choice(C.VOTE_WEIGHTS), "survival",
       "survival: steps each hypothesis survived (Freund & Schapire); correct: its correct predictions "
       "(Khardon & Wachman)."),
    # ---------------------------------------------------------------- evaluation
    _P("evaluation.mode", _Choice(C.EVALUATION_MODES), "holdout",
       "holdout: the dataset's test split; kfold: cross-validation; nested: with an inner search.",
       grid=False),
    _P("evaluation.folds", _INT_GE2, C.DEFAULT_FOLDS, "Folds of (outer) cross-validation.", grid=False),
    _P("evaluation.inner_folds", _INT_GE2, C.DEFAULT_INNER_FOLDS, "Folds of the inner search.", grid=False),
    _P("evaluation.grid", _Grid(), {}, "Parameter path -> values to try.", grid=False),
    _P("evaluation.search", _Search(), (), "Search plans: lists of grid parameters searched jointly.",
       grid=False),
    _P("evaluation.fold_seed", _INT_GE0, 0, "Seed of the fold assignment; a grid over it re-draws the folds "
       "(and so the training orders), e.g. to measure how much a cross-validated value varies."),
    _P("evaluation.confidence", _Number(lo=0, lo_open=True, hi=1, hi_open=True), C.DEFAULT_CONFIDENCE,
       "Level of the confidence intervals.", grid=False),
    _P("evaluation.outer", _Choice(("kfold", "holdout")), "kfold",
       "Outer loop of nested cross-validation: kfold (folds of the training data) or holdout (the "
       "dataset's fixed test split, e.g. Khardon & Wachman's USPS, MNIST and Adult runs).",
       when=("mode", ("nested",)), neutral="kfold", grid=False,
       off="{path}{shown} with {sel_path} = {sel}: only nested cross-validation has an outer loop to choose"),
    _P("evaluation.fold_train_size", _Union(_INT_GE1, _NULL), None,
       "Train each fold on this many examples drawn at random from the fold's training part (Khardon & "
       "Wachman's Table 5); null trains on the whole part. Preprocessing is fitted on the whole part.",
       omit_default=True),
    # ---------------------------------------------------------------- output
    _P("output.dir", _Union(_Text(nonempty=True), _NULL), None, "Output directory; null means runs/<name>.",
       grid=False),
    _P("output.figures", _Flag(), True, "Write figures.", grid=False),
    _P("output.float_format", _FloatFormat(), C.DEFAULT_FLOAT_FORMAT, "Format of numbers in CSV files.",
       grid=False),
)


def _params_of(section: str) -> list[Param]:
    return [p for p in SCHEMA if p.section == section]


def _attr(section: str, key: str) -> str:
    return next(p.attr for p in SCHEMA if p.section == section and p.key == key)


# =========================================================================== the validator

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


class _Validator:
    """Walks :data:`SCHEMA` over one mapping and collects every problem."""

    def __init__(self, origins: dict, default_file: str, default_name: str, dataset_names):
        self.origins, self.default_file = origins, default_file
        self.default_name, self.dataset_names = default_name, dataset_names
        self.lines: list[str] = []
        self.values: dict[str, dict] = {}
        self.given: dict[tuple, Any] = {}

    # ---- reporting
    def file_of(self, path: tuple) -> str:
        keys = tuple(str(p) for p in path if not isinstance(p, int) or isinstance(p, bool))
        for n in range(len(keys), 0, -1):
            if keys[:n] in self.origins:
                return self.origins[keys[:n]]
        return self.default_file

    def line(self, path: tuple, text: str) -> None:
        self.lines.append(f"{self.file_of(path)}: {text}")

    def expected(self, path, expected, given, wrong_type=False, hint=None) -> None:
        text = f"{_render_path(path)} {expected}, got {_show(given)}"
        if wrong_type and given is not None:
            text += f" ({type(given).__name__})"
        if hint:
            text += f" ({hint})"
        self.line(path, text)

    def unknown(self, path: tuple, options: Iterable[str]) -> None:
        hint = _did_you_mean(path[-1], options)
        if not isinstance(path[-1], str):
            path = path[:-1] + (repr(path[-1]),)
        self.line(path, f"unknown key {_render_path(path)}" + (f" ({hint})" if hint else ""))

    def shown(self, section: str, key: str) -> str:
        path = (section, key) if section else (key,)
        return _show(self.given.get(path, self.values.get(section, {}).get(key)))

    # ---- the walk
    def run(self, data: Any, source: str | None) -> ExperimentConfig:
        if not isinstance(data, Mapping):
            self.expected((), "must be a mapping of sections (" + ", ".join(SECTIONS) + ")", data,
                          wrong_type=True)
            raise ConfigError(self.lines)
        for key in data:
            if key not in _TOP_KEYS and key not in SECTIONS:
                self.unknown((key,), _TOP_KEYS + SECTIONS)
            elif key == "extends":
                self.line(("extends",), "extends is resolved when a config file is loaded; "
                          "it cannot appear in a resolved config")
        self._section("", {k: data[k] for k in ("name", "description", "paper") if k in data}, ())
        for section in SECTIONS:
            raw = data.get(section)
            if raw is None:
                raw = {}
            if not isinstance(raw, Mapping):
                self.expected((section,), "must be a mapping", raw, wrong_type=True)
                self.values[section] = {p.key: INVALID for p in _params_of(section)}
                continue
            self._section(section, raw, (section,))
        self._combinations()
        if self.lines:
            raise ConfigError(self.lines)
        return self._build(source)

    def _section(self, section: str, raw: Mapping, prefix: tuple) -> None:
        params = _params_of(section)
        known = list(dict.fromkeys(p.key for p in params))
        if section:
            for key in raw:
                if key not in known:
                    self.unknown(prefix + (key,), known)
        out: dict[str, Any] = {}
        self.values[section] = out
        # selectors first: keys that others depend on are never conditional themselves
        for p in sorted(params, key=lambda p: p.when is not None):
            path = prefix + (p.key,)
            if p.key in raw:
                self.given[path] = raw[p.key]
            if p.when is not None:
                sel = out.get(p.when[0], INVALID)
                if sel is INVALID:
                    out.setdefault(p.key, INVALID)
                    continue
                if sel not in p.when[1]:
                    if not any(q.key == p.key and q.applies(out.get) for q in params):
                        if p.key in raw and not _is_neutral(raw[p.key], p.neutral):
                            self.off(p, sel, shown=f" = {_show(raw[p.key])}", at=path)
                        out[p.key] = p.neutral
                    continue
            if p.key in raw:
                out[p.key] = p.check.validate(raw[p.key], path, self)
            elif p.default is _REQUIRED:
                why = "required" if p.when is None else \
                    f"required when {section}.{p.when[0]} = {_show(out[p.when[0]])}"
                self.line(path, f"missing key {_render_path(path)} ({why})")
                out[p.key] = INVALID
            elif p.default is _FILE_STEM:
                out[p.key] = self.default_name
            else:
                out[p.key] = p.default

    def off(self, p: Param, sel: Any, shown: str, at: tuple) -> None:
        sel_path = f"{p.section}.{p.when[0]}"
        self.line(at, p.off.format(path=p.path, shown=shown, sel_path=sel_path, sel=_show(sel)))

    def grid_check(self, key: Any, at: tuple):
        """The check for values of grid parameter ``key``; None if unknown yet; INVALID if bad."""
        targets = [p.path for p in SCHEMA if p.grid and p.section in SECTIONS]
        if isinstance(key, str) and key.startswith("dataset.params.") and len(key) > len("dataset.params."):
            return _ParamScalar()
        candidates = [p for p in SCHEMA if p.grid and p.path == key] if isinstance(key, str) else []
        if not candidates:
            self.expected(at, "keys must be parameter paths such as 'algorithm.tau'", key,
                          wrong_type=not isinstance(key, str), hint=_did_you_mean(key, targets, _PATH_CUTOFF))
            return INVALID
        section = self.values.get(candidates[0].section, {})
        for p in candidates:
            if p.when is None:
                return p.check
            sel = section.get(p.when[0], INVALID)
            if sel is INVALID:
                return None
            if sel in p.when[1]:
                return p.check
        p = candidates[0]
        self.line(at, f"{_render_path(at)}: " + p.off.format(
            path=p.path, shown="", sel_path=f"{p.section}.{p.when[0]}", sel=_show(section.get(p.when[0]))))
        return INVALID

    def _combinations(self) -> None:
        for rule in _COMBINATIONS:
            rule(self)

    def _build(self, source: str | None) -> ExperimentConfig:
        top = self.values[""]
        sections = {}
        for section, cls in _SECTION_TYPES.items():
            values = self.values[section]
            attrs = {p.attr: p.key for p in _params_of(section)}
            sections[section] = cls(**{attr: values[key] for attr, key in attrs.items()})
        return ExperimentConfig(name=top["name"], description=top["description"], paper=top["paper"],
                                source=source, **sections)


def _is_neutral(value: Any, neutral: Any) -> bool:
    if neutral is None or value is None:
        return value is neutral
    if isinstance(neutral, str):
        return value == neutral
    return not isinstance(value, bool) and isinstance(value, numbers.Real) and value == neutral


# ---- rules across keys: each reads validated values and skips when any of them is INVALID


def _valid(*values) -> bool:
    return all(v is not INVALID for v in values)


def _rule_alma_primal(v: _Validator) -> None:
    alg, ker = v.values["algorithm"], v.values["kernel"]
    name, p, kind = alg.get("name"), alg.get("p"), ker.get("type")
    if _valid(name, p, kind) and name == "alma" and p is not None and p > 2 and kind != "linear":
        v.line(("algorithm", "p"), f"algorithm.p = {v.shown('algorithm', 'p')} with kernel.type = {kind!r}: "
               "ALMA with p > 2 runs in primal form only; use kernel.type: linear")


def _rule_primal_kernel(v: _Validator) -> None:
    form, kind = v.values["algorithm"].get("form"), v.values["kernel"].get("type")
    if _valid(form, kind) and form == "primal" and kind != "linear":
        v.line(("algorithm", "form"), f"algorithm.form = 'primal' with kernel.type = {kind!r}: "
               "the primal form keeps an explicit weight vector, which only the linear kernel has; "
               "use algorithm.form: auto or dual")


def _rule_checkpoints(v: _Validator) -> None:
    tr = v.values["training"]
    epochs, cps = tr.get("epochs"), tr.get("checkpoints")
    if not _valid(epochs, cps):
        return
    late = [i for i, c in enumerate(cps) if c > epochs + C.EPOCH_TOL]
    given = v.given[("training", "checkpoints")] if late else ()
    for i in late:
        v.expected(("training", "checkpoints", i), f"must be at most training.epochs ({_fmt_num(epochs)})", given[i])
    if late:
        tr["checkpoints"] = INVALID
        return
    merged: list[float] = []
    for c in sorted(cps):
        if abs(c - epochs) <= C.EPOCH_TOL or (merged and c - merged[-1] <= C.EPOCH_TOL):
            continue
        merged.append(c)
    tr["checkpoints"] = tuple(merged) + (epochs,)


def _rule_nested_grid(v: _Validator) -> None:
    ev = v.values["evaluation"]
    mode, grid = ev.get("mode"), ev.get("grid")
    if _valid(mode, grid) and mode == "nested" and not grid:
        v.line(("evaluation", "mode"), "evaluation.mode = 'nested' with an empty evaluation.grid: nested "
               "cross-validation selects parameters from a grid; add evaluation.grid and evaluation.search")
    search = ev.get("search")
    if _valid(mode, grid, search) and mode == "nested" and grid and not search:
        v.line(("evaluation", "search"), "evaluation.mode = 'nested' without evaluation.search: list the "
               "parameters the inner folds choose, e.g. search: [[algorithm.tau]]")


_COMBINATIONS: tuple[Callable[[_Validator], None], ...] = (
    _rule_alma_primal,
    _rule_primal_kernel,
    _rule_checkpoints,
    _rule_nested_grid,
)


# =========================================================================== YAML and extends


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that records every duplicate key of a mapping instead of keeping the last."""

    def __init__(self, stream):
        super().__init__(stream)
        self.duplicates: list[tuple[Any, Any, Any]] = []

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node.start_mark)
                except TypeError:  # unhashable; SafeLoader reports it below
                    continue
                if first is not key_node.start_mark:
                    self.duplicates.append((key, key_node.start_mark, first))
        return super().construct_mapping(node, deep=deep)


@dataclass(frozen=True)
class _Source:
    label: str  # how messages name the file
    path: Path


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _read_yaml(src: _Source, problems: list[str]) -> Any:
    """The parsed content of ``src``; records a problem and returns INVALID when it has none."""
    def fail(text: str) -> Any:
        problems.append(f"{src.label}: {text}")
        return INVALID

    try:
        st = src.path.stat()
        if stat.S_ISDIR(st.st_mode):
            return fail("is a directory, not a config file")
        if not stat.S_ISREG(st.st_mode):
            return fail("is not a regular file (a device, FIFO or socket); a config is a YAML text file")
        if st.st_size > MAX_CONFIG_BYTES:
            return fail(f"is {st.st_size} bytes; a config is at most {MAX_CONFIG_BYTES} bytes")
        with open(src.path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            return fail(f"is larger than {MAX_CONFIG_BYTES} bytes; a config is at most that")
    except FileNotFoundError:
        return fail("file not found")
    except IsADirectoryError:
        return fail("is a directory, not a config file")
    except (OSError, ValueError) as e:  # ValueError: a NUL character in the path
        return fail(f"cannot read file ({_one_line(getattr(e, 'strerror', None) or e)})")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        return fail(f"line {line}: not UTF-8 text (byte 0x{raw[e.start]:02x}); a config is a YAML text file")
    loader = None
    try:
        loader = _StrictLoader(text)  # the reader checks every character here
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = e.problem or e.context
        if e.problem and e.context and not e.context.startswith("while "):
            what = f"{e.context}, {e.problem}"  # e.g. "expected a single document ..., but found another"
        return fail(f"{where}invalid YAML: {_one_line(what)}")
    except yaml.reader.ReaderError as e:
        line = text[: e.position].count("\n") + 1
        return fail(f"line {line}: not a text file (character {chr(e.character)!r} cannot appear in YAML)"
                    if isinstance(e.character, int) else f"line {line}: {_one_line(e.reason)}")
    except yaml.YAMLError as e:
        return fail(f"invalid YAML: {_one_line(e)}")
    except (ValueError, TypeError, AttributeError, OverflowError) as e:
        # e.g. '!!int abc' or '!!timestamp foo': SafeLoader converts the tagged value and fails
        return fail(f"invalid YAML value ({_one_line(e) or type(e).__name__})")
    finally:
        if loader is not None:
            loader.dispose()
    if loader.duplicates:
        for key, mark, first in sorted(loader.duplicates, key=lambda d: (d[1].line, d[1].column)):
            problems.append(f"{src.label}: line {mark.line + 1}: duplicate key {_show(key)} "
                            f"(first given on line {first.line + 1})")
        return INVALID
    if data is None:
        return fail("file is empty; a config needs at least a dataset section, e.g. dataset: {name: sonar}")
    if not isinstance(data, dict):
        return fail(f"top level must be a mapping of sections ({', '.join(SECTIONS)}), "
                    f"got {_show(data)} ({type(data).__name__})")
    return data


def _package_source(name: str) -> _Source | None:
    rel = name[len(C.PACKAGE_CONFIG_PREFIX):]
    parts = Path(rel).parts
    if not rel or Path(rel).is_absolute() or ".." in parts or rel.startswith(("/", "\\")):
        return None
    return _Source(f"{C.PACKAGE_CONFIG_PREFIX}{Path(rel).as_posix()}", PACKAGE_CONFIG_DIR / rel)


def _base_source(name: str, child: _Source) -> _Source | None:
    if name.startswith(C.PACKAGE_CONFIG_PREFIX):
        return _package_source(name)
    path = child.path.parent / name
    try:
        rel = path.resolve().relative_to(PACKAGE_CONFIG_DIR)
        label = f"{C.PACKAGE_CONFIG_PREFIX}{rel.as_posix()}"
    except ValueError:
        label = os.path.normpath(os.path.join(os.path.dirname(child.label), name)) \
            if not child.label.startswith(C.PACKAGE_CONFIG_PREFIX) else os.path.normpath(path)
    return _Source(label, path)


def _origins(data: Mapping, label: str, prefix: tuple = ()) -> dict[tuple, str]:
    out = {}
    for key, value in data.items():
        path = prefix + (str(key),)
        out[path] = label
        if isinstance(value, Mapping):
            out.update(_origins(value, label, path))
    return out


def _merge(base: dict, base_o: dict, child: Mapping, child_o: dict, prefix: tuple = ()) -> tuple[dict, dict]:
    """Deep-merge ``child`` over ``base`` (mappings merge, anything else is replaced)."""
    out, origins = dict(base), base_o if prefix else dict(base_o)
    for key, value in child.items():
        path = prefix + (str(key),)
        if isinstance(out.get(key), Mapping) and isinstance(value, Mapping):
            out[key], _ = _merge(out[key], origins, value, child_o, path)
            origins[path] = child_o.get(path, origins.get(path))
        else:
            out[key] = value
            for p in [p for p in origins if p[: len(path)] == path]:
                del origins[p]
            origins.update({p: f for p, f in child_o.items() if p[: len(path)] == path})
    return out, origins


def _resolve(data: dict, src: _Source, chain: tuple, problems: list[str]) -> Any:
    """``data`` with its ``extends`` merged in, or INVALID after recording why not."""
    data = dict(data)
    origins = _origins(data, src.label)
    if "extends" not in data:
        return data, origins
    extends = data.pop("extends")
    origins.pop(("extends",), None)
    names = [extends] if isinstance(extends, str) else extends
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        kind = "" if isinstance(extends, (str, list)) or extends is None else f" ({type(extends).__name__})"
        problems.append(f"{src.label}: extends must be a file name or a list of file names, "
                        f"got {_show(extends)}{kind}")
        return INVALID
    merged, merged_o, ok = {}, {}, True
    for name in names:
        base = _base_source(name, src)
        if base is None:
            problems.append(f"{src.label}: extends {name!r}: a packaged config is named like "
                            f"'{C.PACKAGE_CONFIG_PREFIX}quickstart.yaml'")
            ok = False
            continue
        try:
            key, exists = base.path.resolve(), base.path.exists()
        except (OSError, ValueError) as e:
            problems.append(f"{src.label}: extends {name!r}: cannot read {base.label} ({_one_line(e)})")
            ok = False
            continue
        if key in [k for k, _ in chain]:
            cycle = " -> ".join([label for _, label in chain] + [base.label])
            problems.append(f"{src.label}: extends {name!r} makes a cycle: {cycle}")
            ok = False
            continue
        if not exists:
            problems.append(f"{src.label}: extends {name!r}, but {base.label} does not exist")
            ok = False
            continue
        content = _read_yaml(base, problems)
        result = INVALID if content is INVALID else \
            _resolve(content, base, chain + ((key, base.label),), problems)
        if result is INVALID:
            ok = False
            continue
        base_data, base_o = result
        for own in ("name", "paper"):  # a config's name, and the paper table it reproduces, are its own
            base_data.pop(own, None)
            base_o.pop((own,), None)
        merged, merged_o = _merge(merged, merged_o, base_data, base_o)
    if not ok:
        return INVALID
    return _merge(merged, merged_o, data, origins)


_UNCHECKED = object()  # dataset_names: do not check dataset.name against a list


def _known_dataset_names(names: Iterable[str] | None):
    if names is _UNCHECKED:
        return None
    if names is None:
        try:
            from .datasets import registry
        except ImportError:
            return None
        lister = getattr(registry, "list_dataset_names", None)
        names = lister() if callable(lister) else getattr(registry, "DATASET_NAMES", None)
        if names is None:
            return None
    return frozenset(names) | frozenset(C.DATASET_SYNTHETIC)


def _default_name(label: str) -> str:
    if label.startswith("<"):
        return C.DEFAULT_EXPERIMENT_NAME
    if label.startswith(C.PACKAGE_CONFIG_PREFIX):
        label = label[len(C.PACKAGE_CONFIG_PREFIX):]
    return Path(label).stem


def _finish(result: Any, problems: list[str], src: _Source, dataset_names, default_name=None,
            origins_extra: dict | None = None) -> ExperimentConfig:
    if problems:
        raise ConfigError(problems)
    data, origins = result
    if origins_extra:
        origins.update(origins_extra)
    validator = _Validator(origins, src.label, default_name or _default_name(src.label),
                           _known_dataset_names(dataset_names))
    return validator.run(data, src.label)


# =========================================================================== public API


def load_config(path: str | os.PathLike, dataset_names: Iterable[str] | None = None) -> ExperimentConfig:
    """Read, resolve (``extends``) and validate the config at ``path``.

    ``path`` may also be ``package:NAME.yaml``. ``dataset_names`` lists the valid
    ``dataset.name`` values (the synthetic datasets are always valid); by default they come
    from the dataset registry, and are not checked when the registry cannot be imported.
    Raises :class:`ConfigError` listing every problem found, one line each.
    """
    text = os.fspath(path)
    src = _package_source(text) if text.startswith(C.PACKAGE_CONFIG_PREFIX) else _Source(text, Path(text))
    if src is None:
        raise ConfigError(f"{text}: a packaged config is named like 'package:quickstart.yaml'")
    problems: list[str] = []
    try:
        data = _read_yaml(src, problems)
        result = INVALID if data is INVALID else \
            _resolve(data, src, ((src.path.resolve(), src.label),), problems)
    except RecursionError:
        raise ConfigError(f"{src.label}: nested too deeply (or a YAML alias refers to itself)") from None
    return _finish(result, problems, src, dataset_names)


def config_from_dict(d: Mapping, source: str = "<dict>",
                     dataset_names: Iterable[str] | None = None) -> ExperimentConfig:
    """Validate ``d`` as if it were the content of the config file ``source``.

    ``extends`` in ``d`` resolves relative to ``source``'s directory. ``name`` defaults to the
    stem of ``source`` (or ``'experiment'`` for a ``source`` such as ``'<dict>'``).
    """
    src = _Source(os.fspath(source), Path(os.fspath(source)))
    if not isinstance(d, Mapping):
        _Validator({}, src.label, "", None).run(d, src.label)  # raises with the template message
    problems: list[str] = []
    try:
        result = _resolve(dict(d), src, ((src.path.resolve(), src.label),), problems)
        return _finish(result, problems, src, dataset_names)
    except RecursionError:
        raise ConfigError(f"{src.label}: nested too deeply (or refers to itself)") from None


def with_overrides(cfg: ExperimentConfig, overrides: Mapping[str, Any] | None = None, /,
                   **dotted: Any) -> ExperimentConfig:
    """A copy of ``cfg`` with parameters replaced, validated like a loaded config.

    Keys are dotted paths, e.g. ``with_overrides(cfg, {"algorithm.tau": 0.5})`` or
    ``with_overrides(cfg, **{"kernel.degree": 3})``. Changing a selector (``kernel.type``,
    ``algorithm.name``) drops the parameters that belonged to the old choice only; changing
    ``training.epochs`` keeps the intermediate checkpoints and moves the final one.
    Problems caused by an override are reported against ``<source> (override)``.
    """
    changes = dict(overrides or {})
    changes.update(dotted)
    data = cfg.to_dict()
    for path in changes:
        if not isinstance(path, str) or not path:
            raise ConfigError(f"{cfg.source or '<dict>'} (override): override keys must be dotted "
                              f"parameter paths such as 'algorithm.tau', got {_show(path)}")
    # parameters whose meaning depends on a selector that changes
    for p in SCHEMA:
        if p.when is None or p.path in changes:
            continue
        sel_path = f"{p.section}.{p.when[0]}"
        if sel_path in changes and p.key in data.get(p.section, {}):
            new = changes[sel_path]
            same = p.applies(lambda _k: new) and p.applies(lambda k: getattr(getattr(cfg, p.section), k))
            if not same:
                data[p.section].pop(p.key, None)
    if "training.epochs" in changes and "training.checkpoints" not in changes:
        data["training"]["checkpoints"] = [c for c in cfg.training.checkpoints if c != cfg.training.epochs]
    label = f"{cfg.source or '<dict>'} (override)"
    origins_extra = {}
    for path, value in changes.items():
        parts = path.split(".")
        node = data
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[parts[-1]] = value
        origins_extra[tuple(parts)] = label
    src = _Source(cfg.source or "<dict>", Path(cfg.source or "<dict>"))
    result = (data, _origins(data, src.label))
    # an unchanged dataset name was checked when cfg was built, possibly against another list
    names = None if "dataset.name" in changes else _UNCHECKED
    return _finish(result, [], src, names, default_name=cfg.name, origins_extra=origins_extra)


def config_hash(cfg: ExperimentConfig, length: int = C.CONFIG_HASH_LENGTH) -> str:
    """Short sha256 hex digest of the canonical JSON of ``cfg.to_dict()`` (sorted keys)."""
    text = json.dumps(cfg.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:length]
