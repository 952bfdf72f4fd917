"""One table of settings and ranges for every door into the engine, derived from the config schema.

A setting has one range, written once in :data:`perceptron_lab.config.schema.SCHEMA` (``kernel.sigma``
is a positive number, ``kernel.degree`` an integer >= 1, ...). ``plab run`` and the overrides check a
config against the schema; the Python doors check their parameters against the same checks,
through this module:

* the scikit-learn estimators (:mod:`perceptron_lab.estimators.perceptron`,
  :mod:`perceptron_lab.estimators.budget`) derive their ``_parameter_constraints`` from
  :func:`door` and validate with :meth:`Setting.check` in ``fit`` and ``partial_fit``;
* the online classes (:mod:`perceptron_lab.estimators.online`) call :meth:`Setting.check` on every
  setting in ``__init__``.

A Python parameter is named after the schema key's attribute (``algorithm.lambda`` is ``lambda_``);
:data:`RENAMED` lists the few whose name differs. A door may narrow a setting (``options``: the
subset of a choice it supports, such as the budgeted algorithms' rules), widen it with a Python-only
value (``extra``: ``kernel="precomputed"``; ``none``: None for "the default"), but never restate a
range. Messages follow scikit-learn's template with the schema's wording::

    The 'sigma' parameter of KernelPerceptron must be a positive number. Got -1 instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from perceptron_lab.config.checks import (_BEYOND_INT64, _Check, _Choice, _did_you_mean, _ListOf, _Literal,
                                          _Mismatch, _Union)
from perceptron_lab.config.schema import SCHEMA, Param

#: Python parameter name -> schema key, where the name is not the key's attribute.
RENAMED = {"kernel": "kernel.type", "algorithm": "algorithm.name", "rule": "prediction.rules"}

#: The sections whose keys are settings of the Python doors.
_SECTIONS = ("kernel", "algorithm", "training", "prediction")

#: Spellings a YAML file needs and a Python caller does not: refused at the Python doors, which pass
#: the Python value instead (``alpha_bound``: None or ``math.inf``, not the text ``'inf'``).
_YAML_ONLY = {"algorithm.alpha_bound": ("inf",)}


def _names() -> dict[str, str]:
    out = {p.attr: p.path for p in SCHEMA if p.section in _SECTIONS}
    for name, path in RENAMED.items():
        out.pop(next(p.attr for p in SCHEMA if p.path == path), None)
        out[name] = path
    return out


#: Every setting the Python doors may have: its Python name -> its schema key.
PATHS: dict[str, str] = _names()


def schema_entry(path: str, algorithm: str | None = None) -> Param:
    """The schema's entry for ``path`` (for a key with one entry per algorithm, such as
    ``algorithm.eta`` or ``algorithm.C``, the one that applies to ``algorithm``)."""
    rows = [p for p in SCHEMA if p.path == path]
    if not rows:
        raise KeyError(f"no schema key {path!r}")
    if algorithm is not None:
        for p in rows:
            if p.when is not None and p.when[0] == "name" and algorithm in p.when[1]:
                return p
    return rows[0]


def _python(check: _Check, path: str) -> _Check | None:
    """``check`` as a Python caller meets it: null is None, and YAML-only spellings are gone."""
    if isinstance(check, _Union):
        alts = [_python(a, path) for a in check.alternatives]
        return _Union(*[a for a in alts if a is not None])
    if isinstance(check, _Literal):
        accepted = tuple(a for a in check.accepted if a not in _YAML_ONLY.get(path, ()) or not isinstance(a, str))
        if not accepted:
            return None
        if accepted == (None,):
            return _Literal(None, noun="None")
        if accepted != check.accepted:
            noun = " or ".join("math.inf" if a == float("inf") else repr(a) for a in accepted)
            return _Literal(*accepted, result=check.result, noun=noun)
    return check


@dataclass(frozen=True)
class Setting:
    """One parameter of a Python door: its name, its schema key and the check it shares with the
    schema (possibly narrowed or widened for the door, see :func:`setting`)."""

    name: str
    path: str
    check: _Check
    #: Whose schema entry it is, for a key the schema states per algorithm (None: the key's only entry).
    algorithm: str | None = None

    @property
    def noun(self) -> str:
        """What a valid value is, in the schema's words (``a positive number``)."""
        return self.check.noun

    def problem(self, value: Any) -> str | None:
        """None if ``value`` is valid, else ``must be ... Got ... instead.`` (with a did-you-mean)."""
        try:
            self.check.convert(value)
            return None
        except _Mismatch as m:
            text = f"{self.check.expectation(m)}. Got {value!r} instead."
            if m.hint and (m.hint.startswith("did you mean") or m.hint == _BEYOND_INT64):
                text = text[:-1] + f" ({m.hint})."
            return text
        except Exception:  # noqa: BLE001 - a value no check can read (an object whose float() fails)
            return f"must be {self.noun}. Got {value!r} instead."

    def accepts(self, value: Any) -> bool:
        return self.problem(value) is None

    def check_value(self, value: Any, owner: str) -> Any:
        """``value`` as the schema converts it; ValueError in scikit-learn's words if it is invalid."""
        text = self.problem(value)
        if text is not None:
            raise ValueError(f"The {self.name!r} parameter of {owner} {text}")
        return self.check.convert(value)


