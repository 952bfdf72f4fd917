"""The config schema: every key with its check, default and description (:data:`SCHEMA`), and the
checks that turn a YAML value into a validated one or a one-line problem. The validator that
walks a config through this table, and the public API, are in :mod:`perceptron_lab.config`."""

from __future__ import annotations

import difflib
import math
import numbers
import re
import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable


from . import constants as C


#: Directory of the configs shipped with the package (``extends: "package:NAME.yaml"``).
PACKAGE_CONFIG_DIR = Path(__file__).resolve().parent / "configs"

SECTIONS = ("dataset", "kernel", "algorithm", "training", "prediction", "evaluation", "output")
#: A config file (or a file it extends) larger than this is refused before it is read.
MAX_CONFIG_BYTES = 1 << 20
_TOP_KEYS = ("name", "description", "paper", "extends")


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

    def validate(self, value: Any, path: tuple, v) -> Any:
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