@lru_cache(maxsize=None)
def setting(name: str, algorithm: str | None = None, options: tuple[str, ...] | None = None,
            extra: tuple[str, ...] = (), none: bool = False) -> Setting:
    """The setting ``name`` of a Python door, from the schema key it names (:data:`PATHS`).

    Parameters
    ----------
    name : str
        The Python parameter name (``sigma``, ``lambda_``, ``rule``...).
    algorithm : str, optional
        For a key the schema states per algorithm (``algorithm.eta``, ``algorithm.C``): whose.
    options : tuple of str, optional
        For a choice: the subset of the schema's options this door supports.
    extra : tuple of str
        For a choice: values only the Python door has (``"precomputed"``).
    none : bool
        Whether None is also accepted (a door's "the config's default").
    """
    if name not in PATHS:
        hint = _did_you_mean(name, PATHS)
        raise KeyError(f"no setting {name!r} in the table" + (f" ({hint})" if hint else ""))
    path = PATHS[name]
    entry = schema_entry(path, algorithm)
    check = entry.check
    if isinstance(check, _ListOf):  # prediction.rules: a door takes one rule
        check = check.item
    python_check = _python(check, path)
    assert python_check is not None, path   # every key takes some value from Python
    check = python_check
    if options is not None or extra:
        if not isinstance(check, _Choice):
            raise TypeError(f"{name}: options and extra narrow or widen a choice, and {path} is not one")
        base = check.options if options is None else tuple(options)
        unknown = set(base) - set(check.options)
        if unknown:
            raise ValueError(f"{name}: {sorted(unknown)} are not options of {path}")
        check = _Choice(base + tuple(extra))
    if none:
        check = _Union(check, _Literal(None, noun="None"))
    return Setting(name, path, check, algorithm if entry.when is not None and entry.when[0] == "name" else None)


def door(of: str | None = None, **variants: dict) -> dict[str, Setting]:
    """A door's table: each keyword a setting name, its value the variant's arguments of
    :func:`setting` (``{}`` for the schema's own range); ``of`` names the algorithm whose entries
    apply where the schema states a key per algorithm."""
    return {name: setting(name, v.get("algorithm", of), **{k: x for k, x in v.items() if k != "algorithm"})
            for name, v in variants.items()}


def check_setting(name: str, value: Any, owner: str, algorithm: str | None = None, **variant) -> Any:
    """Check one Python setting against the table; return its converted value, or raise ValueError
    ("The 'sigma' parameter of KernelPerceptron must be a positive number. Got -1 instead.")."""
    return setting(name, algorithm, **variant).check_value(value, owner)


def check_settings(settings: dict[str, Setting], obj: Any, owner: str | None = None) -> None:
    """Check every setting of a door's table on the attributes of ``obj``."""
    owner = owner or type(obj).__name__
    for name, s in settings.items():
        s.check_value(getattr(obj, name), owner)


__all__ = ["PATHS", "RENAMED", "Setting", "check_setting", "check_settings", "door", "schema_entry", "setting"]
